//! Time as the caller tells it: the core never reads a clock.
//!
//! Both types count microseconds in [`Micros`]: a `u64` on hosts (584,000 years of range),
//! a `u32` on devices (builds without `std`), where every 64-bit add, compare or move of a
//! deadline is two instructions and two registers on a 32-bit MCU.
//!
//! # 32-bit time on a device
//!
//! A device's [`Instant`] is its clock modulo 2^32 µs (71.6 minutes): it wraps, and is
//! ordered by the signed difference of the two values, which is right while the two
//! instants are less than 2^31 µs (35.8 minutes, [`WINDOW`]) apart. What keeps every
//! compared pair inside that window:
//!
//! - every deadline is at most [`MAX_SPAN`] (2^29 µs, 8.9 minutes) after the time it is
//!   computed from: `Instant + Duration` clamps the duration there, so a peer's huge
//!   max_ack_delay, ACK Delay or RTT sample, or a backed-off PTO (RFC 9002 §6.2.1),
//!   cannot push a timer (loss, PTO, ACK, key update, closing, draining, idle) out of the
//!   window;
//! - a device's max_idle_timeout is at most 480 s and never "none"
//!   ([`crate::connection::DEVICE_MAX_IDLE_TIMEOUT_MS`]), so its connection always has a
//!   deadline at most [`MAX_SPAN`] ahead (RFC 9000 §10.1), and the caller, which passes
//!   `now` at every deadline, is back at least that often;
//! - the instants the books keep for the connection's lifetime (the first RTT sample, the
//!   congestion recovery start, the pacer's last refill, the earliest next key update)
//!   are moved up to `now - MAX_SPAN` when they get older ([`Instant::age`]) at every
//!   call that passes `now`; they keep their order against every later instant.
//!
//! So a connection held open for days by keep-alives is compared right as long as the
//! caller is never more than 2^30 µs (17.9 minutes) late for a deadline. A caller that
//! sleeps through 71.6 minutes sees time as it was modulo 2^32 µs: an idle timeout is then
//! not seen (the peer has long closed; the next packet tells). Durations saturate at
//! `u32::MAX` µs (71.6 minutes) on a device.

use core::ops::{Add, AddAssign, Sub};

/// Microseconds as stored: `u64` on hosts, `u32` (wrapping, see the module) on devices.
#[cfg(feature = "std")]
pub type Micros = u64;
/// Microseconds as stored: `u64` on hosts, `u32` (wrapping, see the module) on devices.
#[cfg(not(feature = "std"))]
pub type Micros = u32;

/// A point in time, in microseconds since an arbitrary epoch chosen by the caller
/// (boot time on a device, a process-start reference under std, zero in the simulator);
/// modulo 2^32 on a device (see the module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "std", derive(PartialOrd, Ord))]
pub struct Instant(pub Micros);

/// A span of time in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub Micros);

/// The longest span a deadline is set ahead on a device (2^29 µs, 8.9 minutes): `Instant
/// + Duration` clamps there. Hosts: unlimited.
#[cfg(not(feature = "std"))]
pub const MAX_SPAN: Duration = Duration(1 << 29);
/// The longest span a deadline is set ahead on a device (2^29 µs, 8.9 minutes): `Instant
/// + Duration` clamps there. Hosts: unlimited.
#[cfg(feature = "std")]
pub const MAX_SPAN: Duration = Duration(u64::MAX);

/// How far apart two device instants can be and still compare right (2^31 µs, 35.8
/// minutes).
#[cfg(not(feature = "std"))]
pub const WINDOW: Duration = Duration(1 << 31);

// Device instants: ordered by the signed (wrapping) difference, so `a < b` holds across
// the wrap of the 32-bit clock while `a` and `b` are less than 2^31 µs apart. Not a total
// order over all values (it is not transitive across more than the window), which the
// module's bounds keep the books out of.
#[cfg(not(feature = "std"))]
impl Ord for Instant {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (self.0.wrapping_sub(other.0) as i32).cmp(&0)
    }
}

