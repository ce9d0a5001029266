//! Smoke test of the built binary: `mote serve` in a child process, `mote get` against it
//! over hq-interop and h3, and a failing `mote get` that must exit non-zero.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mote-net/tests/data").join(name)
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn mote_get_fetches_from_mote_serve() {
    let dir = std::env::temp_dir().join(format!("mote-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(www.join("a.bin"), &body).unwrap();
    std::fs::write(www.join("b.txt"), b"hello\n").unwrap();

    // A free port: bind, read it, release it for the server.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mote"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--www"])
        .arg(&www)
        .arg("--cert")
        .arg(data("server.pem"))
        .arg("--key")
        .arg(data("server.key"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready once it says where it listens.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // Keep draining what the server writes, so it never blocks or fails on a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let _server = Server(child);
    assert!(line.contains("listening on"), "{line}");

    for alpn in ["hq-interop", "h3"] {
        let out = dir.join(format!("out-{alpn}"));
        let status = Command::new(env!("CARGO_BIN_EXE_mote"))
            .arg("get")
            .arg(format!("https://localhost:{port}/a.bin"))
            .arg(format!("https://localhost:{port}/b.txt"))
            .arg("--output")
            .arg(&out)
            .arg("--ca")
            .arg(data("ca.pem"))
            .args(["--alpn", alpn, "--timeout-ms", "20000"])
            .status()
            .unwrap();
        assert!(status.success(), "{alpn}: {status}");
        assert_eq!(std::fs::read(out.join("a.bin")).unwrap(), body);
        assert_eq!(std::fs::read(out.join("b.txt")).unwrap(), b"hello\n");
    }

    // A missing file: non-zero exit and a message naming it.
    let output = Command::new(env!("CARGO_BIN_EXE_mote"))
        .arg("get")
        .arg(format!("https://localhost:{port}/missing.bin"))
        .arg("--output")
        .arg(dir.join("out-missing"))
        .arg("--ca")
        .arg(data("ca.pem"))
        .args(["--alpn", "h3", "--timeout-ms", "20000"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("missing.bin"), "{stderr}");

    // No way to skip server authentication.
    let output = Command::new(env!("CARGO_BIN_EXE_mote"))
        .args(["get", &format!("https://localhost:{port}/b.txt"), "--output"])
        .arg(dir.join("out-noauth"))
        .output()
        .unwrap();
    assert!(!output.status.success());
}
