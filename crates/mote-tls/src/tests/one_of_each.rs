//! A provider with one suite, one group and one verification scheme (a device's): the
//! client's one-entry paths for its offers (issue 8) must send the ClientHello the general
//! walk sends for the same choice, refuse what that one entry cannot serve, and complete a
//! handshake.

use std::vec::Vec;

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{
    AeadAlgorithm, CryptoProvider, CryptoRng, Error as CryptoError, HashAlgorithm, NamedGroup,
    SignatureScheme,
};

use super::harness::*;
use crate::session::Level;
use crate::{Alert, ClientConfig, ClientSession, Error, ServerAuth, ServerConfig};
use crate::{ServerIdentity, ServerSession};

/// RustCrypto with one entry in each list it offers: `$name` verifies `$scheme` only.
macro_rules! one_of_each {
    ($name:ident, $scheme:expr) => {
        #[derive(Clone, Copy)]
        struct $name;

        impl CryptoProvider for $name {
            type AeadKey = <RustCrypto as CryptoProvider>::AeadKey;
            type HeaderKey = <RustCrypto as CryptoProvider>::HeaderKey;
            type Hash = <RustCrypto as CryptoProvider>::Hash;
            type Hmac = <RustCrypto as CryptoProvider>::Hmac;
            type KeyExchange = <RustCrypto as CryptoProvider>::KeyExchange;
            type SigningKey = <RustCrypto as CryptoProvider>::SigningKey;

            fn aead_algorithms(&self) -> &'static [AeadAlgorithm] {
                &[AeadAlgorithm::Aes128Gcm]
            }
            fn groups(&self) -> &'static [NamedGroup] {
                &[NamedGroup::X25519]
            }
            fn verify_schemes(&self) -> &'static [SignatureScheme] {
                &[$scheme]
            }
            fn aead_key(
                &self,
                alg: AeadAlgorithm,
                key: &[u8],
            ) -> Result<Self::AeadKey, CryptoError> {
                RustCrypto.aead_key(alg, key)
            }
            fn header_key(
                &self,
                alg: AeadAlgorithm,
                key: &[u8],
            ) -> Result<Self::HeaderKey, CryptoError> {
                RustCrypto.header_key(alg, key)
            }
            fn hash(&self, alg: HashAlgorithm) -> Result<Self::Hash, CryptoError> {
                RustCrypto.hash(alg)
            }
            fn hmac(&self, alg: HashAlgorithm, key: &[u8]) -> Result<Self::Hmac, CryptoError> {
                RustCrypto.hmac(alg, key)
            }
            fn start_key_exchange(
                &self,
                group: NamedGroup,
                rng: &mut dyn CryptoRng,
            ) -> Result<Self::KeyExchange, CryptoError> {
                RustCrypto.start_key_exchange(group, rng)
            }
            fn verify(
                &self,
                scheme: SignatureScheme,
                public_key: &[u8],
                message: &[u8],
                signature: &[u8],
            ) -> Result<(), CryptoError> {
                RustCrypto.verify(scheme, public_key, message, signature)
            }
            fn signing_key(
                &self,
                scheme: SignatureScheme,
                pkcs8_der: &[u8],
            ) -> Result<Self::SigningKey, CryptoError> {
                RustCrypto.signing_key(scheme, pkcs8_der)
            }
        }
    };
}

one_of_each!(OneOfEach, SignatureScheme::Ed25519);
one_of_each!(OneOfEachP256, SignatureScheme::EcdsaSecp256r1Sha256);

const TP: &[u8] = b"\x0f\x08client-tp";

