//! `mote_crypto` through the provider traits: HKDF, the QUIC Initial keys (RFC 9001 §5.2),
//! AEAD packet protection, header protection, hashing, key exchange and signature
//! verification — for every algorithm the provider offers in this build, so enabling a
//! feature links its code.

use core::hint::black_box;

use mote_crypto::{
    hkdf, AeadAlgorithm, AeadKey, CryptoProvider, CryptoRng, Error, Hash, HashAlgorithm,
    HeaderProtectionKey, KeyExchange, SignatureScheme, NONCE_LEN, SAMPLE_LEN,
};
use mote_quic::{ConnectionId, Version};

use crate::Checks;

/// RFC 9001 Appendix A.1: the client's Destination Connection ID.
const DCID: [u8; 8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];

/// Client Initial keys for [`DCID`] (RFC 9001 A.1 for v1, RFC 9369 A.1 for v2).
const V1_CLIENT: InitialKeys = InitialKeys {
    key: [
        0x1f, 0x36, 0x96, 0x13, 0xdd, 0x76, 0xd5, 0x46, 0x77, 0x30, 0xef, 0xcb, 0xe3, 0xb1, 0xa2,
        0x2d,
    ],
    iv: [0xfa, 0x04, 0x4b, 0x2f, 0x42, 0xa3, 0xfd, 0x3b, 0x46, 0xfb, 0x25, 0x5c],
    hp: [
        0x9f, 0x50, 0x44, 0x9e, 0x04, 0xa0, 0xe8, 0x10, 0x28, 0x3a, 0x1e, 0x99, 0x33, 0xad, 0xed,
        0xd2,
    ],
};
#[cfg(feature = "v2")]
const V2_CLIENT: InitialKeys = InitialKeys {
    key: [
        0x8b, 0x1a, 0x0b, 0xc1, 0x21, 0x28, 0x42, 0x90, 0xa2, 0x9e, 0x09, 0x71, 0xb5, 0xcd, 0x04,
        0x5d,
    ],
    iv: [0x91, 0xf7, 0x3e, 0x23, 0x51, 0xd8, 0xfa, 0x91, 0x66, 0x0e, 0x90, 0x9f],
    hp: [
        0x45, 0xb9, 0x5e, 0x15, 0x23, 0x5d, 0x6f, 0x45, 0xa6, 0xb1, 0x9c, 0xbc, 0xb0, 0x29, 0x4b,
        0xa9,
    ],
};

/// A client Initial packet's protection inputs: packet number 2, the unprotected long
/// header as AAD (RFC 9001 A.2), and the first 31 bytes of a CRYPTO frame.
const PN: u64 = 2;
const AAD: [u8; 22] = [
    0xc3, 0x00, 0x00, 0x00, 0x01, 0x08, 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08, 0x00, 0x00,
    0x44, 0x9e, 0x00, 0x00, 0x00, 0x02,
];
const PLAINTEXT: [u8; 31] = *b"\x06\x00\x40\xf1\x01\x00\x00\xed\x03\x03 mote footprint check";
/// AES-128-GCM of [`PLAINTEXT`] under the v1 client key (ciphertext, then tag).
const CIPHERTEXT: [u8; 31] = [
    0xd1, 0xb1, 0xc9, 0x8d, 0xd7, 0x68, 0x9f, 0xb8, 0xec, 0x11, 0x19, 0xd7, 0x24, 0x01, 0x48, 0x92,
    0x87, 0x6c, 0x8e, 0x08, 0xfc, 0x99, 0xbc, 0xac, 0x85, 0x47, 0xd0, 0xa0, 0xd7, 0x45, 0x14,
];
const TAG: [u8; 16] = [
    0x71, 0xb6, 0x59, 0xeb, 0x46, 0x82, 0x88, 0x5d, 0xd5, 0x78, 0x5a, 0x93, 0xaa, 0xfb, 0x56, 0x84,
];

/// RFC 9001 A.2: header-protection sample and mask under the v1 client hp key.
const AES_SAMPLE: [u8; SAMPLE_LEN] = [
    0xd1, 0xb1, 0xc9, 0x8d, 0xd7, 0x68, 0x9f, 0xb8, 0xec, 0x11, 0xd2, 0x42, 0xb1, 0x23, 0xdc, 0x9b,
];
const AES_MASK: [u8; 5] = [0x43, 0x7b, 0x9a, 0xec, 0x36];

