//! The receiving part of a stream (RFC 9000 §3.2) with its flow control (§4) and final-size
//! rules (§4.5).

use super::flow::RecvCredit;
use super::reassembly::{Insert, Reassembler};
use super::{narrow, wide, Offset, StreamError};

/// RFC 9000 §3.2, Figure 3: states of the receiving part of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvState {
    /// Receiving data; the final size is not yet known.
    Recv,
    /// A frame with FIN arrived: the final size is known, some data is missing.
    SizeKnown,
    /// Every byte up to the final size has arrived; the application is still reading.
    DataRecvd,
    /// The application read everything (terminal).
    DataRead,
    /// The peer reset the stream; the application has not been told yet.
    ResetRecvd,
    /// The application was told of the reset (terminal).
    ResetRead,
}

/// The result of [`RecvStream::read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes were copied out (always at least one).
    Data(usize),
    /// Nothing to read yet.
    Blocked,
    /// Every byte has been read and the stream ended (now in `DataRead`).
    Fin,
    /// The peer reset the stream with this application error code (now in `ResetRead`).
    Reset(u64),
    /// The application stopped reading with [`RecvStream::stop`].
    Stopped,
}

/// STOP_SENDING bookkeeping (RFC 9000 §3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    None,
    Pending(u64),
    Sent(u64),
    Acked,
}

/// The receiving part of a stream: reassembly into caller storage `S`, the stream's
/// advertised limit (MAX_STREAM_DATA, never beyond `read offset + buffer`), final size and
/// reset handling.
///
/// Every received frame is checked before anything changes, in this order: final size
/// (§4.5, FINAL_SIZE_ERROR), stream limit, connection limit (§4.1, FLOW_CONTROL_ERROR).
/// Data inside the advertised window always fits the buffer, so every byte of a frame that
/// is not [`Insert::Dropped`] is kept until the application reads it; a dropped one must not
/// be acknowledged (see [`Insert::Dropped`]).
///
/// Memory: `buffer + 16·R + 136` bytes with `reorder`, `buffer + 128` without, on hosts;
/// `buffer + 16·R + 88` and `buffer + 80` without `std` (32-bit offsets; measured on
/// `thumbv7em` and x86-64 alike).
#[derive(Clone, Debug)]
pub struct RecvStream<S, const R: usize> {
    asm: Reassembler<S, R>,
    credit: RecvCredit,
    state: RecvState,
    final_size: Option<Offset>,
    reset_code: u64,
    /// Bytes released to the connection-level credit (read or discarded).
    released: Offset,
    stop: Stop,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> RecvStream<S, R> {
    /// A stream in `Recv` over `buf`, advertising `window` bytes (the initial
    /// MAX_STREAM_DATA of the transport parameters), clamped to the buffer size.
    // Out of line: the stream table writes every slot through it (issue 8).
    #[inline(never)]
    pub fn new(buf: S, window: u64) -> Self {
        let asm = Reassembler::new(buf);
        let window = window.min(asm.capacity() as u64);
        Self {
            asm,
            credit: RecvCredit::new(window),
            state: RecvState::Recv,
            final_size: None,
            reset_code: 0,
            released: 0,
            stop: Stop::None,
        }
    }

    /// [`Self::new`] written on zero-filled memory (the device connection's slot): only
    /// the buffer and the credit are written; the other fields' initial values are all
    /// zeros (checked at compile time).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, buf: S, window: u64) {
        use core::ptr::addr_of_mut;
        // Checked on a stream without storage: a field's all-zero value depends on its
        // type only (the reassembler checks its own).
        crate::connection::init::zeroed!(RecvStream<(), R>, |z| matches!(
            z,
            RecvStream {
                asm: _,
                credit: _,
                state: RecvState::Recv,
                final_size: None,
                reset_code: 0,
                released: 0,
                stop: Stop::None,
            }
        ));
        let window = window.min(buf.as_ref().len() as u64);
        // SAFETY: the caller's contract.
        unsafe {
            Reassembler::write_zeroed(addr_of_mut!((*dst).asm), buf);
            addr_of_mut!((*dst).credit).write(RecvCredit::new(window));
        }
    }

    /// Starts again as a fresh stream, keeping the storage (slot reuse).
    pub fn reinit(&mut self, window: u64) {
        self.asm.reset();
        let window = window.min(self.asm.capacity() as u64);
        self.credit = RecvCredit::new(window);
        self.state = RecvState::Recv;
        self.final_size = None;
        self.reset_code = 0;
        self.released = 0;
        self.stop = Stop::None;
    }

    /// The current state.
    pub const fn state(&self) -> RecvState {
        self.state
    }

    /// The final size, once known.
    pub const fn final_size(&self) -> Option<u64> {
        match self.final_size {
            Some(s) => Some(wide(s)),
            None => None,
        }
    }

