//! Frame tests: RFC-format fixtures, value rules, the permission table through [`Frames`],
//! and property tests (round trip of every frame type, truncation, hostile payloads).

extern crate std;

use std::format;
use std::vec;
use std::vec::Vec;

use hex_literal::hex;
use proptest::collection::vec as pvec;
use proptest::option;
use proptest::prelude::*;

use super::*;
use crate::error::TransportErrorCode;

const PACKETS: [PacketType; 4] =
    [PacketType::Initial, PacketType::Handshake, PacketType::ZeroRtt, PacketType::OneRtt];

fn v(x: u64) -> VarInt {
    VarInt::new(x).unwrap()
}

fn parse_all(bytes: &[u8]) -> Result<Frame<'_>, WireError> {
    let mut r = Reader::new(bytes);
    let f = Frame::parse(&mut r)?;
    assert!(r.is_empty(), "{} bytes left after {f:?}", r.remaining());
    Ok(f)
}

fn emit_vec(f: &Frame<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; f.encoded_len()];
    let mut w = Writer::new(&mut buf);
    f.emit(&mut w).unwrap();
    assert_eq!(w.position(), buf.len());
    buf
}

fn collect(payload: &[u8], packet: PacketType) -> Vec<Result<Frame<'_>, WireError>> {
    Frames::new(payload, packet).collect()
}

// ---------------------------------------------------------------------------------------
// Fixtures, hand-encoded from the RFC 9000 §19 / RFC 9221 §4 layouts.

/// Byte-exact fixtures: each parses to the frame and the frame emits the same bytes.
#[test]
fn fixtures_round_trip() {
    let token: [u8; 16] = hex!("000102030405060708090a0b0c0d0e0f");
    let cases: Vec<(Vec<u8>, Frame<'static>)> = vec![
        (hex!("01").to_vec(), Frame::Ping),
        (hex!("1e").to_vec(), Frame::HandshakeDone),
        (hex!("000000").to_vec(), Frame::Padding { len: 3 }),
        // RESET_STREAM: stream 1, error 2, final size 3.
        (
            hex!("04 01 02 03").to_vec(),
            Frame::ResetStream { stream_id: v(1), error_code: v(2), final_size: v(3) },
        ),
        (hex!("05 01 02").to_vec(), Frame::StopSending { stream_id: v(1), error_code: v(2) }),
        (hex!("06 00 04 01020304").to_vec(), Frame::Crypto { offset: v(0), data: &[1, 2, 3, 4] }),
        (hex!("07 02 abcd").to_vec(), Frame::NewToken { token: &[0xab, 0xcd] }),
        // STREAM 0x0f: OFF|LEN|FIN, stream 4, offset 256 (0x4100), length 3, "abc".
        (
            hex!("0f 04 4100 03 616263").to_vec(),
            Frame::Stream {
                stream_id: v(4),
                offset: v(256),
                data: b"abc",
                fin: true,
                has_length: true,
            },
        ),
        // STREAM 0x08: no offset, no length: the data runs to the end.
        (
            hex!("08 04 616263").to_vec(),
            Frame::Stream {
                stream_id: v(4),
                offset: v(0),
                data: b"abc",
                fin: false,
                has_length: false,
            },
        ),
        (hex!("10 7bbd").to_vec(), Frame::MaxData { max: v(15_293) }),
        (hex!("11 00 25").to_vec(), Frame::MaxStreamData { stream_id: v(0), max: v(37) }),
        (hex!("12 0a").to_vec(), Frame::MaxStreams { dir: StreamDir::Bidi, max: v(10) }),
        (hex!("13 0a").to_vec(), Frame::MaxStreams { dir: StreamDir::Uni, max: v(10) }),
        (hex!("14 01").to_vec(), Frame::DataBlocked { limit: v(1) }),
        (hex!("15 04 01").to_vec(), Frame::StreamDataBlocked { stream_id: v(4), limit: v(1) }),
        (hex!("16 05").to_vec(), Frame::StreamsBlocked { dir: StreamDir::Bidi, limit: v(5) }),
        (hex!("17 05").to_vec(), Frame::StreamsBlocked { dir: StreamDir::Uni, limit: v(5) }),
        // NEW_CONNECTION_ID: sequence 2, retire prior to 1, 4-byte CID, reset token.
        (
            [&hex!("18 02 01 04 a1a2a3a4")[..], &token].concat(),
            Frame::NewConnectionId {
                sequence: v(2),
                retire_prior_to: v(1),
                cid: ConnectionId::new(&hex!("a1a2a3a4")).unwrap(),
                reset_token: token,
            },
        ),
        (hex!("19 07").to_vec(), Frame::RetireConnectionId { sequence: v(7) }),
        (
            hex!("1a 0102030405060708").to_vec(),
            Frame::PathChallenge { data: hex!("0102030405060708") },
        ),
        (
            hex!("1b 0102030405060708").to_vec(),
            Frame::PathResponse { data: hex!("0102030405060708") },
        ),
        // CONNECTION_CLOSE 0x1c: PROTOCOL_VIOLATION caused by a STREAM frame, "bad".
        (
            hex!("1c 0a 08 03 626164").to_vec(),
            Frame::ConnectionClose { error_code: v(0x0a), frame_type: v(0x08), reason: b"bad" },
        ),
        // CONNECTION_CLOSE 0x1d: application error 0x100, no reason.
        (
            hex!("1d 4100 00").to_vec(),
            Frame::ApplicationClose { error_code: v(0x100), reason: b"" },
        ),
        #[cfg(feature = "datagram")]
        (hex!("31 03 78797a").to_vec(), Frame::Datagram { data: b"xyz", has_length: true }),
        #[cfg(feature = "datagram")]
        (hex!("30 78797a").to_vec(), Frame::Datagram { data: b"xyz", has_length: false }),
    ];
    for (bytes, frame) in &cases {
        assert_eq!(parse_all(bytes).as_ref(), Ok(frame), "{bytes:02x?}");
        assert_eq!(frame.encoded_len(), bytes.len(), "{frame:?}");
        assert_eq!(&emit_vec(frame), bytes, "{frame:?}");
        assert_eq!(frame.frame_type(), u64::from(bytes[0]), "{frame:?}");
    }
}

