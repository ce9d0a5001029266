//! HTTP message heads over HTTP/3 (RFC 9114 §4.1–§4.3): building request and response
//! field sections, and checking received ones.
//!
//! A received field section that breaks the rules below is malformed (§4.1.2) and the
//! session answers it with a stream error of type H3_MESSAGE_ERROR.

use crate::error::{BufferTooSmall, H3Error};
use crate::qpack::fields::Line;
use crate::qpack::{FieldEncoder, FieldSection};

/// The fields of a request to send (RFC 9114 §4.3.1). Pseudo-header fields are written
/// first, then `headers` (whose names must be lower case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// `:method`.
    pub method: &'a [u8],
    /// `:scheme` (normally `https`).
    pub scheme: &'a [u8],
    /// `:authority`.
    pub authority: &'a [u8],
    /// `:path`, including the query.
    pub path: &'a [u8],
    /// Further header fields.
    pub headers: &'a [(&'a [u8], &'a [u8])],
}

impl<'a> Request<'a> {
    /// A `GET https://authority/path` request.
    pub const fn get(authority: &'a [u8], path: &'a [u8]) -> Self {
        Self { method: b"GET", scheme: b"https", authority, path, headers: &[] }
    }

    /// A `POST https://authority/path` request.
    pub const fn post(authority: &'a [u8], path: &'a [u8]) -> Self {
        Self { method: b"POST", scheme: b"https", authority, path, headers: &[] }
    }

    /// The same request with `headers` as its further header fields.
    pub const fn with_headers(self, headers: &'a [(&'a [u8], &'a [u8])]) -> Self {
        Self { headers, ..self }
    }

    /// Appends the request's fields to `enc`.
    pub fn encode(&self, enc: &mut FieldEncoder<'_>) -> Result<(), BufferTooSmall> {
        enc.field(b":method", self.method)?;
        enc.field(b":scheme", self.scheme)?;
        enc.field(b":authority", self.authority)?;
        enc.field(b":path", self.path)?;
        for (n, v) in self.headers {
            enc.field(n, v)?;
        }
        Ok(())
    }
}

/// The fields of a response to send (RFC 9114 §4.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response<'a> {
    /// The status code, 100..=999. 1xx codes make an interim response.
    pub status: u16,
    /// Further header fields (lower-case names).
    pub headers: &'a [(&'a [u8], &'a [u8])],
}

impl<'a> Response<'a> {
    /// A response with `status` and no further fields.
    pub const fn new(status: u16) -> Self {
        Self { status, headers: &[] }
    }

    /// The same response with `headers` as its further header fields.
    pub const fn with_headers(self, headers: &'a [(&'a [u8], &'a [u8])]) -> Self {
        Self { headers, ..self }
    }

    /// True for an interim (1xx) response.
    pub const fn is_interim(&self) -> bool {
        self.status >= 100 && self.status <= 199
    }

    /// Appends the response's fields to `enc`. A status outside 100..=999 has no
    /// three-digit form and is refused (as [`BufferTooSmall`]); the session checks it
    /// first and reports [`crate::SendError::InvalidState`].
    pub fn encode(&self, enc: &mut FieldEncoder<'_>) -> Result<(), BufferTooSmall> {
        let digits = status_digits(self.status).ok_or(BufferTooSmall)?;
        enc.field(b":status", &digits)?;
        for (n, v) in self.headers {
            enc.field(n, v)?;
        }
        Ok(())
    }
}

/// The three ASCII digits of a status code (no `core::fmt`).
pub fn status_digits(status: u16) -> Option<[u8; 3]> {
    if !(100..=999).contains(&status) {
        return None;
    }
    let mut s = status;
    let mut d = [0u8; 3];
    for slot in d.iter_mut().rev() {
        // u16 by constant: no 64-bit division.
        *slot = b'0' + (s % 10) as u8;
        s /= 10;
    }
    Some(d)
}

/// Parses three ASCII digits into a status code.
fn parse_status(v: &[u8]) -> Option<u16> {
    let [a, b, c] = <[u8; 3]>::try_from(v).ok()?;
    let mut s = 0u16;
    for d in [a, b, c] {
        if !d.is_ascii_digit() {
            return None;
        }
        s = s * 10 + u16::from(d - b'0');
    }
    (s >= 100).then_some(s)
}

/// The pseudo-header fields of a received request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHead<'a> {
    /// `:method`.
    pub method: &'a [u8],
    /// `:scheme` (absent for CONNECT).
    pub scheme: Option<&'a [u8]>,
    /// `:authority`.
    pub authority: Option<&'a [u8]>,
    /// `:path` (absent for CONNECT).
    pub path: Option<&'a [u8]>,
}

