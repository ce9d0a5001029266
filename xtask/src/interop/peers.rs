//! The implementations in the matrix: how each is installed or built (package registries
//! only) and how its client and server are started.
//!
//! mote, and the aioquic and quic-go harnesses in `xtask/peers/quic-interop/`, share mote's
//! command line (`serve --listen --www --cert --key [--retry] [--alpn] [--keylog]
//! [--qlog-dir]`, `get URL... --output --ca [--alpn] [--session-file] [--0rtt] [--chacha20]
//! [--v2] [--key-update] [--migrate] [--keylog] [--qlog-dir] [--timeout-ms]`); ngtcp2's
//! `gtlsclient`/`gtlsserver` (Debian) get their own.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::util;

/// The Python packages of the aioquic harness, pinned.
const PY_PINS: &[&str] = &["aioquic==1.7.2", "cryptography==50.0.2"];

/// Every implementation name `--peers` accepts (besides `mote`).
pub const PEERS: &[&str] = &["aioquic", "quic-go", "ngtcp2", "quinn"];

/// Which implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// mote's own `mote serve` / `mote get`.
    Mote,
    /// `mote get --device`: the device connection and the HTTP/3 device client (the
    /// firmware's stack, one request at a time, h3 only) as a client.
    MoteDevice,
    /// aioquic (PyPI) through `aioquic_peer.py`.
    Aioquic,
    /// quic-go (Go module proxy) through the `quicgo-peer` harness.
    QuicGo,
    /// ngtcp2 0.12 `gtlsclient`/`gtlsserver` (Debian), HTTP/3 only.
    Ngtcp2,
    /// quinn 0.11 with h3/h3-quinn (crates.io) through the `quinn-peer` harness.
    Quinn,
}

/// One implementation, ready to start.
#[derive(Clone, Debug)]
pub struct Peer {
    /// Name in the matrix.
    pub name: &'static str,
    /// Which implementation.
    pub kind: Kind,
    /// Program and leading arguments, before `serve`/`get`.
    prefix: Vec<PathBuf>,
    /// `get --help` text (mote: to tell which options this build has).
    get_help: String,
}

/// What the server is asked to do.
pub struct ServerSpec<'a> {
    /// Listening address.
    pub listen: SocketAddr,
    /// Document root.
    pub www: &'a Path,
    /// Certificate chain and key (PEM).
    pub cert: &'a Path,
    /// Private key (PEM, PKCS #8).
    pub key: &'a Path,
    /// Validate addresses with Retry.
    pub retry: bool,
    /// Upgrade clients that offer QUIC v2 (RFC 9368; `mote serve --v2`).
    pub v2: bool,
    /// Offer a preferred address: (where the server may listen for it, what it advertises
    /// — the relay's second address).
    pub preferred: Option<(SocketAddr, SocketAddr)>,
    /// Key log file.
    pub keylog: &'a Path,
    /// qlog directory.
    pub qlog_dir: &'a Path,
}

/// What one client run is asked to do.
pub struct ClientSpec<'a> {
    /// URLs, all on one connection.
    pub urls: Vec<String>,
    /// Download directory.
    pub output: &'a Path,
    /// CA certificate (PEM).
    pub ca: &'a Path,
    /// ALPN.
    pub alpn: &'a str,
    /// Session file shared by resumption runs.
    pub session_file: Option<&'a Path>,
    /// Send the requests in 0-RTT.
    pub zero_rtt: bool,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    pub chacha20: bool,
    /// Start in v1 offering v2.
    pub v2: bool,
    /// Update keys early.
    pub key_update: bool,
    /// Key log file.
    pub keylog: &'a Path,
    /// qlog directory.
    pub qlog_dir: &'a Path,
    /// Overall timeout.
    pub timeout_ms: u64,
}

