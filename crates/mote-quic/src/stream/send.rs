//! The sending part of a stream (RFC 9000 §3.1): a retransmission buffer over caller storage,
//! flow control (§4.1), FIN, RESET_STREAM and STOP_SENDING.

use super::flow::SendCredit;
use super::unacked::Book;
use super::{narrow, wide, Offset};
use crate::coding::VarInt;
use crate::frame::Frame;

use super::StreamId;

/// RFC 9000 §3.1, Figure 2: states of the sending part of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendState {
    /// Open, nothing sent yet.
    Ready,
    /// Sending data.
    Send,
    /// The FIN has been sent; retransmissions may still be needed.
    DataSent,
    /// Every byte and the FIN were acknowledged (terminal).
    DataRecvd,
    /// RESET_STREAM queued or sent.
    ResetSent,
    /// RESET_STREAM acknowledged (terminal).
    ResetRecvd,
}

/// Why [`SendStream::write`] or [`SendStream::finish`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// No such stream, or not one we can send on.
    UnknownStream,
    /// The stream was finished: no more data can be written.
    Finished,
    /// The stream was reset (locally, or because the peer sent STOP_SENDING with this
    /// code); nothing more will be sent.
    Reset(u64),
}

/// A piece of stream data to put in a STREAM frame: `len` bytes at `offset`, and whether the
/// frame carries FIN. `len` may be 0 for a FIN-only frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Stream offset of the first byte.
    pub offset: u64,
    /// Number of bytes.
    pub len: usize,
    /// Set the FIN bit.
    pub fin: bool,
}

impl Chunk {
    /// The STREAM frame for this chunk of stream `id`, with `data` from
    /// [`SendStream::chunk_bytes`]. `has_length: false` only for the last frame of a packet.
    pub fn frame(self, id: StreamId, data: &[u8], has_length: bool) -> Frame<'_> {
        Frame::Stream {
            stream_id: id.varint(),
            offset: VarInt::new(self.offset).unwrap_or(VarInt::MAX),
            data,
            fin: self.fin,
            has_length,
        }
    }

    /// Stream offset just past the chunk.
    pub const fn end(&self) -> u64 {
        self.offset.saturating_add(self.len as u64)
    }
}

/// The sending part of a stream over caller storage `S`, a ring holding every byte from the
/// oldest unacknowledged one to the last one written.
///
/// Bounded bookkeeping ([`super::unacked`]) tracks the bytes acknowledged above the oldest
/// unacknowledged byte and the bytes waiting for retransmission: on hosts two range sets of
/// `R` entries each, on devices `R` acknowledged ranges and one retransmission range.
/// Neither can grow: when the acknowledged ranges are full an acknowledgement is turned
/// into a retransmission (the bytes are sent and acknowledged again, never freed early),
/// and a lost range that finds no room is merged with its neighbour (some bytes are sent
/// twice). Both only cost bandwidth, never correctness. `R` must be at least 1.
///
/// Memory: `buffer + 32·R + 104` bytes on hosts, `buffer + 8·R + 64` on devices (32-bit
/// offsets; measured on `thumbv7em` and x86-64 alike).
#[derive(Clone, Debug)]
pub struct SendStream<S, const R: usize> {
    buf: S,
    /// Ring index of the byte at `base`.
    head: usize,
    /// Offset of the oldest unacknowledged byte.
    base: Offset,
    /// End of the data sent at least once.
    sent: Offset,
    /// End of the data written by the application.
    written: Offset,
    /// Acknowledged and to-be-retransmitted bytes above `base`.
    book: Book<R>,
    finished: bool,
    fin_sent: bool,
    fin_acked: bool,
    fin_lost: bool,
    state: SendState,
    credit: SendCredit,
    reset_code: u64,
    reset_pending: bool,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> SendStream<S, R> {
    const NONZERO_R: () = assert!(R >= 1, "SendStream needs R >= 1");

    /// A stream in `Ready` over `buf`, allowed `max_stream_data` bytes by the peer (its
    /// transport parameter for this kind of stream).
    // Out of line: the stream table writes every slot through it (issue 8).
    #[inline(never)]
    pub fn new(buf: S, max_stream_data: u64) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::NONZERO_R;
        Self {
            buf,
            head: 0,
            base: 0,
            sent: 0,
            written: 0,
            book: Book::new(),
            finished: false,
            fin_sent: false,
            fin_acked: false,
            fin_lost: false,
            state: SendState::Ready,
            credit: SendCredit::new(max_stream_data),
            reset_code: 0,
            reset_pending: false,
        }
    }

