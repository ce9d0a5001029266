//! QUIC frames (RFC 9000 §12.4, §19; DATAGRAM from RFC 9221 §4): parse and emit.
//!
//! [`Frame`] borrows its variable-length fields from the packet payload; nothing allocates.
//! [`Frame::parse`] reads one frame and enforces the value rules RFC 9000 attaches to each
//! frame format; [`Frames`] walks a whole decrypted payload and also applies the
//! per-packet-type permission table ([`permitted`]). [`Frame::emit`] writes a frame into a
//! [`Writer`] and [`Frame::encoded_len`] says how many bytes that takes.
//!
//! Emission writes the values it is given: it does not re-check the receive-side value rules
//! (a caller building a NEW_CONNECTION_ID with an empty connection ID gets one on the wire).
//!
//! Frame types must be minimally encoded: RFC 9000 §12.4 says "a frame type MUST use the
//! shortest possible encoding" and lets a receiver treat a longer one as PROTOCOL_VIOLATION.
//! This crate does ([`WireError::NonMinimalFrameType`]): every known type fits one byte, so
//! accepting `0x4001` as PING would only add parser states for no peer that follows the
//! RFC. A non-minimal encoding of an unknown type is reported as
//! [`WireError::UnknownFrameType`], which RFC 9000 requires.

mod ack;
mod permission;
mod put;
#[cfg(test)]
mod tests;

pub use ack::{Ack, AckRanges, EcnCounts, RangeOrder};
use permission::permitted_known;
pub use permission::{is_ack_eliciting, is_known, is_probing, permitted};
pub(crate) use put::{put_frame, put_stream};

use crate::cid::{ConnectionId, MAX_CID_LEN};
use crate::coding::{encoded_size, BufferTooSmall, Reader, VarInt, Writer};
use crate::error::WireError;
use crate::packet::PacketType;

/// Frame type values (RFC 9000 §12.4 Table 3, §19; RFC 9221 §4).
pub mod types {
    /// PADDING (RFC 9000 §19.1).
    pub const PADDING: u64 = 0x00;
    /// PING (RFC 9000 §19.2).
    pub const PING: u64 = 0x01;
    /// ACK without ECN counts (RFC 9000 §19.3).
    pub const ACK: u64 = 0x02;
    /// ACK with ECN counts (RFC 9000 §19.3).
    pub const ACK_ECN: u64 = 0x03;
    /// RESET_STREAM (RFC 9000 §19.4).
    pub const RESET_STREAM: u64 = 0x04;
    /// STOP_SENDING (RFC 9000 §19.5).
    pub const STOP_SENDING: u64 = 0x05;
    /// CRYPTO (RFC 9000 §19.6).
    pub const CRYPTO: u64 = 0x06;
    /// NEW_TOKEN (RFC 9000 §19.7).
    pub const NEW_TOKEN: u64 = 0x07;
    /// The lowest STREAM type (RFC 9000 §19.8): 0b00001XXX with the OFF, LEN and FIN bits.
    pub const STREAM: u64 = 0x08;
    /// The highest STREAM type (all three bits set).
    pub const STREAM_MAX: u64 = 0x0f;
    /// STREAM type bit: an Offset field is present.
    pub const STREAM_OFF: u64 = 0x04;
    /// STREAM type bit: a Length field is present.
    pub const STREAM_LEN: u64 = 0x02;
    /// STREAM type bit: this frame ends the stream.
    pub const STREAM_FIN: u64 = 0x01;
    /// MAX_DATA (RFC 9000 §19.9).
    pub const MAX_DATA: u64 = 0x10;
    /// MAX_STREAM_DATA (RFC 9000 §19.10).
    pub const MAX_STREAM_DATA: u64 = 0x11;
    /// MAX_STREAMS for bidirectional streams (RFC 9000 §19.11).
    pub const MAX_STREAMS_BIDI: u64 = 0x12;
    /// MAX_STREAMS for unidirectional streams (RFC 9000 §19.11).
    pub const MAX_STREAMS_UNI: u64 = 0x13;
    /// DATA_BLOCKED (RFC 9000 §19.12).
    pub const DATA_BLOCKED: u64 = 0x14;
    /// STREAM_DATA_BLOCKED (RFC 9000 §19.13).
    pub const STREAM_DATA_BLOCKED: u64 = 0x15;
    /// STREAMS_BLOCKED for bidirectional streams (RFC 9000 §19.14).
    pub const STREAMS_BLOCKED_BIDI: u64 = 0x16;
    /// STREAMS_BLOCKED for unidirectional streams (RFC 9000 §19.14).
    pub const STREAMS_BLOCKED_UNI: u64 = 0x17;
    /// NEW_CONNECTION_ID (RFC 9000 §19.15).
    pub const NEW_CONNECTION_ID: u64 = 0x18;
    /// RETIRE_CONNECTION_ID (RFC 9000 §19.16).
    pub const RETIRE_CONNECTION_ID: u64 = 0x19;
    /// PATH_CHALLENGE (RFC 9000 §19.17).
    pub const PATH_CHALLENGE: u64 = 0x1a;
    /// PATH_RESPONSE (RFC 9000 §19.18).
    pub const PATH_RESPONSE: u64 = 0x1b;
    /// CONNECTION_CLOSE signalling a QUIC transport error (RFC 9000 §19.19).
    pub const CONNECTION_CLOSE: u64 = 0x1c;
    /// CONNECTION_CLOSE signalling an application error (RFC 9000 §19.19).
    pub const CONNECTION_CLOSE_APP: u64 = 0x1d;
    /// HANDSHAKE_DONE (RFC 9000 §19.20).
    pub const HANDSHAKE_DONE: u64 = 0x1e;
    /// DATAGRAM without a Length field (RFC 9221 §4). Parsed only with the `datagram`
    /// feature; otherwise it is an unknown type.
    pub const DATAGRAM: u64 = 0x30;
    /// DATAGRAM with a Length field (RFC 9221 §4).
    pub const DATAGRAM_LEN: u64 = 0x31;
}

