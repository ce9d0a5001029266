//! Received packet numbers and ACK generation (RFC 9000 §12.3, §13.2, §13.4.1).
//!
//! [`ReceivedRanges`] is a fixed-capacity set of packet numbers kept as sorted, disjoint,
//! non-adjacent inclusive ranges, directly usable by [`Ack::new`] with
//! [`RangeOrder::Ascending`]. [`ReceivedPackets`] adds, per packet number space, when an ACK
//! is due, the ACK Delay, ECN counts and ACK-of-ACK pruning.
//!
//! # When full
//! A new range that does not fit evicts the **smallest** range: the peer stops hearing about
//! those packets, declares them lost and retransmits their frames; correctness is kept,
//! some bandwidth is spent. Every packet number below the lowest range still remembered
//! is then treated as a duplicate ([`ReceivedRanges::floor`]): RFC 9000 §12.3 only lets
//! a receiver process a packet when it is certain it has not processed it before, and a
//! floor is the minimum-packet-number approach §13.2.3 describes. ACK-of-ACK pruning moves
//! the same floor.

use super::{encode_ack_delay, PnSpace};
use crate::arith::Sat64 as _;
#[cfg(feature = "std")]
use crate::frame::RangeOrder;
use crate::frame::{Ack, EcnCounts};
#[cfg(feature = "std")]
use crate::packet::number::MAX_PN;
use crate::time::{Duration, Instant};
use crate::VarInt;

/// A packet number as [`ReceivedRanges`] stores it: `u64` on hosts, `u32` in builds without
/// `std` (issue 8: a device connection never receives 2^32 packets; the 64-bit carry
/// arithmetic of the range bookkeeping is a few hundred bytes of Thumb-2). Packet numbers
/// above [`MAX_TRACKED_PN`] are never stored: [`ReceivedRangeList::is_duplicate`] reports
/// them, and the connection closes before processing one
/// ([`ReceivedRangeList::can_track`]).
#[cfg(feature = "std")]
pub type TrackedPn = u64;
/// A packet number as [`ReceivedRanges`] stores it (see the `std` build's documentation).
#[cfg(not(feature = "std"))]
pub type TrackedPn = u32;

/// The largest packet number [`ReceivedRanges`] can hold: 2^62 - 1 on hosts (RFC 9000
/// §12.3), 2^32 - 2 without `std` (one below the type's maximum, so `pn + 1` never wraps).
#[cfg(feature = "std")]
pub const MAX_TRACKED_PN: u64 = MAX_PN;
/// The largest packet number [`ReceivedRanges`] can hold (see the `std` build's documentation).
#[cfg(not(feature = "std"))]
pub const MAX_TRACKED_PN: u64 = u32::MAX as u64 - 1;

/// `pn` as stored, if it can be.
#[allow(clippy::cast_possible_truncation)]
const fn narrow(pn: u64) -> Option<TrackedPn> {
    if pn > MAX_TRACKED_PN {
        None
    } else {
        Some(pn as TrackedPn)
    }
}

/// A stored packet number as a packet number.
#[allow(clippy::unnecessary_cast)]
pub(crate) const fn widen(pn: TrackedPn) -> u64 {
    pn as u64
}

/// Received packet numbers as at most `N` ranges; 16 × N + 16 bytes on hosts, 8 × N + 8
/// on 32-bit devices. Dereferences to [`ReceivedRangeList`], where the methods are
/// (compiled once for every `N`).
pub type ReceivedRanges<const N: usize> = ReceivedRangesOf<[(TrackedPn, TrackedPn); N]>;

/// [`ReceivedRanges`] with its capacity erased.
pub type ReceivedRangeList = ReceivedRangesOf<[(TrackedPn, TrackedPn)]>;