#[cfg(not(feature = "std"))]
impl PartialOrd for Instant {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// The instant `us` microseconds after the epoch; on a device, modulo 2^32 (the
    /// caller's 64-bit clock read as the wrapping 32-bit one).
    pub const fn from_micros(us: u64) -> Self {
        Instant(us as Micros)
    }

    /// Microseconds since the epoch (modulo 2^32 on a device).
    #[allow(clippy::unnecessary_cast)] // `Micros` is `u32` on a device
    pub const fn as_micros(self) -> u64 {
        self.0 as u64
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    #[cfg(feature = "std")]
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later (by the signed
    /// difference: see the module).
    #[cfg(not(feature = "std"))]
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        let d = self.0.wrapping_sub(earlier.0);
        Duration(if (d as i32) < 0 { 0 } else { d })
    }

    /// `self + d`, saturating at the end of time instead of overflowing.
    #[cfg(feature = "std")]
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }

    /// `self + min(d, MAX_SPAN)`: a device deadline is never further ahead than
    /// [`MAX_SPAN`], so it stays comparable (see the module).
    #[cfg(not(feature = "std"))]
    pub const fn saturating_add(self, d: Duration) -> Instant {
        let d = if d.0 > MAX_SPAN.0 { MAX_SPAN.0 } else { d.0 };
        Instant(self.0.wrapping_add(d))
    }

    /// `self - d` (at the epoch at the least on a host; wrapping on a device).
    #[cfg(feature = "std")]
    pub const fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }

    /// `self - d` (at the epoch at the least on a host; wrapping on a device).
    #[cfg(not(feature = "std"))]
    pub const fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.wrapping_sub(d.0))
    }

    /// Keeps a long-lived instant comparable with `now` (see the module): on a device, an
    /// instant more than [`MAX_SPAN`] before `now` becomes `now - MAX_SPAN`, which orders
    /// the same against every instant after that; a later one (a deadline, at most
    /// [`MAX_SPAN`] ahead) stays. A host's instant never changes.
    #[cfg(not(feature = "std"))]
    pub fn age(&mut self, now: Instant) {
        // Signed: an instant up to 2^31 µs before `now` is in the past, one after it is a
        // deadline (the module's bounds keep every instant within those).
        if now.0.wrapping_sub(self.0) as i32 > MAX_SPAN.0 as i32 {
            self.0 = now.0.wrapping_sub(MAX_SPAN.0);
        }
    }

    /// Keeps a long-lived instant comparable with `now` (see the module): on a device, an
    /// instant more than [`MAX_SPAN`] before `now` becomes `now - MAX_SPAN`, which orders
    /// the same against every instant after that. A host's instant never changes.
    #[cfg(feature = "std")]
    pub fn age(&mut self, _now: Instant) {}
}

impl Duration {
    /// Zero.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(Micros::MAX);

    /// A span of `us` microseconds (saturating).
    #[allow(clippy::unnecessary_cast)] // `Micros` is `u32` on a device
    pub const fn from_micros(us: u64) -> Self {
        if us > Micros::MAX as u64 {
            Duration::MAX
        } else {
            Duration(us as Micros)
        }
    }

    /// A span of `ms` milliseconds (saturating).
    pub const fn from_millis(ms: u64) -> Self {
        Duration::from_micros(ms.saturating_mul(1_000))
    }

    /// A span of `s` seconds (saturating).
    pub const fn from_secs(s: u64) -> Self {
        Duration::from_micros(s.saturating_mul(1_000_000))
    }

    /// Microseconds.
    #[allow(clippy::unnecessary_cast)] // `Micros` is `u32` on a device
    pub const fn as_micros(self) -> u64 {
        self.0 as u64
    }

