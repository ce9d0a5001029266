//! Fuzzing entry points (feature `server`): arbitrary plaintext in correctly protected
//! Initial packets, and arbitrary datagrams, into fresh client and server connections
//! ([`server`], [`client`]); arbitrary frames into both sides of an established connection
//! ([`established`]). Nothing here may panic, whatever the input.
//!
//! Built with `--cfg fuzzing` (cargo-fuzz sets it) packet protection is bypassed
//! ([`crate::packet::PROTECTION_BYPASSED`]), so the raw-datagram records reach frame
//! processing in every packet type whose keys exist, not only the packet parser.
//!
//! The input is a sequence of records `kind (1 byte) || length (2 bytes, big endian) ||
//! bytes`: an even `kind` wraps the bytes as the plaintext of an Initial packet protected with
//! the real Initial keys (so the frames are parsed and dispatched, CRYPTO reaches TLS), an odd
//! one delivers them as a raw datagram. After each record the connection is polled for
//! transmits and its timers run. A cargo-fuzz target is a one-liner:
//! `fuzz_target!(|d: &[u8]| mote_quic::connection::fuzz::server(d))`.

use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{CryptoRng, HashAlgorithm, TAG_LEN};
use mote_tls::{ClientConfig, ClientSession, ExternalPsk, ServerAuth, ServerConfig, ServerSession};

use super::{Connection, ConnectionConfig, SentFrames, Storage};
use crate::coding::Writer;
use crate::packet::{initial_keys, LongHeader, LongType, PacketKeys, ShortHeader};
use crate::recovery::{PnSpace, SentPacket};
use crate::time::{Duration, Instant};
use crate::version::Version;

/// A fixed-seed generator (xorshift64), so findings reproduce. Not for real use.
struct FuzzRng(u64);

impl CryptoRng for FuzzRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), mote_crypto::Error> {
        for b in dest {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *b = self.0 as u8;
        }
        Ok(())
    }
}

const PSK: ExternalPsk<'static> =
    ExternalPsk { identity: b"fuzz", key: &[7; 32], hash: HashAlgorithm::Sha256 };
const PSKS: &[ExternalPsk<'static>] = &[PSK];
const ALPN: &[&[u8]] = &[b"fuzz"];
static SERVER_CONFIG: ServerConfig<'static> = ServerConfig {
    cipher_suites: &[],
    groups: &[],
    alpn: ALPN,
    identity: None,
    external_psks: PSKS,
    client_auth: None,
    tickets: None,
    early_data: None,
    defer_signatures: false,
};
static CLIENT_CONFIG: ClientConfig<'static> = ClientConfig {
    server_name: None,
    alpn: ALPN,
    server_auth: ServerAuth::ExternalPsk(PSK),
    client_key: None,
    cipher_suites: &[],
    groups: &[],
    early_data: false,
};

const CLIENT_DCID: [u8; 8] = [0xc0, 1, 2, 3, 4, 5, 6, 7];
const CLIENT_SCID: [u8; 8] = [0xc5, 1, 2, 3, 4, 5, 6, 7];
const SERVER_SCID: [u8; 8] = [0x5e, 1, 2, 3, 4, 5, 6, 7];

fn peer() -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 9), 4433))
}

type Buf = [u8; 2048];

fn storage() -> Storage<Buf, Buf, 2> {
    Storage { crypto: [([0; 2048], [0; 2048]); 3], streams: [([0; 2048], [0; 2048]); 2] }
}

/// Writes an Initial packet `pn` carrying `plaintext` (padded so the datagram is at least
/// 1200 bytes) protected with `keys`; returns its length.
fn initial(
    keys: &PacketKeys<RustCrypto>,
    dcid: &[u8],
    scid: &[u8],
    pn: u64,
    plaintext: &[u8],
    out: &mut [u8],
) -> Option<usize> {
    let mut w = Writer::new(out);
    let h = LongHeader { ty: LongType::Initial, version: Version::V1, dcid, scid, token: &[] };
    let off = h.emit(&mut w, pn, 4).ok()?;
    w.put_slice(plaintext).ok()?;
    let min = 1200usize.saturating_sub(TAG_LEN);
    let pad = min.saturating_sub(w.position()).max(4);
    w.put_repeated(0, pad).ok()?;
    let len = w.position() + TAG_LEN;
    off.set_length(out, len).ok()?;
    keys.protect(out.get_mut(..len)?, off.pn_offset, pn).ok()?;
    Some(len)
}

