//! `mote get --device`: the firmware's client stack on a host's UDP socket, to test it
//! against servers nobody here wrote. mote-quic's device connection
//! ([`DeviceConnection`]: one path, the fixed stream set of an HTTP/3 device client) under
//! mote-h3's one-request-at-a-time client ([`mote_h3::client::Client`], through
//! [`DeviceTransport`]), with the host's TLS: the server authenticated by X.509 (or a pinned
//! raw public key) and ALPN `h3` only.
//!
//! The URLs are fetched one after the other on one connection (the device client has one
//! request stream at a time). With a session file the connection resumes, sends its first
//! request in 0-RTT with `--0rtt` (through the server's remembered transport parameters,
//! RFC 9000 §7.4.1), carries the server's NEW_TOKEN token in its Initials, and saves the
//! newest ticket and token back, as `mote get` does. `--key-update` starts one key update
//! once the handshake is confirmed.
//!
//! `--keylog` appends the connection's TLS secrets (the device connection's `poll_keylog`,
//! feature `keylog`); it keeps no packet log, so `--qlog-dir` writes nothing here. It
//! cannot migrate, and it sends no ECN marks.

use std::fs::File;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use mote_crypto::fast::{Ring, SystemRng};
use mote_crypto::AeadAlgorithm;
use mote_h3::client::ClientRequest;
use mote_h3::client::{Client, Event as H3Event};
use mote_h3::device::DeviceTransport;
use mote_h3::SendError;
use mote_h3::{Config as H3Config, H3Error};
use mote_quic::connection::{CloseReason, RecvInfo, Transmit};
use mote_quic::device::{DeviceConnection, DeviceStorage};
use mote_quic::transport_params::ticket_version;
use mote_quic::{ConnectionConfig, Instant, Version};
use mote_tls::{ClientConfig, ClientSession};

use crate::client::{describe_close, target, GetOptions, GetReport, Target, MAX_SOURCES};
use crate::clock::{unix_millis, Clock};
use crate::driver::{self, Application, Flow, SansIo};
use crate::keylog::KeyLogFile;
use crate::session_file::SavedSession;
use crate::socket::UdpSocket;
use crate::types::{ClientTls, CRYPTO_BUFFER};
use crate::{Error, ALPN_H3};

/// Application Data sent-packet records: the device client sends requests and ACKs only.
const SENT: usize = 32;
/// Received-packet ranges and reassembly ranges per stream (loss and reordering).
const RANGES: usize = 32;
/// Receive buffers of the request stream and the server's unidirectional streams (control,
/// QPACK): each stream's flow-control window. Equal, as the connection advertises the
/// smallest.
const RECV: usize = 1 << 20;
/// Send buffers of the request and our control stream (a GET's HEADERS frame; SETTINGS).
const SEND: usize = 4 * 1024;
/// The HTTP/3 client's per-stream buffer (response heads up to `H3_CAP - 16` bytes).
const H3_CAP: usize = 16 * 1024;
/// How long a finished client waits for a session ticket (or its key update to start).
const TICKET_WAIT_MS: u64 = 1000;
/// H3_NO_ERROR (RFC 9114 §8.1).
const H3_NO_ERROR: u64 = 0x100;

/// The device connection with host buffers.
type DevConn = DeviceConnection<Ring, ClientTls, Vec<u8>, Vec<u8>, SENT, RANGES>;
/// The device's HTTP/3 client.
type H3 = Client<H3_CAP>;

/// The device connection as the driver's endpoint.
struct Device {
    conn: Box<DevConn>,
}

impl SansIo for Device {
    fn handle_recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        // A GRO batch is several datagrams of `segment_size` bytes (the last shorter).
        match info.segment_size {
            Some(size) if size > 0 => {
                for d in data.chunks_mut(size) {
                    self.conn.handle_datagram(now, info.remote, d);
                }
            }
            _ => self.conn.handle_datagram(now, info.remote, data),
        }
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.conn.poll_transmit(now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
    }
}

/// One requested file.
struct Fetch {
    path: String,
    name: String,
    file: Option<File>,
    received: u64,
    status: Option<u16>,
    complete: bool,
}

