//! QUIC for microcontrollers and servers: `no_std`, sans-IO, caller-owned buffers.
//!
//! The wire layer — variable-length integers ([`coding`]), connection IDs ([`cid`]),
//! versions ([`version`]), frames ([`frame`]), packet headers, packet numbers and packet
//! protection ([`packet`]), transport parameters ([`transport_params`]) — loss recovery
//! ([`recovery`]), streams and flow control ([`stream`]), and on top of them the sans-IO
//! [`connection`] (driving a mote-tls handshake) and [`endpoint`]. Every parser works on
//! borrowed bytes, never reads past them and returns a [`WireError`] that maps onto the QUIC
//! transport error to close with; nothing allocates.
#![no_std]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

#[cfg(any(feature = "std", test))]
extern crate std;

mod arith;
pub mod cid;
pub mod coding;
pub mod connection;
#[cfg(feature = "device")]
pub mod device;
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod packet;
pub mod recovery;
pub mod stream;
pub mod time;
pub mod token;
pub mod transport_params;
pub mod version;

pub use cid::ConnectionId;
pub use coding::VarInt;
pub use connection::{Connection, ConnectionConfig, Event, Storage, Transmit};
pub use endpoint::{ConnectionHandle, Endpoint, EndpointConfig};
pub use error::{TransportErrorCode, WireError};
pub use time::{Duration, Instant};
pub use version::Version;
