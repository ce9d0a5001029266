//! Recovery as a whole: RFC 9002 behaviours, ACK generation, attacks and a property test.

use std::collections::BTreeSet;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

use proptest::prelude::*;

use super::received::widen;
use super::*;
use crate::coding::{Reader, VarInt, Writer};
use crate::frame::{Ack, EcnCounts, Frame, RangeOrder};
use crate::time::{Duration, Instant};

const MDS: u16 = 1200;

type Rec = Recovery<u32, NewReno, 8, 8, 32>;

fn at(ms: u64) -> Instant {
    Instant::from_micros(ms * 1_000)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn client() -> Rec {
    Recovery::new(RecoveryConfig::new(false), NewReno::new(MDS))
}

fn server() -> Rec {
    Recovery::new(RecoveryConfig::new(true), NewReno::new(MDS))
}

fn send_sized(r: &mut Rec, space: PnSpace, now: Instant, size: u16) -> u64 {
    let pn = r.next_pn(space);
    r.on_packet_sent(space, SentPacket::new(pn, now, size, true, true, pn as u32)).unwrap();
    pn
}

fn send(r: &mut Rec, space: PnSpace, now: Instant) -> u64 {
    send_sized(r, space, now, MDS)
}

#[derive(Debug, Default)]
struct Events {
    acked: Vec<u64>,
    lost: Vec<u64>,
    evicted: Vec<u64>,
}

impl Events {
    fn record(&mut self, e: PacketEvent<u32>) {
        match e {
            PacketEvent::Acked { packet, .. } => {
                assert_eq!(packet.payload as u64, packet.pn, "payload travels with the record");
                self.acked.push(packet.pn)
            }
            PacketEvent::Lost { packet, .. } => self.lost.push(packet.pn),
            PacketEvent::Evicted { packet, .. } => self.evicted.push(packet.pn),
        }
    }
}

/// ACKs `ranges` (highest first) in `space` at `now`.
fn ack(
    r: &mut Rec,
    space: PnSpace,
    ranges: &[(u64, u64)],
    delay: Duration,
    now: Instant,
) -> Result<(AckOutcome, Events), RecoveryError> {
    let mut ev = Events::default();
    let out =
        r.on_ack_received(space, ranges.iter().copied(), delay, None, now, |e| ev.record(e))?;
    Ok((out, ev))
}

fn timeout(r: &mut Rec, now: Instant) -> (TimeoutAction, Events) {
    let mut ev = Events::default();
    let a = r.on_timeout(now, |e| ev.record(e));
    (a, ev)
}

const APP: PnSpace = PnSpace::ApplicationData;

/// The order one ACK's `Acked` events come in: range by range (highest range first,
/// ascending within each) when settled records stay as tombstones (hosts), ascending
/// packet numbers when they are settled eagerly (devices, `sent::EAGER`).
fn report_order(range_order: &[u64]) -> Vec<u64> {
    let mut v = range_order.to_vec();
    if sent::EAGER {
        v.sort_unstable();
    }
    v
}

// --- RTT (RFC 9002 §5) through ACK processing ---

#[test]
fn first_rtt_sample() {
    let mut r = client();
    assert!(!r.rtt().has_sample());
    send(&mut r, PnSpace::Initial, at(0));
    let (out, ev) = ack(&mut r, PnSpace::Initial, &[(0, 0)], ms(20), at(100)).unwrap();
    assert!(out.rtt_sampled);
    assert_eq!(ev.acked, [0]);
    assert_eq!(r.rtt().smoothed(), ms(100));
    assert_eq!(r.rtt().rttvar(), ms(50));
    assert_eq!(r.rtt().min(), ms(100));
}

#[test]
fn ack_delay_ignored_in_initial_used_in_handshake() {
    let mut a = client();
    let mut b = client();
    for (r, space) in [(&mut a, PnSpace::Initial), (&mut b, PnSpace::Handshake)] {
        send(r, space, at(0));
        ack(r, space, &[(0, 0)], ms(0), at(100)).unwrap();
        send(r, space, at(200));
        ack(r, space, &[(1, 1)], ms(40), at(350)).unwrap();
    }
    // Initial: adjusted 150 → 87.5 + 18.75; Handshake: 150 − 40 = 110 → 87.5 + 13.75.
    assert_eq!(a.rtt().smoothed(), Duration(106_250));
    assert_eq!(b.rtt().smoothed(), Duration(101_250));
}

#[test]
fn ack_delay_clamping() {
    let mut r = server();
    r.on_handshake_confirmed(at(0));
    r.set_peer_max_ack_delay(ms(25));
    send(&mut r, APP, at(0));
    ack(&mut r, APP, &[(0, 0)], ms(0), at(100)).unwrap();
    send(&mut r, APP, at(1000));
    ack(&mut r, APP, &[(1, 1)], ms(200), at(1300)).unwrap();
    // 300 − min(200, 25) = 275 → 87.5 + 34.375
    assert_eq!(r.rtt().smoothed(), Duration(121_875));
}

#[test]
fn no_rtt_sample_unless_largest_newly_acked() {
    let mut r = server();
    send(&mut r, APP, at(0));
    send(&mut r, APP, at(1));
    ack(&mut r, APP, &[(1, 1)], ms(0), at(100)).unwrap();
    // The largest (1) was already acknowledged: no sample from pn 0's acknowledgement.
    let (out, ev) = ack(&mut r, APP, &[(0, 1)], ms(0), at(500)).unwrap();
    assert_eq!(ev.acked, [0]);
    assert!(!out.rtt_sampled);
    assert_eq!(r.rtt().smoothed(), ms(99));
}

// --- loss detection (RFC 9002 §6.1) ---

#[test]
fn packet_and_time_threshold_loss() {
    let mut r = server();
    for i in 0..6 {
        send(&mut r, APP, at(i));
    }
    let (out, ev) = ack(&mut r, APP, &[(4, 4)], ms(0), at(50)).unwrap();
    // Packet threshold: 4 ≥ pn + 3 for pn 0 and 1.
    assert_eq!(ev.lost, [0, 1]);
    assert_eq!(ev.acked, [4]);
    assert_eq!(out.lost, 2);
    // The window halved once (sent before the recovery start: no growth from pn 4).
    assert_eq!(r.congestion_window(), 6_000);
    // Time threshold: 9/8 × 46 ms = 51.75 ms after pn 2 was sent.
    assert_eq!(r.rtt().smoothed(), ms(46));
    assert_eq!(r.loss_detection_timer(), Some(Instant(2_000 + 51_750)));
    let (a, _) = timeout(&mut r, Instant(53_749));
    assert_eq!(a, TimeoutAction::None);
    let (a, ev) = timeout(&mut r, Instant(53_750));
    assert_eq!(a, TimeoutAction::PacketsLost { space: APP, count: 1 });
    assert_eq!(ev.lost, [2]);
    assert_eq!(r.loss_detection_timer(), Some(Instant(54_750)));
    let (_, ev) = timeout(&mut r, Instant(54_750));
    assert_eq!(ev.lost, [3]);
    // Losses of packets sent before the recovery started do not reduce again.
    assert_eq!(r.congestion_window(), 6_000);
    assert_eq!(r.bytes_in_flight(), u64::from(MDS));
}

// --- PTO (RFC 9002 §6.2) ---

#[test]
fn pto_backoff_and_reset_on_ack() {
    let mut r = client();
    r.on_handshake_confirmed(at(0));
    send(&mut r, APP, at(0));
    // 333 + 4 × 166.5 + 25 ms.
    assert_eq!(r.loss_detection_timer(), Some(at(1024)));
    assert_eq!(timeout(&mut r, at(1023)).0, TimeoutAction::None);
    let (a, _) = timeout(&mut r, at(1024));
    assert_eq!(a, TimeoutAction::SendProbes { space: APP, count: 2, anti_deadlock: false });
    assert_eq!(r.pto_count(), 1);
    assert_eq!(r.probes_pending(), 2);
    assert_eq!(r.loss_detection_timer(), Some(at(2048)));
    send(&mut r, APP, at(1030));
    send(&mut r, APP, at(1030));
    assert_eq!(r.probes_pending(), 0);
    assert_eq!(r.loss_detection_timer(), Some(at(1030 + 2048)));
    let (a, _) = timeout(&mut r, at(3078));
    assert!(matches!(a, TimeoutAction::SendProbes { .. }));
    assert_eq!(r.pto_count(), 2);
    assert_eq!(r.loss_detection_timer(), Some(at(1030 + 4096)));
    // No congestion reaction to a PTO.
    assert_eq!(r.congestion_window(), 12_000);
    let (_, ev) = ack(&mut r, APP, &[(2, 2)], ms(0), at(5000)).unwrap();
    assert_eq!(ev.acked, [2]);
    assert_eq!(r.pto_count(), 0);
}

#[test]
fn anti_deadlock_client_pto() {
    let mut r = client();
    send(&mut r, PnSpace::Initial, at(0));
    ack(&mut r, PnSpace::Initial, &[(0, 0)], ms(0), at(100)).unwrap();
    // Nothing in flight, but the server may not have validated the client: armed from now.
    assert_eq!(r.bytes_in_flight(), 0);
    assert_eq!(r.loss_detection_timer(), Some(at(100 + 300)));
    let (a, _) = timeout(&mut r, at(400));
    assert_eq!(
        a,
        TimeoutAction::SendProbes { space: PnSpace::Initial, count: 1, anti_deadlock: true }
    );
    assert_eq!(r.pto_count(), 1);
    r.on_handshake_keys_available(at(450));
    assert_eq!(r.loss_detection_timer(), Some(at(450 + 600)));
    let (a, _) = timeout(&mut r, at(1050));
    assert_eq!(
        a,
        TimeoutAction::SendProbes { space: PnSpace::Handshake, count: 1, anti_deadlock: true }
    );
    // The pto_count is kept while the client is unsure (RFC 9002 App. A.7).
    send(&mut r, PnSpace::Initial, at(1060));
    ack(&mut r, PnSpace::Initial, &[(1, 1)], ms(0), at(1100)).unwrap();
    assert_eq!(r.pto_count(), 2);
    // A Handshake ACK proves the server validated us: nothing in flight, no timer.
    send(&mut r, PnSpace::Handshake, at(1100));
    ack(&mut r, PnSpace::Handshake, &[(0, 0)], ms(0), at(1200)).unwrap();
    assert_eq!(r.pto_count(), 0);
    assert_eq!(r.loss_detection_timer(), None);
}

#[test]
fn a_duplicate_handshake_ack_ends_the_anti_deadlock_probes() {
    // RFC 9002 §6.2.2.1: the timer keeps the kind it was armed with; an ACK that
    // acknowledges nothing new does not re-arm it, yet a Handshake one proves the server
    // validated our address, so the armed anti-deadlock PTO must not send a probe.
    let mut r = client();
    send(&mut r, PnSpace::Initial, at(0));
    ack(&mut r, PnSpace::Initial, &[(0, 0)], ms(0), at(100)).unwrap();
    r.on_handshake_keys_available(at(100));
    assert_eq!(r.loss_detection_timer(), Some(at(100 + 300)));
    // An ACK-only Handshake packet: numbered, not recorded.
    let pn = r.next_pn(PnSpace::Handshake);
    let ack_only = SentPacket::new(pn, at(150), 50, false, false, pn as u32);
    r.on_packet_sent(PnSpace::Handshake, ack_only).unwrap();
    let (out, _) = ack(&mut r, PnSpace::Handshake, &[(pn, pn)], ms(0), at(200)).unwrap();
    assert_eq!(out.newly_acked, 0);
    assert_eq!(r.loss_detection_timer(), Some(at(400)));
    let (a, ev) = timeout(&mut r, at(400));
    assert_eq!(a, TimeoutAction::None);
    assert!(ev.evicted.is_empty());
    assert_eq!(r.loss_detection_timer(), None);
    assert_eq!(r.pto_count(), 0);
}

#[test]
fn a_client_with_only_0rtt_in_flight_arms_the_anti_deadlock_pto() {
    // RFC 9002 §6.2.2.1: until the server validated its address a client MUST arm a PTO
    // even with no packets in flight; 0-RTT packets have no PTO before confirmation
    // (§6.2.1), so with only they in flight the anti-deadlock PTO is armed: lost server
    // Handshake packets are then asked for again instead of waiting for the idle timeout.
    let mut r = client();
    send(&mut r, PnSpace::Initial, at(0));
    send(&mut r, APP, at(1));
    ack(&mut r, PnSpace::Initial, &[(0, 0)], ms(0), at(100)).unwrap();
    r.on_handshake_keys_available(at(100));
    assert_eq!(r.loss_detection_timer(), Some(at(100 + 300)));
    let (a, _) = timeout(&mut r, at(400));
    assert_eq!(
        a,
        TimeoutAction::SendProbes { space: PnSpace::Handshake, count: 1, anti_deadlock: true }
    );
    assert_eq!(r.pto_count(), 1);
    // Backed off, and still armed while only 0-RTT is in flight.
    assert_eq!(r.loss_detection_timer(), Some(at(400 + 600)));
    // Once a Handshake ACK validated the address, nothing in flight has a PTO: no timer.
    let pn = r.next_pn(PnSpace::Handshake);
    r.on_packet_sent(PnSpace::Handshake, SentPacket::new(pn, at(450), 50, true, true, pn as u32))
        .unwrap();
    ack(&mut r, PnSpace::Handshake, &[(pn, pn)], ms(0), at(500)).unwrap();
    assert_eq!(r.loss_detection_timer(), None);
}

#[test]
fn server_timer_off_when_idle_or_amplification_limited() {
    let mut r = server();
    assert_eq!(r.loss_detection_timer(), None);
    send(&mut r, PnSpace::Initial, at(0));
    assert_eq!(r.loss_detection_timer(), Some(at(999)));
    r.set_amplification_limited(true, at(1));
    assert_eq!(r.loss_detection_timer(), None);
    r.set_amplification_limited(false, at(2));
    assert_eq!(r.loss_detection_timer(), Some(at(999)));
}

#[test]
fn no_application_pto_before_confirmation() {
    let mut r = server();
    send(&mut r, APP, at(0));
    assert_eq!(r.loss_detection_timer(), None);
    send(&mut r, PnSpace::Handshake, at(10));
    assert_eq!(r.loss_detection_timer(), Some(at(10 + 999)));
    r.discard_space(PnSpace::Handshake, at(20));
    r.on_handshake_confirmed(at(20));
    assert_eq!(r.loss_detection_timer(), Some(at(999 + 25)));
}

#[test]
fn pto_picks_the_earliest_space() {
    let mut r = client();
    send(&mut r, PnSpace::Initial, at(0));
    send(&mut r, PnSpace::Handshake, at(50));
    let (a, _) = timeout(&mut r, at(999));
    assert_eq!(
        a,
        TimeoutAction::SendProbes { space: PnSpace::Initial, count: 2, anti_deadlock: false }
    );
}

#[test]
fn probe_count_is_configurable() {
    let mut cfg = RecoveryConfig::nb_iot_client();
    cfg.is_server = true;
    cfg.probe_packets = 1;
    let mut r: Rec = Recovery::new(cfg, NewReno::new(MDS));
    send(&mut r, PnSpace::Initial, at(0));
    // Initial RTT 2 s: the first PTO fires after 6 s, not 1 s.
    assert_eq!(r.loss_detection_timer(), Some(at(6_000)));
    let (a, _) = timeout(&mut r, at(6_000));
    assert_eq!(
        a,
        TimeoutAction::SendProbes { space: PnSpace::Initial, count: 1, anti_deadlock: false }
    );
}

// --- persistent congestion (RFC 9002 §7.6) ---

fn persistent_congestion_setup() -> Rec {
    let mut r = server();
    r.on_handshake_confirmed(at(0));
    send(&mut r, APP, at(0));
    ack(&mut r, APP, &[(0, 0)], ms(0), at(100)).unwrap();
    // PC duration = (100 + 4 × 50 + 25) × 3 = 975 ms.
    for t in [200, 1300, 1400, 1500, 1600] {
        send(&mut r, APP, at(t));
    }
    r
}

#[test]
fn persistent_congestion_collapses_to_minimum_window() {
    let mut r = persistent_congestion_setup();
    let (out, ev) = ack(&mut r, APP, &[(5, 5)], ms(0), at(1700)).unwrap();
    assert_eq!(ev.lost, [1, 2, 3, 4]);
    assert!(out.persistent_congestion);
    // Collapsed to the minimum window, then (RFC 9002 App. B.8: the recovery period is
    // reset) slow start from there with the acknowledged packet.
    assert_eq!(r.congestion_window(), minimum_window(MDS) + u64::from(MDS));
}

#[test]
fn no_persistent_congestion_with_an_ack_in_between() {
    let mut r = persistent_congestion_setup();
    let (out, ev) = ack(&mut r, APP, &[(5, 5), (2, 2)], ms(0), at(1700)).unwrap();
    assert_eq!(ev.lost, [1, 3, 4]);
    assert!(!out.persistent_congestion);
    // Halved once (pn 0's acknowledgement did not grow it: 1 200 bytes in flight do not
    // use a 12 000-byte window).
    assert_eq!(r.congestion_window(), 6_000);
}

#[test]
fn no_persistent_congestion_before_first_rtt_sample() {
    let mut r = server();
    for t in [0, 1000, 2000, 3000, 4000] {
        send(&mut r, APP, at(t));
    }
    let (out, ev) = ack(&mut r, APP, &[(4, 4)], ms(0), at(4100)).unwrap();
    assert_eq!(ev.lost.len(), 4);
    assert!(!out.persistent_congestion);
    assert_eq!(r.congestion_window(), 6_000);
}

// --- congestion control through Recovery ---

#[test]
fn slow_start_grows_by_acked_in_flight_bytes() {
    let mut r = server();
    for i in 0..10 {
        send(&mut r, APP, at(i));
    }
    ack(&mut r, APP, &[(0, 9)], ms(0), at(100)).unwrap();
    assert_eq!(r.congestion_window(), 24_000);
    assert_eq!(r.bytes_in_flight(), 0);
}

#[test]
fn app_limited_acks_do_not_grow_the_window() {
    let mut r = server();
    send(&mut r, APP, at(0));
    r.set_app_limited(true);
    ack(&mut r, APP, &[(0, 0)], ms(0), at(100)).unwrap();
    assert_eq!(r.congestion_window(), 12_000);
    // Filling the window clears the flag.
    for i in 0..10 {
        send(&mut r, APP, at(200 + i));
    }
    ack(&mut r, APP, &[(1, 10)], ms(0), at(300)).unwrap();
    assert_eq!(r.congestion_window(), 24_000);
}

#[cfg(feature = "ecn")]
#[test]
fn ecn_ce_increase_is_a_congestion_event() {
    let mut r = server();
    for i in 0..4 {
        send(&mut r, APP, at(i));
    }
    let ecn = |ce| {
        Some(EcnCounts { ect0: VarInt::from_u32(3), ect1: VarInt::ZERO, ce: VarInt::from_u32(ce) })
    };
    let out =
        r.on_ack_received(APP, [(0u64, 0u64)].into_iter(), ms(0), ecn(1), at(100), |_| {}).unwrap();
    assert!(out.ecn_ce_increased);
    assert_eq!(r.congestion_window(), 6_000);
    let out =
        r.on_ack_received(APP, [(1u64, 1u64)].into_iter(), ms(0), ecn(1), at(101), |_| {}).unwrap();
    assert!(!out.ecn_ce_increased);
    assert_eq!(r.congestion_window(), 6_000);
}

/// Without `ecn` nothing is marked ECT: a CE count in an ACK is no congestion signal.
#[cfg(not(feature = "ecn"))]
#[test]
fn ecn_ce_counts_are_ignored_without_ecn() {
    let mut r = server();
    for i in 0..4 {
        send(&mut r, APP, at(i));
    }
    let ecn = Some(EcnCounts { ect0: VarInt::ZERO, ect1: VarInt::ZERO, ce: VarInt::from_u32(3) });
    let before = r.congestion_window();
    let out =
        r.on_ack_received(APP, [(0u64, 0u64)].into_iter(), ms(0), ecn, at(100), |_| {}).unwrap();
    assert!(!out.ecn_ce_increased);
    assert_eq!(out.newly_acked, 1);
    assert!(r.congestion_window() >= before);
}

#[test]
fn discarding_a_space_removes_its_bytes_without_congestion_reaction() {
    let mut r = server();
    send(&mut r, PnSpace::Initial, at(0));
    send(&mut r, PnSpace::Initial, at(1));
    assert_eq!(r.bytes_in_flight(), 2_400);
    r.discard_space(PnSpace::Initial, at(2));
    assert_eq!(r.bytes_in_flight(), 0);
    assert_eq!(r.congestion_window(), 12_000);
    assert_eq!(r.loss_detection_timer(), None);
    assert_eq!(r.in_flight_packets(PnSpace::Initial), 0);
}

#[cfg(feature = "pacing")]
#[test]
fn pacer_follows_the_window() {
    let mut r = server();
    for i in 0..10 {
        send(&mut r, APP, at(i));
    }
    ack(&mut r, APP, &[(0, 9)], ms(0), at(100)).unwrap();
    // cwnd 24 000 B, smoothed RTT 91 ms..100 ms: burst of 4, then paced.
    let now = at(200);
    for _ in 0..4 {
        assert_eq!(r.pacing_time(now, 1200), None);
        send(&mut r, APP, now);
    }
    let next = r.pacing_time(now, 1200).expect("paced");
    // 1200 B at 1.25 × 24 000 B / 91 ms ≈ 3.6 ms
    assert!((3_000..=4_500).contains(&(next - now).0), "{:?}", next - now);
}

// --- bounded tracker ---

#[test]
fn full_tracker_refuses_in_flight_packets_but_not_acks() {
    let mut r = server();
    r.on_handshake_confirmed(at(0));
    for i in 0..32 {
        send(&mut r, APP, at(i));
    }
    assert!(r.is_full(APP));
    let pn = r.next_pn(APP);
    assert_eq!(
        r.on_packet_sent(APP, SentPacket::new(pn, at(40), MDS, true, true, 0)),
        Err(RecoveryError::Full)
    );
    // ACK-only packets are not stored.
    r.on_packet_sent(APP, SentPacket::new(pn, at(40), 50, false, false, 0)).unwrap();
    assert_eq!(r.next_pn(APP), pn + 1);
    // A PTO makes room for its two probes.
    let t = r.loss_detection_timer().unwrap();
    let (a, ev) = timeout(&mut r, t);
    assert_eq!(a, TimeoutAction::SendProbes { space: APP, count: 2, anti_deadlock: false });
    assert_eq!(ev.evicted, [0, 1]);
    assert!(!r.is_full(APP));
    assert_eq!(r.congestion_window(), 12_000);
    send(&mut r, APP, t);
    send(&mut r, APP, t);
    assert!(r.is_full(APP));
}

#[test]
fn tombstones_are_compacted_and_old_records_survive() {
    let mut r = server();
    for i in 0..8 {
        send(&mut r, PnSpace::Initial, at(i));
    }
    // Acknowledge 1..=2 only (pn 0 stays, below the packet threshold).
    ack(&mut r, PnSpace::Initial, &[(1, 2)], ms(0), at(20)).unwrap();
    assert_eq!(r.in_flight_packets(PnSpace::Initial), 6);
    send(&mut r, PnSpace::Initial, at(21));
    send(&mut r, PnSpace::Initial, at(22));
    assert!(r.is_full(PnSpace::Initial));
    // pn 0 survived the compaction with its payload.
    assert_eq!(r.initial_packets().get(0).map(|p| p.payload), Some(0));
    let (_, ev) = ack(&mut r, PnSpace::Initial, &[(9, 9), (0, 0)], ms(0), at(30)).unwrap();
    assert_eq!(ev.acked, report_order(&[9, 0]));
    assert_eq!(ev.lost, [3, 4, 5, 6, 7]);
    let live: Vec<u64> = r.initial_packets().iter().map(|p| p.pn).collect();
    assert_eq!(live, [8]);
}

#[test]
fn duplicate_ack_changes_nothing() {
    let mut r = server();
    for i in 0..3 {
        send(&mut r, APP, at(i));
    }
    ack(&mut r, APP, &[(0, 2)], ms(0), at(100)).unwrap();
    let (cwnd, rtt) = (r.congestion_window(), *r.rtt());
    let (out, ev) = ack(&mut r, APP, &[(0, 2)], ms(0), at(200)).unwrap();
    assert_eq!(out, AckOutcome::default());
    assert!(ev.acked.is_empty());
    assert_eq!((r.congestion_window(), *r.rtt()), (cwnd, rtt));
}

#[test]
fn ack_ranges_beyond_the_cap_are_ignored() {
    let mut cfg = RecoveryConfig::new(true);
    cfg.max_ack_ranges = 2;
    let mut r: Rec = Recovery::new(cfg, NewReno::new(MDS));
    for i in 0..10 {
        send(&mut r, APP, at(i));
    }
    let (out, ev) = ack(&mut r, APP, &[(9, 9), (7, 7), (5, 5), (3, 3)], ms(0), at(50)).unwrap();
    assert_eq!(out.newly_acked, 2);
    assert_eq!(ev.acked, report_order(&[9, 7]));
}

// --- attacks ---

#[test]
fn attack_optimistic_ack_skipped_pn() {
    let mut r = server();
    send(&mut r, APP, at(0));
    send(&mut r, APP, at(1));
    assert_eq!(r.skip_pn(APP), Ok(2));
    send(&mut r, APP, at(2));
    send(&mut r, APP, at(3));
    let before = (r.congestion_window(), r.bytes_in_flight());
    // An optimistic ACK acknowledges everything up to the largest packet seen.
    let err = ack(&mut r, APP, &[(0, 4)], ms(0), at(50)).unwrap_err();
    assert_eq!(err, RecoveryError::AckOfSkippedPacket);
    assert_eq!(err.code(), crate::TransportErrorCode::PROTOCOL_VIOLATION);
    assert_eq!((r.congestion_window(), r.bytes_in_flight()), before);
    assert_eq!(r.largest_acked(APP), None);
    // Even hidden in a later range.
    let err = ack(&mut r, APP, &[(4, 4), (2, 2)], ms(0), at(50)).unwrap_err();
    assert_eq!(err, RecoveryError::AckOfSkippedPacket);
    // An honest peer's ACK leaves the hole.
    let (_, ev) = ack(&mut r, APP, &[(3, 4), (0, 1)], ms(0), at(50)).unwrap();
    assert_eq!(ev.acked, report_order(&[3, 4, 0, 1]));
}

/// RFC 9000 §12.3: our packet numbers end at `PN_LIMIT` (2^62 - 1; 2^32 - 2 without
/// `std`, where the records keep 32 bits). The last one is sent and acknowledged, the next
/// refused (the connection must close), and an ACK naming a number at or past the limit
/// is an ACK of an unsent packet, never narrowed onto a number that was sent (2^32 on a
/// device would be packet 0, in flight here).
#[test]
fn packet_numbers_end_at_the_limit() {
    let mut r = server();
    send(&mut r, APP, at(0));
    r.jump_to(APP, PN_LIMIT - 1);
    assert_eq!(send(&mut r, APP, at(1)), PN_LIMIT - 1);
    assert_eq!(r.next_pn(APP), PN_LIMIT);
    let next = SentPacket::new(PN_LIMIT, at(2), MDS, false, false, 0);
    assert_eq!(r.on_packet_sent(APP, next), Err(RecoveryError::PacketNumbersExhausted));
    assert_eq!(r.skip_pn(APP), Err(RecoveryError::PacketNumbersExhausted));
    for bad in [PN_LIMIT, PN_LIMIT + 2, u64::MAX] {
        let err = ack(&mut r, APP, &[(bad, bad)], ms(0), at(50)).unwrap_err();
        assert_eq!(err, RecoveryError::AckOfUnsentPacket);
        let err = ack(&mut r, APP, &[(0, bad)], ms(0), at(50)).unwrap_err();
        assert_eq!(err, RecoveryError::AckOfUnsentPacket);
    }
    assert_eq!(r.bytes_in_flight(), 2 * u64::from(MDS));
    // (`Events` checks payloads against numbers, which this one's does not hold.)
    let mut seen = Vec::new();
    let last = [(PN_LIMIT - 1, PN_LIMIT - 1)].into_iter();
    let out = r.on_ack_received(APP, last, ms(0), None, at(50), |e| seen.push(e)).unwrap();
    assert_eq!(r.largest_acked(APP), Some(PN_LIMIT - 1));
    // Packet 0 is now far below the largest acknowledged: lost, not acknowledged.
    let pns: Vec<_> = seen
        .iter()
        .map(|e| match e {
            PacketEvent::Acked { packet, .. } => (true, packet.pn),
            PacketEvent::Lost { packet, .. } | PacketEvent::Evicted { packet, .. } => {
                (false, packet.pn)
            }
        })
        .collect();
    assert_eq!((out.newly_acked, out.lost), (1, 1));
    assert!(pns.contains(&(true, PN_LIMIT - 1)) && pns.contains(&(false, 0)), "{pns:?}");
}

#[test]
fn attack_ack_of_never_sent_packet() {
    let mut r = server();
    for i in 0..4 {
        send(&mut r, APP, at(i));
    }
    let err = ack(&mut r, APP, &[(0, 10)], ms(0), at(50)).unwrap_err();
    assert_eq!(err, RecoveryError::AckOfUnsentPacket);
    assert_eq!(err.code(), crate::TransportErrorCode::PROTOCOL_VIOLATION);
    // In a space where nothing was sent at all.
    let err = ack(&mut r, PnSpace::Handshake, &[(0, 0)], ms(0), at(50)).unwrap_err();
    assert_eq!(err, RecoveryError::AckOfUnsentPacket);
    assert_eq!(r.bytes_in_flight(), 4 * u64::from(MDS));
}

#[test]
fn cve_2025_4820_optimistic_ack_cwnd() {
    // The window may only grow by the bytes of packets really sent, in flight and newly
    // acknowledged, however the ACKs are shaped.
    let mut r = server();
    // 6 600 bytes in flight: the 12 000-byte window is in use (more than half).
    let sizes = [1200u16, 1100, 1200, 1000, 1200, 900];
    for (i, s) in sizes.iter().enumerate() {
        send_sized(&mut r, APP, at(i as u64), *s);
    }
    let w0 = r.congestion_window();
    // Acknowledging packets not sent yet (ahead of the sender): refused, no growth.
    assert!(ack(&mut r, APP, &[(0, 1_000_000)], ms(0), at(10)).is_err());
    assert!(ack(&mut r, APP, &[(6, 6)], ms(0), at(10)).is_err());
    assert_eq!(r.congestion_window(), w0);
    // Real acknowledgements grow it by exactly their bytes (slow start) ...
    ack(&mut r, APP, &[(2, 3), (0, 0)], ms(0), at(20)).unwrap();
    assert_eq!(r.congestion_window(), w0 + 1200 + 1200 + 1000);
    // ... repeated ranges and duplicate ACKs add nothing ...
    for _ in 0..100 {
        ack(&mut r, APP, &[(2, 3), (0, 0)], ms(0), at(30)).unwrap();
    }
    assert_eq!(r.congestion_window(), w0 + 3400);
    for i in 0..5 {
        send(&mut r, APP, at(31 + i));
    }
    // A hand-built iterator repeating a range is refused ...
    assert_eq!(
        ack(&mut r, APP, &[(1, 1), (1, 1)], ms(0), at(40)).unwrap_err(),
        RecoveryError::InvalidAckRanges
    );
    ack(&mut r, APP, &[(1, 1)], ms(0), at(40)).unwrap();
    assert_eq!(r.congestion_window(), w0 + 3400 + 1100);
    // ... and acknowledging an ACK-only packet (not in flight) adds nothing.
    let pn = r.next_pn(APP);
    r.on_packet_sent(APP, SentPacket::new(pn, at(41), 1200, false, false, 0)).unwrap();
    let (out, _) = ack(&mut r, APP, &[(pn, pn)], ms(0), at(42)).unwrap();
    assert_eq!(out.newly_acked, 0);
    assert_eq!(r.congestion_window(), w0 + 4500);
    assert_eq!(r.bytes_in_flight(), 1200 + 900 + 5 * 1200);
}

#[test]
fn trickling_sender_does_not_inflate_the_window() {
    // One packet at a time, never using the window: RFC 9002 §7.8, detected without help.
    let mut r = server();
    for i in 0..50 {
        let pn = send(&mut r, APP, at(i * 100));
        ack(&mut r, APP, &[(pn, pn)], ms(0), at(i * 100 + 50)).unwrap();
    }
    assert_eq!(r.congestion_window(), 12_000);
}

#[test]
fn cve_2025_4821_invalid_ack_ranges() {
    let mut r = server();
    for i in 0..4 {
        send(&mut r, APP, at(i));
    }
    let max = crate::packet::number::MAX_PN;
    let cases: [(&[(u64, u64)], RecoveryError); 9] = [
        (&[(0, u64::MAX)], RecoveryError::AckOfUnsentPacket),
        (&[(u64::MAX, u64::MAX)], RecoveryError::AckOfUnsentPacket),
        (&[(max, max)], RecoveryError::AckOfUnsentPacket),
        (&[(3, 4)], RecoveryError::AckOfUnsentPacket),
        (&[(3, 3), (0, u64::MAX)], RecoveryError::InvalidAckRanges),
        (&[(3, 2)], RecoveryError::InvalidAckRanges),
        (&[(0, 0), (2, 3)], RecoveryError::InvalidAckRanges),
        (&[(2, 3), (1, 2)], RecoveryError::InvalidAckRanges),
        (&[], RecoveryError::InvalidAckRanges),
    ];
    for (ranges, want) in cases {
        assert_eq!(
            ack(&mut r, APP, ranges, Duration::MAX, at(10)).unwrap_err(),
            want,
            "{ranges:?}"
        );
    }
    assert_eq!(r.congestion_window(), 12_000);
    assert_eq!(r.bytes_in_flight(), 4 * u64::from(MDS));
    assert_eq!(r.largest_acked(APP), None);

    // The same through the wire: a frame whose Largest Acknowledged is 2^62 − 1 and whose
    // first range reaches 0, with a huge ACK Delay.
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    for v in [0x02, max, max, 0, max] {
        w.put_varint_u64(v).unwrap();
    }
    let n = w.position();
    let Frame::Ack(frame) = Frame::parse(&mut Reader::new(&buf[..n])).unwrap() else {
        panic!("not an ACK")
    };
    let err = r.on_ack_frame(APP, &frame, 20, at(10), |_| {}).unwrap_err();
    assert_eq!(err, RecoveryError::AckOfUnsentPacket);
    // A frame with many ranges, all but the first beyond the cap or valid: no panic.
    let ranges: Vec<(u64, u64)> = (0..2000u64).rev().map(|i| (i * 2, i * 2)).collect();
    let frame = Ack::new(&ranges, RangeOrder::Descending, VarInt::MAX, None).unwrap();
    assert!(r.on_ack_frame(APP, &frame, 20, at(10), |_| {}).is_err());
}

// --- received packets and ACK generation (RFC 9000 §13.2) ---

#[test]
fn received_ranges_merge() {
    let mut s = ReceivedRanges::<8>::new();
    for pn in [5, 7, 6, 1, 2, 0, 10] {
        assert!(s.insert(pn));
    }
    assert_eq!(s.as_slice(), [(0, 2), (5, 7), (10, 10)]);
    assert!(!s.insert(6));
    assert!(s.is_duplicate(0) && s.is_duplicate(7) && !s.is_duplicate(3));
    assert!(s.insert(3) && s.insert(4));
    assert_eq!(s.as_slice(), [(0, 7), (10, 10)]);
    assert!(s.insert(9));
    assert!(s.insert(8));
    assert_eq!(s.as_slice(), [(0, 10)]);
    assert_eq!(s.largest(), Some(10));
}

#[test]
fn received_ranges_cap_drops_smallest() {
    let mut s = ReceivedRanges::<3>::new();
    for pn in [0, 2, 4] {
        s.insert(pn);
    }
    assert!(s.insert(6));
    assert_eq!(s.as_slice(), [(2, 2), (4, 4), (6, 6)]);
    // Everything below the lowest remembered range is a duplicate now.
    assert_eq!(s.floor(), 1);
    assert!(s.is_duplicate(0));
    assert!(!s.insert(0));
    // A new lowest range when full: accepted once, then a duplicate.
    assert!(s.insert(1) || s.is_duplicate(1));
    // 1 merges with 2.
    assert_eq!(s.as_slice(), [(1, 2), (4, 4), (6, 6)]);
    assert!(s.insert(8));
    assert_eq!(s.as_slice(), [(4, 4), (6, 6), (8, 8)]);
    assert!(s.insert(3));
    assert_eq!(s.as_slice(), [(3, 4), (6, 6), (8, 8)]);
    let mut full = ReceivedRanges::<2>::new();
    full.insert(10);
    full.insert(20);
    assert!(full.insert(5), "processed once");
    assert!(full.is_duplicate(5));
    assert_eq!(full.as_slice(), [(10, 10), (20, 20)]);
    let mut none = ReceivedRanges::<0>::new();
    assert!(none.insert(3));
    assert!(none.is_duplicate(3));
}

#[test]
fn received_ranges_prune() {
    let mut s = ReceivedRanges::<8>::new();
    for pn in [0, 1, 2, 5, 6, 9] {
        s.insert(pn);
    }
    s.remove_up_to(5);
    assert_eq!(s.as_slice(), [(6, 6), (9, 9)]);
    assert!(s.is_duplicate(3));
    s.remove_up_to(2);
    assert_eq!(s.as_slice(), [(6, 6), (9, 9)]);
    s.remove_up_to(u64::MAX);
    s.remove_up_to(20);
    assert!(s.is_empty());
    assert!(s.insert(21));
    // A range reaching past the pruned number is cut, not dropped.
    let mut s = ReceivedRanges::<8>::new();
    for pn in [1, 2, 3, 4, 5, 8, 9] {
        s.insert(pn);
    }
    s.remove_up_to(3);
    assert_eq!(s.as_slice(), [(4, 5), (8, 9)]);
    assert!(s.is_duplicate(3) && !s.is_duplicate(6));
}

#[test]
fn received_ranges_hold_up_to_max_tracked_pn() {
    // Hosts hold every packet number (below 2^62); devices hold 32-bit ones, and refuse
    // the rest rather than truncate them (the connection closes on such a packet).
    let mut s = ReceivedRanges::<4>::new();
    assert!(ReceivedRangeList::can_track(MAX_TRACKED_PN));
    assert!(!ReceivedRangeList::can_track(MAX_TRACKED_PN + 1));
    assert!(s.insert(MAX_TRACKED_PN - 1) && s.insert(MAX_TRACKED_PN));
    assert_eq!(s.largest(), Some(MAX_TRACKED_PN));
    assert_eq!(s.range_containing(MAX_TRACKED_PN), Some((MAX_TRACKED_PN - 1, MAX_TRACKED_PN)));
    assert!(s.is_duplicate(MAX_TRACKED_PN + 1) && !s.insert(MAX_TRACKED_PN + 1));
    assert!(!s.contains(MAX_TRACKED_PN + 1));
    // Not wrapped onto a small number.
    let low = (MAX_TRACKED_PN + 1) + 5;
    assert!(!s.insert(low) && !s.contains(5) && s.insert(5));
    #[cfg(not(feature = "std"))]
    assert_eq!(MAX_TRACKED_PN, u64::from(u32::MAX) - 1);
    #[cfg(feature = "std")]
    assert_eq!(MAX_TRACKED_PN, crate::packet::number::MAX_PN);
    s.remove_up_to(MAX_TRACKED_PN);
    assert!(s.is_empty() && s.is_duplicate(5));
}

fn rx(space: PnSpace) -> ReceivedPackets<8> {
    ReceivedPackets::new(space, ms(25))
}

#[test]
fn ack_immediately_in_initial_and_handshake() {
    for space in [PnSpace::Initial, PnSpace::Handshake] {
        let mut r = rx(space);
        r.on_packet_received(0, at(10), true, Ecn::NotEct);
        assert_eq!(r.ack_deadline(), Some(at(10)));
        assert!(r.ack_due(at(10)));
    }
}

#[test]
fn ack_every_second_packet_else_within_max_ack_delay() {
    let mut r = rx(APP);
    r.on_packet_received(0, at(10), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(35)));
    assert!(!r.ack_due(at(34)));
    r.on_packet_received(1, at(12), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(12)));
    r.on_ack_sent();
    assert_eq!(r.ack_deadline(), None);
    // Non-ack-eliciting packets never make an ACK due by themselves.
    r.on_packet_received(2, at(20), false, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), None);
    assert!(r.has_unacked());
    r.on_packet_received(3, at(21), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(46)));
    // Less frequent acknowledgement on request.
    let mut r = rx(APP).with_ack_eliciting_threshold(4);
    for pn in 0..3 {
        r.on_packet_received(pn, at(1), true, Ecn::NotEct);
    }
    assert_eq!(r.ack_deadline(), Some(at(26)));
    r.on_packet_received(3, at(2), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(2)));
}

