//! Attack-class regression tests (RFC 9000 §21; anchors-verification §4.2–4.3): each drives
//! one attack for thousands of packets against a live connection (or endpoint) and checks
//! that every table stays at its cap and that the victim stays usable or closes cleanly
//! with the right transport error. Named `cve_<id>_…` after the advisory of the class, or
//! `attack_<class>_…`.
//!
//! The attacker forges packets with the peer's real keys ([`Forger`]), numbered far above
//! anything the peer sent; once forging starts the in-memory pair is no longer stepped
//! (the victim's ACKs of forged numbers would rightly close the real peer), so liveness is
//! checked on the victim alone: it keeps accepting authenticated packets and hands their
//! stream data to the application.

use std::vec;
use std::vec::Vec;

use mote_crypto::rustcrypto::RustCrypto;
use mote_tls::ClientSession;

use super::tests::{
    addr, configs, pattern, storage, transfer, Pair, TestRng, CLIENT_ADDR, P, SERVER_ADDR,
};
use super::*;
use crate::coding::{VarInt, Writer};
use crate::endpoint::{Endpoint, EndpointConfig, NoAccept, Slot};
use crate::frame::{Ack, Frame, RangeOrder};
use crate::packet::{self, LongHeader, LongType, ShortHeader, TAG_LEN};
use crate::recovery::{widen, MAX_TRACKED_PN};
use crate::stream::Read;

type Conn<X> = Connection<RustCrypto, X, Vec<u8>, Vec<u8>, 4, 32, 8>;

/// Forges packets as `from` would send them (its keys and connection IDs), with packet
/// numbers of its own, far above what `from` really sent.
struct Forger {
    next: u64,
}

impl Forger {
    fn new<X: TlsSession>(from: &Conn<X>) -> Self {
        Self { next: from.recovery.next_pn(PnSpace::ApplicationData) + 1000 }
    }

