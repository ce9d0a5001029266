//! Codec robustness: truncation at every byte, trailing bytes, duplicate and misplaced
//! extensions, emission round trips, short output buffers, and random input that must never
//! panic a parser.

use std::vec::Vec;

use hex_literal::hex;
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{AeadAlgorithm, Hash as _, HashAlgorithm, NamedGroup, SignatureScheme};
use proptest::prelude::*;

use super::rfc8448_vectors::*;
use crate::msgs::{self, KeyShareEntry};
use crate::{Alert, Error, Transcript};

const P: RustCrypto = RustCrypto;

/// Every parser in the crate, by name, over a message body.
#[allow(clippy::type_complexity)]
fn parsers() -> Vec<(&'static str, fn(&[u8]) -> Result<(), Error>)> {
    let mut v: Vec<(&'static str, fn(&[u8]) -> Result<(), Error>)> = Vec::new();
    #[cfg(feature = "server")]
    v.push(("ClientHello", |b| msgs::ClientHello::parse(b).map(walk_ch)));
    v.push(("ServerHello", |b| msgs::ServerHello::parse(b).map(|_| ())));
    v.push(("EncryptedExtensions", |b| {
        msgs::EncryptedExtensions::parse(b).map(|ee| {
            ee.extensions.iter().for_each(drop);
            ee.supported_groups.iter().for_each(|l| l.iter().for_each(drop));
        })
    }));
    v.push(("Certificate", |b| {
        msgs::Certificate::parse(b).map(|c| {
            for e in c.entries() {
                e.extensions.iter().for_each(drop);
                let _ = crate::parse_spki(e.data);
            }
        })
    }));
    v.push(("CertificateVerify", |b| msgs::CertificateVerify::parse(b).map(|_| ())));
    v.push(("CertificateRequest", |b| {
        msgs::CertificateRequest::parse(b).map(|c| c.signature_algorithms.iter().for_each(drop))
    }));
    v.push(("NewSessionTicket", |b| msgs::NewSessionTicket::parse(b).map(|_| ())));
    v.push(("Finished", |b| msgs::Finished::parse(b, 32).map(|_| ())));
    v
}

/// Walks every list of a parsed ClientHello (the iterators must not panic either).
#[cfg(feature = "server")]
fn walk_ch(ch: msgs::ClientHello<'_>) {
    ch.cipher_suites.iter().for_each(drop);
    ch.extensions.iter().for_each(drop);
    for l in
        [ch.supported_groups, ch.signature_algorithms, ch.supported_versions].into_iter().flatten()
    {
        l.iter().for_each(drop);
    }
    if let Some(a) = ch.alpn {
        a.iter().for_each(drop);
    }
    if let Some(k) = ch.key_shares {
        k.iter().for_each(drop);
    }
    if let Some(p) = ch.pre_shared_key {
        p.identities().for_each(drop);
        p.binders().for_each(drop);
    }
}

/// The valid message bodies each parser is checked against: the RFC 8448 messages plus
/// emitted ones covering the extensions RFC 8448 lacks.
#[allow(clippy::vec_init_then_push)] // the first pushes depend on features
fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let mut v = Vec::new();
    #[cfg(feature = "server")]
    {
        v.push(("ClientHello", CH3[4..].to_vec()));
        v.push(("ClientHello", CH4[4..].to_vec()));
        v.push(("ClientHello", CH2_5[4..].to_vec()));
        v.push(("ClientHello", emitted_client_hello()[4..].to_vec()));
        let mut buf = [0u8; 256];
        let n = hrr_params().emit(&mut buf).unwrap();
        v.push(("ServerHello", buf[4..n].to_vec()));
        let n = ee_params().emit(&mut buf).unwrap();
        v.push(("EncryptedExtensions", buf[4..n].to_vec()));
        let n = msgs::emit_certificate_request(&[], &[SignatureScheme::Ed25519], &mut buf).unwrap();
        v.push(("CertificateRequest", buf[4..n].to_vec()));
    }
    v.push(("ServerHello", SH3[4..].to_vec()));
    v.push(("ServerHello", SH4[4..].to_vec()));
    v.push(("ServerHello", HRR5[4..].to_vec()));
    v.push(("ServerHello", SH5[4..].to_vec()));
    let flight: Vec<_> = {
        let mut out = Vec::new();
        let mut buf = &FLIGHT3[..];
        while let Some((m, rest)) = msgs::split_message(buf) {
            out.push(m.body.to_vec());
            buf = rest;
        }
        out
    };
    v.push(("EncryptedExtensions", flight[0].clone()));
    v.push(("EncryptedExtensions", EE4[4..].to_vec()));
    v.push(("Certificate", flight[1].clone()));
    v.push(("CertificateVerify", flight[2].clone()));
    v.push(("Finished", flight[3].clone()));
    v.push(("NewSessionTicket", NST3[4..].to_vec()));
    v
}

