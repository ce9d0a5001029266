//! Cryptography for mote's QUIC and TLS 1.3, behind small provider traits.
//!
//! The QUIC and TLS layers never name an algorithm implementation. They ask a
//! [`CryptoProvider`] for keys and contexts of the algorithm they negotiated and then use
//! them through the traits below. Two providers exist:
//!
//! * [`rustcrypto::RustCrypto`] (feature `rustcrypto`, `no_std`, the device default): pure
//!   Rust primitives from the RustCrypto project; with `compact` (device builds) AES-128 and
//!   GHASH are mote's own, smaller ones (`aes128.rs`, `ghash32.rs`).
//! * `fast::Ring` (feature `std`): `ring`'s assembly-optimised primitives for servers.
//!
//! # Linker-friendly dispatch
//! Which algorithms exist is decided by Cargo features (`aes256`, `chacha20`, `p256`,
//! `ed25519`, `ecdsa-p256`, `sign`). A provider's key types are enums whose variants exist
//! only for enabled algorithms, so a minimal device build (AES-128-GCM, SHA-256, X25519 and
//! one signature scheme) contains no code for the others: the `match` arms that would name
//! them are compiled out, not merely unreachable. Asking for a disabled algorithm returns
//! [`Error::Unsupported`].
//!
//! # No heap
//! Every operation works in place on caller-owned buffers; outputs are fixed-size values
//! ([`Digest`], [`Secret`], [`SharedSecret`]).
#![no_std]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

#[cfg(feature = "std")]
extern crate std;

mod algorithm;
pub mod hkdf;
mod secret;

#[cfg(all(feature = "rustcrypto", feature = "compact"))]
mod aes128;
#[cfg(all(feature = "rustcrypto", feature = "ed25519", feature = "salty"))]
mod edwards;
#[cfg(all(feature = "rustcrypto", feature = "fiat"))]
mod fiat25519;
#[cfg(all(feature = "rustcrypto", feature = "salty"))]
mod field25519;
#[cfg(feature = "rustcrypto")]
mod gcm;
#[cfg(all(feature = "rustcrypto", feature = "compact"))]
mod ghash32;
#[cfg(feature = "rustcrypto")]
mod hmac_sha256;
#[cfg(feature = "rustcrypto")]
pub mod rustcrypto;
#[cfg(all(feature = "rustcrypto", feature = "compact"))]
mod scrub;
#[cfg(feature = "rustcrypto")]
mod sha256;
#[cfg(all(feature = "rustcrypto", feature = "ed25519", feature = "salty"))]
mod sha512;
#[cfg(all(feature = "rustcrypto", feature = "salty"))]
mod x25519;

#[cfg(feature = "std")]
pub mod fast;

pub use algorithm::{AeadAlgorithm, HashAlgorithm, NamedGroup, SignatureScheme};
pub use secret::{Digest, Secret, SharedSecret, MAX_HASH_LEN};

/// The longest message [`CryptoProvider::verify_parts`] concatenates by default (a TLS 1.3
/// CertificateVerify's content is at most 64 + 33 + 1 + 48 = 146 bytes).
pub const VERIFY_PARTS_MAX: usize = 256;

/// [`CryptoProvider::verify_parts`]' default: the parts copied into one buffer, then
/// [`CryptoProvider::verify`].
pub fn verify_concatenated<P: CryptoProvider + ?Sized>(
    provider: &P,
    scheme: SignatureScheme,
    public_key: &[u8],
    message: &[&[u8]],
    signature: &[u8],
) -> Result<(), Error> {
    let mut buf = [0u8; VERIFY_PARTS_MAX];
    let mut len = 0;
    for part in message {
        let end = len + part.len();
        buf.get_mut(len..end).ok_or(Error::BadLength)?.copy_from_slice(part);
        len = end;
    }
    provider.verify(scheme, public_key, &buf[..len], signature)
}

/// Length of every AEAD nonce used by TLS 1.3 and QUIC (RFC 8446 §5.3).
pub const NONCE_LEN: usize = 12;
/// Length of every AEAD tag used by TLS 1.3 and QUIC.
pub const TAG_LEN: usize = 16;
/// Length of the header-protection sample (RFC 9001 §5.4.2).
pub const SAMPLE_LEN: usize = 16;
/// Longest public key share any supported group produces (uncompressed P-256 point).
pub const MAX_PUBLIC_KEY_LEN: usize = 65;
/// Longest signature any supported scheme produces (DER-encoded ECDSA P-256).
pub const MAX_SIGNATURE_LEN: usize = 72;

