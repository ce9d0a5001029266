//! The simulator: a virtual clock, the event queue, the nodes, the links between their
//! addresses, and the drive loop that connects them.
//!
//! Events are node wake-ups, node timers, datagram arrivals (or losses) and NAT
//! rebindings. Processing one event may call into one node; the simulator then drains that
//! node's `poll_transmit` (each datagram entering its link at the current instant) and
//! re-arms its timer from `poll_timeout`. Nothing reads a wall clock and every random draw
//! comes from streams derived from the run's seed, so a run is a pure function of its
//! seed and its scenario.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use mote_quic::{Duration, Instant};

use crate::addr::AddressTable;
use crate::classify::Classifier;
use crate::error::SimError;
use crate::event::EventQueue;
use crate::link::{Admission, Fate, Link, LinkConfig};
use crate::node::{Ecn, Node, NodeId, RecvMeta, Transmit};
use crate::profile::LinkProfile;
use crate::seed;
use crate::trace::{DatagramRecord, Direction, DropReason, Outcome, Trace};

/// Limits and options of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Events allowed at a single virtual instant before the run is declared a
    /// [`SimError::Livelock`].
    pub max_events_per_instant: u64,
    /// Events allowed in the whole run ([`SimError::EventLimit`]).
    pub max_events: u64,
    /// `poll_transmit` calls returning `Some` allowed in one drain
    /// ([`SimError::TransmitFlood`]).
    pub max_transmits_per_poll: usize,
    /// Size of the buffer handed to `poll_transmit` (the largest GSO batch).
    pub transmit_buffer: usize,
    /// How datagrams are labelled in the trace.
    pub classifier: Classifier,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            max_events_per_instant: 1_000_000,
            max_events: 100_000_000,
            max_transmits_per_poll: 100_000,
            transmit_buffer: 64 * 1024,
            classifier: Classifier::Quic,
        }
    }
}

/// Why [`Simulator::run_until`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The condition became true.
    Done,
    /// The next event lies after the deadline; the clock now reads the deadline.
    Deadline,
    /// No event is left (nothing will happen unless the caller acts).
    Idle,
}

/// A node and its timer.
struct Slot {
    node: Box<dyn Node>,
    /// Bound local addresses; the first is the default source.
    addrs: Vec<SocketAddr>,
    /// The timeout currently scheduled.
    armed: Option<Instant>,
    /// Bumped whenever the timer is re-armed, so stale timer events are ignored.
    timer_gen: u64,
}

/// One direction of a link, keyed by (source local address, destination local address).
struct LinkEnd {
    link: Link,
    direction: Direction,
}

/// A datagram copy on its way.
struct Arrival {
    record: u64,
    /// The address the sender used.
    to: SocketAddr,
    /// The local address it resolved to when sent.
    local: SocketAddr,
    /// The source the receiver will see.
    remote: SocketAddr,
    ecn: Option<Ecn>,
    /// `Some` if it is lost on the wire (the event only records the drop).
    lost: Option<DropReason>,
    data: Vec<u8>,
}

enum Event {
    /// Drain a node's transmits and re-arm its timer.
    Wake(NodeId),
    /// A node's timer, valid if the generation still matches.
    Timer(NodeId, u64),
    /// A datagram copy arrives (or is lost).
    Arrive(Box<Arrival>),
    /// A NAT gives `local` a new external address.
    Rebind { local: SocketAddr, external: SocketAddr },
}

/// A deterministic discrete-event network simulator.
pub struct Simulator {
    seed: u64,
    config: SimConfig,
    now: Instant,
    events: EventQueue<Event>,
    nodes: Vec<Slot>,
    addrs: AddressTable,
    links: BTreeMap<(SocketAddr, SocketAddr), LinkEnd>,
    /// Links created so far (for deriving their random streams).
    link_count: u64,
    trace: Trace,
    /// Scratch buffer for `poll_transmit`.
    buf: Vec<u8>,
    /// Events processed in the run and at the current instant.
    total_events: u64,
    instant_events: u64,
}

impl Simulator {
    /// A simulator with default limits whose randomness all derives from `seed`.
    pub fn new(seed: u64) -> Self {
        Simulator::with_config(seed, SimConfig::default())
    }

    /// A simulator with the given limits and options.
    pub fn with_config(seed: u64, config: SimConfig) -> Self {
        Simulator {
            seed,
            buf: vec![0; config.transmit_buffer],
            config,
            now: Instant::ZERO,
            events: EventQueue::new(),
            nodes: Vec::new(),
            addrs: AddressTable::default(),
            links: BTreeMap::new(),
            link_count: 0,
            trace: Trace::default(),
            total_events: 0,
            instant_events: 0,
        }
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A seed for the caller's own random stream number `stream` (e.g. an endpoint's RNG),
    /// derived from the run's seed and independent of the links' streams.
    pub fn seed_for(&self, stream: u64) -> u64 {
        seed::derive(self.seed, stream | 1 << 63)
    }

