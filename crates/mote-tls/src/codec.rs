//! Cursors for TLS's presentation language (RFC 8446 §3): big-endian integers and vectors
//! with 1-, 2- or 3-byte length prefixes.
//!
//! [`Reader`] only ever re-slices its input with checked splits, so no input can make it read
//! out of bounds or panic. The writers write into a caller buffer and report
//! [`Error::BufferTooSmall`] instead of overflowing: `Out` (every emitter a client uses)
//! records the first error and reports it at the end, so its emitters are straight-line
//! code; the server's `Writer` returns at the first error.

use crate::Error;

/// A forward-only cursor over received bytes.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) const fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// True when every byte has been consumed.
    pub(crate) const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The unread bytes, without consuming them.
    #[cfg(feature = "server")]
    pub(crate) const fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Consumes `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let (head, tail) = self.buf.split_at_checked(n).ok_or(Error::Truncated)?;
        self.buf = tail;
        Ok(head)
    }

    /// Consumes exactly `N` bytes, as a fixed-size array reference.
    pub(crate) fn array<const N: usize>(&mut self) -> Result<&'a [u8; N], Error> {
        self.bytes(N)?.try_into().map_err(|_| Error::Truncated)
    }

    #[cfg(feature = "server")]
    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        let [b] = *self.array::<1>()?;
        Ok(b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_be_bytes(*self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_be_bytes(*self.array()?))
    }

    /// Consumes a big-endian unsigned integer of `width` (1 to 3) bytes.
    fn uint(&mut self, width: usize) -> Result<usize, Error> {
        Ok(self.bytes(width)?.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b)))
    }

    /// Consumes a vector `opaque v<min..2^(8*width)-1>`: a `width`-byte length and then that
    /// many bytes. A length below `min` is [`Error::BadLength`].
    pub(crate) fn vec(&mut self, width: usize, min: usize) -> Result<&'a [u8], Error> {
        let len = self.uint(width)?;
        if len < min {
            return Err(Error::BadLength);
        }
        self.bytes(len)
    }

    /// Like [`Reader::vec`] for a vector of 16-bit elements: the length must also be even.
    #[cfg(feature = "server")]
    pub(crate) fn vec_u16(&mut self, width: usize, min: usize) -> Result<&'a [u8], Error> {
        let v = self.vec(width, min)?;
        if v.len() % 2 != 0 {
            return Err(Error::BadLength);
        }
        Ok(v)
    }

    /// Checks that nothing is left over.
    #[cfg(feature = "server")]
    pub(crate) fn finish(&self) -> Result<(), Error> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Error::TrailingBytes)
        }
    }
}

/// A reader that keeps going after an error and reports the first one at the end
/// ([`In::finish`]), the read side of [`Out`]: a parser built on it reads every field and
/// checks once, with no early-return path per field (issue 8: smaller on a device). After an
/// error reads return zeros and empty slices; semantic checks go through [`In::check`] in wire
/// order, so the error reported is the one the `?`-per-field parse would have returned.
#[derive(Debug)]
pub(crate) struct In<'a> {
    buf: &'a [u8],
    error: Option<Error>,
}

impl<'a> In<'a> {
    pub(crate) const fn new(buf: &'a [u8]) -> Self {
        Self { buf, error: None }
    }

    /// Records `e` unless an earlier error is already recorded.
    #[inline(never)]
    pub(crate) fn fail(&mut self, e: Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// True while no error is recorded.
    pub(crate) const fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Records `e` if `ok` is false (a check on fields already read).
    pub(crate) fn check(&mut self, ok: bool, e: Error) {
        if !ok {
            self.fail(e);
        }
    }

    /// Records the error of a fallible step, in wire order; `None` if it failed.
    pub(crate) fn take<T>(&mut self, r: Result<T, Error>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Consumes `n` bytes; an empty slice (and [`Error::Truncated`]) if fewer are left.
    pub(crate) fn bytes(&mut self, n: usize) -> &'a [u8] {
        match self.buf.split_at_checked(n) {
            Some((head, tail)) => {
                self.buf = tail;
                head
            }
            None => {
                self.buf = &[];
                self.fail(Error::Truncated);
                &[]
            }
        }
    }

    /// A big-endian unsigned integer of `width` (1 to 4) bytes; 0 if truncated.
    pub(crate) fn uint(&mut self, width: usize) -> u32 {
        self.bytes(width).iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b))
    }

    pub(crate) fn u8(&mut self) -> u8 {
        self.uint(1) as u8
    }

    pub(crate) fn u16(&mut self) -> u16 {
        self.uint(2) as u16
    }

    pub(crate) fn u32(&mut self) -> u32 {
        self.uint(4)
    }

    /// A vector `opaque v<min..2^(8*width)-1>`; a length below `min` is
    /// [`Error::BadLength`] (its bytes are still consumed).
    pub(crate) fn vec(&mut self, width: usize, min: usize) -> &'a [u8] {
        let len = self.uint(width) as usize;
        self.check(len >= min, Error::BadLength);
        self.bytes(len)
    }

    /// The unread bytes, without consuming them.
    pub(crate) const fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Starts reading `data` (e.g. one extension's) with the same error slot, so its errors
    /// come after every error recorded so far.
    pub(crate) fn enter(&mut self, data: &'a [u8]) {
        self.buf = data;
    }

    /// Checks that nothing is left over (records [`Error::TrailingBytes`]).
    pub(crate) fn end(&mut self) {
        let empty = self.buf.is_empty();
        self.check(empty, Error::TrailingBytes);
    }

    /// The first error recorded, if any.
    pub(crate) fn finish(self) -> Result<(), Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Where a length prefix was reserved; see [`Writer::start`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    at: usize,
    width: usize,
}

/// A forward-only cursor writing into a caller-owned buffer, stopping at the first error
/// (the server's emitters; a client writes with [`Out`]).
#[cfg(feature = "server")]
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

#[cfg(feature = "server")]
impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub(crate) const fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn put(&mut self, data: &[u8]) -> Result<(), Error> {
        let end = self.pos.checked_add(data.len()).ok_or(Error::BufferTooSmall)?;
        self.buf.get_mut(self.pos..end).ok_or(Error::BufferTooSmall)?.copy_from_slice(data);
        self.pos = end;
        Ok(())
    }

    pub(crate) fn u8(&mut self, v: u8) -> Result<(), Error> {
        self.put(&[v])
    }

    pub(crate) fn u16(&mut self, v: u16) -> Result<(), Error> {
        self.put(&v.to_be_bytes())
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), Error> {
        self.put(&v.to_be_bytes())
    }

    /// Reserves a `width`-byte (1 to 3) length prefix, to be filled by [`Writer::end`] once
    /// the vector's contents are written.
    pub(crate) fn start(&mut self, width: usize) -> Result<Mark, Error> {
        let at = self.pos;
        self.put([0u8; 3].get(..width).ok_or(Error::BadLength)?)?;
        Ok(Mark { at, width })
    }

    /// Fills in the length prefix reserved by `mark` with the number of bytes written since.
    pub(crate) fn end(&mut self, mark: Mark) -> Result<(), Error> {
        let body_start = mark.at + mark.width;
        let len = self.pos.saturating_sub(body_start);
        if len >> (8 * mark.width) != 0 {
            return Err(Error::BadLength);
        }
        let be = (len as u32).to_be_bytes();
        let src = be.get(4 - mark.width..).ok_or(Error::BadLength)?;
        self.buf.get_mut(mark.at..body_start).ok_or(Error::BufferTooSmall)?.copy_from_slice(src);
        Ok(())
    }

    /// Writes a whole vector: a `width`-byte length and `data`.
    pub(crate) fn vec(&mut self, width: usize, data: &[u8]) -> Result<(), Error> {
        let m = self.start(width)?;
        self.put(data)?;
        self.end(m)
    }
}

/// A writer that keeps going after an error and reports the first one at the end
/// ([`Out::finish`]): an emitter built on it is straight-line code with no branch per field,
/// which is what keeps the client's ClientHello small on a device. Past the end of the
/// buffer nothing is written, so the buffer is never overrun.
#[derive(Debug)]
pub(crate) struct Out<'a> {
    buf: &'a mut [u8],
    pos: usize,
    error: Option<Error>,
}

impl<'a> Out<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0, error: None }
    }

    /// Bytes written so far (or that would have been, past the end of the buffer).
    pub(crate) const fn position(&self) -> usize {
        self.pos
    }

    fn fail(&mut self, e: Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    // Out of line: inlined, it is repeated at each of the ClientHello's fields (issue 8).
    #[inline(never)]
    pub(crate) fn put(&mut self, data: &[u8]) {
        // `pos..pos + len` with a wrapping end (a wrapped end is below `pos`: refused): the
        // slice is then `data.len()` long by construction, so the copy keeps no
        // length-mismatch panic path (a saturated end would not be).
        match self.buf.get_mut(self.pos..self.pos.wrapping_add(data.len())) {
            Some(dst) => dst.copy_from_slice(data),
            None => self.fail(Error::BufferTooSmall),
        }
        self.pos = self.pos.saturating_add(data.len());
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.put(&v.to_be_bytes());
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }

    /// Starts a handshake message (RFC 8446 §4): its type and a reserved u24 length.
    pub(crate) fn start_message(&mut self, typ: u8) -> Mark {
        self.u8(typ);
        self.start(3)
    }

    /// Reserves a `width`-byte (0 to 3) length prefix, filled by [`Out::end`].
    pub(crate) fn start(&mut self, width: usize) -> Mark {
        let at = self.pos;
        match [0u8; 3].get(..width) {
            Some(zeros) => self.put(zeros),
            None => self.fail(Error::BadLength),
        }
        Mark { at, width }
    }

    /// Fills in the length prefix reserved by `mark` with the bytes written since.
    pub(crate) fn end(&mut self, mark: Mark) {
        let body_start = mark.at.saturating_add(mark.width);
        let mut len = self.pos.saturating_sub(body_start);
        // No prefix in the buffer: `start` already recorded BufferTooSmall, which wins.
        let Some(prefix) = self.buf.get_mut(mark.at..body_start) else { return };
        let width = prefix.len();
        // Big-endian: the last byte is the least significant. What is left did not fit.
        for b in prefix.iter_mut().rev() {
            *b = len as u8;
            len >>= 8;
        }
        if width != 0 && len != 0 {
            self.fail(Error::BadLength);
        }
    }

    /// Writes `data` behind a `width`-byte length prefix (none for 0).
    pub(crate) fn vec(&mut self, width: usize, data: &[u8]) {
        let m = self.start(width);
        self.put(data);
        self.end(m);
    }

    /// The bytes written, or the first error.
    pub(crate) fn finish(self) -> Result<usize, Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.pos),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_vectors_and_bounds() {
        let mut r = Reader::new(&[0x00, 0x02, 0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0xff]);
        assert_eq!(r.vec(2, 0), Ok(&[0xab, 0xcd][..]));
        assert_eq!(r.vec(1, 2), Err(Error::BadLength));
        let mut r = Reader::new(&[0x00, 0x00, 0x02, 0xff]);
        assert_eq!(r.vec(3, 0), Err(Error::Truncated));
        #[cfg(feature = "server")]
        {
            let mut r = Reader::new(&[0x03, 1, 2, 3]);
            assert_eq!(r.vec_u16(1, 0), Err(Error::BadLength));
        }
        #[cfg(feature = "server")]
        {
            let r = Reader::new(&[0]);
            assert_eq!(r.finish(), Err(Error::TrailingBytes));
        }
    }

    #[cfg(feature = "server")]
    #[test]
    fn writer_lengths_and_overflow() {
        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf);
        let m = w.start(3).unwrap();
        w.u16(0xbeef).unwrap();
        w.end(m).unwrap();
        assert_eq!(w.position(), 5);
        assert_eq!(&buf[..5], &[0, 0, 2, 0xbe, 0xef]);

        let mut small = [0u8; 2];
        let mut w = Writer::new(&mut small);
        assert_eq!(w.u32(1), Err(Error::BufferTooSmall));
        assert_eq!(w.position(), 0);

        let mut buf = [0u8; 300];
        let mut w = Writer::new(&mut buf);
        assert_eq!(w.vec(1, &[0u8; 256]), Err(Error::BadLength));
    }

    #[test]
    fn out_reports_the_first_error_and_never_overruns() {
        let mut buf = [0u8; 6];
        let mut w = Out::new(&mut buf);
        let m = w.start(3);
        w.u16(0xbeef);
        w.end(m);
        w.vec(0, &[1]);
        assert_eq!(w.finish(), Ok(6));
        assert_eq!(buf, [0, 0, 2, 0xbe, 0xef, 1]);

        // Past the end: nothing written beyond the buffer, BufferTooSmall at the end even
        // though later fields fit nowhere either.
        let mut small = [0xaau8; 3];
        let mut w = Out::new(&mut small);
        w.u16(1);
        w.u16(2);
        w.u8(3);
        assert_eq!(w.position(), 5);
        assert_eq!(w.finish(), Err(Error::BufferTooSmall));
        assert_eq!(small, [0, 1, 0xaa]);

        // A vector too long for its prefix is BadLength; the first error wins.
        let mut buf = [0u8; 300];
        let mut w = Out::new(&mut buf);
        w.vec(1, &[0u8; 256]);
        w.put(&[0u8; 100]);
        assert_eq!(w.finish(), Err(Error::BadLength));

        // Each prefix width at its largest length, and one past it.
        for width in 1..=3 {
            let max = (1usize << (8 * width)) - 1;
            let body = std::vec![0x11u8; max.min(70_000) + 1];
            for len in [max.min(70_000), max + 1] {
                let Some(data) = body.get(..len) else { continue };
                let mut buf = std::vec![0u8; len + 3];
                let mut w = Out::new(&mut buf);
                w.vec(width, data);
                let expected = if len <= max { Ok(width + len) } else { Err(Error::BadLength) };
                assert_eq!(w.finish(), expected, "{width} {len}");
                if len <= max {
                    let prefix = (len as u32).to_be_bytes();
                    assert_eq!(buf[..width], prefix[4 - width..], "{width} {len}");
                }
            }
        }
    }
}
