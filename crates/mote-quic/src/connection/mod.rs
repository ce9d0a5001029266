//! A QUIC connection (RFC 9000, 9001, 9002): the sans-IO state machine of the design brief.
//!
//! ```text
//! handle_datagram(now, remote, &mut [u8])      datagrams in (coalesced packets; GRO batches
//! handle_recv(now, &RecvInfo, &mut [u8])        with a segment size)
//! handle_timeout(now)                           timers
//! poll_transmit(now, &mut [u8]) -> Transmit     datagrams out (a GSO batch when allowed)
//! poll_timeout() -> Option<Instant>             when to call handle_timeout
//! poll_event() -> Option<Event>                 what happened
//! stream_open / stream_send / stream_finish / stream_recv / stream_reset / stop_sending
//! close(app_code, reason)
//! ```
//!
//! The connection never reads a clock, touches a socket or allocates. Its state is inline
//! and bounded by const generics (`N` stream slots, `SENT` Application Data sent-packet
//! records, `RANGES` range entries); byte buffers are the caller's [`Storage`]. The TLS
//! handshake is a mote-tls session ([`TlsSession`]) driven through the hooks in [`tls`];
//! loss recovery, congestion control and pacing come from [`crate::recovery`], streams and
//! flow control from [`crate::stream`].
//!
//! # Memory (device profile)
//! `Connection<RustCrypto, ClientSession<RustCrypto, 1024>, &mut [u8], &mut [u8], 3, 16, 4>`
//! is 13 856 bytes on `thumbv7em-none-eabihf` in the minimal build (15 160 with
//! `resumption`), buffers excluded; about a third are the AES key schedules of three
//! encryption levels. ARCHITECTURE.md breaks it down; `tests::memory_footprint` pins the host
//! sizes.
//!
//! # Not yet
//! Retry and NEW_TOKEN (address validation), stateless reset, connection migration and
//! connection-ID rotation (NEW_CONNECTION_ID is validated and ignored), path MTU discovery,
//! ECN validation, DATAGRAM frames, initiating 0-RTT rejection handling beyond re-sending.

mod config;
#[cfg(feature = "server")]
pub mod fuzz;
mod recv;
pub mod rng;
mod send;
mod sent;
pub mod tls;

// The pair tests need a server connection.
#[cfg(all(test, feature = "server"))]
pub(crate) mod tests;

use core::net::SocketAddr;

use mote_crypto::{CryptoProvider, CryptoRng};

pub use config::ConnectionConfig;
pub use sent::{SentFrames, CONTROLS_PER_PACKET, CONTROL_SLOTS};
pub use tls::{TlsSession, CRYPTO_RANGES, LOCAL_TP_MAX};

use crate::cid::ConnectionId;
use crate::coding::{VarInt, Writer};
use crate::error::TransportErrorCode;
use crate::frame::StreamDir;
use crate::packet::initial_keys;
use crate::recovery::{Ecn, NewReno, PnSpace, ReceivedPackets, Recovery};
use crate::stream::{CryptoRecv, CryptoSend, OpenError, Read, StreamId, Streams, WriteError};
use crate::time::{Duration, Instant};
use crate::transport_params::{Side, TransportParameters};
use crate::version::Version;
use rng::Drbg;
use sent::ControlTable;
use tls::{Cids, DirKeys, Handshake, HsSignals, Keys};

/// Sent-packet records of the Initial and of the Handshake space.
pub const HANDSHAKE_SENT: usize = 8;
/// Received-packet ranges kept for the Initial and the Handshake space.
pub const HANDSHAKE_RANGES: usize = 4;
/// Events queued at most; further events of a kind already queued are merged.
pub const EVENT_CAPACITY: usize = 16;
/// Bytes of a CONNECTION_CLOSE reason phrase kept (ours and the peer's). Without the
/// `err-reasons` feature none are kept or sent (RFC 9000 §19.19 allows an empty phrase), so
/// a device carries no reason storage or copying.
pub const REASON_MAX: usize = if cfg!(feature = "err-reasons") { 32 } else { 0 };
/// RFC 9000 §14.1: the smallest maximum datagram size, and the size client Initial
/// datagrams are padded to.
pub const MIN_INITIAL_SIZE: usize = 1200;