    fn one_rtt<X: TlsSession>(&mut self, from: &Conn<X>, frames: &[Frame<'_>]) -> Vec<u8> {
        let pn = self.next;
        self.next += 1;
        one_rtt(from, frames, pn)
    }
}

/// A 1-RTT packet from `from` whose plaintext is `payload` as given (frames or not).
fn one_rtt_raw<X: TlsSession>(from: &Conn<X>, payload: &[u8], pn: u64) -> Vec<u8> {
    let k = from.hs.keys.one_rtt.as_ref().expect("1-RTT keys");
    let mut buf = vec![0u8; payload.len() + 64];
    let mut w = Writer::new(&mut buf);
    let pn_offset = ShortHeader { dcid: &from.hs.cids.remote, spin: false }
        .emit(&mut w, k.tx_phase, pn, 4)
        .unwrap();
    w.put_slice(payload).unwrap();
    let len = w.position().max(pn_offset + 4) + TAG_LEN;
    k.keys.tx.protect(&mut buf[..len], pn_offset, pn).unwrap();
    buf.truncate(len);
    buf
}

/// A 1-RTT packet from `from` carrying `frames`, numbered `pn`.
fn one_rtt<X: TlsSession>(from: &Conn<X>, frames: &[Frame<'_>], pn: u64) -> Vec<u8> {
    one_rtt_raw(from, &encode(frames), pn)
}

/// `frames` encoded, followed by 4 bytes of PADDING (so any packet can be sampled).
fn encode(frames: &[Frame<'_>]) -> Vec<u8> {
    let mut payload = vec![0u8; 1400];
    let mut w = Writer::new(&mut payload);
    for f in frames {
        f.emit(&mut w).unwrap();
    }
    w.put_repeated(0, 4).unwrap();
    let n = w.position();
    payload.truncate(n);
    payload
}

/// An Initial packet from `from` (its Initial keys) carrying `frames`, numbered `pn`,
/// with `token`; client Initials are padded to 1200 bytes.
fn initial<X: TlsSession>(from: &Conn<X>, frames: &[Frame<'_>], pn: u64, token: &[u8]) -> Vec<u8> {
    initial_raw(from, &encode(frames), pn, token)
}

/// An Initial packet from `from` whose plaintext is `payload`.
fn initial_raw<X: TlsSession>(from: &Conn<X>, payload: &[u8], pn: u64, token: &[u8]) -> Vec<u8> {
    long_raw(from, LongType::Initial, payload, pn, token)
}

/// A Handshake packet from `from` (its Handshake keys) carrying `frames`.
fn handshake<X: TlsSession>(from: &Conn<X>, frames: &[Frame<'_>], pn: u64) -> Vec<u8> {
    long_raw(from, LongType::Handshake, &encode(frames), pn, &[])
}

/// A long-header packet of type `ty` (Initial or Handshake) from `from`.
fn long_raw<X: TlsSession>(
    from: &Conn<X>,
    ty: LongType,
    payload: &[u8],
    pn: u64,
    token: &[u8],
) -> Vec<u8> {
    let k = match ty {
        LongType::Initial => &from.hs.keys.initial.as_ref().expect("Initial keys").tx,
        _ => &from.hs.keys.handshake.as_ref().expect("Handshake keys").tx,
    };
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    let h = LongHeader {
        ty,
        version: from.hs.version,
        dcid: &from.hs.cids.remote,
        scid: &from.hs.cids.local,
        token,
    };
    let off = h.emit(&mut w, pn, 4).unwrap();
    w.put_slice(payload).unwrap();
    let padded = ty == LongType::Initial && from.side == Side::Client;
    let min = if padded { MIN_INITIAL_SIZE - TAG_LEN } else { 0 };
    let pad = min.saturating_sub(w.position()).max(4);
    w.put_repeated(0, pad).unwrap();
    let len = w.position() + TAG_LEN;
    off.set_length(&mut buf, len).unwrap();
    k.protect(&mut buf[..len], off.pn_offset, pn).unwrap();
    buf.truncate(len);
    buf
}

fn close_code<X: TlsSession>(c: &Conn<X>) -> Option<(u64, Option<u64>)> {
    match c.close_reason() {
        Some(CloseReason::Local(c)) => Some((c.code, c.frame_type)),
        _ => None,
    }
}

/// Runs the victim's due timers and collects what it sends: (datagrams, bytes).
fn pump<X: TlsSession>(v: &mut Conn<X>, now: Instant) -> (usize, usize) {
    if v.poll_timeout().is_some_and(|t| t <= now) {
        v.handle_timeout(now);
    }
    let mut buf = vec![0u8; 65536];
    let (mut n, mut bytes) = (0, 0);
    while let Some(t) = v.poll_transmit(now, &mut buf) {
        n += 1;
        bytes += t.len;
        assert!(n < 100_000, "runaway transmit");
    }
    (n, bytes)
}

/// An established pair with a client-opened bidirectional stream both sides know, settled
/// (nothing in flight), the client's events drained.
fn established() -> (Pair, StreamId) {
    let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
    p.handshake();
    let (_, id) = transfer(&mut p, b"hi", Duration::from_secs(5));
    p.run_until(Duration::from_secs(5), |p| {
        p.client.recovery().bytes_in_flight() == 0
            && p.server.as_ref().is_some_and(|s| s.recovery().bytes_in_flight() == 0)
    });
    while p.client.poll_event().is_some() {}
    while p.server().poll_event().is_some() {}
    (p, id)
}

/// The client (victim) still works: a forged-but-authenticated STREAM frame from the
/// server on `id` at `offset` reaches its application.
fn client_still_reads(p: &mut Pair, f: &mut Forger, id: StreamId, offset: u64) {
    let data = b"still alive";
    let frame = Frame::Stream {
        stream_id: id.varint(),
        offset: VarInt::new(offset).unwrap(),
        data,
        fin: false,
        has_length: true,
    };
    let mut pkt = f.one_rtt(p.server(), &[frame]);
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    assert!(!p.client.is_closed(), "{:?}", p.client.close_reason());
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while let Some(Read::Data(n)) = p.client.stream_recv(id, &mut buf) {
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got.ends_with(data), "{got:?}");
}

// --- HANDSHAKE_DONE ---

#[test]
fn attack_handshake_done_repeated_is_ignored() {
    let (mut p, id) = established();
    let mut f = Forger::new(p.server());
    let mut sent = 0;
    for i in 0..5000u64 {
        let mut pkt = f.one_rtt(p.server(), &[Frame::HandshakeDone]);
        p.now += Duration::from_micros(500);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert!(!p.client.is_closed(), "packet {i}: {:?}", p.client.close_reason());
        sent += pump(&mut p.client, now).0;
        assert!(p.client.rx_data.ranges().len() <= 8);
    }
    // Confirmed once, never again; ACK-only replies (HANDSHAKE_DONE elicits an ACK).
    assert!(core::iter::from_fn(|| p.client.poll_event()).all(|e| e != Event::HandshakeConfirmed));
    assert!(sent <= 5000 / 2 + 1, "{sent} replies");
    assert_eq!(p.client.recovery().bytes_in_flight(), 0);
    client_still_reads(&mut p, &mut f, id, 0);
}

#[test]
fn packet_numbers_beyond_32_bits_close_a_device_and_not_a_host() {
    // Issue 8: a device records received packet numbers in 32 bits. A peer's number past
    // 2^32 - 2 (reached here in two steps of 2^31, each decodable from 4 bytes) closes a
    // device connection with INTERNAL_ERROR rather than being truncated; a host goes on.
    let (mut p, _) = established();
    let base = p.server().recovery.next_pn(PnSpace::ApplicationData) + 1000;
    for pn in [base + (1 << 31), (1 << 32) + 5] {
        let mut pkt = one_rtt(p.server(), &[Frame::Ping], pn);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert!(!p.client.is_closed() || pn > MAX_TRACKED_PN, "{:?}", p.client.close_reason());
    }
    #[cfg(feature = "std")]
    {
        assert!(!p.client.is_closed(), "{:?}", p.client.close_reason());
        assert_eq!(p.client.rx_data.largest_received(), Some((1 << 32) + 5));
    }
    #[cfg(not(feature = "std"))]
    {
        assert_eq!(close_code(&p.client), Some((0x01, None)));
        assert_eq!(p.client.rx_data.largest_received(), Some(base + (1 << 31)));
    }
}

#[test]
fn cve_2025_59530_premature_handshake_done_in_initial_closes() {
    // HANDSHAKE_DONE before the handshake completed, in the only packet type the client can
    // decrypt then (Initial): RFC 9000 §12.4 forbids it there → PROTOCOL_VIOLATION, no
    // crash, the handshake not confirmed.
    let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
    p.filter = std::boxed::Box::new(|d, _, _| match d {
        super::tests::Dir::ToClient => super::tests::Fate::Drop,
        super::tests::Dir::ToServer => super::tests::Fate::Deliver,
    });
    p.run_until(Duration::from_millis(50), |p| p.server.is_some());
    let mut pkt = initial(p.server(), &[Frame::HandshakeDone], 0, &[]);
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    assert_eq!(close_code(&p.client), Some((0x0a, Some(0x1e))));
    assert!(!p.client.is_handshake_confirmed());
}

// --- CRYPTO after the handshake ---

/// A TLS NewSessionTicket message (RFC 8446 §4.6.1) with a `len`-byte ticket.
fn new_session_ticket(nonce: u8, len: usize) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&7200u32.to_be_bytes()); // ticket_lifetime
    body.extend_from_slice(&0x0102_0304u32.to_be_bytes()); // ticket_age_add
    body.extend_from_slice(&[1, nonce]); // ticket_nonce
    body.extend_from_slice(&(len as u16).to_be_bytes());
    body.extend(core::iter::repeat_n(nonce, len)); // ticket
    body.extend_from_slice(&[0, 0]); // extensions
    let mut m = vec![4u8];
    m.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    m.extend_from_slice(&body);
    m
}

#[test]
fn cve_2024_1765_crypto_flood_after_handshake_is_bounded() {
    // Thousands of well-formed NewSessionTickets in 1-RTT CRYPTO frames: each is consumed
    // as it arrives (only the latest ticket is kept), so nothing accumulates.
    let (mut p, id) = established();
    let mut f = Forger::new(p.server());
    let mut offset = 0u64;
    for i in 0..3000u32 {
        let m = new_session_ticket(i as u8, 64);
        let frame = Frame::Crypto { offset: VarInt::new(offset).unwrap(), data: &m };
        offset += m.len() as u64;
        let mut pkt = f.one_rtt(p.server(), &[frame]);
        p.now += Duration::from_micros(500);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert!(!p.client.is_closed(), "ticket {i}: {:?}", p.client.close_reason());
        pump(&mut p.client, now);
        assert!(p.client.crypto_recv[2].peek().is_empty(), "CRYPTO data left buffered");
    }
    assert!(offset > 200_000, "the flood carried {offset} bytes");
    // The tickets were taken (the latest one is held), not ignored.
    #[cfg(feature = "resumption")]
    assert!(p.client.hs.ticket_len > 0 && p.client.hs.ticket_len <= tls::TICKET_MAX);
    // Events merge: at most one NewTicket however many arrived.
    let tickets =
        core::iter::from_fn(|| p.client.poll_event()).filter(|e| *e == Event::NewTicket).count();
    assert!(tickets <= 1);
    client_still_reads(&mut p, &mut f, id, 0);

    // CRYPTO data beyond what the level buffers: CRYPTO_BUFFER_EXCEEDED.
    let far = Frame::Crypto { offset: VarInt::new(offset + 1_000_000).unwrap(), data: &[4; 8] };
    let mut pkt = f.one_rtt(p.server(), &[far]);
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    assert_eq!(close_code(&p.client), Some((0x0d, Some(0x06))));
}

#[test]
fn cve_2023_39322_partial_post_handshake_message_is_bounded() {
    // A post-handshake message announcing 16 MB, then contiguous CRYPTO data: buffering is
    // bounded by the CRYPTO buffer and the TLS message limit, so the connection closes
    // (CRYPTO_BUFFER_EXCEEDED or a TLS alert) long before the announced length.
    let (mut p, _) = established();
    let mut f = Forger::new(p.server());
    let mut offset = 0u64;
    let mut chunk = vec![0x55u8; 1000];
    chunk[..4].copy_from_slice(&[4, 0xff, 0xff, 0xff]);
    let mut packets = 0;
    while !p.client.is_closed() {
        let frame = Frame::Crypto { offset: VarInt::new(offset).unwrap(), data: &chunk };
        offset += chunk.len() as u64;
        let mut pkt = f.one_rtt(p.server(), &[frame]);
        chunk[..4].copy_from_slice(&[0x55; 4]);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        packets += 1;
        assert!(packets <= 16, "{offset} bytes of one message accepted");
    }
    let (code, _) = close_code(&p.client).expect("closed by us");
    assert!(code == 0x0d || (0x100..0x200).contains(&code), "code {code:#x}");
}

#[test]
fn attack_handshake_packets_replayed_after_confirmation_are_dropped() {
    // CVE-2023-46239 class (packets for a discarded space): every Initial and Handshake
    // datagram of the handshake replayed 100 times to both sides once the Initial and
    // Handshake keys are gone: dropped without state, timers or replies; 1-RTT still works.
    let (mut p, id) = established();
    let log: Vec<_> = p
        .log
        .iter()
        .filter(|(_, _, _, d)| d.first().is_some_and(|b| b & 0x80 != 0))
        .map(|(_, dir, _, d)| (*dir, d.clone()))
        .collect();
    assert!(log.len() >= 3, "{} long-header datagrams", log.len());
    let (c_idle, s_idle) = (p.client.idle_start, p.server().idle_start);
    let (c_drop, s_drop) = (p.client.stats().packets_dropped, p.server().stats().packets_dropped);
    let now = p.now + Duration::from_millis(1);
    for _ in 0..100 {
        for (dir, d) in &log {
            let mut d = d.clone();
            match dir {
                super::tests::Dir::ToClient => {
                    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut d)
                }
                super::tests::Dir::ToServer => {
                    p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut d)
                }
            }
        }
    }
    assert!(!p.client.is_closed() && !p.server().is_closed());
    assert_eq!((p.client.idle_start, p.server().idle_start), (c_idle, s_idle));
    if cfg!(feature = "stats") {
        assert!(p.client.stats().packets_dropped - c_drop >= 100);
        assert!(p.server().stats().packets_dropped - s_drop >= 100);
    }
    assert_eq!(pump(&mut p.client, now).0 + pump(p.server(), now).0, 0);
    p.now = now;
    let (got, _) = transfer(&mut p, &pattern(5000), Duration::from_secs(10));
    assert_eq!(got.len(), 5000);
    let _ = id;
}

/// RFC 9000 §12.3, §13.1: a packet whose out-of-order STREAM data is dropped (builds
/// without `reorder`) is not acknowledged, so the peer sends the data again; but it was
/// processed, and a replayed copy is a duplicate: dropped, no idle-timer restart. (With
/// `reorder` the data is kept and the packet acknowledged.)
#[test]
fn attack_replayed_packet_with_dropped_data_is_a_duplicate() {
    let (mut p, id) = established();
    let pn = p.server().recovery.next_pn(PnSpace::ApplicationData) + 1000;
    let far = Frame::Stream {
        stream_id: id.varint(),
        offset: VarInt::from_u32(1000),
        data: b"x",
        fin: false,
        has_length: true,
    };
    let pkt = one_rtt(p.server(), &[far, Frame::Ping], pn);
    let now = p.now + Duration::from_millis(1);
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt.clone());
    assert!(!p.client.is_closed(), "{:?}", p.client.close_reason());
    assert_eq!(p.client.idle_start, now);
    assert_eq!(p.client.rx_data.ranges().contains(pn), cfg!(feature = "reorder"));
    for i in 1..=10u64 {
        let later = now + Duration::from_millis(i);
        p.client.handle_datagram(later, addr(SERVER_ADDR), &mut pkt.clone());
        assert_eq!(p.client.idle_start, now, "copy {i} was processed again");
    }
}

