//! [`EncodedRequest`]: a request's HEADERS frame validated and encoded by a `const fn`. A
//! device's requests are constants, so [`Client::send_request`] checks and encodes nothing
//! at run time (and the image holds no request encoder).

use super::{Client, ClientRequest, Method, Streams};
use crate::error::SendError;
use crate::frame::frame_type;
use crate::qpack::FIELD_OVERHEAD;

/// A request's HEADERS frame (RFC 9114 §4.3.1, §7.2.2), encoded as a device-only build's
/// [`Client::request`] encodes it (test `encoded_request_matches_the_template`): the
/// prefix (no dynamic table), `:method` and `:scheme: https` indexed, `:authority` and
/// `:path` by their static entries, then `content-length` if given, no value
/// Huffman-coded (RFC 9204 §4.5). Build it in a `const` to have it encoded at build time;
/// the frame takes at most `N` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedRequest<const N: usize> {
    frame: [u8; N],
    len: usize,
    /// The section's size as RFC 9114 §4.2.2 counts it.
    size: u64,
    /// The request is HEAD (its response has no content).
    head: bool,
    /// Why the request cannot be sent: refused (as [`Client::request`] refuses it) or
    /// larger than `N` bytes.
    error: Option<SendError>,
}

impl<const N: usize> EncodedRequest<N> {
    /// Validates and encodes `request` (see [`ClientRequest`] for what is refused).
    pub const fn new(request: &ClientRequest<'_>) -> Self {
        let mut e = Self {
            frame: [0; N],
            len: 0,
            size: 0,
            head: matches!(request.method, Method::Head),
            error: None,
        };
        // RFC 9114 §4.3.1: an https request's :path is not empty; RFC 9110 §5.5: no field
        // value carries NUL, CR or LF (the peer would find the request malformed).
        if request.path.is_empty() || !clean(request.path) || !clean(request.authority) {
            e.error = Some(SendError::InvalidState);
            return e;
        }
        let method = request.method;
        let mut s = W::<N> { buf: [0; N], pos: 0, full: false };
        // Required Insert Count 0, Base 0; `:method`, `:scheme: https` indexed (§4.5.2).
        s.bytes(&[0, 0, 0xc0 | method as u8, 0xc0 | 23]);
        s.known(0, b"", request.authority);
        s.known(1, b"/", request.path);
        // Names, `https` and overheads.
        let mut size = 7
            + 7
            + 10
            + 5
            + 5
            + 4 * FIELD_OVERHEAD
            + method.name().len() as u64
            + request.authority.len() as u64
            + request.path.len() as u64;
        if let Some(n) = request.content_length {
            size += 14 + s.content_length(n) as u64 + FIELD_OVERHEAD;
        }
        e.size = size;
        // The frame: type HEADERS, the section's length (RFC 9000 §16 varint), the section.
        let mut f = W::<N> { buf: [0; N], pos: 0, full: s.full };
        f.byte(frame_type::HEADERS as u8);
        f.varint(s.pos);
        let (section, _) = s.buf.split_at(if s.pos < N { s.pos } else { N });
        f.bytes(section);
        if f.full {
            e.error = Some(SendError::BufferTooSmall);
            return e;
        }
        e.frame = f.buf;
        e.len = f.pos;
        e
    }

    /// Whether the request can be sent (it was not refused and fits `N` bytes).
    pub const fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// The HEADERS frame (empty if the request cannot be sent).
    pub fn frame(&self) -> &[u8] {
        self.frame.get(..self.len).unwrap_or(&[])
    }
}

/// No NUL, CR or LF in `v` (RFC 9110 §5.5).
const fn clean(mut v: &[u8]) -> bool {
    while let Some((&c, rest)) = v.split_first() {
        if matches!(c, 0 | b'\r' | b'\n') {
            return false;
        }
        v = rest;
    }
    true
}

/// `a == b`, in a `const fn`.
const fn same(mut a: &[u8], mut b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    while let (Some((x, ra)), Some((y, rb))) = (a.split_first(), b.split_first()) {
        if *x != *y {
            return false;
        }
        (a, b) = (ra, rb);
    }
    true
}

