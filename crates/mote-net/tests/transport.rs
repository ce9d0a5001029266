//! mote-quic's transport features through `mote serve` / `mote get` on 127.0.0.1, in one
//! process: Retry and NEW_TOKEN, compatible version negotiation to v2, ECN, client
//! migration, the server following a NAT rebinding, the server's preferred address (with a
//! wildcard listener answering from the address the client used), stateless reset by a
//! restarted server, and a lost datagram recovered without a probe timeout.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mote_net::client::{get, GetOptions, ServerAuthOption};
use mote_net::identity;
use mote_net::server::{ServeOptions, Server, ServerCounters, RESET_KEY_LEN};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A fresh directory under the temp area.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mote-net-tp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A directory with `(name, size)` files of deterministic content.
fn www(name: &str, files: &[(&str, usize)]) -> PathBuf {
    let dir = scratch(name);
    for (i, &(file, n)) in files.iter().enumerate() {
        let bytes: Vec<u8> = (0..n).map(|k| (k.wrapping_mul(31) ^ (k >> 8) ^ i) as u8).collect();
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    dir
}

fn serve_options(www: &Path) -> ServeOptions {
    ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        www: www.to_path_buf(),
        identity: identity::server_identity(Some(&data("server.pem")), &data("server.key"))
            .unwrap(),
        alpn: vec![b"hq-interop".to_vec(), b"h3".to_vec()],
        retry: false,
        qlog_dir: None,
        keylog: None,
        max_idle_ms: 10_000,
        v2: false,
        preferred_address: None,
        advertise_preferred: None,
        reset_key_file: None,
    }
}

struct Running {
    addr: SocketAddr,
    preferred: Option<SocketAddr>,
    counters: Arc<Mutex<ServerCounters>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    fn counters(&self) -> ServerCounters {
        *self.counters.lock().unwrap()
    }