/// What can go wrong in a cryptographic operation. Deliberately small and data-free: the
/// caller knows the context and maps it onto a TLS alert or QUIC error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The algorithm is not compiled into this build, or this provider lacks it.
    Unsupported,
    /// A key, nonce or other input had the wrong length.
    BadLength,
    /// AEAD authentication failed: the ciphertext, AAD, nonce or tag was altered.
    DecryptFailed,
    /// The peer's public key share is not a valid point, or the shared secret is degenerate.
    BadPublicKey,
    /// A signature did not verify (or was malformed).
    BadSignature,
    /// A private key could not be parsed.
    BadPrivateKey,
    /// An output buffer was too small.
    BufferTooSmall,
    /// The random number generator failed.
    Rng,
}

/// A cryptographically secure random number generator supplied by the caller.
///
/// mote never reaches for an OS source itself: a device passes its TRNG, a std program
/// `fast::SystemRng` (or any other source). The one exception is the `ring`-based fast
/// provider, whose ephemeral keys and ECDSA nonces come from the OS because `ring` cannot take
/// an outside RNG (see the `fast` module docs).
pub trait CryptoRng {
    /// Fills `dest` with random bytes, or reports a failed source.
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error>;
}

/// An AEAD key bound to one algorithm (RFC 5116), used for QUIC packet protection
/// (RFC 9001 §5.3) and TLS 1.3 tickets.
pub trait AeadKey {
    /// The algorithm this key is for.
    fn algorithm(&self) -> AeadAlgorithm;
    /// Encrypts `in_out` in place and returns the authentication tag over `aad` and the
    /// ciphertext.
    fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error>;
    /// Checks `tag` over `aad` and `in_out` and decrypts `in_out` in place. On failure the
    /// contents of `in_out` are unspecified and must be discarded.
    fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), Error>;
}

/// A QUIC header-protection key (RFC 9001 §5.4).
pub trait HeaderProtectionKey {
    /// The AEAD whose header-protection function this key implements
    /// (AES-ECB for the AES-GCM suites, ChaCha20 for ChaCha20-Poly1305).
    fn algorithm(&self) -> AeadAlgorithm;
    /// Computes the 5-byte mask from a 16-byte ciphertext sample (RFC 9001 §5.4.3/§5.4.4).
    fn mask(&self, sample: &[u8; SAMPLE_LEN]) -> Result<[u8; 5], Error>;
}

/// A running hash, e.g. the TLS 1.3 transcript hash. `Clone` forks it, so intermediate
/// transcript values can be taken without re-hashing.
pub trait Hash: Clone {
    /// The algorithm.
    fn algorithm(&self) -> HashAlgorithm;
    /// Absorbs `data`.
    fn update(&mut self, data: &[u8]);
    /// Finishes and returns the digest.
    fn finish(self) -> Digest;
    /// Returns the digest of everything absorbed so far and keeps the hash running.
    fn snapshot(&self) -> Digest {
        self.clone().finish()
    }
}

/// A running HMAC (RFC 2104) over one of the TLS 1.3 hashes.
pub trait Hmac {
    /// Absorbs `data`.
    fn update(&mut self, data: &[u8]);
    /// Finishes where the state is and returns the tag (as long as the hash output). The
    /// state is spent: drop it (a device's key derivations finish the HMAC inside the
    /// `Result` the provider returned, with no by-value copy of it: issue 8).
    fn finish_in_place(&mut self) -> Digest;
    /// Finishes and returns the tag (as long as the hash output).
    fn finish(mut self) -> Digest
    where
        Self: Sized,
    {
        self.finish_in_place()
    }
}

/// One side of an ephemeral (EC)DHE key exchange (RFC 8446 §4.2.8).
pub trait KeyExchange: Sized {
    /// The group.
    fn group(&self) -> NamedGroup;
    /// Our public key share as sent on the wire (32 bytes for X25519, an uncompressed SEC1
    /// point for secp256r1).
    fn public_key(&self) -> &[u8];
    /// Completes the exchange with the peer's share. Consumes the private key, which is
    /// erased. Rejects invalid points and the all-zero X25519 result (RFC 8446 §7.4.2).
    fn complete(self, peer_public_key: &[u8]) -> Result<SharedSecret, Error>;
    /// [`complete`](Self::complete) for a key kept in `slot`, which is left `None` (the key
    /// erased) whether it succeeds or not; `None` in the slot is `Unsupported`. Providers
    /// override it to compute from the key where it lies, not moved out of the `Option`
    /// first (issue 8: two 32-byte copies on the device's ServerHello path).
    fn complete_in(slot: &mut Option<Self>, peer_public_key: &[u8]) -> Result<SharedSecret, Error> {
        slot.take().ok_or(Error::Unsupported)?.complete(peer_public_key)
    }
}

