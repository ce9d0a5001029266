//! Path MTU: DPLPMTUD timers (feature `pmtud`) and ICMP "packet too big" claims (RFC 9000
//! §14.2.1).

use mote_crypto::CryptoProvider;

use super::tls::TlsSession;
use super::Connection;
#[cfg(feature = "pmtud")]
use crate::time::Instant;

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// The next probe time (only future ones: a due probe goes out with the next
    /// `poll_transmit`, so the timer cannot spin when it cannot be sent) or when the probe
    /// in flight counts as lost (three PTOs).
    #[cfg(feature = "pmtud")]
    pub(super) fn pmtud_timeout(&self) -> Option<Instant> {
        match self.pmtud.probe_in_flight() {
            Some((_, _, sent)) => Some(sent + self.recovery.pto_period().saturating_mul(3)),
            None => self.pmtud.next_probe().filter(|t| *t > self.last_now),
        }
    }

    /// A probe unanswered for three PTOs is lost (it is not recorded with loss recovery).
    #[cfg(feature = "pmtud")]
    pub(super) fn on_pmtud_timeout(&mut self, now: Instant) {
        if let Some((pn, size, sent)) = self.pmtud.probe_in_flight() {
            if now >= sent + self.recovery.pto_period().saturating_mul(3) {
                self.pmtud.on_lost(now, pn, size);
            }
        }
    }

    /// An ICMP "packet too big" (or ICMPv6 PTB) for this path claimed an MTU of `mtu`
    /// bytes (UDP payload). RFC 9000 §14.2.1: such messages can be forged by anyone on or
    /// off the path, and QUIC never goes below 1200 bytes: a claim below that is ignored
    /// (CVE-2024-53259, where quic-go lowered its size on such a claim). With `pmtud` a
    /// plausible claim below the current size lowers it and caps the search; without it the
    /// configured size is kept. Returns whether the datagram size changed.
    pub fn on_icmp_ptb(&mut self, mtu: usize) -> bool {
        if mtu < super::MIN_INITIAL_SIZE {
            return false;
        }
        #[cfg(feature = "pmtud")]
        {
            let mtu = u16::try_from(mtu).unwrap_or(u16::MAX);
            if let Some(new) = self.pmtud.on_ptb(self.last_now, mtu) {
                self.recovery.set_max_datagram_size(new);
                return true;
            }
        }
        false
    }
}
