//! Arbitrary frame sequences injected as authenticated 1-RTT packets (and arbitrary
//! datagrams) into both sides of an established client/server pair that keep talking to
//! each other: it must never panic (`mote_quic::connection::fuzz::established`). Under
//! cargo-fuzz's `--cfg fuzzing` packet protection is bypassed, so raw datagrams reach the
//! frames too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mote_quic::connection::fuzz::established(data));
