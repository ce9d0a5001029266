//! What a [`SendStream`](super::SendStream) remembers about its sent, unacknowledged bytes
//! above the oldest unacknowledged one: which are acknowledged and which wait for
//! retransmission (RFC 9000 §13.3: data in lost packets is sent again in new frames).
//!
//! Two bookkeepers with one interface:
//! - [`RangeBook`] (host builds): two sorted [`RangeSet`]s, the acknowledged and the lost
//!   ranges, exact up to `R` ranges each.
//! - [`CompactBook`] (devices, without `std`): `R` unsorted acknowledged ranges and **one**
//!   retransmission range `[lo, hi)`, sized for a client with one request in flight. Losses
//!   widen the one range (bytes between two lost ranges may be sent once more, which only
//!   costs bandwidth); acknowledged bytes inside it are skipped when chunks are cut. No
//!   sorting, no shifting, no range set in the image (issue 8).
//!
//! Both keep the two guarantees the stream relies on: the oldest unacknowledged offset
//! (`base`) only moves over acknowledged bytes, and every unacknowledged byte of a lost
//! packet is queued again (an acknowledgement that finds no room is turned into a
//! retransmission, never dropped).

#[cfg(any(feature = "std", test))]
use super::ranges::RangeSet;
use super::Offset;
#[cfg(any(feature = "std", test))]
use super::{narrow, wide};

/// The bookkeeper of this build.
#[cfg(feature = "std")]
pub(super) type Book<const R: usize> = RangeBook<R>;
/// The bookkeeper of this build.
#[cfg(not(feature = "std"))]
pub(super) type Book<const R: usize> = CompactBook<R>;

/// Exact bookkeeping in two sorted range sets of `R` ranges (`32·R + 2·usize` bytes).
#[cfg(any(feature = "std", test))]
#[derive(Clone, Debug)]
pub(super) struct RangeBook<const R: usize> {
    acked: RangeSet<R>,
    lost: RangeSet<R>,
}

#[cfg(any(feature = "std", test))]
// Tests of device builds use it only as the reference.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
impl<const R: usize> RangeBook<R> {
    pub(super) const fn new() -> Self {
        Self { acked: RangeSet::new(), lost: RangeSet::new() }
    }

    /// Whether nothing is recorded (as after `new`).
    #[cfg(feature = "device")]
    pub(super) const fn is_clear(&self) -> bool {
        self.acked.is_empty() && self.lost.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.acked.clear();
        self.lost.clear();
    }

    /// Ranges waiting for retransmission.
    pub(super) const fn lost_ranges(&self) -> usize {
        self.lost.len()
    }

    /// The lowest range to retransmit.
    pub(super) fn next_lost(&self) -> Option<(Offset, Offset)> {
        self.lost.first().map(|(s, e)| (narrow(s), narrow(e)))
    }

    /// `[s, e)` went out (again).
    pub(super) fn on_sent(&mut self, s: Offset, e: Offset) {
        let _ = self.lost.remove(wide(s), wide(e));
    }

    /// `[s, e)` (inside `base..sent`) was lost: queue it, acknowledged parts included.
    pub(super) fn on_lost(&mut self, s: Offset, e: Offset) {
        self.lost.insert_coalescing(wide(s), wide(e));
    }

    /// Queues `[cur, end)` minus what is acknowledged; true if anything was queued.
    pub(super) fn requeue(&mut self, cur: Offset, end: Offset) -> bool {
        let (mut cur, end) = (wide(cur), wide(end));
        let mut queued = false;
        for (s, e) in self.acked.iter() {
            if cur >= end || s >= end {
                break;
            }
            if e <= cur {
                continue;
            }
            if s > cur {
                self.lost.insert_coalescing(cur, s);
                queued = true;
            }
            cur = cur.max(e);
        }
        if cur < end {
            self.lost.insert_coalescing(cur, end);
            queued = true;
        }
        queued
    }

