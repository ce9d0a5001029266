//! Client ↔ server handshakes in memory: every group × suite × authentication mode,
//! HelloRetryRequest, resumption, 0-RTT accepted and rejected, mutual authentication, and
//! one negative test per failure class with the exact alert.

use std::sync::Mutex;
use std::vec::Vec;

use mote_crypto::rustcrypto::{RustCrypto, SigningKey};
#[cfg(feature = "x509")]
use mote_crypto::CryptoProvider as _;
use mote_crypto::{AeadAlgorithm, HashAlgorithm, NamedGroup, SignatureScheme, SigningKey as _};

use super::harness::*;
use crate::msgs::{self, handshake_type as ht, split_message, KeyShareEntry};
use crate::session::{KeyLevel, Level};
use crate::ticket::{AntiReplay, ReplayCheck, StrikeRegister};
use crate::{
    transport_error, Alert, ClientAuth, ClientConfig, ClientSession, EarlyDataConfig, Error,
    ExternalPsk, Resumption, ServerAuth, ServerConfig, ServerIdentity, ServerSession, Ticket,
    TicketConfig, TicketKey,
};

const CLIENT_TP: &[u8] = b"\x0f\x08client-tp";
const SERVER_TP: &[u8] = b"\x0f\x08server-tp";
const NOW: u64 = 1_700_000_000_000;
const PSK_KEY: &[u8] = &[0x42; 32];
const PSK_KEY_384: &[u8] = &[0x43; 48];

const SUITES: [AeadAlgorithm; 3] =
    [AeadAlgorithm::Aes128Gcm, AeadAlgorithm::Aes256Gcm, AeadAlgorithm::ChaCha20Poly1305];
const GROUPS: [NamedGroup; 2] = [NamedGroup::X25519, NamedGroup::Secp256r1];

static TICKET_KEYS: [TicketKey<'static>; 1] =
    [TicketKey { id: *b"tk01", aead: AeadAlgorithm::Aes128Gcm, key: &[0x11; 16] }];
const TICKETS: TicketConfig<'static> =
    TicketConfig { keys: &TICKET_KEYS, lifetime_s: 3600, count: 2, max_age_skew_ms: 10_000 };

/// A strike register shared the way a multi-threaded server shares it.
struct Register<const N: usize>(Mutex<StrikeRegister<N>>);

impl<const N: usize> Register<N> {
    fn new() -> Self {
        Self(Mutex::new(StrikeRegister::new()))
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

impl<const N: usize> AntiReplay for Register<N> {
    fn check_and_insert(&self, id: &[u8; 16], now_ms: u64, expires_ms: u64) -> ReplayCheck {
        self.0.lock().unwrap().check_and_insert(id, now_ms, expires_ms)
    }
}

/// The keys of a test run.
struct Keys {
    server_ed: SigningKey,
    server_p256: SigningKey,
    client_ed: SigningKey,
    spki_server_ed: Vec<u8>,
    spki_server_p256: Vec<u8>,
    spki_client_ed: Vec<u8>,
    spki_other: Vec<u8>,
}

impl Keys {
    fn new() -> Self {
        let server_ed = key(SignatureScheme::Ed25519, 1);
        let server_p256 = key(SignatureScheme::EcdsaSecp256r1Sha256, 0);
        let client_ed = key(SignatureScheme::Ed25519, 2);
        let other = key(SignatureScheme::Ed25519, 3);
        Self {
            spki_server_ed: spki_of(&server_ed),
            spki_server_p256: spki_of(&server_p256),
            spki_client_ed: spki_of(&client_ed),
            spki_other: spki_of(&other),
            server_ed,
            server_p256,
            client_ed,
        }
    }
}

fn client_config<'a>(alpn: &'a [&'a [u8]], auth: ServerAuth<'a>) -> ClientConfig<'a> {
    ClientConfig {
        server_name: Some(b"mote.example"),
        alpn,
        server_auth: auth,
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    }
}

fn server_config<'a>(alpn: &'a [&'a [u8]], key: &'a SigningKey) -> ServerConfig<'a> {
    ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn,
        identity: Some(ServerIdentity { key, x509_chain: &[] }),
        external_psks: &[],
        client_auth: None,
        tickets: None,
        early_data: None,
        defer_signatures: false,
    }
}

type Client<'c> = ClientSession<'c, RustCrypto>;
type Server<'c> = ServerSession<'c, RustCrypto>;

struct Run<'c> {
    client: Client<'c>,
    cep: Endpoint,
    server: Server<'c>,
    sep: Endpoint,
    result: Result<(), (Who, Error)>,
}

fn run_with<'c>(
    ccfg: &'c ClientConfig<'c>,
    scfg: &'c ServerConfig<'c>,
    resumption: Option<Resumption<'c>>,
    now: u64,
    chunk: usize,
    tamper: &mut dyn FnMut(Who, Level, &mut Vec<u8>),
) -> Run<'c> {
    let mut client = Client::new(RustCrypto, ccfg, resumption);
    #[cfg(feature = "x509")]
    client.set_unix_time(X509_NOW);
    let mut server = Server::new(RustCrypto, scfg, now);
    let mut cep = Endpoint::new(now ^ 1, CLIENT_TP);
    let mut sep = Endpoint::new(now ^ 2, SERVER_TP);
    let result = client
        .start(&mut cep)
        .map_err(|e| (Who::Client, e))
        .and_then(|()| pump(&mut client, &mut cep, &mut server, &mut sep, chunk, tamper));
    Run { client, cep, server, sep, result }
}

fn run<'c>(ccfg: &'c ClientConfig<'c>, scfg: &'c ServerConfig<'c>) -> Run<'c> {
    run_with(ccfg, scfg, None, NOW, 0, &mut |_, _, _| {})
}

/// Both sides completed and agree on everything they should.
fn assert_agree(r: &Run<'_>) {
    assert_eq!(r.result, Ok(()));
    assert!(r.client.is_handshake_complete() && r.server.is_handshake_complete());
    assert!(r.cep.complete && r.sep.complete);
    assert_eq!(r.client.suite(), r.server.suite());
    assert_eq!(r.client.group(), r.server.group());
    assert_eq!(r.client.alpn(), r.server.alpn());
    assert_eq!(r.client.psk_accepted(), r.server.psk_accepted());
    assert_eq!(r.cep.peer_tp.as_deref(), Some(SERVER_TP));
    assert_eq!(r.sep.peer_tp.as_deref(), Some(CLIENT_TP));
    for level in [KeyLevel::Handshake, KeyLevel::OneRtt] {
        assert_eq!(r.cep.secret(level), r.sep.secret(level), "{level:?} secrets differ");
    }
    // 0-RTT: the same secret on both sides when accepted; a server that rejected it has none
    // (the client may have used it already).
    if r.server.early_data_accepted() == Some(true) {
        assert!(r.sep.secret(KeyLevel::ZeroRtt).is_some());
        assert_eq!(r.cep.secret(KeyLevel::ZeroRtt), r.sep.secret(KeyLevel::ZeroRtt));
    } else {
        assert!(r.sep.secret(KeyLevel::ZeroRtt).is_none());
    }
    let suite = r.client.suite().unwrap();
    let hs = r.cep.secret(KeyLevel::Handshake).unwrap();
    assert_eq!(hs.suite, suite);
    assert_eq!(hs.client.len(), suite.hash().output_len());
    assert_ne!(Some(&hs.client), hs.server.as_ref());
    assert!(r.cep.secret(KeyLevel::OneRtt).is_some());
    let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
    r.client.export(b"EXPORTER-test", b"ctx", &mut a).unwrap();
    r.server.export(b"EXPORTER-test", b"ctx", &mut b).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, [0; 32]);
}

