//! The connection's side of the TLS interface (RFC 9001 §4): the [`TlsSession`] trait over
//! mote-tls' client and server sessions, and the connection state the session writes into
//! through [`QuicHooks`] — the CRYPTO send buffers, the packet-protection keys derived from
//! the secrets it lends, and the peer's transport parameters.

use mote_crypto::{AeadAlgorithm, CryptoProvider, CryptoRng, Secret};
use mote_tls::{
    transport_error, Error as TlsError, KeyLevel, Level, QuicHooks, Secrets, SendBuffer,
};

use super::key_slot::KeySlot;
use super::rng::Drbg;
use super::FAST_RESENDS;
use crate::cid::ConnectionId;
use crate::error::WireError;
use crate::packet::{PacketKey, PacketKeys};
use crate::recovery::{CongestionController, PnSpace, Recovery};
use crate::stream::CryptoSend;
use crate::time::{Duration, Instant};
use crate::transport_params::{Side, TransportParameters};
use crate::version::Version;

/// Range-set entries of each CRYPTO send and receive buffer.
pub const CRYPTO_RANGES: usize = 4;

/// Longest encoding of our transport parameters (RFC 9000 §18) a connection keeps.
pub const LOCAL_TP_MAX: usize = 160;
/// Longest encoded session ticket a client keeps (feature `resumption`).
#[cfg(feature = "resumption")]
pub const TICKET_MAX: usize = 384;
/// Longest encoding of the server's remembered transport parameters (RFC 9000 §7.4.1)
/// a client keeps with a ticket (feature `resumption`).
#[cfg(feature = "resumption")]
pub const REMEMBERED_TP_MAX: usize = 160;

/// A TLS 1.3 handshake session as the QUIC connection drives it: mote-tls'
/// [`mote_tls::ClientSession`], or with feature `server` [`mote_tls::ServerSession`].
pub trait TlsSession {
    /// Which end this session is.
    const SIDE: Side;

    /// Client: writes the ClientHello (RFC 9001 §4.1). Servers do nothing.
    fn start<H: QuicHooks>(&mut self, hooks: &mut H) -> Result<(), TlsError>;

    /// Feeds in-order CRYPTO bytes of `level` (RFC 9001 §4.1.3).
    fn read_handshake<H: QuicHooks>(
        &mut self,
        level: Level,
        data: &[u8],
        hooks: &mut H,
    ) -> Result<(), TlsError>;

    /// Whether the TLS handshake is complete (RFC 9001 §4.1.1).
    fn is_handshake_complete(&self) -> bool;

    /// The negotiated ALPN protocol.
    fn alpn(&self) -> Option<&[u8]>;

    /// Whether a PSK (resumption ticket or external PSK) was accepted.
    fn psk_accepted(&self) -> bool;

    /// `Some(accepted)` once a 0-RTT offer was answered.
    fn early_data_accepted(&self) -> Option<bool>;

    /// The caller's clock, for servers (ticket issue times and ages). Clients ignore it.
    fn set_time(&mut self, _now: Instant) {}

    /// Client, before the ClientHello: the server's transport parameters remembered with
    /// the session ticket it resumes with, which name the ticket's QUIC version
    /// ([`crate::transport_params::ticket_version`]); `None` without a ticket.
    fn resumption_params(&self) -> Option<&[u8]> {
        None
    }

    /// Client, before the ClientHello: drops the session ticket (a full handshake).
    fn forget_resumption(&mut self) {}
}

impl<P, const RX: usize> TlsSession for mote_tls::ClientSession<'_, P, RX>
where
    P: CryptoProvider + mote_tls::ProviderBound,
{
    const SIDE: Side = Side::Client;

    // Out of line: the ClientHello's locals (key share, transcript) are not added to the
    // frame of the connection's constructor.
    #[inline(never)]
    fn start<H: QuicHooks>(&mut self, hooks: &mut H) -> Result<(), TlsError> {
        mote_tls::ClientSession::start(self, hooks)
    }

    fn read_handshake<H: QuicHooks>(
        &mut self,
        level: Level,
        data: &[u8],
        hooks: &mut H,
    ) -> Result<(), TlsError> {
        mote_tls::ClientSession::read_handshake(self, level, data, hooks)
    }

    fn is_handshake_complete(&self) -> bool {
        mote_tls::ClientSession::is_handshake_complete(self)
    }

    fn alpn(&self) -> Option<&[u8]> {
        mote_tls::ClientSession::alpn(self)
    }

    fn psk_accepted(&self) -> bool {
        mote_tls::ClientSession::psk_accepted(self)
    }

    fn early_data_accepted(&self) -> Option<bool> {
        mote_tls::ClientSession::early_data_accepted(self)
    }

    fn resumption_params(&self) -> Option<&[u8]> {
        self.resumption().map(|r| r.ticket.server_transport_parameters)
    }

    fn forget_resumption(&mut self) {
        mote_tls::ClientSession::forget_resumption(self);
    }
}

