//! `mote serve` and `mote get` logic against each other on 127.0.0.1, in one process: both
//! ALPNs, several files including 1 MB, resumption and 0-RTT through a session file, key
//! update, ChaCha20, QUIC v2, raw public keys, and the failures that must be reported.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mote_net::client::{get, GetOptions, GetReport, ServerAuthOption};
use mote_net::identity;
use mote_net::server::{ServeOptions, Server, ServerCounters};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A fresh directory under the target's temp area.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mote-net-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Deterministic content of `n` bytes.
fn content(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8 ^ seed).collect()
}

/// The files the server offers: the interop runner's sizes (5 KB, 10 KB, 500 KB, 1 MB)
/// and an empty one.
fn www(name: &str) -> PathBuf {
    let dir = scratch(name);
    for (file, n, seed) in [
        ("5k.bin", 5 * 1024, 1),
        ("10k.bin", 10 * 1024, 2),
        ("500k.bin", 500 * 1024, 3),
        ("1m.bin", 1 << 20, 4),
        ("empty.bin", 0, 5),
    ] {
        std::fs::write(dir.join(file), content(n, seed)).unwrap();
    }
    dir
}

struct Running {
    port: u16,
    counters: Arc<Mutex<ServerCounters>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn serve(www: &Path, rpk: bool) -> Running {
    let identity = if rpk {
        identity::server_identity(None, &data("rpk.key")).unwrap()
    } else {
        identity::server_identity(Some(&data("server.pem")), &data("server.key")).unwrap()
    };
    let server = Server::bind(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        www: www.to_path_buf(),
        identity,
        alpn: vec![b"hq-interop".to_vec(), b"h3".to_vec()],
        retry: false,
        qlog_dir: None,
        keylog: None,
        max_idle_ms: 10_000,
        // Upgrades a client that offers v2 (`key_update_chacha20_and_v2`).
        v2: true,
        preferred_address: None,
        advertise_preferred: None,
        reset_key_file: None,
    })
    .unwrap();
    let port = server.local_addr().unwrap().port();
    let counters = server.counters();
    let task = tokio::spawn(async move {
        let _ = server.run().await;
    });
    Running { port, counters, task }
}

fn options(port: u16, files: &[&str], out: &Path, alpn: &str) -> GetOptions {
    GetOptions {
        urls: files.iter().map(|f| format!("https://localhost:{port}/{f}")).collect(),
        output: out.to_path_buf(),
        auth: ServerAuthOption::Ca(data("ca.pem")),
        session_file: None,
        zero_rtt: false,
        chacha20: false,
        v2: false,
        key_update: false,
        alpn: alpn.as_bytes().to_vec(),
        qlog_dir: None,
        keylog: None,
        migrate: false,
        timeout_ms: 20_000,
    }
}

fn assert_same(www: &Path, out: &Path, files: &[&str]) {
    for f in files {
        let want = std::fs::read(www.join(f)).unwrap();
        let got = std::fs::read(out.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(got == want, "{f}: {} bytes, want {}", got.len(), want.len());
    }
}

/// Runs a test body on mote-net's driver thread (a current-thread runtime, big stack).
fn run<F: std::future::Future<Output = ()> + Send + 'static>(f: F) {
    mote_net::driver::block_on(f).unwrap();
}

const FILES: [&str; 5] = ["5k.bin", "10k.bin", "500k.bin", "1m.bin", "empty.bin"];

#[test]
fn files_over_hq_interop_and_h3() {
    run(async {
        let www = www("alpn");
        let server = serve(&www, false);
        for alpn in ["hq-interop", "h3"] {
            let out = scratch(&format!("alpn-out-{alpn}"));
            let r = get(options(server.port, &FILES, &out, alpn)).await.unwrap();
            assert_eq!(r.files, FILES.len());
            assert_eq!(r.bytes, (5 + 10 + 500 + 1024) * 1024);
            assert!(!r.resumed);
            assert_same(&www, &out, &FILES);
        }
        let k = *server.counters.lock().unwrap();
        assert_eq!(k.connections, 2);
        assert_eq!(k.responses, 2 * FILES.len() as u64);
    });
}

