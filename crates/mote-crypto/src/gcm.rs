//! GCM (NIST SP 800-38D) over RustCrypto's AES block cipher and GHASH.
//!
//! Only the mode is written here; the primitives are the `aes` and `ghash` crates. The
//! `aes-gcm` crate builds the same thing, but its key constructor returns the ~400 B
//! cipher state by value through two frames (its own and the caller's), and that key
//! setup sat at the bottom of every deep chain of a device's stack (installing packet
//! keys, checking a Retry). Here the key is the key schedule alone, moved once into where
//! the key lives (`write_aead_key`: one frame holds it in transit, not two), and GHASH's key
//! `H` is derived per message, in the same two-block call as the tag's mask E_K(J0) (free on
//! devices, whose AES encrypts two blocks at once): 16 B less of key. Checked against
//! `aes-gcm` below.
//!
//! H, the mask and the GHASH state derived from H are wiped when a tag is done, so a later
//! read of the stack cannot recover the authentication key: H's block is wiped once GHASH
//! holds it, the mask becomes the tag in place, the GHASH state is wiped on drop, and on
//! devices the stack the AES and GHASH calls used below `tag_parts` is zeroed
//! (`scrub::stack_below`: their register spills hold H too). A rejected tag's expected value
//! is wiped as well.

use aes::cipher::{BlockEncrypt, BlockSizeUser, KeyInit};
use aes::Block;
#[cfg(not(feature = "compact"))]
use ghash::universal_hash::UniversalHash;
#[cfg(not(feature = "compact"))]
use ghash::GHash;
use subtle::ConstantTimeEq;

use crate::{Error, NONCE_LEN, TAG_LEN};

/// AES-128 for GCM and header protection: mote's compact bitsliced AES on devices
/// (`aes128.rs`, feature `compact`), the aes crate's otherwise.
#[cfg(feature = "compact")]
pub(crate) use crate::aes128::Aes128;
#[cfg(not(feature = "compact"))]
pub(crate) use aes::Aes128;

/// SP 800-38D §5.2.1.1: plaintexts are at most 2^39 − 256 bits, 2^36 − 32 bytes.
const MAX_TEXT: u64 = (1 << 36) - 32;

/// An AES-GCM key: the block cipher's key schedule (GHASH's key is derived from it per
/// message).
pub struct Gcm<C> {
    cipher: C,
}

/// Devices key an AES-128-GCM key where it stays (`RustCrypto::write_aead_key`): a zeroed
/// key written to the slot first, then the schedule expanded into it (no schedule by value).
#[cfg(feature = "compact")]
impl Gcm<Aes128> {
    /// A key of zeros, no usable key until [`Self::set_key`] ([`Aes128::ZERO`]).
    pub(crate) const ZERO: Self = Gcm { cipher: Aes128::ZERO };

    /// Expands `key` into this key's schedule, in place ([`Aes128::set_key`]).
    #[inline(always)]
    pub(crate) fn set_key(&mut self, key: &[u8; 16]) {
        self.cipher.set_key(key);
    }
}

