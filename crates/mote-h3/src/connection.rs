//! The HTTP/3 session (RFC 9114): critical streams, SETTINGS, request/response message
//! state, GOAWAY, cancellation, and the glue to QPACK. Sans-IO and without heap.
//!
//! # Driving it
//!
//! The session talks to the QUIC connection through [`Transport`], which it calls to open
//! its unidirectional streams, write stream bytes, reset streams and close the connection.
//! Received stream bytes go the other way: for each stream with readable data the caller
//! calls [`Connection::recv`] with the stream's [`StreamState`], the stream's unconsumed
//! bytes and a buffer for decoded header fields, and gets back how many bytes were
//! consumed and at most one [`Event`]. It repeats with the remaining bytes until the
//! event is `None` (more bytes are needed) or [`Event::Blocked`]. Bytes not consumed
//! stay the caller's: they must be presented again, with more appended, on the next call
//! (a read buffer that is compacted, or the QUIC stream's own receive buffer with
//! peek/consume).
//!
//! ```text
//! loop {
//!     let r = conn.recv(&mut quic, &mut stream, &buf[..len], fin, &mut fields_buf)?;
//!     consume(r.consumed);
//!     match r.event { None | Some(Event::Blocked) => break, Some(ev) => handle(ev) }
//! }
//! conn.flush(&mut quic)?;
//! ```
//!
//! # Memory
//!
//! Per stream the caller keeps a [`StreamState`] (a few dozen bytes). Per connection the
//! session holds two small output queues (control and QPACK decoder stream) and, with the
//! `dynamic-table` feature, a borrowed `DynamicTable`. HEADERS frames are decoded
//! straight from the caller's input once complete, so the caller's receive buffer for a
//! request stream must hold `Config::max_encoded_field_section` + 9 bytes; the fields
//! buffer must hold `Config::max_field_section_size` bytes.
//!
//! # Limits
//!
//! Our SETTINGS_MAX_FIELD_SECTION_SIZE is enforced on the *decoded* size (name + value +
//! 32 per field, RFC 9114 §4.2.2) while decoding, for header and trailer sections alike.
//! A section past it is a stream error of type H3_EXCESSIVE_LOAD: the peer was told the
//! limit in SETTINGS and ignored it, which RFC 9114 §10.5 lets us treat as excessive load.
//! We choose a stream error (STOP_SENDING and RESET_STREAM with H3_EXCESSIVE_LOAD) over
//! answering a request with 431 (which §4.2.2 also permits) because it needs no response
//! path and frees the stream at once; a server application that prefers 431 can lower the
//! limit it enforces below the one it advertises.

use core::marker::PhantomData;

use crate::coding::{decode_varint, Out};
use crate::error::{BufferTooSmall, H3Error, SendError};
use crate::frame::{
    frame_type, grease_id, stream_type, write_frame, write_frame_header, write_varint_frame, Frame,
    FrameEvent, FrameReader, Settings, StreamKind,
};
#[cfg(feature = "server")]
use crate::message::Response;
use crate::message::{self, Request};
use crate::qpack::prefix::{decode_int, PrefixError};
#[cfg(feature = "dynamic-table")]
use crate::qpack::DecoderInstruction;
#[cfg(feature = "dynamic-table")]
use crate::qpack::{instructions::write_decoder_instruction, DynamicTable};
use crate::qpack::{DecodeError, Decoded, FieldEncoder, FieldSection};

/// What the session needs from the QUIC connection. Stream IDs are QUIC stream IDs.
pub trait Transport {
    /// Opens a unidirectional stream, or `None` if the peer's stream limit forbids it now.
    fn open_uni(&mut self) -> Option<u64>;
    /// Opens a bidirectional stream, or `None` if the peer's stream limit forbids it now.
    fn open_bidi(&mut self) -> Option<u64>;
    /// How many bytes [`Transport::write`] would accept on `id` now (flow control and send
    /// buffer space).
    fn capacity(&self, id: u64) -> usize;
    /// Queues `data` on `id`, with FIN after it if `fin`; returns the bytes accepted. On
    /// request streams the session writes only what `capacity` allowed and expects all of
    /// it to be accepted; on its own unidirectional streams it accepts partial writes.
    fn write(&mut self, id: u64, data: &[u8], fin: bool) -> usize;
    /// Abandons sending on `id` (RESET_STREAM) with an application error code.
    fn reset_stream(&mut self, id: u64, code: u64);
    /// Asks the peer to stop sending on `id` (STOP_SENDING) with an application error code.
    fn stop_sending(&mut self, id: u64, code: u64);
    /// Closes the connection (CONNECTION_CLOSE of type 0x1d) with an application error code.
    fn close(&mut self, code: u64);
}

/// Which end of the connection this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sends requests.
    Client,
    /// Answers requests (feature `server`: a device client builds no server paths).
    #[cfg(feature = "server")]
    Server,
}

/// Session limits and options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Our SETTINGS_MAX_FIELD_SECTION_SIZE, enforced on every decoded header and trailer
    /// section. The fields buffer given to [`Connection::recv`] should be this large.
    pub max_field_section_size: u64,
    /// The largest HEADERS (or PUSH_PROMISE) payload accepted, checked against the declared
    /// frame length before any of it is waited for (H3_EXCESSIVE_LOAD, a stream error).
    /// The caller's receive buffer for a request stream must hold this plus 9 bytes.
    pub max_encoded_field_section: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS to advertise (used with a dynamic table; at most 16).
    pub qpack_blocked_streams: u16,
    /// Send the reserved setting and frame type `0x1f * n + 0x21` (RFC 9114 §7.2.4.1,
    /// §7.2.8) so peers keep tolerating unknown ones.
    pub grease: Option<u32>,
}

impl Config {
    /// The device profile: small limits, no dynamic table.
    pub const DEVICE: Config = Config {
        max_field_section_size: 1024,
        max_encoded_field_section: 1024,
        qpack_blocked_streams: 0,
        grease: Some(1),
    };
    /// A server or broker profile.
    pub const SERVER: Config = Config {
        max_field_section_size: 16 * 1024,
        max_encoded_field_section: 16 * 1024,
        qpack_blocked_streams: 16,
        grease: Some(2),
    };
}

impl Default for Config {
    fn default() -> Self {
        Self::DEVICE
    }
}

/// What a header section on a request stream was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadersKind {
    /// An interim (1xx) response; the final response follows.
    Interim,
    /// The request or final response head.
    Message,
    /// The trailer section; only FIN may follow.
    Trailers,
}

