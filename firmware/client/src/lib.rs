//! mote's device client: the firmware logic, independent of the board.
//!
//! - [`frame`]: SLIP + CRC-16 framing of datagrams on the serial "radio".
//! - [`board`]: the hardware the client needs (serial line, clock, sleep), one module per
//!   board: QEMU's MPS2 AN386 (Cortex-M4) and a RISC-V `virt`-style board (build check).
//! - `measure` (feature `selfmeasure`, the QEMU harness's instrumentation): stack painting,
//!   per-phase instruction and time counters, the report frames' tags.
//! - `heap` (feature `x509` only): the counting allocator rustls-webpki needs.
//! - `mem` (Cortex-M only): compact `memcpy`/`memmove`/`memset`/`memcmp` replacing
//!   compiler_builtins'.
//! - [`conn`]: the QUIC connection the client runs on (mote-quic's device connection type;
//!   its general `Connection` with feature `general-connection`).
//! - [`app`]: the two transactions (HTTP/3 GET 5 KB + POST 1 KB; 1-RTT, then 0-RTT).
#![cfg_attr(not(test), no_std)]

// riscv32imc has no curve code of its own choosing by default: Cargo features cannot differ
// by target, so a hand-made riscv32 build names one (`cargo xtask` passes `fiat`). Without
// this, such a build would silently take the dalek crates (11 KB more flash, twice the stack).
#[cfg(all(
    target_arch = "riscv32",
    not(any(feature = "fiat", feature = "dalek", feature = "salty-portable"))
))]
compile_error!(
    "riscv32 builds choose their X25519/Ed25519 field: --features fiat (the measured choice), \
     dalek or salty-portable"
);

pub mod app;
pub mod board;
pub mod conn;
pub mod frame;
#[cfg(feature = "x509")]
pub mod heap;
#[cfg(feature = "selfmeasure")]
pub mod measure;
#[cfg(all(target_arch = "arm", target_os = "none"))]
mod mem;

/// A device-unique seed provisioned in flash, mixed into the random generator's seed with
/// the host's nonce and the timer (QEMU's boards have no TRNG).
pub static DEVICE_SEED: &[u8; 32] = b"mote-client device seed 00000001";

/// The external PSK identity shared with the server (feature `psk`).
#[cfg(feature = "psk")]
pub static PSK_IDENTITY: &[u8] = b"mote-device-1";
/// The external PSK (feature `psk`): a test key, provisioned per device in production.
#[cfg(feature = "psk")]
pub static PSK_KEY: &[u8] = &[0x6d; 32];

/// Unix time at boot for the X.509 build's validity checks (a device learns it from its
/// network; QEMU's board has no RTC).
#[cfg(feature = "x509")]
pub const UNIX_TIME_AT_BOOT: u64 = 1_790_000_000;
