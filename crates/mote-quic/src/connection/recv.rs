//! The receive path: datagrams → packets → frames (RFC 9000 §12, §13, §17; RFC 9001 §5).

use core::net::SocketAddr;

use mote_crypto::CryptoProvider;

use super::sent::{flag, ControlTable, SentFrames};
use super::tls::{TlsSession, CRYPTO_RANGES};
use super::{
    si, CloseReason, Connection, ConnectionClose, ConnectionStats, Event, Events, PeerParams,
    RecvInfo, Res, State, HANDSHAKE_RANGES, MIN_INITIAL_SIZE,
};
use crate::cid::ConnectionId;
use crate::error::{TransportErrorCode, WireError};
use crate::frame::{self, Ack, Frame, Frames, StreamDir};
use crate::packet::{
    self, check_reserved_bits, number, remove_header_protection, Header, PacketType, Unprotected,
    VersionNegotiation, KEY_PHASE_BIT,
};
use crate::recovery::{PacketEvent, PnSpace, ReceivedPackets, TimeoutAction};
use crate::stream::{CryptoSend, Handled, Insert, StreamId, Streams};
use crate::time::{Duration, Instant};
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
    /// False when a STREAM or CRYPTO frame could not be stored: the packet must not be
    /// acknowledged (RFC 9000 §13.1), so the peer retransmits it.
    ackable: bool,
    /// A CONNECTION_CLOSE ended processing.
    closed: bool,
}

const fn level_of(space: PnSpace) -> Level {
    match space {
        PnSpace::Initial => Level::Initial,
        PnSpace::Handshake => Level::Handshake,
        PnSpace::ApplicationData => Level::OneRtt,
    }
}

fn wire(e: WireError) -> ConnectionClose {
    ConnectionClose::transport(e.code(), e.frame_type())
}

fn violation(frame_type: u64) -> ConnectionClose {
    ConnectionClose::transport(TransportErrorCode::PROTOCOL_VIOLATION, Some(frame_type))
}

/// RFC 9001 §4.8: a TLS error closes the connection with CRYPTO_ERROR (0x100 + alert) or
/// the transport code the TLS layer chose.
fn tls_close(e: mote_tls::Error) -> ConnectionClose {
    ConnectionClose::transport(TransportErrorCode(e.quic_error_code()), Some(frame::types::CRYPTO))
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
    pub(super) stats: &'a mut ConnectionStats,
    pub(super) events: &'a mut Events,
}

