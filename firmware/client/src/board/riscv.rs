//! QEMU's RISC-V `virt` machine as an ESP32-C3-class `riscv32imc` board (`cargo xtask qemu
//! --target riscv32imc-unknown-none-elf` runs it): UART0 (a 16550 at 0x1000_0000, PLIC
//! source 10) as the radio, the CLINT's `mtime` (10 MHz) as the clock, `minstret` for the
//! self-measurement's instruction count, and the SiFive test device at 0x10_0000 to power
//! off. The CPU waits with WFI while the UART's receive interrupt is routed through the PLIC
//! to hart 0's machine context (no handler runs: machine interrupts stay disabled in
//! `mstatus`; a pending one still ends WFI, and the PLIC claim is completed before the next
//! sleep).

#![allow(unsafe_code)]

use core::ptr::{read_volatile, write_volatile};

use mote_quic::Instant;

use super::{sleep_span, Board, Clock};

const UART: usize = 0x1000_0000;
const RBR_THR: usize = 0;
const IER: usize = 1;
const LSR: usize = 5;
const LSR_DATA_READY: u8 = 1 << 0;
const LSR_THR_EMPTY: u8 = 1 << 5;
/// UART0's interrupt source on the PLIC.
const UART_IRQ: usize = 10;
/// The PLIC: source priorities, hart 0 M-mode context's enable bits, threshold and claim.
const PLIC_PRIORITY: usize = 0x0c00_0000;
const PLIC_ENABLE: usize = 0x0c00_2000;
const PLIC_THRESHOLD: usize = 0x0c20_0000;
const PLIC_CLAIM: usize = 0x0c20_0004;
/// CLINT `mtime` (64-bit, 10 MHz on QEMU virt) and `mtimecmp` of hart 0.
const MTIME: usize = 0x0200_bff8;
const MTIMECMP: usize = 0x0200_4000;
const TICKS_PER_US: u32 = 10;
/// The SiFive test device ("finisher"): 0x5555 powers off with status 0, `code << 16 |
/// 0x3333` with status `code`.
const FINISHER: usize = 0x0010_0000;

/// Powers QEMU off with exit status `code` (the board's exit, and the panic handler's).
pub fn power_off(code: u32) -> ! {
    write32(FINISHER, if code == 0 { 0x5555 } else { (code.min(0xffff) << 16) | 0x3333 });
    loop {
        riscv::asm::wfi();
    }
}

fn read8(addr: usize) -> u8 {
    // SAFETY: `addr` is a UART register of this board.
    unsafe { read_volatile(addr as *const u8) }
}

fn write8(addr: usize, v: u8) {
    // SAFETY: as in `read8`.
    unsafe { write_volatile(addr as *mut u8, v) }
}

fn write32(addr: usize, v: u32) {
    // SAFETY: `addr` is a word register of this board (PLIC, CLINT, finisher).
    unsafe { write_volatile(addr as *mut u32, v) }
}

fn read32(addr: usize) -> u32 {
    // SAFETY: as in `write32`.
    unsafe { read_volatile(addr as *const u32) }
}

fn mtime() -> u64 {
    // Read high, low, high to get a consistent value.
    loop {
        let hi = read32(MTIME + 4);
        let lo = read32(MTIME);
        if hi == read32(MTIME + 4) {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

/// Instructions retired since reset. Under QEMU `-icount shift=0` the counter follows
/// virtual time (1 ns per instruction, sleep included), so the board subtracts what
/// advanced during WFI; on hardware that difference is the few cycles of WFI itself.
#[cfg(feature = "selfmeasure")]
fn minstret() -> u64 {
    riscv::register::minstret::read64()
}

/// Completes any claimed-but-pending interrupt at the PLIC, so WFI sleeps again.
fn plic_complete() {
    let irq = read32(PLIC_CLAIM);
    if irq != 0 {
        write32(PLIC_CLAIM, irq);
    }
}

/// The board's state: the clock (`mtime`, low word) and its sleep account.
pub struct Virt {
    clock: Clock<TICKS_PER_US>,
    /// `minstret` at boot and the part of it that passed in WFI.
    #[cfg(feature = "selfmeasure")]
    insn_boot: u64,
    #[cfg(feature = "selfmeasure")]
    insn_asleep: u64,
}

impl Virt {
    /// Routes the UART receive interrupt through the PLIC to hart 0's machine context and
    /// enables it and the timer as wake-up sources (in `mie`).
    pub fn init() -> Self {
        write8(UART + IER, 1);
        write32(PLIC_PRIORITY + 4 * UART_IRQ, 1);
        write32(PLIC_ENABLE + 4 * (UART_IRQ / 32), 1 << (UART_IRQ % 32));
        write32(PLIC_THRESHOLD, 0);
        // SAFETY: enabling interrupt sources in `mie` only makes WFI wake on them;
        // `mstatus.MIE` stays clear, so no handler runs.
        unsafe {
            riscv::register::mie::set_mtimer();
            riscv::register::mie::set_mext();
        }
        Self {
            clock: Clock::new(mtime() as u32),
            #[cfg(feature = "selfmeasure")]
            insn_boot: minstret(),
            #[cfg(feature = "selfmeasure")]
            insn_asleep: 0,
        }
    }
}

impl Board for Virt {
    fn now_us(&mut self) -> u64 {
        self.clock.update(mtime() as u32)
    }

    /// Instructions since boot, not counting the time in WFI (1 instruction = 1 ns under
    /// `-icount shift=0`).
    #[cfg(feature = "selfmeasure")]
    fn busy_ns(&mut self) -> u64 {
        minstret() - self.insn_boot - self.insn_asleep
    }

    fn write_byte(&mut self, b: u8) {
        while read8(UART + LSR) & LSR_THR_EMPTY == 0 {}
        write8(UART + RBR_THR, b);
    }

    fn read_byte(&mut self) -> Option<u8> {
        (read8(UART + LSR) & LSR_DATA_READY != 0).then(|| read8(UART + RBR_THR))
    }

    fn sleep_until(&mut self, deadline: Option<Instant>) {
        let Some(wait) = sleep_span(self.now_us(), deadline) else { return };
        // Clear the last wake-up's claim before looking at the UART: a byte arriving after
        // the look pends the interrupt again and WFI returns at once.
        plic_complete();
        if read8(UART + LSR) & LSR_DATA_READY != 0 {
            return;
        }
        let at = mtime() + wait * u64::from(TICKS_PER_US);
        // Hart 0's mtimecmp, written high word first (to all ones) so no spurious compare
        // happens between the two halves.
        write32(MTIMECMP + 4, u32::MAX);
        write32(MTIMECMP, at as u32);
        write32(MTIMECMP + 4, (at >> 32) as u32);
        #[cfg(feature = "selfmeasure")]
        let before = minstret();
        riscv::asm::wfi();
        #[cfg(feature = "selfmeasure")]
        {
            self.insn_asleep += minstret() - before;
        }
        self.clock.update(mtime() as u32);
    }

    fn entropy(&mut self) -> [u8; 32] {
        super::seed_with_timer(&mtime().to_le_bytes())
    }

    fn exit(&mut self, code: u32) -> ! {
        power_off(code)
    }
}