/// RFC 9000 §19.3: Largest 100, delay 5, one extra range: First ACK Range 3 covers 97..=100,
/// Gap 1 skips 96 and 95, ACK Range Length 4 covers 90..=94.
#[test]
fn ack_fixture() {
    let bytes = hex!("02 4064 05 01 03 01 04");
    let Frame::Ack(ack) = parse_all(&bytes).unwrap() else { panic!("not an ACK") };
    assert_eq!(ack.largest(), 100);
    assert_eq!(ack.ack_delay(), v(5));
    assert_eq!(ack.ecn(), None);
    assert_eq!(ack.range_count(), 2);
    assert_eq!(ack.ranges().collect::<Vec<_>>(), [(97, 100), (90, 94)]);
    assert_eq!(ack.ranges().len(), 2);
    assert_eq!(ack.frame_type(), types::ACK);
    // The same ACK built from the caller's ranges, in either order, encodes identically.
    let desc = [(97, 100), (90, 94)];
    let asc = [(90, 94), (97, 100)];
    let a = Ack::new(&desc, RangeOrder::Descending, v(5), None).unwrap();
    let b = Ack::new(&asc, RangeOrder::Ascending, v(5), None).unwrap();
    assert_eq!(a, ack);
    assert_eq!(b, ack);
    assert_eq!(emit_vec(&Frame::Ack(a)), bytes);
    assert_eq!(emit_vec(&Frame::Ack(b)), bytes);
    assert_eq!(emit_vec(&Frame::Ack(ack)), bytes);
}

/// RFC 9000 §19.3.2: type 0x03 appends ECT0, ECT1 and ECN-CE counts.
#[test]
fn ack_ecn_fixture() {
    let bytes = hex!("03 0a 00 00 00 01 02 03");
    let Frame::Ack(ack) = parse_all(&bytes).unwrap() else { panic!("not an ACK") };
    assert_eq!(ack.ranges().collect::<Vec<_>>(), [(10, 10)]);
    assert_eq!(ack.ecn(), Some(EcnCounts { ect0: v(1), ect1: v(2), ce: v(3) }));
    assert_eq!(ack.frame_type(), types::ACK_ECN);
    assert_eq!(emit_vec(&Frame::Ack(ack)), bytes);
    // Without the counts it is truncated.
    assert_eq!(parse_all(&bytes[..5]), Err(WireError::Truncated));
}

/// Fields may use longer varint encodings than needed (RFC 9000 §16); only the frame type
/// must be minimal.
#[test]
fn non_minimal_fields_accepted() {
    assert_eq!(
        parse_all(&hex!("12 80000100")),
        Ok(Frame::MaxStreams { dir: StreamDir::Bidi, max: v(256) })
    );
    assert_eq!(
        parse_all(&hex!("0c 4004 c000000000000001 00")),
        Ok(Frame::Stream {
            stream_id: v(4),
            offset: v(1),
            data: &[0],
            fin: false,
            has_length: false
        })
    );
}

/// A received 0x0c with offset 0 is the same frame as a 0x08; it reports and re-emits as
/// the shorter form.
#[test]
fn stream_zero_offset_with_off_bit() {
    let f = parse_all(&hex!("0e 00 00 01 61")).unwrap();
    assert_eq!(
        f,
        Frame::Stream { stream_id: v(0), offset: v(0), data: b"a", fin: false, has_length: true }
    );
    assert_eq!(f.frame_type(), 0x0a);
    assert_eq!(emit_vec(&f), hex!("0a 00 01 61"));
}

/// PADDING runs coalesce; the next non-zero byte starts a new frame.
#[test]
fn padding_runs_coalesce() {
    let payload = hex!("00 00 00 01 00 1e 00 00");
    let frames: Vec<_> = collect(&payload, PacketType::OneRtt);
    assert_eq!(
        frames,
        [
            Ok(Frame::Padding { len: 3 }),
            Ok(Frame::Ping),
            Ok(Frame::Padding { len: 1 }),
            Ok(Frame::HandshakeDone),
            Ok(Frame::Padding { len: 2 }),
        ]
    );
    assert_eq!(Frame::Padding { len: 0 }.encoded_len(), 0);
    assert!(emit_vec(&Frame::Padding { len: 0 }).is_empty());
}

// ---------------------------------------------------------------------------------------
// Value rules.

fn assert_err(bytes: &[u8], err: WireError, code: TransportErrorCode) {
    let got = Frame::parse(&mut Reader::new(bytes));
    assert_eq!(got, Err(err), "{bytes:02x?}");
    assert_eq!(err.code(), code);
}

const FEE: TransportErrorCode = TransportErrorCode::FRAME_ENCODING_ERROR;
const PV: TransportErrorCode = TransportErrorCode::PROTOCOL_VIOLATION;

/// RFC 9000 §19.6, §19.8: offset + length must stay at or below 2^62 - 1.
#[test]
fn offset_plus_length_limit() {
    // 2^62 - 1 as an 8-byte varint.
    let max = hex!("ffffffffffffffff");
    // STREAM with OFF|LEN: offset 2^62-1 and one byte of data.
    assert_err(
        &[&hex!("0e 00")[..], &max, &hex!("01 61")].concat(),
        WireError::FrameLimit(0x0e),
        FEE,
    );
    // Zero bytes at offset 2^62-1 end exactly at the limit.
    assert!(parse_all(&[&hex!("0e 00")[..], &max, &hex!("00")].concat()).is_ok());
    // STREAM without LEN, data to the end.
    assert_err(&[&hex!("0d 00")[..], &max, b"a"].concat(), WireError::FrameLimit(0x0d), FEE);
    assert!(parse_all(&[&hex!("0d 00")[..], &max].concat()).is_ok());
    // CRYPTO.
    assert_err(&[&hex!("06")[..], &max, &hex!("01 61")].concat(), WireError::FrameLimit(0x06), FEE);
    assert!(parse_all(&[&hex!("06")[..], &max, &hex!("00")].concat()).is_ok());
    // One below the limit with one byte is fine.
    assert!(parse_all(&hex!("06 fffffffffffffffe 01 61")).is_ok());
}

