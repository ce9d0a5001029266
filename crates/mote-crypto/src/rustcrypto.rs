//! The RustCrypto provider: pure-Rust, `no_std`, constant-time primitives.
//!
//! Key types are enums whose variants exist only for the algorithms enabled by Cargo
//! features, so a minimal device build links AES-128-GCM, SHA-256 and X25519 and nothing
//! else (see the crate docs on linker-friendly dispatch).

use aes::cipher::{BlockEncrypt, KeyInit};
#[cfg(feature = "chacha20")]
use chacha20poly1305::aead::AeadInPlace;
#[cfg(feature = "aes256")]
use hmac::Mac;
#[cfg(feature = "aes256")]
use sha2::Digest as _;

use crate::gcm::{Aes128, Gcm};
use crate::{
    AeadAlgorithm, CryptoProvider, CryptoRng, Digest, Error, HashAlgorithm, NamedGroup,
    SharedSecret, SignatureScheme, NONCE_LEN, SAMPLE_LEN, TAG_LEN,
};

/// The RustCrypto provider. Zero-sized: every key it returns owns its state.
#[derive(Clone, Copy, Debug, Default)]
pub struct RustCrypto;

static AEADS: &[AeadAlgorithm] = &[
    AeadAlgorithm::Aes128Gcm,
    #[cfg(feature = "chacha20")]
    AeadAlgorithm::ChaCha20Poly1305,
    #[cfg(feature = "aes256")]
    AeadAlgorithm::Aes256Gcm,
];

static GROUPS: &[NamedGroup] = &[
    NamedGroup::X25519,
    #[cfg(feature = "p256")]
    NamedGroup::Secp256r1,
];

static VERIFY_SCHEMES: &[SignatureScheme] = &[
    #[cfg(feature = "ed25519")]
    SignatureScheme::Ed25519,
    #[cfg(feature = "ecdsa-p256")]
    SignatureScheme::EcdsaSecp256r1Sha256,
];

/// An AEAD key of one of the enabled algorithms.
// The variants hold expanded key schedules of different sizes; boxing would need a heap, and a
// connection holds only a few keys, so the enum is as large as its largest enabled variant.
#[allow(clippy::large_enum_variant)]
pub enum AeadKey {
    /// AES-128-GCM.
    Aes128Gcm(Gcm<Aes128>),
    /// AES-256-GCM.
    #[cfg(feature = "aes256")]
    Aes256Gcm(Gcm<aes::Aes256>),
    /// ChaCha20-Poly1305.
    #[cfg(feature = "chacha20")]
    ChaCha20Poly1305(chacha20poly1305::ChaCha20Poly1305),
}

impl crate::AeadKey for AeadKey {
    fn algorithm(&self) -> AeadAlgorithm {
        match self {
            Self::Aes128Gcm(_) => AeadAlgorithm::Aes128Gcm,
            #[cfg(feature = "aes256")]
            Self::Aes256Gcm(_) => AeadAlgorithm::Aes256Gcm,
            #[cfg(feature = "chacha20")]
            Self::ChaCha20Poly1305(_) => AeadAlgorithm::ChaCha20Poly1305,
        }
    }

    fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        match self {
            Self::Aes128Gcm(k) => k.seal(nonce, aad, in_out),
            #[cfg(feature = "aes256")]
            Self::Aes256Gcm(k) => k.seal(nonce, aad, in_out),
            #[cfg(feature = "chacha20")]
            Self::ChaCha20Poly1305(k) => k
                .encrypt_in_place_detached(nonce.into(), aad, in_out)
                .map(Into::into)
                // Only fails for inputs longer than the AEAD's maximum.
                .map_err(|_| Error::BadLength),
        }
    }

    fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), Error> {
        match self {
            Self::Aes128Gcm(k) => k.open(nonce, aad, in_out, tag),
            #[cfg(feature = "aes256")]
            Self::Aes256Gcm(k) => k.open(nonce, aad, in_out, tag),
            #[cfg(feature = "chacha20")]
            Self::ChaCha20Poly1305(k) => k
                .decrypt_in_place_detached(nonce.into(), aad, in_out, tag.into())
                .map_err(|_| Error::DecryptFailed),
        }
    }
}

/// A header-protection key (RFC 9001 §5.4) of one of the enabled algorithms.
#[allow(clippy::large_enum_variant)] // as for `AeadKey`: no heap to box into
pub enum HeaderKey {
    /// AES-128 in ECB mode over the sample (RFC 9001 §5.4.3).
    Aes128(Aes128),
    /// AES-256 in ECB mode over the sample.
    #[cfg(feature = "aes256")]
    Aes256(aes::Aes256),
    /// The raw ChaCha20 key (RFC 9001 §5.4.4); the cipher is set up per sample.
    #[cfg(feature = "chacha20")]
    ChaCha20(zeroize::Zeroizing<[u8; 32]>),
}

impl crate::HeaderProtectionKey for HeaderKey {
    fn algorithm(&self) -> AeadAlgorithm {
        match self {
            Self::Aes128(_) => AeadAlgorithm::Aes128Gcm,
            #[cfg(feature = "aes256")]
            Self::Aes256(_) => AeadAlgorithm::Aes256Gcm,
            #[cfg(feature = "chacha20")]
            Self::ChaCha20(_) => AeadAlgorithm::ChaCha20Poly1305,
        }
    }

    fn mask(&self, sample: &[u8; SAMPLE_LEN]) -> Result<[u8; 5], Error> {
        let mut mask = [0u8; 5];
        match self {
            // RFC 9001 §5.4.3: mask = AES-ECB(hp_key, sample)
            Self::Aes128(k) => {
                let mut block = (*sample).into();
                k.encrypt_block(&mut block);
                mask.copy_from_slice(&block[..5]);
            }
            #[cfg(feature = "aes256")]
            Self::Aes256(k) => {
                let mut block = (*sample).into();
                k.encrypt_block(&mut block);
                mask.copy_from_slice(&block[..5]);
            }
            // RFC 9001 §5.4.4: counter = sample[0..4] (little-endian), nonce = sample[4..16],
            // mask = ChaCha20(hp_key, counter, nonce, {0,0,0,0,0})
            #[cfg(feature = "chacha20")]
            Self::ChaCha20(key) => {
                use chacha20::cipher::{
                    consts::U10, KeyIvInit, StreamCipherCore, StreamCipherSeekCore,
                };
                let counter = u32::from_le_bytes([sample[0], sample[1], sample[2], sample[3]]);
                let nonce: [u8; 12] = [
                    sample[4], sample[5], sample[6], sample[7], sample[8], sample[9], sample[10],
                    sample[11], sample[12], sample[13], sample[14], sample[15],
                ];
                // One keystream block at block position `counter`, through the core cipher:
                // the stream wrapper refuses (panics on) a counter of 0xffffffff because the
                // *next* block would wrap, yet RFC 9001 §5.4.4 lets the peer-controlled sample
                // choose any 32-bit counter and needs only this one block.
                let mut core = chacha20::ChaChaCore::<U10>::new((&**key).into(), (&nonce).into());
                core.set_block_pos(counter);
                let mut block = Default::default();
                core.write_keystream_block(&mut block);
                mask.copy_from_slice(&block[..5]);
            }
        }
        Ok(mask)
    }
}

