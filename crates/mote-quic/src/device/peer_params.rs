//! The server's transport parameters as the device connection keeps them (RFC 9000 §7.4,
//! §18.2): only the integers it uses, decoded straight from the wire by [`decode`] with every
//! check of the general decoder ([`TransportParameters::decode`] and
//! [`TransportParameters::validate_server_cids`]), instead of the general struct (issue 8).
//! The TLS session reaches [`decode`] through [`DeviceHooks`], which passes every other hook
//! to the connection's [`Handshake`].

use mote_crypto::{CryptoProvider, CryptoRng};
use mote_tls::{transport_error, Error as TlsError, Level, QuicHooks, Secrets, SendBuffer};

use crate::cid::MAX_CID_LEN;
use crate::coding::Reader;
#[cfg(feature = "resumption")]
use crate::coding::Writer;
use crate::connection::tls::{Cids, Handshake};
#[cfg(feature = "resumption")]
use crate::connection::ZeroRttLimits;
use crate::transport_params::{
    decode_preferred_address, id, known_bit, varint_value, TransportParameters as Tp,
};
use crate::version::Version;
use core::num::NonZeroU32;

/// Index in [`PeerParams::ints`] of each integer parameter the device uses; the first eight
/// are [`ZeroRttLimits`]' (RFC 9000 §7.4.1).
pub(crate) const ACTIVE_CONNECTION_ID_LIMIT: usize = 0;
pub(crate) const MAX_DATA: usize = 1;
pub(crate) const BIDI_LOCAL: usize = 2;
pub(crate) const BIDI_REMOTE: usize = 3;
pub(crate) const UNI: usize = 4;
pub(crate) const STREAMS_BIDI: usize = 5;
pub(crate) const STREAMS_UNI: usize = 6;
// Set only with feature `datagram` (RFC 9221); the slot is ZeroRttLimits' either way.
#[cfg_attr(not(feature = "datagram"), allow(dead_code))]
pub(crate) const DATAGRAM: usize = 7;
pub(crate) const IDLE_TIMEOUT: usize = 8;
pub(crate) const MAX_UDP_PAYLOAD_SIZE: usize = 9;
pub(crate) const ACK_DELAY_EXPONENT: usize = 10;
pub(crate) const MAX_ACK_DELAY: usize = 11;

/// The server's integer transport parameters the device uses, by the indices above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PeerParams {
    pub(crate) ints: [u64; 12],
}

/// What [`decode`] returns besides the integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// version_information's Chosen Version (never 0, §4), for RFC 9368 §4's check.
    pub(crate) chosen: Option<NonZeroU32>,
    /// disable_active_migration and grease_quic_bit were sent, for what a ticket remembers
    /// (RFC 9000 §7.4.1). (Booleans: their spare values hold `Option<Found>`'s `None`,
    /// so it is returned in registers.)
    migration_disabled: bool,
    grease_quic_bit: bool,
}

impl PeerParams {
    /// RFC 9000 §18.2: every parameter at its default.
    pub(crate) const DEFAULT: Self = Self {
        ints: [
            Tp::DEFAULT_ACTIVE_CONNECTION_ID_LIMIT,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            Tp::DEFAULT_MAX_UDP_PAYLOAD_SIZE,
            Tp::DEFAULT_ACK_DELAY_EXPONENT as u64,
            Tp::DEFAULT_MAX_ACK_DELAY as u64,
        ],
    };

    /// The limits 0-RTT data relies on (RFC 9000 §7.4.1).
    #[cfg(feature = "resumption")]
    pub(crate) fn zero_rtt_limits(&self) -> ZeroRttLimits {
        let [a, b, c, d, e, f, g, h, ..] = self.ints;
        ZeroRttLimits::new([a, b, c, d, e, f, g, h])
    }

    /// Integer `i` (one of the indices above).
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.ints.get(i).copied().unwrap_or(0)
    }
}

