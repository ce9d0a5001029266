//! What one sent packet carried: the payload `T` of the recovery records
//! ([`crate::recovery::SentPacket`]), so that on acknowledgement the data can be released and
//! on loss the frames that still matter can be queued again (RFC 9000 §13.3).
//!
//! A packet carries up to [`STREAM_FRAMES`] STREAM chunks (one without the `stream-packing`
//! feature), one CRYPTO chunk, the Largest Acknowledged of its ACK frame (for ACK-of-ACK
//! pruning, RFC 9000 §13.2.4), up to two control frames (indices into the connection's small
//! control table, [`CONTROL_SLOTS`]) and flags. With one STREAM chunk that is 40 bytes, so a
//! record is 64 bytes on Cortex-M4 and on 64-bit hosts; each further chunk adds 18 bytes.

use crate::stream::Control;

/// Control frames (MAX_DATA, RESET_STREAM, …) in flight at once. Each in-flight control
/// frame holds one slot until its packet is acknowledged or lost; when all are taken, new
/// control frames wait (their state stays queued in the stream layer).
pub const CONTROL_SLOTS: usize = 8;

/// Control frames one packet may carry.
pub const CONTROLS_PER_PACKET: usize = 2;

const NO_CONTROL: u8 = u8::MAX;

/// STREAM frames one packet may carry (and its record remember): several small requests or
/// stream ends share a packet with `stream-packing` (hosts); a device sends one per packet
/// and keeps its records small.
pub const STREAM_FRAMES: usize = if cfg!(feature = "stream-packing") { 8 } else { 1 };

/// Bits of [`SentFrames::stream_meta`]: the length in the low 14 bits (a chunk never
/// exceeds a datagram), whether the slot is used, and FIN.
const META_USED: u16 = 0x4000;
const META_FIN: u16 = 0x8000;
const META_LEN: u16 = 0x3fff;

/// The longest STREAM chunk one record can describe (the send path never builds longer).
pub(crate) const MAX_STREAM_CHUNK: usize = META_LEN as usize;

/// One STREAM chunk a packet carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SentChunk {
    pub(crate) id: u64,
    pub(crate) offset: u64,
    pub(crate) len: usize,
    pub(crate) fin: bool,
}

/// Flag bits of [`SentFrames::flags`].
pub(crate) mod flag {
    /// At least one STREAM frame (see [`super::SentFrames::stream_chunks`]).
    pub const STREAM: u16 = 0x01;
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
    stream_id: [u64; STREAM_FRAMES],
    stream_offset: [u64; STREAM_FRAMES],
    pub(crate) ack_largest: u64,
    pub(crate) crypto_offset: u64,
    stream_meta: [u16; STREAM_FRAMES],
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
        stream_id: [0; STREAM_FRAMES],
        stream_offset: [0; STREAM_FRAMES],
        ack_largest: 0,
        crypto_offset: 0,
        stream_meta: [0; STREAM_FRAMES],
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

    /// Whether another STREAM chunk can be recorded.
    pub(crate) fn stream_room(&self) -> bool {
        self.stream_meta.iter().any(|m| m & META_USED == 0)
    }

    /// Records a STREAM chunk (`len` below 16 KiB); false if this packet has no room for
    /// another.
    pub(crate) fn add_stream(&mut self, id: u64, offset: u64, len: usize, fin: bool) -> bool {
        let Ok(len) = u16::try_from(len) else { return false };
        if len > META_LEN {
            return false;
        }
        let Some(i) = self.stream_meta.iter().position(|m| m & META_USED == 0) else {
            return false;
        };
        if let (Some(d), Some(o), Some(m)) =
            (self.stream_id.get_mut(i), self.stream_offset.get_mut(i), self.stream_meta.get_mut(i))
        {
            *d = id;
            *o = offset;
            *m = len | META_USED | if fin { META_FIN } else { 0 };
            self.flags |= flag::STREAM;
        }
        true
    }

    /// The STREAM chunks this packet carried, in the order they were written.
    pub(crate) fn stream_chunks(&self) -> impl Iterator<Item = SentChunk> + '_ {
        self.stream_meta
            .iter()
            .zip(self.stream_id.iter().zip(self.stream_offset.iter()))
            .filter(|(m, _)| **m & META_USED != 0)
            .map(|(m, (id, offset))| SentChunk {
                id: *id,
                offset: *offset,
                len: usize::from(*m & META_LEN),
                fin: *m & META_FIN != 0,
            })
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
        let extra = 18 * (STREAM_FRAMES - 1);
        let frames = (40 + extra).next_multiple_of(8);
        assert_eq!(core::mem::size_of::<SentFrames>(), frames);
        // The record's own fields: 24 bytes, 16 with a device's 32-bit time.
        let own = if cfg!(feature = "std") { 24 } else { 16 };
        assert_eq!(core::mem::size_of::<crate::recovery::SentPacket<SentFrames>>(), frames + own);
    }

    #[test]
    fn stream_chunks_round_trip_until_full() {
        let mut f = SentFrames::EMPTY;
        assert!(!f.has(flag::STREAM));
        for k in 0..STREAM_FRAMES {
            assert!(f.stream_room());
            assert!(f.add_stream(4 * k as u64, 100 + k as u64, 20 + k, k % 2 == 1));
        }
        assert!(!f.stream_room());
        assert!(!f.add_stream(0, 0, 1, false));
        assert!(f.has(flag::STREAM));
        let mut n = 0;
        for (k, c) in f.stream_chunks().enumerate() {
            let want = SentChunk {
                id: 4 * k as u64,
                offset: 100 + k as u64,
                len: 20 + k,
                fin: k % 2 == 1,
            };
            assert_eq!(c, want);
            n += 1;
        }
        assert_eq!(n, STREAM_FRAMES);
        // A chunk longer than the length bits cannot be recorded (and is never built).
        let mut g = SentFrames::EMPTY;
        assert!(!g.add_stream(0, 0, 0x4000, false));
        assert!(!g.has(flag::STREAM));
    }
}
