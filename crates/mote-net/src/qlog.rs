//! qlog output (draft-ietf-quic-qlog-main-schema, the event names qvis reads) in the
//! JSON-SEQ serialization (RFC 7464: each record starts with the Record Separator 0x1E and
//! ends with a newline), one file per connection named by its original Destination
//! Connection ID.
//!
//! The writer observes a connection from outside: the datagrams the driver moves
//! (`datagrams_sent`/`datagrams_received`), the connection's packet log (mote-quic feature
//! `qlog`: packet type, number, length and frame types of every packet sent or processed,
//! for `packet_sent`/`packet_received`), its recovery state and its key log. The `no_std`
//! core carries only that fixed-size, feature-gated packet log.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;

use mote_quic::connection::packet_log::PacketLogEntry;
use mote_quic::connection::CloseReason;
use mote_quic::packet::PacketType;
use mote_quic::Instant;
use serde_json::{json, Value};

use crate::clock::{unix_millis, Clock};
use crate::Error;

/// RFC 7464 §2.2: the Record Separator starting each JSON text.
const RS: u8 = 0x1e;

/// Recovery metrics last written, to log only changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Smoothed RTT (µs).
    pub smoothed_rtt: u64,
    /// Minimum RTT (µs).
    pub min_rtt: u64,
    /// Latest RTT (µs).
    pub latest_rtt: u64,
    /// RTT variation (µs).
    pub rtt_variance: u64,
    /// Congestion window (bytes).
    pub congestion_window: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
}

/// The qlog of one connection.
#[derive(Debug)]
pub struct Qlog {
    out: BufWriter<File>,
    clock: Clock,
    metrics: Metrics,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn packet_type_name(t: PacketType) -> &'static str {
    match t {
        PacketType::Initial => "initial",
        PacketType::ZeroRtt => "0RTT",
        PacketType::Handshake => "handshake",
        PacketType::OneRtt => "1RTT",
    }
}

/// The qlog name of a frame type (RFC 9000 §19, RFC 9221).
pub fn frame_name(ty: u8) -> &'static str {
    match ty {
        0x00 => "padding",
        0x01 => "ping",
        0x02 | 0x03 => "ack",
        0x04 => "reset_stream",
        0x05 => "stop_sending",
        0x06 => "crypto",
        0x07 => "new_token",
        0x08..=0x0f => "stream",
        0x10 => "max_data",
        0x11 => "max_stream_data",
        0x12 | 0x13 => "max_streams",
        0x14 => "data_blocked",
        0x15 => "stream_data_blocked",
        0x16 | 0x17 => "streams_blocked",
        0x18 => "new_connection_id",
        0x19 => "retire_connection_id",
        0x1a => "path_challenge",
        0x1b => "path_response",
        0x1c | 0x1d => "connection_close",
        0x1e => "handshake_done",
        0x30 | 0x31 => "datagram",
        _ => "unknown",
    }
}

