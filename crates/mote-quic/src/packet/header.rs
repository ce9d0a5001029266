//! Packet headers (RFC 9000 §17, RFC 8999, RFC 9369 §3.2): parsing a datagram's first packet
//! before header protection is removed, and emitting headers.
//!
//! Parsing borrows from the datagram and never reads past it. Connection IDs and tokens are
//! returned as slices, so a caller that goes on to remove protection in place copies what it
//! needs (e.g. into a [`ConnectionId`](crate::ConnectionId)) first.

use super::version_negotiation::VersionNegotiation;
use super::{LongType, PacketType};
use crate::cid::MAX_CID_LEN;
use crate::coding::{BufferTooSmall, Reader, Truncated, VarInt, Writer};
use crate::error::WireError;
use crate::version::Version;
use mote_crypto::TAG_LEN;

/// RFC 9000 §17.2/§17.3: the Header Form bit, 1 for long headers.
pub const FORM_BIT: u8 = 0x80;
/// RFC 9000 §17.2/§17.3: the Fixed Bit, 1 unless the peer greases it (RFC 9287).
pub const FIXED_BIT: u8 = 0x40;
/// RFC 9000 §17.3.1: the Spin Bit of a short header (not header-protected).
pub const SPIN_BIT: u8 = 0x20;
/// Bytes the Length field of a long header is emitted with, so it can be patched once the
/// payload is known ([`LongHeaderOffsets::set_length`]). A 2-byte varint holds up to 16383.
pub const LENGTH_FIELD_LEN: usize = 2;

/// A long header of a packet that carries a packet number: Initial, 0-RTT or Handshake
/// (RFC 9000 §17.2). Used both as parse output and as emit input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongHeader<'a> {
    /// The packet type; never [`LongType::Retry`] when parsed (see [`Retry`]).
    pub ty: LongType,
    /// The version (one this build supports when parsed).
    pub version: Version,
    /// Destination Connection ID (at most 20 bytes).
    pub dcid: &'a [u8],
    /// Source Connection ID (at most 20 bytes).
    pub scid: &'a [u8],
    /// The Token of an Initial packet (RFC 9000 §17.2.2); empty for other types.
    pub token: &'a [u8],
}

/// A short (1-RTT) header (RFC 9000 §17.3.1), before header protection is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortHeader<'a> {
    /// Destination Connection ID, of the length the caller said its CIDs have.
    pub dcid: &'a [u8],
    /// The latency Spin Bit (RFC 9000 §17.4).
    pub spin: bool,
}

/// A Retry packet (RFC 9000 §17.2.5). The Original Destination Connection ID is not on the
/// wire; it enters only the integrity tag (RFC 9001 §5.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry<'a> {
    /// The version.
    pub version: Version,
    /// Destination Connection ID (the client's Source Connection ID).
    pub dcid: &'a [u8],
    /// Source Connection ID chosen by the server; the client uses it as its new DCID.
    pub scid: &'a [u8],
    /// Retry Token: everything between the SCID and the 16-byte integrity tag. Never empty
    /// when parsed (RFC 9000 §17.2.5.2: a client discards a Retry with an empty token).
    pub token: &'a [u8],
}

/// A long header of a version this build does not implement: only the version-independent
/// fields of RFC 8999 §5.1, enough to answer with Version Negotiation. Connection IDs may be
/// up to 255 bytes long here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsupportedVersion<'a> {
    /// The version the peer used.
    pub version: Version,
    /// Destination Connection ID (0 to 255 bytes).
    pub dcid: &'a [u8],
    /// Source Connection ID (0 to 255 bytes).
    pub scid: &'a [u8],
}

