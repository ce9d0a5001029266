//! Handshake message codecs (RFC 8446 §4) as borrowed views: parsing never copies and never
//! allocates, emission writes into a caller buffer and returns the length written (or
//! [`Error::BufferTooSmall`]).
//!
//! Over QUIC there is no record layer (RFC 9001 §4): handshake messages arrive as a byte
//! stream in CRYPTO frames, one stream per epoch. [`split_message`] cuts complete messages
//! off the front of the bytes received so far; [`message_len`] tells how large a message is
//! before all of it has arrived, so a caller can buffer it or refuse it.
//!
//! Every `parse` takes the message *body* (after the 4-byte header) and rejects truncation,
//! lengths running past their container, trailing bytes and duplicate extensions. Emitters
//! write whole messages, header included, as the transcript hashes them.

mod certificate;
#[cfg(feature = "server")]
mod client_hello;
mod client_hello_emit;
mod client_hello_one;
mod encrypted_extensions;
pub mod extensions;
mod new_session_ticket;
mod server_hello;
#[cfg(all(test, feature = "server"))]
mod sticky_tests;

#[cfg(feature = "server")]
pub use certificate::emit_certificate_request;
pub use certificate::{
    emit_certificate, emit_certificate_verify, Certificate, CertificateEntry, CertificateRequest,
    CertificateVerify, EMPTY_CERTIFICATE,
};
#[cfg(feature = "server")]
pub use client_hello::ClientHello;
pub use client_hello_emit::{write_binder, ClientHelloParams, EmittedClientHello, PskOffer};
pub(crate) use client_hello_one::OneOfferHello;
pub use encrypted_extensions::EncryptedExtensions;
#[cfg(feature = "server")]
pub use encrypted_extensions::EncryptedExtensionsParams;
pub use extensions::{
    certificate_type, extension_type, is_known_extension, ExtensionIter, Extensions, KeyShareEntry,
    KeyShares, ListIter, OfferedPsks, ProtocolNames, PskIdentity, U16List, PSK_DHE_KE, PSK_KE,
};
pub use new_session_ticket::NewSessionTicket;
#[cfg(feature = "server")]
pub use new_session_ticket::NewSessionTicketParams;
#[cfg(feature = "server")]
pub use server_hello::{HelloRetryRequestParams, ServerHelloParams};
pub use server_hello::{ServerHello, HELLO_RETRY_REQUEST_RANDOM};

#[cfg(feature = "server")]
use crate::codec::Reader;
#[cfg(feature = "server")]
use crate::codec::{Mark, Writer};
use crate::Error;

/// HandshakeType codepoints (RFC 8446 §4).
pub mod handshake_type {
    /// client_hello.
    pub const CLIENT_HELLO: u8 = 1;
    /// server_hello (also HelloRetryRequest, told apart by its random).
    pub const SERVER_HELLO: u8 = 2;
    /// new_session_ticket.
    pub const NEW_SESSION_TICKET: u8 = 4;
    /// end_of_early_data — forbidden over QUIC (RFC 9001 §8.3).
    pub const END_OF_EARLY_DATA: u8 = 5;
    /// encrypted_extensions.
    pub const ENCRYPTED_EXTENSIONS: u8 = 8;
    /// certificate.
    pub const CERTIFICATE: u8 = 11;
    /// certificate_request.
    pub const CERTIFICATE_REQUEST: u8 = 13;
    /// certificate_verify.
    pub const CERTIFICATE_VERIFY: u8 = 15;
    /// finished.
    pub const FINISHED: u8 = 20;
    /// key_update — forbidden over QUIC (RFC 9001 §6).
    pub const KEY_UPDATE: u8 = 24;
    /// message_hash, the synthetic message of the HelloRetryRequest transcript (§4.4.1).
    pub const MESSAGE_HASH: u8 = 254;
}

/// Length of the handshake message header: `HandshakeType msg_type; uint24 length;`.
pub const HEADER_LEN: usize = 4;

/// legacy_version / the TLS 1.2 version number that TLS 1.3 hellos carry (RFC 8446 §4.1.2).
pub const LEGACY_VERSION: u16 = 0x0303;
/// The TLS 1.3 version number in supported_versions (RFC 8446 §4.2.1).
pub const TLS13: u16 = 0x0304;

/// One complete handshake message, borrowed from the received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandshakeMessage<'a> {
    /// The HandshakeType ([`handshake_type`]).
    pub typ: u8,
    /// The body, after the 4-byte header.
    pub body: &'a [u8],
    /// The whole message, header included — what the transcript hashes.
    pub bytes: &'a [u8],
}

/// The total length (header included) of the message starting at `buf[0]`, once its 4-byte
/// header has arrived; `None` before that. Lets a caller refuse a message larger than its
/// buffer before receiving all of it (QUIC: CRYPTO_BUFFER_EXCEEDED, RFC 9000 §7.5).
pub fn message_len(buf: &[u8]) -> Option<usize> {
    // RFC 8446 §4: `HandshakeType msg_type; uint24 length;`.
    let [_, l0, l1, l2, ..] = *buf else { return None };
    Some(HEADER_LEN + (u32::from_be_bytes([0, l0, l1, l2]) as usize))
}

/// RFC 8446 §4: cuts the first complete handshake message off `buf`, returning it and the
/// bytes after it, or `None` if `buf` does not yet hold a whole message.
#[inline(always)]
pub fn split_message(buf: &[u8]) -> Option<(HandshakeMessage<'_>, &[u8])> {
    let len = message_len(buf)?;
    let (bytes, rest) = buf.split_at_checked(len)?;
    let (header, body) = bytes.split_at_checked(HEADER_LEN)?;
    let typ = *header.first()?;
    Some((HandshakeMessage { typ, body, bytes }, rest))
}

