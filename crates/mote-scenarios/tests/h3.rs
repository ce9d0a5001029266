//! HTTP/3 (mote-h3) over mote-quic in the simulator: the session's critical streams and
//! SETTINGS, a GET and its response, on the demo's links.

use mote_quic::connection::CloseReason;
use mote_scenarios::{object, run_rustcrypto, HandshakeMode, Setup};
use mote_sim::LinkProfile;

fn profile(name: &str) -> LinkProfile {
    name.parse().unwrap()
}

#[test]
fn h3_get_5kb_over_wlan_and_nbiot() {
    for name in ["wlan", "nbiot"] {
        let mut s = Setup::transaction(profile(name), 21);
        s = s.with_http3();
        assert_eq!(s.object_size, 5120);
        let o = run_rustcrypto(&s);
        assert!(
            o.complete,
            "{name}: incomplete ({:?} statuses, {} body bytes, close {:?})",
            o.statuses,
            o.responses.first().map_or(0, Vec::len),
            o.device_close
        );
        // The server parsed the request head (parse_request) ...
        assert_eq!(o.requests, vec![b"GET /5120".to_vec()], "{name}");
        // ... and the device got `:status 200`, the body byte-exact and the end (Finished).
        assert_eq!(o.statuses, vec![Some(200)], "{name}");
        assert_eq!(o.responses, vec![object(5120)], "{name}");
        assert!(o.duration.is_some(), "{name}: no Finished");
        // Both control streams arrived with SETTINGS.
        assert!(o.device_saw_settings, "{name}: device saw no SETTINGS");
        assert!(o.server_saw_settings, "{name}: server saw no SETTINGS");
        // The device closed with H3_NO_ERROR and both ends drained.
        match o.device_close {
            Some(CloseReason::Local(c)) => assert_eq!(c.code, 0x100, "{name}"),
            other => panic!("{name}: close {other:?}"),
        }
        assert!(o.device_drained && o.server_drained, "{name}: not drained");
        // First body byte after handshake + one request round trip.
        let rtt = profile(name).rtt();
        assert!(o.time_to_first_byte.unwrap() >= rtt + rtt, "{name}");
        eprintln!(
            "{name}: handshake {:?} first byte {:?} done {:?}, up {} B / down {} B, vs ideal {:?}",
            o.handshake,
            o.time_to_first_byte,
            o.duration,
            o.up.bytes,
            o.down.bytes,
            o.vs_ideal(&profile(name))
        );
    }
}

#[test]
fn h3_get_completes_on_lossy_link() {
    for seed in 1..8 {
        let o = run_rustcrypto(&Setup::transaction(profile("lossy"), seed).with_http3());
        assert!(o.complete, "seed {seed}: close {:?}", o.device_close);
        assert_eq!(o.statuses, vec![Some(200)], "seed {seed}");
        assert!(o.device_saw_settings && o.server_saw_settings, "seed {seed}");
        assert!(o.device_drained && o.server_drained, "seed {seed}");
    }
}

#[test]
fn h3_get_after_resumption_and_in_0rtt() {
    for name in ["wlan", "nbiot"] {
        for mode in [HandshakeMode::Resumed, HandshakeMode::ZeroRtt] {
            let mut s = Setup::transaction(profile(name), 22).with_http3();
            s.mode = mode;
            let o = run_rustcrypto(&s);
            let what = format!("{name}/{}", mode.name());
            assert!(o.complete, "{what}: close {:?}", o.device_close);
            assert!(o.resumed, "{what}: not resumed");
            assert_eq!(o.statuses, vec![Some(200)], "{what}");
            assert_eq!(o.responses, vec![object(5120)], "{what}");
            assert!(o.device_saw_settings && o.server_saw_settings, "{what}");
            if mode == HandshakeMode::ZeroRtt {
                assert_eq!(o.early_data_accepted, Some(true), "{what}");
                // The GET went in 0-RTT: the body starts one round trip in.
                let rtt = profile(name).rtt();
                assert!(
                    o.time_to_first_byte.unwrap() < rtt + rtt,
                    "{what}: {:?}",
                    o.time_to_first_byte
                );
            }
            eprintln!("{what}: ttfb {:?} total {:?}", o.time_to_first_byte, o.duration);
        }
    }
}

/// 0-RTT rejected: the ticket was already spent on an earlier 0-RTT connection, so the
/// server's anti-replay register refuses the early data (the PSK still resumes); the client
/// sends the GET again in 1-RTT and gets the whole object.
#[test]
fn h3_get_with_0rtt_rejected_is_resent_in_1rtt() {
    for name in ["wlan", "nbiot"] {
        let mut s = Setup::transaction(profile(name), 23).with_http3();
        s.mode = HandshakeMode::ZeroRtt;
        s.replay_ticket = true;
        let o = run_rustcrypto(&s);
        assert!(o.complete, "{name}: close {:?}", o.device_close);
        assert_eq!(o.early_data_accepted, Some(false), "{name}");
        assert!(o.resumed, "{name}: PSK still accepted");
        assert_eq!(o.statuses, vec![Some(200)], "{name}");
        assert_eq!(o.responses, vec![object(5120)], "{name}");
        // The request went out twice: in 0-RTT (discarded) and again in 1-RTT.
        assert!(o.device.bytes_retransmitted > 0 || o.device.packets_sent[2] > 1, "{name}");
        // Without early data the body takes a round trip more than with it.
        let rtt = profile(name).rtt();
        assert!(o.time_to_first_byte.unwrap() >= rtt + rtt, "{name}");
    }
}

/// The firmware's one-request-at-a-time client (`mote_h3::client`) over mote-quic against
/// the simulator's HTTP/3 server: on the demo's links, on a lossy link, and with two GETs
/// one after the other; after resumption and in 0-RTT.
#[test]
fn h3_device_client_gets() {
    for name in ["wlan", "nbiot", "lossy"] {
        for seed in [31, 32] {
            let what = format!("{name}/{seed}");
            let mut s = Setup::transaction(profile(name), seed).with_http3_device_client();
            s.streams = 2;
            let o = run_rustcrypto(&s);
            assert!(o.complete, "{what}: incomplete, close {:?}", o.device_close);
            assert_eq!(o.requests, vec![b"GET /5120".to_vec(); 2], "{what}");
            assert_eq!(o.statuses, vec![Some(200); 2], "{what}");
            assert_eq!(o.responses, vec![object(5120); 2], "{what}");
            assert!(o.device_saw_settings && o.server_saw_settings, "{what}");
            match o.device_close {
                Some(CloseReason::Local(c)) => assert_eq!(c.code, 0x100, "{what}"),
                other => panic!("{what}: close {other:?}"),
            }
        }
    }
    for mode in [HandshakeMode::Resumed, HandshakeMode::ZeroRtt] {
        let mut s = Setup::transaction(profile("wlan"), 33).with_http3_device_client();
        s.mode = mode;
        let o = run_rustcrypto(&s);
        let what = mode.name();
        assert!(o.complete, "{what}: close {:?}", o.device_close);
        assert_eq!(o.responses, vec![object(5120)], "{what}");
        if mode == HandshakeMode::ZeroRtt {
            assert_eq!(o.early_data_accepted, Some(true), "{what}");
        }
    }
}
