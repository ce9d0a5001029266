//! `cargo xtask footprint`: flash size of the device stack, split by crate and component.
//!
//! Builds the firmware image in `firmware/` (release profile: `opt-level = "z"`, fat LTO,
//! one codegen unit, `panic = "abort"`) once per entry of [`configs`], then reads the ELF:
//!
//! * **flash** is the sum of the sizes of every allocated section that has contents in the
//!   image (`SHF_ALLOC` and not `NOBITS`): with cortex-m-rt's `link.x` that is
//!   `.vector_table + .text + .rodata + .data`, where `.data` counts once, as its
//!   initialisation image stored in flash and copied to RAM at reset.
//! * **static RAM** is `.data + .bss` (+ `.uninit`), i.e. everything but the stack.
//! * every sized symbol in a flash section is attributed to a crate from its demangled path
//!   (for `<Type as Trait>::f`, the crate of `Type`), crates are grouped into components,
//!   and bytes no symbol covers (anonymous constants, alignment padding, the initial stack
//!   pointer word) are reported as `unattributed`. The per-crate bytes plus `unattributed`
//!   add up to the flash total exactly (overlapping symbols are counted once).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionKind, SymbolKind};
use serde_json::json;

use crate::util;

/// One firmware build to measure.
#[derive(Clone, Debug)]
pub struct Config {
    /// Name shown in reports and in the JSON `config` field (unique per target).
    pub name: String,
    /// Cargo features of the client firmware (they forward to the core crates).
    pub features: Vec<&'static str>,
    /// The target triple to build for.
    pub target: &'static str,
    /// What the configuration contains.
    pub description: String,
    /// `matrix` (Quant's cumulative rows) or `auth` (one row per server authentication).
    pub group: &'static str,
}

/// The Cortex-M4 target (QEMU mps2-an386, the budget's target).
pub const CORTEX_M4: &str = "thumbv7em-none-eabihf";
/// The ESP32-C3-class RISC-V target.
pub const RISCV32: &str = "riscv32imc-unknown-none-elf";
/// Both device targets, in report order.
pub const TARGETS: &[&str] = &[CORTEX_M4, RISCV32];

/// The goal for the minimal authenticating client on Cortex-M4 (issue 8: ≤ 45 KB; Quant's
/// unauthenticated minimal client is 58 KB).
pub const GOAL_BYTES: u64 = 45 * 1024;
/// The recorded budget CI enforces until the goal is met: the measured size of the minimal
/// authenticating client (RPK Ed25519, Cortex-M4) plus a small margin. Recorded at
/// 127,696 B (budget 128 KiB); raised once, to 136,168 B + 3,192 B, when issue 5's
/// transport work merged (connection-ID rotation, ECN validation, Retry and NEW_TOKEN
/// handling, compatible version negotiation, key-update read-key retention, AEAD limits:
/// +7.7 KB of QUIC, always built on the device then). Lowered to 113,876 B + 1,024 B by
/// issue 8's cuts (QUIC: client-only branches, device-droppable pacing/ECN/CID rotation,
/// capacity-erased recovery records, one frame writer, in-place construction; crypto:
/// salty on Cortex-M4; TLS/HTTP/3: client auth and the server role behind features), then
/// to 95,376 B + 1,024 B by the fourth session's rounds (compact mem routines, a 32-IRQ
/// vector table, Ed25519 without salty's scalar code, receive/send/recovery/TLS/HTTP/3
/// folds, LLVM inline threshold 10), then to 88,844 B + 1,024 B by the fifth (mote's GCM,
/// SHA-256/512, X25519 and Edwards operations over the crates' primitives for stack, the
/// `stats` feature made real, 64-bit saturating helpers out of line, the device's QPACK
/// static table and TLS key schedule written in place, 32-bit received packet numbers,
/// a sticky-error reader for the TLS parsers), then to 77,304 B + 1,024 B by the sixth
/// (a one-request HTTP/3 device client, a one-offer ClientHello template, one unprotect path
/// and one frame loop on receive, one frame writer and the client's transport parameters
/// written directly on send, compact stream bookkeeping, ACK ranges walked from the frame, identical-code
/// folding; and the client measured without the QEMU harness's `selfmeasure` code, whose
/// image is the `qemu` row), then to 69,544 B + 1,024 B by the seventh (mote-quic's device
/// connection type and the firmware on it, a table-free bitsliced AES-128 and an
/// integer-multiply GHASH on devices, a shorter Ed25519 verification, TLS secrets written in
/// place, a tombstone-free sent store, a smaller HTTP/3 response check), to 66,832 B by the eighth, and to
/// 65,588 B by the ninth (the device connection's handler errors and varint results in
/// registers, smaller HTTP/3 head checks and TLS/QPACK readers; +0.6 KB for the key-update
/// review fixes and key wiping), to 64,504 B by the tenth (32-bit stream books and sent packet
/// numbers) and to 62,252 B by the eleventh (32-bit time, build-time ClientHello and HTTP/3
/// encodings, 32-byte hashes, AES keys expanded in place) and to 58,456 B by the twelfth (the
/// device connection built on zeroed memory, one header/data/ACK writer each, the server's
/// parameters and connection IDs narrowed, SHA-512 for size and no bounds-check panic paths).
/// Lower it as the image shrinks; never raise it to absorb growth without a reason in the
/// commit.
pub const BUDGET_BYTES: u64 = 58_456 + 1_024;
/// The configuration the budget applies to.
pub const BUDGET_CONFIG: &str = "rpk-ed25519";

