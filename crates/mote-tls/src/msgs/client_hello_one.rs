//! The ClientHello of a client that offers exactly one suite (TLS_AES_128_GCM_SHA256), one
//! group (X25519, one key share) and at most one signature scheme: a device's
//! (issue 8). Everything up to the key share and psk_key_exchange_modes is the same in
//! every such ClientHello, so it is constant blocks around two
//! holes (random, key share) and two length fields patched at the end; the extensions that
//! vary (signature scheme, certificate type, server name, ALPN, cookie, early data,
//! transport parameters, PSK) follow it. RFC 8446 §4.2: "Extensions in a ClientHello may
//! appear in any order" except pre_shared_key, which stays last — so the order differs from
//! [`ClientHelloParams::emit`]'s, but the offer is the same (pinned by the tests below,
//! through the server's parser).
//!
//! [`ClientHelloParams::emit`]: super::ClientHelloParams::emit

use super::client_hello_emit::EmittedClientHello;
use super::extensions::extension_type as et;
use crate::codec::Out;
use crate::Error;

/// Offset of the random in the fixed head (after the message header and legacy_version).
const RANDOM_AT: usize = 6;
/// Offset of the extensions' u16 length in the fixed head.
const EXTENSIONS_AT: usize = 45;
/// Offset of the X25519 key share in the fixed head.
const SHARE_AT: usize = 72;
/// The length of the fixed head: up to the key share and psk_key_exchange_modes.
const HEAD_LEN: usize = 110;

/// The fixed head's bytes before the random: msg_type client_hello(1) and a u24 length
/// (RFC 8446 §4, patched), legacy_version 0x0303 (§4.1.2).
const PRE_RANDOM: [u8; RANDOM_AT] = [0x01, 0x00, 0x00, 0x00, 0x03, 0x03];

/// The fixed head's bytes between the random and the key share.
const PRE_SHARE: [u8; SHARE_AT - RANDOM_AT - 32] = [
    // RFC 8446 §4.1.2: an empty legacy_session_id (RFC 9001 §8.4), cipher_suites =
    // [TLS_AES_128_GCM_SHA256], legacy_compression_methods = [null]; then the extensions'
    // u16 length (patched).
    0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00, 0x00, 0x00,
    // RFC 8446 §4.2.1 supported_versions = [TLS 1.3].
    0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04,
    // RFC 8446 §4.2.7 supported_groups = [x25519].
    0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x1d,
    // RFC 8446 §4.2.8 key_share with one x25519 entry of 32 bytes (the share follows).
    0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20,
];

/// The fixed head's bytes after the key share: RFC 8446 §4.2.9 psk_key_exchange_modes =
/// [psk_dhe_ke].
const POST_SHARE: [u8; HEAD_LEN - SHARE_AT - 32] = [0x00, 0x2d, 0x00, 0x02, 0x01, 0x01];

