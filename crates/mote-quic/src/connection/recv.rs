//! The receive path: datagrams → packets → frames (RFC 9000 §12, §13, §17; RFC 9001 §5).

use core::net::SocketAddr;

use mote_crypto::CryptoProvider;

use super::cids::{LocalCids, RemoteCids};
use super::counters::{bump, Counters};
use super::path;
use super::sent::{flag, ControlTable, SentFrames};
use super::tls::{Handshake, TlsSession, CRYPTO_RANGES};
use super::{
    si, CloseReason, Connection, ConnectionClose, Event, Events, PeerParams, RecvInfo, Res, State,
    TokenState, HANDSHAKE_RANGES, HANDSHAKE_SENT, MIN_INITIAL_SIZE,
};
use crate::arith::Sat64 as _;
use crate::cid::ConnectionId;
use crate::coding::{Reader, VarInt};
use crate::error::{TransportErrorCode, WireError};
use crate::frame::{self, types, Ack, Frame, StreamDir};
use crate::packet::{
    self, check_reserved_bits, number, remove_header_protection, Header, PacketType, Unprotected,
    VersionNegotiation, KEY_PHASE_BIT,
};
use crate::recovery::{
    NewReno, PacketEvent, PnSpace, ReceivedPackets, ReceivedSpace, Recovery, TimeoutAction,
};
use crate::stream::{CryptoSend, Handled, Insert, StreamId, Streams};
use crate::time::{Duration, Instant};
use crate::token::TOKEN_MAX;
use crate::transport_params::{Side, TransportParameters};
use crate::version::Version;
use mote_tls::Level;

/// The header fields of one packet, copied out before protection is removed in place.
#[derive(Clone, Copy)]
struct Hdr {
    ptype: PacketType,
    long: bool,
    version: Version,
    dcid: ConnectionId,
    scid: ConnectionId,
    token_empty: bool,
    pn_offset: usize,
    len: usize,
}

/// What a packet's frames amounted to.
#[derive(Clone, Copy, Default)]
struct FramesOutcome {
    ack_eliciting: bool,
    /// A frame other than PADDING, NEW_CONNECTION_ID, PATH_CHALLENGE, PATH_RESPONSE (RFC
    /// 9000 §9.1): the packet can move the connection to its source address.
    non_probing: bool,
    /// False when a STREAM or CRYPTO frame could not be stored: the packet must not be
    /// acknowledged (RFC 9000 §13.1), so the peer retransmits it.
    ackable: bool,
    /// A CONNECTION_CLOSE ended processing.
    closed: bool,
}

pub(crate) const fn level_of(space: PnSpace) -> Level {
    match space {
        PnSpace::Initial => Level::Initial,
        PnSpace::Handshake => Level::Handshake,
        PnSpace::ApplicationData => Level::OneRtt,
    }
}

/// RFC 9001 §5.4, §5.3: removes header, then packet protection with the receive keys of the
/// packet's type — one path for every level — following a key update the peer initiated
/// (RFC 9001 §6: a 1-RTT Key Phase bit different from ours). `zero_rtt`: 0-RTT packets are
/// opened (a server). Shared by the general and the device connection; `pto` is the
/// caller's current PTO period (the previous key is kept for three of them, §6.5).
#[allow(clippy::too_many_arguments)]
pub(crate) fn unprotect<P: CryptoProvider + Clone, C>(
    hs: &mut Handshake<P, C>,
    pto: Duration,
    now: Instant,
    ptype: PacketType,
    zero_rtt: bool,
    pkt: &mut [u8],
    pn_offset: usize,
    largest: Option<u64>,
) -> Result<Unprotected, WireError> {
    let keys = &hs.keys;
    let rx = match ptype {
        PacketType::Initial => keys.initial.as_ref().map(|k| &k.rx),
        PacketType::Handshake => keys.handshake.as_ref().map(|k| &k.rx),
        PacketType::ZeroRtt => keys.zero_rtt().filter(|_| zero_rtt),
        PacketType::OneRtt => keys.one_rtt.as_ref().map(|k| &k.keys.rx),
    };
    let rx = rx.ok_or(WireError::DecryptFailed)?;
    let t = remove_header_protection(&rx.header, pkt, pn_offset)?;
    let pn = number::decode(largest, t.value, t.len);
    let header_len = pn_offset + t.len;
    // Only a 1-RTT packet has a Key Phase (the bit is reserved in long headers).
    let payload_len = if ptype == PacketType::OneRtt {
        let phase = t.first_byte & KEY_PHASE_BIT != 0;
        // RFC 9001 §6.5: a key that is replaced is kept for three PTOs.
        let keep_until = now + pto.saturating_mul(3);
        let (provider, version) = (&hs.provider, hs.version);
        let slot = &mut hs.keys.one_rtt;
        slot.open_one_rtt(provider, version, pn, phase, pkt, header_len, now, keep_until)?
    } else {
        rx.packet.open_in_place(pn, pkt, header_len)?
    };
    // Only now, with the packet authenticated (see `check_reserved_bits`).
    check_reserved_bits(t.first_byte)?;
    Ok(Unprotected { pn, first_byte: t.first_byte, header_len, payload_len })
}

/// RFC 9001 §5.8: whether a Retry's integrity tag over the pseudo-packet with our original
/// DCID is valid. The pseudo-packet is never assembled: its parts go to the provider's GMAC
/// (issue 8: a packet-sized copy here was the deepest frame of the device's receive path).
/// Out of line: the fixed AEAD key's schedule is on the stack only while the tag is
/// checked, not under the Initial key derivation that follows.
#[inline(never)]
pub(crate) fn retry_verified<P: CryptoProvider>(
    provider: &P,
    version: Version,
    original_dcid: &ConnectionId,
    packet: &[u8],
) -> bool {
    packet::verify_retry(provider, version, original_dcid, packet).is_ok()
}

pub(crate) fn wire(e: WireError) -> ConnectionClose {
    ConnectionClose::transport(e.code(), e.frame_type())
}

pub(crate) fn violation(frame_type: u64) -> ConnectionClose {
    ConnectionClose::transport(TransportErrorCode::PROTOCOL_VIOLATION, Some(frame_type))
}

/// RFC 9001 §4.8: a TLS error closes the connection with CRYPTO_ERROR (0x100 + alert) or
/// the transport code the TLS layer chose.
pub(crate) fn tls_close(e: mote_tls::Error) -> ConnectionClose {
    ConnectionClose::transport(TransportErrorCode(e.quic_error_code()), Some(frame::types::CRYPTO))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EvKind {
    Acked,
    Lost,
    Evicted,
}

/// The parts of a connection that acknowledgements and losses of sent packets update.
pub(super) struct Sink<'a, C, S, const N: usize, const R: usize> {
    pub(super) streams: &'a mut Streams<S, N, R>,
    pub(super) crypto: &'a mut [CryptoSend<C, CRYPTO_RANGES>; 3],
    pub(super) controls: &'a mut ControlTable,
    pub(super) rx_initial: &'a mut ReceivedPackets<HANDSHAKE_RANGES>,
    pub(super) rx_handshake: &'a mut ReceivedPackets<HANDSHAKE_RANGES>,
    pub(super) rx_data: &'a mut ReceivedPackets<R>,
    pub(super) handshake_done_pending: &'a mut bool,
    pub(super) stats: &'a mut Counters,
    pub(super) events: &'a mut Events,
    #[cfg_attr(not(feature = "cid-rotation"), allow(dead_code))]
    pub(super) local_cids: &'a mut LocalCids,
    pub(super) remote_cids: &'a mut RemoteCids,
    pub(super) ecn: &'a mut path::Ecn,
    #[cfg(feature = "pmtud")]
    pub(super) pmtud: &'a mut path::Pmtud,
    #[cfg(feature = "pmtud")]
    pub(super) mtu_change: Option<u16>,
    #[cfg(feature = "pmtud")]
    pub(super) now: Instant,
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(super) token_state: &'a mut TokenState,
}

