//! `mote_quic::packet`: headers, Initial keys and packet protection, Retry integrity —
//! a client Initial built, protected, parsed and unprotected as a server would, and the
//! RFC 9001 Appendix A packets received.

use core::hint::black_box;

use mote_crypto::CryptoProvider;
use mote_quic::coding::Writer;
use mote_quic::frame::{Frame, Frames};
use mote_quic::packet::{self, Header, LongHeader, LongType, PacketType, TAG_LEN};
use mote_quic::{VarInt, Version};

use crate::Checks;

/// RFC 9001 A.1: the client's Destination Connection ID.
const DCID: [u8; 8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];
/// RFC 9000 §14.1: a client pads datagrams carrying Initial packets to 1200 bytes.
const INITIAL_LEN: usize = 1200;

/// RFC 9001 A.3: the server's Initial (an ACK and the ServerHello's CRYPTO frame).
const SERVER_INITIAL: [u8; 135] = [
    0xcf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x08, 0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5, 0x00,
    0x40, 0x75, 0xc0, 0xd9, 0x5a, 0x48, 0x2c, 0xd0, 0x99, 0x1c, 0xd2, 0x5b, 0x0a, 0xac, 0x40, 0x6a,
    0x58, 0x16, 0xb6, 0x39, 0x41, 0x00, 0xf3, 0x7a, 0x1c, 0x69, 0x79, 0x75, 0x54, 0x78, 0x0b, 0xb3,
    0x8c, 0xc5, 0xa9, 0x9f, 0x5e, 0xde, 0x4c, 0xf7, 0x3c, 0x3e, 0xc2, 0x49, 0x3a, 0x18, 0x39, 0xb3,
    0xdb, 0xcb, 0xa3, 0xf6, 0xea, 0x46, 0xc5, 0xb7, 0x68, 0x4d, 0xf3, 0x54, 0x8e, 0x7d, 0xde, 0xb9,
    0xc3, 0xbf, 0x9c, 0x73, 0xcc, 0x3f, 0x3b, 0xde, 0xd7, 0x4b, 0x56, 0x2b, 0xfb, 0x19, 0xfb, 0x84,
    0x02, 0x2f, 0x8e, 0xf4, 0xcd, 0xd9, 0x37, 0x95, 0xd7, 0x7d, 0x06, 0xed, 0xbb, 0x7a, 0xaf, 0x2f,
    0x58, 0x89, 0x18, 0x50, 0xab, 0xbd, 0xca, 0x3d, 0x20, 0x39, 0x8c, 0x27, 0x64, 0x56, 0xcb, 0xc4,
    0x21, 0x58, 0x40, 0x7d, 0xd0, 0x74, 0xee,
];
/// Its plaintext length: ACK (6 bytes) + CRYPTO carrying a 90-byte ServerHello (93 bytes).
const SERVER_PAYLOAD_LEN: usize = 99;

/// RFC 9001 A.4: a Retry for the client of A.1.
const RETRY: [u8; 36] = [
    0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x08, 0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5, 0x74,
    0x6f, 0x6b, 0x65, 0x6e, 0x04, 0xa2, 0x65, 0xba, 0x2e, 0xff, 0x4d, 0x82, 0x90, 0x58, 0xfb, 0x3f,
    0x0f, 0x24, 0x96, 0xba,
];

/// RFC 9001 A.5: a 1-RTT PING protected with ChaCha20-Poly1305, and its traffic secret.
#[cfg(feature = "chacha20")]
const CHACHA_PACKET: [u8; 21] = [
    0x4c, 0xfe, 0x41, 0x89, 0x65, 0x5e, 0x5c, 0xd5, 0x5c, 0x41, 0xf6, 0x90, 0x80, 0x57, 0x5d, 0x79,
    0x99, 0xc2, 0x5a, 0x5b, 0xfb,
];
#[cfg(feature = "chacha20")]
const CHACHA_SECRET: [u8; 32] = [
    0x9a, 0xc3, 0x12, 0xa7, 0xf8, 0x77, 0x46, 0x8e, 0xbe, 0x69, 0x42, 0x27, 0x48, 0xad, 0x00, 0xa1,
    0x54, 0x43, 0xf1, 0x82, 0x03, 0xa0, 0x7d, 0x60, 0x60, 0xf6, 0x88, 0xf3, 0x0f, 0x21, 0x63, 0x2b,
];

/// Runs the packet checks against provider `p`.
#[inline(never)]
pub fn exercise<P: CryptoProvider>(p: &P, c: &mut Checks) {
    client_initial_round_trip(p, c);
    receive_server_initial(p, c);
    let retry = packet::verify_retry(p, Version::V1, black_box(&DCID), &RETRY);
    c.check(retry.is_ok());
    #[cfg(feature = "chacha20")]
    receive_chacha_short_header(p, c);
}

