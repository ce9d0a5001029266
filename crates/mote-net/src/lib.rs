//! mote on real UDP sockets.
//!
//! mote-quic is sans-IO: an [`Endpoint`](mote_quic::Endpoint) takes datagrams and a clock
//! and hands back datagrams and a deadline. This crate runs endpoints on the network:
//!
//! - [`socket`]: a UDP socket through `quinn-udp` (GSO batches out, GRO batches in, ECN
//!   codepoints and destination addresses of received datagrams) on tokio.
//! - [`driver`]: one tokio task per socket: feed what arrives, run the timer from
//!   `poll_timeout`, let the application act, send what `poll_transmit` produces.
//! - [`server`] (`mote serve`): a file server for many concurrent connections, speaking
//!   HTTP/0.9 as the interop runner's `hq-interop` and HTTP/3 (`h3`, through
//!   `mote_h3::quic`).
//! - [`client`] (`mote get`): fetches URLs over one connection in parallel, resumes and sends
//!   0-RTT from a session file, initiates key updates.
//! - [`device_client`] (`mote get --device`): the firmware's stack (mote-quic's device
//!   connection, mote-h3's one-request-at-a-time client) on a UDP socket, fetching one URL
//!   after the other, for interop against servers nobody here wrote.
//! - [`keylog`] (SSLKEYLOGFILE) and [`qlog`] (JSON-SEQ, the qvis schema): the observers QUIC
//!   engineers debug with.
//! - [`identity`]: certificates, keys and trust anchors from PEM files.

pub mod client;
pub mod clock;
pub mod device_client;
pub mod driver;
pub mod error;
pub mod identity;
pub mod keylog;
pub mod observe;
pub mod qlog;
pub mod server;
pub mod session_file;
pub mod socket;
pub mod types;
pub mod url;

pub use error::Error;

/// The interop runner's HTTP/0.9 ALPN.
pub const ALPN_HQ: &[u8] = b"hq-interop";
/// HTTP/3 (RFC 9114 §3.1).
pub const ALPN_H3: &[u8] = b"h3";