#[test]
fn resumption_and_zero_rtt_through_a_session_file() {
    run(async {
        let www = www("resume");
        let server = serve(&www, false);
        for alpn in ["hq-interop", "h3"] {
            let session = scratch(&format!("resume-session-{alpn}")).join("session.json");
            // First connection: full handshake, ticket saved.
            let out = scratch(&format!("resume-1-{alpn}"));
            let mut o = options(server.port, &["5k.bin"], &out, alpn);
            o.session_file = Some(session.clone());
            let first = get(o.clone()).await.unwrap();
            assert!(!first.resumed);
            assert!(first.ticket_saved, "no ticket saved");
            // Second: resumed, requests in 0-RTT.
            let out = scratch(&format!("resume-2-{alpn}"));
            let mut o = options(server.port, &["10k.bin", "1m.bin"], &out, alpn);
            o.session_file = Some(session.clone());
            o.zero_rtt = true;
            o.qlog_dir = Some(out.join("qlog"));
            let second: GetReport = get(o).await.unwrap();
            assert!(second.resumed, "not resumed");
            assert_eq!(second.early_data, Some(true), "0-RTT not accepted");
            assert_same(&www, &out, &["10k.bin", "1m.bin"]);
            // The requests left in 0-RTT packets, coalesced after the first Initial.
            let qlog = std::fs::read_dir(out.join("qlog")).unwrap().next().unwrap().unwrap();
            let text = std::fs::read_to_string(qlog.path()).unwrap();
            assert!(text.contains(r#""packet_type":"0RTT""#), "no 0-RTT packet sent");
            // Third: resumed with the newest ticket, without 0-RTT.
            let out = scratch(&format!("resume-3-{alpn}"));
            let mut o = options(server.port, &["5k.bin"], &out, alpn);
            o.session_file = Some(session);
            let third = get(o).await.unwrap();
            assert!(third.resumed);
            assert_eq!(third.early_data, None);
        }
        let k = *server.counters.lock().unwrap();
        assert_eq!(k.resumed, 4);
        assert_eq!(k.early_data_accepted, 2);
    });
}

#[test]
fn key_update_chacha20_and_v2() {
    run(async {
        let www = www("ku");
        let server = serve(&www, false);
        let out = scratch("ku-out");
        let mut o = options(server.port, &["1m.bin"], &out, "hq-interop");
        o.key_update = true;
        let r = get(o).await.unwrap();
        assert!(r.key_updated);
        assert_same(&www, &out, &["1m.bin"]);
        assert_eq!(server.counters.lock().unwrap().peer_key_updates, 1);

        let out = scratch("chacha-out");
        let mut o = options(server.port, &["500k.bin"], &out, "h3");
        o.chacha20 = true;
        get(o).await.unwrap();
        assert_same(&www, &out, &["500k.bin"]);

        let out = scratch("v2-out");
        let mut o = options(server.port, &["500k.bin"], &out, "hq-interop");
        o.v2 = true;
        let r = get(o).await.unwrap();
        assert_eq!(r.version, 0x6b33_43cf);
        assert_same(&www, &out, &["500k.bin"]);
    });
}

#[test]
fn raw_public_key_server() {
    run(async {
        let www = www("rpk");
        let server = serve(&www, true);
        let out = scratch("rpk-out");
        let mut o = options(server.port, &["10k.bin"], &out, "h3");
        o.auth = ServerAuthOption::PinKey(data("rpk.pub"));
        get(o).await.unwrap();
        assert_same(&www, &out, &["10k.bin"]);
        // Pinning another key fails the handshake.
        let mut o = options(server.port, &["10k.bin"], &scratch("rpk-bad"), "h3");
        o.auth = ServerAuthOption::PinKey(data("server.key"));
        o.timeout_ms = 5_000;
        let e = get(o).await.unwrap_err();
        // The pinned P-256 key cannot verify the server's Ed25519 signature: the server
        // finds no common signature scheme (handshake_failure, RFC 8446 §4.4.3).
        assert!(e.0.contains("TLS alert 40"), "{e}");
    });
}

#[test]
fn failures_are_reported() {
    run(async {
        let www = www("fail");
        let server = serve(&www, false);
        // A missing file: HTTP/3 answers 404, HTTP/0.9 resets the stream (code 0x194).
        let out = scratch("fail-404");
        let e = get(options(server.port, &["5k.bin", "nope.bin"], &out, "h3")).await.unwrap_err();
        assert!(e.0.contains("nope.bin") && e.0.contains("404"), "{e}");
        let e = get(options(server.port, &["5k.bin", "nope.bin"], &out, "hq-interop"))
            .await
            .unwrap_err();
        assert!(e.0.contains("nope.bin") && e.0.contains("reset") && e.0.contains("404"), "{e}");
        // An unknown CA: the certificate is refused.
        let mut o = options(server.port, &["5k.bin"], &scratch("fail-ca"), "hq-interop");
        o.auth = ServerAuthOption::Ca(data("server.pem"));
        o.timeout_ms = 5_000;
        let e = get(o).await.unwrap_err();
        assert!(e.0.contains("TLS alert"), "{e}");
        // URLs of two servers cannot share a connection.
        let mut o = options(server.port, &["5k.bin"], &scratch("fail-two"), "hq-interop");
        o.urls.push("https://localhost:1/5k.bin".into());
        assert!(get(o).await.unwrap_err().0.contains("same server"));
    });
    // RSA is refused with a message saying so.
    let e = identity::server_identity(None, &data("rsa.key")).unwrap_err();
    assert!(e.0.contains("RSA keys are not supported"), "{e}");
}

#[test]
fn keylog_and_qlog_files() {
    run(async {
        let www = www("logs");
        let server = serve(&www, false);
        let dir = scratch("logs-out");
        let mut o = options(server.port, &["10k.bin"], &dir.join("files"), "hq-interop");
        o.keylog = Some(dir.join("keys.log"));
        o.qlog_dir = Some(dir.join("qlog"));
        get(o).await.unwrap();
        let keys = std::fs::read_to_string(dir.join("keys.log")).unwrap();
        let labels: Vec<&str> = keys.lines().filter_map(|l| l.split(' ').next()).collect();
        assert_eq!(
            labels,
            [
                "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
                "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                "CLIENT_TRAFFIC_SECRET_0",
                "SERVER_TRAFFIC_SECRET_0"
            ]
        );
        for l in keys.lines() {
            let parts: Vec<&str> = l.split(' ').collect();
            assert_eq!(parts.len(), 3);
            assert_eq!(parts[1].len(), 64, "client random");
            assert_eq!(parts[2].len(), 64, "SHA-256 secret");
        }
        let qlogs: Vec<_> = std::fs::read_dir(dir.join("qlog")).unwrap().collect();
        assert_eq!(qlogs.len(), 1);
        let path = qlogs[0].as_ref().unwrap().path();
        let text = std::fs::read(&path).unwrap();
        // RFC 7464: every record is RS, a JSON text, LF.
        let records: Vec<serde_json::Value> = text
            .split(|&b| b == 0x1e)
            .filter(|r| !r.is_empty())
            .map(|r| {
                assert_eq!(r.last(), Some(&b'\n'));
                serde_json::from_slice(r).unwrap()
            })
            .collect();
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
        let odcid = records[0]["trace"]["common_fields"]["ODCID"].as_str().unwrap();
        assert_eq!(path.file_stem().unwrap().to_str().unwrap(), odcid);
        let names: Vec<&str> = records.iter().filter_map(|r| r["name"].as_str()).collect();
        for want in [
            "connectivity:connection_started",
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:metrics_updated",
            "security:key_updated",
            "connectivity:connection_state_updated",
            "connectivity:connection_closed",
        ] {
            assert!(names.contains(&want), "{want} missing");
        }
        // The first packet: Initial 0 carrying the ClientHello, padded.
        let first_sent = records.iter().find(|r| r["name"] == "transport:packet_sent").unwrap();
        let header = &first_sent["data"]["header"];
        assert_eq!(
            (header["packet_type"].as_str(), header["packet_number"].as_u64()),
            (Some("initial"), Some(0))
        );
        assert_eq!(first_sent["data"]["frames"][0]["frame_type"], "crypto");
        // 1-RTT packets received carry the file in STREAM frames, numbered upwards.
        let numbers: Vec<u64> = records
            .iter()
            .filter(|r| r["name"] == "transport:packet_received")
            .filter(|r| r["data"]["header"]["packet_type"] == "1RTT")
            .filter(|r| {
                r["data"]["frames"].as_array().unwrap().iter().any(|f| f["frame_type"] == "stream")
            })
            .map(|r| r["data"]["header"]["packet_number"].as_u64().unwrap())
            .collect();
        assert!(numbers.len() >= 9, "10 KB in {} packets", numbers.len());
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    });
}

#[test]
fn many_clients_at_once_and_ipv6() {
    run(async {
        let www = www("many");
        let server = serve(&www, false);
        let gets = (0..8).map(|i| {
            let out = scratch(&format!("many-{i}"));
            let alpn = if i % 2 == 0 { "h3" } else { "hq-interop" };
            let o = options(server.port, &["500k.bin", "5k.bin"], &out, alpn);
            async move { (get(o).await, out) }
        });
        let results = futures_join_all(gets).await;
        for (r, out) in results {
            r.unwrap();
            assert_same(&www, &out, &["500k.bin", "5k.bin"]);
        }
        assert_eq!(server.counters.lock().unwrap().connections, 8);
    });
    // IPv6: a server on [::1], a URL with a bracketed literal.
    run(async {
        let www = www("v6");
        let server = Server::bind(ServeOptions {
            listen: "[::1]:0".parse().unwrap(),
            www: www.clone(),
            identity: identity::server_identity(Some(&data("server.pem")), &data("server.key"))
                .unwrap(),
            alpn: vec![b"hq-interop".to_vec()],
            retry: false,
            qlog_dir: None,
            keylog: None,
            max_idle_ms: 10_000,
            v2: false,
            preferred_address: None,
            advertise_preferred: None,
            reset_key_file: None,
        });
        let Ok(server) = server else {
            eprintln!("no IPv6 loopback here; skipped");
            return;
        };
        let port = server.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let _ = server.run().await;
        });
        let out = scratch("v6-out");
        let mut o = options(port, &[], &out, "hq-interop");
        o.urls = vec![format!("https://[::1]:{port}/10k.bin")];
        get(o).await.unwrap();
        assert_same(&www, &out, &["10k.bin"]);
        task.abort();
    });
}

