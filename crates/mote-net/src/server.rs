//! `mote serve`: a file server on a mote-quic server endpoint.
//!
//! Every client connection is accepted through the endpoint (connection-ID demultiplexing,
//! half-open and table bounds); the protocol follows the negotiated ALPN:
//!
//! - `hq-interop` (the interop runner's HTTP/0.9): the client sends `GET /path\r\n` on a
//!   bidirectional stream and ends it; the server answers with the file's bytes and FIN.
//! - `h3` (RFC 9114) through `mote_h3::quic::H3Session`: `GET` with `:path`, answered with
//!   `200`, `content-length` and the body, or `404`.
//!
//! Files are read in pieces as the stream has room, so a connection holds at most one
//! piece per stream whatever the file size. Paths are confined to the `--www` directory.

use std::fs::File;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};

use mote_crypto::fast::{Ring, SystemRng};
use mote_crypto::AeadAlgorithm;
use mote_h3::quic::{H3Session, QuicTransport};
use mote_quic::endpoint::{EndpointStats, RetryPolicy, Slot};
use mote_quic::stream::{Read, StreamId};
use mote_quic::{
    ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, Instant, Version,
};
use mote_tls::{
    EarlyDataConfig, ServerConfig, ServerIdentity as TlsIdentity, ServerSession, StrikeRegister,
    TicketConfig, TicketKey,
};

use crate::clock::Clock;
use crate::driver::{self, Application, Flow};
use crate::identity::ServerIdentity;
use crate::keylog::KeyLogFile;
use crate::observe::{dcid_of, Observer};
use crate::socket::UdpSocket;
use crate::types::{storage, Acceptor, ServerConnection, ServerEndpoint, STREAMS};
use crate::{Error, ALPN_H3, ALPN_HQ};

/// Connections a server holds at most.
pub const MAX_CONNECTIONS: usize = 64;
/// Handshakes in progress at most.
pub const MAX_HALF_OPEN: usize = 32;
/// Bytes read from a file per piece.
const PIECE: usize = 64 * 1024;
/// Longest HTTP/0.9 request line accepted.
const MAX_REQUEST: usize = 2048;
/// The application error code an HTTP/0.9 stream is reset with when the file is missing.
pub const HQ_NOT_FOUND: u64 = 0x194;
/// Send buffer per stream slot (bytes in flight per response).
const SEND_BUFFER: usize = 512 * 1024;
/// Receive buffer per stream slot (requests are small).
const RECV_BUFFER: usize = 16 * 1024;

/// What `mote serve` is asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory files are served from.
    pub www: PathBuf,
    /// Certificate chain and key, or raw public key.
    pub identity: ServerIdentity,
    /// ALPNs accepted, in preference order (`hq-interop`, `h3`).
    pub alpn: Vec<Vec<u8>>,
    /// Send Retry before accepting (address validation).
    pub retry: bool,
    /// Write one qlog per connection here.
    pub qlog_dir: Option<PathBuf>,
    /// Append TLS secrets here (SSLKEYLOGFILE format).
    pub keylog: Option<PathBuf>,
    /// Idle timeout in milliseconds.
    pub max_idle_ms: u32,
    /// Prefer QUIC v2: a v1 client that lists v2 as compatible is moved to it (RFC 9368
    /// §2.3). Off, v1 clients stay in v1 (the interop runner checks that outside its `v2`
    /// case) and clients starting in v2 are served in v2 either way.
    pub v2: bool,
    /// Also listen on this address and offer it as preferred_address (RFC 9000 §9.6).
    pub preferred_address: Option<SocketAddr>,
    /// Offer this address as preferred_address instead of the bound one: the preferred
    /// socket is reached through a NAT or relay at another address.
    pub advertise_preferred: Option<SocketAddr>,
    /// The stateless reset key (32 bytes; created if missing), so a restarted server can
    /// still reset its predecessor's connections. `None`: a random key per process.
    pub reset_key_file: Option<PathBuf>,
}

/// Bytes of a stateless reset key file.
pub const RESET_KEY_LEN: usize = 32;