fn parser(name: &str) -> fn(&[u8]) -> Result<(), Error> {
    parsers().into_iter().find(|(n, _)| *n == name).map(|(_, f)| f).unwrap()
}

#[test]
fn every_sample_parses() {
    for (name, body) in samples() {
        assert_eq!(parser(name)(&body), Ok(()), "{name}");
    }
}

#[test]
fn truncation_at_every_byte_is_rejected() {
    for (name, body) in samples() {
        let parse = parser(name);
        for i in 0..body.len() {
            assert!(parse(&body[..i]).is_err(), "{name} truncated to {i} bytes");
        }
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    for (name, body) in samples() {
        let mut long = body.clone();
        long.push(0);
        let err = parser(name)(&long).unwrap_err();
        if name == "Finished" {
            assert_eq!(err, Error::BadLength);
        } else {
            assert_eq!(err, Error::TrailingBytes, "{name}");
        }
        assert_eq!(err.alert(), Alert::DecodeError);
    }
}

/// An extension block holding `exts`, with its u16 length.
fn block(exts: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = exts.concat();
    let mut v = (body.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(&body);
    v
}

#[test]
fn duplicate_extensions_are_rejected() {
    let early = hex!("002a 0000");
    let unknown = hex!("1234 0001 ff");
    for exts in [
        block(&[&early, &early]),
        block(&[&unknown, &early, &unknown]),
        block(&[&hex!("0000 0000"), &hex!("0000 0000")]),
    ] {
        let err = msgs::EncryptedExtensions::parse(&exts).unwrap_err();
        assert_eq!(err, Error::DuplicateExtension);
        assert_eq!(err.alert(), Alert::IllegalParameter);
    }
    // ServerHello with supported_versions twice.
    let mut sh = SH3[4..SH3.len() - 6].to_vec();
    sh.extend_from_slice(&hex!("002b00020304 002b00020304"));
    let n = sh.len();
    sh[38..40].copy_from_slice(&((n - 40) as u16).to_be_bytes());
    assert_eq!(msgs::ServerHello::parse(&sh), Err(Error::DuplicateExtension));
    // NewSessionTicket with early_data twice.
    let mut nst = NST3[4..NST3.len() - 10].to_vec();
    nst.extend_from_slice(&block(&[&hex!("002a000400000400"), &hex!("002a000400000400")]));
    assert_eq!(msgs::NewSessionTicket::parse(&nst), Err(Error::DuplicateExtension));
    // A certificate entry with a duplicated (unknown) extension.
    let mut entry = hex!("000001 30").to_vec();
    entry.extend_from_slice(&block(&[&hex!("0005 0000"), &hex!("0005 0000")]));
    let mut cert = hex!("00").to_vec();
    cert.extend_from_slice(&(entry.len() as u32).to_be_bytes()[1..]);
    cert.extend_from_slice(&entry);
    assert_eq!(msgs::Certificate::parse(&cert), Err(Error::DuplicateExtension));
}

/// CH3's body with `extra` appended to its extension block (lengths fixed up).
#[cfg(feature = "server")]
fn ch_with_extra(base: &[u8], extra: &[u8]) -> Vec<u8> {
    // legacy_version, random, empty session id, 3 suites, compression: 45 bytes.
    let mut body = base.to_vec();
    body.extend_from_slice(extra);
    let ext_len = body.len() - 47;
    body[45..47].copy_from_slice(&(ext_len as u16).to_be_bytes());
    body
}

#[cfg(feature = "server")]
#[test]
fn client_hello_rules() {
    // A duplicated unknown extension (record_size_limit) and a duplicated known one.
    let dup = ch_with_extra(&CH3[4..], &hex!("001c 0002 4001"));
    assert_eq!(msgs::ClientHello::parse(&dup), Err(Error::DuplicateExtension));
    let dup = ch_with_extra(&CH3[4..], &hex!("002b 0003 020304"));
    assert_eq!(msgs::ClientHello::parse(&dup), Err(Error::DuplicateExtension));
    // pre_shared_key not last (RFC 8446 §4.2.11).
    let not_last = ch_with_extra(&CH4[4..], &hex!("abcd 0000"));
    assert_eq!(msgs::ClientHello::parse(&not_last), Err(Error::IllegalParameter));
    // pre_shared_key without psk_key_exchange_modes (RFC 8446 §4.2.9): CH4 with its
    // psk_key_exchange_modes extension (type 0x002d, 6 bytes) cut out.
    let at = CH4[4..].windows(4).position(|w| w == hex!("002d 0002")).unwrap();
    let mut body = [&CH4[4..4 + at], &CH4[4 + at + 6..]].concat();
    let ext_len = u16::from_be_bytes([body[45], body[46]]) - 6;
    body[45..47].copy_from_slice(&ext_len.to_be_bytes());
    let err = msgs::ClientHello::parse(&body).unwrap_err();
    assert_eq!(err.alert(), Alert::MissingExtension);
    // A compression method other than null (RFC 8446 §4.1.2).
    let mut body = CH3[4..].to_vec();
    body[44] = 1;
    assert_eq!(msgs::ClientHello::parse(&body), Err(Error::IllegalParameter));
    // A session id longer than 32 bytes.
    let mut body = CH3[4..38].to_vec();
    body.push(33);
    body.extend_from_slice(&[0; 33]);
    body.extend_from_slice(&CH3[39..]);
    assert_eq!(msgs::ClientHello::parse(&body), Err(Error::BadLength));
    // Malformed extension data: an odd-length supported_groups list, a binder shorter
    // than 32 bytes, identities and binders of different counts.
    let bad = ch_with_extra(&CH3[4..CH3.len() - 6], &hex!("001c 0002 4001 0010 0003 0001 00"));
    assert_eq!(msgs::ClientHello::parse(&bad), Err(Error::BadLength));
    let groups = block(&[&hex!("000a 0005 0003 001d00")]);
    assert_eq!(msgs::EncryptedExtensions::parse(&groups), Err(Error::BadLength));
    let psk = |ids: &[u8], binders: &[u8]| {
        let mut d = (ids.len() as u16).to_be_bytes().to_vec();
        d.extend_from_slice(ids);
        d.extend_from_slice(&(binders.len() as u16).to_be_bytes());
        d.extend_from_slice(binders);
        let mut ext = hex!("0029").to_vec();
        ext.extend_from_slice(&(d.len() as u16).to_be_bytes());
        ext.extend_from_slice(&d);
        ext
    };
    let id = hex!("0001 aa 00000000");
    let mut b32 = [0u8; 33];
    b32[0] = 32;
    let ok = ch_with_extra(&CH3[4..], &psk(&id, &b32));
    assert!(msgs::ClientHello::parse(&ok).is_ok());
    let two_ids = [id, id].concat();
    let bad = ch_with_extra(&CH3[4..], &psk(&two_ids, &b32));
    assert_eq!(msgs::ClientHello::parse(&bad), Err(Error::IllegalParameter));
    let mut b31 = [0u8; 33];
    b31[0] = 31;
    let bad = ch_with_extra(&CH3[4..], &psk(&id, &b31[..32]));
    assert_eq!(msgs::ClientHello::parse(&bad), Err(Error::BadLength));
}

#[test]
fn extensions_outside_their_message_are_illegal() {
    // key_share in EncryptedExtensions; server_name in ServerHello; cookie in ServerHello
    // (only HelloRetryRequest may carry it); early_data in a Certificate entry.
    let ee = block(&[&hex!("0033 0000")]);
    assert_eq!(msgs::EncryptedExtensions::parse(&ee), Err(Error::IllegalParameter));
    for ext in [hex!("0000 0000"), hex!("002c 0000")] {
        let mut sh = SH3[4..].to_vec();
        sh.extend_from_slice(&ext);
        let n = sh.len();
        sh[38..40].copy_from_slice(&((n - 40) as u16).to_be_bytes());
        assert_eq!(msgs::ServerHello::parse(&sh), Err(Error::IllegalParameter));
    }
    let mut cert = hex!("00 00000a 000001 30").to_vec();
    cert.extend_from_slice(&block(&[&hex!("002a 0000")]));
    assert_eq!(msgs::Certificate::parse(&cert), Err(Error::IllegalParameter));
}

#[test]
fn server_hello_field_checks() {
    let mut sh = SH3[4..].to_vec();
    sh[1] = 0x04; // legacy_version 0x0304
    assert_eq!(msgs::ServerHello::parse(&sh).unwrap_err().alert(), Alert::ProtocolVersion);
    let mut sh = SH3[4..].to_vec();
    sh[37] = 1; // legacy_compression_method
    assert_eq!(msgs::ServerHello::parse(&sh), Err(Error::IllegalParameter));
    // EE whose ALPN names two protocols (RFC 7301 §3.1 allows exactly one).
    let ee = block(&[&hex!("0010 0008 0006 02 6833 02 6832")]);
    assert_eq!(msgs::EncryptedExtensions::parse(&ee), Err(Error::BadLength));
    // More than MAX_EXTENSIONS extensions.
    let many: Vec<Vec<u8>> = (0..=msgs::extensions::MAX_EXTENSIONS as u16)
        .map(|i| [(0x1000 + i).to_be_bytes(), [0, 0]].concat())
        .collect();
    let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
    assert_eq!(msgs::EncryptedExtensions::parse(&block(&refs)), Err(Error::BadLength));
}

const TP: &[u8] = &hex!("0104 80007530");

/// A ClientHello as a mote client sends it, with every extension the emitter knows.
fn client_hello_params<'a>(
    random: &'a [u8; 32],
    shares: &'a [KeyShareEntry<'a>],
) -> msgs::ClientHelloParams<'a> {
    msgs::ClientHelloParams {
        random,
        cipher_suites: &[AeadAlgorithm::Aes128Gcm, AeadAlgorithm::ChaCha20Poly1305],
        server_name: Some(b"example.com"),
        supported_groups: &[NamedGroup::X25519, NamedGroup::Secp256r1],
        signature_algorithms: &[SignatureScheme::Ed25519, SignatureScheme::EcdsaSecp256r1Sha256],
        key_shares: shares,
        alpn: &[b"h3", b"mqtt"],
        server_certificate_types: &[msgs::certificate_type::RAW_PUBLIC_KEY],
        client_certificate_types: &[],
        psk_key_exchange_modes: &[msgs::PSK_DHE_KE],
        cookie: Some(b"cookie!"),
        early_data: true,
        quic_transport_parameters: TP,
        psk: Some(msgs::PskOffer {
            identity: b"ticket-identity",
            obfuscated_ticket_age: 0x0102_0304,
            binder_len: 32,
        }),
    }
}

