//! Byte cursors and QUIC variable-length integers (RFC 9000 §16).
//!
//! [`Reader`] never reads past its slice: every accessor checks the remaining length first
//! and returns [`Truncated`] instead. [`Writer`] never writes past its slice and returns
//! [`BufferTooSmall`]. All wire parsers in this crate are built from these two.

/// The input ended before a field was complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated;

/// The output buffer has no room for what was to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferTooSmall;

/// A QUIC variable-length integer: a value below 2^62.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarInt(u64);

impl VarInt {
    /// The largest encodable value, 2^62 - 1.
    pub const MAX: VarInt = VarInt((1 << 62) - 1);
    /// Zero.
    pub const ZERO: VarInt = VarInt(0);

    /// Wraps `v` if it is below 2^62.
    pub const fn new(v: u64) -> Option<Self> {
        if v <= Self::MAX.0 {
            Some(Self(v))
        } else {
            None
        }
    }

    /// Wraps a `u32`, which always fits.
    pub const fn from_u32(v: u32) -> Self {
        Self(v as u64)
    }

    /// The value.
    pub const fn into_inner(self) -> u64 {
        self.0
    }

    /// RFC 9000 §16: the shortest encoding of `v` takes 1, 2, 4 or 8 bytes.
    pub const fn size(self) -> usize {
        encoded_size(self.0)
    }
}

impl From<u8> for VarInt {
    fn from(v: u8) -> Self {
        Self(v as u64)
    }
}

impl From<u16> for VarInt {
    fn from(v: u16) -> Self {
        Self(v as u64)
    }
}

impl From<u32> for VarInt {
    fn from(v: u32) -> Self {
        Self(v as u64)
    }
}

impl From<VarInt> for u64 {
    fn from(v: VarInt) -> u64 {
        v.0
    }
}

/// RFC 9000 §16, Table 4: bytes needed for the shortest encoding of `v` (which must be
/// below 2^62; larger values report 8 and fail to encode).
// Out of line: the 64-bit comparisons are ~37 bytes of Thumb at each of the varint writers
// and frame-room computations (issue 8).
#[inline(never)]
pub const fn encoded_size(v: u64) -> usize {
    if v < (1 << 6) {
        1
    } else if v < (1 << 14) {
        2
    } else if v < (1 << 30) {
        4
    } else {
        8
    }
}

/// [`Reader::varint_or_truncated`]'s truncation mark: bit 63, above every varint (< 2^62).
const TRUNCATED: u64 = 1 << 63;

