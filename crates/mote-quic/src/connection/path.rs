//! The network path: ECN validation (RFC 9000 §13.4), path MTU discovery (RFC 9000 §14,
//! RFC 8899; feature `pmtud`) and path validation for migration (RFC 9000 §8.2, §9;
//! feature `migration`). Plain state machines; the connection feeds them and acts on what
//! they return.

#[cfg(feature = "migration")]
use core::net::SocketAddr;

use crate::arith::Sat64 as _;
use crate::frame::EcnCounts;
#[cfg(any(feature = "migration", feature = "pmtud"))]
use crate::time::{Duration, Instant};

#[cfg(feature = "pmtud")]
use super::MIN_INITIAL_SIZE;

// --- ECN ---

/// Marked packets that may all be lost before ECN is given up as blackholed (RFC 9000
/// §13.4.2 suggests a testing period of ten packets).
pub const ECN_TESTING_PACKETS: u64 = 10;

/// Where ECN stands on this path (RFC 9000 §13.4.2, Appendix A.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnState {
    /// Marking packets ECT(0), not yet confirmed by the peer's counts.
    Testing,
    /// The peer's counts covered our marks: keep marking.
    Capable,
    /// Validation failed (or ECN was never enabled): packets are not marked.
    Failed,
}

/// Feature `ecn`: marking and validation are built. Without it (device builds: the radio
/// modem reports no ECN codepoints anyway) packets are never marked, so there is nothing to
/// validate (RFC 9000 §13.4: using ECN is optional); the counts of what arrives are still
/// reported in ACK frames.
const ECN_BUILT: bool = cfg!(feature = "ecn");

/// ECN marking and validation of Application Data packets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ecn {
    pub(crate) state: EcnState,
    /// Packet numbers from here on were not marked (set when validation fails).
    first_unmarked: Option<u64>,
    /// The peer's last reported counts (ECT(0), ECT(1), CE).
    counts: [u64; 3],
    /// Marked packets acknowledged and lost during testing.
    testing_acked: u64,
    testing_lost: u64,
    /// Marked packets newly acknowledged by the ACK frame being processed.
    pub(crate) newly_acked_marked: u64,
}

impl Ecn {
    pub(crate) const fn new(enabled: bool) -> Self {
        Self {
            state: if enabled && ECN_BUILT { EcnState::Testing } else { EcnState::Failed },
            first_unmarked: if enabled && ECN_BUILT { None } else { Some(0) },
            counts: [0; 3],
            testing_acked: 0,
            testing_lost: 0,
            newly_acked_marked: 0,
        }
    }

    /// Whether outgoing packets are marked ECT(0).
    pub(crate) fn marking(&self) -> bool {
        ECN_BUILT && self.state != EcnState::Failed
    }

    /// Whether packet `pn` of the Application Data space was sent marked.
    pub(crate) fn was_marked(&self, pn: u64) -> bool {
        ECN_BUILT && self.first_unmarked.is_none_or(|f| pn < f)
    }

    fn fail(&mut self, next_pn: u64) {
        self.state = EcnState::Failed;
        if self.first_unmarked.is_none() {
            self.first_unmarked = Some(next_pn);
        }
    }

    /// A marked packet was acknowledged or lost (before the ACK's counts are checked).
    pub(crate) fn on_marked_packet(&mut self, acked: bool) {
        if acked {
            self.newly_acked_marked = self.newly_acked_marked.sat_add(1);
            self.testing_acked = self.testing_acked.sat_add(1);
        } else if self.state == EcnState::Testing {
            self.testing_lost = self.testing_lost.sat_add(1);
        }
    }

