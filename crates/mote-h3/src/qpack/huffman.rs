//! The HPACK Huffman code (RFC 7541 §5.2, Appendix B), which QPACK reuses for string
//! literals (RFC 9204 §4.1.2).
//!
//! The code is canonical: codes of one length are consecutive and ordered by symbol, and
//! each length starts where the previous one ended, shifted left. So the image carries only
//! the number of codes of each length and the symbols in canonical order (287 bytes, built
//! from the 257 code lengths at compile time). Decoding walks the code one bit at a time
//! (as zlib's `puff` does) and encoding looks a byte's position up in that order; strings
//! here are short, and flash is what a device lacks. The device client's response checks
//! decode with `decode_checked`, which needs only the counts and the first 95 symbols
//! (126 bytes), so the full order leaves its image.

use crate::coding::Out;
use crate::error::BufferTooSmall;

/// RFC 7541 Appendix B: code length in bits of each symbol 0..=255 and of EOS (256).
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 0x20
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 0x30
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 0x40
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 0x50
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 0x60
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 0x70
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0
    30, // EOS
];

/// The longest code (EOS and three control bytes).
const MAX_LEN: usize = 30;

/// The code in the form the image carries: how many codes each length has, and the symbols
/// in canonical order (by length, then by value). The order and the counts are all a
/// canonical code needs (RFC 7541 Appendix B is one): each length's first code follows the
/// previous length's last, shifted left. 287 bytes instead of a code per symbol plus a
/// decoding table.
struct Canonical {
    /// Number of codes of each length (index 0 unused).
    count: [u8; MAX_LEN + 1],
    /// Symbols 0..=255 in canonical order; position 256 would be EOS (the last code).
    sorted: [u8; 256],
}

