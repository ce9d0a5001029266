//! The device client's response-head check, one field line at a time as QPACK decodes it
//! (RFC 9114 §4.1.2, §4.2, §4.3, §4.3.2): nothing of the section is stored but `:status`
//! and content-length, so the client needs no decoded-fields buffer. The checks are those
//! of `message::{parse_response, content_length, check_trailers}` (the host's, over a
//! stored section); test `streamed_check_matches_the_stored_checks` compares them.

use crate::error::H3Error;
use crate::message::{
    is_connection_specific, known_name, name_byte_ok, push_digit, CONTENT_LENGTH, OTHER, STATUS, TE,
};
use crate::qpack::decoder::LineSink;
use crate::qpack::fields::{PushError, Src};
use crate::qpack::huffman::{self, HuffmanError};
use crate::qpack::FIELD_OVERHEAD;

/// The longest name or value compared whole: `transfer-encoding` (17 bytes).
const KEPT: usize = 17;

/// What a checked section carries on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ResponseSection {
    /// `:status` (None in trailers; a head without one is refused).
    pub(crate) status: Option<u16>,
    /// The declared content length of a final (≥ 200) response head.
    pub(crate) content_length: Option<u64>,
}

/// What one name or value was, seen byte by byte.
struct Seen {
    len: usize,
    /// The first `KEPT` bytes.
    head: [u8; KEPT],
    /// Every byte is a lower-case token character (§4.2, RFC 9110 §5.1).
    token: bool,
    /// No NUL, CR or LF (RFC 9110 §5.5).
    clean: bool,
    last: u8,
    /// The decimal value, if every byte is a digit and it is below 2^62.
    number: Option<u64>,
}

impl Seen {
    // Out of line: one copy for the name and the value.
    #[inline(never)]
    fn new() -> Self {
        Self { len: 0, head: [0; KEPT], token: true, clean: true, last: 0, number: Some(0) }
    }

    fn byte(&mut self, c: u8) {
        if let Some(slot) = self.head.get_mut(self.len) {
            *slot = c;
        }
        self.last = c;
        self.len += 1;
        self.token &= name_byte_ok(c);
        self.clean &= !matches!(c, 0 | b'\r' | b'\n');
        self.number = self.number.and_then(|v| push_digit(v, c));
    }

    /// The whole bytes if they are at most `KEPT` long (longer ones match nothing
    /// compared here).
    fn short(&self) -> Option<&[u8]> {
        self.head.get(..self.len)
    }

    /// RFC 9110 §5.5 (as `message::valid_value`): no NUL, CR or LF, no leading or
    /// trailing whitespace.
    fn valid_value(&self) -> bool {
        let space = |c| matches!(c, b' ' | b'\t');
        self.clean && (self.len == 0 || !(space(self.head[0]) || space(self.last)))
    }

    /// A non-empty decimal number below 2^62.
    fn decimal(&self) -> Option<u64> {
        self.number.filter(|_| self.len != 0)
    }
}

/// Checks the field lines of a response head (or trailers) as they are decoded; the
/// decoded size is held to the limit byte by byte (RFC 9114 §4.2.2).
pub(crate) struct ResponseLines {
    /// Bytes of the limit not used yet.
    budget: usize,
    trailers: bool,
    /// `:status`, 0 before it (a 16-bit compare, no option tag).
    status: u16,
    content_length: Option<u64>,
    regular: bool,
    /// A message rule was broken: the section is H3_MESSAGE_ERROR once it has decoded
    /// (a QPACK error or the size limit later in the section still wins, as when the
    /// section is decoded whole before it is checked).
    malformed: bool,
}

impl ResponseLines {
    /// A check of a response head, or of trailers (`trailers`), under `limit` bytes.
    pub(crate) fn new(limit: u64, trailers: bool) -> Self {
        Self {
            // Clamped only where `usize` is narrower than the limit: a section is one
            // HEADERS payload, each byte of which decodes to at most a static entry (under
            // 110 bytes with its overhead), so no section reaches 2^32 bytes.
            budget: usize::try_from(limit).unwrap_or(usize::MAX),
            trailers,
            status: 0,
            content_length: None,
            regular: false,
            malformed: false,
        }
    }

