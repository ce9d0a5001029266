//! RFC 9000 §7.4.1: the server's transport parameters a client remembers with a ticket for
//! 0-RTT, re-encoded straight from the bytes the server sent (feature `resumption`).
//!
//! A client-only build does not link the general encoder
//! ([`TransportParameters::encode_remembered_for_0rtt`]), and copying the remembered
//! parameters as they came (what `connection/client_tp.rs` once did) keeps a server's
//! non-minimal varints and explicit defaults: a server whose remembered parameters are longer
//! than the client's buffer as sent (160 bytes) costs the client its 0-RTT.
//! [`remember_shortest`] writes each remembered integer parameter in its shortest form and
//! leaves out those at their default, so the remembered integers, flags and IDs take at most
//! 105 bytes whatever the server sent, and version_information keeps only its Chosen Version
//! (6 bytes): they fit 160 bytes however many Available Versions the server lists (copied
//! as sent, more than 12 once cost the ticket its 0-RTT).

use super::{id, put_param, TransportParameters};
use crate::coding::{Reader, Writer};

/// RFC 9000 §7.4.1: writes the parameters of the server's encoded `params` a client remembers
/// for 0-RTT into `out` and returns their length, or 0 (nothing remembered, so no 0-RTT) if
/// they do not fit or do not parse. `params` must have been decoded and checked
/// ([`TransportParameters::decode`]) first.
///
/// Remembered: max_idle_timeout, max_udp_payload_size, the initial flow-control and stream
/// limits, active_connection_id_limit, max_datagram_frame_size (feature `datagram`) as
/// varints in their shortest form, left out at their default; disable_active_migration and
/// grease_quic_bit as sent; version_information's Chosen Version
/// ([`super::VersionInformation::remembered`]). Not remembered ("A client MUST NOT use
/// remembered values for the following parameters"): ack_delay_exponent, max_ack_delay,
/// initial_source_connection_id, original_destination_connection_id, preferred_address,
/// retry_source_connection_id, stateless_reset_token; nor any parameter this build does not
/// know. Decoded, the result equals what
/// [`TransportParameters::encode_remembered_for_0rtt`] writes of the decoded `params` (the
/// same bytes when the server sent its parameters in ID order).
pub fn remember_shortest(params: &[u8], out: &mut [u8]) -> usize {
    let mut r = Reader::new(params);
    let mut w = Writer::new(out);
    while !r.is_empty() {
        let Ok(param) = r.varint_u64() else { return 0 };
        let Ok(value) = r.varint_prefixed() else { return 0 };
        let written = match param {
            id::MAX_IDLE_TIMEOUT
            | id::MAX_UDP_PAYLOAD_SIZE..=id::INITIAL_MAX_STREAMS_UNI
            | id::ACTIVE_CONNECTION_ID_LIMIT => put_int(&mut w, param, value),
            #[cfg(feature = "datagram")]
            id::MAX_DATAGRAM_FRAME_SIZE => put_int(&mut w, param, value),
            id::DISABLE_ACTIVE_MIGRATION | id::VERSION_INFORMATION | id::GREASE_QUIC_BIT => {
                // The flags are empty (checked when decoded). RFC 9368 §3, §4: of
                // version_information a client processes the Chosen Version (its first four
                // bytes), not the server's Available Versions, and remembers only that ("A
                // client need not store a transport parameter it cannot process"): however
                // many versions the server lists, the remembered set fits.
                let value = value.get(..4).unwrap_or(value);
                put_param(&mut w, param, value.len()).is_ok() && w.put_slice(value).is_ok()
            }
            _ => true,
        };
        if !written {
            return 0;
        }
    }
    w.position()
}

/// RFC 9369 §5: makes the remembered parameters (`out[..len]`, from [`remember_shortest`])
/// name `version` for [`super::ticket_version`] when the server sent no
/// version_information (`server_named_one` false) and `version` is not 1, which a ticket
/// without one stands for: a version_information with Chosen Version `version` is appended.
/// If it does not fit, only it is kept (the ticket then allows 0-RTT with the default
/// limits, i.e. none, but is never taken for a version-1 ticket). Returns the new length.
pub(crate) fn remember_version(
    out: &mut [u8],
    len: usize,
    server_named_one: bool,
    version: crate::Version,
) -> usize {
    if server_named_one || version == crate::Version::V1 {
        return len;
    }
    let value = version.0.to_be_bytes();
    let append = |out: &mut [u8], at: usize| {
        let mut w = Writer::new(out.get_mut(at..)?);
        super::put_bytes_param(&mut w, id::VERSION_INFORMATION, &value).ok()?;
        Some(at + w.position())
    };
    append(out, len).or_else(|| append(out, 0)).unwrap_or(0)
}

