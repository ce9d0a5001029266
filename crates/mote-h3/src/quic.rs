//! HTTP/3 over a mote-quic [`Connection`] (feature `quic`).
//!
//! Two pieces:
//!
//! - [`QuicTransport`]: [`crate::Transport`] for a borrowed mote-quic connection. Stream
//!   IDs are QUIC stream IDs on both sides, so every method is a direct call
//!   (`stream_open`, `stream_capacity`, `stream_send` + `stream_finish`, `stream_reset`,
//!   `stop_sending`, `close`).
//! - [`H3Session`]: the HTTP/3 session plus, per stream, the caller-owned
//!   [`StreamState`] and a small receive buffer. mote-h3 wants each stream's unconsumed
//!   contiguous bytes presented again until it consumes them; mote-quic's `stream_recv`
//!   copies out and consumes. The session therefore reads into a per-stream buffer
//!   bounded by what mote-h3 needs to make progress — `max_encoded_field_section + 9`
//!   on request streams (a whole HEADERS frame), [`UNI_BUFFER`] on unidirectional ones —
//!   and hands mote-h3 the buffer, dropping what it consumed. DATA payloads are handed out
//!   in pieces, so a body of any size streams through the bounded buffer. The receive step
//!   is `adapter`'s, shared with the heap-free `device` adapter.
//!
//! The adapter sits behind the `quic` feature (it needs `alloc` and mote-quic), so the
//! session itself stays free of any QUIC dependency (it is driven through its `Transport`
//! trait) and mote-quic free of HTTP/3. It is shared by the simulator scenarios
//! (`mote-scenarios`) and the real-socket client and server (`mote-net`). The buffers are
//! `Vec`s; `device` runs the same logic over fixed arrays.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

pub use crate::adapter::QuicTransport;
use crate::adapter::RecvBuffer;
use crate::{Config, Event, H3Error, Role, SendError, StreamState};
use mote_crypto::CryptoProvider;
use mote_quic::connection::Connection;
use mote_quic::connection::TlsSession;
use mote_quic::stream::StreamId;

/// Receive buffer of a unidirectional stream (control, QPACK): a SETTINGS frame with a
/// few settings, GOAWAY, MAX_PUSH_ID and unknown frames skipped in pieces fit.
pub const UNI_BUFFER: usize = 272;

/// One stream the session receives on: its mote-h3 state and its receive buffer.
#[derive(Debug)]
pub struct H3Stream {
    /// mote-h3's per-stream state.
    pub state: StreamState,
    rx: RecvBuffer<Vec<u8>>,
}

impl H3Stream {
    fn new(state: StreamState, cap: usize) -> Self {
        Self { state, rx: RecvBuffer::new(vec![0; cap]) }
    }
}

/// An HTTP/3 session over a mote-quic connection: the mote-h3 [`crate::Connection`], the
/// streams it receives on, and the decoded-fields buffer.
#[derive(Debug)]
pub struct H3Session {
    /// The mote-h3 session.
    pub h3: crate::Connection<'static>,
    /// The streams received on (peer streams and our request streams).
    pub streams: Vec<H3Stream>,
    fields: Vec<u8>,
    request_buffer: usize,
    opened: bool,
}

impl H3Session {
    /// A session for `role` with `config` (no dynamic table).
    pub fn new(role: Role, config: Config) -> Self {
        let fields = usize::try_from(config.max_field_section_size).unwrap_or(usize::MAX);
        let request_buffer =
            usize::try_from(config.max_encoded_field_section).unwrap_or(usize::MAX) + 9;
        Self {
            h3: crate::Connection::new(role, config),
            streams: Vec::new(),
            fields: vec![0; fields],
            request_buffer,
            opened: false,
        }
    }

    /// Whether the control stream (with SETTINGS) has been opened.
    pub const fn is_open(&self) -> bool {
        self.opened
    }

