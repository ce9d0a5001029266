//! Initial secrets and keys (RFC 9001 §5.2, RFC 9369 §3.3.1).

use mote_crypto::{hkdf, AeadAlgorithm, CryptoProvider, Error, HashAlgorithm, Secret};

use super::keys::PacketKeys;
use crate::version::Version;

/// RFC 9001 §5.2: Initial packets use AEAD_AES_128_GCM with keys derived with SHA-256.
pub(crate) const INITIAL_AEAD: AeadAlgorithm = AeadAlgorithm::Aes128Gcm;
const INITIAL_HASH: HashAlgorithm = HashAlgorithm::Sha256;

/// RFC 9001 §5.2 (RFC 9369 §3.3.1 for v2's salt):
///
/// ```text
/// initial_secret = HKDF-Extract(initial_salt, client_dst_connection_id)
/// client_initial_secret = HKDF-Expand-Label(initial_secret, "client in", "", Hash.length)
/// server_initial_secret = HKDF-Expand-Label(initial_secret, "server in", "", Hash.length)
/// ```
///
/// `client_dcid` is the Destination Connection ID of the client's first Initial (after a
/// Retry, the one the Retry chose). Returns `(client, server)`; `Error::Unsupported` for a
/// version this build does not implement.
pub fn initial_secrets<P: CryptoProvider>(
    provider: &P,
    version: Version,
    client_dcid: &[u8],
) -> Result<(Secret, Secret), Error> {
    let (mut client, mut server) = (Secret::zeroed(0), Secret::zeroed(0));
    initial_secrets_into(provider, version, client_dcid, &mut client, &mut server)?;
    Ok((client, server))
}

/// [`initial_secrets`] written to `client` and `server` where the caller keeps them (issue
/// 8: no `Result` of two secrets moved on a device's connection path).
pub(crate) fn initial_secrets_into<P: CryptoProvider>(
    provider: &P,
    version: Version,
    client_dcid: &[u8],
    client: &mut Secret,
    server: &mut Secret,
) -> Result<(), Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    let initial = hkdf::extract(provider, INITIAL_HASH, &params.initial_salt, client_dcid)?;
    // The "client in"/"server in" labels are the same in v1 and v2 (RFC 9369 §3.3.2 only
    // changes the packet-protection labels).
    for (out, label) in [(client, &b"client in"[..]), (server, &b"server in"[..])] {
        *out = Secret::zeroed(INITIAL_HASH.output_len());
        hkdf::expand_label(provider, INITIAL_HASH, initial.as_ref(), label, &[], out.as_mut())?;
    }
    Ok(())
}

/// Both directions' Initial packet keys.
pub struct InitialKeys<P: CryptoProvider> {
    /// Protects packets the client sends.
    pub client: PacketKeys<P>,
    /// Protects packets the server sends.
    pub server: PacketKeys<P>,
}

/// RFC 9001 §5.2: the Initial keys of both sides for `version`, from the client's
/// Destination Connection ID. A client seals with `client` and opens with `server`; a
/// server the other way round.
pub fn initial_keys<P: CryptoProvider>(
    provider: &P,
    version: Version,
    client_dcid: &[u8],
) -> Result<InitialKeys<P>, Error> {
    let (client, server) = initial_secrets(provider, version, client_dcid)?;
    Ok(InitialKeys {
        client: PacketKeys::from_secret(provider, version, INITIAL_AEAD, client.as_ref())?,
        server: PacketKeys::from_secret(provider, version, INITIAL_AEAD, server.as_ref())?,
    })
}

impl<P: CryptoProvider> core::fmt::Debug for InitialKeys<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("InitialKeys(..)")
    }
}
