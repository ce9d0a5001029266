//! The device client's fixed stream set (RFC 9000 §2, §3, §4; RFC 9114 §6): our control
//! stream (client unidirectional stream 2), one request stream at a time (client
//! bidirectional streams 0, 4, 8, …, the next opened once the previous one is finished both
//! ways) and the server's first [`PEER_UNI`] unidirectional streams (HTTP/3 control, QPACK
//! encoder and decoder). The client advertises initial_max_streams_bidi = 0 and
//! initial_max_streams_uni = [`PEER_UNI`], so no other peer stream can exist: a frame for
//! one is STREAM_LIMIT_ERROR. Flow control is the shared [`SendCredit`] / [`RecvCredit`]
//! and the stream halves are the shared [`SendStream`] / [`RecvStream`].

use super::peer_params::PeerParams;
use crate::frame::StreamDir;
use crate::stream::{
    narrow, wide, Chunk, Insert, Offset, Read, RecvCredit, RecvStream, SendCredit, SendStream,
    StreamConfig, StreamError, WriteError,
};

/// A stream count as the device keeps it. RFC 9000 §4.6 allows counts up to 2^60; a device
/// opens one request at a time and never reaches 2^32 of them, so a larger limit is as good
/// as `u32::MAX` (the next index then stays below it, so `index + 1` cannot wrap).
#[allow(clippy::cast_possible_truncation)]
const fn clamp32(n: u64) -> u32 {
    if n > u32::MAX as u64 {
        u32::MAX
    } else {
        n as u32
    }
}

/// Unidirectional streams the server may open (RFC 9114 §6.2: control, QPACK encoder and
/// decoder).
pub const PEER_UNI: usize = 3;

/// Our control stream: the first client-initiated unidirectional stream (RFC 9000 §2.1).
pub const CONTROL_ID: u64 = 2;

/// The byte buffers of a device connection, owned by it.
pub struct DeviceStorage<C, S> {
    /// `(send, receive)` CRYPTO buffers of the Initial, Handshake and 1-RTT levels.
    pub crypto: [(C, C); 3],
    /// Send buffer of our control stream.
    pub control: S,
    /// `(send, receive)` buffers of the request stream (reused by each request).
    pub request: (S, S),
    /// Receive buffers of the server's unidirectional streams 3, 7 and 11; each bounds
    /// that stream's flow-control window.
    pub peer_uni: [S; PEER_UNI],
}

/// Which of our sending halves a frame belongs to (for the sent-packet records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sender {
    Control,
    Request,
}

/// The receiving halves, by index: 0 the request, 1..=3 the peer's uni streams.
pub(crate) const RECVS: usize = 1 + PEER_UNI;