    /// RFC 9000 §13.4.2.1: after an ACK frame of the Application Data space was processed,
    /// checks its counts against the marked packets it newly acknowledged, if it raised the
    /// largest acknowledged (`raised`; reordered ACK frames carry older counts). Also fails
    /// when the first marked packets were all lost. `next_pn` is the next packet number
    /// (marking stops there on failure).
    pub(crate) fn on_ack(&mut self, counts: Option<EcnCounts>, next_pn: u64, raised: bool) {
        let newly = core::mem::take(&mut self.newly_acked_marked);
        if !ECN_BUILT || self.state == EcnState::Failed || !raised {
            return;
        }
        if newly > 0 {
            let Some(c) = counts else {
                // "If an ACK frame newly acknowledges a packet that the endpoint sent with
                // either the ECT(0) or ECT(1) codepoint set, ECN validation fails if the
                // corresponding ECN counts are not present in the ACK frame."
                self.fail(next_pn);
                return;
            };
            let new = [c.ect0.into_inner(), c.ect1.into_inner(), c.ce.into_inner()];
            let [e0, e1, ce] = new;
            let [o0, o1, oce] = self.counts;
            // Counts that decrease, ECT(1) we never send, or increases of ECT(0) + CE that
            // do not cover the newly acknowledged marked packets: validation fails.
            if e0 < o0 || e1 < o1 || ce < oce || e1 > o1 {
                self.fail(next_pn);
                return;
            }
            if (e0 - o0).sat_add(ce - oce) < newly {
                self.fail(next_pn);
                return;
            }
            self.counts = new;
            if self.state == EcnState::Testing && self.testing_acked >= 1 {
                self.state = EcnState::Capable;
            }
        }
        if self.state == EcnState::Testing
            && self.testing_acked == 0
            && self.testing_lost >= ECN_TESTING_PACKETS
        {
            // "... if all packets marked with non-zero ECN codepoints are subsequently lost,
            // it can disable marking on the assumption that the path does not support ECN."
            self.fail(next_pn);
        }
    }

    /// A marked packet was lost (outside an ACK, e.g. by the loss timer).
    pub(crate) fn check_blackhole(&mut self, next_pn: u64) {
        if ECN_BUILT
            && self.state == EcnState::Testing
            && self.testing_acked == 0
            && self.testing_lost >= ECN_TESTING_PACKETS
        {
            self.fail(next_pn);
        }
    }
}

// --- PMTUD ---

/// RFC 8899 §5.1.2 MAX_PROBES: a probe size is given up after this many losses.
#[cfg(feature = "pmtud")]
pub const PMTU_MAX_PROBES: u8 = 3;
/// The search stops when the bounds are this close (bytes).
#[cfg(feature = "pmtud")]
pub const PMTU_GRANULARITY: u16 = 16;
/// RFC 8899 §5.1.1 PMTU_RAISE_TIMER: a finished search starts again after this long.
#[cfg(feature = "pmtud")]
pub const PMTU_RAISE_INTERVAL: Duration = Duration::from_secs(600);
/// Losses of packets above the base size, with none of them acknowledged in between, that
/// signal a black hole (RFC 8899 §4.3): fall back to 1200 bytes.
#[cfg(feature = "pmtud")]
pub const PMTU_BLACKHOLE_LOSSES: u8 = 3;
/// PTOs in a row with no packet above 1200 bytes acknowledged that signal a black hole.
#[cfg(feature = "pmtud")]
pub const PMTU_BLACKHOLE_PTOS: u8 = 3;

/// DPLPMTUD (RFC 8899) with PING + PADDING probes, binary search between the largest
/// acknowledged size and the limit.
#[cfg(feature = "pmtud")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pmtud {
    /// The size full datagrams use now (validated).
    pub(crate) current: u16,
    /// Largest size still possible: min(local maximum, peer's max_udp_payload_size), lowered
    /// by failed probes.
    high: u16,
    /// The configured and negotiated ceiling (restored when a search restarts).
    limit: u16,
    /// The probe in flight: (packet number, size, when sent). Probes are not recorded with
    /// loss recovery (their loss is no congestion signal, RFC 9000 §14.4): the connection
    /// looks for their packet number in ACK frames and declares them lost itself.
    in_flight: Option<(u64, u16, Instant)>,
    /// Losses of the size being probed.
    fails: u8,
    /// When the next probe may go (a new search after the raise timer, or at once).
    next_probe: Option<Instant>,
    /// Losses of packets above 1200 bytes since one of them was acknowledged.
    big_losses: u8,
    /// PTOs in a row since a packet above 1200 bytes was acknowledged.
    big_ptos: u8,
    /// The search tries the ceiling itself first (most paths carry it), then bisects.
    tried_high: bool,
    /// Counters: probes sent, probes acknowledged, black holes detected.
    pub(crate) probes_sent: u32,
    pub(crate) probes_acked: u32,
    pub(crate) blackholes: u32,
}

