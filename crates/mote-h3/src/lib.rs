//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) for microcontrollers and servers: `no_std`, no
//! heap, sans-IO.
//!
//! - [`frame`]: frame and stream-type codecs and an incremental per-stream frame reader
//!   that never reserves memory from a declared length.
//! - [`qpack`]: field compression. The device profile encodes with the static table and
//!   literals only and decodes without a dynamic table; the `dynamic-table` feature adds the
//!   decoding-side dynamic table in caller-provided storage (servers, brokers).
//! - [`connection`]: the session: critical streams, SETTINGS, request/response message
//!   state, GOAWAY, cancellation, limits. It drives a QUIC connection through the
//!   [`Transport`] trait and is fed received stream bytes by the caller.
//! - [`message`]: building request/response heads and checking received ones.
//! - [`client`]: the one-request-at-a-time device client (control stream, one request
//!   stream, the peer's control and QPACK streams) over [`client::Streams`].
//! - `device` (feature `device`): the heap-free adapter over a mote-quic connection that a
//!   microcontroller runs the session on.
//!
//! Nothing allocates: decoded fields go into caller buffers, DATA payloads are slices of
//! the caller's input, and per-stream state ([`StreamState`]) is kept by the caller.
// Tests use std (Vec, format!, proptest); the library itself is `no_std`.
#![cfg_attr(not(test), no_std)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

#[cfg(any(feature = "device", feature = "quic"))]
mod adapter;
pub mod client;
pub mod coding;
pub mod connection;
#[cfg(feature = "device")]
pub mod device;
#[cfg(feature = "device")]
mod device_adapter;
pub mod error;
pub mod frame;
pub mod message;
pub mod qpack;
#[cfg(feature = "quic")]
pub mod quic;
mod response_lines;

// Session tests pair a client with a server.
#[cfg(all(test, feature = "server"))]
mod tests;

pub use connection::{Config, Connection, Event, HeadersKind, Recv, Role, StreamState, Transport};
pub use error::{BufferTooSmall, H3Error, SendError};
pub use frame::Settings;
pub use message::{Request, Response};
pub use qpack::{Field, FieldSection};
