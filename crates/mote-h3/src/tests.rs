//! Session tests: an in-memory transport, a client↔server pair, and hostile byte streams.

use std::collections::BTreeMap;
use std::string::String;
use std::vec::Vec;

use hex_literal::hex;
use proptest::prelude::*;

use crate::connection::{Config, Connection, Event, HeadersKind, Role, StreamState, Transport};
use crate::error::{H3Error, SendError};
use crate::message::{Request, Response};

/// What a transport recorded, and the bytes it was given per stream.
#[derive(Debug, Default)]
struct Mem {
    next_bidi: u64,
    next_uni: u64,
    /// Bytes written per stream and whether FIN was written.
    out: BTreeMap<u64, (Vec<u8>, bool)>,
    /// Per-stream capacity override (default: plenty).
    capacity: BTreeMap<u64, usize>,
    resets: Vec<(u64, u64)>,
    stops: Vec<(u64, u64)>,
    closed: Option<u64>,
}

impl Mem {
    fn new(client: bool) -> Self {
        Self {
            next_bidi: if client { 0 } else { 1 },
            next_uni: if client { 2 } else { 3 },
            ..Self::default()
        }
    }
}

impl Transport for Mem {
    fn open_uni(&mut self) -> Option<u64> {
        let id = self.next_uni;
        self.next_uni += 4;
        Some(id)
    }
    fn open_bidi(&mut self) -> Option<u64> {
        let id = self.next_bidi;
        self.next_bidi += 4;
        Some(id)
    }
    fn capacity(&self, id: u64) -> usize {
        self.capacity.get(&id).copied().unwrap_or(1 << 20)
    }
    fn write(&mut self, id: u64, data: &[u8], fin: bool) -> usize {
        let n = data.len().min(self.capacity(id));
        let e = self.out.entry(id).or_default();
        e.0.extend_from_slice(&data[..n]);
        e.1 |= fin && n == data.len();
        if let Some(c) = self.capacity.get_mut(&id) {
            *c -= n;
        }
        n
    }
    fn reset_stream(&mut self, id: u64, code: u64) {
        self.resets.push((id, code));
    }
    fn stop_sending(&mut self, id: u64, code: u64) {
        self.stops.push((id, code));
    }
    fn close(&mut self, code: u64) {
        self.closed.get_or_insert(code);
    }
}

/// An event with owned contents, for comparing.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Headers(u64, HeadersKind, Vec<(String, String)>),
    Data(u64, Vec<u8>),
    Finished(u64),
    Settings,
    GoAway(u64),
    Blocked(u64),
    Unblocked(u64),
    StreamError(u64, H3Error),
}

fn own(id: u64, e: Event<'_>) -> Ev {
    match e {
        Event::Headers { fields, kind, status } => {
            // The carried status is the checked response head's (0 for requests, trailers).
            assert_eq!(status, crate::message::parse_response(&fields).unwrap_or(0));
            Ev::Headers(
                id,
                kind,
                fields
                    .iter()
                    .map(|f| {
                        (
                            String::from_utf8_lossy(f.name).into_owned(),
                            String::from_utf8_lossy(f.value).into_owned(),
                        )
                    })
                    .collect(),
            )
        }
        Event::Data(d) => Ev::Data(id, d.to_vec()),
        Event::Finished => Ev::Finished(id),
        Event::Settings => Ev::Settings,
        Event::GoAway(g) => Ev::GoAway(g),
        Event::Blocked => Ev::Blocked(id),
        Event::Unblocked(s) => Ev::Unblocked(s),
        Event::StreamError(code) => Ev::StreamError(id, code),
    }
}

fn hdrs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(n, v)| ((*n).into(), (*v).into())).collect()
}

/// The fields buffer every test hands to `recv`: fixed size, so decoding can never use
/// more memory than this however large a section claims to be.
const FIELDS: usize = 1024;

/// One stream's receive side as the QUIC layer would keep it: unconsumed bytes and FIN.
#[derive(Debug)]
struct RecvStream {
    state: StreamState,
    buf: Vec<u8>,
    fin: bool,
    /// Bytes of the peer's output already moved into `buf`.
    taken: usize,
}

/// One end: session, transport, receive streams, and what it saw.
struct End {
    conn: Connection<'static>,
    t: Mem,
    streams: BTreeMap<u64, RecvStream>,
    events: Vec<Ev>,
    error: Option<H3Error>,
}

impl End {
    fn new(role: Role, config: Config) -> Self {
        let mut e = Self {
            conn: Connection::new(role, config),
            t: Mem::new(role == Role::Client),
            streams: BTreeMap::new(),
            events: Vec::new(),
            error: None,
        };
        e.conn.open(&mut e.t).unwrap();
        e
    }

    /// Feeds raw bytes on stream `id` (as if the peer sent them) and processes them.
    fn feed(&mut self, id: u64, bytes: &[u8], fin: bool) {
        let s = self.streams.entry(id).or_insert_with(|| RecvStream {
            state: StreamState::new(id),
            buf: Vec::new(),
            fin: false,
            taken: 0,
        });
        s.buf.extend_from_slice(bytes);
        s.fin |= fin;
        self.process(id);
    }

    fn process(&mut self, id: u64) {
        let mut fields = [0u8; FIELDS];
        let Some(s) = self.streams.get_mut(&id) else { return };
        let mut unblocked = Vec::new();
        loop {
            match self.conn.recv(&mut self.t, &mut s.state, &s.buf, s.fin, &mut fields) {
                Err(e) => {
                    self.error.get_or_insert(e);
                    return;
                }
                Ok(r) => {
                    let ev = r.event.map(|e| own(id, e));
                    s.buf.drain(..r.consumed);
                    match ev {
                        None => break,
                        Some(Ev::Blocked(b)) => {
                            self.events.push(Ev::Blocked(b));
                            break;
                        }
                        Some(Ev::Unblocked(u)) => {
                            self.events.push(Ev::Unblocked(u));
                            unblocked.push(u);
                        }
                        Some(e) => self.events.push(e),
                    }
                }
            }
        }
        for u in unblocked {
            self.process(u);
        }
    }

    /// Client: opens a request stream and keeps its state with the receive side.
    fn open_request(&mut self) -> u64 {
        let state = self.conn.open_request(&mut self.t).unwrap();
        let id = state.id();
        self.streams.insert(id, RecvStream { state, buf: Vec::new(), fin: false, taken: 0 });
        id
    }

    /// The session, transport and the one state of stream `id`, borrowed together.
    fn parts(&mut self, id: u64) -> (&mut Connection<'static>, &mut Mem, &mut StreamState) {
        (&mut self.conn, &mut self.t, &mut self.streams.get_mut(&id).unwrap().state)
    }

    fn take_events(&mut self) -> Vec<Ev> {
        std::mem::take(&mut self.events)
    }
}

/// A client and a server joined by their in-memory transports.
struct Pair {
    client: End,
    server: End,
}

impl Pair {
    fn new() -> Self {
        Self::with(Config::DEVICE, Config::SERVER)
    }

    fn with(client: Config, server: Config) -> Self {
        let mut p =
            Self { client: End::new(Role::Client, client), server: End::new(Role::Server, server) };
        p.pump();
        assert_eq!(p.client.take_events(), [Ev::Settings]);
        assert_eq!(p.server.take_events(), [Ev::Settings]);
        p
    }