#[test]
fn ack_immediately_on_reordering_gap_or_ce() {
    // A gap below the new packet.
    let mut r = rx(APP);
    r.on_packet_received(0, at(1), true, Ecn::NotEct);
    r.on_ack_sent();
    r.on_packet_received(2, at(2), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(2)));
    r.on_ack_sent();
    // Below the largest ack-eliciting one (fills the gap).
    r.on_packet_received(1, at(3), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(3)));
    r.on_ack_sent();
    // In order: delayed.
    r.on_packet_received(3, at(4), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(29)));
    r.on_ack_sent();
    // CE-marked.
    r.on_packet_received(4, at(5), true, Ecn::Ce);
    assert_eq!(r.ack_deadline(), Some(at(5)));
    // A gap filled by non-ack-eliciting packets is not a gap.
    let mut r = rx(APP);
    r.on_packet_received(0, at(1), true, Ecn::NotEct);
    r.on_packet_received(1, at(1), false, Ecn::NotEct);
    r.on_ack_sent();
    r.on_packet_received(2, at(2), true, Ecn::NotEct);
    assert_eq!(r.ack_deadline(), Some(at(27)));
}

#[test]
fn duplicates_are_rejected_and_counted_once() {
    let mut r = rx(APP);
    assert!(r.on_packet_received(5, at(1), true, Ecn::Ect0));
    assert!(r.is_duplicate(5));
    assert!(!r.on_packet_received(5, at(2), true, Ecn::Ect0));
    assert_eq!(r.ecn_counts().unwrap().ect0, VarInt::from_u32(1));
    assert_eq!(r.ack_deadline(), Some(at(26)));
}