use types::*;

/// RFC 9000 §19.11, §19.14: a stream count cannot exceed 2^60, since no stream ID above
/// 2^62 - 1 can be encoded.
pub const MAX_STREAM_COUNT: u64 = 1 << 60;

/// Which kind of streams a MAX_STREAMS or STREAMS_BLOCKED frame counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamDir {
    /// Bidirectional streams (types 0x12 and 0x16).
    Bidi,
    /// Unidirectional streams (types 0x13 and 0x17).
    Uni,
}

/// One QUIC frame, borrowing its variable-length fields from the packet payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A run of PADDING bytes (RFC 9000 §19.1), coalesced into one frame when parsed.
    Padding {
        /// Number of 0x00 bytes. Emitting `len: 0` writes nothing.
        len: usize,
    },
    /// PING (RFC 9000 §19.2).
    Ping,
    /// ACK (RFC 9000 §19.3), with or without ECN counts.
    Ack(Ack<'a>),
    /// RESET_STREAM (RFC 9000 §19.4).
    ResetStream {
        /// The stream being reset.
        stream_id: VarInt,
        /// Application protocol error code.
        error_code: VarInt,
        /// Final size of the stream in bytes.
        final_size: VarInt,
    },
    /// STOP_SENDING (RFC 9000 §19.5).
    StopSending {
        /// The stream being ignored.
        stream_id: VarInt,
        /// Application protocol error code.
        error_code: VarInt,
    },
    /// CRYPTO (RFC 9000 §19.6). `offset + data.len()` is below 2^62 after parsing.
    Crypto {
        /// Byte offset of `data` in the crypto stream of this encryption level.
        offset: VarInt,
        /// The handshake bytes.
        data: &'a [u8],
    },
    /// NEW_TOKEN (RFC 9000 §19.7). The token is never empty after parsing.
    NewToken {
        /// The opaque address-validation token.
        token: &'a [u8],
    },
    /// STREAM (RFC 9000 §19.8), types 0x08 to 0x0f. `offset + data.len()` is below 2^62
    /// after parsing.
    Stream {
        /// The stream.
        stream_id: VarInt,
        /// Byte offset of `data` in the stream. Emitted (OFF bit) only when non-zero.
        offset: VarInt,
        /// The stream bytes.
        data: &'a [u8],
        /// The FIN bit: `data` ends the stream.
        fin: bool,
        /// The LEN bit: a Length field precedes the data. Without it the data runs to the
        /// end of the packet, so such a frame must be the last one emitted.
        has_length: bool,
    },
    /// MAX_DATA (RFC 9000 §19.9).
    MaxData {
        /// Maximum bytes the peer may send on the whole connection.
        max: VarInt,
    },
    /// MAX_STREAM_DATA (RFC 9000 §19.10).
    MaxStreamData {
        /// The stream.
        stream_id: VarInt,
        /// Maximum bytes the peer may send on the stream.
        max: VarInt,
    },
    /// MAX_STREAMS (RFC 9000 §19.11). `max` is at most 2^60 after parsing.
    MaxStreams {
        /// Which streams the limit applies to.
        dir: StreamDir,
        /// Cumulative number of streams the peer may open.
        max: VarInt,
    },
    /// DATA_BLOCKED (RFC 9000 §19.12).
    DataBlocked {
        /// The connection-level limit at which the sender is blocked.
        limit: VarInt,
    },
    /// STREAM_DATA_BLOCKED (RFC 9000 §19.13).
    StreamDataBlocked {
        /// The blocked stream.
        stream_id: VarInt,
        /// The stream-level limit at which the sender is blocked.
        limit: VarInt,
    },
    /// STREAMS_BLOCKED (RFC 9000 §19.14). `limit` is at most 2^60 after parsing.
    StreamsBlocked {
        /// Which streams the sender is blocked from opening.
        dir: StreamDir,
        /// The stream limit at the time the frame was sent.
        limit: VarInt,
    },
    /// NEW_CONNECTION_ID (RFC 9000 §19.15). After parsing, `cid` is 1 to 20 bytes and
    /// `retire_prior_to <= sequence`.
    NewConnectionId {
        /// Sequence number assigned to `cid`.
        sequence: VarInt,
        /// Connection IDs with lower sequence numbers should be retired.
        retire_prior_to: VarInt,
        /// The new connection ID.
        cid: ConnectionId,
        /// Stateless reset token for `cid` (RFC 9000 §10.3).
        reset_token: [u8; 16],
    },
    /// RETIRE_CONNECTION_ID (RFC 9000 §19.16).
    RetireConnectionId {
        /// Sequence number of the connection ID being retired.
        sequence: VarInt,
    },
    /// PATH_CHALLENGE (RFC 9000 §19.17).
    PathChallenge {
        /// Arbitrary data to be echoed.
        data: [u8; 8],
    },
    /// PATH_RESPONSE (RFC 9000 §19.18).
    PathResponse {
        /// The echoed PATH_CHALLENGE data.
        data: [u8; 8],
    },
    /// CONNECTION_CLOSE of type 0x1c: a QUIC transport error (RFC 9000 §19.19).
    ConnectionClose {
        /// Transport error code (RFC 9000 §20.1).
        error_code: VarInt,
        /// Type of the frame that triggered the error, or 0 when unknown.
        frame_type: VarInt,
        /// Reason phrase, nominally UTF-8 but not checked.
        reason: &'a [u8],
    },
    /// CONNECTION_CLOSE of type 0x1d: an application error (RFC 9000 §19.19).
    ApplicationClose {
        /// Application protocol error code.
        error_code: VarInt,
        /// Reason phrase, nominally UTF-8 but not checked.
        reason: &'a [u8],
    },
    /// HANDSHAKE_DONE (RFC 9000 §19.20).
    HandshakeDone,
    /// DATAGRAM (RFC 9221 §4), types 0x30 and 0x31.
    #[cfg(feature = "datagram")]
    Datagram {
        /// The application datagram.
        data: &'a [u8],
        /// Type 0x31: a Length field precedes the data. Without it the data runs to the
        /// end of the packet, so such a frame must be the last one emitted.
        has_length: bool,
    },
}

