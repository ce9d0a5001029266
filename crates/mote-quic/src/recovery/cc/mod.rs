//! Congestion control (RFC 9002 §7, App. B): the [`CongestionController`] trait, NewReno
//! and, with the `cubic` feature, CUBIC (RFC 9438).
//!
//! Controllers only ever see packets [`super::Recovery`] verified: an acknowledgement
//! reaches [`CongestionController::on_packet_acked`] once per packet that was really sent,
//! in flight and newly acknowledged, with that packet's own size. A forged or repeated ACK
//! range therefore cannot grow the window (the CVE-2025-4820/4821 class).

#[cfg(feature = "cubic")]
mod cubic;

#[cfg(feature = "cubic")]
pub use cubic::Cubic;

use super::RttEstimator;
use crate::time::Instant;

/// NewReno's byte counts: `u64` on hosts, `u32` in builds without `std` (session 12: a
/// device's window never nears 4 GiB, and the 64-bit adds, compares and saturations of the
/// per-ACK window update were about 100 bytes of a Cortex-M4 client's flash). At `u32::MAX`
/// a count saturates, as at `u64::MAX` on a host.
#[cfg(feature = "std")]
type Win = u64;
/// NewReno's byte counts (see the `std` build's documentation).
#[cfg(not(feature = "std"))]
type Win = u32;

/// A byte count as NewReno keeps it, saturating.
#[allow(clippy::unnecessary_fallible_conversions)]
fn win(n: u64) -> Win {
    Win::try_from(n).unwrap_or(Win::MAX)
}

/// A NewReno byte count as a byte count.
#[allow(clippy::unnecessary_cast)]
const fn wide(n: Win) -> u64 {
    n as u64
}

/// RFC 9002 §7.2: the initial window, `min(10 × max_datagram_size, max(14720, 2 ×
/// max_datagram_size))` bytes.
pub const fn initial_window(max_datagram_size: u16) -> u64 {
    let mds = max_datagram_size as u64;
    let floor = if 14_720 > 2 * mds { 14_720 } else { 2 * mds };
    if 10 * mds < floor {
        10 * mds
    } else {
        floor
    }
}

/// RFC 9002 §7.2: the minimum window, `2 × max_datagram_size` bytes.
pub const fn minimum_window(max_datagram_size: u16) -> u64 {
    2 * max_datagram_size as u64
}

/// A congestion controller, driven by [`super::Recovery`]. All sizes are bytes.
pub trait CongestionController {
    /// The congestion window.
    fn window(&self) -> u64;

    /// The slow start threshold (`u64::MAX` until the first congestion event).
    fn ssthresh(&self) -> u64;

    /// Whether the controller is in slow start.
    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh()
    }

    /// RFC 9002 App. B.5 `InCongestionRecovery`: whether a packet sent at `sent_time` was
    /// sent during the current recovery period.
    fn in_recovery(&self, sent_time: Instant) -> bool;

    /// An in-flight packet of `bytes` was sent.
    fn on_packet_sent(&mut self, _now: Instant, _bytes: u64) {}

    /// RFC 9002 App. B.5 `OnPacketAcked`: a packet that was in flight, sent at `sent_time`,
    /// was newly acknowledged. `app_limited`: the sender did not use its window, so the
    /// window must not grow (RFC 9002 §7.8).
    fn on_packet_acked(
        &mut self,
        now: Instant,
        sent_time: Instant,
        bytes: u64,
        rtt: &RttEstimator,
        app_limited: bool,
    );

    /// RFC 9002 App. B.6 `OnCongestionEvent`: a loss of a packet sent at `sent_time` was
    /// detected, or the peer reported an increased ECN-CE count for it (App. B.7). Reduces
    /// the window once per recovery period.
    fn on_congestion_event(&mut self, now: Instant, sent_time: Instant);

    /// RFC 9002 §7.6.2: persistent congestion; the window collapses to the minimum.
    fn on_persistent_congestion(&mut self, now: Instant);

    /// The path's maximum datagram size changed (e.g. after DPLPMTUD, RFC 9000 §14.3).
    fn set_max_datagram_size(&mut self, max_datagram_size: u16);

    /// The minimum window, `2 × max_datagram_size`.
    fn minimum_window(&self) -> u64;

    /// Keeps the instants the controller holds comparable with `now` on a device
    /// ([`Instant::age`], `time`); nothing on a host.
    fn age(&mut self, _now: Instant) {}
}