fn server_error(r: &Run<'_>) -> Error {
    match r.result {
        Err((Who::Server, e)) => e,
        other => panic!("expected a server error, got {other:?}"),
    }
}

fn client_error(r: &Run<'_>) -> Error {
    match r.result {
        Err((Who::Client, e)) => e,
        other => panic!("expected a client error, got {other:?}"),
    }
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    RpkEd25519,
    RpkP256,
    Psk,
    #[cfg(feature = "x509")]
    X509P256,
    #[cfg(feature = "x509")]
    X509Ed25519,
}

const MODES: &[Mode] = &[
    Mode::RpkEd25519,
    Mode::RpkP256,
    Mode::Psk,
    #[cfg(feature = "x509")]
    Mode::X509P256,
    #[cfg(feature = "x509")]
    Mode::X509Ed25519,
];

/// Unix time for the X.509 tests: inside the test certificates' validity (2026-11-22 on).
#[cfg(feature = "x509")]
const X509_NOW: u64 = 1_800_000_000;

#[cfg(feature = "x509")]
mod pki {
    pub(super) const CA: &[u8] = include_bytes!("x509/ca.der");
    pub(super) const OTHER_CA: &[u8] = include_bytes!("x509/ca2.der");
    pub(super) const LEAF_P256: &[u8] = include_bytes!("x509/leaf.der");
    pub(super) const LEAF_P256_KEY: &[u8] = include_bytes!("x509/leaf.pk8");
    pub(super) const LEAF_ED25519: &[u8] = include_bytes!("x509/leafed.der");
    pub(super) const LEAF_ED25519_KEY: &[u8] = include_bytes!("x509/leafed.pk8");