/// RFC 9110 §5.6.2 `tchar` without upper case (RFC 9114 §4.2), one bit per byte value
/// below 128 (built at compile time).
#[allow(clippy::indexing_slicing)]
const NAME_BYTES: [u8; 16] = {
    let allowed = b"abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";
    let mut bits = [0u8; 16];
    let mut i = 0;
    while i < allowed.len() {
        bits[(allowed[i] >> 3) as usize] |= 1 << (allowed[i] & 7);
        i += 1;
    }
    bits
};

/// Field name rules (RFC 9114 §4.2, RFC 9110 §5.1): non-empty tokens in lower case.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| name_byte_ok(c))
}

/// One byte of a field name (see [`valid_name`]).
pub(crate) fn name_byte_ok(c: u8) -> bool {
    NAME_BYTES.get(usize::from(c >> 3)).is_some_and(|bits| (bits >> (c & 7)) & 1 != 0)
}

/// Field value rules (RFC 9114 §4.2, RFC 9110 §5.5): no NUL, CR or LF, no leading or
/// trailing whitespace.
fn valid_value(v: &[u8]) -> bool {
    !v.iter().any(|&c| matches!(c, 0 | b'\r' | b'\n'))
        && !matches!(v.first(), Some(b' ' | b'\t'))
        && !matches!(v.last(), Some(b' ' | b'\t'))
}

/// The names the response checks single out, each after its length (one table and one
/// loop rather than a string comparison per name): `:status`, `te`, `content-length`, then
/// the connection-specific fields, malformed in HTTP/3 (RFC 9114 §4.2).
const NAMES: &[u8] = b"\x07:status\x02te\x0econtent-length\x0aconnection\x0akeep-alive\x10proxy-connection\x11transfer-encoding\x07upgrade";

/// [`known_name`]: `:status`.
pub(crate) const STATUS: usize = 0;
/// [`known_name`]: `te`.
pub(crate) const TE: usize = 1;
/// [`known_name`]: `content-length`.
pub(crate) const CONTENT_LENGTH: usize = 2;
/// [`known_name`]: the first connection-specific name; every index from here on is one.
const CONNECTION_SPECIFIC: usize = 3;
/// [`known_name`]: none of the names (or a name longer than all of them).
pub(crate) const OTHER: usize = 8;

/// Which of [`NAMES`] `name` is (its index), or [`OTHER`].
pub(crate) fn known_name(name: &[u8]) -> usize {
    let mut rest = NAMES;
    let mut i = 0;
    while let Some((&len, tail)) = rest.split_first() {
        let Some((known, tail)) = tail.split_at_checked(usize::from(len)) else { break };
        if name == known {
            return i;
        }
        rest = tail;
        i += 1;
    }
    OTHER
}

/// Whether a name is connection-specific, by its [`known_name`] index.
pub(crate) fn is_connection_specific(known: usize) -> bool {
    (CONNECTION_SPECIFIC..OTHER).contains(&known)
}

/// Connection-specific fields are malformed in HTTP/3 (§4.2); `te` may only say
/// "trailers".
pub(crate) fn regular_field_ok(name: &[u8], value: &[u8]) -> bool {
    if connection_specific(name) {
        return false;
    }
    if name == b"te" {
        return value == b"trailers";
    }
    valid_name(name) && valid_value(value)
}

/// Whether `name` is one of the connection-specific fields (RFC 9114 §4.2).
pub(crate) fn connection_specific(name: &[u8]) -> bool {
    is_connection_specific(known_name(name))
}

/// A regular field line (no pseudo-header: `regular_field_ok` refuses a `:`). A device
/// build's opaque static entry (`qpack::static_device`) has a valid name that is neither
/// connection-specific nor `te`, so only its value, if literal, is left to check.
fn regular_line_ok(line: &Line<'_>) -> bool {
    let f = line.field;
    if line.absent != 0 {
        valid_value(f.value)
    } else {
        regular_field_ok(f.name, f.value)
    }
}

