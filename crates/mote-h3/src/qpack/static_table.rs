//! The QPACK static table (RFC 9204 Appendix A): 99 entries, indexed from 0.

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

/// Size of [`PACKED`]: every entry's value and new name plus a length byte for each.
#[allow(clippy::indexing_slicing)]
const PACKED_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        n += 2 + STATIC_TABLE[i].1.len();
        if !repeats_name(i) {
            n += STATIC_TABLE[i].0.len();
        }
        i += 1;
    }
    n
};

/// [`STATIC_TABLE`] packed at compile time as `name_len name value_len value` per entry, in
/// index order; `name_len` 0 (no name is empty) means the previous entry's name, as for
/// the runs of `:method`, `:status` or `content-type`. Every name and value is shorter
/// than 256 bytes (checked at compile time).
#[allow(clippy::indexing_slicing)]
static PACKED: [u8; PACKED_LEN] = {
    let mut out = [0u8; PACKED_LEN];
    let mut at = 0;
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        let (name, value) = STATIC_TABLE[i];
        assert!(!name.is_empty() && name.len() < 256 && value.len() < 256);
        let mut j = 0;
        if repeats_name(i) {
            out[at] = 0;
            at += 1;
        } else {
            out[at] = name.len() as u8;
            at += 1;
            while j < name.len() {
                out[at] = name[j];
                at += 1;
                j += 1;
            }
        }
        out[at] = value.len() as u8;
        at += 1;
        j = 0;
        while j < value.len() {
            out[at] = value[j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    out
};

/// The entries of [`PACKED`] in index order.
fn entries() -> impl Iterator<Item = (&'static [u8], &'static [u8])> {
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

/// The entry at `index`, or `None` past the end (QPACK_DECOMPRESSION_FAILED for a field
/// line, QPACK_ENCODER_STREAM_ERROR for an encoder instruction).
pub fn get(index: u64) -> Option<(&'static [u8], &'static [u8])> {
    let i = usize::try_from(index).ok()?;
    entries().nth(i)
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
/// same name.
pub fn find(name: &[u8], value: &[u8]) -> Match {
    let mut by_name = None;
    for (i, (n, v)) in entries().enumerate() {
        if n == name {
            if v == value {
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
        assert!(entries().eq(STATIC_TABLE.iter().copied()));
        let repeated: usize = (1..99)
            .filter(|&i| STATIC_TABLE[i].0 == STATIC_TABLE[i - 1].0)
            .map(|i| STATIC_TABLE[i].0.len())
            .sum();
        assert_eq!(PACKED.len(), 2_026 + 2 * 99 - repeated);
    }
}