/// The struct behind [`ReceivedRanges`]; `S` is the range storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceivedRangesOf<S: ?Sized> {
    len: usize,
    /// Every packet number below this one counts as already received.
    floor: TrackedPn,
    /// Ascending, disjoint, separated by at least one missing number; `len` are in use
    /// (last, so the storage can be unsized).
    ranges: S,
}

impl<const N: usize> Default for ReceivedRanges<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReceivedRanges<N> {
    /// An empty set.
    pub const fn new() -> Self {
        Self { ranges: [(0, 0); N], len: 0, floor: 0 }
    }
}

impl<const N: usize> core::ops::Deref for ReceivedRanges<N> {
    type Target = ReceivedRangeList;

    fn deref(&self) -> &ReceivedRangeList {
        self
    }
}

impl<const N: usize> core::ops::DerefMut for ReceivedRanges<N> {
    fn deref_mut(&mut self) -> &mut ReceivedRangeList {
        self
    }
}

impl ReceivedRangeList {
    /// The ranges, lowest first: pass to [`Ack::new`] with [`RangeOrder::Ascending`].
    pub fn as_slice(&self) -> &[(TrackedPn, TrackedPn)] {
        self.ranges.get(..self.len).unwrap_or(&[])
    }

    /// Number of ranges.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether no range is held.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Packet numbers below this one are treated as received (forgotten ranges).
    pub const fn floor(&self) -> u64 {
        widen(self.floor)
    }

    /// The largest packet number held.
    pub fn largest(&self) -> Option<u64> {
        self.as_slice().last().map(|r| widen(r.1))
    }

    /// Whether `pn` can be recorded: at most [`MAX_TRACKED_PN`]. A device connection
    /// closes rather than process a packet it could not record (RFC 9000 §12.3 lets an
    /// endpoint close before its packet numbers run out; the peer's run out for us here).
    pub const fn can_track(pn: u64) -> bool {
        pn <= MAX_TRACKED_PN
    }

    /// The index of the first range starting above `pn` (a binary search).
    // Out of line: the duplicate check and `insert` each inlined a copy (issue 8).
    #[inline(never)]
    fn index_after(&self, pn: TrackedPn) -> usize {
        self.as_slice().partition_point(|r| r.0 <= pn)
    }

    /// The range holding `pn`.
    pub fn range_containing(&self, pn: u64) -> Option<(u64, u64)> {
        self.tracked_range(narrow(pn)?).map(|r| (widen(r.0), widen(r.1)))
    }

    fn tracked_range(&self, pn: TrackedPn) -> Option<(TrackedPn, TrackedPn)> {
        let s = self.as_slice();
        let idx = self.index_after(pn);
        let r = *s.get(idx.checked_sub(1)?)?;
        (pn <= r.1).then_some(r)
    }

    /// Whether `pn` is held.
    pub fn contains(&self, pn: u64) -> bool {
        self.range_containing(pn).is_some()
    }

    /// Whether a packet `pn` must be discarded as a duplicate: held, below the floor, or
    /// above [`MAX_TRACKED_PN`] (not a packet number on hosts; one this build cannot record
    /// on devices).
    pub fn is_duplicate(&self, pn: u64) -> bool {
        narrow(pn).is_none_or(|p| self.is_tracked_duplicate(p))
    }

    fn is_tracked_duplicate(&self, pn: TrackedPn) -> bool {
        pn < self.floor || self.tracked_range(pn).is_some()
    }

    /// Adds `pn`, merging with adjacent ranges; false if it is a duplicate. O(N) worst case
    /// (a shift), O(log N) for the common in-order case.
    pub fn insert(&mut self, pn: u64) -> bool {
        let Some(pn) = narrow(pn).filter(|&p| !self.is_tracked_duplicate(p)) else {
            return false;
        };
        let idx = self.index_after(pn);
        // Below `idx` the ranges start at or below `pn` (and end below it: not a
        // duplicate), from `idx` on above it.
        let Some((lo, hi)) =
            self.ranges.get_mut(..self.len).and_then(|s| s.split_at_mut_checked(idx))
        else {
            return false;
        };
        let prev = lo.last_mut().filter(|r| r.1 + 1 == pn);
        let next = hi.first_mut().filter(|r| r.0 == pn + 1);
        match (prev, next) {
            (Some(p), Some(n)) => {
                p.1 = n.1;
                shift_left(hi, 1);
                self.len -= 1;
            }
            (Some(p), None) => p.1 = pn,
            (None, Some(n)) => n.0 = pn,
            (None, None) => self.insert_new(idx, pn),
        }
        true
    }

