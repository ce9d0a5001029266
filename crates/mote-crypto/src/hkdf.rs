//! HKDF (RFC 5869) and TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1), written once over a
//! provider's HMAC so every provider derives byte-identical keys.

use crate::{CryptoProvider, Error, HashAlgorithm, Hmac, Secret, MAX_HASH_LEN};

/// RFC 5869 §2.2: HKDF-Extract(salt, IKM) = HMAC-Hash(salt, IKM). An empty salt means a
/// string of `HashLen` zeros (which HMAC's zero padding already gives).
pub fn extract<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    salt: &[u8],
    ikm: &[u8],
) -> Result<Secret, Error> {
    let mut mac = provider.hmac(alg, salt)?;
    mac.update(ikm);
    // The PRK is the next key-schedule secret: keep it only in the `Secret`.
    let mut prk = mac.finish();
    let secret = Secret::new(prk.as_ref());
    prk.wipe();
    Ok(secret)
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
    let hash_len = alg.output_len();
    if out.len() > 255 * hash_len {
        return Err(Error::BadLength);
    }
    // T(0) = empty; T(i) = HMAC(PRK, T(i-1) | info | i)
    let mut previous = [0u8; MAX_HASH_LEN];
    let mut previous_len = 0;
    for (i, chunk) in out.chunks_mut(hash_len).enumerate() {
        // The HMAC is used where the provider returned it, inside its `Result`: moving it
        // out first would put a second copy in this frame (issue 8: a device's stack).
        let mut keyed = provider.hmac(alg, prk);
        let mac = keyed.as_mut().map_err(|e| *e)?;
        mac.update(&previous[..previous_len]);
        for part in info {
            mac.update(part);
        }
        mac.update(&[(i + 1) as u8]);
        // T(i) is output key material (for a traffic secret, all of it): erase this copy
        // as well as `previous`, on the error path too.
        let mut t = keyed?.finish();
        let block = t.as_ref();
        // A provider whose HMAC output is shorter than the hash length is broken; report it
        // rather than panic.
        let copied = match block.get(..chunk.len()) {
            Some(b) => {
                chunk.copy_from_slice(b);
                previous[..block.len()].copy_from_slice(block);
                previous_len = block.len();
                true
            }
            None => false,
        };
        t.wipe();
        if !copied {
            zeroize::Zeroize::zeroize(&mut previous);
            return Err(Error::BadLength);
        }
    }
    zeroize::Zeroize::zeroize(&mut previous);
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
    const PREFIX: &[u8] = b"tls13 ";
    if label.len() + PREFIX.len() > 255 || context.len() > 255 || out.len() > u16::MAX as usize {
        return Err(Error::BadLength);
    }
    let length = (out.len() as u16).to_be_bytes();
    let label_len = [(PREFIX.len() + label.len()) as u8];
    let context_len = [context.len() as u8];
    expand(provider, alg, secret, &[&length, &label_len, PREFIX, label, &context_len, context], out)
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
    let mut out = Secret::zeroed(alg.output_len());
    expand_label(provider, alg, secret, label, context, out.as_mut())?;
    Ok(out)
}