/// Splits `data` into records.
fn records(mut data: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    core::iter::from_fn(move || {
        let [kind, hi, lo, rest @ ..] = data else { return None };
        let n = usize::from(u16::from_be_bytes([*hi, *lo])).min(rest.len());
        let (chunk, tail) = rest.split_at_checked(n)?;
        data = tail;
        Some((*kind, chunk))
    })
}

fn drive<T: super::TlsSession>(
    conn: &mut Connection<RustCrypto, T, Buf, Buf, 2, 16, 4>,
    now: &mut Instant,
    out: &mut [u8],
) {
    for _ in 0..4 {
        if conn.poll_transmit(*now, out).is_none() {
            break;
        }
    }
    while conn.poll_event().is_some() {}
    if let Some(t) = conn.poll_timeout() {
        *now = (*now).max(t).min(*now + Duration::from_secs(5));
        conn.handle_timeout(*now);
    }
}

/// A server connection for a client Initial, fed the records of `data` as client packets.
pub fn server(data: &[u8]) {
    let Ok(keys) = initial_keys(&RustCrypto, Version::V1, &CLIENT_DCID) else { return };
    let tls = ServerSession::<_, 4096>::new(RustCrypto, &SERVER_CONFIG, 0);
    let Ok(mut conn) = Connection::<_, _, Buf, Buf, 2, 16, 4>::server(
        &ConnectionConfig::server(),
        RustCrypto,
        tls,
        storage(),
        Instant::ZERO,
        peer(),
        &CLIENT_DCID,
        &CLIENT_SCID,
        Version::V1,
        &mut FuzzRng(0x9e37_79b9_7f4a_7c15),
    ) else {
        return;
    };
    let mut now = Instant::ZERO;
    let mut dgram = [0u8; 1500];
    let mut out = [0u8; 1500];
    for (pn, (kind, bytes)) in (0u64..).zip(records(data)) {
        if kind & 1 == 0 {
            let Some(n) = initial(&keys.client, &CLIENT_DCID, &CLIENT_SCID, pn, bytes, &mut dgram)
            else {
                continue;
            };
            if let Some(d) = dgram.get_mut(..n) {
                conn.handle_datagram(now, peer(), d);
            }
        } else {
            let n = bytes.len().min(dgram.len());
            if let (Some(d), Some(src)) = (dgram.get_mut(..n), bytes.get(..n)) {
                d.copy_from_slice(src);
                conn.handle_datagram(now, peer(), d);
            }
        }
        drive(&mut conn, &mut now, &mut out);
    }
}

/// A client connection that sent its ClientHello, fed the records of `data` as server
/// packets.
pub fn client(data: &[u8]) {
    let tls = ClientSession::<_, 4096>::new(RustCrypto, &CLIENT_CONFIG, None);
    let Ok(mut conn) = Connection::<_, _, Buf, Buf, 2, 16, 4>::client(
        &ConnectionConfig::device(),
        RustCrypto,
        tls,
        storage(),
        Instant::ZERO,
        peer(),
        &mut FuzzRng(0x2545_f491_4f6c_dd1d),
    ) else {
        return;
    };
    let mut now = Instant::ZERO;
    let mut dgram = [0u8; 1500];
    let mut out = [0u8; 1500];
    drive(&mut conn, &mut now, &mut out);
    let odcid = *conn.original_dcid();
    let local = *conn.local_cid();
    let Ok(keys) = initial_keys(&RustCrypto, Version::V1, &odcid) else { return };
    for (pn, (kind, bytes)) in (0u64..).zip(records(data)) {
        if kind & 1 == 0 {
            let Some(n) = initial(&keys.server, &local, &SERVER_SCID, pn, bytes, &mut dgram) else {
                continue;
            };
            if let Some(d) = dgram.get_mut(..n) {
                conn.handle_datagram(now, peer(), d);
            }
        } else {
            let n = bytes.len().min(dgram.len());
            if let (Some(d), Some(src)) = (dgram.get_mut(..n), bytes.get(..n)) {
                d.copy_from_slice(src);
                conn.handle_datagram(now, peer(), d);
            }
        }
        drive(&mut conn, &mut now, &mut out);
    }
}

