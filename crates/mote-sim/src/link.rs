//! One direction of an emulated link: what it does to each datagram ([`LinkConfig`]) and
//! the state that carries over between datagrams (queue, loss state, random stream).
//!
//! A datagram entering a link goes through, in order:
//! 1. **blackhole** — sent inside a [`Blackhole`] window: dropped at once;
//! 2. **MTU** — longer than [`LinkConfig::mtu`]: dropped at once;
//! 3. **queue** — with a rate limit, it waits in a FIFO behind the datagrams already
//!    queued; if the bytes waiting (not counting the one being serialized) plus its own
//!    would exceed [`LinkConfig::buffer_bytes`] it is tail-dropped at once;
//! 4. **serialization** — `(len + overhead) × 8 / rate` seconds on the wire;
//! 5. **loss** — bursty ([`GilbertElliott`]) then random: a lost datagram is dropped when
//!    it has left the queue (it used its airtime);
//! 6. **delay** — propagation delay plus a jitter drawn uniformly from `[0, jitter]`;
//!    datagrams never overtake each other unless picked for **reordering**, which adds
//!    [`LinkConfig::reorder_delay`] and exempts them from the FIFO rule;
//! 7. **duplication** — a second copy arrives right after the first (it costs no airtime);
//! 8. **corruption** — each copy independently may get one byte XOR-ed with a non-zero
//!    value at a position drawn from [`LinkConfig::corrupt_range`];
//! 9. **ECN** — an ECN-capable datagram (ECT(0) or ECT(1)) is marked Congestion Experienced
//!    with probability [`LinkConfig::ce_mark`], and always when it joins a queue holding more
//!    than [`LinkConfig::ce_threshold_bytes`] (an AQM marking instead of dropping).

use core::ops::Range;
use std::collections::VecDeque;

use mote_quic::{Duration, Instant};
use rand::RngExt;

use crate::seed::SimRng;
use crate::trace::DropReason;

/// The largest UDP payload over IPv4 (65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD: usize = 65_527;