/// The fixed stream set and the connection-level flow control.
pub(crate) struct Streams<S, const R: usize> {
    pub(crate) control: SendStream<S, R>,
    pub(crate) control_open: bool,
    pub(crate) req_send: SendStream<S, R>,
    /// Receiving halves: the request's, then the peer's uni streams.
    pub(crate) recv: [RecvStream<S, R>; RECVS],
    /// The open request's index (its ID is `4 * index`), if any.
    pub(crate) request: Option<u32>,
    /// The next request's index (32-bit: [`Streams::open_request`] stops below 2^32).
    pub(crate) next_request: u32,
    /// RFC 9000 §4.1: what the peer lets us send, and what we let it send.
    pub(crate) conn_send: SendCredit,
    pub(crate) conn_recv: RecvCredit,
    /// The peer's initial_max_stream_data_bidi_remote (our requests) and _uni (our control
    /// stream).
    peer_bidi: Offset,
    peer_uni: Offset,
    /// The peer's MAX_STREAMS (bidirectional, unidirectional): requests and control
    /// streams we may open (RFC 9000 §4.6), clamped to 32 bits (see [`clamp32`]).
    pub(crate) peer_max_streams: [u32; 2],
    /// Our windows: the request stream's receive window and the peer uni streams'.
    window_bidi: Offset,
    /// STOP_SENDING codes received for our control and request streams, until the
    /// application takes them ([`Streams::poll_stopped`]).
    stopped: [Option<u64>; 2],
    /// The peer's uni streams opened so far (RFC 9000 §3.2: the highest index seen + 1).
    peer_uni_opened_count: u32,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> Streams<S, R> {
    /// Writes the stream set into `dst` (in place: the device never holds it on its stack),
    /// which the device constructor zero-filled: only the buffers, our receive credits and
    /// window are written; every other field starts at zero (checked at compile time).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes; what
    /// it held is not dropped.
    #[allow(unsafe_code)]
    #[inline(never)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, cfg: &StreamConfig, storage: Bufs<S>) {
        use crate::connection::init::zeroed;
        use core::ptr::addr_of_mut;
        let Bufs { control, request: (rs, rr), peer_uni } = storage;
        let [u0, u1, u2] = peer_uni;
        // No request yet, nothing sent or received, no peer limits before its transport
        // parameters (RFC 9000 §7.4: zero until they arrive).
        zeroed!(addr_of_mut!((*dst).request) => Option<u32>, |z| z.is_none());
        zeroed!(addr_of_mut!((*dst).stopped) => [Option<u64>; 2], |z| matches!(z, [None, None]));
        zeroed!(addr_of_mut!((*dst).conn_send) => SendCredit, |z| z.is_new_zero());
        zeroed!(addr_of_mut!((*dst).control_open) => bool, |z| !z);
        // SAFETY: the caller's contract; each field written is written once through its
        // address, the others (`next_request`, `peer_bidi`, `peer_uni`, `peer_max_streams`,
        // `peer_uni_opened_count`: integers) are the zeros already there.
        unsafe {
            SendStream::write_zeroed(addr_of_mut!((*dst).control), control, 0);
            SendStream::write_zeroed(addr_of_mut!((*dst).req_send), rs, 0);
            // The request's receiving half (window 0 until the stream opens), then the
            // server's unidirectional streams: one call site for the four.
            let recv = addr_of_mut!((*dst).recv).cast::<RecvStream<S, R>>();
            let uni = cfg.max_stream_data_uni;
            for (i, buf) in [rr, u0, u1, u2].into_iter().enumerate() {
                RecvStream::write_zeroed(recv.add(i), buf, if i == 0 { 0 } else { uni });
            }
            addr_of_mut!((*dst).conn_recv).write(RecvCredit::new(cfg.max_data));
            addr_of_mut!((*dst).window_bidi).write(narrow(cfg.max_stream_data_bidi_local));
        }
    }

    /// RFC 9000 §7.4, §18.2: the server's flow-control limits and stream counts (or, for
    /// 0-RTT, the remembered ones, §7.4.1), set as they are. They come before any MAX_DATA,
    /// MAX_STREAM_DATA or MAX_STREAMS frame can (those need 1-RTT keys), so they replace
    /// nothing but zero or the remembered values: RFC 9000 §7.4.1 lets a server that accepts
    /// 0-RTT only raise those (checked before), and when it rejects 0-RTT (RFC 9001 §4.6.2)
    /// its new values replace them, even lower ones. Returns false when the streams opened
    /// or bytes written (in 0-RTT) do not fit them.
    pub(crate) fn on_peer_params(&mut self, tp: &PeerParams) -> bool {
        use super::peer_params::{BIDI_REMOTE, MAX_DATA, STREAMS_BIDI, STREAMS_UNI, UNI};
        let mut fits = self.conn_send.replace_max(tp.get(MAX_DATA));
        self.peer_bidi = narrow(tp.get(BIDI_REMOTE));
        self.peer_uni = narrow(tp.get(UNI));
        let (b, u) = (clamp32(tp.get(STREAMS_BIDI)), clamp32(tp.get(STREAMS_UNI)));
        self.peer_max_streams = [b, u];
        fits &= self.next_request <= b;
        if self.control_open {
            fits &= u != 0 && self.control.replace_max_stream_data(wide(self.peer_uni));
        }
        if self.request.is_some() {
            fits &= self.req_send.replace_max_stream_data(wide(self.peer_bidi));
        }
        fits
    }

    /// The current request's stream ID.
    pub(crate) fn request_id(&self) -> Option<u64> {
        self.request.map(|i| u64::from(i) << 2)
    }

    /// Opens our control stream (once; RFC 9000 §4.6: within the peer's limit).
    pub(crate) fn open_control(&mut self) -> Option<u64> {
        if self.control_open || self.peer_max_streams[1] == 0 {
            return None;
        }
        self.control_open = true;
        self.control.reinit(wide(self.peer_uni));
        Some(CONTROL_ID)
    }