/// Quant's build matrix, applied cumulatively left to right: each row drops what its
/// `drop` lists from the row before. Row 1 is the full default build. The rows up to
/// `no-pacing-ecn` run the client on mote-quic's general `Connection` (firmware feature
/// `general-connection`), whose code the dropped options gate; `device-conn` switches it to
/// the device connection type the shipped client (and every authentication row) uses.
const MATRIX: &[(&str, &str, &[&str])] = &[
    ("full", "full default: server code, QUIC v1+v2, DATAGRAM, every cipher, every option", &[]),
    ("client-only", "- server (mote-quic/mote-tls `server`)", &["server"]),
    (
        "min-ciphers",
        "- AES-256-GCM/SHA-384, ChaCha20-Poly1305, P-256 ECDHE, QUIC v2, DATAGRAM",
        &["aes256", "chacha20", "p256", "v2", "datagram"],
    ),
    (
        "no-migration",
        "- connection migration and connection-ID rotation (`migration`, `cid-rotation`)",
        &["migration", "cid-rotation"],
    ),
    ("no-err-reasons", "- CONNECTION_CLOSE reason phrases (`err-reasons`)", &["err-reasons"]),
    ("no-sreset", "- stateless reset (`stateless-reset`)", &["stateless-reset"]),
    ("no-reord-0rtt", "- buffering reordered 0-RTT (`reorder-0rtt`)", &["reorder-0rtt"]),
    ("no-reorder", "- all out-of-order stream reassembly (`reorder`)", &["reorder"]),
    ("no-stats", "- connection statistics (`stats`)", &["stats"]),
    (
        "no-pacing-ecn",
        "- pacing, ECN, BLOCKED frames, MAX_STREAMS updates (`pacing`, `ecn`, `blocked-frames`, \
         `max-streams-updates`)",
        &["pacing", "ecn", "blocked-frames", "max-streams-updates"],
    ),
    (
        "device-conn",
        "- the general connection: mote-quic's device connection type (client only, one path, \
         fixed HTTP/3 stream set): the minimal client",
        &["general-connection"],
    ),
];

/// Matrix features that gate no code in the client image. `reorder-0rtt` is Quant's
/// server-side buffer for 0-RTT packets that arrive before the Initial that creates their
/// connection: mote has no such buffer in any build (the endpoint drops a long-header packet
/// for a connection it does not know, and the client retransmits its 0-RTT data), and a
/// client never receives 0-RTT, so there is nothing to drop. A row that only drops these is
/// the same image as the row before; it is reported with the previous row's figures (and
/// says so) instead of being linked again. (`stats` gates the connection's traffic
/// counters: without it the firmware's report leaves them out and `cargo xtask qemu`'s
/// airtime and energy figures come from the bridge's own counts, as they always did.)
pub const EMPTY_FEATURES: &[&str] = &["reorder-0rtt"];

/// Every feature of the full default build (with RPK Ed25519 server authentication).
const FULL: &[&str] = &[
    "rpk-ed25519",
    "server",
    "v2",
    "datagram",
    "aes256",
    "chacha20",
    "p256",
    "migration",
    "err-reasons",
    "stateless-reset",
    "reorder-0rtt",
    "reorder",
    "stats",
    "cid-rotation",
    "pacing",
    "ecn",
    "blocked-frames",
    "max-streams-updates",
    "general-connection",
];

/// One row per server authentication, each on the minimal client (features added to it),
/// then the image `cargo xtask qemu` runs.
const AUTH: &[(&str, &[&str], &str)] = &[
    ("rpk-ed25519", &["rpk-ed25519"], "minimal client, raw public key (Ed25519) pinned in flash"),
    ("rpk-p256", &["rpk-p256"], "minimal client, raw public key (ECDSA P-256) pinned in flash"),
    ("psk", &["psk"], "minimal client, external PSK (psk_dhe_ke)"),
    (
        "x509",
        // The X.509 verifier checks signatures of both kinds.
        &["x509", "rpk-ed25519", "rpk-p256"],
        "minimal client, X.509 chain to a pinned trust anchor (Ed25519/P-256)",
    ),
    (
        INSTRUMENTED_CONFIG,
        &["rpk-ed25519", SELFMEASURE],
        "rpk-ed25519 + the QEMU harness's self-measurement (`selfmeasure`: stack painting, \
         phase counters, report frames), the image `cargo xtask qemu` runs",
    ),
];

/// The firmware feature of the QEMU harness's instrumentation (stack painting, per-phase
/// instruction and time counters, report frames). No row but [`INSTRUMENTED_CONFIG`] has
/// it: the other rows, the budget's included, measure the client a device ships.
pub const SELFMEASURE: &str = "selfmeasure";
/// The row of the image `cargo xtask qemu` runs: the budget's client plus [`SELFMEASURE`].
pub const INSTRUMENTED_CONFIG: &str = "qemu";

/// RISC-V only: the minimal client with X25519/Ed25519 on salty's portable field (mote's
/// curve code) instead of fiat-crypto's field. Cortex-M4 always builds with salty.
pub const SALTY_PORTABLE_CONFIG: &str = "rpk-ed25519-salty";
/// RISC-V only: the minimal client with X25519/Ed25519 on the dalek crates instead of mote's
/// curve code on fiat-crypto's field, the alternative measured against the riscv32 default
/// (firmware/client/Cargo.toml).
pub const DALEK_CONFIG: &str = "rpk-ed25519-dalek";
/// The firmware feature every riscv32 row but the two above is built with (the riscv32
/// choice, firmware/client/Cargo.toml): X25519/Ed25519 on mote's curve code over
/// fiat-crypto's 32-bit field.
pub const RISCV32_CURVE: &str = "fiat";

/// The configurations measured, in report order: the matrix, then the authentication rows,
/// for each target.
pub fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for target in TARGETS {
        let mut features: Vec<&'static str> = FULL.to_vec();
        if *target == RISCV32 {
            features.push(RISCV32_CURVE);
        }
        for (name, description, drop) in MATRIX {
            features.retain(|f| !drop.contains(f));
            out.push(Config {
                name: (*name).to_owned(),
                features: features.clone(),
                target,
                description: (*description).to_owned(),
                group: "matrix",
            });
        }
        let minimal: Vec<&'static str> =
            features.iter().copied().filter(|f| *f != "rpk-ed25519").collect();
        for (name, auth, description) in AUTH {
            let mut f = minimal.clone();
            f.extend(auth.iter().copied());
            out.push(Config {
                name: (*name).to_owned(),
                features: f,
                target,
                description: (*description).to_owned(),
                group: "auth",
            });
        }
        if *target == RISCV32 {
            out.push(Config {
                name: DALEK_CONFIG.to_owned(),
                features: vec!["rpk-ed25519", "dalek"],
                target,
                description: "minimal client, RPK Ed25519, X25519/Ed25519 on the dalek crates \
                              instead of fiat-crypto's field"
                    .to_owned(),
                group: "auth",
            });
            out.push(Config {
                name: SALTY_PORTABLE_CONFIG.to_owned(),
                features: vec!["rpk-ed25519", "salty-portable"],
                target,
                description: "minimal client, RPK Ed25519, X25519/Ed25519 on salty's portable \
                              field instead of fiat-crypto's"
                    .to_owned(),
                group: "auth",
            });
        }
    }
    out
}

