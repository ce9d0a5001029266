//! HTTP/3 over a mote-quic connection: the adapter now lives in `mote_h3::quic` (feature
//! `quic`), shared with mote-net; re-exported here under its old path.

pub use mote_h3::quic::*;
