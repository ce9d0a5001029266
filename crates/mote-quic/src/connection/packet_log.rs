//! Packet log (feature `qlog`): one entry per packet sent or processed, with what only the
//! connection knows — the packet number and the frame types, which are encrypted on the
//! wire — so a host can write qlog `packet_sent` / `packet_received` events. Debugging
//! only: a device build leaves the feature off and carries none of this.
//!
//! Entries queue in a fixed ring of [`PACKET_LOG_CAPACITY`]; the driver drains it with
//! [`super::Connection::poll_packet_log`] after every call. When it is full, new entries
//! are counted in [`PacketLog::dropped`] and lost.

use crate::frame::Frames;
use crate::packet::PacketType;

/// Entries kept before draining: a GSO batch of 10 datagrams of 3 coalesced packets, or a
/// GRO batch of 64 datagrams, fits.
pub const PACKET_LOG_CAPACITY: usize = 128;
/// Frame types kept per entry (consecutive repeats are merged).
pub const FRAME_TYPES_MAX: usize = 8;

/// One packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketLogEntry {
    /// Sent (true) or received and processed (false).
    pub sent: bool,
    /// The packet type.
    pub packet_type: PacketType,
    /// The full packet number.
    pub packet_number: u64,
    /// Packet length on the wire (header, payload and tag).
    pub length: u16,
    frame_types: [u8; FRAME_TYPES_MAX],
    frame_count: u8,
}

impl PacketLogEntry {
    /// The frame types (RFC 9000 §19; types above 0xfe as 0xff), in packet order with
    /// consecutive repeats merged, at most [`FRAME_TYPES_MAX`].
    pub fn frame_types(&self) -> &[u8] {
        self.frame_types.get(..usize::from(self.frame_count)).unwrap_or(&[])
    }
}

/// The queue of a connection.
pub(crate) struct PacketLog {
    ring: [Option<PacketLogEntry>; PACKET_LOG_CAPACITY],
    head: usize,
    len: usize,
    /// Entries lost because the ring was full.
    pub(crate) dropped: u64,
}

impl PacketLog {
    pub(crate) const fn new() -> Self {
        Self { ring: [None; PACKET_LOG_CAPACITY], head: 0, len: 0, dropped: 0 }
    }

    /// Records a packet whose decrypted `payload` holds its frames.
    pub(crate) fn push(
        &mut self,
        sent: bool,
        packet_type: PacketType,
        packet_number: u64,
        length: usize,
        payload: &[u8],
    ) {
        if self.len >= PACKET_LOG_CAPACITY {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        let mut e = PacketLogEntry {
            sent,
            packet_type,
            packet_number,
            length: u16::try_from(length).unwrap_or(u16::MAX),
            frame_types: [0; FRAME_TYPES_MAX],
            frame_count: 0,
        };
        for frame in Frames::new(payload, packet_type) {
            let Ok(frame) = frame else { break };
            let ty = u8::try_from(frame.frame_type()).unwrap_or(0xff);
            let n = usize::from(e.frame_count);
            if n > 0 && e.frame_types.get(n - 1) == Some(&ty) {
                continue;
            }
            let Some(slot) = e.frame_types.get_mut(n) else { break };
            *slot = ty;
            e.frame_count += 1;
        }
        let i = (self.head + self.len) % PACKET_LOG_CAPACITY;
        if let Some(slot) = self.ring.get_mut(i) {
            *slot = Some(e);
            self.len += 1;
        }
    }

    pub(crate) fn pop(&mut self) -> Option<PacketLogEntry> {
        if self.len == 0 {
            return None;
        }
        let e = self.ring.get_mut(self.head)?.take();
        self.head = (self.head + 1) % PACKET_LOG_CAPACITY;
        self.len -= 1;
        e
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::super::tests::Pair;
    use super::*;
    use crate::ConnectionConfig;
    use std::vec::Vec;

    #[test]
    fn packets_are_logged_with_numbers_and_frames() {
        let mut p = Pair::new(ConnectionConfig::device(), ConnectionConfig::server());
        p.handshake();
        let client: Vec<_> = core::iter::from_fn(|| p.client.poll_packet_log()).collect();
        let server: Vec<_> = core::iter::from_fn(|| p.server().poll_packet_log()).collect();
        // The client's first packet: Initial 0 with CRYPTO (the ClientHello) and PADDING
        // (to 1200 bytes); the server processed exactly that packet first.
        let first = client[0];
        assert!(first.sent);
        assert_eq!((first.packet_type, first.packet_number), (PacketType::Initial, 0));
        assert_eq!(first.frame_types(), [0x06, 0x00]);
        let s0 = server[0];
        assert!(!s0.sent);
        assert_eq!((s0.packet_type, s0.packet_number), (PacketType::Initial, 0));
        assert_eq!(s0.frame_types(), first.frame_types());
        assert_eq!(s0.length, first.length);
        // Every packet the server sent and the client processed is logged on both sides
        // with the same number and frames.
        for r in client.iter().filter(|e| !e.sent) {
            let s = server
                .iter()
                .find(|s| {
                    s.sent && s.packet_type == r.packet_type && s.packet_number == r.packet_number
                })
                .expect("sent by the server");
            assert_eq!((s.frame_types(), s.length), (r.frame_types(), r.length));
        }
        // The server's HANDSHAKE_DONE (0x1e) went in a 1-RTT packet.
        assert!(server.iter().any(|e| e.sent
            && e.packet_type == PacketType::OneRtt
            && e.frame_types().contains(&0x1e)));
        assert_eq!(p.client.packet_log_dropped(), 0);
    }

    #[test]
    fn a_full_ring_drops_and_counts() {
        let mut log = PacketLog::new();
        for pn in 0..PACKET_LOG_CAPACITY as u64 + 3 {
            log.push(true, PacketType::OneRtt, pn, 50, &[0x01]);
        }
        assert_eq!(log.dropped, 3);
        let numbers: Vec<u64> =
            core::iter::from_fn(|| log.pop()).map(|e| e.packet_number).collect();
        assert_eq!(numbers, (0..PACKET_LOG_CAPACITY as u64).collect::<Vec<_>>());
        log.push(false, PacketType::Handshake, 7, 40, &[0x02, 0x00, 0x00, 0x00, 0x00]);
        let e = log.pop().unwrap();
        assert_eq!((e.packet_number, e.frame_types()), (7, &[0x02][..]));
    }
}
