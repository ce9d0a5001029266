//! A one-request-at-a-time HTTP/3 client (RFC 9114, RFC 9204) for devices: the request
//! path a microcontroller needs, without the general [`crate::Connection`] (both roles,
//! many streams, a dynamic table) that hosts and the server run.
//!
//! What it does, and nothing more:
//! - our control stream with SETTINGS (SETTINGS_MAX_FIELD_SECTION_SIZE, and the grease
//!   setting and frame); no QPACK encoder or decoder stream (RFC 9204 §4.2: we never use
//!   the dynamic table and advertise a capacity of 0, so neither is needed);
//! - one request stream at a time: HEADERS (+ DATA) out, FIN; HEADERS + DATA (+ trailers)
//!   in, with the RFC 9114 §4.1.2 malformed-message and content-length checks;
//! - what a device fixes at build time encoded by `const fn`s: the control stream's bytes
//!   ([`Setup`], for [`Client::init`]) and its requests' HEADERS frames ([`EncodedRequest`],
//!   for [`Client::send_request`]);
//! - the peer's control stream (SETTINGS first and once, GOAWAY, the frames a client may not
//!   receive refused), its QPACK encoder and decoder streams (capacity 0: any insertion is
//!   an error), and any other unidirectional stream refused with STOP_SENDING
//!   (H3_STREAM_CREATION_ERROR) and read to its end.
//!
//! The client is sans-IO over [`Streams`] (mote-h3's `QuicTransport` implements it for a
//! mote-quic connection, feature `device`). Per stream it keeps the bytes not consumed
//! yet in a `CAP`-byte buffer: the request stream and three peer unidirectional streams
//! (RFC 9114 §6.2: a device allows the server three through `initial_max_streams_uni`).

use crate::coding::{decode_varint, Out};
use crate::connection::{Config, Transport};
use crate::error::{H3Error, SendError};
use crate::frame::{
    frame_type, grease_id, setting_id, stream_type, write_frame_header, FrameHeader, Settings,
    MAX_SETTINGS_LEN,
};
use crate::qpack::decoder::decode_lines;
use crate::qpack::prefix::{decode_int, PrefixError};
use crate::qpack::DecodeError;
#[cfg(any(feature = "server", feature = "quic"))]
use crate::qpack::FieldEncoder;
use crate::response_lines::ResponseLines;
#[cfg(any(feature = "server", feature = "quic"))]
use crate::Request;

mod encoded;
mod init;

pub use encoded::EncodedRequest;

/// The methods the client sends (RFC 9110 §9.3), each numbered by its QPACK static table
/// index (RFC 9204 Appendix A), which is how it goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get = 17,
    /// HEAD (its response has no content).
    Head = 18,
    /// POST.
    Post = 20,
}

impl Method {
    /// The method's name.
    pub const fn name(self) -> &'static [u8] {
        match self {
            Self::Get => b"GET",
            Self::Head => b"HEAD",
            Self::Post => b"POST",
        }
    }
}

/// A request as the client sends it (RFC 9114 §4.3.1): `method https://authority/path`,
/// with a content-length if one is given and no other header field. [`Client::request`]
/// refuses an empty path and NUL, CR or LF in the authority or path. The bytes on the wire
/// are those of the general encoder for the same [`crate::Request`] (test
/// `request_template_matches_the_field_encoder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientRequest<'a> {
    /// `:method`.
    pub method: Method,
    /// `:authority`.
    pub authority: &'a [u8],
    /// `:path`, including the query.
    pub path: &'a [u8],
    /// The body's length, sent as `content-length`.
    pub content_length: Option<usize>,
}

impl<'a> ClientRequest<'a> {
    /// `GET https://authority/path`.
    pub const fn get(authority: &'a [u8], path: &'a [u8]) -> Self {
        Self { method: Method::Get, authority, path, content_length: None }
    }

    /// `POST https://authority/path` with a `len`-byte body.
    pub const fn post(authority: &'a [u8], path: &'a [u8], len: usize) -> Self {
        Self { method: Method::Post, authority, path, content_length: Some(len) }
    }
}

/// `n` in decimal digits, at the end of `buf` (the general encoder's content-length; a
/// device-only build's template writes the digits itself).
#[cfg(any(feature = "server", feature = "quic"))]
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    for d in buf.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        i -= 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.get(i..).unwrap_or(&[])
}

/// What one read of a stream gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes were copied out (at least one).
    Data(usize),
    /// Nothing to read now.
    Blocked,
    /// The stream ended after the bytes read before.
    Fin,
    /// The peer reset the stream with this application error code.
    Reset(u64),
    /// The stream is gone: we stopped reading it, it is fully closed, or the connection is
    /// closed. A stream's end ([`Read::Fin`], [`Read::Reset`]) is read before it is gone.
    Gone,
}

/// What the client needs from QUIC besides [`Transport`]: reading streams and listing the
/// open ones (which is how the peer's new streams are found).
pub trait Streams: Transport {
    /// Moves received bytes of stream `id` into `out`.
    fn read(&mut self, id: u64, out: &mut [u8]) -> Read;
    /// The IDs of the open streams (ours and the peer's).
    fn live_streams(&self) -> impl Iterator<Item = u64> + '_;
    /// How many unidirectional streams the peer has opened (RFC 9000 §3.2: opening one
    /// opens every lower-numbered one), for a transport that counts them and whose QUIC
    /// stream limits let the peer open no bidirectional stream (so one is a QUIC
    /// connection error, STREAM_LIMIT_ERROR, before the client could see it) and at most
    /// three unidirectional ones (the client's slots; a device's limits). The client then
    /// gives the peer's stream i (ID 4i + 3) its own slot instead of scanning
    /// [`Streams::live_streams`]; streams beyond the three would not be read. `None` (the
    /// default): scan, refusing bidirectional streams (RFC 9114 §6.1) and the
    /// unidirectional ones beyond the free slots (H3_EXCESSIVE_LOAD).
    fn peer_uni_opened(&self) -> Option<u64> {
        None
    }
}

/// What [`Client::poll`] found on the request stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A checked response head (RFC 9114 §4.3.2): interim (1xx, the final one follows) or
    /// final.
    Response {
        /// The status code.
        status: u16,
    },
    /// The trailer section arrived (checked; its fields are not kept).
    Trailers,
    /// A piece of the response body.
    Data(&'a [u8]),
    /// The response is complete.
    Finished,
    /// The response was malformed (or too large): the client sent STOP_SENDING and
    /// RESET_STREAM with this error and drops the rest.
    StreamError(H3Error),
    /// The server reset the request stream with this application error code.
    Reset(u64),
}

/// The critical streams' values are their bits in `State::seen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    /// No stream.
    Free = 0,
    Control = 1,
    Encoder = 2,
    Decoder = 4,
    /// A peer unidirectional stream whose type has not arrived yet.
    UniType = 3,
    Request = 5,
    /// Read and dropped until it ends: an unknown stream type, a failed request.
    Discard,
    /// Nothing more comes (FIN read, reset, or stopped).
    Done,
}

/// Where a response is (RFC 9114 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Expecting the (final) response head.
    Head,
    /// After the head: DATA, trailers or FIN.
    Body,
    /// After trailers: only FIN.
    Trailers,
}

/// A stream's state. Its buffer is kept apart (so events can borrow the buffer while the
/// state changes, and a new client's buffers are zeroed in place).
#[derive(Debug)]
struct Ctl {
    id: u64,
    kind: Kind,
    /// Control and request streams: payload bytes left of the DATA frame (`data`) or the
    /// skipped frame being read.
    left: u64,
    data: bool,
    phase: Phase,
    /// Body bytes still due by the response's content-length (§4.1.2), if it declared one.
    content_left: Option<u64>,
    /// Request stream: the request head went out.
    head_sent: bool,
    /// Request stream: body bytes or FIN may still be sent.
    sending: bool,
    /// Request stream: the request was HEAD (its response has no content).
    head_request: bool,
    /// Buffered bytes.
    len: usize,
    /// The stream's FIN was read (after the buffered bytes).
    fin: bool,
}

impl Ctl {
    const EMPTY: Self = Self {
        id: 0,
        kind: Kind::Free,
        left: 0,
        data: false,
        phase: Phase::Head,
        content_left: None,
        head_sent: false,
        sending: false,
        head_request: false,
        len: 0,
        fin: false,
    };
}

impl Ctl {
    /// Whether the slot holds a stream that may still bring bytes. A finished peer
    /// stream's slot is free again: mote-quic forgets a stream once its end is read, and
    /// one that comes back in `live_streams` anyway reads as gone and finishes again.
    fn in_use(&self) -> bool {
        !matches!(self.kind, Kind::Free | Kind::Done)
    }

    /// Takes this slot for stream `id` (out of line: one copy for both callers).
    #[inline(never)]
    fn take(&mut self, id: u64, kind: Kind) {
        *self = Self { id, kind, ..Self::EMPTY };
    }
}

/// Connection-wide state the stream handlers share.
#[derive(Debug)]
struct State {
    /// The config (capped to the stream buffers) and our control stream's bytes.
    setup: Setup,
    closed: Option<H3Error>,
    /// Our control stream ([`NO_STREAM`] before it is open), and whether its bytes went
    /// out.
    control: u64,
    control_written: bool,
    /// The peer's SETTINGS_MAX_FIELD_SECTION_SIZE, [`NO_LIMIT`] if its SETTINGS had none
    /// (or have not arrived).
    peer_max: u64,
    /// The ID in the last GOAWAY received, [`NO_GOAWAY`] before one (above every
    /// varint, so "may not increase" needs no separate case).
    goaway: u64,
    /// The peer's critical streams seen (bits: control, QPACK encoder, QPACK decoder) and
    /// whether its SETTINGS arrived ([`SETTINGS_SEEN`]).
    seen: u8,
}

/// The request stream's slot; the others hold peer unidirectional streams.
const REQ: usize = 0;
/// `State::seen`: the peer's SETTINGS arrived (the bits below are the critical streams').
const SETTINGS_SEEN: u8 = 8;
/// `State::peer_max` without the peer's limit (a varint never reaches it).
const NO_LIMIT: u64 = u64::MAX;
/// `State::goaway` before a GOAWAY arrived.
const NO_GOAWAY: u64 = u64::MAX;
/// `State::control` before the stream is open (no stream ID is this large).
const NO_STREAM: u64 = u64::MAX;
/// Slots: the request stream and three peer unidirectional streams.
const SLOTS: usize = 4;
/// Room for the control stream's bytes: stream type, SETTINGS header (3 bytes with the
/// stream type) and two pairs (at most 1 + 8 + 8 + 8 = 25 bytes), grease frame (at most 9).
const CONTROL_BYTES: usize = 37;
/// Room for a HEADERS frame header (1-byte type, up to 8-byte length) in front of the
/// encoded section in the caller's scratch buffer.
const HEADERS_FRAME_HEADER: usize = 9;
/// The longest frame header a peer may send: type and length as 8-byte varints (RFC 9000
/// §16 does not require the shortest encoding).
const MAX_FRAME_HEADER: usize = 16;

/// What a frame does on the control or request stream (a row of [`FRAMES`]).
mod act {
    /// DATA: its payload goes through in pieces.
    pub(super) const DATA: u8 = 0;
    /// HEADERS: decoded once complete.
    pub(super) const HEADERS: u8 = 1;
    /// SETTINGS: parsed once complete.
    pub(super) const SETTINGS: u8 = 2;
    /// GOAWAY: parsed once complete.
    pub(super) const GOAWAY: u8 = 3;
    /// Reserved and unknown types: the payload is skipped (RFC 9114 §7.2.8).
    pub(super) const SKIP: u8 = 4;
    /// H3_ID_ERROR: a push ID, and we never sent MAX_PUSH_ID (§4.6).
    pub(super) const ID_ERROR: u8 = 5;
    /// H3_FRAME_UNEXPECTED.
    pub(super) const UNEXPECTED: u8 = 6;
}

