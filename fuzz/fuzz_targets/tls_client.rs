//! The TLS client state machine: after its ClientHello, a client (raw-public-key or
//! external-PSK mode, by the first byte) is fed records `level || len || bytes`; it must
//! fail cleanly, never panic (`mote_tls::fuzz::client`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mote_tls::fuzz::client(data));