impl<C> Gcm<C>
where
    C: BlockEncrypt + BlockSizeUser<BlockSize = aes::cipher::consts::U16> + KeyInit,
{
    /// The key for `key` (its length already checked against `C`).
    #[inline(always)]
    pub fn new(key: &[u8]) -> Self {
        Gcm { cipher: C::new(aes::cipher::Key::<C>::from_slice(key)) }
    }

    /// SP 800-38D §6.4 and §7.1 step 1: GHASH's key H = E_K(0^128) and the tag's mask
    /// E_K(J0), J0 = nonce ‖ 0^31 ‖ 1 for a 96-bit nonce, into `keys` in one call (the compact
    /// AES encrypts two blocks at once). Written into the caller's blocks, not returned, so no
    /// moved-from copy is left: the caller wipes H and turns the mask into the tag in place.
    #[inline(always)]
    fn hash_key_and_mask(&self, nonce: &[u8; NONCE_LEN], keys: &mut [Block; 2]) {
        keys[1] = counter_block(nonce, 1);
        self.cipher.encrypt_blocks(keys);
    }

    /// SP 800-38D §7.1 (authenticated encryption): encrypts `in_out` in place and returns the
    /// tag over `aad` and the ciphertext.
    pub fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        check_length(in_out)?;
        self.apply_keystream(nonce, in_out);
        Ok(self.tag(nonce, aad, in_out))
    }

    /// SP 800-38D §7.2 (authenticated decryption): checks `tag` over `aad` and the ciphertext
    /// `in_out` in constant time, then decrypts in place. On a wrong tag `in_out` is left as
    /// it was.
    pub fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), Error> {
        check_length(in_out)?;
        let mut expected = self.tag(nonce, aad, in_out);
        if !bool::from(expected.ct_eq(tag)) {
            // The expected tag is a valid tag for this forgery (two under one nonce give H):
            // wiped.
            zeroize::Zeroize::zeroize(&mut expected);
            return Err(Error::DecryptFailed);
        }
        self.apply_keystream(nonce, in_out);
        Ok(())
    }

    /// SP 800-38D §7.1 steps 2-3: the counter blocks start at inc32(J0), J0 = nonce ‖ 0^31 ‖ 1
    /// for a 96-bit nonce. Two blocks per call: the bitsliced AES encrypts two at once.
    fn apply_keystream(&self, nonce: &[u8; NONCE_LEN], data: &mut [u8]) {
        let mut counter: u32 = 2;
        let mut blocks = [Block::default(), Block::default()];
        for (i, d) in data.iter_mut().enumerate() {
            if i % 32 == 0 {
                blocks =
                    [counter_block(nonce, counter), counter_block(nonce, counter.wrapping_add(1))];
                self.cipher.encrypt_blocks(&mut blocks);
                counter = counter.wrapping_add(2);
            }
            *d ^= blocks[(i >> 4) & 1][i & 15];
        }
    }

    /// SP 800-38D §7.1 steps 4-6: GHASH over the padded AAD, the padded ciphertext and their
    /// bit lengths, masked with E_K(J0).
    fn tag(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], ciphertext: &[u8]) -> [u8; TAG_LEN] {
        self.tag_parts(nonce, &[aad], ciphertext)
    }

    /// [`Self::tag`] with the AAD given in parts, hashed as their concatenation without
    /// gathering them (a QUIC Retry's pseudo-packet, RFC 9001 §5.8: no packet-sized buffer
    /// on a device's stack, issue 8), through one 16-byte carry.
    #[cfg(not(feature = "compact"))]
    pub(crate) fn tag_parts(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[&[u8]],
        ciphertext: &[u8],
    ) -> [u8; TAG_LEN] {
        let mut keys = Default::default();
        self.hash_key_and_mask(nonce, &mut keys);
        let [h, mask] = &mut keys;
        let mut ghash = GHash::new(h);
        // GHASH holds its own form of H (polyval's state, wiped on its drop by polyval's
        // `zeroize` feature, which Cargo.toml turns on).
        zeroize::Zeroize::zeroize(h.as_mut_slice());
        // Byte by byte through the carry: the least code, and an AAD is a packet header
        // (or a Retry pseudo-packet), tens of bytes.
        let mut carry = Block::default();
        let mut carried = 0usize;
        let mut aad_len = 0u64;
        for part in aad {
            aad_len = aad_len.wrapping_add(part.len() as u64);
            for &byte in *part {
                carry[carried & 15] = byte;
                carried += 1;
                if carried == 16 {
                    ghash.update(&[carry]);
                    carried = 0;
                }
            }
        }
        // SP 800-38D §7.1 step 5: the AAD and the ciphertext each zero-padded to a block.
        ghash.update_padded(&carry[..carried & 15]);
        ghash.update_padded(ciphertext);
        let mut lengths = Block::default();
        lengths[..8].copy_from_slice(&aad_len.wrapping_mul(8).to_be_bytes());
        lengths[8..].copy_from_slice(&bit_length(ciphertext).to_be_bytes());
        ghash.update(&[lengths]);
        // The unmasked hash becomes the tag in place; the mask is wiped. Best effort on hosts
        // (devices take the compact path below): `finalize` moves the GHASH state out by
        // value and the copy it leaves here is out of safe code's reach; no stack scrub.
        let mut tag: [u8; TAG_LEN] = ghash.finalize().into();
        for (t, m) in tag.iter_mut().zip(mask.iter()) {
            *t ^= m;
        }
        zeroize::Zeroize::zeroize(mask.as_mut_slice());
        tag
    }

    /// [`Self::tag_parts`] on mote's compact GHASH (`ghash32.rs`, feature `compact`): the
    /// AAD's parts, the ciphertext and the lengths are XORed into the hash state as they
    /// stand, with no carry block.
    #[cfg(feature = "compact")]
    pub(crate) fn tag_parts(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[&[u8]],
        ciphertext: &[u8],
    ) -> [u8; TAG_LEN] {
        let mut keys = Default::default();
        self.hash_key_and_mask(nonce, &mut keys);
        let [h, mask] = &mut keys;
        let mut ghash = crate::ghash32::GHash::new();
        ghash.key(h.as_mut());
        let mut aad_len = 0u64;
        for part in aad {
            aad_len = aad_len.wrapping_add(part.len() as u64);
            ghash.absorb(part);
        }
        // SP 800-38D §7.1 step 5: the AAD and the ciphertext each zero-padded to a block,
        // then len(A) ‖ len(C) in bits.
        ghash.pad();
        ghash.absorb(ciphertext);
        ghash.pad();
        ghash.absorb(&aad_len.wrapping_mul(8).to_be_bytes());
        ghash.absorb(&bit_length(ciphertext).to_be_bytes());
        let tag = ghash.finish(mask.as_mut());
        // The AES and GHASH calls' frames lay below this one.
        crate::scrub::stack_below();
        tag
    }
}

