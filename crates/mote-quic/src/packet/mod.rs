//! QUIC packets (RFC 9000 §17): header parsing and emission, packet numbers, protection.

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
