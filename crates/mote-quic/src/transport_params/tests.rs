extern crate std;

use super::*;
use hex_literal::hex;
use proptest::prelude::*;
use std::vec::Vec;

fn encode(p: &TransportParameters) -> Vec<u8> {
    let mut buf = [0u8; 1024];
    let mut w = Writer::new(&mut buf);
    p.encode(&mut w).unwrap();
    w.written().to_vec()
}

/// What [`encode`] keeps of `p`: everything, or without `server` everything but the
/// server-only parameters (a client build never sends them, RFC 9000 §18.2).
fn sendable(p: TransportParameters) -> TransportParameters {
    #[cfg(feature = "server")]
    return p;
    #[cfg(not(feature = "server"))]
    TransportParameters {
        original_destination_connection_id: None,
        stateless_reset_token: None,
        preferred_address: None,
        retry_source_connection_id: None,
        ..p
    }
}

fn err(id: u64) -> Result<TransportParameters, WireError> {
    Err(WireError::InvalidTransportParameter(id))
}

fn cid(bytes: &[u8]) -> ConnectionId {
    ConnectionId::new(bytes).unwrap()
}

fn vi(chosen: u32, available: &[u32]) -> Vec<u8> {
    let mut v = chosen.to_be_bytes().to_vec();
    for a in available {
        v.extend_from_slice(&a.to_be_bytes());
    }
    v
}

/// Wraps `value` as one parameter `id`.
fn param(id: u64, value: &[u8]) -> Vec<u8> {
    let mut buf = [0u8; 256];
    let mut w = Writer::new(&mut buf);
    put_bytes_param(&mut w, id, value).unwrap();
    w.written().to_vec()
}

const BOTH: [Side; 2] = [Side::Client, Side::Server];

/// The `quic_transport_parameters` extension (0x0039, length 0x32) of the RFC 9001
/// Appendix A.2 ClientHello.
const RFC9001_A2: [u8; 0x32] = hex!(
    "0408ffffffffffffffff05048000ffff07048000ffff0801100104800075300901100f088394c8f03e515708"
    "06048000ffff"
);

#[test]
fn rfc9001_a2_client_hello() {
    let p = TransportParameters::decode(&RFC9001_A2, Side::Client).unwrap();
    let expected = TransportParameters {
        initial_max_data: VarInt::MAX,
        initial_max_stream_data_bidi_local: VarInt::from_u32(65535),
        initial_max_stream_data_bidi_remote: VarInt::from_u32(65535),
        initial_max_stream_data_uni: VarInt::from_u32(65535),
        initial_max_streams_bidi: VarInt::from_u32(16),
        initial_max_streams_uni: VarInt::from_u32(16),
        max_idle_timeout: VarInt::from_u32(30000),
        initial_source_connection_id: Some(cid(&hex!("8394c8f03e515708"))),
        ..TransportParameters::default()
    };
    assert_eq!(p, expected);
    // Absent parameters take their RFC 9000 §18.2 defaults.
    assert_eq!(p.max_udp_payload_size.into_inner(), 65527);
    assert_eq!(p.ack_delay_exponent, 3);
    assert_eq!(p.max_ack_delay, 25);
    assert_eq!(p.active_connection_id_limit.into_inner(), 2);
    assert!(p.version_information.is_none());
    assert!(p.validate_client_cids(&hex!("8394c8f03e515708")).is_ok());
    // Our encoding is in ID order, so it differs from the fixture but decodes the same.
    let ours = encode(&p);
    assert_eq!(ours.len(), RFC9001_A2.len());
    assert_eq!(TransportParameters::decode(&ours, Side::Client).unwrap(), expected);
}

#[test]
fn encode_exact_bytes() {
    let p = TransportParameters {
        max_idle_timeout: VarInt::from_u32(30000),
        max_udp_payload_size: VarInt::from_u32(1472),
        ack_delay_exponent: 3, // default: omitted
        disable_active_migration: true,
        initial_source_connection_id: Some(ConnectionId::EMPTY),
        grease_quic_bit: true,
        ..TransportParameters::default()
    };
    assert_eq!(encode(&p), hex!("0104 80007530  0302 45c0  0c00  0f00  6ab200"));
    assert_eq!(encode(&TransportParameters::default()), hex!(""));
    let mut buf = [0u8; 8];
    assert_eq!(p.encode(&mut Writer::new(&mut buf)), Err(BufferTooSmall));
}

