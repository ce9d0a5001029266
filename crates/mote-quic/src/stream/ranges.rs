//! A fixed-capacity set of byte ranges, the bookkeeping behind reassembly, acknowledgement
//! and retransmission.

/// The set already holds its maximum number of disjoint ranges and the operation would need
/// one more. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// Up to `N` sorted, disjoint, non-adjacent half-open ranges `[start, end)` of stream
/// offsets. Memory: `16 * N + size_of::<usize>()` bytes, never more.
///
/// Every operation is `O(N)` and either succeeds or leaves the set unchanged.
#[derive(Clone, Debug)]
pub struct RangeSet<const N: usize> {
    r: [(u64, u64); N],
    len: usize,
}

impl<const N: usize> Default for RangeSet<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> RangeSet<N> {
    /// An empty set.
    pub const fn new() -> Self {
        Self { r: [(0, 0); N], len: 0 }
    }

    /// Number of disjoint ranges held.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when no range is held.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ranges, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.r.iter().take(self.len).copied()
    }

    /// The lowest range.
    pub fn first(&self) -> Option<(u64, u64)> {
        if self.len == 0 {
            None
        } else {
            self.r.first().copied()
        }
    }

    /// Removes every range.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// True if `offset` lies in a held range.
    pub fn contains(&self, offset: u64) -> bool {
        self.iter().any(|(s, e)| s <= offset && offset < e)
    }

    /// Where `[start, end)` would go: ranges `i..j` overlap it and, with `touch`, also those
    /// that only touch it. `i` is the first range that ends after `start` (at `start` too
    /// with `touch`), `j` the first that starts after `end` (at `end` too without `touch`).
    /// One function for `insert` (touching) and `remove` (overlapping only): issue 8.
    fn span(&self, start: u64, end: u64, touch: bool) -> (usize, usize) {
        let i = self.iter().position(|(_, e)| e > start || (touch && e == start));
        let j = self.iter().position(|(s, _)| s > end || (!touch && s == end));
        let i = i.unwrap_or(self.len);
        (i, j.unwrap_or(self.len).max(i))
    }

    /// Adds `[start, end)`, merging it with every range it overlaps or touches. Fails when
    /// the union would need more than `N` ranges. An empty range is a no-op.
    pub fn insert(&mut self, start: u64, end: u64) -> Result<(), Full> {
        if start >= end {
            return Ok(());
        }
        let (i, j) = self.span(start, end, true);
        if i == j {
            if self.len >= N {
                return Err(Full);
            }
            // Shift i.. right by one.
            let mut k = self.len;
            while k > i {
                self.r[k] = self.r[k - 1];
                k -= 1;
            }
            self.r[i] = (start, end);
            self.len += 1;
            return Ok(());
        }
        let lo = start.min(self.r[i].0);
        let hi = end.max(self.r[j - 1].1);
        self.r[i] = (lo, hi);
        self.remove_slots(i + 1, j);
        Ok(())
    }

    /// Adds `[start, end)` like [`RangeSet::insert`], but when the set is full widens the
    /// nearest held range to cover it (and the gap between them) instead of failing. The
    /// result is a superset of the exact union: for ranges to *retransmit* that only costs
    /// some bytes sent twice. Needs `N ≥ 1`; with `N == 0` nothing is stored.
    pub fn insert_coalescing(&mut self, start: u64, end: u64) {
        if self.insert(start, end).is_ok() || self.len == 0 {
            return;
        }
        // Full and disjoint from every range: merge with the closer neighbour.
        let (i, _) = self.span(start, end, true);
        let left_gap = if i > 0 { start.saturating_sub(self.r[i - 1].1) } else { u64::MAX };
        let right_gap = if i < self.len { self.r[i].0.saturating_sub(end) } else { u64::MAX };
        let k = if left_gap <= right_gap { i - 1 } else { i };
        let (s, e) = self.r[k];
        self.r[k] = (s.min(start), e.max(end));
    }

    /// Removes `[start, end)` from the set. Fails (changing nothing) when that would split a
    /// range while the set is full.
    pub fn remove(&mut self, start: u64, end: u64) -> Result<(), Full> {
        if start >= end {
            return Ok(());
        }
        // Ranges strictly overlapping [start, end).
        let (i, j) = self.span(start, end, false);
        if i == j {
            return Ok(());
        }
        let (first_s, _) = self.r[i];
        let (_, last_e) = self.r[j - 1];
        let keep_left = first_s < start;
        let keep_right = last_e > end;
        let needed = usize::from(keep_left) + usize::from(keep_right);
        if self.len - (j - i) + needed > N {
            return Err(Full);
        }
        // Drop the overlapped ranges, then put back the parts outside [start, end): each
        // is disjoint from and not adjacent to every other range (the set's invariant), the
        // capacity was checked above, so the inserts cannot fail (issue 8: the slot shifting
        // is `insert`'s, not a second copy here).
        self.remove_slots(i, j);
        if keep_left {
            let _ = self.insert(first_s, start);
        }
        if keep_right {
            let _ = self.insert(end, last_e);
        }
        Ok(())
    }

    /// Removes everything below `offset` (never splits, so never fails).
    pub fn remove_below(&mut self, offset: u64) {
        let _ = self.remove(0, offset);
    }

    /// Removes and returns the lowest range.
    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        let first = self.first()?;
        self.remove_slots(0, 1);
        Some(first)
    }

    /// Drops slots `from..to`, shifting the rest left.
    fn remove_slots(&mut self, from: usize, to: usize) {
        let n = to - from;
        if n == 0 {
            return;
        }
        self.r.copy_within(to..self.len, from);
        self.len -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn v<const N: usize>(s: &RangeSet<N>) -> Vec<(u64, u64)> {
        s.iter().collect()
    }

    #[test]
    fn insert_merges_and_caps() {
        let mut s = RangeSet::<3>::new();
        s.insert(10, 20).unwrap();
        s.insert(30, 40).unwrap();
        s.insert(50, 60).unwrap();
        assert_eq!(s.insert(70, 80), Err(Full));
        assert_eq!(v(&s), [(10, 20), (30, 40), (50, 60)]);
        // Touching merges.
        s.insert(20, 30).unwrap();
        assert_eq!(v(&s), [(10, 40), (50, 60)]);
        s.insert(0, 5).unwrap();
        assert_eq!(v(&s), [(0, 5), (10, 40), (50, 60)]);
        s.insert(3, 55).unwrap();
        assert_eq!(v(&s), [(0, 60)]);
        s.insert(5, 6).unwrap();
        assert_eq!(v(&s), [(0, 60)]);
    }

    #[test]
    fn remove_splits_when_room() {
        let mut s = RangeSet::<2>::new();
        s.insert(0, 100).unwrap();
        s.remove(10, 20).unwrap();
        assert_eq!(v(&s), [(0, 10), (20, 100)]);
        assert_eq!(s.remove(50, 60), Err(Full));
        assert_eq!(v(&s), [(0, 10), (20, 100)]);
        s.remove(5, 25).unwrap();
        assert_eq!(v(&s), [(0, 5), (25, 100)]);
        s.remove_below(30);
        assert_eq!(v(&s), [(30, 100)]);
        s.remove(0, 1000).unwrap();
        assert!(s.is_empty());
    }

    /// `remove` shares `span` with `insert` but only counts overlapping ranges: a hole that
    /// only touches ranges changes nothing (and cannot fail on a full set), while `insert`
    /// merges the same touching ranges.
    #[test]
    fn remove_ignores_touching_ranges_insert_merges_them() {
        let mut s = RangeSet::<2>::new();
        s.insert(10, 20).unwrap();
        s.insert(30, 40).unwrap();
        s.remove(20, 30).unwrap();
        assert_eq!(v(&s), [(10, 20), (30, 40)]);
        s.remove(0, 10).unwrap();
        s.remove(40, 50).unwrap();
        assert_eq!(v(&s), [(10, 20), (30, 40)]);
        // Full: splitting fails, trimming at either edge does not.
        assert_eq!(s.remove(12, 14), Err(Full));
        s.remove(19, 31).unwrap();
        assert_eq!(v(&s), [(10, 19), (31, 40)]);
        s.insert(19, 31).unwrap();
        assert_eq!(v(&s), [(10, 40)]);
    }

    #[test]
    fn coalescing_never_fails() {
        let mut s = RangeSet::<2>::new();
        s.insert_coalescing(0, 10);
        s.insert_coalescing(100, 110);
        s.insert_coalescing(20, 30);
        assert_eq!(v(&s), [(0, 30), (100, 110)]);
        s.insert_coalescing(90, 95);
        assert_eq!(v(&s), [(0, 30), (90, 110)]);
        let mut z = RangeSet::<0>::new();
        z.insert_coalescing(0, 1);
        assert!(z.is_empty());
    }

    proptest::proptest! {
        /// The set always equals the exact union when inserts succeed, and never exceeds N.
        #[test]
        fn matches_bitmap(ops in proptest::collection::vec((0u64..64, 1u64..16, proptest::bool::ANY), 0..60)) {
            let mut s = RangeSet::<4>::new();
            let mut bits = [false; 80];
            for (start, len, add) in ops {
                let end = start + len;
                let before = bits;
                let ok = if add { s.insert(start, end).is_ok() } else { s.remove(start, end).is_ok() };
                if ok {
                    for b in &mut bits[start as usize..end as usize] { *b = add; }
                } else {
                    proptest::prop_assert_eq!(bits, before);
                }
                proptest::prop_assert!(s.len() <= 4);
                let mut model = [false; 80];
                let mut last_end = None;
                for (a, b) in s.iter() {
                    proptest::prop_assert!(a < b);
                    if let Some(le) = last_end { proptest::prop_assert!(a > le); }
                    last_end = Some(b);
                    for m in &mut model[a as usize..b as usize] { *m = true; }
                }
                proptest::prop_assert_eq!(model, bits);
            }
        }
    }
}