/// Something [`Connection::recv`] found on a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A decoded header section, in the caller's fields buffer. Server: the request head is
    /// checked (RFC 9114 §4.3.1); client: the response head (§4.3.2).
    Headers {
        /// The fields.
        fields: FieldSection<'a>,
        /// Head, interim response or trailers.
        kind: HeadersKind,
        /// Client: the response's status code (§4.3.2, already checked); 0 for a request
        /// head or trailers.
        status: u16,
    },
    /// A piece of the message body (a slice of the caller's input).
    Data(&'a [u8]),
    /// The peer ended the stream after a complete message.
    Finished,
    /// The peer's SETTINGS arrived (see [`Connection::peer_max_field_section_size`]).
    Settings,
    /// The peer sent GOAWAY with this ID. Client: requests on streams with this ID or above
    /// were not processed and may be retried elsewhere; no new request may start here.
    GoAway(u64),
    /// A HEADERS frame references dynamic table entries not received yet. Nothing of it was
    /// consumed; present it again after [`Event::Unblocked`] names this stream.
    Blocked,
    /// The blocked stream with this ID can be decoded now: call `recv` on it again.
    Unblocked(u64),
    /// The stream failed with this error; the session has reset it and asked the peer to
    /// stop sending (all its input is consumed). The connection goes on.
    StreamError(H3Error),
}

/// The result of one [`Connection::recv`] call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recv<'a> {
    /// Bytes of the input consumed; the caller drops them.
    pub consumed: usize,
    /// What they held, or `None` if more input is needed to make progress.
    pub event: Option<Event<'a>>,
}

impl<'a> Recv<'a> {
    const fn new(consumed: usize, event: Option<Event<'a>>) -> Self {
        Self { consumed, event }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Nothing received or sent yet.
    New,
    /// A peer unidirectional stream whose type has not arrived yet.
    UniType,
    Request,
    Control,
    Encoder,
    Decoder,
    /// Everything received is dropped: an unknown stream type, a rejected or failed
    /// request, a cancelled stream.
    Discard,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecvPhase {
    /// Expecting the (final) header section.
    Headers,
    /// After the header section: DATA, trailers or FIN.
    Body,
    /// After trailers: only FIN.
    Trailers,
    /// FIN seen.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendPhase {
    /// No final header section sent yet.
    Idle,
    /// Header section sent: DATA, trailers or FIN.
    Body,
    /// FIN sent or sending abandoned.
    Done,
}

/// A stream ID as [`StreamState`] stores it. A device-only build (neither `server` nor
/// `quic`) keeps 32 bits: every compare and copy of a `u64` is two words on Thumb, and a
/// device's stream IDs stay far below 2^32 (its QUIC stream limits; 2^30 requests on one
/// connection). IDs that do not fit are refused where streams enter the session (see
/// [`StreamState::id_fits`]).
#[cfg(any(feature = "server", feature = "quic"))]
type StoredId = u64;
#[cfg(not(any(feature = "server", feature = "quic")))]
type StoredId = u32;

/// Per-stream state, kept by the caller (one per QUIC stream the session sees).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamState {
    id: StoredId,
    kind: Kind,
    reader: FrameReader,
    recv: RecvPhase,
    send: SendPhase,
    /// Body bytes still due by the received content-length (RFC 9114 §4.1.2), if the
    /// message declared one.
    content_left: Option<u64>,
    /// Our request on this stream was HEAD: its response has no content whatever its
    /// content-length says.
    head: bool,
}

impl StreamState {
    /// Whether this build's [`StreamState`] can hold stream `id` (always, unless built
    /// without `server` and `quic`: then below 2^32).
    #[cfg(any(feature = "server", feature = "quic"))]
    pub const fn id_fits(_id: u64) -> bool {
        true
    }

    /// Whether this build's [`StreamState`] can hold stream `id` (always, unless built
    /// without `server` and `quic`: then below 2^32).
    #[cfg(not(any(feature = "server", feature = "quic")))]
    pub const fn id_fits(id: u64) -> bool {
        id <= u32::MAX as u64
    }

    /// State for stream `id` before anything was received or sent on it. `id` must satisfy
    /// [`StreamState::id_fits`] (otherwise only its low 32 bits are kept).
    pub const fn new(id: u64) -> Self {
        Self {
            #[allow(clippy::cast_possible_truncation)]
            id: id as StoredId,
            kind: Kind::New,
            reader: FrameReader::new(),
            recv: RecvPhase::Headers,
            send: SendPhase::Idle,
            content_left: None,
            head: false,
        }
    }

    /// The QUIC stream ID.
    #[allow(clippy::unnecessary_cast)]
    pub const fn id(&self) -> u64 {
        self.id as u64
    }

    /// True once nothing more will be delivered from this stream (FIN processed, or the
    /// stream reset, rejected or ignored).
    pub fn recv_finished(&self) -> bool {
        self.recv == RecvPhase::Done || self.kind == Kind::Discard
    }

    /// True once nothing more may be sent on this stream.
    pub fn send_finished(&self) -> bool {
        self.send == SendPhase::Done
    }
}

const fn is_bidi(id: u64) -> bool {
    id & 0x2 == 0
}

const fn is_client_initiated(id: u64) -> bool {
    id & 0x1 == 0
}

/// A small byte queue for one of our unidirectional streams.
#[derive(Debug)]
struct Pending<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Pending<N> {
    const fn new() -> Self {
        Self { buf: [0; N], len: 0 }
    }

    #[cfg(feature = "dynamic-table")]
    fn room(&self) -> usize {
        N - self.len
    }

    #[cfg(feature = "dynamic-table")]
    fn push(&mut self, data: &[u8]) -> bool {
        let end = self.len + data.len();
        match self.buf.get_mut(self.len..end) {
            Some(dst) => {
                dst.copy_from_slice(data);
                self.len = end;
                true
            }
            None => false,
        }
    }

