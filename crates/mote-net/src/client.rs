//! `mote get`: fetches URLs over one QUIC connection, all requests in parallel (as many
//! as the connection's stream slots and the server's stream limit allow at once), and
//! saves each response under the output directory by the path's last segment.
//!
//! A file counts only when it arrived whole: its stream ended with FIN (and over HTTP/3
//! the status was 200 and the body matched `content-length`). With a session file the
//! connection resumes (and with `--0rtt` sends its requests as 0-RTT), its Initials carry
//! the server's NEW_TOKEN token (so a server that validates addresses skips Retry), and the
//! newest ticket and token are saved back for the next run.
//!
//! With `--migrate` the client moves to a new UDP socket (a new local port) once the
//! handshake is confirmed and the first response bytes arrived (RFC 9000 §9.2); a server's
//! preferred address is probed and taken on its own (§9.6.1).

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use mote_crypto::fast::{Ring, SystemRng};
use mote_crypto::AeadAlgorithm;
use mote_h3::quic::H3Session;
use mote_quic::connection::{CloseReason, EcnState};
use mote_quic::endpoint::{NoAccept, Slot};
use mote_quic::frame::StreamDir;
use mote_quic::stream::{Read, StreamId};
use mote_quic::{ConnectionHandle, Endpoint, EndpointConfig, Event, Instant, Version};
use mote_tls::{ClientConfig, ClientSession, Resumption, ServerAuth, Ticket, X509Verifier};

use crate::clock::{unix_millis, Clock};
use crate::driver::{self, Application, Flow};
use crate::identity;
use crate::keylog::KeyLogFile;
use crate::observe::Observer;
use crate::server::connection_config;
use crate::session_file::SavedSession;
use crate::socket::UdpSocket;
use crate::types::{storage, ClientConnection, ClientEndpoint};
use crate::url::Url;
use crate::{Error, ALPN_H3, ALPN_HQ};

/// Send buffer per stream slot (requests, HTTP/3 control streams).
const SEND_BUFFER: usize = 16 * 1024;
/// Receive buffer per stream slot: each response stream's flow-control window.
const RECV_BUFFER: usize = 1 << 20;
/// How long a finished client waits for a session ticket it is asked to save.
const TICKET_WAIT_MS: u64 = 1000;
/// A client waiting for responses that heard nothing from the server for this long sends
/// a PING: a server that lost the connection (restarted) then answers with a stateless
/// reset (RFC 9000 §10.3) instead of leaving the client to its idle timeout.
const KEEP_ALIVE_MS: u64 = 1000;

/// How the client authenticates the server.
#[derive(Debug, Clone)]
pub enum ServerAuthOption {
    /// X.509: the chain must lead to a certificate of this PEM file and name the URL's host.
    Ca(PathBuf),
    /// Raw public key (RFC 7250): the server's key must be this one (PUBLIC KEY PEM, or the
    /// private key file it belongs to).
    PinKey(PathBuf),
}

/// What `mote get` is asked to do.
#[derive(Debug, Clone)]
pub struct GetOptions {
    /// `https://host:port/path` URLs, all of the same server.
    pub urls: Vec<String>,
    /// Directory the files are written to.
    pub output: PathBuf,
    /// Server authentication.
    pub auth: ServerAuthOption,
    /// Resume from (and save the newest ticket to) this file.
    pub session_file: Option<PathBuf>,
    /// Send the requests as 0-RTT when resuming.
    pub zero_rtt: bool,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    pub chacha20: bool,
    /// Offer QUIC version 2: start in v1 and let the server upgrade (RFC 9368 compatible
    /// version negotiation).
    pub v2: bool,
    /// Initiate a key update once the handshake is confirmed.
    pub key_update: bool,
    /// `hq-interop` or `h3`.
    pub alpn: Vec<u8>,
    /// Write the connection's qlog here.
    pub qlog_dir: Option<PathBuf>,
    /// Append TLS secrets here.
    pub keylog: Option<PathBuf>,
    /// Migrate to a new local port after the handshake.
    pub migrate: bool,
    /// Give up after this many milliseconds.
    pub timeout_ms: u64,
}