/// A forward-only cursor over received bytes.
// It keeps the unread bytes themselves rather than the whole input and an offset into it:
// no `offset <= len` invariant that the compiler cannot see, so every read is one checked
// split and no bounds-check panic path is left on a device.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    /// The unread bytes.
    rest: &'a [u8],
    /// Bytes consumed so far.
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub const fn new(buf: &'a [u8]) -> Self {
        Self { rest: buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub const fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// True when nothing is left.
    pub const fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes, without consuming them.
    pub const fn peek_rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Consumes and returns every unread byte.
    pub fn rest(&mut self) -> &'a [u8] {
        let rest = self.rest;
        self.advance(rest.len(), &[]);
        rest
    }

    /// Consumes `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        let (out, tail) = self.rest.split_at_checked(n).ok_or(Truncated)?;
        self.advance(n, tail);
        Ok(out)
    }

    /// Records `n` more bytes consumed, `tail` being what is left.
    fn advance(&mut self, n: usize, tail: &'a [u8]) {
        self.rest = tail;
        self.pos += n;
    }

    /// Consumes exactly `N` bytes into an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        // `try_into` rather than `copy_from_slice`: `bytes` is out of line, so the length
        // it returns is not known here and a copy would keep a length-mismatch panic path.
        self.bytes(N)?.try_into().map_err(|_| Truncated)
    }

    /// Consumes one byte.
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        let [b] = self.array()?;
        Ok(b)
    }

    /// Consumes a big-endian `u16`.
    pub fn u16(&mut self) -> Result<u16, Truncated> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// Consumes a big-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// Consumes a variable-length integer (RFC 9000 §16). Non-minimal encodings are
    /// accepted, as the RFC requires (A.1: `0x4025` decodes to 37).
    #[inline]
    pub fn varint(&mut self) -> Result<VarInt, Truncated> {
        let v = self.varint_or_truncated();
        if v & TRUNCATED != 0 {
            return Err(Truncated);
        }
        Ok(VarInt(v))
    }

    /// [`Self::varint`]'s value, or [`TRUNCATED`] (bit 63, never set in a varint): a `u64`
    /// comes back in registers, a `Result<VarInt, Truncated>` (16 bytes on 32-bit targets)
    /// through memory, and the caller tests one bit (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn varint_or_truncated(&mut self) -> u64 {
        let Some(&first) = self.rest.first() else { return TRUNCATED };
        // The two most significant bits of the first byte give log2 of the length.
        let len = 1usize << (first >> 6);
        let Ok(bytes) = self.bytes(len) else { return TRUNCATED };
        // `bytes` holds `first` (`len >= 1`): the `else` is never taken.
        let Some((_, tail)) = bytes.split_first() else { return TRUNCATED };
        tail.iter().fold(u64::from(first & 0x3f), |v, b| (v << 8) | u64::from(*b))
    }

    /// Consumes a variable-length integer and returns it as a `u64`.
    pub fn varint_u64(&mut self) -> Result<u64, Truncated> {
        self.varint().map(VarInt::into_inner)
    }

    /// Consumes a varint length prefix and then that many bytes.
    /// On error nothing is consumed.
    pub fn varint_prefixed(&mut self) -> Result<&'a [u8], Truncated> {
        // Read on a copy of the unread bytes, committed only on success.
        let mut r = Reader::new(self.rest);
        let len = r.varint()?.into_inner();
        // A length beyond the slice cannot be satisfied; checking before the cast keeps
        // 32-bit targets from truncating a huge value into a small one.
        if len > r.remaining() as u64 {
            return Err(Truncated);
        }
        let out = r.bytes(len as usize)?;
        self.advance(r.pos, r.rest);
        Ok(out)
    }
}

