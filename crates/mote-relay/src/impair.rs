//! What happens to the datagrams of one direction: the interop runner's drop list (by
//! datagram index), then mote-sim's link model (blackholes, MTU, rate and queue, loss with
//! a burst cap, delay and jitter, corruption) driven by real elapsed time.

use std::collections::BTreeSet;

use mote_sim::{seed, Admission, Corruption, DropReason, Instant, Link, LinkConfig};

use crate::inspect;

/// The verdict on one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Dropped, for this reason.
    Drop(&'static str),
    /// Delivered at `at`, possibly with one byte changed, possibly twice.
    Deliver {
        /// Arrival time.
        at: Instant,
        /// The byte to change, if any.
        corrupt: Option<Corruption>,
        /// Arrival time and corruption of a duplicate copy.
        duplicate: Option<(Instant, Option<Corruption>)>,
    },
}

/// One direction's impairments and running state.
#[derive(Debug)]
pub struct Impairment {
    /// 1-based indices of the datagrams to drop (the runner's `droplist` scenario).
    drop_list: BTreeSet<u64>,
    /// Datagrams seen so far in this direction.
    count: u64,
    link: Link,
}

impl Impairment {
    /// A direction with `config` and its own random stream `stream` of the run's `seed`.
    pub fn new(config: LinkConfig, drop_list: BTreeSet<u64>, run_seed: u64, stream: u64) -> Self {
        Impairment { drop_list, count: 0, link: Link::new(config, seed::rng(run_seed, stream)) }
    }

    /// Decides the fate of the next datagram, received at `now`. Returns its 1-based index
    /// in this direction and the verdict.
    pub fn judge(&mut self, now: Instant, datagram: &[u8]) -> (u64, Verdict) {
        self.count += 1;
        let index = self.count;
        if self.drop_list.contains(&index) {
            return (index, Verdict::Drop("drop_list"));
        }
        let verdict = match self.link.admit(now, datagram.len()) {
            Admission::Rejected(reason) => Verdict::Drop(reason_name(reason)),
            Admission::Accepted { original, duplicate } => match original.lost {
                Some(reason) => Verdict::Drop(reason_name(reason)),
                None => {
                    // The runner's corruption scenario never corrupts Version Negotiation.
                    let vn = inspect::is_version_negotiation(datagram);
                    let keep = |c: Option<Corruption>| if vn { None } else { c };
                    Verdict::Deliver {
                        at: original.at,
                        corrupt: keep(original.corrupt),
                        duplicate: duplicate.map(|d| (d.at, keep(d.corrupt))),
                    }
                }
            },
        };
        (index, verdict)
    }
}

/// The log name of a link drop.
fn reason_name(reason: DropReason) -> &'static str {
    reason.name()
}

/// Changes one byte of `datagram` as `corruption` says (positions past the end are
/// ignored: the link drew them from the datagram's own length).
pub fn apply(datagram: &mut [u8], corruption: Corruption) {
    if let Some(b) = datagram.get_mut(corruption.pos) {
        *b ^= corruption.xor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mote_sim::{Blackhole, Duration};

    fn deliver_at(v: Verdict) -> Instant {
        match v {
            Verdict::Deliver { at, .. } => at,
            Verdict::Drop(r) => panic!("dropped: {r}"),
        }
    }

    #[test]
    fn drop_list_counts_from_one() {
        let mut d = Impairment::new(LinkConfig::default(), [2, 3].into(), 1, 0);
        let verdicts: Vec<_> = (0..4).map(|_| d.judge(Instant::ZERO, &[0x40; 30])).collect();
        assert!(matches!(verdicts[0], (1, Verdict::Deliver { .. })));
        assert_eq!(verdicts[1], (2, Verdict::Drop("drop_list")));
        assert_eq!(verdicts[2], (3, Verdict::Drop("drop_list")));
        assert!(matches!(verdicts[3], (4, Verdict::Deliver { .. })));
    }

    #[test]
    fn loss_respects_the_burst_cap() {
        let config = LinkConfig { loss: 0.9, max_burst: 3, ..LinkConfig::default() };
        let mut d = Impairment::new(config, BTreeSet::new(), 7, 0);
        let mut run = 0;
        let mut dropped = 0;
        for _ in 0..2000 {
            match d.judge(Instant::ZERO, &[0x40; 100]).1 {
                Verdict::Drop(_) => {
                    run += 1;
                    dropped += 1;
                    assert!(run <= 3, "a burst longer than the cap");
                }
                Verdict::Deliver { .. } => run = 0,
            }
        }
        assert!(dropped > 1000, "loss 0.9 capped at bursts of 3 still drops most: {dropped}");
    }

    #[test]
    fn delay_and_blackhole_follow_the_link_model() {
        let config = LinkConfig {
            delay: Duration::from_millis(750),
            blackholes: vec![Blackhole::new(Instant(1_000_000), Duration::from_millis(500))],
            ..LinkConfig::default()
        };
        let mut d = Impairment::new(config, BTreeSet::new(), 1, 0);
        assert_eq!(deliver_at(d.judge(Instant(0), &[0x40; 10]).1), Instant(750_000));
        assert_eq!(d.judge(Instant(1_200_000), &[0x40; 10]).1, Verdict::Drop("blackhole"));
        assert_eq!(deliver_at(d.judge(Instant(1_500_000), &[0x40; 10]).1), Instant(2_250_000));
    }

    #[test]
    fn corruption_stays_in_the_first_50_bytes_and_spares_version_negotiation() {
        let config = LinkConfig { corrupt: 1.0, corrupt_range: 0..50, ..LinkConfig::default() };
        let mut d = Impairment::new(config, BTreeSet::new(), 3, 0);
        for _ in 0..200 {
            match d.judge(Instant::ZERO, &[0xc0; 1200]).1 {
                Verdict::Deliver { corrupt: Some(c), .. } => {
                    assert!(c.pos < 50);
                    assert_ne!(c.xor, 0);
                }
                other => panic!("expected a corrupted delivery, got {other:?}"),
            }
        }
        let vn = [0x80, 0, 0, 0, 0, 1, 1, 1, 2, 0, 0, 0, 1];
        assert!(matches!(d.judge(Instant::ZERO, &vn).1, Verdict::Deliver { corrupt: None, .. }));
        let mut bytes = [0u8; 4];
        apply(&mut bytes, Corruption { pos: 2, xor: 0xff });
        assert_eq!(bytes, [0, 0, 0xff, 0]);
        apply(&mut bytes, Corruption { pos: 9, xor: 0xff });
    }
}
