//! A RISC-V board in the style of QEMU's `virt` machine (ESP32-C3-class `riscv32imc`): a
//! 16550 UART at 0x1000_0000 as the radio and the CLINT's `mtime` (10 MHz) as the clock.
//! Only built (`cargo xtask footprint` measures it); there is no runner. The CPU waits with
//! WFI while the UART receive interrupt is enabled in the UART (no handler runs: machine
//! interrupts stay disabled in `mstatus`, a pending one still ends WFI).

#![allow(unsafe_code)]

use core::ptr::{read_volatile, write_volatile};

use super::Board;

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
/// Longest single sleep.
const MAX_SLEEP_US: u64 = 10_000_000;

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

/// The board's state.
pub struct Virt {
    last: u32,
    us: u64,
    sub: u32,
    asleep_ticks: u64,
    ticks: u64,
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
        Self { last: mtime() as u32, us: 0, sub: 0, asleep_ticks: 0, ticks: 0 }
    }

    fn tick(&mut self) {
        let v = mtime() as u32;
        let delta = v.wrapping_sub(self.last);
        self.last = v;
        self.ticks += u64::from(delta);
        let total = self.sub + delta % TICKS_PER_US;
        self.us += u64::from(delta / TICKS_PER_US + total / TICKS_PER_US);
        self.sub = total % TICKS_PER_US;
    }
}

impl Board for Virt {
    fn now_us(&mut self) -> u64 {
        self.tick();
        self.us
    }

    fn busy_ns(&mut self) -> u64 {
        self.tick();
        (self.ticks - self.asleep_ticks) * 100
    }

    fn write_byte(&mut self, b: u8) {
        while read8(UART + LSR) & LSR_THR_EMPTY == 0 {}
        write8(UART + RBR_THR, b);
    }

    fn read_byte(&mut self) -> Option<u8> {
        (read8(UART + LSR) & LSR_DATA_READY != 0).then(|| read8(UART + RBR_THR))
    }

    fn sleep_until(&mut self, deadline_us: Option<u64>) {
        let now = self.now_us();
        let wait = match deadline_us {
            Some(d) if d <= now => return,
            Some(d) => (d - now).min(MAX_SLEEP_US),
            None => MAX_SLEEP_US,
        };
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
        self.asleep_ticks += mtime() - before;
        self.tick();
    }

    fn entropy(&mut self) -> [u8; 32] {
        let mut seed = *crate::DEVICE_SEED;
        for (s, t) in seed.iter_mut().zip(mtime().to_le_bytes().iter().cycle()) {
            *s ^= *t;
        }
        seed
    }

    fn exit(&mut self, _code: u32) -> ! {
        loop {
            riscv::asm::wfi();
        }
    }
}