/// The firmware package and binary (crate `mote_client`).
const FIRMWARE_BIN: &str = "mote-client";
/// The firmware binary's crate name as it appears in symbol paths.
const FIRMWARE_CRATE: &str = "mote_client";

/// Components, in report order, and the crates that make them up. The firmware crate is
/// `app`; crates not listed here fall into `other`.
const COMPONENTS: &[(&str, &[&str])] = &[
    ("app", &[FIRMWARE_CRATE]),
    ("quic", &["mote_quic"]),
    // X.509 chain verification (feature x509) counts as TLS.
    ("tls", &["mote_tls", "webpki", "rustls_pki_types", "untrusted"]),
    ("h3", &["mote_h3"]),
    (
        "crypto",
        &[
            "mote_crypto",
            // RustCrypto and dalek primitives and their support crates.
            "aead",
            "aes",
            "aes_gcm",
            "base16ct",
            "block_buffer",
            "chacha20",
            "chacha20poly1305",
            "cipher",
            "cpufeatures",
            "crypto_bigint",
            "crypto_common",
            "ctr",
            "curve25519_dalek",
            "der",
            "digest",
            "ecdsa",
            "ed25519",
            "ed25519_dalek",
            "elliptic_curve",
            "ff",
            "fiat_crypto",
            "generic_array",
            "ghash",
            "group",
            "hkdf",
            "hmac",
            "inout",
            "opaque_debug",
            "p256",
            "pkcs8",
            "poly1305",
            "polyval",
            "primeorder",
            "rand_core",
            "rfc6979",
            "salty",
            "sec1",
            "sha2",
            "signature",
            "spki",
            "subtle",
            "typenum",
            "universal_hash",
            "x25519_dalek",
            "zeroize",
        ],
    ),
    ("core", &["core", "compiler_builtins", "alloc"]),
    (
        "runtime",
        &[
            "cortex_m_rt",
            "cortex_m",
            "panic_halt",
            "critical_section",
            "riscv_rt",
            "riscv",
            "embedded_alloc",
            "linked_list_allocator",
        ],
    ),
    // LLVM's machine outliner (on at opt-level "z") factors instruction sequences repeated
    // anywhere in the image into `OUTLINED_FUNCTION_N`s, shared by every crate.
    ("outlined", &[OUTLINED]),
];
/// The pseudo-crate of machine-outlined code.
const OUTLINED: &str = "(outlined)";
/// Component of crates not in [`COMPONENTS`].
const OTHER: &str = "other";
/// Bytes of flash sections that no symbol covers.
const UNATTRIBUTED: &str = "unattributed";

/// Arguments of `cargo xtask footprint`.
#[derive(Args, Debug)]
pub struct FootprintArgs {
    /// Print one JSON object per build, one per line, instead of tables.
    #[arg(long)]
    json: bool,
    /// Measure only configurations of this name (repeatable). Default: all of them.
    #[arg(long = "config", value_name = "NAME")]
    configs: Vec<String>,
    /// Measure only this target (repeatable). Default: both device targets.
    #[arg(long = "target", value_name = "TRIPLE")]
    targets: Vec<String>,
    /// In the tables, also list the N largest symbols of each image.
    #[arg(long, default_value_t = 0, value_name = "N")]
    top: usize,
    /// List the configurations and exit.
    #[arg(long)]
    list: bool,
    /// Fail if the minimal authenticating client on Cortex-M4 exceeds the recorded budget
    /// (what `cargo xtask test` runs).
    #[arg(long)]
    check_budget: bool,
}

impl FootprintArgs {
    /// What `cargo xtask test` runs: the Cortex-M4 matrix and authentication rows with the
    /// budget check, plus the minimal client for RISC-V (the whole RISC-V matrix doubles the
    /// step's time; `cargo xtask footprint` runs it).
    pub fn ci() -> Vec<Self> {
        let base = Self::default();
        vec![
            Self { targets: vec![CORTEX_M4.to_owned()], ..base },
            Self {
                targets: vec![RISCV32.to_owned()],
                configs: vec![BUDGET_CONFIG.to_owned()],
                ..Self::default()
            },
        ]
    }
}

impl Default for FootprintArgs {
    /// Every configuration, as tables, checking the budget.
    fn default() -> Self {
        Self {
            json: false,
            configs: Vec::new(),
            targets: Vec::new(),
            top: 0,
            list: false,
            check_budget: true,
        }
    }
}

