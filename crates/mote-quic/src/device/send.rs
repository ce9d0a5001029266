//! The send path of a device connection: one datagram per call, a packet for each space
//! with something to send, coalesced, padded where required, protected and recorded
//! (RFC 9000 §12.2, §13, §14.1; RFC 9001 §5; RFC 9002 §6, §7).

use mote_crypto::{CryptoProvider, TAG_LEN};

use super::streams::Sender;
use super::{si, DeviceConnection, State, TokenState};
use crate::coding::VarInt;
use crate::coding::Writer;
use crate::connection::send::ACK_DELAY_EXPONENT;
use crate::connection::tls::TlsSession;
use crate::connection::{CloseReason, Transmit, MIN_INITIAL_SIZE};
use crate::error::TransportErrorCode;
use crate::frame::{put_frame, put_stream, types};
use crate::packet::{
    number, LongType, PacketKeys, FIXED_BIT, FORM_BIT, KEY_PHASE_BIT, LENGTH_FIELD_LEN,
};
use crate::recovery::{
    encode_ack_delay, widen, Ecn, PnSpace, ReceivedSpace, SentPacket, TrackedPn,
};
use crate::stream::{crypto_frame_room, stream_frame_room, Chunk, SendStream};
use crate::time::Instant;

/// Room below which no packet is started: the longest long header (54 bytes), the tag and
/// a few bytes of frames.
const MIN_PACKET_ROOM: usize = 54 + TAG_LEN + 8;

/// Below this many bytes left no STREAM frame is started.
const STREAM_FRAME_MIN: usize = 8;

/// What a sent packet carried, for acknowledgement and loss (RFC 9000 §13.3): one CRYPTO
/// range, one STREAM range (a device packet carries one STREAM frame), and flags for the
/// control frames, which are sent again with their current values when lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub(crate) flags: u32,
    /// Largest Acknowledged of the ACK frame carried (a tracked packet number).
    pub(crate) ack_largest: TrackedPn,
    /// 32-bit: a client's CRYPTO data is a few kilobytes.
    pub(crate) crypto_offset: u32,
    pub(crate) crypto_len: u16,
    /// 32-bit: a device stream ends below 4 GiB ([`super::streams::Streams::write`]).
    pub(crate) stream_offset: u32,
    pub(crate) stream_len: u16,
    /// The index of the request stream open when the packet left (its frames concern that
    /// one only).
    pub(crate) request: u32,
}

impl Sent {
    pub(crate) const fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }
}

/// The flags of [`Sent`].
pub(crate) mod flag {
    pub(crate) const ACK: u32 = 1 << 0;
    pub(crate) const CRYPTO: u32 = 1 << 1;
    pub(crate) const CONTROL_DATA: u32 = 1 << 2;
    pub(crate) const REQUEST_DATA: u32 = 1 << 3;
    pub(crate) const FIN: u32 = 1 << 4;
    pub(crate) const PING: u32 = 1 << 5;
    pub(crate) const MAX_DATA: u32 = 1 << 6;
    pub(crate) const RETIRE: u32 = 1 << 7;
    pub(crate) const CONTROL_RESET: u32 = 1 << 8;
    pub(crate) const REQUEST_RESET: u32 = 1 << 9;
    /// PATH_RESPONSE (not sent again when lost, RFC 9000 §13.3).
    pub(crate) const PATH: u32 = 1 << 18;
    /// NEW_CONNECTION_ID (the spare connection ID, [`super::local_cids`]).
    pub(crate) const NEW_CID: u32 = 1 << 19;
    /// MAX_STREAM_DATA for receiving half `i` (bits 10..14).
    pub(crate) const fn max_stream_data(i: usize) -> u32 {
        1 << (10 + i)
    }
    /// STOP_SENDING for receiving half `i` (bits 14..18).
    pub(crate) const fn stop_sending(i: usize) -> u32 {
        1 << (14 + i)
    }
    /// Every stream control frame (RESET_STREAM, STOP_SENDING, MAX_STREAM_DATA, MAX_DATA).
    pub(crate) const CONTROLS: u32 = MAX_DATA | CONTROL_RESET | REQUEST_RESET | (0xff << 10);
}