    /// `self * n`, saturating.
    // Out of line on devices: a saturating multiply is a few instructions at each of the
    // deadline computations, a call is 4 bytes (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    #[allow(clippy::unnecessary_cast)] // `Micros` is `u32` on a device
    pub const fn saturating_mul(self, n: u64) -> Self {
        Duration::from_micros((self.0 as u64).saturating_mul(n))
    }

    /// `self + other`, saturating.
    pub const fn saturating_add(self, other: Duration) -> Self {
        Duration(self.0.saturating_add(other.0))
    }

    /// `self - other`, or zero.
    pub const fn saturating_sub(self, other: Duration) -> Self {
        Duration(self.0.saturating_sub(other.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating on a host; at most [`MAX_SPAN`] ahead on a device.
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, other: Duration) -> Duration {
        self.saturating_add(other)
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, other: Duration) -> Duration {
        self.saturating_sub(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates() {
        assert_eq!(Instant(5) - Instant(9), Duration::ZERO);
        assert_eq!(Duration::from_millis(3), Duration(3_000));
        assert_eq!(Duration::from_secs(u64::MAX), Duration::MAX);
        assert_eq!(Duration::MAX.saturating_mul(2), Duration::MAX);
    }

    #[cfg(feature = "std")]
    #[test]
    fn host_instants_saturate() {
        assert_eq!(Instant(u64::MAX) + Duration(1), Instant(u64::MAX));
        assert_eq!(Instant(u64::MAX) + Duration::MAX, Instant(u64::MAX));
        let mut t = Instant(5);
        t.age(Instant(u64::MAX));
        assert_eq!(t, Instant(5), "a host's instant is never aged");
    }

    /// A device's instants straddling 2^32 µs compare by the signed difference.
    #[cfg(not(feature = "std"))]
    #[test]
    fn device_instants_wrap() {
        let before = Instant(u32::MAX - 5);
        let after = before + Duration(10);
        assert_eq!(after, Instant(4));
        assert!(before < after);
        assert!(after > before);
        assert_eq!(before.max(after), after);
        assert_eq!(after - before, Duration(10));
        assert_eq!(before - after, Duration::ZERO);
        assert_eq!(Instant::from_micros((1 << 32) + 7), Instant(7));
        // Ordered up to 2^31 - 1 µs apart, whatever the values.
        let far = Instant(before.0.wrapping_add(WINDOW.0 - 1));
        assert!(before < far && far.saturating_since(before) == Duration(WINDOW.0 - 1));
        // A deadline is at most MAX_SPAN ahead.
        assert_eq!(before + Duration::MAX, Instant(before.0.wrapping_add(MAX_SPAN.0)));
        assert_eq!(Duration::from_secs(3 * 3600), Duration::MAX);
    }

    /// Aging moves a past instant older than MAX_SPAN up to `now - MAX_SPAN` and leaves a
    /// recent one and a deadline alone; without it an instant 40 minutes old (past the
    /// 2^31 µs window) would read as a future one.
    #[cfg(not(feature = "std"))]
    #[test]
    fn device_instants_age() {
        let now = Instant(100);
        let mut old = Instant(100u32.wrapping_sub(MAX_SPAN.0 + 5));
        old.age(now);
        assert_eq!(old, Instant(100u32.wrapping_sub(MAX_SPAN.0)));
        assert!(old < now);
        let mut recent = Instant(50);
        recent.age(now);
        assert_eq!(recent, Instant(50));
        let mut ahead = now + MAX_SPAN;
        ahead.age(now);
        assert_eq!(ahead, now + MAX_SPAN);
        // Aged every minute, an instant stays before every later one.
        let start = Instant(u32::MAX - 1_000);
        let (mut aged, unaged) = (start, start);
        let mut t = start;
        for _ in 0..40 {
            t = Instant(t.0.wrapping_add(60_000_000));
            aged.age(t);
        }
        assert!(aged < t, "aged");
        assert!(unaged > t, "40 minutes on, the unaged instant reads as later");
    }
}