fn emitted_client_hello() -> Vec<u8> {
    let shares = [KeyShareEntry { group: 0x001d, key_exchange: &[9; 32] }];
    let mut buf = [0u8; 512];
    let out = client_hello_params(&[7; 32], &shares).emit(&mut buf).unwrap();
    buf[..out.len].to_vec()
}

#[cfg(feature = "server")]
fn hrr_params() -> msgs::HelloRetryRequestParams<'static> {
    msgs::HelloRetryRequestParams {
        legacy_session_id_echo: &[],
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        selected_group: Some(NamedGroup::Secp256r1),
        cookie: Some(b"stateless"),
    }
}

#[cfg(feature = "server")]
fn ee_params() -> msgs::EncryptedExtensionsParams<'static> {
    msgs::EncryptedExtensionsParams {
        server_name_acknowledged: true,
        alpn: Some(b"h3"),
        client_certificate_type: None,
        server_certificate_type: Some(msgs::certificate_type::RAW_PUBLIC_KEY),
        early_data: true,
        quic_transport_parameters: TP,
    }
}

/// Emits with every output length below the needed one: each must fail cleanly.
fn short_buffers_fail(len: usize, emit: impl Fn(&mut [u8]) -> Result<usize, Error>) {
    let mut buf = [0u8; 1024];
    assert_eq!(emit(&mut buf[..len]), Ok(len));
    for n in 0..len {
        assert_eq!(emit(&mut buf[..n]), Err(Error::BufferTooSmall), "length {n}");
    }
}