/// RFC 9000 §18.2: where an integer parameter goes and its range. "Values below 1200 are
/// invalid" (max_udp_payload_size); max_streams above 2^60: "the connection MUST be closed
/// immediately with a connection error of type TRANSPORT_PARAMETER_ERROR";
/// ack_delay_exponent: "Values above 20 are invalid"; max_ack_delay: "Values of 2^14 or
/// greater are invalid"; active_connection_id_limit "MUST be at least 2". RFC 9221 §3:
/// max_datagram_frame_size is any varint.
fn int_slot(param: u64) -> Option<(usize, u64, u64)> {
    Some(match param {
        id::MAX_IDLE_TIMEOUT => (IDLE_TIMEOUT, 0, u64::MAX),
        id::MAX_UDP_PAYLOAD_SIZE => (MAX_UDP_PAYLOAD_SIZE, 1200, u64::MAX),
        id::INITIAL_MAX_DATA => (MAX_DATA, 0, u64::MAX),
        id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL => (BIDI_LOCAL, 0, u64::MAX),
        id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE => (BIDI_REMOTE, 0, u64::MAX),
        id::INITIAL_MAX_STREAM_DATA_UNI => (UNI, 0, u64::MAX),
        id::INITIAL_MAX_STREAMS_BIDI => (STREAMS_BIDI, 0, 1 << 60),
        id::INITIAL_MAX_STREAMS_UNI => (STREAMS_UNI, 0, 1 << 60),
        id::ACK_DELAY_EXPONENT => (ACK_DELAY_EXPONENT, 0, 20),
        id::MAX_ACK_DELAY => (MAX_ACK_DELAY, 0, (1 << 14) - 1),
        id::ACTIVE_CONNECTION_ID_LIMIT => (ACTIVE_CONNECTION_ID_LIMIT, 2, u64::MAX),
        #[cfg(feature = "datagram")]
        id::MAX_DATAGRAM_FRAME_SIZE => (DATAGRAM, 0, u64::MAX),
        _ => return None,
    })
}

/// Decodes the server's transport parameters `bytes` into `out` (which holds
/// [`PeerParams::DEFAULT`]) with the general decoder's checks: RFC 9000 §18 framing, §7.4
/// duplicates, §18.2 lengths and ranges, RFC 9368 §4 version_information, RFC 9287 §3
/// grease_quic_bit. With `cids` (the handshake's connection IDs), also RFC 9000 §7.3: the
/// server's initial_source_connection_id must be the Source Connection ID of its Initial,
/// original_destination_connection_id the Destination Connection ID of our first Initial,
/// and retry_source_connection_id present exactly when we acted on a Retry, equal to its
/// Source Connection ID; §18.2: no preferred_address from a server using a zero-length
/// connection ID. Without (remembered parameters) connection IDs are only checked to be at
/// most 20 bytes. Returns the version_information's Chosen Version, if any, for RFC 9368
/// §4's check, and the flags sent; `None` on any failure (a TRANSPORT_PARAMETER_ERROR).
pub(crate) fn decode(bytes: &[u8], cids: Option<&Cids>, out: &mut PeerParams) -> Option<Found> {
    let mut seen: u32 = 0;
    let mut vi = None;
    let mut r = Reader::new(bytes);
    // RFC 9000 §18: Transport Parameter { ID (i), Length (i), Value (..) } ...
    while !r.is_empty() {
        let param = r.varint_u64().ok()?;
        let value = r.varint_prefixed().ok()?;
        // RFC 9000 §7.4.2, §18.1: unknown and reserved parameters are ignored.
        let bit = known_bit(param);
        if bit == 0 {
            continue;
        }
        // RFC 9000 §7.4: duplicates SHOULD be a TRANSPORT_PARAMETER_ERROR.
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if let Some((slot, lo, hi)) = int_slot(param) {
            let n = varint_value(value)?.into_inner();
            if n < lo || n > hi {
                return None;
            }
            *out.ints.get_mut(slot)? = n;
            continue;
        }
        // RFC 9000 §18.2: the connection-ID parameters, at most 20 bytes (§17.2), and
        // (§7.3) the ones of this handshake.
        let cid = |want: fn(&Cids) -> Option<&[u8]>| match cids {
            Some(c) => want(c) == Some(value),
            None => value.len() <= MAX_CID_LEN,
        };
        let ok = match param {
            id::ORIGINAL_DESTINATION_CONNECTION_ID => cid(|c| Some(&c.original_dcid[..])),
            id::INITIAL_SOURCE_CONNECTION_ID => cid(|c| Some(&c.peer_scid[..])),
            id::RETRY_SOURCE_CONNECTION_ID => cid(|c| c.retry_scid.as_ref().map(|r| &r[..])),
            // "This parameter is a sequence of 16 bytes."
            id::STATELESS_RESET_TOKEN => value.len() == 16,
            // "This parameter is a zero-length value"; RFC 9287 §3: "an endpoint that
            // understands this transport parameter MUST treat receipt of a non-empty value
            // of the transport parameter as a connection error".
            id::DISABLE_ACTIVE_MIGRATION | id::GREASE_QUIC_BIT => value.is_empty(),
            id::PREFERRED_ADDRESS => decode_preferred_address(value).is_some(),
            id::VERSION_INFORMATION => {
                vi = Some(chosen_version(value)?);
                true
            }
            // `known_bit` filters out everything else.
            _ => true,
        };
        if !ok {
            return None;
        }
    }
    if let Some(c) = cids {
        // RFC 9000 §7.3: "An endpoint MUST treat the absence of the
        // initial_source_connection_id transport parameter from either endpoint or the
        // absence of the original_destination_connection_id transport parameter from the
        // server as a connection error"; retry_source_connection_id exactly after a Retry.
        let has = |param: u64| seen & known_bit(param) != 0;
        if !has(id::INITIAL_SOURCE_CONNECTION_ID)
            || !has(id::ORIGINAL_DESTINATION_CONNECTION_ID)
            || has(id::RETRY_SOURCE_CONNECTION_ID) != c.retry_scid.is_some()
            // RFC 9000 §18.2: "A server that chooses a zero-length connection ID MUST NOT
            // provide a preferred address."
            || (has(id::PREFERRED_ADDRESS) && c.peer_scid.is_empty())
        {
            return None;
        }
    }
    // The two flags' bits in `seen` (`known_bit`: 1 << ID, grease_quic_bit 1 << 19).
    const _: () = assert!(known_bit(id::DISABLE_ACTIVE_MIGRATION) == 1 << 12);
    const _: () = assert!(known_bit(id::GREASE_QUIC_BIT) == 1 << 19);
    Some(Found {
        chosen: vi,
        migration_disabled: seen & 1 << 12 != 0,
        grease_quic_bit: seen & 1 << 19 != 0,
    })
}