/// Reads a frame type and checks it is known and minimally encoded.
// RFC 9000 §12.4: unknown frame types are a FRAME_ENCODING_ERROR; frame types MUST use
// their shortest encoding, and a receiver MAY treat a longer one as PROTOCOL_VIOLATION.
fn read_type(r: &mut Reader<'_>) -> Result<u64, WireError> {
    let before = r.remaining();
    let ty = r.varint_u64()?;
    if !is_known(ty) {
        return Err(WireError::UnknownFrameType(ty));
    }
    // Every known type is below 64, so its shortest encoding is one byte.
    const _: () = assert!(HANDSHAKE_DONE < 64 && DATAGRAM_LEN < 64);
    if before.saturating_sub(r.remaining()) != 1 {
        return Err(WireError::NonMinimalFrameType(ty));
    }
    Ok(ty)
}

/// Reads a frame type as [`read_type`] does and checks it against the permission table of
/// `packet` before anything of the frame's body is read.
pub(crate) fn read_permitted_type(
    r: &mut Reader<'_>,
    packet: PacketType,
) -> Result<u64, WireError> {
    let ty = read_type(r)?;
    // RFC 9000 §12.4: a frame in a packet type that may not carry it is a
    // PROTOCOL_VIOLATION.
    if !permitted_known(ty, packet) {
        return Err(WireError::FrameNotPermitted(ty));
    }
    Ok(ty)
}

/// RFC 9000 §19.6, §19.8: offset + length must not exceed 2^62 - 1 (FRAME_ENCODING_ERROR).
fn check_end(ty: u64, offset: VarInt, len: usize) -> Result<(), WireError> {
    match offset.into_inner().checked_add(len as u64) {
        Some(end) if end <= VarInt::MAX.into_inner() => Ok(()),
        _ => Err(WireError::FrameLimit(ty)),
    }
}

/// RFC 9000 §19.11, §19.14: a stream count above 2^60 is a FRAME_ENCODING_ERROR.
fn check_count(ty: u64, count: VarInt) -> Result<VarInt, WireError> {
    if count.into_inner() > MAX_STREAM_COUNT {
        return Err(WireError::FrameLimit(ty));
    }
    Ok(count)
}

pub(crate) const fn dir_of(ty: u64) -> StreamDir {
    if ty & 1 == 0 {
        StreamDir::Bidi
    } else {
        StreamDir::Uni
    }
}

const fn vlen(v: VarInt) -> usize {
    v.size()
}

