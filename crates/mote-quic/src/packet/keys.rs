//! Packet protection keys (RFC 9001 §5.1, §5.3, §6.1; RFC 9369 §3.3.2).

use mote_crypto::{
    hkdf, AeadAlgorithm, AeadKey as _, CryptoProvider, Error, HashAlgorithm, Secret, NONCE_LEN,
    TAG_LEN,
};

use crate::error::WireError;
use crate::version::Version;

/// RFC 8446 §7.1 as used by RFC 9001 §5.1: HKDF-Expand-Label(secret, label, "", len).
pub(crate) fn expand<P: CryptoProvider>(
    provider: &P,
    hash: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    len: usize,
) -> Result<Secret, Error> {
    let mut out = Secret::zeroed(len);
    hkdf::expand_label(provider, hash, secret, label, &[], out.as_mut())?;
    Ok(out)
}

/// The raw key, IV and header-protection key derived from a traffic secret. The keys are
/// erased on drop (each a [`Secret`]).
pub(crate) struct KeyMaterial {
    pub(crate) key: Secret,
    pub(crate) iv: [u8; NONCE_LEN],
    pub(crate) hp: Secret,
}

impl KeyMaterial {
    /// RFC 9001 §5.1: "The current encryption level secret and the label "quic key" are
    /// input to the KDF to produce the AEAD key; the label "quic iv" is used to derive the
    /// Initialization Vector (IV) ... The header protection key uses the "quic hp" label."
    /// RFC 9369 §3.3.2: v2 uses "quicv2 key", "quicv2 iv" and "quicv2 hp". The KDF is
    /// HKDF-Expand-Label with the cipher suite's hash; key lengths are the AEAD's.
    pub(crate) fn derive<P: CryptoProvider>(
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        secret: &[u8],
    ) -> Result<Self, Error> {
        let params = version.params().ok_or(Error::Unsupported)?;
        let (key, iv) = key_and_iv(provider, version, alg, secret)?;
        let hp = expand(provider, alg.hash(), secret, params.hp_label, alg.key_len())?;
        Ok(Self { key, iv, hp })
    }
}

/// RFC 9001 §5.1, §6.1: the AEAD key ("quic key") and IV ("quic iv") of a traffic secret,
/// with the version's labels: what a key update re-derives (not the header-protection key).
pub(crate) fn key_and_iv<P: CryptoProvider>(
    provider: &P,
    version: Version,
    alg: AeadAlgorithm,
    secret: &[u8],
) -> Result<(Secret, [u8; NONCE_LEN]), Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    let hash = alg.hash();
    let key = expand(provider, hash, secret, params.key_label, alg.key_len())?;
    let iv = expand(provider, hash, secret, params.iv_label, NONCE_LEN)?;
    let iv: [u8; NONCE_LEN] = iv.as_ref().try_into().map_err(|_| Error::BadLength)?;
    Ok((key, iv))
}

/// RFC 9001 §6.1: the secret of the next key phase,
/// `secret_<n+1> = HKDF-Expand-Label(secret_<n>, "quic ku", "", Hash.length)` ("quicv2 ku"
/// for v2, RFC 9369 §3.3.2). Only the AEAD key and IV are re-derived from it
/// ([`PacketKey::from_secret`]); the header-protection key is not updated.
pub fn next_secret<P: CryptoProvider>(
    provider: &P,
    version: Version,
    hash: HashAlgorithm,
    secret: &[u8],
) -> Result<Secret, Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    expand(provider, hash, secret, params.ku_label, hash.output_len())
}

/// An AEAD packet-protection key and its IV (RFC 9001 §5.3): the payload half of packet
/// protection. It is self-contained, so the AEAD step can run apart from header protection
/// (e.g. batched across connections by an offload engine) via [`PacketKey::seal`] and
/// [`PacketKey::open`] with (packet number, header bytes, payload bytes).
pub struct PacketKey<P: CryptoProvider> {
    pub(crate) key: P::AeadKey,
    pub(crate) iv: [u8; NONCE_LEN],
}

impl<P: CryptoProvider> PacketKey<P> {
    /// Builds a key from raw key bytes (`alg.key_len()` long) and a 12-byte IV.
    pub fn new(provider: &P, alg: AeadAlgorithm, key: &[u8], iv: &[u8]) -> Result<Self, Error> {
        let iv: [u8; NONCE_LEN] = iv.try_into().map_err(|_| Error::BadLength)?;
        Ok(Self { key: provider.aead_key(alg, key)?, iv })
    }

    /// RFC 9001 §5.1: derives the key ("quic key") and IV ("quic iv") from a traffic
    /// secret, with the version's labels. Also the way to build the next key phase's key
    /// from [`next_secret`] (RFC 9001 §6).
    pub fn from_secret(
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        secret: &[u8],
    ) -> Result<Self, Error> {
        let params = version.params().ok_or(Error::Unsupported)?;
        let hash = alg.hash();
        let key = expand(provider, hash, secret, params.key_label, alg.key_len())?;
        let iv = expand(provider, hash, secret, params.iv_label, NONCE_LEN)?;
        Self::new(provider, alg, key.as_ref(), iv.as_ref())
    }

    /// The AEAD algorithm.
    pub fn algorithm(&self) -> AeadAlgorithm {
        self.key.algorithm()
    }

    /// RFC 9001 §5.3: "The 62 bits of the reconstructed QUIC packet number in network byte
    /// order are left-padded with zeros to the size of the IV. The exclusive OR of the
    /// padded packet number and the IV forms the AEAD nonce."
    pub fn nonce(&self, pn: u64) -> [u8; NONCE_LEN] {
        let mut nonce = self.iv;
        for (n, p) in nonce[NONCE_LEN - 8..].iter_mut().zip(pn.to_be_bytes()) {
            *n ^= p;
        }
        nonce
    }

