//! The concrete connection and endpoint types of mote-net: the `ring` provider, buffers on
//! the heap, and bounds sized for a host (see the constants).

use mote_crypto::fast::Ring;
use mote_quic::connection::Storage;
use mote_quic::endpoint::{NoAccept, Slot};
use mote_quic::{Connection, Endpoint, Instant};
use mote_tls::{ClientSession, ServerSession};

/// Stream slots per connection: streams open at once (requests and HTTP/3's
/// unidirectional streams). More requests wait for a slot.
pub const STREAMS: usize = 32;
/// Application Data sent-packet records: packets in flight at most (≈ 1.2 MB at 1200 B).
pub const SENT: usize = 1024;
/// Received-packet ranges and per-stream reassembly ranges.
pub const RANGES: usize = 32;
/// TLS receive buffer of a client: the largest handshake message it accepts (a server's
/// certificate chain).
pub const CLIENT_TLS_RX: usize = 16 * 1024;
/// CRYPTO buffers per level (RFC 9000 §7.5 asks for at least 4096 bytes).
pub const CRYPTO_BUFFER: usize = 16 * 1024;

/// A client's TLS session.
pub type ClientTls = ClientSession<'static, Ring, CLIENT_TLS_RX>;
/// A server's TLS session.
pub type ServerTls = ServerSession<'static, Ring>;
/// A client connection.
pub type ClientConnection = Connection<Ring, ClientTls, Vec<u8>, Vec<u8>, STREAMS, SENT, RANGES>;
/// A server connection.
pub type ServerConnection = Connection<Ring, ServerTls, Vec<u8>, Vec<u8>, STREAMS, SENT, RANGES>;
/// A client endpoint.
pub type ClientEndpoint = Endpoint<
    Ring,
    ClientTls,
    Vec<u8>,
    Vec<u8>,
    NoAccept,
    Vec<Slot<ClientConnection>>,
    STREAMS,
    SENT,
    RANGES,
>;
/// What a server endpoint calls to accept a client.
pub type Acceptor =
    Box<dyn FnMut(Instant) -> Option<(ServerTls, Storage<Vec<u8>, Vec<u8>, STREAMS>)> + Send>;
/// A server endpoint.
pub type ServerEndpoint = Endpoint<
    Ring,
    ServerTls,
    Vec<u8>,
    Vec<u8>,
    Acceptor,
    Vec<Slot<ServerConnection>>,
    STREAMS,
    SENT,
    RANGES,
>;

/// Connection buffers: CRYPTO buffers and `send`/`recv` bytes per stream slot (the receive
/// buffer is the stream's flow-control window).
pub fn storage(send: usize, recv: usize) -> Storage<Vec<u8>, Vec<u8>, STREAMS> {
    Storage {
        crypto: core::array::from_fn(|_| (vec![0; CRYPTO_BUFFER], vec![0; CRYPTO_BUFFER])),
        streams: core::array::from_fn(|_| (vec![0; send], vec![0; recv])),
    }
}

#[cfg(test)]
mod tests {
    use super::RANGES;
    use mote_quic::stream::{Insert, Reassembler};

    /// Interop issue 6, failing cell 1: without mote-quic's `reorder` feature every STREAM
    /// fragment past a gap is dropped unacknowledged, so against a server whose PTO probes
    /// carry new data (quinn, ngtcp2, aioquic) one lost datagram stalls a download for good.
    /// Host connections must keep out-of-order data.
    #[test]
    fn host_connections_keep_out_of_order_stream_data() {
        let mut asm = Reassembler::<[u8; 64], RANGES>::new([0; 64]);
        assert_eq!(asm.insert(10, b"later"), Ok(Insert::Stored));
        assert_eq!(asm.insert(0, b"0123456789"), Ok(Insert::Stored));
        assert_eq!(asm.readable(), 15);
    }
}