/// Entry point of `cargo xtask footprint`.
pub fn run(args: &FootprintArgs) -> Result<()> {
    let all = configs();
    if args.list {
        for c in &all {
            println!(
                "{:<15} {:<30} {:<7} features={}  ({})",
                c.name,
                c.target,
                c.group,
                c.features.join(","),
                c.description
            );
        }
        return Ok(());
    }
    for name in &args.configs {
        if !all.iter().any(|c| &c.name == name) {
            let names: Vec<_> = all.iter().map(|c| c.name.as_str()).collect();
            bail!("no footprint configuration `{name}`; configurations: {}", names.join(", "));
        }
    }
    let selected: Vec<&Config> = all
        .iter()
        .filter(|c| args.configs.is_empty() || args.configs.contains(&c.name))
        .filter(|c| args.targets.is_empty() || args.targets.iter().any(|t| t == c.target))
        .collect();

    let mut reports: Vec<Report> = Vec::new();
    for config in selected {
        // A row whose features differ from an already measured one only by features that
        // gate nothing yet is that image: reuse its figures.
        let same = reports.iter().find(|r| {
            r.config.target == config.target && {
                let strip = |f: &[&'static str]| -> Vec<&'static str> {
                    let mut v: Vec<_> =
                        f.iter().copied().filter(|x| !EMPTY_FEATURES.contains(x)).collect();
                    v.sort_unstable();
                    v
                };
                strip(&r.config.features) == strip(&config.features)
            }
        });
        let report = match same {
            Some(r) => {
                Report { config: config.clone(), same_as: Some(r.config.name.clone()), ..r.clone() }
            }
            None => {
                let elf = build(config)?;
                analyze(config, &elf)?
            }
        };
        if args.json {
            println!("{}", report.to_json());
        } else {
            report.print(args.top);
        }
        reports.push(report);
    }
    if !args.json {
        for target in TARGETS {
            let rows: Vec<&Report> =
                reports.iter().filter(|r| r.config.target == *target).collect();
            print_matrix(&rows);
        }
    }
    let svg = util::repo_root().join("target/footprint/footprint.svg");
    if reports.iter().any(|r| r.config.target == CORTEX_M4) {
        std::fs::create_dir_all(svg.parent().expect("has a parent"))?;
        std::fs::write(&svg, chart(&reports))?;
        eprintln!("chart: {}", svg.display());
    }
    let minimal =
        reports.iter().find(|r| r.config.name == BUDGET_CONFIG && r.config.target == CORTEX_M4);
    if let Some(r) = minimal {
        let gap = r.flash_bytes as i64 - GOAL_BYTES as i64;
        eprintln!(
            "minimal authenticating client ({BUDGET_CONFIG}, {CORTEX_M4}): {} B; goal {} B \
             ({}); CI budget {} B",
            r.flash_bytes,
            GOAL_BYTES,
            if gap > 0 { format!("{gap} B over the goal") } else { "goal met".to_owned() },
            BUDGET_BYTES
        );
        // The same client as `cargo xtask qemu` runs it, with its self-measurement.
        let instrumented = reports
            .iter()
            .find(|q| q.config.name == INSTRUMENTED_CONFIG && q.config.target == CORTEX_M4);
        match instrumented {
            Some(q) => eprintln!(
                "  measured without the QEMU harness's self-measurement (feature `{SELFMEASURE}`); \
                 with it (row `{INSTRUMENTED_CONFIG}`, the image `cargo xtask qemu` runs): {} B \
                 (+{} B)",
                q.flash_bytes,
                q.flash_bytes.saturating_sub(r.flash_bytes)
            ),
            None => eprintln!(
                "  measured without the QEMU harness's self-measurement (feature `{SELFMEASURE}`; \
                 `--config {INSTRUMENTED_CONFIG}` measures the image `cargo xtask qemu` runs)"
            ),
        }
        if args.check_budget && r.flash_bytes > BUDGET_BYTES {
            bail!(
                "the minimal authenticating client grew past its budget: {} B > {} B",
                r.flash_bytes,
                BUDGET_BYTES
            );
        }
    }
    Ok(())
}

/// Builds the client firmware for `config` and returns the path of a copy of its ELF image
/// (`firmware/target/footprint/<target>/<config>.elf`), which later builds do not
/// overwrite.
fn build(config: &Config) -> Result<PathBuf> {
    let dir = util::repo_root().join("firmware");
    let mut cmd = util::cargo(&dir, None);
    cmd.args(["build", "--release", "-p", FIRMWARE_BIN, "--bin", FIRMWARE_BIN])
        .args(["--target", config.target])
        .args(["--no-default-features", "--features", &config.features.join(",")])
        .arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let shown = util::display(&cmd);
    eprintln!("$ (cd firmware && {shown})");
    let out = cmd.output().with_context(|| format!("could not start `{shown}`"))?;
    if !out.status.success() {
        bail!("firmware build for configuration `{}` failed ({})", config.name, out.status);
    }
    let mut executable = None;
    for line in out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let msg: serde_json::Value =
            serde_json::from_slice(line).context("cargo printed invalid JSON")?;
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == FIRMWARE_BIN {
            if let Some(path) = msg["executable"].as_str() {
                executable = Some(PathBuf::from(path));
            }
        }
    }
    let executable =
        executable.ok_or_else(|| anyhow!("cargo reported no `{FIRMWARE_BIN}` executable"))?;
    let keep = dir
        .join("target")
        .join("footprint")
        .join(config.target)
        .join(format!("{}.elf", config.name));
    std::fs::create_dir_all(keep.parent().expect("has a parent"))?;
    std::fs::copy(&executable, &keep)
        .with_context(|| format!("copying {} to {}", executable.display(), keep.display()))?;
    Ok(keep)
}

/// A measured firmware image.
#[derive(Clone, Debug)]
struct Report {
    config: Config,
    /// The row whose image this is (it only drops features that gate no code yet).
    same_as: Option<String>,
    /// Bytes of the application's functions that are code of other crates inlined into
    /// them (found through DWARF inline records), per crate; already moved to those crates
    /// in `by_crate`. Empty if `addr2line` is not installed.
    inlined: BTreeMap<String, u64>,
    elf: PathBuf,
    /// Flash sections (name, bytes) in address order.
    flash_sections: Vec<(String, u64)>,
    /// RAM-only sections (name, bytes).
    ram_sections: Vec<(String, u64)>,
    flash_bytes: u64,
    by_crate: BTreeMap<String, u64>,
    /// Every component of [`COMPONENTS`], then `other` and `unattributed`, in that order.
    by_component: Vec<(&'static str, u64)>,
    /// Attributed bytes of each symbol (demangled, crate), largest first.
    symbols: Vec<(String, String, u64)>,
}

/// Reads the ELF at `path` and attributes its flash bytes.
fn analyze(config: &Config, path: &Path) -> Result<Report> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file =
        object::File::parse(&*data).with_context(|| format!("parsing {}", path.display()))?;
    let thumb = file.architecture() == object::Architecture::Arm;

    let mut flash_sections = Vec::new();
    let mut ram_sections = Vec::new();
    let mut by_crate: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_symbol: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut unattributed = 0u64;