/// A packet header as parsed from the start of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header<'a> {
    /// Initial, 0-RTT or Handshake.
    Long(LongHeader<'a>),
    /// 1-RTT.
    Short(ShortHeader<'a>),
    /// Retry.
    Retry(Retry<'a>),
    /// Version Negotiation (version 0).
    VersionNegotiation(VersionNegotiation<'a>),
    /// A long header of an unknown version (a server may answer with Version Negotiation
    /// if the datagram is at least 1200 bytes, RFC 9000 §6.1, §14.1).
    UnsupportedVersion(UnsupportedVersion<'a>),
}

impl Header<'_> {
    /// The packet type, for headers of packets that carry frames.
    pub fn packet_type(&self) -> Option<PacketType> {
        match self {
            Header::Long(h) => match h.ty {
                LongType::Initial => Some(PacketType::Initial),
                LongType::ZeroRtt => Some(PacketType::ZeroRtt),
                LongType::Handshake => Some(PacketType::Handshake),
                LongType::Retry => None,
            },
            Header::Short(_) => Some(PacketType::OneRtt),
            _ => None,
        }
    }

    /// The Destination Connection ID, which every header carries.
    pub fn dcid(&self) -> &[u8] {
        match self {
            Header::Long(h) => h.dcid,
            Header::Short(h) => h.dcid,
            Header::Retry(h) => h.dcid,
            Header::VersionNegotiation(h) => h.dcid,
            Header::UnsupportedVersion(h) => h.dcid,
        }
    }
}

/// The first packet of a datagram, parsed up to its (still protected) packet number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed<'a> {
    /// The header fields.
    pub header: Header<'a>,
    /// Offset of the protected packet number from the start of the packet; `None` for
    /// Retry, Version Negotiation and unsupported versions, which carry none.
    pub pn_offset: Option<usize>,
    /// Bytes this packet occupies. For Initial, 0-RTT and Handshake packets this comes
    /// from the Length field and another coalesced packet may follow (RFC 9000 §12.2); all
    /// other packets extend to the end of the datagram.
    pub len: usize,
}

/// RFC 9000 §17.2, §17.3.1: a packet whose Fixed Bit is 0 is not a valid packet and is
/// discarded, unless this endpoint advertised `grease_quic_bit` (RFC 9287 §3).
fn check_fixed_bit(first: u8, grease_quic_bit: bool) -> Result<(), WireError> {
    if first & FIXED_BIT == 0 && !grease_quic_bit {
        return Err(WireError::InvalidHeader);
    }
    Ok(())
}

/// RFC 8999 §5.1: a connection ID is a one-byte length and that many bytes (up to 255 in
/// the invariants; versions 1 and 2 then limit it to 20).
fn read_cid<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Truncated> {
    let len = r.u8()?;
    r.bytes(usize::from(len))
}

/// Parses the first packet in `datagram`, before header protection is removed.
///
/// `short_dcid_len` is the length of this endpoint's connection IDs, needed for short
/// headers, which do not carry it (RFC 9000 §17.3.1). `grease_quic_bit` is true when this
/// endpoint advertised the `grease_quic_bit` transport parameter (RFC 9287), so that a Fixed
/// Bit of 0 is accepted.
///
/// Errors mean "drop the packet" (and, for a length past the end, the rest of the
/// datagram): [`WireError::Truncated`] for fields past the end, [`WireError::InvalidHeader`]
/// for a cleared Fixed Bit, a connection ID over 20 bytes in a known version, a Version
/// Negotiation list that is not a multiple of 4 bytes, or a Retry without a token.
pub fn parse(
    datagram: &[u8],
    short_dcid_len: usize,
    grease_quic_bit: bool,
) -> Result<Parsed<'_>, WireError> {
    let mut r = Reader::new(datagram);
    let first = r.u8()?;

    if first & FORM_BIT == 0 {
        // RFC 9000 §17.3.1: 1-RTT Packet { Header Form (1) = 0, Fixed Bit (1) = 1,
        // Spin Bit (1), Reserved Bits (2), Key Phase (1), Packet Number Length (2),
        // Destination Connection ID (0..160), Packet Number (8..32), Packet Payload (8..) }
        check_fixed_bit(first, grease_quic_bit)?;
        let dcid = r.bytes(short_dcid_len)?;
        return Ok(Parsed {
            header: Header::Short(ShortHeader { dcid, spin: first & SPIN_BIT != 0 }),
            pn_offset: Some(r.position()),
            len: datagram.len(),
        });
    }

    // RFC 8999 §5.1: Long Header Packet { Header Form (1) = 1, Version-Specific Bits (7),
    // Version (32), Destination Connection ID Length (8), Destination Connection ID (0..2040),
    // Source Connection ID Length (8), Source Connection ID (0..2040),
    // Version-Specific Data (..) }
    let version = Version(r.u32()?);
    let dcid = read_cid(&mut r)?;
    let scid = read_cid(&mut r)?;

    if version == Version::NEGOTIATION {
        // RFC 9000 §17.2.1: the rest is a list of 32-bit versions. The unused bits of the
        // first byte (including the Fixed Bit) are arbitrary.
        let versions = r.rest();
        if versions.len() & 3 != 0 {
            return Err(WireError::InvalidHeader);
        }
        return Ok(Parsed {
            header: Header::VersionNegotiation(VersionNegotiation { dcid, scid, versions }),
            pn_offset: None,
            len: datagram.len(),
        });
    }

    if !version.is_supported() {
        // RFC 8999 §5.1: nothing past the connection IDs can be interpreted.
        return Ok(Parsed {
            header: Header::UnsupportedVersion(UnsupportedVersion { version, dcid, scid }),
            pn_offset: None,
            len: datagram.len(),
        });
    }

    // RFC 9000 §17.2: "Endpoints that receive a version 1 long header with a value larger
    // than 20 MUST drop the packet." (Likewise v2, RFC 9369 §3.)
    if dcid.len() > MAX_CID_LEN || scid.len() > MAX_CID_LEN {
        return Err(WireError::InvalidHeader);
    }
    check_fixed_bit(first, grease_quic_bit)?;

    // RFC 9000 §17.2 / RFC 9369 §3.2: the type bits are version-specific.
    let ty = version.long_type((first >> 4) & 0b11);
    let token = match ty {
        LongType::Retry => {
            // RFC 9000 §17.2.5: Retry Token (..), Retry Integrity Tag (128).
            let rest = r.rest();
            let token_len = rest.len().checked_sub(TAG_LEN).ok_or(WireError::Truncated)?;
            let token = rest.get(..token_len).ok_or(WireError::Truncated)?;
            // RFC 9000 §17.2.5.2: "A client MUST discard a Retry packet with a zero-length
            // Retry Token field."
            if token.is_empty() {
                return Err(WireError::InvalidHeader);
            }
            return Ok(Parsed {
                header: Header::Retry(Retry { version, dcid, scid, token }),
                pn_offset: None,
                len: datagram.len(),
            });
        }
        // RFC 9000 §17.2.2: Token Length (i), Token (..).
        LongType::Initial => r.varint_prefixed()?,
        LongType::ZeroRtt | LongType::Handshake => &[],
    };

    // RFC 9000 §17.2: Length (i) covers the Packet Number and the Payload.
    let length = r.varint()?.into_inner();
    let pn_offset = r.position();
    if length > r.remaining() as u64 {
        return Err(WireError::Truncated);
    }
    Ok(Parsed {
        header: Header::Long(LongHeader { ty, version, dcid, scid, token }),
        pn_offset: Some(pn_offset),
        // Cannot overflow: length <= remaining = datagram.len() - pn_offset.
        len: pn_offset + length as usize,
    })
}

/// RFC 9000 §17.1: packet numbers are sent in 1 to 4 bytes; the header's two low bits hold
/// the length minus one.
fn pn_len_bits(pn_len: usize) -> Result<u8, BufferTooSmall> {
    match pn_len {
        1..=4 => Ok((pn_len - 1) as u8),
        _ => Err(BufferTooSmall),
    }
}

/// Writes the low `pn_len` bytes of `pn` (RFC 9000 §17.1).
fn put_pn(w: &mut Writer<'_>, pn: u64, pn_len: usize) -> Result<(), BufferTooSmall> {
    let bytes = pn.to_be_bytes();
    let start = 8usize.checked_sub(pn_len).ok_or(BufferTooSmall)?;
    w.put_slice(bytes.get(start..).ok_or(BufferTooSmall)?)
}

/// Where [`LongHeader::emit`] put the fields that are filled in or protected later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongHeaderOffsets {
    /// Offset of the [`LENGTH_FIELD_LEN`]-byte Length field.
    pub length_offset: usize,
    /// Offset of the packet number (what [`super::PacketKeys::protect`] takes).
    pub pn_offset: usize,
    /// Bytes of packet number written.
    pub pn_len: usize,
}

