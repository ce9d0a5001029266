//! HMAC-SHA-256 (RFC 2104, FIPS 198-1) on sha2's SHA-256 block function, for the RustCrypto
//! provider. Every key derivation of QUIC and TLS 1.3 runs through HMAC (HKDF), so its stack
//! is under the deepest path of a device's handshake: here the state is the two chaining
//! values and one block, updated in place (`hmac::Hmac<Sha256>` keeps two buffered hash
//! cores and builds its pads, finalization blocks and output arrays as temporaries: 0.4 KB
//! more per key derivation on Cortex-M4, issue 8).

use sha2::digest::generic_array::GenericArray;

use crate::Digest;

/// SHA-256's block length.
const BLOCK: usize = 64;
/// SHA-256's output length.
const OUT: usize = 32;

/// FIPS 180-4 §5.3.3: SHA-256's initial hash value.
const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// FIPS 180-4 §6.2.2: the compression function over one block, in place.
fn compress(state: &mut [u32; 8], block: &[u8; BLOCK]) {
    sha2::compress256(state, core::slice::from_ref(GenericArray::from_slice(block)));
}

/// A running HMAC-SHA-256. Erased on drop.
#[derive(Clone)]
pub struct HmacSha256 {
    /// The inner hash's chaining value (the `ipad` block and every full block absorbed).
    inner: [u32; 8],
    /// The outer hash's chaining value after the `opad` block.
    outer: [u32; 8],
    /// The inner hash's partial block.
    buf: [u8; BLOCK],
    /// Bytes in `buf`.
    buf_len: usize,
    /// Bytes the inner hash absorbed in full blocks, the `ipad` block included.
    absorbed: u64,
}

impl HmacSha256 {
    /// RFC 2104 §2: keys `K` (any length; one longer than a block is hashed first).
    pub fn new(key: &[u8]) -> Self {
        let mut mac =
            Self { inner: IV, outer: IV, buf: [0; BLOCK], buf_len: 0, absorbed: BLOCK as u64 };
        // The key, zero-padded to a block, is built in `buf` (erased below).
        if key.len() > BLOCK {
            use sha2::Digest as _;
            let hashed = sha2::Sha256::digest(key);
            mac.buf[..OUT].copy_from_slice(&hashed);
        } else {
            mac.buf[..key.len()].copy_from_slice(key);
        }
        // K XOR ipad (0x36) starts the inner hash, K XOR opad (0x5c) the outer one.
        mac.buf.iter_mut().for_each(|b| *b ^= 0x36);
        compress(&mut mac.inner, &mac.buf);
        mac.buf.iter_mut().for_each(|b| *b ^= 0x36 ^ 0x5c);
        compress(&mut mac.outer, &mac.buf);
        mac.buf = [0; BLOCK];
        mac
    }

    /// Absorbs `data` into the inner hash.
    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let start = self.buf_len.min(BLOCK);
            let n = (BLOCK - start).min(data.len());
            let (now, rest) = data.split_at(n);
            self.buf[start..start + n].copy_from_slice(now);
            self.buf_len = start + n;
            data = rest;
            if self.buf_len == BLOCK {
                compress(&mut self.inner, &self.buf);
                self.absorbed = self.absorbed.wrapping_add(BLOCK as u64);
                self.buf_len = 0;
            }
        }
    }

    /// FIPS 180-4 §5.1.1: pads the message in `buf` (`buf_len` bytes of it, `total` bytes in
    /// all) and compresses it into `state`, in place.
    fn pad_and_compress(state: &mut [u32; 8], buf: &mut [u8; BLOCK], buf_len: usize, total: u64) {
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

    /// RFC 2104 §2: H(K XOR opad, H(K XOR ipad, text)). Finishes where the state is (no
    /// copy of it moved into this frame); the state is spent: drop it.
    pub fn finish(&mut self) -> Digest {
        let total = self.absorbed.wrapping_add(self.buf_len as u64);
        Self::pad_and_compress(&mut self.inner, &mut self.buf, self.buf_len, total);
        // The outer hash: the inner digest after the `opad` block (64 + 32 bytes in all).
        for (chunk, word) in self.buf[..OUT].chunks_exact_mut(4).zip(self.inner) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        Self::pad_and_compress(&mut self.outer, &mut self.buf, OUT, (BLOCK + OUT) as u64);
        for (chunk, word) in self.buf[..OUT].chunks_exact_mut(4).zip(self.outer) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        Digest::new(&self.buf[..OUT])
    }
}

impl Drop for HmacSha256 {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.inner);
        zeroize::Zeroize::zeroize(&mut self.outer);
        zeroize::Zeroize::zeroize(&mut self.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(key: &[u8], parts: &[&[u8]]) -> Digest {
        let mut m = HmacSha256::new(key);
        parts.iter().for_each(|p| m.update(p));
        m.finish()
    }

    /// RFC 4231 §4.2, §4.3, §4.7: HMAC-SHA-256 test cases 1, 2 and 7 (a key longer than a
    /// block, a message longer than one).
    #[test]
    fn rfc4231_vectors() {
        let t1 =
            hex_literal::hex!("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
        assert_eq!(mac(&[0x0b; 20], &[b"Hi There"]).as_ref(), t1);
        let t2 =
            hex_literal::hex!("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        assert_eq!(mac(b"Jefe", &[b"what do ya want ", b"for nothing?"]).as_ref(), t2);
        let t7 =
            hex_literal::hex!("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
        let text: &[u8] = b"This is a test using a larger than block-size key and a larger than \
            block-size data. The key needs to be hashed before being used by the HMAC algorithm.";
        assert_eq!(mac(&[0xaa; 131], &[text]).as_ref(), t7);
        // Split anywhere, the same tag.
        for at in [1, 55, 56, 63, 64, 65, 128] {
            let (a, b) = text.split_at(at);
            assert_eq!(mac(&[0xaa; 131], &[a, b]).as_ref(), t7, "split at {at}");
        }
    }

    #[test]
    fn same_as_the_hmac_crate_at_every_length() {
        use hmac::Mac as _;
        let mut data = [0u8; 300];
        data.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 7 + 3) as u8);
        for key_len in [0, 1, 32, 63, 64, 65, 100] {
            for len in [0, 1, 54, 55, 56, 63, 64, 65, 119, 120, 128, 200, 300] {
                let key = &data[..key_len];
                let mut r = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(key).unwrap();
                r.update(&data[..len]);
                let expected = r.finalize().into_bytes();
                assert_eq!(
                    mac(key, &[&data[..len]]).as_ref(),
                    expected.as_slice(),
                    "{key_len} {len}"
                );
            }
        }
    }
}