/// Rejects the handshake messages TLS over QUIC forbids, with unexpected_message: KeyUpdate
/// (RFC 9001 §6: "Endpoints MUST NOT send a TLS KeyUpdate message ... MUST treat the receipt
/// of a TLS KeyUpdate message as a connection error of type 0x010a") and EndOfEarlyData
/// (RFC 9001 §8.3: "Clients MUST NOT send the EndOfEarlyData message"), plus types that do
/// not exist in TLS 1.3.
pub fn check_quic_message_type(typ: u8) -> Result<(), Error> {
    use handshake_type as ht;
    match typ {
        ht::CLIENT_HELLO
        | ht::SERVER_HELLO
        | ht::NEW_SESSION_TICKET
        | ht::ENCRYPTED_EXTENSIONS
        | ht::CERTIFICATE
        | ht::CERTIFICATE_REQUEST
        | ht::CERTIFICATE_VERIFY
        | ht::FINISHED => Ok(()),
        _ => Err(Error::UnexpectedMessage),
    }
}

/// Starts a handshake message of type `typ`: writes the type and reserves the u24 length.
#[cfg(feature = "server")]
pub(crate) fn start_message(w: &mut Writer<'_>, typ: u8) -> Result<Mark, Error> {
    w.u8(typ)?;
    w.start(3)
}

/// Parses a session id field, `opaque legacy_session_id<0..32>`.
#[cfg(feature = "server")]
pub(crate) fn read_session_id<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Error> {
    let id = r.vec(1, 0)?;
    if id.len() > 32 {
        return Err(Error::BadLength);
    }
    Ok(id)
}

/// RFC 8446 §4.4.4: `struct { opaque verify_data[Hash.length]; } Finished;`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished<'a> {
    /// The verify_data, checked with [`crate::verify_finished`].
    pub verify_data: &'a [u8],
}

impl<'a> Finished<'a> {
    /// Parses a Finished body for a suite whose hash is `hash_len` bytes; any other length is
    /// a decode_error.
    pub fn parse(body: &'a [u8], hash_len: usize) -> Result<Self, Error> {
        if body.len() != hash_len {
            return Err(Error::BadLength);
        }
        Ok(Self { verify_data: body })
    }

    /// Writes a Finished message carrying `verify_data`; returns its length.
    /// verify_data is a hash (at most 48 bytes; longer is BadLength), so the header is
    /// written as bytes, not through a length-prefix writer.
    pub fn emit(verify_data: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        let n = u8::try_from(verify_data.len()).map_err(|_| Error::BadLength)?;
        let (header, body) = out
            .split_first_chunk_mut::<4>()
            .and_then(|(h, rest)| Some((h, rest.get_mut(..usize::from(n))?)))
            .ok_or(Error::BufferTooSmall)?;
        // RFC 8446 §4: msg_type finished(20), u24 length.
        *header = [handshake_type::FINISHED, 0, 0, n];
        body.copy_from_slice(verify_data);
        Ok(4 + usize::from(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_waits_for_whole_message() {
        let msg = [20, 0, 0, 2, 0xaa, 0xbb, 1, 0];
        assert_eq!(message_len(&msg[..3]), None);
        assert_eq!(message_len(&msg[..4]), Some(6));
        for i in 0..6 {
            assert!(split_message(&msg[..i]).is_none());
        }
        let (m, rest) = split_message(&msg).unwrap();
        assert_eq!(m.typ, handshake_type::FINISHED);
        assert_eq!(m.body, &[0xaa, 0xbb]);
        assert_eq!(m.bytes, &msg[..6]);
        assert_eq!(rest, &[1, 0]);
        assert_eq!(message_len(&[1, 0xff, 0xff, 0xff]), Some(HEADER_LEN + 0xff_ffff));
    }

    #[test]
    fn quic_forbids_end_of_early_data_and_key_update() {
        assert_eq!(
            check_quic_message_type(handshake_type::END_OF_EARLY_DATA),
            Err(Error::UnexpectedMessage)
        );
        assert_eq!(
            check_quic_message_type(handshake_type::KEY_UPDATE),
            Err(Error::UnexpectedMessage)
        );
        assert_eq!(check_quic_message_type(99), Err(Error::UnexpectedMessage));
        assert_eq!(check_quic_message_type(handshake_type::FINISHED), Ok(()));
    }

    #[test]
    fn finished_length_is_checked() {
        assert_eq!(Finished::parse(&[0; 31], 32), Err(Error::BadLength));
        assert_eq!(Finished::parse(&[0; 33], 32), Err(Error::BadLength));
        assert!(Finished::parse(&[0; 48], 48).is_ok());
        let mut out = [0u8; 36];
        assert_eq!(Finished::emit(&[7; 32], &mut out), Ok(36));
        assert_eq!(&out[..4], &[20, 0, 0, 32]);
        assert_eq!(Finished::emit(&[7; 32], &mut [0u8; 35]), Err(Error::BufferTooSmall));
        assert_eq!(Finished::emit(&[7; 32], &mut [0u8; 3]), Err(Error::BufferTooSmall));
        let mut out = [0u8; 52];
        assert_eq!(Finished::emit(&[9; 48], &mut out), Ok(52));
        assert_eq!((&out[..4], &out[4..]), (&[20, 0, 0, 48][..], &[9; 48][..]));
        assert_eq!(Finished::emit(&[0; 256], &mut [0u8; 300]), Err(Error::BadLength));
    }
}