    pub(super) fn anchor(der: &'static [u8]) -> crate::pki_types::TrustAnchor<'static> {
        let der = crate::pki_types::CertificateDer::from(der);
        crate::webpki::anchor_from_trusted_cert(&der).unwrap().to_owned()
    }
}

#[test]
fn every_group_suite_and_auth_mode() {
    let keys = Keys::new();
    let alpn: &[&[u8]] = &[b"h3", b"mqtt"];
    #[cfg(feature = "x509")]
    let (anchors, x509_p256, x509_ed) = (
        [pki::anchor(pki::CA)],
        P.signing_key(SignatureScheme::EcdsaSecp256r1Sha256, pki::LEAF_P256_KEY).unwrap(),
        P.signing_key(SignatureScheme::Ed25519, pki::LEAF_ED25519_KEY).unwrap(),
    );
    for group in GROUPS {
        for suite in SUITES {
            if !crate::client::suite_built(suite) {
                continue; // TLS_AES_256_GCM_SHA384 needs feature `aes256`
            }
            for &mode in MODES {
                let psk_hash = suite.hash();
                let psk_key = if psk_hash == HashAlgorithm::Sha384 { PSK_KEY_384 } else { PSK_KEY };
                let psk = ExternalPsk { identity: b"device-17", key: psk_key, hash: psk_hash };
                let pinned_ed = [keys.spki_server_ed.as_slice()];
                let pinned_p256 = [keys.spki_server_p256.as_slice()];
                let (auth, server_key) = match mode {
                    Mode::RpkEd25519 => (ServerAuth::RawPublicKeys(&pinned_ed), &keys.server_ed),
                    Mode::RpkP256 => (ServerAuth::RawPublicKeys(&pinned_p256), &keys.server_p256),
                    Mode::Psk => (ServerAuth::ExternalPsk(psk), &keys.server_ed),
                    #[cfg(feature = "x509")]
                    Mode::X509P256 => {
                        (ServerAuth::X509(crate::X509Verifier { anchors: &anchors }), &x509_p256)
                    }
                    #[cfg(feature = "x509")]
                    Mode::X509Ed25519 => {
                        (ServerAuth::X509(crate::X509Verifier { anchors: &anchors }), &x509_ed)
                    }
                };
                let groups = [group];
                let suites = [suite];
                let mut ccfg = client_config(alpn, auth);
                ccfg.groups = &groups;
                ccfg.cipher_suites = &suites;
                let psks = [psk];
                let mut scfg = server_config(&[b"mqtt", b"h3"], server_key);
                if let Mode::Psk = mode {
                    scfg.identity = None;
                    scfg.external_psks = &psks;
                }
                #[cfg(feature = "x509")]
                let chain: [&[u8]; 2] = match mode {
                    Mode::X509Ed25519 => [pki::LEAF_ED25519, pki::CA],
                    _ => [pki::LEAF_P256, pki::CA],
                };
                #[cfg(feature = "x509")]
                if let Mode::X509P256 | Mode::X509Ed25519 = mode {
                    scfg.identity = Some(ServerIdentity { key: server_key, x509_chain: &chain });
                }
                for chunk in [0, 5] {
                    let r = run_with(&ccfg, &scfg, None, NOW, chunk, &mut |_, _, _| {});
                    assert_agree(&r);
                    assert_eq!(r.client.suite(), Some(suite), "{group:?} {suite:?} {mode:?}");
                    assert_eq!(r.client.group(), Some(group));
                    assert!(!r.client.hello_retry_request());
                    // The server's preference wins: "mqtt".
                    assert_eq!(r.client.alpn(), Some(&b"mqtt"[..]));
                    let certificate_sent =
                        r.sep.sent_types.contains(&(Level::Handshake, ht::CERTIFICATE));
                    match mode {
                        Mode::Psk => {
                            assert!(r.client.psk_accepted() && !certificate_sent);
                        }
                        Mode::RpkEd25519 | Mode::RpkP256 => {
                            assert!(!r.client.psk_accepted() && certificate_sent);
                            assert_eq!(r.client.server_key_index(), Some(0));
                        }
                        #[cfg(feature = "x509")]
                        _ => {
                            assert!(!r.client.psk_accepted() && certificate_sent);
                            assert_eq!(r.client.server_key_index(), None);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn hello_retry_request_changes_group() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.groups = &[NamedGroup::X25519, NamedGroup::Secp256r1];
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.groups = &[NamedGroup::Secp256r1];
    let r = run(&ccfg, &scfg);
    assert_agree(&r);
    assert!(r.client.hello_retry_request() && r.server.hello_retry_request());
    assert_eq!(r.client.group(), Some(NamedGroup::Secp256r1));
    let hellos = r.cep.sent_types.iter().filter(|t| **t == (Level::Initial, ht::CLIENT_HELLO));
    assert_eq!(hellos.count(), 2);
}

#[test]
fn hello_retry_request_with_external_psk() {
    let psk = ExternalPsk { identity: b"id", key: PSK_KEY, hash: HashAlgorithm::Sha256 };
    let psks = [psk];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::ExternalPsk(psk));
    ccfg.groups = &[NamedGroup::X25519, NamedGroup::Secp256r1];
    let keys = Keys::new();
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.identity = None;
    scfg.external_psks = &psks;
    scfg.groups = &[NamedGroup::Secp256r1];
    let r = run(&ccfg, &scfg);
    assert_agree(&r);
    assert!(r.client.hello_retry_request() && r.client.psk_accepted());
}

/// `ClientSession::write_new` over a slot full of garbage is the session `new` returns:
/// the same ClientHello from the same randomness, and the handshake completes with the
/// server's flight delivered a byte at a time (through the in-place receive buffer).
#[test]
fn client_written_in_place_matches_new() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut by_value = Client::new(RustCrypto, &ccfg, None);
    let mut by_value_ep = Endpoint::new(NOW ^ 1, CLIENT_TP);
    by_value.start(&mut by_value_ep).unwrap();

    let mut slot = std::boxed::Box::new(core::mem::MaybeUninit::<Client<'_>>::uninit());
    // Garbage where the session goes: `write_new` must write every byte it reads.
    // SAFETY: the slot owns `size_of::<Client>()` bytes; any bytes are a `MaybeUninit`.
    #[allow(unsafe_code)]
    unsafe {
        slot.as_mut_ptr().cast::<u8>().write_bytes(0xa5, core::mem::size_of::<Client<'_>>())
    };
    let client = Client::write_new(&mut slot, RustCrypto, &ccfg, None);
    #[cfg(feature = "x509")]
    client.set_unix_time(X509_NOW);
    let mut cep = Endpoint::new(NOW ^ 1, CLIENT_TP);
    client.start(&mut cep).unwrap();
    assert_eq!(cep.out, by_value_ep.out, "ClientHello differs");

    let mut server = Server::new(RustCrypto, &scfg, NOW);
    let mut sep = Endpoint::new(NOW ^ 2, SERVER_TP);
    pump(&mut *client, &mut cep, &mut server, &mut sep, 1, &mut |_, _, _| {}).unwrap();
    assert!(client.is_handshake_complete() && server.is_handshake_complete());
    assert_eq!(cep.secret(KeyLevel::OneRtt), sep.secret(KeyLevel::OneRtt));
    // SAFETY: `write_new` initialized the slot; it is not used after this.
    #[allow(unsafe_code)]
    unsafe {
        slot.assume_init_drop()
    };
}

/// A first handshake with tickets; returns the client's tickets (encoded).
fn first_handshake(ccfg: &ClientConfig<'_>, scfg: &ServerConfig<'_>) -> Vec<Vec<u8>> {
    let r = run(ccfg, scfg);
    assert_agree(&r);
    assert!(!r.client.psk_accepted());
    assert_eq!(r.cep.tickets.len(), 2);
    r.cep.tickets
}

#[test]
fn resumption_skips_certificate() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_p256.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let mut scfg = server_config(&[b"h3"], &keys.server_p256);
    scfg.tickets = Some(TICKETS);
    let tickets = first_handshake(&ccfg, &scfg);
    for (i, encoded) in tickets.iter().enumerate() {
        let ticket = Ticket::decode(encoded).unwrap();
        assert!(!ticket.early_data);
        assert_eq!(ticket.alpn, b"h3");
        assert_eq!(ticket.server_transport_parameters, SERVER_TP);
        let resumption = Resumption { ticket, age_ms: 5_000 };
        let r = run_with(&ccfg, &scfg, Some(resumption), NOW + 5_000, 0, &mut |_, _, _| {});
        assert_agree(&r);
        assert!(r.client.psk_accepted(), "ticket {i}");
        assert!(!r.sep.sent_types.iter().any(|(_, t)| *t == ht::CERTIFICATE));
        assert!(!r.sep.sent_types.iter().any(|(_, t)| *t == ht::CERTIFICATE_VERIFY));
        // A resumed connection gets fresh tickets too.
        assert_eq!(r.cep.tickets.len(), 2);
    }
    // An expired ticket falls back to a full handshake.
    let ticket = Ticket::decode(&tickets[0]).unwrap();
    let late = NOW + 3_601_000;
    let r =
        run_with(&ccfg, &scfg, Some(Resumption { ticket, age_ms: 0 }), late, 0, &mut |_, _, _| {});
    assert_agree(&r);
    assert!(!r.client.psk_accepted());
    assert!(r.sep.sent_types.contains(&(Level::Handshake, ht::CERTIFICATE)));
}

#[test]
fn zero_rtt_accepted_then_replay_rejected() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.early_data = true;
    let register = Register::<4>::new();
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.tickets = Some(TICKETS);
    scfg.early_data = Some(EarlyDataConfig { anti_replay: &register, context: b"limits v1" });
    let tickets = first_handshake(&ccfg, &scfg);
    let ticket = Ticket::decode(&tickets[0]).unwrap();
    assert!(ticket.early_data);
    let resumption = Resumption { ticket, age_ms: 2_000 };

    let r = run_with(&ccfg, &scfg, Some(resumption), NOW + 2_000, 0, &mut |_, _, _| {});
    assert_agree(&r);
    assert_eq!(r.client.early_data_accepted(), Some(true));
    assert_eq!(r.server.early_data_accepted(), Some(true));
    assert_eq!((r.cep.early, r.sep.early), (Some(true), Some(true)));
    let early = r.cep.secret(KeyLevel::ZeroRtt).unwrap();
    assert_eq!(early.server, None);
    assert_eq!(early.suite, ticket.suite);
    assert_eq!(register.len(), 1);

    // The same ticket again: the strike register rejects 0-RTT, the handshake goes on.
    let r = run_with(&ccfg, &scfg, Some(resumption), NOW + 2_500, 0, &mut |_, _, _| {});
    assert_eq!(r.result, Ok(()));
    assert!(r.client.psk_accepted());
    assert_eq!(r.client.early_data_accepted(), Some(false));
    assert_eq!(r.server.early_data_accepted(), Some(false));
    assert!(r.sep.secret(KeyLevel::ZeroRtt).is_none());
    assert!(r.cep.secret(KeyLevel::ZeroRtt).is_some()); // the client had already sent
    assert_eq!(r.cep.secret(KeyLevel::OneRtt), r.sep.secret(KeyLevel::OneRtt));
}

#[test]
fn zero_rtt_rejected_for_stale_age_changed_context_or_full_register() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.early_data = true;
    let register = Register::<4>::new();
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.tickets = Some(TICKETS);
    scfg.early_data = Some(EarlyDataConfig { anti_replay: &register, context: b"limits v1" });
    let tickets = first_handshake(&ccfg, &scfg);
    let t0 = Ticket::decode(&tickets[0]).unwrap();
    let t1 = Ticket::decode(&tickets[1]).unwrap();

    // The client claims 2 s but the server has seen 60 s pass: outside the 10 s window.
    let r = run_with(
        &ccfg,
        &scfg,
        Some(Resumption { ticket: t0, age_ms: 2_000 }),
        NOW + 60_000,
        0,
        &mut |_, _, _| {},
    );
    assert_eq!(r.result, Ok(()));
    assert!(r.client.psk_accepted());
    assert_eq!(r.client.early_data_accepted(), Some(false));

    // The server's 0-RTT context changed.
    let mut changed = scfg;
    changed.early_data = Some(EarlyDataConfig { anti_replay: &register, context: b"limits v2" });
    let r = run_with(
        &ccfg,
        &changed,
        Some(Resumption { ticket: t1, age_ms: 0 }),
        NOW,
        0,
        &mut |_, _, _| {},
    );
    assert_eq!(r.result, Ok(()));
    assert_eq!(r.client.early_data_accepted(), Some(false));

    // A full register rejects 0-RTT (memory stays bounded).
    let full = Register::<0>::new();
    let mut bounded = scfg;
    bounded.early_data = Some(EarlyDataConfig { anti_replay: &full, context: b"limits v1" });
    let r = run_with(
        &ccfg,
        &bounded,
        Some(Resumption { ticket: t1, age_ms: 0 }),
        NOW,
        0,
        &mut |_, _, _| {},
    );
    assert_eq!(r.result, Ok(()));
    assert_eq!(r.client.early_data_accepted(), Some(false));
    assert_eq!(r.cep.early, Some(false));
}

/// RFC 9369 §5: tickets are bound to the context the QUIC layer names (its version): the
/// server seals each ticket under the context it issues in, and a ClientHello's ticket
/// resumes only under the same context; under another it is ignored — a full handshake
/// (certificate and all), early data rejected.
#[test]
fn tickets_resume_only_in_their_context() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.early_data = true;
    let register = Register::<4>::new();
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.tickets = Some(TICKETS);
    scfg.early_data = Some(EarlyDataConfig { anti_replay: &register, context: b"" });
    // `offered`: the server's context for the ClientHello's tickets; `issued`: for the
    // tickets it seals.
    let handshake = |resumption: Option<Resumption<'_>>, offered: u32, issued: u32| {
        let mut client = Client::new(RustCrypto, &ccfg, resumption);
        let mut server = Server::new(RustCrypto, &scfg, NOW);
        let mut cep = Endpoint::new(NOW ^ 1, CLIENT_TP);
        let mut sep = Endpoint::new(NOW ^ 2, SERVER_TP);
        sep.ticket_context = (offered, issued);
        client.start(&mut cep).unwrap();
        pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {}).unwrap();
        assert!(client.is_handshake_complete() && server.is_handshake_complete());
        (client.psk_accepted(), client.early_data_accepted(), sep.sent_types, cep.tickets)
    };
    // Issued under context 1 (a connection that started in v1 and was switched to v2
    // reports 1 for offered tickets and 0x6b3343cf for the ones it issues).
    let (_, _, _, tickets) = handshake(None, 0, 1);
    assert_eq!(tickets.len(), 2);
    let t0 = Ticket::decode(&tickets[0]).unwrap();
    let t1 = Ticket::decode(&tickets[1]).unwrap();
    // Offered under context 2: not opened, so a full handshake without 0-RTT.
    let (psk, early, sent, _) = handshake(Some(Resumption { ticket: t0, age_ms: 0 }), 2, 2);
    assert!(!psk);
    assert_eq!(early, Some(false));
    assert!(sent.contains(&(Level::Handshake, ht::CERTIFICATE)));
    assert_eq!(register.len(), 0, "nothing of the ticket was used");
    // Under its own context it resumes, with 0-RTT.
    let (psk, early, sent, _) = handshake(Some(Resumption { ticket: t1, age_ms: 0 }), 1, 1);
    assert!(psk);
    assert_eq!(early, Some(true));
    assert!(!sent.iter().any(|(_, t)| *t == ht::CERTIFICATE));
}

#[test]
fn zero_rtt_rejected_by_hello_retry_request() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.early_data = true;
    let register = Register::<4>::new();
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.tickets = Some(TICKETS);
    scfg.early_data = Some(EarlyDataConfig { anti_replay: &register, context: b"" });
    let tickets = first_handshake(&ccfg, &scfg);
    let ticket = Ticket::decode(&tickets[0]).unwrap();
    let mut hrr_cfg = scfg;
    hrr_cfg.groups = &[NamedGroup::Secp256r1];
    let r = run_with(
        &ccfg,
        &hrr_cfg,
        Some(Resumption { ticket, age_ms: 0 }),
        NOW,
        0,
        &mut |_, _, _| {},
    );
    assert_agree(&r);
    assert!(r.client.hello_retry_request() && r.client.psk_accepted());
    assert_eq!(r.client.early_data_accepted(), Some(false));
}

