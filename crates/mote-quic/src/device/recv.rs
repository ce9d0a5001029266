//! The receive path of a device connection: datagrams → packets → frames (RFC 9000 §12,
//! §13, §17; RFC 9001 §5), for a client with one path and one connection ID of its own.

use core::net::SocketAddr;

use mote_crypto::CryptoProvider;

use super::error::Error;
use super::peer_params::{DeviceHooks, PeerParams};
use super::send::{flag, Sent};
use super::streams::{Place, Sender, Streams, RECVS};
use super::{si, DeviceConnection, Peer, Res, State, TokenState};
use crate::cid::ConnectionId;
use crate::coding::{Reader, VarInt};
use crate::connection::cids::RemoteCids;
use crate::connection::recv::{level_of, retry_verified, unprotect, wire};
use crate::connection::tls::{TlsSession, CRYPTO_RANGES};
use crate::connection::{CloseReason, ConnectionClose};
use crate::error::{TransportErrorCode, WireError};
use crate::frame::{self, types, Ack};
use crate::packet::{self, Header, PacketType, Unprotected, VersionNegotiation};
use crate::recovery::{
    widen, PacketEvent, PnSpace, ReceivedRangeList, ReceivedSpace, TimeoutAction,
};
use crate::stream::{CryptoSend, Insert};
use crate::time::{Duration, Instant};
use crate::token::TOKEN_MAX;
use crate::transport_params::TransportParameters;
use crate::version::Version;

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
#[derive(Clone, Copy)]
struct Outcome {
    ack_eliciting: bool,
    /// False when STREAM or CRYPTO data could not be stored: the packet is not acknowledged
    /// (RFC 9000 §13.1), so the server sends it again.
    ackable: bool,
    /// The packet ended the connection (the server's CONNECTION_CLOSE, or a malformed
    /// frame): it is not recorded.
    closed: bool,
}

/// The parts of a device connection that acknowledgements and losses update.
pub(super) struct Sink<'a, C, S, const R: usize> {
    pub(super) streams: &'a mut Streams<S, R>,
    pub(super) crypto: &'a mut [CryptoSend<C, CRYPTO_RANGES>; 3],
    pub(super) rx: [&'a mut ReceivedSpace; 3],
    pub(super) remote_cids: &'a mut RemoteCids,
    pub(super) local_cids: &'a mut super::local_cids::LocalCids,
    /// Ack-eliciting packets declared lost (feature `stats`).
    #[cfg(feature = "stats")]
    pub(super) lost: &'a mut u64,
}

impl<'a, C, S, const R: usize> Sink<'a, C, S, R>
where
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// [`Self::on_event`] as the callback recovery takes. One function, so one closure type:
    /// ACK processing and the loss timer share one copy of recovery's loss detection (and
    /// the call is direct, which the static stack bound follows).
    pub(super) fn events(mut self) -> impl FnMut(PacketEvent<Sent>) + 'a {
        move |ev| self.on_event(ev)
    }

    /// RFC 9000 §13.3: what an acknowledged or lost packet means for the frames it carried.
    pub(super) fn on_event(&mut self, ev: PacketEvent<Sent>) {
        let (space, packet, acked) = match &ev {
            PacketEvent::Acked { space, packet } => (*space, packet, true),
            PacketEvent::Lost { space, packet } => {
                #[cfg(feature = "stats")]
                if packet.ack_eliciting {
                    *self.lost = self.lost.saturating_add(1);
                }
                (*space, packet, false)
            }
            PacketEvent::Evicted { space, packet } => (*space, packet, false),
        };
        let f = &packet.payload;
        if f.has(flag::ACK) && acked {
            // RFC 9000 §13.2.4: the peer has our ACK; stop acknowledging up to its largest.
            if let Some(rx) = self.rx.get_mut(si(space)) {
                rx.on_ack_acked(widen(f.ack_largest));
            }
        }
        if f.has(flag::CRYPTO) {
            if let Some(c) = self.crypto.get_mut(si(space)) {
                let (off, len) = (u64::from(f.crypto_offset), usize::from(f.crypto_len));
                if acked {
                    c.on_ack(off, len);
                } else {
                    c.on_lost(off, len);
                }
            }
        }
        if space != PnSpace::ApplicationData {
            return;
        }
        if f.has(flag::RETIRE) {
            self.remote_cids.on_delivery(packet.pn, acked);
        }
        if f.has(flag::NEW_CID) {
            self.local_cids.on_delivery(packet.pn, acked);
        }
        let _ = frames_delivered(self.streams, f, acked);
    }
}

