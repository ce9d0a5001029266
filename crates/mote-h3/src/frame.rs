//! HTTP/3 frames (RFC 9114 §7), unidirectional stream types (§6.2) and SETTINGS (§7.2.4).
//!
//! [`FrameReader`] parses the frames of one stream as its bytes arrive. It never buffers
//! and never reserves memory from a declared length (the CVE-2025-64702 / CVE-2026-40898 /
//! CVE-2026-12523 class): DATA payloads are handed through in whatever pieces arrive;
//! reserved and unknown frames are skipped piece by piece; every other frame is handed
//! over only once its whole payload is present in the caller's input, and its declared
//! length is checked against a small limit (SETTINGS, GOAWAY, ...) or the caller's field
//! section limit (HEADERS, PUSH_PROMISE) as soon as the frame header is read. A frame
//! header or frame that is not complete is not consumed: the caller keeps the bytes and
//! presents them again with more appended.

use crate::coding::{decode_varint, take_varint, varint_size, Out};
use crate::error::{BufferTooSmall, H3Error};

/// Frame types (RFC 9114 §7.2, §11.2.1).
pub mod frame_type {
    /// DATA (§7.2.1).
    pub const DATA: u64 = 0x00;
    /// HEADERS (§7.2.2).
    pub const HEADERS: u64 = 0x01;
    /// CANCEL_PUSH (§7.2.3).
    pub const CANCEL_PUSH: u64 = 0x03;
    /// SETTINGS (§7.2.4).
    pub const SETTINGS: u64 = 0x04;
    /// PUSH_PROMISE (§7.2.5).
    pub const PUSH_PROMISE: u64 = 0x05;
    /// GOAWAY (§7.2.6).
    pub const GOAWAY: u64 = 0x07;
    /// MAX_PUSH_ID (§7.2.7).
    pub const MAX_PUSH_ID: u64 = 0x0d;

    /// True for the HTTP/2 frame types with no HTTP/3 equivalent (PRIORITY, PING,
    /// WINDOW_UPDATE, CONTINUATION): receiving one is H3_FRAME_UNEXPECTED (§7.2.8).
    pub const fn is_http2_only(ty: u64) -> bool {
        matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
    }
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub mod stream_type {
    /// The control stream (§6.2.1).
    pub const CONTROL: u64 = 0x00;
    /// A push stream (§6.2.2).
    pub const PUSH: u64 = 0x01;
    /// The QPACK encoder stream.
    pub const QPACK_ENCODER: u64 = 0x02;
    /// The QPACK decoder stream.
    pub const QPACK_DECODER: u64 = 0x03;
}

/// Setting identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub mod setting_id {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;

    /// True for the HTTP/2 setting identifiers with no HTTP/3 equivalent: receiving one is
    /// H3_SETTINGS_ERROR (§7.2.4.1).
    pub const fn is_http2_only(id: u64) -> bool {
        matches!(id, 0x02..=0x05)
    }
}

/// The `N`th reserved ("grease") identifier `0x1f * N + 0x21`, used for frame types,
/// stream types, settings and error codes (RFC 9114 §7.2.8, §6.2.3, §7.2.4.1, §8.1).
pub const fn grease_id(n: u32) -> u64 {
    0x1f * n as u64 + 0x21
}

/// The largest SETTINGS payload accepted. A SETTINGS frame with only the settings defined
/// today and a few unknown ones takes well under 100 bytes; a larger declared length is
/// H3_EXCESSIVE_LOAD before any byte of it is waited for.
pub const MAX_SETTINGS_LEN: u64 = 256;

/// The largest payload of the frames that hold a single varint (CANCEL_PUSH, GOAWAY,
/// MAX_PUSH_ID).
const MAX_VARINT_FRAME_LEN: u64 = 8;

/// A frame header: type and payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// The frame type.
    pub ty: u64,
    /// The declared payload length.
    pub len: u64,
}

impl FrameHeader {
    /// Parses the frame header at the start of `input`: the header and its encoded length,
    /// or `None` if `input` ends inside it.
    pub fn parse(input: &[u8]) -> Option<(Self, usize)> {
        let (ty, len, n) = two_varints(input)?;
        Some((Self { ty, len }, n))
    }
}

