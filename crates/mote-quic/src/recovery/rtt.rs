//! RTT estimation (RFC 9002 §5, App. A.3 and A.7).

use super::{GRANULARITY, PERSISTENT_CONGESTION_THRESHOLD};
use crate::time::{Duration, Micros};

/// The estimates as stored: microseconds in [`Micros`], `u32` on devices (builds without
/// `std`), where the EWMAs then take 32-bit arithmetic (issue 8). A `u32` holds 71.6
/// minutes: a longer sample or estimate saturates there (a [`Duration`] does). RFC 9002
/// sets no upper bound on an RTT, but a device connection never sees one that long (its
/// idle timeout and PTOs end it first); hosts keep `u64`.
type Us = Micros;

/// `d` in microseconds.
const fn us(d: Duration) -> Us {
    d.0
}

/// `v` microseconds.
const fn dur(v: Us) -> Duration {
    Duration(v)
}

/// Round-trip time estimates of one path (RFC 9002 §5): `latest_rtt`, `min_rtt`,
/// `smoothed_rtt` and `rttvar`.
///
/// Before the first sample `smoothed_rtt` is the configured initial RTT and `rttvar` half
/// of it (RFC 9002 §6.2.2), so the first PTO fires after 3 × initial RTT. The EWMAs use
/// shifts only (7/8, 3/4); 48 bytes, 24 without `std` (32-bit estimates and time, see `Us`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    initial: Duration,
    latest: Us,
    smoothed: Us,
    var: Us,
    min: Us,
    has_sample: bool,
}

impl RttEstimator {
    /// An estimator that assumes `initial_rtt` until the first sample ([`super::DEFAULT_INITIAL_RTT`]
    /// is RFC 9002's 333 ms; slow links want more, see [`super::NB_IOT_INITIAL_RTT`]).
    pub const fn new(initial_rtt: Duration) -> Self {
        let rtt = us(initial_rtt);
        Self {
            initial: initial_rtt,
            latest: rtt,
            smoothed: rtt,
            var: rtt >> 1,
            min: 0,
            has_sample: false,
        }
    }

    /// Forgets all samples (RFC 9000 §9.4: a new path starts from the initial RTT).
    pub fn reset(&mut self) {
        *self = Self::new(self.initial);
    }

    /// RFC 9002 §5.3 / App. A.7 `UpdateRtt`: takes a sample `latest_rtt` (now minus the send
    /// time of the largest newly acknowledged, ack-eliciting packet) and the peer's reported
    /// `ack_delay`.
    ///
    /// The first sample sets every estimate from `latest_rtt` alone. Afterwards `min_rtt`
    /// ignores the ack delay; once the handshake is confirmed the ack delay is clamped to the
    /// peer's `max_ack_delay`; it is subtracted only if that leaves at least `min_rtt`.
    pub fn update(
        &mut self,
        latest_rtt: Duration,
        ack_delay: Duration,
        max_ack_delay: Duration,
        handshake_confirmed: bool,
    ) {
        let latest_rtt = us(latest_rtt);
        self.latest = latest_rtt;
        if !self.has_sample {
            self.has_sample = true;
            self.min = latest_rtt;
            self.smoothed = latest_rtt;
            self.var = latest_rtt >> 1;
            return;
        }
        if latest_rtt < self.min {
            self.min = latest_rtt;
        }
        let ack_delay = if handshake_confirmed && ack_delay > max_ack_delay {
            max_ack_delay
        } else {
            ack_delay
        };
        let ack_delay = us(ack_delay);
        let adjusted = if latest_rtt >= self.min.saturating_add(ack_delay) {
            latest_rtt - ack_delay
        } else {
            latest_rtt
        };
        // rttvar = 3/4 rttvar + 1/4 |smoothed_rtt - adjusted_rtt| (at most the type's max)
        let dev = self.smoothed.abs_diff(adjusted);
        self.var = (self.var >> 1) + (self.var >> 2) + (dev >> 2);
        // smoothed_rtt = 7/8 smoothed_rtt + 1/8 adjusted_rtt
        self.smoothed = self.smoothed - (self.smoothed >> 3) + (adjusted >> 3);
    }

    /// Whether a sample was taken.
    pub const fn has_sample(&self) -> bool {
        self.has_sample
    }