#[test]
fn default_holds_the_rfc_defaults() {
    // RFC 9000 §18.2: the values an absent parameter takes.
    let d = TransportParameters::default();
    assert_eq!(d.max_udp_payload_size, VarInt::from_u32(65527));
    assert_eq!(d.ack_delay_exponent, 3);
    assert_eq!(d.max_ack_delay, 25);
    assert_eq!(d.active_connection_id_limit, VarInt::from_u32(2));
    assert_eq!(d.max_idle_timeout, VarInt::ZERO);
    assert_eq!(d.initial_max_data, VarInt::ZERO);
    assert_eq!(d.initial_max_streams_bidi, VarInt::ZERO);
    assert!(!d.disable_active_migration && !d.grease_quic_bit);
    assert!(d.original_destination_connection_id.is_none() && d.preferred_address.is_none());
    assert!(d.initial_source_connection_id.is_none() && d.version_information.is_none());
}

#[test]
fn empty_is_all_defaults() {
    for side in BOTH {
        assert_eq!(TransportParameters::decode(&[], side), Ok(TransportParameters::default()));
    }
}

#[test]
fn unknown_and_reserved_parameters_are_skipped() {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 16];
    let mut w = Writer::new(&mut buf);
    TransportParameters::encode_grease(&mut w, 1000).unwrap();
    // 31 * 1000 + 27 = 31027 = 0x7933, empty value.
    assert_eq!(w.written(), hex!("80007933 00"));
    bytes.extend_from_slice(w.written());
    // The same grease ID twice, with values; an unknown ID twice: unknown duplicates pass.
    bytes.extend_from_slice(&hex!("80007933 03 aabbcc  80007933 00  4040 01 ff  4040 00"));
    bytes.extend_from_slice(&param(0x01, &[0x05]));
    // A 62-bit unknown ID.
    bytes.extend_from_slice(&hex!("ffffffffffffffff 02 0102"));
    for side in BOTH {
        let p = TransportParameters::decode(&bytes, side).unwrap();
        assert_eq!(
            p,
            TransportParameters { max_idle_timeout: VarInt::from_u32(5), ..Default::default() }
        );
    }
}

#[test]
fn known_ranges_accept_their_limits() {
    let ok = [
        param(0x03, &hex!("44b0")),             // max_udp_payload_size 1200
        param(0x0a, &[20]),                     // ack_delay_exponent 20
        param(0x0b, &hex!("7fff")),             // max_ack_delay 2^14 - 1
        param(0x0e, &[2]),                      // active_connection_id_limit 2
        param(0x08, &hex!("d000000000000000")), // initial_max_streams_bidi 2^60
        param(0x09, &hex!("d000000000000000")), // initial_max_streams_uni 2^60
        param(0x0f, &[0x11; 20]),               // 20-byte CID
        param(0x01, &hex!("4025")),             // non-minimal varint fills its length
    ];
    for bytes in ok {
        for side in BOTH {
            assert!(TransportParameters::decode(&bytes, side).is_ok(), "{bytes:02x?}");
        }
    }
    let p = TransportParameters::decode(&param(0x0a, &[20]), Side::Server).unwrap();
    assert_eq!(p.ack_delay_exponent, 20);
    let p = TransportParameters::decode(&param(0x0b, &hex!("7fff")), Side::Server).unwrap();
    assert_eq!(p.max_ack_delay, 0x3fff);
}

#[test]
fn out_of_range_values() {
    let cases: [(u64, Vec<u8>); 9] = [
        (0x03, param(0x03, &hex!("44af"))), // max_udp_payload_size 1199
        (0x03, param(0x03, &[0])),          // max_udp_payload_size 0
        (0x0a, param(0x0a, &[21])),         // ack_delay_exponent 21
        (0x0b, param(0x0b, &hex!("80004000"))), // max_ack_delay 2^14
        (0x0e, param(0x0e, &[1])),          // active_connection_id_limit 1
        (0x0e, param(0x0e, &[0])),          // active_connection_id_limit 0
        (0x08, param(0x08, &hex!("d000000000000001"))), // initial_max_streams_bidi 2^60 + 1
        (0x09, param(0x09, &hex!("ffffffffffffffff"))), // initial_max_streams_uni 2^62 - 1
        (0x0f, param(0x0f, &[0x11; 21])),   // 21-byte CID
    ];
    for (id, bytes) in cases {
        for side in BOTH {
            let e = TransportParameters::decode(&bytes, side);
            assert_eq!(e, err(id), "{bytes:02x?}");
            assert_eq!(e.unwrap_err().code(), crate::TransportErrorCode::TRANSPORT_PARAMETER_ERROR);
        }
    }
}

