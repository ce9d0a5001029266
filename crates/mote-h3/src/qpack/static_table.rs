//! The QPACK static table (RFC 9204 Appendix A): 99 entries, indexed from 0.

use super::huffman;

/// RFC 9204 Appendix A, in index order. A `const`: the image carries [`PACKED`] instead
/// (99 slice pairs are 1.6 KB of pointers and lengths on a 32-bit device).
#[rustfmt::skip]
pub const STATIC_TABLE: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// Whether entry `i` has the same name as entry `i - 1` (then [`PACKED`] stores it once).
// Evaluated at compile time: an index out of range fails the build, it never runs.
#[allow(clippy::indexing_slicing)]
const fn repeats_name(i: usize) -> bool {
    if i == 0 {
        return false;
    }
    let (a, b) = (STATIC_TABLE[i].0, STATIC_TABLE[i - 1].0);
    if a.len() != b.len() {
        return false;
    }
    let mut j = 0;
    while j < a.len() {
        if a[j] != b[j] {
            return false;
        }
        j += 1;
    }
    true
}

/// Size of [`PACKED`]: every entry's value and new name, Huffman-coded, plus a length byte
/// for each.
#[allow(clippy::indexing_slicing)]
const PACKED_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        n += 2 + huffman::const_encoded_len(STATIC_TABLE[i].1);
        if !repeats_name(i) {
            n += huffman::const_encoded_len(STATIC_TABLE[i].0);
        }
        i += 1;
    }
    n
};

/// [`STATIC_TABLE`] packed at compile time as `name_len name value_len value` per entry, in
/// index order, names and values Huffman-coded (RFC 7541 Appendix B: the table is mostly
/// lower-case text, a quarter smaller coded); `name_len` 0 (no name is empty) means the
/// previous entry's name, as for the runs of `:method`, `:status` or `content-type`. Every
/// coded name and value is shorter than 256 bytes (checked at compile time).
#[allow(clippy::indexing_slicing)]
static PACKED: [u8; PACKED_LEN] = {
    let mut out = [0u8; PACKED_LEN];
    let mut at = 0;
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        let (name, value) = STATIC_TABLE[i];
        assert!(!name.is_empty() && name.len() < 256 && value.len() < 256);
        if repeats_name(i) {
            out[at] = 0;
            at += 1;
        } else {
            out[at] = huffman::const_encoded_len(name) as u8;
            at = huffman::const_encode(name, &mut out, at + 1);
        }
        out[at] = huffman::const_encoded_len(value) as u8;
        at = huffman::const_encode(value, &mut out, at + 1);
        i += 1;
    }
    assert!(at == PACKED_LEN);
    out
};

/// The entries of [`PACKED`] in index order, Huffman-coded.
fn coded_entries() -> impl Iterator<Item = (&'static [u8], &'static [u8])> {
    let mut rest: &'static [u8] = &PACKED;
    let mut prev: &'static [u8] = &[];
    core::iter::from_fn(move || {
        let name = take(&mut rest)?;
        let name = if name.is_empty() { prev } else { name };
        prev = name;
        let value = take(&mut rest)?;
        Some((name, value))
    })
}

/// Splits one length-prefixed string off the front of `rest`.
fn take(rest: &mut &'static [u8]) -> Option<&'static [u8]> {
    let (&len, tail) = rest.split_first()?;
    let (s, tail) = tail.split_at_checked(usize::from(len))?;
    *rest = tail;
    Some(s)
}

/// The entry at `index`, Huffman-coded (name, value), or `None` past the end
/// (QPACK_DECOMPRESSION_FAILED for a field line). What the decoder copies out of.
pub fn get_coded(index: u64) -> Option<(&'static [u8], &'static [u8])> {
    let i = usize::try_from(index).ok()?;
    coded_entries().nth(i)
}

/// The entry at `index` as plain bytes, or `None` past the end (QPACK_ENCODER_STREAM_ERROR
/// for an encoder instruction). For the dynamic table, which copies names; the device
/// decoder uses [`get_coded`] (this one brings [`STATIC_TABLE`] into the image).
pub fn get(index: u64) -> Option<(&'static [u8], &'static [u8])> {
    let i = usize::try_from(index).ok()?;
    STATIC_TABLE.get(i).copied()
}

/// What the static table offers for a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Name and value match this entry.
    Full(u8),
    /// Only the name matches this (first such) entry.
    Name(u8),
    /// Nothing matches.
    None,
}

/// Looks `name`/`value` up: an exact entry if there is one, else the first entry with the
/// same name. The coding is one-to-one, so an entry whose coded length differs cannot match
/// and is passed over without decoding.
pub fn find(name: &[u8], value: &[u8]) -> Match {
    let (name_len, value_len) = (huffman::encoded_len(name), huffman::encoded_len(value));
    let mut by_name = None;
    let mut prev: &[u8] = &[];
    let mut prev_matched = false;
    for (i, (n, v)) in coded_entries().enumerate() {
        // Runs of one name (`:status`, ...) are compared once.
        let matched = if core::ptr::eq(n, prev) {
            prev_matched
        } else {
            n.len() == name_len && huffman::decodes_to(n, name)
        };
        (prev, prev_matched) = (n, matched);
        if matched {
            if v.len() == value_len && huffman::decodes_to(v, value) {
                return Match::Full(i as u8);
            }
            if by_name.is_none() {
                by_name = Some(i as u8);
            }
        }
    }
    match by_name {
        Some(i) => Match::Name(i),
        None => Match::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appendix_a_landmarks() {
        assert_eq!(STATIC_TABLE.len(), 99);
        assert_eq!(get(0), Some((&b":authority"[..], &b""[..])));
        assert_eq!(get(17), Some((&b":method"[..], &b"GET"[..])));
        assert_eq!(get(25), Some((&b":status"[..], &b"200"[..])));
        assert_eq!(get(52), Some((&b"content-type"[..], &b"text/html; charset=utf-8"[..])));
        assert_eq!(get(98), Some((&b"x-frame-options"[..], &b"sameorigin"[..])));
        assert_eq!(get(99), None);
        assert_eq!(get(u64::MAX), None);
        assert_eq!(find(b":path", b"/"), Match::Full(1));
        assert_eq!(find(b":path", b"/index.html"), Match::Name(1));
        assert_eq!(find(b":status", b"418"), Match::Name(24));
        assert_eq!(find(b"x-custom", b"1"), Match::None);
        // Total size of the table's strings, a guard against an edited entry.
        let bytes: usize = STATIC_TABLE.iter().map(|(n, v)| n.len() + v.len()).sum();
        assert_eq!(bytes, 2_026);
        // The packed form holds exactly the table.
        let plain = |s: &[u8]| {
            let mut out = vec![0u8; 256];
            let n = huffman::decode(s, &mut out).unwrap();
            out.truncate(n);
            out
        };
        assert!(coded_entries()
            .map(|(n, v)| (plain(n), plain(v)))
            .eq(STATIC_TABLE.iter().map(|(n, v)| (n.to_vec(), v.to_vec()))));
        assert_eq!(coded_entries().count(), 99);
        assert_eq!(get_coded(99), None);
        // Every entry is found by its name and value (duplicated names find their first).
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            assert_eq!(find(n, v), Match::Full(i as u8));
            let first = STATIC_TABLE.iter().position(|(m, _)| m == n).unwrap();
            assert_eq!(find(n, b"\x01no such value"), Match::Name(first as u8));
        }
        assert_eq!(find(b"", b""), Match::None);
        assert_eq!(find(b":pat", b"/"), Match::None);
    }
}