    fn insert_new(&mut self, idx: usize, pn: TrackedPn) {
        if self.len < self.ranges.len() {
            if let Some(s) = self.ranges.get_mut(idx..=self.len) {
                shift_right(s);
                if let Some(first) = s.first_mut() {
                    *first = (pn, pn);
                }
            }
            self.len += 1;
        } else if idx == 0 {
            // Full and `pn` would be the smallest range: it is processed once and forgotten
            // at once; the floor makes any copy of it a duplicate.
            self.floor = pn + 1;
        } else {
            // Full: evict the smallest range.
            if let Some(first) = self.ranges.first() {
                self.floor = first.1 + 1;
            }
            if let Some(s) = self.ranges.get_mut(..idx) {
                shift_left(s, 1);
                if let Some(last) = s.last_mut() {
                    *last = (pn, pn);
                }
            }
        }
    }

    /// Forgets every packet number up to and including `pn` (ACK-of-ACK, RFC 9000 §13.2.4);
    /// they become duplicates. O(N).
    pub fn remove_up_to(&mut self, pn: u64) {
        // Our ACKs never acknowledge more than what can be held.
        let Some(p) = narrow(pn) else { return };
        let new_floor = p + 1;
        if new_floor <= self.floor {
            return;
        }
        self.floor = new_floor;
        // The ranges starting at or below `p` go, but for the last of them if it reaches
        // past `p` (cut below).
        let idx = self.index_after(p);
        let straddles =
            idx.checked_sub(1).and_then(|i| self.ranges.get(i)).is_some_and(|r| r.1 > p);
        let k = idx - usize::from(straddles);
        if let Some(s) = self.ranges.get_mut(..self.len) {
            shift_left(s, k);
        }
        self.len -= k;
        if let Some(first) = self.ranges.first_mut().filter(|_| self.len > 0) {
            if first.0 < new_floor {
                first.0 = new_floor;
            }
        }
    }
}

/// Moves `s[k..]` to the front of `s` (what is left behind at the end is stale). The
/// general slice rotation is a large function for the few ranges moved here.
fn shift_left(s: &mut [(TrackedPn, TrackedPn)], k: usize) {
    for i in k..s.len() {
        if let Some(v) = s.get(i).copied() {
            if let Some(d) = s.get_mut(i - k) {
                *d = v;
            }
        }
    }
}

/// Moves `s[..len - 1]` one place to the back (the first element is stale).
fn shift_right(s: &mut [(TrackedPn, TrackedPn)]) {
    for i in (1..s.len()).rev() {
        if let Some(v) = s.get(i - 1).copied() {
            if let Some(d) = s.get_mut(i) {
                *d = v;
            }
        }
    }
}

/// The ECN codepoint of a received datagram (the low two bits of the IP TOS / traffic class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Ecn {
    /// Not ECN-capable (0b00).
    #[default]
    NotEct,
    /// ECT(1) (0b01).
    Ect1,
    /// ECT(0) (0b10).
    Ect0,
    /// Congestion Experienced (0b11).
    Ce,
}

