//! The relay on real loopback sockets: forwarding both ways, the drop list, the log, and NAT
//! rebinding as the server sees it.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use mote_quic::recovery::Ecn;
use mote_relay::Args;
use serde_json::Value;
use tokio::net::UdpSocket;
use tokio::sync::oneshot;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn config(extra: &[&str], server: SocketAddr, log: &std::path::Path) -> mote_relay::Config {
    let mut argv = vec!["relay", "--listen", "127.0.0.1:0"];
    let server = server.to_string();
    argv.extend(["--server", &server]);
    let log = log.display().to_string();
    argv.extend(["--log", &log, "--log-bytes"]);
    argv.extend(extra);
    Cli::parse_from(argv).args.config().unwrap()
}

/// Starts a relay; returns its address and the handle that stops it.
async fn start(
    config: mote_relay::Config,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (addr_tx, addr_rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        let shutdown = async move {
            let _ = stop_rx.await;
        };
        mote_relay::run_until(
            config,
            |a| {
                let _ = addr_tx.send(a);
            },
            shutdown,
        )
        .await
        .unwrap();
    });
    (addr_rx.await.unwrap(), stop_tx, task)
}

fn log_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn forwards_both_ways_drops_by_index_and_logs() {
    let dir = std::env::temp_dir().join(format!("mote-relay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("a.jsonl");
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let (relay, stop, task) =
        start(config(&["--drop-to-server", "2"], server.local_addr().unwrap(), &log)).await;
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    // A v1 Initial-looking header (garbage after it) and short-header datagrams.
    let initial = [0xc0, 0, 0, 0, 1, 4, 1, 2, 3, 4, 0, 0, 1, 0xaa];
    client.send_to(&initial, relay).await.unwrap();
    for i in 2..=4u8 {
        client.send_to(&[0x40, i], relay).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 100];
    for _ in 0..3 {
        let (n, from) = tokio::time::timeout(Duration::from_secs(2), server.recv_from(&mut buf))
            .await
            .unwrap()
            .unwrap();
        got.push(buf[..n].to_vec());
        // Echo: the answer goes back through the relay's mapping.
        server.send_to(&buf[..n], from).await.unwrap();
    }
    assert_eq!(got, vec![initial.to_vec(), vec![0x40, 3], vec![0x40, 4]]);
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(2), client.recv_from(&mut buf))
            .await
            .unwrap()
            .unwrap();
    }
    stop.send(()).unwrap();
    task.await.unwrap();
    let lines = log_lines(&log);
    let up: Vec<&Value> = lines.iter().filter(|l| l["dir"] == "to_server").collect();
    assert_eq!(up.len(), 4);
    assert_eq!(up[0]["packets"][0]["type"], "initial");
    assert_eq!(up[0]["packets"][0]["dcid"], "01020304");
    assert_eq!(up[1]["fate"], "dropped");
    assert_eq!(up[1]["reason"], "drop_list");
    assert_eq!(up[2]["hex"], "4003");
    assert_eq!(
        lines.iter().filter(|l| l["dir"] == "to_client" && l["fate"] == "forwarded").count(),
        3
    );
}