#[test]
fn duplicate_parameters() {
    let mut bytes = param(0x01, &[5]);
    bytes.extend_from_slice(&param(0x04, &[1]));
    bytes.extend_from_slice(&param(0x01, &[5]));
    for side in BOTH {
        assert_eq!(TransportParameters::decode(&bytes, side), err(0x01));
    }
    // Also for flags and for the extension parameters.
    let mut bytes = hex!("0c00 0c00").to_vec();
    assert_eq!(TransportParameters::decode(&bytes, Side::Server), err(0x0c));
    bytes = hex!("80002ab200 80002ab200").to_vec();
    assert_eq!(TransportParameters::decode(&bytes, Side::Server), err(0x2ab2));
    let one = param(0x11, &vi(1, &[1]));
    bytes = [one.clone(), one].concat();
    assert_eq!(TransportParameters::decode(&bytes, Side::Client), err(0x11));
}

fn preferred_address_value(cid_len: u8) -> Vec<u8> {
    let mut v = hex!("c0000201 1234 20010db8000000000000000000000001 4321").to_vec();
    v.push(cid_len);
    v.extend(core::iter::repeat_n(0xcd, usize::from(cid_len)));
    v.extend_from_slice(&[0xee; 16]);
    v
}

#[test]
fn server_only_parameters_from_client() {
    let cases = [
        (0x00, param(0x00, &hex!("0102030405060708"))),
        (0x02, param(0x02, &[0xaa; 16])),
        (0x0d, param(0x0d, &preferred_address_value(4))),
        (0x10, param(0x10, &hex!("0a0b0c"))),
    ];
    for (id, bytes) in cases {
        assert_eq!(TransportParameters::decode(&bytes, Side::Client), err(id));
        assert!(TransportParameters::decode(&bytes, Side::Server).is_ok());
    }
}

#[test]
fn server_only_parameters_are_encoded_only_by_server_builds() {
    let p = TransportParameters {
        original_destination_connection_id: Some(cid(&[7; 8])),
        stateless_reset_token: Some([0xaa; 16]),
        retry_source_connection_id: Some(cid(&[5])),
        initial_max_data: VarInt::from_u32(100),
        ..Default::default()
    };
    let bytes = encode(&p);
    let expected = [
        #[cfg(feature = "server")]
        param(0x00, &[7; 8]),
        #[cfg(feature = "server")]
        param(0x02, &[0xaa; 16]),
        param(0x04, &hex!("4064")),
        #[cfg(feature = "server")]
        param(0x10, &[5]),
    ]
    .concat();
    assert_eq!(bytes, expected);
    assert_eq!(TransportParameters::decode(&bytes, Side::Server), Ok(sendable(p)));
}

#[test]
fn cve_2026_31812_truncated_varint_transport_parameter() {
    let cases: &[(u64, &[u8])] = &[
        // A 4-byte varint in a 2-byte parameter.
        (0x01, &hex!("01 02 8000")),
        // A 2-byte varint in a 1-byte parameter, then more parameters.
        (0x04, &hex!("04 01 40 05 01 00")),
        // An empty varint parameter.
        (0x0e, &hex!("0e 00")),
        // A varint that does not fill its length.
        (0x01, &hex!("01 02 05 00")),
        (0x03, &hex!("03 04 44b0 0000")),
        // Truncated inside version_information and preferred_address.
        (0x11, &hex!("11 02 0000")),
        // The length itself is truncated.
        (0x01, &hex!("01 40")),
        (0x01, &hex!("01 c0000000")),
        // The ID itself is truncated.
        (id::TRUNCATED, &hex!("40")),
        (id::TRUNCATED, &hex!("0c00 c000")),
    ];
    for (id, bytes) in cases {
        for side in BOTH {
            assert_eq!(TransportParameters::decode(bytes, side), err(*id), "{bytes:02x?}");
        }
    }
    let pa = preferred_address_value(4);
    for cut in 0..pa.len() {
        let bytes = param(0x0d, &pa[..cut]);
        assert_eq!(TransportParameters::decode(&bytes, Side::Server), err(0x0d));
    }
}