fn config<'a>(pinned: &'a [&'a [u8]]) -> ClientConfig<'a> {
    ClientConfig {
        server_name: Some(b"mote.example"),
        alpn: &[b"h3"],
        server_auth: ServerAuth::RawPublicKeys(pinned),
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    }
}

/// The ClientHello `provider` starts with for `cfg` (same RNG seed each time), or the error.
fn client_hello<P: CryptoProvider + crate::ProviderBound>(
    provider: P,
    cfg: &ClientConfig<'_>,
) -> Result<Vec<u8>, Error> {
    let mut client = ClientSession::<P>::new(provider, cfg, None);
    let mut ep = Endpoint::new(7, TP);
    client.start(&mut ep)?;
    Ok(ep.take(Level::Initial))
}

/// `one` (a one-offer ClientHello, header included) offers what `walk` (the general walk's)
/// does: RFC 8446 §4.2 lets extensions come in any order but pre_shared_key, which both put
/// last (the parser checks), so the server's parser must read the same fields and the same
/// set of extensions from both, and the same PSK identities; the binders cover each
/// message's own bytes, so they are checked by a server accepting them.
pub(super) fn assert_same_offer(one: &[u8], walk: &[u8]) {
    use crate::msgs::ClientHello;
    assert_eq!(one.len(), walk.len());
    assert_eq!(one[..4], walk[..4]);
    let mut a = ClientHello::parse(&one[4..]).unwrap();
    let b = ClientHello::parse(&walk[4..]).unwrap();
    let types = |c: &ClientHello<'_>| {
        let mut t: Vec<u16> = c.extensions.iter().map(|(t, _)| t).collect();
        t.sort_unstable();
        t
    };
    assert_eq!(types(&a), types(&b));
    let identities = |c: &ClientHello<'_>| {
        c.pre_shared_key.map(|p| {
            p.identities()
                .map(|i| (i.identity.to_vec(), i.obfuscated_ticket_age))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(identities(&a), identities(&b));
    let binders = |c: &ClientHello<'_>| {
        c.pre_shared_key.map(|p| p.binders().map(<[u8]>::len).collect::<Vec<_>>())
    };
    assert_eq!(binders(&a), binders(&b));
    a.extensions = b.extensions;
    a.pre_shared_key = b.pre_shared_key;
    assert_eq!(a, b);
}

#[test]
fn one_entry_offers_equal_the_general_walk() {
    let ed = spki_of(&key(SignatureScheme::Ed25519, 1));
    let p256 = spki_of(&key(SignatureScheme::EcdsaSecp256r1Sha256, 0));
    let pinned_ed = [ed.as_slice()];
    // The general walk, told to offer exactly what the one-entry provider has.
    let mut general = config(&pinned_ed);
    general.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    general.groups = &[NamedGroup::X25519];
    let expected = client_hello(RustCrypto, &general).unwrap();
    // Default lists, and configured lists that name other entries too, in another order.
    let mut listed = config(&pinned_ed);
    listed.cipher_suites = &[AeadAlgorithm::ChaCha20Poly1305, AeadAlgorithm::Aes128Gcm];
    listed.groups = &[NamedGroup::Secp256r1, NamedGroup::X25519];
    let pinned_both = [p256.as_slice(), ed.as_slice()];
    for cfg in [config(&pinned_ed), listed, config(&pinned_both)] {
        assert_same_offer(&client_hello(OneOfEach, &cfg).unwrap(), &expected);
    }
}

#[test]
fn one_entry_refuses_what_it_cannot_offer() {
    let ed = spki_of(&key(SignatureScheme::Ed25519, 1));
    let p256 = spki_of(&key(SignatureScheme::EcdsaSecp256r1Sha256, 0));
    let pinned_ed = [ed.as_slice()];
    // No suite in common: handshake_failure before anything is sent, as for the walk.
    let mut cfg = config(&pinned_ed);
    cfg.cipher_suites = &[AeadAlgorithm::Aes256Gcm];
    assert_eq!(client_hello(OneOfEach, &cfg), Err(Error::Alert(Alert::HandshakeFailure)));
    // No group in common: internal_error (no key share to send).
    let mut cfg = config(&pinned_ed);
    cfg.groups = &[NamedGroup::Secp256r1];
    assert_eq!(client_hello(OneOfEach, &cfg), Err(Error::Alert(Alert::InternalError)));
    assert_eq!(client_hello(RustCrypto, &cfg).map(|_| ()), Ok(()));
    // Only a P-256 key pinned: no signature_algorithms to offer (extension 13 absent), as
    // the walk does for a provider that cannot verify the pinned key's scheme.
    let pinned_p256 = [p256.as_slice()];
    let ch = client_hello(OneOfEach, &config(&pinned_p256)).unwrap();
    let with_ed = client_hello(OneOfEach, &config(&pinned_ed)).unwrap();
    let sig_algs_ext = [0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x08, 0x07];
    assert!(with_ed.windows(8).any(|w| w == sig_algs_ext));
    assert!(!ch.windows(4).any(|w| w == [0x00, 0x0d, 0x00, 0x04]));
    assert_eq!(ch.len() + sig_algs_ext.len(), with_ed.len());
}

#[test]
fn one_entry_client_completes_a_handshake() {
    one_entry_handshake(OneOfEach, SignatureScheme::Ed25519);
    one_entry_handshake(OneOfEachP256, SignatureScheme::EcdsaSecp256r1Sha256);
}

/// A one-entry client verifying only `scheme` sends the general walk's offer for a
/// pinned key of that scheme and completes a handshake with a server holding that key.
fn one_entry_handshake<P: CryptoProvider + crate::ProviderBound + Copy>(
    provider: P,
    scheme: SignatureScheme,
) {
    let server_key = key(scheme, 1);
    let spki = spki_of(&server_key);
    let pinned = [spki.as_slice()];
    let ccfg = config(&pinned);
    let mut general = config(&pinned);
    general.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    general.groups = &[NamedGroup::X25519];
    assert_same_offer(
        &client_hello(provider, &ccfg).unwrap(),
        &client_hello(RustCrypto, &general).unwrap(),
    );
    let scfg = ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn: &[b"h3"],
        identity: Some(ServerIdentity { key: &server_key, x509_chain: &[] }),
        external_psks: &[],
        client_auth: None,
        tickets: None,
        early_data: None,
        defer_signatures: false,
    };
    let mut client = ClientSession::<P>::new(provider, &ccfg, None);
    let mut server = ServerSession::<RustCrypto>::new(RustCrypto, &scfg, 1_700_000_000_000);
    let mut cep = Endpoint::new(1, TP);
    let mut sep = Endpoint::new(2, b"\x0f\x08server-tp");
    client.start(&mut cep).unwrap();
    pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {}).unwrap();
    assert!(client.is_handshake_complete() && server.is_handshake_complete());
    assert_eq!(client.suite(), Some(AeadAlgorithm::Aes128Gcm));
    assert_eq!(client.group(), Some(NamedGroup::X25519));
    assert_eq!(client.server_key_index(), Some(0));
}