/// RFC 9000 §19.11, §19.14: stream counts above 2^60 are a FRAME_ENCODING_ERROR.
#[test]
fn stream_count_limit() {
    for ty in [0x12u8, 0x13, 0x16, 0x17] {
        // 2^60 is allowed.
        let ok = [&[ty][..], &hex!("d000000000000000")].concat();
        let f = parse_all(&ok).unwrap();
        assert_eq!(f.frame_type(), u64::from(ty));
        // 2^60 + 1 is not.
        let bad = [&[ty][..], &hex!("d000000000000001")].concat();
        assert_err(&bad, WireError::FrameLimit(u64::from(ty)), FEE);
        // Nor is the largest varint.
        let bad = [&[ty][..], &hex!("ffffffffffffffff")].concat();
        assert_err(&bad, WireError::FrameLimit(u64::from(ty)), FEE);
    }
}

/// RFC 9000 §19.15: CID length 1..=20 and Retire Prior To <= Sequence Number.
#[test]
fn new_connection_id_rules() {
    let token = [0x55u8; 16];
    let frame = |seq: u8, retire: u8, len: u8, cid: &[u8]| {
        [&[0x18, seq, retire, len][..], cid, &token].concat()
    };
    assert_err(&frame(1, 0, 0, &[]), WireError::InvalidFrame(0x18), FEE);
    assert_err(&frame(1, 0, 21, &[7; 21]), WireError::InvalidFrame(0x18), FEE);
    assert_err(&frame(1, 0, 255, &[7; 255]), WireError::InvalidFrame(0x18), FEE);
    assert_err(&frame(1, 2, 4, &[7; 4]), WireError::InvalidFrame(0x18), FEE);
    assert!(parse_all(&frame(1, 1, 1, &[7])).is_ok());
    assert!(parse_all(&frame(0, 0, 20, &[7; 20])).is_ok());
    // A length past the end of the packet is truncation.
    assert_err(&hex!("18 01 00 08 0102"), WireError::Truncated, FEE);
}

/// RFC 9000 §19.7: an empty NEW_TOKEN is a FRAME_ENCODING_ERROR.
#[test]
fn new_token_rules() {
    assert_err(&hex!("07 00"), WireError::InvalidFrame(0x07), FEE);
    assert_err(&hex!("07 05 abcd"), WireError::Truncated, FEE);
}

/// Reason phrase and data lengths past the end of the payload.
#[test]
fn lengths_past_end() {
    assert_err(&hex!("1c 00 00 05 6162"), WireError::Truncated, FEE);
    assert_err(&hex!("1d 00 05 61"), WireError::Truncated, FEE);
    assert_err(&hex!("1c 00 00 ffffffffffffffff 61"), WireError::Truncated, FEE);
    assert_err(&hex!("06 00 05 61"), WireError::Truncated, FEE);
    assert_err(&hex!("0a 00 05 61"), WireError::Truncated, FEE);
    #[cfg(feature = "datagram")]
    assert_err(&hex!("31 05 61"), WireError::Truncated, FEE);
}

/// RFC 9000 §19.3.1: a range reaching below packet number 0 is a FRAME_ENCODING_ERROR;
/// reaching exactly 0 is fine.
#[test]
fn ack_range_underflow() {
    // First ACK Range larger than Largest Acknowledged.
    assert!(parse_all(&hex!("02 05 00 00 05")).is_ok());
    assert_err(&hex!("02 05 00 00 06"), WireError::InvalidFrame(0x02), FEE);
    // Largest 10, first range 0 (smallest 10). Gap 8 gives largest 0; Gap 9 goes below.
    let Frame::Ack(ack) = parse_all(&hex!("02 0a 00 01 00 08 00")).unwrap() else { panic!() };
    assert_eq!(ack.ranges().collect::<Vec<_>>(), [(10, 10), (0, 0)]);
    assert_err(&hex!("02 0a 00 01 00 09 00"), WireError::InvalidFrame(0x02), FEE);
    // Gap 0 gives largest 8; length 8 reaches 0, length 9 goes below.
    assert!(parse_all(&hex!("02 0a 00 01 00 00 08")).is_ok());
    assert_err(&hex!("03 0a 00 01 00 00 09 00 00 00"), WireError::InvalidFrame(0x03), FEE);
    // A huge gap must not wrap.
    assert_err(&hex!("02 0a 00 01 00 ffffffffffffffff 00"), WireError::InvalidFrame(0x02), FEE);
    // Nor the largest Gap and Length together (Gap + 2 + Length is checked as one sum).
    assert_err(
        &hex!("02 ffffffffffffffff 00 01 00 ffffffffffffffff ffffffffffffffff"),
        WireError::InvalidFrame(0x02),
        FEE,
    );
    // A range exactly down to 0 from the top: Largest 2^62 - 1, Gap 0, Length 2^62 - 3.
    let Frame::Ack(ack) =
        parse_all(&hex!("02 ffffffffffffffff 00 01 00 00 fffffffffffffffd")).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        ack.ranges().collect::<Vec<_>>(),
        [((1 << 62) - 1, (1 << 62) - 1), (0, (1 << 62) - 3)]
    );
}

/// A range count far beyond the bytes ends in Truncated after reading what is there.
#[test]
fn ack_huge_range_count() {
    assert_err(&hex!("02 4064 00 ffffffffffffffff 00 00 00 00 00"), WireError::Truncated, FEE);
    assert_err(&hex!("02 4064 00 bfffffff 00"), WireError::Truncated, FEE);
}

/// RFC 9000 §12.4: unknown frame types are a FRAME_ENCODING_ERROR.
#[test]
fn unknown_frame_types() {
    for bytes in [
        &hex!("1f")[..],
        &hex!("20"),
        &hex!("2f"),
        &hex!("32"),
        &hex!("3f"),
        &hex!("4021"),
        &hex!("80000100"),
        &hex!("c000000000000040"),
    ] {
        let ty = Reader::new(bytes).varint_u64().unwrap();
        assert_err(bytes, WireError::UnknownFrameType(ty), FEE);
        assert_eq!(WireError::UnknownFrameType(ty).frame_type(), Some(ty));
    }
    assert_err(&hex!("ffffffffffffffff"), WireError::UnknownFrameType((1 << 62) - 1), FEE);
    // A truncated frame type.
    assert_err(&hex!("40"), WireError::Truncated, FEE);
}