/// RFC 9000 §7.4.1: what a client remembers of the server's parameters `p` (decoded by
/// [`decode`], with `found`) for 0-RTT, written into `out` from the decoded values instead
/// of re-reading the server's bytes ([`crate::transport_params::remember_shortest`]):
/// max_idle_timeout, max_udp_payload_size, the initial flow-control and stream limits,
/// active_connection_id_limit and max_datagram_frame_size (feature `datagram`) in shortest
/// form, left out at their default; disable_active_migration and grease_quic_bit as sent;
/// version_information's Chosen Version (RFC 9368 §4: what a client processes). Not
/// remembered ("A client MUST NOT use remembered values for the following parameters"):
/// ack_delay_exponent, max_ack_delay and the connection-ID, token and address parameters.
/// In the general encoder's order: the bytes [`Tp::encode_remembered_for_0rtt`] writes.
/// Returns the length, 0 (no 0-RTT) if it does not fit.
#[cfg(feature = "resumption")]
fn remember(p: &PeerParams, found: Found, out: &mut [u8]) -> usize {
    use crate::connection::client_tp::put_int;
    use crate::transport_params::put_param;
    // (ID, what): an index above, a flag (`MIGRATION`, `GREASE`: grease_quic_bit's ID is
    // not a byte) or the Chosen Version (`VERSION`).
    const MIGRATION: u8 = 16;
    const GREASE: u8 = 17;
    const VERSION: u8 = 18;
    const ORDER: [(u8, u8); 13] = [
        (id::MAX_IDLE_TIMEOUT as u8, IDLE_TIMEOUT as u8),
        (id::MAX_UDP_PAYLOAD_SIZE as u8, MAX_UDP_PAYLOAD_SIZE as u8),
        (id::INITIAL_MAX_DATA as u8, MAX_DATA as u8),
        (id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL as u8, BIDI_LOCAL as u8),
        (id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE as u8, BIDI_REMOTE as u8),
        (id::INITIAL_MAX_STREAM_DATA_UNI as u8, UNI as u8),
        (id::INITIAL_MAX_STREAMS_BIDI as u8, STREAMS_BIDI as u8),
        (id::INITIAL_MAX_STREAMS_UNI as u8, STREAMS_UNI as u8),
        (id::DISABLE_ACTIVE_MIGRATION as u8, MIGRATION),
        (id::ACTIVE_CONNECTION_ID_LIMIT as u8, ACTIVE_CONNECTION_ID_LIMIT as u8),
        (id::VERSION_INFORMATION as u8, VERSION),
        // Without feature `datagram` the index stays 0 (its default), so nothing is written.
        (id::MAX_DATAGRAM_FRAME_SIZE as u8, DATAGRAM as u8),
        (0, GREASE),
    ];
    let mut w = Writer::new(out);
    for &(param, what) in &ORDER {
        let (param, i) = (u64::from(param), usize::from(what));
        let written = match what {
            VERSION => match found.chosen {
                Some(v) => put_param(&mut w, param, 4).and_then(|()| w.put_u32(v.get())),
                None => Ok(()),
            },
            MIGRATION if found.migration_disabled => put_param(&mut w, param, 0),
            GREASE if found.grease_quic_bit => put_param(&mut w, id::GREASE_QUIC_BIT, 0),
            MIGRATION | GREASE => Ok(()),
            _ => put_int(&mut w, param, p.get(i), PeerParams::DEFAULT.get(i) as u32),
        };
        if written.is_err() {
            return 0;
        }
    }
    w.position()
}

