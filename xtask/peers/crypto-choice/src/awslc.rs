//! `mote_crypto::CryptoProvider` on aws-lc-rs, a line-for-line port of `mote_crypto::fast`
//! (ring) through aws-lc-rs's ring-compatible API, so all three libraries are measured through
//! the same trait calls.
#![allow(dead_code, missing_docs)]

use aws_lc_rs::aead::{self as ring_aead, quic as ring_quic};
use aws_lc_rs::agreement;
use aws_lc_rs::digest;
use aws_lc_rs::hmac;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, KeyPair};

use mote_crypto::{
    AeadAlgorithm, CryptoProvider, CryptoRng, Digest, Error, HashAlgorithm, NamedGroup,
    SharedSecret, SignatureScheme, MAX_PUBLIC_KEY_LEN, NONCE_LEN, SAMPLE_LEN, TAG_LEN,
};

/// The `ring` provider. Zero-sized: every key it returns owns its state.
#[derive(Clone, Copy, Debug, Default)]
pub struct AwsLc;

// With AES-NI and CLMUL, AES-128-GCM is the fastest suite on servers; ChaCha20-Poly1305 comes
// before AES-256-GCM because clients without AES hardware prefer it.
static AEADS: &[AeadAlgorithm] = &[
    AeadAlgorithm::Aes128Gcm,
    AeadAlgorithm::ChaCha20Poly1305,
    AeadAlgorithm::Aes256Gcm,
];

static GROUPS: &[NamedGroup] = &[NamedGroup::X25519, NamedGroup::Secp256r1];

static VERIFY_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::Ed25519,
    SignatureScheme::EcdsaSecp256r1Sha256,
];

fn ring_aead_alg(alg: AeadAlgorithm) -> Result<&'static ring_aead::Algorithm, Error> {
    #[allow(unreachable_patterns)] // `AeadAlgorithm` is non_exhaustive
    match alg {
        AeadAlgorithm::Aes128Gcm => Ok(&ring_aead::AES_128_GCM),
        AeadAlgorithm::Aes256Gcm => Ok(&ring_aead::AES_256_GCM),
        AeadAlgorithm::ChaCha20Poly1305 => Ok(&ring_aead::CHACHA20_POLY1305),
        _ => Err(Error::Unsupported),
    }
}

fn ring_hash_alg(alg: HashAlgorithm) -> Result<&'static digest::Algorithm, Error> {
    #[allow(unreachable_patterns)]
    match alg {
        HashAlgorithm::Sha256 => Ok(&digest::SHA256),
        HashAlgorithm::Sha384 => Ok(&digest::SHA384),
        _ => Err(Error::Unsupported),
    }
}

/// An AEAD key (AES-128-GCM, AES-256-GCM or ChaCha20-Poly1305).
pub struct AeadKey {
    alg: AeadAlgorithm,
    key: ring_aead::LessSafeKey,
}

impl mote_crypto::AeadKey for AeadKey {
    fn algorithm(&self) -> AeadAlgorithm {
        self.alg
    }

    fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Error> {
        // `LessSafeKey` leaves nonce uniqueness to the caller: QUIC and TLS derive each nonce
        // from the packet number / record sequence number (RFC 9001 §5.3, RFC 8446 §5.3).
        let nonce = ring_aead::Nonce::assume_unique_for_key(*nonce);
        let tag = self
            .key
            .seal_in_place_separate_tag(nonce, ring_aead::Aad::from(aad), in_out)
            // Only fails for inputs longer than the AEAD's maximum.
            .map_err(|_| Error::BadLength)?;
        let mut out = [0u8; TAG_LEN];
        let tag = tag.as_ref();
        let src = tag.get(..TAG_LEN).ok_or(Error::BadLength)?;
        out.copy_from_slice(src);
        Ok(out)
    }

    fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), Error> {
        let nonce = ring_aead::Nonce::assume_unique_for_key(*nonce);
        self.key
            .open_in_place_separate_tag(nonce, ring_aead::Aad::from(aad), tag, in_out)
            .map(|_| ())
            .map_err(|_| Error::DecryptFailed)
    }
}

/// A QUIC header-protection key (RFC 9001 §5.4): AES-128/AES-256 ECB or ChaCha20.
pub struct HeaderKey {
    alg: AeadAlgorithm,
    key: ring_quic::HeaderProtectionKey,
}

impl mote_crypto::HeaderProtectionKey for HeaderKey {
    fn algorithm(&self) -> AeadAlgorithm {
        self.alg
    }

