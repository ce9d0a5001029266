//! Connection IDs after the handshake (RFC 9000 §5.1): the ones we issue to the peer and the
//! ones the peer issued to us, in fixed tables.
//!
//! Frames that must be delivered (NEW_CONNECTION_ID, RETIRE_CONNECTION_ID) are tracked by
//! the packet number they last left in: an acknowledgement of that packet settles them, a
//! loss queues them again. A sent-packet record carries only a flag saying "look here".

use crate::cid::ConnectionId;
use crate::error::TransportErrorCode;
use crate::transport_params::ResetToken;

/// Connection IDs we keep issued at once, the handshake one included (we issue up to the
/// smaller of this and the peer's active_connection_id_limit, RFC 9000 §5.1.1). Without
/// `migration` two: one spare, so a server can follow a NAT rebinding with a fresh ID.
pub const LOCAL_CIDS: usize = if cfg!(feature = "migration") { 4 } else { 2 };

/// The active_connection_id_limit we advertise (RFC 9000 §18.2; at least 2): connection IDs
/// of the peer we store at once. Without `migration` the minimum, 2 (we never switch
/// ourselves; the peer may still rotate).
pub const REMOTE_CIDS: usize = if cfg!(feature = "migration") { 4 } else { 2 };

/// RETIRE_CONNECTION_ID frames waiting to be sent or acknowledged at most. A peer forcing
/// more retirements than this (NEW_CONNECTION_ID with ever-growing Retire Prior To while
/// our retirements are not acknowledged) gets CONNECTION_ID_LIMIT_ERROR, as quic-go and
/// ngtcp2 do.
pub const RETIRE_QUEUE: usize = 2 * REMOTE_CIDS;

/// Where a frame we must deliver stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Delivery {
    /// Waiting to be sent (again).
    Pending,
    /// In flight in the packet with this number.
    Sent(u64),
    /// Acknowledged.
    Acked,
}

impl Delivery {
    fn on_ack(&mut self, pn: u64) -> bool {
        if *self == Delivery::Sent(pn) {
            *self = Delivery::Acked;
            return true;
        }
        false
    }

    fn on_lost(&mut self, pn: u64) {
        if *self == Delivery::Sent(pn) {
            *self = Delivery::Pending;
        }
    }
}

/// One of our connection IDs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Issued {
    pub(crate) seq: u64,
    pub(crate) cid: ConnectionId,
    #[cfg_attr(not(feature = "cid-rotation"), allow(dead_code))]
    pub(crate) token: ResetToken,
    frame: Delivery,
}

/// The connection IDs we issued and have not seen retired.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalCids {
    slots: [Option<Issued>; LOCAL_CIDS],
    next_seq: u64,
    /// How many to keep issued: min(peer's active_connection_id_limit, LOCAL_CIDS); 1 until
    /// the peer's transport parameters and 1-RTT keys allow more.
    target: usize,
    /// Connection IDs issued after the handshake one, over the connection's life.
    issued_total: u64,
}

impl LocalCids {
    /// The table with the handshake connection ID (sequence 0).
    pub(crate) const fn new(cid: ConnectionId, token: ResetToken) -> Self {
        let mut slots = [None; LOCAL_CIDS];
        slots[0] = Some(Issued { seq: 0, cid, token, frame: Delivery::Acked });
        Self { slots, next_seq: 1, target: 1, issued_total: 0 }
    }

    /// Sets how many connection IDs to keep issued from the peer's limit.
    pub(crate) fn set_target(&mut self, peer_limit: u64) {
        let t = usize::try_from(peer_limit).unwrap_or(usize::MAX);
        self.target = t.clamp(1, LOCAL_CIDS);
    }

    /// The sequence number of `cid` if it is one of ours.
    pub(crate) fn seq_of(&self, cid: &[u8]) -> Option<u64> {
        self.slots.iter().flatten().find(|i| *i.cid == *cid).map(|i| i.seq)
    }