    /// Reads `src` into `seen`, counting its bytes against the limit; false if the bytes
    /// are not there (a device build's opaque static entry: counted, not seen).
    fn read(&mut self, src: Src<'_>, seen: &mut Seen) -> Result<bool, PushError> {
        let budget = &mut self.budget;
        // Each byte, plain or Huffman-decoded, is counted and seen here.
        let mut each = |c: u8| -> Result<(), HuffmanError> {
            *budget = budget.checked_sub(1).ok_or(HuffmanError::OutputFull)?;
            seen.byte(c);
            Ok(())
        };
        let r = match src {
            Src::One(a) => a.iter().try_for_each(|&c| each(c)),
            #[cfg(feature = "dynamic-table")]
            Src::Plain(a, b) => a.iter().chain(b).try_for_each(|&c| each(c)),
            // Only the bytes the checks tell apart (`huffman::decode_checked`).
            Src::Huffman(h) => huffman::decode_checked(h, each),
            #[cfg(not(any(feature = "server", feature = "quic")))]
            Src::Absent(len) => {
                *budget = budget.checked_sub(len).ok_or(PushError::TooLarge)?;
                return Ok(false);
            }
        };
        r.map_err(|e| match e {
            HuffmanError::OutputFull => PushError::TooLarge,
            HuffmanError::Invalid => PushError::Invalid,
        })?;
        Ok(true)
    }

    /// The checked section, or H3_MESSAGE_ERROR.
    pub(crate) fn finish(self) -> Result<ResponseSection, H3Error> {
        if self.malformed || (!self.trailers && self.status == 0) {
            return Err(H3Error::MessageError);
        }
        let status = Some(self.status).filter(|&s| s != 0);
        Ok(ResponseSection { status, content_length: self.content_length })
    }

    /// Whether a regular line is well-formed (as `message::regular_line_ok`); `known` is
    /// the name's `message::known_name` index. A device build's opaque static name is a
    /// valid, ordinary one.
    fn regular_ok(known: usize, name: Option<&Seen>, value: &Seen) -> bool {
        if let Some(name) = name {
            // §4.2: connection-specific fields are malformed; `te` may only say "trailers".
            if is_connection_specific(known) || name.len == 0 || !name.token {
                return false;
            }
            if known == TE {
                return value.short() == Some(b"trailers");
            }
        }
        value.valid_value()
    }
}