/// RFC 9000 §7.2, §5.1.2: the server's NEW_CONNECTION_ID with Retire Prior To moves the
/// client's Destination Connection ID on before the handshake is confirmed; the server's
/// Handshake packets still carry the Source Connection ID it chose during the handshake and
/// are processed (before, they were dropped).
#[test]
fn handshake_packets_keep_the_servers_scid_after_retire_prior_to() {
    let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
    p.run_until(Duration::from_secs(5), |p| p.client.hs.keys.one_rtt.is_some());
    assert!(p.client.hs.keys.handshake.is_some());
    let cid = crate::ConnectionId::new(&[0x5a; 8]).unwrap();
    let ncid = Frame::NewConnectionId {
        sequence: VarInt::from_u32(1),
        retire_prior_to: VarInt::from_u32(1),
        cid,
        reset_token: [9; 16],
    };
    let mut pkt = one_rtt(p.server(), &[ncid], 1000);
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    assert!(!p.client.is_closed(), "{:?}", p.client.close_reason());
    assert_eq!(p.client.hs.cids.remote, cid);
    let mut pkt = handshake(p.server(), &[Frame::Ping], 1000);
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    assert!(p.client.rx_handshake.is_duplicate(1000), "dropped");
    assert!(!p.client.is_closed());
}

// --- ACK validation: optimistic ACKs and ACKs of packets never sent ---

/// The server sends `bytes` to the client on a fresh stream; returns the pair.
fn after_download(bytes: usize) -> Pair {
    let (mut p, id) = established();
    let data = pattern(bytes);
    let mut written = 0;
    let mut got = Vec::new();
    let ok = p.run_until(Duration::from_secs(60), |p| {
        let s = p.server.as_mut().unwrap();
        if written < data.len() {
            written += s.stream_send(id, &data[written..]).unwrap();
        }
        let mut buf = [0u8; 4096];
        while let Some(Read::Data(n)) = p.client.stream_recv(id, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        got.len() == data.len()
    });
    assert!(ok && got == data, "download failed: {:?}", p.server().close_reason());
    p.run_until(Duration::from_secs(5), |p| {
        p.server.as_ref().is_some_and(|s| s.recovery().bytes_in_flight() == 0)
    });
    p
}

/// The packet numbers of `c`'s unacknowledged Application Data packets, as descending
/// ranges: what an attacker that really receives them acknowledges. (Only the stream-reset
/// flood, `max-streams-updates`, reads them.)
#[cfg(feature = "max-streams-updates")]
fn live_ranges<X: TlsSession>(c: &Conn<X>) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let mut pns: Vec<u64> = c.recovery().application_packets().iter().map(|p| p.pn).collect();
    pns.sort_unstable();
    for pn in pns {
        match ranges.last_mut() {
            Some((_, hi)) if *hi + 1 == pn => *hi = pn,
            _ => ranges.push((pn, pn)),
        }
    }
    ranges.reverse();
    ranges
}

fn skipped_pns<X: TlsSession>(c: &Conn<X>) -> Vec<u64> {
    let sent = c.recovery().application_packets();
    (0..c.recovery().next_pn(PnSpace::ApplicationData)).filter(|&pn| sent.is_skipped(pn)).collect()
}

#[test]
fn cve_2025_4820_optimistic_ack_of_skipped_packet_number_closes() {
    // The server skipped packet numbers while sending 200 KB (and the transfer did not
    // suffer); an optimistic ACK claiming everything up to the largest sent covers a
    // skipped number → PROTOCOL_VIOLATION before the congestion window moves.
    let mut p = after_download(200 * 1024);
    let skipped = skipped_pns(p.server());
    assert!(!skipped.is_empty(), "no packet number skipped");
    let largest = p.server().recovery().next_pn(PnSpace::ApplicationData) - 1;
    let cwnd = p.server().recovery().congestion_window();
    let ranges = [(0, largest)];
    let ack = Ack::new(&ranges, RangeOrder::Descending, VarInt::ZERO, None).unwrap();
    let mut f = Forger::new(&p.client);
    let mut pkt = f.one_rtt(&p.client, &[Frame::Ack(ack)]);
    let now = p.now;
    p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
    assert_eq!(close_code(p.server()), Some((0x0a, Some(0x02))));
    assert_eq!(p.server().recovery().congestion_window(), cwnd);
}

#[test]
fn attack_optimistic_ack_during_transfer_is_caught() {
    // An optimistic receiver acknowledges every packet number as soon as it could exist
    // (ranges [0, n] for growing n, ahead of what arrived). The random skips catch it
    // within a few hundred packets, long before the window can run away.
    let (mut p, id) = established();
    let data = pattern(400 * 1024);
    p.server().stream_send(id, &data[..16 * 1024]).unwrap();
    let mut f = Forger::new(&p.client);
    let mut buf = vec![0u8; 65536];
    let mut acked_upto = 0u64;
    for round in 0..2000 {
        p.now += Duration::from_millis(1);
        let now = p.now;
        let s = p.server.as_mut().unwrap();
        let _ = s.stream_send(id, &data[..2048]);
        while s.poll_transmit(now, &mut buf).is_some() {}
        let next = s.recovery().next_pn(PnSpace::ApplicationData);
        // Claim a bit more than was sent so far (but never a number not yet used).
        acked_upto = acked_upto.max(next.saturating_sub(1));
        let ranges = [(0, acked_upto)];
        let ack = Ack::new(&ranges, RangeOrder::Descending, VarInt::ZERO, None).unwrap();
        // Flow control is no obstacle either: the attacker hands out credit freely.
        let credit = VarInt::from_u32(1 << 30);
        let frames = [
            Frame::Ack(ack),
            Frame::MaxData { max: credit },
            Frame::MaxStreamData { stream_id: id.varint(), max: credit },
        ];
        let mut pkt = f.one_rtt(&p.client, &frames);
        let s = p.server.as_mut().unwrap();
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        if s.is_closed() {
            assert_eq!(close_code(s), Some((0x0a, Some(0x02))));
            assert!(round < 1000, "caught only after {round} rounds");
            return;
        }
    }
    panic!("optimistic ACKs never detected");
}