    /// Our live connection IDs (what an endpoint routes to this connection).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Issued> + '_ {
        self.slots.iter().flatten()
    }

    fn live(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Whether another connection ID should be issued.
    pub(crate) fn wants_new(&self) -> bool {
        self.live() < self.target
    }

    /// Connection IDs issued after the handshake one.
    pub(crate) const fn issued_total(&self) -> u64 {
        self.issued_total
    }

    /// Records a new connection ID (its NEW_CONNECTION_ID frame is then pending). With
    /// `pre_sent` it was handed over another way (the preferred_address transport
    /// parameter) and needs no frame. False when the table is full.
    pub(crate) fn issue(&mut self, cid: ConnectionId, token: ResetToken, pre_sent: bool) -> bool {
        let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) else { return false };
        let frame = if pre_sent { Delivery::Acked } else { Delivery::Pending };
        *slot = Some(Issued { seq: self.next_seq, cid, token, frame });
        self.next_seq += 1;
        self.issued_total += 1;
        true
    }

    /// Whether a NEW_CONNECTION_ID frame waits.
    pub(crate) fn has_pending(&self) -> bool {
        self.slots.iter().flatten().any(|i| i.frame == Delivery::Pending)
    }

    /// The next NEW_CONNECTION_ID to send, marked as sent in packet `pn`.
    #[cfg_attr(not(feature = "cid-rotation"), allow(dead_code))]
    pub(crate) fn poll_frame(&mut self, pn: u64) -> Option<Issued> {
        let i = self.slots.iter_mut().flatten().find(|i| i.frame == Delivery::Pending)?;
        i.frame = Delivery::Sent(pn);
        Some(*i)
    }

    /// A frame polled by [`Self::poll_frame`] did not fit after all.
    #[cfg_attr(not(feature = "cid-rotation"), allow(dead_code))]
    pub(crate) fn unpoll(&mut self, seq: u64) {
        if let Some(i) = self.slots.iter_mut().flatten().find(|i| i.seq == seq) {
            i.frame = Delivery::Pending;
        }
    }

    #[cfg_attr(not(feature = "cid-rotation"), allow(dead_code))]
    pub(crate) fn on_ack(&mut self, pn: u64) {
        for i in self.slots.iter_mut().flatten() {
            i.frame.on_ack(pn);
        }
    }

    #[cfg_attr(not(feature = "cid-rotation"), allow(dead_code))]
    pub(crate) fn on_lost(&mut self, pn: u64) {
        for i in self.slots.iter_mut().flatten() {
            i.frame.on_lost(pn);
        }
    }

    /// RFC 9000 §19.16: the peer retired `seq`, carried in a packet sent to `dcid`. A
    /// sequence number never issued, or the connection ID the packet itself was sent to, is
    /// a PROTOCOL_VIOLATION. Returns the retired connection ID (`None` if it was already
    /// retired).
    pub(crate) fn on_retire(
        &mut self,
        seq: u64,
        dcid: &[u8],
    ) -> Result<Option<ConnectionId>, TransportErrorCode> {
        if seq >= self.next_seq {
            return Err(TransportErrorCode::PROTOCOL_VIOLATION);
        }
        let Some(slot) = self.slots.iter_mut().find(|s| s.is_some_and(|i| i.seq == seq)) else {
            return Ok(None);
        };
        let Some(i) = *slot else { return Ok(None) };
        if *i.cid == *dcid {
            return Err(TransportErrorCode::PROTOCOL_VIOLATION);
        }
        *slot = None;
        Ok(Some(i.cid))
    }
}

/// A peer connection ID's sequence number as [`RemoteCids`] keeps it: `u64` on hosts, `u32`
/// in builds without `std` (like `stream::Offset`, ARCHITECTURE.md "32-bit books"). The
/// interface stays `u64`; a peer's value is checked before it is narrowed
/// ([`RemoteCids::on_new_cid`]).
#[cfg(feature = "std")]
pub(crate) type PeerSeq = u64;
/// A peer connection ID's sequence number as [`RemoteCids`] keeps it.
#[cfg(not(feature = "std"))]
pub(crate) type PeerSeq = u32;