    /// Encrypts `payload` in place and returns the tag. RFC 9001 §5.3: "The associated data,
    /// A, for the AEAD is the contents of the QUIC header, starting from the first byte of
    /// either the short or long header, up to and including the unprotected packet number."
    /// So `header` must be the unprotected header; header protection is applied afterwards.
    pub fn seal(&self, pn: u64, header: &[u8], payload: &mut [u8]) -> Result<[u8; TAG_LEN], Error> {
        #[cfg(fuzzing)]
        {
            // Fuzzing build (see `crate::packet::PROTECTION_BYPASSED`): plaintext, zero tag.
            let _ = (pn, header, payload);
            Ok([0; TAG_LEN])
        }
        #[cfg(not(fuzzing))]
        self.key.seal_in_place(&self.nonce(pn), header, payload)
    }

    /// Checks `tag` and decrypts `payload` in place (the inverse of [`PacketKey::seal`]);
    /// `header` is the header with protection already removed. On failure `payload` holds
    /// garbage and the packet must be dropped.
    pub fn open(
        &self,
        pn: u64,
        header: &[u8],
        payload: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), Error> {
        #[cfg(fuzzing)]
        {
            // Fuzzing build: the payload is plaintext and any tag is accepted.
            let _ = (pn, header, payload, tag);
            Ok(())
        }
        #[cfg(not(fuzzing))]
        self.key.open_in_place(&self.nonce(pn), header, payload, tag)
    }

    /// [`PacketKey::seal`] on a whole packet: `packet` is the unprotected header
    /// (`header_len` bytes, through the packet number), the plaintext, and [`TAG_LEN`] bytes
    /// of room at the end, where the tag is written.
    pub fn seal_in_place(
        &self,
        pn: u64,
        packet: &mut [u8],
        header_len: usize,
    ) -> Result<(), Error> {
        let payload_end = packet
            .len()
            .checked_sub(TAG_LEN)
            .filter(|&end| end >= header_len)
            .ok_or(Error::BufferTooSmall)?;
        let (header, rest) =
            packet.split_at_mut_checked(header_len).ok_or(Error::BufferTooSmall)?;
        let (payload, tag_out) =
            rest.split_at_mut_checked(payload_end - header_len).ok_or(Error::BufferTooSmall)?;
        let tag = self.seal(pn, header, payload)?;
        tag_out.copy_from_slice(&tag);
        Ok(())
    }

    /// [`PacketKey::open`] on a whole packet whose header protection is removed: the
    /// header is `packet[..header_len]`, the tag the last [`TAG_LEN`] bytes. Returns the
    /// plaintext length; the plaintext is `packet[header_len..header_len + len]`.
    pub fn open_in_place(
        &self,
        pn: u64,
        packet: &mut [u8],
        header_len: usize,
    ) -> Result<usize, WireError> {
        let payload_end = packet
            .len()
            .checked_sub(TAG_LEN)
            .filter(|&end| end >= header_len)
            .ok_or(WireError::Truncated)?;
        let (header, rest) = packet.split_at_mut_checked(header_len).ok_or(WireError::Truncated)?;
        let (payload, tag) =
            rest.split_at_mut_checked(payload_end - header_len).ok_or(WireError::Truncated)?;
        let tag: &[u8; TAG_LEN] = (&*tag).try_into().map_err(|_| WireError::Truncated)?;
        self.open(pn, header, payload, tag).map_err(|_| WireError::DecryptFailed)?;
        Ok(payload.len())
    }
}

/// The keys protecting one direction of one encryption level: the AEAD key and IV, and the
/// header-protection key (RFC 9001 §5).
pub struct PacketKeys<P: CryptoProvider> {
    /// The payload (AEAD) key; replaced on a key update (RFC 9001 §6).
    pub packet: PacketKey<P>,
    /// The header-protection key; kept across key updates (RFC 9001 §6.1).
    pub header: P::HeaderKey,
}

impl<P: CryptoProvider> PacketKeys<P> {
    /// RFC 9001 §5.1: derives key, IV and header-protection key from a traffic secret (an
    /// Initial secret, or one TLS exported) for `version` and the negotiated AEAD.
    // Inlined into its callers (key installation, out of line each): the keys are then
    // built in the installer's frame instead of being returned through another one (2.9 KB
    // less stack on a device's receive path).
    #[inline(always)]
    pub fn from_secret(
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        secret: &[u8],
    ) -> Result<Self, Error> {
        let m = KeyMaterial::derive(provider, version, alg, secret)?;
        // Each part is built straight into the result (no by-value `PacketKey` wrapped in a
        // `Result` and copied: each copy of a key schedule is ~400 bytes of a device's stack).
        let iv = m.iv;
        Ok(Self {
            packet: PacketKey { key: provider.aead_key(alg, m.key.as_ref())?, iv },
            header: provider.header_key(alg, m.hp.as_ref())?,
        })
    }
}

// RFC 9001 §6.5, §4.9: a replaced or discarded key is erased, not only forgotten. The AEAD
// key erases its own state (the provider's `Drop`); the IV is erased here.
impl<P: CryptoProvider> Drop for PacketKey<P> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.iv);
    }
}

impl<P: CryptoProvider> core::fmt::Debug for PacketKey<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key or IV.
        f.write_str("PacketKey(..)")
    }
}

impl<P: CryptoProvider> core::fmt::Debug for PacketKeys<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PacketKeys(..)")
    }
}