/// RFC 9114 §7.2 Table 1 for frame types 0x00..=0x0d (those above are reserved or unknown,
/// [`act::SKIP`]): per type, what it does on a request stream (low nibble) and on the
/// peer's control stream (high nibble). DATA and HEADERS only on request streams;
/// SETTINGS and GOAWAY only on the control stream; CANCEL_PUSH (control) and PUSH_PROMISE
/// (request) name a push ID; the HTTP/2-only types 0x02, 0x06, 0x08, 0x09 (§7.2.8) and
/// MAX_PUSH_ID (only servers receive it, §7.2.7) are unexpected anywhere; 0x0a..=0x0c are
/// unassigned.
const FRAMES: [u8; 14] = {
    use act::*;
    const fn both(request: u8, control: u8) -> u8 {
        request | control << 4
    }
    const U: u8 = both(UNEXPECTED, UNEXPECTED);
    [
        both(DATA, UNEXPECTED),
        both(HEADERS, UNEXPECTED),
        U,
        both(UNEXPECTED, ID_ERROR),
        both(UNEXPECTED, SETTINGS),
        both(ID_ERROR, UNEXPECTED),
        U,
        both(UNEXPECTED, GOAWAY),
        U,
        U,
        both(SKIP, SKIP),
        both(SKIP, SKIP),
        both(SKIP, SKIP),
        U,
    ]
};

/// A one-request-at-a-time HTTP/3 client in fixed storage: four stream buffers of `CAP`
/// bytes. A response head is checked line by line as it is decoded and only its status and
/// content-length are kept (no decoded-fields buffer). HEADERS payloads above `CAP - 16`
/// bytes (and above `Config::max_encoded_field_section`) are refused with
/// H3_EXCESSIVE_LOAD; `CAP` is at least 272 (a 256-byte SETTINGS payload behind the
/// longest frame header).
#[derive(Debug)]
pub struct Client<const CAP: usize> {
    st: State,
    /// Per stream: the state, and the bytes not consumed yet.
    slots: [Ctl; SLOTS],
    bufs: [[u8; CAP]; SLOTS],
}

impl<const CAP: usize> Client<CAP> {
    /// A client with `config` (no dynamic table; `qpack_blocked_streams` is not used).
    /// [`Client::init`] writes the same client into a slot in place.
    pub const fn new(config: Config) -> Self {
        Self { st: Self::state(config), slots: [Ctl::EMPTY; SLOTS], bufs: [[0; CAP]; SLOTS] }
    }

    /// Caps `config`'s largest HEADERS payload to what a stream buffer holds.
    const fn cap(config: &mut Config) {
        // The largest SETTINGS frame accepted, and any HEADERS frame accepted, must fit a
        // stream buffer whole (or the stream would wait for bytes it has no room for).
        const { assert!(CAP as u64 >= MAX_SETTINGS_LEN + MAX_FRAME_HEADER as u64) };
        let fit = (CAP - MAX_FRAME_HEADER) as u64;
        if config.max_encoded_field_section > fit {
            config.max_encoded_field_section = fit;
        }
    }

    /// A new client's connection-wide state: `config` (capped to the stream buffer) and
    /// nothing seen or sent.
    const fn state(config: Config) -> State {
        let mut setup = Setup::new(config);
        Self::cap(&mut setup.config);
        State {
            setup,
            closed: None,
            control: NO_STREAM,
            control_written: false,
            peer_max: NO_LIMIT,
            goaway: NO_GOAWAY,
            seen: 0,
        }
    }

    /// Whether our control stream is open and its bytes are written.
    pub const fn is_open(&self) -> bool {
        self.st.control_written
    }

    /// The error the connection was closed with, if it is closed.
    pub const fn closed(&self) -> Option<H3Error> {
        self.st.closed
    }

    /// The ID in the last GOAWAY received.
    pub const fn goaway_received(&self) -> Option<u64> {
        match self.st.goaway {
            NO_GOAWAY => None,
            id => Some(id),
        }
    }

    /// Whether the peer's SETTINGS arrived.
    pub const fn peer_settings_received(&self) -> bool {
        self.st.seen & SETTINGS_SEEN != 0
    }

    /// The peer's SETTINGS_MAX_FIELD_SECTION_SIZE, if it sent one (RFC 9114 §4.2.2).
    pub const fn peer_max_field_section_size(&self) -> Option<u64> {
        match self.st.peer_max {
            NO_LIMIT => None,
            max => Some(max),
        }
    }

    /// The request stream's ID, while one is open.
    pub fn request_id(&self) -> Option<u64> {
        let c = self.slots.get(REQ)?;
        (c.kind != Kind::Free).then_some(c.id)
    }

    fn check_open(&self) -> Result<(), SendError> {
        match self.st.closed {
            Some(e) => Err(SendError::Closed(e)),
            None => Ok(()),
        }
    }

    /// Opens our control stream and writes its type, SETTINGS and a grease frame
    /// (RFC 9114 §6.2.1, §7.2.4.1, §7.2.8; the same bytes as [`crate::Connection::open`]).
    /// Call until [`Client::is_open`]: [`SendError::StreamLimit`] or
    /// [`SendError::Blocked`] mean try again later.
    pub fn open<T: Streams>(&mut self, t: &mut T) -> Result<(), SendError> {
        self.check_open()?;
        if self.st.control_written {
            return Ok(());
        }
        if self.st.control == NO_STREAM {
            self.st.control = t.open_uni().ok_or(SendError::StreamLimit)?;
        }
        let id = self.st.control;
        let end = usize::from(self.st.setup.control_len);
        let bytes = self.st.setup.control.get(..end).unwrap_or(&[]);
        if t.capacity(id) < end {
            return Err(SendError::Blocked);
        }
        if t.write(id, bytes, false) != end {
            return Err(SendError::Closed(fail(&mut self.st, t, H3Error::InternalError)));
        }
        self.st.control_written = true;
        Ok(())
    }

    /// Sends `request` on a new request stream (with FIN if `end_stream`: no body) and
    /// returns the stream's ID; `scratch` holds the encoded HEADERS frame. One request at a
    /// time: [`SendError::InvalidState`] while the previous one is not over in both
    /// directions. On [`SendError::Blocked`] (or `StreamLimit`) nothing was sent: call again
    /// with the same arguments. A device whose requests are fixed builds them as
    /// [`EncodedRequest`] constants and sends them with [`Client::send_request`] instead
    /// (no request encoder in its image).
    pub fn request<T: Streams>(
        &mut self,
        t: &mut T,
        request: &ClientRequest<'_>,
        end_stream: bool,
        scratch: &mut [u8],
    ) -> Result<u64, SendError> {
        let open_new = self.start_request()?;
        // RFC 9114 §4.3.1: an https request's :path is not empty; RFC 9110 §5.5: no field
        // value carries NUL, CR or LF (the peer would find the request malformed).
        if request.path.is_empty()
            || [request.path, request.authority]
                .iter()
                .any(|v| v.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n')))
        {
            return Err(SendError::InvalidState);
        }
        let body = scratch.get_mut(HEADERS_FRAME_HEADER..).ok_or(SendError::BufferTooSmall)?;
        let method = request.method;
        // A device-only build writes the head as one template (the same bytes).
        #[cfg(not(any(feature = "server", feature = "quic")))]
        let (len, size) = crate::qpack::encoder::encode_request(
            method as u8,
            method.name().len(),
            request.authority,
            request.path,
            request.content_length,
            body,
        )?;
        #[cfg(any(feature = "server", feature = "quic"))]
        let (len, size) = {
            let mut digits = [0u8; 20];
            let content_length = request.content_length.map(|n| decimal(n, &mut digits));
            let headers = content_length.map(|v| (&b"content-length"[..], v));
            let general =
                Request::get(request.authority, request.path).with_headers(headers.as_slice());
            let general = Request { method: method.name(), ..general };
            let mut enc = FieldEncoder::new(body)?;
            general.encode(&mut enc)?;
            let size = enc.size();
            (enc.finish(), size)
        };
        // The frame header goes right in front of the section.
        let start = HEADERS_FRAME_HEADER - 1 - crate::coding::varint_size(len as u64);
        let mut out = Out::new(scratch.get_mut(start..HEADERS_FRAME_HEADER).unwrap_or(&mut []));
        write_frame_header(frame_type::HEADERS, len as u64, &mut out)?;
        let frame =
            scratch.get(start..HEADERS_FRAME_HEADER + len).ok_or(SendError::BufferTooSmall)?;
        self.send_head(t, frame, size, method == Method::Head, open_new, end_stream)
    }

    /// The checks before a request (open, no GOAWAY, the previous request over) shared by
    /// [`Client::request`] and [`Client::send_request`]; whether a new stream is needed.
    fn start_request(&self) -> Result<bool, SendError> {
        self.check_open()?;
        // RFC 9114 §5.2: no new request after GOAWAY.
        if self.st.goaway != NO_GOAWAY {
            return Err(SendError::GoingAway);
        }
        let c = self.slots.get(REQ).ok_or(SendError::InvalidState)?;
        // A stream opened by a call that found no room for the head is used again.
        let reuse = c.kind == Kind::Request && !c.head_sent;
        let open_new = match c.kind {
            Kind::Free => true,
            Kind::Discard | Kind::Done => !c.sending,
            _ => false,
        };
        if !reuse && !open_new {
            return Err(SendError::InvalidState);
        }
        Ok(open_new)
    }

    /// Sends a request's HEADERS `frame` (a section of `size` bytes as §4.2.2 counts
    /// them; `head`: the method is HEAD) on the request stream, a new one if `open_new`.
    fn send_head<T: Streams>(
        &mut self,
        t: &mut T,
        frame: &[u8],
        size: u64,
        head: bool,
        open_new: bool,
        end_stream: bool,
    ) -> Result<u64, SendError> {
        // §4.2.2: respect the peer's limit.
        // (Without a limit, `NO_LIMIT` is above any size.)
        if size > self.st.peer_max {
            return Err(SendError::FieldSectionTooLarge);
        }
        let c = self.slots.get_mut(REQ).ok_or(SendError::InvalidState)?;
        if open_new {
            let id = t.open_bidi().ok_or(SendError::StreamLimit)?;
            c.take(id, Kind::Request);
        }
        let id = c.id;
        if t.capacity(id) < frame.len() {
            return Err(SendError::Blocked);
        }
        if t.write(id, frame, end_stream) != frame.len() {
            return Err(SendError::Closed(fail(&mut self.st, t, H3Error::InternalError)));
        }
        c.head_sent = true;
        c.sending = !end_stream;
        c.head_request = head;
        Ok(id)
    }

    /// Sends as much of `data` as the request stream takes now in one DATA frame and
    /// returns how many bytes that was; FIN follows if `end_stream` and all of `data` went.
    /// [`SendError::Blocked`] if not even one byte fits.
    pub fn send_data<T: Streams>(
        &mut self,
        t: &mut T,
        data: &[u8],
        end_stream: bool,
    ) -> Result<usize, SendError> {
        self.check_open()?;
        let c = self.slots.get_mut(REQ).ok_or(SendError::InvalidState)?;
        if !c.sending {
            return Err(SendError::InvalidState);
        }
        let id = c.id;
        let cap = t.capacity(id);
        let n = data.len().min(cap.saturating_sub(1 + crate::coding::varint_size(cap as u64)));
        if n == 0 && !data.is_empty() {
            return Err(SendError::Blocked);
        }
        let fin = end_stream && n == data.len();
        // The frame header (none for FIN alone): type DATA (0x00, already there) and the
        // length.
        let mut hdr = [0u8; HEADERS_FRAME_HEADER];
        let mut hl = 0;
        if n > 0 {
            let mut out = Out::new(hdr.get_mut(1..).unwrap_or(&mut []));
            out.put_varint(n as u64)?;
            hl = 1 + out.position();
        }
        let chunk = data.get(..n).unwrap_or(&[]);
        if t.write(id, hdr.get(..hl).unwrap_or(&[]), false) != hl || t.write(id, chunk, fin) != n {
            // The transport took less than its capacity promised: framing is lost.
            return Err(SendError::Closed(fail(&mut self.st, t, H3Error::InternalError)));
        }
        if fin {
            c.sending = false;
        }
        Ok(n)
    }

    /// The peer sent STOP_SENDING for stream `id` with `code`: on our control stream that
    /// is H3_CLOSED_CRITICAL_STREAM (§6.2.1, returned and the connection closed); on the
    /// request stream we reset its sending side with the same code (RFC 9000 §3.5).
    pub fn on_stop_sending<T: Streams>(
        &mut self,
        t: &mut T,
        id: u64,
        code: u64,
    ) -> Result<(), H3Error> {
        if let Some(e) = self.st.closed {
            return Err(e);
        }
        // Before our control stream is open, `control` is the `NO_STREAM` sentinel
        // (`u64::MAX`): no stream ID can equal it, as RFC 9000 §2.1 IDs are varints below
        // 2^62 (the transport decoded this one).
        debug_assert!(id < 1 << 62, "stream IDs are 62-bit");
        if self.st.control == id {
            return Err(fail(&mut self.st, t, H3Error::ClosedCriticalStream));
        }
        if let Some(c) = self.slots.get_mut(REQ) {
            if c.kind != Kind::Free && c.id == id && c.sending {
                t.reset_stream(id, code);
                c.sending = false;
            }
        }
        Ok(())
    }

    /// Reads every stream's available bytes, acts on them and calls `on` for what the
    /// request stream brings. An `Err` is a connection error: the connection is being
    /// closed with it.
    pub fn poll<T: Streams>(
        &mut self,
        t: &mut T,
        mut on: impl FnMut(Event<'_>),
    ) -> Result<(), H3Error> {
        if let Some(e) = self.st.closed {
            return Err(e);
        }
        self.poll_inner(t, &mut on).map_err(|e| fail(&mut self.st, t, e))
    }

    fn poll_inner<T: Streams, F: FnMut(Event<'_>)>(
        &mut self,
        t: &mut T,
        on: &mut F,
    ) -> Result<(), H3Error> {
        // The peer's new streams.
        let mut refused = None;
        if let Some(opened) = t.peer_uni_opened() {
            // A transport that counts them (and allows the peer no bidirectional stream and
            // at most one unidirectional stream per slot): the peer's unidirectional stream
            // i (RFC 9000 §2.1: ID 4i + 3) has slot 1 + i, taken once.
            let peer = self.slots.get_mut(1..).unwrap_or(&mut []);
            let peer_slots = peer.len() as u64;
            for (i, c) in peer.iter_mut().enumerate().take(opened.min(peer_slots) as usize) {
                if c.kind == Kind::Free {
                    c.take(((i as u64) << 2) | 3, Kind::UniType);
                }
            }
        } else {
            for id in t.live_streams() {
                // RFC 9000 §2.1: the low bit is the initiator; client-initiated streams are
                // ours.
                if id & 1 == 0 || self.slots.iter().any(|c| c.in_use() && c.id == id) {
                    continue;
                }
                // RFC 9114 §6.1: server-initiated bidirectional streams need an extension.
                if id & 2 == 0 {
                    return Err(H3Error::StreamCreationError);
                }
                match self.slots.iter_mut().skip(1).find(|c| !c.in_use()) {
                    Some(c) => c.take(id, Kind::UniType),
                    None => refused = Some(id),
                }
            }
        }
        if let Some(id) = refused {
            // Bounded by QUIC's stream limit (three for a device); one refusal per poll,
            // the next poll finds the rest.
            stop_sending(t, id, H3Error::ExcessiveLoad);
        }
        let Self { st, slots, bufs } = self;
        for (c, buf) in slots.iter_mut().zip(bufs.iter_mut()) {
            pump(st, c, buf, t, on)?;
        }
        Ok(())
    }
}

/// A [`Config`] with our control stream's bytes encoded from it, for [`Client::init`]. Its
/// constructor is a `const fn`: a device makes its setup a constant, so the bytes are
/// encoded at build time and `open` only writes them.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    config: Config,
    control: [u8; CONTROL_BYTES],
    control_len: u8,
}

impl Setup {
    /// `config` and its control stream's bytes.
    pub const fn new(config: Config) -> Self {
        let (control, len) = control_stream(&config);
        // At most `CONTROL_BYTES` (37).
        Self { config, control, control_len: len as u8 }
    }