// The client signs with its key only with `client-auth` (without it a configured key is
// refused: `Crypto(Unsupported)`).
#[cfg(feature = "client-auth")]
#[test]
fn mutual_authentication_with_client_raw_public_key() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.client_key = Some(&keys.client_ed);
    let allowed = [keys.spki_other.as_slice(), keys.spki_client_ed.as_slice()];
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.client_auth = Some(ClientAuth { allowed: &allowed, required: true });
    let r = run(&ccfg, &scfg);
    assert_agree(&r);
    assert_eq!(r.server.client_key_index(), Some(1));
    assert!(r.cep.sent_types.contains(&(Level::Handshake, ht::CERTIFICATE_VERIFY)));

    // A client key that is not allowed: bad_certificate.
    let allowed = [keys.spki_other.as_slice()];
    scfg.client_auth = Some(ClientAuth { allowed: &allowed, required: true });
    let r = run(&ccfg, &scfg);
    assert_eq!(server_error(&r).alert(), Alert::BadCertificate);

    // A client without a key: certificate_required when required, else let in.
    let anonymous = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let r = run(&anonymous, &scfg);
    assert_eq!(server_error(&r).alert(), Alert::UnsupportedCertificate);
    scfg.client_auth = Some(ClientAuth { allowed: &allowed, required: false });
    let r = run(&anonymous, &scfg);
    assert_agree(&r);
    assert_eq!(r.server.client_key_index(), None);
}

/// Without `client-auth` a configured client key is a configuration error at the start,
/// not silently dropped (the build that cannot sign must not look authenticated).
#[cfg(not(feature = "client-auth"))]
#[test]
fn a_client_key_is_refused_without_client_auth() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.client_key = Some(&keys.client_ed);
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let r = run(&ccfg, &scfg);
    assert_eq!(r.result, Err((Who::Client, Error::Crypto(mote_crypto::Error::Unsupported))));
    // Without the key the same client completes.
    ccfg.client_key = None;
    assert_agree(&run(&ccfg, &scfg));
}

/// Review finding: a PSK handshake skips client authentication (RFC 8446 §4.3.2), and the
/// sealed ticket did not say whether or as whom the client had authenticated. So a key
/// removed from `ClientAuth::allowed` kept resuming for the ticket lifetime, a ticket
/// issued while authentication was optional resumed after it became required, and a
/// resumed connection reported no `client_key_index`.
// The client signs with its key only with `client-auth` (without it a configured key is
// refused: `Crypto(Unsupported)`).
#[cfg(feature = "client-auth")]
#[test]
fn attack_ticket_outlives_client_key_revocation() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.client_key = Some(&keys.client_ed);
    let allowed = [keys.spki_other.as_slice(), keys.spki_client_ed.as_slice()];
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.tickets = Some(TICKETS);
    scfg.client_auth = Some(ClientAuth { allowed: &allowed, required: true });
    let tickets = first_handshake(&ccfg, &scfg);
    let resume = |scfg: &ServerConfig<'_>, ccfg: &ClientConfig<'_>, encoded: &[u8]| {
        let ticket = Ticket::decode(encoded).unwrap();
        let r = run_with(
            ccfg,
            scfg,
            Some(Resumption { ticket, age_ms: 1_000 }),
            NOW + 1_000,
            0,
            &mut |_, _, _| {},
        );
        assert_eq!(r.result, Ok(()));
        (r.server.psk_accepted(), r.server.client_key_index())
    };

    // Resuming names the key the client authenticated with, also in the tickets a
    // resumed connection issues.
    assert_eq!(resume(&scfg, &ccfg, &tickets[0]), (true, Some(1)));
    let ticket = Ticket::decode(&tickets[1]).unwrap();
    let r =
        run_with(&ccfg, &scfg, Some(Resumption { ticket, age_ms: 0 }), NOW, 0, &mut |_, _, _| {});
    assert_eq!(r.server.client_key_index(), Some(1));
    assert_eq!(resume(&scfg, &ccfg, &r.cep.tickets[0]), (true, Some(1)));

    // The key is revoked (removed from the list, or another key now at its index): the
    // ticket is ignored and the full handshake asks for a certificate again.
    let revoked = [keys.spki_other.as_slice()];
    let swapped = [keys.spki_client_ed.as_slice(), keys.spki_other.as_slice()];
    for list in [&revoked[..], &swapped[..]] {
        let mut after = scfg;
        after.client_auth = Some(ClientAuth { allowed: list, required: true });
        let ticket = Ticket::decode(&tickets[0]).unwrap();
        let r = run_with(
            &ccfg,
            &after,
            Some(Resumption { ticket, age_ms: 1_000 }),
            NOW + 1_000,
            0,
            &mut |_, _, _| {},
        );
        assert!(!r.server.psk_accepted());
        assert!(r.sep.sent_types.contains(&(Level::Handshake, ht::CERTIFICATE_REQUEST)));
        if list.len() == 1 {
            assert_eq!(server_error(&r).alert(), Alert::BadCertificate);
        } else {
            assert_agree(&r);
            assert_eq!(r.server.client_key_index(), Some(0));
        }
    }

    // A ticket of a client that did not authenticate (optional authentication) does not
    // resume once authentication is required; it still does while it is optional.
    let anonymous = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let mut optional = scfg;
    optional.client_auth = Some(ClientAuth { allowed: &allowed, required: false });
    let anon_tickets = first_handshake(&anonymous, &optional);
    assert_eq!(resume(&optional, &anonymous, &anon_tickets[0]), (true, None));
    let ticket = Ticket::decode(&anon_tickets[0]).unwrap();
    let r = run_with(
        &anonymous,
        &scfg,
        Some(Resumption { ticket, age_ms: 1_000 }),
        NOW + 1_000,
        0,
        &mut |_, _, _| {},
    );
    assert!(!r.server.psk_accepted());
    assert_eq!(server_error(&r).alert(), Alert::UnsupportedCertificate);
}

