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

/// RFC 9204 §4.1.1 (RFC 7541 §5.1): `v` as an integer with an `n`-bit prefix after the
/// bits `flags`, as [`encode_int`] writes it; in machine words (a device's strings and
/// static indices are far below 2^32).
#[cfg(not(any(feature = "server", feature = "quic")))]
fn put_int(out: &mut Out<'_>, v: usize, n: u8, flags: u8) -> Result<(), BufferTooSmall> {
    let mask = (1usize << n) - 1;
    if v < mask {
        return out.put_u8(flags | v as u8);
    }
    out.put_u8(flags | mask as u8)?;
    let mut rest = v - mask;
    while rest >= 0x80 {
        out.put_u8(0x80 | rest as u8)?;
        rest >>= 7;
    }
    out.put_u8(rest as u8)
}

/// A string literal (§4.1.2) with an `n`-bit length prefix after `flags`, not
/// Huffman-coded (as [`encode_string`] writes it in a device-only build).
#[cfg(not(any(feature = "server", feature = "quic")))]
fn put_str(out: &mut Out<'_>, s: &[u8], n: u8, flags: u8) -> Result<(), BufferTooSmall> {
    put_int(out, s.len(), n, flags)?;
    out.put_slice(s)
}

/// A field with the static entry `index` (below 16; RFC 9204 Appendix A) for its name:
/// an Indexed Field Line if `value` is the entry's value `known` (§4.5.2: `1 1 Index`),
/// else a Literal Field Line referencing its name (§4.5.4: `0 1 0 1 Index(4+)`), the value
/// not Huffman-coded. What [`FieldEncoder`] writes in a device-only build (the entry's
/// name has no other entry with `value`).
#[cfg(not(any(feature = "server", feature = "quic")))]
fn known(out: &mut Out<'_>, index: u8, known: &[u8], value: &[u8]) -> Result<(), BufferTooSmall> {
    if value == known {
        return out.put_u8(0xc0 | index);
    }
    out.put_u8(0x50 | index)?;
    put_str(out, value, 7, 0)
}

/// `content-length: n` (RFC 9110 §8.6: decimal digits), as [`known`] writes it for the
/// digits of `n`: static entry 4 itself if `n` is 0, else a literal referencing its name
/// with the digits as a plain string (at most 20, so a one-byte length). Returns the number
/// of digits.
#[cfg(not(any(feature = "server", feature = "quic")))]
fn put_content_length(out: &mut Out<'_>, n: usize) -> Result<usize, BufferTooSmall> {
    if n == 0 {
        out.put_u8(0xc0 | 4)?;
        return Ok(1);
    }
    let mut digits = 0;
    let mut rest = n;
    while rest != 0 {
        rest /= 10;
        digits += 1;
    }
    out.put_slice(&[0x50 | 4, digits as u8])?;
    let mut rest = n;
    for d in out.reserve(digits)?.iter_mut().rev() {
        *d = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    Ok(digits)
}

/// A device-only build's request head (RFC 9114 §4.3.1), written as one template: the
/// prefix (no dynamic table), `:method` by its static index `method` (15..=21, RFC 9204
/// Appendix A; its name `method_len` bytes long), `:scheme` `https` (23), `:authority` (0)
/// and `:path` (1) by their static entries, then `content-length` (4) if given as its
/// decimal digits. The same bytes as [`FieldEncoder`] with [`crate::Request::encode`] for
/// the same request (test `request_template_matches_the_field_encoder`). Returns the
/// encoded length and the size as §4.2.2 counts it.
#[cfg(not(any(feature = "server", feature = "quic")))]
pub(crate) fn encode_request(
    method: u8,
    method_len: usize,
    authority: &[u8],
    path: &[u8],
    content_length: Option<usize>,
    buf: &mut [u8],
) -> Result<(usize, u64), BufferTooSmall> {
    let mut out = Out::new(buf);
    // Required Insert Count 0, Base 0; `:method`, `:scheme: https` indexed.
    out.put_slice(&[0, 0, 0xc0 | method, 0xc0 | 23])?;
    known(&mut out, 0, b"", authority)?;
    known(&mut out, 1, b"/", path)?;
    // Names, `https` and overheads; every length counted is that of bytes written to
    // `buf`, so the sum cannot overflow.
    let mut size = 7
        + 7
        + 10
        + 5
        + 5
        + 4 * FIELD_OVERHEAD as usize
        + method_len
        + authority.len()
        + path.len();
    if let Some(n) = content_length {
        let digits = put_content_length(&mut out, n)?;
        size += 14 + digits + FIELD_OVERHEAD as usize;
    }
    Ok((out.position(), size as u64))
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

    /// The device template writes what the field encoder writes (and counts the same
    /// §4.2.2 size) for every static method, with values that are and are not the static
    /// entries', long strings, and with and without content-length.
    #[cfg(not(any(feature = "server", feature = "quic")))]
    #[test]
    fn request_template_matches_the_field_encoder() {
        use super::super::static_table::STATIC_TABLE;
        use crate::Request;
        // The entries `known` is called with, and nothing of those names outside them.
        let names = |i: usize| STATIC_TABLE[i].0;
        assert!(
            (15..=21).all(|i| names(i) == b":method") && (22..=23).all(|i| names(i) == b":scheme")
        );
        assert_eq!(
            (names(0), names(1), names(4)),
            (&b":authority"[..], &b":path"[..], &b"content-length"[..])
        );
        for (i, (n, _)) in STATIC_TABLE.iter().enumerate() {
            let expected = match *n {
                b":method" => (15..=21).contains(&i),
                b":scheme" => (22..=23).contains(&i),
                b":authority" => i == 0,
                b":path" => i == 1,
                b"content-length" => i == 4,
                _ => true,
            };
            assert!(expected, "{i}");
        }
        let long = [b'a'; 300];
        let values: &[&[u8]] = &[b"", b"/", b"0", b"GET", b"https", b"coap", &long];
        let lengths = [None, Some(0), Some(1), Some(9), Some(10), Some(1024), Some(usize::MAX)];
        for method in 15..=21u8 {
            let name = STATIC_TABLE[usize::from(method)].1;
            for &authority in values {
                for &path in values {
                    for content_length in lengths {
                        let digits = content_length.map(|n: usize| n.to_string());
                        let cl = digits.as_ref().map(|v| (&b"content-length"[..], v.as_bytes()));
                        let headers: Vec<(&[u8], &[u8])> = cl.into_iter().collect();
                        let r = Request {
                            method: name,
                            scheme: b"https",
                            authority,
                            path,
                            headers: &headers,
                        };
                        let mut a = [0u8; 2048];
                        let mut enc = FieldEncoder::new(&mut a).unwrap();
                        r.encode(&mut enc).unwrap();
                        let size = enc.size();
                        let n = enc.finish();
                        let mut b = [0u8; 2048];
                        let (m, template_size) = encode_request(
                            method,
                            name.len(),
                            authority,
                            path,
                            content_length,
                            &mut b,
                        )
                        .unwrap();
                        assert_eq!(template_size, size, "{r:?}");
                        assert_eq!(&a[..n], &b[..m], "{r:?}");
                    }
                }
            }
        }
        // Too small a buffer is refused, never overrun.
        let mut full = [0u8; 64];
        let (needed, _) =
            encode_request(17, 3, b"mote.example", b"/5120", Some(1), &mut full).unwrap();
        for len in 0..needed {
            let mut buf = vec![0u8; len];
            let r = encode_request(17, 3, b"mote.example", b"/5120", Some(1), &mut buf);
            assert_eq!(r, Err(BufferTooSmall), "{len}");
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