/// Checks a received request head (§4.3.1) and returns its pseudo-header fields.
pub fn parse_request<'a>(fields: &FieldSection<'a>) -> Result<RequestHead<'a>, H3Error> {
    let mut method = None;
    let mut scheme = None;
    let mut authority = None;
    let mut path = None;
    let mut regular = false;
    for f in fields.iter() {
        if let Some(pseudo) = f.name.strip_prefix(b":") {
            // Pseudo-header fields come first, once each, from the defined set.
            if regular || !valid_value(f.value) {
                return Err(H3Error::MessageError);
            }
            let slot = match pseudo {
                b"method" => &mut method,
                b"scheme" => &mut scheme,
                b"authority" => &mut authority,
                b"path" => &mut path,
                _ => return Err(H3Error::MessageError),
            };
            if slot.replace(f.value).is_some() {
                return Err(H3Error::MessageError);
            }
        } else {
            regular = true;
            if !regular_field_ok(f.name, f.value) {
                return Err(H3Error::MessageError);
            }
        }
    }
    let method = method.ok_or(H3Error::MessageError)?;
    if method == b"CONNECT" {
        // §4.4: only :method and :authority.
        if scheme.is_some() || path.is_some() || authority.is_none() {
            return Err(H3Error::MessageError);
        }
    } else if scheme.is_none() || path.is_none_or(|p| p.is_empty()) {
        return Err(H3Error::MessageError);
    }
    Ok(RequestHead { method, scheme, authority, path })
}

/// Checks a received response head (§4.3.2) and returns its status code.
pub fn parse_response(fields: &FieldSection<'_>) -> Result<u16, H3Error> {
    let mut status = None;
    let mut regular = false;
    let mut lines = fields.iter();
    while let Some(line) = lines.next_line() {
        let f = line.field;
        if line.absent == 0 && f.name.first() == Some(&b':') {
            if regular || f.name != b":status" || status.is_some() {
                return Err(H3Error::MessageError);
            }
            status = Some(parse_status(f.value).ok_or(H3Error::MessageError)?);
        } else {
            regular = true;
            if !regular_line_ok(&line) {
                return Err(H3Error::MessageError);
            }
        }
    }
    status.ok_or(H3Error::MessageError)
}

/// The declared content length of a received header section, if it has a content-length
/// field (RFC 9110 §8.6: `Content-Length = 1*DIGIT`). Several content-length field lines
/// must all carry the same value; anything else (a list, a sign, spaces, a value of 2^62 or
/// more, which no stream can carry) is malformed (RFC 9114 §4.1.2).
pub fn content_length(fields: &FieldSection<'_>) -> Result<Option<u64>, H3Error> {
    let mut declared = None;
    for f in fields.iter().filter(|f| f.name == b"content-length") {
        add_content_length(&mut declared, f.value)?;
    }
    Ok(declared)
}

/// Parses one content-length value into `declared` (see [`content_length`]).
fn add_content_length(declared: &mut Option<u64>, value: &[u8]) -> Result<(), H3Error> {
    if value.is_empty() {
        return Err(H3Error::MessageError);
    }
    let mut v = 0u64;
    for &c in value {
        v = push_digit(v, c).ok_or(H3Error::MessageError)?;
    }
    if declared.is_some_and(|d| d != v) {
        return Err(H3Error::MessageError);
    }
    *declared = Some(v);
    Ok(())
}

/// `v` followed by the decimal digit `c`, if `c` is a digit and the result is below 2^62
/// (a content-length no stream can carry is malformed).
pub(crate) fn push_digit(v: u64, c: u8) -> Option<u64> {
    // Up to this, `v * 10 + 9` cannot wrap (a constant: no division at run time).
    const MAX_BEFORE_DIGIT: u64 = crate::coding::VARINT_MAX / 10;
    let d = c.wrapping_sub(b'0');
    if d > 9 || v > MAX_BEFORE_DIGIT {
        return None;
    }
    Some(v * 10 + u64::from(d)).filter(|v| *v <= crate::coding::VARINT_MAX)
}

