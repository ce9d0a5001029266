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
//! is 14 512 bytes on `thumbv7em-none-eabihf` in the minimal build (15 888 with
//! `zero-rtt`), buffers excluded; about a third are the AES key schedules of three
//! encryption levels (plus the previous 1-RTT read key kept across a key update). ARCHITECTURE.md breaks it down; `tests::memory_footprint` pins the host
//! sizes.
//!
//! # Paths
//! Connection-ID rotation (the `cids` tables, `rotation`) and ECN marking and validation
//! (`path::Ecn`) are always built; path validation and migration (`migrate`, feature
//! `migration`), DPLPMTUD (`mtu`, feature `pmtud`) and stateless reset detection (feature
//! `stateless-reset`) are features a device can drop.
//!
//! # Address validation, versions, key updates, datagrams
//! A client acts on one Retry (new DCID and Initial keys, its token in every Initial) and
//! keeps the server's NEW_TOKEN token for the next connection ([`Connection::take_token`],
//! [`Connection::set_token`]); a server connection starts validated when the endpoint
//! checked its token ([`Connection::server_validated`]) and sends the NEW_TOKEN the endpoint
//! mints. `version_information` is sent and checked (RFC 9368 §4) and a server switches a
//! client offering [`ConnectionConfig::compatible_version`] to it after the first Initial.
//! Key updates keep the previous read key for three PTOs and respect the AEAD limits
//! ([`AeadLimits`]). DATAGRAM frames (feature `datagram`) use two bounded queues.

pub(crate) mod cids;
pub(crate) mod client_tp;
mod config;
mod counters;
#[cfg(feature = "datagram")]
mod datagram;
#[cfg(feature = "server")]
pub mod fuzz;
pub(crate) mod init;
pub(crate) mod key_slot;
#[cfg(feature = "keylog")]
pub mod keylog;
#[cfg(feature = "migration")]
mod migrate;
mod mtu;
#[cfg(feature = "qlog")]
pub mod packet_log;
mod path;
pub(crate) mod random_cid;
pub(crate) mod recv;
#[cfg(feature = "stateless-reset")]
mod reset;
pub mod rng;
mod rotation;
pub(crate) mod send;
mod sent;
pub mod tls;

// The pair tests need a server connection.
#[cfg(all(test, feature = "server"))]
pub(crate) mod tests;
// Attack-class regression tests (RFC 9000 §21), on the same pairs.
#[cfg(all(test, feature = "server"))]
mod tests_attacks;

use core::net::SocketAddr;

use mote_crypto::{CryptoProvider, CryptoRng};

pub use cids::{LOCAL_CIDS, REMOTE_CIDS, RETIRE_QUEUE};
pub use config::{AeadLimits, ConnectionConfig, DEVICE_MAX_IDLE_TIMEOUT_MS};
#[cfg(feature = "datagram")]
pub use datagram::{DatagramError, DATAGRAM_QUEUE_BYTES, DATAGRAM_QUEUE_LEN};
#[cfg(feature = "migration")]
pub use migrate::MigrateError;
pub use path::EcnState;
#[cfg(feature = "migration")]
pub use path::{PATH_CHALLENGES, PATH_RESPONSES};
pub use sent::{SentFrames, CONTROLS_PER_PACKET, CONTROL_SLOTS};
pub use tls::{TlsSession, CRYPTO_RANGES, LOCAL_TP_MAX};

use crate::arith::Sat64 as _;
use crate::token::TOKEN_MAX;

use crate::cid::ConnectionId;
use crate::error::TransportErrorCode;
use crate::frame::StreamDir;
use crate::recovery::{Ecn, NewReno, PnSpace, ReceivedPackets, Recovery};
use crate::stream::{CryptoRecv, OpenError, Read, StreamId, Streams, WriteError};
use crate::time::{Duration, Instant};
use crate::transport_params::{Side, TransportParameters};
use crate::version::Version;
use rng::Drbg;
use sent::ControlTable;
#[cfg(feature = "server")]
use tls::Cids;
use tls::Handshake;