#[test]
fn x509_chain_is_sent_when_the_client_does_not_ask_for_raw_keys() {
    // The client side of X.509 is not built yet; check the server's side of the choice.
    let keys = Keys::new();
    let chain: [&[u8]; 2] = [b"end-entity DER", b"intermediate DER"];
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.identity = Some(ServerIdentity { key: &keys.server_ed, x509_chain: &chain });
    let pinned = [keys.spki_server_ed.as_slice()];
    // An RPK client still gets the raw key.
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    assert_agree(&run(&ccfg, &scfg));
}

// ---- negative tests: one per failure class, with the exact alert ----

#[test]
fn wrong_pinned_key_is_bad_certificate() {
    let keys = Keys::new();
    let pinned = [keys.spki_other.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let r = run(&ccfg, &scfg);
    let e = client_error(&r);
    assert_eq!(e.alert(), Alert::BadCertificate);
    assert_eq!(e.quic_error_code(), 0x012a);
    // The session stays failed.
    let mut cep = Endpoint::new(0, CLIENT_TP);
    let mut client = r.client;
    assert_eq!(client.read_handshake(Level::Handshake, &[], &mut cep), Err(e));
}

/// Flips the last byte of the first message of type `typ` in a batch.
fn flip_last_byte_of(typ: u8) -> impl FnMut(Who, Level, &mut Vec<u8>) {
    move |who, _, data: &mut Vec<u8>| {
        if who != Who::Server {
            return;
        }
        let mut at = 0;
        while let Some((m, _)) = split_message(&data[at..]) {
            let len = m.bytes.len();
            if m.typ == typ {
                data[at + len - 1] ^= 0x01;
                return;
            }
            at += len;
        }
    }
}

#[test]
fn bad_certificate_verify_signature_is_decrypt_error() {
    let keys = Keys::new();
    for (key, spki) in
        [(&keys.server_ed, &keys.spki_server_ed), (&keys.server_p256, &keys.spki_server_p256)]
    {
        let pinned = [spki.as_slice()];
        let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
        let scfg = server_config(&[b"h3"], key);
        let r =
            run_with(&ccfg, &scfg, None, NOW, 0, &mut flip_last_byte_of(ht::CERTIFICATE_VERIFY));
        assert_eq!(client_error(&r).alert(), Alert::DecryptError);
    }
}

#[test]
fn bad_finished_is_decrypt_error() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut flip_last_byte_of(ht::FINISHED));
    assert_eq!(client_error(&r), Error::DecryptError);
    assert_eq!(client_error(&r).quic_error_code(), 0x0133);
    // And a client Finished the server cannot verify.
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut |who, level, data| {
        if who == Who::Client && level == Level::Handshake {
            *data.last_mut().unwrap() ^= 0x80;
        }
    });
    assert_eq!(server_error(&r), Error::DecryptError);
}

#[test]
fn unsupported_group_only_is_handshake_failure() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.groups = &[NamedGroup::Secp256r1];
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.groups = &[NamedGroup::X25519];
    let r = run(&ccfg, &scfg);
    assert_eq!(server_error(&r).alert(), Alert::HandshakeFailure);
}

#[test]
fn no_common_suite_is_handshake_failure() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.cipher_suites = &[AeadAlgorithm::ChaCha20Poly1305];
    let r = run(&ccfg, &scfg);
    assert_eq!(server_error(&r).alert(), Alert::HandshakeFailure);
}

/// Renames the quic_transport_parameters extension (type 0x0039) carrying `tp` in a batch
/// to an unknown type, so the message no longer has it.
fn strip_tp(from: Who, tp: &'static [u8]) -> impl FnMut(Who, Level, &mut Vec<u8>) {
    move |who, _, data: &mut Vec<u8>| {
        if who != from {
            return;
        }
        let mut needle = std::vec![0x00, 0x39, 0x00, tp.len() as u8];
        needle.extend_from_slice(tp);
        if let Some(at) = data.windows(needle.len()).position(|w| w == needle) {
            data[at] = 0x7a;
            data[at + 1] = 0x7a;
        }
    }
}

#[test]
fn missing_transport_parameters_is_missing_extension() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut strip_tp(Who::Client, CLIENT_TP));
    let e = server_error(&r);
    assert_eq!(e.alert(), Alert::MissingExtension);
    assert_eq!(e.quic_error_code(), 0x016d);
}

#[test]
fn alpn_mismatch_is_no_application_protocol() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"mqtt"], &keys.server_ed);
    let r = run(&ccfg, &scfg);
    let e = server_error(&r);
    assert_eq!(e.alert(), Alert::NoApplicationProtocol);
    assert_eq!(e.quic_error_code(), 0x0178);
}

/// A client that has sent its ClientHello, with the endpoint that saw it.
fn started<'c>(ccfg: &'c ClientConfig<'c>) -> (Client<'c>, Endpoint) {
    let mut client = Client::new(RustCrypto, ccfg, None);
    let mut cep = Endpoint::new(7, CLIENT_TP);
    client.start(&mut cep).unwrap();
    (client, cep)
}

/// A handshake message: type, u24 length, body.
fn message(typ: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut m = std::vec![typ, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    m.extend_from_slice(body);
    m
}

#[test]
fn tls12_server_hello_is_protocol_version() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let (mut client, mut cep) = started(&ccfg);
    // legacy_version 0x0303, random, empty session id, TLS_AES_128_GCM_SHA256, null
    // compression, no supported_versions: a TLS 1.2 ServerHello.
    let mut body = std::vec![0x03, 0x03];
    body.extend_from_slice(&[0x55; 32]);
    body.extend_from_slice(&[0, 0x13, 0x01, 0, 0, 0]);
    let e = client.read_handshake(Level::Initial, &message(ht::SERVER_HELLO, &body), &mut cep);
    assert_eq!(e.unwrap_err().alert(), Alert::ProtocolVersion);
}

#[test]
fn messages_out_of_order_are_unexpected_message() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    // A Finished before the ServerHello.
    let (mut client, mut cep) = started(&ccfg);
    let e = client.read_handshake(Level::Initial, &message(ht::FINISHED, &[0; 32]), &mut cep);
    assert_eq!(e, Err(Error::UnexpectedMessage));
    // A ServerHello at the Handshake level.
    let (mut client, mut cep) = started(&ccfg);
    let e = client.read_handshake(Level::Handshake, &message(ht::SERVER_HELLO, &[0; 40]), &mut cep);
    assert_eq!(e, Err(Error::UnexpectedMessage));
    // A server that gets a Finished first.
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut server = Server::new(RustCrypto, &scfg, NOW);
    let mut sep = Endpoint::new(1, SERVER_TP);
    let e = server.read_handshake(Level::Initial, &message(ht::FINISHED, &[0; 32]), &mut sep);
    assert_eq!(e.unwrap_err().alert(), Alert::UnexpectedMessage);
    // A second ClientHello after a complete handshake.
    let mut r = run(&ccfg, &scfg);
    assert_agree(&r);
    let e =
        r.server.read_handshake(Level::OneRtt, &message(ht::CLIENT_HELLO, &[0; 40]), &mut r.sep);
    assert_eq!(e, Err(Error::UnexpectedMessage));
}