    /// The config.
    pub const fn config(&self) -> &Config {
        &self.config
    }
}

/// Our control stream's bytes and their length (RFC 9114 §6.2.1): its type, then SETTINGS
/// (§7.2.4) with SETTINGS_MAX_FIELD_SECTION_SIZE and, with `config.grease`, the reserved
/// setting (§7.2.4.1), then the grease frame (a reserved type with an empty payload,
/// §7.2.8); the same bytes as [`crate::Connection::open`]. A limit above the varint range
/// is sent as 2^62 - 1, which no section reaches either. Nothing here fails: the bytes fit
/// [`CONTROL_BYTES`] whatever the config.
const fn control_stream(config: &Config) -> ([u8; CONTROL_BYTES], usize) {
    let mut buf = [0u8; CONTROL_BYTES];
    // Type 0x00 and SETTINGS (0x04); the payload's one-byte length (at most 25 bytes,
    // below 64) goes in `buf[2]` once known.
    buf[0] = stream_type::CONTROL as u8;
    buf[1] = frame_type::SETTINGS as u8;
    let mut end = put_varint(&mut buf, 3, setting_id::MAX_FIELD_SECTION_SIZE);
    end = put_varint(&mut buf, end, config.max_field_section_size);
    if let Some(g) = config.grease {
        end = put_varint(&mut buf, end, grease_id(g));
        end = put_varint(&mut buf, end, g as u64);
    }
    buf[2] = (end - 3) as u8;
    if let Some(g) = config.grease {
        end = put_varint(&mut buf, end, grease_id(g.wrapping_add(1)));
        // Its empty payload's length, 0, is already there.
        end += 1;
    }
    (buf, end)
}

/// Writes `v` (capped to 2^62 - 1) as a varint at `buf[at..]` (RFC 9000 §16) and returns
/// where it ends. `control_stream` keeps `at` low enough for every byte to fit.
// Each index is checked against `CONTROL_BYTES` first: no panic, at build or run time.
#[allow(clippy::indexing_slicing)]
const fn put_varint(buf: &mut [u8; CONTROL_BYTES], at: usize, v: u64) -> usize {
    let v = if v > crate::coding::VARINT_MAX { crate::coding::VARINT_MAX } else { v };
    let size = crate::coding::varint_size(v);
    let mut i = 0;
    while i < size && at + i < CONTROL_BYTES {
        buf[at + i] = (v >> (8 * (size - 1 - i))) as u8;
        i += 1;
    }
    // The two-bit length prefix: log2 of the size (1, 2, 4, 8 → 0..=3).
    if at < CONTROL_BYTES {
        buf[at] |= (size.trailing_zeros() as u8) << 6;
    }
    at + size
}

/// `v` as an index, if it fits one (a 32-bit comparison, not a 64-bit one, on a device).
fn small(v: u64) -> Option<usize> {
    usize::try_from(v).ok()
}

/// Closes the connection with `e` (once) and returns it.
fn fail<T: Transport>(st: &mut State, t: &mut T, e: H3Error) -> H3Error {
    if st.closed.is_none() {
        st.closed = Some(e);
        t.close(e.code());
    }
    e
}

/// Moves what QUIC has for stream `c` into its buffer and acts on it, until neither
/// gives anything more.
fn pump<T: Streams, F: FnMut(Event<'_>), const CAP: usize>(
    st: &mut State,
    c: &mut Ctl,
    buf: &mut [u8; CAP],
    t: &mut T,
    on: &mut F,
) -> Result<(), H3Error> {
    loop {
        if matches!(c.kind, Kind::Free | Kind::Done) {
            return Ok(());
        }
        let mut read = 0;
        while !c.fin {
            let Some(dst) = buf.get_mut(c.len..).filter(|d| !d.is_empty()) else { break };
            match t.read(c.id, dst) {
                Read::Data(n) => {
                    c.len += n;
                    read += n;
                }
                Read::Fin => c.fin = true,
                Read::Blocked => break,
                r => {
                    // RFC 9114 §6.2.1, RFC 9204 §4.2: critical streams may not be closed
                    // (reset). One gone before its end was read was dropped by QUIC because
                    // the connection closed (we never stop a critical stream): the app sees
                    // the peer's close, not H3_CLOSED_CRITICAL_STREAM of ours.
                    if r != Read::Gone
                        && matches!(c.kind, Kind::Control | Kind::Encoder | Kind::Decoder)
                    {
                        return Err(H3Error::ClosedCriticalStream);
                    }
                    if let (Read::Reset(code), Kind::Request) = (r, c.kind) {
                        on(Event::Reset(code));
                    }
                    c.kind = Kind::Done;
                    c.len = 0;
                    return Ok(());
                }
            }
        }
        let input = buf.get(..c.len).unwrap_or(&[]);
        let consumed = process(st, c, input, t, on)?.min(c.len);
        // `c.len` never exceeds the buffer; `get_mut` lets the compiler see it (no bounds
        // panic path on a device).
        if let Some(pending) = buf.get_mut(..c.len) {
            pending.copy_within(consumed.., 0);
        }
        c.len -= consumed;
        if read == 0 && consumed == 0 {
            return Ok(());
        }
    }
}

/// STOP_SENDING on `id` with `e` (one copy of the transport call for every caller).
#[inline(never)]
fn stop_sending<T: Transport>(t: &mut T, id: u64, e: H3Error) {
    t.stop_sending(id, e.code());
}

/// Fails the request stream with `code`: stop reading, stop writing, drop the rest.
fn stream_error<T: Transport, F: FnMut(Event<'_>)>(
    c: &mut Ctl,
    t: &mut T,
    on: &mut F,
    code: H3Error,
) {
    stop_sending(t, c.id, code);
    if c.sending {
        t.reset_stream(c.id, code.code());
        c.sending = false;
    }
    c.kind = Kind::Discard;
    on(Event::StreamError(code));
}

/// Acts on `input`, the buffered bytes of stream `c`; returns how many were consumed. A
/// malformed or too large response (H3_MESSAGE_ERROR, H3_EXCESSIVE_LOAD) fails the request
/// stream only (RFC 9114 §4.1.2, §4.2.2), here; an `Err` is a connection error.
fn process<T: Streams, F: FnMut(Event<'_>)>(
    st: &mut State,
    c: &mut Ctl,
    input: &[u8],
    t: &mut T,
    on: &mut F,
) -> Result<usize, H3Error> {
    let fin = c.fin;
    let mut pos = 0;
    loop {
        // The request stream's errors leave this loop (`break`): the stream fails, and
        // `Discard` then drops what is left of it.
        let e = loop {
            let rest = input.get(pos..).unwrap_or(&[]);
            match c.kind {
                Kind::Free | Kind::Done => return Ok(input.len()),
                Kind::Discard => {
                    if fin {
                        c.kind = Kind::Done;
                    }
                    return Ok(input.len());
                }
                Kind::UniType => match decode_varint(rest) {
                    // RFC 9114 §6.2: a stream closed before its type arrived is tolerated.
                    None if fin => c.kind = Kind::Done,
                    None => return Ok(pos),
                    Some((ty, n)) => {
                        pos += n;
                        // The critical stream types (RFC 9114 §6.2.1, RFC 9204 §4.2) by their
                        // value; `Free` stands for a push stream.
                        const UNI: [Kind; 4] =
                            [Kind::Control, Kind::Free, Kind::Encoder, Kind::Decoder];
                        let kind =
                            small(ty).and_then(|i| UNI.get(i)).copied().unwrap_or(Kind::Discard);
                        let bit = match kind {
                            // §4.6: we never sent MAX_PUSH_ID, so no push ID is valid.
                            Kind::Free => return Err(H3Error::IdError),
                            Kind::Discard => {
                                // §6.2, §9: unknown and reserved types: abort reading.
                                stop_sending(t, c.id, H3Error::StreamCreationError);
                                0
                            }
                            // Its bit in `seen`.
                            _ => kind as u8,
                        };
                        // §6.2.1, RFC 9204 §4.2: only one stream of each critical type.
                        if st.seen & bit != 0 {
                            return Err(H3Error::StreamCreationError);
                        }
                        st.seen |= bit;
                        c.kind = kind;
                    }
                },
                // Critical streams may not end (§6.2.1, RFC 9204 §4.2).
                Kind::Control | Kind::Encoder | Kind::Decoder if fin => {
                    return Err(H3Error::ClosedCriticalStream)
                }
                Kind::Encoder => {
                    // No dynamic table (capacity 0): only Set Dynamic Table Capacity 0 is
                    // acceptable, and its one encoding is the byte 0x20 (RFC 9204 §4.3.1).
                    // Every other instruction is an error whatever follows its first byte: a
                    // capacity above 0 exceeds our maximum (§4.3.1), an insertion does not fit
                    // a table of capacity 0 (§3.2.2), a duplicate references an entry that does
                    // not exist (§4.3.4).
                    return if rest.iter().all(|&b| b == 0x20) {
                        Ok(input.len())
                    } else {
                        Err(H3Error::QpackEncoderStreamError)
                    };
                }
                Kind::Decoder => {
                    // Our encoder never uses the dynamic table: a Section Acknowledgment
                    // (§4.4.1) or an Insert Count Increment (§4.4.3) is an error at its first
                    // byte; a Stream Cancellation (`01` StreamID(6+), §4.4.2) is harmless.
                    let Some(&b) = rest.first() else { return Ok(pos) };
                    if b & 0xc0 != 0x40 {
                        return Err(H3Error::QpackDecoderStreamError);
                    }
                    match decode_int(rest, 6) {
                        Ok((_, n)) => pos += n,
                        Err(PrefixError::Incomplete) => return Ok(pos),
                        Err(PrefixError::Overflow) => return Err(H3Error::QpackDecoderStreamError),
                    }
                }
                // The frames of the control and request streams (RFC 9114 §7), read in one
                // pass: a frame's type decides at its header whether it is allowed here
                // (§7.2 Table 1), skipped (§7.2.8) or refused, and its length is checked before
                // any of its payload is waited for. DATA and unknown payloads go through in
                // pieces; the others are acted on once complete in the buffer.
                Kind::Control | Kind::Request => {
                    let request = c.kind == Kind::Request;
                    if c.left > 0 {
                        // At most `rest.len()`.
                        let take = small(c.left).map_or(rest.len(), |l| l.min(rest.len()));
                        if take == 0 {
                            // §7.1: a stream may only end at a frame boundary.
                            return if fin { Err(H3Error::FrameError) } else { Ok(pos) };
                        }
                        let chunk = rest.get(..take).unwrap_or(&[]);
                        c.left -= take as u64;
                        pos += take;
                        if c.data {
                            on(Event::Data(chunk));
                        }
                        continue;
                    }
                    let Some((h, hl)) = FrameHeader::parse(rest) else {
                        if !fin {
                            return Ok(pos);
                        }
                        if !rest.is_empty() {
                            return Err(H3Error::FrameError);
                        }
                        // §4.1.2: a response without a final head, or with less content than
                        // its content-length declared, is malformed.
                        if c.phase == Phase::Head || c.content_left.is_some_and(|l| l != 0) {
                            break H3Error::MessageError;
                        }
                        c.kind = Kind::Done;
                        on(Event::Finished);
                        continue;
                    };
                    // What the frame's type means on this stream (§7.2 Table 1, §7.2.8): types
                    // above MAX_PUSH_ID (reserved, unknown) are skipped.
                    let row = small(h.ty).and_then(|i| FRAMES.get(i)).copied();
                    let action = row.map_or(act::SKIP, |r| if request { r & 0xf } else { r >> 4 });
                    // §6.2.1: the control stream's first frame must be SETTINGS, whatever else it
                    // is.
                    if !request && st.seen & SETTINGS_SEEN == 0 && action != act::SETTINGS {
                        return Err(H3Error::MissingSettings);
                    }
                    // The largest payload waited for, and the error for a longer one.
                    let (cap, too_long) = match action {
                        act::DATA | act::SKIP => {
                            if action == act::DATA {
                                // §4.1: DATA only between the head and trailers.
                                if c.phase != Phase::Body {
                                    return Err(H3Error::FrameUnexpected);
                                }
                                // §4.1.2: more content than the content-length declared.
                                if let Some(left) = c.content_left {
                                    let Some(left) = left.checked_sub(h.len) else {
                                        break H3Error::MessageError;
                                    };
                                    c.content_left = Some(left);
                                }
                            }
                            // The payload goes through in pieces (DATA) or is skipped.
                            pos += hl;
                            c.left = h.len;
                            c.data = action == act::DATA;
                            continue;
                        }
                        act::HEADERS => {
                            // §4.1: nothing but FIN after trailers.
                            if c.phase == Phase::Trailers {
                                return Err(H3Error::FrameUnexpected);
                            }
                            // §4.2.2, §10.5: a section above our limit, refused before it
                            // arrives.
                            (st.setup.config.max_encoded_field_section, H3Error::ExcessiveLoad)
                        }
                        act::SETTINGS => (MAX_SETTINGS_LEN, H3Error::ExcessiveLoad),
                        // One varint.
                        act::GOAWAY => (8, H3Error::FrameError),
                        // §7.2.5, §7.2.3, §4.6: we never sent MAX_PUSH_ID, so no push ID is
                        // valid (PUSH_PROMISE on a request stream, CANCEL_PUSH on the control
                        // stream).
                        act::ID_ERROR => return Err(H3Error::IdError),
                        // Frames of the other stream kind, MAX_PUSH_ID (only servers receive
                        // it, §7.2.7) and the HTTP/2-only types (§7.2.8).
                        _ => return Err(H3Error::FrameUnexpected),
                    };
                    if h.len > cap {
                        // On a request stream (HEADERS), a stream error.
                        if request {
                            break too_long;
                        }
                        return Err(too_long);
                    }
                    // At most `cap` (a stream buffer or less), so it fits a usize.
                    let Some(payload) = rest.get(hl..).and_then(|p| p.get(..h.len as usize)) else {
                        return if fin { Err(H3Error::FrameError) } else { Ok(pos) };
                    };
                    pos += hl + payload.len();
                    match action {
                        // A stream error (malformed, too large) or QPACK_DECOMPRESSION_FAILED.
                        act::HEADERS => {
                            match headers(c, payload, st.setup.config.max_field_section_size) {
                                Ok(event) => on(event),
                                Err(e @ H3Error::QpackDecompressionFailed) => return Err(e),
                                Err(e) => break e,
                            }
                        }
                        act::SETTINGS => {
                            // §7.2.4: SETTINGS only once (a second one is refused whatever it
                            // holds).
                            if st.seen & SETTINGS_SEEN != 0 {
                                return Err(H3Error::FrameUnexpected);
                            }
                            Settings::read_max_field_section_size(payload, &mut st.peer_max)?;
                            st.seen |= SETTINGS_SEEN;
                        }
                        _ => {
                            // GOAWAY (§5.2): a server's names a client-initiated bidirectional
                            // stream, and the ID may not increase.
                            let id = match decode_varint(payload) {
                                Some((id, n)) if n == payload.len() => id,
                                _ => return Err(H3Error::FrameError),
                            };
                            if id & 0x3 != 0 || id > st.goaway {
                                return Err(H3Error::IdError);
                            }
                            st.goaway = id;
                        }
                    }
                }
            }
        };
        stream_error(c, t, on, e);
    }
}

/// Decodes and checks a received head or trailer section (RFC 9204 §4.5, RFC 9114 §4.1.2,
/// §4.3.2) and returns its event. Errors: QPACK_DECOMPRESSION_FAILED (a connection error:
/// without a dynamic table a section that needs one cannot be decoded, RFC 9204 §2.2.3);
/// H3_EXCESSIVE_LOAD (above our SETTINGS_MAX_FIELD_SECTION_SIZE, §4.2.2) and
/// H3_MESSAGE_ERROR (malformed), which fail the stream.
fn headers(c: &mut Ctl, payload: &[u8], limit: u64) -> Result<Event<'static>, H3Error> {
    // Each line is checked as it is decoded (nothing is stored).
    let mut lines = ResponseLines::new(limit, c.phase == Phase::Body);
    match decode_lines(payload, &mut lines) {
        Ok(()) => {}
        Err(DecodeError::TooLarge) => return Err(H3Error::ExcessiveLoad),
        Err(_) => return Err(H3Error::QpackDecompressionFailed),
    }
    let checked = lines.finish()?;
    let Some(status) = checked.status else {
        // §4.1.2: the content must add up to the content-length by the trailers.
        if c.content_left.is_some_and(|l| l != 0) {
            return Err(H3Error::MessageError);
        }
        c.phase = Phase::Trailers;
        return Ok(Event::Trailers);
    };
    // RFC 9114 §4.5: HTTP/3 has no 101 (Switching Protocols); such a head is malformed.
    if status == 101 {
        return Err(H3Error::MessageError);
    }
    if status >= 200 {
        let declared = checked.content_length;
        // A response to HEAD, 204 or 304 has no content, whatever its content-length says
        // (RFC 9110 §6.4.1, §8.6; RFC 9114 §4.1.2): content in DATA is malformed (empty
        // DATA frames carry none).
        let bodyless = c.head_request || status == 204 || status == 304;
        c.content_left = if bodyless { Some(0) } else { declared };
        c.phase = Phase::Body;
    }
    Ok(Event::Response { status })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::vec::Vec;