    /// Stops the server and waits until its sockets are closed.
    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

fn start(o: ServeOptions) -> Running {
    let server = Server::bind(o).unwrap();
    let addr = server.local_addr().unwrap();
    let preferred = server.preferred_addr().unwrap();
    let counters = server.counters();
    let task = tokio::spawn(async move {
        let _ = server.run().await;
    });
    Running { addr, preferred, counters, task }
}

fn options(port: u16, files: &[&str], out: &Path) -> GetOptions {
    GetOptions {
        urls: files.iter().map(|f| format!("https://localhost:{port}/{f}")).collect(),
        output: out.to_path_buf(),
        auth: ServerAuthOption::Ca(data("ca.pem")),
        session_file: None,
        zero_rtt: false,
        chacha20: false,
        v2: false,
        key_update: false,
        alpn: b"hq-interop".to_vec(),
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

#[test]
fn retry_then_new_token_skips_the_retry() {
    run(async {
        let www = www("retry", &[("10k.bin", 10 * 1024)]);
        let mut so = serve_options(&www);
        so.retry = true;
        let server = start(so);
        let session = scratch("retry-session").join("session.json");

        // First connection: Retry, then a NEW_TOKEN token saved next to the ticket.
        let out = scratch("retry-1");
        let mut o = options(server.addr.port(), &["10k.bin"], &out);
        o.session_file = Some(session.clone());
        let first = get(o).await.unwrap();
        assert_same(&www, &out, &["10k.bin"]);
        assert!(first.retried, "no Retry");
        assert!(!first.token_used);
        assert!(first.ticket_saved && first.token_saved, "{first:?}");
        let k = server.counters();
        assert_eq!(k.endpoint.retries_sent, 1);
        assert_eq!(k.endpoint.new_tokens, 1);
        let text = std::fs::read_to_string(&session).unwrap();
        let saved: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(saved["token"].as_str().is_some_and(|t| !t.is_empty()), "{text}");

        // Second: its Initial carries the token, so the server does not Retry again.
        let out = scratch("retry-2");
        let mut o = options(server.addr.port(), &["10k.bin"], &out);
        o.session_file = Some(session.clone());
        let second = get(o).await.unwrap();
        assert_same(&www, &out, &["10k.bin"]);
        assert!(second.token_used && !second.retried, "{second:?}");
        assert!(second.resumed);
        let k = server.counters();
        assert_eq!(k.endpoint.retries_sent, 1, "the token did not spare the Retry");
        assert_eq!(k.endpoint.invalid_tokens, 0);
        assert_eq!(k.connections, 2);

        // Without the session file the server retries again.
        let out = scratch("retry-3");
        let third = get(options(server.addr.port(), &["10k.bin"], &out)).await.unwrap();
        assert!(third.retried);
        assert_eq!(server.counters().endpoint.retries_sent, 2);
        server.stop().await;
    });
}

/// A UDP relay in front of `server` that records the version field of every long-header
/// packet it forwards: `(from_client, first byte, version)`.
async fn version_recorder(
    server: SocketAddr,
) -> (u16, Arc<Mutex<Vec<(bool, u8, u32)>>>, tokio::task::JoinHandle<()>) {
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = sock.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    let task = tokio::spawn(async move {
        let mut client = None;
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = sock.recv_from(&mut buf).await else { return };
            let from_client = from != server;
            let to = if from_client {
                client = Some(from);
                server
            } else {
                match client {
                    Some(c) => c,
                    None => continue,
                }
            };
            // RFC 8999 §5.1: a long header has the top bit set and the version next.
            if n >= 5 && buf[0] & 0x80 != 0 {
                let version = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
                seen.lock().unwrap().push((from_client, buf[0], version));
            }
            let _ = sock.send_to(&buf[..n], to).await;
        }
    });
    (port, log, task)
}

#[test]
fn v2_by_compatible_version_negotiation() {
    run(async {
        let www = www("v2", &[("500k.bin", 500 * 1024)]);
        let mut so = serve_options(&www);
        so.v2 = true;
        let server = start(so);
        let (port, log, relay) = version_recorder(server.addr).await;
        let out = scratch("v2-out");
        let mut o = options(port, &["500k.bin"], &out);
        o.v2 = true;
        let r = get(o).await.unwrap();
        relay.abort();
        assert_same(&www, &out, &["500k.bin"]);
        assert_eq!(r.version, 0x6b33_43cf, "the connection did not end in v2");
        let log = log.lock().unwrap().clone();
        // RFC 9368 §2.3: the client's first Initial is v1 ...
        assert_eq!(log.first().map(|&(c, _, v)| (c, v)), Some((true, 1)), "{log:x?}");
        // ... and every long-header packet of the server is v2 (no Version Negotiation,
        // no extra round trip).
        let server_versions: Vec<u32> =
            log.iter().filter(|&&(c, _, _)| !c).map(|&(_, _, v)| v).collect();
        assert!(!server_versions.is_empty());
        assert!(server_versions.iter().all(|&v| v == 0x6b33_43cf), "{server_versions:x?}");

        // A client without --v2 stays in v1.
        let out = scratch("v1-out");
        let r = get(options(server.addr.port(), &["500k.bin"], &out)).await.unwrap();
        assert_eq!(r.version, 1);
        server.stop().await;

        // A server without --v2 keeps a client that offers v2 in v1 (the interop runner
        // checks v1 outside its v2 case).
        let server = start(serve_options(&www));
        let out = scratch("v2-offered-out");
        let mut o = options(server.addr.port(), &["500k.bin"], &out);
        o.v2 = true;
        let r = get(o).await.unwrap();
        assert_eq!(r.version, 1);
        assert_same(&www, &out, &["500k.bin"]);
        server.stop().await;
    });
}

/// RFC 9369 §5 end to end: a `--v2` connection negotiated to v2 saves a v2 ticket and a v2
/// token; the next `--v2` run starts in v2 to use them (resumed, token used, no Retry); a
/// run without `--v2` (v1 only) uses neither: a full handshake and a Retry.
#[test]
fn v2_session_file_resumes_in_v2_only() {
    run(async {
        let www = www("v2-session", &[("10k.bin", 10 * 1024)]);
        let mut so = serve_options(&www);
        so.v2 = true;
        so.retry = true;
        let server = start(so);
        let session = scratch("v2-session-file").join("session.json");
        let fetch = |n: &str, v2: bool| {
            let out = scratch(n);
            let mut o = options(server.addr.port(), &["10k.bin"], &out);
            o.session_file = Some(session.clone());
            o.v2 = v2;
            (o, out)
        };
        let first = get(fetch("v2-session-1", true).0).await.unwrap();
        assert_eq!(first.version, 0x6b33_43cf);
        assert!(first.retried && first.ticket_saved && first.token_saved, "{first:?}");
        let text = std::fs::read_to_string(&session).unwrap();
        let saved: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(saved["token_version"].as_u64(), Some(0x6b33_43cf), "{text}");

        let (o, out) = fetch("v2-session-2", true);
        let second = get(o).await.unwrap();
        assert_same(&www, &out, &["10k.bin"]);
        assert_eq!(second.version, 0x6b33_43cf);
        assert!(second.resumed && second.token_used && !second.retried, "{second:?}");
        assert_eq!(server.counters().endpoint.retries_sent, 1);
        assert_eq!(server.counters().endpoint.invalid_tokens, 0);

        let (o, out) = fetch("v2-session-3", false);
        let third = get(o).await.unwrap();
        assert_same(&www, &out, &["10k.bin"]);
        assert_eq!(third.version, 1);
        assert!(!third.resumed && !third.token_used && third.retried, "{third:?}");
        assert_eq!(server.counters().endpoint.invalid_tokens, 0, "the v2 token was sent");
        server.stop().await;
    });
}

#[test]
fn ecn_marks_are_validated_on_loopback() {
    run(async {
        let www = www("ecn", &[("500k.bin", 500 * 1024)]);
        let server = start(serve_options(&www));
        let out = scratch("ecn-out");
        let r = get(options(server.addr.port(), &["500k.bin"], &out)).await.unwrap();
        assert_same(&www, &out, &["500k.bin"]);
        // The server's 1-RTT packets arrived marked ECT(0) (Linux loopback keeps the IP
        // header's ECN field) ...
        assert!(r.ecn_received[0] > 100, "ECT(0) received: {:?}", r.ecn_received);
        assert_eq!(r.ecn_received[2], 0, "CE on loopback");
        // ... and the server's ACK counts covered ours: the path is ECN-capable.
        assert!(r.ecn_capable, "ECN not validated: {r:?}");
        server.stop().await;
    });
}

#[test]
fn client_migrates_to_a_new_port_mid_transfer() {
    run(async {
        let www = www("migrate", &[("2m.bin", 2 << 20)]);
        let server = start(serve_options(&www));
        let out = scratch("migrate-out");
        let mut o = options(server.addr.port(), &["2m.bin"], &out);
        o.migrate = true;
        let r = get(o).await.unwrap();
        assert_same(&www, &out, &["2m.bin"]);
        assert!(r.migrated, "{r:?}");
        let k = server.counters();
        assert!(k.migrations >= 1, "{k:?}");
        assert!(k.paths_validated >= 1, "{k:?}");
        server.stop().await;
    });
}

#[test]
fn client_moves_to_the_servers_preferred_address() {
    run(async {
        let www = www("preferred", &[("1m.bin", 1 << 20)]);
        let mut so = serve_options(&www);
        so.preferred_address = Some("127.0.0.2:0".parse().unwrap());
        let server = start(so);
        let preferred = server.preferred.unwrap();
        assert_eq!(preferred.ip(), "127.0.0.2".parse::<std::net::IpAddr>().unwrap());
        let out = scratch("preferred-out");
        let r = get(options(server.addr.port(), &["1m.bin"], &out)).await.unwrap();
        assert_same(&www, &out, &["1m.bin"]);
        // RFC 9000 §9.6.1: probed, validated, moved.
        assert_eq!(r.peer, Some(preferred), "{r:?}");
        assert!(r.migrations >= 1);
        assert!(r.sources.contains(&preferred));
        // The client's address did not change: the server has nothing to validate.
        server.stop().await;
    });
}

#[test]
fn wildcard_server_answers_from_the_address_the_client_used() {
    run(async {
        let www = www("wildcard", &[("500k.bin", 500 * 1024)]);
        let mut so = serve_options(&www);
        so.listen = "0.0.0.0:0".parse().unwrap();
        so.identity = identity::server_identity(None, &data("rpk.key")).unwrap();
        so.preferred_address = Some("127.0.0.2:0".parse().unwrap());
        let server = start(so);
        let port = server.addr.port();
        // The client writes to 127.0.0.3; the kernel's own choice of source for a reply to
        // 127.0.0.1 would be 127.0.0.1.
        let used: SocketAddr = format!("127.0.0.3:{port}").parse().unwrap();
        let out = scratch("wildcard-out");
        let mut o = options(port, &[], &out);
        o.urls = vec![format!("https://{used}/500k.bin")];
        o.auth = ServerAuthOption::PinKey(data("rpk.pub"));
        let r = get(o).await.unwrap();
        assert_same(&www, &out, &["500k.bin"]);
        // Every datagram came from the address the client wrote to, then from the
        // preferred address (the second socket of the same endpoint).
        assert_eq!(r.sources, vec![used, server.preferred.unwrap()], "{r:?}");
        assert_eq!(r.peer, server.preferred);
        server.stop().await;
    });
}

#[test]
fn restarted_server_resets_the_connection() {
    run(async {
        let www = www("reset", &[("big.bin", 64 << 20)]);
        let key_file = scratch("reset-key").join("reset.key");
        let mut so = serve_options(&www);
        so.reset_key_file = Some(key_file.clone());
        let server = start(so.clone());
        let key = std::fs::read(&key_file).unwrap();
        assert_eq!(key.len(), RESET_KEY_LEN);
        let addr = server.addr;

        let out = scratch("reset-out");
        let mut o = options(addr.port(), &["big.bin"], &out);
        o.timeout_ms = 60_000;
        let client = tokio::spawn(get(o));
        // Mid-transfer: the first bytes are on disk.
        let file = out.join("big.bin");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while std::fs::metadata(&file).map_or(0, |m| m.len()) < 256 * 1024 {
            assert!(tokio::time::Instant::now() < deadline, "the transfer did not start");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // The server restarts on the same port with the same key and no connections.
        server.stop().await;
        let restarted_at = std::time::Instant::now();
        so.listen = addr;
        let server = start(so);
        assert_eq!(std::fs::read(&key_file).unwrap(), key, "the key file was replaced");

        let e = client.await.unwrap().unwrap_err();
        let waited = restarted_at.elapsed();
        let k = server.counters();
        assert!(e.0.contains("stateless reset"), "{e} after {waited:?}; {k:?}");
        // Reset by the new server, not the 10 s idle timeout.
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        assert!(k.endpoint.resets_sent >= 1);
        server.stop().await;
    });
}

/// A UDP relay in front of `server` that drops the `nth` (1-based) datagram of the server.
async fn drop_one(server: SocketAddr, nth: u64) -> (u16, tokio::task::JoinHandle<()>) {
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = sock.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (mut client, mut count) = (None, 0u64);
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = sock.recv_from(&mut buf).await else { return };
            let to = if from == server {
                count += 1;
                match client {
                    Some(c) if count != nth => c,
                    _ => continue,
                }
            } else {
                client = Some(from);
                server
            };
            let _ = sock.send_to(&buf[..n], to).await;
        }
    });
    (port, task)
}

