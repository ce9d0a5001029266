//! Retry packets and their integrity tag (RFC 9000 §17.2.5, RFC 9001 §5.8, RFC 9369 §3.3.3).
//!
//! The tag is AES-128-GCM with a fixed, per-version key and nonce, over an empty plaintext
//! with the "Retry pseudo-packet" as associated data:
//!
//! ```text
//! Retry Pseudo-Packet {
//!   ODCID Length (8), Original Destination Connection ID (0..160),
//!   Header Form (1) = 1, Fixed Bit (1) = 1, Long Packet Type (2) = 3, Unused (4),
//!   Version (32), DCID Len (8), Destination Connection ID (0..160),
//!   SCID Len (8), Source Connection ID (0..160), Retry Token (..),
//! }
//! ```
//!
//! Computing or checking a tag over a received packet feeds the pseudo-packet to the
//! provider's GMAC in its parts (ODCID length and ODCID, then the packet), so no
//! packet-sized copy is made ([`CryptoProvider::aes128_gmac`]). Emitting builds the
//! pseudo-packet in its output buffer and shifts it ([`Retry::emit`]).

use mote_crypto::{AeadAlgorithm, AeadKey as _, CryptoProvider, Error, TAG_LEN};
use mote_tls::ct_eq;

use super::header::{Retry, FIXED_BIT, FORM_BIT};
use super::LongType;
use crate::cid::MAX_CID_LEN;
use crate::coding::Writer;
use crate::error::WireError;
use crate::version::Version;

/// RFC 9001 §5.8: the tag is AEAD_AES_128_GCM over an empty plaintext with the
/// pseudo-packet as associated data, under the version's fixed key and nonce (RFC 9369
/// §3.3.3 for v2's).
fn tag_over<P: CryptoProvider>(
    provider: &P,
    version: Version,
    pseudo: &[u8],
) -> Result<[u8; TAG_LEN], Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    let key = provider.aead_key(AeadAlgorithm::Aes128Gcm, &params.retry_key)?;
    key.seal_in_place(&params.retry_nonce, pseudo, &mut [])
}

/// Computes the Retry Integrity Tag (RFC 9001 §5.8) for `retry_without_tag` (the Retry
/// packet up to, not including, the tag) sent in response to a client Initial whose
/// Destination Connection ID was `odcid`: the pseudo-packet's parts go to the provider's
/// GMAC (same key, nonce and associated data as [`tag_over`], without the contiguous copy).
pub fn retry_integrity_tag<P: CryptoProvider>(
    provider: &P,
    version: Version,
    odcid: &[u8],
    retry_without_tag: &[u8],
) -> Result<[u8; TAG_LEN], Error> {
    if odcid.len() > MAX_CID_LEN {
        return Err(Error::BadLength);
    }
    let params = version.params().ok_or(Error::Unsupported)?;
    let odcid_len = [odcid.len() as u8];
    provider.aes128_gmac(
        &params.retry_key,
        &params.retry_nonce,
        &[&odcid_len, odcid, retry_without_tag],
    )
}

/// Verifies a received Retry packet (the whole packet, tag included) against the
/// Destination Connection ID the client sent first (RFC 9001 §5.8: "Retry packets with an
/// invalid Retry Integrity Tag" are discarded, RFC 9000 §17.2.5.2).
///
/// The expected tag is computed and compared with the received one in constant time. A
/// packet shorter than a tag, or an ODCID longer than 20 bytes, cannot be verified and is
/// [`WireError::Truncated`] or [`WireError::DecryptFailed`].
pub fn verify_retry<P: CryptoProvider>(
    provider: &P,
    version: Version,
    odcid: &[u8],
    packet: &[u8],
) -> Result<(), WireError> {
    let body_len = packet.len().checked_sub(TAG_LEN).ok_or(WireError::Truncated)?;
    let (body, tag) = packet.split_at_checked(body_len).ok_or(WireError::Truncated)?;
    let expected = retry_integrity_tag(provider, version, odcid, body)
        .map_err(|_| WireError::DecryptFailed)?;
    // The tag is public data under a public key, but an early-exit comparison would still
    // let an attacker forge one byte at a time against a timing oracle.
    if ct_eq(&expected, tag) {
        Ok(())
    } else {
        Err(WireError::DecryptFailed)
    }
}

impl Retry<'_> {
    /// Writes this Retry packet with its integrity tag into `out` and returns its length.
    ///
    /// `unused_bits` fills the four Unused bits of the first byte (RFC 9000 §17.2.5:
    /// arbitrary; a random value defeats ossification); `odcid` is the Destination
    /// Connection ID of the client's Initial. `out` needs `1 + odcid.len()` bytes beyond the
    /// packet, used to build the pseudo-packet in place. The token must not be empty and
    /// the connection IDs at most 20 bytes.
    pub fn emit<P: CryptoProvider>(
        &self,
        provider: &P,
        unused_bits: u8,
        odcid: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        if self.token.is_empty()
            || self.dcid.len() > MAX_CID_LEN
            || self.scid.len() > MAX_CID_LEN
            || odcid.len() > MAX_CID_LEN
        {
            return Err(Error::BadLength);
        }
        let prefix = 1 + odcid.len();
        let mut w = Writer::new(out);
        let e = |_| Error::BufferTooSmall;
        // The pseudo-packet's ODCID prefix, then the packet itself.
        w.put_u8(odcid.len() as u8).map_err(e)?;
        w.put_slice(odcid).map_err(e)?;
        // RFC 9000 §17.2.5.1: Header Form (1) = 1, Fixed Bit (1) = 1, Long Packet Type (2),
        // Unused (4); the type bits per version (RFC 9369 §3.2).
        let first = FORM_BIT
            | FIXED_BIT
            | (self.version.long_type_bits(LongType::Retry) << 4)
            | (unused_bits & 0x0f);
        w.put_u8(first).map_err(e)?;
        w.put_u32(self.version.0).map_err(e)?;
        w.put_u8(self.dcid.len() as u8).map_err(e)?;
        w.put_slice(self.dcid).map_err(e)?;
        w.put_u8(self.scid.len() as u8).map_err(e)?;
        w.put_slice(self.scid).map_err(e)?;
        w.put_slice(self.token).map_err(e)?;
        let pseudo_len = w.position();
        w.reserve(TAG_LEN).map_err(e)?;
        let out = w.into_inner();
        let tag =
            tag_over(provider, self.version, out.get(..pseudo_len).ok_or(Error::BufferTooSmall)?)?;
        // Drop the ODCID prefix and append the tag.
        out.copy_within(prefix..pseudo_len, 0);
        let body_len = pseudo_len - prefix;
        out.get_mut(body_len..body_len + TAG_LEN)
            .ok_or(Error::BufferTooSmall)?
            .copy_from_slice(&tag);
        Ok(body_len + TAG_LEN)
    }
}
