//! A server connection fed client Initial packets with arbitrary plaintext (real Initial
//! protection) and arbitrary datagrams: it must never panic
//! (`mote_quic::connection::fuzz::server`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mote_quic::connection::fuzz::server(data));
