//! `mote_quic::frame`: emitting frames into a payload and parsing them back through the
//! packet-type permission table.

use core::hint::black_box;

use mote_quic::frame::{Ack, EcnCounts, Frame, Frames, RangeOrder};
use mote_quic::packet::PacketType;
use mote_quic::{ConnectionId, VarInt};

use crate::Checks;

/// Emits a 1-RTT payload with the frames a device sends and receives most, parses it back,
/// and checks the permission table rejects STREAM in an Initial.
#[inline(never)]
pub fn exercise(c: &mut Checks) {
    let ranges: [(u64, u64); 3] = black_box([(100, 160), (90, 97), (10, 20)]);
    let ecn = EcnCounts {
        ect0: VarInt::from_u32(black_box(12)),
        ect1: VarInt::ZERO,
        ce: VarInt::from_u32(black_box(1)),
    };
    let Some(ack) = Ack::new(&ranges, RangeOrder::Descending, VarInt::from_u32(25), Some(ecn))
    else {
        return c.check(false);
    };
    let cid = ConnectionId::new(black_box(&[1, 2, 3, 4, 5, 6, 7, 8])).unwrap_or_default();
    let frames = [
        Frame::Ack(ack),
        Frame::Crypto { offset: VarInt::ZERO, data: black_box(b"\x01\x00\x00\xed\x03\x03") },
        Frame::Stream {
            stream_id: VarInt::from_u32(black_box(4)),
            offset: VarInt::from_u32(black_box(1000)),
            data: black_box(b"temperature=21.5"),
            fin: true,
            has_length: true,
        },
        Frame::MaxData { max: VarInt::from_u32(black_box(1 << 20)) },
        Frame::NewConnectionId {
            sequence: VarInt::from_u32(1),
            retire_prior_to: VarInt::ZERO,
            cid,
            reset_token: black_box([0x5a; 16]),
        },
        Frame::ConnectionClose { error_code: VarInt::ZERO, frame_type: VarInt::ZERO, reason: b"" },
        Frame::Ping,
        #[cfg(feature = "datagram")]
        Frame::Datagram { data: black_box(b"sensor"), has_length: true },
        Frame::Padding { len: black_box(8) },
    ];

    let mut buf = [0u8; 256];
    let mut w = mote_quic::coding::Writer::new(&mut buf);
    let mut expected_len = 0;
    for frame in &frames {
        c.ok(frame.emit(&mut w));
        expected_len += frame.encoded_len();
    }
    let len = w.position();
    c.check(len == expected_len);

    let payload = black_box(&buf[..len]);
    let mut parsed = Frames::new(payload, PacketType::OneRtt);
    for frame in &frames {
        let got = parsed.next();
        c.check(got == Some(Ok(*frame)));
        if let Some(Ok(Frame::Ack(ack))) = got {
            c.check(ack.ranges().eq(ranges.iter().copied()));
        }
    }
    c.check(parsed.next().is_none());
    c.check(Frames::new(payload, PacketType::Initial).any(|f| f.is_err()));
    black_box(&buf);
}
