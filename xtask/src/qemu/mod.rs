//! `cargo xtask qemu`: the client firmware on an emulated Cortex-M4 (mps2-an386) or, with
//! `--target riscv32imc-unknown-none-elf`, an emulated ESP32-C3-class RISC-V core (`virt`)
//! against a real server.
//!
//! ```text
//! qemu-system-arm -M mps2-an386 -icount shift=0      xtask (this process)                host
//!   firmware ── UART0 ── TCP ──▶ bridge: SLIP frames ─▶ link model (delay, rate) ─▶ UDP ─▶ server
//!                                       ◀─ SLIP frames ◀─ link model ◀──────────── UDP ◀─┘
//! ```
//!
//! The bridge decodes the firmware's SLIP frames (`firmware/client/src/frame.rs`), sends
//! datagram frames as UDP payloads to the server after the profile's serialization and
//! propagation delay (mote-sim's `wlan` / `nbiot` profiles, applied in real time), and
//! frames the server's answers back the same way. Report frames carry the firmware's own
//! measurements (instructions per phase from the icount-driven timer, stack peak, sizes);
//! the bridge adds what it saw on the wire (bytes and datagrams each way), and the energy
//! model turns both into joules.
//!
//! The server is the built-in one of [`server`] unless `--server ADDR` names another (e.g.
//! `mote serve --listen ADDR --www DIR --rpk-key firmware/client/keys/server-ed25519.pem`).

mod energy;
mod server;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::util;

/// Link profiles (mote-sim's `LinkProfile::wlan()` and `nbiot()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// Same-WLAN (Eggert): 20 Mbit/s each way, 5 ms RTT.
    Wlan,
    /// NB-IoT Cat NB2: 159 kbit/s up, 127 kbit/s down, 2 s RTT.
    Nbiot,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::Wlan => "wlan",
            Profile::Nbiot => "nbiot",
        }
    }

    /// (uplink bit/s, downlink bit/s, one-way delay): mote-sim's profile values.
    fn link(self) -> (u64, u64, Duration) {
        let sim = match self {
            Profile::Wlan => mote_sim::LinkProfile::wlan(),
            Profile::Nbiot => mote_sim::LinkProfile::nbiot(),
        };
        (
            sim.up.rate_bps.unwrap_or(u64::MAX / 8_000_000_000),
            sim.down.rate_bps.unwrap_or(u64::MAX / 8_000_000_000),
            Duration::from_micros(sim.up.delay.as_micros()),
        )
    }
}

/// The emulated board, by the firmware's target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// Cortex-M4 on QEMU's Arm MPS2+ AN386 (`firmware/client/src/board/mps2.rs`).
    #[value(name = "thumbv7em-none-eabihf")]
    CortexM4,
    /// ESP32-C3-class `riscv32imc` on QEMU's RISC-V `virt` machine
    /// (`firmware/client/src/board/riscv.rs`).
    #[value(name = "riscv32imc-unknown-none-elf")]
    Riscv32,
}

impl Target {
    /// The Rust target triple.
    pub fn triple(self) -> &'static str {
        match self {
            Target::CortexM4 => crate::footprint::CORTEX_M4,
            Target::Riscv32 => crate::footprint::RISCV32,
        }
    }

    /// The QEMU binary and its Debian package.
    fn qemu(self) -> (&'static str, &'static str) {
        match self {
            Target::CortexM4 => ("qemu-system-arm", "qemu-system-arm"),
            Target::Riscv32 => ("qemu-system-riscv32", "qemu-system-misc"),
        }
    }

    /// The board, as printed.
    fn board(self) -> &'static str {
        match self {
            Target::CortexM4 => "qemu mps2-an386 (Cortex-M4",
            Target::Riscv32 => "qemu virt (riscv32imc",
        }
    }
}

/// Arguments of `cargo xtask qemu`.
#[derive(Args, Debug)]
pub struct QemuArgs {
    /// The firmware's target: Cortex-M4 on mps2-an386 (default) or riscv32imc on virt.
    #[arg(long, value_enum, default_value = "thumbv7em-none-eabihf")]
    pub target: Target,
    /// Link profile(s) to run (repeatable). Default: wlan and nbiot.
    #[arg(long = "profile", value_enum)]
    profiles: Vec<Profile>,
    /// Print one JSON object per run instead of tables.
    #[arg(long)]
    json: bool,
    /// Use this server instead of the built-in one (it must hold the firmware's pinned key,
    /// `firmware/client/keys/server-ed25519.pem`, and answer GET /5120 and POST /upload).
    #[arg(long, value_name = "ADDR")]
    server: Option<SocketAddr>,
    /// Give up on a run after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// How the firmware authenticates the server: its pinned raw public key (Ed25519), or
    /// an external PSK (the second transaction is then another PSK handshake: tickets are
    /// not used with an external PSK).
    #[arg(long, value_enum, default_value_t = Auth::Rpk)]
    auth: Auth,
    /// Diagnostic build (feature `stack-steps`): also report the stack depth of each
    /// event-loop step; its instruction counts include the painting.
    #[arg(long)]
    stack_steps: bool,
    /// Run the image `cargo xtask footprint` measures (without the self-measurement feature
    /// `selfmeasure`): it sends no reports, so only its DONE status (both transactions
    /// completed, the second resumed) and the static stack bounds are checked.
    #[arg(long, conflicts_with = "stack_steps")]
    uninstrumented: bool,
    /// Run the client on mote-quic's general `Connection` (firmware feature
    /// `general-connection`, the footprint matrix's rows above `device-conn`) instead of the
    /// device connection type it ships with.
    #[arg(long)]
    general_connection: bool,
    /// riscv32imc only: X25519/Ed25519 on salty's portable field (firmware feature
    /// `salty-portable`) instead of fiat-crypto's (feature `fiat`, the riscv32 default);
    /// Cortex-M4 always uses salty.
    #[arg(long, conflicts_with = "dalek")]
    salty_portable: bool,
    /// riscv32imc only: X25519/Ed25519 on the dalek crates (the firmware without `fiat`)
    /// instead of mote's curve code on fiat-crypto's field.
    #[arg(long)]
    dalek: bool,
}

