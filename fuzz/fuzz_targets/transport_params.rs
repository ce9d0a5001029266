//! Transport parameters (RFC 9000 §18): decoding never panics, and whatever decodes
//! re-encodes to parameters that decode to the same value (decode ∘ encode = identity),
//! except when a `version_information` Available Versions list was truncated on decode:
//! only the kept versions are re-encoded, which need not even be valid any more (a
//! client's Chosen Version may have been among the dropped ones), so that case is only
//! checked not to panic.
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
        if params.version_information.is_some_and(|vi| vi.truncated()) {
            let _ = TransportParameters::decode(encoded, side);
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
