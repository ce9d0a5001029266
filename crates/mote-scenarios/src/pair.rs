//! A client and a server endpoint in the simulator, for the transport-feature scenarios
//! (address validation, anti-amplification, handshake loss, DATAGRAM frames, key updates,
//! version negotiation): the client uploads a request, the server answers with an object,
//! optionally with datagrams both ways and a key update mid-transfer. Unlike [`crate::run`]
//! (the demo's device transaction), every knob of the server endpoint is exposed: its
//! [`RetryPolicy`], an X.509 chain instead of a raw public key, the versions each side
//! speaks. [`run_pair`] returns both sides' counters and the simulator's trace.

use std::net::SocketAddr;

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{CryptoProvider, SignatureScheme};
use mote_quic::connection::{CloseReason, ConnectionStats, Storage};
use mote_quic::endpoint::{EndpointStats, NoAccept, RetryPolicy, Slot};
use mote_quic::frame::StreamDir;
use mote_quic::stream::{Read, StreamId};
use mote_quic::transport_params::Side;
use mote_quic::{Connection, ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event};
use mote_quic::{Instant, Version};
use mote_sim::quic::{Application, QuicNode};
use mote_sim::{Duration, LinkProfile, Simulator, Trace};
use mote_tls::{
    ClientConfig, ClientSession, ServerAuth, ServerConfig, ServerIdentity, ServerSession,
};

use crate::{object, server_addr, SeededRng};

/// Bytes of the client's TLS receive buffer: a Certificate message of a long X.509 chain
/// must fit (RFC 9000 §7.5 asks for 4096 at least).
pub const PAIR_TLS_RX: usize = 16 * 1024;
/// CRYPTO buffers of each level on both sides (a 9-certificate chain is ~6 KB).
pub const PAIR_CRYPTO: usize = 16 * 1024;

/// The client's TLS session.
pub type PairClientTls = ClientSession<'static, RustCrypto, PAIR_TLS_RX>;
/// The client connection.
pub type PairClientConnection = Connection<RustCrypto, PairClientTls, Vec<u8>, Vec<u8>, 4, 256, 32>;
/// The client endpoint.
pub type PairClientEndpoint = Endpoint<
    RustCrypto,
    PairClientTls,
    Vec<u8>,
    Vec<u8>,
    NoAccept,
    Vec<Slot<PairClientConnection>>,
    4,
    256,
    32,
>;
/// The server connection.
pub type PairServerConnection =
    Connection<RustCrypto, ServerSession<'static, RustCrypto>, Vec<u8>, Vec<u8>, 4, 256, 32>;
