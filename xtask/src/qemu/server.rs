//! The HTTP/3 server the firmware talks to when no external one (`mote serve`) is given:
//! a mote-quic server endpoint on a real UDP socket, authenticated by the raw public key the
//! firmware pins (`firmware/client/keys/server-ed25519.pem`), issuing session tickets and
//! accepting 0-RTT. It answers `GET /<n>` with `n` bytes (up to 1 MB) and `POST` with
//! `200` once the whole body arrived, if the body is the firmware's pattern (the repeating
//! alphabet `a`..`z`, generated on the device), else `400` (the body is counted, checked
//! and discarded); anything else gets `404`.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use anyhow::{anyhow, Context, Result};
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{CryptoProvider, SignatureScheme};
use mote_quic::connection::{RecvInfo, Storage};
use mote_quic::endpoint::Slot;
use mote_quic::{ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, Instant};
use mote_scenarios::h3::H3Session;
use mote_scenarios::{ServerAcceptor, ServerEndpoint};
use mote_tls::{ServerConfig, ServerIdentity, ServerSession, TicketConfig, TicketKey};

/// The server's anti-replay register for 0-RTT.
struct Register(Mutex<mote_tls::StrikeRegister<64>>);

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

/// Decodes the base64 body of a PEM file.
pub fn pem_der(pem: &str) -> Result<Vec<u8>> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in body.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(anyhow!("invalid base64 in PEM")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

/// A request being answered.
struct Request {
    id: u64,
    /// Index of its line in the log.
    line: usize,
    /// Body bytes received (a POST's body is counted, checked and discarded).
    received: usize,
    /// Whether every body byte so far is the firmware's POST pattern ([`post_pattern`]).
    pattern_ok: bool,
    status: u16,
    body: usize,
    complete: bool,
    head_sent: bool,
    body_sent: usize,
    done: bool,
}

/// What the server saw, for the report.
#[derive(Clone, Debug, Default)]
pub struct ServerLog {
    /// "METHOD path status body-bytes" per request.
    pub requests: Vec<String>,
    /// Handshakes completed, and how many accepted 0-RTT.
    pub handshakes: usize,
    /// Connections whose 0-RTT was accepted.
    pub early_data_accepted: usize,
    /// Why each connection closed.
    pub closes: Vec<String>,
    /// Key updates the server initiated (RFC 9001 §6: one per connection, once the
    /// handshake is confirmed and a packet of the first phase acknowledged), so that the
    /// device's key-update path runs (and is painted) in every transaction.
    pub key_updates_initiated: usize,
    /// Key updates completed per closed connection (either side's), as the server counted.
    pub key_updates: Vec<u32>,
}

/// Runs the server on `socket` until `stop` is set; returns what it saw.
/// `nbiot`: the server's initial RTT is NB-IoT's 2 s (RFC 9002 §6.2.2), so its handshake
/// flight is not retransmitted before the device's answer can arrive.
pub fn serve(
    socket: UdpSocket,
    key_pem: &str,
    nbiot: bool,
    stop: Arc<AtomicBool>,
) -> Result<ServerLog> {
    let der = pem_der(key_pem)?;
    let provider = RustCrypto;
    let key = provider
        .signing_key(SignatureScheme::Ed25519, &der)
        .map_err(|e| anyhow!("server key: {e:?}"))?;
    let key: &'static _ = Box::leak(Box::new(key));
    let register: &'static Register =
        Box::leak(Box::new(Register(Mutex::new(mote_tls::StrikeRegister::new()))));
    let config: &'static ServerConfig<'static> = Box::leak(Box::new(ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn: &[b"h3"],
        identity: Some(ServerIdentity { key, x509_chain: &[] }),
        // The firmware's `psk` build (firmware/client/src/lib.rs).
        external_psks: &[mote_tls::ExternalPsk {
            identity: b"mote-device-1",
            key: &[0x6d; 32],
            hash: mote_crypto::HashAlgorithm::Sha256,
        }],
        client_auth: None,
        tickets: Some(TicketConfig {
            keys: Box::leak(Box::new([TicketKey {
                id: *b"qemu",
                aead: mote_crypto::AeadAlgorithm::Aes128Gcm,
                key: &[0x5a; 16],
            }])),
            lifetime_s: 3600,
            count: 1,
            max_age_skew_ms: 10_000,
        }),
        early_data: Some(mote_tls::EarlyDataConfig {
            anti_replay: register,
            context: b"mote xtask qemu server 0-RTT v1",
        }),
        defer_signatures: false,
    }));
    let epoch = StdInstant::now();
    let acceptor: ServerAcceptor<RustCrypto> = Box::new(move |now: Instant| {
        let storage = Storage {
            crypto: core::array::from_fn(|_| (vec![0; 4096], vec![0; 4096])),
            streams: core::array::from_fn(|_| (vec![0; 64 * 1024], vec![0; 64 * 1024])),
        };
        Some((ServerSession::new(RustCrypto, config, now.0 / 1000), storage))
    });
    let mut conn_config =
        if nbiot { ConnectionConfig::nb_iot_server() } else { ConnectionConfig::server() };
    // The slots (SERVER_STREAMS) are split between the two directions: a few requests and
    // the client's control and QPACK streams.
    conn_config.streams.max_streams_bidi = 4;
    conn_config.streams.max_streams_uni = 3;
    let table = (0..4).map(|_| Slot::new()).collect();
    let mut rng = mote_crypto::fast::SystemRng::new();
    let mut ep: ServerEndpoint<RustCrypto> = Endpoint::new(
        EndpointConfig::server(conn_config, 4),
        RustCrypto,
        acceptor,
        table,
        &mut rng,
    )
    .map_err(|e| anyhow!("server endpoint: {e:?}"))?;
    socket.set_read_timeout(Some(StdDuration::from_millis(5))).context("socket timeout")?;
    let mut log = ServerLog::default();
    // Per connection: its HTTP/3 session, requests, and whether it initiated its key update.
    let mut sessions: Vec<(ConnectionHandle, H3Session, Vec<Request>, bool)> = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut out = vec![0u8; 1500];
    let now = || Instant(epoch.elapsed().as_micros() as u64);
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                ep.handle_recv(now(), &RecvInfo::new(from), &mut buf[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e).context("server recv"),
        }
        if ep.poll_timeout().is_some_and(|t| t <= now()) {
            ep.handle_timeout(now());
        }
        let mut stopped = Vec::new();
        while let Some((h, e)) = ep.poll_event() {
            if !sessions.iter().any(|(sh, _, _, _)| *sh == h) {
                sessions.push((
                    h,
                    H3Session::new(mote_h3::Role::Server, mote_h3::Config::SERVER),
                    Vec::new(),
                    false,
                ));
            }
            match e {
                Event::HandshakeComplete => {
                    log.handshakes += 1;
                    if let Some(c) = ep.connection_ref(h) {
                        if c.tls().early_data_accepted() == Some(true) {
                            log.early_data_accepted += 1;
                        }
                    }
                }
                Event::StreamStopped { .. } => stopped.push((h, e)),
                Event::Closed => {
                    if let Some(c) = ep.connection_ref(h) {
                        if let Some(r) = c.close_reason() {
                            log.closes.push(format!("{r:?}"));
                        }
                        log.key_updates.push(c.stats().key_updates);
                    }
                }
                _ => {}
            }
        }
        for (h, session, reqs, updated) in sessions.iter_mut() {
            let Some(conn) = ep.connection(*h) else { continue };
            if conn.is_closed() {
                continue;
            }
            // RFC 9001 §6.1: allowed once the handshake is confirmed and a packet of the
            // current phase acknowledged; tried until it starts.
            if !*updated && conn.initiate_key_update() {
                *updated = true;
                log.key_updates_initiated += 1;
            }
            for (_, e) in stopped.iter().filter(|(sh, _)| sh == h) {
                let _ = session.on_quic_event(conn, *e);
            }
            let _ = session.open(conn);
            let requests = &mut log.requests;
            let _ = session.poll(conn, |_, _, st, e| match e {
                mote_h3::Event::Headers { fields, kind: mote_h3::HeadersKind::Message, .. } => {
                    let Ok(head) = mote_h3::message::parse_request(&fields) else { return };
                    let path = head.path.unwrap_or(b"");
                    let (status, body) = match head.method {
                        b"GET" => std::str::from_utf8(path)
                            .ok()
                            .and_then(|p| p.strip_prefix('/'))
                            .and_then(|p| p.parse::<usize>().ok())
                            .filter(|n| *n <= 1 << 20)
                            .map_or((404, 0), |n| (200, n)),
                        b"POST" => (200, 0),
                        _ => (404, 0),
                    };
                    requests.push(format!(
                        "{} {}",
                        String::from_utf8_lossy(head.method),
                        String::from_utf8_lossy(path)
                    ));
                    reqs.push(Request {
                        id: st.id(),
                        line: requests.len() - 1,
                        received: 0,
                        pattern_ok: true,
                        status,
                        body,
                        complete: false,
                        head_sent: false,
                        body_sent: 0,
                        done: false,
                    });
                }
                mote_h3::Event::Data(d) => {
                    if let Some(r) = reqs.iter_mut().find(|r| r.id == st.id()) {
                        r.pattern_ok &=
                            d.iter().enumerate().all(|(i, b)| *b == post_pattern(r.received + i));
                        r.received += d.len();
                    }
                }
                mote_h3::Event::Finished => {
                    if let Some(r) = reqs.iter_mut().find(|r| r.id == st.id()) {
                        r.complete = true;
                        if r.status == 200 && !r.pattern_ok {
                            r.status = 400;
                        }
                        if let Some(line) = requests.get_mut(r.line) {
                            line.push_str(&format!(" body={} -> {}", r.received, r.status));
                        }
                    }
                }
                _ => {}
            });
            let mut scratch = [0u8; 256];
            for r in reqs.iter_mut().filter(|r| r.complete && !r.done) {
                let object: Vec<u8> = (0..r.body).map(|i| b'A' + (i % 26) as u8).collect();
                let len = r.body.to_string();
                let fields: [(&[u8], &[u8]); 1] = [(b"content-length", len.as_bytes())];
                let _ = session.with_stream(conn, r.id, |h3, t, st| {
                    if !r.head_sent {
                        let response = mote_h3::Response::new(r.status).with_headers(&fields);
                        if h3
                            .send_response(t, st, &response, object.is_empty(), &mut scratch)
                            .is_err()
                        {
                            return;
                        }
                        r.head_sent = true;
                    }
                    while let Some(rest) = object.get(r.body_sent..).filter(|b| !b.is_empty()) {
                        match h3.send_data(t, st, rest, true) {
                            Ok(n) => r.body_sent += n,
                            Err(_) => return,
                        }
                    }
                    r.done = true;
                });
            }
            let _ = session.h3.flush(&mut mote_scenarios::h3::QuicTransport { conn });
        }
        while let Some(t) = ep.poll_transmit(now(), &mut out) {
            let seg = t.segment_size.unwrap_or(t.len);
            for chunk in out[..t.len].chunks(seg) {
                let _ = socket.send_to(chunk, t.destination);
            }
        }
    }
    Ok(log)
}

/// Byte `i` of the body the firmware POSTs (firmware/client/src/app.rs, `post_body`).
fn post_pattern(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

/// Binds the built-in server on an ephemeral localhost port.
pub fn bind() -> Result<(UdpSocket, SocketAddr)> {
    let socket = UdpSocket::bind("127.0.0.1:0").context("bind server socket")?;
    let addr = socket.local_addr()?;
    Ok((socket, addr))
}