/// A running hash of one of the enabled algorithms.
#[derive(Clone)]
pub enum Hash {
    /// SHA-256.
    Sha256(crate::sha256::Sha256),
    /// SHA-384.
    #[cfg(feature = "aes256")]
    Sha384(sha2::Sha384),
}

impl crate::Hash for Hash {
    fn algorithm(&self) -> HashAlgorithm {
        match self {
            Self::Sha256(_) => HashAlgorithm::Sha256,
            #[cfg(feature = "aes256")]
            Self::Sha384(_) => HashAlgorithm::Sha384,
        }
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Self::Sha256(h) => h.update(data),
            #[cfg(feature = "aes256")]
            Self::Sha384(h) => h.update(data),
        }
    }

    fn finish(self) -> Digest {
        match self {
            Self::Sha256(mut h) => h.finish(),
            #[cfg(feature = "aes256")]
            Self::Sha384(h) => Digest::new(&h.finalize()),
        }
    }
}

/// A running HMAC over one of the enabled hashes.
// HMAC-SHA-384 (hosts, `aes256`) is larger than mote's compact HMAC-SHA-256; no_std has no
// box, and device builds have the SHA-256 variant only.
#[allow(clippy::large_enum_variant)]
pub enum Hmac {
    /// HMAC-SHA-256 (mote's, on sha2's block function: a smaller state and stack).
    Sha256(crate::hmac_sha256::HmacSha256),
    /// HMAC-SHA-384.
    #[cfg(feature = "aes256")]
    Sha384(hmac::Hmac<sha2::Sha384>),
}

impl crate::Hmac for Hmac {
    fn update(&mut self, data: &[u8]) {
        match self {
            Self::Sha256(m) => m.update(data),
            #[cfg(feature = "aes256")]
            Self::Sha384(m) => Mac::update(m, data),
        }
    }

    fn finish_in_place(&mut self) -> Digest {
        // Finished in place (borrowed, not moved out of the enum).
        match self {
            Self::Sha256(m) => m.finish(),
            #[cfg(feature = "aes256")]
            Self::Sha384(m) => Digest::new(&m.clone().finalize().into_bytes()),
        }
    }
}

/// Puts an unkeyed HMAC-SHA-256 in `slot`. Out of line: rustc builds the value in
/// temporaries before it lands in the slot, and they are not in the frame under which the
/// key's blocks are compressed (issue 8).
#[inline(never)]
fn insert_unkeyed_hmac_sha256(slot: &mut Option<Hmac>) -> &mut Hmac {
    slot.insert(Hmac::Sha256(crate::hmac_sha256::HmacSha256::unkeyed()))
}

/// RFC 7748 §4.1: the u-coordinate of the Curve25519 base point, 9.
const X25519_BASE_POINT: [u8; 32] = {
    let mut u = [0u8; 32];
    u[0] = 9;
    u
};

/// RFC 7748 §5: X25519(k, u) (the scalar is clamped inside). With feature `salty`, mote's
/// ladder on salty's Cortex-M4 assembly field arithmetic (`x25519.rs`; see ARCHITECTURE.md),
/// else x25519-dalek's.
fn x25519(k: [u8; 32], u: [u8; 32]) -> [u8; 32] {
    #[cfg(feature = "salty")]
    return crate::x25519::x25519(k, u);
    #[cfg(not(feature = "salty"))]
    return x25519_dalek::x25519(k, u);
}

