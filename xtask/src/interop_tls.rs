//! `cargo xtask interop-tls`: mote-tls against aioquic's TLS 1.3 engine, in both roles.
//!
//! Three parts, all under `xtask/peers/tls-interop/`:
//! * the `tls-interop` driver (its own Cargo project, so the workspace never builds it): one
//!   mote-tls client or server session over stdin/stdout;
//! * `aioquic_peer.py`: runs aioquic's `tls.Context` in memory against the driver, case by
//!   case, and compares the secrets, ALPN and transport parameters both sides saw;
//! * this task: a Python venv with pinned aioquic and cryptography under
//!   `target/interop-tls/venv` (made once; remade when the pins change), a release build of
//!   the driver in `target/interop-tls/driver`, then every case and a table.
//!
//! Needs Python ≥ 3.11 (aioquic's floor) and PyPI the first time. Exits non-zero when a case
//! fails; a case aioquic cannot do is "unsupported", which is not a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::util;

/// The Python packages the harness is written against, pinned for repeatable runs.
const PINS: &[&str] = &["aioquic==1.7.2", "cryptography==50.0.2"];

/// Arguments of `cargo xtask interop-tls`.
#[derive(Args, Debug)]
pub struct InteropTlsArgs {
    /// Run only the cases whose `role/name` contains this (repeatable); see `--list`.
    #[arg(long = "case", value_name = "SUBSTRING")]
    cases: Vec<String>,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
    /// Run every case N times with fresh keys (hits rare encodings, e.g. short ECDSA
    /// integers).
    #[arg(long, default_value_t = 1, value_name = "N")]
    repeat: u32,
    /// The Python interpreter that creates the venv.
    #[arg(long, default_value = "python3", value_name = "PYTHON")]
    python: String,
    /// Keep the generated certificates and tickets in this directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
}

impl Default for InteropTlsArgs {
    /// Every case once, with `python3` (what `cargo xtask test` runs).
    fn default() -> Self {
        Self { cases: Vec::new(), list: false, repeat: 1, python: "python3".into(), keep: None }
    }
}

/// One row of the harness's `--json` output.
struct Row {
    role: String,
    case: String,
    status: String,
    detail: String,
    ms: u64,
}

/// Entry point of `cargo xtask interop-tls`.
pub fn run(args: &InteropTlsArgs) -> Result<()> {
    let root = util::repo_root();
    let peer = root.join("xtask/peers/tls-interop");
    let work = root.join("target/interop-tls");
    let python = venv(&work.join("venv"), &args.python)?;
    let script = peer.join("aioquic_peer.py");
    let mut harness = Command::new(&python);
    harness.arg(&script);
    for c in &args.cases {
        harness.args(["--case", c]);
    }
    if args.list {
        harness.arg("--list");
        return util::run(&mut harness);
    }
    let driver = build_driver(&peer, &work.join("driver"))?;
    harness.arg("--driver").arg(&driver).arg("--json");
    harness.args(["--repeat", &args.repeat.to_string()]);
    if let Some(keep) = &args.keep {
        harness.arg("--keep").arg(keep);
    }
    eprintln!("$ {}", util::display(&harness));
    let started = Instant::now();
    let out = harness
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{}`", util::display(&harness)))?;
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("the harness printed a line that is not JSON: {line}"))?;
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        rows.push(Row {
            role: text("role"),
            case: text("case"),
            status: text("status"),
            detail: text("detail"),
            ms: v["ms"].as_u64().unwrap_or(0),
        });
    }
    print_table(&rows);
    let count = |s: &str| rows.iter().filter(|r| r.status == s).count();
    let (passed, unsupported, failed) = (count("pass"), count("unsupported"), count("FAIL"));
    println!(
        "\n{passed} passed, {unsupported} unsupported by aioquic, {failed} failed ({} cases, {:.1} s)",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        bail!("{failed} interop case(s) failed");
    }
    if !out.status.success() {
        bail!("the harness failed ({})", out.status);
    }
    if rows.is_empty() {
        bail!("no case matched");
    }
    Ok(())
}

/// The venv's Python, creating the venv and installing [`PINS`] unless a previous run left
/// a marker naming exactly these pins.
fn venv(dir: &Path, python: &str) -> Result<PathBuf> {
    let bin = dir.join(if cfg!(windows) { "Scripts/python.exe" } else { "bin/python" });
    let marker = dir.join("mote-pins.txt");
    let wanted = PINS.join("\n");
    if bin.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(bin);
    }
    if !bin.exists() {
        util::run(Command::new(python).args(["-m", "venv"]).arg(dir))
            .context("creating the Python venv (aioquic needs Python >= 3.11)")?;
    }
    util::run(
        Command::new(&bin)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(PINS),
    )
    .context("installing aioquic into the venv")?;
    std::fs::write(&marker, wanted).with_context(|| format!("writing {}", marker.display()))?;
    Ok(bin)
}

/// Builds the driver (release, with overflow checks and debug assertions; see its
/// Cargo.toml) and returns the binary's path.
fn build_driver(peer: &Path, target_dir: &Path) -> Result<PathBuf> {
    let mut cmd = util::cargo(peer, None);
    cmd.args(["build", "--release", "--locked", "--target-dir"]).arg(target_dir);
    util::run(&mut cmd)?;
    let exe =
        target_dir.join("release").join(format!("tls-interop{}", std::env::consts::EXE_SUFFIX));
    if !exe.exists() {
        bail!("{} was not built", exe.display());
    }
    Ok(exe)
}

/// role | case | result | ms | detail, with failure details indented below.
fn print_table(rows: &[Row]) {
    let name_width = rows.iter().map(|r| r.role.len() + 1 + r.case.len()).max().unwrap_or(4).max(4);
    println!("{:<name_width$}  {:<11}  {:>5}  detail", "case", "result", "ms");
    println!("{}", "-".repeat(name_width + 2 + 11 + 2 + 5 + 2 + 40));
    for r in rows {
        let name = format!("{}/{}", r.role, r.case);
        let mut lines = r.detail.lines();
        let first = lines.next().unwrap_or_default();
        println!("{name:<name_width$}  {:<11}  {:>5}  {first}", r.status, r.ms);
        for more in lines {
            println!("{:indent$}{more}", "", indent = name_width + 2 + 11 + 2 + 5 + 2);
        }
    }
}