/// X25519/Ed25519 code of a riscv32imc build (Cortex-M4 builds always use salty's assembly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Curve {
    /// mote's curve code on fiat-crypto's 32-bit field (firmware feature `fiat`, the default).
    Fiat,
    /// The dalek crates.
    Dalek,
    /// mote's curve code on salty's portable field (feature `salty-portable`).
    SaltyPortable,
}

impl QemuArgs {
    fn curve(&self) -> Curve {
        if self.dalek {
            Curve::Dalek
        } else if self.salty_portable {
            Curve::SaltyPortable
        } else {
            Curve::Fiat
        }
    }
}

/// Server authentication of the firmware build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Auth {
    /// Raw public key, Ed25519 (`rpk-ed25519`, the default build).
    Rpk,
    /// External PSK (`psk`).
    Psk,
}

impl QemuArgs {
    /// What `cargo xtask test` runs: the wlan profile on Cortex-M4, then on riscv32imc.
    pub fn ci() -> Vec<Self> {
        vec![Self::default(), Self { target: Target::Riscv32, ..Self::default() }]
    }
}

impl Default for QemuArgs {
    fn default() -> Self {
        Self {
            target: Target::CortexM4,
            profiles: vec![Profile::Wlan],
            json: false,
            server: None,
            timeout: 300,
            auth: Auth::Rpk,
            stack_steps: false,
            uninstrumented: false,
            general_connection: false,
            salty_portable: false,
            dalek: false,
        }
    }
}

/// Frame kinds (firmware/client/src/frame.rs).
const DATAGRAM: u8 = 0;
const REPORT: u8 = 1;
const DONE: u8 = 2;
const CONFIG: u8 = 3;

/// Report tags (firmware/client/src/measure.rs), with names.
const TAGS: &[(u8, &str)] = &[
    (1, "transaction"),
    (2, "ok"),
    (3, "early_data_accepted"),
    (4, "get_status"),
    (5, "post_status"),
    (6, "get_bytes"),
    (7, "key_updates"),
    (10, "insn_init"),
    (11, "insn_open"),
    (12, "insn_transfer"),
    (13, "insn_close"),
    (20, "us_init"),
    (21, "us_open"),
    (22, "us_transfer"),
    (23, "us_close"),
    (30, "datagrams_sent"),
    (31, "bytes_sent"),
    (32, "datagrams_received"),
    (33, "bytes_received"),
    (34, "ptos"),
    (35, "packets_lost"),
    (36, "frames_dropped"),
    (37, "close_kind"),
    (38, "close_code"),
    (39, "h3_error"),
    (40, "stack_peak"),
    (41, "stack_window"),
    (42, "heap_peak"),
    (43, "connection_bytes"),
    (44, "h3_bytes"),
    (45, "buffer_bytes"),
    (50, "stack_init"),
    (51, "stack_open"),
    (52, "stack_transfer"),
    (53, "stack_close"),
    (54, "stack_frame"),
    (55, "stack_step_receive"),
    (56, "stack_step_transmit"),
    (57, "stack_step_h3"),
    (58, "stack_step_timeout"),
];

fn tag_name(tag: u8) -> Option<&'static str> {
    TAGS.iter().find(|(t, _)| *t == tag).map(|(_, n)| *n)
}

/// CRC-16/CCITT-FALSE (as the firmware).
fn crc16(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// One SLIP frame (RFC 1055) with type and CRC.
fn encode(kind: u8, payload: &[u8]) -> Vec<u8> {
    let crc = crc16(crc16(0xffff, &[kind]), payload);
    let mut out = vec![0xc0];
    for &b in [kind].iter().chain(payload).chain(&crc.to_be_bytes()) {
        match b {
            0xc0 => out.extend_from_slice(&[0xdb, 0xdc]),
            0xdb => out.extend_from_slice(&[0xdb, 0xdd]),
            b => out.push(b),
        }
    }
    out.push(0xc0);
    out
}

/// SLIP decoder state.
#[derive(Default)]
struct Decoder {
    buf: Vec<u8>,
    escaped: bool,
    bad: bool,
    dropped: u64,
}

impl Decoder {
    /// Feeds bytes; returns complete frames (type, payload).
    fn push(&mut self, bytes: &[u8], out: &mut Vec<(u8, Vec<u8>)>) {
        for &b in bytes {
            match (b, self.escaped) {
                (0xc0, _) => {
                    let frame = std::mem::take(&mut self.buf);
                    let bad = std::mem::take(&mut self.bad) || self.escaped;
                    self.escaped = false;
                    if frame.is_empty() {
                        continue;
                    }
                    if bad || frame.len() < 3 || frame.len() > 4096 {
                        self.dropped += 1;
                        continue;
                    }
                    let (body, crc) = frame.split_at(frame.len() - 2);
                    if crc16(0xffff, body).to_be_bytes() != [crc[0], crc[1]] {
                        self.dropped += 1;
                        continue;
                    }
                    out.push((body[0], body[1..].to_vec()));
                }
                (0xdb, false) => self.escaped = true,
                (b, true) => {
                    self.escaped = false;
                    match b {
                        0xdc => self.buf.push(0xc0),
                        0xdd => self.buf.push(0xdb),
                        _ => self.bad = true,
                    }
                }
                (b, false) => {
                    if self.buf.len() < 4096 {
                        self.buf.push(b);
                    } else {
                        self.bad = true;
                    }
                }
            }
        }
    }
}

/// One direction of the emulated link: a FIFO served at `rate` bit/s, then `delay`.
struct Direction {
    rate_bps: u64,
    delay: Duration,
    /// When the transmitter is free again.
    free_at: Instant,
    queue: VecDeque<(Instant, Vec<u8>)>,
    bytes: u64,
    datagrams: u64,
}

impl Direction {
    fn new(rate_bps: u64, delay: Duration, now: Instant) -> Self {
        Self { rate_bps, delay, free_at: now, queue: VecDeque::new(), bytes: 0, datagrams: 0 }
    }

    /// Queues a datagram; it arrives after serialization (with 28 bytes of IPv4 + UDP
    /// header on the air) and the propagation delay.
    fn send(&mut self, now: Instant, data: Vec<u8>) {
        let bits = (data.len() as u64 + 28) * 8;
        let serialization = Duration::from_nanos(bits * 1_000_000_000 / self.rate_bps);
        let start = self.free_at.max(now);
        self.free_at = start + serialization;
        self.bytes += data.len() as u64;
        self.datagrams += 1;
        self.queue.push_back((self.free_at + self.delay, data));
    }

    fn next_due(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }

    fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_due()? <= now {
            self.queue.pop_front().map(|(_, d)| d)
        } else {
            None
        }
    }
}

