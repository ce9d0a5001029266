//! 64-bit saturating arithmetic out of line on devices (issue 8).
//!
//! Offsets, byte counts and limits are `u64` (QUIC's varints are 62-bit). On a 32-bit core
//! each inlined `u64::saturating_add`/`saturating_sub` is 12-16 bytes of Thumb-2 (the add
//! with carry, the overflow test, the clamp); there are about a hundred of them on the
//! device paths. In builds without `std` they go through one copy each; hosts inline them.

/// Saturating `u64` arithmetic through one out-of-line copy on devices.
pub(crate) trait Sat64 {
    /// `self.saturating_add(n)`.
    fn sat_add(self, n: u64) -> u64;
    /// `self.saturating_sub(n)`.
    fn sat_sub(self, n: u64) -> u64;
}

impl Sat64 for u64 {
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn sat_add(self, n: u64) -> u64 {
        self.saturating_add(n)
    }

    #[cfg_attr(not(feature = "std"), inline(never))]
    fn sat_sub(self, n: u64) -> u64 {
        self.saturating_sub(n)
    }
}

#[cfg(test)]
mod tests {
    use super::Sat64;

    #[test]
    fn saturates_like_core() {
        assert_eq!(u64::MAX.sat_add(1), u64::MAX);
        assert_eq!(5u64.sat_add(7), 12);
        assert_eq!(5u64.sat_sub(7), 0);
        assert_eq!(7u64.sat_sub(5), 2);
    }
}
