//! What one sent packet carried: the payload `T` of the recovery records
//! ([`crate::recovery::SentPacket`]), so that on acknowledgement the data can be released and
//! on loss the frames that still matter can be queued again (RFC 9000 §13.3).
//!
//! A packet carries at most one STREAM chunk, one CRYPTO chunk, the Largest Acknowledged of
//! its ACK frame (for ACK-of-ACK pruning, RFC 9000 §13.2.4), up to two control frames
//! (indices into the connection's small control table, [`CONTROL_SLOTS`]) and flags. 40
//! bytes, so a record is 64 bytes on Cortex-M4 and on 64-bit hosts.

use crate::stream::Control;

/// Control frames (MAX_DATA, RESET_STREAM, …) in flight at once. Each in-flight control
/// frame holds one slot until its packet is acknowledged or lost; when all are taken, new
/// control frames wait (their state stays queued in the stream layer).
pub const CONTROL_SLOTS: usize = 8;

/// Control frames one packet may carry.
pub const CONTROLS_PER_PACKET: usize = 2;

const NO_CONTROL: u8 = u8::MAX;

/// Flag bits of [`SentFrames::flags`].
pub(crate) mod flag {
    /// A STREAM frame: `stream_*` fields are valid.
    pub const STREAM: u16 = 0x01;
    /// The STREAM frame carried FIN.
    pub const STREAM_FIN: u16 = 0x02;
    /// A CRYPTO frame: `crypto_*` fields are valid.
    pub const CRYPTO: u16 = 0x04;
    /// An ACK frame: `ack_largest` is valid.
    pub const ACK: u16 = 0x08;
    /// HANDSHAKE_DONE (retransmitted until acknowledged, RFC 9000 §13.3).
    pub const HANDSHAKE_DONE: u16 = 0x10;
    /// PING (never retransmitted).
    pub const PING: u16 = 0x20;
    /// NEW_CONNECTION_ID or RETIRE_CONNECTION_ID frames: the connection-ID tables know
    /// which (they record the packet number).
    pub const CIDS: u16 = 0x40;
    /// PATH_CHALLENGE or PATH_RESPONSE (the datagram is padded to 1200 bytes, RFC 9000
    /// §8.2.1; never retransmitted).
    pub const PATH: u16 = 0x80;
    /// NEW_TOKEN (retransmitted until acknowledged, RFC 9000 §13.3).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub const NEW_TOKEN: u16 = 0x100;
}

/// The frames of one sent packet that matter after it left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentFrames {
    pub(crate) stream_id: u64,
    pub(crate) stream_offset: u64,
    pub(crate) ack_largest: u64,
    pub(crate) crypto_offset: u64,
    pub(crate) stream_len: u16,
    pub(crate) crypto_len: u16,
    pub(crate) controls: [u8; CONTROLS_PER_PACKET],
    pub(crate) flags: u16,
}

impl Default for SentFrames {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl SentFrames {
    /// A packet that carried nothing worth remembering.
    pub const EMPTY: Self = Self {
        stream_id: 0,
        stream_offset: 0,
        ack_largest: 0,
        crypto_offset: 0,
        stream_len: 0,
        crypto_len: 0,
        controls: [NO_CONTROL; CONTROLS_PER_PACKET],
        flags: 0,
    };

    pub(crate) fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    /// Records a control-table slot; false if this packet has no room for another.
    pub(crate) fn add_control(&mut self, slot: usize) -> bool {
        for c in self.controls.iter_mut() {
            if *c == NO_CONTROL {
                *c = slot as u8;
                return true;
            }
        }
        false
    }

    pub(crate) fn control_room(&self) -> bool {
        self.controls.contains(&NO_CONTROL)
    }

    /// The control-table slots this packet holds.
    pub(crate) fn control_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.controls.iter().filter(|c| **c != NO_CONTROL).map(|c| usize::from(*c))
    }
}

/// The connection's table of control frames in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ControlTable {
    slots: [Option<Control>; CONTROL_SLOTS],
}

impl ControlTable {
    pub(crate) const fn new() -> Self {
        Self { slots: [None; CONTROL_SLOTS] }
    }

    pub(crate) fn has_free(&self) -> bool {
        self.slots.iter().any(Option::is_none)
    }

    pub(crate) fn insert(&mut self, c: Control) -> Option<usize> {
        let i = self.slots.iter().position(Option::is_none)?;
        if let Some(s) = self.slots.get_mut(i) {
            *s = Some(c);
        }
        Some(i)
    }

    /// The control frame in slot `i`, left in place.
    pub(crate) fn get(&self, i: usize) -> Option<Control> {
        self.slots.get(i).copied().flatten()
    }

    pub(crate) fn take(&mut self, i: usize) -> Option<Control> {
        self.slots.get_mut(i).and_then(Option::take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(core::mem::size_of::<SentFrames>(), 40);
        assert_eq!(core::mem::size_of::<crate::recovery::SentPacket<SentFrames>>(), 64);
    }
}