    /// Moves new bytes from each end's transport to the other until nothing moves.
    fn pump(&mut self) {
        loop {
            let a = deliver(&mut self.client, &mut self.server);
            let b = deliver(&mut self.server, &mut self.client);
            let _ = self.client.conn.flush(&mut self.client.t);
            let _ = self.server.conn.flush(&mut self.server.t);
            if !a && !b {
                break;
            }
        }
    }
}

fn deliver(from: &mut End, to: &mut End) -> bool {
    let mut moved = false;
    let ids: Vec<u64> = from.t.out.keys().copied().collect();
    for id in ids {
        let (data, fin) = from.t.out[&id].clone();
        let s = to.streams.entry(id).or_insert_with(|| RecvStream {
            state: StreamState::new(id),
            buf: Vec::new(),
            fin: false,
            taken: 0,
        });
        if s.taken < data.len() || (fin && !s.fin) {
            s.buf.extend_from_slice(&data[s.taken..]);
            s.taken = data.len();
            s.fin = fin;
            moved = true;
            to.process(id);
        }
    }
    moved
}

fn bodies(events: &[Ev], id: u64) -> Vec<u8> {
    events
        .iter()
        .filter_map(|e| if let Ev::Data(s, d) = e { (*s == id).then_some(d.clone()) } else { None })
        .flatten()
        .collect()
}

fn without_data(events: &[Ev]) -> Vec<Ev> {
    events.iter().filter(|e| !matches!(e, Ev::Data(..))).cloned().collect()
}

// ---------------------------------------------------------------------------------------
// Client ↔ server exchanges
// ---------------------------------------------------------------------------------------

#[test]
fn request_with_body_response_streaming_with_trailers() {
    let mut p = Pair::new();
    let mut scratch = [0u8; 512];
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    let req = Request::post(b"sensor.example", b"/telemetry")
        .with_headers(&[(b"content-type", b"application/json")]);
    conn.send_request(t, st, &req, false, &mut scratch).unwrap();
    assert_eq!(conn.send_data(t, st, b"{\"t\":", false), Ok(5));
    assert_eq!(conn.send_data(t, st, b"21.5}", false), Ok(5));
    conn.finish(t, st).unwrap();
    assert!(st.send_finished());
    assert_eq!(conn.send_data(t, st, b"x", false), Err(SendError::InvalidState));
    p.pump();

    let ev = p.server.take_events();
    assert_eq!(
        without_data(&ev),
        [
            Ev::Headers(
                0,
                HeadersKind::Message,
                hdrs(&[
                    (":method", "POST"),
                    (":scheme", "https"),
                    (":authority", "sensor.example"),
                    (":path", "/telemetry"),
                    ("content-type", "application/json")
                ])
            ),
            Ev::Finished(0)
        ]
    );
    assert_eq!(bodies(&ev, 0), b"{\"t\":21.5}");

    // A streaming response: body pieces as they are produced, then trailers.
    let (conn, t, st) = p.server.parts(0);
    let resp = Response::new(200).with_headers(&[(b"content-type", b"text/plain")]);
    conn.send_response(t, st, &resp, false, &mut scratch).unwrap();
    for chunk in [&b"one "[..], b"two ", b"three"] {
        let (conn, t, st) = p.server.parts(0);
        assert_eq!(conn.send_data(t, st, chunk, false), Ok(chunk.len()));
        p.pump();
    }
    let (conn, t, st) = p.server.parts(0);
    conn.send_trailers(t, st, &[(b"x-checksum", b"abc")], &mut scratch).unwrap();
    assert!(st.send_finished());
    p.pump();
    let ev = p.client.take_events();
    assert_eq!(
        without_data(&ev),
        [
            Ev::Headers(
                0,
                HeadersKind::Message,
                hdrs(&[(":status", "200"), ("content-type", "text/plain")])
            ),
            Ev::Headers(0, HeadersKind::Trailers, hdrs(&[("x-checksum", "abc")])),
            Ev::Finished(0)
        ]
    );
    assert_eq!(bodies(&ev, 0), b"one two three");
    assert!(p.client.streams[&0].state.recv_finished());
    assert_eq!((p.client.error, p.server.error), (None, None));
}

/// A subscription: the response body never ends; DATA keeps flowing, with flow control
/// limiting each write so frames span many deliveries.
#[test]
fn endless_response_body_through_flow_control() {
    let mut p = Pair::new();
    let mut scratch = [0u8; 256];
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    conn.send_request(t, st, &Request::get(b"broker", b"/subscribe/temp"), true, &mut scratch)
        .unwrap();
    p.pump();
    let (conn, t, st) = p.server.parts(0);
    conn.send_response(t, st, &Response::new(200), false, &mut scratch).unwrap();
    let mut sent = Vec::new();
    for i in 0..200u32 {
        let msg = format!("event {i}\n");
        let mut rest = msg.as_bytes();
        while !rest.is_empty() {
            // 7 bytes of credit at a time: a frame header and a few payload bytes.
            p.server.t.capacity.insert(0, 7);
            let (conn, t, st) = p.server.parts(0);
            let n = conn.send_data(t, st, rest, false).unwrap();
            sent.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            p.pump();
        }
    }
    p.server.t.capacity.insert(0, 2);
    let (conn, t, st) = p.server.parts(0);
    assert_eq!(conn.send_data(t, st, b"x", false), Err(SendError::Blocked));
    let ev = p.client.take_events();
    assert_eq!(
        without_data(&ev),
        [Ev::Headers(0, HeadersKind::Message, hdrs(&[(":status", "200")]))]
    );
    assert_eq!(bodies(&ev, 0), sent);
    assert!(!p.client.streams[&0].state.recv_finished());
}

#[test]
fn interim_response_then_final() {
    let mut p = Pair::new();
    let mut scratch = [0u8; 256];
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    conn.send_request(t, st, &Request::get(b"h", b"/"), true, &mut scratch).unwrap();
    p.pump();
    let (conn, t, st) = p.server.parts(0);
    assert_eq!(
        conn.send_response(t, st, &Response::new(103), true, &mut scratch),
        Err(SendError::InvalidState)
    );
    let early = Response::new(103).with_headers(&[(b"link", b"</a>")]);
    conn.send_response(t, st, &early, false, &mut scratch).unwrap();
    conn.send_response(t, st, &Response::new(204), true, &mut scratch).unwrap();
    p.pump();
    assert_eq!(
        p.client.take_events(),
        [
            Ev::Headers(0, HeadersKind::Interim, hdrs(&[(":status", "103"), ("link", "</a>")])),
            Ev::Headers(0, HeadersKind::Message, hdrs(&[(":status", "204")])),
            Ev::Finished(0)
        ]
    );
}

