//! In-memory QUIC stand-in for handshake tests: a [`QuicHooks`] that records everything a
//! session hands out, a seeded RNG, test keys, and a driver that shuttles CRYPTO bytes
//! between a client and a server.

use std::vec;
use std::vec::Vec;

use mote_crypto::rustcrypto::{RustCrypto, SigningKey};
use mote_crypto::{AeadAlgorithm, CryptoProvider, CryptoRng, SignatureScheme, SigningKey as _};

use crate::msgs::split_message;
use crate::session::{KeyLevel, Level, QuicHooks, Secrets, SendBuffer};
use crate::{Error, Ticket};

pub(crate) const P: RustCrypto = RustCrypto;
pub(crate) const LEVELS: [Level; 3] = [Level::Initial, Level::Handshake, Level::OneRtt];

/// A deterministic RNG (SplitMix64) — for tests only.
#[derive(Clone, Debug)]
pub(crate) struct TestRng(pub(crate) u64);

impl CryptoRng for TestRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), mote_crypto::Error> {
        for b in dest {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *b = (z ^ (z >> 31)) as u8;
        }
        Ok(())
    }
}

/// One set of installed secrets, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Installed {
    pub(crate) level: KeyLevel,
    pub(crate) suite: AeadAlgorithm,
    pub(crate) client: Vec<u8>,
    pub(crate) server: Option<Vec<u8>>,
}

/// What one endpoint's QUIC layer saw.
pub(crate) struct Endpoint {
    pub(crate) rng: TestRng,
    pub(crate) tp: Vec<u8>,
    scratch: Vec<u8>,
    /// Bytes waiting to go to the peer, per level.
    pub(crate) out: [Vec<u8>; 3],
    /// Every message written: (level, handshake type).
    pub(crate) sent_types: Vec<(Level, u8)>,
    pub(crate) secrets: Vec<Installed>,
    pub(crate) peer_tp: Option<Vec<u8>>,
    pub(crate) early: Option<bool>,
    pub(crate) complete: bool,
    pub(crate) tickets: Vec<Vec<u8>>,
    /// Make `peer_transport_parameters` fail with this.
    pub(crate) reject_tp: Option<Error>,
    /// What `ticket_context` answers: (for offered tickets, for issued ones).
    pub(crate) ticket_context: (u32, u32),
}

impl Endpoint {
    pub(crate) fn new(seed: u64, tp: &[u8]) -> Self {
        Self {
            rng: TestRng(seed),
            tp: tp.to_vec(),
            scratch: vec![0; 16384],
            out: [Vec::new(), Vec::new(), Vec::new()],
            sent_types: Vec::new(),
            secrets: Vec::new(),
            peer_tp: None,
            early: None,
            complete: false,
            tickets: Vec::new(),
            reject_tp: None,
            ticket_context: (0, 0),
        }
    }

    pub(crate) fn secret(&self, level: KeyLevel) -> Option<&Installed> {
        self.secrets.iter().find(|s| s.level == level)
    }

    pub(crate) fn take(&mut self, level: Level) -> Vec<u8> {
        core::mem::take(&mut self.out[level as usize])
    }
}

impl QuicHooks for Endpoint {
    fn rng(&mut self) -> &mut dyn CryptoRng {
        &mut self.rng
    }

    fn send_buffer(&mut self, _level: Level) -> SendBuffer<'_> {
        SendBuffer { space: &mut self.scratch, transport_parameters: &self.tp }
    }

    fn sent(&mut self, level: Level, len: usize) {
        let bytes = &self.scratch[..len];
        let mut rest = bytes;
        while let Some((m, r)) = split_message(rest) {
            self.sent_types.push((level, m.typ));
            rest = r;
        }
        assert!(rest.is_empty(), "sent() must carry whole messages");
        self.out[level as usize].extend_from_slice(bytes);
    }

    fn install_secrets(&mut self, s: Secrets<'_>) -> Result<(), Error> {
        self.secrets.push(Installed {
            level: s.level,
            suite: s.suite,
            client: s.client.as_ref().to_vec(),
            server: s.server.map(|x| x.as_ref().to_vec()),
        });
        Ok(())
    }

    fn peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), Error> {
        if let Some(e) = self.reject_tp {
            return Err(e);
        }
        self.peer_tp = Some(params.to_vec());
        Ok(())
    }

    fn early_data(&mut self, accepted: bool) {
        self.early = Some(accepted);
    }

    fn handshake_complete(&mut self) {
        self.complete = true;
    }

    fn new_ticket(&mut self, ticket: &Ticket<'_>) {
        let mut buf = vec![0u8; 1024];
        // The QUIC layer stores the server's transport parameters with the ticket.
        let remembered = self.peer_tp.clone().unwrap_or_default();
        let with_tp = Ticket { server_transport_parameters: &remembered, ..*ticket };
        let n = with_tp.encode(&mut buf).expect("ticket fits");
        buf.truncate(n);
        self.tickets.push(buf);
    }

    fn ticket_context(&self, issuing: bool) -> u32 {
        if issuing {
            self.ticket_context.1
        } else {
            self.ticket_context.0
        }
    }
}

