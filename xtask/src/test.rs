//! `cargo xtask test`: the project's test command, and exactly what CI runs.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::{footprint, fuzz, interop, interop_tls, qemu, util};

/// The device targets every `no_std` crate must build for.
pub const DEVICE_TARGETS: &[&str] = &["thumbv7em-none-eabihf", "riscv32imc-unknown-none-elf"];

/// `no_std` builds checked for every device target: (package, label, features), all with
/// `--no-default-features`. "minimal" is what every device has (AES-128-GCM, SHA-256,
/// X25519, QUIC v1, client only); "full" every option a device may enable.
pub const CROSS_BUILDS: &[(&str, &str, &str)] = &[
    ("mote-crypto", "minimal", "rustcrypto"),
    ("mote-crypto", "compact", "rustcrypto,compact"),
    ("mote-crypto", "full", "rustcrypto,aes256,chacha20,p256,ed25519,ecdsa-p256"),
    ("mote-quic", "minimal", ""),
    // The device connection type, as the firmware builds it.
    ("mote-quic", "device", "device,resumption"),
    (
        "mote-quic",
        "full",
        "v2,datagram,aes256,chacha20,p256,migration,pmtud,stateless-reset,pacing,ecn,cid-rotation,blocked-frames,max-streams-updates",
    ),
    ("mote-tls", "minimal", ""),
    ("mote-tls", "full", "server,aes256,chacha20,p256,ed25519,ecdsa-p256"),
    ("mote-tls", "x509", "x509,ed25519,ecdsa-p256"),
    ("mote-h3", "device", "device"),
];

/// The workspace clippy invocation.
const CLIPPY_WORKSPACE: &[&str] =
    &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"];

/// Default fuzzing time per target in `cargo xtask test`.
const DEFAULT_FUZZ_SECONDS: u64 = 20;

/// A step of `cargo xtask test`, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Step {
    /// `cargo fmt --all --check` in the workspace, `firmware/` and `fuzz/`
    Fmt,
    /// `cargo clippy --workspace --all-targets -- -D warnings`, the core crates (tests
    /// included) in their device configurations and reduced host builds, and clippy on the
    /// firmware
    Clippy,
    /// `cargo test --workspace`, then the core crates' tests in their device configuration
    /// (`--no-default-features`), so feature-gated code paths are tested as devices build them,
    /// and in reduced host builds (the footprint matrix's options dropped)
    Test,
    /// `no_std` builds of mote-crypto, mote-quic and mote-tls for the device targets
    Cross,
    /// `cargo xtask footprint` (builds the firmware image in every configuration)
    Footprint,
    /// `cargo xtask qemu --profile wlan`: the client firmware on QEMU against the server,
    /// on Cortex-M4 (mps2-an386) and riscv32imc (virt)
    Qemu,
    /// `cargo xtask interop-tls`: mote-tls against aioquic's TLS engine, both roles
    InteropTls,
    /// `cargo xtask interop` on the CI subset: handshake, transfer, retry, resumption,
    /// zerortt, zerortt-1, http3, keyupdate, v2, ecn between mote and aioquic and quic-go,
    /// both roles, and `mote get --device` (the firmware's stack) as a client
    Interop,
    /// every fuzz target for `--fuzz-seconds` each
    Fuzz,
}

/// Core crates tested a second time without default features (package, features).
/// mote-crypto runs three times more: minimal, as the Cortex-M4 client builds it (`compact`:
/// mote's GHASH; salty's X25519 and Ed25519, here on its portable path; the KAT image covers
/// the assembly on QEMU), and as the riscv32imc client builds it (`fiat`: the curve code on
/// fiat-crypto's field, checked against salty's).
const DEVICE_TESTS: &[(&str, &str)] = &[
    ("mote-crypto", "rustcrypto"),
    ("mote-crypto", "rustcrypto,compact,salty,ed25519"),
    ("mote-crypto", "rustcrypto,compact,fiat,ed25519"),
    ("mote-quic", ""),
    ("mote-quic", "device,resumption"),
    // Every host feature but `std`: the connection and device-connection suites over the
    // device's 32-bit books (stream offsets, packet numbers; ARCHITECTURE.md, session 10).
    (
        "mote-quic",
        "device,resumption,server,v2,datagram,reorder,zero-rtt,migration,stateless-reset,pmtud,\
         err-reasons,pacing,ecn,cid-rotation,stats,stream-packing,blocked-frames,\
         max-streams-updates",
    ),
    ("mote-tls", ""),
    ("mote-h3", "device"),
];

