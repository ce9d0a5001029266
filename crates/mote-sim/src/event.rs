//! The event queue: a binary heap ordered by virtual time, then by insertion order, so
//! that events at the same instant run first-in first-out and every run is reproducible.

use core::cmp::Ordering;
use std::collections::BinaryHeap;

use mote_quic::Instant;

/// A queued event.
#[derive(Debug)]
struct Entry<T> {
    at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Reversed, so the max-heap pops the earliest (time, sequence) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A min-queue of events keyed by `(time, insertion sequence)`.
#[derive(Debug)]
pub(crate) struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
}

impl<T> EventQueue<T> {
    pub(crate) fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), next_seq: 0 }
    }

    /// Schedules `item` at `at`, after everything already scheduled at that instant.
    pub(crate) fn push(&mut self, at: Instant, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, item });
    }

    /// The time of the earliest event.
    pub(crate) fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }

    /// Removes the earliest event.
    pub(crate) fn pop(&mut self) -> Option<(Instant, T)> {
        self.heap.pop().map(|e| (e.at, e.item))
    }

    /// Events still queued.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_fifo() {
        let mut q = EventQueue::new();
        q.push(Instant(5), "b");
        q.push(Instant(1), "a");
        q.push(Instant(5), "c");
        q.push(Instant(5), "d");
        assert_eq!(q.peek_time(), Some(Instant(1)));
        let order: Vec<_> = core::iter::from_fn(|| q.pop()).map(|(_, s)| s).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
        assert_eq!(q.len(), 0);
    }
}