    #[cfg(test)]
    fn is_queued(&self, o: Offset) -> bool {
        self.lost.contains(wide(o))
    }

    /// Queues everything in `[base, sent)` not acknowledged (acknowledged ranges the
    /// bounded set cannot exclude are sent again).
    pub(super) fn requeue_all(&mut self, base: Offset, sent: Offset) {
        self.lost.insert_coalescing(wide(base), wide(sent));
        for i in 0..R {
            let Some((s, e)) = self.acked.iter().nth(i) else { break };
            let _ = self.lost.remove(s, e);
        }
    }

    /// `[s, e)` (non-empty, inside `base..sent`) was acknowledged; returns the new oldest
    /// unacknowledged offset.
    pub(super) fn on_ack(&mut self, base: Offset, s: Offset, e: Offset) -> Offset {
        let (base, s, e) = (wide(base), wide(s), wide(e));
        let _ = self.lost.remove(s, e);
        if self.acked.insert(s, e).is_err() {
            // No room to remember it: resend and have it acknowledged again later.
            self.lost.insert_coalescing(s, e);
        }
        let mut base = base;
        while let Some((rs, re)) = self.acked.first() {
            if rs > base {
                break;
            }
            base = base.max(re);
            self.acked.pop_first();
        }
        self.lost.remove_below(base);
        narrow(base)
    }
}

/// Device bookkeeping: `R` unsorted acknowledged ranges above `base` (an empty slot has
/// `start >= end`) and one retransmission range `[lo, hi)` (empty when `lo >= hi`), whose
/// `lo` never lies inside an acknowledged range. Memory: `8·R + 8` bytes (32-bit
/// offsets: it is only built without `std`, outside tests).
#[derive(Clone, Debug)]
pub(super) struct CompactBook<const R: usize> {
    acked: [(Offset, Offset); R],
    lo: Offset,
    hi: Offset,
}

// Only the device build uses it outside tests.
#[cfg_attr(feature = "std", allow(dead_code))]
impl<const R: usize> CompactBook<R> {
    pub(super) const fn new() -> Self {
        Self { acked: [(0, 0); R], lo: 0, hi: 0 }
    }

    /// Whether this is `new()`: every slot and the retransmission range zero.
    #[cfg(feature = "device")]
    pub(super) const fn is_clear(&self) -> bool {
        let mut i = 0;
        while i < R {
            if self.acked[i].0 != 0 || self.acked[i].1 != 0 {
                return false;
            }
            i += 1;
        }
        self.lo == 0 && self.hi == 0
    }

    pub(super) fn clear(&mut self) {
        *self = Self::new();
    }

    /// Ranges waiting for retransmission: 0 or 1.
    pub(super) const fn lost_ranges(&self) -> usize {
        (self.lo < self.hi) as usize
    }

    /// The first offset at or above `x` not inside an acknowledged range.
    fn skip_acked(&self, mut x: Offset) -> Offset {
        loop {
            let before = x;
            for &(s, e) in self.acked.iter() {
                if s <= x && x < e {
                    x = e;
                }
            }
            if x == before {
                return x;
            }
        }
    }

    /// The lowest unacknowledged run to retransmit: from `lo` to the end of the range or
    /// the next acknowledged range, whichever comes first.
    pub(super) fn next_lost(&self) -> Option<(Offset, Offset)> {
        if self.lo >= self.hi {
            return None;
        }
        let mut end = self.hi;
        for &(s, e) in self.acked.iter() {
            if s < e && s > self.lo {
                end = end.min(s);
            }
        }
        Some((self.lo, end))
    }

    /// `[s, e)` went out (again): a retransmission from [`CompactBook::next_lost`] starts
    /// at `lo`; new data lies above `hi` and changes nothing.
    pub(super) fn on_sent(&mut self, s: Offset, e: Offset) {
        if s <= self.lo && self.lo < e {
            self.lo = self.skip_acked(e);
        }
    }

