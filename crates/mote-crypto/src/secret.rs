//! Fixed-size holders for digests and secrets, so no operation needs a heap.

use zeroize::Zeroize;

use crate::Error;

/// The longest hash output this build supports: SHA-384's 48 bytes with feature `aes256`
/// (TLS_AES_256_GCM_SHA384, the one SHA-384 suite), otherwise SHA-256's 32 (session 11: a
/// SHA-256-only device keeps no secret, digest or Finished buffer sized for SHA-384). HKDF
/// refuses a longer hash ([`crate::hkdf::check_hash_len`]), so no secret is cut to fit.
pub const MAX_HASH_LEN: usize = if cfg!(feature = "aes256") { 48 } else { 32 };

/// A hash or HMAC output of up to [`MAX_HASH_LEN`] bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    bytes: [u8; MAX_HASH_LEN],
    len: u8,
}

impl Digest {
    /// Copies `bytes` (at most [`MAX_HASH_LEN`] long; longer input is truncated, which no
    /// supported algorithm produces).
    pub fn new(bytes: &[u8]) -> Self {
        let len = bytes.len().min(MAX_HASH_LEN);
        let mut out = Self { bytes: [0; MAX_HASH_LEN], len: len as u8 };
        out.bytes[..len].copy_from_slice(&bytes[..len]);
        out
    }
}

impl Digest {
    /// The length, bounded by the array's (`len` never exceeds it: the bound lets the
    /// compiler drop the slicing's check and panic path).
    fn len(&self) -> usize {
        usize::from(self.len).min(MAX_HASH_LEN)
    }

    /// Overwrites the bytes. `Digest` is `Copy`, so it cannot erase itself on drop; code
    /// that puts key material in one (an HMAC output inside HKDF) calls this when done.
    pub(crate) fn wipe(&mut self) {
        self.bytes.zeroize();
        self.len = 0;
    }
}

impl AsRef<[u8]> for Digest {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len()]
    }
}

impl core::fmt::Debug for Digest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Digest(")?;
        for b in self.as_ref() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// A secret of up to [`MAX_HASH_LEN`] bytes (an HKDF PRK or TLS traffic secret), erased on
/// drop. Its `Debug` output never shows the bytes.
pub struct Secret {
    bytes: [u8; MAX_HASH_LEN],
    len: u8,
}

impl Clone for Secret {
    fn clone(&self) -> Self {
        Self { bytes: self.bytes, len: self.len }
    }

    /// Copies `source` over this secret where it lies. The default (`*self =
    /// source.clone()`) may build the clone in a temporary and move it in, and a moved-from
    /// copy is never wiped: its drop runs on the copy.
    fn clone_from(&mut self, source: &Self) {
        self.bytes = source.bytes;
        self.len = source.len;
    }
}

impl Secret {
    /// Copies `bytes`, or [`Error::BadLength`] if they are longer than [`MAX_HASH_LEN`] (a
    /// SHA-384 secret in a SHA-256-only build): refused, never cut to fit.
    pub fn try_new(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() > MAX_HASH_LEN {
            return Err(Error::BadLength);
        }
        Ok(Self::new(bytes))
    }

    /// A zeroed secret of `len` bytes as [`Secret::zeroed`], or [`Error::BadLength`] if `len`
    /// exceeds [`MAX_HASH_LEN`].
    pub fn try_zeroed(len: usize) -> Result<Self, Error> {
        if len > MAX_HASH_LEN {
            return Err(Error::BadLength);
        }
        Ok(Self::zeroed(len))
    }

    /// Copies `bytes` (at most [`MAX_HASH_LEN`]; longer input is truncated: for lengths
    /// bounded by construction, else [`Secret::try_new`]).
    pub fn new(bytes: &[u8]) -> Self {
        let len = bytes.len().min(MAX_HASH_LEN);
        let mut out = Self { bytes: [0; MAX_HASH_LEN], len: len as u8 };
        out.bytes[..len].copy_from_slice(&bytes[..len]);
        out
    }

    /// A zeroed secret of `len` bytes, to be filled through [`AsMut::as_mut`]. `len` is
    /// clamped to [`MAX_HASH_LEN`]: for lengths bounded by construction (key lengths), else
    /// [`Secret::try_zeroed`]. HKDF refuses a hash longer than [`MAX_HASH_LEN`]
    /// ([`crate::hkdf::check_hash_len`]), so a clamped secret is never filled by one.
    pub fn zeroed(len: usize) -> Self {
        Self { bytes: [0; MAX_HASH_LEN], len: len.min(MAX_HASH_LEN) as u8 }
    }

    /// Length in bytes (bounded by the array's, which `len` never exceeds: the bound lets
    /// the compiler drop the slicing's check and panic path).
    pub fn len(&self) -> usize {
        usize::from(self.len).min(MAX_HASH_LEN)
    }

    /// True for a zero-length secret.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsRef<[u8]> for Secret {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len()]
    }
}

