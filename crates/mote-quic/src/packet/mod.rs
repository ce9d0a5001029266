//! QUIC packets (RFC 9000 §17): header parsing and emission, packet numbers, protection.
//!
//! # Receiving
//! 1. [`parse`] the first packet of a datagram (before header protection is removed). It
//!    returns the header, the packet number offset and the packet's length; the next
//!    coalesced packet (RFC 9000 §12.2) starts at that length.
//! 2. Pick the keys for the packet type and call [`PacketKeys::unprotect`] on the packet's
//!    bytes. Or, as separate steps (e.g. to batch the AEAD step in an offload engine):
//!    [`remove_header_protection`], [`number::decode`], [`PacketKey::open_in_place`] (or
//!    [`PacketKey::open`] on split header/payload/tag), then [`check_reserved_bits`].
//!
//! # Sending
//! 1. Emit the header with [`LongHeader::emit`] or [`ShortHeader::emit`] into a
//!    [`Writer`](crate::coding::Writer), choosing the packet number length with
//!    [`number::encoded_len`].
//! 2. Write the frames, then reserve [`TAG_LEN`] bytes for the AEAD tag; for long headers
//!    patch the Length field with [`LongHeaderOffsets::set_length`].
//! 3. [`PacketKeys::protect`], or as separate steps [`PacketKey::seal_in_place`] (or
//!    [`PacketKey::seal`]) then [`apply_header_protection`].
//!
//! Initial keys come from [`initial_keys`]; Retry integrity from [`retry_integrity_tag`] /
//! [`verify_retry`] / [`Retry::emit`]; Version Negotiation from [`VersionNegotiation`] and
//! [`emit_version_negotiation`].

mod header;
mod initial;
mod keys;
pub mod number;
mod protection;
mod retry;
mod version_negotiation;

#[cfg(test)]
mod tests;

pub use header::{
    parse, Header, LongHeader, LongHeaderOffsets, Parsed, Retry, ShortHeader, UnsupportedVersion,
    FIXED_BIT, FORM_BIT, LENGTH_FIELD_LEN, SPIN_BIT,
};
pub(crate) use initial::initial_secrets_into;
pub(crate) use initial::INITIAL_AEAD;
pub use initial::{initial_keys, initial_secrets, InitialKeys};
pub use keys::{next_secret, PacketKey, PacketKeys};
pub use mote_crypto::TAG_LEN;
pub use protection::{
    apply_header_protection, check_reserved_bits, remove_header_protection, TruncatedPn,
    Unprotected, KEY_PHASE_BIT, SAMPLE_OFFSET,
};
pub use retry::{retry_integrity_tag, verify_retry};
pub use version_negotiation::{emit_version_negotiation, VersionNegotiation};

/// Whether packet protection is bypassed: true only in a build with `--cfg fuzzing`, which
/// cargo-fuzz passes (RUSTFLAGS) and nothing else does. There the AEAD seals nothing (the
/// payload stays plaintext, the tag is zero), any tag opens, and the header-protection mask
/// is zero, so fuzz inputs reach frame processing and connection state beyond the crypto
/// (as quiche's `fuzzing` feature). It is a `cfg`, not a Cargo feature, so feature
/// unification can never switch it on in a normal build; a device target refuses to
/// compile with it, and endpoints can assert this constant is false.
pub const PROTECTION_BYPASSED: bool = cfg!(fuzzing);

#[cfg(all(fuzzing, target_os = "none"))]
compile_error!("`--cfg fuzzing` bypasses packet protection: never build firmware with it");

/// Fuzzing builds: the header-protection mask is all zero (see [`PROTECTION_BYPASSED`]).
#[cfg(fuzzing)]
const fn fuzzing_mask(_mask: [u8; 5]) -> [u8; 5] {
    [0; 5]
}

/// The four long-header packet types (RFC 9000 §17.2). Their wire bits depend on the
/// version: see [`crate::Version::long_type_bits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LongType {
    /// Initial (RFC 9000 §17.2.2).
    Initial,
    /// 0-RTT (RFC 9000 §17.2.3).
    ZeroRtt,
    /// Handshake (RFC 9000 §17.2.4).
    Handshake,
    /// Retry (RFC 9000 §17.2.5).
    Retry,
}

/// The packet types that carry frames, for the frame permission table of RFC 9000 §12.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Initial.
    Initial,
    /// 0-RTT.
    ZeroRtt,
    /// Handshake.
    Handshake,
    /// 1-RTT (short header).
    OneRtt,
}