    /// Opens the next request stream: only when none is open or the open one is finished
    /// both ways, and within the peer's MAX_STREAMS (RFC 9000 §4.6).
    pub(crate) fn open_request(&mut self) -> Option<u64> {
        if self.request.is_some() && !self.request_finished() {
            return None;
        }
        let index = self.next_request;
        if index >= self.peer_max_streams[0] {
            return None;
        }
        self.next_request = index + 1;
        self.request = Some(index);
        // A STOP_SENDING the application did not take belonged to the previous request; it
        // must not be reported against this one.
        self.stopped[1] = None;
        self.req_send.reinit(wide(self.peer_bidi));
        let window = wide(self.window_bidi);
        if let Some(r) = self.recv.first_mut() {
            r.reinit(window);
        }
        Some(u64::from(index) << 2)
    }

    /// Whether the open request is over in both directions. Out of line: with the HTTP/3
    /// client no longer scanning `live`, the firmware's one caller is `open_bidi`, and
    /// inlined there (into the client's request) it cost 48 B more.
    #[inline(never)]
    fn request_finished(&self) -> bool {
        self.req_send.is_closed() && self.recv.first().is_some_and(RecvStream::is_closed)
    }

    /// The sending half of stream `id`, if it is ours and open.
    pub(crate) fn sender(&mut self, id: u64) -> Option<(&mut SendStream<S, R>, Sender)> {
        if id == CONTROL_ID && self.control_open {
            return Some((&mut self.control, Sender::Control));
        }
        if Some(id) == self.request_id() {
            return Some((&mut self.req_send, Sender::Request));
        }
        None
    }

    /// The sending half recorded as `which` for request `index` (a sent packet's record):
    /// `None` once that request stream has been replaced.
    pub(crate) fn sender_of(&mut self, which: Sender, index: u32) -> Option<&mut SendStream<S, R>> {
        match which {
            Sender::Control => Some(&mut self.control),
            Sender::Request if Some(index) == self.request => Some(&mut self.req_send),
            Sender::Request => None,
        }
    }

    /// The receiving half index of stream `id` (0: the request, 1..: peer uni streams).
    pub(crate) fn receiver(&self, id: u64) -> Option<usize> {
        if Some(id) == self.request_id() {
            return Some(0);
        }
        let i = usize::try_from(id >> 2).ok()?;
        (id & 3 == 3 && i < PEER_UNI).then_some(i + 1)
    }

    /// Bytes [`Streams::write`] would take on `id` now.
    pub(crate) fn capacity(&self, id: u64) -> u64 {
        let s = if id == CONTROL_ID && self.control_open {
            &self.control
        } else if Some(id) == self.request_id() {
            &self.req_send
        } else {
            return 0;
        };
        // A finished or reset stream takes nothing: `write` would refuse it, and the HTTP/3
        // client writes exactly what this reports.
        if !s.is_writable() {
            return 0;
        }
        let buf = (s.capacity() as u64).saturating_sub(s.buffered());
        buf.min(s.credit().available()).min(self.conn_send.available())
    }

    /// Writes to our stream `id` (within its buffer and both credits). A device stream ends
    /// below 4 GiB (the sent records keep 32-bit offsets): past that it is full, and a
    /// write that cannot add a byte is refused as on a finished stream.
    pub(crate) fn write(&mut self, id: u64, data: &[u8]) -> Result<usize, WriteError> {
        let conn = &mut self.conn_send;
        let s = if id == CONTROL_ID && self.control_open {
            &mut self.control
        } else if Some(id) == self.request.map(|i| u64::from(i) << 2) {
            &mut self.req_send
        } else {
            return Err(WriteError::UnknownStream);
        };
        let room = u64::from(u32::MAX).saturating_sub(s.written());
        if room == 0 && !data.is_empty() {
            return Err(WriteError::Finished);
        }
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(data.len());
        s.write(conn, data.get(..n).unwrap_or(data))
    }

    /// Ends our stream `id` (FIN).
    pub(crate) fn finish(&mut self, id: u64) -> Result<(), WriteError> {
        match self.sender(id) {
            Some((s, _)) => s.finish(),
            None => Err(WriteError::UnknownStream),
        }
    }

    /// Abandons sending on `id` (RESET_STREAM).
    pub(crate) fn reset(&mut self, id: u64, code: u64) -> bool {
        self.sender(id).is_some_and(|(s, _)| s.reset(code))
    }

    /// Reads stream `id`; `None` for a stream we cannot read.
    pub(crate) fn read(&mut self, id: u64, out: &mut [u8]) -> Option<Read> {
        let i = self.receiver(id)?;
        if i > 0 && (i as u64) > self.peer_uni_opened() {
            return None;
        }
        let r = self.recv.get_mut(i)?;
        Some(r.read(&mut self.conn_recv, out))
    }

