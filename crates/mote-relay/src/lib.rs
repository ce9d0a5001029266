//! `mote relay`: a userspace UDP link emulator between one QUIC client and one server,
//! standing in for the interop runner's ns-3 network (kernel netem is not available).
//!
//! The client sends to `--listen`; the relay forwards each datagram to `--server` from an
//! *upstream* socket of its own, one per client address (a NAT mapping), and sends the
//! server's answers back to the client from the listening socket. On the way each
//! direction applies, in order: the drop list by datagram index ([`impair`]), then
//! mote-sim's link model driven by real elapsed time (blackholes, MTU, rate with a
//! tail-drop queue, random loss with a burst cap, delay and jitter, corruption of one
//! byte — never of a Version Negotiation packet). NAT rebinding replaces the current
//! client's upstream socket with one on a new port (`--rebind-port-every`) or a new
//! 127.0.0.x address (`--rebind-addr-every`; Linux routes all of 127/8 to lo), so the
//! server sees the client move; packets the server still sends to the old mapping are
//! lost, as behind a real NAT.
//!
//! Each datagram keeps the ECN codepoint of its IP header (read and re-sent through
//! quinn-udp), as the runner's ns-3 link does, so endpoints can validate ECN (RFC 9000
//! §13.4) and the log shows each datagram's mark. `--preferred-listen` opens a second
//! listening address that forwards to `--preferred-server` (the server's preferred address,
//! RFC 9000 §9.6, as clients see it through the relay): a client moving there gets a NAT
//! mapping of its own, so the server sees a new path.
//!
//! `--log FILE` writes one JSON line per datagram ([`inspect`] reads the unprotected
//! header fields: packet types, version, CIDs, token length and hash) and per rebinding;
//! `cargo xtask interop` judges the test cases from it.

pub mod impair;
pub mod inspect;
mod relay;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use mote_sim::{Blackhole, Duration, Instant, LinkConfig, LinkProfile};

/// Arguments of `mote relay`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Address the client sends to.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The server's address.
    #[arg(long, value_name = "ADDR")]
    pub server: SocketAddr,
    /// A mote-sim link profile (wlan, nbiot, nbiot-nb1, lossy) as the base link; none is an
    /// ideal link (no delay, no rate limit).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// One-way delay in ms, each direction (replaces the profile's).
    #[arg(long, value_name = "MS")]
    pub delay_ms: Option<u64>,
    /// Extra delay drawn uniformly from [0, MS] per datagram.
    #[arg(long, value_name = "MS")]
    pub jitter_ms: Option<u64>,
    /// Bottleneck rate in kbit/s, each direction (replaces the profile's).
    #[arg(long, value_name = "KBIT")]
    pub rate_kbit: Option<u64>,
    /// Tail-drop queue size in bytes behind the bottleneck (replaces the profile's).
    #[arg(long, value_name = "BYTES")]
    pub queue_bytes: Option<usize>,
    /// Drop these client→server datagrams (1-based indices, comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub drop_to_server: Vec<u64>,
    /// Drop these server→client datagrams (1-based indices, comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub drop_to_client: Vec<u64>,
    /// Random loss probability per datagram, each direction (replaces the profile's).
    #[arg(long, value_name = "P")]
    pub loss: Option<f64>,
    /// Longest run of datagrams random loss may drop in a row (0: no cap).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub max_burst: usize,
    /// Probability that a datagram gets one byte within its first 50 changed (never a
    /// Version Negotiation packet).
    #[arg(long, value_name = "P")]
    pub corrupt: Option<f64>,
    /// Drop everything both ways from START_MS for DUR_MS after the relay starts
    /// (repeatable).
    #[arg(long = "blackhole", value_name = "START_MS:DUR_MS", value_parser = parse_window)]
    pub blackholes: Vec<(u64, u64)>,
    /// Give the client a new source port towards the server every MS.
    #[arg(long, value_name = "MS")]
    pub rebind_port_every: Option<u64>,
    /// Give the client a new source address (127.0.0.x) towards the server every MS.
    #[arg(long, value_name = "MS")]
    pub rebind_addr_every: Option<u64>,
    /// When the first rebinding happens (default: after one period).
    #[arg(long, value_name = "MS")]
    pub first_rebind_ms: Option<u64>,
    /// A second address the client may send to: the server's preferred address as clients
    /// see it (the server advertises this one).
    #[arg(long, value_name = "ADDR")]
    pub preferred_listen: Option<SocketAddr>,
    /// Where datagrams to `--preferred-listen` go (default: `--server`, for a server that
    /// receives on one socket; then it sees the client arrive from a new address).
    #[arg(long, value_name = "ADDR", requires = "preferred_listen")]
    pub preferred_server: Option<SocketAddr>,
    /// Write one JSON line per datagram and per rebinding to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Also log each datagram's bytes (hex, as the sender sent them), so a checker with
    /// the endpoints' key log can decrypt them.
    #[arg(long)]
    pub log_bytes: bool,
    /// Seed of the loss, jitter and corruption draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Which address a NAT rebinding changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RebindKind {
    /// A new source port, same address.
    Port,
    /// A new source address (127.0.0.x), any port.
    Addr,
}

