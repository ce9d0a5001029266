//! QUIC scenarios in the simulator.
//!
//! The main one is Eggert's transaction, which `mote demo` runs: a device client (the
//! RustCrypto provider, a small connection, raw-public-key Ed25519 server authentication
//! with the key pinned) opens a QUIC connection to a server over an emulated link, sends a
//! request on a bidirectional stream and reads the object the server answers with — or,
//! with [`Setup::with_http3`], fetches it with an HTTP/3 GET through [`h3`] (mote-h3 over
//! the mote-quic connection), as `mote demo` does. Both
//! ends are mote-quic [`Endpoint`]s running as [`mote_sim`] nodes ([`QuicNode`]), so the
//! handshake, loss recovery, flow control and closing are the real code paths; the link is
//! virtual, so a run takes milliseconds of wall time and is a pure function of its seed.
//!
//! [`run`] takes a [`Setup`] (link profile, seed, request and object sizes, connection
//! settings, faults) and returns an [`Outcome`]: timings, bytes and packets each way from the
//! simulator's trace, both connections' counters, and what each side received, for
//! byte-exact checks. The scenario test suite (`tests/`) builds on it.

pub mod devconn;
pub mod h3;
pub mod pair;

use std::net::SocketAddr;

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{CryptoProvider, CryptoRng, SignatureScheme, SigningKey as _};
use mote_quic::connection::{CloseReason, ConnectionStats, Storage};
use mote_quic::endpoint::{NoAccept, Slot};
use mote_quic::frame::StreamDir;
use mote_quic::stream::{Read, StreamId};
use mote_quic::{Connection, ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event};
use mote_sim::quic::{Application, QuicNode};
use mote_sim::{Direction, Duration, Instant, LinkProfile, PacketKind, Simulator, Summary};
use mote_tls::{
    ClientConfig, ClientSession, Resumption, ServerAuth, ServerConfig, ServerIdentity,
    ServerSession, Ticket, TicketConfig, TicketKey,
};

/// Stream slots of the device connection (two it opens, one the server may open).
pub const DEVICE_STREAMS: usize = 3;
/// The firmware's HTTP/3 client (`Setup::http3_device_client`): four 272-byte stream
/// buffers, as on the device.
type DeviceH3 = mote_h3::client::Client<272>;
/// Its configuration: the firmware's.
const DEVICE_H3_CONFIG: mote_h3::Config = mote_h3::Config {
    max_field_section_size: 512,
    max_encoded_field_section: 256,
    qpack_blocked_streams: 0,
    grease: Some(1),
};
/// Application Data sent-packet records of the device connection.
pub const DEVICE_SENT: usize = 16;
/// Range entries of the device connection (received packets, stream reassembly).
pub const DEVICE_RANGES: usize = 4;
/// Stream slots of a server connection.
pub const SERVER_STREAMS: usize = 8;
/// Application Data sent-packet records of a server connection.
pub const SERVER_SENT: usize = 256;
/// Range entries of a server connection.
pub const SERVER_RANGES: usize = 32;

/// The device's TLS session: a 1 KiB receive buffer is enough for a raw-public-key server.
pub type DeviceTls = ClientSession<'static, RustCrypto, 1024>;
/// The device connection.
pub type DeviceConnection =
    Connection<RustCrypto, DeviceTls, Vec<u8>, Vec<u8>, DEVICE_STREAMS, DEVICE_SENT, DEVICE_RANGES>;
/// The device's endpoint (one connection, accepts nothing).
pub type DeviceEndpoint = Endpoint<
    RustCrypto,
    DeviceTls,
    Vec<u8>,
    Vec<u8>,
    NoAccept,
    Vec<Slot<DeviceConnection>>,
    DEVICE_STREAMS,
    DEVICE_SENT,
    DEVICE_RANGES,
>;
/// A server connection with provider `SP`.
pub type ServerConnection<SP> = Connection<
    SP,
    ServerSession<'static, SP>,
    Vec<u8>,
    Vec<u8>,
    SERVER_STREAMS,
    SERVER_SENT,
    SERVER_RANGES,
>;
/// What the server endpoint calls to accept a client.
pub type ServerAcceptor<SP> = Box<
    dyn FnMut(
        Instant,
    )
        -> Option<(ServerSession<'static, SP>, Storage<Vec<u8>, Vec<u8>, SERVER_STREAMS>)>,
>;
/// The server endpoint with provider `SP`.
pub type ServerEndpoint<SP> = Endpoint<
    SP,
    ServerSession<'static, SP>,
    Vec<u8>,
    Vec<u8>,
    ServerAcceptor<SP>,
    Vec<Slot<ServerConnection<SP>>>,
    SERVER_STREAMS,
    SERVER_SENT,
    SERVER_RANGES,
>;

/// A seeded generator (SplitMix64) standing in for a hardware RNG — simulations only.
#[derive(Clone, Debug)]
pub struct SeededRng(pub u64);

impl CryptoRng for SeededRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), mote_crypto::Error> {
        for b in dest {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *b = (z ^ (z >> 31)) as u8;
        }
        Ok(())
    }
}

/// The device's address.
pub fn device_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2], 5000))
}

/// The server's address.
pub fn server_addr() -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], 443))
}

/// The deterministic object a server answers with: `n` bytes.
pub fn object(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8).collect()
}

/// PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410).
fn ed25519_pkcs8(seed: u8) -> Vec<u8> {
    let mut v = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    v.extend_from_slice(&[seed; 32]);
    v
}

/// Buffer sizes of a device connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceBuffers {
    /// CRYPTO send and receive buffer of each level.
    pub crypto: usize,
    /// Stream send buffer.
    pub stream_send: usize,
    /// Stream receive buffer (bounds the stream's flow-control window).
    pub stream_recv: usize,
}

impl DeviceBuffers {
    /// What the demo's device uses: 1 KiB CRYPTO buffers, a 2 KiB send and an 8 KiB
    /// receive buffer per stream.
    pub const DEVICE: Self = Self { crypto: 1024, stream_send: 2048, stream_recv: 8192 };
}

/// Which handshake the device makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeMode {
    /// A full handshake.
    Full,
    /// A first connection collects a session ticket, a second one resumes with it (PSK,
    /// 1-RTT); the outcome measures the second.
    Resumed,
    /// As `Resumed`, and the request travels in 0-RTT packets.
    ZeroRtt,
}

impl HandshakeMode {
    /// The name printed in tables.
    pub const fn name(self) -> &'static str {
        match self {
            HandshakeMode::Full => "1-RTT",
            HandshakeMode::Resumed => "resumed",
            HandshakeMode::ZeroRtt => "0-RTT",
        }
    }

    /// Round trips a transaction needs with this handshake on an ideal link: one for the
    /// handshake and one for the request and its answer, or one in all with 0-RTT.
    pub const fn round_trips(self) -> u32 {
        match self {
            HandshakeMode::Full | HandshakeMode::Resumed => 2,
            HandshakeMode::ZeroRtt => 1,
        }
    }
}

/// The ideal duration of a transaction over `profile`: `round_trips` propagation round
/// trips ([`LinkProfile::rtt`]) plus the serialization of every byte that crossed each
/// rate-limited direction — `up` at the uplink's rate, `down` at the downlink's (each
/// datagram's length plus the link's per-datagram overhead). Nothing is counted for
/// queueing, pacing, ACK delays or processing; serialization that overlaps (ACKs going up
/// while the answer comes down) is counted in full, so a run may come in marginally under
/// it. A direction without a rate limit adds no serialization time.
///
/// For the transaction of [`Setup::transaction`] use [`HandshakeMode::round_trips`] and the
/// outcome's [`Outcome::up`] and [`Outcome::down`] (what crossed up to the last object
/// byte); [`Outcome::ideal`] does that.
pub fn ideal_duration(
    profile: &LinkProfile,
    round_trips: u32,
    up: &Traffic,
    down: &Traffic,
) -> Duration {
    let serialization = |link: &mote_sim::LinkConfig, t: &Traffic| -> u64 {
        let Some(rate) = link.rate_bps.filter(|&r| r > 0) else { return 0 };
        let wire = u128::from(t.bytes) + u128::from(t.datagrams) * link.overhead_bytes as u128;
        u64::try_from((wire * 8 * 1_000_000).div_ceil(u128::from(rate))).unwrap_or(u64::MAX)
    };
    let rtts = profile.rtt().as_micros().saturating_mul(u64::from(round_trips));
    Duration(
        rtts.saturating_add(serialization(&profile.up, up))
            .saturating_add(serialization(&profile.down, down)),
    )
}