/// Builds and protects a padded client Initial, then parses and unprotects it as a server.
fn client_initial_round_trip<P: CryptoProvider>(p: &P, c: &mut Checks) {
    let dcid: &[u8] = black_box(&DCID);
    let hello: &[u8] = black_box(b"\x01\x00\x00\xed\x03\x03 client hello stand-in");
    let Some(keys) = c.ok(packet::initial_keys(p, Version::V1, dcid)) else { return };

    let mut buf = [0u8; INITIAL_LEN];
    let mut w = Writer::new(&mut buf);
    let header =
        LongHeader { ty: LongType::Initial, version: Version::V1, dcid, scid: &[], token: &[] };
    let Some(offsets) = c.ok(header.emit(&mut w, black_box(2), 4)) else { return };
    c.ok(Frame::Crypto { offset: VarInt::ZERO, data: hello }.emit(&mut w));
    let padding = w.remaining().saturating_sub(TAG_LEN);
    c.ok(Frame::Padding { len: padding }.emit(&mut w));
    c.ok(w.reserve(TAG_LEN));
    c.check(w.position() == INITIAL_LEN);
    c.ok(offsets.set_length(&mut buf, INITIAL_LEN));
    c.ok(keys.client.protect(&mut buf, offsets.pn_offset, 2));

    // The server side.
    let datagram = black_box(&mut buf);
    let Some(parsed) = c.ok(packet::parse(datagram, 8, false)) else { return };
    c.check(parsed.len == INITIAL_LEN && parsed.pn_offset == Some(offsets.pn_offset));
    let Header::Long(h) = parsed.header else { return c.check(false) };
    let (Some(pn_offset), Some(server)) =
        (parsed.pn_offset, c.ok(packet::initial_keys(p, h.version, h.dcid)))
    else {
        return;
    };
    let Some(u) = c.ok(server.client.unprotect(datagram, pn_offset, None)) else { return };
    c.check(u.pn == 2);
    let mut frames = Frames::new(&datagram[u.payload_range()], PacketType::Initial);
    c.check(frames.next() == Some(Ok(Frame::Crypto { offset: VarInt::ZERO, data: hello })));
    c.check(frames.next() == Some(Ok(Frame::Padding { len: padding })));
    c.check(frames.next().is_none());
}

/// Receives RFC 9001's server Initial as the client.
fn receive_server_initial<P: CryptoProvider>(p: &P, c: &mut Checks) {
    let mut datagram = black_box(SERVER_INITIAL);
    let Some(parsed) = c.ok(packet::parse(&datagram, 0, false)) else { return };
    let (Some(pn_offset), Some(keys)) =
        (parsed.pn_offset, c.ok(packet::initial_keys(p, Version::V1, black_box(&DCID))))
    else {
        return c.check(false);
    };
    let Some(u) = c.ok(keys.server.unprotect(&mut datagram, pn_offset, None)) else { return };
    c.check(u.pn == 1 && u.payload_len == SERVER_PAYLOAD_LEN);
    let frames = Frames::new(&datagram[u.payload_range()], PacketType::Initial);
    let mut kinds = [0u64; 2];
    let mut n = 0;
    for frame in frames {
        match frame {
            Ok(f) if n < kinds.len() => {
                kinds[n] = f.frame_type();
                n += 1;
            }
            _ => return c.check(false),
        }
    }
    // ACK, then CRYPTO.
    c.check(n == 2 && kinds == [0x02, 0x06]);
}

/// Receives RFC 9001 A.5's ChaCha20-Poly1305 short-header PING.
#[cfg(feature = "chacha20")]
fn receive_chacha_short_header<P: CryptoProvider>(p: &P, c: &mut Checks) {
    use mote_crypto::AeadAlgorithm;
    use mote_quic::packet::PacketKeys;
    let secret = black_box(&CHACHA_SECRET);
    let keys = PacketKeys::from_secret(p, Version::V1, AeadAlgorithm::ChaCha20Poly1305, secret);
    let Some(keys) = c.ok(keys) else { return };
    let mut datagram = black_box(CHACHA_PACKET);
    let Some(parsed) = c.ok(packet::parse(&datagram, 0, false)) else { return };
    let Some(pn_offset) = parsed.pn_offset else { return c.check(false) };
    let u = keys.unprotect(&mut datagram, pn_offset, Some(black_box(654_360_563)));
    let Some(u) = c.ok(u) else { return };
    c.check(u.pn == 654_360_564 && datagram[u.payload_range()] == [0x01]);
}
