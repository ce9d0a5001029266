//! Stream counts (RFC 9000 §2.1, §3.2, §4.6): which streams exist, which frames may refer to
//! them (§19.4, §19.5, §19.8, §19.10, §19.13), MAX_STREAMS and STREAMS_BLOCKED.

use super::{StreamError, StreamId};
use crate::arith::Sat64 as _;
use crate::frame::{StreamDir, MAX_STREAM_COUNT};
use crate::transport_params::Side;

/// The stream frames a peer sends, for the direction rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// STREAM (§19.8): for our receiving part.
    Stream,
    /// RESET_STREAM (§19.4): for our receiving part.
    ResetStream,
    /// STREAM_DATA_BLOCKED (§19.13): for our receiving part.
    StreamDataBlocked,
    /// STOP_SENDING (§19.5): for our sending part.
    StopSending,
    /// MAX_STREAM_DATA (§19.10): for our sending part.
    MaxStreamData,
}

impl FrameKind {
    /// True if the frame concerns the part of the stream we receive on.
    pub const fn for_receiving_part(self) -> bool {
        matches!(self, Self::Stream | Self::ResetStream | Self::StreamDataBlocked)
    }
}

/// What a frame's stream ID refers to ([`StreamLimits::on_frame`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// A stream opened before (it may have been closed since: the frame is then ignored).
    Existing,
    /// The frame opened the peer's streams with indices `first..=last` of the frame's type
    /// (§3.2: opening a stream opens every lower-numbered one of that type).
    New {
        /// Lowest newly opened index.
        first: u64,
        /// Highest newly opened index (the frame's stream).
        last: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Local {
    /// Streams we have opened.
    opened: u64,
    /// The peer's MAX_STREAMS.
    max: u64,
    blocked_sent_at: Option<u64>,
    blocked_pending: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Remote {
    /// Streams the peer has opened (highest index + 1).
    opened: u64,
    /// Of those, fully closed.
    closed: u64,
    /// The MAX_STREAMS we advertised.
    max: u64,
    /// How many may be open at once: `max` is kept at `closed + concurrent`.
    concurrent: u64,
    /// Raise `max` once it can grow by this much.
    batch: u64,
    pending: bool,
}

/// Stream counts for both directions and both initiators.
///
/// Peer streams: the advertised MAX_STREAMS is `closed + concurrent`, so at most
/// `concurrent` peer streams of a type exist at once; credit comes back as streams fully
/// close and is sent in batches (by default half of `concurrent`, at least 1). A stream ID
/// at or beyond the advertised limit is a STREAM_LIMIT_ERROR. Local streams: opened while
/// below the peer's MAX_STREAMS, otherwise STREAMS_BLOCKED is queued once per limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamLimits {
    side: Side,
    local: [Local; 2],
    remote: [Remote; 2],
}

const fn di(dir: StreamDir) -> usize {
    match dir {
        StreamDir::Bidi => 0,
        StreamDir::Uni => 1,
    }
}

const DIRS: [StreamDir; 2] = [StreamDir::Bidi, StreamDir::Uni];

impl StreamLimits {
    /// Limits for endpoint `side` letting the peer keep `bidi` / `uni` streams open at once
    /// (our initial_max_streams_bidi / _uni transport parameters, capped at 2^60).
    pub const fn new(side: Side, bidi: u64, uni: u64) -> Self {
        const fn remote(n: u64) -> Remote {
            let n = if n > MAX_STREAM_COUNT { MAX_STREAM_COUNT } else { n };
            let half = n >> 1;
            Remote {
                opened: 0,
                closed: 0,
                max: n,
                concurrent: n,
                batch: if half == 0 { 1 } else { half },
                pending: false,
            }
        }
        let local = Local { opened: 0, max: 0, blocked_sent_at: None, blocked_pending: false };
        Self { side, local: [local; 2], remote: [remote(bidi), remote(uni)] }
    }

    /// Our side.
    pub const fn side(&self) -> Side {
        self.side
    }

    /// Sets how much MAX_STREAMS must be able to grow before it is sent (at least 1).
    pub fn set_batch(&mut self, dir: StreamDir, batch: u64) {
        self.remote[di(dir)].batch = batch.max(1);
    }

    /// The peer's initial_max_streams_bidi / _uni (how many streams we may open).
    pub fn on_peer_params(&mut self, bidi: u64, uni: u64) {
        self.on_max_streams(StreamDir::Bidi, bidi);
        self.on_max_streams(StreamDir::Uni, uni);
    }

    /// Checks a frame of `kind` for stream `id` and opens peer streams it implies.
    ///
    /// - our send-only stream (local uni) in STREAM / RESET_STREAM / STREAM_DATA_BLOCKED,
    ///   or our receive-only stream (peer uni) in STOP_SENDING / MAX_STREAM_DATA:
    ///   STREAM_STATE_ERROR;
    /// - a locally initiated stream we have not opened: STREAM_STATE_ERROR;
    /// - a peer stream at or beyond our MAX_STREAMS: STREAM_LIMIT_ERROR (§4.6).
    pub fn on_frame(&mut self, id: StreamId, kind: FrameKind) -> Result<Opened, StreamError> {
        let ok_dir =
            if kind.for_receiving_part() { id.can_recv(self.side) } else { id.can_send(self.side) };
        if !ok_dir {
            return Err(StreamError::StreamState);
        }
        let d = di(id.dir());
        let index = id.index();
        if id.is_local(self.side) {
            return if index < self.local[d].opened {
                Ok(Opened::Existing)
            } else {
                Err(StreamError::StreamState)
            };
        }
        let r = &mut self.remote[d];
        if index >= r.max {
            return Err(StreamError::StreamLimit);
        }
        if index < r.opened {
            return Ok(Opened::Existing);
        }
        let first = r.opened;
        r.opened = index + 1;
        Ok(Opened::New { first, last: index })
    }

    /// True if a local stream of `dir` may be opened now (the peer's limit allows it).
    pub const fn can_open(&self, dir: StreamDir) -> bool {
        let l = &self.local[di(dir)];
        l.opened < l.max
    }

    /// Opens the next local stream of `dir`, or queues STREAMS_BLOCKED (once per limit) and
    /// returns `None` when the peer's MAX_STREAMS is reached.
    pub fn open(&mut self, dir: StreamDir) -> Option<StreamId> {
        let side = self.side;
        let l = &mut self.local[di(dir)];
        if l.opened >= l.max {
            if cfg!(feature = "blocked-frames") && l.blocked_sent_at != Some(l.max) {
                l.blocked_pending = true;
            }
            return None;
        }
        let id = StreamId::from_parts(side, dir, l.opened)?;
        l.opened += 1;
        Some(id)
    }

    /// Streams of `dir` we have opened.
    pub const fn local_opened(&self, dir: StreamDir) -> u64 {
        self.local[di(dir)].opened
    }

    /// The peer's current MAX_STREAMS for `dir`.
    pub const fn local_max(&self, dir: StreamDir) -> u64 {
        self.local[di(dir)].max
    }

    /// Peer streams of `dir` opened so far (highest index + 1).
    pub const fn remote_opened(&self, dir: StreamDir) -> u64 {
        self.remote[di(dir)].opened
    }

    /// The MAX_STREAMS we advertised for `dir`.
    pub const fn remote_max(&self, dir: StreamDir) -> u64 {
        self.remote[di(dir)].max
    }

    /// A MAX_STREAMS frame arrived (§19.11); lower values are ignored.
    // Out of line: the frame and the peer's transport parameters (issue 8).
    #[inline(never)]
    pub fn on_max_streams(&mut self, dir: StreamDir, max: u64) {
        let l = &mut self.local[di(dir)];
        let max = max.min(MAX_STREAM_COUNT);
        if max > l.max {
            l.max = max;
            l.blocked_pending = false;
        }
    }

    /// The server rejected 0-RTT: its new initial_max_streams of `dir` replaces the
    /// remembered one (RFC 9001 §4.6.2, RFC 9000 §7.4.1). Returns whether the streams we
    /// opened fit it.
    pub fn replace_local_max(&mut self, dir: StreamDir, max: u64) -> bool {
        let l = &mut self.local[di(dir)];
        l.max = max.min(MAX_STREAM_COUNT);
        l.opened <= l.max
    }

    /// A peer stream of `dir` fully closed: its credit may come back (only with
    /// `max-streams-updates`; without it the initial limit is all the peer gets).
    pub fn on_remote_closed(&mut self, dir: StreamDir) {
        if !cfg!(feature = "max-streams-updates") {
            return;
        }
        let r = &mut self.remote[di(dir)];
        if r.closed < r.opened {
            r.closed += 1;
        }
        let next = r.closed.sat_add(r.concurrent).min(MAX_STREAM_COUNT);
        if next.sat_sub(r.max) >= r.batch {
            r.pending = true;
        }
    }

    /// True if a MAX_STREAMS or STREAMS_BLOCKED frame is waiting to be sent.
    pub fn has_pending(&self) -> bool {
        (cfg!(feature = "max-streams-updates") && self.remote.iter().any(|r| r.pending))
            || (cfg!(feature = "blocked-frames") && self.local.iter().any(|l| l.blocked_pending))
    }

    /// A MAX_STREAMS frame to send, if due: raises the advertised limit.
    pub fn poll_max_streams(&mut self) -> Option<(StreamDir, u64)> {
        if !cfg!(feature = "max-streams-updates") {
            return None;
        }
        for dir in DIRS {
            let r = &mut self.remote[di(dir)];
            if r.pending {
                r.pending = false;
                r.max = r.max.max(r.closed.sat_add(r.concurrent).min(MAX_STREAM_COUNT));
                return Some((dir, r.max));
            }
        }
        None
    }

    /// A MAX_STREAMS frame was lost: resend if it is still the latest.
    pub fn on_max_streams_lost(&mut self, dir: StreamDir, max: u64) {
        let r = &mut self.remote[di(dir)];
        if cfg!(feature = "max-streams-updates") && max == r.max {
            r.pending = true;
        }
    }

    /// A STREAMS_BLOCKED frame to send, if due. Marks it sent.
    pub fn poll_streams_blocked(&mut self) -> Option<(StreamDir, u64)> {
        if !cfg!(feature = "blocked-frames") {
            return None;
        }
        for dir in DIRS {
            let l = &mut self.local[di(dir)];
            if l.blocked_pending {
                l.blocked_pending = false;
                l.blocked_sent_at = Some(l.max);
                return Some((dir, l.max));
            }
        }
        None
    }

    /// A STREAMS_BLOCKED frame was lost: resend if still blocked at that limit.
    pub fn on_streams_blocked_lost(&mut self, dir: StreamDir, limit: u64) {
        let l = &mut self.local[di(dir)];
        if cfg!(feature = "blocked-frames") && limit == l.max && l.opened >= l.max {
            l.blocked_pending = true;
        }
    }
}
