//! The send path: which packets a datagram carries, what goes in each, coalescing, padding
//! and protection (RFC 9000 §12.2, §13, §14.1; RFC 9001 §5; RFC 9002 §6, §7).

use mote_crypto::{CryptoProvider, TAG_LEN};

use super::counters::{bump, Counters};
use super::sent::{flag, SentFrames, MAX_STREAM_CHUNK};
use super::tls::TlsSession;
use super::{si, Connection, ConnectionClose, State, TokenState, Transmit, MIN_INITIAL_SIZE};
use crate::arith::Sat64 as _;
use crate::coding::Writer;
use crate::error::TransportErrorCode;
use crate::frame::{put_frame, put_stream, types};
use crate::packet::{number, LongHeader, LongHeaderOffsets, LongType, PacketKeys, ShortHeader};
use crate::recovery::{Ecn, PnSpace, ReceivedSpace, SentPacket};
use crate::stream::{crypto_frame_room, stream_frame_room};
use crate::time::Instant;
use crate::transport_params::Side;

/// Room below which no packet is started: the longest long header (1 + 4 + 21 + 21 + 1 + 2
/// + 4 = 54 bytes), the tag, and a few bytes of frames.
const MIN_PACKET_ROOM: usize = 54 + TAG_LEN + 8;

/// The ack_delay_exponent we use (the RFC default, so ACKs in every space decode alike).
pub(crate) const ACK_DELAY_EXPONENT: u8 = 3;

/// What a lone datagram carries ([`Connection::send_lone`]).
#[cfg(any(feature = "migration", feature = "pmtud"))]
#[derive(Clone, Copy)]
enum Lone {
    #[cfg(feature = "migration")]
    Response([u8; 8]),
    #[cfg(feature = "migration")]
    Challenge([u8; 8], crate::cid::ConnectionId),
    /// A PATH_RESPONSE and our own PATH_CHALLENGE to a probing client address.
    #[cfg(feature = "migration")]
    ResponseAndChallenge([u8; 8], [u8; 8]),
    #[cfg(feature = "pmtud")]
    Probe,
}

/// A packet written into a datagram but not yet protected.
#[derive(Clone, Copy)]
struct Built {
    space: PnSpace,
    /// Offset of the packet in the datagram.
    start: usize,
    /// Packet length including the AEAD tag.
    len: usize,
    pn: u64,
    /// Offset of the packet number (from `start`).
    pn_offset: usize,
    /// Long-header field offsets (from `start`), to patch the Length field.
    long: Option<LongHeaderOffsets>,
    /// End of the plaintext (from `start`); the tag follows.
    payload_end: usize,
    frames: SentFrames,
    ack_eliciting: bool,
    padded: bool,
}

/// Below this many bytes left in a packet no further STREAM frame is started (type, stream
/// ID, offset and length take up to 25 bytes; a few data bytes are not worth a frame).
const STREAM_FRAME_MIN: usize = 8;

/// Counts the bytes of the chunk `[offset, end)` that were sent before (below
/// `sent_before`) as retransmitted. Out of line: the 64-bit arithmetic is shared by the
/// CRYPTO and STREAM writers (without `stats`, nothing: inlined, it folds away).
#[cfg_attr(feature = "stats", inline(never))]
fn count_resent(stats: &mut Counters, sent_before: u64, offset: u64, end: u64) {
    bump(&mut stats.bytes_retransmitted, sent_before.min(end).sat_sub(offset));
}