/// A private key that produces TLS 1.3 CertificateVerify signatures (RFC 8446 §4.4.3).
pub trait SigningKey {
    /// The scheme this key signs with.
    fn scheme(&self) -> SignatureScheme;
    /// The raw public key: 32 bytes for Ed25519, an uncompressed SEC1 point for P-256
    /// (what a raw-public-key certificate carries, RFC 7250).
    fn public_key(&self) -> &[u8];
    /// Signs `message` and writes the signature in TLS wire format (DER for ECDSA) to `out`,
    /// returning its length.
    fn sign(&self, rng: &mut dyn CryptoRng, message: &[u8], out: &mut [u8])
        -> Result<usize, Error>;
}

/// A signing key type for providers or builds without signing (feature `sign` off):
/// it has no values, so code that would use it is statically dead.
#[derive(Debug)]
pub enum NoSigningKey {}

impl SigningKey for NoSigningKey {
    fn scheme(&self) -> SignatureScheme {
        match *self {}
    }
    fn public_key(&self) -> &[u8] {
        match *self {}
    }
    fn sign(&self, _: &mut dyn CryptoRng, _: &[u8], _: &mut [u8]) -> Result<usize, Error> {
        match *self {}
    }
}

/// Everything QUIC and TLS 1.3 need from cryptography.
///
/// Implementations are cheap values (usually zero-sized); keys and contexts they hand out
/// own their state.
pub trait CryptoProvider {
    /// An AEAD key of any algorithm this provider supports.
    type AeadKey: AeadKey;
    /// A header-protection key of any algorithm this provider supports.
    type HeaderKey: HeaderProtectionKey;
    /// A running hash.
    type Hash: Hash;
    /// A running HMAC.
    type Hmac: Hmac;
    /// An in-progress key exchange.
    type KeyExchange: KeyExchange;
    /// A signing key ([`NoSigningKey`] when signing is not built).
    type SigningKey: SigningKey;

    /// AEAD algorithms available, in this provider's order of preference.
    fn aead_algorithms(&self) -> &'static [AeadAlgorithm];
    /// Key-exchange groups available, in order of preference.
    fn groups(&self) -> &'static [NamedGroup];
    /// Signature schemes this provider can verify.
    fn verify_schemes(&self) -> &'static [SignatureScheme];