/// NewReno exactly as RFC 9002 App. B: slow start, congestion avoidance, a recovery period
/// that starts when the loss is detected and covers every packet sent before it, and
/// persistent congestion collapsing to the minimum window. 48 bytes (24 without `std`).
///
/// Congestion avoidance grows by `max_datagram_size × acked / cwnd` per ACK without a
/// division: acknowledged bytes accumulate, and each time they reach a full window the
/// window grows by one datagram (byte counting, the same increase per window as App. B.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewReno {
    mds: Win,
    cwnd: Win,
    ssthresh: Win,
    recovery_start: Option<Instant>,
    /// Bytes acknowledged in congestion avoidance not yet turned into window growth.
    acked_acc: Win,
}

impl NewReno {
    /// A controller at the initial window for `max_datagram_size`.
    pub const fn new(max_datagram_size: u16) -> Self {
        // The initial window is at most max(14,720, 2 × 65,535) bytes (RFC 9002 §7.2): it fits
        // a `u32`.
        #[allow(clippy::cast_possible_truncation, clippy::unnecessary_cast)]
        let cwnd = initial_window(max_datagram_size) as Win;
        Self {
            mds: max_datagram_size as Win,
            cwnd,
            ssthresh: Win::MAX,
            recovery_start: None,
            acked_acc: 0,
        }
    }

    /// When the current recovery period started.
    pub const fn recovery_start(&self) -> Option<Instant> {
        self.recovery_start
    }

    /// RFC 9002 §7.2: `2 × max_datagram_size` (below 2^17).
    const fn min_window(&self) -> Win {
        2 * self.mds
    }
}

impl CongestionController for NewReno {
    fn window(&self) -> u64 {
        wide(self.cwnd)
    }

    fn ssthresh(&self) -> u64 {
        // Not set yet: `u64::MAX` in every build.
        if self.ssthresh == Win::MAX {
            u64::MAX
        } else {
            wide(self.ssthresh)
        }
    }

    fn in_recovery(&self, sent_time: Instant) -> bool {
        self.recovery_start.is_some_and(|start| sent_time <= start)
    }

    fn age(&mut self, now: Instant) {
        if let Some(t) = self.recovery_start.as_mut() {
            t.age(now);
        }
    }

    fn on_packet_acked(
        &mut self,
        _now: Instant,
        sent_time: Instant,
        bytes: u64,
        _rtt: &RttEstimator,
        app_limited: bool,
    ) {
        if app_limited || self.in_recovery(sent_time) {
            return;
        }
        let bytes = win(bytes);
        if self.cwnd < self.ssthresh {
            // Slow start: one byte of window per byte acknowledged.
            self.cwnd = self.cwnd.saturating_add(bytes);
            return;
        }
        // Congestion avoidance: one datagram per window acknowledged.
        self.acked_acc = self.acked_acc.saturating_add(bytes);
        while self.acked_acc >= self.cwnd && self.cwnd > 0 {
            self.acked_acc -= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(self.mds);
        }
    }

    fn on_congestion_event(&mut self, now: Instant, sent_time: Instant) {
        if self.in_recovery(sent_time) {
            return;
        }
        self.recovery_start = Some(now);
        // kLossReductionFactor = 0.5
        self.ssthresh = self.cwnd >> 1;
        self.cwnd = self.ssthresh.max(self.min_window());
        self.acked_acc = 0;
    }

    fn on_persistent_congestion(&mut self, _now: Instant) {
        self.cwnd = self.min_window();
        self.recovery_start = None;
        self.acked_acc = 0;
    }

    fn set_max_datagram_size(&mut self, max_datagram_size: u16) {
        self.mds = Win::from(max_datagram_size);
        self.cwnd = self.cwnd.max(self.min_window());
    }