    use hex_literal::hex;

    use super::*;
    use crate::connection::{Connection, Role};
    #[cfg(not(any(feature = "server", feature = "quic")))]
    use crate::Request;

    /// The client's frame table ([`FRAMES`]) and the general frame reader's
    /// ([`crate::frame::FRAME_RULES`]) both transcribe RFC 9114 §7.2 Table 1; they must agree
    /// on where each type may appear. The one difference is MAX_PUSH_ID (0x0d): allowed on
    /// a control stream, but only servers receive it (§7.2.7), so the client refuses it.
    #[test]
    fn frame_table_agrees_with_the_general_frame_rules() {
        use crate::frame::{rule, FRAME_RULES};
        const MAX_PUSH_ID: usize = 0x0d;
        for (ty, (&row, &rules)) in FRAMES.iter().zip(FRAME_RULES.iter()).enumerate() {
            for (kind, action) in [(rule::REQUEST, row & 0x0f), (rule::CONTROL, row >> 4)] {
                let expected = if rules == 0 {
                    // Reserved or unassigned: skipped (§7.2.8).
                    vec![act::SKIP]
                } else if rules & kind == 0 || (ty == MAX_PUSH_ID && kind == rule::CONTROL) {
                    vec![act::UNEXPECTED]
                } else {
                    vec![act::DATA, act::HEADERS, act::SETTINGS, act::GOAWAY, act::ID_ERROR]
                };
                assert!(expected.contains(&action), "type {ty:#x}, stream kind {kind}: {action}");
            }
        }
    }

    /// What the peer sends on one stream.
    #[derive(Default)]
    struct Incoming {
        data: Vec<u8>,
        pos: usize,
        fin: bool,
        reset: Option<u64>,
        /// Its end (FIN or reset) was read, or we stopped it: QUIC forgot it.
        over: bool,
    }