/// RFC 9000 §13.3: the stream frames of a record acknowledged (`acked`) or lost: data and
/// FIN, RESET_STREAM, STOP_SENDING, MAX_STREAM_DATA and MAX_DATA (the latter two sent
/// again with their current value). Lost data is queued again without the bytes already
/// acknowledged (what a PTO probe repeats too, `DeviceConnection::requeue_oldest`).
/// Returns whether anything was queued again.
pub(super) fn frames_delivered<S, const R: usize>(
    streams: &mut Streams<S, R>,
    f: &Sent,
    acked: bool,
) -> bool
where
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    let mut queued = f.has(flag::CONTROLS);
    let fin = f.has(flag::FIN);
    // The request's flags are the control stream's shifted by one (checked below).
    const _: () = assert!(
        flag::REQUEST_DATA == flag::CONTROL_DATA << 1
            && flag::REQUEST_RESET == flag::CONTROL_RESET << 1
    );
    for k in 0..2 {
        let which = if k == 0 { Sender::Control } else { Sender::Request };
        let (data, reset) = (flag::CONTROL_DATA << k, flag::CONTROL_RESET << k);
        if !f.has(data | reset) {
            continue;
        }
        let Some(s) = streams.sender_of(which, f.request) else { continue };
        if f.has(data) {
            let (off, len) = (u64::from(f.stream_offset), usize::from(f.stream_len));
            if acked {
                s.on_ack(off, len, fin);
            } else {
                queued |= s.requeue(off, len, fin);
            }
        }
        if f.has(reset) {
            if acked {
                s.on_reset_acked();
            } else {
                s.on_reset_lost();
            }
        }
    }
    if f.has(flag::MAX_DATA) && !acked {
        let max = streams.conn_recv.max();
        streams.conn_recv.on_update_lost(max);
    }
    let current = streams.request == Some(f.request);
    for i in 0..RECVS {
        // The request's receiving half only while it is the request the record names.
        if i == 0 && !current {
            continue;
        }
        let Some(r) = streams.recv.get_mut(i) else { continue };
        if f.has(flag::max_stream_data(i)) && !acked {
            let max = r.credit().max();
            r.on_max_stream_data_lost(max);
        }
        if f.has(flag::stop_sending(i)) {
            if acked {
                r.on_stop_sending_acked();
            } else {
                r.on_stop_sending_lost();
            }
        }
    }
    queued
}