/// What a successful `mote get` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetReport {
    /// Files written.
    pub files: usize,
    /// Body bytes received.
    pub bytes: u64,
    /// The handshake resumed a session.
    pub resumed: bool,
    /// `Some(accepted)` when 0-RTT was offered.
    pub early_data: Option<bool>,
    /// A key update was initiated.
    pub key_updated: bool,
    /// Milliseconds to handshake completion.
    pub handshake_ms: u64,
    /// Milliseconds to the last file.
    pub duration_ms: u64,
    /// The QUIC version used.
    pub version: u32,
    /// A ticket was saved to the session file.
    pub ticket_saved: bool,
    /// A NEW_TOKEN token was saved to the session file.
    pub token_saved: bool,
    /// The Initials carried a token from the session file.
    pub token_used: bool,
    /// The server answered with Retry (RFC 9000 §8.1.2).
    pub retried: bool,
    /// `--migrate`: the client moved to a new local socket.
    pub migrated: bool,
    /// Paths the connection moved to (our migration, the server's preferred address).
    pub migrations: u32,
    /// The server's address at the end (the preferred address once moved there).
    pub peer: Option<SocketAddr>,
    /// The path's ECN marks were validated by the server's ACK counts (RFC 9000 §13.4.2).
    pub ecn_capable: bool,
    /// Packets received marked ECT(0), ECT(1), CE.
    pub ecn_received: [u64; 3],
    /// The addresses datagrams came from, in order of first arrival (at most
    /// [`MAX_SOURCES`]): the server's, and its preferred address once probed.
    pub sources: Vec<SocketAddr>,
}

/// Source addresses a [`GetReport`] lists at most.
pub const MAX_SOURCES: usize = 8;

/// One requested file.
#[derive(Debug)]
struct Fetch {
    path: String,
    name: String,
    stream: Option<u64>,
    request_sent: bool,
    file: Option<File>,
    received: u64,
    status: Option<u16>,
    content_length: Option<u64>,
    complete: bool,
}

/// The fetching application.
struct Fetcher {
    handle: Option<ConnectionHandle>,
    authority: String,
    output: PathBuf,
    fetches: Vec<Fetch>,
    by_stream: HashMap<u64, usize>,
    next: usize,
    h3: Option<H3Session>,
    key_update: bool,
    key_updated: bool,
    want_ticket: bool,
    ticket: Option<(Vec<u8>, u64)>,
    /// A NEW_TOKEN frame arrived (`Event::NewToken`), and the token taken from it with the
    /// version it belongs to.
    token_ready: bool,
    token: Option<(Vec<u8>, Version)>,
    /// `--migrate`: still to do; the socket bound for it; the socket handed to the driver.
    migrate: bool,
    migrated: bool,
    spare_socket: Option<UdpSocket>,
    moved_socket: Option<UdpSocket>,
    /// When the server was last heard from or a keep-alive PING was sent.
    quiet_since: Instant,
    /// Last seen figures of the connection (it may be gone when the report is made).
    retried: bool,
    migrations: u32,
    peer: Option<SocketAddr>,
    ecn_capable: bool,
    ecn_received: [u64; 3],
    sources: Vec<SocketAddr>,
    remembered: Option<Vec<u8>>,
    handshake_at: Option<Instant>,
    done_at: Option<Instant>,
    closed: bool,
    error: Option<String>,
    close_reason: Option<CloseReason>,
    stopped: Vec<Event>,
    observer: Option<Observer>,
    keylog: Option<KeyLogFile>,
    qlog_dir: Option<PathBuf>,
    clock: Clock,
    local: SocketAddr,
    resumed: bool,
    early_data: Option<bool>,
    version: u32,
}