/// `x` as a [`PeerSeq`], if it fits.
#[allow(clippy::cast_possible_truncation, clippy::unnecessary_cast)]
const fn narrow_seq(x: u64) -> Option<PeerSeq> {
    if x > PeerSeq::MAX as u64 {
        None
    } else {
        Some(x as PeerSeq)
    }
}

/// A [`PeerSeq`] as a `u64`.
#[allow(clippy::unnecessary_cast)]
const fn wide_seq(x: PeerSeq) -> u64 {
    x as u64
}

/// A connection ID the peer issued.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerCid {
    pub(crate) seq: PeerSeq,
    pub(crate) cid: ConnectionId,
    pub(crate) token: Option<ResetToken>,
}

/// A retirement to deliver.
#[derive(Clone, Copy, Debug)]
struct Retire {
    seq: PeerSeq,
    frame: Delivery,
}

/// A NEW_CONNECTION_ID rule the peer broke (RFC 9000 §19.15, §5.1.1), its transport error
/// code as the discriminant: one byte, returned in a register by the helpers (a
/// `TransportErrorCode` result went through memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum CidError {
    FrameEncoding = TransportErrorCode::FRAME_ENCODING_ERROR.0 as u8,
    ConnectionIdLimit = TransportErrorCode::CONNECTION_ID_LIMIT_ERROR.0 as u8,
    ProtocolViolation = TransportErrorCode::PROTOCOL_VIOLATION.0 as u8,
}

impl CidError {
    const fn code(self) -> TransportErrorCode {
        TransportErrorCode(self as u64)
    }
}

/// The peer's connection IDs we may address it with, and our retirements of old ones.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RemoteCids {
    slots: [Option<PeerCid>; REMOTE_CIDS],
    /// Sequence number of the connection ID in use.
    active: PeerSeq,
    /// The largest Retire Prior To received.
    retire_prior_to: PeerSeq,
    retire: [Option<Retire>; RETIRE_QUEUE],
}

impl RemoteCids {
    /// The table with the peer's handshake connection ID (sequence 0) and, from a server's
    /// transport parameters, its stateless reset token.
    pub(crate) const fn new(cid: ConnectionId) -> Self {
        let mut slots = [None; REMOTE_CIDS];
        slots[0] = Some(PeerCid { seq: 0, cid, token: None });
        Self { slots, active: 0, retire_prior_to: 0, retire: [None; RETIRE_QUEUE] }
    }

    /// Replaces the handshake connection ID (a client adopting the server's Source
    /// Connection ID, RFC 9000 §7.2) while nothing else is known.
    pub(crate) fn set_handshake_cid(&mut self, cid: ConnectionId) {
        if let Some(Some(p)) = self.slots.iter_mut().find(|s| s.is_some_and(|p| p.seq == 0)) {
            p.cid = cid;
        }
    }

    /// The stateless reset token of sequence `seq` (the server's
    /// stateless_reset_token transport parameter for sequence 0).
    pub(crate) fn set_token(&mut self, seq: u64, token: ResetToken) {
        let found = self.slots.iter_mut().find(|s| s.is_some_and(|p| wide_seq(p.seq) == seq));
        if let Some(Some(p)) = found {
            p.token = Some(token);
        }
    }

    /// The stored connection ID of sequence `seq`.
    #[cfg(feature = "migration")]
    pub(crate) fn get(&self, seq: u64) -> Option<PeerCid> {
        self.slots.iter().flatten().find(|p| wide_seq(p.seq) == seq).copied()
    }

    /// The sequence number of the connection ID in use.
    pub(crate) const fn active_seq(&self) -> u64 {
        wide_seq(self.active)
    }

    /// The connection ID in use.
    pub(crate) fn active(&self) -> Option<PeerCid> {
        self.slots.iter().flatten().find(|p| p.seq == self.active).copied()
    }

