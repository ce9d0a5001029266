//! The record of a run: one [`DatagramRecord`] per datagram copy that entered the
//! network, with its fate, plus summaries and a JSON-lines export.

use core::fmt;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::SocketAddr;

use mote_quic::Instant;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::classify::PacketKind;
use crate::node::{Ecn, NodeId};

/// Which way a datagram crossed a link made by
/// [`Simulator::connect`](crate::Simulator::connect)`(device, server, ..)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Device → server (the link's first address to its second).
    Up,
    /// Server → device.
    Down,
}

impl Direction {
    /// `"up"` or `"down"`.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// Why a datagram was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// Sent into a blackhole window.
    Blackhole,
    /// Longer than the link's MTU.
    Mtu,
    /// Tail-dropped: the link's buffer was full.
    Queue,
    /// Random (independent) loss.
    Loss,
    /// Bursty (Gilbert–Elliott) loss.
    BurstLoss,
    /// No node owns the destination address, no link joins the two addresses, or (on
    /// arrival) the NAT mapping it was sent to no longer exists.
    NoRoute,
    /// The node sent from an address it is not bound to.
    UnboundSource,
}

impl DropReason {
    /// The lowercase name used in traces.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Blackhole => "blackhole",
            DropReason::Mtu => "mtu",
            DropReason::Queue => "queue",
            DropReason::Loss => "loss",
            DropReason::BurstLoss => "burst_loss",
            DropReason::NoRoute => "no_route",
            DropReason::UnboundSource => "unbound_source",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What became of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still queued or on the wire.
    InFlight,
    /// Handed to the receiving node at this time.
    Delivered(Instant),
    /// Dropped at this time.
    Dropped(Instant, DropReason),
}

/// One datagram copy: sent by a node, or a duplicate made by a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatagramRecord {
    /// Index in the trace (send order).
    pub id: u64,
    /// When the node sent it (for a duplicate: when the original was sent).
    pub sent: Instant,
    /// The sending node.
    pub src_node: NodeId,
    /// The node the destination resolved to when sent, if any.
    pub dst_node: Option<NodeId>,
    /// The sender's local address.
    pub from: SocketAddr,
    /// The source address the receiver sees (after NAT).
    pub seen_from: SocketAddr,
    /// The destination address the sender used.
    pub to: SocketAddr,
    /// The link direction it took, if it reached a link.
    pub direction: Option<Direction>,
    /// UDP payload bytes.
    pub len: usize,
    /// ECN codepoint.
    pub ecn: Option<Ecn>,
    /// For a link-made duplicate, the id of the original.
    pub duplicate_of: Option<u64>,
    /// Offset of the byte the link corrupted, if it did.
    pub corrupted_at: Option<usize>,
    /// Held back by the link's reordering.
    pub reordered: bool,
    /// The QUIC packets it carried, per the simulator's [`Classifier`](crate::Classifier).
    pub packets: Vec<PacketKind>,
    /// Its fate.
    pub outcome: Outcome,
}

impl DatagramRecord {
    /// Sent by a node (not a copy made by duplication).
    pub fn is_original(&self) -> bool {
        self.duplicate_of.is_none()
    }

    /// Delivered to a node.
    pub fn delivered(&self) -> bool {
        matches!(self.outcome, Outcome::Delivered(_))
    }

    /// The drop reason, if dropped.
    pub fn drop_reason(&self) -> Option<DropReason> {
        match self.outcome {
            Outcome::Dropped(_, r) => Some(r),
            _ => None,
        }
    }
}

