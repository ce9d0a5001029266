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
//! Every connection ID a connection issued and the peer has not retired routes to it
//! (the connection's own bounded table is the routing state, so a retired ID stops routing
//! at once). With feature `stateless-reset`, a short-header datagram for no connection is
//! first checked against the connections' reset tokens (RFC 9000 §10.3.1) and otherwise
//! answered with a stateless reset when a reset key is configured ([`reset`]).
//!
//! Address validation (RFC 9000 §8.1, feature `server`): [`RetryPolicy`] decides when a
//! client Initial without a valid token is answered with a stateless Retry instead of a
//! connection; tokens ([`crate::token`]) are sealed under the endpoint's [`TokenConfig`]
//! and bound to the client address and original DCID. A connection whose Initial carried a
//! valid Retry or NEW_TOKEN token starts with its address validated; every server
//! connection is given a NEW_TOKEN token once its handshake is confirmed.

use core::net::SocketAddr;

use mote_crypto::{CryptoProvider, CryptoRng};

use crate::cid::MAX_CID_LEN;
use crate::connection::rng::Drbg;
#[cfg(feature = "server")]
use crate::connection::Validation;
use crate::connection::{
    ConnectError, Connection, ConnectionConfig, Event, RecvInfo, Storage, TlsSession, Transmit,
};
use crate::packet::{self, Header};
use crate::time::Instant;
#[cfg(feature = "server")]
use crate::token::{TokenConfig, TokenKey, TOKEN_MAX};

#[cfg(feature = "stateless-reset")]
pub mod reset;

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

/// When a server answers a client Initial that carries no valid token with a Retry
/// (RFC 9000 §8.1.2) instead of creating a connection. A Retry costs the client a round
/// trip but proves its address before the server keeps any state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryPolicy {
    /// Never: connections start unvalidated (anti-amplification limit until a Handshake
    /// packet arrives).
    Never,
    /// Always (the interop runner's `retry` test case).
    Always,
    /// Once `half_open_threshold` handshakes are in progress (under load, e.g. a flood of
    /// spoofed Initials).
    WhenBusy {
        /// Half-open connections from which on Retry is required.
        half_open_threshold: usize,
    },
}

/// Endpoint settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Settings of every connection.
    pub connection: ConnectionConfig,
    /// Server: handshakes in progress at most (half-open connections); further client
    /// Initials are dropped until some complete or fail.
    pub max_half_open: usize,
    /// Server: when to send Retry (a `mote serve --retry` flag sets this).
    pub retry: RetryPolicy,
    /// Server: the keys and lifetimes of address-validation tokens. `None`: a random key
    /// drawn when the endpoint is created (tokens then do not survive a restart or work
    /// across a server's processes).
    #[cfg(feature = "server")]
    pub tokens: Option<TokenConfig>,
}

impl EndpointConfig {
    /// A client endpoint.
    pub const fn client(connection: ConnectionConfig) -> Self {
        Self {
            connection,
            max_half_open: 0,
            retry: RetryPolicy::Never,
            #[cfg(feature = "server")]
            tokens: None,
        }
    }

    /// A server endpoint allowing `max_half_open` handshakes at once, never sending Retry.
    pub const fn server(connection: ConnectionConfig, max_half_open: usize) -> Self {
        Self {
            connection,
            max_half_open,
            retry: RetryPolicy::Never,
            #[cfg(feature = "server")]
            tokens: None,
        }
    }

    /// This configuration with Retry policy `retry`.
    pub const fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
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
    /// Stateless resets sent (feature `stateless-reset`).
    pub resets_sent: u64,
    /// Stateless resets not sent: rate limit, size rules, or one already pending.
    pub resets_suppressed: u64,
    /// Stateless resets received for one of our connections.
    pub resets_received: u64,
    /// Retry packets sent (server).
    pub retries_sent: u64,
    /// Client Initials whose token did not open, was for another address, or had expired
    /// (server). An invalid Retry token drops the Initial; other tokens count as none.
    pub invalid_tokens: u64,
    /// NEW_TOKEN tokens handed to connections (server).
    pub new_tokens: u64,
}

/// A stateless reset to send (at most one is pending; more are dropped).
#[cfg(feature = "stateless-reset")]
#[derive(Clone, Copy)]
struct PendingReset {
    to: SocketAddr,
    len: usize,
    token: crate::transport_params::ResetToken,
}

/// Retry packets pending at most (more are dropped; the client retransmits its Initial).
#[cfg(feature = "server")]
const PENDING_RETRIES: usize = 4;

/// Why a client Initial's Retry token was refused (the Initial is dropped either way).
#[cfg(feature = "server")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RetryTokenRefused {
    /// Not ours, altered, expired, from another address or for another connection ID:
    /// answered with INVALID_TOKEN (RFC 9000 §8.1.2).
    Invalid,
    /// Ours, but the client switched versions after the Retry (RFC 9369 §4.1): dropped.
    OtherVersion,
}

