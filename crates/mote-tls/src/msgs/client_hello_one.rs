//! The ClientHello of a client that offers exactly one suite (TLS_AES_128_GCM_SHA256), one
//! group (X25519, one key share) and at most one signature scheme: a device's
//! (issue 8). Its offer lists are constants, so the message is a few constant blocks around
//! the holes (random, key share, server name, ALPN, cookie, transport parameters, PSK) —
//! the same bytes, in the same order, as [`ClientHelloParams::emit`] writes for that offer
//! (pinned by the tests below), without its per-list loops and length prefixes.
//!
//! [`ClientHelloParams::emit`]: super::ClientHelloParams::emit

use super::client_hello_emit::{EmittedClientHello, SUPPORTED_VERSIONS_TLS13};
use super::extensions::extension_type as et;
use super::handshake_type;
use crate::codec::Out;
use crate::Error;

/// RFC 8446 §4.1.2: legacy_version 0x0303 (the random follows).
const LEGACY_VERSION: [u8; 2] = [0x03, 0x03];

/// RFC 8446 §4.1.2 (and RFC 9001 §8.4): an empty legacy_session_id, cipher_suites =
/// [TLS_AES_128_GCM_SHA256], legacy_compression_methods = [null].
const SESSION_SUITES_COMPRESSION: [u8; 7] = [0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00];

/// RFC 8446 §4.2.7 supported_groups = [x25519], then the head of §4.2.8 key_share with one
/// x25519 entry (its 32-byte key written after it); signature_algorithms (§4.2.3) with the
/// one scheme goes between the two.
const GROUPS_SHARE: [u8; 18] = [
    0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x1d, // supported_groups
    0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, // key_share
];

/// RFC 7250 §4.2 server_certificate_type = [RawPublicKey], then RFC 8446 §4.2.9
/// psk_key_exchange_modes = [psk_dhe_ke]. Without a pinned raw public key the first 6 bytes
/// are left out.
const RPK_PSK_MODES: [u8; 12] =
    [0x00, 0x14, 0x00, 0x02, 0x01, 0x02, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01];

/// RFC 8446 §4.2.11: the binders list with one zeroed SHA-256 binder, filled in by
/// [`super::write_binder`].
const ZERO_BINDER: [u8; 35] = {
    let mut b = [0; 35];
    b[1] = 33;
    b[2] = 32;
    b
};

/// What varies in a one-offer ClientHello.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OneOfferHello<'a> {
    /// 32 fresh random bytes.
    pub random: &'a [u8; 32],
    /// server_name host_name, if any.
    pub server_name: Option<&'a [u8]>,
    /// The one signature_algorithms scheme offered (its codepoint), if any.
    pub scheme: Option<u16>,
    /// The X25519 key share.
    pub share: &'a [u8; 32],
    /// ALPN protocol names in order of preference.
    pub alpn: &'a [&'a [u8]],
    /// server_certificate_type = [RawPublicKey] is offered.
    pub rpk: bool,
    /// The cookie of a HelloRetryRequest, echoed.
    pub cookie: Option<&'a [u8]>,
    /// Offer 0-RTT.
    pub early_data: bool,
    /// The encoded QUIC transport parameters.
    pub quic_transport_parameters: &'a [u8],
    /// A SHA-256 PSK: its identity and obfuscated_ticket_age.
    pub psk: Option<(&'a [u8], u32)>,
}

