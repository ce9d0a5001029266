//! DER SubjectPublicKeyInfo for raw public keys (RFC 7250 §3), without an ASN.1 library.
//!
//! A raw-public-key Certificate entry carries a DER `SubjectPublicKeyInfo`. DER is canonical,
//! so for the two key types mote supports there is exactly one valid encoding: a fixed prefix
//! followed by the key bytes. Parsing is therefore a prefix comparison and a length check.

use mote_crypto::SignatureScheme;

use crate::Error;

/// RFC 8410 §4: `SEQUENCE { SEQUENCE { OID 1.3.101.112 (id-Ed25519) }, BIT STRING (0 unused
/// bits) }` wrapping a 32-byte Ed25519 key; 44 bytes in all.
const ED25519_PREFIX: [u8; 12] = [
    0x30, 0x2a, // SEQUENCE, 42 bytes
    0x30, 0x05, // SEQUENCE (AlgorithmIdentifier), 5 bytes
    0x06, 0x03, 0x2b, 0x65, 0x70, // OID 1.3.101.112
    0x03, 0x21, 0x00, // BIT STRING, 33 bytes, 0 unused bits
];

/// RFC 5480 §2: `SEQUENCE { SEQUENCE { OID 1.2.840.10045.2.1 (id-ecPublicKey), OID
/// 1.2.840.10045.3.1.7 (prime256v1) }, BIT STRING (0 unused bits) }` wrapping an uncompressed
/// 65-byte SEC1 point; 91 bytes in all.
const P256_PREFIX: [u8; 26] = [
    0x30, 0x59, // SEQUENCE, 89 bytes
    0x30, 0x13, // SEQUENCE (AlgorithmIdentifier), 19 bytes
    0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, // OID id-ecPublicKey
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, // OID prime256v1
    0x03, 0x42, 0x00, // BIT STRING, 66 bytes, 0 unused bits
];

/// Length of an Ed25519 SubjectPublicKeyInfo.
pub const ED25519_SPKI_LEN: usize = ED25519_PREFIX.len() + 32;
/// Length of a P-256 SubjectPublicKeyInfo (uncompressed point).
pub const P256_SPKI_LEN: usize = P256_PREFIX.len() + 65;

/// Parses a raw public key's SubjectPublicKeyInfo into the one TLS 1.3 signature scheme that
/// key signs with and the raw key that [`mote_crypto::CryptoProvider::verify`] takes (32 bytes
/// for Ed25519, a 65-byte uncompressed SEC1 point for P-256). Any other key type, a compressed
/// point or explicit curve parameters are unsupported_certificate
/// ([`crate::Alert::UnsupportedCertificate`]); point validity is checked when verifying.
#[inline(always)]
pub fn parse_spki(der: &[u8]) -> Result<(SignatureScheme, &[u8]), Error> {
    let key = spki_key(der).ok_or(Error::Alert(crate::Alert::UnsupportedCertificate))?;
    Ok((key_scheme(key), key))
}

/// [`parse_spki`]'s raw key alone, or `None` where it fails. The key's length tells its
/// scheme ([`key_scheme`]), so the result is 8 bytes and comes back in registers.
fn spki_key(der: &[u8]) -> Option<&[u8]> {
    if let Some(key) = der.strip_prefix(&ED25519_PREFIX[..]) {
        if key.len() == 32 {
            return Some(key);
        }
    } else if let Some(key) = der.strip_prefix(&P256_PREFIX[..]) {
        if key.len() == 65 && key.first() == Some(&0x04) {
            return Some(key);
        }
    }
    None
}

/// The signature scheme of a key [`spki_key`] returned: 32 bytes are an Ed25519 key, 65 a
/// P-256 point.
const fn key_scheme(key: &[u8]) -> SignatureScheme {
    if key.len() == 32 {
        SignatureScheme::Ed25519
    } else {
        SignatureScheme::EcdsaSecp256r1Sha256
    }
}

/// Encodes a raw public key for `scheme` (32-byte Ed25519 key, or 65-byte uncompressed P-256
/// point) as a DER SubjectPublicKeyInfo into `out`; returns its length.
pub fn encode_spki(
    scheme: SignatureScheme,
    public_key: &[u8],
    out: &mut [u8],
) -> Result<usize, Error> {
    let (prefix, key_len): (&[u8], usize) = match scheme {
        SignatureScheme::Ed25519 => (&ED25519_PREFIX, 32),
        SignatureScheme::EcdsaSecp256r1Sha256 => (&P256_PREFIX, 65),
        _ => return Err(Error::Crypto(mote_crypto::Error::Unsupported)),
    };
    if public_key.len() != key_len {
        return Err(Error::Crypto(mote_crypto::Error::BadLength));
    }
    let mut w = crate::codec::Out::new(out);
    w.put(prefix);
    w.put(public_key);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    /// RFC 8410 §10.1: the example Ed25519 public key in SubjectPublicKeyInfo form.
    #[test]
    fn rfc8410_ed25519_spki() {
        let der = hex!(
            "302a300506032b6570032100"
            "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1"
        );
        let (scheme, key) = parse_spki(&der).unwrap();
        assert_eq!(scheme, SignatureScheme::Ed25519);
        assert_eq!(key, &der[12..]);
        let mut out = [0u8; 64];
        assert_eq!(encode_spki(scheme, key, &mut out), Ok(ED25519_SPKI_LEN));
        assert_eq!(&out[..ED25519_SPKI_LEN], &der[..]);
    }

    #[test]
    fn p256_spki_round_trip_and_rejections() {
        let mut point = [0x11u8; 65];
        point[0] = 0x04;
        let mut der = [0u8; P256_SPKI_LEN];
        assert_eq!(encode_spki(SignatureScheme::EcdsaSecp256r1Sha256, &point, &mut der), Ok(91));
        assert_eq!(parse_spki(&der), Ok((SignatureScheme::EcdsaSecp256r1Sha256, &point[..])));
        // Compressed point marker, truncation, trailing byte, wrong OID.
        let mut bad = der;
        bad[26] = 0x02;
        assert!(parse_spki(&bad).is_err());
        assert!(parse_spki(&der[..90]).is_err());
        let mut long = [0u8; 92];
        long[..91].copy_from_slice(&der);
        assert!(parse_spki(&long).is_err());
        let mut oid = der;
        oid[12] = 0x02;
        assert!(parse_spki(&oid).is_err());
        assert_eq!(
            encode_spki(SignatureScheme::Ed25519, &point, &mut [0u8; 91]),
            Err(Error::Crypto(mote_crypto::Error::BadLength))
        );
        assert_eq!(
            encode_spki(SignatureScheme::Ed25519, &[0; 32], &mut [0u8; 43]),
            Err(Error::BufferTooSmall)
        );
    }

    /// Every rejection is unsupported_certificate, as before `spki_key` carried it as `None`.
    #[test]
    fn rejections_are_unsupported_certificate() {
        let unsupported = Err(Error::Alert(crate::Alert::UnsupportedCertificate));
        let mut der = [0u8; ED25519_SPKI_LEN + 1];
        der[..12].copy_from_slice(&ED25519_PREFIX);
        assert_eq!(
            parse_spki(&der[..ED25519_SPKI_LEN]),
            Ok((SignatureScheme::Ed25519, &[0u8; 32][..]))
        );
        assert_eq!(parse_spki(&der), unsupported);
        assert_eq!(parse_spki(&der[..ED25519_SPKI_LEN - 1]), unsupported);
        assert_eq!(parse_spki(&[]), unsupported);
        assert_eq!(parse_spki(&P256_PREFIX), unsupported);
    }
}
