//! Streams and flow control (RFC 9000 §2–4, §7.5): the building blocks the connection calls.
//!
//! Nothing here allocates. Byte storage is caller-provided: any `S: AsRef<[u8]> +
//! AsMut<[u8]>`, so a device passes `[u8; N]` or `&'static mut [u8]` and a server a
//! `Box<[u8]>`. Everything a peer can grow is bounded by a const generic and documented.
//!
//! | piece | RFC | type |
//! |---|---|---|
//! | stream IDs | §2.1 | [`StreamId`] |
//! | byte-range bookkeeping | — | [`RangeSet`] |
//! | flow-control credit | §4.1, §4.2 | [`SendCredit`], [`RecvCredit`] |
//! | reassembly into a ring | §2.2 | [`Reassembler`] |
//! | receiving part of a stream | §3.2, §4.5 | [`RecvStream`] |
//! | sending part of a stream | §3.1, §3.5 | [`SendStream`] |
//! | CRYPTO streams | §7.5, §19.6 | [`CryptoRecv`], [`CryptoSend`] |
//! | stream counts and limits | §2.1, §3.2, §4.6, §19.x | [`StreamLimits`] |
//! | fixed-capacity stream table | | [`Streams`] |
//!
//! ## Dropped fragments and acknowledgements
//!
//! A STREAM or CRYPTO fragment that cannot be stored without more memory (beyond a gap with
//! the `reorder` feature off, or needing more than `R` out-of-order ranges) is reported as
//! [`Insert::Dropped`]. The connection must then **not acknowledge the packet** (RFC 9000
//! §13.1 lets a receiver acknowledge only packets whose frames it processed), so the peer
//! retransmits; everything else in the packet is idempotent when it comes again. Stored
//! data lies inside the advertised window, which never exceeds the buffer, so every
//! acknowledged byte is kept until the application reads it.
//!
//! ## Offsets on a device
//!
//! The books keep stream offsets, flow-control limits and byte counts as an [`Offset`]:
//! `u64` on hosts, `u32` in builds without `std`, where 64-bit offset arithmetic cost about
//! 900 bytes of a Cortex-M4 client's flash and 600 bytes of its RAM (session 10). The
//! interfaces keep `u64` (the wire's 62-bit varints) and narrow where a value comes in:
//! - what the peer sends is checked as a `u64` first: data or a final size past the
//!   advertised limit is a FLOW_CONTROL_ERROR (RFC 9000 §4.1; final sizes §4.5 before
//!   that), CRYPTO data past the buffer a CRYPTO_BUFFER_EXCEEDED (§7.5), so whatever is
//!   stored fits;
//! - the peer's limits (transport parameters, MAX_DATA, MAX_STREAM_DATA) are clamped to
//!   `Offset::MAX`: §4.1 only forbids sending past a limit, and a limit above 4 GiB is as
//!   good as 4 GiB to a sender that never gets there;
//! - what goes out carries our own values, exact: STREAM and CRYPTO offsets, RESET_STREAM
//!   final sizes, the limits we grant (MAX_DATA, MAX_STREAM_DATA; initial_max_data is
//!   capped at `Offset::MAX` by [`StreamConfig::for_slots`], so what we advertise is what
//!   we enforce); no DATA_BLOCKED / STREAM_DATA_BLOCKED names a clamped limit.
//!
//! The price, without `std`: a stream ends at 4 GiB (CRYPTO streams too:
//! [`SendStream::write`] takes nothing more, received CRYPTO data beyond it is
//! CRYPTO_BUFFER_EXCEEDED), and a connection's flow-control totals stop at 4 GiB each way
//! (the credit granted stops growing, so the peer is blocked; our writes take nothing).

mod crypto;
mod flow;
mod id;
mod limits;
mod ranges;
mod reassembly;
mod recv;
mod ring;
mod send;
mod table;
#[cfg(test)]
mod tests;
mod unacked;

pub use crypto::{CryptoRecv, CryptoSend, MIN_CRYPTO_BUFFER};
pub use flow::{RecvCredit, SendCredit};
pub use id::StreamId;
pub use limits::{FrameKind, Opened, StreamLimits};
pub use ranges::{Full, RangeSet};
pub use reassembly::{BeyondBuffer, Insert, Reassembler};
pub use recv::{Read, RecvState, RecvStream};
pub use send::{crypto_frame_room, stream_frame_room, Chunk, SendState, SendStream, WriteError};
pub use table::{Control, Handled, OpenError, Slot, StreamConfig, StreamUse, Streams};

use crate::error::TransportErrorCode;

/// A stream offset or byte count as the stream books keep it: `u64` on hosts, `u32` in
/// builds without `std` (see [Offsets on a device](self#offsets-on-a-device)).
#[cfg(feature = "std")]
pub type Offset = u64;
/// A stream offset or byte count as the stream books keep it.
#[cfg(not(feature = "std"))]
pub type Offset = u32;

/// `x` as an [`Offset`], saturating.
#[allow(clippy::cast_possible_truncation, clippy::unnecessary_cast)]
pub(crate) const fn narrow(x: u64) -> Offset {
    if x > Offset::MAX as u64 {
        Offset::MAX
    } else {
        x as Offset
    }
}

/// An [`Offset`] as a `u64`.
#[allow(clippy::unnecessary_cast)]
pub(crate) const fn wide(x: Offset) -> u64 {
    x as u64
}

/// A stream or flow-control rule the peer broke; [`StreamError::code`] is the transport
/// error to close the connection with (RFC 9000 §20.1), each variant's discriminant (no
/// lookup on the device's error paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum StreamError {
    /// More data than the advertised stream or connection limit (§4.1).
    FlowControl = TransportErrorCode::FLOW_CONTROL_ERROR.0 as u8,
    /// A stream ID beyond the advertised MAX_STREAMS (§4.6).
    StreamLimit = TransportErrorCode::STREAM_LIMIT_ERROR.0 as u8,
    /// A frame for a stream that cannot carry it: wrong direction, or a locally initiated
    /// stream not yet opened (§19.4, §19.5, §19.8, §19.10, §19.13).
    StreamState = TransportErrorCode::STREAM_STATE_ERROR.0 as u8,
    /// A changed final size, or data past it (§4.5).
    FinalSize = TransportErrorCode::FINAL_SIZE_ERROR.0 as u8,
    /// CRYPTO data beyond the buffer (§7.5).
    CryptoBufferExceeded = TransportErrorCode::CRYPTO_BUFFER_EXCEEDED.0 as u8,
}

impl StreamError {
    /// The transport error code for CONNECTION_CLOSE.
    pub const fn code(self) -> TransportErrorCode {
        TransportErrorCode(self as u64)
    }
}
