//! Flow-control credit (RFC 9000 §4.1, §4.2): one type per direction, used both for a
//! stream and for the whole connection.

use super::{narrow, wide, Offset, StreamError};

/// Credit the peer gave us: how much we may send (MAX_DATA / MAX_STREAM_DATA received), and
/// the DATA_BLOCKED / STREAM_DATA_BLOCKED signal when we run out.
///
/// The blocked frame is queued at most once per limit value (RFC 9000 §4.1: "a sender
/// SHOULD send a STREAM_DATA_BLOCKED or DATA_BLOCKED frame ... when it has data to send but
/// is blocked"); a lost one is re-queued only while the limit is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCredit {
    max: Offset,
    used: Offset,
    blocked_sent_at: Option<Offset>,
    blocked_pending: bool,
}

impl SendCredit {
    /// Credit up to `max` bytes (the peer's initial limit from its transport parameters),
    /// clamped to [`Offset::MAX`] (see [the module documentation](super)).
    pub const fn new(max: u64) -> Self {
        Self { max: narrow(max), used: 0, blocked_sent_at: None, blocked_pending: false }
    }

    /// Whether this is `new(0)` (a device constructor's zeroing checks its all-zero value).
    #[cfg(feature = "device")]
    pub(crate) const fn is_new_zero(&self) -> bool {
        matches!(self, Self { max: 0, used: 0, blocked_sent_at: None, blocked_pending: false })
    }

    /// [`Self::new`] written on zero-filled memory (the device connection's slot): only
    /// `max`; the rest of `new(0)` is all zeros (checked at compile time).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, max: u64) {
        crate::connection::init::zeroed!(Self, |z| z.is_new_zero());
        // SAFETY: the caller's contract.
        unsafe { core::ptr::addr_of_mut!((*dst).max).write(narrow(max)) }
    }

    /// The current limit.
    pub const fn max(&self) -> u64 {
        wide(self.max)
    }

    /// Bytes charged so far.
    pub const fn used(&self) -> u64 {
        wide(self.used)
    }

    /// Bytes that may still be charged.
    // Out of line: four inlined copies of the 64-bit subtraction were larger (issue 8).
    #[inline(never)]
    pub const fn available(&self) -> u64 {
        wide(self.room())
    }

    /// [`SendCredit::available`] as an [`Offset`].
    pub(crate) const fn room(&self) -> Offset {
        self.max.saturating_sub(self.used)
    }

    /// Charges `n` bytes (callers never exceed [`SendCredit::available`]).
    pub fn consume(&mut self, n: u64) {
        self.charge(narrow(n));
    }

    /// [`SendCredit::consume`] with an [`Offset`].
    pub(crate) fn charge(&mut self, n: Offset) {
        self.used = self.used.saturating_add(n);
    }

    /// A MAX_DATA / MAX_STREAM_DATA frame arrived. RFC 9000 §4.1: a frame that does not
    /// increase the limit is ignored. Returns true if the limit grew. The limit is clamped
    /// to [`Offset::MAX`]: a sender is only bound not to exceed it (§4.1).
    // Out of line: MAX_DATA, MAX_STREAM_DATA and the peer's transport parameters (issue 8).
    #[inline(never)]
    pub fn on_max(&mut self, max: u64) -> bool {
        let max = narrow(max);
        if max > self.max {
            self.max = max;
            self.blocked_pending = false;
            true
        } else {
            false
        }
    }

    /// RFC 9001 §4.6.2, RFC 9000 §7.4.1: the server rejected 0-RTT, so its new limit
    /// replaces the remembered one the credit was charged under, even a lower one. Returns
    /// whether what was charged fits it.
    pub fn replace_max(&mut self, max: u64) -> bool {
        self.max = narrow(max);
        self.used <= self.max
    }

    /// The sender wanted to send more than the credit allowed: queue a blocked frame unless
    /// one was already sent for this limit.
    pub fn mark_blocked(&mut self) {
        // A limit clamped to `Offset::MAX` (a device's 4 GiB) is not the peer's: RFC 9000
        // §19.12/§19.13 blocked frames carry the limit at which blocking occurred.
        if cfg!(feature = "blocked-frames")
            && self.available() == 0
            && self.blocked_sent_at != Some(self.max)
            && self.max != Offset::MAX
        {
            self.blocked_pending = true;
        }
    }

    /// True if a blocked frame is waiting to be sent (never without `blocked-frames`).
    pub const fn blocked_pending(&self) -> bool {
        cfg!(feature = "blocked-frames") && self.blocked_pending
    }

    /// The limit to put in a DATA_BLOCKED / STREAM_DATA_BLOCKED frame, if one is due. Marks
    /// it sent.
    pub fn poll_blocked(&mut self) -> Option<u64> {
        if !self.blocked_pending() {
            return None;
        }
        self.blocked_pending = false;
        self.blocked_sent_at = Some(self.max);
        Some(wide(self.max))
    }

    /// A blocked frame carrying `limit` was lost: send it again if still blocked there.
    pub fn on_blocked_lost(&mut self, limit: u64) {
        if cfg!(feature = "blocked-frames") && limit == wide(self.max) && self.available() == 0 {
            self.blocked_pending = true;
        }
    }
}

