//! Handshake authentication values: Finished (RFC 8446 §4.4.4), PSK binders (§4.2.11.2) and
//! the CertificateVerify signature input (§4.4.3).

use mote_crypto::{
    hkdf, CryptoProvider, CryptoRng, Digest, HashAlgorithm, Hmac as _, SignatureScheme, SigningKey,
    MAX_HASH_LEN,
};

use crate::{Error, Side};

/// RFC 8446 §4.4.4:
/// `finished_key = HKDF-Expand-Label(BaseKey, "finished", "", Hash.length)` and
/// `verify_data = HMAC(finished_key, Transcript-Hash(Handshake Context, Certificate*,
/// CertificateVerify*))`. `base_key` is the sender's handshake traffic secret;
/// `transcript_hash` covers every message before the Finished.
pub fn finished_verify_data<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    base_key: &[u8],
    transcript_hash: &[u8],
) -> Result<Digest, Error> {
    let mut out = [0u8; MAX_HASH_LEN];
    let n = finished_verify_data_into(provider, alg, base_key, transcript_hash, &mut out)?;
    Ok(Digest::new(out.get(..n).unwrap_or_default()))
}

/// [`finished_verify_data`] written into the front of `out`; returns its length (the hash's).
/// Every Finished and binder the client writes or checks goes through it (issue 8: written
/// in place, no Digest returned through a `Result` and copied by each caller).
pub(crate) fn finished_verify_data_into<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    base_key: &[u8],
    transcript_hash: &[u8],
    out: &mut [u8],
) -> Result<usize, Error> {
    let mut finished_key = mote_crypto::Secret::zeroed(alg.output_len());
    hkdf::expand_label(provider, alg, base_key, b"finished", b"", finished_key.as_mut())?;
    hmac_into(provider, alg, finished_key.as_ref(), transcript_hash, out)
}

/// HMAC(`key`, `data`) written into the front of `out`; returns its length. Out of line
/// (issue 8): the HMAC state is not in [`finished_verify_data_into`]'s frame while the
/// finished key is derived.
#[inline(never)]
fn hmac_into<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    key: &[u8],
    data: &[u8],
    out: &mut [u8],
) -> Result<usize, Error> {
    // The HMAC is keyed and used in its slot (no copy in this frame, as in HKDF).
    let mut slot = None;
    let mac = provider.hmac_into(alg, key, &mut slot)?;
    mac.update(data);
    let d = mac.finish_in_place();
    let d = d.as_ref();
    out.get_mut(..d.len()).ok_or(Error::BufferTooSmall)?.copy_from_slice(d);
    Ok(d.len())
}

/// Checks a received Finished `verify_data` in constant time; a mismatch (or a wrong length)
/// is [`Error::DecryptError`] (RFC 8446 §4.4.4: "MUST terminate the connection with a
/// decrypt_error alert").
pub fn verify_finished<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    base_key: &[u8],
    transcript_hash: &[u8],
    received: &[u8],
) -> Result<(), Error> {
    let mut expected = [0u8; MAX_HASH_LEN];
    let n = finished_verify_data_into(provider, alg, base_key, transcript_hash, &mut expected)?;
    if ct_eq(expected.get(..n).unwrap_or_default(), received) {
        Ok(())
    } else {
        Err(Error::DecryptError)
    }
}

/// RFC 8446 §4.2.11.2: a PSK binder is computed like a Finished, with the binder key
/// ([`crate::EarlySecret::binder_key`]) as BaseKey, over
/// Transcript-Hash(Truncate(ClientHello1)) — see [`crate::Transcript::hash_with`].
pub fn psk_binder<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    binder_key: &[u8],
    partial_client_hello_hash: &[u8],
) -> Result<Digest, Error> {
    finished_verify_data(provider, alg, binder_key, partial_client_hello_hash)
}

/// Checks a received PSK binder in constant time ([`Error::DecryptError`] on mismatch,
/// RFC 8446 §4.2.11: "the server MUST validate the corresponding binder value ... If this
/// value is not present or does not validate, the server MUST abort the handshake").
pub fn verify_psk_binder<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    binder_key: &[u8],
    partial_client_hello_hash: &[u8],
    received: &[u8],
) -> Result<(), Error> {
    verify_finished(provider, alg, binder_key, partial_client_hello_hash, received)
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    core::hint::black_box(diff) == 0
}

