//! The QUIC connection the client runs on, and everything about it that differs between
//! the two types: the stream buffers and how they are split into the connection's storage,
//! the HTTP/3 transport over it, what the connection has for the application (a session
//! ticket, a stream the server stopped) and its counters. [`crate::app`] reads the same
//! for both.
//!
//! Default (every shipped build): mote-quic's device connection type (client only, one
//! path, a fixed HTTP/3 stream set). Feature `general-connection`: mote-quic's general
//! [`mote_quic::Connection`], so that `cargo xtask footprint`'s matrix measures what the
//! options gating its code (server, v2, migration, ...) cost.

use mote_crypto::rustcrypto::RustCrypto;
use mote_tls::ClientSession;

use crate::app::{CRYPTO_BUF, TLS_RX};

/// Stream send buffer: a 1 KB POST body goes out in pieces.
const STREAM_SEND: usize = 1024;
/// Stream receive buffer: the stream's flow-control window.
const STREAM_RECV: usize = 2048;

#[cfg(not(feature = "general-connection"))]
mod imp {
    use mote_h3::device::DeviceTransport;
    use mote_quic::device::{DeviceConnection, DeviceStorage, PEER_UNI};

    use super::*;

    /// Stream receive buffers: the request stream's and the server's three unidirectional
    /// streams' (RFC 9114 §6.2).
    const RECVS: usize = 1 + PEER_UNI;
    /// Our control stream's send buffer (its type byte and SETTINGS: at most 40 bytes).
    const CONTROL_SEND: usize = 64;

    /// The device connection (mote-quic's device connection type): caller-owned buffers.
    pub type Conn<'a> = DeviceConnection<
        RustCrypto,
        ClientSession<'a, RustCrypto, TLS_RX>,
        &'a mut [u8],
        &'a mut [u8],
        16,
        4,
    >;

    /// The connection's counters.
    #[cfg(all(feature = "stats", feature = "selfmeasure"))]
    pub type Stats = mote_quic::device::DeviceStats;

    /// PTOs that fired, as the report carries them.
    #[cfg(all(feature = "stats", feature = "selfmeasure"))]
    pub fn ptos(stats: &Stats) -> u64 {
        u64::from(stats.ptos)
    }

    /// The connection's storage, split from the static buffers.
    pub type Storage<'a> = DeviceStorage<&'a mut [u8], &'a mut [u8]>;

    /// The HTTP/3 client's transport over the connection.
    pub type Transport<'c, 'a> = DeviceTransport<
        'c,
        RustCrypto,
        ClientSession<'a, RustCrypto, TLS_RX>,
        &'a mut [u8],
        &'a mut [u8],
        16,
        4,
    >;

    /// The stream buffers.
    pub struct StreamBuffers {
        recv: [[u8; STREAM_RECV]; RECVS],
        send: [u8; STREAM_SEND],
        control_send: [u8; CONTROL_SEND],
    }

    impl StreamBuffers {
        /// Zeroed buffers (for a `static`).
        pub const fn new() -> Self {
            Self {
                recv: [[0; STREAM_RECV]; RECVS],
                send: [0; STREAM_SEND],
                control_send: [0; CONTROL_SEND],
            }
        }
    }

    impl Default for StreamBuffers {
        fn default() -> Self {
            Self::new()
        }
    }

    /// Splits the static buffers into the connection's storage.
    pub fn storage<'a>(
        crypto: &'a mut [[u8; CRYPTO_BUF]; 6],
        streams: &'a mut StreamBuffers,
    ) -> Storage<'a> {
        let [c0, c1, c2, c3, c4, c5] = crypto;
        let StreamBuffers { recv, send, control_send } = streams;
        let [r0, r1, r2, r3] = recv;
        DeviceStorage {
            crypto: [(c0, c1), (c2, c3), (c4, c5)],
            control: control_send,
            request: (send, r0),
            peer_uni: [r1, r2, r3],
        }
    }

    /// The HTTP/3 transport over `conn`.
    pub fn transport<'c, 'a>(conn: &'c mut Conn<'a>) -> Transport<'c, 'a> {
        DeviceTransport { conn }
    }

    /// What the connection has for the application (no event queue: it is polled): a
    /// session ticket (`on_ticket`), streams the server stopped (`on_stopped(conn, id, code)`).
    #[inline(always)]
    pub fn poll_news<'a>(
        conn: &mut Conn<'a>,
        mut on_ticket: impl FnMut(&mut Conn<'a>),
        mut on_stopped: impl FnMut(&mut Conn<'a>, u64, u64),
    ) {
        if conn.ticket_ready() {
            on_ticket(conn);
        }
        while let Some((id, code)) = conn.poll_stopped() {
            on_stopped(conn, id, code);
        }
    }
}

