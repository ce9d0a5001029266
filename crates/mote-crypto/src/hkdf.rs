//! HKDF (RFC 5869) and TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1), written once over a
//! provider's HMAC so every provider derives byte-identical keys.

use crate::{CryptoProvider, Error, HashAlgorithm, Hmac, Secret, MAX_HASH_LEN};

/// The output length of `alg`, or [`Error::Unsupported`] if this build's secrets and digests
/// cannot hold it ([`MAX_HASH_LEN`]: SHA-384 needs feature `aes256`). Every derivation below
/// checks it first, so a provider that runs SHA-384 in a SHA-256-only build gets an error
/// rather than a secret cut to 32 bytes.
pub fn check_hash_len(alg: HashAlgorithm) -> Result<usize, Error> {
    let len = alg.output_len();
    if len > MAX_HASH_LEN {
        return Err(Error::Unsupported);
    }
    Ok(len)
}

/// RFC 5869 §2.2: HKDF-Extract(salt, IKM) = HMAC-Hash(salt, IKM). An empty salt means a
/// string of `HashLen` zeros (which HMAC's zero padding already gives).
pub fn extract<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    salt: &[u8],
    ikm: &[u8],
) -> Result<Secret, Error> {
    check_hash_len(alg)?;
    let mut slot = None;
    let mac = provider.hmac_into(alg, salt, &mut slot)?;
    mac.update(ikm);
    // The PRK is the next key-schedule secret: keep it only in the `Secret`.
    let mut prk = mac.finish_in_place();
    let secret = Secret::try_new(prk.as_ref());
    prk.wipe();
    secret
}

/// RFC 5869 §2.3: HKDF-Expand(PRK, info, L). `info` is given in parts (concatenated), so
/// callers need no scratch buffer. `out.len()` must be at most 255 × HashLen.
pub fn expand<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    prk: &[u8],
    info: &[&[u8]],
    out: &mut [u8],
) -> Result<(), Error> {
    let hash_len = check_hash_len(alg)?;
    if out.len() > 255 * hash_len {
        return Err(Error::BadLength);
    }
    // T(0) = empty; T(i) = HMAC(PRK, T(i-1) | info | i). Every block but the last is whole,
    // so T(i-1) is read back from `out` (no copy of it in this frame: issue 8).
    let mut start = 0;
    let mut counter = 0u8;
    while start < out.len() {
        // At most 255 blocks (checked above).
        counter = counter.wrapping_add(1);
        let (done, rest) = out.split_at_mut(start);
        let chunk_len = rest.len().min(hash_len);
        // The HMAC is keyed, used and finished in its slot: no copy of it in this frame
        // (issue 8).
        let mut slot = None;
        let mac = provider.hmac_into(alg, prk, &mut slot)?;
        mac.update(done.get(start.saturating_sub(hash_len)..).unwrap_or_default());
        for part in info {
            mac.update(part);
        }
        mac.update(&[counter]);
        // T(i) is output key material (for a traffic secret, all of it): erase this copy,
        // on the error path too.
        let mut t = mac.finish_in_place();
        // A provider whose HMAC output is shorter than the hash length is broken; report it
        // rather than panic.
        let copied = match (t.as_ref().get(..chunk_len), rest.get_mut(..chunk_len)) {
            (Some(block), Some(chunk)) => {
                chunk.copy_from_slice(block);
                true
            }
            _ => false,
        };
        t.wipe();
        if !copied {
            return Err(Error::BadLength);
        }
        start += chunk_len;
    }
    Ok(())
}

/// RFC 8446 §7.1: HKDF-Expand-Label(Secret, Label, Context, Length) with the HkdfLabel
/// structure `uint16 length; opaque label<7..255> = "tls13 " + Label; opaque context<0..255>`.
/// QUIC uses the same function for its own labels ("quic key", RFC 9001 §5.1).
pub fn expand_label<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Result<(), Error> {
    const PREFIX: [u8; 6] = *b"tls13 ";
    if label.len() + PREFIX.len() > 255 || context.len() > 255 || out.len() > u16::MAX as usize {
        return Err(Error::BadLength);
    }
    // HkdfLabel's fixed head (length, the label's length and "tls13 ") built in place: one
    // info part instead of three (issue 8).
    let [len_hi, len_lo] = (out.len() as u16).to_be_bytes();
    let [t, l, s, one, three, space] = PREFIX;
    let head = [len_hi, len_lo, (PREFIX.len() + label.len()) as u8, t, l, s, one, three, space];
    let context_len = [context.len() as u8];
    expand(provider, alg, secret, &[&head, label, &context_len, context], out)
}

