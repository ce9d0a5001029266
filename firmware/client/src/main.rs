//! Entry point: board setup, stack painting (feature `selfmeasure`), the transactions, exit.
#![no_std]
#![no_main]

use mote_client::app::{self, Buffers, Slots};
use mote_client::board::Board;

#[cfg(target_arch = "arm")]
#[cortex_m_rt::entry]
fn main() -> ! {
    // cortex-m-rt turns this into a `&'static mut` taken once (no `unsafe`).
    static mut BUFFERS: Buffers = Buffers::new();
    static mut SLOTS: Slots = Slots::new();
    #[cfg(feature = "x509")]
    mote_client::heap::init();
    let mut board = mote_client::board::mps2::Mps2::init();
    #[cfg(feature = "selfmeasure")]
    mote_client::measure::paint_stack();
    let status = app::run(&mut board, BUFFERS, SLOTS);
    board.exit(status)
}

#[cfg(target_arch = "riscv32")]
#[riscv_rt::entry]
fn main() -> ! {
    static mut BUFFERS: Buffers = Buffers::new();
    static mut SLOTS: Slots = Slots::new();
    // SAFETY: `main` runs once and never returns, so these are the only references ever
    // taken.
    #[allow(unsafe_code)]
    let (buffers, slots) =
        unsafe { (&mut *core::ptr::addr_of_mut!(BUFFERS), &mut *core::ptr::addr_of_mut!(SLOTS)) };
    #[cfg(feature = "x509")]
    mote_client::heap::init();
    let mut board = mote_client::board::riscv::Virt::init();
    #[cfg(feature = "selfmeasure")]
    mote_client::measure::paint_stack();
    let status = app::run(&mut board, buffers, slots);
    board.exit(status)
}

/// QEMU's exit status after a panic (a Rust program's; `cargo xtask qemu` names it), so a
/// run fails at once instead of at the host's timeout.
#[cfg(target_arch = "riscv32")]
const PANIC_STATUS: u32 = 101;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // RISC-V `virt`: the SiFive test device carries the status.
    #[cfg(target_arch = "riscv32")]
    mote_client::board::riscv::power_off(PANIC_STATUS);
    // Cortex-M4: semihosting (when built in) reports failure; otherwise spin, as before.
    #[cfg(not(target_arch = "riscv32"))]
    {
        #[cfg(feature = "semihosting")]
        cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
        loop {
            core::hint::spin_loop();
        }
    }
}