    /// `[s, e)` (non-empty, inside `base..sent`) joins the retransmission range (widened to
    /// cover both when it already holds one).
    pub(super) fn on_lost(&mut self, s: Offset, e: Offset) {
        if self.lo >= self.hi {
            (self.lo, self.hi) = (s, e);
        } else {
            self.lo = self.lo.min(s);
            self.hi = self.hi.max(e);
        }
        self.lo = self.skip_acked(self.lo);
    }

    /// Queues `[cur, end)`; acknowledged bytes in it are skipped when it is sent. True if
    /// it holds an unacknowledged byte.
    pub(super) fn requeue(&mut self, cur: Offset, end: Offset) -> bool {
        let cur = self.skip_acked(cur);
        if cur >= end {
            return false;
        }
        self.on_lost(cur, end);
        true
    }

    #[cfg(test)]
    fn is_queued(&self, o: Offset) -> bool {
        self.lo <= o && o < self.hi
    }

    /// Queues everything in `[base, sent)` not acknowledged.
    pub(super) fn requeue_all(&mut self, base: Offset, sent: Offset) {
        if base < sent {
            self.on_lost(base, sent);
        }
    }

    /// `[s, e)` (non-empty, inside `base..sent`) was acknowledged; returns the new oldest
    /// unacknowledged offset.
    pub(super) fn on_ack(&mut self, base: Offset, s: Offset, e: Offset) -> Offset {
        let mut base = base;
        if s <= base {
            base = e;
        } else if !self.remember(s, e) {
            // No room to remember it: resend and have it acknowledged again later.
            self.on_lost(s, e);
        }
        // Absorb every remembered range the prefix now reaches (a range absorbed can make
        // an earlier-listed one reachable: repeat until nothing moves).
        loop {
            let before = base;
            for r in self.acked.iter_mut() {
                if r.0 < r.1 && r.0 <= base {
                    base = base.max(r.1);
                    *r = (0, 0);
                }
            }
            if base == before {
                break;
            }
        }
        self.lo = self.skip_acked(self.lo.max(base));
        base
    }