impl Fetcher {
    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }

    fn write(&mut self, i: usize, data: &[u8]) {
        let Some(f) = self.fetches.get_mut(i) else { return };
        if f.file.is_none() {
            match File::create(self.output.join(&f.name)) {
                Ok(file) => f.file = Some(file),
                Err(e) => {
                    let msg = format!("{}: {e}", self.output.join(&f.name).display());
                    self.fail(msg);
                    return;
                }
            }
        }
        f.received += data.len() as u64;
        if let Some(Err(e)) = f.file.as_mut().map(|file| file.write_all(data)) {
            let msg = format!("{}: {e}", f.name);
            self.fail(msg);
        }
    }

    fn finish(&mut self, i: usize) {
        let h3 = self.h3.is_some();
        let Some(f) = self.fetches.get_mut(i) else { return };
        if h3 {
            if f.status != Some(200) {
                let msg = format!("{}: status {:?}", f.path, f.status);
                self.fail(msg);
                return;
            }
            if f.content_length.is_some_and(|l| l != f.received) {
                let msg = format!(
                    "{}: {} bytes, content-length {:?}",
                    f.path, f.received, f.content_length
                );
                self.fail(msg);
                return;
            }
        }
        if f.file.is_none() {
            // An empty body still makes a file.
            match File::create(self.output.join(&f.name)) {
                Ok(file) => f.file = Some(file),
                Err(e) => {
                    let msg = format!("{}: {e}", f.name);
                    self.fail(msg);
                    return;
                }
            }
        }
        // Closing the file is enough: the bytes are the kernel's now.
        f.file = None;
        f.complete = true;
    }

    fn open_requests(&mut self, conn: &mut ClientConnection) {
        let authority = self.authority.clone();
        if let Some(session) = self.h3.as_mut() {
            if session.open(conn).is_err() {
                return;
            }
            while self.next < self.fetches.len() {
                let Ok(id) = session.open_request(conn) else { break };
                if let Some(f) = self.fetches.get_mut(self.next) {
                    f.stream = Some(id);
                }
                self.by_stream.insert(id, self.next);
                self.next += 1;
            }
            let mut scratch = [0u8; 1024];
            for f in self.fetches.iter_mut().filter(|f| f.stream.is_some() && !f.request_sent) {
                let Some(id) = f.stream else { continue };
                let request = mote_h3::Request::get(authority.as_bytes(), f.path.as_bytes());
                let r = session.with_stream(conn, id, |h3, t, st| {
                    h3.send_request(t, st, &request, true, &mut scratch)
                });
                if matches!(r, Some(Ok(()))) {
                    f.request_sent = true;
                }
            }
            return;
        }
        while self.next < self.fetches.len() {
            let Ok(id) = conn.stream_open(StreamDir::Bidi) else { break };
            if let Some(f) = self.fetches.get_mut(self.next) {
                f.stream = Some(id.raw());
            }
            self.by_stream.insert(id.raw(), self.next);
            self.next += 1;
        }
        for f in self.fetches.iter_mut().filter(|f| f.stream.is_some() && !f.request_sent) {
            let Some(id) = f.stream.and_then(StreamId::new) else { continue };
            let line = format!("GET {}\r\n", f.path);
            // The request is a few bytes; the slot's send buffer holds it whole.
            if conn.stream_send(id, line.as_bytes()) == Ok(line.len()) {
                let _ = conn.stream_finish(id);
                f.request_sent = true;
            }
        }
    }

    /// Whether requests are outstanding on an established connection (keep-alives due).
    fn waiting(&self) -> bool {
        self.handshake_at.is_some() && self.done_at.is_none() && !self.closed
    }

    /// Binds a new socket (once) and moves the connection to it; the driver takes the
    /// socket ([`Application::take_socket`]). No spare connection ID of the server yet:
    /// tried again on the next turn.
    fn try_migrate(&mut self, now: Instant, conn: &mut ClientConnection) -> Result<(), String> {
        if self.spare_socket.is_none() {
            let any: SocketAddr =
                if self.local.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
            let socket = UdpSocket::bind(any).map_err(|e| format!("--migrate: bind: {e}"))?;
            self.spare_socket = Some(socket);
        }
        match conn.migrate(now) {
            Ok(()) => {
                self.moved_socket = self.spare_socket.take();
                self.migrated = true;
                Ok(())
            }
            Err(mote_quic::connection::MigrateError::NoConnectionId) => Ok(()),
            Err(e) => Err(format!("--migrate: the connection cannot migrate ({e:?})")),
        }
    }

    fn read_hq(&mut self, conn: &mut ClientConnection) {
        let mut buf = vec![0u8; 64 * 1024];
        let active: Vec<(usize, u64)> = self
            .fetches
            .iter()
            .enumerate()
            .filter(|(_, f)| f.request_sent && !f.complete)
            .filter_map(|(i, f)| f.stream.map(|s| (i, s)))
            .collect();
        for (i, s) in active {
            let Some(id) = StreamId::new(s) else { continue };
            loop {
                match conn.stream_recv(id, &mut buf) {
                    Some(Read::Data(n)) => {
                        let data = buf.get(..n).unwrap_or(&[]).to_vec();
                        self.write(i, &data);
                    }
                    Some(Read::Fin) => {
                        self.finish(i);
                        break;
                    }
                    Some(Read::Reset(code)) => {
                        let path = self.fetches.get(i).map(|f| f.path.clone()).unwrap_or_default();
                        self.fail(format!("{path}: stream reset by the server (code {code})"));
                        break;
                    }
                    _ => break,
                }
            }
        }
    }

    fn read_h3(&mut self, conn: &mut ClientConnection) {
        let Some(session) = self.h3.as_mut() else { return };
        for e in self.stopped.drain(..) {
            let _ = session.on_quic_event(conn, e);
        }
        let mut events: Vec<(usize, H3Out)> = Vec::new();
        let by_stream = &self.by_stream;
        let r = session.poll(conn, |_, _, st, e| {
            let Some(&i) = by_stream.get(&st.id()) else { return };
            match e {
                mote_h3::Event::Headers { fields, kind: mote_h3::HeadersKind::Message, status } => {
                    let status = Some(status);
                    let len = mote_h3::message::content_length(&fields).ok().flatten();
                    events.push((i, H3Out::Head(status, len)));
                }
                mote_h3::Event::Data(d) => events.push((i, H3Out::Data(d.to_vec()))),
                mote_h3::Event::Finished => events.push((i, H3Out::Finished)),
                mote_h3::Event::StreamError(e) => events.push((i, H3Out::Error(e))),
                _ => {}
            }
        });
        if let Err(e) = r {
            self.fail(format!("HTTP/3 error {e:?}"));
        }
        for (i, e) in events {
            match e {
                H3Out::Head(status, len) => {
                    if let Some(f) = self.fetches.get_mut(i) {
                        // Interim (1xx) responses are skipped; the final status stays.
                        if status.is_some_and(|s| s >= 200) || f.status.is_none() {
                            f.status = status;
                            f.content_length = len;
                        }
                    }
                }
                H3Out::Data(d) => self.write(i, &d),
                H3Out::Finished => self.finish(i),
                H3Out::Error(e) => {
                    let path = self.fetches.get(i).map(|f| f.path.clone()).unwrap_or_default();
                    self.fail(format!("{path}: HTTP/3 stream error {e:?}"));
                }
            }
        }
    }
}