/// What one firmware run produced.
struct Run {
    target: Target,
    /// The riscv32imc curve code (the stack budget depends on it).
    curve: Curve,
    profile: Profile,
    auth: Auth,
    /// The per-transaction reports, then the final one.
    reports: Vec<Vec<(String, u64)>>,
    status: Option<u8>,
    up_bytes: u64,
    up_datagrams: u64,
    down_bytes: u64,
    down_datagrams: u64,
    /// Wall-clock time of each transaction, from the first uplink datagram after the
    /// previous report to the report.
    wall: Vec<Duration>,
    /// Bytes each way per transaction (up, down), as on the wire.
    per_transaction: Vec<(u64, u64, u64, u64)>,
    server_log: Option<server::ServerLog>,
    frames_dropped: u64,
}

/// Entry point of `cargo xtask qemu`.
pub fn run(args: &QemuArgs) -> Result<()> {
    let profiles = if args.profiles.is_empty() {
        vec![Profile::Wlan, Profile::Nbiot]
    } else {
        args.profiles.clone()
    };
    ensure_qemu(args.target)?;
    let elf = build_firmware(
        args.target,
        args.auth,
        args.stack_steps,
        !args.uninstrumented,
        args.general_connection,
        args.curve(),
    )?;
    let mut failed = false;
    // The paths the run does not take (or only in their cheap case), bounded statically
    // with the same budget: a key update's worst case, a HelloRetryRequest, and the whole
    // program (a Retry, any other path).
    let mut over =
        crate::stack::check_defaults(&elf, Some(stack_limit(args.target, args.curve())))?;
    let mut gaps = Vec::new();
    for profile in profiles {
        let run = run_once(&elf, profile, args)?;
        failed |= run.status != Some(0);
        if args.uninstrumented {
            // No reports: the status is all there is.
            println!(
                "== {}), profile {}, uninstrumented image (no selfmeasure): {} ==",
                args.target.board(),
                profile.name(),
                if run.status == Some(0) {
                    "status ok".to_owned()
                } else {
                    format!("status {:?}", run.status)
                }
            );
            continue;
        }
        if args.json {
            println!("{}", to_json(&run));
        } else {
            print_run(&run);
        }
        over.extend(over_budget(&run));
        over.extend(missing_key_updates(&run));
        if args.target == Target::CortexM4 {
            gaps.extend(stack_gap(&run));
        }
    }
    for g in &gaps {
        eprintln!("stack goal (issue 8) not met yet: {g}");
    }
    if failed {
        bail!("a firmware run did not complete both transactions");
    }
    if !over.is_empty() {
        for o in &over {
            eprintln!("over budget: {o}");
        }
        bail!("the device client is over its memory goal, or skipped its key update (issue 8)");
    }
    Ok(())
}

/// Issue 8's memory goal for the device client: peak stack (painted, from the top).
pub const STACK_GOAL: u64 = 3072;
/// The stack budget CI enforces: the measured peak plus a 256 B margin (like the flash
/// budget in `footprint.rs`), but never above [`STACK_GOAL`] now that the goal is met (issue
/// 8: 2,880 B painted in session 5, 2,808 B in session 6, 2,752 B in session 7 on the device
/// connection, 2,684 B in session 8, 2,604 B in session 9, 2,596 B in session 10, 2,364 B in session 11, 2,292 B in session 12; both profiles, both transactions, key updates included).
/// Lower it as the stack shrinks; never raise it to absorb growth without a reason in the
/// commit.
pub const STACK_BUDGET: u64 =
    if STACK_PEAK_MEASURED + 256 < STACK_GOAL { STACK_PEAK_MEASURED + 256 } else { STACK_GOAL };