    /// The configured initial RTT.
    pub const fn initial(&self) -> Duration {
        self.initial
    }

    /// `latest_rtt` (the initial RTT before any sample).
    pub const fn latest(&self) -> Duration {
        dur(self.latest)
    }

    /// `min_rtt` (zero before any sample).
    pub const fn min(&self) -> Duration {
        dur(self.min)
    }

    /// `smoothed_rtt`.
    pub const fn smoothed(&self) -> Duration {
        dur(self.smoothed)
    }

    /// `rttvar`.
    pub const fn rttvar(&self) -> Duration {
        dur(self.var)
    }

    /// RFC 9002 §6.2.1: `smoothed_rtt + max(4 × rttvar, kGranularity)`, the PTO period
    /// without max_ack_delay and backoff.
    // Out of line: the PTO period, the timer scan and persistent congestion each inlined a
    // copy of the 64-bit arithmetic (issue 8).
    #[inline(never)]
    pub const fn pto_base(&self) -> Duration {
        let var4 = dur(self.var).saturating_mul(4);
        let v = if var4.0 > GRANULARITY.0 { var4 } else { GRANULARITY };
        dur(self.smoothed).saturating_add(v)
    }

    /// RFC 9002 §6.1.2: the time threshold `max(9/8 × max(smoothed_rtt, latest_rtt),
    /// kGranularity)`.
    pub const fn loss_delay(&self) -> Duration {
        let m = if self.latest > self.smoothed { self.latest } else { self.smoothed };
        let d = dur(m).saturating_add(dur(m >> 3));
        if d.0 > GRANULARITY.0 {
            d
        } else {
            GRANULARITY
        }
    }

