//! The firmware's stack — mote-quic's device connection type under the HTTP/3 device client
//! — against mote's server over the simulator's links (`mote_scenarios::devconn`).

use mote_quic::connection::CloseReason;
use mote_scenarios::devconn::run_device_connection;
use mote_scenarios::object;
use mote_sim::LinkProfile;

fn profile(name: &str) -> LinkProfile {
    name.parse().unwrap()
}

/// Two GETs of 5 KB, one after the other, on the demo's links and a lossy one, with the
/// device's own key update between them.
#[test]
fn device_connection_h3_gets() {
    for name in ["wlan", "nbiot", "lossy"] {
        for seed in [41, 42] {
            let what = format!("{name}/{seed}");
            let o = run_device_connection(profile(name), seed, 2, false);
            assert!(o.complete, "{what}: incomplete, close {:?}", o.close);
            assert_eq!(o.statuses, vec![Some(200); 2], "{what}");
            assert_eq!(o.responses, vec![object(5120); 2], "{what}");
            assert!(o.saw_settings, "{what}");
            assert!(o.key_updates >= 1, "{what}");
            match o.close {
                Some(CloseReason::Local(c)) => assert_eq!((c.code, c.application), (0x100, true)),
                other => panic!("{what}: close {other:?}"),
            }
        }
    }
}

/// Resumed from the first connection's ticket, with the first GET in 0-RTT (accepted).
#[test]
fn device_connection_h3_zero_rtt() {
    for name in ["wlan", "nbiot"] {
        let o = run_device_connection(profile(name), 43, 2, true);
        assert!(o.complete, "{name}: close {:?}", o.close);
        assert_eq!(o.early_data_accepted, Some(true), "{name}");
        assert_eq!(o.responses, vec![object(5120); 2], "{name}");
    }
}