/// Without the `datagram` feature, DATAGRAM types are unknown.
#[cfg(not(feature = "datagram"))]
#[test]
fn datagram_unknown_without_feature() {
    assert_err(&hex!("30 61"), WireError::UnknownFrameType(0x30), FEE);
    assert_err(&hex!("31 01 61"), WireError::UnknownFrameType(0x31), FEE);
}

/// RFC 9000 §12.4: frame types MUST be minimally encoded; this crate treats a longer
/// encoding of a known type as PROTOCOL_VIOLATION.
#[test]
fn non_minimal_frame_type() {
    assert_err(&hex!("4001"), WireError::NonMinimalFrameType(0x01), PV);
    assert_err(&hex!("4000"), WireError::NonMinimalFrameType(0x00), PV);
    assert_err(&hex!("80000006 00 00"), WireError::NonMinimalFrameType(0x06), PV);
    assert_err(&hex!("c00000000000001e"), WireError::NonMinimalFrameType(0x1e), PV);
    // PADDING stops at a non-minimal PADDING type rather than swallowing it.
    assert_eq!(
        collect(&hex!("00 00 4000"), PacketType::Initial),
        [Ok(Frame::Padding { len: 2 }), Err(WireError::NonMinimalFrameType(0))]
    );
}

// ---------------------------------------------------------------------------------------
// The permission table through the iterator.

/// RFC 9000 §12.4: forbidden frames are a PROTOCOL_VIOLATION, reported before the body is
/// parsed (so a forbidden truncated frame is still "not permitted").
#[test]
fn forbidden_frames() {
    let cases: &[(&[u8], PacketType)] = &[
        (&hex!("08 00"), PacketType::Initial),
        (&hex!("0f"), PacketType::Handshake),
        (&hex!("1e"), PacketType::Handshake),
        (&hex!("1e"), PacketType::ZeroRtt),
        (&hex!("02 00 00 00 00"), PacketType::ZeroRtt),
        (&hex!("03"), PacketType::ZeroRtt),
        (&hex!("06 00 00"), PacketType::ZeroRtt),
        (&hex!("07 01 aa"), PacketType::Handshake),
        (&hex!("07 01 aa"), PacketType::ZeroRtt),
        (&hex!("1d 00 00"), PacketType::Initial),
        (&hex!("1d 00 00"), PacketType::Handshake),
        (&hex!("10 00"), PacketType::Initial),
        (&hex!("1b 0000000000000000"), PacketType::ZeroRtt),
        (&hex!("19 00"), PacketType::ZeroRtt),
        (&hex!("1a 0000000000000000"), PacketType::Handshake),
        (&hex!("30 00"), PacketType::Initial),
        (&hex!("31 00"), PacketType::Handshake),
    ];
    for (bytes, packet) in cases {
        let ty = Reader::new(bytes).varint_u64().unwrap();
        let frames = collect(bytes, *packet);
        let expected = if is_known(ty) {
            WireError::FrameNotPermitted(ty)
        } else {
            WireError::UnknownFrameType(ty)
        };
        assert_eq!(frames, [Err(expected)], "{bytes:02x?} in {packet:?}");
        if is_known(ty) {
            assert_eq!(expected.code(), PV);
        }
    }
}

/// Frames before a forbidden one come out; the error ends the iteration.
#[test]
fn error_ends_iteration() {
    let payload = hex!("01 0a 00 00 01");
    let mut it = Frames::new(&payload, PacketType::Initial);
    assert_eq!(it.next(), Some(Ok(Frame::Ping)));
    assert_eq!(it.position(), 1);
    assert_eq!(it.next(), Some(Err(WireError::FrameNotPermitted(0x0a))));
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
    // The same payload is fine in 1-RTT.
    assert_eq!(collect(&payload, PacketType::OneRtt).len(), 3);
}

/// RFC 9000 §12.4: a packet with no frames is a PROTOCOL_VIOLATION.
#[test]
fn empty_payload() {
    for packet in PACKETS {
        let mut it = Frames::new(&[], packet);
        assert_eq!(it.packet_type(), packet);
        assert_eq!(it.next(), Some(Err(WireError::EmptyPacket)));
        assert_eq!(it.next(), None);
        assert_eq!(WireError::EmptyPacket.code(), PV);
    }
}