    let mut sections: Vec<_> = file.sections().filter(|s| is_alloc(s) && s.size() > 0).collect();
    sections.sort_by_key(|s| s.address());
    for section in sections {
        let name = section.name().unwrap_or("?").to_owned();
        if section.kind() == SectionKind::UninitializedData {
            ram_sections.push((name, section.size()));
            continue;
        }
        if section.kind() == SectionKind::Data {
            ram_sections.push((name.clone(), section.size()));
        }
        flash_sections.push((name, section.size()));

        let (start, end) = (section.address(), section.address() + section.size());
        // Sized symbols of this section as (start, end, name), larger first at equal
        // starts, so an alias or a symbol nested in another is counted once.
        let mut symbols: Vec<(u64, u64, &str)> = file
            .symbols()
            .filter(|s| s.section_index() == Some(section.index()) && s.size() > 0)
            // Assembler-local anonymous constants (`.Lanon.…`, sized on RISC-V) name no
            // crate: their bytes stay unattributed, as on Arm where they carry no symbol.
            .filter(|s| !s.name().unwrap_or("").starts_with(".L"))
            .filter(|s| {
                matches!(s.kind(), SymbolKind::Text | SymbolKind::Data | SymbolKind::Unknown)
            })
            .map(|s| {
                // Thumb function addresses carry the interworking bit.
                let addr = if thumb && s.kind() == SymbolKind::Text {
                    s.address() & !1
                } else {
                    s.address()
                };
                (addr, addr + s.size(), s.name().unwrap_or(""))
            })
            .collect();
        symbols.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));

        let mut cursor = start;
        for (sym_start, sym_end, raw) in symbols {
            let (sym_start, sym_end) = (sym_start.max(start), sym_end.min(end));
            if sym_start > cursor {
                unattributed += sym_start - cursor;
            }
            let from = sym_start.max(cursor);
            if sym_end <= from {
                continue;
            }
            let bytes = sym_end - from;
            cursor = sym_end;
            let (demangled, krate) = attribute(raw);
            *by_crate.entry(krate.clone()).or_default() += bytes;
            by_symbol.entry(demangled).or_insert((krate, 0)).1 += bytes;
        }
        unattributed += end.saturating_sub(cursor);
    }

    let inlined = reattribute_inlined(path, thumb, &file, &mut by_crate, &mut by_symbol);
    let flash_bytes: u64 = flash_sections.iter().map(|(_, n)| n).sum();
    let mut by_component: Vec<(&'static str, u64)> = COMPONENTS
        .iter()
        .map(|(name, _)| (*name, 0))
        .chain([(OTHER, 0), (UNATTRIBUTED, unattributed)])
        .collect();
    for (krate, bytes) in &by_crate {
        let component = component_of(krate);
        by_component.iter_mut().find(|(c, _)| *c == component).expect("listed").1 += bytes;
    }
    let counted: u64 = by_component.iter().map(|(_, n)| n).sum();
    if counted != flash_bytes {
        bail!("attribution error: components add up to {counted} bytes, sections to {flash_bytes}");
    }
    let mut symbols: Vec<(String, String, u64)> =
        by_symbol.into_iter().map(|(name, (krate, bytes))| (name, krate, bytes)).collect();
    symbols.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));

    Ok(Report {
        config: config.clone(),
        same_as: None,
        inlined,
        elf: path.to_path_buf(),
        flash_sections,
        ram_sections,
        flash_bytes,
        by_crate,
        by_component,
        symbols,
    })
}

/// Application functions at least this large are examined for inlined code.
const INLINE_SCAN_MIN: u64 = 256;

/// With LTO, whole functions of mote-quic, mote-h3, … are inlined into the firmware's
/// functions that call them once, and symbol attribution would count them as application
/// code. This walks every 2-byte step of the application's large functions through
/// `addr2line -i` (binutils or LLVM) and moves each step to the crate of the function
/// inlined directly into the application function (the outermost inlined frame). Returns
/// the bytes moved per crate; nothing is moved if no `addr2line` is found.
fn reattribute_inlined(
    path: &Path,
    thumb: bool,
    file: &object::File<'_>,
    by_crate: &mut BTreeMap<String, u64>,
    by_symbol: &mut BTreeMap<String, (String, u64)>,
) -> BTreeMap<String, u64> {
    let mut moved: BTreeMap<String, u64> = BTreeMap::new();
    let tool = ["addr2line", "llvm-addr2line"]
        .into_iter()
        .find(|t| util::probe(std::process::Command::new(t).arg("--version")));
    let Some(tool) = tool else { return moved };
    // The application's large functions: (start, size, demangled name).
    let funcs: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() >= INLINE_SCAN_MIN)
        .filter_map(|s| {
            let (name, krate) = attribute(s.name().ok()?);
            let addr = if thumb { s.address() & !1 } else { s.address() };
            (krate == FIRMWARE_CRATE).then_some((addr, s.size(), name))
        })
        .collect();
    if funcs.is_empty() {
        return moved;
    }
    let mut input = String::new();
    for (start, size, _) in &funcs {
        for a in (*start..start + size).step_by(2) {
            input.push_str(&format!("{a:#x}\n"));
        }
    }
    let out = std::process::Command::new(tool)
        .args(["-a", "-f", "-i", "-e"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("piped");
            std::thread::spawn(move || stdin.write_all(input.as_bytes()));
            child.wait_with_output()
        });
    let Ok(out) = out else { return moved };
    let text = String::from_utf8_lossy(&out.stdout);
    // Blocks: "0xADDR", then (function, file:line) pairs, innermost frame first.
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(addr) = line.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        let mut frames = Vec::new();
        while let Some(next) = lines.peek() {
            if next.starts_with("0x") {
                break;
            }
            let f = lines.next().unwrap_or_default();
            let _location = lines.next();
            frames.push(f);
        }
        let Some(owner) = funcs.iter().find(|(s, n, _)| addr >= *s && addr < s + n) else {
            continue;
        };
        if frames.len() < 2 {
            continue;
        }
        let (inlined_name, krate) = attribute(frames[frames.len() - 2]);
        if krate == FIRMWARE_CRATE || krate == "?" {
            continue;
        }
        let step = 2u64.min(owner.0 + owner.1 - addr);
        let Some(app) = by_crate.get_mut(FIRMWARE_CRATE) else { continue };
        let Some(entry) = by_symbol.get_mut(&owner.2) else { continue };
        if *app < step || entry.1 < step {
            continue;
        }
        *app -= step;
        entry.1 -= step;
        *by_crate.entry(krate.clone()).or_default() += step;
        *moved.entry(krate.clone()).or_default() += step;
        let key = format!("{} [inlined into {}]", strip_hash(&inlined_name), strip_hash(&owner.2));
        by_symbol.entry(key).or_insert((krate, 0)).1 += step;
    }
    by_symbol.retain(|_, (_, b)| *b > 0);
    moved
}

/// A demangled name without its `::h0123…` hash suffix.
fn strip_hash(name: &str) -> &str {
    match name.rfind("::h") {
        Some(i) if name[i + 3..].chars().all(|c| c.is_ascii_hexdigit()) => &name[..i],
        _ => name,
    }
}

fn is_alloc(section: &object::Section<'_, '_>) -> bool {
    match section.flags() {
        SectionFlags::Elf { sh_flags, .. } => sh_flags.0 & object::elf::SHF_ALLOC.0 != 0,
        _ => false,
    }
}

