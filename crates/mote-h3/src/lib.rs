//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) for microcontrollers and servers: `no_std`, no
//! heap, sans-IO.
// Tests use std (Vec, proptest); the library itself is `no_std`.
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

pub mod coding;
pub mod error;
pub mod qpack;

pub use error::{BufferTooSmall, H3Error, SendError};
