//! In-memory connection pairs (quinn-style): a client and a server joined by two queues of
//! datagrams, driven in virtual time, with hooks to drop, reorder or rewrite datagrams.

use std::boxed::Box;
use std::collections::VecDeque;
use std::vec;
use std::vec::Vec;

use mote_crypto::rustcrypto::{RustCrypto, SigningKey as RcSigningKey};
use mote_crypto::{CryptoProvider, CryptoRng, SignatureScheme, SigningKey as _};
use mote_tls::{ClientConfig, ClientSession, ServerAuth, ServerConfig, ServerIdentity, ServerSession};

use super::*;
use crate::packet::{self, Header};
use crate::stream::Read;

pub(crate) const P: RustCrypto = RustCrypto;

/// A deterministic RNG (SplitMix64) — tests only.
#[derive(Clone, Debug)]
pub(crate) struct TestRng(pub(crate) u64);

impl CryptoRng for TestRng {
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

pub(crate) type Client = Connection<RustCrypto, ClientSession<'static, RustCrypto>, Vec<u8>, Vec<u8>, 4, 32, 8>;
pub(crate) type Server = Connection<RustCrypto, ServerSession<'static, RustCrypto>, Vec<u8>, Vec<u8>, 4, 32, 8>;

fn ed25519_pkcs8(seed: u8) -> Vec<u8> {
    let mut v = hex_literal::hex!("302e020100300506032b657004220420").to_vec();
    v.extend_from_slice(&[seed; 32]);
    v
}

/// Leaked configurations, so sessions can be `'static`.
pub(crate) struct Configs {
    pub(crate) client: &'static ClientConfig<'static>,
    pub(crate) server: &'static ServerConfig<'static>,
}

pub(crate) fn configs() -> Configs {
    let key: &'static RcSigningKey =
        Box::leak(Box::new(P.signing_key(SignatureScheme::Ed25519, &ed25519_pkcs8(7)).unwrap()));
    let mut spki = vec![0u8; 64];
    let n = mote_tls::encode_spki(key.scheme(), key.public_key(), &mut spki).unwrap();
    spki.truncate(n);
    let spki: &'static [u8] = Box::leak(spki.into_boxed_slice());
    let pinned: &'static [&'static [u8]] = Box::leak(Box::new([spki]));
    let alpn: &'static [&'static [u8]] = &[b"mote"];
    let client = Box::leak(Box::new(ClientConfig {
        server_name: None,
        alpn,
        server_auth: ServerAuth::RawPublicKeys(pinned),
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    }));
    let server = Box::leak(Box::new(ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn,
        identity: Some(ServerIdentity { key, x509_chain: &[] }),
        external_psks: &[],
        client_auth: None,
        tickets: None,
        early_data: None,
        defer_signatures: false,
    }));
    Configs { client, server }
}

pub(crate) fn storage(crypto: usize, stream: usize) -> Storage<Vec<u8>, Vec<u8>, 4> {
    Storage {
        crypto: core::array::from_fn(|_| (vec![0; crypto], vec![0; crypto])),
        streams: core::array::from_fn(|_| (vec![0; stream], vec![0; stream])),
    }
}

pub(crate) fn addr(s: &str) -> core::net::SocketAddr {
    s.parse().unwrap()
}

/// What happens to a datagram in flight.
pub(crate) enum Fate {
    Deliver,
    Drop,
}

/// A datagram in flight.
struct InFlight {
    at: Instant,
    data: Vec<u8>,
}

/// Which way a datagram goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    ToServer,
    ToClient,
}

/// A client and a server over an in-memory link with a fixed one-way delay.
pub(crate) struct Pair {
    pub(crate) now: Instant,
    pub(crate) client: Client,
    pub(crate) server: Option<Server>,
    pub(crate) server_config: ConnectionConfig,
    configs: Configs,
    pub(crate) delay: Duration,
    to_server: VecDeque<InFlight>,
    to_client: VecDeque<InFlight>,
    /// Decides each datagram's fate: (direction, index among that direction's datagrams,
    /// bytes).
    pub(crate) filter: Box<dyn FnMut(Dir, u64, &mut Vec<u8>) -> Fate>,
    sent: [u64; 2],
    pub(crate) log: Vec<(Instant, Dir, usize, Vec<u8>)>,
    rng: TestRng,
}

pub(crate) const CLIENT_ADDR: &str = "10.0.0.2:5000";
pub(crate) const SERVER_ADDR: &str = "192.0.2.1:443";

