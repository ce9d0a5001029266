//! A fixed-capacity table of live streams tying the pieces together for the connection.

use super::flow::{RecvCredit, SendCredit};
use super::limits::{FrameKind, Opened, StreamLimits};
use super::reassembly::Insert;
use super::recv::{Read, RecvStream};
use super::send::{Chunk, SendStream, WriteError};
use super::{StreamError, StreamId};
use crate::arith::Sat64 as _;
use crate::coding::{VarInt, Writer};
use crate::frame::{Frame, StreamDir};
use crate::transport_params::{Side, TransportParameters};

/// Our side of the flow-control and stream-count transport parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// initial_max_data: the connection receive window.
    pub max_data: u64,
    /// initial_max_stream_data_bidi_local: window of bidirectional streams we open
    /// (clamped to each slot's receive buffer).
    pub max_stream_data_bidi_local: u64,
    /// initial_max_stream_data_bidi_remote: window of bidirectional streams the peer opens.
    pub max_stream_data_bidi_remote: u64,
    /// initial_max_stream_data_uni: window of unidirectional streams the peer opens.
    pub max_stream_data_uni: u64,
    /// initial_max_streams_bidi: bidirectional streams the peer may keep open at once.
    pub max_streams_bidi: u64,
    /// initial_max_streams_uni: unidirectional streams the peer may keep open at once.
    pub max_streams_uni: u64,
}

impl StreamConfig {
    /// These limits with the peer's stream counts capped to `n` slots, bidirectional first
    /// (each peer stream the limits allow holds a slot). What the table enforces and what
    /// the transport parameters advertise both come from here, so they cannot differ (RFC
    /// 9000 §4.6: the peer may open every stream we advertise).
    pub const fn for_slots(mut self, n: usize) -> Self {
        // The connection window within what the credit books hold (4 GiB without `std`):
        // advertising more than is enforced would turn the peer's use of it into a
        // FLOW_CONTROL_ERROR (RFC 9000 §4.1).
        let max = super::wide(super::Offset::MAX);
        self.max_data = if self.max_data < max { self.max_data } else { max };
        let n = n as u64;
        self.max_streams_bidi = if self.max_streams_bidi < n { self.max_streams_bidi } else { n };
        let left = n - self.max_streams_bidi;
        self.max_streams_uni =
            if self.max_streams_uni < left { self.max_streams_uni } else { left };
        self
    }

    /// Writes these values into our transport parameters, with each stream window clamped
    /// to `buffer` (the receive buffer of a slot) so nothing is advertised beyond storage.
    pub fn apply_to(&self, tp: &mut TransportParameters, buffer: usize) {
        let b = buffer as u64;
        let v = |x: u64| VarInt::new(x).unwrap_or(VarInt::MAX);
        tp.initial_max_data = v(self.max_data);
        tp.initial_max_stream_data_bidi_local = v(self.max_stream_data_bidi_local.min(b));
        tp.initial_max_stream_data_bidi_remote = v(self.max_stream_data_bidi_remote.min(b));
        tp.initial_max_stream_data_uni = v(self.max_stream_data_uni.min(b));
        tp.initial_max_streams_bidi = v(self.max_streams_bidi);
        tp.initial_max_streams_uni = v(self.max_streams_uni);
    }
}

/// Which halves of a slot a stream uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamUse {
    /// Bidirectional.
    Both,
    /// Our unidirectional stream.
    SendOnly,
    /// The peer's unidirectional stream.
    RecvOnly,
}

