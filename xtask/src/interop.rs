//! `cargo xtask interop`: the QUIC interop runner's test cases between mote and
//! independent stacks (aioquic, quic-go, ngtcp2), in both roles, through `mote relay`.
//!
//! Per run, under `target/interop/<run>/`: certificates (a CA and an ECDSA P-256 leaf, plus
//! a long chain for amplificationlimit, made with openssl), and per case and
//! (client, server) pair a directory with the served files, the downloads, the relay's
//! datagram log (`relay.jsonl`, with bytes), both key logs, qlogs and each process's
//! output. Each cell starts the server, the relay (the runner's default network: 15 ms
//! each way, 10 Mbit/s, a 25-packet queue, plus the case's impairments), then the client
//! run(s), and judges the cell from the files and the relay log ([`judge`]): `pass` only on
//! evidence, `unsupported` when an implementation cannot do the case (exit 127, or known
//! in advance), `fail` with the reason otherwise.

mod cases;
mod decode;
mod judge;
mod peers;

use std::fs;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;

use crate::util;
use cases::{Case, Plan};
use peers::{ClientSpec, Peer, ServerSpec};

/// Arguments of `cargo xtask interop`.
#[derive(Args, Debug, Clone)]
pub struct InteropArgs {
    /// Peers to test mote against (comma-separated): aioquic, quic-go, ngtcp2, quinn.
    #[arg(long, value_delimiter = ',', default_value = "aioquic,quic-go,ngtcp2,quinn")]
    pub peers: Vec<String>,
    /// Test cases (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// mote's roles to test (comma-separated): client, server, and device (`mote get
    /// --device`, the firmware's connection and HTTP/3 client, as a client; cells named
    /// `mote-dev`).
    #[arg(long, value_delimiter = ',', default_value = "client,server,device")]
    pub roles: Vec<String>,
    /// Also run the peers against each other (useful before mote has serve/get; shows
    /// what the harness and the peers can do).
    #[arg(long)]
    pub peer_pairs: bool,
    /// Skip mote (peer pairs only).
    #[arg(long)]
    pub no_mote: bool,
    /// Write one JSON line per (client, server, case) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The Python interpreter that creates the aioquic venv.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// List the test cases and exit.
    #[arg(long)]
    pub list: bool,
}

impl InteropArgs {
    /// The CI subset: against aioquic and quic-go, both roles, and `mote get --device` as a
    /// client (its cells add about 50 s).
    pub fn ci() -> Self {
        InteropArgs {
            peers: vec!["aioquic".into(), "quic-go".into()],
            cases: cases::CI_SUBSET.iter().map(|s| s.to_string()).collect(),
            roles: vec!["client".into(), "server".into(), "device".into()],
            peer_pairs: false,
            no_mote: false,
            json: None,
            python: "python3".into(),
            list: false,
        }
    }
}

/// The outcome of one cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every check passed.
    Pass,
    /// A check failed, or an endpoint did.
    Fail(String),
    /// An implementation cannot do this case.
    Unsupported(String),
}

/// One cell of the matrix.
struct Cell {
    client: &'static str,
    server: &'static str,
    case: &'static str,
    verdict: Verdict,
    notes: Vec<String>,
    secs: f64,
    dir: PathBuf,
}