    /// The limits and options.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Adds a node bound to local address `addr`; it is polled for transmits at the
    /// current time.
    pub fn add_node<N: Node>(&mut self, node: N, addr: SocketAddr) -> Result<NodeId, SimError> {
        let id = NodeId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.addrs.bind(id, addr)?;
        self.nodes.push(Slot {
            node: Box::new(node),
            addrs: vec![addr],
            armed: None,
            timer_gen: 0,
        });
        self.events.push(self.now, Event::Wake(id));
        Ok(id)
    }

    /// Binds another local address to `node` (e.g. a second interface to migrate to).
    pub fn bind(&mut self, node: NodeId, addr: SocketAddr) -> Result<(), SimError> {
        self.slot(node)?;
        self.addrs.bind(node, addr)?;
        self.slot_mut(node)?.addrs.push(addr);
        Ok(())
    }

    /// The local addresses of `node`, the default source first.
    pub fn addresses(&self, node: NodeId) -> &[SocketAddr] {
        self.slot(node).map(|s| s.addrs.as_slice()).unwrap_or(&[])
    }

    /// The address datagrams from local address `local` appear to come from (after NAT).
    pub fn external_addr(&self, local: SocketAddr) -> Option<SocketAddr> {
        self.addrs.external_of(local)
    }

    /// Joins local addresses `device` and `server` with a link: `profile.up` carries
    /// datagrams from `device` to `server`, `profile.down` the other way.
    pub fn connect(
        &mut self,
        device: SocketAddr,
        server: SocketAddr,
        profile: &LinkProfile,
    ) -> Result<(), SimError> {
        self.connect_with(device, server, profile.up.clone(), profile.down.clone())
    }

    /// Joins `a` and `b` with a link whose directions are configured separately
    /// (`a_to_b` is traced as [`Direction::Up`]).
    pub fn connect_with(
        &mut self,
        a: SocketAddr,
        b: SocketAddr,
        a_to_b: LinkConfig,
        b_to_a: LinkConfig,
    ) -> Result<(), SimError> {
        if self.links.contains_key(&(a, b)) || self.links.contains_key(&(b, a)) {
            return Err(SimError::AlreadyConnected { a, b });
        }
        let stream = self.link_count * 2;
        self.link_count += 1;
        let up = Link::new(a_to_b, seed::rng(self.seed, stream));
        let down = Link::new(b_to_a, seed::rng(self.seed, stream + 1));
        self.links.insert((a, b), LinkEnd { link: up, direction: Direction::Up });
        self.links.insert((b, a), LinkEnd { link: down, direction: Direction::Down });
        Ok(())
    }

    /// The configuration of the link direction from local address `from` to local address
    /// `to`, to change mid-run (queue and loss state carry over).
    pub fn link_config_mut(&mut self, from: SocketAddr, to: SocketAddr) -> Option<&mut LinkConfig> {
        self.links.get_mut(&(from, to)).map(|l| &mut l.link.config)
    }

    /// Bytes waiting in the link direction `from` → `to` (not counting the datagram being
    /// serialized).
    pub fn queued_bytes(&mut self, from: SocketAddr, to: SocketAddr) -> Option<usize> {
        let now = self.now;
        self.links.get_mut(&(from, to)).map(|l| l.link.queued_bytes(now))
    }

    /// From now on, datagrams from local address `local` appear to come from `external`,
    /// and datagrams to its old external address are no longer delivered (a NAT mapping).
    pub fn set_external_addr(
        &mut self,
        local: SocketAddr,
        external: SocketAddr,
    ) -> Result<(), SimError> {
        self.addrs.map(local, external).map(|_| ())
    }

    /// Schedules a NAT rebinding: at `at` (or now, if earlier) local address `local` gets
    /// the external address `external`, as [`set_external_addr`](Self::set_external_addr).
    /// A conflict found only then makes the run return [`SimError::AddressInUse`].
    pub fn rebind_at(
        &mut self,
        at: Instant,
        local: SocketAddr,
        external: SocketAddr,
    ) -> Result<(), SimError> {
        if self.addrs.owner(local).is_none() {
            return Err(SimError::UnknownAddress(local));
        }
        self.events.push(at.max(self.now), Event::Rebind { local, external });
        Ok(())
    }

    /// The node `id` as its concrete type `N`.
    pub fn node<N: Node>(&self, id: NodeId) -> Option<&N> {
        let node: &dyn core::any::Any = &*self.slot(id).ok()?.node;
        node.downcast_ref()
    }