    /// QUIC streams in memory: the peer's bytes are delivered `chunk` bytes per read.
    struct Mem {
        incoming: BTreeMap<u64, Incoming>,
        chunk: usize,
        out: BTreeMap<u64, (Vec<u8>, bool)>,
        capacity: usize,
        next_uni: u64,
        next_bidi: u64,
        stops: Vec<(u64, u64)>,
        resets: Vec<(u64, u64)>,
        closed: Option<u64>,
        /// Count the peer's unidirectional streams (`Streams::peer_uni_opened`, as the
        /// device adapter does) instead of listing them.
        count: bool,
    }

    impl Mem {
        fn new(chunk: usize) -> Self {
            Self {
                incoming: BTreeMap::new(),
                chunk,
                out: BTreeMap::new(),
                capacity: 1 << 20,
                next_uni: 2,
                next_bidi: 0,
                stops: Vec::new(),
                resets: Vec::new(),
                closed: None,
                count: false,
            }
        }

        /// Counting the peer's unidirectional streams, as the device adapter does.
        fn counting(chunk: usize) -> Self {
            Self { count: true, ..Self::new(chunk) }
        }

        fn push(&mut self, id: u64, bytes: &[u8], fin: bool) {
            if self.count && id & 3 == 3 {
                // RFC 9000 §3.2: a stream opens every lower-numbered one of its type.
                for lower in (3..id).step_by(4) {
                    self.incoming.entry(lower).or_default();
                }
            }
            let s = self.incoming.entry(id).or_default();
            s.data.extend_from_slice(bytes);
            s.fin |= fin;
        }
    }

    impl Transport for Mem {
        fn open_uni(&mut self) -> Option<u64> {
            self.next_uni += 4;
            Some(self.next_uni - 4)
        }
        fn open_bidi(&mut self) -> Option<u64> {
            self.next_bidi += 4;
            // Our request stream: nothing received yet.
            self.incoming.insert(self.next_bidi - 4, Incoming::default());
            Some(self.next_bidi - 4)
        }
        fn capacity(&self, _id: u64) -> usize {
            self.capacity
        }
        fn write(&mut self, id: u64, data: &[u8], fin: bool) -> usize {
            let n = data.len().min(self.capacity);
            let e = self.out.entry(id).or_default();
            e.0.extend_from_slice(&data[..n]);
            e.1 |= fin && n == data.len();
            n
        }
        fn reset_stream(&mut self, id: u64, code: u64) {
            self.resets.push((id, code));
        }
        fn stop_sending(&mut self, id: u64, code: u64) {
            self.stops.push((id, code));
            if let Some(s) = self.incoming.get_mut(&id) {
                s.over = true;
            }
        }
        fn close(&mut self, code: u64) {
            self.closed.get_or_insert(code);
        }
    }

