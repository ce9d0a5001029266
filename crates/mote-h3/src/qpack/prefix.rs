//! Prefixed integers (RFC 7541 §5.1, RFC 9204 §4.1.1) and string literals (RFC 7541 §5.2,
//! RFC 9204 §4.1.2).

use crate::coding::{Out, VARINT_MAX};
use crate::error::BufferTooSmall;

use super::huffman;

/// Why a prefixed integer or string literal could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// The input ended first; more bytes may complete it.
    Incomplete,
    /// The value exceeds 2^62 - 1 or uses more continuation bytes than that needs. Every
    /// QPACK integer this crate accepts fits a QUIC varint, so nothing larger is needed.
    Overflow,
}

/// Decodes an integer with an `n`-bit prefix (1 ≤ n ≤ 8) starting in `buf[0]`, whose
/// upper `8 - n` bits are flags the caller has already read. Returns the value and the
/// bytes used. Overflow-safe: values above 2^62 - 1 are refused, as are encodings with more
/// continuation bytes than such a value needs.
pub fn decode_int(buf: &[u8], n: u8) -> Result<(u64, usize), PrefixError> {
    let mut rest = buf;
    let value = int_value(take_int(&mut rest, n))?;
    Ok((value, buf.len() - rest.len()))
}

/// Set in [`take_int`]'s result when no integer could be read. A value (at most 2^62 - 1)
/// never sets bit 63, so the result comes back in registers and callers test one bit.
pub(crate) const INT_FAILED: u64 = 1 << 63;
/// [`take_int`]'s result when the input ended first.
const INT_INCOMPLETE: u64 = INT_FAILED | (1 << 62);
/// [`take_int`]'s result when the value exceeds 2^62 - 1 (or its encoding is too long).
const INT_OVERFLOW: u64 = INT_FAILED;

/// The error a [`take_int`] result carries, or its value.
pub(crate) const fn int_value(v: u64) -> Result<u64, PrefixError> {
    if v & INT_FAILED == 0 {
        Ok(v)
    } else if v == INT_INCOMPLETE {
        Err(PrefixError::Incomplete)
    } else {
        Err(PrefixError::Overflow)
    }
}

/// [`decode_int`] that consumes the integer from the front of `buf` (only on success) and
/// returns its value, or [`INT_FAILED`] set on error ([`int_value`] tells which).
pub(crate) fn take_int(buf: &mut &[u8], n: u8) -> u64 {
    let Some((&first, mut rest)) = buf.split_first() else { return INT_INCOMPLETE };
    let mask: u8 = if n >= 8 { 0xff } else { (1u8 << n) - 1 };
    let prefix = first & mask;
    if prefix < mask {
        *buf = rest;
        return u64::from(prefix);
    }
    let mut value = u64::from(mask);
    let mut shift = 0u32;
    loop {
        let Some((&b, tail)) = rest.split_first() else { return INT_INCOMPLETE };
        rest = tail;
        // 2^62 needs at most nine 7-bit groups (shift 0..=56).
        if shift > 56 {
            return INT_OVERFLOW;
        }
        // Cannot wrap: value ≤ 2^62 - 1 here and the addend < 2^63.
        value += u64::from(b & 0x7f) << shift;
        if value > VARINT_MAX {
            return INT_OVERFLOW;
        }
        if b & 0x80 == 0 {
            *buf = rest;
            return value;
        }
        shift += 7;
    }
}

/// Encodes `v` with an `n`-bit prefix (1 ≤ n ≤ 8); `flags` carries the bits above the prefix.
pub fn encode_int(v: u64, n: u8, flags: u8, out: &mut Out<'_>) -> Result<(), BufferTooSmall> {
    let mask: u8 = if n >= 8 { 0xff } else { (1u8 << n) - 1 };
    if v < u64::from(mask) {
        return out.put_u8(flags | v as u8);
    }
    out.put_u8(flags | mask)?;
    let mut rest = v - u64::from(mask);
    while rest >= 0x80 {
        out.put_u8(0x80 | (rest & 0x7f) as u8)?;
        rest >>= 7;
    }
    out.put_u8(rest as u8)
}

/// A string literal as it appears on the wire: possibly Huffman-coded bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawString<'a> {
    /// True if `bytes` are Huffman-coded (the H bit).
    pub huffman: bool,
    /// The encoded bytes.
    pub bytes: &'a [u8],
}