impl Ecn {
    /// The codepoint in the low two bits of `tos`.
    pub const fn from_bits(tos: u8) -> Self {
        match tos & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

/// Received packets of one packet number space and the ACK timing rules (RFC 9000
/// §13.2.1–§13.2.5); 16 × N + 120 bytes.
///
/// Flow: after removing packet protection, drop the packet if [`Self::is_duplicate`];
/// after processing its frames call [`Self::on_packet_received`]. Send an ACK when
/// [`Self::ack_deadline`] has passed (or piggyback one whenever [`Self::has_unacked`]),
/// built by [`Self::ack_frame`], then call [`Self::on_ack_sent`]. When the peer
/// acknowledges a packet that carried an ACK, call [`Self::on_ack_acked`] with that ACK's
/// Largest Acknowledged.
///
/// Dereferences to [`ReceivedSpace`], where the methods are (compiled once for every `N`:
/// a device's handshake spaces keep fewer ranges than its Application Data space).
pub type ReceivedPackets<const N: usize> = ReceivedPacketsOf<[(TrackedPn, TrackedPn); N]>;

/// [`ReceivedPackets`] with its capacity erased.
pub type ReceivedSpace = ReceivedPacketsOf<[(TrackedPn, TrackedPn)]>;

/// The struct behind [`ReceivedPackets`]; `S` is the range storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceivedPacketsOf<S: ?Sized> {
    space: PnSpace,
    /// The largest packet number received and when.
    largest: Option<(u64, Instant)>,
    largest_ack_eliciting: Option<u64>,
    /// Ack-eliciting packets received since the last ACK sent.
    unacked_ack_eliciting: u32,
    /// When an ACK must be sent; the receive time when it is due immediately.
    deadline: Option<Instant>,
    /// Any packet (ack-eliciting or not) received since the last ACK sent.
    unacked: bool,
    max_ack_delay: Duration,
    ack_eliciting_threshold: u32,
    ecn: [u64; 3],
    /// Packet numbers below this one are duplicates: one above the largest packet processed
    /// but not acknowledged ([`ReceivedSpace::on_packet_unacked`]).
    unacked_floor: TrackedPn,
    /// Last, so the storage can be unsized.
    ranges: ReceivedRangesOf<S>,
}

impl<const N: usize> ReceivedPackets<N> {
    /// Tracking for `space`; `max_ack_delay` is the value this endpoint advertises (RFC 9000
    /// §18.2). An ACK is sent after every second ack-eliciting packet (§13.2.2).
    pub const fn new(space: PnSpace, max_ack_delay: Duration) -> Self {
        Self {
            space,
            ranges: ReceivedRanges::new(),
            largest: None,
            largest_ack_eliciting: None,
            unacked_ack_eliciting: 0,
            deadline: None,
            unacked: false,
            max_ack_delay,
            ack_eliciting_threshold: 2,
            ecn: [0; 3],
            unacked_floor: 0,
        }
    }

    /// [`Self::new`] with [`Self::with_ack_eliciting_threshold`]`(threshold)` written on
    /// zero-filled memory (the device connection's slot): only the space, the delay and the
    /// threshold are written; every other field starts at zero (checked at compile time).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(
        dst: *mut Self,
        space: PnSpace,
        max_ack_delay: Duration,
        threshold: u32,
    ) {
        use core::ptr::addr_of_mut;
        crate::connection::init::zeroed!(Self, |z| {
            let r = &z.ranges;
            let mut ranges_zero = r.len == 0 && r.floor == 0;
            let mut i = 0;
            while i < N {
                ranges_zero &= r.ranges[i].0 == 0 && r.ranges[i].1 == 0;
                i += 1;
            }
            ranges_zero
                && matches!(
                    z,
                    // Every field named (no `..`): a new one fails to build until it
                    // is written below or checked here.
                    Self {
                        space: _,
                        largest: None,
                        largest_ack_eliciting: None,
                        unacked_ack_eliciting: 0,
                        deadline: None,
                        unacked: false,
                        max_ack_delay: _,
                        ack_eliciting_threshold: _,
                        ecn: [0, 0, 0],
                        unacked_floor: 0,
                        ranges: _,
                    }
                )
        });
        // SAFETY: the caller's contract.
        unsafe {
            addr_of_mut!((*dst).space).write(space);
            addr_of_mut!((*dst).max_ack_delay).write(max_ack_delay);
            addr_of_mut!((*dst).ack_eliciting_threshold).write(if threshold == 0 {
                1
            } else {
                threshold
            });
        }
    }