/// Host builds with the footprint matrix's options dropped (package, features), tested and
/// linted like [`DEVICE_TESTS`]: every matrix option off at once on mote-quic (with `std`,
/// `server` for the pair tests and `device` for the device-connection tests), and mote-tls
/// as the matrix's full row builds it (no client authentication). Tests that need a dropped
/// option are gated on it; these runs keep the gates honest (session 11: 29 mote-quic and 2
/// mote-tls tests failed in these builds, none of them run by CI). Cost on the 2-core
/// machine: about 80 s with the dependencies built (clippy 17 s, test builds and runs), 42 s
/// when nothing changed.
const REDUCED_TESTS: &[(&str, &str)] = &[
    ("mote-quic", "std,server,resumption,device"),
    ("mote-tls", "server,aes256,chacha20,p256,ed25519"),
];

const ALL_STEPS: &[Step] = &[
    Step::Fmt,
    Step::Clippy,
    Step::Test,
    Step::Cross,
    Step::Footprint,
    Step::Qemu,
    Step::InteropTls,
    Step::Interop,
    Step::Fuzz,
];

/// Arguments of `cargo xtask test`.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// Skip these steps (repeatable or comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "STEP")]
    skip: Vec<Step>,
    /// Skip the fuzz step (same as `--skip fuzz`); handy locally.
    #[arg(long)]
    skip_fuzz: bool,
    /// Fuzz each target for this many seconds.
    #[arg(long, default_value_t = DEFAULT_FUZZ_SECONDS, value_name = "N")]
    fuzz_seconds: u64,
    /// Stop at the first failing step instead of running the rest.
    #[arg(long)]
    fail_fast: bool,
}

/// Entry point of `cargo xtask test`: runs every step not skipped, prints a summary and
/// fails if any step failed.
pub fn run(args: &TestArgs) -> Result<()> {
    let skipped = |step: Step| args.skip.contains(&step) || (step == Step::Fuzz && args.skip_fuzz);
    let steps: Vec<Step> = ALL_STEPS.iter().copied().filter(|s| !skipped(*s)).collect();
    let started = Instant::now();
    let mut results: Vec<(Step, Duration, Result<()>)> = Vec::new();

    for (i, step) in steps.iter().enumerate() {
        let name = step.to_possible_value().expect("no skipped variants").get_name().to_owned();
        eprintln!();
        eprintln!("==> [{}/{}] {name}: {}", i + 1, steps.len(), describe(*step));
        let t = Instant::now();
        let result = run_step(*step, args);
        let elapsed = t.elapsed();
        match &result {
            Ok(()) => eprintln!("==> {name}: ok ({elapsed:.1?})"),
            Err(e) => eprintln!("==> {name}: FAILED ({elapsed:.1?}): {e:#}"),
        }
        let failed = result.is_err();
        results.push((*step, elapsed, result));
        if failed && args.fail_fast {
            break;
        }
    }

    eprintln!();
    eprintln!("==> summary ({:.1?} in all)", started.elapsed());
    for (step, elapsed, result) in &results {
        let name = step.to_possible_value().expect("no skipped variants").get_name().to_owned();
        let status = if result.is_ok() { "ok" } else { "FAILED" };
        eprintln!("    {name:<10} {status:<7} {elapsed:>8.1?}");
    }
    let failed = results.iter().filter(|(_, _, r)| r.is_err()).count();
    let passed = results.len() - failed;
    let not_run = ALL_STEPS.len() - results.len();
    // The closing line, in the "N passed, N failed" form CI tooling reads.
    if not_run > 0 {
        println!("steps: {passed} passed, {failed} failed, {not_run} skipped");
    } else {
        println!("steps: {passed} passed, {failed} failed");
    }
    if failed > 0 {
        bail!("{failed} step(s) failed");
    }
    Ok(())
}

/// The host's target triple (from `rustc -vV`).
fn host_triple() -> Result<String> {
    let out = std::process::Command::new("rustc").arg("-vV").output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("rustc -vV printed no host triple"))
}

fn describe(step: Step) -> &'static str {
    match step {
        Step::Fmt => "cargo fmt --all --check (workspace, firmware/, fuzz/)",
        Step::Clippy => {
            "cargo clippy --workspace --all-targets -- -D warnings; core crates with device features and reduced host builds; firmware in each configuration"
        }
        Step::Test => "cargo test --workspace; core crates again with device features and reduced host builds",
        Step::Cross => {
            "no_std builds of mote-crypto, mote-quic and mote-tls for the device targets"
        }
        Step::Footprint => {
            "cargo xtask footprint (client matrix on both targets, budget check) and the client's host tests"
        }
        Step::Qemu => {
            "cargo xtask qemu --profile wlan (client firmware on QEMU mps2-an386 and riscv32 virt: GET + POST, 1-RTT and 0-RTT)"
        }
        Step::InteropTls => "cargo xtask interop-tls (mote-tls against aioquic, both roles)",
        Step::Interop => {
            "cargo xtask interop, CI subset (mote against aioquic and quic-go, both roles and the device client)"
        }
        Step::Fuzz => "each fuzz target, bounded",
    }
}