/// Credit we gave the peer: the limit we advertised (MAX_DATA / MAX_STREAM_DATA), how much
/// it has used, and when to raise the limit.
///
/// `received` is the highest offset (a stream) or the sum of highest offsets (the
/// connection) the peer has sent; `consumed` what the application has read or discarded.
/// A new limit `consumed + window` is offered once it would grow by at least `threshold`
/// bytes (by default half the window, RFC 9000 §4.2 leaves the policy open). The window
/// never grows: a stream's window is at most its buffer, so the limit never runs ahead of
/// buffer space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvCredit {
    max: Offset,
    received: Offset,
    consumed: Offset,
    window: Offset,
    threshold: Offset,
    update_pending: bool,
}

impl RecvCredit {
    /// Advertises `window` bytes initially (the transport parameter). Updates are due when
    /// half the window has been consumed.
    pub const fn new(window: u64) -> Self {
        let window = narrow(window);
        Self {
            max: window,
            received: 0,
            consumed: 0,
            window,
            threshold: (window >> 1) + (window & 1),
            update_pending: false,
        }
    }

    /// Sets how many bytes the limit must be able to grow by before an update is sent
    /// (at least 1, at most the window).
    pub fn set_update_threshold(&mut self, bytes: u64) {
        self.threshold = narrow(bytes).clamp(1, self.window.max(1));
    }

    /// The limit advertised so far.
    pub const fn max(&self) -> u64 {
        wide(self.max)
    }

    /// Bytes the peer has used.
    pub const fn received(&self) -> u64 {
        wide(self.received)
    }

    /// Bytes read or discarded locally.
    pub const fn consumed(&self) -> u64 {
        wide(self.consumed)
    }

    /// The window size.
    pub const fn window(&self) -> u64 {
        wide(self.window)
    }

    /// RFC 9000 §4.1: FLOW_CONTROL_ERROR if the peer would use more than advertised after
    /// `more` bytes. Changes nothing.
    pub const fn check(&self, more: u64) -> Result<(), StreamError> {
        // Compared as a u64, so a 62-bit count is refused before anything narrows it;
        // `received <= max` always holds.
        if more > wide(self.max.saturating_sub(self.received)) {
            return Err(StreamError::FlowControl);
        }
        Ok(())
    }

    /// Records `more` bytes used by the peer (after [`RecvCredit::check`]).
    pub fn on_received(&mut self, more: u64) {
        self.received = self.received.saturating_add(narrow(more));
    }

    /// Records `n` bytes read or discarded locally; may queue a limit update.
    pub fn on_consumed(&mut self, n: u64) {
        self.consumed = self.consumed.saturating_add(narrow(n));
        let next = self.consumed.saturating_add(self.window);
        if next.saturating_sub(self.max) >= self.threshold {
            self.update_pending = true;
        }
    }

    /// True if a MAX_DATA / MAX_STREAM_DATA is waiting to be sent.
    pub const fn update_pending(&self) -> bool {
        self.update_pending
    }

    /// Stops offering updates (the peer needs none: the final size is known).
    pub fn cancel_update(&mut self) {
        self.update_pending = false;
    }

    /// The new limit to advertise, if an update is due. It becomes the enforced limit.
    pub fn poll_update(&mut self) -> Option<u64> {
        if !self.update_pending {
            return None;
        }
        self.update_pending = false;
        let next = self.consumed.saturating_add(self.window);
        if next > self.max {
            self.max = next;
        }
        Some(wide(self.max))
    }

