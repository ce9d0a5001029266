//! qlog output (draft-ietf-quic-qlog-main-schema, the event names qvis reads) in the
//! JSON-SEQ serialization (RFC 7464: each record starts with the Record Separator 0x1E and
//! ends with a newline), one file per connection named by its original Destination
//! Connection ID.
//!
//! The writer observes a connection from outside — the datagrams the driver moves, the
//! connection's events and its recovery state — so the `no_std` core carries no logging.
//! Packet headers are read from the wire before decryption (received) and after
//! protection (sent): the packet type, connection IDs, version and length are visible
//! there; packet numbers and frames are not (they are encrypted), so those fields are
//! left out of `packet_sent`/`packet_received`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;

use mote_quic::connection::CloseReason;
use mote_quic::packet::{self, Header, PacketType};
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

fn packet_type_name(header: &Header<'_>) -> &'static str {
    match header {
        Header::VersionNegotiation(_) => "version_negotiation",
        Header::Retry(_) => "retry",
        Header::UnsupportedVersion(_) => "unknown",
        _ => match header.packet_type() {
            Some(PacketType::Initial) => "initial",
            Some(PacketType::ZeroRtt) => "0RTT",
            Some(PacketType::Handshake) => "handshake",
            Some(PacketType::OneRtt) => "1RTT",
            None => "unknown",
        },
    }
}

/// The packets of a datagram: (qlog header object, packet length).
fn packets(datagram: &[u8], short_dcid_len: usize) -> Vec<(Value, usize)> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        let Ok(p) = packet::parse(rest, short_dcid_len, true) else { break };
        let len = p.len.min(rest.len()).max(1);
        let mut header = json!({ "packet_type": packet_type_name(&p.header) });
        match &p.header {
            Header::Long(h) => {
                header["dcid"] = json!(hex(h.dcid));
                header["scid"] = json!(hex(h.scid));
                header["version"] = json!(format!("{:08x}", h.version.0));
                if !h.token.is_empty() {
                    header["token"] = json!({ "raw": { "length": h.token.len() } });
                }
            }
            Header::Short(h) => header["dcid"] = json!(hex(h.dcid)),
            Header::Retry(h) => {
                header["dcid"] = json!(hex(h.dcid));
                header["scid"] = json!(hex(h.scid));
            }
            Header::VersionNegotiation(h) => {
                header["dcid"] = json!(hex(h.dcid));
                header["scid"] = json!(hex(h.scid));
            }
            Header::UnsupportedVersion(h) => {
                header["dcid"] = json!(hex(h.dcid));
                header["scid"] = json!(hex(h.scid));
            }
        }
        out.push((header, len));
        rest = rest.get(len..).unwrap_or(&[]);
    }
    out
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

    /// `transport:packet_received` for each packet of a datagram (before decryption).
    pub fn datagram_received(&mut self, now: Instant, data: &[u8], short_dcid_len: usize) {
        self.event(
            now,
            "transport:datagrams_received",
            json!({ "raw": [{ "length": data.len() }] }),
        );
        for (header, len) in packets(data, short_dcid_len) {
            self.event(
                now,
                "transport:packet_received",
                json!({ "header": header, "raw": { "length": len } }),
            );
        }
    }

    /// `transport:packet_sent` for each packet of each datagram of a transmit.
    pub fn datagram_sent(
        &mut self,
        now: Instant,
        data: &[u8],
        segment_size: Option<usize>,
        short_dcid_len: usize,
    ) {
        let seg = segment_size.filter(|&s| s > 0).unwrap_or(data.len().max(1));
        for d in data.chunks(seg) {
            self.event(now, "transport:datagrams_sent", json!({ "raw": [{ "length": d.len() }] }));
            for (header, len) in packets(d, short_dcid_len) {
                self.event(
                    now,
                    "transport:packet_sent",
                    json!({ "header": header, "raw": { "length": len } }),
                );
            }
        }
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