/// One run of the transaction.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The link.
    pub profile: LinkProfile,
    /// The run's seed (link randomness, the device's and the server's generators).
    pub seed: u64,
    /// The request the device sends on each stream.
    pub request: Vec<u8>,
    /// Bytes of the object the server answers each request with.
    pub object_size: usize,
    /// Streams the device opens at once, each with the request.
    pub streams: usize,
    /// Device connection settings.
    pub device: ConnectionConfig,
    /// Server connection settings.
    pub server: ConnectionConfig,
    /// Device buffer sizes.
    pub buffers: DeviceBuffers,
    /// The handshake to measure.
    pub mode: HandshakeMode,
    /// Give up after this much virtual time.
    pub limit: Duration,
    /// Close the connection when the transaction is done.
    pub close: bool,
    /// How long the run goes on after the transaction (for closing, draining or idling).
    pub linger: Duration,
    /// Fetch the object with an HTTP/3 GET ([`h3`], ALPN `h3`) instead of writing
    /// `request` on a plain stream: the device sends `GET /<object_size>`, the server
    /// answers `200` with the object as the body.
    pub http3: bool,
    /// With `http3`: the device runs the firmware's one-request-at-a-time client
    /// (`mote_h3::client::Client`) instead of the general session; the requests go one
    /// after the other.
    pub http3_device_client: bool,
    /// Path changes during the run (NAT rebinding, migration, a preferred address).
    pub paths: PathPlan,
    /// Resumption runs: before the measured connection, another one resumes with the same
    /// ticket (and in 0-RTT mode sends early data), so the measured connection replays a
    /// spent ticket: the server's anti-replay register refuses its 0-RTT and it goes on in
    /// 1-RTT (RFC 9001 §4.6.2, RFC 8446 §8).
    pub replay_ticket: bool,
}

/// Path changes of a run (RFC 9000 §9), applied in the simulator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathPlan {
    /// NAT rebindings of the device: at this time after the start, the device's address
    /// is seen as this one (port, or address and port).
    pub rebinds: Vec<(Duration, SocketAddr)>,
    /// Active migration: at this time after the start the device sends from this second
    /// local address (linked to the server with the run's profile) and calls
    /// `Connection::migrate`.
    pub migrate: Option<(Duration, SocketAddr)>,
    /// A second server address, bound by the server node and linked to the device with
    /// the run's profile; put it in `Setup::server.preferred_address` to offer it.
    pub server_second_address: Option<SocketAddr>,
    /// At this time after the start the server → device link's MTU drops to this size
    /// (datagrams above it are dropped: a black hole for large packets).
    pub mtu_drop: Option<(Duration, usize)>,
}

impl Setup {
    /// The demo's transaction on `profile`: a 5 KiB object for an 11-byte request, the device
    /// and server settings the profile calls for (NB-IoT: 2 s initial RTT on both sides).
    pub fn transaction(profile: LinkProfile, seed: u64) -> Self {
        let nbiot = profile.rtt() >= Duration::from_secs(1);
        let (device, server) = if nbiot {
            (ConnectionConfig::nb_iot_device(), ConnectionConfig::nb_iot_server())
        } else {
            (ConnectionConfig::device(), ConnectionConfig::server())
        };
        Self {
            profile,
            seed,
            request: b"GET /object".to_vec(),
            object_size: 5 * 1024,
            streams: 1,
            device,
            server,
            buffers: DeviceBuffers::DEVICE,
            mode: HandshakeMode::Full,
            limit: Duration::from_secs(300),
            close: true,
            linger: Duration::from_secs(30),
            http3: false,
            http3_device_client: false,
            paths: PathPlan::default(),
            replay_ticket: false,
        }
    }
}

impl Setup {
    /// The same run fetching the object with an HTTP/3 GET (see [`Setup::http3`]).
    ///
    /// Stream counts (RFC 9114 §6.2): the server's [`SERVER_STREAMS`] slots are split
    /// into 4 for client requests, 3 for client unidirectional streams (control and the two
    /// QPACK streams; the RFC's recommended minimum) and 1 for its own control stream —
    /// [`ConnectionConfig::server`] would reserve all 8 for requests and allow the client no
    /// control stream. The device keeps its profile: 1 peer unidirectional stream (the
    /// server's control stream; a mote-h3 session without a dynamic table opens no QPACK
    /// streams) of its [`DEVICE_STREAMS`] = 3 slots, below the RFC's recommended 3 to keep
    /// the device at 3 stream buffers. Both sides give unidirectional streams at least
    /// 16 KiB of credit (RFC 9114 §6.2 asks for 1024 bytes).
    pub fn with_http3(mut self) -> Self {
        self.http3 = true;
        self.server.streams.max_streams_bidi = (SERVER_STREAMS - 4) as u64;
        self.server.streams.max_streams_uni = 3;
        self
    }

    /// [`Setup::with_http3`] with the firmware's HTTP/3 client on the device (see
    /// [`Setup::http3_device_client`]).
    pub fn with_http3_device_client(mut self) -> Self {
        self.http3_device_client = true;
        self.with_http3()
    }
}

/// Traffic in one direction, from the simulator's trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Datagrams sent.
    pub datagrams: u64,
    /// UDP payload bytes sent.
    pub bytes: u64,
    /// QUIC packets sent (coalesced packets counted one by one).
    pub packets: u64,
    /// Initial packets among them.
    pub initial_packets: u64,
    /// Datagrams the link dropped.
    pub dropped: u64,
}