/// Which side failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Who {
    Client,
    Server,
}

/// Anything that reads handshake bytes (so the driver works for both sessions).
pub(crate) trait Reader {
    fn read(&mut self, level: Level, data: &[u8], ep: &mut Endpoint) -> Result<(), Error>;
}

impl<P: CryptoProvider + crate::ProviderBound, const RX: usize> Reader
    for crate::ClientSession<'_, P, RX>
{
    fn read(&mut self, level: Level, data: &[u8], ep: &mut Endpoint) -> Result<(), Error> {
        self.read_handshake(level, data, ep)
    }
}

impl<P: CryptoProvider, const RX: usize> Reader for crate::ServerSession<'_, P, RX> {
    fn read(&mut self, level: Level, data: &[u8], ep: &mut Endpoint) -> Result<(), Error> {
        self.read_handshake(level, data, ep)
    }
}

/// Delivers `data` in pieces of `chunk` bytes (0 = all at once).
pub(crate) fn deliver(
    r: &mut impl Reader,
    level: Level,
    data: &[u8],
    chunk: usize,
    ep: &mut Endpoint,
) -> Result<(), Error> {
    if chunk == 0 {
        return r.read(level, data, ep);
    }
    for piece in data.chunks(chunk) {
        r.read(level, piece, ep)?;
    }
    Ok(())
}

/// Shuttles bytes both ways until neither side has anything to send. `tamper` may edit
/// each batch (from, level, bytes) in flight.
pub(crate) fn pump(
    client: &mut impl Reader,
    cep: &mut Endpoint,
    server: &mut impl Reader,
    sep: &mut Endpoint,
    chunk: usize,
    tamper: &mut dyn FnMut(Who, Level, &mut Vec<u8>),
) -> Result<(), (Who, Error)> {
    loop {
        let mut moved = false;
        for level in LEVELS {
            let mut data = cep.take(level);
            if !data.is_empty() {
                moved = true;
                tamper(Who::Client, level, &mut data);
                deliver(server, level, &data, chunk, sep).map_err(|e| (Who::Server, e))?;
            }
        }
        for level in LEVELS {
            let mut data = sep.take(level);
            if !data.is_empty() {
                moved = true;
                tamper(Who::Server, level, &mut data);
                deliver(client, level, &data, chunk, cep).map_err(|e| (Who::Client, e))?;
            }
        }
        if !moved {
            return Ok(());
        }
    }
}

/// RFC 8410 / PKCS#8 v1 wrapping of an Ed25519 seed.
pub(crate) fn ed25519_pkcs8(seed: u8) -> Vec<u8> {
    let mut v = hex_literal::hex!("302e020100300506032b657004220420").to_vec();
    v.extend_from_slice(&[seed; 32]);
    v
}

/// Two P-256 keys in PKCS#8 (generated with openssl for these tests).
pub(crate) const P256_PKCS8: [&[u8]; 2] = [
    &hex_literal::hex!(
        "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420568b1c62b17cba89"
        "3ef6b80397ac09453ed745b18a7078e0c111fe02134e5551a14403420004b3c25b0ee74009d2c68bfe5c7220"
        "afed5e19a9fa1aa6b113b6d3a743991ba474c0d354e248f598de13ac4c32ee7dbd765e93bf618168ae682716"
        "4f0ce35db3f4"
    ),
    &hex_literal::hex!(
        "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b02010104207638558b6ff0c140"
        "065b5eba62c1801806fbbdaf5f3a338537067eb8e045494da14403420004b04015fa1dc9867042a1154e9d44"
        "eb5826349bfdca69e02292451b62e16d5a2913dbfe72981fdb2d16ac0a6a5d1f7c37c88dc88acb2b721142fb"
        "11fa4020eb23"
    ),
];

pub(crate) fn key(scheme: SignatureScheme, which: u8) -> SigningKey {
    match scheme {
        SignatureScheme::Ed25519 => P.signing_key(scheme, &ed25519_pkcs8(which)).unwrap(),
        _ => P.signing_key(scheme, P256_PKCS8[which as usize]).unwrap(),
    }
}

pub(crate) fn spki_of(key: &SigningKey) -> Vec<u8> {
    let mut out = vec![0u8; 128];
    let n = crate::encode_spki(key.scheme(), key.public_key(), &mut out).unwrap();
    out.truncate(n);
    out
}