#[cfg(feature = "server")]
impl<P: CryptoProvider, const RX: usize> TlsSession for mote_tls::ServerSession<'_, P, RX> {
    const SIDE: Side = Side::Server;

    fn start<H: QuicHooks>(&mut self, _hooks: &mut H) -> Result<(), TlsError> {
        Ok(())
    }

    fn read_handshake<H: QuicHooks>(
        &mut self,
        level: Level,
        data: &[u8],
        hooks: &mut H,
    ) -> Result<(), TlsError> {
        mote_tls::ServerSession::read_handshake(self, level, data, hooks)
    }

    fn is_handshake_complete(&self) -> bool {
        mote_tls::ServerSession::is_handshake_complete(self)
    }

    fn alpn(&self) -> Option<&[u8]> {
        mote_tls::ServerSession::alpn(self)
    }

    fn psk_accepted(&self) -> bool {
        mote_tls::ServerSession::psk_accepted(self)
    }

    fn early_data_accepted(&self) -> Option<bool> {
        mote_tls::ServerSession::early_data_accepted(self)
    }

    fn set_time(&mut self, now: Instant) {
        // Milliseconds for ticket ages. A server-only path (std hosts), so the one 64-bit
        // division is acceptable here.
        mote_tls::ServerSession::set_time(self, now.as_micros() / 1000);
    }
}

/// Keys of both directions of one encryption level.
pub(crate) struct DirKeys<P: CryptoProvider> {
    pub(crate) tx: PacketKeys<P>,
    pub(crate) rx: PacketKeys<P>,
}

/// 1-RTT keys with what a key update needs (RFC 9001 §6): the Key Phase of each direction
/// and the current secrets, from which the next generation is derived.
pub(crate) struct OneRttKeys<P: CryptoProvider> {
    pub(crate) keys: DirKeys<P>,
    pub(crate) suite: AeadAlgorithm,
    /// The Key Phase bit we send.
    pub(crate) tx_phase: bool,
    /// The Key Phase bit of the receive key.
    pub(crate) rx_phase: bool,
    /// We initiated an update the peer has not answered yet: the send key is one
    /// generation ahead of the receive key.
    pub(crate) tx_ahead: bool,
    pub(crate) tx_secret: Secret,
    /// The secret of the newest receive key: the current one's, then (once it is derived)
    /// the next phase's, from which the one after is derived.
    pub(crate) rx_secret: Secret,
    /// Key updates completed (for statistics).
    pub(crate) updates: u32,
    /// RFC 9001 §6.5: the receive key of the previous phase, kept until `prev_rx_until`
    /// (three PTOs after the update) to open packets reordered across the update.
    pub(crate) prev_rx: KeySlot<PacketKey<P>>,
    pub(crate) prev_rx_until: Instant,
    /// RFC 9001 §6.3, §9.5: the receive key of the next phase, derived ahead (see
    /// `open_one_rtt`) so that no packet — a peer's update or a forgery with the Key
    /// Phase bit flipped — costs a derivation, a timing signal of the Key Phase.
    pub(crate) next_rx: KeySlot<PacketKey<P>>,
    /// `next_rx` was derived for the current phase (it may be empty after a provider
    /// fault: then it is not derived again for every packet).
    pub(crate) next_rx_ready: bool,
    /// The smallest packet number opened with the current receive key: a packet of the
    /// other Key Phase below it belongs to the previous phase, above it to the next.
    pub(crate) rx_phase_start_pn: u64,
    /// The first packet number sent with the current send key ([`PN_NONE`] until one
    /// leaves: no acknowledgment covers it, packet numbers being below 2^62).
    pub(crate) tx_phase_start_pn: u64,
    /// RFC 9001 §6.1, §6.5: the earliest time we may initiate the next key update;
    /// [`UPDATE_NEVER`] until an acknowledgment covers a packet of the current send phase
    /// (set by `on_ack`).
    pub(crate) update_after: Instant,
    /// Packets protected with the current send key (RFC 9001 §6.6 confidentiality limit).
    pub(crate) tx_packets: u32,
}

/// [`OneRttKeys::update_after`] while no packet of the current send phase is acknowledged.
pub(crate) const UPDATE_NEVER: Instant = Instant(crate::time::Micros::MAX);

/// [`OneRttKeys::tx_phase_start_pn`] until a packet of the phase leaves.
pub(crate) const PN_NONE: u64 = u64::MAX;

/// What the key-update timing reads from loss recovery (RFC 9001 §6.1, §6.5).
pub(crate) trait AckedState {
    /// The largest Application Data packet number acknowledged.
    fn largest_acked_1rtt(&self) -> Option<u64>;
    /// The probe timeout period.
    fn pto(&self) -> Duration;
}