#[test]
fn goaway_graceful_shutdown() {
    let mut p = Pair::new();
    let mut scratch = [0u8; 256];
    for _ in 0..2 {
        let id = p.client.open_request();
        let (conn, t, st) = p.client.parts(id);
        conn.send_request(t, st, &Request::get(b"h", b"/"), true, &mut scratch).unwrap();
    }
    p.pump();
    assert_eq!(p.server.take_events().len(), 4);
    // Server: GOAWAY naming the first request it has not seen (8).
    p.server.conn.shutdown(&mut p.server.t).unwrap();
    assert_eq!(p.server.conn.goaway_sent(), Some(8));
    p.pump();
    assert_eq!(p.client.take_events(), [Ev::GoAway(8)]);
    assert_eq!(p.client.conn.goaway_received(), Some(8));
    // The client starts no new request.
    assert_eq!(p.client.conn.open_request(&mut p.client.t).map(|_| ()), Err(SendError::GoingAway));
    // Requests below the ID are still answered.
    for id in [0u64, 4] {
        let (conn, t, st) = p.server.parts(id);
        conn.send_response(t, st, &Response::new(200), true, &mut scratch).unwrap();
    }
    p.pump();
    assert_eq!(p.client.take_events().iter().filter(|e| matches!(e, Ev::Finished(_))).count(), 2);
    // A request the client started anyway on stream 8 is rejected unprocessed.
    p.server.feed(8, &hex!("01 03 0000 d1"), true);
    assert!(p.server.take_events().is_empty());
    assert!(p.server.t.resets.contains(&(8, H3Error::RequestRejected.code())));
    assert!(p.server.t.stops.contains(&(8, H3Error::RequestRejected.code())));
    // A second GOAWAY never raises the ID.
    p.server.conn.shutdown(&mut p.server.t).unwrap();
    assert_eq!(p.server.conn.goaway_sent(), Some(8));
    p.pump();
    assert_eq!(p.client.take_events(), [Ev::GoAway(8)]);
    // Then the connection closes cleanly.
    p.server.conn.close(&mut p.server.t, H3Error::NoError);
    assert_eq!(p.server.t.closed, Some(0x100));
    assert_eq!((p.client.error, p.server.error), (None, None));
}

/// GOAWAY IDs must not increase, and a server's must name a client bidirectional stream.
#[test]
fn goaway_id_errors() {
    let mut c = End::new(Role::Client, Config::DEVICE);
    c.feed(3, &hex!("00 04 00"), false);
    c.feed(3, &hex!("07 01 08"), false);
    assert_eq!(c.take_events(), [Ev::Settings, Ev::GoAway(8)]);
    c.feed(3, &hex!("07 01 0c"), false);
    assert_eq!(c.error, Some(H3Error::IdError));
    assert_eq!(c.t.closed, Some(0x108));

    let mut c = End::new(Role::Client, Config::DEVICE);
    c.feed(3, &hex!("00 04 00 07 01 05"), false);
    assert_eq!(c.error, Some(H3Error::IdError));
}

#[test]
fn cancellation_both_ways() {
    let mut p = Pair::new();
    let mut scratch = [0u8; 256];
    // The client cancels a request whose response is streaming.
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    conn.send_request(t, st, &Request::get(b"h", b"/stream"), true, &mut scratch).unwrap();
    p.pump();
    let (conn, t, st) = p.server.parts(0);
    conn.send_response(t, st, &Response::new(200), false, &mut scratch).unwrap();
    conn.send_data(t, st, b"partial", false).unwrap();
    p.pump();
    let (conn, t, st) = p.client.parts(0);
    conn.cancel(t, st, H3Error::RequestCancelled).unwrap();
    assert_eq!(t.stops, [(0, 0x10c)]);
    // The request side had already ended with FIN, so only STOP_SENDING goes out.
    assert!(t.resets.is_empty());
    assert!(st.recv_finished() && st.send_finished());
    // QUIC delivers STOP_SENDING to the server, which resets its side with the code.
    let (conn, t, st) = p.server.parts(0);
    conn.on_stop_sending(t, st, 0x10c).unwrap();
    assert_eq!(t.resets, [(0, 0x10c)]);
    assert_eq!(conn.send_data(t, st, b"more", false), Err(SendError::InvalidState));
    // Data still in flight to the cancelled client stream is dropped.
    p.pump();
    assert!(p.client.take_events().iter().all(|e| matches!(e, Ev::Headers(..) | Ev::Data(..))));

    // The server rejects a request it will not process; the client sees the reset.
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    conn.send_request(t, st, &Request::post(b"h", b"/upload"), false, &mut scratch).unwrap();
    conn.send_data(t, st, b"data", false).unwrap();
    p.pump();
    let (conn, t, st) = p.server.parts(4);
    conn.cancel(t, st, H3Error::RequestRejected).unwrap();
    assert!(t.resets.contains(&(4, 0x10b)) && t.stops.contains(&(4, 0x10b)));
    let (conn, t, st) = p.client.parts(4);
    conn.on_reset(t, st, 0x10b).unwrap();
    conn.on_stop_sending(t, st, 0x10b).unwrap();
    assert!(st.recv_finished() && st.send_finished());
    assert_eq!(t.resets, [(4, 0x10b)]);
    assert_eq!((p.client.error, p.server.error), (None, None));
}

#[test]
fn peer_field_section_limit_is_respected_when_sending() {
    let small = Config { max_field_section_size: 200, ..Config::SERVER };
    let mut p = Pair::with(Config::DEVICE, small);
    let mut scratch = [0u8; 512];
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    let big = [b'a'; 64];
    let extra: [(&[u8], &[u8]); 1] = [(b"x-big", &big)];
    let req = Request::get(b"h", b"/").with_headers(&extra);
    assert_eq!(
        conn.send_request(t, st, &req, true, &mut scratch),
        Err(SendError::FieldSectionTooLarge)
    );
    // Nothing was written; a smaller request on the same stream goes.
    assert!(!t.out.contains_key(&0));
    conn.send_request(t, st, &Request::get(b"h", b"/"), true, &mut scratch).unwrap();
    let id = p.client.open_request();
    let (conn, t, st) = p.client.parts(id);
    let mut tiny = [0u8; 12];
    assert_eq!(
        conn.send_request(t, st, &Request::get(b"h", b"/"), true, &mut tiny),
        Err(SendError::BufferTooSmall)
    );
    t.capacity.insert(4, 3);
    assert_eq!(
        conn.send_request(t, st, &Request::get(b"h", b"/"), true, &mut scratch),
        Err(SendError::Blocked)
    );
    t.capacity.remove(&4);
    conn.send_request(t, st, &Request::get(b"h", b"/"), true, &mut scratch).unwrap();
}

/// Stream bytes arrive one at a time (frames spanning many QUIC packets): the same events
/// come out, and HEADERS frames are only consumed once complete.
#[test]
fn byte_at_a_time_delivery() {
    let mut s = End::new(Role::Server, Config::SERVER);
    let mut block = [0u8; 128];
    let n = crate::qpack::encode_field_section(
        &[
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"a.example"),
            (b":path", b"/x"),
        ],
        &mut block,
    )
    .unwrap();
    let mut stream = vec![0x01, n as u8];
    stream.extend_from_slice(&block[..n]);
    stream.extend_from_slice(&hex!("21 03 aabbcc 00 03 616263"));
    for (i, b) in stream.iter().enumerate() {
        s.feed(0, &[*b], i + 1 == stream.len());
    }
    let ev = s.take_events();
    assert_eq!(ev.len(), 5);
    assert!(matches!(&ev[0], Ev::Headers(0, HeadersKind::Message, f) if f.len() == 4));
    assert_eq!(bodies(&ev, 0), b"abc");
    assert_eq!(ev[4], Ev::Finished(0));
    assert_eq!(s.error, None);
}

