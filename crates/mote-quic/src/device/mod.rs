//! A QUIC client connection for a device (feature `device`): one state machine for a client
//! with one path and one peer connection ID in use at a time, sending and receiving in the
//! three packet-number spaces, with the fixed stream set of an HTTP/3 device client
//! ([`streams`]).
//!
//! ```text
//! DeviceConnection::init_client(slot, …)      built in place (a `static` on a device)
//! handle_datagram(now, remote, &mut [u8])      datagrams in (coalesced packets)
//! handle_timeout(now) / poll_timeout()         timers
//! poll_transmit(now, &mut [u8]) -> Transmit    one datagram out
//! open_uni / open_bidi / write / read / …      the fixed stream set
//! ticket_ready / take_ticket / poll_stopped    what the application polls (no event queue)
//! close(app_code, reason)
//! ```
//!
//! It shares mote-quic's packet, frame, transport-parameter, TLS-hook (`connection::tls`),
//! key ([`crate::connection`]'s key slots), loss-recovery ([`Recovery`]), received-packet
//! ([`ReceivedPackets`]) and stream-buffer code with the general
//! [`crate::connection::Connection`], and none of its generality: no stream table, no
//! control-frame table, no event ring, one spare connection ID ([`local_cids`]), no
//! migration, no path MTU discovery, no server side. Toward a compliant server its bytes on the wire are the
//! general client's in the device build (`--no-default-features --features resumption`):
//! the first Initial is byte-equal (`tests::first_initial_is_the_general_connections`).
//!
//! What it leaves out, each off in the general connection's device build too or not
//! needed by a client on one path: the server role and anti-amplification; issuing
//! more than one spare connection ID; migration, path probing and PMTUD (it answers
//! PATH_CHALLENGE); ECN marking, pacing, GSO; stateless-reset detection; DATAGRAM frames
//! (received ones are a PROTOCOL_VIOLATION, RFC 9221 §3); compatible version negotiation
//! (a Version Negotiation packet ends the attempt); the event queue (the application polls
//! [`DeviceConnection::ticket_ready`], [`DeviceConnection::poll_stopped`] and the state
//! queries); the QUIC-version binding of tickets and tokens (RFC 9369 §5), which a device
//! speaking only v1 does not need: its tickets and tokens are all v1's, and a ticket or
//! token of a v2 connection is the application's to keep away from it
//! ([`crate::transport_params::ticket_version`] names a ticket's version).

mod error;
mod init;
mod local_cids;
mod peer_params;
mod recv;
mod send;
pub mod streams;

#[cfg(all(test, feature = "server"))]
mod tests;

use core::net::SocketAddr;

use mote_crypto::CryptoProvider;

use crate::connection::cids::RemoteCids;
use crate::connection::tls::{Handshake, TlsSession, CRYPTO_RANGES};
use crate::connection::{
    AeadLimits, CloseReason, ConnectionClose, Soonest, HANDSHAKE_RANGES, HANDSHAKE_SENT,
};
use crate::error::TransportErrorCode;
use crate::recovery::{NewReno, PnSpace, ReceivedPackets, Recovery};
use crate::stream::{CryptoRecv, Read, WriteError};
use crate::time::{Duration, Instant};
use crate::token::TOKEN_MAX;

pub use send::Sent;
pub use streams::{DeviceStorage, CONTROL_ID, PEER_UNI};

/// Where the connection is (RFC 9000 §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the TLS handshake completes, then established. The initial state, left to
    /// the constructor's zeroing (discriminant 0, checked there).
    #[allow(dead_code)]
    Open,
    /// We sent CONNECTION_CLOSE (RFC 9000 §10.2.1), until three PTOs have passed.
    Closing { deadline: Instant },
    /// The peer closed (RFC 9000 §10.2.2).
    Draining { deadline: Instant },
    /// Over.
    Drained,
}

