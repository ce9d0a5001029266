//! GMAC over associated data given in parts: the AES-128-GCM tag of an empty plaintext
//! (NIST SP 800-38D §6.4 and §7.1 with no ciphertext), without gathering the parts into one
//! buffer.
//!
//! RFC 9001 §5.8's Retry Integrity Tag is this over the Retry pseudo-packet, which a
//! client would otherwise assemble (ODCID length, ODCID, then the received packet) in a
//! packet-sized stack buffer: on a device that buffer was the deepest frame of the receive
//! path (issue 8).
//!
//! The AES block function and GHASH are RustCrypto's, the ones under `aes_gcm::Aes128Gcm`,
//! so a device links no second copy of either.

use aes::cipher::{BlockEncrypt, KeyInit};
use ghash::universal_hash::UniversalHash;
use ghash::GHash;

use crate::{NONCE_LEN, TAG_LEN};

/// GHASH's block size and the AES block size.
const BLOCK: usize = 16;

/// The AES-128-GCM tag (GMAC) under `key` and the 96-bit `nonce` over an empty plaintext
/// whose associated data is the concatenation of `aad`.
pub(crate) fn aes128_gmac(key: &[u8; 16], nonce: &[u8; NONCE_LEN], aad: &[&[u8]]) -> [u8; TAG_LEN] {
    let (hash_key, mask) = hash_key_and_mask(key, nonce);
    let mut ghash = GHash::new(&hash_key.into());
    // The parts go to GHASH through one block: byte by byte is the least code, and the only
    // user (a Retry, once per connection at most) hashes under 300 bytes.
    let mut block = [0u8; BLOCK];
    let mut filled = 0usize;
    let mut aad_len = 0u64;
    for part in aad {
        aad_len += part.len() as u64;
        for &byte in *part {
            if let Some(slot) = block.get_mut(filled) {
                *slot = byte;
            }
            filled += 1;
            if filled == BLOCK {
                ghash.update_padded(&block);
                filled = 0;
            }
        }
    }
    // SP 800-38D §7.1 step 5: the associated data is zero-padded to a whole block.
    ghash.update_padded(block.get(..filled).unwrap_or_default());
    // Then the lengths in bits, associated data first; the ciphertext is empty (no slice in
    // memory reaches 2^61 bytes, so the bit count fits 64 bits).
    let lengths = (u128::from(aad_len.wrapping_mul(8)) << 64).to_be_bytes();
    ghash.update_padded(&lengths);
    // §7.1 step 7 (the first counter block's keystream): T = GCTR(J0, S).
    let tag = u128::from_ne_bytes(ghash.finalize().into()) ^ u128::from_ne_bytes(mask);
    tag.to_ne_bytes()
}

/// GCM's hash subkey H = E(K, 0^128) and the tag mask E(K, J0), J0 = nonce || 0^31 || 1
/// (SP 800-38D §7.1 steps 1 and 2, for a 96-bit nonce). The expanded key is not erased:
/// the one user's key is a public constant (RFC 9001 §5.8).
fn hash_key_and_mask(key: &[u8; 16], nonce: &[u8; NONCE_LEN]) -> ([u8; BLOCK], [u8; BLOCK]) {
    let cipher = aes::Aes128::new(key.into());
    let mut j0 = [0u8; BLOCK];
    if let Some((head, _)) = j0.split_first_chunk_mut::<NONCE_LEN>() {
        *head = *nonce;
    }
    j0[BLOCK - 1] = 1;
    // One call for both blocks: the bitsliced AES encrypts two at a time anyway.
    let mut blocks = [[0u8; BLOCK].into(), j0.into()];
    cipher.encrypt_blocks(&mut blocks);
    let [hash_key, mask] = blocks;
    (hash_key.into(), mask.into())
}

#[cfg(test)]
mod tests {
    use aes_gcm::aead::{AeadInPlace, KeyInit};

    use super::aes128_gmac;

    /// The tag of the one-piece AES-128-GCM seal of an empty plaintext.
    fn sealed(key: &[u8; 16], nonce: &[u8; 12], aad: &[u8]) -> [u8; 16] {
        let aead = aes_gcm::Aes128Gcm::new(key.into());
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