impl Peer {
    /// Whether this implementation speaks only HTTP/3 (ngtcp2's Debian examples), so its
    /// cells run over h3 whatever the case's ALPN.
    pub fn h3_only(&self) -> bool {
        matches!(self.kind, Kind::Ngtcp2 | Kind::MoteDevice)
    }

    /// Why this implementation cannot do `case` in `role` ("client"/"server"), if so.
    pub fn unsupported(&self, role: &str, case: &super::cases::Case) -> Option<String> {
        let client = role == "client";
        match self.kind {
            Kind::MoteDevice => device_unsupported(&self.get_help, case),
            Kind::Mote if client => {
                let flags = [
                    (case.chacha20, "--chacha20"),
                    (case.v2, "--v2"),
                    (case.key_update, "--key-update"),
                    (case.plan == super::cases::Plan::ZeroRtt, "--0rtt"),
                ];
                flags
                    .iter()
                    .find(|(wanted, flag)| *wanted && !self.get_help.contains(flag))
                    .map(|(_, flag)| format!("this mote get has no {flag}"))
            }
            Kind::QuicGo if client && (case.chacha20 || case.key_update) => Some(
                "quic-go's public API cannot restrict cipher suites or force a key update".into(),
            ),
            // quic-go implements no compatible version negotiation (RFC 9368): its server
            // stays in v1 when a client offers v2, its client can only start in v2, and
            // its own interop endpoint answers the v2 test case with 127.
            Kind::QuicGo if case.v2 => Some(
                "no compatible version negotiation (its interop endpoint exits 127 for v2)".into(),
            ),
            Kind::Quinn if case.v2 => Some("quinn supports QUIC v1 only".into()),
            Kind::Quinn
                if client
                    && case.plan != super::cases::Plan::Single
                    && case.plan != super::cases::Plan::Multiconnect =>
            {
                Some(
                    "rustls keeps sessions in memory only: no resumption across two client runs"
                        .into(),
                )
            }
            Kind::Ngtcp2 if case.v2 => Some("ngtcp2 0.12 (Debian 12) has only the v2 draft".into()),
            // ECN: aioquic neither sets nor reads ECN codepoints (no ECN in its socket code
            // or its ACK frames).
            Kind::Aioquic if case.name == "ecn" => {
                Some("aioquic implements no ECN (never marks packets, never sends ACK_ECN)".into())
            }
            // connectionmigration (RFC 9000 §9.6): which side can do its part.
            // aioquic 1.7's client probes and moves to a preferred address; its server has
            // no setting to offer one.
            Kind::Aioquic if !client && case.preferred_address => {
                Some("aioquic's server cannot offer a preferred_address".into())
            }
            Kind::QuicGo if case.preferred_address => Some(if client {
                "quic-go's client does not migrate (it ignores preferred_address)".into()
            } else {
                "quic-go's server cannot offer a preferred_address".into()
            }),
            Kind::Quinn if client && case.preferred_address => {
                Some("quinn's client does not move to the server's preferred_address".into())
            }
            Kind::Ngtcp2 if !client && case.preferred_address => Some(
                "gtlsserver binds the preferred address it offers, so that path cannot pass \
                 the relay (it would bypass the link and the log)"
                    .into(),
            ),
            _ => None,
        }
    }

    /// The server command.
    pub fn server(&self, s: &ServerSpec<'_>) -> Command {
        if self.kind == Kind::Ngtcp2 {
            let mut cmd = Command::new(&self.prefix[1]);
            cmd.args(["-q", "-d"]).arg(s.www).arg("--qlog-dir").arg(s.qlog_dir);
            if s.retry {
                cmd.arg("-V");
            }
            cmd.arg(s.listen.ip().to_string()).arg(s.listen.port().to_string());
            cmd.arg(s.key).arg(s.cert).env("SSLKEYLOGFILE", s.keylog);
            return cmd;
        }
        let mut cmd = self.command("serve");
        cmd.arg("--listen").arg(s.listen.to_string());
        cmd.arg("--www").arg(s.www).arg("--cert").arg(s.cert).arg("--key").arg(s.key);
        cmd.args(["--alpn", "hq-interop,h3"]);
        cmd.arg("--keylog").arg(s.keylog).arg("--qlog-dir").arg(s.qlog_dir);
        if s.retry {
            cmd.arg("--retry");
        }
        if s.v2 {
            cmd.arg("--v2");
        }
        if let Some((listen, advertised)) = s.preferred {
            // quinn has one socket: the relay forwards the preferred address to it.
            if self.kind != Kind::Quinn {
                cmd.arg("--preferred-address").arg(listen.to_string());
            }
            cmd.arg("--advertise-preferred").arg(advertised.to_string());
        }
        cmd
    }

