//! Fuzzing entry points: arbitrary bytes into fresh sessions, at every level, in arbitrary
//! pieces. Nothing here may panic, whatever the input; errors are the expected outcome.
//!
//! The input is a sequence of records `level (1 byte, mod 3) || length (1 byte) || bytes`;
//! each record is fed with `read_handshake`, until the input ends or the session fails.
//! A cargo-fuzz target is a one-liner: `fuzz_target!(|d: &[u8]| mote_tls::fuzz::client(d))`.

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{CryptoRng, HashAlgorithm};

use crate::config::{ClientConfig, ExternalPsk, ServerAuth};
use crate::session::{Level, QuicHooks, Secrets, SendBuffer};
use crate::{ClientSession, Error};

/// A QUIC stand-in that discards everything, with a fixed-seed RNG (not for real use).
struct Sink {
    scratch: [u8; 4096],
    state: u32,
}

impl CryptoRng for Sink {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), mote_crypto::Error> {
        for b in dest {
            // xorshift32: deterministic, so fuzz findings reproduce.
            self.state ^= self.state << 13;
            self.state ^= self.state >> 17;
            self.state ^= self.state << 5;
            *b = self.state as u8;
        }
        Ok(())
    }
}

impl QuicHooks for Sink {
    fn rng(&mut self) -> &mut dyn CryptoRng {
        self
    }
    fn send_buffer(&mut self, _: Level) -> SendBuffer<'_> {
        SendBuffer { space: &mut self.scratch, transport_parameters: b"\x01\x02\x40\x64" }
    }
    fn sent(&mut self, _: Level, _: usize) {}
    fn install_secrets(&mut self, _: Secrets<'_>) -> Result<(), Error> {
        Ok(())
    }
    fn peer_transport_parameters(&mut self, _: &[u8]) -> Result<(), Error> {
        Ok(())
    }
}

fn level(b: u8) -> Level {
    match b % 3 {
        0 => Level::Initial,
        1 => Level::Handshake,
        _ => Level::OneRtt,
    }
}

/// Feeds the records of `data` to `read` until one fails.
fn feed(mut data: &[u8], mut read: impl FnMut(Level, &[u8]) -> Result<(), Error>) {
    while let [lvl, len, rest @ ..] = data {
        let n = usize::from(*len).min(rest.len());
        let Some((chunk, tail)) = rest.split_at_checked(n) else { return };
        if read(level(*lvl), chunk).is_err() {
            return;
        }
        data = tail;
    }
}

const PSK: ExternalPsk<'static> =
    ExternalPsk { identity: b"fuzz", key: &[7; 32], hash: HashAlgorithm::Sha256 };
const PINNED: &[&[u8]] = &[&[
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00, 1, 2, 3, 4, 5, 6, 7, 8,
    9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
]];

/// A client (raw-public-key mode if the first byte is even, external PSK if odd) that has
/// sent its ClientHello, fed `data[1..]`.
pub fn client(data: &[u8]) {
    let Some((mode, data)) = data.split_first() else { return };
    let auth = if mode % 2 == 0 {
        ServerAuth::RawPublicKeys(PINNED)
    } else {
        ServerAuth::ExternalPsk(PSK)
    };
    let config = ClientConfig {
        server_name: Some(b"fuzz.example"),
        alpn: &[b"h3"],
        server_auth: auth,
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    };
    let mut sink = Sink { scratch: [0; 4096], state: 0x1234_5678 };
    let mut session = ClientSession::<RustCrypto, 1024>::new(RustCrypto, &config, None);
    if session.start(&mut sink).is_err() {
        return;
    }
    feed(data, |level, bytes| session.read_handshake(level, bytes, &mut sink));
}

/// A PSK-only server with session tickets and 0-RTT, fed `data`.
#[cfg(feature = "server")]
pub fn server(data: &[u8]) {
    use crate::config::{EarlyDataConfig, ServerConfig, TicketConfig, TicketKey};
    use crate::ServerSession;
    use mote_crypto::AeadAlgorithm;

    /// Accepts every first use; fuzzing does not care about replays.
    struct AlwaysFresh;
    impl crate::ticket::AntiReplay for AlwaysFresh {
        fn check_and_insert(&self, _: &[u8; 16], _: u64, _: u64) -> crate::ticket::ReplayCheck {
            crate::ticket::ReplayCheck::Fresh
        }
    }
    let register = AlwaysFresh;
    let keys = [TicketKey { id: *b"fuzz", aead: AeadAlgorithm::Aes128Gcm, key: &[9; 16] }];
    let config = ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn: &[b"h3"],
        identity: None,
        external_psks: &[PSK],
        client_auth: None,
        tickets: Some(TicketConfig {
            keys: &keys,
            lifetime_s: 3600,
            count: 1,
            max_age_skew_ms: 1000,
        }),
        early_data: Some(EarlyDataConfig { anti_replay: &register, context: b"" }),
        defer_signatures: false,
    };
    let mut sink = Sink { scratch: [0; 4096], state: 0x8765_4321 };
    let mut session = ServerSession::<RustCrypto, 1024>::new(RustCrypto, &config, 0);
    feed(data, |level, bytes| session.read_handshake(level, bytes, &mut sink));
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Client-only builds fuzz too.
        #[test]
        fn client_never_panics(data in proptest::collection::vec(any::<u8>(), 0..1500)) {
            super::client(&data);
        }
    }

    #[test]
    fn records_are_split_as_documented() {
        // A ServerHello-typed record at Initial, then an over-long length: no panic.
        super::client(&[0, 0, 4, 2, 0, 0, 0, 1, 200, 1, 2, 3]);
        super::client(&[1, 1, 4, 8, 0, 0, 0]);
    }
}