/// RFC 9000 §12.3, §13.1: a packet processed without being acknowledged (its data was
/// dropped) is a duplicate all the same, as is everything below it, and stays out of every
/// ACK; the packets recorded before it are still acknowledged.
#[test]
fn unacked_packets_are_duplicates_but_not_acknowledged() {
    let mut r = rx(APP);
    r.on_packet_received(1, at(1), true, Ecn::NotEct);
    r.on_packet_unacked(3);
    for pn in 0..=3 {
        assert!(r.is_duplicate(pn), "{pn}");
    }
    assert!(!r.is_duplicate(4));
    r.on_packet_received(4, at(2), true, Ecn::NotEct);
    let frame = r.ack_frame(at(3), 3, 16).unwrap();
    assert_eq!(frame.ranges().collect::<Vec<_>>(), [(4, 4), (1, 1)]);
    // An older one changes nothing.
    r.on_packet_unacked(2);
    assert!(r.is_duplicate(3), "the minimum stays");
    assert!(!r.is_duplicate(5));
}

#[test]
fn ack_frame_round_trip_into_recovery() {
    // Sender sends 0..=9; the receiver gets all but 3 and 6.
    let mut snd = server();
    for i in 0..10 {
        send(&mut snd, APP, at(i));
    }
    let mut rcv = rx(APP);
    for pn in [0, 1, 2, 4, 5, 7, 8, 9] {
        rcv.on_packet_received(pn, at(20 + pn), true, Ecn::Ect0);
    }
    rcv.on_packet_received(9, at(40), true, Ecn::Ect0);
    let frame = rcv.ack_frame(at(33), 3, 16).unwrap();
    assert_eq!(frame.ranges().collect::<Vec<_>>(), [(7, 9), (4, 5), (0, 2)]);
    // 4 ms since pn 9 arrived, >> 3.
    assert_eq!(frame.ack_delay(), VarInt::from_u32(500));
    assert_eq!(frame.ecn().unwrap().ect0, VarInt::from_u32(8));
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    frame.emit(&mut w).unwrap();
    let n = w.position();
    let Frame::Ack(parsed) = Frame::parse(&mut Reader::new(&buf[..n])).unwrap() else {
        panic!("not an ACK")
    };
    let mut ev = Events::default();
    snd.on_ack_frame(APP, &parsed, 3, at(50), |e| ev.record(e)).unwrap();
    assert_eq!(ev.lost, [3, 6]);
    assert_eq!(ev.acked, report_order(&[7, 8, 9, 4, 5, 0, 1, 2]));
    // Only the highest ranges when asked for fewer.
    let short = rcv.ack_frame(at(33), 3, 2).unwrap();
    assert_eq!(short.ranges().collect::<Vec<_>>(), [(7, 9), (4, 5)]);
    // ACK of ACK: stop acknowledging up to 9.
    rcv.on_ack_sent();
    rcv.on_ack_acked(9);
    assert!(rcv.ack_frame(at(60), 3, 16).is_none());
    assert!(rcv.is_duplicate(3));
    rcv.on_packet_received(10, at(61), true, Ecn::NotEct);
    assert_eq!(rcv.ack_frame(at(61), 3, 16).unwrap().ranges().collect::<Vec<_>>(), [(10, 10)]);
    assert_eq!(rcv.largest_received(), Some(10));
}

