//! What the simulator drives: the sans-IO [`Node`] trait and the values crossing it.
//!
//! A node is anything that speaks the sans-IO contract of the design brief — a QUIC
//! endpoint or connection wrapped in a thin adapter, or one of the small test nodes in
//! [`crate::testing`]. The simulator owns the clock: it calls the node only with the
//! virtual time of the event it is processing.

use core::any::Any;
use core::fmt;
use std::net::SocketAddr;

use mote_quic::Instant;

/// Identifies a node added to a [`Simulator`](crate::Simulator), in the order added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}

/// The ECN codepoint of a datagram's IP header (RFC 3168). Links carry it unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// ECN-Capable Transport (0).
    Ect0,
    /// ECN-Capable Transport (1).
    Ect1,
    /// Congestion Experienced.
    Ce,
}

impl Ecn {
    /// The lowercase name used in traces.
    pub const fn name(self) -> &'static str {
        match self {
            Ecn::Ect0 => "ect0",
            Ecn::Ect1 => "ect1",
            Ecn::Ce => "ce",
        }
    }
}

/// A datagram (or a GSO batch of datagrams) a node wants sent; the bytes are the first
/// `len` bytes of the buffer passed to [`Node::poll_transmit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it, as the node knows the peer (possibly a NAT's external address).
    pub destination: SocketAddr,
    /// Bytes written to the buffer.
    pub len: usize,
    /// `Some(n)`: the buffer holds several datagrams of `n` bytes each, the last possibly
    /// shorter (a GSO batch, as quinn's `Transmit::segment_size`). The simulator splits it.
    pub segment_size: Option<usize>,
    /// The local address to send from; `None` for the node's first (primary) address. A node
    /// migrating to another local address (RFC 9000 §9) names it here.
    pub src: Option<SocketAddr>,
    /// ECN codepoint to mark the datagram(s) with.
    pub ecn: Option<Ecn>,
}

impl Transmit {
    /// A single datagram of `len` bytes to `destination` from the primary address.
    pub const fn new(destination: SocketAddr, len: usize) -> Self {
        Transmit { destination, len, segment_size: None, src: None, ecn: None }
    }
}

/// How a received datagram reached the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvMeta {
    /// The source address as this node sees it: the sender's address after any NAT.
    pub remote: SocketAddr,
    /// The local address it arrived on (one of the node's bound addresses).
    pub local: SocketAddr,
    /// ECN codepoint it carried.
    pub ecn: Option<Ecn>,
}

/// A sans-IO endpoint driven by the simulator.
///
/// Polling discipline: after every [`handle_datagram`](Node::handle_datagram) or
/// [`handle_timeout`](Node::handle_timeout) (and when the node is added or borrowed
/// mutably through [`Simulator::node_mut`](crate::Simulator::node_mut)), the simulator
/// calls [`poll_transmit`](Node::poll_transmit) until it returns `None`, then re-arms the
/// node's timer from [`poll_timeout`](Node::poll_timeout).
///
/// `Any` is a supertrait so a test can get its concrete node back from the simulator.
pub trait Node: Any {
    /// A datagram arrived. `data` may be modified in place (e.g. decrypted).
    fn handle_datagram(&mut self, now: Instant, meta: RecvMeta, data: &mut [u8]);

    /// The next datagram (or GSO batch) to send, written into `buf`; `None` when there is
    /// nothing to send now.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit>;

    /// When [`handle_timeout`](Node::handle_timeout) wants to be called next, if ever. A
    /// time in the past means "now".
    fn poll_timeout(&mut self) -> Option<Instant>;

    /// The time returned by [`poll_timeout`](Node::poll_timeout) has come.
    fn handle_timeout(&mut self, now: Instant);
}
