//! An endpoint: one UDP socket's worth of QUIC connections (RFC 9000 §5.2).
//!
//! The endpoint routes each datagram to its connection by Destination Connection ID,
//! creates connections — `connect` on a client, and with feature `server` from a valid
//! client Initial (RFC 9000 §5.2.2, §14.1) — answers unknown versions with Version
//! Negotiation (§6.1), and merges the connections' transmits, timers and events into the
//! same sans-IO interface a single connection has.
//!
//! The connection table is caller storage: any `AsMut<[Slot<…>]>` — `[Slot; N]` on a device
//! (the const-generic, fixed-capacity table), or a `Vec` of the chosen length on a server
//! (whose connections are large: build the table on the heap, not on the stack). Its length
//! is the most connections the endpoint will hold; nothing is allocated afterwards. A full
//! table, or too many handshakes in progress, refuses new clients cheaply: the datagram is
//! dropped before any key is derived.
//!
//! Seams for later issues: stateless reset (RFC 9000 §10.3) for datagrams that match no
//! connection, Retry (§8.1.2) before accepting under load, and connection migration
//! (§9), which needs connection IDs beyond the handshake one.

use core::net::SocketAddr;

use mote_crypto::{CryptoProvider, CryptoRng};

use crate::cid::MAX_CID_LEN;
use crate::connection::rng::Drbg;
use crate::connection::{
    ConnectError, Connection, ConnectionConfig, Event, RecvInfo, Storage, TlsSession, Transmit,
};
use crate::packet::{self, Header};
use crate::time::Instant;

/// Identifies a connection of an endpoint: its slot and the slot's generation, so a handle
/// kept after its connection ended never reaches the slot's next connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionHandle {
    /// Index in the connection table.
    pub index: u32,
    /// Generation of the slot.
    pub generation: u32,
}

/// One entry of the connection table.
pub struct Slot<Conn> {
    conn: Option<Conn>,
    generation: u32,
}

impl<Conn> Slot<Conn> {
    /// An empty slot.
    pub const fn new() -> Self {
        Self { conn: None, generation: 0 }
    }
}

impl<Conn> Default for Slot<Conn> {
    fn default() -> Self {
        Self::new()
    }
}

/// Supplies what a server connection needs when a new client arrives: a TLS server session
/// and the connection's buffers. Returning `None` refuses the client (e.g. no buffers).
pub trait Accept<T, C, S, const N: usize> {
    /// A session and storage for a connection accepted at `now`.
    fn accept(&mut self, now: Instant) -> Option<(T, Storage<C, S, N>)>;
}

impl<T, C, S, const N: usize, F> Accept<T, C, S, N> for F
where
    F: FnMut(Instant) -> Option<(T, Storage<C, S, N>)>,
{
    fn accept(&mut self, now: Instant) -> Option<(T, Storage<C, S, N>)> {
        self(now)
    }
}

/// The acceptor of a client-only endpoint: accepts nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAccept;

impl<T, C, S, const N: usize> Accept<T, C, S, N> for NoAccept {
    fn accept(&mut self, _now: Instant) -> Option<(T, Storage<C, S, N>)> {
        None
    }
}

/// Endpoint settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Settings of every connection.
    pub connection: ConnectionConfig,
    /// Server: handshakes in progress at most (half-open connections); further client
    /// Initials are dropped until some complete or fail.
    pub max_half_open: usize,
}

impl EndpointConfig {
    /// A client endpoint.
    pub const fn client(connection: ConnectionConfig) -> Self {
        Self { connection, max_half_open: 0 }
    }

    /// A server endpoint allowing `max_half_open` handshakes at once.
    pub const fn server(connection: ConnectionConfig, max_half_open: usize) -> Self {
        Self { connection, max_half_open }
    }
}

/// Counters of an endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Connections accepted (server).
    pub accepted: u64,
    /// Client Initials refused because the table or the half-open budget was full.
    pub refused: u64,
    /// Version Negotiation packets sent.
    pub version_negotiation: u64,
    /// Datagrams that matched no connection and started none.
    pub unroutable: u64,
}

/// A Version Negotiation packet to send (at most one is pending; more are dropped).
#[derive(Clone, Copy)]
struct PendingVn {
    to: SocketAddr,
    dcid: [u8; MAX_CID_LEN],
    dcid_len: u8,
    scid: [u8; MAX_CID_LEN],
    scid_len: u8,
}