// RFC 9000 §18.2: an integer parameter (`value` is one varint), in its shortest form, unless
// it is at its default. False if it does not parse or fit.
fn put_int(w: &mut Writer, param: u64, value: &[u8]) -> bool {
    let mut r = Reader::new(value);
    let Ok(v) = r.varint() else { return false };
    let default = match param {
        id::MAX_UDP_PAYLOAD_SIZE => TransportParameters::DEFAULT_MAX_UDP_PAYLOAD_SIZE,
        id::ACTIVE_CONNECTION_ID_LIMIT => TransportParameters::DEFAULT_ACTIVE_CONNECTION_ID_LIMIT,
        _ => 0,
    };
    r.is_empty()
        && (v.into_inner() == default
            || (put_param(w, param, v.size()).is_ok() && w.put_varint(v).is_ok()))
}

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;

    use super::*;
    use crate::coding::VarInt;
    use crate::transport_params::tests::params;
    use crate::transport_params::{put_bytes_param, Side};
    use std::vec::Vec;

    fn decoded(bytes: &[u8]) -> TransportParameters {
        TransportParameters::decode(bytes, Side::Server).unwrap()
    }

    fn is_int(param: u64) -> bool {
        matches!(
            param,
            id::MAX_IDLE_TIMEOUT | id::MAX_UDP_PAYLOAD_SIZE
                ..=id::MAX_ACK_DELAY | id::ACTIVE_CONNECTION_ID_LIMIT | id::MAX_DATAGRAM_FRAME_SIZE
        )
    }

    /// `raw` with every ID, Length and integer value as an 8-byte varint (valid, as long as
    /// can be), and each integer parameter at its default sent explicitly.
    pub(crate) fn bloated(raw: &[u8]) -> Vec<u8> {
        let mut buf = [0u8; 2048];
        let mut w = Writer::new(&mut buf);
        let mut r = Reader::new(raw);
        let put = |w: &mut Writer, param: u64, value: &[u8]| {
            w.put_varint_sized(VarInt::new(param).unwrap(), 8).unwrap();
            if is_int(param) {
                let v = Reader::new(value).varint().unwrap();
                w.put_varint_sized(VarInt::from_u32(8), 8).unwrap();
                w.put_varint_sized(v, 8).unwrap();
            } else {
                w.put_varint_sized(VarInt::new(value.len() as u64).unwrap(), 8).unwrap();
                w.put_slice(value).unwrap();
            }
        };
        let mut seen = Vec::new();
        while !r.is_empty() {
            let param = r.varint_u64().unwrap();
            let value = r.varint_prefixed().unwrap();
            seen.push(param);
            put(&mut w, param, value);
        }
        let defaults = [
            (id::MAX_IDLE_TIMEOUT, 0),
            (id::MAX_UDP_PAYLOAD_SIZE, 65527),
            (id::INITIAL_MAX_DATA, 0),
            (id::ACTIVE_CONNECTION_ID_LIMIT, 2),
        ];
        for (param, default) in defaults {
            if !seen.contains(&param) {
                let mut v = [0u8; 8];
                let mut vw = Writer::new(&mut v);
                vw.put_varint_u64(default).unwrap();
                let n = vw.position();
                put(&mut w, param, &v[..n]);
            }
        }
        w.written().to_vec()
    }

    fn general_remembered(p: &TransportParameters) -> Vec<u8> {
        let mut buf = [0u8; 512];
        let mut w = Writer::new(&mut buf);
        p.encode_remembered_for_0rtt(&mut w).unwrap();
        w.written().to_vec()
    }

    proptest::proptest! {
        /// A server's parameters, as sent in the longest valid form, with unknown and
        /// server-only ones: remembered in shortest form they decode to the general
        /// encoder's remembered subset, and are its very bytes when in ID order.
        #[test]
        fn remembers_what_the_general_encoder_does_in_shortest_form(
            tp in params(Side::Server),
            grease in 0u32..1000,
        ) {
            let mut buf = [0u8; 1024];
            let mut w = Writer::new(&mut buf);
            tp.encode(&mut w).unwrap();
            let raw = bloated(w.written());
            let want = general_remembered(&decoded(&raw));
            let mut out = [0u8; 512];
            let n = remember_shortest(&raw, &mut out);
            proptest::prop_assert_eq!(&out[..n], &want[..]);
            // With a reserved parameter in front: skipped.
            let mut with_grease = [0u8; 2048];
            let mut w = Writer::new(&mut with_grease);
            TransportParameters::encode_grease(&mut w, grease).unwrap();
            w.put_slice(&raw).unwrap();
            let n = remember_shortest(w.written(), &mut out);
            proptest::prop_assert_eq!(&out[..n], &want[..]);
            proptest::prop_assert_eq!(decoded(&out[..n]), decoded(&want));
        }
    }

    /// Every remembered integer at its largest value, sent in the longest form, with the
    /// flags and a version_information of 12 Available Versions: well over 160 bytes as
    /// sent, within 160 remembered.
    #[test]
    fn a_verbose_server_still_fits_the_remembered_buffer() {
        let max = VarInt::MAX;
        let tp = TransportParameters {
            max_idle_timeout: max,
            max_udp_payload_size: max,
            initial_max_data: max,
            initial_max_stream_data_bidi_local: max,
            initial_max_stream_data_bidi_remote: max,
            initial_max_stream_data_uni: max,
            initial_max_streams_bidi: VarInt::new(1 << 60).unwrap(),
            initial_max_streams_uni: VarInt::new(1 << 60).unwrap(),
            active_connection_id_limit: max,
            #[cfg(feature = "datagram")]
            max_datagram_frame_size: max,
            disable_active_migration: true,
            grease_quic_bit: true,
            initial_source_connection_id: Some(crate::cid::ConnectionId::new(&[9; 20]).unwrap()),
            ..TransportParameters::default()
        };
        let mut buf = [0u8; 1024];
        let mut w = Writer::new(&mut buf);
        tp.encode(&mut w).unwrap();
        let mut versions = [0u8; 52];
        for (i, v) in versions.chunks_mut(4).enumerate() {
            v.copy_from_slice(&(0x0a0a_0a0a_u32 + i as u32).to_be_bytes());
        }
        versions[..4].copy_from_slice(&1u32.to_be_bytes());
        put_bytes_param(&mut w, id::VERSION_INFORMATION, &versions).unwrap();
        let raw = bloated(w.written());
        assert!(raw.len() > 160 + 100, "{}", raw.len());
        let mut out = [0u8; 160];
        let n = remember_shortest(&raw, &mut out);
        assert!(n > 0);
        let remembered = decoded(&out[..n]);
        assert_eq!(remembered, decoded(&raw).remembered_for_0rtt());
        // One byte short: nothing remembered rather than a partial set.
        assert_eq!(remember_shortest(&raw, &mut out[..n - 1]), 0);
    }

    /// RFC 9000 §7.4.1, RFC 9368 §3: a server listing many Available Versions (here 40) is
    /// still remembered, so its tickets still allow 0-RTT: of version_information only the
    /// Chosen Version (what a client processes) is kept.
    #[test]
    fn many_available_versions_still_remembered() {
        let tp = TransportParameters {
            initial_max_data: VarInt::from_u32(1 << 20),
            initial_max_streams_bidi: VarInt::from_u32(100),
            ..TransportParameters::default()
        };
        let mut buf = [0u8; 1024];
        let mut w = Writer::new(&mut buf);
        tp.encode(&mut w).unwrap();
        let mut versions = [0u8; 4 * 41];
        for (i, v) in versions.chunks_mut(4).enumerate() {
            v.copy_from_slice(&(0x1a2a_3a4a_u32 + i as u32).to_be_bytes());
        }
        versions[..4].copy_from_slice(&1u32.to_be_bytes());
        versions[20..24].copy_from_slice(&1u32.to_be_bytes());
        versions[100..104].copy_from_slice(&1u32.to_be_bytes());
        put_bytes_param(&mut w, id::VERSION_INFORMATION, &versions).unwrap();
        let raw = w.written().to_vec();
        let mut out = [0u8; crate::connection::tls::REMEMBERED_TP_MAX];
        let n = remember_shortest(&raw, &mut out);
        assert!(n > 0, "nothing remembered: no 0-RTT");
        let remembered = decoded(&out[..n]);
        assert_eq!(remembered, decoded(&raw).remembered_for_0rtt());
        assert_eq!(remembered, general_remembered_decoded(&decoded(&raw)));
        let vi = remembered.version_information.unwrap();
        assert_eq!((vi.chosen, vi.available()), (crate::Version::V1, &[][..]));
        assert_eq!(remembered.initial_max_data, tp.initial_max_data);
    }

    fn general_remembered_decoded(p: &TransportParameters) -> TransportParameters {
        decoded(&general_remembered(p))
    }

    /// RFC 9369 §5: the version a ticket's remembered parameters name: the server's Chosen
    /// Version; without one, version 1 — unless the client wrote in another version it was
    /// in; and none when they do not decode.
    #[test]
    fn remembered_parameters_name_the_tickets_version() {
        use crate::transport_params::{ticket_version, VersionInformation};
        use crate::Version;
        let tp = TransportParameters {
            initial_max_data: VarInt::from_u32(1 << 20),
            ..TransportParameters::default()
        };
        let encoded = |tp: &TransportParameters| {
            let mut buf = [0u8; 512];
            let mut w = Writer::new(&mut buf);
            tp.encode(&mut w).unwrap();
            w.written().to_vec()
        };
        let plain = encoded(&tp);
        let with_v2 = encoded(&TransportParameters {
            version_information: Some(VersionInformation::new(Version::V2, &[Version::V2])),
            ..tp.clone()
        });
        let mut out = [0u8; crate::connection::tls::REMEMBERED_TP_MAX];
        // The server's Chosen Version is kept.
        let n = remember_shortest(&with_v2, &mut out);
        assert_eq!(remember_version(&mut out, n, true, Version::V2), n);
        assert_eq!(ticket_version(&out[..n]), Some(Version::V2));
        // None sent: version 1, as written.
        let n = remember_shortest(&plain, &mut out);
        assert_eq!(remember_version(&mut out, n, false, Version::V1), n);
        assert_eq!(ticket_version(&out[..n]), Some(Version::V1));
        // None sent in a v2 connection: the client writes v2 in; the rest is unchanged.
        let m = remember_version(&mut out, n, false, Version::V2);
        assert_eq!(m, n + 6);
        assert_eq!(ticket_version(&out[..m]), Some(Version::V2));
        assert_eq!(decoded(&out[..m]).initial_max_data, tp.initial_max_data);
        // No room after the parameters: the version alone.
        let mut small = [0u8; 8];
        small[..6].copy_from_slice(&out[..6]);
        let m = remember_version(&mut small, 6, false, Version::V2);
        assert_eq!(ticket_version(&small[..m]), Some(Version::V2));
        // Nothing that decodes: no version.
        assert_eq!(ticket_version(&[0x04, 0x09, 0x01]), None);
    }

    #[test]
    fn truncated_or_malformed_input_remembers_nothing() {
        let mut raw = [0u8; 64];
        let mut w = Writer::new(&mut raw);
        put_param(&mut w, id::INITIAL_MAX_DATA, 8).unwrap();
        w.put_varint_sized(VarInt::from_u32(1 << 20), 8).unwrap();
        let n = w.position();
        let mut out = [0u8; 64];
        // Shortest form: ID, Length 4, the 4-byte varint.
        assert_eq!(remember_shortest(&raw[..n], &mut out), 6);
        assert_eq!(remember_shortest(&raw[..n - 1], &mut out), 0);
        // A value that is not one varint filling its Length.
        let bad = [id::INITIAL_MAX_DATA as u8, 2, 0x05, 0x00];
        assert_eq!(remember_shortest(&bad, &mut out), 0);
    }
}