#[cfg(feature = "general-connection")]
mod imp {
    use mote_h3::device::QuicTransport;
    use mote_quic::{Connection, Event};

    use super::*;

    /// QUIC stream slots: our control stream, the server's three unidirectional streams
    /// (RFC 9114 §6.2) and two requests (the GET's slot is freed once QUIC forgets the
    /// stream).
    const STREAMS: usize = 6;

    /// The general connection (mote-quic's `Connection`): caller-owned buffers.
    pub type Conn<'a> = Connection<
        RustCrypto,
        ClientSession<'a, RustCrypto, TLS_RX>,
        &'a mut [u8],
        &'a mut [u8],
        STREAMS,
        16,
        4,
    >;

    /// The connection's counters.
    #[cfg(all(feature = "stats", feature = "selfmeasure"))]
    pub type Stats = mote_quic::connection::ConnectionStats;

    /// PTOs that fired, as the report carries them.
    #[cfg(all(feature = "stats", feature = "selfmeasure"))]
    pub fn ptos(stats: &Stats) -> u64 {
        stats.ptos
    }

    /// The connection's storage, split from the static buffers.
    pub type Storage<'a> = mote_quic::Storage<&'a mut [u8], &'a mut [u8], STREAMS>;

    /// The HTTP/3 client's transport over the connection.
    pub type Transport<'c, 'a> = QuicTransport<
        'c,
        RustCrypto,
        ClientSession<'a, RustCrypto, TLS_RX>,
        &'a mut [u8],
        &'a mut [u8],
        STREAMS,
        16,
        4,
    >;

    /// The stream buffers: a send and a receive buffer per slot.
    pub struct StreamBuffers {
        recv: [[u8; STREAM_RECV]; STREAMS],
        send: [[u8; STREAM_SEND]; STREAMS],
    }

    impl StreamBuffers {
        /// Zeroed buffers (for a `static`).
        pub const fn new() -> Self {
            Self { recv: [[0; STREAM_RECV]; STREAMS], send: [[0; STREAM_SEND]; STREAMS] }
        }
    }

    impl Default for StreamBuffers {
        fn default() -> Self {
            Self::new()
        }
    }

    /// Splits the static buffers into the connection's storage.
    pub fn storage<'a>(
        crypto: &'a mut [[u8; CRYPTO_BUF]; 6],
        streams: &'a mut StreamBuffers,
    ) -> Storage<'a> {
        let [c0, c1, c2, c3, c4, c5] = crypto;
        let StreamBuffers { recv, send } = streams;
        let [r0, r1, r2, r3, r4, r5] = recv;
        let [s0, s1, s2, s3, s4, s5] = send;
        mote_quic::Storage {
            crypto: [(c0, c1), (c2, c3), (c4, c5)],
            streams: [(s0, r0), (s1, r1), (s2, r2), (s3, r3), (s4, r4), (s5, r5)],
        }
    }

    /// The HTTP/3 transport over `conn`.
    pub fn transport<'c, 'a>(conn: &'c mut Conn<'a>) -> Transport<'c, 'a> {
        QuicTransport { conn }
    }

    /// What the connection has for the application, from its event queue: a session
    /// ticket (`on_ticket`), streams the server stopped (`on_stopped(conn, id, code)`).
    #[inline(always)]
    pub fn poll_news<'a>(
        conn: &mut Conn<'a>,
        mut on_ticket: impl FnMut(&mut Conn<'a>),
        mut on_stopped: impl FnMut(&mut Conn<'a>, u64, u64),
    ) {
        while let Some(e) = conn.poll_event() {
            match e {
                Event::NewTicket => on_ticket(conn),
                Event::StreamStopped { id, code } => on_stopped(conn, id.raw(), code),
                _ => {}
            }
        }
    }
}

pub use imp::*;