/// A client's resumption ClientHello: emitted with a zero binder, binder computed over the
/// truncated message and written in; a server parses it and verifies the binder.
#[cfg(feature = "server")]
#[test]
fn client_hello_emit_parse_and_binder_round_trip() {
    use crate::{psk_binder, verify_psk_binder, EarlySecret, PskKind};
    let shares = [KeyShareEntry { group: 0x001d, key_exchange: &[9; 32] }];
    let params = client_hello_params(&[7; 32], &shares);
    let mut buf = [0u8; 512];
    let out = params.emit(&mut buf).unwrap();
    let msg = &mut buf[..out.len];
    let binders_offset = out.binders_offset.unwrap();

    let sha = HashAlgorithm::Sha256;
    let psk = [0x42u8; 32];
    let early = EarlySecret::new(&P, sha, Some(&psk)).unwrap();
    let bk = early.binder_key(&P, PskKind::Resumption).unwrap();
    let transcript = Transcript::new(&P, sha).unwrap();
    let partial = transcript.hash_with(&msg[..binders_offset]);
    let binder = psk_binder(&P, sha, bk.as_ref(), partial.as_ref()).unwrap();
    msgs::write_binder(msg, binders_offset, binder.as_ref()).unwrap();
    assert_eq!(msgs::write_binder(msg, binders_offset, &[0; 48]), Err(Error::BadLength));

    let (m, rest) = msgs::split_message(msg).unwrap();
    assert!(rest.is_empty());
    let ch = msgs::ClientHello::parse(m.body).unwrap();
    assert_eq!(ch.random, &[7; 32]);
    assert!(ch.legacy_session_id.is_empty());
    assert_eq!(ch.cipher_suites.iter().collect::<Vec<_>>(), [0x1301, 0x1303]);
    assert_eq!(ch.server_name, Some(&b"example.com"[..]));
    assert_eq!(ch.supported_groups.unwrap().iter().collect::<Vec<_>>(), [0x1d, 0x17]);
    assert_eq!(ch.signature_algorithms.unwrap().iter().collect::<Vec<_>>(), [0x0807, 0x0403]);
    assert_eq!(ch.supported_versions.unwrap().iter().collect::<Vec<_>>(), [0x0304]);
    assert_eq!(ch.key_shares.unwrap().find(0x1d).unwrap().key_exchange, &[9; 32]);
    let alpn: Vec<_> = ch.alpn.unwrap().iter().collect();
    assert_eq!(alpn, [&b"h3"[..], &b"mqtt"[..]]);
    assert!(ch.alpn.unwrap().contains(b"mqtt"));
    assert_eq!(ch.server_certificate_types, Some(&[2][..]));
    assert_eq!(ch.client_certificate_types, None);
    assert_eq!(ch.cookie, Some(&b"cookie!"[..]));
    assert!(ch.early_data);
    assert_eq!(ch.quic_transport_parameters, Some(TP));
    let psks = ch.pre_shared_key.unwrap();
    let id = psks.identities().next().unwrap();
    assert_eq!(id.identity, b"ticket-identity");
    assert_eq!(id.obfuscated_ticket_age, 0x0102_0304);
    assert_eq!(ch.truncated_len(msg.len()), Some(binders_offset));
    let received = psks.binders().next().unwrap();
    let server_partial = Transcript::new(&P, sha).unwrap().hash_with(&msg[..binders_offset]);
    verify_psk_binder(&P, sha, bk.as_ref(), server_partial.as_ref(), received).unwrap();

    short_buffers_fail(out.len, |b| params.emit(b).map(|o| o.len));
}

