//! X.509 server certificates (feature `x509`): the chain is verified to pinned trust anchors
//! by rustls-webpki, with signatures checked by mote's own [`CryptoProvider`] (ECDSA P-256
//! with SHA-256, and Ed25519), so no second crypto library is linked.

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;

use mote_crypto::{CryptoProvider, SignatureScheme};
use pki_types::{
    alg_id, AlgorithmIdentifier, CertificateDer, InvalidSignature, ServerName,
    SignatureVerificationAlgorithm, TrustAnchor, UnixTime,
};

use crate::msgs::Certificate;
use crate::{Alert, Error};

/// How a client verifies X.509 server certificates.
#[derive(Clone, Copy, Debug)]
pub struct X509Verifier<'a> {
    /// The trust anchors (e.g. from `webpki::anchor_from_trusted_cert`, or written out as
    /// `static`s). The server's chain must lead to one of them.
    pub anchors: &'a [TrustAnchor<'a>],
}

/// One signature algorithm for webpki, backed by the provider.
struct Alg<'p, P> {
    provider: &'p P,
    scheme: SignatureScheme,
    public_key: AlgorithmIdentifier,
    signature: AlgorithmIdentifier,
}

impl<P> core::fmt::Debug for Alg<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Alg").field(&self.scheme).finish()
    }
}

impl<P: CryptoProvider + Sync> SignatureVerificationAlgorithm for Alg<'_, P> {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        self.provider
            .verify(self.scheme, public_key, message, signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.public_key
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature
    }
}

/// RFC 8446 §6.2 alerts for webpki's verdicts.
fn alert(e: webpki::Error) -> Error {
    use webpki::Error as W;
    Error::Alert(match e {
        W::UnknownIssuer => Alert::UnknownCa,
        W::CertExpired { .. } | W::CertNotValidYet { .. } => Alert::CertificateExpired,
        W::CertRevoked => Alert::CertificateRevoked,
        W::UnsupportedSignatureAlgorithmContext(_)
        | W::UnsupportedSignatureAlgorithmForPublicKeyContext(_)
        | W::UnsupportedCertVersion => Alert::UnsupportedCertificate,
        _ => Alert::BadCertificate,
    })
}

/// RFC 8446 §4.4.2.2 / RFC 5280: verifies the server's chain (end-entity first) to one of
/// the anchors at `unix_time_s`, for TLS server authentication and for `server_name`, and
/// writes the end-entity's SubjectPublicKeyInfo to `spki_out` (returns its length; only
/// Ed25519 and P-256 keys fit, others are unsupported_certificate).
pub(crate) fn verify_server_chain<P: CryptoProvider + Sync>(
    provider: &P,
    verifier: &X509Verifier<'_>,
    certificate: &Certificate<'_>,
    server_name: Option<&[u8]>,
    unix_time_s: Option<u64>,
    spki_out: &mut [u8],
) -> Result<usize, Error> {
    let mut entries = certificate.entries();
    // RFC 8446 §4.4.2.4: an empty server Certificate is decode_error.
    let end_entity = entries.next().ok_or(Error::BadLength)?;
    let intermediates: Vec<CertificateDer<'_>> =
        entries.map(|e| CertificateDer::from(e.data)).collect();
    let der = CertificateDer::from(end_entity.data);
    let cert = webpki::EndEntityCert::try_from(&der).map_err(alert)?;
    let algs: [&dyn SignatureVerificationAlgorithm; 2] = [
        &Alg {
            provider,
            scheme: SignatureScheme::EcdsaSecp256r1Sha256,
            public_key: alg_id::ECDSA_P256,
            signature: alg_id::ECDSA_SHA256,
        },
        &Alg {
            provider,
            scheme: SignatureScheme::Ed25519,
            public_key: alg_id::ED25519,
            signature: alg_id::ED25519,
        },
    ];
    // Without a clock, validity periods cannot be checked: refuse rather than guess.
    let now = unix_time_s.ok_or(Error::Alert(Alert::InternalError))?;
    let now = UnixTime::since_unix_epoch(Duration::from_secs(now));
    cert.verify_for_usage(
        &algs,
        verifier.anchors,
        &intermediates,
        now,
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(alert)?;
    // The name the client asked for (SNI) must be in the certificate.
    let name = server_name
        .and_then(|n| core::str::from_utf8(n).ok())
        .and_then(|n| ServerName::try_from(n).ok())
        .ok_or(Error::Alert(Alert::BadCertificate))?;
    cert.verify_is_valid_for_subject_name(&name).map_err(alert)?;
    let spki = cert.subject_public_key_info();
    crate::parse_spki(spki.as_ref())?;
    let out = spki_out
        .get_mut(..spki.as_ref().len())
        .ok_or(Error::Alert(Alert::UnsupportedCertificate))?;
    out.copy_from_slice(spki.as_ref());
    Ok(out.len())
}
