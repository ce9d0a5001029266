//! Path validation and connection migration (RFC 9000 §8.2, §9; feature `migration`):
//! following a peer whose address changed (NAT rebinding or an active migration), a
//! client migrating on request, and the server's preferred address.

use core::net::{IpAddr, SocketAddr};

use mote_crypto::{CryptoProvider, CryptoRng};

use super::sent::{flag, SentFrames};
use super::tls::TlsSession;
use super::{CloseReason, Connection, Event};
use crate::cid::ConnectionId;
use crate::coding::Writer;
use crate::frame::Frame;
use crate::recovery::NewReno;
use crate::time::{Duration, Instant};
use crate::transport_params::{PreferredAddress, Side};

/// Why [`Connection::migrate`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrateError {
    /// Only a client migrates, and only once the handshake is confirmed (RFC 9000 §9).
    NotAllowed,
    /// The server sent disable_active_migration (RFC 9000 §18.2).
    Disabled,
    /// No unused connection ID of the peer is available (RFC 9000 §9.5).
    NoConnectionId,
    /// The connection is closed.
    Closed,
}

/// The preferred_address transport parameter for `addr` (RFC 9000 §18.2); a server's.
#[cfg(feature = "server")]
pub(super) fn preferred_param(
    addr: SocketAddr,
    cid: ConnectionId,
    token: crate::transport_params::ResetToken,
) -> PreferredAddress {
    let mut pa = PreferredAddress {
        ipv4: [0; 4],
        ipv4_port: 0,
        ipv6: [0; 16],
        ipv6_port: 0,
        connection_id: cid,
        stateless_reset_token: token,
    };
    match addr {
        SocketAddr::V4(a) => {
            pa.ipv4 = a.ip().octets();
            pa.ipv4_port = a.port();
        }
        SocketAddr::V6(a) => {
            pa.ipv6 = a.ip().octets();
            pa.ipv6_port = a.port();
        }
    }
    pa
}