#[test]
fn end_of_early_data_and_key_update_are_unexpected_message() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut r = run(&ccfg, &scfg);
    assert_agree(&r);
    // RFC 9001 §6: KeyUpdate is 0x010a; RFC 9001 §8.3: EndOfEarlyData likewise.
    let key_update = message(ht::KEY_UPDATE, &[0]);
    let e = r.client.read_handshake(Level::OneRtt, &key_update, &mut r.cep).unwrap_err();
    assert_eq!((e.alert(), e.quic_error_code()), (Alert::UnexpectedMessage, 0x010a));
    let mut server = Server::new(RustCrypto, &scfg, NOW);
    let mut sep = Endpoint::new(1, SERVER_TP);
    let eoed = message(ht::END_OF_EARLY_DATA, &[]);
    let e = server.read_handshake(Level::Handshake, &eoed, &mut sep).unwrap_err();
    assert_eq!(e.alert(), Alert::UnexpectedMessage);
}

/// The client takes only the message its state waits for, at its level: before `start`
/// nothing (every type 0 to 255 is unexpected_message, type 0 too), then only the
/// ServerHello, and once connected only NewSessionTicket (KeyUpdate, EndOfEarlyData and
/// types TLS 1.3 does not have included).
#[test]
fn client_takes_only_the_message_its_state_waits_for() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    for typ in 0..=255u8 {
        let mut client = Client::new(RustCrypto, &ccfg, None);
        let mut cep = Endpoint::new(7, CLIENT_TP);
        let e = client.read_handshake(Level::Initial, &message(typ, &[0; 8]), &mut cep);
        assert_eq!(e, Err(Error::UnexpectedMessage), "type {typ} before start");
        if typ != ht::SERVER_HELLO {
            let (mut client, mut cep) = started(&ccfg);
            let e = client.read_handshake(Level::Initial, &message(typ, &[0; 8]), &mut cep);
            assert_eq!(e, Err(Error::UnexpectedMessage), "type {typ} for the ServerHello");
        }
    }
    for typ in
        [0, ht::SERVER_HELLO, ht::ENCRYPTED_EXTENSIONS, ht::FINISHED, ht::END_OF_EARLY_DATA, 255]
    {
        let mut r = run(&ccfg, &scfg);
        assert_agree(&r);
        let e = r.client.read_handshake(Level::OneRtt, &message(typ, &[0; 8]), &mut r.cep);
        assert_eq!(e, Err(Error::UnexpectedMessage), "type {typ} once connected");
    }
}

/// Regression (found against aioquic): a client configured with an IP address as the server
/// name must not put it in server_name (RFC 6066 §3), must still complete, and must not
/// expect the server to acknowledge a name it did not send.
#[test]
fn ip_address_server_name_is_not_sent() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    for (name, sent) in
        [(&b"192.0.2.1"[..], false), (b"2001:db8::1", false), (b"mote.example", true)]
    {
        let ccfg = ClientConfig {
            server_name: Some(name),
            ..client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned))
        };
        let (_, mut cep) = started(&ccfg);
        let ch = cep.take(Level::Initial);
        let parsed = msgs::ClientHello::parse(&ch[4..]).unwrap();
        assert_eq!(parsed.server_name.is_some(), sent, "{name:?}");
        let r = run(&ccfg, &scfg);
        assert_agree(&r);
    }
}

/// The client's ClientHello, with the message length adjusted after `edit` changes the body.
fn edited_client_hello(ccfg: &ClientConfig<'_>, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let (_, mut cep) = started(ccfg);
    let ch = cep.take(Level::Initial);
    let mut body = ch[4..].to_vec();
    edit(&mut body);
    message(ht::CLIENT_HELLO, &body)
}

#[test]
fn truncated_or_trailing_bytes_are_decode_error() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    for edit in [(|b: &mut Vec<u8>| b.push(0)) as fn(&mut Vec<u8>), |b: &mut Vec<u8>| {
        b.pop();
    }] {
        let ch = edited_client_hello(&ccfg, edit);
        let mut server = Server::new(RustCrypto, &scfg, NOW);
        let mut sep = Endpoint::new(1, SERVER_TP);
        let e = server.read_handshake(Level::Initial, &ch, &mut sep).unwrap_err();
        assert_eq!(e.alert(), Alert::DecodeError);
        assert_eq!(e.quic_error_code(), 0x0132);
    }
}

#[test]
fn non_empty_legacy_session_id_is_protocol_violation() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    // legacy_version (2) + random (32), then the session id length byte.
    let ch = edited_client_hello(&ccfg, |b| {
        b[34] = 1;
        b.insert(35, 0xaa);
    });
    let mut server = Server::new(RustCrypto, &scfg, NOW);
    let mut sep = Endpoint::new(1, SERVER_TP);
    let e = server.read_handshake(Level::Initial, &ch, &mut sep).unwrap_err();
    assert_eq!(e, Error::Transport(transport_error::PROTOCOL_VIOLATION));
}

#[test]
fn message_beyond_the_buffer_is_crypto_buffer_exceeded() {
    let keys = Keys::new();
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut server = ServerSession::<RustCrypto, 512>::new(RustCrypto, &scfg, NOW);
    let mut sep = Endpoint::new(1, SERVER_TP);
    // The header announces 1000 bytes; only the first few have arrived.
    let e = server.read_handshake(Level::Initial, &[ht::CLIENT_HELLO, 0, 0x03, 0xe8, 3], &mut sep);
    let e = e.unwrap_err();
    assert_eq!(e, Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED));
    assert_eq!(e.quic_error_code(), 0x0d);
    // A whole ClientHello fits a small buffer when it arrives in pieces.
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let (_, mut cep) = started(&ccfg);
    let ch = cep.take(Level::Initial);
    let mut server = ServerSession::<RustCrypto, 512>::new(RustCrypto, &scfg, NOW);
    deliver(&mut server, Level::Initial, &ch, 1, &mut sep).unwrap();
    assert!(sep.sent_types.contains(&(Level::Initial, ht::SERVER_HELLO)));
}

#[test]
fn second_hello_retry_request_is_unexpected_message() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    ccfg.groups = &[NamedGroup::X25519, NamedGroup::Secp256r1];
    ccfg.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    let (mut client, mut cep) = started(&ccfg);
    let mut hrr = std::vec![0u8; 256];
    let n = msgs::HelloRetryRequestParams {
        legacy_session_id_echo: &[],
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        selected_group: Some(NamedGroup::Secp256r1),
        cookie: None,
    }
    .emit(&mut hrr)
    .unwrap();
    client.read_handshake(Level::Initial, &hrr[..n], &mut cep).unwrap();
    assert!(client.hello_retry_request());
    let e = client.read_handshake(Level::Initial, &hrr[..n], &mut cep);
    assert_eq!(e, Err(Error::UnexpectedMessage));
}

#[test]
fn psk_binder_mismatch_is_decrypt_error() {
    let good = ExternalPsk { identity: b"device-17", key: PSK_KEY, hash: HashAlgorithm::Sha256 };
    let bad = ExternalPsk { key: &[0x99; 32], ..good };
    let psks = [good];
    let keys = Keys::new();
    let ccfg = client_config(&[b"h3"], ServerAuth::ExternalPsk(bad));
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.external_psks = &psks;
    let r = run(&ccfg, &scfg);
    assert_eq!(server_error(&r), Error::DecryptError);
    // A server that does not know the identity would need a certificate handshake, which a
    // PSK-only client does not ask for (no signature_algorithms, RFC 8446 §9.2).
    scfg.external_psks = &[];
    let r = run(&ccfg, &scfg);
    assert_eq!(server_error(&r).alert(), Alert::MissingExtension);
}