/// The body of a stream or flow-control frame (RFC 9000 §19.4, §19.5, §19.8–§19.14) after
/// its type, as its fields: up to three varints in the order they are sent (STREAM: Stream
/// ID and Offset, 0 without the OFF bit) and STREAM's data (empty for the others). One
/// loop reads the varints of every type. RFC 9000 §19.8: STREAM data ending past 2^62 - 1,
/// §19.11, §19.14: a stream count above 2^60 are FRAME_ENCODING_ERRORs. The one parser of
/// these bodies: [`Frame::parse_stream_body`] builds its `Frame` from the fields, a device
/// connection acts on them directly.
///
/// A device connection reads six more bodies through the same loop (one inlined parser
/// instead of one per frame type, its layout from a table): CRYPTO (§19.6: its Offset in
/// `v[1]`, where STREAM's is, and its data; offset + length past 2^62 - 1 is a FRAME_ENCODING_ERROR), NEW_TOKEN
/// (§19.7: the token as data; empty is a FRAME_ENCODING_ERROR), RETIRE_CONNECTION_ID
/// (§19.16: `v[0]`), PATH_CHALLENGE and PATH_RESPONSE (§19.17, §19.18: the 8 bytes as
/// data), CONNECTION_CLOSE (§19.19: Error Code, Frame Type of a 0x1c, the reason as data),
/// NEW_CONNECTION_ID (§19.15: Sequence Number, Retire Prior To, the connection ID followed
/// by its 16-byte Stateless Reset Token as data; Retire Prior To above Sequence Number or
/// a Length outside 1..=20 is a FRAME_ENCODING_ERROR).
pub(crate) fn read_fields<'a>(
    ty: u64,
    r: &mut Reader<'a>,
) -> Result<([VarInt; 3], &'a [u8]), WireError> {
    // One table lookup instead of a comparison chain per step (`layout`).
    let l = if ty < 32 { LAYOUTS.get(ty as usize).copied().unwrap_or(0) } else { 0 };
    if l == 0 {
        return Err(WireError::UnknownFrameType(ty));
    }
    let mut v = [VarInt::ZERO; 3];
    let first = usize::from(l & L_SKIP != 0);
    for x in v.iter_mut().skip(first).take(usize::from(l & L_VARINTS)) {
        *x = r.varint()?;
    }
    let data: &'a [u8] = match l & L_DATA {
        D_PREFIXED => r.varint_prefixed()?,
        D_EIGHT => r.bytes(8)?,
        D_REST => r.rest(),
        D_CID => {
            // Retire Prior To greater than Sequence Number, Length below 1 or above 20:
            // FRAME_ENCODING_ERROR.
            let len = if v[1] > v[0] { 0 } else { usize::from(r.u8()?) };
            if len == 0 || len > MAX_CID_LEN {
                return Err(WireError::InvalidFrame(ty));
            }
            r.bytes(len + 16)?
        }
        _ => &[],
    };
    match l & L_CHECK {
        C_END => check_end(ty, v[1], data.len())?,
        C_COUNT => {
            check_count(ty, v[0])?;
        }
        C_NON_EMPTY if data.is_empty() => return Err(WireError::InvalidFrame(ty)),
        _ => {}
    }
    Ok((v, data))
}

/// [`read_fields`]'s layout of a frame body, one byte per type below 32 (0: not one it
/// reads; every other has a varint or data): the number of varints, whether they start at
/// `v[1]`, the data that follows, the check on them.
const L_VARINTS: u8 = 0x03;
const L_SKIP: u8 = 0x04;
const L_DATA: u8 = 0x38;
const D_PREFIXED: u8 = 0x08;
const D_EIGHT: u8 = 0x10;
const D_REST: u8 = 0x18;
/// NEW_CONNECTION_ID's Length (8), Connection ID and Stateless Reset Token (128), with
/// its checks.
const D_CID: u8 = 0x20;
const L_CHECK: u8 = 0xc0;
const C_END: u8 = 0x40;
const C_COUNT: u8 = 0x80;
const C_NON_EMPTY: u8 = 0xc0;

const fn layout(ty: u64) -> u8 {
    match ty {
        // Stream ID, Application Protocol Error Code, Final Size.
        RESET_STREAM => 3,
        STOP_SENDING | MAX_STREAM_DATA | STREAM_DATA_BLOCKED => 2,
        MAX_DATA | DATA_BLOCKED | RETIRE_CONNECTION_ID => 1,
        MAX_STREAMS_BIDI | MAX_STREAMS_UNI | STREAMS_BLOCKED_BIDI | STREAMS_BLOCKED_UNI => {
            1 | C_COUNT
        }
        // Stream ID, [Offset], then Length-prefixed data or the rest of the packet.
        STREAM..=STREAM_MAX => {
            let offset = if ty & STREAM_OFF != 0 { 1 } else { 0 };
            let data = if ty & STREAM_LEN != 0 { D_PREFIXED } else { D_REST };
            (1 + offset) | data | C_END
        }
        // Offset (in v[1], where STREAM's is), Length-prefixed data.
        CRYPTO => 1 | L_SKIP | D_PREFIXED | C_END,
        NEW_TOKEN => D_PREFIXED | C_NON_EMPTY,
        PATH_CHALLENGE | PATH_RESPONSE => D_EIGHT,
        // Error Code, Frame Type, Reason Phrase.
        CONNECTION_CLOSE => 2 | D_PREFIXED,
        CONNECTION_CLOSE_APP => 1 | D_PREFIXED,
        // Sequence Number, Retire Prior To, then the connection ID and its token.
        NEW_CONNECTION_ID => 2 | D_CID,
        _ => 0,
    }
}

const LAYOUTS: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = layout(i as u64);
        i += 1;
    }
    t
};

/// RFC 9000 §19.1: skips the 0x00 bytes after a PADDING type (a run is one frame here);
/// returns how many.
pub(crate) fn skip_padding(r: &mut Reader<'_>) -> usize {
    let zeros = r.peek_rest().iter().take_while(|b| **b == 0).count();
    // The bytes were just counted in what is left: this cannot fail.
    let _ = r.bytes(zeros);
    zeros
}