/// RFC 8032 §5.1.7: Ed25519 verification with ed25519-dalek's `verify_strict` rules
/// (rejects small-order keys and R, and non-canonical encodings), in steps (`ed25519` below).
#[cfg(all(feature = "ed25519", not(feature = "salty")))]
fn ed25519_verify(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> Result<(), Error> {
    ed25519::verify_strict(key, message, sig)
}

/// RFC 8032 §5.1.7 with salty (feature `salty`, the device's smaller Ed25519), as strict
/// as dalek's `verify_strict`: S must be below L ("If any of the decodings fail (including S
/// being out of range), the signature is invalid"; salty reduces S instead), A must be a
/// canonical encoding (§5.1.3: y < p; salty does not check) of a point not of small order,
/// R must not be of small order either, and [S]B = R + [k]A is checked with R compared by
/// its encoding, so a non-canonical R never matches. The small orders are checked on the
/// points, in [`salty_verify`].
#[cfg(all(feature = "ed25519", feature = "salty"))]
fn ed25519_verify(key: &[u8; 32], message: &[&[u8]], sig: &[u8; 64]) -> Result<(), Error> {
    let (r, s) = sig.split_at(32);
    let mut y = *key;
    if let Some(top) = y.last_mut() {
        *top &= 0x7f; // the sign of x
    }
    if !below(s, &ED25519_ORDER) || !below(&y, &FIELD_PRIME) {
        return Err(Error::BadSignature);
    }
    let k = challenge(r, key, message);
    salty_verify(key, &k, sig)
}

/// RFC 8032 §5.1.7 steps 1 and 3: A decoded (a key not on the curve is refused), then
/// [S]B == R + [k]A checked as R == [S]B + [k](-A) by encoding (`edwards.rs`: salty's
/// field arithmetic, mote's point operations), so a non-canonical R never matches. S is
/// below L (checked by the caller), so it is used as it is; k is reduced by [`challenge`].
/// Variable-time (the ladder branches on S's and k's bits): every input is public.
// Its own frame (issue 8): the point and the accumulator only, the field temporaries in
// `add`'s and `double`'s frames below.
#[cfg(all(feature = "ed25519", feature = "salty"))]
#[inline(never)]
fn salty_verify(key: &[u8; 32], k: &[u8; 32], sig: &[u8; 64]) -> Result<(), Error> {
    let (r, s) = sig.split_at(32);
    let s: &[u8; 32] = s.try_into().map_err(|_| Error::BadSignature)?;
    // -A = (-x, y) decoded from A's encoding with the sign of x flipped. Where x ≠ 0 the
    // flipped encoding decodes exactly when A's does; x = 0 is (0, ±1), of small order:
    // refused either way (by §5.1.3's x = 0 rule or as of small order below).
    let mut minus_a_bytes = *key;
    minus_a_bytes[31] ^= 0x80;
    let mut minus_a = crate::edwards::Point::IDENTITY;
    if !crate::edwards::Point::decode(&minus_a_bytes, &mut minus_a) {
        return Err(Error::BadSignature);
    }
    // A of small order is refused (as dalek's `verify_strict`): -A is iff A is.
    let mut check = minus_a;
    if check.quadruple_is_on_y_axis() {
        return Err(Error::BadSignature);
    }
    crate::edwards::Point::double_scalar_mul(&mut check, s, k, &minus_a);
    // R is refused if of small order: if it matches, it is `check`, so `check` is tested.
    if check.encode() == *r && !check.quadruple_is_on_y_axis() {
        Ok(())
    } else {
        Err(Error::BadSignature)
    }
}

/// RFC 8032 §5.1.7 step 2: k = SHA-512(R || A || M) mod L. SHA-512 is mote's
/// (`sha512.rs`: a 16-word message schedule for the device's stack).
#[cfg(all(feature = "ed25519", feature = "salty"))]
#[inline(never)]
fn challenge(r: &[u8], key: &[u8; 32], message: &[&[u8]]) -> [u8; 32] {
    let mut digest = crate::sha512::Sha512::new();
    digest.update(r);
    digest.update(key);
    for part in message {
        digest.update(part);
    }
    let mut wide = [0u8; 64];
    digest.finish(&mut wide);
    reduce_mod_order(&wide)
}

/// RFC 8032 §5.1.7 step 2 (and §5.1.6 step 5): a 64-byte digest as a little-endian integer,
/// reduced mod L. Bit by bit from the top: r = 2r + bit, then r - L if r ≥ L (r < L < 2^253,
/// so 2r + 1 fits in 32 bytes). Variable-time (the subtraction is a branch): the digest of
/// a verification is public. 512 steps over bytes, small next to the scalar multiplication.
#[cfg(all(feature = "ed25519", feature = "salty"))]
fn reduce_mod_order(wide: &[u8; 64]) -> [u8; 32] {
    let mut r = [0u8; 32];
    for bit in (0..512).rev() {
        let mut carry = (wide[bit / 8] >> (bit % 8)) & 1;
        for b in r.iter_mut() {
            let top = *b >> 7;
            *b = (*b << 1) | carry;
            carry = top;
        }
        if !below(&r, &ED25519_ORDER) {
            let mut borrow = false;
            for (b, l) in r.iter_mut().zip(&ED25519_ORDER) {
                let (x, b1) = b.overflowing_sub(*l);
                let (x, b2) = x.overflowing_sub(u8::from(borrow));
                *b = x;
                borrow = b1 | b2;
            }
        }
    }
    r
}

/// The group order L = 2^252 + 27742317777372353535851937790883648493 (RFC 8032 §5.1),
/// little-endian.
#[cfg(all(feature = "ed25519", feature = "salty"))]
const ED25519_ORDER: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
];

/// p = 2^255 - 19 (RFC 8032 §5.1), little-endian.
#[cfg(all(feature = "ed25519", feature = "salty"))]
const FIELD_PRIME: [u8; 32] = [
    0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
];

/// Whether the little-endian number `x` is below `bound` (both 32 bytes). Public data: no
/// need for constant time.
#[cfg(all(feature = "ed25519", feature = "salty"))]
fn below(x: &[u8], bound: &[u8; 32]) -> bool {
    // Compare from the most significant byte down.
    for (a, b) in x.iter().rev().zip(bound.iter().rev()) {
        if a != b {
            return a < b;
        }
    }
    false
}

/// An in-progress ephemeral key exchange.
pub enum KeyExchange {
    /// X25519 (RFC 7748): the private scalar and our public key.
    X25519 {
        /// Private scalar, erased on drop.
        private: zeroize::Zeroizing<[u8; 32]>,
        /// Public key.
        public: [u8; 32],
    },
    /// secp256r1 ECDHE: the private key and our uncompressed public point.
    #[cfg(feature = "p256")]
    Secp256r1 {
        /// Private key (zeroized on drop by `p256`).
        private: p256::SecretKey,
        /// Uncompressed SEC1 public point.
        public: [u8; 65],
    },
}

impl crate::KeyExchange for KeyExchange {
    fn group(&self) -> NamedGroup {
        match self {
            Self::X25519 { .. } => NamedGroup::X25519,
            #[cfg(feature = "p256")]
            Self::Secp256r1 { .. } => NamedGroup::Secp256r1,
        }
    }

    fn public_key(&self) -> &[u8] {
        match self {
            Self::X25519 { public, .. } => public,
            #[cfg(feature = "p256")]
            Self::Secp256r1 { public, .. } => public,
        }
    }

    // Computed from the key where it lies in the slot, which is then emptied (its drop
    // erases the private key).
    fn complete_in(slot: &mut Option<Self>, peer_public_key: &[u8]) -> Result<SharedSecret, Error> {
        let shared = match slot {
            Some(Self::X25519 { private, .. }) => x25519_shared(private, peer_public_key),
            #[cfg(feature = "p256")]
            Some(Self::Secp256r1 { .. }) => {
                return slot.take().ok_or(Error::Unsupported)?.complete(peer_public_key)
            }
            None => Err(Error::Unsupported),
        };
        *slot = None;
        shared
    }

    fn complete(self, peer_public_key: &[u8]) -> Result<SharedSecret, Error> {
        match self {
            Self::X25519 { private, .. } => x25519_shared(&private, peer_public_key),
            #[cfg(feature = "p256")]
            Self::Secp256r1 { private, .. } => {
                // RFC 8446 §4.2.8.2: only the uncompressed form is allowed.
                if peer_public_key.len() != 65 || peer_public_key[0] != 0x04 {
                    return Err(Error::BadPublicKey);
                }
                // Parsing checks that the point lies on the curve and is not the identity.
                let peer = p256::PublicKey::from_sec1_bytes(peer_public_key)
                    .map_err(|_| Error::BadPublicKey)?;
                let shared =
                    p256::ecdh::diffie_hellman(private.to_nonzero_scalar(), peer.as_affine());
                let mut out = [0u8; 32];
                out.copy_from_slice(shared.raw_secret_bytes());
                Ok(SharedSecret(out))
            }
        }
    }
}

