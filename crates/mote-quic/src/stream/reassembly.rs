//! Reassembly of received stream or CRYPTO data into a caller-provided ring buffer.

#[cfg(feature = "reorder")]
use super::ranges::RangeSet;
use super::{narrow, wide, Offset};

/// What [`Reassembler::insert`] did with a fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    /// New bytes were stored (in order, or out of order with the `reorder` feature).
    Stored,
    /// Every byte had been received before.
    Duplicate,
    /// The fragment was not stored: it lies beyond a gap and either the `reorder` feature
    /// is off or it would need more than `R` ranges. **The connection must not acknowledge
    /// the packet that carried it** (RFC 9000 §13.1: a packet is acknowledged only once all
    /// its frames are processed), so the peer declares it lost and retransmits the bytes;
    /// the packet's other frames are idempotent when they come again.
    Dropped,
}

/// The fragment ends past the buffer: it could only be stored by growing memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeyondBuffer;

/// Puts received fragments back in order inside caller storage `S` (a `[u8; N]`,
/// `&'static mut [u8]` or `Box<[u8]>`), used as a ring whose start is the first unread byte.
///
/// It holds the bytes from the read offset to at most `capacity()` beyond it. Fragments that
/// arrive in order extend the readable prefix; with the `reorder` feature, fragments past a
/// gap are kept too, their extents tracked in at most `R` ranges, and a fragment that would
/// need an `R+1`-th range is dropped (the peer retransmits it). Without the feature only
/// in-order fragments are kept and there is no range set at all (`R` is unused): one read
/// offset and one contiguous end are the whole state. Memory: `capacity + 16·R + 32` bytes
/// with `reorder`, `capacity + 24` without on hosts; `capacity + 16·R + 24` and
/// `capacity + 12` on a Cortex-M4 (32-bit offsets and `usize`); whatever the peer sends.
#[derive(Clone, Debug)]
pub struct Reassembler<S, const R: usize> {
    buf: S,
    /// Index in `buf` of the byte at `read`.
    head: usize,
    /// Stream offset of the first unread byte.
    read: Offset,
    /// Stream offset of the end of the in-order data starting at `read`.
    contiguous: Offset,
    /// Received ranges beyond a gap; every start is above `contiguous`.
    #[cfg(feature = "reorder")]
    ranges: RangeSet<R>,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> Reassembler<S, R> {
    /// An empty reassembler over `buf`, starting at stream offset 0.
    pub fn new(buf: S) -> Self {
        Self {
            buf,
            head: 0,
            read: 0,
            contiguous: 0,
            #[cfg(feature = "reorder")]
            ranges: RangeSet::new(),
        }
    }

    /// [`Self::new`] written on zero-filled memory (the device connection's slot): only
    /// `buf` is written; the other fields start at zero (checked at compile time).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, buf: S) {
        // Checked without storage: a field's all-zero value depends on its type only.
        crate::connection::init::zeroed!(Reassembler<(), R>, |z| {
            #[cfg(feature = "reorder")]
            let empty = z.ranges.is_empty();
            #[cfg(not(feature = "reorder"))]
            let empty = true;
            // Every field named (no `..`): a new one fails to build until it is handled.
            empty
                && matches!(
                    z,
                    Reassembler {
                        buf: (),
                        head: 0,
                        read: 0,
                        contiguous: 0,
                        #[cfg(feature = "reorder")]
                        ranges: _,
                    }
                )
        });
        // SAFETY: the caller's contract.
        unsafe { core::ptr::addr_of_mut!((*dst).buf).write(buf) }
    }

    /// Forgets all data and starts again at offset 0, keeping the storage.
    pub fn reset(&mut self) {
        self.head = 0;
        self.read = 0;
        self.contiguous = 0;
        #[cfg(feature = "reorder")]
        self.ranges.clear();
    }

    /// Bytes of storage: the most that can be held beyond the read offset.
    pub fn capacity(&self) -> usize {
        self.buf.as_ref().len()
    }

    /// Stream offset of the next byte [`Reassembler::read`] returns.
    pub const fn read_offset(&self) -> u64 {
        wide(self.read)
    }

    /// Stream offset up to which every byte has been received.
    pub const fn contiguous_end(&self) -> u64 {
        wide(self.contiguous)
    }

    /// Bytes ready to be read.
    pub const fn readable(&self) -> u64 {
        wide(self.contiguous - self.read)
    }