/// The demangled name of a symbol and the crate it is attributed to.
fn attribute(raw: &str) -> (String, String) {
    match rustc_demangle::try_demangle(raw) {
        Ok(demangled) => {
            let name = format!("{demangled:#}");
            let krate = rust_symbol_crate(&name).unwrap_or("?").to_owned();
            (name, krate)
        }
        Err(_) => (raw.to_owned(), unmangled_crate(raw).to_owned()),
    }
}

/// The crate of a demangled Rust symbol path.
fn rust_symbol_crate(path: &str) -> Option<&str> {
    // rustc's own entry points (`__rustc::rust_begin_unwind` is the `#[panic_handler]`, the
    // rest are allocator shims, absent without `alloc`).
    if let Some(item) = path.strip_prefix("__rustc::") {
        return Some(if item.starts_with("rust_begin_unwind") { "panic_halt" } else { "alloc" });
    }
    path_crate(path)
}

/// The crate a path names: its first segment, or for a qualified path
/// `<Type as Trait>::item` the crate of `Type` (of `Trait` if `Type` is a built-in type).
/// Inherent items of built-in types (`<[T]>::len`) belong to `core`.
fn path_crate(path: &str) -> Option<&str> {
    let path = path.trim_start();
    if let Some(inner) = path.strip_prefix('<') {
        let (ty, tr) = split_qualified(inner)?;
        return type_crate(ty).or_else(|| tr.and_then(path_crate)).or(Some("core"));
    }
    let end = path.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(path.len());
    let first = &path[..end];
    (!first.is_empty() && path[end..].starts_with("::")).then_some(first)
}

/// The crate that defines a type written in a symbol (`None` for built-in types: slices,
/// arrays, tuples, primitives, function pointers).
fn type_crate(ty: &str) -> Option<&str> {
    let mut ty = ty.trim();
    loop {
        let before = ty;
        for prefix in ["&", "mut ", "*const ", "*mut ", "dyn ", "impl ", "const "] {
            ty = ty.strip_prefix(prefix).unwrap_or(ty).trim_start();
        }
        if let Some(rest) = ty.strip_prefix('\'') {
            // A lifetime: `&'a T`.
            ty = rest.split_once(' ').map_or("", |(_, t)| t);
        }
        if ty == before {
            break;
        }
    }
    if ty.starts_with(['[', '(']) {
        return None;
    }
    path_crate(ty)
}

/// Splits the inside of `<Type as Trait>` / `<Type>` (the text after `<`) into the type and
/// the optional trait, honouring nested brackets.
fn split_qualified(inner: &str) -> Option<(&str, Option<&str>)> {
    let mut depth = 0usize;
    let mut type_end = None;
    let mut prev = ' ';
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' if prev == '-' => {} // `fn() -> T`
            ')' | ']' => depth = depth.saturating_sub(1),
            '>' if depth == 0 => {
                return Some(match type_end {
                    Some(t) => (&inner[..t], Some(&inner[t + 4..i])),
                    None => (&inner[..i], None),
                });
            }
            '>' => depth -= 1,
            ' ' if depth == 0 && type_end.is_none() && inner[i..].starts_with(" as ") => {
                type_end = Some(i)
            }
            _ => {}
        }
        prev = c;
    }
    None
}

/// The crate of a symbol that is not Rust-mangled (`#[no_mangle]` / `#[export_name]`
/// items and compiler-rt style intrinsics).
fn unmangled_crate(name: &str) -> &'static str {
    const RUNTIME: &[&str] = &[
        "Reset",
        "__RESET_VECTOR",
        "__EXCEPTIONS",
        "__INTERRUPTS",
        "DefaultHandler",
        "DefaultHandler_",
        "DefaultPreInit",
        "__pre_init",
        "HardFault",
        "HardFault_",
        "HardFaultTrampoline",
        "_HardFault",
    ];
    const RISCV_RUNTIME: &[&str] = &[
        "_start",
        "_start_rust",
        "_abs_start",
        "_start_trap",
        "_start_trap_rust",
        "_setup_interrupts",
        "_mp_hook",
        "default_mp_hook",
        "_pre_init_trap",
        "_dispatch_core_interrupt",
        "_dispatch_exception",
        "DefaultHandler",
        "ExceptionHandler",
        "__INTERRUPTS",
        "__EXCEPTIONS",
        // riscv-rt's weak defaults (named once identical code folding leaves them as the
        // only symbol of their bytes).
        "default_setup_interrupts",
        "default_pre_init",
        "DefaultExceptionHandler",
        "DefaultInterruptHandler",
    ];
    const LIBC: &[&str] = &["memcpy", "memmove", "memset", "memcmp", "bcmp", "strlen"];
    if name == "main" {
        // cortex-m-rt's `#[entry]` exports the firmware's entry point as `main`.
        FIRMWARE_CRATE
    } else if RUNTIME.contains(&name) || RISCV_RUNTIME.contains(&name) {
        "cortex_m_rt"
    } else if name.starts_with("fe25519_") {
        // salty's Cortex-M4 field arithmetic (assembly, unmangled).
        "salty"
    } else if name.starts_with("OUTLINED_FUNCTION_") {
        OUTLINED
    } else if name == "rust_begin_unwind" {
        "panic_halt"
    } else if LIBC.contains(&name) || name.starts_with("__aeabi_") || name.starts_with("__") {
        "compiler_builtins"
    } else {
        "?"
    }
}

/// The component a crate belongs to.
fn component_of(krate: &str) -> &'static str {
    COMPONENTS
        .iter()
        .find(|(_, crates)| crates.contains(&krate))
        .map_or(OTHER, |(component, _)| component)
}

