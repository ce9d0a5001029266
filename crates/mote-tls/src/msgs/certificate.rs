//! Certificate (RFC 8446 §4.4.2, RFC 7250 §3) and CertificateVerify (§4.4.3).

use super::extensions::{
    extension_type as et, Extensions, ListIter, U16List, ALLOW_CERTIFICATE,
    ALLOW_CERTIFICATE_REQUEST,
};
use super::handshake_type;
#[cfg(feature = "server")]
use super::start_message;
#[cfg(feature = "server")]
use crate::codec::Writer;
use crate::codec::{In, Out, Reader};
use crate::{Alert, Error};

/// RFC 8446 §4.4.2 / RFC 7250 §3: one CertificateEntry.
///
/// ```text
/// struct {
///     select (certificate_type) {
///         case RawPublicKey: opaque ASN1_subjectPublicKeyInfo<1..2^24-1>;
///         case X509:         opaque cert_data<1..2^24-1>;
///     };
///     Extension extensions<0..2^16-1>;
/// } CertificateEntry;
/// ```
///
/// Both types share one wire format; which it is was negotiated in EncryptedExtensions
/// (server_certificate_type / client_certificate_type). A raw public key is a DER
/// SubjectPublicKeyInfo, parsed by [`crate::parse_spki`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertificateEntry<'a> {
    /// The DER certificate or SubjectPublicKeyInfo.
    pub data: &'a [u8],
    /// The entry's extensions (e.g. OCSP status, SCTs), validated.
    pub extensions: Extensions<'a>,
}

impl<'a> CertificateEntry<'a> {
    fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        Ok(Self { data: r.vec(3, 1)?, extensions: Extensions::read(r, ALLOW_CERTIFICATE)? })
    }

    /// The same with a sticky-error reader ([`In`]).
    #[inline(always)]
    fn read_in(r: &mut In<'a>) -> Self {
        Self { data: r.vec(3, 1), extensions: Extensions::read_in(r, ALLOW_CERTIFICATE) }
    }
}

/// A Certificate's end-entity data and whether other entries follow it
/// ([`Certificate::parse_end_entity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EndEntity<'a> {
    /// The first entry's certificate or SubjectPublicKeyInfo; `None` for an empty list.
    pub(crate) data: Option<&'a [u8]>,
    /// Whether the list has more than one entry.
    pub(crate) more: bool,
}

/// RFC 8446 §4.4.2: `struct { opaque certificate_request_context<0..2^8-1>;
/// CertificateEntry certificate_list<0..2^24-1>; } Certificate;`, parsed and validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Certificate<'a> {
    /// certificate_request_context: empty in a server's Certificate; echoes the
    /// CertificateRequest's in a client's.
    pub context: &'a [u8],
    list: &'a [u8],
}

impl<'a> Certificate<'a> {
    /// Parses a Certificate body, validating every entry.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        Self::parse_end_entity(body).map(|(cert, _)| cert)
    }

    /// [`Certificate::parse`], and from the same walk the end-entity entry's data (the
    /// first entry's; `None` for an empty list) and whether more entries follow it: what a
    /// raw-public-key client needs (RFC 7250 §3: exactly one entry), without reading the
    /// list a second time.
    pub(crate) fn parse_end_entity(body: &'a [u8]) -> Result<(Self, EndEntity<'a>), Error> {
        // Every field read, one error check at the end (issue 8: see `In`); the entry walk
        // stops at the first error.
        let mut r = In::new(body);
        let context = r.vec(1, 0);
        let list = r.vec(3, 0);
        r.end();
        r.enter(list);
        let mut end_entity = EndEntity { data: None, more: false };
        while !r.rest().is_empty() && r.is_ok() {
            let data = CertificateEntry::read_in(&mut r).data;
            end_entity.more = end_entity.data.is_some();
            end_entity.data.get_or_insert(data);
        }
        r.finish()?;
        Ok((Self { context, list }, end_entity))
    }

    /// The entries, end-entity first.
    pub fn entries(&self) -> ListIter<'a, CertificateEntry<'a>> {
        ListIter::new(self.list, CertificateEntry::read)
    }

    /// The end-entity entry (the first), or `None` for an empty list — which from a server
    /// is decode_error (RFC 8446 §4.4.2.4) and from a client means it has no certificate.
    pub fn end_entity(&self) -> Option<CertificateEntry<'a>> {
        self.entries().next()
    }
}