/// RFC 9000 §19.6: CRYPTO Frame { Type (i) = 0x06, Offset (i), Length (i), Crypto Data (..) }
/// after its type; offset + length must stay below 2^62 (FRAME_ENCODING_ERROR).
pub(crate) fn read_crypto<'a>(r: &mut Reader<'a>) -> Result<(VarInt, &'a [u8]), WireError> {
    let offset = r.varint()?;
    let data = r.varint_prefixed()?;
    check_end(CRYPTO, offset, data.len())?;
    Ok((offset, data))
}

/// RFC 9000 §19.7: NEW_TOKEN Frame { Type (i) = 0x07, Token Length (i), Token (..) } after
/// its type; an empty token is a FRAME_ENCODING_ERROR.
pub(crate) fn read_new_token<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], WireError> {
    let token = r.varint_prefixed()?;
    if token.is_empty() {
        return Err(WireError::InvalidFrame(NEW_TOKEN));
    }
    Ok(token)
}

/// A NEW_CONNECTION_ID frame's fields, borrowed from the packet: (sequence, retire prior
/// to, connection ID, stateless reset token).
pub(crate) type NewCid<'a> = (VarInt, VarInt, &'a [u8], &'a [u8; 16]);

/// RFC 9000 §19.15: NEW_CONNECTION_ID Frame { Type (i) = 0x18, Sequence Number (i), Retire
/// Prior To (i), Length (8), Connection ID (8..160), Stateless Reset Token (128) } after its
/// type: (sequence, retire prior to, connection ID, reset token).
pub(crate) fn read_new_connection_id<'a>(r: &mut Reader<'a>) -> Result<NewCid<'a>, WireError> {
    let ty = NEW_CONNECTION_ID;
    let sequence = r.varint()?;
    let retire_prior_to = r.varint()?;
    // Retire Prior To greater than Sequence Number: FRAME_ENCODING_ERROR.
    if retire_prior_to > sequence {
        return Err(WireError::InvalidFrame(ty));
    }
    // Length below 1 or above 20: FRAME_ENCODING_ERROR.
    let len = usize::from(r.u8()?);
    if len == 0 || len > MAX_CID_LEN {
        return Err(WireError::InvalidFrame(ty));
    }
    let cid = r.bytes(len)?;
    let reset_token = r.bytes(16)?.try_into().map_err(|_| WireError::Truncated)?;
    Ok((sequence, retire_prior_to, cid, reset_token))
}

/// RFC 9000 §19.19: CONNECTION_CLOSE Frame { Type (i) = 0x1c..0x1d, Error Code (i), [Frame
/// Type (i)], Reason Phrase Length (i), Reason Phrase (..) } after its type `ty`: (error
/// code, the frame type of a 0x1c, reason).
pub(crate) fn read_close<'a>(
    ty: u64,
    r: &mut Reader<'a>,
) -> Result<(VarInt, Option<VarInt>, &'a [u8]), WireError> {
    let error_code = r.varint()?;
    let frame_type = if ty == CONNECTION_CLOSE { Some(r.varint()?) } else { None };
    Ok((error_code, frame_type, r.varint_prefixed()?))
}

impl<'a> Frame<'a> {
    /// Parses one frame from the front of `r`, type included. Does not apply the packet-type
    /// permission table: [`Frames`] does.
    ///
    /// A PADDING byte swallows every 0x00 byte after it. STREAM without LEN and DATAGRAM
    /// type 0x30 consume the rest of `r`.
    pub fn parse(r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
        let ty = read_type(r)?;
        Self::parse_body(ty, r)
    }

    /// Parses the fields after a known, already-read frame type `ty`.
    fn parse_body(ty: u64, r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
        let frame = match ty {
            // RFC 9000 §19.1: PADDING Frame { Type (i) = 0x00 }. A run is one frame here.
            PADDING => Frame::Padding { len: skip_padding(r).saturating_add(1) },
            // RFC 9000 §19.2: PING Frame { Type (i) = 0x01 }
            PING => Frame::Ping,
            // RFC 9000 §19.3 (in ack.rs).
            ACK | ACK_ECN => Frame::Ack(Ack::parse_body(ty, r)?),
            CRYPTO => {
                let (offset, data) = read_crypto(r)?;
                Frame::Crypto { offset, data }
            }
            NEW_TOKEN => Frame::NewToken { token: read_new_token(r)? },
            NEW_CONNECTION_ID => {
                let (sequence, retire_prior_to, cid, reset_token) = read_new_connection_id(r)?;
                let cid = ConnectionId::new(cid).ok_or(WireError::InvalidFrame(ty))?;
                Frame::NewConnectionId { sequence, retire_prior_to, cid, reset_token: *reset_token }
            }
            // RFC 9000 §19.16: RETIRE_CONNECTION_ID Frame { Type (i) = 0x19,
            //   Sequence Number (i) }
            RETIRE_CONNECTION_ID => Frame::RetireConnectionId { sequence: r.varint()? },
            // RFC 9000 §19.17: PATH_CHALLENGE Frame { Type (i) = 0x1a, Data (64) }
            PATH_CHALLENGE => Frame::PathChallenge { data: r.array()? },
            // RFC 9000 §19.18: PATH_RESPONSE Frame { Type (i) = 0x1b, Data (64) }
            PATH_RESPONSE => Frame::PathResponse { data: r.array()? },
            CONNECTION_CLOSE | CONNECTION_CLOSE_APP => match read_close(ty, r)? {
                (error_code, Some(frame_type), reason) => {
                    Frame::ConnectionClose { error_code, frame_type, reason }
                }
                (error_code, None, reason) => Frame::ApplicationClose { error_code, reason },
            },
            // RFC 9000 §19.20: HANDSHAKE_DONE Frame { Type (i) = 0x1e }
            HANDSHAKE_DONE => Frame::HandshakeDone,
            // RFC 9221 §4: DATAGRAM Frame { Type (i) = 0x30..0x31, [Length (i)],
            //   Datagram Data (..) }
            #[cfg(feature = "datagram")]
            DATAGRAM => Frame::Datagram { data: r.rest(), has_length: false },
            #[cfg(feature = "datagram")]
            DATAGRAM_LEN => Frame::Datagram { data: r.varint_prefixed()?, has_length: true },
            _ => return Self::parse_stream_body(ty, r),
        };
        Ok(frame)
    }

