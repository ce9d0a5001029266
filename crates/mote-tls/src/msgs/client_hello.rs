//! ClientHello parsing (server side).

use super::extensions::{
    extension_type as et, read_server_name, Extensions, KeyShares, OfferedPsks, ProtocolNames,
    U16List, ALLOW_CLIENT_HELLO,
};
use super::read_session_id;
use crate::codec::Reader;
use crate::{Alert, Error};

/// RFC 8446 §4.1.2: a parsed ClientHello, borrowing the received bytes.
///
/// ```text
/// struct {
///     ProtocolVersion legacy_version = 0x0303;
///     Random random;
///     opaque legacy_session_id<0..32>;
///     CipherSuite cipher_suites<2..2^16-2>;
///     opaque legacy_compression_methods<1..2^8-1>;
///     Extension extensions<8..2^16-1>;
/// } ClientHello;
/// ```
///
/// The known extensions are parsed (and syntax-checked) into the typed fields; all
/// extensions, unknown ones included, remain available through [`ClientHello::extensions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientHello<'a> {
    /// legacy_version. Version negotiation uses supported_versions only (RFC 8446 §4.2.1).
    pub legacy_version: u16,
    /// The client's 32 random bytes.
    pub random: &'a [u8; 32],
    /// legacy_session_id. A QUIC server should treat a non-empty one as PROTOCOL_VIOLATION
    /// (RFC 9001 §8.4: clients MUST NOT use TLS middlebox compatibility mode).
    pub legacy_session_id: &'a [u8],
    /// The offered cipher suites.
    pub cipher_suites: U16List<'a>,
    /// Every extension, in order.
    pub extensions: Extensions<'a>,
    /// server_name: the host_name, if the extension carried one.
    pub server_name: Option<&'a [u8]>,
    /// supported_groups.
    pub supported_groups: Option<U16List<'a>>,
    /// signature_algorithms.
    pub signature_algorithms: Option<U16List<'a>>,
    /// application_layer_protocol_negotiation.
    pub alpn: Option<ProtocolNames<'a>>,
    /// client_certificate_type: the types the client can present (RFC 7250).
    pub client_certificate_types: Option<&'a [u8]>,
    /// server_certificate_type: the types the client accepts from the server (RFC 7250).
    pub server_certificate_types: Option<&'a [u8]>,
    /// pre_shared_key (checked to be the last extension).
    pub pre_shared_key: Option<OfferedPsks<'a>>,
    /// early_data was offered.
    pub early_data: bool,
    /// supported_versions.
    pub supported_versions: Option<U16List<'a>>,
    /// cookie (echoed from a HelloRetryRequest).
    pub cookie: Option<&'a [u8]>,
    /// psk_key_exchange_modes.
    pub psk_key_exchange_modes: Option<&'a [u8]>,
    /// key_share.
    pub key_shares: Option<KeyShares<'a>>,
    /// quic_transport_parameters, undecoded (the QUIC layer parses them).
    pub quic_transport_parameters: Option<&'a [u8]>,
}

impl<'a> ClientHello<'a> {
    /// Parses a ClientHello body (the bytes after the handshake header).
    ///
    /// Beyond syntax it enforces: legacy_compression_methods is exactly `[0]` (RFC 8446
    /// §4.1.2, illegal_parameter), no extension the ClientHello must not carry, no duplicate
    /// extension, pre_shared_key last (§4.2.11, illegal_parameter) and accompanied by
    /// psk_key_exchange_modes (§4.2.9, missing_extension), and as many PSK binders as
    /// identities.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(body);
        let legacy_version = r.u16()?;
        let random = r.array::<32>()?;
        let legacy_session_id = read_session_id(&mut r)?;
        let cipher_suites = U16List(r.vec_u16(2, 2)?);
        // RFC 8446 §4.1.2: "For every TLS 1.3 ClientHello, this vector MUST contain exactly
        // one byte, set to zero ... the server MUST abort the handshake with an
        // "illegal_parameter" alert."
        if r.vec(1, 1)? != [0] {
            return Err(Error::IllegalParameter);
        }
        let extensions = Extensions::read(&mut r, ALLOW_CLIENT_HELLO)?;
        r.finish()?;

        let mut ch = ClientHello {
            legacy_version,
            random,
            legacy_session_id,
            cipher_suites,
            extensions,
            server_name: None,
            supported_groups: None,
            signature_algorithms: None,
            alpn: None,
            client_certificate_types: None,
            server_certificate_types: None,
            pre_shared_key: None,
            early_data: false,
            supported_versions: None,
            cookie: None,
            psk_key_exchange_modes: None,
            key_shares: None,
            quic_transport_parameters: None,
        };
        for (typ, data) in extensions.iter() {
            let mut d = Reader::new(data);
            match typ {
                et::SERVER_NAME => ch.server_name = read_server_name(&mut d)?,
                et::SUPPORTED_GROUPS => ch.supported_groups = Some(U16List(d.vec_u16(2, 2)?)),
                et::SIGNATURE_ALGORITHMS => {
                    ch.signature_algorithms = Some(U16List(d.vec_u16(2, 2)?))
                }
                et::ALPN => ch.alpn = Some(ProtocolNames::read(&mut d)?),
                et::CLIENT_CERTIFICATE_TYPE => ch.client_certificate_types = Some(d.vec(1, 1)?),
                et::SERVER_CERTIFICATE_TYPE => ch.server_certificate_types = Some(d.vec(1, 1)?),
                et::PRE_SHARED_KEY => ch.pre_shared_key = Some(OfferedPsks::read(&mut d)?),
                et::EARLY_DATA => ch.early_data = true,
                et::SUPPORTED_VERSIONS => ch.supported_versions = Some(U16List(d.vec_u16(1, 2)?)),
                et::COOKIE => ch.cookie = Some(d.vec(2, 1)?),
                et::PSK_KEY_EXCHANGE_MODES => ch.psk_key_exchange_modes = Some(d.vec(1, 1)?),
                et::KEY_SHARE => ch.key_shares = Some(KeyShares::read(&mut d)?),
                et::QUIC_TRANSPORT_PARAMETERS => {
                    ch.quic_transport_parameters = Some(d.bytes(data.len())?)
                }
                _ => {
                    d.bytes(data.len())?;
                }
            }
            d.finish()?;
        }
        // RFC 8446 §4.2.11: "The "pre_shared_key" extension MUST be the last extension in the
        // ClientHello ... Servers MUST check that it is the last extension and otherwise fail
        // the handshake with an "illegal_parameter" alert."
        if ch.pre_shared_key.is_some() {
            if extensions.last_type() != Some(et::PRE_SHARED_KEY) {
                return Err(Error::IllegalParameter);
            }
            // RFC 8446 §4.2.9: "If clients offer "pre_shared_key" without a
            // "psk_key_exchange_modes" extension, servers MUST abort the handshake."
            // (§9.2 names the alert: missing_extension.)
            if ch.psk_key_exchange_modes.is_none() {
                return Err(Error::Alert(Alert::MissingExtension));
            }
        }
        Ok(ch)
    }

    /// RFC 8446 §4.2.11.2: the length of the ClientHello message (header included, `msg_len`
    /// bytes in all) truncated before its binders list — the prefix the binders are computed
    /// over ([`crate::Transcript::hash_with`]). `None` without a pre_shared_key extension.
    pub fn truncated_len(&self, msg_len: usize) -> Option<usize> {
        msg_len.checked_sub(self.pre_shared_key?.binders_wire_len())
    }
}
