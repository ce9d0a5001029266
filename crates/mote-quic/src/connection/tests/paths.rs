//! Connection IDs, path validation and migration, PMTU, ECN and stateless reset, on
//! in-memory pairs; the attack tests drive one abuse for a long time and check that memory
//! stays bounded and the connection lives (or closes cleanly).

use super::*;
use crate::recovery::SentPacket;

/// Delivers a 1-RTT packet with `frames`, built by `dir`'s sender with its next packet
/// number, straight to the receiver. The sender's packet number advances as for a packet
/// it sent without recording it (like an ACK-only packet), so acknowledgements of it are
/// not "ACKs of packets never sent".
fn inject(p: &mut Pair, dir: Dir, frames: &[Frame<'_>]) {
    let now = p.now;
    let app = PnSpace::ApplicationData;
    let (mut pkt, from) = match dir {
        Dir::ToServer => {
            let pkt = craft(&p.client, frames, 0);
            let pn = p.client.recovery.next_pn(app);
            let rec = SentPacket::new(pn, now, 0, false, false, SentFrames::EMPTY);
            p.client.recovery.on_packet_sent(app, rec).unwrap();
            (pkt, p.client_addr)
        }
        Dir::ToClient => {
            let s = p.server();
            let pkt = craft(s, frames, 0);
            let pn = s.recovery.next_pn(app);
            let rec = SentPacket::new(pn, now, 0, false, false, SentFrames::EMPTY);
            s.recovery.on_packet_sent(app, rec).unwrap();
            (pkt, addr(SERVER_ADDR))
        }
    };
    match dir {
        Dir::ToServer => p.server().handle_datagram(now, from, &mut pkt),
        Dir::ToClient => p.client.handle_datagram(now, from, &mut pkt),
    }
}

/// Runs the pair for `d` of virtual time without jumping past it (to an idle timeout).
fn settle(p: &mut Pair, d: Duration) {
    let end = p.now + d;
    p.flush();
    while p.next_time().is_some_and(|t| t <= end) {
        p.step();
    }
    p.now = p.now.max(end);
}

fn established() -> Pair {
    let mut p = Pair::new(cfg(), server_cfg());
    p.handshake();
    settle(&mut p, Duration::from_millis(200));
    assert!(
        !p.client.is_closed() && !p.server().is_closed(),
        "{:?} {:?}",
        p.client.close_reason(),
        p.server().close_reason()
    );
    p
}

// Only the migration tests read events.
#[cfg(feature = "migration")]
fn events<X: TlsSession>(
    c: &mut Connection<RustCrypto, X, Vec<u8>, Vec<u8>, 4, 32, 8>,
) -> Vec<Event> {
    let mut v = Vec::new();
    while let Some(e) = c.poll_event() {
        v.push(e);
    }
    v
}

/// A server → client download of `n` bytes that must arrive intact.
fn download_ok(p: &mut Pair, n: usize) {
    assert!(
        !p.client.is_closed(),
        "client closed: {:?} / server {:?}",
        p.client.close_reason(),
        p.server().close_reason()
    );
    let body = pattern(n);
    let got = download(p, &body, Duration::from_secs(120));
    assert!(got == body, "download differs: {} of {} bytes", got.len(), body.len());
}

// --- connection IDs ---

// The server issues connection IDs beyond the handshake's only with `cid-rotation`.
#[cfg(feature = "cid-rotation")]
#[test]
fn cids_are_issued_up_to_the_peer_limit() {
    let mut p = established();
    // Both sides advertise REMOTE_CIDS (4) and keep LOCAL_CIDS (4) issued.
    assert_eq!(p.client.local_cids().count(), LOCAL_CIDS);
    assert_eq!(p.server().local_cids().count(), LOCAL_CIDS);
    assert_eq!(p.client.stats().cids_issued, LOCAL_CIDS as u64 - 1);
    assert!(p.client.has_spare_peer_cid() && p.server().has_spare_peer_cid());
    // Every one of them reaches the server connection.
    let ids: Vec<ConnectionId> = p.server().local_cids().copied().collect();
    for id in &ids {
        assert!(p.server().owns_cid(id));
    }
    // NEW_CONNECTION_ID frames were acknowledged: nothing is pending.
    assert!(!p.server().local_cids.has_pending() && !p.client.local_cids.has_pending());
}

// The server issues connection IDs beyond the handshake's only with `cid-rotation`.
#[cfg(feature = "cid-rotation")]
#[test]
fn retired_cids_are_replaced_and_stop_routing() {
    let mut p = established();
    let before: Vec<ConnectionId> = p.server().local_cids().copied().collect();
    // The client retires the server's connection ID 1 (not the one it addresses).
    let retired = before[1];
    p.client.remote_cids.retire(1).unwrap();
    settle(&mut p, Duration::from_millis(200));
    assert!(!p.server().owns_cid(&retired));
    // A replacement was issued and delivered; the count is back to the limit.
    assert_eq!(p.server().local_cids().count(), LOCAL_CIDS);
    assert_eq!(p.server().stats().cids_issued, LOCAL_CIDS as u64);
    if cfg!(feature = "stats") {
        assert_eq!(p.server().stats().cids_retired_by_peer, 1);
    }
    assert!(!p.server().local_cids().any(|c| *c == retired));
    download_ok(&mut p, 20_000);
}

#[test]
fn retiring_the_packets_own_cid_or_an_unknown_one_is_a_violation() {
    // RFC 9000 §19.16: the packet carrying the frame is addressed to sequence 0.
    let mut p = established();
    inject(&mut p, Dir::ToServer, &[Frame::RetireConnectionId { sequence: VarInt::ZERO }]);
    assert_eq!(local_close_code(p.server()), Some((0x0a, Some(0x19))));
    // A sequence number never issued.
    let mut p = established();
    let seq = VarInt::from_u32(1000);
    inject(&mut p, Dir::ToServer, &[Frame::RetireConnectionId { sequence: seq }]);
    assert_eq!(local_close_code(p.server()), Some((0x0a, Some(0x19))));
}

/// RFC 9000 §19.16 on the client: retiring the packet's own connection ID or one never
/// issued closes with PROTOCOL_VIOLATION. Without `cid-rotation` and `migration` (devices;
/// run `--no-default-features --features server`) the client decides this without its
/// table, having issued only sequence 0; with them, through `LocalCids::on_retire`.
#[test]
fn a_clients_retired_cid_is_a_violation_with_or_without_rotation() {
    let mut p = established();
    inject(&mut p, Dir::ToClient, &[Frame::RetireConnectionId { sequence: VarInt::ZERO }]);
    assert_eq!(local_close_code(&p.client), Some((0x0a, Some(0x19))));
    let mut p = established();
    let seq = VarInt::from_u32(1000);
    inject(&mut p, Dir::ToClient, &[Frame::RetireConnectionId { sequence: seq }]);
    assert_eq!(local_close_code(&p.client), Some((0x0a, Some(0x19))));
}

#[test]
fn more_cids_than_our_limit_is_connection_id_limit_error() {
    let mut p = established();
    let mut frames = Vec::new();
    for k in 0..2u8 {
        frames.push(Frame::NewConnectionId {
            sequence: VarInt::from_u32(100 + u32::from(k)),
            retire_prior_to: VarInt::ZERO,
            cid: ConnectionId::new(&[0xee, k, 1, 2, 3, 4, 5, 6]).unwrap(),
            reset_token: [k; 16],
        });
    }
    inject(&mut p, Dir::ToClient, &frames);
    assert_eq!(local_close_code(&p.client), Some((0x09, Some(0x18))));
}

#[test]
fn retire_prior_to_moves_to_a_new_cid() {
    let mut p = established();
    let old = *p.client.remote_cid();
    // The server (its state bypassed) issues sequence 10 and asks for everything below it
    // to be retired.
    let cid = ConnectionId::new(&[0xab; 8]).unwrap();
    let f = Frame::NewConnectionId {
        sequence: VarInt::from_u32(10),
        retire_prior_to: VarInt::from_u32(10),
        cid,
        reset_token: [3; 16],
    };
    inject(&mut p, Dir::ToClient, &[f]);
    assert!(!p.client.is_closed());
    assert_eq!(*p.client.remote_cid(), cid);
    assert_ne!(old, cid);
    // Four retirements (0..=3) wait for the server, which has not issued sequence 10;
    // without `cid-rotation` the server issued only sequence 0, the one retirement.
    let issued = if cfg!(feature = "cid-rotation") { LOCAL_CIDS } else { 1 };
    assert_eq!(p.client.retirements_pending(), issued);
}

#[test]
fn attack_new_connection_id_flood_is_bounded() {
    // A peer rotating without end: every NEW_CONNECTION_ID retires all earlier ones, while
    // our RETIRE_CONNECTION_ID frames never get acknowledged (its ACKs are dropped). The
    // retirement queue stays within RETIRE_QUEUE and the connection closes cleanly with
    // CONNECTION_ID_LIMIT_ERROR (quic-go, ngtcp2 do the same).
    let mut p = established();
    p.filter = Box::new(|dir, _, _| if dir == Dir::ToClient { Fate::Drop } else { Fate::Deliver });
    let mut closed_at = None;
    for k in 0..5000u32 {
        let seq = 100 + k;
        let f = Frame::NewConnectionId {
            sequence: VarInt::from_u32(seq),
            retire_prior_to: VarInt::from_u32(seq),
            cid: ConnectionId::new(&seq.to_be_bytes()).unwrap(),
            reset_token: [k as u8; 16],
        };
        inject(&mut p, Dir::ToClient, &[f]);
        assert!(p.client.retirements_pending() <= RETIRE_QUEUE);
        if p.client.is_closed() {
            closed_at = Some(k);
            break;
        }
        p.step();
    }
    assert!(closed_at.is_some_and(|k| k <= RETIRE_QUEUE as u32 + 1), "{closed_at:?}");
    assert_eq!(local_close_code(&p.client), Some((0x09, Some(0x18))));
}

#[test]
fn attack_new_connection_id_flood_with_acks_stays_alive() {
    // The same rotation, but the peer acknowledges our retirements: the connection keeps
    // up with thousands of rotations, bounded, and still carries data.
    let mut p = established();
    for k in 0..3000u32 {
        let seq = 100 + k;
        let f = Frame::NewConnectionId {
            sequence: VarInt::from_u32(seq),
            retire_prior_to: VarInt::from_u32(seq),
            cid: ConnectionId::new(&seq.to_be_bytes()).unwrap(),
            reset_token: [k as u8; 16],
        };
        inject(&mut p, Dir::ToClient, &[f]);
        assert!(p.client.retirements_pending() <= RETIRE_QUEUE);
        assert!(!p.client.is_closed(), "closed at {k}: {:?}", p.client.close_reason());
        p.now += Duration::from_millis(2);
        // Our RETIRE frames for sequence numbers the (bypassed) server never issued would
        // make it close: acknowledge them with a crafted ACK instead of delivering them.
        let now = p.now;
        let mut buf = vec![0u8; 4096];
        while p.client.poll_transmit(now, &mut buf).is_some() {}
        let mut pns: Vec<u64> =
            p.client.recovery.application_packets().iter().map(|r| r.pn).collect();
        pns.sort_unstable_by(|a, b| b.cmp(a));
        if pns.is_empty() {
            continue;
        }
        let ranges: Vec<(u64, u64)> = pns.iter().map(|&pn| (pn, pn)).collect();
        let order = crate::frame::RangeOrder::Descending;
        let ack = crate::frame::Ack::new(&ranges, order, VarInt::ZERO, None).unwrap();
        inject(&mut p, Dir::ToClient, &[Frame::Ack(ack)]);
    }
    assert!(!p.client.is_closed());
    assert_eq!(*p.client.remote_cid(), ConnectionId::new(&3099u32.to_be_bytes()).unwrap());
    assert_eq!(p.client.retirements_pending(), 0);
}

// The server issues connection IDs beyond the handshake's only with `cid-rotation`.
#[cfg(feature = "cid-rotation")]
#[test]
fn attack_retire_connection_id_loop_is_bounded() {
    // The client retires the server's spare connection IDs as fast as they arrive, for a
    // long time; the server replaces each one, its table and routing state never grow, and
    // the connection still carries data at the end.
    let mut p = established();
    let mut retired = 0u64;
    for _ in 0..2000 {
        let spare = p.client.remote_cids.spare_seq();
        if let Some(seq) = spare {
            p.client.remote_cids.retire(seq).unwrap();
            retired += 1;
        }
        p.step();
        assert!(p.server().local_cids().count() <= LOCAL_CIDS);
        assert!(!p.server().is_closed() && !p.client.is_closed());
    }
    settle(&mut p, Duration::from_millis(200));
    let st = p.server().stats();
    assert!(retired > 500, "{retired}");
    if cfg!(feature = "stats") {
        assert_eq!(st.cids_retired_by_peer, retired);
    }
    assert_eq!(st.cids_issued, retired + LOCAL_CIDS as u64 - 1);
    // Repeated retirements of old numbers change nothing.
    let live = p.server().local_cids.iter().map(|i| i.seq).filter(|s| *s > 0).min().unwrap();
    let frames: Vec<Frame<'_>> = (1..live.min(60))
        .map(|s| Frame::RetireConnectionId { sequence: VarInt::new(s).unwrap() })
        .collect();
    inject(&mut p, Dir::ToServer, &frames);
    assert!(!p.server().is_closed());
    download_ok(&mut p, 30_000);
}

// --- path validation ---

#[test]
fn attack_path_challenge_flood_is_bounded() {
    // Thousands of PATH_CHALLENGE frames, 30 per packet, during a download: each answered
    // at most from a bounded queue (the newest kept), the download intact.
    let mut p = established();
    let body = pattern(200_000);
    let (req, id) = transfer(&mut p, b"GET", Duration::from_secs(30));
    assert_eq!(req, b"GET");
    let mut written = 0;
    let mut got = Vec::new();
    let mut round = 0u32;
    let mut done = false;
    let ok = p.run_until(Duration::from_secs(60), |p| {
        let s = p.server.as_mut().unwrap();
        if written < body.len() {
            written += s.stream_send(id, &body[written..]).unwrap();
            if written == body.len() {
                s.stream_finish(id).unwrap();
            }
        }
        if round < 400 {
            round += 1;
            let frames: Vec<Frame<'_>> =
                (0..30u8).map(|k| Frame::PathChallenge { data: [k; 8] }).collect();
            inject(p, Dir::ToServer, &frames);
            #[cfg(feature = "migration")]
            assert!(p.server().migration.responses.iter().flatten().count() <= PATH_RESPONSES);
        }
        // All 400 rounds, even when the download ends first (unpaced, without `pacing`).
        done |= drain(&mut p.client, id, &mut got);
        done && round >= 400
    });
    assert!(ok && got == body, "{} of {}", got.len(), body.len());
    assert!(!p.server().is_closed());
    #[cfg(feature = "migration")]
    assert_eq!(p.server().stats().path_challenges_received, 400 * 30);
}

#[cfg(feature = "migration")]
#[test]
fn attack_path_response_not_stuck_behind_collapsed_cwnd() {
    // The server's congestion window is full (its ACKs are being dropped) when a
    // PATH_CHALLENGE arrives: the PATH_RESPONSE still leaves at once.
    let mut p = established();
    let (_, id) = transfer(&mut p, b"GET", Duration::from_secs(30));
    let body = pattern(500_000);
    p.server().stream_send(id, &body).unwrap();
    p.filter = Box::new(|dir, _, _| if dir == Dir::ToServer { Fate::Drop } else { Fate::Deliver });
    p.run_until(Duration::from_secs(3), |p| p.server().recovery().send_window() == 0);
    assert_eq!(p.server().recovery().send_window(), 0);
    // The client challenges (as when it validates a path) with known data.
    let data = [0x5a; 8];
    let deadline = p.now + Duration::from_secs(30);
    p.client.migration.start_validation(deadline, false);
    let pto = p.client.recovery.pto_period();
    p.client.migration.challenge_sent(p.now, pto, data);
    inject(&mut p, Dir::ToServer, &[Frame::PathChallenge { data }]);
    let now = p.now;
    let mut buf = vec![0u8; 2048];
    let t = p.server().poll_transmit(now, &mut buf).expect("PATH_RESPONSE despite cwnd");
    assert!(p.server().migration.next_response().is_none());
    assert_eq!(p.server().recovery().send_window(), 0);
    // The response is padded to 1200 bytes (RFC 9000 §8.2.2) and validates at the client.
    assert!(t.len >= 1200);
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut buf[..t.len]);
    assert!(events(&mut p.client).contains(&Event::PathValidated));
}

