//! The relay on real loopback sockets: forwarding both ways, the drop list, the log, and NAT
//! rebinding as the server sees it.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
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
