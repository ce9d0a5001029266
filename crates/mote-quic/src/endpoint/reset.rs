//! Stateless reset (RFC 9000 §10.3; feature `stateless-reset`): token derivation, the
//! packet an endpoint sends for a short-header packet of an unknown connection, and the
//! limits that keep resets from looping or being used for amplification.

use mote_crypto::{CryptoProvider, CryptoRng, HashAlgorithm, Hmac};

use crate::time::{Duration, Instant};
use crate::transport_params::ResetToken;

/// RFC 9000 §10.3: the smallest stateless reset: 1 byte of header bits, at least 4
/// unpredictable bytes ("38 bits" of padding after the fixed bits round up to 5 bytes with
/// the first), and the 16-byte token.
pub const MIN_RESET_SIZE: usize = 21;

/// Resets sent look like short-header packets of this size at most (RFC 9000 §10.3: an
/// endpoint "SHOULD" make them indistinguishable; a short size keeps them cheap).
pub const MAX_RESET_SIZE: usize = 42;

/// Resets allowed per [`RESET_WINDOW`].
pub const RESETS_PER_WINDOW: u32 = 16;

/// The rate-limit window for resets.
pub const RESET_WINDOW: Duration = Duration::from_millis(100);

/// RFC 9000 §10.3.2: the token of `cid` under the static `key`: HMAC-SHA-256(key, cid)
/// truncated to 16 bytes. Without the key nobody can compute it; with it, a server that
/// lost all state (a restart) still knows the token of every connection ID it issued.
pub fn derive_token<P: CryptoProvider>(
    provider: &P,
    key: &[u8; 32],
    cid: &[u8],
) -> Result<ResetToken, mote_crypto::Error> {
    let mut mac = provider.hmac(HashAlgorithm::Sha256, key)?;
    mac.update(cid);
    let d = mac.finish();
    let mut token = [0u8; 16];
    let src = d.as_ref().get(..16).ok_or(mote_crypto::Error::BadLength)?;
    token.copy_from_slice(src);
    Ok(token)
}

/// RFC 9000 §10.3, §10.3.3: the size of a reset answering a datagram of `received` bytes:
/// always smaller than it (so two endpoints cannot reset each other forever), at least
/// [`MIN_RESET_SIZE`]; `None` when the datagram is too small to answer.
pub const fn reset_size(received: usize) -> Option<usize> {
    if received <= MIN_RESET_SIZE {
        return None;
    }
    let n = received - 1;
    Some(if n > MAX_RESET_SIZE { MAX_RESET_SIZE } else { n })
}

/// Writes a stateless reset of `size` bytes into `out`: a short-header first byte
/// (0b01, the rest random), random bytes, then `token` (RFC 9000 §10.3 Figure 10).
pub fn write_reset(
    out: &mut [u8],
    size: usize,
    token: &ResetToken,
    rng: &mut dyn CryptoRng,
) -> Option<usize> {
    if size < MIN_RESET_SIZE {
        return None;
    }
    let buf = out.get_mut(..size)?;
    let (head, tail) = buf.split_at_mut(size - 16);
    rng.fill(head).ok()?;
    if let Some(first) = head.first_mut() {
        *first = 0x40 | (*first & 0x3f);
    }
    tail.copy_from_slice(token);
    Some(size)
}

/// A token bucket of [`RESETS_PER_WINDOW`] resets per [`RESET_WINDOW`].
#[derive(Clone, Copy, Debug)]
pub struct ResetLimiter {
    window_start: Instant,
    sent: u32,
}

impl ResetLimiter {
    /// A limiter whose first window starts at zero.
    pub const fn new() -> Self {
        Self { window_start: Instant::ZERO, sent: 0 }
    }

    /// Whether a reset may be sent at `now` (and counts it).
    pub fn allow(&mut self, now: Instant) -> bool {
        // A device's instants wrap (`crate::time`): a window start that reads as later
        // than `now` is one from more than 2^31 µs ago, and a new window starts too.
        let stale = cfg!(not(feature = "std")) && now < self.window_start;
        if stale || now >= self.window_start + RESET_WINDOW {
            self.window_start = now;
            self.sent = 0;
        }
        if self.sent >= RESETS_PER_WINDOW {
            return false;
        }
        self.sent += 1;
        true
    }
}

impl Default for ResetLimiter {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mote_crypto::rustcrypto::RustCrypto;

    #[test]
    fn tokens_are_keyed_and_stable() {
        let a = derive_token(&RustCrypto, &[1; 32], &[5; 8]).unwrap();
        assert_eq!(a, derive_token(&RustCrypto, &[1; 32], &[5; 8]).unwrap());
        assert_ne!(a, derive_token(&RustCrypto, &[2; 32], &[5; 8]).unwrap());
        assert_ne!(a, derive_token(&RustCrypto, &[1; 32], &[6; 8]).unwrap());
    }

    #[test]
    fn sizes_shrink_so_resets_cannot_loop() {
        assert_eq!(reset_size(21), None);
        assert_eq!(reset_size(22), Some(21));
        assert_eq!(reset_size(30), Some(29));
        assert_eq!(reset_size(1200), Some(MAX_RESET_SIZE));
        // A reset answering a reset is smaller still, until none is sent.
        let mut n = 1200;
        let mut rounds = 0;
        while let Some(m) = reset_size(n) {
            assert!(m < n);
            n = m;
            rounds += 1;
        }
        assert!(rounds < 32);
    }

    #[test]
    fn limiter() {
        let mut l = ResetLimiter::new();
        let t = Instant::ZERO + Duration::from_millis(5);
        let allowed = (0..100).filter(|_| l.allow(t)).count();
        assert_eq!(allowed, RESETS_PER_WINDOW as usize);
        assert!(l.allow(t + RESET_WINDOW));
    }
}