/// Entry point of `cargo xtask interop`.
pub fn run(args: &InteropArgs) -> Result<()> {
    let all = cases::all();
    if args.list {
        for c in &all {
            println!("{}", c.name);
        }
        return Ok(());
    }
    let selected: Vec<Case> = if args.cases.is_empty() {
        all
    } else {
        for name in &args.cases {
            if !all.iter().any(|c| c.name == name) {
                bail!("unknown case {name:?} (see --list)");
            }
        }
        all.into_iter().filter(|c| args.cases.iter().any(|n| n == c.name)).collect()
    };
    let root = util::repo_root();
    let work = root.join("target/interop");
    fs::create_dir_all(&work)?;
    let relay = build_relay(&root)?;
    let mote = if args.no_mote { None } else { Some(peers::mote(&root)?) };
    let wants_device = args.roles.iter().any(|r| r == "device");
    let mote_device = match &mote {
        Some(m) if wants_device => {
            let d = peers::mote_device(m);
            if d.is_none() {
                eprintln!("interop: this mote get has no --device; no mote-dev cells");
            }
            d
        }
        _ => None,
    };
    let mut peer_list = Vec::new();
    for name in &args.peers {
        peer_list.push(peers::peer(name, &root, &work, &args.python)?);
    }
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let run_dir = work.join(format!("run-{stamp}"));
    let certs = Certs::make(&run_dir.join("certs"))?;
    eprintln!("interop: logs under {}", run_dir.display());

    // (client, server) pairs.
    let mut pairs: Vec<(&Peer, &Peer)> = Vec::new();
    if let Some(m) = &mote {
        for p in &peer_list {
            if args.roles.iter().any(|r| r == "client") {
                pairs.push((m, p));
            }
            if args.roles.iter().any(|r| r == "server") {
                pairs.push((p, m));
            }
            if let Some(d) = &mote_device {
                pairs.push((d, p));
            }
        }
    }
    if args.peer_pairs {
        for a in &peer_list {
            for b in &peer_list {
                if a.name != b.name {
                    pairs.push((a, b));
                }
            }
        }
    }
    let mut cells = Vec::new();
    let mut json_out = match &args.json {
        Some(path) => {
            Some(fs::File::create(path).with_context(|| format!("creating {}", path.display()))?)
        }
        None => None,
    };
    for case in &selected {
        for &(client, server) in &pairs {
            let dir = run_dir.join(case.name).join(format!("{}_{}", client.name, server.name));
            let started = Instant::now();
            let (verdict, notes) = run_cell(&relay, &certs, client, server, case, &dir)
                .unwrap_or_else(|e| (Verdict::Fail(format!("harness error: {e:#}")), Vec::new()));
            let cell = Cell {
                client: client.name,
                server: server.name,
                case: case.name,
                verdict,
                notes,
                secs: started.elapsed().as_secs_f64(),
                dir,
            };
            eprintln!(
                "{:<20} {:>8} -> {:<8} {} ({:.1} s)",
                cell.case,
                cell.client,
                cell.server,
                verdict_text(&cell.verdict),
                cell.secs
            );
            if let Some(out) = &mut json_out {
                let (result, reason) = match &cell.verdict {
                    Verdict::Pass => ("pass", String::new()),
                    Verdict::Fail(r) => ("fail", r.clone()),
                    Verdict::Unsupported(r) => ("unsupported", r.clone()),
                };
                let line = json!({
                    "client": cell.client, "server": cell.server, "case": cell.case,
                    "result": result, "reason": reason, "notes": cell.notes,
                    "seconds": (cell.secs * 10.0).round() / 10.0,
                    "logs": cell.dir.display().to_string(),
                });
                writeln!(out, "{line}")?;
            }
            cells.push(cell);
        }
    }
    print_matrix(&cells, &selected);
    let failed = cells.iter().filter(|c| matches!(c.verdict, Verdict::Fail(_))).count();
    let passed = cells.iter().filter(|c| c.verdict == Verdict::Pass).count();
    let unsupported = cells.len() - failed - passed;
    println!("\ninterop: {passed} passed, {failed} failed, {unsupported} unsupported");
    for c in cells.iter().filter(|c| matches!(c.verdict, Verdict::Fail(_))) {
        if let Verdict::Fail(reason) = &c.verdict {
            println!(
                "  FAIL {} {} -> {}: {reason}\n       logs: {}",
                c.case,
                c.client,
                c.server,
                c.dir.display()
            );
        }
    }
    if failed > 0 {
        bail!("{failed} interop cell(s) failed");
    }
    if cells.is_empty() {
        bail!("no cell selected");
    }
    Ok(())
}

fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Pass => "pass".into(),
        Verdict::Fail(r) => format!("FAIL: {r}"),
        Verdict::Unsupported(r) => format!("unsupported: {r}"),
    }
}

/// One table per case group: rows client→server, a column per case.
fn print_matrix(cells: &[Cell], cases: &[Case]) {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for c in cells {
        if !pairs.contains(&(c.client, c.server)) {
            pairs.push((c.client, c.server));
        }
    }
    println!();
    print!("{:<22}", "client -> server");
    for case in cases {
        print!(" {:>6}", short(case.name));
    }
    println!();
    for (client, server) in pairs {
        print!("{:<22}", format!("{client} -> {server}"));
        for case in cases {
            let mark = cells
                .iter()
                .find(|c| c.client == client && c.server == server && c.case == case.name)
                .map(|c| match c.verdict {
                    Verdict::Pass => "ok",
                    Verdict::Fail(_) => "FAIL",
                    Verdict::Unsupported(_) => "-",
                })
                .unwrap_or("");
            print!(" {mark:>6}");
        }
        println!();
    }
    println!("(ok = pass, FAIL = fail, - = unsupported; columns:");
    for case in cases {
        println!("  {:>6} = {}", short(case.name), case.name);
    }
    println!(")");
}

/// A 6-character column name.
fn short(name: &str) -> String {
    let abbreviations = [
        ("handshake", "hs"),
        ("transfer", "tr"),
        ("longrtt", "lrtt"),
        ("chacha20", "cc20"),
        ("multiplexing", "mplx"),
        ("retry", "retry"),
        ("resumption", "resume"),
        ("zerortt", "0rtt"),
        ("zerortt-1", "0rtt-1"),
        ("http3", "h3"),
        ("blackhole", "bh"),
        ("keyupdate", "ku"),
        ("ecn", "ecn"),
        ("amplificationlimit", "amp"),
        ("handshakeloss", "hsloss"),
        ("transferloss", "trloss"),
        ("handshakecorruption", "hscorr"),
        ("transfercorruption", "trcorr"),
        ("ipv6", "ipv6"),
        ("v2", "v2"),
        ("rebind-port", "rb-prt"),
        ("rebind-addr", "rb-adr"),
        ("connectionmigration", "cm"),
    ];
    abbreviations
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| name.chars().take(6).collect())
}

/// Builds `mote` (release; `mote relay` is in the same binary) for the relay.
fn build_relay(root: &Path) -> Result<PathBuf> {
    util::run(util::cargo(root, None).args(["build", "--release", "--quiet", "-p", "mote"]))?;
    Ok(root.join("target/release/mote"))
}

/// The run's certificates.
struct Certs {
    ca: PathBuf,
    /// Leaf + key.
    cert: PathBuf,
    key: PathBuf,
    /// A 6-certificate chain (leaf with 30 long SANs, 5 intermediates) and its leaf key.
    long_chain: PathBuf,
    long_key: PathBuf,
}