fn run_step(step: Step, args: &TestArgs) -> Result<()> {
    let root = util::repo_root();
    match step {
        Step::Fmt => {
            // The main workspace, then the two separate ones.
            for dir in [root.clone(), root.join("firmware"), root.join("fuzz")] {
                util::run(util::cargo(&dir, None).args(["fmt", "--all", "--check"]))?;
            }
            Ok(())
        }
        Step::Clippy => {
            util::run(util::cargo(&root, None).args(CLIPPY_WORKSPACE))?;
            // The core crates, tests included, in each device configuration the test step
            // runs (feature-gated code and tests: e.g. mote-quic's device connection type,
            // which the workspace build has with the host features, through
            // mote-scenarios).
            for (package, features) in DEVICE_TESTS.iter().chain(REDUCED_TESTS) {
                let mut cmd = util::cargo(&root, None);
                cmd.args(["clippy", "-p", package, "--all-targets", "--no-default-features"]);
                if !features.is_empty() {
                    cmd.args(["--features", features]);
                }
                eprintln!("--- {package} clippy, features [{features}]");
                util::run(cmd.args(["--", "-D", "warnings"]))?;
            }
            // mote-h3's device adapter (feature `device`).
            util::run(util::cargo(&root, None).args([
                "clippy",
                "-p",
                "mote-h3",
                "--features",
                "device",
                "--",
                "-D",
                "warnings",
            ]))?;
            // The firmware: the footprint image, and the client in its largest and smallest
            // configurations on the general connection (`full`, `no-pacing-ecn`: firmware
            // feature `general-connection`) and each server authentication (the device
            // connection), on both targets.
            for target in footprint::TARGETS {
                let mut cmd = util::cargo(&root.join("firmware"), None);
                cmd.args(["clippy", "-p", "mote-footprint", "--target", target, "--"])
                    .args(["-D", "warnings"]);
                if *target == footprint::CORTEX_M4 {
                    util::run(&mut cmd)?;
                }
            }
            for config in footprint::configs()
                .iter()
                .filter(|c| c.name == "full" || c.name == "no-pacing-ecn" || c.group == "auth")
            {
                let mut cmd = util::cargo(&root.join("firmware"), None);
                cmd.args(["clippy", "-p", "mote-client", "--target", config.target])
                    .args(["--no-default-features", "--features", &config.features.join(",")])
                    .args(["--", "-D", "warnings"]);
                util::run(&mut cmd)?;
            }
            Ok(())
        }
        Step::Test => {
            util::run(util::cargo(&root, None).args(["test", "--workspace"]))?;
            for (package, features) in DEVICE_TESTS.iter().chain(REDUCED_TESTS) {
                let mut cmd = util::cargo(&root, None);
                cmd.args(["test", "--package", package, "--no-default-features"]);
                if !features.is_empty() {
                    cmd.args(["--features", features]);
                }
                eprintln!("--- {package} tests, features [{features}]");
                util::run(&mut cmd)?;
            }
            Ok(())
        }
        Step::Cross => {
            let mut failures = Vec::new();
            for target in DEVICE_TARGETS {
                for (package, label, features) in CROSS_BUILDS {
                    let mut cmd = util::cargo(&root, None);
                    cmd.args([
                        "build",
                        "--package",
                        package,
                        "--target",
                        target,
                        "--no-default-features",
                    ]);
                    if !features.is_empty() {
                        cmd.args(["--features", features]);
                    }
                    eprintln!("--- {package} ({label}) for {target}");
                    if let Err(e) = util::run(&mut cmd) {
                        eprintln!("{e:#}");
                        failures.push(format!("{package} ({label}) for {target}"));
                    }
                }
            }
            if !failures.is_empty() {
                bail!("cross builds failed: {}", failures.join("; "));
            }
            Ok(())
        }
        Step::Footprint => {
            // The client's board-independent logic (framing) on the host.
            let mut cmd = util::cargo(&root.join("firmware"), None);
            cmd.args(["test", "-p", "mote-client", "--lib", "--target", &host_triple()?]);
            util::run(&mut cmd)?;
            footprint::FootprintArgs::ci().iter().try_for_each(footprint::run)
        }
        Step::Qemu => qemu::QemuArgs::ci().iter().try_for_each(qemu::run),
        Step::InteropTls => interop_tls::run(&interop_tls::InteropTlsArgs::default()),
        Step::Interop => interop::run(&interop::InteropArgs::ci()),
        Step::Fuzz => {
            let targets = fuzz::list_targets()?;
            fuzz::ensure_tools()?;
            let mut failures = Vec::new();
            for target in &targets {
                eprintln!("--- fuzz target {target} ({} s)", args.fuzz_seconds);
                if let Err(e) = fuzz::run_target(target, args.fuzz_seconds, &[]) {
                    eprintln!("{e:#}");
                    failures.push(target.as_str());
                }
            }
            if !failures.is_empty() {
                bail!("fuzz targets failed: {}", failures.join(", "));
            }
            Ok(())
        }
    }
}