/// RFC 8446 §4.1.4/§4.2.8 with one group: a HelloRetryRequest can only ask for a cookie.
/// Asking for X25519 (the share already sent) or a group not offered is illegal_parameter,
/// as in the general walk offering only X25519; a cookie alone gets a second ClientHello
/// echoing it.
#[test]
fn one_entry_hello_retry_request_rules() {
    use crate::msgs::{self, HelloRetryRequestParams};
    let ed = spki_of(&key(SignatureScheme::Ed25519, 1));
    let pinned = [ed.as_slice()];
    let cfg = config(&pinned);
    let mut general = config(&pinned);
    general.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    general.groups = &[NamedGroup::X25519];
    fn retry<P: CryptoProvider + crate::ProviderBound>(
        provider: P,
        cfg: &ClientConfig<'_>,
        group: Option<NamedGroup>,
        cookie: Option<&[u8]>,
    ) -> (Result<(), Error>, Vec<u8>) {
        let mut client = ClientSession::<P>::new(provider, cfg, None);
        let mut ep = Endpoint::new(7, TP);
        client.start(&mut ep).unwrap();
        ep.take(Level::Initial);
        let mut hrr = [0u8; 256];
        let n = HelloRetryRequestParams {
            legacy_session_id_echo: &[],
            cipher_suite: AeadAlgorithm::Aes128Gcm,
            selected_group: group,
            cookie,
        }
        .emit(&mut hrr)
        .unwrap();
        let result = client.read_handshake(Level::Initial, &hrr[..n], &mut ep);
        (result, ep.take(Level::Initial))
    }
    for group in [NamedGroup::X25519, NamedGroup::Secp256r1] {
        for cookie in [None, Some(b"c".as_slice())] {
            let (one, sent) = retry(OneOfEach, &cfg, Some(group), cookie);
            assert_eq!(one, Err(Error::IllegalParameter));
            assert!(sent.is_empty());
            assert_eq!(retry(RustCrypto, &general, Some(group), cookie).0, one);
        }
    }
    let (one, ch2) = retry(OneOfEach, &cfg, None, Some(b"stateless-cookie"));
    assert_eq!(one, Ok(()));
    let (walk, expected) = retry(RustCrypto, &general, None, Some(b"stateless-cookie"));
    assert_eq!(walk, Ok(()));
    assert_same_offer(&ch2, &expected);
    let cookie_ext = [0x00, 0x2c, 0x00, 0x12, 0x00, 0x10];
    assert!(ch2.windows(6).any(|w| w == cookie_ext));
    assert_eq!(msgs::message_len(&ch2), Some(ch2.len()));
}