    fn flush<T: Transport>(&mut self, t: &mut T, id: u64) {
        if self.len == 0 {
            return;
        }
        let n = t.write(id, self.buf.get(..self.len).unwrap_or(&[]), false).min(self.len);
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
    }
}

/// Room for the control stream's type, SETTINGS, a grease frame and a GOAWAY.
const CONTROL_QUEUE: usize = 64;
/// Blocked streams tracked at most (SETTINGS_QPACK_BLOCKED_STREAMS is capped to this).
#[cfg(feature = "dynamic-table")]
pub const MAX_BLOCKED_STREAMS: usize = 16;
#[cfg(feature = "dynamic-table")]
const DECODER_QUEUE: usize = 128;

/// Room for a HEADERS frame header (1-byte type, up to 8-byte length) in front of the
/// encoded section in the caller's scratch buffer.
const HEADERS_FRAME_HEADER: usize = 9;

/// An HTTP/3 session over one QUIC connection. `'t` is the lifetime of the dynamic table
/// storage (`dynamic-table` feature); without it any lifetime does.
#[derive(Debug)]
pub struct Connection<'t> {
    role: Role,
    config: Config,
    closed: Option<H3Error>,
    control: Option<u64>,
    control_queue: Pending<CONTROL_QUEUE>,
    /// A GOAWAY to append to the control stream when there is room.
    goaway_unsent: bool,
    goaway_sent: Option<u64>,
    goaway_received: Option<u64>,
    /// The peer's SETTINGS, once received.
    #[cfg(any(feature = "server", feature = "quic"))]
    peer_settings: Option<Settings>,
    /// A device-only build keeps of the peer's SETTINGS only what it acts on: its
    /// SETTINGS_MAX_FIELD_SECTION_SIZE (§4.2.2). Its encoder never uses the dynamic table,
    /// so the peer's QPACK settings do not matter to it. Outer `None`: not received yet.
    #[cfg(not(any(feature = "server", feature = "quic")))]
    peer_max_field_section_size: Option<Option<u64>>,
    /// Whether the peer opened its control, QPACK encoder and decoder streams (only one of
    /// each is allowed; nothing else about them is needed once their state has the kind).
    peer_control: bool,
    peer_encoder: bool,
    peer_decoder: bool,
    max_push_id_received: Option<u64>,
    /// Server: the lowest client-initiated bidirectional stream ID not seen yet.
    #[cfg(feature = "server")]
    next_request_id: u64,
    #[cfg(feature = "dynamic-table")]
    table: Option<DynamicTable<'t>>,
    #[cfg(feature = "dynamic-table")]
    decoder_stream: Option<u64>,
    #[cfg(feature = "dynamic-table")]
    decoder_queue: Pending<DECODER_QUEUE>,
    #[cfg(feature = "dynamic-table")]
    blocked: [Option<(u64, u64)>; MAX_BLOCKED_STREAMS],
    _table: PhantomData<&'t mut [u8]>,
}

impl<'t> Connection<'t> {
    /// A session with no dynamic table (SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0).
    pub fn new(role: Role, config: Config) -> Self {
        Self {
            role,
            config,
            closed: None,
            control: None,
            control_queue: Pending::new(),
            goaway_unsent: false,
            goaway_sent: None,
            goaway_received: None,
            #[cfg(any(feature = "server", feature = "quic"))]
            peer_settings: None,
            #[cfg(not(any(feature = "server", feature = "quic")))]
            peer_max_field_section_size: None,
            peer_control: false,
            peer_encoder: false,
            peer_decoder: false,
            max_push_id_received: None,
            #[cfg(feature = "server")]
            next_request_id: 0,
            #[cfg(feature = "dynamic-table")]
            table: None,
            #[cfg(feature = "dynamic-table")]
            decoder_stream: None,
            #[cfg(feature = "dynamic-table")]
            decoder_queue: Pending::new(),
            #[cfg(feature = "dynamic-table")]
            blocked: [None; MAX_BLOCKED_STREAMS],
            _table: PhantomData,
        }
    }

    /// A session whose QPACK decoder uses `table`; its maximum capacity is advertised.
    #[cfg(feature = "dynamic-table")]
    pub fn with_dynamic_table(role: Role, config: Config, table: DynamicTable<'t>) -> Self {
        let mut c = Self::new(role, config);
        if table.max_capacity() > 0 {
            c.table = Some(table);
        }
        c
    }

    /// This end's role.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// Whether this end is a server: always false without feature `server`, so a client
    /// build compiles out request validation and the other server-only paths.
    fn is_server(&self) -> bool {
        #[cfg(feature = "server")]
        return self.role == Role::Server;
        #[cfg(not(feature = "server"))]
        return false;
    }

    /// The SETTINGS this end sends.
    pub fn local_settings(&self) -> Settings {
        Settings {
            qpack_max_table_capacity: self.table_max_capacity(),
            max_field_section_size: Some(self.config.max_field_section_size),
            qpack_blocked_streams: self.blocked_limit() as u64,
        }
    }

    /// The peer's SETTINGS, once received (a device-only build keeps only
    /// [`Connection::peer_max_field_section_size`]).
    #[cfg(any(feature = "server", feature = "quic"))]
    pub const fn peer_settings(&self) -> Option<&Settings> {
        self.peer_settings.as_ref()
    }

    /// Whether the peer's SETTINGS arrived.
    pub const fn peer_settings_received(&self) -> bool {
        #[cfg(any(feature = "server", feature = "quic"))]
        return self.peer_settings.is_some();
        #[cfg(not(any(feature = "server", feature = "quic")))]
        return self.peer_max_field_section_size.is_some();
    }

    /// The peer's SETTINGS_MAX_FIELD_SECTION_SIZE, if it sent one (RFC 9114 §4.2.2).
    pub fn peer_max_field_section_size(&self) -> Option<u64> {
        #[cfg(any(feature = "server", feature = "quic"))]
        return self.peer_settings.and_then(|p| p.max_field_section_size);
        #[cfg(not(any(feature = "server", feature = "quic")))]
        return self.peer_max_field_section_size.flatten();
    }

    /// The ID in the last GOAWAY received.
    pub const fn goaway_received(&self) -> Option<u64> {
        self.goaway_received
    }

    /// The ID in the last GOAWAY sent.
    pub const fn goaway_sent(&self) -> Option<u64> {
        self.goaway_sent
    }

    /// The error the connection was closed with, if it is closed.
    pub const fn closed(&self) -> Option<H3Error> {
        self.closed
    }

