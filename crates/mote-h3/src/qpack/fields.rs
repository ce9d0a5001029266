//! Decoded field sections, stored packed in a caller-provided buffer.
//!
//! Each field is an 8-byte header (name length as a little-endian `u32` whose top bit is
//! the never-indexed flag, then the value length) followed by the name and value bytes.
//! 8 bytes of header is less than the 32 bytes RFC 9114 §4.2.2 charges per field, so an
//! output buffer of SETTINGS_MAX_FIELD_SECTION_SIZE bytes holds any section within that
//! limit.
//!
//! A device-only build (neither `server` nor `quic`) stores an opaque static table entry
//! (`static_device`) without its name bytes (bit 30 of the name length) and, for an
//! indexed one, without its value bytes (top bit of the value length): the lengths still
//! count in the size, the message checks see the line, [`FieldSection::iter`] skips it.

use super::huffman::{self, HuffmanError};

/// Packed header bytes per field.
pub(crate) const FIELD_HEADER: usize = 8;
/// RFC 9114 §4.2.2 (and RFC 9204 §3.2.1): per-field overhead in the size of a field section.
pub const FIELD_OVERHEAD: u64 = 32;
const NEVER_INDEXED: u32 = 1 << 31;
/// In the name length: the name is a static table entry's whose bytes a device build does
/// not keep (`static_device`); the length counts, no bytes follow.
const NAME_ABSENT: u32 = 1 << 30;
/// In the value length: likewise for the value.
const VALUE_ABSENT: u32 = 1 << 31;

/// One decoded field line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field name (lower case in valid HTTP/3).
    pub name: &'a [u8],
    /// The field value.
    pub value: &'a [u8],
    /// The N bit: intermediaries must not add this field to a dynamic table
    /// (RFC 9204 §4.5.4).
    pub never_indexed: bool,
}

/// A decoded field section: the fields in order, borrowed from the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSection<'a> {
    buf: &'a [u8],
}

impl<'a> FieldSection<'a> {
    /// An empty section.
    pub const EMPTY: FieldSection<'static> = FieldSection { buf: &[] };

    /// The fields in order.
    pub fn iter(&self) -> Fields<'a> {
        Fields { buf: self.buf }
    }

    /// The value of the first field called `name`.
    pub fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.iter().find(|f| f.name == name).map(|f| f.value)
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True if there are no field lines (a device build's opaque static entries count).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The size RFC 9114 §4.2.2 defines: name + value + 32 for each field.
    pub fn size(&self) -> u64 {
        let mut lines = self.iter();
        let mut size = 0;
        while let Some(Line { field: f, absent }) = lines.next_line() {
            size += (f.name.len() + f.value.len() + absent) as u64 + FIELD_OVERHEAD;
        }
        size
    }
}

impl<'a> IntoIterator for FieldSection<'a> {
    type Item = Field<'a>;
    type IntoIter = Fields<'a>;
    fn into_iter(self) -> Fields<'a> {
        self.iter()
    }
}

/// Iterator over a [`FieldSection`].
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    buf: &'a [u8],
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// One stored field line: the field and the bytes it counts but does not keep (a device
/// build's opaque static entries; 0 otherwise).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line<'a> {
    pub(crate) field: Field<'a>,
    pub(crate) absent: usize,
}

impl<'a> Fields<'a> {
    /// The next stored line, opaque ones included (what the message checks go through).
    pub(crate) fn next_line(&mut self) -> Option<Line<'a>> {
        let n = read_u32(self.buf, 0)?;
        let v = read_u32(self.buf, 4)?;
        let name_len = (n & !(NEVER_INDEXED | NAME_ABSENT)) as usize;
        let value_len = (v & !VALUE_ABSENT) as usize;
        let kept = |len: usize, absent: bool| if absent { 0 } else { len };
        let name_kept = kept(name_len, n & NAME_ABSENT != 0);
        let value_kept = kept(value_len, v & VALUE_ABSENT != 0);
        let name_end = FIELD_HEADER.checked_add(name_kept)?;
        let end = name_end.checked_add(value_kept)?;
        let name = self.buf.get(FIELD_HEADER..name_end)?;
        let value = self.buf.get(name_end..end)?;
        self.buf = self.buf.get(end..)?;
        let field = Field { name, value, never_indexed: n & NEVER_INDEXED != 0 };
        Some(Line { field, absent: name_len - name_kept + value_len - value_kept })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Field<'a>;
    /// The next field; a device build skips opaque static entries (`static_device`).
    fn next(&mut self) -> Option<Field<'a>> {
        loop {
            let line = self.next_line()?;
            if line.absent == 0 {
                return Some(line.field);
            }
        }
    }
}