#[cfg(feature = "migration")]
#[test]
fn nat_rebinding_is_validated_and_followed() {
    let mut p = established();
    let (_, id) = transfer(&mut p, b"GET", Duration::from_secs(30));
    let body = pattern(300_000);
    let mut written = 0;
    let mut got = Vec::new();
    let mut rebinds = 0;
    let ok = p.run_until(Duration::from_secs(60), |p| {
        let s = p.server.as_mut().unwrap();
        if written < body.len() {
            written += s.stream_send(id, &body[written..]).unwrap();
            if written == body.len() {
                s.stream_finish(id).unwrap();
            }
        }
        // Port rebinding after 50 KB, address rebinding after 150 KB.
        if rebinds == 0 && got.len() > 50_000 {
            p.client_addr = addr("10.0.0.2:6000");
            rebinds = 1;
        } else if rebinds == 1 && got.len() > 150_000 {
            p.client_addr = addr("10.9.9.9:6000");
            rebinds = 2;
        }
        drain(&mut p.client, id, &mut got)
    });
    assert!(ok && got == body, "{} of {}", got.len(), body.len());
    let s = p.server();
    assert_eq!(s.remote(), addr("10.9.9.9:6000"));
    let st = s.stats();
    assert_eq!((st.migrations, st.paths_validated), (2, 2));
    assert!(!s.is_validating_path());
    // The server moved to fresh connection IDs of the client (RFC 9000 §9.5).
    if cfg!(feature = "stats") {
        assert!(p.client.stats().cids_retired_by_peer >= 2);
    }
}

