//! Process helpers shared by the tasks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The repository root (the parent of the `xtask` crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the repository root")
        .to_path_buf()
}

/// Environment variables that `cargo run` (and rustup's proxy in front of it) set for the
/// xtask process and that would pin a child cargo to xtask's own toolchain or build. They
/// are removed so a child picks its toolchain the normal way: `+toolchain`, then
/// `rust-toolchain.toml` in its working directory.
const INHERITED_BUILD_ENV: &[&str] = &["RUSTUP_TOOLCHAIN", "CARGO", "RUSTC", "RUSTDOC"];

/// A `cargo` command (through rustup's proxy on `PATH`) running in `dir`, optionally with a
/// `+toolchain` override.
pub fn cargo(dir: &Path, toolchain: Option<&str>) -> Command {
    let mut cmd = Command::new("cargo");
    if let Some(toolchain) = toolchain {
        cmd.arg(format!("+{toolchain}"));
    }
    for var in INHERITED_BUILD_ENV {
        cmd.env_remove(var);
    }
    cmd.current_dir(dir);
    cmd
}

/// A shell-like rendering of `cmd` for logs.
pub fn display(cmd: &Command) -> String {
    let mut out = String::new();
    let quote = |s: &OsStr| {
        let s = s.to_string_lossy();
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_=+./,:@".contains(c))
        {
            s.into_owned()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    out.push_str(&quote(cmd.get_program()));
    for arg in cmd.get_args() {
        out.push(' ');
        out.push_str(&quote(arg));
    }
    out
}

/// Runs `cmd` with inherited stdio after echoing it (to stderr), failing on a non-zero exit.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = display(cmd);
    eprintln!("$ {shown}");
    let status = cmd.status().with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Runs `cmd` quietly and reports whether it exited successfully (false if it could not
/// start). Used for probes such as "is cargo-fuzz installed?".
pub fn probe(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
