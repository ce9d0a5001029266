//! Pacing (RFC 9002 §7.7): a token bucket refilled at `gain × cwnd / smoothed_rtt`.
//!
//! Tokens are bytes in 16.16 fixed point so that frequent refills keep their fractions. The
//! rate and its inverse are recomputed only when the window or the smoothed RTT changes
//! (at most once per ACK frame): those are the only two divisions, through
//! [`super::div_u64`] (32-bit hardware division while `cwnd × gain × 2^13` and `rtt × 2^19`
//! fit 32 bits, i.e. windows below ~50 KB and RTTs below 8 s at the default gain).

use super::div_u64;
use crate::time::{Duration, Instant};

/// Pacer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacerConfig {
    /// The pacing rate in eighths of a congestion window per smoothed RTT; 10 (1.25) is RFC
    /// 9002 §7.7's suggestion. Zero turns pacing off.
    pub gain_eighths: u16,
    /// Full-sized datagrams that may leave back to back (the bucket's depth).
    pub burst_packets: u16,
}

impl PacerConfig {
    /// Gain 1.25, bursts of 4 datagrams.
    pub const DEFAULT: Self = Self { gain_eighths: 10, burst_packets: 4 };
    /// No pacing.
    pub const OFF: Self = Self { gain_eighths: 0, burst_packets: 0 };
}

impl Default for PacerConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Largest window and RTT the rate arithmetic considers (2^40 bytes, 2^40 µs ≈ 12 days).
const CAP: u64 = 1 << 40;

/// A token-bucket pacer; 80 bytes. Feed it the window and RTT with [`Pacer::update`], ask
/// [`Pacer::send_time`] before sending, and tell it [`Pacer::on_packet_sent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacer {
    config: PacerConfig,
    /// Bucket depth in bytes.
    capacity: u64,
    /// Available bytes, 16.16 fixed point.
    tokens_fp: u64,
    last_refill: Option<Instant>,
    /// Refill rate: bytes per microsecond, 16.16 fixed point.
    rate_fp: u64,
    /// Microseconds per byte, 16.16 fixed point.
    inv_fp: u64,
    cwnd: u64,
    rtt_us: u64,
    mds: u64,
}

impl Pacer {
    /// A pacer that lets everything through until the first [`Pacer::update`].
    pub const fn new(config: PacerConfig) -> Self {
        Self {
            config,
            capacity: 0,
            tokens_fp: 0,
            last_refill: None,
            rate_fp: 0,
            inv_fp: 0,
            cwnd: 0,
            rtt_us: 0,
            mds: 0,
        }
    }

    /// Sets the rate from the congestion window, the smoothed RTT and the datagram size;
    /// does nothing if none changed.
    pub fn update(&mut self, cwnd: u64, smoothed_rtt: Duration, max_datagram_size: u16) {
        let cwnd = cwnd.min(CAP);
        let rtt_us = smoothed_rtt.as_micros().clamp(1, CAP);
        let mds = u64::from(max_datagram_size).max(1);
        if cwnd == self.cwnd && rtt_us == self.rtt_us && mds == self.mds {
            return;
        }
        self.cwnd = cwnd;
        self.rtt_us = rtt_us;
        self.mds = mds;
        let gain = u64::from(self.config.gain_eighths);
        if gain == 0 || cwnd == 0 {
            self.rate_fp = 0;
            return;
        }
        // rate = cwnd × gain / 8 / rtt bytes per µs, × 2^16.
        let scaled = cwnd.saturating_mul(gain);
        self.rate_fp = div_u64(scaled.saturating_mul(1 << 13), rtt_us).max(1);
        self.inv_fp = div_u64(rtt_us << 19, scaled);
        let burst = u64::from(self.config.burst_packets).max(1).saturating_mul(mds);
        self.capacity = burst.min(cwnd.max(mds));
        let cap_fp = self.capacity << 16;
        if self.last_refill.is_none() {
            self.tokens_fp = cap_fp;
        }
        self.tokens_fp = self.tokens_fp.min(cap_fp);
    }

    /// The refill rate in bytes per second (for logs and tests; one multiplication).
    pub const fn rate_bytes_per_sec(&self) -> u64 {
        self.rate_fp.saturating_mul(1_000_000) >> 16
    }

    /// The bucket depth in bytes.
    pub const fn capacity(&self) -> u64 {
        self.capacity
    }

    fn tokens_at(&self, now: Instant) -> u64 {
        let cap_fp = self.capacity << 16;
        match self.last_refill {
            Some(last) => {
                let add = (now - last).as_micros().saturating_mul(self.rate_fp);
                self.tokens_fp.saturating_add(add).min(cap_fp)
            }
            None => cap_fp,
        }
    }