type PairAcceptor = Box<
    dyn FnMut(
        Instant,
    ) -> Option<(ServerSession<'static, RustCrypto>, Storage<Vec<u8>, Vec<u8>, 4>)>,
>;
/// The server endpoint.
pub type PairServerEndpoint = Endpoint<
    RustCrypto,
    ServerSession<'static, RustCrypto>,
    Vec<u8>,
    Vec<u8>,
    PairAcceptor,
    Vec<Slot<PairServerConnection>>,
    4,
    256,
    32,
>;

/// An X.509 server identity: the chain (end-entity first), the end-entity's PKCS#8 key
/// (Ed25519) and the trust anchor the client pins.
#[derive(Clone, Debug)]
pub struct X509Identity {
    /// DER certificates, end-entity first.
    pub chain: Vec<Vec<u8>>,
    /// The end-entity key, PKCS#8 (Ed25519).
    pub leaf_key_pkcs8: Vec<u8>,
    /// The DER certificate the client trusts (the chain's root).
    pub anchor: Vec<u8>,
    /// The DNS name the end-entity certificate carries.
    pub server_name: String,
}

/// One scenario.
#[derive(Clone, Debug)]
pub struct PairSetup {
    /// The link.
    pub profile: LinkProfile,
    /// The run's seed.
    pub seed: u64,
    /// Client connection settings (its `version` is the version of its first Initial).
    pub client: ConnectionConfig,
    /// Server connection settings.
    pub server: ConnectionConfig,
    /// The server's Retry policy.
    pub retry: RetryPolicy,
    /// Request bytes the client sends on one bidirectional stream.
    pub upload: usize,
    /// Object bytes the server answers with.
    pub download: usize,
    /// Datagrams each side sends once the handshake completes (RFC 9221; both configs need
    /// a max_datagram_frame_size).
    pub datagrams: usize,
    /// Who starts a key update once half of the object crossed, if anyone.
    pub key_update: Option<Side>,
    /// An X.509 chain instead of the default raw public key.
    pub x509: Option<X509Identity>,
    /// Connections made one after the other; each after the first presents the NEW_TOKEN
    /// token of the previous one.
    pub connections: usize,
    /// Give up after this much virtual time per connection.
    pub limit: Duration,
}

impl PairSetup {
    /// A 100-byte request and a 10 KB object over `profile`, no Retry, one connection.
    pub fn new(profile: LinkProfile, seed: u64) -> Self {
        Self {
            profile,
            seed,
            client: ConnectionConfig::device(),
            server: ConnectionConfig::server(),
            retry: RetryPolicy::Never,
            upload: 100,
            download: 10_000,
            datagrams: 0,
            key_update: None,
            x509: None,
            connections: 1,
            limit: Duration::from_secs(120),
        }
    }
}

/// What one connection of a run saw.
#[derive(Clone, Debug, Default)]
pub struct PairConnection {
    /// The handshake completed at the client.
    pub handshake: bool,
    /// The server read the whole request and the client the whole object, byte-exact.
    pub complete: bool,
    /// The client's counters at the end.
    pub client: ConnectionStats,
    /// The server connection's counters at the end (or when it closed).
    pub server: ConnectionStats,
    /// Datagrams each side received: (client, server), checked byte-exact.
    pub datagrams_received: (usize, usize),
    /// The version of the client connection at the end.
    pub version: Option<Version>,
    /// Why the client connection closed, if it did before the end of the transfer.
    pub client_close: Option<CloseReason>,
    /// The client received a NEW_TOKEN token.
    pub got_token: bool,
}

/// What a run saw.
#[derive(Clone, Debug)]
pub struct PairOutcome {
    /// Each connection, in order.
    pub connections: Vec<PairConnection>,
    /// The server endpoint's counters.
    pub server_endpoint: EndpointStats,
    /// The simulator's trace of the whole run.
    pub trace: Trace,
}

/// The datagram payload number `i` from `side`.
fn datagram_payload(side: Side, i: usize) -> Vec<u8> {
    let tag = if side == Side::Client { b'c' } else { b's' };
    let mut v = vec![tag; 40 + i % 50];
    v[1] = i as u8;
    v
}

/// The client: connect, send the request, read the object, datagrams, key update.
struct ClientApp {
    tls: Option<PairClientTls>,
    /// The previous connection's NEW_TOKEN token and that connection's version.
    token: Option<(Vec<u8>, Version)>,
    handle: Option<ConnectionHandle>,
    setup: PairSetup,
    request: Vec<u8>,
    stream: Option<StreamId>,
    written: usize,
    got: Vec<u8>,
    fin: bool,
    datagrams_sent: usize,
    datagrams_ok: usize,
    updated: bool,
    out: PairConnection,
    new_token: Option<(Vec<u8>, Version)>,
    done: bool,
}

impl Application<PairClientEndpoint> for ClientApp {
    fn drive(&mut self, now: Instant, ep: &mut PairClientEndpoint) {
        if self.handle.is_none() {
            if let Some(tls) = self.tls.take() {
                // RFC 9369 §5: the token is used only if this connection starts in its
                // version.
                let (token, version) = self.token.take().unwrap_or((Vec::new(), Version::V1));
                self.handle = ep
                    .connect_with_token(now, server_addr(), tls, pair_storage(), &token, version)
                    .ok();
            }
        }
        while let Some((_, e)) = ep.poll_event() {
            if e == Event::HandshakeComplete {
                self.out.handshake = true;
            }
        }
        let Some(conn) = self.handle.and_then(|h| ep.connection(h)) else { return };
        self.out.version = Some(conn.version());
        self.out.client = conn.stats();
        if conn.is_closed() {
            if self.out.client_close.is_none() && !self.done {
                self.out.client_close = conn.close_reason();
            }
            return;
        }
        let mut t = [0u8; 256];
        if let Some((n, version)) = conn.take_token(&mut t) {
            self.new_token = Some((t[..n].to_vec(), version));
            self.out.got_token = true;
        }
        if !conn.is_handshake_complete() {
            return;
        }
        if self.stream.is_none() {
            self.stream = conn.stream_open(StreamDir::Bidi).ok();
        }
        let Some(id) = self.stream else { return };
        if self.written < self.request.len() {
            self.written += conn.stream_send(id, &self.request[self.written..]).unwrap_or(0);
            if self.written == self.request.len() {
                let _ = conn.stream_finish(id);
            }
        }
        while self.datagrams_sent < self.setup.datagrams {
            if conn.datagram_send(&datagram_payload(Side::Client, self.datagrams_sent)).is_err() {
                break;
            }
            self.datagrams_sent += 1;
        }
        let mut d = [0u8; 1500];
        while let Some(n) = conn.datagram_recv(&mut d) {
            if d.get(..n) == Some(&datagram_payload(Side::Server, usize::from(d[1]))[..]) {
                self.datagrams_ok += 1;
            }
        }
        self.out.datagrams_received.0 = self.datagrams_ok;
        let mut buf = [0u8; 16 * 1024];
        while !self.fin {
            match conn.stream_recv(id, &mut buf) {
                Some(Read::Data(n)) => self.got.extend_from_slice(&buf[..n]),
                Some(Read::Fin) => self.fin = true,
                _ => break,
            }
        }
        if self.setup.key_update == Some(Side::Client)
            && !self.updated
            && self.got.len() >= self.setup.download / 2
        {
            self.updated = conn.initiate_key_update();
        }
        let datagrams_done = self.setup.datagrams == 0 || self.datagrams_ok > 0;
        if self.fin && !self.done && datagrams_done {
            self.done = true;
            self.out.complete = self.got == object(self.setup.download);
            self.got = Vec::new();
            self.out.client = conn.stats();
            conn.close(0, b"done");
        }
    }
}

/// One connection the server serves.
struct Served {
    handle: ConnectionHandle,
    stream: Option<StreamId>,
    request: Vec<u8>,
    fin: bool,
    answered: usize,
    datagrams_ok: usize,
}

/// The server: read each request to its FIN, answer with the object.
struct ServerApp {
    setup: PairSetup,
    /// The object and the expected request.
    object: Vec<u8>,
    request: Vec<u8>,
    conns: Vec<Served>,
    /// Per connection: handle, counters, request intact, datagrams received.
    results: Vec<(ConnectionHandle, ConnectionStats, bool, usize)>,
}

impl Application<PairServerEndpoint> for ServerApp {
    fn drive(&mut self, _now: Instant, ep: &mut PairServerEndpoint) {
        let mut new = Vec::new();
        while let Some((h, e)) = ep.poll_event() {
            match e {
                Event::HandshakeComplete => new.push(h),
                Event::StreamOpened(id) => {
                    if let Some(c) = self.conns.iter_mut().find(|c| c.handle == h) {
                        c.stream.get_or_insert(id);
                    }
                }
                _ => {}
            }
        }
        for handle in new {
            self.conns.push(Served {
                handle,
                stream: None,
                request: Vec::new(),
                fin: false,
                answered: 0,
                datagrams_ok: 0,
            });
        }
        let object = &self.object;
        let mut buf = [0u8; 16 * 1024];
        for Served { handle: h, stream, request: req, fin, answered, datagrams_ok: dgrams_ok } in
            self.conns.iter_mut()
        {
            let Some(conn) = ep.connection(*h) else { continue };
            if stream.is_none() {
                *stream = conn.live_streams().next();
            }
            let mut d = [0u8; 1500];
            while let Some(n) = conn.datagram_recv(&mut d) {
                if d.get(..n) == Some(&datagram_payload(Side::Client, usize::from(d[1]))[..]) {
                    *dgrams_ok += 1;
                    // Answer each datagram with one of ours, up to the setup's count.
                    if *dgrams_ok <= self.setup.datagrams {
                        let _ = conn.datagram_send(&datagram_payload(Side::Server, *dgrams_ok - 1));
                    }
                }
            }
            let Some(id) = *stream else { continue };
            while !*fin {
                match conn.stream_recv(id, &mut buf) {
                    Some(Read::Data(n)) => req.extend_from_slice(&buf[..n]),
                    Some(Read::Fin) => *fin = true,
                    _ => break,
                }
            }
            if *fin && *answered < object.len() {
                *answered += conn.stream_send(id, &object[*answered..]).unwrap_or(0);
                if *answered == object.len() {
                    let _ = conn.stream_finish(id);
                }
            }
            if self.setup.key_update == Some(Side::Server) && *answered >= object.len() / 2 {
                // Retried until allowed (an acknowledged packet of the current phase).
                if conn.stats().key_updates == 0 {
                    let _ = conn.initiate_key_update();
                }
            }
            let stats = conn.stats();
            let ok = *req == self.request;
            match self.results.iter_mut().find(|r| r.0 == *h) {
                Some(r) => *r = (*h, stats, ok, *dgrams_ok),
                None => self.results.push((*h, stats, ok, *dgrams_ok)),
            }
        }
    }
}

fn pair_storage() -> Storage<Vec<u8>, Vec<u8>, 4> {
    Storage {
        crypto: core::array::from_fn(|_| (vec![0; PAIR_CRYPTO], vec![0; PAIR_CRYPTO])),
        streams: core::array::from_fn(|_| (vec![0; 256 * 1024], vec![0; 256 * 1024])),
    }
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

fn leak<T>(x: T) -> &'static T {
    Box::leak(Box::new(x))
}

fn leak_bytes(v: &[u8]) -> &'static [u8] {
    Box::leak(v.to_vec().into_boxed_slice())
}

