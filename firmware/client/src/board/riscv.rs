//! A RISC-V board in the style of QEMU's `virt` machine (ESP32-C3-class `riscv32imc`): a
//! 16550 UART at 0x1000_0000 as the radio and the CLINT's `mtime` (10 MHz) as the clock.
//! Only built (`cargo xtask footprint` measures it); there is no runner. The CPU waits with
//! WFI while the UART receive interrupt is enabled in the UART (no handler runs: machine
//! interrupts stay disabled in `mstatus`, a pending one still ends WFI).

#![allow(unsafe_code)]

use core::ptr::{read_volatile, write_volatile};

use super::{sleep_span, Board, Clock};

const UART: usize = 0x1000_0000;
const RBR_THR: usize = 0;
const IER: usize = 1;
const LSR: usize = 5;
const LSR_DATA_READY: u8 = 1 << 0;
const LSR_THR_EMPTY: u8 = 1 << 5;
/// CLINT `mtime` (64-bit, 10 MHz on QEMU virt) and `mtimecmp` of hart 0.
const MTIME: usize = 0x0200_bff8;
const MTIMECMP: usize = 0x0200_4000;
const TICKS_PER_US: u32 = 10;

fn read8(addr: usize) -> u8 {
    // SAFETY: `addr` is a UART register of this board.
    unsafe { read_volatile(addr as *const u8) }
}

fn write8(addr: usize, v: u8) {
    // SAFETY: as in `read8`.
    unsafe { write_volatile(addr as *mut u8, v) }
}

fn mtime() -> u64 {
    // SAFETY: the CLINT's mtime registers; read high, low, high to get a consistent value.
    unsafe {
        loop {
            let hi = read_volatile((MTIME + 4) as *const u32);
            let lo = read_volatile(MTIME as *const u32);
            if hi == read_volatile((MTIME + 4) as *const u32) {
                return (u64::from(hi) << 32) | u64::from(lo);
            }
        }
    }
}

/// The board's state: the clock (`mtime`, low word) and its sleep account.
pub struct Virt {
    clock: Clock<TICKS_PER_US>,
}

impl Virt {
    /// Enables the UART receive interrupt and the timer interrupt source (in `mie`).
    pub fn init() -> Self {
        write8(UART + IER, 1);
        // SAFETY: enabling interrupt sources in `mie` only makes WFI wake on them;
        // `mstatus.MIE` stays clear, so no handler runs.
        unsafe {
            riscv::register::mie::set_mtimer();
            riscv::register::mie::set_mext();
        }
        Self { clock: Clock::new(mtime() as u32) }
    }
}

impl Board for Virt {
    fn now_us(&mut self) -> u64 {
        self.clock.update(mtime() as u32)
    }

    #[cfg(feature = "selfmeasure")]
    fn busy_ns(&mut self) -> u64 {
        self.clock.update(mtime() as u32);
        self.clock.busy_ns()
    }

    fn write_byte(&mut self, b: u8) {
        while read8(UART + LSR) & LSR_THR_EMPTY == 0 {}
        write8(UART + RBR_THR, b);
    }

    fn read_byte(&mut self) -> Option<u8> {
        (read8(UART + LSR) & LSR_DATA_READY != 0).then(|| read8(UART + RBR_THR))
    }

    fn sleep_until(&mut self, deadline_us: Option<u64>) {
        let Some(wait) = sleep_span(self.now_us(), deadline_us) else { return };
        if read8(UART + LSR) & LSR_DATA_READY != 0 {
            return;
        }
        let before = mtime();
        let at = before + wait * u64::from(TICKS_PER_US);
        // SAFETY: hart 0's mtimecmp; written high word first (to all ones) so no spurious
        // compare happens between the two halves.
        unsafe {
            write_volatile((MTIMECMP + 4) as *mut u32, u32::MAX);
            write_volatile(MTIMECMP as *mut u32, at as u32);
            write_volatile((MTIMECMP + 4) as *mut u32, (at >> 32) as u32);
        }
        riscv::asm::wfi();
        #[cfg(feature = "selfmeasure")]
        self.clock.slept(mtime() - before);
        self.clock.update(mtime() as u32);
    }

    fn entropy(&mut self) -> [u8; 32] {
        super::seed_with_timer(&mtime().to_le_bytes())
    }

    fn exit(&mut self, _code: u32) -> ! {
        loop {
            riscv::asm::wfi();
        }
    }
}