/// One slot: a send and a receive half over their own storage, reused by successive
/// streams. A unidirectional stream leaves one half idle.
#[derive(Clone, Debug)]
pub struct Slot<S, const R: usize> {
    id: Option<StreamId>,
    usage: StreamUse,
    /// The sending part.
    pub send: SendStream<S, R>,
    /// The receiving part.
    pub recv: RecvStream<S, R>,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const R: usize> Slot<S, R> {
    /// The stream in this slot, if any.
    pub const fn id(&self) -> Option<StreamId> {
        self.id
    }

    /// Which halves the stream uses.
    pub const fn usage(&self) -> StreamUse {
        self.usage
    }

    fn is_closed(&self) -> bool {
        let send = self.usage == StreamUse::RecvOnly || self.send.is_closed();
        let recv = self.usage == StreamUse::SendOnly || self.recv.is_closed();
        send && recv
    }
}

/// A frame the stream layer wants sent, other than STREAM data. The connection records it
/// with the packet and reports it back through [`Streams::on_control_acked`] or
/// [`Streams::on_control_lost`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// RESET_STREAM (§19.4).
    ResetStream {
        /// The stream.
        id: StreamId,
        /// Application error code.
        code: u64,
        /// Final size.
        final_size: u64,
    },
    /// STOP_SENDING (§19.5).
    StopSending {
        /// The stream.
        id: StreamId,
        /// Application error code.
        code: u64,
    },
    /// MAX_DATA (§19.9).
    MaxData(u64),
    /// MAX_STREAM_DATA (§19.10).
    MaxStreamData {
        /// The stream.
        id: StreamId,
        /// The new limit.
        max: u64,
    },
    /// MAX_STREAMS (§19.11).
    MaxStreams {
        /// Stream type.
        dir: StreamDir,
        /// The new cumulative limit.
        max: u64,
    },
    /// DATA_BLOCKED (§19.12).
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED (§19.13).
    StreamDataBlocked {
        /// The stream.
        id: StreamId,
        /// The limit we are blocked at.
        limit: u64,
    },
    /// STREAMS_BLOCKED (§19.14).
    StreamsBlocked {
        /// Stream type.
        dir: StreamDir,
        /// The limit we are blocked at.
        limit: u64,
    },
}

/// The peer's initial limit (`[bidi_local, bidi_remote, uni]` of its transport parameters)
/// for the sending part of `id` at endpoint `side`.
fn send_credit_for(side: Side, peer: [u64; 3], id: StreamId) -> u64 {
    let [bidi_local, bidi_remote, uni] = peer;
    match (id.dir(), id.is_local(side)) {
        // The peer's bidi_remote covers the streams we (remote from its view) open.
        (StreamDir::Bidi, true) => bidi_remote,
        (StreamDir::Bidi, false) => bidi_local,
        (StreamDir::Uni, _) => uni,
    }
}

fn vi(v: u64) -> VarInt {
    VarInt::new(v).unwrap_or(VarInt::MAX)
}

impl Control {
    /// The wire frame.
    pub fn frame(&self) -> Frame<'static> {
        match *self {
            Control::ResetStream { id, code, final_size } => Frame::ResetStream {
                stream_id: id.varint(),
                error_code: vi(code),
                final_size: vi(final_size),
            },
            Control::StopSending { id, code } => {
                Frame::StopSending { stream_id: id.varint(), error_code: vi(code) }
            }
            Control::MaxData(max) => Frame::MaxData { max: vi(max) },
            Control::MaxStreamData { id, max } => {
                Frame::MaxStreamData { stream_id: id.varint(), max: vi(max) }
            }
            Control::MaxStreams { dir, max } => Frame::MaxStreams { dir, max: vi(max) },
            Control::DataBlocked(limit) => Frame::DataBlocked { limit: vi(limit) },
            Control::StreamDataBlocked { id, limit } => {
                Frame::StreamDataBlocked { stream_id: id.varint(), limit: vi(limit) }
            }
            Control::StreamsBlocked { dir, limit } => {
                Frame::StreamsBlocked { dir, limit: vi(limit) }
            }
        }
    }

    /// Writes the frame (RFC 9000 §19.4–§19.14) or, if it does not fit, nothing; returns
    /// whether it was written. The same bytes as `self.frame().emit_whole(w)`, but every
    /// control frame is a type and one to three varints, so one loop writes them all
    /// (smaller on a device than building a [`Frame`] and matching it again).
    pub fn emit_whole(&self, w: &mut Writer<'_>) -> bool {
        use crate::frame::types as ty;
        let bidi = |dir: StreamDir, b: u64, u: u64| if dir == StreamDir::Bidi { b } else { u };
        let (t, fields, n) = match *self {
            Control::ResetStream { id, code, final_size } => {
                (ty::RESET_STREAM, [id.raw(), code, final_size], 3)
            }
            Control::StopSending { id, code } => (ty::STOP_SENDING, [id.raw(), code, 0], 2),
            Control::MaxData(max) => (ty::MAX_DATA, [max, 0, 0], 1),
            Control::MaxStreamData { id, max } => (ty::MAX_STREAM_DATA, [id.raw(), max, 0], 2),
            Control::MaxStreams { dir, max } => {
                (bidi(dir, ty::MAX_STREAMS_BIDI, ty::MAX_STREAMS_UNI), [max, 0, 0], 1)
            }
            Control::DataBlocked(limit) => (ty::DATA_BLOCKED, [limit, 0, 0], 1),
            Control::StreamDataBlocked { id, limit } => {
                (ty::STREAM_DATA_BLOCKED, [id.raw(), limit, 0], 2)
            }
            Control::StreamsBlocked { dir, limit } => {
                (bidi(dir, ty::STREAMS_BLOCKED_BIDI, ty::STREAMS_BLOCKED_UNI), [limit, 0, 0], 1)
            }
        };
        crate::frame::put_frame(w, t, fields.get(..n).unwrap_or(&[]), &[], false)
    }
}

