//! Field section encoding for the device side: static-table references and literals only
//! (RFC 9204 §4.5), Huffman-coded when that is shorter. It never references the dynamic
//! table, so the prefix is always Required Insert Count 0, Base 0 (`0x00 0x00`), the
//! stream can never block the peer's decoder, and no encoder stream is needed.

use crate::coding::Out;
use crate::error::BufferTooSmall;

use super::fields::FIELD_OVERHEAD;
use super::prefix::{encode_int, encode_string};
#[cfg(not(any(feature = "server", feature = "quic")))]
use super::static_device::find;
#[cfg(any(feature = "server", feature = "quic"))]
use super::static_table::find;
use super::static_table::Match;

/// Writes one encoded field section into a caller buffer, field by field.
#[derive(Debug)]
pub struct FieldEncoder<'a> {
    out: Out<'a>,
    size: u64,
}

impl<'a> FieldEncoder<'a> {
    /// Starts a section in `buf` with the prefix for "no dynamic table references".
    pub fn new(buf: &'a mut [u8]) -> Result<Self, BufferTooSmall> {
        let mut out = Out::new(buf);
        // Required Insert Count = 0 (8+), then S = 0, Delta Base = 0 (7+).
        out.put_u8(0)?;
        out.put_u8(0)?;
        Ok(Self { out, size: 0 })
    }

    /// Appends a field line.
    pub fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), BufferTooSmall> {
        self.put(name, value, false)
    }

    /// Appends a field line with the N bit set, so no intermediary will put it into a
    /// dynamic table (RFC 9204 §4.5.4, §7.1.3): for secrets such as `authorization`.
    pub fn field_never_indexed(&mut self, name: &[u8], value: &[u8]) -> Result<(), BufferTooSmall> {
        self.put(name, value, true)
    }

    fn put(&mut self, name: &[u8], value: &[u8], never: bool) -> Result<(), BufferTooSmall> {
        let n_bit = if never { 0x20 } else { 0 };
        match find(name, value) {
            // Indexed Field Line, static (§4.5.2): 1 T=1 Index(6+).
            Match::Full(i) if !never => encode_int(u64::from(i), 6, 0xc0, &mut self.out)?,
            // Literal Field Line with Name Reference, static (§4.5.4): 0 1 N T=1 Index(4+).
            Match::Full(i) | Match::Name(i) => {
                encode_int(u64::from(i), 4, 0x50 | n_bit, &mut self.out)?;
                encode_string(value, 7, 0, &mut self.out)?;
            }
            // Literal Field Line with Literal Name (§4.5.6): 0 0 1 N H NameLen(3+).
            Match::None => {
                encode_string(name, 3, 0x20 | (n_bit >> 1), &mut self.out)?;
                encode_string(value, 7, 0, &mut self.out)?;
            }
        }
        self.size += name.len() as u64 + value.len() as u64 + FIELD_OVERHEAD;
        Ok(())
    }

    /// The size of the section so far as RFC 9114 §4.2.2 counts it (name + value + 32 per
    /// field), to compare with the peer's SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// The encoded length; the section occupies the front of the buffer.
    pub const fn finish(self) -> usize {
        self.out.position()
    }
}

/// Encodes `fields` as one field section into `out`, returning its length.
pub fn encode_field_section(
    fields: &[(&[u8], &[u8])],
    out: &mut [u8],
) -> Result<usize, BufferTooSmall> {
    let mut enc = FieldEncoder::new(out)?;
    for (name, value) in fields {
        enc.field(name, value)?;
    }
    Ok(enc.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    /// RFC 9204 B.1, encoder side: a literal with a static name reference.
    #[test]
    fn rfc9204_b1_encode() {
        let mut buf = [0u8; 64];
        let n = encode_field_section(&[(b":path", b"/index.html")], &mut buf).unwrap();
        // B.1 sends the value without Huffman coding; ours is Huffman-coded because that
        // is shorter, so compare the non-Huffman form through the raw writer instead.
        assert_eq!(&buf[..2], &hex!("0000"));
        assert_eq!(buf[2], 0x51);
        let mut raw = [0u8; 64];
        let mut out = Out::new(&mut raw);
        out.put_slice(&[0, 0]).unwrap();
        encode_int(1, 4, 0x50, &mut out).unwrap();
        encode_int(11, 7, 0, &mut out).unwrap();
        out.put_slice(b"/index.html").unwrap();
        assert_eq!(out.written(), &hex!("0000 510b 2f69 6e64 6578 2e68 746d 6c"));
        if cfg!(any(feature = "server", feature = "quic")) {
            assert!(n < out.position());
        } else {
            // A device-only build never Huffman-codes: B.1 byte for byte.
            assert_eq!(&buf[..n], out.written());
        }
    }

    #[test]
    fn representations() {
        let mut buf = [0u8; 64];
        let mut enc = FieldEncoder::new(&mut buf).unwrap();
        enc.field(b":method", b"GET").unwrap(); // static 17 -> d1
        enc.field(b"x", b"y").unwrap(); // literal name, not Huffman (1 byte each)
        enc.field_never_indexed(b"authorization", b"a").unwrap(); // static name 84, N=1
        assert_eq!(enc.size(), 7 + 3 + 32 + 2 + 32 + 14 + 32);
        let n = enc.finish();
        // A device build finds pseudo-headers and content-length in the static table
        // only and never Huffman-codes: `authorization` goes as a literal name (N=1, H=0,
        // 13 bytes).
        if cfg!(any(feature = "server", feature = "quic")) {
            assert_eq!(&buf[..n], &hex!("0000 d1 21 78 01 79 7f 45 01 61"));
        } else {
            assert_eq!(
                &buf[..n],
                &hex!("0000 d1 21 78 01 79 37 06 617574686f72697a6174696f6e 01 61")
            );
        }
    }
}
