//! Stream IDs (RFC 9000 §2.1).

use crate::coding::VarInt;
use crate::frame::StreamDir;
use crate::transport_params::Side;

/// A stream ID (RFC 9000 §2.1): a 62-bit integer whose two least significant bits say who
/// opened the stream (bit 0: 0 client, 1 server) and whether it is unidirectional (bit 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(u64);

impl StreamId {
    /// Wraps a raw ID if it is below 2^62.
    pub const fn new(raw: u64) -> Option<Self> {
        if raw <= VarInt::MAX.into_inner() {
            Some(Self(raw))
        } else {
            None
        }
    }

    /// The ID of the stream with `index` among those `initiator` opens in direction `dir`.
    /// `None` if the ID would not fit in 62 bits (index ≥ 2^60).
    pub const fn from_parts(initiator: Side, dir: StreamDir, index: u64) -> Option<Self> {
        if index >= crate::frame::MAX_STREAM_COUNT {
            return None;
        }
        let init = match initiator {
            Side::Client => 0,
            Side::Server => 1,
        };
        let uni = match dir {
            StreamDir::Bidi => 0,
            StreamDir::Uni => 2,
        };
        Some(Self((index << 2) | uni | init))
    }

    /// The raw 62-bit value.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The ID as a varint, for frames.
    pub const fn varint(self) -> VarInt {
        // Always below 2^62 by construction.
        match VarInt::new(self.0) {
            Some(v) => v,
            None => VarInt::MAX,
        }
    }

    /// Which endpoint opened the stream (bit 0x01).
    pub const fn initiator(self) -> Side {
        if self.0 & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// Bidirectional or unidirectional (bit 0x02).
    pub const fn dir(self) -> StreamDir {
        if self.0 & 2 == 0 {
            StreamDir::Bidi
        } else {
            StreamDir::Uni
        }
    }

    /// The stream's position among the streams of its type: 0 for the first one opened.
    pub const fn index(self) -> u64 {
        self.0 >> 2
    }

    /// True if `local` opened this stream.
    pub fn is_local(self, local: Side) -> bool {
        self.initiator() == local
    }

    /// True if `local` may send on this stream: bidirectional, or unidirectional and opened
    /// by `local`.
    pub fn can_send(self, local: Side) -> bool {
        self.dir() == StreamDir::Bidi || self.is_local(local)
    }

    /// True if `local` may receive on this stream: bidirectional, or unidirectional and
    /// opened by the peer.
    pub fn can_recv(self, local: Side) -> bool {
        self.dir() == StreamDir::Bidi || !self.is_local(local)
    }
}

impl From<VarInt> for StreamId {
    fn from(v: VarInt) -> Self {
        Self(v.into_inner())
    }
}

impl From<StreamId> for VarInt {
    fn from(id: StreamId) -> Self {
        id.varint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 §2.1 Table 1: 0x00 client bidi, 0x01 server bidi, 0x02 client uni,
    /// 0x03 server uni.
    #[test]
    fn rfc9000_table1() {
        let cases = [
            (0u64, Side::Client, StreamDir::Bidi),
            (1, Side::Server, StreamDir::Bidi),
            (2, Side::Client, StreamDir::Uni),
            (3, Side::Server, StreamDir::Uni),
        ];
        for (raw, init, dir) in cases {
            let id = StreamId::new(raw).unwrap();
            assert_eq!(id.initiator(), init);
            assert_eq!(id.dir(), dir);
            assert_eq!(id.index(), 0);
            assert_eq!(StreamId::from_parts(init, dir, 5).unwrap().raw(), raw + 20);
        }
        assert!(StreamId::new(1 << 62).is_none());
        assert!(StreamId::from_parts(Side::Client, StreamDir::Bidi, 1 << 60).is_none());
        let max = StreamId::from_parts(Side::Server, StreamDir::Uni, (1 << 60) - 1).unwrap();
        assert_eq!(max.raw(), (1 << 62) - 1);
        // Direction from each side's view.
        let client_uni = StreamId::new(2).unwrap();
        assert!(client_uni.can_send(Side::Client) && !client_uni.can_recv(Side::Client));
        assert!(!client_uni.can_send(Side::Server) && client_uni.can_recv(Side::Server));
    }
}
