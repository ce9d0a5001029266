//! The relay's event loop: sockets, NAT mappings, the delivery queue and the log.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, IoSliceMut, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, Result};
use mote_net::socket::{recv_info, UdpSocket};
use mote_quic::recovery::Ecn;
use mote_sim::Instant;
use quinn_udp::RecvMeta;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::impair::{self, Impairment, Verdict};
use crate::{inspect, Config, RebindKind};

/// Client addresses with a NAT mapping at once; the least recently used is forgotten
/// beyond this (handshakeloss opens 50 connections, possibly from 50 ports).
const MAX_MAPPINGS: usize = 64;
/// Datagrams waiting for their delivery time at once; beyond this a datagram is dropped
/// (`relay_full`). A link with a rate limit never gets near it (its queue is bounded).
const MAX_PENDING: usize = 65_536;
/// Datagrams received but not yet judged (between the socket readers and the loop).
const CHANNEL: usize = 1024;
/// Receive buffer: one GRO batch (at most 64 KiB of UDP payload) at a time.
const RECV_BUFFER: usize = 1 << 17;

/// Client → server or server → client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Dir {
    ToServer,
    ToClient,
}

impl Dir {
    fn name(self) -> &'static str {
        match self {
            Dir::ToServer => "to_server",
            Dir::ToClient => "to_client",
        }
    }
}

/// A datagram read by one of the socket tasks, with the ECN codepoint of its IP header.
enum Incoming {
    /// From the client, on listening socket `listener` (0: `--listen`, 1:
    /// `--preferred-listen`).
    FromClient { listener: usize, from: SocketAddr, ecn: Ecn, bytes: Vec<u8> },
    /// From the server, on the upstream socket of mapping `id`.
    FromServer { id: u64, ecn: Ecn, bytes: Vec<u8> },
}

/// The name of an ECN codepoint in the log.
fn ecn_name(ecn: Ecn) -> &'static str {
    match ecn {
        Ecn::NotEct => "not-ect",
        Ecn::Ect0 => "ect0",
        Ecn::Ect1 => "ect1",
        Ecn::Ce => "ce",
    }
}

/// A listening address the client may send to, and where its datagrams go.
struct Listener {
    socket: Arc<UdpSocket>,
    local: SocketAddr,
    server: SocketAddr,
}

/// A NAT mapping: the upstream socket the server sees as the client, one per client address
/// and listening address (so a client moving to the preferred address gets a new one).
struct Mapping {
    client: SocketAddr,
    listener: usize,
    id: u64,
    socket: Arc<UdpSocket>,
    local: SocketAddr,
    /// The server address this mapping sends to.
    server: SocketAddr,
    reader: JoinHandle<()>,
    last_used: Instant,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A datagram waiting for its arrival time.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    at: Instant,
    seq: u64,
    dir: Dir,
    client: SocketAddr,
    listener: usize,
    ecn: u8,
    bytes: Vec<u8>,
}

/// [`Ecn`] as the IP header's two bits (`Pending` must be ordered).
fn ecn_bits(ecn: Ecn) -> u8 {
    match ecn {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ect0 => 2,
        Ecn::Ce => 3,
    }
}

fn ecn_of_bits(bits: u8) -> Ecn {
    match bits & 3 {
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        3 => Ecn::Ce,
        _ => Ecn::NotEct,
    }
}

/// The relay's state.
pub(crate) struct Relay {
    config: Config,
    start: tokio::time::Instant,
    listeners: Vec<Listener>,
    to_server: Impairment,
    to_client: Impairment,
    mappings: Vec<Mapping>,
    next_id: u64,
    /// The client address that sent last and the listener it used (the mapping a
    /// rebinding moves).
    current: Option<(SocketAddr, usize)>,
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    tx: mpsc::Sender<Incoming>,
    log: Option<BufWriter<File>>,
    next_rebind: Option<Instant>,
    /// Next 127.0.0.x host byte for address rebinding.
    next_host: u8,
    forwarded: u64,
    dropped: u64,
}