    /// Number of out-of-order ranges held (at most `R`; always 0 without `reorder`).
    pub const fn gaps(&self) -> usize {
        #[cfg(feature = "reorder")]
        return self.ranges.len();
        #[cfg(not(feature = "reorder"))]
        0
    }

    /// The highest offset + 1 of any byte held, in order or not.
    pub fn highest_stored(&self) -> u64 {
        // Without `reorder` nothing is held past the contiguous prefix.
        #[cfg(feature = "reorder")]
        return self.ranges.iter().fold(wide(self.contiguous), |hi, (_, e)| hi.max(e));
        #[cfg(not(feature = "reorder"))]
        wide(self.contiguous)
    }

    /// Index in the ring of stream offset `offset`, which must lie in
    /// `read..=read + capacity`.
    fn pos(&self, offset: Offset) -> usize {
        let cap = self.capacity();
        // offset - read ≤ capacity, which fits a usize.
        let rel = (offset - self.read) as usize;
        let p = self.head + rel;
        if p >= cap {
            p - cap
        } else {
            p
        }
    }

    /// Stores `data` received at stream `offset`. Bytes below the contiguous end are
    /// ignored; a fragment ending past `read_offset + capacity` (or [`Offset::MAX`]) is
    /// refused whole.
    pub fn insert(&mut self, offset: u64, data: &[u8]) -> Result<Insert, BeyondBuffer> {
        // Checked as a u64 before narrowing: nothing past `Offset::MAX` is stored (a device's
        // CRYPTO stream ends at 4 GiB; a stream's window ends below it).
        let end = offset.saturating_add(data.len() as u64);
        let limit = wide(self.read).saturating_add(self.capacity() as u64);
        if end > limit || end > wide(Offset::MAX) {
            return Err(BeyondBuffer);
        }
        let (offset, end) = (narrow(offset), narrow(end));
        let start = offset.max(self.contiguous);
        if start >= end {
            return Ok(Insert::Duplicate);
        }
        // start - offset < data.len(), so it fits a usize.
        let data = data.get((start - offset) as usize..).unwrap_or(&[]);
        if start == self.contiguous {
            self.copy_in(start, data);
            self.contiguous = end;
            // Absorb out-of-order ranges the prefix now reaches.
            #[cfg(feature = "reorder")]
            while let Some((s, e)) = self.ranges.first() {
                if s > wide(self.contiguous) {
                    break;
                }
                self.contiguous = self.contiguous.max(narrow(e));
                self.ranges.pop_first();
            }
            return Ok(Insert::Stored);
        }
        self.insert_beyond_gap(start, end, data)
    }

    /// A fragment starting past the contiguous end: kept in the range set with `reorder`.
    #[cfg(feature = "reorder")]
    fn insert_beyond_gap(
        &mut self,
        start: Offset,
        end: Offset,
        data: &[u8],
    ) -> Result<Insert, BeyondBuffer> {
        let (start_w, end_w) = (wide(start), wide(end));
        if self.ranges.iter().any(|(s, e)| s <= start_w && end_w <= e) {
            return Ok(Insert::Duplicate);
        }
        if self.ranges.insert(start_w, end_w).is_err() {
            return Ok(Insert::Dropped);
        }
        self.copy_in(start, data);
        Ok(Insert::Stored)
    }

    /// Without `reorder` a fragment past a gap is dropped (the peer retransmits it; its
    /// packet is not acknowledged).
    #[cfg(not(feature = "reorder"))]
    fn insert_beyond_gap(
        &mut self,
        _: Offset,
        _: Offset,
        _: &[u8],
    ) -> Result<Insert, BeyondBuffer> {
        Ok(Insert::Dropped)
    }

    /// Copies `data` to the ring position of stream offset `start` (inside the window).
    fn copy_in(&mut self, start: Offset, data: &[u8]) {
        let p = self.pos(start);
        super::ring::copy_in(self.buf.as_mut(), p, data);
    }

    /// The readable bytes up to the end of the ring (call again after
    /// [`Reassembler::consume`] for the part that wraps to the front).
    pub fn peek(&self) -> &[u8] {
        let buf = self.buf.as_ref();
        let avail = self.readable() as usize;
        let n = avail.min(buf.len().saturating_sub(self.head));
        buf.get(self.head..self.head + n).unwrap_or(&[])
    }

    /// Marks `n` readable bytes as read (clamped to what is readable). Returns the count.
    pub fn consume(&mut self, n: usize) -> usize {
        let n = n.min(self.readable() as usize);
        let cap = self.capacity();
        self.head += n;
        if self.head >= cap {
            self.head -= cap;
        }
        self.read += n as Offset;
        n
    }