    /// Parses the fields of a stream or flow-control frame (RFC 9000 §19.4, §19.5,
    /// §19.8–§19.14) after its already-read type `ty`: the frames
    /// [`crate::stream::Streams::on_frame`] takes; callers pass no other type (the six
    /// device-only bodies [`read_fields`] also reads give [`WireError::UnknownFrameType`]
    /// here after being read, as does any other type).
    pub(crate) fn parse_stream_body(ty: u64, r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
        let ([a, b, c], data) = read_fields(ty, r)?;
        let frame = match ty {
            // RFC 9000 §19.4: RESET_STREAM Frame { Type (i) = 0x04, Stream ID (i),
            //   Application Protocol Error Code (i), Final Size (i) }
            RESET_STREAM => Frame::ResetStream { stream_id: a, error_code: b, final_size: c },
            // RFC 9000 §19.5: STOP_SENDING Frame { Type (i) = 0x05, Stream ID (i),
            //   Application Protocol Error Code (i) }
            STOP_SENDING => Frame::StopSending { stream_id: a, error_code: b },
            // RFC 9000 §19.8: STREAM Frame { Type (i) = 0x08..0x0f, Stream ID (i),
            //   [Offset (i)], [Length (i)], Stream Data (..) }; offset + length must stay
            //   below 2^62.
            STREAM..=STREAM_MAX => Frame::Stream {
                stream_id: a,
                offset: b,
                data,
                fin: ty & STREAM_FIN != 0,
                has_length: ty & STREAM_LEN != 0,
            },
            // RFC 9000 §19.9: MAX_DATA Frame { Type (i) = 0x10, Maximum Data (i) }
            MAX_DATA => Frame::MaxData { max: a },
            // RFC 9000 §19.10: MAX_STREAM_DATA Frame { Type (i) = 0x11, Stream ID (i),
            //   Maximum Stream Data (i) }
            MAX_STREAM_DATA => Frame::MaxStreamData { stream_id: a, max: b },
            // RFC 9000 §19.11: MAX_STREAMS Frame { Type (i) = 0x12..0x13,
            //   Maximum Streams (i) }; above 2^60 is a FRAME_ENCODING_ERROR.
            MAX_STREAMS_BIDI | MAX_STREAMS_UNI => Frame::MaxStreams { dir: dir_of(ty), max: a },
            // RFC 9000 §19.12: DATA_BLOCKED Frame { Type (i) = 0x14, Maximum Data (i) }
            DATA_BLOCKED => Frame::DataBlocked { limit: a },
            // RFC 9000 §19.13: STREAM_DATA_BLOCKED Frame { Type (i) = 0x15, Stream ID (i),
            //   Maximum Stream Data (i) }
            STREAM_DATA_BLOCKED => Frame::StreamDataBlocked { stream_id: a, limit: b },
            // RFC 9000 §19.14: STREAMS_BLOCKED Frame { Type (i) = 0x16..0x17,
            //   Maximum Streams (i) }; above 2^60 is a FRAME_ENCODING_ERROR.
            STREAMS_BLOCKED_BIDI | STREAMS_BLOCKED_UNI => {
                Frame::StreamsBlocked { dir: dir_of(ty), limit: a }
            }
            _ => return Err(WireError::UnknownFrameType(ty)),
        };
        Ok(frame)
    }