/// The stateless reset key of `path` (RFC 9000 §10.3.2: a static key the tokens are derived
/// from); a missing file is created with a fresh random key (mode 0600).
pub fn reset_key(path: &Path) -> Result<[u8; RESET_KEY_LEN], Error> {
    let name = || path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => <[u8; RESET_KEY_LEN]>::try_from(bytes.as_slice()).map_err(|_| {
            Error::new(format!(
                "--reset-key-file {}: {} bytes, a key is {RESET_KEY_LEN}",
                name(),
                bytes.len()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = random_reset_key()?;
            let mut open = std::fs::OpenOptions::new();
            open.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
            let written = open.open(path).and_then(|mut f| std::io::Write::write_all(&mut f, &key));
            written.map_err(|e| Error::new(format!("--reset-key-file {}: {e}", name())))?;
            Ok(key)
        }
        Err(e) => Err(Error::new(format!("--reset-key-file {}: {e}", name()))),
    }
}

fn random_reset_key() -> Result<[u8; RESET_KEY_LEN], Error> {
    let mut key = [0u8; RESET_KEY_LEN];
    mote_crypto::CryptoRng::fill(&mut SystemRng::new(), &mut key)
        .map_err(|_| Error::new("no randomness for the stateless reset key"))?;
    Ok(key)
}

/// The server's anti-replay register: a strike register behind a lock.
struct Register(std::sync::Mutex<StrikeRegister<1024>>);

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

fn server_config(o: &ServeOptions) -> Result<&'static ServerConfig<'static>, Error> {
    let mut key = [0u8; 16];
    mote_crypto::CryptoRng::fill(&mut SystemRng::new(), &mut key)
        .map_err(|_| Error::new("no randomness for the ticket key"))?;
    let key: &'static [u8] = Box::leak(Box::new(key));
    let keys: &'static [TicketKey<'static>] =
        Box::leak(Box::new([TicketKey { id: *b"mote", aead: AeadAlgorithm::Aes128Gcm, key }]));
    let alpn: Vec<&'static [u8]> =
        o.alpn.iter().map(|a| &*Box::leak(a.clone().into_boxed_slice())).collect();
    let alpn: &'static [&'static [u8]] = Box::leak(alpn.into_boxed_slice());
    let register: &'static Register =
        Box::leak(Box::new(Register(std::sync::Mutex::new(StrikeRegister::new()))));
    Ok(Box::leak(Box::new(ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn,
        identity: Some(TlsIdentity { key: o.identity.key, x509_chain: o.identity.chain }),
        external_psks: &[],
        client_auth: None,
        tickets: Some(TicketConfig { keys, lifetime_s: 86_400, count: 1, max_age_skew_ms: 10_000 }),
        early_data: Some(EarlyDataConfig {
            anti_replay: register,
            context: b"mote serve 0-RTT context v1",
        }),
        defer_signatures: false,
    })))
}

/// The connection settings of `mote serve` (also used by `mote get`): host-sized windows.
pub fn connection_config(max_idle_ms: u32, gso_segments: usize) -> ConnectionConfig {
    let mut c = ConnectionConfig::server();
    c.idle_timeout_ms = max_idle_ms;
    c.max_gso_segments = gso_segments.clamp(1, 10);
    c.streams.max_data = 64 << 20;
    c.streams.max_stream_data_bidi_local = 1 << 20;
    c.streams.max_stream_data_bidi_remote = 1 << 20;
    c.streams.max_stream_data_uni = 1 << 20;
    // Slots are shared by both directions: leave room for HTTP/3's unidirectional streams.
    c.streams.max_streams_bidi = (STREAMS - 8) as u64;
    c.streams.max_streams_uni = 6;
    c
}

/// What a server has done so far (shared with whoever holds [`Server::counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// Connections accepted.
    pub connections: u64,
    /// Responses completed (files and 404s).
    pub responses: u64,
    /// Handshakes that resumed a session.
    pub resumed: u64,
    /// Connections whose 0-RTT was accepted.
    pub early_data_accepted: u64,
    /// Key updates clients initiated (RFC 9001 §6), over all connections.
    pub peer_key_updates: u64,
    /// Clients that moved to a new address (migration, NAT rebinding, the preferred
    /// address; RFC 9000 §9), over all connections.
    pub migrations: u64,
    /// Paths validated with PATH_CHALLENGE / PATH_RESPONSE (RFC 9000 §8.2), over all
    /// connections.
    pub paths_validated: u64,
    /// Probe timeouts (RFC 9002 §6.2) over all connections: losses that took a timer to
    /// find rather than the acknowledgments that followed them.
    pub ptos: u64,
    /// Stream and CRYPTO bytes sent again (lost or probed), over all connections.
    pub bytes_retransmitted: u64,
    /// The endpoint's counters (Retry packets, tokens, stateless resets, ...).
    pub endpoint: EndpointStats,
}