#[test]
fn length_past_end() {
    for bytes in [&hex!("01 05 01")[..], &hex!("0f 14 0102"), &hex!("40ff bfffffff 00")] {
        for side in BOTH {
            assert!(matches!(
                TransportParameters::decode(bytes, side),
                Err(WireError::InvalidTransportParameter(_))
            ));
        }
    }
    // A 62-bit length must not wrap on 32-bit targets.
    let bytes = hex!("01 ffffffffffffffff 00");
    assert_eq!(TransportParameters::decode(&bytes, Side::Client), err(0x01));
}

#[test]
fn stateless_reset_token_length() {
    for len in [0, 15, 17] {
        let bytes = param(0x02, &[0xaa; 17][..len]);
        assert_eq!(TransportParameters::decode(&bytes, Side::Server), err(0x02));
    }
    let p = TransportParameters::decode(&param(0x02, &[0xaa; 16]), Side::Server).unwrap();
    assert_eq!(p.stateless_reset_token, Some([0xaa; 16]));
}

#[test]
fn preferred_address_fields() {
    let p = TransportParameters::decode(&param(0x0d, &preferred_address_value(4)), Side::Server)
        .unwrap();
    let pa = p.preferred_address.unwrap();
    assert_eq!(pa.ipv4, [192, 0, 2, 1]);
    assert_eq!(pa.ipv4_port, 0x1234);
    assert_eq!(pa.ipv6, hex!("20010db8000000000000000000000001"));
    assert_eq!(pa.ipv6_port, 0x4321);
    assert_eq!(&*pa.connection_id, &[0xcd; 4]);
    assert_eq!(pa.stateless_reset_token, [0xee; 16]);
    assert_eq!(TransportParameters::decode(&encode(&p), Side::Server).unwrap(), sendable(p));

    // Zero-length and over-long CIDs, trailing bytes.
    for value in [preferred_address_value(0), preferred_address_value(21)] {
        assert_eq!(TransportParameters::decode(&param(0x0d, &value), Side::Server), err(0x0d));
    }
    let mut long = preferred_address_value(20);
    assert!(TransportParameters::decode(&param(0x0d, &long), Side::Server).is_ok());
    long.push(0);
    assert_eq!(TransportParameters::decode(&param(0x0d, &long), Side::Server), err(0x0d));
}

#[test]
fn flags_must_be_empty() {
    for side in BOTH {
        assert_eq!(TransportParameters::decode(&hex!("0c 01 00"), side), err(0x0c));
        assert_eq!(TransportParameters::decode(&hex!("80002ab2 01 00"), side), err(0x2ab2));
        let p = TransportParameters::decode(&hex!("0c00 80002ab200"), side).unwrap();
        assert!(p.disable_active_migration && p.grease_quic_bit);
    }
}

#[test]
fn version_information_bad_length() {
    let bad: [Vec<u8>; 6] = [
        Vec::new(),
        hex!("000001").to_vec(),
        hex!("00000001 0000").to_vec(),
        hex!("00000001 00000001 00").to_vec(),
        vi(0, &[1]),    // Chosen Version 0
        vi(1, &[1, 0]), // an Available Version 0
    ];
    for value in bad {
        for side in BOTH {
            assert_eq!(TransportParameters::decode(&param(0x11, &value), side), err(0x11));
        }
    }
    // RFC 9368 §4: a client's Chosen Version must be among its Available Versions; a
    // server's need not be, and a server may send none at all.
    for value in [vi(1, &[]), vi(1, &[0x6b3343cf])] {
        assert_eq!(TransportParameters::decode(&param(0x11, &value), Side::Client), err(0x11));
        let p = TransportParameters::decode(&param(0x11, &value), Side::Server).unwrap();
        assert_eq!(p.version_information.unwrap().chosen, Version::V1);
    }
}

