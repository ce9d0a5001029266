//! The TLS server state machine (PSK-only, with session tickets and 0-RTT): fed records
//! `level || len || bytes`, it must fail cleanly, never panic (`mote_tls::fuzz::server`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mote_tls::fuzz::server(data));