#[cfg(feature = "server")]
#[test]
fn server_messages_emit_parse_round_trip() {
    let mut buf = [0u8; 512];
    // ServerHello.
    let sh = msgs::ServerHelloParams {
        random: &[3; 32],
        legacy_session_id_echo: &[],
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        key_share: Some(KeyShareEntry { group: 0x1d, key_exchange: &[5; 32] }),
        selected_psk: Some(0),
    };
    let n = sh.emit(&mut buf).unwrap();
    let p = msgs::ServerHello::parse(&buf[4..n]).unwrap();
    assert!(!p.is_hello_retry_request());
    assert_eq!(p.random, &[3; 32]);
    assert_eq!(p.cipher_suite, 0x1301);
    assert_eq!(p.selected_version, Some(0x0304));
    assert_eq!(p.key_share.unwrap().key_exchange, &[5; 32]);
    assert_eq!(p.selected_psk, Some(0));
    short_buffers_fail(n, |b| sh.emit(b));

    // HelloRetryRequest.
    let hrr = hrr_params();
    let n = hrr.emit(&mut buf).unwrap();
    let p = msgs::ServerHello::parse(&buf[4..n]).unwrap();
    assert!(p.is_hello_retry_request());
    assert_eq!(p.selected_group, Some(0x0017));
    assert_eq!(p.key_share, None);
    assert_eq!(p.cookie, Some(&b"stateless"[..]));
    short_buffers_fail(n, |b| hrr.emit(b));

    // EncryptedExtensions.
    let ee = ee_params();
    let n = ee.emit(&mut buf).unwrap();
    let p = msgs::EncryptedExtensions::parse(&buf[4..n]).unwrap();
    assert!(p.server_name_acknowledged && p.early_data);
    assert_eq!(p.alpn, Some(&b"h3"[..]));
    assert_eq!(p.server_certificate_type, Some(2));
    assert_eq!(p.client_certificate_type, None);
    assert_eq!(p.quic_transport_parameters, Some(TP));
    short_buffers_fail(n, |b| ee.emit(b));

    // NewSessionTicket.
    let nst = msgs::NewSessionTicketParams {
        lifetime: 604_800,
        age_add: 0xdead_beef,
        nonce: &[0, 1],
        ticket: b"opaque ticket",
        early_data: true,
    };
    let n = nst.emit(&mut buf).unwrap();
    let p = msgs::NewSessionTicket::parse(&buf[4..n]).unwrap();
    assert_eq!((p.lifetime, p.age_add), (604_800, 0xdead_beef));
    assert_eq!((p.nonce, p.ticket), (&[0, 1][..], &b"opaque ticket"[..]));
    assert_eq!(p.max_early_data_size, Some(u32::MAX));
    short_buffers_fail(n, |b| nst.emit(b));
}