// ---------------------------------------------------------------------------------------
// Hostile peers: limits
// ---------------------------------------------------------------------------------------

/// A HEADERS frame of a field section whose compressed form is small but whose decoded
/// form is huge (each byte an indexed reference to `:method: CONNECT`, 46 bytes decoded).
fn indexed_bomb(refs: usize) -> Vec<u8> {
    let mut f = vec![0x01];
    let len = 2 + refs;
    assert!(len < 16384);
    f.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    f.extend_from_slice(&[0, 0]);
    f.extend(std::iter::repeat_n(0xcf, refs));
    f
}

fn valid_request_headers() -> Vec<u8> {
    let mut block = [0u8; 64];
    let n = crate::qpack::encode_field_section(
        &[(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/")],
        &mut block,
    )
    .unwrap();
    let mut f = vec![0x01, n as u8];
    f.extend_from_slice(&block[..n]);
    f
}

#[test]
fn cve_2025_64702_decoded_field_section_limit() {
    // Our limit is 1024 bytes decoded; the fields buffer is FIELDS (1024) bytes.
    let mut s = End::new(Role::Server, Config { max_field_section_size: 1024, ..Config::SERVER });
    // 100 bytes on the wire, 4600 decoded.
    let bomb = indexed_bomb(100);
    assert!(bomb.len() < 110);
    s.feed(0, &bomb, false);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::ExcessiveLoad)]);
    assert_eq!(s.t.stops, [(0, 0x107)]);
    assert_eq!(s.t.resets, [(0, 0x107)]);
    // The rest of the stream is dropped and the connection goes on.
    s.feed(0, &hex!("00 03 616263"), true);
    assert!(s.take_events().is_empty());
    assert_eq!((s.error, s.t.closed), (None, None));
    assert!(s.streams[&0].buf.is_empty());

    // 22 references (1012 bytes decoded) are within the limit, 23 (1058) are not.
    let mut s = End::new(Role::Server, Config { max_field_section_size: 1024, ..Config::SERVER });
    let mut f = indexed_bomb(22);
    // Make it a valid request: replace two references by :scheme https and :path /.
    f[5] = 0xd7; // :scheme https (static 23)
    f[6] = 0xc1; // :path / (static 1)
    s.feed(4, &f, false);
    assert!(
        matches!(s.take_events()[..], [Ev::StreamError(4, H3Error::MessageError)]),
        "duplicate :method"
    );
    let mut s = End::new(Role::Server, Config { max_field_section_size: 1024, ..Config::SERVER });
    s.feed(0, &indexed_bomb(23), false);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::ExcessiveLoad)]);
}

#[test]
fn cve_2026_40898_trailers_field_section_limit() {
    let mut s = End::new(Role::Server, Config { max_field_section_size: 1024, ..Config::SERVER });
    let mut stream = valid_request_headers();
    stream.extend_from_slice(&hex!("00 02 6869"));
    s.feed(0, &stream, false);
    let ev = s.take_events();
    assert!(matches!(ev[0], Ev::Headers(0, HeadersKind::Message, _)));
    assert_eq!(ev[1], Ev::Data(0, b"hi".to_vec()));
    // Trailers: 60 bytes compressed, 2760 decoded (and pseudo-headers, but the size
    // check comes first, while decoding).
    s.feed(0, &indexed_bomb(60), true);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::ExcessiveLoad)]);
    assert_eq!(s.t.stops, [(0, 0x107)]);
    assert_eq!(s.error, None);

    // Client side: a response's trailers are limited the same way.
    let mut c = End::new(Role::Client, Config::DEVICE);
    let mut block = [0u8; 16];
    let n = crate::qpack::encode_field_section(&[(b":status", b"200")], &mut block).unwrap();
    let mut stream = vec![0x01, n as u8];
    stream.extend_from_slice(&block[..n]);
    stream.extend(indexed_bomb(30));
    c.feed(0, &stream, true);
    let ev = c.take_events();
    assert_eq!(ev[1], Ev::StreamError(0, H3Error::ExcessiveLoad));
}

#[test]
fn cve_2026_12523_no_preallocation_on_declared_length() {
    // HEADERS declaring 2^62 - 1 bytes: refused from the frame header alone, without
    // waiting for (or reserving) a single payload byte.
    let mut s = End::new(Role::Server, Config::SERVER);
    s.feed(0, &hex!("01 ffffffffffffffff 0000"), false);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::ExcessiveLoad)]);
    assert_eq!(s.error, None);
    // One byte over max_encoded_field_section is refused the same way.
    let cfg = Config { max_encoded_field_section: 100, ..Config::SERVER };
    let mut s = End::new(Role::Server, cfg);
    s.feed(0, &hex!("01 4065"), false);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::ExcessiveLoad)]);
    // At the limit it waits for the payload, consuming nothing.
    let mut s = End::new(Role::Server, cfg);
    s.feed(0, &hex!("01 4064 0000"), false);
    assert!(s.take_events().is_empty());
    assert_eq!(s.streams[&0].buf.len(), 5);

    // DATA declaring 2^62 - 1 bytes streams through what arrives.
    let mut s = End::new(Role::Server, Config::SERVER);
    let mut stream = valid_request_headers();
    stream.extend_from_slice(&hex!("00 ffffffffffffffff 0102 03"));
    s.feed(0, &stream, false);
    let ev = s.take_events();
    assert_eq!(ev[1], Ev::Data(0, vec![1, 2, 3]));
    assert!(s.streams[&0].buf.is_empty());
    // Ending the stream inside it is a truncated frame.
    s.feed(0, &[4], true);
    assert_eq!(s.take_events(), [Ev::Data(0, vec![4])]);
    assert_eq!(s.error, Some(H3Error::FrameError));

    // SETTINGS declaring a huge length on the control stream: connection error at once.
    let mut c = End::new(Role::Client, Config::DEVICE);
    c.feed(3, &hex!("00 04 bfffffff"), false);
    assert_eq!(c.error, Some(H3Error::ExcessiveLoad));
    // An unknown frame declaring a huge length is skipped piece by piece.
    let mut c = End::new(Role::Client, Config::DEVICE);
    c.feed(3, &hex!("00 04 00 21 ffffffffffffffff aaaa"), false);
    c.feed(3, &[0xbb; 300], false);
    assert_eq!(c.take_events(), [Ev::Settings]);
    assert!(c.streams[&3].buf.is_empty());
    assert_eq!(c.error, None);
}

// ---------------------------------------------------------------------------------------
// Hostile peers: stream and frame rules
// ---------------------------------------------------------------------------------------

fn server() -> End {
    End::new(Role::Server, Config::SERVER)
}

fn client() -> End {
    End::new(Role::Client, Config::DEVICE)
}

#[test]
fn data_before_headers() {
    let mut s = server();
    s.feed(0, &hex!("00 02 6869"), false);
    assert_eq!(s.error, Some(H3Error::FrameUnexpected));
    assert_eq!(s.t.closed, Some(0x105));
    // Even an empty DATA frame.
    let mut s = server();
    s.feed(0, &hex!("00 00"), false);
    assert_eq!(s.error, Some(H3Error::FrameUnexpected));
    // And on the client after an interim response only.
    let mut c = client();
    let mut block = [0u8; 16];
    let n = crate::qpack::encode_field_section(&[(b":status", b"100")], &mut block).unwrap();
    let mut stream = vec![0x01, n as u8];
    stream.extend_from_slice(&block[..n]);
    stream.extend_from_slice(&hex!("00 01 61"));
    c.feed(0, &stream, false);
    assert_eq!(c.error, Some(H3Error::FrameUnexpected));
}