/// X25519's shared secret with the peer's share (RFC 7748 §6.1).
fn x25519_shared(private: &[u8; 32], peer_public_key: &[u8]) -> Result<SharedSecret, Error> {
    let peer: [u8; 32] = peer_public_key.try_into().map_err(|_| Error::BadPublicKey)?;
    let shared = x25519(*private, peer);
    // RFC 8446 §7.4.2 / RFC 7748 §6.1: an all-zero result means the peer sent a small-order
    // point; abort.
    if shared.iter().fold(0u8, |acc, b| acc | b) == 0 {
        return Err(Error::BadPublicKey);
    }
    Ok(SharedSecret(shared))
}

/// A signing key for one of the enabled schemes (feature `sign` with `ed25519` and/or
/// `ecdsa-p256`; `sign` alone has nothing to sign with, and the provider then uses
/// [`crate::NoSigningKey`]).
#[cfg(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256")))]
pub enum SigningKey {
    /// Ed25519 (RFC 8032) with its public key.
    #[cfg(feature = "ed25519")]
    Ed25519(ed25519_dalek::SigningKey, [u8; 32]),
    /// ECDSA P-256 with SHA-256 and its uncompressed public point.
    #[cfg(feature = "ecdsa-p256")]
    EcdsaP256(p256::ecdsa::SigningKey, [u8; 65]),
}

#[cfg(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256")))]
impl crate::SigningKey for SigningKey {
    fn scheme(&self) -> SignatureScheme {
        match *self {
            #[cfg(feature = "ed25519")]
            Self::Ed25519(..) => SignatureScheme::Ed25519,
            #[cfg(feature = "ecdsa-p256")]
            Self::EcdsaP256(..) => SignatureScheme::EcdsaSecp256r1Sha256,
        }
    }

    fn public_key(&self) -> &[u8] {
        match *self {
            #[cfg(feature = "ed25519")]
            Self::Ed25519(_, ref public) => public,
            #[cfg(feature = "ecdsa-p256")]
            Self::EcdsaP256(_, ref public) => public,
        }
    }

    fn sign(
        &self,
        _rng: &mut dyn CryptoRng,
        message: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        // Both schemes are deterministic here (RFC 8032; RFC 6979 for ECDSA), so the RNG is
        // not needed.
        match *self {
            #[cfg(feature = "ed25519")]
            Self::Ed25519(ref key, _) => {
                use ed25519_dalek::Signer;
                let sig = key.sign(message).to_bytes();
                crate::copy_signature(&sig, out)
            }
            #[cfg(feature = "ecdsa-p256")]
            Self::EcdsaP256(ref key, _) => {
                use p256::ecdsa::signature::Signer;
                let sig: p256::ecdsa::Signature = key.sign(message);
                crate::copy_signature(sig.to_der().as_bytes(), out)
            }
        }
    }
}

impl CryptoProvider for RustCrypto {
    type AeadKey = AeadKey;
    type HeaderKey = HeaderKey;
    type Hash = Hash;
    type Hmac = Hmac;
    type KeyExchange = KeyExchange;
    #[cfg(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256")))]
    type SigningKey = SigningKey;
    #[cfg(not(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256"))))]
    type SigningKey = crate::NoSigningKey;