impl<T: Copy, C: CongestionController, const NI: usize, const NH: usize, const NA: usize> AckedState
    for Recovery<T, C, NI, NH, NA>
{
    fn largest_acked_1rtt(&self) -> Option<u64> {
        self.largest_acked(PnSpace::ApplicationData)
    }
    fn pto(&self) -> Duration {
        self.pto_period()
    }
}

impl<P: CryptoProvider> OneRttKeys<P> {
    /// A packet `pn` was protected with the current send key.
    pub(crate) fn on_sent(&mut self, pn: u64) {
        // Packet numbers only grow: the first one stays.
        self.tx_phase_start_pn = self.tx_phase_start_pn.min(pn);
        self.tx_packets = self.tx_packets.saturating_add(1);
    }

    /// RFC 9001 §6.1, §6.5: when the next key update may start; `None` until a packet of
    /// the current send phase is acknowledged, and while our update is unanswered.
    pub(crate) fn update_at(&self) -> Option<Instant> {
        (!self.tx_ahead && self.update_after != UPDATE_NEVER).then_some(self.update_after)
    }
}

/// RFC 9001 §6.1: the next key phase's secret, `secret_<n+1> =
/// HKDF-Expand-Label(secret_<n>, "quic ku", "", Hash.length)` ("quicv2 ku" for v2, RFC 9369
/// §3.3.2), written into `out` (`Hash.length` long) in the caller's frame, not returned by
/// value as by [`crate::packet::next_secret`], whose moved-from copy is never wiped. The
/// caller copies it over the old secret in place (`clone_from`); `out` wipes itself on drop.
fn next_secret_into<P: CryptoProvider>(
    provider: &P,
    version: Version,
    suite: AeadAlgorithm,
    secret: &Secret,
    out: &mut Secret,
) -> Result<(), mote_crypto::Error> {
    let params = version.params().ok_or(mote_crypto::Error::Unsupported)?;
    let hash = suite.hash();
    mote_crypto::hkdf::expand_label(
        provider,
        hash,
        secret.as_ref(),
        params.ku_label,
        &[],
        out.as_mut(),
    )
}