    /// The stream-level credit (advertised limit, highest offset received, bytes read).
    pub const fn credit(&self) -> &RecvCredit {
        &self.credit
    }

    /// Sets how far the limit must be able to move before MAX_STREAM_DATA is sent.
    pub fn set_update_threshold(&mut self, bytes: u64) {
        self.credit.set_update_threshold(bytes);
    }

    /// Bytes ready for [`RecvStream::read`].
    pub const fn readable(&self) -> u64 {
        self.asm.readable()
    }

    /// Out-of-order ranges currently held.
    pub const fn gaps(&self) -> usize {
        self.asm.gaps()
    }

    /// True once the application has seen the end (`DataRead` or `ResetRead`), or stopped
    /// reading and the final size is known: nothing more is owed to it.
    pub fn is_closed(&self) -> bool {
        match self.state {
            RecvState::DataRead | RecvState::ResetRead => true,
            _ => self.is_stopped() && self.final_size.is_some(),
        }
    }

    /// True after [`RecvStream::stop`].
    pub const fn is_stopped(&self) -> bool {
        !matches!(self.stop, Stop::None)
    }

    /// Final-size (§4.5) and flow-control (§4.1) checks for a frame that says the peer has
    /// sent up to `end`, `fin` if it fixes the final size there; the bytes new to flow
    /// control are then counted against the stream's and the connection's credit (one place
    /// for STREAM and RESET_STREAM).
    fn check_and_count(
        &mut self,
        conn: &mut RecvCredit,
        end: u64,
        fin: bool,
    ) -> Result<Offset, StreamError> {
        let highest = self.credit.received();
        if let Some(size) = self.final_size {
            // "Once a final size for a stream is known, it cannot change": a different
            // FIN offset, or data past it, is a FINAL_SIZE_ERROR.
            let size = wide(size);
            if end > size || (fin && end != size) {
                return Err(StreamError::FinalSize);
            }
        } else if fin && end < highest {
            // A final size below bytes already received.
            return Err(StreamError::FinalSize);
        }
        let more = end.saturating_sub(highest);
        self.credit.check(more)?;
        conn.check(more)?;
        self.credit.on_received(more);
        conn.on_received(more);
        // Within the stream's advertised limit, so it fits an `Offset`.
        Ok(narrow(end))
    }

    /// Gives back connection credit for every byte below `upto` not yet released.
    fn release_to(&mut self, conn: &mut RecvCredit, upto: Offset) {
        if upto > self.released {
            conn.on_consumed(wide(upto - self.released));
            self.released = upto;
        }
    }