/// GMAC: the AES-128-GCM tag under `key` and the 96-bit `nonce` of an empty plaintext whose
/// associated data is the concatenation of `aad` (SP 800-38D §6.4 and §7.1 with no
/// ciphertext). RFC 9001 §5.8's Retry Integrity Tag is this over the Retry pseudo-packet's
/// parts.
pub(crate) fn aes128_gmac(key: &[u8; 16], nonce: &[u8; NONCE_LEN], aad: &[&[u8]]) -> [u8; TAG_LEN] {
    // Devices: keyed where it lies (no schedule built by value and copied: 176 B of stack).
    #[cfg(feature = "compact")]
    let gcm = {
        let mut gcm = Gcm::ZERO;
        gcm.set_key(key);
        gcm
    };
    #[cfg(not(feature = "compact"))]
    let gcm = Gcm::<Aes128>::new(key);
    gcm.tag_parts(nonce, aad, &[])
}

/// The counter block `nonce ‖ counter` (big-endian 32-bit counter).
fn counter_block(nonce: &[u8; NONCE_LEN], counter: u32) -> Block {
    let mut block = Block::default();
    block[..NONCE_LEN].copy_from_slice(nonce);
    block[NONCE_LEN..].copy_from_slice(&counter.to_be_bytes());
    block
}

fn bit_length(data: &[u8]) -> u64 {
    (data.len() as u64) << 3
}