    fn aead_algorithms(&self) -> &'static [AeadAlgorithm] {
        AEADS
    }

    fn groups(&self) -> &'static [NamedGroup] {
        GROUPS
    }

    fn verify_schemes(&self) -> &'static [SignatureScheme] {
        VERIFY_SCHEMES
    }

    #[allow(unreachable_patterns)] // the fallback arm is dead when every feature is on
    fn aead_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<AeadKey, Error> {
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        Ok(match alg {
            AeadAlgorithm::Aes128Gcm => AeadKey::Aes128Gcm(Gcm::new(key)),
            #[cfg(feature = "aes256")]
            AeadAlgorithm::Aes256Gcm => AeadKey::Aes256Gcm(Gcm::new(key)),
            #[cfg(feature = "chacha20")]
            AeadAlgorithm::ChaCha20Poly1305 => AeadKey::ChaCha20Poly1305(
                chacha20poly1305::ChaCha20Poly1305::new_from_slice(key)
                    .map_err(|_| Error::BadLength)?,
            ),
            _ => return Err(Error::Unsupported),
        })
    }

    // Out of line, and each variant written to `dst` rather than returned: the key schedule
    // is not moved through a `Result` and the caller's frame (issue 8).
    #[inline(never)]
    #[allow(unreachable_patterns)]
    fn write_aead_key<'d>(
        &self,
        alg: AeadAlgorithm,
        key: &[u8],
        dst: &'d mut core::mem::MaybeUninit<AeadKey>,
    ) -> Result<&'d mut AeadKey, Error> {
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        // The length is checked above. The key is the key schedule alone, with no `AesGcm`
        // constructor frame and `Result` around it.
        Ok(match alg {
            // Devices: a zeroed key written to `dst`, then the schedule expanded into it
            // there (`Aes128::set_key`): no copy of it is left in this frame or a callee's.
            #[cfg(feature = "compact")]
            AeadAlgorithm::Aes128Gcm => {
                let key: &[u8; 16] = key.try_into().map_err(|_| Error::BadLength)?;
                let written = dst.write(AeadKey::Aes128Gcm(Gcm::ZERO));
                // `match`: `if let` is irrefutable where this is the only variant.
                #[allow(clippy::single_match)]
                match written {
                    AeadKey::Aes128Gcm(gcm) => gcm.set_key(key),
                    _ => {}
                }
                written
            }
            // Hosts: the aes crate's schedule passes through this frame once (rustc builds
            // it in a temporary) on its way into `dst`.
            #[cfg(not(feature = "compact"))]
            AeadAlgorithm::Aes128Gcm => dst.write(AeadKey::Aes128Gcm(Gcm::new(key))),
            #[cfg(feature = "aes256")]
            AeadAlgorithm::Aes256Gcm => dst.write(AeadKey::Aes256Gcm(Gcm::new(key))),
            #[cfg(feature = "chacha20")]
            AeadAlgorithm::ChaCha20Poly1305 => {
                dst.write(AeadKey::ChaCha20Poly1305(chacha20poly1305::ChaCha20Poly1305::new(
                    chacha20poly1305::aead::generic_array::GenericArray::from_slice(key),
                )))
            }
            _ => return Err(Error::Unsupported),
        })
    }

    // As `write_aead_key`: the AES key schedule built where it stays (on devices, expanded
    // there).
    #[inline(never)]
    #[allow(unreachable_patterns)]
    fn write_header_key<'d>(
        &self,
        alg: AeadAlgorithm,
        key: &[u8],
        dst: &'d mut core::mem::MaybeUninit<HeaderKey>,
    ) -> Result<&'d mut HeaderKey, Error> {
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        Ok(match alg {
            // As in `write_aead_key`: keyed where it stays on devices.
            #[cfg(feature = "compact")]
            AeadAlgorithm::Aes128Gcm => {
                let key: &[u8; 16] = key.try_into().map_err(|_| Error::BadLength)?;
                let written = dst.write(HeaderKey::Aes128(Aes128::ZERO));
                // `match`: `if let` is irrefutable where this is the only variant.
                #[allow(clippy::single_match)]
                match written {
                    HeaderKey::Aes128(cipher) => cipher.set_key(key),
                    _ => {}
                }
                written
            }
            #[cfg(not(feature = "compact"))]
            AeadAlgorithm::Aes128Gcm => dst.write(HeaderKey::Aes128(Aes128::new(
                aes::cipher::generic_array::GenericArray::from_slice(key),
            ))),
            #[cfg(feature = "aes256")]
            AeadAlgorithm::Aes256Gcm => dst.write(HeaderKey::Aes256(aes::Aes256::new(
                aes::cipher::generic_array::GenericArray::from_slice(key),
            ))),
            #[cfg(feature = "chacha20")]
            AeadAlgorithm::ChaCha20Poly1305 => {
                let mut k = zeroize::Zeroizing::new([0u8; 32]);
                k.copy_from_slice(key);
                dst.write(HeaderKey::ChaCha20(k))
            }
            _ => return Err(Error::Unsupported),
        })
    }

    // Out of line, like `aead_key`: the key schedule's temporaries stay in this frame
    // instead of adding to the caller's (a connection installing keys on a device).
    #[inline(never)]
    #[allow(unreachable_patterns)]
    fn header_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<HeaderKey, Error> {
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        Ok(match alg {
            AeadAlgorithm::Aes128Gcm => {
                HeaderKey::Aes128(Aes128::new_from_slice(key).map_err(|_| Error::BadLength)?)
            }
            #[cfg(feature = "aes256")]
            AeadAlgorithm::Aes256Gcm => {
                HeaderKey::Aes256(aes::Aes256::new_from_slice(key).map_err(|_| Error::BadLength)?)
            }
            #[cfg(feature = "chacha20")]
            AeadAlgorithm::ChaCha20Poly1305 => {
                let mut k = zeroize::Zeroizing::new([0u8; 32]);
                k.copy_from_slice(key);
                HeaderKey::ChaCha20(k)
            }
            _ => return Err(Error::Unsupported),
        })
    }

    #[allow(unreachable_patterns)]
    fn hash(&self, alg: HashAlgorithm) -> Result<Hash, Error> {
        match alg {
            HashAlgorithm::Sha256 => Ok(Hash::Sha256(crate::sha256::Sha256::new())),
            #[cfg(feature = "aes256")]
            HashAlgorithm::Sha384 => Ok(Hash::Sha384(sha2::Sha384::new())),
            _ => Err(Error::Unsupported),
        }
    }

    #[allow(unreachable_patterns)]
    fn hmac(&self, alg: HashAlgorithm, key: &[u8]) -> Result<Hmac, Error> {
        // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
        match alg {
            HashAlgorithm::Sha256 => Ok(Hmac::Sha256(crate::hmac_sha256::HmacSha256::new(key))),
            #[cfg(feature = "aes256")]
            HashAlgorithm::Sha384 => Ok(Hmac::Sha384(
                <hmac::Hmac<sha2::Sha384> as Mac>::new_from_slice(key)
                    .map_err(|_| Error::BadLength)?,
            )),
            _ => Err(Error::Unsupported),
        }
    }

    #[allow(unreachable_patterns)]
    fn hmac_into<'s>(
        &self,
        alg: HashAlgorithm,
        key: &[u8],
        slot: &'s mut Option<Hmac>,
    ) -> Result<&'s mut Hmac, Error> {
        match alg {
            HashAlgorithm::Sha256 => {
                // The unkeyed state is written into the slot, then keyed there.
                let mac = insert_unkeyed_hmac_sha256(slot);
                #[allow(irrefutable_let_patterns)] // one variant without `aes256`
                if let Hmac::Sha256(m) = mac {
                    m.set_key(key);
                }
                Ok(mac)
            }
            _ => Ok(slot.insert(self.hmac(alg, key)?)),
        }
    }

    // X25519's key generated where it stays: the scalar drawn into the slot, the public key
    // computed there (the slot is emptied, erasing the scalar, if the RNG fails).
    fn start_key_exchange_in(
        &self,
        group: NamedGroup,
        rng: &mut dyn CryptoRng,
        slot: &mut Option<KeyExchange>,
    ) -> Result<(), Error> {
        if group != NamedGroup::X25519 {
            *slot = None;
            *slot = Some(self.start_key_exchange(group, rng)?);
            return Ok(());
        }
        let kx = slot.insert(KeyExchange::X25519 {
            private: zeroize::Zeroizing::new([0u8; 32]),
            public: [0u8; 32],
        });
        let filled = match kx {
            // RFC 7748 §5: any 32 random bytes are a valid scalar (clamped in `x25519`).
            KeyExchange::X25519 { private, public } => rng.fill(&mut **private).map(|()| {
                *public = x25519(**private, X25519_BASE_POINT);
            }),
            #[cfg(feature = "p256")]
            KeyExchange::Secp256r1 { .. } => Err(Error::Unsupported),
        };
        if filled.is_err() {
            *slot = None;
        }
        filled
    }

    #[allow(unreachable_patterns)]
    fn start_key_exchange(
        &self,
        group: NamedGroup,
        rng: &mut dyn CryptoRng,
    ) -> Result<KeyExchange, Error> {
        match group {
            NamedGroup::X25519 => {
                // RFC 7748 §5: any 32 random bytes are a valid scalar (clamped in `x25519`).
                let mut private = zeroize::Zeroizing::new([0u8; 32]);
                rng.fill(&mut *private)?;
                let public = x25519(*private, X25519_BASE_POINT);
                Ok(KeyExchange::X25519 { private, public })
            }
            #[cfg(feature = "p256")]
            NamedGroup::Secp256r1 => {
                // Rejection sampling: a random 256-bit string is a valid scalar (non-zero and
                // below the group order) with probability > 1 - 2^-32, so a handful of tries
                // suffice unless the RNG is broken.
                let mut bytes = zeroize::Zeroizing::new([0u8; 32]);
                for _ in 0..8 {
                    rng.fill(&mut *bytes)?;
                    if let Ok(private) = p256::SecretKey::from_slice(&*bytes) {
                        use p256::elliptic_curve::sec1::ToEncodedPoint;
                        let point = private.public_key().to_encoded_point(false);
                        let mut public = [0u8; 65];
                        public.copy_from_slice(point.as_bytes());
                        return Ok(KeyExchange::Secp256r1 { private, public });
                    }
                }
                Err(Error::Rng)
            }
            _ => Err(Error::Unsupported),
        }
    }

    // Out of line: the verifier's tables (Ed25519's NAF lookup table alone is ~2 KB) are on
    // the stack only while it runs, not in the frame of the TLS handshake that calls it.
    #[inline(never)]
    #[allow(unused_variables, unreachable_patterns)]
    fn verify(
        &self,
        scheme: SignatureScheme,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), Error> {
        match scheme {
            #[cfg(feature = "ed25519")]
            SignatureScheme::Ed25519 => {
                let key: &[u8; 32] = public_key.try_into().map_err(|_| Error::BadSignature)?;
                let sig: &[u8; 64] = signature.try_into().map_err(|_| Error::BadSignature)?;
                #[cfg(feature = "salty")]
                return ed25519_verify(key, &[message], sig);
                #[cfg(not(feature = "salty"))]
                return ed25519_verify(key, message, sig);
            }
            #[cfg(feature = "ecdsa-p256")]
            SignatureScheme::EcdsaSecp256r1Sha256 => {
                use p256::ecdsa::signature::Verifier;
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| Error::BadSignature)?;
                let sig =
                    p256::ecdsa::Signature::from_der(signature).map_err(|_| Error::BadSignature)?;
                key.verify(message, &sig).map_err(|_| Error::BadSignature)
            }
            _ => Err(Error::Unsupported),
        }
    }

    // The device's Ed25519 hashes the parts as they are (RFC 8032 §5.1.7: M enters only
    // SHA-512(R || A || M)); everything else concatenates them.
    fn verify_parts(
        &self,
        scheme: SignatureScheme,
        public_key: &[u8],
        message: &[&[u8]],
        signature: &[u8],
    ) -> Result<(), Error> {
        #[cfg(all(feature = "ed25519", feature = "salty"))]
        if scheme == SignatureScheme::Ed25519 {
            let key: &[u8; 32] = public_key.try_into().map_err(|_| Error::BadSignature)?;
            let sig: &[u8; 64] = signature.try_into().map_err(|_| Error::BadSignature)?;
            return ed25519_verify(key, message, sig);
        }
        crate::verify_concatenated(self, scheme, public_key, message, signature)
    }

    #[cfg(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256")))]
    #[allow(unreachable_patterns)]
    fn signing_key(&self, scheme: SignatureScheme, pkcs8_der: &[u8]) -> Result<SigningKey, Error> {
        match scheme {
            #[cfg(feature = "ed25519")]
            SignatureScheme::Ed25519 => {
                use ed25519_dalek::pkcs8::DecodePrivateKey;
                let key = ed25519_dalek::SigningKey::from_pkcs8_der(pkcs8_der)
                    .map_err(|_| Error::BadPrivateKey)?;
                let public = key.verifying_key().to_bytes();
                Ok(SigningKey::Ed25519(key, public))
            }
            #[cfg(feature = "ecdsa-p256")]
            SignatureScheme::EcdsaSecp256r1Sha256 => {
                use p256::pkcs8::DecodePrivateKey;
                let key = p256::ecdsa::SigningKey::from_pkcs8_der(pkcs8_der)
                    .map_err(|_| Error::BadPrivateKey)?;
                let mut public = [0u8; 65];
                public.copy_from_slice(key.verifying_key().to_encoded_point(false).as_bytes());
                Ok(SigningKey::EcdsaP256(key, public))
            }
            _ => Err(Error::Unsupported),
        }
    }

    #[cfg(not(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256"))))]
    fn signing_key(&self, _: SignatureScheme, _: &[u8]) -> Result<crate::NoSigningKey, Error> {
        Err(Error::Unsupported)
    }
}

