//! `cargo xtask fuzz`: runs the cargo-fuzz targets in `fuzz/`.
//!
//! Fuzz targets are the `[[bin]]` targets of `fuzz/Cargo.toml` (read with
//! `cargo metadata`), so adding one is a file in `fuzz/fuzz_targets/` plus a `[[bin]]`
//! entry. cargo-fuzz needs a nightly toolchain (`-Zsanitizer`); the repository pins stable
//! in `rust-toolchain.toml`, so every cargo-fuzz invocation says `cargo +nightly`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::util;

/// The toolchain cargo-fuzz runs on.
const NIGHTLY: &str = "nightly";

/// Arguments of `cargo xtask fuzz`.
#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// The fuzz target to run (see `--list`).
    #[arg(required_unless_present_any = ["list", "all"])]
    target: Option<String>,
    /// List the fuzz targets and exit.
    #[arg(long, conflicts_with_all = ["target", "all"])]
    list: bool,
    /// Run every fuzz target, one after another.
    #[arg(long, conflicts_with = "target")]
    all: bool,
    /// Fuzz for this many seconds per target (libFuzzer's -max_total_time).
    #[arg(long, default_value_t = 60, value_name = "N")]
    seconds: u64,
    /// Extra libFuzzer options, after `--` (e.g. `-- -jobs=2 -max_len=1500`).
    #[arg(last = true, value_name = "LIBFUZZER_ARGS")]
    libfuzzer_args: Vec<String>,
}

/// Entry point of `cargo xtask fuzz`.
pub fn run(args: &FuzzArgs) -> Result<()> {
    let targets = list_targets()?;
    if args.list {
        for t in &targets {
            println!("{t}");
        }
        return Ok(());
    }
    let selected: Vec<String> = if args.all {
        targets
    } else {
        let target = args.target.clone().expect("clap requires a target without --list/--all");
        if !targets.contains(&target) {
            bail!("no fuzz target `{target}`; targets: {}", targets.join(", "));
        }
        vec![target]
    };
    ensure_tools()?;
    for target in &selected {
        run_target(target, args.seconds, &args.libfuzzer_args)?;
    }
    Ok(())
}

/// The cargo-fuzz project directory.
pub fn fuzz_dir() -> PathBuf {
    util::repo_root().join("fuzz")
}

/// The fuzz targets: the names of the `bin` targets of `fuzz/Cargo.toml`.
pub fn list_targets() -> Result<Vec<String>> {
    let dir = fuzz_dir();
    let mut cmd = util::cargo(&dir, None);
    cmd.args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"])
        .arg(dir.join("Cargo.toml"));
    let out = cmd.output().with_context(|| format!("could not start `{}`", util::display(&cmd)))?;
    if !out.status.success() {
        bail!("`{}` failed:\n{}", util::display(&cmd), String::from_utf8_lossy(&out.stderr));
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("cargo metadata printed invalid JSON")?;
    let mut targets = Vec::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_bin = target["kind"].as_array().into_iter().flatten().any(|k| k == "bin");
            if let (true, Some(name)) = (is_bin, target["name"].as_str()) {
                targets.push(name.to_owned());
            }
        }
    }
    if targets.is_empty() {
        bail!("{} declares no [[bin]] fuzz targets", dir.join("Cargo.toml").display());
    }
    targets.sort();
    Ok(targets)
}

/// Makes sure a nightly toolchain and cargo-fuzz are installed, installing them if not.
pub fn ensure_tools() -> Result<()> {
    let root = util::repo_root();
    if !util::probe(util::cargo(&root, Some(NIGHTLY)).arg("--version")) {
        eprintln!("xtask: no `{NIGHTLY}` toolchain; installing it (cargo-fuzz needs one)");
        util::run(std::process::Command::new("rustup").args([
            "toolchain",
            "install",
            NIGHTLY,
            "--profile",
            "minimal",
        ]))?;
    }
    if !util::probe(util::cargo(&root, Some(NIGHTLY)).args(["fuzz", "--version"])) {
        eprintln!("xtask: cargo-fuzz is not installed; installing it");
        util::run(util::cargo(&root, None).args(["install", "cargo-fuzz", "--locked"]))?;
    }
    Ok(())
}

/// Runs one fuzz target for `seconds`, failing if libFuzzer reports a crash, leak, timeout
/// or out-of-memory (cargo-fuzz exits non-zero and leaves the input in
/// `fuzz/artifacts/<target>/`).
///
/// The corpus is `fuzz/corpus/<target>/` (grows as the fuzzer finds new coverage,
/// git-ignored); if `fuzz/seeds/<target>/` exists (checked-in seed inputs such as RFC test
/// vectors) it is read too. Inputs are given a 10 s timeout unless `extra` says otherwise,
/// so a hang fails a bounded run instead of outliving it. Debug assertions are on, so
/// arithmetic overflow is a crash.
pub fn run_target(target: &str, seconds: u64, extra: &[String]) -> Result<()> {
    let dir = fuzz_dir();
    let corpus = dir.join("corpus").join(target);
    std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let seeds = dir.join("seeds").join(target);

    let mut cmd = util::cargo(&dir, Some(NIGHTLY));
    cmd.args(["fuzz", "run", "--debug-assertions", "--fuzz-dir"])
        .arg(&dir)
        .arg(target)
        .arg(relative(&corpus, &dir));
    if seeds.is_dir() {
        cmd.arg(relative(&seeds, &dir));
    }
    cmd.arg("--").arg(format!("-max_total_time={seconds}"));
    if !extra.iter().any(|a| a.starts_with("-timeout=")) {
        cmd.arg("-timeout=10");
    }
    cmd.args(extra);

    let started = Instant::now();
    util::run(&mut cmd).with_context(|| {
        format!(
            "fuzz target `{target}` failed; crashing inputs (if any) are in {}",
            dir.join("artifacts").join(target).display()
        )
    })?;
    eprintln!("xtask: fuzz target `{target}` ran clean ({:.0?})", started.elapsed());
    Ok(())
}

fn relative(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
}