/// RFC 9002 §6.1: a datagram lost mid-transfer is found by the acknowledgments of the
/// packets after it, and only its data is sent again. That needs the client to keep and
/// acknowledge the out-of-order data (mote-quic's `reorder`): without it every later
/// packet was dropped unacknowledged until the server's PTO (the "40–70 ms silences" of
/// lossy transfers) and then resent (measured: 1,166 B resent with `reorder`, 41,971 B
/// without).
#[test]
fn a_lost_datagram_costs_only_its_own_retransmission() {
    run(async {
        let www = www("drop-one", &[("500k.bin", 500 * 1024)]);
        let server = start(serve_options(&www));
        let (port, relay) = drop_one(server.addr, 40).await;
        let out = scratch("drop-one-out");
        get(options(port, &["500k.bin"], &out)).await.unwrap();
        relay.abort();
        assert_same(&www, &out, &["500k.bin"]);
        let k = server.counters();
        // Only the lost datagram's data is sent again. Without reordering the client drops
        // every packet behind the gap, and all of them (a congestion window's worth, tens
        // of KB) are resent. Not `ptos == 0`: on a loaded machine a stalled client can let
        // a probe timer fire, whose probe repeats only a packet or two.
        assert!(k.bytes_retransmitted < 8 * 1200, "{k:?}");
        server.stop().await;
    });
}

