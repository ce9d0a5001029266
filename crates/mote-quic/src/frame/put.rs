//! The send path's frame writer. Every frame a connection sends, except ACK (written from
//! the received ranges) and PADDING (zero bytes), has one shape (RFC 9000 §19): a type,
//! up to three varints, and a byte string — length-prefixed (CRYPTO, STREAM with LEN,
//! NEW_TOKEN, DATAGRAM with LEN, the reason phrase of CONNECTION_CLOSE) or raw
//! (PATH_CHALLENGE and PATH_RESPONSE data). One out-of-line writer for that shape replaces
//! building a [`super::Frame`] at each call site and matching it again in
//! [`super::Frame::emit`] (issue 8: the device image then holds no `Frame::emit`). The bytes
//! are the same (pinned by tests against `Frame::emit`).

use crate::coding::{VarInt, Writer};

/// Writes the frame `ty` with the varints `fields` and then `data` (after its varint length
/// when `prefixed`), whole or not at all; returns whether it was written. A field above
/// 2^62 − 1 is written as 2^62 − 1 (as the `Frame` builders of the send path did; no field
/// the connection sends gets there).
#[inline(never)]
pub(crate) fn put_frame(
    w: &mut Writer<'_>,
    ty: u64,
    fields: &[u64],
    data: &[u8],
    prefixed: bool,
) -> bool {
    let start = w.position();
    let mut ok = w.put_varint_u64(ty).is_ok();
    for &v in fields {
        ok = ok && w.put_varint(VarInt::new(v).unwrap_or(VarInt::MAX)).is_ok();
    }
    if prefixed {
        ok = ok && w.put_varint_u64(data.len() as u64).is_ok();
    }
    ok = ok && w.put_slice(data).is_ok();
    if !ok {
        w.rewind(start);
    }
    ok
}

/// RFC 9000 §19.8: a STREAM frame with its Length field; the Offset field only when the
/// offset is not 0 (the OFF bit says which), FIN in the type.
pub(crate) fn put_stream(w: &mut Writer<'_>, id: u64, offset: u64, data: &[u8], fin: bool) -> bool {
    use super::types::{STREAM, STREAM_FIN, STREAM_LEN, STREAM_OFF};
    let fields = [id, offset];
    let (off, n) = if offset != 0 { (STREAM_OFF, 2) } else { (0, 1) };
    let ty = STREAM | off | STREAM_LEN | if fin { STREAM_FIN } else { 0 };
    put_frame(w, ty, fields.get(..n).unwrap_or(&[]), data, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{types, Frame};

    fn via_frame(f: &Frame<'_>, room: usize) -> (bool, [u8; 64], usize) {
        let mut buf = [0xaa; 64];
        let mut w = Writer::new(&mut buf[..room]);
        let ok = f.emit_whole(&mut w);
        let n = w.position();
        (ok, buf, n)
    }

    fn via_put(room: usize, put: impl FnOnce(&mut Writer<'_>) -> bool) -> (bool, [u8; 64], usize) {
        let mut buf = [0xaa; 64];
        let mut w = Writer::new(&mut buf[..room]);
        let ok = put(&mut w);
        let n = w.position();
        (ok, buf, n)
    }

    fn vi(v: u64) -> VarInt {
        VarInt::new(v).unwrap_or(VarInt::MAX)
    }

    /// The writer's bytes are `Frame::emit`'s for every frame the send path writes, at
    /// every room from nothing to enough (whole or nothing, the rest untouched).
    #[test]
    fn same_bytes_as_frame_emit() {
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8];
        for room in 0..64 {
            for (id, offset, fin) in
                [(0, 0, false), (4, 0, true), (8, 63, false), (1 << 20, 1 << 40, true)]
            {
                let f = Frame::Stream {
                    stream_id: vi(id),
                    offset: vi(offset),
                    data: &data,
                    fin,
                    has_length: true,
                };
                let put = via_put(room, |w| put_stream(w, id, offset, &data, fin));
                assert_eq!(via_frame(&f, room), put, "stream {id} {offset} {fin} in {room}");
            }
            for offset in [0, 70, 1 << 30] {
                let f = Frame::Crypto { offset: vi(offset), data: &data };
                let put = via_put(room, |w| put_frame(w, types::CRYPTO, &[offset], &data, true));
                assert_eq!(via_frame(&f, room), put);
            }
            let f =
                Frame::ConnectionClose { error_code: vi(0x10a), frame_type: vi(6), reason: b"no" };
            let put =
                via_put(room, |w| put_frame(w, types::CONNECTION_CLOSE, &[0x10a, 6], b"no", true));
            assert_eq!(via_frame(&f, room), put);
            let f = Frame::ApplicationClose { error_code: vi(1 << 62), reason: &[] };
            let put = via_put(room, |w| {
                put_frame(w, types::CONNECTION_CLOSE_APP, &[u64::MAX], &[], true)
            });
            assert_eq!(via_frame(&f, room), put);
            let f = Frame::PathResponse { data: [9; 8] };
            let put = via_put(room, |w| put_frame(w, types::PATH_RESPONSE, &[], &[9; 8], false));
            assert_eq!(via_frame(&f, room), put);
            let f = Frame::RetireConnectionId { sequence: vi(300) };
            let put =
                via_put(room, |w| put_frame(w, types::RETIRE_CONNECTION_ID, &[300], &[], false));
            assert_eq!(via_frame(&f, room), put);
            for (f, ty) in
                [(Frame::Ping, types::PING), (Frame::HandshakeDone, types::HANDSHAKE_DONE)]
            {
                let put = via_put(room, |w| put_frame(w, ty, &[], &[], false));
                assert_eq!(via_frame(&f, room), put);
            }
            let f = Frame::NewToken { token: &data };
            let put = via_put(room, |w| put_frame(w, types::NEW_TOKEN, &[], &data, true));
            assert_eq!(via_frame(&f, room), put);
            #[cfg(feature = "datagram")]
            {
                let f = Frame::Datagram { data: &data, has_length: true };
                let put = via_put(room, |w| put_frame(w, types::DATAGRAM_LEN, &[], &data, true));
                assert_eq!(via_frame(&f, room), put);
            }
        }
    }
}
