//! The sticky-error parsers ([`crate::codec::In`]) against the `?`-per-field parsers they
//! replaced (kept here as references, built on [`Reader`]): for every truncation and many
//! byte mutations of well-formed messages, both return the same message or the same first
//! error, so the client sends the same alert for every malformed message.

use mote_crypto::{AeadAlgorithm, NamedGroup};

use super::extensions::{
    extension_type as et, Extensions, KeyShareEntry, U16List, ALLOW_CERTIFICATE,
    ALLOW_CERTIFICATE_REQUEST, ALLOW_ENCRYPTED_EXTENSIONS, ALLOW_HELLO_RETRY_REQUEST,
    ALLOW_NEW_SESSION_TICKET, ALLOW_SERVER_HELLO,
};
use super::{
    emit_certificate, emit_certificate_request, emit_certificate_verify, read_session_id,
    Certificate, CertificateRequest, CertificateVerify, EncryptedExtensions,
    EncryptedExtensionsParams, HelloRetryRequestParams, NewSessionTicket, NewSessionTicketParams,
    ServerHello, ServerHelloParams, HELLO_RETRY_REQUEST_RANDOM, LEGACY_VERSION,
};
use crate::codec::Reader;
use crate::ticket::{Ticket, TICKET_FORMAT};
use crate::{Alert, Error};
use std::vec::Vec;

fn ref_server_hello(body: &[u8]) -> Result<ServerHello<'_>, Error> {
    let mut r = Reader::new(body);
    if r.u16()? != LEGACY_VERSION {
        return Err(Error::Alert(Alert::ProtocolVersion));
    }
    let random = r.array::<32>()?;
    let legacy_session_id_echo = read_session_id(&mut r)?;
    let cipher_suite = r.u16()?;
    if r.u8()? != 0 {
        return Err(Error::IllegalParameter);
    }
    let hrr = *random == HELLO_RETRY_REQUEST_RANDOM;
    let allowed = if hrr { ALLOW_HELLO_RETRY_REQUEST } else { ALLOW_SERVER_HELLO };
    let extensions = Extensions::read(&mut r, allowed)?;
    r.finish()?;
    let mut sh = ServerHello {
        random,
        legacy_session_id_echo,
        cipher_suite,
        extensions,
        selected_version: None,
        key_share: None,
        selected_group: None,
        selected_psk: None,
        cookie: None,
    };
    for (typ, data) in extensions.iter() {
        let mut d = Reader::new(data);
        match typ {
            et::SUPPORTED_VERSIONS => sh.selected_version = Some(d.u16()?),
            et::KEY_SHARE if hrr => sh.selected_group = Some(d.u16()?),
            et::KEY_SHARE => sh.key_share = Some(KeyShareEntry::read(&mut d)?),
            et::PRE_SHARED_KEY => sh.selected_psk = Some(d.u16()?),
            et::COOKIE => sh.cookie = Some(d.vec(2, 1)?),
            _ => continue,
        }
        d.finish()?;
    }
    Ok(sh)
}

fn ref_encrypted_extensions(body: &[u8]) -> Result<EncryptedExtensions<'_>, Error> {
    let mut r = Reader::new(body);
    let extensions = Extensions::read(&mut r, ALLOW_ENCRYPTED_EXTENSIONS)?;
    r.finish()?;
    let mut ee = EncryptedExtensions {
        extensions,
        server_name_acknowledged: false,
        supported_groups: None,
        alpn: None,
        client_certificate_type: None,
        server_certificate_type: None,
        early_data: false,
        quic_transport_parameters: None,
        unknown_extension: false,
    };
    for (typ, data) in extensions.iter() {
        let mut d = Reader::new(data);
        match typ {
            et::SERVER_NAME => ee.server_name_acknowledged = true,
            et::SUPPORTED_GROUPS => ee.supported_groups = Some(U16List(d.vec_u16(2, 2)?)),
            et::ALPN => {
                let mut names = Reader::new(d.vec(2, 2)?);
                ee.alpn = Some(names.vec(1, 1)?);
                if !names.is_empty() {
                    return Err(Error::BadLength);
                }
            }
            et::CLIENT_CERTIFICATE_TYPE => ee.client_certificate_type = Some(d.u8()?),
            et::SERVER_CERTIFICATE_TYPE => ee.server_certificate_type = Some(d.u8()?),
            et::EARLY_DATA => ee.early_data = true,
            et::QUIC_TRANSPORT_PARAMETERS => {
                ee.quic_transport_parameters = Some(data);
                continue;
            }
            _ => {
                ee.unknown_extension = true;
                continue;
            }
        }
        d.finish()?;
    }
    Ok(ee)
}

