//! Keys, certificates and trust anchors from PEM files.
//!
//! mote signs and verifies with ECDSA P-256 and Ed25519 only (the schemes of its crypto
//! providers); RSA keys and certificates are refused with an error saying so.

use std::path::Path;

use mote_crypto::fast::Ring;
use mote_crypto::{CryptoProvider, SignatureScheme, SigningKey as _};
use pki_types::pem::PemObject;
use pki_types::{CertificateDer, PrivateKeyDer, SubjectPublicKeyInfoDer, TrustAnchor};

use crate::Error;

/// The signing key type of the `ring` provider.
pub type SigningKey = <Ring as CryptoProvider>::SigningKey;

/// A server's key and what it presents.
#[derive(Clone, Copy)]
pub struct ServerIdentity {
    /// The CertificateVerify key.
    pub key: &'static SigningKey,
    /// DER certificates, end-entity first (empty: raw public key only).
    pub chain: &'static [&'static [u8]],
    /// The key's SubjectPublicKeyInfo (what a client pins in raw-public-key mode).
    pub spki: &'static [u8],
}

impl std::fmt::Debug for ServerIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerIdentity").field("chain", &self.chain.len()).finish_non_exhaustive()
    }
}

/// DER of the rsaEncryption OID (1.2.840.113549.1.1.1).
const RSA_OID: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// DER of id-ecPublicKey (1.2.840.10045.2.1) and prime256v1 (1.2.840.10045.3.1.7).
const EC_OIDS: &[u8] = &[
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
    0xce, 0x3d, 0x03, 0x01, 0x07,
];

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A DER length.
fn der_len(n: usize, out: &mut Vec<u8>) {
    if n < 0x80 {
        out.push(n as u8);
    } else if n < 0x100 {
        out.extend_from_slice(&[0x81, n as u8]);
    } else {
        out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
    }
}

/// RFC 5915 SEC1 `EC PRIVATE KEY` wrapped as RFC 5208 PKCS#8 (P-256 only).
fn sec1_to_pkcs8(sec1: &[u8]) -> Vec<u8> {
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend_from_slice(EC_OIDS);
    body.push(0x04);
    der_len(sec1.len(), &mut body);
    body.extend_from_slice(sec1);
    let mut out = vec![0x30];
    der_len(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

fn load_key_der(path: &Path) -> Result<Vec<u8>, Error> {
    let key = PrivateKeyDer::from_pem_file(path)
        .map_err(|e| Error::new(format!("{}: no private key ({e})", path.display())))?;
    match key {
        PrivateKeyDer::Pkcs1(_) => Err(Error::new(format!(
            "{}: RSA keys are not supported by mote (use ECDSA P-256 or Ed25519)",
            path.display()
        ))),
        PrivateKeyDer::Sec1(k) => Ok(sec1_to_pkcs8(k.secret_sec1_der())),
        PrivateKeyDer::Pkcs8(k) => Ok(k.secret_pkcs8_der().to_vec()),
        _ => Err(Error::new(format!("{}: unknown private key format", path.display()))),
    }
}

/// Loads a PKCS#8 (or SEC1) private key: Ed25519 or ECDSA P-256.
pub fn load_signing_key(path: &Path) -> Result<&'static SigningKey, Error> {
    let der = load_key_der(path)?;
    if contains(&der, RSA_OID) {
        return Err(Error::new(format!(
            "{}: RSA keys are not supported by mote (use ECDSA P-256 or Ed25519)",
            path.display()
        )));
    }
    let key = Ring
        .signing_key(SignatureScheme::Ed25519, &der)
        .or_else(|_| Ring.signing_key(SignatureScheme::EcdsaSecp256r1Sha256, &der))
        .map_err(|_| {
            Error::new(format!(
                "{}: not an Ed25519 or ECDSA P-256 PKCS#8 key mote can use",
                path.display()
            ))
        })?;
    Ok(Box::leak(Box::new(key)))
}

fn spki_of(key: &SigningKey) -> Result<&'static [u8], Error> {
    let mut spki = vec![0u8; 128];
    let n = mote_tls::encode_spki(key.scheme(), key.public_key(), &mut spki)
        .map_err(|_| Error::new("cannot encode the public key"))?;
    spki.truncate(n);
    Ok(Box::leak(spki.into_boxed_slice()))
}

/// Loads all certificates of a PEM file (DER, in file order).
pub fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| Error::new(format!("{}: {e}", path.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| Error::new(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::new(format!("{}: no CERTIFICATE in the file", path.display())));
    }
    Ok(certs)
}

/// A server identity from a certificate chain (`cert`) and its key, or a raw public key
/// only (`cert` = None).
pub fn server_identity(cert: Option<&Path>, key: &Path) -> Result<ServerIdentity, Error> {
    let signing = load_signing_key(key)?;
    let spki = spki_of(signing)?;
    let chain: &'static [&'static [u8]] = match cert {
        None => &[],
        Some(path) => {
            let certs = load_certificates(path)?;
            if certs.first().is_some_and(|c| contains(c.as_ref(), RSA_OID)) {
                return Err(Error::new(format!(
                    "{}: RSA certificates are not supported by mote (use ECDSA P-256 or Ed25519)",
                    path.display()
                )));
            }
            let ders: Vec<&'static [u8]> = certs
                .into_iter()
                .map(|c| &*Box::leak(c.as_ref().to_vec().into_boxed_slice()))
                .collect();
            Box::leak(ders.into_boxed_slice())
        }
    };
    Ok(ServerIdentity { key: signing, chain, spki })
}

/// Trust anchors from the certificates of a PEM file.
pub fn trust_anchors(path: &Path) -> Result<&'static [TrustAnchor<'static>], Error> {
    let mut anchors = Vec::new();
    for c in load_certificates(path)? {
        let c: &'static CertificateDer<'static> = Box::leak(Box::new(c));
        let a = webpki::anchor_from_trusted_cert(c)
            .map_err(|e| Error::new(format!("{}: not a usable CA ({e:?})", path.display())))?;
        anchors.push(a.to_owned());
    }
    Ok(Box::leak(anchors.into_boxed_slice()))
}

/// The server key a client pins: a `PUBLIC KEY` PEM (SubjectPublicKeyInfo), or for
/// convenience the server's private key file, whose public half is taken.
pub fn pinned_key(path: &Path) -> Result<&'static [u8], Error> {
    if let Ok(spki) = SubjectPublicKeyInfoDer::from_pem_file(path) {
        if contains(spki.as_ref(), RSA_OID) {
            return Err(Error::new(format!(
                "{}: RSA keys are not supported by mote",
                path.display()
            )));
        }
        return Ok(Box::leak(spki.as_ref().to_vec().into_boxed_slice()));
    }
    spki_of(load_signing_key(path)?)
}

/// The `PUBLIC KEY` PEM of a SubjectPublicKeyInfo.
pub fn spki_pem(spki: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for chunk in spki.chunks(3) {
        let b = [chunk.first().copied(), chunk.get(1).copied(), chunk.get(2).copied()];
        let n = (u32::from(b[0].unwrap_or(0)) << 16)
            | (u32::from(b[1].unwrap_or(0)) << 8)
            | u32::from(b[2].unwrap_or(0));
        for (i, present) in [true, true, b[1].is_some(), b[2].is_some()].iter().enumerate() {
            let idx = ((n >> (18 - 6 * i)) & 63) as usize;
            s.push(if *present { char::from(B64[idx]) } else { '=' });
        }
    }
    let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in s.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or(""));
        pem.push('\n');
    }
    pem.push_str("-----END PUBLIC KEY-----\n");
    pem
}