    /// Acknowledges after every `n`-th ack-eliciting packet instead of every second (at
    /// least 1). Out-of-order and CE-marked packets are still acknowledged at once.
    pub const fn with_ack_eliciting_threshold(mut self, n: u32) -> Self {
        self.ack_eliciting_threshold = if n == 0 { 1 } else { n };
        self
    }
}

impl<const N: usize> core::ops::Deref for ReceivedPackets<N> {
    type Target = ReceivedSpace;

    fn deref(&self) -> &ReceivedSpace {
        self
    }
}

impl<const N: usize> core::ops::DerefMut for ReceivedPackets<N> {
    fn deref_mut(&mut self) -> &mut ReceivedSpace {
        self
    }
}

impl ReceivedSpace {
    /// The space.
    pub const fn space(&self) -> PnSpace {
        self.space
    }

    /// The received ranges.
    pub const fn ranges(&self) -> &ReceivedRangeList {
        &self.ranges
    }

    /// The largest packet number received (for packet number decoding, RFC 9000 §17.1).
    pub fn largest_received(&self) -> Option<u64> {
        self.largest.map(|l| l.0)
    }

    /// Whether packet `pn` was already processed (or is below the forgotten floor) and must
    /// be discarded (RFC 9000 §12.3).
    pub fn is_duplicate(&self, pn: u64) -> bool {
        pn < widen(self.unacked_floor) || self.ranges.is_duplicate(pn)
    }

    /// Records a processed packet that must not be acknowledged: one whose STREAM or CRYPTO
    /// data was dropped (a build without `reorder` keeps only in-order data).
    ///
    /// RFC 9000 §13.1: a packet is acknowledged only once all its frames were processed,
    /// and an acknowledged packet's data is never sent again (§13.3), so this one is left
    /// out of every ACK. RFC 9000 §12.3: yet it was processed, and a copy of it (a replay)
    /// must be discarded as a duplicate, not processed again (idle timer, PATH_RESPONSE,
    /// ...). §12.3 allows "a minimum packet number below which all packets are immediately
    /// dropped": every number up to this one becomes a duplicate (no state per packet). A
    /// packet reordered below it is dropped unacknowledged too, and the peer sends its
    /// frames again; the packets already recorded stay in the ACKs.
    pub fn on_packet_unacked(&mut self, pn: u64) {
        if let Some(p) = narrow(pn) {
            self.unacked_floor = self.unacked_floor.max(p + 1);
        }
    }

