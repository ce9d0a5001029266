//! `mote get --device` (mote-net's `device_client`: the device connection and the HTTP/3
//! device client on a UDP socket) against `mote serve`'s logic on 127.0.0.1, in one
//! process: several files one after the other, resumption and 0-RTT through a session
//! file, a key update, and the failures that must be reported.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mote_net::client::{GetOptions, ServerAuthOption};
use mote_net::device_client::get;
use mote_net::identity;
use mote_net::server::{ServeOptions, Server, ServerCounters};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mote-net-dev-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn content(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8 ^ seed).collect()
}

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

fn serve(www: &Path) -> Running {
    let identity =
        identity::server_identity(Some(&data("server.pem")), &data("server.key")).unwrap();
    let server = Server::bind(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        www: www.to_path_buf(),
        identity,
        alpn: vec![b"hq-interop".to_vec(), b"h3".to_vec()],
        retry: false,
        qlog_dir: None,
        keylog: None,
        max_idle_ms: 10_000,
        v2: false,
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
        alpn: b"h3".to_vec(),
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

fn run<F: std::future::Future<Output = ()> + Send + 'static>(f: F) {
    mote_net::driver::block_on(f).unwrap();
}

#[test]
fn files_one_after_the_other_on_one_connection() {
    run(async {
        let www = www("files");
        let server = serve(&www);
        let files = ["5k.bin", "10k.bin", "500k.bin", "1m.bin", "empty.bin"];
        let out = scratch("files-out");
        let r = get(options(server.port, &files, &out)).await.unwrap();
        assert_eq!(r.files, files.len());
        assert_eq!(r.bytes, (5 + 10 + 500 + 1024) * 1024);
        assert!(!r.resumed);
        assert_same(&www, &out, &files);
        let k = *server.counters.lock().unwrap();
        assert_eq!(k.connections, 1);
        assert_eq!(k.responses, files.len() as u64);
    });
}

#[test]
fn resumption_zero_rtt_and_key_update() {
    run(async {
        let www = www("resume");
        let server = serve(&www);
        let session = scratch("resume-session").join("session.json");
        // First connection: full handshake, a key update, the ticket saved.
        let out = scratch("resume-1");
        let mut o = options(server.port, &["500k.bin"], &out);
        o.session_file = Some(session.clone());
        o.key_update = true;
        let first = get(o).await.unwrap();
        assert!(!first.resumed);
        assert!(first.key_updated, "no key update");
        assert!(first.ticket_saved, "no ticket saved");
        assert_same(&www, &out, &["500k.bin"]);
        assert_eq!(server.counters.lock().unwrap().peer_key_updates, 1);
        // Second: resumed, the first request in 0-RTT, the second after it.
        let out = scratch("resume-2");
        let mut o = options(server.port, &["10k.bin", "5k.bin"], &out);
        o.session_file = Some(session.clone());
        o.zero_rtt = true;
        let keylog = out.join("keys.log");
        o.keylog = Some(keylog.clone());
        let second = get(o).await.unwrap();
        // The key log has the 0-RTT and 1-RTT secrets (a trace of it can be decrypted).
        let keys = std::fs::read_to_string(&keylog).unwrap();
        for label in ["CLIENT_EARLY_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0"] {
            assert!(keys.contains(label), "no {label} in {keys}");
        }
        assert!(second.resumed, "not resumed");
        assert_eq!(second.early_data, Some(true), "0-RTT not accepted");
        assert_same(&www, &out, &["10k.bin", "5k.bin"]);
        // Third: resumed with the newest ticket, without 0-RTT.
        let out = scratch("resume-3");
        let mut o = options(server.port, &["5k.bin"], &out);
        o.session_file = Some(session);
        let third = get(o).await.unwrap();
        assert!(third.resumed);
        assert_eq!(third.early_data, None);
        let k = *server.counters.lock().unwrap();
        assert_eq!((k.resumed, k.early_data_accepted), (2, 1));
    });
}

#[test]
fn failures_are_reported() {
    run(async {
        let www = www("fail");
        let server = serve(&www);
        // A missing file: 404, named.
        let out = scratch("fail-404");
        let e = get(options(server.port, &["5k.bin", "nope.bin"], &out)).await.unwrap_err();
        assert!(e.0.contains("nope.bin") && e.0.contains("404"), "{e}");
        // An unknown CA: the certificate is refused.
        let mut o = options(server.port, &["5k.bin"], &scratch("fail-ca"));
        o.auth = ServerAuthOption::Ca(data("server.pem"));
        o.timeout_ms = 5_000;
        let e = get(o).await.unwrap_err();
        assert!(e.0.contains("TLS alert"), "{e}");
        // HTTP/3 only.
        let mut o = options(server.port, &["5k.bin"], &scratch("fail-alpn"));
        o.alpn = b"hq-interop".to_vec();
        assert!(get(o).await.unwrap_err().0.contains("HTTP/3 only"));
    });
}