    /// [`Self::new`] written on zero-filled memory (the device connection's slot): only
    /// `buf` and the credit are written; every other field's initial value is all zeros
    /// (checked at compile time).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, buf: S, max_stream_data: u64) {
        #[allow(clippy::let_unit_value)]
        let () = Self::NONZERO_R;
        // Checked on a stream without storage: a field's all-zero value depends on its
        // type only.
        crate::connection::init::zeroed!(SendStream<(), R>, |z| matches!(
            z,
            SendStream {
                buf: (),
                head: 0,
                base: 0,
                sent: 0,
                written: 0,
                book: _,
                finished: false,
                fin_sent: false,
                fin_acked: false,
                fin_lost: false,
                state: SendState::Ready,
                credit: _,
                reset_code: 0,
                reset_pending: false,
            }
        ) && z.book.is_clear());
        // SAFETY: the caller's contract.
        unsafe {
            core::ptr::addr_of_mut!((*dst).buf).write(buf);
            SendCredit::write_zeroed(core::ptr::addr_of_mut!((*dst).credit), max_stream_data);
        }
    }

    /// Starts again as a fresh stream, keeping the storage (slot reuse).
    pub fn reinit(&mut self, max_stream_data: u64) {
        self.head = 0;
        self.base = 0;
        self.sent = 0;
        self.written = 0;
        self.book.clear();
        self.finished = false;
        self.fin_sent = false;
        self.fin_acked = false;
        self.fin_lost = false;
        self.state = SendState::Ready;
        self.credit = SendCredit::new(max_stream_data);
        self.reset_code = 0;
        self.reset_pending = false;
    }

    /// The current state.
    pub const fn state(&self) -> SendState {
        self.state
    }

    /// The stream-level credit from the peer.
    pub const fn credit(&self) -> &SendCredit {
        &self.credit
    }

    /// Bytes of storage.
    pub fn capacity(&self) -> usize {
        self.buf.as_ref().len()
    }

    /// Bytes written and not yet acknowledged (buffer in use).
    pub const fn buffered(&self) -> u64 {
        wide(self.written - self.base)
    }

    /// Offset of the next byte [`SendStream::write`] accepts: the bytes written so far.
    pub const fn written(&self) -> u64 {
        wide(self.written)
    }

    /// End of the data sent at least once: a chunk below it is a retransmission.
    pub const fn sent_offset(&self) -> u64 {
        wide(self.sent)
    }

    /// Ranges waiting for retransmission.
    pub const fn lost_ranges(&self) -> usize {
        self.book.lost_ranges()
    }

    /// True in a terminal state (`DataRecvd` or `ResetRecvd`).
    pub const fn is_closed(&self) -> bool {
        matches!(self.state, SendState::DataRecvd | SendState::ResetRecvd)
    }

    /// True while [`SendStream::write`] can take data: not finished and not reset.
    pub fn is_writable(&self) -> bool {
        self.check_writable().is_ok()
    }

    fn check_writable(&self) -> Result<(), WriteError> {
        match self.state {
            SendState::ResetSent | SendState::ResetRecvd => Err(WriteError::Reset(self.reset_code)),
            _ if self.finished => Err(WriteError::Finished),
            _ => Ok(()),
        }
    }

    /// Ring index of offset `o` in `base..=base + capacity`.
    fn pos(&self, o: Offset) -> usize {
        let cap = self.capacity();
        let p = self.head + (o - self.base) as usize;
        if p >= cap {
            p - cap
        } else {
            p
        }
    }

    /// Copies as much of `data` as buffer space, the stream credit and the connection credit
    /// `conn` allow, and charges both credits. A write cut short by a credit queues the
    /// matching STREAM_DATA_BLOCKED / DATA_BLOCKED (once per limit).
    pub fn write(&mut self, conn: &mut SendCredit, data: &[u8]) -> Result<usize, WriteError> {
        self.check_writable()?;
        let space = narrow(self.capacity() as u64).saturating_sub(self.written - self.base);
        let want = narrow(data.len() as u64);
        // A stream ends at `Offset::MAX` (4 GiB without `std`).
        let end = Offset::MAX - self.written;
        let n = want.min(space).min(end).min(self.credit.room()).min(conn.room());
        // n ≤ data.len(), so it fits a usize.
        let n_usize = n as usize;
        let src = data.get(..n_usize).unwrap_or(&[]);
        let p = self.pos(self.written);
        super::ring::copy_in(self.buf.as_mut(), p, src);
        self.written += n;
        self.credit.charge(n);
        conn.charge(n);
        if n < want {
            self.credit.mark_blocked();
            conn.mark_blocked();
        }
        Ok(n_usize)
    }

    /// No more data will be written: the last byte written ends the stream (FIN).
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.check_writable()?;
        self.finished = true;
        Ok(())
    }

    /// True when the FIN still has to be (re)sent.
    fn fin_needed(&self) -> bool {
        self.finished && !self.fin_acked && (!self.fin_sent || self.fin_lost)
    }

    /// Contiguous bytes from offset `o` to the end of the ring.
    fn wrap_room(&self, o: Offset) -> Offset {
        (self.capacity() - self.pos(o)) as Offset
    }

    /// The next chunk to send, at most `max_len` bytes: retransmissions first, then new
    /// data, then a FIN-only frame. Chunks stop at the end of the ring, so their bytes are
    /// one slice ([`SendStream::chunk_bytes`]). Nothing changes until
    /// [`SendStream::on_sent`].
    pub fn next_chunk(&self, max_len: usize) -> Option<Chunk> {
        if !matches!(self.state, SendState::Ready | SendState::Send | SendState::DataSent) {
            return None;
        }
        // Computed once for both uses below (issue 8).
        let fin_needed = self.fin_needed();
        // Retransmissions first, else new data (one chunk computation for both: issue 8).
        let (s, e) = match self.book.next_lost() {
            Some(range) => range,
            None if self.sent < self.written => (self.sent, self.written),
            None if fin_needed => {
                return Some(Chunk { offset: wide(self.written), len: 0, fin: true });
            }
            None => return None,
        };
        let len = (e - s).min(narrow(max_len as u64)).min(self.wrap_room(s));
        if len == 0 {
            return None;
        }
        let fin = fin_needed && s + len == self.written;
        Some(Chunk { offset: wide(s), len: len as usize, fin })
    }

    /// True if [`SendStream::next_chunk`] has something (given room).
    pub fn wants_to_send(&self) -> bool {
        self.next_chunk(usize::MAX).is_some()
    }

    /// The bytes of `chunk` (from [`SendStream::next_chunk`]).
    pub fn chunk_bytes(&self, chunk: &Chunk) -> &[u8] {
        if chunk.offset < wide(self.base) || chunk.end() > wide(self.written) {
            return &[];
        }
        let p = self.pos(narrow(chunk.offset));
        self.buf.as_ref().get(p..p + chunk.len).unwrap_or(&[])
    }

    /// Records that `chunk` went out in a packet.
    pub fn on_sent(&mut self, chunk: &Chunk) {
        let end = narrow(chunk.end()).min(self.written);
        self.book.on_sent(narrow(chunk.offset), end);
        self.sent = self.sent.max(end);
        if chunk.fin && self.finished && end == self.written {
            self.fin_sent = true;
            self.fin_lost = false;
        }
        if self.state == SendState::Ready {
            self.state = SendState::Send;
        }
        if self.state == SendState::Send && self.fin_sent {
            self.state = SendState::DataSent;
        }
    }

    /// Convenience for a packet builder that copies: takes the next chunk of at most
    /// `out.len()` bytes, copies its data into `out`, and records it sent.
    pub fn emit_into(&mut self, out: &mut [u8]) -> Option<Chunk> {
        let chunk = self.next_chunk(out.len())?;
        let src = self.chunk_bytes(&chunk);
        if let Some(dst) = out.get_mut(..src.len()) {
            dst.copy_from_slice(src);
        }
        self.on_sent(&chunk);
        Some(chunk)
    }

    /// The contiguous free space at the write position (for writers that produce bytes in
    /// place, such as the TLS session writing a handshake message): from the end of the
    /// written data to the end of the ring or to the oldest unacknowledged byte. When
    /// nothing is buffered the ring restarts at its first byte, so an idle buffer offers
    /// all of its storage. Follow with [`SendStream::commit`]. Flow control is not
    /// consulted: this is for CRYPTO streams, which have none.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        if self.buffered() == 0 {
            self.head = 0;
        }
        let cap = self.capacity();
        let free = cap.saturating_sub(self.buffered() as usize);
        let p = self.pos(self.written);
        // Up to the end of the ring, and never over unacknowledged bytes.
        let end = p.saturating_add(free).min(cap);
        self.buf.as_mut().get_mut(p..end).unwrap_or(&mut [])
    }

    /// Appends the first `n` bytes of [`SendStream::spare_mut`] to the stream (capped at
    /// its length). Returns the bytes appended.
    pub fn commit(&mut self, n: usize) -> usize {
        let cap = self.capacity();
        let free = cap.saturating_sub(self.buffered() as usize);
        let p = self.pos(self.written);
        let n = n.min(free).min(cap.saturating_sub(p)).min((Offset::MAX - self.written) as usize);
        self.written += n as Offset;
        n
    }

    /// Queues every byte sent and not yet acknowledged for retransmission (and the FIN if it
    /// is unacknowledged): what a PTO probe of a handshake space carries (RFC 9002 §6.2.4,
    /// "retransmit in-flight data"). Acknowledged ranges the bounded sets cannot exclude
    /// are simply sent again.
    pub fn requeue_unacked(&mut self) {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return;
        }
        if self.base < self.sent {
            self.book.requeue_all(self.base, self.sent);
        }
        if self.fin_sent && !self.fin_acked {
            self.fin_lost = true;
        }
    }

    /// Queues `len` bytes at `offset` (and the FIN if `fin`) for retransmission, leaving out
    /// what is already acknowledged: the data of an unacknowledged packet a PTO probe
    /// repeats (RFC 9002 §6.2.4). Returns true if anything was queued.
    pub fn requeue(&mut self, offset: u64, len: usize, fin: bool) -> bool {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return false;
        }
        let o = narrow(offset);
        let cur = o.max(self.base);
        let end = o.saturating_add(len as Offset).min(self.sent);
        let mut queued = cur < end && self.book.requeue(cur, end);
        if fin && self.fin_sent && !self.fin_acked {
            self.fin_lost = true;
            queued = true;
        }
        queued
    }

    /// True if bytes were sent and are not all acknowledged yet.
    pub const fn has_unacked(&self) -> bool {
        self.sent > self.base || (self.fin_sent && !self.fin_acked)
    }

    /// The packet carrying `len` bytes at `offset` (and FIN if `fin`) was acknowledged.
    pub fn on_ack(&mut self, offset: u64, len: usize, fin: bool) {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return;
        }
        let o = narrow(offset);
        let s = o.max(self.base);
        let e = o.saturating_add(len as Offset).min(self.sent);
        if s < e {
            let base = self.book.on_ack(self.base, s, e);
            // base - self.base ≤ sent - self.base ≤ capacity.
            let freed = (base - self.base) as usize;
            let cap = self.capacity();
            self.head += freed;
            if self.head >= cap {
                self.head -= cap;
            }
            self.base = base;
        }
        if fin && self.fin_sent {
            self.fin_acked = true;
            self.fin_lost = false;
        }
        if self.fin_acked && self.base == self.written {
            self.state = SendState::DataRecvd;
        }
    }

    /// The packet carrying `len` bytes at `offset` (and FIN if `fin`) was declared lost:
    /// queue the still-unacknowledged part for retransmission.
    #[cfg(not(feature = "std"))]
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) {
        // The device's bookkeeping skips acknowledged bytes when it cuts retransmissions,
        // so a loss queues exactly what a PTO requeue does: one copy in the image.
        let _ = self.requeue(offset, len, fin);
    }

    /// The packet carrying `len` bytes at `offset` (and FIN if `fin`) was declared lost:
    /// queue the still-unacknowledged part for retransmission.
    #[cfg(feature = "std")]
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) {
        if !matches!(self.state, SendState::Send | SendState::DataSent) {
            return;
        }
        let o = narrow(offset);
        let s = o.max(self.base);
        let e = o.saturating_add(len as Offset).min(self.sent);
        if s < e {
            self.book.on_lost(s, e);
        }
        if fin && self.fin_sent && !self.fin_acked {
            self.fin_lost = true;
        }
    }

    /// Abandons the stream (RFC 9000 §3.1, §19.4): queues RESET_STREAM with `error_code`
    /// and final size = every byte written (all of it already charged to flow control).
    /// Returns false if the stream already completed or was reset.
    pub fn reset(&mut self, error_code: u64) -> bool {
        if !matches!(self.state, SendState::Ready | SendState::Send | SendState::DataSent) {
            return false;
        }
        self.state = SendState::ResetSent;
        self.reset_code = error_code;
        self.reset_pending = true;
        self.credit.poll_blocked();
        // Drop the data: nothing will be retransmitted.
        self.base = self.written;
        self.sent = self.written;
        self.head = 0;
        self.book.clear();
        true
    }

    /// A STOP_SENDING frame arrived (RFC 9000 §3.5): reset with the peer's error code if
    /// still sending (in `Ready`, `Send` or `DataSent`). Returns true if a reset was queued.
    pub fn on_stop_sending(&mut self, error_code: u64) -> bool {
        self.reset(error_code)
    }

    /// True if RESET_STREAM or STREAM_DATA_BLOCKED is waiting to be sent.
    pub fn wants_control(&self) -> bool {
        (self.state == SendState::ResetSent && self.reset_pending)
            || (matches!(self.state, SendState::Ready | SendState::Send)
                && !self.finished
                && self.credit.blocked_pending())
    }

    /// The RESET_STREAM frame to send, if due: `(error code, final size)`. Marks it sent.
    pub fn poll_reset(&mut self) -> Option<(u64, u64)> {
        if self.state == SendState::ResetSent && self.reset_pending {
            self.reset_pending = false;
            return Some((self.reset_code, wide(self.written)));
        }
        None
    }

    /// The RESET_STREAM frame was lost: send it again.
    pub fn on_reset_lost(&mut self) {
        if self.state == SendState::ResetSent {
            self.reset_pending = true;
        }
    }

    /// The RESET_STREAM frame was acknowledged (`ResetRecvd`).
    pub fn on_reset_acked(&mut self) {
        if self.state == SendState::ResetSent {
            self.state = SendState::ResetRecvd;
            self.reset_pending = false;
        }
    }

    /// The server rejected 0-RTT: its new limit for this stream replaces the remembered one
    /// ([`SendCredit::replace_max`]). Returns whether the bytes written fit it.
    pub fn replace_max_stream_data(&mut self, max: u64) -> bool {
        self.credit.replace_max(max)
    }

    /// A MAX_STREAM_DATA frame arrived (RFC 9000 §19.10); smaller limits are ignored.
    pub fn on_max_stream_data(&mut self, max: u64) {
        self.credit.on_max(max);
    }

    /// The limit for a STREAM_DATA_BLOCKED frame, if one is due. Marks it sent.
    pub fn poll_blocked(&mut self) -> Option<u64> {
        match self.state {
            SendState::Ready | SendState::Send if !self.finished => self.credit.poll_blocked(),
            _ => None,
        }
    }

    /// A STREAM_DATA_BLOCKED frame carrying `limit` was lost.
    pub fn on_blocked_lost(&mut self, limit: u64) {
        if matches!(self.state, SendState::Ready | SendState::Send) {
            self.credit.on_blocked_lost(limit);
        }
    }
}