#[test]
fn ack_delay_codec() {
    assert_eq!(decode_ack_delay(1000, 3), Duration(8000));
    assert_eq!(decode_ack_delay(u64::MAX, 20), Duration::MAX);
    assert_eq!(decode_ack_delay(1, 64), Duration::MAX);
    assert_eq!(encode_ack_delay(Duration(8000), 3), VarInt::from_u32(1000));
    // A device's longest span is 2^32 - 1 µs (32-bit time), a host's saturates the varint.
    let max = if cfg!(feature = "std") { VarInt::MAX } else { VarInt::from_u32(u32::MAX) };
    assert_eq!(encode_ack_delay(Duration::MAX, 0), max);
}

// --- memory ---

#[test]
fn memory_footprint() {
    use core::mem::size_of;
    // Sizes on the host (64-bit usize); the 32-bit device sizes are at most these.
    // The space's own state: 144 bytes, 136 without `ecn` (no ECN-CE count kept); without
    // `std` (32-bit packet numbers and time) 96 and 88.
    let std = cfg!(feature = "std");
    let space = if std { 136 } else { 88 } + if cfg!(feature = "ecn") { 8 } else { 0 };
    let record = |n: usize, total: usize| (total - space) / n;
    // A record: 24 bytes and the payload rounded up to 8; without `std` (32-bit packet
    // number and time) 16 bytes and the payload rounded up to 4.
    let small = if std { 32 } else { 20 };
    assert_eq!(record(32, size_of::<SentPackets<(), 32>>()), if std { 24 } else { 16 });
    assert_eq!(record(32, size_of::<SentPackets<u32, 32>>()), small);
    assert_eq!(record(32, size_of::<SentPackets<u64, 32>>()), if std { 32 } else { 24 });
    assert_eq!(size_of::<SentPackets<u32, 32>>(), small * 32 + space);
    #[cfg(feature = "std")]
    assert_eq!(size_of::<ReceivedRanges<8>>(), 16 * 8 + 16);
    // With the floor of packets processed but not acknowledged (host: 8 bytes more; a
    // device's 4 fit in padding).
    #[cfg(feature = "std")]
    assert_eq!(size_of::<ReceivedPackets<8>>(), 16 * 8 + 128);
    // Without `std` the ranges are 32-bit: half the bytes per range (and the time of the
    // largest and the ACK deadline 32-bit).
    #[cfg(not(feature = "std"))]
    assert_eq!(size_of::<ReceivedRanges<8>>(), 8 * 8 + 16);
    #[cfg(not(feature = "std"))]
    assert_eq!(size_of::<ReceivedPackets<8>>(), 8 * 8 + 112);
    // 32-bit estimates and time without `std`.
    assert_eq!(size_of::<RttEstimator>(), if std { 48 } else { 24 });
    assert_eq!(size_of::<NewReno>(), if std { 48 } else { 24 });
    assert_eq!(size_of::<Pacer>(), if std { 80 } else { 72 });
    #[cfg(all(feature = "cubic", feature = "std"))]
    assert_eq!(size_of::<Cubic>(), 120);
    let device = size_of::<Recovery<u32, NewReno, 8, 8, 32>>();
    let server = size_of::<Recovery<u32, NewReno, 64, 64, 1024>>();
    std::println!(
        "SentPackets<u32,32> {} | ReceivedPackets<8> {} | ReceivedPackets<64> {} | Recovery device {} | server {} | NewReno {} | Pacer {} | RttEstimator {}",
        size_of::<SentPackets<u32, 32>>(),
        size_of::<ReceivedPackets<8>>(),
        size_of::<ReceivedPackets<64>>(),
        device,
        server,
        size_of::<NewReno>(),
        size_of::<Pacer>(),
        size_of::<RttEstimator>(),
    );
    // Records, three space headers, and the RTT, controller, pacer and flags.
    assert!(device <= 48 * 32 + 3 * 144 + 272, "{device}");
}