impl LongHeaderOffsets {
    /// Patches the Length field once the packet is complete. `packet_len` is the whole
    /// packet: header, payload and the [`TAG_LEN`] bytes reserved for the AEAD tag. Fails if
    /// the Length does not fit in [`LENGTH_FIELD_LEN`] bytes or `packet` is too short.
    pub fn set_length(&self, packet: &mut [u8], packet_len: usize) -> Result<(), BufferTooSmall> {
        // RFC 9000 §17.2: Length is "the length of the remainder of the packet (that is,
        // the Packet Number and Payload fields) in bytes".
        let length = packet_len
            .checked_sub(self.pn_offset)
            .and_then(|l| VarInt::new(l as u64))
            .ok_or(BufferTooSmall)?;
        let field = packet.get_mut(self.length_offset..).ok_or(BufferTooSmall)?;
        crate::coding::encode_varint_sized(length, LENGTH_FIELD_LEN, field)
            .map(|_| ())
            .ok_or(BufferTooSmall)
    }
}

impl LongHeader<'_> {
    /// Writes this header with packet number `pn` truncated to `pn_len` bytes (1 to 4, see
    /// [`super::number::encoded_len`]), the Fixed Bit set, reserved bits zero and the Length
    /// field as a [`LENGTH_FIELD_LEN`]-byte placeholder. The token is written only for
    /// Initial packets. Fails for [`LongType::Retry`] (see [`Retry::emit`]), connection IDs
    /// over 20 bytes, a bad `pn_len`, or a full buffer.
    pub fn emit(
        &self,
        w: &mut Writer<'_>,
        pn: u64,
        pn_len: usize,
    ) -> Result<LongHeaderOffsets, BufferTooSmall> {
        if self.ty == LongType::Retry
            || self.dcid.len() > MAX_CID_LEN
            || self.scid.len() > MAX_CID_LEN
        {
            return Err(BufferTooSmall);
        }
        // RFC 9000 §17.2: Header Form (1) = 1, Fixed Bit (1) = 1, Long Packet Type (2),
        // Reserved Bits (2), Packet Number Length (2).
        let first = FORM_BIT
            | FIXED_BIT
            | (self.version.long_type_bits(self.ty) << 4)
            | pn_len_bits(pn_len)?;
        w.put_u8(first)?;
        w.put_u32(self.version.0)?;
        w.put_u8(self.dcid.len() as u8)?;
        w.put_slice(self.dcid)?;
        w.put_u8(self.scid.len() as u8)?;
        w.put_slice(self.scid)?;
        if self.ty == LongType::Initial {
            w.put_varint_u64(self.token.len() as u64)?;
            w.put_slice(self.token)?;
        }
        let length_offset = w.position();
        w.put_varint_sized(VarInt::ZERO, LENGTH_FIELD_LEN)?;
        let pn_offset = w.position();
        put_pn(w, pn, pn_len)?;
        Ok(LongHeaderOffsets { length_offset, pn_offset, pn_len })
    }
}

