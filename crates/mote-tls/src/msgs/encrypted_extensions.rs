//! EncryptedExtensions (RFC 8446 §4.3.1).

use super::extensions::{extension_type as et, Extensions, U16List, ALLOW_ENCRYPTED_EXTENSIONS};
use crate::codec::In;
use crate::Error;

/// RFC 8446 §4.3.1: `struct { Extension extensions<0..2^16-1>; } EncryptedExtensions;`,
/// parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncryptedExtensions<'a> {
    /// Every extension, in order (unknown ones included: the client rejects those it did not
    /// offer with unsupported_extension).
    pub extensions: Extensions<'a>,
    /// server_name with empty data: the server used the client's SNI (RFC 6066 §3).
    pub server_name_acknowledged: bool,
    /// supported_groups: the server's preferences, for future connections.
    pub supported_groups: Option<U16List<'a>>,
    /// The ALPN protocol the server selected (RFC 7301 §3.1: exactly one name).
    pub alpn: Option<&'a [u8]>,
    /// client_certificate_type: the type the client must present (RFC 7250).
    pub client_certificate_type: Option<u8>,
    /// server_certificate_type: the type the server presents (RFC 7250).
    pub server_certificate_type: Option<u8>,
    /// early_data: the server accepted 0-RTT.
    pub early_data: bool,
    /// quic_transport_parameters, undecoded.
    pub quic_transport_parameters: Option<&'a [u8]>,
    /// Whether a type mote does not understand is present (a client never offered it:
    /// unsupported_extension, RFC 8446 §4.2).
    pub unknown_extension: bool,
}

impl<'a> EncryptedExtensions<'a> {
    /// Parses an EncryptedExtensions body. Extensions that the §4.2 table does not allow
    /// here (key_share, pre_shared_key, supported_versions, …) are illegal_parameter.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        // Every field read, one error check at the end (issue 8: see `In`).
        let mut r = In::new(body);
        let extensions = Extensions::read_in(&mut r, ALLOW_ENCRYPTED_EXTENSIONS);
        r.end();
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
            r.enter(data);
            match typ {
                et::SERVER_NAME => ee.server_name_acknowledged = true,
                et::SUPPORTED_GROUPS => {
                    let list = r.vec(2, 2);
                    r.check(list.len().is_multiple_of(2), Error::BadLength);
                    ee.supported_groups = Some(U16List(list));
                }
                et::ALPN => {
                    // RFC 7301 §3.1: `ProtocolName protocol_name_list<2..2^16-1>`, and the
                    // server's list "MUST contain exactly one" name (anything after the
                    // first, well formed or not, is a decode_error).
                    let names = r.vec(2, 2);
                    let rest = r.rest();
                    r.enter(names);
                    ee.alpn = Some(r.vec(1, 1));
                    let one = r.rest().is_empty();
                    r.check(one, Error::BadLength);
                    r.enter(rest);
                }
                et::CLIENT_CERTIFICATE_TYPE => ee.client_certificate_type = Some(r.u8()),
                et::SERVER_CERTIFICATE_TYPE => ee.server_certificate_type = Some(r.u8()),
                et::EARLY_DATA => ee.early_data = true,
                // Opaque here, decoded by QUIC; unknown types are not decoded at all.
                et::QUIC_TRANSPORT_PARAMETERS => {
                    ee.quic_transport_parameters = Some(data);
                    continue;
                }
                _ => {
                    ee.unknown_extension = true;
                    continue;
                }
            }
            r.end();
        }
        r.finish()?;
        Ok(ee)
    }
}

#[cfg(feature = "server")]
pub use emit::EncryptedExtensionsParams;

#[cfg(feature = "server")]
mod emit {
    use super::super::extensions::{extension_type as et, write_extension};
    use super::super::{handshake_type, start_message};
    use crate::codec::Writer;
    use crate::Error;

    /// What goes into EncryptedExtensions.
    #[derive(Clone, Copy, Debug)]
    pub struct EncryptedExtensionsParams<'a> {
        /// Acknowledge the client's server_name with an empty extension.
        pub server_name_acknowledged: bool,
        /// The selected ALPN protocol.
        pub alpn: Option<&'a [u8]>,
        /// The certificate type the client must present (RFC 7250).
        pub client_certificate_type: Option<u8>,
        /// The certificate type the server presents (RFC 7250).
        pub server_certificate_type: Option<u8>,
        /// Accept 0-RTT.
        pub early_data: bool,
        /// The encoded QUIC transport parameters (always sent, RFC 9001 §8.2).
        pub quic_transport_parameters: &'a [u8],
    }

    impl EncryptedExtensionsParams<'_> {
        /// Writes the EncryptedExtensions message (header included); returns its length.
        pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
            let mut w = Writer::new(out);
            let msg = start_message(&mut w, handshake_type::ENCRYPTED_EXTENSIONS)?;
            let exts = w.start(2)?;
            if self.server_name_acknowledged {
                write_extension(&mut w, et::SERVER_NAME, &[])?;
            }
            if let Some(name) = self.alpn {
                w.u16(et::ALPN)?;
                let ext = w.start(2)?;
                let list = w.start(2)?;
                w.vec(1, name)?;
                w.end(list)?;
                w.end(ext)?;
            }
            if let Some(t) = self.client_certificate_type {
                write_extension(&mut w, et::CLIENT_CERTIFICATE_TYPE, &[t])?;
            }
            if let Some(t) = self.server_certificate_type {
                write_extension(&mut w, et::SERVER_CERTIFICATE_TYPE, &[t])?;
            }
            if self.early_data {
                write_extension(&mut w, et::EARLY_DATA, &[])?;
            }
            write_extension(&mut w, et::QUIC_TRANSPORT_PARAMETERS, self.quic_transport_parameters)?;
            w.end(exts)?;
            w.end(msg)?;
            Ok(w.position())
        }
    }
}
