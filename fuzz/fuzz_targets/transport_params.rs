//! Transport parameters (RFC 9000 §18): decoding never panics, and whatever decodes
//! re-encodes to parameters that decode to the same value (decode ∘ encode = identity),
//! except when a `version_information` Available Versions list was truncated on decode:
//! then only the kept versions are re-encoded (the Chosen Version is always kept, so the
//! result stays valid) and the re-decoded list equals the kept one, without the flag.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mote_quic::coding::Writer;
use mote_quic::transport_params::{Side, TransportParameters};

fuzz_target!(|data: &[u8]| {
    for side in [Side::Client, Side::Server] {
        let Ok(params) = TransportParameters::decode(data, side) else { continue };
        let mut buf = [0u8; 4096];
        let mut w = Writer::new(&mut buf);
        params.encode(&mut w).expect("decoded parameters fit in 4 KiB");
        let encoded = w.written();
        assert!(encoded.len() <= data.len(), "encoding drops defaults, so it never grows");
        if let Some(vi) = params.version_information.filter(|vi| vi.truncated()) {
            let again = TransportParameters::decode(encoded, side).expect("kept list is valid");
            let again_vi = again.version_information.expect("re-encoded");
            assert_eq!((again_vi.chosen, again_vi.available()), (vi.chosen, vi.available()));
        } else {
            assert_eq!(TransportParameters::decode(encoded, side), Ok(params.clone()));
        }
        // The connection-context checks and 0-RTT memory must not panic either.
        let _ = params.validate_client_cids(&data[..data.len().min(20)]);
        let _ = params.validate_server_cids(&[1; 8], &data[..data.len().min(20)], None);
        let remembered = params.remembered_for_0rtt();
        assert_eq!(remembered.max_idle_timeout, params.max_idle_timeout);
    }
});
