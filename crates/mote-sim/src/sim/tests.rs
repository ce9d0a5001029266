//! Simulator tests: link behaviour end to end through test nodes, addressing and NAT,
//! the drive loop's limits, and determinism.

use super::*;
use crate::classify::PacketKind;
use crate::link::{Blackhole, GilbertElliott};
use crate::testing::{BulkReceiver, BulkSender, Echo, Outgoing, Scripted};
use crate::trace::Summary;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn dev() -> SocketAddr {
    addr("10.0.0.2:5000")
}

fn srv() -> SocketAddr {
    addr("192.0.2.1:443")
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at_ms(n: u64) -> Instant {
    Instant(n * 1000)
}

/// A simulator without QUIC classification (the test payloads are not QUIC).
fn sim(seed: u64) -> Simulator {
    Simulator::with_config(seed, SimConfig { classifier: Classifier::None, ..SimConfig::default() })
}

/// A scripted device sending `count` datagrams of `len` bytes (first 4 bytes: index), one
/// every `gap`, to a scripted server over a link whose up direction is `up`.
fn one_way(seed: u64, up: LinkConfig, count: u32, len: usize, gap: Duration) -> Simulator {
    let mut s = sim(seed);
    let mut client = Scripted::default();
    for i in 0..count {
        let mut data = vec![0x5a; len];
        data[..4].copy_from_slice(&i.to_be_bytes());
        client.send_at(Instant::ZERO + gap.saturating_mul(u64::from(i)), srv(), data);
    }
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    s.connect_with(dev(), srv(), up, LinkConfig::default()).unwrap();
    s
}

fn server_rx(s: &Simulator) -> &[crate::testing::Received] {
    &s.node::<Scripted>(NodeId(1)).unwrap().received
}

fn seqs(s: &Simulator) -> Vec<u32> {
    server_rx(s).iter().map(|r| u32::from_be_bytes(r.data[..4].try_into().unwrap())).collect()
}

#[test]
fn serialization_and_propagation_delay_nbiot() {
    // Server → device: 1200 bytes at 127 kbit/s (75.59 ms) plus 1 s one way.
    let mut s = sim(1);
    let d = s.add_node(Scripted::default(), dev()).unwrap();
    let mut server = Scripted::default();
    server.send_at(Instant::ZERO, dev(), vec![0; 1200]);
    server.send_at(Instant::ZERO, dev(), vec![0; 1200]);
    s.add_node(server, srv()).unwrap();
    s.connect(dev(), srv(), &LinkProfile::nbiot()).unwrap();
    s.run_to(Instant(5_000_000)).unwrap();
    let rx = &s.node::<Scripted>(d).unwrap().received;
    assert_eq!(rx.len(), 2);
    assert_eq!(rx[0].at, Instant(1_075_591));
    // The second waits for the first: back to back on the wire.
    assert_eq!(rx[1].at, Instant(1_151_182));
    let t = s.trace();
    assert_eq!(t.records()[0].direction, Some(Direction::Down));
    assert_eq!(t.summary_dir(Direction::Down).delivered_bytes, 2400);
}

#[test]
fn queue_tail_drop() {
    // 8 Mbit/s = 1 byte/µs; a 3000-byte buffer holds 3 waiting 1000-byte datagrams.
    let up = LinkConfig { rate_bps: Some(8_000_000), buffer_bytes: 3000, ..LinkConfig::default() };
    let mut s = one_way(1, up, 10, 1000, Duration::ZERO);
    s.run_to(at_ms(100)).unwrap();
    // One in service + three waiting; six tail-dropped.
    assert_eq!(seqs(&s), [0, 1, 2, 3]);
    let sum = s.trace().summary();
    assert_eq!(sum.drops(DropReason::Queue), 6);
    assert_eq!(sum.delivered_datagrams, 4);
    assert_eq!(server_rx(&s)[3].at, Instant(4000));
}

#[test]
fn random_loss_rate() {
    let up = LinkConfig { loss: 0.025, ..LinkConfig::default() };
    let n = 20_000;
    let mut s = one_way(42, up, n, 100, Duration(100));
    s.run_to(at_ms(10_000)).unwrap();
    let lost = s.trace().summary().drops(DropReason::Loss);
    // Mean 500, σ ≈ 22: ±5σ.
    assert!((390..=610).contains(&lost), "lost {lost}");
    assert_eq!(server_rx(&s).len() as u64, u64::from(n) - lost);
}

#[test]
fn gilbert_elliott_bursts() {
    let up =
        LinkConfig { burst_loss: Some(GilbertElliott::bursty(0.1, 5.0)), ..LinkConfig::default() };
    let n = 50_000;
    let mut s = one_way(7, up, n, 20, Duration(10));
    s.run_to(at_ms(10_000)).unwrap();
    // Lengths of runs of consecutive lost datagrams, in send order.
    let mut bursts = Vec::new();
    let mut run = 0u64;
    for r in s.trace().records() {
        if r.drop_reason() == Some(DropReason::BurstLoss) {
            run += 1;
        } else if run > 0 {
            bursts.push(run);
            run = 0;
        }
    }
    let lost: u64 = bursts.iter().sum::<u64>() + run;
    let rate = lost as f64 / f64::from(n);
    let mean_burst = bursts.iter().sum::<u64>() as f64 / bursts.len() as f64;
    assert!((0.085..0.115).contains(&rate), "loss rate {rate}");
    assert!((4.3..5.7).contains(&mean_burst), "mean burst {mean_burst}");
    assert!(bursts.iter().any(|&b| b >= 10), "no long bursts");
}

#[test]
fn reordering_delivers_out_of_order() {
    let up =
        LinkConfig { delay: ms(10), reorder: 0.1, reorder_delay: ms(5), ..LinkConfig::default() };
    let mut s = one_way(3, up, 1000, 50, ms(1));
    s.run_to(at_ms(5_000)).unwrap();
    let got = seqs(&s);
    assert_eq!(got.len(), 1000);
    let inversions = got.windows(2).filter(|w| w[0] > w[1]).count();
    let reordered = s.trace().summary().reordered;
    assert!((60..=140).contains(&reordered), "reordered {reordered}");
    assert!(inversions as u64 >= reordered / 2, "inversions {inversions}");
    // Every datagram still arrives exactly once.
    let mut sorted = got.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
}

#[test]
fn jitter_without_reordering_keeps_order() {
    let up = LinkConfig { delay: ms(10), jitter: ms(8), ..LinkConfig::default() };
    let mut s = one_way(3, up, 500, 50, ms(1));
    s.run_to(at_ms(5_000)).unwrap();
    let got = seqs(&s);
    assert_eq!(got, (0..500).collect::<Vec<_>>());
    let rx = server_rx(&s);
    assert!(rx.iter().any(|r| r.at.as_micros() % 1000 != 0), "no jitter applied");
}

#[test]
fn duplication() {
    let up = LinkConfig { duplicate: 0.2, ..LinkConfig::default() };
    let mut s = one_way(5, up, 1000, 50, ms(1));
    s.run_to(at_ms(5_000)).unwrap();
    let sum = s.trace().summary();
    assert!((140..=260).contains(&sum.duplicated), "duplicated {}", sum.duplicated);
    assert_eq!(sum.sent_datagrams, 1000);
    assert_eq!(server_rx(&s).len() as u64, 1000 + sum.duplicated);
    let dup = s.trace().records().iter().find(|r| !r.is_original()).unwrap();
    let orig = s.trace().get(dup.duplicate_of.unwrap()).unwrap();
    assert_eq!((orig.len, orig.sent, orig.to), (dup.len, dup.sent, dup.to));
}

#[test]
fn corruption_changes_exactly_one_byte_in_range() {
    let up = LinkConfig { corrupt: 1.0, corrupt_range: 4..12, ..LinkConfig::default() };
    let mut s = one_way(9, up, 300, 64, ms(1));
    s.run_to(at_ms(1_000)).unwrap();
    let rx = server_rx(&s);
    assert_eq!(rx.len(), 300);
    for (i, r) in rx.iter().enumerate() {
        let mut expect = [0x5a; 64];
        expect[..4].copy_from_slice(&(i as u32).to_be_bytes());
        let diff: Vec<usize> = (0..64).filter(|&j| r.data[j] != expect[j]).collect();
        assert_eq!(diff.len(), 1, "datagram {i}: {diff:?}");
        assert!((4..12).contains(&diff[0]));
        assert_eq!(s.trace().records()[i].corrupted_at, Some(diff[0]));
    }
}

#[test]
fn mtu_drops_oversized() {
    let up = LinkProfile::nbiot().up;
    let mut s = sim(1);
    let mut client = Scripted::default();
    client.send_at(Instant::ZERO, srv(), vec![0; 1473]);
    client.send_at(Instant::ZERO, srv(), vec![0; 1472]);
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    s.connect_with(dev(), srv(), up, LinkConfig::default()).unwrap();
    s.run_to(at_ms(5_000)).unwrap();
    assert_eq!(server_rx(&s).len(), 1);
    assert_eq!(server_rx(&s)[0].data.len(), 1472);
    let r = &s.trace().records()[0];
    assert_eq!(r.outcome, Outcome::Dropped(Instant::ZERO, DropReason::Mtu));
}

#[test]
fn blackhole_drops_only_inside_window() {
    let up = LinkConfig {
        delay: ms(50),
        blackholes: vec![Blackhole { start: at_ms(1_000), end: at_ms(2_000) }],
        ..LinkConfig::default()
    };
    let mut s = one_way(1, up, 30, 50, ms(100));
    s.run_to(at_ms(5_000)).unwrap();
    for r in s.trace().records() {
        let inside = (at_ms(1_000)..at_ms(2_000)).contains(&r.sent);
        assert_eq!(r.drop_reason() == Some(DropReason::Blackhole), inside, "sent {:?}", r.sent);
        assert_eq!(r.delivered(), !inside);
    }
    assert_eq!(s.trace().summary().drops(DropReason::Blackhole), 10);
}

#[test]
fn nat_rebinding_changes_observed_source() {
    let mut s = sim(1);
    let mut client = Scripted::default();
    for i in 0..20 {
        client.send_at(at_ms(i * 100), srv(), vec![i as u8; 10]);
    }
    let c = s.add_node(client, dev()).unwrap();
    let e = s.add_node(Echo::default(), srv()).unwrap();
    s.connect(dev(), srv(), &LinkProfile::ideal(ms(300))).unwrap();
    let before = addr("203.0.113.5:40000");
    let after = addr("203.0.113.5:40001");
    s.set_external_addr(dev(), before).unwrap();
    s.rebind_at(at_ms(1_000), dev(), after).unwrap();
    s.run_to(at_ms(5_000)).unwrap();

    let echo = s.node::<Echo>(e).unwrap();
    assert_eq!(echo.received.len(), 20);
    for r in &echo.received {
        let sent = r.at.saturating_since(Instant::ZERO).as_micros() - 150_000;
        let expect = if sent < 1_000_000 { before } else { after };
        assert_eq!(r.meta.remote, expect, "datagram sent at {sent}us");
        assert_eq!(r.meta.local, srv());
    }
    // Echoes to the old mapping that were still on their way at 1 s are lost; the
    // others reach the device on its own local address.
    let client = s.node::<Scripted>(c).unwrap();
    let lost = s.trace().summary().drops(DropReason::NoRoute);
    assert_eq!(client.received.len() as u64 + lost, 20);
    assert!(lost >= 1, "an echo to the old mapping was in flight");
    assert!(client.received.iter().all(|r| r.meta.local == dev() && r.meta.remote == srv()));
    assert_eq!(s.external_addr(dev()), Some(after));
}

#[test]
fn migration_to_second_address() {
    let mut s = sim(1);
    let wifi = addr("10.0.0.2:5000");
    let cell = addr("100.64.0.9:6000");
    let c = s.add_node(Scripted::default(), wifi).unwrap();
    let e = s.add_node(Echo::default(), srv()).unwrap();
    s.bind(c, cell).unwrap();
    assert_eq!(s.addresses(c), [wifi, cell]);
    s.connect(wifi, srv(), &LinkProfile::wlan()).unwrap();
    s.connect(cell, srv(), &LinkProfile::nbiot()).unwrap();
    {
        let node = s.node_mut::<Scripted>(c).unwrap();
        node.send_at(Instant::ZERO, srv(), vec![1; 100]);
        let out = Outgoing {
            to: srv(),
            data: vec![2; 100],
            segment_size: None,
            src: Some(cell),
            ecn: None,
        };
        let stray = Outgoing { src: Some(addr("10.9.9.9:1")), data: vec![3], ..out.clone() };
        node.push(at_ms(10), out);
        node.push(at_ms(20), stray);
        node.send_at(at_ms(30), addr("198.51.100.1:1"), vec![4]);
    }
    s.run_to(at_ms(10_000)).unwrap();
    let echo = s.node::<Echo>(e).unwrap();
    assert_eq!(echo.received.iter().map(|r| r.meta.remote).collect::<Vec<_>>(), [wifi, cell]);
    let client = s.node::<Scripted>(c).unwrap();
    assert_eq!(client.received.iter().map(|r| r.meta.local).collect::<Vec<_>>(), [wifi, cell]);
    let sum = s.trace().summary();
    assert_eq!(sum.drops(DropReason::UnboundSource), 1);
    assert_eq!(sum.drops(DropReason::NoRoute), 1);
}

#[test]
fn gso_batch_is_split() {
    let mut s = sim(1);
    let mut client = Scripted::default();
    let batch: Vec<u8> = (0..3500u32).map(|i| (i / 1200) as u8).collect();
    client.push(
        Instant::ZERO,
        Outgoing {
            to: srv(),
            data: batch,
            segment_size: Some(1200),
            src: None,
            ecn: Some(Ecn::Ect0),
        },
    );
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    s.connect(dev(), srv(), &LinkProfile::wlan()).unwrap();
    s.run_to(at_ms(100)).unwrap();
    let rx = server_rx(&s);
    assert_eq!(rx.iter().map(|r| r.data.len()).collect::<Vec<_>>(), [1200, 1200, 1100]);
    for (i, r) in rx.iter().enumerate() {
        assert!(r.data.iter().all(|&b| b == i as u8));
        assert_eq!(r.meta.ecn, Some(Ecn::Ect0));
    }
    assert_eq!(s.trace().summary().sent_datagrams, 3);
}

#[test]
fn ce_marking_only_touches_ecn_capable_datagrams() {
    // ce_mark = 1: every ECT(0)/ECT(1) datagram arrives CE; not-ECT ones stay unmarked.
    let mut s = sim(2);
    let mut client = Scripted::default();
    for (i, ecn) in [Some(Ecn::Ect0), None, Some(Ecn::Ect1)].into_iter().enumerate() {
        let out =
            Outgoing { to: srv(), data: vec![i as u8; 100], segment_size: None, src: None, ecn };
        client.push(at_ms(i as u64), out);
    }
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    let mut p = LinkProfile::wlan();
    p.up.ce_mark = 1.0;
    s.connect(dev(), srv(), &p).unwrap();
    s.run_to(at_ms(100)).unwrap();
    let marks: Vec<Option<Ecn>> = server_rx(&s).iter().map(|r| r.meta.ecn).collect();
    assert_eq!(marks, [Some(Ecn::Ce), None, Some(Ecn::Ce)]);
}

#[test]
fn ce_marking_above_a_queue_threshold() {
    // A burst into a 1 Mbit/s link: the first datagrams find an empty queue, later ones
    // queue behind more than 3000 bytes and are marked (an AQM marking instead of dropping).
    let mut s = sim(3);
    let mut client = Scripted::default();
    for i in 0..10u8 {
        let out = Outgoing {
            to: srv(),
            data: vec![i; 1000],
            segment_size: None,
            src: None,
            ecn: Some(Ecn::Ect0),
        };
        client.push(Instant::ZERO, out);
    }
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    let up = LinkConfig {
        rate_bps: Some(1_000_000),
        ce_threshold_bytes: Some(3000),
        ..LinkConfig::default()
    };
    s.connect_with(dev(), srv(), up, LinkConfig::default()).unwrap();
    s.run_to(at_ms(1000)).unwrap();
    let marks: Vec<bool> = server_rx(&s).iter().map(|r| r.meta.ecn == Some(Ecn::Ce)).collect();
    assert_eq!(marks.len(), 10);
    assert!(!marks[0] && !marks[1] && !marks[2] && !marks[3]);
    assert!(marks[5..].iter().all(|m| *m), "{marks:?}");
}

/// Asks for a timeout in the past forever without acting on it.
struct Spinner;

impl Node for Spinner {
    fn handle_datagram(&mut self, _: Instant, _: RecvMeta, _: &mut [u8]) {}
    fn poll_transmit(&mut self, _: Instant, _: &mut [u8]) -> Option<Transmit> {
        None
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        Some(Instant::ZERO)
    }
    fn handle_timeout(&mut self, _: Instant) {}
}

/// Never stops transmitting, or returns a transmit longer than the buffer.
struct Flooder {
    oversize: bool,
}

impl Node for Flooder {
    fn handle_datagram(&mut self, _: Instant, _: RecvMeta, _: &mut [u8]) {}
    fn poll_transmit(&mut self, _: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let len = if self.oversize { buf.len() + 1 } else { 10 };
        Some(Transmit::new(srv(), len))
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _: Instant) {}
}

#[test]
fn livelock_is_an_error() {
    let mut s = Simulator::with_config(
        1,
        SimConfig { max_events_per_instant: 1000, ..SimConfig::default() },
    );
    s.add_node(Spinner, dev()).unwrap();
    match s.run_to(at_ms(1_000)) {
        Err(SimError::Livelock { at, events }) => {
            assert_eq!(at, Instant::ZERO);
            assert_eq!(events, 1000);
        }
        other => panic!("expected livelock, got {other:?}"),
    }
    // The total limit too.
    let mut s = Simulator::with_config(1, SimConfig { max_events: 50, ..SimConfig::default() });
    s.add_node(Spinner, dev()).unwrap();
    assert!(matches!(s.run_to(at_ms(1)), Err(SimError::EventLimit { events: 50, .. })));
}

#[test]
fn misbehaving_transmits_are_errors() {
    let config = SimConfig { max_transmits_per_poll: 100, ..SimConfig::default() };
    let mut s = Simulator::with_config(1, config.clone());
    s.add_node(Flooder { oversize: false }, dev()).unwrap();
    assert!(matches!(s.step(), Err(SimError::TransmitFlood { node: NodeId(0), .. })));
    let mut s = Simulator::with_config(1, config);
    s.add_node(Flooder { oversize: true }, dev()).unwrap();
    assert!(matches!(s.step(), Err(SimError::BadTransmit { .. })));
}

#[test]
fn setup_errors() {
    let mut s = sim(1);
    let a = s.add_node(Echo::default(), dev()).unwrap();
    assert_eq!(s.add_node(Echo::default(), dev()).unwrap_err(), SimError::AddressInUse(dev()));
    s.connect(dev(), srv(), &LinkProfile::wlan()).unwrap();
    assert!(matches!(
        s.connect(srv(), dev(), &LinkProfile::wlan()),
        Err(SimError::AlreadyConnected { .. })
    ));
    assert_eq!(s.rebind_at(Instant::ZERO, srv(), dev()), Err(SimError::UnknownAddress(srv())));
    assert!(s.node::<Scripted>(a).is_none(), "wrong type");
    let pending = s.pending_events();
    assert!(s.node_mut::<Scripted>(a).is_none());
    assert_eq!(s.pending_events(), pending, "no wake-up for a failed borrow");
    assert!(s.node::<Echo>(NodeId(9)).is_none());
    assert_eq!(s.wake(NodeId(9)), Err(SimError::UnknownNode(NodeId(9))));
}

#[test]
fn run_until_condition_and_idle() {
    let mut s = sim(1);
    let mut client = Scripted::default();
    for i in 0..10 {
        client.send_at(at_ms(i * 10), srv(), vec![0; 10]);
    }
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    s.connect(dev(), srv(), &LinkProfile::ideal(ms(2))).unwrap();
    let stop = s.run_until(at_ms(1_000), |s| server_rx(s).len() >= 3).unwrap();
    assert_eq!(stop, Stop::Done);
    assert_eq!(s.now(), Instant(21_000));
    assert_eq!(s.run_until(at_ms(50), |_| false).unwrap(), Stop::Deadline);
    assert_eq!(s.now(), at_ms(50));
    assert_eq!(s.run_until(at_ms(1_000), |_| false).unwrap(), Stop::Idle);
    assert_eq!(server_rx(&s).len(), 10);
    // Acting on a node wakes it.
    s.node_mut::<Scripted>(NodeId(0)).unwrap().send_at(Instant::ZERO, srv(), vec![1]);
    s.run_for(ms(10)).unwrap();
    assert_eq!(server_rx(&s).len(), 11);
    assert_eq!(s.now(), Instant(101_000));
}

/// The bulk transfer used for throughput and determinism checks; returns the simulator.
fn bulk(seed: u64, profile: &LinkProfile, total: u32) -> Simulator {
    let mut s = Simulator::new(seed);
    let rto = profile.rtt().saturating_mul(3) + ms(10);
    s.add_node(BulkSender::new(srv(), 1200, total, 16, rto), dev()).unwrap();
    s.add_node(BulkReceiver::default(), srv()).unwrap();
    s.connect(dev(), srv(), profile).unwrap();
    let stop = s
        .run_until(at_ms(600_000), |s| {
            s.node::<BulkSender>(NodeId(0)).is_some_and(BulkSender::done)
        })
        .unwrap();
    assert_eq!(stop, Stop::Done);
    s
}

#[test]
fn bulk_transfer_runs_at_link_rate() {
    let s = bulk(1, &LinkProfile::wlan(), 1000);
    let done = s.node::<BulkSender>(NodeId(0)).unwrap().done_at.unwrap();
    // 1000 × 1200 B at 20 Mbit/s = 480 ms, plus one RTT and a serialization.
    assert!((at_ms(480)..at_ms(500)).contains(&done), "done at {done:?}");
    let up: Summary = s.trace().summary_dir(Direction::Up);
    assert_eq!(up.sent_datagrams, 1000);
    assert_eq!(up.sent_bytes, 1_200_000);
    assert_eq!(up.drops_total(), 0);
    assert_eq!(s.trace().summary_dir(Direction::Down).sent_bytes, 4000);
}

/// A lossy, jittery, reordering, duplicating, corrupting link.
fn messy() -> LinkProfile {
    LinkProfile::lossy()
        .with_jitter(ms(3))
        .with_reordering(0.05, ms(4))
        .with_duplication(0.02)
        .with_corruption(0.01, 8..1200)
        .with_burst_loss(GilbertElliott::bursty(0.01, 3.0))
}

#[test]
fn same_seed_same_trace() {
    let a = bulk(1234, &messy(), 600);
    let b = bulk(1234, &messy(), 600);
    assert_eq!(a.trace().digest(), b.trace().digest());
    assert_eq!(a.trace(), b.trace());
    assert_eq!(a.now(), b.now());
    let sa = a.node::<BulkSender>(NodeId(0)).unwrap();
    assert!(sa.retransmissions > 0, "the messy link lost nothing");
    assert_eq!(sa.retransmissions, b.node::<BulkSender>(NodeId(0)).unwrap().retransmissions);

    let c = bulk(1235, &messy(), 600);
    assert_ne!(a.trace().digest(), c.trace().digest());
}

#[test]
fn quic_packets_are_classified() {
    // A v1 Initial coalesced with a Handshake packet, then a short-header packet.
    let mut initial = vec![0xc0, 0, 0, 0, 1, 1, 0xaa, 1, 0xbb, 0, 2, 0x11, 0x11];
    initial.extend([0xe0, 0, 0, 0, 1, 1, 0xaa, 1, 0xbb, 2, 0x22, 0x22]);
    let mut s = Simulator::new(1);
    let mut client = Scripted::default();
    client.send_at(Instant::ZERO, srv(), initial);
    client.send_at(Instant::ZERO, srv(), vec![0x41, 1, 2, 3]);
    s.add_node(client, dev()).unwrap();
    s.add_node(Scripted::default(), srv()).unwrap();
    s.connect(dev(), srv(), &LinkProfile::wlan()).unwrap();
    s.run_to(at_ms(10)).unwrap();
    let sum = s.trace().summary_from(NodeId(0));
    assert_eq!(sum.packets(PacketKind::Initial), 1);
    assert_eq!(sum.packets(PacketKind::Handshake), 1);
    assert_eq!(sum.packets(PacketKind::OneRtt), 1);
    let line = s.trace().to_jsonl();
    assert!(line.lines().next().unwrap().contains(r#""packets":["initial","handshake"]"#));
}