#[cfg(feature = "pmtud")]
impl Pmtud {
    /// Starts at `size` (the configured datagram size, at least 1200).
    pub(crate) const fn new(size: u16) -> Self {
        let base = if size < MIN_INITIAL_SIZE as u16 { MIN_INITIAL_SIZE as u16 } else { size };
        Self {
            current: base,
            high: base,
            limit: base,
            in_flight: None,
            fails: 0,
            next_probe: None,
            big_losses: 0,
            big_ptos: 0,
            tried_high: false,
            probes_sent: 0,
            probes_acked: 0,
            blackholes: 0,
        }
    }

    /// Starts the search once the handshake is confirmed, up to `limit`.
    pub(crate) fn start(&mut self, now: Instant, limit: u16) {
        let limit = limit.max(MIN_INITIAL_SIZE as u16);
        self.limit = limit;
        self.high = limit;
        self.tried_high = false;
        if limit > self.current {
            self.next_probe = Some(now);
        }
    }

    /// The probe size to send now, if one is due.
    pub(crate) fn probe_due(&self, now: Instant) -> Option<u16> {
        if self.in_flight.is_some() || self.next_probe.is_none_or(|t| t > now) {
            return None;
        }
        if self.high <= self.current {
            return None;
        }
        if !self.tried_high {
            return Some(self.high);
        }
        if self.high.saturating_sub(self.current) < PMTU_GRANULARITY {
            return None;
        }
        // Binary search: halfway between what works and what may (u16: no wide division).
        let mid = self.current + ((self.high - self.current + 1) >> 1);
        Some(mid)
    }

    pub(crate) fn on_probe_sent(&mut self, now: Instant, pn: u64, size: u16) {
        self.in_flight = Some((pn, size, now));
        self.probes_sent = self.probes_sent.saturating_add(1);
    }

    fn finish_if_done(&mut self, now: Instant) {
        if self.current >= self.high
            || (self.tried_high && self.high.saturating_sub(self.current) < PMTU_GRANULARITY)
        {
            self.next_probe = Some(now + PMTU_RAISE_INTERVAL);
        } else {
            self.next_probe = Some(now);
        }
    }

    /// The probe in flight: packet number, size, when it was sent.
    pub(crate) fn probe_in_flight(&self) -> Option<(u64, u16, Instant)> {
        self.in_flight
    }

    /// When the next probe is due.
    pub(crate) fn next_probe(&self) -> Option<Instant> {
        self.next_probe
    }

    /// A sent packet of `size` bytes was acknowledged; returns the new datagram size when
    /// it grew.
    pub(crate) fn on_acked(&mut self, now: Instant, pn: u64, size: u16) -> Option<u16> {
        if size > MIN_INITIAL_SIZE as u16 {
            self.big_losses = 0;
            self.big_ptos = 0;
        }
        let (probe_pn, probe_size, _) = self.in_flight?;
        if probe_pn != pn {
            return None;
        }
        self.in_flight = None;
        self.fails = 0;
        self.probes_acked = self.probes_acked.saturating_add(1);
        self.current = self.current.max(probe_size);
        self.finish_if_done(now);
        Some(self.current)
    }

    /// A sent packet of `size` bytes was declared lost; returns the new (lower) datagram
    /// size when a black hole was detected.
    pub(crate) fn on_lost(&mut self, now: Instant, pn: u64, size: u16) -> Option<u16> {
        if let Some((probe_pn, probe_size, _)) = self.in_flight {
            if probe_pn == pn {
                // RFC 8899 §5.1.2: a lost probe says nothing about congestion; after
                // MAX_PROBES losses the size is taken as too large.
                self.in_flight = None;
                self.fails += 1;
                if self.fails >= PMTU_MAX_PROBES {
                    self.fails = 0;
                    self.tried_high = true;
                    self.high = probe_size.saturating_sub(1).max(self.current);
                }
                self.finish_if_done(now);
                return None;
            }
        }
        if size > MIN_INITIAL_SIZE as u16 && self.current > MIN_INITIAL_SIZE as u16 {
            self.big_losses = self.big_losses.saturating_add(1);
            if self.big_losses >= PMTU_BLACKHOLE_LOSSES {
                return Some(self.fall_back(now));
            }
        }
        None
    }

    /// A PTO fired in the Application Data space. When every packet is too big for the
    /// path nothing is acknowledged, so no loss is ever declared; PTOs in a row without a
    /// large packet acknowledged detect that black hole instead. Returns the new size.
    pub(crate) fn on_pto(&mut self, now: Instant) -> Option<u16> {
        if self.current <= MIN_INITIAL_SIZE as u16 {
            return None;
        }
        self.big_ptos = self.big_ptos.saturating_add(1);
        if self.big_ptos >= PMTU_BLACKHOLE_PTOS {
            return Some(self.fall_back(now));
        }
        None
    }