/// Runs the futures concurrently on the current task and collects their outputs in order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (f, out) in pinned.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(outputs.iter_mut().map(|o| o.take().unwrap()).collect())
        }
    })
    .await
}

/// A UDP proxy on 127.0.0.1 in front of `server_port` that drops every `nth` datagram in
/// each direction (the first client datagram included when `nth` is 1-based on it).
async fn lossy_proxy(server_port: u16, nth: u64) -> (u16, tokio::task::JoinHandle<()>) {
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = sock.local_addr().unwrap().port();
    let server: std::net::SocketAddr = format!("127.0.0.1:{server_port}").parse().unwrap();
    let task = tokio::spawn(async move {
        let mut client = None;
        let mut counts = [0u64; 2];
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = sock.recv_from(&mut buf).await else { return };
            let (dir, to) = if from == server {
                match client {
                    Some(c) => (1, c),
                    None => continue,
                }
            } else {
                client = Some(from);
                (0, server)
            };
            counts[dir] += 1;
            if counts[dir] % nth == 0 {
                continue;
            }
            let _ = sock.send_to(&buf[..n], to).await;
        }
    });
    (port, task)
}

#[test]
fn transfer_through_a_lossy_path() {
    run(async {
        let www = www("lossy");
        let server = serve(&www, false);
        // Every 4th (then 10th) datagram lost each way, from the handshake on.
        for (nth, alpn) in [(4, "hq-interop"), (10, "h3")] {
            let (port, proxy) = lossy_proxy(server.port, nth).await;
            let out = scratch(&format!("lossy-{nth}"));
            let files = ["500k.bin", "5k.bin"];
            let r = get(options(port, &files, &out, alpn)).await;
            proxy.abort();
            let r = r.unwrap_or_else(|e| panic!("1 in {nth} lost, {alpn}: {e}"));
            eprintln!("1 in {nth} lost, {alpn}: {} ms", r.duration_ms);
            assert_same(&www, &out, &files);
        }
    });
}