fn ref_new_session_ticket(body: &[u8]) -> Result<NewSessionTicket<'_>, Error> {
    let mut r = Reader::new(body);
    let lifetime = r.u32()?;
    let age_add = r.u32()?;
    let nonce = r.vec(1, 0)?;
    let ticket = r.vec(2, 1)?;
    let extensions = Extensions::read(&mut r, ALLOW_NEW_SESSION_TICKET)?;
    r.finish()?;
    let mut max_early_data_size = None;
    if let Some(data) = extensions.get(et::EARLY_DATA) {
        let mut d = Reader::new(data);
        max_early_data_size = Some(d.u32()?);
        d.finish()?;
    }
    Ok(NewSessionTicket { lifetime, age_add, nonce, ticket, extensions, max_early_data_size })
}

/// What the client reads of a Certificate: context, end-entity data, more entries.
type CertificateView<'a> = (&'a [u8], Option<&'a [u8]>, bool);

/// The old Certificate check.
fn ref_certificate(body: &[u8]) -> Result<CertificateView<'_>, Error> {
    let mut r = Reader::new(body);
    let context = r.vec(1, 0)?;
    let list = r.vec(3, 0)?;
    r.finish()?;
    let mut entries = Reader::new(list);
    let mut first = None;
    let mut count = 0;
    while !entries.is_empty() {
        let data = entries.vec(3, 1)?;
        Extensions::read(&mut entries, ALLOW_CERTIFICATE)?;
        first = first.or(Some(data));
        count += 1;
    }
    Ok((context, first, count > 1))
}

fn ref_certificate_request(body: &[u8]) -> Result<CertificateRequest<'_>, Error> {
    let mut r = Reader::new(body);
    let context = r.vec(1, 0)?;
    let extensions = Extensions::read(&mut r, ALLOW_CERTIFICATE_REQUEST)?;
    r.finish()?;
    let data =
        extensions.get(et::SIGNATURE_ALGORITHMS).ok_or(Error::Alert(Alert::MissingExtension))?;
    let mut d = Reader::new(data);
    let signature_algorithms = U16List(d.vec_u16(2, 2)?);
    d.finish()?;
    Ok(CertificateRequest { context, extensions, signature_algorithms })
}

fn ref_certificate_verify(body: &[u8]) -> Result<CertificateVerify<'_>, Error> {
    let mut r = Reader::new(body);
    let cv = CertificateVerify { scheme: r.u16()?, signature: r.vec(2, 0)? };
    r.finish()?;
    Ok(cv)
}

type TicketFields<'a> = (&'a [u8], &'a [u8], AeadAlgorithm, u32, u32, bool, &'a [u8], &'a [u8]);

fn fields<'a>(t: &Ticket<'a>) -> TicketFields<'a> {
    let Ticket {
        identity,
        psk,
        suite,
        age_add,
        lifetime_s,
        early_data,
        alpn,
        server_transport_parameters,
    } = *t;
    (identity, psk, suite, age_add, lifetime_s, early_data, alpn, server_transport_parameters)
}

fn ref_ticket(bytes: &[u8]) -> Result<TicketFields<'_>, Error> {
    let mut r = Reader::new(bytes);
    if r.u8()? != TICKET_FORMAT {
        return Err(Error::IllegalParameter);
    }
    let suite = AeadAlgorithm::from_cipher_suite(r.u16()?).ok_or(Error::IllegalParameter)?;
    let age_add = r.u32()?;
    let lifetime_s = r.u32()?;
    let early_data = r.u8()? != 0;
    let psk = r.vec(1, 1)?;
    let alpn = r.vec(1, 0)?;
    let identity = r.vec(2, 1)?;
    let server_transport_parameters = r.vec(2, 0)?;
    r.finish()?;
    Ok((identity, psk, suite, age_add, lifetime_s, early_data, alpn, server_transport_parameters))
}

/// Every truncation of `msg`, and of `msg` with each byte replaced by a few values (lengths
/// one off, high bits, zero, all ones) — a bad field followed by a truncation, the case
/// where the order of the checks shows — and `msg` with a byte appended.
fn variants(msg: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for n in 0..=msg.len() {
        out.push(msg[..n].to_vec());
    }
    for i in 0..msg.len() {
        for v in [msg[i].wrapping_add(1), msg[i].wrapping_sub(1), msg[i] ^ 0x80, 0, 0xff] {
            let mut m = msg.to_vec();
            m[i] = v;
            for n in i + 1..=m.len() {
                out.push(m[..n].to_vec());
            }
        }
    }
    let mut longer = msg.to_vec();
    longer.push(0);
    out.push(longer);
    out
}