/// The peak the budget was recorded from (`cargo xtask qemu`, both profiles, both
/// transactions).
const STACK_PEAK_MEASURED: u64 = 2_292;
/// The riscv32imc client's stack budget: its measured peak plus 256 B. Issue 8's 3 KB goal is
/// the Cortex-M4's; on RISC-V frames are larger (no push-multiple) and fiat-crypto's
/// multiplication keeps its 100 products in an 880 B frame, and the budget only keeps the
/// depth from growing unnoticed (painted peak 3,204 B, both profiles, with mote's curve code
/// on fiat-crypto's field, the default there, firmware/client/Cargo.toml; static bound of
/// the whole program 3,216 B).
pub const RISCV_STACK_BUDGET: u64 = 3_204 + 256;
/// The riscv32imc alternatives' budget (`--dalek`: painted peak 6,684 B, static bound
/// 6,688 B, the dalek crates' Ed25519 verification; `--salty-portable`: 4,916 B).
pub const RISCV_ALTERNATIVE_STACK_BUDGET: u64 = 6_684 + 256;
/// The painted and static stack limit of `target`'s run.
fn stack_limit(target: Target, curve: Curve) -> u64 {
    match (target, curve) {
        (Target::CortexM4, _) => STACK_BUDGET.max(STACK_GOAL),
        (Target::Riscv32, Curve::Fiat) => RISCV_STACK_BUDGET,
        (Target::Riscv32, Curve::Dalek | Curve::SaltyPortable) => RISCV_ALTERNATIVE_STACK_BUDGET,
    }
}

/// Issue 8's memory goal: heap high-water mark, packet buffers excluded (they are static).
pub const HEAP_GOAL: u64 = 8192;

/// What of `run`'s measured memory is above the goal, one line each (figure and goal).
fn over_budget(run: &Run) -> Vec<String> {
    let Some(f) = final_report(run) else {
        return vec![format!("{}: the firmware sent no memory report", run.profile.name())];
    };
    let mut over = Vec::new();
    let stack = get(f, "stack_peak");
    let stack_limit = stack_limit(run.target, run.curve);
    if stack > stack_limit {
        over.push(format!(
            "{} {}: peak stack {stack} B > budget {stack_limit} B (goal {STACK_GOAL} B on \
             Cortex-M4)",
            run.target.triple(),
            run.profile.name()
        ));
    }
    let heap = get(f, "heap_peak");
    if heap > HEAP_GOAL {
        over.push(format!(
            "{}: heap high-water mark {heap} B > goal {HEAP_GOAL} B",
            run.profile.name()
        ));
    }
    over
}

/// The transactions of `run` in which the device saw no key update, one line each. The
/// built-in server initiates one per connection (RFC 9001 §6), so that the device's
/// key-update path runs under the stack painting; against an external server (`--server`)
/// none is required.
fn missing_key_updates(run: &Run) -> Vec<String> {
    if run.server_log.is_none() {
        return Vec::new();
    }
    transactions(run)
        .iter()
        .filter(|r| get(r, "key_updates") == 0)
        .map(|r| {
            format!(
                "{} {}: no key update took place (the built-in server initiates one)",
                run.profile.name(),
                mode(run.auth, get(r, "transaction"))
            )
        })
        .collect()
}

/// How far `run`'s peak stack is from the 3 KB goal, while it is over it (printed, not a
/// failure: the budget is the check).
fn stack_gap(run: &Run) -> Option<String> {
    let stack = get(final_report(run)?, "stack_peak");
    (stack > STACK_GOAL).then(|| {
        format!(
            "{}: peak stack {stack} B, {} B above the goal of {STACK_GOAL} B (budget {} B)",
            run.profile.name(),
            stack - STACK_GOAL,
            STACK_BUDGET.max(STACK_GOAL)
        )
    })
}

/// Installs the target's QEMU (qemu-system-arm, or qemu-system-riscv32 from
/// qemu-system-misc) with apt-get if it is missing.
fn ensure_qemu(target: Target) -> Result<()> {
    let (bin, package) = target.qemu();
    if util::probe(Command::new(bin).arg("--version")) {
        return Ok(());
    }
    eprintln!("{bin} not found; installing it (apt-get install {package})");
    util::run(Command::new("apt-get").arg("update"))?;
    util::run(Command::new("apt-get").args(["install", "-y", package]))
}

/// Builds the client firmware (RPK Ed25519 or PSK) for `target` with a way to exit QEMU
/// (Cortex-M4: semihosting; RISC-V virt: its test device, always) and, with `selfmeasure`,
/// its self-measurement.
pub(crate) fn build_firmware(
    target: Target,
    auth: Auth,
    stack_steps: bool,
    selfmeasure: bool,
    general_connection: bool,
    curve: Curve,
) -> Result<std::path::PathBuf> {
    let dir = util::repo_root().join("firmware");
    let mut cmd = util::cargo(&dir, None);
    let mut features = match auth {
        Auth::Rpk => "rpk-ed25519",
        Auth::Psk => "psk",
    }
    .to_owned();
    if target == Target::CortexM4 {
        features.push_str(",semihosting");
    }
    // `selfmeasure`: the instrumentation this harness reads (stack painting, phase counters,
    // report frames); the footprint's rows but `qemu` are measured without it.
    if selfmeasure {
        features.push_str(",selfmeasure");
    }
    if stack_steps {
        features.push_str(",stack-steps");
    }
    if general_connection {
        features.push_str(",general-connection");
    }
    if target == Target::Riscv32 {
        match curve {
            Curve::Fiat => features.push_str(",fiat"),
            Curve::Dalek => features.push_str(",dalek"),
            Curve::SaltyPortable => features.push_str(",salty-portable"),
        }
    }
    cmd.args(["build", "--release", "-p", "mote-client", "--bin", "mote-client"])
        .args(["--target", target.triple(), "--no-default-features"])
        .args(["--features", &features]);
    eprintln!("$ (cd firmware && {})", util::display(&cmd));
    util::run(&mut cmd)?;
    Ok(dir.join("target").join(target.triple()).join("release/mote-client"))
}

