//! Field section decoding (RFC 9204 §4.5): the encoded field section prefix and every
//! field line representation, into a caller buffer under a size limit.

use super::fields::{FieldSection, PushError, SectionWriter, Src};
use super::prefix::{take_int, take_string, PrefixError, RawString, INT_FAILED};
#[cfg(not(any(feature = "server", feature = "quic")))]
use super::static_device::{self, Entry};
#[cfg(any(feature = "server", feature = "quic"))]
use super::static_table;

/// Why a field section could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The section is malformed or references an entry that does not exist:
    /// QPACK_DECOMPRESSION_FAILED, a connection error (RFC 9204 §2.2.3, §4.5).
    Failed,
    /// The decoded section passed the size limit (name + value + 32 per field, RFC 9114
    /// §4.2.2) or the caller's output buffer. Decoding stopped at the first field that did.
    TooLarge,
    /// The section references dynamic table entries not received yet: the stream is
    /// blocked until the table's insert count reaches `required_insert_count`
    /// (RFC 9204 §2.1.2). Nothing was consumed.
    Blocked {
        /// The Required Insert Count from the section's prefix.
        required_insert_count: u64,
    },
}

/// A decoded field section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded<'o> {
    /// The fields, in the caller's output buffer.
    pub fields: FieldSection<'o>,
    /// The section's Required Insert Count; non-zero means the decoder must send a Section
    /// Acknowledgment for the stream (RFC 9204 §4.4.1).
    pub required_insert_count: u64,
}

/// What the decoder needs from a dynamic table. The static-only decoder uses [`NoTable`].
pub(crate) trait TableView {
    /// Entries inserted so far.
    fn insert_count(&self) -> u64;
    /// RFC 9204 §4.5.1.1: the Required Insert Count an encoded value stands for.
    fn decode_required_insert_count(&self, encoded: u64) -> Option<u64>;
    /// The entry with absolute index `abs`, if it is still in the table.
    fn entry(&self, abs: u64) -> Option<(Src<'_>, Src<'_>)>;
}

/// A dynamic table of capacity 0: every dynamic reference is invalid.
pub(crate) struct NoTable;

impl TableView for NoTable {
    fn insert_count(&self) -> u64 {
        0
    }
    fn decode_required_insert_count(&self, encoded: u64) -> Option<u64> {
        // MaxEntries = 0: only the encoding 0 is valid.
        (encoded == 0).then_some(0)
    }
    fn entry(&self, _abs: u64) -> Option<(Src<'_>, Src<'_>)> {
        None
    }
}

fn incomplete(_: PrefixError) -> DecodeError {
    // Inside a complete HEADERS payload a truncated representation is malformed.
    DecodeError::Failed
}

/// A prefix integer of `n` bits taken from the front of `rest` (RFC 9204 §4.1.1); any
/// failure, a truncated one included, is malformed (as in [`incomplete`]).
#[inline]
fn int(rest: &mut &[u8], n: u8) -> Result<u64, DecodeError> {
    let i = take_int(rest, n);
    if i & INT_FAILED != 0 {
        return Err(DecodeError::Failed);
    }
    Ok(i)
}

/// A string literal with an `n`-bit length prefix taken from the front of `rest` (RFC 9204
/// §4.1.2), Huffman-coded if `huffman` (its H bit), as a source. Always inlined: left to
/// `#[inline]` it stayed out of line on the device and cost 28 B more (measured).
#[inline(always)]
fn literal<'a>(rest: &mut &'a [u8], n: u8, huffman: bool) -> Result<Src<'a>, DecodeError> {
    let bytes = take_string(rest, n).map_err(incomplete)?;
    Ok(src(RawString { huffman, bytes }))
}