// RFC 9001 §6: key updates. Every key of the next generation is built where it stays (a
// device has no stack for a by-value key: an AES key schedule and GHASH key, ~0.4 KB, and
// each `Result` or move of one); the next receive key in the other phase's slot, the send
// key over the old one.
impl<P: CryptoProvider> KeySlot<OneRttKeys<P>> {
    /// RFC 9001 §5.3, §6: opens a 1-RTT packet `pn` whose Key Phase bit is `phase`, in
    /// place (header protection already removed); returns the plaintext length. A packet
    /// of the current phase opens with the current key, one of the other phase goes to
    /// `open_other_phase`. Only once the packet is authenticated: the previous key is
    /// dropped past its deadline (§6.5), and the next phase's key is derived if the
    /// current phase has none yet (§6.3, §9.5: "By generating new keys before a key update
    /// is received, receipt of packets will not create timing signals that leak the value
    /// of the Key Phase"; and as the generation is done only for an authenticated packet,
    /// a forged one never pays for it). Once per phase: should the provider fail, packets
    /// of the next phase are dropped.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_one_rtt(
        &mut self,
        provider: &P,
        version: Version,
        pn: u64,
        phase: bool,
        pkt: &mut [u8],
        header_len: usize,
        now: Instant,
        keep_until: Instant,
    ) -> Result<usize, WireError> {
        let k = self.as_mut().ok_or(WireError::DecryptFailed)?;
        let n = if phase == k.rx_phase {
            let n = k.keys.rx.packet.open_in_place(pn, pkt, header_len)?;
            // RFC 9001 §6.4, §6.5: the current phase starts at the smallest packet number
            // its key opened (a packet reordered below the one that completed the update
            // lowers it), so that no other-phase packet above it opens with the previous
            // key. `min`: no branch on the packet number.
            k.rx_phase_start_pn = k.rx_phase_start_pn.min(pn);
            n
        } else {
            self.open_other_phase(provider, version, pn, pkt, header_len, now, keep_until)?
        };
        let Some(k) = self.as_mut() else { return Ok(n) };
        // RFC 9001 §6.5: "An endpoint SHOULD retain old read keys for no more than three
        // times the PTO": past its deadline the previous key is erased, not only ignored.
        if now >= k.prev_rx_until {
            k.prev_rx.clear();
        }
        if !k.next_rx_ready {
            self.derive_next_rx(provider, version);
        }
        Ok(n)
    }

    /// RFC 9001 §6.1, §6.3: the next phase's receive key, derived in its slot. Out of line:
    /// the next secret is on the stack only here.
    #[inline(never)]
    fn derive_next_rx(&mut self, provider: &P, version: Version) {
        let Some(k) = self.as_mut() else { return };
        // The slot is empty: not derived yet, or emptied when its key became current.
        k.next_rx_ready = true;
        let mut secret = Secret::zeroed(k.suite.hash().output_len());
        if next_secret_into(provider, version, k.suite, &k.rx_secret, &mut secret).is_ok() {
            k.rx_secret.clone_from(&secret);
            let _ = k.next_rx.derive(provider, version, k.suite, k.rx_secret.as_ref());
        }
    }

    /// RFC 9001 §6.2, §6.5: opens a 1-RTT packet whose Key Phase differs from the current
    /// receive key's: below the current phase's first packet number with the previous
    /// phase's key while it is kept (a packet reordered across an update), else with the
    /// next phase's key derived ahead — the peer's key update, which is followed. Nothing
    /// is derived for it; a packet that does not open changes nothing. Returns the
    /// plaintext length.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn open_other_phase(
        &mut self,
        provider: &P,
        version: Version,
        pn: u64,
        pkt: &mut [u8],
        header_len: usize,
        now: Instant,
        keep_until: Instant,
    ) -> Result<usize, WireError> {
        let k = self.as_mut().ok_or(WireError::DecryptFailed)?;
        let below = pn < k.rx_phase_start_pn;
        let prev = k.prev_rx.as_ref().filter(|_| below && now < k.prev_rx_until);
        if let Some(prev) = prev {
            return prev.open_in_place(pn, pkt, header_len);
        }
        let next = k.next_rx.as_ref().ok_or(WireError::DecryptFailed)?;
        let n = next.open_in_place(pn, pkt, header_len)?;
        // RFC 9001 §6.4: "Packets with higher packet numbers MUST be protected with either
        // the same or newer packet protection keys than packets with lower packet numbers."
        // The next key opened a packet below the first of the current phase.
        if below {
            return Err(WireError::KeyUpdate);
        }
        // RFC 9001 §6.2, §6.5: the next key becomes the current one and the current one
        // the previous, kept until `keep_until` (swapped where they are, in small chunks);
        // the next one after is derived right after, for this authenticated packet
        // (`open_one_rtt`). The header-protection keys stay (RFC 9001 §6.1).
        if let Some(next) = k.next_rx.as_mut() {
            core::mem::swap(next, &mut k.keys.rx.packet);
        }
        core::mem::swap(&mut k.prev_rx, &mut k.next_rx);
        k.next_rx.clear();
        k.next_rx_ready = false;
        k.prev_rx_until = keep_until;
        k.rx_phase_start_pn = pn;
        k.rx_phase = !k.rx_phase;
        k.updates = k.updates.saturating_add(1);
        // RFC 9001 §6.2: an update we did not initiate is answered with one of the send key.
        if core::mem::take(&mut k.tx_ahead) {
            return Ok(n);
        }
        // The packet was authentic: a failure here is the provider's (the 1-RTT keys are
        // gone), not the peer's, and closes the connection (RFC 9000 §20.1).
        self.advance_tx(provider, version).map_err(|_| WireError::Internal)?;
        Ok(n)
    }

    /// RFC 9001 §6.1: the send key moves to the next generation, in place, and the Key
    /// Phase bit we send flips.
    fn advance_tx(&mut self, provider: &P, version: Version) -> Result<(), mote_crypto::Error> {
        let k = self.as_ref().ok_or(mote_crypto::Error::Unsupported)?;
        let suite = k.suite;
        let mut secret = Secret::zeroed(suite.hash().output_len());
        next_secret_into(provider, version, suite, &k.tx_secret, &mut secret)?;
        self.replace_tx_key(provider, version, suite, secret.as_ref())?;
        let k = self.as_mut().ok_or(mote_crypto::Error::Unsupported)?;
        k.tx_secret.clone_from(&secret);
        k.tx_phase = !k.tx_phase;
        k.tx_phase_start_pn = PN_NONE;
        k.update_after = UPDATE_NEVER;
        k.tx_packets = 0;
        Ok(())
    }

    /// RFC 9001 §6.1, §6.5: an ACK frame was processed at `now`. The first time the largest
    /// Application Data packet number acknowledged (in `recovery`) covers a packet of the
    /// current send phase, the next update is allowed: at once in the first phase (no
    /// update yet, nothing to wait for), else three PTOs later (§6.5: "Endpoints SHOULD
    /// wait three times the PTO before initiating a key update after receiving an
    /// acknowledgment that confirms that the previous key update was received": the peer
    /// may still hold its old read keys, and with them could not open our next phase),
    /// whoever started the previous update. The acknowledgment is asked before the first
    /// update too (§6.1 asks it before a subsequent one): the peer has then opened a
    /// 1-RTT packet, after which a peer like us has its next read key.
    #[inline(never)]
    pub(crate) fn on_ack(&mut self, recovery: &impl AckedState, now: Instant) {
        let Some(k) = self.as_mut() else { return };
        // Once per phase (the recovery state is read only then).
        if k.update_after != UPDATE_NEVER {
            return;
        }
        let first = k.tx_phase_start_pn;
        if recovery.largest_acked_1rtt().is_none_or(|largest| largest < first) {
            return;
        }
        // The send key's generation: updates answered or followed, and ours unanswered.
        let first_phase = k.updates == 0 && !k.tx_ahead;
        k.update_after = if first_phase { now } else { now + recovery.pto().saturating_mul(3) };
    }

    /// Keeps `update_after`, which may wait for the application's update for the whole
    /// connection, comparable with `now` on a device ([`Instant::age`], `time`): the
    /// connections call it for every datagram received. Should an aged or computed
    /// `update_after` hit [`UPDATE_NEVER`] (one value in 2^32), the next ACK sets it again.
    pub(crate) fn age(&mut self, now: Instant) {
        if let Some(k) = self.as_mut() {
            if k.update_after != UPDATE_NEVER {
                k.update_after.age(now);
            }
        }
    }

    /// RFC 9001 §6.1: starts a key update at `now`: the send key moves to the next
    /// generation and the Key Phase bit flips; the receive key follows when the peer's
    /// packets do. Refused while a previous update is unanswered, and (§6.1: "MUST NOT
    /// initiate a subsequent key update unless it has received an acknowledgment for a
    /// packet that was sent protected with keys from the current key phase"; §6.5: three
    /// PTOs after that acknowledgment) before `update_after` (see `on_ack`).
    #[inline(never)]
    pub(crate) fn initiate(&mut self, provider: &P, version: Version, now: Instant) -> bool {
        let Some(k) = self.as_ref() else { return false };
        // `UPDATE_NEVER` is checked as such: a device's instants wrap (`time`), so no value
        // is later than every other.
        let never = k.update_after == UPDATE_NEVER;
        if k.tx_ahead
            || never
            || now < k.update_after
            || self.advance_tx(provider, version).is_err()
        {
            return false;
        }
        match self.as_mut() {
            Some(k) => {
                k.tx_ahead = true;
                true
            }
            None => false,
        }
    }
}