    /// RFC 8899 §4.3 black-hole detection: back to the base size; search again later.
    fn fall_back(&mut self, now: Instant) -> u16 {
        self.blackholes = self.blackholes.saturating_add(1);
        self.current = MIN_INITIAL_SIZE as u16;
        self.high = self.limit;
        self.tried_high = false;
        self.big_losses = 0;
        self.big_ptos = 0;
        self.fails = 0;
        self.in_flight = None;
        self.next_probe = Some(now + PMTU_RAISE_INTERVAL);
        self.current
    }

    /// RFC 9000 §14.2.1, CVE-2024-53259: an ICMP "packet too big" claim. Claims below 1200
    /// bytes are ignored (QUIC never goes below the base size, and such a claim can come
    /// off-path); a claim below the current size lowers it and caps the search. Returns
    /// the new size when it changed.
    pub(crate) fn on_ptb(&mut self, now: Instant, mtu: u16) -> Option<u16> {
        if mtu < MIN_INITIAL_SIZE as u16 {
            return None;
        }
        self.high = self.high.min(mtu).max(MIN_INITIAL_SIZE as u16);
        if let Some((_, size, _)) = self.in_flight {
            if size > mtu {
                self.in_flight = None;
            }
        }
        if mtu < self.current {
            self.current = mtu;
            self.next_probe = Some(now + PMTU_RAISE_INTERVAL);
            return Some(mtu);
        }
        None
    }
}

// --- Path validation and migration ---

/// PATH_RESPONSE frames queued at most; a flood of PATH_CHALLENGE frames keeps only the
/// newest (RFC 9000 §8.2.2 asks for a response to each, but a peer cannot make us hold more).
#[cfg(feature = "migration")]
pub const PATH_RESPONSES: usize = 4;

/// PATH_CHALLENGE frames sent per validation before it fails (one per PTO).
#[cfg(feature = "migration")]
pub const PATH_CHALLENGES: usize = 3;

/// A PATH_RESPONSE owed to the peer, on the path its challenge arrived on: to the address
/// it came from, from the local address it arrived on (when the socket reports it; a
/// server probed on its preferred address answers from there).
#[cfg(feature = "migration")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) to: SocketAddr,
    pub(crate) local: Option<SocketAddr>,
    pub(crate) data: [u8; 8],
}

/// The validation of the path in use (RFC 9000 §8.2).
#[cfg(feature = "migration")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Validation {
    /// Data of the challenges sent on this path (any of them may come back).
    sent: [Option<[u8; 8]>; PATH_CHALLENGES],
    /// A challenge must be sent now.
    pub(crate) send_now: bool,
    /// When the next challenge goes (one per PTO) and when validation fails.
    pub(crate) retry_at: Option<Instant>,
    pub(crate) deadline: Instant,
    /// The peer's new address is unvalidated: send at most 3× what it sent (a server
    /// following a migration; not a client probing its own new path).
    amp_limited: bool,
}

/// Path state of a connection with migration.
#[cfg(feature = "migration")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Migration {
    pub(crate) responses: [Option<Response>; PATH_RESPONSES],
    /// A validation in progress on the current path.
    pub(crate) validation: Option<Validation>,
    /// The last validated peer address, to fall back to if validation fails (RFC 9000
    /// §9.3.2).
    pub(crate) fallback: Option<SocketAddr>,
    /// The address being probed when it is not the current one (a client probing the
    /// server's preferred address, RFC 9000 §9.6.1).
    pub(crate) target: Option<SocketAddr>,
    /// Server: the PATH_CHALLENGE sent with the PATH_RESPONSE to a client address that
    /// probed us from elsewhere (RFC 9000 §9.6.3: a client moving to our preferred
    /// address), and whether it was answered: a client that then moves there needs no
    /// second validation.
    pub(crate) probed: Option<(SocketAddr, [u8; 8], bool)>,
    /// Anti-amplification on the unvalidated path (RFC 9000 §9.3, §8.1): bytes received on
    /// it and bytes sent.
    pub(crate) amp_received: u64,
    pub(crate) amp_sent: u64,
    /// Counters.
    pub(crate) migrations: u32,
    pub(crate) validations: u32,
    pub(crate) challenges_received: u64,
}