/// A forward-only cursor that writes into a caller-owned buffer.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    /// Starts writing at the beginning of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Room left.
    pub const fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Forgets what was written after `pos` (no-op if `pos` is not before the current
    /// position): undoes a partial write.
    pub fn rewind(&mut self, pos: usize) {
        self.pos = self.pos.min(pos);
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// The bytes written so far, mutable (to patch a length or apply protection).
    pub fn written_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.pos]
    }

    /// Gives back the whole underlying buffer.
    pub fn into_inner(self) -> &'a mut [u8] {
        self.buf
    }

    /// Appends `data`.
    // Out of line on a device: every field writer goes through it (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    pub fn put_slice(&mut self, data: &[u8]) -> Result<(), BufferTooSmall> {
        self.room(data.len())?.copy_from_slice(data);
        self.pos += data.len();
        Ok(())
    }

    /// Appends `n` copies of `byte` (e.g. PADDING).
    pub fn put_repeated(&mut self, byte: u8, n: usize) -> Result<(), BufferTooSmall> {
        self.room(n)?.fill(byte);
        self.pos += n;
        Ok(())
    }

    /// The next `n` bytes of room, not yet consumed. Checked subslicing (`pos <= buf.len()`
    /// holds, but the compiler cannot see it) leaves no bounds-check panic path, and the
    /// slice's length is then known to be `n` at the copy. A wrapped end is below `pos`,
    /// so a huge `n` is refused too.
    // Always inlined: out of line, the length would be unknown again at the copy.
    #[inline(always)]
    fn room(&mut self, n: usize) -> Result<&mut [u8], BufferTooSmall> {
        self.buf.get_mut(self.pos..self.pos.wrapping_add(n)).ok_or(BufferTooSmall)
    }

    /// Reserves `n` bytes to be filled in later, returning their offset.
    pub fn reserve(&mut self, n: usize) -> Result<usize, BufferTooSmall> {
        let at = self.pos;
        self.put_repeated(0, n)?;
        Ok(at)
    }

    /// Appends one byte.
    pub fn put_u8(&mut self, v: u8) -> Result<(), BufferTooSmall> {
        self.put_slice(&[v])
    }

    /// Appends a big-endian `u16`.
    pub fn put_u16(&mut self, v: u16) -> Result<(), BufferTooSmall> {
        self.put_slice(&v.to_be_bytes())
    }

    /// Appends a big-endian `u32`.
    pub fn put_u32(&mut self, v: u32) -> Result<(), BufferTooSmall> {
        self.put_slice(&v.to_be_bytes())
    }

    /// Appends `v` in its shortest encoding.
    pub fn put_varint(&mut self, v: VarInt) -> Result<(), BufferTooSmall> {
        self.put_varint_sized(v, v.size())
    }

    /// Appends a `u64` in its shortest varint encoding. Values of 2^62 or more cannot be
    /// encoded and are refused rather than truncated.
    pub fn put_varint_u64(&mut self, v: u64) -> Result<(), BufferTooSmall> {
        match VarInt::new(v) {
            Some(v) => self.put_varint(v),
            None => Err(BufferTooSmall),
        }
    }

    /// Appends `v` using exactly `size` bytes (1, 2, 4 or 8), e.g. a length field reserved
    /// before its value is known. Fails if `v` does not fit in `size` bytes.
    pub fn put_varint_sized(&mut self, v: VarInt, size: usize) -> Result<(), BufferTooSmall> {
        // Encoded in place: `encode_varint_sized` writes nothing when it fails.
        let rest = self.buf.get_mut(self.pos..).ok_or(BufferTooSmall)?;
        let n = encode_varint_sized(v, size, rest).ok_or(BufferTooSmall)?;
        self.pos += n;
        Ok(())
    }
}

