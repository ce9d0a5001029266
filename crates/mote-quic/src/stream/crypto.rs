//! CRYPTO streams (RFC 9000 §7.5, §19.6): one per encryption level, delivering handshake
//! bytes to TLS in order from a bounded buffer.

use super::flow::SendCredit;
use super::reassembly::{Insert, Reassembler};
use super::send::{Chunk, SendStream};
use super::StreamError;

/// RFC 9000 §7.5: "Implementations MUST support buffering at least 4096 bytes of data
/// received in out-of-order CRYPTO frames."
pub const MIN_CRYPTO_BUFFER: usize = 4096;

/// The receiving half of the CRYPTO stream of one encryption level (Initial, Handshake or
/// 1-RTT; 0-RTT packets carry no CRYPTO).
///
/// CRYPTO data has no flow control, so the buffer is the only bound: a frame ending more
/// than `capacity` bytes past what TLS has consumed closes the connection with
/// CRYPTO_BUFFER_EXCEEDED (§7.5). This holds after the handshake too, so an endless 1-RTT
/// CRYPTO stream (post-handshake messages) cannot grow memory. Out-of-order fragments follow
/// the reassembler's rules (kept in at most `R` ranges with `reorder`, dropped without).
/// Memory: `buffer + 16·R + 32` bytes per level with `reorder`, `buffer + 24` without on
/// hosts; `buffer + 16·R + 24` and `buffer + 12` on a Cortex-M4 (32-bit offsets).
#[derive(Clone, Debug)]
pub struct CryptoRecv<S, const R: usize> {
    asm: Reassembler<S, R>,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> CryptoRecv<S, R> {
    /// A CRYPTO stream over `buf`; give it at least [`MIN_CRYPTO_BUFFER`] bytes.
    pub fn new(buf: S) -> Self {
        Self { asm: Reassembler::new(buf) }
    }

    /// [`Self::new`] written on zero-filled memory (the device connection's slot).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, buf: S) {
        // SAFETY: the caller's contract.
        unsafe { Reassembler::write_zeroed(core::ptr::addr_of_mut!((*dst).asm), buf) }
    }

    /// Starts again at offset 0 keeping the storage (the buffer of a discarded level can
    /// serve another).
    pub fn reset(&mut self) {
        self.asm.reset();
    }

    /// A CRYPTO frame (RFC 9000 §19.6).
    pub fn on_crypto(&mut self, offset: u64, data: &[u8]) -> Result<Insert, StreamError> {
        self.asm.insert(offset, data).map_err(|_| StreamError::CryptoBufferExceeded)
    }

    /// In-order bytes ready for TLS, up to the end of the ring; follow with
    /// [`CryptoRecv::consume`].
    pub fn peek(&self) -> &[u8] {
        self.asm.peek()
    }

    /// Marks `n` peeked bytes consumed by TLS.
    pub fn consume(&mut self, n: usize) -> usize {
        self.asm.consume(n)
    }

    /// Copies in-order bytes into `out` and consumes them.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        self.asm.read(out)
    }

    /// Bytes ready for TLS.
    pub const fn readable(&self) -> u64 {
        self.asm.readable()
    }

    /// Offset of the next byte TLS will get.
    pub const fn read_offset(&self) -> u64 {
        self.asm.read_offset()
    }

    /// Out-of-order ranges currently held.
    pub const fn gaps(&self) -> usize {
        self.asm.gaps()
    }

    /// Bytes of storage.
    pub fn capacity(&self) -> usize {
        self.asm.capacity()
    }
}

/// The sending half of the CRYPTO stream of one encryption level: the stream send buffer
/// without flow control (retransmissions first, bounded range sets; see [`SendStream`]).
#[derive(Clone, Debug)]
pub struct CryptoSend<S, const R: usize> {
    inner: SendStream<S, R>,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> CryptoSend<S, R> {
    /// A CRYPTO send buffer over `buf`.
    pub fn new(buf: S) -> Self {
        Self { inner: SendStream::new(buf, u64::MAX) }
    }

    /// [`Self::new`] written on zero-filled memory (the device connection's slot).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, buf: S) {
        // SAFETY: the caller's contract.
        unsafe { SendStream::write_zeroed(core::ptr::addr_of_mut!((*dst).inner), buf, u64::MAX) }
    }

    /// Queues handshake bytes from TLS; returns how many fit the buffer.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let mut unlimited = SendCredit::new(u64::MAX);
        self.inner.write(&mut unlimited, data).unwrap_or(0)
    }

    /// The next chunk (never with FIN), at most `max_len` bytes.
    pub fn next_chunk(&self, max_len: usize) -> Option<Chunk> {
        self.inner.next_chunk(max_len)
    }

    /// The bytes of `chunk`.
    pub fn chunk_bytes(&self, chunk: &Chunk) -> &[u8] {
        self.inner.chunk_bytes(chunk)
    }

    /// Records `chunk` sent.
    pub fn on_sent(&mut self, chunk: &Chunk) {
        self.inner.on_sent(chunk);
    }

    /// The stream buffer underneath (the device send path writes CRYPTO and STREAM frames
    /// with one routine over it).
    #[cfg(feature = "device")]
    pub(crate) fn stream_mut(&mut self) -> &mut SendStream<S, R> {
        &mut self.inner
    }

    /// The CRYPTO frame carrying `len` bytes at `offset` was acknowledged.
    pub fn on_ack(&mut self, offset: u64, len: usize) {
        self.inner.on_ack(offset, len, false);
    }

    /// The CRYPTO frame carrying `len` bytes at `offset` was lost.
    pub fn on_lost(&mut self, offset: u64, len: usize) {
        self.inner.on_lost(offset, len, false);
    }

    /// Bytes written and not yet acknowledged.
    pub const fn buffered(&self) -> u64 {
        self.inner.buffered()
    }

    /// Contiguous free space for the next handshake message, written in place (see
    /// [`SendStream::spare_mut`]); follow with [`CryptoSend::commit`].
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.inner.spare_mut()
    }

    /// Appends the first `n` bytes of [`CryptoSend::spare_mut`]; returns how many.
    pub fn commit(&mut self, n: usize) -> usize {
        self.inner.commit(n)
    }

    /// Queues all unacknowledged bytes for retransmission (a PTO probe).
    pub fn requeue_unacked(&mut self) {
        self.inner.requeue_unacked();
    }

    /// True if sent bytes await acknowledgement.
    pub const fn has_unacked(&self) -> bool {
        self.inner.has_unacked()
    }

    /// True if [`CryptoSend::next_chunk`] has something to send.
    pub fn wants_to_send(&self) -> bool {
        self.inner.wants_to_send()
    }

    /// End of the data sent at least once.
    pub const fn sent_offset(&self) -> u64 {
        self.inner.sent_offset()
    }

    /// Offset of the next byte to be written.
    pub const fn written(&self) -> u64 {
        self.inner.written()
    }

    /// Drops everything (the level's keys were discarded).
    pub fn reset(&mut self) {
        self.inner.reinit(u64::MAX);
    }
}