#[cfg(feature = "migration")]
#[test]
fn probing_from_a_new_address_does_not_move_the_connection() {
    // A PATH_CHALLENGE alone from another address (probing) is answered there; the
    // connection stays on its path (RFC 9000 §9.1, §9.3).
    let mut p = established();
    p.client_addr = addr("10.0.0.99:7000");
    inject(&mut p, Dir::ToServer, &[Frame::PathChallenge { data: [1; 8] }]);
    let now = p.now;
    let mut buf = vec![0u8; 2048];
    let t = p.server().poll_transmit(now, &mut buf).unwrap();
    assert_eq!(t.destination, addr("10.0.0.99:7000"));
    assert_eq!(p.server().remote(), addr(CLIENT_ADDR));
    assert_eq!(p.server().stats().migrations, 0);
}

#[cfg(feature = "migration")]
#[test]
fn a_probe_of_another_local_address_is_answered_from_it() {
    // RFC 9000 §8.2.2, §9.6: a client (here through a NAT, so from a new address) probes the
    // server's preferred address; the PATH_RESPONSE must leave from that address, not from
    // the one the connection uses, or the client never sees it (regression: it left from
    // the current local address and the interop relay dropped it).
    let mut p = established();
    let now = p.now;
    let preferred = addr("192.0.2.2:8443");
    let probe_from = addr("10.0.0.99:7000");
    let mut probe = craft(&p.client, &[Frame::PathChallenge { data: [7; 8] }], 0);
    let app = PnSpace::ApplicationData;
    let pn = p.client.recovery.next_pn(app);
    let rec = SentPacket::new(pn, now, 0, false, false, SentFrames::EMPTY);
    p.client.recovery.on_packet_sent(app, rec).unwrap();
    let info = RecvInfo { local: Some(preferred), ..RecvInfo::new(probe_from) };
    p.server().handle_recv(now, &info, &mut probe);
    let mut buf = vec![0u8; 2048];
    let mut sent = Vec::new();
    while let Some(t) = p.server().poll_transmit(now, &mut buf) {
        sent.push((t.destination, t.src));
    }
    assert!(sent.contains(&(probe_from, Some(preferred))), "{sent:?}");
    // The connection itself stays where it was.
    assert_eq!(p.server().remote(), p.client_addr);
    // RFC 9000 §9.6.3: the same datagram challenged the probing address.
    let Some((to, data, false)) = p.server().migration.probed else {
        panic!("no challenge to the probing address: {:?}", p.server().migration.probed)
    };
    assert_eq!(to, probe_from);
    // Its answer validates that address, so the client moving there is not challenged
    // again (nor held to the amplification limit).
    p.client_addr = probe_from;
    inject(&mut p, Dir::ToServer, &[Frame::PathResponse { data }]);
    assert!(p.server().migration.probed_valid(probe_from));
    assert_eq!(p.server().remote(), addr(CLIENT_ADDR), "a PATH_RESPONSE alone does not move it");
    inject(&mut p, Dir::ToServer, &[Frame::Ping]);
    assert_eq!(p.server().remote(), probe_from);
    assert!(!p.server().is_validating_path());
    assert_eq!(p.server().migration.amp_room(), u64::MAX);
}