#[test]
fn ticket_with_other_max_early_data_size_is_protocol_violation() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut r = run(&ccfg, &scfg);
    assert_agree(&r);
    let mut nst = std::vec![0u8; 128];
    let params = msgs::NewSessionTicketParams {
        lifetime: 3600,
        age_add: 1,
        nonce: &[0],
        ticket: b"opaque",
        early_data: true,
    };
    let n = params.emit(&mut nst).unwrap();
    nst.truncate(n);
    // The early_data extension's u32 is the last four bytes.
    nst[n - 4..].copy_from_slice(&16384u32.to_be_bytes());
    let e = r.client.read_handshake(Level::OneRtt, &nst, &mut r.cep).unwrap_err();
    assert_eq!(e, Error::Transport(transport_error::PROTOCOL_VIOLATION));
    assert_eq!(e.quic_error_code(), 0x0a);
    assert!(r.cep.tickets.is_empty());
}

#[test]
fn transport_parameter_hook_errors_close_with_their_code() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut client = Client::new(RustCrypto, &ccfg, None);
    let mut server = Server::new(RustCrypto, &scfg, NOW);
    let mut cep = Endpoint::new(3, CLIENT_TP);
    let mut sep = Endpoint::new(4, SERVER_TP);
    cep.reject_tp = Some(Error::Transport(transport_error::TRANSPORT_PARAMETER_ERROR));
    client.start(&mut cep).unwrap();
    let r = pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {});
    let e = r.unwrap_err();
    assert_eq!(e, (Who::Client, Error::Transport(transport_error::TRANSPORT_PARAMETER_ERROR)));
    assert_eq!(e.1.quic_error_code(), 0x08);
}

#[test]
fn session_sizes() {
    // Reported in the crate docs; printed for the record.
    let client = core::mem::size_of::<ClientSession<'static, RustCrypto, 0>>();
    let server = core::mem::size_of::<ServerSession<'static, RustCrypto, 0>>();
    std::println!("ClientSession without RX buffer: {client} bytes; ServerSession: {server} bytes");
    assert!(client < 2048);
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Arbitrary bytes at every level never panic a fresh client or server.
        #[test]
        fn arbitrary_input_never_panics(data in proptest::collection::vec(any::<u8>(), 0..1500)) {
            crate::fuzz::client(&data);
            crate::fuzz::server(&data);
        }

        /// One flipped, dropped or added byte anywhere in a real handshake never panics, and
        /// never lets both sides complete with different keys.
        #[test]
        fn tampered_handshake_fails_cleanly(
            batch in 0usize..8,
            offset in any::<usize>(),
            xor in 1u8..,
            how in 0u8..3,
            chunk in 0usize..40,
            mode in 0u8..3,
        ) {
            let keys = Keys::new();
            let pinned = [keys.spki_server_ed.as_slice()];
            let psk = ExternalPsk { identity: b"id", key: PSK_KEY, hash: HashAlgorithm::Sha256 };
            let psks = [psk];
            let allowed = [keys.spki_client_ed.as_slice()];
            let mut ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
            let mut scfg = server_config(&[b"h3"], &keys.server_ed);
            scfg.tickets = Some(TICKETS);
            match mode {
                0 => {}
                1 => {
                    ccfg.server_auth = ServerAuth::ExternalPsk(psk);
                    scfg.external_psks = &psks;
                }
                _ => {
                    ccfg.client_key = Some(&keys.client_ed);
                    scfg.client_auth = Some(ClientAuth { allowed: &allowed, required: true });
                    ccfg.groups = &[NamedGroup::X25519, NamedGroup::Secp256r1];
                    scfg.groups = &[NamedGroup::Secp256r1];
                }
            }
            let mut seen = 0;
            let mut tampered = false;
            let r = run_with(&ccfg, &scfg, None, NOW, chunk, &mut |_, _, data| {
                if seen == batch && !data.is_empty() {
                    let at = offset % data.len();
                    match how {
                        0 => data[at] ^= xor,
                        1 => { data.remove(at); }
                        _ => data.insert(at, xor),
                    }
                    tampered = true;
                }
                seen += 1;
            });
            if r.result.is_ok() && r.client.is_handshake_complete() && r.server.is_handshake_complete() {
                prop_assert_eq!(r.cep.secret(KeyLevel::OneRtt), r.sep.secret(KeyLevel::OneRtt));
            }
            let _ = tampered;
        }
    }
}

#[test]
fn encrypted_extensions_checks_on_the_client() {
    let keys = Keys::new();
    let pinned = [keys.spki_server_ed.as_slice()];
    let ccfg = client_config(&[b"h3", b"h2"], ServerAuth::RawPublicKeys(&pinned));
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    // The server "selects" a protocol the client never offered.
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut |who, level, data| {
        if who == Who::Server && level == Level::Handshake {
            let at = data.windows(5).position(|w| w == b"\x00\x03\x02h3").unwrap();
            data[at + 4] = b'4';
        }
    });
    let e = client_error(&r);
    assert_eq!((e.alert(), e.quic_error_code()), (Alert::NoApplicationProtocol, 0x0178));
    // An extension the client did not ask for.
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut strip_tp(Who::Server, SERVER_TP));
    assert_eq!(client_error(&r).alert(), Alert::UnsupportedExtension);
}

#[test]
fn configs_are_sync() {
    fn sync<T: Sync>() {}
    sync::<ClientConfig<'static>>();
    sync::<ServerConfig<'static>>();
}

#[cfg(feature = "x509")]
#[test]
fn x509_failures_have_their_alerts() {
    let leaf_key =
        P.signing_key(SignatureScheme::EcdsaSecp256r1Sha256, pki::LEAF_P256_KEY).unwrap();
    let chain: [&[u8]; 1] = [pki::LEAF_P256];
    let mut scfg = server_config(&[b"h3"], &leaf_key);
    scfg.identity = Some(ServerIdentity { key: &leaf_key, x509_chain: &chain });
    let anchors = [pki::anchor(pki::CA)];
    let ccfg = client_config(&[b"h3"], ServerAuth::X509(crate::X509Verifier { anchors: &anchors }));
    assert_agree(&run(&ccfg, &scfg));

    // A chain to a CA the client does not trust: unknown_ca.
    let other = [pki::anchor(pki::OTHER_CA)];
    let untrusting =
        client_config(&[b"h3"], ServerAuth::X509(crate::X509Verifier { anchors: &other }));
    assert_eq!(client_error(&run(&untrusting, &scfg)).alert(), Alert::UnknownCa);

    // A certificate for another name: bad_certificate.
    let mut wrong_name = ccfg;
    wrong_name.server_name = Some(b"other.example");
    assert_eq!(client_error(&run(&wrong_name, &scfg)).alert(), Alert::BadCertificate);

    // Outside the validity period: certificate_expired; no clock at all: internal_error.
    for (time, alert) in
        [(Some(1_700_000_000), Alert::CertificateExpired), (None, Alert::InternalError)]
    {
        let mut client = Client::new(RustCrypto, &ccfg, None);
        if let Some(t) = time {
            client.set_unix_time(t);
        }
        let mut server = Server::new(RustCrypto, &scfg, NOW);
        let (mut cep, mut sep) = (Endpoint::new(1, CLIENT_TP), Endpoint::new(2, SERVER_TP));
        client.start(&mut cep).unwrap();
        let r = pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {});
        assert_eq!(r.unwrap_err().1.alert(), alert);
    }

    // A bad CertificateVerify from an X.509 server is still decrypt_error.
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut flip_last_byte_of(ht::CERTIFICATE_VERIFY));
    assert_eq!(client_error(&r).alert(), Alert::DecryptError);
}