/// `part` as a percentage of `whole`, for tables.
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Report {
    fn to_json(&self) -> serde_json::Value {
        let by_crate: serde_json::Map<String, serde_json::Value> =
            self.by_crate.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let by_component: serde_json::Map<String, serde_json::Value> =
            self.by_component.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
        let sections: serde_json::Map<String, serde_json::Value> =
            self.flash_sections.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let ram: u64 = self.ram_sections.iter().map(|(_, n)| n).sum();
        let inlined: serde_json::Map<String, serde_json::Value> =
            self.inlined.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        json!({
            "inlined_into_app": inlined,
            "config": self.config.name,
            "group": self.config.group,
            "same_image_as": self.same_as,
            "description": self.config.description,
            "target": self.config.target,
            "features": self.config.features,
            "flash_bytes": self.flash_bytes,
            "by_crate": by_crate,
            "by_component": by_component,
            "flash_sections": sections,
            "static_ram_bytes": ram,
        })
    }

    fn print(&self, top: usize) {
        let c = &self.config;
        println!();
        println!("== footprint: {} ({}) ==", c.name, c.description);
        if let Some(same) = &self.same_as {
            println!(
                "same image as `{same}` (identical features once those that gate no code in a client image are ignored: {})",
                EMPTY_FEATURES.join(", ")
            );
            return;
        }
        println!(
            "firmware features: {}; target {}; profile release (opt-level=z, lto=fat, codegen-units=1, panic=abort)",
            c.features.join(","),
            c.target
        );
        println!("image: {}", self.elf.display());
        let sections: Vec<String> =
            self.flash_sections.iter().map(|(n, b)| format!("{n} {b}")).collect();
        println!("flash: {} bytes = {}", self.flash_bytes, sections.join(" + "));
        println!("       (every loaded section; .data counts once, as its initial image in flash)");
        let ram: u64 = self.ram_sections.iter().map(|(_, n)| n).sum();
        let sections: Vec<String> =
            self.ram_sections.iter().map(|(n, b)| format!("{n} {b}")).collect();
        if sections.is_empty() {
            println!("static RAM: 0 bytes (no .data/.bss; stack not included)");
        } else {
            println!("static RAM: {ram} bytes = {} (stack not included)", sections.join(" + "));
        }

        if !self.inlined.is_empty() {
            let moved: Vec<String> = self.inlined.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!(
                "inlined into the application by LTO, counted with their crates (DWARF): {}",
                moved.join(", ")
            );
        }
        println!();
        println!("  {:<14} {:>9} {:>7}", "component", "bytes", "%");
        for (component, bytes) in &self.by_component {
            println!("  {component:<14} {bytes:>9} {:>6.1}%", percent(*bytes, self.flash_bytes));
        }
        println!("  {:<14} {:>9} {:>6.1}%", "total", self.flash_bytes, 100.0);

        println!();
        println!("  {:<22} {:<10} {:>9} {:>7}", "crate", "component", "bytes", "%");
        let mut crates: Vec<_> = self.by_crate.iter().collect();
        crates.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (krate, bytes) in crates {
            println!(
                "  {krate:<22} {:<10} {bytes:>9} {:>6.1}%",
                component_of(krate),
                percent(*bytes, self.flash_bytes)
            );
        }
        let unattributed =
            self.by_component.iter().find(|(c, _)| *c == UNATTRIBUTED).map_or(0, |(_, n)| *n);
        println!(
            "  {:<22} {:<10} {unattributed:>9} {:>6.1}%",
            "(no symbol)",
            UNATTRIBUTED,
            percent(unattributed, self.flash_bytes)
        );

        if top > 0 {
            println!();
            println!("  largest symbols:");
            for (name, krate, bytes) in self.symbols.iter().take(top) {
                println!("  {bytes:>9}  {krate:<18} {}", shorten(name, 100));
            }
        }
        let unknown: Vec<_> =
            self.symbols.iter().filter(|(_, k, _)| component_of(k) == OTHER).collect();
        if !unknown.is_empty() {
            println!();
            println!("  symbols in `{OTHER}` (extend COMPONENTS / unmangled_crate in xtask/src/footprint.rs):");
            for (name, krate, bytes) in unknown.iter().take(20) {
                println!("  {bytes:>9}  {krate:<18} {}", shorten(name, 100));
            }
        }
    }
}

/// Colours of the components in the chart.
const COLOURS: &[(&str, &str)] = &[
    ("app", "#8c564b"),
    ("quic", "#1f77b4"),
    ("tls", "#ff7f0e"),
    ("h3", "#2ca02c"),
    ("crypto", "#d62728"),
    ("core", "#9467bd"),
    ("runtime", "#7f7f7f"),
    ("outlined", "#bcbd22"),
    (OTHER, "#17becf"),
    (UNATTRIBUTED, "#c7c7c7"),
];

/// A stacked bar chart of flash per component for every Cortex-M4 build (Eggert's
/// Figure 1 layout: one bar per build, cumulative matrix then authentication modes), with
/// the goal as a line. Hand-written SVG.
fn chart(reports: &[Report]) -> String {
    let rows: Vec<&Report> = reports.iter().filter(|r| r.config.target == CORTEX_M4).collect();
    let (w, h, left, bottom, top) = (60.0 + 70.0 * rows.len() as f64, 460.0, 60.0, 120.0, 40.0);
    let max = rows.iter().map(|r| r.flash_bytes).max().unwrap_or(1).max(GOAL_BYTES) as f64;
    let scale = (h - bottom - top) / (max * 1.05);
    let y = |bytes: f64| h - bottom - bytes * scale;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"20\" font-size=\"14\">mote device client: flash by component, \
         {CORTEX_M4} (opt-level z, fat LTO)</text>\n",
        w + 150.0
    );
    let mut kb = 0u64;
    while (kb * 1024) as f64 <= max * 1.05 {
        let yy = y((kb * 1024) as f64);
        out += &format!(
            "<line x1=\"{left}\" x2=\"{w}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{kb} KB</text>\n",
            left - 4.0,
            yy + 4.0
        );
        kb += 20;
    }
    for (i, r) in rows.iter().enumerate() {
        let x = left + 10.0 + 70.0 * i as f64;
        let mut acc = 0.0;
        for (component, bytes) in &r.by_component {
            let b = *bytes as f64;
            if b == 0.0 {
                continue;
            }
            let colour = COLOURS.iter().find(|(c, _)| c == component).map_or("#000", |(_, c)| c);
            out += &format!(
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"50\" height=\"{:.1}\" fill=\"{colour}\">\
                 <title>{} {component}: {bytes} B</title></rect>\n",
                y(acc + b),
                b * scale,
                r.config.name
            );
            acc += b;
        }
        out += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:.1}</text>\n\
             <text transform=\"translate({:.1},{:.1}) rotate(-45)\" text-anchor=\"end\">{}</text>\n",
            x + 25.0,
            y(acc) - 4.0,
            acc / 1024.0,
            x + 30.0,
            h - bottom + 12.0,
            r.config.name
        );
    }
    let gy = y(GOAL_BYTES as f64);
    out += &format!(
        "<line x1=\"{left}\" x2=\"{w}\" y1=\"{gy:.1}\" y2=\"{gy:.1}\" stroke=\"red\" \
         stroke-dasharray=\"6 3\"/><text x=\"{w}\" y=\"{:.1}\" fill=\"red\">goal 45 KB</text>\n",
        gy - 3.0
    );
    for (i, (component, colour)) in COLOURS.iter().enumerate() {
        let ly = top + 18.0 * i as f64;
        out += &format!(
            "<rect x=\"{:.1}\" y=\"{ly:.1}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{component}</text>\n",
            w + 20.0,
            w + 38.0,
            ly + 10.0
        );
    }
    out += &format!(
        "<text x=\"{left}\" y=\"{:.1}\">KB of flash (labels on bars); rows left to right: \
         cumulative matrix, then one row per server authentication</text>\n</svg>\n",
        h - 8.0
    );
    out
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max - 1).collect();
        out.push('…');
        out
    }
}