#[test]
fn version_information_overflow_keeps_supported_versions() {
    // 20 distinct unsupported (greasing) versions, then V2 and V1: a valid list.
    let mut list: Vec<u32> = (0..20).map(|i| 0x0a0a_0a0a | (i << 4)).collect();
    list.push(Version::V2.0);
    list.push(Version::V1.0);
    let bytes = param(0x11, &vi(1, &list));
    let p = TransportParameters::decode(&bytes, Side::Client).unwrap();
    let info = p.version_information.unwrap();
    assert!(info.truncated());
    let kept = info.available();
    assert_eq!(kept.len(), MAX_AVAILABLE_VERSIONS);
    let want_tail: &[Version] =
        if cfg!(feature = "v2") { &[Version::V2, Version::V1] } else { &[Version::V1] };
    assert_eq!(&kept[kept.len() - want_tail.len()..], want_tail);
    for (k, v) in kept.iter().zip(&list) {
        if !k.is_supported() {
            assert_eq!(k.0, *v, "unsupported versions kept in wire order");
        }
    }
    // Repeated entries are kept once and are not truncation.
    let p = TransportParameters::decode(
        &param(0x11, &vi(1, &[1, 1, 1, 1, 1, 1, 1, 1, 1, 1])),
        Side::Client,
    )
    .unwrap();
    let info = p.version_information.unwrap();
    assert_eq!(info.available(), &[Version::V1]);
    assert!(!info.truncated());
}

#[cfg(feature = "datagram")]
#[test]
fn max_datagram_frame_size() {
    let p = TransportParameters::decode(&hex!("20 02 4400"), Side::Client).unwrap();
    assert_eq!(p.max_datagram_frame_size.into_inner(), 0x400);
    assert_eq!(TransportParameters::decode(&hex!("20 02 44"), Side::Client), err(0x20));
    assert_eq!(TransportParameters::decode(&hex!("2001002001 00"), Side::Client), err(0x20));
}

#[cfg(not(feature = "datagram"))]
#[test]
fn max_datagram_frame_size_is_unknown_without_feature() {
    // Malformed and duplicated: skipped all the same.
    let p = TransportParameters::decode(&hex!("20 01 ff 20 00"), Side::Client).unwrap();
    assert_eq!(p, TransportParameters::default());
}

#[test]
fn connection_id_authentication() {
    let client = TransportParameters {
        initial_source_connection_id: Some(cid(&[1, 2, 3])),
        ..Default::default()
    };
    assert_eq!(client.validate_client_cids(&[1, 2, 3]), Ok(()));
    assert_eq!(client.validate_client_cids(&[1, 2]), err(0x0f).map(|_| ()));
    assert_eq!(TransportParameters::default().validate_client_cids(&[]), err(0x0f).map(|_| ()));

    let server = TransportParameters {
        initial_source_connection_id: Some(cid(&[9])),
        original_destination_connection_id: Some(cid(&[7; 8])),
        ..Default::default()
    };
    assert_eq!(server.validate_server_cids(&[9], &[7; 8], None), Ok(()));
    assert_eq!(server.validate_server_cids(&[8], &[7; 8], None), err(0x0f).map(|_| ()));
    assert_eq!(server.validate_server_cids(&[9], &[7; 9], None), err(0x00).map(|_| ()));
    // Retry happened but the server did not say so, and the reverse.
    assert_eq!(server.validate_server_cids(&[9], &[7; 8], Some(&[5])), err(0x10).map(|_| ()));
    let retried =
        TransportParameters { retry_source_connection_id: Some(cid(&[5])), ..server.clone() };
    assert_eq!(retried.validate_server_cids(&[9], &[7; 8], Some(&[5])), Ok(()));
    assert_eq!(retried.validate_server_cids(&[9], &[7; 8], Some(&[6])), err(0x10).map(|_| ()));
    assert_eq!(retried.validate_server_cids(&[9], &[7; 8], None), err(0x10).map(|_| ()));
    let no_odcid =
        TransportParameters { original_destination_connection_id: None, ..server.clone() };
    assert_eq!(no_odcid.validate_server_cids(&[9], &[7; 8], None), err(0x00).map(|_| ()));
    // RFC 9000 §18.2: no preferred address with a zero-length server connection ID.
    let zero = TransportParameters {
        initial_source_connection_id: Some(ConnectionId::EMPTY),
        preferred_address: Some(PreferredAddress {
            ipv4: [0; 4],
            ipv4_port: 0,
            ipv6: [0; 16],
            ipv6_port: 0,
            connection_id: cid(&[1]),
            stateless_reset_token: [0; 16],
        }),
        ..server.clone()
    };
    assert_eq!(zero.validate_server_cids(&[], &[7; 8], None), err(0x0d).map(|_| ()));
}