/// Sent-packet records of the Initial and of the Handshake space.
pub const HANDSHAKE_SENT: usize = 8;
/// Received-packet ranges kept for the Initial and the Handshake space.
pub const HANDSHAKE_RANGES: usize = 4;
/// RFC 9002 §6.2.3: how often per connection a duplicate of the server's CRYPTO data makes
/// a client resend its own before the PTO ("a limited number of times per connection"). A
/// server repeats its flight on its PTO, so this covers a few lost Finished in a row.
pub(crate) const FAST_RESENDS: u8 = 8;
/// Events queued at most; further events of a kind already queued are merged.
pub const EVENT_CAPACITY: usize = 16;
/// Bytes of a CONNECTION_CLOSE reason phrase kept (ours and the peer's). Without the
/// `err-reasons` feature none are kept or sent (RFC 9000 §19.19 allows an empty phrase), so
/// a device carries no reason storage or copying.
pub const REASON_MAX: usize = if cfg!(feature = "err-reasons") { 32 } else { 0 };
/// RFC 9000 §14.1: the smallest maximum datagram size, and the size client Initial
/// datagrams are padded to.
pub const MIN_INITIAL_SIZE: usize = 1200;
/// RFC 9000 §21.4: one Application Data packet number is skipped every
/// `SKIP_PN_GAP_MIN..SKIP_PN_GAP_MIN + 256` packets (the gap drawn at random), so an
/// optimistic ACK covering numbers never sent is caught as a PROTOCOL_VIOLATION. The
/// recovery remembers the last few skipped numbers (`recovery::SKIPPED_MEMORY`).
pub const SKIP_PN_GAP_MIN: u64 = 32;

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
    /// The local address it arrived on, when the socket reports it (a server with a
    /// preferred address answers from the address the client uses, RFC 9000 §9.6).
    pub local: Option<SocketAddr>,
}

