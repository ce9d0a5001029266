//! Detecting a stateless reset (RFC 9000 §10.3.1; feature `stateless-reset`).

use mote_crypto::CryptoProvider;

use super::cids::token_eq;
use super::tls::TlsSession;
use super::{CloseReason, Connection, Event};

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// RFC 9000 §10.3.1: whether `datagram` (one that could not be processed: no
    /// connection, or it failed to decrypt) ends with the stateless reset token of one of
    /// the peer's connection IDs. Tokens are compared in constant time.
    pub fn is_stateless_reset(&self, datagram: &[u8]) -> bool {
        // "the endpoint MUST NOT check for any stateless reset tokens associated with
        // connection IDs it has not used or for connection IDs that have been retired";
        // checking every stored token is a superset that cannot misfire: tokens are
        // unguessable. The packet must look like a short header of at least 21 bytes.
        let len = datagram.len();
        if len < crate::endpoint::reset::MIN_RESET_SIZE
            || datagram.first().is_none_or(|b| b & 0x80 != 0)
        {
            return false;
        }
        let Some(tail) = datagram.get(len - 16..) else { return false };
        let mut hit = false;
        for t in self.remote_cids.tokens() {
            hit |= token_eq(t, tail);
        }
        hit
    }

    /// A stateless reset for this connection arrived: it ends at once, silently (RFC 9000
    /// §10.3.1: "the endpoint MUST enter the draining period and not send any further
    /// packets on this connection"; nothing is left to drain, so it is over).
    pub fn on_stateless_reset(&mut self) {
        if self.is_drained() {
            return;
        }
        if !self.is_closed() {
            self.close_reason = Some(CloseReason::StatelessReset);
            self.events.push(Event::Closed);
        }
        self.set_drained();
    }

    /// The tail of the datagram being processed matched a token: reset.
    pub(super) fn check_reset_tail(&mut self) -> bool {
        let Some(tail) = self.datagram_tail else { return false };
        let mut hit = false;
        for t in self.remote_cids.tokens() {
            hit |= token_eq(t, &tail);
        }
        if hit {
            self.on_stateless_reset();
        }
        hit
    }
}