/// The byte buffers of a connection, owned by it: CRYPTO send and receive buffers for the
/// Initial, Handshake and 1-RTT levels, and a (send, receive) pair per stream slot.
///
/// Any `AsRef<[u8]> + AsMut<[u8]>` works: `[u8; K]` arrays inline (a device), `&'static mut
/// [u8]` slices of different sizes, or `Vec<u8>` on a host.
pub struct Storage<C, S, const N: usize> {
    /// `(send, receive)` CRYPTO buffers of the Initial, Handshake and 1-RTT levels. RFC 9000
    /// §7.5 asks for 4096 bytes of receive buffering; a raw-public-key handshake needs a few
    /// hundred (a device can give less and accept CRYPTO_BUFFER_EXCEEDED from an unexpected
    /// certificate chain).
    pub crypto: [(C, C); 3],
    /// `(send, receive)` buffers of each stream slot; the receive buffer bounds the stream's
    /// flow-control window.
    pub streams: [(S, S); N],
}

/// How a datagram arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// The sender's address.
    pub remote: SocketAddr,
    /// The ECN codepoint of its IP header.
    pub ecn: Ecn,
    /// `Some(n)`: the buffer holds several datagrams of `n` bytes (the last may be shorter)
    /// coalesced by GRO.
    pub segment_size: Option<usize>,
}

impl RecvInfo {
    /// A single datagram from `remote`, not ECN-marked.
    pub const fn new(remote: SocketAddr) -> Self {
        Self { remote, ecn: Ecn::NotEct, segment_size: None }
    }
}

/// Datagrams to send: the first `len` bytes of the buffer given to
/// [`Connection::poll_transmit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send them.
    pub destination: SocketAddr,
    /// Bytes written.
    pub len: usize,
    /// `Some(n)`: several datagrams of `n` bytes each, the last possibly shorter (a GSO
    /// batch, as quinn's `Transmit::segment_size`).
    pub segment_size: Option<usize>,
}

/// Something the application may want to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The TLS handshake completed (RFC 9001 §4.1.1): streams can be opened.
    HandshakeComplete,
    /// The handshake is confirmed (RFC 9001 §4.1.2).
    HandshakeConfirmed,
    /// The peer opened this stream.
    StreamOpened(StreamId),
    /// Data, the end of the stream or a reset can be read from this stream.
    StreamReadable(StreamId),
    /// The peer raised this stream's flow-control limit.
    StreamWritable(StreamId),
    /// The peer asked us to stop sending on this stream (STOP_SENDING); the stream was
    /// reset with its code.
    StreamStopped {
        /// The stream.
        id: StreamId,
        /// The peer's application error code.
        code: u64,
    },
    /// The peer allows more streams of this direction.
    StreamsAvailable(StreamDir),
    /// The client received a session ticket ([`Connection::take_ticket`], feature
    /// `resumption`).
    NewTicket,
    /// The server rejected the client's 0-RTT data; it is being sent again in 1-RTT
    /// packets (RFC 9001 §4.6.2).
    EarlyDataRejected,
    /// The connection can no longer carry data; [`Connection::close_reason`] says why.
    Closed,
    /// Nothing more will happen: the connection may be dropped.
    Drained,
}

/// A CONNECTION_CLOSE, sent or received (RFC 9000 §19.19).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionClose {
    /// Transport error code (frame 0x1c) or application error code (0x1d).
    pub code: u64,
    /// The frame type that triggered a transport error, when known.
    pub frame_type: Option<u64>,
    /// True for an application close (0x1d).
    pub application: bool,
    reason: [u8; REASON_MAX],
    reason_len: u8,
}

impl ConnectionClose {
    /// A close with `code` and the first [`REASON_MAX`] bytes of `reason`.
    pub fn new(code: u64, frame_type: Option<u64>, application: bool, reason: &[u8]) -> Self {
        let mut r = [0u8; REASON_MAX];
        // REASON_MAX is 0 without `err-reasons`.
        #[allow(clippy::unnecessary_min_or_max)]
        let n = reason.len().min(REASON_MAX);
        if let (Some(dst), Some(src)) = (r.get_mut(..n), reason.get(..n)) {
            dst.copy_from_slice(src);
        }
        Self { code, frame_type, application, reason: r, reason_len: n as u8 }
    }

    /// A transport error.
    pub fn transport(code: TransportErrorCode, frame_type: Option<u64>) -> Self {
        Self::new(code.0, frame_type, false, &[])
    }

    /// The reason phrase (truncated to [`REASON_MAX`] bytes).
    pub fn reason(&self) -> &[u8] {
        self.reason.get(..usize::from(self.reason_len)).unwrap_or(&[])
    }
}