/// A packet written into the datagram but not yet protected.
#[derive(Clone, Copy)]
struct Built {
    space: PnSpace,
    start: usize,
    /// Length including the AEAD tag.
    len: usize,
    pn: u64,
    pn_offset: usize,
    /// The Length field's offset (a long header).
    long: Option<usize>,
    payload_end: usize,
    frames: Sent,
    ack_eliciting: bool,
    padded: bool,
}

impl<P, T, C, S, const SENT: usize, const RANGES: usize> DeviceConnection<P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// The largest datagram we send: our configured size within the server's
    /// max_udp_payload_size.
    fn max_datagram_size(&self) -> usize {
        let ours = usize::from(self.settings.max_datagram_size);
        match self.peer {
            Some(p) => ours.min(usize::try_from(p.max_udp_payload_size).unwrap_or(usize::MAX)),
            None => ours,
        }
    }

    /// Writes the next datagram into `buf`. `None` when nothing is due: check
    /// [`DeviceConnection::poll_timeout`].
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.set_now(now);
        if matches!(self.state, State::Drained | State::Draining { .. }) {
            return None;
        }
        let n = self.max_datagram_size().min(buf.len());
        let len = self.build_datagram(now, buf.get_mut(..n)?);
        #[cfg(feature = "stats")]
        if len > 0 {
            self.traffic.datagrams_sent = self.traffic.datagrams_sent.saturating_add(1);
            self.traffic.bytes_sent = self.traffic.bytes_sent.saturating_add(len as u64);
        }
        (len > 0).then_some(Transmit {
            destination: self.remote,
            len,
            ecn: Ecn::NotEct,
            segment_size: None,
            src: None,
        })
    }

    /// Application Data goes out in 0-RTT packets (no 1-RTT keys yet).
    fn sends_0rtt(&self) -> bool {
        self.hs.keys.one_rtt.is_none() && self.can_send_early_data()
    }

    /// The keys packets of `space` are protected with now; `None`: nothing is sent in it.
    /// Application Data goes out in 0-RTT packets before the 1-RTT keys, while 0-RTT is
    /// allowed.
    fn tx_keys(&self, space: PnSpace) -> Option<&PacketKeys<P>> {
        match space {
            PnSpace::Initial => self.hs.keys.initial.as_ref().map(|k| &k.tx),
            PnSpace::Handshake => self.hs.keys.handshake.as_ref().map(|k| &k.tx),
            PnSpace::ApplicationData => match self.hs.keys.one_rtt.as_ref() {
                Some(k) => Some(&k.keys.tx),
                None if self.can_send_early_data() => self.hs.keys.zero_rtt(),
                None => None,
            },
        }
    }

    /// One datagram: a packet per space with something to send, coalesced (RFC 9000
    /// §12.2), padded to 1200 bytes when it carries an Initial (§14.1), protected and
    /// recorded. Returns its length.
    fn build_datagram(&mut self, now: Instant, out: &mut [u8]) -> usize {
        if out.len() < MIN_PACKET_ROOM {
            return 0;
        }
        let mut built: [Option<Built>; 3] = [None; 3];
        let mut pos = 0usize;
        for space in PnSpace::ALL {
            if self.tx_keys(space).is_none() {
                continue;
            }
            let Some(region) = out.get_mut(pos..) else { break };
            if region.len() < MIN_PACKET_ROOM {
                break;
            }
            if let Some(mut b) = self.build_packet(now, space, region) {
                b.start = pos;
                pos += b.len;
                if let Some(slot) = built.get_mut(si(space)) {
                    *slot = Some(b);
                }
            }
        }
        if pos == 0 {
            return 0;
        }
        // RFC 9000 §14.1: a client pads every datagram carrying an Initial packet to 1200
        // bytes; §8.2.2: a datagram with PATH_RESPONSE is expanded to 1200 bytes too.
        let path = built[2].is_some_and(|b| b.frames.has(flag::PATH));
        if (built[0].is_some() || path) && pos < MIN_INITIAL_SIZE && MIN_INITIAL_SIZE <= out.len() {
            let extra = MIN_INITIAL_SIZE - pos;
            if let Some(last) = built.iter_mut().rev().flatten().next() {
                let from = last.start + last.payload_end;
                if let Some(z) = out.get_mut(from..from + extra) {
                    z.fill(0);
                }
                last.payload_end += extra;
                last.len += extra;
                last.padded = true;
                pos += extra;
            }
        }
        for b in built.iter().flatten() {
            if !self.finalize(now, out, b) {
                return 0;
            }
        }
        // RFC 9001 §4.9.1: a client discards its Initial keys when it first sends a
        // Handshake packet.
        if built[1].is_some() {
            self.discard_space(PnSpace::Initial, now);
        }
        if matches!(self.state, State::Closing { .. }) {
            self.close_pending = false;
        } else if built[2].is_some_and(|b| b.long.is_none()) {
            self.check_confidentiality_limit();
        }
        pos
    }

    /// Patches the Length field, protects the packet (RFC 9001 §5.3, §5.4) and records it
    /// with loss recovery.
    fn finalize(&mut self, now: Instant, out: &mut [u8], b: &Built) -> bool {
        let Some(pkt) = out.get_mut(b.start..b.start + b.len) else { return false };
        if let Some(at) = b.long {
            if patch_length(pkt, at, b.len - b.pn_offset).is_none() {
                return false;
            }
        }
        let Some(keys) = self.tx_keys(b.space) else { return false };
        if keys.protect(pkt, b.pn_offset, b.pn).is_err() {
            return false;
        }
        // RFC 9001 §6.6: count what the current 1-RTT send key protected.
        if let Some(k) = self
            .hs
            .keys
            .one_rtt
            .as_mut()
            .filter(|_| b.space == PnSpace::ApplicationData && b.long.is_none())
        {
            k.on_sent(b.pn);
        }
        // RFC 9002 §2: ack-eliciting or padded packets count in flight.
        let in_flight = b.ack_eliciting || (b.padded && !self.recovery.is_full(b.space));
        let size = u16::try_from(b.len).unwrap_or(u16::MAX);
        let record = SentPacket::new(b.pn, now, size, b.ack_eliciting, in_flight, b.frames);
        if self.recovery.on_packet_sent(b.space, record).is_err() {
            self.fail(super::error::Error::bare(TransportErrorCode::INTERNAL_ERROR));
            return false;
        }
        // RFC 9000 §10.1: the first ack-eliciting packet since the last receipt restarts
        // the idle timer.
        if b.ack_eliciting && !self.ack_eliciting_since_recv {
            self.idle_start = now;
            self.ack_eliciting_since_recv = true;
        }
        true
    }

    /// Whether `space` has ack-eliciting frames waiting. Out of line: measured 116 B
    /// smaller than inlined into the send path.
    #[inline(never)]
    fn has_eliciting(&self, space: PnSpace) -> bool {
        match space {
            PnSpace::Initial => self.hs.crypto_send[0].wants_to_send(),
            PnSpace::Handshake => self.hs.crypto_send[1].wants_to_send(),
            PnSpace::ApplicationData => {
                self.ping_pending
                    || self.remote_cids.has_pending()
                    || self.local_cids.has_pending()
                    || self.hs.crypto_send[2].wants_to_send()
                    || self.streams.wants_control()
                    || self.streams.wants_to_send()
            }
        }
    }

    /// Writes one packet of `space` at the start of `region` (header and frames, not yet
    /// protected). `None` when nothing is due in this space.
    fn build_packet(&mut self, now: Instant, space: PnSpace, region: &mut [u8]) -> Option<Built> {
        let closing = matches!(self.state, State::Closing { .. });
        if closing && !self.close_pending {
            return None;
        }
        let rx = self.rx(space);
        let (has_unacked, ack_due) = (rx.has_unacked(), rx.ack_due(now));
        let i = si(space);
        let probe = self.probes.get(i).copied().unwrap_or(0) > 0;
        let zero_rtt = space == PnSpace::ApplicationData && self.sends_0rtt();
        // RFC 9002 §7: congestion control and the record capacity hold back ack-eliciting
        // packets (probes excepted).
        let elicit_ok = !closing
            && (probe || (!self.recovery.is_full(space) && self.recovery.send_window() > 0));
        // RFC 9000 §8.2.2: a PATH_RESPONSE is not held back by congestion control.
        let respond = space == PnSpace::ApplicationData
            && !closing
            && !zero_rtt
            && self.path_response.is_some()
            && !self.recovery.is_full(space);
        let want =
            closing || ack_due || respond || (elicit_ok && (probe || self.has_eliciting(space)));
        if !want || region.len() < MIN_PACKET_ROOM {
            return None;
        }
        // RFC 9000 §21.4: skip a 1-RTT packet number now and then, so an optimistic ACK
        // covering numbers never sent is caught.
        if space == PnSpace::ApplicationData
            && self.handshake_confirmed
            && !zero_rtt
            && self.recovery.next_pn(space) >= self.skip_pn_at
        {
            self.skip_packet_number();
        }
        let pn = self.recovery.next_pn(space);
        let pn_len = number::encoded_len(pn, self.recovery.largest_acked(space));
        let body_end = region.len() - TAG_LEN;
        let mut w = Writer::new(region.get_mut(..body_end)?);
        let long_type = match space {
            PnSpace::Initial => Some(LongType::Initial),
            PnSpace::Handshake => Some(LongType::Handshake),
            PnSpace::ApplicationData if zero_rtt => Some(LongType::ZeroRtt),
            PnSpace::ApplicationData => None,
        };
        let (pn_offset, long) = self.put_header(&mut w, long_type, pn, pn_len)?;
        let payload_start = w.position();
        let mut f = Sent { request: self.streams.request.unwrap_or(0), ..Sent::default() };
        let mut eliciting = false;
        if closing {
            self.write_close(space, &mut w);
        } else {
            // RFC 9000 §13.2.1: an ACK when one is due, or piggybacked on any packet sent
            // (never in 0-RTT packets, §12.4).
            if has_unacked && !zero_rtt {
                let max_ranges = usize::from(self.settings.max_ack_ranges);
                if let Some(largest) = put_ack(self.rx(space), &mut w, now, max_ranges) {
                    f.flags |= flag::ACK;
                    // Only tracked packet numbers are acknowledged.
                    f.ack_largest = largest as TrackedPn;
                    self.rx_mut(space).on_ack_sent();
                }
            }
            if respond {
                if let Some(data) = self.path_response {
                    if put_frame(&mut w, types::PATH_RESPONSE, &[], &data, false) {
                        self.path_response = None;
                        f.flags |= flag::PATH;
                        eliciting = true;
                    }
                }
            }
            if elicit_ok {
                // RFC 9002 §6.2.4: probes of the handshake spaces repeat the
                // unacknowledged CRYPTO data.
                if probe && space != PnSpace::ApplicationData {
                    if let Some(c) = self.hs.crypto_send.get_mut(i) {
                        if !c.wants_to_send() && c.has_unacked() {
                            c.requeue_unacked();
                        }
                    }
                }
                eliciting |= self.write_eliciting(pn, space, zero_rtt, &mut w, &mut f);
                // RFC 9002 §6.2.4: a probe is ack-eliciting; PING when nothing else is.
                let ping = probe || (space == PnSpace::ApplicationData && self.ping_pending);
                if ping && !eliciting && put_frame(&mut w, types::PING, &[], &[], false) {
                    f.flags |= flag::PING;
                    eliciting = true;
                }
                if space == PnSpace::ApplicationData && eliciting {
                    self.ping_pending = false;
                }
            }
        }
        if w.position() == payload_start {
            return None;
        }
        // RFC 9001 §5.4.2: packet number and payload span at least 4 bytes (the sample).
        let payload_len = w.position() - payload_start;
        let min_payload = 4usize.saturating_sub(pn_len);
        if payload_len < min_payload {
            w.put_repeated(0, min_payload - payload_len).ok()?;
        }
        if eliciting && probe {
            if let Some(p) = self.probes.get_mut(i) {
                *p = p.saturating_sub(1);
            }
        }
        let payload_end = w.position();
        Some(Built {
            space,
            start: 0,
            len: payload_end + TAG_LEN,
            pn,
            pn_offset,
            long,
            payload_end,
            frames: f,
            ack_eliciting: eliciting,
            padded: false,
        })
    }

    /// Writes the header of a packet of `long_type` (`None`: 1-RTT) with packet number `pn`
    /// truncated to `pn_len` bytes (1 to 4). One routine for the long and the short header:
    /// what they share (first byte, Destination Connection ID, packet number) written once.
    /// Returns the packet number's offset and, for a long header, the Length field's.
    fn put_header(
        &self,
        w: &mut Writer<'_>,
        long_type: Option<LongType>,
        pn: u64,
        pn_len: usize,
    ) -> Option<(usize, Option<usize>)> {
        let c = &self.hs.cids;
        let version = self.hs.version;
        // RFC 9000 §17.2: Header Form 1, Fixed Bit 1, Long Packet Type, Reserved Bits 0,
        // Packet Number Length; §17.3.1: Header Form 0, Fixed Bit 1, Spin Bit 0 (we do not
        // spin, §17.4), Reserved Bits 0, Key Phase, Packet Number Length.
        let pn_bits = u8::try_from(pn_len.checked_sub(1).filter(|&b| b < 4)?).ok()?;
        let first = match long_type {
            Some(ty) => FORM_BIT | FIXED_BIT | (version.long_type_bits(ty) << 4),
            None if self.hs.keys.one_rtt.as_ref().is_some_and(|k| k.tx_phase) => {
                FIXED_BIT | KEY_PHASE_BIT
            }
            None => FIXED_BIT,
        } | pn_bits;
        // Every field written, then one check: a refused write leaves the header short.
        let mut ok = w.put_u8(first).is_ok();
        let dcid: &[u8] = &c.remote;
        if long_type.is_some() {
            ok &= w.put_u32(version.0).is_ok();
            // A connection ID holds at most 20 bytes.
            ok &= w.put_u8(dcid.len() as u8).is_ok();
        }
        ok &= w.put_slice(dcid).is_ok();
        let mut length_offset = None;
        if let Some(ty) = long_type {
            let scid: &[u8] = &c.local;
            ok &= w.put_u8(scid.len() as u8).is_ok();
            ok &= w.put_slice(scid).is_ok();
            // RFC 9000 §17.2.2: our Initials carry the address-validation token.
            if ty == LongType::Initial {
                let token = match self.token_state {
                    TokenState::Initial => self.token.get(..usize::from(self.token_len)),
                    _ => None,
                };
                let token = token.unwrap_or(&[]);
                ok &= w.put_varint_u64(token.len() as u64).is_ok();
                ok &= w.put_slice(token).is_ok();
            }
            // The Length, patched once the payload is known ([`patch_length`]).
            length_offset = Some(w.position());
            ok &= w.put_varint_sized(VarInt::ZERO, LENGTH_FIELD_LEN).is_ok();
        }
        let pn_offset = w.position();
        ok &= w.put_slice(pn.to_be_bytes().get(8 - pn_len..)?).is_ok();
        if !ok {
            return None;
        }
        Some((pn_offset, length_offset))
    }

    /// Skips the next Application Data packet number and draws the next gap.
    #[inline(never)]
    fn skip_packet_number(&mut self) {
        use mote_crypto::CryptoRng as _;
        let Ok(pn) = self.recovery.skip_pn(PnSpace::ApplicationData) else { return };
        let mut r = [0u8; 1];
        let _ = self.hs.rng.fill(&mut r);
        self.skip_pn_at = pn + crate::connection::SKIP_PN_GAP_MIN + u64::from(r[0]);
    }

    /// The ack-eliciting frames of a packet, in order: RETIRE_CONNECTION_ID, stream control
    /// frames, CRYPTO, STREAM. Returns whether any was written.
    fn write_eliciting(
        &mut self,
        pn: u64,
        space: PnSpace,
        zero_rtt: bool,
        w: &mut Writer<'_>,
        f: &mut Sent,
    ) -> bool {
        let mut any = false;
        let app = space == PnSpace::ApplicationData;
        if app && !zero_rtt {
            // RFC 9000 §19.16: the connection IDs Retire Prior To retired.
            while let Some(seq) = self.remote_cids.poll_retire(pn) {
                if !put_frame(w, types::RETIRE_CONNECTION_ID, &[seq], &[], false) {
                    self.remote_cids.unpoll(seq);
                    break;
                }
                f.flags |= flag::RETIRE;
                any = true;
            }
            any |= self.write_new_connection_id(pn, w, f);
        }
        if app {
            any |= self.write_stream_controls(w, f);
        }
        // CRYPTO (RFC 9000 §19.6; never in 0-RTT packets).
        let i = si(space);
        if let Some(cs) = self.hs.crypto_send.get_mut(i).filter(|_| !zero_rtt) {
            if let Some(first) = cs.next_chunk(w.remaining()) {
                if let Some((off, len, _)) = put_data(w, cs.stream_mut(), None, first) {
                    f.flags |= flag::CRYPTO;
                    f.crypto_offset = off;
                    f.crypto_len = len;
                    any = true;
                }
            }
        }
        // STREAM (RFC 9000 §19.8): one frame per packet, control stream first.
        if app && w.remaining() > STREAM_FRAME_MIN {
            if let Some((which, id, first)) = self.streams.next_chunk(w.remaining()) {
                if let Some((s, _)) = self.streams.sender(id) {
                    if let Some((off, len, fin)) = put_data(w, s, Some(id), first) {
                        f.flags |= match which {
                            Sender::Control => flag::CONTROL_DATA,
                            Sender::Request => flag::REQUEST_DATA,
                        };
                        if fin {
                            f.flags |= flag::FIN;
                        }
                        f.stream_offset = off;
                        f.stream_len = len;
                        any = true;
                    }
                }
            }
        }
        any
    }

    /// RESET_STREAM, STOP_SENDING, MAX_STREAM_DATA and MAX_DATA frames that are due (RFC
    /// 9000 §19.4, §19.5, §19.9, §19.10), while the packet has room for the longest (a type
    /// and three varints, 25 bytes).
    fn write_stream_controls(&mut self, w: &mut Writer<'_>, f: &mut Sent) -> bool {
        let mut any = false;
        while w.remaining() >= 25 {
            let Some((ty, fields, bit)) = self.streams.poll_control() else { break };
            let n = if ty == types::RESET_STREAM {
                3
            } else if ty == types::MAX_DATA {
                1
            } else {
                2
            };
            if put_frame(w, ty, fields.get(..n).unwrap_or(&[]), &[], false) {
                f.flags |= bit;
                any = true;
            } else {
                // Cannot happen with the room checked; the frame stays due if it does.
                let lost = Sent { flags: bit, request: f.request, ..Sent::default() };
                let _ = super::recv::frames_delivered(&mut self.streams, &lost, false);
                break;
            }
        }
        any
    }

    /// CONNECTION_CLOSE for `space` (RFC 9000 §10.2.3): an application close is 0x1d in
    /// 1-RTT packets and 0x1c with APPLICATION_ERROR and no reason in Initial and
    /// Handshake packets.
    #[inline(never)]
    fn write_close(&self, space: PnSpace, w: &mut Writer<'_>) {
        // Only `enter_closing` enters the closing state, with a local close.
        let Some(CloseReason::Local(c)) = self.close_reason else { return };
        let (ty, fields, reason) = match (space, c.application) {
            (PnSpace::ApplicationData, true) => {
                (types::CONNECTION_CLOSE_APP, [c.code, 0], c.reason())
            }
            (_, true) => {
                (types::CONNECTION_CLOSE, [TransportErrorCode::APPLICATION_ERROR.0, 0], &[][..])
            }
            (_, false) => {
                (types::CONNECTION_CLOSE, [c.code, c.frame_type.unwrap_or(0)], c.reason())
            }
        };
        let n = if ty == types::CONNECTION_CLOSE_APP { 1 } else { 2 };
        let _ = put_frame(w, ty, fields.get(..n).unwrap_or(&[]), reason, true);
    }
}