/// The address of a preferred_address parameter in the family of `current`.
fn preferred_for(pa: &PreferredAddress, current: SocketAddr) -> Option<SocketAddr> {
    match current {
        SocketAddr::V4(_) if pa.ipv4_port != 0 || pa.ipv4 != [0; 4] => {
            Some(SocketAddr::new(IpAddr::from(pa.ipv4), pa.ipv4_port))
        }
        SocketAddr::V6(_) if pa.ipv6_port != 0 || pa.ipv6 != [0; 16] => {
            Some(SocketAddr::new(IpAddr::from(pa.ipv6), pa.ipv6_port))
        }
        _ => None,
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
    /// RFC 9000 §8.2.4: how long a path validation may take: three PTOs, at least six
    /// initial RTTs.
    fn validation_period(&self) -> Duration {
        let pto3 = self.recovery.pto_period().saturating_mul(3);
        let init6 = self.config.recovery.initial_rtt.saturating_mul(6);
        pto3.max(init6)
    }

    /// RFC 9000 §9.4: on a new path congestion control and the RTT estimate start over.
    fn reset_path_recovery(&mut self, now: Instant) {
        let mds = u16::try_from(self.max_datagram_size()).unwrap_or(u16::MAX);
        self.recovery.on_new_path(NewReno::new(mds), now);
    }

    /// A 1-RTT packet from `from`, not the current peer address, was processed. RFC 9000
    /// §9.3: only a non-probing packet with the largest packet number so far moves the
    /// connection; probing packets are answered on their own path (the PATH_RESPONSE was
    /// queued with `from`).
    pub(super) fn on_peer_address(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram_len: usize,
        non_probing: bool,
        largest: bool,
    ) {
        // Servers do not move (except to a preferred address the client chose); a client
        // keeps its path.
        if self.side() != Side::Server || !non_probing || !largest || !self.handshake_confirmed {
            return;
        }
        let old = self.remote;
        // RFC 9000 §9.3.2: remember the last validated address to return to if the new
        // one does not validate (an off-path attacker forging a source address).
        if self.migration.validation.is_none() {
            self.migration.fallback = Some(old);
        }
        self.remote = from;
        self.migration.migrations = self.migration.migrations.saturating_add(1);
        // RFC 9000 §9.4: a changed address (not merely a rebound port) is a new path.
        if old.ip() != from.ip() {
            self.reset_path_recovery(now);
        }
        // RFC 9000 §9.5: a fresh connection ID of the peer for the new path, if it gave us
        // one.
        if let Some(p) = self.remote_cids.switch() {
            self.hs.cids.remote = p.cid;
        }
        self.events.push(Event::PathMigrated);
        // RFC 9000 §9.6.3: the address already answered the challenge sent when it
        // probed us; nothing more to validate.
        if self.migration.probed_valid(from) {
            self.migration.validation = None;
            self.migration.fallback = None;
            return;
        }
        // RFC 9000 §9.3, §8.1: until validated, 3× what the new address sent.
        self.migration.amp_received = datagram_len as u64;
        self.migration.amp_sent = 0;
        let deadline = now + self.validation_period();
        self.migration.start_validation(deadline, true);
    }

    /// Client: the local address changed (a new socket, a new interface): move the
    /// connection there (RFC 9000 §9.2). The caller sends from the new address from now
    /// on; the connection switches to an unused connection ID of the server (§9.5),
    /// retires the old one, starts congestion control and RTT over (§9.4) and validates
    /// the new path with PATH_CHALLENGE.
    pub fn migrate(&mut self, now: Instant) -> Result<(), MigrateError> {
        if self.is_closed() {
            return Err(MigrateError::Closed);
        }
        if self.side() != Side::Client || !self.handshake_confirmed {
            return Err(MigrateError::NotAllowed);
        }
        if self.peer.is_some_and(|p| p.disable_active_migration) {
            return Err(MigrateError::Disabled);
        }
        let p = self.remote_cids.switch().ok_or(MigrateError::NoConnectionId)?;
        self.hs.cids.remote = p.cid;
        self.reset_path_recovery(now);
        let deadline = now + self.validation_period();
        self.migration.start_validation(deadline, false);
        self.migration.migrations = self.migration.migrations.saturating_add(1);
        self.events.push(Event::PathMigrated);
        Ok(())
    }

    /// Client: the server's preferred_address, from its transport parameters.
    pub(super) fn remember_preferred(&mut self, pa: Option<PreferredAddress>) {
        if self.side() == Side::Client {
            self.preferred = pa;
        }
    }

    /// RFC 9000 §9.6.1: once the handshake is confirmed a client probes the server's
    /// preferred address with PATH_CHALLENGE and connection ID sequence 1 (carried in the
    /// parameter), still sending everything else on the original path; it moves when the
    /// response arrives, and stays (retiring sequence 1) if none does.
    pub(super) fn try_preferred_address(&mut self, now: Instant) {
        let Some(pa) = self.preferred.take() else { return };
        let Some(addr) = preferred_for(&pa, self.remote) else { return };
        if addr == self.remote
            || !self.remote_cids.insert_preferred(pa.connection_id, pa.stateless_reset_token)
        {
            return;
        }
        let deadline = now + self.validation_period();
        self.migration.start_validation(deadline, false);
        self.migration.target = Some(addr);
    }

    /// The preferred address and its connection ID when a probe of it is due.
    pub(super) fn preferred_probe_due(&self) -> Option<(SocketAddr, ConnectionId)> {
        let to = self.migration.target?;
        if !self.migration.validation.is_some_and(|v| v.send_now) {
            return None;
        }
        Some((to, self.remote_cids.get(1)?.cid))
    }

    /// The preferred address answered: move there (RFC 9000 §9.6.1), with sequence 1, and
    /// retire the handshake connection ID.
    fn move_to_preferred(&mut self, now: Instant, addr: SocketAddr) {
        let Some(p) = self.remote_cids.use_seq(1) else { return };
        self.remote = addr;
        self.hs.cids.remote = p.cid;
        let _ = self.remote_cids.retire(0);
        self.reset_path_recovery(now);
        self.migration.migrations = self.migration.migrations.saturating_add(1);
        self.events.push(Event::PathMigrated);
    }

    /// The address the connection moved away from (and returns to if validation fails).
    pub fn fallback_address(&self) -> Option<SocketAddr> {
        self.migration.fallback
    }

    /// Whether the current path is being validated.
    pub fn is_validating_path(&self) -> bool {
        self.migration.validation.is_some()
    }

    /// RFC 9000 §8.2.3: a PATH_RESPONSE.
    pub(super) fn on_path_response(&mut self, now: Instant, data: [u8; 8]) {
        if self.migration.on_response(data) {
            if let Some(addr) = self.migration.target.take() {
                self.move_to_preferred(now, addr);
            }
            self.events.push(Event::PathValidated);
        } else if self.migration.on_probe_response(data) {
            self.events.push(Event::PathValidated);
        }
    }

    /// Path validation timers: another PATH_CHALLENGE each PTO; at the deadline, back to
    /// the last validated address or, without one, the connection is abandoned (RFC 9000
    /// §8.2.4, §9.3.2).
    pub(super) fn on_path_timeout(&mut self, now: Instant) {
        let Some(v) = self.migration.validation else { return };
        if now >= v.deadline {
            self.migration.validation = None;
            if self.migration.target.take().is_some() {
                // The preferred address never answered: stay, and give its ID back.
                let _ = self.remote_cids.retire(1);
                return;
            }
            match self.migration.fallback.take() {
                Some(addr) => {
                    self.remote = addr;
                    self.reset_path_recovery(now);
                }
                None => {
                    self.close_reason = Some(CloseReason::NoViablePath);
                    self.events.push(Event::Closed);
                    self.set_drained();
                }
            }
            return;
        }
        if v.retry_at.is_some_and(|t| now >= t) {
            if let Some(v) = self.migration.validation.as_mut() {
                v.send_now = true;
                v.retry_at = None;
            }
        }
    }

    /// Whether a PATH_CHALLENGE should go out on the current path.
    pub(super) fn challenge_due(&self) -> bool {
        self.migration.target.is_none() && self.migration.validation.is_some_and(|v| v.send_now)
    }

    /// Whether a PATH_RESPONSE for the current peer address waits.
    pub(super) fn response_due(&self) -> bool {
        self.migration.next_response().is_some_and(|r| r.to == self.remote)
    }

    /// A PATH_RESPONSE owed to another address than the current one (sent in a datagram
    /// of its own).
    pub(super) fn off_path_response(&self) -> Option<super::path::Response> {
        self.migration.next_response().filter(|r| r.to != self.remote)
    }

    /// Writes PATH_RESPONSE frames for the current address (RFC 9000 §8.2.2).
    pub(super) fn write_path_response(&mut self, w: &mut Writer<'_>, f: &mut SentFrames) -> bool {
        let mut any = false;
        while let Some(r) = self.migration.next_response().filter(|r| r.to == self.remote) {
            let fr = Frame::PathResponse { data: r.data };
            if !fr.emit_whole(w) {
                break;
            }
            self.migration.pop_response();
            f.flags |= flag::PATH;
            any = true;
        }
        any
    }

    /// Writes a PATH_CHALLENGE with fresh random data (RFC 9000 §8.2.1).
    pub(super) fn write_path_challenge(
        &mut self,
        now: Instant,
        w: &mut Writer<'_>,
        f: &mut SentFrames,
    ) -> bool {
        if !self.challenge_due() {
            return false;
        }
        let mut data = [0u8; 8];
        if self.hs.rng.fill(&mut data).is_err() {
            return false;
        }
        let fr = Frame::PathChallenge { data };
        if !fr.emit_whole(w) {
            return false;
        }
        let pto = self.recovery.pto_period();
        self.migration.challenge_sent(now, pto, data);
        f.flags |= flag::PATH;
        true
    }
}
