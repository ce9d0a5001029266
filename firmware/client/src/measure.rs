//! Self-measurement: peak stack by stack painting, and per-phase counters (busy time, which
//! under QEMU `-icount shift=0` is the instruction count, and elapsed time).
//!
//! The report travels over the serial line as a [`crate::frame::kind::REPORT`] frame of
//! (tag, u64 little-endian) pairs; `cargo xtask qemu` names the tags.

#![allow(unsafe_code)]

use crate::board::Board;

/// Report tags (kept in step with `xtask/src/qemu.rs`).
pub mod tag {
    /// Which transaction: 0 = 1-RTT, 1 = resumed with 0-RTT.
    pub const TRANSACTION: u8 = 1;
    /// 1 if the transaction completed (GET 200 with the whole object, POST 200).
    pub const OK: u8 = 2;
    /// 1 if the server accepted 0-RTT.
    pub const EARLY_DATA_ACCEPTED: u8 = 3;
    /// Status of the GET and of the POST.
    pub const GET_STATUS: u8 = 4;
    /// Status of the POST.
    pub const POST_STATUS: u8 = 5;
    /// Body bytes received for the GET.
    pub const GET_BYTES: u8 = 6;
    /// Key updates completed (RFC 9001 §6, either side's).
    pub const KEY_UPDATES: u8 = 7;
    /// Phase instructions (busy ns under icount shift=0): init, open, transfer, close.
    pub const INSN_INIT: u8 = 10;
    /// See [`INSN_INIT`].
    pub const INSN_OPEN: u8 = 11;
    /// See [`INSN_INIT`].
    pub const INSN_TRANSFER: u8 = 12;
    /// See [`INSN_INIT`].
    pub const INSN_CLOSE: u8 = 13;
    /// Phase durations in µs of device time: init, open, transfer, close.
    pub const US_INIT: u8 = 20;
    /// See [`US_INIT`].
    pub const US_OPEN: u8 = 21;
    /// See [`US_INIT`].
    pub const US_TRANSFER: u8 = 22;
    /// See [`US_INIT`].
    pub const US_CLOSE: u8 = 23;
    /// Connection counters: datagrams and bytes sent and received, PTOs, lost packets.
    pub const DATAGRAMS_SENT: u8 = 30;
    /// See [`DATAGRAMS_SENT`].
    pub const BYTES_SENT: u8 = 31;
    /// See [`DATAGRAMS_SENT`].
    pub const DATAGRAMS_RECEIVED: u8 = 32;
    /// See [`DATAGRAMS_SENT`].
    pub const BYTES_RECEIVED: u8 = 33;
    /// See [`DATAGRAMS_SENT`].
    pub const PTOS: u8 = 34;
    /// See [`DATAGRAMS_SENT`].
    pub const PACKETS_LOST: u8 = 35;
    /// Frames dropped by the serial decoder (CRC, length).
    pub const FRAMES_DROPPED: u8 = 36;
    /// Why the connection closed: 0 we closed after the transaction, 1 we closed with an
    /// error (code in [`CLOSE_CODE`]), 2 the peer closed, 3 idle timeout, 4 other.
    pub const CLOSE_KIND: u8 = 37;
    /// The error code of the close.
    pub const CLOSE_CODE: u8 = 38;
    /// The HTTP/3 error that failed the transaction, if any.
    pub const H3_ERROR: u8 = 39;
    /// Peak stack bytes over the whole run (painting; includes the connection object,
    /// a local of the transaction, and the constructor's temporaries) and the window size.
    pub const STACK_PEAK: u8 = 40;
    /// See [`STACK_PEAK`].
    pub const STACK_SIZE: u8 = 41;
    /// Peak stack per phase, below the transaction's frame (the call stack of the QUIC, TLS
    /// and HTTP/3 code; the frame itself holds the connection state): init, open,
    /// transfer, close.
    pub const STACK_INIT: u8 = 50;
    /// See [`STACK_INIT`].
    pub const STACK_OPEN: u8 = 51;
    /// See [`STACK_INIT`].
    pub const STACK_TRANSFER: u8 = 52;
    /// See [`STACK_INIT`].
    pub const STACK_CLOSE: u8 = 53;
    /// Bytes of the transaction's frame (connection, HTTP/3 session, request state).
    pub const STACK_FRAME: u8 = 54;
    /// Feature `stack-steps`: stack below the transaction's frame per event-loop step:
    /// receive (handle_datagram), transmit (poll_transmit), HTTP/3, timeout.
    pub const STEP_RECEIVE: u8 = 55;
    /// See [`STEP_RECEIVE`].
    pub const STEP_TRANSMIT: u8 = 56;
    /// See [`STEP_RECEIVE`].
    pub const STEP_H3: u8 = 57;
    /// See [`STEP_RECEIVE`].
    pub const STEP_TIMEOUT: u8 = 58;
    /// Heap bytes at the high-water mark (0: the client has no allocator).
    pub const HEAP_PEAK: u8 = 42;
    /// Bytes of the connection object, of the HTTP/3 session, and of the caller-owned
    /// buffers (CRYPTO, streams, datagram).
    pub const CONNECTION_BYTES: u8 = 43;
    /// See [`CONNECTION_BYTES`].
    pub const H3_BYTES: u8 = 44;
    /// See [`CONNECTION_BYTES`].
    pub const BUFFER_BYTES: u8 = 45;
}