fn src(s: RawString<'_>) -> Src<'_> {
    if s.huffman {
        Src::Huffman(s.bytes)
    } else {
        Src::one(s.bytes)
    }
}

fn pushed(r: Result<(), PushError>) -> Result<(), DecodeError> {
    r.map_err(|e| match e {
        PushError::TooLarge => DecodeError::TooLarge,
        PushError::Invalid => DecodeError::Failed,
    })
}

/// Static table entry `i` as name and value sources.
#[cfg(any(feature = "server", feature = "quic"))]
fn static_entry(i: u64) -> Result<(Src<'static>, Src<'static>), DecodeError> {
    let (name, value) = static_table::get_coded(i).ok_or(DecodeError::Failed)?;
    Ok((Src::Huffman(name), Src::Huffman(value)))
}

/// Static table entry `i` as name and value sources: a device build keeps the text of the
/// entries its checks read only; the others are counted, not stored (`static_device`).
#[cfg(not(any(feature = "server", feature = "quic")))]
fn static_entry(i: u64) -> Result<(Src<'static>, Src<'static>), DecodeError> {
    Ok(match static_device::get(i).ok_or(DecodeError::Failed)? {
        Entry::Known(name, value) => (Src::one(name), Src::one(value)),
        Entry::Opaque(name, value) => (Src::Absent(name), Src::Absent(value)),
    })
}

/// What a field line's index refers to, or a literal name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refers {
    Static,
    /// Dynamic, relative to the Base.
    Relative,
    /// Dynamic, at or after the Base.
    PostBase,
    Literal,
}

/// Decodes the encoded field section `block` (a whole HEADERS payload) into `out`.
pub(crate) fn decode_with<'o, T: TableView>(
    table: &T,
    block: &[u8],
    limit: u64,
    out: &'o mut [u8],
) -> Result<Decoded<'o>, DecodeError> {
    let mut w = SectionWriter::new(out, limit);
    let required_insert_count = decode_into(table, block, &mut w)?;
    Ok(Decoded { fields: w.finish(), required_insert_count })
}

/// Where decoded field lines go: a [`SectionWriter`] (a buffer of lines) or a check that
/// looks at each line as it is decoded and keeps nothing (the device client's
/// `response_lines`).
pub(crate) trait LineSink {
    /// Takes one field line; fails as [`SectionWriter::push`] does.
    fn push(&mut self, name: Src<'_>, value: Src<'_>, never: bool) -> Result<(), PushError>;
}

impl LineSink for SectionWriter<'_> {
    fn push(&mut self, name: Src<'_>, value: Src<'_>, never: bool) -> Result<(), PushError> {
        SectionWriter::push(self, name, value, never)
    }
}

/// Decodes a field section without a dynamic table into `sink`, line by line: what
/// `decode_into` does with [`NoTable`], written for a table of capacity 0 (the same
/// results, test `static_lines_match_the_general_decoder`).
pub(crate) fn decode_lines<S: LineSink>(block: &[u8], sink: &mut S) -> Result<(), DecodeError> {
    // §4.5.1.1: with MaxEntries 0 the Required Insert Count's only encoding is 0, one byte
    // 0x00 (an 8-bit prefix). §4.5.1.2: with it, S = 1 would make the Base negative; the
    // Delta Base itself must still decode.
    let rest = match block.split_first() {
        Some((0, rest)) => rest,
        _ => return Err(DecodeError::Failed),
    };
    if rest.first().is_some_and(|b| b & 0x80 != 0) {
        return Err(DecodeError::Failed);
    }
    let mut rest = rest;
    int(&mut rest, 7)?;
    while let Some(&b) = rest.first() {
        // §4.5.2–§4.5.6: without a table only static references and literal names can be
        // decoded; a dynamic or post-base reference names an entry that does not exist.
        let (prefix, literal_name, literal_value, never) = if b & 0xc0 == 0xc0 {
            // Indexed Field Line, static: 1 1 Index(6+).
            (6, false, false, false)
        } else if b & 0xd0 == 0x50 {
            // Literal Field Line with Name Reference, static: 0 1 N 1 Index(4+).
            (4, false, true, b & 0x20 != 0)
        } else if b & 0xe0 == 0x20 {
            // Literal Field Line with Literal Name: 0 0 1 N H NameLen(3+).
            (3, true, true, b & 0x10 != 0)
        } else {
            return Err(DecodeError::Failed);
        };
        let (name, entry_value) = if literal_name {
            // The H bit is bit `prefix` of the first byte, `b`.
            (literal(&mut rest, prefix, b & (1u8 << prefix) != 0)?, None)
        } else {
            let (name, value) = static_entry(int(&mut rest, prefix)?)?;
            (name, Some(value))
        };
        let value = match entry_value {
            Some(value) if !literal_value => value,
            _ => {
                let huffman = rest.first().is_some_and(|f| f & 0x80 != 0);
                literal(&mut rest, 7, huffman)?
            }
        };
        pushed(sink.push(name, value, never))?;
    }
    Ok(())
}