impl Certs {
    /// Makes a CA, a leaf for `localhost`/127.0.0.1/::1, and the long chain, all ECDSA
    /// P-256, with openssl.
    fn make(dir: &Path) -> Result<Certs> {
        fs::create_dir_all(dir)?;
        let ossl = |args: &[&str]| -> Result<()> {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .context("running openssl")?;
            if !out.status.success() {
                bail!(
                    "openssl {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(())
        };
        let key = |name: &str| -> Result<()> {
            ossl(&[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                name,
            ])
        };
        key("ca.key")?;
        ossl(&[
            "req",
            "-x509",
            "-new",
            "-key",
            "ca.key",
            "-subj",
            "/CN=mote interop CA",
            "-days",
            "3",
            "-out",
            "ca.pem",
        ])?;
        let sign = |csr_key: &str,
                    subject: &str,
                    issuer: (&str, &str),
                    ext: &str,
                    out: &str|
         -> Result<()> {
            fs::write(dir.join("ext.cnf"), ext)?;
            ossl(&["req", "-new", "-key", csr_key, "-subj", subject, "-out", "req.csr"])?;
            ossl(&[
                "x509",
                "-req",
                "-in",
                "req.csr",
                "-CA",
                issuer.0,
                "-CAkey",
                issuer.1,
                "-CAcreateserial",
                "-days",
                "3",
                "-extfile",
                "ext.cnf",
                "-out",
                out,
            ])
        };
        let leaf_ext = |extra: &str| {
            format!(
                "subjectAltName=DNS:localhost,DNS:server,IP:127.0.0.1,IP:::1{extra}\nbasicConstraints=CA:FALSE\n\
                 keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
            )
        };
        let ca_ext = "basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n";
        key("leaf.key")?;
        sign("leaf.key", "/CN=localhost", ("ca.pem", "ca.key"), &leaf_ext(""), "leaf.pem")?;
        // The amplificationlimit chain. The runner's is 9 certificates with 20 long random
        // SANs; webpki (used by mote-tls, rustls and so quinn) refuses paths that deep
        // (MaximumPathDepthExceeded), and what the case measures is size (>= 7500 bytes of
        // server Handshake data), so: 6 certificates (5 intermediates) and 30 long SANs.
        let mut issuer = ("ca.pem".to_string(), "ca.key".to_string());
        let mut chain = Vec::new();
        for i in 1..=5 {
            let (pem, k) = (format!("int{i}.pem"), format!("int{i}.key"));
            key(&k)?;
            sign(
                &k,
                &format!("/CN=mote interop intermediate {i}"),
                (&issuer.0, &issuer.1),
                ca_ext,
                &pem,
            )?;
            chain.push(pem.clone());
            issuer = (pem, k);
        }
        let mut rng = Rng::new(0x5eed);
        let sans: String = (0..30)
            .map(|_| {
                let labels: Vec<String> = (0..4).map(|_| rng.slug(60)).collect();
                format!(",DNS:{}.example", labels.join("."))
            })
            .collect();
        key("long.key")?;
        sign(
            "long.key",
            "/CN=localhost",
            (&issuer.0, &issuer.1),
            &leaf_ext(&sans),
            "long-leaf.pem",
        )?;
        let mut pem = fs::read_to_string(dir.join("long-leaf.pem"))?;
        for c in chain.iter().rev() {
            pem.push_str(&fs::read_to_string(dir.join(c))?);
        }
        fs::write(dir.join("long-chain.pem"), pem)?;
        Ok(Certs {
            ca: dir.join("ca.pem"),
            cert: dir.join("leaf.pem"),
            key: dir.join("leaf.key"),
            long_chain: dir.join("long-chain.pem"),
            long_key: dir.join("long.key"),
        })
    }
}

/// xorshift64*: file contents and names (not security-relevant).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
    fn slug(&mut self, len: usize) -> String {
        (0..len).map(|_| char::from(b'a' + (self.next() % 26) as u8)).collect()
    }
}

/// A free UDP port on `ip` (bound and released; the race with other processes is
/// acceptable on a test machine).
fn free_port(ip: IpAddr) -> Result<u16> {
    Ok(UdpSocket::bind(SocketAddr::new(ip, 0))?.local_addr()?.port())
}

/// Waits until something has bound UDP `addr` (binding it ourselves fails), or the
/// process died, or 15 s passed.
fn wait_bound(addr: SocketAddr, child: &mut Child, what: &str, log: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if UdpSocket::bind(addr).is_err() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let said = fs::read_to_string(log).unwrap_or_default();
            let last =
                said.lines().rev().find(|l| !l.starts_with("$ ")).unwrap_or("").trim().to_string();
            bail!("the {what} exited before listening ({status}): {last}");
        }
        if Instant::now() > deadline {
            bail!("the {what} did not bind {addr} within 15 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills a child on drop.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(mut cmd: Command, log: &Path) -> Result<Guard> {
    let out = fs::OpenOptions::new().create(true).append(true).open(log)?;
    let err = out.try_clone()?;
    writeln!(&out, "$ {}", util::display(&cmd))?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("starting {}", util::display(&cmd)))?;
    Ok(Guard(child))
}

/// Runs a client to completion or the deadline; returns its exit code (None: killed).
fn run_client(cmd: Command, log: &Path, deadline: Instant) -> Result<Option<i32>> {
    let mut guard = spawn(cmd, log)?;
    loop {
        if let Some(status) = guard.0.try_wait()? {
            return Ok(Some(status.code().unwrap_or(-1)));
        }
        if Instant::now() > deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs one (client, server, case) cell and judges it.
fn run_cell(
    relay_bin: &Path,
    certs: &Certs,
    client: &Peer,
    server: &Peer,
    case: &Case,
    dir: &Path,
) -> Result<(Verdict, Vec<String>)> {
    if let Some(why) = case.not_reproducible {
        return Ok((Verdict::Unsupported(why.into()), Vec::new()));
    }
    if let Some(why) = client.unsupported("client", case) {
        return Ok((Verdict::Unsupported(format!("{} client: {why}", client.name)), Vec::new()));
    }
    if let Some(why) = server.unsupported("server", case) {
        return Ok((Verdict::Unsupported(format!("{} server: {why}", server.name)), Vec::new()));
    }
    let _ = fs::remove_dir_all(dir);
    let (www, downloads, qlog) = (dir.join("www"), dir.join("downloads"), dir.join("qlog"));
    // Some peers (ngtcp2) do not create their qlog directory.
    for d in [&www, &downloads, &qlog.join("client"), &qlog.join("server")] {
        fs::create_dir_all(d)?;
    }
    // Files: random names and contents.
    let mut rng = Rng::new(
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7),
    );
    let mut names = Vec::new();
    for &size in &case.files {
        let name = rng.slug(case.name_len);
        let mut data = vec![0u8; size];
        rng.fill(&mut data);
        fs::write(www.join(&name), &data)?;
        names.push(name);
    }
    let ip =
        if case.ipv6 { IpAddr::V6(Ipv6Addr::LOCALHOST) } else { IpAddr::V4(Ipv4Addr::LOCALHOST) };
    let server_addr = SocketAddr::new(ip, free_port(ip)?);
    let relay_addr = SocketAddr::new(ip, free_port(ip)?);
    let (cert, key) = if case.long_chain {
        (&certs.long_chain, &certs.long_key)
    } else {
        (&certs.cert, &certs.key)
    };
    // connectionmigration: the relay's second address stands for the server's preferred
    // address; it forwards to the server's second socket (quinn: its only one).
    let preferred = if case.preferred_address {
        let relay_side = SocketAddr::new(ip, free_port(ip)?);
        let server_side = if server.kind == peers::Kind::Quinn {
            server_addr
        } else {
            SocketAddr::new(ip, free_port(ip)?)
        };
        Some((server_side, relay_side))
    } else {
        None
    };
    let server_keylog = dir.join("server-keys.log");
    let client_keylog = dir.join("client-keys.log");
    let mut server_proc = spawn(
        server.server(&ServerSpec {
            listen: server_addr,
            www: &www,
            cert,
            key,
            retry: case.retry,
            v2: case.v2,
            preferred,
            keylog: &server_keylog,
            qlog_dir: &qlog.join("server"),
        }),
        &dir.join("server.log"),
    )?;
    wait_bound(server_addr, &mut server_proc.0, "server", &dir.join("server.log"))?;
    let relay_log = dir.join("relay.jsonl");
    let mut relay = Command::new(relay_bin);
    relay
        .arg("relay")
        .arg("--listen")
        .arg(relay_addr.to_string())
        .arg("--server")
        .arg(server_addr.to_string());
    relay.arg("--log").arg(&relay_log).arg("--log-bytes");
    if let Some((server_side, relay_side)) = preferred {
        relay.arg("--preferred-listen").arg(relay_side.to_string());
        relay.arg("--preferred-server").arg(server_side.to_string());
    }
    if !case.own_network {
        // The runner's default: ns-3 simple-p2p --delay=15ms --bandwidth=10Mbps --queue=25.
        relay.args(["--delay-ms", "15", "--rate-kbit", "10000", "--queue-bytes", "37500"]);
    }
    relay.args(&case.relay);
    let mut relay_proc = spawn(relay, &dir.join("relay.log"))?;
    wait_bound(relay_addr, &mut relay_proc.0, "relay", &dir.join("relay.log"))?;

    let host = match ip {
        IpAddr::V6(_) => format!("[{ip}]:{}", relay_addr.port()),
        IpAddr::V4(_) => format!("{ip}:{}", relay_addr.port()),
    };
    let url = |n: &str| format!("https://{host}/{n}");
    let session = dir.join("session.bin");
    let deadline = Instant::now() + case.timeout;
    let runs: Vec<(Vec<String>, bool)> = match case.plan {
        Plan::Single => vec![(names.iter().map(|n| url(n)).collect(), false)],
        Plan::Resume | Plan::ZeroRtt => vec![
            (vec![url(&names[0])], false),
            (names[1..].iter().map(|n| url(n)).collect(), case.plan == Plan::ZeroRtt),
        ],
        Plan::Multiconnect => names.iter().map(|n| (vec![url(n)], false)).collect(),
    };
    let mut notes = Vec::new();
    let alpn = if client.h3_only() || server.h3_only() {
        if case.alpn != "h3" {
            let who = if client.kind == peers::Kind::MoteDevice {
                "mote get --device (the HTTP/3 device client)"
            } else {
                "ngtcp2's gtlsclient/gtlsserver"
            };
            notes.push(format!("run over h3: {who} speaks only h3"));
        }
        "h3"
    } else {
        case.alpn
    };
    let mut client_failure = None;
    for (i, (urls, zero_rtt)) in runs.into_iter().enumerate() {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let spec = ClientSpec {
            urls,
            output: &downloads,
            ca: &certs.ca,
            alpn,
            session_file: matches!(case.plan, Plan::Resume | Plan::ZeroRtt)
                .then_some(session.as_path()),
            zero_rtt,
            chacha20: case.chacha20,
            v2: case.v2,
            key_update: case.key_update,
            keylog: &client_keylog,
            qlog_dir: &qlog.join("client"),
            timeout_ms: remaining.as_millis() as u64,
        };
        match run_client(client.client(&spec, relay_addr), &dir.join("client.log"), deadline)? {
            Some(0) => {}
            Some(127) => {
                return Ok((
                    Verdict::Unsupported(format!("{} client exited 127", client.name)),
                    Vec::new(),
                ));
            }
            Some(code) => {
                client_failure = Some(format!("client run {} exited {code}", i + 1));
                break;
            }
            None => {
                client_failure =
                    Some(format!("client run {} timed out after {:?}", i + 1, case.timeout));
                break;
            }
        }
    }
    // Let the last datagrams (CONNECTION_CLOSE) pass the relay before judging.
    std::thread::sleep(Duration::from_millis(300));
    drop(relay_proc);
    if let Some(status) = server_proc.0.try_wait()? {
        client_failure.get_or_insert(format!("the server exited during the test ({status})"));
    }
    drop(server_proc);
    let keylogs = [client_keylog.as_path(), server_keylog.as_path()];
    let evidence = judge::Evidence::load(&relay_log, &keylogs, &www, &downloads, &names)?;
    let (verdict, more) = judge::judge(case, &evidence, client_failure);
    notes.extend(more);
    Ok((verdict, notes))
}