/// Bursty loss: the Gilbert–Elliott two-state Markov model, stepped once per datagram.
///
/// In the *good* state a datagram is lost with probability `loss_good`, in the *bad* state
/// with `loss_bad`; after each datagram the state flips with `p_good_to_bad` or
/// `p_bad_to_good`. The mean sojourn in the bad state is `1 / p_bad_to_good` datagrams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad after a datagram.
    pub p_good_to_bad: f64,
    /// Probability of moving from bad to good after a datagram.
    pub p_bad_to_good: f64,
    /// Loss probability in the good state (1 − k).
    pub loss_good: f64,
    /// Loss probability in the bad state (1 − h).
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The simple Gilbert model with a given long-run loss rate and mean burst length (in
    /// datagrams): every datagram in the bad state is lost, none in the good state.
    /// `mean_burst` is clamped to at least 1 and `loss_rate` to `[0, 1)`.
    pub fn bursty(loss_rate: f64, mean_burst: f64) -> Self {
        let loss = if loss_rate.is_finite() { loss_rate.clamp(0.0, 0.999_999) } else { 0.0 };
        let burst = if mean_burst.is_finite() { mean_burst.max(1.0) } else { 1.0 };
        let r = 1.0 / burst;
        // Stationary P(bad) = p / (p + r) = loss  =>  p = loss * r / (1 - loss).
        let p = loss * r / (1.0 - loss);
        GilbertElliott { p_good_to_bad: p, p_bad_to_good: r, loss_good: 0.0, loss_bad: 1.0 }
    }

    /// The long-run fraction of datagrams lost.
    pub fn mean_loss(&self) -> f64 {
        let (p, r) = (self.p_good_to_bad, self.p_bad_to_good);
        if p + r <= 0.0 {
            return self.loss_good;
        }
        let bad = p / (p + r);
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

/// A window `[start, end)` during which the link drops everything sent into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blackhole {
    /// First instant of the outage.
    pub start: Instant,
    /// First instant after it.
    pub end: Instant,
}

impl Blackhole {
    /// The window `[start, start + length)`.
    pub fn new(start: Instant, length: Duration) -> Self {
        Blackhole { start, end: start + length }
    }

    /// Whether `t` falls inside the window.
    pub fn contains(&self, t: Instant) -> bool {
        self.start <= t && t < self.end
    }

    /// An on/off schedule: starting at `first`, `count` outages of length `down`, each
    /// followed by `up` of working link.
    pub fn periodic(first: Instant, down: Duration, up: Duration, count: usize) -> Vec<Blackhole> {
        let period = down + up;
        (0..count as u64).map(|i| Blackhole::new(first + period.saturating_mul(i), down)).collect()
    }
}

/// What one direction of a link does to datagrams. The default is an ideal link: no rate
/// limit, no delay, nothing lost, MTU [`MAX_UDP_PAYLOAD`].
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Bottleneck rate in bits per second; `None` (or `Some(0)`) for no limit, in which
    /// case there is no serialization delay and no queue.
    pub rate_bps: Option<u64>,
    /// Bytes that may wait for the link behind the datagram being serialized (a tail-drop
    /// FIFO). Counts wire bytes (length plus [`overhead_bytes`](Self::overhead_bytes)).
    pub buffer_bytes: usize,
    /// Bytes of lower-layer headers added to each datagram for serialization and buffer
    /// accounting (e.g. 28 for IPv4 + UDP). Zero by default: only the UDP payload counts.
    pub overhead_bytes: usize,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `[0, jitter]` per datagram (without reordering).
    pub jitter: Duration,
    /// Probability that a datagram is lost (independently of the others).
    pub loss: f64,
    /// Bursty loss, applied before `loss`.
    pub burst_loss: Option<GilbertElliott>,
    /// Longest run of consecutive datagrams the loss models (`loss`, `burst_loss`) may
    /// drop: once this many in a row were lost, the next one gets through. 0 for no cap.
    /// Blackholes, the MTU and the queue are not capped.
    pub max_burst: usize,
    /// Probability that a datagram is held back by `reorder_delay`, letting later ones
    /// overtake it.
    pub reorder: f64,
    /// Extra delay of a reordered datagram.
    pub reorder_delay: Duration,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability that a delivered copy has one byte changed.
    pub corrupt: f64,
    /// Byte positions corruption may hit (clipped to the datagram's length); e.g. `0..1`
    /// for the first byte only, `0..20` for the header area.
    pub corrupt_range: Range<usize>,
    /// Largest UDP payload the link carries; longer datagrams are dropped.
    pub mtu: usize,
    /// Outage windows.
    pub blackholes: Vec<Blackhole>,
    /// Probability that an ECN-capable datagram is marked CE.
    pub ce_mark: f64,
    /// Queue length (wire bytes) above which ECN-capable datagrams are marked CE.
    pub ce_threshold_bytes: Option<usize>,
    /// Scripted loss: 0-based indices, among the datagrams offered to this direction, of
    /// those to drop (e.g. the interop runner's amplification test drops the client's
    /// datagrams 2–7: indices 1..=6). Counted as [`DropReason::Loss`].
    pub drop_indices: Vec<u64>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            rate_bps: None,
            buffer_bytes: usize::MAX,
            overhead_bytes: 0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            burst_loss: None,
            max_burst: 0,
            reorder: 0.0,
            reorder_delay: Duration::ZERO,
            duplicate: 0.0,
            corrupt: 0.0,
            corrupt_range: 0..usize::MAX,
            mtu: MAX_UDP_PAYLOAD,
            blackholes: Vec::new(),
            ce_mark: 0.0,
            ce_threshold_bytes: None,
            drop_indices: Vec::new(),
        }
    }
}

impl LinkConfig {
    /// An ideal link with a fixed one-way delay.
    pub fn with_delay(delay: Duration) -> Self {
        LinkConfig { delay, ..LinkConfig::default() }
    }

    /// The rate limit, if any.
    fn rate(&self) -> Option<u64> {
        self.rate_bps.filter(|&r| r > 0)
    }

    /// Time to put a `len`-byte datagram (plus overhead) on the wire, rounded up to whole
    /// microseconds; zero without a rate limit.
    pub fn serialization_delay(&self, len: usize) -> Duration {
        let Some(rate) = self.rate() else { return Duration::ZERO };
        let bits = (len as u128 + self.overhead_bytes as u128) * 8 * 1_000_000;
        let us = bits.div_ceil(u128::from(rate));
        Duration(u64::try_from(us).unwrap_or(u64::MAX))
    }

    /// Whether `t` is inside a blackhole window.
    pub fn blackholed(&self, t: Instant) -> bool {
        self.blackholes.iter().any(|b| b.contains(t))
    }
}

/// One byte to change in a delivered copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// Byte offset in the datagram.
    pub pos: usize,
    /// Non-zero value XOR-ed into it.
    pub xor: u8,
}