#[test]
fn remembered_for_0rtt_drops_excluded_parameters() {
    let p = TransportParameters::decode(&RFC9001_A2, Side::Server).unwrap();
    let p = TransportParameters {
        ack_delay_exponent: 10,
        max_ack_delay: 100,
        stateless_reset_token: Some([1; 16]),
        original_destination_connection_id: Some(cid(&[1])),
        ..p
    };
    let r = p.remembered_for_0rtt();
    assert_eq!(
        r,
        TransportParameters {
            ack_delay_exponent: 3,
            max_ack_delay: 25,
            stateless_reset_token: None,
            original_destination_connection_id: None,
            initial_source_connection_id: None,
            ..p
        }
    );
    // The remembered encoding, written without that copy, is the copy's encoding.
    let (mut a, mut b) = ([0u8; 256], [0u8; 256]);
    let mut wa = Writer::new(&mut a);
    let mut wb = Writer::new(&mut b);
    p.encode_remembered_for_0rtt(&mut wa).unwrap();
    r.encode(&mut wb).unwrap();
    let (la, lb) = (wa.position(), wb.position());
    assert_eq!(a[..la], b[..lb]);
    let mut full = [0u8; 256];
    let mut wf = Writer::new(&mut full);
    p.encode(&mut wf).unwrap();
    assert!(wf.position() > la, "the remembered encoding leaves parameters out");
}

#[test]
fn decode_into_matches_decode() {
    let mut into = TransportParameters::default();
    into.decode_into(&RFC9001_A2, Side::Server).unwrap();
    assert_eq!(into, TransportParameters::decode(&RFC9001_A2, Side::Server).unwrap());
}

// ---- property tests ----

fn varint() -> impl Strategy<Value = VarInt> {
    prop_oneof![
        (0u64..64).prop_map(|v| VarInt::new(v).unwrap()),
        (0u64..1 << 14).prop_map(|v| VarInt::new(v).unwrap()),
        (0u64..1 << 62).prop_map(|v| VarInt::new(v).unwrap()),
    ]
}

fn bounded(lo: u64, hi: u64) -> impl Strategy<Value = VarInt> {
    (lo..=hi).prop_map(|v| VarInt::new(v).unwrap())
}

fn connection_id(min: usize) -> impl Strategy<Value = ConnectionId> {
    proptest::collection::vec(any::<u8>(), min..=20).prop_map(|b| ConnectionId::new(&b).unwrap())
}

fn preferred_address() -> impl Strategy<Value = PreferredAddress> {
    (
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<[u8; 16]>(),
        any::<u16>(),
        connection_id(1),
        any::<[u8; 16]>(),
    )
        .prop_map(
            |(ipv4, ipv4_port, ipv6, ipv6_port, connection_id, stateless_reset_token)| {
                PreferredAddress {
                    ipv4,
                    ipv4_port,
                    ipv6,
                    ipv6_port,
                    connection_id,
                    stateless_reset_token,
                }
            },
        )
}

fn version_information(sender: Side) -> impl Strategy<Value = VersionInformation> {
    let version = prop_oneof![Just(1u32), Just(0x6b33_43cf), 1u32..];
    (version.clone(), proptest::collection::vec(version, 0..=MAX_AVAILABLE_VERSIONS)).prop_map(
        move |(chosen, mut available)| {
            if sender == Side::Client && !available.contains(&chosen) {
                available.truncate(MAX_AVAILABLE_VERSIONS - 1);
                available.insert(0, chosen);
            }
            let available: Vec<Version> = available.into_iter().map(Version).collect();
            VersionInformation::new(Version(chosen), &available)
        },
    )
}

