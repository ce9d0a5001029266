//! The firmware's stack in the simulator: mote-quic's device connection type
//! ([`mote_quic::device::DeviceConnection`]) driven by the HTTP/3 device client
//! ([`mote_h3::client::Client`] over [`mote_h3::device::DeviceTransport`]), against the
//! scenario server (mote's general `Connection` in a server endpoint, HTTP/3) over a
//! [`mote_sim`] link. [`run_device_connection`] runs one connection that GETs the object
//! `requests` times, one request at a time, as the firmware does; with a ticket from a
//! first connection it resumes and sends the first GET in 0-RTT.

use std::net::SocketAddr;

use mote_crypto::rustcrypto::RustCrypto;
use mote_h3::device::DeviceTransport;
use mote_quic::connection::{CloseReason, ConnectionConfig};
use mote_quic::device::{DeviceConnection, DeviceStorage, PEER_UNI};
use mote_quic::endpoint::Slot;
use mote_quic::{Endpoint, EndpointConfig};
use mote_sim::quic::QuicNode;
use mote_sim::{Duration, Instant, LinkProfile, Simulator};
use mote_sim::{Node, RecvMeta, Transmit};
use mote_tls::{ClientSession, Resumption, ServerSession, Ticket};

use super::{
    client_config, device_addr, identity, server_addr, server_config, server_storage, DeviceH3,
    DeviceTls, SeededRng, ServerAcceptor, ServerApp, ServerEndpoint, ServerNode, ALPN_H3,
    DEVICE_H3_CONFIG,
};

/// The device connection as the firmware types it (buffers on the heap here).
pub type DevConn = DeviceConnection<RustCrypto, DeviceTls, Vec<u8>, Vec<u8>, 16, 4>;

/// What a device-connection run did.
#[derive(Debug, Default)]
pub struct DevConnOutcome {
    /// Every request got its whole response.
    pub complete: bool,
    /// The response body of each request.
    pub responses: Vec<Vec<u8>>,
    /// The status of each request.
    pub statuses: Vec<Option<u16>>,
    /// The server's SETTINGS arrived.
    pub saw_settings: bool,
    /// How the device's connection ended.
    pub close: Option<CloseReason>,
    /// The 0-RTT verdict (resumed runs).
    pub early_data_accepted: Option<bool>,
    /// Key updates the device completed.
    pub key_updates: u32,
    /// The session ticket the run received, with its arrival time.
    pub ticket: Option<(Vec<u8>, Instant)>,
}

/// The device: its connection and HTTP/3 client, as the firmware's event loop drives them.
pub struct DevConnNode {
    conn: Box<DevConn>,
    h3: Box<DeviceH3>,
    path: Vec<u8>,
    requests: usize,
    /// The stream of each request sent.
    sent: Vec<u64>,
    out: DevConnOutcome,
    done: usize,
    closed: bool,
    updated: bool,
}

impl DevConnNode {
    fn drive(&mut self, now: Instant) {
        if self.conn.ticket_ready() {
            let mut buf = vec![0u8; 512];
            if let Some(n) = self.conn.take_ticket(&mut buf) {
                buf.truncate(n);
                self.out.ticket = Some((buf, now));
            }
        }
        let conn = &mut *self.conn;
        while let Some((id, code)) = conn.poll_stopped() {
            let _ = self.h3.on_stop_sending(&mut DeviceTransport { conn: &mut *conn }, id, code);
        }
        if conn.is_closed() || !(conn.is_handshake_complete() || conn.can_send_early_data()) {
            return;
        }
        let t = &mut DeviceTransport { conn: &mut *conn };
        if !self.h3.is_open() && self.h3.open(t).is_err() {
            return;
        }
        // One request at a time: the next once the previous response finished.
        if self.sent.len() < self.requests && self.sent.len() == self.done {
            let request = mote_h3::client::ClientRequest::get(b"server", &self.path);
            let mut scratch = [0u8; 128];
            if let Ok(id) = self.h3.request(t, &request, true, &mut scratch) {
                self.sent.push(id);
                self.out.responses.push(Vec::new());
                self.out.statuses.push(None);
            }
        }
        if let Some(k) = self.sent.len().checked_sub(1) {
            let (resp, status) = (&mut self.out.responses[k], &mut self.out.statuses[k]);
            let mut finished = false;
            let _ = self.h3.poll(t, |e| match e {
                mote_h3::client::Event::Response { status: s } if s >= 200 => *status = Some(s),
                mote_h3::client::Event::Data(d) => resp.extend_from_slice(d),
                mote_h3::client::Event::Finished => finished = true,
                _ => {}
            });
            if finished {
                self.done += 1;
            }
        } else {
            let _ = self.h3.poll(t, |_| {});
        }
        self.out.saw_settings = self.h3.peer_settings_received();
        // RFC 9001 §6: the device's own key update after the first response, as the
        // firmware does (tried until the connection can start it).
        if self.done > 0 && !self.updated {
            self.updated = self.conn.initiate_key_update();
        }
        if self.done == self.requests && !self.closed {
            self.out.complete = true;
            self.closed = true;
            self.conn.close(0x100, b"");
        }
    }
}

impl Node for DevConnNode {
    fn handle_datagram(&mut self, now: Instant, meta: RecvMeta, data: &mut [u8]) {
        self.conn.handle_datagram(now, meta.remote, data);
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.drive(now);
        let t = self.conn.poll_transmit(now, buf)?;
        Some(Transmit::new(t.destination, t.len))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        self.drive(now);
    }
}