#[cfg(feature = "migration")]
#[test]
fn the_first_packet_to_a_new_address_challenges_it_despite_a_full_window() {
    // A NAT rebinding in the middle of a download: the server's window is full when the
    // client's packets arrive from a new address. The first packet the server sends there
    // carries PATH_CHALLENGE (regression: it was an ACK-only packet, the challenge waiting
    // for the window; the interop runner's rebind cases check the first packet).
    let mut p = established();
    let (_, id) = transfer(&mut p, b"GET", Duration::from_secs(30));
    let body = pattern(500_000);
    p.server().stream_send(id, &body).unwrap();
    p.filter = Box::new(|dir, _, _| if dir == Dir::ToServer { Fate::Drop } else { Fate::Deliver });
    p.run_until(Duration::from_secs(3), |p| p.server().recovery().send_window() == 0);
    assert_eq!(p.server().recovery().send_window(), 0);
    p.client_addr = addr("10.0.0.7:6000");
    inject(&mut p, Dir::ToServer, &[Frame::Ping]);
    assert_eq!(p.server().remote(), addr("10.0.0.7:6000"));
    assert!(p.server().is_validating_path());
    let now = p.now;
    let mut buf = vec![0u8; 2048];
    let t = p.server().poll_transmit(now, &mut buf).expect("a packet to the new address");
    assert_eq!(t.destination, addr("10.0.0.7:6000"));
    assert!(!p.server().challenge_due(), "the PATH_CHALLENGE went in that packet");
    // The client answers it and the path validates.
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut buf[..t.len]);
    p.filter = Box::new(|_, _, _| Fate::Deliver);
    settle(&mut p, Duration::from_millis(500));
    assert!(!p.server().is_validating_path());
    assert_eq!(p.server().stats().paths_validated, 1);
}

