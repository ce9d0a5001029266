//! HMAC-SHA-256 (RFC 2104, FIPS 198-1) on mote's SHA-256 (`sha256.rs`), for the RustCrypto
//! provider. Every key derivation of QUIC and TLS 1.3 runs through HMAC (HKDF), so its stack
//! is under the deepest path of a device's handshake: here the state is the two chaining
//! values and one block, updated in place (`hmac::Hmac<Sha256>` keeps two buffered hash
//! cores and builds its pads, finalization blocks and output arrays as temporaries: 0.4 KB
//! more per key derivation on Cortex-M4, issue 8).

use crate::sha256::{Sha256, BLOCK, OUT};
use crate::Digest;

/// A running HMAC-SHA-256. Erased on drop.
#[derive(Clone)]
pub struct HmacSha256 {
    /// The inner hash, started with the `ipad` block.
    inner: Sha256,
    /// The outer hash's chaining value after the `opad` block.
    outer: [u32; 8],
}

impl HmacSha256 {
    /// RFC 2104 §2: keys `K` (any length; one longer than a block is hashed first).
    pub fn new(key: &[u8]) -> Self {
        let mut mac = Self::unkeyed();
        mac.set_key(key);
        mac
    }

    /// An HMAC without its key yet: [`Self::set_key`] keys it where it lies (the provider
    /// returns it inside a `Result` and keys it there, no copy, issue 8).
    pub(crate) const fn unkeyed() -> Self {
        // All zeros (written into a slot as a memset, no constant copied through the
        // frame): `set_key` sets every field.
        Self {
            inner: Sha256 { state: [0; 8], buf: [0; BLOCK], buf_len: 0, absorbed: 0 },
            outer: [0; 8],
        }
    }

    /// Keys an [`Self::unkeyed`] HMAC in place.
    pub(crate) fn set_key(&mut self, key: &[u8]) {
        self.inner.state = crate::sha256::IV;
        self.outer = crate::sha256::IV;
        self.inner.buf_len = 0;
        // The key, zero-padded to a block, is built in the inner hash's buffer (erased
        // below).
        let buf = &mut self.inner.buf;
        *buf = [0; BLOCK];
        if key.len() > BLOCK {
            hash_long_key(key, buf);
        } else {
            // Zipped, not sliced: no range check and panic path (key.len() ≤ BLOCK here).
            buf.iter_mut().zip(key).for_each(|(b, k)| *b = *k);
        }
        // K XOR ipad (0x36) starts the inner hash, K XOR opad (0x5c) the outer one.
        buf.iter_mut().for_each(|b| *b ^= 0x36);
        crate::sha256::compress(&mut self.inner.state, buf);
        buf.iter_mut().for_each(|b| *b ^= 0x36 ^ 0x5c);
        crate::sha256::compress(&mut self.outer, buf);
        *buf = [0; BLOCK];
        self.inner.absorbed = BLOCK as u64;
    }

    /// Absorbs `data` into the inner hash.
    pub fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    /// RFC 2104 §2: H(K XOR opad, H(K XOR ipad, text)). Finishes where the state is (no
    /// copy of it moved into this frame); the state is spent: drop it.
    pub fn finish(&mut self) -> Digest {
        // The inner digest lands in `buf[..OUT]`: the outer hash's message after its `opad`
        // block (64 + 32 bytes in all).
        self.inner.finish_into_buf();
        Sha256::pad_and_compress(&mut self.outer, &mut self.inner.buf, OUT, (BLOCK + OUT) as u64);
        crate::sha256::write_words(&mut self.inner.buf, &self.outer);
        Digest::new(&self.inner.buf[..OUT])
    }
}

/// RFC 2104 §2: a key longer than a block is replaced by its hash, written into `out`.
/// Out of line (TLS and QUIC keys are never that long): its hash state is not in the frame
/// of every HMAC (issue 8).
#[cold]
#[inline(never)]
fn hash_long_key(key: &[u8], out: &mut [u8; BLOCK]) {
    let mut hashed = Sha256::new();
    hashed.update(key);
    hashed.finish_into_buf();
    out[..OUT].copy_from_slice(&hashed.buf[..OUT]);
    zeroize::Zeroize::zeroize(&mut hashed.buf);
    zeroize::Zeroize::zeroize(&mut hashed.state);
}

impl Drop for HmacSha256 {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.inner.state);
        zeroize::Zeroize::zeroize(&mut self.outer);
        zeroize::Zeroize::zeroize(&mut self.inner.buf);
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