/// Checks `new` against `old` on every variant of each body; evaluates to how many variants
/// failed (so that a test also shows the malformed inputs were exercised).
macro_rules! same {
    ($bodies:expr, $new:expr, $old:expr $(,)?) => {{
        let mut errors = 0usize;
        for body in $bodies {
            assert!(($new)(&body[..]).is_ok(), "the unmodified message parses");
            for v in variants(body) {
                let (a, b) = (($new)(&v[..]), ($old)(&v[..]));
                assert_eq!(a, b, "input {v:02x?}");
                errors += usize::from(a.is_err());
            }
        }
        errors
    }};
}

fn body(msg: &[u8]) -> Vec<u8> {
    msg[4..].to_vec()
}

#[test]
fn server_hello_and_retry_same_results_as_the_reference() {
    let mut buf = [0u8; 512];
    let share = [7u8; 32];
    let sh = ServerHelloParams {
        random: &[3; 32],
        legacy_session_id_echo: &[],
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        key_share: Some(KeyShareEntry { group: 0x1d, key_exchange: &share }),
        selected_psk: Some(0),
    };
    let n = sh.emit(&mut buf).unwrap();
    let sh = body(&buf[..n]);
    let hrr = HelloRetryRequestParams {
        legacy_session_id_echo: &[1, 2],
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        selected_group: Some(NamedGroup::X25519),
        cookie: Some(&[9; 5]),
    };
    let n = hrr.emit(&mut buf).unwrap();
    let hrr = body(&buf[..n]);
    let errors = same!([&sh, &hrr], ServerHello::parse, ref_server_hello);
    assert!(errors > 100);
}

#[test]
fn encrypted_extensions_same_results_as_the_reference() {
    let mut buf = [0u8; 512];
    let ee = EncryptedExtensionsParams {
        server_name_acknowledged: true,
        alpn: Some(b"h3"),
        client_certificate_type: Some(2),
        server_certificate_type: Some(2),
        early_data: true,
        quic_transport_parameters: &[1, 2, 3, 4],
    };
    let n = ee.emit(&mut buf).unwrap();
    let ee = body(&buf[..n]);
    // supported_groups (x25519, secp256r1) and an unknown extension, by hand.
    let hand: &[u8] = &[0, 14, 0, 10, 0, 6, 0, 4, 0, 0x1d, 0, 0x17, 0xfa, 0xfa, 0, 0];
    let errors = same!([&ee, hand], EncryptedExtensions::parse, ref_encrypted_extensions);
    assert!(errors > 100);
}

#[test]
fn new_session_ticket_same_results_as_the_reference() {
    let mut buf = [0u8; 512];
    let nst = NewSessionTicketParams {
        lifetime: 7200,
        age_add: 0x0102_0304,
        nonce: &[0, 1],
        ticket: &[5; 12],
        early_data: true,
    };
    let n = nst.emit(&mut buf).unwrap();
    let with_early = body(&buf[..n]);
    let n = NewSessionTicketParams { early_data: false, ..nst }.emit(&mut buf).unwrap();
    let without = body(&buf[..n]);
    let errors = same!([&with_early, &without], NewSessionTicket::parse, ref_new_session_ticket);
    assert!(errors > 50);
}

#[test]
fn certificate_messages_same_results_as_the_reference() {
    let mut buf = [0u8; 512];
    let n = emit_certificate(&[], &[&[0x30; 12]], &mut buf).unwrap();
    let one = body(&buf[..n]);
    let n = emit_certificate(&[4], &[&[0x30; 6], &[0x31; 3]], &mut buf).unwrap();
    let two = body(&buf[..n]);
    let errors = same!(
        [&one, &two],
        |b| { Certificate::parse_end_entity(b).map(|(c, e)| (c.context, e.data, e.more)) },
        ref_certificate,
    );
    assert!(errors > 50);

    let schemes = [mote_crypto::SignatureScheme::Ed25519];
    let n = emit_certificate_request(&[], &schemes, &mut buf).unwrap();
    let cr = body(&buf[..n]);
    let errors = same!([&cr], CertificateRequest::parse, ref_certificate_request);
    assert!(errors > 20);

    let n = emit_certificate_verify(0x0807, &[0xab; 64], &mut buf).unwrap();
    let cv = body(&buf[..n]);
    let errors = same!([&cv], CertificateVerify::parse, ref_certificate_verify);
    assert!(errors > 10);
}

#[test]
fn ticket_decode_same_results_as_the_reference() {
    let ticket = Ticket {
        identity: &[1; 9],
        psk: &[2; 32],
        suite: AeadAlgorithm::Aes128Gcm,
        age_add: 77,
        lifetime_s: 3600,
        early_data: true,
        alpn: b"h3",
        server_transport_parameters: &[4, 5, 6],
    };
    let mut buf = [0u8; 256];
    let n = ticket.encode(&mut buf).unwrap();
    let encoded = buf[..n].to_vec();
    let errors = same!([&encoded], |b| Ticket::decode(b).map(|t| fields(&t)), ref_ticket);
    assert!(errors > 50);
}