impl Traffic {
    fn from(s: &Summary) -> Self {
        Self {
            datagrams: s.sent_datagrams,
            bytes: s.sent_bytes,
            packets: s.packets.values().sum(),
            initial_packets: s.packets(PacketKind::Initial),
            dropped: s.drops_total(),
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The handshake measured.
    pub mode: HandshakeMode,
    /// Whether every stream got its whole object.
    pub complete: bool,
    /// From the connection attempt to the handshake's completion at the device.
    pub handshake: Option<Duration>,
    /// From the connection attempt to the first object byte read by the device.
    pub time_to_first_byte: Option<Duration>,
    /// From the connection attempt to the last object byte (and FIN) read by the device.
    pub duration: Option<Duration>,
    /// Device → server, up to the end of the transaction.
    pub up: Traffic,
    /// Server → device, up to the end of the transaction.
    pub down: Traffic,
    /// Device → server over the whole run (close included).
    pub up_total: Traffic,
    /// Server → device over the whole run.
    pub down_total: Traffic,
    /// The device connection's counters at the end of the transaction.
    pub device: ConnectionStats,
    /// The server connection's counters when it closed (or at the end of the run).
    pub server: ConnectionStats,
    /// What the device read on each stream.
    pub responses: Vec<Vec<u8>>,
    /// What the server read on each stream.
    pub requests: Vec<Vec<u8>>,
    /// Why the device connection closed, if it did.
    pub device_close: Option<CloseReason>,
    /// Whether the server accepted the device's 0-RTT data.
    pub early_data_accepted: Option<bool>,
    /// Whether the server accepted the resumption PSK.
    pub resumed: bool,
    /// A digest of the simulator's trace (same seed, same digest).
    pub trace_digest: u64,
    /// The whole trace as JSON lines.
    pub trace_jsonl: String,
    /// Virtual time when the run ended.
    pub end: Instant,
    /// The device's connection was removed from its endpoint (drained) by the end.
    pub device_drained: bool,
    /// The server's connections were all removed (drained) by the end.
    pub server_drained: bool,
    /// HTTP/3 runs: the response status the device received on each stream.
    pub statuses: Vec<Option<u16>>,
    /// HTTP/3 runs: the device received the server's SETTINGS.
    pub device_saw_settings: bool,
    /// HTTP/3 runs: the server received the device's SETTINGS.
    pub server_saw_settings: bool,
}

impl Outcome {
    /// The ideal duration of this run's transaction over `profile` (the link it ran on):
    /// see [`ideal_duration`].
    pub fn ideal(&self, profile: &LinkProfile) -> Duration {
        ideal_duration(profile, self.mode.round_trips(), &self.up, &self.down)
    }

    /// Measured transaction time over the ideal one (1.0 = ideal); `None` if the
    /// transaction did not finish.
    pub fn vs_ideal(&self, profile: &LinkProfile) -> Option<f64> {
        let ideal = self.ideal(profile).as_micros();
        self.duration.filter(|_| ideal > 0).map(|d| d.as_micros() as f64 / ideal as f64)
    }
}

/// The device application: connect, send the request on `streams` streams, read the
/// answers, close.
pub struct DeviceApp {
    tls: Option<DeviceTls>,
    storage: Option<Storage<Vec<u8>, Vec<u8>, DEVICE_STREAMS>>,
    handle: Option<ConnectionHandle>,
    streams_wanted: usize,
    request: Vec<u8>,
    streams: Vec<(StreamId, usize, bool)>,
    /// Early (0-RTT) streams are opened before the handshake completes.
    early: bool,
    close: bool,
    closed: bool,
    /// What was read on each stream.
    pub responses: Vec<Vec<u8>>,
    /// When the handshake completed.
    pub handshake_at: Option<Instant>,
    /// When the first object byte arrived.
    pub first_byte_at: Option<Instant>,
    /// When every stream ended.
    pub done_at: Option<Instant>,
    /// Counters captured when the transaction finished or the connection closed.
    pub stats: Option<ConnectionStats>,
    /// The close reason, once closed.
    pub close_reason: Option<CloseReason>,
    /// The latest session ticket received, encoded with the server's transport
    /// parameters.
    pub ticket: Option<Vec<u8>>,
    /// The 0-RTT verdict.
    pub early_data: Option<bool>,
    /// Whether the PSK was accepted.
    pub psk_accepted: bool,
    /// When the ticket arrived (its age is measured from here, RFC 8446 §4.2.11.1).
    pub ticket_at: Option<Instant>,
    /// The server's transport parameters remembered with the ticket, for 0-RTT.
    remembered: Option<Vec<u8>>,
    /// HTTP/3 runs: the session and the request path.
    h3: Option<(h3::H3Session, Vec<u8>)>,
    /// HTTP/3 runs with the device client: the client and the request path.
    h3dev: Option<(Box<DeviceH3>, Vec<u8>)>,
    /// HTTP/3 runs: the response status on each stream.
    pub statuses: Vec<Option<u16>>,
    /// HTTP/3 runs: the server's SETTINGS arrived.
    pub saw_settings: bool,
    stopped: Vec<Event>,
}

impl DeviceApp {
    fn new(
        tls: DeviceTls,
        storage: Storage<Vec<u8>, Vec<u8>, DEVICE_STREAMS>,
        s: &Setup,
        early: bool,
    ) -> Self {
        Self {
            tls: Some(tls),
            storage: Some(storage),
            handle: None,
            streams_wanted: s.streams,
            request: s.request.clone(),
            streams: Vec::new(),
            early,
            close: s.close,
            closed: false,
            responses: Vec::new(),
            handshake_at: None,
            first_byte_at: None,
            done_at: None,
            stats: None,
            close_reason: None,
            ticket: None,
            early_data: None,
            psk_accepted: false,
            ticket_at: None,
            remembered: None,
            h3: (s.http3 && !s.http3_device_client).then(|| {
                let path = format!("/{}", s.object_size).into_bytes();
                (h3::H3Session::new(mote_h3::Role::Client, mote_h3::Config::DEVICE), path)
            }),
            h3dev: (s.http3 && s.http3_device_client).then(|| {
                let path = format!("/{}", s.object_size).into_bytes();
                (Box::new(DeviceH3::new(DEVICE_H3_CONFIG)), path)
            }),
            statuses: Vec::new(),
            saw_settings: false,
            stopped: Vec::new(),
        }
    }

    fn open_streams(&mut self, conn: &mut DeviceConnection) {
        if let Some((client, path)) = self.h3dev.as_mut() {
            let t = &mut h3::QuicTransport { conn };
            if client.open(t).is_err() {
                return;
            }
            // One request at a time: the next once the previous one finished.
            let busy = self.streams.last().is_some_and(|(_, _, fin)| !*fin);
            if self.streams.len() < self.streams_wanted && !busy {
                let request = mote_h3::client::ClientRequest::get(b"server", path);
                let mut scratch = [0u8; 256];
                if let Ok(id) = client.request(t, &request, true, &mut scratch) {
                    if let Some(qid) = StreamId::new(id) {
                        self.streams.push((qid, 1, false));
                        self.responses.push(Vec::new());
                        self.statuses.push(None);
                    }
                }
            }
            return;
        }
        if let Some((session, path)) = self.h3.as_mut() {
            // The control stream with SETTINGS first, then one request stream per GET.
            if session.open(conn).is_err() {
                return;
            }
            while self.streams.len() < self.streams_wanted {
                let Ok(id) = session.open_request(conn) else { break };
                let Some(qid) = StreamId::new(id) else { break };
                self.streams.push((qid, 0, false));
                self.responses.push(Vec::new());
                self.statuses.push(None);
            }
            let mut scratch = [0u8; 256];
            for (id, sent, _) in self.streams.iter_mut().filter(|(_, sent, _)| *sent == 0) {
                let request = mote_h3::Request::get(b"server", path);
                let r = session.with_stream(conn, id.raw(), |h3, t, st| {
                    h3.send_request(t, st, &request, true, &mut scratch)
                });
                if matches!(r, Some(Ok(()))) {
                    *sent = 1;
                }
            }
            return;
        }
        while self.streams.len() < self.streams_wanted {
            match conn.stream_open(StreamDir::Bidi) {
                Ok(id) => {
                    self.streams.push((id, 0, false));
                    self.responses.push(Vec::new());
                }
                Err(_) => break,
            }
        }
    }
}

impl DeviceApp {
    /// The HTTP/3 half of [`DeviceApp::drive`]: feed the session, collect the responses.
    fn drive_h3(&mut self, now: Instant, conn: &mut DeviceConnection) {
        if self.h3dev.is_some() {
            self.drive_h3_device_client(now, conn);
        } else {
            self.drive_h3_session(now, conn);
        }
        let all_done = !self.streams.is_empty() && self.streams.iter().all(|(_, _, fin)| *fin);
        if all_done && self.streams.len() == self.streams_wanted && self.done_at.is_none() {
            self.done_at = Some(now);
            self.stats = Some(conn.stats());
        }
        if self.done_at.is_some() && self.close && !self.closed {
            self.closed = true;
            conn.close(mote_h3::H3Error::NoError.code(), b"done");
        }
    }

    /// The device client's events: the response of the last request opened.
    fn drive_h3_device_client(&mut self, now: Instant, conn: &mut DeviceConnection) {
        let Some((client, _)) = self.h3dev.as_mut() else { return };
        let t = &mut h3::QuicTransport { conn };
        for e in self.stopped.drain(..) {
            if let Event::StreamStopped { id, code } = e {
                let _ = client.on_stop_sending(t, id.raw(), code);
            }
        }
        let Some(k) = self.streams.len().checked_sub(1) else {
            let _ = client.poll(t, |_| {});
            self.saw_settings = client.peer_settings_received();
            return;
        };
        let (stream, response, status) =
            (&mut self.streams[k], &mut self.responses[k], &mut self.statuses[k]);
        let first_byte_at = &mut self.first_byte_at;
        let _ = client.poll(t, |e| match e {
            mote_h3::client::Event::Response { status: code, .. } if code >= 200 => {
                *status = Some(code);
            }
            mote_h3::client::Event::Data(d) => {
                first_byte_at.get_or_insert(now);
                response.extend_from_slice(d);
            }
            mote_h3::client::Event::Finished => stream.2 = true,
            _ => {}
        });
        self.saw_settings = client.peer_settings_received();
    }

    fn drive_h3_session(&mut self, now: Instant, conn: &mut DeviceConnection) {
        let Some((session, _)) = self.h3.as_mut() else { return };
        for e in self.stopped.drain(..) {
            let _ = session.on_quic_event(conn, e);
        }
        let streams = &mut self.streams;
        let responses = &mut self.responses;
        let statuses = &mut self.statuses;
        let saw_settings = &mut self.saw_settings;
        let first_byte_at = &mut self.first_byte_at;
        let slot = |id: u64| streams.iter().position(|(s, _, _)| s.raw() == id);
        let mut finished = Vec::new();
        let _ = session.poll(conn, |_, _, st, e| match e {
            mote_h3::Event::Settings => *saw_settings = true,
            mote_h3::Event::Headers { kind: mote_h3::HeadersKind::Message, status, .. } => {
                if let Some(s) = slot(st.id()).and_then(|k| statuses.get_mut(k)) {
                    *s = Some(status);
                }
            }
            mote_h3::Event::Data(d) => {
                if first_byte_at.is_none() {
                    *first_byte_at = Some(now);
                }
                if let Some(r) = slot(st.id()).and_then(|k| responses.get_mut(k)) {
                    r.extend_from_slice(d);
                }
            }
            mote_h3::Event::Finished => finished.push(st.id()),
            _ => {}
        });
        for (id, _, fin) in self.streams.iter_mut() {
            if finished.contains(&id.raw()) {
                *fin = true;
            }
        }
    }
}

impl Application<DeviceEndpoint> for DeviceApp {
    fn drive(&mut self, now: Instant, ep: &mut DeviceEndpoint) {
        if self.handle.is_none() {
            if let (Some(tls), Some(storage)) = (self.tls.take(), self.storage.take()) {
                self.handle = ep.connect(now, server_addr(), tls, storage).ok();
            }
        }
        while let Some((_, e)) = ep.poll_event() {
            match e {
                Event::HandshakeComplete if self.handshake_at.is_none() => {
                    self.handshake_at = Some(now);
                }
                Event::Closed => {
                    if let Some(c) = self.handle.and_then(|h| ep.connection_ref(h)) {
                        self.close_reason = c.close_reason();
                        if self.stats.is_none() {
                            self.stats = Some(c.stats());
                        }
                    }
                }
                Event::StreamStopped { .. } if self.h3.is_some() => self.stopped.push(e),
                _ => {}
            }
        }
        let Some(conn) = self.handle.and_then(|h| ep.connection(h)) else { return };
        if let Some(tp) = self.remembered.take() {
            // RFC 9000 §7.4.1: 0-RTT uses the server's remembered parameters.
            conn.apply_remembered_params(&tp);
        }
        let mut t = [0u8; 512];
        if let Some(n) = conn.take_ticket(&mut t) {
            self.ticket = t.get(..n).map(<[u8]>::to_vec);
            self.ticket_at = Some(now);
        }
        if conn.is_closed() {
            return;
        }
        self.early_data = conn.tls().early_data_accepted();
        self.psk_accepted = conn.tls().psk_accepted();
        if conn.is_handshake_complete() || (self.early && conn.can_send_early_data()) {
            self.open_streams(conn);
        }
        if self.h3.is_some() || self.h3dev.is_some() {
            self.drive_h3(now, conn);
            return;
        }
        let mut buf = [0u8; 4096];
        let mut all_done = !self.streams.is_empty();
        for (k, (id, written, fin)) in self.streams.iter_mut().enumerate() {
            if *written < self.request.len() {
                if let Some(rest) = self.request.get(*written..) {
                    *written += conn.stream_send(*id, rest).unwrap_or(0);
                    if *written == self.request.len() {
                        let _ = conn.stream_finish(*id);
                    }
                }
            }
            while !*fin {
                match conn.stream_recv(*id, &mut buf) {
                    Some(Read::Data(n)) => {
                        if self.first_byte_at.is_none() {
                            self.first_byte_at = Some(now);
                        }
                        if let (Some(r), Some(b)) = (self.responses.get_mut(k), buf.get(..n)) {
                            r.extend_from_slice(b);
                        }
                    }
                    Some(Read::Fin) => *fin = true,
                    _ => break,
                }
            }
            all_done &= *fin;
        }
        if all_done && self.streams.len() == self.streams_wanted && self.done_at.is_none() {
            self.done_at = Some(now);
            self.stats = Some(conn.stats());
        }
        if self.done_at.is_some() && self.close && !self.closed {
            // Wait for the ticket of a resumable server before closing.
            self.closed = true;
            conn.close(0, b"done");
        }
    }
}

/// The server application: read each request to its end, answer with the object.
pub struct ServerApp<SP: CryptoProvider> {
    object: Vec<u8>,
    streams: Vec<(ConnectionHandle, StreamId, Vec<u8>, bool, usize)>,
    /// The requests read, in stream order.
    pub requests: Vec<Vec<u8>>,
    /// Counters of the last connection, captured when it closed.
    pub stats: Option<ConnectionStats>,
    /// HTTP/3 runs: one session per connection, with its requests.
    h3: Option<Vec<(ConnectionHandle, h3::H3Session, Vec<H3Request>)>>,
    /// HTTP/3 runs: a client's SETTINGS arrived.
    pub saw_settings: bool,
    _p: core::marker::PhantomData<SP>,
}

/// A request the HTTP/3 server is answering.
#[derive(Debug)]
struct H3Request {
    id: u64,
    /// The object's bytes if the path named it; `None` answers 404.
    found: bool,
    /// The whole request (head and FIN) arrived.
    complete: bool,
    head_sent: bool,
    body_sent: usize,
    done: bool,
}

impl<SP: CryptoProvider> ServerApp<SP> {
    fn new(object_size: usize, http3: bool) -> Self {
        Self {
            object: object(object_size),
            streams: Vec::new(),
            requests: Vec::new(),
            stats: None,
            h3: http3.then(Vec::new),
            saw_settings: false,
            _p: core::marker::PhantomData,
        }
    }

    /// The HTTP/3 server: answer `GET /<object size>` with `200` and the object, anything
    /// else with `404`.
    fn drive_h3(&mut self, ep: &mut ServerEndpoint<SP>, stopped: &[(ConnectionHandle, Event)])
    where
        SP: Clone + 'static,
    {
        let object = &self.object;
        let path = format!("/{}", object.len()).into_bytes();
        let len = format!("{}", object.len()).into_bytes();
        let Some(sessions) = self.h3.as_mut() else { return };
        for (h, session, reqs) in sessions.iter_mut() {
            let Some(conn) = ep.connection(*h) else { continue };
            if conn.is_closed() {
                continue;
            }
            for (_, e) in stopped.iter().filter(|(sh, _)| sh == h) {
                let _ = session.on_quic_event(conn, *e);
            }
            // The control stream opens once the connection allows it (the handshake is
            // complete); requests arriving in 0-RTT are answered before that (0.5-RTT).
            let _ = session.open(conn);
            let saw_settings = &mut self.saw_settings;
            let requests = &mut self.requests;
            let _ = session.poll(conn, |_, _, st, e| match e {
                mote_h3::Event::Settings => *saw_settings = true,
                mote_h3::Event::Headers { fields, kind: mote_h3::HeadersKind::Message, .. } => {
                    if let Ok(head) = mote_h3::message::parse_request(&fields) {
                        let mut line = head.method.to_vec();
                        line.push(b' ');
                        line.extend_from_slice(head.path.unwrap_or(b""));
                        requests.push(line);
                        reqs.push(H3Request {
                            id: st.id(),
                            found: head.method == b"GET" && head.path == Some(&path[..]),
                            complete: false,
                            head_sent: false,
                            body_sent: 0,
                            done: false,
                        });
                    }
                }
                mote_h3::Event::Finished => {
                    if let Some(r) = reqs.iter_mut().find(|r| r.id == st.id()) {
                        r.complete = true;
                    }
                }
                _ => {}
            });
            let mut scratch = [0u8; 256];
            for r in reqs.iter_mut().filter(|r| r.complete && !r.done) {
                let body: &[u8] = if r.found { object } else { &[] };
                let status = if r.found { 200 } else { 404 };
                let fields: [(&[u8], &[u8]); 1] =
                    [(b"content-length", if r.found { &len } else { b"0" })];
                let _ = session.with_stream(conn, r.id, |h3, t, st| {
                    if !r.head_sent {
                        let response = mote_h3::Response::new(status).with_headers(&fields);
                        if h3.send_response(t, st, &response, false, &mut scratch).is_err() {
                            return;
                        }
                        r.head_sent = true;
                    }
                    while let Some(rest) = body.get(r.body_sent..).filter(|b| !b.is_empty()) {
                        match h3.send_data(t, st, rest, true) {
                            Ok(n) => r.body_sent += n,
                            Err(_) => return,
                        }
                    }
                    if body.is_empty() && h3.finish(t, st).is_err() {
                        return;
                    }
                    r.done = true;
                });
            }
            let _ = session.h3.flush(&mut h3::QuicTransport { conn });
        }
    }
}

impl<SP> Application<ServerEndpoint<SP>> for ServerApp<SP>
where
    SP: CryptoProvider + Clone + 'static,
{
    fn drive(&mut self, _now: Instant, ep: &mut ServerEndpoint<SP>) {
        if self.h3.is_some() {
            let mut stopped = Vec::new();
            while let Some((h, e)) = ep.poll_event() {
                if let Some(sessions) = self.h3.as_mut() {
                    if !sessions.iter().any(|(sh, _, _)| *sh == h) {
                        let session =
                            h3::H3Session::new(mote_h3::Role::Server, mote_h3::Config::SERVER);
                        sessions.push((h, session, Vec::new()));
                    }
                }
                match e {
                    Event::StreamStopped { .. } => stopped.push((h, e)),
                    Event::Closed => {
                        if let Some(c) = ep.connection_ref(h) {
                            self.stats = Some(c.stats());
                        }
                    }
                    _ => {}
                }
            }
            self.drive_h3(ep, &stopped);
            if let Some(sessions) = self.h3.as_ref() {
                for (h, _, _) in sessions {
                    if let Some(c) = ep.connection_ref(*h).filter(|c| !c.is_closed()) {
                        self.stats = Some(c.stats());
                    }
                }
            }
            return;
        }
        while let Some((h, e)) = ep.poll_event() {
            match e {
                Event::StreamOpened(id) => self.streams.push((h, id, Vec::new(), false, 0)),
                Event::Closed => {
                    if let Some(c) = ep.connection_ref(h) {
                        self.stats = Some(c.stats());
                    }
                }
                _ => {}
            }
        }
        let mut buf = [0u8; 4096];
        for (h, id, req, fin, written) in self.streams.iter_mut() {
            let Some(conn) = ep.connection(*h) else { continue };
            while !*fin {
                match conn.stream_recv(*id, &mut buf) {
                    Some(Read::Data(n)) => req.extend_from_slice(buf.get(..n).unwrap_or(&[])),
                    Some(Read::Fin) => {
                        *fin = true;
                        self.requests.push(req.clone());
                    }
                    _ => break,
                }
            }
            if *fin && *written < self.object.len() {
                if let Some(rest) = self.object.get(*written..) {
                    *written += conn.stream_send(*id, rest).unwrap_or(0);
                    if *written == self.object.len() {
                        let _ = conn.stream_finish(*id);
                    }
                }
            } else if *fin && self.object.is_empty() && *written == 0 {
                *written = 1;
                let _ = conn.stream_finish(*id);
            }
            if !conn.is_closed() {
                self.stats = Some(conn.stats());
            }
        }
    }
}

/// The server's signing key, its raw public key, and the device's pinned copy of it.
struct Identity<SP: CryptoProvider>
where
    SP::SigningKey: 'static,
{
    key: &'static SP::SigningKey,
    spki: &'static [&'static [u8]],
}

fn identity<SP: CryptoProvider>(provider: &SP) -> Identity<SP>
where
    SP::SigningKey: 'static,
{
    let key: &'static SP::SigningKey = Box::leak(Box::new(
        provider
            .signing_key(SignatureScheme::Ed25519, &ed25519_pkcs8(0x42))
            .unwrap_or_else(|_| panic!("Ed25519 signing key")),
    ));
    let mut spki = vec![0u8; 64];
    let n = mote_tls::encode_spki(key.scheme(), key.public_key(), &mut spki)
        .unwrap_or_else(|_| panic!("SPKI"));
    spki.truncate(n);
    let spki: &'static [u8] = Box::leak(spki.into_boxed_slice());
    Identity { key, spki: Box::leak(Box::new([spki])) }
}