pub(crate) fn params(sender: Side) -> impl Strategy<Value = TransportParameters> {
    let server = sender == Side::Server;
    let server_only = (
        proptest::option::of(connection_id(0)),
        proptest::option::of(any::<[u8; 16]>()),
        proptest::option::of(preferred_address()),
        proptest::option::of(connection_id(0)),
    )
        .prop_map(move |s| if server { s } else { (None, None, None, None) });
    let flow = (varint(), varint(), varint(), varint(), bounded(0, 1 << 60), bounded(0, 1 << 60));
    let misc = (
        varint(),
        bounded(1200, (1 << 62) - 1),
        0u8..=20,
        0u16..1 << 14,
        any::<bool>(),
        bounded(2, (1 << 62) - 1),
        proptest::option::of(connection_id(0)),
        proptest::option::of(version_information(sender)),
        varint(),
        any::<bool>(),
    );
    (server_only, flow, misc).prop_map(|(s, f, m)| {
        #[cfg(not(feature = "datagram"))]
        let _ = m.8;
        TransportParameters {
            original_destination_connection_id: s.0,
            stateless_reset_token: s.1,
            preferred_address: s.2,
            retry_source_connection_id: s.3,
            initial_max_data: f.0,
            initial_max_stream_data_bidi_local: f.1,
            initial_max_stream_data_bidi_remote: f.2,
            initial_max_stream_data_uni: f.3,
            initial_max_streams_bidi: f.4,
            initial_max_streams_uni: f.5,
            max_idle_timeout: m.0,
            max_udp_payload_size: m.1,
            ack_delay_exponent: m.2,
            max_ack_delay: m.3,
            disable_active_migration: m.4,
            active_connection_id_limit: m.5,
            initial_source_connection_id: m.6,
            version_information: m.7,
            #[cfg(feature = "datagram")]
            max_datagram_frame_size: m.8,
            grease_quic_bit: m.9,
        }
    })
}

fn sides() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Client), Just(Side::Server)]
}

/// Parameters built from known and unknown IDs with random (often invalid) values.
fn param_soup() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![0u64..0x12, Just(0x20), Just(0x2ab2), Just(27), 0u64..1 << 62];
    let one = (id, proptest::collection::vec(any::<u8>(), 0..48)).prop_map(|(id, value)| {
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        put_bytes_param(&mut w, id, &value).unwrap();
        w.written().to_vec()
    });
    proptest::collection::vec(one, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn round_trip((sender, p) in sides().prop_flat_map(|s| (Just(s), params(s))), n in any::<u32>()) {
        let p = sendable(p);
        let bytes = encode(&p);
        prop_assert_eq!(TransportParameters::decode(&bytes, sender), Ok(p.clone()));
        // With a grease parameter on either side.
        let mut buf = [0u8; 1024];
        let mut w = Writer::new(&mut buf);
        TransportParameters::encode_grease(&mut w, n).unwrap();
        p.encode(&mut w).unwrap();
        TransportParameters::encode_grease(&mut w, n).unwrap();
        prop_assert_eq!(TransportParameters::decode(w.written(), sender), Ok(p));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        for side in BOTH {
            if let Err(e) = TransportParameters::decode(&bytes, side) {
                prop_assert!(matches!(e, WireError::InvalidTransportParameter(_)));
            }
        }
    }

    #[test]
    fn structured_garbage_never_panics(bytes in param_soup(), cut in any::<prop::sample::Index>()) {
        for side in BOTH {
            for input in [&bytes[..], &bytes[..cut.index(bytes.len() + 1)]] {
                match TransportParameters::decode(input, side) {
                    // Whatever decodes re-encodes to something that decodes the same (unless
                    // Available Versions were dropped, which re-encoding cannot restore).
                    Ok(p) if p.version_information.is_some_and(|v| v.truncated()) => {}
                    Ok(p) => prop_assert_eq!(
                        TransportParameters::decode(&encode(&p), side),
                        Ok(sendable(p))
                    ),
                    Err(e) => prop_assert!(matches!(e, WireError::InvalidTransportParameter(_))),
                }
            }
        }
    }
}

/// A client whose Chosen Version is an unknown one listed after more than
/// MAX_AVAILABLE_VERSIONS others: the Chosen Version must survive truncation so the
/// parameters still re-encode to something valid (found by the transport_params fuzz target).
#[test]
fn truncated_version_information_keeps_chosen_version() {
    let chosen = Version(0x0000_0042);
    let mut listed: Vec<Version> = (1..=12).map(|i| Version(0x1000_0000 + i)).collect();
    listed.push(chosen);
    let vi = VersionInformation::new(chosen, &listed);
    assert!(vi.truncated());
    assert!(vi.available().contains(&chosen));
    let params =
        TransportParameters { version_information: Some(vi), ..TransportParameters::default() };
    let mut buf = [0u8; 256];
    let mut w = Writer::new(&mut buf);
    params.encode(&mut w).unwrap();
    let again = TransportParameters::decode(w.written(), Side::Client).unwrap();
    assert_eq!(again.version_information.unwrap().available(), vi.available());
}