/// Largest `len` such that `fixed + varint(len) + len ≤ space`.
fn room_after(fixed: usize, space: usize) -> usize {
    let Some(avail) = space.checked_sub(fixed) else { return 0 };
    // RFC 9000 §16: a Length of 1, 2, 4 or 8 bytes holds at most 63, 16383, 2^30-1, 2^62-1.
    // The narrowest width that can express what is left after it wins, except at the edges,
    // where the next narrower width's maximum is larger (16383 bytes with a 2-byte Length
    // beat 16382 with a 4-byte one). One comparison chain, no table (issue 8).
    let (n, narrower_max) = if avail <= 64 {
        (1, 0)
    } else if avail <= 16_385 {
        (2, 63)
    } else if avail <= (1 << 30) + 3 {
        (4, 16_383)
    } else {
        (8, (1 << 30) - 1)
    };
    avail.saturating_sub(n).max(narrower_max)
}

/// Data bytes a STREAM frame with a Length field for `id` at `offset` can carry when the
/// whole frame must fit in `space` bytes: pass the result to [`SendStream::next_chunk`].
/// Zero also when only a FIN-only frame (no data) fits.
pub fn stream_frame_room(id: StreamId, offset: u64, space: usize) -> usize {
    let off = if offset == 0 { 0 } else { crate::coding::encoded_size(offset) };
    room_after(1 + id.varint().size() + off, space)
}

