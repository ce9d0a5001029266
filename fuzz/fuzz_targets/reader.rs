//! `Reader` and `Writer` driven by an input-chosen sequence of operations: neither ever
//! reads or writes out of bounds or panics, a failed operation consumes nothing, and what
//! was read can be written back byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mote_quic::coding::{Reader, Writer};

fuzz_target!(|data: &[u8]| {
    // The first byte says how many operation bytes follow; the rest is the input to read.
    let Some((&n, rest)) = data.split_first() else { return };
    let (ops, input) = rest.split_at(usize::from(n % 32).min(rest.len()));
    let mut r = Reader::new(input);
    // A deliberately small output, so writes fail too.
    let mut out = [0u8; 48];
    let mut w = Writer::new(&mut out);
    let mut echoed = 0usize; // input bytes written back so far, contiguously

    for &op in ops {
        let before = r.position();
        let wrote_before = w.position();
        let read: Result<&[u8], _> = match op % 8 {
            0 => r.u8().map(|_| &input[before..before + 1]),
            1 => r.u16().map(|_| &input[before..before + 2]),
            2 => r.u32().map(|_| &input[before..before + 4]),
            3 => r.varint().map(|_| &input[before..r.position()]),
            4 => r.varint_prefixed().map(|_| &input[before..r.position()]),
            5 => r.bytes(usize::from(op >> 3)),
            6 => r.array::<3>().map(|_| &input[before..before + 3]),
            _ => Ok(r.rest()),
        };
        assert!(r.position() <= input.len());
        assert_eq!(r.position() + r.remaining(), input.len());
        assert_eq!(r.peek_rest(), &input[r.position()..]);
        match read {
            Ok(bytes) => {
                assert_eq!(bytes, &input[before..r.position()]);
                if w.put_slice(bytes).is_ok() && echoed == before {
                    echoed = r.position();
                }
            }
            Err(_) => assert_eq!(r.position(), before),
        }
        assert!(w.position() <= 48 && w.position() >= wrote_before);
        assert_eq!(w.position() + w.remaining(), 48);
    }
    // Everything read so far was written back in order until the first write failure.
    let written = w.position();
    let prefix = echoed.min(written);
    assert_eq!(&out[..prefix], &input[..prefix]);
});
