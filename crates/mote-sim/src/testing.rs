//! Small nodes for exercising links and scenarios without a QUIC stack: a scripted sender
//! that records what it receives, an echo server, and a bulk sender with an ACK-clocked
//! receiver.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use mote_quic::{Duration, Instant};

use crate::node::{Ecn, Node, RecvMeta, Transmit};

/// A datagram (or GSO batch) a [`Scripted`] node will send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Destination.
    pub to: SocketAddr,
    /// Payload (a GSO batch when `segment_size` is set).
    pub data: Vec<u8>,
    /// GSO segment size.
    pub segment_size: Option<usize>,
    /// Local address to send from (`None`: the primary one).
    pub src: Option<SocketAddr>,
    /// ECN codepoint.
    pub ecn: Option<Ecn>,
}

/// A datagram a test node received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// When.
    pub at: Instant,
    /// From where, on which local address.
    pub meta: RecvMeta,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Sends datagrams at scripted times and records everything it receives.
#[derive(Clone, Debug, Default)]
pub struct Scripted {
    /// What to send and when, kept sorted by time (stable for equal times).
    schedule: VecDeque<(Instant, Outgoing)>,
    /// Everything received, in order.
    pub received: Vec<Received>,
}

impl Scripted {
    /// Schedules `out` at `at`.
    pub fn push(&mut self, at: Instant, out: Outgoing) {
        let i = self.schedule.partition_point(|(t, _)| *t <= at);
        self.schedule.insert(i, (at, out));
    }

    /// Schedules one datagram to `to` at `at`.
    pub fn send_at(&mut self, at: Instant, to: SocketAddr, data: Vec<u8>) {
        self.push(at, Outgoing { to, data, segment_size: None, src: None, ecn: None });
    }

    /// Datagrams still to be sent.
    pub fn pending(&self) -> usize {
        self.schedule.len()
    }
}

impl Node for Scripted {
    fn handle_datagram(&mut self, now: Instant, meta: RecvMeta, data: &mut [u8]) {
        self.received.push(Received { at: now, meta, data: data.to_vec() });
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if self.schedule.front()?.0 > now {
            return None;
        }
        let (_, out) = self.schedule.pop_front()?;
        let len = out.data.len().min(buf.len());
        buf[..len].copy_from_slice(&out.data[..len]);
        Some(Transmit {
            destination: out.to,
            len,
            segment_size: out.segment_size,
            src: out.src,
            ecn: out.ecn,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.schedule.front().map(|(t, _)| *t)
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

/// Sends every datagram back to where it came from (as seen after NAT), from the local
/// address it arrived on, and records it.
#[derive(Clone, Debug, Default)]
pub struct Echo {
    queue: VecDeque<(RecvMeta, Vec<u8>)>,
    /// Everything received, in order.
    pub received: Vec<Received>,
}

impl Node for Echo {
    fn handle_datagram(&mut self, now: Instant, meta: RecvMeta, data: &mut [u8]) {
        self.received.push(Received { at: now, meta, data: data.to_vec() });
        self.queue.push_back((meta, data.to_vec()));
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let (meta, data) = self.queue.pop_front()?;
        let len = data.len().min(buf.len());
        buf[..len].copy_from_slice(&data[..len]);
        Some(Transmit {
            destination: meta.remote,
            len,
            segment_size: None,
            src: Some(meta.local),
            ecn: meta.ecn,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

/// Sends `total` numbered datagrams of `size` bytes (sequence number in the first four
/// bytes, big-endian) to a [`BulkReceiver`], keeping at most `window` unacknowledged, and
/// resends any not acknowledged within `rto`.
#[derive(Clone, Debug)]
pub struct BulkSender {
    peer: SocketAddr,
    size: usize,
    total: u32,
    window: usize,
    rto: Duration,
    next: u32,
    /// Sent and not yet acknowledged: sequence number → time sent.
    outstanding: BTreeMap<u32, Instant>,
    resend: VecDeque<u32>,
    acked: Vec<bool>,
    acked_count: u32,
    /// Datagrams sent again after a timeout.
    pub retransmissions: u64,
    /// When the last datagram was acknowledged.
    pub done_at: Option<Instant>,
}

impl BulkSender {
    /// A sender of `total` datagrams of `size` bytes (at least 4) to `peer`.
    pub fn new(peer: SocketAddr, size: usize, total: u32, window: usize, rto: Duration) -> Self {
        BulkSender {
            peer,
            size: size.max(4),
            total,
            window,
            rto,
            next: 0,
            outstanding: BTreeMap::new(),
            resend: VecDeque::new(),
            acked: vec![false; total as usize],
            acked_count: 0,
            retransmissions: 0,
            done_at: None,
        }
    }

    /// Whether every datagram has been acknowledged.
    pub fn done(&self) -> bool {
        self.acked_count == self.total
    }
}

impl Node for BulkSender {
    fn handle_datagram(&mut self, now: Instant, _meta: RecvMeta, data: &mut [u8]) {
        let Some(seq) = data.first_chunk::<4>().map(|b| u32::from_be_bytes(*b)) else { return };
        self.outstanding.remove(&seq);
        if let Some(acked) = self.acked.get_mut(seq as usize) {
            if !*acked {
                *acked = true;
                self.acked_count += 1;
                if self.done() {
                    self.done_at = Some(now);
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if self.outstanding.len() >= self.window {
            return None;
        }
        let seq = loop {
            match self.resend.pop_front() {
                Some(s) if self.acked.get(s as usize).copied().unwrap_or(true) => continue,
                Some(s) => {
                    self.retransmissions += 1;
                    break s;
                }
                None if self.next < self.total => {
                    self.next += 1;
                    break self.next - 1;
                }
                None => return None,
            }
        };
        self.outstanding.insert(seq, now);
        let len = self.size.min(buf.len());
        buf[..len].fill(0);
        buf.get_mut(..4)?.copy_from_slice(&seq.to_be_bytes());
        Some(Transmit::new(self.peer, len))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.outstanding.values().min().map(|&t| t + self.rto)
    }

    fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<u32> = self
            .outstanding
            .iter()
            .filter(|(_, &t)| t + self.rto <= now)
            .map(|(&s, _)| s)
            .collect();
        for seq in expired {
            self.outstanding.remove(&seq);
            self.resend.push_back(seq);
        }
    }
}

/// Acknowledges every datagram from a [`BulkSender`] with a 4-byte datagram holding its
/// sequence number, and counts the distinct ones.
#[derive(Clone, Debug, Default)]
pub struct BulkReceiver {
    acks: VecDeque<(SocketAddr, SocketAddr, [u8; 4])>,
    seen: std::collections::BTreeSet<u32>,
    /// Datagrams received, duplicates included.
    pub datagrams: u64,
}

impl BulkReceiver {
    /// Distinct sequence numbers received.
    pub fn distinct(&self) -> usize {
        self.seen.len()
    }
}

impl Node for BulkReceiver {
    fn handle_datagram(&mut self, _now: Instant, meta: RecvMeta, data: &mut [u8]) {
        let Some(seq) = data.first_chunk::<4>().copied() else { return };
        self.datagrams += 1;
        self.seen.insert(u32::from_be_bytes(seq));
        self.acks.push_back((meta.remote, meta.local, seq));
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let (to, from, seq) = self.acks.pop_front()?;
        buf.get_mut(..4)?.copy_from_slice(&seq);
        Some(Transmit { src: Some(from), ..Transmit::new(to, 4) })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}