#[cfg(feature = "migration")]
#[test]
fn failed_validation_returns_to_the_old_address() {
    // An attacker replays a packet from a spoofed address: the server moves, but the
    // spoofed address never answers the challenge, so it returns (RFC 9000 §9.3.2).
    let mut p = established();
    p.client_addr = addr("203.0.113.66:9999");
    inject(&mut p, Dir::ToServer, &[Frame::Ping]);
    assert_eq!(p.server().remote(), addr("203.0.113.66:9999"));
    // Datagrams to the spoofed address are lost; the real client stays where it was.
    p.client_addr = addr(CLIENT_ADDR);
    let spoofed = addr("203.0.113.66:9999");
    let dests: std::rc::Rc<core::cell::RefCell<Vec<bool>>> = Default::default();
    let _ = (&dests, spoofed);
    p.filter = Box::new(|_, _, _| Fate::Deliver);
    p.run_until(Duration::from_secs(10), |p| !p.server().is_validating_path());
    assert!(!p.server().is_validating_path());
    assert_eq!(p.server().remote(), addr(CLIENT_ADDR));
    assert!(!p.server().is_closed());
    download_ok(&mut p, 20_000);
}

#[cfg(feature = "migration")]
#[test]
fn client_migrates_with_a_new_cid() {
    let mut p = established();
    let old_dcid = *p.client.remote_cid();
    p.client.migrate(p.now).unwrap();
    assert_ne!(*p.client.remote_cid(), old_dcid);
    // The client's new socket.
    p.client_addr = addr("10.0.1.2:5555");
    download_ok(&mut p, 100_000);
    assert!(!p.client.is_validating_path());
    assert_eq!(p.client.stats().paths_validated, 1);
    assert_eq!(p.server().remote(), addr("10.0.1.2:5555"));
    assert_eq!(p.server().stats().paths_validated, 1);
    // The old server connection ID was retired and replaced.
    assert!(!p.server().owns_cid(&old_dcid));
}