/// Why the connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// We closed it: the application ([`Connection::close`]) or a transport error we
    /// detected.
    Local(ConnectionClose),
    /// The peer sent CONNECTION_CLOSE.
    Peer(ConnectionClose),
    /// No packet within the idle timeout (RFC 9000 §10.1).
    IdleTimeout,
    /// The server answered with Version Negotiation listing no version we speak (RFC 9000
    /// §6.2).
    VersionNegotiation,
}

/// Why a connection could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectError {
    /// The random number generator or a key derivation failed.
    Crypto(mote_crypto::Error),
    /// The TLS session refused to start.
    Tls(mote_tls::Error),
    /// The configuration is unusable (a connection-ID length above 20, a datagram size
    /// below 1200, a version this build does not speak).
    Config,
}

/// Counters kept by a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Packets sent, per space (Initial, Handshake, Application Data).
    pub packets_sent: [u64; 3],
    /// Datagrams received.
    pub datagrams_received: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Packets processed.
    pub packets_received: u64,
    /// Packets dropped: undecryptable, duplicate, for an unknown connection ID, or without
    /// keys.
    pub packets_dropped: u64,
    /// Sent packets declared lost (RFC 9002 §6.1).
    pub packets_lost: u64,
    /// PTOs that fired (RFC 9002 §6.2).
    pub ptos: u64,
    /// STREAM and CRYPTO bytes sent again after a loss or a PTO.
    pub bytes_retransmitted: u64,
    /// Key updates the peer initiated (RFC 9001 §6).
    pub key_updates: u32,
}

/// Our own CONNECTION_CLOSE, sent while closing.
#[derive(Clone, Copy, Debug)]
struct LocalClose {
    close: ConnectionClose,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the TLS handshake completes.
    Handshake,
    /// The handshake completed.
    Established,
    /// We sent CONNECTION_CLOSE (RFC 9000 §10.2.1), until three PTOs have passed.
    Closing { deadline: Instant },
    /// The peer closed (RFC 9000 §10.2.2).
    Draining { deadline: Instant },
    /// Over.
    Drained,
}

/// What the peer's transport parameters set, kept after the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PeerParams {
    idle_timeout_ms: u64,
    max_udp_payload_size: u64,
    ack_delay_exponent: u8,
}

/// A fixed ring of events with merging.
#[derive(Clone, Copy, Debug)]
struct Events {
    ring: [Option<Event>; EVENT_CAPACITY],
    head: usize,
    len: usize,
}

impl Events {
    const fn new() -> Self {
        Self { ring: [None; EVENT_CAPACITY], head: 0, len: 0 }
    }

    fn push(&mut self, e: Event) {
        if self.iter().any(|q| q == e) {
            return;
        }
        if self.len >= EVENT_CAPACITY {
            // Full: stream events are dropped (the application polls stream state anyway);
            // connection-level events replace the oldest stream event.
            let essential = matches!(
                e,
                Event::HandshakeComplete
                    | Event::HandshakeConfirmed
                    | Event::Closed
                    | Event::Drained
            );
            if !essential {
                return;
            }
            self.pop();
        }
        let mut i = self.head + self.len;
        if i >= EVENT_CAPACITY {
            i -= EVENT_CAPACITY;
        }
        if let Some(slot) = self.ring.get_mut(i) {
            *slot = Some(e);
            self.len += 1;
        }
    }

    fn pop(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        let e = self.ring.get_mut(self.head).and_then(Option::take);
        self.head += 1;
        if self.head >= EVENT_CAPACITY {
            self.head = 0;
        }
        self.len -= 1;
        e
    }

    fn iter(&self) -> impl Iterator<Item = Event> + '_ {
        (0..self.len).filter_map(move |k| {
            let mut i = self.head + k;
            if i >= EVENT_CAPACITY {
                i -= EVENT_CAPACITY;
            }
            self.ring.get(i).copied().flatten()
        })
    }
}

/// Index of a packet number space in per-space arrays.
const fn si(space: PnSpace) -> usize {
    match space {
        PnSpace::Initial => 0,
        PnSpace::Handshake => 1,
        PnSpace::ApplicationData => 2,
    }
}

/// A QUIC connection. See the [module documentation](self).
///
/// * `P`: the crypto provider; `T`: the TLS session (client or server);
/// * `C`: CRYPTO buffer storage, `S`: stream buffer storage ([`Storage`]);
/// * `N`: stream slots; `SENT`: sent-packet records of the Application Data space;
///   `RANGES`: received ranges of the Application Data space and range entries per stream
///   buffer.
pub struct Connection<
    P: CryptoProvider,
    T,
    C,
    S,
    const N: usize = 4,
    const SENT: usize = 32,
    const RANGES: usize = 8,
