//! Fuzzing entry points (feature `server`): arbitrary plaintext in correctly protected
//! Initial packets, and arbitrary datagrams, into fresh client and server connections.
//! Nothing here may panic, whatever the input.
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

use super::{Connection, ConnectionConfig, Storage};
use crate::coding::Writer;
use crate::packet::{initial_keys, LongHeader, LongType, PacketKeys};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        server(&[]);
        client(&[]);
        // A PING, an ACK of packet 0, a CRYPTO frame with garbage, raw bytes.
        let input = [0, 0, 1, 1, 0, 0, 4, 2, 0, 0, 0, 0, 0, 5, 6, 0, 3, 1, 2, 3, 1, 0, 3, 9, 9, 9];
        server(&input);
        client(&input);
    }
}