/// The longest CertificateVerify signature input: 64 spaces, a 33-byte context string, a
/// zero byte and a SHA-384 transcript hash.
pub const MAX_CERTIFICATE_VERIFY_CONTENT_LEN: usize = 64 + 33 + 1 + MAX_HASH_LEN;

/// RFC 8446 §4.4.3: the content covered by a CertificateVerify signature — 64 bytes of 0x20,
/// the context string "TLS 1.3, server CertificateVerify" (or "client"), a 0x00 separator and
/// the transcript hash through Certificate. Written to `out`; returns its length.
pub fn certificate_verify_content(
    side: Side,
    transcript_hash: &[u8],
    out: &mut [u8],
) -> Result<usize, Error> {
    let mut w = crate::codec::Out::new(out);
    w.put(&[0x20; 64]);
    w.put(context_string(side));
    w.u8(0);
    w.put(transcript_hash);
    w.finish()
}

/// RFC 8446 §4.4.3: the context string of `side`'s CertificateVerify.
fn context_string(side: Side) -> &'static [u8] {
    match side {
        Side::Server => b"TLS 1.3, server CertificateVerify",
        Side::Client => b"TLS 1.3, client CertificateVerify",
    }
}

/// Verifies a CertificateVerify signature by `side`'s raw public key (RFC 8446 §4.4.3);
/// a bad signature is [`Error::Crypto`]`(BadSignature)`, reported as decrypt_error.
pub fn verify_certificate_verify<P: CryptoProvider + ?Sized>(
    provider: &P,
    side: Side,
    scheme: SignatureScheme,
    public_key: &[u8],
    transcript_hash: &[u8],
    signature: &[u8],
) -> Result<(), Error> {
    // The content in parts (no buffer for it under the signature check, issue 8).
    let content: [&[u8]; 4] = [&[0x20; 64], context_string(side), &[0], transcript_hash];
    Ok(provider.verify_parts(scheme, public_key, &content, signature)?)
}

/// Signs a CertificateVerify as `side` (RFC 8446 §4.4.3), writing the signature to `out` and
/// returning its length.
pub fn sign_certificate_verify<K: SigningKey + ?Sized>(
    key: &K,
    rng: &mut dyn CryptoRng,
    side: Side,
    transcript_hash: &[u8],
    out: &mut [u8],
) -> Result<usize, Error> {
    let mut content = [0u8; MAX_CERTIFICATE_VERIFY_CONTENT_LEN];
    let len = certificate_verify_content(side, transcript_hash, &mut content)?;
    let content = content.get(..len).ok_or(Error::BufferTooSmall)?;
    Ok(key.sign(rng, content, out)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ct_eq_lengths_and_values() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
        assert!(ct_eq(b"", b""));
    }

    /// RFC 8446 §4.4.3 gives the layout; its example is the server context string.
    #[test]
    fn certificate_verify_content_layout() {
        let hash = [0xab; 32];
        let mut out = [0u8; MAX_CERTIFICATE_VERIFY_CONTENT_LEN];
        let n = certificate_verify_content(Side::Server, &hash, &mut out).unwrap();
        assert_eq!(n, 64 + 33 + 1 + 32);
        assert!(out[..64].iter().all(|b| *b == 0x20));
        assert_eq!(&out[64..97], b"TLS 1.3, server CertificateVerify");
        assert_eq!(out[97], 0);
        assert_eq!(&out[98..130], &hash);
        let n = certificate_verify_content(Side::Client, &[0; 48], &mut out).unwrap();
        assert_eq!(n, MAX_CERTIFICATE_VERIFY_CONTENT_LEN);
        assert_eq!(&out[64..97], b"TLS 1.3, client CertificateVerify");
        assert_eq!(
            certificate_verify_content(Side::Client, &hash, &mut [0u8; 100]),
            Err(Error::BufferTooSmall)
        );
    }
}