> {
    side: Side,
    config: ConnectionConfig,
    tls: T,
    state: State,
    remote: SocketAddr,
    /// Everything the TLS hooks write: keys, CRYPTO send buffers, CIDs, the DRBG.
    hs: Handshake<P, C>,
    crypto_recv: [CryptoRecv<C, CRYPTO_RANGES>; 3],
    rx_initial: ReceivedPackets<HANDSHAKE_RANGES>,
    rx_handshake: ReceivedPackets<HANDSHAKE_RANGES>,
    rx_data: ReceivedPackets<RANGES>,
    recovery: Recovery<SentFrames, NewReno, HANDSHAKE_SENT, HANDSHAKE_SENT, SENT>,
    streams: Streams<S, N, RANGES>,
    controls: ControlTable,
    peer: Option<PeerParams>,
    /// Client: the server's Source Connection ID was adopted from its first Initial.
    remote_cid_set: bool,
    handshake_complete: bool,
    handshake_confirmed: bool,
    /// Server: HANDSHAKE_DONE must be (re)sent.
    handshake_done_pending: bool,
    /// RFC 9000 §8.1: the peer's address is validated (always, for a client).
    address_validated: bool,
    /// Anti-amplification accounting (server, until validated).
    amp_received: u64,
    amp_sent: u64,
    /// PTO probes to send, per space.
    probes: [u8; 3],
    /// A PATH_CHALLENGE to answer.
    path_response: Option<[u8; 8]>,
    /// The application asked for a PING.
    ping_pending: bool,
    /// When the idle timer started, and whether an ack-eliciting packet went out since the
    /// last packet was received (RFC 9000 §10.1).
    idle_start: Instant,
    ack_eliciting_since_recv: bool,
    /// The pacer holds ack-eliciting data back until then.
    pacing_wakeup: Option<Instant>,
    /// A close packet is due (while closing).
    close_pending: bool,
    local_close: Option<LocalClose>,
    close_reason: Option<CloseReason>,
    events: Events,
    stats: ConnectionStats,
    /// Any packet from the peer was processed (a client then ignores Version Negotiation).
    any_packet: bool,
    /// The latest time the caller passed in (for deadlines set by `close`).
    last_now: Instant,
    /// Client: the server's remembered transport parameters were applied, so 0-RTT data may
    /// be sent (RFC 9000 §7.4.1).
    early_params: bool,
    /// Client: the server rejected 0-RTT.
    early_rejected: bool,
}