/// Writes an ACK frame for `rx` with as many of its highest ranges as fit; returns its
/// Largest Acknowledged. Out of line: inlined into the packet builder it is larger.
#[inline(never)]
pub(crate) fn write_ack(
    rx: &ReceivedSpace,
    w: &mut Writer<'_>,
    now: Instant,
    max_ranges: usize,
) -> Option<u64> {
    let mut ranges = max_ranges.max(1);
    loop {
        let ack = rx.ack_frame(now, ACK_DELAY_EXPONENT, ranges)?;
        let start = w.position();
        if ack.emit(w).is_ok() {
            return Some(ack.largest());
        }
        w.rewind(start);
        if ranges == 1 {
            return None;
        }
        ranges /= 2;
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
    /// The largest datagram we send: our configured size, within the peer's
    /// max_udp_payload_size.
    pub(super) fn max_datagram_size(&self) -> usize {
        // With DPLPMTUD the size found on this path (starting at the configured one).
        #[cfg(feature = "pmtud")]
        let ours = usize::from(self.pmtud.current);
        #[cfg(not(feature = "pmtud"))]
        let ours = usize::from(self.config.max_datagram_size);
        match self.peer {
            Some(p) => ours.min(usize::try_from(p.max_udp_payload_size).unwrap_or(usize::MAX)),
            None => ours,
        }
    }

    /// Writes the next datagram — or, when [`super::ConnectionConfig::max_gso_segments`]
    /// allows, a GSO batch of equal-size 1-RTT datagrams — into `buf`. `None` when nothing
    /// is due: check [`Connection::poll_timeout`].
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.set_now(now);
        if matches!(self.state, State::Drained | State::Draining { .. }) {
            return None;
        }
        self.pacing_wakeup = None;
        let closing = matches!(self.state, State::Closing { .. });
        if !closing {
            self.top_up_cids();
            // Datagrams of their own: a PATH_RESPONSE for another address than the
            // current one, a PMTU probe.
            #[cfg(feature = "migration")]
            if let Some(t) = self.send_off_path_response(now, buf) {
                return Some(t);
            }
            #[cfg(feature = "migration")]
            if let Some(t) = self.send_preferred_probe(now, buf) {
                return Some(t);
            }
            #[cfg(feature = "pmtud")]
            if let Some(t) = self.send_pmtu_probe(now, buf) {
                return Some(t);
            }
        }
        let seg = self.max_datagram_size().min(buf.len());
        // GSO batches are for hosts' UDP sockets; a device writes one datagram per call.
        let max_segments =
            if closing || !cfg!(feature = "std") { 1 } else { self.config.max_gso_segments.max(1) };
        let (mut total, mut count) = (0usize, 0usize);
        while count < max_segments {
            let end = total.saturating_add(seg).min(buf.len());
            let Some(out) = buf.get_mut(total..end) else { break };
            // Only datagrams of a batch before the last are padded to the segment size.
            let batch_pad = count + 1 < max_segments;
            let (n, only_short) = self.build_datagram(now, out, batch_pad);
            if n == 0 {
                break;
            }
            total += n;
            count += 1;
            // A datagram shorter than the segment, or one with long headers, ends a batch.
            if n < seg || !only_short {
                break;
            }
        }
        if total == 0 {
            return None;
        }
        Some(Transmit {
            destination: self.remote,
            len: total,
            ecn: self.ecn_mark(),
            segment_size: if count > 1 { Some(seg) } else { None },
            src: self.local,
        })
    }

    /// RFC 9000 §13.4.2: ECT(0) while ECN is being tested or works on this path.
    fn ecn_mark(&self) -> Ecn {
        if self.ecn.marking() {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        }
    }

    /// A datagram holding one 1-RTT packet with `kind`'s frames (no coalescing, no ACK),
    /// protected and recorded as not ack-eliciting: neither a PMTU probe nor a
    /// PATH_RESPONSE sent off the current path needs retransmitting or counts against the
    /// congestion window (RFC 9000 §14.4, §8.2.2). Returns its length.
    #[cfg(any(feature = "migration", feature = "pmtud"))]
    fn send_lone(&mut self, now: Instant, out: &mut [u8], kind: Lone) -> Option<(usize, u64)> {
        let space = PnSpace::ApplicationData;
        if self.hs.keys.one_rtt.is_none() || out.len() < MIN_PACKET_ROOM {
            return None;
        }
        let pn = self.recovery.next_pn(space);
        let pn_len = number::encoded_len(pn, self.recovery.largest_acked(space));
        let body_end = out.len() - TAG_LEN;
        let mut w = Writer::new(out.get_mut(..body_end)?);
        let phase = self.hs.keys.one_rtt.as_ref().is_some_and(|k| k.tx_phase);
        // A probe of the server's preferred address uses the connection ID that came with
        // it (RFC 9000 §9.6.1); everything else the current one.
        let dcid = match kind {
            #[cfg(feature = "migration")]
            Lone::Challenge(_, dcid) => dcid,
            _ => self.hs.cids.remote,
        };
        let pn_offset =
            ShortHeader { dcid: &dcid, spin: false }.emit(&mut w, phase, pn, pn_len).ok()?;
        let payload_start = w.position();
        let mut f = SentFrames::EMPTY;
        match kind {
            #[cfg(feature = "migration")]
            Lone::Response(data) => {
                put_frame(&mut w, types::PATH_RESPONSE, &[], &data, false).then_some(())?;
                f.flags |= flag::PATH;
            }
            #[cfg(feature = "migration")]
            Lone::ResponseAndChallenge(response, challenge) => {
                // Unpadded: the address is unvalidated and the probe's size is not kept,
                // so the datagram stays small (RFC 9000 §8.2.1 allows that under the
                // anti-amplification limit).
                put_frame(&mut w, types::PATH_RESPONSE, &[], &response, false).then_some(())?;
                put_frame(&mut w, types::PATH_CHALLENGE, &[], &challenge, false).then_some(())?;
                f.flags |= flag::PATH;
            }
            #[cfg(feature = "migration")]
            Lone::Challenge(data, _) => {
                // RFC 9000 §8.2.1: expanded to the full (1200-byte) datagram.
                put_frame(&mut w, types::PATH_CHALLENGE, &[], &data, false).then_some(())?;
                f.flags |= flag::PATH;
                let rest = w.remaining();
                w.put_repeated(0, rest).ok()?;
            }
            #[cfg(feature = "pmtud")]
            Lone::Probe => {
                // RFC 9000 §14.4: PING and PADDING up to the probed size.
                put_frame(&mut w, types::PING, &[], &[], false).then_some(())?;
                f.flags |= flag::PING;
                let rest = w.remaining();
                w.put_repeated(0, rest).ok()?;
            }
        }
        let payload_len = w.position() - payload_start;
        let min_payload = 4usize.saturating_sub(pn_len);
        if payload_len < min_payload {
            w.put_repeated(0, min_payload - payload_len).ok()?;
        }
        let payload_end = w.position();
        let b = Built {
            space,
            start: 0,
            len: payload_end + TAG_LEN,
            pn,
            pn_offset,
            long: None,
            payload_end,
            frames: f,
            ack_eliciting: false,
            padded: false,
        };
        if !self.finalize(now, out, &b) {
            return None;
        }
        bump(&mut self.stats.datagrams_sent, 1);
        bump(&mut self.stats.bytes_sent, b.len as u64);
        Some((b.len, pn))
    }

    /// RFC 9000 §8.2.2: a PATH_RESPONSE goes to the address its challenge came from. One
    /// for another address than the current one leaves alone and unpadded (nothing was
    /// validated there, so nothing larger may be sent, §8.1).
    #[cfg(feature = "migration")]
    fn send_off_path_response(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let r = self.off_path_response()?;
        let n = buf.len().min(MIN_INITIAL_SIZE);
        // RFC 9000 §9.6.3: a server also starts validating a client address that probes
        // it (a client moving to our preferred address), with the same challenge until
        // it is answered.
        let kind = match self.migration.probed {
            _ if self.side != Side::Server => Lone::Response(r.data),
            Some((a, _, true)) if a == r.to => Lone::Response(r.data),
            Some((a, data, false)) if a == r.to => Lone::ResponseAndChallenge(r.data, data),
            _ => {
                let mut data = [0u8; 8];
                match mote_crypto::CryptoRng::fill(&mut self.hs.rng, &mut data) {
                    Ok(()) => {
                        self.migration.probed = Some((r.to, data, false));
                        Lone::ResponseAndChallenge(r.data, data)
                    }
                    Err(_) => Lone::Response(r.data),
                }
            }
        };
        let sent = self.send_lone(now, buf.get_mut(..n)?, kind);
        // Sent or not (no 1-RTT keys yet), the response is not kept.
        self.migration.pop_response();
        let (len, _) = sent?;
        let ecn = self.ecn_mark();
        // RFC 9000 §8.2.2: on the path the challenge arrived on, so from the local address
        // it reached (a client probing our preferred address gets the answer from there).
        let src = r.local.or(self.local);
        Some(Transmit { destination: r.to, len, ecn, segment_size: None, src })
    }

    /// RFC 9000 §9.6.1: a client probes the server's preferred address (PATH_CHALLENGE with
    /// the connection ID of sequence 1) while it keeps using the original one.
    #[cfg(feature = "migration")]
    fn send_preferred_probe(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let (to, dcid) = self.preferred_probe_due()?;
        let mut data = [0u8; 8];
        mote_crypto::CryptoRng::fill(&mut self.hs.rng, &mut data).ok()?;
        let n = buf.len().min(MIN_INITIAL_SIZE);
        let (len, _) = self.send_lone(now, buf.get_mut(..n)?, Lone::Challenge(data, dcid))?;
        let pto = self.recovery.pto_period();
        self.migration.challenge_sent(now, pto, data);
        let ecn = self.ecn_mark();
        Some(Transmit { destination: to, len, ecn, segment_size: None, src: None })
    }

    /// RFC 8899, RFC 9000 §14.3: a PMTU probe when one is due, the congestion window has
    /// room for it and the caller's buffer can hold it.
    #[cfg(feature = "pmtud")]
    fn send_pmtu_probe(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if !self.handshake_confirmed || self.amplification_room() != u64::MAX {
            return None;
        }
        let size = self.pmtud.probe_due(now)?;
        let n = usize::from(size);
        if self.recovery.send_window() < n as u64 {
            return None;
        }
        let (len, pn) = self.send_lone(now, buf.get_mut(..n)?, Lone::Probe)?;
        self.pmtud.on_probe_sent(now, pn, size);
        let ecn = self.ecn_mark();
        Some(Transmit { destination: self.remote, len, ecn, segment_size: None, src: self.local })
    }

    /// Whether a PATH_RESPONSE for the current address waits.
    fn path_response_due(&self) -> bool {
        #[cfg(feature = "migration")]
        return self.response_due();
        #[cfg(not(feature = "migration"))]
        return self.path_response.is_some();
    }

    /// RFC 9000 §8.2.2: PATH_RESPONSE frames for the current address.
    fn write_response(&mut self, w: &mut Writer<'_>, f: &mut SentFrames) -> bool {
        #[cfg(feature = "migration")]
        return self.write_path_response(w, f);
        #[cfg(not(feature = "migration"))]
        {
            let Some(data) = self.path_response else { return false };
            if !put_frame(w, types::PATH_RESPONSE, &[], &data, false) {
                return false;
            }
            self.path_response = None;
            f.flags |= flag::PATH;
            true
        }
    }

    /// Skips the next Application Data packet number and draws the next gap
    /// (`SKIP_PN_GAP_MIN` plus a random byte).
    #[inline(never)]
    fn skip_packet_number(&mut self) {
        use mote_crypto::CryptoRng as _;
        let Ok(pn) = self.recovery.skip_pn(PnSpace::ApplicationData) else { return };
        let mut r = [0u8; 1];
        // A failed draw still skips, only at the shortest gap.
        let _ = self.hs.rng.fill(&mut r);
        self.skip_pn_at = pn + super::SKIP_PN_GAP_MIN + u64::from(r[0]);
    }

    fn has_tx_keys(&self, space: PnSpace) -> bool {
        match space {
            PnSpace::Initial => self.hs.keys.initial.is_some(),
            PnSpace::Handshake => self.hs.keys.handshake.is_some(),
            PnSpace::ApplicationData => self.hs.keys.one_rtt.is_some() || self.sends_0rtt(),
        }
    }

    /// A client sending Application Data in 0-RTT packets (no 1-RTT keys yet).
    fn sends_0rtt(&self) -> bool {
        self.hs.keys.one_rtt.is_none() && self.can_send_early_data()
    }

    fn tx_keys(&self, space: PnSpace) -> Option<&PacketKeys<P>> {
        match space {
            PnSpace::Initial => self.hs.keys.initial.as_ref().map(|k| &k.tx),
            PnSpace::Handshake => self.hs.keys.handshake.as_ref().map(|k| &k.tx),
            PnSpace::ApplicationData => match self.hs.keys.one_rtt.as_ref() {
                Some(k) => Some(&k.keys.tx),
                None => self.hs.keys.zero_rtt().filter(|_| self.side() == Side::Client),
            },
        }
    }

    /// One datagram: a packet for each space with something to send, coalesced (RFC 9000
    /// §12.2), padded where required, then protected and recorded. Returns its length and
    /// whether it holds only a short-header packet.
    fn build_datagram(&mut self, now: Instant, out: &mut [u8], batch_pad: bool) -> (usize, bool) {
        // RFC 9000 §8.1: before the client's address is validated a server sends at most
        // three times what it received.
        let room = self.amplification_room();
        let limit = out.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if limit < MIN_PACKET_ROOM {
            return (0, true);
        }
        let mut built: [Option<Built>; 3] = [None; 3];
        let mut pos = 0usize;
        for space in PnSpace::ALL {
            if !self.has_tx_keys(space) {
                continue;
            }
            let Some(region) = out.get_mut(pos..limit) else { break };
            if region.len() < MIN_PACKET_ROOM {
                break;
            }
            // RFC 9000 §14.1: a server's ack-eliciting Initial must be padded to 1200
            // bytes, which the limit may not allow.
            let allow_eliciting = !(space == PnSpace::Initial
                && self.side() == Side::Server
                && limit < MIN_INITIAL_SIZE);
            if let Some(mut b) = self.build_packet(now, space, region, allow_eliciting) {
                b.start = pos;
                pos += b.len;
                if let Some(slot) = built.get_mut(si(space)) {
                    *slot = Some(b);
                }
            }
        }
        if pos == 0 {
            return (0, true);
        }
        // RFC 9000 §14.1: a client pads every datagram carrying an Initial packet to 1200
        // bytes, a server every datagram carrying an ack-eliciting Initial packet. A GSO
        // batch pads its full datagrams to the segment size.
        let path_frames = built[2].is_some_and(|b| b.frames.has(flag::PATH));
        let full_stream_datagram = built[2].is_some_and(|b| b.frames.has(flag::STREAM))
            && built.iter().flatten().all(|b| b.long.is_none())
            && self.streams.wants_to_send();
        let pad_to = match &built[0] {
            Some(b) if self.side() == Side::Client || b.ack_eliciting => MIN_INITIAL_SIZE,
            // RFC 9000 §8.2.1, §8.2.2: datagrams with PATH_CHALLENGE or PATH_RESPONSE are
            // expanded to 1200 bytes, as far as the amplification limit allows.
            _ if path_frames => MIN_INITIAL_SIZE.min(limit),
            _ if batch_pad && full_stream_datagram => limit,
            _ => 0,
        };
        if pos < pad_to && pad_to <= limit {
            let extra = pad_to - pos;
            if let Some(last) = built.iter_mut().rev().flatten().next() {
                // PADDING frames (0x00) at the end of the last packet's payload.
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
        let mut sent_handshake = false;
        for b in built.iter().flatten() {
            if !self.finalize(now, out, b) {
                return (0, true);
            }
            if b.space == PnSpace::Handshake {
                sent_handshake = true;
            }
        }
        bump(&mut self.stats.datagrams_sent, 1);
        bump(&mut self.stats.bytes_sent, pos as u64);
        if !self.address_is_validated() {
            self.amp_sent = self.amp_sent.sat_add(pos as u64);
            let blocked = self.amplification_blocked();
            self.recovery.set_amplification_limited(blocked, now);
        }
        #[cfg(feature = "migration")]
        if self.migration.amp_limited() {
            self.migration.amp_sent = self.migration.amp_sent.sat_add(pos as u64);
        }
        // RFC 9001 §4.9.1: a client discards its Initial keys when it first sends a
        // Handshake packet.
        if sent_handshake && self.side() == Side::Client {
            self.discard_space(PnSpace::Initial, now);
        }
        if matches!(self.state, State::Closing { .. }) {
            self.close_pending = false;
        } else if built[2].is_some_and(|b| b.long.is_none()) {
            self.check_confidentiality_limit();
        }
        (pos, built.iter().flatten().all(|b| b.long.is_none()))
    }

    /// Patches the Length field, protects the packet (RFC 9001 §5.3, §5.4) and records it
    /// with loss recovery.
    fn finalize(&mut self, now: Instant, out: &mut [u8], b: &Built) -> bool {
        let Some(pkt) = out.get_mut(b.start..b.start + b.len) else { return false };
        if let Some(off) = b.long {
            if off.set_length(pkt, b.len).is_err() {
                return false;
            }
        }
        #[cfg(feature = "qlog")]
        {
            // The plaintext frames, before protection: the packet number length is in the
            // still-unprotected first byte (RFC 9000 §17.2).
            let ptype = match (b.space, b.long.is_some()) {
                (PnSpace::Initial, _) => crate::packet::PacketType::Initial,
                (PnSpace::Handshake, _) => crate::packet::PacketType::Handshake,
                (PnSpace::ApplicationData, true) => crate::packet::PacketType::ZeroRtt,
                (PnSpace::ApplicationData, false) => crate::packet::PacketType::OneRtt,
            };
            let pn_len = usize::from(pkt.first().copied().unwrap_or(0) & 0x03) + 1;
            let payload = pkt.get(b.pn_offset + pn_len..b.payload_end).unwrap_or(&[]);
            self.packet_log.push(true, ptype, b.pn, b.len, payload);
        }
        let Some(keys) = self.tx_keys(b.space) else { return false };
        if keys.protect(pkt, b.pn_offset, b.pn).is_err() {
            return false;
        }
        // RFC 9001 §6.6: count what the current 1-RTT send key protected.
        let one_rtt = b.space == PnSpace::ApplicationData && b.long.is_none();
        if let Some(k) = self.hs.keys.one_rtt.as_mut().filter(|_| one_rtt) {
            k.on_sent(b.pn);
        }
        // RFC 9002 §2: packets that are ack-eliciting or contain PADDING count in flight. An
        // ACK-only padded packet is not counted when no record is free (it needs none to be
        // acknowledged, and must still leave).
        let in_flight = b.ack_eliciting || (b.padded && !self.recovery.is_full(b.space));
        let size = u16::try_from(b.len).unwrap_or(u16::MAX);
        let record = SentPacket::new(b.pn, now, size, b.ack_eliciting, in_flight, b.frames);
        if self.recovery.on_packet_sent(b.space, record).is_err() {
            self.enter_closing(ConnectionClose::transport(
                TransportErrorCode::INTERNAL_ERROR,
                None,
            ));
            return false;
        }
        if let Some(n) = self.stats.packets_sent.get_mut(si(b.space)) {
            bump(n, 1);
        }
        // RFC 9000 §10.1: sending the first ack-eliciting packet since the last receipt
        // restarts the idle timer.
        if b.ack_eliciting && !self.ack_eliciting_since_recv {
            self.idle_start = now;
            self.ack_eliciting_since_recv = true;
        }
        true
    }

    /// Whether congestion control, pacing and the record capacity let an ack-eliciting
    /// packet leave in `space` now (RFC 9002 §7, §7.7).
    fn may_send_eliciting(&mut self, now: Instant, space: PnSpace) -> bool {
        if self.recovery.is_full(space) || self.recovery.send_window() == 0 {
            return false;
        }
        // RFC 9002 §7.7: pacing spreads a window over an RTT. Before the first RTT sample
        // the rate would come from the guessed initial RTT (333 ms) and spread 0-RTT data
        // past the handshake; the initial window alone bounds that first flight.
        #[cfg(feature = "pacing")]
        if space == PnSpace::ApplicationData && self.recovery.rtt().has_sample() {
            let mds = self.max_datagram_size() as u64;
            if let Some(t) = self.recovery.pacing_time(now, mds) {
                if t > now {
                    self.pacing_wakeup = Some(t);
                    return false;
                }
            }
        }
        #[cfg(not(feature = "pacing"))]
        let _ = now;
        true
    }

    /// Whether `space` has ack-eliciting frames waiting.
    #[inline(never)]
    fn has_eliciting(&self, space: PnSpace) -> bool {
        match space {
            PnSpace::Initial => self.hs.crypto_send[0].wants_to_send(),
            PnSpace::Handshake => self.hs.crypto_send[1].wants_to_send(),
            PnSpace::ApplicationData => {
                (self.side() == Side::Server && self.handshake_done_pending)
                    || self.has_cid_frames()
                    || self.challenge_pending()
                    || (cfg!(feature = "server") && self.token_state == TokenState::Pending)
                    || self.datagram_ready()
                    || self.ping_pending
                    || self.hs.crypto_send[2].wants_to_send()
                    || (self.controls.has_free() && self.streams.wants_control())
                    || self.streams.wants_to_send()
            }
        }
    }

    /// Whether a DATAGRAM frame waits (feature `datagram`).
    fn datagram_ready(&self) -> bool {
        #[cfg(feature = "datagram")]
        return self.datagram_pending();
        #[cfg(not(feature = "datagram"))]
        false
    }

    fn rx_has_unacked(&self, space: PnSpace) -> (bool, bool) {
        let now = self.last_now;
        let rx = self.rx(space);
        (rx.has_unacked(), rx.ack_due(now))
    }

    /// Writes one packet of `space` at the start of `region` (header and frames, not yet
    /// protected). `None` when nothing is due in this space.
    fn build_packet(
        &mut self,
        now: Instant,
        space: PnSpace,
        region: &mut [u8],
        allow_eliciting: bool,
    ) -> Option<Built> {
        let closing = matches!(self.state, State::Closing { .. });
        if closing && !self.close_pending {
            return None;
        }
        let (has_unacked, ack_due) = self.rx_has_unacked(space);
        let i = si(space);
        let probe = self.probes.get(i).copied().unwrap_or(0) > 0;
        let elicit_ok =
            !closing && allow_eliciting && (probe || self.may_send_eliciting(now, space));
        // RFC 9000 §8.2.2: a PATH_RESPONSE is not held back by the congestion window or
        // pacing (a collapsed window would otherwise starve path validation); it needs a
        // free sent-packet record and is bounded by the queue of challenges.
        let respond = space == PnSpace::ApplicationData
            && !closing
            && allow_eliciting
            && !self.sends_0rtt()
            && self.hs.keys.one_rtt.is_some()
            && !self.recovery.is_full(space)
            && self.path_response_due();
        // RFC 9000 §9.3: nor is the PATH_CHALLENGE that validates a peer's new address: the
        // window was just reset for the new path (§9.4) while the old path's bytes are still
        // in flight, and until validated the new path is bounded by the amplification
        // limit anyway. Held back, the first packets to the new address would be ACK-only
        // (the interop runner wants a PATH_CHALLENGE in the first one).
        let challenge = space == PnSpace::ApplicationData
            && !closing
            && !elicit_ok
            && allow_eliciting
            && !self.sends_0rtt()
            && self.hs.keys.one_rtt.is_some()
            && !self.recovery.is_full(space)
            && self.challenge_pending();
        let want = closing
            || ack_due
            || respond
            || challenge
            || (elicit_ok && (probe || self.has_eliciting(space)));
        if !want || region.len() < MIN_PACKET_ROOM {
            return None;
        }

        // RFC 9000 §21.4: "an endpoint that receives an acknowledgment for a packet it did
        // not send ... can detect optimistic ACKs": skip a number now and then (1-RTT only,
        // once the handshake is confirmed).
        if space == PnSpace::ApplicationData
            && self.handshake_confirmed
            && !self.sends_0rtt()
            && self.recovery.next_pn(space) >= self.skip_pn_at
        {
            self.skip_packet_number();
        }
        let pn = self.recovery.next_pn(space);
        let pn_len = number::encoded_len(pn, self.recovery.largest_acked(space));
        let body_end = region.len() - TAG_LEN;
        let mut w = Writer::new(region.get_mut(..body_end)?);
        let c = &self.hs.cids;
        // RFC 9000 §17.2.3: before 1-RTT keys a client sends Application Data in 0-RTT
        // packets.
        let zero_rtt = space == PnSpace::ApplicationData && self.sends_0rtt();
        let long_type = match space {
            PnSpace::Initial => Some(LongType::Initial),
            PnSpace::Handshake => Some(LongType::Handshake),
            PnSpace::ApplicationData if zero_rtt => Some(LongType::ZeroRtt),
            PnSpace::ApplicationData => None,
        };
        let (pn_offset, long) = match long_type {
            Some(ty) => {
                // RFC 9000 §17.2.2: a client's Initials carry its address-validation token.
                let token = match ty {
                    LongType::Initial if self.token_state == TokenState::Initial => {
                        self.token.get(..usize::from(self.token_len)).unwrap_or(&[])
                    }
                    _ => &[],
                };
                // 0-RTT stays in the original version (RFC 9368 §2.3).
                let version = match ty {
                    LongType::ZeroRtt => self.hs.original_version,
                    _ => self.hs.version,
                };
                let h = LongHeader { ty, version, dcid: &c.remote, scid: &c.local, token };
                let off = h.emit(&mut w, pn, pn_len).ok()?;
                (off.pn_offset, Some(off))
            }
            None => {
                let phase = self.hs.keys.one_rtt.as_ref().is_some_and(|k| k.tx_phase);
                let h = ShortHeader { dcid: &c.remote, spin: false };
                (h.emit(&mut w, phase, pn, pn_len).ok()?, None)
            }
        };
        let payload_start = w.position();
        let mut f = SentFrames::EMPTY;
        let mut eliciting = false;

        if closing {
            self.write_close(space, &mut w);
        } else {
            // RFC 9000 §13.2.1: an ACK when one is due, or piggybacked on any packet sent
            // (never in 0-RTT packets, RFC 9000 §12.4).
            if has_unacked && !zero_rtt {
                let max_ranges = self.config.max_ack_ranges;
                if let Some(largest) = write_ack(self.rx(space), &mut w, now, max_ranges) {
                    f.flags |= flag::ACK;
                    f.ack_largest = largest;
                    self.rx_mut(space).on_ack_sent();
                }
            }
            if respond {
                eliciting |= self.write_response(&mut w, &mut f);
            }
            #[cfg(feature = "migration")]
            if challenge {
                eliciting |= self.write_path_challenge(now, &mut w, &mut f);
            }
            // RFC 9002 §6.2.4: probes carry retransmittable data. In the handshake spaces
            // every probe repeats the unacknowledged CRYPTO data, not only the first of two
            // (a PING-only Initial does not let the server progress; aioquic even closes
            // with PROTOCOL_VIOLATION when the Initial carrying the ClientHello is lost).
            if elicit_ok && probe && space != PnSpace::ApplicationData {
                if let Some(c) = self.hs.crypto_send.get_mut(i) {
                    if !c.wants_to_send() && c.has_unacked() {
                        c.requeue_unacked();
                    }
                }
            }
            if elicit_ok {
                eliciting |= self.write_eliciting(now, pn, space, zero_rtt, &mut w, &mut f);
                // RFC 9002 §6.2.4: a probe is ack-eliciting; PING when there is nothing
                // else.
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
        // RFC 9001 §5.4.2: the packet number and payload together span at least 4 bytes so
        // the header-protection sample exists.
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

    /// Whether a PATH_CHALLENGE waits.
    fn challenge_pending(&self) -> bool {
        #[cfg(feature = "migration")]
        return self.challenge_due();
        #[cfg(not(feature = "migration"))]
        return false;
    }

    /// The ack-eliciting frames of a packet, in order: HANDSHAKE_DONE, NEW_CONNECTION_ID,
    /// RETIRE_CONNECTION_ID, PATH_CHALLENGE, stream control frames, CRYPTO, STREAM
    /// (PATH_RESPONSE goes first, outside congestion control). Returns whether any was written.
    fn write_eliciting(
        &mut self,
        now: Instant,
        pn: u64,
        space: PnSpace,
        zero_rtt: bool,
        w: &mut Writer<'_>,
        f: &mut SentFrames,
    ) -> bool {
        let mut any = false;
        let app = space == PnSpace::ApplicationData;
        // 1-RTT only (RFC 9000 §12.4): HANDSHAKE_DONE, PATH_RESPONSE, CRYPTO.
        let one_rtt = app && !zero_rtt;
        // RFC 9000 §19.20: only a server sends HANDSHAKE_DONE (a client-only build folds
        // this away).
        if one_rtt
            && self.side() == Side::Server
            && self.handshake_done_pending
            && put_frame(w, types::HANDSHAKE_DONE, &[], &[], false)
        {
            self.handshake_done_pending = false;
            f.flags |= flag::HANDSHAKE_DONE;
            any = true;
        }
        // RFC 9000 §8.1.3, §19.7: a server's NEW_TOKEN for the client's next connection.
        #[cfg(feature = "server")]
        if one_rtt && self.token_state == TokenState::Pending {
            let token = self.token.get(..usize::from(self.token_len)).unwrap_or(&[]);
            if put_frame(w, types::NEW_TOKEN, &[], token, true) {
                self.token_state = TokenState::InFlight;
                f.flags |= flag::NEW_TOKEN;
                any = true;
            }
        }
        if one_rtt {
            // RFC 9000 §19.15, §19.16: connection-ID rotation; §8.2.1: path validation.
            any |= self.write_cid_frames(pn, w, f);
            #[cfg(feature = "migration")]
            {
                any |= self.write_path_challenge(now, w, f);
            }
        }
        let _ = now;
        if app {
            // Stream control frames (RFC 9000 §19.4–§19.14), each holding a control-table
            // slot until acknowledged or lost.
            while self.controls.has_free() && f.control_room() && w.remaining() >= 32 {
                let Some(c) = self.streams.poll_control() else { break };
                if !c.emit_whole(w) {
                    self.streams.on_control_lost(c);
                    break;
                }
                if let Some(slot) = self.controls.insert(c) {
                    f.add_control(slot);
                }
                any = true;
            }
        }
        // DATAGRAM (RFC 9221 §5): queued datagrams that fit, each sent once.
        #[cfg(feature = "datagram")]
        if one_rtt {
            while let Some(d) = self.dgram_send.front() {
                if !put_frame(w, types::DATAGRAM_LEN, &[], d, true) {
                    break;
                }
                self.dgram_send.pop();
                any = true;
            }
        }
        // CRYPTO (RFC 9000 §19.6).
        let i = si(space);
        if let Some(cs) = self.hs.crypto_send.get_mut(i).filter(|_| !zero_rtt) {
            if let Some(first) = cs.next_chunk(w.remaining()) {
                let room = crypto_frame_room(first.offset, w.remaining());
                if let Some(chunk) = cs.next_chunk(room).filter(|_| room > 0) {
                    let sent_before = cs.sent_offset();
                    let data = cs.chunk_bytes(&chunk);
                    if put_frame(w, types::CRYPTO, &[chunk.offset], data, true) {
                        cs.on_sent(&chunk);
                        f.flags |= flag::CRYPTO;
                        f.crypto_offset = chunk.offset;
                        f.crypto_len = u16::try_from(chunk.len).unwrap_or(u16::MAX);
                        count_resent(&mut self.stats, sent_before, chunk.offset, chunk.end());
                        any = true;
                    }
                }
            }
        }
        // STREAM (RFC 9000 §19.8), round-robin over the streams with data. Each frame
        // carries its length, so several (for different streams, or a stream's next chunk)
        // share the packet while it has room and the record has a slot for them: 39 small
        // requests go out in a few packets, not one packet each.
        while app && f.stream_room() && w.remaining() > STREAM_FRAME_MIN {
            let space = w.remaining().min(MAX_STREAM_CHUNK);
            let Some((id, first)) = self.streams.next_chunk(space) else { break };
            let room = stream_frame_room(id, first.offset, space);
            let next = self.streams.next_chunk(room).filter(|(id2, _)| *id2 == id);
            let Some((_, chunk)) = next else { break };
            let sent_before = self.streams.slot(id).map_or(0, |s| s.send.sent_offset());
            // Retransmissions and probes go one chunk per packet, as do chunks of a stream
            // already in the packet: a receiver without out-of-order reassembly does not
            // acknowledge a packet with any fragment past a gap, so a packet mixing the
            // chunk that fills the gap with one beyond it would be repeated, and dropped,
            // forever. Packing is for new data of different streams.
            let resend = chunk.offset < sent_before;
            // Without `stream-packing` a packet records one STREAM chunk: never packed.
            let packed = cfg!(feature = "stream-packing") && f.has(flag::STREAM);
            if packed && (resend || f.stream_chunks().any(|c| c.id == id.raw())) {
                break;
            }
            let data = self.streams.chunk_bytes(id, &chunk);
            if !put_stream(w, id.raw(), chunk.offset, data, chunk.fin) {
                break;
            }
            self.streams.on_chunk_sent(id, &chunk);
            // Room was checked and the chunk is below MAX_STREAM_CHUNK: always recorded.
            let _ = f.add_stream(id.raw(), chunk.offset, chunk.len, chunk.fin);
            count_resent(&mut self.stats, sent_before, chunk.offset, chunk.end());
            any = true;
            if resend || !cfg!(feature = "stream-packing") {
                break;
            }
        }
        any
    }

    /// CONNECTION_CLOSE for `space` (RFC 9000 §10.2.3): an application close is 0x1d in
    /// 1-RTT packets and becomes 0x1c with APPLICATION_ERROR and no reason in Initial and
    /// Handshake packets.
    fn write_close(&self, space: PnSpace, w: &mut Writer<'_>) {
        let Some(lc) = self.local_close else { return };
        let c = lc.close;
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