/// Checks a received trailer section: no pseudo-header fields (§4.3).
pub fn check_trailers(fields: &FieldSection<'_>) -> Result<(), H3Error> {
    let mut lines = fields.iter();
    while let Some(line) = lines.next_line() {
        if !regular_line_ok(&line) {
            return Err(H3Error::MessageError);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qpack::{decode_field_section, encode_field_section};

    /// `push_digit` is `v * 10 + digit` below 2^62, checked arithmetic's result, at the
    /// edges of its no-wrap bound and for every byte.
    #[test]
    fn push_digit_matches_checked_arithmetic() {
        let max = crate::coding::VARINT_MAX;
        for v in [0, 1, 9, max / 10 - 1, max / 10, max / 10 + 1, max - 1, max, u64::MAX] {
            for c in 0..=255u8 {
                let expected = c
                    .is_ascii_digit()
                    .then(|| v.checked_mul(10)?.checked_add(u64::from(c - b'0')))
                    .flatten()
                    .filter(|r| *r <= max);
                assert_eq!(push_digit(v, c), expected, "{v} {c}");
            }
        }
    }

    fn section<'o>(fields: &[(&[u8], &[u8])], out: &'o mut [u8]) -> FieldSection<'o> {
        let mut enc = [0u8; 512];
        let n = encode_field_section(fields, &mut enc).unwrap();
        decode_field_section(&enc[..n], 4096, out).unwrap().fields
    }

    #[test]
    fn request_round_trip() {
        let req = Request::get(b"example.com", b"/a?b=c").with_headers(&[(b"accept", b"*/*")]);
        let mut enc = [0u8; 128];
        let mut e = FieldEncoder::new(&mut enc).unwrap();
        req.encode(&mut e).unwrap();
        let n = e.finish();
        let mut out = [0u8; 256];
        let fields = decode_field_section(&enc[..n], 4096, &mut out).unwrap().fields;
        let head = parse_request(&fields).unwrap();
        assert_eq!(head.method, b"GET");
        assert_eq!(head.scheme, Some(&b"https"[..]));
        assert_eq!(head.authority, Some(&b"example.com"[..]));
        assert_eq!(head.path, Some(&b"/a?b=c"[..]));
        assert_eq!(fields.get(b"accept"), Some(&b"*/*"[..]));
    }

    /// RFC 9114 §4.2: each connection-specific field is refused, names next to them and
    /// every token byte in lower case are not.
    #[test]
    fn field_name_rules() {
        for name in [
            &b"connection"[..],
            b"keep-alive",
            b"proxy-connection",
            b"transfer-encoding",
            b"upgrade",
        ] {
            assert!(!regular_field_ok(name, b"x"), "{name:?}");
            assert!(regular_field_ok(&[name, b"s"].concat(), b"x"), "{name:?}");
        }
        assert!(regular_field_ok(b"te", b"trailers"));
        assert!(!regular_field_ok(b"te", b"gzip"));
        let tchar = b"abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";
        for c in 0..=255u8 {
            assert_eq!(valid_name(&[c]), tchar.contains(&c), "{c:#x}");
        }
        assert!(!valid_name(b""));
    }

    #[test]
    fn malformed_requests() {
        let bad: &[&[(&[u8], &[u8])]] = &[
            &[(b":scheme", b"https"), (b":path", b"/")], // no method
            &[(b":method", b"GET"), (b":path", b"/")],   // no scheme
            &[(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"")], // empty path
            &[(b":method", b"GET"), (b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/")],
            &[(b":method", b"GET"), (b"a", b"b"), (b":scheme", b"https"), (b":path", b"/")],
            &[(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/"), (b":status", b"200")],
            &[(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/"), (b"Upper", b"x")],
            &[
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":path", b"/"),
                (b"connection", b"close"),
            ],
            &[(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/"), (b"te", b"gzip")],
            &[(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/"), (b"x", b"a\r\nb")],
            &[(b":method", b"CONNECT"), (b":authority", b"h:1"), (b":path", b"/")],
        ];
        for fields in bad {
            let mut out = [0u8; 512];
            assert_eq!(
                parse_request(&section(fields, &mut out)),
                Err(H3Error::MessageError),
                "{fields:?}"
            );
        }
        let mut out = [0u8; 512];
        let ok = section(
            &[(b":method", b"CONNECT"), (b":authority", b"h:1"), (b"te", b"trailers")],
            &mut out,
        );
        assert!(parse_request(&ok).is_ok());
    }

    #[test]
    fn responses_and_trailers() {
        let mut out = [0u8; 512];
        assert_eq!(
            parse_response(&section(&[(b":status", b"204"), (b"x", b"y")], &mut out)),
            Ok(204)
        );
        for bad in [
            &[(&b":status"[..], &b"20"[..])][..],
            &[(b":status", b"099")],
            &[(b":status", b"2x0")],
            &[(b"x", b"y"), (b":status", b"200")],
            &[(b":status", b"200"), (b":status", b"200")],
            &[(b":status", b"200"), (b":path", b"/")],
            &[(b"x", b"y")],
        ] {
            let mut out = [0u8; 512];
            assert_eq!(
                parse_response(&section(bad, &mut out)),
                Err(H3Error::MessageError),
                "{bad:?}"
            );
        }
        let mut out = [0u8; 512];
        assert!(check_trailers(&section(&[(b"grpc-status", b"0")], &mut out)).is_ok());
        let mut out = [0u8; 512];
        assert_eq!(
            check_trailers(&section(&[(b":status", b"200")], &mut out)),
            Err(H3Error::MessageError)
        );
        assert_eq!(status_digits(404), Some(*b"404"));
        assert_eq!(status_digits(99), None);
        assert_eq!(status_digits(1000), None);
        assert!(Response::new(103).is_interim());
        assert!(!Response::new(200).is_interim());
    }

    /// A typical server response (RFC 9204 §4.5: indexed and name-referenced static
    /// entries, literal values) decodes and checks alike in every build; a device-only build
    /// shows the application the pseudo-header and content-length and counts the rest.
    #[test]
    fn typical_response_in_every_build() {
        let block = [
            &hex_literal::hex!("0000 d9 ee")[..], // :status 200, content-type: application/json
            &hex_literal::hex!("56 1d"),          // date (static 6), literal value
            b"Sun, 22 Nov 2026 19:00:00 GMT",
            &hex_literal::hex!("54 01 35"), // content-length (static 4): 5
            &hex_literal::hex!("5f4d 06"),  // server (static 92)
            b"aioqic",
        ]
        .concat();
        let mut out = [0u8; 256];
        let d = decode_field_section(&block, 1000, &mut out).unwrap();
        assert_eq!(parse_response(&d.fields), Ok(200));
        assert_eq!(content_length(&d.fields), Ok(Some(5)));
        assert_eq!(check_trailers(&d.fields), Err(H3Error::MessageError));
        let size = (7 + 3) + (12 + 16) + (4 + 29) + (14 + 1) + (6 + 6) + 5 * 32;
        assert_eq!(d.fields.size(), size);
        let names: Vec<&[u8]> = d.fields.iter().map(|f| f.name).collect();
        if cfg!(any(feature = "server", feature = "quic")) {
            let all: [&[u8]; 5] =
                [b":status", b"content-type", b"date", b"content-length", b"server"];
            assert_eq!(names, all);
            assert_eq!(d.fields.get(b"server"), Some(&b"aioqic"[..]));
        } else {
            assert_eq!(names, [&b":status"[..], b"content-length"]);
            assert_eq!(d.fields.get(b"server"), None);
        }
        assert_eq!(d.fields.get(b"content-length"), Some(&b"5"[..]));
    }

    /// Static references to regular fields are checked alike in every build, whether the
    /// build keeps their text or (a device build) only their lengths: order after
    /// pseudo-headers, literal values, the decoded size (RFC 9114 §4.2.2, §4.3.2).
    #[test]
    fn static_regular_fields_checked_in_every_build() {
        use crate::qpack::DecodeError;
        let decode = |block: &[u8], limit: u64, out: &mut [u8]| {
            decode_field_section(block, limit, out).map(|d| d.fields.size())
        };
        // `:status: 200` (static 25), `accept-encoding: gzip, deflate, br` (static 31).
        let ok = hex_literal::hex!("0000 d9 df");
        let size = (7 + 3 + 32) + (15 + 17 + 32);
        let mut out = [0u8; 128];
        assert_eq!(decode(&ok, size, &mut out), Ok(size));
        let d = decode_field_section(&ok, size, &mut out).unwrap();
        assert_eq!(parse_response(&d.fields), Ok(200));
        assert_eq!(check_trailers(&d.fields), Err(H3Error::MessageError));
        // One byte less is over the limit, counted through the opaque entry too.
        assert_eq!(decode(&ok, size - 1, &mut out), Err(DecodeError::TooLarge));
        // A regular field before the pseudo-header.
        let d = decode_field_section(&hex_literal::hex!("0000 df d9"), 1000, &mut out).unwrap();
        assert_eq!(parse_response(&d.fields), Err(H3Error::MessageError));
        // `content-type` (static 53) with a literal value: a valid one is accepted, one
        // with a line feed is malformed, in a head and in trailers.
        for (value, good) in [(&b"a b"[..], true), (b"a\nb", false), (b" ab", false)] {
            let mut block = hex_literal::hex!("0000 d9 5f26").to_vec();
            block.push(value.len() as u8);
            block.extend_from_slice(value);
            let d = decode_field_section(&block, 1000, &mut out).unwrap();
            assert_eq!(parse_response(&d.fields).is_ok(), good, "{value:?}");
            // The same line alone, as a trailer section.
            let trailer = [&[0, 0][..], &block[3..]].concat();
            let d = decode_field_section(&trailer, 1000, &mut out).unwrap();
            assert_eq!(check_trailers(&d.fields).is_ok(), good, "{value:?}");
        }
    }
}
