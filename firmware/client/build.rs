//! Puts the target's memory map on the linker search path as `memory.x` and links with the
//! runtime's `link.x` (cortex-m-rt for Arm, riscv-rt for RISC-V).

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let memory: &[u8] = match arch.as_str() {
        "riscv32" => include_bytes!("memory-riscv.x"),
        _ => include_bytes!("memory.x"),
    };
    std::fs::write(out.join("memory.x"), memory).expect("write memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=memory-riscv.x");
    println!("cargo:rerun-if-changed=build.rs");
    if arch == "riscv32" {
        // riscv-rt's link.x expects the memory map (with its REGION_ aliases) first.
        println!("cargo:rustc-link-arg-bins=-Tmemory.x");
    }
    if arch == "arm" {
        // cortex-m-rt's `device` feature includes `device.x` (weak aliases of the device's
        // interrupt handlers). None is needed: `__INTERRUPTS` (board/mps2.rs) names
        // `DefaultHandler` directly.
        std::fs::write(out.join("device.x"), "/* mote-client: no device interrupt handlers */\n")
            .expect("write device.x");
    }
    if matches!(arch.as_str(), "arm" | "riscv32") {
        println!("cargo:rustc-link-arg-bins=--nmagic");
        // Identical code folding: functions that compiled to the same bytes (monomorphized
        // copies, drop glue, the panic entry points, outlined sequences) are kept once. lld
        // folds only code here, never data (`--ignore-data-address-equality` is not given),
        // and Rust promises no distinct addresses for distinct functions.
        println!("cargo:rustc-link-arg-bins=--icf=all");
        println!("cargo:rustc-link-arg-bins=-Tlink.x");
    }
}