/// RFC 9001 A.5: ChaCha20 header protection.
#[cfg(feature = "chacha20")]
const CHACHA_HP: [u8; 32] = [
    0x25, 0xa2, 0x82, 0xb9, 0xe8, 0x2f, 0x06, 0xf2, 0x1f, 0x48, 0x89, 0x17, 0xa4, 0xfc, 0x8f, 0x1b,
    0x73, 0x57, 0x36, 0x85, 0x60, 0x85, 0x97, 0xd0, 0xef, 0xcb, 0x07, 0x6b, 0x0a, 0xb7, 0xa7, 0xa4,
];
#[cfg(feature = "chacha20")]
const CHACHA_SAMPLE: [u8; SAMPLE_LEN] = [
    0x5e, 0x5c, 0xd5, 0x5c, 0x41, 0xf6, 0x90, 0x80, 0x57, 0x5d, 0x79, 0x99, 0xc2, 0x5a, 0x5b, 0xfb,
];
#[cfg(feature = "chacha20")]
const CHACHA_MASK: [u8; 5] = [0xae, 0xfe, 0xfe, 0x7d, 0x03];

/// FIPS 180-2: SHA-256("abc").
const SHA256_ABC: [u8; 32] = [
    0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
    0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
];

/// RFC 8032 §7.1 TEST 1: Ed25519 public key and signature of the empty message.
#[cfg(feature = "ed25519")]
const ED25519_PUBLIC: [u8; 32] = [
    0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
    0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a,
];
#[cfg(feature = "ed25519")]
const ED25519_SIGNATURE: [u8; 64] = [
    0xe5, 0x56, 0x43, 0x00, 0xc3, 0x60, 0xac, 0x72, 0x90, 0x86, 0xe2, 0xcc, 0x80, 0x6e, 0x82, 0x8a,
    0x84, 0x87, 0x7f, 0x1e, 0xb8, 0xe5, 0xd9, 0x74, 0xd8, 0x73, 0xe0, 0x65, 0x22, 0x49, 0x01, 0x55,
    0x5f, 0xb8, 0x82, 0x15, 0x90, 0xa3, 0x3b, 0xac, 0xc6, 0x1e, 0x39, 0x70, 0x1c, 0xf9, 0xb4, 0x6b,
    0xd2, 0x5b, 0xf5, 0xf0, 0x59, 0x5b, 0xbe, 0x24, 0x65, 0x51, 0x41, 0x43, 0x8e, 0x7a, 0x10, 0x0b,
];

/// An ECDSA P-256/SHA-256 key (uncompressed SEC1) and the DER signature it made over
/// [`ECDSA_MESSAGE`] (generated once with an independent implementation).
#[cfg(feature = "ecdsa-p256")]
const ECDSA_PUBLIC: [u8; 65] = [
    0x04, 0xd8, 0xcd, 0x12, 0xea, 0x5c, 0x67, 0xf2, 0xf8, 0xa0, 0x0c, 0x11, 0x24, 0x89, 0x3e, 0xdc,
    0xfa, 0x67, 0x54, 0xc4, 0xd6, 0xce, 0xde, 0x6b, 0xe1, 0x3b, 0xdf, 0x22, 0x95, 0xc8, 0x10, 0xa9,
    0x7f, 0xa5, 0xa8, 0x9d, 0x2d, 0x2a, 0x36, 0x0c, 0x0c, 0xa9, 0xa4, 0xd6, 0xc7, 0xc9, 0xed, 0x4b,
    0x28, 0xd3, 0xe1, 0x99, 0xd6, 0x62, 0x7f, 0x2e, 0x69, 0x6d, 0x68, 0x9c, 0x31, 0x0a, 0x5b, 0x0f,
    0x48,
];
#[cfg(feature = "ecdsa-p256")]
const ECDSA_MESSAGE: &[u8] = b"mote footprint ecdsa-p256 check";
#[cfg(feature = "ecdsa-p256")]
const ECDSA_SIGNATURE: [u8; 70] = [
    0x30, 0x44, 0x02, 0x20, 0x3e, 0xb0, 0x55, 0x9b, 0xb5, 0x75, 0x3c, 0x34, 0x65, 0xb4, 0x0d, 0xd4,
    0x01, 0x7a, 0xea, 0x78, 0x1b, 0x29, 0xc1, 0x4d, 0xd7, 0x4d, 0x2f, 0xf7, 0x5b, 0xe8, 0xb7, 0x8c,
    0x3d, 0x18, 0x6e, 0x39, 0x02, 0x20, 0x75, 0x3c, 0xe2, 0x2e, 0xa2, 0x45, 0x89, 0x76, 0xde, 0xfb,
    0xd1, 0x7d, 0x50, 0xd1, 0xd6, 0xc8, 0x54, 0x7a, 0x5a, 0xb3, 0x4b, 0x6a, 0x09, 0xd6, 0x33, 0x6d,
    0x39, 0xb0, 0xf7, 0xf3, 0x19, 0xfc,
];

