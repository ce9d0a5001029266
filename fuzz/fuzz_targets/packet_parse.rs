//! QUIC packets (RFC 9000 §17, RFC 9001 §5): walking the coalesced packets of a datagram
//! never panics and stays in bounds; every parsed long or short header re-emits to bytes
//! that parse back to the same header; and packet protection is removed (or refused)
//! without panicking, with Initial keys from the packet's own DCID and from RFC 9001's
//! sample DCID, and with the RFC 9001 A.5 ChaCha20 1-RTT keys. A payload that decrypts is
//! walked as frames.
//!
//! The first input byte configures the harness: bits 0-4 (mod 21) are this endpoint's
//! short-header DCID length, bit 7 says whether it advertised `grease_quic_bit`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::AeadAlgorithm;
use mote_quic::coding::Writer;
use mote_quic::frame::Frames;
use mote_quic::packet::{self, Header, InitialKeys, PacketKeys, PacketType};
use mote_quic::Version;

/// RFC 9001 A.1: the client's first Destination Connection ID.
const RFC_DCID: [u8; 8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];
/// RFC 9001 A.5: the 1-RTT secret of the ChaCha20-Poly1305 short-header example.
const CHACHA_SECRET: [u8; 32] = [
    0x9a, 0xc3, 0x12, 0xa7, 0xf8, 0x77, 0x46, 0x8e, 0xbe, 0x69, 0x42, 0x27, 0x48, 0xad, 0x00, 0xa1,
    0x54, 0x43, 0xf1, 0x82, 0x03, 0xa0, 0x7d, 0x60, 0x60, 0xf6, 0x88, 0xf3, 0x0f, 0x21, 0x63, 0x2b,
];
/// RFC 9001 A.5's packet number, so its example decodes.
const CHACHA_LARGEST: u64 = 654_360_563;

struct Keys {
    rfc_v1: InitialKeys<RustCrypto>,
    rfc_v2: InitialKeys<RustCrypto>,
    chacha: PacketKeys<RustCrypto>,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        rfc_v1: packet::initial_keys(&RustCrypto, Version::V1, &RFC_DCID).unwrap(),
        rfc_v2: packet::initial_keys(&RustCrypto, Version::V2, &RFC_DCID).unwrap(),
        chacha: PacketKeys::from_secret(
            &RustCrypto,
            Version::V1,
            AeadAlgorithm::ChaCha20Poly1305,
            &CHACHA_SECRET,
        )
        .unwrap(),
    })
}

/// Tries to remove protection from a copy of `packet`; walks the frames if it opens.
fn try_unprotect(
    keys: &PacketKeys<RustCrypto>,
    packet: &[u8],
    pn_offset: usize,
    largest: Option<u64>,
    ty: PacketType,
) {
    let mut copy = packet.to_vec();
    if let Ok(u) = keys.unprotect(&mut copy, pn_offset, largest) {
        let range = u.payload_range();
        assert!(range.end + packet::TAG_LEN == packet.len());
        for frame in Frames::new(&copy[range], ty) {
            let _ = frame;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, datagram)) = data.split_first() else { return };
    let short_dcid_len = usize::from(cfg & 0x1f) % 21;
    let grease = cfg & 0x80 != 0;
    let keys = keys();

    let mut rest = datagram;
    while !rest.is_empty() {
        let Ok(parsed) = packet::parse(rest, short_dcid_len, grease) else { break };
        assert!(parsed.len > 0 && parsed.len <= rest.len());
        let this = &rest[..parsed.len];
        if let Some(pn_offset) = parsed.pn_offset {
            assert!(pn_offset <= parsed.len);
        }

        let mut buf = [0u8; 128];
        match parsed.header {
            Header::Long(h) => {
                // Re-emit with this packet's packet-number length and no payload.
                let pn_len = usize::from(this[0] & 0x03) + 1;
                let mut w = Writer::new(&mut buf);
                if let Ok(offsets) = h.emit(&mut w, 0, pn_len) {
                    let len = w.position();
                    offsets.set_length(&mut buf, len).unwrap();
                    let again = packet::parse(&buf[..len], short_dcid_len, grease).unwrap();
                    assert_eq!(again.header, parsed.header);
                    assert_eq!(again.pn_offset, Some(offsets.pn_offset));
                    assert_eq!(again.len, len);
                }
                let pn_offset = parsed.pn_offset.expect("long headers carry a packet number");
                let ty = parsed.header.packet_type().expect("long headers carry frames");
                if ty == PacketType::Initial {
                    // As a server: keys from this packet's DCID.
                    if let Ok(own) = packet::initial_keys(&RustCrypto, h.version, h.dcid) {
                        try_unprotect(&own.client, this, pn_offset, None, ty);
                    }
                    // As either side of RFC 9001's example connection.
                    let rfc = if h.version == Version::V1 { &keys.rfc_v1 } else { &keys.rfc_v2 };
                    try_unprotect(&rfc.client, this, pn_offset, None, ty);
                    try_unprotect(&rfc.server, this, pn_offset, None, ty);
                }
            }
            Header::Short(h) => {
                assert_eq!(h.dcid.len(), short_dcid_len);
                let pn_len = usize::from(this[0] & 0x03) + 1;
                let mut w = Writer::new(&mut buf);
                let pn_offset = h.emit(&mut w, false, 0, pn_len).unwrap();
                let len = w.position();
                let again = packet::parse(&buf[..len], short_dcid_len, grease).unwrap();
                assert_eq!(again.header, parsed.header);
                assert_eq!(again.pn_offset, Some(pn_offset));
                let pn_offset = parsed.pn_offset.expect("short headers carry a packet number");
                try_unprotect(
                    &keys.chacha,
                    this,
                    pn_offset,
                    Some(CHACHA_LARGEST),
                    PacketType::OneRtt,
                );
            }
            Header::Retry(r) => {
                let _ = packet::verify_retry(&RustCrypto, r.version, &RFC_DCID, this);
                assert!(!r.token.is_empty());
            }
            Header::VersionNegotiation(vn) => {
                assert!(vn.versions().count() * 4 <= this.len());
                let _ = vn.choose(Version::SUPPORTED);
                let _ = vn.is_valid_for_client(Version::V1, &RFC_DCID, &RFC_DCID);
            }
            Header::UnsupportedVersion(u) => {
                assert!(!u.version.is_supported() && u.version != Version::NEGOTIATION);
            }
        }
        rest = &rest[parsed.len..];
    }
});
