//! Tests against RFC 8448's traces, robustness tests for the codecs, and in-memory
//! client ↔ server handshakes.

#[cfg(feature = "server")]
mod handshake;
#[cfg(feature = "server")]
mod harness;
#[cfg(feature = "server")]
mod one_of_each;
mod rfc8448;
mod rfc8448_vectors;
mod robust;