/// What the connection keeps of its configuration ([`crate::ConnectionConfig`]).
#[derive(Clone, Copy, Debug)]
struct Settings {
    /// Our max_idle_timeout, then the smaller non-zero one of both sides' (RFC 9000 §10.1).
    idle_timeout_ms: u64,
    max_datagram_size: u16,
    max_ack_ranges: u8,
    aead_limits: AeadLimits,
}

/// What the connection keeps of the server's transport parameters.
#[derive(Clone, Copy, Debug)]
struct Peer {
    max_udp_payload_size: u64,
    ack_delay_exponent: u8,
}

/// The NEW_TOKEN token kept for the next connection, or a Retry token our Initials carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenState {
    None,
    /// Carried in our Initials (a Retry's).
    Initial,
    /// A NEW_TOKEN token for the next connection ([`DeviceConnection::take_token`]).
    Received,
}

/// Counters the firmware reports ([`DeviceConnection::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Key updates completed (RFC 9001 §6), whichever side initiated them.
    pub key_updates: u32,
    /// 1-RTT packets that failed authentication (RFC 9001 §6.6).
    pub auth_failures: u64,
    /// PTOs that fired (RFC 9002 §6.2).
    pub ptos: u32,
    /// Retry packets acted on (at most one).
    pub retries: u32,
    /// Datagrams sent (feature `stats`; 0 without it).
    pub datagrams_sent: u64,
    /// UDP payload bytes sent (feature `stats`).
    pub bytes_sent: u64,
    /// Datagrams received (feature `stats`).
    pub datagrams_received: u64,
    /// UDP payload bytes received (feature `stats`).
    pub bytes_received: u64,
    /// Ack-eliciting packets declared lost (feature `stats`).
    pub packets_lost: u64,
}

/// A device's QUIC client connection. See the [module documentation](self).
///
/// * `P`: the crypto provider; `T`: the TLS client session;
/// * `C`: CRYPTO buffer storage, `S`: stream buffer storage ([`DeviceStorage`]);
/// * `SENT`: sent-packet records of the Application Data space; `RANGES`: received ranges
///   of the Application Data space and range entries per stream buffer.
pub struct DeviceConnection<
    P: CryptoProvider,
    T,
    C,
    S,
    const SENT: usize = 16,
    const RANGES: usize = 4,
> {
    tls: T,
    /// Everything the TLS hooks write: keys, CRYPTO send buffers, CIDs, the DRBG.
    hs: Handshake<P, C>,
    crypto_recv: [CryptoRecv<C, CRYPTO_RANGES>; 3],
    rx_initial: ReceivedPackets<HANDSHAKE_RANGES>,
    rx_handshake: ReceivedPackets<HANDSHAKE_RANGES>,
    rx_data: ReceivedPackets<RANGES>,
    recovery: Recovery<Sent, NewReno, HANDSHAKE_SENT, HANDSHAKE_SENT, SENT>,
    streams: streams::Streams<S, RANGES>,
    /// The server's connection IDs (RFC 9000 §5.1.1, §5.1.2): stored up to our
    /// active_connection_id_limit, retired as Retire Prior To asks.
    remote_cids: RemoteCids,
    /// Ours: the handshake connection ID and one spare (RFC 9000 §5.1.1).
    local_cids: local_cids::LocalCids,
    remote: SocketAddr,
    state: State,
    settings: Settings,
    peer: Option<Peer>,
    /// The server's Source Connection ID was adopted from its first packet.
    remote_cid_set: bool,
    handshake_complete: bool,
    handshake_confirmed: bool,
    /// A packet from the server was processed (Version Negotiation and Retry are then
    /// ignored).
    any_packet: bool,
    retried: bool,
    /// The server's remembered transport parameters were applied (RFC 9000 §7.4.1).
    early_params: bool,
    early_rejected: bool,
    /// A session ticket arrived since the application last took one.
    ticket_ready: bool,
    /// PTO probes to send, per space.
    probes: [u8; 3],
    /// Unacknowledged CRYPTO data resent early on a duplicate of the server's (RFC 9002
    /// §6.2.3), at most [`crate::connection::FAST_RESENDS`] times.
    fast_resends: u8,
    /// The newest PATH_CHALLENGE's data, to answer (RFC 9000 §8.2.2).
    path_response: Option<[u8; 8]>,
    ping_pending: bool,
    /// RFC 9000 §10.1: when the idle timer started, and whether an ack-eliciting packet
    /// left since the last packet was received.
    idle_start: Instant,
    ack_eliciting_since_recv: bool,
    /// The latest time the caller passed in.
    last_now: Instant,
    close_pending: bool,
    /// Why the connection closed; while closing, the CONNECTION_CLOSE we send
    /// ([`CloseReason::Local`]).
    close_reason: Option<CloseReason>,
    token: [u8; TOKEN_MAX],
    token_len: u8,
    token_state: TokenState,
    auth_failures: u64,
    ptos: u32,
    /// Traffic counters (feature `stats`).
    #[cfg(feature = "stats")]
    traffic: DeviceStats,
    /// RFC 9000 §7.4.1: the remembered limits our 0-RTT data relied on.
    #[cfg(feature = "resumption")]
    remembered_limits: Option<crate::connection::ZeroRttLimits>,
    /// The server's transport parameters, decoded and checked, until they are applied.
    peer_params: Option<peer_params::PeerParams>,
    /// RFC 9000 §21.4: the next Application Data packet number to skip.
    skip_pn_at: u64,
    /// RFC 9000 §10.2.1: datagrams received while closing, and the count at which the
    /// next CONNECTION_CLOSE is sent (doubling).
    closing_received: u32,
    closing_answer_at: u32,
}

