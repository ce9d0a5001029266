//! SHA-512 (FIPS 180-4 §6.4) for Ed25519 verification on the device (RFC 8032 §5.1.7's
//! challenge hash, the `salty` path).
//!
//! Written here for stack, as `sha256.rs`: sha2's compact SHA-512 keeps all 80 message
//! words (a 952 B frame on Cortex-M4, at the bottom of the handshake's deepest chain under
//! CertificateVerify, issue 8); this one keeps a 16-word ring. Checked against sha2 below.

/// SHA-512's block length.
const BLOCK: usize = 128;

/// FIPS 180-4 §5.3.5: the initial hash value.
const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// FIPS 180-4 §4.2.3: the round constants' low 32 bits. Their high 32 bits are, for the
/// first 64, SHA-256's constants (§4.2.2: both are the first bits of the fractional parts of
/// the cube roots of the first primes), shared with `sha256.rs` (issue 8: 256 B of flash).
const K_LOW: [u32; 80] = [
    0xd728ae22, 0x23ef65cd, 0xec4d3b2f, 0x8189dbbc, 0xf348b538, 0xb605d019, 0xaf194f9b, 0xda6d8118,
    0xa3030242, 0x45706fbe, 0x4ee4b28c, 0xd5ffb4e2, 0xf27b896f, 0x3b1696b1, 0x25c71235, 0xcf692694,
    0x9ef14ad2, 0x384f25e3, 0x8b8cd5b5, 0x77ac9c65, 0x592b0275, 0x6ea6e483, 0xbd41fbd4, 0x831153b5,
    0xee66dfab, 0x2db43210, 0x98fb213f, 0xbeef0ee4, 0x3da88fc2, 0x930aa725, 0xe003826f, 0x0a0e6e70,
    0x46d22ffc, 0x5c26c926, 0x5ac42aed, 0x9d95b3df, 0x8baf63de, 0x3c77b2a8, 0x47edaee6, 0x1482353b,
    0x4cf10364, 0xbc423001, 0xd0f89791, 0x0654be30, 0xd6ef5218, 0x5565a910, 0x5771202a, 0x32bbd1b8,
    0xb8d2d0c8, 0x5141ab53, 0xdf8eeb99, 0xe19b48a8, 0xc5c95a63, 0xe3418acb, 0x7763e373, 0xd6b2b8a3,
    0x5defb2fc, 0x43172f60, 0xa1f0ab72, 0x1a6439ec, 0x23631e28, 0xde82bde9, 0xb2c67915, 0xe372532b,
    0xea26619c, 0x21c0c207, 0xcde0eb1e, 0xee6ed178, 0x72176fba, 0xa2c898a6, 0xbef90dae, 0x131c471b,
    0x23047d84, 0x40c72493, 0x15c9bebc, 0x9c100d4c, 0xcb3e42b6, 0xfc657e2a, 0x3ad6faec, 0x4a475817,
];

/// FIPS 180-4 §4.2.3: the high 32 bits of the last 16 round constants.
const K_HIGH_TAIL: [u32; 16] = [
    0xca273ece, 0xd186b8c7, 0xeada7dd6, 0xf57d4f7f, 0x06f067aa, 0x0a637dc5, 0x113f9804, 0x1b710b35,
    0x28db77f5, 0x32caab7b, 0x3c9ebe0a, 0x431d67c4, 0x4cc5d4be, 0x597f299c, 0x5fcb6fab, 0x6c44198c,
];

/// FIPS 180-4 §4.2.3: round constant t.
fn round_constant(t: usize) -> u64 {
    let high = match crate::sha256::K.get(t) {
        Some(high) => *high,
        None => K_HIGH_TAIL[(t - 64) & 15],
    };
    (u64::from(high) << 32) | u64::from(K_LOW[t % 80])
}