/// Writes fuzz seeds (records `level || len || bytes`) when MOTE_WRITE_FUZZ_SEEDS names a
/// directory: a real client's first flight for `tls_server`, a real server's flight for
/// `tls_client`.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("MOTE_WRITE_FUZZ_SEEDS") else { return };
    let dir = std::path::PathBuf::from(dir);
    fn records(out: &mut Vec<u8>, level: Level, data: &[u8]) {
        for chunk in data.chunks(255) {
            out.extend_from_slice(&[level as u8, chunk.len() as u8]);
            out.extend_from_slice(chunk);
        }
    }
    let psk = ExternalPsk { identity: b"fuzz", key: &[7; 32], hash: HashAlgorithm::Sha256 };
    let psks = [psk];
    let keys = Keys::new();
    let ccfg = client_config(&[b"h3"], ServerAuth::ExternalPsk(psk));
    let mut scfg = server_config(&[b"h3"], &keys.server_ed);
    scfg.external_psks = &psks;
    let mut client_flights = Vec::new();
    let mut server_flights = std::vec![1u8]; // mode byte: external PSK
    let r = run_with(&ccfg, &scfg, None, NOW, 0, &mut |who, level, data| {
        let out = if who == Who::Client { &mut client_flights } else { &mut server_flights };
        records(out, level, data);
    });
    assert_agree(&r);
    let pinned = [keys.spki_server_ed.as_slice()];
    let rpk = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
    let plain = server_config(&[b"h3"], &keys.server_ed);
    let mut rpk_flight = std::vec![0u8]; // mode byte: raw public key
    let r = run_with(&rpk, &plain, None, NOW, 0, &mut |who, level, data| {
        if who == Who::Server {
            records(&mut rpk_flight, level, data);
        }
    });
    assert_agree(&r);
    for (target, name, bytes) in [
        ("tls_server", "psk_client_flights", &client_flights),
        ("tls_client", "psk_server_flights", &server_flights),
        ("tls_client", "rpk_server_flights", &rpk_flight),
    ] {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    }
}

#[test]
fn deferred_signature_for_crypto_offload() {
    let keys = Keys::new();
    for (key, spki, corrupt) in [
        (&keys.server_p256, &keys.spki_server_p256, false),
        (&keys.server_ed, &keys.spki_server_ed, false),
        (&keys.server_ed, &keys.spki_server_ed, true),
    ] {
        let pinned = [spki.as_slice()];
        let ccfg = client_config(&[b"h3"], ServerAuth::RawPublicKeys(&pinned));
        let mut scfg = server_config(&[b"h3"], key);
        scfg.defer_signatures = true;
        let mut client = Client::new(RustCrypto, &ccfg, None);
        let mut server = Server::new(RustCrypto, &scfg, NOW);
        let (mut cep, mut sep) = (Endpoint::new(1, CLIENT_TP), Endpoint::new(2, SERVER_TP));
        client.start(&mut cep).unwrap();
        let ch = cep.take(Level::Initial);
        server.read_handshake(Level::Initial, &ch, &mut sep).unwrap();
        // The flight stops after the Certificate; no 1-RTT keys yet.
        assert_eq!(sep.sent_types.last(), Some(&(Level::Handshake, ht::CERTIFICATE)));
        assert!(sep.secret(KeyLevel::OneRtt).is_none());
        let request = server.signature_request().unwrap();
        assert_eq!(request.scheme, key.scheme());
        assert!(request.message.starts_with(&[0x20; 64]));
        // "Another core" signs.
        let mut sig = [0u8; 72];
        let mut rng = TestRng(99);
        let n = request.key.sign(&mut rng, request.message, &mut sig).unwrap();
        if corrupt {
            sig[0] ^= 1;
        }
        server.complete_signature(&sig[..n], &mut sep).unwrap();
        assert!(server.signature_request().is_none());
        assert_eq!(sep.sent_types.last(), Some(&(Level::Handshake, ht::FINISHED)));
        let r = pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {});
        if corrupt {
            assert_eq!(
                r.unwrap_err(),
                (Who::Client, Error::Crypto(mote_crypto::Error::BadSignature))
            );
        } else {
            assert_eq!(r, Ok(()));
            assert!(client.is_handshake_complete() && server.is_handshake_complete());
            assert_eq!(cep.secret(KeyLevel::OneRtt), sep.secret(KeyLevel::OneRtt));
        }
    }
    // Completing without a request is an error.
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let mut server = Server::new(RustCrypto, &scfg, NOW);
    let mut sep = Endpoint::new(2, SERVER_TP);
    assert_eq!(
        server.complete_signature(&[0; 64], &mut sep).unwrap_err().alert(),
        Alert::InternalError
    );
}

#[test]
fn server_client_hello_checks() {
    let keys = Keys::new();
    let scfg = server_config(&[b"h3"], &keys.server_ed);
    let x25519_share = [9u8; 32];
    let base = msgs::ClientHelloParams {
        random: &[1; 32],
        cipher_suites: &[AeadAlgorithm::Aes128Gcm],
        server_name: None,
        supported_groups: &[NamedGroup::X25519],
        signature_algorithms: &[SignatureScheme::Ed25519],
        key_shares: &[],
        alpn: &[b"h3"],
        server_certificate_types: &[2],
        client_certificate_types: &[],
        psk_key_exchange_modes: &[1],
        cookie: None,
        early_data: false,
        quic_transport_parameters: CLIENT_TP,
        psk: None,
    };
    let send = |params: &msgs::ClientHelloParams<'_>| {
        let mut buf = std::vec![0u8; 512];
        let n = params.emit(&mut buf).unwrap().len;
        let mut server = Server::new(RustCrypto, &scfg, NOW);
        let mut sep = Endpoint::new(5, SERVER_TP);
        server.read_handshake(Level::Initial, &buf[..n], &mut sep)
    };
    // No key_share at all: missing_extension (RFC 8446 §9.2).
    assert_eq!(send(&base).unwrap_err().alert(), Alert::MissingExtension);
    // A share for a group the client did not list: illegal_parameter (§4.2.8).
    let p256 = [KeyShareEntry { group: NamedGroup::Secp256r1.codepoint(), key_exchange: &[4; 65] }];
    let e = send(&msgs::ClientHelloParams { key_shares: &p256, ..base }).unwrap_err();
    assert_eq!(e.alert(), Alert::IllegalParameter);
    // An X25519 share that is not a valid point (all zero gives a zero secret).
    let bad = [KeyShareEntry { group: NamedGroup::X25519.codepoint(), key_exchange: &[0; 32] }];
    let e = send(&msgs::ClientHelloParams { key_shares: &bad, ..base }).unwrap_err();
    assert_eq!(e.alert(), Alert::IllegalParameter);
    // A certificate handshake without signature_algorithms: missing_extension.
    let good =
        [KeyShareEntry { group: NamedGroup::X25519.codepoint(), key_exchange: &x25519_share }];
    let e = send(&msgs::ClientHelloParams { key_shares: &good, signature_algorithms: &[], ..base });
    assert_eq!(e.unwrap_err().alert(), Alert::MissingExtension);
    // A client that takes neither raw keys nor X.509 from a server without a chain.
    let e = send(&msgs::ClientHelloParams {
        key_shares: &good,
        server_certificate_types: &[0],
        ..base
    });
    assert_eq!(e.unwrap_err().alert(), Alert::UnsupportedCertificate);
    // And the well-formed one goes through.
    assert_eq!(send(&msgs::ClientHelloParams { key_shares: &good, ..base }), Ok(()));
}