/// A handler's result: its compact error becomes a [`ConnectionClose`] where the
/// connection enters closing ([`DeviceConnection::fail`]).
type Res<T = ()> = Result<T, error::Error>;

/// Index of a packet number space in per-space arrays.
const fn si(space: PnSpace) -> usize {
    match space {
        PnSpace::Initial => 0,
        PnSpace::Handshake => 1,
        PnSpace::ApplicationData => 2,
    }
}

impl<P, T, C, S, const SENT: usize, const RANGES: usize> DeviceConnection<P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    // --- queries ---

    /// The TLS session (ALPN, early data, …).
    pub const fn tls(&self) -> &T {
        &self.tls
    }

    /// The server's address.
    pub const fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Whether the TLS handshake completed.
    pub const fn is_handshake_complete(&self) -> bool {
        self.handshake_complete
    }

    /// Whether the handshake is confirmed (RFC 9001 §4.1.2: HANDSHAKE_DONE).
    pub const fn is_handshake_confirmed(&self) -> bool {
        self.handshake_confirmed
    }

    /// Whether the connection is closing, draining or drained.
    pub const fn is_closed(&self) -> bool {
        !matches!(self.state, State::Open)
    }

    /// Whether the connection is over and can be dropped.
    pub const fn is_drained(&self) -> bool {
        matches!(self.state, State::Drained)
    }

    /// Why the connection closed, once it has.
    pub const fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason
    }

    /// The counters a device reports.
    pub fn stats(&self) -> DeviceStats {
        #[cfg(feature = "stats")]
        let s = self.traffic;
        #[cfg(not(feature = "stats"))]
        let s = DeviceStats::default();
        DeviceStats {
            key_updates: self.hs.keys.one_rtt.as_ref().map_or(0, |k| k.updates),
            auth_failures: self.auth_failures,
            ptos: self.ptos,
            retries: u32::from(self.retried),
            ..s
        }
    }

    /// The connection ID the server addresses us with.
    pub fn local_cid(&self) -> &crate::ConnectionId {
        &self.hs.cids.local
    }

    /// The connection ID we address the server with.
    pub fn remote_cid(&self) -> &crate::ConnectionId {
        &self.hs.cids.remote
    }

    /// Whether a session ticket waits for [`DeviceConnection::take_ticket`].
    pub const fn ticket_ready(&self) -> bool {
        self.ticket_ready
    }

    /// Copies the latest session ticket (encoded with the server's remembered transport
    /// parameters) into `out` and forgets it; returns its length (feature `resumption`).
    #[cfg(feature = "resumption")]
    pub fn take_ticket(&mut self, out: &mut [u8]) -> Option<usize> {
        self.ticket_ready = false;
        let n = self.hs.ticket_len;
        if n == 0 {
            return None;
        }
        out.get_mut(..n)?.copy_from_slice(self.hs.ticket.get(..n)?);
        self.hs.ticket_len = 0;
        Some(n)
    }

    /// Copies the server's latest NEW_TOKEN token (RFC 9000 §8.1.3) into `out` and forgets
    /// it; returns its length. Give it to the next connection ([`Self::set_token`]). No
    /// version with it, unlike the general connection's: a v1-only device's tokens are v1's
    /// (RFC 9369 §5).
    pub fn take_token(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.token_state != TokenState::Received {
            return None;
        }
        let n = usize::from(self.token_len);
        out.get_mut(..n)?.copy_from_slice(self.token.get(..n)?);
        self.token_state = TokenState::None;
        self.token_len = 0;
        Some(n)
    }

    /// The next TLS secret for an SSLKEYLOGFILE writer (feature `keylog`: debugging hosts,
    /// e.g. so a trace of `mote get --device` can be decrypted).
    #[cfg(feature = "keylog")]
    pub fn poll_keylog(&mut self) -> Option<crate::connection::keylog::KeyLogEntry> {
        self.hs.keylog.pop()
    }

    /// Sets the address-validation token our Initials carry (a NEW_TOKEN token of an
    /// earlier connection, RFC 9000 §8.1.3). Only before the first datagram leaves.
    pub fn set_token(&mut self, token: &[u8]) -> bool {
        if self.recovery.next_pn(PnSpace::Initial) > 0 || token.is_empty() {
            return false;
        }
        let Some(dst) = self.token.get_mut(..token.len()) else { return false };
        dst.copy_from_slice(token);
        self.token_len = token.len() as u8;
        self.token_state = TokenState::Initial;
        true
    }

    /// Applies the server's transport parameters remembered with the session ticket this
    /// connection resumes with, so that streams can be opened and written in 0-RTT (RFC
    /// 9000 §7.4.1). Only once 0-RTT keys exist and before the handshake completes; the
    /// parameters must decode. Returns whether 0-RTT data may now be sent.
    pub fn apply_remembered_params(&mut self, encoded: &[u8]) -> bool {
        if self.handshake_complete || self.hs.keys.zero_rtt().is_none() || self.early_params {
            return self.can_send_early_data();
        }
        // Decoded where the server's parameters go (empty between datagrams: the receive
        // path takes them as they arrive), not into a copy on the stack.
        let tp = self.peer_params.insert(peer_params::PeerParams::DEFAULT);
        let decoded = peer_params::decode(encoded, None, tp).is_some();
        if decoded {
            self.streams.on_peer_params(tp);
            self.early_params = true;
            #[cfg(feature = "resumption")]
            {
                self.remembered_limits = Some(tp.zero_rtt_limits());
            }
        }
        self.peer_params = None;
        decoded && self.can_send_early_data()
    }

    /// Whether stream data can go out in 0-RTT packets now.
    pub fn can_send_early_data(&self) -> bool {
        self.early_params
            && !self.early_rejected
            && !self.handshake_complete
            && self.hs.keys.zero_rtt().is_some()
    }

    /// Whether the server rejected our 0-RTT data (it is being sent again in 1-RTT).
    pub const fn early_data_rejected(&self) -> bool {
        self.early_rejected
    }

    // --- timers ---

    /// The effective idle timeout (RFC 9000 §10.1): the smaller of both sides' non-zero
    /// max_idle_timeout (`Settings::idle_timeout_ms`, lowered to the server's when its
    /// parameters arrive), at least three PTOs.
    fn idle_timeout(&self) -> Option<Duration> {
        let ms = self.settings.idle_timeout_ms;
        let pto3 = self.recovery.pto_period().saturating_mul(3);
        (ms != 0).then(|| Duration::from_millis(ms).max(pto3))
    }

    /// The idle deadline, if there is one.
    fn idle_deadline(&self) -> Option<Instant> {
        self.idle_timeout().map(|d| self.idle_start + d)
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

    /// When [`DeviceConnection::handle_timeout`] must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Drained => return None,
            State::Closing { deadline } | State::Draining { deadline } => return Some(deadline),
            State::Open => {}
        }
        let keys = &self.hs.keys;
        let mut t = Soonest::NONE.or(self.idle_deadline());
        t = t.or(self.recovery.loss_detection_timer());
        if keys.initial.is_some() {
            t = t.or(self.rx_initial.ack_deadline());
        }
        if keys.handshake.is_some() {
            t = t.or(self.rx_handshake.ack_deadline());
        }
        if keys.one_rtt.is_some() {
            t = t.or(self.rx_data.ack_deadline());
        }
        t.get()
    }

    /// Runs the timers due at `now`: closing and draining periods, the idle timeout, loss
    /// detection and PTO (RFC 9002 §6.2). ACK deadlines are met by the next
    /// [`DeviceConnection::poll_transmit`].
    pub fn handle_timeout(&mut self, now: Instant) {
        self.set_now(now);
        match self.state {
            State::Drained => return,
            State::Closing { deadline: d } | State::Draining { deadline: d } => {
                if now >= d {
                    self.state = State::Drained;
                }
                return;
            }
            State::Open => {}
        }
        // RFC 9000 §10.1: the connection is silently closed when the idle timeout expires.
        if self.idle_deadline().is_some_and(|d| now >= d) {
            self.close_reason = Some(CloseReason::IdleTimeout);
            self.state = State::Drained;
            return;
        }
        self.on_loss_timeout(now);
    }

    // --- application ---

    /// Opens our unidirectional (HTTP/3 control) stream: once, within the server's limit.
    pub fn open_uni(&mut self) -> Option<u64> {
        if !self.can_carry_data() {
            return None;
        }
        self.streams.open_control()
    }

    /// Opens the next request stream: when the previous one is finished both ways, within
    /// the server's limit.
    pub fn open_bidi(&mut self) -> Option<u64> {
        if !self.can_carry_data() {
            return None;
        }
        self.streams.open_request()
    }

    fn can_carry_data(&self) -> bool {
        !self.is_closed() && (self.handshake_complete || self.can_send_early_data())
    }

    /// The request stream's ID, while one is open.
    pub fn request_id(&self) -> Option<u64> {
        self.streams.request_id()
    }

    /// Bytes [`DeviceConnection::write`] would take on `id` now.
    pub fn capacity(&self, id: u64) -> u64 {
        if self.is_closed() {
            return 0;
        }
        self.streams.capacity(id)
    }

    /// Writes as much of `data` to our stream `id` as its buffer and the flow-control
    /// limits take; returns the bytes taken.
    pub fn write(&mut self, id: u64, data: &[u8]) -> Result<usize, WriteError> {
        if self.is_closed() {
            return Err(WriteError::UnknownStream);
        }
        self.streams.write(id, data)
    }

    /// Ends our stream `id` after the data written (FIN).
    pub fn finish(&mut self, id: u64) -> Result<(), WriteError> {
        if self.is_closed() {
            return Err(WriteError::UnknownStream);
        }
        self.streams.finish(id)
    }

    /// Reads stream `id` into `out`; `None` for a stream that cannot be read.
    /// Once the connection is closed, data already received can still be read, and a stream
    /// with nothing more reads as gone (`None`): no more will come.
    pub fn read(&mut self, id: u64, out: &mut [u8]) -> Option<Read> {
        let r = self.streams.read(id, out);
        if self.is_closed() && r == Some(Read::Blocked) {
            return None;
        }
        r
    }

    /// Abandons sending on `id` (RESET_STREAM with `code`).
    pub fn reset_stream(&mut self, id: u64, code: u64) -> bool {
        self.streams.reset(id, code)
    }

    /// Stops reading `id` (STOP_SENDING with `code`); its buffered data is discarded.
    pub fn stop_sending(&mut self, id: u64, code: u64) {
        self.streams.stop_sending(id, code);
    }

    /// The live streams (ours and the server's), for the HTTP/3 client.
    pub fn live_streams(&self) -> impl Iterator<Item = u64> + '_ {
        self.streams.live()
    }

    /// How many unidirectional streams the server has opened (RFC 9000 §3.2: opening one
    /// opens every lower-numbered one; at most the three the device allows), for the HTTP/3
    /// client's discovery of the server's streams: they are IDs 3, 7 and 11 in that order.
    pub fn peer_uni_opened(&self) -> u64 {
        self.streams.peer_uni_opened()
    }

    /// A STOP_SENDING the server sent for one of our streams (already answered with
    /// RESET_STREAM), once: `(stream, code)`.
    pub fn poll_stopped(&mut self) -> Option<(u64, u64)> {
        self.streams.poll_stopped()
    }

    /// Sends a PING.
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

    /// RFC 9001 §6.6: the integrity limit of the negotiated suite.
    fn integrity_limit(&self) -> u64 {
        let suite = self.hs.keys.one_rtt.as_ref().map(|k| k.suite);
        suite.map_or(u64::MAX, |s| self.settings.aead_limits.integrity_for(s))
    }

    /// RFC 9001 §6.6: after a 1-RTT packet left, start a key update once half the
    /// confidentiality limit of the send key is used; at the limit itself without an
    /// update, close with AEAD_LIMIT_REACHED.
    fn check_confidentiality_limit(&mut self) {
        let Some(k) = self.hs.keys.one_rtt.as_ref() else { return };
        let limit = self.settings.aead_limits.confidentiality_for(k.suite);
        let used = k.tx_packets;
        if used < limit / 2 {
            return;
        }
        if !self.initiate_key_update() && used >= limit {
            self.fail(error::Error::bare(TransportErrorCode::AEAD_LIMIT_REACHED));
        }
    }

    /// Closes the connection with an application error code (RFC 9000 §10.2):
    /// CONNECTION_CLOSE 0x1d in 1-RTT packets, or 0x1c with APPLICATION_ERROR in Initial and
    /// Handshake packets (§10.2.3). The connection then stays closing for three PTOs.
    pub fn close(&mut self, app_code: u64, reason: &[u8]) {
        self.enter_closing(ConnectionClose::new(app_code, None, true, reason));
    }

    /// Enters the closing state with a transport error (RFC 9000 §10.2.1); out of line:
    /// the [`ConnectionClose`] is built here once.
    #[inline(never)]
    fn fail(&mut self, e: error::Error) {
        self.enter_closing(e.into());
    }

    /// Enters the closing state with `close` (RFC 9000 §10.2.1).
    fn enter_closing(&mut self, close: ConnectionClose) {
        if self.is_closed() {
            return;
        }
        self.close_reason = Some(CloseReason::Local(close));
        let deadline = self.last_now + self.recovery.pto_period().saturating_mul(3);
        self.state = State::Closing { deadline };
        self.close_pending = true;
    }

    /// Enters the draining state after the server's CONNECTION_CLOSE (RFC 9000 §10.2.2).
    fn enter_draining(&mut self, now: Instant, close: ConnectionClose) {
        if matches!(self.state, State::Draining { .. } | State::Drained) {
            return;
        }
        if !self.is_closed() {
            self.close_reason = Some(CloseReason::Peer(close));
        }
        let deadline = now + self.recovery.pto_period().saturating_mul(3);
        self.state = State::Draining { deadline };
        self.close_pending = false;
    }
}