/// The fate of one copy of an admitted datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    /// When it arrives (or, if lost, when it is lost).
    pub at: Instant,
    /// `Some` if it is lost on the wire.
    pub lost: Option<DropReason>,
    /// A byte to corrupt on arrival.
    pub corrupt: Option<Corruption>,
    /// Held back for reordering.
    pub reordered: bool,
    /// Marked Congestion Experienced if it is ECN-capable.
    pub ce: bool,
}

/// What a link does with a datagram offered to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Dropped on entry (blackhole, MTU, full queue).
    Rejected(DropReason),
    /// Sent; `duplicate` is the extra copy, if duplication picked it.
    Accepted {
        /// The datagram itself.
        original: Fate,
        /// A duplicate copy, if duplication picked it.
        duplicate: Option<Fate>,
    },
}

/// One direction of a link: its configuration and running state. The simulator drives it
/// with virtual time; `mote-relay` drives the same model with real elapsed time.
#[derive(Debug)]
pub struct Link {
    /// What it does; may be changed between datagrams.
    pub config: LinkConfig,
    rng: SimRng,
    /// When the datagram being serialized (or the last queued one) leaves the queue.
    busy_until: Instant,
    /// Datagrams waiting: (time their serialization starts, wire bytes).
    waiting: VecDeque<(Instant, usize)>,
    waiting_bytes: usize,
    /// Arrival time of the last datagram not picked for reordering (FIFO under jitter).
    last_arrival: Instant,
    /// Gilbert–Elliott state.
    bad: bool,
    /// Datagrams lost in a row by the loss models (for [`LinkConfig::max_burst`]).
    lost_run: usize,
    /// Datagrams offered so far (for [`LinkConfig::drop_indices`]).
    offered: u64,
}

/// A uniform draw in `[0, 1)`.
fn unit(rng: &mut SimRng) -> f64 {
    rng.random::<f64>()
}

/// Draws "yes" with probability `p` (never for `p <= 0` or NaN, always for `p >= 1`),
/// consuming randomness only when the feature is on.
fn chance(rng: &mut SimRng, p: f64) -> bool {
    p > 0.0 && unit(rng) < p
}

impl Link {
    /// A link direction in its initial state (idle, empty queue, good loss state) drawing
    /// from `rng` (see [`seed::rng`](crate::seed::rng)).
    pub fn new(config: LinkConfig, rng: SimRng) -> Self {
        Link {
            config,
            rng,
            busy_until: Instant::ZERO,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            last_arrival: Instant::ZERO,
            bad: false,
            lost_run: 0,
            offered: 0,
        }
    }

    /// Bytes waiting for the link at `now` (not counting the one being serialized).
    pub fn queued_bytes(&mut self, now: Instant) -> usize {
        while let Some(&(start, bytes)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes;
        }
        self.waiting_bytes
    }

