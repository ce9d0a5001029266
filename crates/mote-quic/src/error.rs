//! QUIC transport error codes (RFC 9000 §20.1) and the error every wire parser returns.

/// A transport error code, as carried in a CONNECTION_CLOSE frame of type 0x1c.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransportErrorCode(pub u64);

impl TransportErrorCode {
    /// An endpoint uses this with CONNECTION_CLOSE to signal that the connection is being
    /// closed abruptly in the absence of any error.
    pub const NO_ERROR: Self = Self(0x00);
    /// The endpoint encountered an internal error and cannot continue.
    pub const INTERNAL_ERROR: Self = Self(0x01);
    /// The server refused to accept a new connection.
    pub const CONNECTION_REFUSED: Self = Self(0x02);
    /// The peer sent more data than its flow-control limits allowed.
    pub const FLOW_CONTROL_ERROR: Self = Self(0x03);
    /// The peer opened more streams than allowed.
    pub const STREAM_LIMIT_ERROR: Self = Self(0x04);
    /// A frame arrived for a stream in a state that does not permit it.
    pub const STREAM_STATE_ERROR: Self = Self(0x05);
    /// A final size changed or data arrived beyond it.
    pub const FINAL_SIZE_ERROR: Self = Self(0x06);
    /// A frame was badly formatted.
    pub const FRAME_ENCODING_ERROR: Self = Self(0x07);
    /// Transport parameters were malformed, invalid, missing or duplicated.
    pub const TRANSPORT_PARAMETER_ERROR: Self = Self(0x08);
    /// The peer provided more connection IDs than `active_connection_id_limit`.
    pub const CONNECTION_ID_LIMIT_ERROR: Self = Self(0x09);
    /// A protocol rule was broken and no more specific code applies.
    pub const PROTOCOL_VIOLATION: Self = Self(0x0a);
    /// A server received a client Initial with an invalid token.
    pub const INVALID_TOKEN: Self = Self(0x0b);
    /// The application or application protocol caused the close.
    pub const APPLICATION_ERROR: Self = Self(0x0c);
    /// The peer sent more CRYPTO data than can be buffered.
    pub const CRYPTO_BUFFER_EXCEEDED: Self = Self(0x0d);
    /// A key update was malformed.
    pub const KEY_UPDATE_ERROR: Self = Self(0x0e);
    /// The AEAD integrity limit was reached.
    pub const AEAD_LIMIT_REACHED: Self = Self(0x0f);
    /// No network path can be used.
    pub const NO_VIABLE_PATH: Self = Self(0x10);
    /// RFC 9368 §10.2: version negotiation failed or was tampered with.
    pub const VERSION_NEGOTIATION_ERROR: Self = Self(0x11);

    /// RFC 9001 §4.8: a TLS alert becomes CRYPTO_ERROR 0x0100 + alert.
    pub const fn crypto(alert: u8) -> Self {
        Self(0x0100 | alert as u64)
    }

    /// The TLS alert in a CRYPTO_ERROR code, if this is one.
    pub const fn tls_alert(self) -> Option<u8> {
        if self.0 >= 0x0100 && self.0 <= 0x01ff {
            Some(self.0 as u8)
        } else {
            None
        }
    }
}

/// Why received bytes could not be parsed. Each variant maps onto the transport error the
/// receiver must close the connection with ([`WireError::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// A field ran past the end of the input (a truncated varint, a length past the end).
    Truncated,
    /// A frame type this endpoint does not know (RFC 9000 §12.4: FRAME_ENCODING_ERROR).
    UnknownFrameType(u64),
    /// A frame of this type may not appear in this packet type (RFC 9000 §12.4:
    /// PROTOCOL_VIOLATION).
    FrameNotPermitted(u64),
    /// A frame field holds an impossible value (RFC 9000 §12.4 and the per-frame rules).
    InvalidFrame(u64),
    /// A known frame type encoded in more bytes than its shortest varint form. RFC 9000
    /// §12.4: "a frame type MUST use the shortest possible encoding"; a receiver MAY treat a
    /// longer one as PROTOCOL_VIOLATION, and this crate does.
    NonMinimalFrameType(u64),
    /// A packet carried no frames at all (RFC 9000 §12.4: PROTOCOL_VIOLATION).
    EmptyPacket,
    /// A reserved header bit was set after header protection was removed (RFC 9000 §17.2:
    /// PROTOCOL_VIOLATION).
    ReservedBitsSet,
    /// A packet header was malformed (the packet is dropped, not answered).
    InvalidHeader,
    /// Packet protection could not be removed: the AEAD tag did not verify (or a Retry
    /// integrity tag did not). RFC 9001 §5.5: such packets are discarded silently; they only
    /// count towards the AEAD integrity limit (RFC 9001 §6.6). The code is a fallback for
    /// callers that close anyway; a correct endpoint never sends it for this.
    DecryptFailed,
    /// A transport parameter was malformed, out of range, duplicated, missing, or not
    /// allowed from this side (RFC 9000 §7.4, §18.2: TRANSPORT_PARAMETER_ERROR).
    InvalidTransportParameter(u64),
    /// A stream ID, offset or length broke a rule enforced at parse time (e.g. offset +
    /// length ≥ 2^62, RFC 9000 §19.8: FRAME_ENCODING_ERROR).
    FrameLimit(u64),
    /// A 1-RTT packet opened with a key older than one that opened a lower-numbered packet,
    /// or newer than one that opened a higher-numbered one (RFC 9001 §6.4:
    /// KEY_UPDATE_ERROR).
    KeyUpdate,
    /// A local failure (the crypto provider's) while acting on an authenticated packet,
    /// e.g. deriving the send key that answers the peer's key update (RFC 9000 §20.1:
    /// INTERNAL_ERROR).
    Internal,
}

impl WireError {
    /// The transport error code the receiver closes the connection with.
    pub const fn code(self) -> TransportErrorCode {
        match self {
            Self::Truncated
            | Self::UnknownFrameType(_)
            | Self::InvalidFrame(_)
            | Self::FrameLimit(_)
            | Self::InvalidHeader => TransportErrorCode::FRAME_ENCODING_ERROR,
            Self::FrameNotPermitted(_)
            | Self::NonMinimalFrameType(_)
            | Self::EmptyPacket
            | Self::ReservedBitsSet
            | Self::DecryptFailed => TransportErrorCode::PROTOCOL_VIOLATION,
            Self::InvalidTransportParameter(_) => TransportErrorCode::TRANSPORT_PARAMETER_ERROR,
            Self::KeyUpdate => TransportErrorCode::KEY_UPDATE_ERROR,
            Self::Internal => TransportErrorCode::INTERNAL_ERROR,
        }
    }

    /// The frame type to report in CONNECTION_CLOSE's Frame Type field, when known.
    pub const fn frame_type(self) -> Option<u64> {
        match self {
            Self::UnknownFrameType(t)
            | Self::FrameNotPermitted(t)
            | Self::NonMinimalFrameType(t)
            | Self::InvalidFrame(t)
            | Self::FrameLimit(t) => Some(t),
            _ => None,
        }
    }
}

impl From<crate::coding::Truncated> for WireError {
    fn from(_: crate::coding::Truncated) -> Self {
        Self::Truncated
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WireError {}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Kept terse: this is only compiled into binaries that format errors.
        write!(f, "{self:?} (transport error {:#x})", self.code().0)
    }
}