    /// Records a processed packet; false (and nothing changes) for a duplicate.
    ///
    /// RFC 9000 §13.2.1: an ack-eliciting packet makes an ACK due immediately in the Initial
    /// and Handshake spaces, when it arrives out of order (below the largest ack-eliciting
    /// packet, or above it with packets missing in between), when it is marked ECN-CE, or
    /// when it is the second (threshold) unacknowledged one; otherwise within
    /// max_ack_delay. Non-ack-eliciting packets never make an ACK due by themselves.
    pub fn on_packet_received(
        &mut self,
        pn: u64,
        now: Instant,
        ack_eliciting: bool,
        ecn: Ecn,
    ) -> bool {
        if !self.ranges.insert(pn) {
            return false;
        }
        match ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.ecn[0] = self.ecn[0].sat_add(1),
            Ecn::Ect1 => self.ecn[1] = self.ecn[1].sat_add(1),
            Ecn::Ce => self.ecn[2] = self.ecn[2].sat_add(1),
        }
        if self.largest.is_none_or(|(l, _)| pn > l) {
            self.largest = Some((pn, now));
        }
        self.unacked = true;
        if !ack_eliciting {
            return true;
        }
        let out_of_order = match self.largest_ack_eliciting {
            Some(l) if pn < l => true,
            // Missing packets between the previous largest ack-eliciting one and this one.
            Some(l) => self.ranges.range_containing(pn).is_some_and(|r| r.0 > l + 1),
            None => false,
        };
        if self.largest_ack_eliciting.is_none_or(|l| pn > l) {
            self.largest_ack_eliciting = Some(pn);
        }
        self.unacked_ack_eliciting = self.unacked_ack_eliciting.saturating_add(1);
        let immediate = self.space != PnSpace::ApplicationData
            || out_of_order
            || ecn == Ecn::Ce
            || self.unacked_ack_eliciting >= self.ack_eliciting_threshold;
        let due = if immediate { now } else { now + self.max_ack_delay };
        self.deadline = Some(self.deadline.map_or(due, |d| d.min(due)));
        true
    }

    /// When an ACK must be sent (`None`: no ack-eliciting packet awaits one). A deadline in
    /// the past means now.
    pub const fn ack_deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether an ACK must be sent at `now`.
    pub fn ack_due(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// Whether anything arrived since the last ACK: an ACK may be piggybacked on a packet
    /// being sent anyway.
    pub const fn has_unacked(&self) -> bool {
        self.unacked
    }

    /// RFC 9000 §13.2.5: the time since the largest packet was received.
    pub fn ack_delay(&self, now: Instant) -> Duration {
        self.largest.map_or(Duration::ZERO, |(_, t)| now - t)
    }

    /// The counts to report in an ACK_ECN frame, if any ECN-marked packet arrived
    /// (RFC 9000 §13.4.1).
    pub fn ecn_counts(&self) -> Option<EcnCounts> {
        if self.ecn == [0; 3] {
            return None;
        }
        let v = |n: u64| VarInt::new(n).unwrap_or(VarInt::MAX);
        Some(EcnCounts { ect0: v(self.ecn[0]), ect1: v(self.ecn[1]), ce: v(self.ecn[2]) })
    }

    /// The ACK frame to send at `now`, with at most `max_ranges` ranges (the highest ones),
    /// its delay encoded with our `ack_delay_exponent` and ECN counts if any. `None` if
    /// nothing was received (or everything was pruned).
    pub fn ack_frame(
        &self,
        now: Instant,
        ack_delay_exponent: u8,
        max_ranges: usize,
    ) -> Option<Ack<'_>> {
        let all = self.ranges.as_slice();
        let ranges = all.get(all.len().saturating_sub(max_ranges.max(1))..)?;
        let delay = encode_ack_delay(self.ack_delay(now), ack_delay_exponent);
        #[cfg(feature = "std")]
        return Ack::new(ranges, RangeOrder::Ascending, delay, self.ecn_counts());
        // The set's invariant (ascending, disjoint, non-adjacent, at most
        // `MAX_TRACKED_PN`) is what `Ack::new` checks; 32-bit ranges go as they are.
        #[cfg(not(feature = "std"))]
        Ack::from_received(ranges, delay, self.ecn_counts())
    }

    /// An ACK was sent: the counters restart.
    pub fn on_ack_sent(&mut self) {
        self.unacked_ack_eliciting = 0;
        self.deadline = None;
        self.unacked = false;
    }

    /// RFC 9000 §13.2.4: the peer acknowledged a packet carrying our ACK whose Largest
    /// Acknowledged was `largest`: stop acknowledging packets up to it. If that ACK was
    /// truncated to its highest ranges, the lower ranges it left out are forgotten too (the
    /// peer retransmits what they carried). O(N).
    pub fn on_ack_acked(&mut self, largest: u64) {
        self.ranges.remove_up_to(largest);
    }
}
