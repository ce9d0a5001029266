//! What the client needs from the hardware: a serial line, a clock, a way to sleep until
//! something happens, and counters of busy time. One module per board.

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
    /// instruction count.
    fn busy_ns(&mut self) -> u64;
    /// Writes one byte to the serial line (blocking while its transmitter is full).
    fn write_byte(&mut self, b: u8);
    /// One received byte, if any.
    fn read_byte(&mut self) -> Option<u8>;
    /// Sleeps until a byte arrives or `deadline_us` passes (at most a bounded time, so the
    /// clock is read often enough to extend it).
    fn sleep_until(&mut self, deadline_us: Option<u64>);
    /// 32 bytes of seed for the device's random generator.
    fn entropy(&mut self) -> [u8; 32];
    /// Ends the run (on QEMU: exits with `code`).
    fn exit(&mut self, code: u32) -> !;
}
