//! CUBIC (RFC 9438) in integer arithmetic.
//!
//! Time runs in ticks of 1/1024 s; the window `W_cubic(t) = C × (t − K)³ + W_max` is
//! computed in bytes with C = 410/1024 (0.4004), β = 717/1024 (0.7002), the fast
//! convergence factor (1 + β)/2 = 870/1024 and α = 3(1 − β)/(1 + β) = 542/1024. `K`, the
//! time to regain `W_max`, comes from an integer cube root once per congestion avoidance
//! epoch, with one division there ([`super::super::div_u64`]); congestion avoidance
//! divides once per acknowledged packet, by the window (32-bit hardware division while
//! `(target − cwnd) × bytes` fits 32 bits — windows up to ~100 KB on a device). No floating
//! point. Slow start is standard (HyStart++ is not implemented).

use super::{initial_window, CongestionController, RttEstimator};
use crate::recovery::div_u64;
use crate::time::{Duration, Instant};

/// C = 0.4 in 1/1024.
const C: u64 = 410;
/// β_cubic = 0.7 in 1/1024.
const BETA: u64 = 717;
/// (1 + β_cubic) / 2 = 0.85 in 1/1024 (fast convergence).
const FAST_CONVERGENCE: u64 = 870;
/// α_cubic = 3 (1 − β) / (1 + β) ≈ 0.529 in 1/1024 (RFC 9438 §4.3).
const ALPHA: u64 = 542;
/// |t − K| is capped at 2^18 ticks (256 s) so that C × |t − K|³ fits 64 bits; the window
/// there is already ~6.7 million datagrams past W_max.
const MAX_DELTA: u64 = 1 << 18;

/// Microseconds to ticks of 1/1024 s: × 1024 / 10^6 as a multiply and shift
/// (1 099 512 / 2^30 = 1.024 / 1000), inputs capped at 2^40 µs (12.7 days).
fn ticks(d: Duration) -> u64 {
    (d.0.min(1 << 40) * 1_099_512) >> 30
}

/// ⌊∛x⌋ by the bitwise method (Hacker's Delight §11-2): shifts, adds, multiplies.
pub(crate) fn icbrt(mut x: u64) -> u64 {
    let mut y: u64 = 0;
    let mut s: i32 = 63;
    while s >= 0 {
        y <<= 1;
        // b = 3y(y + 1) + 1; compare against x >> s so b << s never overflows.
        let b = 3 * y * (y + 1) + 1;
        if (x >> s) >= b {
            x -= b << s;
            y += 1;
        }
        s -= 3;
    }
    y
}

/// CUBIC (RFC 9438) congestion control; 120 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cubic {
    mds: u64,
    cwnd: u64,
    ssthresh: u64,
    recovery_start: Option<Instant>,
    /// W_max: the window before the last reduction (adjusted by fast convergence).
    w_max: u64,
    /// cwnd_prior: the window before the last reduction (for α switching to 1).
    cwnd_prior: u64,
    /// K in ticks.
    k: u64,
    /// t_epoch: start of the current congestion avoidance stage.
    epoch_start: Option<Instant>,
    /// W_est, the Reno-friendly estimate (bytes).
    w_est: u64,
    est_acc: u64,
    cubic_acc: u64,
    last_ack: Option<Instant>,
}

impl Cubic {
    /// A controller at the initial window for `max_datagram_size`.
    pub const fn new(max_datagram_size: u16) -> Self {
        Self {
            mds: max_datagram_size as u64,
            cwnd: initial_window(max_datagram_size),
            ssthresh: u64::MAX,
            recovery_start: None,
            w_max: 0,
            cwnd_prior: 0,
            k: 0,
            epoch_start: None,
            w_est: 0,
            est_acc: 0,
            cubic_acc: 0,
            last_ack: None,
        }
    }

    /// W_max in bytes.
    pub const fn w_max(&self) -> u64 {
        self.w_max
    }

    /// K, the time from the epoch start to regaining W_max.
    pub fn k(&self) -> Duration {
        // ticks × 10^6 / 1024 = ticks × 15625 / 16
        Duration(self.k.saturating_mul(15_625) >> 4)
    }

    /// W_cubic at `t` ticks after the epoch start, in bytes.
    fn w_cubic(&self, t: u64) -> u64 {
        let (below, delta) = if t >= self.k { (false, t - self.k) } else { (true, self.k - t) };
        let delta = delta.min(MAX_DELTA);
        let cube = delta * delta * delta;
        // C × Δ³ segments = 410 × Δ³ / 2^40; keep 16 fraction bits before scaling by mds.
        let seg_fp = (C * cube) >> 24;
        let bytes = seg_fp.saturating_mul(self.mds) >> 16;
        if below {
            self.w_max.saturating_sub(bytes)
        } else {
            self.w_max.saturating_add(bytes)
        }
    }