/// A QUIC endpoint over a connection table `L` of [`Slot`]s. See the module docs.
pub struct Endpoint<P, T, C, S, A, L, const N: usize, const SENT: usize, const RANGES: usize>
where
    P: CryptoProvider,
{
    config: EndpointConfig,
    provider: P,
    rng: Drbg<P>,
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    acceptor: A,
    table: L,
    vn: Option<PendingVn>,
    cursor: usize,
    stats: EndpointStats,
    _marker: core::marker::PhantomData<(T, C, S)>,
}

/// The connection type of an endpoint.
pub type Conn<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize> =
    Connection<P, T, C, S, N, SENT, RANGES>;

impl<P, T, C, S, A, L, const N: usize, const SENT: usize, const RANGES: usize>
    Endpoint<P, T, C, S, A, L, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
    A: Accept<T, C, S, N>,
    L: AsMut<[Slot<Connection<P, T, C, S, N, SENT, RANGES>>]>
        + AsRef<[Slot<Connection<P, T, C, S, N, SENT, RANGES>>]>,
{
    /// An endpoint over the connection table `table`; its randomness (connection IDs, each
    /// connection's generator seed) comes from a generator seeded from `rng`.
    pub fn new(
        config: EndpointConfig,
        provider: P,
        acceptor: A,
        table: L,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self, ConnectError> {
        let rng = Drbg::from_rng(provider.clone(), rng).map_err(ConnectError::Crypto)?;
        Ok(Self {
            config,
            provider,
            rng,
            acceptor,
            table,
            vn: None,
            cursor: 0,
            stats: EndpointStats::default(),
            _marker: core::marker::PhantomData,
        })
    }

    /// Counters.
    pub const fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// The configuration.
    pub const fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// Connections in the table.
    pub fn len(&self) -> usize {
        self.table.as_ref().iter().filter(|s| s.conn.is_some()).count()
    }

    /// Whether the table holds no connection.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table's capacity.
    pub fn capacity(&self) -> usize {
        self.table.as_ref().len()
    }

    /// The connection behind `handle`, if it still exists.
    pub fn connection(
        &mut self,
        handle: ConnectionHandle,
    ) -> Option<&mut Connection<P, T, C, S, N, SENT, RANGES>> {
        let slot = self.table.as_mut().get_mut(handle.index as usize)?;
        if slot.generation != handle.generation {
            return None;
        }
        slot.conn.as_mut()
    }

    /// The connection behind `handle`, read-only.
    pub fn connection_ref(
        &self,
        handle: ConnectionHandle,
    ) -> Option<&Connection<P, T, C, S, N, SENT, RANGES>> {
        let slot = self.table.as_ref().get(handle.index as usize)?;
        if slot.generation != handle.generation {
            return None;
        }
        slot.conn.as_ref()
    }

    /// Handles of every connection.
    pub fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.table
            .as_ref()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.conn.is_some())
            .map(|(i, s)| ConnectionHandle { index: i as u32, generation: s.generation })
    }

    fn free_slot(&self) -> Option<usize> {
        self.table.as_ref().iter().position(|s| s.conn.is_none())
    }

    fn insert(
        &mut self,
        i: usize,
        conn: Connection<P, T, C, S, N, SENT, RANGES>,
    ) -> Option<ConnectionHandle> {
        let slot = self.table.as_mut().get_mut(i)?;
        slot.generation = slot.generation.wrapping_add(1);
        slot.conn = Some(conn);
        Some(ConnectionHandle { index: i as u32, generation: slot.generation })
    }

    /// Starts a client connection to `remote` with the TLS client session `tls` and the
    /// connection's buffers. Fails when the table is full (storage is handed back).
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        tls: T,
        storage: Storage<C, S, N>,
    ) -> Result<ConnectionHandle, ConnectError> {
        let i = self.free_slot().ok_or(ConnectError::Config)?;
        let conn = Connection::client(
            &self.config.connection,
            self.provider.clone(),
            tls,
            storage,
            now,
            remote,
            &mut self.rng,
        )?;
        self.insert(i, conn).ok_or(ConnectError::Config)
    }

    /// A datagram from `remote` arrived (see [`Connection::handle_datagram`]).
    pub fn handle_datagram(&mut self, now: Instant, remote: SocketAddr, data: &mut [u8]) {
        self.handle_recv(now, &RecvInfo::new(remote), data);
    }

    /// A datagram or GRO batch arrived (see [`Connection::handle_recv`]).
    pub fn handle_recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        match info.segment_size {
            Some(seg) if seg > 0 && seg < data.len() => {
                let one = RecvInfo { segment_size: None, ..*info };
                for d in data.chunks_mut(seg) {
                    self.on_datagram(now, &one, d);
                }
            }
            _ => self.on_datagram(now, info, data),
        }
    }

    fn on_datagram(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        let cid_len = self.config.connection.local_cid_len;
        let (dcid, long, initial, version, scid) = match packet::parse(data, cid_len, false) {
            Ok(p) => match p.header {
                Header::Long(h) => {
                    let initial = p.header.packet_type() == Some(packet::PacketType::Initial);
                    (h.dcid, true, initial, h.version, h.scid)
                }
                Header::Short(h) => (h.dcid, false, false, crate::Version::V1, &[][..]),
                Header::Retry(h) => (h.dcid, true, false, h.version, h.scid),
                Header::VersionNegotiation(h) => {
                    (h.dcid, true, false, crate::Version::NEGOTIATION, h.scid)
                }
                Header::UnsupportedVersion(h) => {
                    self.on_unsupported_version(info.remote, data.len(), h.dcid, h.scid);
                    return;
                }
            },
            Err(_) => {
                self.stats.unroutable = self.stats.unroutable.saturating_add(1);
                return;
            }
        };
        // Route by Destination Connection ID: ours, or (server, long header) the client's
        // original one until it switches (RFC 9000 §5.2).
        let found = self.table.as_ref().iter().position(|s| {
            s.conn.as_ref().is_some_and(|c| {
                **c.local_cid() == *dcid
                    || (long
                        && c.side() == crate::transport_params::Side::Server
                        && **c.original_dcid() == *dcid
                        && c.remote() == info.remote)
            })
        });
        if let Some(i) = found {
            if let Some(c) = self.table.as_mut().get_mut(i).and_then(|s| s.conn.as_mut()) {
                c.handle_recv(now, info, data);
            }
            return;
        }
        if initial {
            // Copy the IDs: `data` is decrypted in place by the new connection.
            let mut ids = [0u8; 2 * MAX_CID_LEN];
            let (dl, sl) = (dcid.len(), scid.len());
            if dl <= MAX_CID_LEN && sl <= MAX_CID_LEN {
                if let Some(d) = ids.get_mut(..dl) {
                    d.copy_from_slice(dcid);
                }
                if let Some(s) = ids.get_mut(MAX_CID_LEN..MAX_CID_LEN + sl) {
                    s.copy_from_slice(scid);
                }
                self.accept(now, info, data, &ids, dl, sl, version);
                return;
            }
        }
        // Stateless reset for unknown short headers is a later issue.
        self.stats.unroutable = self.stats.unroutable.saturating_add(1);
    }

    /// RFC 9000 §5.2.2, §14.1: a server creates a connection for a client Initial of a
    /// supported version in a datagram of at least 1200 bytes, if it has room.
    #[allow(clippy::too_many_arguments)]
    fn accept(
        &mut self,
        now: Instant,
        info: &RecvInfo,
        data: &mut [u8],
        ids: &[u8; 2 * MAX_CID_LEN],
        dl: usize,
        sl: usize,
        version: crate::Version,
    ) {
        #[cfg(not(feature = "server"))]
        let _ = (now, info, data, ids, dl, sl, version);
        #[cfg(feature = "server")]
        {
            // RFC 9000 §14.1: Initials in datagrams below 1200 bytes are discarded; RFC 9000
            // §7.2: the client's first DCID is at least 8 bytes.
            if data.len() < crate::connection::MIN_INITIAL_SIZE || dl < 8 {
                self.stats.unroutable = self.stats.unroutable.saturating_add(1);
                return;
            }
            let half_open = self
                .table
                .as_ref()
                .iter()
                .filter(|s| {
                    s.conn.as_ref().is_some_and(|c| {
                        c.side() == crate::transport_params::Side::Server
                            && !c.is_handshake_complete()
                            && !c.is_closed()
                    })
                })
                .count();
            let Some(i) = self.free_slot().filter(|_| half_open < self.config.max_half_open) else {
                self.stats.refused = self.stats.refused.saturating_add(1);
                return;
            };
            let Some((tls, storage)) = self.acceptor.accept(now) else {
                self.stats.refused = self.stats.refused.saturating_add(1);
                return;
            };
            let (Some(dcid), Some(scid)) = (ids.get(..dl), ids.get(MAX_CID_LEN..MAX_CID_LEN + sl))
            else {
                return;
            };
            let conn = Connection::server(
                &self.config.connection,
                self.provider.clone(),
                tls,
                storage,
                now,
                info.remote,
                dcid,
                scid,
                version,
                &mut self.rng,
            );
            let Ok(conn) = conn else {
                self.stats.refused = self.stats.refused.saturating_add(1);
                return;
            };
            if self.insert(i, conn).is_some() {
                let Some(slot) = self.table.as_mut().get_mut(i) else { return };
                if let Some(c) = slot.conn.as_mut() {
                    c.handle_recv(now, info, data);
                    // RFC 9000 §5.2.2, §21.2 (and lsquic's QUIC-LEAK, CVE-2025-54939): keep
                    // no state for an Initial that did not decrypt (forged or corrupted).
                    // Only a client whose first packet was processed holds a half-open slot
                    // until its handshake ends; one refused with a transport or TLS error
                    // stays for its closing period (outside the half-open budget) to send
                    // CONNECTION_CLOSE.
                    if c.stats().packets_received == 0 && !c.is_closed() {
                        slot.conn = None;
                        self.stats.refused = self.stats.refused.saturating_add(1);
                        return;
                    }
                }
                self.stats.accepted = self.stats.accepted.saturating_add(1);
            }
        }
    }

    /// RFC 9000 §6.1: a server answers a long header of an unknown version with Version
    /// Negotiation, only for datagrams of at least 1200 bytes (so it cannot amplify) and
    /// never for a Version Negotiation packet.
    fn on_unsupported_version(&mut self, to: SocketAddr, len: usize, dcid: &[u8], scid: &[u8]) {
        let server = self.config.max_half_open > 0;
        if !server || len < crate::connection::MIN_INITIAL_SIZE || self.vn.is_some() {
            self.stats.unroutable = self.stats.unroutable.saturating_add(1);
            return;
        }
        if dcid.len() > MAX_CID_LEN || scid.len() > MAX_CID_LEN {
            return;
        }
        let mut vn = PendingVn {
            to,
            dcid: [0; MAX_CID_LEN],
            dcid_len: dcid.len() as u8,
            scid: [0; MAX_CID_LEN],
            scid_len: scid.len() as u8,
        };
        if let (Some(d), Some(s)) = (vn.dcid.get_mut(..dcid.len()), vn.scid.get_mut(..scid.len())) {
            d.copy_from_slice(dcid);
            s.copy_from_slice(scid);
        }
        self.vn = Some(vn);
    }

    /// The next datagram (or GSO batch) to send: a pending Version Negotiation, then the
    /// connections round-robin.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if let Some(vn) = self.vn.take() {
            let mut grease = [0u8; 1];
            let _ = self.rng_fill(&mut grease);
            let mut w = crate::coding::Writer::new(buf);
            let (dcid, scid) = (
                vn.dcid.get(..usize::from(vn.dcid_len)).unwrap_or(&[]),
                vn.scid.get(..usize::from(vn.scid_len)).unwrap_or(&[]),
            );
            // The client's IDs are echoed swapped (RFC 9000 §17.2.1); we list our versions
            // and a reserved one for greasing (§6.3).
            let versions = [
                crate::Version::V1,
                #[cfg(feature = "v2")]
                crate::Version::V2,
                crate::Version(0x1a2a_3a4a),
            ];
            if packet::emit_version_negotiation(&mut w, grease[0], dcid, scid, &versions).is_ok() {
                self.stats.version_negotiation = self.stats.version_negotiation.saturating_add(1);
                return Some(Transmit {
                    destination: vn.to,
                    len: w.position(),
                    segment_size: None,
                });
            }
        }
        let n = self.table.as_ref().len();
        for k in 0..n {
            let mut i = self.cursor + k;
            if i >= n {
                i -= n;
            }
            let t = self
                .table
                .as_mut()
                .get_mut(i)
                .and_then(|s| s.conn.as_mut())
                .and_then(|c| c.poll_transmit(now, buf));
            if t.is_some() {
                self.cursor = if i + 1 >= n { 0 } else { i + 1 };
                return t;
            }
        }
        None
    }

    fn rng_fill(&mut self, out: &mut [u8]) -> Result<(), mote_crypto::Error> {
        self.rng.fill(out)
    }

    /// The earliest timer of any connection.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.table.as_ref().iter().filter_map(|s| s.conn.as_ref()?.poll_timeout()).min()
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for s in self.table.as_mut().iter_mut() {
            if let Some(c) = s.conn.as_mut() {
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
            }
        }
    }

    /// The next event of any connection. After a connection's [`Event::Drained`] it is
    /// removed from the table and its handle no longer resolves.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        for (i, s) in self.table.as_mut().iter_mut().enumerate() {
            let Some(c) = s.conn.as_mut() else { continue };
            if let Some(e) = c.poll_event() {
                let h = ConnectionHandle { index: i as u32, generation: s.generation };
                if e == Event::Drained {
                    s.conn = None;
                }
                return Some((h, e));
            }
        }
        None
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use std::vec;
    use std::vec::Vec;

    use mote_crypto::rustcrypto::RustCrypto;
    use mote_tls::{ClientSession, ServerSession};

    use super::*;
    use crate::connection::tests::{
        addr, configs, storage, Configs, TestRng, CLIENT_ADDR, P, SERVER_ADDR,
    };
    use crate::frame::StreamDir;
    use crate::stream::Read;

    type CSess = ClientSession<'static, RustCrypto>;
    type SSess = ServerSession<'static, RustCrypto>;
    type ClientEp = Endpoint<
        RustCrypto,
        CSess,
        Vec<u8>,
        Vec<u8>,
        NoAccept,
        Vec<Slot<Connection<RustCrypto, CSess, Vec<u8>, Vec<u8>, 4, 32, 8>>>,
        4,
        32,
        8,
    >;
    type Acceptor =
        std::boxed::Box<dyn FnMut(Instant) -> Option<(SSess, Storage<Vec<u8>, Vec<u8>, 4>)>>;
    type ServerEp = Endpoint<
        RustCrypto,
        SSess,
        Vec<u8>,
        Vec<u8>,
        Acceptor,
        Vec<Slot<Connection<RustCrypto, SSess, Vec<u8>, Vec<u8>, 4, 32, 8>>>,
        4,
        32,
        8,
    >;

    fn server_ep(cap: usize, half_open: usize, cfgs: &Configs) -> ServerEp {
        let cfg = cfgs.server;
        let acc: Acceptor = std::boxed::Box::new(move |_| {
            Some((ServerSession::new(P, cfg, 0), storage(4096, 16384)))
        });
        let table = (0..cap).map(|_| Slot::new()).collect();
        Endpoint::new(
            EndpointConfig::server(crate::ConnectionConfig::server(), half_open),
            P,
            acc,
            table,
            &mut TestRng(9),
        )
        .unwrap()
    }

    fn client_ep(cap: usize) -> ClientEp {
        let table = (0..cap).map(|_| Slot::new()).collect();
        Endpoint::new(
            EndpointConfig::client(crate::ConnectionConfig::device()),
            P,
            NoAccept,
            table,
            &mut TestRng(3),
        )
        .unwrap()
    }

    /// Moves datagrams both ways until quiet, then runs due timers; `rounds` times.
    fn pump(c: &mut ClientEp, s: &mut ServerEp, now: &mut Instant, rounds: usize) {
        let mut buf = vec![0u8; 65536];
        for _ in 0..rounds {
            let mut moved = true;
            while moved {
                moved = false;
                while let Some(t) = c.poll_transmit(*now, &mut buf) {
                    moved = true;
                    let mut d = buf[..t.len].to_vec();
                    s.handle_datagram(*now, addr(CLIENT_ADDR), &mut d);
                }
                while let Some(t) = s.poll_transmit(*now, &mut buf) {
                    moved = true;
                    let mut d = buf[..t.len].to_vec();
                    for seg in d.chunks_mut(t.segment_size.unwrap_or(t.len)) {
                        c.handle_datagram(*now, addr(SERVER_ADDR), seg);
                    }
                }
            }
            // Timers within the next second only (not the idle timeout).
            let horizon = *now + crate::time::Duration::from_secs(1);
            let next = [c.poll_timeout(), s.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .filter(|t| *t < horizon);
            match next {
                Some(t) => {
                    *now = (*now).max(t);
                    c.handle_timeout(*now);
                    s.handle_timeout(*now);
                }
                None => break,
            }
        }
    }

    #[test]
    fn endpoints_connect_and_exchange() {
        let cfgs = configs();
        let mut s = server_ep(4, 4, &cfgs);
        let mut c = client_ep(2);
        let mut now = Instant::ZERO;
        let h = c
            .connect(
                now,
                addr(SERVER_ADDR),
                ClientSession::new(P, cfgs.client, None),
                storage(4096, 16384),
            )
            .unwrap();
        pump(&mut c, &mut s, &mut now, 4);
        assert!(c.connection(h).unwrap().is_handshake_confirmed());
        assert_eq!(s.len(), 1);
        let id = c.connection(h).unwrap().stream_open(StreamDir::Bidi).expect("open");
        c.connection(h).unwrap().stream_send(id, b"hello").unwrap();
        c.connection(h).unwrap().stream_finish(id).unwrap();
        pump(&mut c, &mut s, &mut now, 2);
        let sh = s.handles().next().unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(s.connection(sh).unwrap().stream_recv(id, &mut buf), Some(Read::Data(5)));
        // Events carry handles; closing drains and frees the slot.
        let mut server_events = Vec::new();
        while let Some(e) = s.poll_event() {
            server_events.push(e);
        }
        assert!(server_events.contains(&(sh, Event::StreamOpened(id))));
        c.connection(h).unwrap().close(0, b"done");
        pump(&mut c, &mut s, &mut now, 10);
        while let Some((hh, e)) = c.poll_event() {
            if e == Event::Drained {
                assert_eq!(hh, h);
            }
        }
        while s.poll_event().is_some() {}
        assert!(c.is_empty() && s.is_empty());
        assert!(c.connection(h).is_none());
    }

    #[test]
    fn full_table_and_half_open_limit_refuse_cheaply() {
        let cfgs = configs();
        // Room for 3, but at most 1 handshake in progress.
        let mut s = server_ep(3, 1, &cfgs);
        let now = Instant::ZERO;
        let mut buf = vec![0u8; 2048];
        let mut firsts = Vec::new();
        for seed in 0..3u64 {
            let mut rng = TestRng(100 + seed);
            let mut conn = crate::connection::tests::Client::client(
                &crate::ConnectionConfig::device(),
                P,
                ClientSession::new(P, cfgs.client, None),
                storage(4096, 1024),
                now,
                addr(SERVER_ADDR),
                &mut rng,
            )
            .unwrap();
            let t = conn.poll_transmit(now, &mut buf).unwrap();
            firsts.push(buf[..t.len].to_vec());
        }
        for d in firsts.iter_mut() {
            s.handle_datagram(now, addr(CLIENT_ADDR), d);
        }
        assert_eq!(s.len(), 1);
        assert_eq!(s.stats().accepted, 1);
        assert_eq!(s.stats().refused, 2);
    }

    #[test]
    fn small_initial_and_unknown_version() {
        let cfgs = configs();
        let mut s = server_ep(2, 2, &cfgs);
        let now = Instant::ZERO;
        // An Initial in a 1000-byte datagram: dropped without a connection.
        let mut rng = TestRng(5);
        let mut conn = crate::connection::tests::Client::client(
            &crate::ConnectionConfig::device(),
            P,
            ClientSession::new(P, cfgs.client, None),
            storage(4096, 1024),
            now,
            addr(SERVER_ADDR),
            &mut rng,
        )
        .unwrap();
        let mut buf = vec![0u8; 2048];
        let t = conn.poll_transmit(now, &mut buf).unwrap();
        assert_eq!(t.len, 1200);
        let mut short = buf[..1000].to_vec();
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut short);
        assert_eq!(s.len(), 0);
        // An unknown version: Version Negotiation echoing the IDs.
        let mut unknown = vec![0u8; 1200];
        unknown[..14].copy_from_slice(&[0xc0, 0xaa, 0xbb, 0xcc, 0xdd, 4, 1, 2, 3, 4, 2, 9, 9, 0]);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut unknown);
        let t = s.poll_transmit(now, &mut buf).unwrap();
        let p = packet::parse(&buf[..t.len], 0, false).unwrap();
        let Header::VersionNegotiation(vn) = p.header else { panic!("not VN") };
        assert_eq!((vn.dcid, vn.scid), (&[9u8, 9][..], &[1u8, 2, 3, 4][..]));
        assert!(vn.lists(crate::Version::V1));
        assert_eq!(s.stats().version_negotiation, 1);
        // Not for a small datagram.
        let mut small = unknown[..100].to_vec();
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut small);
        assert!(s.poll_transmit(now, &mut buf).is_none());
    }
}
