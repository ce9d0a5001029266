//! Tests against RFC 8448's traces, and robustness tests for the codecs.

mod rfc8448;
mod rfc8448_vectors;
mod robust;