// --- property test ---

#[derive(Clone, Debug)]
enum Op {
    Send {
        space: u8,
        size: u16,
        ack_eliciting: bool,
        padding: bool,
    },
    Skip {
        space: u8,
    },
    /// An ACK built from the space's real numbers: (offset below next_pn, then gap/len pairs).
    Ack {
        space: u8,
        top: u64,
        pairs: Vec<(u64, u64)>,
        delay: u64,
        ce: u8,
    },
    /// An ACK of arbitrary ranges.
    RawAck {
        space: u8,
        ranges: Vec<(u64, u64)>,
        delay: u64,
    },
    Advance {
        ms: u16,
    },
    Timeout,
    Confirm,
    HandshakeKeys,
    Discard {
        space: u8,
    },
    AppLimited(bool),
}

fn space_of(i: u8) -> PnSpace {
    PnSpace::ALL[usize::from(i % 3)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, 0u16..1500, any::<bool>(), any::<bool>())
            .prop_map(|(space, size, ack_eliciting, padding)| Op::Send { space, size, ack_eliciting, padding }),
        1 => (0u8..3).prop_map(|space| Op::Skip { space }),
        5 => (0u8..3, 0u64..8, proptest::collection::vec((0u64..6, 0u64..6), 0..6), any::<u64>(), 0u8..3)
            .prop_map(|(space, top, pairs, delay, ce)| Op::Ack { space, top, pairs, delay, ce }),
        1 => (0u8..3, proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5), any::<u64>())
            .prop_map(|(space, ranges, delay)| Op::RawAck { space, ranges, delay }),
        3 => (0u16..3000).prop_map(|ms| Op::Advance { ms }),
        2 => Just(Op::Timeout),
        1 => Just(Op::Confirm),
        1 => Just(Op::HandshakeKeys),
        1 => (0u8..2).prop_map(|space| Op::Discard { space }),
        1 => any::<bool>().prop_map(Op::AppLimited),
    ]
}