impl Relay {
    pub(crate) async fn run(
        config: Config,
        ready: impl FnOnce(SocketAddr),
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<()> {
        let mut listeners = Vec::new();
        for (addr, server) in
            std::iter::once((config.listen, config.server)).chain(config.preferred)
        {
            let socket = UdpSocket::bind(addr).with_context(|| format!("binding {addr}"))?;
            let local = socket.local_addr()?;
            listeners.push(Listener { socket: Arc::new(socket), local, server });
        }
        let log = match &config.log {
            Some(path) => Some(BufWriter::new(
                File::create(path).with_context(|| format!("creating {}", path.display()))?,
            )),
            None => None,
        };
        let (tx, mut rx) = mpsc::channel(CHANNEL);
        let readers: Vec<JoinHandle<()>> = listeners
            .iter()
            .enumerate()
            .map(|(i, l)| spawn_reader(l.socket.clone(), tx.clone(), Source::Listener(i)))
            .collect();
        let (up, down) = (config.to_server.clone(), config.to_client.clone());
        let (drop_up, drop_down) = config.drop_lists.clone();
        let mut relay = Relay {
            start: tokio::time::Instant::now(),
            listeners,
            to_server: Impairment::new(up, drop_up, config.seed, 0),
            to_client: Impairment::new(down, drop_down, config.seed, 1),
            mappings: Vec::new(),
            next_id: 0,
            current: None,
            pending: BinaryHeap::new(),
            seq: 0,
            tx,
            log,
            next_rebind: config.rebind.map(|(_, first, _)| Instant::ZERO + first),
            next_host: 2,
            forwarded: 0,
            dropped: 0,
            config,
        };
        ready(relay.listeners[0].local);
        tokio::pin!(shutdown);
        loop {
            let delivery = relay.pending.peek().map(|Reverse(p)| relay.deadline(p.at));
            let rebind = relay.next_rebind.map(|t| relay.deadline(t));
            tokio::select! {
                incoming = rx.recv() => match incoming {
                    Some(incoming) => relay.on_incoming(incoming).await?,
                    None => break,
                },
                () = sleep_until(delivery) => relay.deliver_due().await,
                () = sleep_until(rebind) => relay.rebind().await?,
                () = &mut shutdown => break,
            }
            if let Some(log) = &mut relay.log {
                log.flush().context("writing the log")?;
            }
        }
        for reader in readers {
            reader.abort();
        }
        if let Some(log) = &mut relay.log {
            log.flush().context("writing the log")?;
        }
        eprintln!("mote relay: {} datagrams forwarded, {} dropped", relay.forwarded, relay.dropped);
        Ok(())
    }

    /// Time since the relay started, on mote-sim's clock.
    fn now(&self) -> Instant {
        let us = self.start.elapsed().as_micros();
        Instant(u64::try_from(us).unwrap_or(u64::MAX))
    }

    /// The tokio instant of a relay time.
    fn deadline(&self, at: Instant) -> tokio::time::Instant {
        self.start + std::time::Duration::from_micros(at.0)
    }

    async fn on_incoming(&mut self, incoming: Incoming) -> Result<()> {
        let now = self.now();
        let (dir, client, listener, path, ecn, bytes) = match incoming {
            Incoming::FromClient { listener, from, ecn, bytes } => {
                let path = self.mapping_for(from, listener, now).await?;
                self.current = Some((from, listener));
                (Dir::ToServer, from, listener, path, ecn, bytes)
            }
            Incoming::FromServer { id, ecn, bytes } => {
                // Answers to a mapping that a rebinding replaced are gone, as behind a NAT.
                let Some(m) = self.mappings.iter_mut().find(|m| m.id == id) else {
                    return Ok(());
                };
                m.last_used = now;
                (Dir::ToClient, m.client, m.listener, m.local, ecn, bytes)
            }
        };
        let (listen, server) = match self.listeners.get(listener) {
            Some(l) => (l.local, l.server),
            None => return Ok(()),
        };
        let impairment = match dir {
            Dir::ToServer => &mut self.to_server,
            Dir::ToClient => &mut self.to_client,
        };
        let (index, verdict) = impairment.judge(now, &bytes);
        let mut record = json!({
            "t_us": now.0,
            "dir": dir.name(),
            "index": index,
            "size": bytes.len(),
            "client": client.to_string(),
            "path": path.to_string(),
            "listen": listen.to_string(),
            "server": server.to_string(),
            "ecn": ecn_name(ecn),
            "packets": inspect::packets(&bytes).iter().map(|p| p.to_json()).collect::<Vec<_>>(),
        });
        if self.config.log_bytes {
            record["hex"] = json!(inspect::hex(&bytes));
        }
        match verdict {
            Verdict::Drop(reason) => {
                self.dropped += 1;
                record["fate"] = json!("dropped");
                record["reason"] = json!(reason);
            }
            Verdict::Deliver { at, corrupt, duplicate } => {
                if self.pending.len() >= MAX_PENDING {
                    self.dropped += 1;
                    record["fate"] = json!("dropped");
                    record["reason"] = json!("relay_full");
                } else {
                    record["fate"] =
                        json!(if corrupt.is_some() { "corrupted" } else { "forwarded" });
                    record["arrive_us"] = json!(at.0);
                    if let Some(c) = corrupt {
                        record["corrupt_pos"] = json!(c.pos);
                    }
                    if let Some((dup_at, dup_corrupt)) = duplicate {
                        let mut copy = bytes.clone();
                        if let Some(c) = dup_corrupt {
                            impair::apply(&mut copy, c);
                        }
                        record["duplicate_us"] = json!(dup_at.0);
                        self.push(dup_at, dir, client, listener, ecn, copy);
                    }
                    let mut bytes = bytes;
                    if let Some(c) = corrupt {
                        impair::apply(&mut bytes, c);
                    }
                    self.push(at, dir, client, listener, ecn, bytes);
                }
            }
        }
        self.write(&record)
    }

    fn push(
        &mut self,
        at: Instant,
        dir: Dir,
        client: SocketAddr,
        listener: usize,
        ecn: Ecn,
        bytes: Vec<u8>,
    ) {
        self.seq += 1;
        let ecn = ecn_bits(ecn);
        self.pending.push(Reverse(Pending {
            at,
            seq: self.seq,
            dir,
            client,
            listener,
            ecn,
            bytes,
        }));
    }

    /// Sends every datagram whose arrival time has come.
    async fn deliver_due(&mut self) {
        let now = self.now();
        while self.pending.peek().is_some_and(|Reverse(p)| p.at <= now) {
            let Some(Reverse(p)) = self.pending.pop() else { break };
            // The link keeps the datagram's ECN codepoint (no CE marking here).
            let ecn = ecn_of_bits(p.ecn);
            let sent = match p.dir {
                // The answer leaves from the address the client wrote to.
                Dir::ToClient => match self.listeners.get(p.listener) {
                    Some(l) => l.socket.send_from(p.client, &p.bytes, None, ecn, None).await,
                    None => continue,
                },
                // The NAT translates at the moment the datagram passes it.
                Dir::ToServer => match self
                    .mappings
                    .iter()
                    .find(|m| m.client == p.client && m.listener == p.listener)
                {
                    Some(m) => m.socket.send_from(m.server, &p.bytes, None, ecn, None).await,
                    None => continue,
                },
            };
            match sent {
                Ok(_) => self.forwarded += 1,
                Err(e) => {
                    eprintln!("mote relay: sending {} bytes {}: {e}", p.bytes.len(), p.dir.name())
                }
            }
        }
    }

    /// The upstream address of `client`'s mapping towards `listener`'s server, creating the
    /// mapping if needed.
    async fn mapping_for(
        &mut self,
        client: SocketAddr,
        listener: usize,
        now: Instant,
    ) -> Result<SocketAddr> {
        if let Some(m) =
            self.mappings.iter_mut().find(|m| m.client == client && m.listener == listener)
        {
            m.last_used = now;
            return Ok(m.local);
        }
        if self.mappings.len() >= MAX_MAPPINGS {
            if let Some(oldest) =
                (0..self.mappings.len()).min_by_key(|&i| self.mappings[i].last_used)
            {
                self.mappings.swap_remove(oldest);
            }
        }
        let ip = self.upstream_ip(None);
        let m = self.new_mapping(client, listener, ip, now, None).await?;
        let local = m.local;
        self.mappings.push(m);
        Ok(local)
    }

    /// The source address for a new mapping: loopback of the server's family (so the
    /// kernel routes it), or an explicit 127.0.0.x.
    fn upstream_ip(&self, host: Option<u8>) -> IpAddr {
        match (self.config.server.ip(), host) {
            (IpAddr::V4(_), Some(h)) => IpAddr::V4(Ipv4Addr::new(127, 0, 0, h)),
            (IpAddr::V4(a), None) if a.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            (IpAddr::V4(_), None) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            (IpAddr::V6(a), _) if a.is_loopback() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            (IpAddr::V6(_), _) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        }
    }

    async fn new_mapping(
        &mut self,
        client: SocketAddr,
        listener: usize,
        ip: IpAddr,
        now: Instant,
        avoid_port: Option<u16>,
    ) -> Result<Mapping> {
        // Port 0 lets the kernel choose; it may hand back the port just released, which
        // would not be a rebinding, so try again a few times.
        let mut socket = None;
        for _ in 0..8 {
            let s = UdpSocket::bind(SocketAddr::new(ip, 0))
                .with_context(|| format!("binding an upstream socket on {ip}"))?;
            if Some(s.local_addr()?.port()) != avoid_port {
                socket = Some(s);
                break;
            }
        }
        let socket = Arc::new(socket.context("the kernel kept giving the same port")?);
        let local = socket.local_addr()?;
        self.next_id += 1;
        let id = self.next_id;
        let server = self.listeners.get(listener).map_or(self.config.server, |l| l.server);
        let reader = spawn_reader(socket.clone(), self.tx.clone(), Source::Mapping(id, server));
        Ok(Mapping { client, listener, id, socket, local, server, reader, last_used: now })
    }

    /// NAT rebinding of the current client (RFC 9000 §9.3: the server sees a new path).
    async fn rebind(&mut self) -> Result<()> {
        let now = self.now();
        let Some((kind, _, every)) = self.config.rebind else { return Ok(()) };
        self.next_rebind = Some(now + every);
        let Some((client, listener)) = self.current else { return Ok(()) };
        let Some(pos) =
            self.mappings.iter().position(|m| m.client == client && m.listener == listener)
        else {
            return Ok(());
        };
        let old = self.mappings[pos].local;
        let ip = match kind {
            RebindKind::Port => old.ip(),
            RebindKind::Addr => {
                let host = self.next_host;
                self.next_host = if host >= 254 { 2 } else { host + 1 };
                self.upstream_ip(Some(host))
            }
        };
        let m = self.new_mapping(client, listener, ip, now, Some(old.port())).await?;
        let new = m.local;
        self.mappings[pos] = m;
        self.write(&json!({
            "t_us": now.0,
            "event": "rebind",
            "kind": match kind { RebindKind::Port => "port", RebindKind::Addr => "addr" },
            "client": client.to_string(),
            "old_path": old.to_string(),
            "path": new.to_string(),
        }))
    }

    fn write(&mut self, record: &Value) -> Result<()> {
        if let Some(log) = &mut self.log {
            serde_json::to_writer(&mut *log, record).context("writing the log")?;
            log.write_all(b"\n").context("writing the log")?;
        }
        Ok(())
    }
}

/// Which socket a reader reads.
#[derive(Clone, Copy)]
enum Source {
    /// Listening socket `i`: datagrams from anyone (clients).
    Listener(usize),
    /// Mapping `id`'s upstream socket: datagrams from its server only.
    Mapping(u64, SocketAddr),
}

/// Reads datagrams from `socket` into the loop's channel until aborted, with each one's ECN
/// codepoint; a GRO batch is split into its datagrams.
fn spawn_reader(
    socket: Arc<UdpSocket>,
    tx: mpsc::Sender<Incoming>,
    source: Source,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; RECV_BUFFER];
        let bound = socket.local_addr().ok();
        loop {
            let mut meta = [RecvMeta::default()];
            let n = {
                let mut bufs = [IoSliceMut::new(&mut buf)];
                match socket.recv(&mut bufs, &mut meta).await {
                    Ok(n) => n,
                    // ICMP errors surface here on some systems; they carry no datagram. A
                    // short pause keeps a socket that keeps failing from spinning.
                    Err(_) => {
                        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                        continue;
                    }
                }
            };
            for m in meta.iter().take(n) {
                let Some(bound) = bound else { return };
                let ecn = recv_info(m, bound).ecn;
                let data = buf.get(..m.len).unwrap_or_default();
                let stride = if m.stride == 0 { m.len.max(1) } else { m.stride };
                for bytes in data.chunks(stride) {
                    let bytes = bytes.to_vec();
                    let incoming = match source {
                        Source::Listener(listener) => {
                            Incoming::FromClient { listener, from: m.addr, ecn, bytes }
                        }
                        Source::Mapping(id, server) if m.addr == server => {
                            Incoming::FromServer { id, ecn, bytes }
                        }
                        // Only the server may send to a mapping (an address-restricted NAT).
                        Source::Mapping(..) => continue,
                    };
                    if tx.send(incoming).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