/// A HEADERS frame carrying `fields`.
fn headers_frame(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut block = [0u8; 128];
    let n = crate::qpack::encode_field_section(fields, &mut block).unwrap();
    let mut f = vec![0x01, n as u8];
    f.extend_from_slice(&block[..n]);
    f
}

fn post_with_length(len: &[u8]) -> Vec<u8> {
    headers_frame(&[
        (b":method", b"POST"),
        (b":scheme", b"https"),
        (b":path", b"/upload"),
        (b"content-length", len),
    ])
}

/// Review finding: RFC 9114 §4.1.2 makes a message whose DATA frames do not add up to its
/// content-length malformed (H3_MESSAGE_ERROR), the request smuggling vector of HTTP
/// intermediaries; the session delivered such bodies as they came.
#[test]
fn attack_content_length_mismatch() {
    // More content than declared: refused at the DATA frame header that goes past it,
    // before its bytes are handed over.
    let mut stream = post_with_length(b"4");
    stream.extend_from_slice(&hex!("00 03 616263 00 02 6465"));
    let mut s = server();
    s.feed(0, &stream, true);
    let ev = s.take_events();
    assert_eq!(ev.last(), Some(&Ev::StreamError(0, H3Error::MessageError)), "{ev:?}");
    assert_eq!(bodies(&ev, 0), b"abc");
    assert!(s.error.is_none() && s.t.resets.contains(&(0, 0x10e)));
    // Less content than declared, at FIN and at trailers.
    for tail in [&hex!("")[..], &headers_frame(&[(b"x-sum", b"1")])] {
        let mut stream = post_with_length(b"4");
        stream.extend_from_slice(&hex!("00 03 616263"));
        stream.extend_from_slice(tail);
        let mut s = server();
        s.feed(0, &stream, true);
        let ev = s.take_events();
        assert_eq!(ev.last(), Some(&Ev::StreamError(0, H3Error::MessageError)), "{ev:?}");
        assert!(!ev.contains(&Ev::Finished(0)));
    }
    // Conflicting or unparsable values are malformed at once.
    for bad in [&b"4, 4"[..], b"-1", b"", b" 4", b"4611686018427387904", b"99999999999999999999"] {
        let mut s = server();
        s.feed(0, &post_with_length(bad), false);
        let ev = s.take_events();
        assert_eq!(ev, [Ev::StreamError(0, H3Error::MessageError)], "{bad:?}");
    }
    let two = headers_frame(&[
        (b":method", b"POST"),
        (b":scheme", b"https"),
        (b":path", b"/"),
        (b"content-length", b"3"),
        (b"content-length", b"4"),
    ]);
    let mut s = server();
    s.feed(0, &two, false);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::MessageError)]);
    // Exactly the declared content, split over frames, with trailers: accepted; repeated
    // equal values too.
    let mut stream = headers_frame(&[
        (b":method", b"POST"),
        (b":scheme", b"https"),
        (b":path", b"/"),
        (b"content-length", b"5"),
        (b"content-length", b"5"),
    ]);
    stream.extend_from_slice(&hex!("00 02 6162 00 00 00 03 636465"));
    stream.extend_from_slice(&headers_frame(&[(b"x-sum", b"1")]));
    let mut s = server();
    s.feed(0, &stream, true);
    let ev = s.take_events();
    assert_eq!(ev.last(), Some(&Ev::Finished(0)), "{ev:?}");
    assert_eq!(bodies(&ev, 0), b"abcde");
    // Client side: a response body longer than its content-length is refused, but the
    // content-length of a response to HEAD, or of a 304, announces no content.
    for (method, status, body, ok) in [
        (&b"GET"[..], &b"200"[..], &hex!("00 02 6162")[..], true),
        (b"GET", b"200", &hex!("00 03 616263"), false),
        (b"HEAD", b"200", &hex!(""), true),
        (b"GET", b"304", &hex!(""), true),
    ] {
        let mut c = client();
        let id = c.open_request();
        let req = Request { method, ..Request::get(b"example.com", b"/") };
        let (conn, t, st) = c.parts(id);
        conn.send_request(t, st, &req, true, &mut [0u8; 256]).unwrap();
        let mut stream = headers_frame(&[(b":status", status), (b"content-length", b"2")]);
        stream.extend_from_slice(body);
        c.feed(id, &stream, true);
        let ev = c.take_events();
        let finished = ev.last() == Some(&Ev::Finished(id));
        assert_eq!(finished, ok, "{method:?} {status:?}: {ev:?}");
    }
}

/// Review finding: the host client took a 101 head for an interim response and passed on
/// DATA after the head of a response to HEAD, 204 or 304. RFC 9114 §4.5: HTTP/3 has no 101
/// (malformed, H3_MESSAGE_ERROR); RFC 9110 §6.4.1: those responses have no content, so
/// content in DATA is malformed (as content beyond a content-length is), while empty DATA
/// frames carry none and are accepted. The device client does the same.
#[test]
fn no_101_and_no_content_after_bodyless_heads() {
    let mut c = client();
    let id = c.open_request();
    let (conn, t, st) = c.parts(id);
    conn.send_request(t, st, &Request::get(b"example.com", b"/"), true, &mut [0u8; 256]).unwrap();
    c.feed(id, &headers_frame(&[(b":status", b"101")]), false);
    let ev = c.take_events();
    assert_eq!(ev, [Ev::StreamError(id, H3Error::MessageError)], "{ev:?}");
    assert!(c.error.is_none() && c.t.stops.contains(&(id, 0x10e)));
    for (method, status) in [(&b"HEAD"[..], &b"200"[..]), (b"GET", b"204"), (b"GET", b"304")] {
        for (body, ok) in [(&hex!("00 00 00 00")[..], true), (&hex!("00 00 00 01 61"), false)] {
            let mut c = client();
            let id = c.open_request();
            let req = Request { method, ..Request::get(b"example.com", b"/") };
            let (conn, t, st) = c.parts(id);
            conn.send_request(t, st, &req, true, &mut [0u8; 256]).unwrap();
            let mut stream = headers_frame(&[(b":status", status)]);
            stream.extend_from_slice(body);
            c.feed(id, &stream, true);
            let ev = c.take_events();
            assert!(c.error.is_none());
            assert!(bodies(&ev, id).is_empty(), "{ev:?}");
            let end =
                if ok { Ev::Finished(id) } else { Ev::StreamError(id, H3Error::MessageError) };
            assert_eq!(ev.last(), Some(&end), "{method:?} {status:?} {body:02x?}: {ev:?}");
        }
    }
}

#[test]
fn frames_after_trailers() {
    let mut stream = valid_request_headers();
    stream.extend_from_slice(&hex!("01 02 0000"));
    let mut s = server();
    s.feed(0, &stream, false);
    assert!(matches!(
        s.take_events()[..],
        [Ev::Headers(0, HeadersKind::Message, _), Ev::Headers(0, HeadersKind::Trailers, _)]
    ));
    for after in [&hex!("00 01 61")[..], &hex!("01 02 0000")] {
        let mut s = server();
        s.feed(0, &stream, false);
        s.feed(0, after, false);
        assert_eq!(s.error, Some(H3Error::FrameUnexpected));
    }
}