#[cfg(feature = "migration")]
impl Migration {
    pub(crate) const fn new() -> Self {
        Self {
            responses: [None; PATH_RESPONSES],
            validation: None,
            fallback: None,
            target: None,
            probed: None,
            amp_received: 0,
            amp_sent: 0,
            migrations: 0,
            validations: 0,
            challenges_received: 0,
        }
    }

    /// RFC 9000 §8.2.2: queue a PATH_RESPONSE echoing `data` to `to`, to leave from
    /// `local`; when the queue is full the oldest is dropped.
    pub(crate) fn on_challenge(
        &mut self,
        to: SocketAddr,
        local: Option<SocketAddr>,
        data: [u8; 8],
    ) {
        self.challenges_received = self.challenges_received.sat_add(1);
        let r = Some(Response { to, local, data });
        if let Some(slot) = self.responses.iter_mut().find(|s| s.is_none()) {
            *slot = r;
            return;
        }
        self.responses.rotate_left(1);
        if let Some(last) = self.responses.last_mut() {
            *last = r;
        }
    }

    /// The oldest queued response.
    pub(crate) fn next_response(&self) -> Option<Response> {
        self.responses.iter().flatten().next().copied()
    }

    pub(crate) fn pop_response(&mut self) {
        if let Some(i) = self.responses.iter().position(Option::is_some) {
            if let Some(s) = self.responses.get_mut(i) {
                *s = None;
            }
        }
    }

    /// Starts validating the current path; it fails at `deadline`.
    pub(crate) fn start_validation(&mut self, deadline: Instant, amp_limited: bool) {
        self.validation = Some(Validation {
            sent: [None; PATH_CHALLENGES],
            send_now: true,
            retry_at: None,
            deadline,
            amp_limited,
        });
    }

    /// The data of a challenge to send now, recorded as sent; the next retry after `pto`.
    pub(crate) fn challenge_sent(&mut self, now: Instant, pto: Duration, data: [u8; 8]) {
        if let Some(v) = self.validation.as_mut() {
            v.send_now = false;
            if let Some(slot) = v.sent.iter_mut().find(|s| s.is_none()) {
                *slot = Some(data);
            }
            // Another try after a PTO while challenges remain; then wait for the deadline.
            let more = v.sent.iter().any(Option::is_none);
            v.retry_at = more.then(|| now + pto);
        }
    }

    /// RFC 9000 §8.2.3: a PATH_RESPONSE; true when it completes the validation.
    pub(crate) fn on_response(&mut self, data: [u8; 8]) -> bool {
        let Some(v) = self.validation else { return false };
        if !v.sent.iter().flatten().any(|d| *d == data) {
            return false;
        }
        self.validation = None;
        self.fallback = None;
        self.validations = self.validations.saturating_add(1);
        true
    }

    /// A PATH_RESPONSE to the challenge sent to a probing address: that address is valid.
    pub(crate) fn on_probe_response(&mut self, data: [u8; 8]) -> bool {
        match &mut self.probed {
            Some((_, d, answered)) if *d == data && !*answered => {
                *answered = true;
                self.validations = self.validations.saturating_add(1);
                true
            }
            _ => false,
        }
    }

    /// Whether `addr` answered the challenge sent when it probed us.
    pub(crate) fn probed_valid(&self, addr: SocketAddr) -> bool {
        self.probed.is_some_and(|(a, _, answered)| a == addr && answered)
    }

    /// Whether the peer address is unvalidated (amplification limit applies).
    pub(crate) fn amp_limited(&self) -> bool {
        self.validation.is_some_and(|v| v.amp_limited)
    }

    /// Bytes the unvalidated path still allows (3× received, RFC 9000 §8.1, §9.3).
    pub(crate) fn amp_room(&self) -> u64 {
        if !self.amp_limited() {
            return u64::MAX;
        }
        self.amp_received.saturating_mul(3).sat_sub(self.amp_sent)
    }

    /// The next time the validation needs attention.
    pub(crate) fn timeout(&self) -> Option<Instant> {
        let v = self.validation?;
        Some(v.retry_at.map_or(v.deadline, |r| r.min(v.deadline)))
    }
}

// Each test needs its feature.
#[cfg(all(test, any(feature = "ecn", feature = "pmtud", feature = "migration")))]
mod tests {
    use super::*;
    #[cfg(feature = "ecn")]
    use crate::coding::VarInt;