    /// Offers a `len`-byte datagram to the link at `now`.
    pub fn admit(&mut self, now: Instant, len: usize) -> Admission {
        let index = self.offered;
        self.offered += 1;
        if self.config.drop_indices.contains(&index) {
            return Admission::Rejected(DropReason::Loss);
        }
        if self.config.blackholed(now) {
            return Admission::Rejected(DropReason::Blackhole);
        }
        if len > self.config.mtu {
            return Admission::Rejected(DropReason::Mtu);
        }

        // Queue and serialization.
        let mut queue_ce = false;
        let departs = if self.config.rate().is_some() {
            let start = self.busy_until.max(now);
            let wire = len.saturating_add(self.config.overhead_bytes);
            if start > now {
                let queued = self.queued_bytes(now);
                if queued.saturating_add(wire) > self.config.buffer_bytes {
                    return Admission::Rejected(DropReason::Queue);
                }
                queue_ce = self.config.ce_threshold_bytes.is_some_and(|t| queued > t);
                self.waiting.push_back((start, wire));
                self.waiting_bytes += wire;
            }
            let departs = start + self.config.serialization_delay(len);
            self.busy_until = departs;
            departs
        } else {
            now
        };

        // Loss on the wire: the bursty chain steps for every datagram that gets this far.
        let mut lost = None;
        if let Some(ge) = self.config.burst_loss {
            let p_loss = if self.bad { ge.loss_bad } else { ge.loss_good };
            if chance(&mut self.rng, p_loss) {
                lost = Some(DropReason::BurstLoss);
            }
            let flip = if self.bad { ge.p_bad_to_good } else { ge.p_good_to_bad };
            if chance(&mut self.rng, flip) {
                self.bad = !self.bad;
            }
        }
        if chance(&mut self.rng, self.config.loss) && lost.is_none() {
            lost = Some(DropReason::Loss);
        }
        if lost.is_some() {
            if self.config.max_burst > 0 && self.lost_run >= self.config.max_burst {
                lost = None;
                self.lost_run = 0;
            } else {
                self.lost_run += 1;
            }
        } else {
            self.lost_run = 0;
        }
        if let Some(reason) = lost {
            let copy = Fate {
                at: departs,
                lost: Some(reason),
                corrupt: None,
                reordered: false,
                ce: false,
            };
            return Admission::Accepted { original: copy, duplicate: None };
        }

        // Delay, jitter and reordering.
        let jitter = match self.config.jitter.as_micros() {
            0 => 0,
            j => self.rng.random_range(0..=j),
        };
        let base = departs + self.config.delay + Duration(jitter);
        let reordered = chance(&mut self.rng, self.config.reorder);
        let at = if reordered {
            base + self.config.reorder_delay
        } else {
            let at = base.max(self.last_arrival);
            self.last_arrival = at;
            at
        };
        let corrupt = self.corruption(len);
        let ce = queue_ce || chance(&mut self.rng, self.config.ce_mark);
        let original = Fate { at, lost: None, corrupt, reordered, ce };
        let duplicate = if chance(&mut self.rng, self.config.duplicate) {
            let corrupt = self.corruption(len);
            Some(Fate { corrupt, ..original })
        } else {
            None
        };
        Admission::Accepted { original, duplicate }
    }