/// FIPS 180-4 §6.4.2: the compression function over one block, in place; the message
/// schedule in a ring of 16 words, as in `sha256::compress` (the same round structure over
/// 64-bit words, with SHA-512's own rotations and 80 rounds: FIPS defines them as two
/// functions, and so are they here).
fn compress(state: &mut [u64; 8], block: &[u8; BLOCK]) {
    let mut w = [0u64; 16];
    for (word, bytes) in w.iter_mut().zip(block.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        *word = u64::from_be_bytes(b);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for t in 0..80 {
        if t >= 16 {
            let w15 = w[(t + 1) & 15];
            let w2 = w[(t + 14) & 15];
            let s0 = w15.rotate_right(1) ^ w15.rotate_right(8) ^ (w15 >> 7);
            let s1 = w2.rotate_right(19) ^ w2.rotate_right(61) ^ (w2 >> 6);
            w[t & 15] = w[t & 15].wrapping_add(s0).wrapping_add(w[(t + 9) & 15]).wrapping_add(s1);
        }
        let big_s1 = e.rotate_right(14) ^ e.rotate_right(18) ^ e.rotate_right(41);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(big_s1)
            .wrapping_add(ch)
            .wrapping_add(round_constant(t))
            .wrapping_add(w[t & 15]);
        let big_s0 = a.rotate_right(28) ^ a.rotate_right(34) ^ a.rotate_right(39);
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
    let words = [a, b, c, d, e, f, g, h];
    for i in 0..8 {
        state[i] = state[i].wrapping_add(words[i]);
    }
}

/// A running SHA-512.
pub(crate) struct Sha512 {
    state: [u64; 8],
    buf: [u8; BLOCK],
    /// Bytes in `buf` (always < `BLOCK` between calls).
    buf_len: usize,
    /// Bytes absorbed in full blocks (a device never hashes 2^64 bytes: the 128-bit length
    /// field's high half is zero).
    absorbed: u64,
}

impl Sha512 {
    /// An empty hash.
    pub(crate) const fn new() -> Self {
        Self { state: IV, buf: [0; BLOCK], buf_len: 0, absorbed: 0 }
    }

    /// Absorbs `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        let state = &mut self.state;
        crate::sha256::absorb(&mut self.buf, &mut self.buf_len, &mut self.absorbed, data, |b| {
            compress(state, b)
        });
    }

    /// FIPS 180-4 §5.1.2 padding, then the digest written into `out`; the hash is spent.
    pub(crate) fn finish(&mut self, out: &mut [u8; 64]) {
        let total = self.absorbed.wrapping_add(self.buf_len as u64);
        let len = self.buf_len.min(BLOCK - 1);
        self.buf[len] = 0x80;
        for b in self.buf.iter_mut().skip(len + 1) {
            *b = 0;
        }
        if len >= BLOCK - 16 {
            compress(&mut self.state, &self.buf);
            self.buf.fill(0);
        }
        self.buf[BLOCK - 8..].copy_from_slice(&total.wrapping_mul(8).to_be_bytes());
        compress(&mut self.state, &self.buf);
        for (o, word) in out.chunks_exact_mut(8).zip(&self.state) {
            o.copy_from_slice(&word.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

    /// FIPS 180-4 §4.2.3's table as printed.
    const K: [u64; 80] = [
        0x428a2f98d728ae22,
        0x7137449123ef65cd,
        0xb5c0fbcfec4d3b2f,
        0xe9b5dba58189dbbc,
        0x3956c25bf348b538,
        0x59f111f1b605d019,
        0x923f82a4af194f9b,
        0xab1c5ed5da6d8118,
        0xd807aa98a3030242,
        0x12835b0145706fbe,
        0x243185be4ee4b28c,
        0x550c7dc3d5ffb4e2,
        0x72be5d74f27b896f,
        0x80deb1fe3b1696b1,
        0x9bdc06a725c71235,
        0xc19bf174cf692694,
        0xe49b69c19ef14ad2,
        0xefbe4786384f25e3,
        0x0fc19dc68b8cd5b5,
        0x240ca1cc77ac9c65,
        0x2de92c6f592b0275,
        0x4a7484aa6ea6e483,
        0x5cb0a9dcbd41fbd4,
        0x76f988da831153b5,
        0x983e5152ee66dfab,
        0xa831c66d2db43210,
        0xb00327c898fb213f,
        0xbf597fc7beef0ee4,
        0xc6e00bf33da88fc2,
        0xd5a79147930aa725,
        0x06ca6351e003826f,
        0x142929670a0e6e70,
        0x27b70a8546d22ffc,
        0x2e1b21385c26c926,
        0x4d2c6dfc5ac42aed,
        0x53380d139d95b3df,
        0x650a73548baf63de,
        0x766a0abb3c77b2a8,
        0x81c2c92e47edaee6,
        0x92722c851482353b,
        0xa2bfe8a14cf10364,
        0xa81a664bbc423001,
        0xc24b8b70d0f89791,
        0xc76c51a30654be30,
        0xd192e819d6ef5218,
        0xd69906245565a910,
        0xf40e35855771202a,
        0x106aa07032bbd1b8,
        0x19a4c116b8d2d0c8,
        0x1e376c085141ab53,
        0x2748774cdf8eeb99,
        0x34b0bcb5e19b48a8,
        0x391c0cb3c5c95a63,
        0x4ed8aa4ae3418acb,
        0x5b9cca4f7763e373,
        0x682e6ff3d6b2b8a3,
        0x748f82ee5defb2fc,
        0x78a5636f43172f60,
        0x84c87814a1f0ab72,
        0x8cc702081a6439ec,
        0x90befffa23631e28,
        0xa4506cebde82bde9,
        0xbef9a3f7b2c67915,
        0xc67178f2e372532b,
        0xca273eceea26619c,
        0xd186b8c721c0c207,
        0xeada7dd6cde0eb1e,
        0xf57d4f7fee6ed178,
        0x06f067aa72176fba,
        0x0a637dc5a2c898a6,
        0x113f9804bef90dae,
        0x1b710b35131c471b,
        0x28db77f523047d84,
        0x32caab7b40c72493,
        0x3c9ebe0a15c9bebc,
        0x431d67c49c100d4c,
        0x4cc5d4becb3e42b6,
        0x597f299cfc657e2a,
        0x5fcb6fab3ad6faec,
        0x6c44198c4a475817,
    ];

    #[test]
    fn split_round_constants_are_fips_180_4() {
        for (t, k) in K.iter().enumerate() {
            assert_eq!(round_constant(t), *k, "{t}");
        }
    }

    fn sha512(parts: &[&[u8]]) -> [u8; 64] {
        let mut h = Sha512::new();
        parts.iter().for_each(|p| h.update(p));
        let mut out = [0; 64];
        h.finish(&mut out);
        out
    }

    /// FIPS 180-4 examples (NIST's SHA512.pdf): "abc" and the two-block 896-bit message.
    #[test]
    fn fips_180_examples() {
        assert_eq!(
            sha512(&[b"abc"]),
            hex_literal::hex!(
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
            )
        );
        assert_eq!(
            sha512(&[b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"]),
            hex_literal::hex!(
                "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
                "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"
            )
        );
    }

    #[test]
    fn same_as_sha2_at_every_length_and_split() {
        let mut data = [0u8; 400];
        data.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 29 + 11) as u8);
        for len in 0..=400 {
            let expected = sha2::Sha512::digest(&data[..len]);
            assert_eq!(sha512(&[&data[..len]])[..], expected[..], "{len}");
            let at = len * 2 / 3;
            let (a, b) = data[..len].split_at(at);
            assert_eq!(sha512(&[a, b])[..], expected[..], "{len} split at {at}");
        }
    }
}