fn check_invariants<C: CongestionController>(r: &Recovery<u32, C, 4, 4, 16>) {
    let sum = |it: &mut dyn Iterator<Item = SentPacket<u32>>| -> u64 {
        it.filter(|p| p.in_flight).map(|p| u64::from(p.size)).sum()
    };
    let expected = sum(&mut r.initial_packets().iter())
        + sum(&mut r.handshake_packets().iter())
        + sum(&mut r.application_packets().iter());
    assert_eq!(r.bytes_in_flight(), expected, "bytes in flight match the records");
    assert!(r.congestion_window() >= r.congestion_controller().minimum_window());
    // The timer scan relies on it: a last ack-eliciting send time exactly while
    // ack-eliciting packets are in flight.
    for (eliciting, last) in [
        (
            r.initial_packets().ack_eliciting_in_flight(),
            r.initial_packets().time_of_last_ack_eliciting(),
        ),
        (
            r.handshake_packets().ack_eliciting_in_flight(),
            r.handshake_packets().time_of_last_ack_eliciting(),
        ),
        (
            r.application_packets().ack_eliciting_in_flight(),
            r.application_packets().time_of_last_ack_eliciting(),
        ),
    ] {
        assert_eq!(eliciting > 0, last.is_some(), "last ack-eliciting time set while in flight");
    }
}