// --- PMTU ---

#[cfg(feature = "pmtud")]
#[test]
fn pmtud_probes_up_and_detects_a_black_hole() {
    let mut p = Pair::new(cfg(), server_cfg().with_pmtud(1452));
    p.handshake();
    settle(&mut p, Duration::from_secs(2));
    // The client accepts 1472; the server's ceiling is 1452, which the pair's link carries.
    assert_eq!(p.server().current_mtu(), 1452);
    assert!(p.server().stats().pmtu_probes_acked >= 1);
    download_ok(&mut p, 100_000);
    // Now the path drops everything above 1300 bytes: back to 1200, the data still flows.
    p.filter = Box::new(|_, _, d| if d.len() > 1300 { Fate::Drop } else { Fate::Deliver });
    download_ok(&mut p, 200_000);
    assert_eq!(p.server().stats().pmtu_blackholes, 1);
    assert!(p.server().current_mtu() <= 1300);
}

#[cfg(feature = "pmtud")]
#[test]
fn pmtud_finds_a_link_mtu_below_the_ceiling() {
    let mut p = Pair::new(cfg(), server_cfg().with_pmtud(1452));
    p.filter = Box::new(|_, _, d| if d.len() > 1350 { Fate::Drop } else { Fate::Deliver });
    p.handshake();
    download_ok(&mut p, 300_000);
    let mtu = p.server().current_mtu();
    assert!(mtu <= 1350 && mtu > 1350 - 16, "{mtu}");
    // Lost probes are no congestion: nothing but the probes was lost.
    assert_eq!(p.server().stats().packets_lost, 0);
}

