//! `mote_quic`'s device connection: a client connection with the device sizes (RustCrypto,
//! a 1 KiB TLS receive buffer, 3 stream slots, 16 sent-packet records, 4 ranges) writes its
//! first datagram through the real send path — the ClientHello in an Initial packet padded to
//! 1200 bytes — takes an unauthenticated datagram through the receive path (dropped, the
//! connection stays open) and fires its PTO, which sends the Initial again. Everything the
//! connection does on a device is linked.
//!
//! The connection lives on the stack here (the QEMU board has megabytes of RAM); a device
//! keeps it in a static.

use core::hint::black_box;
use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{CryptoRng, Error as CryptoError};
use mote_quic::{Connection, ConnectionConfig, Instant, Storage};
use mote_tls::{ClientConfig, ClientSession, ServerAuth};

use crate::Checks;

/// RFC 8410 §10.1's example Ed25519 key, pinned as the server's.
const PINNED_SERVER_SPKI: [u8; 44] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00, 0x19, 0xbf, 0x44, 0x09,
    0x69, 0x84, 0xcd, 0xfe, 0x85, 0x41, 0xba, 0xc1, 0x67, 0xdc, 0x3b, 0x96, 0xc8, 0x50, 0x86, 0xaa,
    0x30, 0xb6, 0xb6, 0xcb, 0x0c, 0x5c, 0x38, 0xad, 0x70, 0x31, 0x66, 0xe1,
];

/// A deterministic generator standing in for the device TRNG in this image.
struct CounterRng(u8);

impl CryptoRng for CounterRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), CryptoError> {
        for b in dest {
            self.0 = self.0.wrapping_mul(29).wrapping_add(17);
            *b = self.0;
        }
        Ok(())
    }
}

type DeviceConnection<'a> =
    Connection<RustCrypto, ClientSession<'a, RustCrypto, 1024>, [u8; 512], [u8; 1024], 3, 16, 4>;

/// Connects, sends the first flight, survives garbage, retransmits on PTO.
#[inline(never)]
pub fn exercise(c: &mut Checks) {
    let pinned: [&[u8]; 1] = [black_box(&PINNED_SERVER_SPKI)];
    let config = ClientConfig {
        server_name: Some(b"broker.mote.example"),
        alpn: &[b"h3"],
        server_auth: ServerAuth::RawPublicKeys(&pinned),
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    };
    let server = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 443));
    let storage =
        Storage { crypto: [([0; 512], [0; 512]); 3], streams: [([0; 1024], [0; 1024]); 3] };
    let session = ClientSession::new(RustCrypto, &config, None);
    let mut rng = CounterRng(black_box(3));
    let conn = DeviceConnection::client(
        &ConnectionConfig::device(),
        RustCrypto,
        session,
        storage,
        Instant::ZERO,
        server,
        &mut rng,
    );
    let Some(mut conn) = c.ok(conn) else { return };
    let mut buf = [0u8; 1200];
    // RFC 9000 §14.1: the first datagram is an Initial (long header, type 0) of 1200 bytes.
    let first = conn.poll_transmit(Instant::ZERO, &mut buf);
    c.check(first.is_some_and(|t| t.len == 1200 && t.destination == server));
    c.check(buf[0] & 0xf0 == 0xc0);
    c.check(conn.poll_transmit(Instant::ZERO, &mut buf).is_none());
    // An unauthenticated datagram is dropped; the connection stays open.
    let mut junk = black_box([0x41u8; 64]);
    conn.handle_datagram(Instant(1_000), server, &mut junk);
    c.check(!conn.is_closed());
    // The PTO (1 s with the default 333 ms initial RTT) re-sends the Initial.
    let pto = conn.poll_timeout();
    c.check(pto.is_some_and(|t| t > Instant(900_000) && t < Instant(1_100_000)));
    if let Some(t) = pto {
        conn.handle_timeout(t);
        c.check(conn.poll_transmit(t, &mut buf).is_some_and(|t| t.len == 1200));
    }
    c.check(conn.stats().ptos == 1);
}