    /// Draws whether a copy of a `len`-byte datagram is corrupted, and where.
    fn corruption(&mut self, len: usize) -> Option<Corruption> {
        if !chance(&mut self.rng, self.config.corrupt) {
            return None;
        }
        let range = &self.config.corrupt_range;
        let end = range.end.min(len);
        if range.start >= end {
            return None;
        }
        let pos = self.rng.random_range(range.start..end);
        let xor = self.rng.random_range(1..=u8::MAX);
        Some(Corruption { pos, xor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed;

    fn link(config: LinkConfig) -> Link {
        Link::new(config, seed::rng(1, 0))
    }

    fn arrival(a: Admission) -> Instant {
        match a {
            Admission::Accepted { original, .. } => original.at,
            Admission::Rejected(r) => panic!("rejected: {r:?}"),
        }
    }

    #[test]
    fn serialization_delay_nbiot() {
        // 1200 bytes at 127 kbit/s: 9600 / 127000 s = 75590.55 µs, rounded up.
        let c = LinkConfig { rate_bps: Some(127_000), ..LinkConfig::default() };
        assert_eq!(c.serialization_delay(1200), Duration(75_591));
        let c = LinkConfig { overhead_bytes: 28, ..c };
        assert_eq!(c.serialization_delay(1200), Duration(77_355));
        assert_eq!(LinkConfig::default().serialization_delay(1200), Duration::ZERO);
    }

    #[test]
    fn back_to_back_datagrams_queue() {
        let mut l = link(LinkConfig {
            rate_bps: Some(8_000_000), // 1 byte per µs
            delay: Duration(10),
            ..LinkConfig::default()
        });
        assert_eq!(arrival(l.admit(Instant(0), 100)), Instant(110));
        assert_eq!(arrival(l.admit(Instant(0), 100)), Instant(210));
        assert_eq!(l.queued_bytes(Instant(0)), 100);
        assert_eq!(l.queued_bytes(Instant(100)), 0);
        // Idle link again: no queueing.
        assert_eq!(arrival(l.admit(Instant(1000), 50)), Instant(1060));
    }

    #[test]
    fn tail_drop() {
        let mut l = link(LinkConfig {
            rate_bps: Some(8_000_000),
            buffer_bytes: 250,
            ..LinkConfig::default()
        });
        let fates: Vec<_> = (0..5).map(|_| l.admit(Instant(0), 100)).collect();
        // First in service, two wait (200 bytes), the fourth would make 300 > 250.
        assert!(matches!(fates[2], Admission::Accepted { .. }));
        assert_eq!(fates[3], Admission::Rejected(DropReason::Queue));
        assert_eq!(fates[4], Admission::Rejected(DropReason::Queue));
        // Once the first has left, one more fits.
        assert!(matches!(l.admit(Instant(100), 100), Admission::Accepted { .. }));
    }

    #[test]
    fn mtu_and_blackhole() {
        let mut l = link(LinkConfig {
            mtu: 1200,
            blackholes: vec![Blackhole::new(Instant(100), Duration(50))],
            ..LinkConfig::default()
        });
        assert_eq!(l.admit(Instant(0), 1201), Admission::Rejected(DropReason::Mtu));
        assert!(matches!(l.admit(Instant(0), 1200), Admission::Accepted { .. }));
        assert!(matches!(l.admit(Instant(99), 10), Admission::Accepted { .. }));
        assert_eq!(l.admit(Instant(100), 10), Admission::Rejected(DropReason::Blackhole));
        assert_eq!(l.admit(Instant(149), 10), Admission::Rejected(DropReason::Blackhole));
        assert!(matches!(l.admit(Instant(150), 10), Admission::Accepted { .. }));
    }

    #[test]
    fn periodic_blackholes() {
        let b = Blackhole::periodic(Instant(10), Duration(5), Duration(15), 3);
        assert_eq!(b.len(), 3);
        assert_eq!(b[1], Blackhole { start: Instant(30), end: Instant(35) });
        assert_eq!(b[2].end, Instant(55));
    }

    #[test]
    fn jitter_keeps_order() {
        let mut l = link(LinkConfig {
            delay: Duration(1000),
            jitter: Duration(900),
            ..LinkConfig::default()
        });
        let mut last = Instant::ZERO;
        for t in 0..1000 {
            let at = arrival(l.admit(Instant(t * 10), 10));
            assert!(at >= last, "overtaken at {t}");
            assert!(at >= Instant(t * 10 + 1000));
            last = at;
        }
    }

    #[test]
    fn gilbert_elliott_parameters() {
        let ge = GilbertElliott::bursty(0.05, 4.0);
        assert!((ge.p_bad_to_good - 0.25).abs() < 1e-12);
        assert!((ge.mean_loss() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn drop_indices_drop_exactly_those_datagrams() {
        let mut l = link(LinkConfig { drop_indices: (1..=6).collect(), ..LinkConfig::default() });
        let dropped: Vec<bool> = (0..10)
            .map(|t| matches!(l.admit(Instant(t), 100), Admission::Rejected(DropReason::Loss)))
            .collect();
        let mut expected = [false; 10];
        expected[1..=6].fill(true);
        assert_eq!(dropped, expected);
    }

    #[test]
    fn max_burst_caps_consecutive_losses() {
        for (loss, burst) in [(0.3, None), (0.0, Some(GilbertElliott::bursty(0.3, 8.0)))] {
            let mut l =
                link(LinkConfig { loss, burst_loss: burst, max_burst: 3, ..LinkConfig::default() });
            let (mut run, mut longest, mut lost) = (0, 0, 0);
            for t in 0..10_000 {
                match l.admit(Instant(t), 100) {
                    Admission::Accepted { original, .. } if original.lost.is_some() => {
                        run += 1;
                        lost += 1;
                    }
                    _ => run = 0,
                }
                longest = longest.max(run);
            }
            assert_eq!(longest, 3, "{loss} {burst:?}");
            assert!(lost > 1_500, "{lost}");
        }
        // Uncapped, 30 % random loss has longer runs in 10 000 datagrams.
        let mut l = link(LinkConfig { loss: 0.3, ..LinkConfig::default() });
        let (mut run, mut longest) = (0, 0);
        for t in 0..10_000 {
            match l.admit(Instant(t), 100) {
                Admission::Accepted { original, .. } if original.lost.is_some() => run += 1,
                _ => run = 0,
            }
            longest = longest.max(run);
        }
        assert!(longest > 3);
    }

    #[test]
    fn corruption_stays_in_range() {
        let mut l = link(LinkConfig { corrupt: 1.0, corrupt_range: 3..8, ..LinkConfig::default() });
        for _ in 0..500 {
            let Admission::Accepted { original, .. } = l.admit(Instant(0), 100) else {
                panic!("rejected")
            };
            let c = original.corrupt.expect("always corrupted");
            assert!((3..8).contains(&c.pos));
            assert_ne!(c.xor, 0);
        }
        // Range beyond the datagram: nothing to corrupt.
        let Admission::Accepted { original, .. } = l.admit(Instant(0), 2) else { panic!() };
        assert_eq!(original.corrupt, None);
    }
}