    /// The client command of one run.
    pub fn client(&self, c: &ClientSpec<'_>, server: SocketAddr) -> Command {
        if self.kind == Kind::Ngtcp2 {
            let mut cmd = Command::new(&self.prefix[0]);
            cmd.args(["-q", "--exit-on-all-streams-close", "--download"]).arg(c.output);
            cmd.arg("--qlog-dir").arg(c.qlog_dir);
            cmd.arg("--timeout").arg(format!("{}ms", c.timeout_ms.min(30_000)));
            if let Some(session) = c.session_file {
                cmd.arg("--session-file").arg(session);
                cmd.arg("--tp-file").arg(session.with_extension("tp"));
                if !c.zero_rtt {
                    cmd.arg("--disable-early-data");
                }
            }
            if c.chacha20 {
                cmd.arg("--ciphers=NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305");
            }
            if c.key_update {
                cmd.arg("--key-update=100ms");
            }
            cmd.arg(server.ip().to_string()).arg(server.port().to_string());
            cmd.args(&c.urls).env("SSLKEYLOGFILE", c.keylog);
            return cmd;
        }
        let mut cmd = self.command("get");
        if self.kind == Kind::MoteDevice {
            cmd.arg("--device");
        }
        cmd.args(&c.urls);
        cmd.arg("--output").arg(c.output).arg("--ca").arg(c.ca);
        cmd.args(["--alpn", c.alpn]);
        cmd.arg("--keylog").arg(c.keylog).arg("--qlog-dir").arg(c.qlog_dir);
        cmd.arg("--timeout-ms").arg(c.timeout_ms.to_string());
        if let Some(session) = c.session_file {
            cmd.arg("--session-file").arg(session);
        }
        for (on, flag) in [
            (c.zero_rtt, "--0rtt"),
            (c.chacha20, "--chacha20"),
            (c.v2, "--v2"),
            (c.key_update, "--key-update"),
        ] {
            if on {
                cmd.arg(flag);
            }
        }
        cmd
    }

    fn command(&self, sub: &str) -> Command {
        let mut cmd = Command::new(&self.prefix[0]);
        cmd.args(&self.prefix[1..]).arg(sub);
        cmd
    }
}

/// Builds `mote` (release) and checks it has `serve` and `get`.
pub fn mote(root: &Path) -> Result<Peer> {
    util::run(util::cargo(root, None).args(["build", "--release", "--quiet", "-p", "mote"]))?;
    let bin = root.join("target/release/mote");
    let help = |sub: &str| {
        Command::new(&bin).args([sub, "--help"]).output().ok().filter(|o| o.status.success())
    };
    let (Some(_), Some(get)) = (help("serve"), help("get")) else {
        bail!(
            "this mote has no `serve`/`get` subcommands yet (they come with mote-net); \
             run with --peers for peer-against-peer cells only"
        );
    };
    Ok(Peer {
        name: "mote",
        kind: Kind::Mote,
        prefix: vec![bin],
        get_help: String::from_utf8_lossy(&get.stdout).into_owned(),
    })
}

/// `mote get --device` as a client (the same binary as [`mote`]), if this build has it.
pub fn mote_device(mote: &Peer) -> Option<Peer> {
    mote.get_help.contains("--device").then(|| Peer {
        name: "mote-dev",
        kind: Kind::MoteDevice,
        prefix: mote.prefix.clone(),
        get_help: mote.get_help.clone(),
    })
}