/// SP 800-38D §5.2.1.1: the text's limit (the AAD's, 2^61 − 1 bytes, no slice reaches).
fn check_length(text: &[u8]) -> Result<(), Error> {
    if text.len() as u64 > MAX_TEXT {
        return Err(Error::BadLength);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes_gcm::aead::AeadInPlace;
    use hex_literal::hex;

    /// Bytes that vary with position and a seed, for the comparison with `aes-gcm`.
    fn pattern(len: usize, seed: u8) -> [u8; 96] {
        let mut out = [0u8; 96];
        for (i, b) in out.iter_mut().enumerate().take(len) {
            *b = (i as u8).wrapping_mul(31).wrapping_add(seed) ^ 0x5a;
        }
        out
    }

    // The GCM specification's test case 4 (McGrew and Viega; NIST's gcmEncryptExtIV128
    // format): AES-128, a 96-bit IV, 20 bytes of AAD, 60 bytes of plaintext.
    #[test]
    fn gcm_spec_test_case_4() {
        let key = hex!("feffe9928665731c6d6a8f9467308308");
        let nonce = hex!("cafebabefacedbaddecaf888");
        let aad = hex!("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let plain = hex!(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
            "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        );
        let cipher = hex!(
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
            "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
        );
        let gcm = Gcm::<Aes128>::new(&key);
        let mut buf = plain;
        let tag = gcm.seal(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(buf, cipher);
        assert_eq!(tag, hex!("5bc94fbc3221a5db94fae95ae7121a47"));
        gcm.open(&nonce, &aad, &mut buf, &tag).unwrap();
        assert_eq!(buf, plain);
    }

    #[test]
    fn seals_and_opens_as_aes_gcm_at_every_length() {
        let key = hex!("000102030405060708090a0b0c0d0e0f");
        let nonce = hex!("f0e1d2c3b4a5968778695a4b");
        let ours = Gcm::<Aes128>::new(&key);
        let theirs = <aes_gcm::Aes128Gcm as aes_gcm::KeyInit>::new(&key.into());
        for text_len in 0..=96 {
            for aad_len in [0, 1, 15, 16, 17, 33, 45] {
                let aad = pattern(aad_len, 7);
                let aad = &aad[..aad_len];
                let plain = pattern(text_len, text_len as u8);
                let mut a = plain;
                let mut b = plain;
                let tag = ours.seal(&nonce, aad, &mut a[..text_len]).unwrap();
                let want = theirs
                    .encrypt_in_place_detached(&nonce.into(), aad, &mut b[..text_len])
                    .unwrap();
                assert_eq!(a, b, "ciphertext, {text_len} bytes, {aad_len} of AAD");
                assert_eq!(&tag[..], &want[..], "tag, {text_len} bytes, {aad_len} of AAD");
                ours.open(&nonce, aad, &mut a[..text_len], &tag).unwrap();
                assert_eq!(a, plain);
            }
        }
    }

    #[test]
    fn aes256_seals_as_aes_gcm() {
        let key = [0x42u8; 32];
        let nonce = [9u8; NONCE_LEN];
        let ours = Gcm::<aes::Aes256>::new(&key);
        let theirs = <aes_gcm::Aes256Gcm as aes_gcm::KeyInit>::new(&key.into());
        let mut a = pattern(77, 3);
        let mut b = a;
        let tag = ours.seal(&nonce, b"aad", &mut a[..77]).unwrap();
        let want = theirs.encrypt_in_place_detached(&nonce.into(), b"aad", &mut b[..77]).unwrap();
        assert_eq!((a, &tag[..]), (b, &want[..]));
    }

    #[test]
    fn wrong_tag_aad_or_text_is_refused_and_leaves_the_text() {
        let gcm = Gcm::<Aes128>::new(&[1; 16]);
        let nonce = [2; NONCE_LEN];
        let mut buf = pattern(40, 1);
        let tag = gcm.seal(&nonce, b"header", &mut buf[..40]).unwrap();
        let sealed = buf;
        let mut bad_tag = tag;
        bad_tag[15] ^= 1;
        assert_eq!(
            gcm.open(&nonce, b"header", &mut buf[..40], &bad_tag),
            Err(Error::DecryptFailed)
        );
        assert_eq!(gcm.open(&nonce, b"headex", &mut buf[..40], &tag), Err(Error::DecryptFailed));
        buf[39] ^= 0x80;
        assert_eq!(gcm.open(&nonce, b"header", &mut buf[..40], &tag), Err(Error::DecryptFailed));
        buf[39] ^= 0x80;
        assert_eq!(buf, sealed);
        let mut other = [3u8; NONCE_LEN];
        other[0] = 0;
        assert_eq!(gcm.open(&other, b"header", &mut buf[..40], &tag), Err(Error::DecryptFailed));
    }

    #[test]
    fn hash_key_and_mask_are_the_cipher_of_zero_and_j0() {
        let gcm = Gcm::<Aes128>::new(&[0; 16]);
        let mut keys = Default::default();
        gcm.hash_key_and_mask(&[0; NONCE_LEN], &mut keys);
        // The GCM specification's test case 1 (zero key and IV): H is AES-128 of zero under
        // the zero key; with no AAD and no text GHASH is 0, so the tag is E_K(J0) itself.
        assert_eq!(keys[0][..], hex!("66e94bd4ef8a2c3b884cfa59ca342b2e"));
        assert_eq!(keys[1][..], hex!("58e2fccefa7e3061367f1d57a4e7455a"));
    }

    /// The tag of the one-piece AES-128-GCM seal of an empty plaintext.
    fn sealed(key: &[u8; 16], nonce: &[u8; 12], aad: &[u8]) -> [u8; 16] {
        let aead = <aes_gcm::Aes128Gcm as aes_gcm::KeyInit>::new(key.into());
        aead.encrypt_in_place_detached(nonce.into(), aad, &mut []).unwrap().into()
    }

    /// Every way of cutting associated data of several lengths (around block boundaries)
    /// into three parts gives the tag of the whole.
    #[test]
    fn parts_equal_one_piece_seal() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8 * 13 + 5);
        let nonce: [u8; 12] = core::array::from_fn(|i| 0xa0 ^ i as u8);
        let data: [u8; 70] = core::array::from_fn(|i| (i as u8).wrapping_mul(31) ^ 0x5c);
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 70] {
            let aad = &data[..len];
            let whole = sealed(&key, &nonce, aad);
            for a in 0..=len {
                for b in a..=len {
                    let parts = [&aad[..a], &aad[a..b], &aad[b..]];
                    assert_eq!(aes128_gmac(&key, &nonce, &parts), whole, "{len} {a} {b}");
                }
            }
            assert_eq!(aes128_gmac(&key, &nonce, &[aad]), whole);
        }
        assert_eq!(aes128_gmac(&key, &nonce, &[]), sealed(&key, &nonce, &[]));
    }

    /// NIST GCM test vector (gcmEncryptExtIV128, Keylen 128, IVlen 96, PTlen 0, AADlen
    /// 128, Count 0): a tag over associated data only.
    #[test]
    fn nist_gmac_vector() {
        let key = hex_literal::hex!("77be63708971c4e240d1cb79e8d77feb");
        let nonce = hex_literal::hex!("e0e00f19fed7ba0136a797f3");
        let aad = hex_literal::hex!("7a43ec1d9c0a5a78a0b16533a6213cab");
        let tag = hex_literal::hex!("209fcc8d3675ed938e9c7166709dd946");
        assert_eq!(aes128_gmac(&key, &nonce, &[&aad[..5], &aad[5..]]), tag);
    }
}