/// The two varints at the start of `input` (a frame header, a setting) and their encoded
/// length, or `None` if `input` ends inside them.
fn two_varints(input: &[u8]) -> Option<(u64, u64, usize)> {
    let (a, m) = decode_varint(input)?;
    let (b, n) = decode_varint(input.get(m..)?)?;
    Some((a, b, m + n))
}

/// SETTINGS values (RFC 9114 §7.2.4.1, RFC 9204 §5). Absent settings take their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Settings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY (default 0).
    pub qpack_max_table_capacity: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE (default: unlimited).
    pub max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_BLOCKED_STREAMS (default 0).
    pub qpack_blocked_streams: u64,
}

impl Settings {
    /// Parses a SETTINGS payload. A duplicate identifier or an HTTP/2-only identifier is
    /// H3_SETTINGS_ERROR; a truncated pair is H3_FRAME_ERROR. Unknown and reserved
    /// identifiers are ignored (RFC 9114 §7.2.4, §9).
    // Out of line: received once per connection, kept out of the device's receive loop.
    #[inline(never)]
    pub fn parse(payload: &[u8]) -> Result<Self, H3Error> {
        let mut s = Settings::default();
        Self::each(payload, |id, value| match id {
            setting_id::QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
            setting_id::MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
            setting_id::QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
            _ => {}
        })?;
        Ok(s)
    }

    /// Checks a SETTINGS payload as [`Settings::parse`] does and returns only its
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub fn parse_max_field_section_size(payload: &[u8]) -> Result<Option<u64>, H3Error> {
        let mut max = u64::MAX;
        Self::read_max_field_section_size(payload, &mut max)?;
        // No setting is 2^64 - 1 (a varint is below 2^62).
        Ok(Some(max).filter(|&m| m != u64::MAX))
    }

    /// Checks a SETTINGS payload as [`Settings::parse`] does and sets `max` to its
    /// SETTINGS_MAX_FIELD_SECTION_SIZE, if it has one (what a device-only build keeps; the
    /// result fits a register).
    #[inline(never)]
    pub(crate) fn read_max_field_section_size(
        payload: &[u8],
        max: &mut u64,
    ) -> Result<(), H3Error> {
        let mut rest = payload;
        while !rest.is_empty() {
            let (id, value, n) = two_varints(rest).ok_or(H3Error::FrameError)?;
            if setting_id::is_http2_only(id) {
                return Err(H3Error::SettingsError);
            }
            rest = rest.get(n..).unwrap_or(&[]);
            // A duplicate is found at its first occurrence, as `each` does (the later
            // pairs up to a truncated one are compared; the truncated one fails later).
            let mut later = rest;
            while let Some((other, _, m)) = two_varints(later) {
                if other == id {
                    return Err(H3Error::SettingsError);
                }
                later = later.get(m..).unwrap_or(&[]);
            }
            if id == setting_id::MAX_FIELD_SECTION_SIZE {
                *max = value;
            }
        }
        Ok(())
    }

    /// Checks a SETTINGS payload (see [`Settings::parse`]) and hands each pair to `f`.
    fn each(payload: &[u8], mut f: impl FnMut(u64, u64)) -> Result<(), H3Error> {
        let mut rest = payload;
        while !rest.is_empty() {
            let id = take_varint(&mut rest).ok_or(H3Error::FrameError)?;
            let value = take_varint(&mut rest).ok_or(H3Error::FrameError)?;
            if setting_id::is_http2_only(id) {
                return Err(H3Error::SettingsError);
            }
            // Duplicate check against the pairs after this one (a truncated last pair is
            // found when its turn comes). The payload is at most MAX_SETTINGS_LEN bytes, so
            // this stays small.
            let mut later = rest;
            while let (Some(lid), Some(_)) = (take_varint(&mut later), take_varint(&mut later)) {
                if lid == id {
                    return Err(H3Error::SettingsError);
                }
            }
            f(id, value);
        }
        Ok(())
    }

