//! HTTP/3 over a mote-quic [`Connection`](mote_quic::Connection) without a heap (feature
//! `device`): the device's adapter.
//!
//! [`QuicTransport`] is the [`Transport`](crate::connection::Transport) (and the device
//! client's [`Streams`](crate::client::Streams)) for a borrowed connection. Stream IDs are
//! QUIC stream IDs on both sides, so every method is a direct call. The device's request
//! path is [`crate::client::Client`], a one-request-at-a-time client over it, in fixed
//! storage (put it in a `static` on a device).

//! [`DeviceTransport`] is the same over mote-quic's device connection type
//! ([`mote_quic::device::DeviceConnection`]).

pub use crate::adapter::QuicTransport;
pub use crate::device_adapter::DeviceTransport;