    #[cfg(feature = "stateless-reset")]
    /// Stateless reset tokens of every stored connection ID (RFC 9000 §10.3.1).
    pub(crate) fn tokens(&self) -> impl Iterator<Item = &ResetToken> + '_ {
        self.slots.iter().flatten().filter_map(|p| p.token.as_ref())
    }

    /// A stored connection ID that is not in use (tests drive retirement with it).
    #[cfg(all(test, feature = "server", feature = "cid-rotation"))]
    pub(crate) fn spare_seq(&self) -> Option<u64> {
        self.slots.iter().flatten().map(|p| p.seq).find(|s| *s != self.active).map(wide_seq)
    }

    /// Whether an unused connection ID is stored (migration needs one, RFC 9000 §9.5).
    pub(crate) fn has_spare(&self) -> bool {
        self.slots.iter().flatten().any(|p| p.seq != self.active)
    }

    #[cfg(feature = "migration")]
    /// Stores a connection ID the peer gave outside a NEW_CONNECTION_ID frame (the
    /// preferred_address transport parameter, sequence 1).
    pub(crate) fn insert_preferred(&mut self, cid: ConnectionId, token: ResetToken) -> bool {
        let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) else { return false };
        *slot = Some(PeerCid { seq: 1, cid, token: Some(token) });
        true
    }

    /// RFC 9000 §19.15: a NEW_CONNECTION_ID frame.
    pub(crate) fn on_new_cid(
        &mut self,
        seq: u64,
        retire_prior_to: u64,
        cid: &[u8],
        token: &ResetToken,
    ) -> Result<(), TransportErrorCode> {
        // Retire Prior To is at most the sequence number (the frame's parser checked, RFC
        // 9000 §19.15), so both fit when the sequence number does. RFC 9000 §5.1.1: "The
        // sequence number on each newly issued connection ID MUST increase by 1": a peer
        // past 2^32 - 1 would have issued over four billion connection IDs, one at a time,
        // each retired before the next (our limit is REMOTE_CIDS). That is a local limit of
        // a build keeping 32-bit sequence numbers, not an RFC rule: such a number closes
        // the connection (PROTOCOL_VIOLATION, the closest code), and is never cut.
        let (Some(seq), Some(rpt)) = (narrow_seq(seq), narrow_seq(retire_prior_to)) else {
            return Err(TransportErrorCode::PROTOCOL_VIOLATION);
        };
        self.new_cid(seq, rpt, cid, token).map_err(CidError::code)
    }

    /// [`Self::on_new_cid`] with the one-byte error.
    fn new_cid(
        &mut self,
        seq: PeerSeq,
        retire_prior_to: PeerSeq,
        cid: &[u8],
        token: &ResetToken,
    ) -> Result<(), CidError> {
        // "If an endpoint receives a NEW_CONNECTION_ID frame that repeats a previously
        // issued connection ID with a different Stateless Reset Token field value or a
        // different Sequence Number field value, or if a sequence number is used for
        // different connection IDs, the endpoint MAY treat that receipt as a connection
        // error of type PROTOCOL_VIOLATION."
        for p in self.slots.iter().flatten() {
            let same_seq = p.seq == seq;
            let same_cid = *p.cid == *cid;
            if same_seq && same_cid && p.token.is_some_and(|t| t == *token) {
                // A retransmission; only its Retire Prior To may still matter.
                self.raise_retire_prior_to(retire_prior_to)?;
                return self.pick_active();
            }
            if same_seq || same_cid {
                return Err(CidError::ProtocolViolation);
            }
        }
        self.raise_retire_prior_to(retire_prior_to)?;
        // "An endpoint that receives a NEW_CONNECTION_ID frame with a sequence number
        // smaller than the Retire Prior To field of a previously received NEW_CONNECTION_ID
        // frame MUST send a corresponding RETIRE_CONNECTION_ID frame ... unless it has
        // already done so for that sequence number."
        if seq < self.retire_prior_to {
            self.queue_retire(seq)?;
            return self.pick_active();
        }
        // RFC 9000 §5.1.1: more than our active_connection_id_limit is
        // CONNECTION_ID_LIMIT_ERROR (counted after the retirements this frame asked for).
        let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) else {
            return Err(CidError::ConnectionIdLimit);
        };
        // The frame's parser checked the length (1 to 20 bytes).
        let cid = ConnectionId::new(cid).ok_or(CidError::FrameEncoding)?;
        *slot = Some(PeerCid { seq, cid, token: Some(*token) });
        self.pick_active()
    }

    /// If the connection ID in use was retired, moves to the lowest stored one (the peer
    /// must supply replacements with Retire Prior To, RFC 9000 §5.1.2).
    fn pick_active(&mut self) -> Result<(), CidError> {
        if self.slots.iter().flatten().any(|p| p.seq == self.active) {
            return Ok(());
        }
        let next = self.slots.iter().flatten().map(|p| p.seq).min();
        self.active = next.ok_or(CidError::ProtocolViolation)?;
        Ok(())
    }

    /// Retires every stored connection ID below `rpt` (RFC 9000 §5.1.2).
    fn raise_retire_prior_to(&mut self, rpt: PeerSeq) -> Result<(), CidError> {
        if rpt <= self.retire_prior_to {
            return Ok(());
        }
        self.retire_prior_to = rpt;
        for k in 0..REMOTE_CIDS {
            let Some(Some(p)) = self.slots.get(k).copied() else { continue };
            if p.seq < rpt {
                self.queue_retire(p.seq)?;
                if let Some(s) = self.slots.get_mut(k) {
                    *s = None;
                }
            }
        }
        Ok(())
    }

    fn queue_retire(&mut self, seq: PeerSeq) -> Result<(), CidError> {
        if self.retire.iter().flatten().any(|r| r.seq == seq && r.frame != Delivery::Acked) {
            return Ok(());
        }
        // Acknowledged retirements make room first.
        let slot = self
            .retire
            .iter_mut()
            .find(|r| r.is_none_or(|r| r.frame == Delivery::Acked))
            .ok_or(CidError::ConnectionIdLimit)?;
        *slot = Some(Retire { seq, frame: Delivery::Pending });
        Ok(())
    }

    #[cfg(feature = "migration")]
    /// RFC 9000 §9.5: moves to an unused connection ID and retires the one in use. Returns
    /// the new one, or `None` when there is no spare (or no room to retire).
    pub(crate) fn switch(&mut self) -> Option<PeerCid> {
        let old = self.active;
        let next = self.slots.iter().flatten().filter(|p| p.seq != old).min_by_key(|p| p.seq)?;
        let next = *next;
        self.queue_retire(old).ok()?;
        if let Some(s) = self.slots.iter_mut().find(|s| s.is_some_and(|p| p.seq == old)) {
            *s = None;
        }
        self.active = next.seq;
        Some(next)
    }

    #[cfg(feature = "migration")]
    /// Makes `seq` the connection ID in use without retiring the current one (a client
    /// trying the server's preferred address keeps the old one to fall back to).
    pub(crate) fn use_seq(&mut self, seq: u64) -> Option<PeerCid> {
        let p = *self.slots.iter().flatten().find(|p| wide_seq(p.seq) == seq)?;
        self.active = p.seq;
        Some(p)
    }

    /// Retires `seq` (not the one in use).
    #[cfg(any(feature = "migration", all(test, feature = "server", feature = "cid-rotation")))]
    pub(crate) fn retire(&mut self, seq: u64) -> Result<(), TransportErrorCode> {
        // Only stored (so narrow) sequence numbers are retired.
        let Some(seq) = narrow_seq(seq) else { return Ok(()) };
        if seq == self.active {
            return Ok(());
        }
        if let Some(s) = self.slots.iter_mut().find(|s| s.is_some_and(|p| p.seq == seq)) {
            *s = None;
            return self.queue_retire(seq).map_err(CidError::code);
        }
        Ok(())
    }

    /// Whether a RETIRE_CONNECTION_ID frame waits.
    pub(crate) fn has_pending(&self) -> bool {
        self.retire.iter().flatten().any(|r| r.frame == Delivery::Pending)
    }

    /// The next RETIRE_CONNECTION_ID to send, marked as sent in packet `pn`.
    pub(crate) fn poll_retire(&mut self, pn: u64) -> Option<u64> {
        let r = self.retire.iter_mut().flatten().find(|r| r.frame == Delivery::Pending)?;
        r.frame = Delivery::Sent(pn);
        Some(wide_seq(r.seq))
    }

    /// A retirement polled by [`Self::poll_retire`] did not fit after all.
    pub(crate) fn unpoll(&mut self, seq: u64) {
        if let Some(r) = self.retire.iter_mut().flatten().find(|r| wide_seq(r.seq) == seq) {
            r.frame = Delivery::Pending;
        }
    }

    /// Packet `pn` was acknowledged (`acked`) or lost: an acknowledged RETIRE_CONNECTION_ID
    /// is done, a lost one pending again. One loop for both (issue 8).
    pub(crate) fn on_delivery(&mut self, pn: u64, acked: bool) {
        for slot in self.retire.iter_mut() {
            let Some(r) = slot.as_mut() else { continue };
            if !acked {
                r.frame.on_lost(pn);
            } else if r.frame.on_ack(pn) {
                *slot = None;
            }
        }
    }

    /// Retirements waiting or in flight.
    pub(crate) fn retiring(&self) -> usize {
        self.retire.iter().flatten().filter(|r| r.frame != Delivery::Acked).count()
    }
}