impl RawString<'_> {
    /// The decoded length (running the Huffman decoder once if needed). `None` if the
    /// Huffman coding is invalid.
    pub fn decoded_len(&self) -> Option<usize> {
        if self.huffman {
            huffman::decoded_len(self.bytes).ok()
        } else {
            Some(self.bytes.len())
        }
    }
}

/// Reads a string literal whose H bit is bit `n` of `buf[0]` and whose length is an `n`-bit
/// prefix integer below it (RFC 9204 §4.1.2: an "(n+1)-bit prefix" string). Returns the raw
/// string and the bytes used. The declared length is only compared against `buf`; nothing
/// is reserved for it.
pub fn decode_string(buf: &[u8], n: u8) -> Result<(RawString<'_>, usize), PrefixError> {
    let first = *buf.first().ok_or(PrefixError::Incomplete)?;
    let mut rest = buf;
    let bytes = take_string(&mut rest, n)?;
    Ok((RawString { huffman: first & (1u8 << n) != 0, bytes }, buf.len() - rest.len()))
}

/// [`decode_string`]'s raw bytes, consumed from the front of `buf` (only on success); the
/// caller reads the H bit (bit `n` of `buf[0]`). The 8-byte result comes back in registers.
pub(crate) fn take_string<'a>(buf: &mut &'a [u8], n: u8) -> Result<&'a [u8], PrefixError> {
    let mut rest = *buf;
    let len = int_value(take_int(&mut rest, n))?;
    // Compared as u64 before any cast so a 62-bit length cannot wrap on 32-bit targets.
    if len > rest.len() as u64 {
        return Err(PrefixError::Incomplete);
    }
    let (bytes, tail) = rest.split_at_checked(len as usize).ok_or(PrefixError::Incomplete)?;
    *buf = tail;
    Ok(bytes)
}

/// The length a string literal declares, if the prefix integer is complete, without
/// requiring its bytes to be present. Lets callers reject a huge declared length before
/// waiting for (or buffering) its bytes.
pub fn declared_string_len(buf: &[u8], n: u8) -> Result<(bool, u64), PrefixError> {
    let first = *buf.first().ok_or(PrefixError::Incomplete)?;
    let len = int_value(take_int(&mut &buf[..], n))?;
    Ok((first & (1u8 << n) != 0, len))
}