/// Prints one table with a column per measured configuration.
fn print_matrix(reports: &[&Report]) {
    if reports.is_empty() {
        return;
    }
    println!();
    println!("== flash bytes by component ({}) ==", reports[0].config.target);
    print!("  {:<14}", "component");
    for r in reports {
        print!(" {:>14}", r.config.name);
    }
    println!();
    print!("  {:<14}", "(row)");
    for (i, r) in reports.iter().enumerate() {
        print!(" {:>14}", format!("{} {}", r.config.group, i + 1));
    }
    println!();
    for (i, (component, _)) in reports[0].by_component.iter().enumerate() {
        print!("  {component:<14}");
        for r in reports {
            print!(" {:>14}", r.by_component[i].1);
        }
        println!();
    }
    print!("  {:<14}", "total");
    for r in reports {
        print!(" {:>14}", r.flash_bytes);
    }
    println!();
    println!();
    println!(
        "note: every row but `{INSTRUMENTED_CONFIG}` is the client without the QEMU harness's \
         self-measurement (feature `{SELFMEASURE}`: stack painting, phase counters, report \
         frames); `{INSTRUMENTED_CONFIG}` is the `{BUDGET_CONFIG}` image `cargo xtask qemu` runs, \
         with it."
    );
    println!(
        "note: attribution is by final symbol. With LTO, code inlined from one crate into \
         another is counted where it ended up (e.g. a mote_quic call inlined into app), and \
         generic code is counted in the crate that defines the function, whoever instantiated it."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_from_paths() {
        assert_eq!(path_crate("mote_quic::coding::Reader::varint"), Some("mote_quic"));
        assert_eq!(
            path_crate("<mote_crypto::rustcrypto::Aes as mote_crypto::AeadKey>::seal"),
            Some("mote_crypto")
        );
        assert_eq!(path_crate("<aes::soft::Aes128 as cipher::BlockEncrypt>::encrypt"), Some("aes"));
        assert_eq!(path_crate("<&mut W as core::fmt::Write>::write_str"), Some("core"));
        assert_eq!(
            path_crate("<&'a mote_quic::cid::ConnectionId as core::fmt::Debug>::fmt"),
            Some("mote_quic")
        );
        assert_eq!(path_crate("<[u8] as core::fmt::Debug>::fmt"), Some("core"));
        assert_eq!(path_crate("<u32 as subtle::ConstantTimeEq>::ct_eq"), Some("subtle"));
        assert_eq!(path_crate("<[T]>::copy_from_slice"), Some("core"));
        assert_eq!(path_crate("<dyn mote_crypto::CryptoRng>::fill"), Some("mote_crypto"));
        assert_eq!(
            path_crate("<generic_array::GenericArray<u8, N> as core::ops::Deref>::deref"),
            Some("generic_array")
        );
        assert_eq!(path_crate("<fn() -> u8 as core::ops::Fn<()>>::call"), Some("core"));
        assert_eq!(path_crate("core::ptr::drop_in_place::<mote_quic::X>"), Some("core"));
        assert_eq!(path_crate("memcpy"), None);
    }

    #[test]
    fn unmangled_symbols() {
        assert_eq!(unmangled_crate("__aeabi_memcpy4"), "compiler_builtins");
        assert_eq!(unmangled_crate("memset"), "compiler_builtins");
        assert_eq!(unmangled_crate("Reset"), "cortex_m_rt");
        assert_eq!(unmangled_crate("main"), FIRMWARE_CRATE);
        assert_eq!(unmangled_crate("default_setup_interrupts"), "cortex_m_rt");
        assert_eq!(unmangled_crate("OUTLINED_FUNCTION_12"), OUTLINED);
        assert_eq!(unmangled_crate("something_else"), "?");
    }

    #[test]
    fn only_the_qemu_row_is_instrumented() {
        for target in TARGETS {
            let rows: Vec<Config> = configs().into_iter().filter(|c| c.target == *target).collect();
            for c in &rows {
                assert_eq!(
                    c.features.contains(&SELFMEASURE),
                    c.name == INSTRUMENTED_CONFIG,
                    "{}",
                    c.name
                );
            }
            let budget = rows.iter().find(|c| c.name == BUDGET_CONFIG).expect("budget row");
            let qemu = rows.iter().find(|c| c.name == INSTRUMENTED_CONFIG).expect("qemu row");
            let mut plus: Vec<_> = budget.features.clone();
            plus.push(SELFMEASURE);
            assert_eq!(qemu.features, plus);
        }
    }

    #[test]
    fn only_the_general_rows_leave_the_device_connection() {
        let rows = configs();
        let device = MATRIX.iter().position(|(n, _, _)| *n == "device-conn").expect("row");
        for target in TARGETS {
            for c in rows.iter().filter(|c| c.target == *target) {
                let general = MATRIX[..device].iter().any(|(n, _, _)| *n == c.name);
                assert_eq!(c.features.contains(&"general-connection"), general, "{}", c.name);
            }
        }
    }

    #[test]
    fn components() {
        assert_eq!(component_of("mote_quic"), "quic");
        assert_eq!(component_of("aes_gcm"), "crypto");
        assert_eq!(component_of(FIRMWARE_CRATE), "app");
        assert_eq!(component_of("compiler_builtins"), "core");
        assert_eq!(component_of("somebody_else"), OTHER);
    }
}
