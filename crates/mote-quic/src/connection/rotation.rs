//! Connection-ID rotation on a live connection (RFC 9000 §5.1): issuing
//! NEW_CONNECTION_ID up to the peer's limit, storing the peer's, retiring.

use mote_crypto::{CryptoProvider, CryptoRng};

use super::cids::REMOTE_CIDS;
use super::config::ConnectionConfig;
use super::counters::bump;
use super::rng::Drbg;
use super::sent::{flag, SentFrames};
use super::tls::TlsSession;
use super::{random_cid, Connection, ConnectionClose, Res};
use crate::cid::ConnectionId;
use crate::coding::Writer;
use crate::frame::{put_frame, types};
use crate::transport_params::ResetToken;

/// The stateless reset token of `cid` (RFC 9000 §10.3.2): HMAC-SHA-256 under the
/// configured static key, truncated to 16 bytes, so a restarted server derives the same
/// token; random when no key is configured (or without `stateless-reset`).
pub(super) fn reset_token<P: CryptoProvider>(
    provider: &P,
    config: &ConnectionConfig,
    rng: &mut Drbg<P>,
    cid: &ConnectionId,
) -> Result<ResetToken, mote_crypto::Error> {
    let mut token = [0u8; 16];
    #[cfg(feature = "stateless-reset")]
    if let Some(key) = &config.stateless_reset_key {
        return crate::endpoint::reset::derive_token(provider, key, cid);
    }
    let _ = (provider, config, cid);
    rng.fill(&mut token)?;
    Ok(token)
}

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// RFC 9000 §5.1.1: keep as many connection IDs issued as the peer's
    /// active_connection_id_limit allows (up to [`super::LOCAL_CIDS`]), once 1-RTT packets
    /// can carry NEW_CONNECTION_ID. Zero-length connection IDs are never rotated.
    ///
    /// Feature `cid-rotation`: without it (device builds) the connection keeps its
    /// handshake connection ID and issues no others — RFC 9000 §5.1.1 lets an endpoint
    /// issue fewer than the peer's limit; the peer's connection IDs are still stored,
    /// retired and switched to as §5.1.2 requires.
    pub(super) fn top_up_cids(&mut self) {
        if !cfg!(feature = "cid-rotation")
            || self.config.local_cid_len == 0
            || !self.handshake_complete
            || self.is_closed()
        {
            return;
        }
        while self.local_cids.wants_new() {
            let Ok(cid) = random_cid(&mut self.hs.rng, self.config.local_cid_len) else { return };
            // A collision with a live one of ours would confuse routing; draw again later.
            if self.local_cids.seq_of(&cid).is_some() {
                return;
            }
            let token = match reset_token(&self.hs.provider, &self.config, &mut self.hs.rng, &cid) {
                Ok(t) => t,
                Err(_) => return,
            };
            if !self.local_cids.issue(cid, token, false) {
                return;
            }
        }
    }

    /// Whether NEW_CONNECTION_ID or RETIRE_CONNECTION_ID frames wait.
    pub(super) fn has_cid_frames(&self) -> bool {
        (cfg!(feature = "cid-rotation") && self.local_cids.has_pending())
            || self.remote_cids.has_pending()
    }

    /// Writes pending NEW_CONNECTION_ID and RETIRE_CONNECTION_ID frames into packet `pn`.
    pub(super) fn write_cid_frames(
        &mut self,
        pn: u64,
        w: &mut Writer<'_>,
        f: &mut SentFrames,
    ) -> bool {
        let mut any = false;
        #[cfg(feature = "cid-rotation")]
        while let Some(i) = self.local_cids.poll_frame(pn) {
            // RFC 9000 §19.15: Retire Prior To stays 0: we never force the peer to retire.
            let fr = crate::frame::Frame::NewConnectionId {
                sequence: crate::coding::VarInt::new(i.seq).unwrap_or(crate::coding::VarInt::MAX),
                retire_prior_to: crate::coding::VarInt::ZERO,
                cid: i.cid,
                reset_token: i.token,
            };
            if !fr.emit_whole(w) {
                self.local_cids.unpoll(i.seq);
                break;
            }
            any = true;
        }
        while let Some(seq) = self.remote_cids.poll_retire(pn) {
            if !put_frame(w, types::RETIRE_CONNECTION_ID, &[seq], &[], false) {
                self.remote_cids.unpoll(seq);
                break;
            }
            any = true;
        }
        if any {
            f.flags |= flag::CIDS;
        }
        any
    }

    /// RFC 9000 §19.15: the peer issued a connection ID.
    // Out of line (issue 8), as `on_retire_connection_id`: inlined, their connection IDs
    // and reset token sat in the device's receive frame under every TLS message handler.
    #[inline(never)]
    pub(super) fn on_new_connection_id(
        &mut self,
        seq: u64,
        retire_prior_to: u64,
        cid: &[u8],
        token: &ResetToken,
    ) -> Res {
        let ty = types::NEW_CONNECTION_ID;
        // "An endpoint that is sending packets with a zero-length Destination Connection ID
        // MUST treat receipt of a NEW_CONNECTION_ID frame as a connection error of type
        // PROTOCOL_VIOLATION."
        if self.hs.cids.remote.is_empty() {
            return Err(ConnectionClose::transport(
                crate::error::TransportErrorCode::PROTOCOL_VIOLATION,
                Some(ty),
            ));
        }
        let before = self.remote_cids.active_seq();
        self.remote_cids
            .on_new_cid(seq, retire_prior_to, cid, token)
            .map_err(|code| ConnectionClose::transport(code, Some(ty)))?;
        // RFC 9000 §5.1.2: Retire Prior To retired the connection ID in use; address the peer
        // with the replacement from now on. (The one in use is always stored: compared by
        // sequence number, the stored entry is looked up only when it changed.)
        if self.remote_cids.active_seq() != before {
            if let Some(now) = self.remote_cids.active() {
                self.hs.cids.remote = now.cid;
            }
        }
        Ok(())
    }

    /// RFC 9000 §19.16: the peer retired one of our connection IDs; the packet carrying the
    /// frame was addressed to `dcid`. A replacement is issued by the next
    /// [`Connection::poll_transmit`].
    #[inline(never)]
    pub(super) fn on_retire_connection_id(&mut self, seq: u64, dcid: &ConnectionId) -> Res {
        let ty = types::RETIRE_CONNECTION_ID;
        // Without `cid-rotation` and `migration` only the handshake connection ID (sequence
        // 0) is ever issued (`top_up_cids`; the preferred address's comes with `migration`),
        // and every 1-RTT packet is addressed to it (`accept_header`): a retirement names
        // either a number never issued or the packet's own Destination Connection ID, both a
        // PROTOCOL_VIOLATION (RFC 9000 §19.16) — what `LocalCids::on_retire` finds, decided
        // without the table (issue 8).
        if !cfg!(any(feature = "cid-rotation", feature = "migration")) {
            debug_assert!(self.local_cids.issued_total() == 0);
            let code = crate::error::TransportErrorCode::PROTOCOL_VIOLATION;
            let _ = dcid;
            return Err(ConnectionClose::transport(code, Some(ty)));
        }
        let retired = self
            .local_cids
            .on_retire(seq, dcid)
            .map_err(|code| ConnectionClose::transport(code, Some(ty)))?;
        if retired.is_some() {
            bump(&mut self.stats.cids_retired_by_peer, 1);
        }
        Ok(())
    }

    /// Whether the peer gave us a connection ID we have not used yet (migration needs one,
    /// RFC 9000 §9.5).
    pub fn has_spare_peer_cid(&self) -> bool {
        self.remote_cids.has_spare()
    }

    /// The active_connection_id_limit we advertise.
    pub const fn active_connection_id_limit(&self) -> usize {
        REMOTE_CIDS
    }
}