/// One JSON object per record, fields in a fixed order: `id`, `sent_us`, `src_node`,
/// `dst_node`, `from`, `seen_from`, `to`, `dir` (`"up"`/`"down"`/null), `len`, `ecn`,
/// `dup_of`, `corrupt_at`, `reordered`, `packets` (type names), `outcome`
/// (`"delivered"`/`"dropped"`/`"in_flight"`), `at_us` (delivery or drop time) and `reason`
/// (the drop reason).
impl Serialize for DatagramRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (outcome, at, reason) = match self.outcome {
            Outcome::InFlight => ("in_flight", None, None),
            Outcome::Delivered(t) => ("delivered", Some(t.as_micros()), None),
            Outcome::Dropped(t, r) => ("dropped", Some(t.as_micros()), Some(r.name())),
        };
        let packets: Vec<&str> = self.packets.iter().map(|k| k.name()).collect();
        let mut o = serializer.serialize_struct("DatagramRecord", 17)?;
        o.serialize_field("id", &self.id)?;
        o.serialize_field("sent_us", &self.sent.as_micros())?;
        o.serialize_field("src_node", &self.src_node.0)?;
        o.serialize_field("dst_node", &self.dst_node.map(|n| n.0))?;
        o.serialize_field("from", &self.from)?;
        o.serialize_field("seen_from", &self.seen_from)?;
        o.serialize_field("to", &self.to)?;
        o.serialize_field("dir", &self.direction.map(Direction::name))?;
        o.serialize_field("len", &self.len)?;
        o.serialize_field("ecn", &self.ecn.map(Ecn::name))?;
        o.serialize_field("dup_of", &self.duplicate_of)?;
        o.serialize_field("corrupt_at", &self.corrupted_at)?;
        o.serialize_field("reordered", &self.reordered)?;
        o.serialize_field("packets", &packets)?;
        o.serialize_field("outcome", outcome)?;
        o.serialize_field("at_us", &at)?;
        o.serialize_field("reason", &reason)?;
        o.end()
    }
}

/// Totals over a set of datagram records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Datagrams sent by nodes (duplicates excluded).
    pub sent_datagrams: u64,
    /// Their UDP payload bytes.
    pub sent_bytes: u64,
    /// Datagram copies delivered (duplicates included).
    pub delivered_datagrams: u64,
    /// Their bytes.
    pub delivered_bytes: u64,
    /// Copies dropped, by cause.
    pub dropped: BTreeMap<DropReason, u64>,
    /// Copies still in flight.
    pub in_flight: u64,
    /// Duplicates made by links.
    pub duplicated: u64,
    /// Copies with a corrupted byte.
    pub corrupted: u64,
    /// Copies held back for reordering.
    pub reordered: u64,
    /// QUIC packets in the datagrams sent by nodes, by type (coalesced packets counted
    /// one by one).
    pub packets: BTreeMap<PacketKind, u64>,
}

impl Summary {
    /// All copies dropped, whatever the cause.
    pub fn drops_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// Copies dropped for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.dropped.get(&reason).copied().unwrap_or(0)
    }

    /// Packets of `kind` sent.
    pub fn packets(&self, kind: PacketKind) -> u64 {
        self.packets.get(&kind).copied().unwrap_or(0)
    }

    fn add(&mut self, r: &DatagramRecord) {
        let len = r.len as u64;
        if r.is_original() {
            self.sent_datagrams += 1;
            self.sent_bytes += len;
            for &k in &r.packets {
                *self.packets.entry(k).or_default() += 1;
            }
        } else {
            self.duplicated += 1;
        }
        match r.outcome {
            Outcome::InFlight => self.in_flight += 1,
            Outcome::Delivered(_) => {
                self.delivered_datagrams += 1;
                self.delivered_bytes += len;
            }
            Outcome::Dropped(_, reason) => *self.dropped.entry(reason).or_default() += 1,
        }
        self.corrupted += u64::from(r.corrupted_at.is_some());
        self.reordered += u64::from(r.reordered);
    }
}

/// Every datagram copy of a run, in send order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    records: Vec<DatagramRecord>,
}

impl Trace {
    /// All records, indexed by id.
    pub fn records(&self) -> &[DatagramRecord] {
        &self.records
    }

