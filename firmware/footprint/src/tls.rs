//! `mote_tls`'s device client: builds a real ClientHello (X25519 share, ALPN `h3`, pinned
//! raw-public-key server authentication, QUIC transport parameters) through the
//! [`QuicHooks`] interface, then feeds the session a server flight it cannot see through
//! (so every client-side parser and verifier is linked) and checks the session fails it
//! with an alert rather than accepting it.

use core::hint::black_box;

use mote_crypto::{CryptoRng, Error as CryptoError};
use mote_tls::{ClientConfig, ClientSession, Level, QuicHooks, Secrets, SendBuffer, ServerAuth};

use crate::Checks;

/// An Ed25519 SubjectPublicKeyInfo (RFC 8410 §10.1's example key), pinned as the server's.
const PINNED_SERVER_SPKI: [u8; 44] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00, 0x19, 0xbf, 0x44, 0x09,
    0x69, 0x84, 0xcd, 0xfe, 0x85, 0x41, 0xba, 0xc1, 0x67, 0xdc, 0x3b, 0x96, 0xc8, 0x50, 0x86, 0xaa,
    0x30, 0xb6, 0xb6, 0xcb, 0x0c, 0x5c, 0x38, 0xad, 0x70, 0x31, 0x66, 0xe1,
];

/// A ServerHello-shaped message whose key share is not a valid X25519 point, behind
/// `black_box` so the compiler keeps every path that could follow it.
const SERVER_FLIGHT: [u8; 42] = [
    0x02, 0x00, 0x00, 0x26, 0x03, 0x03, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
    0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
    0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x00, 0x13, 0x01, 0x00,
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

struct Hooks {
    rng: CounterRng,
    crypto: [u8; 512],
    sent: usize,
    transport_parameters: [u8; 16],
}

impl QuicHooks for Hooks {
    fn rng(&mut self) -> &mut dyn CryptoRng {
        &mut self.rng
    }
    fn send_buffer(&mut self, _level: Level) -> SendBuffer<'_> {
        SendBuffer {
            space: self.crypto.get_mut(self.sent..).unwrap_or_default(),
            transport_parameters: &self.transport_parameters,
        }
    }
    fn sent(&mut self, _level: Level, len: usize) {
        self.sent += len;
    }
    fn install_secrets(&mut self, secrets: Secrets<'_>) -> Result<(), mote_tls::Error> {
        black_box(secrets.client.as_ref());
        Ok(())
    }
    fn peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), mote_tls::Error> {
        black_box(params);
        Ok(())
    }
}

/// Runs the client handshake as far as an unauthenticated server flight allows.
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
    let mut hooks = Hooks {
        rng: CounterRng(black_box(7)),
        crypto: [0; 512],
        sent: 0,
        // initial_max_data = 4096, initial_source_connection_id = 01020304.
        transport_parameters: black_box([
            0x04, 0x02, 0x50, 0x00, 0x0f, 0x04, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0,
        ]),
    };
    let mut session: ClientSession<'_, _, 1024> =
        ClientSession::new(mote_crypto::rustcrypto::RustCrypto, &config, None);
    c.ok(session.start(&mut hooks));
    // RFC 8446 §4: a ClientHello (type 1) with its 3-byte length.
    let len = hooks.sent;
    c.check(len > 100 && hooks.crypto[0] == 0x01);
    c.check(usize::from(hooks.crypto[3]) + 4 == len);
    // An unverifiable server flight must end the handshake with an alert.
    let flight = black_box(SERVER_FLIGHT);
    c.check(session.read_handshake(Level::Initial, &flight, &mut hooks).is_err());
    c.check(!session.is_handshake_complete());
}
