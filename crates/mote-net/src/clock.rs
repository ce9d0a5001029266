//! The connection clock: mote-quic's [`Instant`] counts microseconds from when the driver
//! started.

use mote_quic::time::Instant;

/// Maps between the process's monotonic clock and mote-quic instants.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: std::time::Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Self { start: std::time::Instant::now() }
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        Instant(u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// `t` on the process's clock (for tokio timers).
    pub fn to_std(&self, t: Instant) -> std::time::Instant {
        self.start + std::time::Duration::from_micros(t.as_micros())
    }

    /// Milliseconds since the clock's zero, for logs.
    pub fn millis(&self, t: Instant) -> f64 {
        t.as_micros() as f64 / 1000.0
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// Milliseconds since the Unix epoch (session tickets' ages, certificate validity).
pub fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