enum Input {
    Serial(Vec<u8>),
    SerialClosed,
    Udp(Vec<u8>),
}

fn run_once(elf: &std::path::Path, profile: Profile, args: &QemuArgs) -> Result<Run> {
    // The server.
    let stop = Arc::new(AtomicBool::new(false));
    let (server_addr, server_thread) = match args.server {
        Some(addr) => (addr, None),
        None => {
            let (socket, addr) = server::bind()?;
            let key = std::fs::read_to_string(
                util::repo_root().join("firmware/client/keys/server-ed25519.pem"),
            )
            .context("reading the server key")?;
            let stop = stop.clone();
            let nbiot = profile == Profile::Nbiot;
            let t = std::thread::spawn(move || server::serve(socket, &key, nbiot, stop));
            (addr, Some(t))
        }
    };
    let udp = UdpSocket::bind("127.0.0.1:0").context("bind bridge socket")?;
    udp.connect(server_addr).context("connect bridge socket")?;
    udp.set_read_timeout(Some(Duration::from_millis(50)))?;

    // QEMU connects its UART0 to our listener.
    let listener = TcpListener::bind("127.0.0.1:0").context("bind serial listener")?;
    let port = listener.local_addr()?.port();
    let mut qemu = spawn_qemu(args.target, elf, port)?;
    let serial = accept_with_timeout(&listener, &mut qemu, Duration::from_secs(20))?;
    serial.set_nodelay(true)?;

    let (tx, rx) = mpsc::channel::<Input>();
    {
        let mut reader = serial.try_clone()?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Input::SerialClosed);
                        return;
                    }
                    Ok(n) => {
                        if tx.send(Input::Serial(buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
    let udp_done = Arc::new(AtomicBool::new(false));
    {
        let udp = udp.try_clone()?;
        let tx = tx.clone();
        let done = udp_done.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !done.load(Ordering::Relaxed) {
                if let Ok(n) = udp.recv(&mut buf) {
                    if tx.send(Input::Udp(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        });
    }

    let mut serial_w = serial;
    let start = Instant::now();
    let (up_rate, down_rate, delay) = profile.link();
    let mut up = Direction::new(up_rate, delay, start);
    let mut down = Direction::new(down_rate, delay, start);
    // CONFIG: the profile and a nonce for the device's random generator.
    let mut config = vec![u8::from(profile == Profile::Nbiot)];
    let mut nonce = [0u8; 32];
    getrandom(&mut nonce);
    config.extend_from_slice(&nonce);
    serial_w.write_all(&encode(CONFIG, &config))?;

    let mut decoder = Decoder::default();
    let mut reports = Vec::new();
    let mut status = None;
    let mut wall = Vec::new();
    let mut per_transaction = Vec::new();
    let mut transaction_start: Option<Instant> = None;
    let mut mark = (0u64, 0u64, 0u64, 0u64);
    let deadline = start + Duration::from_secs(args.timeout);
    let mut frames = Vec::new();
    while status.is_none() {
        let now = Instant::now();
        if now > deadline {
            let _ = qemu.kill();
            bail!("{} run timed out after {} s", profile.name(), args.timeout);
        }
        let next = [up.next_due(), down.next_due()].into_iter().flatten().min();
        let wait = next.map_or(Duration::from_millis(20), |t| t.saturating_duration_since(now));
        match rx.recv_timeout(wait.min(Duration::from_millis(20))) {
            Ok(Input::Serial(bytes)) => decoder.push(&bytes, &mut frames),
            Ok(Input::Udp(d)) => down.send(Instant::now(), d),
            Ok(Input::SerialClosed) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for (kind, payload) in frames.drain(..) {
            match kind {
                DATAGRAM => {
                    transaction_start.get_or_insert(Instant::now());
                    up.send(Instant::now(), payload);
                }
                REPORT => {
                    let fields: Vec<(String, u64)> = payload
                        .chunks_exact(9)
                        .map(|c| {
                            let name = tag_name(c[0])
                                .map_or_else(|| format!("tag{}", c[0]), str::to_owned);
                            let v = u64::from_le_bytes(c[1..9].try_into().expect("8 bytes"));
                            (name, v)
                        })
                        .collect();
                    if fields.iter().any(|(n, _)| n == "transaction") {
                        wall.push(transaction_start.take().map_or(Duration::ZERO, |t| t.elapsed()));
                        let now_totals = (up.bytes, up.datagrams, down.bytes, down.datagrams);
                        per_transaction.push((
                            now_totals.0 - mark.0,
                            now_totals.1 - mark.1,
                            now_totals.2 - mark.2,
                            now_totals.3 - mark.3,
                        ));
                        mark = now_totals;
                    }
                    reports.push(fields);
                }
                DONE => status = Some(payload.first().copied().unwrap_or(0xff)),
                _ => {}
            }
        }
        let now = Instant::now();
        while let Some(d) = up.pop_due(now) {
            let _ = udp.send(&d);
        }
        while let Some(d) = down.pop_due(now) {
            serial_w.write_all(&encode(DATAGRAM, &d))?;
        }
    }
    // The firmware exits after DONE (Cortex-M4: semihosting; RISC-V virt: its test device).
    let exit = wait_with_timeout(&mut qemu, Duration::from_secs(10));
    udp_done.store(true, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    let server_log = match server_thread {
        Some(t) => Some(t.join().map_err(|_| anyhow!("server thread panicked"))??),
        None => None,
    };
    let code = exit.and_then(|e| e.code());
    if status.is_none() {
        if code == Some(PANIC_STATUS) {
            bail!("the firmware panicked (qemu exit status {PANIC_STATUS})");
        }
        bail!("the firmware closed the serial line without finishing (qemu: {exit:?})");
    }
    // The board's exit path (`Board::exit`) must carry the DONE frame's status out of QEMU.
    if let Some(expected) = status.map(|s| qemu_exit_code(args.target, s)) {
        if code != Some(expected) {
            bail!(
                "qemu exited with {exit:?}, the firmware's DONE frame says status {status:?} \
                 (expected exit code {expected})"
            );
        }
    }
    Ok(Run {
        target: args.target,
        curve: args.curve(),
        profile,
        auth: args.auth,
        reports,
        status,
        up_bytes: up.bytes,
        up_datagrams: up.datagrams,
        down_bytes: down.bytes,
        down_datagrams: down.datagrams,
        wall,
        per_transaction,
        server_log,
        frames_dropped: decoder.dropped,
    })
}

/// QEMU's exit status when the firmware panics (`firmware/client/src/main.rs`; as a Rust
/// program's): RISC-V only (the SiFive test device carries any code); the Cortex-M4 panic
/// exits through semihosting with status 1.
const PANIC_STATUS: i32 = 101;

/// QEMU's exit code for the firmware's run status: the SiFive test device (RISC-V `virt`)
/// carries it as is; semihosting (Cortex-M4) only success (0) or failure (1).
fn qemu_exit_code(target: Target, status: u8) -> i32 {
    match target {
        Target::Riscv32 => i32::from(status),
        Target::CortexM4 => i32::from(status != 0),
    }
}

/// A nonce from the OS.
fn getrandom(out: &mut [u8]) {
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(out);
    }
}

fn spawn_qemu(target: Target, elf: &std::path::Path, port: u16) -> Result<Child> {
    let mut cmd = Command::new(target.qemu().0);
    match target {
        Target::CortexM4 => cmd
            .args(["-machine", "mps2-an386", "-cpu", "cortex-m4"])
            .args(["-semihosting-config", "enable=on,target=native"]),
        // `-bios none`: the boot ROM jumps straight to DRAM, where the image is linked.
        Target::Riscv32 => cmd.args(["-machine", "virt", "-bios", "none", "-smp", "1"]),
    };
    cmd.args(["-nographic", "-monitor", "none"])
        // One instruction = 1 ns of virtual time: instruction counts from the timer are
        // exact; the CPU sleeps (WFI) in real time.
        .args(["-icount", "shift=0,sleep=on"])
        .args(["-serial", &format!("tcp:127.0.0.1:{port}")])
        .arg("-kernel")
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    eprintln!("$ {}", util::display(&cmd));
    cmd.spawn().with_context(|| format!("starting {}", target.qemu().0))
}

fn accept_with_timeout(l: &TcpListener, qemu: &mut Child, limit: Duration) -> Result<TcpStream> {
    l.set_nonblocking(true)?;
    let start = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(st) = qemu.try_wait()? {
                    bail!("qemu exited before connecting its serial port ({st})");
                }
                if start.elapsed() > limit {
                    let _ = qemu.kill();
                    bail!("qemu did not connect its serial port");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn wait_with_timeout(c: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(s)) = c.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    c.wait().ok()
}

/// The name of transaction `which` (0 or 1) of a run with `auth`.
fn mode(auth: Auth, which: u64) -> &'static str {
    match (auth, which) {
        (Auth::Rpk, 0) => "1-rtt",
        (Auth::Rpk, _) => "0-rtt",
        (Auth::Psk, 0) => "psk-1",
        (Auth::Psk, _) => "psk-2",
    }
}

fn get(fields: &[(String, u64)], name: &str) -> u64 {
    fields.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v)
}

fn transactions(run: &Run) -> Vec<&Vec<(String, u64)>> {
    run.reports.iter().filter(|r| r.iter().any(|(n, _)| n == "transaction")).collect()
}

fn final_report(run: &Run) -> Option<&Vec<(String, u64)>> {
    run.reports.iter().find(|r| r.iter().any(|(n, _)| n == "stack_peak"))
}

fn to_json(run: &Run) -> serde_json::Value {
    let model = energy::Model::for_run(run.target, run.profile);
    let txs: Vec<serde_json::Value> = transactions(run)
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let obj: serde_json::Map<String, serde_json::Value> =
                r.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let (ub, ud, db, dd) = run.per_transaction.get(i).copied().unwrap_or_default();
            let insn: u64 = ["insn_init", "insn_open", "insn_transfer", "insn_close"]
                .iter()
                .map(|k| get(r, k))
                .sum();
            let e = model.estimate(insn, ub + 28 * ud, db + 28 * dd);
            let duration_us: u64 =
                ["us_open", "us_transfer", "us_close"].iter().map(|k| get(r, k)).sum();
            json!({
                "mode": mode(run.auth, get(r, "transaction")),
                "device": obj,
                "duration_us": duration_us,
                "wall_ms": run.wall.get(i).map_or(0, |d| d.as_millis() as u64),
                "wire": {"up_bytes": ub, "up_datagrams": ud, "down_bytes": db, "down_datagrams": dd},
                "energy_model_j": e.to_json(),
            })
        })
        .collect();
    let fin: serde_json::Map<String, serde_json::Value> = final_report(run)
        .map(|r| r.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
        .unwrap_or_default();
    json!({
        "target": run.target.triple(),
        "profile": run.profile.name(),
        "auth": match run.auth { Auth::Rpk => "rpk-ed25519", Auth::Psk => "psk" },
        "status": run.status,
        "transactions": txs,
        "device": fin,
        "bridge": {
            "up_bytes": run.up_bytes, "up_datagrams": run.up_datagrams,
            "down_bytes": run.down_bytes, "down_datagrams": run.down_datagrams,
            "frames_dropped": run.frames_dropped,
        },
        "server": run.server_log.as_ref().map(|l| json!({
            "requests": l.requests, "handshakes": l.handshakes,
            "early_data_accepted": l.early_data_accepted, "closes": l.closes,
            "key_updates_initiated": l.key_updates_initiated, "key_updates": l.key_updates,
        })),
        "energy_constants": energy::Model::for_run(run.target, run.profile).constants_json(),
    })
}

fn print_run(run: &Run) {
    println!();
    println!(
        "== {}, -icount shift=0), profile {}: status {} ==",
        run.target.board(),
        run.profile.name(),
        match run.status {
            Some(0) => "ok".to_owned(),
            Some(s) => format!("FAILED ({s:#x})"),
            None => "no result".to_owned(),
        }
    );
    println!(
        "  {:<7} {:>3} {:>5} {:>3} {:>5} {:>6} {:>10} {:>11} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9}",
        "mode",
        "ok",
        "0rtt",
        "ku",
        "GET",
        "POST",
        "duration",
        "insn init",
        "insn open",
        "insn xfer",
        "insn close",
        "up B",
        "down B",
        "energy"
    );
    let model = energy::Model::for_run(run.target, run.profile);
    for (i, r) in transactions(run).iter().enumerate() {
        let (ub, ud, db, dd) = run.per_transaction.get(i).copied().unwrap_or_default();
        let insn: u64 = ["insn_init", "insn_open", "insn_transfer", "insn_close"]
            .iter()
            .map(|k| get(r, k))
            .sum();
        let e = model.estimate(insn, ub + 28 * ud, db + 28 * dd);
        let dur: u64 = ["us_open", "us_transfer", "us_close"].iter().map(|k| get(r, k)).sum();
        println!(
            "  {:<7} {:>3} {:>5} {:>3} {:>5} {:>6} {:>8.3} s {:>11} {:>11} {:>11} {:>11} {:>9} {:>9} {:>7.4} J",
            mode(run.auth, get(r, "transaction")),
            if get(r, "ok") == 1 { "yes" } else { "NO" },
            if get(r, "early_data_accepted") == 1 { "acc" } else { "-" },
            get(r, "key_updates"),
            get(r, "get_status"),
            get(r, "post_status"),
            dur as f64 / 1e6,
            get(r, "insn_init"),
            get(r, "insn_open"),
            get(r, "insn_transfer"),
            get(r, "insn_close"),
            ub + 28 * ud,
            db + 28 * dd,
            e.total(),
        );
    }
    if let Some(f) = final_report(run) {
        println!(
            "  device stack: peak {} B from the top (goal {STACK_GOAL} B; window {} B), of which \
             main, the transaction and its event loop (the connection, HTTP/3 session, \
             request state and records are static) {} B;",
            get(f, "stack_peak"),
            get(f, "stack_window"),
            get(f, "stack_frame"),
        );
        println!(
            "    call stack below that: init {} B (connection constructor), open {} B, transfer {} B, close {} B",
            get(f, "stack_init"),
            get(f, "stack_open"),
            get(f, "stack_transfer"),
            get(f, "stack_close"),
        );
        if f.iter().any(|(n, _)| n == "stack_step_receive") {
            println!(
                "    per event-loop step (diagnostic build): receive {} B, transmit {} B, HTTP/3 {} B, timeout {} B",
                get(f, "stack_step_receive"),
                get(f, "stack_step_transmit"),
                get(f, "stack_step_h3"),
                get(f, "stack_step_timeout"),
            );
        }
        println!(
            "  device memory: heap {} B (goal {HEAP_GOAL} B; no allocator); \
             connection {} B, HTTP/3 session {} B, static buffers {} B; boot {} insn",
            get(f, "heap_peak"),
            get(f, "connection_bytes"),
            get(f, "h3_bytes"),
            get(f, "buffer_bytes"),
            get(f, "insn_init"),
        );
    }
    if let Some(l) = &run.server_log {
        println!(
            "  server: {} handshakes, 0-RTT accepted {}, key updates initiated {} (completed per \
             connection: {:?}); requests: {}; closes: {}",
            l.handshakes,
            l.early_data_accepted,
            l.key_updates_initiated,
            l.key_updates,
            l.requests.join("; "),
            l.closes.join("; ")
        );
    }
    println!("  ku = key updates the device completed (RFC 9001 §6; the built-in server initiates one, the device one);");
    println!("  insn = instructions (QEMU icount, 1 insn = 1 ns of virtual time, sleep excluded);");
    println!("  duration = device clock from the first datagram to CONNECTION_CLOSE; bytes incl. 28 B IPv4+UDP per datagram.");
    model.print_constants();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slip_frames_round_trip_and_reject_corruption() {
        // CRC-16/CCITT-FALSE check value.
        assert_eq!(crc16(0xffff, b"123456789"), 0x29b1);
        let payload = [0xc0, 0xdb, 1, 2, 0xdc, 0xdd];
        let wire = encode(DATAGRAM, &payload);
        let mut d = Decoder::default();
        let mut frames = Vec::new();
        // Split anywhere: the decoder is incremental.
        d.push(&wire[..3], &mut frames);
        d.push(&wire[3..], &mut frames);
        assert_eq!(frames, vec![(DATAGRAM, payload.to_vec())]);
        let mut bad = encode(REPORT, b"abc");
        bad[2] ^= 0x40;
        frames.clear();
        d.push(&bad, &mut frames);
        assert!(frames.is_empty());
        assert_eq!(d.dropped, 1);
    }

    #[test]
    fn link_direction_serializes_then_delays() {
        let t0 = Instant::now();
        // 1 Mbit/s, 10 ms: a 97-byte datagram (+28 B headers = 1000 bits) takes 1 ms.
        let mut dir = Direction::new(1_000_000, Duration::from_millis(10), t0);
        dir.send(t0, vec![0; 97]);
        dir.send(t0, vec![0; 97]);
        assert_eq!(dir.next_due(), Some(t0 + Duration::from_millis(11)));
        assert!(dir.pop_due(t0 + Duration::from_millis(10)).is_none());
        assert!(dir.pop_due(t0 + Duration::from_millis(11)).is_some());
        // The second waited for the first to be serialized.
        assert_eq!(dir.next_due(), Some(t0 + Duration::from_millis(12)));
        assert_eq!((dir.bytes, dir.datagrams), (194, 2));
    }

    #[test]
    fn memory_goal_is_checked() {
        let run = |stack: u64, heap: u64| Run {
            target: Target::CortexM4,
            curve: Curve::Fiat,
            profile: Profile::Nbiot,
            auth: Auth::Rpk,
            reports: vec![vec![("stack_peak".to_owned(), stack), ("heap_peak".to_owned(), heap)]],
            status: Some(0),
            up_bytes: 0,
            up_datagrams: 0,
            down_bytes: 0,
            down_datagrams: 0,
            wall: Vec::new(),
            per_transaction: Vec::new(),
            server_log: None,
            frames_dropped: 0,
        };
        let limit = STACK_BUDGET.max(STACK_GOAL);
        assert!(over_budget(&run(limit, HEAP_GOAL)).is_empty());
        // Over the goal but within the budget: not a failure, but the gap is reported.
        if limit > STACK_GOAL {
            assert!(over_budget(&run(STACK_GOAL + 1, HEAP_GOAL)).is_empty());
            let gap = stack_gap(&run(STACK_GOAL + 1, HEAP_GOAL));
            assert!(gap.is_some_and(|g| g.contains("1 B above the goal of 3072 B")));
        }
        assert!(stack_gap(&run(STACK_GOAL, HEAP_GOAL)).is_none());
        let over = over_budget(&run(limit + 1, HEAP_GOAL + 1));
        assert_eq!(over.len(), 2);
        let expected = format!(
            "thumbv7em-none-eabihf nbiot: peak stack {} B > budget {limit} B (goal 3072 B on \
             Cortex-M4)",
            limit + 1
        );
        assert!(over[0].contains(&expected), "{over:?}");
        assert!(over[1].contains("heap high-water mark 8193 B > goal 8192 B"), "{over:?}");
        // The riscv32imc client has its own stack budget.
        let riscv = |stack: u64| Run { target: Target::Riscv32, ..run(stack, HEAP_GOAL) };
        assert!(over_budget(&riscv(RISCV_STACK_BUDGET)).is_empty());
        let over = over_budget(&riscv(RISCV_STACK_BUDGET + 1));
        assert_eq!(over.len(), 1);
        assert!(over[0].starts_with("riscv32imc-unknown-none-elf nbiot: peak stack"), "{over:?}");
        // The dalek and salty-portable alternatives have the deeper budget.
        let dalek = |stack: u64| Run { curve: Curve::Dalek, ..riscv(stack) };
        assert!(over_budget(&dalek(RISCV_ALTERNATIVE_STACK_BUDGET)).is_empty());
        assert_eq!(over_budget(&dalek(RISCV_ALTERNATIVE_STACK_BUDGET + 1)).len(), 1);
        // A run without a memory report fails the check too.
        let mut silent = run(0, 0);
        silent.reports.clear();
        assert_eq!(over_budget(&silent).len(), 1);
    }

    #[test]
    fn energy_model_terms() {
        let m = energy::Model::for_run(Target::CortexM4, Profile::Wlan);
        // 1e6 instructions at 0.3 nJ; 2500 bytes up and down at 20 Mbit/s = 1 ms each.
        let e = m.estimate(1_000_000, 2500, 2500);
        let expected = 1e6 * 0.3e-9 + 1e-3 * 0.210 * 3.3 + 1e-3 * 0.085 * 3.3;
        assert!((e.total() - expected).abs() < 1e-12, "{} vs {expected}", e.total());
        // riscv32imc: the ESP32-C3's 26.8 mA at 3.3 V and 160 MHz per instruction, the same
        // WLAN radio terms.
        let m = energy::Model::for_run(Target::Riscv32, Profile::Wlan);
        let e = m.estimate(1_000_000, 2500, 2500);
        let expected = 1e6 * 0.0268 * 3.3 / 160e6 + 1e-3 * 0.210 * 3.3 + 1e-3 * 0.085 * 3.3;
        assert!((e.total() - expected).abs() < 1e-12, "{} vs {expected}", e.total());
    }

    #[test]
    fn qemu_exit_code_carries_the_done_status() {
        // The SiFive test device carries the status; semihosting only success or failure.
        assert_eq!(qemu_exit_code(Target::Riscv32, 0), 0);
        assert_eq!(qemu_exit_code(Target::Riscv32, 3), 3);
        assert_eq!(qemu_exit_code(Target::CortexM4, 0), 0);
        assert_eq!(qemu_exit_code(Target::CortexM4, 2), 1);
    }
}