/// A bound server, ready to run.
pub struct Server {
    /// The listening socket, then the preferred address's.
    sockets: Vec<UdpSocket>,
    clock: Clock,
    endpoint: ServerEndpoint,
    app: FileServer,
    transmit_buffer: usize,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("sockets", &self.sockets).finish_non_exhaustive()
    }
}

impl Server {
    /// Binds the socket and builds the endpoint (call within a tokio runtime).
    pub fn bind(o: ServeOptions) -> Result<Self, Error> {
        if o.alpn.is_empty() {
            return Err(Error::new("no ALPN to offer"));
        }
        for a in &o.alpn {
            if a.as_slice() != ALPN_HQ && a.as_slice() != ALPN_H3 {
                return Err(Error::new(format!(
                    "ALPN {:?}: mote serve speaks hq-interop and h3",
                    String::from_utf8_lossy(a)
                )));
            }
        }
        if !o.www.is_dir() {
            return Err(Error::new(format!("--www {}: not a directory", o.www.display())));
        }
        let socket =
            UdpSocket::bind(o.listen).map_err(|e| Error::new(format!("bind {}: {e}", o.listen)))?;
        let mut config = connection_config(o.max_idle_ms, socket.max_gso_segments());
        // RFC 9368 §2.3: with --v2 a client that lists v2 among its versions is moved to it.
        if o.v2 {
            config.compatible_version = Some(Version::V2);
        }
        // RFC 9000 §10.3: tokens from a static key, so a restarted server can still reset
        // the connections its predecessor had.
        config.stateless_reset_key = Some(match &o.reset_key_file {
            Some(path) => reset_key(path)?,
            None => random_reset_key()?,
        });
        let mut sockets = vec![socket];
        if let Some(addr) = o.preferred_address {
            // RFC 9000 §9.6: the endpoint receives on both; replies leave from the address
            // each client uses (`Transmit::src`).
            let preferred = UdpSocket::bind(addr)
                .map_err(|e| Error::new(format!("--preferred-address {addr}: {e}")))?;
            let bound = preferred.local_addr()?;
            if bound.ip().is_unspecified() {
                return Err(Error::new(format!(
                    "--preferred-address {addr}: give the address clients should use, not a \
                     wildcard"
                )));
            }
            config.preferred_address = Some(o.advertise_preferred.unwrap_or(bound));
            sockets.push(preferred);
        }
        let scfg = server_config(&o)?;
        let acceptor: Acceptor = Box::new(move |now: Instant| {
            Some((
                ServerSession::new(Ring, scfg, now.as_micros() / 1000),
                storage(SEND_BUFFER, RECV_BUFFER),
            ))
        });
        let table = (0..MAX_CONNECTIONS).map(|_| Slot::new()).collect();
        let retry = if o.retry { RetryPolicy::Always } else { RetryPolicy::Never };
        let endpoint = Endpoint::new(
            EndpointConfig::server(config, MAX_HALF_OPEN).with_retry(retry),
            Ring,
            acceptor,
            table,
            &mut SystemRng::new(),
        )
        .map_err(|e| Error::new(format!("server endpoint: {e:?}")))?;
        let keylog = o.keylog.as_deref().map(KeyLogFile::open).transpose()?;
        if let Some(dir) = &o.qlog_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::new(format!("--qlog-dir {}: {e}", dir.display())))?;
        }
        let clock = Clock::new();
        let local = sockets.first().map(UdpSocket::local_addr).transpose()?.unwrap_or(o.listen);
        let app = FileServer {
            www: o.www.clone(),
            conns: Vec::new(),
            keylog,
            qlog_dir: o.qlog_dir.clone(),
            clock,
            local,
            pending_initials: Vec::new(),
            counters: Default::default(),
        };
        let transmit_buffer = usize::from(config.max_datagram_size) * config.max_gso_segments;
        Ok(Self { sockets, clock, endpoint, app, transmit_buffer })
    }

    /// A live view of the server's counters.
    pub fn counters(&self) -> std::sync::Arc<std::sync::Mutex<ServerCounters>> {
        self.app.counters.clone()
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        let socket = self.sockets.first().ok_or_else(|| Error::new("no socket"))?;
        Ok(socket.local_addr()?)
    }

    /// The preferred address offered to clients (`--preferred-address`), as bound.
    pub fn preferred_addr(&self) -> Result<Option<SocketAddr>, Error> {
        Ok(self.sockets.get(1).map(UdpSocket::local_addr).transpose()?)
    }

    /// Serves until the task is dropped (or the socket fails).
    pub async fn run(mut self) -> Result<(), Error> {
        driver::run(
            &mut self.sockets,
            &self.clock,
            &mut self.endpoint,
            &mut self.app,
            self.transmit_buffer,
        )
        .await
    }
}