/// Ed25519 verification (RFC 8032 §5.1.7) with ed25519-dalek's `verify_strict` rules —
/// canonical S, no small-order key or R — in steps that each run in their own stack frame:
/// decoding, the challenge hash (SHA-512) and the double-scalar multiplication are never
/// live together (ed25519-dalek's single `verify_strict` frame is 5.6 KB on a Cortex-M4,
/// most of a device's stack). Devices built with `salty` use salty's verification instead.
#[cfg(all(feature = "ed25519", not(feature = "salty")))]
mod ed25519 {
    use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
    use curve25519_dalek::scalar::Scalar;
    use sha2::Digest as _;

    use crate::Error;

    /// Verifies `sig` (R || S) over `message` with the public key `key` (its encoding).
    pub(super) fn verify_strict(
        key: &[u8; 32],
        message: &[u8],
        sig: &[u8; 64],
    ) -> Result<(), Error> {
        let (r_bytes, s_bytes) = sig.split_at(32);
        let r_bytes: &[u8; 32] = r_bytes.try_into().map_err(|_| Error::BadSignature)?;
        let s_bytes: [u8; 32] = s_bytes.try_into().map_err(|_| Error::BadSignature)?;
        // RFC 8032 §5.1.7: S must be below the group order L.
        let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes))
            .ok_or(Error::BadSignature)?;
        let a = decode(key)?;
        let r = decode(r_bytes)?;
        let k = challenge(r_bytes, key, message);
        // RFC 8032 §5.1.7: [S]B = R + [k]A, checked as R == [S]B - [k]A.
        if recompute_r(&k, &a, &s) == r {
            Ok(())
        } else {
            Err(Error::BadSignature)
        }
    }

    /// A point's encoding decoded; small-order points (which would let a signature verify
    /// for more than one message) are refused.
    #[inline(never)]
    fn decode(bytes: &[u8; 32]) -> Result<EdwardsPoint, Error> {
        CompressedEdwardsY(*bytes)
            .decompress()
            .filter(|p| !p.is_small_order())
            .ok_or(Error::BadSignature)
    }

    /// RFC 8032 §5.1.7: k = SHA-512(R || A || M) mod L.
    #[inline(never)]
    fn challenge(r: &[u8; 32], a: &[u8; 32], message: &[u8]) -> Scalar {
        let mut h = sha2::Sha512::new();
        h.update(r);
        h.update(a);
        h.update(message);
        Scalar::from_bytes_mod_order_wide(&h.finalize().into())
    }

    /// [S]B - [k]A, as two single-scalar multiplications one after the other: each needs
    /// one 8-point lookup table, where the interleaved double-scalar multiplication keeps
    /// two wider ones and both scalars' NAFs live at once (~6 KB of stack, against ~1.5 KB;
    /// it is about a third faster).
    fn recompute_r(k: &Scalar, a: &EdwardsPoint, s: &Scalar) -> EdwardsPoint {
        let sb = base_mul(s);
        sb - point_mul(k, a)
    }

    /// [S]B.
    #[inline(never)]
    fn base_mul(s: &Scalar) -> EdwardsPoint {
        EdwardsPoint::mul_base(s)
    }

    /// [k]A.
    #[inline(never)]
    fn point_mul(k: &Scalar, a: &EdwardsPoint) -> EdwardsPoint {
        a * k
    }
}

