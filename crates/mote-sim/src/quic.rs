//! Running mote-quic endpoints and connections in the simulator (feature `quic`).
//!
//! [`QuicNode`] wraps anything with the sans-IO shape of [`SansIo`] — a
//! [`mote_quic::Endpoint`] or a single [`mote_quic::Connection`] — together with an
//! [`Application`] that drives it: after every input (a datagram, a timer) and before the
//! simulator polls for transmits, the application sees the endpoint and may open streams,
//! read, write or close. The simulator's clock is the connection's clock.

use std::net::SocketAddr;

use mote_crypto::CryptoProvider;
use mote_quic::connection::{RecvInfo, TlsSession};
use mote_quic::endpoint::{Accept, Slot};
use mote_quic::recovery::Ecn as QuicEcn;
use mote_quic::{Connection, Endpoint, Instant};

use crate::node::{Ecn, Node, RecvMeta, Transmit};

/// The sans-IO calls the simulator makes, implemented for mote-quic's endpoint and
/// connection.
pub trait SansIo {
    /// A datagram (or GRO batch) arrived.
    fn recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]);
    /// The next datagram or GSO batch.
    fn transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<mote_quic::Transmit>;
    /// The next timer.
    fn timeout(&self) -> Option<Instant>;
    /// Timers due at `now`.
    fn on_timeout(&mut self, now: Instant);
}

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize> SansIo
    for Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    fn recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        self.handle_recv(now, info, data);
    }
    fn transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<mote_quic::Transmit> {
        self.poll_transmit(now, buf)
    }
    fn timeout(&self) -> Option<Instant> {
        self.poll_timeout()
    }
    fn on_timeout(&mut self, now: Instant) {
        self.handle_timeout(now);
    }
}

impl<P, T, C, S, A, L, const N: usize, const SENT: usize, const RANGES: usize> SansIo
    for Endpoint<P, T, C, S, A, L, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
    A: Accept<T, C, S, N>,
    L: AsMut<[Slot<Connection<P, T, C, S, N, SENT, RANGES>>]>
        + AsRef<[Slot<Connection<P, T, C, S, N, SENT, RANGES>>]>,
{
    fn recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        self.handle_recv(now, info, data);
    }
    fn transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<mote_quic::Transmit> {
        self.poll_transmit(now, buf)
    }
    fn timeout(&self) -> Option<Instant> {
        self.poll_timeout()
    }
    fn on_timeout(&mut self, now: Instant) {
        self.handle_timeout(now);
    }
}

/// The application on top of a simulated endpoint.
pub trait Application<E> {
    /// Called after every input and before transmits are polled: react to events, move
    /// stream data.
    fn drive(&mut self, now: Instant, endpoint: &mut E);
    /// The application's own timer (e.g. "start the transaction at t"), if any.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

/// An application that does nothing (the endpoint runs on its own).
#[derive(Clone, Copy, Debug, Default)]
pub struct Idle;

impl<E> Application<E> for Idle {
    fn drive(&mut self, _now: Instant, _endpoint: &mut E) {}
}

/// A mote-quic endpoint (or connection) and its application, as a simulator node.
pub struct QuicNode<E, A> {
    /// The endpoint.
    pub endpoint: E,
    /// The application driving it.
    pub app: A,
    /// The local address datagrams leave from; `None` for the node's first address. A test
    /// migrating a client binds a second address, sets it here and calls the connection's
    /// `migrate` (RFC 9000 §9.2).
    pub src: Option<SocketAddr>,
}

impl<E, A> QuicNode<E, A> {
    /// A node running `endpoint` under `app`.
    pub fn new(endpoint: E, app: A) -> Self {
        Self { endpoint, app, src: None }
    }
}

fn ecn_out(e: QuicEcn) -> Option<Ecn> {
    match e {
        QuicEcn::NotEct => None,
        QuicEcn::Ect0 => Some(Ecn::Ect0),
        QuicEcn::Ect1 => Some(Ecn::Ect1),
        QuicEcn::Ce => Some(Ecn::Ce),
    }
}

fn ecn_in(e: Option<Ecn>) -> QuicEcn {
    match e {
        None => QuicEcn::NotEct,
        Some(Ecn::Ect0) => QuicEcn::Ect0,
        Some(Ecn::Ect1) => QuicEcn::Ect1,
        Some(Ecn::Ce) => QuicEcn::Ce,
    }
}

impl<E, A> Node for QuicNode<E, A>
where
    E: SansIo + 'static,
    A: Application<E> + 'static,
{
    fn handle_datagram(&mut self, now: Instant, meta: RecvMeta, data: &mut [u8]) {
        let info = RecvInfo {
            remote: meta.remote,
            ecn: ecn_in(meta.ecn),
            segment_size: None,
            local: Some(meta.local),
        };
        self.endpoint.recv(now, &info, data);
        self.app.drive(now, &mut self.endpoint);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.app.drive(now, &mut self.endpoint);
        let t = self.endpoint.transmit(now, buf)?;
        let destination: SocketAddr = t.destination;
        Some(Transmit {
            destination,
            len: t.len,
            segment_size: t.segment_size,
            // A migrating test node names its new address; otherwise the connection's.
            src: self.src.or(t.src),
            ecn: ecn_out(t.ecn),
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        match (self.endpoint.timeout(), self.app.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.endpoint.timeout().is_some_and(|t| t <= now) {
            self.endpoint.on_timeout(now);
        }
        self.app.drive(now, &mut self.endpoint);
    }
}
