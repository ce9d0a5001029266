//! HTTP/3 frames (RFC 9114 §7): the incremental frame reader, fed arbitrary stream bytes in
//! arbitrary chunk sizes on each stream kind, never panics, never consumes more than it was
//! given, always makes progress or asks for more, and stops at the first error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mote_h3::frame::{FrameEvent, FrameReader, StreamKind};

const KINDS: [StreamKind; 3] = [StreamKind::Control, StreamKind::Request, StreamKind::Push];

fuzz_target!(|data: &[u8]| {
    // First byte: chunk size for feeding the stream (1..=64).
    let Some((&cfg, stream)) = data.split_first() else { return };
    let chunk = usize::from(cfg % 64) + 1;
    for kind in KINDS {
        let mut reader = FrameReader::new();
        // Unconsumed bytes are presented again with more appended, as a QUIC stream would.
        let mut available = 0usize;
        let mut start = 0usize;
        'feed: while available < stream.len() {
            available = (available + chunk).min(stream.len());
            loop {
                let input = &stream[start..available];
                match reader.read(input, kind, 4096) {
                    Err(_) => break 'feed,
                    Ok((consumed, event)) => {
                        assert!(consumed <= input.len());
                        start += consumed;
                        if let FrameEvent::Data(d) = event {
                            assert!(!d.is_empty());
                        }
                        if event == FrameEvent::NeedMore || start == available {
                            break;
                        }
                        assert!(consumed > 0 || matches!(event, FrameEvent::Frame(_)));
                    }
                }
            }
        }
    }
});