const ALPN: &[&[u8]] = &[b"mote-demo"];
/// HTTP/3 (RFC 9114 §3.1).
const ALPN_H3: &[&[u8]] = &[b"h3"];

/// The server's 0-RTT anti-replay register: a strike register behind a lock.
struct Register(std::sync::Mutex<mote_tls::StrikeRegister<64>>);

impl mote_tls::AntiReplay for Register {
    fn check_and_insert(
        &self,
        id: &[u8; 16],
        now_ms: u64,
        expires_ms: u64,
    ) -> mote_tls::ReplayCheck {
        match self.0.lock() {
            Ok(mut r) => r.check_and_insert(id, now_ms, expires_ms),
            Err(_) => mote_tls::ReplayCheck::Full,
        }
    }
}

fn server_config<SP: CryptoProvider>(
    id: &Identity<SP>,
    tickets: bool,
    alpn: &'static [&'static [u8]],
) -> &'static ServerConfig<'static>
where
    SP::SigningKey: Sync + 'static,
{
    let tickets = tickets.then(|| TicketConfig {
        keys: Box::leak(Box::new([TicketKey {
            id: *b"demo",
            aead: mote_crypto::AeadAlgorithm::Aes128Gcm,
            key: &[0x11; 16],
        }])),
        lifetime_s: 3600,
        count: 1,
        max_age_skew_ms: 10_000,
    });
    let register: &'static Register =
        Box::leak(Box::new(Register(std::sync::Mutex::new(mote_tls::StrikeRegister::new()))));
    let early_data = tickets.is_some().then_some(mote_tls::EarlyDataConfig {
        anti_replay: register,
        context: b"mote-demo 0-RTT context v1",
    });
    Box::leak(Box::new(ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn,
        identity: Some(ServerIdentity { key: id.key, x509_chain: &[] }),
        external_psks: &[],
        client_auth: None,
        tickets,
        early_data,
        defer_signatures: false,
    }))
}

