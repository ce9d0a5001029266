//! Variable-length integers (RFC 9000 §16): every varint decoded from the input is below
//! 2^62, used the length its prefix announced, re-encodes to the same bytes at that
//! length, and its shortest encoding decodes back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mote_quic::coding::{encode_varint_sized, encoded_size, Reader, Writer};

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    loop {
        let before = r.position();
        let Ok(v) = r.varint() else {
            // Truncated: nothing consumed, and the announced length really is missing.
            assert_eq!(r.position(), before);
            if let Some(first) = data.get(before) {
                assert!(data.len() - before < 1 << (first >> 6));
            }
            break;
        };
        let used = r.position() - before;
        assert_eq!(used, 1 << (data[before] >> 6));
        assert!(v.into_inner() < 1 << 62);
        assert!(v.size() <= used && v.size() == encoded_size(v.into_inner()));

        let mut same = [0u8; 8];
        assert_eq!(encode_varint_sized(v, used, &mut same), Some(used));
        assert_eq!(&same[..used], &data[before..before + used]);

        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf);
        w.put_varint(v).unwrap();
        let shortest = w.position();
        assert_eq!(shortest, v.size());
        assert_eq!(Reader::new(&buf[..shortest]).varint(), Ok(v));
    }
});
