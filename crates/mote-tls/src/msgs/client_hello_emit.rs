//! ClientHello emission (client side).

use mote_crypto::{AeadAlgorithm, NamedGroup, SignatureScheme};

use super::extensions::{extension_type as et, KeyShareEntry};
use super::{handshake_type, LEGACY_VERSION};
use crate::codec::Out;
use crate::Error;

/// A PSK the client offers in pre_shared_key (one identity: a ticket or an external PSK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PskOffer<'a> {
    /// The identity: the ticket, or the external PSK's identity.
    pub identity: &'a [u8],
    /// RFC 8446 §4.2.11.1: (ticket age in ms + ticket_age_add) mod 2^32; 0 for an external
    /// PSK.
    pub obfuscated_ticket_age: u32,
    /// Length of the binder: the output length of the PSK's hash (32 or 48).
    pub binder_len: u8,
}

/// What goes into a ClientHello. The emitter writes legacy_version 0x0303, an empty
/// legacy_session_id (RFC 9001 §8.4), `legacy_compression_methods = [0]`,
/// supported_versions = [TLS 1.3], and each extension below that is non-empty/`Some`/`true`.
#[derive(Clone, Copy, Debug)]
pub struct ClientHelloParams<'a> {
    /// 32 fresh random bytes.
    pub random: &'a [u8; 32],
    /// Cipher suites in order of preference.
    pub cipher_suites: &'a [AeadAlgorithm],
    /// server_name host_name (a DNS name, not an IP literal — RFC 6066 §3).
    pub server_name: Option<&'a [u8]>,
    /// supported_groups in order of preference.
    pub supported_groups: &'a [NamedGroup],
    /// signature_algorithms the client verifies.
    pub signature_algorithms: &'a [SignatureScheme],
    /// key_share entries (usually one).
    pub key_shares: &'a [KeyShareEntry<'a>],
    /// ALPN protocol names in order of preference (RFC 9001 §8.1: QUIC requires ALPN).
    pub alpn: &'a [&'a [u8]],
    /// server_certificate_type: certificate types accepted from the server (RFC 7250).
    pub server_certificate_types: &'a [u8],
    /// client_certificate_type: certificate types the client can present (RFC 7250).
    pub client_certificate_types: &'a [u8],
    /// psk_key_exchange_modes (RFC 8446 §4.2.9): required with a PSK, and needed for the
    /// server to send tickets.
    pub psk_key_exchange_modes: &'a [u8],
    /// The cookie of a HelloRetryRequest, echoed.
    pub cookie: Option<&'a [u8]>,
    /// Offer 0-RTT (only with a PSK).
    pub early_data: bool,
    /// The encoded QUIC transport parameters (always sent, RFC 9001 §8.2).
    pub quic_transport_parameters: &'a [u8],
    /// A PSK to offer; pre_shared_key is then written last with a zeroed binder to be filled
    /// by [`write_binder`].
    pub psk: Option<PskOffer<'a>>,
}

/// Where an emitted ClientHello's parts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmittedClientHello {
    /// The message length, header included.
    pub len: usize,
    /// With a PSK: offset of the binders list (its 2-byte length) in the message. The
    /// message before this offset is RFC 8446 §4.2.11.2's Truncate(ClientHello).
    pub binders_offset: Option<usize>,
}

/// RFC 8446 §4.2.1: supported_versions offering TLS 1.3 only — the same bytes in every
/// ClientHello mote sends, so written as one block.
pub(super) const SUPPORTED_VERSIONS_TLS13: [u8; 7] = [0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04];

/// Writes one extension: its type, then `data` behind a `width`-byte length prefix (none
/// for 0), all behind the extension's u16 length.
fn extension(w: &mut Out<'_>, typ: u16, width: usize, data: &[u8]) {
    w.u16(typ);
    let ext = w.start(2);
    w.vec(width, data);
    w.end(ext);
}