/// Writes `s` as a string literal with an `n`-bit length prefix, the H bit at bit `n` and
/// `flags` above it; Huffman-coded when that is strictly shorter (never in a device-only build).
pub fn encode_string(s: &[u8], n: u8, flags: u8, out: &mut Out<'_>) -> Result<(), BufferTooSmall> {
    // RFC 7541 §5.2: Huffman coding is the encoder's choice (H bit). A device-only build
    // (neither `server` nor `quic`) sends its few short request strings as they are and
    // keeps only the decoder of the code.
    #[cfg(not(any(feature = "server", feature = "quic")))]
    let hlen = usize::MAX;
    #[cfg(any(feature = "server", feature = "quic"))]
    let hlen = huffman::encoded_len(s);
    if hlen < s.len() {
        encode_int(hlen as u64, n, flags | (1u8 << n), out)?;
        huffman::encode(s, out)
    } else {
        encode_int(s.len() as u64, n, flags, out)?;
        out.put_slice(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    /// RFC 7541 C.1.1–C.1.3.
    #[test]
    fn rfc7541_c1_integers() {
        assert_eq!(decode_int(&[0x0a], 5), Ok((10, 1)));
        assert_eq!(decode_int(&hex!("1f9a0a"), 5), Ok((1337, 3)));
        assert_eq!(decode_int(&[0x2a], 8), Ok((42, 1)));
        let mut buf = [0u8; 8];
        let mut out = Out::new(&mut buf);
        encode_int(1337, 5, 0, &mut out).unwrap();
        assert_eq!(out.written(), &hex!("1f9a0a"));
    }

    #[test]
    fn integer_overflow_and_truncation() {
        assert_eq!(decode_int(&[0x1f], 5), Err(PrefixError::Incomplete));
        assert_eq!(decode_int(&hex!("1f80"), 5), Err(PrefixError::Incomplete));
        // Ten continuation bytes: refused before the shift could lose bits.
        assert_eq!(decode_int(&hex!("ff ffffffffffffffffff7f"), 8), Err(PrefixError::Overflow));
        // Zero-padding continuation bytes beyond 9 groups are refused too.
        assert_eq!(decode_int(&hex!("ff 80808080808080808000"), 8), Err(PrefixError::Overflow));
        // 2^62 exactly is refused; 2^62 - 1 is fine.
        let mut buf = [0u8; 16];
        let mut out = Out::new(&mut buf);
        encode_int(VARINT_MAX, 6, 0, &mut out).unwrap();
        let n = out.position();
        assert_eq!(decode_int(&buf[..n], 6), Ok((VARINT_MAX, n)));
        let mut buf = [0u8; 16];
        let mut out = Out::new(&mut buf);
        encode_int(VARINT_MAX + 1, 6, 0, &mut out).unwrap();
        let n = out.position();
        assert_eq!(decode_int(&buf[..n], 6), Err(PrefixError::Overflow));
    }

    /// `take_int` signals failure in bit 63 and consumes only a whole integer.
    #[test]
    fn take_int_marks_failure_in_bit_63() {
        let mut rest = &hex!("1f9a0a ff")[..];
        assert_eq!(take_int(&mut rest, 5), 1337);
        assert_eq!(rest, &[0xff]);
        // Truncated: the mark, `Incomplete`, and nothing consumed.
        for bytes in [&hex!("")[..], &hex!("1f"), &hex!("1f80"), &hex!("3f ffffffffffffffff")] {
            let mut rest = bytes;
            let v = take_int(&mut rest, 5);
            assert_ne!(v & INT_FAILED, 0);
            assert_eq!(int_value(v), Err(PrefixError::Incomplete));
            assert_eq!(rest, bytes);
        }
        // Too large or too long: the mark, `Overflow`, nothing consumed.
        for bytes in [&hex!("ff ffffffffffffffffff7f")[..], &hex!("ff 80808080808080808000")] {
            let mut rest = bytes;
            let v = take_int(&mut rest, 8);
            assert_ne!(v & INT_FAILED, 0);
            assert_eq!(int_value(v), Err(PrefixError::Overflow));
            assert_eq!(rest, bytes);
        }
        // The largest value leaves bit 63 (and 62) clear.
        let mut buf = [0u8; 16];
        let mut out = Out::new(&mut buf);
        encode_int(VARINT_MAX, 8, 0, &mut out).unwrap();
        let n = out.position();
        let mut rest = &buf[..n];
        assert_eq!(take_int(&mut rest, 8), VARINT_MAX);
        assert!(rest.is_empty());
        assert_eq!(int_value(VARINT_MAX), Ok(VARINT_MAX));
    }

    /// `take_string` consumes a whole literal only, and keeps `decode_string`'s errors.
    #[test]
    fn take_string_consumes_only_whole_literals() {
        let mut rest = &hex!("83 616263 ff")[..];
        assert_eq!(take_string(&mut rest, 7), Ok(&b"abc"[..]));
        assert_eq!(rest, &[0xff]);
        for bytes in [&hex!("")[..], &hex!("0a 6162"), &hex!("7f")] {
            let mut rest = bytes;
            assert_eq!(take_string(&mut rest, 7), Err(PrefixError::Incomplete));
            assert_eq!(rest, bytes);
        }
        let mut rest = &hex!("7f ffffffffffffffffff7f")[..];
        assert_eq!(take_string(&mut rest, 7), Err(PrefixError::Overflow));
        // The H bit is the caller's: decode_string reports it from bit n of the first byte.
        let (s, n) = decode_string(&hex!("83 616263"), 7).unwrap();
        assert_eq!((s.huffman, s.bytes, n), (true, &b"abc"[..], 4));
    }

    #[test]
    fn string_length_past_end() {
        assert_eq!(decode_string(&hex!("0a 6162"), 7), Err(PrefixError::Incomplete));
        assert_eq!(declared_string_len(&hex!("ff ffffffff0f"), 7), Ok((true, 0x7f + 0xffff_ffff)));
    }

    proptest::proptest! {
        #[test]
        fn int_round_trip(v in 0u64..=VARINT_MAX, n in 1u8..=8, flags in 0u8..=255) {
            let flags = if n == 8 { 0 } else { flags & !((1u8 << n) - 1) };
            let mut buf = [0u8; 16];
            let mut out = Out::new(&mut buf);
            encode_int(v, n, flags, &mut out).unwrap();
            let len = out.position();
            proptest::prop_assert_eq!(buf[0] & !(((1u16 << n) - 1) as u8), flags);
            proptest::prop_assert_eq!(decode_int(&buf[..len], n), Ok((v, len)));
        }
    }
}