impl<P, T, C, S, const SENT: usize, const RANGES: usize> DeviceConnection<P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// A datagram from the server arrived; `data` is decrypted in place. The device has one
    /// path: the address is not used (the connection sends disable_active_migration and
    /// never migrates; a server does not migrate, RFC 9000 §9).
    pub fn handle_datagram(&mut self, now: Instant, remote: SocketAddr, data: &mut [u8]) {
        let _ = remote;
        self.set_now(now);
        match self.state {
            State::Open => {}
            State::Closing { .. } => {
                // RFC 9000 §10.2.1: answer with CONNECTION_CLOSE, at a progressively
                // lower rate (the 1st, 2nd, 4th, 8th, … datagram).
                self.closing_received = self.closing_received.saturating_add(1);
                if self.closing_received >= self.closing_answer_at {
                    self.closing_answer_at = self.closing_answer_at.saturating_mul(2);
                    self.close_pending = true;
                }
                return;
            }
            State::Draining { .. } | State::Drained => return,
        }
        let len = data.len();
        #[cfg(feature = "stats")]
        {
            self.traffic.datagrams_received = self.traffic.datagrams_received.saturating_add(1);
            self.traffic.bytes_received = self.traffic.bytes_received.saturating_add(len as u64);
        }
        let mut off = 0;
        while off < len {
            let Some(rest) = data.get_mut(off..) else { break };
            match self.on_packet(now, rest) {
                Some(n) if n > 0 => off += n,
                _ => break,
            }
            if self.is_closed() {
                break;
            }
        }
    }

    /// Processes the packet at the start of `buf`; returns its length (the next coalesced
    /// packet starts there) or `None` when the rest of the datagram is dropped. Out of
    /// line: inlined into the application's receive call it took 0.8 KB more.
    #[inline(never)]
    fn on_packet(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let hdr = {
            let parsed = packet::parse(buf, self.hs.cids.local.len(), false).ok()?;
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
                Header::UnsupportedVersion(_) => return None,
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
        if !self.accept_header(&hdr) {
            return Some(len);
        }
        let pkt = buf.get_mut(..len)?;
        let space = PnSpace::of(hdr.ptype);
        let largest = self.rx(space).largest_received();
        let u = match self.unprotect(now, hdr.ptype, pkt, hdr.pn_offset, largest) {
            Ok(u) => u,
            // RFC 9000 §17.2, §17.3.1: reserved bits set in an authenticated packet.
            // RFC 9001 §6.4: a packet opened with keys out of packet-number order; a provider
            // fault on an authenticated packet (INTERNAL_ERROR).
            Err(e @ (WireError::ReservedBitsSet | WireError::KeyUpdate | WireError::Internal)) => {
                self.fail(Error::bare(e.code()));
                return None;
            }
            // RFC 9001 §5.5: packets that fail to decrypt are discarded; §6.6: 1-RTT
            // failures count against the integrity limit (AEAD_LIMIT_REACHED at it).
            Err(_) => {
                if hdr.ptype == PacketType::OneRtt && self.hs.keys.one_rtt.is_some() {
                    self.auth_failures = self.auth_failures.saturating_add(1);
                    if self.auth_failures >= self.integrity_limit() {
                        self.fail(Error::bare(TransportErrorCode::AEAD_LIMIT_REACHED));
                        return None;
                    }
                }
                return Some(len);
            }
        };
        // RFC 9000 §12.3 lets an endpoint close before packet numbers run out: received
        // packet numbers are recorded in 32 bits on a device, so an authenticated packet
        // beyond that closes the connection (INTERNAL_ERROR) instead of being dropped as a
        // duplicate again and again.
        if !ReceivedRangeList::can_track(u.pn) {
            self.fail(Error::bare(TransportErrorCode::INTERNAL_ERROR));
            return None;
        }
        // RFC 9000 §12.3: a packet number already processed is a duplicate.
        if self.rx(space).is_duplicate(u.pn) {
            return Some(len);
        }
        // RFC 9000 §7.2: the client adopts the Source Connection ID of the server's first
        // (authenticated) packet as its Destination Connection ID.
        if hdr.long && !self.remote_cid_set {
            self.hs.cids.remote = hdr.scid;
            self.hs.cids.peer_scid = hdr.scid;
            self.remote_cids.set_handshake_cid(hdr.scid);
            self.remote_cid_set = true;
        }
        self.any_packet = true;
        let payload = pkt.get(u.payload_range())?;
        self.local_cids.received_on(&hdr.dcid);
        match self.process_frames(now, space, hdr.ptype, payload) {
            Err(e) => {
                self.fail(e);
                return None;
            }
            Ok(o) => {
                if !o.closed {
                    let rx = self.rx_mut(space);
                    if o.ackable {
                        // The device reads no ECN marks, so its ACKs carry no ECN counts
                        // (`send::put_ack` writes type 0x02 only, RFC 9000 §19.3.2): if ECN
                        // reading is added here, `put_ack` must write 0x03 with the counts.
                        let ecn = crate::recovery::Ecn::NotEct;
                        let _ = rx.on_packet_received(u.pn, now, o.ack_eliciting, ecn);
                    } else {
                        // RFC 9000 §12.3, §13.1: processed, so a copy is a duplicate; its
                        // dropped data unacknowledged, so the server sends it again.
                        rx.on_packet_unacked(u.pn);
                    }
                }
                // RFC 9000 §10.1: a packet successfully processed restarts the idle timer.
                self.idle_start = now;
                self.ack_eliciting_since_recv = false;
            }
        }
        Some(len)
    }

    /// The checks that need no keys: connection IDs, version, token (RFC 9000 §7.2,
    /// §17.2.2, §17.2.3).
    fn accept_header(&self, h: &Hdr) -> bool {
        let c = &self.hs.cids;
        // Every packet is addressed to one of our connection IDs (RFC 9000 §5.1.1).
        if !self.local_cids.accepts(&h.dcid, &c.local) {
            return false;
        }
        if h.long {
            // Long headers are in the version in use; a server sends no 0-RTT, and its
            // Initials carry no token (RFC 9000 §17.2.2).
            if h.version != self.hs.version
                || h.ptype == PacketType::ZeroRtt
                || (h.ptype == PacketType::Initial && !h.token_empty)
            {
                return false;
            }
            // After the first one, the server's long headers carry the SCID we adopted, even
            // once Retire Prior To moved our DCID on (RFC 9000 §7.2, §5.1.2).
            if self.remote_cid_set && h.scid != c.peer_scid {
                return false;
            }
        }
        true
    }

    /// RFC 9001 §5.4, §5.3, §6: removes header, then packet protection (the general
    /// connection's [`unprotect`]; a client opens no 0-RTT packets).
    fn unprotect(
        &mut self,
        now: Instant,
        ptype: PacketType,
        pkt: &mut [u8],
        pn_offset: usize,
        largest: Option<u64>,
    ) -> Result<Unprotected, WireError> {
        let pto = self.recovery.pto_period();
        unprotect(&mut self.hs, pto, now, ptype, false, pkt, pn_offset, largest)
    }

    /// RFC 9000 §17.2.5.2, RFC 9001 §5.8: the client acts on the first valid Retry before
    /// any other packet from the server: new DCID and Initial keys, its token in every
    /// later Initial, and what the Initial and 0-RTT packets carried sent again (packet
    /// numbers go on, §17.2.5.3).
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
        // RFC 9000 §17.2.5.2: at most one Retry, none after a server packet, addressed to
        // us in our version with a non-empty token; §17.2.5.1: its SCID differs from the
        // DCID we sent.
        let acceptable = !self.retried
            && !self.any_packet
            && version == self.hs.version
            && dcid == &c.local[..]
            && !token.is_empty()
            && token.len() <= TOKEN_MAX
            && scid != &c.original_dcid[..];
        let Some(new_dcid) = ConnectionId::new(scid).filter(|_| acceptable) else { return };
        // RFC 9001 §5.8: the integrity tag over the pseudo-packet with our original DCID.
        if !retry_verified(&self.hs.provider, version, &c.original_dcid, packet) {
            return;
        }
        let provider = &self.hs.provider;
        if self
            .hs
            .keys
            .install_initial(provider, version, &new_dcid, crate::transport_params::Side::Client)
            .is_err()
        {
            // The old keys were replaced by nothing: a provider fault; the attempt fails.
            let internal = ConnectionClose::transport(TransportErrorCode::INTERNAL_ERROR, None);
            self.close_reason = Some(CloseReason::Local(internal));
            self.state = State::Drained;
            return;
        }
        self.hs.cids.retry_scid = Some(new_dcid);
        self.retried = true;
        self.hs.cids.remote = new_dcid;
        self.remote_cids.set_handshake_cid(new_dcid);
        if let Some(dst) = self.token.get_mut(..token.len()) {
            dst.copy_from_slice(token);
            self.token_len = token.len() as u8;
            self.token_state = TokenState::Initial;
        }
        // RFC 9002 §6.3: a Retry resets loss recovery for the Initial space.
        self.recovery.discard_space(PnSpace::Initial, now);
        self.hs.crypto_send[0].requeue_unacked();
        if self.hs.keys.zero_rtt().is_some() {
            self.requeue_zero_rtt(now);
        }
    }

    /// RFC 9000 §6.2: a Version Negotiation packet answering our first Initial and not
    /// listing our version ends the attempt (the device speaks one version).
    #[inline(never)]
    fn on_version_negotiation(&mut self, vn: &VersionNegotiation<'_>) {
        let c = &self.hs.cids;
        // RFC 9000 §17.2.1: a client that processed any other packet, a Retry included,
        // discards Version Negotiation.
        if self.any_packet
            || self.retried
            || !vn.is_valid_for_client(self.hs.original_version, &c.original_dcid, &c.local)
        {
            return;
        }
        self.close_reason = Some(CloseReason::VersionNegotiation);
        self.state = State::Drained;
    }

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

    /// RFC 9000 §12.4: every frame of the packet, checked against the permission table of
    /// its packet type (Table 3) and acted on as it is read; any malformed frame ends the
    /// packet as one CONNECTION_CLOSE. An unknown frame type is FRAME_ENCODING_ERROR.
    fn process_frames(
        &mut self,
        now: Instant,
        space: PnSpace,
        ptype: PacketType,
        payload: &[u8],
    ) -> Res<Outcome> {
        let mut out = Outcome { ack_eliciting: false, ackable: true, closed: false };
        let mut r = Reader::new(payload);
        let malformed: WireError = 'parse: {
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
                out.ack_eliciting |= frame::is_ack_eliciting(ty);
                match ty {
                    types::PADDING => {
                        frame::skip_padding(&mut r);
                    }
                    types::PING => {}
                    types::ACK | types::ACK_ECN => {
                        let ack = parsed!(Ack::parse_body(ty, &mut r));
                        self.on_ack(now, space, &ack)?;
                    }
                    types::HANDSHAKE_DONE => self.on_handshake_done(now, ty)?,
                    // RFC 9221 §3: DATAGRAM frames without our max_datagram_frame_size (the
                    // device offers none) are a PROTOCOL_VIOLATION.
                    #[cfg(feature = "datagram")]
                    types::DATAGRAM | types::DATAGRAM_LEN => return Err(Error::violation(ty)),
                    // The other frames' bodies, read by one parser (`frame::read_fields`).
                    _ => {
                        let (fields, data) = parsed!(frame::read_fields(ty, &mut r));
                        let [a, b, _] = fields.map(VarInt::into_inner);
                        let stored = match ty {
                            types::CRYPTO => {
                                self.on_crypto(now, space, b, data)? != Insert::Dropped
                            }
                            // RFC 9000 §19.7, §8.1.3: the latest token is kept for the next
                            // connection; one longer than we keep is ignored.
                            types::NEW_TOKEN => {
                                self.on_new_token(data);
                                true
                            }
                            types::NEW_CONNECTION_ID => {
                                // The connection ID, then its 16-byte reset token.
                                let Some((cid, token)) = data.split_last_chunk() else {
                                    break 'parse WireError::Truncated;
                                };
                                self.on_new_connection_id(a, b, cid, token)?;
                                true
                            }
                            types::RETIRE_CONNECTION_ID => {
                                self.on_retire_connection_id(a)?;
                                true
                            }
                            // RFC 9000 §8.2.2: answer the newest PATH_CHALLENGE with
                            // PATH_RESPONSE. §8.2.3: we send no PATH_CHALLENGE; an unsolicited
                            // response is ignored.
                            types::PATH_CHALLENGE => {
                                self.path_response = data.try_into().ok();
                                true
                            }
                            types::PATH_RESPONSE => true,
                            // RFC 9000 §10.2.2: the server closed; drain.
                            types::CONNECTION_CLOSE | types::CONNECTION_CLOSE_APP => {
                                let application = ty == types::CONNECTION_CLOSE_APP;
                                let frame_type = if application { None } else { Some(b) };
                                let c = ConnectionClose::new(a, frame_type, application, data);
                                self.enter_draining(now, c);
                                out.closed = true;
                                return Ok(out);
                            }
                            // The stream and flow-control frames.
                            _ => self.on_stream_frame(ty, fields, data)?,
                        };
                        if !stored {
                            out.ackable = false;
                        }
                    }
                }
            }
            return Ok(out);
        };
        // The connection closes here, with the full frame type: an unknown one may be too
        // large for `Error` (RFC 9000 §12.4: a varint up to 2^62 - 1).
        self.enter_closing(wire(malformed));
        out.closed = true;
        Ok(out)
    }

    /// RFC 9000 §19.15, §5.1.1, §5.1.2: the server issued a connection ID; stored up to our
    /// active_connection_id_limit, with Retire Prior To honoured (RETIRE_CONNECTION_ID).
    #[inline(never)]
    fn on_new_connection_id(
        &mut self,
        seq: u64,
        retire_prior_to: u64,
        cid: &[u8],
        token: &crate::transport_params::ResetToken,
    ) -> Res {
        let ty = types::NEW_CONNECTION_ID;
        // "An endpoint that is sending packets with a zero-length Destination Connection ID
        // MUST treat receipt of a NEW_CONNECTION_ID frame as a connection error of type
        // PROTOCOL_VIOLATION."
        if self.hs.cids.remote.is_empty() {
            return Err(Error::violation(ty));
        }
        let before = self.remote_cids.active_seq();
        self.remote_cids
            .on_new_cid(seq, retire_prior_to, cid, token)
            .map_err(|code| Error::frame(code, ty))?;
        // RFC 9000 §5.1.2: Retire Prior To retired the connection ID in use; address the
        // server with the replacement from now on.
        if self.remote_cids.active_seq() != before {
            if let Some(now) = self.remote_cids.active() {
                self.hs.cids.remote = now.cid;
            }
        }
        Ok(())
    }

    /// RFC 9000 §8.1.3, §19.7: the server's latest NEW_TOKEN token, kept for the next
    /// connection.
    fn on_new_token(&mut self, token: &[u8]) {
        let Some(dst) = self.token.get_mut(..token.len()) else { return };
        dst.copy_from_slice(token);
        self.token_len = token.len() as u8;
        self.token_state = TokenState::Received;
    }

    /// RFC 9000 §19.20, RFC 9001 §4.1.2: HANDSHAKE_DONE confirms the handshake; one before
    /// the TLS handshake completed cannot be genuine (PROTOCOL_VIOLATION).
    fn on_handshake_done(&mut self, now: Instant, ty: u64) -> Res {
        if !self.handshake_complete || !self.tls.is_handshake_complete() {
            return Err(Error::violation(ty));
        }
        if !self.handshake_confirmed {
            self.handshake_confirmed = true;
            // RFC 9001 §4.9.2: the Handshake keys go once the handshake is confirmed.
            self.hs.keys.discard_zero_rtt();
            self.recovery.on_handshake_confirmed(now);
            self.discard_space(PnSpace::Handshake, now);
            self.issue_spare_cid();
        }
        Ok(())
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

    /// A CRYPTO frame (RFC 9000 §19.6): buffered (§7.5: beyond the buffer is
    /// CRYPTO_BUFFER_EXCEEDED, after the handshake too), in-order bytes handed to TLS.
    fn on_crypto(&mut self, now: Instant, space: PnSpace, offset: u64, data: &[u8]) -> Res<Insert> {
        let i = si(space);
        let level = level_of(space);
        let Some(recv) = self.crypto_recv.get_mut(i) else { return Ok(Insert::Dropped) };
        let insert =
            recv.on_crypto(offset, data).map_err(|e| Error::frame(e.code(), types::CRYPTO))?;
        // RFC 9002 §6.2.3: the server's CRYPTO data again means it did not get ours (a
        // client never sends 1-RTT CRYPTO, so only the handshake spaces have any).
        if insert == Insert::Duplicate {
            self.hs.resend_crypto_early(i, &mut self.fast_resends);
        }
        while let Some(recv) = self.crypto_recv.get_mut(i) {
            let chunk = recv.peek();
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            let hooks = &mut DeviceHooks { hs: &mut self.hs, peer: &mut self.peer_params };
            let r = self.tls.read_handshake(level, chunk, hooks);
            recv.consume(n);
            r.map_err(Error::tls)?;
        }
        self.on_handshake_progress(now)?;
        Ok(insert)
    }

    /// Acts on what the TLS session reported.
    #[inline(never)]
    fn on_handshake_progress(&mut self, now: Instant) -> Res {
        let sig = core::mem::take(&mut self.hs.signals);
        if sig.handshake_keys {
            self.recovery.on_handshake_keys_available(now);
        }
        if let Some(tp) = self.peer_params.take() {
            // RFC 9000 §7.4.1: "a server that accepts 0-RTT data MUST NOT set values for
            // the following parameters ... that are smaller than the remembered values".
            #[cfg(feature = "resumption")]
            if let Some(old) = self.remembered_limits {
                let accepted =
                    sig.early_data == Some(true) || self.tls.early_data_accepted() == Some(true);
                let new = tp.zero_rtt_limits();
                if accepted && !old.kept_by(&new) {
                    return Err(Error::bare(TransportErrorCode::PROTOCOL_VIOLATION));
                }
            }
            // RFC 9001 §4.6.2: after rejected 0-RTT the server's new limits replace the
            // remembered ones, even lower ones; 0-RTT data they cannot carry again ends the
            // connection here rather than break them.
            if !self.apply_peer_params(&tp) {
                return Err(Error::bare(TransportErrorCode::INTERNAL_ERROR));
            }
        }
        if sig.tickets > 0 {
            self.ticket_ready = true;
        }
        // RFC 9001 §4.9.3: a client discards its 0-RTT keys once it has 1-RTT keys.
        if sig.one_rtt_keys {
            self.hs.keys.discard_zero_rtt();
        }
        if sig.early_data == Some(false) {
            // RFC 9001 §4.6.2: rejected 0-RTT data is sent again in 1-RTT packets.
            self.requeue_zero_rtt(now);
            self.hs.keys.discard_zero_rtt();
            self.early_rejected = true;
        }
        if sig.complete {
            self.handshake_complete = true;
        }
        Ok(())
    }

    /// The 0-RTT packets were not processed (a Retry, or rejected early data): their
    /// records are forgotten without a congestion reaction and what they carried is queued
    /// again.
    #[inline(never)]
    fn requeue_zero_rtt(&mut self, now: Instant) {
        self.streams.requeue_all();
        self.recovery.discard_space(PnSpace::ApplicationData, now);
    }

    /// RFC 9000 §7.4, §18.2: the server's transport parameters (validated by the TLS
    /// hook): flow-control limits and stream counts, max_ack_delay, idle timeout. False
    /// when what the streams already took does not fit them ([`Streams::on_peer_params`]).
    #[inline(never)]
    pub(super) fn apply_peer_params(&mut self, tp: &PeerParams) -> bool {
        use super::peer_params::{ACK_DELAY_EXPONENT, IDLE_TIMEOUT, MAX_ACK_DELAY};
        let fits = self.streams.on_peer_params(tp);
        self.recovery.set_peer_max_ack_delay(Duration::from_millis(tp.get(MAX_ACK_DELAY)));
        // RFC 9000 §10.1: the smaller of both sides' non-zero max_idle_timeout.
        let peer_idle = tp.get(IDLE_TIMEOUT);
        let idle = &mut self.settings.idle_timeout_ms;
        if peer_idle != 0 && (*idle == 0 || peer_idle < *idle) {
            *idle = peer_idle;
        }
        self.peer = Some(Peer {
            max_udp_payload_size: tp.get(super::peer_params::MAX_UDP_PAYLOAD_SIZE),
            // At most 20 (checked by the decoder).
            ack_delay_exponent: tp.get(ACK_DELAY_EXPONENT) as u8,
        });
        fits
    }

    /// A stream or flow-control frame (RFC 9000 §19.4–§19.14) for the fixed stream set, as
    /// its fields ([`frame::read_fields`]: `v` in the order sent, `data` for STREAM).
    /// Returns false when its data was dropped (the packet is then not acknowledged).
    #[inline(never)]
    fn on_stream_frame(&mut self, ty: u64, v: [VarInt; 3], data: &[u8]) -> Res<bool> {
        // The stream errors become one CONNECTION_CLOSE here, not one per call.
        self.stream_frame(ty, v, data).map_err(|e| Error::frame(e.code(), ty))
    }

    /// [`Self::on_stream_frame`] with the stream layer's error.
    fn stream_frame(
        &mut self,
        ty: u64,
        v: [VarInt; 3],
        data: &[u8],
    ) -> Result<bool, crate::stream::StreamError> {
        let s = &mut self.streams;
        let [a, b, c] = v.map(VarInt::into_inner);
        // The frames naming a stream check its ID against the fixed set through one call:
        // STREAM, RESET_STREAM and STREAM_DATA_BLOCKED concern our receiving half,
        // STOP_SENDING and MAX_STREAM_DATA our sending half.
        let receiving = match ty {
            types::STREAM..=types::STREAM_MAX
            | types::RESET_STREAM
            | types::STREAM_DATA_BLOCKED => true,
            types::STOP_SENDING | types::MAX_STREAM_DATA => false,
            // RFC 9000 §19.9: MAX_DATA.
            types::MAX_DATA => {
                s.conn_send.on_max(a);
                return Ok(true);
            }
            // RFC 9000 §19.11: MAX_STREAMS.
            types::MAX_STREAMS_BIDI | types::MAX_STREAMS_UNI => {
                s.on_max_streams(frame::dir_of(ty), a);
                return Ok(true);
            }
            // DATA_BLOCKED, STREAMS_BLOCKED: informational (RFC 9000 §19.12, §19.14).
            _ => return Ok(true),
        };
        // The receiving half's index, or our sending half.
        let (recv, send) = match s.check_id(a, receiving)? {
            Place::Request => (0, Sender::Request),
            Place::PeerUni(i) => (i + 1, Sender::Request),
            Place::Control => (0, Sender::Control),
            // A finished request stream: its frames are ignored.
            Place::Gone => return Ok(true),
        };
        match ty {
            types::STREAM..=types::STREAM_MAX => {
                let fin = ty & types::STREAM_FIN != 0;
                let r = s.on_stream(recv, b, data, fin)?;
                return Ok(r != Insert::Dropped);
            }
            types::RESET_STREAM => s.on_reset(recv, b, c)?,
            types::STOP_SENDING => s.on_stop_sending(send, b),
            types::MAX_STREAM_DATA => {
                if let Some((snd, _)) = s.sender(a) {
                    snd.on_max_stream_data(b);
                }
            }
            _ => {}
        }
        Ok(true)
    }

    /// The ACK frame of `space` (RFC 9000 §19.3; RFC 9002 §5, §6): acknowledged and lost
    /// packets' frames delivered or queued again. An ACK of a packet never sent (or
    /// skipped, §21.4) is a PROTOCOL_VIOLATION.
    #[inline(never)]
    fn on_ack(&mut self, now: Instant, space: PnSpace, ack: &Ack<'_>) -> Res {
        let exp = self
            .peer
            .map_or(TransportParameters::DEFAULT_ACK_DELAY_EXPONENT, |p| p.ack_delay_exponent);
        let ty = ack.frame_type();
        let (recovery, sink) = self.recovery_and_sink();
        recovery
            .on_ack_frame(space, ack, exp, now, sink.events())
            .map_err(|e| Error::frame(e.code(), ty))?;
        // RFC 9001 §6.1, §6.5: when the next key update may start (it reads Application
        // Data packet numbers only, so any space's ACK may ask: no branch).
        self.hs.keys.one_rtt.on_ack(&self.recovery, now);
        Ok(())
    }

    /// Loss recovery and the parts its events update, borrowed together.
    #[allow(clippy::type_complexity)]
    fn recovery_and_sink(
        &mut self,
    ) -> (
        &mut crate::recovery::Recovery<
            Sent,
            crate::recovery::NewReno,
            { crate::connection::HANDSHAKE_SENT },
            { crate::connection::HANDSHAKE_SENT },
            SENT,
        >,
        Sink<'_, C, S, RANGES>,
    ) {
        let sink = Sink {
            streams: &mut self.streams,
            crypto: &mut self.hs.crypto_send,
            rx: [&mut self.rx_initial, &mut self.rx_handshake, &mut self.rx_data],
            remote_cids: &mut self.remote_cids,
            local_cids: &mut self.local_cids,
            #[cfg(feature = "stats")]
            lost: &mut self.traffic.packets_lost,
        };
        (&mut self.recovery, sink)
    }

    /// The loss detection timer fired (RFC 9002 §6.1.2, §6.2).
    pub(super) fn on_loss_timeout(&mut self, now: Instant) {
        let (recovery, sink) = self.recovery_and_sink();
        let action = recovery.on_timeout(now, sink.events());
        if let TimeoutAction::SendProbes { space, count, .. } = action {
            self.ptos = self.ptos.saturating_add(1);
            let i = si(space);
            if let Some(p) = self.probes.get_mut(i) {
                *p = (*p).max(count);
            }
            // RFC 9002 §6.2.4: a probe carries in-flight data; in the handshake spaces
            // every unacknowledged CRYPTO byte.
            if let Some(c) = self.hs.crypto_send.get_mut(i) {
                c.requeue_unacked();
            }
            // RFC 9002 §6.2.1: the Initial PTO also covers Handshake data sent with it.
            if space == PnSpace::Initial {
                let h = si(PnSpace::Handshake);
                if let Some(c) = self.hs.crypto_send.get_mut(h).filter(|c| c.has_unacked()) {
                    c.requeue_unacked();
                    if let Some(p) = self.probes.get_mut(h) {
                        *p = (*p).max(1);
                    }
                }
            }
            // Stream data: the probes repeat the stream data and control frames of the
            // oldest unacknowledged packets, one packet's worth per probe (a receiver
            // without reassembly drops data past a gap, so new data alone would stall).
            if space == PnSpace::ApplicationData {
                self.requeue_oldest(usize::from(count.max(1)));
            }
        }
    }

    /// Queues again what the `n` oldest unacknowledged Application Data packets carried
    /// (their records stay: an acknowledgement or loss of the original is handled as
    /// usual).
    fn requeue_oldest(&mut self, n: usize) {
        let mut left = n;
        let streams = &mut self.streams;
        for f in self.recovery.application_packets().ack_eliciting_payloads() {
            if left == 0 {
                break;
            }
            // The stream data and control frames, queued again as if the packet were
            // lost.
            if frames_delivered(streams, f, false) {
                left -= 1;
            }
        }
    }
}