// Only evaluated at compile time (`static CANONICAL = build()`): an out-of-range index here
// is a build error, never a run-time panic.
#[allow(clippy::indexing_slicing)]
const fn build() -> Canonical {
    let mut count = [0u8; MAX_LEN + 1];
    let mut i = 0;
    while i < 257 {
        count[LENGTHS[i] as usize] += 1;
        i += 1;
    }
    let mut sorted = [0u8; 256];
    let mut at = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut sym = 0;
        while sym < 256 {
            if LENGTHS[sym] as usize == len {
                sorted[at] = sym as u8;
                at += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    // EOS is the one code of length 30 not among the bytes, and the last in order.
    assert!(at == 256 && LENGTHS[256] as usize == MAX_LEN);
    Canonical { count, sorted }
}

const BUILT: Canonical = build();
static CANONICAL: Canonical = BUILT;
/// The counts alone: all that [`decode_checked`] needs besides `SHORT`.
static COUNT: [u8; MAX_LEN + 1] = BUILT.count;

/// [`decode_checked`] tells apart the symbols of codes up to this many bits: NUL and every
/// printable ASCII byte but the backslash.
const SHORT_LEN: usize = 15;

/// How many symbols have codes of at most `SHORT_LEN` bits.
#[allow(clippy::indexing_slicing)]
const fn short_count() -> usize {
    let mut n = 0;
    let mut len = 1;
    while len <= SHORT_LEN {
        n += BUILT.count[len] as usize;
        len += 1;
    }
    n
}
const SHORT_COUNT: usize = short_count();

/// The first `SHORT_COUNT` symbols in canonical order.
#[allow(clippy::indexing_slicing)]
const fn short_sorted() -> [u8; SHORT_COUNT] {
    let mut out = [0u8; SHORT_COUNT];
    let mut i = 0;
    while i < SHORT_COUNT {
        out[i] = BUILT.sorted[i];
        i += 1;
    }
    out
}
static SHORT: [u8; SHORT_COUNT] = short_sorted();

/// The position of `sym` (0..=256) in canonical order.
#[allow(clippy::indexing_slicing)]
const fn position(sym: usize) -> usize {
    let len = LENGTHS[sym];
    let mut pos = 0;
    let mut s = 0;
    while s < 257 {
        if LENGTHS[s] < len || (LENGTHS[s] == len && s < sym) {
            pos += 1;
        }
        s += 1;
    }
    pos
}
const HTAB_AT: usize = position(b'\t' as usize);
const LF_AT: usize = position(b'\n' as usize);
const CR_AT: usize = position(b'\r' as usize);
const EOS_AT: usize = position(256);

/// What [`decode_checked`] gives for every symbol it does not tell apart: like each of
/// them, not a token character, not NUL/CR/LF, not whitespace, not a digit, and not in
/// any name or value the response checks compare.
pub(crate) const OTHER: u8 = 0x80;

/// The code and its length in bits for byte `sym`, at compile time (tables coded in the
/// image, such as the QPACK static table). The first code of a length is the previous
/// length's first code plus its count, shifted left; a code adds the symbol's rank among
/// the symbols of its length.
#[allow(clippy::indexing_slicing)]
pub(crate) const fn const_code(sym: u8) -> (u32, u32) {
    let len = LENGTHS[sym as usize] as usize;
    let mut first = 0u32;
    let mut l = 1;
    while l < len {
        first = (first + BUILT.count[l] as u32) << 1;
        l += 1;
    }
    let mut rank = 0u32;
    let mut s = 0;
    while s < sym as usize {
        if LENGTHS[s] as usize == len {
            rank += 1;
        }
        s += 1;
    }
    (first + rank, len as u32)
}

/// The Huffman-coded length of `s`, at compile time.
#[allow(clippy::indexing_slicing)]
pub(crate) const fn const_encoded_len(s: &[u8]) -> usize {
    let mut bits = 0;
    let mut i = 0;
    while i < s.len() {
        bits += LENGTHS[s[i] as usize] as usize;
        i += 1;
    }
    (bits + 7) >> 3
}

/// Writes the Huffman coding of `s` (padded with ones) into `out` from `at`, at compile
/// time; returns the position after it.
#[allow(clippy::indexing_slicing)]
pub(crate) const fn const_encode<const N: usize>(s: &[u8], out: &mut [u8; N], at: usize) -> usize {
    let mut acc: u64 = 0;
    let mut nbits: u32 = 0;
    let mut at = at;
    let mut i = 0;
    while i < s.len() {
        let (code, len) = const_code(s[i]);
        acc = (acc << len) | code as u64;
        nbits += len;
        while nbits >= 8 {
            nbits -= 8;
            out[at] = (acc >> nbits) as u8;
            at += 1;
        }
        acc &= (1u64 << nbits) - 1;
        i += 1;
    }
    if nbits > 0 {
        out[at] = ((acc << (8 - nbits)) as u8) | (0xffu8 >> nbits);
        at += 1;
    }
    at
}

/// Whether Huffman-coded `coded` decodes to exactly `plain` (decoding stops at the first
/// byte that differs).
pub(crate) fn decodes_to(coded: &[u8], plain: &[u8]) -> bool {
    let mut at = 0;
    let same = decode_with(coded, |b| {
        if plain.get(at) == Some(&b) {
            at += 1;
            Ok(())
        } else {
            Err(HuffmanError::Invalid)
        }
    });
    same.is_ok() && at == plain.len()
}

/// Walks the canonical code length by length: for each length, its first code and the
/// position of its first symbol in canonical order (as zlib's `puff` does).
struct Walk {
    len: usize,
    first: u32,
    index: usize,
    count: u32,
}

impl Walk {
    const fn new() -> Self {
        Self { len: 0, first: 0, index: 0, count: 0 }
    }

    /// Moves to the next length; false past the longest.
    fn next_len(&mut self) -> bool {
        self.index += self.count as usize;
        self.first = (self.first + self.count) << 1;
        self.len += 1;
        self.count = u32::from(COUNT.get(self.len).copied().unwrap_or(0));
        self.len <= MAX_LEN
    }
}

/// Why Huffman-coded bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HuffmanError {
    /// The input decodes to EOS, ends in more than 7 bits of padding, or its padding is not
    /// the most significant bits of EOS (all ones): RFC 7541 §5.2, which QPACK maps to
    /// QPACK_DECOMPRESSION_FAILED (or QPACK_ENCODER_STREAM_ERROR on the encoder stream).
    Invalid,
    /// The output does not fit where it was to go.
    OutputFull,
}

/// The code and its length in bits for `sym` (0..=256): its position in canonical order,
/// then the length whose codes cover that position.
fn code_of(sym: usize) -> (u32, u32) {
    let pos = CANONICAL.sorted.iter().position(|&s| usize::from(s) == sym).unwrap_or(256);
    let mut w = Walk::new();
    while w.next_len() {
        if pos < w.index + w.count as usize {
            return (w.first + (pos - w.index) as u32, w.len as u32);
        }
    }
    (0, 0)
}

/// Bytes the Huffman coding of `s` takes.
pub fn encoded_len(s: &[u8]) -> usize {
    let bits: usize = s.iter().map(|&b| code_of(usize::from(b)).1 as usize).sum();
    (bits + 7) >> 3
}

/// Appends the Huffman coding of `s`, padded with the high bits of EOS (ones).
pub fn encode(s: &[u8], out: &mut Out<'_>) -> Result<(), BufferTooSmall> {
    let mut acc: u64 = 0;
    let mut nbits: u32 = 0;
    for &b in s {
        let (code, len) = code_of(usize::from(b));
        acc = (acc << len) | u64::from(code);
        nbits += len;
        while nbits >= 8 {
            nbits -= 8;
            out.put_u8((acc >> nbits) as u8)?;
        }
        // Keep only the bits not yet written.
        acc &= (1u64 << nbits) - 1;
    }
    if nbits > 0 {
        let pad = 8 - nbits;
        out.put_u8(((acc << pad) as u8) | (0xffu8 >> nbits))?;
    }
    Ok(())
}

/// Decodes Huffman-coded `input`, handing each decoded byte to `emit` (which fails with
/// [`HuffmanError::OutputFull`] when it has no room). Rejects EOS, padding longer than
/// 7 bits and padding that is not all ones.
pub fn decode_with(
    input: &[u8],
    mut emit: impl FnMut(u8) -> Result<(), HuffmanError>,
) -> Result<(), HuffmanError> {
    walk::<true>(input, &mut emit)
}

/// Decodes Huffman-coded `input` as [`decode_with`] does (same errors), but tells apart
/// only what the response checks look at: each symbol with a code of at most 15 bits
/// (NUL, and every printable ASCII byte but the backslash), HTAB, CR and LF. Every other byte
/// comes out as [`OTHER`], which every check treats as it treats each of them (test
/// `checked_bytes_classify_as_the_bytes`). The device client's response checks use it:
/// it needs the symbols of 95 codes (`SHORT`) instead of all 256 (`CANONICAL`).
pub(crate) fn decode_checked(
    input: &[u8],
    mut emit: impl FnMut(u8) -> Result<(), HuffmanError>,
) -> Result<(), HuffmanError> {
    walk::<false>(input, &mut emit)
}

/// The symbol at `pos` in canonical order for [`decode_checked`]; `None` for EOS.
fn checked_symbol(pos: usize) -> Option<u8> {
    if let Some(&s) = SHORT.get(pos) {
        return Some(s);
    }
    match pos {
        HTAB_AT => Some(b'\t'),
        LF_AT => Some(b'\n'),
        CR_AT => Some(b'\r'),
        EOS_AT => None,
        _ => Some(OTHER),
    }
}

/// [`decode_with`]'s (`EXACT`) or [`decode_checked`]'s one copy: every caller shares it
/// through a `dyn` callback.
fn walk<const EXACT: bool>(
    input: &[u8],
    emit: &mut dyn FnMut(u8) -> Result<(), HuffmanError>,
) -> Result<(), HuffmanError> {
    let mut code: u32 = 0;
    let mut w = Walk::new();
    let mut ones = true;
    for &byte in input {
        let mut bit = 8;
        while bit > 0 {
            bit -= 1;
            let b = u32::from((byte >> bit) & 1);
            code |= b;
            ones &= b == 1;
            if !w.next_len() {
                return Err(HuffmanError::Invalid);
            }
            // Codes of this length are first..first + count.
            if let Some(delta) = code.checked_sub(w.first).filter(|&d| d < w.count) {
                // Position 256 is EOS, which must never appear in the data.
                let pos = w.index + delta as usize;
                let sym =
                    if EXACT { CANONICAL.sorted.get(pos).copied() } else { checked_symbol(pos) };
                emit(sym.ok_or(HuffmanError::Invalid)?)?;
                code = 0;
                w = Walk::new();
                ones = true;
            } else {
                code <<= 1;
            }
        }
    }
    if w.len > 7 || !ones {
        return Err(HuffmanError::Invalid);
    }
    Ok(())
}

/// Decodes `input` into the front of `out`, returning the decoded length.
pub fn decode(input: &[u8], out: &mut [u8]) -> Result<usize, HuffmanError> {
    let mut n = 0usize;
    decode_with(input, |b| {
        let slot = out.get_mut(n).ok_or(HuffmanError::OutputFull)?;
        *slot = b;
        n += 1;
        Ok(())
    })?;
    Ok(n)
}

/// The decoded length of `input`, validating it (a counting pass, no output).
pub fn decoded_len(input: &[u8]) -> Result<usize, HuffmanError> {
    let mut n = 0usize;
    decode_with(input, |_| {
        n += 1;
        Ok(())
    })?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    fn enc(s: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; s.len() * 4 + 1];
        let mut out = Out::new(&mut buf);
        encode(s, &mut out).unwrap();
        let n = out.position();
        assert_eq!(n, encoded_len(s));
        buf.truncate(n);
        buf
    }

    fn dec(b: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = vec![0u8; b.len() * 2];
        let n = decode(b, &mut out)?;
        assert_eq!(decoded_len(b), Ok(n));
        out.truncate(n);
        Ok(out)
    }

    /// A complete prefix code satisfies Kraft's equality: a mistyped length breaks it.
    #[test]
    fn lengths_form_a_complete_prefix_code() {
        let sum: u64 = LENGTHS.iter().map(|&l| 1u64 << (30 - l)).sum();
        assert_eq!(sum, 1 << 30);
    }

    #[test]
    fn compile_time_coding_agrees() {
        for b in 0..=255u8 {
            assert_eq!(const_code(b), code_of(usize::from(b)), "byte {b}");
        }
        let s = b"content-security-policy";
        let mut out = [0u8; 32];
        let n = const_encode(s, &mut out, 1);
        assert_eq!(&out[1..n], &enc(s)[..]);
        assert_eq!(const_encoded_len(s), n - 1);
        assert!(decodes_to(&out[1..n], s));
        assert!(!decodes_to(&out[1..n], b"content-security-polic"));
        assert!(!decodes_to(&out[1..n], b"content-security-policyx"));
        assert!(!decodes_to(&out[1..n], b"content-security-polich"));
    }

    /// Spot checks against RFC 7541 Appendix B.
    #[test]
    fn rfc7541_appendix_b_codes() {
        assert_eq!(code_of(0), (0x1ff8, 13));
        assert_eq!(code_of(b' ' as usize), (0x14, 6));
        assert_eq!(code_of(b'0' as usize), (0x0, 5));
        assert_eq!(code_of(b'a' as usize), (0x3, 5));
        assert_eq!(code_of(b'z' as usize), (0x7b, 7));
        assert_eq!(code_of(b'~' as usize), (0x1ffd, 13));
        assert_eq!(code_of(10), (0x3ffffffc, 30));
        assert_eq!(code_of(255), (0x3ffffee, 26));
        assert_eq!(code_of(256), (0x3fffffff, 30));
    }

    /// RFC 7541 C.4.1–C.4.3 and C.6: the Huffman-coded strings of the request and
    /// response examples, byte-exact both ways.
    #[test]
    fn rfc7541_c4_c6_examples() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"www.example.com", &hex!("f1e3 c2e5 f23a 6ba0 ab90 f4ff")),
            (b"no-cache", &hex!("a8eb 1064 9cbf")),
            (b"custom-key", &hex!("25a8 49e9 5ba9 7d7f")),
            (b"custom-value", &hex!("25a8 49e9 5bb8 e8b4 bf")),
            (b"302", &hex!("6402")),
            (b"private", &hex!("aec3 771a 4b")),
            (b"Mon, 21 Oct 2013 20:13:21 GMT", &hex!("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff")),
            (b"https://www.example.com", &hex!("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3")),
            (b"307", &hex!("640e ff")),
            (b"gzip", &hex!("9bd9 ab")),
            (
                b"foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
                &hex!("94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07"),
            ),
        ];
        for (plain, coded) in cases {
            assert_eq!(enc(plain), *coded);
            assert_eq!(dec(coded).unwrap(), *plain);
        }
    }

    #[test]
    fn every_byte_round_trips() {
        for b in 0..=255u8 {
            let coded = enc(&[b]);
            assert_eq!(dec(&coded).unwrap(), [b], "byte {b}");
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(dec(&enc(&all)).unwrap(), all);
    }

    #[test]
    fn rejects_eos_and_bad_padding() {
        // EOS (30 ones) as data, with 2 bits of padding.
        assert_eq!(dec(&hex!("ffffffff")), Err(HuffmanError::Invalid));
        // 'a' (00011) followed by 3 zero bits: padding not all ones.
        assert_eq!(dec(&[0b0001_1000]), Err(HuffmanError::Invalid));
        // 'a' then 8 bits of ones: padding longer than 7 bits.
        assert_eq!(dec(&[0b0001_1111, 0xff]), Err(HuffmanError::Invalid));
        // A single byte of ones is 8 bits of padding.
        assert_eq!(dec(&[0xff]), Err(HuffmanError::Invalid));
        // 'a' with 3 one bits of padding is fine; empty input is fine.
        assert_eq!(dec(&[0b0001_1111]).unwrap(), b"a");
        assert_eq!(dec(&[]).unwrap(), b"");
        let mut tiny = [0u8; 1];
        assert_eq!(decode(&hex!("f1e3"), &mut tiny), Err(HuffmanError::OutputFull));
    }

    /// What [`decode_checked`] should give for byte `b`.
    fn checked(b: u8) -> u8 {
        if b == 0
            || b == b'\t'
            || b == b'\n'
            || b == b'\r'
            || (0x20..0x7f).contains(&b) && b != b'\\'
        {
            b
        } else {
            OTHER
        }
    }

    fn dec_checked(b: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode_checked(b, |c| {
            out.push(c);
            Ok(())
        })?;
        Ok(out)
    }

    /// Every byte that `decode_checked` does not tell apart looks like [`OTHER`] to every
    /// response check: token character (names), NUL/CR/LF and whitespace (values),
    /// digit (status, content-length), and none is in a name or value compared
    /// (lower-case letters, digits, `-`, `:`).
    #[test]
    fn checked_bytes_classify_as_the_bytes() {
        use crate::message::name_byte_ok;
        let class = |c: u8| {
            (
                name_byte_ok(c),
                matches!(c, 0 | b'\r' | b'\n'),
                matches!(c, b' ' | b'\t'),
                c.is_ascii_digit(),
                c.is_ascii_lowercase() || c == b'-' || c == b':',
            )
        };
        let mut others = 0;
        for b in 0..=255u8 {
            assert_eq!(dec_checked(&enc(&[b])).unwrap(), [checked(b)], "byte {b}");
            assert_eq!(class(b), class(checked(b)), "byte {b}");
            others += usize::from(checked(b) == OTHER && b != OTHER);
        }
        assert_eq!(others, 256 - 95 - 3 - 1);
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(
            dec_checked(&enc(&all)).unwrap(),
            all.iter().map(|&b| checked(b)).collect::<Vec<_>>()
        );
        // The same errors as `decode`.
        for bad in [&hex!("ffffffff")[..], &[0b0001_1000], &[0b0001_1111, 0xff], &[0xff]] {
            assert_eq!(dec_checked(bad), Err(HuffmanError::Invalid), "{bad:02x?}");
        }
        assert_eq!(dec_checked(&hex!("ffff ffff fc")), Err(HuffmanError::Invalid));
        assert_eq!(dec_checked(&[0b0001_1111]).unwrap(), b"a");
    }

    proptest! {
        #[test]
        fn checked_decoding_agrees(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let exact = dec(&b).map(|v| v.iter().map(|&c| checked(c)).collect::<Vec<_>>());
            prop_assert_eq!(dec_checked(&b), exact);
        }

        #[test]
        fn random_strings_round_trip(s in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(dec(&enc(&s)).unwrap(), s);
        }

        #[test]
        fn random_input_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut out = [0u8; 128];
            let _ = decode(&b, &mut out);
            let _ = decoded_len(&b);
        }
    }
}