#[test]
fn second_control_stream() {
    let mut s = server();
    s.feed(2, &hex!("00 04 00"), false);
    s.feed(6, &hex!("00 04 00"), false);
    assert_eq!(s.error, Some(H3Error::StreamCreationError));
    assert_eq!(s.t.closed, Some(0x103));
    // Likewise a second QPACK encoder or decoder stream.
    for ty in [0x02u8, 0x03] {
        let mut s = server();
        s.feed(2, &[ty], false);
        s.feed(6, &[ty], false);
        assert_eq!(s.error, Some(H3Error::StreamCreationError));
    }
}

#[test]
fn closed_critical_stream() {
    // FIN on the peer's control, encoder or decoder stream.
    for ty in [0x00u8, 0x02, 0x03] {
        let mut s = server();
        s.feed(2, &[ty], false);
        s.feed(2, &[], true);
        assert_eq!(s.error, Some(H3Error::ClosedCriticalStream), "type {ty}");
        assert_eq!(s.t.closed, Some(0x104));
    }
    // FIN arriving with the SETTINGS frame.
    let mut s = server();
    s.feed(2, &hex!("00 04 00"), true);
    assert_eq!(s.error, Some(H3Error::ClosedCriticalStream));
    // RESET_STREAM on the control stream.
    let mut s = server();
    s.feed(2, &hex!("00 04 00"), false);
    let mut st = s.streams[&2].state;
    assert_eq!(s.conn.on_reset(&mut s.t, &mut st, 0x100), Err(H3Error::ClosedCriticalStream));
    assert_eq!(s.t.closed, Some(0x104));
    // STOP_SENDING on our control stream (server: stream 3).
    let mut s = server();
    assert_eq!(
        s.conn.on_stop_sending(&mut s.t, &mut StreamState::new(3), 0x100),
        Err(H3Error::ClosedCriticalStream)
    );
    // A unidirectional stream closed before its type is tolerated.
    let mut s = server();
    s.feed(2, &[], true);
    assert_eq!(s.error, None);
}

#[test]
fn control_stream_frame_rules() {
    let cases: &[(&[u8], H3Error)] = &[
        // First frame not SETTINGS (even a reserved one, or GOAWAY).
        (&hex!("00 21 00"), H3Error::MissingSettings),
        (&hex!("00 07 01 00"), H3Error::MissingSettings),
        (&hex!("00 00 00"), H3Error::MissingSettings),
        // DATA, HEADERS, PUSH_PROMISE after SETTINGS.
        (&hex!("00 04 00 00 00"), H3Error::FrameUnexpected),
        (&hex!("00 04 00 01 02 0000"), H3Error::FrameUnexpected),
        (&hex!("00 04 00 05 01 00"), H3Error::FrameUnexpected),
        // A second SETTINGS.
        (&hex!("00 04 00 04 00"), H3Error::FrameUnexpected),
        // Duplicate and HTTP/2 settings.
        (&hex!("00 04 04 06 01 06 02"), H3Error::SettingsError),
        (&hex!("00 04 02 03 01"), H3Error::SettingsError),
        // HTTP/2 frame types.
        (&hex!("00 04 00 02 00"), H3Error::FrameUnexpected),
        (&hex!("00 04 00 06 00"), H3Error::FrameUnexpected),
        (&hex!("00 04 00 08 00"), H3Error::FrameUnexpected),
        (&hex!("00 04 00 09 00"), H3Error::FrameUnexpected),
        // CANCEL_PUSH for a push never promised.
        (&hex!("00 04 00 03 01 00"), H3Error::IdError),
        // MAX_PUSH_ID decreasing.
        (&hex!("00 04 00 0d 01 05 0d 01 04"), H3Error::IdError),
        // Malformed GOAWAY.
        (&hex!("00 04 00 07 02 0400"), H3Error::FrameError),
    ];
    for (bytes, err) in cases {
        let mut s = server();
        s.feed(2, bytes, false);
        assert_eq!(s.error, Some(*err), "{bytes:02x?}");
        assert_eq!(s.t.closed, Some(err.code()));
    }
    // The client never receives MAX_PUSH_ID.
    let mut c = client();
    c.feed(3, &hex!("00 04 00 0d 01 05"), false);
    assert_eq!(c.error, Some(H3Error::FrameUnexpected));
    // Unknown frames and settings are fine.
    let mut s = server();
    s.feed(2, &hex!("00 04 04 21 00 06 10 4040 00 0d 01 07"), false);
    assert_eq!(s.take_events(), [Ev::Settings]);
    assert_eq!(s.conn.peer_settings().unwrap().max_field_section_size, Some(16));
    assert_eq!(s.error, None);
}

#[test]
fn request_stream_frame_rules() {
    for bad in [
        &hex!("03 01 00")[..],  // CANCEL_PUSH
        &hex!("04 00"),         // SETTINGS
        &hex!("07 01 00"),      // GOAWAY
        &hex!("0d 01 00"),      // MAX_PUSH_ID
        &hex!("02 00"),         // PRIORITY (HTTP/2)
        &hex!("09 00"),         // CONTINUATION (HTTP/2)
        &hex!("05 03 00 0000"), // PUSH_PROMISE to a server
    ] {
        let mut stream = valid_request_headers();
        stream.extend_from_slice(bad);
        let mut s = server();
        s.feed(0, &stream, false);
        assert_eq!(s.error, Some(H3Error::FrameUnexpected), "{bad:02x?}");
    }
    // PUSH_PROMISE to a client that never sent MAX_PUSH_ID.
    let mut c = client();
    c.feed(0, &hex!("05 03 00 0000"), false);
    assert_eq!(c.error, Some(H3Error::IdError));
    // A server-initiated bidirectional stream.
    let mut c = client();
    c.feed(1, &hex!("01 02 0000"), false);
    assert_eq!(c.error, Some(H3Error::StreamCreationError));
    // A client-initiated unidirectional stream of the server's own? Nothing is received
    // on our own unidirectional streams; a truncated frame at FIN is a frame error.
    let mut s = server();
    s.feed(0, &hex!("01 05 0000"), true);
    assert_eq!(s.error, Some(H3Error::FrameError));
    // FIN without any request is an incomplete request.
    let mut s = server();
    s.feed(0, &[], true);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::RequestIncomplete)]);
    // A malformed request head is a stream error.
    let mut s = server();
    let mut block = [0u8; 32];
    let n = crate::qpack::encode_field_section(&[(b":method", b"GET")], &mut block).unwrap();
    let mut stream = vec![0x01, n as u8];
    stream.extend_from_slice(&block[..n]);
    s.feed(0, &stream, false);
    assert_eq!(s.take_events(), [Ev::StreamError(0, H3Error::MessageError)]);
    assert_eq!(s.error, None);
}

#[test]
fn push_stream_without_max_push_id() {
    let mut c = client();
    c.feed(3, &hex!("01 00"), false);
    assert_eq!(c.error, Some(H3Error::IdError));
    assert_eq!(c.t.closed, Some(0x108));
    // Clients cannot push.
    let mut s = server();
    s.feed(2, &hex!("01 00"), false);
    assert_eq!(s.error, Some(H3Error::StreamCreationError));
}