fn run_ops<C: CongestionController>(cc: C, is_server: bool, ops: Vec<Op>) {
    let mut r: Recovery<u32, C, 4, 4, 16> = Recovery::new(RecoveryConfig::new(is_server), cc);
    let mut now = Instant(1_000);
    let mut reported: [BTreeSet<u64>; 3] = Default::default();
    let mut discarded = [false; 3];
    for op in ops {
        let before = (r.congestion_window(), r.bytes_in_flight());
        let mut acked_bytes = 0u64;
        let mut events = Vec::new();
        let mut result_ok = true;
        match op {
            Op::Send { space, size, ack_eliciting, padding } => {
                let space = space_of(space);
                if discarded[space as usize] {
                    continue;
                }
                let pn = r.next_pn(space);
                let p = SentPacket::new(pn, now, size, ack_eliciting, padding, pn as u32);
                match r.on_packet_sent(space, p) {
                    Ok(()) => {}
                    Err(RecoveryError::Full) => assert!(r.is_full(space)),
                    Err(e) => panic!("{e:?}"),
                }
            }
            Op::Skip { space } => {
                let _ = r.skip_pn(space_of(space));
            }
            Op::Ack { space, top, pairs, delay, ce } => {
                let space = space_of(space);
                let next = r.next_pn(space);
                let mut ranges = Vec::new();
                if let Some(mut largest) = next.checked_sub(1 + top) {
                    let mut first = true;
                    for (gap, len) in pairs.iter().copied().chain(core::iter::once((0, 0))) {
                        if !first {
                            let Some(l) = largest.checked_sub(gap + 2) else { break };
                            largest = l;
                        }
                        first = false;
                        let smallest = largest.saturating_sub(len);
                        ranges.push((smallest, largest));
                        if smallest == 0 {
                            break;
                        }
                        largest = smallest;
                    }
                }
                let ecn = Some(EcnCounts {
                    ect0: VarInt::ZERO,
                    ect1: VarInt::ZERO,
                    ce: VarInt::from(ce),
                });
                let res = r.on_ack_received(
                    space,
                    ranges.iter().copied(),
                    Duration::from_micros(delay),
                    ecn,
                    now,
                    |e| events.push(e),
                );
                result_ok = res.is_ok();
            }
            Op::RawAck { space, ranges, delay } => {
                let res = r.on_ack_received(
                    space_of(space),
                    ranges.iter().copied(),
                    Duration::from_micros(delay),
                    None,
                    now,
                    |e| events.push(e),
                );
                result_ok = res.is_ok();
            }
            Op::Advance { ms } => now += Duration::from_millis(u64::from(ms)),
            Op::Timeout => {
                if let Some(t) = r.loss_detection_timer() {
                    now = now.max(t);
                }
                r.on_timeout(now, |e| events.push(e));
            }
            Op::Confirm => r.on_handshake_confirmed(now),
            Op::HandshakeKeys => r.on_handshake_keys_available(now),
            Op::Discard { space } => {
                let space = space_of(space);
                discarded[space as usize] = true;
                r.discard_space(space, now);
            }
            Op::AppLimited(b) => r.set_app_limited(b),
        }
        if !result_ok {
            assert_eq!(
                (r.congestion_window(), r.bytes_in_flight()),
                before,
                "a refused ACK changes nothing"
            );
        }
        for e in events {
            let (space, p) = match e {
                PacketEvent::Acked { space, packet } => {
                    if packet.in_flight {
                        acked_bytes += u64::from(packet.size);
                    }
                    (space, packet)
                }
                PacketEvent::Lost { space, packet } | PacketEvent::Evicted { space, packet } => {
                    (space, packet)
                }
            };
            assert_eq!(p.payload as u64, p.pn);
            assert!(reported[space as usize].insert(p.pn), "pn {} reported twice", p.pn);
        }
        // The window grows only on newly acknowledged bytes: in slow start by at most those
        // bytes, in congestion avoidance by one datagram once a window's worth has been
        // acknowledged (RFC 9002 §7.3.3), which may come due on an ACK of fewer bytes.
        let growth_limit = if acked_bytes == 0 { 0 } else { acked_bytes.max(u64::from(MDS)) };
        assert!(r.congestion_window() <= before.0 + growth_limit, "cwnd grew beyond acked bytes");
        check_invariants(&r);
    }
}