    /// The frame type this frame is emitted with. For STREAM the OFF bit is set only for a
    /// non-zero offset, so a received 0x0c with offset 0 reports 0x08.
    pub fn frame_type(&self) -> u64 {
        match self {
            Frame::Padding { .. } => PADDING,
            Frame::Ping => PING,
            Frame::Ack(ack) => ack.frame_type(),
            Frame::ResetStream { .. } => RESET_STREAM,
            Frame::StopSending { .. } => STOP_SENDING,
            Frame::Crypto { .. } => CRYPTO,
            Frame::NewToken { .. } => NEW_TOKEN,
            Frame::Stream { offset, fin, has_length, .. } => {
                let mut ty = STREAM;
                if offset.into_inner() != 0 {
                    ty |= STREAM_OFF;
                }
                if *has_length {
                    ty |= STREAM_LEN;
                }
                if *fin {
                    ty |= STREAM_FIN;
                }
                ty
            }
            Frame::MaxData { .. } => MAX_DATA,
            Frame::MaxStreamData { .. } => MAX_STREAM_DATA,
            Frame::MaxStreams { dir: StreamDir::Bidi, .. } => MAX_STREAMS_BIDI,
            Frame::MaxStreams { dir: StreamDir::Uni, .. } => MAX_STREAMS_UNI,
            Frame::DataBlocked { .. } => DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => STREAM_DATA_BLOCKED,
            Frame::StreamsBlocked { dir: StreamDir::Bidi, .. } => STREAMS_BLOCKED_BIDI,
            Frame::StreamsBlocked { dir: StreamDir::Uni, .. } => STREAMS_BLOCKED_UNI,
            Frame::NewConnectionId { .. } => NEW_CONNECTION_ID,
            Frame::RetireConnectionId { .. } => RETIRE_CONNECTION_ID,
            Frame::PathChallenge { .. } => PATH_CHALLENGE,
            Frame::PathResponse { .. } => PATH_RESPONSE,
            Frame::ConnectionClose { .. } => CONNECTION_CLOSE,
            Frame::ApplicationClose { .. } => CONNECTION_CLOSE_APP,
            Frame::HandshakeDone => HANDSHAKE_DONE,
            #[cfg(feature = "datagram")]
            Frame::Datagram { has_length: false, .. } => DATAGRAM,
            #[cfg(feature = "datagram")]
            Frame::Datagram { has_length: true, .. } => DATAGRAM_LEN,
        }
    }

    /// True if this frame makes its packet ack-eliciting (RFC 9000 §13.2): anything but
    /// ACK, PADDING and CONNECTION_CLOSE.
    pub fn is_ack_eliciting(&self) -> bool {
        is_ack_eliciting(self.frame_type())
    }

    /// True for a probing frame (RFC 9000 §9.1): PATH_CHALLENGE, PATH_RESPONSE,
    /// NEW_CONNECTION_ID or PADDING.
    pub fn is_probing(&self) -> bool {
        is_probing(self.frame_type())
    }

    /// Bytes [`Frame::emit`] writes.
    pub fn encoded_len(&self) -> usize {
        // Every frame type defined so far encodes in one byte.
        let body = match self {
            Frame::Padding { len } => return *len,
            Frame::Ping | Frame::HandshakeDone => 0,
            Frame::Ack(ack) => return ack.encoded_len(),
            Frame::ResetStream { stream_id, error_code, final_size } => {
                vlen(*stream_id) + vlen(*error_code) + vlen(*final_size)
            }
            Frame::StopSending { stream_id, error_code } => vlen(*stream_id) + vlen(*error_code),
            Frame::Crypto { offset, data } => vlen(*offset) + prefixed_len(data),
            Frame::NewToken { token } => prefixed_len(token),
            Frame::Stream { stream_id, offset, data, has_length, .. } => {
                let off = if offset.into_inner() != 0 { vlen(*offset) } else { 0 };
                let data = if *has_length { prefixed_len(data) } else { data.len() };
                vlen(*stream_id) + off + data
            }
            Frame::MaxData { max } => vlen(*max),
            Frame::MaxStreamData { stream_id, max } => vlen(*stream_id) + vlen(*max),
            Frame::MaxStreams { max, .. } => vlen(*max),
            Frame::DataBlocked { limit } => vlen(*limit),
            Frame::StreamDataBlocked { stream_id, limit } => vlen(*stream_id) + vlen(*limit),
            Frame::StreamsBlocked { limit, .. } => vlen(*limit),
            Frame::NewConnectionId { sequence, retire_prior_to, cid, reset_token } => {
                vlen(*sequence) + vlen(*retire_prior_to) + 1 + cid.len() + reset_token.len()
            }
            Frame::RetireConnectionId { sequence } => vlen(*sequence),
            Frame::PathChallenge { data } | Frame::PathResponse { data } => data.len(),
            Frame::ConnectionClose { error_code, frame_type, reason } => {
                vlen(*error_code) + vlen(*frame_type) + prefixed_len(reason)
            }
            Frame::ApplicationClose { error_code, reason } => {
                vlen(*error_code) + prefixed_len(reason)
            }
            #[cfg(feature = "datagram")]
            Frame::Datagram { data, has_length } => {
                if *has_length {
                    prefixed_len(data)
                } else {
                    data.len()
                }
            }
        };
        encoded_size(self.frame_type()) + body
    }

    /// Writes the whole frame or nothing: true if it fit. The send path's one frame
    /// writer — no separate size computation, a partial frame is rewound.
    pub fn emit_whole(&self, w: &mut Writer<'_>) -> bool {
        let start = w.position();
        let fit = self.emit(w).is_ok();
        if !fit {
            w.rewind(start);
        }
        fit
    }

