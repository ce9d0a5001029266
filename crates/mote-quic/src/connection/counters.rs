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

/// The counters the connection bumps as traffic passes: with `stats`, the public struct
/// itself (so [`Counters::report`] is one copy, and the fields the connection does not count
/// itself are filled in by [`super::Connection::stats`]).
#[cfg(feature = "stats")]
pub(super) type Counters = ConnectionStats;

/// Without `stats`: the fields of [`ConnectionStats`] the connection bumps, each taking no
/// memory.
#[cfg(not(feature = "stats"))]
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

/// The counters as a [`ConnectionStats`]: with `stats` a copy, without it all zero.
pub(super) fn report(counters: &Counters) -> ConnectionStats {
    #[cfg(feature = "stats")]
    return *counters;
    #[cfg(not(feature = "stats"))]
    {
        let _ = counters;
        ConnectionStats::default()
    }
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
        let s = report(&c);
        assert_eq!((s.bytes_sent, s.packets_sent), (u64::MAX, [0, 0, 1]));
    }

    #[cfg(not(feature = "stats"))]
    #[test]
    fn without_stats_counters_take_no_memory_and_read_zero() {
        assert_eq!(core::mem::size_of::<Counters>(), 0);
        let mut c = Counters::default();
        bump(&mut c.bytes_sent, 1200);
        assert_eq!(report(&c), ConnectionStats::default());
    }
}