/// Every frame type in every packet type: the iterator accepts exactly what `permitted`
/// allows, and `permitted` follows Table 3 (checked letter by letter in permission.rs).
#[test]
fn iterator_applies_table_to_every_type() {
    let token = [1u8; 16];
    let ranges = [(0u64, 0u64)];
    let mut samples = vec![
        Frame::Padding { len: 1 },
        Frame::Ping,
        Frame::Ack(Ack::new(&ranges, RangeOrder::Descending, v(0), None).unwrap()),
        Frame::Ack(
            Ack::new(&ranges, RangeOrder::Descending, v(0), Some(EcnCounts::default())).unwrap(),
        ),
        Frame::ResetStream { stream_id: v(0), error_code: v(0), final_size: v(0) },
        Frame::StopSending { stream_id: v(0), error_code: v(0) },
        Frame::Crypto { offset: v(0), data: b"x" },
        Frame::NewToken { token: b"t" },
        Frame::MaxData { max: v(1) },
        Frame::MaxStreamData { stream_id: v(0), max: v(1) },
        Frame::MaxStreams { dir: StreamDir::Bidi, max: v(1) },
        Frame::MaxStreams { dir: StreamDir::Uni, max: v(1) },
        Frame::DataBlocked { limit: v(1) },
        Frame::StreamDataBlocked { stream_id: v(0), limit: v(1) },
        Frame::StreamsBlocked { dir: StreamDir::Bidi, limit: v(1) },
        Frame::StreamsBlocked { dir: StreamDir::Uni, limit: v(1) },
        Frame::NewConnectionId {
            sequence: v(1),
            retire_prior_to: v(0),
            cid: ConnectionId::new(&[9; 8]).unwrap(),
            reset_token: token,
        },
        Frame::RetireConnectionId { sequence: v(0) },
        Frame::PathChallenge { data: [2; 8] },
        Frame::PathResponse { data: [2; 8] },
        Frame::ConnectionClose { error_code: v(0), frame_type: v(0), reason: b"" },
        Frame::ApplicationClose { error_code: v(0), reason: b"" },
        Frame::HandshakeDone,
        #[cfg(feature = "datagram")]
        Frame::Datagram { data: b"d", has_length: false },
        #[cfg(feature = "datagram")]
        Frame::Datagram { data: b"d", has_length: true },
    ];
    for bits in 0..8u64 {
        samples.push(Frame::Stream {
            stream_id: v(0),
            offset: v(bits & 4),
            data: b"s",
            fin: bits & 1 != 0,
            has_length: bits & 2 != 0,
        });
    }
    let mut seen = Vec::new();
    for f in &samples {
        let bytes = emit_vec(f);
        let ty = f.frame_type();
        assert_eq!(u64::from(bytes[0]), ty);
        seen.push(ty);
        for packet in PACKETS {
            let got = collect(&bytes, packet);
            if permitted(ty, packet) {
                assert_eq!(got, [Ok(*f)], "{f:?} in {packet:?}");
            } else {
                assert_eq!(got, [Err(WireError::FrameNotPermitted(ty))], "{f:?} in {packet:?}");
            }
        }
    }
    seen.sort_unstable();
    seen.dedup();
    let mut all: Vec<u64> = (0..=0x1e).collect();
    if cfg!(feature = "datagram") {
        all.extend([0x30, 0x31]);
    }
    assert_eq!(seen, all, "a sample for every frame type");
}

#[test]
fn ack_eliciting_and_probing_frames() {
    assert!(!Frame::Padding { len: 5 }.is_ack_eliciting());
    assert!(Frame::Padding { len: 5 }.is_probing());
    assert!(Frame::Ping.is_ack_eliciting());
    assert!(!Frame::Ping.is_probing());
    let ranges = [(1u64, 2u64)];
    assert!(!Frame::Ack(Ack::new(&ranges, RangeOrder::Ascending, v(0), None).unwrap())
        .is_ack_eliciting());
    assert!(!Frame::ApplicationClose { error_code: v(0), reason: b"" }.is_ack_eliciting());
    assert!(Frame::PathChallenge { data: [0; 8] }.is_probing());
    assert!(Frame::PathChallenge { data: [0; 8] }.is_ack_eliciting());
}

// ---------------------------------------------------------------------------------------
// Ack::new validation.

#[test]
fn ack_new_validation() {
    let d = RangeOrder::Descending;
    let a = RangeOrder::Ascending;
    assert!(Ack::new(&[], d, v(0), None).is_none());
    // smallest > largest.
    assert!(Ack::new(&[(5, 3)], d, v(0), None).is_none());
    assert!(Ack::new(&[(9, 9), (5, 3)], d, v(0), None).is_none());
    // Touching ranges cannot be encoded (a Gap is at least one missing packet).
    assert!(Ack::new(&[(5, 6), (3, 4)], d, v(0), None).is_none());
    assert!(Ack::new(&[(6, 7), (3, 4)], d, v(0), None).is_some());
    // Overlapping or out of order.
    assert!(Ack::new(&[(3, 6), (4, 8)], d, v(0), None).is_none());
    assert!(Ack::new(&[(1, 1), (5, 5)], d, v(0), None).is_none());
    assert!(Ack::new(&[(1, 1), (5, 5)], a, v(0), None).is_some());
    assert!(Ack::new(&[(5, 5), (1, 1)], a, v(0), None).is_none());
    // Largest must be a varint; the checked add must not wrap.
    assert!(Ack::new(&[(0, 1 << 62)], d, v(0), None).is_none());
    assert!(Ack::new(&[(0, (1 << 62) - 1)], d, v(0), None).is_some());
    assert!(Ack::new(&[(u64::MAX, u64::MAX), (0, u64::MAX - 1)], d, v(0), None).is_none());
    // A single range starting at 0.
    let r = [(0, 0)];
    let ack = Ack::new(&r, d, v(0), None).unwrap();
    assert_eq!(emit_vec(&Frame::Ack(ack)), hex!("02 00 00 00 00"));
}

// ---------------------------------------------------------------------------------------
// Property tests.

/// Owned description of a frame, so proptest can generate the borrowed data.
#[derive(Clone, Debug)]
enum Spec {
    Padding(usize),
    Ping,
    Ack {
        ranges: Vec<(u64, u64)>,
        order: RangeOrder,
        delay: VarInt,
        ecn: Option<EcnCounts>,
    },
    ResetStream(VarInt, VarInt, VarInt),
    StopSending(VarInt, VarInt),
    Crypto(VarInt, Vec<u8>),
    NewToken(Vec<u8>),
    Stream {
        id: VarInt,
        offset: VarInt,
        data: Vec<u8>,
        fin: bool,
        has_length: bool,
    },
    MaxData(VarInt),
    MaxStreamData(VarInt, VarInt),
    MaxStreams(StreamDir, VarInt),
    DataBlocked(VarInt),
    StreamDataBlocked(VarInt, VarInt),
    StreamsBlocked(StreamDir, VarInt),
    NewConnectionId {
        seq: VarInt,
        retire: VarInt,
        cid: Vec<u8>,
        token: [u8; 16],
    },
    RetireConnectionId(VarInt),
    PathChallenge([u8; 8]),
    PathResponse([u8; 8]),
    ConnectionClose(VarInt, VarInt, Vec<u8>),
    ApplicationClose(VarInt, Vec<u8>),
    HandshakeDone,
    #[cfg(feature = "datagram")]
    Datagram(Vec<u8>, bool),
}