type Res<T = ()> = Result<T, ConnectionClose>;

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// Starts a client connection to `remote`: picks connection IDs, derives the Initial
    /// keys (RFC 9001 §5.2) and has `tls` write the ClientHello. The first
    /// [`Connection::poll_transmit`] sends it, padded to 1200 bytes.
    pub fn client(
        config: &ConnectionConfig,
        provider: P,
        tls: T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self, ConnectError> {
        let mut drbg = Drbg::from_rng(provider.clone(), rng).map_err(ConnectError::Crypto)?;
        // RFC 9000 §7.2: the client's first Destination Connection ID is unpredictable and
        // at least 8 bytes long.
        let original_dcid = random_cid(&mut drbg, 8)?;
        let local = random_cid(&mut drbg, config.local_cid_len)?;
        let cids = Cids { local, remote: original_dcid, original_dcid };
        let mut conn =
            Self::new(config, Side::Client, provider, tls, storage, now, remote, drbg, cids)?;
        let r = conn.tls.start(&mut conn.hs);
        r.map_err(ConnectError::Tls)?;
        Ok(conn)
    }

    /// Accepts a server connection for a client Initial: `client_dcid` and `client_scid` are
    /// the connection IDs of that Initial and `version` its version. Feed the datagram to
    /// [`Connection::handle_recv`] next.
    #[cfg(feature = "server")]
    #[allow(clippy::too_many_arguments)]
    pub fn server(
        config: &ConnectionConfig,
        provider: P,
        tls: T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        client_dcid: &[u8],
        client_scid: &[u8],
        version: Version,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self, ConnectError> {
        let mut drbg = Drbg::from_rng(provider.clone(), rng).map_err(ConnectError::Crypto)?;
        let local = random_cid(&mut drbg, config.local_cid_len)?;
        let original_dcid = ConnectionId::new(client_dcid).ok_or(ConnectError::Config)?;
        let remote_cid = ConnectionId::new(client_scid).ok_or(ConnectError::Config)?;
        let cids = Cids { local, remote: remote_cid, original_dcid };
        let mut config = *config;
        config.version = version;
        Self::new(&config, Side::Server, provider, tls, storage, now, remote, drbg, cids)
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        config: &ConnectionConfig,
        side: Side,
        provider: P,
        tls: T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        drbg: Drbg<P>,
        cids: Cids,
    ) -> Result<Self, ConnectError> {
        if config.local_cid_len > crate::cid::MAX_CID_LEN
            || usize::from(config.max_datagram_size) < MIN_INITIAL_SIZE
            || !config.version.is_supported()
            || T::SIDE != side
        {
            return Err(ConnectError::Config);
        }
        let mut config = *config;
        config.recovery.is_server = side == Side::Server;
        config.recovery.max_datagram_size = config.max_datagram_size;
        let version = config.version;

        // RFC 9001 §5.2: Initial keys from the client's first Destination Connection ID.
        let ik =
            initial_keys(&provider, version, &cids.original_dcid).map_err(ConnectError::Crypto)?;
        let initial = match side {
            Side::Client => DirKeys { tx: ik.client, rx: ik.server },
            Side::Server => DirKeys { tx: ik.server, rx: ik.client },
        };

        let Storage { crypto, streams } = storage;
        let [(cs0, cr0), (cs1, cr1), (cs2, cr2)] = crypto;
        let recv_buf = streams.iter().map(|(_, r)| r.as_ref().len()).min().unwrap_or(0);

        // Our transport parameters (RFC 9000 §7.4, §18.2).
        let mut tp = TransportParameters::DEFAULT;
        tp.max_idle_timeout = VarInt::from_u32(config.idle_timeout_ms);
        tp.max_udp_payload_size = VarInt::from(config.max_udp_payload_size);
        // Advertise the stream counts the table will accept (capped to the N slots).
        config.streams.for_slots(N).apply_to(&mut tp, recv_buf);
        tp.max_ack_delay = config.max_ack_delay_ms.min((1 << 14) - 1);
        // Connection migration is a later issue: ask the peer not to migrate.
        tp.disable_active_migration = true;
        tp.initial_source_connection_id = Some(cids.local);
        if side == Side::Server {
            tp.original_destination_connection_id = Some(cids.original_dcid);
        }
        let mut local_tp = [0u8; LOCAL_TP_MAX];
        let mut w = Writer::new(&mut local_tp);
        tp.encode(&mut w).map_err(|_| ConnectError::Config)?;
        let local_tp_len = w.position();

        let max_ack_delay = config.max_ack_delay();
        let threshold = config.ack_eliciting_threshold;
        let hs = Handshake {
            provider: provider.clone(),
            rng: drbg,
            side,
            version,
            crypto_send: [CryptoSend::new(cs0), CryptoSend::new(cs1), CryptoSend::new(cs2)],
            local_tp,
            local_tp_len,
            keys: Keys::new(initial),
            cids,
            peer_tp: None,
            signals: HsSignals::default(),
            #[cfg(feature = "resumption")]
            remembered_tp: [0; tls::REMEMBERED_TP_MAX],
            #[cfg(feature = "resumption")]
            remembered_tp_len: 0,
            #[cfg(feature = "resumption")]
            ticket: [0; tls::TICKET_MAX],
            #[cfg(feature = "resumption")]
            ticket_len: 0,
        };
        Ok(Self {
            side,
            config,
            tls,
            state: State::Handshake,
            remote,
            hs,
            crypto_recv: [CryptoRecv::new(cr0), CryptoRecv::new(cr1), CryptoRecv::new(cr2)],
            rx_initial: ReceivedPackets::new(PnSpace::Initial, max_ack_delay),
            rx_handshake: ReceivedPackets::new(PnSpace::Handshake, max_ack_delay),
            rx_data: ReceivedPackets::new(PnSpace::ApplicationData, max_ack_delay)
                .with_ack_eliciting_threshold(threshold),
            recovery: Recovery::new(config.recovery, NewReno::new(config.max_datagram_size)),
            streams: Streams::new(side, config.streams, streams),
            controls: ControlTable::new(),
            peer: None,
            remote_cid_set: false,
            handshake_complete: false,
            handshake_confirmed: false,
            handshake_done_pending: false,
            address_validated: side == Side::Client,
            amp_received: 0,
            amp_sent: 0,
            probes: [0; 3],
            path_response: None,
            ping_pending: false,
            idle_start: now,
            ack_eliciting_since_recv: false,
            pacing_wakeup: None,
            close_pending: false,
            local_close: None,
            close_reason: None,
            events: Events::new(),
            stats: ConnectionStats::default(),
            any_packet: false,
            last_now: now,
            early_params: false,
            early_rejected: false,
        })
    }

    // --- queries ---

    /// Client or server.
    pub const fn side(&self) -> Side {
        self.side
    }

    /// The peer's address.
    pub const fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// The connection ID the peer addresses us with.
    pub fn local_cid(&self) -> &ConnectionId {
        &self.hs.cids.local
    }

    /// The connection ID we address the peer with.
    pub fn remote_cid(&self) -> &ConnectionId {
        &self.hs.cids.remote
    }

    /// The Destination Connection ID of the client's first Initial (a server also accepts
    /// packets addressed to it until the client switches).
    pub fn original_dcid(&self) -> &ConnectionId {
        &self.hs.cids.original_dcid
    }

    /// The QUIC version.
    pub const fn version(&self) -> Version {
        self.hs.version
    }

    /// The TLS session (ALPN, suite, exporter, …).
    pub const fn tls(&self) -> &T {
        &self.tls
    }

    /// Whether the TLS handshake completed.
    pub const fn is_handshake_complete(&self) -> bool {
        self.handshake_complete
    }

    /// Whether the handshake is confirmed (RFC 9001 §4.1.2).
    pub const fn is_handshake_confirmed(&self) -> bool {
        self.handshake_confirmed
    }

    /// Whether the connection is closing, draining or drained.
    pub const fn is_closed(&self) -> bool {
        matches!(self.state, State::Closing { .. } | State::Draining { .. } | State::Drained)
    }

    /// Whether the connection is over and can be dropped.
    pub const fn is_drained(&self) -> bool {
        matches!(self.state, State::Drained)
    }

    /// Why the connection closed, once it has.
    pub const fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats;
        s.key_updates = self.hs.keys.one_rtt.as_ref().map_or(0, |k| k.updates);
        s
    }

    /// Loss recovery state (RTT estimates, congestion window, bytes in flight).
    pub const fn recovery(
        &self,
    ) -> &Recovery<SentFrames, NewReno, HANDSHAKE_SENT, HANDSHAKE_SENT, SENT> {
        &self.recovery
    }

    /// The stream table (read-only: limits, slots, credit).
    pub const fn streams(&self) -> &Streams<S, N, RANGES> {
        &self.streams
    }

    /// Whether the server has validated the client's address (RFC 9000 §8.1).
    pub const fn is_address_validated(&self) -> bool {
        self.address_validated
    }

    /// The effective idle timeout (RFC 9000 §10.1): the smaller of both sides' non-zero
    /// max_idle_timeout, at least three PTOs; `None` when neither side set one.
    pub fn idle_timeout(&self) -> Option<Duration> {
        let local = u64::from(self.config.idle_timeout_ms);
        let peer = self.peer.map_or(0, |p| p.idle_timeout_ms);
        let ms = match (local, peer) {
            (0, 0) => return None,
            (0, p) => p,
            (l, 0) => l,
            (l, p) => l.min(p),
        };
        let pto3 = self.recovery.pto_period().saturating_mul(3);
        Some(Duration::from_millis(ms).max(pto3))
    }

    /// Client: applies the server's transport parameters remembered with the session
    /// ticket this connection resumes with (`Ticket::server_transport_parameters`), so that
    /// streams can be opened and written in 0-RTT (RFC 9000 §7.4.1). Only once 0-RTT keys
    /// exist (the TLS session offered early data) and before the handshake completes; the
    /// parameters must decode. Returns whether 0-RTT data may now be sent.
    pub fn apply_remembered_params(&mut self, encoded: &[u8]) -> bool {
        if self.side != Side::Client
            || self.handshake_complete
            || self.hs.keys.zero_rtt().is_none()
            || self.early_params
        {
            return self.can_send_early_data();
        }
        match TransportParameters::decode(encoded, Side::Server) {
            Ok(tp) => {
                self.streams.on_peer_params(&tp);
                self.early_params = true;
            }
            Err(_) => return false,
        }
        self.can_send_early_data()
    }

    /// Whether stream data can go out in 0-RTT packets now: a client resuming with 0-RTT
    /// whose remembered parameters are applied, before the handshake completes and unless
    /// the server rejected early data.
    pub fn can_send_early_data(&self) -> bool {
        self.side == Side::Client
            && self.early_params
            && !self.early_rejected
            && !self.handshake_complete
            && self.hs.keys.zero_rtt().is_some()
    }

    /// Client: copies the latest session ticket, encoded with the server's remembered
    /// transport parameters, into `out` and forgets it; returns its length. Decode it with
    /// `mote_tls::Ticket::decode` to resume (feature `resumption`).
    #[cfg(feature = "resumption")]
    pub fn take_ticket(&mut self, out: &mut [u8]) -> Option<usize> {
        let n = self.hs.ticket_len;
        if n == 0 {
            return None;
        }
        let src = self.hs.ticket.get(..n)?;
        out.get_mut(..n)?.copy_from_slice(src);
        self.hs.ticket_len = 0;
        Some(n)
    }

    // --- events and timers ---    // --- events and timers ---

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop()
    }

    /// When [`Connection::handle_timeout`] must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Drained => return None,
            State::Closing { deadline } | State::Draining { deadline } => return Some(deadline),
            _ => {}
        }
        let mut t: Option<Instant> = None;
        let mut consider = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        consider(self.idle_deadline());
        consider(self.recovery.loss_detection_timer());
        if !self.amplification_blocked() {
            if self.hs.keys.initial.is_some() {
                consider(self.rx_initial.ack_deadline());
            }
            if self.hs.keys.handshake.is_some() {
                consider(self.rx_handshake.ack_deadline());
            }
            if self.hs.keys.one_rtt.is_some() {
                consider(self.rx_data.ack_deadline());
            }
            consider(self.pacing_wakeup);
        }
        t
    }

    fn idle_deadline(&self) -> Option<Instant> {
        self.idle_timeout().map(|d| self.idle_start + d)
    }

    /// Runs the timers due at `now`: closing and draining periods, the idle timeout, loss
    /// detection and PTO (RFC 9002 §6.2). ACK deadlines and pacing are handled by the next
    /// [`Connection::poll_transmit`].
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Drained => return,
            State::Closing { deadline: d } | State::Draining { deadline: d } => {
                if now >= d {
                    self.set_drained();
                }
                return;
            }
            _ => {}
        }
        // RFC 9000 §10.1: the connection is silently closed when the idle timeout expires.
        if self.idle_deadline().is_some_and(|d| now >= d) {
            self.close_reason = Some(CloseReason::IdleTimeout);
            self.events.push(Event::Closed);
            self.set_drained();
            return;
        }
        self.on_loss_timeout(now);
    }

    fn set_drained(&mut self) {
        self.state = State::Drained;
        self.events.push(Event::Drained);
    }

    // --- application data ---

    /// Opens a stream (RFC 9000 §2). Fails while the handshake is not complete, when the
    /// peer's MAX_STREAMS is reached (a STREAMS_BLOCKED frame is queued) or when no slot is
    /// free.
    pub fn stream_open(&mut self, dir: StreamDir) -> Result<StreamId, StreamOpenError> {
        if self.is_closed() {
            return Err(StreamOpenError::Closed);
        }
        if !self.handshake_complete && !self.can_send_early_data() {
            return Err(StreamOpenError::NotReady);
        }
        self.streams.open(dir).map_err(|e| match e {
            OpenError::Blocked => StreamOpenError::Blocked,
            OpenError::NoSlot => StreamOpenError::NoSlot,
        })
    }

    /// Writes as much of `data` to stream `id` as its buffer and the flow-control limits
    /// take; returns the bytes taken (0 when blocked).
    pub fn stream_send(&mut self, id: StreamId, data: &[u8]) -> Result<usize, WriteError> {
        if self.is_closed() {
            return Err(WriteError::UnknownStream);
        }
        self.streams.write(id, data)
    }

    /// Bytes [`Connection::stream_send`] would take on `id` now.
    pub fn stream_capacity(&self, id: StreamId) -> u64 {
        self.streams.send_capacity(id)
    }

    /// Ends stream `id` after the data written (FIN).
    pub fn stream_finish(&mut self, id: StreamId) -> Result<(), WriteError> {
        if self.is_closed() {
            return Err(WriteError::UnknownStream);
        }
        self.streams.finish(id)
    }

    /// Reads from stream `id` into `out`: data, the end of the stream, a reset, or nothing
    /// yet. `None` for a stream that does not exist (or is fully closed).
    pub fn stream_recv(&mut self, id: StreamId, out: &mut [u8]) -> Option<Read> {
        self.streams.read(id, out)
    }

    /// The live streams (local and peer-opened), in slot order. [`Event::StreamOpened`] is
    /// dropped when the event ring is full (e.g. a peer opening hundreds of streams between
    /// two polls); an application that may face that finds the peer's streams here.
    pub fn live_streams(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.streams.live()
    }

    /// Bytes ready to read on `id`.
    pub fn stream_readable(&self, id: StreamId) -> u64 {
        self.streams.readable(id)
    }

    /// Abandons sending on `id` (RESET_STREAM with `code`). False if nothing was reset.
    pub fn stream_reset(&mut self, id: StreamId, code: u64) -> bool {
        self.streams.reset(id, code)
    }

    /// Stops reading `id` (STOP_SENDING with `code`); buffered data is discarded.
    pub fn stop_sending(&mut self, id: StreamId, code: u64) {
        self.streams.stop_sending(id, code);
    }

    /// Sends a PING (e.g. a keep-alive).
    pub fn ping(&mut self) {
        self.ping_pending = true;
    }

    /// Starts a 1-RTT key update (RFC 9001 §6). Allowed once the handshake is confirmed
    /// (§6.1) and the previous update was answered; returns whether it started.
    pub fn initiate_key_update(&mut self) -> bool {
        if !self.handshake_confirmed || self.is_closed() {
            return false;
        }
        let (provider, version) = (&self.hs.provider, self.hs.version);
        match self.hs.keys.one_rtt.as_mut() {
            Some(k) => k.initiate(provider, version),
            None => false,
        }
    }

    /// Closes the connection with an application error code and reason (RFC 9000 §10.2):
    /// CONNECTION_CLOSE 0x1d in 1-RTT packets, or 0x1c with APPLICATION_ERROR in Initial
    /// and Handshake packets before 1-RTT keys exist (§10.2.3). The connection then stays in
    /// the closing state for three PTOs.
    pub fn close(&mut self, app_code: u64, reason: &[u8]) {
        if self.is_closed() {
            return;
        }
        self.enter_closing(ConnectionClose::new(app_code, None, true, reason));
    }

    /// Enters the closing state with `close` (RFC 9000 §10.2.1).
    fn enter_closing(&mut self, close: ConnectionClose) {
        if self.is_closed() {
            return;
        }
        self.local_close = Some(LocalClose { close });
        self.close_reason = Some(CloseReason::Local(close));
        let deadline = self.last_now + self.recovery.pto_period().saturating_mul(3);
        self.state = State::Closing { deadline };
        self.close_pending = true;
        self.events.push(Event::Closed);
    }

    /// Enters the draining state after the peer's CONNECTION_CLOSE (RFC 9000 §10.2.2).
    fn enter_draining(&mut self, now: Instant, close: ConnectionClose) {
        if matches!(self.state, State::Draining { .. } | State::Drained) {
            return;
        }
        let was_closed = self.is_closed();
        if !was_closed {
            self.close_reason = Some(CloseReason::Peer(close));
            self.events.push(Event::Closed);
        }
        let deadline = now + self.recovery.pto_period().saturating_mul(3);
        self.state = State::Draining { deadline };
        self.close_pending = false;
    }

    /// Whether the server may not send anything until more bytes arrive (RFC 9000 §8.1).
    fn amplification_blocked(&self) -> bool {
        self.amplification_room() < 64
    }

    /// Bytes the anti-amplification limit still allows (RFC 9000 §8.1: three times the
    /// bytes received, until the client's address is validated).
    fn amplification_room(&self) -> u64 {
        if self.address_validated {
            return u64::MAX;
        }
        self.amp_received.saturating_mul(3).saturating_sub(self.amp_sent)
    }
}

/// Why [`Connection::stream_open`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamOpenError {
    /// The handshake has not completed.
    NotReady,
    /// The peer's stream limit is reached; STREAMS_BLOCKED is queued and
    /// [`Event::StreamsAvailable`] follows when it is raised.
    Blocked,
    /// Every local stream slot is in use.
    NoSlot,
    /// The connection is closed.
    Closed,
}

/// A random connection ID of `len` bytes (RFC 9000 §5.1).
fn random_cid<P: CryptoProvider>(
    rng: &mut Drbg<P>,
    len: usize,
) -> Result<ConnectionId, ConnectError> {
    let mut b = [0u8; crate::cid::MAX_CID_LEN];
    let bytes = b.get_mut(..len).ok_or(ConnectError::Config)?;
    rng.fill(bytes).map_err(ConnectError::Crypto)?;
    ConnectionId::new(bytes).ok_or(ConnectError::Config)
}
