//! ServerHello and HelloRetryRequest (RFC 8446 §4.1.3, §4.1.4).

use super::extensions::{
    extension_type as et, Extensions, KeyShareEntry, ALLOW_HELLO_RETRY_REQUEST, ALLOW_SERVER_HELLO,
};
use super::LEGACY_VERSION;
use crate::codec::In;
use crate::{Alert, Error};

/// RFC 8446 §4.1.3: the random of a HelloRetryRequest, SHA-256("HelloRetryRequest").
pub const HELLO_RETRY_REQUEST_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

/// What a truncated ServerHello's random reads as (the parse fails; never used).
const NO_RANDOM: [u8; 32] = [0; 32];

/// RFC 8446 §4.1.3: a parsed ServerHello or HelloRetryRequest.
///
/// ```text
/// struct {
///     ProtocolVersion legacy_version = 0x0303;
///     Random random;
///     opaque legacy_session_id_echo<0..32>;
///     CipherSuite cipher_suite;
///     uint8 legacy_compression_method = 0;
///     Extension extensions<6..2^16-1>;
/// } ServerHello;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerHello<'a> {
    /// The server's random ([`HELLO_RETRY_REQUEST_RANDOM`] for a HelloRetryRequest).
    pub random: &'a [u8; 32],
    /// legacy_session_id_echo (must equal the ClientHello's: empty over QUIC).
    pub legacy_session_id_echo: &'a [u8],
    /// The selected cipher suite.
    pub cipher_suite: u16,
    /// Every extension, in order.
    pub extensions: Extensions<'a>,
    /// supported_versions: the selected version.
    pub selected_version: Option<u16>,
    /// ServerHello key_share: the server's share.
    pub key_share: Option<KeyShareEntry<'a>>,
    /// HelloRetryRequest key_share: the group the client must send a share for.
    pub selected_group: Option<u16>,
    /// ServerHello pre_shared_key: the index of the accepted identity.
    pub selected_psk: Option<u16>,
    /// HelloRetryRequest cookie.
    pub cookie: Option<&'a [u8]>,
}

impl<'a> ServerHello<'a> {
    /// Parses a ServerHello body; a HelloRetryRequest is recognised by its random and its
    /// extensions parsed accordingly (§4.1.4).
    ///
    /// Rejects legacy_version other than 0x0303 (protocol_version) and a non-zero
    /// legacy_compression_method (illegal_parameter); extensions are checked against the
    /// §4.2 table for ServerHello or HelloRetryRequest.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        Self::parse_hello(body).map(|(sh, _)| sh)
    }

    /// [`ServerHello::parse`], and whether it is a HelloRetryRequest (the random compared
    /// once, for the client: issue 8).
    pub(crate) fn parse_hello(body: &'a [u8]) -> Result<(Self, bool), Error> {
        // Every field read, each check recorded in wire order, one error check at the end
        // (issue 8: no early-return path per field on a device).
        let mut r = In::new(body);
        let legacy_version = r.u16();
        r.check(legacy_version == LEGACY_VERSION, Error::Alert(Alert::ProtocolVersion));
        let random = r.bytes(32).try_into().unwrap_or(&NO_RANDOM);
        let legacy_session_id_echo = r.vec(1, 0);
        r.check(legacy_session_id_echo.len() <= 32, Error::BadLength);
        let cipher_suite = r.u16();
        let compression = r.u8();
        r.check(compression == 0, Error::IllegalParameter);
        let hrr = *random == HELLO_RETRY_REQUEST_RANDOM;
        let allowed = if hrr { ALLOW_HELLO_RETRY_REQUEST } else { ALLOW_SERVER_HELLO };
        let extensions = Extensions::read_in(&mut r, allowed);
        r.end();

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
            r.enter(data);
            match typ {
                et::SUPPORTED_VERSIONS => sh.selected_version = Some(r.u16()),
                et::KEY_SHARE if hrr => sh.selected_group = Some(r.u16()),
                et::KEY_SHARE => {
                    sh.key_share = Some(KeyShareEntry { group: r.u16(), key_exchange: r.vec(2, 1) })
                }
                et::PRE_SHARED_KEY => sh.selected_psk = Some(r.u16()),
                et::COOKIE => sh.cookie = Some(r.vec(2, 1)),
                // Unknown types: nothing to decode (allowed here; the client decides).
                _ => continue,
            }
            r.end();
        }
        r.finish()?;
        Ok((sh, hrr))
    }

    /// RFC 8446 §4.1.3: whether this is a HelloRetryRequest.
    pub fn is_hello_retry_request(&self) -> bool {
        *self.random == HELLO_RETRY_REQUEST_RANDOM
    }
}

