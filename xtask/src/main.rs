//! `cargo xtask`: mote's developer tasks.
//!
//! * `cargo xtask test` — the project's test command (what CI runs): formatting, clippy,
//!   the workspace tests, `no_std` cross builds for the device targets, the firmware
//!   footprint build, and a bounded run of every fuzz target.
//! * `cargo xtask footprint [--json]` — builds the client firmware in the footprint matrix
//!   (both device targets) and reports its flash size, split by crate and by component.
//! * `cargo xtask fuzz <target> [--seconds N]` / `cargo xtask fuzz --list` — runs a
//!   cargo-fuzz target (installing cargo-fuzz and a nightly toolchain if needed).
//! * `cargo xtask qemu [--target T] [--profile wlan|nbiot] [--json]` — the client firmware
//!   on QEMU's Cortex-M4 (or, with `--target riscv32imc-unknown-none-elf`, its RISC-V
//!   `virt` machine) against an HTTP/3 server through a serial-to-UDP bridge with a link
//!   model.
//! * `cargo xtask stack [--elf E] [--root NAME].. [--limit B]` — static stack bounds of the
//!   client firmware below given functions (frames and calls from `llvm-objdump -d`).
//! * `cargo xtask interop-tls [--case S] [--repeat N]` — mote-tls against aioquic's TLS
//!   engine in both roles (a Python venv with pinned aioquic under `target/`); prints a
//!   pass/fail table. Not part of `cargo xtask test`.
//! * `cargo xtask interop [--peers ..] [--cases ..] [--roles ..] [--json FILE]` — the QUIC
//!   interop runner's test cases between mote and aioquic, quic-go and ngtcp2 through
//!   `mote relay`; prints the matrix.
//!
//! The alias lives in `.cargo/config.toml`: `xtask = "run --quiet --package xtask --"`.

mod footprint;
mod fuzz;
mod interop;
mod interop_tls;
mod qemu;
mod stack;
mod test;
mod util;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mote developer tasks. Run from anywhere inside the repository.
#[derive(Parser, Debug)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the project's full test suite (exactly what CI runs).
    ///
    /// Steps, each with a header: fmt, clippy, test, cross (no_std builds of mote-crypto and
    /// mote-quic for thumbv7em-none-eabihf and riscv32imc-unknown-none-elf, minimal and full
    /// feature sets, and mote-h3's device adapter), footprint (the client firmware's
    /// Cortex-M4 build matrix with the flash budget check, its minimal RISC-V build, and its
    /// host tests), qemu (the client firmware on QEMU over the wlan profile), interop-tls,
    /// fuzz (every fuzz target for a bounded time). Exits non-zero if any step fails.
    Test(test::TestArgs),
    /// Build the client firmware in Quant's cumulative build matrix and one row per server
    /// authentication, for both device targets, and report flash split by crate and by
    /// component (plus an SVG chart in target/footprint/footprint.svg).
    ///
    /// The image is `firmware/client` built with opt-level "z", fat LTO, one codegen unit
    /// and panic=abort. Code LTO inlined into the application is moved to its own crate by
    /// the DWARF inline records (addr2line). Flash is the sum of every loaded section:
    /// .vector_table + .text + .rodata + .data (.data counted once, as its initial image).
    /// Each sized symbol is attributed to a crate by its demangled path (for `<T as Trait>`
    /// impls, the crate of T), crates are grouped into components (app, quic, tls, h3,
    /// crypto, core, runtime, outlined, other), and bytes no symbol covers are
    /// "unattributed"; the parts add up to the flash total. Copies of the images are kept in
    /// firmware/target/footprint/<target>/<config>.elf.
    Footprint(footprint::FootprintArgs),
    /// Run a cargo-fuzz target for a bounded time, or list the targets.
    Fuzz(fuzz::FuzzArgs),
    /// Interop-test mote-tls against aioquic's TLS 1.3 engine, in both roles.
    ///
    /// Creates a Python venv under target/interop-tls with pinned aioquic and cryptography
    /// (first run only; needs Python >= 3.11 and PyPI), builds the driver in
    /// xtask/peers/tls-interop, runs every case of xtask/peers/tls-interop/aioquic_peer.py
    /// (full handshakes per suite, group and certificate type, resumption, 0-RTT, negative
    /// cases) comparing both sides' traffic secrets, ALPN and transport parameters, and
    /// prints a table. Exits non-zero if a case fails; cases aioquic cannot do (e.g.
    /// HelloRetryRequest) are reported as unsupported.
    InteropTls(interop_tls::InteropTlsArgs),
    /// The QUIC interop runner's test cases between mote and aioquic, quic-go and ngtcp2,
    /// in both roles, through `mote relay`.
    ///
    /// Installs the peers from the package registries (aioquic from PyPI into a venv under
    /// target/interop, quic-go through the Go module proxy, ngtcp2's gtlsclient/gtlsserver
    /// from Debian), makes certificates, runs each (client, server, case) cell and judges it
    /// by the runner's criteria from the relay's datagram log (decrypted with the key logs)
    /// and the files. Prints a matrix; `--json FILE` writes one line per cell. Exits
    /// non-zero if a cell fails.
    Interop(interop::InteropArgs),
    /// Run the client firmware on QEMU (mps2-an386, Cortex-M4, -icount shift=0) against an
    /// HTTP/3 server on the host, through a serial-to-UDP bridge with a link model.
    ///
    /// The firmware fetches 5 KB with HTTP/3 GET and publishes 1 KB with POST, first with a
    /// 1-RTT handshake, then resumed with 0-RTT, and reports instructions per phase, peak
    /// stack and memory over the serial line; this prints them with the transaction
    /// durations, bytes on the wire and an energy model (every constant with its source).
    Qemu(qemu::QemuArgs),
    /// A static bound of the client firmware's stack on the paths the QEMU run does not
    /// take (key updates, HelloRetryRequest): each function's frame and direct calls from
    /// `llvm-objdump -d`, the deepest chain below each root plus the entry's deepest chain
    /// down to it. Indirect calls and recursion make a bound a lower bound (named).
    Stack(stack::StackArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Test(args) => test::run(&args),
        Command::Footprint(args) => footprint::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::InteropTls(args) => interop_tls::run(&args),
        Command::Interop(args) => interop::run(&args),
        Command::Qemu(args) => qemu::run(&args),
        Command::Stack(args) => stack::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