    /// When a packet of `bytes` may be sent: `None` for now, else the instant the bucket
    /// holds enough tokens. A packet larger than the bucket waits for a full bucket.
    pub fn send_time(&self, now: Instant, bytes: u64) -> Option<Instant> {
        if self.rate_fp == 0 {
            return None;
        }
        let want_fp = bytes.min(self.capacity) << 16;
        let have = self.tokens_at(now);
        if have >= want_fp {
            return None;
        }
        // Wait for the missing tokens; the rate and its inverse are both rounded, so top up
        // until the bucket really holds enough (one extra step in practice).
        let mut at = now;
        let mut have = have;
        for _ in 0..4 {
            if have >= want_fp {
                break;
            }
            let need_fp = want_fp - have;
            // need (bytes, 16.16) × µs per byte (16.16) → µs; round up.
            let need_bytes = (need_fp >> 16) + 1;
            let wait = need_bytes.saturating_mul(self.inv_fp).saturating_add(0xffff) >> 16;
            at += Duration::from_micros(wait.max(1));
            have = self.tokens_at(at);
        }
        Some(at)
    }

    /// Keeps the last refill comparable with `now` on a device ([`Instant::age`]): an old
    /// one stays old enough to fill the bucket.
    pub fn age(&mut self, now: Instant) {
        if let Some(t) = self.last_refill.as_mut() {
            t.age(now);
        }
    }

    /// A packet of `bytes` left at `now`: takes its tokens (the bucket may go empty, never
    /// negative: probes and ACK-only packets are not held back by pacing).
    pub fn on_packet_sent(&mut self, now: Instant, bytes: u64) {
        self.tokens_fp = self.tokens_at(now).saturating_sub(bytes.min(CAP) << 16);
        self.last_refill = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Micros;

    #[test]
    fn rate_is_gain_times_window_per_rtt() {
        let mut p = Pacer::new(PacerConfig::DEFAULT);
        p.update(12_000, Duration::from_millis(100), 1200);
        // 1.25 × 12000 B / 0.1 s = 150 000 B/s
        let r = p.rate_bytes_per_sec();
        assert!((149_900..=150_100).contains(&r), "{r}");
        assert_eq!(p.capacity(), 4_800);
    }

    #[test]
    fn burst_then_spaced() {
        let mut p = Pacer::new(PacerConfig::DEFAULT);
        p.update(12_000, Duration::from_millis(100), 1200);
        let t0 = Instant(1_000_000);
        for _ in 0..4 {
            assert_eq!(p.send_time(t0, 1200), None);
            p.on_packet_sent(t0, 1200);
        }
        // 1200 B at 0.15 B/µs = 8 ms.
        let next = p.send_time(t0, 1200).expect("paced");
        let wait = (next - t0).0;
        assert!((7_990..=8_010).contains(&wait), "{wait}");
        assert_eq!(p.send_time(next, 1200), None);
        // Sending at the paced times keeps the rate: 10 packets take ~80 ms.
        let mut now = next;
        for _ in 0..10 {
            if let Some(t) = p.send_time(now, 1200) {
                now = t;
            }
            p.on_packet_sent(now, 1200);
        }
        let span = (now - next).0;
        assert!((71_000..=73_000).contains(&span), "{span}");
    }

    #[test]
    fn idle_refills_only_to_capacity() {
        let mut p = Pacer::new(PacerConfig::DEFAULT);
        p.update(12_000, Duration::from_millis(100), 1200);
        let t0 = Instant(0);
        for _ in 0..4 {
            p.on_packet_sent(t0, 1200);
        }
        let later = Instant(10_000_000);
        for _ in 0..4 {
            assert_eq!(p.send_time(later, 1200), None);
            p.on_packet_sent(later, 1200);
        }
        assert!(p.send_time(later, 1200).is_some());
    }

    #[test]
    fn off_and_unconfigured_never_delay() {
        let p = Pacer::new(PacerConfig::DEFAULT);
        assert_eq!(p.send_time(Instant(0), 1200), None);
        let mut p = Pacer::new(PacerConfig::OFF);
        p.update(12_000, Duration::from_millis(100), 1200);
        p.on_packet_sent(Instant(0), 100_000);
        assert_eq!(p.send_time(Instant(0), 1200), None);
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut p = Pacer::new(PacerConfig { gain_eighths: u16::MAX, burst_packets: u16::MAX });
        p.update(u64::MAX, Duration::ZERO, u16::MAX);
        p.on_packet_sent(Instant(Micros::MAX), u64::MAX >> 16);
        let _ = p.send_time(Instant(0), u64::MAX);
        p.update(1, Duration::MAX, 1);
        p.on_packet_sent(Instant(0), 1 << 40);
        let _ = p.send_time(Instant(Micros::MAX), u64::MAX);
    }
}
