//! `mote_quic::version` and `mote_quic::cid`: version constants and connection IDs.

use core::hint::black_box;

use mote_quic::packet::LongType;
use mote_quic::{ConnectionId, Version};

use crate::Checks;

/// Looks up every supported version's parameters and long-header type bits, and builds
/// connection IDs.
#[inline(never)]
pub fn exercise(c: &mut Checks) {
    for version in Version::SUPPORTED {
        let version = black_box(*version);
        c.check(version.is_supported() && !version.is_reserved());
        c.check(version.params().is_some_and(|p| p.key_label.starts_with(b"quic")));
        for ty in [LongType::Initial, LongType::ZeroRtt, LongType::Handshake, LongType::Retry] {
            c.check(version.long_type(version.long_type_bits(black_box(ty))) == ty);
        }
    }
    c.check(!Version(black_box(0x1a2a_3a4a)).is_supported());

    let cid = ConnectionId::new(black_box(&[0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]));
    c.check(cid.is_some_and(|cid| cid.len() == 8 && cid[0] == 0x83));
    c.check(ConnectionId::new(black_box(&[0u8; 21])).is_none());
}