/// RFC 9000 §19.3: the ACK frame of `rx` at `now` with its highest `max_ranges` ranges
/// (half as many again while it does not fit). Returns its Largest Acknowledged. The fields
/// come straight from the received ranges (ascending, disjoint, non-adjacent), with no
/// frame built: the bytes of [`crate::frame::Ack::emit`] (tested below). Always type 0x02:
/// a device records every packet as not ECN-marked (`device/recv.rs`), so it never has
/// ECN counts to report (§19.3.2).
#[inline(never)]
fn put_ack(rx: &ReceivedSpace, w: &mut Writer<'_>, now: Instant, max_ranges: usize) -> Option<u64> {
    let all = rx.ranges().as_slice();
    let delay = encode_ack_delay(rx.ack_delay(now), ACK_DELAY_EXPONENT);
    let mut n = max_ranges.max(1);
    loop {
        let ranges = all.get(all.len().saturating_sub(n)..)?;
        let &(_, largest) = ranges.last()?;
        let start = w.position();
        // Every field written, then one check: a refused write leaves the frame short.
        let mut ok = w.put_varint_u64(types::ACK).is_ok();
        ok &= w.put_varint_u64(widen(largest)).is_ok();
        ok &= w.put_varint(delay).is_ok();
        let mut prev = None;
        for &(lo, hi) in ranges.iter().rev() {
            // The ACK Range Count before the First ACK Range; RFC 9000 §19.3.1: before each
            // further ACK Range Length, Gap = previous smallest - largest - 2.
            let head = match prev {
                None => ranges.len() as u64 - 1,
                Some(p) => widen(TrackedPn::saturating_sub(p, hi).saturating_sub(2)),
            };
            ok &= w.put_varint_u64(head).is_ok();
            ok &= w.put_varint_u64(widen(hi.saturating_sub(lo))).is_ok();
            prev = Some(lo);
        }
        if ok {
            return Some(widen(largest));
        }
        w.rewind(start);
        if n == 1 {
            return None;
        }
        n /= 2;
    }
}