fn client_config(
    pinned: &'static [&'static [u8]],
    early_data: bool,
    alpn: &'static [&'static [u8]],
) -> &'static ClientConfig<'static> {
    Box::leak(Box::new(ClientConfig {
        server_name: None,
        alpn,
        server_auth: ServerAuth::RawPublicKeys(pinned),
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data,
    }))
}

fn device_storage(b: DeviceBuffers) -> Storage<Vec<u8>, Vec<u8>, DEVICE_STREAMS> {
    Storage {
        crypto: core::array::from_fn(|_| (vec![0; b.crypto], vec![0; b.crypto])),
        streams: core::array::from_fn(|_| (vec![0; b.stream_send], vec![0; b.stream_recv])),
    }
}

fn server_storage() -> Storage<Vec<u8>, Vec<u8>, SERVER_STREAMS> {
    Storage {
        crypto: core::array::from_fn(|_| (vec![0; 4096], vec![0; 4096])),
        streams: core::array::from_fn(|_| (vec![0; 128 * 1024], vec![0; 128 * 1024])),
    }
}

type DeviceNode = QuicNode<DeviceEndpoint, DeviceApp>;
type ServerNode<SP> = QuicNode<ServerEndpoint<SP>, ServerApp<SP>>;

/// One simulated connection: the device app's results and the simulator.
struct Run<SP: CryptoProvider> {
    sim: Simulator,
    device: mote_sim::NodeId,
    server: mote_sim::NodeId,
    start: Instant,
    _p: core::marker::PhantomData<SP>,
}