impl AsMut<[u8]> for Secret {
    /// The secret's bytes, mutable (to fill a [`Secret::zeroed`]).
    fn as_mut(&mut self) -> &mut [u8] {
        let len = self.len();
        &mut self.bytes[..len]
    }
}

impl From<Digest> for Secret {
    fn from(d: Digest) -> Self {
        Self::new(d.as_ref())
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl core::fmt::Debug for Secret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// An (EC)DHE shared secret: 32 bytes for both X25519 and secp256r1. Erased on drop.
pub struct SharedSecret(pub(crate) [u8; 32]);

impl SharedSecret {
    /// Wraps raw bytes (for providers outside this crate).
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

impl AsRef<[u8]> for SharedSecret {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for SharedSecret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl core::fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SharedSecret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `clone_from` copies the bytes and the length over the old secret in place (a key
    /// update replaces a traffic secret this way: no moved-from copy).
    #[test]
    fn clone_from_copies_in_place() {
        let mut s = Secret::new(&[1; MAX_HASH_LEN]);
        s.clone_from(&Secret::new(&[2; 32]));
        assert_eq!(s.as_ref(), &[2; 32]);
        assert_eq!(s.bytes[32..], [0; MAX_HASH_LEN - 32]);
        assert_eq!(s.clone().as_ref(), &[2; 32]);
    }

    /// Session 11: `MAX_HASH_LEN` is 32 without `aes256`; a longer secret is refused, not
    /// cut to fit (a SHA-384 secret in a SHA-256-only build), and one that fits is kept whole.
    #[test]
    fn overlong_secret_refused() {
        assert_eq!(MAX_HASH_LEN, if cfg!(feature = "aes256") { 48 } else { 32 });
        assert!(matches!(Secret::try_new(&[1; MAX_HASH_LEN + 1]), Err(Error::BadLength)));
        assert!(matches!(Secret::try_zeroed(MAX_HASH_LEN + 1), Err(Error::BadLength)));
        #[cfg(not(feature = "aes256"))]
        assert!(matches!(Secret::try_new(&[1; 48]), Err(Error::BadLength)));
        assert_eq!(Secret::try_new(&[3; MAX_HASH_LEN]).map(|s| s.len()).ok(), Some(MAX_HASH_LEN));
        assert_eq!(Secret::try_zeroed(32).map(|s| s.len()).ok(), Some(32));
    }

    /// Review finding: HKDF erased its `previous` block but not the HMAC output it copied
    /// it from (the same bytes: for a 32-byte traffic secret, the whole secret), nor the
    /// `Digest` an Extract's PRK passed through. `Digest::wipe` is what HKDF now calls on
    /// those copies; stack residue itself is not observable from a test.
    #[test]
    fn review_digest_wipe_erases() {
        let mut d = Digest::new(&[0xa5; MAX_HASH_LEN]);
        d.wipe();
        assert!(d.as_ref().is_empty());
        assert_eq!(d.bytes, [0; MAX_HASH_LEN]);
    }
}