/// RFC 7250 §4.2 server_certificate_type = [RawPublicKey].
const RPK: [u8; 6] = [0x00, 0x14, 0x00, 0x02, 0x01, 0x02];

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
    /// Writes the ClientHello (header included) into `out`.
    pub(crate) fn emit(&self, out: &mut [u8]) -> Result<EmittedClientHello, Error> {
        let (head, rest) = out.split_at_mut_checked(HEAD_LEN).ok_or(Error::BufferTooSmall)?;
        let head: &mut [u8; HEAD_LEN] = head.try_into().map_err(|_| Error::BufferTooSmall)?;
        head[..RANDOM_AT].copy_from_slice(&PRE_RANDOM);
        head[RANDOM_AT..RANDOM_AT + 32].copy_from_slice(self.random);
        head[RANDOM_AT + 32..SHARE_AT].copy_from_slice(&PRE_SHARE);
        head[SHARE_AT..SHARE_AT + 32].copy_from_slice(self.share);
        head[SHARE_AT + 32..].copy_from_slice(&POST_SHARE);
        let mut w = Out::new(rest);
        if let Some(scheme) = self.scheme {
            // RFC 8446 §4.2.3: signature_algorithms with the one scheme.
            let [hi, lo] = scheme.to_be_bytes();
            w.put(&[0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, hi, lo]);
        }
        if self.rpk {
            w.put(&RPK);
        }
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
        // RFC 7301 §3.1 (RFC 9001 §8.1: always sent over QUIC).
        w.u16(et::ALPN);
        let ext = w.start(2);
        let list = w.start(2);
        for name in self.alpn {
            w.vec(1, name);
        }
        w.end(list);
        w.end(ext);
        if let Some(cookie) = self.cookie {
            // RFC 8446 §4.2.2.
            w.u16(et::COOKIE);
            let ext = w.start(2);
            w.vec(2, cookie);
            w.end(ext);
        }
        if self.early_data {
            // RFC 8446 §4.2.10: empty in a ClientHello.
            w.u16(et::EARLY_DATA);
            w.u16(0);
        }
        // RFC 9001 §8.2.
        w.u16(et::QUIC_TRANSPORT_PARAMETERS);
        w.vec(2, self.quic_transport_parameters);
        // RFC 8446 §4.2.11: pre_shared_key MUST be the last extension; one identity and its
        // obfuscated_ticket_age, then the binders list.
        let mut binders_offset = None;
        if let Some((identity, obfuscated_ticket_age)) = self.psk {
            w.u16(et::PRE_SHARED_KEY);
            let ext = w.start(2);
            let identities = w.start(2);
            w.vec(2, identity);
            w.u32(obfuscated_ticket_age);
            w.end(identities);
            binders_offset = Some(HEAD_LEN + w.position());
            w.put(&ZERO_BINDER);
            w.end(ext);
        }
        let len = HEAD_LEN + w.finish()?;
        // The extensions' and the message's lengths: every inner length is below the
        // extensions', so this one check covers the u16 fields written above.
        let extensions = len - (EXTENSIONS_AT + 2);
        if extensions > 0xffff {
            return Err(Error::BadLength);
        }
        let [_, m2, m1, m0] = ((len - 4) as u32).to_be_bytes();
        head[1..4].copy_from_slice(&[m2, m1, m0]);
        head[EXTENSIONS_AT..EXTENSIONS_AT + 2].copy_from_slice(&(extensions as u16).to_be_bytes());
        Ok(EmittedClientHello { len, binders_offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general emitter's message for the same offer.
    #[cfg(feature = "server")]
    fn general(h: &OneOfferHello<'_>, out: &mut [u8]) -> Result<EmittedClientHello, Error> {
        use crate::msgs::PSK_DHE_KE;
        use crate::msgs::{certificate_type, ClientHelloParams, KeyShareEntry, PskOffer};
        use mote_crypto::{AeadAlgorithm, NamedGroup, SignatureScheme};
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

    /// Every combination of the holes: the server's parser reads the same offer from the
    /// template's message as from the general emitter's (the same fields, the same set of
    /// extensions, pre_shared_key last with its binders at the reported offset); every
    /// shorter buffer is BufferTooSmall; a field too long for its length is BadLength for
    /// both.
    #[cfg(feature = "server")]
    #[test]
    fn one_offer_hello_offers_what_the_general_emitter_does() {
        use crate::msgs::ClientHello;
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
                let (full, one) = (general(&h, &mut a), h.emit(&mut b));
                let Ok(e) = full else {
                    assert_eq!(full, Err(Error::BadLength));
                    assert_eq!(one, Err(Error::BadLength));
                    continue;
                };
                count += 1;
                let o = one.unwrap();
                assert_eq!(o.len, e.len, "{bits}");
                assert_eq!(o.binders_offset.is_some(), h.psk.is_some());
                let (a, b) = (&a[..e.len], &b[..o.len]);
                assert_eq!(b[..4], a[..4]);
                let mut pa = ClientHello::parse(&a[4..]).unwrap();
                let pb = ClientHello::parse(&b[4..]).unwrap();
                let mut ta: std::vec::Vec<u16> = pa.extensions.iter().map(|(t, _)| t).collect();
                let mut tb: std::vec::Vec<u16> = pb.extensions.iter().map(|(t, _)| t).collect();
                ta.sort_unstable();
                tb.sort_unstable();
                assert_eq!(ta, tb, "{bits}");
                pa.extensions = pb.extensions;
                assert_eq!(pa, pb, "{bits}");
                if let Some(at) = o.binders_offset {
                    assert_eq!(pb.truncated_len(o.len), Some(at));
                    assert_eq!(b[at..], a[e.binders_offset.unwrap()..]);
                }
                for n in 0..o.len {
                    let mut b = [0u8; 700];
                    assert_eq!(h.emit(&mut b[..n]), Err(Error::BufferTooSmall), "{bits} {n}");
                }
            }
        }
        assert_eq!(count, 512);
    }

    /// Extensions longer than their u16 length allows are BadLength (the one length check
    /// covers the inner ones), whatever the buffer.
    #[test]
    fn one_offer_hello_too_long_is_bad_length() {
        let tp = std::vec![0u8; 0xffff - 100];
        let h = OneOfferHello {
            random: &[1; 32],
            server_name: Some(b"mote.example"),
            scheme: Some(0x0807),
            share: &[2; 32],
            alpn: &[b"h3"],
            rpk: true,
            cookie: None,
            early_data: false,
            quic_transport_parameters: &tp,
            psk: None,
        };
        let mut out = std::vec![0u8; 0x20000];
        assert_eq!(h.emit(&mut out), Err(Error::BadLength));
        let h = OneOfferHello { quic_transport_parameters: &tp[..0xffff - 200], ..h };
        let e = h.emit(&mut out).unwrap();
        assert_eq!(out[EXTENSIONS_AT..EXTENSIONS_AT + 2], ((e.len - 47) as u16).to_be_bytes());
    }
}
