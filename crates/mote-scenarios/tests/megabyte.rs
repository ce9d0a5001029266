//! 1 MB downloads (server → device) under hostile links: random loss with bursts capped at
//! three datagrams, reordering, corruption, a 5 s blackhole and a 1.5 s round trip. Each run
//! checks the object arrives byte-exact and the connection ends with the device's own
//! close, not an error or an idle timeout.

use std::time::Instant as Wall;

use mote_quic::connection::CloseReason;
use mote_quic::ConnectionConfig;
use mote_scenarios::{object, run_rustcrypto, DeviceBuffers, Outcome, Setup};
use mote_sim::{Duration, Instant, LinkConfig, LinkProfile};

const MB: usize = 1 << 20;

/// The device's buffers and windows for a bulk download: 256 KiB of stream receive
/// buffer (the stream's window), a 1 MiB connection window.
fn bulk(profile: LinkProfile, seed: u64, size: usize) -> Setup {
    let mut s = Setup::transaction(profile, seed);
    s.object_size = size;
    s.buffers = DeviceBuffers { stream_recv: 256 * 1024, ..DeviceBuffers::DEVICE };
    s.device.streams.max_data = 4 * MB as u64;
    s.device.streams.max_stream_data_bidi_local = 256 * 1024;
    s.limit = Duration::from_secs(600);
    s
}

/// Runs `s`, checks the download, prints and returns the outcome.
fn download(what: &str, s: &Setup) -> Outcome {
    let wall = Wall::now();
    let o = run_rustcrypto(s);
    let expected = object(s.object_size);
    assert!(
        o.responses.len() == 1 && o.responses[0] == expected,
        "{what}: object differs or incomplete ({} of {} bytes; close {:?}; device {:?}; \
         server {:?})",
        o.responses.first().map_or(0, Vec::len),
        expected.len(),
        o.device_close,
        o.device,
        o.server,
    );
    assert!(o.handshake.is_some(), "{what}: no handshake");
    // The device closed it itself, once done (no transport error, no idle timeout).
    assert!(
        matches!(o.device_close, Some(CloseReason::Local(_))),
        "{what}: closed by {:?}",
        o.device_close
    );
    assert!(o.device_drained && o.server_drained, "{what}: not drained");
    println!(
        "{what}: handshake {:?}, done after {:?} virtual, {:?} wall; down {} datagrams \
         ({} dropped), up {} ({} dropped); server lost {} packets, {} PTOs, {} B retransmitted",
        o.handshake.unwrap(),
        o.duration.unwrap(),
        wall.elapsed(),
        o.down.datagrams,
        o.down.dropped,
        o.up.datagrams,
        o.up.dropped,
        o.server.packets_lost,
        o.server.ptos,
        o.server.bytes_retransmitted,
    );
    o
}

fn lossy_wlan(loss: f64) -> LinkProfile {
    LinkProfile::wlan().with_loss(loss).with_max_burst(3)
}

#[test]
fn one_megabyte_without_loss() {
    // Nothing is lost at random; the only drops are the bottleneck queue's tail drops
    // while slow start overshoots (a BDP-sized buffer on the 5 ms path).
    let o = download("0% loss", &bulk(lossy_wlan(0.0), 100, MB));
    assert_eq!(o.up.dropped, 0);
}

#[test]
fn one_megabyte_with_2_percent_loss() {
    let o = download("2% loss", &bulk(lossy_wlan(0.02), 102, MB));
    assert!(o.down.dropped > 0 && o.server.bytes_retransmitted > 0);
}

#[test]
fn one_megabyte_with_10_percent_loss() {
    let o = download("10% loss", &bulk(lossy_wlan(0.10), 110, MB));
    assert!(o.down.dropped > 0 && o.server.bytes_retransmitted > 0);
}

#[test]
fn one_megabyte_with_30_percent_loss() {
    let o = download("30% loss", &bulk(lossy_wlan(0.30), 130, MB));
    assert!(o.down.dropped > 0 && o.server.bytes_retransmitted > 0);
}

#[test]
fn handshake_survives_30_percent_loss() {
    // Many seeds: the handshake (and a small transaction) always completes.
    for seed in 0..20 {
        download("30% loss handshake", &bulk(lossy_wlan(0.30), 1000 + seed, 5 * 1024));
    }
}

#[test]
fn one_megabyte_with_reordering() {
    // 10 % of datagrams each way held back by 4 ms (0.8 RTT on the 5 ms WLAN path).
    let p = LinkProfile::wlan().with_reordering(0.10, Duration::from_millis(4));
    let o = download("reordering", &bulk(p, 200, MB));
    assert!(o.down.dropped == 0);
}

#[test]
fn one_megabyte_with_corruption() {
    // One byte changed in 30 % of datagrams each way: AEAD rejects them, recovery resends.
    let p = LinkProfile::wlan().with_corruption(0.30, 0..usize::MAX);
    let o = download("corruption", &bulk(p, 300, MB));
    assert!(o.server.bytes_retransmitted > 0);
}

#[test]
fn one_megabyte_through_a_5s_blackhole() {
    // 5 s outage both ways starting 100 ms in, mid-transfer; idle timeout 30 s > 5 s.
    let p = LinkProfile::wlan().with_blackhole(Instant(100_000), Duration::from_secs(5));
    let s = bulk(p, 400, MB);
    assert!(s.device.idle_timeout_ms > 5_000 && s.server.idle_timeout_ms > 5_000);
    let o = download("blackhole", &s);
    assert!(o.duration.unwrap() > Duration::from_secs(5));
    assert!(o.down.dropped > 0);
}

#[test]
fn one_megabyte_over_a_1500ms_round_trip() {
    // 750 ms one way, 20 Mbit/s each way, buffers of rate × RTT.
    let one_way = |rate: u64| LinkConfig {
        rate_bps: Some(rate),
        buffer_bytes: (rate / 8 * 3 / 2) as usize,
        delay: Duration::from_millis(750),
        mtu: 1472,
        ..LinkConfig::default()
    };
    let p = LinkProfile::custom(one_way(20_000_000), one_way(20_000_000));
    let mut s = bulk(p, 500, MB);
    s.device = s.device.with_initial_rtt(Duration::from_millis(1500));
    s.server = ConnectionConfig::server().with_initial_rtt(Duration::from_millis(1500));
    s.device.idle_timeout_ms = 60_000;
    let o = download("1.5 s RTT", &s);
    assert!(o.handshake.unwrap() >= Duration::from_millis(1500));
}