/// The stepwise Ed25519 verification decides as ed25519-dalek's `verify_strict` does, on
/// valid signatures, every single-byte corruption of them, and small-order keys and R.
#[cfg(all(test, feature = "ed25519"))]
mod ed25519_tests {
    use ed25519_dalek::{Signer as _, SigningKey};

    use crate::{CryptoProvider as _, SignatureScheme};

    fn verify_strict(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> Result<(), crate::Error> {
        #[cfg(feature = "salty")]
        return super::ed25519_verify(key, &[message], sig);
        #[cfg(not(feature = "salty"))]
        return super::ed25519_verify(key, message, sig);
    }

    fn dalek(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> bool {
        ed25519_dalek::VerifyingKey::from_bytes(key)
            .and_then(|k| k.verify_strict(message, &ed25519_dalek::Signature::from_bytes(sig)))
            .is_ok()
    }

    #[test]
    fn decides_as_ed25519_dalek() {
        for seed in 0u8..4 {
            let key = SigningKey::from_bytes(&[seed.wrapping_mul(37).wrapping_add(1); 32]);
            let public = key.verifying_key().to_bytes();
            let message = [seed; 40];
            let sig = key.sign(&message[..usize::from(seed) * 10]).to_bytes();
            let msg = &message[..usize::from(seed) * 10];
            assert!(verify_strict(&public, msg, &sig).is_ok());
            for i in 0..64 {
                for bit in [0x01, 0x80] {
                    let mut bad = sig;
                    bad[i] ^= bit;
                    assert_eq!(
                        verify_strict(&public, msg, &bad).is_ok(),
                        dalek(&public, msg, &bad)
                    );
                }
            }
            for i in 0..32 {
                let mut other = public;
                other[i] ^= 0x02;
                assert_eq!(verify_strict(&other, msg, &sig).is_ok(), dalek(&other, msg, &sig));
            }
        }
        // Small order: the identity as the key, and as R with S = 0 (which "verifies" for
        // any message under the identity key unless small orders are refused).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&identity);
        assert!(verify_strict(&identity, b"any", &sig).is_err());
        assert!(!dalek(&identity, b"any", &sig));
        let key = SigningKey::from_bytes(&[9; 32]).verifying_key().to_bytes();
        assert!(verify_strict(&key, b"any", &sig).is_err());
        assert!(!dalek(&key, b"any", &sig));
    }

    /// Keys and R of small or mixed order, with [S]B = R + [k]A holding (S = r + k·a built
    /// from chosen discrete logs): small orders are refused, a mixed-order key whose torsion
    /// part [k] cancels is accepted, and the other is refused — each as dalek decides.
    #[test]
    fn small_and_mixed_orders_decide_as_ed25519_dalek() {
        use curve25519_dalek::{constants, EdwardsPoint, Scalar};
        use sha2::Digest as _;
        let base = constants::ED25519_BASEPOINT_POINT;
        // Sign for key `a_point` whose discrete log in the prime-order part is `a`.
        let sign =
            |a: Scalar, a_point: EdwardsPoint, r: Scalar, r_point: EdwardsPoint, m: &[u8]| {
                let (r_bytes, a_bytes) =
                    (r_point.compress().to_bytes(), a_point.compress().to_bytes());
                let mut h = sha2::Sha512::new();
                h.update(r_bytes);
                h.update(a_bytes);
                h.update(m);
                let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
                let mut sig = [0u8; 64];
                sig[..32].copy_from_slice(&r_bytes);
                sig[32..].copy_from_slice((r + k * a).as_bytes());
                (a_bytes, sig, k)
            };
        let a = Scalar::from(0x1234_5678u64);
        let r = Scalar::from(0x9abc_def0u64);
        let (mut accepted, mut refused) = (0, 0);
        for (i, t) in constants::EIGHT_TORSION.iter().enumerate() {
            for m in 0u8..6 {
                let msg = [m, i as u8];
                // Key of small order (a = 0), R = [r]B: refused.
                let (key, sig, _) = sign(Scalar::ZERO, *t, r, base * r, &msg);
                assert!(verify_strict(&key, &msg, &sig).is_err());
                assert!(!dalek(&key, &msg, &sig));
                // R of small order (r = 0, R = T) under a prime-order key: the equation
                // holds only for T = identity, and is refused for every T.
                let (key, sig, _) = sign(a, base * a, Scalar::ZERO, *t, &msg);
                assert!(verify_strict(&key, &msg, &sig).is_err());
                assert!(!dalek(&key, &msg, &sig));
                // Mixed-order key A + T: accepted exactly when [k]T is the identity.
                let (key, sig, k) = sign(a, base * a + t, r, base * r, &msg);
                let ours = verify_strict(&key, &msg, &sig).is_ok();
                assert_eq!(ours, dalek(&key, &msg, &sig), "T{i} m{m}");
                assert_eq!(ours, t * k == EdwardsPoint::default(), "T{i} m{m}");
                if ours {
                    accepted += 1;
                } else {
                    refused += 1;
                }
            }
        }
        assert!(accepted > 6 && refused > 6, "{accepted} {refused}");
    }

    /// `verify_parts` decides on the concatenation of the parts, however it is split (the
    /// device's Ed25519 hashes them as they are; other paths concatenate).
    #[test]
    fn verify_parts_is_verify_of_the_concatenation() {
        let key = SigningKey::from_bytes(&[5; 32]);
        let public = key.verifying_key().to_bytes();
        let message = *b"64 spaces, a context string, a zero byte and a transcript hash";
        let sig = key.sign(&message).to_bytes();
        let p = super::RustCrypto;
        for at in [0, 1, 20, message.len()] {
            let (a, b) = message.split_at(at);
            assert!(p.verify_parts(SignatureScheme::Ed25519, &public, &[a, b], &sig).is_ok());
            assert!(p.verify_parts(SignatureScheme::Ed25519, &public, &[a, &[], b], &sig).is_ok());
            // One part's byte changed, or a part dropped: refused.
            let mut other = [0u8; 64];
            let other = &mut other[..b.len()];
            other.copy_from_slice(b);
            if let Some(x) = other.first_mut() {
                *x ^= 1;
                assert!(p
                    .verify_parts(SignatureScheme::Ed25519, &public, &[a, other], &sig)
                    .is_err());
            }
            if at > 0 {
                assert!(p.verify_parts(SignatureScheme::Ed25519, &public, &[b], &sig).is_err());
            }
        }
        // Beyond the default buffer, concatenating providers refuse; the device's Ed25519
        // hashes any length.
        let long = [7u8; crate::VERIFY_PARTS_MAX + 1];
        let sig_long = key.sign(&long).to_bytes();
        let streamed = p.verify_parts(SignatureScheme::Ed25519, &public, &[&long], &sig_long);
        if cfg!(feature = "salty") {
            assert!(streamed.is_ok());
        } else {
            assert_eq!(streamed, Err(crate::Error::BadLength));
        }
    }
}

#[cfg(test)]
mod write_key_tests {
    use core::mem::MaybeUninit;

    use super::RustCrypto;
    use crate::{AeadKey as _, CryptoProvider, HeaderProtectionKey as _};

    /// `write_aead_key`/`write_header_key` build the same keys as `aead_key`/`header_key`
    /// (same ciphertext, tag and mask), and refuse a key of the wrong length.
    #[test]
    fn written_keys_match_returned_keys() {
        for &alg in RustCrypto.aead_algorithms() {
            let key: [u8; 32] = core::array::from_fn(|i| i as u8 * 7 + 1);
            let key = &key[..alg.key_len()];
            let returned = RustCrypto.aead_key(alg, key).unwrap();
            let mut slot = MaybeUninit::uninit();
            let written = RustCrypto.write_aead_key(alg, key, &mut slot).unwrap();
            let nonce = [3u8; 12];
            let (mut a, mut b) = (*b"in place, written", *b"in place, written");
            let tag_a = returned.seal_in_place(&nonce, b"aad", &mut a).unwrap();
            let tag_b = written.seal_in_place(&nonce, b"aad", &mut b).unwrap();
            assert_eq!((a, tag_a), (b, tag_b), "{alg:?}");

            let hp = RustCrypto.header_key(alg, key).unwrap();
            let mut hp_slot = MaybeUninit::uninit();
            let hp_written = RustCrypto.write_header_key(alg, key, &mut hp_slot).unwrap();
            let sample = [9u8; 16];
            assert_eq!(hp.mask(&sample).unwrap(), hp_written.mask(&sample).unwrap(), "{alg:?}");

            let mut bad = MaybeUninit::uninit();
            assert!(RustCrypto.write_aead_key(alg, &key[1..], &mut bad).is_err());
            let mut bad_hp = MaybeUninit::uninit();
            assert!(RustCrypto.write_header_key(alg, &key[1..], &mut bad_hp).is_err());
        }
    }

    /// Known answers through the in-place path (on devices, `compact`: a zeroed key written
    /// to the slot, then the schedule expanded there), into slots that held another key: the
    /// GCM specification's test case 4 (AES-128-GCM) and RFC 9001 §A.2's header protection
    /// (the client's Initial hp key, its sample and mask).
    #[test]
    fn written_keys_give_known_answers_over_an_old_key() {
        use crate::AeadAlgorithm::Aes128Gcm;
        use hex_literal::hex;
        let old = [0xa5u8; 16];
        let mut slot = MaybeUninit::new(RustCrypto.aead_key(Aes128Gcm, &old).unwrap());
        let key = hex!("feffe9928665731c6d6a8f9467308308");
        let aead = RustCrypto.write_aead_key(Aes128Gcm, &key, &mut slot).unwrap();
        let mut text = hex!(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
            "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        );
        let nonce = hex!("cafebabefacedbaddecaf888");
        let aad = hex!("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let tag = aead.seal_in_place(&nonce, &aad, &mut text).unwrap();
        let sealed = hex!(
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
            "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
        );
        assert_eq!((text, tag), (sealed, hex!("5bc94fbc3221a5db94fae95ae7121a47")));

        let mut hp_slot = MaybeUninit::new(RustCrypto.header_key(Aes128Gcm, &old).unwrap());
        let hp_key = hex!("9f50449e04a0e810283a1e9933adedd2");
        let hp = RustCrypto.write_header_key(Aes128Gcm, &hp_key, &mut hp_slot).unwrap();
        assert_eq!(hp.mask(&hex!("d1b1c98dd7689fb8ec11d242b123dc9b")).unwrap(), hex!("437b9aec36"));
    }
}

#[cfg(all(test, feature = "ed25519", feature = "salty"))]
mod salty_tests {
    use super::{reduce_mod_order, ED25519_ORDER};

    /// The device's reduction of a 64-byte digest mod L agrees with curve25519-dalek's
    /// `from_bytes_mod_order_wide` on edge values (0, L, L - 1, 2L, 2^512 - 1, L at the top)
    /// and on a spread of pseudo-random digests.
    #[test]
    fn reduce_mod_order_matches_dalek() {
        let check = |c: [u8; 64]| {
            let dalek = curve25519_dalek::Scalar::from_bytes_mod_order_wide(&c).to_bytes();
            assert_eq!(reduce_mod_order(&c), dalek, "{c:02x?}");
        };
        check([0; 64]);
        check([0xff; 64]);
        let mut l = [0u8; 64];
        l[..32].copy_from_slice(&ED25519_ORDER);
        check(l);
        let mut l_minus_1 = l;
        l_minus_1[0] -= 1;
        check(l_minus_1);
        let mut two_l = [0u8; 64];
        let mut carry = 0u16;
        for (d, b) in two_l.iter_mut().zip(l) {
            let v = u16::from(b) * 2 + carry;
            *d = v as u8;
            carry = v >> 8;
        }
        check(two_l);
        let mut l_high = [0u8; 64];
        l_high[32..].copy_from_slice(&ED25519_ORDER);
        check(l_high);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200 {
            let mut c = [0u8; 64];
            for b in c.iter_mut() {
                // xorshift64*
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                *b = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8;
            }
            check(c);
        }
    }
}