impl ShortHeader<'_> {
    /// Writes this 1-RTT header with the given Key Phase and packet number `pn` truncated
    /// to `pn_len` bytes (1 to 4); returns the packet number offset. Reserved bits are zero
    /// and the Fixed Bit is set (RFC 9000 §17.3.1).
    pub fn emit(
        &self,
        w: &mut Writer<'_>,
        key_phase: bool,
        pn: u64,
        pn_len: usize,
    ) -> Result<usize, BufferTooSmall> {
        let mut first = FIXED_BIT | pn_len_bits(pn_len)?;
        if self.spin {
            first |= SPIN_BIT;
        }
        if key_phase {
            first |= super::KEY_PHASE_BIT;
        }
        w.put_u8(first)?;
        w.put_slice(self.dcid)?;
        let pn_offset = w.position();
        put_pn(w, pn, pn_len)?;
        Ok(pn_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    // RFC 9001 A.2's unprotected client Initial header, with a 4-byte payload stand-in so
    // the Length (0x449e = 1182) is what the RFC shows.
    const INITIAL_HEADER: [u8; 22] = hex!("c300000001088394c8f03e5157080000449e00000002");

    fn initial_packet() -> [u8; 1200] {
        let mut p = [0u8; 1200];
        p[..22].copy_from_slice(&INITIAL_HEADER);
        p
    }

    #[test]
    fn parses_initial() {
        let p = initial_packet();
        let parsed = parse(&p, 0, false).unwrap();
        assert_eq!(parsed.pn_offset, Some(18));
        assert_eq!(parsed.len, 1200);
        let Header::Long(h) = parsed.header else { panic!("not long") };
        assert_eq!(h.ty, LongType::Initial);
        assert_eq!(h.version, Version::V1);
        assert_eq!(h.dcid, hex!("8394c8f03e515708"));
        assert!(h.scid.is_empty() && h.token.is_empty());
        assert_eq!(parsed.header.packet_type(), Some(PacketType::Initial));
    }

    #[test]
    fn coalesced_packets() {
        // A Handshake packet with Length 3, then a short-header packet.
        let datagram = hex!("e0 00000001 01aa 00 03 000102  40bb 0102");
        let first = parse(&datagram, 1, false).unwrap();
        assert_eq!(first.len, 12);
        assert_eq!(first.pn_offset, Some(9));
        let Header::Long(h) = first.header else { panic!("not long") };
        assert_eq!(h.ty, LongType::Handshake);
        let second = parse(&datagram[first.len..], 1, false).unwrap();
        assert_eq!(second.len, 4);
        assert_eq!(second.pn_offset, Some(2));
        assert_eq!(second.header, Header::Short(ShortHeader { dcid: &[0xbb], spin: false }));
    }

    #[test]
    fn truncated_header_at_every_length() {
        let p = initial_packet();
        // Up to and including the Length field (pn_offset 18) every prefix is truncated;
        // beyond it, the Length points past the end.
        for n in 0..1200 {
            assert_eq!(parse(&p[..n], 0, false), Err(WireError::Truncated), "{n}");
        }
        let short = hex!("4001020304");
        for n in 0..4 {
            assert_eq!(parse(&short[..n], 4, false), Err(WireError::Truncated));
        }
        let retry =
            hex!("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba");
        // A Retry has no length field: cutting it short shows only as a shorter token (and
        // a failed integrity check), until there is no room for a token and a tag.
        for n in 0..31 {
            assert_eq!(parse(&retry[..n], 0, false), Err(WireError::Truncated), "{n}");
        }
        assert_eq!(parse(&retry[..31], 0, false), Err(WireError::InvalidHeader));
        assert!(parse(&retry[..32], 0, false).is_ok());
    }

    #[test]
    fn length_past_end() {
        let mut p = initial_packet();
        // Length 1183 with only 1182 bytes after it.
        p[16..18].copy_from_slice(&hex!("449f"));
        assert_eq!(parse(&p, 0, false), Err(WireError::Truncated));
        // An 8-byte Length far beyond any slice.
        let h = hex!("e0 00000001 00 00 ffffffffffffffff 00");
        assert_eq!(parse(&h, 0, false), Err(WireError::Truncated));
    }

    #[test]
    fn cid_too_long_for_v1() {
        let mut p = [0u8; 64];
        p[..6].copy_from_slice(&hex!("c0 00000001 15"));
        assert_eq!(parse(&p, 0, false), Err(WireError::InvalidHeader));
        p[5] = 0;
        p[6] = 21;
        assert_eq!(parse(&p, 0, false), Err(WireError::InvalidHeader));
        // An unknown version may carry longer CIDs (RFC 8999); we can still answer it.
        let mut u = [0u8; 64];
        u[..6].copy_from_slice(&hex!("c0 1a2a3a4a 15"));
        let parsed = parse(&u, 0, false).unwrap();
        let Header::UnsupportedVersion(h) = parsed.header else { panic!("not unsupported") };
        assert_eq!(h.version, Version(0x1a2a3a4a));
        assert_eq!(h.dcid.len(), 21);
        assert_eq!(h.scid.len(), 0);
        assert_eq!(parsed.len, 64);
    }

    #[test]
    fn token_length_past_end() {
        let h = hex!("c0 00000001 00 00 05 aabb");
        assert_eq!(parse(&h, 0, false), Err(WireError::Truncated));
        let h = hex!("c0 00000001 00 00 ffffffffffffffff 00");
        assert_eq!(parse(&h, 0, false), Err(WireError::Truncated));
    }

    #[test]
    fn fixed_bit() {
        let mut p = initial_packet();
        p[0] &= !FIXED_BIT;
        assert_eq!(parse(&p, 0, false), Err(WireError::InvalidHeader));
        assert!(parse(&p, 0, true).is_ok());
        let short = hex!("0001020304");
        assert_eq!(parse(&short, 0, false), Err(WireError::InvalidHeader));
        assert!(parse(&short, 0, true).is_ok());
    }

    #[test]
    fn version_negotiation_length() {
        let vn = hex!("80 00000000 01aa 01bb 00000001 6b3343cf");
        let parsed = parse(&vn, 0, false).unwrap();
        let Header::VersionNegotiation(h) = parsed.header else { panic!("not VN") };
        assert_eq!(h.dcid, [0xaa]);
        assert_eq!(h.scid, [0xbb]);
        assert_eq!(h.versions().count(), 2);
        for cut in 1..4 {
            assert_eq!(parse(&vn[..vn.len() - cut], 0, false), Err(WireError::InvalidHeader));
        }
    }

    #[test]
    fn retry_without_token_is_dropped() {
        let r = hex!("f0 00000001 00 00 00112233445566778899aabbccddeeff");
        assert_eq!(parse(&r, 0, false), Err(WireError::InvalidHeader));
    }

    #[test]
    #[cfg(feature = "v2")]
    fn emit_round_trip() {
        let dcid = hex!("0102030405060708");
        let scid = hex!("aabb");
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        let hdr = LongHeader {
            ty: LongType::Initial,
            version: Version::V2,
            dcid: &dcid,
            scid: &scid,
            token: b"tok",
        };
        let off = hdr.emit(&mut w, 0x1234_5678, 2).unwrap();
        w.put_slice(&[0; 20]).unwrap();
        let len = w.position();
        off.set_length(&mut buf, len).unwrap();
        let parsed = parse(&buf[..len], 0, false).unwrap();
        assert_eq!(parsed.header, Header::Long(hdr));
        assert_eq!(parsed.pn_offset, Some(off.pn_offset));
        assert_eq!(parsed.len, len);
        assert_eq!(&buf[off.pn_offset..off.pn_offset + 2], &hex!("5678"));
        // v2 Initial type bits are 0b01 (RFC 9369 §3.2).
        assert_eq!(buf[0], 0xd1);

        let mut w = Writer::new(&mut buf);
        let retry = LongHeader { ty: LongType::Retry, ..hdr };
        assert_eq!(retry.emit(&mut w, 0, 1), Err(BufferTooSmall));
        assert_eq!(hdr.emit(&mut w, 0, 5), Err(BufferTooSmall));
        let mut tiny = [0u8; 10];
        assert_eq!(hdr.emit(&mut Writer::new(&mut tiny), 0, 1), Err(BufferTooSmall));
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..1400),
            cid_len in 0usize..24,
            grease: bool,
        ) {
            if let Ok(p) = parse(&bytes, cid_len, grease) {
                proptest::prop_assert!(p.len <= bytes.len());
                if let Some(off) = p.pn_offset {
                    proptest::prop_assert!(off <= p.len);
                }
            }
        }

        #[test]
        fn random_long_headers_never_panic(
            ty in 0u8..4,
            version in proptest::sample::select(&[0u32, 1, 0x6b33_43cf, 0x1a2a_3a4a][..]),
            tail in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let mut buf = [0u8; 69];
            buf[0] = 0xc0 | (ty << 4);
            buf[1..5].copy_from_slice(&version.to_be_bytes());
            buf[5..5 + tail.len()].copy_from_slice(&tail);
            let _ = parse(&buf[..5 + tail.len()], 8, false);
        }
    }
}