    // RFC 9001 §5.4.3 (AES) and §5.4.4 (ChaCha20), implemented by `aws_lc_rs::aead::quic`.
    fn mask(&self, sample: &[u8; SAMPLE_LEN]) -> Result<[u8; 5], Error> {
        self.key.new_mask(sample).map_err(|_| Error::BadLength)
    }
}

/// A running SHA-256 or SHA-384.
#[derive(Clone)]
pub struct Hash {
    alg: HashAlgorithm,
    ctx: digest::Context,
}

impl mote_crypto::Hash for Hash {
    fn algorithm(&self) -> HashAlgorithm {
        self.alg
    }

    fn update(&mut self, data: &[u8]) {
        self.ctx.update(data);
    }

    fn finish(self) -> Digest {
        Digest::new(self.ctx.finish().as_ref())
    }
}

/// A running HMAC-SHA-256 or HMAC-SHA-384.
pub struct Hmac(hmac::Context);

impl mote_crypto::Hmac for Hmac {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finish_in_place(&mut self) -> Digest {
        // `sign` consumes the context: sign a copy (hosts only; the state is spent anyway).
        Digest::new(self.0.clone().sign().as_ref())
    }
}

/// An in-progress X25519 or secp256r1 ephemeral key exchange.
pub struct KeyExchange {
    group: NamedGroup,
    /// `ring` erases the private key when the exchange completes or is dropped.
    private: agreement::EphemeralPrivateKey,
    public: [u8; MAX_PUBLIC_KEY_LEN],
    public_len: usize,
}

impl mote_crypto::KeyExchange for KeyExchange {
    fn group(&self) -> NamedGroup {
        self.group
    }

    fn public_key(&self) -> &[u8] {
        self.public.get(..self.public_len).unwrap_or(&[])
    }

    fn complete(self, peer_public_key: &[u8]) -> Result<SharedSecret, Error> {
        let alg = self.private.algorithm();
        // aws-lc-rs checks the peer share: X25519 keys must be 32 bytes and the all-zero result
        // (a small-order peer point, RFC 7748 §6.1 / RFC 8446 §7.4.2) is an error; P-256
        // points must be uncompressed (RFC 8446 §4.2.8.2), on the curve and not the identity.
        let peer = agreement::UnparsedPublicKey::new(alg, peer_public_key);
        let shared =
            agreement::agree_ephemeral(self.private, &peer, Error::BadPublicKey, |secret| {
                let mut out = [0u8; 32];
                match secret.get(..32) {
                    Some(s) if secret.len() == 32 => {
                        out.copy_from_slice(s);
                        Ok(SharedSecret::new(out))
                    }
                    _ => Err(Error::BadPublicKey),
                }
            })?;
        Ok(shared)
    }
}

enum SigningKeyInner {
    Ed25519(signature::Ed25519KeyPair),
    EcdsaP256(signature::EcdsaKeyPair),
}

/// A signing key: Ed25519 or ECDSA P-256 with SHA-256.
pub struct SigningKey(SigningKeyInner);

impl mote_crypto::SigningKey for SigningKey {
    fn scheme(&self) -> SignatureScheme {
        match self.0 {
            SigningKeyInner::Ed25519(_) => SignatureScheme::Ed25519,
            SigningKeyInner::EcdsaP256(_) => SignatureScheme::EcdsaSecp256r1Sha256,
        }
    }

    fn public_key(&self) -> &[u8] {
        match &self.0 {
            SigningKeyInner::Ed25519(k) => k.public_key().as_ref(),
            SigningKeyInner::EcdsaP256(k) => k.public_key().as_ref(),
        }
    }

    /// Ed25519 is deterministic (RFC 8032 §5.1.6). ECDSA draws its nonce from the OS
    /// (see the module docs), hedged by `ring` with the key and message; `rng` is unused.
    fn sign(
        &self,
        _rng: &mut dyn CryptoRng,
        message: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        match &self.0 {
            SigningKeyInner::Ed25519(k) => copy_out(k.sign(message).as_ref(), out),
            SigningKeyInner::EcdsaP256(k) => {
                let sig = k
                    .sign(&SystemRandom::new(), message)
                    .map_err(|_| Error::Rng)?;
                copy_out(sig.as_ref(), out)
            }
        }
    }
}

fn copy_out(sig: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    let dst = out.get_mut(..sig.len()).ok_or(Error::BufferTooSmall)?;
    dst.copy_from_slice(sig);
    Ok(sig.len())
}

impl CryptoProvider for AwsLc {
    type AeadKey = AeadKey;
    type HeaderKey = HeaderKey;
    type Hash = Hash;
    type Hmac = Hmac;
    type KeyExchange = KeyExchange;
    type SigningKey = SigningKey;