#[tokio::test]
async fn port_rebinding_moves_the_client_as_the_server_sees_it() {
    let dir = std::env::temp_dir().join(format!("mote-relay-test-rb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("b.jsonl");
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let (relay, stop, task) = start(config(
        &["--rebind-port-every", "100", "--first-rebind-ms", "100"],
        server.local_addr().unwrap(),
        &log,
    ))
    .await;
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut sources = BTreeSet::new();
    let mut buf = [0u8; 10];
    for i in 0..8u8 {
        client.send_to(&[0x40, i], relay).await.unwrap();
        let (_, from) = tokio::time::timeout(Duration::from_secs(2), server.recv_from(&mut buf))
            .await
            .unwrap()
            .unwrap();
        sources.insert(from);
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    stop.send(()).unwrap();
    task.await.unwrap();
    assert!(sources.len() >= 3, "the server saw {sources:?}");
    assert!(sources.iter().all(|s| s.ip().is_loopback()));
    assert!(log_lines(&log).iter().any(|l| l["event"] == "rebind"));
}

/// Receives one datagram on a quinn-udp socket: its bytes, sender and ECN codepoint.
async fn recv_marked(socket: &mote_net::socket::UdpSocket) -> (Vec<u8>, SocketAddr, Ecn) {
    let mut buf = vec![0u8; 2048];
    let mut meta = [quinn_udp::RecvMeta::default()];
    let n = {
        let mut bufs = [std::io::IoSliceMut::new(&mut buf)];
        tokio::time::timeout(Duration::from_secs(2), socket.recv(&mut bufs, &mut meta))
            .await
            .unwrap()
            .unwrap()
    };
    assert_eq!(n, 1);
    let info = mote_net::socket::recv_info(&meta[0], socket.local_addr().unwrap());
    (buf[..meta[0].len].to_vec(), meta[0].addr, info.ecn)
}

#[tokio::test]
async fn carries_ecn_codepoints_both_ways_and_logs_them() {
    let dir = std::env::temp_dir().join(format!("mote-relay-test-ecn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("c.jsonl");
    let server = mote_net::socket::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let (relay, stop, task) = start(config(&[], server.local_addr().unwrap(), &log)).await;
    let client = mote_net::socket::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let marks = [Ecn::Ect0, Ecn::Ect1, Ecn::NotEct, Ecn::Ce];
    for (i, &ecn) in marks.iter().enumerate() {
        client.send_from(relay, &[0x40, i as u8], None, ecn, None).await.unwrap();
        let (bytes, from, got) = recv_marked(&server).await;
        assert_eq!((bytes, got), (vec![0x40, i as u8], ecn), "to the server");
        // The answer carries the mark the server gave it, not the client's.
        let back = marks[(i + 1) % marks.len()];
        server.send_from(from, &[0x41, i as u8], None, back, None).await.unwrap();
        let (bytes, _, got) = recv_marked(&client).await;
        assert_eq!((bytes, got), (vec![0x41, i as u8], back), "to the client");
    }
    stop.send(()).unwrap();
    task.await.unwrap();
    let lines = log_lines(&log);
    let logged: Vec<(&str, &str)> =
        lines.iter().map(|l| (l["dir"].as_str().unwrap(), l["ecn"].as_str().unwrap())).collect();
    assert_eq!(
        logged,
        [
            ("to_server", "ect0"),
            ("to_client", "ect1"),
            ("to_server", "ect1"),
            ("to_client", "not-ect"),
            ("to_server", "not-ect"),
            ("to_client", "ce"),
            ("to_server", "ce"),
            ("to_client", "ect0"),
        ]
    );
}

#[tokio::test]
async fn preferred_listen_gives_the_client_a_new_path_to_the_second_server() {
    let dir = std::env::temp_dir().join(format!("mote-relay-test-pa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("d.jsonl");
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server2 = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let preferred = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (p, s2) = (preferred.to_string(), server2.local_addr().unwrap().to_string());
    let args = ["--preferred-listen", p.as_str(), "--preferred-server", s2.as_str()];
    let (relay, stop, task) = start(config(&args, server.local_addr().unwrap(), &log)).await;
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut buf = [0u8; 10];
    // First the primary address, then the preferred one, from the same client socket.
    client.send_to(&[0x40, 1], relay).await.unwrap();
    let (_, via1) = server.recv_from(&mut buf).await.unwrap();
    client.send_to(&[0x40, 2], preferred).await.unwrap();
    let (n, via2) = tokio::time::timeout(Duration::from_secs(2), server2.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], &[0x40, 2]);
    assert_ne!(via1, via2, "the server must see a new path");
    // The second server's answer comes back from the preferred address.
    server2.send_to(&[0x41, 2], via2).await.unwrap();
    let (_, from) = tokio::time::timeout(Duration::from_secs(2), client.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(from, preferred);
    stop.send(()).unwrap();
    task.await.unwrap();
    let lines = log_lines(&log);
    assert_eq!(lines[1]["listen"], p.as_str());
    assert_eq!(lines[1]["server"], s2.as_str());
    assert_eq!(lines[2]["dir"], "to_client");
    assert_eq!(lines[2]["listen"], p.as_str());
}