    /// Writes the frame, type included. On error the writer may hold part of the frame;
    /// check [`Frame::encoded_len`] against [`Writer::remaining`] first to avoid that, or
    /// use [`Frame::emit_whole`].
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<(), BufferTooSmall> {
        match self {
            Frame::Padding { len } => return w.put_repeated(0, *len),
            Frame::Ack(ack) => return ack.emit(w),
            _ => {}
        }
        w.put_varint_u64(self.frame_type())?;
        match self {
            Frame::Padding { .. } | Frame::Ack(_) | Frame::Ping | Frame::HandshakeDone => {}
            Frame::ResetStream { stream_id, error_code, final_size } => {
                w.put_varint(*stream_id)?;
                w.put_varint(*error_code)?;
                w.put_varint(*final_size)?;
            }
            Frame::StopSending { stream_id, error_code } => {
                w.put_varint(*stream_id)?;
                w.put_varint(*error_code)?;
            }
            Frame::Crypto { offset, data } => {
                w.put_varint(*offset)?;
                put_prefixed(w, data)?;
            }
            Frame::NewToken { token } => put_prefixed(w, token)?,
            Frame::Stream { stream_id, offset, data, has_length, .. } => {
                w.put_varint(*stream_id)?;
                if offset.into_inner() != 0 {
                    w.put_varint(*offset)?;
                }
                if *has_length {
                    put_prefixed(w, data)?;
                } else {
                    w.put_slice(data)?;
                }
            }
            Frame::MaxData { max } => w.put_varint(*max)?,
            Frame::MaxStreamData { stream_id, max } => {
                w.put_varint(*stream_id)?;
                w.put_varint(*max)?;
            }
            Frame::MaxStreams { max, .. } => w.put_varint(*max)?,
            Frame::DataBlocked { limit } => w.put_varint(*limit)?,
            Frame::StreamDataBlocked { stream_id, limit } => {
                w.put_varint(*stream_id)?;
                w.put_varint(*limit)?;
            }
            Frame::StreamsBlocked { limit, .. } => w.put_varint(*limit)?,
            Frame::NewConnectionId { sequence, retire_prior_to, cid, reset_token } => {
                w.put_varint(*sequence)?;
                w.put_varint(*retire_prior_to)?;
                // A ConnectionId holds at most 20 bytes, so its length fits a byte.
                w.put_u8(cid.len() as u8)?;
                w.put_slice(cid)?;
                w.put_slice(reset_token)?;
            }
            Frame::RetireConnectionId { sequence } => w.put_varint(*sequence)?,
            Frame::PathChallenge { data } | Frame::PathResponse { data } => w.put_slice(data)?,
            Frame::ConnectionClose { error_code, frame_type, reason } => {
                w.put_varint(*error_code)?;
                w.put_varint(*frame_type)?;
                put_prefixed(w, reason)?;
            }
            Frame::ApplicationClose { error_code, reason } => {
                w.put_varint(*error_code)?;
                put_prefixed(w, reason)?;
            }
            #[cfg(feature = "datagram")]
            Frame::Datagram { data, has_length } => {
                if *has_length {
                    put_prefixed(w, data)?;
                } else {
                    w.put_slice(data)?;
                }
            }
        }
        Ok(())
    }
}

/// Length of a varint length prefix plus the bytes it announces.
fn prefixed_len(data: &[u8]) -> usize {
    encoded_size(data.len() as u64) + data.len()
}

/// Writes a varint length prefix and then `data`.
fn put_prefixed(w: &mut Writer<'_>, data: &[u8]) -> Result<(), BufferTooSmall> {
    w.put_varint_u64(data.len() as u64)?;
    w.put_slice(data)
}

/// Iterator over the frames of a decrypted packet payload, applying the permission table
/// for its packet type (RFC 9000 §12.4).
///
/// Yields `Err` at most once and then ends: [`WireError::EmptyPacket`] for an empty payload,
/// [`WireError::FrameNotPermitted`] for a frame the packet type may not carry (checked
/// before the frame's body is parsed), or whatever [`Frame::parse`] reports. Every `Ok`
/// consumes at least one byte, so the iteration ends after at most `payload.len()` frames.
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    r: Reader<'a>,
    packet: PacketType,
    done: bool,
}

impl<'a> Frames<'a> {
    /// Iterates over `payload`, the plaintext of a packet of type `packet`.
    pub const fn new(payload: &'a [u8], packet: PacketType) -> Self {
        Self { r: Reader::new(payload), packet, done: false }
    }

    /// The packet type whose permission table applies.
    pub const fn packet_type(&self) -> PacketType {
        self.packet
    }

    /// Payload bytes consumed so far.
    pub const fn position(&self) -> usize {
        self.r.position()
    }

    fn next_frame(&mut self) -> Result<Frame<'a>, WireError> {
        let ty = read_permitted_type(&mut self.r, self.packet)?;
        Frame::parse_body(ty, &mut self.r)
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // Every frame consumes at least one byte: nothing read yet means the first call.
        let first = self.r.position() == 0;
        if self.r.is_empty() {
            self.done = true;
            // RFC 9000 §12.4: a packet containing no frames is a PROTOCOL_VIOLATION.
            return if first { Some(Err(WireError::EmptyPacket)) } else { None };
        }
        let item = self.next_frame();
        if item.is_err() {
            self.done = true;
        }
        Some(item)
    }
}

impl core::iter::FusedIterator for Frames<'_> {}