/// RFC 8446 §4.4.2: the empty client Certificate (no certificate_request_context, no
/// entries), header included — what [`emit_certificate`] writes for `(&[], &[])`, as one
/// constant for a client with no key to present.
pub const EMPTY_CERTIFICATE: [u8; 8] = [handshake_type::CERTIFICATE, 0, 0, 4, 0, 0, 0, 0];

/// Writes a Certificate message with `context` and one entry per element of `entries`
/// (each a DER certificate or SubjectPublicKeyInfo, without entry extensions); returns its
/// length.
pub fn emit_certificate(context: &[u8], entries: &[&[u8]], out: &mut [u8]) -> Result<usize, Error> {
    let mut w = Out::new(out);
    let msg = w.start_message(handshake_type::CERTIFICATE);
    w.vec(1, context);
    let list = w.start(3);
    for data in entries {
        w.vec(3, data);
        w.u16(0); // no extensions
    }
    w.end(list);
    w.end(msg);
    w.finish()
}

/// RFC 8446 §4.4.3: `struct { SignatureScheme algorithm; opaque signature<0..2^16-1>; }
/// CertificateVerify;`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertificateVerify<'a> {
    /// The SignatureScheme codepoint.
    pub scheme: u16,
    /// The signature (DER for ECDSA), checked with [`crate::verify_certificate_verify`].
    pub signature: &'a [u8],
}

impl<'a> CertificateVerify<'a> {
    /// Parses a CertificateVerify body.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        let mut r = In::new(body);
        let cv = Self { scheme: r.u16(), signature: r.vec(2, 0) };
        r.end();
        r.finish()?;
        Ok(cv)
    }
}

/// Writes a CertificateVerify message; returns its length.
pub fn emit_certificate_verify(
    scheme: u16,
    signature: &[u8],
    out: &mut [u8],
) -> Result<usize, Error> {
    let mut w = Out::new(out);
    let msg = w.start_message(handshake_type::CERTIFICATE_VERIFY);
    w.u16(scheme);
    w.vec(2, signature);
    w.end(msg);
    w.finish()
}

/// RFC 8446 §4.3.2: `struct { opaque certificate_request_context<0..2^8-1>; Extension
/// extensions<2..2^16-1>; } CertificateRequest;`, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertificateRequest<'a> {
    /// certificate_request_context, echoed in the client's Certificate (empty during the
    /// handshake).
    pub context: &'a [u8],
    /// Every extension, in order.
    pub extensions: Extensions<'a>,
    /// signature_algorithms: the schemes the server accepts in the client's
    /// CertificateVerify.
    pub signature_algorithms: U16List<'a>,
}

impl<'a> CertificateRequest<'a> {
    /// Parses a CertificateRequest body. signature_algorithms is required ("MUST be
    /// specified", §4.3.2): without it, missing_extension.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        // Every field read, one error check at the end (issue 8: see `In`).
        let mut r = In::new(body);
        let context = r.vec(1, 0);
        let extensions = Extensions::read_in(&mut r, ALLOW_CERTIFICATE_REQUEST);
        r.end();
        let data = extensions.get(et::SIGNATURE_ALGORITHMS);
        r.check(data.is_some(), Error::Alert(Alert::MissingExtension));
        r.enter(data.unwrap_or(&[]));
        let list = r.vec(2, 2);
        r.check(list.len().is_multiple_of(2), Error::BadLength);
        let signature_algorithms = U16List(list);
        r.end();
        r.finish()?;
        Ok(Self { context, extensions, signature_algorithms })
    }
}

/// Writes a CertificateRequest asking for a certificate signed with one of `schemes`;
/// returns its length.
#[cfg(feature = "server")]
pub fn emit_certificate_request(
    context: &[u8],
    schemes: &[mote_crypto::SignatureScheme],
    out: &mut [u8],
) -> Result<usize, Error> {
    let mut w = Writer::new(out);
    let msg = start_message(&mut w, handshake_type::CERTIFICATE_REQUEST)?;
    w.vec(1, context)?;
    let exts = w.start(2)?;
    super::extensions::write_u16_list_extension(
        &mut w,
        et::SIGNATURE_ALGORITHMS,
        2,
        schemes.iter().map(|s| s.codepoint()),
    )?;
    w.end(exts)?;
    w.end(msg)?;
    Ok(w.position())
}
