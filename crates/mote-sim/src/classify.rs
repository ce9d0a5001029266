//! Naming the QUIC packets in a datagram for the trace, from their unprotected header
//! bits only (no keys needed): the long-header type, short header, Retry or Version
//! Negotiation of each coalesced packet (RFC 9000 §12.2, §17).

use core::fmt;

use mote_quic::packet::{self, Header, LongType};

/// The type of one QUIC packet inside a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PacketKind {
    /// Long header, Initial.
    Initial,
    /// Long header, 0-RTT.
    ZeroRtt,
    /// Long header, Handshake.
    Handshake,
    /// Long header, Retry.
    Retry,
    /// Short header (1-RTT).
    OneRtt,
    /// Version Negotiation.
    VersionNegotiation,
    /// A long header of a version this build does not know.
    UnsupportedVersion,
    /// Bytes that do not parse as a QUIC packet (the rest of the datagram is skipped).
    Invalid,
}

impl PacketKind {
    /// The lowercase name used in traces.
    pub const fn name(self) -> &'static str {
        match self {
            PacketKind::Initial => "initial",
            PacketKind::ZeroRtt => "0rtt",
            PacketKind::Handshake => "handshake",
            PacketKind::Retry => "retry",
            PacketKind::OneRtt => "1rtt",
            PacketKind::VersionNegotiation => "vn",
            PacketKind::UnsupportedVersion => "unsupported_version",
            PacketKind::Invalid => "invalid",
        }
    }
}

impl fmt::Display for PacketKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the simulator labels traced datagrams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Classifier {
    /// Parse each datagram as coalesced QUIC packets.
    #[default]
    Quic,
    /// Record no packet types (for non-QUIC payloads).
    None,
}

impl Classifier {
    /// The packet types in `datagram`, in order.
    pub fn classify(self, datagram: &[u8]) -> Vec<PacketKind> {
        match self {
            Classifier::Quic => quic_packets(datagram),
            Classifier::None => Vec::new(),
        }
    }
}

/// The QUIC packets coalesced in `datagram`. Trailing zero bytes after a packet are taken
/// as padding and not reported.
pub fn quic_packets(datagram: &[u8]) -> Vec<PacketKind> {
    let mut kinds = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() && rest.iter().any(|&b| b != 0) {
        // The Destination Connection ID length of a short header is not on the wire; 0
        // still classifies it, since a short-header packet runs to the end of the datagram.
        let Ok(parsed) = packet::parse(rest, 0, false) else {
            kinds.push(PacketKind::Invalid);
            break;
        };
        kinds.push(match parsed.header {
            Header::Long(h) => match h.ty {
                LongType::Initial => PacketKind::Initial,
                LongType::ZeroRtt => PacketKind::ZeroRtt,
                LongType::Handshake => PacketKind::Handshake,
                LongType::Retry => PacketKind::Retry,
            },
            Header::Short(_) => PacketKind::OneRtt,
            Header::Retry(_) => PacketKind::Retry,
            Header::VersionNegotiation(_) => PacketKind::VersionNegotiation,
            Header::UnsupportedVersion(_) => PacketKind::UnsupportedVersion,
        });
        match rest.get(parsed.len..) {
            Some(next) if parsed.len > 0 => rest = next,
            _ => break,
        }
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;
    use mote_quic::Version;

    /// A long-header packet of type bits `ty` (v1) with an empty payload of `len` bytes.
    fn long(ty: u8, len: u8) -> Vec<u8> {
        let mut p = vec![0xc0 | (ty << 4)];
        p.extend_from_slice(&Version::V1.0.to_be_bytes());
        p.extend_from_slice(&[1, 0xaa, 1, 0xbb]); // DCID, SCID
        if ty == 0 {
            p.push(0); // empty token
        }
        p.push(len); // 1-byte varint length
        p.extend(core::iter::repeat_n(0x11, usize::from(len)));
        p
    }

    #[test]
    fn coalesced_long_then_short() {
        let mut d = long(0, 20);
        d.extend(long(2, 30));
        d.extend([0x40, 1, 2, 3, 4, 5]);
        assert_eq!(
            quic_packets(&d),
            [PacketKind::Initial, PacketKind::Handshake, PacketKind::OneRtt]
        );
    }

    #[test]
    fn padding_invalid_and_vn() {
        let mut d = long(1, 10);
        d.extend([0u8; 40]);
        assert_eq!(quic_packets(&d), [PacketKind::ZeroRtt]);
        assert_eq!(quic_packets(&[0x00, 0x01]), [PacketKind::Invalid]);
        let vn = [0x80, 0, 0, 0, 0, 1, 0xaa, 1, 0xbb, 0, 0, 0, 1];
        assert_eq!(quic_packets(&vn), [PacketKind::VersionNegotiation]);
        assert!(Classifier::None.classify(&vn).is_empty());
    }
}