    /// The record with this id.
    pub fn get(&self, id: u64) -> Option<&DatagramRecord> {
        usize::try_from(id).ok().and_then(|i| self.records.get(i))
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut DatagramRecord> {
        usize::try_from(id).ok().and_then(|i| self.records.get_mut(i))
    }

    /// The id the next record will get.
    pub(crate) fn next_id(&self) -> u64 {
        self.records.len() as u64
    }

    /// Appends a record; its `id` must be [`next_id`](Self::next_id).
    pub(crate) fn push(&mut self, record: DatagramRecord) {
        debug_assert_eq!(record.id, self.next_id());
        self.records.push(record);
    }

    /// Totals over the records `keep` selects.
    pub fn summary_where(&self, mut keep: impl FnMut(&DatagramRecord) -> bool) -> Summary {
        let mut s = Summary::default();
        for r in self.records.iter().filter(|r| keep(r)) {
            s.add(r);
        }
        s
    }

    /// Totals over everything.
    pub fn summary(&self) -> Summary {
        self.summary_where(|_| true)
    }

    /// Totals for one link direction.
    pub fn summary_dir(&self, dir: Direction) -> Summary {
        self.summary_where(|r| r.direction == Some(dir))
    }

    /// Totals for what `node` sent.
    pub fn summary_from(&self, node: NodeId) -> Summary {
        self.summary_where(|r| r.src_node == node)
    }

    /// Writes one JSON object per line, per record, in id order.
    pub fn write_jsonl(&self, mut w: impl Write) -> io::Result<()> {
        for r in &self.records {
            serde_json::to_writer(&mut w, r)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The JSON-lines export as a string.
    pub fn to_jsonl(&self) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail, and serde_json writes valid UTF-8.
        let _ = self.write_jsonl(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A 64-bit FNV-1a digest of the JSON-lines export: equal traces have equal digests,
    /// on every platform and toolchain.
    pub fn digest(&self) -> u64 {
        self.to_jsonl().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u64, outcome: Outcome, dup: Option<u64>) -> DatagramRecord {
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        DatagramRecord {
            id,
            sent: Instant(id),
            src_node: NodeId(0),
            dst_node: Some(NodeId(1)),
            from: a,
            seen_from: a,
            to: a,
            direction: Some(Direction::Up),
            len: 100,
            ecn: None,
            duplicate_of: dup,
            corrupted_at: None,
            reordered: false,
            packets: vec![PacketKind::Initial, PacketKind::Handshake],
            outcome,
        }
    }

    #[test]
    fn summary_and_jsonl() {
        let mut t = Trace::default();
        t.push(record(0, Outcome::Delivered(Instant(5)), None));
        t.push(record(1, Outcome::Delivered(Instant(6)), Some(0)));
        t.push(record(2, Outcome::Dropped(Instant(7), DropReason::Loss), None));
        t.push(record(3, Outcome::InFlight, None));
        let s = t.summary();
        assert_eq!(s.sent_datagrams, 3);
        assert_eq!(s.sent_bytes, 300);
        assert_eq!(s.delivered_datagrams, 2);
        assert_eq!(s.duplicated, 1);
        assert_eq!(s.drops(DropReason::Loss), 1);
        assert_eq!(s.in_flight, 1);
        assert_eq!(s.packets(PacketKind::Initial), 3);
        assert_eq!(t.summary_dir(Direction::Down), Summary::default());

        let jsonl = t.to_jsonl();
        assert_eq!(jsonl.lines().count(), 4);
        let line2: serde_json::Value = serde_json::from_str(jsonl.lines().nth(2).unwrap()).unwrap();
        assert_eq!(line2["outcome"], "dropped");
        assert_eq!(line2["reason"], "loss");
        assert_eq!(line2["packets"][1], "handshake");
        assert!(jsonl
            .starts_with(r#"{"id":0,"sent_us":0,"src_node":0,"dst_node":1,"from":"10.0.0.1:1""#));
        assert_eq!(t.digest(), t.clone().digest());
    }
}