impl Pair {
    pub(crate) fn new(client_config: ConnectionConfig, server_config: ConnectionConfig) -> Self {
        Self::with_storage(client_config, server_config, storage(4096, 16384))
    }

    pub(crate) fn with_storage(
        client_config: ConnectionConfig,
        server_config: ConnectionConfig,
        st: Storage<Vec<u8>, Vec<u8>, 4>,
    ) -> Self {
        let configs = configs();
        let mut rng = TestRng(1);
        let tls = ClientSession::new(P, configs.client, None);
        let client = Client::client(
            &client_config,
            P,
            tls,
            st,
            Instant::ZERO,
            addr(SERVER_ADDR),
            &mut rng,
        )
        .unwrap();
        Self {
            now: Instant::ZERO,
            client,
            server: None,
            server_config,
            configs,
            delay: Duration::from_millis(10),
            to_server: VecDeque::new(),
            to_client: VecDeque::new(),
            filter: Box::new(|_, _, _| Fate::Deliver),
            sent: [0; 2],
            log: Vec::new(),
            rng,
        }
    }

    pub(crate) fn server(&mut self) -> &mut Server {
        self.server.as_mut().expect("server connection")
    }

    fn accept(&mut self, data: &[u8]) {
        let Ok(p) = packet::parse(data, 8, false) else { return };
        let Header::Long(h) = p.header else { return };
        let tls = ServerSession::new(P, self.configs.server, 0);
        let conn = Server::server(
            &self.server_config,
            P,
            tls,
            storage(4096, 16384),
            self.now,
            addr(CLIENT_ADDR),
            h.dcid,
            h.scid,
            h.version,
            &mut self.rng,
        )
        .unwrap();
        self.server = Some(conn);
    }

    /// Sends everything both sides have to send now.
    pub(crate) fn flush(&mut self) {
        let mut buf = vec![0u8; 65536];
        loop {
            let mut any = false;
            while let Some(t) = self.client.poll_transmit(self.now, &mut buf) {
                any = true;
                let data = buf[..t.len].to_vec();
                self.enqueue(Dir::ToServer, &data, t.segment_size);
            }
            while let Some(t) = self.server.as_mut().and_then(|s| s.poll_transmit(self.now, &mut buf)) {
                any = true;
                let data = buf[..t.len].to_vec();
                self.enqueue(Dir::ToClient, &data, t.segment_size);
            }
            if !any {
                break;
            }
        }
    }

    fn enqueue(&mut self, dir: Dir, data: &[u8], seg: Option<usize>) {
        let seg = seg.unwrap_or(data.len()).max(1);
        for d in data.chunks(seg) {
            let i = match dir {
                Dir::ToServer => 0,
                Dir::ToClient => 1,
            };
            let n = self.sent[i];
            self.sent[i] += 1;
            let mut d = d.to_vec();
            self.log.push((self.now, dir, d.len(), d.clone()));
            if let Fate::Drop = (self.filter)(dir, n, &mut d) {
                continue;
            }
            let f = InFlight { at: self.now + self.delay, data: d };
            match dir {
                Dir::ToServer => self.to_server.push_back(f),
                Dir::ToClient => self.to_client.push_back(f),
            }
        }
    }

    fn next_time(&self) -> Option<Instant> {
        let mut t = self.client.poll_timeout();
        let mut consider = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t: Instant| t.min(x)));
            }
        };
        consider(self.server.as_ref().and_then(|s| s.poll_timeout()));
        consider(self.to_server.front().map(|f| f.at));
        consider(self.to_client.front().map(|f| f.at));
        t
    }

    /// Advances to the next event and processes it. False when nothing is left.
    pub(crate) fn step(&mut self) -> bool {
        self.flush();
        let Some(t) = self.next_time() else { return false };
        self.now = self.now.max(t);
        let now = self.now;
        while self.to_server.front().is_some_and(|f| f.at <= now) {
            let mut f = self.to_server.pop_front().unwrap();
            if self.server.is_none() {
                self.accept(&f.data);
            }
            if let Some(s) = self.server.as_mut() {
                s.handle_datagram(now, addr(CLIENT_ADDR), &mut f.data);
            }
        }
        while self.to_client.front().is_some_and(|f| f.at <= now) {
            let mut f = self.to_client.pop_front().unwrap();
            self.client.handle_datagram(now, addr(SERVER_ADDR), &mut f.data);
        }
        if self.client.poll_timeout().is_some_and(|t| t <= now) {
            self.client.handle_timeout(now);
        }
        if let Some(s) = self.server.as_mut() {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
        }
        self.flush();
        true
    }

    /// Steps until `done` holds or `limit` of virtual time passes. Returns whether `done`
    /// held.
    pub(crate) fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
        let end = self.now + limit;
        let mut steps = 0u64;
        while self.now <= end {
            if done(self) {
                return true;
            }
            if !self.step() {
                return done(self);
            }
            steps += 1;
            assert!(steps < 2_000_000, "runaway");
        }
        done(self)
    }

    pub(crate) fn handshake(&mut self) {
        let ok = self.run_until(Duration::from_secs(60), |p| {
            p.client.is_handshake_confirmed()
                && p.server.as_ref().is_some_and(|s| s.is_handshake_confirmed())
        });
        assert!(ok, "handshake did not complete: {:?} {:?}", self.client.close_reason(), self.server.as_ref().and_then(|s| s.close_reason()));
    }
}