impl ClientHelloParams<'_> {
    /// Writes the ClientHello message (header included) into `out`.
    ///
    /// Straight-line code over [`Out`], which reports the first error (a buffer too small,
    /// a field too long for its length prefix) at the end: this is the device client's
    /// largest emitter, and a branch per field doubled its size.
    pub fn emit(&self, out: &mut [u8]) -> Result<EmittedClientHello, Error> {
        let mut w = Out::new(out);
        w.u8(handshake_type::CLIENT_HELLO);
        let msg = w.start(3);
        w.u16(LEGACY_VERSION);
        w.put(self.random);
        w.u8(0); // empty legacy_session_id
        let suites = w.start(2);
        for s in self.cipher_suites {
            w.u16(s.cipher_suite());
        }
        w.end(suites);
        w.put(&[1, 0]); // legacy_compression_methods = [null]

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
        if !self.supported_groups.is_empty() {
            w.u16(et::SUPPORTED_GROUPS);
            let ext = w.start(2);
            let list = w.start(2);
            for g in self.supported_groups {
                w.u16(g.codepoint());
            }
            w.end(list);
            w.end(ext);
        }
        if !self.signature_algorithms.is_empty() {
            w.u16(et::SIGNATURE_ALGORITHMS);
            let ext = w.start(2);
            let list = w.start(2);
            for s in self.signature_algorithms {
                w.u16(s.codepoint());
            }
            w.end(list);
            w.end(ext);
        }
        if !self.key_shares.is_empty() {
            w.u16(et::KEY_SHARE);
            let ext = w.start(2);
            let list = w.start(2);
            for share in self.key_shares {
                w.u16(share.group);
                w.vec(2, share.key_exchange);
            }
            w.end(list);
            w.end(ext);
        }
        if !self.alpn.is_empty() {
            w.u16(et::ALPN);
            let ext = w.start(2);
            let list = w.start(2);
            for name in self.alpn {
                w.vec(1, name);
            }
            w.end(list);
            w.end(ext);
        }
        for (typ, types) in [
            (et::SERVER_CERTIFICATE_TYPE, self.server_certificate_types),
            (et::CLIENT_CERTIFICATE_TYPE, self.client_certificate_types),
            (et::PSK_KEY_EXCHANGE_MODES, self.psk_key_exchange_modes),
        ] {
            if !types.is_empty() {
                extension(&mut w, typ, 1, types);
            }
        }
        if let Some(cookie) = self.cookie {
            extension(&mut w, et::COOKIE, 2, cookie);
        }
        if self.early_data {
            extension(&mut w, et::EARLY_DATA, 0, &[]);
        }
        extension(&mut w, et::QUIC_TRANSPORT_PARAMETERS, 0, self.quic_transport_parameters);
        // RFC 8446 §4.2.11: pre_shared_key MUST be the last extension.
        let mut binders_offset = None;
        if let Some(psk) = self.psk {
            w.u16(et::PRE_SHARED_KEY);
            let ext = w.start(2);
            let identities = w.start(2);
            w.vec(2, psk.identity);
            w.put(&psk.obfuscated_ticket_age.to_be_bytes());
            w.end(identities);
            binders_offset = Some(w.position());
            // binders: one binder of binder_len zero bytes, filled in by write_binder.
            w.u16(u16::from(psk.binder_len) + 1);
            w.u8(psk.binder_len);
            for _ in 0..psk.binder_len {
                w.u8(0);
            }
            w.end(ext);
        }
        w.end(exts);
        w.end(msg);
        let len = w.finish()?;
        Ok(EmittedClientHello { len, binders_offset })
    }
}

/// Writes the PSK binder into a ClientHello emitted with one PSK, at the `binders_offset`
/// [`ClientHelloParams::emit`] reported. The binder's length must match the placeholder.
pub fn write_binder(message: &mut [u8], binders_offset: usize, binder: &[u8]) -> Result<(), Error> {
    // binders<33..2^16-1>: u16 list length, then u8 binder length, then the binder.
    let at = binders_offset.checked_add(3).ok_or(Error::BufferTooSmall)?;
    let end = at.checked_add(binder.len()).ok_or(Error::BufferTooSmall)?;
    let declared = message.get(at - 1).copied();
    if binder.len() > 255 || declared != Some(binder.len() as u8) {
        return Err(Error::BadLength);
    }
    message.get_mut(at..end).ok_or(Error::BufferTooSmall)?.copy_from_slice(binder);
    Ok(())
}