impl Spec {
    fn frame(&self) -> Frame<'_> {
        match self {
            Spec::Padding(len) => Frame::Padding { len: *len },
            Spec::Ping => Frame::Ping,
            Spec::Ack { ranges, order, delay, ecn } => {
                Frame::Ack(Ack::new(ranges, *order, *delay, *ecn).expect("valid ranges"))
            }
            Spec::ResetStream(a, b, c) => {
                Frame::ResetStream { stream_id: *a, error_code: *b, final_size: *c }
            }
            Spec::StopSending(a, b) => Frame::StopSending { stream_id: *a, error_code: *b },
            Spec::Crypto(offset, data) => Frame::Crypto { offset: *offset, data },
            Spec::NewToken(token) => Frame::NewToken { token },
            Spec::Stream { id, offset, data, fin, has_length } => Frame::Stream {
                stream_id: *id,
                offset: *offset,
                data,
                fin: *fin,
                has_length: *has_length,
            },
            Spec::MaxData(a) => Frame::MaxData { max: *a },
            Spec::MaxStreamData(a, b) => Frame::MaxStreamData { stream_id: *a, max: *b },
            Spec::MaxStreams(dir, a) => Frame::MaxStreams { dir: *dir, max: *a },
            Spec::DataBlocked(a) => Frame::DataBlocked { limit: *a },
            Spec::StreamDataBlocked(a, b) => Frame::StreamDataBlocked { stream_id: *a, limit: *b },
            Spec::StreamsBlocked(dir, a) => Frame::StreamsBlocked { dir: *dir, limit: *a },
            Spec::NewConnectionId { seq, retire, cid, token } => Frame::NewConnectionId {
                sequence: *seq,
                retire_prior_to: *retire,
                cid: ConnectionId::new(cid).unwrap(),
                reset_token: *token,
            },
            Spec::RetireConnectionId(a) => Frame::RetireConnectionId { sequence: *a },
            Spec::PathChallenge(data) => Frame::PathChallenge { data: *data },
            Spec::PathResponse(data) => Frame::PathResponse { data: *data },
            Spec::ConnectionClose(a, b, reason) => {
                Frame::ConnectionClose { error_code: *a, frame_type: *b, reason }
            }
            Spec::ApplicationClose(a, reason) => Frame::ApplicationClose { error_code: *a, reason },
            Spec::HandshakeDone => Frame::HandshakeDone,
            #[cfg(feature = "datagram")]
            Spec::Datagram(data, has_length) => Frame::Datagram { data, has_length: *has_length },
        }
    }

    /// True if a strict prefix of the encoding can never parse: false for the frames that
    /// run to the end of the packet (and PADDING, whose prefix is shorter PADDING).
    fn self_delimiting(&self) -> bool {
        match self {
            Spec::Padding(_) => false,
            Spec::Stream { has_length, .. } => *has_length,
            #[cfg(feature = "datagram")]
            Spec::Datagram(_, has_length) => *has_length,
            _ => true,
        }
    }

    /// Gives a STREAM or DATAGRAM frame a Length field so another frame can follow.
    fn with_length(mut self) -> Self {
        match &mut self {
            Spec::Stream { has_length, .. } => *has_length = true,
            #[cfg(feature = "datagram")]
            Spec::Datagram(_, has_length) => *has_length = true,
            _ => {}
        }
        self
    }
}

/// Values of every varint size, up to 2^62 - 1.
fn varint() -> impl Strategy<Value = VarInt> {
    prop_oneof![
        0u64..64,
        64u64..16_384,
        16_384u64..(1 << 30),
        (1u64 << 30)..(1 << 62),
        Just((1u64 << 62) - 1)
    ]
    .prop_map(v)
}

/// Small and large differences for ACK ranges.
fn delta() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..4, 0u64..300, 0u64..(1 << 20), 0u64..(1 << 62)]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    pvec(any::<u8>(), 0..max)
}

fn dir() -> impl Strategy<Value = StreamDir> {
    prop_oneof![Just(StreamDir::Bidi), Just(StreamDir::Uni)]
}

/// An offset that leaves room for `len` bytes below 2^62.
fn fit_offset(offset: VarInt, len: usize) -> VarInt {
    v(offset.into_inner().min(VarInt::MAX.into_inner() - len as u64))
}

fn ack_spec() -> impl Strategy<Value = Spec> {
    (varint(), delta(), pvec((delta(), delta()), 0..24), any::<bool>(), varint()).prop_flat_map(
        |(largest, first, pairs, asc, delay)| {
            let largest = largest.into_inner();
            let mut smallest = largest.saturating_sub(first);
            let mut ranges = vec![(smallest, largest)];
            for (gap, len) in pairs {
                let Some(l) = smallest.checked_sub(gap).and_then(|x| x.checked_sub(2)) else {
                    break;
                };
                smallest = l.saturating_sub(len);
                ranges.push((smallest, l));
            }
            let order = if asc {
                ranges.reverse();
                RangeOrder::Ascending
            } else {
                RangeOrder::Descending
            };
            option::of((varint(), varint(), varint()).prop_map(|(ect0, ect1, ce)| EcnCounts {
                ect0,
                ect1,
                ce,
            }))
            .prop_map(move |ecn| Spec::Ack {
                ranges: ranges.clone(),
                order,
                delay,
                ecn,
            })
        },
    )
}