impl LineSink for ResponseLines {
    fn push(&mut self, name: Src<'_>, value: Src<'_>, _never: bool) -> Result<(), PushError> {
        self.budget =
            self.budget.checked_sub(FIELD_OVERHEAD as usize).ok_or(PushError::TooLarge)?;
        let mut n = Seen::new();
        let name_seen = self.read(name, &mut n)?;
        let mut v = Seen::new();
        self.read(value, &mut v)?;
        // Which of the names the checks single out this is (none if it was not seen).
        let known = match n.short() {
            Some(short) if name_seen => known_name(short),
            _ => OTHER,
        };
        if name_seen && n.len != 0 && n.head[0] == b':' {
            // §4.3: pseudo-header fields come first; a response has `:status` only, once,
            // three digits (RFC 9110 §15); trailers have none.
            let status = v.decimal().filter(|s| v.len == 3 && *s >= 100);
            match status {
                Some(s)
                    if !self.trailers && !self.regular && known == STATUS && self.status == 0 =>
                {
                    // Three digits: below 1,000.
                    self.status = s as u16;
                }
                _ => self.malformed = true,
            }
            return Ok(());
        }
        self.regular = true;
        if !Self::regular_ok(known, name_seen.then_some(&n), &v) {
            self.malformed = true;
        } else if known == CONTENT_LENGTH && self.status >= 200 {
            // §4.1.2: the content length of a final response, checked against DATA later;
            // several lines must agree (RFC 9110 §8.6).
            match v.decimal() {
                Some(l) if self.content_length.is_none_or(|d| d == l) => {
                    self.content_length = Some(l);
                }
                _ => self.malformed = true,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{check_trailers, content_length, parse_response};
    use crate::qpack::decoder::decode_lines;
    use crate::qpack::DecodeError;
    use crate::qpack::{decode_field_section, encode_field_section, FieldSection};

    fn section<'o>(fields: &[(&[u8], &[u8])], out: &'o mut [u8]) -> FieldSection<'o> {
        let mut enc = [0u8; 512];
        let n = encode_field_section(fields, &mut enc).unwrap();
        decode_field_section(&enc[..n], 4096, out).unwrap().fields
    }

    /// The line-by-line check agrees with the stored checks (`parse_response` +
    /// `content_length` for heads, `check_trailers` for trailers) on valid and malformed
    /// sections, fed as plain lines and as a decoded (possibly Huffman-coded) section.
    #[test]
    fn streamed_check_matches_the_stored_checks() {
        type Lines<'a> = &'a [(&'a [u8], &'a [u8])];
        let cases: &[Lines<'_>] = &[
            &[(b":status", b"200")],
            &[(b":status", b"200"), (b"content-length", b"5"), (b"x", b"y")],
            &[(b":status", b"200"), (b"content-length", b"5"), (b"content-length", b"5")],
            &[(b":status", b"200"), (b"content-length", b"5"), (b"content-length", b"6")],
            &[(b":status", b"200"), (b"content-length", b"")],
            &[(b":status", b"200"), (b"content-length", b"+5")],
            &[(b":status", b"200"), (b"content-length", b"5, 5")],
            &[(b":status", b"200"), (b"content-length", b"4611686018427387904")],
            &[(b":status", b"200"), (b"content-length", b"4611686018427387903")],
            &[(b":status", b"103"), (b"content-length", b"x")],
            &[(b":status", b"204"), (b"content-length", b"7")],
            &[(b":status", b"20")],
            &[(b":status", b"099")],
            &[(b":status", b"2x0")],
            &[(b"x", b"y"), (b":status", b"200")],
            &[(b":status", b"200"), (b":status", b"200")],
            &[(b":status", b"200"), (b":path", b"/")],
            &[(b":path", b"/")],
            &[(b"x", b"y")],
            &[(b"grpc-status", b"0")],
            &[(b"content-length", b"x")],
            &[(b"content-length", b"3")],
            &[(b":status", b"200"), (b"Upper", b"y")],
            &[(b":status", b"200"), (b"connection", b"close")],
            &[(b":status", b"200"), (b"keep-alive", b"1")],
            &[(b":status", b"200"), (b"proxy-connection", b"x")],
            &[(b":status", b"200"), (b"transfer-encoding", b"chunked")],
            &[(b":status", b"200"), (b"upgrade", b"h2")],
            &[(b":status", b"200"), (b"upgrades", b"h2"), (b"connections", b"x")],
            &[(b":statu", b"200")],
            &[(b":status", b"200"), (b"content-lengt", b"x"), (b"tes", b"x")],
            &[(b":status", b"200"), (b"te", b"gzip")],
            &[(b":status", b"200"), (b"te", b"trailers")],
            &[(b":status", b"200"), (b"x", b" y")],
            &[(b":status", b"200"), (b"x", b"a\nb")],
            &[],
        ];
        for lines in cases {
            let mut out = [0u8; 512];
            let s = section(lines, &mut out);
            let separate = parse_response(&s).and_then(|status| {
                let declared = if status >= 200 { content_length(&s)? } else { None };
                Ok(ResponseSection { status: Some(status), content_length: declared })
            });
            let trailers =
                check_trailers(&s).map(|()| ResponseSection { status: None, content_length: None });
            for (is_trailers, stored) in [(false, separate), (true, trailers)] {
                let mut plain = ResponseLines::new(4096, is_trailers);
                for (name, value) in *lines {
                    plain.push(Src::One(name), Src::One(value), false).unwrap();
                }
                assert_eq!(plain.finish(), stored, "{is_trailers} {lines:?}");
                let mut enc = [0u8; 512];
                let n = encode_field_section(lines, &mut enc).unwrap();
                let mut coded = ResponseLines::new(4096, is_trailers);
                decode_lines(&enc[..n], &mut coded).unwrap();
                assert_eq!(coded.finish(), stored, "coded {is_trailers} {lines:?}");
            }
        }
    }

    /// A broken message rule does not stop decoding: a QPACK error or the size limit later
    /// in the section still wins (as when the section is decoded whole, then checked).
    #[test]
    fn decoding_errors_win_over_message_errors() {
        let mut enc = [0u8; 64];
        let n = encode_field_section(&[(b":status", b"200"), (b"X", b"y")], &mut enc).unwrap();
        let mut lines = ResponseLines::new(4096, false);
        decode_lines(&enc[..n], &mut lines).unwrap();
        assert_eq!(lines.finish(), Err(H3Error::MessageError));
        // Then a literal `:path` whose Huffman-coded value is all padding (RFC 9204 §4.1.2).
        let mut block = enc[..n].to_vec();
        block.extend_from_slice(&[0x51, 0x84, 0xff, 0xff, 0xff, 0xff]);
        let mut lines = ResponseLines::new(4096, false);
        assert_eq!(decode_lines(&block, &mut lines), Err(DecodeError::Failed));
        // Or a line past the limit: 42 + 34 bytes, then 32 + 5 + 11 = 48 more.
        let mut block = enc[..n].to_vec();
        block.extend_from_slice(&hex_literal::hex!("510b 2f69 6e64 6578 2e68 746d 6c"));
        let mut lines = ResponseLines::new(42 + 34 + 47, false);
        assert_eq!(decode_lines(&block, &mut lines), Err(DecodeError::TooLarge));
        let mut lines = ResponseLines::new(42 + 34 + 48, false);
        decode_lines(&block, &mut lines).unwrap();
        assert_eq!(lines.finish(), Err(H3Error::MessageError));
    }
}