/// The sequential fetcher: one request at a time.
struct Fetcher {
    h3: Box<H3>,
    authority: String,
    output: PathBuf,
    fetches: Vec<Fetch>,
    /// The fetch in progress (its request sent once `sent`).
    current: usize,
    sent: bool,
    key_update: bool,
    key_updated: bool,
    want_ticket: bool,
    ticket: Option<(Vec<u8>, u64)>,
    token: Option<Vec<u8>>,
    handshake_at: Option<Instant>,
    done_at: Option<Instant>,
    closed: bool,
    error: Option<String>,
    close_reason: Option<CloseReason>,
    sources: Vec<SocketAddr>,
    resumed: bool,
    early_data: Option<bool>,
    retried: bool,
    scratch: Vec<u8>,
    keylog: Option<KeyLogFile>,
}

impl Fetcher {
    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }

    /// Opens our control stream, then sends the current fetch's GET once the previous
    /// request stream is finished both ways.
    fn send_request(&mut self, conn: &mut DevConn) {
        let t = &mut DeviceTransport { conn };
        if !self.h3.is_open() {
            match self.h3.open(t) {
                Ok(()) => {}
                Err(SendError::StreamLimit | SendError::Blocked) => return,
                Err(e) => return self.fail(format!("HTTP/3 control stream: {e:?}")),
            }
        }
        if self.sent || self.current >= self.fetches.len() {
            return;
        }
        let Some(f) = self.fetches.get(self.current) else { return };
        let request = ClientRequest::get(self.authority.as_bytes(), f.path.as_bytes());
        match self.h3.request(t, &request, true, &mut self.scratch) {
            Ok(_) => self.sent = true,
            // The previous request stream is not finished both ways yet, or no room: later.
            Err(SendError::InvalidState | SendError::StreamLimit | SendError::Blocked) => {}
            Err(e) => {
                let path = f.path.clone();
                self.fail(format!("{path}: request not sent: {e:?}"));
            }
        }
    }

    /// Reads the HTTP/3 streams; writes the current response's body to its file.
    fn read_responses(&mut self, conn: &mut DevConn) {
        let Self { h3, fetches, current, sent, output, .. } = self;
        let Some(f) = fetches.get_mut(*current).filter(|_| *sent) else {
            // Nothing requested: the server's streams are still read (SETTINGS, GOAWAY).
            if let Err(e) = h3.poll(&mut DeviceTransport { conn }, |_| {}) {
                self.fail(format!("HTTP/3 connection error {e:?}"));
            }
            return;
        };
        let mut problem: Option<String> = None;
        let r = h3.poll(&mut DeviceTransport { conn }, |e| match e {
            // Interim (1xx) responses are skipped; the final status stays.
            H3Event::Response { status } if status >= 200 || f.status.is_none() => {
                f.status = Some(status);
            }
            H3Event::Data(d) => {
                if f.file.is_none() {
                    match File::create(output.join(&f.name)) {
                        Ok(file) => f.file = Some(file),
                        Err(e) => problem = Some(format!("{}: {e}", f.name)),
                    }
                }
                f.received += d.len() as u64;
                if let Some(Err(e)) = f.file.as_mut().map(|file| file.write_all(d)) {
                    problem = Some(format!("{}: {e}", f.name));
                }
            }
            H3Event::Finished => {
                if f.status != Some(200) {
                    problem = Some(format!("{}: status {:?}", f.path, f.status));
                } else if f.file.is_none() {
                    // An empty body still makes a file.
                    if let Err(e) = File::create(output.join(&f.name)) {
                        problem = Some(format!("{}: {e}", f.name));
                    }
                }
                f.file = None;
                f.complete = problem.is_none();
            }
            H3Event::StreamError(e) => {
                problem = Some(format!("{}: HTTP/3 stream error {e:?}", f.path))
            }
            H3Event::Reset(code) => {
                problem = Some(format!("{}: stream reset by the server (code {code:#x})", f.path));
            }
            _ => {}
        });
        if f.complete {
            *current += 1;
            *sent = false;
        }
        if let Err(e) = r {
            problem.get_or_insert(format!("HTTP/3 connection error {e:?}"));
        }
        if let Some(p) = problem {
            self.fail(p);
        }
    }
}

