//! A client-only build's transport-parameter encoding (issue 8). Such a build encodes two
//! things: its own parameters, once per connection, and the server's parameters a ticket
//! remembers for 0-RTT (RFC 9000 §7.4.1). Neither needs the general encoder
//! ([`TransportParameters::encode`], a branch per parameter of either side):
//! - [`encode_client`] writes the client's parameters straight from its configuration, the
//!   same bytes as the general encoder given what the constructor would put in the struct;
//! - the remembered ones are re-encoded from the server's bytes in shortest form
//!   ([`crate::transport_params::remember_shortest`], `connection/tls.rs`).
//!
//! Server builds keep the general encoder for both (`connection/init.rs`, `connection/tls.rs`);
//! the tests below pin these to it in every build.
#![cfg_attr(any(feature = "server", not(feature = "resumption")), allow(dead_code))]

use super::cids::REMOTE_CIDS;
use super::config::ConnectionConfig;
use crate::cid::ConnectionId;
use crate::coding::{BufferTooSmall, VarInt, Writer};
use crate::transport_params::TransportParameters as Tp;
use crate::transport_params::{id, put_bytes_param, put_param, put_varint_param};
use crate::version::Version;

/// RFC 9000 §18.2: the client's transport parameters, from `config` with the stream counts
/// capped to `slots` and the stream windows to `recv_buf` (what the stream table enforces),
/// `scid` as initial_source_connection_id and RFC 9368 §3's version_information (the
/// version in use, after `compatible` when there is one). Parameters at their defaults are
/// left out, and no server-only parameter is written ("A client MUST NOT include any
/// server-only transport parameter"). Returns the length written into `out`.
pub(crate) fn encode_client(
    config: &ConnectionConfig,
    slots: usize,
    recv_buf: usize,
    scid: &ConnectionId,
    compatible: Option<Version>,
    out: &mut [u8],
) -> Result<usize, BufferTooSmall> {
    let mut w = Writer::new(out);
    let s = config.streams.for_slots(slots);
    let b = recv_buf as u64;
    // The general encoder's order: the integer parameters by ID, each with its default
    // (ack_delay_exponent stays at its default, 3, so it is never written).
    const INTS: [(u8, u16); 9] = [
        (id::MAX_IDLE_TIMEOUT as u8, 0),
        (id::MAX_UDP_PAYLOAD_SIZE as u8, Tp::DEFAULT_MAX_UDP_PAYLOAD_SIZE as u16),
        (id::INITIAL_MAX_DATA as u8, 0),
        (id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL as u8, 0),
        (id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE as u8, 0),
        (id::INITIAL_MAX_STREAM_DATA_UNI as u8, 0),
        (id::INITIAL_MAX_STREAMS_BIDI as u8, 0),
        (id::INITIAL_MAX_STREAMS_UNI as u8, 0),
        (id::MAX_ACK_DELAY as u8, Tp::DEFAULT_MAX_ACK_DELAY),
    ];
    let values = [
        config.local_idle_timeout_ms().into(),
        config.max_udp_payload_size.into(),
        s.max_data,
        s.max_stream_data_bidi_local.min(b),
        s.max_stream_data_bidi_remote.min(b),
        s.max_stream_data_uni.min(b),
        s.max_streams_bidi,
        s.max_streams_uni,
        config.max_ack_delay_ms.min((1 << 14) - 1).into(),
    ];
    let w = &mut w;
    for (&(param, default), &v) in INTS.iter().zip(&values) {
        put_int(w, param.into(), v, default.into())?;
    }
    // RFC 9000 §18.2: without migration support, ask the peer not to migrate.
    if !cfg!(feature = "migration") {
        put_param(w, id::DISABLE_ACTIVE_MIGRATION, 0)?;
    }
    let limit = Tp::DEFAULT_ACTIVE_CONNECTION_ID_LIMIT as u32;
    put_int(w, id::ACTIVE_CONNECTION_ID_LIMIT, REMOTE_CIDS as u64, limit)?;
    put_bytes_param(w, id::INITIAL_SOURCE_CONNECTION_ID, scid)?;
    // RFC 9368 §3, Figure 1: Chosen Version, then the Available Versions (the compatible
    // version first, as our preference).
    let version = config.version;
    let n = if compatible.is_some() { 2 } else { 1 };
    put_param(w, id::VERSION_INFORMATION, 4 + 4 * n)?;
    w.put_u32(version.0)?;
    if let Some(c) = compatible {
        w.put_u32(c.0)?;
    }
    w.put_u32(version.0)?;
    // RFC 9221 §3: offer DATAGRAM frames up to the configured size.
    #[cfg(feature = "datagram")]
    put_int(w, id::MAX_DATAGRAM_FRAME_SIZE, config.max_datagram_frame_size.into(), 0)?;
    Ok(w.position())
}

