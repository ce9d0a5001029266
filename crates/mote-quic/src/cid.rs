//! Connection IDs (RFC 9000 §5.1): 0 to 20 opaque bytes, stored inline.

/// Longest connection ID QUIC v1 and v2 allow (RFC 9000 §17.2).
pub const MAX_CID_LEN: usize = 20;

/// A connection ID of up to [`MAX_CID_LEN`] bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ConnectionId {
    bytes: [u8; MAX_CID_LEN],
    len: u8,
}

impl ConnectionId {
    /// The zero-length connection ID.
    pub const EMPTY: ConnectionId = ConnectionId { bytes: [0; MAX_CID_LEN], len: 0 };

    /// Copies `bytes`, or returns `None` if it is longer than 20 bytes.
    // Out of line on a device: inlined, its copy is repeated at every caller (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub fn new(bytes: &[u8]) -> Option<Self> {
        let mut cid = Self { bytes: [0; MAX_CID_LEN], len: bytes.len() as u8 };
        // Longer than 20 bytes: no such prefix of the array, `None`.
        cid.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(cid)
    }

    /// Length in bytes.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the zero-length connection ID.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl core::ops::Deref for ConnectionId {
    type Target = [u8];
    // Out of line on a device: a call is smaller than the length load and clamp at each use.
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn deref(&self) -> &[u8] {
        // `len <= MAX_CID_LEN` always holds; the `min` shows it to the compiler, so no
        // bounds-check panic path is left.
        &self.bytes[..usize::from(self.len).min(MAX_CID_LEN)]
    }
}

impl AsRef<[u8]> for ConnectionId {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl core::fmt::Debug for ConnectionId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for b in self.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_limit() {
        assert!(ConnectionId::new(&[0; 20]).is_some());
        assert!(ConnectionId::new(&[0; 21]).is_none());
        let cid = ConnectionId::new(&[1, 2, 3]).unwrap();
        assert_eq!(&*cid, &[1, 2, 3]);
        assert!(ConnectionId::EMPTY.is_empty());
        assert_eq!(&*ConnectionId::EMPTY, &[]);
        let full: [u8; 20] = core::array::from_fn(|i| i as u8);
        assert_eq!(&*ConnectionId::new(&full).unwrap(), &full);
    }
}