    /// The dynamic table, if any.
    #[cfg(feature = "dynamic-table")]
    pub fn dynamic_table(&self) -> Option<&DynamicTable<'t>> {
        self.table.as_ref()
    }

    /// Streams currently blocked on the dynamic table.
    #[cfg(feature = "dynamic-table")]
    pub fn blocked_streams(&self) -> usize {
        self.blocked.iter().flatten().count()
    }

    fn table_max_capacity(&self) -> u64 {
        #[cfg(feature = "dynamic-table")]
        if let Some(t) = &self.table {
            return t.max_capacity();
        }
        0
    }

    fn blocked_limit(&self) -> usize {
        #[cfg(feature = "dynamic-table")]
        if self.table.is_some() {
            return usize::from(self.config.qpack_blocked_streams).min(MAX_BLOCKED_STREAMS);
        }
        0
    }

    fn check_open(&self) -> Result<(), SendError> {
        match self.closed {
            Some(e) => Err(SendError::Closed(e)),
            None => Ok(()),
        }
    }

    /// Closes the connection with `error` (CONNECTION_CLOSE). Idempotent.
    pub fn close<T: Transport>(&mut self, t: &mut T, error: H3Error) {
        if self.closed.is_none() {
            self.closed = Some(error);
            t.close(error.code());
        }
    }

    /// Opens the control stream with our SETTINGS (and, with a dynamic table, the QPACK
    /// decoder stream) and writes what the transport takes. Call once at connection start;
    /// if it reports [`SendError::StreamLimit`], call again later.
    pub fn open<T: Transport>(&mut self, t: &mut T) -> Result<(), SendError> {
        self.check_open()?;
        if self.control.is_none() {
            let id = t.open_uni().ok_or(SendError::StreamLimit)?;
            // Written straight into the control stream's queue (empty until the stream
            // exists); a part that does not fit fails the call and is not queued.
            let settings = self.local_settings();
            let queue = &mut self.control_queue;
            let mut out = Out::new(queue.buf.get_mut(queue.len..).unwrap_or(&mut []));
            out.put_varint(stream_type::CONTROL)?;
            settings.write_frame(self.config.grease, &mut out)?;
            if let Some(g) = self.config.grease {
                // A reserved frame type with an empty payload (§7.2.8).
                write_frame(grease_id(g.wrapping_add(1)), &[], &mut out)?;
            }
            queue.len += out.position();
            self.control = Some(id);
        }
        #[cfg(feature = "dynamic-table")]
        if self.table.is_some() && self.decoder_stream.is_none() {
            let id = t.open_uni().ok_or(SendError::StreamLimit)?;
            if !self.decoder_queue.push(&[stream_type::QPACK_DECODER as u8]) {
                return Err(SendError::BufferTooSmall);
            }
            self.decoder_stream = Some(id);
        }
        self.flush(t).map_err(SendError::Closed)
    }

    /// Writes queued bytes of our control and QPACK decoder streams (SETTINGS, GOAWAY,
    /// Section Acknowledgments, Stream Cancellations, and an Insert Count Increment for
    /// entries not acknowledged otherwise). Call after handling a batch of received data.
    pub fn flush<T: Transport>(&mut self, t: &mut T) -> Result<(), H3Error> {
        if let Some(e) = self.closed {
            return Err(e);
        }
        if let Some(id) = self.control {
            if self.goaway_unsent {
                if let Some(g) = self.goaway_sent {
                    // Straight into the queue; queued only if it fits whole.
                    let queue = &mut self.control_queue;
                    let mut out = Out::new(queue.buf.get_mut(queue.len..).unwrap_or(&mut []));
                    if write_varint_frame(frame_type::GOAWAY, g, &mut out).is_ok() {
                        queue.len += out.position();
                        self.goaway_unsent = false;
                    }
                }
            }
            self.control_queue.flush(t, id);
        }
        #[cfg(feature = "dynamic-table")]
        if let (Some(id), Some(table)) = (self.decoder_stream, self.table.as_mut()) {
            // RFC 9204 §2.2.2.3: acknowledge insertions no Section Acknowledgment covered.
            if self.decoder_queue.room() >= 10 {
                if let Some(inc) = table.take_insert_count_increment() {
                    let mut buf = [0u8; 10];
                    let mut out = Out::new(&mut buf);
                    if write_decoder_instruction(
                        &mut out,
                        DecoderInstruction::InsertCountIncrement(inc),
                    )
                    .is_ok()
                    {
                        self.decoder_queue.push(out.written());
                    }
                }
            }
            self.decoder_queue.flush(t, id);
        }
        Ok(())
    }

    fn fail<T: Transport>(&mut self, t: &mut T, e: H3Error) -> H3Error {
        self.close(t, e);
        e
    }

    /// Processes bytes received on stream `s`: `input` is everything received and not yet
    /// consumed, `fin` says the stream ends with the last byte of `input`, and decoded
    /// header fields go into `fields`. Returns the bytes consumed and at most one event; see
    /// the module documentation for the loop around it. An `Err` is a connection error: the
    /// session has already closed the connection with it.
    pub fn recv<'a, T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        input: &'a [u8],
        fin: bool,
        fields: &'a mut [u8],
    ) -> Result<Recv<'a>, H3Error> {
        if let Some(e) = self.closed {
            return Err(e);
        }
        self.recv_inner(t, s, input, fin, fields).map_err(|e| self.fail(t, e))
    }

    fn recv_inner<'a, T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        input: &'a [u8],
        fin: bool,
        fields: &'a mut [u8],
    ) -> Result<Recv<'a>, H3Error> {
        let mut pos = 0usize;
        loop {
            let rest = input.get(pos..).unwrap_or(&[]);
            match s.kind {
                Kind::New => self.classify(t, s)?,
                Kind::UniType => match decode_varint(rest) {
                    // RFC 9114 §6.2: a stream closed before its type arrived is tolerated.
                    None if fin => {
                        s.kind = Kind::Discard;
                        return Ok(Recv::new(input.len(), None));
                    }
                    None => return Ok(Recv::new(pos, None)),
                    Some((ty, n)) => {
                        pos += n;
                        self.uni_stream_type(t, s, ty)?;
                    }
                },
                Kind::Discard => return Ok(Recv::new(input.len(), None)),
                Kind::Request => return self.recv_request(t, s, input, pos, fin, fields),
                // Critical streams may not end (§6.2.1, RFC 9204 §4.2).
                Kind::Control | Kind::Encoder | Kind::Decoder if fin => {
                    return Err(H3Error::ClosedCriticalStream)
                }
                Kind::Control => return self.recv_control(s, input, pos),
                Kind::Encoder => return self.recv_encoder(input, pos),
                Kind::Decoder => return self.recv_decoder(input, pos),
            }
        }
    }

    /// Decides what a stream seen for the first time is.
    #[cfg_attr(not(feature = "server"), allow(unused_variables))]
    fn classify<T: Transport>(&mut self, t: &mut T, s: &mut StreamState) -> Result<(), H3Error> {
        let id = s.id();
        let ours = is_client_initiated(id) == (self.role == Role::Client);
        s.kind = match (is_bidi(id), ours, self.role) {
            // Our own request stream (client).
            (true, true, Role::Client) => Kind::Request,
            // A new request (server).
            #[cfg(feature = "server")]
            (true, false, Role::Server) => {
                if id >= self.next_request_id {
                    self.next_request_id = id.saturating_add(4);
                }
                // RFC 9114 §5.2: requests at or above the GOAWAY ID are not processed.
                if self.goaway_sent.is_some_and(|g| id >= g) {
                    t.stop_sending(id, H3Error::RequestRejected.code());
                    t.reset_stream(id, H3Error::RequestRejected.code());
                    s.send = SendPhase::Done;
                    Kind::Discard
                } else {
                    Kind::Request
                }
            }
            // §6.1: server-initiated bidirectional streams need an extension.
            (true, false, Role::Client) => return Err(H3Error::StreamCreationError),
            #[cfg(feature = "server")]
            (true, true, Role::Server) => return Err(H3Error::StreamCreationError),
            (false, false, _) => Kind::UniType,
            // Nothing is ever received on our own unidirectional streams.
            (false, true, _) => return Err(H3Error::InternalError),
        };
        Ok(())
    }

    /// RFC 9114 §6.2: acts on a peer unidirectional stream's type.
    fn uni_stream_type<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        ty: u64,
    ) -> Result<(), H3Error> {
        let (slot, kind) = match ty {
            stream_type::CONTROL => (&mut self.peer_control, Kind::Control),
            stream_type::QPACK_ENCODER => (&mut self.peer_encoder, Kind::Encoder),
            stream_type::QPACK_DECODER => (&mut self.peer_decoder, Kind::Decoder),
            stream_type::PUSH => {
                // A client that never sent MAX_PUSH_ID has no push ID a push stream could
                // carry (§4.6: H3_ID_ERROR); only servers push (§6.2.2).
                return Err(match self.role {
                    Role::Client => H3Error::IdError,
                    #[cfg(feature = "server")]
                    Role::Server => H3Error::StreamCreationError,
                });
            }
            _ => {
                // Unknown and reserved types: abort reading (§6.2, §9).
                t.stop_sending(s.id(), H3Error::StreamCreationError.code());
                s.kind = Kind::Discard;
                return Ok(());
            }
        };
        // Only one stream of each critical type (§6.2.1, RFC 9204 §4.2).
        if *slot {
            return Err(H3Error::StreamCreationError);
        }
        *slot = true;
        s.kind = kind;
        Ok(())
    }

    fn recv_control<'a>(
        &mut self,
        s: &mut StreamState,
        input: &'a [u8],
        mut pos: usize,
    ) -> Result<Recv<'a>, H3Error> {
        loop {
            let rest = input.get(pos..).unwrap_or(&[]);
            if !self.peer_settings_received() && s.reader.is_idle() {
                // §6.2.1: the first frame must be SETTINGS, whatever else it is.
                match crate::frame::FrameHeader::parse(rest) {
                    None => return Ok(Recv::new(pos, None)),
                    Some((h, _)) if h.ty != frame_type::SETTINGS => {
                        return Err(H3Error::MissingSettings)
                    }
                    Some(_) => {}
                }
            }
            let (n, ev) = s.reader.read(rest, StreamKind::Control, 0)?;
            pos += n;
            match ev {
                FrameEvent::NeedMore => return Ok(Recv::new(pos, None)),
                FrameEvent::Skipped => {}
                FrameEvent::Frame(Frame::Settings(payload)) => {
                    #[cfg(any(feature = "server", feature = "quic"))]
                    let settings = Settings::parse(payload)?;
                    #[cfg(not(any(feature = "server", feature = "quic")))]
                    let settings = Settings::parse_max_field_section_size(payload)?;
                    if self.peer_settings_received() {
                        return Err(H3Error::FrameUnexpected);
                    }
                    #[cfg(any(feature = "server", feature = "quic"))]
                    {
                        self.peer_settings = Some(settings);
                    }
                    #[cfg(not(any(feature = "server", feature = "quic")))]
                    {
                        self.peer_max_field_section_size = Some(settings);
                    }
                    return Ok(Recv::new(pos, Some(Event::Settings)));
                }
                FrameEvent::Frame(Frame::GoAway(id)) => {
                    // §5.2: a server's GOAWAY names a client-initiated bidirectional stream;
                    // the ID may not increase.
                    if self.role == Role::Client && (id & 0x3 != 0) {
                        return Err(H3Error::IdError);
                    }
                    if self.goaway_received.is_some_and(|prev| id > prev) {
                        return Err(H3Error::IdError);
                    }
                    self.goaway_received = Some(id);
                    return Ok(Recv::new(pos, Some(Event::GoAway(id))));
                }
                FrameEvent::Frame(Frame::MaxPushId(id)) => {
                    // §7.2.7: only clients send MAX_PUSH_ID, and it may not decrease.
                    if !self.is_server() {
                        return Err(H3Error::FrameUnexpected);
                    }
                    if self.max_push_id_received.is_some_and(|prev| id < prev) {
                        return Err(H3Error::IdError);
                    }
                    self.max_push_id_received = Some(id);
                }
                FrameEvent::Frame(Frame::CancelPush(_)) => {
                    // §7.2.3: a client never allowed a push (no MAX_PUSH_ID sent), and a
                    // server never promised one, so no push ID can be valid.
                    return Err(H3Error::IdError);
                }
                _ => return Err(H3Error::FrameUnexpected),
            }
        }
    }

    fn recv_encoder<'a>(&mut self, input: &'a [u8], pos: usize) -> Result<Recv<'a>, H3Error> {
        let rest = input.get(pos..).unwrap_or(&[]);
        #[cfg(feature = "dynamic-table")]
        if let Some(table) = self.table.as_mut() {
            let n =
                table.process_encoder_stream(rest).map_err(|_| H3Error::QpackEncoderStreamError)?;
            let event = self.next_unblocked().map(Event::Unblocked);
            return Ok(Recv::new(pos + n, event));
        }
        // No dynamic table (capacity 0): only Set Dynamic Table Capacity 0 is acceptable,
        // and its one encoding is the byte 0x20 (RFC 9204 §4.3.1: `001` Capacity(5+), a
        // 5-bit prefix below 31 takes no continuation byte). Every other instruction is an
        // error whatever follows its first byte: a capacity above 0 exceeds our maximum
        // (§4.3.1), an insertion does not fit a table of capacity 0 (§3.2.2), a
        // duplicate references an entry that does not exist (§4.3.4).
        if rest.iter().all(|&b| b == 0x20) {
            Ok(Recv::new(input.len(), None))
        } else {
            Err(H3Error::QpackEncoderStreamError)
        }
    }

    fn recv_decoder<'a>(&mut self, input: &'a [u8], mut pos: usize) -> Result<Recv<'a>, H3Error> {
        // Our encoder never references or inserts into the dynamic table, so there is no
        // section to acknowledge and no insertion to count: a Section Acknowledgment
        // (`1` StreamID(7+), RFC 9204 §4.4.1) or an Insert Count Increment (`00`
        // Increment(6+), §4.4.3) is an error as soon as its first byte arrives. A Stream
        // Cancellation (`01` StreamID(6+), §4.4.2) is harmless once complete.
        loop {
            let rest = input.get(pos..).unwrap_or(&[]);
            let Some(&b) = rest.first() else { return Ok(Recv::new(pos, None)) };
            if b & 0xc0 != 0x40 {
                return Err(H3Error::QpackDecoderStreamError);
            }
            match decode_int(rest, 6) {
                Ok((_, n)) => pos += n,
                Err(PrefixError::Incomplete) => return Ok(Recv::new(pos, None)),
                Err(PrefixError::Overflow) => return Err(H3Error::QpackDecoderStreamError),
            }
        }
    }

    fn recv_request<'a, T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        input: &'a [u8],
        mut pos: usize,
        fin: bool,
        fields: &'a mut [u8],
    ) -> Result<Recv<'a>, H3Error> {
        loop {
            if s.recv == RecvPhase::Done {
                return Ok(Recv::new(pos, None));
            }
            let rest = input.get(pos..).unwrap_or(&[]);
            let (n, ev) = match s.reader.read(
                rest,
                StreamKind::Request,
                self.config.max_encoded_field_section,
            ) {
                Ok(r) => r,
                Err(H3Error::ExcessiveLoad) => {
                    return Ok(self.stream_error(t, s, input.len(), H3Error::ExcessiveLoad))
                }
                Err(e) => return Err(e),
            };
            match ev {
                FrameEvent::NeedMore => {
                    if !fin {
                        return Ok(Recv::new(pos, None));
                    }
                    // §7.1: a stream may only end at a frame boundary.
                    if !rest.is_empty() || !s.reader.is_idle() {
                        return Err(H3Error::FrameError);
                    }
                    return Ok(self.end_of_message(t, s, pos));
                }
                FrameEvent::Skipped => pos += n,
                FrameEvent::DataHeader(len) => {
                    // §4.1: DATA only between the header section and trailers.
                    if s.recv != RecvPhase::Body {
                        return Err(H3Error::FrameUnexpected);
                    }
                    // §4.1.2: more content than the content-length declared is malformed.
                    if let Some(left) = s.content_left {
                        match left.checked_sub(len) {
                            Some(rest) => s.content_left = Some(rest),
                            None => {
                                let e = H3Error::MessageError;
                                return Ok(self.stream_error(t, s, input.len(), e));
                            }
                        }
                    }
                    pos += n;
                }
                FrameEvent::Data(d) => return Ok(Recv::new(pos + n, Some(Event::Data(d)))),
                FrameEvent::Frame(Frame::Headers(block)) => {
                    return self.recv_headers(t, s, input.len(), pos, n, block, fields);
                }
                FrameEvent::Frame(Frame::PushPromise { .. }) => {
                    // §7.2.5: a client never sent MAX_PUSH_ID, so any push ID is too large;
                    // a server never receives PUSH_PROMISE.
                    return Err(match self.role {
                        Role::Client => H3Error::IdError,
                        #[cfg(feature = "server")]
                        Role::Server => H3Error::FrameUnexpected,
                    });
                }
                FrameEvent::Frame(_) => return Err(H3Error::FrameUnexpected),
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn recv_headers<'a, T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        total: usize,
        pos: usize,
        frame_len: usize,
        block: &[u8],
        fields: &'a mut [u8],
    ) -> Result<Recv<'a>, H3Error> {
        let trailers = match s.recv {
            RecvPhase::Headers => false,
            RecvPhase::Body => true,
            // §4.1: nothing but FIN after trailers.
            _ => return Err(H3Error::FrameUnexpected),
        };
        let decoded = match self.decode(block, fields) {
            Ok(d) => d,
            Err(DecodeError::Blocked { required_insert_count }) => {
                self.block(s.id(), required_insert_count)?;
                return Ok(Recv::new(pos, Some(Event::Blocked)));
            }
            Err(DecodeError::TooLarge) => {
                return Ok(self.stream_error(t, s, total, H3Error::ExcessiveLoad))
            }
            Err(DecodeError::Failed) => return Err(H3Error::QpackDecompressionFailed),
        };
        self.decoded(s.id(), &decoded)?;
        let fields = decoded.fields;
        // A response to HEAD, 204 or 304 has no content, whatever its content-length says
        // (RFC 9110 §6.4.1, §9.3.2, §15.3.5, §15.4.5; RFC 9114 §4.1.2 allows the
        // content-length): content in DATA is malformed (empty DATA frames carry none), as
        // the device client has it.
        let mut bodyless = false;
        let mut status = 0;
        let checked = if trailers {
            message::check_trailers(&fields).map(|()| HeadersKind::Trailers)
        } else if self.is_server() {
            message::parse_request(&fields).map(|_| HeadersKind::Message)
        } else {
            message::parse_response(&fields).and_then(|code| {
                // RFC 9114 §4.5: HTTP/3 has no 101 (Switching Protocols); such a head is
                // malformed (§4.1.2), not an interim response.
                if code == 101 {
                    return Err(H3Error::MessageError);
                }
                status = code;
                bodyless = s.head || code == 204 || code == 304;
                Ok(if code < 200 { HeadersKind::Interim } else { HeadersKind::Message })
            })
        };
        // §4.1.2: a message whose DATA frames do not add up to its content-length is
        // malformed (a request smuggling vector once the message is forwarded). Checked as
        // DATA frames arrive, at trailers and at the end of the stream.
        let checked = checked.and_then(|kind| match kind {
            HeadersKind::Message => {
                let declared = message::content_length(&fields)?;
                s.content_left = if bodyless { Some(0) } else { declared };
                Ok(kind)
            }
            HeadersKind::Trailers if s.content_left.is_some_and(|l| l != 0) => {
                Err(H3Error::MessageError)
            }
            _ => Ok(kind),
        });
        let kind = match checked {
            Ok(k) => k,
            Err(e) => return Ok(self.stream_error(t, s, total, e)),
        };
        s.recv = match kind {
            HeadersKind::Interim => RecvPhase::Headers,
            HeadersKind::Message => RecvPhase::Body,
            HeadersKind::Trailers => RecvPhase::Trailers,
        };
        Ok(Recv::new(pos + frame_len, Some(Event::Headers { fields, kind, status })))
    }

    fn decode<'o>(&self, block: &[u8], fields: &'o mut [u8]) -> Result<Decoded<'o>, DecodeError> {
        let limit = self.config.max_field_section_size;
        #[cfg(feature = "dynamic-table")]
        if let Some(table) = &self.table {
            return table.decode_field_section(block, limit, fields);
        }
        crate::qpack::decode_field_section(block, limit, fields)
    }

    /// After a section decoded: unblock bookkeeping and the Section Acknowledgment.
    #[allow(unused_variables)]
    fn decoded(&mut self, stream: u64, d: &Decoded<'_>) -> Result<(), H3Error> {
        #[cfg(feature = "dynamic-table")]
        {
            self.unblock(stream);
            if d.required_insert_count > 0 {
                if let Some(table) = self.table.as_mut() {
                    table.section_acknowledged(d.required_insert_count);
                }
                self.queue_decoder_instruction(DecoderInstruction::SectionAck(stream))?;
            }
        }
        Ok(())
    }

    #[allow(unused_variables)]
    fn block(&mut self, stream: u64, required_insert_count: u64) -> Result<(), H3Error> {
        #[cfg(feature = "dynamic-table")]
        {
            if let Some(slot) = self.blocked.iter_mut().flatten().find(|(id, _)| *id == stream) {
                slot.1 = required_insert_count;
                return Ok(());
            }
            // RFC 9204 §2.1.2: more blocked streams than we allowed.
            if self.blocked_streams() >= self.blocked_limit() {
                return Err(H3Error::QpackDecompressionFailed);
            }
            if let Some(slot) = self.blocked.iter_mut().find(|b| b.is_none()) {
                *slot = Some((stream, required_insert_count));
                return Ok(());
            }
        }
        Err(H3Error::QpackDecompressionFailed)
    }

    #[cfg(feature = "dynamic-table")]
    fn unblock(&mut self, stream: u64) -> bool {
        let mut found = false;
        for b in self.blocked.iter_mut() {
            if b.is_some_and(|(id, _)| id == stream) {
                *b = None;
                found = true;
            }
        }
        found
    }

    #[cfg(feature = "dynamic-table")]
    fn next_unblocked(&mut self) -> Option<u64> {
        let ic = self.table.as_ref()?.insert_count();
        let b = self.blocked.iter_mut().find(|b| b.is_some_and(|(_, ric)| ric <= ic))?;
        b.take().map(|(id, _)| id)
    }

    #[cfg(feature = "dynamic-table")]
    fn queue_decoder_instruction(&mut self, i: DecoderInstruction) -> Result<(), H3Error> {
        if self.decoder_stream.is_none() {
            return Ok(());
        }
        let mut buf = [0u8; 10];
        let mut out = Out::new(&mut buf);
        write_decoder_instruction(&mut out, i).map_err(|_| H3Error::InternalError)?;
        // A peer that starves our decoder stream of credit while making us acknowledge
        // is generating excessive load.
        if self.decoder_queue.push(out.written()) {
            Ok(())
        } else {
            Err(H3Error::ExcessiveLoad)
        }
    }

    /// RFC 9204 §4.4.2: the encoder may drop its references for an abandoned stream.
    #[allow(unused_variables)]
    fn abandon(&mut self, stream: u64) -> Result<(), H3Error> {
        #[cfg(feature = "dynamic-table")]
        if self.table.is_some() {
            self.unblock(stream);
            return self.queue_decoder_instruction(DecoderInstruction::StreamCancel(stream));
        }
        Ok(())
    }

    /// Fails stream `s` with `code`: stop reading, stop writing, drop the rest.
    fn stream_error<'a, T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        total: usize,
        code: H3Error,
    ) -> Recv<'a> {
        t.stop_sending(s.id(), code.code());
        if s.send != SendPhase::Done {
            t.reset_stream(s.id(), code.code());
        }
        s.kind = Kind::Discard;
        s.send = SendPhase::Done;
        // Only fails if our decoder stream queue is full; the stream is gone either way.
        if let Err(e) = self.abandon(s.id()) {
            self.close(t, e);
        }
        Recv::new(total, Some(Event::StreamError(code)))
    }

    fn end_of_message<'a, T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        pos: usize,
    ) -> Recv<'a> {
        if s.recv == RecvPhase::Headers {
            // The stream ended without a (final) header section (§4.1.2).
            let code = match self.role {
                #[cfg(feature = "server")]
                Role::Server => H3Error::RequestIncomplete,
                Role::Client => H3Error::MessageError,
            };
            return self.stream_error(t, s, pos, code);
        }
        // §4.1.2: less content than the content-length declared is malformed too.
        if s.content_left.is_some_and(|l| l != 0) {
            return self.stream_error(t, s, pos, H3Error::MessageError);
        }
        s.recv = RecvPhase::Done;
        Recv::new(pos, Some(Event::Finished))
    }

    /// The peer reset stream `s` (RESET_STREAM) with `code`. Critical streams may not be
    /// closed (H3_CLOSED_CRITICAL_STREAM, returned and the connection closed).
    pub fn on_reset<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        code: u64,
    ) -> Result<(), H3Error> {
        let _ = code;
        if let Some(e) = self.closed {
            return Err(e);
        }
        match s.kind {
            Kind::Control | Kind::Encoder | Kind::Decoder => {
                Err(self.fail(t, H3Error::ClosedCriticalStream))
            }
            Kind::Request => {
                s.recv = RecvPhase::Done;
                s.kind = Kind::Discard;
                self.abandon(s.id()).map_err(|e| self.fail(t, e))
            }
            _ => {
                s.kind = Kind::Discard;
                Ok(())
            }
        }
    }

    /// The peer asked us to stop sending on stream `s` (STOP_SENDING) with `code`; pass a
    /// fresh [`StreamState`] for the session's own unidirectional streams. Asking to close
    /// our control or decoder stream is H3_CLOSED_CRITICAL_STREAM; on a request stream the
    /// session resets its sending side with the same code (RFC 9000 §3.5).
    pub fn on_stop_sending<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        code: u64,
    ) -> Result<(), H3Error> {
        if let Some(e) = self.closed {
            return Err(e);
        }
        let critical = self.control == Some(s.id());
        #[cfg(feature = "dynamic-table")]
        let critical = critical || self.decoder_stream == Some(s.id());
        if critical {
            return Err(self.fail(t, H3Error::ClosedCriticalStream));
        }
        if s.send != SendPhase::Done {
            t.reset_stream(s.id(), code);
            s.send = SendPhase::Done;
        }
        Ok(())
    }

    /// Client: opens a bidirectional stream for a new request. Refused after GOAWAY.
    pub fn open_request<T: Transport>(&mut self, t: &mut T) -> Result<StreamState, SendError> {
        self.check_open()?;
        if self.role != Role::Client {
            return Err(SendError::InvalidState);
        }
        if self.goaway_received.is_some() {
            return Err(SendError::GoingAway);
        }
        let id = t.open_bidi().ok_or(SendError::StreamLimit)?;
        if !StreamState::id_fits(id) {
            // A device-only build after 2^30 requests on one connection: give the stream
            // back and let the caller open a new connection.
            t.reset_stream(id, H3Error::RequestCancelled.code());
            return Err(SendError::StreamLimit);
        }
        let mut s = StreamState::new(id);
        s.kind = Kind::Request;
        Ok(s)
    }

    /// Client: sends the request head on `s` (from [`Connection::open_request`]), with FIN
    /// if `end_stream` (no body). `scratch` holds the encoded HEADERS frame. On
    /// [`SendError::Blocked`] nothing was sent: call again with the same arguments.
    pub fn send_request<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        request: &Request<'_>,
        end_stream: bool,
        scratch: &mut [u8],
    ) -> Result<(), SendError> {
        self.check_open()?;
        if self.role != Role::Client
            || s.send != SendPhase::Idle
            || !is_bidi(s.id())
            || !is_client_initiated(s.id())
        {
            return Err(SendError::InvalidState);
        }
        if self.goaway_received.is_some_and(|g| s.id() >= g) {
            return Err(SendError::GoingAway);
        }
        self.send_field_section(t, s.id(), scratch, end_stream, |e| request.encode(e))?;
        if s.kind == Kind::New {
            s.kind = Kind::Request;
        }
        s.head = request.method == b"HEAD";
        s.send = if end_stream { SendPhase::Done } else { SendPhase::Body };
        Ok(())
    }

    /// Server: sends a response head on request stream `s`; an interim (1xx) response may
    /// be followed by more, a final one by DATA and trailers. `end_stream` sends FIN (not
    /// allowed on an interim response).
    #[cfg(feature = "server")]
    pub fn send_response<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        response: &Response<'_>,
        end_stream: bool,
        scratch: &mut [u8],
    ) -> Result<(), SendError> {
        self.check_open()?;
        if self.role != Role::Server
            || s.kind != Kind::Request
            || s.send != SendPhase::Idle
            || message::status_digits(response.status).is_none()
            || (response.is_interim() && end_stream)
        {
            return Err(SendError::InvalidState);
        }
        self.send_field_section(t, s.id(), scratch, end_stream, |e| response.encode(e))?;
        if !response.is_interim() {
            s.send = if end_stream { SendPhase::Done } else { SendPhase::Body };
        }
        Ok(())
    }

    /// Sends a trailer section after the body and ends the stream (RFC 9114 §4.1).
    pub fn send_trailers<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        trailers: &[(&[u8], &[u8])],
        scratch: &mut [u8],
    ) -> Result<(), SendError> {
        self.check_open()?;
        if s.send != SendPhase::Body {
            return Err(SendError::InvalidState);
        }
        self.send_field_section(t, s.id(), scratch, true, |e| {
            trailers.iter().try_for_each(|(n, v)| e.field(n, v))
        })?;
        s.send = SendPhase::Done;
        Ok(())
    }

    /// Sends as much of `data` as the stream takes now in one DATA frame and returns how
    /// many bytes that was; FIN follows if `end_stream` and all of `data` went. A body of
    /// any length streams through repeated calls (a subscription is a body that never
    /// ends). [`SendError::Blocked`] if not even one byte fits.
    pub fn send_data<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        data: &[u8],
        end_stream: bool,
    ) -> Result<usize, SendError> {
        self.check_open()?;
        if s.send != SendPhase::Body {
            return Err(SendError::InvalidState);
        }
        if data.is_empty() {
            if end_stream {
                t.write(s.id(), &[], true);
                s.send = SendPhase::Done;
            }
            return Ok(0);
        }
        let cap = t.capacity(s.id());
        let n = data.len().min(cap.saturating_sub(1 + crate::coding::varint_size(cap as u64)));
        if n == 0 {
            return Err(SendError::Blocked);
        }
        let mut hdr = [0u8; HEADERS_FRAME_HEADER];
        let mut out = Out::new(&mut hdr);
        write_frame_header(frame_type::DATA, n as u64, &mut out)?;
        let chunk = data.get(..n).unwrap_or(&[]);
        let fin = end_stream && n == data.len();
        let hl = out.position();
        if t.write(s.id(), out.written(), false) != hl || t.write(s.id(), chunk, fin) != n {
            // The transport took less than its capacity promised: framing is lost.
            return Err(SendError::Closed(self.fail(t, H3Error::InternalError)));
        }
        if fin {
            s.send = SendPhase::Done;
        }
        Ok(n)
    }

    /// Ends the message on `s` (FIN) without trailers.
    pub fn finish<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
    ) -> Result<(), SendError> {
        self.send_data(t, s, &[], true).map(|_| ())
    }

    /// Abandons stream `s` in both directions with `code`: H3_REQUEST_CANCELLED from a
    /// client or a server, H3_REQUEST_REJECTED from a server that did not process the
    /// request (RFC 9114 §4.1.1).
    pub fn cancel<T: Transport>(
        &mut self,
        t: &mut T,
        s: &mut StreamState,
        code: H3Error,
    ) -> Result<(), SendError> {
        self.check_open()?;
        if !matches!(s.kind, Kind::Request | Kind::New) {
            return Err(SendError::InvalidState);
        }
        if !s.recv_finished() {
            t.stop_sending(s.id(), code.code());
        }
        if s.send != SendPhase::Done {
            t.reset_stream(s.id(), code.code());
        }
        s.kind = Kind::Discard;
        s.send = SendPhase::Done;
        s.recv = RecvPhase::Done;
        self.abandon(s.id()).map_err(|e| SendError::Closed(self.fail(t, e)))
    }

    /// Starts a graceful shutdown (RFC 9114 §5.2) by sending GOAWAY. Server: the ID is the
    /// first request stream not yet seen, so every request received so far is still
    /// processed and later ones are rejected with H3_REQUEST_REJECTED. Client: push ID 0
    /// (it never allowed pushes). A later call may only lower the ID.
    pub fn shutdown<T: Transport>(&mut self, t: &mut T) -> Result<(), SendError> {
        self.check_open()?;
        let id = match self.role {
            #[cfg(feature = "server")]
            Role::Server => self.next_request_id,
            Role::Client => 0,
        };
        let id = self.goaway_sent.map_or(id, |prev| prev.min(id));
        self.goaway_sent = Some(id);
        self.goaway_unsent = true;
        self.flush(t).map_err(SendError::Closed)
    }

    fn send_field_section<T: Transport>(
        &mut self,
        t: &mut T,
        id: u64,
        scratch: &mut [u8],
        fin: bool,
        fill: impl FnOnce(&mut FieldEncoder<'_>) -> Result<(), BufferTooSmall>,
    ) -> Result<(), SendError> {
        let body = scratch.get_mut(HEADERS_FRAME_HEADER..).ok_or(SendError::BufferTooSmall)?;
        let mut enc = FieldEncoder::new(body)?;
        fill(&mut enc)?;
        let size = enc.size();
        let len = enc.finish();
        // §4.2.2: respect the peer's limit.
        if self.peer_max_field_section_size().is_some_and(|max| size > max) {
            return Err(SendError::FieldSectionTooLarge);
        }
        // The frame header (type 0x01, one byte, then the length) goes right in front of
        // the section.
        let start = HEADERS_FRAME_HEADER - 1 - crate::coding::varint_size(len as u64);
        let mut out = Out::new(scratch.get_mut(start..HEADERS_FRAME_HEADER).unwrap_or(&mut []));
        write_frame_header(frame_type::HEADERS, len as u64, &mut out)?;
        let frame =
            scratch.get(start..HEADERS_FRAME_HEADER + len).ok_or(SendError::BufferTooSmall)?;
        if t.capacity(id) < frame.len() {
            return Err(SendError::Blocked);
        }
        if t.write(id, frame, fin) != frame.len() {
            return Err(SendError::Closed(self.fail(t, H3Error::InternalError)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod stored_id_tests {
    use super::StreamState;

    #[test]
    fn stored_stream_ids() {
        for id in [0u64, 3, 4 * 1000 + 2, u64::from(u32::MAX)] {
            assert!(StreamState::id_fits(id));
            assert_eq!(StreamState::new(id).id(), id);
        }
        // A device-only build keeps 32 bits; the others the whole ID.
        let big = 1u64 << 32;
        let wide = cfg!(any(feature = "server", feature = "quic"));
        assert_eq!(StreamState::id_fits(big), wide);
        if wide {
            assert_eq!(StreamState::new(big).id(), big);
        }
    }
}