/// One direction's Initial packet-protection keys for AES-128-GCM.
#[derive(PartialEq, Eq)]
struct InitialKeys {
    key: [u8; 16],
    iv: [u8; NONCE_LEN],
    hp: [u8; 16],
}

/// RFC 9001 §5.2: derives the client Initial keys of `version` from the client's first
/// Destination Connection ID.
fn client_initial_keys<P: CryptoProvider>(
    p: &P,
    version: Version,
    dcid: &ConnectionId,
) -> Result<InitialKeys, Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    let sha256 = HashAlgorithm::Sha256;
    let initial = hkdf::extract(p, sha256, &params.initial_salt, dcid)?;
    let client = hkdf::expand_label_secret(p, sha256, initial.as_ref(), b"client in", &[])?;
    let mut keys = InitialKeys { key: [0; 16], iv: [0; NONCE_LEN], hp: [0; 16] };
    hkdf::expand_label(p, sha256, client.as_ref(), params.key_label, &[], &mut keys.key)?;
    hkdf::expand_label(p, sha256, client.as_ref(), params.iv_label, &[], &mut keys.iv)?;
    hkdf::expand_label(p, sha256, client.as_ref(), params.hp_label, &[], &mut keys.hp)?;
    Ok(keys)
}

/// RFC 9001 §5.3: the AEAD nonce is the IV XORed with the packet number.
fn nonce(iv: &[u8; NONCE_LEN], pn: u64) -> [u8; NONCE_LEN] {
    let mut nonce = *iv;
    for (n, p) in nonce[NONCE_LEN - 8..].iter_mut().zip(pn.to_be_bytes()) {
        *n ^= p;
    }
    nonce
}

/// A deterministic generator for the self-test's ephemeral keys (a device passes its TRNG).
struct TestRng(u64);

impl CryptoRng for TestRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        for chunk in dest.chunks_mut(8) {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let v = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        Ok(())
    }
}

/// Runs every check below against provider `p`.
#[inline(never)]
pub fn exercise<P: CryptoProvider>(p: &P, c: &mut Checks) {
    initial_keys(p, c);
    packet_protection(p, c);
    header_protection(p, c);
    every_aead(p, c);
    hashing(p, c);
    key_exchange(p, c);
    signatures(p, c);
}

/// The QUIC Initial keys of every supported version, against the RFC values.
fn initial_keys<P: CryptoProvider>(p: &P, c: &mut Checks) {
    let Some(dcid) = ConnectionId::new(black_box(&DCID)) else {
        return c.check(false);
    };
    let v1 = client_initial_keys(p, black_box(Version::V1), &dcid);
    c.check(v1.is_ok_and(|k| k == V1_CLIENT));
    #[cfg(feature = "v2")]
    {
        let v2 = client_initial_keys(p, black_box(Version::V2), &dcid);
        c.check(v2.is_ok_and(|k| k == V2_CLIENT));
    }
}

/// AES-128-GCM seal and open of a client Initial payload, and rejection of a forgery.
fn packet_protection<P: CryptoProvider>(p: &P, c: &mut Checks) {
    let Some(key) = c.ok(p.aead_key(AeadAlgorithm::Aes128Gcm, black_box(&V1_CLIENT.key))) else {
        return;
    };
    let nonce = nonce(&V1_CLIENT.iv, black_box(PN));
    let mut buf = black_box(PLAINTEXT);
    let tag = key.seal_in_place(&nonce, &AAD, &mut buf);
    c.check(tag == Ok(TAG) && buf == CIPHERTEXT);
    c.check(key.open_in_place(&nonce, &AAD, &mut buf, &TAG).is_ok() && buf == PLAINTEXT);
    let mut forged = black_box(CIPHERTEXT);
    forged[0] ^= 1;
    c.check(key.open_in_place(&nonce, &AAD, &mut forged, &TAG) == Err(Error::DecryptFailed));
}

/// Header-protection masks against RFC 9001 A.2 (AES) and A.5 (ChaCha20).
fn header_protection<P: CryptoProvider>(p: &P, c: &mut Checks) {
    if let Some(hp) = c.ok(p.header_key(AeadAlgorithm::Aes128Gcm, black_box(&V1_CLIENT.hp))) {
        c.check(hp.mask(black_box(&AES_SAMPLE)) == Ok(AES_MASK));
    }
    #[cfg(feature = "chacha20")]
    if let Some(hp) = c.ok(p.header_key(AeadAlgorithm::ChaCha20Poly1305, black_box(&CHACHA_HP))) {
        c.check(hp.mask(black_box(&CHACHA_SAMPLE)) == Ok(CHACHA_MASK));
    }
}