#[test]
fn cve_2025_4821_ack_of_unsent_packets_closes_without_cwnd_growth() {
    for case in 0..3u64 {
        let mut p = after_download(50 * 1024);
        let next = p.server().recovery().next_pn(PnSpace::ApplicationData);
        let cwnd = p.server().recovery().congestion_window();
        let inflight = p.server().recovery().bytes_in_flight();
        // Above the largest sent; straddling it; up to the top of the varint range.
        let ranges = match case {
            0 => [(next, next + 1000)],
            1 => [(next.saturating_sub(2), next + 5)],
            _ => [(next, (1 << 62) - 1)],
        };
        let ack = Ack::new(&ranges, RangeOrder::Descending, VarInt::ZERO, None).unwrap();
        let mut f = Forger::new(&p.client);
        let mut pkt = f.one_rtt(&p.client, &[Frame::Ack(ack)]);
        let now = p.now;
        p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        assert_eq!(close_code(p.server()), Some((0x0a, Some(0x02))), "case {case}");
        assert_eq!(p.server().recovery().congestion_window(), cwnd);
        assert_eq!(p.server().recovery().bytes_in_flight(), inflight);
    }
}

#[test]
fn attack_repeated_acks_never_grow_cwnd() {
    // The same (genuine) ACK ranges replayed 5000 times: nothing is newly acknowledged, so
    // the congestion window and bytes in flight do not move.
    let mut p = after_download(100 * 1024);
    let ranges: Vec<(u64, u64)> =
        p.client.rx_data.ranges().as_slice().iter().map(|r| (widen(r.0), widen(r.1))).collect();
    assert!(!ranges.is_empty());
    let cwnd = p.server().recovery().congestion_window();
    let mut f = Forger::new(&p.client);
    // Whatever was due before the flood (an ACK of the client's last packets) goes out.
    if let Some(t) = p.server().rx_data.ack_deadline() {
        p.now = p.now.max(t);
    }
    let now = p.now;
    pump(p.server(), now);
    for i in 0..5000 {
        let ack = Ack::new(&ranges, RangeOrder::Ascending, VarInt::ZERO, None)
            .or_else(|| Ack::new(&ranges, RangeOrder::Descending, VarInt::ZERO, None))
            .unwrap();
        let mut pkt = f.one_rtt(&p.client, &[Frame::Ack(ack)]);
        p.now += Duration::from_micros(200);
        let now = p.now;
        p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        assert!(!p.server().is_closed(), "ACK {i}: {:?}", p.server().close_reason());
        assert_eq!(p.server().recovery().congestion_window(), cwnd);
        assert_eq!(pump(p.server(), now).0, 0, "a reply to ACK {i}");
    }
    // ACK-only packets elicit nothing.
    let now = p.now;
    assert_eq!(pump(p.server(), now).0, 0);
}

// --- frame types ---

#[test]
fn attack_unknown_frame_types_are_frame_encoding_errors() {
    // RUSTSEC-2023-0063: an unknown frame type closes with FRAME_ENCODING_ERROR, whatever
    // its encoding (1 to 8 bytes), never a panic.
    let types: [&[u8]; 6] = [
        &[0x1f],
        &[0x21, 0, 0],
        &[0x3f],
        &[0x40, 0x40, 1, 2],
        &[0x80, 0x12, 0x34, 0x56],
        &[0xc0, 0, 0, 0, 0, 0, 0, 0x32],
    ];
    let (p0, _) = established();
    let mut p = p0;
    for (i, ty) in types.iter().enumerate() {
        if i > 0 {
            p = established().0;
        }
        let mut payload = ty.to_vec();
        payload.extend_from_slice(&[0; 8]);
        let pn = Forger::new(p.server()).next;
        let mut buf = one_rtt_raw(p.server(), &payload, pn);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut buf);
        let (code, _) = close_code(&p.client).unwrap_or_else(|| panic!("type {ty:?} accepted"));
        assert_eq!(code, 0x07, "type {ty:?}");
    }
}

#[test]
fn attack_frames_forbidden_in_initial_are_protocol_violations() {
    // RFC 9000 §12.4: only PADDING, PING, ACK, CRYPTO and CONNECTION_CLOSE in Initial.
    let stream = Frame::Stream {
        stream_id: VarInt::ZERO,
        offset: VarInt::ZERO,
        data: b"x",
        fin: false,
        has_length: true,
    };
    let forbidden = [
        (stream, 0x0a),
        (Frame::MaxData { max: VarInt::from_u32(1 << 20) }, 0x10),
        (Frame::PathChallenge { data: [1; 8] }, 0x1a),
        (Frame::NewToken { token: b"token" }, 0x07),
        (Frame::HandshakeDone, 0x1e),
        (
            Frame::ResetStream {
                stream_id: VarInt::ZERO,
                error_code: VarInt::ZERO,
                final_size: VarInt::ZERO,
            },
            0x04,
        ),
    ];
    for (frame, ty) in forbidden {
        // To the server (in the client's first Initial datagram) and to the client.
        let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
        p.filter = std::boxed::Box::new(|d, _, _| match d {
            super::tests::Dir::ToClient => super::tests::Fate::Drop,
            super::tests::Dir::ToServer => super::tests::Fate::Deliver,
        });
        p.run_until(Duration::from_millis(50), |p| p.server.is_some());
        let mut pkt = initial(p.server(), &[Frame::Ping, frame], 0, &[]);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert_eq!(close_code(&p.client), Some((0x0a, Some(ty))), "{frame:?} to the client");
        let mut pkt = initial(&p.client, &[Frame::Ping, frame], 5, &[]);
        p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        assert_eq!(close_code(p.server()), Some((0x0a, Some(ty))), "{frame:?} to the server");
    }
}

#[test]
fn attack_frames_forbidden_in_handshake_are_protocol_violations() {
    // RFC 9000 §12.4, Handshake packets: the same small set as Initial. The client gets
    // the server's Initial (its ServerHello: Handshake keys) but nothing of the server's
    // Handshake flight, so it is mid-handshake when the forged packet arrives.
    let forbidden = [
        (Frame::HandshakeDone, 0x1e),
        (Frame::MaxStreams { dir: StreamDir::Bidi, max: VarInt::from_u32(9) }, 0x12),
        (Frame::NewToken { token: b"token" }, 0x07),
        (Frame::PathResponse { data: [2; 8] }, 0x1b),
    ];
    for (frame, ty) in forbidden {
        let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
        p.filter = std::boxed::Box::new(|d, n, bytes| match (d, n) {
            (super::tests::Dir::ToClient, 0) => {
                let first = packet::parse(bytes, 8, false).map(|p| p.len).unwrap_or(0);
                bytes.truncate(first);
                super::tests::Fate::Deliver
            }
            (super::tests::Dir::ToClient, _) => super::tests::Fate::Drop,
            _ => super::tests::Fate::Deliver,
        });
        p.run_until(Duration::from_secs(1), |p| p.client.hs.keys.handshake.is_some());
        assert!(!p.client.is_handshake_complete() && !p.client.is_closed());
        let mut pkt = handshake(p.server(), &[Frame::Ping, frame], 100);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert_eq!(close_code(&p.client), Some((0x0a, Some(ty))), "{frame:?}");
        assert!(!p.client.is_handshake_confirmed());
    }
}

#[test]
fn attack_new_token_from_client_is_protocol_violation() {
    let (mut p, _) = established();
    let mut f = Forger::new(&p.client);
    let mut pkt = f.one_rtt(&p.client, &[Frame::NewToken { token: b"t" }]);
    let now = p.now;
    p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
    assert_eq!(close_code(p.server()), Some((0x0a, Some(0x07))));
}

// --- transport parameters ---