/// Data bytes a CRYPTO frame at `offset` can carry in `space` bytes.
pub fn crypto_frame_room(offset: u64, space: usize) -> usize {
    room_after(1 + crate::coding::encoded_size(offset), space)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream ends at `Offset::MAX` (4 GiB without `std`): a write takes what fits below
    /// it, then nothing, and the chunks sent stay below it.
    #[test]
    fn a_stream_ends_at_the_offset_range() {
        let mut s = SendStream::<[u8; 64], 2>::new([0; 64], u64::MAX);
        let mut conn = SendCredit::new(u64::MAX);
        let near = Offset::MAX - 5;
        (s.base, s.sent, s.written) = (near, near, near);
        assert_eq!(s.write(&mut conn, &[7; 10]), Ok(5));
        assert_eq!(s.write(&mut conn, &[7; 10]), Ok(0));
        assert_eq!(s.written(), wide(Offset::MAX));
        let c = s.next_chunk(100).unwrap();
        assert_eq!((c.offset, c.len, c.end()), (wide(near), 5, wide(Offset::MAX)));
        assert_eq!(s.chunk_bytes(&c), &[7; 5]);
        s.on_sent(&c);
        s.on_ack(c.offset, c.len, false);
        assert_eq!(s.buffered(), 0);
    }

    /// The comparison chain equals trying every Length width, around every width's edges.
    #[test]
    fn room_after_matches_every_width_tried() {
        let reference = |avail: usize| {
            let mut best = 0;
            for (n, max) in [(1usize, 63usize), (2, 16_383), (4, (1 << 30) - 1), (8, usize::MAX)] {
                if let Some(len) = avail.checked_sub(n) {
                    best = best.max(len.min(max));
                }
            }
            best
        };
        for edge in [0usize, 64, 16_385, (1 << 30) + 3, 1 << 40] {
            for avail in edge.saturating_sub(10)..edge + 10 {
                assert_eq!(room_after(0, avail), reference(avail), "avail {avail}");
                assert_eq!(room_after(3, avail + 3), reference(avail));
            }
        }
        assert_eq!(room_after(5, 4), 0);
    }
}