    /// RFC 9002 §7.6.1: `(smoothed_rtt + max(4 × rttvar, kGranularity) + max_ack_delay) ×
    /// kPersistentCongestionThreshold`, with max_ack_delay included in every space.
    pub const fn persistent_congestion_duration(&self, max_ack_delay: Duration) -> Duration {
        self.pto_base()
            .saturating_add(max_ack_delay)
            .saturating_mul(PERSISTENT_CONGESTION_THRESHOLD)
    }
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(super::DEFAULT_INITIAL_RTT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Micros = 1_000;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn initial_values_and_first_pto() {
        let r = RttEstimator::default();
        assert_eq!(r.smoothed(), ms(333));
        assert_eq!(r.rttvar(), Duration(166_500));
        // 333 + 4 × 166.5 = 999 ms
        assert_eq!(r.pto_base(), ms(999));
        let slow = RttEstimator::new(super::super::NB_IOT_INITIAL_RTT);
        assert_eq!(slow.pto_base(), ms(6_000));
    }

    #[test]
    fn first_sample_ignores_ack_delay() {
        let mut r = RttEstimator::default();
        r.update(ms(100), ms(50), ms(25), true);
        assert!(r.has_sample());
        assert_eq!(r.min(), ms(100));
        assert_eq!(r.smoothed(), ms(100));
        assert_eq!(r.rttvar(), ms(50));
        assert_eq!(r.latest(), ms(100));
    }

    #[test]
    fn ewma_after_first_sample() {
        let mut r = RttEstimator::default();
        r.update(ms(100), Duration::ZERO, ms(25), true);
        r.update(ms(180), Duration::ZERO, ms(25), true);
        // smoothed = 7/8 × 100 + 1/8 × 180 = 110; rttvar = 3/4 × 50 + 1/4 × 80 = 57.5
        assert_eq!(r.smoothed(), ms(110));
        assert_eq!(r.rttvar(), Duration(57_500));
        assert_eq!(r.min(), ms(100));
    }

    #[test]
    fn ack_delay_clamped_after_confirmation() {
        // Confirmed: the 200 ms claimed delay is clamped to max_ack_delay 25 ms.
        let mut r = RttEstimator::default();
        r.update(ms(100), Duration::ZERO, ms(25), true);
        r.update(ms(300), ms(200), ms(25), true);
        // adjusted = 300 - 25 = 275; smoothed = 87.5 + 34.375 = 121.875
        assert_eq!(r.smoothed(), Duration(121_875));

        // Not confirmed: the whole delay is subtracted (still >= min_rtt).
        let mut r = RttEstimator::default();
        r.update(ms(100), Duration::ZERO, ms(25), false);
        r.update(ms(300), ms(200), ms(25), false);
        // adjusted = 100; smoothed = 100
        assert_eq!(r.smoothed(), ms(100));
    }

    #[test]
    fn ack_delay_never_below_min_rtt() {
        let mut r = RttEstimator::default();
        r.update(ms(100), Duration::ZERO, ms(25), true);
        // 120 - 25 = 95 < min_rtt 100: the delay is not subtracted.
        r.update(ms(120), ms(25), ms(25), true);
        assert_eq!(r.smoothed(), Duration(100 * MS + 20 * MS / 8));
    }

    #[test]
    fn min_rtt_tracks_raw_samples() {
        let mut r = RttEstimator::default();
        r.update(ms(100), Duration::ZERO, ms(25), true);
        r.update(ms(60), ms(40), ms(25), true);
        assert_eq!(r.min(), ms(60));
    }

    #[test]
    fn loss_delay_and_persistent_congestion_duration() {
        let mut r = RttEstimator::default();
        r.update(ms(80), Duration::ZERO, ms(25), true);
        assert_eq!(r.loss_delay(), ms(90));
        // (80 + 4 × 40 + 25) × 3
        assert_eq!(r.persistent_congestion_duration(ms(25)), ms(795));
        let mut tiny = RttEstimator::default();
        tiny.update(Duration(100), Duration::ZERO, Duration::ZERO, true);
        assert_eq!(tiny.loss_delay(), GRANULARITY);
        assert_eq!(tiny.pto_base(), Duration(100) + GRANULARITY);
    }

    /// RFC 9002 §5.3, §6.1.2: a sample below the clock's unit (an ACK processed in the
    /// microsecond its packet left) is 0. It is a sample like another (min_rtt and
    /// smoothed_rtt take it, a later one still counts), and the loss delay and the PTO keep
    /// kGranularity (1 ms).
    #[test]
    fn a_zero_sample_keeps_the_granularity() {
        let mut r = RttEstimator::default();
        r.update(Duration::ZERO, Duration::ZERO, ms(25), true);
        assert!(r.has_sample());
        assert_eq!(
            (r.min(), r.smoothed(), r.rttvar()),
            (Duration::ZERO, Duration::ZERO, Duration::ZERO)
        );
        assert_eq!(r.loss_delay(), GRANULARITY);
        assert_eq!(r.pto_base(), GRANULARITY);
        // 10 ms with 5 ms of ACK delay: adjusted to 5 ms (10 >= min_rtt 0 + 5).
        r.update(ms(10), ms(5), ms(25), true);
        assert_eq!(r.min(), Duration::ZERO);
        assert_eq!(r.smoothed(), Duration(5 * MS / 8));
        assert!(r.pto_base() > GRANULARITY);
    }

    /// Without `std` the estimates are 32-bit: a sample beyond 2^32 µs (71.6 minutes)
    /// counts as that long, and so does the PTO (a deadline is then clamped to
    /// `time::MAX_SPAN` ahead).
    #[cfg(not(feature = "std"))]
    #[test]
    fn device_estimates_saturate_at_32_bits() {
        let max = Duration::MAX;
        let mut r = RttEstimator::default();
        r.update(Duration::from_secs(5_000), Duration::ZERO, ms(25), true);
        assert_eq!(r.latest(), max);
        assert_eq!(r.smoothed(), max);
        assert_eq!(r.rttvar(), Duration(u32::MAX >> 1));
        assert_eq!(r.pto_base(), max);
        // Ordinary samples afterwards pull the estimates down as usual.
        r.update(ms(100), Duration::ZERO, ms(25), true);
        assert_eq!(r.min(), ms(100));
        assert!(r.smoothed() < max);
    }

    #[test]
    fn saturates_on_huge_samples() {
        let mut r = RttEstimator::default();
        r.update(Duration::MAX, Duration::MAX, Duration::MAX, true);
        r.update(Duration::MAX, Duration::ZERO, Duration::ZERO, false);
        r.update(Duration::ZERO, Duration::MAX, Duration::ZERO, true);
        let _ = (r.pto_base(), r.loss_delay(), r.persistent_congestion_duration(Duration::MAX));
    }
}