/// Runs the transaction of `setup` with the server on `server_provider`.
pub fn run<SP>(setup: &Setup, server_provider: SP) -> Outcome
where
    SP: CryptoProvider + Clone + 'static,
    SP::SigningKey: Sync + 'static,
{
    let id = identity(&server_provider);
    let tickets = setup.mode != HandshakeMode::Full;
    let alpn = if setup.http3 { ALPN_H3 } else { ALPN };
    let scfg = server_config(&id, tickets, alpn);
    let mut rng = SeededRng(setup.seed ^ 0x5eed_0000_0000_0001);
    let mut sim = Simulator::new(setup.seed);

    // The server endpoint, one per run (its ticket key and anti-replay register outlive
    // the device's connections).
    let provider = server_provider.clone();
    let acceptor: ServerAcceptor<SP> = Box::new(move |now: Instant| {
        Some((ServerSession::new(provider.clone(), scfg, now.as_micros() / 1000), server_storage()))
    });
    let table = (0..4).map(|_| Slot::new()).collect();
    let server_ep: ServerEndpoint<SP> = match Endpoint::new(
        EndpointConfig::server(setup.server, 4),
        server_provider.clone(),
        acceptor,
        table,
        &mut SeededRng(setup.seed ^ 0x5e4e_4000),
    ) {
        Ok(ep) => ep,
        Err(e) => panic!("server endpoint: {e:?}"),
    };

    let first = matches!(setup.mode, HandshakeMode::Resumed | HandshakeMode::ZeroRtt);
    let mut ticket: Option<(Vec<u8>, Instant)> = None;
    // Which connections run: a warm-up collecting a ticket, optionally one spending it
    // first, then the measured one.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Pass {
        Warmup,
        Spend,
        Measured,
    }
    let server_node: ServerNode<SP> =
        QuicNode::new(server_ep, ServerApp::new(setup.object_size, setup.http3));
    let server = sim.add_node(server_node, server_addr()).unwrap_or_else(|e| panic!("{e}"));
    let mut device: Option<mote_sim::NodeId> = None;
    let mut start = Instant::ZERO;
    let passes: &[Pass] = match (first, setup.replay_ticket) {
        (true, true) => &[Pass::Warmup, Pass::Spend, Pass::Measured],
        (true, false) => &[Pass::Warmup, Pass::Measured],
        (false, _) => &[Pass::Measured],
    };
    for &pass in passes {
        let warmup = pass == Pass::Warmup;
        let early = !warmup && setup.mode == HandshakeMode::ZeroRtt;
        let ccfg = client_config(id.spki, early, alpn);
        let now = sim.now();
        let resumption = ticket.as_ref().and_then(|(t, at)| {
            let bytes: &'static [u8] = Box::leak(t.clone().into_boxed_slice());
            // The ticket's age in milliseconds; a device keeps this with a 32-bit tick.
            let age_ms = u32::try_from((now - *at).as_micros() / 1000).unwrap_or(u32::MAX);
            Ticket::decode(bytes).ok().map(|ticket| Resumption { ticket, age_ms })
        });
        let remembered = resumption.map(|r| r.ticket.server_transport_parameters.to_vec());
        let tls = ClientSession::new(RustCrypto, ccfg, resumption);
        let table = vec![Slot::new()];
        let ep: DeviceEndpoint = match Endpoint::new(
            EndpointConfig::client(setup.device),
            RustCrypto,
            NoAccept,
            table,
            &mut rng,
        ) {
            Ok(ep) => ep,
            Err(e) => panic!("device endpoint: {e:?}"),
        };
        let mut s = setup.clone();
        if warmup {
            s.request = b"GET /ticket".to_vec();
        }
        let mut app = DeviceApp::new(tls, device_storage(setup.buffers), &s, early);
        if early {
            app.remembered = remembered;
        }
        start = sim.now();
        let addr = match pass {
            Pass::Warmup => device_addr_for(true),
            Pass::Spend => SocketAddr::from(([10, 0, 0, 2], 5002)),
            Pass::Measured => device_addr_for(false),
        };
        let node = sim.add_node(QuicNode::new(ep, app), addr).unwrap_or_else(|e| panic!("{e}"));
        sim.connect(addr, server_addr(), &setup.profile).unwrap_or_else(|e| panic!("{e}"));
        let deadline = start + setup.limit;
        let finished = |sim: &Simulator| {
            sim.node::<DeviceNode>(node).is_some_and(|n| {
                let a = &n.app;
                (a.done_at.is_some() && (!setup.close || n.endpoint.is_empty()))
                    || a.close_reason.is_some() && n.endpoint.is_empty()
            })
        };
        if warmup {
            let _ = sim.run_until(deadline, finished);
        } else {
            apply_paths(&mut sim, &setup.paths, &setup.profile, server, node, start);
            // Timed path actions, in order.
            let mut actions: Vec<(Duration, PathAction)> = Vec::new();
            if let Some((at, local)) = setup.paths.migrate {
                actions.push((at, PathAction::Migrate(local)));
            }
            if let Some((at, mtu)) = setup.paths.mtu_drop {
                actions.push((at, PathAction::Mtu(mtu)));
            }
            actions.sort_by_key(|a| a.0);
            for (at, action) in actions {
                let _ = sim.run_until(start + at, finished);
                match action {
                    PathAction::Migrate(local) => migrate_device(&mut sim, node, local),
                    PathAction::Mtu(mtu) => {
                        let down = sim.link_config_mut(server_addr(), device_addr());
                        if let Some(l) = down {
                            l.mtu = mtu;
                        }
                    }
                }
            }
            let _ = sim.run_until(deadline, finished);
        }
        if warmup {
            ticket = sim
                .node::<DeviceNode>(node)
                .and_then(|n| Some((n.app.ticket.clone()?, n.app.ticket_at?)));
        }
        if pass != Pass::Measured {
            // Let the server's close settle before the next connection.
            let settle = sim.now() + Duration::from_secs(10);
            let _ = sim.run_to(settle);
        }
        device = Some(node);
    }
    let device = device.unwrap_or_else(|| panic!("no device"));
    let run: Run<SP> = Run { sim, device, server, start, _p: core::marker::PhantomData };
    finish(setup, run)
}

/// A path change made at a given time of the run.
#[derive(Clone, Copy)]
enum PathAction {
    Migrate(SocketAddr),
    Mtu(usize),
}