/// Resumption with 0-RTT on the one-entry paths (the device's second connection): the
/// ClientHello offering the ticket offers what the general walk's does (its binder verified),
/// and the server accepts the PSK and the early data.
#[test]
fn one_entry_resumes_with_early_data() {
    use crate::ticket::{AntiReplay, ReplayCheck};
    use crate::{EarlyDataConfig, KeyLevel, Resumption, TicketConfig, TicketKey};
    struct AlwaysFresh;
    impl AntiReplay for AlwaysFresh {
        fn check_and_insert(&self, _: &[u8; 16], _: u64, _: u64) -> ReplayCheck {
            ReplayCheck::Fresh
        }
    }
    const NOW: u64 = 1_700_000_000_000;
    let keys = [TicketKey { id: *b"tk01", aead: AeadAlgorithm::Aes128Gcm, key: &[0x11; 16] }];
    let server_key = key(SignatureScheme::Ed25519, 1);
    let spki = spki_of(&server_key);
    let pinned = [spki.as_slice()];
    let mut ccfg = config(&pinned);
    ccfg.early_data = true;
    let mut general = ccfg;
    general.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    general.groups = &[NamedGroup::X25519];
    let scfg = ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn: &[b"h3"],
        identity: Some(ServerIdentity { key: &server_key, x509_chain: &[] }),
        external_psks: &[],
        client_auth: None,
        tickets: Some(TicketConfig {
            keys: &keys,
            lifetime_s: 3600,
            count: 1,
            max_age_skew_ms: 10_000,
        }),
        early_data: Some(EarlyDataConfig { anti_replay: &AlwaysFresh, context: b"v1" }),
        defer_signatures: false,
    };
    // The first connection, for a ticket.
    let mut client = ClientSession::<OneOfEach>::new(OneOfEach, &ccfg, None);
    let mut server = ServerSession::<RustCrypto>::new(RustCrypto, &scfg, NOW);
    let (mut cep, mut sep) = (Endpoint::new(1, TP), Endpoint::new(2, b"\x0f\x08server-tp"));
    client.start(&mut cep).unwrap();
    pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {}).unwrap();
    let encoded = cep.tickets.pop().expect("a ticket");
    let ticket = crate::Ticket::decode(&encoded).unwrap();
    assert!(ticket.early_data);
    let resumption = Resumption { ticket, age_ms: 1_000 };

    // The resumption ClientHello: the general walk's offer (its binder is checked by the
    // server below).
    let hello = |client: &mut dyn FnMut(&mut Endpoint) -> Result<(), Error>| {
        let mut ep = Endpoint::new(9, TP);
        client(&mut ep).unwrap();
        ep.take(Level::Initial)
    };
    let one = hello(&mut |ep| {
        ClientSession::<OneOfEach>::new(OneOfEach, &ccfg, Some(resumption)).start(ep)
    });
    let walk = hello(&mut |ep| {
        ClientSession::<RustCrypto>::new(RustCrypto, &general, Some(resumption)).start(ep)
    });
    assert_same_offer(&one, &walk);

    // The resumed connection: PSK and early data accepted.
    let mut client = ClientSession::<OneOfEach>::new(OneOfEach, &ccfg, Some(resumption));
    let mut server = ServerSession::<RustCrypto>::new(RustCrypto, &scfg, NOW + 1_000);
    let (mut cep, mut sep) = (Endpoint::new(3, TP), Endpoint::new(4, b"\x0f\x08server-tp"));
    client.start(&mut cep).unwrap();
    assert!(cep.secret(KeyLevel::ZeroRtt).is_some());
    pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut |_, _, _| {}).unwrap();
    assert!(client.is_handshake_complete() && client.psk_accepted());
    assert_eq!(client.early_data_accepted(), Some(true));
    assert_eq!(
        cep.secret(KeyLevel::ZeroRtt).map(|s| &s.client),
        sep.secret(KeyLevel::ZeroRtt).map(|s| &s.client)
    );
    assert_eq!(
        cep.secret(KeyLevel::OneRtt).map(|s| &s.client),
        sep.secret(KeyLevel::OneRtt).map(|s| &s.client)
    );
}

