//! Per-connection observation for the logs: drains the key log, and writes the qlog from
//! the datagrams the driver moves and the connection's state.

use std::net::SocketAddr;
use std::path::Path;

use mote_crypto::CryptoProvider;
use mote_quic::connection::TlsSession;
use mote_quic::packet::{self, Header};
use mote_quic::{Connection, Instant};

use crate::clock::Clock;
use crate::keylog::KeyLogFile;
use crate::qlog::{Metrics, Qlog};

/// What is known of one connection for logging.
#[derive(Debug)]
pub struct Observer {
    qlog: Option<Qlog>,
    /// Our connection ID (the DCID of packets we receive).
    pub local_cid: Vec<u8>,
    /// The peer's connection ID (the DCID of packets we send).
    pub remote_cid: Vec<u8>,
    /// The client's original Destination Connection ID.
    pub odcid: Vec<u8>,
    /// The peer's address.
    pub remote: SocketAddr,
    handshake_complete: bool,
    handshake_confirmed: bool,
    closed: bool,
}

impl Observer {
    /// Starts observing `conn`; with `qlog_dir`, its qlog file is created there.
    #[allow(clippy::too_many_arguments)]
    pub fn new<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>(
        conn: &Connection<P, T, C, S, N, SENT, RANGES>,
        qlog_dir: Option<&Path>,
        server: bool,
        clock: Clock,
        now: Instant,
        local: SocketAddr,
    ) -> Self
    where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        let odcid = conn.original_dcid().to_vec();
        let qlog = qlog_dir.and_then(|dir| {
            Qlog::create(dir, &odcid, server, clock, now, local, conn.remote())
                .map_err(|e| eprintln!("mote-net: {e}"))
                .ok()
        });
        Self {
            qlog,
            local_cid: conn.local_cid().to_vec(),
            remote_cid: conn.remote_cid().to_vec(),
            odcid,
            remote: conn.remote(),
            handshake_complete: false,
            handshake_confirmed: false,
            closed: false,
        }
    }

    /// Whether a received datagram with Destination Connection ID `dcid` belongs here.
    pub fn receives(&self, dcid: &[u8]) -> bool {
        dcid == self.local_cid.as_slice() || dcid == self.odcid.as_slice()
    }

    /// Catches up with `conn`: key log lines, state changes, recovery metrics.
    pub fn update<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>(
        &mut self,
        now: Instant,
        conn: &mut Connection<P, T, C, S, N, SENT, RANGES>,
        keylog: Option<&mut KeyLogFile>,
    ) where
        P: CryptoProvider + Clone,
        T: TlsSession,
        C: AsRef<[u8]> + AsMut<[u8]>,
        S: AsRef<[u8]> + AsMut<[u8]>,
    {
        self.local_cid.clear();
        self.local_cid.extend_from_slice(conn.local_cid());
        self.remote_cid.clear();
        self.remote_cid.extend_from_slice(conn.remote_cid());
        self.remote = conn.remote();
        let mut entries = Vec::new();
        while let Some(e) = conn.poll_keylog() {
            entries.push(e);
        }
        if let Some(k) = keylog {
            let mut it = entries.iter().copied();
            k.drain(|| it.next());
        }
        let Some(q) = self.qlog.as_mut() else { return };
        for e in &entries {
            q.key_updated(now, e.label);
        }
        if !self.handshake_complete && conn.is_handshake_complete() {
            self.handshake_complete = true;
            q.state(now, "handshake_complete");
        }
        if !self.handshake_confirmed && conn.is_handshake_confirmed() {
            self.handshake_confirmed = true;
            q.state(now, "handshake_confirmed");
        }
        let r = conn.recovery();
        let rtt = r.rtt();
        q.metrics(
            now,
            Metrics {
                smoothed_rtt: rtt.smoothed().as_micros(),
                min_rtt: rtt.min().as_micros(),
                latest_rtt: rtt.latest().as_micros(),
                rtt_variance: rtt.rttvar().as_micros(),
                congestion_window: r.congestion_window(),
                bytes_in_flight: r.bytes_in_flight(),
            },
        );
        if !self.closed && conn.is_closed() {
            self.closed = true;
            q.closed(now, conn.close_reason());
        }
    }

    /// A datagram for this connection arrived.
    pub fn received(&mut self, now: Instant, data: &[u8]) {
        let len = self.local_cid.len();
        if let Some(q) = self.qlog.as_mut() {
            q.datagram_received(now, data, len);
        }
    }

    /// A transmit of this connection left.
    pub fn sent(&mut self, now: Instant, data: &[u8], segment_size: Option<usize>) {
        let len = self.remote_cid.len();
        if let Some(q) = self.qlog.as_mut() {
            q.datagram_sent(now, data, segment_size, len);
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) {
        if let Some(q) = self.qlog.as_mut() {
            q.flush();
        }
    }
}

/// The Destination Connection ID of a datagram's first packet (`short_len` bytes for a
/// short header).
pub fn dcid_of(data: &[u8], short_len: usize) -> Option<Vec<u8>> {
    let p = packet::parse(data, short_len, true).ok()?;
    Some(
        match p.header {
            Header::Long(h) => h.dcid,
            Header::Short(h) => h.dcid,
            Header::Retry(h) => h.dcid,
            Header::VersionNegotiation(h) => h.dcid,
            Header::UnsupportedVersion(h) => h.dcid,
        }
        .to_vec(),
    )
}