    /// Stops reading stream `id` (STOP_SENDING).
    pub(crate) fn stop_sending(&mut self, id: u64, code: u64) {
        if let Some(r) = self.receiver(id).and_then(|i| self.recv.get_mut(i)) {
            r.stop(&mut self.conn_recv, code);
        }
    }

    /// The peer uni streams opened so far (RFC 9000 §3.2: the highest index seen + 1).
    pub(crate) fn peer_uni_opened(&self) -> u64 {
        u64::from(self.peer_uni_opened_count)
    }

    /// The live streams (ours and the peer's), for the HTTP/3 client's scan.
    pub(crate) fn live(&self) -> impl Iterator<Item = u64> + '_ {
        let control = self.control_open.then_some(CONTROL_ID);
        let request = self.request_id().filter(|_| !self.request_finished());
        let peer = (0..self.peer_uni_opened()).map(|i| (i << 2) | 3).filter(move |id| {
            self.receiver(*id).and_then(|i| self.recv.get(i)).is_some_and(|r| !r.is_closed())
        });
        control.into_iter().chain(request).chain(peer)
    }

    /// A STOP_SENDING the peer sent for one of our streams, not yet taken: (stream, code).
    pub(crate) fn poll_stopped(&mut self) -> Option<(u64, u64)> {
        if let Some(code) = self.stopped[0].take() {
            return Some((CONTROL_ID, code));
        }
        let id = self.request_id()?;
        self.stopped[1].take().map(|code| (id, code))
    }

    /// RFC 9000 §19.4, §19.5, §19.8, §19.10, §19.13: a frame naming stream `id`, checked
    /// against the fixed set. `receiving`: STREAM, RESET_STREAM and STREAM_DATA_BLOCKED
    /// concern our receiving half, STOP_SENDING and MAX_STREAM_DATA our sending half.
    /// Returns the stream's place, or `None` for a finished request stream (its frames are
    /// ignored).
    /// - our uni stream in a receiving frame, or a peer uni stream in a sending frame:
    ///   STREAM_STATE_ERROR (§19.8, §19.5, §19.10);
    /// - a stream of ours not yet opened: STREAM_STATE_ERROR;
    /// - a peer stream beyond our limits (no bidirectional ones at all): STREAM_LIMIT_ERROR
    ///   (§4.6).
    pub(crate) fn check_id(&mut self, id: u64, receiving: bool) -> Result<Place, StreamError> {
        let index = id >> 2;
        match (id & 3, receiving) {
            // Our bidirectional streams.
            (0, _) => {
                if index >= u64::from(self.next_request) {
                    return Err(StreamError::StreamState);
                }
                let current = self.request.is_some_and(|r| u64::from(r) == index);
                Ok(if current { Place::Request } else { Place::Gone })
            }
            // The peer's bidirectional streams: we allow none.
            (1, _) => Err(StreamError::StreamLimit),
            // Our unidirectional streams: send-only.
            (2, true) => Err(StreamError::StreamState),
            (2, false) => {
                if index > 0 || !self.control_open {
                    return Err(StreamError::StreamState);
                }
                Ok(Place::Control)
            }
            // The peer's unidirectional streams: receive-only.
            (_, false) => Err(StreamError::StreamState),
            (_, true) => {
                if index >= PEER_UNI as u64 {
                    return Err(StreamError::StreamLimit);
                }
                // RFC 9000 §3.2: a stream opens every lower-numbered one of its type.
                // index < PEER_UNI: the casts keep it.
                self.peer_uni_opened_count = self.peer_uni_opened_count.max(index as u32 + 1);
                Ok(Place::PeerUni(index as usize))
            }
        }
    }

    /// A STREAM frame's data for the receiving half `i`.
    pub(crate) fn on_stream(
        &mut self,
        i: usize,
        offset: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<Insert, StreamError> {
        match self.recv.get_mut(i) {
            Some(r) => r.on_stream(&mut self.conn_recv, offset, data, fin),
            None => Ok(Insert::Duplicate),
        }
    }

    /// A RESET_STREAM for the receiving half `i`.
    pub(crate) fn on_reset(
        &mut self,
        i: usize,
        code: u64,
        final_size: u64,
    ) -> Result<(), StreamError> {
        match self.recv.get_mut(i) {
            Some(r) => r.on_reset(&mut self.conn_recv, code, final_size),
            None => Ok(()),
        }
    }

    /// STOP_SENDING for our stream (RFC 9000 §3.5: answered with RESET_STREAM), reported
    /// to the application once.
    pub(crate) fn on_stop_sending(&mut self, which: Sender, code: u64) {
        let (s, k) = match which {
            Sender::Control => (&mut self.control, 0),
            Sender::Request => (&mut self.req_send, 1),
        };
        if s.on_stop_sending(code) {
            if let Some(slot) = self.stopped.get_mut(k) {
                *slot = Some(code);
            }
        }
    }

    /// Whether any STREAM data (or FIN) waits.
    pub(crate) fn wants_to_send(&self) -> bool {
        (self.control_open && self.control.wants_to_send())
            || (self.request.is_some() && self.req_send.wants_to_send())
    }

    /// Whether a stream control frame (RESET_STREAM, STOP_SENDING, MAX_STREAM_DATA,
    /// MAX_DATA) waits.
    pub(crate) fn wants_control(&self) -> bool {
        self.conn_recv.update_pending()
            || self.control.wants_control()
            || self.req_send.wants_control()
            || self.recv.iter().any(RecvStream::wants_control)
    }

    /// The next stream control frame due, marked sent: its type, fields and [`Sent`]
    /// flag. RESET_STREAM first, then STOP_SENDING and MAX_STREAM_DATA of each receiving
    /// half, then MAX_DATA.
    ///
    /// [`Sent`]: super::Sent
    pub(crate) fn poll_control(&mut self) -> Option<(u64, [u64; 3], u32)> {
        use super::send::flag;
        use crate::frame::types;
        let request = self.request_id();
        if let Some((code, size)) = self.control.poll_reset() {
            return Some((types::RESET_STREAM, [CONTROL_ID, code, size], flag::CONTROL_RESET));
        }
        if let Some(id) = request {
            if let Some((code, size)) = self.req_send.poll_reset() {
                return Some((types::RESET_STREAM, [id, code, size], flag::REQUEST_RESET));
            }
        }
        for (i, r) in self.recv.iter_mut().enumerate() {
            let id = match (i, request) {
                (0, Some(id)) => id,
                (0, None) => continue,
                _ => ((i as u64 - 1) << 2) | 3,
            };
            if let Some(code) = r.poll_stop_sending() {
                return Some((types::STOP_SENDING, [id, code, 0], flag::stop_sending(i)));
            }
            if let Some(max) = r.poll_max_stream_data() {
                return Some((types::MAX_STREAM_DATA, [id, max, 0], flag::max_stream_data(i)));
            }
        }
        let max = self.conn_recv.poll_update()?;
        Some((types::MAX_DATA, [max, 0, 0], flag::MAX_DATA))
    }

    /// The next chunk of stream data to send (control stream first), at most `max` bytes.
    pub(crate) fn next_chunk(&self, max: usize) -> Option<(Sender, u64, Chunk)> {
        if self.control_open {
            if let Some(c) = self.control.next_chunk(max) {
                return Some((Sender::Control, CONTROL_ID, c));
            }
        }
        let id = self.request_id()?;
        self.req_send.next_chunk(max).map(|c| (Sender::Request, id, c))
    }

    /// Nothing sent in 0-RTT packets was processed (0-RTT rejected, RFC 9001 §4.6.2, or a
    /// Retry, RFC 9000 §17.2.5.3): every unacknowledged byte, RESET_STREAM and STOP_SENDING
    /// is queued again. MAX_DATA and MAX_STREAM_DATA cannot have been among them: no
    /// stream data is read before the server's 1-RTT packets, which come after the verdict.
    pub(crate) fn requeue_all(&mut self) {
        for s in [&mut self.control, &mut self.req_send] {
            s.requeue_unacked();
            s.on_reset_lost();
        }
        for r in self.recv.iter_mut() {
            r.on_stop_sending_lost();
        }
    }

    /// The peer raised MAX_STREAMS for `dir` (RFC 9000 §19.11: smaller values ignored).
    pub(crate) fn on_max_streams(&mut self, dir: StreamDir, max: u64) {
        let m = match dir {
            StreamDir::Bidi => &mut self.peer_max_streams[0],
            StreamDir::Uni => &mut self.peer_max_streams[1],
        };
        *m = (*m).max(clamp32(max));
    }
}

/// Where a frame's stream is ([`Streams::check_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Control,
    Request,
    PeerUni(usize),
    /// A request stream that has been replaced: frames for it are ignored.
    Gone,
}

/// The stream buffers of [`DeviceStorage`].
pub(crate) struct Bufs<S> {
    pub(crate) control: S,
    pub(crate) request: (S, S),
    pub(crate) peer_uni: [S; PEER_UNI],
}
