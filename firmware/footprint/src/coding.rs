//! `mote_quic::coding`: varints, [`Reader`] and [`Writer`].

use core::hint::black_box;

use mote_quic::coding::{encode_varint_sized, Reader, Writer};
use mote_quic::VarInt;

use crate::Checks;

/// RFC 9000 Appendix A.1's sample varints (8-, 4-, 2- and 1-byte forms, then the
/// non-minimal two-byte encoding of 37 that a receiver must accept).
const VARINTS: [u8; 17] = [
    0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c, // 151288809941952652
    0x9d, 0x7f, 0x3e, 0x7d, // 494878333
    0x7b, 0xbd, // 15293
    0x25, // 37
    0x40, 0x25, // 37
];
const VALUES: [u64; 5] = [151_288_809_941_952_652, 494_878_333, 15_293, 37, 37];

/// Parses and re-emits varints and fixed-width fields.
#[inline(never)]
pub fn exercise(c: &mut Checks) {
    // Parse.
    let input: &[u8] = black_box(&VARINTS);
    let mut r = Reader::new(input);
    let mut values = [0u64; 5];
    for v in &mut values {
        *v = c.ok(r.varint_u64()).unwrap_or(u64::MAX);
    }
    c.check(values == VALUES && r.is_empty());
    c.check(r.varint().is_err());

    // Emit: shortest encodings reproduce the first four byte-exact.
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    for v in &values[..4] {
        c.ok(w.put_varint_u64(black_box(*v)));
    }
    c.check(w.written() == &VARINTS[..15]);

    // A length-prefixed field with a reserved two-byte length, patched afterwards, then
    // fixed-width integers.
    let payload: &[u8] = black_box(b"mote");
    let at = c.ok(w.reserve(2)).unwrap_or(0);
    c.ok(w.put_slice(payload));
    c.ok(w.put_u16(black_box(0xabcd)));
    c.ok(w.put_u32(black_box(0x0102_0304)));
    let len = VarInt::from(payload.len() as u8);
    let patched = encode_varint_sized(len, 2, &mut w.written_mut()[at..]);
    c.check(patched == Some(2));
    let end = w.position();

    let mut r = Reader::new(&buf[15..end]);
    c.check(r.varint_prefixed() == Ok(&b"mote"[..]));
    c.check(r.u16() == Ok(0xabcd) && r.u32() == Ok(0x0102_0304) && r.is_empty());
    black_box(&buf);
}