/// Why `mote get --device` cannot do `case`, if so: what the device connection and the
/// one-request-at-a-time HTTP/3 device client leave out by design.
fn device_unsupported(get_help: &str, case: &super::cases::Case) -> Option<String> {
    let why = if case.v2 {
        "the device connection offers no QUIC v2 (--device refuses --v2)"
    } else if case.preferred_address {
        "the device connection has one path: it does not move to a preferred address"
    } else if case.name == "ecn" {
        "the device connection marks no packets ECT (feature ecn is the general connection's)"
    } else if case.name == "multiplexing" {
        "one request at a time: 1999 requests one after the other do not fit the case"
    } else if case.name == "zerortt" {
        "one request at a time: only the first of the 39 resumed requests can leave in 0-RTT \
         (the case allows 5000 bytes of requests in 1-RTT); zerortt-1 is its one-request share"
    } else if case.chacha20 && !get_help.contains("--chacha20") {
        "this mote get has no --chacha20"
    } else {
        return None;
    };
    Some(why.into())
}

/// Installs or builds one peer.
pub fn peer(name: &str, root: &Path, work: &Path, python: &str) -> Result<Peer> {
    let harness = root.join("xtask/peers/quic-interop");
    match name {
        "aioquic" => {
            let py = venv(&work.join("venv"), python)?;
            Ok(Peer {
                name: "aioquic",
                kind: Kind::Aioquic,
                prefix: vec![py, harness.join("aioquic_peer.py")],
                get_help: String::new(),
            })
        }
        "quic-go" => {
            let bin = work.join("quicgo-peer");
            util::run(
                Command::new("go")
                    .args(["build", "-o"])
                    .arg(&bin)
                    .arg(".")
                    .current_dir(harness.join("quic-go"))
                    .env("GOFLAGS", "-mod=mod"),
            )
            .context("building the quic-go harness (needs Go >= 1.26 and the Go module proxy)")?;
            Ok(Peer {
                name: "quic-go",
                kind: Kind::QuicGo,
                prefix: vec![bin],
                get_help: String::new(),
            })
        }
        "quinn" => {
            // Its own Cargo project and target directory, so the workspace never builds quinn.
            let dir = harness.join("quinn-peer");
            let target = work.join("quinn-target");
            util::run(
                util::cargo(&dir, None)
                    .args(["build", "--release", "--quiet", "--target-dir"])
                    .arg(&target),
            )
            .context("building the quinn harness")?;
            Ok(Peer {
                name: "quinn",
                kind: Kind::Quinn,
                prefix: vec![target.join("release/quinn-peer")],
                get_help: String::new(),
            })
        }
        "ngtcp2" => {
            let client = PathBuf::from("/usr/bin/gtlsclient");
            let server = PathBuf::from("/usr/sbin/gtlsserver");
            if !client.exists() || !server.exists() {
                bail!("ngtcp2 is not installed: apt-get install -y ngtcp2-client ngtcp2-server");
            }
            Ok(Peer {
                name: "ngtcp2",
                kind: Kind::Ngtcp2,
                prefix: vec![client, server],
                get_help: String::new(),
            })
        }
        other => bail!("unknown peer {other:?} (known: {})", PEERS.join(", ")),
    }
}

/// The venv's Python with [`PY_PINS`] installed (made once; remade when the pins change).
fn venv(dir: &Path, python: &str) -> Result<PathBuf> {
    let bin = dir.join("bin/python");
    let marker = dir.join("mote-pins.txt");
    let wanted = PY_PINS.join("\n");
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
            .args(PY_PINS),
    )
    .context("installing aioquic into the venv")?;
    std::fs::write(&marker, wanted).with_context(|| format!("writing {}", marker.display()))?;
    Ok(bin)
}
