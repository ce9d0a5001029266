//! Paths in the simulator (RFC 9000 §8.2, §9, §13.4, §14): NAT rebinding of port and
//! address during a 10 MB download, a client's active migration, the server's preferred
//! address, path MTU discovery up to the link MTU and back down when it shrinks, and ECN
//! marks with CE reducing the congestion window.

use std::net::SocketAddr;

use mote_quic::connection::CloseReason;
use mote_quic::ConnectionConfig;
use mote_scenarios::{
    device_addr, object, run_rustcrypto, server_addr, DeviceBuffers, Outcome, Setup,
};
use mote_sim::{Duration, LinkProfile};

const MB: usize = 1 << 20;

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A bulk download setup (as in the megabyte tests).
fn bulk(profile: LinkProfile, seed: u64, size: usize) -> Setup {
    let mut s = Setup::transaction(profile, seed);
    s.object_size = size;
    s.buffers = DeviceBuffers { stream_recv: 256 * 1024, ..DeviceBuffers::DEVICE };
    s.device.streams.max_data = 64 * MB as u64;
    s.device.streams.max_stream_data_bidi_local = 256 * 1024;
    s.limit = Duration::from_secs(600);
    s
}

fn run_ok(what: &str, s: &Setup) -> Outcome {
    let o = run_rustcrypto(s);
    let expected = object(s.object_size);
    assert!(
        o.responses.len() == 1 && o.responses[0] == expected,
        "{what}: object differs or incomplete ({} of {} bytes; close {:?}; device {:?}; server {:?})",
        o.responses.first().map_or(0, Vec::len),
        expected.len(),
        o.device_close,
        o.device,
        o.server,
    );
    assert!(
        matches!(o.device_close, Some(CloseReason::Local(_))),
        "{what}: closed by {:?}",
        o.device_close
    );
    println!(
        "{what}: done after {:?}; device {:?}; server {:?}",
        o.duration.unwrap(),
        o.device,
        o.server
    );
    o
}

/// A field of a JSON-lines trace record, as text (strings without their quotes).
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\":");
    let rest = &line[line.find(&key)? + key.len()..];
    if let Some(r) = rest.strip_prefix('"') {
        return r.split('"').next();
    }
    rest.split([',', '}']).next()
}

/// Datagrams of the trace from `from` (as sent) to `to`, with their lengths.
fn datagrams(o: &Outcome, from: SocketAddr, to: SocketAddr) -> Vec<usize> {
    let (from, to) = (from.to_string(), to.to_string());
    o.trace_jsonl
        .lines()
        .filter(|l| field(l, "from") == Some(&from) && field(l, "to") == Some(&to))
        .filter_map(|l| field(l, "len")?.parse().ok())
        .collect()
}

#[test]
fn nat_rebinding_of_port_and_address_during_10_mb() {
    // The device uploads 10 MB; its NAT maps it to a new port after 1 s, then to a new
    // address after 2.5 s. The server follows each change with a PATH_CHALLENGE on the new
    // path (validated), resets congestion control on the address change, and every byte
    // arrives. (An upload, because a NAT rebinding shows only when the device sends: a
    // device that only receives while the server's packets die at the old mapping would
    // never be heard from again, whatever the server does.)
    let port_change = sa("10.0.0.2:6100");
    let addr_change = sa("10.8.8.8:6100");
    let mut s = bulk(LinkProfile::wlan(), 700, 1024);
    s.request = object(10 * MB);
    s.buffers.stream_send = 256 * 1024;
    s.paths.rebinds = vec![
        (Duration::from_millis(1000), port_change),
        (Duration::from_millis(2500), addr_change),
    ];
    let o = run_ok("NAT rebinding", &s);
    assert!(o.requests.len() == 1 && o.requests[0] == s.request, "upload differs");
    assert!(o.duration.unwrap() > Duration::from_millis(2500), "rebinds happened mid-transfer");
    assert_eq!(o.server.migrations, 2);
    assert_eq!(o.server.paths_validated, 2);
    // The server sent to each new external address (challenges, ACKs, the response), and
    // the device never migrated itself.
    assert!(datagrams(&o, server_addr(), port_change).len() > 10);
    assert!(datagrams(&o, server_addr(), addr_change).len() > 10);
    assert_eq!(o.device.migrations, 0);
    assert_eq!(o.device.path_challenges_received, 2);
    // It moved to fresh connection IDs of the device (RFC 9000 §9.5).
    assert!(o.device.cids_retired_by_peer >= 2);
}