/// For each AEAD the provider offers: derive keys with the suite's hash, seal, open,
/// compute a header-protection mask.
fn every_aead<P: CryptoProvider>(p: &P, c: &mut Checks) {
    for &alg in black_box(p.aead_algorithms()) {
        let hash = alg.hash();
        let Some(secret) = c.ok(hkdf::extract(p, hash, &[], black_box(&DCID))) else {
            continue;
        };
        let mut key = [0u8; 32];
        let mut hp = [0u8; 32];
        let key = &mut key[..alg.key_len()];
        let hp = &mut hp[..alg.key_len()];
        c.ok(hkdf::expand_label(p, hash, secret.as_ref(), b"quic key", &[], key));
        c.ok(hkdf::expand_label(p, hash, secret.as_ref(), b"quic hp", &[], hp));
        if let Some(aead) = c.ok(p.aead_key(alg, key)) {
            let nonce = nonce(&V1_CLIENT.iv, black_box(PN));
            let mut buf = black_box(PLAINTEXT);
            if let Some(tag) = c.ok(aead.seal_in_place(&nonce, &AAD, &mut buf)) {
                c.check(buf != PLAINTEXT);
                c.check(
                    aead.open_in_place(&nonce, &AAD, &mut buf, &tag).is_ok() && buf == PLAINTEXT,
                );
            }
        }
        if let Some(hpk) = c.ok(p.header_key(alg, hp)) {
            black_box(c.ok(hpk.mask(black_box(&AES_SAMPLE))));
        }
    }
}

/// SHA-256 against FIPS 180-2, and SHA-384 where built (transcript hashes).
fn hashing<P: CryptoProvider>(p: &P, c: &mut Checks) {
    if let Some(mut h) = c.ok(p.hash(black_box(HashAlgorithm::Sha256))) {
        h.update(black_box(b"ab"));
        let snapshot = h.snapshot();
        h.update(black_box(b"c"));
        c.check(h.finish().as_ref() == SHA256_ABC && snapshot.as_ref() != SHA256_ABC);
    }
    #[cfg(feature = "aes256")]
    if let Some(mut h) = c.ok(p.hash(black_box(HashAlgorithm::Sha384))) {
        h.update(black_box(b"abc"));
        c.check(h.finish().as_ref().len() == 48);
    }
}

/// Both sides of an ephemeral exchange for every group the provider offers.
fn key_exchange<P: CryptoProvider>(p: &P, c: &mut Checks) {
    let mut rng = TestRng(black_box(0x6d6f_7465_2d66_7031));
    for &group in black_box(p.groups()) {
        let (Some(alice), Some(bob)) = (
            c.ok(p.start_key_exchange(group, &mut rng)),
            c.ok(p.start_key_exchange(group, &mut rng)),
        ) else {
            continue;
        };
        c.check(alice.public_key().len() == group.public_key_len());
        let mut bob_public = [0u8; mote_crypto::MAX_PUBLIC_KEY_LEN];
        let bob_public = &mut bob_public[..bob.public_key().len()];
        bob_public.copy_from_slice(bob.public_key());
        let mut alice_public = [0u8; mote_crypto::MAX_PUBLIC_KEY_LEN];
        let alice_public = &mut alice_public[..alice.public_key().len()];
        alice_public.copy_from_slice(alice.public_key());
        let a = alice.complete(bob_public);
        let b = bob.complete(alice_public);
        c.check(matches!((&a, &b), (Ok(a), Ok(b)) if a.as_ref() == b.as_ref()));
    }
}

/// Signature verification for every scheme the provider offers, against known signatures.
fn signatures<P: CryptoProvider>(p: &P, c: &mut Checks) {
    for &scheme in black_box(p.verify_schemes()) {
        let Some((public, message, signature)) = black_box(signature_vector(scheme)) else {
            // The provider offers a scheme this firmware has no vector for.
            c.check(false);
            continue;
        };
        c.check(p.verify(scheme, public, message, signature).is_ok());
        c.check(p.verify(scheme, public, b"tampered", signature).is_err());
    }
}

/// (public key, message, signature) of a known-good signature for `scheme`.
fn signature_vector(
    scheme: SignatureScheme,
) -> Option<(&'static [u8], &'static [u8], &'static [u8])> {
    match scheme {
        #[cfg(feature = "ed25519")]
        SignatureScheme::Ed25519 => Some((&ED25519_PUBLIC, b"", &ED25519_SIGNATURE)),
        #[cfg(feature = "ecdsa-p256")]
        SignatureScheme::EcdsaSecp256r1Sha256 => {
            Some((&ECDSA_PUBLIC, ECDSA_MESSAGE, &ECDSA_SIGNATURE))
        }
        _ => None,
    }
}
