//! QUIC variable-length integers (RFC 9000 §16), which HTTP/3 uses for frame types, frame
//! lengths, stream types and setting identifiers, and a bounded output cursor.
//!
//! This crate keeps its own 60 lines of varint code instead of depending on `mote-quic`,
//! so that it builds and tests without the QUIC crate's crypto dependencies. When the
//! QUIC adapter is built (`device` or `quic`), decoding and sizing go through
//! `mote_quic::coding` instead, so a device image holds one copy of that code.

use crate::error::BufferTooSmall;

/// The largest varint value, 2^62 - 1.
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Decodes the varint at the start of `buf`: its value and encoded length, or `None` if
/// `buf` ends before the varint does. Never reads past `buf`.
pub fn decode_varint(buf: &[u8]) -> Option<(u64, usize)> {
    #[cfg(any(feature = "device", feature = "quic"))]
    {
        let mut r = mote_quic::coding::Reader::new(buf);
        let v = r.varint_u64().ok()?;
        Some((v, r.position()))
    }
    #[cfg(not(any(feature = "device", feature = "quic")))]
    {
        decode_varint_own(buf)
    }
}

#[cfg(not(any(feature = "device", feature = "quic")))]
fn decode_varint_own(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for b in bytes.iter().skip(1) {
        v = (v << 8) | u64::from(*b);
    }
    Some((v, len))
}

/// Bytes the shortest encoding of `v` takes (1, 2, 4 or 8).
pub const fn varint_size(v: u64) -> usize {
    #[cfg(any(feature = "device", feature = "quic"))]
    {
        mote_quic::coding::encoded_size(v)
    }
    #[cfg(not(any(feature = "device", feature = "quic")))]
    if v < (1 << 6) {
        1
    } else if v < (1 << 14) {
        2
    } else if v < (1 << 30) {
        4
    } else {
        8
    }
}

/// Consumes one varint from the front of `buf`, or `None` if it is truncated.
pub(crate) fn take_varint(buf: &mut &[u8]) -> Option<u64> {
    let (v, n) = decode_varint(buf)?;
    *buf = buf.get(n..)?;
    Some(v)
}

/// A forward-only cursor that writes into a caller-owned buffer and never past it.
#[derive(Debug)]
pub struct Out<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Out<'a> {
    /// Starts writing at the beginning of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Room left.
    pub const fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        self.buf.get(..self.pos).unwrap_or(&[])
    }

    /// Appends one byte.
    pub fn put_u8(&mut self, v: u8) -> Result<(), BufferTooSmall> {
        let slot = self.buf.get_mut(self.pos).ok_or(BufferTooSmall)?;
        *slot = v;
        self.pos += 1;
        Ok(())
    }

    /// Appends `data`.
    pub fn put_slice(&mut self, data: &[u8]) -> Result<(), BufferTooSmall> {
        let end = self.pos.checked_add(data.len()).ok_or(BufferTooSmall)?;
        let dst = self.buf.get_mut(self.pos..end).ok_or(BufferTooSmall)?;
        dst.copy_from_slice(data);
        self.pos = end;
        Ok(())
    }

    /// Appends `n` bytes for the caller to fill.
    #[cfg(not(any(feature = "server", feature = "quic")))]
    pub(crate) fn reserve(&mut self, n: usize) -> Result<&mut [u8], BufferTooSmall> {
        let end = self.pos.checked_add(n).ok_or(BufferTooSmall)?;
        let dst = self.buf.get_mut(self.pos..end).ok_or(BufferTooSmall)?;
        self.pos = end;
        Ok(dst)
    }

    /// Appends `v` in its shortest varint encoding; values of 2^62 or more are refused.
    pub fn put_varint(&mut self, v: u64) -> Result<(), BufferTooSmall> {
        #[cfg(any(feature = "device", feature = "quic"))]
        {
            let v = mote_quic::coding::VarInt::new(v).ok_or(BufferTooSmall)?;
            let rest = self.buf.get_mut(self.pos..).ok_or(BufferTooSmall)?;
            let n =
                mote_quic::coding::encode_varint_sized(v, v.size(), rest).ok_or(BufferTooSmall)?;
            self.pos += n;
            Ok(())
        }
        #[cfg(not(any(feature = "device", feature = "quic")))]
        self.put_varint_own(v)
    }

    #[cfg(not(any(feature = "device", feature = "quic")))]
    fn put_varint_own(&mut self, v: u64) -> Result<(), BufferTooSmall> {
        if v > VARINT_MAX {
            return Err(BufferTooSmall);
        }
        let size = varint_size(v);
        // The two-bit length prefix: log2 of the size (1, 2, 4, 8 → 0..=3).
        let tag = (size.trailing_zeros() as u8) << 6;
        let be = v.to_be_bytes();
        let bytes = be.get(8 - size..).ok_or(BufferTooSmall)?;
        let end = self.pos.checked_add(size).ok_or(BufferTooSmall)?;
        let dst = self.buf.get_mut(self.pos..end).ok_or(BufferTooSmall)?;
        dst.copy_from_slice(bytes);
        if let Some(first) = dst.first_mut() {
            *first |= tag;
        }
        self.pos = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    #[test]
    fn rfc9000_a1_varints() {
        let cases: &[(&[u8], u64)] = &[
            (&hex!("c2197c5eff14e88c"), 151_288_809_941_952_652),
            (&hex!("9d7f3e7d"), 494_878_333),
            (&hex!("7bbd"), 15_293),
            (&hex!("25"), 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(decode_varint(bytes), Some((*value, bytes.len())));
            let mut buf = [0u8; 8];
            let mut out = Out::new(&mut buf);
            out.put_varint(*value).unwrap();
            assert_eq!(out.written(), *bytes);
        }
        assert_eq!(decode_varint(&hex!("4025")), Some((37, 2)));
        assert_eq!(decode_varint(&hex!("c0000000")), None);
        assert_eq!(decode_varint(&[]), None);
    }

    #[test]
    fn out_is_bounded() {
        let mut buf = [0u8; 3];
        let mut out = Out::new(&mut buf);
        out.put_slice(&[1, 2]).unwrap();
        assert_eq!(out.put_varint(64), Err(BufferTooSmall));
        out.put_u8(3).unwrap();
        assert_eq!(out.put_u8(4), Err(BufferTooSmall));
        assert_eq!(out.put_varint(1 << 62), Err(BufferTooSmall));
        assert_eq!(out.written(), &[1, 2, 3]);
    }
}