impl RecvInfo {
    /// A single datagram from `remote`, not ECN-marked.
    pub const fn new(remote: SocketAddr) -> Self {
        Self { remote, ecn: Ecn::NotEct, segment_size: None, local: None }
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
    /// The ECN codepoint to set in the IP header (RFC 9000 §13.4: ECT(0) while the path
    /// is ECN-capable or being tested).
    pub ecn: Ecn,
    /// `Some(n)`: several datagrams of `n` bytes each, the last possibly shorter (a GSO
    /// batch, as quinn's `Transmit::segment_size`).
    pub segment_size: Option<usize>,
    /// The local address to send from: the one the peer's packets on the current path
    /// arrived on ([`RecvInfo::local`]); `None` when unknown (the socket's default).
    pub src: Option<SocketAddr>,
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
    /// A DATAGRAM frame arrived ([`Connection::datagram_recv`], feature `datagram`).
    DatagramReceived,
    /// The client received an address-validation token for its next connection to this
    /// server ([`Connection::take_token`], RFC 9000 §8.1.3).
    NewToken,
    /// The server rejected the client's 0-RTT data; it is being sent again in 1-RTT
    /// packets (RFC 9001 §4.6.2).
    EarlyDataRejected,
    /// The peer's address changed and the new path is being validated (RFC 9000 §9.3;
    /// feature `migration`), or this side migrated.
    PathMigrated,
    /// The current path was validated (PATH_RESPONSE, RFC 9000 §8.2.3).
    PathValidated,
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
    /// The peer sent a stateless reset (RFC 9000 §10.3; feature `stateless-reset`).
    StatelessReset,
    /// Path validation failed with no validated path to fall back to (RFC 9000 §8.2.4).
    NoViablePath,
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

/// Counters kept by a connection ([`Connection::stats`]). The traffic counters (datagrams,
/// bytes, packets, losses, PTOs, retransmitted bytes, ECN marks, DATAGRAM frames, CIDs the
/// peer retired) are kept only with feature `stats` and read 0 without it.
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
    /// Key updates completed (RFC 9001 §6): the receive key moved to a new phase, whichever
    /// side initiated the update.
    pub key_updates: u32,
    /// Connection IDs issued after the handshake one (NEW_CONNECTION_ID).
    pub cids_issued: u64,
    /// Connection IDs the peer retired (RETIRE_CONNECTION_ID).
    pub cids_retired_by_peer: u64,
    /// Peer address changes followed (feature `migration`).
    pub migrations: u32,
    /// Paths validated (feature `migration`).
    pub paths_validated: u32,
    /// PATH_CHALLENGE frames received.
    pub path_challenges_received: u64,
    /// PMTU probes sent and acknowledged, black holes detected (feature `pmtud`).
    pub pmtu_probes_sent: u32,
    /// PMTU probes acknowledged.
    pub pmtu_probes_acked: u32,
    /// PMTU black holes detected (fell back to 1200 bytes).
    pub pmtu_blackholes: u32,
    /// Datagrams received with ECT(0), ECT(1), CE.
    pub ecn_received: [u64; 3],
    /// ACK frames whose ECN-CE count increased: congestion events without loss (RFC 9002
    /// §7.1).
    pub ecn_ce_events: u64,
    /// Client: Retry packets acted on (at most one, RFC 9000 §17.2.5.2).
    pub retries: u32,
    /// 1-RTT packets that failed authentication (RFC 9001 §6.6).
    pub auth_failures: u64,
    /// DATAGRAM frames received (RFC 9221).
    pub datagram_frames_received: u64,
    /// Datagrams dropped from a full send or receive queue (the oldest go first).
    pub datagrams_dropped: u64,
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
    disable_active_migration: bool,
    /// RFC 9221 §3: 0 when the peer accepts no DATAGRAM frames.
    #[cfg_attr(not(feature = "datagram"), allow(dead_code))]
    max_datagram_frame_size: u64,
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
    pub(crate) hs: Handshake<P, C>,
    crypto_recv: [CryptoRecv<C, CRYPTO_RANGES>; 3],
    rx_initial: ReceivedPackets<HANDSHAKE_RANGES>,
    rx_handshake: ReceivedPackets<HANDSHAKE_RANGES>,
    rx_data: ReceivedPackets<RANGES>,
    pub(crate) recovery: Recovery<SentFrames, NewReno, HANDSHAKE_SENT, HANDSHAKE_SENT, SENT>,
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
    /// Client: unacknowledged CRYPTO data resent early on a duplicate of the server's (RFC
    /// 9002 §6.2.3), at most [`FAST_RESENDS`] times.
    fast_resends: u8,
    /// A PATH_CHALLENGE to answer (without `migration`: only the newest is kept).
    #[cfg(not(feature = "migration"))]
    path_response: Option<[u8; 8]>,
    /// Connection IDs we issued (RFC 9000 §5.1).
    pub(crate) local_cids: cids::LocalCids,
    /// Connection IDs the peer issued.
    remote_cids: cids::RemoteCids,
    /// ECN marking and validation (RFC 9000 §13.4).
    ecn: path::Ecn,
    /// Our local address on the current path, as the caller reported it.
    local: Option<SocketAddr>,
    /// Path MTU discovery (RFC 8899).
    #[cfg(feature = "pmtud")]
    pmtud: path::Pmtud,
    /// Path validation and migration (RFC 9000 §8.2, §9).
    #[cfg(feature = "migration")]
    migration: path::Migration,
    /// The server's preferred address from its transport parameters (client, RFC 9000
    /// §9.6), until it is tried.
    #[cfg(feature = "migration")]
    preferred: Option<crate::transport_params::PreferredAddress>,
    /// The last 16 bytes of the datagram being processed (a possible stateless reset,
    /// RFC 9000 §10.3.1).
    #[cfg(feature = "stateless-reset")]
    datagram_tail: Option<[u8; 16]>,
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
    /// Traffic counters (feature `stats`; nothing without it).
    stats: counters::Counters,
    /// Any packet from the peer was processed (a client then ignores Version Negotiation).
    any_packet: bool,
    /// The latest time the caller passed in (for deadlines set by `close`, and the key
    /// update wait of `initiate_key_update`).
    last_now: Instant,
    /// Client: the server's remembered transport parameters were applied, so 0-RTT data may
    /// be sent (RFC 9000 §7.4.1).
    early_params: bool,
    /// Client: the server rejected 0-RTT.
    early_rejected: bool,
    /// The address-validation token (RFC 9000 §8.1): a client's token for its Initials (from
    /// a Retry or given by the application) or the NEW_TOKEN token received for the next
    /// connection; a server's NEW_TOKEN token to send.
    token: [u8; TOKEN_MAX],
    token_len: u8,
    token_state: TokenState,
    /// Client: a Retry was processed (a second one is ignored, RFC 9000 §17.2.5.2).
    retried: bool,
    /// 1-RTT packets that failed authentication (RFC 9001 §6.6 integrity limit).
    auth_failures: u64,
    /// Client: the limits of the server's remembered transport parameters our 0-RTT data
    /// relied on (RFC 9000 §7.4.1).
    #[cfg(feature = "resumption")]
    remembered_limits: Option<ZeroRttLimits>,
    /// Client: the version a Version Negotiation packet offered that we speak.
    vn_choice: Option<Version>,
    /// DATAGRAM frames to send and received (RFC 9221), bounded.
    #[cfg(feature = "datagram")]
    dgram_send: datagram::DatagramQueue,
    #[cfg(feature = "datagram")]
    dgram_recv: datagram::DatagramQueue,
    /// The Application Data packet number to skip next (RFC 9000 §21.4).
    skip_pn_at: u64,
    /// Closing state: datagrams received, and the count at which the next CONNECTION_CLOSE
    /// is sent (doubling, RFC 9000 §10.2.1).
    closing_received: u32,
    closing_answer_at: u32,
    /// Packets sent and processed, for qlog.
    #[cfg(feature = "qlog")]
    packet_log: packet_log::PacketLog,
}

/// What [`Connection::token`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) enum TokenState {
    /// Nothing.
    None,
    /// Client: carried in the Token field of our Initial packets.
    Initial,
    /// Client: a NEW_TOKEN token for the next connection ([`Connection::take_token`]).
    Received,
    /// Server: a NEW_TOKEN frame to send (again, after a loss).
    Pending,
    /// Server: the NEW_TOKEN frame is in flight.
    InFlight,
    /// Server: the client acknowledged it.
    Acked,
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
    ///
    /// A session ticket in `tls` is used only in the version it was issued under (RFC 9369
    /// §5): when that is `config.compatible_version`, the connection starts in it (listing
    /// `config.version` as the compatible one); when it is neither version, the ticket is
    /// not offered (a full handshake).
    pub fn client(
        config: &ConnectionConfig,
        provider: P,
        tls: T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self, ConnectError> {
        let config = &Self::config_for_ticket(config, &tls);
        Self::by_value(|slot| {
            Self::init_client(slot, config, provider, |s| s.write(tls), storage, now, remote, rng)
        })
    }

    /// RFC 9369 §5: `config`, starting in the version of `tls`'s session ticket when that is
    /// the compatible version (both are the application's; the ticket is only good in its
    /// own). A server that issued a v2 ticket "indicates an intent to maintain version 2
    /// support while the ticket remains valid" (RFC 9369 §6).
    fn config_for_ticket(config: &ConnectionConfig, tls: &T) -> ConnectionConfig {
        let mut c = *config;
        let ticket = tls.resumption_params().and_then(crate::transport_params::ticket_version);
        if let (Some(v), Some(compatible)) = (ticket, c.compatible_version) {
            if v == compatible && v != c.version && v.is_supported() {
                c.compatible_version = Some(c.version);
                c.version = v;
            }
        }
        c
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
        Self::server_validated(
            config,
            provider,
            tls,
            storage,
            now,
            remote,
            client_dcid,
            client_scid,
            version,
            Validation::None,
            rng,
        )
    }

    /// As [`Connection::server`], for an Initial whose token the endpoint validated
    /// (RFC 9000 §8.1.2, §8.1.3): the client's address counts as validated, so no
    /// anti-amplification limit applies, and after a Retry the transport parameters carry
    /// the original and Retry connection IDs (RFC 9000 §7.3).
    #[cfg(feature = "server")]
    #[allow(clippy::too_many_arguments)]
    pub fn server_validated(
        config: &ConnectionConfig,
        provider: P,
        tls: T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        client_dcid: &[u8],
        client_scid: &[u8],
        version: Version,
        validation: Validation,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self, ConnectError> {
        let mut drbg = Drbg::from_rng(provider.clone(), rng).map_err(ConnectError::Crypto)?;
        let local = random_cid(&mut drbg, config.local_cid_len)?;
        let client_dcid = ConnectionId::new(client_dcid).ok_or(ConnectError::Config)?;
        let remote_cid = ConnectionId::new(client_scid).ok_or(ConnectError::Config)?;
        // After a Retry the client addresses us with our Retry SCID; the original DCID
        // comes from the token.
        let cids = match validation {
            Validation::Retry { original_dcid } => Cids {
                local,
                remote: remote_cid,
                peer_scid: remote_cid,
                original_dcid,
                retry_scid: Some(client_dcid),
            },
            _ => Cids {
                local,
                remote: remote_cid,
                peer_scid: remote_cid,
                original_dcid: client_dcid,
                retry_scid: None,
            },
        };
        let mut config = *config;
        config.version = version;
        Self::by_value(|slot| {
            let conn = Self::init(
                slot,
                &config,
                Side::Server,
                provider,
                |s| s.write(tls),
                storage,
                now,
                remote,
                drbg,
                cids,
                None,
            )?;
            conn.address_validated = validation != Validation::None;
            Ok(conn)
        })
    }

    // --- queries ---

    /// Client or server. Without the `server` feature no server connection can be built,
    /// so this is the constant `Client` and the compiler drops every server-only branch.
    pub const fn side(&self) -> Side {
        if cfg!(feature = "server") {
            self.side
        } else {
            Side::Client
        }
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

    /// The Destination Connection ID of the client's first Initial.
    pub fn original_dcid(&self) -> &ConnectionId {
        &self.hs.cids.original_dcid
    }

    /// Server: the Destination Connection ID of the client's Initials — the original one,
    /// or after a Retry our Retry SCID (accepted on long headers until the client switches
    /// to our connection ID).
    pub fn initial_dcid(&self) -> &ConnectionId {
        self.hs.cids.initial_dcid()
    }

    /// The QUIC version in use (after a compatible version negotiation, the negotiated one).
    pub const fn version(&self) -> Version {
        self.hs.version
    }

    /// Client: after [`CloseReason::VersionNegotiation`], the first version the server
    /// listed that this build speaks; reconnect with it (`ConnectionConfig::version`) or
    /// give up when `None`.
    pub const fn version_negotiation_choice(&self) -> Option<Version> {
        self.vn_choice
    }

    /// The version of the client's first Initial (RFC 9368 §2: the original version).
    pub const fn original_version(&self) -> Version {
        self.hs.original_version
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
    ///
    /// Without feature `stats` only the counts the connection keeps for its own logic are
    /// filled in (key updates, authentication failures, connection IDs issued, the Retry
    /// taken, and the migration and PMTU counts of those features); the traffic counters
    /// (datagrams, bytes, packets, losses, PTOs, ECN marks, DATAGRAM frames) read 0.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = counters::report(&self.stats);
        s.retries = u32::from(self.retried);
        s.key_updates = self.hs.keys.one_rtt.as_ref().map_or(0, |k| k.updates);
        s.cids_issued = self.local_cids.issued_total();
        #[cfg(feature = "migration")]
        {
            s.migrations = self.migration.migrations;
            s.paths_validated = self.migration.validations;
            s.path_challenges_received = self.migration.challenges_received;
        }
        #[cfg(feature = "pmtud")]
        {
            s.pmtu_probes_sent = self.pmtud.probes_sent;
            s.pmtu_probes_acked = self.pmtud.probes_acked;
            s.pmtu_blackholes = self.pmtud.blackholes;
        }
        s.auth_failures = self.auth_failures;
        s
    }

    /// Whether a packet from the peer was authenticated and processed (the endpoint keeps no
    /// state for a connection without one).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) const fn processed_any_packet(&self) -> bool {
        self.any_packet
    }

    /// Whether `cid` is one of the connection IDs we issued and the peer has not retired
    /// (an endpoint routes datagrams addressed to any of them here).
    pub fn owns_cid(&self, cid: &[u8]) -> bool {
        self.local_cids.seq_of(cid).is_some()
    }

    /// Our live connection IDs.
    pub fn local_cids(&self) -> impl Iterator<Item = &ConnectionId> + '_ {
        self.local_cids.iter().map(|i| &i.cid)
    }

    /// RETIRE_CONNECTION_ID frames waiting to be sent or acknowledged.
    pub fn retirements_pending(&self) -> usize {
        self.remote_cids.retiring()
    }

    /// Where ECN validation stands (RFC 9000 §13.4.2).
    pub const fn ecn_state(&self) -> EcnState {
        self.ecn.state
    }

    /// The size of full datagrams now (the path MTU found by DPLPMTUD with `pmtud`).
    pub fn current_mtu(&self) -> usize {
        self.max_datagram_size()
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
        let local = u64::from(self.config.local_idle_timeout_ms());
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
        if self.side() != Side::Client
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
                #[cfg(feature = "resumption")]
                {
                    self.remembered_limits = Some(ZeroRttLimits::of(&tp));
                }
            }
            Err(_) => return false,
        }
        self.can_send_early_data()
    }

    /// Whether stream data can go out in 0-RTT packets now: a client resuming with 0-RTT
    /// whose remembered parameters are applied, before the handshake completes and unless
    /// the server rejected early data.
    pub fn can_send_early_data(&self) -> bool {
        self.side() == Side::Client
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

    /// Client: sets the address-validation token (from a NEW_TOKEN frame of an earlier
    /// connection to this server, [`Connection::take_token`]) that our Initials carry (RFC
    /// 9000 §8.1.3); `version` is the version of the connection that received it. Only
    /// before the first datagram leaves; false if too late, on a server, for a token longer
    /// than [`TOKEN_MAX`], or for a token of another version than the one this connection
    /// starts in.
    pub fn set_token(&mut self, token: &[u8], version: Version) -> bool {
        // RFC 9369 §5: "Clients MUST NOT use a session ticket or token from a QUIC version
        // 1 connection to initiate a QUIC version 2 connection, and vice versa."
        if self.side() != Side::Client
            || self.recovery.next_pn(PnSpace::Initial) > 0
            || token.is_empty()
            || version != self.hs.original_version
        {
            return false;
        }
        let Some(dst) = self.token.get_mut(..token.len()) else { return false };
        dst.copy_from_slice(token);
        self.token_len = token.len() as u8;
        self.token_state = TokenState::Initial;
        true
    }

    /// Client: copies the token of the server's latest NEW_TOKEN frame into `out` and
    /// forgets it; returns its length and the version it belongs to ([`Event::NewToken`]).
    /// Keep both with the session ticket and give them to the next connection to this
    /// server ([`Connection::set_token`]), which uses the token only if it starts in that
    /// version (RFC 9369 §5).
    pub fn take_token(&mut self, out: &mut [u8]) -> Option<(usize, Version)> {
        if self.token_state != TokenState::Received {
            return None;
        }
        let n = usize::from(self.token_len);
        out.get_mut(..n)?.copy_from_slice(self.token.get(..n)?);
        self.token_state = TokenState::None;
        self.token_len = 0;
        // RFC 9369 §5: a token is specific to the version of the connection that provided
        // it, after compatible version negotiation the negotiated one: NEW_TOKEN comes in
        // 1-RTT packets, once the version is settled.
        Some((n, self.hs.version))
    }

    /// Server: whether the connection would send a NEW_TOKEN frame (RFC 9000 §8.1.3) and
    /// has none yet: the handshake is confirmed and none was given.
    #[cfg(feature = "server")]
    pub fn wants_new_token(&self) -> bool {
        self.side == Side::Server
            && self.handshake_confirmed
            && !self.is_closed()
            && self.token_state == TokenState::None
    }

    /// Server: queues `token` (minted by the endpoint, [`crate::token::seal_token`]) to be
    /// sent in a NEW_TOKEN frame, retransmitted until acknowledged. False if a token was
    /// already given or it is longer than [`TOKEN_MAX`].
    #[cfg(feature = "server")]
    pub fn send_new_token(&mut self, token: &[u8]) -> bool {
        if !self.wants_new_token() || token.is_empty() {
            return false;
        }
        let Some(dst) = self.token.get_mut(..token.len()) else { return false };
        dst.copy_from_slice(token);
        self.token_len = token.len() as u8;
        self.token_state = TokenState::Pending;
        true
    }

    /// The next key log entry (feature `keylog`): each TLS traffic secret of this
    /// connection once, in the order they were derived. Drain after every call that feeds
    /// the connection (creation included: a resuming client derives its early secret then).
    #[cfg(feature = "keylog")]
    pub fn poll_keylog(&mut self) -> Option<keylog::KeyLogEntry> {
        self.hs.keylog.pop()
    }

    /// The next packet log entry (feature `qlog`): packets sent and processed, in order,
    /// with their packet numbers and frame types. Drain after every call that feeds or
    /// polls the connection; entries beyond the ring's capacity are lost and counted by
    /// [`Connection::packet_log_dropped`].
    #[cfg(feature = "qlog")]
    pub fn poll_packet_log(&mut self) -> Option<packet_log::PacketLogEntry> {
        self.packet_log.pop()
    }

    /// Packet log entries lost because the ring was full (feature `qlog`).
    #[cfg(feature = "qlog")]
    pub const fn packet_log_dropped(&self) -> u64 {
        self.packet_log.dropped
    }

    // --- events and timers ---

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
        let mut t = Soonest::NONE;
        let mut consider = |x: Option<Instant>| t = t.or(x);
        consider(self.idle_deadline());
        consider(self.recovery.loss_detection_timer());
        #[cfg(feature = "migration")]
        consider(self.migration.timeout());
        #[cfg(feature = "pmtud")]
        if self.handshake_confirmed {
            consider(self.pmtud_timeout());
        }
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
        t.get()
    }

    /// Records `now`, and keeps the instants held for the connection's lifetime (recovery's,
    /// the key-update time) comparable with it: a device's clock wraps (`time`), and every
    /// entry that takes `now` starts here. Out of line on devices: three callers.
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn set_now(&mut self, now: Instant) {
        self.last_now = now;
        self.recovery.age(now);
        self.hs.keys.one_rtt.age(now);
    }

    fn idle_deadline(&self) -> Option<Instant> {
        self.idle_timeout().map(|d| self.idle_start + d)
    }

    /// Runs the timers due at `now`: closing and draining periods, the idle timeout, loss
    /// detection and PTO (RFC 9002 §6.2). ACK deadlines and pacing are handled by the next
    /// [`Connection::poll_transmit`].
    pub fn handle_timeout(&mut self, now: Instant) {
        self.set_now(now);
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
        #[cfg(feature = "migration")]
        self.on_path_timeout(now);
        #[cfg(feature = "pmtud")]
        self.on_pmtud_timeout(now);
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
    /// (§6.1), the previous update was answered and a packet of the current phase
    /// acknowledged (§6.1), and after an update three PTOs past that acknowledgment (§6.5),
    /// as of the latest time passed to the connection; returns whether it started.
    pub fn initiate_key_update(&mut self) -> bool {
        if !self.handshake_confirmed || self.is_closed() {
            return false;
        }
        let (provider, version) = (&self.hs.provider, self.hs.version);
        self.hs.keys.one_rtt.initiate(provider, version, self.last_now)
    }

    /// When [`Self::initiate_key_update`] may start the next key update (RFC 9001 §6.1,
    /// §6.5): `None` before the handshake is confirmed, until a packet of the current key
    /// phase is acknowledged, and while our update is unanswered. Not a timer of the
    /// connection (`poll_timeout` leaves it out): an application waiting to update sleeps
    /// until it.
    pub fn key_update_at(&self) -> Option<Instant> {
        let k = self.hs.keys.one_rtt.as_ref().filter(|_| self.handshake_confirmed)?;
        k.update_at()
    }

    /// RFC 9001 §6.6: the integrity limit of the negotiated suite (or the configured one).
    fn integrity_limit(&self) -> u64 {
        let suite = self.hs.keys.one_rtt.as_ref().map(|k| k.suite);
        suite.map_or(u64::MAX, |s| self.config.aead_limits.integrity_for(s))
    }

    /// RFC 9001 §6.6: after a 1-RTT packet left, start a key update once half the
    /// confidentiality limit of the send key is used; if the limit itself is reached
    /// without an update, the connection closes with AEAD_LIMIT_REACHED.
    fn check_confidentiality_limit(&mut self) {
        let Some(k) = self.hs.keys.one_rtt.as_ref() else { return };
        let limit = self.config.aead_limits.confidentiality_for(k.suite);
        let used = k.tx_packets;
        if used < limit / 2 {
            return;
        }
        if !self.initiate_key_update() && used >= limit {
            self.enter_closing(ConnectionClose::transport(
                TransportErrorCode::AEAD_LIMIT_REACHED,
                None,
            ));
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
    /// Whether the peer's address is validated (RFC 9000 §8.1). A client's always is (it
    /// chose the server's address): constant in a client-only build, so the
    /// anti-amplification accounting folds away there.
    fn address_is_validated(&self) -> bool {
        self.side() == Side::Client || self.address_validated
    }

    fn amplification_blocked(&self) -> bool {
        self.amplification_room() < 64
    }

    /// Bytes the anti-amplification limit still allows (RFC 9000 §8.1: three times the
    /// bytes received, until the client's address is validated).
    fn amplification_room(&self) -> u64 {
        #[cfg(feature = "migration")]
        let path = self.migration.amp_room();
        #[cfg(not(feature = "migration"))]
        let path = u64::MAX;
        if self.address_is_validated() {
            return path;
        }
        self.amp_received.saturating_mul(3).sat_sub(self.amp_sent).min(path)
    }
}

/// RFC 9000 §7.4.1: the server transport parameters a client's 0-RTT data may rely on, which
/// a server accepting 0-RTT must not reduce (RFC 9221 §3 adds max_datagram_frame_size).
#[cfg(feature = "resumption")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZeroRttLimits([u64; 8]);

#[cfg(feature = "resumption")]
impl ZeroRttLimits {
    /// From the values in [`Self::of`]'s order (the device's own decoding).
    #[cfg(feature = "device")]
    pub(crate) const fn new(limits: [u64; 8]) -> Self {
        Self(limits)
    }

    pub(crate) fn of(tp: &TransportParameters) -> Self {
        #[cfg(feature = "datagram")]
        let datagram = tp.max_datagram_frame_size.into_inner();
        #[cfg(not(feature = "datagram"))]
        let datagram = 0;
        Self([
            tp.active_connection_id_limit.into_inner(),
            tp.initial_max_data.into_inner(),
            tp.initial_max_stream_data_bidi_local.into_inner(),
            tp.initial_max_stream_data_bidi_remote.into_inner(),
            tp.initial_max_stream_data_uni.into_inner(),
            tp.initial_max_streams_bidi.into_inner(),
            tp.initial_max_streams_uni.into_inner(),
            datagram,
        ])
    }

    /// Whether `new` (the accepting server's parameters) keeps every limit at least as
    /// large as these.
    pub(crate) fn kept_by(&self, new: &Self) -> bool {
        self.0.iter().zip(new.0.iter()).all(|(old, new)| new >= old)
    }
}

/// How a server connection's client address was validated before the handshake (RFC 9000
/// §8.1), by the token of its Initial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validation {
    /// Not validated: the anti-amplification limit applies until a Handshake packet.
    None,
    /// A NEW_TOKEN token of an earlier connection (RFC 9000 §8.1.3).
    NewToken,
    /// A Retry token (RFC 9000 §8.1.2) naming the client's original DCID.
    Retry {
        /// The Destination Connection ID of the client's first Initial.
        original_dcid: ConnectionId,
    },
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
pub(crate) fn random_cid<P: CryptoProvider>(
    rng: &mut Drbg<P>,
    len: usize,
) -> Result<ConnectionId, ConnectError> {
    let mut b = [0u8; crate::cid::MAX_CID_LEN];
    let bytes = b.get_mut(..len).ok_or(ConnectError::Config)?;
    rng.fill(bytes).map_err(ConnectError::Crypto)?;
    ConnectionId::new(bytes).ok_or(ConnectError::Config)
}

/// The earliest of a set of deadlines, one compare per candidate instead of `Option` tag
/// checks (issue 8). Hosts: microseconds, `u64::MAX` for none (a deadline saturated at
/// `u64::MAX`, half a million years, is never reached, so it reads as none). Devices: an
/// `Option<Instant>` (two registers), compared by the wrapping order of device instants
/// (`time`), where no value is free to mean none.
#[cfg(feature = "std")]
#[derive(Clone, Copy)]
pub(crate) struct Soonest(u64);

/// The earliest of a set of deadlines (see the host definition).
#[cfg(not(feature = "std"))]
#[derive(Clone, Copy)]
pub(crate) struct Soonest(Option<Instant>);

#[cfg(feature = "std")]
impl Soonest {
    pub(crate) const NONE: Soonest = Soonest(u64::MAX);

    /// `self`, or the deadline `x` if it is earlier.
    pub(crate) fn or(self, x: Option<Instant>) -> Soonest {
        Soonest(self.0.min(x.map_or(u64::MAX, Instant::as_micros)))
    }

    pub(crate) fn get(self) -> Option<Instant> {
        (self.0 != u64::MAX).then_some(Instant(self.0))
    }
}

#[cfg(not(feature = "std"))]
impl Soonest {
    pub(crate) const NONE: Soonest = Soonest(None);

    /// `self`, or the deadline `x` if it is earlier. Out of line: the timer scans take up
    /// to six of them (issue 8).
    #[inline(never)]
    pub(crate) fn or(self, x: Option<Instant>) -> Soonest {
        match (self.0, x) {
            (Some(t), Some(x)) if t <= x => self,
            (_, None) => self,
            _ => Soonest(x),
        }
    }

    pub(crate) const fn get(self) -> Option<Instant> {
        self.0
    }
}