impl Qlog {
    /// Creates `<dir>/<odcid hex>.sqlog` and writes the header and `connection_started`.
    pub fn create(
        dir: &Path,
        odcid: &[u8],
        server: bool,
        clock: Clock,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Result<Self, Error> {
        let name = format!("{}.sqlog", hex(odcid));
        let path = dir.join(&name);
        let file =
            File::create(&path).map_err(|e| Error::new(format!("qlog {}: {e}", path.display())))?;
        let mut q = Self { out: BufWriter::new(file), clock, metrics: Metrics::default() };
        let vantage = if server { "server" } else { "client" };
        let start_unix = unix_millis() as f64 - clock.millis(clock.now());
        q.record(&json!({
            "qlog_version": "0.3",
            "qlog_format": "JSON-SEQ",
            "title": format!("mote {vantage}"),
            "trace": {
                "vantage_point": { "name": "mote", "type": vantage },
                "common_fields": {
                    "ODCID": hex(odcid),
                    "time_format": "relative",
                    "reference_time": start_unix,
                    "protocol_type": ["QUIC"],
                },
            },
        }));
        q.event(
            now,
            "connectivity:connection_started",
            json!({
                "ip_version": if local.is_ipv4() { "ipv4" } else { "ipv6" },
                "src_ip": local.ip().to_string(),
                "src_port": local.port(),
                "dst_ip": remote.ip().to_string(),
                "dst_port": remote.port(),
            }),
        );
        Ok(q)
    }

    fn record(&mut self, v: &Value) {
        let _ = self.out.write_all(&[RS]);
        let _ = serde_json::to_writer(&mut self.out, v);
        let _ = self.out.write_all(b"\n");
    }

    /// Writes one event.
    pub fn event(&mut self, now: Instant, name: &str, data: Value) {
        let t = self.clock.millis(now);
        self.record(&json!({ "time": t, "name": name, "data": data }));
    }

    /// `transport:datagrams_received` for a datagram (or GRO batch).
    pub fn datagram_received(&mut self, now: Instant, data: &[u8]) {
        let raw = json!({ "raw": [{ "length": data.len() }] });
        self.event(now, "transport:datagrams_received", raw);
    }

    /// `transport:datagrams_sent` for a transmit (each datagram of a GSO batch).
    pub fn datagram_sent(&mut self, now: Instant, data: &[u8], segment_size: Option<usize>) {
        let seg = segment_size.filter(|&s| s > 0).unwrap_or(data.len().max(1));
        let raw: Vec<Value> = data.chunks(seg).map(|d| json!({ "length": d.len() })).collect();
        self.event(now, "transport:datagrams_sent", json!({ "count": raw.len(), "raw": raw }));
    }

    /// `transport:packet_sent` / `transport:packet_received` for a packet-log entry.
    pub fn packet(&mut self, now: Instant, e: &PacketLogEntry) {
        let frames: Vec<Value> =
            e.frame_types().iter().map(|&t| json!({ "frame_type": frame_name(t) })).collect();
        let name = if e.sent { "transport:packet_sent" } else { "transport:packet_received" };
        self.event(
            now,
            name,
            json!({
                "header": {
                    "packet_type": packet_type_name(e.packet_type),
                    "packet_number": e.packet_number,
                },
                "raw": { "length": e.length },
                "frames": frames,
            }),
        );
    }

    /// `recovery:metrics_updated` with the fields that changed.
    pub fn metrics(&mut self, now: Instant, m: Metrics) {
        if m == self.metrics {
            return;
        }
        let old = self.metrics;
        self.metrics = m;
        let ms = |us: u64| us as f64 / 1000.0;
        let mut data = serde_json::Map::new();
        if m.smoothed_rtt != old.smoothed_rtt {
            data.insert("smoothed_rtt".into(), json!(ms(m.smoothed_rtt)));
        }
        if m.min_rtt != old.min_rtt {
            data.insert("min_rtt".into(), json!(ms(m.min_rtt)));
        }
        if m.latest_rtt != old.latest_rtt {
            data.insert("latest_rtt".into(), json!(ms(m.latest_rtt)));
        }
        if m.rtt_variance != old.rtt_variance {
            data.insert("rtt_variance".into(), json!(ms(m.rtt_variance)));
        }
        if m.congestion_window != old.congestion_window {
            data.insert("congestion_window".into(), json!(m.congestion_window));
        }
        if m.bytes_in_flight != old.bytes_in_flight {
            data.insert("bytes_in_flight".into(), json!(m.bytes_in_flight));
        }
        self.event(now, "recovery:metrics_updated", Value::Object(data));
    }

    /// `connectivity:connection_state_updated`.
    pub fn state(&mut self, now: Instant, new: &str) {
        self.event(now, "connectivity:connection_state_updated", json!({ "new": new }));
    }

    /// `security:key_updated` for a traffic secret (the secret itself stays in the key log).
    pub fn key_updated(&mut self, now: Instant, label: &str) {
        let key_type = match label {
            "CLIENT_EARLY_TRAFFIC_SECRET" => "client_0rtt_secret",
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => "client_handshake_secret",
            "SERVER_HANDSHAKE_TRAFFIC_SECRET" => "server_handshake_secret",
            "CLIENT_TRAFFIC_SECRET_0" => "client_1rtt_secret",
            _ => "server_1rtt_secret",
        };
        self.event(now, "security:key_updated", json!({ "key_type": key_type, "trigger": "tls" }));
    }

    /// `connectivity:connection_closed`, then flushes.
    pub fn closed(&mut self, now: Instant, reason: Option<CloseReason>) {
        let data = match reason {
            Some(CloseReason::Local(c)) => json!({
                "owner": "local", "error_code": c.code,
                "reason": String::from_utf8_lossy(c.reason()),
            }),
            Some(CloseReason::Peer(c)) => json!({
                "owner": "remote", "error_code": c.code,
                "reason": String::from_utf8_lossy(c.reason()),
            }),
            Some(CloseReason::IdleTimeout) => json!({ "trigger": "idle_timeout" }),
            Some(CloseReason::VersionNegotiation) => json!({ "trigger": "version_mismatch" }),
            Some(CloseReason::StatelessReset) => json!({ "trigger": "stateless_reset" }),
            Some(CloseReason::NoViablePath) => json!({ "trigger": "no_viable_path" }),
            None => json!({}),
        };
        self.event(now, "connectivity:connection_closed", data);
        self.flush();
    }

    /// Flushes buffered records to the file.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

impl Drop for Qlog {
    fn drop(&mut self) {
        self.flush();
    }
}