/// RFC 9368 §3, Figure 1: Chosen Version (32), Available Versions (32) ... RFC 9368 §4: a
/// length not a multiple of 4 or a zero version anywhere is a parsing failure. A client
/// processes only the server's Chosen Version (its Available Versions matter to a server
/// alone), so only that is returned, not the general [`VersionInformation`] list.
///
/// [`VersionInformation`]: crate::transport_params::VersionInformation
fn chosen_version(value: &[u8]) -> Option<NonZeroU32> {
    let mut words = value.chunks_exact(4);
    if !words.remainder().is_empty() || words.clone().any(|w| w == [0; 4]) {
        return None;
    }
    NonZeroU32::new(u32::from_be_bytes(words.next()?.try_into().ok()?))
}

/// The device connection's TLS hooks: the connection's [`Handshake`] for all but the
/// server's transport parameters, which [`decode`] checks and keeps in `peer`.
pub(crate) struct DeviceHooks<'a, P: CryptoProvider, C> {
    pub(crate) hs: &'a mut Handshake<P, C>,
    pub(crate) peer: &'a mut Option<PeerParams>,
}

impl<P: CryptoProvider + Clone, C: AsRef<[u8]> + AsMut<[u8]>> QuicHooks for DeviceHooks<'_, P, C> {
    fn rng(&mut self) -> &mut dyn CryptoRng {
        self.hs.rng()
    }

    fn send_buffer(&mut self, level: Level) -> SendBuffer<'_> {
        self.hs.send_buffer(level)
    }

    fn sent(&mut self, level: Level, len: usize) {
        self.hs.sent(level, len);
    }

    fn install_secrets(&mut self, s: Secrets<'_>) -> Result<(), TlsError> {
        self.hs.install_secrets(s)
    }

    // RFC 9000 §7.3, §7.4, §18: decoded, range-checked and the connection IDs
    // authenticated; any failure is TRANSPORT_PARAMETER_ERROR. Then RFC 9368 §4's version
    // check and (feature `resumption`) what a ticket remembers (RFC 9000 §7.4.1). Out of
    // line: not under the TLS message handler's frame.
    #[inline(never)]
    fn peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), TlsError> {
        let peer = self.peer.insert(PeerParams::DEFAULT);
        let Some(found) = decode(params, Some(&self.hs.cids), peer) else {
            *self.peer = None;
            return Err(TlsError::Transport(transport_error::TRANSPORT_PARAMETER_ERROR));
        };
        // No `remember_version` (RFC 9369 §5) as the general connection has: a v1-only
        // device's tickets are v1's, which remembered parameters without version_information
        // stand for.
        #[cfg(feature = "resumption")]
        {
            self.hs.remembered_tp_len = remember(peer, found, &mut self.hs.remembered_tp);
        }
        // RFC 9368 §4: "the client MUST validate that the server's Chosen Version is equal
        // to the negotiated version"; without version_information, the version must not
        // have changed (a server that switched without saying so, or an attacker making it
        // look so). The general check (`negotiate_version_information`) without its server
        // half and the Available Versions list.
        let hs = &*self.hs;
        if found.chosen.map_or(hs.original_version, |v| Version(v.get())) != hs.version {
            *self.peer = None;
            return Err(TlsError::Transport(transport_error::VERSION_NEGOTIATION_ERROR));
        }
        Ok(())
    }

    fn early_data(&mut self, accepted: bool) {
        self.hs.early_data(accepted);
    }

    fn handshake_complete(&mut self) {
        self.hs.handshake_complete();
    }

    fn new_ticket(&mut self, ticket: &mote_tls::Ticket<'_>) {
        self.hs.new_ticket(ticket);
    }

    #[cfg(feature = "keylog")]
    fn client_random(&mut self, random: &[u8; 32]) {
        self.hs.client_random(random);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::cid::ConnectionId;
    use crate::coding::Writer;
    use crate::transport_params::tests::params;
    use crate::transport_params::Side;
    use std::vec::Vec;

    /// What the general decoder and CID check make of `bytes`: the device's integers, or
    /// `None` on any failure.
    fn general(bytes: &[u8], cids: Option<&Cids>) -> Option<(PeerParams, Found)> {
        let tp = Tp::decode(bytes, Side::Server).ok()?;
        if let Some(c) = cids {
            tp.validate_server_cids(
                &c.peer_scid,
                &c.original_dcid,
                c.retry_scid.as_ref().map(|r| &r[..]),
            )
            .ok()?;
        }
        #[cfg(feature = "datagram")]
        let datagram = tp.max_datagram_frame_size.into_inner();
        #[cfg(not(feature = "datagram"))]
        let datagram = 0;
        let ints = [
            tp.active_connection_id_limit.into_inner(),
            tp.initial_max_data.into_inner(),
            tp.initial_max_stream_data_bidi_local.into_inner(),
            tp.initial_max_stream_data_bidi_remote.into_inner(),
            tp.initial_max_stream_data_uni.into_inner(),
            tp.initial_max_streams_bidi.into_inner(),
            tp.initial_max_streams_uni.into_inner(),
            datagram,
            tp.max_idle_timeout.into_inner(),
            tp.max_udp_payload_size.into_inner(),
            tp.ack_delay_exponent.into(),
            tp.max_ack_delay.into(),
        ];
        let found = Found {
            chosen: tp.version_information.and_then(|v| NonZeroU32::new(v.chosen.0)),
            migration_disabled: tp.disable_active_migration,
            grease_quic_bit: tp.grease_quic_bit,
        };
        Some((PeerParams { ints }, found))
    }

    fn device(bytes: &[u8], cids: Option<&Cids>) -> Option<(PeerParams, Found)> {
        let mut out = PeerParams::DEFAULT;
        let vi = decode(bytes, cids, &mut out)?;
        Some((out, vi))
    }

    /// `bytes` (well-formed parameters) with the parameters in reverse order.
    #[cfg(feature = "resumption")]
    fn reversed(bytes: &[u8]) -> Vec<u8> {
        let mut r = crate::coding::Reader::new(bytes);
        let mut params = Vec::new();
        while !r.is_empty() {
            let start = bytes.len() - r.remaining();
            r.varint_u64().unwrap();
            r.varint_prefixed().unwrap();
            params.push(&bytes[start..bytes.len() - r.remaining()]);
        }
        params.iter().rev().flat_map(|p| p.iter().copied()).collect()
    }

    fn cid(b: &[u8]) -> ConnectionId {
        ConnectionId::new(b).unwrap()
    }

    /// The handshake's IDs to check against: those of `tp` or, by `pick`, slightly off.
    fn cids_for(tp: &Tp, pick: u8) -> Cids {
        let odcid = tp.original_destination_connection_id.unwrap_or(cid(&[9; 8]));
        let mut c = Cids {
            local: cid(&[1; 8]),
            remote: tp.initial_source_connection_id.unwrap_or(cid(&[])),
            peer_scid: tp.initial_source_connection_id.unwrap_or(cid(&[])),
            original_dcid: odcid,
            retry_scid: tp.retry_source_connection_id,
        };
        match pick % 6 {
            1 => c.peer_scid = cid(&[0xee; 4]),
            2 => c.original_dcid = cid(&[0xee; 5]),
            3 => c.retry_scid = c.retry_scid.map_or(Some(cid(&[3; 3])), |_| None),
            4 => c.peer_scid = cid(&[]),
            _ => {}
        }
        c
    }

    proptest::proptest! {
        /// Valid server parameters (and grease), with the handshake's IDs right or off: the
        /// device decoder accepts exactly what the general decoder and CID check accept,
        /// with the same integers and version_information.
        #[test]
        fn device_decoder_matches_the_general_one(
            tp in params(Side::Server),
            grease in 0u32..1000,
            pick in 0u8..12,
        ) {
            let mut buf = [0u8; 1024];
            let mut w = Writer::new(&mut buf);
            Tp::encode_grease(&mut w, grease).unwrap();
            tp.encode(&mut w).unwrap();
            let bytes = w.written();
            let c = cids_for(&tp, pick);
            proptest::prop_assert_eq!(device(bytes, Some(&c)), general(bytes, Some(&c)));
            proptest::prop_assert_eq!(device(bytes, None), general(bytes, None));
        }

        /// RFC 9000 §7.4.1: what the device remembers of valid server parameters (sent in
        /// any order, with grease) is what the general encoder writes of the decoded
        /// parameters' remembered part, byte for byte, and `remember_shortest`'s decoded.
        #[cfg(feature = "resumption")]
        #[test]
        fn remembered_parameters_are_the_general_encoders(
            tp in params(Side::Server),
            grease in 0u32..1000,
            reverse in proptest::bool::ANY,
        ) {
            let mut buf = [0u8; 1024];
            let mut w = Writer::new(&mut buf);
            Tp::encode_grease(&mut w, grease).unwrap();
            tp.encode(&mut w).unwrap();
            let mut bytes = w.written().to_vec();
            if reverse {
                bytes = reversed(&bytes);
            }
            let (p, found) = device(&bytes, None).unwrap();
            let mut out = [0u8; crate::connection::tls::REMEMBERED_TP_MAX];
            let n = remember(&p, found, &mut out);
            let mut want = [0u8; 256];
            let mut w = Writer::new(&mut want);
            tp.remembered_for_0rtt().encode_remembered_for_0rtt(&mut w).unwrap();
            proptest::prop_assert_eq!(&out[..n], w.written());
            let mut shortest = [0u8; crate::connection::tls::REMEMBERED_TP_MAX];
            let m = crate::transport_params::remember_shortest(&bytes, &mut shortest);
            proptest::prop_assert_eq!(
                Tp::decode(&out[..n], Side::Server).unwrap(),
                Tp::decode(&shortest[..m], Side::Server).unwrap()
            );
            // Too small a buffer remembers nothing rather than part.
            if n > 0 {
                proptest::prop_assert_eq!(remember(&p, found, &mut out[..n - 1]), 0);
            }
        }

        /// The same parameters cut short, with a byte changed or repeated: same verdict.
        #[test]
        fn device_decoder_matches_the_general_one_on_damage(
            tp in params(Side::Server),
            cut in 0usize..400,
            at in 0usize..400,
            byte in proptest::num::u8::ANY,
            twice in proptest::bool::ANY,
        ) {
            let mut buf = [0u8; 1024];
            let mut w = Writer::new(&mut buf);
            tp.encode(&mut w).unwrap();
            let mut bytes: Vec<u8> = w.written().to_vec();
            if twice {
                let again = bytes.clone();
                bytes.extend_from_slice(&again[..again.len().min(at)]);
            }
            if let Some(b) = bytes.get_mut(at) {
                *b = byte;
            }
            bytes.truncate(cut.max(bytes.len() / 2));
            let c = cids_for(&tp, 0);
            proptest::prop_assert_eq!(device(&bytes, Some(&c)), general(&bytes, Some(&c)));
            proptest::prop_assert_eq!(device(&bytes, None), general(&bytes, None));
        }

        /// Arbitrary bytes: the same verdict.
        #[test]
        fn device_decoder_matches_the_general_one_on_noise(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            proptest::prop_assert_eq!(device(&bytes, None), general(&bytes, None));
        }
    }
}
