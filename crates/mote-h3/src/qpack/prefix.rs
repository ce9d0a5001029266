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
    let first = *buf.first().ok_or(PrefixError::Incomplete)?;
    let mask: u8 = if n >= 8 { 0xff } else { (1u8 << n) - 1 };
    let prefix = first & mask;
    if prefix < mask {
        return Ok((u64::from(prefix), 1));
    }
    let mut value = u64::from(mask);
    let mut shift = 0u32;
    let mut used = 1usize;
    loop {
        let b = *buf.get(used).ok_or(PrefixError::Incomplete)?;
        used += 1;
        // 2^62 needs at most nine 7-bit groups (shift 0..=56).
        if shift > 56 {
            return Err(PrefixError::Overflow);
        }
        let add = u64::from(b & 0x7f) << shift;
        value = value.checked_add(add).ok_or(PrefixError::Overflow)?;
        if value > VARINT_MAX {
            return Err(PrefixError::Overflow);
        }
        if b & 0x80 == 0 {
            return Ok((value, used));
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
    let huffman = first & (1u8 << n) != 0;
    let (len, used) = decode_int(buf, n)?;
    // Compared as u64 before any cast so a 62-bit length cannot wrap on 32-bit targets.
    let avail = buf.len().saturating_sub(used);
    if len > avail as u64 {
        return Err(PrefixError::Incomplete);
    }
    let end = used + len as usize;
    let bytes = buf.get(used..end).ok_or(PrefixError::Incomplete)?;
    Ok((RawString { huffman, bytes }, end))
}

/// The length a string literal declares, if the prefix integer is complete, without
/// requiring its bytes to be present. Lets callers reject a huge declared length before
/// waiting for (or buffering) its bytes.
pub fn declared_string_len(buf: &[u8], n: u8) -> Result<(bool, u64), PrefixError> {
    let first = *buf.first().ok_or(PrefixError::Incomplete)?;
    let (len, _) = decode_int(buf, n)?;
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