#[test]
fn certificate_messages_round_trip() {
    let mut spki = [0u8; crate::ED25519_SPKI_LEN];
    crate::encode_spki(SignatureScheme::Ed25519, &[1; 32], &mut spki).unwrap();
    let mut buf = [0u8; 256];
    let n = msgs::emit_certificate(b"ctx", &[&spki], &mut buf).unwrap();
    let c = msgs::Certificate::parse(&buf[4..n]).unwrap();
    assert_eq!(c.context, b"ctx");
    let entry = c.end_entity().unwrap();
    assert_eq!(crate::parse_spki(entry.data), Ok((SignatureScheme::Ed25519, &[1u8; 32][..])));
    short_buffers_fail(n, |b| msgs::emit_certificate(b"ctx", &[&spki], b));
    // An empty certificate list parses (a client without a certificate).
    assert_eq!(msgs::Certificate::parse(&hex!("00 000000")).unwrap().end_entity(), None);

    let n = msgs::emit_certificate_verify(0x0807, &[9; 64], &mut buf).unwrap();
    let cv = msgs::CertificateVerify::parse(&buf[4..n]).unwrap();
    assert_eq!((cv.scheme, cv.signature), (0x0807, &[9u8; 64][..]));
    short_buffers_fail(n, |b| msgs::emit_certificate_verify(0x0807, &[9; 64], b));
}

/// RFC 8446 §4.4.1: after a HelloRetryRequest the transcript starts with
/// `message_hash(254) || 00 00 Hash.length || Hash(ClientHello1)`.
#[test]
fn hello_retry_request_transcript_rule() {
    let sha = HashAlgorithm::Sha256;
    let ch1 = &CH3[..];
    let hrr = [2u8, 0, 0, 4, 1, 2, 3, 4];
    let mut t = Transcript::new(&P, sha).unwrap();
    t.update(ch1);
    t.replace_with_message_hash(&P).unwrap();
    t.update(&hrr);

    let mut inner = mote_crypto::CryptoProvider::hash(&P, sha).unwrap();
    inner.update(ch1);
    let ch1_hash = inner.finish();
    let mut manual = mote_crypto::CryptoProvider::hash(&P, sha).unwrap();
    manual.update(&[254, 0, 0, 32]);
    manual.update(ch1_hash.as_ref());
    manual.update(&hrr);
    assert_eq!(t.current_hash(), manual.finish());

    // A stateless server rebuilding from the hash alone agrees.
    let mut s = Transcript::from_message_hash(&P, sha, ch1_hash.as_ref()).unwrap();
    s.update(&hrr);
    assert_eq!(s.current_hash(), t.current_hash());
}

