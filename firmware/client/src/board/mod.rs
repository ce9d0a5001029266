//! What the client needs from the hardware: a serial line, a clock, a way to sleep until
//! something happens, and counters of busy time. One module per board.

use mote_quic::Instant;

#[cfg(target_arch = "arm")]
pub mod mps2;
#[cfg(target_arch = "riscv32")]
pub mod riscv;

/// The hardware seen by the client.
pub trait Board {
    /// Microseconds since boot (monotonic, from a hardware timer).
    fn now_us(&mut self) -> u64;
    /// Nanoseconds of virtual time the CPU spent running (not sleeping) since boot. Under
    /// QEMU `-icount shift=0` one instruction takes exactly 1 ns, so this is the
    /// instruction count (feature `selfmeasure`).
    #[cfg(feature = "selfmeasure")]
    fn busy_ns(&mut self) -> u64;
    /// Writes one byte to the serial line (blocking while its transmitter is full).
    fn write_byte(&mut self, b: u8);
    /// One received byte, if any.
    fn read_byte(&mut self) -> Option<u8>;
    /// Sleeps until a byte arrives or `deadline` passes (at most a bounded time, so the
    /// clock is read often enough to extend it). The deadline is on the connection's clock,
    /// which is [`Board::now_us`] as [`Instant::from_micros`] takes it (modulo 2^32 µs on a
    /// device): the event loop passes the connection's timer as it is, no conversion.
    fn sleep_until(&mut self, deadline: Option<Instant>);
    /// 32 bytes of seed for the device's random generator.
    fn entropy(&mut self) -> [u8; 32];
    /// Ends the run (on QEMU: exits with `code`).
    fn exit(&mut self, code: u32) -> !;
}

/// Longest single sleep: the boards' 32-bit tick counters wrap after minutes (MPS2: 171 s
/// at 25 MHz; RISC-V: 429 s at 10 MHz), so the clock must be read well within that.
pub const MAX_SLEEP_US: u64 = 10_000_000;

/// The time keeping both boards share: a 32-bit up-counting hardware tick counter at
/// `TICKS_PER_US` MHz, extended to 64-bit microseconds since boot (32-bit division only: no
/// 64-bit division on the device path), and (feature `selfmeasure`) the ticks spent asleep.
pub struct Clock<const TICKS_PER_US: u32> {
    /// The counter at the last reading.
    last: u32,
    /// Microseconds since boot, and the ticks not yet converted (always < `TICKS_PER_US`).
    us: u64,
    sub: u32,
    /// Ticks since boot, and ticks spent asleep.
    #[cfg(feature = "selfmeasure")]
    ticks: u64,
    #[cfg(feature = "selfmeasure")]
    asleep_ticks: u64,
}

impl<const TICKS_PER_US: u32> Clock<TICKS_PER_US> {
    /// Nanoseconds per tick (40 at 25 MHz, 100 at 10 MHz).
    #[cfg(feature = "selfmeasure")]
    const NS_PER_TICK: u64 = 1000 / TICKS_PER_US as u64;

    /// A clock starting at the counter value `count`.
    pub const fn new(count: u32) -> Self {
        Self {
            last: count,
            us: 0,
            sub: 0,
            #[cfg(feature = "selfmeasure")]
            ticks: 0,
            #[cfg(feature = "selfmeasure")]
            asleep_ticks: 0,
        }
    }

    /// Advances to the counter value `count` (read at least once per wrap of the counter);
    /// returns microseconds since boot.
    pub fn update(&mut self, count: u32) -> u64 {
        let delta = count.wrapping_sub(self.last);
        self.last = count;
        #[cfg(feature = "selfmeasure")]
        {
            self.ticks += u64::from(delta);
        }
        let total = self.sub + delta % TICKS_PER_US;
        self.us += u64::from(delta / TICKS_PER_US + total / TICKS_PER_US);
        self.sub = total % TICKS_PER_US;
        self.us
    }

    /// Records `ticks` spent asleep.
    #[cfg(feature = "selfmeasure")]
    pub fn slept(&mut self, ticks: u64) {
        self.asleep_ticks += ticks;
    }

    /// Nanoseconds not spent asleep, up to the last [`Clock::update`].
    #[cfg(feature = "selfmeasure")]
    pub fn busy_ns(&self) -> u64 {
        (self.ticks - self.asleep_ticks) * Self::NS_PER_TICK
    }
}

/// How long to sleep at `now_us` for `deadline` (none: until woken, at most
/// [`MAX_SLEEP_US`]); `None` if the deadline has passed.
pub fn sleep_span(now_us: u64, deadline: Option<Instant>) -> Option<u64> {
    match deadline {
        // `Instant - Instant` is zero for a deadline at or before now (on a device, by the
        // wrapping difference of the 32-bit clock: mote_quic::time).
        Some(d) => match (d - Instant::from_micros(now_us)).as_micros() {
            0 => None,
            span => Some(span.min(MAX_SLEEP_US)),
        },
        None => Some(MAX_SLEEP_US),
    }
}

/// The device seed for the random generator: the seed provisioned in flash
/// ([`crate::DEVICE_SEED`]) mixed with the timer's bytes (the boards have no TRNG; under
/// QEMU the timer depends on the host's timing of the serial line). A real device reads its
/// TRNG instead. The timer's bytes go into the seed's first bytes once (repeating them over
/// all 32 would add no entropy).
pub fn seed_with_timer(timer: &[u8]) -> [u8; 32] {
    let mut seed = *crate::DEVICE_SEED;
    for (s, t) in seed.iter_mut().zip(timer) {
        *s ^= *t;
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_carries_sub_microsecond_ticks_and_wraps() {
        let mut c = Clock::<25>::new(u32::MAX - 60);
        // 24 ticks: no whole µs yet; one more tick completes it.
        assert_eq!(c.update(u32::MAX - 36), 0);
        assert_eq!(c.update(u32::MAX - 35), 1);
        // Across the counter's wrap: 50 more ticks = 2 µs.
        assert_eq!(c.update(14), 3);
        #[cfg(feature = "selfmeasure")]
        {
            c.slept(25);
            assert_eq!(c.busy_ns(), (75 - 25) * 40);
        }
    }

    #[test]
    fn the_timer_changes_the_seed() {
        let seed = seed_with_timer(&0x0102_0304u32.to_le_bytes());
        assert_eq!(seed[..4], [b'm' ^ 4, b'o' ^ 3, b't' ^ 2, b'e' ^ 1]);
        assert_eq!(seed[4..], crate::DEVICE_SEED[4..]);
        assert_ne!(seed_with_timer(&[1]), seed_with_timer(&[2]));
    }

    #[test]
    fn sleep_span_is_bounded() {
        let at = Instant::from_micros;
        assert_eq!(sleep_span(10, Some(at(10))), None);
        assert_eq!(sleep_span(10, Some(at(5))), None);
        assert_eq!(sleep_span(10, Some(at(15))), Some(5));
        assert_eq!(sleep_span(0, Some(at(1 << 30))), Some(MAX_SLEEP_US));
        assert_eq!(sleep_span(0, None), Some(MAX_SLEEP_US));
    }
}