    /// An update carrying `max` was lost: resend if it is still the latest limit.
    pub fn on_update_lost(&mut self, max: u64) {
        if max == wide(self.max) {
            self.update_pending = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_blocked_once_per_limit() {
        let mut c = SendCredit::new(10);
        c.consume(10);
        c.mark_blocked();
        assert_eq!(c.poll_blocked(), Some(10).filter(|_| cfg!(feature = "blocked-frames")));
        c.mark_blocked();
        assert_eq!(c.poll_blocked(), None);
        c.on_blocked_lost(10);
        assert_eq!(c.poll_blocked(), Some(10).filter(|_| cfg!(feature = "blocked-frames")));
        assert!(!c.on_max(5));
        assert!(c.on_max(20));
        c.on_blocked_lost(10);
        assert_eq!(c.poll_blocked(), None);
        c.consume(10);
        c.mark_blocked();
        assert_eq!(c.poll_blocked(), Some(20).filter(|_| cfg!(feature = "blocked-frames")));
    }

    /// RFC 9000 §4.1: the peer's limits up to the largest varint are kept as at most
    /// `Offset::MAX` (4 GiB without `std`); a clamped limit is never reported as blocking.
    #[test]
    fn peer_limits_are_clamped_to_the_offset_range() {
        let top = crate::VarInt::MAX.into_inner();
        let cap = top.min(wide(Offset::MAX));
        for v in [1 << 32, (1 << 40) + 5] {
            assert_eq!(SendCredit::new(v).max(), v.min(cap));
            assert_eq!(RecvCredit::new(v).max(), v.min(cap));
        }
        let mut c = SendCredit::new(top);
        assert_eq!((c.max(), c.available()), (cap, cap));
        // The same limit again, clamped or not, is no increase.
        assert!(!c.on_max(top));
        let mut c = SendCredit::new(10);
        assert!(c.on_max(top));
        assert_eq!(c.max(), cap);
        c.consume(cap);
        assert_eq!((c.used(), c.available()), (cap, 0));
        c.mark_blocked();
        let blocked = cfg!(feature = "blocked-frames") && cap == top;
        assert_eq!(c.poll_blocked(), Some(top).filter(|_| blocked));
        assert!(c.replace_max(top));
        assert!(!c.replace_max(cap - 1));
    }

    /// The limit we grant stops at `Offset::MAX` and never wraps or shrinks; the peer's
    /// counts past it are FLOW_CONTROL_ERROR before anything is narrowed.
    #[test]
    fn granted_limit_stops_at_the_offset_range() {
        let mut c = RecvCredit::new(100);
        let near = Offset::MAX - 100;
        (c.max, c.received, c.consumed) = (near, near, near - 50);
        assert_eq!(c.check(1), Err(StreamError::FlowControl));
        c.on_consumed(50);
        assert_eq!(c.poll_update(), Some(wide(Offset::MAX)));
        assert_eq!(c.check(100), Ok(()));
        assert_eq!(c.check(101), Err(StreamError::FlowControl));
        assert_eq!(c.check(u64::MAX), Err(StreamError::FlowControl));
        c.on_received(100);
        c.on_consumed(100);
        assert_eq!(c.poll_update(), None);
        assert_eq!((c.max(), c.received()), (wide(Offset::MAX), wide(Offset::MAX)));
        assert_eq!(c.check(1), Err(StreamError::FlowControl));
    }

    #[test]
    fn recv_updates_at_half_window() {
        let mut c = RecvCredit::new(100);
        assert_eq!(c.check(101), Err(StreamError::FlowControl));
        c.check(100).unwrap();
        c.on_received(100);
        c.on_consumed(49);
        assert_eq!(c.poll_update(), None);
        c.on_consumed(1);
        assert_eq!(c.poll_update(), Some(150));
        c.on_update_lost(150);
        assert_eq!(c.poll_update(), Some(150));
        c.on_update_lost(100);
        assert_eq!(c.poll_update(), None);
        c.set_update_threshold(10);
        c.on_consumed(10);
        assert_eq!(c.poll_update(), Some(160));
        assert_eq!(c.check(61), Err(StreamError::FlowControl));
    }
}