/// A `const fn` writer into `N` bytes that notes (in `full`) what did not fit.
struct W<const N: usize> {
    buf: [u8; N],
    pos: usize,
    full: bool,
}

impl<const N: usize> W<N> {
    // The index is below `N`, checked on the line before: no panic, at build or run time.
    #[allow(clippy::indexing_slicing)]
    const fn byte(&mut self, b: u8) {
        if self.pos < N {
            self.buf[self.pos] = b;
            self.pos += 1;
        } else {
            self.full = true;
        }
    }

    const fn bytes(&mut self, mut s: &[u8]) {
        while let Some((&b, rest)) = s.split_first() {
            self.byte(b);
            s = rest;
        }
    }

    /// RFC 9204 §4.1.1 (RFC 7541 §5.1): `v` with an `n`-bit prefix after `flags`.
    const fn int(&mut self, v: usize, n: u8, flags: u8) {
        let mask = (1usize << n) - 1;
        if v < mask {
            self.byte(flags | v as u8);
            return;
        }
        self.byte(flags | mask as u8);
        let mut rest = v - mask;
        while rest >= 0x80 {
            self.byte(0x80 | rest as u8);
            rest >>= 7;
        }
        self.byte(rest as u8);
    }

    /// RFC 9000 §16: `v` as a varint (a section's length: far below 2^30).
    const fn varint(&mut self, v: usize) {
        if v < 1 << 6 {
            self.byte(v as u8);
        } else if v < 1 << 14 {
            self.bytes(&[0x40 | (v >> 8) as u8, v as u8]);
        } else {
            let v = v as u32;
            self.bytes(&[0x80 | (v >> 24) as u8, (v >> 16) as u8, (v >> 8) as u8, v as u8]);
        }
    }

    /// A field whose name is the static entry `index` (below 16): indexed if `value` is
    /// the entry's value `known` (§4.5.2), else a literal with that name and a plain
    /// value (§4.5.4: `0 1 0 1 Index(4+)`, then `0 Length(7+)` and the bytes).
    const fn known(&mut self, index: u8, known: &[u8], value: &[u8]) {
        if same(value, known) {
            self.byte(0xc0 | index);
            return;
        }
        self.byte(0x50 | index);
        self.int(value.len(), 7, 0);
        self.bytes(value);
    }

    /// `content-length: n` (static entry 4; RFC 9110 §8.6: decimal digits) as `known`
    /// writes it; returns the number of digits.
    const fn content_length(&mut self, n: usize) -> usize {
        if n == 0 {
            self.byte(0xc0 | 4);
            return 1;
        }
        let mut digits = 0;
        let mut rest = n;
        while rest != 0 {
            rest /= 10;
            digits += 1;
        }
        self.bytes(&[0x50 | 4, digits as u8]);
        let mut d = digits;
        while d > 0 {
            d -= 1;
            let mut v = n;
            let mut k = 0;
            while k < d {
                v /= 10;
                k += 1;
            }
            self.byte(b'0' + (v % 10) as u8);
        }
        digits
    }
}

impl<const CAP: usize> Client<CAP> {
    /// Sends the encoded `request` on a new request stream (with FIN if `end_stream`: no
    /// body) and returns the stream's ID: [`Client::request`] with the checking and
    /// encoding done when `request` was built (the same errors, in the same order).
    pub fn send_request<T: Streams, const N: usize>(
        &mut self,
        t: &mut T,
        request: &EncodedRequest<N>,
        end_stream: bool,
    ) -> Result<u64, SendError> {
        let open_new = self.start_request()?;
        if let Some(e) = request.error {
            return Err(e);
        }
        self.send_head(t, request.frame(), request.size, request.head, open_new, end_stream)
    }
}

#[cfg(test)]
mod tests {
    use std::string::ToString;
    use std::vec::Vec;

    use super::*;
    use crate::qpack::decode_field_section;