#[cfg(feature = "server")]
pub use emit::{HelloRetryRequestParams, ServerHelloParams};

#[cfg(feature = "server")]
mod emit {
    use mote_crypto::{AeadAlgorithm, NamedGroup};

    use super::super::extensions::{extension_type as et, KeyShareEntry};
    use super::super::{handshake_type, start_message, LEGACY_VERSION, TLS13};
    use super::HELLO_RETRY_REQUEST_RANDOM;
    use crate::codec::Writer;
    use crate::Error;

    /// What goes into a ServerHello: supported_versions = TLS 1.3 is always written.
    #[derive(Clone, Copy, Debug)]
    pub struct ServerHelloParams<'a> {
        /// 32 fresh random bytes.
        pub random: &'a [u8; 32],
        /// The ClientHello's legacy_session_id, echoed.
        pub legacy_session_id_echo: &'a [u8],
        /// The selected suite.
        pub cipher_suite: AeadAlgorithm,
        /// The server's key share (always present with psk_dhe_ke or plain (EC)DHE).
        pub key_share: Option<KeyShareEntry<'a>>,
        /// The index of the accepted PSK identity.
        pub selected_psk: Option<u16>,
    }

    /// What goes into a HelloRetryRequest (RFC 8446 §4.1.4).
    #[derive(Clone, Copy, Debug)]
    pub struct HelloRetryRequestParams<'a> {
        /// The ClientHello's legacy_session_id, echoed.
        pub legacy_session_id_echo: &'a [u8],
        /// The selected suite.
        pub cipher_suite: AeadAlgorithm,
        /// The group the client must send a share for.
        pub selected_group: Option<NamedGroup>,
        /// A cookie for the client to echo (e.g. a stateless server's transcript hash).
        pub cookie: Option<&'a [u8]>,
    }

    fn write_hello(
        out: &mut [u8],
        random: &[u8; 32],
        session_id: &[u8],
        suite: AeadAlgorithm,
        extensions: impl FnOnce(&mut Writer<'_>) -> Result<(), Error>,
    ) -> Result<usize, Error> {
        let mut w = Writer::new(out);
        let msg = start_message(&mut w, handshake_type::SERVER_HELLO)?;
        w.u16(LEGACY_VERSION)?;
        w.put(random)?;
        if session_id.len() > 32 {
            return Err(Error::BadLength);
        }
        w.vec(1, session_id)?;
        w.u16(suite.cipher_suite())?;
        w.u8(0)?;
        let exts = w.start(2)?;
        w.u16(et::SUPPORTED_VERSIONS)?;
        w.vec(2, &TLS13.to_be_bytes())?;
        extensions(&mut w)?;
        w.end(exts)?;
        w.end(msg)?;
        Ok(w.position())
    }

    impl ServerHelloParams<'_> {
        /// Writes the ServerHello message (header included); returns its length.
        pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
            write_hello(out, self.random, self.legacy_session_id_echo, self.cipher_suite, |w| {
                if let Some(share) = &self.key_share {
                    w.u16(et::KEY_SHARE)?;
                    let ext = w.start(2)?;
                    share.write(w)?;
                    w.end(ext)?;
                }
                if let Some(index) = self.selected_psk {
                    w.u16(et::PRE_SHARED_KEY)?;
                    w.vec(2, &index.to_be_bytes())?;
                }
                Ok(())
            })
        }
    }

    impl HelloRetryRequestParams<'_> {
        /// Writes the HelloRetryRequest message (header included); returns its length.
        pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
            write_hello(
                out,
                &HELLO_RETRY_REQUEST_RANDOM,
                self.legacy_session_id_echo,
                self.cipher_suite,
                |w| {
                    if let Some(group) = self.selected_group {
                        w.u16(et::KEY_SHARE)?;
                        w.vec(2, &group.codepoint().to_be_bytes())?;
                    }
                    if let Some(cookie) = self.cookie {
                        w.u16(et::COOKIE)?;
                        let ext = w.start(2)?;
                        w.vec(2, cookie)?;
                        w.end(ext)?;
                    }
                    Ok(())
                },
            )
        }
    }
}
