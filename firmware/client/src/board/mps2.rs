//! QEMU's Arm MPS2+ AN386 board (Cortex-M4, `-machine mps2-an386`): CMSDK APB UART0 as the
//! radio, CMSDK timer 0 as the free-running clock and timer 1 as the wake-up alarm.
//!
//! The CPU sleeps in WFI with interrupts masked (PRIMASK): the UART receive and timer 1
//! interrupts are enabled in the NVIC only so that their pending state ends the WFI; no
//! handler runs. Time asleep is measured around each WFI, so busy time, and with
//! `-icount shift=0` the instruction count, is the clock minus the sleeps.

#![allow(unsafe_code)]

use core::ptr::{read_volatile, write_volatile};

use mote_quic::Instant;

use super::{sleep_span, Board, Clock};

/// CMSDK APB UART0 (AN386 memory map).
const UART0: usize = 0x4000_4000;
const UART_DATA: usize = 0x00;
const UART_STATE: usize = 0x04;
const UART_CTRL: usize = 0x08;
const UART_INTCLEAR: usize = 0x0c;
const UART_BAUDDIV: usize = 0x10;
const STATE_TX_FULL: u32 = 1 << 0;
const STATE_RX_FULL: u32 = 1 << 1;
const CTRL_TX_EN: u32 = 1 << 0;
const CTRL_RX_EN: u32 = 1 << 1;
const CTRL_RX_INT_EN: u32 = 1 << 3;
/// UART0 receive interrupt (AN386: IRQ 0).
const IRQ_UART0_RX: u32 = 0;

/// CMSDK APB timers 0 and 1, clocked at the board's 25 MHz system clock.
const TIMER0: usize = 0x4000_0000;
const TIMER1: usize = 0x4000_1000;
const TIMER_CTRL: usize = 0x00;
const TIMER_VALUE: usize = 0x04;
const TIMER_RELOAD: usize = 0x08;
const TIMER_INTCLEAR: usize = 0x0c;
const TIMER_EN: u32 = 1 << 0;
const TIMER_IRQ_EN: u32 = 1 << 3;
/// Timer 1 interrupt (AN386: IRQ 9).
const IRQ_TIMER1: u32 = 9;
/// Timer ticks per microsecond (25 MHz).
const TICKS_PER_US: u32 = 25;

/// NVIC set-enable and clear-pending registers (ARMv7-M).
const NVIC_ISER0: usize = 0xe000_e100;
const NVIC_ICPR0: usize = 0xe000_e280;

/// The device part of the vector table, up to the highest interrupt this firmware enables
/// (timer 1, IRQ 9; the generic table of cortex-m-rt without its `device` feature has 240
/// entries, the AN386 has 32). An interrupt the NVIC never enables is never taken, so it
/// needs no vector (ARMv7-M B1.5.3: the table covers the exceptions that can be taken). No
/// handler runs at all (PRIMASK stays set; a pending interrupt only ends WFI), so every
/// entry is cortex-m-rt's `DefaultHandler`.
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
static __INTERRUPTS: [unsafe extern "C" fn(); VECTORS] = [DefaultHandler; VECTORS];

/// Interrupt vectors in the table: IRQ 0 to the highest one enabled (timer 1).
const VECTORS: usize = IRQ_TIMER1 as usize + 1;
const _: () = assert!((IRQ_UART0_RX as usize) < VECTORS);

extern "C" {
    /// cortex-m-rt's handler of unexpected interrupts.
    fn DefaultHandler();
}

fn read(addr: usize) -> u32 {
    // SAFETY: `addr` is one of the device registers above, valid on this board.
    unsafe { read_volatile(addr as *const u32) }
}

fn write(addr: usize, v: u32) {
    // SAFETY: as in `read`.
    unsafe { write_volatile(addr as *mut u32, v) }
}

/// Timer 0 as an up-counter (it counts down from `u32::MAX`).
fn ticks() -> u32 {
    !read(TIMER0 + TIMER_VALUE)
}

/// The board's state: the clock (timer 0) and its sleep account.
pub struct Mps2 {
    clock: Clock<TICKS_PER_US>,
}

impl Mps2 {
    /// Sets up the UART, the free-running timer and the wake-up sources.
    pub fn init() -> Self {
        cortex_m::interrupt::disable();
        write(UART0 + UART_BAUDDIV, 16);
        write(UART0 + UART_CTRL, CTRL_TX_EN | CTRL_RX_EN | CTRL_RX_INT_EN);
        write(TIMER0 + TIMER_RELOAD, u32::MAX);
        write(TIMER0 + TIMER_VALUE, u32::MAX);
        write(TIMER0 + TIMER_CTRL, TIMER_EN);
        write(NVIC_ISER0, (1 << IRQ_UART0_RX) | (1 << IRQ_TIMER1));
        Self { clock: Clock::new(0) }
    }
}

impl Board for Mps2 {
    fn now_us(&mut self) -> u64 {
        self.clock.update(ticks())
    }

    #[cfg(feature = "selfmeasure")]
    fn busy_ns(&mut self) -> u64 {
        self.clock.update(ticks());
        self.clock.busy_ns()
    }

    fn write_byte(&mut self, b: u8) {
        while read(UART0 + UART_STATE) & STATE_TX_FULL != 0 {}
        write(UART0 + UART_DATA, u32::from(b));
    }

    fn read_byte(&mut self) -> Option<u8> {
        if read(UART0 + UART_STATE) & STATE_RX_FULL == 0 {
            return None;
        }
        let b = read(UART0 + UART_DATA) as u8;
        write(UART0 + UART_INTCLEAR, 1 << 1);
        write(NVIC_ICPR0, 1 << IRQ_UART0_RX);
        Some(b)
    }

    fn sleep_until(&mut self, deadline: Option<Instant>) {
        let Some(wait) = sleep_span(self.now_us(), deadline) else { return };
        if read(UART0 + UART_STATE) & STATE_RX_FULL != 0 {
            return;
        }
        // Alarm in `wait` µs (≤ 10 s: 250 M ticks, fits in 32 bits).
        let alarm = (wait as u32).saturating_mul(TICKS_PER_US).max(1);
        // Timer 1 is stopped with nothing pending here: it is off at reset, and every sleep
        // stops it and clears its interrupt below.
        write(TIMER1 + TIMER_RELOAD, alarm);
        write(TIMER1 + TIMER_VALUE, alarm);
        write(TIMER1 + TIMER_CTRL, TIMER_EN | TIMER_IRQ_EN);
        #[cfg(feature = "selfmeasure")]
        let before = ticks();
        // A byte that arrived after the check above is pending in the NVIC: WFI returns.
        cortex_m::asm::wfi();
        #[cfg(feature = "selfmeasure")]
        self.clock.slept(u64::from(ticks().wrapping_sub(before)));
        write(TIMER1 + TIMER_CTRL, 0);
        write(TIMER1 + TIMER_INTCLEAR, 1);
        write(NVIC_ICPR0, 1 << IRQ_TIMER1);
        self.clock.update(ticks());
    }

    fn entropy(&mut self) -> [u8; 32] {
        super::seed_with_timer(&read(TIMER0 + TIMER_VALUE).to_le_bytes())
    }

    fn exit(&mut self, code: u32) -> ! {
        #[cfg(feature = "semihosting")]
        cortex_m_semihosting::debug::exit(if code == 0 {
            cortex_m_semihosting::debug::EXIT_SUCCESS
        } else {
            cortex_m_semihosting::debug::EXIT_FAILURE
        });
        let _ = code;
        loop {
            cortex_m::asm::wfi();
        }
    }
}