/// Schedules the rebindings of `plan` and binds and links the extra addresses.
fn apply_paths(
    sim: &mut Simulator,
    plan: &PathPlan,
    profile: &LinkProfile,
    server: mote_sim::NodeId,
    device: mote_sim::NodeId,
    start: Instant,
) {
    for &(at, external) in &plan.rebinds {
        sim.rebind_at(start + at, device_addr(), external).unwrap_or_else(|e| panic!("{e}"));
    }
    if let Some(second) = plan.server_second_address {
        sim.bind(server, second).unwrap_or_else(|e| panic!("{e}"));
        sim.connect(device_addr(), second, profile).unwrap_or_else(|e| panic!("{e}"));
    }
    if let Some((_, local)) = plan.migrate {
        sim.bind(device, local).unwrap_or_else(|e| panic!("{e}"));
        sim.connect(local, server_addr(), profile).unwrap_or_else(|e| panic!("{e}"));
        if let Some(second) = plan.server_second_address {
            sim.connect(local, second, profile).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The device moves to its second local address (RFC 9000 §9.2).
fn migrate_device(sim: &mut Simulator, device: mote_sim::NodeId, local: SocketAddr) {
    let now = sim.now();
    let Some(n) = sim.node_mut::<DeviceNode>(device) else { return };
    n.src = Some(local);
    let Some(h) = n.app.handle else { return };
    if let Some(c) = n.endpoint.connection(h) {
        if let Err(e) = c.migrate(now) {
            panic!("migrate: {e:?}");
        }
    }
}

/// The warm-up connection of a resumption run uses another local port.
fn device_addr_for(warmup: bool) -> SocketAddr {
    if warmup {
        SocketAddr::from(([10, 0, 0, 2], 5001))
    } else {
        device_addr()
    }
}

fn finish<SP>(setup: &Setup, mut r: Run<SP>) -> Outcome
where
    SP: CryptoProvider + Clone + 'static,
{
    // Let the close complete (both sides drain), or the connection idle.
    let end = r.sim.now() + setup.linger;
    let (device, server) = (r.device, r.server);
    let _ = r.sim.run_until(end, |sim| {
        sim.node::<ServerNode<SP>>(server).is_some_and(|n| n.endpoint.is_empty())
            && sim.node::<DeviceNode>(device).is_some_and(|n| n.endpoint.is_empty())
    });
    let start = r.start;
    let dev = r.sim.node::<DeviceNode>(r.device);
    let app = dev.map(|n| &n.app);
    let done = app.and_then(|a| a.done_at);
    let since = |t: Option<Instant>| t.map(|t| t - start);
    let device_addr = device_addr();
    let trace = r.sim.trace();
    let in_run = |rec: &mote_sim::DatagramRecord, until: Option<Instant>| {
        rec.sent >= start
            && (rec.from == device_addr || rec.to == device_addr)
            && until.is_none_or(|u| rec.sent <= u)
    };
    let up = trace.summary_where(|rec| in_run(rec, done) && rec.direction == Some(Direction::Up));
    let down =
        trace.summary_where(|rec| in_run(rec, done) && rec.direction == Some(Direction::Down));
    let up_total =
        trace.summary_where(|rec| in_run(rec, None) && rec.direction == Some(Direction::Up));
    let down_total =
        trace.summary_where(|rec| in_run(rec, None) && rec.direction == Some(Direction::Down));
    let server_app = r.sim.node::<ServerNode<SP>>(r.server).map(|n| &n.app);
    let responses = app.map(|a| a.responses.clone()).unwrap_or_default();
    let expected = object(setup.object_size);
    let complete = responses.len() == setup.streams && responses.iter().all(|x| *x == expected);
    Outcome {
        mode: setup.mode,
        complete,
        handshake: since(app.and_then(|a| a.handshake_at)),
        time_to_first_byte: since(app.and_then(|a| a.first_byte_at)),
        duration: since(done),
        up: Traffic::from(&up),
        down: Traffic::from(&down),
        up_total: Traffic::from(&up_total),
        down_total: Traffic::from(&down_total),
        device: app.and_then(|a| a.stats).unwrap_or_default(),
        server: server_app.and_then(|a| a.stats).unwrap_or_default(),
        responses,
        requests: server_app.map(|a| a.requests.clone()).unwrap_or_default(),
        device_close: app.and_then(|a| a.close_reason),
        early_data_accepted: app.and_then(|a| a.early_data),
        resumed: app.is_some_and(|a| a.psk_accepted),
        trace_digest: trace.digest(),
        trace_jsonl: trace.to_jsonl(),
        end: r.sim.now(),
        device_drained: dev.is_some_and(|n| n.endpoint.is_empty()),
        server_drained: r
            .sim
            .node::<ServerNode<SP>>(r.server)
            .is_some_and(|n| n.endpoint.is_empty()),
        statuses: app.map(|a| a.statuses.clone()).unwrap_or_default(),
        device_saw_settings: app.is_some_and(|a| a.saw_settings),
        server_saw_settings: server_app.is_some_and(|a| a.saw_settings),
    }
}

/// Runs the transaction with a RustCrypto server (fully deterministic).
pub fn run_rustcrypto(setup: &Setup) -> Outcome {
    run(setup, RustCrypto)
}

/// Stream slots of the multiplexing client: more than the server lets it open at first,
/// so it runs into the server's stream limit and must wait for MAX_STREAMS.
pub const MUX_CLIENT_STREAMS: usize = 1024;
/// Stream slots of the multiplexing server (its concurrent-stream limit).
pub const MUX_SERVER_STREAMS: usize = 1000;

type MuxClientConnection =
    Connection<RustCrypto, DeviceTls, Vec<u8>, Vec<u8>, MUX_CLIENT_STREAMS, 256, 32>;
type MuxClientEndpoint = Endpoint<
    RustCrypto,
    DeviceTls,
    Vec<u8>,
    Vec<u8>,
    NoAccept,
    Vec<Slot<MuxClientConnection>>,
    MUX_CLIENT_STREAMS,
    256,
    32,
>;
type MuxServerSession = ServerSession<'static, RustCrypto>;
type MuxServerConnection =
    Connection<RustCrypto, MuxServerSession, Vec<u8>, Vec<u8>, MUX_SERVER_STREAMS, 256, 32>;
type MuxAcceptor = Box<
    dyn FnMut(Instant) -> Option<(MuxServerSession, Storage<Vec<u8>, Vec<u8>, MUX_SERVER_STREAMS>)>,
>;
type MuxServerEndpoint = Endpoint<
    RustCrypto,
    MuxServerSession,
    Vec<u8>,
    Vec<u8>,
    MuxAcceptor,
    Vec<Slot<MuxServerConnection>>,
    MUX_SERVER_STREAMS,
    256,
    32,
>;

const SIDE_SERVER: mote_quic::transport_params::Side = mote_quic::transport_params::Side::Server;

/// What [`run_multiplex`] measured.
#[derive(Clone, Debug, Default)]
pub struct MultiplexOutcome {
    /// Streams whose whole answer (and FIN) the client read.
    pub completed: usize,
    /// Answers that differed from what the server sent.
    pub corrupt: usize,
    /// Times `stream_open` reported the server's stream limit reached.
    pub blocked: u64,
    /// Streams the client opened.
    pub opened: usize,
    /// Streams the client opened when it was first blocked.
    pub opened_when_first_blocked: Option<u64>,
    /// The server's requests, each checked against what the client sent.
    pub requests_ok: usize,
    /// From the connection attempt to the last answer.
    pub duration: Option<Duration>,
    /// Why the client connection closed.
    pub close: Option<CloseReason>,
    /// Both endpoints were empty (closed and drained) at the end.
    pub drained: bool,
}

/// The request of stream `k` of [`run_multiplex`] (32 bytes).
fn mux_request(k: usize) -> Vec<u8> {
    (0..32).map(|i| (k.wrapping_mul(7) + i) as u8).collect()
}

/// The answer to `request` (32 bytes).
fn mux_answer(request: &[u8]) -> Vec<u8> {
    request.iter().map(|b| b ^ 0xa5).collect()
}

struct MuxClient {
    tls: Option<DeviceTls>,
    handle: Option<ConnectionHandle>,
    total: usize,
    opened: usize,
    /// (stream, index, request bytes written, answer read)
    open: Vec<(StreamId, usize, usize, Vec<u8>)>,
    out: MultiplexOutcome,
    start: Instant,
    closed: bool,
}

impl Application<MuxClientEndpoint> for MuxClient {
    fn drive(&mut self, now: Instant, ep: &mut MuxClientEndpoint) {
        if self.handle.is_none() {
            if let Some(tls) = self.tls.take() {
                let storage = Storage {
                    crypto: core::array::from_fn(|_| (vec![0; 2048], vec![0; 2048])),
                    streams: core::array::from_fn(|_| (vec![0; 64], vec![0; 64])),
                };
                self.handle = ep.connect(now, server_addr(), tls, storage).ok();
            }
        }
        while let Some((_, e)) = ep.poll_event() {
            if e == Event::Closed {
                if let Some(c) = self.handle.and_then(|h| ep.connection_ref(h)) {
                    self.out.close = c.close_reason();
                }
            }
        }
        let Some(conn) = self.handle.and_then(|h| ep.connection(h)) else { return };
        if conn.is_closed() || !conn.is_handshake_complete() {
            return;
        }
        while self.opened < self.total {
            match conn.stream_open(StreamDir::Bidi) {
                Ok(id) => {
                    self.open.push((id, self.opened, 0, Vec::new()));
                    self.opened += 1;
                }
                Err(mote_quic::connection::StreamOpenError::Blocked) => {
                    self.out.blocked += 1;
                    self.out.opened_when_first_blocked.get_or_insert(self.opened as u64);
                    break;
                }
                Err(_) => break,
            }
        }
        self.out.opened = self.opened;
        let mut buf = [0u8; 64];
        let out = &mut self.out;
        self.open.retain_mut(|(id, k, written, got)| loop {
            let req = mux_request(*k);
            if *written < req.len() {
                if let Some(rest) = req.get(*written..) {
                    *written += conn.stream_send(*id, rest).unwrap_or(0);
                }
                if *written == req.len() {
                    let _ = conn.stream_finish(*id);
                }
            }
            match conn.stream_recv(*id, &mut buf) {
                Some(Read::Data(n)) => got.extend_from_slice(buf.get(..n).unwrap_or(&[])),
                Some(Read::Fin) => {
                    out.completed += 1;
                    if *got != mux_answer(&mux_request(*k)) {
                        out.corrupt += 1;
                    }
                    break false;
                }
                _ => break true,
            }
        });
        if self.out.completed == self.total && !self.closed {
            self.closed = true;
            self.out.duration = Some(now - self.start);
            conn.close(0, b"done");
        }
    }
}

struct MuxServer {
    /// (connection, stream, request read, FIN read, answer bytes written)
    streams: Vec<(ConnectionHandle, StreamId, Vec<u8>, bool, usize)>,
    /// Connections seen and the streams answered in full.
    handles: Vec<ConnectionHandle>,
    done: std::collections::HashSet<(ConnectionHandle, StreamId)>,
    requests_ok: usize,
}

impl Application<MuxServerEndpoint> for MuxServer {
    fn drive(&mut self, _now: Instant, ep: &mut MuxServerEndpoint) {
        let mut handles = core::mem::take(&mut self.handles);
        while let Some((h, e)) = ep.poll_event() {
            if let Event::StreamOpened(id) = e {
                if !self.streams.iter().any(|s| s.0 == h && s.1 == id) {
                    self.streams.push((h, id, Vec::new(), false, 0));
                }
            }
            if !handles.contains(&h) {
                handles.push(h);
            }
        }
        // StreamOpened is dropped when the connection's event ring is full (a burst of
        // hundreds of new streams): find the peer's streams among the live ones.
        handles.retain(|&h| ep.connection_ref(h).is_some());
        for &h in &handles {
            let Some(conn) = ep.connection_ref(h) else { continue };
            let known: std::collections::HashSet<StreamId> =
                self.streams.iter().filter(|s| s.0 == h).map(|s| s.1).collect();
            let done = &self.done;
            let new: Vec<StreamId> = conn
                .live_streams()
                .filter(|&id| {
                    !id.is_local(SIDE_SERVER) && !known.contains(&id) && !done.contains(&(h, id))
                })
                .collect();
            for id in new {
                self.streams.push((h, id, Vec::new(), false, 0));
            }
        }
        self.handles = handles;
        let done = &mut self.done;
        let mut buf = [0u8; 64];
        let ok = &mut self.requests_ok;
        self.streams.retain_mut(|(h, id, req, fin, written)| {
            let Some(conn) = ep.connection(*h) else { return false };
            while !*fin {
                match conn.stream_recv(*id, &mut buf) {
                    Some(Read::Data(n)) => req.extend_from_slice(buf.get(..n).unwrap_or(&[])),
                    Some(Read::Fin) => {
                        *fin = true;
                        // The answer is derived from the request, so the client's check
                        // covers both directions byte for byte.
                        if req.len() == 32 {
                            *ok += 1;
                        }
                    }
                    _ => return true,
                }
            }
            let answer = mux_answer(req);
            if let Some(rest) = answer.get(*written..) {
                // Connection-level flow control may hold part of it back.
                *written += conn.stream_send(*id, rest).unwrap_or(0);
            }
            if *written < answer.len() {
                return true;
            }
            let _ = conn.stream_finish(*id);
            done.insert((*h, *id));
            false
        });
    }
}

/// The interop runner's multiplexing case: the client makes `streams` request/response
/// exchanges (32 B each way, one bidirectional stream each) against a server whose
/// `initial_max_streams_bidi` is `server_limit` (at most [`MUX_SERVER_STREAMS`], its stream
/// slots); the client opens streams as fast as the limit allows, so past the limit it
/// waits for the server's MAX_STREAMS. Lossless `wlan` link.
pub fn run_multiplex(streams: usize, server_limit: u64, seed: u64) -> MultiplexOutcome {
    let id = identity(&RustCrypto);
    let scfg = server_config(&id, false, ALPN);
    let mut sim = Simulator::new(seed);
    let mut server_cfg = ConnectionConfig::server();
    server_cfg.streams.max_streams_bidi = server_limit;
    server_cfg.streams.max_streams_uni = 0;
    let acceptor: MuxAcceptor = Box::new(move |now: Instant| {
        let storage = Storage {
            crypto: core::array::from_fn(|_| (vec![0; 4096], vec![0; 4096])),
            streams: core::array::from_fn(|_| (vec![0; 64], vec![0; 64])),
        };
        Some((ServerSession::new(RustCrypto, scfg, now.as_micros() / 1000), storage))
    });
    let server_ep: MuxServerEndpoint = Endpoint::new(
        EndpointConfig::server(server_cfg, 1),
        RustCrypto,
        acceptor,
        (0..1).map(|_| Slot::new()).collect(),
        &mut SeededRng(seed ^ 0x5e4e_4000),
    )
    .unwrap_or_else(|e| panic!("server endpoint: {e:?}"));
    let server = QuicNode::new(
        server_ep,
        MuxServer {
            streams: Vec::new(),
            handles: Vec::new(),
            done: Default::default(),
            requests_ok: 0,
        },
    );
    let server = sim.add_node(server, server_addr()).unwrap_or_else(|e| panic!("{e}"));
    let mut client_cfg = ConnectionConfig::device();
    client_cfg.streams.max_streams_uni = 0;
    let client_ep: MuxClientEndpoint = Endpoint::new(
        EndpointConfig::client(client_cfg),
        RustCrypto,
        NoAccept,
        vec![Slot::new()],
        &mut SeededRng(seed ^ 0x5eed_0000_0000_0001),
    )
    .unwrap_or_else(|e| panic!("client endpoint: {e:?}"));
    let client = MuxClient {
        tls: Some(ClientSession::new(RustCrypto, client_config(id.spki, false, ALPN), None)),
        handle: None,
        total: streams,
        opened: 0,
        open: Vec::new(),
        out: MultiplexOutcome::default(),
        start: sim.now(),
        closed: false,
    };
    let client = sim
        .add_node(QuicNode::new(client_ep, client), device_addr())
        .unwrap_or_else(|e| panic!("{e}"));
    sim.connect(device_addr(), server_addr(), &LinkProfile::wlan())
        .unwrap_or_else(|e| panic!("{e}"));
    type C = QuicNode<MuxClientEndpoint, MuxClient>;
    type S = QuicNode<MuxServerEndpoint, MuxServer>;
    let _ = sim.run_until(Instant::ZERO + Duration::from_secs(120), |sim| {
        sim.node::<C>(client).is_some_and(|n| n.endpoint.is_empty() && n.app.closed)
            && sim.node::<S>(server).is_some_and(|n| n.endpoint.is_empty())
    });
    let drained = sim.node::<C>(client).is_some_and(|n| n.endpoint.is_empty())
        && sim.node::<S>(server).is_some_and(|n| n.endpoint.is_empty());
    let mut out = sim.node::<C>(client).map(|n| n.app.out.clone()).unwrap_or_default();
    out.requests_ok = sim.node::<S>(server).map_or(0, |n| n.app.requests_ok);
    out.drained = drained;
    out
}