/// The validated configuration of a relay.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address the client sends to.
    pub listen: SocketAddr,
    /// The server.
    pub server: SocketAddr,
    /// A second listening address and the server address it forwards to.
    pub preferred: Option<(SocketAddr, SocketAddr)>,
    /// Client → server link.
    pub to_server: LinkConfig,
    /// Server → client link.
    pub to_client: LinkConfig,
    /// Drop lists by 1-based index: client → server, server → client.
    pub drop_lists: (BTreeSet<u64>, BTreeSet<u64>),
    /// NAT rebinding: kind, first time, period.
    pub rebind: Option<(RebindKind, Duration, Duration)>,
    /// The JSON-lines log.
    pub log: Option<PathBuf>,
    /// Whether the log carries each datagram's bytes.
    pub log_bytes: bool,
    /// Seed of the random draws.
    pub seed: u64,
}

/// Parses `START_MS:DUR_MS`.
fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once(':').ok_or("expected START_MS:DUR_MS")?;
    let start = a.trim().parse().map_err(|_| format!("bad start {a:?}"))?;
    let dur = b.trim().parse().map_err(|_| format!("bad duration {b:?}"))?;
    Ok((start, dur))
}

/// A probability argument, checked to lie in `[0, 1]`.
fn probability(name: &str, p: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&p) {
        bail!("--{name} must be a probability in [0, 1], got {p}");
    }
    Ok(p)
}

impl Args {
    /// Checks the arguments and builds the two link directions.
    pub fn config(&self) -> Result<Config> {
        let base = match &self.profile {
            Some(name) => name.parse::<LinkProfile>().map_err(|e| anyhow::anyhow!("{e}"))?,
            None => LinkProfile::symmetric(LinkConfig::default()),
        };
        let loss = self.loss.map(|p| probability("loss", p)).transpose()?;
        let corrupt = self.corrupt.map(|p| probability("corrupt", p)).transpose()?;
        let blackholes: Vec<Blackhole> = self
            .blackholes
            .iter()
            .map(|&(start, dur)| {
                Blackhole::new(Instant(start.saturating_mul(1000)), Duration::from_millis(dur))
            })
            .collect();
        let profile = base.map(|c| {
            if let Some(ms) = self.delay_ms {
                c.delay = Duration::from_millis(ms);
            }
            if let Some(ms) = self.jitter_ms {
                c.jitter = Duration::from_millis(ms);
            }
            if let Some(kbit) = self.rate_kbit {
                c.rate_bps = Some(kbit.saturating_mul(1000));
            }
            if let Some(bytes) = self.queue_bytes {
                c.buffer_bytes = bytes;
            }
            if let Some(p) = loss {
                c.loss = p;
            }
            c.max_burst = self.max_burst;
            if let Some(p) = corrupt {
                // The runner's corrupt-rate scenario: one byte within the first 50.
                c.corrupt = p;
                c.corrupt_range = 0..50;
            }
            c.blackholes.extend(blackholes.iter().copied());
        });
        let rebind = match (self.rebind_port_every, self.rebind_addr_every) {
            (Some(_), Some(_)) => {
                bail!("choose one of --rebind-port-every and --rebind-addr-every")
            }
            (Some(ms), None) => Some((RebindKind::Port, ms)),
            (None, Some(ms)) => Some((RebindKind::Addr, ms)),
            (None, None) => None,
        };
        let rebind = match rebind {
            Some((_, 0)) => bail!("a rebinding period must be at least 1 ms"),
            Some((kind, ms)) => {
                let first = self.first_rebind_ms.unwrap_or(ms);
                Some((kind, Duration::from_millis(first), Duration::from_millis(ms)))
            }
            None => None,
        };
        if matches!(rebind, Some((RebindKind::Addr, ..))) && !is_v4_loopback(self.server) {
            bail!("--rebind-addr-every needs a 127.x server address (it moves between 127.0.0.x)");
        }
        Ok(Config {
            listen: self.listen,
            server: self.server,
            preferred: self
                .preferred_listen
                .map(|l| (l, self.preferred_server.unwrap_or(self.server))),
            to_server: profile.up,
            to_client: profile.down,
            drop_lists: (
                self.drop_to_server.iter().copied().collect(),
                self.drop_to_client.iter().copied().collect(),
            ),
            rebind,
            log: self.log.clone(),
            log_bytes: self.log_bytes,
            seed: self.seed,
        })
    }
}

/// Whether `addr` is an IPv4 loopback address.
fn is_v4_loopback(addr: SocketAddr) -> bool {
    matches!(addr, SocketAddr::V4(a) if a.ip().is_loopback())
}

/// Runs `mote relay` until SIGINT or SIGTERM.
pub fn run(args: &Args) -> Result<()> {
    let config = args.config()?;
    let preferred = config.preferred;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let ready = |local| {
            println!("mote relay: listening on {local}, server {}", args.server);
            if let Some((listen, server)) = preferred {
                println!("mote relay: listening on {listen}, server {server} (preferred address)");
            }
            std::io::Write::flush(&mut std::io::stdout()).ok();
        };
        let shutdown = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        relay::Relay::run(config, ready, shutdown).await
    })
}

/// Runs a relay inside an existing tokio runtime until `shutdown` completes; `ready` gets
/// the listening address once it is bound (for tests and embedding).
pub async fn run_until(
    config: Config,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    relay::Relay::run(config, ready, shutdown).await
}