/// Where a name or value comes from while decoding.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Src<'s> {
    /// Plain bytes.
    One(&'s [u8]),
    /// Plain bytes in two parts (a dynamic table entry can wrap around its ring).
    #[cfg(feature = "dynamic-table")]
    Plain(&'s [u8], &'s [u8]),
    /// Huffman-coded bytes.
    Huffman(&'s [u8]),
    /// This many bytes of an opaque static entry, counted but not kept (device build).
    #[cfg(not(any(feature = "server", feature = "quic")))]
    Absent(usize),
}

impl<'s> Src<'s> {
    pub(crate) fn one(b: &'s [u8]) -> Self {
        Src::One(b)
    }
}

/// Why a field could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PushError {
    /// A Huffman string was invalid. (First, as in `HuffmanError` and as `Failed` in
    /// `DecodeError`: the conversions between them are then no-ops.)
    Invalid,
    /// The section outgrew its limit or the output buffer.
    TooLarge,
}

/// Writes decoded fields into the caller's buffer, enforcing the size limit field by field
/// and byte by byte, so decoding stops as soon as the limit is passed.
pub(crate) struct SectionWriter<'o> {
    out: &'o mut [u8],
    pos: usize,
    size: u64,
    limit: u64,
}

impl<'o> SectionWriter<'o> {
    pub(crate) fn new(out: &'o mut [u8], limit: u64) -> Self {
        Self { out, pos: 0, size: 0, limit }
    }

    /// Copies `src` to `at`, at most `budget` bytes and never past the buffer; returns the
    /// bytes it counts and whether they were kept.
    fn write(
        &mut self,
        at: usize,
        budget: usize,
        src: Src<'_>,
    ) -> Result<(usize, bool), PushError> {
        let end = at.saturating_add(budget).min(self.out.len());
        let room = end.saturating_sub(at);
        match src {
            Src::One(a) => {
                // Checked before copying anything: an oversized literal aborts at once.
                if a.len() > room {
                    return Err(PushError::TooLarge);
                }
                let dst = self.out.get_mut(at..at + a.len()).ok_or(PushError::TooLarge)?;
                dst.copy_from_slice(a);
                Ok((a.len(), true))
            }
            #[cfg(feature = "dynamic-table")]
            Src::Plain(a, b) => {
                let len = a.len().checked_add(b.len()).ok_or(PushError::TooLarge)?;
                // Checked before copying anything: an oversized literal aborts at once.
                if len > room {
                    return Err(PushError::TooLarge);
                }
                let dst = self.out.get_mut(at..at + len).ok_or(PushError::TooLarge)?;
                let (da, db) = dst.split_at_mut(a.len());
                da.copy_from_slice(a);
                db.copy_from_slice(b);
                Ok((len, true))
            }
            Src::Huffman(h) => {
                let dst = self.out.get_mut(at..end).ok_or(PushError::TooLarge)?;
                let len = huffman::decode(h, dst).map_err(|e| match e {
                    HuffmanError::OutputFull => PushError::TooLarge,
                    HuffmanError::Invalid => PushError::Invalid,
                })?;
                Ok((len, true))
            }
            // Takes no room in the buffer, only in the size limit.
            #[cfg(not(any(feature = "server", feature = "quic")))]
            Src::Absent(len) if len <= budget => Ok((len, false)),
            #[cfg(not(any(feature = "server", feature = "quic")))]
            Src::Absent(_) => Err(PushError::TooLarge),
        }
    }