impl<C, S, const N: usize, const R: usize> Sink<'_, C, S, N, R>
where
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    fn crypto(&mut self, space: PnSpace) -> &mut CryptoSend<C, CRYPTO_RANGES> {
        match space {
            PnSpace::Initial => &mut self.crypto[0],
            PnSpace::Handshake => &mut self.crypto[1],
            PnSpace::ApplicationData => &mut self.crypto[2],
        }
    }

    /// RFC 9000 §13.3: what an acknowledged or lost packet means for the frames it carried.
    pub(super) fn on_event(&mut self, ev: PacketEvent<SentFrames>) {
        let (space, packet, acked) = match ev {
            PacketEvent::Acked { space, packet } => (space, packet, true),
            PacketEvent::Lost { space, packet } => {
                if packet.ack_eliciting {
                    self.stats.packets_lost = self.stats.packets_lost.saturating_add(1);
                }
                (space, packet, false)
            }
            PacketEvent::Evicted { space, packet } => (space, packet, false),
        };
        let f = packet.payload;
        if f.has(flag::ACK) && acked {
            // RFC 9000 §13.2.4: the peer has our ACK; stop acknowledging up to its largest.
            match space {
                PnSpace::Initial => self.rx_initial.on_ack_acked(f.ack_largest),
                PnSpace::Handshake => self.rx_handshake.on_ack_acked(f.ack_largest),
                PnSpace::ApplicationData => self.rx_data.on_ack_acked(f.ack_largest),
            }
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
        if f.has(flag::STREAM) {
            if let Some(id) = StreamId::new(f.stream_id) {
                let (off, len, fin) =
                    (f.stream_offset, usize::from(f.stream_len), f.has(flag::STREAM_FIN));
                if acked {
                    self.streams.on_stream_acked(id, off, len, fin);
                    self.events.push(Event::StreamWritable(id));
                } else {
                    self.streams.on_stream_lost(id, off, len, fin);
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
        self.last_now = now;
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
        self.stats.datagrams_received = self.stats.datagrams_received.saturating_add(1);
        self.stats.bytes_received = self.stats.bytes_received.saturating_add(len as u64);
        // RFC 9000 §8.1: every byte of a datagram attributed to the connection counts
        // towards the anti-amplification allowance.
        self.amp_received = self.amp_received.saturating_add(len as u64);
        match self.state {
            State::Draining { .. } => return,
            State::Closing { .. } => {
                // RFC 9000 §10.2.1: answer any incoming packet with CONNECTION_CLOSE (one per
                // datagram, which bounds the rate by the peer's).
                self.close_pending = true;
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
                // Retry is handled with address validation (a later issue); packets of
                // other versions are not ours.
                Header::Retry(_) | Header::UnsupportedVersion(_) => {
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
        if !self.accept_header(&hdr, datagram_len) {
            self.dropped();
            return Some(len);
        }
        let pkt = buf.get_mut(..len)?;
        let space = PnSpace::of(hdr.ptype);
        let largest = self.rx_largest(space);
        let unprotected = match hdr.ptype {
            PacketType::Initial => match &self.hs.keys.initial {
                Some(k) => k.rx.unprotect(pkt, hdr.pn_offset, largest),
                None => Err(WireError::DecryptFailed),
            },
            PacketType::Handshake => match &self.hs.keys.handshake {
                Some(k) => k.rx.unprotect(pkt, hdr.pn_offset, largest),
                None => Err(WireError::DecryptFailed),
            },
            PacketType::ZeroRtt => match self.hs.keys.zero_rtt() {
                Some(k) if self.side == Side::Server => k.unprotect(pkt, hdr.pn_offset, largest),
                _ => Err(WireError::DecryptFailed),
            },
            PacketType::OneRtt => self.unprotect_one_rtt(pkt, hdr.pn_offset, largest),
        };
        let u = match unprotected {
            Ok(u) => u,
            // RFC 9000 §17.2, §17.3.1: reserved bits set in an authenticated packet.
            Err(WireError::ReservedBitsSet) => {
                self.enter_closing(wire(WireError::ReservedBitsSet));
                return None;
            }
            // RFC 9001 §5.5: packets that fail to decrypt are discarded.
            Err(_) => {
                self.dropped();
                return Some(len);
            }
        };
        // RFC 9000 §12.3: a packet number already processed is a duplicate.
        if self.rx_is_duplicate(space, u.pn) {
            self.dropped();
            return Some(len);
        }
        // RFC 9000 §7.2: the client adopts the Source Connection ID of the server's first
        // (authenticated) packet as its Destination Connection ID.
        if self.side == Side::Client && hdr.long && !self.remote_cid_set {
            self.hs.cids.remote = hdr.scid;
            self.remote_cid_set = true;
        }
        self.any_packet = true;
        let payload = pkt.get(u.payload_range())?;
        #[cfg(feature = "qlog")]
        self.packet_log.push(false, hdr.ptype, u.pn, len, payload);
        match self.process_frames(now, space, hdr.ptype, payload) {
            Err(close) => {
                self.enter_closing(close);
                return None;
            }
            Ok(o) => {
                self.stats.packets_received = self.stats.packets_received.saturating_add(1);
                if o.ackable && !o.closed {
                    self.rx_record(space, u.pn, now, o.ack_eliciting, info.ecn);
                }
                // RFC 9000 §10.1: a packet successfully processed restarts the idle timer.
                self.idle_start = now;
                self.ack_eliciting_since_recv = false;
                if hdr.ptype == PacketType::Handshake && self.side == Side::Server {
                    // RFC 9000 §8.1: a Handshake packet from the client validates its
                    // address. RFC 9001 §4.9.1: the server discards Initial keys when it
                    // first successfully processes a Handshake packet.
                    self.address_validated = true;
                    self.recovery.set_amplification_limited(false, now);
                    self.discard_space(PnSpace::Initial, now);
                }
            }
        }
        Some(len)
    }

    /// The checks that need no keys: connection IDs, version, token, datagram size.
    fn accept_header(&self, h: &Hdr, datagram_len: usize) -> bool {
        let c = &self.hs.cids;
        let server = self.side == Side::Server;
        // A server also accepts the client's original DCID on long headers until the client
        // switches to ours (RFC 9000 §7.2).
        if h.dcid != c.local && !(server && h.long && h.dcid == c.original_dcid) {
            return false;
        }
        if h.long && h.version != self.hs.version {
            return false;
        }
        match (self.side, h.ptype) {
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
        if h.long {
            match self.side {
                Side::Client if self.remote_cid_set && h.scid != c.remote => return false,
                Side::Server if h.scid != c.remote => return false,
                _ => {}
            }
        }
        true
    }

    /// RFC 9001 §5.4, §5.3, §6: removes protection from a 1-RTT packet, following a key
    /// update the peer initiated (a Key Phase bit different from ours).
    fn unprotect_one_rtt(
        &mut self,
        pkt: &mut [u8],
        pn_offset: usize,
        largest: Option<u64>,
    ) -> Result<Unprotected, WireError> {
        let version = self.hs.version;
        let provider = &self.hs.provider;
        let Some(k) = self.hs.keys.one_rtt.as_mut() else { return Err(WireError::DecryptFailed) };
        let t = remove_header_protection(&k.keys.rx.header, pkt, pn_offset)?;
        let pn = number::decode(largest, t.value, t.len);
        let header_len = pn_offset + t.len;
        let phase = t.first_byte & KEY_PHASE_BIT != 0;
        let payload_len = if phase == k.rx_phase {
            k.keys.rx.packet.open_in_place(pn, pkt, header_len)?
        } else {
            // RFC 9001 §6.3: a packet with the other Key Phase is tried with the next
            // generation's key; if it opens, the peer updated keys and we follow (§6.2).
            // Packets of the previous phase arriving late are not decryptable any more
            // (the previous key is not kept) and are dropped.
            let (next, secret) =
                k.next_rx(provider, version).map_err(|_| WireError::DecryptFailed)?;
            let n = next.open_in_place(pn, pkt, header_len)?;
            k.on_peer_phase(provider, version, next, secret)
                .map_err(|_| WireError::DecryptFailed)?;
            n
        };
        check_reserved_bits(t.first_byte)?;
        Ok(Unprotected { pn, first_byte: t.first_byte, header_len, payload_len })
    }

    /// RFC 9000 §6.2: a client abandons the attempt on a valid Version Negotiation packet
    /// (this build negotiates no other version with a server that refused ours).
    fn on_version_negotiation(&mut self, vn: &VersionNegotiation<'_>) {
        let c = &self.hs.cids;
        if self.side != Side::Client
            || self.any_packet
            || !vn.is_valid_for_client(self.hs.version, &c.original_dcid, &c.local)
        {
            self.dropped();
            return;
        }
        self.close_reason = Some(CloseReason::VersionNegotiation);
        self.events.push(Event::Closed);
        self.set_drained();
    }

    fn dropped(&mut self) {
        self.stats.packets_dropped = self.stats.packets_dropped.saturating_add(1);
    }

    fn rx_largest(&self, space: PnSpace) -> Option<u64> {
        match space {
            PnSpace::Initial => self.rx_initial.largest_received(),
            PnSpace::Handshake => self.rx_handshake.largest_received(),
            PnSpace::ApplicationData => self.rx_data.largest_received(),
        }
    }

    fn rx_is_duplicate(&self, space: PnSpace, pn: u64) -> bool {
        match space {
            PnSpace::Initial => self.rx_initial.is_duplicate(pn),
            PnSpace::Handshake => self.rx_handshake.is_duplicate(pn),
            PnSpace::ApplicationData => self.rx_data.is_duplicate(pn),
        }
    }

    fn rx_record(
        &mut self,
        space: PnSpace,
        pn: u64,
        now: Instant,
        ack_eliciting: bool,
        ecn: crate::recovery::Ecn,
    ) {
        let _ = match space {
            PnSpace::Initial => self.rx_initial.on_packet_received(pn, now, ack_eliciting, ecn),
            PnSpace::Handshake => self.rx_handshake.on_packet_received(pn, now, ack_eliciting, ecn),
            PnSpace::ApplicationData => {
                self.rx_data.on_packet_received(pn, now, ack_eliciting, ecn)
            }
        };
    }

    /// RFC 9000 §12.4: every frame of the packet, each checked against the permission table
    /// for its packet type (by [`Frames`]) and dispatched.
    fn process_frames(
        &mut self,
        now: Instant,
        space: PnSpace,
        ptype: PacketType,
        payload: &[u8],
    ) -> Res<FramesOutcome> {
        let mut out = FramesOutcome { ackable: true, ..FramesOutcome::default() };
        for item in Frames::new(payload, ptype) {
            let frame = item.map_err(wire)?;
            if frame.is_ack_eliciting() {
                out.ack_eliciting = true;
            }
            let ty = frame.frame_type();
            match frame {
                Frame::Padding { .. } | Frame::Ping => {}
                Frame::Ack(ack) => self.on_ack(now, space, &ack)?,
                Frame::Crypto { offset, data } => {
                    if self.on_crypto(now, space, offset.into_inner(), data)? == Insert::Dropped {
                        out.ackable = false;
                    }
                }
                // RFC 9000 §19.7: a server receiving NEW_TOKEN closes with
                // PROTOCOL_VIOLATION. Clients keep no tokens yet (address validation with
                // Retry and NEW_TOKEN is a later issue).
                Frame::NewToken { .. } => {
                    if self.side == Side::Server {
                        return Err(violation(ty));
                    }
                }
                Frame::Stream { .. }
                | Frame::ResetStream { .. }
                | Frame::StopSending { .. }
                | Frame::MaxData { .. }
                | Frame::MaxStreamData { .. }
                | Frame::MaxStreams { .. }
                | Frame::DataBlocked { .. }
                | Frame::StreamDataBlocked { .. }
                | Frame::StreamsBlocked { .. } => {
                    if !self.on_stream_frame(&frame)? {
                        out.ackable = false;
                    }
                }
                // RFC 9000 §19.15: a peer we address with a zero-length connection ID must
                // not send NEW_CONNECTION_ID. Otherwise the IDs are accepted and not used:
                // we keep the peer's handshake connection ID (migration and connection-ID
                // rotation are a later issue).
                Frame::NewConnectionId { .. } => {
                    if self.hs.cids.remote.is_empty() {
                        return Err(violation(ty));
                    }
                }
                // RFC 9000 §19.16: we issued only sequence number 0, which the packet carrying
                // this frame is addressed to: retiring it, or a number never sent, is a
                // PROTOCOL_VIOLATION.
                Frame::RetireConnectionId { .. } => return Err(violation(ty)),
                // RFC 9000 §8.2.2: answer PATH_CHALLENGE with PATH_RESPONSE.
                Frame::PathChallenge { data } => self.path_response = Some(data),
                // We send no PATH_CHALLENGE; an unsolicited response is ignored (§8.2.3
                // allows PROTOCOL_VIOLATION but does not require it).
                Frame::PathResponse { .. } => {}
                // RFC 9000 §10.2.2: the peer closed; enter the draining state.
                Frame::ConnectionClose { error_code, frame_type, reason } => {
                    let c = ConnectionClose::new(
                        error_code.into_inner(),
                        Some(frame_type.into_inner()),
                        false,
                        reason,
                    );
                    self.enter_draining(now, c);
                    out.closed = true;
                    return Ok(out);
                }
                Frame::ApplicationClose { error_code, reason } => {
                    let c = ConnectionClose::new(error_code.into_inner(), None, true, reason);
                    self.enter_draining(now, c);
                    out.closed = true;
                    return Ok(out);
                }
                Frame::HandshakeDone => self.on_handshake_done(now, ty)?,
                // RFC 9221 §3: we advertise no max_datagram_frame_size, so a DATAGRAM frame
                // is a PROTOCOL_VIOLATION.
                #[cfg(feature = "datagram")]
                Frame::Datagram { .. } => return Err(violation(ty)),
            }
        }
        Ok(out)
    }

    /// RFC 9000 §19.20, RFC 9001 §4.1.2: HANDSHAKE_DONE confirms the handshake on the
    /// client.
    fn on_handshake_done(&mut self, now: Instant, ty: u64) -> Res {
        // RFC 9000 §19.20: "A server MUST treat receipt of a HANDSHAKE_DONE frame as a
        // connection error of type PROTOCOL_VIOLATION."
        if self.side == Side::Server {
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
    }

    /// Discards the keys and state of `space` (RFC 9001 §4.9, RFC 9002 §6.4).
    pub(super) fn discard_space(&mut self, space: PnSpace, now: Instant) {
        let had = match space {
            PnSpace::Initial => self.hs.keys.initial.take().is_some(),
            PnSpace::Handshake => self.hs.keys.handshake.take().is_some(),
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

    fn on_ack(&mut self, now: Instant, space: PnSpace, ack: &Ack<'_>) -> Res {
        // The peer's ack_delay_exponent; 3 (the default) until its parameters arrive.
        let exp = self
            .peer
            .map_or(TransportParameters::DEFAULT_ACK_DELAY_EXPONENT, |p| p.ack_delay_exponent);
        let ty = ack.frame_type();
        let mut sink = Sink {
            streams: &mut self.streams,
            crypto: &mut self.hs.crypto_send,
            controls: &mut self.controls,
            rx_initial: &mut self.rx_initial,
            rx_handshake: &mut self.rx_handshake,
            rx_data: &mut self.rx_data,
            handshake_done_pending: &mut self.handshake_done_pending,
            stats: &mut self.stats,
            events: &mut self.events,
        };
        // RFC 9000 §13.1, §21.4: an ACK of a packet never sent (or deliberately skipped) is a
        // PROTOCOL_VIOLATION (checked by recovery before anything changes).
        self.recovery
            .on_ack_frame(space, ack, exp, now, |ev| sink.on_event(ev))
            .map_err(|e| ConnectionClose::transport(e.code(), Some(ty)))?;
        Ok(())
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
    pub(super) fn on_handshake_progress(&mut self, now: Instant) -> Res {
        let sig = core::mem::take(&mut self.hs.signals);
        if sig.handshake_keys {
            self.recovery.on_handshake_keys_available(now);
        }
        if let Some(tp) = self.hs.peer_tp.take() {
            self.apply_peer_params(&tp);
        }
        if sig.tickets > 0 {
            self.events.push(Event::NewTicket);
        }
        // RFC 9001 §4.9.3: a client discards its 0-RTT keys once it has 1-RTT keys.
        if sig.one_rtt_keys && self.side == Side::Client {
            self.hs.keys.discard_zero_rtt();
        }
        if sig.early_data == Some(false) && self.side == Side::Client {
            self.on_early_data_rejected(now);
        }
        if sig.complete && !self.handshake_complete {
            self.handshake_complete = true;
            if self.state == State::Handshake {
                self.state = State::Established;
            }
            self.events.push(Event::HandshakeComplete);
            if self.side == Side::Server {
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
    fn on_early_data_rejected(&mut self, now: Instant) {
        for p in self.recovery.application_packets().iter() {
            for slot in p.payload.control_slots() {
                if let Some(c) = self.controls.take(slot) {
                    self.streams.on_control_lost(c);
                }
            }
        }
        self.streams.requeue_all();
        self.recovery.discard_space(PnSpace::ApplicationData, now);
        self.hs.keys.discard_zero_rtt();
        self.early_rejected = true;
        self.events.push(Event::EarlyDataRejected);
    }

    /// RFC 9000 §7.4, §18.2: applies the peer's transport parameters (already validated by
    /// the TLS hook): flow-control limits and stream counts, max_ack_delay, idle timeout.
    fn apply_peer_params(&mut self, tp: &TransportParameters) {
        self.streams.on_peer_params(tp);
        self.recovery.set_peer_max_ack_delay(Duration::from_millis(u64::from(tp.max_ack_delay)));
        self.peer = Some(PeerParams {
            idle_timeout_ms: tp.max_idle_timeout.into_inner(),
            max_udp_payload_size: tp.max_udp_payload_size.into_inner(),
            ack_delay_exponent: tp.ack_delay_exponent,
        });
    }

    /// A stream or flow-control frame. Returns false when its data was dropped (do not
    /// acknowledge the packet).
    fn on_stream_frame(&mut self, frame: &Frame<'_>) -> Res<bool> {
        let limits = self.streams.limits();
        let before = [limits.remote_opened(StreamDir::Bidi), limits.remote_opened(StreamDir::Uni)];
        let max_before = [limits.local_max(StreamDir::Bidi), limits.local_max(StreamDir::Uni)];
        let handled = self
            .streams
            .on_frame(frame)
            .map_err(|e| ConnectionClose::transport(e.code(), Some(frame.frame_type())))?;
        let peer = match self.side {
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

    /// The loss detection timer fired (RFC 9002 §6.1.2, §6.2).
    pub(super) fn on_loss_timeout(&mut self, now: Instant) {
        let mut sink = Sink {
            streams: &mut self.streams,
            crypto: &mut self.hs.crypto_send,
            controls: &mut self.controls,
            rx_initial: &mut self.rx_initial,
            rx_handshake: &mut self.rx_handshake,
            rx_data: &mut self.rx_data,
            handshake_done_pending: &mut self.handshake_done_pending,
            stats: &mut self.stats,
            events: &mut self.events,
        };
        let action = self.recovery.on_timeout(now, |ev| sink.on_event(ev));
        if let TimeoutAction::SendProbes { space, count, .. } = action {
            self.stats.ptos = self.stats.ptos.saturating_add(1);
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

    /// Queues again the stream data and control frames of the `n` oldest unacknowledged
    /// packets that still carry something unacknowledged (the records stay in place, so an
    /// acknowledgement or loss of the original is handled as usual).
    fn requeue_oldest(&mut self, n: usize) {
        let mut left = n;
        for p in self.recovery.application_packets().iter() {
            if left == 0 {
                break;
            }
            if !p.ack_eliciting {
                continue;
            }
            let f = p.payload;
            let mut queued = false;
            if f.has(flag::STREAM) {
                if let Some(id) = StreamId::new(f.stream_id) {
                    let (off, len, fin) =
                        (f.stream_offset, usize::from(f.stream_len), f.has(flag::STREAM_FIN));
                    queued |= self.streams.requeue_stream(id, off, len, fin);
                }
            }
            for slot in f.control_slots() {
                if let Some(c) = self.controls.get(slot) {
                    self.streams.on_control_lost(c);
                    queued = true;
                }
            }
            if queued {
                left -= 1;
            }
        }
    }
}
