//! The QPACK static table as a device-only build (neither `server` nor `quic`) keeps it:
//! in full only the entries a client's checks and application read, the lengths of the
//! rest.
//!
//! A client checks a response head (RFC 9114 §4.3.2): exactly one `:status` and no other
//! pseudo-header, pseudo-headers first, no connection-specific field, valid names and
//! values, and content-length against the body (§4.1.2). For that it needs the name and
//! value of every pseudo-header and `content-length` entry ("known" entries, 26 of 99,
//! 87 bytes of values). Every other entry's name is a valid lower-case token that is not
//! connection-specific and its value is valid (test `opaque_entries_are_valid_regular_fields`),
//! so such a field line is a regular field the checks accept whatever it is: the decoder
//! records it as opaque (its lengths, for the decoded-size limit of §4.2.2, and a literal
//! value, which is still checked) and the application does not see it. The table is built
//! at compile time from [`STATIC_TABLE`]: 2 bytes per entry plus the known text, where the
//! full Huffman-coded table is 1.3 KB.
//!
//! The encoder finds known entries only (a device sends pseudo-headers and content-length
//! through them exactly as the full table would); other names are sent as literals.

use super::static_table::{Match, STATIC_TABLE};

/// The names of the known entries, by kind (1-based in [`ENTRIES`]).
const KNOWN_NAMES: [&[u8]; 6] =
    [b":authority", b":path", b":method", b":scheme", b":status", b"content-length"];

/// The kind of an entry's name: 0 for an opaque entry, else 1 + its position in
/// [`KNOWN_NAMES`].
#[allow(clippy::indexing_slicing)]
const fn kind_of(name: &[u8]) -> u16 {
    let mut k = 0;
    'names: while k < KNOWN_NAMES.len() {
        let known = KNOWN_NAMES[k];
        k += 1;
        if known.len() != name.len() {
            continue;
        }
        let mut j = 0;
        while j < name.len() {
            if known[j] != name[j] {
                continue 'names;
            }
            j += 1;
        }
        return k as u16;
    }
    0
}

/// Per entry, in index order, 16 bits: the kind of its name (bits 12-15) and, for an
/// opaque entry, its name length (bits 0-5) and value length (bits 6-11); for a known
/// entry, where its value starts in [`KNOWN_VALUES`] (bits 0-6) and its length (bits 7-11).
#[allow(clippy::indexing_slicing)]
static ENTRIES: [u16; 99] = {
    let mut out = [0u16; 99];
    let mut at = 0;
    let mut i = 0;
    while i < 99 {
        let (name, value) = STATIC_TABLE[i];
        let kind = kind_of(name);
        out[i] = if kind == 0 {
            assert!(name.len() < 64 && value.len() < 64);
            name.len() as u16 | (value.len() as u16) << 6
        } else {
            assert!(at < 128 && value.len() < 32);
            at as u16 | (value.len() as u16) << 7 | kind << 12
        };
        at += if kind == 0 { 0 } else { value.len() };
        i += 1;
    }
    out
};

/// Size of [`KNOWN_VALUES`].
#[allow(clippy::indexing_slicing)]
const KNOWN_VALUES_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < 99 {
        if kind_of(STATIC_TABLE[i].0) != 0 {
            n += STATIC_TABLE[i].1.len();
        }
        i += 1;
    }
    n
};

/// The values of the known entries, concatenated in index order.
#[allow(clippy::indexing_slicing)]
static KNOWN_VALUES: [u8; KNOWN_VALUES_LEN] = {
    let mut out = [0u8; KNOWN_VALUES_LEN];
    let mut at = 0;
    let mut i = 0;
    while i < 99 {
        let (name, value) = STATIC_TABLE[i];
        if kind_of(name) != 0 {
            let mut j = 0;
            while j < value.len() {
                out[at] = value[j];
                at += 1;
                j += 1;
            }
        }
        i += 1;
    }
    out
};

/// A static table entry as the device decoder sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A pseudo-header or content-length entry: its name and value.
    Known(&'static [u8], &'static [u8]),
    /// Any other entry (a valid regular field): the lengths of its name and value.
    Opaque(usize, usize),
}

/// Entry `e` of [`ENTRIES`] unpacked.
fn entry(e: u16) -> Option<Entry> {
    let Some(kind) = usize::from(e >> 12).checked_sub(1) else {
        return Some(Entry::Opaque(usize::from(e & 0x3f), usize::from((e >> 6) & 0x3f)));
    };
    let at = usize::from(e & 0x7f);
    let value = KNOWN_VALUES.get(at..at + usize::from((e >> 7) & 0x1f))?;
    Some(Entry::Known(KNOWN_NAMES.get(kind)?, value))
}

/// The entry at `index`, or `None` past the end (QPACK_DECOMPRESSION_FAILED).
pub(crate) fn get(index: u64) -> Option<Entry> {
    entry(*ENTRIES.get(usize::try_from(index).ok()?)?)
}

/// Looks `name`/`value` up among the known entries: an exact entry if there is one, else
/// the first known entry with the same name.
pub fn find(name: &[u8], value: &[u8]) -> Match {
    let mut by_name = Match::None;
    for (i, &e) in ENTRIES.iter().enumerate() {
        if let Some(Entry::Known(n, v)) = entry(e) {
            if n == name {
                if v == value {
                    return Match::Full(i as u8);
                }
                if by_name == Match::None {
                    by_name = Match::Name(i as u8);
                }
            }
        }
    }
    by_name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::regular_field_ok;

    /// Every entry is what Appendix A says: known ones in full, the others by length.
    #[test]
    fn entries_match_appendix_a() {
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            let known = n.starts_with(b":") || *n == b"content-length";
            let want = if known { Entry::Known(n, v) } else { Entry::Opaque(n.len(), v.len()) };
            assert_eq!(get(i as u64), Some(want), "{i}");
        }
        assert_eq!(get(99), None);
        assert_eq!(get(u64::MAX), None);
        assert_eq!(ENTRIES.iter().filter(|&&e| e >> 12 != 0).count(), 26);
        assert_eq!(KNOWN_VALUES_LEN, 87);
    }

    /// What makes dropping the opaque entries' text safe: each is a regular field that
    /// passes every check whatever literal value it carries, and none is content-length.
    #[test]
    fn opaque_entries_are_valid_regular_fields() {
        for (n, v) in STATIC_TABLE.iter().filter(|(n, _)| kind_of(n) == 0) {
            assert!(!n.starts_with(b":") && *n != b"content-length" && *n != b"te");
            assert!(regular_field_ok(n, v), "{n:?}");
            assert!(regular_field_ok(n, b"any value"), "{n:?}");
        }
    }

    /// The encoder's lookup agrees with the full table on every known entry.
    #[test]
    fn find_known_entries() {
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate().filter(|(_, (n, _))| kind_of(n) != 0) {
            assert_eq!(find(n, v), super::super::static_table::find(n, v), "{i}");
            assert_eq!(find(n, b"\x01x"), super::super::static_table::find(n, b"\x01x"));
        }
        assert_eq!(find(b":path", b"/index.html"), Match::Name(1));
        assert_eq!(find(b":status", b"418"), Match::Name(24));
        assert_eq!(find(b"content-length", b"1024"), Match::Name(4));
        assert_eq!(find(b"user-agent", b""), Match::None);
    }
}