/// The TLS configurations of both sides.
fn tls_configs(
    setup: &PairSetup,
) -> (&'static ClientConfig<'static>, &'static ServerConfig<'static>) {
    let alpn: &'static [&'static [u8]] = &[b"mote-pair"];
    let key_pkcs8 = match &setup.x509 {
        Some(x) => x.leaf_key_pkcs8.clone(),
        None => ed25519_pkcs8(0x42),
    };
    let key = RustCrypto
        .signing_key(SignatureScheme::Ed25519, &key_pkcs8)
        .unwrap_or_else(|_| panic!("Ed25519 signing key"));
    let key: &'static _ = leak(key);
    let (chain, server_auth, server_name): (&'static [&'static [u8]], ServerAuth<'static>, _) =
        match &setup.x509 {
            Some(x) => {
                let chain: Vec<&'static [u8]> = x.chain.iter().map(|c| leak_bytes(c)).collect();
                let anchor_der = mote_tls::pki_types::CertificateDer::from(leak_bytes(&x.anchor));
                let anchor = mote_tls::webpki::anchor_from_trusted_cert(leak(anchor_der))
                    .unwrap_or_else(|e| panic!("trust anchor: {e:?}"));
                let anchors: &'static [_] = Box::leak(vec![anchor].into_boxed_slice());
                (
                    Box::leak(chain.into_boxed_slice()),
                    ServerAuth::X509(mote_tls::X509Verifier { anchors }),
                    Some(leak_bytes(x.server_name.as_bytes())),
                )
            }
            None => {
                use mote_crypto::SigningKey as _;
                let mut spki = vec![0u8; 64];
                let n = mote_tls::encode_spki(key.scheme(), key.public_key(), &mut spki)
                    .unwrap_or_else(|_| panic!("SPKI"));
                let spki: &'static [u8] = leak_bytes(&spki[..n]);
                let pinned: &'static [&'static [u8]] = Box::leak(vec![spki].into_boxed_slice());
                (&[], ServerAuth::RawPublicKeys(pinned), None)
            }
        };
    let client = leak(ClientConfig {
        server_name,
        alpn,
        server_auth,
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    });
    let server = leak(ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn,
        identity: Some(ServerIdentity { key, x509_chain: chain }),
        external_psks: &[],
        client_auth: None,
        tickets: None,
        early_data: None,
        defer_signatures: false,
    });
    (client, server)
}