fn cfg() -> ConnectionConfig {
    ConnectionConfig::device()
}

fn server_cfg() -> ConnectionConfig {
    ConnectionConfig::server()
}

/// Reads everything readable on `id` into `out`; returns true at FIN.
pub(crate) fn drain<C2: TlsSession>(
    conn: &mut Connection<RustCrypto, C2, Vec<u8>, Vec<u8>, 4, 32, 8>,
    id: StreamId,
    out: &mut Vec<u8>,
) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match conn.stream_recv(id, &mut buf) {
            Some(Read::Data(n)) => out.extend_from_slice(&buf[..n]),
            Some(Read::Fin) => return true,
            _ => return false,
        }
    }
}

#[test]
fn handshake_completes() {
    let mut p = Pair::new(cfg(), server_cfg());
    p.handshake();
    assert!(p.client.is_handshake_complete());
    assert_eq!(p.client.tls().alpn(), Some(&b"mote"[..]));
    let mut events = Vec::new();
    while let Some(e) = p.client.poll_event() {
        events.push(e);
    }
    assert_eq!(events, [Event::HandshakeComplete, Event::HandshakeConfirmed]);
    // The client's first datagram is a padded Initial.
    let (_, dir, len, _) = &p.log[0];
    assert_eq!((*dir, *len), (Dir::ToServer, 1200));
    // Initial and Handshake keys are gone on both sides.
    assert!(p.client.hs.keys.initial.is_none() && p.client.hs.keys.handshake.is_none());
    let s = p.server();
    assert!(s.hs.keys.initial.is_none() && s.hs.keys.handshake.is_none());
}

/// Sends `data` from the client on a new bidirectional stream and returns what the server
/// read, plus the stream.
pub(crate) fn transfer(p: &mut Pair, data: &[u8], limit: Duration) -> (Vec<u8>, StreamId) {
    let id = p.client.stream_open(StreamDir::Bidi).unwrap();
    let mut written = 0usize;
    let mut got = Vec::new();
    let mut fin = false;
    let ok = p.run_until(limit, |p| {
        if written < data.len() {
            written += p.client.stream_send(id, &data[written..]).unwrap();
            if written == data.len() {
                p.client.stream_finish(id).unwrap();
            }
        }
        if let Some(s) = p.server.as_mut() {
            fin |= drain(s, id, &mut got);
        }
        fin
    });
    assert!(ok, "transfer did not finish: {} of {} bytes, {:?}", got.len(), data.len(), p.client.close_reason());
    (got, id)
}

pub(crate) fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + i / 251) as u8).collect()
}

#[test]
fn small_transfer_and_response() {
    let mut p = Pair::new(cfg(), server_cfg());
    p.handshake();
    let req = b"GET /object".to_vec();
    let (got, id) = transfer(&mut p, &req, Duration::from_secs(10));
    assert_eq!(got, req);
    // The server answers with 5 KB on the same stream.
    let body = pattern(5 * 1024);
    let mut written = 0;
    let mut resp = Vec::new();
    let ok = p.run_until(Duration::from_secs(10), |p| {
        let s = p.server.as_mut().unwrap();
        if written < body.len() {
            written += s.stream_send(id, &body[written..]).unwrap();
            if written == body.len() {
                s.stream_finish(id).unwrap();
            }
        }
        drain(&mut p.client, id, &mut resp)
    });
    assert!(ok);
    assert_eq!(resp, body);
}