/// Packet-protection keys of every level.
pub(crate) struct Keys<P: CryptoProvider> {
    pub(crate) initial: KeySlot<DirKeys<P>>,
    pub(crate) handshake: KeySlot<DirKeys<P>>,
    pub(crate) one_rtt: KeySlot<OneRttKeys<P>>,
    /// 0-RTT: the client's send key or the server's receive key (feature `resumption`:
    /// 0-RTT needs a ticket).
    #[cfg(feature = "resumption")]
    pub(crate) zero_rtt: KeySlot<PacketKeys<P>>,
}

impl<P: CryptoProvider> Keys<P> {
    /// RFC 9001 §5.2: derives the Initial keys of both directions for `side` from the
    /// client's Destination Connection ID into their slot (replacing any earlier ones).
    pub(crate) fn install_initial(
        &mut self,
        provider: &P,
        version: Version,
        client_dcid: &[u8],
        side: Side,
    ) -> Result<(), mote_crypto::Error> {
        let (mut client, mut server) = (Secret::zeroed(0), Secret::zeroed(0));
        crate::packet::initial_secrets_into(
            provider,
            version,
            client_dcid,
            &mut client,
            &mut server,
        )?;
        let (tx, rx) = match side {
            Side::Client => (&client, &server),
            Side::Server => (&server, &client),
        };
        let alg = crate::packet::INITIAL_AEAD;
        self.initial.derive(provider, version, alg, tx.as_ref(), rx.as_ref())
    }

    /// The 0-RTT key, if any.
    pub(crate) fn zero_rtt(&self) -> Option<&PacketKeys<P>> {
        #[cfg(feature = "resumption")]
        return self.zero_rtt.as_ref();
        #[cfg(not(feature = "resumption"))]
        None
    }

    /// Discards the 0-RTT key (RFC 9001 §4.9.3).
    pub(crate) fn discard_zero_rtt(&mut self) {
        #[cfg(feature = "resumption")]
        {
            self.zero_rtt.clear();
        }
    }
}

/// Connection IDs the handshake checks transport parameters against (RFC 9000 §7.3).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cids {
    /// Our Source Connection ID (the one the peer addresses us with).
    pub(crate) local: ConnectionId,
    /// The peer's Source Connection ID: our Destination Connection ID.
    pub(crate) remote: ConnectionId,
    /// The Source Connection ID the peer chose during the handshake (a client: from the
    /// server's first packet). RFC 9000 §7.2: every long-header packet of the peer carries
    /// it, even after `remote` moved to a connection ID from NEW_CONNECTION_ID (§5.1.2).
    pub(crate) peer_scid: ConnectionId,
    /// The Destination Connection ID of the client's first Initial.
    pub(crate) original_dcid: ConnectionId,
    /// The Source Connection ID of the Retry packet (client: the one acted on; server: the
    /// one the client's token names), RFC 9000 §7.3.
    pub(crate) retry_scid: Option<ConnectionId>,
}