/// RFC 9000 §17.2: the Length field (a [`LENGTH_FIELD_LEN`]-byte varint at `at`) is "the
/// length of the remainder of the packet (that is, the Packet Number and Payload fields)",
/// `len` here, tag included. `None` if it does not fit 2 bytes.
fn patch_length(pkt: &mut [u8], at: usize, len: usize) -> Option<()> {
    let field = pkt.get_mut(at..at + LENGTH_FIELD_LEN)?;
    let v = u16::try_from(len).ok().filter(|&v| v < 1 << 14)?;
    field.copy_from_slice(&(v | 0x4000).to_be_bytes());
    Some(())
}

/// Writes `first` (a sender's next chunk with any room) cut to the room its frame header
/// leaves: a STREAM frame of stream `id` (RFC 9000 §19.8: Length always, Offset when not
/// 0), or a CRYPTO frame (§19.6) without `id`; records it sent. Returns the data's offset,
/// length and FIN. One routine for both: measured smaller than a copy per frame type.
#[inline(never)]
fn put_data<B: AsRef<[u8]> + AsMut<[u8]>, const R: usize>(
    w: &mut Writer<'_>,
    s: &mut SendStream<B, R>,
    id: Option<u64>,
    first: Chunk,
) -> Option<(u32, u16, bool)> {
    let remaining = w.remaining();
    let room = match id {
        Some(id) => stream_frame_room_for(id, first.offset, remaining),
        None => crypto_frame_room(first.offset, remaining),
    };
    let chunk = clip(first, room)?;
    // The offset fits 32 bits: a device's streams (`Streams::write`) and a client's CRYPTO
    // data stop below 4 GiB.
    let off = u32::try_from(chunk.offset).ok()?;
    let data = s.chunk_bytes(&chunk);
    let ok = match id {
        Some(id) => put_stream(w, id, chunk.offset, data, chunk.fin),
        None => put_frame(w, types::CRYPTO, &[chunk.offset], data, true),
    };
    if !ok {
        return None;
    }
    s.on_sent(&chunk);
    Some((off, u16::try_from(chunk.len).unwrap_or(u16::MAX), chunk.fin))
}