    /// Appends a SETTINGS frame: the non-default settings, then the reserved setting
    /// `grease_id(n)` with value `n` if `grease` is `Some(n)`.
    pub fn write_frame(
        &self,
        grease: Option<u32>,
        out: &mut Out<'_>,
    ) -> Result<(), BufferTooSmall> {
        // At most four pairs of two varints: the payload is written first, then framed.
        let mut payload = [0u8; 4 * 16];
        let mut p = Out::new(&mut payload);
        if self.qpack_max_table_capacity != 0 {
            p.put_varint(setting_id::QPACK_MAX_TABLE_CAPACITY)?;
            p.put_varint(self.qpack_max_table_capacity)?;
        }
        if let Some(v) = self.max_field_section_size {
            p.put_varint(setting_id::MAX_FIELD_SECTION_SIZE)?;
            p.put_varint(v)?;
        }
        if self.qpack_blocked_streams != 0 {
            p.put_varint(setting_id::QPACK_BLOCKED_STREAMS)?;
            p.put_varint(self.qpack_blocked_streams)?;
        }
        if let Some(g) = grease {
            p.put_varint(grease_id(g))?;
            p.put_varint(u64::from(g))?;
        }
        write_frame(frame_type::SETTINGS, p.written(), out)
    }
}

/// Appends a frame header.
pub fn write_frame_header(ty: u64, len: u64, out: &mut Out<'_>) -> Result<(), BufferTooSmall> {
    out.put_varint(ty)?;
    out.put_varint(len)
}

/// Appends a whole frame with a payload.
pub fn write_frame(ty: u64, payload: &[u8], out: &mut Out<'_>) -> Result<(), BufferTooSmall> {
    write_frame_header(ty, payload.len() as u64, out)?;
    out.put_slice(payload)
}

/// Appends a frame whose payload is a single varint (CANCEL_PUSH, GOAWAY, MAX_PUSH_ID).
pub fn write_varint_frame(ty: u64, v: u64, out: &mut Out<'_>) -> Result<(), BufferTooSmall> {
    write_frame_header(ty, varint_size(v) as u64, out)?;
    out.put_varint(v)
}

/// The kind of stream frames are read from, which decides the frames allowed
/// (RFC 9114 §7.2, Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A control stream: SETTINGS, CANCEL_PUSH, GOAWAY, MAX_PUSH_ID.
    Control,
    /// A request stream: DATA, HEADERS, PUSH_PROMISE.
    Request,
    /// A push stream: DATA, HEADERS.
    Push,
}

impl StreamKind {
    const fn rule_bit(self) -> u8 {
        match self {
            StreamKind::Control => rule::CONTROL,
            StreamKind::Request => rule::REQUEST,
            StreamKind::Push => rule::PUSH,
        }
    }
}

/// Bits of [`FRAME_RULES`].
pub(crate) mod rule {
    /// Allowed on a control stream.
    pub(crate) const CONTROL: u8 = 1;
    /// Allowed on a request stream.
    pub(crate) const REQUEST: u8 = 2;
    /// Allowed on a push stream.
    pub(crate) const PUSH: u8 = 4;
    /// A defined type (HTTP/2-only types have only this bit: allowed nowhere).
    pub(crate) const DEFINED: u8 = 8;
    /// Carries an encoded field section (bounded by the caller's limit).
    pub(crate) const FIELD_SECTION: u8 = 16;
}

/// RFC 9114 §7.2 Table 1 and §7.2.8, by frame type 0x00..=0x0d: where each may appear; 0
/// for the types with no meaning (reserved or unknown, skipped).
pub(crate) const FRAME_RULES: [u8; 14] = {
    use rule::{CONTROL, DEFINED, FIELD_SECTION, PUSH, REQUEST};
    [
        REQUEST | PUSH | DEFINED,                 // 0x00 DATA
        REQUEST | PUSH | DEFINED | FIELD_SECTION, // 0x01 HEADERS
        DEFINED,                                  // 0x02 PRIORITY (HTTP/2)
        CONTROL | DEFINED,                        // 0x03 CANCEL_PUSH
        CONTROL | DEFINED,                        // 0x04 SETTINGS
        REQUEST | DEFINED | FIELD_SECTION,        // 0x05 PUSH_PROMISE
        DEFINED,                                  // 0x06 PING (HTTP/2)
        CONTROL | DEFINED,                        // 0x07 GOAWAY
        DEFINED,                                  // 0x08 WINDOW_UPDATE (HTTP/2)
        DEFINED,                                  // 0x09 CONTINUATION (HTTP/2)
        0,
        0,
        0,
        CONTROL | DEFINED, // 0x0d MAX_PUSH_ID
    ]
};

