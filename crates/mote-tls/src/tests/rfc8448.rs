//! RFC 8448 §3 ("Simple 1-RTT Handshake") and §4 ("Resumed 0-RTT Handshake"), byte-exact.
//!
//! Every expected value below is printed in RFC 8448; the handshake messages are in
//! [`super::rfc8448_vectors`]. Secrets are derived by this crate's key schedule from the
//! RFC's inputs (the X25519 private keys, the PSK from the §3 ticket) and transcript hashes
//! are computed over the embedded messages, never copied from the RFC.

use std::vec::Vec;

use hex_literal::hex;
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{
    hkdf, AeadAlgorithm, AeadKey as _, CryptoProvider, CryptoRng, Digest, HashAlgorithm,
    KeyExchange as _, NamedGroup,
};

use super::rfc8448_vectors::*;
use crate::key_schedule::{derive_secret, empty_hash, export};
use crate::msgs::{self, handshake_type as ht};
use crate::*;

const P: RustCrypto = RustCrypto;
const SHA256: HashAlgorithm = HashAlgorithm::Sha256;

// §3 inputs.
const S3_CLIENT_PRIVATE: [u8; 32] =
    hex!("49af42ba7f7994852d713ef2784bcbcaa7911de26adc5642cb634540e7ea5005");
const S3_CLIENT_PUBLIC: [u8; 32] =
    hex!("99381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c");
const S3_SERVER_PRIVATE: [u8; 32] =
    hex!("b1580eeadf6dd589b8ef4f2d5652578cc810e9980191ec8d058308cea216a21e");
const S3_SERVER_PUBLIC: [u8; 32] =
    hex!("c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f");
const S3_SHARED: [u8; 32] =
    hex!("8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d");
const S3_RESUMPTION_MASTER: [u8; 32] =
    hex!("7df235f2031d2a051287d02b0241b0bfdaf86cc856231f2d5aba46c434ec196c");

// §4 inputs.
const S4_CLIENT_PRIVATE: [u8; 32] =
    hex!("bff91188283846dd6a2134ef7180ca2b0b14fb10dce707b5098c0dddc813b2df");
const S4_CLIENT_PUBLIC: [u8; 32] =
    hex!("e4ffb68ac05f8d96c99da26698346c6be16482badddafe051a66b4f18d668f0b");
const S4_SERVER_PRIVATE: [u8; 32] =
    hex!("de5b4476e7b490b2652d338acbf2948066f255f9440e23b98fc69835298dc107");
const S4_SERVER_PUBLIC: [u8; 32] =
    hex!("121761ee42c333e1b9e77b60dd57c2053cd94512ab47f115e86eff50942cea31");
const S4_SHARED: [u8; 32] =
    hex!("f44194756ff9ec9d25180635d66ea6824c6ab3bf179977be37f723570e7ccb2e");
const S4_PSK: [u8; 32] = hex!("4ecd0eb6ec3b4d87f5d6028f922ca4c5851a277fd41311c9e62d2c9492e1c4f3");

/// An RNG that hands out one fixed private key, so `start_key_exchange` reproduces the RFC's
/// ephemeral key pairs.
struct FixedRng([u8; 32]);

impl CryptoRng for FixedRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), mote_crypto::Error> {
        dest.copy_from_slice(&self.0[..dest.len()]);
        Ok(())
    }
}

fn hash(messages: &[&[u8]]) -> Digest {
    let mut t = Transcript::new(&P, SHA256).unwrap();
    for m in messages {
        t.update(m);
    }
    t.current_hash()
}

/// The messages of a flight, cut apart by the framing helper.
fn split_all(mut buf: &[u8]) -> Vec<msgs::HandshakeMessage<'_>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (m, rest) = msgs::split_message(buf).expect("whole messages");
        out.push(m);
        buf = rest;
    }
    out
}