impl Cids {
    /// The Destination Connection ID of the client's Initials, from which Initial keys
    /// derive: the Retry SCID after a Retry, the original DCID otherwise.
    pub(crate) fn initial_dcid(&self) -> &ConnectionId {
        self.retry_scid.as_ref().unwrap_or(&self.original_dcid)
    }
}

/// What the handshake changed, for the connection to act on after `read_handshake`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HsSignals {
    pub(crate) handshake_keys: bool,
    pub(crate) one_rtt_keys: bool,
    pub(crate) complete: bool,
    pub(crate) early_data: Option<bool>,
    pub(crate) tickets: u32,
    /// Server: compatible version negotiation switched the connection's version.
    pub(crate) version_switched: bool,
}

/// The connection state the TLS session writes into during `start` / `read_handshake`.
pub(crate) struct Handshake<P: CryptoProvider, C> {
    pub(crate) provider: P,
    pub(crate) rng: Drbg<P>,
    pub(crate) side: Side,
    /// The version in use: the original one, or after compatible version negotiation (RFC
    /// 9368 §2.3) the negotiated one.
    pub(crate) version: Version,
    /// The version of the client's first Initial (0-RTT packets stay in it).
    pub(crate) original_version: Version,
    /// A version compatible with the original one that we offer (client) or switch to
    /// when offered (server).
    pub(crate) compatible: Option<Version>,
    /// CRYPTO send buffers of the Initial, Handshake and 1-RTT levels.
    pub(crate) crypto_send: [CryptoSend<C, CRYPTO_RANGES>; 3],
    pub(crate) local_tp: [u8; LOCAL_TP_MAX],
    pub(crate) local_tp_len: usize,
    pub(crate) keys: Keys<P>,
    pub(crate) cids: Cids,
    /// The peer's transport parameters, decoded and validated, until the connection applies
    /// them (the general connection; the device connection keeps its own through
    /// `device::peer_params::DeviceHooks`).
    pub(crate) peer_tp: Option<TransportParameters>,
    pub(crate) signals: HsSignals,
    /// Client: the server's transport parameters to remember with tickets, encoded.
    #[cfg(feature = "resumption")]
    pub(crate) remembered_tp: [u8; REMEMBERED_TP_MAX],
    #[cfg(feature = "resumption")]
    pub(crate) remembered_tp_len: usize,
    /// Client: the latest session ticket, encoded ([`mote_tls::Ticket::encode`]).
    #[cfg(feature = "resumption")]
    pub(crate) ticket: [u8; TICKET_MAX],
    #[cfg(feature = "resumption")]
    pub(crate) ticket_len: usize,
    /// Secrets queued for the key log.
    #[cfg(feature = "keylog")]
    pub(crate) keylog: super::keylog::KeyLog,
}

const fn level_index(level: Level) -> usize {
    match level {
        Level::Initial => 0,
        Level::Handshake => 1,
        Level::OneRtt => 2,
    }
}

fn tp_error() -> TlsError {
    TlsError::Transport(transport_error::TRANSPORT_PARAMETER_ERROR)
}

impl<P: CryptoProvider + Clone, C: AsRef<[u8]> + AsMut<[u8]>> Handshake<P, C> {
    /// Client or server, as `Connection::side`: without the `server` feature the constant
    /// `Client`, so the server-only branches of the TLS hooks (the server's version switch,
    /// the client's parameters checked) leave a client-only image (issue 8).
    const fn side(&self) -> Side {
        if cfg!(feature = "server") {
            self.side
        } else {
            Side::Client
        }
    }

    pub(crate) fn crypto_send_mut(&mut self, level: Level) -> &mut CryptoSend<C, CRYPTO_RANGES> {
        match level_index(level) {
            0 => &mut self.crypto_send[0],
            1 => &mut self.crypto_send[1],
            _ => &mut self.crypto_send[2],
        }
    }

    /// RFC 9002 §6.2.3: a duplicate of the peer's CRYPTO data means it did not get ours
    /// (or our RTT estimate is too small); "an endpoint MAY, for a limited number of times
    /// per connection, send a packet containing unacknowledged CRYPTO data earlier than the
    /// PTO expiry". Queues our unacknowledged CRYPTO data of space `i` for the next
    /// datagram, without arming or backing off the PTO; `resends` counts against
    /// [`FAST_RESENDS`] per connection (no endless exchange), and only when something is
    /// queued: the other packets of the same repeated flight find our data already queued.
    /// Clients only (the device connection and the general client share this).
    pub(crate) fn resend_crypto_early(&mut self, i: usize, resends: &mut u8) {
        if *resends >= FAST_RESENDS {
            return;
        }
        if let Some(c) = self.crypto_send.get_mut(i).filter(|c| c.has_unacked()) {
            if !c.wants_to_send() {
                *resends += 1;
            }
            c.requeue_unacked();
        }
    }

