//! HTTP/3 over a mote-quic [`Connection`] without a heap (feature `device`): the device's
//! adapter.
//!
//! - [`QuicTransport`]: [`Transport`] for a borrowed connection. Stream IDs are QUIC stream
//!   IDs on both sides, so every method is a direct call.
//! - [`Session`]: the HTTP/3 session, a fixed table of `STREAMS` receive streams with a
//!   `CAP`-byte buffer each, and a `FIELDS`-byte decoded-fields buffer, all inline (put the
//!   session in a `static` on a device). The session consumes only complete HEADERS and
//!   SETTINGS frames while `stream_recv` moves bytes out of QUIC, so each stream keeps the
//!   bytes the session has not consumed yet: `CAP` must hold the largest HEADERS frame
//!   accepted (`max_encoded_field_section + 9`) and a SETTINGS frame (the session checks
//!   SETTINGS against 256 bytes). DATA payloads go through in pieces, so a body of any size
//!   streams through the bounded buffer.
//!
//! Peer streams are adopted from `Connection::live_streams`, so a dropped `StreamOpened`
//! event loses nothing. The table is bounded: a device allows the server three
//! unidirectional streams (control, QPACK encoder and decoder, RFC 9114 §6.2) through
//! its `initial_max_streams_uni`, and `STREAMS` must cover those plus its own request
//! streams; a peer stream that finds no free entry is refused with STOP_SENDING
//! (H3_EXCESSIVE_LOAD) and never buffered.

use mote_crypto::CryptoProvider;
use mote_quic::connection::{Connection, TlsSession};
use mote_quic::stream::StreamId;

pub use crate::adapter::QuicTransport;
use crate::adapter::RecvBuffer;
use crate::connection::{Config, Event, Role, StreamState};
use crate::error::{H3Error, SendError};

/// One stream the session receives on: its mote-h3 state and the bytes not consumed yet.
#[derive(Debug)]
struct RecvStream<const CAP: usize> {
    state: StreamState,
    used: bool,
    rx: RecvBuffer<[u8; CAP]>,
}

impl<const CAP: usize> RecvStream<CAP> {
    const EMPTY: Self =
        Self { state: StreamState::new(0), used: false, rx: RecvBuffer::new([0; CAP]) };

    /// Takes this entry for the stream of `state` (in place: no buffer-sized temporary).
    fn take(&mut self, state: StreamState) {
        self.state = state;
        self.used = true;
        self.rx.reset();
    }
}

/// An HTTP/3 session over a mote-quic connection in fixed storage: `STREAMS` receive
/// streams of `CAP` bytes and a `FIELDS`-byte decoded-fields buffer (which bounds the
/// decoded size of a header section; give it `Config::max_field_section_size` bytes).
#[derive(Debug)]
pub struct Session<const STREAMS: usize, const CAP: usize, const FIELDS: usize> {
    h3: crate::Connection<'static>,
    streams: [RecvStream<CAP>; STREAMS],
    fields: [u8; FIELDS],
    opened: bool,
}

impl<const STREAMS: usize, const CAP: usize, const FIELDS: usize> Session<STREAMS, CAP, FIELDS> {
    /// A session for `role` with `config` (no dynamic table).
    pub fn new(role: Role, config: Config) -> Self {
        Self {
            h3: crate::Connection::new(role, config),
            streams: [RecvStream::EMPTY; STREAMS],
            fields: [0; FIELDS],
            opened: false,
        }
    }

    /// The mote-h3 session.
    pub const fn h3(&self) -> &crate::Connection<'static> {
        &self.h3
    }

    /// Whether the control stream (with SETTINGS) has been opened.
    pub const fn is_open(&self) -> bool {
        self.opened
    }

    /// Opens the control stream with SETTINGS once the connection allows it (call on every
    /// drive until [`Session::is_open`]).
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
    /// [`Session::with_stream`]. [`SendError::StreamLimit`] if QUIC refuses a stream or the
    /// table has no free entry (try again once a stream finished).
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
        let slot = self.streams.iter_mut().find(|s| !s.used).ok_or(SendError::StreamLimit)?;
        let state = self.h3.open_request(&mut QuicTransport { conn })?;
        let id = state.id();
        slot.take(state);
        Ok(id)
    }

    /// Runs `f` with the session, a transport and the state of stream `id` (to send a
    /// request, a response or body data). `None` if the stream is not in the table.
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
        let s = self.streams.iter_mut().find(|s| s.used && s.state.id() == id)?;
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
            match self.streams.iter_mut().find(|s| s.used && s.state.id() == id) {
                Some(s) => self.h3.on_stop_sending(&mut t, &mut s.state, code)?,
                None if StreamState::id_fits(id) => {
                    self.h3.on_stop_sending(&mut t, &mut StreamState::new(id), code)?
                }
                // Every stream this session opens has an ID that fits (`open_request`), so
                // a larger one is none of ours.
                None => {}
            }
        }
        Ok(())
    }

    fn is_local(&self, id: u64) -> bool {
        let client_initiated = id & 1 == 0;
        client_initiated == (self.h3.role() == Role::Client)
    }

    /// Reads every stream's available bytes, feeds them to mote-h3 and calls `handler` for
    /// each event (with the session, a transport to answer through and the stream's state),
    /// then flushes the session's control stream. An `Err` is a connection error (the
    /// connection is being closed with it).
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
        self.adopt_peer_streams(conn);
        let Self { h3, streams, fields, .. } = self;
        for s in streams.iter_mut().filter(|s| s.used) {
            s.rx.pump(h3, conn, &mut s.state, fields, &mut handler)?;
        }
        // Free entries done in both directions whose QUIC stream is gone (its ID never
        // comes back in `live_streams`).
        for s in streams.iter_mut().filter(|s| s.used) {
            let id = s.state.id();
            let sending_done = s.state.send_finished() || id & 0x2 != 0;
            if s.state.recv_finished()
                && sending_done
                && !conn.live_streams().any(|l| l.raw() == id)
            {
                s.used = false;
            }
        }
        h3.flush(&mut QuicTransport { conn })
    }

    /// Adds peer streams not seen yet to the table; one that finds no free entry is refused.
    fn adopt_peer_streams<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>(
        &mut self,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
    ) where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        let mut refused: Option<StreamId> = None;
        for id in conn.live_streams() {
            let raw = id.raw();
            if self.is_local(raw) || self.streams.iter().any(|s| s.used && s.state.id() == raw) {
                continue;
            }
            if !StreamState::id_fits(raw) {
                refused = Some(id);
                continue;
            }
            match self.streams.iter_mut().find(|s| !s.used) {
                Some(slot) => slot.take(StreamState::new(raw)),
                None => refused = Some(id),
            }
        }
        if let Some(id) = refused {
            // Bounded by QUIC's stream limits; one refusal per poll is enough to make
            // progress, the next poll finds the rest.
            conn.stop_sending(id, H3Error::ExcessiveLoad.code());
        }
    }
}