#[cfg(feature = "stateless-reset")]
/// Compares two reset tokens in constant time (RFC 9000 §10.3.1: "the comparison MUST be
/// performed ... without leaking information about the value of the token").
pub(crate) fn token_eq(a: &ResetToken, b: &[u8]) -> bool {
    if b.len() != a.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    // Keep the compiler from turning the fold into an early exit.
    core::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cid(b: u8) -> ConnectionId {
        ConnectionId::new(&[b; 8]).unwrap()
    }

    #[test]
    fn local_issue_ack_loss_and_retire() {
        let mut l = LocalCids::new(cid(0), [0; 16]);
        assert!(!l.wants_new());
        l.set_target(8);
        let n = LOCAL_CIDS as u8;
        for k in 1..n {
            assert!(l.wants_new());
            assert!(l.issue(cid(k), [k; 16], false));
        }
        assert!(!l.wants_new() && !l.issue(cid(99), [9; 16], false));
        // The first in packet 10, the rest in packet 11.
        assert_eq!(l.poll_frame(10).unwrap().seq, 1);
        for k in 2..n {
            assert_eq!(l.poll_frame(11).unwrap().seq, u64::from(k));
        }
        assert!(!l.has_pending());
        l.on_lost(10);
        assert!(l.has_pending());
        l.on_ack(11);
        assert_eq!(l.poll_frame(12).unwrap().seq, 1);
        assert!(!l.has_pending());
        // Retiring a number never issued, or the packet's own DCID: PROTOCOL_VIOLATION.
        let never = u64::from(n);
        assert_eq!(l.on_retire(never, &cid(0)), Err(TransportErrorCode::PROTOCOL_VIOLATION));
        assert_eq!(l.on_retire(1, &cid(1)), Err(TransportErrorCode::PROTOCOL_VIOLATION));
        assert_eq!(l.on_retire(1, &cid(0)), Ok(Some(cid(1))));
        assert_eq!(l.on_retire(1, &cid(0)), Ok(None));
        assert!(l.wants_new());
        assert_eq!(l.seq_of(&cid(0)), Some(0));
        assert_eq!(l.seq_of(&cid(1)), None);
    }

    #[test]
    fn remote_limit_duplicates_and_retire_prior_to() {
        let mut r = RemoteCids::new(cid(0));
        for k in 1..REMOTE_CIDS as u8 {
            r.on_new_cid(u64::from(k), 0, &cid(k), &[k; 16]).unwrap();
        }
        // A retransmission is fine; a reused sequence number or CID is not.
        assert_eq!(r.on_new_cid(1, 0, &cid(1), &[1; 16]), Ok(()));
        assert_eq!(
            r.on_new_cid(1, 0, &cid(7), &[1; 16]),
            Err(TransportErrorCode::PROTOCOL_VIOLATION)
        );
        assert_eq!(
            r.on_new_cid(7, 0, &cid(1), &[1; 16]),
            Err(TransportErrorCode::PROTOCOL_VIOLATION)
        );
        // One more than the limit.
        assert_eq!(
            r.on_new_cid(9, 0, &cid(9), &[9; 16]),
            Err(TransportErrorCode::CONNECTION_ID_LIMIT_ERROR)
        );
        // Retire Prior To 2 retires 0 (in use) and 1, and moves to the lowest remaining.
        r.on_new_cid(4, 2, &cid(4), &[4; 16]).unwrap();
        let lowest = if REMOTE_CIDS > 2 { 2 } else { 4 };
        assert_eq!(r.active().unwrap().seq, lowest);
        assert_eq!(r.retiring(), 2);
        assert_eq!(r.poll_retire(5), Some(0));
        assert_eq!(r.poll_retire(5), Some(1));
        assert_eq!(r.poll_retire(6), None);
        // Old sequence numbers arriving late are retired without being stored.
        r.on_new_cid(1, 0, &cid(1), &[1; 16]).unwrap();
        assert_eq!(r.retiring(), 2);
        r.on_delivery(5, true);
        assert_eq!(r.retiring(), 0);
        // switch() moves to a spare and retires the old one.
        #[cfg(feature = "migration")]
        {
            let n = r.switch().unwrap();
            assert_eq!(n.seq, 3);
            assert_eq!(r.poll_retire(7), Some(2));
        }
    }

    /// RFC 9000 §5.1.1 against 32-bit books: a sequence number past 2^32 - 1 is refused
    /// (PROTOCOL_VIOLATION) where sequence numbers are kept in 32 bits, never cut (2^32 + 1
    /// cut is 1, which would be stored); hosts keep it.
    #[test]
    fn sequence_numbers_past_32_bits_are_refused_not_cut() {
        let mut r = RemoteCids::new(cid(0));
        let big = u64::from(u32::MAX) + 2;
        for rpt in [0, big] {
            let got = r.on_new_cid(big, rpt, &cid(9), &[9; 16]);
            if cfg!(feature = "std") {
                assert_eq!(got, Ok(()));
                r = RemoteCids::new(cid(0));
            } else {
                assert_eq!(got, Err(TransportErrorCode::PROTOCOL_VIOLATION));
                assert_eq!(r.active_seq(), 0);
                assert!(!r.has_spare() && !r.has_pending());
            }
        }
        // The next real one is still taken.
        assert_eq!(r.on_new_cid(1, 0, &cid(1), &[1; 16]), Ok(()));
        assert!(r.has_spare());
    }

    #[test]
    fn retire_queue_is_bounded() {
        let mut r = RemoteCids::new(cid(0));
        // Each frame raises Retire Prior To to its own sequence number: every stored CID is
        // retired, and no retirement is ever acknowledged.
        let mut err = None;
        for seq in 1..100u64 {
            if let Err(e) = r.on_new_cid(seq, seq, &cid(seq as u8), &[seq as u8; 16]) {
                err = Some((seq, e));
                break;
            }
        }
        let (seq, e) = err.expect("bounded");
        assert_eq!(e, TransportErrorCode::CONNECTION_ID_LIMIT_ERROR);
        assert_eq!(seq, RETIRE_QUEUE as u64 + 1);
    }

    #[cfg(feature = "stateless-reset")]
    #[test]
    fn constant_time_compare() {
        assert!(token_eq(&[7; 16], &[7; 16]));
        assert!(!token_eq(&[7; 16], &[7; 15]));
        let mut b = [7u8; 16];
        b[15] = 8;
        assert!(!token_eq(&[7; 16], &b));
    }
}