/// What the HTTP/3 session reported for a request.
enum H3Out {
    Head(Option<u16>, Option<u64>),
    Data(Vec<u8>),
    Finished,
    Error(mote_h3::H3Error),
}

impl Application<ClientEndpoint> for Fetcher {
    fn drive(&mut self, now: Instant, ep: &mut ClientEndpoint) -> Flow {
        while let Some((h, e)) = ep.poll_event() {
            match e {
                // Read the reason before the endpoint forgets the connection (at `Drained`,
                // which follows at once after a stateless reset).
                Event::Closed => {
                    self.close_reason =
                        ep.connection(h).and_then(|c| c.close_reason()).or(self.close_reason);
                }
                Event::HandshakeComplete if self.handshake_at.is_none() => {
                    self.handshake_at = Some(now);
                }
                Event::StreamStopped { .. } => self.stopped.push(e),
                Event::NewToken => self.token_ready = true,
                _ => {}
            }
        }
        let Some(h) = self.handle else { return Flow::Stop };
        let Some(conn) = ep.connection(h) else {
            if self.done_at.is_none() {
                self.fail(describe_close(self.close_reason));
            }
            return Flow::Stop;
        };
        if self.observer.is_none() {
            self.observer = Some(Observer::new(
                conn,
                self.qlog_dir.as_deref(),
                false,
                self.clock,
                now,
                self.local,
            ));
        }
        if let Some(tp) = self.remembered.take() {
            // RFC 9000 §7.4.1: 0-RTT uses the server's remembered transport parameters.
            conn.apply_remembered_params(&tp);
        }
        let mut t = [0u8; mote_quic::connection::tls::TICKET_MAX];
        if let Some(n) = conn.take_ticket(&mut t) {
            self.ticket = t.get(..n).map(|b| (b.to_vec(), unix_millis()));
        }
        if std::mem::take(&mut self.token_ready) {
            // RFC 9000 §8.1.3: the token is for the next connection to this server.
            let mut token = [0u8; mote_quic::token::TOKEN_MAX];
            if let Some((n, version)) = conn.take_token(&mut token) {
                self.token = token.get(..n).map(|t| (t.to_vec(), version));
            }
        }
        let stats = conn.stats();
        self.retried = stats.retries > 0;
        self.migrations = stats.migrations;
        self.ecn_received = stats.ecn_received;
        self.ecn_capable = conn.ecn_state() == EcnState::Capable;
        self.peer = Some(conn.remote());
        self.resumed = conn.tls().psk_accepted();
        self.early_data = conn.tls().early_data_accepted().or(self.early_data);
        self.version = conn.version().0;
        // RFC 9001 §6: a key update may start once the handshake is confirmed.
        if self.key_update && !self.key_updated && conn.is_handshake_confirmed() {
            self.key_updated = conn.initiate_key_update();
        }
        if self.waiting()
            && now.saturating_since(self.quiet_since).as_micros() >= KEEP_ALIVE_MS * 1000
        {
            conn.ping();
            self.quiet_since = now;
        }
        // RFC 9000 §9: a client may migrate once the handshake is confirmed; waiting for the
        // first response bytes moves a transfer in progress.
        let receiving = self.fetches.iter().any(|f| f.received > 0);
        if self.migrate && !self.migrated && conn.is_handshake_confirmed() && receiving {
            if let Err(e) = self.try_migrate(now, conn) {
                self.fail(e);
            }
        }
        if conn.is_closed() {
            self.close_reason = conn.close_reason();
        } else {
            if conn.is_handshake_complete() || conn.can_send_early_data() {
                self.open_requests(conn);
            }
            if self.h3.is_some() {
                self.read_h3(conn);
            } else {
                self.read_hq(conn);
            }
        }
        let all = self.fetches.iter().all(|f| f.complete);
        if all && self.done_at.is_none() {
            self.done_at = Some(now);
        }
        let mut flow = Flow::Continue;
        if self.error.is_some() || conn.is_closed() {
            flow = Flow::Stop;
        } else if let Some(done) = self.done_at {
            let waited = now.saturating_since(done).as_micros() / 1000;
            let key_update_pending = self.key_update && !self.key_updated;
            if (!self.want_ticket || self.ticket.is_some() || waited >= TICKET_WAIT_MS)
                && (!key_update_pending || waited >= TICKET_WAIT_MS)
                && !self.closed
            {
                let code = if self.h3.is_some() { mote_h3::H3Error::NoError.code() } else { 0 };
                conn.close(code, b"done");
                self.closed = true;
                flow = Flow::Stop;
            }
        }
        if self.error.is_some() && !conn.is_closed() {
            conn.close(0x101, b"mote get failed");
        }
        let observer = self.observer.as_mut();
        if let Some(o) = observer {
            o.update(now, conn, self.keylog.as_mut());
            if flow == Flow::Stop {
                o.flush();
            }
        }
        flow
    }