/// Decodes a field section into `w`; returns its Required Insert Count.
fn decode_into<T: TableView, S: LineSink>(
    table: &T,
    block: &[u8],
    w: &mut S,
) -> Result<u64, DecodeError> {
    // Encoded Field Section Prefix (§4.5.1).
    let mut rest = block;
    let encoded_ric = int(&mut rest, 8)?;
    let required_insert_count =
        table.decode_required_insert_count(encoded_ric).ok_or(DecodeError::Failed)?;
    let sign = rest.first().ok_or(DecodeError::Failed)? & 0x80 != 0;
    let delta = int(&mut rest, 7)?;
    let base = if sign {
        // Base = RIC - DeltaBase - 1, which must not be negative.
        if delta >= required_insert_count {
            return Err(DecodeError::Failed);
        }
        required_insert_count - delta - 1
    } else {
        required_insert_count.checked_add(delta).ok_or(DecodeError::Failed)?
    };
    if required_insert_count > table.insert_count() {
        return Err(DecodeError::Blocked { required_insert_count });
    }

    // A dynamic reference must be below the Required Insert Count and still present.
    let dynamic = |abs: Option<u64>| -> Result<(Src<'_>, Src<'_>), DecodeError> {
        let abs = abs.ok_or(DecodeError::Failed)?;
        if abs >= required_insert_count {
            return Err(DecodeError::Failed);
        }
        table.entry(abs).ok_or(DecodeError::Failed)
    };
    let relative = |i: u64| base.checked_sub(i).and_then(|b| b.checked_sub(1));
    let post_base = |i: u64| base.checked_add(i);

    while let Some(&b) = rest.first() {
        // The representation (§4.5.2–§4.5.6) from its first bits: the prefix of its index,
        // what the index refers to, whether a literal value follows, the N bit.
        let (prefix, refers, literal_value, never) = if b & 0x80 != 0 {
            // Indexed Field Line (§4.5.2): 1 T Index(6+).
            (6, if b & 0x40 != 0 { Refers::Static } else { Refers::Relative }, false, false)
        } else if b & 0x40 != 0 {
            // Literal Field Line with Name Reference (§4.5.4): 0 1 N T Index(4+).
            let refers = if b & 0x10 != 0 { Refers::Static } else { Refers::Relative };
            (4, refers, true, b & 0x20 != 0)
        } else if b & 0x20 != 0 {
            // Literal Field Line with Literal Name (§4.5.6): 0 0 1 N H NameLen(3+).
            (3, Refers::Literal, true, b & 0x10 != 0)
        } else if b & 0x10 != 0 {
            // Indexed Field Line with Post-Base Index (§4.5.3): 0 0 0 1 Index(4+).
            (4, Refers::PostBase, false, false)
        } else {
            // Literal Field Line with Post-Base Name Reference (§4.5.5): 0 0 0 0 N Index(3+).
            (3, Refers::PostBase, true, b & 0x08 != 0)
        };
        let (name, entry_value) = if refers == Refers::Literal {
            // The H bit is bit `prefix` of the first byte, `b`.
            (literal(&mut rest, prefix, b & (1u8 << prefix) != 0)?, None)
        } else {
            let i = int(&mut rest, prefix)?;
            let (name, value) = match refers {
                Refers::Static => static_entry(i)?,
                Refers::Relative => dynamic(relative(i))?,
                _ => dynamic(post_base(i))?,
            };
            (name, Some(value))
        };
        let value = match entry_value {
            Some(value) if !literal_value => value,
            _ => {
                let huffman = rest.first().is_some_and(|f| f & 0x80 != 0);
                literal(&mut rest, 7, huffman)?
            }
        };
        pushed(w.push(name, value, never))?;
    }
    Ok(required_insert_count)
}