    /// This side's (send, receive) secrets of `s`.
    fn dir_secrets<'s>(&self, s: &Secrets<'s>) -> Result<(&'s Secret, &'s Secret), TlsError> {
        let server = s.server.ok_or(TlsError::Crypto(mote_crypto::Error::BadLength))?;
        Ok(match self.side() {
            Side::Client => (s.client, server),
            Side::Server => (server, s.client),
        })
    }
}

impl<P: CryptoProvider + Clone, C: AsRef<[u8]> + AsMut<[u8]>> Handshake<P, C> {
    /// RFC 9000 §7.3, §7.4, §18: decodes the peer's transport parameters into
    /// `self.peer_tp` (where they are kept), checks its connection IDs and version
    /// information, and (client, `resumption`) encodes what a ticket remembers.
    fn check_peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), TlsError> {
        let side = self.side();
        let sender = match side {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        };
        let tp = self.peer_tp.insert(TransportParameters::default());
        tp.decode_into(params, sender).map_err(|_| tp_error())?;
        let c = &self.cids;
        match side {
            // RFC 9000 §7.3: the server's initial_source_connection_id must be the Source
            // Connection ID of its Initial (the one it chose in the handshake, §7.2),
            // original_destination_connection_id the DCID of our first Initial, and
            // retry_source_connection_id present exactly when we acted on a Retry, equal to
            // its Source Connection ID.
            Side::Client => tp.validate_server_cids(
                &c.peer_scid,
                &c.original_dcid,
                c.retry_scid.as_ref().map(|r| &r[..]),
            ),
            // RFC 9000 §7.3: the client's initial_source_connection_id must be the Source
            // Connection ID of its Initial.
            Side::Server => tp.validate_client_cids(&c.peer_scid),
        }
        .map_err(|_| tp_error())?;
        // RFC 9000 §7.4.1: a client remembers the server's parameters with its tickets
        // (minus those that must not be reused) for 0-RTT.
        #[cfg(feature = "resumption")]
        if side == Side::Client {
            // Re-encoded from the bytes that came, each integer in its shortest form: a
            // server sending long varints still fits REMEMBERED_TP_MAX, and a client-only
            // build needs no general encoder (issue 8). Decoded, the same parameters as
            // `encode_remembered_for_0rtt` writes.
            let n = crate::transport_params::remember_shortest(params, &mut self.remembered_tp);
            // RFC 9369 §5: the ticket is for the version in use, which the remembered
            // parameters name: a server's Chosen Version is checked equal to it below; a
            // server that sent none (RFC 9368 §8: a v1 server; a v2 one must send it, RFC
            // 9369 §4) gets it written in when it is not v1.
            let named = tp.version_information.is_some();
            self.remembered_tp_len = crate::transport_params::remember::remember_version(
                &mut self.remembered_tp,
                n,
                named,
                self.version,
            );
        }
        let vi = tp.version_information;
        self.negotiate_version_information(vi.as_ref())
    }

    /// RFC 9368 §4, §2.3: checks the peer's version_information against the versions in
    /// use (downgrade protection) and, on a server, switches to the compatible version when
    /// the client offers it. Failures are VERSION_NEGOTIATION_ERROR.
    pub(crate) fn negotiate_version_information(
        &mut self,
        peer: Option<&crate::transport_params::VersionInformation>,
    ) -> Result<(), TlsError> {
        let error = TlsError::Transport(transport_error::VERSION_NEGOTIATION_ERROR);
        match (self.side(), peer) {
            // RFC 9368 §4: "the server MUST validate that the client's Chosen Version
            // matches the version in use" — the version of the client's first flight.
            (Side::Server, Some(vi)) => {
                if vi.chosen != self.original_version {
                    return Err(error);
                }
                // RFC 9368 §2.3: compatible negotiation, when the client lists our
                // compatible version; the answer (from the ServerHello on) is in it.
                if let Some(v) = self.compatible.filter(|v| vi.available().contains(v)) {
                    // Only a server connection gets here (a client-only build has none).
                    if cfg!(feature = "server") && v != self.version && v.is_supported() {
                        self.switch_version(v)?;
                    }
                }
            }
            (Side::Server, None) => {}
            // RFC 9368 §4: "the client MUST validate that the server's Chosen Version is
            // equal to the negotiated version"; a server that switched versions without
            // saying so, or an attacker that made it look so, fails the same way.
            (Side::Client, Some(vi)) => {
                if vi.chosen != self.version {
                    return Err(error);
                }
            }
            (Side::Client, None) => {
                if self.version != self.original_version {
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// Server: the connection continues in `v`: our transport parameters say so (RFC 9368
    /// §3: Chosen Version `v`); the connection re-derives its Initial keys.
    fn switch_version(&mut self, v: Version) -> Result<(), TlsError> {
        let len = self.local_tp_len.min(LOCAL_TP_MAX);
        let mut tp =
            TransportParameters::decode(self.local_tp.get(..len).unwrap_or(&[]), Side::Server)
                .map_err(|_| TlsError::Transport(transport_error::INTERNAL_ERROR))?;
        let original = self.original_version;
        tp.version_information =
            Some(crate::transport_params::VersionInformation::new(v, &[v, original]));
        let mut w = crate::coding::Writer::new(&mut self.local_tp);
        tp.encode(&mut w).map_err(|_| TlsError::Transport(transport_error::INTERNAL_ERROR))?;
        self.local_tp_len = w.position();
        self.version = v;
        self.signals.version_switched = true;
        Ok(())
    }
}

impl<P: CryptoProvider + Clone, C: AsRef<[u8]> + AsMut<[u8]>> QuicHooks for Handshake<P, C> {
    fn rng(&mut self) -> &mut dyn CryptoRng {
        &mut self.rng
    }

    fn send_buffer(&mut self, level: Level) -> SendBuffer<'_> {
        let tp_len = self.local_tp_len.min(LOCAL_TP_MAX);
        let (tp, sends) = (&self.local_tp, &mut self.crypto_send);
        let space = match level_index(level) {
            0 => sends[0].spare_mut(),
            1 => sends[1].spare_mut(),
            _ => sends[2].spare_mut(),
        };
        SendBuffer { space, transport_parameters: tp.get(..tp_len).unwrap_or(&[]) }
    }

    fn sent(&mut self, level: Level, len: usize) {
        self.crypto_send_mut(level).commit(len);
    }

    // RFC 9001 §4.1.4, §5.1: packet protection keys come from the traffic secrets TLS
    // exports for each encryption level.
    fn install_secrets(&mut self, s: Secrets<'_>) -> Result<(), TlsError> {
        #[cfg(feature = "keylog")]
        self.keylog.on_secrets(&s);
        match s.level {
            KeyLevel::Handshake => {
                let (tx, rx) = self.dir_secrets(&s)?;
                let (p, v) = (&self.provider, self.version);
                let keys = &mut self.keys.handshake;
                keys.derive(p, v, s.suite, tx.as_ref(), rx.as_ref()).map_err(TlsError::Crypto)?;
                self.signals.handshake_keys = true;
            }
            KeyLevel::OneRtt => {
                let (tx, rx) = self.dir_secrets(&s)?;
                let (p, v) = (&self.provider, self.version);
                self.keys.one_rtt.derive(p, v, s.suite, tx, rx).map_err(TlsError::Crypto)?;
                self.signals.one_rtt_keys = true;
            }
            // RFC 9001 §4.6.1: 0-RTT keys protect client → server packets only. They are
            // sent in the original version, before the client can know of a switch.
            #[cfg(feature = "resumption")]
            KeyLevel::ZeroRtt => {
                let (p, v) = (&self.provider, self.original_version);
                let keys = &mut self.keys.zero_rtt;
                keys.derive(p, v, s.suite, s.client.as_ref()).map_err(TlsError::Crypto)?;
            }
            // Without tickets there is no 0-RTT to offer or accept.
            #[cfg(not(feature = "resumption"))]
            KeyLevel::ZeroRtt => {}
        }
        Ok(())
    }

    // RFC 9000 §7.3, §7.4, §18: decode, range-check and authenticate the peer's
    // connection IDs; any failure is TRANSPORT_PARAMETER_ERROR.
    // Out of line, and the parameters decoded where they are kept (issue 8): not a few
    // hundred bytes of them, and copies, under the TLS message handler's frame.
    #[inline(never)]
    fn peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), TlsError> {
        let checked = self.check_peer_transport_parameters(params);
        if checked.is_err() {
            self.peer_tp = None;
        }
        checked
    }

    fn early_data(&mut self, accepted: bool) {
        self.signals.early_data = Some(accepted);
    }

    fn handshake_complete(&mut self) {
        self.signals.complete = true;
    }

    // RFC 9369 §5: a server binds its tickets to the QUIC version. Offered tickets must be
    // of the version the client initiated the connection with (its first flight, where the
    // ClientHello and any 0-RTT are: RFC 9369 §4.1); tickets issued are of the negotiated
    // version ("After compatible version negotiation, any resulting session ticket maps to
    // the negotiated version rather than the original one").
    fn ticket_context(&self, issuing: bool) -> u32 {
        if issuing {
            self.version.0
        } else {
            self.original_version.0
        }
    }

    fn new_ticket(&mut self, ticket: &mote_tls::Ticket<'_>) {
        self.signals.tickets = self.signals.tickets.saturating_add(1);
        #[cfg(feature = "resumption")]
        {
            let tp = self.remembered_tp.get(..self.remembered_tp_len).unwrap_or(&[]);
            let t = mote_tls::Ticket { server_transport_parameters: tp, ..*ticket };
            self.ticket_len = t.encode(&mut self.ticket).unwrap_or(0);
        }
        #[cfg(not(feature = "resumption"))]
        let _ = ticket;
    }

    #[cfg(feature = "keylog")]
    fn client_random(&mut self, random: &[u8; 32]) {
        self.keylog.set_client_random(random);
    }
}