fn tp(id: u64, value: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; 16];
    let mut w = Writer::new(&mut v);
    w.put_varint_u64(id).unwrap();
    w.put_varint_u64(value.len() as u64).unwrap();
    let n = w.position();
    v.truncate(n);
    v.extend_from_slice(value);
    v
}

/// A client whose ClientHello carries `encode(its source connection ID)` as its QUIC
/// transport parameters, run against a server; returns the server's close code, or
/// `None` if the handshake completed.
fn handshake_with_client_params(encode: impl Fn(&[u8]) -> Vec<u8>) -> Option<u64> {
    let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
    let cfgs = configs();
    let config = ConnectionConfig::device();
    let mut rng = TestRng(77);
    let mut drbg = rng::Drbg::from_rng(P, &mut rng).unwrap();
    let draw = super::random_cid::client_draw(&mut drbg, config.local_cid_len).unwrap();
    let original_dcid = draw.original_dcid;
    let cids = tls::Cids {
        local: draw.local,
        remote: original_dcid,
        peer_scid: original_dcid,
        original_dcid,
        retry_scid: None,
    };
    let tls = ClientSession::new(P, cfgs.client, None);
    let mut c = super::tests::Client::by_value(|slot| {
        super::tests::Client::init(
            slot,
            &config,
            Side::Client,
            P,
            |s| s.write(tls),
            storage(4096, 16384),
            Instant::ZERO,
            addr(SERVER_ADDR),
            drbg,
            cids,
            Some(draw.token),
        )
    })
    .unwrap();
    let params = encode(&draw.local);
    c.hs.local_tp[..params.len()].copy_from_slice(&params);
    c.hs.local_tp_len = params.len();
    c.tls.start(&mut c.hs).unwrap();
    p.client = c;
    p.run_until(Duration::from_secs(5), |p| {
        p.client.is_handshake_confirmed() || p.server.as_ref().is_some_and(|s| s.is_closed())
    });
    match p.server.as_ref().and_then(|s| s.close_reason()) {
        Some(CloseReason::Local(c)) => Some(c.code),
        None if p.client.is_handshake_confirmed() => None,
        other => panic!("unexpected: {other:?}"),
    }
}

#[test]
fn cve_2026_31812_truncated_and_malformed_transport_parameters() {
    // Control: hand-encoded, valid parameters complete the handshake.
    let valid = |scid: &[u8]| {
        let mut v = tp(0x0f, scid); // initial_source_connection_id
        v.extend(tp(0x04, &[0x80, 0x01, 0, 0])); // initial_max_data 65536
        v
    };
    assert_eq!(handshake_with_client_params(valid), None);
    const TPE: Option<u64> = Some(0x08);
    // Truncated varints at every cut of the last parameter (RUSTSEC-2026-0037: one Initial
    // made quinn panic), the ID, the length and the value.
    let full = {
        let mut v = tp(0x04, &[0xc0, 0, 0, 0, 0, 1, 0, 0]);
        v.truncate(v.len());
        v
    };
    for cut in 1..full.len() {
        let r = handshake_with_client_params(|scid| {
            let mut v = valid(scid);
            v.extend_from_slice(&full[..cut]);
            v
        });
        assert_eq!(r, TPE, "cut at {cut}");
    }
    // A truncated varint inside a parameter's value (length says 2, the varint needs 4).
    assert_eq!(
        handshake_with_client_params(|scid| {
            let mut v = valid(scid);
            v.extend(tp(0x05, &[0x80, 1]));
            v
        }),
        TPE
    );
    // Duplicates (RFC 9000 §7.4: MUST NOT; a duplicate is TRANSPORT_PARAMETER_ERROR).
    assert_eq!(
        handshake_with_client_params(|scid| {
            let mut v = valid(scid);
            v.extend(tp(0x04, &[0x44, 0]));
            v
        }),
        TPE
    );
    // Server-only parameters from a client, and out-of-range values.
    for bad in [
        tp(0x00, &[1, 2, 3, 4, 5, 6, 7, 8]), // original_destination_connection_id
        tp(0x02, &[0; 16]),                  // stateless_reset_token
        tp(0x0a, &[21]),                     // ack_delay_exponent > 20
        tp(0x03, &[0x44, 0xaf]),             // max_udp_payload_size 1199
        tp(0x0b, &[0x80, 0, 0x40, 0]),       // max_ack_delay 2^14
        tp(0x08, &[0xd0, 0, 0, 0, 0, 0, 0, 1]), // initial_max_streams_bidi > 2^60
    ] {
        let r = handshake_with_client_params(|scid| {
            let mut v = valid(scid);
            v.extend_from_slice(&bad);
            v
        });
        assert_eq!(r, TPE, "{bad:02x?}");
    }
}

// --- STREAM reassembly ---

#[test]
fn cve_rustsec_2026_0185_many_gap_stream_reassembly() {
    // RUSTSEC-2026-0185 / CVE-2024-26190 class: 1-byte STREAM fragments at every other
    // offset, 7000 of them. The gap table stays at its cap (fragments that would need a
    // new gap are dropped and their packets not acknowledged, so a real sender resends
    // them), memory is the fixed receive buffer, and once the holes are filled the whole
    // stream reads back intact.
    let (mut p, id) = established();
    let mut f = Forger::new(p.server());
    let data = pattern(14_000);
    let mut kept = 0;
    for i in 0..7000usize {
        let off = 2 * i + 1;
        let frame = Frame::Stream {
            stream_id: id.varint(),
            offset: VarInt::new(off as u64).unwrap(),
            data: &data[off..off + 1],
            fin: false,
            has_length: true,
        };
        let mut pkt = f.one_rtt(p.server(), &[frame]);
        p.now += Duration::from_micros(200);
        let now = p.now;
        let before = p.client.rx_data.largest_received();
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert!(!p.client.is_closed(), "fragment {i}: {:?}", p.client.close_reason());
        if p.client.rx_data.largest_received() != before {
            kept += 1;
        }
        let slot = p.client.streams.slot(id).unwrap();
        assert!(slot.recv.gaps() <= 8, "{} gaps", slot.recv.gaps());
        assert!(p.client.rx_data.ranges().len() <= 8);
        pump(&mut p.client, now);
    }
    assert!(kept < 100, "{kept} fragments acknowledged");
    // The holes are filled (a sender retransmits what was not acknowledged): in order.
    for chunk in (0..data.len()).step_by(1000) {
        let frame = Frame::Stream {
            stream_id: id.varint(),
            offset: VarInt::new(chunk as u64).unwrap(),
            data: &data[chunk..chunk + 1000],
            fin: chunk + 1000 == data.len(),
            has_length: true,
        };
        let mut pkt = f.one_rtt(p.server(), &[frame]);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert!(!p.client.is_closed(), "{:?}", p.client.close_reason());
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match p.client.stream_recv(id, &mut buf) {
            Some(Read::Data(n)) => got.extend_from_slice(&buf[..n]),
            Some(Read::Fin) => break,
            other => panic!("{other:?} after {} bytes", got.len()),
        }
    }
    assert!(got == data);
}

// --- empty, zero-length and garbage datagrams ---