/// RFC 9000 §18.2: an integer parameter (ID below 64) unless it is at its `default`. Out of
/// line: one call per parameter is smaller than the general helper's 64-bit arguments
/// inlined at each. (Also the device's remembered parameters, `device::peer_params`.)
#[inline(never)]
pub(crate) fn put_int(
    w: &mut Writer<'_>,
    param: u64,
    v: u64,
    default: u32,
) -> Result<(), BufferTooSmall> {
    put_varint_param(w, param, VarInt::new(v).unwrap_or(VarInt::MAX), default.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamConfig;
    use crate::transport_params::{TransportParameters, VersionInformation};
    use std::vec;
    use std::vec::Vec;

    /// What `Connection::init`'s general path (`encode_local_tp`) encodes for a client
    /// (assigned field by field, as there).
    #[allow(clippy::field_reassign_with_default)]
    fn general(
        config: &ConnectionConfig,
        slots: usize,
        recv_buf: usize,
        scid: &ConnectionId,
        compatible: Option<Version>,
    ) -> Vec<u8> {
        let version = config.version;
        let mut tp = TransportParameters::default();
        tp.max_idle_timeout = VarInt::from_u32(config.local_idle_timeout_ms());
        tp.max_udp_payload_size = VarInt::from(config.max_udp_payload_size);
        config.streams.for_slots(slots).apply_to(&mut tp, recv_buf);
        tp.max_ack_delay = config.max_ack_delay_ms.min((1 << 14) - 1);
        tp.disable_active_migration = !cfg!(feature = "migration");
        tp.active_connection_id_limit = VarInt::from_u32(REMOTE_CIDS as u32);
        tp.initial_source_connection_id = Some(*scid);
        tp.version_information = Some(match compatible {
            Some(c) => VersionInformation::new(version, &[c, version]),
            None => VersionInformation::new(version, &[version]),
        });
        #[cfg(feature = "datagram")]
        {
            tp.max_datagram_frame_size = VarInt::from(config.max_datagram_frame_size);
        }
        let mut buf = [0u8; 256];
        let mut w = Writer::new(&mut buf);
        tp.encode(&mut w).unwrap();
        w.written().to_vec()
    }

    #[test]
    fn client_parameters_are_the_general_encoders_bytes() {
        let scids = [ConnectionId::new(&[]).unwrap(), ConnectionId::new(&[7; 8]).unwrap()];
        let mut configs = vec![ConnectionConfig::device(), ConnectionConfig::server()];
        let mut c = ConnectionConfig::device();
        c.idle_timeout_ms = 0;
        c.max_udp_payload_size = 65527;
        c.max_ack_delay_ms = 40_000;
        c.streams = StreamConfig {
            max_data: 1 << 40,
            max_stream_data_bidi_local: 0,
            max_stream_data_bidi_remote: 70_000,
            max_stream_data_uni: 1 << 20,
            max_streams_bidi: 100,
            max_streams_uni: 3,
        };
        #[cfg(feature = "datagram")]
        {
            c.max_datagram_frame_size = 1200;
        }
        configs.push(c);
        for config in &configs {
            for (slots, recv_buf) in [(0, 0), (4, 1000), (16, 1 << 20)] {
                for scid in &scids {
                    for compatible in [None, Some(Version(0x6b33_43cf))] {
                        let want = general(config, slots, recv_buf, scid, compatible);
                        let mut out = [0u8; 256];
                        let n = encode_client(config, slots, recv_buf, scid, compatible, &mut out)
                            .unwrap();
                        assert_eq!(&out[..n], &want[..]);
                        // Too small a buffer is an error, never a partial success.
                        let short = encode_client(
                            config,
                            slots,
                            recv_buf,
                            scid,
                            compatible,
                            &mut out[..want.len() - 1],
                        );
                        assert_eq!(short, Err(BufferTooSmall));
                    }
                }
            }
        }
    }
}