/// RFC 8446 §4.4.2: a client whose key's scheme the CertificateRequest does not list answers
/// with an empty Certificate; it and the Finished go out in one send (issue 8) and the
/// server, with optional client authentication, completes the handshake. The server's
/// provider verifies only ECDSA P-256, so its CertificateRequest lists only that.
#[cfg(feature = "client-auth")]
#[test]
fn certificate_request_without_a_usable_key_gets_an_empty_certificate() {
    use crate::msgs::handshake_type as ht;
    use crate::ClientAuth;

    let server_key = key(SignatureScheme::Ed25519, 1);
    let spki = spki_of(&server_key);
    let pinned = [spki.as_slice()];
    let client_key = key(SignatureScheme::Ed25519, 2);
    let mut ccfg = config(&pinned);
    ccfg.client_key = Some(&client_key);
    let allowed_spki = spki_of(&key(SignatureScheme::EcdsaSecp256r1Sha256, 0));
    let allowed = [allowed_spki.as_slice()];
    let scfg = ServerConfig {
        cipher_suites: &[],
        groups: &[],
        alpn: &[b"h3"],
        identity: Some(ServerIdentity { key: &server_key, x509_chain: &[] }),
        external_psks: &[],
        client_auth: Some(ClientAuth { allowed: &allowed, required: false }),
        tickets: None,
        early_data: None,
        defer_signatures: false,
    };
    let mut client = ClientSession::<RustCrypto>::new(RustCrypto, &ccfg, None);
    let mut server = ServerSession::<OneOfEachP256>::new(OneOfEachP256, &scfg, 1_700_000_000_000);
    let mut cep = Endpoint::new(1, TP);
    let mut sep = Endpoint::new(2, b"\x0f\x08server-tp");
    client.start(&mut cep).unwrap();
    let mut sent = Vec::new();
    let mut record = |who: Who, level: Level, data: &mut Vec<u8>| {
        if matches!(who, Who::Client) && level == Level::Handshake {
            sent.extend_from_slice(data);
        }
    };
    pump(&mut client, &mut cep, &mut server, &mut sep, 0, &mut record).unwrap();
    assert!(client.is_handshake_complete() && server.is_handshake_complete());
    assert!(sep.sent_types.contains(&(Level::Handshake, ht::CERTIFICATE_REQUEST)));
    assert_eq!(server.client_key_index(), None);
    let second_flight: Vec<_> =
        cep.sent_types.iter().filter(|(level, _)| *level == Level::Handshake).collect();
    assert_eq!(
        second_flight,
        [&(Level::Handshake, ht::CERTIFICATE), &(Level::Handshake, ht::FINISHED)]
    );
    assert_eq!(sent[..8], crate::msgs::EMPTY_CERTIFICATE);
    assert_eq!(sent.len(), 8 + 4 + 32);
}