#[test]
fn unknown_stream_types_are_ignored() {
    let mut s = server();
    s.feed(2, &hex!("4040 aabbccdd"), false);
    s.feed(2, &[0xee; 100], true);
    assert_eq!(s.t.stops, [(2, 0x103)]);
    assert!(s.take_events().is_empty());
    assert!(s.streams[&2].buf.is_empty());
    assert_eq!(s.error, None);
}

#[test]
fn qpack_streams_without_dynamic_table() {
    // The peer's encoder stream may only set the capacity to 0.
    let mut c = client();
    c.feed(7, &hex!("02 20 20"), false);
    assert_eq!(c.error, None);
    c.feed(7, &hex!("21"), false);
    assert_eq!(c.error, Some(H3Error::QpackEncoderStreamError));
    assert_eq!(c.t.closed, Some(0x201));
    let mut c = client();
    c.feed(7, &hex!("02 c0 01 61"), false);
    assert_eq!(c.error, Some(H3Error::QpackEncoderStreamError));
    // The peer's decoder stream cannot acknowledge sections we never encoded with the
    // dynamic table, nor count insertions we never made.
    let mut c = client();
    c.feed(11, &hex!("03 44"), false);
    assert_eq!(c.error, None);
    c.feed(11, &hex!("80"), false);
    assert_eq!(c.error, Some(H3Error::QpackDecoderStreamError));
    let mut c = client();
    c.feed(11, &hex!("03 01"), false);
    assert_eq!(c.error, Some(H3Error::QpackDecoderStreamError));
    // A field section referencing the dynamic table.
    let mut c = client();
    c.feed(0, &hex!("01 03 0200 80"), false);
    assert_eq!(c.error, Some(H3Error::QpackDecompressionFailed));
    assert_eq!(c.t.closed, Some(0x200));
}

#[test]
fn control_stream_bytes() {
    // The device's control stream: type, SETTINGS (field section size 1024, grease
    // setting 0x40 = 1), a reserved frame (0x5f, empty).
    let c = client();
    assert_eq!(c.t.out[&2].0, hex!("00 04 06 06 4400 4040 01 405f 00"));
    assert!(!c.t.out.contains_key(&6), "no QPACK streams without a dynamic table");
}

#[test]
fn closed_connection_refuses_everything() {
    let mut s = server();
    s.feed(0, &hex!("00 00"), false);
    assert_eq!(s.error, Some(H3Error::FrameUnexpected));
    let mut st = StreamState::new(4);
    let mut fields = [0u8; 16];
    assert_eq!(
        s.conn.recv(&mut s.t, &mut st, &[], false, &mut fields),
        Err(H3Error::FrameUnexpected)
    );
    assert_eq!(s.conn.shutdown(&mut s.t), Err(SendError::Closed(H3Error::FrameUnexpected)));
    assert_eq!(s.conn.flush(&mut s.t), Err(H3Error::FrameUnexpected));
}

// ---------------------------------------------------------------------------------------
// Dynamic table (server side)
// ---------------------------------------------------------------------------------------

#[cfg(feature = "dynamic-table")]
mod dynamic {
    use super::*;
    use crate::qpack::{DynamicTable, TableEntry};

    fn with_table(blocked: u16, run: impl FnOnce(&mut Connection<'_>, &mut Mem)) {
        let mut bytes = [0u8; 220];
        let mut slots = [TableEntry::EMPTY; 8];
        let table = DynamicTable::new(&mut bytes, &mut slots, 220);
        let cfg = Config { qpack_blocked_streams: blocked, ..Config::SERVER };
        let mut conn = Connection::with_dynamic_table(Role::Server, cfg, table);
        let mut t = Mem::new(false);
        conn.open(&mut t).unwrap();
        run(&mut conn, &mut t);
    }

    fn feed<'a>(
        conn: &mut Connection<'_>,
        t: &mut Mem,
        s: &mut StreamState,
        bytes: &'a [u8],
        fin: bool,
        fields: &'a mut [u8; FIELDS],
    ) -> Result<(usize, Option<Ev>), H3Error> {
        let id = s.id();
        conn.recv(t, s, bytes, fin, fields).map(|r| (r.consumed, r.event.map(|e| own(id, e))))
    }

    #[test]
    fn settings_and_decoder_stream() {
        with_table(2, |_, t| {
            // SETTINGS: capacity 220, field section size 16384, blocked streams 2, grease.
            assert_eq!(t.out[&3].0, hex!("00 04 0d 01 40dc 06 80004000 07 02 405f 02 407e 00"));
            assert_eq!(t.out[&7].0, hex!("03"));
        });
    }

    /// RFC 9204 B.2 through the session: encoder stream, a blocked request stream that
    /// unblocks, the Section Acknowledgment on our decoder stream.
    #[test]
    fn rfc9204_b2_through_the_session() {
        with_table(1, |conn, t| {
            let mut fields = [0u8; FIELDS];
            let mut req = StreamState::new(4);
            // Stream 4: a request whose head references the two entries of B.2 plus
            // static :method GET, :scheme https. RIC 2, Base 0.
            let block = hex!("0381 10 11 d1 d7");
            let mut frame = vec![0x01, block.len() as u8];
            frame.extend_from_slice(&block);
            assert_eq!(
                feed(conn, t, &mut req, &frame, true, &mut fields),
                Ok((0, Some(Ev::Blocked(4))))
            );
            assert_eq!(conn.blocked_streams(), 1);
            // The encoder stream arrives.
            let mut enc = StreamState::new(6);
            let mut bytes = vec![0x02];
            bytes.extend_from_slice(&hex!(
                "3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468"
            ));
            assert_eq!(
                feed(conn, t, &mut enc, &bytes, false, &mut fields),
                Ok((bytes.len(), Some(Ev::Unblocked(4))))
            );
            assert_eq!(feed(conn, t, &mut enc, &[], false, &mut fields), Ok((0, None)));
            let (n, ev) = feed(conn, t, &mut req, &frame, true, &mut fields).unwrap();
            assert_eq!(n, frame.len());
            assert_eq!(
                ev,
                Some(Ev::Headers(
                    4,
                    HeadersKind::Message,
                    hdrs(&[
                        (":authority", "www.example.com"),
                        (":path", "/sample/path"),
                        (":method", "GET"),
                        (":scheme", "https")
                    ])
                ))
            );
            assert_eq!(conn.blocked_streams(), 0);
            conn.flush(t).unwrap();
            // Decoder stream: type, then Section Acknowledgment (stream 4) = 0x84, and no
            // Insert Count Increment (the acknowledgment covered both insertions).
            assert_eq!(t.out[&7].0, hex!("03 84"));
            // B.3: a speculative insert is acknowledged at the next flush.
            let b3 = hex!("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565");
            assert_eq!(feed(conn, t, &mut enc, &b3, false, &mut fields), Ok((b3.len(), None)));
            conn.flush(t).unwrap();
            assert_eq!(t.out[&7].0, hex!("03 84 01"));
            // B.4: stream 8 blocks; the client resets it; we send Stream Cancellation.
            let mut s8 = StreamState::new(8);
            let mut frame = vec![0x01, 0x05];
            frame.extend_from_slice(&hex!("0500 80 c1 81"));
            assert_eq!(
                feed(conn, t, &mut s8, &frame, false, &mut fields),
                Ok((0, Some(Ev::Blocked(8))))
            );
            conn.on_reset(t, &mut s8, 0x10c).unwrap();
            assert_eq!(conn.blocked_streams(), 0);
            conn.flush(t).unwrap();
            assert_eq!(t.out[&7].0, hex!("03 84 01 48"));
            assert_eq!(conn.closed(), None);
        });
    }