    /// A STREAM frame (RFC 9000 §19.8) for this stream: `data` at `offset`, `fin` if the
    /// FIN bit was set. `conn` is the connection-level receive credit.
    pub fn on_stream(
        &mut self,
        conn: &mut RecvCredit,
        offset: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<Insert, StreamError> {
        let end = self.check_and_count(conn, offset.saturating_add(data.len() as u64), fin)?;
        if fin && self.final_size.is_none() {
            self.final_size = Some(end);
            self.credit.cancel_update();
            if self.state == RecvState::Recv {
                self.state = RecvState::SizeKnown;
            }
        }
        match self.state {
            RecvState::Recv | RecvState::SizeKnown => {}
            // Reset, or everything already here: nothing more to store.
            _ => return Ok(Insert::Duplicate),
        }
        if self.is_stopped() {
            // The application will not read: count the bytes as consumed at once.
            let upto = narrow(self.credit.received());
            self.release_to(conn, upto);
            return Ok(Insert::Duplicate);
        }
        // The window is at most the buffer, so this cannot fail after the checks above.
        let outcome = self.asm.insert(offset, data).map_err(|_| StreamError::FlowControl)?;
        if self.state == RecvState::SizeKnown
            && Some(self.asm.contiguous_end()) == self.final_size()
        {
            self.state = RecvState::DataRecvd;
        }
        Ok(outcome)
    }

    /// A RESET_STREAM frame (RFC 9000 §19.4). Buffered data is discarded and its connection
    /// credit released. Ignored once all data has arrived (RFC 9000 §3.2 allows either).
    pub fn on_reset(
        &mut self,
        conn: &mut RecvCredit,
        error_code: u64,
        final_size: u64,
    ) -> Result<(), StreamError> {
        let final_size = self.check_and_count(conn, final_size, true)?;
        self.final_size = Some(final_size);
        self.credit.cancel_update();
        match self.state {
            RecvState::Recv | RecvState::SizeKnown => {
                self.state = RecvState::ResetRecvd;
                self.reset_code = error_code;
                self.asm.discard_to(wide(final_size));
                self.release_to(conn, final_size);
                // RFC 9000 §3.5: no STOP_SENDING needed once the peer has reset.
                if matches!(self.stop, Stop::Pending(_)) {
                    self.stop = Stop::Acked;
                }
            }
            _ => {
                if self.is_stopped() {
                    self.release_to(conn, final_size);
                }
            }
        }
        Ok(())
    }

    /// Copies readable bytes into `out`, frees their buffer space, and may queue a
    /// MAX_STREAM_DATA / MAX_DATA update. `conn` is the connection-level receive credit.
    pub fn read(&mut self, conn: &mut RecvCredit, out: &mut [u8]) -> Read {
        match self.state {
            RecvState::ResetRecvd | RecvState::ResetRead => {
                self.state = RecvState::ResetRead;
                return Read::Reset(self.reset_code);
            }
            RecvState::DataRead => return Read::Fin,
            _ => {}
        }
        if self.is_stopped() {
            return Read::Stopped;
        }
        let n = self.asm.read(out);
        if n > 0 {
            let read = narrow(self.asm.read_offset());
            self.release_to(conn, read);
            self.credit.on_consumed(n as u64);
            if self.state != RecvState::Recv {
                // The final size is known: the peer needs no more credit.
                self.credit.cancel_update();
            }
            return Read::Data(n);
        }
        if self.state == RecvState::DataRecvd && Some(self.asm.read_offset()) == self.final_size() {
            self.state = RecvState::DataRead;
            return Read::Fin;
        }
        Read::Blocked
    }

    /// The readable bytes up to the end of the ring, for zero-copy reading; follow with
    /// [`RecvStream::consume`].
    pub fn peek(&self) -> &[u8] {
        if self.is_stopped() {
            return &[];
        }
        match self.state {
            RecvState::Recv | RecvState::SizeKnown | RecvState::DataRecvd => self.asm.peek(),
            _ => &[],
        }
    }

    /// Marks `n` peeked bytes as read (clamped). Returns the count.
    pub fn consume(&mut self, conn: &mut RecvCredit, n: usize) -> usize {
        if self.peek().is_empty() {
            return 0;
        }
        let n = self.asm.consume(n);
        let read = narrow(self.asm.read_offset());
        self.release_to(conn, read);
        self.credit.on_consumed(n as u64);
        if self.state != RecvState::Recv {
            self.credit.cancel_update();
        }
        n
    }

    /// The application no longer wants the data (RFC 9000 §3.5): discard what is buffered
    /// and everything that arrives later, release its connection credit, and queue
    /// STOP_SENDING with `error_code` unless the stream already ended or was reset.
    pub fn stop(&mut self, conn: &mut RecvCredit, error_code: u64) {
        if self.is_stopped() || self.is_closed() {
            return;
        }
        let highest = self.credit.received();
        self.asm.discard_to(highest);
        self.release_to(conn, narrow(highest));
        self.credit.cancel_update();
        self.stop = match self.state {
            RecvState::Recv | RecvState::SizeKnown => Stop::Pending(error_code),
            // All data is here or the peer reset: nothing to ask for.
            _ => Stop::Acked,
        };
    }

    /// True if STOP_SENDING or MAX_STREAM_DATA is waiting to be sent (what
    /// [`RecvStream::poll_stop_sending`] / [`RecvStream::poll_max_stream_data`] would give).
    pub fn wants_control(&self) -> bool {
        matches!(self.stop, Stop::Pending(_))
            || (self.state == RecvState::Recv && !self.is_stopped() && self.credit.update_pending())
    }

    /// The error code of a STOP_SENDING frame to send, if one is due. Marks it sent.
    pub fn poll_stop_sending(&mut self) -> Option<u64> {
        match self.stop {
            Stop::Pending(code) => {
                self.stop = Stop::Sent(code);
                Some(code)
            }
            _ => None,
        }
    }

    /// The STOP_SENDING frame was lost: send it again unless the stream has since ended.
    pub fn on_stop_sending_lost(&mut self) {
        if let Stop::Sent(code) = self.stop {
            if matches!(self.state, RecvState::Recv | RecvState::SizeKnown) {
                self.stop = Stop::Pending(code);
            }
        }
    }

    /// The STOP_SENDING frame was acknowledged.
    pub fn on_stop_sending_acked(&mut self) {
        if let Stop::Sent(_) = self.stop {
            self.stop = Stop::Acked;
        }
    }

    /// The new limit for a MAX_STREAM_DATA frame, if an update is due (only in `Recv`).
    pub fn poll_max_stream_data(&mut self) -> Option<u64> {
        if self.state != RecvState::Recv || self.is_stopped() {
            self.credit.cancel_update();
            return None;
        }
        self.credit.poll_update()
    }

    /// A MAX_STREAM_DATA frame carrying `max` was lost.
    pub fn on_max_stream_data_lost(&mut self, max: u64) {
        if self.state == RecvState::Recv && !self.is_stopped() {
            self.credit.on_update_lost(max);
        }
    }
}