/// RFC 8446 §4.1.3: the HelloRetryRequest random is SHA-256("HelloRetryRequest").
#[test]
fn hello_retry_request_random_is_sha256_of_its_name() {
    let mut h = mote_crypto::CryptoProvider::hash(&P, HashAlgorithm::Sha256).unwrap();
    h.update(b"HelloRetryRequest");
    assert_eq!(h.finish().as_ref(), msgs::HELLO_RETRY_REQUEST_RANDOM);
}

/// The SHA-384 suite runs the same schedule with 48-byte secrets and Finished values (with
/// `aes256`, the feature of the one SHA-384 suite; without it the schedule's "derived" step
/// is unsupported).
#[cfg(feature = "aes256")]
#[test]
fn sha384_schedule_lengths() {
    let sha = HashAlgorithm::Sha384;
    let hs = crate::EarlySecret::new(&P, sha, None)
        .unwrap()
        .into_handshake_secret(&P, &[1; 32])
        .unwrap();
    let t = Transcript::new(&P, sha).unwrap();
    let h = t.current_hash();
    assert_eq!(h.as_ref().len(), 48);
    let c = hs.client_handshake_traffic_secret(&P, h.as_ref()).unwrap();
    assert_eq!(c.len(), 48);
    let f = crate::finished_verify_data(&P, sha, c.as_ref(), h.as_ref()).unwrap();
    assert_eq!(f.as_ref().len(), 48);
    let m = hs.into_master_secret(&P).unwrap();
    assert_eq!(m.exporter_master_secret(&P, h.as_ref()).unwrap().len(), 48);
}

/// A CertificateVerify signed with an Ed25519 key (RFC 8410 §10.3's example key) verifies
/// through the raw public key taken from its SubjectPublicKeyInfo, and fails for the other
/// side's context string.
#[test]
fn certificate_verify_with_raw_public_key() {
    use crate::{sign_certificate_verify, verify_certificate_verify, Side};
    use mote_crypto::{CryptoProvider, SigningKey as _};
    let pkcs8 = hex!("302e020100300506032b657004220420d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842");
    let key = P.signing_key(SignatureScheme::Ed25519, &pkcs8).unwrap();
    // RFC 8410 §10.1's public key is this private key's.
    assert_eq!(
        key.public_key(),
        hex!("19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1")
    );
    let mut spki = [0u8; crate::ED25519_SPKI_LEN];
    crate::encode_spki(key.scheme(), key.public_key(), &mut spki).unwrap();
    let (scheme, raw) = crate::parse_spki(&spki).unwrap();

    struct NoRng;
    impl mote_crypto::CryptoRng for NoRng {
        fn fill(&mut self, _: &mut [u8]) -> Result<(), mote_crypto::Error> {
            Err(mote_crypto::Error::Rng)
        }
    }
    let th = [0x5a; 32];
    let mut sig = [0u8; 64];
    let n = sign_certificate_verify(&key, &mut NoRng, Side::Server, &th, &mut sig).unwrap();
    assert_eq!(n, 64);
    verify_certificate_verify(&P, Side::Server, scheme, raw, &th, &sig).unwrap();
    let err = verify_certificate_verify(&P, Side::Client, scheme, raw, &th, &sig).unwrap_err();
    assert_eq!(err.alert(), Alert::DecryptError);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random bytes never panic a parser, the framing helper or the SPKI parser.
    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        for (_, parse) in parsers() {
            let _ = parse(&data);
        }
        let _ = msgs::split_message(&data);
        let _ = msgs::message_len(&data);
        let _ = crate::parse_spki(&data);
    }

    /// Valid messages with random bytes overwritten, or cut short, never panic a parser;
    /// whatever still parses can be walked completely.
    #[test]
    fn mutated_messages_never_panic(
        which in 0usize..64,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let samples = samples();
        let (name, body) = &samples[which % samples.len()];
        let mut body = body.clone();
        for (at, v) in edits {
            let i = at % body.len();
            body[i] = v;
        }
        let parse = parser(name);
        let _ = parse(&body);
        let _ = parse(&body[..cut % (body.len() + 1)]);
    }
}