    #[cfg(feature = "ecn")]
    fn counts(e0: u32, e1: u32, ce: u32) -> Option<EcnCounts> {
        Some(EcnCounts {
            ect0: VarInt::from_u32(e0),
            ect1: VarInt::from_u32(e1),
            ce: VarInt::from_u32(ce),
        })
    }

    #[cfg(feature = "ecn")]
    #[test]
    fn ecn_validation() {
        let mut e = Ecn::new(true);
        for _ in 0..3 {
            e.on_marked_packet(true);
        }
        e.on_ack(counts(2, 0, 1), 10, true);
        assert_eq!(e.state, EcnState::Capable);
        // Counts that do not cover the newly acknowledged marks.
        e.on_marked_packet(true);
        e.on_marked_packet(true);
        e.on_ack(counts(3, 0, 1), 12, true);
        assert_eq!(e.state, EcnState::Failed);
        assert!(e.was_marked(11) && !e.was_marked(12));
        // A reordered ACK frame (not raising the largest acknowledged) is not checked.
        let mut e = Ecn::new(true);
        e.on_marked_packet(true);
        e.on_ack(counts(5, 0, 0), 1, true);
        e.on_marked_packet(true);
        e.on_ack(counts(2, 0, 0), 2, false);
        assert_eq!(e.state, EcnState::Capable);
        // Missing counts, decreasing counts, ECT(1).
        for bad in [None, counts(1, 0, 0), counts(5, 1, 0)] {
            let mut e = Ecn::new(true);
            e.on_marked_packet(true);
            e.on_ack(counts(2, 0, 0), 1, true);
            e.on_marked_packet(true);
            e.on_ack(bad, 2, true);
            assert_eq!(e.state, EcnState::Failed);
        }
        // All marked packets of the testing period lost.
        let mut e = Ecn::new(true);
        for _ in 0..ECN_TESTING_PACKETS {
            e.on_marked_packet(false);
        }
        e.check_blackhole(20);
        assert!(!e.marking());
    }

    #[cfg(feature = "pmtud")]
    #[test]
    fn pmtud_search_blackhole_and_ptb() {
        let t0 = Instant::ZERO;
        let mut p = Pmtud::new(1200);
        assert_eq!(p.probe_due(t0), None);
        p.start(t0, 1500);
        // Link MTU 1400: probes above it are lost MAX_PROBES times each.
        for pn in 0..64u64 {
            let Some(size) = p.probe_due(t0) else { break };
            p.on_probe_sent(t0, pn, size);
            if size <= 1400 {
                p.on_acked(t0, pn, size);
            } else {
                p.on_lost(t0, pn, size);
            }
        }
        assert!(p.current <= 1400 && p.current > 1400 - PMTU_GRANULARITY, "{}", p.current);
        assert_eq!(p.probe_due(t0), None);
        // Black hole: big packets lost, none acknowledged.
        let mut fell = None;
        for k in 0..PMTU_BLACKHOLE_LOSSES {
            fell = p.on_lost(t0, 100 + u64::from(k), p.current);
        }
        assert_eq!(fell, Some(1200));
        // CVE-2024-53259: a PTB claim below 1200 is ignored.
        p.start(t0, 1500);
        p.current = 1400;
        assert_eq!(p.on_ptb(t0, 500), None);
        assert_eq!(p.current, 1400);
        assert_eq!(p.on_ptb(t0, 1300), Some(1300));
    }

    #[cfg(feature = "migration")]
    #[test]
    fn responses_are_bounded_and_validation_completes() {
        let a: SocketAddr = "10.0.0.1:1000".parse().unwrap();
        let mut m = Migration::new();
        for k in 0..100u8 {
            m.on_challenge(a, None, [k; 8]);
        }
        assert_eq!(m.responses.iter().flatten().count(), PATH_RESPONSES);
        assert_eq!(m.next_response().unwrap().data, [100 - PATH_RESPONSES as u8; 8]);
        let t0 = Instant::ZERO;
        m.start_validation(t0 + Duration::from_secs(3), true);
        m.challenge_sent(t0, Duration::from_secs(1), [9; 8]);
        assert!(!m.on_response([8; 8]));
        assert!(m.amp_limited());
        assert!(m.on_response([9; 8]));
        assert!(!m.amp_limited());
    }
}