/// RFC 8446 §5.2/§5.3: opens a TLS 1.3 record (sequence number 0) with the AES-128-GCM key
/// and IV derived from `traffic_secret` ("key", "iv"), returning the inner plaintext
/// (content followed by the content type byte).
fn open_record(
    traffic_secret: &[u8],
    record: &[u8],
    key_hex: [u8; 16],
    iv_hex: [u8; 12],
) -> Vec<u8> {
    let mut key = [0u8; 16];
    let mut iv = [0u8; 12];
    hkdf::expand_label(&P, SHA256, traffic_secret, b"key", b"", &mut key).unwrap();
    hkdf::expand_label(&P, SHA256, traffic_secret, b"iv", b"", &mut iv).unwrap();
    assert_eq!(key, key_hex);
    assert_eq!(iv, iv_hex);
    let aead = P.aead_key(AeadAlgorithm::Aes128Gcm, &key).unwrap();
    let (header, body) = record.split_at(5);
    let (ciphertext, tag) = body.split_at(body.len() - 16);
    let mut plain = ciphertext.to_vec();
    aead.open_in_place(&iv, header, &mut plain, tag.try_into().unwrap()).unwrap();
    plain
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn rfc8448_x25519_shared_secrets() {
    for (c_priv, c_pub, s_priv, s_pub, shared) in [
        (S3_CLIENT_PRIVATE, S3_CLIENT_PUBLIC, S3_SERVER_PRIVATE, S3_SERVER_PUBLIC, S3_SHARED),
        (S4_CLIENT_PRIVATE, S4_CLIENT_PUBLIC, S4_SERVER_PRIVATE, S4_SERVER_PUBLIC, S4_SHARED),
    ] {
        let client = P.start_key_exchange(NamedGroup::X25519, &mut FixedRng(c_priv)).unwrap();
        assert_eq!(client.public_key(), c_pub);
        let server = P.start_key_exchange(NamedGroup::X25519, &mut FixedRng(s_priv)).unwrap();
        assert_eq!(server.public_key(), s_pub);
        assert_eq!(client.complete(&s_pub).unwrap().as_ref(), shared);
        assert_eq!(server.complete(&c_pub).unwrap().as_ref(), shared);
    }
    // The public keys are the ones the §3 and §4 hellos carry.
    assert!(CH3.windows(32).any(|w| w == S3_CLIENT_PUBLIC));
    assert_eq!(&SH3[SH3.len() - 38..SH3.len() - 6], S3_SERVER_PUBLIC);
    assert!(CH4.windows(32).any(|w| w == S4_CLIENT_PUBLIC));
    assert!(SH4.windows(32).any(|w| w == S4_SERVER_PUBLIC));
}

/// §3: the whole key schedule of the full handshake, from the X25519 output.
#[test]
fn rfc8448_s3_key_schedule() {
    let early = EarlySecret::new(&P, SHA256, None).unwrap();
    assert_eq!(
        early.secret(),
        hex!("33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a")
    );
    let empty = empty_hash(&P, SHA256).unwrap();
    let derived = derive_secret(&P, SHA256, early.secret(), b"derived", empty.as_ref()).unwrap();
    assert_eq!(
        derived.as_ref(),
        hex!("6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba")
    );

    let hs = early.into_handshake_secret(&P, &S3_SHARED).unwrap();
    assert_eq!(
        hs.secret(),
        hex!("1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac")
    );
    let hello_hash = hash(&[&CH3, &SH3]);
    assert_eq!(
        hello_hash.as_ref(),
        hex!("860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8")
    );
    let c_hs = hs.client_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap();
    let s_hs = hs.server_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap();
    assert_eq!(
        c_hs.as_ref(),
        hex!("b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21")
    );
    assert_eq!(
        s_hs.as_ref(),
        hex!("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
    );
    let derived = derive_secret(&P, SHA256, hs.secret(), b"derived", empty.as_ref()).unwrap();
    assert_eq!(
        derived.as_ref(),
        hex!("43de77e0c77713859a944db9db2590b53190a65b3ee2e4f12dd7a0bb7ce254b4")
    );

    let master = hs.into_master_secret(&P).unwrap();
    assert_eq!(
        master.secret(),
        hex!("18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919")
    );
    let sf_hash = hash(&[&CH3, &SH3, &FLIGHT3]);
    assert_eq!(
        sf_hash.as_ref(),
        hex!("9608102a0f1ccc6db6250b7b7e417b1a000eaada3daae4777a7686c9ff83df13")
    );
    assert_eq!(
        master.client_application_traffic_secret(&P, sf_hash.as_ref()).unwrap().as_ref(),
        hex!("9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5")
    );
    assert_eq!(
        master.server_application_traffic_secret(&P, sf_hash.as_ref()).unwrap().as_ref(),
        hex!("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643")
    );
    assert_eq!(
        master.exporter_master_secret(&P, sf_hash.as_ref()).unwrap().as_ref(),
        hex!("fe22f881176eda18eb8f44529e6792c50c9a3f89452f68d8ae311b4309d3cf50")
    );
    let cf_hash = hash(&[&CH3, &SH3, &FLIGHT3, &CFIN3]);
    assert_eq!(
        cf_hash.as_ref(),
        hex!("209145a96ee8e2a122ff810047cc952684658d6049e86429426db87c54ad143d")
    );
    assert_eq!(
        master.resumption_master_secret(&P, cf_hash.as_ref()).unwrap().as_ref(),
        S3_RESUMPTION_MASTER
    );
}

/// §3: server and client Finished, computed over the embedded messages, and the records that
/// carry them decrypted with keys from this crate's traffic secrets.
#[test]
fn rfc8448_s3_finished() {
    let hs =
        EarlySecret::new(&P, SHA256, None).unwrap().into_handshake_secret(&P, &S3_SHARED).unwrap();
    let mut t = Transcript::new(&P, SHA256).unwrap();
    t.update(&CH3);
    t.update(&SH3);
    let hello_hash = t.current_hash();
    let c_hs = hs.client_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap();
    let s_hs = hs.server_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap();

    // The server's flight, decrypted with its handshake key, is exactly the four messages.
    let plain = open_record(
        s_hs.as_ref(),
        &RECFLIGHT3,
        hex!("3fce516009c21727d0f2e4e86ee403bc"),
        hex!("5d313eb2671276ee13000b30"),
    );
    assert_eq!(plain, cat(&[&FLIGHT3, &[0x16]]));

    let flight = split_all(&FLIGHT3);
    let types: Vec<u8> = flight.iter().map(|m| m.typ).collect();
    assert_eq!(
        types,
        [ht::ENCRYPTED_EXTENSIONS, ht::CERTIFICATE, ht::CERTIFICATE_VERIFY, ht::FINISHED]
    );
    for m in &flight[..3] {
        t.update(m.bytes);
    }
    let server_verify_data =
        hex!("9b9b141d906337fbd2cbdce71df4deda4ab42c309572cb7fffee5454b78f0718");
    let before_sf = t.current_hash();
    let computed = finished_verify_data(&P, SHA256, s_hs.as_ref(), before_sf.as_ref()).unwrap();
    assert_eq!(computed.as_ref(), server_verify_data);
    let sf = msgs::Finished::parse(flight[3].body, 32).unwrap();
    assert_eq!(sf.verify_data, server_verify_data);
    verify_finished(&P, SHA256, s_hs.as_ref(), before_sf.as_ref(), sf.verify_data).unwrap();
    let mut bad = server_verify_data;
    bad[31] ^= 1;
    assert_eq!(
        verify_finished(&P, SHA256, s_hs.as_ref(), before_sf.as_ref(), &bad),
        Err(Error::DecryptError)
    );
    assert_eq!(
        verify_finished(&P, SHA256, s_hs.as_ref(), before_sf.as_ref(), &server_verify_data[..31]),
        Err(Error::DecryptError)
    );
    // The server's own Finished message, emitted, is the RFC's.
    let mut out = [0u8; 36];
    assert_eq!(msgs::Finished::emit(computed.as_ref(), &mut out), Ok(36));
    assert_eq!(out, flight[3].bytes);

    t.update(flight[3].bytes);
    let client_verify_data =
        hex!("a8ec436d677634ae525ac1fcebe11a039ec17694fac6e98527b642f2edd5ce61");
    let computed =
        finished_verify_data(&P, SHA256, c_hs.as_ref(), t.current_hash().as_ref()).unwrap();
    assert_eq!(computed.as_ref(), client_verify_data);
    assert_eq!(msgs::Finished::emit(computed.as_ref(), &mut out), Ok(36));
    assert_eq!(out, CFIN3);
    let plain = open_record(
        c_hs.as_ref(),
        &RECCFIN3,
        hex!("dbfaa693d1762c5b666af5d950258d01"),
        hex!("5bd3c71b836e0b76bb73265f"),
    );
    assert_eq!(plain, cat(&[&CFIN3, &[0x16]]));
}

/// §3: the NewSessionTicket (decrypted with the server application key), parsed, and the
/// ticket PSK derived from the resumption master secret and its nonce.
#[test]
fn rfc8448_s3_new_session_ticket_psk() {
    let s_ap = hex!("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643");
    let plain = open_record(
        &s_ap,
        &RECNST3,
        hex!("9f02283b6c9c07efc26bb9f2ac92e356"),
        hex!("cf782b88dd83549aadf1e984"),
    );
    assert_eq!(plain, cat(&[&NST3, &[0x16]]));

    let (m, rest) = msgs::split_message(&NST3).unwrap();
    assert!(rest.is_empty());
    assert_eq!(m.typ, ht::NEW_SESSION_TICKET);
    let nst = msgs::NewSessionTicket::parse(m.body).unwrap();
    assert_eq!(nst.lifetime, 30);
    assert_eq!(nst.age_add, 0xfad6_aac5);
    assert_eq!(nst.nonce, [0, 0]);
    assert_eq!(nst.ticket.len(), 0xb2);
    assert_eq!(nst.max_early_data_size, Some(0x400));

    let psk = resumption_psk(&P, SHA256, &S3_RESUMPTION_MASTER, nst.nonce).unwrap();
    assert_eq!(psk.as_ref(), S4_PSK);
}

/// §3: the ClientHello, parsed by the server-side codec. It carries extensions mote does not
/// know (renegotiation_info, session_ticket, record_size_limit), which are kept and skipped.
#[cfg(feature = "server")]
#[test]
fn rfc8448_s3_parse_client_hello() {
    use crate::msgs::extension_type as et;
    let (m, rest) = msgs::split_message(&CH3).unwrap();
    assert!(rest.is_empty());
    assert_eq!(m.typ, ht::CLIENT_HELLO);
    let ch = msgs::ClientHello::parse(m.body).unwrap();
    assert_eq!(ch.legacy_version, 0x0303);
    assert_eq!(
        ch.random,
        &hex!("cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7")
    );
    assert!(ch.legacy_session_id.is_empty());
    assert_eq!(ch.cipher_suites.iter().collect::<Vec<_>>(), [0x1301, 0x1303, 0x1302]);
    assert_eq!(ch.server_name, Some(&b"server"[..]));
    assert_eq!(
        ch.supported_groups.unwrap().iter().collect::<Vec<_>>(),
        [0x001d, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104]
    );
    let shares = ch.key_shares.unwrap();
    assert_eq!(shares.iter().count(), 1);
    assert_eq!(shares.find(0x001d).unwrap().key_exchange, S3_CLIENT_PUBLIC);
    assert_eq!(ch.supported_versions.unwrap().iter().collect::<Vec<_>>(), [0x0304]);
    let schemes = ch.signature_algorithms.unwrap();
    assert_eq!(schemes.len(), 15);
    assert!(schemes.contains(0x0403) && schemes.contains(0x0804));
    assert_eq!(ch.psk_key_exchange_modes, Some(&[msgs::PSK_DHE_KE][..]));
    assert!(ch.pre_shared_key.is_none() && !ch.early_data && ch.alpn.is_none());
    assert!(ch.quic_transport_parameters.is_none() && ch.cookie.is_none());
    assert_eq!(ch.truncated_len(CH3.len()), None);
    // The unknown extensions, in order.
    let types: Vec<u16> = ch.extensions.iter().map(|(t, _)| t).collect();
    assert_eq!(
        types,
        [
            et::SERVER_NAME,
            0xff01,
            et::SUPPORTED_GROUPS,
            0x0023,
            et::KEY_SHARE,
            et::SUPPORTED_VERSIONS,
            et::SIGNATURE_ALGORITHMS,
            et::PSK_KEY_EXCHANGE_MODES,
            0x001c
        ]
    );
    assert_eq!(ch.extensions.get(0x001c), Some(&[0x40, 0x01][..]));
}

/// §3: the ServerHello and the server's encrypted flight, parsed by the client-side codecs.
#[test]
fn rfc8448_s3_parse_server_messages() {
    let (m, _) = msgs::split_message(&SH3).unwrap();
    assert_eq!(m.typ, ht::SERVER_HELLO);
    let sh = msgs::ServerHello::parse(m.body).unwrap();
    assert!(!sh.is_hello_retry_request());
    assert_eq!(
        sh.random,
        &hex!("a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e26928")
    );
    assert!(sh.legacy_session_id_echo.is_empty());
    assert_eq!(sh.cipher_suite, 0x1301);
    assert_eq!(sh.selected_version, Some(msgs::TLS13));
    let share = sh.key_share.unwrap();
    assert_eq!(share.group, NamedGroup::X25519.codepoint());
    assert_eq!(share.key_exchange, S3_SERVER_PUBLIC);
    assert_eq!(sh.selected_psk, None);
    assert_eq!(sh.selected_group, None);

    let flight = split_all(&FLIGHT3);
    let ee = msgs::EncryptedExtensions::parse(flight[0].body).unwrap();
    assert!(ee.server_name_acknowledged);
    assert_eq!(ee.supported_groups.unwrap().len(), 9);
    assert_eq!(ee.alpn, None);
    assert!(!ee.early_data);
    assert_eq!(ee.extensions.get(0x001c), Some(&[0x40, 0x01][..]));

    let cert = msgs::Certificate::parse(flight[1].body).unwrap();
    assert!(cert.context.is_empty());
    assert_eq!(cert.entries().count(), 1);
    let ee_cert = cert.end_entity().unwrap();
    assert_eq!(ee_cert.data.len(), 0x1b0);
    assert_eq!(&ee_cert.data[..4], &[0x30, 0x82, 0x01, 0xac]);
    assert!(ee_cert.extensions.raw().is_empty());
    // Re-emitting the entry gives the RFC's message back.
    let mut out = [0u8; 512];
    let n = msgs::emit_certificate(&[], &[ee_cert.data], &mut out).unwrap();
    assert_eq!(&out[..n], flight[1].bytes);

    let cv = msgs::CertificateVerify::parse(flight[2].body).unwrap();
    assert_eq!(cv.scheme, 0x0804); // rsa_pss_rsae_sha256
    assert_eq!(cv.signature.len(), 128);
    let n = msgs::emit_certificate_verify(cv.scheme, cv.signature, &mut out).unwrap();
    assert_eq!(&out[..n], flight[2].bytes);
}

/// §4: the resumption PSK's early secret, binder key, binder over the truncated ClientHello,
/// and the 0-RTT secrets.
#[test]
fn rfc8448_s4_early_secrets_and_binder() {
    let early = EarlySecret::new(&P, SHA256, Some(&S4_PSK)).unwrap();
    assert_eq!(
        early.secret(),
        hex!("9b2188e9b2fc6d64d71dc329900e20bb41915000f678aa839cbb797cb7d8332c")
    );
    let binder_key = early.binder_key(&P, PskKind::Resumption).unwrap();
    assert_eq!(
        binder_key.as_ref(),
        hex!("69fe131a3bbad5d63c64eebcc30e395b9d8107726a13d074e389dbc8a4e47256")
    );

    // Truncate(ClientHello): everything before the binders list (2 + 1 + 32 bytes).
    let truncated = CH4.len() - 35;
    let t = Transcript::new(&P, SHA256).unwrap();
    let partial_hash = t.hash_with(&CH4[..truncated]);
    assert_eq!(
        partial_hash.as_ref(),
        hex!("63224b2e4573f2d3454ca84b9d009a04f6be9e05711a8396473aefa01e924a14")
    );
    let binder = psk_binder(&P, SHA256, binder_key.as_ref(), partial_hash.as_ref()).unwrap();
    let expected = hex!("3add4fb2d8fdf822a0ca3cf7678ef5e88dae990141c5924d57bb6fa31b9e5f9d");
    assert_eq!(binder.as_ref(), expected);
    assert_eq!(&CH4[CH4.len() - 32..], expected);
    verify_psk_binder(&P, SHA256, binder_key.as_ref(), partial_hash.as_ref(), &expected).unwrap();
    assert_eq!(
        verify_psk_binder(&P, SHA256, binder_key.as_ref(), partial_hash.as_ref(), &[0; 32]),
        Err(Error::DecryptError)
    );
    // With the external-PSK label the binder differs.
    let ext = early.binder_key(&P, PskKind::External).unwrap();
    assert_ne!(ext.as_ref(), binder_key.as_ref());

    let ch_hash = hash(&[&CH4]);
    assert_eq!(
        ch_hash.as_ref(),
        hex!("08ad0fa05d7c7233b1775ba2ff9f4c5b8b59276b7f227f13a976245f5d960913")
    );
    let c_e = early.client_early_traffic_secret(&P, ch_hash.as_ref()).unwrap();
    assert_eq!(
        c_e.as_ref(),
        hex!("3fbbe6a60deb66c30a32795aba0eff7eaa10105586e7be5c09678d63b6caab62")
    );
    assert_eq!(
        early.early_exporter_master_secret(&P, ch_hash.as_ref()).unwrap().as_ref(),
        hex!("b2026866610937d7423e5be90862ccf24c0e6091186d34f812089ff5be2ef7df")
    );
    // The 0-RTT write key and IV derived from the early traffic secret.
    let mut key = [0u8; 16];
    let mut iv = [0u8; 12];
    hkdf::expand_label(&P, SHA256, c_e.as_ref(), b"key", b"", &mut key).unwrap();
    hkdf::expand_label(&P, SHA256, c_e.as_ref(), b"iv", b"", &mut iv).unwrap();
    assert_eq!(key, hex!("920205a5b7bf2115e6fc5c2942834f54"));
    assert_eq!(iv, hex!("6d475f0993c8e564610db2b9"));
}

/// §4: the rest of the resumed handshake's key schedule and both Finished values.
#[test]
fn rfc8448_s4_handshake_and_finished() {
    let early = EarlySecret::new(&P, SHA256, Some(&S4_PSK)).unwrap();
    let empty = empty_hash(&P, SHA256).unwrap();
    let derived = derive_secret(&P, SHA256, early.secret(), b"derived", empty.as_ref()).unwrap();
    assert_eq!(
        derived.as_ref(),
        hex!("5f1790bbd82c5e7d376ed2e1e52f8e6038c9346db61b43be9a52f77ef3998e80")
    );
    let hs = early.into_handshake_secret(&P, &S4_SHARED).unwrap();
    assert_eq!(
        hs.secret(),
        hex!("005cb112fd8eb4ccc623bb88a07c64b3ede1605363fc7d0df8c7ce4ff0fb4ae6")
    );
    let mut t = Transcript::new(&P, SHA256).unwrap();
    t.update(&CH4);
    t.update(&SH4);
    let hello_hash = t.current_hash();
    assert_eq!(
        hello_hash.as_ref(),
        hex!("f736cb34fe25e701551bee6fd24c1cc7102a7daf9405cb15d97aafe16f757d03")
    );
    let c_hs = hs.client_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap();
    let s_hs = hs.server_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap();
    assert_eq!(
        c_hs.as_ref(),
        hex!("2faac08f851d35fea3604fcb4de82dc62c9b164a70974d0462e27f1ab278700f")
    );
    assert_eq!(
        s_hs.as_ref(),
        hex!("fe927ae271312e8bf0275b581c54eef020450dc4ecffaa05a1a35d27518e7803")
    );
    let plain = open_record(
        s_hs.as_ref(),
        &RECSRV4,
        hex!("27c6bdc0a3dcea39a47326d79bc9e4ee"),
        hex!("9569ecdd4d0536705e9ef725"),
    );
    assert_eq!(plain, cat(&[&EE4, &SFIN4, &[0x16]]));

    // Server Finished over ClientHello..EncryptedExtensions (no Certificate with a PSK).
    t.update(&EE4);
    let sf = finished_verify_data(&P, SHA256, s_hs.as_ref(), t.current_hash().as_ref()).unwrap();
    assert_eq!(
        sf.as_ref(),
        hex!("48d3e0e1b3d907c6acff145e16090388c77b05c050b634ab1a88bbd0dd1a34b2")
    );
    assert_eq!(&SFIN4[4..], sf.as_ref());
    t.update(&SFIN4);
    let sf_hash = t.current_hash();
    assert_eq!(
        sf_hash.as_ref(),
        hex!("b0aeffc46a2cfe33114e6fd7d51f9f04b1ca3c497dab08934a774a9d9ad7dbf3")
    );

    let derived = derive_secret(&P, SHA256, hs.secret(), b"derived", empty.as_ref()).unwrap();
    assert_eq!(
        derived.as_ref(),
        hex!("e2f16030251df0874ba19b9aba257610bc6d531c1dd206df0ca6e84ae2a26742")
    );
    let master = hs.into_master_secret(&P).unwrap();
    assert_eq!(
        master.secret(),
        hex!("e2d32d4ed66dd37897a0e80c84107503ce58bf8aad4cb55a5002d77ecb890ece")
    );
    assert_eq!(
        master.client_application_traffic_secret(&P, sf_hash.as_ref()).unwrap().as_ref(),
        hex!("2abbf2b8e381d23dbebe1dd2a7d16a8bf484cb4950d23fb7fb7fa8547062d9a1")
    );
    assert_eq!(
        master.server_application_traffic_secret(&P, sf_hash.as_ref()).unwrap().as_ref(),
        hex!("cc21f1bf8feb7dd5fa505bd9c4b468a9984d554a993dc49e6d285598fb672691")
    );
    assert_eq!(
        master.exporter_master_secret(&P, sf_hash.as_ref()).unwrap().as_ref(),
        hex!("3fd93d4ffddc98e64b14dd107aedf8ee4add23f4510f58a4592d0b201bee56b4")
    );

    // The trace is TLS over TCP, so EndOfEarlyData precedes the client Finished (over QUIC
    // it is never sent, RFC 9001 §8.3).
    t.update(&EOED4);
    let cf = finished_verify_data(&P, SHA256, c_hs.as_ref(), t.current_hash().as_ref()).unwrap();
    assert_eq!(
        cf.as_ref(),
        hex!("7230a9c952c25cd6138fc5e6628308c41c5335dd81b9f96bcea50fd32bda416d")
    );
    assert_eq!(&CFIN4[4..], cf.as_ref());
    t.update(&CFIN4);
    let cf_hash = t.current_hash();
    assert_eq!(
        cf_hash.as_ref(),
        hex!("c3c122e0bd907a4a3ff6112d8fd53dbf89c773d9552e8b6b9d56d361b3a97bf6")
    );
    assert_eq!(
        master.resumption_master_secret(&P, cf_hash.as_ref()).unwrap().as_ref(),
        hex!("5e95bdf1f89005ea2e9aa0ba85e728e3c19c5fe0c699e3f5bee59faebd0b5406")
    );
}

/// §4: the resumed ServerHello and EncryptedExtensions parsed by the client codecs;
/// EndOfEarlyData refused as QUIC requires.
#[test]
fn rfc8448_s4_parse_server_messages() {
    let (m, _) = msgs::split_message(&SH4).unwrap();
    let sh = msgs::ServerHello::parse(m.body).unwrap();
    assert_eq!(sh.selected_psk, Some(0));
    assert_eq!(sh.key_share.unwrap().key_exchange, S4_SERVER_PUBLIC);
    assert_eq!(sh.cipher_suite, 0x1301);

    let (m, _) = msgs::split_message(&EE4).unwrap();
    let ee = msgs::EncryptedExtensions::parse(m.body).unwrap();
    assert!(ee.early_data);
    assert!(ee.server_name_acknowledged);

    let (m, _) = msgs::split_message(&EOED4).unwrap();
    assert_eq!(m.typ, ht::END_OF_EARLY_DATA);
    assert_eq!(msgs::check_quic_message_type(m.typ), Err(Error::UnexpectedMessage));
    assert_eq!(Error::UnexpectedMessage.alert().quic_error_code(), 0x010a);
}

/// §4: the resumed ClientHello parsed by the server codec: the offered identity is the §3
/// ticket, the binder is where Truncate() says, and it verifies.
#[cfg(feature = "server")]
#[test]
fn rfc8448_s4_parse_client_hello_and_verify_binder() {
    let (m, _) = msgs::split_message(&CH4).unwrap();
    let ch = msgs::ClientHello::parse(m.body).unwrap();
    assert!(ch.early_data);
    assert_eq!(ch.psk_key_exchange_modes, Some(&[msgs::PSK_DHE_KE][..]));
    assert_eq!(ch.key_shares.unwrap().find(0x001d).unwrap().key_exchange, S4_CLIENT_PUBLIC);
    // The padding extension (21) is unknown to mote and skipped.
    assert_eq!(ch.extensions.get(0x0015).map(<[u8]>::len), Some(0x57));

    let psks = ch.pre_shared_key.unwrap();
    let ids: Vec<_> = psks.identities().collect();
    assert_eq!(ids.len(), 1);
    let nst = msgs::NewSessionTicket::parse(&NST3[4..]).unwrap();
    assert_eq!(ids[0].identity, nst.ticket);
    assert_eq!(ids[0].obfuscated_ticket_age, 0xfad6_aacb);
    let binders: Vec<_> = psks.binders().collect();
    assert_eq!(binders.len(), 1);

    let truncated = ch.truncated_len(CH4.len()).unwrap();
    assert_eq!(truncated, CH4.len() - 35);
    let partial = Transcript::new(&P, SHA256).unwrap().hash_with(&CH4[..truncated]);
    let binder_key = EarlySecret::new(&P, SHA256, Some(&S4_PSK))
        .unwrap()
        .binder_key(&P, PskKind::Resumption)
        .unwrap();
    verify_psk_binder(&P, SHA256, binder_key.as_ref(), partial.as_ref(), binders[0]).unwrap();
}

/// Not an RFC 8448 value: Botan's TLS 1.3 test suite exports 16 bytes with label
/// "export_test_label" and context "rfc8448_rtt1" from §3's exporter master secret. A
/// cross-implementation check of [`export`].
#[test]
fn exporter_matches_botan_on_rfc8448_s3() {
    let exp = hex!("fe22f881176eda18eb8f44529e6792c50c9a3f89452f68d8ae311b4309d3cf50");
    let mut out = [0u8; 16];
    export(&P, SHA256, &exp, b"export_test_label", b"rfc8448_rtt1", &mut out).unwrap();
    assert_eq!(out, hex!("f20058a65ce0430a197944c812431c2d"));
}

/// §5 ("HelloRetryRequest"): the server asks for a secp256r1 share. The transcript through
/// ServerHello replaces ClientHello1 with the message_hash synthetic message (RFC 8446
/// §4.4.1); the handshake traffic secrets derived over it are the RFC's.
#[test]
fn rfc8448_s5_hello_retry_request_transcript() {
    let (m, _) = msgs::split_message(&HRR5).unwrap();
    assert_eq!(m.typ, ht::SERVER_HELLO);
    let hrr = msgs::ServerHello::parse(m.body).unwrap();
    assert!(hrr.is_hello_retry_request());
    assert_eq!(hrr.selected_group, Some(NamedGroup::Secp256r1.codepoint()));
    assert_eq!(hrr.key_share, None);
    assert_eq!(hrr.selected_version, Some(msgs::TLS13));
    let cookie = hrr.cookie.unwrap();
    assert_eq!(cookie.len(), 0x72);
    let (m, _) = msgs::split_message(&SH5).unwrap();
    let sh = msgs::ServerHello::parse(m.body).unwrap();
    assert!(!sh.is_hello_retry_request());
    assert_eq!(sh.key_share.unwrap().key_exchange.len(), 65);

    // The client's view: hash ClientHello1, then on the HelloRetryRequest replace it.
    let mut t = Transcript::new(&P, SHA256).unwrap();
    t.update(&CH1_5);
    t.replace_with_message_hash(&P).unwrap();
    for m in [&HRR5[..], &CH2_5, &SH5] {
        t.update(m);
    }
    let hello_hash = t.current_hash();
    assert_eq!(
        hello_hash.as_ref(),
        hex!("8aa8e828ec2f8a884fec95a3139de01c15a3daa7ff5bfc3f4bfcc21b438d7bf8")
    );
    // A stateless server's view: it kept only Hash(ClientHello1) (e.g. in the cookie).
    let ch1_hash = hash(&[&CH1_5]);
    let mut s = Transcript::from_message_hash(&P, SHA256, ch1_hash.as_ref()).unwrap();
    for m in [&HRR5[..], &CH2_5, &SH5] {
        s.update(m);
    }
    assert_eq!(s.current_hash(), hello_hash);

    let hs = EarlySecret::new(&P, SHA256, None)
        .unwrap()
        .into_handshake_secret(
            &P,
            &hex!("c142ce13ca11b5c2233652e63ad3d97844f1621fbfb9de69d547dc8fedeabeb4"),
        )
        .unwrap();
    assert_eq!(
        hs.secret(),
        hex!("ce022e5e6e81e50736d773f2d3adfce8220d049bf510f0dbfac927ef4243b148")
    );
    assert_eq!(
        hs.client_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap().as_ref(),
        hex!("158aa7ab8855073582b41d674b4055cabcc534728f659314861b4e08e2011566")
    );
    assert_eq!(
        hs.server_handshake_traffic_secret(&P, hello_hash.as_ref()).unwrap().as_ref(),
        hex!("3403e781e2af7b6508da28574f6e95a1abf162de83a97927c37672a4a0cef8a1")
    );
}

/// §5: ClientHello2 echoes the HelloRetryRequest's cookie and carries the requested share.
#[cfg(feature = "server")]
#[test]
fn rfc8448_s5_parse_client_hello2() {
    let hrr = msgs::ServerHello::parse(&HRR5[4..]).unwrap();
    let ch1 = msgs::ClientHello::parse(&CH1_5[4..]).unwrap();
    assert!(ch1.key_shares.unwrap().find(0x0017).is_none());
    let ch2 = msgs::ClientHello::parse(&CH2_5[4..]).unwrap();
    assert_eq!(ch2.cookie, hrr.cookie);
    assert_eq!(ch2.random, ch1.random);
    let share = ch2.key_shares.unwrap().find(0x0017).unwrap();
    assert_eq!(share.key_exchange.len(), 65);
    assert_eq!(share.key_exchange[0], 0x04);
}
