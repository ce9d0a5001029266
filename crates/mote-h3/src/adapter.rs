//! What the adapters onto a mote-quic connection share (features `device` and `quic`):
//! [`QuicTransport`], and for `quic`'s session the per-stream receive step
//! ([`RecvBuffer::pump`]; the device client keeps its own fixed buffers).

use mote_crypto::CryptoProvider;
use mote_quic::connection::{Connection, TlsSession};
use mote_quic::frame::StreamDir;
use mote_quic::stream::{Read, StreamId};

use crate::connection::Transport;
#[cfg(feature = "quic")]
use crate::connection::{Event, StreamState};
#[cfg(feature = "quic")]
use crate::error::H3Error;

/// [`Transport`] over a borrowed mote-quic connection. Stream IDs are QUIC stream IDs on
/// both sides, so every method is a direct call.
pub struct QuicTransport<'a, P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// The QUIC connection.
    pub conn: &'a mut Connection<P, T, C, S, N, SENT, RANGES>,
}

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize> Transport
    for QuicTransport<'_, P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    fn open_uni(&mut self) -> Option<u64> {
        self.conn.stream_open(StreamDir::Uni).ok().map(StreamId::raw)
    }

    fn open_bidi(&mut self) -> Option<u64> {
        self.conn.stream_open(StreamDir::Bidi).ok().map(StreamId::raw)
    }

    fn capacity(&self, id: u64) -> usize {
        StreamId::new(id)
            .map_or(0, |id| usize::try_from(self.conn.stream_capacity(id)).unwrap_or(usize::MAX))
    }

    fn write(&mut self, id: u64, data: &[u8], fin: bool) -> usize {
        let Some(id) = StreamId::new(id) else { return 0 };
        let n = if data.is_empty() { 0 } else { self.conn.stream_send(id, data).unwrap_or(0) };
        if fin && n == data.len() {
            let _ = self.conn.stream_finish(id);
        }
        n
    }

    fn reset_stream(&mut self, id: u64, code: u64) {
        if let Some(id) = StreamId::new(id) {
            self.conn.stream_reset(id, code);
        }
    }

    fn stop_sending(&mut self, id: u64, code: u64) {
        if let Some(id) = StreamId::new(id) {
            self.conn.stop_sending(id, code);
        }
    }

    fn close(&mut self, code: u64) {
        self.conn.close(code, b"");
    }
}

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize> crate::client::Streams
    for QuicTransport<'_, P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    fn read(&mut self, id: u64, out: &mut [u8]) -> crate::client::Read {
        use crate::client::Read as R;
        let Some(id) = StreamId::new(id) else { return R::Gone };
        match self.conn.stream_recv(id, out) {
            Some(Read::Data(n)) => R::Data(n),
            Some(Read::Blocked) => R::Blocked,
            Some(Read::Fin) => R::Fin,
            Some(Read::Reset(code)) => R::Reset(code),
            Some(Read::Stopped) | None => R::Gone,
        }
    }

    fn live_streams(&self) -> impl Iterator<Item = u64> + '_ {
        self.conn.live_streams().map(StreamId::raw)
    }
}

/// A stream's received bytes that mote-h3 has not consumed yet. mote-h3 wants them
/// presented again until it consumes them; mote-quic's `stream_recv` copies out and
/// consumes, so they wait here. `buf`'s length is the bound.
#[cfg(feature = "quic")]
#[derive(Debug)]
pub(crate) struct RecvBuffer<B> {
    pub(crate) buf: B,
    pub(crate) len: usize,
    pub(crate) fin: bool,
}

#[cfg(feature = "quic")]
impl<B: AsRef<[u8]> + AsMut<[u8]>> RecvBuffer<B> {
    pub(crate) const fn new(buf: B) -> Self {
        Self { buf, len: 0, fin: false }
    }

    /// Moves what QUIC has for stream `state` into the buffer, feeds it to `h3` and calls
    /// `handler` for each event, until neither gives anything more. A RESET_STREAM from the
    /// peer ends the stream (mote-h3's `on_reset`). An `Err` is a connection error.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn pump<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize, F>(
        &mut self,
        h3: &mut crate::Connection<'static>,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
        state: &mut StreamState,
        fields: &mut [u8],
        handler: &mut F,
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
        let Some(qid) = StreamId::new(state.id()) else { return Ok(()) };
        loop {
            // Fill the buffer from QUIC.
            let mut read = 0;
            let mut reset = None;
            while !self.fin && !state.recv_finished() {
                let Some(dst) = self.buf.as_mut().get_mut(self.len..) else { break };
                if dst.is_empty() {
                    break;
                }
                match conn.stream_recv(qid, dst) {
                    Some(Read::Data(n)) => {
                        self.len += n;
                        read += n;
                    }
                    Some(Read::Fin) => self.fin = true,
                    Some(Read::Reset(code)) => {
                        reset = Some(code);
                        break;
                    }
                    _ => break,
                }
            }
            let mut t = QuicTransport { conn: &mut *conn };
            if let Some(code) = reset {
                self.len = 0;
                if !state.recv_finished() {
                    h3.on_reset(&mut t, state, code)?;
                }
                return Ok(());
            }
            // Feed mote-h3 until it needs more bytes.
            let mut consumed_total = 0;
            while !state.recv_finished() {
                let input = self.buf.as_ref().get(..self.len).unwrap_or(&[]);
                let r = h3.recv(&mut t, state, input, self.fin, fields)?;
                let consumed = r.consumed.min(self.len);
                let event = r.event;
                let stop = matches!(event, None | Some(Event::Blocked));
                if let Some(e) = event.filter(|e| *e != Event::Blocked) {
                    handler(h3, &mut t, state, e);
                }
                self.buf.as_mut().copy_within(consumed..self.len, 0);
                self.len -= consumed;
                consumed_total += consumed;
                if stop {
                    break;
                }
            }
            if state.recv_finished() {
                self.len = 0;
            }
            if read == 0 && consumed_total == 0 {
                return Ok(());
            }
        }
    }
}