#[test]
fn attack_empty_and_garbage_datagrams_change_nothing() {
    // CVE-2026-11352 class: zero-length datagrams, random garbage addressed to the
    // connection and truncated packets are dropped one by one at constant cost. RFC 9000
    // §10.1: only a successfully processed packet restarts the idle timer, so they neither
    // keep the connection alive nor elicit anything.
    let (mut p, _) = established();
    let idle_start = p.client.idle_start;
    let deadline = p.client.idle_deadline().unwrap();
    let dropped = p.client.stats().packets_dropped;
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let dcid = p.client.local_cid().to_vec();
    let mut garbage = 0;
    for i in 0..30_000u32 {
        let now = p.now + Duration::from_millis(u64::from(i));
        let mut d = match i % 3 {
            0 => Vec::new(),
            1 => {
                // A short header with our DCID and a random body (fails to decrypt).
                let len = 21 + (next() % 1200) as usize;
                let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                d[0] = 0x40 | (d[0] & 0x3f);
                d[1..9].copy_from_slice(&dcid);
                garbage += 1;
                d
            }
            _ => {
                let len = (next() % 40) as usize;
                (0..len).map(|_| next() as u8).collect()
            }
        };
        if i % 97 == 0 {
            // GRO batches of empty or one-byte segments.
            let info = RecvInfo {
                segment_size: Some((i % 2) as usize),
                ..RecvInfo::new(addr(SERVER_ADDR))
            };
            p.client.handle_recv(now, &info, &mut d);
        } else {
            p.client.handle_datagram(now, addr(SERVER_ADDR), &mut d);
        }
        if i % 1000 == 0 {
            assert_eq!(pump(&mut p.client, now).0, 0, "a reply to garbage");
        }
    }
    assert!(!p.client.is_closed());
    assert_eq!(p.client.idle_start, idle_start);
    if cfg!(feature = "stats") {
        assert!(p.client.stats().packets_dropped - dropped >= garbage);
    }
    // The idle timeout fires when it was due, garbage or not.
    let at = deadline.max(p.now);
    p.client.handle_timeout(at);
    assert_eq!(p.client.close_reason(), Some(CloseReason::IdleTimeout));
}

#[test]
fn attack_garbage_does_not_unlock_amplification_beyond_three_times() {
    // RFC 9000 §8.1: before validation a server counts every byte of datagrams attributed
    // to the connection, processed or not, and sends at most three times that. Zero-length
    // datagrams count nothing, so they buy nothing.
    let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
    // Only the client's first datagram arrives: the server stays unvalidated.
    p.filter = std::boxed::Box::new(|d, n, _| match (d, n) {
        (super::tests::Dir::ToServer, 0) => super::tests::Fate::Deliver,
        _ => super::tests::Fate::Drop,
    });
    p.run_until(Duration::from_secs(3), |_| false);
    let s = p.server.as_mut().unwrap();
    assert!(!s.is_address_validated());
    let received = s.amp_received;
    assert!(s.amp_sent <= 3 * received);
    let mut now = p.now;
    for i in 0..20_000u64 {
        now += Duration::from_millis(1);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut []);
        pump(s, now);
        if i % 5000 == 0 {
            assert_eq!(s.amp_received, received);
        }
    }
    assert_eq!(s.amp_received, received);
    assert!(s.amp_sent <= 3 * received, "{} for {}", s.amp_sent, received);
    // Garbage with the server's DCID counts (it is attributed to the connection), and the
    // limit keeps tracking it.
    let dcid = s.local_cid().to_vec();
    for _ in 0..100 {
        let mut d = vec![0x55u8; 300];
        d[0] = 0x40;
        d[1..9].copy_from_slice(&dcid);
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut d);
        pump(s, now);
        assert!(s.amp_sent <= 3 * s.amp_received);
    }
    assert_eq!(s.amp_received, received + 100 * 300);
    assert!(!s.is_address_validated(), "garbage validated the address");
}

// --- streams: limits, resets, STOP_SENDING ---

// Opens more streams than the initial limit: needs MAX_STREAMS updates.
#[cfg(feature = "max-streams-updates")]
#[test]
fn attack_stream_open_and_reset_flood_is_bounded() {
    // "Rapid reset" for QUIC: the client opens bidirectional streams as fast as the
    // server's MAX_STREAMS allows and resets each at once, 3000 times. The server's slots
    // stay at their cap, MAX_STREAMS only grows as the application consumes the resets,
    // and a stream beyond the limit is STREAM_LIMIT_ERROR.
    let (mut p, _) = established();
    let mut f = Forger::new(&p.client);
    let mut buf = [0u8; 64];
    for i in 0..3000u64 {
        let opened = i + 1; // stream 0 is the established() one
        let s = p.server.as_mut().unwrap();
        let max = s.streams.limits().remote_max(StreamDir::Bidi);
        assert!(opened < max, "round {i}: limit {max} not raised");
        let id = StreamId::from_parts(Side::Client, StreamDir::Bidi, opened).unwrap();
        let frames = [
            Frame::Stream {
                stream_id: id.varint(),
                offset: VarInt::ZERO,
                data: b"GET",
                fin: false,
                has_length: true,
            },
            Frame::ResetStream {
                stream_id: id.varint(),
                error_code: VarInt::from_u32(9),
                final_size: VarInt::from_u32(3),
            },
            Frame::StopSending { stream_id: id.varint(), error_code: VarInt::from_u32(9) },
        ];
        let mut pkt = f.one_rtt(&p.client, &frames);
        p.now += Duration::from_micros(500);
        let now = p.now;
        let s = p.server.as_mut().unwrap();
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        assert!(!s.is_closed(), "round {i}: {:?}", s.close_reason());
        assert!(s.live_streams().count() <= 4);
        // The application reads the reset; the stream is then gone.
        assert_eq!(s.stream_recv(id, &mut buf), Some(Read::Reset(9)));
        while s.poll_event().is_some() {}
        pump(s, now);
        // The attacker acknowledges what the server sent (its RESET_STREAM answering
        // STOP_SENDING, MAX_STREAMS), so the stream state can go.
        let ranges = live_ranges(p.server.as_ref().unwrap());
        if let Some(ack) = Ack::new(&ranges, RangeOrder::Descending, VarInt::ZERO, None) {
            let mut pkt = f.one_rtt(&p.client, &[Frame::Ack(ack)]);
            let s = p.server.as_mut().unwrap();
            s.handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
            assert!(!s.is_closed(), "round {i}: {:?}", s.close_reason());
            pump(s, now);
        }
    }
    let s = p.server.as_mut().unwrap();
    assert!(s.live_streams().count() <= 4);
    // Far beyond what was allowed: STREAM_LIMIT_ERROR.
    let max = s.streams.limits().remote_max(StreamDir::Bidi);
    let id = StreamId::from_parts(Side::Client, StreamDir::Bidi, max + 10).unwrap();
    let frame = Frame::Stream {
        stream_id: id.varint(),
        offset: VarInt::ZERO,
        data: b"x",
        fin: false,
        has_length: true,
    };
    let mut pkt = f.one_rtt(&p.client, &[frame]);
    let now = p.now;
    p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
    assert_eq!(close_code(p.server()), Some((0x04, Some(0x0a))));
}

#[test]
fn attack_stop_sending_and_blocked_floods_queue_one_frame() {
    // 5000 STOP_SENDING for the same stream (and STREAMS_BLOCKED / DATA_BLOCKED noise):
    // one RESET_STREAM answers them all; the victim's output stays ACK-sized.
    let (mut p, id) = established();
    let mut f = Forger::new(&p.client);
    let mut out_bytes = 0usize;
    let mut in_bytes = 0usize;
    for i in 0..5000u64 {
        let frames = [
            Frame::StopSending { stream_id: id.varint(), error_code: VarInt::from_u32(3) },
            Frame::StreamsBlocked { dir: StreamDir::Bidi, limit: VarInt::from_u32(1) },
            Frame::DataBlocked { limit: VarInt::from_u32(i as u32) },
            Frame::StreamDataBlocked { stream_id: id.varint(), limit: VarInt::ZERO },
        ];
        let mut pkt = f.one_rtt(&p.client, &frames);
        in_bytes += pkt.len();
        p.now += Duration::from_millis(1);
        let now = p.now;
        let s = p.server.as_mut().unwrap();
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        assert!(!s.is_closed(), "{i}: {:?}", s.close_reason());
        out_bytes += pump(s, now).1;
        assert!(s.recovery().in_flight_packets(PnSpace::ApplicationData) <= 32);
    }
    assert!(out_bytes < in_bytes, "sent {out_bytes} for {in_bytes}");
    // One RESET_STREAM answered the 5000 STOP_SENDINGs: the copies in flight are the
    // original and its PTO retransmissions (the attacker acknowledges nothing), one per
    // PTO, however many STOP_SENDINGs came; nothing is queued behind them.
    let s = p.server.as_ref().unwrap();
    let mut resets = 0;
    for pkt in s.recovery().application_packets().iter() {
        for i in pkt.payload.control_slots() {
            if matches!(s.controls.get(i), Some(crate::stream::Control::ResetStream { .. })) {
                resets += 1;
            }
        }
    }
    // Without `stats` the PTO count is not kept: at least the original is in flight.
    let ptos = if cfg!(feature = "stats") { s.stats().ptos as usize } else { usize::MAX - 1 };
    assert!((1..=ptos + 1).contains(&resets), "{resets} RESET_STREAMs in flight, {ptos} PTOs");
    assert!(!s.streams.wants_control());
    // RESET_STREAM with a final size that changes: FINAL_SIZE_ERROR.
    let r1 = Frame::ResetStream {
        stream_id: id.varint(),
        error_code: VarInt::ZERO,
        final_size: VarInt::from_u32(100),
    };
    let r2 = Frame::ResetStream {
        stream_id: id.varint(),
        error_code: VarInt::ZERO,
        final_size: VarInt::from_u32(200),
    };
    let mut pkt = f.one_rtt(&p.client, &[r1, r1, r2]);
    let now = p.now;
    p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
    assert_eq!(close_code(p.server()), Some((0x06, Some(0x04))));
}