    fn start_epoch(&mut self, now: Instant) {
        self.epoch_start = Some(now);
        if self.cwnd < self.w_max {
            // K = ∛((W_max − cwnd_epoch) / (C × mds)) s = ∛(2^40 × diff / (410 × mds)) ticks.
            let diff = (self.w_max - self.cwnd).min(1 << 43);
            let q = div_u64(diff << 20, C * self.mds.max(1));
            self.k = icbrt(q.saturating_mul(1 << 20));
        } else {
            self.k = 0;
            self.w_max = self.cwnd;
        }
        self.w_est = self.cwnd;
        self.est_acc = 0;
        self.cubic_acc = 0;
    }
}

impl CongestionController for Cubic {
    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn in_recovery(&self, sent_time: Instant) -> bool {
        self.recovery_start.is_some_and(|start| sent_time <= start)
    }

    fn age(&mut self, now: Instant) {
        for t in [&mut self.recovery_start, &mut self.epoch_start, &mut self.last_ack] {
            if let Some(t) = t.as_mut() {
                t.age(now);
            }
        }
    }

    fn on_packet_acked(
        &mut self,
        now: Instant,
        sent_time: Instant,
        bytes: u64,
        rtt: &RttEstimator,
        app_limited: bool,
    ) {
        let last_ack = self.last_ack.replace(now);
        if app_limited {
            // RFC 9438 §5.8: no growth while application-limited, and the time spent so
            // does not count towards t.
            if let (Some(e), Some(l)) = (self.epoch_start, last_ack) {
                self.epoch_start = Some(e + (now - l));
            }
            return;
        }
        if self.in_recovery(sent_time) {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = self.cwnd.saturating_add(bytes);
            return;
        }
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.start_epoch(now);
                now
            }
        };
        let t = ticks(now - epoch);
        let w_t = self.w_cubic(t);
        let target = self.w_cubic(t.saturating_add(ticks(rtt.smoothed())));

        // RFC 9438 §4.3: W_est += α × segments acked / cwnd (α = 1 once W_est reaches the
        // window before the last reduction), as byte counting.
        let alpha = if self.w_est >= self.cwnd_prior { 1024 } else { ALPHA };
        self.est_acc = self.est_acc.saturating_add(bytes);
        while self.est_acc >= self.cwnd && self.cwnd > 0 {
            self.est_acc -= self.cwnd;
            self.w_est = self.w_est.saturating_add((alpha * self.mds) >> 10);
        }
        if w_t < self.w_est {
            // Reno-friendly region.
            self.cwnd = self.cwnd.max(self.w_est);
            return;
        }
        // RFC 9438 §4.4/§4.5: grow by (target − cwnd) / cwnd per datagram acknowledged,
        // target clamped to [cwnd, 1.5 cwnd].
        let target = target.clamp(self.cwnd, self.cwnd.saturating_add(self.cwnd >> 1));
        if target > self.cwnd {
            self.cubic_acc =
                self.cubic_acc.saturating_add((target - self.cwnd).saturating_mul(bytes));
            let inc = div_u64(self.cubic_acc, self.cwnd);
            if inc > 0 {
                self.cubic_acc = self.cubic_acc.saturating_sub(inc.saturating_mul(self.cwnd));
                self.cwnd = self.cwnd.saturating_add(inc);
            }
        }
    }

    fn on_congestion_event(&mut self, now: Instant, sent_time: Instant) {
        if self.in_recovery(sent_time) {
            return;
        }
        self.recovery_start = Some(now);
        self.cwnd_prior = self.cwnd;
        // RFC 9438 §4.7 fast convergence.
        self.w_max = if self.cwnd < self.w_max {
            self.cwnd.saturating_mul(FAST_CONVERGENCE) >> 10
        } else {
            self.cwnd
        };
        self.ssthresh = (self.cwnd.saturating_mul(BETA) >> 10).max(self.minimum_window());
        self.cwnd = self.ssthresh;
        self.epoch_start = None;
        self.est_acc = 0;
        self.cubic_acc = 0;
    }

    fn on_persistent_congestion(&mut self, _now: Instant) {
        self.cwnd = self.minimum_window();
        self.recovery_start = None;
        self.epoch_start = None;
        self.est_acc = 0;
        self.cubic_acc = 0;
    }

    fn set_max_datagram_size(&mut self, max_datagram_size: u16) {
        self.mds = u64::from(max_datagram_size);
        self.cwnd = self.cwnd.max(self.minimum_window());
    }

    fn minimum_window(&self) -> u64 {
        2 * self.mds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MDS: u16 = 1200;
    const SEG: u64 = MDS as u64;

    #[test]
    fn cube_root() {
        for x in [0u64, 1, 7, 8, 9, 26, 27, 28, 1 << 30, (1 << 63) - 1, u64::MAX] {
            let y = icbrt(x);
            assert!(u128::from(y).pow(3) <= u128::from(x), "{x}");
            assert!(u128::from(y + 1).pow(3) > u128::from(x), "{x}");
        }
        assert_eq!(icbrt(u64::MAX), 2_642_245);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (x % 64);
            let y = icbrt(v);
            assert!(u128::from(y).pow(3) <= u128::from(v));
            assert!(u128::from(y + 1).pow(3) > u128::from(v));
        }
    }

    #[test]
    fn ticks_conversion() {
        assert_eq!(ticks(Duration::from_secs(1)), 1024);
        assert_eq!(ticks(Duration::from_millis(500)), 512);
    }

    /// Acknowledges one window of datagrams per RTT, spread over the RTT; returns the time
    /// after `rounds` RTTs.
    fn rounds(cc: &mut Cubic, start: Instant, rtt: &RttEstimator, rounds: u32) -> Instant {
        let r = rtt.smoothed();
        let mut now = start;
        for _ in 0..rounds {
            let n = (cc.window() / SEG).max(1);
            let round_start = now;
            for i in 0..n {
                now = round_start + Duration(r.0 * i / n);
                cc.on_packet_acked(now, Instant(now.0 - r.0), SEG, rtt, false);
            }
            now = round_start + r;
        }
        now
    }

    fn rtt(ms: u64) -> RttEstimator {
        let mut r = RttEstimator::default();
        r.update(Duration::from_millis(ms), Duration::ZERO, Duration::ZERO, true);
        r
    }

    #[test]
    fn reduction_and_k() {
        let mut cc = Cubic::new(MDS);
        cc.cwnd = 100 * SEG;
        cc.on_congestion_event(Instant(1_000_000), Instant(900_000));
        assert_eq!(cc.w_max(), 100 * SEG);
        assert_eq!(cc.window(), 100 * SEG * 717 / 1024);
        cc.start_epoch(Instant(1_000_000));
        // K = ∛(30 / 0.4) = ∛75 ≈ 4.217 s
        let k = cc.k().0;
        assert!((4_190_000..=4_240_000).contains(&k), "{k}");
        // W_cubic(0) ≈ cwnd_epoch, W_cubic(K) = W_max.
        let w0 = cc.w_cubic(0);
        assert!(w0.abs_diff(cc.window()) < SEG, "{w0}");
        assert_eq!(cc.w_cubic(cc.k), cc.w_max());
    }

    #[test]
    fn window_growth_is_concave_then_convex() {
        let rtt = rtt(100);
        let mut cc = Cubic::new(MDS);
        cc.cwnd = 100 * SEG;
        let t0 = Instant(10_000_000);
        cc.on_congestion_event(t0, Instant(t0.0 - 1_000));
        let start = t0 + Duration::from_millis(100);
        // Window after each second for 8 s (K ≈ 4.2 s).
        let mut w = [0u64; 9];
        w[0] = cc.window();
        let mut now = start;
        for slot in w.iter_mut().skip(1) {
            now = rounds(&mut cc, now, &rtt, 10);
            *slot = cc.window();
        }
        for pair in w.windows(2) {
            assert!(pair[1] >= pair[0], "{w:?}");
        }
        let inc: [u64; 8] = core::array::from_fn(|i| w[i + 1] - w[i]);
        // Concave: growth slows down approaching W_max ...
        assert!(inc[0] > inc[2] && inc[2] > inc[3], "{inc:?}");
        // ... plateaus around K, within 3% of W_max ...
        let at_k = w[4];
        assert!(at_k.abs_diff(100 * SEG) * 100 <= 3 * 100 * SEG, "{w:?}");
        // ... then convex: growth accelerates past W_max.
        assert!(inc[7] > inc[6] && inc[6] > inc[5], "{inc:?}");
        assert!(w[8] > 100 * SEG);
    }

    #[test]
    fn reno_friendly_region_on_short_rtt() {
        // Small W_max and 10 ms RTT: Reno's +1 datagram per RTT outpaces the cubic curve.
        let rtt = rtt(10);
        let mut cc = Cubic::new(MDS);
        cc.cwnd = 10 * SEG;
        let t0 = Instant(10_000_000);
        cc.on_congestion_event(t0, t0);
        let start = t0 + Duration::from_millis(10);
        rounds(&mut cc, start, &rtt, 100);
        let segs = cc.window() / SEG;
        // W_cubic(1 s) is still below W_max = 10; Reno-friendly gives about 7 + 100.
        assert!((90..=115).contains(&segs), "{segs}");
    }

    #[test]
    fn fast_convergence() {
        let mut cc = Cubic::new(MDS);
        cc.cwnd = 100 * SEG;
        cc.on_congestion_event(Instant(1_000), Instant(500));
        let w1 = cc.window();
        cc.on_congestion_event(Instant(5_000), Instant(2_000));
        assert_eq!(cc.w_max(), w1 * 870 / 1024);
    }

    #[test]
    fn no_growth_when_app_limited_or_in_recovery() {
        let rtt = rtt(100);
        let mut cc = Cubic::new(MDS);
        cc.on_congestion_event(Instant(1_000_000), Instant(1));
        let w = cc.window();
        cc.on_packet_acked(Instant(1_100_000), Instant(999_000), SEG, &rtt, false);
        assert_eq!(cc.window(), w, "sent before the recovery start");
        for i in 0..100 {
            cc.on_packet_acked(Instant(1_200_000 + i * 1000), Instant(1_100_000), SEG, &rtt, true);
        }
        assert_eq!(cc.window(), w, "application limited");
        cc.on_persistent_congestion(Instant(2_000_000));
        assert_eq!(cc.window(), 2 * SEG);
    }
}