    /// Creates an AEAD key. `key` must be `alg.key_len()` bytes.
    fn aead_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<Self::AeadKey, Error>;
    /// Creates a header-protection key. `key` must be `alg.key_len()` bytes.
    fn header_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<Self::HeaderKey, Error>;
    /// Writes the AEAD key [`aead_key`](Self::aead_key) would return to `dst`, where it
    /// stays: a device installing keys in a connection has no stack for the key (an AES
    /// key schedule and GHASH key, ~0.4 KB) and its `Result` in transit. Returns the written
    /// key; the slot never drops it (the caller does, or keeps it for good). On an error
    /// `dst` is left as it was (uninitialized). Providers override it to build in place.
    fn write_aead_key<'d>(
        &self,
        alg: AeadAlgorithm,
        key: &[u8],
        dst: &'d mut core::mem::MaybeUninit<Self::AeadKey>,
    ) -> Result<&'d mut Self::AeadKey, Error> {
        Ok(dst.write(self.aead_key(alg, key)?))
    }
    /// Writes the header-protection key [`header_key`](Self::header_key) would return to
    /// `dst`, as [`write_aead_key`](Self::write_aead_key).
    fn write_header_key<'d>(
        &self,
        alg: AeadAlgorithm,
        key: &[u8],
        dst: &'d mut core::mem::MaybeUninit<Self::HeaderKey>,
    ) -> Result<&'d mut Self::HeaderKey, Error> {
        Ok(dst.write(self.header_key(alg, key)?))
    }
    /// GMAC: the AES-128-GCM tag under `key` and `nonce` of an empty plaintext whose
    /// associated data is the concatenation of `aad`, read part by part (no contiguous
    /// copy). RFC 9001 §5.8: the Retry Integrity Tag is this over the Retry pseudo-packet
    /// (ODCID length and ODCID, then the packet), so a client checks a Retry without a
    /// packet-sized buffer on its stack.
    ///
    /// The default is RustCrypto's AES and GHASH (feature `rustcrypto`; without it,
    /// [`Error::Unsupported`]): a provider whose AEAD takes only contiguous associated data
    /// keeps it. Its one use is the Retry tag, whose key and nonce are public constants (the
    /// default does not erase its expanded key).
    fn aes128_gmac(
        &self,
        key: &[u8; 16],
        nonce: &[u8; NONCE_LEN],
        aad: &[&[u8]],
    ) -> Result<[u8; TAG_LEN], Error> {
        #[cfg(feature = "rustcrypto")]
        return Ok(gcm::aes128_gmac(key, nonce, aad));
        #[cfg(not(feature = "rustcrypto"))]
        {
            let _ = (key, nonce, aad);
            Err(Error::Unsupported)
        }
    }
    /// Starts a hash.
    fn hash(&self, alg: HashAlgorithm) -> Result<Self::Hash, Error>;
    /// Starts an HMAC keyed with `key`.
    fn hmac(&self, alg: HashAlgorithm, key: &[u8]) -> Result<Self::Hmac, Error>;
    /// Starts an HMAC as [`hmac`](Self::hmac) does, in `slot` (which drops it): the state is
    /// keyed where it stays, not returned through the provider's frame and a `Result`
    /// (every key derivation of a device's handshake runs an HMAC at the bottom of its
    /// stack, issue 8). Providers override it to build in place.
    fn hmac_into<'s>(
        &self,
        alg: HashAlgorithm,
        key: &[u8],
        slot: &'s mut Option<Self::Hmac>,
    ) -> Result<&'s mut Self::Hmac, Error> {
        Ok(slot.insert(self.hmac(alg, key)?))
    }
    /// Generates an ephemeral key pair for `group` from `rng`.
    fn start_key_exchange(
        &self,
        group: NamedGroup,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self::KeyExchange, Error>;
    /// Starts a key exchange as [`start_key_exchange`](Self::start_key_exchange) does, in
    /// `slot` (left `None` on error): providers override it to generate the key where it
    /// stays, not returned through a `Result` and moved in (issue 8).
    fn start_key_exchange_in(
        &self,
        group: NamedGroup,
        rng: &mut dyn CryptoRng,
        slot: &mut Option<Self::KeyExchange>,
    ) -> Result<(), Error> {
        *slot = None;
        *slot = Some(self.start_key_exchange(group, rng)?);
        Ok(())
    }
    /// Verifies a TLS 1.3 signature. `public_key` is raw (32-byte Ed25519, or a SEC1 P-256
    /// point); `signature` is in TLS wire format (DER for ECDSA).
    fn verify(
        &self,
        scheme: SignatureScheme,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), Error>;
    /// [`verify`](Self::verify) of the concatenation of `message`'s parts (a TLS
    /// CertificateVerify's content is padding, a context string and the transcript hash):
    /// a provider that can hash the parts as they are (Ed25519 on the device) needs no
    /// buffer for the whole (issue 8: it sat under the signature check on the device's
    /// deepest stack path). By default the parts are copied into a buffer of
    /// [`VERIFY_PARTS_MAX`] bytes; a longer message is [`Error::BadLength`].
    fn verify_parts(
        &self,
        scheme: SignatureScheme,
        public_key: &[u8],
        message: &[&[u8]],
        signature: &[u8],
    ) -> Result<(), Error> {
        verify_concatenated(self, scheme, public_key, message, signature)
    }
    /// Loads a signing key from PKCS#8 DER (the contents of a `BEGIN PRIVATE KEY` PEM).
    fn signing_key(
        &self,
        scheme: SignatureScheme,
        pkcs8_der: &[u8],
    ) -> Result<Self::SigningKey, Error>;
}

/// Copies a finished signature into the caller's buffer, as `SigningKey::sign` returns it.
#[cfg(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256")))]
pub(crate) fn copy_signature(sig: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    let dst = out.get_mut(..sig.len()).ok_or(Error::BufferTooSmall)?;
    dst.copy_from_slice(sig);
    Ok(sig.len())
}