    /// Stores acknowledged `[s, e)`: appended to the range it continues (acknowledgements
    /// arriving in order above a hole), else in a free slot (ranges may overlap). False
    /// when every slot is taken.
    fn remember(&mut self, s: Offset, e: Offset) -> bool {
        let mut free = None;
        for (i, r) in self.acked.iter_mut().enumerate() {
            if r.0 >= r.1 {
                free = Some(i);
            } else if r.1 == s {
                r.1 = e;
                return true;
            }
        }
        match free.and_then(|i| self.acked.get_mut(i)) {
            Some(r) => {
                *r = (s, e);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// A stream of `total` bytes over either book, driven by a script of acks and losses of
    /// sent chunks; a bitmap model checks the two guarantees at every step.
    struct Model {
        acked: Vec<bool>,
        base: Offset,
        sent: Offset,
    }

    macro_rules! drive {
        ($book:expr, $total:expr, $ops:expr) => {{
            let mut book = $book;
            let total: Offset = $total;
            let mut m = Model { acked: std::vec![false; total as usize], base: 0, sent: 0 };
            let mut in_flight: Vec<(Offset, Offset)> = Vec::new();
            let mut ops = $ops.iter().cycle();
            for step in 0..20_000 {
                if m.base == total {
                    break;
                }
                // Send: a retransmission first, else new data, 5 bytes at most.
                let (s, e) = match book.next_lost() {
                    Some((s, e)) => (s, e.min(s + 5)),
                    None if m.sent < total => (m.sent, (m.sent + 5).min(total)),
                    None => (0, 0),
                };
                if s < e {
                    // Never an acknowledged byte from the retransmission range's start.
                    assert!(s >= m.base);
                    book.on_sent(s, e);
                    m.sent = m.sent.max(e);
                    in_flight.push((s, e));
                }
                if in_flight.is_empty() {
                    continue;
                }
                let op: u8 = *ops.next().unwrap();
                let i = (op as usize * 7) % in_flight.len();
                let (s, e) = in_flight.swap_remove(i);
                let (s2, e2) = (s.max(m.base), e.min(m.sent));
                // Losses stop after a while, so every stream completes.
                if op % 3 == 0 && step < 2_000 {
                    if s2 < e2 {
                        if op % 2 == 0 {
                            book.on_lost(s2, e2);
                        } else {
                            book.requeue(s2, e2);
                        }
                    }
                } else {
                    for b in &mut m.acked[s as usize..e as usize] {
                        *b = true;
                    }
                    if s2 < e2 {
                        let nb = book.on_ack(m.base, s2, e2);
                        // The base moves only over acknowledged bytes.
                        assert!(nb >= m.base);
                        assert!(m.acked[m.base as usize..nb as usize].iter().all(|&a| a));
                        m.base = nb;
                    }
                }
                if op == 7 {
                    book.requeue_all(m.base, m.sent);
                }
                // Nothing unacknowledged is forgotten: every unacknowledged byte below
                // `sent` is in flight or queued.
                for o in m.base..m.sent {
                    let flying = in_flight.iter().any(|&(s, e)| s <= o && o < e);
                    if !m.acked[o as usize] && !flying {
                        assert!(book.is_queued(o), "byte {o} forgotten");
                    }
                }
            }
            assert_eq!(m.base, total, "stream never completed");
        }};
    }

    proptest::proptest! {
        #[test]
        fn compact_book_keeps_every_unacked_byte(total in 1 as Offset..200, ops in proptest::collection::vec(0u8..12, 1..64)) {
            drive!(CompactBook::<2>::new(), total, ops);
            drive!(CompactBook::<1>::new(), total, ops);
        }

        #[test]
        fn range_book_keeps_every_unacked_byte(total in 1 as Offset..200, ops in proptest::collection::vec(0u8..12, 1..64)) {
            drive!(RangeBook::<2>::new(), total, ops);
        }
    }

    #[test]
    fn compact_skips_acknowledged_bytes_inside_the_range() {
        let mut b = CompactBook::<2>::new();
        // 0..30 sent; 10..20 acknowledged, then 0..10 and 20..30 lost.
        assert_eq!(b.on_ack(0, 10, 20), 0);
        b.on_lost(0, 10);
        b.on_lost(20, 30);
        assert_eq!(b.lost_ranges(), 1);
        assert_eq!(b.next_lost(), Some((0, 10)));
        b.on_sent(0, 10);
        assert_eq!(b.next_lost(), Some((20, 30)));
        // The retransmission of 0..10 is acknowledged: the base jumps over 10..20.
        assert_eq!(b.on_ack(0, 0, 10), 20);
        b.on_sent(20, 30);
        assert_eq!(b.next_lost(), None);
        // Only acknowledged bytes: nothing to queue.
        assert_eq!(b.on_ack(20, 25, 30), 20);
        assert!(!b.requeue(25, 30));
        assert!(b.requeue(20, 30));
        assert_eq!(b.next_lost(), Some((20, 25)));
    }

    #[test]
    fn compact_ack_without_room_becomes_a_retransmission() {
        let mut b = CompactBook::<1>::new();
        assert_eq!(b.on_ack(0, 10, 20), 0);
        // Continuing it: appended, no slot needed.
        assert_eq!(b.on_ack(0, 20, 25), 0);
        // Disjoint and no free slot: queued again instead of forgotten.
        assert_eq!(b.on_ack(0, 30, 40), 0);
        assert_eq!(b.next_lost(), Some((30, 40)));
        assert_eq!(b.on_ack(0, 0, 10), 25);
        b.clear();
        assert_eq!(b.next_lost(), None);
    }
}
