//! A client connection (after its ClientHello) fed server Initial packets with arbitrary
//! plaintext and arbitrary datagrams: it must never panic
//! (`mote_quic::connection::fuzz::client`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mote_quic::connection::fuzz::client(data));