impl OneOfferHello<'_> {
    /// Writes the ClientHello (header included) into `out`: the bytes
    /// [`super::ClientHelloParams::emit`] writes for the same offer, and the same first error.
    pub(crate) fn emit(&self, out: &mut [u8]) -> Result<EmittedClientHello, Error> {
        let mut w = Out::new(out);
        let msg = w.start_message(handshake_type::CLIENT_HELLO);
        w.put(&LEGACY_VERSION);
        w.put(self.random);
        w.put(&SESSION_SUITES_COMPRESSION);
        let exts = w.start(2);
        w.put(&SUPPORTED_VERSIONS_TLS13);
        if let Some(host) = self.server_name {
            // RFC 6066 §3: ServerNameList with one host_name(0) entry.
            w.u16(et::SERVER_NAME);
            let ext = w.start(2);
            let list = w.start(2);
            w.u8(0);
            w.vec(2, host);
            w.end(list);
            w.end(ext);
        }
        let (groups, share_head) = GROUPS_SHARE.split_at(8);
        w.put(groups);
        if let Some(scheme) = self.scheme {
            let [hi, lo] = scheme.to_be_bytes();
            w.put(&[0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, hi, lo]);
        }
        w.put(share_head);
        w.put(self.share);
        // RFC 7301 §3.1 (RFC 9001 §8.1: always sent over QUIC).
        w.u16(et::ALPN);
        let ext = w.start(2);
        let list = w.start(2);
        for name in self.alpn {
            w.vec(1, name);
        }
        w.end(list);
        w.end(ext);
        w.put(if self.rpk { &RPK_PSK_MODES } else { &RPK_PSK_MODES[6..] });
        if let Some(cookie) = self.cookie {
            w.u16(et::COOKIE);
            let ext = w.start(2);
            w.vec(2, cookie);
            w.end(ext);
        }
        if self.early_data {
            w.u16(et::EARLY_DATA);
            w.u16(0);
        }
        w.u16(et::QUIC_TRANSPORT_PARAMETERS);
        w.vec(2, self.quic_transport_parameters);
        // RFC 8446 §4.2.11: pre_shared_key MUST be the last extension.
        let mut binders_offset = None;
        if let Some((identity, obfuscated_ticket_age)) = self.psk {
            w.u16(et::PRE_SHARED_KEY);
            let ext = w.start(2);
            let identities = w.start(2);
            w.vec(2, identity);
            w.u32(obfuscated_ticket_age);
            w.end(identities);
            binders_offset = Some(w.position());
            w.put(&ZERO_BINDER);
            w.end(ext);
        }
        w.end(exts);
        w.end(msg);
        let len = w.finish()?;
        Ok(EmittedClientHello { len, binders_offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgs::{certificate_type, ClientHelloParams, KeyShareEntry, PskOffer, PSK_DHE_KE};
    use mote_crypto::{AeadAlgorithm, NamedGroup, SignatureScheme};

    /// The general emitter's message for the same offer.
    fn general(h: &OneOfferHello<'_>, out: &mut [u8]) -> Result<EmittedClientHello, Error> {
        let share =
            [KeyShareEntry { group: NamedGroup::X25519.codepoint(), key_exchange: h.share }];
        let rpk = [certificate_type::RAW_PUBLIC_KEY];
        ClientHelloParams {
            random: h.random,
            cipher_suites: &[AeadAlgorithm::Aes128Gcm],
            server_name: h.server_name,
            supported_groups: &[NamedGroup::X25519],
            signature_algorithms: match h.scheme {
                Some(0x0807) => &[SignatureScheme::Ed25519],
                Some(0x0403) => &[SignatureScheme::EcdsaSecp256r1Sha256],
                _ => &[],
            },
            key_shares: &share,
            alpn: h.alpn,
            server_certificate_types: if h.rpk { &rpk } else { &[] },
            client_certificate_types: &[],
            psk_key_exchange_modes: &[PSK_DHE_KE],
            cookie: h.cookie,
            early_data: h.early_data,
            quic_transport_parameters: h.quic_transport_parameters,
            psk: h.psk.map(|(identity, obfuscated_ticket_age)| PskOffer {
                identity,
                obfuscated_ticket_age,
                binder_len: 32,
            }),
        }
        .emit(out)
    }

    /// Every combination of the holes, and every buffer length up to the message's: the
    /// same bytes and the same result as the general emitter.
    #[test]
    fn one_offer_hello_equals_the_general_emitter() {
        let random = [0x5a; 32];
        let share = [0xc3; 32];
        let long_name = [b'x'; 256];
        let alpns: [&[&[u8]]; 3] = [&[b"h3"], &[b"h3", b"mote/1"], &[b"h3", &long_name]];
        let mut count = 0;
        for bits in 0u32..256 {
            for alpn in alpns {
                let h = OneOfferHello {
                    random: &random,
                    server_name: (bits & 1 != 0).then_some(b"mote.example".as_slice()),
                    scheme: match (bits & 2 != 0, bits & 128 != 0) {
                        (false, _) => None,
                        (true, false) => Some(0x0807),
                        (true, true) => Some(0x0403),
                    },
                    share: &share,
                    alpn,
                    rpk: bits & 4 != 0,
                    cookie: (bits & 8 != 0).then_some(b"cookie-bytes".as_slice()),
                    early_data: bits & 16 != 0,
                    quic_transport_parameters: if bits & 32 != 0 {
                        b"\x0f\x08client-tp"
                    } else {
                        b""
                    },
                    psk: (bits & 64 != 0).then_some((b"ticket-identity".as_slice(), 0x0102_0304)),
                };
                let mut a = [0u8; 700];
                let mut b = [0u8; 700];
                let full = general(&h, &mut a);
                assert_eq!(h.emit(&mut b), full);
                assert_eq!(a, b);
                if let Ok(e) = full {
                    count += 1;
                    assert_eq!(e.binders_offset.is_some(), h.psk.is_some());
                    for n in 0..e.len {
                        let (mut a, mut b) = ([0u8; 700], [0u8; 700]);
                        assert_eq!(h.emit(&mut b[..n]), general(&h, &mut a[..n]), "{bits} {n}");
                        assert_eq!(h.emit(&mut b[..n]), Err(Error::BufferTooSmall));
                    }
                } else {
                    assert_eq!(full, Err(Error::BadLength));
                }
            }
        }
        assert_eq!(count, 512);
    }
}