fn spec() -> impl Strategy<Value = Spec> {
    let common = prop_oneof![
        (1usize..64).prop_map(Spec::Padding),
        Just(Spec::Ping),
        ack_spec(),
        (varint(), varint(), varint()).prop_map(|(a, b, c)| Spec::ResetStream(a, b, c)),
        (varint(), varint()).prop_map(|(a, b)| Spec::StopSending(a, b)),
        (varint(), bytes(80)).prop_map(|(o, d)| Spec::Crypto(fit_offset(o, d.len()), d)),
        pvec(any::<u8>(), 1..80).prop_map(Spec::NewToken),
        (varint(), varint(), bytes(80), any::<bool>(), any::<bool>()).prop_map(
            |(id, o, data, fin, has_length)| Spec::Stream {
                id,
                offset: fit_offset(o, data.len()),
                data,
                fin,
                has_length,
            }
        ),
        varint().prop_map(Spec::MaxData),
        (varint(), varint()).prop_map(|(a, b)| Spec::MaxStreamData(a, b)),
        (dir(), 0u64..=MAX_STREAM_COUNT).prop_map(|(d, n)| Spec::MaxStreams(d, v(n))),
        varint().prop_map(Spec::DataBlocked),
        (varint(), varint()).prop_map(|(a, b)| Spec::StreamDataBlocked(a, b)),
        (dir(), 0u64..=MAX_STREAM_COUNT).prop_map(|(d, n)| Spec::StreamsBlocked(d, v(n))),
        (varint(), any::<u64>(), pvec(any::<u8>(), 1..=20), any::<[u8; 16]>()).prop_map(
            |(seq, r, cid, token)| {
                // Retire Prior To anywhere in 0..=seq (test code: division is fine here).
                let retire = v(r % (seq.into_inner() + 1));
                Spec::NewConnectionId { seq, retire, cid, token }
            }
        ),
        varint().prop_map(Spec::RetireConnectionId),
        any::<[u8; 8]>().prop_map(Spec::PathChallenge),
        any::<[u8; 8]>().prop_map(Spec::PathResponse),
        (varint(), varint(), bytes(40)).prop_map(|(a, b, r)| Spec::ConnectionClose(a, b, r)),
        (varint(), bytes(40)).prop_map(|(a, r)| Spec::ApplicationClose(a, r)),
        Just(Spec::HandshakeDone),
    ];
    #[cfg(feature = "datagram")]
    let common = prop_oneof![
        22 => common,
        1 => (bytes(80), any::<bool>()).prop_map(|(d, l)| Spec::Datagram(d, l)),
    ];
    common
}