    /// Appends one field, failing with `TooLarge` as soon as the section would pass its
    /// limit (counting 32 bytes of overhead per field) or the output buffer.
    pub(crate) fn push(
        &mut self,
        name: Src<'_>,
        value: Src<'_>,
        never: bool,
    ) -> Result<(), PushError> {
        let with_overhead = self.size.checked_add(FIELD_OVERHEAD).ok_or(PushError::TooLarge)?;
        if with_overhead > self.limit {
            return Err(PushError::TooLarge);
        }
        let budget = usize::try_from(self.limit - with_overhead).unwrap_or(usize::MAX);
        let start = self.pos;
        let body = start.checked_add(FIELD_HEADER).ok_or(PushError::TooLarge)?;
        if body > self.out.len() {
            return Err(PushError::TooLarge);
        }
        let (name_len, name_kept) = self.write(body, budget, name)?;
        let value_at = if name_kept { body + name_len } else { body };
        let (value_len, value_kept) = self.write(value_at, budget - name_len, value)?;
        let n = u32::try_from(name_len).map_err(|_| PushError::TooLarge)?;
        let v = u32::try_from(value_len).map_err(|_| PushError::TooLarge)?;
        if (n | v) & (NEVER_INDEXED | NAME_ABSENT) != 0 {
            return Err(PushError::TooLarge);
        }
        let n = if never { n | NEVER_INDEXED } else { n };
        let n = if name_kept { n } else { n | NAME_ABSENT };
        let v = if value_kept { v } else { v | VALUE_ABSENT };
        let hdr = self.out.get_mut(start..body).ok_or(PushError::TooLarge)?;
        let (hn, hv) = hdr.split_at_mut(4);
        hn.copy_from_slice(&n.to_le_bytes());
        hv.copy_from_slice(&v.to_le_bytes());
        self.pos = if value_kept { value_at + value_len } else { value_at };
        self.size = with_overhead + name_len as u64 + value_len as u64;
        Ok(())
    }

    pub(crate) fn finish(self) -> FieldSection<'o> {
        let pos = self.pos;
        let buf: &'o [u8] = self.out;
        FieldSection { buf: buf.get(..pos).unwrap_or(&[]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_enforces_limit_and_round_trips() {
        let mut buf = [0u8; 128];
        let mut w = SectionWriter::new(&mut buf, 32 + 5 + 32 + 3);
        #[cfg(feature = "dynamic-table")]
        w.push(Src::one(b"a"), Src::Plain(b"bc", b"de"), false).unwrap();
        #[cfg(not(feature = "dynamic-table"))]
        w.push(Src::one(b"a"), Src::one(b"bcde"), false).unwrap();
        w.push(Src::one(b"xy"), Src::one(b"z"), true).unwrap();
        assert_eq!(w.push(Src::one(b""), Src::one(b""), false), Err(PushError::TooLarge));
        let s = w.finish();
        let v: Vec<_> = s.iter().collect();
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].name, v[0].value, v[0].never_indexed), (&b"a"[..], &b"bcde"[..], false));
        assert_eq!((v[1].name, v[1].value, v[1].never_indexed), (&b"xy"[..], &b"z"[..], true));
        assert_eq!(s.size(), 32 + 5 + 32 + 3);
        assert_eq!(s.get(b"xy"), Some(&b"z"[..]));
        assert_eq!(s.len(), 2);

        // One byte over the limit is refused before anything is copied.
        let mut buf = [0u8; 128];
        let mut w = SectionWriter::new(&mut buf, 32 + 4);
        assert_eq!(w.push(Src::one(b"ab"), Src::one(b"cde"), false), Err(PushError::TooLarge));
        // The output buffer bounds it too.
        let mut small = [0u8; 10];
        let mut w = SectionWriter::new(&mut small, 1000);
        assert_eq!(w.push(Src::one(b"abc"), Src::one(b""), false), Err(PushError::TooLarge));
    }
}