/// A response being sent: the open file and the piece read but not yet sent.
#[derive(Debug)]
struct Body {
    file: Option<File>,
    piece: Vec<u8>,
    sent: usize,
    eof: bool,
}

impl Body {
    fn open(file: Option<File>) -> Self {
        let eof = file.is_none();
        Self { file, piece: Vec::new(), sent: 0, eof }
    }

    /// Hands the file to `send` piece by piece (`send` returns the bytes it took, `None`
    /// on error) until it takes less than offered; returns true once the whole file went.
    fn pump(&mut self, mut send: impl FnMut(&[u8]) -> Option<usize>) -> bool {
        loop {
            if self.sent >= self.piece.len() {
                if self.eof {
                    return true;
                }
                self.piece.resize(PIECE, 0);
                let n = self.file.as_mut().map_or(Ok(0), |f| f.read(&mut self.piece)).unwrap_or(0);
                self.piece.truncate(n);
                self.sent = 0;
                if n == 0 {
                    self.eof = true;
                    self.file = None;
                    return true;
                }
            }
            let rest = self.piece.get(self.sent..).unwrap_or(&[]);
            let Some(n) = send(rest) else { return false };
            self.sent += n;
            if n < rest.len() {
                return false;
            }
        }
    }
}

/// An HTTP/0.9 stream.
#[derive(Debug)]
struct HqStream {
    id: StreamId,
    request: Vec<u8>,
    fin: bool,
    body: Option<Body>,
    done: bool,
}

/// An HTTP/3 request being answered.
#[derive(Debug)]
struct H3Request {
    id: u64,
    path: Option<PathBuf>,
    complete: bool,
    head_sent: bool,
    body: Option<Body>,
    done: bool,
}

/// The protocol of a connection, once its ALPN is known.
#[derive(Debug)]
enum Proto {
    Unknown,
    Hq(Vec<HqStream>),
    H3(Box<H3Session>, Vec<H3Request>),
}

struct ConnState {
    handle: ConnectionHandle,
    observer: Observer,
    proto: Proto,
    /// Counted once: resumed, 0-RTT accepted.
    counted: bool,
    /// Peer key updates already counted.
    key_updates: u32,
    /// Migrations, validated paths, PTOs and retransmitted bytes already counted.
    migrations: u32,
    paths_validated: u32,
    ptos: u64,
    bytes_retransmitted: u64,
}

/// The file-serving application.
struct FileServer {
    www: PathBuf,
    conns: Vec<ConnState>,
    keylog: Option<KeyLogFile>,
    qlog_dir: Option<PathBuf>,
    clock: Clock,
    local: SocketAddr,
    /// Client Initials that arrived before their connection existed (for the qlog).
    pending_initials: Vec<(Instant, Vec<u8>)>,
    counters: std::sync::Arc<std::sync::Mutex<ServerCounters>>,
}

/// The file a request path names under `www`, if it is a plain relative path to a file.
pub fn resolve(www: &Path, path: &[u8]) -> Option<PathBuf> {
    let path = std::str::from_utf8(path).ok()?;
    let path = path.split(['?', '#']).next()?;
    let rel = Path::new(path.strip_prefix('/')?);
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let full = www.join(rel);
    full.is_file().then_some(full)
}