    fn aead_algorithms(&self) -> &'static [AeadAlgorithm] {
        AEADS
    }

    fn groups(&self) -> &'static [NamedGroup] {
        GROUPS
    }

    fn verify_schemes(&self) -> &'static [SignatureScheme] {
        VERIFY_SCHEMES
    }

    fn aead_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<AeadKey, Error> {
        let ring_alg = ring_aead_alg(alg)?;
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        let unbound = ring_aead::UnboundKey::new(ring_alg, key).map_err(|_| Error::BadLength)?;
        Ok(AeadKey {
            alg,
            key: ring_aead::LessSafeKey::new(unbound),
        })
    }

    fn header_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<HeaderKey, Error> {
        #[allow(unreachable_patterns)]
        let ring_alg = match alg {
            AeadAlgorithm::Aes128Gcm => &ring_quic::AES_128,
            AeadAlgorithm::Aes256Gcm => &ring_quic::AES_256,
            AeadAlgorithm::ChaCha20Poly1305 => &ring_quic::CHACHA20,
            _ => return Err(Error::Unsupported),
        };
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        let key =
            ring_quic::HeaderProtectionKey::new(ring_alg, key).map_err(|_| Error::BadLength)?;
        Ok(HeaderKey { alg, key })
    }

    fn hash(&self, alg: HashAlgorithm) -> Result<Hash, Error> {
        Ok(Hash {
            alg,
            ctx: digest::Context::new(ring_hash_alg(alg)?),
        })
    }

    fn hmac(&self, alg: HashAlgorithm, key: &[u8]) -> Result<Hmac, Error> {
        let ring_alg = match alg {
            HashAlgorithm::Sha256 => hmac::HMAC_SHA256,
            HashAlgorithm::Sha384 => hmac::HMAC_SHA384,
            #[allow(unreachable_patterns)]
            _ => return Err(Error::Unsupported),
        };
        Ok(Hmac(hmac::Context::with_key(&hmac::Key::new(
            ring_alg, key,
        ))))
    }

    /// Generates the ephemeral key from the OS random source; `rng` is unused (see the
    /// module docs for why).
    fn start_key_exchange(
        &self,
        group: NamedGroup,
        _rng: &mut dyn CryptoRng,
    ) -> Result<KeyExchange, Error> {
        #[allow(unreachable_patterns)]
        let alg = match group {
            NamedGroup::X25519 => &agreement::X25519,
            NamedGroup::Secp256r1 => &agreement::ECDH_P256,
            _ => return Err(Error::Unsupported),
        };
        let private = agreement::EphemeralPrivateKey::generate(alg, &SystemRandom::new())
            .map_err(|_| Error::Rng)?;
        let computed = private.compute_public_key().map_err(|_| Error::Rng)?;
        let computed = computed.as_ref();
        let mut public = [0u8; MAX_PUBLIC_KEY_LEN];
        public
            .get_mut(..computed.len())
            .ok_or(Error::BadLength)?
            .copy_from_slice(computed);
        Ok(KeyExchange {
            group,
            private,
            public,
            public_len: computed.len(),
        })
    }

    fn verify(
        &self,
        scheme: SignatureScheme,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), Error> {
        #[allow(unreachable_patterns)]
        let alg: &'static dyn signature::VerificationAlgorithm = match scheme {
            // RFC 8032 §5.1.7. `ring` rejects non-canonical S and wrong lengths.
            SignatureScheme::Ed25519 => &signature::ED25519,
            // RFC 8446 §4.2.3: ECDSA signatures are DER; the key is an uncompressed SEC1 point.
            SignatureScheme::EcdsaSecp256r1Sha256 => &signature::ECDSA_P256_SHA256_ASN1,
            _ => return Err(Error::Unsupported),
        };
        signature::UnparsedPublicKey::new(alg, public_key)
            .verify(message, signature)
            .map_err(|_| Error::BadSignature)
    }

    fn signing_key(&self, scheme: SignatureScheme, pkcs8_der: &[u8]) -> Result<SigningKey, Error> {
        #[allow(unreachable_patterns)]
        let inner = match scheme {
            // Accepts PKCS#8 v1 (what `openssl genpkey` writes, no public key) and v2.
            SignatureScheme::Ed25519 => SigningKeyInner::Ed25519(
                signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8_der)
                    .map_err(|_| Error::BadPrivateKey)?,
            ),
            SignatureScheme::EcdsaSecp256r1Sha256 => SigningKeyInner::EcdsaP256(
                signature::EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                    pkcs8_der,
                )
                .map_err(|_| Error::BadPrivateKey)?,
            ),
            _ => return Err(Error::Unsupported),
        };
        Ok(SigningKey(inner))
    }
}