    #[test]
    fn blocked_streams_limit() {
        with_table(1, |conn, t| {
            let mut fields = [0u8; FIELDS];
            let frame = hex!("01 03 0200 80");
            let mut a = StreamState::new(0);
            assert_eq!(
                feed(conn, t, &mut a, &frame, false, &mut fields),
                Ok((0, Some(Ev::Blocked(0))))
            );
            // The same stream presenting the same bytes again does not count twice.
            assert_eq!(
                feed(conn, t, &mut a, &frame, false, &mut fields),
                Ok((0, Some(Ev::Blocked(0))))
            );
            let mut b = StreamState::new(4);
            assert_eq!(
                feed(conn, t, &mut b, &frame, false, &mut fields),
                Err(H3Error::QpackDecompressionFailed)
            );
            assert_eq!(t.closed, Some(0x200));
        });
        // Advertising 0 blocked streams: the first blocked stream is already too many.
        with_table(0, |conn, t| {
            let mut fields = [0u8; FIELDS];
            let mut a = StreamState::new(0);
            assert_eq!(
                feed(conn, t, &mut a, &hex!("01 03 0200 80"), false, &mut fields),
                Err(H3Error::QpackDecompressionFailed)
            );
        });
    }

    #[test]
    fn encoder_stream_errors() {
        // Capacity above our advertised maximum (221 > 220).
        with_table(1, |conn, t| {
            let mut fields = [0u8; FIELDS];
            let mut enc = StreamState::new(2);
            assert_eq!(
                feed(conn, t, &mut enc, &hex!("02 3fbe01"), false, &mut fields),
                Err(H3Error::QpackEncoderStreamError)
            );
            assert_eq!(t.closed, Some(0x201));
        });
        // An entry larger than the capacity; a reference to a missing entry.
        for bad in [&hex!("02 3f21 c0 3f")[..], &hex!("02 3fbd01 80 01 61")] {
            with_table(1, |conn, t| {
                let mut fields = [0u8; FIELDS];
                let mut enc = StreamState::new(2);
                let mut bytes = bad.to_vec();
                if bad[2] == 0x21 {
                    // Capacity 64, then :authority with a 63-byte value: 10 + 63 + 32 > 64.
                    bytes.extend(std::iter::repeat_n(b'x', 0x3f));
                }
                assert_eq!(
                    feed(conn, t, &mut enc, &bytes, false, &mut fields),
                    Err(H3Error::QpackEncoderStreamError),
                    "{bad:02x?}"
                );
            });
        }
        // Closing the encoder stream.
        with_table(1, |conn, t| {
            let mut fields = [0u8; FIELDS];
            let mut enc = StreamState::new(2);
            assert_eq!(
                feed(conn, t, &mut enc, &hex!("02"), true, &mut fields),
                Err(H3Error::ClosedCriticalStream)
            );
        });
    }

    #[test]
    fn decoded_limit_with_dynamic_references() {
        with_table(1, |conn, t| {
            let mut fields = [0u8; FIELDS];
            let mut enc = StreamState::new(2);
            let bytes = hex!("02 3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d");
            assert_eq!(
                feed(conn, t, &mut enc, &bytes, false, &mut fields),
                Ok((bytes.len(), None))
            );
            // 100 references to a 57-byte entry: 5700 decoded from 102 bytes.
            let mut frame = vec![0x01, 0x40, 102, 0x02, 0x00];
            frame.extend(std::iter::repeat_n(0x80, 100));
            let mut s = StreamState::new(0);
            let cfg_limit = FIELDS; // fields buffer; the configured limit is larger
            assert!(cfg_limit < 5700);
            let (n, ev) = feed(conn, t, &mut s, &frame, false, &mut fields).unwrap();
            assert_eq!((n, ev), (frame.len(), Some(Ev::StreamError(0, H3Error::ExcessiveLoad))));
            conn.flush(t).unwrap();
            // The abandoned stream is cancelled on the decoder stream.
            assert_eq!(t.out[&7].0, hex!("03 40 01"));
        });
    }
}

#[cfg(feature = "dynamic-table")]
mod dynamic_random {
    use super::*;
    use crate::qpack::{DynamicTable, TableEntry};

    proptest! {
        /// Random encoder-stream and request-stream bytes into a server with a dynamic
        /// table: never a panic, and the blocked-stream count stays within its limit.
        #[test]
        fn random_qpack_traffic_never_panics(
            enc in proptest::collection::vec(any::<u8>(), 0..96),
            blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
        ) {
            let mut bytes = [0u8; 220];
            let mut slots = [TableEntry::EMPTY; 8];
            let table = DynamicTable::new(&mut bytes, &mut slots, 220);
            let cfg = Config { qpack_blocked_streams: 2, ..Config::SERVER };
            let mut conn = Connection::with_dynamic_table(Role::Server, cfg, table);
            let mut t = Mem::new(false);
            conn.open(&mut t).unwrap();
            let mut fields = [0u8; FIELDS];
            let mut e = StreamState::new(2);
            // A valid capacity first, so inserts can succeed.
            let mut stream = vec![0x02, 0x3f, 0xbd, 0x01];
            stream.extend_from_slice(&enc);
            let _ = conn.recv(&mut t, &mut e, &stream, false, &mut fields);
            for (i, b) in blocks.iter().enumerate() {
                let mut r = StreamState::new(4 * i as u64);
                let mut frame = vec![0x01, b.len() as u8];
                frame.extend_from_slice(b);
                if conn.recv(&mut t, &mut r, &frame, true, &mut fields).is_err() {
                    break;
                }
                prop_assert!(conn.blocked_streams() <= 2);
            }
            let _ = conn.flush(&mut t);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Random input
// ---------------------------------------------------------------------------------------

proptest! {
    #[test]
    fn random_stream_bytes_never_panic(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..8),
        id in 0u64..16,
        server_role in any::<bool>(),
        prefix in 0u8..5,
    ) {
        let mut e = if server_role { server() } else { client() };
        // Sometimes start with a valid stream type or SETTINGS so parsing gets deeper.
        let start: &[u8] = match prefix {
            0 => &[],
            1 => &hex!("00 04 00"),
            2 => &hex!("02"),
            3 => &hex!("03"),
            _ => &[0x01, 0x03, 0x00, 0x00, 0xd1],
        };
        e.feed(id, start, false);
        let n = chunks.len();
        for (i, c) in chunks.iter().enumerate() {
            e.feed(id, c, i + 1 == n);
            if e.error.is_some() {
                break;
            }
            // Nothing buffers without bound: what stays unconsumed is one incomplete
            // frame at most (the largest a HEADERS frame may be, plus its header).
            prop_assert!(e.streams[&id].buf.len() <= 16 * 1024 + 9);
        }
    }
}