/// What [`Streams::on_frame`] did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// Processed (or ignored as allowed, e.g. for a closed stream).
    Processed,
    /// A STREAM frame's data was dropped: do not acknowledge its packet (see
    /// [`Insert::Dropped`]).
    Dropped,
    /// Not a stream or flow-control frame.
    NotMine,
}

/// Why [`Streams::open`] could not open a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The peer's MAX_STREAMS is reached; STREAMS_BLOCKED is queued.
    Blocked,
    /// Every slot left for local streams is in use.
    NoSlot,
}

/// All streams of a connection: `N` slots, each with a send and a receive buffer of storage
/// `S` and range sets of `R` entries, plus connection-level flow control and stream counts.
///
/// The slots are split: `max_streams_bidi + max_streams_uni` (from [`StreamConfig`], capped
/// so they fit) are reserved for the peer — the advertised MAX_STREAMS never lets it hold
/// more open at once — and the rest serve streams we open. A peer within its limits
/// therefore always finds a slot.
///
/// Memory: `N × (send buffer + receive buffer + 48·R + 264)` bytes plus 360 (376 on
/// 64-bit) for the connection state on hosts; without `std` (32-bit offsets) and `reorder`
/// `N × (buffers + 8·R + 168)` plus 320 (328 on 64-bit) (measured on `thumbv7em` and
/// x86-64). A device with `N = 4`, 1 KiB buffers and `R = 4` spends 9,312 bytes, 8 KiB of
/// them buffers.
#[derive(Clone, Debug)]
pub struct Streams<S, const N: usize, const R: usize> {
    side: Side,
    cfg: StreamConfig,
    limits: StreamLimits,
    slots: [Slot<S, R>; N],
    conn_send: SendCredit,
    conn_recv: RecvCredit,
    /// Peer's initial stream limits: bidi_local, bidi_remote, uni.
    peer_stream_data: [u64; 3],
    local_live: usize,
    local_slots: usize,
    /// Round-robin cursor for stream data.
    next: usize,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, const N: usize, const R: usize> Streams<S, N, R> {
    /// A table for endpoint `side` with our limits `cfg`; `storage` gives each slot its
    /// (send, receive) buffers. Peer stream counts are capped to `N` slots.
    pub fn new(side: Side, cfg: StreamConfig, storage: [(S, S); N]) -> Self {
        let mut table = core::mem::MaybeUninit::uninit();
        // SAFETY: a local slot, valid for the write; `write_new` initializes it entirely.
        #[allow(unsafe_code)]
        unsafe {
            Self::write_new(table.as_mut_ptr(), side, cfg, storage);
            table.assume_init()
        }
    }

    /// [`Streams::new`] written to `dst` in place, one slot at a time: a device building
    /// its connection in a static never holds the table (~3 KB) on its stack.
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self`; what it held is not dropped.
    /// On return it is initialized.
    #[allow(unsafe_code)]
    #[inline(never)]
    pub(crate) unsafe fn write_new(
        dst: *mut Self,
        side: Side,
        cfg: StreamConfig,
        storage: [(S, S); N],
    ) {
        use core::ptr::addr_of_mut;
        let cfg = cfg.for_slots(N);
        let reserved = (cfg.max_streams_bidi + cfg.max_streams_uni) as usize;
        // SAFETY: the caller's contract; every field and every slot is written once, through
        // field addresses (no reference to the uninitialized table).
        unsafe {
            addr_of_mut!((*dst).side).write(side);
            addr_of_mut!((*dst).cfg).write(cfg);
            let limits = StreamLimits::new(side, cfg.max_streams_bidi, cfg.max_streams_uni);
            addr_of_mut!((*dst).limits).write(limits);
            let slots = addr_of_mut!((*dst).slots).cast::<Slot<S, R>>();
            // Field by field, each part written to its place: no whole `Slot` (both
            // streams' range sets) on the stack (issue 8).
            for (i, (s, r)) in storage.into_iter().enumerate() {
                let slot = slots.add(i);
                addr_of_mut!((*slot).id).write(None);
                addr_of_mut!((*slot).usage).write(StreamUse::Both);
                addr_of_mut!((*slot).send).write(SendStream::new(s, 0));
                addr_of_mut!((*slot).recv).write(RecvStream::new(r, 0));
            }
            addr_of_mut!((*dst).conn_send).write(SendCredit::new(0));
            addr_of_mut!((*dst).conn_recv).write(RecvCredit::new(cfg.max_data));
            addr_of_mut!((*dst).peer_stream_data).write([0; 3]);
            addr_of_mut!((*dst).local_live).write(0);
            addr_of_mut!((*dst).local_slots).write(N - reserved);
            addr_of_mut!((*dst).next).write(0);
        }
    }

    /// Names every field (an exhaustive pattern, never called): a new field fails to build
    /// until [`Streams::write_new`] writes it.
    #[allow(dead_code)]
    fn all_fields(&self) {
        let Self {
            side: _,
            cfg: _,
            limits: _,
            slots: _,
            conn_send: _,
            conn_recv: _,
            peer_stream_data: _,
            local_live: _,
            local_slots: _,
            next: _,
        } = self;
    }

    /// The (possibly capped) configuration in force.
    pub const fn config(&self) -> &StreamConfig {
        &self.cfg
    }

    /// Stream counts.
    pub const fn limits(&self) -> &StreamLimits {
        &self.limits
    }

    /// Stream counts, e.g. to change the MAX_STREAMS batch.
    pub fn limits_mut(&mut self) -> &mut StreamLimits {
        &mut self.limits
    }

    /// Connection-level send credit (the peer's MAX_DATA).
    pub const fn conn_send(&self) -> &SendCredit {
        &self.conn_send
    }

    /// Connection-level receive credit (our MAX_DATA).
    pub const fn conn_recv(&self) -> &RecvCredit {
        &self.conn_recv
    }

    /// Sets how far MAX_DATA must be able to move before it is sent.
    pub fn set_max_data_threshold(&mut self, bytes: u64) {
        self.conn_recv.set_update_threshold(bytes);
    }

    /// Applies the peer's transport parameters: MAX_DATA, stream limits and counts.
    /// Existing streams only ever gain credit.
    pub fn on_peer_params(&mut self, tp: &TransportParameters) {
        self.conn_send.on_max(tp.initial_max_data.into_inner());
        self.peer_stream_data = [
            tp.initial_max_stream_data_bidi_local.into_inner(),
            tp.initial_max_stream_data_bidi_remote.into_inner(),
            tp.initial_max_stream_data_uni.into_inner(),
        ];
        self.limits.on_peer_params(
            tp.initial_max_streams_bidi.into_inner(),
            tp.initial_max_streams_uni.into_inner(),
        );
        let (side, limits) = (self.side, self.peer_stream_data);
        for slot in self.slots.iter_mut() {
            if let Some(id) = slot.id {
                slot.send.on_max_stream_data(send_credit_for(side, limits, id));
            }
        }
    }

    /// RFC 9001 §4.6.2: "When 0-RTT is rejected, all connection characteristics that the
    /// client assumed might be incorrect", and RFC 9000 §7.4.1 lets only a server that
    /// accepts 0-RTT data promise not to reduce limits: the server's new MAX_DATA, stream
    /// limits and stream counts replace the remembered ones, even lower ones. Returns false
    /// when the streams opened or bytes written in 0-RTT do not fit them (that data cannot
    /// be sent again within them).
    pub fn replace_peer_params(&mut self, tp: &TransportParameters) -> bool {
        let mut fits = self.conn_send.replace_max(tp.initial_max_data.into_inner());
        self.peer_stream_data = [
            tp.initial_max_stream_data_bidi_local.into_inner(),
            tp.initial_max_stream_data_bidi_remote.into_inner(),
            tp.initial_max_stream_data_uni.into_inner(),
        ];
        fits &= self
            .limits
            .replace_local_max(StreamDir::Bidi, tp.initial_max_streams_bidi.into_inner());
        fits &=
            self.limits.replace_local_max(StreamDir::Uni, tp.initial_max_streams_uni.into_inner());
        let (side, limits) = (self.side, self.peer_stream_data);
        for slot in self.slots.iter_mut() {
            if let Some(id) = slot.id.filter(|id| id.is_local(side)) {
                fits &= slot.send.replace_max_stream_data(send_credit_for(side, limits, id));
            }
        }
        fits
    }

    /// The peer's initial limit for our sending part of `id`.
    fn send_credit_for(&self, id: StreamId) -> u64 {
        send_credit_for(self.side, self.peer_stream_data, id)
    }

    /// Our window for the receiving part of `id`.
    fn recv_window_for(&self, id: StreamId) -> u64 {
        match (id.dir(), id.is_local(self.side)) {
            (StreamDir::Bidi, true) => self.cfg.max_stream_data_bidi_local,
            (StreamDir::Bidi, false) => self.cfg.max_stream_data_bidi_remote,
            (StreamDir::Uni, _) => self.cfg.max_stream_data_uni,
        }
    }

    fn find(&self, id: StreamId) -> Option<usize> {
        self.slots.iter().position(|s| s.id == Some(id))
    }

    /// The slot index of live stream `id` if we can send on it (`send`) or receive on it.
    // Out of line: the application's five stream calls share it (issue 8).
    #[inline(never)]
    fn find_for(&self, id: StreamId, send: bool) -> Option<usize> {
        let ok = if send { id.can_send(self.side) } else { id.can_recv(self.side) };
        self.find(id).filter(|_| ok)
    }

    /// The slot of a live stream.
    pub fn slot(&self, id: StreamId) -> Option<&Slot<S, R>> {
        self.find(id).and_then(|i| self.slots.get(i))
    }

    /// Live streams.
    pub fn live(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.slots.iter().filter_map(|s| s.id)
    }

    /// Puts stream `id` in a free slot.
    fn alloc(&mut self, id: StreamId) -> Option<usize> {
        let i = self.slots.iter().position(|s| s.id.is_none())?;
        let usage = match (id.dir(), id.is_local(self.side)) {
            (StreamDir::Bidi, _) => StreamUse::Both,
            (StreamDir::Uni, true) => StreamUse::SendOnly,
            (StreamDir::Uni, false) => StreamUse::RecvOnly,
        };
        let credit = if usage == StreamUse::RecvOnly { 0 } else { self.send_credit_for(id) };
        let window = if usage == StreamUse::SendOnly { 0 } else { self.recv_window_for(id) };
        let slot = self.slots.get_mut(i)?;
        slot.id = Some(id);
        slot.usage = usage;
        slot.send.reinit(credit);
        slot.recv.reinit(window);
        Some(i)
    }

    /// Frees slot `i` if its stream is fully closed, returning credit for peer streams.
    fn maybe_free(&mut self, i: usize) {
        let Some(slot) = self.slots.get_mut(i) else { return };
        let Some(id) = slot.id else { return };
        if !slot.is_closed() {
            return;
        }
        slot.id = None;
        if id.is_local(self.side) {
            self.local_live = self.local_live.saturating_sub(1);
        } else {
            self.limits.on_remote_closed(id.dir());
        }
    }

    /// Opens a stream of `dir`.
    pub fn open(&mut self, dir: StreamDir) -> Result<StreamId, OpenError> {
        if self.local_live >= self.local_slots {
            return Err(OpenError::NoSlot);
        }
        let id = self.limits.open(dir).ok_or(OpenError::Blocked)?;
        // Reserved peer slots are never used here, so one is free.
        self.alloc(id).ok_or(OpenError::NoSlot)?;
        self.local_live += 1;
        Ok(id)
    }

    /// Writes to stream `id` (see [`SendStream::write`]).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, WriteError> {
        let i = self.find_for(id, true);
        let slot = i.and_then(|i| self.slots.get_mut(i)).ok_or(WriteError::UnknownStream)?;
        slot.send.write(&mut self.conn_send, data)
    }

    /// Ends stream `id` after the data written (FIN).
    pub fn finish(&mut self, id: StreamId) -> Result<(), WriteError> {
        let i = self.find_for(id, true);
        let slot = i.and_then(|i| self.slots.get_mut(i)).ok_or(WriteError::UnknownStream)?;
        slot.send.finish()
    }

    /// Resets the sending part of `id` (RESET_STREAM). False if there was nothing to reset.
    pub fn reset(&mut self, id: StreamId, code: u64) -> bool {
        match self.find_for(id, true) {
            Some(i) => self.slots.get_mut(i).is_some_and(|s| s.send.reset(code)),
            None => false,
        }
    }

    /// Reads from stream `id` (see [`RecvStream::read`]); `None` if no such readable stream.
    pub fn read(&mut self, id: StreamId, out: &mut [u8]) -> Option<Read> {
        let i = self.find_for(id, false)?;
        let r = self.slots.get_mut(i)?.recv.read(&mut self.conn_recv, out);
        self.maybe_free(i);
        Some(r)
    }

    /// Stops reading stream `id` (STOP_SENDING with `code`).
    pub fn stop_sending(&mut self, id: StreamId, code: u64) {
        if let Some(i) = self.find_for(id, false) {
            if let Some(slot) = self.slots.get_mut(i) {
                slot.recv.stop(&mut self.conn_recv, code);
            }
            self.maybe_free(i);
        }
    }

    /// Checks a frame's stream ID, opening peer streams as needed. `None` for a stream that
    /// has closed (its frames are ignored).
    fn stream_for(&mut self, id: StreamId, kind: FrameKind) -> Result<Option<usize>, StreamError> {
        match self.limits.on_frame(id, kind)? {
            Opened::Existing => Ok(self.find(id)),
            Opened::New { first, last } => {
                let peer = if self.side == Side::Client { Side::Server } else { Side::Client };
                for index in first..=last {
                    let sid = StreamId::from_parts(peer, id.dir(), index)
                        .ok_or(StreamError::StreamLimit)?;
                    // Slots for peer streams are reserved by the advertised limit.
                    self.alloc(sid).ok_or(StreamError::StreamLimit)?;
                }
                Ok(self.find(id))
            }
        }
    }

    /// Processes a stream or flow-control frame from the peer: STREAM, RESET_STREAM,
    /// STOP_SENDING, MAX_DATA, MAX_STREAM_DATA, MAX_STREAMS, DATA_BLOCKED,
    /// STREAM_DATA_BLOCKED, STREAMS_BLOCKED. Other frames report [`Handled::NotMine`].
    pub fn on_frame(&mut self, frame: &Frame<'_>) -> Result<Handled, StreamError> {
        // The frames naming a stream check its ID (opening peer streams) through one call.
        let (stream_id, kind) = match *frame {
            Frame::Stream { stream_id, .. } => (stream_id, FrameKind::Stream),
            Frame::ResetStream { stream_id, .. } => (stream_id, FrameKind::ResetStream),
            Frame::StopSending { stream_id, .. } => (stream_id, FrameKind::StopSending),
            Frame::MaxStreamData { stream_id, .. } => (stream_id, FrameKind::MaxStreamData),
            Frame::StreamDataBlocked { stream_id, .. } => (stream_id, FrameKind::StreamDataBlocked),
            Frame::MaxData { max } => {
                self.conn_send.on_max(max.into_inner());
                return Ok(Handled::Processed);
            }
            Frame::MaxStreams { dir, max } => {
                self.limits.on_max_streams(dir, max.into_inner());
                return Ok(Handled::Processed);
            }
            Frame::DataBlocked { .. } | Frame::StreamsBlocked { .. } => {
                return Ok(Handled::Processed)
            }
            _ => return Ok(Handled::NotMine),
        };
        // `None`: a stream that has closed; its frames are ignored.
        let Some(i) = self.stream_for(StreamId::from(stream_id), kind)? else {
            return Ok(Handled::Processed);
        };
        let Some(slot) = self.slots.get_mut(i) else { return Ok(Handled::Processed) };
        match *frame {
            Frame::Stream { offset, data, fin, .. } => {
                let r = slot.recv.on_stream(&mut self.conn_recv, offset.into_inner(), data, fin)?;
                self.maybe_free(i);
                if r == Insert::Dropped {
                    return Ok(Handled::Dropped);
                }
            }
            Frame::ResetStream { error_code, final_size, .. } => {
                slot.recv.on_reset(
                    &mut self.conn_recv,
                    error_code.into_inner(),
                    final_size.into_inner(),
                )?;
                self.maybe_free(i);
            }
            Frame::StopSending { error_code, .. } => {
                slot.send.on_stop_sending(error_code.into_inner());
            }
            Frame::MaxStreamData { max, .. } => slot.send.on_max_stream_data(max.into_inner()),
            // STREAM_DATA_BLOCKED: only the stream ID check above.
            _ => {}
        }
        Ok(Handled::Processed)
    }

    /// True if [`Streams::poll_control`] has a frame to give. Changes nothing.
    pub fn wants_control(&self) -> bool {
        self.conn_recv.update_pending()
            || self.conn_send.blocked_pending()
            || self.limits.has_pending()
            || self.slots.iter().any(|s| {
                s.id.is_some()
                    && ((s.usage != StreamUse::RecvOnly && s.send.wants_control())
                        || (s.usage != StreamUse::SendOnly && s.recv.wants_control()))
            })
    }

    /// True if [`Streams::next_chunk`] has stream data (or a FIN) to send.
    pub fn wants_to_send(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.id.is_some() && s.usage != StreamUse::RecvOnly && s.send.wants_to_send())
    }

    /// Bytes [`Streams::write`] would accept on `id` now (buffer, stream and connection
    /// credit); 0 for an unknown stream.
    pub fn send_capacity(&self, id: StreamId) -> u64 {
        match self.slot(id) {
            Some(slot) if id.can_send(self.side) => {
                let buf = (slot.send.capacity() as u64).sat_sub(slot.send.buffered());
                buf.min(slot.send.credit().available()).min(self.conn_send.available())
            }
            _ => 0,
        }
    }

    /// Queues every unacknowledged byte of every stream for retransmission (0-RTT data the
    /// server rejected, RFC 9001 §4.6.2).
    pub fn requeue_all(&mut self) {
        for slot in self.slots.iter_mut() {
            if slot.id.is_some() && slot.usage != StreamUse::RecvOnly {
                slot.send.requeue_unacked();
            }
        }
    }

    /// Bytes ready to read on `id`.
    pub fn readable(&self, id: StreamId) -> u64 {
        self.slot(id).map_or(0, |s| s.recv.readable())
    }

    /// The next control frame to send, if any: resets and STOP_SENDING first, then credit
    /// updates, then blocked signals. Each call marks the returned frame sent.
    // Out of line: inlined into the packet builder it is larger (issue 8, measured).
    #[inline(never)]
    #[cfg(feature = "std")]
    pub fn poll_control(&mut self) -> Option<Control> {
        for slot in self.slots.iter_mut() {
            let Some(id) = slot.id else { continue };
            if let Some((code, final_size)) = slot.send.poll_reset() {
                return Some(Control::ResetStream { id, code, final_size });
            }
            if let Some(code) = slot.recv.poll_stop_sending() {
                return Some(Control::StopSending { id, code });
            }
        }
        if let Some(max) = self.conn_recv.poll_update() {
            return Some(Control::MaxData(max));
        }
        for slot in self.slots.iter_mut() {
            let Some(id) = slot.id else { continue };
            if slot.usage != StreamUse::SendOnly {
                if let Some(max) = slot.recv.poll_max_stream_data() {
                    return Some(Control::MaxStreamData { id, max });
                }
            }
        }
        if let Some((dir, max)) = self.limits.poll_max_streams() {
            return Some(Control::MaxStreams { dir, max });
        }
        if let Some(limit) = self.conn_send.poll_blocked() {
            return Some(Control::DataBlocked(limit));
        }
        for slot in self.slots.iter_mut() {
            let Some(id) = slot.id else { continue };
            if let Some(limit) = slot.send.poll_blocked() {
                return Some(Control::StreamDataBlocked { id, limit });
            }
        }
        if let Some((dir, limit)) = self.limits.poll_streams_blocked() {
            return Some(Control::StreamsBlocked { dir, limit });
        }
        None
    }

    /// The next control frame to send, if any. Devices (without `std`, so without
    /// `blocked-frames` and `max-streams-updates`) have only RESET_STREAM, STOP_SENDING,
    /// MAX_STREAM_DATA and MAX_DATA to send: one pass over the slots gives each stream's
    /// frames, then MAX_DATA (issue 8). Each call marks the returned frame sent.
    #[inline(never)]
    #[cfg(not(feature = "std"))]
    pub fn poll_control(&mut self) -> Option<Control> {
        for slot in self.slots.iter_mut() {
            let Some(id) = slot.id else { continue };
            if let Some((code, final_size)) = slot.send.poll_reset() {
                return Some(Control::ResetStream { id, code, final_size });
            }
            if let Some(code) = slot.recv.poll_stop_sending() {
                return Some(Control::StopSending { id, code });
            }
            if slot.usage != StreamUse::SendOnly {
                if let Some(max) = slot.recv.poll_max_stream_data() {
                    return Some(Control::MaxStreamData { id, max });
                }
            }
        }
        if let Some(max) = self.conn_recv.poll_update() {
            return Some(Control::MaxData(max));
        }
        // Nothing else without the host features; kept so the frames the features add
        // are still sent when a device build enables them.
        if let Some((dir, max)) = self.limits.poll_max_streams() {
            return Some(Control::MaxStreams { dir, max });
        }
        if let Some(limit) = self.conn_send.poll_blocked() {
            return Some(Control::DataBlocked(limit));
        }
        for slot in self.slots.iter_mut() {
            let Some(id) = slot.id else { continue };
            if let Some(limit) = slot.send.poll_blocked() {
                return Some(Control::StreamDataBlocked { id, limit });
            }
        }
        if let Some((dir, limit)) = self.limits.poll_streams_blocked() {
            return Some(Control::StreamsBlocked { dir, limit });
        }
        None
    }

    /// A control frame from [`Streams::poll_control`] was acknowledged.
    pub fn on_control_acked(&mut self, c: Control) {
        match c {
            Control::ResetStream { id, .. } => {
                if let Some(i) = self.find(id) {
                    if let Some(slot) = self.slots.get_mut(i) {
                        slot.send.on_reset_acked();
                    }
                    self.maybe_free(i);
                }
            }
            Control::StopSending { id, .. } => {
                if let Some(slot) = self.find(id).and_then(|i| self.slots.get_mut(i)) {
                    slot.recv.on_stop_sending_acked();
                }
            }
            _ => {}
        }
    }

    /// A control frame from [`Streams::poll_control`] was lost: queue it again if still
    /// current.
    pub fn on_control_lost(&mut self, c: Control) {
        match c {
            Control::ResetStream { id, .. } => {
                if let Some(slot) = self.find(id).and_then(|i| self.slots.get_mut(i)) {
                    slot.send.on_reset_lost();
                }
            }
            Control::StopSending { id, .. } => {
                if let Some(slot) = self.find(id).and_then(|i| self.slots.get_mut(i)) {
                    slot.recv.on_stop_sending_lost();
                }
            }
            Control::MaxData(max) => self.conn_recv.on_update_lost(max),
            Control::MaxStreamData { id, max } => {
                if let Some(slot) = self.find(id).and_then(|i| self.slots.get_mut(i)) {
                    slot.recv.on_max_stream_data_lost(max);
                }
            }
            Control::MaxStreams { dir, max } => self.limits.on_max_streams_lost(dir, max),
            Control::DataBlocked(limit) => self.conn_send.on_blocked_lost(limit),
            Control::StreamDataBlocked { id, limit } => {
                if let Some(slot) = self.find(id).and_then(|i| self.slots.get_mut(i)) {
                    slot.send.on_blocked_lost(limit);
                }
            }
            Control::StreamsBlocked { dir, limit } => {
                self.limits.on_streams_blocked_lost(dir, limit)
            }
        }
    }

    /// The next stream chunk to send, at most `max_len` data bytes, round-robin over the
    /// streams. Record it with [`Streams::on_chunk_sent`].
    pub fn next_chunk(&self, max_len: usize) -> Option<(StreamId, Chunk)> {
        for k in 0..N {
            let mut i = self.next + k;
            if i >= N {
                i -= N;
            }
            let slot = self.slots.get(i)?;
            let Some(id) = slot.id else { continue };
            if slot.usage == StreamUse::RecvOnly {
                continue;
            }
            if let Some(c) = slot.send.next_chunk(max_len) {
                return Some((id, c));
            }
        }
        None
    }

    /// The bytes of a chunk from [`Streams::next_chunk`].
    pub fn chunk_bytes(&self, id: StreamId, chunk: &Chunk) -> &[u8] {
        match self.slot(id) {
            Some(slot) => slot.send.chunk_bytes(chunk),
            None => &[],
        }
    }

    /// Records a chunk sent; the next call to [`Streams::next_chunk`] starts after it.
    pub fn on_chunk_sent(&mut self, id: StreamId, chunk: &Chunk) {
        if let Some(i) = self.find(id) {
            if let Some(slot) = self.slots.get_mut(i) {
                slot.send.on_sent(chunk);
            }
            self.next = if i + 1 >= N { 0 } else { i + 1 };
        }
    }

    /// A packet carrying stream data was acknowledged.
    pub fn on_stream_acked(&mut self, id: StreamId, offset: u64, len: usize, fin: bool) {
        if let Some(i) = self.find(id) {
            if let Some(slot) = self.slots.get_mut(i) {
                slot.send.on_ack(offset, len, fin);
            }
            self.maybe_free(i);
        }
    }

    /// Queues the stream data of an unacknowledged packet again, minus what is already
    /// acknowledged (a PTO probe, RFC 9002 §6.2.4). Returns true if anything was queued.
    pub fn requeue_stream(&mut self, id: StreamId, offset: u64, len: usize, fin: bool) -> bool {
        match self.find(id).and_then(|i| self.slots.get_mut(i)) {
            Some(slot) if slot.usage != StreamUse::RecvOnly => slot.send.requeue(offset, len, fin),
            _ => false,
        }
    }

    /// A packet carrying stream data was lost.
    pub fn on_stream_lost(&mut self, id: StreamId, offset: u64, len: usize, fin: bool) {
        if let Some(slot) = self.find(id).and_then(|i| self.slots.get_mut(i)) {
            slot.send.on_lost(offset, len, fin);
        }
    }
}
