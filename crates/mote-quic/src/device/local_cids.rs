//! The connection IDs a device connection issues (RFC 9000 §5.1.1): the handshake one
//! (sequence 0) and, once the handshake is confirmed, one spare, so a server that validates
//! a new client path only with an unused connection ID (quic-go) can follow a NAT
//! rebinding (RFC 9000 §9.5). Two entries, not the general connection's
//! [`crate::connection::cids::LocalCids`] table.

use mote_crypto::{CryptoProvider, CryptoRng as _};

use super::error::Error;
use super::send::{flag, Sent};
use super::{DeviceConnection, Res};
use crate::cid::ConnectionId;
use crate::coding::Writer;
use crate::connection::tls::TlsSession;
use crate::frame::{put_frame, types};
use crate::transport_params::ResetToken;

/// No NEW_CONNECTION_ID frame sent yet for the newest connection ID.
const NOT_SENT: u64 = u64::MAX;

/// The two connection IDs the server may address and the delivery state of the newest one's
/// NEW_CONNECTION_ID frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalCids {
    /// `(sequence number, connection ID)`: the older one, then the newest. Unused until the
    /// spare is issued (`next == 0`: only the handshake connection ID is valid). Sequence
    /// numbers are ours, one per retirement by the server, kept in 32 bits (the server's
    /// 62-bit ones are compared before narrowing, `on_retire_connection_id`).
    pub(super) ids: [(u32, ConnectionId); 2],
    /// The newest connection ID's stateless reset token (RFC 9000 §10.3).
    pub(super) token: ResetToken,
    /// The sequence number the next issued connection ID gets; 0 before the first.
    pub(super) next: u32,
    /// The first packet that carried the newest NEW_CONNECTION_ID frame (`NOT_SENT`).
    pub(super) first_sent: u64,
    /// The newest NEW_CONNECTION_ID frame waits to be sent (again).
    pub(super) pending: bool,
    /// The newest NEW_CONNECTION_ID frame was acknowledged.
    pub(super) acked: bool,
    /// The sequence number of the connection ID the packet being processed was sent to.
    pub(super) current: u32,
}

impl LocalCids {
    /// The initial state (only the handshake connection ID, no NEW_CONNECTION_ID frame
    /// sent) written on memory already zero-filled (the device constructor's slot): every
    /// field but `first_sent` is zero, `ConnectionId::EMPTY` included.
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self) {
        use crate::connection::init::zeroed;
        use core::ptr::addr_of_mut;
        zeroed!(Self, |z| matches!(
            z,
            Self {
                ids: [(0, a), (0, b)],
                token: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                next: 0,
                first_sent: 0,
                pending: false,
                acked: false,
                current: 0,
            } if a.is_empty() && b.is_empty()
        ));
        // SAFETY: the caller's contract.
        unsafe { addr_of_mut!((*dst).first_sent).write(NOT_SENT) };
    }

    /// Whether a packet addressed to `dcid` is for us (`handshake`: our handshake
    /// connection ID, the only one until the spare is issued).
    pub(crate) fn accepts(&self, dcid: &ConnectionId, handshake: &ConnectionId) -> bool {
        if self.next == 0 {
            return dcid == handshake;
        }
        self.ids.iter().any(|(_, c)| c == dcid)
    }

    /// Notes the connection ID the packet about to be processed was sent to (accepted by
    /// [`Self::accepts`]).
    pub(crate) fn received_on(&mut self, dcid: &ConnectionId) {
        self.current = self.ids.iter().find(|(_, c)| c == dcid).map_or(0, |&(s, _)| s);
    }

    /// Whether a NEW_CONNECTION_ID frame waits.
    pub(crate) const fn has_pending(&self) -> bool {
        self.pending
    }

    /// RFC 9000 §13.3: the NEW_CONNECTION_ID frame of packet `pn` was acknowledged or lost;
    /// a lost one is sent again until one of its copies is acknowledged. Copies of an older
    /// frame (before `first_sent`) no longer matter.
    pub(crate) fn on_delivery(&mut self, pn: u64, acked: bool) {
        if pn < self.first_sent || self.acked {
            return;
        }
        self.acked = acked;
        self.pending = !acked;
    }
}

