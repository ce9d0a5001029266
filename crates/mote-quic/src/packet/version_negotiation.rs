//! Version Negotiation packets (RFC 9000 §6, §17.2.1; RFC 8999 §6).

use super::header::FORM_BIT;
use crate::coding::{BufferTooSmall, Writer};
use crate::version::Version;

/// A Version Negotiation packet (RFC 9000 §17.2.1):
///
/// ```text
/// Version Negotiation Packet {
///   Header Form (1) = 1, Unused (7), Version (32) = 0,
///   Destination Connection ID Length (8), Destination Connection ID (0..2040),
///   Source Connection ID Length (8), Source Connection ID (0..2040),
///   Supported Version (32) ...,
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionNegotiation<'a> {
    /// Destination Connection ID: the client's Source Connection ID, echoed.
    pub dcid: &'a [u8],
    /// Source Connection ID: the client's Destination Connection ID, echoed.
    pub scid: &'a [u8],
    /// The Supported Version fields, raw (a multiple of 4 bytes when parsed).
    pub versions: &'a [u8],
}

impl<'a> VersionNegotiation<'a> {
    /// The versions the server listed, in order.
    pub fn versions(&self) -> impl Iterator<Item = Version> + 'a {
        self.versions.chunks_exact(4).filter_map(|c| match *c {
            [a, b, c, d] => Some(Version(u32::from_be_bytes([a, b, c, d]))),
            _ => None,
        })
    }

    /// True if `version` is listed.
    pub fn lists(&self, version: Version) -> bool {
        self.versions().any(|v| v == version)
    }

    /// Whether a client acts on this packet at all (RFC 9000 §6.2, §17.2.1). It must be
    /// ignored if:
    ///
    /// * it lists the version the client chose ("A client MUST discard a Version
    ///   Negotiation packet that lists the QUIC version selected by the client"), or
    /// * its connection IDs do not echo the client's: the Destination Connection ID must be
    ///   the client's Source Connection ID and vice versa (RFC 9000 §17.2.1 "the client
    ///   MUST check ... and discard the packet" otherwise).
    ///
    /// (A client also discards Version Negotiation once it has processed any other packet
    /// from the server; that is connection state, not checked here.)
    pub fn is_valid_for_client(
        &self,
        chosen_version: Version,
        client_dcid: &[u8],
        client_scid: &[u8],
    ) -> bool {
        self.dcid == client_scid && self.scid == client_dcid && !self.lists(chosen_version)
    }

    /// The first version in `preference` (e.g. [`Version::SUPPORTED`]) that the server
    /// listed; `None` means the connection attempt fails (RFC 9000 §6.2). Reserved
    /// (greasing) versions are never chosen.
    pub fn choose(&self, preference: &[Version]) -> Option<Version> {
        preference.iter().copied().find(|&v| !v.is_reserved() && self.lists(v))
    }
}

/// Writes a Version Negotiation packet answering a long-header packet that carried
/// `received_dcid` and `received_scid` (RFC 9000 §17.2.1: "The server MUST include the
/// value from the Source Connection ID field of the packet it receives in the Destination
/// Connection ID field. The value for Source Connection ID MUST be copied from the
/// Destination Connection ID of the received packet").
///
/// `random` supplies the seven Unused bits of the first byte (RFC 9000 §17.2.1: "a server
/// SHOULD set the most significant bit of this field (0x40) to 1 so that Version
/// Negotiation packets appear to have the Fixed Bit field", which is done here). `versions`
/// should include a reserved version for greasing (RFC 9000 §6.3). Connection IDs may be
/// up to 255 bytes (RFC 8999); longer ones fail, as does a full buffer.
pub fn emit_version_negotiation(
    w: &mut Writer<'_>,
    random: u8,
    received_dcid: &[u8],
    received_scid: &[u8],
    versions: &[Version],
) -> Result<(), BufferTooSmall> {
    let dcid_len = u8::try_from(received_scid.len()).map_err(|_| BufferTooSmall)?;
    let scid_len = u8::try_from(received_dcid.len()).map_err(|_| BufferTooSmall)?;
    w.put_u8(FORM_BIT | super::FIXED_BIT | (random & 0x3f))?;
    w.put_u32(Version::NEGOTIATION.0)?;
    w.put_u8(dcid_len)?;
    w.put_slice(received_scid)?;
    w.put_u8(scid_len)?;
    w.put_slice(received_dcid)?;
    for v in versions {
        w.put_u32(v.0)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{parse, Header};

    #[test]
    fn server_emits_client_parses() {
        let client_dcid = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let client_scid = [9u8, 10];
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        emit_version_negotiation(
            &mut w,
            0xa5,
            &client_dcid,
            &client_scid,
            &[Version(0x1a2a3a4a), Version::V1],
        )
        .unwrap();
        let n = w.position();
        assert_eq!(buf[0], 0xc0 | (0xa5 & 0x3f));
        let parsed = parse(&buf[..n], 0, false).unwrap();
        let Header::VersionNegotiation(vn) = parsed.header else { panic!("not VN") };
        assert_eq!(vn.dcid, client_scid);
        assert_eq!(vn.scid, client_dcid);
        assert!(vn.lists(Version::V1));
        assert_eq!(vn.choose(Version::SUPPORTED), Some(Version::V1));
        // The client offered V1, which is listed: it must ignore the packet.
        assert!(!vn.is_valid_for_client(Version::V1, &client_dcid, &client_scid));
        // Offering V2 makes it actionable, but only with matching CIDs.
        assert!(vn.is_valid_for_client(Version::V2, &client_dcid, &client_scid));
        assert!(!vn.is_valid_for_client(Version::V2, &client_scid, &client_dcid));
        // Never choose a greasing version.
        assert_eq!(vn.choose(&[Version(0x1a2a3a4a)]), None);
    }

    #[test]
    fn long_cids_echo_up_to_255() {
        let long = [7u8; 255];
        let mut buf = [0u8; 600];
        let mut w = Writer::new(&mut buf);
        emit_version_negotiation(&mut w, 0, &long, &long, &[Version::V1]).unwrap();
        let mut w = Writer::new(&mut buf);
        assert_eq!(
            emit_version_negotiation(&mut w, 0, &[0; 256], &[], &[Version::V1]),
            Err(BufferTooSmall)
        );
    }
}