type Fuzzed<T> = Connection<RustCrypto, T, Buf, Buf, 2, 16, 4>;

/// Delivers up to `rounds` datagrams each way between `c` and `s`, running due timers
/// (time advances to the next one, at most 1 s at a time).
fn exchange<A: super::TlsSession, B: super::TlsSession>(
    c: &mut Fuzzed<A>,
    s: &mut Fuzzed<B>,
    now: &mut Instant,
    rounds: usize,
) {
    let mut buf = [0u8; 1500];
    for _ in 0..rounds {
        let mut moved = false;
        if let Some(t) = c.poll_transmit(*now, &mut buf) {
            if let Some(d) = buf.get_mut(..t.len) {
                s.handle_datagram(*now, peer(), d);
            }
            moved = true;
        }
        if let Some(t) = s.poll_transmit(*now, &mut buf) {
            if let Some(d) = buf.get_mut(..t.len) {
                c.handle_datagram(*now, peer(), d);
            }
            moved = true;
        }
        if !moved {
            let next = [c.poll_timeout(), s.poll_timeout()].into_iter().flatten().min();
            let Some(t) = next else { break };
            *now = (*now).max(t).min(*now + Duration::from_secs(1));
            c.handle_timeout(*now);
            s.handle_timeout(*now);
        }
    }
    while c.poll_event().is_some() {}
    while s.poll_event().is_some() {}
}

/// Sends `plaintext` as a 1-RTT packet from `from` to `to`, as if `from` had built it: the
/// packet number is `from`'s next one and is recorded as sent (not ack-eliciting, no
/// record), so `to`'s acknowledgements of it stay valid and the pair stays consistent.
fn inject<A: super::TlsSession, B: super::TlsSession>(
    from: &mut Fuzzed<A>,
    to: &mut Fuzzed<B>,
    now: Instant,
    plaintext: &[u8],
) {
    let Some(k) = from.hs.keys.one_rtt.as_ref() else { return };
    if from.is_closed() {
        return;
    }
    let pn = from.recovery.next_pn(PnSpace::ApplicationData);
    let mut out = [0u8; 1500];
    let mut w = Writer::new(&mut out);
    let Ok(pn_offset) =
        ShortHeader { dcid: &from.hs.cids.remote, spin: false }.emit(&mut w, k.tx_phase, pn, 4)
    else {
        return;
    };
    let room = 1500 - TAG_LEN - w.position();
    let body = plaintext.get(..plaintext.len().min(room)).unwrap_or(&[]);
    if w.put_slice(body).is_err() || w.put_repeated(0, 4usize.saturating_sub(body.len())).is_err() {
        return;
    }
    let len = w.position() + TAG_LEN;
    let Some(pkt) = out.get_mut(..len) else { return };
    if k.keys.tx.protect(pkt, pn_offset, pn).is_err() {
        return;
    }
    let record = SentPacket::new(pn, now, len as u16, false, false, SentFrames::default());
    if from.recovery.on_packet_sent(PnSpace::ApplicationData, record).is_err() {
        return;
    }
    to.handle_datagram(now, peer(), pkt);
}

