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
    frame_type, grease_id, setting_id, stream_type, write_frame_header, Frame, FrameEvent,
    FrameHeader, FrameReader, Settings, StreamKind, MAX_SETTINGS_LEN,
};
use crate::message::{self, Request};
use crate::qpack::prefix::{decode_int, PrefixError};
use crate::qpack::{decode_field_section, DecodeError, FieldEncoder, FieldSection};

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
    /// The stream is gone (we stopped reading it, or it is fully closed).
    Gone,
}

/// What the client needs from QUIC besides [`Transport`]: reading streams and listing the
/// open ones (which is how the peer's new streams are found).
pub trait Streams: Transport {
    /// Moves received bytes of stream `id` into `out`.
    fn read(&mut self, id: u64, out: &mut [u8]) -> Read;
    /// The IDs of the open streams (ours and the peer's).
    fn live_streams(&self) -> impl Iterator<Item = u64> + '_;
}

/// What [`Client::poll`] found on the request stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A checked response head (RFC 9114 §4.3.2): interim (1xx, the final one follows) or
    /// final.
    Response {
        /// The status code.
        status: u16,
        /// The fields (in the client's fields buffer).
        fields: FieldSection<'a>,
    },
    /// The checked trailer section.
    Trailers(FieldSection<'a>),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// No stream.
    Free,
    /// A peer unidirectional stream whose type has not arrived yet.
    UniType,
    Control,
    Encoder,
    Decoder,
    Request,
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

/// One stream the client reads: its state and the bytes not consumed yet.
#[derive(Debug)]
struct Slot<const CAP: usize> {
    c: Ctl,
    buf: [u8; CAP],
}

/// A stream's state (apart from its buffer, so that events can borrow the buffer while
/// the state changes).
#[derive(Debug)]
struct Ctl {
    id: u64,
    kind: Kind,
    reader: FrameReader,
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

impl<const CAP: usize> Slot<CAP> {
    const EMPTY: Self = Self {
        c: Ctl {
            id: 0,
            kind: Kind::Free,
            reader: FrameReader::new(),
            phase: Phase::Head,
            content_left: None,
            head_sent: false,
            sending: false,
            head_request: false,
            len: 0,
            fin: false,
        },
        buf: [0; CAP],
    };
}

impl Ctl {
    /// Whether the slot holds a stream that may still bring bytes. A finished peer
    /// stream's slot is free again: mote-quic forgets a stream once its end is read, and
    /// one that comes back in `live_streams` anyway reads as gone and finishes again.
    fn in_use(&self) -> bool {
        !matches!(self.kind, Kind::Free | Kind::Done)
    }

    /// Takes this slot for stream `id`.
    fn take(&mut self, id: u64, kind: Kind) {
        self.id = id;
        self.kind = kind;
        self.reader = FrameReader::new();
        self.phase = Phase::Head;
        self.content_left = None;
        self.head_sent = false;
        self.sending = false;
        self.len = 0;
        self.fin = false;
    }
}

/// Connection-wide state the stream handlers share.
#[derive(Debug)]
struct State {
    config: Config,
    closed: Option<H3Error>,
    /// Our control stream, and whether its bytes went out.
    control: Option<u64>,
    control_written: bool,
    /// The peer's SETTINGS_MAX_FIELD_SECTION_SIZE; outer `None`: no SETTINGS yet.
    peer_settings: Option<Option<u64>>,
    goaway: Option<u64>,
    /// The peer's critical streams seen (bits: control, QPACK encoder, QPACK decoder).
    seen: u8,
}

/// The request stream's slot; the others hold peer unidirectional streams.
const REQ: usize = 0;
/// Slots: the request stream and three peer unidirectional streams.
const SLOTS: usize = 4;
/// Room for the control stream's bytes: type, SETTINGS (two pairs: at most 3 + 25 bytes),
/// grease frame (at most 9 bytes).
const CONTROL_BYTES: usize = 40;
/// Room for a HEADERS frame header (1-byte type, up to 8-byte length) in front of the
/// encoded section in the caller's scratch buffer.
const HEADERS_FRAME_HEADER: usize = 9;

/// A one-request-at-a-time HTTP/3 client in fixed storage: four stream buffers of `CAP`
/// bytes and a `FIELDS`-byte decoded-fields buffer (give it
/// `Config::max_field_section_size` bytes). HEADERS payloads above `CAP - 9` bytes (and
/// above `Config::max_encoded_field_section`) are refused with H3_EXCESSIVE_LOAD.
#[derive(Debug)]
pub struct Client<const CAP: usize, const FIELDS: usize> {
    st: State,
    slots: [Slot<CAP>; SLOTS],
    fields: [u8; FIELDS],
}

impl<const CAP: usize, const FIELDS: usize> Client<CAP, FIELDS> {
    /// A client with `config` (no dynamic table; `qpack_blocked_streams` is not used).
    pub const fn new(config: Config) -> Self {
        // A SETTINGS frame of the largest accepted size must fit a stream buffer.
        const { assert!(CAP as u64 >= MAX_SETTINGS_LEN + HEADERS_FRAME_HEADER as u64) };
        let mut config = config;
        let fit = (CAP - HEADERS_FRAME_HEADER) as u64;
        if config.max_encoded_field_section > fit {
            config.max_encoded_field_section = fit;
        }
        Self {
            st: State {
                config,
                closed: None,
                control: None,
                control_written: false,
                peer_settings: None,
                goaway: None,
                seen: 0,
            },
            slots: [Slot::EMPTY; SLOTS],
            fields: [0; FIELDS],
        }
    }

    /// Whether our control stream is open.
    pub const fn is_open(&self) -> bool {
        self.st.control_written
    }

    /// The error the connection was closed with, if it is closed.
    pub const fn closed(&self) -> Option<H3Error> {
        self.st.closed
    }

    /// The ID in the last GOAWAY received.
    pub const fn goaway_received(&self) -> Option<u64> {
        self.st.goaway
    }

    /// Whether the peer's SETTINGS arrived.
    pub const fn peer_settings_received(&self) -> bool {
        self.st.peer_settings.is_some()
    }

    /// The peer's SETTINGS_MAX_FIELD_SECTION_SIZE, if it sent one (RFC 9114 §4.2.2).
    pub fn peer_max_field_section_size(&self) -> Option<u64> {
        self.st.peer_settings.flatten()
    }

    /// The request stream's ID, while one is open.
    pub fn request_id(&self) -> Option<u64> {
        let c = &self.slots.get(REQ)?.c;
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
        let id = match self.st.control {
            Some(id) => id,
            None => *self.st.control.insert(t.open_uni().ok_or(SendError::StreamLimit)?),
        };
        // Type 0x00, SETTINGS (0x04) with a one-byte length (the payload is at most 25
        // bytes), its payload, then the grease frame.
        let mut buf = [0u8; CONTROL_BYTES];
        let (head, payload) = buf.split_at_mut(3);
        let mut p = Out::new(payload);
        p.put_varint(setting_id::MAX_FIELD_SECTION_SIZE)?;
        p.put_varint(self.st.config.max_field_section_size)?;
        let grease = self.st.config.grease;
        if let Some(g) = grease {
            p.put_varint(grease_id(g))?;
            p.put_varint(u64::from(g))?;
        }
        let len = p.position();
        if let Some(g) = grease {
            // A reserved frame type with an empty payload (§7.2.8).
            p.put_varint(grease_id(g.wrapping_add(1)))?;
            p.put_u8(0)?;
        }
        let end = 3 + p.position();
        head.copy_from_slice(&[stream_type::CONTROL as u8, frame_type::SETTINGS as u8, len as u8]);
        let bytes = buf.get(..end).unwrap_or(&[]);
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
    /// with the same arguments.
    pub fn request<T: Streams>(
        &mut self,
        t: &mut T,
        request: &Request<'_>,
        end_stream: bool,
        scratch: &mut [u8],
    ) -> Result<u64, SendError> {
        self.check_open()?;
        // RFC 9114 §5.2: no new request after GOAWAY.
        if self.st.goaway.is_some() {
            return Err(SendError::GoingAway);
        }
        let peer_max = self.peer_max_field_section_size();
        let c = &mut self.slots.get_mut(REQ).ok_or(SendError::InvalidState)?.c;
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
        let body = scratch.get_mut(HEADERS_FRAME_HEADER..).ok_or(SendError::BufferTooSmall)?;
        let mut enc = FieldEncoder::new(body)?;
        request.encode(&mut enc)?;
        let size = enc.size();
        let len = enc.finish();
        // §4.2.2: respect the peer's limit.
        if peer_max.is_some_and(|max| size > max) {
            return Err(SendError::FieldSectionTooLarge);
        }
        // The frame header goes right in front of the section.
        let start = HEADERS_FRAME_HEADER - 1 - crate::coding::varint_size(len as u64);
        let mut out = Out::new(scratch.get_mut(start..HEADERS_FRAME_HEADER).unwrap_or(&mut []));
        write_frame_header(frame_type::HEADERS, len as u64, &mut out)?;
        let frame =
            scratch.get(start..HEADERS_FRAME_HEADER + len).ok_or(SendError::BufferTooSmall)?;
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
        c.head_request = request.method == b"HEAD";
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
        let c = &mut self.slots.get_mut(REQ).ok_or(SendError::InvalidState)?.c;
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
        let mut hdr = [0u8; HEADERS_FRAME_HEADER];
        let mut out = Out::new(&mut hdr);
        if n > 0 {
            write_frame_header(frame_type::DATA, n as u64, &mut out)?;
        }
        let chunk = data.get(..n).unwrap_or(&[]);
        let hl = out.position();
        if t.write(id, out.written(), false) != hl || t.write(id, chunk, fin) != n {
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
        if self.st.control == Some(id) {
            return Err(fail(&mut self.st, t, H3Error::ClosedCriticalStream));
        }
        if let Some(Slot { c, .. }) = self.slots.get_mut(REQ) {
            if c.kind != Kind::Free && c.id == id && c.sending {
                t.reset_stream(id, code);
                c.sending = false;
            }
        }
        Ok(())
    }

    /// Reads every stream's available bytes, acts on them and calls `on` for what the
    /// request stream brings. An `Err` is
    /// a connection error: the connection is being closed with it.
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
        for id in t.live_streams() {
            // Client-initiated: ours (§2.1 of RFC 9000: the low bit is the initiator).
            if id & 1 == 0 || self.slots.iter().any(|s| s.c.in_use() && s.c.id == id) {
                continue;
            }
            // RFC 9114 §6.1: server-initiated bidirectional streams need an extension.
            if id & 2 == 0 {
                return Err(H3Error::StreamCreationError);
            }
            match self.slots.iter_mut().skip(1).find(|s| !s.c.in_use()) {
                Some(s) => s.c.take(id, Kind::UniType),
                None => refused = Some(id),
            }
        }
        if let Some(id) = refused {
            // Bounded by QUIC's stream limit (three for a device); one refusal per poll,
            // the next poll finds the rest.
            t.stop_sending(id, H3Error::ExcessiveLoad.code());
        }
        let Self { st, slots, fields } = self;
        for s in slots.iter_mut() {
            pump(st, s, fields, t, on)?;
        }
        Ok(())
    }
}

/// Closes the connection with `e` (once) and returns it.
fn fail<T: Transport>(st: &mut State, t: &mut T, e: H3Error) -> H3Error {
    if st.closed.is_none() {
        st.closed = Some(e);
        t.close(e.code());
    }
    e
}

/// Moves what QUIC has for the stream of `s` into its buffer and acts on it, until neither
/// gives anything more.
fn pump<T: Streams, F: FnMut(Event<'_>), const CAP: usize>(
    st: &mut State,
    s: &mut Slot<CAP>,
    fields: &mut [u8],
    t: &mut T,
    on: &mut F,
) -> Result<(), H3Error> {
    let Slot { c, buf } = s;
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
                    // RFC 9114 §6.2.1, RFC 9204 §4.2: critical streams may not be closed.
                    if matches!(c.kind, Kind::Control | Kind::Encoder | Kind::Decoder) {
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
        let consumed = process(st, c, input, fields, t, on)?.min(c.len);
        buf.copy_within(consumed..c.len, 0);
        c.len -= consumed;
        if read == 0 && consumed == 0 {
            return Ok(());
        }
    }
}

/// Fails the request stream with `code`: stop reading, stop writing, drop the rest.
fn stream_error<T: Transport, F: FnMut(Event<'_>)>(
    c: &mut Ctl,
    t: &mut T,
    on: &mut F,
    code: H3Error,
) {
    t.stop_sending(c.id, code.code());
    if c.sending {
        t.reset_stream(c.id, code.code());
        c.sending = false;
    }
    c.kind = Kind::Discard;
    on(Event::StreamError(code));
}

/// Acts on `input`, the buffered bytes of stream `c`; returns how many were consumed.
fn process<T: Streams, F: FnMut(Event<'_>)>(
    st: &mut State,
    c: &mut Ctl,
    input: &[u8],
    fields: &mut [u8],
    t: &mut T,
    on: &mut F,
) -> Result<usize, H3Error> {
    let fin = c.fin;
    let mut pos = 0;
    loop {
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
                    let (bit, kind) = match ty {
                        stream_type::CONTROL => (1, Kind::Control),
                        stream_type::QPACK_ENCODER => (2, Kind::Encoder),
                        stream_type::QPACK_DECODER => (4, Kind::Decoder),
                        // §4.6: we never sent MAX_PUSH_ID, so no push ID is valid.
                        stream_type::PUSH => return Err(H3Error::IdError),
                        _ => {
                            // §6.2, §9: unknown and reserved types: abort reading.
                            t.stop_sending(c.id, H3Error::StreamCreationError.code());
                            (0, Kind::Discard)
                        }
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
            Kind::Control => {
                if st.peer_settings.is_none() && c.reader.is_idle() {
                    // §6.2.1: the first frame must be SETTINGS, whatever else it is.
                    match FrameHeader::parse(rest) {
                        None => return Ok(pos),
                        Some((h, _)) if h.ty != frame_type::SETTINGS => {
                            return Err(H3Error::MissingSettings)
                        }
                        Some(_) => {}
                    }
                }
                let (n, ev) = c.reader.read(rest, StreamKind::Control, 0)?;
                pos += n;
                match ev {
                    FrameEvent::NeedMore => return Ok(pos),
                    FrameEvent::Skipped => {}
                    FrameEvent::Frame(Frame::Settings(payload)) => {
                        let max = Settings::parse_max_field_section_size(payload)?;
                        // §7.2.4: SETTINGS only once.
                        if st.peer_settings.is_some() {
                            return Err(H3Error::FrameUnexpected);
                        }
                        st.peer_settings = Some(max);
                    }
                    FrameEvent::Frame(Frame::GoAway(id)) => {
                        // §5.2: a server's GOAWAY names a client-initiated bidirectional
                        // stream, and the ID may not increase.
                        if id & 0x3 != 0 || st.goaway.is_some_and(|prev| id > prev) {
                            return Err(H3Error::IdError);
                        }
                        st.goaway = Some(id);
                    }
                    // §7.2.3: we never allowed a push, so no push ID is valid.
                    FrameEvent::Frame(Frame::CancelPush(_)) => return Err(H3Error::IdError),
                    // §7.2.7: MAX_PUSH_ID only goes to servers.
                    _ => return Err(H3Error::FrameUnexpected),
                }
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
            Kind::Request => {
                let max = st.config.max_encoded_field_section;
                let (n, ev) = match c.reader.read(rest, StreamKind::Request, max) {
                    // §4.2.2, §10.5: a HEADERS frame above our limit.
                    Err(H3Error::ExcessiveLoad) => {
                        stream_error(c, t, on, H3Error::ExcessiveLoad);
                        continue;
                    }
                    r => r?,
                };
                pos += n;
                match ev {
                    FrameEvent::NeedMore if !fin => return Ok(pos),
                    FrameEvent::NeedMore => {
                        // §7.1: a stream may only end at a frame boundary.
                        if !rest.is_empty() || !c.reader.is_idle() {
                            return Err(H3Error::FrameError);
                        }
                        // §4.1.2: a response without a final head, or with less content
                        // than its content-length declared, is malformed.
                        if c.phase == Phase::Head || c.content_left.is_some_and(|l| l != 0) {
                            stream_error(c, t, on, H3Error::MessageError);
                        } else {
                            c.kind = Kind::Done;
                            on(Event::Finished);
                        }
                    }
                    FrameEvent::Skipped => {}
                    FrameEvent::DataHeader(len) => {
                        // §4.1: DATA only between the head and trailers.
                        if c.phase != Phase::Body {
                            return Err(H3Error::FrameUnexpected);
                        }
                        // §4.1.2: more content than the content-length declared.
                        if let Some(left) = c.content_left {
                            match left.checked_sub(len) {
                                Some(l) => c.content_left = Some(l),
                                None => stream_error(c, t, on, H3Error::MessageError),
                            }
                        }
                    }
                    FrameEvent::Data(d) => on(Event::Data(d)),
                    FrameEvent::Frame(Frame::Headers(block)) => {
                        // §4.1: nothing but FIN after trailers.
                        if c.phase == Phase::Trailers {
                            return Err(H3Error::FrameUnexpected);
                        }
                        let limit = st.config.max_field_section_size;
                        let section = match decode_field_section(block, limit, &mut *fields) {
                            Ok(d) => d.fields,
                            Err(DecodeError::TooLarge) => {
                                stream_error(c, t, on, H3Error::ExcessiveLoad);
                                continue;
                            }
                            // No dynamic table: a section that needs one cannot be decoded
                            // (RFC 9204 §2.2.3).
                            Err(_) => return Err(H3Error::QpackDecompressionFailed),
                        };
                        if let Err(e) = response_head(c, &section, on) {
                            stream_error(c, t, on, e);
                        }
                    }
                    // §7.2.5: we never sent MAX_PUSH_ID, so any push ID is too large.
                    FrameEvent::Frame(Frame::PushPromise { .. }) => return Err(H3Error::IdError),
                    FrameEvent::Frame(_) => return Err(H3Error::FrameUnexpected),
                }
            }
        }
    }
}

/// Checks a received head or trailer section (RFC 9114 §4.1.2, §4.3.2) and hands it on.
fn response_head<F: FnMut(Event<'_>)>(
    c: &mut Ctl,
    section: &FieldSection<'_>,
    on: &mut F,
) -> Result<(), H3Error> {
    if c.phase == Phase::Body {
        message::check_trailers(section)?;
        // §4.1.2: the content must add up to the content-length by the trailers.
        if c.content_left.is_some_and(|l| l != 0) {
            return Err(H3Error::MessageError);
        }
        c.phase = Phase::Trailers;
        on(Event::Trailers(*section));
        return Ok(());
    }
    let status = message::parse_response(section)?;
    if status >= 200 {
        let declared = message::content_length(section)?;
        // A response to HEAD, 204 or 304 has no content, whatever its content-length says
        // (RFC 9110 §6.4.1, §8.6).
        let bodyless = c.head_request || status == 204 || status == 304;
        c.content_left = if bodyless { None } else { declared };
        c.phase = Phase::Body;
    }
    on(Event::Response { status, fields: *section });
    Ok(())
}