    fn is_local(&self, id: u64) -> bool {
        let client_initiated = id & 1 == 0;
        client_initiated == (self.h3.role() == Role::Client)
    }

    /// Opens the control stream with SETTINGS once the connection allows it (call on every
    /// drive until [`H3Session::is_open`]).
    pub fn open<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>(
        &mut self,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
    ) -> Result<(), SendError>
    where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        if !self.opened {
            self.h3.open(&mut QuicTransport { conn })?;
            self.opened = true;
        }
        Ok(())
    }

    /// Client: opens a request stream and returns its ID; send on it with
    /// [`H3Session::with_stream`].
    pub fn open_request<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>(
        &mut self,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
    ) -> Result<u64, SendError>
    where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        let state = self.h3.open_request(&mut QuicTransport { conn })?;
        let id = state.id();
        self.streams.push(H3Stream::new(state, self.request_buffer));
        Ok(id)
    }

    /// Runs `f` with the session, a transport and the state of stream `id` (e.g. to send a
    /// request, a response or body data). `None` if the stream is unknown.
    pub fn with_stream<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize, R>(
        &mut self,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
        id: u64,
        f: impl FnOnce(
            &mut crate::Connection<'static>,
            &mut QuicTransport<'_, P, T, C, S, N, SENT, RANGES>,
            &mut StreamState,
        ) -> R,
    ) -> Option<R>
    where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        let s = self.streams.iter_mut().find(|s| s.state.id() == id)?;
        Some(f(&mut self.h3, &mut QuicTransport { conn }, &mut s.state))
    }

    /// Passes a mote-quic event the session must see: STOP_SENDING from the peer.
    pub fn on_quic_event<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>(
        &mut self,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
        event: mote_quic::Event,
    ) -> Result<(), H3Error>
    where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        if let mote_quic::Event::StreamStopped { id, code } = event {
            let id = id.raw();
            let mut t = QuicTransport { conn };
            match self.streams.iter_mut().find(|s| s.state.id() == id) {
                Some(s) => self.h3.on_stop_sending(&mut t, &mut s.state, code)?,
                None => self.h3.on_stop_sending(&mut t, &mut StreamState::new(id), code)?,
            }
        }
        Ok(())
    }

    /// Reads every stream's available bytes, feeds them to mote-h3 and calls `handler` for
    /// each event (with the session, a transport to answer through and the stream's state), then flushes the session's control stream. New peer streams are found
    /// with `live_streams` (so a dropped `StreamOpened` event loses nothing). An `Err` is a
    /// connection error (the connection is being closed with it).
    pub fn poll<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize, F>(
        &mut self,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
        mut handler: F,
    ) -> Result<(), H3Error>
    where
        F: for<'x> FnMut(
            &mut crate::Connection<'static>,
            &mut QuicTransport<'x, P, T, C, S, N, SENT, RANGES>,
            &mut StreamState,
            Event<'_>,
        ),
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        // Adopt peer streams not seen yet.
        let new: Vec<u64> = conn
            .live_streams()
            .map(StreamId::raw)
            .filter(|&id| !self.is_local(id) && !self.streams.iter().any(|s| s.state.id() == id))
            .collect();
        for id in new {
            let cap = if id & 0x2 == 0 { self.request_buffer } else { UNI_BUFFER };
            self.streams.push(H3Stream::new(StreamState::new(id), cap));
        }
        for s in self.streams.iter_mut() {
            s.rx.pump(&mut self.h3, conn, &mut s.state, &mut self.fields, &mut handler)?;
        }
        // Forget streams that are done in both directions and that QUIC has released
        // (their IDs never come back in `live_streams`).
        let live: Vec<u64> = conn.live_streams().map(StreamId::raw).collect();
        self.streams.retain(|s| {
            let id = s.state.id();
            let sending_done = s.state.send_finished() || id & 0x2 != 0;
            !(s.state.recv_finished() && sending_done) || live.contains(&id)
        });
        self.h3.flush(&mut QuicTransport { conn })
    }
}