/// The device's buffers as the firmware sizes them.
fn storage() -> DeviceStorage<Vec<u8>, Vec<u8>> {
    DeviceStorage {
        crypto: core::array::from_fn(|_| (vec![0; 1024], vec![0; 1024])),
        control: vec![0; 64],
        request: (vec![0; 1024], vec![0; 2048]),
        peer_uni: core::array::from_fn(|_| vec![0; 2048]),
    }
}

/// The firmware's connection configuration (the HTTP/3 streams allowed, RFC 9114 §6.2).
fn device_config(profile: &LinkProfile) -> ConnectionConfig {
    let mut c = ConnectionConfig::device().with_initial_rtt(profile.rtt());
    c.streams.max_streams_uni = PEER_UNI as u64;
    c
}

/// Runs the device connection over `profile` with `seed`: a first connection GETs the
/// object `requests` times; with `resume`, a second one resumes from its ticket and sends
/// its first GET in 0-RTT. Returns the outcome of the last connection.
pub fn run_device_connection(
    profile: LinkProfile,
    seed: u64,
    requests: usize,
    resume: bool,
) -> DevConnOutcome {
    let id = identity(&RustCrypto);
    let scfg = server_config(&id, true, ALPN_H3);
    let acceptor: ServerAcceptor<RustCrypto> = Box::new(move |now: Instant| {
        Some((ServerSession::new(RustCrypto, scfg, now.as_micros() / 1000), server_storage()))
    });
    let table = (0..4).map(|_| Slot::new()).collect();
    // The HTTP/3 server's stream limits ([`super::Setup::with_http3`]'s).
    let mut server_cfg = ConnectionConfig::server().with_initial_rtt(profile.rtt());
    server_cfg.streams.max_streams_bidi = (super::SERVER_STREAMS - 4) as u64;
    server_cfg.streams.max_streams_uni = 3;
    let server_ep: ServerEndpoint<RustCrypto> = match Endpoint::new(
        EndpointConfig::server(server_cfg, 4),
        RustCrypto,
        acceptor,
        table,
        &mut SeededRng(seed ^ 0x5e4e_4000),
    ) {
        Ok(ep) => ep,
        Err(e) => panic!("server endpoint: {e:?}"),
    };
    let mut sim = Simulator::new(seed);
    let server: ServerNode<RustCrypto> = QuicNode::new(server_ep, ServerApp::new(5120, true));
    sim.add_node(server, server_addr()).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = SeededRng(seed ^ 0xde70);
    let passes: &[(bool, SocketAddr)] = if resume {
        &[(false, SocketAddr::new([10, 0, 0, 3].into(), 5003)), (true, device_addr())]
    } else {
        &[(false, device_addr())]
    };
    let mut ticket: Option<(Vec<u8>, Instant)> = None;
    let mut last = DevConnOutcome::default();
    for &(resumed, addr) in passes {
        let now = sim.now();
        let resumption = ticket.as_ref().filter(|_| resumed).and_then(|(t, at)| {
            let bytes: &'static [u8] = Box::leak(t.clone().into_boxed_slice());
            let age_ms = u32::try_from((now - *at).as_micros() / 1000).unwrap_or(u32::MAX);
            Ticket::decode(bytes).ok().map(|ticket| Resumption { ticket, age_ms })
        });
        let remembered = resumption.map(|r| r.ticket.server_transport_parameters);
        let ccfg = client_config(id.spki, resumed, ALPN_H3);
        let tls = ClientSession::new(RustCrypto, ccfg, resumption);
        let mut conn = match DevConn::client(
            &device_config(&profile),
            RustCrypto,
            tls,
            storage(),
            now,
            server_addr(),
            &mut rng,
        ) {
            Ok(c) => Box::new(c),
            Err(e) => panic!("device connection: {e:?}"),
        };
        if let Some(tp) = remembered {
            conn.apply_remembered_params(tp);
        }
        let node = DevConnNode {
            conn,
            h3: Box::new(DeviceH3::new(DEVICE_H3_CONFIG)),
            path: b"/5120".to_vec(),
            requests,
            sent: Vec::new(),
            out: DevConnOutcome::default(),
            done: 0,
            closed: false,
            updated: false,
        };
        let node = sim.add_node(node, addr).unwrap_or_else(|e| panic!("{e}"));
        sim.connect(addr, server_addr(), &profile).unwrap_or_else(|e| panic!("{e}"));
        let deadline = sim.now() + Duration::from_secs(300);
        let _ = sim.run_until(deadline, |sim| {
            sim.node::<DevConnNode>(node).is_some_and(|n| {
                (n.conn.is_closed() && n.out.ticket.is_some()) || n.conn.is_drained()
            })
        });
        // The closing period, and the server's close settles.
        let settle = sim.now() + Duration::from_secs(10);
        let _ = sim.run_to(settle);
        if let Some(n) = sim.node_mut::<DevConnNode>(node) {
            n.out.close = n.conn.close_reason();
            n.out.early_data_accepted = n.conn.tls().early_data_accepted();
            n.out.key_updates = n.conn.stats().key_updates;
            ticket = n.out.ticket.clone();
            last = core::mem::take(&mut n.out);
        }
    }
    last
}
