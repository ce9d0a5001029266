//! What the relay can read in a datagram without keys: the invariant and long-header
//! fields of each coalesced QUIC packet (RFC 8999 §5, RFC 9000 §17.2). Garbage yields an
//! `invalid` entry, never a panic: parsing goes through mote-quic's bounds-checked parser.

use mote_quic::packet::{self, Header, LongType};
use serde_json::{json, Value};

/// Most packets listed per datagram (a datagram of 1-byte garbage cannot make the log grow
/// without bound; real datagrams coalesce at most a handful).
const MAX_PACKETS: usize = 8;

/// One QUIC packet of a datagram, as far as the relay can see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// `initial`, `0rtt`, `handshake`, `retry`, `1rtt`, `vn`, `unknown_version` or
    /// `invalid`.
    pub kind: &'static str,
    /// The version field of a long header.
    pub version: Option<u32>,
    /// Destination Connection ID (long headers only: a short header's length is not on
    /// the wire).
    pub dcid: Vec<u8>,
    /// Source Connection ID (long headers).
    pub scid: Vec<u8>,
    /// Token length and FNV-1a hash (Initial and Retry).
    pub token: Option<(usize, u64)>,
    /// Bytes of this packet in the datagram.
    pub len: usize,
}

impl PacketInfo {
    /// The record's JSON form.
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "type": self.kind, "len": self.len });
        if let Some(version) = self.version {
            v["version"] = json!(format!("0x{version:08x}"));
            v["dcid"] = json!(hex(&self.dcid));
            v["scid"] = json!(hex(&self.scid));
        }
        if let Some((len, hash)) = self.token {
            v["token_len"] = json!(len);
            v["token_hash"] = json!(format!("{hash:016x}"));
        }
        v
    }
}

/// Whether the datagram starts with a Version Negotiation packet (which the corruption
/// impairment must never touch, as the interop runner's simulator guarantees).
pub fn is_version_negotiation(datagram: &[u8]) -> bool {
    // RFC 8999 §6: a long header (high bit set) with version 0.
    matches!(datagram, [first, 0, 0, 0, 0, ..] if first & 0x80 != 0)
}

/// The packets coalesced in `datagram`, in order.
pub fn packets(datagram: &[u8]) -> Vec<PacketInfo> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() && out.len() < MAX_PACKETS {
        // Trailing zeros after a long-header packet are padding (RFC 9000 §12.2 lets an
        // endpoint pad with them); they are not another packet.
        if rest.iter().all(|&b| b == 0) {
            break;
        }
        let info = match packet::parse(rest, 0, true) {
            Ok(parsed) => {
                let len = parsed.len.min(rest.len());
                match parsed.header {
                    Header::Long(h) => PacketInfo {
                        kind: match h.ty {
                            LongType::Initial => "initial",
                            LongType::ZeroRtt => "0rtt",
                            LongType::Handshake => "handshake",
                            LongType::Retry => "retry",
                        },
                        version: Some(h.version.0),
                        dcid: h.dcid.to_vec(),
                        scid: h.scid.to_vec(),
                        token: (h.ty == LongType::Initial).then(|| (h.token.len(), fnv1a(h.token))),
                        len,
                    },
                    Header::Short(_) => PacketInfo::bare("1rtt", len),
                    Header::Retry(r) => PacketInfo {
                        kind: "retry",
                        version: Some(r.version.0),
                        dcid: r.dcid.to_vec(),
                        scid: r.scid.to_vec(),
                        token: Some((r.token.len(), fnv1a(r.token))),
                        len,
                    },
                    Header::VersionNegotiation(v) => PacketInfo {
                        kind: "vn",
                        version: Some(0),
                        dcid: v.dcid.to_vec(),
                        scid: v.scid.to_vec(),
                        token: None,
                        len,
                    },
                    Header::UnsupportedVersion(u) => PacketInfo {
                        kind: "unknown_version",
                        version: Some(u.version.0),
                        dcid: u.dcid.to_vec(),
                        scid: u.scid.to_vec(),
                        token: None,
                        len,
                    },
                }
            }
            Err(_) => PacketInfo::bare("invalid", rest.len()),
        };
        let consumed = info.len;
        out.push(info);
        match rest.get(consumed..) {
            Some(next) if consumed > 0 => rest = next,
            _ => break,
        }
    }
    out
}

impl PacketInfo {
    /// A packet of which only the kind and extent are known.
    fn bare(kind: &'static str, len: usize) -> Self {
        PacketInfo { kind, version: None, dcid: Vec::new(), scid: Vec::new(), token: None, len }
    }
}

/// FNV-1a, 64 bits: enough to tell whether a client's Initial carries the token a Retry
/// gave it, without writing tokens into logs.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9001 Appendix A.4: the v1 Retry packet (token "token").
    const RETRY_V1: &str =
        "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn retry_of_rfc9001_a4() {
        let p = packets(&unhex(RETRY_V1));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].kind, "retry");
        assert_eq!(p[0].version, Some(1));
        assert_eq!(p[0].scid, unhex("f067a5502a4262b5"));
        assert_eq!(p[0].token, Some((5, fnv1a(b"token"))));
    }

    #[test]
    fn coalesced_initial_and_handshake_then_padding() {
        // Initial: DCID 8394c8f03e515708, empty SCID, token "ab", 3 bytes of PN + payload.
        let mut d =
            unhex("c0000000010883 94c8f03e515708 00 02 6162 03 010203".replace(' ', "").as_str());
        let initial_len = d.len();
        // Handshake (type bits 0b10), DCID 1 byte, SCID 1 byte, 2 bytes.
        d.extend(unhex("e00000000101aa01bb020909"));
        d.extend([0u8; 20]);
        let p = packets(&d);
        assert_eq!(p.iter().map(|p| p.kind).collect::<Vec<_>>(), ["initial", "handshake"]);
        assert_eq!(p[0].len, initial_len);
        assert_eq!(p[0].token, Some((2, fnv1a(b"ab"))));
        assert_eq!(p[1].dcid, [0xaa]);
    }

    #[test]
    fn version_negotiation_is_recognised_and_never_corruptible() {
        let vn = unhex("80000000000101020103000000016b3343cf");
        assert!(is_version_negotiation(&vn));
        assert_eq!(packets(&vn)[0].kind, "vn");
        assert!(!is_version_negotiation(&unhex(RETRY_V1)));
        assert!(!is_version_negotiation(&[0x40, 0, 0, 0, 0]));
    }

    #[test]
    fn garbage_never_panics() {
        // Every prefix of a Retry, every 1- and 2-byte datagram, a long header whose
        // Length points past the end.
        let retry = unhex(RETRY_V1);
        for n in 0..retry.len() {
            let _ = packets(&retry[..n]);
        }
        for a in 0..=255u8 {
            let _ = packets(&[a]);
            for b in [0u8, 1, 0x40, 0xff] {
                let _ = packets(&[a, b]);
            }
        }
        let p = packets(&unhex("c000000001000000ff"));
        assert_eq!(p[0].kind, "invalid");
        assert!(packets(&[1u8; 4000]).len() <= MAX_PACKETS);
    }
}
