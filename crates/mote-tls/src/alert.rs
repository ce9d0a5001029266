//! TLS alerts and the crate's error type.
//!
//! Over QUIC, TLS alerts are never sent as records: RFC 9001 §4.8 turns a fatal alert into a
//! QUIC CONNECTION_CLOSE with error code CRYPTO_ERROR = 0x0100 + AlertDescription
//! ([`Alert::quic_error_code`]).

/// A TLS AlertDescription (RFC 8446 §6, plus RFC 7250/8446 additions). All alerts mote sends
/// are fatal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[allow(missing_docs)] // the names are the RFC's
pub enum Alert {
    CloseNotify = 0,
    UnexpectedMessage = 10,
    BadRecordMac = 20,
    RecordOverflow = 22,
    HandshakeFailure = 40,
    BadCertificate = 42,
    UnsupportedCertificate = 43,
    CertificateRevoked = 44,
    CertificateExpired = 45,
    CertificateUnknown = 46,
    IllegalParameter = 47,
    UnknownCa = 48,
    AccessDenied = 49,
    DecodeError = 50,
    DecryptError = 51,
    ProtocolVersion = 70,
    InsufficientSecurity = 71,
    InternalError = 80,
    InappropriateFallback = 86,
    UserCanceled = 90,
    MissingExtension = 109,
    UnsupportedExtension = 110,
    UnrecognizedName = 112,
    BadCertificateStatusResponse = 113,
    UnknownPskIdentity = 115,
    CertificateRequired = 116,
    NoApplicationProtocol = 120,
}

impl Alert {
    /// The AlertDescription byte.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// RFC 9001 §4.8: the QUIC transport error code carrying this alert, 0x0100 + code.
    pub const fn quic_error_code(self) -> u64 {
        0x0100 + self as u64
    }
}

/// What went wrong while parsing, emitting or checking handshake data. Every variant maps to
/// the alert to send ([`Error::alert`]); a few are kept apart from their alert so callers and
/// tests can tell, e.g., truncation from trailing bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The input ended inside a field, or a length prefix ran past its container
    /// (decode_error).
    Truncated,
    /// Bytes were left over after a structure that should have ended (decode_error).
    TrailingBytes,
    /// A vector's length is outside its allowed range or not a multiple of its element size,
    /// or a block has more entries than mote accepts (decode_error).
    BadLength,
    /// RFC 8446 §4.2: two extensions of the same type in one block (illegal_parameter).
    DuplicateExtension,
    /// A well-formed field holds a forbidden value, or a known extension appears in a message
    /// that must not carry it (illegal_parameter).
    IllegalParameter,
    /// A message of a type not allowed here, e.g. EndOfEarlyData or KeyUpdate over QUIC
    /// (unexpected_message).
    UnexpectedMessage,
    /// A Finished, PSK binder or signature did not verify (decrypt_error).
    DecryptError,
    /// The output buffer is too small for the message (internal_error).
    BufferTooSmall,
    /// A cryptographic operation failed; see [`Error::alert`] for the mapping.
    Crypto(mote_crypto::Error),
    /// Any other condition, named by its alert.
    Alert(Alert),
    /// A QUIC transport error rather than a TLS alert: raised by RFC 9001's own rules
    /// ([`transport_error::CRYPTO_BUFFER_EXCEEDED`], [`transport_error::PROTOCOL_VIOLATION`])
    /// or passed through from the QUIC layer's hooks (e.g. TRANSPORT_PARAMETER_ERROR when the
    /// peer's transport parameters do not decode). QUIC closes with this code
    /// ([`Error::quic_error_code`]); [`Error::alert`] reports internal_error for it. Every
    /// RFC 9000 §20.1 transport code fits a byte, which keeps `Error` two bytes long.
    Transport(u8),
}

/// The QUIC transport error codes (RFC 9000 §20.1) that the TLS layer itself raises.
pub mod transport_error {
    /// PROTOCOL_VIOLATION: e.g. a NewSessionTicket whose max_early_data_size is not
    /// 0xffffffff (RFC 9001 §4.6.1), a non-empty legacy_session_id (RFC 9001 §8.4), or
    /// unconsumed handshake bytes when the encryption level changes (RFC 9001 §4.1.3).
    pub const PROTOCOL_VIOLATION: u8 = 0x0a;
    /// CRYPTO_BUFFER_EXCEEDED: a handshake message larger than the session's receive buffer
    /// (RFC 9000 §7.5).
    pub const CRYPTO_BUFFER_EXCEEDED: u8 = 0x0d;
    /// TRANSPORT_PARAMETER_ERROR, for the QUIC layer's transport-parameter hook.
    pub const TRANSPORT_PARAMETER_ERROR: u8 = 0x08;
    /// VERSION_NEGOTIATION_ERROR (RFC 9368 §4), for the QUIC layer's downgrade checks.
    pub const VERSION_NEGOTIATION_ERROR: u8 = 0x11;
    /// INTERNAL_ERROR, for a QUIC-layer hook that cannot complete.
    pub const INTERNAL_ERROR: u8 = 0x01;
}

impl Error {
    /// The alert that reports this error to the peer.
    pub const fn alert(self) -> Alert {
        match self {
            Self::Truncated | Self::TrailingBytes | Self::BadLength => Alert::DecodeError,
            Self::DuplicateExtension | Self::IllegalParameter => Alert::IllegalParameter,
            Self::UnexpectedMessage => Alert::UnexpectedMessage,
            Self::DecryptError => Alert::DecryptError,
            Self::BufferTooSmall => Alert::InternalError,
            Self::Crypto(e) => match e {
                // RFC 8446 §4.4.3: a CertificateVerify that fails is a decrypt_error.
                mote_crypto::Error::BadSignature => Alert::DecryptError,
                // RFC 8446 §4.2.8.2 / §7.4.2: an invalid key share is illegal_parameter.
                mote_crypto::Error::BadPublicKey => Alert::IllegalParameter,
                _ => Alert::InternalError,
            },
            Self::Alert(a) => a,
            Self::Transport(_) => Alert::InternalError,
        }
    }

    /// The QUIC error code to close the connection with: the transport code of
    /// [`Error::Transport`], otherwise CRYPTO_ERROR = 0x0100 + the alert (RFC 9001 §4.8).
    pub const fn quic_error_code(self) -> u64 {
        match self {
            Self::Transport(code) => code as u64,
            other => other.alert().quic_error_code(),
        }
    }
}

impl From<mote_crypto::Error> for Error {
    fn from(e: mote_crypto::Error) -> Self {
        Self::Crypto(e)
    }
}

impl From<Alert> for Error {
    fn from(a: Alert) -> Self {
        Self::Alert(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_codes_and_quic_mapping() {
        assert_eq!(Alert::DecodeError.code(), 50);
        assert_eq!(Alert::NoApplicationProtocol.code(), 120);
        assert_eq!(Alert::MissingExtension.quic_error_code(), 0x016d);
        assert_eq!(Error::Truncated.alert(), Alert::DecodeError);
        assert_eq!(Error::DuplicateExtension.alert(), Alert::IllegalParameter);
        assert_eq!(Error::Crypto(mote_crypto::Error::BadSignature).alert(), Alert::DecryptError);
        assert_eq!(Error::BufferTooSmall.alert(), Alert::InternalError);
        assert_eq!(Error::from(Alert::ProtocolVersion).alert(), Alert::ProtocolVersion);
        assert_eq!(Error::DecryptError.quic_error_code(), 0x0133);
        assert_eq!(
            Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED).quic_error_code(),
            0x0d
        );
    }
}