#[test]
fn client_migrates_to_a_new_address() {
    // 300 ms into a 2 MB download the device moves to a second local address: it switches
    // to a new server connection ID, validates the new path and the server follows.
    let new_local = sa("10.0.0.3:5000");
    let mut s = bulk(LinkProfile::wlan(), 701, 2 * MB);
    s.paths.migrate = Some((Duration::from_millis(300), new_local));
    let o = run_ok("active migration", &s);
    assert_eq!((o.device.migrations, o.device.paths_validated), (1, 1));
    assert_eq!((o.server.migrations, o.server.paths_validated), (1, 1));
    assert!(!datagrams(&o, new_local, server_addr()).is_empty());
    assert!(!datagrams(&o, server_addr(), new_local).is_empty());
    // The server's old connection ID was retired by the device.
    assert!(o.server.cids_retired_by_peer >= 1);
}

#[test]
fn client_moves_to_the_servers_preferred_address() {
    let preferred = sa("198.51.100.7:4433");
    let mut s = bulk(LinkProfile::wlan(), 702, MB);
    s.server.preferred_address = Some(preferred);
    s.paths.server_second_address = Some(preferred);
    let o = run_ok("preferred address", &s);
    assert_eq!((o.device.migrations, o.device.paths_validated), (1, 1));
    // The device probed the preferred address, moved there, and it answers from it.
    let up = datagrams(&o, device_addr(), preferred);
    let down = datagrams(&o, preferred, device_addr());
    assert!(up.len() > 100 && down.len() > 100, "{} up, {} down", up.len(), down.len());
    // An unreachable preferred address: the probes die, the device stays where it was.
    let mut s = bulk(LinkProfile::wlan(), 706, MB);
    s.server.preferred_address = Some(preferred);
    let o = run_ok("unreachable preferred address", &s);
    assert_eq!((o.device.migrations, o.device.paths_validated), (0, 0));
    let probes = datagrams(&o, device_addr(), preferred);
    assert!(!probes.is_empty() && probes.len() <= 3, "{probes:?}");
    assert!(probes.iter().all(|n| *n >= 1200), "probes are padded");
}

#[test]
fn pmtud_probes_up_to_the_link_mtu_and_falls_back_when_it_shrinks() {
    // The link carries 1400-byte datagrams; the server may probe up to 1452.
    let mut p = LinkProfile::wlan();
    p.down.mtu = 1400;
    p.up.mtu = 1400;
    let mut s = bulk(p.clone(), 703, 2 * MB);
    s.server = ConnectionConfig::server().with_pmtud(1452);
    let o = run_ok("PMTUD", &s);
    let sizes = datagrams(&o, server_addr(), device_addr());
    let largest_delivered = sizes.iter().copied().filter(|n| *n <= 1400).max().unwrap();
    assert!(largest_delivered > 1400 - 16, "{largest_delivered}");
    assert!(o.server.pmtu_probes_acked >= 1 && o.server.pmtu_probes_sent >= 2);
    // Lost probes were no congestion: nothing else was lost on this clean link except
    // what the bottleneck queue tail-dropped.
    // Now the link's MTU drops to 1250 mid-transfer: black hole detected, back to 1200,
    // the object still arrives.
    let mut s = bulk(p, 704, 4 * MB);
    s.server = ConnectionConfig::server().with_pmtud(1452);
    s.paths.mtu_drop = Some((Duration::from_millis(500), 1250));
    let o = run_ok("PMTU black hole", &s);
    assert!(o.server.pmtu_blackholes >= 1, "{:?}", o.server);
}

#[test]
fn ecn_marks_are_counted_and_ce_reduces_the_window() {
    // A clean ECN path: every datagram arrives ECT(0) and is counted.
    let clean = run_ok("ECN", &bulk(LinkProfile::wlan(), 705, 2 * MB));
    assert!(clean.device.ecn_received[0] > 1000, "{:?}", clean.device.ecn_received);
    assert_eq!(clean.device.ecn_received[2], 0);
    assert_eq!(clean.server.ecn_ce_events, 0);
    // An AQM marking CE instead of dropping (above half the buffer): the server slows
    // down on the marks alone, so the queue overflows less than on the clean run.
    let mut p = LinkProfile::wlan();
    p.down.ce_threshold_bytes = Some(p.down.buffer_bytes / 2);
    let marked = run_ok("ECN CE", &bulk(p, 705, 2 * MB));
    assert!(marked.device.ecn_received[2] > 0);
    assert!(marked.server.ecn_ce_events > 0, "{:?}", marked.server);
    println!(
        "lost: clean {} vs CE-marked {}; CE events {}",
        clean.server.packets_lost, marked.server.packets_lost, marked.server.ecn_ce_events
    );
    assert!(marked.server.packets_lost < clean.server.packets_lost);
}