/// Decodes an encoded field section with no dynamic table (the device profile, which
/// advertises SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0): static references and literals.
/// `limit` is our SETTINGS_MAX_FIELD_SECTION_SIZE, enforced on the decoded size while
/// decoding; `out` receives the fields and bounds memory use.
pub fn decode_field_section<'o>(
    block: &[u8],
    limit: u64,
    out: &'o mut [u8],
) -> Result<Decoded<'o>, DecodeError> {
    decode_with(&NoTable, block, limit, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qpack::encoder::FieldEncoder;
    use hex_literal::hex;
    use proptest::prelude::*;

    fn fields(d: &Decoded<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
        d.fields.iter().map(|f| (f.name.to_vec(), f.value.to_vec())).collect()
    }

    /// RFC 9204 B.1: Literal Field Line with Name Reference, decoded byte-exact.
    #[test]
    fn rfc9204_b1_literal_with_static_name_reference() {
        let block = hex!("0000 510b 2f69 6e64 6578 2e68 746d 6c");
        let mut out = [0u8; 64];
        let d = decode_field_section(&block, 1000, &mut out).unwrap();
        assert_eq!(d.required_insert_count, 0);
        assert_eq!(fields(&d), vec![(b":path".to_vec(), b"/index.html".to_vec())]);
    }

    #[test]
    fn round_trip_with_encoder() {
        let mut enc_buf = [0u8; 256];
        let mut enc = FieldEncoder::new(&mut enc_buf).unwrap();
        let input: &[(&[u8], &[u8])] = &[
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"example.com"),
            (b":path", b"/sensors/temp"),
            (b"user-agent", b"mote/0.1"),
            (b"x-custom", b"\x00\xff binary"),
        ];
        for (n, v) in input {
            enc.field(n, v).unwrap();
        }
        enc.field_never_indexed(b"authorization", b"secret").unwrap();
        let size = enc.size();
        let len = enc.finish();
        let mut out = [0u8; 512];
        let d = decode_field_section(&enc_buf[..len], 4096, &mut out).unwrap();
        let got: Vec<_> = d.fields.iter().collect();
        assert_eq!(got.len(), input.len() + 1);
        for (f, (n, v)) in got.iter().zip(input) {
            assert_eq!((f.name, f.value, f.never_indexed), (*n, *v, false));
        }
        assert_eq!(
            (got[6].name, got[6].value, got[6].never_indexed),
            (&b"authorization"[..], &b"secret"[..], true)
        );
        assert_eq!(d.fields.size(), size);
    }

    #[test]
    fn malformed_sections_fail() {
        let mut out = [0u8; 64];
        for bad in [
            &hex!("")[..],
            &hex!("00"),        // no Base
            &hex!("0100 80"),   // RIC != 0 without a table
            &hex!("0080 c1"),   // S = 1 with RIC 0: negative Base
            &hex!("0000 ff24"), // static index 99 + ... = past the table
            &hex!("0000 e3"),   // static 35 fine, but...
        ] {
            let r = decode_field_section(bad, 1000, &mut out);
            if bad == hex!("0000 e3") {
                assert!(r.is_ok());
            } else {
                assert_eq!(r, Err(DecodeError::Failed), "{bad:02x?}");
            }
        }
        // Dynamic references without a dynamic table.
        for bad in [&hex!("0000 80")[..], &hex!("0000 10"), &hex!("0000 4000"), &hex!("0000 0000")]
        {
            assert_eq!(decode_field_section(bad, 1000, &mut out), Err(DecodeError::Failed));
        }
        // Truncated string, invalid Huffman (EOS).
        assert_eq!(
            decode_field_section(&hex!("0000 5105 2f"), 1000, &mut out),
            Err(DecodeError::Failed)
        );
        assert_eq!(
            decode_field_section(&hex!("0000 5184 ffffffff"), 1000, &mut out),
            Err(DecodeError::Failed)
        );
    }

    /// The decoded size is enforced while decoding: a tiny block of indexed references
    /// expands past the limit and is refused at the first field that crosses it.
    #[test]
    fn decoded_size_limit_while_decoding() {
        // ":method: CONNECT" (static 15) = 7 + 7 + 32 = 46 bytes decoded from 1 byte.
        let mut block = vec![0u8, 0];
        block.extend(std::iter::repeat_n(0xcf, 1000));
        let mut out = [0u8; 256];
        assert_eq!(decode_field_section(&block, 200, &mut out), Err(DecodeError::TooLarge));
        // 4 fields fit in 184 bytes, 5 do not.
        assert!(decode_field_section(&block[..6], 184, &mut out).is_ok());
        assert_eq!(decode_field_section(&block[..7], 229, &mut out), Err(DecodeError::TooLarge));
        assert!(decode_field_section(&block[..7], 230, &mut out).is_ok());
    }

    /// Collects the lines a decoder pushes, as owned bytes (Huffman decoded).
    #[derive(Default)]
    struct Lines(Vec<(Vec<u8>, Vec<u8>, bool)>);

    impl LineSink for Lines {
        fn push(&mut self, name: Src<'_>, value: Src<'_>, never: bool) -> Result<(), PushError> {
            let own = |s: Src<'_>| -> Result<Vec<u8>, PushError> {
                Ok(match s {
                    Src::One(a) => a.to_vec(),
                    #[cfg(feature = "dynamic-table")]
                    Src::Plain(a, b) => [a, b].concat(),
                    Src::Huffman(h) => {
                        let mut v = Vec::new();
                        crate::qpack::huffman::decode_with(h, |c| {
                            v.push(c);
                            Ok(())
                        })
                        .map_err(|_| PushError::Invalid)?;
                        v
                    }
                    #[cfg(not(any(feature = "server", feature = "quic")))]
                    Src::Absent(len) => vec![b'?'; len],
                })
            };
            let line = (own(name)?, own(value)?, never);
            // A small limit, so that TooLarge comes up too.
            if self.0.len() == 6 {
                return Err(PushError::TooLarge);
            }
            self.0.push(line);
            Ok(())
        }
    }

    /// `decode_lines` (no table) against the general decoder with `NoTable`, on the
    /// malformed sections above, on every representation's first byte and on random bytes.
    fn both(block: &[u8]) {
        let (mut a, mut b) = (Lines::default(), Lines::default());
        let fast = decode_lines(block, &mut a);
        let general = decode_into(&NoTable, block, &mut b).map(|_| ());
        assert_eq!(fast, general, "{block:02x?}");
        assert_eq!(a.0, b.0, "{block:02x?}");
    }

    #[test]
    fn static_lines_match_the_general_decoder() {
        for block in [
            &hex!("")[..],
            &hex!("00"),
            &hex!("0100 80"),
            &hex!("0080 c1"),
            &hex!("0080"),
            &hex!("007f"),
            &hex!("007f 80 01 d9"),
            &hex!("ff00 d9"),
            &hex!("0000 ff24"),
            &hex!("0000 e3"),
            &hex!("0000 5105 2f"),
            &hex!("0000 5184 ffffffff"),
            &hex!("0000 510b 2f69 6e64 6578 2e68 746d 6c"),
            &hex!("0000 d9 d9 d9 d9 d9 d9 d9"),
            &hex!("0000 2378 2d74 0131"),
            &hex!("0000 7f45 0161"),
        ] {
            both(block);
        }
        for b in 0..=255u8 {
            both(&[0, 0, b]);
            both(&[0, 0, b, 0x01, 0x61, 0x01, 0x62]);
            both(&[0, 0, b, 0x81, 0xff]);
        }
    }

    proptest! {
        #[test]
        fn static_lines_match_on_random_blocks(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            both(&b);
            let mut prefixed = vec![0, 0];
            prefixed.extend_from_slice(&b);
            both(&prefixed);
        }

        #[test]
        fn random_blocks_never_panic(b in proptest::collection::vec(any::<u8>(), 0..128), limit in 0u64..4096) {
            let mut out = [0u8; 256];
            let _ = decode_field_section(&b, limit, &mut out);
        }

        #[test]
        fn random_fields_round_trip(
            fs in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..20), proptest::collection::vec(any::<u8>(), 0..40)),
                0..10,
            )
        ) {
            let mut enc_buf = [0u8; 2048];
            let mut enc = FieldEncoder::new(&mut enc_buf).unwrap();
            for (n, v) in &fs {
                enc.field(n, v).unwrap();
            }
            let len = enc.finish();
            let mut out = [0u8; 2048];
            let d = decode_field_section(&enc_buf[..len], u64::MAX, &mut out).unwrap();
            let got: Vec<_> = d.fields.iter().map(|f| (f.name.to_vec(), f.value.to_vec())).collect();
            prop_assert_eq!(got, fs);
        }
    }
}
