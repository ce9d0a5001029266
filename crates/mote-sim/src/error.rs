//! What can go wrong while building or driving a simulation.

use core::fmt;
use std::net::SocketAddr;

use mote_quic::Instant;

use crate::node::NodeId;

/// An error from the simulator: a scenario set up inconsistently, or a node misbehaving
/// (livelock, endless transmits, a transmit larger than its buffer).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    /// More than [`SimConfig::max_events_per_instant`](crate::SimConfig) events at one
    /// virtual instant: time is not advancing (e.g. a node keeps asking for a timeout in
    /// the past without acting on it).
    Livelock {
        /// The instant that does not pass.
        at: Instant,
        /// Events processed at it.
        events: u64,
    },
    /// More than [`SimConfig::max_events`](crate::SimConfig) events in the whole run.
    EventLimit {
        /// Virtual time when the limit was reached.
        at: Instant,
        /// Events processed.
        events: u64,
    },
    /// A node's `poll_transmit` did not return `None` within
    /// [`SimConfig::max_transmits_per_poll`](crate::SimConfig) calls.
    TransmitFlood {
        /// The node.
        node: NodeId,
        /// When.
        at: Instant,
    },
    /// A node returned a [`Transmit`](crate::Transmit) that cannot be sent.
    BadTransmit {
        /// The node.
        node: NodeId,
        /// When.
        at: Instant,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The address is already bound by a node or used as a NAT's external address.
    AddressInUse(SocketAddr),
    /// No node is bound to this address.
    UnknownAddress(SocketAddr),
    /// No such node.
    UnknownNode(NodeId),
    /// These two addresses are already joined by a link.
    AlreadyConnected {
        /// One end.
        a: SocketAddr,
        /// The other.
        b: SocketAddr,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Livelock { at, events } => {
                write!(f, "livelock: {events} events at t={}us without time advancing", at.0)
            }
            SimError::EventLimit { at, events } => {
                write!(f, "event limit reached: {events} events by t={}us", at.0)
            }
            SimError::TransmitFlood { node, at } => {
                write!(f, "{node} never stopped transmitting at t={}us", at.0)
            }
            SimError::BadTransmit { node, at, reason } => {
                write!(f, "{node} returned a bad transmit at t={}us: {reason}", at.0)
            }
            SimError::AddressInUse(a) => write!(f, "address {a} is already in use"),
            SimError::UnknownAddress(a) => write!(f, "no node is bound to {a}"),
            SimError::UnknownNode(n) => write!(f, "no such node: {n}"),
            SimError::AlreadyConnected { a, b } => write!(f, "{a} and {b} are already linked"),
        }
    }
}

impl std::error::Error for SimError {}