#[test]
fn cve_2024_53259_icmp_ptb_below_1200_is_ignored() {
    // Forged ICMP "packet too big" messages claiming tiny MTUs, over and over during a
    // transfer: the datagram size never drops below 1200 and the transfer completes.
    let mut p = Pair::new(cfg(), server_cfg().with_pmtud(1452));
    p.handshake();
    settle(&mut p, Duration::from_secs(2));
    let before = p.server().current_mtu();
    for mtu in [0usize, 68, 576, 1199] {
        for _ in 0..1000 {
            assert!(!p.server().on_icmp_ptb(mtu));
        }
    }
    assert_eq!(p.server().current_mtu(), before);
    let from = p.log.len();
    download_ok(&mut p, 50_000);
    // RFC 9000 §14.2.1: the claims changed no datagram size: the download still fills
    // datagrams of the size held before. (Small datagrams, an ACK alone, are legitimate:
    // 34 B without `pacing` or `std`, whose timing bundles fewer frames with it.)
    let largest = p.log[from..].iter().filter(|l| l.1 == Dir::ToClient).map(|l| l.2).max();
    assert_eq!(largest, Some(before));
    // A plausible claim (at least 1200, below the current size) does lower it.
    #[cfg(feature = "pmtud")]
    {
        assert!(p.server().on_icmp_ptb(1300));
        assert_eq!(p.server().current_mtu(), 1300);
        download_ok(&mut p, 50_000);
    }
}