/// Phases of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Creating the connection and writing the first flight (key share, ClientHello).
    Init = 0,
    /// From the first datagram to the handshake's completion.
    Open = 1,
    /// The GET and the POST.
    Transfer = 2,
    /// CONNECTION_CLOSE.
    Close = 3,
}

/// Busy nanoseconds and elapsed µs per phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// Busy ns (instructions under icount shift=0) per phase.
    pub insn: [u64; 4],
    /// Elapsed µs per phase.
    pub us: [u64; 4],
    /// Deepest stack address per phase (0: not measured).
    pub deepest: [usize; 4],
    current: Option<(usize, u64, u64)>,
}

impl Phases {
    /// The running phase.
    pub fn current(&self) -> Option<Phase> {
        match self.current.map(|c| c.0) {
            Some(0) => Some(Phase::Init),
            Some(1) => Some(Phase::Open),
            Some(2) => Some(Phase::Transfer),
            Some(3) => Some(Phase::Close),
            _ => None,
        }
    }

    /// Ends the running phase (if any) and starts `next` (or none).
    /// Stack painting and scanning happen between the two clock readings, so they count
    /// in no phase.
    pub fn enter<B: Board>(&mut self, board: &mut B, next: Option<Phase>) {
        let (busy, now) = (board.busy_ns(), board.now_us());
        if let Some((i, b0, t0)) = self.current.take() {
            if let (Some(insn), Some(us)) = (self.insn.get_mut(i), self.us.get_mut(i)) {
                *insn += busy - b0;
                *us += now - t0;
            }
            if let Some(d) = self.deepest.get_mut(i) {
                let deepest = deepest();
                *d = if *d == 0 { deepest } else { (*d).min(deepest) };
            }
        }
        paint_stack();
        let (busy, now) = (board.busy_ns(), board.now_us());
        self.current = next.map(|p| (p as usize, busy, now));
    }
}

/// A report frame under construction.
pub struct Report {
    buf: [u8; 9 * 32],
    len: usize,
}

impl Default for Report {
    fn default() -> Self {
        Self::new()
    }
}

impl Report {
    /// An empty report.
    pub const fn new() -> Self {
        Self { buf: [0; 9 * 32], len: 0 }
    }

    /// Adds one value (dropped if the report is full).
    pub fn put(&mut self, tag: u8, value: u64) {
        if let Some([t, v @ ..]) = self.buf.get_mut(self.len..self.len + 9) {
            *t = tag;
            v.copy_from_slice(&value.to_le_bytes());
            self.len += 9;
        }
    }

    /// The encoded pairs.
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// The word painted over the free stack.
const PAINT: u32 = 0xa5a5_a5a5;
/// How much stack is painted and watched (from the top).
const WINDOW: usize = 128 * 1024;

extern "C" {
    // cortex-m-rt / riscv-rt: the initial stack pointer (top of the stack).
    static mut _stack_start: u8;
}

/// The watched stack: `WINDOW` bytes below the initial stack pointer, word-aligned.
fn stack_bounds() -> (usize, usize) {
    // Only the address of the linker symbol is taken.
    let top = core::ptr::addr_of_mut!(_stack_start) as usize & !3;
    (top - WINDOW, top)
}

/// An address just below the caller's frame (a local of this non-inlined function), for
/// measuring stack depth below the caller.
#[inline(never)]
pub fn frame_marker() -> usize {
    let marker = 0u8;
    core::hint::black_box(core::ptr::addr_of!(marker) as usize)
}

/// Paints the watched stack below the current frame (minus a margin) with [`PAINT`].
#[inline(never)]
pub fn paint_stack() {
    let (bottom, _) = stack_bounds();
    let end = frame_marker().saturating_sub(128) & !3;
    let mut p = bottom;
    while p < end {
        // SAFETY: [bottom, end) is unused stack below this frame (the RAM the linker
        // script gives the stack is larger than the window); `p` is word-aligned.
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// The lowest stack address written since the last [`paint_stack`].
pub fn deepest() -> usize {
    let (bottom, top) = stack_bounds();
    let mut p = bottom;
    // SAFETY: word reads within the stack window.
    while p < top && unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    p
}

/// The top of the stack.
pub fn stack_top() -> usize {
    stack_bounds().1
}

/// The size of the watched window.
pub const fn window() -> usize {
    WINDOW
}