/// Client-side emission alone (no server parser in this build): the binder placeholder sits
/// at the very end, and short buffers fail cleanly.
#[test]
fn client_hello_emit_layout() {
    let msg = emitted_client_hello();
    let shares = [KeyShareEntry { group: 0x001d, key_exchange: &[9; 32] }];
    let params = client_hello_params(&[7; 32], &shares);
    let out = params.emit(&mut [0u8; 512]).unwrap();
    assert_eq!(out.len, msg.len());
    assert_eq!(out.binders_offset, Some(msg.len() - 35));
    assert_eq!(&msg[msg.len() - 35..msg.len() - 32], &[0, 33, 32]);
    assert_eq!(msgs::message_len(&msg), Some(msg.len()));
    assert!(msg.windows(TP.len()).any(|w| w == TP));
    short_buffers_fail(out.len, |b| params.emit(b).map(|o| o.len));
    // Without a PSK there is no binder.
    let no_psk = msgs::ClientHelloParams { psk: None, ..params };
    assert_eq!(no_psk.emit(&mut [0u8; 512]).unwrap().binders_offset, None);
}

#[test]
fn certificate_request_rules() {
    // signature_algorithms is required (RFC 8446 §4.3.2).
    let no_sigalgs = [&[0u8][..], &block(&[&hex!("1234 0000")])].concat();
    let err = msgs::CertificateRequest::parse(&no_sigalgs).unwrap_err();
    assert_eq!(err.alert(), Alert::MissingExtension);
    let ok = [&[0u8][..], &block(&[&hex!("000d 0004 0002 0807")])].concat();
    let cr = msgs::CertificateRequest::parse(&ok).unwrap();
    assert!(cr.signature_algorithms.contains(0x0807));
    // key_share does not belong in a CertificateRequest.
    let bad = [&[0u8][..], &block(&[&hex!("000d 0004 0002 0807"), &hex!("0033 0000")])].concat();
    assert_eq!(msgs::CertificateRequest::parse(&bad), Err(Error::IllegalParameter));
}

#[cfg(feature = "server")]
#[test]
fn certificate_request_round_trip() {
    let schemes = [SignatureScheme::Ed25519, SignatureScheme::EcdsaSecp256r1Sha256];
    let mut buf = [0u8; 64];
    let n = msgs::emit_certificate_request(b"c", &schemes, &mut buf).unwrap();
    assert_eq!(buf[0], msgs::handshake_type::CERTIFICATE_REQUEST);
    let cr = msgs::CertificateRequest::parse(&buf[4..n]).unwrap();
    assert_eq!(cr.context, b"c");
    assert_eq!(cr.signature_algorithms.iter().collect::<Vec<_>>(), [0x0807, 0x0403]);
    short_buffers_fail(n, |b| msgs::emit_certificate_request(b"c", &schemes, b));
}

/// The emitter's bytes for every extension it writes, pinned (from the emitter before it
/// was rewritten over `Out`, issue 8): the rewrite must not change a byte.
#[test]
fn client_hello_emit_bytes_unchanged() {
    let expected = hex!(
        "010000f9030307070707070707070707070707070707070707070707070707070707070707070000"
        "0413011303010000cc002b000302030400000010000e00000b6578616d706c652e636f6d000a0006"
        "0004001d0017000d0006000408070403003300260024001d00200909090909090909090909090909"
        "0909090909090909090909090909090909090010000a0008026833046d717474001400020102002d"
        "00020101002c00090007636f6f6b696521002a0000003900060104800075300029003a0015000f74"
        "69636b65742d6964656e746974790102030400212000000000000000000000000000000000000000"
        "00000000000000000000000000"
    );
    assert_eq!(emitted_client_hello(), expected);
}

/// The empty client Certificate a client without a key sends as one constant is what the
/// emitter writes for no context and no entries, and parses back as an empty list.
#[test]
fn empty_certificate_constant_matches_the_emitter() {
    let mut out = [0u8; 16];
    let n = crate::msgs::emit_certificate(&[], &[], &mut out).unwrap();
    assert_eq!(out[..n], crate::msgs::EMPTY_CERTIFICATE);
    let (typ, body) = (out[0], &out[4..n]);
    assert_eq!(typ, crate::msgs::handshake_type::CERTIFICATE);
    let cert = crate::msgs::Certificate::parse(body).unwrap();
    assert!(cert.context.is_empty() && cert.end_entity().is_none());
}