/// A NAT in front of `server`: the client's datagrams leave from an upstream socket that is
/// replaced (new port, and on `new_ip` if given) after the client's `after`th datagram.
async fn rebinding_nat(
    server: SocketAddr,
    after: u64,
    new_ip: Option<&'static str>,
) -> (u16, tokio::task::JoinHandle<()>) {
    let front = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = front.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut up = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let (mut client, mut count) = (None, 0u64);
        let (mut a, mut b) = (vec![0u8; 65536], vec![0u8; 65536]);
        loop {
            tokio::select! {
                r = front.recv_from(&mut a) => {
                    let Ok((n, from)) = r else { return };
                    client = Some(from);
                    count += 1;
                    if count == after {
                        let ip = new_ip.unwrap_or("127.0.0.1");
                        up = tokio::net::UdpSocket::bind((ip, 0)).await.unwrap();
                    }
                    let _ = up.send_to(&a[..n], server).await;
                }
                r = up.recv_from(&mut b) => {
                    let Ok((n, _)) = r else { return };
                    if let Some(c) = client {
                        let _ = front.send_to(&b[..n], c).await;
                    }
                }
            }
        }
    });
    (port, task)
}

/// RFC 9000 §9.3: the server follows a client whose NAT rebinds mid-transfer (a new port,
/// then a new address), validating each new path; the interop runner's rebind-port and
/// rebind-addr cases.
#[test]
fn server_follows_a_nat_rebinding() {
    run(async {
        let www = www("rebind", &[("2m.bin", 2 << 20)]);
        let server = start(serve_options(&www));
        for (case, ip) in [("port", None), ("addr", Some("127.0.0.5"))] {
            let before = server.counters();
            let (port, nat) = rebinding_nat(server.addr, 40, ip).await;
            let out = scratch(&format!("rebind-{case}"));
            get(options(port, &["2m.bin"], &out)).await.unwrap();
            nat.abort();
            assert_same(&www, &out, &["2m.bin"]);
            let k = server.counters();
            assert!(k.migrations > before.migrations, "{case}: {k:?}");
            assert!(k.paths_validated > before.paths_validated, "{case}: {k:?}");
        }
        server.stop().await;
    });
}

#[test]
fn a_bad_reset_key_file_is_refused() {
    run(async {
        let www = www("badkey", &[]);
        let path = scratch("badkey-file").join("short.key");
        std::fs::write(&path, [0u8; 16]).unwrap();
        let mut so = serve_options(&www);
        so.reset_key_file = Some(path);
        let e = Server::bind(so).unwrap_err();
        assert!(e.0.contains("16 bytes, a key is 32"), "{e}");
    });
}