/// A complete non-DATA frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// HEADERS: an encoded field section.
    Headers(&'a [u8]),
    /// PUSH_PROMISE: a push ID and an encoded field section.
    PushPromise {
        /// The push ID.
        push_id: u64,
        /// The encoded field section of the promised request.
        field_section: &'a [u8],
    },
    /// SETTINGS: the raw payload (at most `MAX_SETTINGS_LEN` bytes), checked and read by
    /// [`Settings::parse`] where it is used.
    Settings(&'a [u8]),
    /// GOAWAY with a stream ID (from a server) or push ID (from a client).
    GoAway(u64),
    /// MAX_PUSH_ID.
    MaxPushId(u64),
    /// CANCEL_PUSH.
    CancelPush(u64),
}

/// What [`FrameReader::read`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameEvent<'a> {
    /// Nothing complete: present the unconsumed bytes again with more appended.
    NeedMore,
    /// A DATA frame header with this payload length; its payload follows as `Data`.
    DataHeader(u64),
    /// A piece of DATA payload (never empty).
    Data(&'a [u8]),
    /// A complete frame.
    Frame(Frame<'a>),
    /// Bytes of a reserved or unknown frame were discarded.
    Skipped,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ReadState {
    /// At a frame boundary.
    #[default]
    Header,
    /// Inside a DATA payload with this many bytes left.
    Data(u64),
    /// Inside an unknown frame's payload with this many bytes left.
    Skip(u64),
}

/// Incremental frame parser for one stream (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameReader {
    state: ReadState,
}

fn single_varint(payload: &[u8]) -> Result<u64, H3Error> {
    match decode_varint(payload) {
        Some((v, n)) if n == payload.len() => Ok(v),
        _ => Err(H3Error::FrameError),
    }
}

impl FrameReader {
    /// A reader at the start of a stream.
    pub const fn new() -> Self {
        Self { state: ReadState::Header }
    }

    /// True at a frame boundary (a stream may only end here, RFC 9114 §7.1).
    pub fn is_idle(&self) -> bool {
        self.state == ReadState::Header
    }

    /// Reads from `input`, the stream's unconsumed bytes, and returns how many bytes were
    /// consumed and what they held. `max_field_section` limits the declared length of
    /// HEADERS and PUSH_PROMISE payloads. Errors: a frame not allowed on `kind` or an
    /// HTTP/2-only type is H3_FRAME_UNEXPECTED; an oversized HEADERS or SETTINGS is
    /// H3_EXCESSIVE_LOAD; a malformed payload is H3_FRAME_ERROR or H3_SETTINGS_ERROR.
    pub fn read<'a>(
        &mut self,
        input: &'a [u8],
        kind: StreamKind,
        max_field_section: u64,
    ) -> Result<(usize, FrameEvent<'a>), H3Error> {
        match self.state {
            ReadState::Data(left) | ReadState::Skip(left) => {
                let take = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                if take == 0 {
                    return Ok((0, FrameEvent::NeedMore));
                }
                let left = left - take as u64;
                let chunk = input.get(..take).unwrap_or(&[]);
                let data = matches!(self.state, ReadState::Data(_));
                self.state = match (left, data) {
                    (0, _) => ReadState::Header,
                    (l, true) => ReadState::Data(l),
                    (l, false) => ReadState::Skip(l),
                };
                Ok((take, if data { FrameEvent::Data(chunk) } else { FrameEvent::Skipped }))
            }
            ReadState::Header => {
                let Some((h, hlen)) = FrameHeader::parse(input) else {
                    return Ok((0, FrameEvent::NeedMore));
                };
                // RFC 9114 §7.2, Table 1: where each defined frame type may appear.
                let rule = usize::try_from(h.ty)
                    .ok()
                    .and_then(|t| FRAME_RULES.get(t))
                    .copied()
                    .unwrap_or(0);
                if rule == 0 {
                    // Reserved or unknown: skip it without looking at the payload.
                    self.state =
                        if h.len == 0 { ReadState::Header } else { ReadState::Skip(h.len) };
                    return Ok((hlen, FrameEvent::Skipped));
                }
                // HTTP/2-only types (§7.2.8) are allowed nowhere.
                if rule & kind.rule_bit() == 0 {
                    return Err(H3Error::FrameUnexpected);
                }
                if h.ty == frame_type::DATA {
                    if h.len > 0 {
                        self.state = ReadState::Data(h.len);
                    }
                    return Ok((hlen, FrameEvent::DataHeader(h.len)));
                }
                // Check the declared length before waiting for the payload.
                let (cap, too_long) = if rule & rule::FIELD_SECTION != 0 {
                    (max_field_section, H3Error::ExcessiveLoad)
                } else if h.ty == frame_type::SETTINGS {
                    (MAX_SETTINGS_LEN, H3Error::ExcessiveLoad)
                } else {
                    (MAX_VARINT_FRAME_LEN, H3Error::FrameError)
                };
                if h.len > cap {
                    return Err(too_long);
                }
                let avail = input.len() - hlen;
                if h.len > avail as u64 {
                    return Ok((0, FrameEvent::NeedMore));
                }
                let end = hlen + h.len as usize;
                let payload = input.get(hlen..end).unwrap_or(&[]);
                let frame = match h.ty {
                    frame_type::HEADERS => Frame::Headers(payload),
                    frame_type::PUSH_PROMISE => {
                        let (push_id, n) = decode_varint(payload).ok_or(H3Error::FrameError)?;
                        Frame::PushPromise {
                            push_id,
                            field_section: payload.get(n..).unwrap_or(&[]),
                        }
                    }
                    frame_type::SETTINGS => Frame::Settings(payload),
                    // GOAWAY, MAX_PUSH_ID, CANCEL_PUSH: one varint.
                    ty => {
                        let v = single_varint(payload)?;
                        match ty {
                            frame_type::GOAWAY => Frame::GoAway(v),
                            frame_type::MAX_PUSH_ID => Frame::MaxPushId(v),
                            _ => Frame::CancelPush(v),
                        }
                    }
                };
                Ok((end, FrameEvent::Frame(frame)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule table says what RFC 9114 §7.2 Table 1 and §7.2.8 say, type by type.
    #[test]
    fn frame_rules_match_table_1() {
        use frame_type::*;
        for ty in 0..64u64 {
            for kind in [StreamKind::Control, StreamKind::Request, StreamKind::Push] {
                let expected = match ty {
                    DATA | HEADERS => Some(kind != StreamKind::Control),
                    PUSH_PROMISE => Some(kind == StreamKind::Request),
                    SETTINGS | GOAWAY | MAX_PUSH_ID | CANCEL_PUSH => {
                        Some(kind == StreamKind::Control)
                    }
                    t if is_http2_only(t) => Some(false),
                    _ => None,
                };
                let rule = FRAME_RULES.get(ty as usize).copied().unwrap_or(0);
                let got = (rule != 0).then_some(rule & kind.rule_bit() != 0);
                assert_eq!(got, expected, "type {ty:#x} on {kind:?}");
            }
        }
    }
    use hex_literal::hex;
    use proptest::prelude::*;

    fn read_all(kind: StreamKind, bytes: &[u8]) -> Result<Vec<String>, H3Error> {
        let mut r = FrameReader::new();
        let mut pos = 0;
        let mut out = Vec::new();
        loop {
            let (n, ev) = r.read(&bytes[pos..], kind, 1000)?;
            pos += n;
            match ev {
                FrameEvent::NeedMore => break,
                ev => out.push(format!("{ev:?}")),
            }
        }
        Ok(out)
    }

    #[test]
    fn settings_round_trip_and_grease() {
        let s = Settings {
            qpack_max_table_capacity: 4096,
            max_field_section_size: Some(16384),
            qpack_blocked_streams: 16,
        };
        let mut buf = [0u8; 64];
        let mut out = Out::new(&mut buf);
        s.write_frame(Some(1), &mut out).unwrap();
        let bytes = out.written().to_vec();
        // 04 len, 01 5000, 06 80004000, 07 10, then grease 0x40 (0x1f + 0x21) = 1
        assert_eq!(bytes, hex!("04 0d 01 5000 06 80004000 07 10 4040 01"));
        let (h, n) = FrameHeader::parse(&bytes).unwrap();
        assert_eq!(h, FrameHeader { ty: 4, len: 13 });
        assert_eq!(Settings::parse(&bytes[n..]), Ok(s));
        // Device: only the field section size and a grease setting.
        let d = Settings { max_field_section_size: Some(1024), ..Settings::default() };
        let mut buf = [0u8; 16];
        let mut out = Out::new(&mut buf);
        d.write_frame(None, &mut out).unwrap();
        assert_eq!(out.written(), &hex!("04 03 06 4400"));
    }

    #[test]
    fn settings_errors() {
        // Duplicate identifier (known and unknown).
        assert_eq!(Settings::parse(&hex!("06 01 06 02")), Err(H3Error::SettingsError));
        assert_eq!(Settings::parse(&hex!("4040 01 21 00 4040 02")), Err(H3Error::SettingsError));
        // HTTP/2 identifiers 0x02..=0x05.
        for id in 2u8..=5 {
            assert_eq!(Settings::parse(&[id, 0]), Err(H3Error::SettingsError));
        }
        // Truncated pair, also after a pair with the same identifier.
        assert_eq!(Settings::parse(&hex!("06")), Err(H3Error::FrameError));
        assert_eq!(Settings::parse(&hex!("06 01 06")), Err(H3Error::FrameError));
        // A duplicate further on, past another pair.
        assert_eq!(Settings::parse(&hex!("06 01 01 00 06 01")), Err(H3Error::SettingsError));
        // Unknown identifiers are ignored.
        assert_eq!(Settings::parse(&hex!("21 05 08 01")), Ok(Settings::default()));
        // The device's parse gives the same errors and the field section limit.
        for p in [
            &hex!("06 01 06 02")[..],
            &hex!("06"),
            &hex!("02 00"),
            &hex!("21 05 08 01"),
            &hex!("06 01 21 00 06 02 21"),
            &hex!("21 00 06 01 02"),
            &hex!("21 00 06 01 02 00 21 00"),
            &hex!("4006 01 06 02 4021"),
        ] {
            let full = Settings::parse(p).map(|s| s.max_field_section_size);
            assert_eq!(Settings::parse_max_field_section_size(p), full, "{p:02x?}");
        }
        assert_eq!(
            Settings::parse_max_field_section_size(&hex!("01 00 06 4400 07 10")),
            Ok(Some(1024))
        );
    }

    #[test]
    fn frames_by_stream_kind() {
        // DATA and HEADERS on the control stream, SETTINGS on a request stream.
        assert_eq!(read_all(StreamKind::Control, &hex!("00 00")), Err(H3Error::FrameUnexpected));
        assert_eq!(read_all(StreamKind::Control, &hex!("01 00")), Err(H3Error::FrameUnexpected));
        assert_eq!(read_all(StreamKind::Control, &hex!("05 01 00")), Err(H3Error::FrameUnexpected));
        assert_eq!(read_all(StreamKind::Request, &hex!("04 00")), Err(H3Error::FrameUnexpected));
        for ty in [0x03u8, 0x07, 0x0d] {
            assert_eq!(read_all(StreamKind::Request, &[ty, 1, 0]), Err(H3Error::FrameUnexpected));
        }
        assert_eq!(read_all(StreamKind::Push, &hex!("05 01 00")), Err(H3Error::FrameUnexpected));
        // HTTP/2-only types anywhere.
        for kind in [StreamKind::Control, StreamKind::Request, StreamKind::Push] {
            for ty in [0x02u8, 0x06, 0x08, 0x09] {
                assert_eq!(read_all(kind, &[ty, 0]), Err(H3Error::FrameUnexpected), "{ty:#x}");
            }
        }
        // Reserved and unknown types are skipped, with their payload.
        assert_eq!(
            read_all(StreamKind::Control, &hex!("21 02 aaaa 4040 00 0a 01 bb 07 01 04")).unwrap(),
            ["Skipped", "Skipped", "Skipped", "Skipped", "Skipped", "Frame(GoAway(4))"]
        );
        // Single-varint frames must be exactly one varint.
        assert_eq!(read_all(StreamKind::Control, &hex!("07 02 04 00")), Err(H3Error::FrameError));
        assert_eq!(read_all(StreamKind::Control, &hex!("07 00")), Err(H3Error::FrameError));
        assert_eq!(
            read_all(StreamKind::Control, &hex!("07 09 c000000000000004 00")),
            Err(H3Error::FrameError)
        );
        assert_eq!(
            read_all(StreamKind::Control, &hex!("0d 01 05 03 01 02")).unwrap(),
            ["Frame(MaxPushId(5))", "Frame(CancelPush(2))"]
        );
        assert_eq!(
            read_all(StreamKind::Request, &hex!("05 03 07 0000")).unwrap(),
            ["Frame(PushPromise { push_id: 7, field_section: [0, 0] })"]
        );
    }

    /// DATA payloads stream through in pieces; other frames wait until complete and are
    /// never consumed partially.
    #[test]
    fn incremental_data_and_headers() {
        let bytes = hex!("01 03 000051 00 05 68656c6c6f 21 00");
        let mut r = FrameReader::new();
        // Feed one more byte at a time, presenting unconsumed bytes again.
        let mut consumed = 0;
        let mut events = Vec::new();
        for end in 1..=bytes.len() {
            loop {
                let (n, ev) = r.read(&bytes[consumed..end], StreamKind::Request, 100).unwrap();
                consumed += n;
                match ev {
                    FrameEvent::NeedMore => break,
                    ev => events.push(format!("{ev:?}")),
                }
            }
        }
        assert_eq!(consumed, bytes.len());
        assert!(r.is_idle());
        assert_eq!(
            events,
            [
                "Frame(Headers([0, 0, 81]))",
                "DataHeader(5)",
                "Data([104])",
                "Data([101])",
                "Data([108])",
                "Data([108])",
                "Data([111])",
                "Skipped"
            ]
        );
    }

    /// A declared length far beyond anything available is refused (HEADERS, SETTINGS) or
    /// streamed/skipped (DATA, unknown) without reserving memory for it.
    #[test]
    fn huge_declared_lengths() {
        let mut r = FrameReader::new();
        let huge = hex!("01 ffffffffffffffff");
        assert_eq!(r.read(&huge, StreamKind::Request, 16384), Err(H3Error::ExcessiveLoad));
        let huge = hex!("04 bfffffff");
        assert_eq!(r.read(&huge, StreamKind::Control, 0), Err(H3Error::ExcessiveLoad));
        let mut r = FrameReader::new();
        let (n, ev) = r.read(&hex!("00 ffffffffffffffff 0102"), StreamKind::Request, 0).unwrap();
        assert_eq!((n, ev), (9, FrameEvent::DataHeader((1 << 62) - 1)));
        let (n, ev) = r.read(&hex!("0102"), StreamKind::Request, 0).unwrap();
        assert_eq!((n, ev), (2, FrameEvent::Data(&[1, 2])));
        assert!(!r.is_idle());
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..256), k in 0u8..3, cap in 0u64..512) {
            let kind = [StreamKind::Control, StreamKind::Request, StreamKind::Push][k as usize];
            let mut r = FrameReader::new();
            let mut pos = 0;
            while let Ok((n, ev)) = r.read(&b[pos..], kind, cap) {
                pos += n;
                prop_assert!(pos <= b.len());
                if ev == FrameEvent::NeedMore {
                    break;
                }
            }
            // The device's parse agrees with the full one, errors included.
            prop_assert_eq!(
                Settings::parse_max_field_section_size(&b),
                Settings::parse(&b).map(|s| s.max_field_section_size)
            );
        }
    }
}