/// A case proptest found: after two ECN-CE reductions the window is in congestion avoidance,
/// and the ACK that completes a window's worth of acknowledged bytes (2,101 + 899 = 3,000 B)
/// adds one whole datagram (1,200 B) although it acknowledges only 899 B.
#[test]
fn congestion_avoidance_adds_a_datagram_per_window_acknowledged() {
    let send =
        |space, size, ack_eliciting, padding| Op::Send { space, size, ack_eliciting, padding };
    let ack = |space, top, pairs: Vec<(u64, u64)>, ce| Op::Ack { space, top, pairs, delay: 0, ce };
    run_ops(
        NewReno::new(MDS),
        false,
        vec![
            send(1, 0, false, true),
            send(1, 0, false, false),
            send(1, 0, false, false),
            ack(1, 0, vec![(0, 2)], 1),
            Op::Advance { ms: 1 },
            send(2, 0, false, true),
            ack(2, 0, vec![], 1),
            Op::Advance { ms: 1 },
            send(2, 956, false, true),
            send(2, 1145, false, true),
            send(2, 899, false, true),
            ack(2, 1, vec![(0, 1)], 0),
            send(2, 601, true, false),
            ack(2, 1, vec![], 0),
        ],
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_acks_never_break_invariants(ops in proptest::collection::vec(op(), 1..120), is_server in any::<bool>()) {
        run_ops(NewReno::new(MDS), is_server, ops);
    }

    #[cfg(feature = "cubic")]
    #[test]
    fn random_acks_never_break_invariants_cubic(ops in proptest::collection::vec(op(), 1..120), is_server in any::<bool>()) {
        run_ops(Cubic::new(MDS), is_server, ops);
    }

    #[test]
    fn received_ranges_match_a_model(pns in proptest::collection::vec(0u64..200, 0..300), prune in proptest::option::of(0u64..200)) {
        let mut s = ReceivedRanges::<6>::new();
        let mut model = BTreeSet::new();
        for pn in pns {
            let fresh = !s.is_duplicate(pn);
            prop_assert_eq!(s.insert(pn), fresh);
            if fresh {
                model.insert(pn);
            }
            // Sorted, disjoint, non-adjacent; every range made of received numbers.
            let v: Vec<(u64, u64)> = s.as_slice().iter().map(|r| (widen(r.0), widen(r.1))).collect();
            for w in v.windows(2) {
                prop_assert!(w[0].1 + 1 < w[1].0);
            }
            for &(lo, hi) in &v {
                prop_assert!(lo <= hi && lo >= s.floor());
                for x in lo..=hi {
                    prop_assert!(model.contains(&x));
                }
            }
            // Nothing received at or above the floor is forgotten.
            for &x in model.range(s.floor()..) {
                prop_assert!(s.contains(x));
            }
            if !v.is_empty() {
                let ack = Ack::new(&v, RangeOrder::Ascending, VarInt::ZERO, None);
                prop_assert!(ack.is_some());
                // A device's ACK from its 32-bit ranges: the same frame, byte for byte.
                #[cfg(not(feature = "std"))]
                {
                    let dev = Ack::from_received(s.as_slice(), VarInt::ZERO, None);
                    prop_assert_eq!(dev, ack);
                    let (mut a, mut b) = ([0u8; 256], [0u8; 256]);
                    let (mut wa, mut wb) = (Writer::new(&mut a), Writer::new(&mut b));
                    prop_assert!(dev.is_some_and(|d| d.emit(&mut wa).is_ok()));
                    prop_assert!(ack.is_some_and(|d| d.emit(&mut wb).is_ok()));
                    prop_assert_eq!(wa.position(), wb.position());
                    prop_assert_eq!(a, b);
                }
            }
        }
        if let Some(p) = prune {
            s.remove_up_to(p);
            prop_assert!(s.as_slice().iter().all(|r| widen(r.0) > p));
            prop_assert!(s.is_duplicate(p));
        }
    }
}

#[test]
fn long_random_walk_is_deterministic_and_bounded() {
    // A fixed sequence exercising compaction, eviction and timeouts together.
    let mut ops = vec![Op::Confirm];
    for i in 0..400u64 {
        ops.push(Op::Send { space: 2, size: 1200, ack_eliciting: i % 5 != 0, padding: false });
        if i % 7 == 0 {
            ops.push(Op::Ack {
                space: 2,
                top: i % 4,
                pairs: vec![(i % 3, 1), (0, 2)],
                delay: 1000,
                ce: (i / 50) as u8,
            });
        }
        if i % 11 == 0 {
            ops.push(Op::Advance { ms: 400 });
            ops.push(Op::Timeout);
        }
        if i % 13 == 0 {
            ops.push(Op::Skip { space: 2 });
        }
    }
    run_ops(NewReno::new(MDS), true, ops);
}

// --- the eager (device) sent-packet store against the tombstone (host) store ---

/// One step of [`eager_store_agrees_with_tombstones`].
#[derive(Clone, Debug)]
enum StoreOp {
    /// Send a packet `dt` ms after the previous step: size, ack-eliciting, in flight.
    Send { dt: u64, size: u16, ack_eliciting: bool, in_flight: bool },
    /// Skip a packet number (RFC 9000 §21.4).
    Skip,
    /// An ACK of the sent numbers picked by `mask` (bit i: the i-th number below the next),
    /// processed as `Recovery` does (validate, mark, loss detection, report), `dt` ms on.
    Ack { dt: u64, mask: u32, cap: usize },
    /// The time-threshold loss timer, `dt` ms on.
    LossTimer { dt: u64 },
    /// PTO eviction of the oldest records until `free` are free.
    Evict { free: usize },
    /// The space's keys are discarded.
    Discard,
}

fn store_op() -> impl Strategy<Value = StoreOp> {
    prop_oneof![
        8 => (0u64..40, 1u16..1500, any::<bool>(), any::<bool>()).prop_map(
            |(dt, size, ack_eliciting, in_flight)| StoreOp::Send { dt, size, ack_eliciting, in_flight }
        ),
        1 => Just(StoreOp::Skip),
        4 => (0u64..80, any::<u32>(), 1usize..6).prop_map(|(dt, mask, cap)| StoreOp::Ack { dt, mask, cap }),
        // Sparse ACKs (a quarter of the numbers) leave live records between acknowledged ones.
        4 => (0u64..40, any::<u32>(), any::<u32>()).prop_map(|(dt, a, b)| StoreOp::Ack { dt, mask: a & b, cap: 8 }),
        // The newest number alone: the record leaves an eager ring at once.
        2 => (0u64..10).prop_map(|dt| StoreOp::Ack { dt, mask: 1, cap: 8 }),
        2 => (0u64..200).prop_map(|dt| StoreOp::LossTimer { dt }),
        1 => (1usize..3).prop_map(|free| StoreOp::Evict { free }),
        1 => Just(StoreOp::Discard),
    ]
}

/// Everything a store reports about itself: live records, len, full, bytes and
/// ack-eliciting packets in flight, last ack-eliciting send, loss time, largest acked,
/// next number.
type StoreState = (
    Vec<SentPacket<u32>>,
    usize,
    bool,
    u64,
    usize,
    Option<Instant>,
    Option<Instant>,
    Option<u64>,
    u64,
);

/// [`StoreState`] of `s`, for comparing two stores.
fn store_state<const E: bool>(
    s: &sent::SentSpace<u32, [Option<sent::Slot<u32>>], E>,
) -> StoreState {
    (
        s.iter().collect(),
        s.len(),
        s.is_full(),
        s.bytes_in_flight(),
        s.ack_eliciting_in_flight(),
        s.time_of_last_ack_eliciting(),
        s.loss_time(),
        s.largest_acked(),
        s.next_pn(),
    )
}

/// What one pass reported: acknowledged (sorted: the two stores report them in different
/// orders), lost (in order), evicted, and the pass's summary.
type Reported = (Vec<u64>, Vec<u64>, Vec<u64>, String);

fn apply_store_op<const E: bool>(
    s: &mut sent::SentSpace<u32, [Option<sent::Slot<u32>>], E>,
    op: &StoreOp,
    now: Instant,
) -> Reported {
    // A 25 ms time threshold; persistent congestion over 30 ms, RTT sampled at 0.
    let (loss_delay, first_sample, pc) = (ms(25), Some(Instant(0)), ms(30));
    let (mut acked, mut lost, mut evicted) = (Vec::new(), Vec::new(), Vec::new());
    let summary = match *op {
        StoreOp::Send { size, ack_eliciting, in_flight, .. } => {
            let pn = s.next_pn();
            let r = s.on_packet_sent(SentPacket::new(
                pn,
                now,
                size,
                ack_eliciting,
                in_flight,
                pn as u32,
            ));
            format!("{r:?}")
        }
        StoreOp::Skip => format!("{:?}", s.skip_pn()),
        StoreOp::Ack { mask, cap, .. } => {
            let next = s.next_pn();
            // Ranges from the mask over the 32 numbers below `next`, highest first.
            let mut ranges: Vec<(u64, u64)> = Vec::new();
            for i in 0..32u64.min(next) {
                if mask & (1 << i) == 0 {
                    continue;
                }
                let pn = next - 1 - i;
                match ranges.last_mut() {
                    Some(r) if r.0 == pn + 1 => r.0 = pn,
                    _ => ranges.push((pn, pn)),
                }
            }
            match s.validate_ack(ranges.iter().copied(), cap) {
                Err(e) => format!("{e:?}"),
                Ok(largest) => {
                    let mark = s.mark_acked(largest, ranges.iter().copied(), cap);
                    let loss =
                        s.detect_lost(now, loss_delay, first_sample, pc, |p| lost.push(p.pn));
                    s.finish_acked(ranges.iter().copied(), cap, |p| acked.push(p.pn));
                    format!(
                        "{} {:?} {} {} {:?} {}",
                        mark.newly_acked,
                        mark.largest,
                        mark.any_ack_eliciting,
                        loss.count,
                        loss.largest_lost_in_flight_sent,
                        loss.persistent_congestion
                    )
                }
            }
        }
        StoreOp::LossTimer { .. } => {
            let loss = s.detect_lost(now, loss_delay, first_sample, pc, |p| lost.push(p.pn));
            s.settle();
            format!(
                "{} {:?} {}",
                loss.count, loss.largest_lost_in_flight_sent, loss.persistent_congestion
            )
        }
        StoreOp::Evict { free } => format!("{}", s.evict_for(free, |p| evicted.push(p.pn))),
        StoreOp::Discard => format!("{}", s.discard()),
    };
    acked.sort_unstable();
    (acked, lost, evicted, summary)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The eagerly settled store (devices) takes the same decisions as the tombstone store
    /// (hosts) on the same sends, ACKs, loss timers, evictions and discards: the same
    /// records acknowledged, lost (in the same order) and evicted, the same loss summaries
    /// (persistent congestion included), the same live records and counters after each step.
    #[test]
    fn eager_store_agrees_with_tombstones(ops in proptest::collection::vec(store_op(), 1..150)) {
        let mut eager = sent::SentSpace::<u32, [Option<sent::Slot<u32>>; 8], true>::new();
        let mut tomb = sent::SentSpace::<u32, [Option<sent::Slot<u32>>; 8], false>::new();
        let mut now = Instant(0);
        for op in &ops {
            let dt = match *op {
                StoreOp::Send { dt, .. } | StoreOp::Ack { dt, .. } | StoreOp::LossTimer { dt } => dt,
                _ => 0,
            };
            now += ms(dt);
            let a = apply_store_op(&mut eager, op, now);
            let b = apply_store_op(&mut tomb, op, now);
            prop_assert_eq!(&a, &b, "{:?}", op);
            prop_assert_eq!(store_state(&eager), store_state(&tomb), "{:?}", op);
        }
    }
}

/// Persistent congestion needs no acknowledged packet sent between the two lost ones (RFC
/// 9002 §7.6.2), also when the acknowledged record was the newest one when it left the
/// ring (the eager store removes it at once): the next record sent remembers it. Both stores.
#[test]
fn an_acked_newest_record_still_breaks_a_lost_run() {
    type Store<const E: bool> = sent::SentSpace<u32, [Option<sent::Slot<u32>>; 8], E>;
    fn send<const E: bool>(s: &mut Store<E>, t: u64) {
        let pn = s.next_pn();
        s.on_packet_sent(SentPacket::new(pn, at(t), MDS, true, true, pn as u32)).unwrap();
    }
    fn ack<const E: bool>(s: &mut Store<E>, pn: u64, t: u64, loss_delay: u64) -> bool {
        let r = [(pn, pn)];
        let largest = s.validate_ack(r.iter().copied(), 8).unwrap();
        s.mark_acked(largest, r.iter().copied(), 8);
        let loss = s.detect_lost(at(t), ms(loss_delay), Some(at(0)), ms(50), |_| {});
        s.finish_acked(r.iter().copied(), 8, |_| {});
        loss.persistent_congestion
    }
    fn run<const E: bool>() -> (bool, usize) {
        let mut s = Store::<E>::new();
        send(&mut s, 10); // 0
        send(&mut s, 20); // 1: acknowledged alone, the newest record then
        assert!(!ack(&mut s, 1, 25, 1_000));
        send(&mut s, 200); // 2
        send(&mut s, 210); // 3
        send(&mut s, 220); // 4
                           // 0, 2 and 3 are lost by time; 0 and 2 are 190 ms apart (> 50) but 1 was
                           // acknowledged between them: no persistent congestion.
        (ack(&mut s, 4, 240, 5), s.len())
    }
    assert_eq!(run::<true>(), (false, 0));
    assert_eq!(run::<false>(), (false, 0));
}

// --- 32-bit time on a device (`crate::time`) ---

/// RFC 9002 App. B.5, B.6: a recovery period that started 40 minutes ago (more than a
/// device's 2^31 µs window) still ends: aged every minute, its start stays before a packet
/// sent now, so that packet's loss is a new congestion event.
#[test]
fn an_old_recovery_period_ends_across_the_device_window() {
    let t0 = at(1_000);
    let mut cc = NewReno::new(MDS);
    cc.on_congestion_event(t0, t0);
    let after_first = cc.window();
    let mut now = t0;
    for m in 1..=40 {
        now = at(1_000 + m * 60_000);
        cc.age(now);
    }
    let sent = at(1_000 + 40 * 60_000 - 1);
    assert!(!cc.in_recovery(sent));
    cc.on_congestion_event(now, sent);
    assert!(cc.window() < after_first, "a new congestion event");
}

/// A peer's ACK held for 30 minutes with the largest ACK Delay and max_ack_delay, and a PTO
/// backed off 20 times: on a device every deadline stays within `time::MAX_SPAN` of now.
#[test]
fn deadlines_stay_within_the_device_window() {
    use crate::time::MAX_SPAN;
    let mut r = client();
    r.on_handshake_confirmed(at(0));
    r.set_peer_max_ack_delay(ms((1 << 14) - 1));
    send(&mut r, PnSpace::ApplicationData, at(1));
    let acked = at(1 + 30 * 60_000);
    let delay = decode_ack_delay(u64::MAX >> 2, 20);
    ack(&mut r, PnSpace::ApplicationData, &[(0, 0)], delay, acked).unwrap();
    assert_eq!(r.rtt().latest(), ms(30 * 60_000));
    let mut now = acked;
    send(&mut r, PnSpace::ApplicationData, now);
    for _ in 0..20 {
        let t = r.loss_detection_timer().expect("PTO armed");
        assert!(t > now && t.saturating_since(now) <= MAX_SPAN, "{t:?} at {now:?}");
        now = t;
        r.on_timeout(now, |_| {});
        send(&mut r, PnSpace::ApplicationData, now);
    }
}