/// `first` (a sender's next chunk with any room) cut to the `room` its frame header leaves:
/// what the sender's `next_chunk(room)` returns, without asking it again. The data starts
/// where it did; a cut chunk ends before the written data, so it carries no FIN; a
/// FIN-only chunk stays one. `None` without room.
fn clip(first: Chunk, room: usize) -> Option<Chunk> {
    if room == 0 {
        return None;
    }
    let len = first.len.min(room);
    Some(Chunk { len, fin: first.fin && len == first.len, ..first })
}

/// [`stream_frame_room`] for a raw stream ID.
fn stream_frame_room_for(id: u64, offset: u64, space: usize) -> usize {
    match crate::stream::StreamId::new(id) {
        Some(sid) => stream_frame_room(sid, offset, space),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{clip, put_ack};
    use crate::coding::Writer;
    use crate::connection::send::write_ack;
    use crate::recovery::{Ecn, PnSpace, ReceivedPackets};
    use crate::stream::{SendCredit, SendStream};
    use crate::time::{Duration, Instant};

    /// `put_ack` writes the bytes of the general `write_ack` (an `Ack` frame emitted), with
    /// the same Largest Acknowledged, for one range and for many (gaps of 1 and more, the
    /// range limit cutting the lowest), at every room from too small to enough (the halving
    /// of the range count included), and writes nothing when nothing was received. Bytes
    /// past the writer's position do not count: a frame that did not fit is rewound.
    #[test]
    fn put_ack_writes_what_write_ack_writes() {
        let pns: [&[u64]; 4] = [
            &[0],
            &[0, 1, 2, 5, 6, 9, 30, 31, 32, 1000, 1002, 70_000],
            &[3, 4, 5, 6, 7],
            &[1, 3, 5, 7, 9, 11, 13, 15, 17, 19],
        ];
        let now = Instant::from_micros(50_000);
        for list in pns {
            let mut rx =
                ReceivedPackets::<8>::new(PnSpace::ApplicationData, Duration::from_millis(25));
            for &pn in list {
                rx.on_packet_received(pn, Instant::from_micros(10_000 + pn), true, Ecn::NotEct);
            }
            for max_ranges in [0, 1, 2, 3, 8] {
                for room in 0..60 {
                    let (mut a, mut b) = ([0xaau8; 64], [0xaau8; 64]);
                    let (mut wa, mut wb) =
                        (Writer::new(&mut a[..room]), Writer::new(&mut b[..room]));
                    let got = put_ack(&rx, &mut wa, now, max_ranges);
                    let want = write_ack(&rx, &mut wb, now, max_ranges);
                    let (na, nb) = (wa.position(), wb.position());
                    assert_eq!((got, na), (want, nb), "{list:?} max {max_ranges} room {room}");
                    // A frame that did not fit leaves bytes past the position (rewound).
                    assert_eq!(a[..na], b[..nb], "{list:?} max {max_ranges} room {room}");
                }
            }
        }
        let rx = ReceivedPackets::<8>::new(PnSpace::Initial, Duration::from_millis(25));
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        assert_eq!(put_ack(&rx, &mut w, now, 4), None);
        assert_eq!(w.position(), 0);
    }

    /// `clip` of the chunk for any room is what the sender gives for that room: new data,
    /// with and without FIN, a retransmission in the middle, a FIN-only chunk, and the
    /// buffer's wrap.
    #[test]
    fn clip_is_next_chunk_for_the_room() {
        let mut credit = SendCredit::new(1 << 20);
        let mut s: SendStream<[u8; 64], 4> = SendStream::new([0u8; 64], 1 << 20);
        let check = |s: &SendStream<[u8; 64], 4>| {
            for room in 0..80 {
                let first = s.next_chunk(1000);
                let want = s.next_chunk(room).filter(|_| room > 0);
                assert_eq!(first.and_then(|c| clip(c, room)), want, "room {room}");
            }
        };
        assert_eq!(s.write(&mut credit, &[7; 40]).unwrap(), 40);
        check(&s);
        s.finish().unwrap();
        check(&s);
        let c = s.next_chunk(10).unwrap();
        s.on_sent(&c);
        let c = s.next_chunk(1000).unwrap();
        s.on_sent(&c);
        // Bytes 0..10 acknowledged, 10..25 lost: a retransmission, then nothing new.
        s.on_ack(0, 10, false);
        s.on_lost(10, 15, false);
        check(&s);
        let c = s.next_chunk(1000).unwrap();
        s.on_sent(&c);
        s.on_ack(10, 30, true);
        // Past the buffer's end: the next data wraps.
        let mut s: SendStream<[u8; 64], 4> = SendStream::new([0u8; 64], 1 << 20);
        assert_eq!(s.write(&mut credit, &[1; 50]).unwrap(), 50);
        let c = s.next_chunk(1000).unwrap();
        s.on_sent(&c);
        s.on_ack(0, 50, false);
        assert_eq!(s.write(&mut credit, &[2; 40]).unwrap(), 40);
        check(&s);
        // FIN only.
        while let Some(c) = s.next_chunk(1000) {
            s.on_sent(&c);
        }
        s.finish().unwrap();
        check(&s);
        assert_eq!(s.next_chunk(1000).map(|c| (c.len, c.fin)), Some((0, true)));
    }
}
