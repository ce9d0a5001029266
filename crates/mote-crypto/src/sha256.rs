//! SHA-256 (FIPS 180-4 §6.2) for the RustCrypto provider: the TLS transcript hash and, under
//! HMAC, every key derivation of QUIC and TLS 1.3.
//!
//! Written here for stack, not speed: sha2's compact block function keeps the whole 64-word
//! message schedule (a 408 B frame on Cortex-M4), and it sat at the bottom of a device's
//! deepest stack chains (issue 8). This one keeps the schedule as a 16-word ring. Checked
//! against sha2 below; SHA-384/512 stay sha2's.

use crate::Digest;

/// SHA-256's block length.
pub(crate) const BLOCK: usize = 64;
/// SHA-256's output length.
pub(crate) const OUT: usize = 32;

/// FIPS 180-4 §5.3.3: the initial hash value.
pub(crate) const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// FIPS 180-4 §4.2.2: the round constants (also the high halves of SHA-512's first 64,
/// `sha512.rs`: a `static`, so both read one copy).
pub(crate) static K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// FIPS 180-4 §6.2.2: the compression function over one block, in place. Step 1's message
/// schedule W_t = σ1(W_t−2) + W_t−7 + σ0(W_t−15) + W_t−16 only looks 16 words back, so the
/// words live in a ring of 16 (slot t mod 16 holds W_t−16 until it is replaced by W_t).
pub(crate) fn compress(state: &mut [u32; 8], block: &[u8; BLOCK]) {
    let mut w = [0u32; 16];
    for (word, bytes) in w.iter_mut().zip(block.chunks_exact(4)) {
        *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for (t, k) in K.iter().enumerate() {
        if t >= 16 {
            let w15 = w[(t + 1) & 15];
            let w2 = w[(t + 14) & 15];
            let s0 = w15.rotate_right(7) ^ w15.rotate_right(18) ^ (w15 >> 3);
            let s1 = w2.rotate_right(17) ^ w2.rotate_right(19) ^ (w2 >> 10);
            w[t & 15] = w[t & 15].wrapping_add(s0).wrapping_add(w[(t + 9) & 15]).wrapping_add(s1);
        }
        // Step 3.
        let big_s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h.wrapping_add(big_s1).wrapping_add(ch).wrapping_add(*k).wrapping_add(w[t & 15]);
        let big_s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = big_s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    // Step 4.
    let words = [a, b, c, d, e, f, g, h];
    for i in 0..8 {
        state[i] = state[i].wrapping_add(words[i]);
    }
}

/// Writes the eight words of `state` big-endian into `out[..OUT]` (FIPS 180-4 §6.2.2: the
/// digest), in place.
pub(crate) fn write_words(out: &mut [u8; BLOCK], state: &[u32; 8]) {
    // Chunks zipped with the words: no index to check (the ranges' checks and their panic
    // paths were not optimised away).
    for (o, word) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&word.to_be_bytes());
    }
}

/// The Merkle-Damgård buffering of SHA-256 and SHA-512 (FIPS 180-4 §5.2): `data` is
/// appended to the partial block `buf` (`buf_len` bytes), and each block it fills is handed
/// to `compress` and counted in `absorbed`.
pub(crate) fn absorb<const B: usize>(
    buf: &mut [u8; B],
    buf_len: &mut usize,
    absorbed: &mut u64,
    mut data: &[u8],
    mut compress: impl FnMut(&[u8; B]),
) {
    while !data.is_empty() {
        let start = (*buf_len).min(B);
        let n = (B - start).min(data.len());
        let (now, rest) = data.split_at(n);
        // Checked slicing (`start + n <= B`): no bounds-check panic path on a device.
        if let Some(to) = buf.get_mut(start..start + n) {
            to.copy_from_slice(now);
        }
        *buf_len = start + n;
        data = rest;
        if *buf_len == B {
            compress(buf);
            *absorbed = absorbed.wrapping_add(B as u64);
            *buf_len = 0;
        }
    }
}

/// A running SHA-256: the chaining value, the partial block and the bytes absorbed.
#[derive(Clone)]
pub struct Sha256 {
    pub(crate) state: [u32; 8],
    pub(crate) buf: [u8; BLOCK],
    /// Bytes in `buf` (always < `BLOCK` between calls).
    pub(crate) buf_len: usize,
    /// Bytes absorbed in full blocks.
    pub(crate) absorbed: u64,
}

impl Default for Sha256 {
    fn default() -> Self {
        Self::new()
    }
}

impl Sha256 {
    /// An empty hash.
    pub const fn new() -> Self {
        Self { state: IV, buf: [0; BLOCK], buf_len: 0, absorbed: 0 }
    }

    /// Absorbs `data`.
    pub fn update(&mut self, data: &[u8]) {
        let state = &mut self.state;
        absorb(&mut self.buf, &mut self.buf_len, &mut self.absorbed, data, |b| compress(state, b));
    }

    /// FIPS 180-4 §5.1.1: pads the message in `buf` (`buf_len` bytes of it, `total` bytes in
    /// all) and compresses it into `state`, in place.
    pub(crate) fn pad_and_compress(
        state: &mut [u32; 8],
        buf: &mut [u8; BLOCK],
        buf_len: usize,
        total: u64,
    ) {
        let len = buf_len.min(BLOCK - 1);
        buf[len] = 0x80;
        buf[len + 1..].fill(0);
        if len >= BLOCK - 8 {
            compress(state, buf);
            buf.fill(0);
        }
        buf[BLOCK - 8..].copy_from_slice(&total.wrapping_mul(8).to_be_bytes());
        compress(state, buf);
    }

    /// Finishes in place: the digest is left in `buf[..OUT]` (and the state is spent).
    pub(crate) fn finish_into_buf(&mut self) {
        let total = self.absorbed.wrapping_add(self.buf_len as u64);
        Self::pad_and_compress(&mut self.state, &mut self.buf, self.buf_len, total);
        write_words(&mut self.buf, &self.state);
        self.buf_len = OUT;
    }

    /// The digest, finishing where the state is (no copy): the hash is spent.
    pub fn finish(&mut self) -> Digest {
        self.finish_into_buf();
        Digest::new(&self.buf[..OUT])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

    fn sha256(parts: &[&[u8]]) -> Digest {
        let mut h = Sha256::new();
        parts.iter().for_each(|p| h.update(p));
        h.finish()
    }

    /// FIPS 180-4 examples (NIST's SHA256.pdf): "abc", the two-block 448-bit message, and
    /// one million 'a's.
    #[test]
    fn fips_180_examples() {
        let abc =
            hex_literal::hex!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(sha256(&[b"abc"]).as_ref(), abc);
        let two =
            hex_literal::hex!("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        assert_eq!(
            sha256(&[b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"]).as_ref(),
            two
        );
        let million =
            hex_literal::hex!("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        let mut h = Sha256::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(h.finish().as_ref(), million);
        let empty =
            hex_literal::hex!("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(Sha256::new().finish().as_ref(), empty);
    }

    #[test]
    fn same_as_sha2_at_every_length_and_split() {
        let mut data = [0u8; 300];
        data.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 13 + 5) as u8);
        for len in 0..=300 {
            let expected = sha2::Sha256::digest(&data[..len]);
            assert_eq!(sha256(&[&data[..len]]).as_ref(), expected.as_slice(), "{len}");
            let at = len / 3;
            let (a, b) = data[..len].split_at(at);
            assert_eq!(sha256(&[a, b]).as_ref(), expected.as_slice(), "{len} split at {at}");
        }
    }
}
