//! Time as the caller tells it: the core never reads a clock.
//!
//! Both types count microseconds in a `u64` (584,000 years of range), so arithmetic never
//! needs 128-bit or floating-point support and conversions avoid 64-bit division on the
//! hot paths of a 32-bit MCU. On such a device (builds without `std`) the saturating
//! helpers are kept out of line: a 64-bit saturating add or subtract is 12-16 bytes of
//! Thumb-2 at each of the few dozen deadline computations, a call is 4 (issue 8).

use core::ops::{Add, AddAssign, Sub};

/// A point in time, in microseconds since an arbitrary epoch chosen by the caller
/// (boot time on a device, a process-start reference under std, zero in the simulator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at the end of time instead of overflowing.
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Duration {
    /// Zero.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `us` microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us)
    }

    /// A span of `ms` milliseconds (saturating).
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms.saturating_mul(1_000))
    }

    /// A span of `s` seconds (saturating).
    pub const fn from_secs(s: u64) -> Self {
        Duration(s.saturating_mul(1_000_000))
    }

    /// Microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// `self * n`, saturating.
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub const fn saturating_mul(self, n: u64) -> Self {
        Duration(self.0.saturating_mul(n))
    }

    /// `self + other`, saturating.
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub const fn saturating_add(self, other: Duration) -> Self {
        Duration(self.0.saturating_add(other.0))
    }

    /// `self - other`, or zero.
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub const fn saturating_sub(self, other: Duration) -> Self {
        Duration(self.0.saturating_sub(other.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating: an `Instant` never wraps.
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
        assert_eq!(Instant(u64::MAX) + Duration(1), Instant(u64::MAX));
        assert_eq!(Duration::from_millis(3), Duration(3_000));
        assert_eq!(Duration::from_secs(u64::MAX), Duration::MAX);
    }
}
