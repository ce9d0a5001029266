//! `mote_quic::transport_params`: a client's parameters, encoded (with a GREASE parameter)
//! and decoded back as a server would.

use core::hint::black_box;

use mote_quic::coding::Writer;
use mote_quic::transport_params::{Side, TransportParameters, VersionInformation};
use mote_quic::{ConnectionId, VarInt, Version};

use crate::Checks;

/// Encodes typical client parameters, decodes them and validates the connection IDs.
#[inline(never)]
// Each parameter goes through `black_box` one by one, after the defaults.
#[allow(clippy::field_reassign_with_default)]
pub fn exercise(c: &mut Checks) {
    let scid: &[u8] = black_box(&[0xc1, 0x1e, 0x47, 0x00]);
    let mut params = TransportParameters::default();
    params.max_idle_timeout = VarInt::from_u32(black_box(30_000));
    params.max_udp_payload_size = VarInt::from_u32(black_box(1472));
    params.initial_max_data = VarInt::from_u32(black_box(64 * 1024));
    params.initial_max_stream_data_bidi_local = VarInt::from_u32(black_box(16 * 1024));
    params.initial_max_streams_bidi = VarInt::from_u32(black_box(4));
    params.active_connection_id_limit = VarInt::from_u32(black_box(4));
    params.initial_source_connection_id = ConnectionId::new(scid);
    params.version_information = Some(VersionInformation::new(Version::V1, Version::SUPPORTED));
    #[cfg(feature = "datagram")]
    {
        params.max_datagram_frame_size = VarInt::from_u32(black_box(1200));
    }

    let mut buf = [0u8; 128];
    let mut w = Writer::new(&mut buf);
    c.ok(params.encode(&mut w));
    c.ok(TransportParameters::encode_grease(&mut w, black_box(3)));
    let len = w.position();

    let decoded = TransportParameters::decode(black_box(&buf[..len]), Side::Client);
    c.check(decoded.as_ref() == Ok(&params));
    c.check(decoded.is_ok_and(|p| p.validate_client_cids(scid).is_ok()));
    // A client may not send a stateless reset token (RFC 9000 §18.2).
    c.check(TransportParameters::decode(black_box(&[0x02, 0x00]), Side::Client).is_err());
}