/// The path of an HTTP/0.9 request line `GET /path` (CRLF or LF terminated, or ended by FIN).
fn hq_path(request: &[u8]) -> Option<&[u8]> {
    let line = request.split(|&b| b == b'\n').next()?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let rest = line.strip_prefix(b"GET ")?;
    Some(rest.split(|&b| b == b' ').next().unwrap_or(rest))
}

fn open(path: Option<&Path>) -> Option<File> {
    path.and_then(|p| File::open(p).ok())
}

impl FileServer {
    fn drive_hq(www: &Path, conn: &mut ServerConnection, streams: &mut Vec<HqStream>) -> u64 {
        let mut served = 0;
        let live: Vec<StreamId> = conn.live_streams().collect();
        for &id in &live {
            let peer_bidi = id.raw() & 0x3 == 0;
            if peer_bidi && !streams.iter().any(|s| s.id == id) {
                streams.push(HqStream {
                    id,
                    request: Vec::new(),
                    fin: false,
                    body: None,
                    done: false,
                });
            }
        }
        let mut buf = [0u8; 2048];
        for s in streams.iter_mut().filter(|s| !s.done) {
            while !s.fin {
                match conn.stream_recv(s.id, &mut buf) {
                    Some(Read::Data(n)) => {
                        s.request.extend_from_slice(buf.get(..n).unwrap_or(&[]));
                        if s.request.len() > MAX_REQUEST {
                            // Not a request line: refuse the stream.
                            conn.stop_sending(s.id, 0);
                            conn.stream_reset(s.id, 0);
                            s.done = true;
                            break;
                        }
                    }
                    Some(Read::Fin) => s.fin = true,
                    Some(Read::Reset(_)) => {
                        s.done = true;
                        break;
                    }
                    _ => break,
                }
            }
            if s.done {
                continue;
            }
            let line_complete = s.request.contains(&b'\n');
            if s.body.is_none() && (s.fin || line_complete) {
                let file = hq_path(&s.request).and_then(|p| resolve(www, p));
                match open(file.as_deref()) {
                    Some(f) => s.body = Some(Body::open(Some(f))),
                    None => {
                        // HTTP/0.9 has no status: a missing file resets the stream, so the
                        // client cannot take an empty answer for the file.
                        conn.stream_reset(s.id, HQ_NOT_FOUND);
                        s.done = true;
                        served += 1;
                        continue;
                    }
                }
            }
            let Some(body) = s.body.as_mut() else { continue };
            let id = s.id;
            if body.pump(|bytes| conn.stream_send(id, bytes).ok()) {
                let _ = conn.stream_finish(id);
                s.done = true;
                served += 1;
            }
        }
        // A finished stream stays known until QUIC releases it, so it is not taken for a
        // new one while its last bytes are still in flight.
        streams.retain(|s| !s.done || live.contains(&s.id));
        served
    }