/// Encodes `v` into exactly `size` bytes at the start of `out`; returns `size`, or `None` if
/// `size` is not 1, 2, 4 or 8, `v` does not fit, or `out` is too short.
pub fn encode_varint_sized(v: VarInt, size: usize, out: &mut [u8]) -> Option<usize> {
    let tag: u8 = match size {
        1 => 0b00,
        2 => 0b01,
        4 => 0b10,
        8 => 0b11,
        _ => return None,
    };
    if v.size() > size {
        return None;
    }
    let field = out.get_mut(..size)?;
    // Big-endian, last byte first (a byte loop: smaller on a device than copying the tail
    // of the 8-byte big-endian form).
    let mut rest = v.0;
    for b in field.iter_mut().rev() {
        *b = rest as u8;
        rest >>= 8;
    }
    if let Some(first) = field.first_mut() {
        *first |= tag << 6;
    }
    Some(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    /// RFC 9000 Appendix A.1 sample varints, plus the non-minimal `0x4025` that a receiver
    /// must accept.
    #[test]
    fn rfc9000_a_varint() {
        let cases: &[(&[u8], u64)] = &[
            (&hex!("c2197c5eff14e88c"), 151_288_809_941_952_652),
            (&hex!("9d7f3e7d"), 494_878_333),
            (&hex!("7bbd"), 15_293),
            (&hex!("25"), 37),
            (&hex!("4025"), 37),
        ];
        for (bytes, value) in cases {
            let mut r = Reader::new(bytes);
            assert_eq!(r.varint().unwrap().into_inner(), *value);
            assert!(r.is_empty());
        }
        // Encoding picks the shortest form, so the first four re-encode byte-exact.
        for (bytes, value) in &cases[..4] {
            let mut buf = [0u8; 8];
            let mut w = Writer::new(&mut buf);
            w.put_varint(VarInt::new(*value).unwrap()).unwrap();
            assert_eq!(w.written(), *bytes);
        }
    }

    #[test]
    fn varint_truncated_never_over_reads() {
        for bytes in [&hex!("")[..], &hex!("40"), &hex!("80ffff"), &hex!("c0000000000000")] {
            assert_eq!(Reader::new(bytes).varint(), Err(Truncated));
        }
    }

    #[test]
    fn varint_bounds() {
        assert!(VarInt::new((1 << 62) - 1).is_some());
        assert!(VarInt::new(1 << 62).is_none());
        let mut buf = [0u8; 8];
        assert_eq!(Writer::new(&mut buf).put_varint_u64(1 << 62), Err(BufferTooSmall));
        assert_eq!(encode_varint_sized(VarInt(64), 1, &mut buf), None);
        assert_eq!(encode_varint_sized(VarInt(64), 4, &mut buf), Some(4));
        assert_eq!(&buf[..4], &hex!("80000040"));
    }

    #[test]
    fn prefixed_length_past_end() {
        let mut r = Reader::new(&hex!("05 0102"));
        assert_eq!(r.varint_prefixed(), Err(Truncated));
        // A 62-bit length must not wrap on 32-bit targets.
        let mut r = Reader::new(&hex!("ffffffffffffffff 00"));
        assert_eq!(r.varint_prefixed(), Err(Truncated));
    }

    #[test]
    fn reader_tracks_position_and_refuses_huge_lengths() {
        let mut r = Reader::new(&hex!("01 4025 02 aabb cc"));
        assert_eq!(r.u8(), Ok(1));
        assert_eq!(r.varint_u64(), Ok(37));
        assert_eq!(r.position(), 3);
        assert_eq!(r.bytes(usize::MAX), Err(Truncated));
        assert_eq!(r.array::<5>(), Err(Truncated));
        assert_eq!(r.position(), 3);
        assert_eq!(r.varint_prefixed(), Ok(&hex!("aabb")[..]));
        assert_eq!((r.position(), r.remaining(), r.peek_rest()), (6, 1, &hex!("cc")[..]));
        assert_eq!(r.rest(), &hex!("cc"));
        assert!(r.is_empty() && r.position() == 7 && r.rest().is_empty());
        assert_eq!(r.u8(), Err(Truncated));
        // A failed varint_prefixed consumes nothing, the length included.
        let mut r = Reader::new(&hex!("05 0102"));
        assert_eq!(r.varint_prefixed(), Err(Truncated));
        assert_eq!((r.position(), r.remaining()), (0, 3));
    }

    #[test]
    fn writer_refuses_lengths_that_wrap() {
        let mut buf = [0u8; 4];
        let mut w = Writer::new(&mut buf);
        w.put_u8(7).unwrap();
        // `pos + n` wraps below `pos`: refused, not a short write.
        assert_eq!(w.put_repeated(0, usize::MAX), Err(BufferTooSmall));
        assert_eq!(w.reserve(4), Err(BufferTooSmall));
        assert_eq!(w.reserve(3), Ok(1));
        assert_eq!(w.put_slice(&[]), Ok(()));
        assert_eq!(w.put_slice(&[1]), Err(BufferTooSmall));
        assert_eq!(w.written(), &[7, 0, 0, 0]);
    }

    #[test]
    fn writer_refuses_overflow() {
        let mut buf = [0u8; 3];
        let mut w = Writer::new(&mut buf);
        w.put_u16(0xabcd).unwrap();
        assert_eq!(w.put_u16(1), Err(BufferTooSmall));
        assert_eq!(w.position(), 2);
        w.put_u8(1).unwrap();
        assert_eq!(w.put_varint(VarInt::ZERO), Err(BufferTooSmall));
    }

    proptest::proptest! {
        #[test]
        fn varint_round_trip(v in 0u64..(1 << 62)) {
            let mut buf = [0u8; 8];
            let mut w = Writer::new(&mut buf);
            w.put_varint_u64(v).unwrap();
            let n = w.position();
            proptest::prop_assert_eq!(n, encoded_size(v));
            let mut r = Reader::new(&buf[..n]);
            proptest::prop_assert_eq!(r.varint_u64().unwrap(), v);
        }
    }
}