// --- received-packet ranges ---

#[test]
fn attack_huge_packet_number_gaps_keep_ack_ranges_capped() {
    // Every packet leaves a gap of a thousand numbers: the received-range table keeps its 8
    // newest ranges, ACK frames stay small, and the connection lives.
    let (mut p, id) = established();
    let mut f = Forger::new(p.server());
    let mut replies = 0;
    for i in 0..5000u64 {
        f.next += 1000;
        let mut pkt = f.one_rtt(p.server(), &[Frame::Ping]);
        p.now += Duration::from_millis(1);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert!(!p.client.is_closed(), "{i}: {:?}", p.client.close_reason());
        assert!(p.client.rx_data.ranges().len() <= 8);
        let mut buf = vec![0u8; 2048];
        while let Some(t) = p.client.poll_transmit(now, &mut buf) {
            replies += 1;
            assert!(t.len < 150, "{}-byte ACK", t.len);
        }
    }
    assert!(replies > 0);
    assert_eq!(p.client.recovery().bytes_in_flight(), 0, "only ACK-only replies");
    client_still_reads(&mut p, &mut f, id, 0);
}

#[test]
fn attack_ack_only_and_padding_floods_elicit_nothing() {
    // Packets that are not ack-eliciting (ACK, PADDING) are never acknowledged on their
    // own (RFC 9000 §13.2.1), so an ACK-only packet never elicits an ACK: no loop. PINGs
    // are acknowledged at most every second packet, with ACK-only packets.
    let (mut p, _) = established();
    let mut f = Forger::new(p.server());
    let largest = p.client.recovery().largest_acked(PnSpace::ApplicationData).unwrap();
    let ranges = [(largest, largest)];
    for i in 0..4000u64 {
        let ack = Ack::new(&ranges, RangeOrder::Descending, VarInt::ZERO, None).unwrap();
        let frames = if i % 2 == 0 { [Frame::Ack(ack)] } else { [Frame::Padding { len: 100 }] };
        let mut pkt = f.one_rtt(p.server(), &frames);
        p.now += Duration::from_millis(1);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert_eq!(pump(&mut p.client, now).0, 0, "reply to a non-eliciting packet {i}");
        assert!(!p.client.is_closed());
    }
    let mut replies = 0;
    for _ in 0..4000u64 {
        let mut pkt = f.one_rtt(p.server(), &[Frame::Ping]);
        p.now += Duration::from_millis(1);
        let now = p.now;
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        replies += pump(&mut p.client, now).0;
    }
    assert!((1000..=2001).contains(&replies), "{replies} ACKs for 4000 PINGs");
    assert_eq!(p.client.recovery().bytes_in_flight(), 0);
}

// --- closing ---

#[test]
fn attack_connection_close_with_huge_reason_is_truncated() {
    let (mut p, _) = established();
    let mut f = Forger::new(p.server());
    let reason = vec![b'r'; 1100];
    let close = Frame::ConnectionClose {
        error_code: VarInt::from_u32(0x0a),
        frame_type: VarInt::ZERO,
        reason: &reason,
    };
    let mut pkt = f.one_rtt(p.server(), &[close]);
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    match p.client.close_reason() {
        Some(CloseReason::Peer(c)) => {
            assert_eq!(c.code, 0x0a);
            assert_eq!(c.reason(), &reason[..REASON_MAX]);
        }
        other => panic!("{other:?}"),
    }
    // Draining: thousands more packets get no answer; the connection drains on time.
    for _ in 0..3000 {
        let mut pkt = f.one_rtt(p.server(), &[Frame::Ping]);
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        assert_eq!(pump(&mut p.client, now).0, 0);
    }
    let t = p.client.poll_timeout().unwrap();
    p.client.handle_timeout(t);
    assert!(p.client.is_drained());
}

#[test]
fn attack_flood_of_closing_endpoint_gets_logarithmic_replies() {
    // RFC 9000 §10.2.1: a closing endpoint limits the rate of its CONNECTION_CLOSE replies.
    let (mut p, _) = established();
    let mut f = Forger::new(p.server());
    p.client.close(7, b"bye");
    let now = p.now;
    assert_eq!(pump(&mut p.client, now).0, 1);
    let mut replies = 0;
    for _ in 0..5000 {
        let mut pkt = f.one_rtt(p.server(), &[Frame::Ping]);
        p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
        replies += pump(&mut p.client, now).0;
    }
    assert!((1..=14).contains(&replies), "{replies} CONNECTION_CLOSE replies");
}

// --- the endpoint: pre-handshake state ---

type SSess = mote_tls::ServerSession<'static, RustCrypto>;
type CSess = ClientSession<'static, RustCrypto>;
type Acceptor =
    std::boxed::Box<dyn FnMut(Instant) -> Option<(SSess, Storage<Vec<u8>, Vec<u8>, 4>)>>;
type ServerEp =
    Endpoint<RustCrypto, SSess, Vec<u8>, Vec<u8>, Acceptor, Vec<Slot<Conn<SSess>>>, 4, 32, 8>;
type ClientEp =
    Endpoint<RustCrypto, CSess, Vec<u8>, Vec<u8>, NoAccept, Vec<Slot<Conn<CSess>>>, 4, 32, 8>;

fn server_endpoint(table: usize, half_open: usize) -> ServerEp {
    let cfg = configs().server;
    let acc: Acceptor = std::boxed::Box::new(move |_| {
        Some((mote_tls::ServerSession::new(P, cfg, 0), storage(4096, 4096)))
    });
    Endpoint::new(
        EndpointConfig::server(ConnectionConfig::server(), half_open),
        P,
        acc,
        (0..table).map(|_| Slot::new()).collect(),
        &mut TestRng(9),
    )
    .unwrap()
}

fn client_initial(seed: u64) -> (Vec<u8>, super::tests::Client) {
    let mut c = super::tests::Client::client(
        &ConnectionConfig::device(),
        P,
        ClientSession::new(P, configs().client, None),
        storage(4096, 1024),
        Instant::ZERO,
        addr(SERVER_ADDR),
        &mut TestRng(seed),
    )
    .unwrap();
    let mut buf = vec![0u8; 2048];
    let t = c.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    buf.truncate(t.len);
    (buf, c)
}

fn from(i: u64) -> core::net::SocketAddr {
    core::net::SocketAddr::from(([198, 51, (i >> 8) as u8, i as u8], 1024 + (i % 60000) as u16))
}