    fn sent_all(&mut self, now: Instant, ep: &mut ClientEndpoint) {
        if let (Some(o), Some(conn)) =
            (self.observer.as_mut(), self.handle.and_then(|h| ep.connection(h)))
        {
            o.packets(now, conn);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.waiting().then(|| self.quiet_since + mote_quic::Duration::from_millis(KEEP_ALIVE_MS))
    }

    fn take_socket(&mut self) -> Option<UdpSocket> {
        let socket = self.moved_socket.take()?;
        if let Ok(a) = socket.local_addr() {
            self.local = a;
        }
        Some(socket)
    }

    fn on_datagram_received(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        self.quiet_since = now;
        if self.sources.len() < MAX_SOURCES && !self.sources.contains(&from) {
            self.sources.push(from);
        }
        if let Some(o) = self.observer.as_mut() {
            o.received(now, data);
        }
    }

    fn on_datagram_sent(
        &mut self,
        now: Instant,
        _to: SocketAddr,
        data: &[u8],
        segment_size: Option<usize>,
    ) {
        if let Some(o) = self.observer.as_mut() {
            o.sent(now, data, segment_size);
        }
    }
}

/// Words for how a connection ended.
pub fn describe_close(reason: Option<CloseReason>) -> String {
    let one = |who: &str, c: &mote_quic::connection::ConnectionClose| {
        let kind = if c.application {
            "application error".to_string()
        } else if (0x100..0x200).contains(&c.code) {
            // RFC 9001 §4.8: CRYPTO_ERROR carries the TLS alert.
            format!("TLS alert {}", c.code - 0x100)
        } else {
            "transport error".to_string()
        };
        format!(
            "{who} closed the connection: {kind} {:#x} {:?}",
            c.code,
            String::from_utf8_lossy(c.reason())
        )
    };
    match reason {
        Some(CloseReason::Local(c)) => one("we", &c),
        Some(CloseReason::Peer(c)) => one("the server", &c),
        Some(CloseReason::IdleTimeout) => "the connection timed out (idle)".into(),
        Some(CloseReason::VersionNegotiation) => "no QUIC version in common".into(),
        Some(CloseReason::StatelessReset) => {
            "the server reset the connection (stateless reset)".into()
        }
        Some(CloseReason::NoViablePath) => "no path to the server could be validated".into(),
        None => "the connection ended".into(),
    }
}

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

/// What `mote get` and `mote get --device` derive from their options alike: the URLs (one
/// server), its address, the output directory made, the server authentication, and the
/// resumption ticket saved for that server.
pub(crate) struct Target {
    pub(crate) urls: Vec<Url>,
    pub(crate) remote: SocketAddr,
    pub(crate) authority: String,
    pub(crate) server_auth: ServerAuth<'static>,
    pub(crate) saved: Option<SavedSession>,
    pub(crate) resumption: Option<Resumption<'static>>,
}

pub(crate) fn target(o: &GetOptions) -> Result<Target, Error> {
    let urls: Vec<Url> = o.urls.iter().map(|u| Url::parse(u)).collect::<Result<_, _>>()?;
    let first = urls.first().ok_or_else(|| Error::new("no URL to fetch"))?;
    if let Some(u) = urls.iter().find(|u| u.host != first.host || u.port != first.port) {
        return Err(Error::new(format!(
            "{}:{}: all URLs must name the same server (one connection)",
            u.host, u.port
        )));
    }
    let remote = first.resolve()?;
    let authority = format!("{}:{}", first.host, first.port);
    std::fs::create_dir_all(&o.output)
        .map_err(|e| Error::new(format!("--output {}: {e}", o.output.display())))?;

    // Server authentication.
    let server_auth = match &o.auth {
        ServerAuthOption::Ca(path) => {
            ServerAuth::X509(X509Verifier { anchors: identity::trust_anchors(path)? })
        }
        ServerAuthOption::PinKey(path) => {
            ServerAuth::RawPublicKeys(leak([identity::pinned_key(path)?]))
        }
    };
    // A resumption ticket, if one was saved for this server.
    let saved = match &o.session_file {
        Some(p) => SavedSession::load(p)?.filter(|s| s.server == authority),
        None => None,
    };
    let resumption = saved.as_ref().and_then(|s| {
        let bytes: &'static [u8] = Box::leak(s.ticket.clone().into_boxed_slice());
        let age = unix_millis().saturating_sub(s.received_unix_ms);
        Ticket::decode(bytes)
            .ok()
            .map(|ticket| Resumption { ticket, age_ms: u32::try_from(age).unwrap_or(u32::MAX) })
    });
    Ok(Target { urls, remote, authority, server_auth, saved, resumption })
}

/// Runs `mote get` (call within a tokio runtime).
pub async fn get(o: GetOptions) -> Result<GetReport, Error> {
    if o.urls.is_empty() {
        return Err(Error::new("no URL to fetch"));
    }
    if o.alpn.as_slice() != ALPN_HQ && o.alpn.as_slice() != ALPN_H3 {
        return Err(Error::new("--alpn: hq-interop or h3"));
    }
    let Target { urls, remote, authority, server_auth, saved, resumption } = target(&o)?;
    let first = urls.first().ok_or_else(|| Error::new("no URL to fetch"))?;
    let remembered =
        resumption.filter(|_| o.zero_rtt).map(|r| r.ticket.server_transport_parameters.to_vec());
    let alpn: &'static [u8] = Box::leak(o.alpn.clone().into_boxed_slice());
    let config: &'static ClientConfig<'static> = leak(ClientConfig {
        server_name: Some(Box::leak(first.host.clone().into_bytes().into_boxed_slice())),
        alpn: leak([alpn]),
        server_auth,
        client_key: None,
        cipher_suites: if o.chacha20 { &[AeadAlgorithm::ChaCha20Poly1305] } else { &[] },
        groups: &[],
        early_data: o.zero_rtt,
    });
    let mut tls = ClientSession::new(Ring, config, resumption);
    tls.set_unix_time(unix_millis() / 1000);

    let local: SocketAddr =
        if remote.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let socket = UdpSocket::bind(local).map_err(|e| Error::new(format!("bind: {e}")))?;
    let mut cc = connection_config(30_000, socket.max_gso_segments());
    // The client opens the request streams; the server opens HTTP/3's unidirectional ones.
    cc.streams.max_streams_bidi = 0;
    cc.streams.max_streams_uni = 8;
    if o.v2 {
        // RFC 9368 §4: start in v1 and list v2 as compatible; a server that supports it
        // switches the connection after our first Initial (no extra round trip).
        cc.version = Version::V1;
        cc.compatible_version = Some(Version::V2);
    }
    let mut endpoint: ClientEndpoint = Endpoint::new(
        EndpointConfig::client(cc),
        Ring,
        NoAccept,
        vec![Slot::new()],
        &mut SystemRng::new(),
    )
    .map_err(|e| Error::new(format!("client endpoint: {e:?}")))?;
    let clock = Clock::new();
    // RFC 9000 §8.1.3: the token a previous connection got in NEW_TOKEN, used if this
    // connection starts in that connection's version (RFC 9369 §5; a saved ticket may
    // have chosen the version, see `Connection::client`).
    let token = saved
        .as_ref()
        .map(|s| (s.token.as_slice(), Version(s.token_version)))
        .filter(|(t, _)| !t.is_empty());
    let handle = match token {
        Some((token, version)) => endpoint.connect_with_token(
            clock.now(),
            remote,
            tls,
            storage(SEND_BUFFER, RECV_BUFFER),
            token,
            version,
        ),
        None => endpoint.connect(clock.now(), remote, tls, storage(SEND_BUFFER, RECV_BUFFER)),
    }
    .map_err(|e| Error::new(format!("connect: {e:?}")))?;
    let start_version = endpoint.connection(handle).map(|c| c.original_version());
    let token_used = token.is_some_and(|(_, v)| Some(v) == start_version);
    if let Some(dir) = &o.qlog_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::new(format!("--qlog-dir {}: {e}", dir.display())))?;
    }
    let fetches = urls
        .iter()
        .map(|u| {
            Ok(Fetch {
                path: u.path.clone(),
                name: u.file_name()?,
                stream: None,
                request_sent: false,
                file: None,
                received: 0,
                status: None,
                content_length: None,
                complete: false,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let mut app = Fetcher {
        handle: Some(handle),
        authority,
        output: o.output.clone(),
        fetches,
        by_stream: HashMap::new(),
        next: 0,
        h3: (alpn == ALPN_H3)
            .then(|| H3Session::new(mote_h3::Role::Client, mote_h3::Config::SERVER)),
        key_update: o.key_update,
        key_updated: false,
        want_ticket: o.session_file.is_some(),
        ticket: None,
        quiet_since: clock.now(),
        token_ready: false,
        token: None,
        migrate: o.migrate,
        migrated: false,
        spare_socket: None,
        moved_socket: None,
        retried: false,
        migrations: 0,
        peer: None,
        ecn_capable: false,
        ecn_received: [0; 3],
        sources: Vec::new(),
        remembered,
        handshake_at: None,
        done_at: None,
        closed: false,
        error: None,
        close_reason: None,
        stopped: Vec::new(),
        observer: None,
        keylog: o.keylog.as_deref().map(KeyLogFile::open).transpose()?,
        qlog_dir: o.qlog_dir.clone(),
        clock,
        local: socket.local_addr()?,
        resumed: false,
        early_data: None,
        version: 0,
    };
    let transmit_buffer = usize::from(cc.max_datagram_size) * cc.max_gso_segments;
    let mut sockets = vec![socket];
    let run = driver::run(&mut sockets, &clock, &mut endpoint, &mut app, transmit_buffer);
    let outcome = tokio::time::timeout(std::time::Duration::from_millis(o.timeout_ms), run).await;
    if let Some(obs) = app.observer.as_mut() {
        obs.flush();
    }
    let missing = app.fetches.iter().filter(|f| !f.complete).count();
    match outcome {
        Err(_) => {
            return Err(Error::new(format!(
                "timed out after {} ms with {missing} of {} files missing",
                o.timeout_ms,
                app.fetches.len()
            )))
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(())) => {}
    }
    if let Some(e) = app.error.take() {
        return Err(Error::new(e));
    }
    if missing > 0 {
        return Err(Error::new(format!(
            "{missing} of {} files missing; {}",
            app.fetches.len(),
            describe_close(app.close_reason)
        )));
    }
    let keep = o.session_file.is_some();
    let (ticket_saved, token_saved) = (keep && app.ticket.is_some(), keep && app.token.is_some());
    if let Some(path) = &o.session_file {
        // The newest ticket (else the one we had); the new token, if any: a token is not
        // used twice (RFC 9000 §8.1.3).
        let (ticket, at) = match (app.ticket.take(), &saved) {
            (Some(t), _) => t,
            (None, Some(s)) => (s.ticket.clone(), s.received_unix_ms),
            (None, None) => (Vec::new(), 0),
        };
        if ticket_saved || token_saved || token_used {
            let (token, token_version) = app.token.take().unwrap_or((Vec::new(), Version::V1));
            SavedSession {
                ticket,
                token,
                token_version: token_version.0,
                received_unix_ms: at,
                server: app.authority.clone(),
                alpn: String::from_utf8_lossy(alpn).into_owned(),
            }
            .save(path)?;
        }
    }
    let ms = |t: Option<Instant>| t.map_or(0, |t| t.as_micros() / 1000);
    Ok(GetReport {
        files: app.fetches.len(),
        bytes: app.fetches.iter().map(|f| f.received).sum(),
        resumed: app.resumed,
        early_data: if o.zero_rtt && app.remembered.is_none() && saved.is_some() {
            app.early_data
        } else {
            None
        },
        key_updated: app.key_updated,
        handshake_ms: ms(app.handshake_at),
        duration_ms: ms(app.done_at),
        version: app.version,
        ticket_saved,
        token_saved,
        token_used,
        retried: app.retried,
        migrated: app.migrated,
        migrations: app.migrations,
        peer: app.peer,
        ecn_capable: app.ecn_capable,
        ecn_received: app.ecn_received,
        sources: std::mem::take(&mut app.sources),
    })
}