    fn drive_h3(
        www: &Path,
        conn: &mut ServerConnection,
        session: &mut H3Session,
        reqs: &mut Vec<H3Request>,
        stopped: &[Event],
    ) -> u64 {
        for e in stopped {
            let _ = session.on_quic_event(conn, *e);
        }
        // Requests arriving in 0-RTT are read before the control stream can open (0.5-RTT).
        let _ = session.open(conn);
        let _ = session.poll(conn, |_, _, st, e| match e {
            mote_h3::Event::Headers { fields, kind: mote_h3::HeadersKind::Message, .. } => {
                let path = mote_h3::message::parse_request(&fields)
                    .ok()
                    .filter(|h| h.method == b"GET")
                    .and_then(|h| h.path)
                    .and_then(|p| resolve(www, p));
                reqs.push(H3Request {
                    id: st.id(),
                    path,
                    complete: false,
                    head_sent: false,
                    body: None,
                    done: false,
                });
            }
            mote_h3::Event::Finished => {
                if let Some(r) = reqs.iter_mut().find(|r| r.id == st.id()) {
                    r.complete = true;
                }
            }
            _ => {}
        });
        let mut served = 0;
        let mut scratch = [0u8; 512];
        for r in reqs.iter_mut().filter(|r| r.complete && !r.done) {
            let _ = session.with_stream(conn, r.id, |h3, t, st| {
                if !r.head_sent {
                    let file = open(r.path.as_deref());
                    let len = file.as_ref().and_then(|f| f.metadata().ok()).map(|m| m.len());
                    let (status, len) = match (&file, len) {
                        (Some(_), Some(len)) => (200, len),
                        _ => (404, 0),
                    };
                    let len_text = len.to_string();
                    let fields: [(&[u8], &[u8]); 1] = [(b"content-length", len_text.as_bytes())];
                    let response = mote_h3::Response::new(status).with_headers(&fields);
                    if h3.send_response(t, st, &response, false, &mut scratch).is_err() {
                        return;
                    }
                    r.head_sent = true;
                    r.body = Some(Body::open(if status == 200 { file } else { None }));
                }
                let Some(body) = r.body.as_mut() else { return };
                if body.pump(|bytes| match h3.send_data(t, st, bytes, false) {
                    Ok(n) => Some(n),
                    Err(mote_h3::SendError::Blocked) => Some(0),
                    Err(_) => None,
                }) && h3.finish(t, st).is_ok()
                {
                    r.done = true;
                }
            });
            if r.done {
                served += 1;
            }
        }
        reqs.retain(|r| !r.done);
        let _ = session.h3.flush(&mut QuicTransport { conn });
        served
    }
}

impl Application<ServerEndpoint> for FileServer {
    fn drive(&mut self, now: Instant, ep: &mut ServerEndpoint) -> Flow {
        let mut stopped: Vec<(ConnectionHandle, Event)> = Vec::new();
        while let Some((h, e)) = ep.poll_event() {
            if let Event::StreamStopped { .. } = e {
                stopped.push((h, e));
            }
        }
        // New connections.
        for h in ep.handles().collect::<Vec<_>>() {
            if self.conns.iter().any(|c| c.handle == h) {
                continue;
            }
            let Some(conn) = ep.connection(h) else { continue };
            let mut observer =
                Observer::new(conn, self.qlog_dir.as_deref(), true, self.clock, now, self.local);
            for (t, d) in self.pending_initials.drain(..) {
                if dcid_of(&d, 0).is_some_and(|dcid| observer.receives(&dcid)) {
                    observer.received(t, &d);
                }
            }
            self.conns.push(ConnState {
                handle: h,
                observer,
                proto: Proto::Unknown,
                counted: false,
                key_updates: 0,
                migrations: 0,
                paths_validated: 0,
                ptos: 0,
                bytes_retransmitted: 0,
            });
            if let Ok(mut k) = self.counters.lock() {
                k.connections += 1;
            }
        }
        self.pending_initials.clear();
        let www = self.www.clone();
        let mut counters = ServerCounters::default();
        for c in self.conns.iter_mut() {
            let Some(conn) = ep.connection(c.handle) else { continue };
            if matches!(c.proto, Proto::Unknown) && !conn.is_closed() {
                match conn.tls().alpn() {
                    Some(a) if a == ALPN_H3 => {
                        let session =
                            H3Session::new(mote_h3::Role::Server, mote_h3::Config::SERVER);
                        c.proto = Proto::H3(Box::new(session), Vec::new());
                    }
                    Some(_) => c.proto = Proto::Hq(Vec::new()),
                    None => {}
                }
            }
            if !conn.is_closed() {
                let mine: Vec<Event> =
                    stopped.iter().filter(|(h, _)| *h == c.handle).map(|(_, e)| *e).collect();
                counters.responses += match &mut c.proto {
                    Proto::Unknown => 0,
                    Proto::Hq(streams) => Self::drive_hq(&www, conn, streams),
                    Proto::H3(session, reqs) => Self::drive_h3(&www, conn, session, reqs, &mine),
                };
            }
            if !c.counted && conn.is_handshake_complete() {
                c.counted = true;
                counters.resumed += u64::from(conn.tls().psk_accepted());
                counters.early_data_accepted +=
                    u64::from(conn.tls().early_data_accepted() == Some(true));
            }
            let stats = conn.stats();
            counters.peer_key_updates += u64::from(stats.key_updates.saturating_sub(c.key_updates));
            c.key_updates = stats.key_updates;
            counters.migrations += u64::from(stats.migrations.saturating_sub(c.migrations));
            c.migrations = stats.migrations;
            counters.paths_validated +=
                u64::from(stats.paths_validated.saturating_sub(c.paths_validated));
            c.paths_validated = stats.paths_validated;
            counters.ptos += stats.ptos.saturating_sub(c.ptos);
            c.ptos = stats.ptos;
            counters.bytes_retransmitted +=
                stats.bytes_retransmitted.saturating_sub(c.bytes_retransmitted);
            c.bytes_retransmitted = stats.bytes_retransmitted;
            c.observer.update(now, conn, self.keylog.as_mut());
        }
        if let Ok(mut k) = self.counters.lock() {
            k.responses += counters.responses;
            k.resumed += counters.resumed;
            k.early_data_accepted += counters.early_data_accepted;
            k.peer_key_updates += counters.peer_key_updates;
            k.migrations += counters.migrations;
            k.paths_validated += counters.paths_validated;
            k.ptos += counters.ptos;
            k.bytes_retransmitted += counters.bytes_retransmitted;
            k.endpoint = ep.stats();
        }
        // Forget connections the endpoint removed.
        self.conns.retain_mut(|c| {
            let alive = ep.connection_ref(c.handle).is_some();
            if !alive {
                c.observer.flush();
            }
            alive
        });
        Flow::Continue
    }