impl<'a, C, S, const N: usize, const R: usize> Sink<'a, C, S, N, R>
where
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// [`Self::on_event`] as the callback recovery takes. One function, so one closure type:
    /// ACK processing and the loss timer share one copy of recovery's loss detection.
    pub(super) fn events(
        &mut self,
    ) -> impl FnMut(PacketEvent<SentFrames>) + use<'_, 'a, C, S, N, R> {
        move |ev| self.on_event(ev)
    }

    fn crypto(&mut self, space: PnSpace) -> &mut CryptoSend<C, CRYPTO_RANGES> {
        match space {
            PnSpace::Initial => &mut self.crypto[0],
            PnSpace::Handshake => &mut self.crypto[1],
            PnSpace::ApplicationData => &mut self.crypto[2],
        }
    }

    /// RFC 9000 §13.3: what an acknowledged or lost packet means for the frames it carried.
    pub(super) fn on_event(&mut self, ev: PacketEvent<SentFrames>) {
        // Borrowed, not moved out of the event: the record is not copied again (issue 8).
        let (space, packet, acked, ev_kind) = match &ev {
            PacketEvent::Acked { space, packet } => (*space, packet, true, EvKind::Acked),
            PacketEvent::Lost { space, packet } => {
                if packet.ack_eliciting {
                    bump(&mut self.stats.packets_lost, 1);
                }
                (*space, packet, false, EvKind::Lost)
            }
            PacketEvent::Evicted { space, packet } => (*space, packet, false, EvKind::Evicted),
        };
        let f = &packet.payload;
        if space == PnSpace::ApplicationData && !matches!(ev_kind, EvKind::Evicted) {
            if f.has(flag::CIDS) {
                // Without `cid-rotation` no NEW_CONNECTION_ID of ours is ever sent
                // (`write_cid_frames`), so only the RETIRE_CONNECTION_IDs have a delivery.
                #[cfg(feature = "cid-rotation")]
                if acked {
                    self.local_cids.on_ack(packet.pn);
                } else {
                    self.local_cids.on_lost(packet.pn);
                }
                self.remote_cids.on_delivery(packet.pn, acked);
            }
            if self.ecn.was_marked(packet.pn) {
                self.ecn.on_marked_packet(acked);
            }
            #[cfg(feature = "pmtud")]
            {
                let change = if acked {
                    self.pmtud.on_acked(self.now, packet.pn, packet.size)
                } else {
                    self.pmtud.on_lost(self.now, packet.pn, packet.size)
                };
                if change.is_some() {
                    self.mtu_change = change;
                }
            }
        }
        if f.has(flag::ACK) && acked {
            // RFC 9000 §13.2.4: the peer has our ACK; stop acknowledging up to its largest.
            let rx: &mut ReceivedSpace = match space {
                PnSpace::Initial => self.rx_initial,
                PnSpace::Handshake => self.rx_handshake,
                PnSpace::ApplicationData => self.rx_data,
            };
            rx.on_ack_acked(f.ack_largest);
        }
        if f.has(flag::CRYPTO) {
            let (off, len) = (f.crypto_offset, usize::from(f.crypto_len));
            let c = self.crypto(space);
            if acked {
                c.on_ack(off, len);
            } else {
                c.on_lost(off, len);
            }
        }
        for c in f.stream_chunks() {
            if let Some(id) = StreamId::new(c.id) {
                if acked {
                    self.streams.on_stream_acked(id, c.offset, c.len, c.fin);
                    self.events.push(Event::StreamWritable(id));
                } else {
                    self.streams.on_stream_lost(id, c.offset, c.len, c.fin);
                }
            }
        }
        for slot in f.control_slots() {
            if let Some(c) = self.controls.take(slot) {
                if acked {
                    self.streams.on_control_acked(c);
                } else {
                    self.streams.on_control_lost(c);
                }
            }
        }
        // RFC 9000 §13.3: HANDSHAKE_DONE is retransmitted until acknowledged.
        if f.has(flag::HANDSHAKE_DONE) && !acked {
            *self.handshake_done_pending = true;
        }
        // RFC 9000 §13.3: so is NEW_TOKEN (the token itself stays in the connection).
        #[cfg(feature = "server")]
        if f.has(flag::NEW_TOKEN) && *self.token_state == TokenState::InFlight {
            *self.token_state = if acked { TokenState::Acked } else { TokenState::Pending };
        }
    }
}

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// A datagram from `remote` arrived. `data` is decrypted in place.
    pub fn handle_datagram(&mut self, now: Instant, remote: SocketAddr, data: &mut [u8]) {
        self.handle_recv(now, &RecvInfo::new(remote), data);
    }

    /// A datagram — or with [`RecvInfo::segment_size`] a GRO batch of datagrams — arrived.
    pub fn handle_recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        self.set_now(now);
        match info.segment_size {
            Some(seg) if seg > 0 && seg < data.len() => {
                for d in data.chunks_mut(seg) {
                    self.on_datagram(now, info, d);
                }
            }
            _ => self.on_datagram(now, info, data),
        }
    }

    fn on_datagram(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        if matches!(self.state, State::Drained) {
            return;
        }
        let len = data.len();
        bump(&mut self.stats.datagrams_received, 1);
        bump(&mut self.stats.bytes_received, len as u64);
        // RFC 9000 §8.1: every byte of a datagram attributed to the connection counts
        // towards the anti-amplification allowance.
        self.amp_received = self.amp_received.sat_add(len as u64);
        #[cfg(feature = "migration")]
        if self.migration.amp_limited() && info.remote == self.remote {
            self.migration.amp_received = self.migration.amp_received.sat_add(len as u64);
        }
        // RFC 9000 §13.4.1: count the ECN marks of what arrives (per datagram here; the
        // per-space counts the ACK frames report are kept by ReceivedPackets).
        let ecn_i = match info.ecn {
            crate::recovery::Ecn::Ect0 => Some(0),
            crate::recovery::Ecn::Ect1 => Some(1),
            crate::recovery::Ecn::Ce => Some(2),
            crate::recovery::Ecn::NotEct => None,
        };
        if let Some(c) = ecn_i.and_then(|i| self.stats.ecn_received.get_mut(i)) {
            bump(c, 1);
        }
        // RFC 9000 §10.3.1: keep the tail in case no packet of the datagram can be
        // processed (decryption works in place).
        #[cfg(feature = "stateless-reset")]
        {
            self.datagram_tail = data
                .get(len.saturating_sub(16)..)
                .filter(|_| len >= crate::endpoint::reset::MIN_RESET_SIZE)
                .and_then(|t| <[u8; 16]>::try_from(t).ok());
        }
        match self.state {
            State::Draining { .. } => return,
            State::Closing { .. } => {
                // RFC 9000 §10.2.1: answer incoming packets with CONNECTION_CLOSE, but "an
                // endpoint SHOULD limit the rate at which it generates packets in the
                // closing state ... wait for a progressively increasing number of received
                // packets": the 1st, 2nd, 4th, 8th, ... datagram is answered, so a peer
                // flooding a closing endpoint gets a logarithmic number of replies.
                self.closing_received = self.closing_received.saturating_add(1);
                if self.closing_received >= self.closing_answer_at {
                    self.closing_answer_at = self.closing_answer_at.saturating_mul(2);
                    self.close_pending = true;
                }
                return;
            }
            _ => {}
        }
        let mut off = 0;
        while off < len {
            let Some(rest) = data.get_mut(off..) else { break };
            match self.on_packet(now, info, len, rest) {
                Some(n) if n > 0 => off += n,
                _ => break,
            }
            if self.is_closed() {
                break;
            }
        }
        if !self.address_validated {
            let blocked = self.amplification_blocked();
            self.recovery.set_amplification_limited(blocked, now);
        }
        // Answer from the local address the current peer address reaches us on.
        if info.local.is_some() && info.remote == self.remote && self.any_packet {
            self.local = info.local;
        }
    }

    /// Processes the packet at the start of `buf`; returns its length (the next coalesced
    /// packet starts there) or `None` when the rest of the datagram must be dropped.
    fn on_packet(
        &mut self,
        now: Instant,
        info: &RecvInfo,
        datagram_len: usize,
        buf: &mut [u8],
    ) -> Option<usize> {
        let hdr = {
            let parsed = match packet::parse(buf, self.hs.cids.local.len(), false) {
                Ok(p) => p,
                Err(_) => {
                    self.dropped();
                    return None;
                }
            };
            let (ptype, long, version, dcid, scid, token_empty) = match parsed.header {
                Header::Long(h) => {
                    let ptype = parsed.header.packet_type()?;
                    (ptype, true, h.version, h.dcid, h.scid, h.token.is_empty())
                }
                Header::Short(h) => {
                    (PacketType::OneRtt, false, self.hs.version, h.dcid, &[][..], true)
                }
                Header::VersionNegotiation(vn) => {
                    self.on_version_negotiation(&vn);
                    return None;
                }
                Header::Retry(r) => {
                    let n = parsed.len;
                    let (version, dcid, scid, token) = (r.version, r.dcid, r.scid, r.token);
                    self.on_retry(now, version, dcid, scid, token, buf.get(..n)?);
                    return None;
                }
                // Packets of other versions are not ours.
                Header::UnsupportedVersion(_) => {
                    self.dropped();
                    return None;
                }
            };
            Hdr {
                ptype,
                long,
                version,
                dcid: ConnectionId::new(dcid)?,
                scid: ConnectionId::new(scid)?,
                token_empty,
                pn_offset: parsed.pn_offset?,
                len: parsed.len,
            }
        };
        let len = hdr.len;
        // RFC 9368 §2.3: a client that offered a compatible version follows the server's
        // first Initial in it — tentatively: if the packet does not open, it switches back.
        let switched_from = self.try_compatible_switch(&hdr);
        if !self.accept_header(&hdr, datagram_len) {
            self.undo_switch(switched_from);
            self.dropped();
            #[cfg(feature = "stateless-reset")]
            if !hdr.long && self.check_reset_tail() {
                return None;
            }
            return Some(len);
        }
        let pkt = buf.get_mut(..len)?;
        let space = PnSpace::of(hdr.ptype);
        let largest = self.rx_largest(space);
        let unprotected = self.unprotect(now, hdr.ptype, pkt, hdr.pn_offset, largest);
        let u = match unprotected {
            Ok(u) => u,
            // RFC 9000 §17.2, §17.3.1: reserved bits set in an authenticated packet.
            // RFC 9001 §6.4: a packet opened with keys out of packet-number order; a provider
            // fault on an authenticated packet (INTERNAL_ERROR).
            Err(e @ (WireError::ReservedBitsSet | WireError::KeyUpdate | WireError::Internal)) => {
                self.enter_closing(wire(e));
                return None;
            }
            Err(_) if switched_from.is_some() => {
                self.undo_switch(switched_from);
                self.dropped();
                return Some(len);
            }
            // RFC 9001 §5.5: packets that fail to decrypt are discarded. RFC 9001 §6.6: 1-RTT
            // authentication failures are counted against the integrity limit; reaching it
            // closes the connection with AEAD_LIMIT_REACHED. RFC 9000 §10.3.1: a short-header
            // packet that fails may be a stateless reset.
            Err(_) => {
                self.dropped();
                #[cfg(feature = "stateless-reset")]
                if !hdr.long && self.check_reset_tail() {
                    return None;
                }
                if hdr.ptype == PacketType::OneRtt && self.hs.keys.one_rtt.is_some() {
                    self.auth_failures = self.auth_failures.sat_add(1);
                    if self.auth_failures >= self.integrity_limit() {
                        self.enter_closing(ConnectionClose::transport(
                            TransportErrorCode::AEAD_LIMIT_REACHED,
                            None,
                        ));
                        return None;
                    }
                }
                return Some(len);
            }
        };
        // RFC 9000 §12.3 lets an endpoint close before packet numbers run out: a device
        // records received packet numbers in 32 bits, so an authenticated packet beyond that
        // closes the connection instead of being dropped as a duplicate again and again.
        #[cfg(not(feature = "std"))]
        if !crate::recovery::ReceivedRangeList::can_track(u.pn) {
            self.enter_closing(ConnectionClose::transport(
                TransportErrorCode::INTERNAL_ERROR,
                None,
            ));
            return None;
        }
        // RFC 9000 §12.3: a packet number already processed is a duplicate.
        if self.rx_is_duplicate(space, u.pn) {
            self.dropped();
            return Some(len);
        }
        // RFC 9000 §7.2: the client adopts the Source Connection ID of the server's first
        // (authenticated) packet as its Destination Connection ID.
        if self.side() == Side::Client && hdr.long && !self.remote_cid_set {
            self.hs.cids.remote = hdr.scid;
            self.hs.cids.peer_scid = hdr.scid;
            self.remote_cids.set_handshake_cid(hdr.scid);
            self.remote_cid_set = true;
        }
        self.any_packet = true;
        let is_largest = largest.is_none_or(|l| u.pn > l);
        let payload = pkt.get(u.payload_range())?;
        #[cfg(feature = "qlog")]
        self.packet_log.push(false, hdr.ptype, u.pn, len, payload);
        match self.process_frames(now, space, hdr.ptype, &hdr.dcid, info, payload) {
            Err(close) => {
                self.enter_closing(close);
                return None;
            }
            Ok(o) => {
                bump(&mut self.stats.packets_received, 1);
                if o.ackable && !o.closed {
                    self.rx_record(space, u.pn, now, o.ack_eliciting, info.ecn);
                } else if !o.closed {
                    // RFC 9000 §12.3, §13.1: processed, so a copy is a duplicate; its
                    // dropped data unacknowledged, so the peer sends it again.
                    self.rx_mut(space).on_packet_unacked(u.pn);
                }
                // RFC 9000 §10.1: a packet successfully processed restarts the idle timer.
                self.idle_start = now;
                self.ack_eliciting_since_recv = false;
                if hdr.ptype == PacketType::Handshake && self.side() == Side::Server {
                    // RFC 9000 §8.1: a Handshake packet from the client validates its
                    // address. RFC 9001 §4.9.1: the server discards Initial keys when it
                    // first successfully processes a Handshake packet.
                    self.address_validated = true;
                    self.recovery.set_amplification_limited(false, now);
                    self.discard_space(PnSpace::Initial, now);
                }
                // RFC 9000 §9.3: a packet from a new peer address.
                #[cfg(feature = "migration")]
                if hdr.ptype == PacketType::OneRtt && info.remote != self.remote && !o.closed {
                    self.on_peer_address(now, info.remote, datagram_len, o.non_probing, is_largest);
                }
                let _ = is_largest;
            }
        }
        Some(len)
    }

    /// The checks that need no keys: connection IDs, version, token, datagram size.
    fn accept_header(&self, h: &Hdr, datagram_len: usize) -> bool {
        let c = &self.hs.cids;
        let server = self.side() == Side::Server;
        // A server also accepts the client's original DCID on long headers until the client
        // switches to ours (RFC 9000 §7.2).
        // Short headers may use any connection ID we issued and the peer has not retired.
        let ours =
            if h.long { h.dcid == c.local } else { self.local_cids.seq_of(&h.dcid).is_some() };
        let original = server && h.long && h.dcid == *c.initial_dcid();
        if !(ours || original) {
            return false;
        }
        // Long headers are in the version in use; a server also takes 0-RTT packets in the
        // original version after switching to a compatible one (RFC 9368 §2.3).
        let zero_rtt_original =
            h.ptype == PacketType::ZeroRtt && h.version == self.hs.original_version;
        if h.long && h.version != self.hs.version && !zero_rtt_original {
            return false;
        }
        match (self.side(), h.ptype) {
            // RFC 9000 §17.2.2: a client discards a server Initial carrying a token.
            (Side::Client, PacketType::Initial) if !h.token_empty => return false,
            // RFC 9000 §14.1: a server discards an Initial in a datagram below 1200 bytes.
            (Side::Server, PacketType::Initial) if datagram_len < MIN_INITIAL_SIZE => return false,
            // Servers never send 0-RTT.
            (Side::Client, PacketType::ZeroRtt) => return false,
            // RFC 9001 §5.7: a server must not process 1-RTT packets before the handshake
            // completes.
            (Side::Server, PacketType::OneRtt) if !self.handshake_complete => return false,
            _ => {}
        }
        // RFC 9000 §7.2: the peer's long headers carry the Source Connection ID it chose
        // during the handshake, even once Retire Prior To moved our DCID on (§5.1.2).
        if h.long {
            match self.side() {
                Side::Client if self.remote_cid_set && h.scid != c.peer_scid => return false,
                Side::Server if h.scid != c.peer_scid => return false,
                _ => {}
            }
        }
        true
    }

    /// RFC 9001 §5.4, §5.3: removes header, then packet protection ([`unprotect`]); a server
    /// opens 0-RTT packets too.
    fn unprotect(
        &mut self,
        now: Instant,
        ptype: PacketType,
        pkt: &mut [u8],
        pn_offset: usize,
        largest: Option<u64>,
    ) -> Result<Unprotected, WireError> {
        let zero_rtt = self.side() == Side::Server;
        let pto = self.recovery.pto_period();
        unprotect(&mut self.hs, pto, now, ptype, zero_rtt, pkt, pn_offset, largest)
    }

    /// RFC 9368 §2.3: a client whose first flight offered a compatible version switches to
    /// it on the server's first Initial in that version: Initial keys of that version (RFC
    /// 9369 §3.3.1: another salt), from the same connection ID. Returns what to restore if
    /// the packet turns out not to be genuine.
    fn try_compatible_switch(&mut self, h: &Hdr) -> Option<Version> {
        // With QUIC v1 alone (no `v2`) there is no compatible version to switch to.
        if !cfg!(feature = "v2") {
            return None;
        }
        let offered = self.hs.compatible == Some(h.version);
        if self.side() != Side::Client
            || !h.long
            || h.ptype != PacketType::Initial
            || h.version == self.hs.version
            || !offered
            || self.any_packet
        {
            return None;
        }
        // The keys are derived into their slot (no copy of the old ones kept: undoing
        // derives them again, from the same connection ID).
        if self.set_initial_keys(h.version).is_err() {
            self.undo_switch(Some(self.hs.version));
            return None;
        }
        Some(core::mem::replace(&mut self.hs.version, h.version))
    }

    fn undo_switch(&mut self, switched_from: Option<Version>) {
        if let Some(v) = switched_from {
            self.hs.version = v;
            // These keys were derived before, from the same input: this cannot fail but
            // for a provider fault, which leaves no Initial keys (packets are dropped).
            let _ = self.set_initial_keys(v);
        }
    }

    /// RFC 9001 §5.2: this side's Initial keys of `version`, from the Destination Connection
    /// ID of the client's Initials, derived into their slot.
    fn set_initial_keys(&mut self, version: Version) -> Result<(), mote_crypto::Error> {
        let dcid = *self.hs.cids.initial_dcid();
        self.hs.keys.install_initial(&self.hs.provider, version, &dcid, self.side())
    }

    /// RFC 9000 §8.1.3, §19.7: a client keeps the server's latest NEW_TOKEN token for its
    /// next connection.
    #[inline(never)]
    fn on_new_token(&mut self, token: &[u8]) {
        // The Initial token, if any, is no longer needed once 1-RTT packets arrive.
        let Some(dst) = self.token.get_mut(..token.len()) else { return };
        dst.copy_from_slice(token);
        self.token_len = token.len() as u8;
        self.token_state = TokenState::Received;
        self.events.push(Event::NewToken);
    }

    /// RFC 9000 §17.2.5.2, RFC 9001 §5.8: a client acts on the first valid Retry packet
    /// before any other packet from the server: it addresses the server with the Retry's
    /// Source Connection ID, derives new Initial keys from it, carries its token in every
    /// later Initial and sends again what its Initial (and 0-RTT) packets carried, without
    /// resetting packet numbers (RFC 9000 §17.2.5.3).
    #[inline(never)]
    fn on_retry(
        &mut self,
        now: Instant,
        version: Version,
        dcid: &[u8],
        scid: &[u8],
        token: &[u8],
        packet: &[u8],
    ) {
        let c = &self.hs.cids;
        // RFC 9000 §17.2.5.2: at most one Retry, and none after a server packet; the Retry
        // must be addressed to us, in our version, with a non-empty token; §17.2.5.1: its
        // SCID must differ from the DCID we sent.
        let acceptable = self.side() == Side::Client
            && !self.retried
            && !self.any_packet
            && version == self.hs.version
            && dcid == &c.local[..]
            && !token.is_empty()
            && token.len() <= TOKEN_MAX
            && scid != &c.original_dcid[..];
        let Some(new_dcid) = ConnectionId::new(scid).filter(|_| acceptable) else {
            self.dropped();
            return;
        };
        if !retry_verified(&self.hs.provider, version, &c.original_dcid, packet) {
            self.dropped();
            return;
        }
        let old_retry_scid = self.hs.cids.retry_scid.replace(new_dcid);
        if self.set_initial_keys(version).is_err() {
            self.hs.cids.retry_scid = old_retry_scid;
            let _ = self.set_initial_keys(version);
            self.dropped();
            return;
        }
        self.retried = true;
        self.hs.cids.remote = new_dcid;
        if let Some(dst) = self.token.get_mut(..token.len()) {
            dst.copy_from_slice(token);
            self.token_len = token.len() as u8;
            self.token_state = TokenState::Initial;
        }
        // RFC 9002 §6.3: a Retry resets loss recovery; what the Initial and 0-RTT packets
        // carried is sent again in new packets (packet numbers go on).
        self.recovery.discard_space(PnSpace::Initial, now);
        self.hs.crypto_send[0].requeue_unacked();
        if self.hs.keys.zero_rtt().is_some() {
            self.requeue_zero_rtt(now);
        }
    }

    /// RFC 9000 §6.2: a client abandons the attempt on a valid Version Negotiation packet —
    /// one that answers our first Initial and does not list the version we used (§6.2:
    /// such a packet is ignored) — and reports the first version of ours the server listed
    /// ([`Connection::version_negotiation_choice`]): a new connection in that version is
    /// the application's (RFC 9368 §2.2 incompatible negotiation; it needs a new TLS
    /// session). Without one, the attempt fails.
    #[inline(never)]
    fn on_version_negotiation(&mut self, vn: &VersionNegotiation<'_>) {
        let c = &self.hs.cids;
        // RFC 9000 §17.2.1: a client that processed any other packet, a Retry included,
        // discards Version Negotiation.
        if self.side() != Side::Client
            || self.any_packet
            || self.retried
            || !vn.is_valid_for_client(self.hs.original_version, &c.original_dcid, &c.local)
        {
            self.dropped();
            return;
        }
        self.vn_choice = vn.choose(Version::SUPPORTED);
        self.close_reason = Some(CloseReason::VersionNegotiation);
        self.events.push(Event::Closed);
        self.set_drained();
    }

    fn dropped(&mut self) {
        bump(&mut self.stats.packets_dropped, 1);
    }

    /// The received packets of `space`, capacity erased: one code path for all spaces.
    pub(super) fn rx(&self, space: PnSpace) -> &ReceivedSpace {
        match space {
            PnSpace::Initial => &self.rx_initial,
            PnSpace::Handshake => &self.rx_handshake,
            PnSpace::ApplicationData => &self.rx_data,
        }
    }

    pub(super) fn rx_mut(&mut self, space: PnSpace) -> &mut ReceivedSpace {
        match space {
            PnSpace::Initial => &mut self.rx_initial,
            PnSpace::Handshake => &mut self.rx_handshake,
            PnSpace::ApplicationData => &mut self.rx_data,
        }
    }

    fn rx_largest(&self, space: PnSpace) -> Option<u64> {
        self.rx(space).largest_received()
    }

    fn rx_is_duplicate(&self, space: PnSpace, pn: u64) -> bool {
        self.rx(space).is_duplicate(pn)
    }

    fn rx_record(
        &mut self,
        space: PnSpace,
        pn: u64,
        now: Instant,
        ack_eliciting: bool,
        ecn: crate::recovery::Ecn,
    ) {
        let _ = self.rx_mut(space).on_packet_received(pn, now, ack_eliciting, ecn);
    }

    /// RFC 9000 §12.4: every frame of the packet, each checked against the permission table
    /// for its packet type and acted on as it is read. One decode-and-act loop (issue 8):
    /// the fields go from the reader to their handler, not into a [`Frame`] value matched
    /// again (only the stream and flow-control frames, which [`Streams::on_frame`] takes,
    /// are built as one), and every malformed frame leaves through one exit. The checks
    /// and their order are [`crate::frame::Frames`]': the type (known, minimal, permitted),
    /// then the body, then the action, frame by frame.
    fn process_frames(
        &mut self,
        now: Instant,
        space: PnSpace,
        ptype: PacketType,
        dcid: &ConnectionId,
        info: &RecvInfo,
        payload: &[u8],
    ) -> Res<FramesOutcome> {
        let _ = info;
        let mut out = FramesOutcome { ackable: true, ..FramesOutcome::default() };
        let mut r = Reader::new(payload);
        // A parse error of any frame ends the packet here, as one CONNECTION_CLOSE (one
        // exit, not one per frame type: issue 8).
        let malformed: WireError = 'parse: {
            // Unwraps a parse result, or leaves the loop with its error.
            macro_rules! parsed {
                ($e:expr) => {
                    match $e {
                        Ok(v) => v,
                        Err(e) => break 'parse WireError::from(e),
                    }
                };
            }
            // RFC 9000 §12.4: a packet containing no frames is a PROTOCOL_VIOLATION.
            if r.is_empty() {
                break 'parse WireError::EmptyPacket;
            }
            while !r.is_empty() {
                let ty = parsed!(frame::read_permitted_type(&mut r, ptype));
                if frame::is_ack_eliciting(ty) {
                    out.ack_eliciting = true;
                }
                if !frame::is_probing(ty) {
                    out.non_probing = true;
                }
                match ty {
                    types::PADDING => {
                        frame::skip_padding(&mut r);
                    }
                    types::PING => {}
                    types::ACK | types::ACK_ECN => {
                        let ack = parsed!(Ack::parse_body(ty, &mut r));
                        self.on_ack(now, space, &ack)?;
                    }
                    types::CRYPTO => {
                        let (offset, data) = parsed!(frame::read_crypto(&mut r));
                        let offset = offset.into_inner();
                        if self.on_crypto(now, space, offset, data)? == Insert::Dropped {
                            out.ackable = false;
                        }
                    }
                    // RFC 9000 §19.7: a server receiving NEW_TOKEN closes with
                    // PROTOCOL_VIOLATION. A client keeps the latest token for its next
                    // connection (RFC 9000 §8.1.3); one longer than we keep is ignored.
                    types::NEW_TOKEN => {
                        let token = parsed!(frame::read_new_token(&mut r));
                        if self.side() == Side::Server {
                            return Err(violation(ty));
                        }
                        self.on_new_token(token);
                    }
                    // RFC 9000 §19.15: the peer issues a connection ID (bounded table,
                    // §5.1.1).
                    types::NEW_CONNECTION_ID => {
                        let (seq, rpt, cid, token) = parsed!(frame::read_new_connection_id(&mut r));
                        let (seq, rpt) = (seq.into_inner(), rpt.into_inner());
                        self.on_new_connection_id(seq, rpt, cid, token)?;
                    }
                    // RFC 9000 §19.16: the peer retires one of ours.
                    types::RETIRE_CONNECTION_ID => {
                        let seq = parsed!(r.varint()).into_inner();
                        self.on_retire_connection_id(seq, dcid)?;
                    }
                    // RFC 9000 §8.2.2: answer PATH_CHALLENGE with PATH_RESPONSE on the path
                    // it arrived on. Without `migration` only the newest is kept.
                    types::PATH_CHALLENGE => {
                        let data: [u8; 8] = parsed!(r.array());
                        #[cfg(feature = "migration")]
                        self.migration.on_challenge(info.remote, info.local, data);
                        #[cfg(not(feature = "migration"))]
                        {
                            self.path_response = Some(data);
                            bump(&mut self.stats.path_challenges_received, 1);
                        }
                    }
                    // RFC 9000 §8.2.3: a response to our challenge validates the path; an
                    // unsolicited one is ignored (PROTOCOL_VIOLATION is allowed, not
                    // required).
                    types::PATH_RESPONSE => {
                        let data: [u8; 8] = parsed!(r.array());
                        #[cfg(feature = "migration")]
                        self.on_path_response(now, data);
                        #[cfg(not(feature = "migration"))]
                        let _ = data;
                    }
                    // RFC 9000 §10.2.2: the peer closed; enter the draining state. One path
                    // for both close types (the application's has no frame type).
                    types::CONNECTION_CLOSE | types::CONNECTION_CLOSE_APP => {
                        let (code, frame_type, reason) = parsed!(frame::read_close(ty, &mut r));
                        let frame_type = frame_type.map(VarInt::into_inner);
                        let application = frame_type.is_none();
                        let code = code.into_inner();
                        let c = ConnectionClose::new(code, frame_type, application, reason);
                        self.enter_draining(now, c);
                        out.closed = true;
                        return Ok(out);
                    }
                    types::HANDSHAKE_DONE => self.on_handshake_done(now, ty)?,
                    // RFC 9221 §3, §4: checked against what we offered, then queued.
                    // DATAGRAM Frame { Type (i) = 0x30..0x31, [Length (i)], Datagram Data (..) }
                    #[cfg(feature = "datagram")]
                    types::DATAGRAM | types::DATAGRAM_LEN => {
                        let has_length = ty == types::DATAGRAM_LEN;
                        let data = if has_length { parsed!(r.varint_prefixed()) } else { r.rest() };
                        let len = Frame::Datagram { data, has_length }.encoded_len();
                        self.on_datagram_frame(data, ty, len)?;
                    }
                    // The stream and flow-control frames (every other permitted type).
                    _ => {
                        let frame = parsed!(Frame::parse_stream_body(ty, &mut r));
                        if !self.on_stream_frame(&frame)? {
                            out.ackable = false;
                        }
                    }
                }
            }
            return Ok(out);
        };
        Err(wire(malformed))
    }

    /// RFC 9000 §19.20, RFC 9001 §4.1.2: HANDSHAKE_DONE confirms the handshake on the
    /// client.
    #[inline(never)]
    fn on_handshake_done(&mut self, now: Instant, ty: u64) -> Res {
        // RFC 9000 §19.20: "A server MUST treat receipt of a HANDSHAKE_DONE frame as a
        // connection error of type PROTOCOL_VIOLATION."
        if self.side() == Side::Server {
            return Err(violation(ty));
        }
        // A HANDSHAKE_DONE before the TLS handshake completed cannot be genuine: close with
        // PROTOCOL_VIOLATION rather than confirm a handshake that is not done (quic-go
        // crashed here, CVE-2025-59530).
        if !self.handshake_complete || !self.tls.is_handshake_complete() {
            return Err(violation(ty));
        }
        if !self.handshake_confirmed {
            self.confirm(now);
        }
        Ok(())
    }

    /// The handshake is confirmed (RFC 9001 §4.1.2): discard the Handshake keys (§4.9.2),
    /// arm Application Data PTOs.
    pub(super) fn confirm(&mut self, now: Instant) {
        self.handshake_confirmed = true;
        // A server keeps 0-RTT keys until the handshake is confirmed (RFC 9001 §4.9.3
        // allows a while longer; reordered 0-RTT packets after that are retransmitted).
        self.hs.keys.discard_zero_rtt();
        self.recovery.on_handshake_confirmed(now);
        self.discard_space(PnSpace::Handshake, now);
        self.events.push(Event::HandshakeConfirmed);
        // RFC 9000 §14.3: DPLPMTUD starts once the handshake is confirmed, up to our
        // configured maximum and the peer's max_udp_payload_size.
        #[cfg(feature = "pmtud")]
        {
            let peer = self.peer.map_or(u64::from(u16::MAX), |p| p.max_udp_payload_size);
            let limit = u64::from(self.config.max_pmtu).min(peer);
            self.pmtud.start(now, u16::try_from(limit).unwrap_or(u16::MAX));
        }
        #[cfg(feature = "migration")]
        self.try_preferred_address(now);
    }

    /// Discards the keys and state of `space` (RFC 9001 §4.9, RFC 9002 §6.4).
    pub(super) fn discard_space(&mut self, space: PnSpace, now: Instant) {
        let had = match space {
            PnSpace::Initial => self.hs.keys.initial.clear(),
            PnSpace::Handshake => self.hs.keys.handshake.clear(),
            PnSpace::ApplicationData => false,
        };
        if !had {
            return;
        }
        self.recovery.discard_space(space, now);
        let i = si(space);
        if let Some(c) = self.hs.crypto_send.get_mut(i) {
            c.reset();
        }
        if let Some(c) = self.crypto_recv.get_mut(i) {
            c.reset();
        }
        if let Some(p) = self.probes.get_mut(i) {
            *p = 0;
        }
    }

    #[inline(never)]
    fn on_ack(&mut self, now: Instant, space: PnSpace, ack: &Ack<'_>) -> Res {
        // The peer's ack_delay_exponent; 3 (the default) until its parameters arrive.
        let exp = self
            .peer
            .map_or(TransportParameters::DEFAULT_ACK_DELAY_EXPONENT, |p| p.ack_delay_exponent);
        let ty = ack.frame_type();
        // RFC 9000 §13.1, §21.4: an ACK of a packet never sent (or deliberately skipped) is a
        // PROTOCOL_VIOLATION (checked by recovery before anything changes).
        let largest_before = self.recovery.largest_acked(space);
        let (recovery, mut sink) = self.recovery_and_sink(now);
        let outcome = recovery
            .on_ack_frame(space, ack, exp, now, sink.events())
            .map_err(|e| ConnectionClose::transport(e.code(), Some(ty)))?;
        #[cfg(feature = "pmtud")]
        let change = sink.mtu_change;
        // RFC 9002 §7.1: an increased ECN-CE count was a congestion event (recovery reacted).
        if outcome.ecn_ce_increased {
            bump(&mut self.stats.ecn_ce_events, 1);
        }
        if space == PnSpace::ApplicationData {
            // RFC 9000 §13.4.2.1: check the peer's ECN counts against our marks, only for
            // ACK frames that raise the largest acknowledged ("Processing ECN counts out of
            // order can result in validation failure").
            let next = self.recovery.next_pn(space);
            let raised = self.recovery.largest_acked(space) > largest_before;
            self.ecn.on_ack(ack.ecn(), next, raised);
            // RFC 9001 §6.1, §6.5: when the next key update may start.
            self.hs.keys.one_rtt.on_ack(&self.recovery, now);
            #[cfg(feature = "pmtud")]
            self.on_ack_for_probe(now, ack);
        }
        #[cfg(feature = "pmtud")]
        if let Some(mtu) = change {
            self.recovery.set_max_datagram_size(mtu);
        }
        Ok(())
    }

    /// DPLPMTUD probes are not recorded with loss recovery: an ACK covering the probe's
    /// packet number confirms the size; one acknowledging three later packets without it
    /// declares it lost (RFC 9002 §6.1.1's packet threshold).
    #[cfg(feature = "pmtud")]
    fn on_ack_for_probe(&mut self, now: Instant, ack: &Ack<'_>) {
        let Some((pn, size, _)) = self.pmtud.probe_in_flight() else { return };
        let mut largest = 0;
        let mut covered = false;
        for (lo, hi) in ack.ranges() {
            largest = largest.max(hi);
            covered |= lo <= pn && pn <= hi;
        }
        if covered {
            if let Some(mtu) = self.pmtud.on_acked(now, pn, size) {
                self.recovery.set_max_datagram_size(mtu);
            }
        } else if largest >= pn.sat_add(crate::recovery::PACKET_THRESHOLD) {
            self.pmtud.on_lost(now, pn, size);
        }
    }

    /// A CRYPTO frame (RFC 9000 §19.6): buffer it, then hand in-order bytes to TLS.
    fn on_crypto(&mut self, now: Instant, space: PnSpace, offset: u64, data: &[u8]) -> Res<Insert> {
        let i = si(space);
        let level = level_of(space);
        let ty = frame::types::CRYPTO;
        let Some(recv) = self.crypto_recv.get_mut(i) else { return Ok(Insert::Dropped) };
        // RFC 9000 §7.5: CRYPTO data beyond what we buffer is CRYPTO_BUFFER_EXCEEDED. This
        // bound holds after the handshake too (1-RTT CRYPTO carries session tickets), so a
        // peer cannot make us buffer an endless CRYPTO stream (CVE-2024-1765).
        let insert = recv
            .on_crypto(offset, data)
            .map_err(|e| ConnectionClose::transport(e.code(), Some(ty)))?;
        if insert == Insert::Duplicate {
            self.resend_crypto_early(i);
        }
        self.tls.set_time(now);
        while let Some(recv) = self.crypto_recv.get_mut(i) {
            let chunk = recv.peek();
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            let r = self.tls.read_handshake(level, chunk, &mut self.hs);
            recv.consume(n);
            r.map_err(tls_close)?;
        }
        self.on_handshake_progress(now)?;
        Ok(insert)
    }

    /// Acts on what the TLS session reported during `start` / `read_handshake`.
    #[inline(never)]
    pub(super) fn on_handshake_progress(&mut self, now: Instant) -> Res {
        let sig = core::mem::take(&mut self.hs.signals);
        // RFC 9368 §2.3: the server switched to the compatible version: its Initial packets
        // from the ServerHello on are in it, with that version's Initial keys.
        if sig.version_switched && self.side() == Side::Server {
            self.set_initial_keys(self.hs.version).map_err(|_| {
                ConnectionClose::transport(TransportErrorCode::INTERNAL_ERROR, None)
            })?;
        }
        if sig.handshake_keys {
            self.recovery.on_handshake_keys_available(now);
        }
        if let Some(tp) = self.hs.peer_tp.take() {
            // RFC 9000 §7.4.1: "a server that accepts 0-RTT data MUST NOT set values for
            // the following parameters ... that are smaller than the remembered values";
            // our 0-RTT data may already exceed the smaller ones (quinn closes the same way).
            #[cfg(feature = "resumption")]
            if let Some(old) = self.remembered_limits {
                let accepted =
                    sig.early_data == Some(true) || self.tls.early_data_accepted() == Some(true);
                if accepted && !old.kept_by(&super::ZeroRttLimits::of(&tp)) {
                    return Err(ConnectionClose::transport(
                        TransportErrorCode::PROTOCOL_VIOLATION,
                        None,
                    ));
                }
                // RFC 9001 §4.6.2: rejected, the remembered limits no longer hold; the
                // server's new ones replace them, even lower ones. 0-RTT data they cannot
                // carry again ends the connection here rather than break them.
                if !accepted && !self.streams.replace_peer_params(&tp) {
                    return Err(ConnectionClose::transport(
                        TransportErrorCode::INTERNAL_ERROR,
                        None,
                    ));
                }
            }
            self.apply_peer_params(&tp);
        }
        if sig.tickets > 0 {
            self.events.push(Event::NewTicket);
        }
        // RFC 9001 §4.9.3: a client discards its 0-RTT keys once it has 1-RTT keys.
        if sig.one_rtt_keys && self.side() == Side::Client {
            self.hs.keys.discard_zero_rtt();
        }
        if sig.early_data == Some(false) && self.side() == Side::Client {
            self.on_early_data_rejected(now);
        }
        if sig.complete && !self.handshake_complete {
            self.handshake_complete = true;
            if self.state == State::Handshake {
                self.state = State::Established;
            }
            self.events.push(Event::HandshakeComplete);
            if self.side() == Side::Server {
                // RFC 9001 §4.1.2: the server's handshake is confirmed when it completes;
                // it sends HANDSHAKE_DONE (RFC 9000 §19.20). Completion needs the client's
                // Finished, carried in a Handshake packet, so the address is validated.
                self.address_validated = true;
                self.recovery.set_amplification_limited(false, now);
                self.handshake_done_pending = true;
                self.confirm(now);
            }
        }
        Ok(())
    }

    /// RFC 9001 §4.6.2: the server rejected 0-RTT, so nothing sent in 0-RTT packets was
    /// processed: every such packet is forgotten without a congestion reaction (they share
    /// the Application Data space with the 1-RTT packets to come) and its stream data and
    /// control frames are queued again for 1-RTT.
    #[inline(never)]
    fn on_early_data_rejected(&mut self, now: Instant) {
        self.requeue_zero_rtt(now);
        self.hs.keys.discard_zero_rtt();
        self.early_rejected = true;
        self.events.push(Event::EarlyDataRejected);
    }

    /// The 0-RTT packets were not processed (a Retry, RFC 9000 §17.2.5.3, or rejected early
    /// data, RFC 9001 §4.6.2): their records are forgotten without a congestion reaction and
    /// their stream data and control frames queued again. Shared by both (issue 8).
    #[inline(never)]
    fn requeue_zero_rtt(&mut self, now: Instant) {
        for p in self.recovery.application_packets().iter() {
            for slot in p.payload.control_slots() {
                if let Some(c) = self.controls.take(slot) {
                    self.streams.on_control_lost(c);
                }
            }
        }
        self.streams.requeue_all();
        self.recovery.discard_space(PnSpace::ApplicationData, now);
    }

    /// RFC 9000 §7.4, §18.2: applies the peer's transport parameters (already validated by
    /// the TLS hook): flow-control limits and stream counts, max_ack_delay, idle timeout.
    #[inline(never)]
    fn apply_peer_params(&mut self, tp: &TransportParameters) {
        self.streams.on_peer_params(tp);
        self.recovery.set_peer_max_ack_delay(Duration::from_millis(u64::from(tp.max_ack_delay)));
        self.peer = Some(PeerParams {
            idle_timeout_ms: tp.max_idle_timeout.into_inner(),
            max_udp_payload_size: tp.max_udp_payload_size.into_inner(),
            ack_delay_exponent: tp.ack_delay_exponent,
            disable_active_migration: tp.disable_active_migration,
            #[cfg(feature = "datagram")]
            max_datagram_frame_size: tp.max_datagram_frame_size.into_inner(),
            #[cfg(not(feature = "datagram"))]
            max_datagram_frame_size: 0,
        });
        // RFC 9000 §5.1.1: issue up to the peer's active_connection_id_limit.
        self.local_cids.set_target(tp.active_connection_id_limit.into_inner());
        // RFC 9000 §10.3: the server's token for its handshake connection ID.
        if let Some(token) = tp.stateless_reset_token {
            self.remote_cids.set_token(0, token);
        }
        #[cfg(feature = "migration")]
        self.remember_preferred(tp.preferred_address);
    }

    /// A stream or flow-control frame. Returns false when its data was dropped (do not
    /// acknowledge the packet).
    #[inline(never)]
    fn on_stream_frame(&mut self, frame: &Frame<'_>) -> Res<bool> {
        let limits = self.streams.limits();
        let before = [limits.remote_opened(StreamDir::Bidi), limits.remote_opened(StreamDir::Uni)];
        let max_before = [limits.local_max(StreamDir::Bidi), limits.local_max(StreamDir::Uni)];
        let handled = self
            .streams
            .on_frame(frame)
            .map_err(|e| ConnectionClose::transport(e.code(), Some(frame.frame_type())))?;
        let peer = match self.side() {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        };
        // Streams the frame opened (RFC 9000 §3.2: every lower-numbered one too), bounded by
        // our MAX_STREAMS and so by the slots.
        for (dir, was) in [(StreamDir::Bidi, before[0]), (StreamDir::Uni, before[1])] {
            let now_opened = self.streams.limits().remote_opened(dir);
            for index in was..now_opened {
                if let Some(id) = StreamId::from_parts(peer, dir, index) {
                    self.events.push(Event::StreamOpened(id));
                }
            }
        }
        match *frame {
            Frame::Stream { stream_id, .. } | Frame::ResetStream { stream_id, .. } => {
                let id = StreamId::from(stream_id);
                if self.streams.slot(id).is_some() {
                    self.events.push(Event::StreamReadable(id));
                }
            }
            Frame::StopSending { stream_id, error_code } => {
                let id = StreamId::from(stream_id);
                self.events.push(Event::StreamStopped { id, code: error_code.into_inner() });
            }
            Frame::MaxStreamData { stream_id, .. } => {
                self.events.push(Event::StreamWritable(StreamId::from(stream_id)));
            }
            Frame::MaxStreams { dir, .. } => {
                let i = if dir == StreamDir::Bidi { 0 } else { 1 };
                let was = max_before.get(i).copied().unwrap_or(0);
                if self.streams.limits().local_max(dir) > was {
                    self.events.push(Event::StreamsAvailable(dir));
                }
            }
            _ => {}
        }
        Ok(handled != Handled::Dropped)
    }

    /// Loss recovery and the parts of the connection its ACK and loss events update,
    /// borrowed together. Out of line: ACKs and the loss timer share one copy of the
    /// sink's construction (issue 8).
    #[allow(clippy::type_complexity)]
    #[inline(never)]
    fn recovery_and_sink(
        &mut self,
        #[cfg_attr(not(feature = "pmtud"), allow(unused_variables))] now: Instant,
    ) -> (
        &mut Recovery<SentFrames, NewReno, HANDSHAKE_SENT, HANDSHAKE_SENT, SENT>,
        Sink<'_, C, S, N, RANGES>,
    ) {
        let sink = Sink {
            streams: &mut self.streams,
            crypto: &mut self.hs.crypto_send,
            controls: &mut self.controls,
            rx_initial: &mut self.rx_initial,
            rx_handshake: &mut self.rx_handshake,
            rx_data: &mut self.rx_data,
            handshake_done_pending: &mut self.handshake_done_pending,
            stats: &mut self.stats,
            events: &mut self.events,
            local_cids: &mut self.local_cids,
            remote_cids: &mut self.remote_cids,
            ecn: &mut self.ecn,
            #[cfg(feature = "pmtud")]
            pmtud: &mut self.pmtud,
            #[cfg(feature = "pmtud")]
            mtu_change: None,
            #[cfg(feature = "pmtud")]
            now,
            token_state: &mut self.token_state,
        };
        (&mut self.recovery, sink)
    }

    /// The loss detection timer fired (RFC 9002 §6.1.2, §6.2).
    pub(super) fn on_loss_timeout(&mut self, now: Instant) {
        let (recovery, mut sink) = self.recovery_and_sink(now);
        let action = recovery.on_timeout(now, sink.events());
        #[cfg(feature = "pmtud")]
        if let Some(mtu) = sink.mtu_change {
            self.recovery.set_max_datagram_size(mtu);
        }
        let next = self.recovery.next_pn(PnSpace::ApplicationData);
        self.ecn.check_blackhole(next);
        if let TimeoutAction::SendProbes { space, count, .. } = action {
            bump(&mut self.stats.ptos, 1);
            #[cfg(feature = "pmtud")]
            if space == PnSpace::ApplicationData && self.handshake_confirmed {
                if let Some(mtu) = self.pmtud.on_pto(now) {
                    self.recovery.set_max_datagram_size(mtu);
                }
            }
            let i = si(space);
            if let Some(p) = self.probes.get_mut(i) {
                *p = (*p).max(count);
            }
            // RFC 9002 §6.2.4: a probe carries in-flight data when there is no new data; for
            // the handshake spaces that is every unacknowledged CRYPTO byte (a PING alone
            // would not let the peer progress).
            if let Some(c) = self.hs.crypto_send.get_mut(i) {
                c.requeue_unacked();
            }
            // RFC 9002 §6.2.4: "a server can coalesce an Initial packet containing a PING
            // frame with one or more packets in its first flight". The PTO of the earlier
            // space (Initial) also covers Handshake data sent with it (§6.2.1), so while
            // both are unacknowledged the probes repeat both: spending the 3× budget on
            // Initial repeats alone leaves a lost Handshake flight unrepaired until the
            // client's next datagram (interop: ngtcp2 → mote, handshakeloss).
            if space == PnSpace::Initial {
                self.probe_handshake_too();
            }
            // Stream data: a receiver without out-of-order reassembly (or with its ranges
            // full) drops, and does not acknowledge, packets past a gap, so probes carrying
            // only new data would never be acknowledged and the transfer would stall. The
            // probes repeat the stream data and control frames of the oldest unacknowledged
            // packets, one packet's worth per probe, so they fill the oldest gap first
            // (retransmissions go before new data); once they are acknowledged, the packets
            // still outstanding behind them are declared lost and resent in turn.
            if space == PnSpace::ApplicationData {
                self.requeue_oldest(usize::from(count.max(1)));
            }
        }
    }

    /// RFC 9002 §6.2.3 (`Handshake::resend_crypto_early`) for a client; a server keeps
    /// waiting for its PTO (its sending is bounded by anti-amplification).
    #[inline(never)]
    fn resend_crypto_early(&mut self, i: usize) {
        if self.side() == Side::Client {
            self.hs.resend_crypto_early(i, &mut self.fast_resends);
        }
    }

    /// An Initial PTO also probes the Handshake space when it has unacknowledged CRYPTO
    /// data (a server's first flight); kept out of line, the device never needs it twice.
    #[inline(never)]
    fn probe_handshake_too(&mut self) {
        let h = si(PnSpace::Handshake);
        let Some(c) = self.hs.crypto_send.get_mut(h) else { return };
        if !c.has_unacked() {
            return;
        }
        c.requeue_unacked();
        if let Some(p) = self.probes.get_mut(h) {
            *p = (*p).max(1);
        }
    }

    /// Queues again the stream data and control frames of the `n` oldest unacknowledged
    /// packets that still carry something unacknowledged (the records stay in place, so an
    /// acknowledgement or loss of the original is handled as usual).
    fn requeue_oldest(&mut self, n: usize) {
        let mut left = n;
        for f in self.recovery.application_packets().ack_eliciting_payloads() {
            if left == 0 {
                break;
            }
            let mut queued = false;
            for c in f.stream_chunks() {
                if let Some(id) = StreamId::new(c.id) {
                    queued |= self.streams.requeue_stream(id, c.offset, c.len, c.fin);
                }
            }
            for slot in f.control_slots() {
                if let Some(c) = self.controls.get(slot) {
                    self.streams.on_control_lost(c);
                    queued = true;
                }
            }
            // RFC 9000 §13.3: HANDSHAKE_DONE is repeated until acknowledged. A server's
            // probes carry it again: if it was lost, PINGs alone leave the client
            // unconfirmed, still probing its Finished in Handshake packets the server can
            // no longer read, with its own 1-RTT data held back (RFC 9002 §6.2.1).
            if f.has(flag::HANDSHAKE_DONE) {
                self.handshake_done_pending = true;
                queued = true;
            }
            if queued {
                left -= 1;
            }
        }
    }
}