#[test]
fn cve_2025_54939_initial_flood_keeps_half_open_state_bounded() {
    // QUIC-LEAK / CVE-2023-50247 class. A server endpoint with 16 slots, at most 4
    // handshakes at once.
    let mut s = server_endpoint(16, 4);
    let now = Instant::ZERO;
    let mut sink = vec![0u8; 65536];
    // 1. 3000 forged Initials (right header, ≥ 1200 bytes, garbage payload), each from its
    //    own address and DCID: none decrypts, none keeps state.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..3000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut d = vec![(x >> 24) as u8; 1200];
        d[..6].copy_from_slice(&[0xc3, 0, 0, 0, 1, 8]);
        d[6..14].copy_from_slice(&x.to_be_bytes());
        d[14] = 8;
        d[15..23].copy_from_slice(&(!x).to_be_bytes());
        d[23] = 0; // token length
        d[24..26].copy_from_slice(&[0x44, 0x96]); // Length 1174
        s.handle_datagram(now, from(i), &mut d);
        assert_eq!(s.len(), 0, "forged Initial {i} kept state");
    }
    assert!(s.poll_transmit(now, &mut sink).is_none());
    // 2. 2000 Initials below 1200 bytes: dropped before any key is derived.
    let (first, _) = client_initial(1);
    for i in 0..2000u64 {
        let mut d = first[..1199 - (i as usize % 1000)].to_vec();
        s.handle_datagram(now, from(i), &mut d);
    }
    assert_eq!(s.len(), 0);
    assert_eq!(s.stats().accepted, 0);
    // 3. 300 genuine ClientHellos from 300 addresses (a botnet that never completes):
    //    four half-open connections, the rest refused cheaply.
    for i in 0..300u64 {
        let (mut d, _) = client_initial(1000 + i);
        // Coalesced garbage behind the Initial must not matter either.
        d.extend_from_slice(&[0xee; 64]);
        s.handle_datagram(now, from(10_000 + i), &mut d);
        assert!(s.len() <= 4);
        while s.poll_transmit(now, &mut sink).is_some() {}
    }
    assert!((1..=4).contains(&s.stats().accepted), "{}", s.stats().accepted);
    assert!(s.stats().refused >= 296 + 3000);
    // 4. Their handshakes never complete; once they time out the slots are free and a
    //    real client gets through.
    let mut t = now;
    for _ in 0..200 {
        match s.poll_timeout() {
            Some(next) if !s.is_empty() => {
                t = next.max(t);
                s.handle_timeout(t);
                while s.poll_transmit(t, &mut sink).is_some() {}
            }
            _ => break,
        }
        while s.poll_event().is_some() {}
    }
    assert_eq!(s.len(), 0, "half-open connections never expired");
    let mut c: ClientEp = Endpoint::new(
        EndpointConfig::client(ConnectionConfig::device()),
        P,
        NoAccept,
        (0..1).map(|_| Slot::new()).collect(),
        &mut TestRng(3),
    )
    .unwrap();
    let h = c
        .connect(
            t,
            addr(SERVER_ADDR),
            ClientSession::new(P, configs().client, None),
            storage(4096, 1024),
        )
        .unwrap();
    for _ in 0..20 {
        while let Some(tx) = c.poll_transmit(t, &mut sink) {
            let mut d = sink[..tx.len].to_vec();
            s.handle_datagram(t, addr(CLIENT_ADDR), &mut d);
        }
        while let Some(tx) = s.poll_transmit(t, &mut sink) {
            let mut d = sink[..tx.len].to_vec();
            for seg in d.chunks_mut(tx.segment_size.unwrap_or(tx.len)) {
                c.handle_datagram(t, addr(SERVER_ADDR), seg);
            }
        }
        if c.connection(h).unwrap().is_handshake_confirmed() {
            break;
        }
        t += Duration::from_millis(5);
        c.handle_timeout(t);
        s.handle_timeout(t);
    }
    assert!(c.connection(h).unwrap().is_handshake_confirmed());
}

#[test]
fn attack_initials_with_bad_tokens_are_bounded_like_any_other() {
    // Without a Retry policy a token is not required; an invalid one is ignored (RFC 9000
    // §8.1.3: "proceed as if the client did not have a validated address"). 500 Initials
    // with random tokens therefore count against the same half-open budget.
    let mut s = server_endpoint(8, 2);
    let now = Instant::ZERO;
    let mut sink = vec![0u8; 65536];
    for i in 0..500u64 {
        let (mut first, c) = client_initial(5000 + i);
        // The client's Initial plaintext (its ClientHello), re-sent with a random token.
        let keys = packet::initial_keys(&P, c.hs.version, &c.hs.cids.original_dcid).unwrap();
        let parsed = packet::parse(&first, 0, false).unwrap();
        let (len, pn_offset) = (parsed.len, parsed.pn_offset.unwrap());
        let u = keys.client.unprotect(&mut first[..len], pn_offset, None).unwrap();
        let plaintext = first[u.payload_range()].to_vec();
        let token: Vec<u8> = (0..(i % 60 + 1)).map(|b| (b * 7 + i) as u8).collect();
        let mut d = initial_raw(&c, &plaintext, 1, &token);
        s.handle_datagram(now, from(i), &mut d);
        assert!(s.len() <= 2);
        while s.poll_transmit(now, &mut sink).is_some() {}
    }
    // At most the half-open budget, whatever a token policy (Retry, INVALID_TOKEN) does.
    assert!(s.stats().accepted <= 2);
}

#[test]
fn attack_max_streams_beyond_2_pow_60_is_frame_encoding_error() {
    // RFC 9000 §19.11: a MAX_STREAMS above 2^60 is FRAME_ENCODING_ERROR (stream IDs above
    // 2^62 cannot exist), rejected when the frame is parsed.
    let (mut p, _) = established();
    let mut payload = vec![0x12]; // MAX_STREAMS (bidirectional)
    let count = ((1u64 << 60) + 1) | (0b11 << 62); // an 8-byte varint
    payload.extend_from_slice(&count.to_be_bytes());
    let pn = Forger::new(p.server()).next;
    let mut pkt = one_rtt_raw(p.server(), &payload, pn);
    let now = p.now;
    p.client.handle_datagram(now, addr(SERVER_ADDR), &mut pkt);
    assert_eq!(close_code(&p.client).map(|c| c.0), Some(0x07));
}

#[test]
fn protection_is_never_bypassed_in_a_normal_build() {
    // `--cfg fuzzing` (cargo-fuzz only) nulls packet protection; tests never run with it.
    const { assert!(!packet::PROTECTION_BYPASSED) };
    let (mut p, _) = established();
    // A packet protected with the wrong key does not open.
    let mut f = Forger::new(&p.client);
    let mut pkt = f.one_rtt(&p.client, &[Frame::Ping]);
    let last = pkt.len() - 1;
    pkt[last] ^= 1;
    let now = p.now;
    let (dropped, idle_start) = (p.server().stats().packets_dropped, p.server().idle_start);
    p.server().handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
    // Not processed: the idle timer did not restart (and, with `stats`, it counts as dropped).
    assert_eq!(p.server().idle_start, idle_start);
    if cfg!(feature = "stats") {
        assert_eq!(p.server().stats().packets_dropped, dropped + 1);
    }
}

#[test]
fn attack_post_handshake_crypto_to_the_server_closes() {
    // A client has no post-handshake message to send in QUIC (no KeyUpdate, RFC 9001 §6;
    // no post-handshake authentication, §4.4): the first 1-RTT CRYPTO message to the
    // server closes the connection with CRYPTO_ERROR (unexpected_message, 0x10a) instead
    // of being buffered; later ones reach a closing connection that answers a few of them.
    let (mut p, _) = established();
    let mut f = Forger::new(&p.client);
    let mut offset = 0u64;
    let mut replies = 0;
    for _ in 0..2000u32 {
        let m = new_session_ticket(1, 32);
        let frame = Frame::Crypto { offset: VarInt::new(offset).unwrap(), data: &m };
        offset += m.len() as u64;
        let mut pkt = f.one_rtt(&p.client, &[frame]);
        let now = p.now;
        let s = p.server.as_mut().unwrap();
        s.handle_datagram(now, addr(CLIENT_ADDR), &mut pkt);
        assert_eq!(close_code(s), Some((0x10a, Some(0x06))));
        replies += pump(s, now).0;
    }
    assert!(replies <= 12, "{replies} replies");
}
