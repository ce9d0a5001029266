//! DATAGRAM frames (RFC 9221, feature `datagram`): unreliable application messages, e.g. a
//! device's telemetry.
//!
//! Each direction has a bounded queue of whole datagrams ([`DATAGRAM_QUEUE_BYTES`] bytes,
//! at most [`DATAGRAM_QUEUE_LEN`] datagrams). When a queue is full the *oldest* datagrams
//! are dropped to make room — for telemetry the newest reading is the one worth having —
//! and counted ([`super::ConnectionStats::datagrams_dropped`]). DATAGRAM frames are
//! congestion controlled but never retransmitted (RFC 9221 §5.2).

use mote_crypto::CryptoProvider;

use super::counters::bump;
use super::tls::TlsSession;
use super::{Connection, Event};
use crate::error::TransportErrorCode;

/// Bytes of datagram payload each queue holds.
pub const DATAGRAM_QUEUE_BYTES: usize = 1280;
/// Datagrams each queue holds.
pub const DATAGRAM_QUEUE_LEN: usize = 8;

/// A FIFO of whole datagrams in a fixed buffer: payloads packed from the start, lengths in
/// a small array. Popping moves the rest down (at most [`DATAGRAM_QUEUE_BYTES`] bytes).
#[derive(Clone, Debug)]
pub(crate) struct DatagramQueue {
    buf: [u8; DATAGRAM_QUEUE_BYTES],
    lens: [u16; DATAGRAM_QUEUE_LEN],
    count: usize,
    used: usize,
}

impl DatagramQueue {
    pub(crate) const fn new() -> Self {
        Self { buf: [0; DATAGRAM_QUEUE_BYTES], lens: [0; DATAGRAM_QUEUE_LEN], count: 0, used: 0 }
    }

    pub(crate) const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The oldest datagram.
    pub(crate) fn front(&self) -> Option<&[u8]> {
        if self.count == 0 {
            return None;
        }
        self.buf.get(..usize::from(*self.lens.first()?))
    }

    /// Drops the oldest datagram.
    pub(crate) fn pop(&mut self) {
        if self.count == 0 {
            return;
        }
        let n = usize::from(self.lens[0]);
        self.buf.copy_within(n..self.used, 0);
        self.lens.copy_within(1..self.count, 0);
        self.count -= 1;
        self.used -= n;
    }

    /// Appends `data`, dropping the oldest datagrams while it does not fit; returns how many
    /// were dropped. `None` if `data` can never fit.
    pub(crate) fn push(&mut self, data: &[u8]) -> Option<u32> {
        if data.len() > DATAGRAM_QUEUE_BYTES {
            return None;
        }
        let mut dropped = 0u32;
        while self.count == DATAGRAM_QUEUE_LEN || self.used + data.len() > DATAGRAM_QUEUE_BYTES {
            self.pop();
            dropped += 1;
        }
        self.buf.get_mut(self.used..self.used + data.len())?.copy_from_slice(data);
        *self.lens.get_mut(self.count)? = data.len() as u16;
        self.count += 1;
        self.used += data.len();
        Some(dropped)
    }
}

/// Why [`Connection::datagram_send`] refused a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramError {
    /// The handshake is not complete, or the peer did not offer DATAGRAM frames (RFC 9221
    /// §3: max_datagram_frame_size absent or 0).
    NotSupported,
    /// Larger than the peer's max_datagram_frame_size, a packet or the send queue.
    TooLarge,
    /// The connection is closed.
    Closed,
}

/// Bytes of a DATAGRAM frame with a Length field carrying `n` bytes.
pub(crate) const fn frame_len(n: usize) -> usize {
    let len_field = if n < 64 {
        1
    } else if n < 16384 {
        2
    } else {
        4
    };
    1 + len_field + n
}