/// A client and a server connection, handshake completed and confirmed in memory, then fed
/// the records of `data`. The record kind picks the direction (bit 0: to the server), and
/// bit 1 whether the bytes are frames injected as an authenticated 1-RTT packet of the
/// other side (clear) or a raw datagram (set). After each record the two exchange
/// datagrams and run their timers for a few rounds.
pub fn established(data: &[u8]) {
    let Some((mut c, mut s, mut now)) = established_pair() else { return };
    for (kind, bytes) in records(data) {
        let to_server = kind & 1 != 0;
        if kind & 2 == 0 {
            if to_server {
                inject(&mut c, &mut s, now, bytes);
            } else {
                inject(&mut s, &mut c, now, bytes);
            }
        } else {
            let mut dgram = [0u8; 1500];
            let n = bytes.len().min(dgram.len());
            if let (Some(d), Some(src)) = (dgram.get_mut(..n), bytes.get(..n)) {
                d.copy_from_slice(src);
                if to_server {
                    s.handle_datagram(now, peer(), d);
                } else {
                    c.handle_datagram(now, peer(), d);
                }
            }
        }
        exchange(&mut c, &mut s, &mut now, 8);
    }
}

type ClientConn = Fuzzed<ClientSession<'static, RustCrypto, 4096>>;
type ServerConn = Fuzzed<ServerSession<'static, RustCrypto, 4096>>;

/// Runs a handshake between a fresh client and server in memory.
fn established_pair() -> Option<(ClientConn, ServerConn, Instant)> {
    let tls = ClientSession::<_, 4096>::new(RustCrypto, &CLIENT_CONFIG, None);
    let mut c = Connection::<_, _, Buf, Buf, 2, 16, 4>::client(
        &ConnectionConfig::device(),
        RustCrypto,
        tls,
        storage(),
        Instant::ZERO,
        peer(),
        &mut FuzzRng(0x2545_f491_4f6c_dd1d),
    )
    .ok()?;
    let mut buf = [0u8; 1500];
    let t = c.poll_transmit(Instant::ZERO, &mut buf)?;
    let first = buf.get_mut(..t.len)?;
    let parsed = crate::packet::parse(first, 0, false).ok()?;
    let crate::packet::Header::Long(h) = parsed.header else { return None };
    let tls = ServerSession::<_, 4096>::new(RustCrypto, &SERVER_CONFIG, 0);
    let mut config = ConnectionConfig::server();
    config.streams.max_streams_bidi = 4;
    config.streams.max_streams_uni = 4;
    let mut s = Connection::<_, _, Buf, Buf, 2, 16, 4>::server(
        &config,
        RustCrypto,
        tls,
        storage(),
        Instant::ZERO,
        peer(),
        h.dcid,
        h.scid,
        h.version,
        &mut FuzzRng(0x9e37_79b9_7f4a_7c15),
    )
    .ok()?;
    s.handle_datagram(Instant::ZERO, peer(), first);
    let mut now = Instant::ZERO;
    for _ in 0..16 {
        exchange(&mut c, &mut s, &mut now, 8);
        if c.is_handshake_confirmed() && s.is_handshake_confirmed() {
            return Some((c, s, now));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn established_pair_completes() {
        let (c, s, _) = established_pair().expect("handshake");
        assert!(!c.is_closed() && !s.is_closed());
    }

    #[test]
    fn smoke() {
        server(&[]);
        client(&[]);
        // Frames into an established pair: a PING to each side, a STREAM frame opening a
        // client stream, an ACK of nothing sent (closes the server), raw garbage.
        established(&[
            0, 0, 1, 1, 1, 0, 4, 0x0a, 0, 2, 0x68, 0x69, 1, 0, 3, 2, 0x50, 0, 3, 0, 3, 1, 2, 3,
        ]);
        // A PING, an ACK of packet 0, a CRYPTO frame with garbage, raw bytes.
        let input = [0, 0, 1, 1, 0, 0, 4, 2, 0, 0, 0, 0, 0, 5, 6, 0, 3, 1, 2, 3, 1, 0, 3, 9, 9, 9];
        server(&input);
        client(&input);
    }
}