/// The client's address for connection `k` (each connection from its own port).
pub fn pair_client_addr(k: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2], 6000 + k as u16))
}

/// Runs `setup`: `setup.connections` connections one after the other.
pub fn run_pair(setup: &PairSetup) -> PairOutcome {
    let (ccfg, scfg) = tls_configs(setup);
    let mut sim = Simulator::new(setup.seed);
    let acceptor: PairAcceptor = Box::new(move |now: Instant| {
        Some((ServerSession::new(RustCrypto, scfg, now.as_micros() / 1000), pair_storage()))
    });
    let table = (0..8).map(|_| Slot::new()).collect();
    let server_ep: PairServerEndpoint = Endpoint::new(
        EndpointConfig::server(setup.server, 8).with_retry(setup.retry),
        RustCrypto,
        acceptor,
        table,
        &mut SeededRng(setup.seed ^ 0x5e4e_4000),
    )
    .unwrap_or_else(|e| panic!("server endpoint: {e:?}"));
    let server_app = ServerApp {
        setup: setup.clone(),
        object: object(setup.download),
        request: object(setup.upload),
        conns: Vec::new(),
        results: Vec::new(),
    };
    let server = sim
        .add_node(QuicNode::new(server_ep, server_app), server_addr())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = SeededRng(setup.seed ^ 0xc11e_0000);
    let mut token: Option<(Vec<u8>, Version)> = None;
    let mut connections = Vec::new();
    type ClientNode = QuicNode<PairClientEndpoint, ClientApp>;
    type ServerNode = QuicNode<PairServerEndpoint, ServerApp>;
    for k in 0..setup.connections.max(1) {
        let mut tls = ClientSession::new(RustCrypto, ccfg, None);
        // The certificates' validity (rcgen's defaults span decades).
        tls.set_unix_time(1_750_000_000);
        let ep: PairClientEndpoint = Endpoint::new(
            EndpointConfig::client(setup.client),
            RustCrypto,
            NoAccept,
            vec![Slot::new()],
            &mut rng,
        )
        .unwrap_or_else(|e| panic!("client endpoint: {e:?}"));
        let app = ClientApp {
            tls: Some(tls),
            token: token.take(),
            handle: None,
            setup: setup.clone(),
            request: object(setup.upload),
            stream: None,
            written: 0,
            got: Vec::new(),
            fin: false,
            datagrams_sent: 0,
            datagrams_ok: 0,
            updated: false,
            out: PairConnection::default(),
            new_token: None,
            done: false,
        };
        let addr = pair_client_addr(k);
        let node = sim.add_node(QuicNode::new(ep, app), addr).unwrap_or_else(|e| panic!("{e}"));
        sim.connect(addr, server_addr(), &setup.profile).unwrap_or_else(|e| panic!("{e}"));
        let deadline = sim.now() + setup.limit;
        let _ = sim.run_until(deadline, |sim| {
            sim.node::<ClientNode>(node).is_some_and(|n| n.endpoint.is_empty())
        });
        // Let the server's side settle (closing, draining).
        let settle = sim.now() + Duration::from_secs(5);
        let _ = sim.run_to(settle);
        let Some(n) = sim.node::<ClientNode>(node) else { continue };
        let mut out = n.app.out.clone();
        token = n.app.new_token.clone();
        if let Some(s) = sim.node::<ServerNode>(server) {
            if let Some(r) = s.app.results.get(k) {
                out.server = r.1;
                out.complete &= r.2;
                out.datagrams_received.1 = r.3;
            }
        }
        connections.push(out);
    }
    let server_endpoint =
        sim.node::<ServerNode>(server).map(|n| n.endpoint.stats()).unwrap_or_default();
    PairOutcome { connections, server_endpoint, trace: sim.trace().clone() }
}