// --- ECN ---

#[test]
fn ecn_marks_are_counted_and_validated() {
    let mut p = established();
    download_ok(&mut p, 100_000);
    // Without `ecn` nothing is marked and validation never starts (RFC 9000 §13.4.2: the
    // path is treated as not ECN-capable).
    let state = if cfg!(feature = "ecn") { EcnState::Capable } else { EcnState::Failed };
    assert_eq!(p.server().ecn_state(), state);
    assert_eq!(p.client.ecn_state(), state);
    if cfg!(feature = "stats") {
        assert_eq!(p.client.stats().ecn_received[0] > 50, cfg!(feature = "ecn"));
        assert_eq!(p.client.stats().ecn_received[2], 0);
    }
}

#[test]
fn ecn_validation_fails_on_a_bleaching_path() {
    let mut p = Pair::new(cfg(), server_cfg());
    p.bleach_ecn = true;
    p.handshake();
    download_ok(&mut p, 50_000);
    assert_eq!(p.server().ecn_state(), EcnState::Failed);
    let now = p.now;
    p.server().ping();
    let mut buf = vec![0u8; 2048];
    let t = p.server().poll_transmit(now, &mut buf).unwrap();
    assert_eq!(t.ecn, Ecn::NotEct);
}

// CE marks only come on marked (ECT) packets: without `ecn` there are none.
#[cfg(feature = "ecn")]
#[test]
fn ecn_ce_reduces_the_congestion_window() {
    let run = |ce: bool| {
        let mut p = established();
        p.ce_to_client = ce;
        download_ok(&mut p, 300_000);
        let s = p.server();
        (s.recovery().congestion_window(), s.stats().packets_lost, s.ecn_state())
    };
    let (clean_cwnd, _, _) = run(false);
    let (ce_cwnd, lost, state) = run(true);
    // Nothing was lost, yet the window shrank: CE counts are congestion (RFC 9002 §7.1).
    assert_eq!(lost, 0);
    assert_eq!(state, EcnState::Capable);
    assert!(ce_cwnd < clean_cwnd, "{ce_cwnd} vs {clean_cwnd}");
}

// --- stateless reset ---

#[cfg(feature = "stateless-reset")]
#[test]
fn stateless_reset_is_detected_by_token() {
    let key = [7u8; 32];
    let mut scfg = server_cfg();
    scfg.stateless_reset_key = Some(key);
    let mut p = Pair::new(cfg(), scfg);
    p.handshake();
    // The server's handshake connection ID has its token in the transport parameters; a
    // "restarted" server derives it from the same key and the DCID alone.
    let dcid = *p.client.remote_cid();
    let token = crate::endpoint::reset::derive_token(&P, &key, &dcid).unwrap();
    let mut rng = TestRng(42);
    let mut buf = [0u8; 64];
    let n = crate::endpoint::reset::write_reset(&mut buf, 40, &token, &mut rng).unwrap();
    // A wrong token does nothing.
    let mut wrong = buf;
    wrong[n - 1] ^= 1;
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut wrong[..n]);
    assert!(!p.client.is_closed());
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut buf[..n]);
    assert!(p.client.is_drained());
    assert_eq!(p.client.close_reason(), Some(CloseReason::StatelessReset));
    // Silently: nothing more is sent.
    let mut out = vec![0u8; 2048];
    assert!(p.client.poll_transmit(now, &mut out).is_none());
}