/// RFC 8446 §4.1.3, §4.1.4, §4.2.8 and §4.2.11 on the one-entry paths, where the suite, the
/// group and the PSK's hash are constants (session 11): a ServerHello — valid, with each of
/// its bytes changed, naming other suites, groups and PSK indices; with and without a ticket
/// offered; after a cookie HelloRetryRequest or not — gets the same verdict from the
/// one-entry client as from the general walk offering the same.
#[test]
fn one_entry_server_hello_checks_equal_the_general_walk() {
    use crate::msgs::{HelloRetryRequestParams, KeyShareEntry, ServerHelloParams};
    use crate::{Resumption, Ticket};
    let ed = spki_of(&key(SignatureScheme::Ed25519, 1));
    let pinned = [ed.as_slice()];
    let cfg = config(&pinned);
    let mut general = config(&pinned);
    general.cipher_suites = &[AeadAlgorithm::Aes128Gcm];
    general.groups = &[NamedGroup::X25519];
    let ticket = Ticket {
        identity: b"ticket-identity",
        psk: &[7; 32],
        suite: AeadAlgorithm::Aes128Gcm,
        age_add: 5,
        lifetime_s: 600,
        early_data: false,
        alpn: b"h3",
        server_transport_parameters: &[],
    };
    let mut hrr = [0u8; 64];
    let hrr_len = HelloRetryRequestParams {
        legacy_session_id_echo: &[],
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        selected_group: None,
        cookie: Some(b"cookie"),
    }
    .emit(&mut hrr)
    .unwrap();
    let hrr = &hrr[..hrr_len];

    fn verdict<P: CryptoProvider + crate::ProviderBound>(
        provider: P,
        cfg: &ClientConfig<'_>,
        resumption: Option<Resumption<'_>>,
        hrr: Option<&[u8]>,
        server_hello: &[u8],
    ) -> Result<(), Error> {
        let mut client = ClientSession::<P>::new(provider, cfg, resumption);
        let mut ep = Endpoint::new(7, TP);
        client.start(&mut ep).unwrap();
        if let Some(hrr) = hrr {
            client.read_handshake(Level::Initial, hrr, &mut ep).unwrap();
        }
        client.read_handshake(Level::Initial, server_hello, &mut ep)
    }

    let mut checked = 0;
    let mut passed = 0;
    for resumption in [None, Some(Resumption { ticket, age_ms: 1_000 })] {
        for after_hrr in [None, Some(hrr)] {
            for (group, psk) in [(0x1d, None), (0x1d, Some(0)), (0x1d, Some(1)), (0x17, None)] {
                let mut sh = [0u8; 128];
                let n = ServerHelloParams {
                    random: &[3; 32],
                    legacy_session_id_echo: &[],
                    cipher_suite: AeadAlgorithm::Aes128Gcm,
                    key_share: Some(KeyShareEntry { group, key_exchange: &[9; 32] }),
                    selected_psk: psk,
                }
                .emit(&mut sh)
                .unwrap();
                let mut variants = std::vec![sh[..n].to_vec()];
                // Other suites (the codepoint follows the header, legacy_version, random and
                // the empty legacy_session_id_echo).
                for suite in [0x1302u16, 0x1303, 0x1304, 0x0000, 0x0113] {
                    let mut v = sh[..n].to_vec();
                    v[39..41].copy_from_slice(&suite.to_be_bytes());
                    variants.push(v);
                }
                for i in 0..n {
                    for x in [0x01, 0x10, 0xff] {
                        let mut v = sh[..n].to_vec();
                        v[i] ^= x;
                        variants.push(v);
                    }
                }
                for v in variants {
                    let one = verdict(OneOfEach, &cfg, resumption, after_hrr, &v);
                    let walk = verdict(RustCrypto, &general, resumption, after_hrr, &v);
                    assert_eq!(one, walk, "{resumption:?} {after_hrr:?} {v:02x?}");
                    checked += 1;
                    passed += usize::from(one.is_ok());
                }
            }
        }
    }
    // Some variants are accepted (the valid ones, and changes in the random or the share).
    assert!(passed > 0 && checked > 1_000, "{passed} of {checked}");
}
