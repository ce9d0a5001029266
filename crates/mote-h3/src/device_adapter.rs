//! [`DeviceTransport`]: the HTTP/3 device client's [`Transport`] and [`Streams`] over a
//! borrowed [`DeviceConnection`] (mote-quic's device connection type, feature `device`).
//! Stream IDs are QUIC stream IDs on both sides, so every method is a direct call; the
//! connection's fixed stream set (our control stream, one request at a time, the server's
//! three unidirectional streams) is what [`crate::client::Client`] uses.

use mote_crypto::CryptoProvider;
use mote_quic::connection::TlsSession;
use mote_quic::device::DeviceConnection;
use mote_quic::stream::Read;

use crate::client::Streams;
use crate::connection::Transport;

/// [`Transport`] over a borrowed device connection.
pub struct DeviceTransport<'a, P, T, C, S, const SENT: usize, const RANGES: usize>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// The QUIC connection.
    pub conn: &'a mut DeviceConnection<P, T, C, S, SENT, RANGES>,
}

impl<P, T, C, S, const SENT: usize, const RANGES: usize> Transport
    for DeviceTransport<'_, P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    fn open_uni(&mut self) -> Option<u64> {
        self.conn.open_uni()
    }

    fn open_bidi(&mut self) -> Option<u64> {
        self.conn.open_bidi()
    }

    fn capacity(&self, id: u64) -> usize {
        usize::try_from(self.conn.capacity(id)).unwrap_or(usize::MAX)
    }

    fn write(&mut self, id: u64, data: &[u8], fin: bool) -> usize {
        let n = if data.is_empty() { 0 } else { self.conn.write(id, data).unwrap_or(0) };
        if fin && n == data.len() {
            let _ = self.conn.finish(id);
        }
        n
    }

    fn reset_stream(&mut self, id: u64, code: u64) {
        self.conn.reset_stream(id, code);
    }

    fn stop_sending(&mut self, id: u64, code: u64) {
        self.conn.stop_sending(id, code);
    }

    fn close(&mut self, code: u64) {
        self.conn.close(code, b"");
    }
}

impl<P, T, C, S, const SENT: usize, const RANGES: usize> Streams
    for DeviceTransport<'_, P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    fn read(&mut self, id: u64, out: &mut [u8]) -> crate::client::Read {
        use crate::client::Read as R;
        match self.conn.read(id, out) {
            Some(Read::Data(n)) => R::Data(n),
            Some(Read::Blocked) => R::Blocked,
            Some(Read::Fin) => R::Fin,
            Some(Read::Reset(code)) => R::Reset(code),
            Some(Read::Stopped) | None => R::Gone,
        }
    }

    fn live_streams(&self) -> impl Iterator<Item = u64> + '_ {
        self.conn.live_streams()
    }

    // The device connection allows the server no bidirectional stream (STREAM_LIMIT_ERROR,
    // RFC 9000 §4.6) and counts its unidirectional ones.
    fn peer_uni_opened(&self) -> Option<u64> {
        Some(self.conn.peer_uni_opened())
    }
}