    fn minimum_window(&self) -> u64 {
        wide(self.min_window())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    const MDS: u16 = 1200;

    fn t(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn rtt() -> RttEstimator {
        RttEstimator::new(Duration::from_millis(100))
    }

    #[test]
    fn windows() {
        assert_eq!(initial_window(1200), 12_000);
        assert_eq!(initial_window(1472), 14_720);
        assert_eq!(initial_window(9000), 18_000);
        assert_eq!(minimum_window(1200), 2_400);
        let cc = NewReno::new(MDS);
        assert_eq!(cc.window(), 12_000);
        assert!(cc.in_slow_start());
    }

    #[test]
    fn slow_start_grows_by_acked_bytes() {
        let mut cc = NewReno::new(MDS);
        cc.on_packet_acked(t(100), t(0), 1200, &rtt(), false);
        cc.on_packet_acked(t(100), t(0), 1000, &rtt(), false);
        assert_eq!(cc.window(), 14_200);
    }

    #[test]
    fn window_saturates() {
        // Without `std` the byte counts are 32-bit: they saturate at `u32::MAX`.
        let max = if cfg!(feature = "std") { u64::MAX } else { u64::from(u32::MAX) };
        let mut cc = NewReno::new(MDS);
        assert_eq!(cc.ssthresh(), u64::MAX);
        cc.on_packet_acked(t(100), t(0), u64::MAX, &rtt(), false);
        assert_eq!(cc.window(), max);
        cc.on_packet_acked(t(100), t(0), 1200, &rtt(), false);
        assert_eq!(cc.window(), max);
        cc.on_congestion_event(t(110), t(105));
        assert_eq!(cc.window(), max >> 1);
        assert_eq!(cc.ssthresh(), max >> 1);
        // Congestion avoidance saturates too.
        cc.on_packet_acked(t(120), t(115), u64::MAX, &rtt(), false);
        assert!(cc.window() > max >> 1);
    }

    #[test]
    fn app_limited_does_not_grow() {
        let mut cc = NewReno::new(MDS);
        cc.on_packet_acked(t(100), t(0), 1200, &rtt(), true);
        assert_eq!(cc.window(), 12_000);
    }

    #[test]
    fn congestion_avoidance_one_datagram_per_window() {
        let mut cc = NewReno::new(MDS);
        cc.on_congestion_event(t(10), t(5));
        assert_eq!(cc.window(), 6_000);
        assert_eq!(cc.ssthresh(), 6_000);
        assert!(!cc.in_slow_start());
        // Packets sent after the recovery start grow the window: 5 × 1200 = one window.
        for _ in 0..4 {
            cc.on_packet_acked(t(50), t(20), 1200, &rtt(), false);
        }
        assert_eq!(cc.window(), 6_000);
        cc.on_packet_acked(t(50), t(20), 1200, &rtt(), false);
        assert_eq!(cc.window(), 7_200);
    }

    #[test]
    fn recovery_period() {
        let mut cc = NewReno::new(MDS);
        cc.on_congestion_event(t(100), t(50));
        assert_eq!(cc.recovery_start(), Some(t(100)));
        assert_eq!(cc.window(), 6_000);
        // A loss of a packet sent before the recovery started: no second reduction.
        cc.on_congestion_event(t(120), t(90));
        cc.on_congestion_event(t(130), t(100));
        assert_eq!(cc.window(), 6_000);
        // ACKs of packets sent before the recovery start do not grow the window.
        cc.on_packet_acked(t(140), t(99), 1200, &rtt(), false);
        assert_eq!(cc.window(), 6_000);
        // A loss of a packet sent after it starts a new period.
        cc.on_congestion_event(t(200), t(101));
        assert_eq!(cc.window(), 3_000);
        cc.on_congestion_event(t(300), t(250));
        assert_eq!(cc.window(), 2_400, "never below the minimum window");
        assert_eq!(cc.ssthresh(), 1_500);
    }

    #[test]
    fn persistent_congestion_collapses() {
        let mut cc = NewReno::new(MDS);
        cc.on_persistent_congestion(t(5));
        assert_eq!(cc.window(), 2_400);
        assert_eq!(cc.recovery_start(), None);
        // Slow start again (ssthresh untouched).
        cc.on_packet_acked(t(6), t(5), 1200, &rtt(), false);
        assert_eq!(cc.window(), 3_600);
    }
}