impl<P, T, C, S, const SENT: usize, const RANGES: usize> DeviceConnection<P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// RFC 9000 §5.1.1: "An endpoint SHOULD ensure that its peer has a sufficient number of
    /// available and unused connection IDs." A device offers one spare: with the handshake
    /// one that is two, within any active_connection_id_limit (at least 2, §18.2). Called
    /// when the handshake is confirmed and after each retirement, so the server always
    /// holds one unused connection ID: quic-go switches to it on each NAT rebinding and
    /// retires the old one (the interop relay rebinds every 5 s), so one spare issued once
    /// would serve a single rebinding only. A zero-length connection ID cannot be changed
    /// (§5.1.1); a DRBG failure leaves the server without a spare (a SHOULD).
    pub(super) fn issue_spare_cid(&mut self) {
        let lc = &mut self.local_cids;
        let handshake = self.hs.cids.local;
        // A zero-length connection ID cannot be changed; after 2^32 - 1 connection IDs (as
        // many retirements by the server) no more are issued.
        if handshake.is_empty() || lc.next == u32::MAX {
            return;
        }
        // The connection ID and its reset token from one DRBG request (two HMAC_DRBG
        // generates cost 6 HMACs, one of up to 36 bytes 4).
        let n = handshake.len();
        let mut drawn = [0u8; crate::cid::MAX_CID_LEN + 16];
        let Some(bytes) = drawn.get_mut(..n + 16) else { return };
        if self.hs.rng.fill(bytes).is_err() {
            return;
        }
        let (id, token) = bytes.split_at(n);
        let (Some(cid), Ok(token)) = (ConnectionId::new(id), ResetToken::try_from(token)) else {
            return;
        };
        if lc.next == 0 {
            lc.ids[1] = (0, handshake);
            lc.next = 1;
        }
        // The surviving one becomes the older entry (after a retirement the caller left it
        // in both entries; for the first spare it is the handshake one).
        lc.ids[0] = lc.ids[1];
        lc.ids[1] = (lc.next, cid);
        lc.next += 1;
        lc.token = token;
        lc.first_sent = NOT_SENT;
        lc.pending = true;
        lc.acked = false;
    }

    /// RFC 9000 §19.16: the server retired connection ID `seq`.
    pub(super) fn on_retire_connection_id(&mut self, seq: u64) -> Res {
        let ty = types::RETIRE_CONNECTION_ID;
        let lc = &mut self.local_cids;
        // "Receipt of a RETIRE_CONNECTION_ID frame containing a sequence number greater
        // than any previously sent to the peer MUST be treated as a connection error of
        // type PROTOCOL_VIOLATION." "The sequence number specified in a
        // RETIRE_CONNECTION_ID frame MUST NOT refer to the Destination Connection ID field
        // of the packet in which the frame is contained. The peer MAY treat this as a
        // connection error of type PROTOCOL_VIOLATION." (Before the spare, every packet is
        // sent to sequence 0, the only one issued.)
        // (Compared as sent, 62 bits, then narrowed: below `next` it fits.)
        if lc.next == 0 || seq >= u64::from(lc.next) || seq == u64::from(lc.current) {
            return Err(Error::violation(ty));
        }
        let seq = seq as u32;
        let Some(i) = lc.ids.iter().position(|&(s, _)| s == seq) else {
            // Retired before (a repeated frame).
            return Ok(());
        };
        // Leave the other one in both entries; `issue_spare_cid` keeps it as the older one
        // and adds a new spare.
        if i == 0 {
            lc.ids[0] = lc.ids[1];
        } else {
            lc.ids[1] = lc.ids[0];
        }
        self.issue_spare_cid();
        Ok(())
    }

    /// RFC 9000 §19.15: the newest connection ID's NEW_CONNECTION_ID frame (Retire Prior To
    /// 0), when it waits. Returns whether it was written.
    pub(super) fn write_new_connection_id(
        &mut self,
        pn: u64,
        w: &mut Writer<'_>,
        f: &mut Sent,
    ) -> bool {
        let lc = &mut self.local_cids;
        if !lc.pending {
            return false;
        }
        let (seq, cid) = lc.ids[1];
        // Connection ID, then its token, written where they are (the Length field is the
        // one-byte varint of a length ≤ 20); nothing stays written if the token does not
        // fit.
        let start = w.position();
        let n = cid.len() as u64;
        if !(put_frame(w, types::NEW_CONNECTION_ID, &[seq.into(), 0, n], &cid, false)
            && w.put_slice(&lc.token).is_ok())
        {
            w.rewind(start);
            return false;
        }
        lc.pending = false;
        lc.first_sent = lc.first_sent.min(pn);
        f.flags |= flag::NEW_CID;
        true
    }
}