    const LONG: [u8; 300] = [b'a'; 300];
    const METHODS: [Method; 3] = [Method::Get, Method::Head, Method::Post];
    const VALUES: [&[u8]; 5] = [b"/", b"0", b"mote.example", b"/upload?x=1", &LONG];
    const LENGTHS: [Option<usize>; 6] =
        [None, Some(0), Some(9), Some(10), Some(1024), Some(usize::MAX)];

    /// Every request of `METHODS` × `VALUES` (authority and path) × `LENGTHS`.
    fn each(mut f: impl FnMut(ClientRequest<'static>)) {
        for method in METHODS {
            for authority in VALUES {
                for path in VALUES {
                    for content_length in LENGTHS {
                        f(ClientRequest { method, authority, path, content_length });
                    }
                }
            }
        }
    }

    /// The frame is a HEADERS frame whose section decodes to the request's fields, and the
    /// §4.2.2 size counts them (every build).
    #[test]
    fn encoded_request_decodes_to_its_fields() {
        each(|r| {
            let e = EncodedRequest::<1024>::new(&r);
            assert!(e.is_ok());
            let (h, n) = crate::frame::FrameHeader::parse(e.frame()).unwrap();
            assert_eq!(h.ty, frame_type::HEADERS);
            let section = &e.frame()[n..];
            assert_eq!(h.len, section.len() as u64);
            let mut out = [0u8; 2048];
            let decoded = decode_field_section(section, 4096, &mut out).unwrap();
            let fields: Vec<(&[u8], &[u8])> =
                decoded.fields.iter().map(|f| (f.name, f.value)).collect();
            let digits = r.content_length.map(|n| n.to_string());
            let mut expected: Vec<(&[u8], &[u8])> = Vec::from([
                (&b":method"[..], r.method.name()),
                (b":scheme", b"https"),
                (b":authority", r.authority),
                (b":path", r.path),
            ]);
            if let Some(d) = &digits {
                expected.push((b"content-length", d.as_bytes()));
            }
            assert_eq!(fields, expected, "{r:?}");
            let size: usize = expected.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
            assert_eq!(e.size, size as u64, "{r:?}");
            assert_eq!(e.head, r.method == Method::Head);
        });
    }

    /// A device-only build's `Client::request` template writes the same section and counts
    /// the same size.
    #[cfg(not(any(feature = "server", feature = "quic")))]
    #[test]
    fn encoded_request_matches_the_template() {
        each(|r| {
            let e = EncodedRequest::<1024>::new(&r);
            let mut buf = [0u8; 1024];
            let (len, size) = crate::qpack::encoder::encode_request(
                r.method as u8,
                r.method.name().len(),
                r.authority,
                r.path,
                r.content_length,
                &mut buf,
            )
            .unwrap();
            let (_, n) = crate::frame::FrameHeader::parse(e.frame()).unwrap();
            assert_eq!(&e.frame()[n..], &buf[..len], "{r:?}");
            assert_eq!(e.size, size, "{r:?}");
        });
    }

    /// Refused requests (as `Client::request` refuses them) and frames above `N` bytes are
    /// errors; a frame of exactly `N` bytes fits.
    #[test]
    fn encoded_request_refusals() {
        for (authority, path) in [
            (&b"a"[..], &b""[..]),
            (b"a", b"/x\ny"),
            (b"a", b"/x\r"),
            (b"a\0", b"/"),
            (b"a\n", b"/"),
        ] {
            let e = EncodedRequest::<64>::new(&ClientRequest::get(authority, path));
            assert_eq!(e.error, Some(SendError::InvalidState));
            assert!(!e.is_ok() && e.frame().is_empty());
        }
        let r = ClientRequest::get(b"mote.example", b"/5120");
        let len = EncodedRequest::<64>::new(&r).frame().len();
        let exact = EncodedRequest::<27>::new(&r);
        assert_eq!((len, exact.frame().len(), exact.is_ok()), (27, 27, true));
        let short = EncodedRequest::<26>::new(&r);
        assert_eq!(short.error, Some(SendError::BufferTooSmall));
        assert!(short.frame().is_empty());
    }
}
