//! QUIC frames (RFC 9000 §19, RFC 9221): a decrypted payload of any packet type parses
//! without panicking into at most one frame per byte, ending at the first error; every
//! frame's ACK ranges are valid and strictly descending; and every frame re-emits to
//! exactly `encoded_len()` bytes that parse back to the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mote_quic::coding::{Reader, Writer};
use mote_quic::frame::{Frame, Frames};
use mote_quic::packet::PacketType;

const PACKETS: [PacketType; 4] =
    [PacketType::Initial, PacketType::ZeroRtt, PacketType::Handshake, PacketType::OneRtt];

fuzz_target!(|data: &[u8]| {
    let mut buf = [0u8; 2048];
    for packet in PACKETS {
        let mut frames = Frames::new(data, packet);
        let mut count = 0usize;
        let mut last_position = 0;
        while let Some(item) = frames.next() {
            count += 1;
            assert!(count <= data.len().max(1), "more frames than payload bytes");
            let Ok(frame) = item else {
                assert!(frames.next().is_none(), "an error ends the iteration");
                break;
            };
            let consumed = frames.position() - last_position;
            last_position = frames.position();
            assert!(consumed > 0);

            if let Frame::Ack(ack) = &frame {
                let mut previous_smallest: Option<u64> = None;
                for (smallest, largest) in ack.ranges() {
                    assert!(smallest <= largest);
                    if let Some(prev) = previous_smallest {
                        assert!(largest + 2 <= prev, "ranges descend with a gap");
                    }
                    previous_smallest = Some(smallest);
                }
            }

            // Re-emit: exactly encoded_len bytes, never more than were parsed (input may use
            // non-minimal varints), and they parse back to the same frame.
            let len = frame.encoded_len();
            assert!(len <= consumed, "{frame:?}: emits {len} bytes, parsed from {consumed}");
            let Some(out) = buf.get_mut(..len) else { continue };
            let mut w = Writer::new(out);
            frame.emit(&mut w).expect("encoded_len bytes are enough");
            assert_eq!(w.position(), len);
            let mut r = Reader::new(&buf[..len]);
            assert_eq!(Frame::parse(&mut r), Ok(frame));
            assert!(r.is_empty());
        }
    }
});
