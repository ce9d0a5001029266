//! mote's footprint firmware: a Cortex-M4 image that links the device stack and drives
//! every piece of it, so that `cargo xtask footprint` measures what a real device would
//! carry (nothing is optimised away: inputs pass through [`black_box`]) and so the image can
//! run on QEMU's `mps2-an386` board as an on-target check.
//!
//! Each stack piece has one module with one `exercise` function that runs known-answer
//! checks through the public API and records them in [`Checks`]. Adding a piece (frames,
//! packet protection, transport parameters, TLS, …) is one module plus one call in
//! [`run`]. Cargo features select the device configuration (see `Cargo.toml`).
#![no_std]
#![no_main]

mod checks;
mod coding;
mod connection;
mod crypto;
mod frames;
mod packet;
mod tls;
mod transport_params;
mod version;

use core::hint::black_box;

use cortex_m_rt::entry;
use panic_halt as _;
// Links cortex-m's single-core critical-section implementation, which semihosting needs.
#[cfg(feature = "semihosting")]
use cortex_m as _;

pub use checks::Checks;

/// Runs every stack piece once and returns the tally.
fn run() -> Checks {
    let mut checks = Checks::new();
    coding::exercise(&mut checks);
    version::exercise(&mut checks);
    frames::exercise(&mut checks);
    transport_params::exercise(&mut checks);
    crypto::exercise(&mote_crypto::rustcrypto::RustCrypto, &mut checks);
    packet::exercise(&mote_crypto::rustcrypto::RustCrypto, &mut checks);
    tls::exercise(&mut checks);
    connection::exercise(&mut checks);
    checks
}

#[entry]
fn main() -> ! {
    let checks = black_box(run());
    #[cfg(feature = "semihosting")]
    report(&checks);
    black_box(checks.failed());
    loop {
        core::hint::spin_loop();
    }
}

/// Prints the tally on the host's console and ends the QEMU session with a matching exit
/// status (feature `semihosting`).
#[cfg(feature = "semihosting")]
fn report(checks: &Checks) {
    use cortex_m_semihosting::{debug, hprintln};
    hprintln!(
        "mote-footprint: {} passed, {} failed",
        checks.run() - checks.failed(),
        checks.failed()
    );
    debug::exit(if checks.failed() == 0 { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
}