    impl Streams for Mem {
        fn read(&mut self, id: u64, out: &mut [u8]) -> Read {
            let chunk = self.chunk;
            let Some(s) = self.incoming.get_mut(&id).filter(|s| !s.over) else {
                return Read::Gone;
            };
            let n = (s.data.len() - s.pos).min(out.len()).min(chunk);
            if n > 0 {
                out[..n].copy_from_slice(&s.data[s.pos..s.pos + n]);
                s.pos += n;
                return Read::Data(n);
            }
            if let Some(code) = s.reset {
                s.over = true;
                return Read::Reset(code);
            }
            if s.fin {
                s.over = true;
                return Read::Fin;
            }
            Read::Blocked
        }
        fn live_streams(&self) -> impl Iterator<Item = u64> + '_ {
            assert!(!self.count, "a transport that counts the peer's streams is not scanned");
            self.incoming.iter().filter(|(_, s)| !s.over).map(|(id, _)| *id)
        }
        fn peer_uni_opened(&self) -> Option<u64> {
            let mut uni = self.incoming.keys().filter(|id| *id & 3 == 3);
            self.count.then(|| uni.next_back().map_or(0, |id| (id >> 2) + 1))
        }
    }

    /// An event with owned contents.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Ev {
        Response(u16),
        Trailers,
        Data(Vec<u8>),
        Finished,
        StreamError(H3Error),
        Reset(u64),
    }

    type Dev = Client<272>;

    struct Run {
        client: Dev,
        t: Mem,
        events: Vec<Ev>,
        error: Option<H3Error>,
    }

    const CONFIG: Config = Config {
        max_field_section_size: 512,
        max_encoded_field_section: 256,
        qpack_blocked_streams: 0,
        grease: Some(1),
    };
    /// The server's control stream: type, SETTINGS (max field section size 4096, a grease
    /// setting), a grease frame (0x21, 2 bytes).
    const SERVER_CONTROL: &[u8] = &hex!("00 04 06 06 5000 4021 00 21 02 aaaa");
    /// Its QPACK streams: encoder with Set Dynamic Table Capacity 0, decoder (empty).
    const SERVER_ENCODER: &[u8] = &hex!("02 20");
    const SERVER_DECODER: &[u8] = &hex!("03");
    /// `:status 200` (static index 25), `content-length: 5` (literal value, name at static
    /// index 4): HEADERS frame.
    const HEAD_200_LEN5: &[u8] = &hex!("01 06 0000 d9 54 01 35");

    impl Run {
        /// A client with its control stream open and nothing else.
        fn bare(chunk: usize) -> Self {
            Self::bare_over(Mem::new(chunk))
        }

        fn bare_over(t: Mem) -> Self {
            let mut r = Self { client: Dev::new(CONFIG), t, events: Vec::new(), error: None };
            r.client.open(&mut r.t).unwrap();
            r
        }

        /// A client with its control stream open, its GET sent, and the server's control and
        /// QPACK streams delivered `chunk` bytes per read.
        fn new(chunk: usize) -> Self {
            Self::over(Mem::new(chunk))
        }

        /// [`Run::new`] over `t`.
        fn over(t: Mem) -> Self {
            let mut r = Self { client: Dev::new(CONFIG), t, events: Vec::new(), error: None };
            r.client.open(&mut r.t).unwrap();
            assert!(r.client.is_open());
            r.t.push(3, SERVER_CONTROL, false);
            r.t.push(7, SERVER_ENCODER, false);
            r.t.push(11, SERVER_DECODER, false);
            let mut scratch = [0u8; 128];
            let id = r.client.request(&mut r.t, &get(), true, &mut scratch).unwrap();
            assert_eq!(id, 0);
            r.poll();
            assert_eq!(r.error, None);
            assert!(r.client.peer_settings_received());
            assert_eq!(r.client.peer_max_field_section_size(), Some(4096));
            r
        }

        fn poll(&mut self) {
            let events = &mut self.events;
            let res = self.client.poll(&mut self.t, |e| {
                events.push(match e {
                    Event::Response { status } => Ev::Response(status),
                    Event::Trailers => Ev::Trailers,
                    Event::Data(d) => Ev::Data(d.to_vec()),
                    Event::Finished => Ev::Finished,
                    Event::StreamError(e) => Ev::StreamError(e),
                    Event::Reset(c) => Ev::Reset(c),
                })
            });
            if let Err(e) = res {
                self.error.get_or_insert(e);
            }
        }

        /// Delivers `bytes` (and FIN) on stream `id` and polls.
        fn feed(&mut self, id: u64, bytes: &[u8], fin: bool) {
            self.t.push(id, bytes, fin);
            self.poll();
        }

        /// The response body bytes received, joined.
        fn body(&self) -> Vec<u8> {
            let mut b = Vec::new();
            for e in &self.events {
                if let Ev::Data(d) = e {
                    b.extend_from_slice(d);
                }
            }
            b
        }

        /// The events without Data (whose splitting depends on the chunk size).
        fn framing(&self) -> Vec<Ev> {
            self.events.iter().filter(|e| !matches!(e, Ev::Data(_))).cloned().collect()
        }

        fn assert_stream_error(&self, e: H3Error) {
            assert_eq!(self.error, None);
            assert_eq!(self.framing().last(), Some(&Ev::StreamError(e)));
            assert!(self.t.stops.contains(&(0, e.code())));
            // The GET's FIN went out: nothing to reset.
            assert!(self.t.resets.is_empty());
        }

        fn assert_connection_error(&self, e: H3Error) {
            assert_eq!(self.error, Some(e));
            assert_eq!(self.t.closed, Some(e.code()));
            assert_eq!(self.client.closed(), Some(e));
        }
    }

    fn get() -> ClientRequest<'static> {
        ClientRequest::get(b"mote.example", b"/5120")
    }

    /// Every test runs with whole deliveries and byte by byte.
    fn each_chunk(test: impl Fn(usize)) {
        for chunk in [1024, 1] {
            test(chunk);
        }
    }

    #[cfg(any(feature = "server", feature = "quic"))]
    #[test]
    fn content_length_digits() {
        for n in [0, 7, 10, 1024, 99_999, usize::MAX] {
            let mut buf = [0u8; 20];
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }

    #[test]
    fn methods_are_their_static_entries() {
        // RFC 9204 Appendix A: the index each method goes on the wire as.
        for m in [Method::Get, Method::Head, Method::Post] {
            let (name, value) = crate::qpack::static_table::STATIC_TABLE[m as usize];
            assert_eq!((name, value), (&b":method"[..], m.name()), "{m:?}");
        }
    }

    #[test]
    fn requests_with_an_empty_path_or_line_breaks_are_refused() {
        let mut r = Run::new(1024);
        r.feed(0, HEAD_200_LEN5, false);
        r.feed(0, &hex!("00 05 68656c6c6f"), true);
        assert_eq!(r.framing(), [Ev::Response(200), Ev::Finished]);
        let mut scratch = [0u8; 128];
        for (authority, path) in [
            (&b"mote.example"[..], &b""[..]),
            (b"mote.example", b"/a\r\nx: y"),
            (b"mote.example", b"/a\0"),
            (b"mote.example\n", b"/a"),
        ] {
            let bad = ClientRequest::get(authority, path);
            let got = r.client.request(&mut r.t, &bad, true, &mut scratch);
            assert_eq!(got, Err(SendError::InvalidState), "{path:?}");
        }
        assert!(!r.t.out.contains_key(&4), "nothing was sent");
        let good = ClientRequest::get(b"mote.example", b"/a");
        assert_eq!(r.client.request(&mut r.t, &good, true, &mut scratch), Ok(4));
    }

    #[test]
    fn wire_bytes_match_the_general_session() {
        // Our control stream, the GET's and the POST's bytes equal what
        // `connection::Connection` sends for the same configuration and requests.
        let mut conn = Connection::new(Role::Client, CONFIG);
        let mut ct = Mem::new(1024);
        conn.open(&mut ct).unwrap();
        let mut scratch = [0u8; 128];
        let mut s = conn.open_request(&mut ct).unwrap();
        let general_get = Request::get(b"mote.example", b"/5120");
        conn.send_request(&mut ct, &mut s, &general_get, true, &mut scratch).unwrap();
        let headers: [(&[u8], &[u8]); 1] = [(b"content-length", b"1024")];
        let general_post = Request::post(b"mote.example", b"/upload").with_headers(&headers);
        let mut p = conn.open_request(&mut ct).unwrap();
        conn.send_request(&mut ct, &mut p, &general_post, false, &mut scratch).unwrap();
        let post = ClientRequest::post(b"mote.example", b"/upload", 1024);
        conn.send_data(&mut ct, &mut p, &[7; 1024], true).unwrap();

        let mut r = Run::new(1024);
        r.feed(0, HEAD_200_LEN5, false);
        r.feed(0, &hex!("00 05 68656c6c6f"), true);
        assert_eq!(r.framing(), [Ev::Response(200), Ev::Finished]);
        assert_eq!(r.body(), b"hello");
        assert_eq!(r.client.request(&mut r.t, &post, false, &mut scratch), Ok(4));
        assert_eq!(r.client.send_data(&mut r.t, &[7; 1024], true), Ok(1024));
        assert_eq!(r.t.out, ct.out);
        // The control stream's bytes, spelled out: type, SETTINGS (field section size 512,
        // grease setting 0x40 = 1), a reserved frame (0x5f, empty).
        assert_eq!(r.t.out[&2], (hex!("00 04 06 06 4200 4040 01 405f 00").to_vec(), false));
        assert!(r.t.out[&0].1 && r.t.out[&4].1, "both requests end with FIN");
    }

    #[test]
    fn response_with_body_and_trailers() {
        each_chunk(|chunk| {
            let mut r = Run::new(chunk);
            // An interim 103, the head, an unknown frame (skipped), DATA in two frames, a
            // grease frame, trailers (`x-t: 1`, literal name), FIN.
            r.feed(0, &hex!("01 03 0000 d8"), false); // 103 (static index 24)
            r.feed(0, HEAD_200_LEN5, false);
            r.feed(0, &hex!("21 03 010203 00 02 6865 00 03 6c6c6f 405f 00"), false);
            r.feed(0, &hex!("01 08 0000 23 782d74 01 31"), true);
            assert_eq!(r.error, None);
            assert_eq!(
                r.framing(),
                [Ev::Response(103), Ev::Response(200), Ev::Trailers, Ev::Finished]
            );
            assert_eq!(r.body(), b"hello");
            assert!(r.t.stops.is_empty() && r.t.resets.is_empty());
            // The next request may start; the previous one is over.
            let mut scratch = [0u8; 128];
            assert_eq!(r.client.request(&mut r.t, &get(), true, &mut scratch), Ok(4));
        });
    }

    /// `Client::init` over a used client (state, stream slots and buffers all dirty) gives
    /// exactly `Client::new`'s client (including the capped HEADERS limit), and that client
    /// runs a request.
    /// The device's setup, built at compile time.
    const SETUP: Setup = Setup::new(CONFIG);

    /// What the general encoder (`Connection::open`'s) writes on our control stream for
    /// `config`.
    fn general_control_stream(config: &Config) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let mut out = Out::new(&mut buf);
        out.put_varint(stream_type::CONTROL).unwrap();
        let settings = Settings {
            max_field_section_size: Some(config.max_field_section_size),
            ..Settings::default()
        };
        settings.write_frame(config.grease, &mut out).unwrap();
        if let Some(g) = config.grease {
            crate::frame::write_frame(grease_id(g.wrapping_add(1)), &[], &mut out).unwrap();
        }
        out.written().to_vec()
    }

    /// The control stream's bytes encoded by `Setup::new` (a `const fn`) are the general
    /// encoder's, for limits at every varint size boundary and every grease value size; a
    /// limit above the varint range is sent as 2^62 - 1; the longest fills `CONTROL_BYTES`.
    #[test]
    fn setup_encodes_the_control_stream_as_the_general_session() {
        let limits = [0, 63, 64, 16383, 16384, (1 << 30) - 1, 1 << 30, crate::coding::VARINT_MAX];
        let greases = [
            None,
            Some(0),
            Some(1),
            Some(62),
            Some(63),
            Some(528),
            Some(u32::MAX - 1),
            Some(u32::MAX),
        ];
        let mut longest = 0;
        for grease in greases {
            for max_field_section_size in limits {
                let config = Config { max_field_section_size, grease, ..CONFIG };
                let setup = Setup::new(config);
                let bytes = &setup.control[..usize::from(setup.control_len)];
                assert_eq!(bytes, general_control_stream(&config), "{config:?}");
                longest = longest.max(bytes.len());
            }
            let top =
                Config { max_field_section_size: crate::coding::VARINT_MAX, grease, ..CONFIG };
            let above = Config { max_field_section_size: u64::MAX, ..top };
            assert_eq!(Setup::new(above).control, Setup::new(top).control, "{grease:?}");
        }
        assert_eq!(longest, CONTROL_BYTES);
        assert_eq!(SETUP.control, Setup::new(CONFIG).control);
        assert_eq!(*SETUP.config(), CONFIG);
    }

    #[test]
    fn init_writes_a_new_client_in_place() {
        for config in [CONFIG, Config::DEVICE, Config::SERVER] {
            let mut r = Run::new(1);
            r.feed(0, &HEAD_200_LEN5[..5], false);
            r.feed(3, &hex!("07 01 00"), false); // GOAWAY 0
            assert_eq!(r.client.goaway_received(), Some(0));
            let mut slot = core::mem::MaybeUninit::new(r.client);
            let fresh = Dev::init(&mut slot, &Setup::new(config));
            assert_eq!(format!("{fresh:?}"), format!("{:?}", Dev::new(config)));
            assert!(fresh.st.setup.config.max_encoded_field_section <= 256);
        }
        let mut slot = core::mem::MaybeUninit::new(Run::new(1).client);
        let mut r = Run::bare(7);
        r.client = core::mem::replace(Dev::init(&mut slot, &SETUP), Dev::new(CONFIG));
        r.client.open(&mut r.t).unwrap();
        r.t.push(3, SERVER_CONTROL, false);
        let mut scratch = [0u8; 128];
        assert_eq!(r.client.request(&mut r.t, &get(), true, &mut scratch), Ok(0));
        r.feed(0, HEAD_200_LEN5, false);
        r.feed(0, &hex!("00 05 68656c6c6f"), true);
        assert_eq!(r.error, None);
        assert_eq!(r.framing(), [Ev::Response(200), Ev::Finished]);
        assert_eq!(r.body(), b"hello");
    }

    #[test]
    fn one_request_at_a_time() {
        let mut r = Run::new(1024);
        let mut scratch = [0u8; 128];
        assert_eq!(
            r.client.request(&mut r.t, &get(), true, &mut scratch),
            Err(SendError::InvalidState)
        );
        // No body after FIN.
        assert_eq!(r.client.send_data(&mut r.t, b"x", true), Err(SendError::InvalidState));
    }

    #[test]
    fn bodyless_responses_ignore_content_length() {
        // RFC 9110 §6.4.1, §8.6: 204 and 304 have no content.
        // `:status 204` (static index 64), `:status 304` (index 26), and 304 as a literal
        // value with the name of index 24.
        for status in [&hex!("ff01")[..], &hex!("da")[..], &hex!("5f09 03 333034")[..]] {
            let mut r = Run::new(1024);
            let mut frame = vec![0x01, 4 + status.len() as u8, 0, 0];
            frame.extend_from_slice(status);
            frame.extend_from_slice(&hex!("54 01 35"));
            frame[1] = (frame.len() - 2) as u8;
            r.feed(0, &frame, true);
            assert_eq!(r.error, None);
            assert_eq!(r.framing().last(), Some(&Ev::Finished), "{status:02x?}");
        }
    }

    #[test]
    fn bodyless_responses_carry_no_content() {
        // RFC 9110 §6.4.1, RFC 9114 §4.1.2: DATA with content after a 204 or 304 head, or
        // after the head of a response to HEAD, is malformed; empty DATA frames are not.
        let head = ClientRequest { method: Method::Head, ..get() };
        let cases: [(ClientRequest<'_>, &[u8], u16); 3] =
            [(get(), &hex!("ff01"), 204), (get(), &hex!("da"), 304), (head, &hex!("d9"), 200)];
        for (request, status, code) in cases {
            each_chunk(|chunk| {
                let mut r = Run::new(chunk);
                let mut frame = vec![0x01, 2 + status.len() as u8, 0, 0];
                frame.extend_from_slice(status);
                if request.method == Method::Head {
                    // The GET is over: send the HEAD after it.
                    r.feed(0, &hex!("01 03 0000 d9"), true);
                    let mut scratch = [0u8; 128];
                    assert_eq!(r.client.request(&mut r.t, &request, true, &mut scratch), Ok(4));
                    r.events.clear();
                }
                let id = r.client.request_id().unwrap();
                r.feed(id, &frame, false);
                r.feed(id, &hex!("00 00"), false);
                assert_eq!(r.framing(), [Ev::Response(code)]);
                r.feed(id, &hex!("00 01 61"), true);
                assert_eq!(r.error, None);
                assert_eq!(r.framing().last(), Some(&Ev::StreamError(H3Error::MessageError)));
                assert!(r.t.stops.contains(&(id, H3Error::MessageError.code())));
                assert!(r.body().is_empty());
            });
        }
    }

    #[test]
    fn peer_close_is_not_a_closed_critical_stream() {
        // After the peer's CONNECTION_CLOSE QUIC has no streams left: every stream reads
        // as gone. That is not H3_CLOSED_CRITICAL_STREAM (the app sees the peer's close).
        let mut r = Run::new(1024);
        for s in r.t.incoming.values_mut() {
            s.over = true;
        }
        r.poll();
        assert_eq!(r.error, None);
        assert_eq!(r.t.closed, None);
        assert_eq!(r.client.closed(), None);
        // A reset or finished control stream still is (test `control_stream_rules`).
    }

    #[test]
    fn malformed_responses_are_stream_errors() {
        // RFC 9114 §4.1.2, §4.3.2: each is H3_MESSAGE_ERROR on the request stream only.
        let cases: &[(&[u8], bool)] = &[
            // No :status (content-length only).
            (&hex!("01 05 0000 54 01 35"), true),
            // :status twice.
            (&hex!("01 04 0000 d9 d9"), true),
            // A regular field before :status.
            (&hex!("01 06 0000 54 01 30 d9"), true),
            // A request pseudo-header (:path /, static index 1).
            (&hex!("01 04 0000 d9 c1"), true),
            // An upper-case field name (literal name `X`).
            (&hex!("01 07 0000 d9 21 58 01 31"), true),
            // A connection-specific field (`connection: x`).
            (&hex!("01 11 0000 d9 27 03 636f6e6e656374696f6e 01 78"), true),
            // A value with a line feed.
            (&hex!("01 07 0000 d9 21 78 01 0a"), true),
            // content-length not a number.
            (&hex!("01 06 0000 d9 54 01 2d"), true),
            // More content than declared.
            (&hex!("01 06 0000 d9 54 01 35  00 06 68656c6c6f21"), false),
            // Less content than declared, then FIN.
            (&hex!("01 06 0000 d9 54 01 35  00 04 68656c6c"), true),
            // FIN without a head.
            (&hex!(""), true),
            // Pseudo-header in trailers.
            (&hex!("01 03 0000 d9  01 03 0000 d9"), true),
            // 101 (RFC 9114 §4.5: not used in HTTP/3), as a literal `:status` value.
            (&hex!("01 08 0000 5f09 03 313031"), false),
            // Trailers before the declared content is complete.
            (&hex!("01 06 0000 d9 54 01 35  01 08 0000 23 782d74 01 31"), true),
        ];
        for (bytes, fin) in cases {
            each_chunk(|chunk| {
                let mut r = Run::new(chunk);
                r.feed(0, bytes, *fin);
                assert_eq!(r.error, None, "{bytes:02x?}");
                r.assert_stream_error(H3Error::MessageError);
                // Nothing more is delivered from the stream.
                let before = r.events.len();
                r.feed(0, &hex!("00 01 61"), true);
                assert_eq!(r.events.len(), before, "{bytes:02x?}");
            });
        }
    }

    #[test]
    fn oversized_sections_are_excessive_load() {
        // A HEADERS frame declared above our encoded limit (256), before any of it arrives.
        let mut r = Run::new(1024);
        r.feed(0, &hex!("01 41 01"), false);
        r.assert_stream_error(H3Error::ExcessiveLoad);
        // A configured limit above what the 272-byte buffers hold is lowered to 256: a
        // larger frame is refused instead of waited for forever.
        let mut c = Dev::new(Config { max_encoded_field_section: 1024, ..CONFIG });
        let mut t = Mem::new(1024);
        c.open(&mut t).unwrap();
        c.request(&mut t, &get(), true, &mut [0u8; 128]).unwrap();
        t.push(0, &hex!("01 4101"), false);
        let mut events = Vec::new();
        c.poll(&mut t, |e| events.push(format!("{e:?}"))).unwrap();
        assert_eq!(events, ["StreamError(ExcessiveLoad)"]);
        // A section decoding above SETTINGS_MAX_FIELD_SECTION_SIZE (512): 13 indexed
        // `:status 200` lines of 42 bytes each (RFC 9114 §4.2.2), 15 bytes encoded.
        let mut r = Run::new(1024);
        let mut frame = hex!("01 0f 0000").to_vec();
        frame.extend_from_slice(&[0xd9; 13]);
        r.feed(0, &frame, false);
        r.assert_stream_error(H3Error::ExcessiveLoad);
        // Twelve lines (504 bytes) decode, and are refused for the duplicate :status.
        let mut r = Run::new(1024);
        frame.pop();
        frame[1] = 0x0e;
        r.feed(0, &frame, false);
        r.assert_stream_error(H3Error::MessageError);
    }

    #[test]
    fn longest_frame_headers_fit() {
        // RFC 9000 §16: varints need not be shortest. A 256-byte SETTINGS payload (unknown
        // settings) and a 256-byte HEADERS payload behind 8-byte type and length fit the
        // 272-byte stream buffers, delivered whole or byte by byte.
        each_chunk(|chunk| {
            let mut r = Run::bare(chunk);
            let mut settings = hex!("c000000000000004 c000000000000100").to_vec();
            // SETTINGS_MAX_FIELD_SECTION_SIZE 512, then reserved identifiers 0x1f * k + 0x21
            // (2-byte varints): one with a 2-byte value, 83 with a 1-byte value.
            let mut payload = hex!("06 4200").to_vec();
            for k in 1..=84u64 {
                let id = 0x21 + 0x1f * k;
                payload.extend_from_slice(&[0x40 | (id >> 8) as u8, id as u8]);
                payload.extend_from_slice(if k == 1 { &[0x40, 0x00] } else { &[0x00] });
            }
            assert_eq!(payload.len(), 256);
            settings.extend_from_slice(&payload);
            r.feed(3, &hex!("00"), false);
            r.feed(3, &settings, false);
            assert_eq!(r.error, None, "{chunk}");
            assert_eq!(r.client.peer_max_field_section_size(), Some(512));
            let mut scratch = [0u8; 128];
            r.client.request(&mut r.t, &get(), true, &mut scratch).unwrap();
            let mut head = hex!("c000000000000001 c000000000000100").to_vec();
            // `:status 200`, then `x: aaa…` (literal name, a 249-byte value).
            let mut block = hex!("0000 d9 21 78 7f 7a").to_vec();
            block.extend(std::iter::repeat_n(b'a', 249));
            assert_eq!(block.len(), 256);
            head.extend_from_slice(&block);
            r.feed(0, &head, true);
            assert_eq!(r.error, None, "{chunk}");
            assert_eq!(r.framing(), [Ev::Response(200), Ev::Finished], "{chunk}");
        });
    }

    #[test]
    fn request_stream_frame_errors() {
        // (bytes, fin, connection error): RFC 9114 §7.1, §7.2.4, §7.2.5, §7.2.8, §4.1.
        let cases: &[(&[u8], bool, H3Error)] = &[
            // DATA before the head.
            (&hex!("00 01 61"), false, H3Error::FrameUnexpected),
            // SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH on a request stream.
            (&hex!("04 00"), false, H3Error::FrameUnexpected),
            (&hex!("07 01 00"), false, H3Error::FrameUnexpected),
            (&hex!("0d 01 00"), false, H3Error::FrameUnexpected),
            (&hex!("03 01 00"), false, H3Error::FrameUnexpected),
            // HTTP/2-only frame types.
            (&hex!("02 00"), false, H3Error::FrameUnexpected),
            (&hex!("06 00"), false, H3Error::FrameUnexpected),
            (&hex!("08 00"), false, H3Error::FrameUnexpected),
            (&hex!("09 00"), false, H3Error::FrameUnexpected),
            // PUSH_PROMISE: we never sent MAX_PUSH_ID.
            (&hex!("05 04 00 0000 d9"), false, H3Error::IdError),
            // HEADERS after trailers.
            (&hex!("01 03 0000 d9  01 02 0000  01 02 0000"), false, H3Error::FrameUnexpected),
            // FIN inside a frame.
            (&hex!("01 03 0000 d9  00 05 6865"), true, H3Error::FrameError),
            (&hex!("01 03 0000"), true, H3Error::FrameError),
            // A dynamic table reference (Required Insert Count 1).
            (&hex!("01 03 0200 80"), false, H3Error::QpackDecompressionFailed),
            // A section that does not decode (truncated literal).
            (&hex!("01 04 0000 5f 09"), false, H3Error::QpackDecompressionFailed),
        ];
        for (bytes, fin, e) in cases {
            each_chunk(|chunk| {
                let mut r = Run::new(chunk);
                r.feed(0, bytes, *fin);
                r.assert_connection_error(*e);
                // Closed: every call says so.
                r.error = None;
                r.poll();
                assert_eq!(r.error, Some(*e));
                let mut s = [0u8; 64];
                assert_eq!(
                    r.client.request(&mut r.t, &get(), true, &mut s),
                    Err(SendError::Closed(*e))
                );
            });
        }
    }

    #[test]
    fn server_reset_and_stop_sending() {
        let mut r = Run::new(1024);
        r.feed(0, HEAD_200_LEN5, false);
        r.t.incoming.get_mut(&0).unwrap().reset = Some(0x10c);
        r.poll();
        assert_eq!(r.error, None);
        assert_eq!(r.framing(), [Ev::Response(200), Ev::Reset(0x10c)]);
        // A POST whose sending side the server stops: we reset it with its code.
        let mut scratch = [0u8; 128];
        let post = ClientRequest::post(b"mote.example", b"/upload", 1);
        assert_eq!(r.client.request(&mut r.t, &post, false, &mut scratch), Ok(4));
        assert_eq!(r.client.on_stop_sending(&mut r.t, 4, 0x10b), Ok(()));
        assert_eq!(r.t.resets, [(4, 0x10b)]);
        assert_eq!(r.client.send_data(&mut r.t, b"x", true), Err(SendError::InvalidState));
        // STOP_SENDING on our control stream closes the connection.
        assert_eq!(r.client.on_stop_sending(&mut r.t, 2, 0), Err(H3Error::ClosedCriticalStream));
        assert_eq!(r.t.closed, Some(0x104));
    }

    #[test]
    fn control_stream_rules() {
        // (server control stream bytes, fin, connection error): RFC 9114 §6.2.1, §7.2.
        let cases: &[(&[u8], bool, H3Error)] = &[
            // The first frame is not SETTINGS.
            (&hex!("00 07 01 00"), false, H3Error::MissingSettings),
            (&hex!("00 21 00 04 00"), false, H3Error::MissingSettings),
            // SETTINGS twice, whatever the second holds (§7.2.4).
            (&hex!("00 04 00 04 00"), false, H3Error::FrameUnexpected),
            (&hex!("00 04 00 04 01 06"), false, H3Error::FrameUnexpected),
            // HTTP/2 setting identifier, duplicate setting, truncated pair.
            (&hex!("00 04 02 02 00"), false, H3Error::SettingsError),
            (&hex!("00 04 04 06 01 06 02"), false, H3Error::SettingsError),
            (&hex!("00 04 01 06"), false, H3Error::FrameError),
            // GOAWAY naming a non-request stream, or a larger ID than before.
            (&hex!("00 04 00 07 01 01"), false, H3Error::IdError),
            (&hex!("00 04 00 07 01 04 07 01 08"), false, H3Error::IdError),
            // CANCEL_PUSH (no push allowed), MAX_PUSH_ID (clients send it).
            (&hex!("00 04 00 03 01 00"), false, H3Error::IdError),
            (&hex!("00 04 00 0d 01 00"), false, H3Error::FrameUnexpected),
            // Request-stream and HTTP/2 frames.
            (&hex!("00 04 00 01 00"), false, H3Error::FrameUnexpected),
            (&hex!("00 04 00 00 00"), false, H3Error::FrameUnexpected),
            (&hex!("00 04 00 06 00"), false, H3Error::FrameUnexpected),
            // A GOAWAY frame with trailing bytes.
            (&hex!("00 04 00 07 02 00 00"), false, H3Error::FrameError),
            // SETTINGS longer than we accept.
            (&hex!("00 04 4101"), false, H3Error::ExcessiveLoad),
            // The control stream ends.
            (&hex!("00 04 00"), true, H3Error::ClosedCriticalStream),
        ];
        for (bytes, fin, e) in cases {
            each_chunk(|chunk| {
                let mut r = Run::bare(chunk);
                r.feed(3, bytes, *fin);
                r.assert_connection_error(*e);
            });
        }
        // A reset control stream.
        let mut r = Run::new(1024);
        r.t.incoming.get_mut(&3).unwrap().reset = Some(0);
        r.poll();
        r.assert_connection_error(H3Error::ClosedCriticalStream);
    }

    /// Every frame type of RFC 9114 §7.2 Table 1, the unassigned ones around it and
    /// reserved or unknown ones (one with an 8-byte type) on the control stream (after
    /// SETTINGS) and on a request stream (after a head), against the table written out
    /// here: the frames of the other stream kind and the HTTP/2-only types (§7.2.8) are
    /// H3_FRAME_UNEXPECTED, a push ID is H3_ID_ERROR (§4.6), a second SETTINGS is
    /// H3_FRAME_UNEXPECTED (§7.2.4), the rest is accepted or skipped.
    #[test]
    fn frame_types_by_stream() {
        fn expected(request: bool, ty: u64) -> Option<H3Error> {
            match (request, ty) {
                (true, 0x00 | 0x01) | (false, 0x07) => None,
                (true, 0x05) | (false, 0x03) => Some(H3Error::IdError),
                (_, 0x00..=0x09 | 0x0d) => Some(H3Error::FrameUnexpected),
                _ => None,
            }
        }
        let types = (0x00..=0x0f).chain([0x21, 0x3fff, 0x4000_0000]);
        for ty in types {
            for request in [false, true] {
                // A one-byte payload each frame type accepts where it is allowed: DATA,
                // GOAWAY 0; for HEADERS an empty trailer section, two bytes.
                let payload: &[u8] = if ty == 0x01 { &[0, 0] } else { &[0] };
                let mut frame = [0u8; 16];
                let mut out = Out::new(&mut frame);
                out.put_varint(ty).unwrap();
                out.put_varint(payload.len() as u64).unwrap();
                out.put_slice(payload).unwrap();
                each_chunk(|chunk| {
                    let mut r = Run::new(chunk);
                    if request {
                        r.feed(0, &hex!("01 03 0000 d9"), false);
                        r.feed(0, out.written(), false);
                    } else {
                        r.feed(3, out.written(), false);
                    }
                    match expected(request, ty) {
                        Some(e) => r.assert_connection_error(e),
                        None => {
                            assert_eq!(r.error, None, "{ty:#x} {request}");
                            let failed = r.events.iter().any(|e| matches!(e, Ev::StreamError(_)));
                            assert!(!failed, "{ty:#x} {request}");
                        }
                    }
                });
            }
        }
    }

    #[test]
    fn goaway_stops_new_requests() {
        let mut r = Run::new(1024);
        r.feed(3, &hex!("07 01 04"), false);
        assert_eq!(r.error, None);
        assert_eq!(r.client.goaway_received(), Some(4));
        // A lower ID later is fine.
        r.feed(3, &hex!("07 01 00"), false);
        assert_eq!(r.client.goaway_received(), Some(0));
        // The GET (ID 0 < 4) still completes; no new request starts.
        r.feed(0, &hex!("01 03 0000 d9"), true);
        assert_eq!(r.framing(), [Ev::Response(200), Ev::Finished]);
        let mut s = [0u8; 64];
        assert_eq!(r.client.request(&mut r.t, &get(), true, &mut s), Err(SendError::GoingAway));
    }

    /// `send_request` with an encoded request sends what `request` sends (the same bytes in
    /// a device-only build, the same fields in every build), leaves the same state, and
    /// refuses what `request` refuses, in the same order.
    #[test]
    fn send_request_sends_what_request_sends() {
        let post = ClientRequest::post(b"mote.example", b"/upload", 1024);
        let encoded = EncodedRequest::<64>::new(&post);
        let mut a = Run::bare(1024);
        let mut b = Run::bare(1024);
        let mut scratch = [0u8; 128];
        assert_eq!(a.client.request(&mut a.t, &post, false, &mut scratch), Ok(0));
        assert_eq!(b.client.send_request(&mut b.t, &encoded, false), Ok(0));
        #[cfg(not(any(feature = "server", feature = "quic")))]
        assert_eq!(a.t.out, b.t.out);
        assert_eq!(format!("{:?}", a.client.slots), format!("{:?}", b.client.slots));
        // The POST is not over: no second request.
        assert_eq!(b.client.send_request(&mut b.t, &encoded, false), Err(SendError::InvalidState));
        assert_eq!(b.client.send_data(&mut b.t, &[7; 1024], true), Ok(1024));
        b.feed(0, HEAD_200_LEN5, false);
        b.feed(0, &hex!("00 05 68656c6c6f"), true);
        assert_eq!(b.framing(), [Ev::Response(200), Ev::Finished]);
        // A refused request: InvalidState once the previous one is over.
        let bad = EncodedRequest::<64>::new(&ClientRequest::get(b"a", b""));
        assert_eq!(b.client.send_request(&mut b.t, &bad, true), Err(SendError::InvalidState));
        // Too large for the peer's limit (182 bytes, as in
        // `blocked_control_stream_and_request_are_retried`).
        let mut c = Dev::new(CONFIG);
        let mut t = Mem::new(1024);
        c.open(&mut t).unwrap();
        t.push(3, &hex!("00 04 03 06 40b6"), false);
        c.poll(&mut t, |_| {}).unwrap();
        let long = EncodedRequest::<256>::new(&ClientRequest::get(b"mote.example", &[b'a'; 100]));
        assert_eq!(c.send_request(&mut t, &long, true), Err(SendError::FieldSectionTooLarge));
        let get = EncodedRequest::<64>::new(&get());
        assert_eq!(c.send_request(&mut t, &get, true), Ok(0));
        // After GOAWAY: GoingAway before anything about the request.
        b.feed(3, SERVER_CONTROL, false);
        b.feed(3, &hex!("07 01 04"), false);
        assert_eq!(b.error, None);
        assert_eq!(b.client.send_request(&mut b.t, &bad, true), Err(SendError::GoingAway));
    }

    #[test]
    fn peer_unidirectional_streams() {
        // The QPACK streams: capacity 0 instructions and Stream Cancellations are fine.
        let mut r = Run::new(1);
        r.feed(7, &hex!("20 20"), false);
        r.feed(11, &hex!("41 7f 80 01"), false);
        assert_eq!(r.error, None);
        // A grease stream type: refused with STOP_SENDING, nothing else.
        let mut r = Run::bare(1);
        r.feed(3, SERVER_CONTROL, false);
        r.feed(7, &hex!("21 0102030405"), false);
        assert_eq!(r.error, None);
        assert_eq!(r.t.stops, [(7, H3Error::StreamCreationError.code())]);
        // Its slot is free again: the next peer streams are read.
        r.feed(11, &hex!("4021 00"), true);
        r.feed(15, SERVER_ENCODER, false);
        r.feed(19, SERVER_DECODER, false);
        assert_eq!(r.error, None);
        assert_eq!(r.t.stops.len(), 2);

        // (stream, bytes, fin, connection error).
        let cases: &[(u64, &[u8], bool, H3Error)] = &[
            // Insertions and a non-zero capacity on the encoder stream.
            (7, &hex!("c0 01 61"), false, H3Error::QpackEncoderStreamError),
            (7, &hex!("40 01 61 01 62"), false, H3Error::QpackEncoderStreamError),
            (7, &hex!("21"), false, H3Error::QpackEncoderStreamError),
            (7, &hex!("00"), false, H3Error::QpackEncoderStreamError),
            // Section Acknowledgment, Insert Count Increment, an overlong integer.
            (11, &hex!("80"), false, H3Error::QpackDecoderStreamError),
            (11, &hex!("01"), false, H3Error::QpackDecoderStreamError),
            (11, &hex!("7f ffffffffffffffffff01"), false, H3Error::QpackDecoderStreamError),
            // Critical streams end.
            (7, &hex!(""), true, H3Error::ClosedCriticalStream),
            (11, &hex!(""), true, H3Error::ClosedCriticalStream),
            // A server-initiated bidirectional stream.
            (1, &hex!("01 03 0000 d9"), false, H3Error::StreamCreationError),
        ];
        for (id, bytes, fin, e) in cases {
            each_chunk(|chunk| {
                let mut r = Run::new(chunk);
                r.feed(*id, bytes, *fin);
                r.assert_connection_error(*e);
            });
        }
        // A second control / encoder / decoder stream (RFC 9114 §6.2.1, RFC 9204 §4.2), a
        // push stream (we never sent MAX_PUSH_ID, §4.6).
        let cases: &[(&[u8], &[u8], H3Error)] = &[
            (SERVER_CONTROL, SERVER_CONTROL, H3Error::StreamCreationError),
            (SERVER_ENCODER, SERVER_ENCODER, H3Error::StreamCreationError),
            (SERVER_DECODER, SERVER_DECODER, H3Error::StreamCreationError),
            (SERVER_DECODER, &hex!("01 00"), H3Error::IdError),
        ];
        for (first, second, e) in cases {
            each_chunk(|chunk| {
                let mut r = Run::bare(chunk);
                r.feed(3, first, false);
                assert_eq!(r.error, None);
                r.feed(7, second, false);
                r.assert_connection_error(*e);
            });
        }
    }

    /// A transport that counts the peer's unidirectional streams (the device adapter): the
    /// same stream rules as over a listing one, each stream in its own slot.
    #[test]
    fn counted_peer_streams() {
        each_chunk(|chunk| {
            let mut r = Run::over(Mem::counting(chunk));
            r.feed(7, &hex!("20 20"), false);
            r.feed(11, &hex!("41 7f 80 01"), false);
            r.feed(0, HEAD_200_LEN5, false);
            r.feed(0, &hex!("00 05 68656c6c6f"), true);
            assert_eq!(r.error, None);
            assert_eq!(r.framing(), [Ev::Response(200), Ev::Finished]);
            assert_eq!(r.body(), b"hello");
            assert!(r.t.stops.is_empty());
        });
        // A grease stream type first (refused with STOP_SENDING, read to its end), a stream
        // that ends before its type, then the control stream: read.
        each_chunk(|chunk| {
            let mut r = Run::bare_over(Mem::counting(chunk));
            r.feed(3, &hex!("21 0102030405"), true);
            r.feed(7, &[], true);
            assert_eq!(r.t.stops, [(3, H3Error::StreamCreationError.code())]);
            r.feed(11, SERVER_CONTROL, false);
            assert_eq!(r.error, None);
            assert!(r.client.peer_settings_received());
        });
        // Streams opened by a later one (RFC 9000 §3.2) are read once their bytes come.
        let mut r = Run::bare_over(Mem::counting(1));
        r.feed(11, SERVER_DECODER, false);
        r.feed(3, SERVER_CONTROL, false);
        assert_eq!(r.error, None);
        assert!(r.client.peer_settings_received());
        // Connection errors on the peer's streams.
        let cases: &[(u64, &[u8], bool, H3Error)] = &[
            (7, &hex!("c0 01 61"), false, H3Error::QpackEncoderStreamError),
            (11, &hex!("80"), false, H3Error::QpackDecoderStreamError),
            (3, &hex!(""), true, H3Error::ClosedCriticalStream),
            (7, &hex!(""), true, H3Error::ClosedCriticalStream),
            (3, &hex!("01 03 0000 d9"), false, H3Error::FrameUnexpected),
        ];
        for (id, bytes, fin, e) in cases {
            each_chunk(|chunk| {
                let mut r = Run::over(Mem::counting(chunk));
                r.feed(*id, bytes, *fin);
                r.assert_connection_error(*e);
            });
        }
        // A second control / encoder / decoder stream, a push stream.
        let cases: &[(&[u8], &[u8], H3Error)] = &[
            (SERVER_CONTROL, SERVER_CONTROL, H3Error::StreamCreationError),
            (SERVER_ENCODER, SERVER_ENCODER, H3Error::StreamCreationError),
            (SERVER_DECODER, SERVER_DECODER, H3Error::StreamCreationError),
            (SERVER_DECODER, &hex!("01 00"), H3Error::IdError),
        ];
        for (first, second, e) in cases {
            each_chunk(|chunk| {
                let mut r = Run::bare_over(Mem::counting(chunk));
                r.feed(3, first, false);
                assert_eq!(r.error, None);
                r.feed(7, second, false);
                r.assert_connection_error(*e);
            });
        }
    }

    #[test]
    fn streams_beyond_the_table_are_refused() {
        // Three peer uni streams fill the table; a fourth is refused (H3_EXCESSIVE_LOAD)
        // and never read.
        let mut r = Run::new(1024);
        r.feed(15, &hex!("2102"), false);
        assert_eq!(r.t.stops, [(15, H3Error::ExcessiveLoad.code())]);
        assert_eq!(r.error, None);
    }

    #[test]
    fn stream_closed_before_its_type_is_tolerated() {
        let mut r = Run::bare(1024);
        r.feed(3, &[], true);
        assert_eq!(r.error, None);
        assert!(r.t.stops.is_empty());
        // Its slot is free again, and a control stream may follow.
        r.feed(7, SERVER_CONTROL, false);
        assert_eq!(r.error, None);
        assert!(r.client.peer_settings_received());
    }

    #[test]
    fn blocked_control_stream_and_request_are_retried() {
        let mut c = Dev::new(CONFIG);
        let mut t = Mem::new(1024);
        t.capacity = 4;
        assert_eq!(c.open(&mut t), Err(SendError::Blocked));
        assert!(!c.is_open());
        t.capacity = 1 << 20;
        assert_eq!(c.open(&mut t), Ok(()));
        assert!(c.is_open());
        assert_eq!(t.out.len(), 1, "one control stream");
        let mut scratch = [0u8; 128];
        t.capacity = 4;
        assert_eq!(c.request(&mut t, &get(), true, &mut scratch), Err(SendError::Blocked));
        t.capacity = 1 << 20;
        assert_eq!(c.request(&mut t, &get(), true, &mut scratch), Ok(0));
        assert_eq!(t.next_bidi, 4, "the same stream");
        // A head larger than the peer's SETTINGS_MAX_FIELD_SECTION_SIZE is not sent
        // (RFC 9114 §4.2.2: the GET's is 4 × 32 + 29 + 3 + 5 + 12 + 5 = 182 bytes).
        let big = [b'a'; 100];
        let long = ClientRequest { path: &big, ..get() };
        let mut c2 = Dev::new(CONFIG);
        let mut t2 = Mem::new(1024);
        c2.open(&mut t2).unwrap();
        t2.push(3, &hex!("00 04 03 06 40b6"), false); // max field section size 182
        c2.poll(&mut t2, |_| {}).unwrap();
        assert_eq!(
            c2.request(&mut t2, &long, true, &mut [0u8; 256]),
            Err(SendError::FieldSectionTooLarge)
        );
        assert_eq!(c2.request(&mut t2, &get(), true, &mut [0u8; 256]), Ok(0));
    }
}