    /// The node `id` as its concrete type `N`, to act on it (e.g. open a stream). The node
    /// is then polled for transmits and its timer re-armed at the current time.
    pub fn node_mut<N: Node>(&mut self, id: NodeId) -> Option<&mut N> {
        self.node::<N>(id)?;
        self.events.push(self.now, Event::Wake(id));
        let node: &mut dyn core::any::Any = &mut *self.slot_mut(id).ok()?.node;
        node.downcast_mut()
    }

    /// Polls `node` for transmits and re-arms its timer at the current time.
    pub fn wake(&mut self, node: NodeId) -> Result<(), SimError> {
        self.slot(node)?;
        self.events.push(self.now, Event::Wake(node));
        Ok(())
    }

    /// Every datagram so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Ends the run, keeping its trace.
    pub fn into_trace(self) -> Trace {
        self.trace
    }

    /// The time of the next event.
    pub fn next_event_time(&self) -> Option<Instant> {
        self.events.peek_time()
    }

    /// Events queued.
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.total_events
    }

    /// Processes the next event; `Ok(false)` if there was none.
    pub fn step(&mut self) -> Result<bool, SimError> {
        let Some(at) = self.events.peek_time() else { return Ok(false) };
        let at = at.max(self.now);
        let same_instant = at == self.now && self.total_events > 0;
        let instant_events = if same_instant { self.instant_events + 1 } else { 1 };
        if instant_events > self.config.max_events_per_instant {
            return Err(SimError::Livelock { at, events: self.instant_events });
        }
        if self.total_events >= self.config.max_events {
            return Err(SimError::EventLimit { at: self.now, events: self.total_events });
        }
        let Some((_, event)) = self.events.pop() else { return Ok(false) };
        self.now = at;
        self.instant_events = instant_events;
        self.total_events += 1;

        match event {
            Event::Wake(id) => self.poll(id)?,
            Event::Timer(id, generation) => {
                let slot = self.slot_mut(id)?;
                if slot.timer_gen == generation {
                    slot.armed = None;
                    slot.node.handle_timeout(at);
                    self.poll(id)?;
                }
            }
            Event::Arrive(arrival) => self.arrive(*arrival)?,
            Event::Rebind { local, external } => {
                self.addrs.map(local, external)?;
            }
        }
        Ok(true)
    }

    /// Runs events until `done` returns true (checked before each event), the next event
    /// lies after `deadline` (the clock is then set to `deadline`), or none is left.
    pub fn run_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&Simulator) -> bool,
    ) -> Result<Stop, SimError> {
        loop {
            if done(self) {
                return Ok(Stop::Done);
            }
            match self.events.peek_time() {
                None => return Ok(Stop::Idle),
                Some(t) if t > deadline => {
                    self.now = self.now.max(deadline);
                    return Ok(Stop::Deadline);
                }
                Some(_) => {
                    self.step()?;
                }
            }
        }
    }

    /// Runs every event up to and including `deadline`, then sets the clock to it.
    pub fn run_to(&mut self, deadline: Instant) -> Result<(), SimError> {
        self.run_until(deadline, |_| false)?;
        self.now = self.now.max(deadline);
        Ok(())
    }

    /// Runs for `span` of virtual time from now.
    pub fn run_for(&mut self, span: Duration) -> Result<(), SimError> {
        self.run_to(self.now + span)
    }

    fn slot(&self, id: NodeId) -> Result<&Slot, SimError> {
        self.nodes.get(id.0 as usize).ok_or(SimError::UnknownNode(id))
    }

    fn slot_mut(&mut self, id: NodeId) -> Result<&mut Slot, SimError> {
        self.nodes.get_mut(id.0 as usize).ok_or(SimError::UnknownNode(id))
    }

    /// Drains `id`'s transmits, then re-arms its timer.
    fn poll(&mut self, id: NodeId) -> Result<(), SimError> {
        let mut buf = core::mem::take(&mut self.buf);
        let drained = self.drain(id, &mut buf);
        self.buf = buf;
        drained?;

        let now = self.now;
        let slot = self.slot_mut(id)?;
        let timeout = slot.node.poll_timeout();
        if timeout != slot.armed {
            slot.armed = timeout;
            slot.timer_gen += 1;
            let generation = slot.timer_gen;
            if let Some(t) = timeout {
                self.events.push(t.max(now), Event::Timer(id, generation));
            }
        }
        Ok(())
    }

    fn drain(&mut self, id: NodeId, buf: &mut [u8]) -> Result<(), SimError> {
        let now = self.now;
        for _ in 0..self.config.max_transmits_per_poll {
            let Some(tx) = self.slot_mut(id)?.node.poll_transmit(now, buf) else {
                return Ok(());
            };
            let bad = |reason| SimError::BadTransmit { node: id, at: now, reason };
            let data = buf.get(..tx.len).ok_or(bad("len exceeds the buffer"))?;
            match tx.segment_size {
                Some(0) => return Err(bad("segment_size is zero")),
                Some(size) => {
                    for segment in data.chunks(size) {
                        self.send(id, &tx, segment)?;
                    }
                }
                None => self.send(id, &tx, data)?,
            }
        }
        // One more chance: a node that stops exactly at the limit is fine.
        match self.slot_mut(id)?.node.poll_transmit(now, buf) {
            None => Ok(()),
            Some(_) => Err(SimError::TransmitFlood { node: id, at: now }),
        }
    }

    /// Puts one datagram from node `id` into the network.
    fn send(&mut self, id: NodeId, tx: &Transmit, data: &[u8]) -> Result<(), SimError> {
        let now = self.now;
        let from = match tx.src {
            Some(src) => src,
            None => *self.slot(id)?.addrs.first().ok_or(SimError::UnknownNode(id))?,
        };
        let mut record = DatagramRecord {
            id: self.trace.next_id(),
            sent: now,
            src_node: id,
            dst_node: None,
            from,
            seen_from: from,
            to: tx.destination,
            direction: None,
            len: data.len(),
            ecn: tx.ecn,
            duplicate_of: None,
            corrupted_at: None,
            reordered: false,
            packets: self.config.classifier.classify(data),
            outcome: Outcome::InFlight,
        };
        let local = match self.route(id, &mut record) {
            Ok(local) => local,
            Err(reason) => {
                record.outcome = Outcome::Dropped(now, reason);
                self.trace.push(record);
                return Ok(());
            }
        };
        let Some(end) = self.links.get_mut(&(from, local)) else {
            record.outcome = Outcome::Dropped(now, DropReason::NoRoute);
            self.trace.push(record);
            return Ok(());
        };
        record.direction = Some(end.direction);
        match end.link.admit(now, data.len()) {
            Admission::Rejected(reason) => {
                record.outcome = Outcome::Dropped(now, reason);
                self.trace.push(record);
            }
            Admission::Accepted { original, duplicate } => {
                let copy = duplicate.map(|fate| {
                    let mut r = record.clone();
                    r.id += 1;
                    r.duplicate_of = Some(record.id);
                    (r, fate)
                });
                self.launch(record, original, local, data);
                if let Some((r, fate)) = copy {
                    self.launch(r, fate, local, data);
                }
            }
        }
        Ok(())
    }

    /// Checks the source and resolves the destination of a datagram being sent, filling in
    /// what the receiver will see; returns the destination's local address.
    fn route(&self, id: NodeId, record: &mut DatagramRecord) -> Result<SocketAddr, DropReason> {
        if self.addrs.owner(record.from) != Some(id) {
            return Err(DropReason::UnboundSource);
        }
        record.seen_from = self.addrs.external_of(record.from).unwrap_or(record.from);
        let (local, node) = self.addrs.resolve(record.to).ok_or(DropReason::NoRoute)?;
        record.dst_node = Some(node);
        Ok(local)
    }

    /// Records a datagram copy and schedules its arrival (or loss).
    fn launch(&mut self, mut record: DatagramRecord, fate: Fate, local: SocketAddr, data: &[u8]) {
        let mut data = data.to_vec();
        if let Some(c) = fate.corrupt {
            if let Some(b) = data.get_mut(c.pos) {
                *b ^= c.xor;
                record.corrupted_at = Some(c.pos);
            }
        }
        record.reordered = fate.reordered;
        // RFC 3168: a router marks CE only on ECN-capable packets.
        if fate.ce && matches!(record.ecn, Some(Ecn::Ect0 | Ecn::Ect1)) {
            record.ecn = Some(Ecn::Ce);
        }
        let arrival = Arrival {
            record: record.id,
            to: record.to,
            local,
            remote: record.seen_from,
            ecn: record.ecn,
            lost: fate.lost,
            data,
        };
        self.trace.push(record);
        self.events.push(fate.at, Event::Arrive(Box::new(arrival)));
    }

    /// A datagram copy reaches the end of its link.
    fn arrive(&mut self, mut a: Arrival) -> Result<(), SimError> {
        let now = self.now;
        // The NAT mapping it was sent to must still lead to the same local address.
        let target = match a.lost {
            Some(reason) => Err(reason),
            None => match self.addrs.resolve(a.to) {
                Some((local, node)) if local == a.local => Ok(node),
                _ => Err(DropReason::NoRoute),
            },
        };
        let outcome = match target {
            Ok(_) => Outcome::Delivered(now),
            Err(reason) => Outcome::Dropped(now, reason),
        };
        if let Some(r) = self.trace.get_mut(a.record) {
            r.outcome = outcome;
        }
        let Ok(node) = target else { return Ok(()) };
        let meta = RecvMeta { remote: a.remote, local: a.local, ecn: a.ecn };
        self.slot_mut(node)?.node.handle_datagram(now, meta, &mut a.data);
        self.poll(node)
    }
}