impl Application<Device> for Fetcher {
    fn drive(&mut self, now: Instant, dev: &mut Device) -> Flow {
        let conn = &mut *dev.conn;
        if let Some(k) = self.keylog.as_mut() {
            k.drain(|| conn.poll_keylog());
        }
        if conn.is_handshake_complete() && self.handshake_at.is_none() {
            self.handshake_at = Some(now);
        }
        // What the connection has for the application (it keeps no event queue).
        if conn.ticket_ready() {
            let mut t = [0u8; mote_quic::connection::tls::TICKET_MAX];
            if let Some(n) = conn.take_ticket(&mut t) {
                self.ticket = t.get(..n).map(|b| (b.to_vec(), unix_millis()));
            }
        }
        // RFC 9000 §8.1.3: a NEW_TOKEN token is for the next connection to this server.
        let mut token = [0u8; mote_quic::token::TOKEN_MAX];
        if let Some(n) = conn.take_token(&mut token) {
            self.token = token.get(..n).map(<[u8]>::to_vec);
        }
        while let Some((id, code)) = conn.poll_stopped() {
            let _ = self.h3.on_stop_sending(&mut DeviceTransport { conn: &mut *conn }, id, code);
        }
        self.resumed = conn.tls().psk_accepted();
        self.early_data = conn.tls().early_data_accepted().or(self.early_data);
        self.retried = conn.stats().retries > 0;
        // RFC 9001 §6: a key update may start once the handshake is confirmed (and a packet
        // of the current phase was acknowledged: tried until it starts).
        if self.key_update && !self.key_updated && conn.is_handshake_confirmed() {
            self.key_updated = conn.initiate_key_update();
        }
        if conn.is_closed() {
            self.close_reason = conn.close_reason();
            if self.done_at.is_none() && !self.closed {
                self.fail(describe_close(self.close_reason));
            }
            return Flow::Stop;
        }
        // The request goes out as soon as the connection can carry it: after the handshake,
        // or at once in 0-RTT.
        if conn.is_handshake_complete() || conn.can_send_early_data() {
            self.send_request(conn);
            self.read_responses(conn);
            // A response completed: the next request may go out at once.
            self.send_request(conn);
        }
        if self.current >= self.fetches.len() && self.done_at.is_none() {
            self.done_at = Some(now);
        }
        if self.error.is_some() {
            conn.close(H3Error::RequestCancelled.code(), b"mote get failed");
            return Flow::Stop;
        }
        if let Some(done) = self.done_at {
            let waited = now.saturating_since(done).as_micros() / 1000;
            let key_update_pending = self.key_update && !self.key_updated;
            if (!self.want_ticket || self.ticket.is_some() || waited >= TICKET_WAIT_MS)
                && (!key_update_pending || waited >= TICKET_WAIT_MS)
            {
                conn.close(H3_NO_ERROR, b"done");
                self.closed = true;
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // Waiting for a ticket after the last response: wake when the wait is over.
        self.done_at.map(|d| d + mote_quic::Duration::from_millis(TICKET_WAIT_MS))
    }

    fn on_datagram_received(&mut self, _now: Instant, from: SocketAddr, _data: &[u8]) {
        if self.sources.len() < MAX_SOURCES && !self.sources.contains(&from) {
            self.sources.push(from);
        }
    }
}

/// The device connection's configuration on a host: the device profile with HTTP/3's three
/// server streams and host-sized flow-control windows.
fn device_config() -> ConnectionConfig {
    let mut c = ConnectionConfig::device();
    // RFC 9114 §6.2: the server's control stream and its two QPACK streams.
    c.streams.max_streams_uni = 3;
    c.streams.max_data = 64 << 20;
    c.streams.max_stream_data_bidi_local = RECV as u64;
    c.streams.max_stream_data_uni = RECV as u64;
    c.version = Version::V1;
    c
}

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

/// Runs `mote get --device` (call within a tokio runtime): the URLs one after the other
/// over the device connection and the HTTP/3 device client.
pub async fn get(o: GetOptions) -> Result<GetReport, Error> {
    if o.alpn.as_slice() != ALPN_H3 {
        return Err(Error::new("--device speaks HTTP/3 only: use --alpn h3"));
    }
    if o.migrate || o.v2 {
        return Err(Error::new(
            "--device: the device connection neither migrates nor offers QUIC v2 here",
        ));
    }
    let Target { urls, remote, authority, server_auth, saved, resumption } = target(&o)?;
    let first = urls.first().ok_or_else(|| Error::new("no URL to fetch"))?;
    // RFC 9369 §5: the device connection speaks v1 and does not check its ticket's version
    // (its own tickets are all v1); a v2 ticket saved by `mote get --v2` is left out here.
    let resumption = resumption
        .filter(|r| ticket_version(r.ticket.server_transport_parameters) == Some(Version::V1));
    let remembered =
        resumption.filter(|_| o.zero_rtt).map(|r| r.ticket.server_transport_parameters);
    let config: &'static ClientConfig<'static> = leak(ClientConfig {
        server_name: Some(Box::leak(first.host.clone().into_bytes().into_boxed_slice())),
        alpn: &[ALPN_H3],
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
    let cc = device_config();
    let clock = Clock::new();
    let crypto = || (vec![0u8; CRYPTO_BUFFER], vec![0u8; CRYPTO_BUFFER]);
    let storage = DeviceStorage {
        crypto: [crypto(), crypto(), crypto()],
        control: vec![0u8; SEND],
        request: (vec![0u8; SEND], vec![0u8; RECV]),
        peer_uni: [vec![0u8; RECV], vec![0u8; RECV], vec![0u8; RECV]],
    };
    let mut conn = Box::new(
        DevConn::client(&cc, Ring, tls, storage, clock.now(), remote, &mut SystemRng::new())
            .map_err(|e| Error::new(format!("connect: {e:?}")))?,
    );
    // RFC 9000 §8.1.3: the token a previous connection got in NEW_TOKEN; RFC 9369 §5: of a
    // v1 connection (the device connection leaves that to its application).
    let token = saved
        .as_ref()
        .filter(|s| s.token_version == Version::V1.0)
        .map(|s| s.token.as_slice())
        .filter(|t| !t.is_empty());
    let token_used = token.is_some_and(|t| conn.set_token(t));
    // RFC 9000 §7.4.1: 0-RTT uses the server's remembered transport parameters.
    let zero_rtt = remembered.is_some_and(|tp| conn.apply_remembered_params(tp));
    let fetches = urls
        .iter()
        .map(|u| {
            Ok(Fetch {
                path: u.path.clone(),
                name: u.file_name()?,
                file: None,
                received: 0,
                status: None,
                complete: false,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let h3_config = H3Config {
        max_field_section_size: 16 * 1024,
        max_encoded_field_section: (H3_CAP - 16) as u64,
        qpack_blocked_streams: 0,
        grease: Some(1),
    };
    let mut app = Fetcher {
        h3: Box::new(H3::new(h3_config)),
        authority,
        output: o.output.clone(),
        fetches,
        current: 0,
        sent: false,
        key_update: o.key_update,
        key_updated: false,
        want_ticket: o.session_file.is_some(),
        ticket: None,
        token: None,
        handshake_at: None,
        done_at: None,
        closed: false,
        error: None,
        close_reason: None,
        sources: Vec::new(),
        resumed: false,
        early_data: None,
        retried: false,
        scratch: vec![0u8; 1024],
        keylog: o.keylog.as_deref().map(KeyLogFile::open).transpose()?,
    };
    let mut device = Device { conn };
    let transmit_buffer = usize::from(cc.max_datagram_size);
    let mut sockets = vec![socket];
    let run = driver::run(&mut sockets, &clock, &mut device, &mut app, transmit_buffer);
    let outcome = tokio::time::timeout(std::time::Duration::from_millis(o.timeout_ms), run).await;
    if let Some(k) = app.keylog.as_mut() {
        k.drain(|| device.conn.poll_keylog());
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
            SavedSession {
                ticket,
                token: app.token.take().unwrap_or_default(),
                // The device connection speaks v1 only.
                token_version: Version::V1.0,
                received_unix_ms: at,
                server: app.authority.clone(),
                alpn: "h3".into(),
            }
            .save(path)?;
        }
    }
    let ms = |t: Option<Instant>| t.map_or(0, |t| t.as_micros() / 1000);
    Ok(GetReport {
        files: app.fetches.len(),
        bytes: app.fetches.iter().map(|f| f.received).sum(),
        resumed: app.resumed,
        early_data: if zero_rtt { app.early_data } else { None },
        key_updated: app.key_updated,
        handshake_ms: ms(app.handshake_at),
        duration_ms: ms(app.done_at),
        version: cc.version.0,
        ticket_saved,
        token_saved,
        token_used,
        retried: app.retried,
        migrated: false,
        migrations: 0,
        peer: Some(device.conn.remote()),
        ecn_capable: false,
        ecn_received: [0; 3],
        sources: std::mem::take(&mut app.sources),
    })
}