/// A stateless answer to a client Initial: a Retry packet (RFC 9000 §17.2.5), or with
/// `token_len == 0` an Initial closing the attempt with INVALID_TOKEN (§8.1.2).
#[cfg(feature = "server")]
#[derive(Clone, Copy)]
struct PendingRetry {
    to: SocketAddr,
    version: crate::Version,
    /// The client's SCID (our DCID), the DCID of its Initial, and our new SCID.
    client_scid: crate::ConnectionId,
    odcid: crate::ConnectionId,
    scid: crate::ConnectionId,
    token: [u8; TOKEN_MAX],
    token_len: u8,
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
    #[cfg(feature = "stateless-reset")]
    reset: Option<PendingReset>,
    #[cfg(feature = "stateless-reset")]
    reset_limiter: reset::ResetLimiter,
    cursor: usize,
    stats: EndpointStats,
    #[cfg(feature = "server")]
    tokens: TokenConfig,
    #[cfg(feature = "server")]
    retries: [Option<PendingRetry>; PENDING_RETRIES],
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
        #[allow(unused_mut)]
        let mut rng = Drbg::from_rng(provider.clone(), rng).map_err(ConnectError::Crypto)?;
        #[cfg(feature = "server")]
        let tokens = match config.tokens {
            Some(t) => t,
            None => {
                let mut key = [0u8; 16];
                rng.fill(&mut key).map_err(ConnectError::Crypto)?;
                TokenConfig::new(TokenKey { id: 0, key })
            }
        };
        Ok(Self {
            config,
            provider,
            rng,
            acceptor,
            table,
            vn: None,
            #[cfg(feature = "stateless-reset")]
            reset: None,
            #[cfg(feature = "stateless-reset")]
            reset_limiter: reset::ResetLimiter::new(),
            cursor: 0,
            stats: EndpointStats::default(),
            #[cfg(feature = "server")]
            tokens,
            #[cfg(feature = "server")]
            retries: [None; PENDING_RETRIES],
            _marker: core::marker::PhantomData,
        })
    }

    /// Server: starts sealing tokens with `next`; tokens sealed with the current key are
    /// still accepted until the following rotation.
    #[cfg(feature = "server")]
    pub fn rotate_token_key(&mut self, next: TokenKey) {
        self.tokens.rotate(next);
    }

    /// Server: the Retry policy in force.
    pub const fn retry_policy(&self) -> RetryPolicy {
        self.config.retry
    }

    /// Server: changes the Retry policy (e.g. from a load monitor).
    pub fn set_retry_policy(&mut self, retry: RetryPolicy) {
        self.config.retry = retry;
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

    /// As [`Endpoint::connect`], with the address-validation token a previous connection to
    /// this server received in NEW_TOKEN and the version of that connection (both from
    /// [`Connection::take_token`]); the new connection's Initials carry it, so the server
    /// may skip Retry and the amplification limit (RFC 9000 §8.1.3). A token the connection
    /// cannot keep, or of another version than the one it starts in, is not used (RFC 9369
    /// §5, [`Connection::set_token`]).
    pub fn connect_with_token(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        tls: T,
        storage: Storage<C, S, N>,
        token: &[u8],
        token_version: crate::Version,
    ) -> Result<ConnectionHandle, ConnectError> {
        let h = self.connect(now, remote, tls, storage)?;
        if let Some(c) = self.connection(h) {
            c.set_token(token, token_version);
        }
        Ok(h)
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
        let (dcid, long, initial, version, scid, token) = match packet::parse(data, cid_len, false)
        {
            Ok(p) => match p.header {
                Header::Long(h) => {
                    let initial = p.header.packet_type() == Some(packet::PacketType::Initial);
                    (h.dcid, true, initial, h.version, h.scid, h.token)
                }
                Header::Short(h) => (h.dcid, false, false, crate::Version::V1, &[][..], &[][..]),
                Header::Retry(h) => (h.dcid, true, false, h.version, h.scid, &[][..]),
                Header::VersionNegotiation(h) => {
                    (h.dcid, true, false, crate::Version::NEGOTIATION, h.scid, &[][..])
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
                c.owns_cid(dcid)
                    || (long
                        && c.side() == crate::transport_params::Side::Server
                        && **c.initial_dcid() == *dcid
                        && c.remote() == info.remote)
            })
        });
        if let Some(i) = found {
            if let Some(c) = self.table.as_mut().get_mut(i).and_then(|s| s.conn.as_mut()) {
                c.handle_recv(now, info, data);
            }
            #[cfg(feature = "server")]
            self.give_new_token(i, now);
            return;
        }
        if initial {
            // Copy the IDs and the token: `data` is decrypted in place by the new connection.
            #[cfg(feature = "server")]
            let mut tok = ([0u8; TOKEN_MAX], 0usize);
            #[cfg(feature = "server")]
            if let Some(dst) = tok.0.get_mut(..token.len()) {
                dst.copy_from_slice(token);
                tok.1 = token.len();
            } else {
                // Longer than any token we issue: not ours.
                tok.1 = usize::MAX;
            }
            #[cfg(not(feature = "server"))]
            let _ = token;
            let mut ids = [0u8; 2 * MAX_CID_LEN];
            let (dl, sl) = (dcid.len(), scid.len());
            if dl <= MAX_CID_LEN && sl <= MAX_CID_LEN {
                if let Some(d) = ids.get_mut(..dl) {
                    d.copy_from_slice(dcid);
                }
                if let Some(s) = ids.get_mut(MAX_CID_LEN..MAX_CID_LEN + sl) {
                    s.copy_from_slice(scid);
                }
                #[cfg(feature = "server")]
                self.accept(now, info, data, &ids, dl, sl, version, (&tok.0, tok.1));
                #[cfg(not(feature = "server"))]
                let _ = (ids, version);
                return;
            }
        }
        #[cfg(feature = "stateless-reset")]
        if !long {
            // RFC 9000 §10.3.1: a datagram no connection claims may be a reset for one.
            let hit = self
                .table
                .as_mut()
                .iter_mut()
                .filter_map(|s| s.conn.as_mut())
                .find(|c| !c.is_drained() && c.is_stateless_reset(data));
            if let Some(c) = hit {
                c.on_stateless_reset();
                self.stats.resets_received = self.stats.resets_received.saturating_add(1);
                return;
            }
            self.stats.unroutable = self.stats.unroutable.saturating_add(1);
            self.queue_reset(now, info.remote, data.len(), dcid);
            return;
        }
        self.stats.unroutable = self.stats.unroutable.saturating_add(1);
    }

    /// RFC 9000 §10.3: answer a short-header packet for an unknown connection ID with a
    /// stateless reset, when a reset key is configured: smaller than the packet (§10.3.3,
    /// so resets cannot loop between two endpoints), at least 21 bytes, rate-limited, one
    /// pending at a time.
    #[cfg(feature = "stateless-reset")]
    fn queue_reset(&mut self, now: Instant, to: SocketAddr, received: usize, dcid: &[u8]) {
        let Some(key) = self.config.connection.stateless_reset_key else { return };
        let size = reset::reset_size(received);
        let ok = size.is_some() && self.reset.is_none() && self.reset_limiter.allow(now);
        let token = reset::derive_token(&self.provider, &key, dcid);
        match (ok, size, token) {
            (true, Some(len), Ok(token)) => self.reset = Some(PendingReset { to, len, token }),
            _ => self.stats.resets_suppressed = self.stats.resets_suppressed.saturating_add(1),
        }
    }

    /// RFC 9000 §5.2.2, §14.1: a server creates a connection for a client Initial of a
    /// supported version in a datagram of at least 1200 bytes, if it has room — or, when
    /// its [`RetryPolicy`] asks for address validation and the Initial carries no valid
    /// token, answers with a Retry and keeps no state (RFC 9000 §8.1.2).
    #[cfg(feature = "server")]
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
        token: (&[u8; TOKEN_MAX], usize),
    ) {
        {
            // RFC 9000 §14.1: Initials in datagrams below 1200 bytes are discarded.
            if data.len() < crate::connection::MIN_INITIAL_SIZE {
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
            let (Some(dcid), Some(scid)) = (ids.get(..dl), ids.get(MAX_CID_LEN..MAX_CID_LEN + sl))
            else {
                return;
            };
            // RFC 9000 §8.1.2, §8.1.3: the token, if any.
            let validation = match self.check_token(now, info.remote, dcid, version, token) {
                Ok(v) => v,
                Err(RetryTokenRefused::Invalid) => {
                    self.queue_invalid_token_close(info.remote, version, dcid, scid);
                    return;
                }
                Err(RetryTokenRefused::OtherVersion) => return,
            };
            // RFC 9000 §7.2: the client's first DCID is at least 8 bytes (after a Retry it
            // is our Retry SCID, which the token vouches for).
            if dl < 8 && !matches!(validation, Validation::Retry { .. }) {
                self.stats.unroutable = self.stats.unroutable.saturating_add(1);
                return;
            }
            let retry = match self.config.retry {
                RetryPolicy::Never => false,
                RetryPolicy::Always => true,
                RetryPolicy::WhenBusy { half_open_threshold } => half_open >= half_open_threshold,
            };
            if retry && validation == Validation::None {
                self.queue_retry(now, info.remote, version, dcid, scid);
                return;
            }
            let Some(i) = self.free_slot().filter(|_| half_open < self.config.max_half_open) else {
                self.stats.refused = self.stats.refused.saturating_add(1);
                return;
            };
            let Some((tls, storage)) = self.acceptor.accept(now) else {
                self.stats.refused = self.stats.refused.saturating_add(1);
                return;
            };
            let conn = Connection::server_validated(
                &self.config.connection,
                self.provider.clone(),
                tls,
                storage,
                now,
                info.remote,
                dcid,
                scid,
                version,
                validation,
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
                    if !c.processed_any_packet() && !c.is_closed() {
                        slot.conn = None;
                        self.stats.refused = self.stats.refused.saturating_add(1);
                        return;
                    }
                }
                self.stats.accepted = self.stats.accepted.saturating_add(1);
            }
        }
    }

    /// RFC 9000 §8.1.2, §8.1.3: what the token of a client Initial of `version` proves.
    /// An error drops the Initial (it keeps no state): an invalid or expired Retry token, or
    /// one for another connection ID, which RFC 9000 §8.1.2 has the server close; or a
    /// Retry token of another version, dropped silently (RFC 9369 §4.1). An invalid
    /// NEW_TOKEN token, one of another version (RFC 9369 §5: the client address stays
    /// unverified) or one not of ours counts as no token.
    #[cfg(feature = "server")]
    fn check_token(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        dcid: &[u8],
        version: crate::Version,
        token: (&[u8; TOKEN_MAX], usize),
    ) -> Result<Validation, RetryTokenRefused> {
        use crate::token::{open_token, TokenKind};
        if token.1 == 0 {
            return Ok(Validation::None);
        }
        let bytes = token.0.get(..token.1).unwrap_or(&[]);
        // The kind byte is authenticated; a forged one fails to open anyway.
        let claims_retry = bytes.first() == Some(&b'R');
        match open_token(&self.provider, &self.tokens, bytes, &remote, version, now) {
            Ok(t) if t.kind == TokenKind::Retry && *t.retry_scid == *dcid => {
                Ok(Validation::Retry { original_dcid: t.original_dcid })
            }
            Ok(t) if t.kind == TokenKind::NewToken => Ok(Validation::NewToken),
            _ => {
                self.stats.invalid_tokens = self.stats.invalid_tokens.saturating_add(1);
                if !claims_retry {
                    return Ok(Validation::None);
                }
                // RFC 9369 §4.1: "The client MUST NOT use a different version in the
                // subsequent Initial packet that contains the Retry token. The server MAY
                // encode the QUIC version in its Retry token to validate that the client
                // did not switch versions, and drop the packet if it switched."
                let other_version = crate::Version::SUPPORTED.iter().any(|v| {
                    *v != version
                        && open_token(&self.provider, &self.tokens, bytes, &remote, *v, now).is_ok()
                });
                Err(if other_version {
                    RetryTokenRefused::OtherVersion
                } else {
                    RetryTokenRefused::Invalid
                })
            }
        }
    }

    /// RFC 9000 §8.1.2, §17.2.5: queues a Retry for a client Initial (DCID `odcid`, SCID
    /// `client_scid`) with a fresh SCID and a token naming both. Keeps no connection state;
    /// when [`PENDING_RETRIES`] are queued the Initial is dropped instead.
    #[cfg(feature = "server")]
    fn queue_retry(
        &mut self,
        now: Instant,
        to: SocketAddr,
        version: crate::Version,
        odcid: &[u8],
        client_scid: &[u8],
    ) {
        let Some(slot) = self.retries.iter().position(Option::is_none) else {
            self.stats.refused = self.stats.refused.saturating_add(1);
            return;
        };
        // Our new SCID must differ from the client's DCID (RFC 9000 §17.2.5.1); at least
        // 8 bytes so it is as unpredictable as a client's.
        let len = self.config.connection.local_cid_len.max(8);
        let mut scid = [0u8; MAX_CID_LEN];
        let mut nonce = [0u8; 12];
        let Some(s) = scid.get_mut(..len) else { return };
        if self.rng.fill(s).is_err() || self.rng.fill(&mut nonce).is_err() || s == odcid {
            return;
        }
        let (Some(scid), Some(odcid_c), Some(client_scid)) = (
            crate::ConnectionId::new(s),
            crate::ConnectionId::new(odcid),
            crate::ConnectionId::new(client_scid),
        ) else {
            return;
        };
        let mut token = [0u8; TOKEN_MAX];
        // RFC 9369 §4.1: the Retry is in the version of the client's Initial (the original
        // version), and so is the Initial that brings its token back.
        let Some(n) = crate::token::seal_token(
            &self.provider,
            &self.tokens,
            crate::token::TokenKind::Retry,
            &to,
            version,
            now,
            odcid,
            &scid,
            nonce,
            &mut token,
        ) else {
            return;
        };
        if let Some(r) = self.retries.get_mut(slot) {
            *r = Some(PendingRetry {
                to,
                version,
                client_scid,
                odcid: odcid_c,
                scid,
                token,
                token_len: n as u8,
            });
        }
    }

    /// RFC 9000 §8.1.2: "If a server receives a client Initial that contains an invalid
    /// Retry token but is otherwise valid, ... the server SHOULD immediately close the
    /// connection with an INVALID_TOKEN error" — statelessly, in an Initial packet under
    /// the keys of the client's DCID. The close is far smaller than the Initial it answers.
    #[cfg(feature = "server")]
    fn queue_invalid_token_close(
        &mut self,
        to: SocketAddr,
        version: crate::Version,
        dcid: &[u8],
        client_scid: &[u8],
    ) {
        let Some(slot) = self.retries.iter().position(Option::is_none) else { return };
        let (Some(odcid), Some(client_scid)) =
            (crate::ConnectionId::new(dcid), crate::ConnectionId::new(client_scid))
        else {
            return;
        };
        if let Some(r) = self.retries.get_mut(slot) {
            *r = Some(PendingRetry {
                to,
                version,
                client_scid,
                odcid,
                scid: odcid,
                token: [0; TOKEN_MAX],
                token_len: 0,
            });
        }
    }

    /// The Initial packet closing an attempt with INVALID_TOKEN (RFC 9000 §10.2.3: a
    /// CONNECTION_CLOSE of type 0x1c in an Initial packet).
    #[cfg(feature = "server")]
    fn emit_invalid_token_close(&self, r: &PendingRetry, buf: &mut [u8]) -> Option<usize> {
        use crate::frame::Frame;
        let keys = packet::initial_keys(&self.provider, r.version, &r.odcid).ok()?;
        let mut w = crate::coding::Writer::new(buf);
        let h = packet::LongHeader {
            ty: packet::LongType::Initial,
            version: r.version,
            dcid: &r.client_scid,
            scid: &r.scid,
            token: &[],
        };
        let off = h.emit(&mut w, 0, 1).ok()?;
        let close = Frame::ConnectionClose {
            error_code: crate::VarInt::from_u32(crate::TransportErrorCode::INVALID_TOKEN.0 as u32),
            frame_type: crate::VarInt::ZERO,
            reason: &[],
        };
        close.emit(&mut w).ok()?;
        // PADDING so the header-protection sample exists (RFC 9001 §5.4.2).
        w.put_repeated(0, 4).ok()?;
        let len = w.position() + packet::TAG_LEN;
        let pkt = buf.get_mut(..len)?;
        off.set_length(pkt, len).ok()?;
        keys.server.protect(pkt, off.pn_offset, 0).ok()?;
        Some(len)
    }

    /// RFC 9000 §8.1.3: gives the connection in slot `i` a NEW_TOKEN token once its
    /// handshake is confirmed.
    #[cfg(feature = "server")]
    fn give_new_token(&mut self, i: usize, now: Instant) {
        let Some(c) = self.table.as_mut().get_mut(i).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        if !c.wants_new_token() {
            return;
        }
        let remote = c.remote();
        // RFC 9369 §5: "When a connection includes compatible version negotiation, any
        // issued server tokens are considered to originate from the negotiated version".
        let version = c.version();
        let mut nonce = [0u8; 12];
        if self.rng.fill(&mut nonce).is_err() {
            return;
        }
        let mut token = [0u8; TOKEN_MAX];
        let Some(n) = crate::token::seal_token(
            &self.provider,
            &self.tokens,
            crate::token::TokenKind::NewToken,
            &remote,
            version,
            now,
            &[],
            &[],
            nonce,
            &mut token,
        ) else {
            return;
        };
        let Some(c) = self.table.as_mut().get_mut(i).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        if c.send_new_token(token.get(..n).unwrap_or(&[])) {
            self.stats.new_tokens = self.stats.new_tokens.saturating_add(1);
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
        #[cfg(feature = "stateless-reset")]
        if let Some(r) = self.reset.take() {
            if let Some(len) = reset::write_reset(buf, r.len, &r.token, &mut self.rng) {
                self.stats.resets_sent = self.stats.resets_sent.saturating_add(1);
                return Some(Transmit {
                    destination: r.to,
                    len,
                    ecn: crate::recovery::Ecn::NotEct,
                    segment_size: None,
                    src: None,
                });
            }
        }
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
                    ecn: crate::recovery::Ecn::NotEct,
                    segment_size: None,
                    src: None,
                });
            }
        }
        #[cfg(feature = "server")]
        if let Some(t) = self.poll_retry(buf) {
            return Some(t);
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

    /// A pending Retry packet, written into `buf`.
    #[cfg(feature = "server")]
    fn poll_retry(&mut self, buf: &mut [u8]) -> Option<Transmit> {
        let r = self.retries.iter_mut().find_map(Option::take)?;
        if r.token_len == 0 {
            let len = self.emit_invalid_token_close(&r, buf)?;
            return Some(Transmit {
                destination: r.to,
                len,
                ecn: crate::recovery::Ecn::NotEct,
                segment_size: None,
                src: None,
            });
        }
        let mut unused = [0u8; 1];
        let _ = self.rng.fill(&mut unused);
        let retry = packet::Retry {
            version: r.version,
            dcid: &r.client_scid,
            scid: &r.scid,
            token: r.token.get(..usize::from(r.token_len))?,
        };
        let len = retry.emit(&self.provider, unused[0], &r.odcid, buf).ok()?;
        self.stats.retries_sent = self.stats.retries_sent.saturating_add(1);
        Some(Transmit {
            destination: r.to,
            len,
            ecn: crate::recovery::Ecn::NotEct,
            segment_size: None,
            src: None,
        })
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

// Only `reset_tests` uses the alias.
#[cfg(all(test, feature = "server", feature = "stateless-reset"))]
use tests as tests_support;

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
    pub(super) type ClientEp = Endpoint<
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
    pub(super) type Acceptor =
        std::boxed::Box<dyn FnMut(Instant) -> Option<(SSess, Storage<Vec<u8>, Vec<u8>, 4>)>>;
    pub(super) type ServerEp = Endpoint<
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

    pub(super) fn server_ep(cap: usize, half_open: usize, cfgs: &Configs) -> ServerEp {
        server_ep_retry(cap, half_open, cfgs, RetryPolicy::Never)
    }

    fn server_ep_retry(
        cap: usize,
        half_open: usize,
        cfgs: &Configs,
        retry: RetryPolicy,
    ) -> ServerEp {
        let cfg = cfgs.server;
        let acc: Acceptor = std::boxed::Box::new(move |_| {
            Some((ServerSession::new(P, cfg, 0), storage(4096, 16384)))
        });
        let table = (0..cap).map(|_| Slot::new()).collect();
        Endpoint::new(
            EndpointConfig::server(crate::ConnectionConfig::server(), half_open).with_retry(retry),
            P,
            acc,
            table,
            &mut TestRng(9),
        )
        .unwrap()
    }

    pub(super) fn client_ep(cap: usize) -> ClientEp {
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
    pub(super) fn pump(c: &mut ClientEp, s: &mut ServerEp, now: &mut Instant, rounds: usize) {
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

    /// The client's next datagram, as bytes.
    fn next_datagram(c: &mut ClientEp, now: Instant) -> Vec<u8> {
        let mut buf = vec![0u8; 2048];
        let t = c.poll_transmit(now, &mut buf).expect("client datagram");
        buf[..t.len].to_vec()
    }

    #[test]
    fn retry_always_then_new_token_skips_retry() {
        let cfgs = configs();
        let mut s = server_ep_retry(4, 4, &cfgs, RetryPolicy::Always);
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
        // The first Initial gets a Retry and no connection.
        let mut first = next_datagram(&mut c, now);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut first);
        assert_eq!(s.len(), 0);
        pump(&mut c, &mut s, &mut now, 6);
        assert_eq!(s.stats().retries_sent, 1);
        let conn = c.connection(h).unwrap();
        assert!(conn.is_handshake_confirmed(), "handshake after Retry");
        assert_eq!(conn.stats().retries, 1);
        // The server's transport parameters named the original DCID and the Retry SCID,
        // which the client checked (a mismatch would have closed the connection).
        assert!(conn.close_reason().is_none());
        let sh = s.handles().next().unwrap();
        // RFC 9000 §8.1.2: a valid Retry token validates the address at once.
        assert!(s.connection(sh).unwrap().is_address_validated());
        assert_eq!(s.stats().new_tokens, 1);
        let mut events = Vec::new();
        while let Some((_, e)) = c.poll_event() {
            events.push(e);
        }
        assert!(events.contains(&Event::NewToken), "{events:?}");
        let mut tok = [0u8; 128];
        let (n, v) = c.connection(h).unwrap().take_token(&mut tok).expect("NEW_TOKEN token");
        assert_eq!(v, crate::Version::V1);
        assert!(c.connection(h).unwrap().take_token(&mut tok).is_none());
        // A second connection (another port) with the NEW_TOKEN token: no Retry.
        let mut c2 = client_ep(1);
        let h2 = c2
            .connect_with_token(
                now,
                addr(SERVER_ADDR),
                ClientSession::new(P, cfgs.client, None),
                storage(4096, 16384),
                &tok[..n],
                v,
            )
            .unwrap();
        let mut d = next_datagram(&mut c2, now);
        let other_port = SocketAddr::new(addr(CLIENT_ADDR).ip(), addr(CLIENT_ADDR).port() + 1);
        s.handle_datagram(now, other_port, &mut d);
        assert_eq!(s.stats().retries_sent, 1, "no second Retry");
        assert_eq!(s.len(), 2);
        let sh2 = s.handles().find(|x| *x != sh).unwrap();
        assert!(s.connection(sh2).unwrap().is_address_validated());
        assert_eq!(c2.connection(h2).unwrap().stats().retries, 0);
    }

    #[test]
    fn attack_retry_token_replay_other_address() {
        let cfgs = configs();
        let mut s = server_ep_retry(4, 4, &cfgs, RetryPolicy::Always);
        let mut c = client_ep(1);
        let now = Instant::ZERO;
        c.connect(
            now,
            addr(SERVER_ADDR),
            ClientSession::new(P, cfgs.client, None),
            storage(4096, 16384),
        )
        .unwrap();
        let mut first = next_datagram(&mut c, now);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut first);
        let mut buf = vec![0u8; 2048];
        let t = s.poll_transmit(now, &mut buf).expect("Retry");
        let mut retry = buf[..t.len].to_vec();
        c.handle_datagram(now, addr(SERVER_ADDR), &mut retry);
        // The client's Initial with the Retry token, replayed from elsewhere: an attacker
        // cannot use it to have the server skip validation for another address.
        let with_token = next_datagram(&mut c, now);
        let spoofed: SocketAddr = "198.51.100.7:4433".parse().unwrap();
        let mut d = with_token.clone();
        s.handle_datagram(now, spoofed, &mut d);
        assert_eq!(s.len(), 0);
        assert_eq!(s.stats().invalid_tokens, 1);
        // RFC 9000 §8.1.2: a stateless INVALID_TOKEN close, far smaller than the Initial.
        let t = s.poll_transmit(now, &mut buf).expect("INVALID_TOKEN close");
        assert_eq!(t.destination, spoofed);
        assert!(t.len < 100, "{}", t.len);
        assert!(s.poll_transmit(now, &mut buf).is_none());
        // Expired: the same Initial from the right address 11 s later; the client learns
        // why from the close.
        let later = now + crate::time::Duration::from_secs(11);
        let mut d = with_token.clone();
        s.handle_datagram(later, addr(CLIENT_ADDR), &mut d);
        assert_eq!(s.len(), 0);
        assert_eq!(s.stats().invalid_tokens, 2);
        let t = s.poll_transmit(later, &mut buf).expect("INVALID_TOKEN close");
        let mut close = buf[..t.len].to_vec();
        let h = c.handles().next().unwrap();
        c.handle_datagram(later, addr(SERVER_ADDR), &mut close);
        match c.connection(h).unwrap().close_reason() {
            Some(crate::connection::CloseReason::Peer(cc)) => assert_eq!(cc.code, 0x0b),
            other => panic!("{other:?}"),
        }
        // From the right address in time: accepted (address validated).
        let mut d = with_token;
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
        assert_eq!(s.len(), 1);
        let sh = s.handles().next().unwrap();
        assert!(s.connection(sh).unwrap().is_address_validated());
    }

    #[test]
    fn retry_when_busy_and_client_ignores_bad_or_second_retry() {
        let cfgs = configs();
        // Retry from the second half-open connection on.
        let mut s = server_ep_retry(4, 4, &cfgs, RetryPolicy::WhenBusy { half_open_threshold: 1 });
        let now = Instant::ZERO;
        let mut c1 = client_ep(1);
        c1.connect(
            now,
            addr(SERVER_ADDR),
            ClientSession::new(P, cfgs.client, None),
            storage(4096, 16384),
        )
        .unwrap();
        let mut d = next_datagram(&mut c1, now);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
        assert_eq!((s.len(), s.stats().retries_sent), (1, 0));
        let mut buf = vec![0u8; 4096];
        while s.poll_transmit(now, &mut buf).is_some() {}
        let mut c2 = client_ep(1);
        let h2 = c2
            .connect(
                now,
                addr(SERVER_ADDR),
                ClientSession::new(P, cfgs.client, None),
                storage(4096, 16384),
            )
            .unwrap();
        let mut d = next_datagram(&mut c2, now);
        let other: SocketAddr = "10.0.0.9:1234".parse().unwrap();
        s.handle_datagram(now, other, &mut d);
        assert_eq!(s.len(), 1, "busy: no state for the second client");
        let t = s.poll_transmit(now, &mut buf).expect("Retry");
        assert_eq!(s.stats().retries_sent, 1);
        let retry = buf[..t.len].to_vec();
        // A Retry with a broken integrity tag is dropped.
        let mut bad = retry.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        c2.handle_datagram(now, addr(SERVER_ADDR), &mut bad);
        assert_eq!(c2.connection(h2).unwrap().stats().retries, 0);
        // The genuine one is acted on, a second (replayed) one ignored.
        let mut r = retry.clone();
        c2.handle_datagram(now, addr(SERVER_ADDR), &mut r);
        let mut r = retry;
        c2.handle_datagram(now, addr(SERVER_ADDR), &mut r);
        let conn = c2.connection(h2).unwrap();
        assert_eq!(conn.stats().retries, 1);
        if cfg!(feature = "stats") {
            assert!(conn.stats().packets_dropped >= 2);
        }
        let mut d = next_datagram(&mut c2, now);
        s.handle_datagram(now, other, &mut d);
        assert_eq!(s.len(), 2);
    }

    /// RFC 9000 §17.2.5: a Retry token may be of any length; quic-go's are 101 bytes, and a
    /// client that cannot keep one ignores the Retry and never connects.
    #[test]
    fn client_follows_a_retry_with_a_long_token() {
        let cfgs = configs();
        let now = Instant::ZERO;
        let mut c = client_ep(1);
        let h = c
            .connect(
                now,
                addr(SERVER_ADDR),
                ClientSession::new(P, cfgs.client, None),
                storage(4096, 16384),
            )
            .unwrap();
        let _first = next_datagram(&mut c, now);
        let conn = c.connection(h).unwrap();
        let (scid, odcid) = (*conn.local_cid(), *conn.original_dcid());
        let token = [0x5a; 101];
        let retry = packet::Retry {
            version: crate::Version::V1,
            dcid: &scid,
            scid: &[1, 2, 3, 4],
            token: &token,
        };
        let mut buf = vec![0u8; 512];
        let len = retry.emit(&P, 0, &odcid, &mut buf).unwrap();
        c.handle_datagram(now, addr(SERVER_ADDR), &mut buf[..len]);
        assert_eq!(c.connection(h).unwrap().stats().retries, 1);
        // The next Initial carries the whole token.
        let d = next_datagram(&mut c, now);
        assert!(d.windows(token.len()).any(|w| w == token));
    }

    /// RFC 9369 §5 and RFC 9368 compatible negotiation (feature `v2`) with tokens.
    #[cfg(feature = "v2")]
    mod versions {
        use super::*;
        use crate::Version;

        fn versions(
            mut c: crate::ConnectionConfig,
            v: Version,
            compatible: Option<Version>,
        ) -> crate::ConnectionConfig {
            c.version = v;
            c.compatible_version = compatible;
            c
        }

        /// A server that asks every client without a valid token for a Retry and switches
        /// v1 connections to v2.
        fn server(cfgs: &Configs) -> ServerEp {
            let cfg = cfgs.server;
            let acc: Acceptor = std::boxed::Box::new(move |_| {
                Some((ServerSession::new(P, cfg, 0), storage(4096, 16384)))
            });
            let cc = versions(crate::ConnectionConfig::server(), Version::V1, Some(Version::V2));
            let table = (0..8).map(|_| Slot::new()).collect();
            let config = EndpointConfig::server(cc, 8).with_retry(RetryPolicy::Always);
            Endpoint::new(config, P, acc, table, &mut TestRng(9)).unwrap()
        }

        fn client(v: Version, compatible: Option<Version>) -> ClientEp {
            let cc = versions(crate::ConnectionConfig::device(), v, compatible);
            let table = (0..1).map(|_| Slot::new()).collect();
            Endpoint::new(EndpointConfig::client(cc), P, NoAccept, table, &mut TestRng(3)).unwrap()
        }

        /// What a client's first Initial got from the server.
        #[derive(Debug, PartialEq, Eq)]
        struct Answer {
            /// A Retry (and nothing else) came back.
            retry: bool,
            /// Something other than a Retry came back (a close or a handshake).
            other: bool,
            invalid_tokens: u64,
            connections: usize,
            validated: bool,
        }

        /// A second client (another port), starting in `v` with the token it claims is of
        /// `claimed`; what its first Initial got from the server.
        fn second(
            s: &mut ServerEp,
            cfgs: &Configs,
            v: Version,
            token: &[u8],
            claimed: Version,
            port: u16,
        ) -> Answer {
            let now = Instant::ZERO;
            let mut c = client(v, None);
            let tls = ClientSession::new(P, cfgs.client, None);
            c.connect_with_token(now, addr(SERVER_ADDR), tls, storage(4096, 16384), token, claimed)
                .unwrap();
            let mut d = next_datagram(&mut c, now);
            let from = SocketAddr::new(addr(CLIENT_ADDR).ip(), port);
            s.handle_datagram(now, from, &mut d);
            let handles: Vec<_> = s.handles().collect();
            let validated = handles.into_iter().any(|h| {
                s.connection(h).is_some_and(|c| c.remote() == from && c.is_address_validated())
            });
            let (mut retry, mut other) = (false, false);
            let mut buf = vec![0u8; 4096];
            while let Some(t) = s.poll_transmit(now, &mut buf) {
                match packet::parse(&buf[..t.len], 0, false).map(|p| p.header) {
                    Ok(Header::Retry(_)) => retry = true,
                    _ => other = true,
                }
            }
            let invalid_tokens = s.stats().invalid_tokens;
            Answer { retry, other, invalid_tokens, connections: s.len(), validated }
        }

        /// "When a connection includes compatible version negotiation, any issued server
        /// tokens are considered to originate from the negotiated version": the NEW_TOKEN
        /// token of a v1 → v2 connection is a v2 token. "Clients MUST NOT use a ... token
        /// from a QUIC version 1 connection to initiate a QUIC version 2 connection, and
        /// vice versa": a client starting in v1 leaves it out (a Retry, no invalid token).
        /// "Servers MUST validate the originating version of any ... token and not accept
        /// one issued from a different version. A rejected token results in the client
        /// address remaining unverified": a client that sends it in v1 anyway gets a Retry
        /// and the token counts as invalid. In a v2 Initial it validates the address.
        #[test]
        fn new_token_is_for_the_negotiated_version_only() {
            let cfgs = configs();
            let mut s = server(&cfgs);
            let mut c = client(Version::V1, Some(Version::V2));
            let mut now = Instant::ZERO;
            let h = c
                .connect(
                    now,
                    addr(SERVER_ADDR),
                    ClientSession::new(P, cfgs.client, None),
                    storage(4096, 16384),
                )
                .unwrap();
            pump(&mut c, &mut s, &mut now, 6);
            let conn = c.connection(h).unwrap();
            assert!(conn.is_handshake_confirmed());
            assert_eq!((conn.original_version(), conn.version()), (Version::V1, Version::V2));
            assert_eq!(conn.stats().retries, 1);
            let mut tok = [0u8; TOKEN_MAX];
            let (n, v) = conn.take_token(&mut tok).expect("NEW_TOKEN token");
            assert_eq!(v, Version::V2);
            let tok = &tok[..n];
            assert_eq!((s.stats().retries_sent, s.stats().invalid_tokens, s.len()), (1, 0, 1));
            let retry = |invalid_tokens| Answer {
                retry: true,
                other: false,
                invalid_tokens,
                connections: 1,
                validated: false,
            };
            // A v1 client leaves the v2 token out: a Retry, nothing invalid seen.
            assert_eq!(second(&mut s, &cfgs, Version::V1, tok, v, 6001), retry(0));
            // Sent in a v1 Initial anyway: invalid, so a Retry.
            assert_eq!(second(&mut s, &cfgs, Version::V1, tok, Version::V1, 6002), retry(1));
            // In a v2 Initial: the address is validated at once, no Retry.
            let a = second(&mut s, &cfgs, Version::V2, tok, v, 6003);
            assert!(!a.retry && a.other, "{a:?}");
            assert_eq!((a.invalid_tokens, a.connections, a.validated), (1, 2, true));
        }

        /// RFC 9369 §4.1: "The client MUST NOT use a different version in the subsequent
        /// Initial packet that contains the Retry token. The server MAY encode the QUIC
        /// version in its Retry token to validate that the client did not switch versions,
        /// and drop the packet if it switched." A client that follows our v1 Retry with a
        /// v2 Initial (same address, the Retry's connection ID and token) is dropped: no
        /// connection, no INVALID_TOKEN close. In v1 the same token is accepted.
        #[test]
        fn retry_token_in_another_version_is_dropped() {
            let cfgs = configs();
            let mut s = server(&cfgs);
            let now = Instant::ZERO;
            let connect = |v: Version| {
                let mut c = client(v, None);
                let tls = ClientSession::new(P, cfgs.client, None);
                let h = c.connect(now, addr(SERVER_ADDR), tls, storage(4096, 16384)).unwrap();
                (c, h)
            };
            let (mut c1, _) = connect(Version::V1);
            let mut first = next_datagram(&mut c1, now);
            s.handle_datagram(now, addr(CLIENT_ADDR), &mut first);
            let mut buf = vec![0u8; 2048];
            let t = s.poll_transmit(now, &mut buf).expect("Retry");
            let mut retry = buf[..t.len].to_vec();
            let p = packet::parse(&retry, 0, false).unwrap();
            let Header::Retry(r) = p.header else { panic!("not a Retry") };
            assert_eq!(r.version, Version::V1);
            let (token, retry_scid) = (r.token.to_vec(), r.scid.to_vec());
            // A v2 client given the same Retry (in v2: it ignores other versions).
            let (mut c2, h2) = connect(Version::V2);
            let _ = next_datagram(&mut c2, now);
            let conn = c2.connection(h2).unwrap();
            let (scid, odcid) = (*conn.local_cid(), *conn.original_dcid());
            let v2_retry = packet::Retry {
                version: Version::V2,
                dcid: &scid,
                scid: &retry_scid,
                token: &token,
            };
            let len = v2_retry.emit(&P, 0, &odcid, &mut buf).unwrap();
            c2.handle_datagram(now, addr(SERVER_ADDR), &mut buf[..len]);
            assert_eq!(c2.connection(h2).unwrap().stats().retries, 1);
            let mut d = next_datagram(&mut c2, now);
            assert_eq!(&d[1..5], &Version::V2.0.to_be_bytes());
            s.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
            assert_eq!((s.len(), s.stats().invalid_tokens), (0, 1));
            assert!(s.poll_transmit(now, &mut buf).is_none(), "dropped, no INVALID_TOKEN close");
            // The v1 client that got the Retry: accepted, its address validated.
            c1.handle_datagram(now, addr(SERVER_ADDR), &mut retry);
            let mut d = next_datagram(&mut c1, now);
            s.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
            assert_eq!((s.len(), s.stats().invalid_tokens), (1, 1));
            let sh = s.handles().next().unwrap();
            assert!(s.connection(sh).unwrap().is_address_validated());
        }
    }
}

#[cfg(all(test, feature = "server", feature = "stateless-reset"))]
mod reset_tests {
    use std::vec;

    use mote_tls::{ClientSession, ServerSession};

    use super::tests_support::*;
    use super::*;
    use crate::connection::tests::{addr, configs, storage, TestRng, CLIENT_ADDR, P, SERVER_ADDR};
    use crate::connection::CloseReason;
    use crate::frame::StreamDir;

    const KEY: [u8; 32] = [0x42; 32];

    fn keyed_server(seed: u64) -> ServerEp {
        let cfgs = configs();
        let cfg = cfgs.server;
        let acc: Acceptor = std::boxed::Box::new(move |_| {
            Some((ServerSession::new(P, cfg, 0), storage(4096, 16384)))
        });
        let mut connection = crate::ConnectionConfig::server();
        connection.stateless_reset_key = Some(KEY);
        let table = (0..4).map(|_| Slot::new()).collect();
        Endpoint::new(EndpointConfig::server(connection, 4), P, acc, table, &mut TestRng(seed))
            .unwrap()
    }

    #[test]
    fn restarted_server_resets_and_client_detects_it() {
        let cfgs = configs();
        let mut s = keyed_server(9);
        let mut c = client_ep(1);
        let mut now = Instant::ZERO;
        let h = c
            .connect(
                now,
                addr(SERVER_ADDR),
                ClientSession::new(P, cfgs.client, None),
                storage(4096, 16384),
            )
            .unwrap();
        pump(&mut c, &mut s, &mut now, 6);
        assert!(c.connection(h).unwrap().is_handshake_confirmed());
        // The server restarts: same key, no state.
        let mut s = keyed_server(10);
        let conn = c.connection(h).unwrap();
        let id = conn.stream_open(StreamDir::Bidi).unwrap();
        conn.stream_send(id, b"hello?").unwrap();
        pump(&mut c, &mut s, &mut now, 2);
        assert_eq!(s.stats().resets_sent, 1);
        assert!(s.is_empty());
        assert_eq!(c.stats().resets_received, 1);
        let mut closed = None;
        while let Some((hh, e)) = c.poll_event() {
            assert_eq!(hh, h);
            if e == Event::Closed {
                closed = c.connection_ref(h).and_then(|c| c.close_reason());
            }
        }
        assert_eq!(closed, Some(CloseReason::StatelessReset));
        assert!(c.is_empty(), "drained and removed");
    }

    #[test]
    fn resets_are_smaller_rate_limited_and_need_a_key() {
        let mut s = keyed_server(11);
        let now = Instant::ZERO;
        let mut buf = vec![0u8; 2048];
        // A short header for an unknown 8-byte connection ID.
        let mut short = vec![0x40u8; 30];
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut short.clone());
        let t = s.poll_transmit(now, &mut buf).unwrap();
        assert_eq!(t.len, 29, "one byte smaller than the trigger");
        assert_eq!(buf[0] & 0xc0, 0x40, "looks like a short header");
        let token = reset::derive_token(&P, &KEY, &short[1..9]).unwrap();
        assert_eq!(&buf[t.len - 16..t.len], &token);
        // Too small to answer (a reset of a reset of ... ends here).
        short.truncate(21);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut short.clone());
        assert!(s.poll_transmit(now, &mut buf).is_none());
        // A flood: at most RESETS_PER_WINDOW per window (the first reset above counts).
        let mut sent = 0;
        for _ in 0..1000 {
            let mut d = vec![0x40u8; 1200];
            s.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
            while let Some(t) = s.poll_transmit(now, &mut buf) {
                assert!(t.len <= reset::MAX_RESET_SIZE);
                sent += 1;
            }
        }
        assert_eq!(sent, reset::RESETS_PER_WINDOW as usize - 1);
        // The next window allows more.
        let later = now + reset::RESET_WINDOW;
        let mut d = vec![0x40u8; 1200];
        s.handle_datagram(later, addr(CLIENT_ADDR), &mut d);
        assert!(s.poll_transmit(later, &mut buf).is_some());
        // Without a key: no resets at all.
        let cfgs = configs();
        let mut plain = server_ep(2, 2, &cfgs);
        let mut d = vec![0x40u8; 1200];
        plain.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
        assert!(plain.poll_transmit(now, &mut buf).is_none());
    }
}