/// Merges adjacent PADDING frames, as the parser coalesces them.
fn coalesce<'a>(frames: &[Frame<'a>]) -> Vec<Frame<'a>> {
    let mut out: Vec<Frame<'a>> = Vec::new();
    for f in frames {
        if let (Some(Frame::Padding { len: prev }), Frame::Padding { len }) = (out.last_mut(), f) {
            *prev += len;
        } else {
            out.push(*f);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every frame type: emit, parse, compare; `encoded_len` matches the bytes written; a
    /// buffer one byte short is refused; every strict prefix of a self-delimiting frame is
    /// an error (and no prefix panics); the iterator applies the permission table.
    #[test]
    fn round_trip(spec in spec()) {
        let f = spec.frame();
        let len = f.encoded_len();
        let mut buf = vec![0u8; len + 4];
        let mut w = Writer::new(&mut buf);
        f.emit(&mut w).unwrap();
        prop_assert_eq!(w.position(), len);
        let bytes = &buf[..len];

        let mut r = Reader::new(bytes);
        let parsed = Frame::parse(&mut r).unwrap();
        prop_assert_eq!(parsed, f);
        prop_assert!(r.is_empty());
        prop_assert_eq!(parsed.frame_type(), f.frame_type());
        prop_assert_eq!(parsed.encoded_len(), len);
        // Re-emitting the parsed frame gives the same bytes.
        prop_assert_eq!(emit_vec(&parsed), bytes.to_vec());

        let mut short = vec![0u8; len - 1];
        prop_assert_eq!(f.emit(&mut Writer::new(&mut short)), Err(BufferTooSmall));

        for cut in 0..len {
            let res = Frame::parse(&mut Reader::new(&bytes[..cut]));
            if spec.self_delimiting() {
                prop_assert!(res.is_err(), "prefix {} of {:?} parsed as {:?}", cut, f, res);
            }
            for packet in PACKETS {
                for item in Frames::new(&bytes[..cut], packet) {
                    let _ = item;
                }
            }
        }

        for packet in PACKETS {
            let got: Vec<_> = Frames::new(bytes, packet).collect();
            if permitted(f.frame_type(), packet) {
                prop_assert_eq!(got, vec![Ok(f)]);
            } else {
                prop_assert_eq!(got, vec![Err(WireError::FrameNotPermitted(f.frame_type()))]);
            }
        }
    }

    /// A whole 1-RTT payload of several frames comes back in order (PADDING runs merged).
    #[test]
    fn payload_round_trip(specs in pvec(spec(), 1..10)) {
        let last = specs.len() - 1;
        let specs: Vec<Spec> = specs
            .into_iter()
            .enumerate()
            .map(|(i, s)| if i == last { s } else { s.with_length() })
            .collect();
        let frames: Vec<Frame<'_>> = specs.iter().map(Spec::frame).collect();
        let mut payload = Vec::new();
        for f in &frames {
            payload.extend_from_slice(&emit_vec(f));
        }
        let got: Result<Vec<_>, _> = Frames::new(&payload, PacketType::OneRtt).collect();
        prop_assert_eq!(got.unwrap(), coalesce(&frames));
    }

    /// Random bytes in every packet type: no panic, the iteration ends, every parsed ACK's
    /// ranges are valid and descending.
    #[test]
    fn random_payload_never_panics(
        head in prop_oneof![0u8..0x20, 0x30u8..0x32, any::<u8>()],
        tail in prop_oneof![pvec(any::<u8>(), 0..300), pvec(0u8..4, 0..64)],
    ) {
        let payload: Vec<u8> = core::iter::once(head).chain(tail).collect();
        for input in [&payload[..], &payload[1..]] {
            for packet in PACKETS {
                check_hostile(input, packet)?;
            }
        }
    }

    /// A valid payload with one byte changed: no panic, the iteration ends.
    #[test]
    fn mutated_payload_never_panics(
        specs in pvec(spec(), 1..6),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let frames: Vec<Frame<'_>> = specs.iter().map(Spec::frame).collect();
        let mut payload = Vec::new();
        for f in &frames {
            payload.extend_from_slice(&emit_vec(f));
        }
        if !payload.is_empty() {
            let i = at.index(payload.len());
            payload[i] = byte;
        }
        for packet in PACKETS {
            check_hostile(&payload, packet)?;
        }
    }
}

/// Walks `payload` as hostile input and checks the iterator's guarantees.
fn check_hostile(payload: &[u8], packet: PacketType) -> Result<(), TestCaseError> {
    let mut n = 0usize;
    let mut it = Frames::new(payload, packet);
    let mut last_pos = 0;
    while let Some(item) = it.next() {
        n += 1;
        prop_assert!(n <= payload.len() + 1, "more frames than bytes");
        match item {
            Ok(f) => {
                prop_assert!(it.position() > last_pos, "no progress");
                last_pos = it.position();
                prop_assert!(permitted(f.frame_type(), packet));
                // Re-encoding a parsed frame never panics and writes what it announces.
                let _ = emit_vec(&f);
                if let Frame::Ack(ack) = f {
                    let mut count = 0usize;
                    let mut prev: Option<(u64, u64)> = None;
                    for (s, l) in ack.ranges() {
                        prop_assert!(s <= l);
                        if let Some((ps, _)) = prev {
                            prop_assert!(l + 2 <= ps, "ranges not descending");
                        } else {
                            prop_assert_eq!(l, ack.largest());
                        }
                        prev = Some((s, l));
                        count += 1;
                    }
                    prop_assert_eq!(count, ack.range_count());
                }
            }
            Err(e) => {
                let code = e.code();
                prop_assert!(code == FEE || code == PV, "{:?}", e);
            }
        }
    }
    prop_assert!(it.next().is_none());
    Ok(())
}

/// The frame types a device connection reads through [`read_fields`] but the general
/// parser reads with their own functions.
const FIELD_TYPES: [u64; 8] = [
    types::CRYPTO,
    types::NEW_TOKEN,
    types::NEW_CONNECTION_ID,
    types::RETIRE_CONNECTION_ID,
    types::PATH_CHALLENGE,
    types::PATH_RESPONSE,
    types::CONNECTION_CLOSE,
    types::CONNECTION_CLOSE_APP,
];

/// [`read_fields`] agrees with [`Frame::parse_body`] on a body of type `ty`: the same
/// error, or the same fields and the same bytes consumed.
fn fields_agree(ty: u64, body: &[u8]) -> Result<(), TestCaseError> {
    let (mut a, mut b) = (Reader::new(body), Reader::new(body));
    let (fields, frame) = (read_fields(ty, &mut a), Frame::parse_body(ty, &mut b));
    let (got, frame) = match (fields, frame) {
        (Err(x), Err(y)) => {
            prop_assert_eq!(x, y, "type {:#x}, body {:02x?}", ty, body);
            return Ok(());
        }
        (Ok(got), Ok(frame)) => (got, frame),
        (x, y) => return Err(TestCaseError::fail(format!("{ty:#x} {body:02x?}: {x:?} vs {y:?}"))),
    };
    prop_assert_eq!(a.position(), b.position());
    let z = VarInt::ZERO;
    let ncid: Vec<u8>;
    let want: ([VarInt; 3], &[u8]) = match frame {
        Frame::Crypto { offset, data } => ([z, offset, z], data),
        Frame::NewToken { token } => ([z; 3], token),
        Frame::NewConnectionId { sequence, retire_prior_to, cid, reset_token } => {
            ncid = [&cid[..], &reset_token].concat();
            ([sequence, retire_prior_to, z], &ncid)
        }
        Frame::RetireConnectionId { sequence } => ([sequence, z, z], &[]),
        Frame::PathChallenge { ref data } | Frame::PathResponse { ref data } => ([z; 3], data),
        Frame::ConnectionClose { error_code, frame_type, reason } => {
            ([error_code, frame_type, z], reason)
        }
        Frame::ApplicationClose { error_code, reason } => ([error_code, z, z], reason),
        other => return Err(TestCaseError::fail(format!("{ty:#x}: {other:?}"))),
    };
    prop_assert_eq!(got, want);
    Ok(())
}

/// RFC 9000 §19.6, §19.7, §19.15–§19.19: the device's one body parser ([`read_fields`])
/// keeps the general parser's rules on the bodies it took over (fixtures of each rule).
#[test]
fn read_fields_matches_parse_body() {
    let token = [0x55u8; 16];
    let bodies: [&[u8]; 14] = [
        &hex!("00 03 616263"),
        // CRYPTO ending past 2^62 - 1.
        &hex!("bfffffffffffffff 02 6162"),
        &hex!("00"),
        &hex!("02 abcd"),
        &[&hex!("01 00 04 01020304")[..], &token].concat(),
        &[&hex!("01 02 04 01020304")[..], &token].concat(),
        &[&hex!("01 00 15")[..], &[7; 21], &token].concat(),
        &[&hex!("00 00 14")[..], &[7; 20], &token].concat(),
        &hex!("01 00 04 01020304 0506"),
        &hex!("4005"),
        &hex!("0102030405060708 09"),
        &hex!("01020304050607"),
        &hex!("0a 06 02 6869"),
        &hex!("0a 06 05 6869"),
    ];
    for ty in FIELD_TYPES {
        for body in bodies {
            fields_agree(ty, body).unwrap();
        }
    }
    // Types it does not read.
    for ty in [types::PADDING, types::PING, types::ACK, types::HANDSHAKE_DONE, 0x1f, 0x30, 1 << 40]
    {
        assert_eq!(
            read_fields(ty, &mut Reader::new(&[0; 8])),
            Err(WireError::UnknownFrameType(ty))
        );
    }
}

proptest! {
    /// [`fields_agree`] on random bodies and on valid frames' bodies (one byte changed).
    #[test]
    fn read_fields_agrees(
        which in 0..FIELD_TYPES.len(),
        body in prop_oneof![pvec(any::<u8>(), 0..64), pvec(0u8..4, 0..40)],
        spec in spec(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        fields_agree(FIELD_TYPES[which], &body)?;
        let f = spec.frame();
        let mut bytes = emit_vec(&f);
        let ty = f.frame_type();
        if FIELD_TYPES.contains(&ty) {
            // The type is one byte (every known type is below 64).
            fields_agree(ty, &bytes[1..])?;
            let i = at.index(bytes.len());
            bytes[i] = byte;
            fields_agree(ty, &bytes[1..])?;
        }
    }
}
