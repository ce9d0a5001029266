use mote_scenarios::*;
use mote_sim::LinkProfile;

#[test]
fn smoke() {
    for name in ["wlan", "nbiot", "lossy"] {
        let p: LinkProfile = name.parse().unwrap();
        for mode in [HandshakeMode::Full, HandshakeMode::Resumed, HandshakeMode::ZeroRtt] {
            let mut s = Setup::transaction(p.clone(), 7);
            s.mode = mode;
            let o = run_rustcrypto(&s);
            eprintln!(
                "{name} {:?}: complete={} hs={:?} ttfb={:?} dur={:?} up={:?} down={:?} lost c/s {} {} pto {} {} early={:?} resumed={} close={:?}",
                mode, o.complete, o.handshake, o.time_to_first_byte, o.duration, o.up, o.down,
                o.device.packets_lost, o.server.packets_lost, o.device.ptos, o.server.ptos,
                o.early_data_accepted, o.resumed, o.device_close
            );
        }
    }
}