    fn sent_all(&mut self, now: Instant, ep: &mut ServerEndpoint) {
        for c in self.conns.iter_mut() {
            if let Some(conn) = ep.connection(c.handle) {
                c.observer.packets(now, conn);
            }
        }
    }

    fn on_datagram_received(&mut self, now: Instant, _from: SocketAddr, data: &[u8]) {
        if self.qlog_dir.is_none() {
            return;
        }
        let Some(dcid) = dcid_of(data, 8) else { return };
        match self.conns.iter_mut().find(|c| c.observer.receives(&dcid)) {
            Some(c) => c.observer.received(now, data),
            None if self.pending_initials.len() < 16 => {
                self.pending_initials.push((now, data.to_vec()));
            }
            None => {}
        }
    }

    fn on_datagram_sent(
        &mut self,
        now: Instant,
        to: SocketAddr,
        data: &[u8],
        segment_size: Option<usize>,
    ) {
        if self.qlog_dir.is_none() {
            return;
        }
        let found = self.conns.iter_mut().find(|c| {
            c.observer.remote == to
                && dcid_of(data, c.observer.remote_cid.len())
                    .is_some_and(|d| d == c.observer.remote_cid)
        });
        if let Some(c) = found {
            c.observer.sent(now, data, segment_size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_paths_stay_inside_www() {
        let dir = std::env::temp_dir().join(format!("mote-www-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.txt"), b"a").unwrap();
        std::fs::write(dir.join("sub/b.txt"), b"b").unwrap();
        assert_eq!(resolve(&dir, b"/a.txt"), Some(dir.join("a.txt")));
        assert_eq!(resolve(&dir, b"/sub/b.txt"), Some(dir.join("sub/b.txt")));
        assert_eq!(resolve(&dir, b"/a.txt?x=1"), Some(dir.join("a.txt")));
        assert_eq!(resolve(&dir, b"/../etc/passwd"), None);
        assert_eq!(resolve(&dir, b"/sub/../a.txt"), None);
        assert_eq!(resolve(&dir, b"//etc/passwd"), None);
        assert_eq!(resolve(&dir, b"/sub"), None);
        assert_eq!(resolve(&dir, b"a.txt"), None);
        assert_eq!(resolve(&dir, b"/missing"), None);
    }

    #[test]
    fn http09_request_lines() {
        assert_eq!(hq_path(b"GET /x\r\n"), Some(&b"/x"[..]));
        assert_eq!(hq_path(b"GET /x"), Some(&b"/x"[..]));
        assert_eq!(hq_path(b"GET /x HTTP/1.0\r\n"), Some(&b"/x"[..]));
        assert_eq!(hq_path(b"POST /x\r\n"), None);
    }
}