/// Short header (1 + 20-byte DCID + 4-byte packet number) and AEAD tag: the least a 1-RTT
/// packet spends outside its frames.
const ONE_RTT_OVERHEAD: usize = 1 + 20 + 4 + mote_crypto::TAG_LEN;

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// The largest datagram payload [`Connection::datagram_send`] takes now: within the
    /// peer's max_datagram_frame_size (RFC 9221 §3), one packet and our send queue. `None`
    /// before the handshake completes or when the peer does not accept DATAGRAM frames.
    pub fn datagram_max_size(&self) -> Option<usize> {
        if !self.handshake_complete || self.is_closed() {
            return None;
        }
        let peer = usize::try_from(self.peer?.max_datagram_frame_size).unwrap_or(usize::MAX);
        if peer == 0 {
            return None;
        }
        let packet = self.max_datagram_size().saturating_sub(ONE_RTT_OVERHEAD);
        let frame = peer.min(packet);
        // The payload whose frame (type, length, payload) fits in `frame` bytes.
        let mut n = frame.saturating_sub(3).min(DATAGRAM_QUEUE_BYTES);
        while n > 0 && frame_len(n) > frame {
            n -= 1;
        }
        (n > 0).then_some(n)
    }

    /// Queues `data` to go out in a DATAGRAM frame (RFC 9221 §5): sent once, when
    /// congestion control allows, never retransmitted. When the send queue is full the
    /// oldest queued datagrams are dropped (counted in
    /// [`super::ConnectionStats::datagrams_dropped`]).
    pub fn datagram_send(&mut self, data: &[u8]) -> Result<(), DatagramError> {
        if self.is_closed() {
            return Err(DatagramError::Closed);
        }
        let max = self.datagram_max_size().ok_or(DatagramError::NotSupported)?;
        if data.len() > max {
            return Err(DatagramError::TooLarge);
        }
        let dropped = self.dgram_send.push(data).ok_or(DatagramError::TooLarge)?;
        bump(&mut self.stats.datagrams_dropped, dropped.into());
        Ok(())
    }

    /// Takes the oldest received datagram into `out`; returns its length (bytes beyond
    /// `out.len()` are cut off). [`Event::DatagramReceived`] says when there is one.
    pub fn datagram_recv(&mut self, out: &mut [u8]) -> Option<usize> {
        let d = self.dgram_recv.front()?;
        let n = d.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), d.get(..n)) {
            dst.copy_from_slice(src);
        }
        let len = d.len();
        self.dgram_recv.pop();
        Some(len)
    }

    /// Whether a DATAGRAM frame waits to be sent.
    pub(super) fn datagram_pending(&self) -> bool {
        !self.dgram_send.is_empty()
    }

    /// RFC 9221 §3, §4: a received DATAGRAM frame of `frame_size` bytes: a PROTOCOL_VIOLATION
    /// if we did not offer DATAGRAM frames or it exceeds our max_datagram_frame_size;
    /// otherwise queued for the application.
    pub(super) fn on_datagram_frame(
        &mut self,
        data: &[u8],
        frame_type: u64,
        frame_size: usize,
    ) -> super::Res {
        let ours = usize::from(self.config.max_datagram_frame_size);
        if ours == 0 || frame_size > ours {
            return Err(super::ConnectionClose::transport(
                TransportErrorCode::PROTOCOL_VIOLATION,
                Some(frame_type),
            ));
        }
        match self.dgram_recv.push(data) {
            Some(dropped) => {
                bump(&mut self.stats.datagrams_dropped, dropped.into());
                bump(&mut self.stats.datagram_frames_received, 1);
                self.events.push(Event::DatagramReceived);
            }
            // Larger than our queue (a max_datagram_frame_size above it): dropped.
            None => {
                bump(&mut self.stats.datagrams_dropped, 1);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_drops_oldest_when_full() {
        let mut q = DatagramQueue::new();
        for i in 0..DATAGRAM_QUEUE_LEN as u8 {
            assert_eq!(q.push(&[i; 10]), Some(0));
        }
        // A ninth datagram pushes out the first.
        assert_eq!(q.push(&[99; 10]), Some(1));
        assert_eq!(q.front(), Some(&[1u8; 10][..]));
        // A large one pushes out as many as needed: 1250 + 3 × 10 bytes fit.
        assert_eq!(q.push(&[7; 1250]), Some(5));
        assert_eq!(q.front(), Some(&[6u8; 10][..]));
        q.pop();
        q.pop();
        assert_eq!(q.front(), Some(&[99u8; 10][..]));
        q.pop();
        assert_eq!(q.front().map(<[u8]>::len), Some(1250));
        q.pop();
        assert!(q.is_empty());
        assert_eq!(q.push(&[0; DATAGRAM_QUEUE_BYTES + 1]), None);
    }

    #[test]
    fn frame_lengths() {
        assert_eq!(frame_len(0), 2);
        assert_eq!(frame_len(63), 65);
        assert_eq!(frame_len(64), 67);
    }
}