    /// Copies readable bytes into `out` and consumes them. Returns the count.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let mut done = 0;
        while done < out.len() {
            let chunk = self.peek();
            let n = chunk.len().min(out.len() - done);
            if n == 0 {
                break;
            }
            if let (Some(dst), Some(src)) = (out.get_mut(done..done + n), chunk.get(..n)) {
                dst.copy_from_slice(src);
            }
            self.consume(n);
            done += n;
        }
        done
    }

    /// Drops everything held and moves the read offset to `offset` (at or beyond it),
    /// e.g. after the application stopped reading. Returns the bytes skipped.
    pub fn discard_to(&mut self, offset: u64) -> u64 {
        let offset = narrow(offset);
        let skipped = wide(offset.saturating_sub(self.read));
        self.head = 0;
        self.read = self.read.max(offset);
        self.contiguous = self.read;
        #[cfg(feature = "reorder")]
        self.ranges.clear();
        skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// Without `std` nothing is stored past `Offset::MAX` (4 GiB): a CRYPTO stream that
    /// reaches it is refused (CRYPTO_BUFFER_EXCEEDED), whatever room the buffer has.
    #[cfg(not(feature = "std"))]
    #[test]
    fn nothing_is_stored_past_the_offset_range() {
        let mut a = Reassembler::<[u8; 64], 2>::new([0; 64]);
        (a.read, a.contiguous) = (Offset::MAX - 2, Offset::MAX - 2);
        assert_eq!(a.insert(wide(Offset::MAX) - 2, &[1, 2, 3]), Err(BeyondBuffer));
        assert_eq!(a.insert(wide(Offset::MAX) + 1, &[4]), Err(BeyondBuffer));
        assert_eq!(a.insert(wide(Offset::MAX) - 2, &[1, 2]), Ok(Insert::Stored));
        assert_eq!(drain(&mut a), [1, 2]);
        assert_eq!(a.read_offset(), wide(Offset::MAX));
    }

    fn drain<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize>(a: &mut Reassembler<S, R>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut tmp = [0u8; 7];
        loop {
            let n = a.read(&mut tmp);
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&tmp[..n]);
        }
    }

    #[test]
    fn in_order_wraps_around_ring() {
        let mut a = Reassembler::<[u8; 8], 2>::new([0; 8]);
        assert_eq!(a.insert(0, b"abcdef"), Ok(Insert::Stored));
        let mut out = [0u8; 4];
        assert_eq!(a.read(&mut out), 4);
        assert_eq!(&out, b"abcd");
        assert_eq!(a.insert(6, b"ghijkl"), Ok(Insert::Stored));
        assert_eq!(a.insert(12, b"m"), Err(BeyondBuffer));
        assert_eq!(a.peek(), b"efgh");
        assert_eq!(drain(&mut a), b"efghijkl");
        assert_eq!(a.insert(0, b"abc"), Ok(Insert::Duplicate));
    }

    #[cfg(feature = "reorder")]
    #[test]
    fn out_of_order_and_overlap() {
        let mut a = Reassembler::<[u8; 16], 2>::new([0; 16]);
        assert_eq!(a.insert(4, b"efg"), Ok(Insert::Stored));
        assert_eq!(a.insert(10, b"kl"), Ok(Insert::Stored));
        // A third disjoint range does not fit.
        assert_eq!(a.insert(13, b"n"), Ok(Insert::Dropped));
        assert_eq!(a.insert(5, b"f"), Ok(Insert::Duplicate));
        assert_eq!(a.readable(), 0);
        assert_eq!(a.insert(2, b"cdefghij"), Ok(Insert::Stored));
        assert_eq!(a.gaps(), 1);
        assert_eq!(a.insert(0, b"ab"), Ok(Insert::Stored));
        assert_eq!(a.gaps(), 0);
        assert_eq!(drain(&mut a), b"abcdefghijkl");
    }

    #[cfg(not(feature = "reorder"))]
    #[test]
    fn out_of_order_dropped_without_reorder() {
        let mut a = Reassembler::<[u8; 16], 0>::new([0; 16]);
        assert_eq!(a.insert(4, b"efg"), Ok(Insert::Dropped));
        assert_eq!(a.insert(0, b"abcde"), Ok(Insert::Stored));
        assert_eq!(a.insert(4, b"efg"), Ok(Insert::Stored));
        assert_eq!(drain(&mut a), b"abcdefg");
    }
}
