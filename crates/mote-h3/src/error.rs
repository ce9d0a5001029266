//! HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6) and the errors of the send
//! API.

/// An HTTP/3 or QPACK application error code, used both as a connection error (carried in
/// CONNECTION_CLOSE) and as a stream error (RESET_STREAM / STOP_SENDING).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum H3Error {
    /// 0x0100: no error; graceful closure or a stream that is no longer needed.
    NoError = 0x0100,
    /// 0x0101: the peer violated the protocol and no more specific code applies.
    GeneralProtocolError = 0x0101,
    /// 0x0102: an internal error in the HTTP stack.
    InternalError = 0x0102,
    /// 0x0103: the peer created a stream that will not be accepted.
    StreamCreationError = 0x0103,
    /// 0x0104: a stream required by the connection was closed or reset.
    ClosedCriticalStream = 0x0104,
    /// 0x0105: a frame that is not permitted in the current state or on this stream.
    FrameUnexpected = 0x0105,
    /// 0x0106: a frame that fails its layout requirements or has an invalid size.
    FrameError = 0x0106,
    /// 0x0107: the peer is generating excessive load.
    ExcessiveLoad = 0x0107,
    /// 0x0108: a stream ID or push ID was used incorrectly.
    IdError = 0x0108,
    /// 0x0109: an error in the payload of a SETTINGS frame.
    SettingsError = 0x0109,
    /// 0x010a: no SETTINGS frame at the beginning of the control stream.
    MissingSettings = 0x010a,
    /// 0x010b: the server rejected the request without application processing.
    RequestRejected = 0x010b,
    /// 0x010c: the request or its response (including pushed responses) is cancelled.
    RequestCancelled = 0x010c,
    /// 0x010d: the client's stream ended without a fully formed request.
    RequestIncomplete = 0x010d,
    /// 0x010e: an HTTP message was malformed and cannot be processed.
    MessageError = 0x010e,
    /// 0x010f: the TCP connection for a CONNECT request was reset or abnormally closed.
    ConnectError = 0x010f,
    /// 0x0110: the requested operation cannot be served over HTTP/3.
    VersionFallback = 0x0110,
    /// 0x0200: the decoder failed to interpret an encoded field section.
    QpackDecompressionFailed = 0x0200,
    /// 0x0201: the decoder failed to interpret an encoder instruction.
    QpackEncoderStreamError = 0x0201,
    /// 0x0202: the encoder failed to interpret a decoder instruction.
    QpackDecoderStreamError = 0x0202,
}

impl H3Error {
    /// The code as it goes on the wire.
    pub const fn code(self) -> u64 {
        self as u16 as u64
    }

    /// The known code `code` stands for, if any. Unknown codes (including the reserved
    /// `0x1f * N + 0x21` ones) must be treated as [`H3Error::NoError`]-equivalent by a
    /// receiver that does not know them (RFC 9114 §9); this returns `None` for them.
    pub const fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0x0100 => Self::NoError,
            0x0101 => Self::GeneralProtocolError,
            0x0102 => Self::InternalError,
            0x0103 => Self::StreamCreationError,
            0x0104 => Self::ClosedCriticalStream,
            0x0105 => Self::FrameUnexpected,
            0x0106 => Self::FrameError,
            0x0107 => Self::ExcessiveLoad,
            0x0108 => Self::IdError,
            0x0109 => Self::SettingsError,
            0x010a => Self::MissingSettings,
            0x010b => Self::RequestRejected,
            0x010c => Self::RequestCancelled,
            0x010d => Self::RequestIncomplete,
            0x010e => Self::MessageError,
            0x010f => Self::ConnectError,
            0x0110 => Self::VersionFallback,
            0x0200 => Self::QpackDecompressionFailed,
            0x0201 => Self::QpackEncoderStreamError,
            0x0202 => Self::QpackDecoderStreamError,
            _ => return None,
        })
    }
}

/// The output buffer has no room for what was to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferTooSmall;

/// Why a send call on the session did not (fully) happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The caller's scratch buffer cannot hold the encoded frame.
    BufferTooSmall,
    /// The stream cannot take the frame now (flow control or a full send buffer): try again
    /// with the same arguments once the transport reports the stream writable.
    Blocked,
    /// No new stream can be opened now (the peer's stream limit): try again later.
    StreamLimit,
    /// The peer sent GOAWAY: no new requests may be started on this connection
    /// (RFC 9114 §5.2).
    GoingAway,
    /// The call does not fit the stream's state (DATA before HEADERS, anything after
    /// trailers or FIN, a request on a stream that is not a request stream).
    InvalidState,
    /// The field section is larger than the peer's SETTINGS_MAX_FIELD_SECTION_SIZE
    /// (RFC 9114 §4.2.2).
    FieldSectionTooLarge,
    /// The connection is closed with this error.
    Closed(H3Error),
}

impl From<BufferTooSmall> for SendError {
    fn from(_: BufferTooSmall) -> Self {
        Self::BufferTooSmall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in (0x100..=0x110).chain(0x200..=0x202) {
            let e = H3Error::from_code(code).unwrap();
            assert_eq!(e.code(), code);
        }
        assert_eq!(H3Error::from_code(0x21), None);
        assert_eq!(H3Error::from_code(0x111), None);
    }
}
