//! The connection's statistics counters (feature `stats`, Quant's `NO_QINFO` when off).
//!
//! Every counter the connection bumps is a [`Count`]: a `u64` with `stats`, a zero-sized
//! value without it, so [`bump`] compiles to nothing, the arguments computed only for it
//! (datagram lengths, retransmitted byte counts) fold away, and [`Counters`] takes no RAM.
//! Counts the connection keeps for its own logic (key updates, authentication failures,
//! connection IDs issued, the Retry taken, migration and PMTU counts) are not here: they are
//! reported by [`super::Connection::stats`] in every build.

use super::ConnectionStats;

/// One counter: a `u64` with `stats`.
#[cfg(feature = "stats")]
pub(super) type Count = u64;

/// One counter: nothing without `stats`.
#[cfg(not(feature = "stats"))]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Count;

/// Adds `n` to a statistics counter. Out of line: a 64-bit saturating add is a dozen bytes
/// of Thumb code at each of the counters' call sites, a call is a few.
#[cfg(feature = "stats")]
#[inline(never)]
pub(super) fn bump(counter: &mut Count, n: u64) {
    *counter = counter.saturating_add(n);
}

/// Without `stats` there is nothing to count.
#[cfg(not(feature = "stats"))]
#[inline(always)]
pub(super) fn bump(_counter: &mut Count, _n: u64) {}

/// The counters the connection bumps as traffic passes (the fields of [`ConnectionStats`]
/// of the same names).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    pub(super) datagrams_sent: Count,
    pub(super) bytes_sent: Count,
    pub(super) packets_sent: [Count; 3],
    pub(super) datagrams_received: Count,
    pub(super) bytes_received: Count,
    pub(super) packets_received: Count,
    pub(super) packets_dropped: Count,
    pub(super) packets_lost: Count,
    pub(super) ptos: Count,
    pub(super) bytes_retransmitted: Count,
    #[cfg_attr(feature = "migration", allow(dead_code))]
    pub(super) path_challenges_received: Count,
    pub(super) ecn_received: [Count; 3],
    pub(super) ecn_ce_events: Count,
    #[cfg_attr(not(feature = "datagram"), allow(dead_code))]
    pub(super) datagram_frames_received: Count,
    #[cfg_attr(not(feature = "datagram"), allow(dead_code))]
    pub(super) datagrams_dropped: Count,
    pub(super) cids_retired_by_peer: Count,
}

impl Counters {
    /// Copies the counters into `s`.
    #[cfg(feature = "stats")]
    pub(super) fn report(&self, s: &mut ConnectionStats) {
        s.datagrams_sent = self.datagrams_sent;
        s.bytes_sent = self.bytes_sent;
        s.packets_sent = self.packets_sent;
        s.datagrams_received = self.datagrams_received;
        s.bytes_received = self.bytes_received;
        s.packets_received = self.packets_received;
        s.packets_dropped = self.packets_dropped;
        s.packets_lost = self.packets_lost;
        s.ptos = self.ptos;
        s.bytes_retransmitted = self.bytes_retransmitted;
        s.path_challenges_received = self.path_challenges_received;
        s.ecn_received = self.ecn_received;
        s.ecn_ce_events = self.ecn_ce_events;
        s.datagram_frames_received = self.datagram_frames_received;
        s.datagrams_dropped = self.datagrams_dropped;
        s.cids_retired_by_peer = self.cids_retired_by_peer;
    }

    /// Without `stats` the traffic counters read 0.
    #[cfg(not(feature = "stats"))]
    pub(super) fn report(&self, _s: &mut ConnectionStats) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "stats")]
    #[test]
    fn counters_saturate_and_are_reported() {
        let mut c = Counters::default();
        bump(&mut c.bytes_sent, 1200);
        bump(&mut c.bytes_sent, u64::MAX);
        bump(&mut c.packets_sent[2], 1);
        let mut s = ConnectionStats::default();
        c.report(&mut s);
        assert_eq!((s.bytes_sent, s.packets_sent), (u64::MAX, [0, 0, 1]));
    }

    #[cfg(not(feature = "stats"))]
    #[test]
    fn without_stats_counters_take_no_memory_and_read_zero() {
        assert_eq!(core::mem::size_of::<Counters>(), 0);
        let mut c = Counters::default();
        bump(&mut c.bytes_sent, 1200);
        let mut s = ConnectionStats::default();
        c.report(&mut s);
        assert_eq!(s, ConnectionStats::default());
    }
}