/// [`expand_label`] producing a [`Secret`] as long as the hash output (the common case of
/// Derive-Secret and traffic-secret updates).
pub fn expand_label_secret<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    context: &[u8],
) -> Result<Secret, Error> {
    let mut out = Secret::try_zeroed(check_hash_len(alg)?)?;
    expand_label(provider, alg, secret, label, context, out.as_mut())?;
    Ok(out)
}

#[cfg(all(test, feature = "rustcrypto", not(feature = "aes256")))]
mod tests {
    use super::*;
    use crate::rustcrypto::RustCrypto;
    use crate::{AeadAlgorithm, CryptoRng, NamedGroup, SignatureScheme};

    /// A provider that answers SHA-384 requests (with HMAC-SHA-256 standing in: any MAC will
    /// do) in a build whose secrets hold 32 bytes: what a third-party provider with SHA-384
    /// would be to a device built without `aes256`.
    struct Sha384Anyway;

    impl CryptoProvider for Sha384Anyway {
        type AeadKey = <RustCrypto as CryptoProvider>::AeadKey;
        type HeaderKey = <RustCrypto as CryptoProvider>::HeaderKey;
        type Hash = <RustCrypto as CryptoProvider>::Hash;
        type Hmac = <RustCrypto as CryptoProvider>::Hmac;
        type KeyExchange = <RustCrypto as CryptoProvider>::KeyExchange;
        type SigningKey = <RustCrypto as CryptoProvider>::SigningKey;
        fn aead_algorithms(&self) -> &'static [AeadAlgorithm] {
            RustCrypto.aead_algorithms()
        }
        fn groups(&self) -> &'static [NamedGroup] {
            RustCrypto.groups()
        }
        fn verify_schemes(&self) -> &'static [SignatureScheme] {
            RustCrypto.verify_schemes()
        }
        fn aead_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<Self::AeadKey, Error> {
            RustCrypto.aead_key(alg, key)
        }
        fn header_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<Self::HeaderKey, Error> {
            RustCrypto.header_key(alg, key)
        }
        fn hash(&self, _: HashAlgorithm) -> Result<Self::Hash, Error> {
            RustCrypto.hash(HashAlgorithm::Sha256)
        }
        fn hmac(&self, _: HashAlgorithm, key: &[u8]) -> Result<Self::Hmac, Error> {
            RustCrypto.hmac(HashAlgorithm::Sha256, key)
        }
        fn start_key_exchange(
            &self,
            group: NamedGroup,
            rng: &mut dyn CryptoRng,
        ) -> Result<Self::KeyExchange, Error> {
            RustCrypto.start_key_exchange(group, rng)
        }
        fn verify(&self, s: SignatureScheme, k: &[u8], m: &[u8], sig: &[u8]) -> Result<(), Error> {
            RustCrypto.verify(s, k, m, sig)
        }
        fn signing_key(&self, s: SignatureScheme, der: &[u8]) -> Result<Self::SigningKey, Error> {
            RustCrypto.signing_key(s, der)
        }
    }

    /// Session 11: without `aes256` a secret holds 32 bytes, and a SHA-384 derivation is
    /// refused (Unsupported) instead of yielding a 48-byte secret cut to its first 32 bytes.
    #[test]
    fn sha384_refused_not_truncated_without_aes256() {
        let sha384 = HashAlgorithm::Sha384;
        assert_eq!(check_hash_len(sha384), Err(Error::Unsupported));
        assert_eq!(check_hash_len(HashAlgorithm::Sha256), Ok(32));
        let p = Sha384Anyway;
        let derived = expand_label_secret(&p, sha384, &[7; 32], b"derived", b"");
        assert!(matches!(derived, Err(Error::Unsupported)), "{derived:?}");
        let prk = extract(&p, sha384, &[], &[1; 48]);
        assert!(matches!(prk, Err(Error::Unsupported)), "{prk:?}");
        // A caller's buffer sized by the clamped `Secret::zeroed` (as mote-quic's key
        // update sizes the next secret) is refused too.
        let mut out = Secret::zeroed(sha384.output_len());
        let r = expand_label(&p, sha384, &[7; 32], b"quic ku", b"", out.as_mut());
        assert_eq!(r, Err(Error::Unsupported));
        // SHA-256 through the same provider still derives.
        assert!(expand_label_secret(&p, HashAlgorithm::Sha256, &[7; 32], b"x", b"").is_ok());
    }
}
