//! QUIC transport parameters (RFC 9000 §7.4, §18), plus `max_datagram_frame_size`
//! (RFC 9221 §3, feature `datagram`), `version_information` (RFC 9368 §3) and
//! `grease_quic_bit` (RFC 9287 §3).
//!
//! [`TransportParameters`] is an owned, heap-free value: it can be kept after the handshake,
//! e.g. remembered with a session ticket for 0-RTT ([`TransportParameters::remembered_for_0rtt`]).
//! [`TransportParameters::decode`] enforces every rule that needs no connection context and
//! reports any violation as [`WireError::InvalidTransportParameter`] (TRANSPORT_PARAMETER_ERROR):
//!
//! - the Length of each parameter must exactly contain its value (a varint that does not
//!   fill its Length, or runs past it, is an error; so is a Length past the end);
//! - the value ranges of RFC 9000 §18.2 and RFC 9368 §4;
//! - parameters only a server may send, received from a client (RFC 9000 §18.2);
//! - duplicates of any parameter this module knows (RFC 9000 §7.4).
//!
//! Unknown parameters, including the reserved `31 * N + 27` IDs, are skipped (RFC 9000
//! §7.4.2, §18.1). They are not checked for duplicates: that would need memory proportional
//! to the input, and RFC 9000 §7.4 only says SHOULD. Decoding is a single pass with O(1)
//! state (a 32-bit mask of the known IDs seen so far).
//!
//! The checks that need connection context (RFC 9000 §7.3: `initial_source_connection_id`
//! present and equal to the peer's Source Connection ID, `original_destination_connection_id`
//! and `retry_source_connection_id` from a server) are done by
//! [`TransportParameters::validate_client_cids`] and
//! [`TransportParameters::validate_server_cids`], which the connection calls once it has the
//! peer's parameters.
//!
//! Parameters that are absent take their RFC default: those defaults are the initial values
//! of [`TransportParameters::default`], and [`TransportParameters::encode`] leaves out any
//! parameter equal to its default (so decode ∘ encode is the identity).

use crate::cid::{ConnectionId, MAX_CID_LEN};
use crate::coding::{BufferTooSmall, Reader, VarInt, Writer};
use crate::error::WireError;
use crate::version::Version;

#[cfg(feature = "resumption")]
pub(crate) mod remember;
#[cfg(feature = "resumption")]
pub use remember::remember_shortest;
#[cfg(test)]
pub(crate) mod tests;

/// Which endpoint sent a set of transport parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The client (parameters carried in the ClientHello).
    Client,
    /// The server (parameters carried in EncryptedExtensions).
    Server,
}

/// Transport parameter IDs (RFC 9000 §18.2 and the extensions this module knows).
pub mod id {
    /// RFC 9000 §18.2 (server only).
    pub const ORIGINAL_DESTINATION_CONNECTION_ID: u64 = 0x00;
    /// RFC 9000 §18.2.
    pub const MAX_IDLE_TIMEOUT: u64 = 0x01;
    /// RFC 9000 §18.2 (server only).
    pub const STATELESS_RESET_TOKEN: u64 = 0x02;
    /// RFC 9000 §18.2.
    pub const MAX_UDP_PAYLOAD_SIZE: u64 = 0x03;
    /// RFC 9000 §18.2.
    pub const INITIAL_MAX_DATA: u64 = 0x04;
    /// RFC 9000 §18.2.
    pub const INITIAL_MAX_STREAM_DATA_BIDI_LOCAL: u64 = 0x05;
    /// RFC 9000 §18.2.
    pub const INITIAL_MAX_STREAM_DATA_BIDI_REMOTE: u64 = 0x06;
    /// RFC 9000 §18.2.
    pub const INITIAL_MAX_STREAM_DATA_UNI: u64 = 0x07;
    /// RFC 9000 §18.2.
    pub const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;
    /// RFC 9000 §18.2.
    pub const INITIAL_MAX_STREAMS_UNI: u64 = 0x09;
    /// RFC 9000 §18.2.
    pub const ACK_DELAY_EXPONENT: u64 = 0x0a;
    /// RFC 9000 §18.2.
    pub const MAX_ACK_DELAY: u64 = 0x0b;
    /// RFC 9000 §18.2.
    pub const DISABLE_ACTIVE_MIGRATION: u64 = 0x0c;
    /// RFC 9000 §18.2 (server only).
    pub const PREFERRED_ADDRESS: u64 = 0x0d;
    /// RFC 9000 §18.2.
    pub const ACTIVE_CONNECTION_ID_LIMIT: u64 = 0x0e;
    /// RFC 9000 §18.2.
    pub const INITIAL_SOURCE_CONNECTION_ID: u64 = 0x0f;
    /// RFC 9000 §18.2 (server only).
    pub const RETRY_SOURCE_CONNECTION_ID: u64 = 0x10;
    /// RFC 9368 §3.
    pub const VERSION_INFORMATION: u64 = 0x11;
    /// RFC 9221 §3 (only understood with feature `datagram`).
    pub const MAX_DATAGRAM_FRAME_SIZE: u64 = 0x20;
    /// RFC 9287 §3.
    pub const GREASE_QUIC_BIT: u64 = 0x2ab2;
    /// Reported in [`crate::WireError::InvalidTransportParameter`] when a parameter's ID
    /// itself is truncated. No real ID can take this value (IDs are below 2^62).
    pub const TRUNCATED: u64 = u64::MAX;
}

/// A stateless reset token (RFC 9000 §10.3): 16 bytes.
pub type ResetToken = [u8; 16];

/// How many entries of a peer's Available Versions list [`VersionInformation`] keeps.
pub const MAX_AVAILABLE_VERSIONS: usize = 8;

/// RFC 9000 §18.2, Figure 22: the server's preferred address. Either address family may be
/// all zeros (address and port) to mean "not offered".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreferredAddress {
    /// IPv4 address, network byte order.
    pub ipv4: [u8; 4],
    /// IPv4 port.
    pub ipv4_port: u16,
    /// IPv6 address, network byte order.
    pub ipv6: [u8; 16],
    /// IPv6 port.
    pub ipv6_port: u16,
    /// Connection ID to use on the preferred address: 1 to 20 bytes (zero-length is
    /// invalid on the wire).
    pub connection_id: ConnectionId,
    /// Stateless reset token of `connection_id`.
    pub stateless_reset_token: ResetToken,
}

/// RFC 9368 §3: the `version_information` parameter, with at most
/// [`MAX_AVAILABLE_VERSIONS`] Available Versions kept.
///
/// A peer may list more: decoding never fails because of the count. Entries are recorded
/// in wire order, repeated entries are recorded once, and once the list is full an entry is
/// dropped unless this build supports it ([`Version::is_supported`]) or it is the Chosen
/// Version, in which case it replaces the last recorded version that is neither. So every version this
/// build could negotiate that the peer listed is kept, in the peer's order, which is all
/// compatible version negotiation (RFC 9368 §2.3) and downgrade validation (§4) look at.
/// [`VersionInformation::truncated`] tells whether anything was dropped.
///
/// The validity checks of RFC 9368 §4 (no zero version; a client's Chosen Version among its
/// Available Versions) are applied to the whole list while decoding, kept or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionInformation {
    /// The version the sender chose for this connection (never 0 on the wire).
    pub chosen: Version,
    // Slots at `len..` stay `Version(0)` so the derived equality is meaningful.
    available: [Version; MAX_AVAILABLE_VERSIONS],
    len: u8,
    truncated: bool,
}

impl VersionInformation {
    /// RFC 9000 §7.4.1: what a client remembers of the server's version_information for
    /// 0-RTT: the Chosen Version, the part a client processes (RFC 9368 §4; "A client need
    /// not store a transport parameter it cannot process"), not the Available Versions. So
    /// a server listing many versions does not cost its tickets their 0-RTT.
    pub fn remembered(&self) -> Self {
        Self::new(self.chosen, &[])
    }

    /// Builds version information to send. Entries beyond [`MAX_AVAILABLE_VERSIONS`] are
    /// handled as when decoding (see the type's documentation); repeated ones are kept once.
    /// A client must list `chosen` among `available` (RFC 9368 §4); neither may be 0.
    pub fn new(chosen: Version, available: &[Version]) -> Self {
        let mut vi = Self {
            chosen,
            available: [Version(0); MAX_AVAILABLE_VERSIONS],
            len: 0,
            truncated: false,
        };
        for v in available {
            vi.record(*v);
        }
        vi
    }

    /// The recorded Available Versions, in the sender's order.
    pub fn available(&self) -> &[Version] {
        self.available.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// True if the sender listed more distinct versions than were kept.
    pub const fn truncated(&self) -> bool {
        self.truncated
    }

    fn record(&mut self, v: Version) {
        if self.available().contains(&v) {
            return;
        }
        let len = usize::from(self.len);
        if let Some(slot) = self.available.get_mut(len) {
            *slot = v;
            self.len += 1;
            return;
        }
        self.truncated = true;
        // The Chosen Version is kept too, so that what we re-encode still passes RFC 9368
        // §4's "a client's Chosen Version is among its Available Versions" check.
        let chosen = self.chosen;
        let keep = |a: Version| a.is_supported() || a == chosen;
        if !keep(v) {
            return;
        }
        // Full: drop the last version worth nothing to us and append `v`, keeping order.
        // Entries are distinct and at most three are worth keeping (v1, v2, the chosen
        // one) against a larger capacity, so such a version exists; if not, `v` is dropped.
        if let Some(i) = self.available().iter().rposition(|a| !keep(*a)) {
            if let Some(tail) = self.available.get_mut(i..) {
                tail.rotate_left(1);
                if let Some(last) = tail.last_mut() {
                    *last = v;
                }
            }
        }
    }

    // RFC 9368 §3, Figure 1: Chosen Version (32), Available Versions (32) ...
    // RFC 9368 §4: a length not a multiple of 4, a zero Chosen or Available Version, or (from
    // a client) a Chosen Version missing from Available Versions is a parsing failure.
    pub(crate) fn decode(value: &[u8], sender: Side) -> Option<Self> {
        if value.is_empty() || value.len() & 3 != 0 {
            return None;
        }
        let mut r = Reader::new(value);
        let chosen = r.u32().ok().filter(|v| *v != 0)?;
        let mut vi = Self::new(Version(chosen), &[]);
        let mut listed = false;
        while !r.is_empty() {
            let v = r.u32().ok().filter(|v| *v != 0)?;
            listed |= v == chosen;
            vi.record(Version(v));
        }
        if sender == Side::Client && !listed {
            return None;
        }
        Some(vi)
    }
}

/// A full set of QUIC transport parameters, with RFC defaults for absent ones.
///
/// Fields whose parameter has a default hold that default when it was absent; fields that
/// have none are `Option`s, so "missing `initial_source_connection_id`" is `None`.
/// [`TransportParameters::encode`] writes the fields as they are: values outside the ranges
/// [`TransportParameters::decode`] accepts, or server-only parameters set on a client,
/// produce parameters the peer will reject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParameters {
    /// 0x00 (server only): the Destination Connection ID of the client's first Initial.
    pub original_destination_connection_id: Option<ConnectionId>,
    /// 0x01: idle timeout in milliseconds; 0 (the default) disables it.
    pub max_idle_timeout: VarInt,
    /// 0x02 (server only): stateless reset token of the server's handshake connection ID.
    pub stateless_reset_token: Option<ResetToken>,
    /// 0x03: largest UDP payload the sender will receive; at least 1200, default 65527.
    pub max_udp_payload_size: VarInt,
    /// 0x04: initial connection flow-control limit; default 0.
    pub initial_max_data: VarInt,
    /// 0x05: initial limit for bidirectional streams opened by the sender; default 0.
    pub initial_max_stream_data_bidi_local: VarInt,
    /// 0x06: initial limit for bidirectional streams opened by the receiver; default 0.
    pub initial_max_stream_data_bidi_remote: VarInt,
    /// 0x07: initial limit for unidirectional streams opened by the receiver; default 0.
    pub initial_max_stream_data_uni: VarInt,
    /// 0x08: bidirectional streams the receiver may open; at most 2^60, default 0.
    pub initial_max_streams_bidi: VarInt,
    /// 0x09: unidirectional streams the receiver may open; at most 2^60, default 0.
    pub initial_max_streams_uni: VarInt,
    /// 0x0a: exponent scaling the ACK Delay field; at most 20, default 3.
    pub ack_delay_exponent: u8,
    /// 0x0b: maximum ACK delay in milliseconds; below 2^14, default 25.
    pub max_ack_delay: u16,
    /// 0x0c: the sender does not support active connection migration; default false.
    pub disable_active_migration: bool,
    /// 0x0d (server only): an address to migrate to after the handshake.
    pub preferred_address: Option<PreferredAddress>,
    /// 0x0e: connection IDs the sender will store; at least 2, default 2.
    pub active_connection_id_limit: VarInt,
    /// 0x0f: the Source Connection ID of the sender's first Initial; required from both
    /// sides (RFC 9000 §7.3), so `None` after decoding means the peer omitted it.
    pub initial_source_connection_id: Option<ConnectionId>,
    /// 0x10 (server only): the Source Connection ID of the server's Retry, if it sent one.
    pub retry_source_connection_id: Option<ConnectionId>,
    /// 0x11 (RFC 9368): version negotiation information. Decoding checks its format only;
    /// comparing the Chosen Version with the packets' version and downgrade prevention
    /// (RFC 9368 §4) are the connection's job.
    pub version_information: Option<VersionInformation>,
    /// 0x20 (RFC 9221): largest DATAGRAM frame the sender will receive; 0 (the default)
    /// means DATAGRAM frames are not supported.
    #[cfg(feature = "datagram")]
    pub max_datagram_frame_size: VarInt,
    /// 0x2ab2 (RFC 9287): the sender accepts packets with the QUIC Bit cleared.
    pub grease_quic_bit: bool,
}

impl Default for TransportParameters {
    /// Every parameter absent: the RFC 9000 §18.2 defaults, and `None` where there is no
    /// default. Built field by field and out of line (issue 8): a constant would be copied
    /// with a `memcpy` of 264 bytes of flash; the few non-zero fields are smaller as code.
    #[inline(never)]
    fn default() -> Self {
        let zero = VarInt::ZERO;
        Self {
            original_destination_connection_id: None,
            max_idle_timeout: zero,
            stateless_reset_token: None,
            max_udp_payload_size: VarInt::from_u32(Self::DEFAULT_MAX_UDP_PAYLOAD_SIZE as u32),
            initial_max_data: zero,
            initial_max_stream_data_bidi_local: zero,
            initial_max_stream_data_bidi_remote: zero,
            initial_max_stream_data_uni: zero,
            initial_max_streams_bidi: zero,
            initial_max_streams_uni: zero,
            ack_delay_exponent: Self::DEFAULT_ACK_DELAY_EXPONENT,
            max_ack_delay: Self::DEFAULT_MAX_ACK_DELAY,
            disable_active_migration: false,
            preferred_address: None,
            active_connection_id_limit: VarInt::from_u32(
                Self::DEFAULT_ACTIVE_CONNECTION_ID_LIMIT as u32,
            ),
            initial_source_connection_id: None,
            retry_source_connection_id: None,
            version_information: None,
            #[cfg(feature = "datagram")]
            max_datagram_frame_size: zero,
            grease_quic_bit: false,
        }
    }
}

// RFC 9000 §18.2: a varint parameter whose value is a single varint filling its Length.
pub(crate) fn varint_value(value: &[u8]) -> Option<VarInt> {
    let mut r = Reader::new(value);
    let v = r.varint().ok()?;
    r.is_empty().then_some(v)
}

pub(crate) fn put_param(w: &mut Writer, id: u64, len: usize) -> Result<(), BufferTooSmall> {
    w.put_varint_u64(id)?;
    w.put_varint_u64(len as u64)
}

pub(crate) fn put_bytes_param(w: &mut Writer, id: u64, value: &[u8]) -> Result<(), BufferTooSmall> {
    put_param(w, id, value.len())?;
    w.put_slice(value)
}

pub(crate) fn put_varint_param(
    w: &mut Writer,
    id: u64,
    v: VarInt,
    default: u64,
) -> Result<(), BufferTooSmall> {
    if v.into_inner() == default {
        return Ok(());
    }
    put_param(w, id, v.size())?;
    w.put_varint(v)
}

fn put_flag_param(w: &mut Writer, id: u64, set: bool) -> Result<(), BufferTooSmall> {
    if set {
        put_param(w, id, 0)?;
    }
    Ok(())
}

fn put_cid_param(
    w: &mut Writer,
    id: u64,
    cid: &Option<ConnectionId>,
) -> Result<(), BufferTooSmall> {
    match cid {
        Some(cid) => put_bytes_param(w, id, cid),
        None => Ok(()),
    }
}

// RFC 9000 §7.4: bit of each known parameter in the duplicate-detection mask, or 0 for
// parameters this build does not know (skipped, duplicates allowed).
pub(crate) const fn known_bit(id: u64) -> u32 {
    match id {
        0x00..=0x11 => 1 << id,
        #[cfg(feature = "datagram")]
        id::MAX_DATAGRAM_FRAME_SIZE => 1 << 18,
        id::GREASE_QUIC_BIT => 1 << 19,
        _ => 0,
    }
}

impl TransportParameters {
    /// RFC 9000 §18.2 default for `max_udp_payload_size`.
    pub const DEFAULT_MAX_UDP_PAYLOAD_SIZE: u64 = 65527;
    /// RFC 9000 §18.2 default for `ack_delay_exponent`.
    pub const DEFAULT_ACK_DELAY_EXPONENT: u8 = 3;
    /// RFC 9000 §18.2 default for `max_ack_delay` (milliseconds).
    pub const DEFAULT_MAX_ACK_DELAY: u16 = 25;
    /// RFC 9000 §18.2 default for `active_connection_id_limit`.
    pub const DEFAULT_ACTIVE_CONNECTION_ID_LIMIT: u64 = 2;

    /// Parses the body of the `quic_transport_parameters` TLS extension sent by `sender`.
    ///
    /// Every failure is [`WireError::InvalidTransportParameter`] carrying the offending
    /// parameter's ID ([`id::TRUNCATED`] if the ID itself is cut off), i.e. a
    /// TRANSPORT_PARAMETER_ERROR. Connection-ID authentication (RFC 9000 §7.3) is left to
    /// [`Self::validate_client_cids`] / [`Self::validate_server_cids`].
    // Out of line (issue 8): inlined, it puts a second copy of the parameters in its
    // caller's frame. (The device connection decodes with its own `device::peer_params`.)
    #[inline(never)]
    pub fn decode(bytes: &[u8], sender: Side) -> Result<Self, WireError> {
        let mut params = Self::default();
        params.decode_into(bytes, sender)?;
        Ok(params)
    }

    /// [`Self::decode`] into `self`, which holds the defaults (`default()`): a device decodes
    /// the peer's parameters where it keeps them, not into a few hundred bytes of stack
    /// (issue 8). On an error `self` holds a partial decoding.
    pub fn decode_into(&mut self, bytes: &[u8], sender: Side) -> Result<(), WireError> {
        let params = self;
        let mut seen: u32 = 0;
        let mut r = Reader::new(bytes);
        // RFC 9000 §18: Transport Parameter { ID (i), Length (i), Value (..) } ...
        while !r.is_empty() {
            let id = r
                .varint()
                .map_err(|_| WireError::InvalidTransportParameter(id::TRUNCATED))?
                .into_inner();
            let bad = WireError::InvalidTransportParameter(id);
            let value = r.varint_prefixed().map_err(|_| bad)?;
            // RFC 9000 §7.4.2, §18.1: unknown and reserved parameters are ignored.
            let bit = known_bit(id);
            if bit == 0 {
                continue;
            }
            // RFC 9000 §7.4: duplicates SHOULD be a TRANSPORT_PARAMETER_ERROR.
            if seen & bit != 0 {
                return Err(bad);
            }
            seen |= bit;
            params.set(id, value, sender).ok_or(bad)?;
        }
        Ok(())
    }

    // Stores one known parameter; `None` if it is invalid. Out of line (issue 8): the
    // parameters stay one value in memory, so `decode` returns them with one copy instead
    // of storing every field of a scalarised struct (~250 B of Thumb code).
    #[inline(never)]
    fn set(&mut self, id: u64, value: &[u8], sender: Side) -> Option<()> {
        // RFC 9000 §18.2: "A client MUST NOT include any server-only transport parameter:
        // original_destination_connection_id, preferred_address, retry_source_connection_id,
        // or stateless_reset_token. A server MUST treat receipt of any of these transport
        // parameters as a connection error of type TRANSPORT_PARAMETER_ERROR."
        if sender == Side::Client
            && matches!(
                id,
                id::ORIGINAL_DESTINATION_CONNECTION_ID
                    | id::STATELESS_RESET_TOKEN
                    | id::PREFERRED_ADDRESS
                    | id::RETRY_SOURCE_CONNECTION_ID
            )
        {
            return None;
        }
        // RFC 9000 §18.2: the integer parameters are one varint filling the value, within
        // the parameter's range (issue 8: one read and range check for all of them).
        // "Values below 1200 are invalid" (max_udp_payload_size); max_streams above 2^60:
        // "the connection MUST be closed immediately with a connection error of type
        // TRANSPORT_PARAMETER_ERROR"; ack_delay_exponent: "Values above 20 are invalid";
        // max_ack_delay: "Values of 2^14 or greater are invalid"; active_connection_id_limit
        // "MUST be at least 2". RFC 9221 §3: max_datagram_frame_size is any varint.
        // The two small integers are stored through a `VarInt` scratch slot: both fit their
        // types once checked against 20 and 2^14 (issue 8: one match picks the range and the
        // field, no second dispatch on the ID).
        let mut small = VarInt::ZERO;
        let int = match id {
            id::MAX_IDLE_TIMEOUT => Some((0, u64::MAX, &mut self.max_idle_timeout)),
            id::MAX_UDP_PAYLOAD_SIZE => Some((1200, u64::MAX, &mut self.max_udp_payload_size)),
            id::INITIAL_MAX_DATA => Some((0, u64::MAX, &mut self.initial_max_data)),
            id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL => {
                Some((0, u64::MAX, &mut self.initial_max_stream_data_bidi_local))
            }
            id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE => {
                Some((0, u64::MAX, &mut self.initial_max_stream_data_bidi_remote))
            }
            id::INITIAL_MAX_STREAM_DATA_UNI => {
                Some((0, u64::MAX, &mut self.initial_max_stream_data_uni))
            }
            id::INITIAL_MAX_STREAMS_BIDI => Some((0, 1 << 60, &mut self.initial_max_streams_bidi)),
            id::INITIAL_MAX_STREAMS_UNI => Some((0, 1 << 60, &mut self.initial_max_streams_uni)),
            id::ACK_DELAY_EXPONENT | id::MAX_ACK_DELAY => {
                let hi = if id == id::ACK_DELAY_EXPONENT { 20 } else { (1 << 14) - 1 };
                Some((0, hi, &mut small))
            }
            id::ACTIVE_CONNECTION_ID_LIMIT => {
                Some((2, u64::MAX, &mut self.active_connection_id_limit))
            }
            #[cfg(feature = "datagram")]
            id::MAX_DATAGRAM_FRAME_SIZE => Some((0, u64::MAX, &mut self.max_datagram_frame_size)),
            _ => None,
        };
        if let Some((lo, hi, slot)) = int {
            let v = varint_value(value)?;
            let n = v.into_inner();
            if n < lo || n > hi {
                return None;
            }
            *slot = v;
            // Checked against 20 and 2^14 above: both fit.
            let n = small.into_inner();
            match id {
                id::ACK_DELAY_EXPONENT => self.ack_delay_exponent = n as u8,
                id::MAX_ACK_DELAY => self.max_ack_delay = n as u16,
                _ => {}
            }
            return Some(());
        }
        // RFC 9000 §18.2: the connection-ID parameters, at most 20 bytes (RFC 9000 §17.2);
        // one check and copy for the three (issue 8).
        let cid = match id {
            id::ORIGINAL_DESTINATION_CONNECTION_ID => {
                Some(&mut self.original_destination_connection_id)
            }
            id::INITIAL_SOURCE_CONNECTION_ID => Some(&mut self.initial_source_connection_id),
            id::RETRY_SOURCE_CONNECTION_ID => Some(&mut self.retry_source_connection_id),
            _ => None,
        };
        if let Some(slot) = cid {
            *slot = Some(ConnectionId::new(value)?);
            return Some(());
        }
        // RFC 9000 §18.2: the value of each other parameter.
        match id {
            // "This parameter is a sequence of 16 bytes."
            id::STATELESS_RESET_TOKEN => self.stateless_reset_token = Some(value.try_into().ok()?),
            // "This parameter is a zero-length value."
            id::DISABLE_ACTIVE_MIGRATION => {
                self.disable_active_migration = value.is_empty().then_some(true)?;
            }
            id::PREFERRED_ADDRESS => {
                self.preferred_address = Some(decode_preferred_address(value)?)
            }
            id::VERSION_INFORMATION => {
                self.version_information = Some(VersionInformation::decode(value, sender)?);
            }
            // RFC 9287 §3: "an endpoint that understands this transport parameter MUST treat
            // receipt of a non-empty value of the transport parameter as a connection error
            // of type TRANSPORT_PARAMETER_ERROR."
            id::GREASE_QUIC_BIT => self.grease_quic_bit = value.is_empty().then_some(true)?,
            // `known_bit` filters out everything else.
            _ => {}
        }
        Some(())
    }

    /// Appends the parameters, in ID order, as the body of the `quic_transport_parameters`
    /// TLS extension. Parameters equal to their default (and `None` ones) are left out.
    /// On [`BufferTooSmall`] the writer holds a partial encoding.
    ///
    /// Without the `server` feature the server-only parameters (original_destination_
    /// connection_id, stateless_reset_token, preferred_address, retry_source_connection_id)
    /// are never written: such a build only ever encodes a client's parameters (its own, and
    /// the server's remembered ones, from which [`Self::remembered_for_0rtt`] removed them),
    /// and RFC 9000 §18.2 says "A client MUST NOT include any server-only transport
    /// parameter".
    pub fn encode(&self, w: &mut Writer) -> Result<(), BufferTooSmall> {
        self.encode_parameters(w, false)
    }

    /// Encodes [`Self::remembered_for_0rtt`] of these parameters, without building that copy
    /// (a device encodes the server's parameters with its ticket this way, issue 8).
    pub fn encode_remembered_for_0rtt(&self, w: &mut Writer) -> Result<(), BufferTooSmall> {
        self.encode_parameters(w, true)
    }

    /// [`Self::encode`], or with `remembered` the parameters RFC 9000 §7.4.1 lets a client
    /// remember left out (as if at their defaults).
    fn encode_parameters(&self, w: &mut Writer, remembered: bool) -> Result<(), BufferTooSmall> {
        // RFC 9000 §7.4.1: not remembered (the server-only ones are checked by `server` builds
        // only; the others never reach a remembered encoding in client builds either).
        let forget = |p: &Option<ConnectionId>| if remembered { None } else { *p };
        #[cfg(feature = "server")]
        put_cid_param(
            w,
            id::ORIGINAL_DESTINATION_CONNECTION_ID,
            &forget(&self.original_destination_connection_id),
        )?;
        put_varint_param(w, id::MAX_IDLE_TIMEOUT, self.max_idle_timeout, 0)?;
        #[cfg(feature = "server")]
        if let (Some(token), false) = (&self.stateless_reset_token, remembered) {
            put_bytes_param(w, id::STATELESS_RESET_TOKEN, token)?;
        }
        put_varint_param(
            w,
            id::MAX_UDP_PAYLOAD_SIZE,
            self.max_udp_payload_size,
            Self::DEFAULT_MAX_UDP_PAYLOAD_SIZE,
        )?;
        put_varint_param(w, id::INITIAL_MAX_DATA, self.initial_max_data, 0)?;
        put_varint_param(
            w,
            id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
            self.initial_max_stream_data_bidi_local,
            0,
        )?;
        put_varint_param(
            w,
            id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
            self.initial_max_stream_data_bidi_remote,
            0,
        )?;
        put_varint_param(w, id::INITIAL_MAX_STREAM_DATA_UNI, self.initial_max_stream_data_uni, 0)?;
        put_varint_param(w, id::INITIAL_MAX_STREAMS_BIDI, self.initial_max_streams_bidi, 0)?;
        put_varint_param(w, id::INITIAL_MAX_STREAMS_UNI, self.initial_max_streams_uni, 0)?;
        if !remembered {
            put_varint_param(
                w,
                id::ACK_DELAY_EXPONENT,
                VarInt::from(self.ack_delay_exponent),
                Self::DEFAULT_ACK_DELAY_EXPONENT.into(),
            )?;
            put_varint_param(
                w,
                id::MAX_ACK_DELAY,
                VarInt::from(self.max_ack_delay),
                Self::DEFAULT_MAX_ACK_DELAY.into(),
            )?;
        }
        put_flag_param(w, id::DISABLE_ACTIVE_MIGRATION, self.disable_active_migration)?;
        #[cfg(feature = "server")]
        if let (Some(pa), false) = (&self.preferred_address, remembered) {
            // RFC 9000 §18.2, Figure 22: IPv4 (32), port (16), IPv6 (128), port (16),
            // CID length (8), CID (..), Stateless Reset Token (128).
            put_param(w, id::PREFERRED_ADDRESS, 41 + pa.connection_id.len())?;
            w.put_slice(&pa.ipv4)?;
            w.put_u16(pa.ipv4_port)?;
            w.put_slice(&pa.ipv6)?;
            w.put_u16(pa.ipv6_port)?;
            w.put_u8(pa.connection_id.len() as u8)?;
            w.put_slice(&pa.connection_id)?;
            w.put_slice(&pa.stateless_reset_token)?;
        }
        put_varint_param(
            w,
            id::ACTIVE_CONNECTION_ID_LIMIT,
            self.active_connection_id_limit,
            Self::DEFAULT_ACTIVE_CONNECTION_ID_LIMIT,
        )?;
        put_cid_param(
            w,
            id::INITIAL_SOURCE_CONNECTION_ID,
            &forget(&self.initial_source_connection_id),
        )?;
        #[cfg(feature = "server")]
        put_cid_param(
            w,
            id::RETRY_SOURCE_CONNECTION_ID,
            &forget(&self.retry_source_connection_id),
        )?;
        if let Some(vi) = &self.version_information {
            let vi = if remembered { vi.remembered() } else { *vi };
            // RFC 9368 §3, Figure 1.
            let available = vi.available();
            put_param(w, id::VERSION_INFORMATION, 4 + 4 * available.len())?;
            w.put_u32(vi.chosen.0)?;
            for v in available {
                w.put_u32(v.0)?;
            }
        }
        #[cfg(feature = "datagram")]
        put_varint_param(w, id::MAX_DATAGRAM_FRAME_SIZE, self.max_datagram_frame_size, 0)?;
        put_flag_param(w, id::GREASE_QUIC_BIT, self.grease_quic_bit)
    }

    /// RFC 9000 §18.1: appends a reserved (greasing) parameter with ID `31 * n + 27` and an
    /// empty value, to exercise the peer's handling of unknown parameters. The caller picks
    /// `n` at random (e.g. once per connection) and may call this before or after
    /// [`Self::encode`] on the same writer.
    pub fn encode_grease(w: &mut Writer, n: u32) -> Result<(), BufferTooSmall> {
        put_param(w, 31 * u64::from(n) + 27, 0)
    }

    /// RFC 9000 §7.3: checks a client's connection-ID parameters, given the Source
    /// Connection ID of the client's first Initial. (Server-only parameters from a client
    /// were already refused by [`Self::decode`].)
    pub fn validate_client_cids(&self, client_scid: &[u8]) -> Result<(), WireError> {
        check_cid(
            &self.initial_source_connection_id,
            Some(client_scid),
            id::INITIAL_SOURCE_CONNECTION_ID,
        )
    }

    /// RFC 9000 §7.3: checks a server's connection-ID parameters. `server_scid` is the
    /// Source Connection ID of the server's Initial, `original_dcid` the Destination
    /// Connection ID of the client's very first Initial, and `retry_scid` the Source
    /// Connection ID of the Retry the client acted on, if any. Also enforces RFC 9000 §18.2:
    /// a server using a zero-length connection ID MUST NOT send a preferred address.
    ///
    /// RFC 9000 §7.3 allows TRANSPORT_PARAMETER_ERROR for all of these, so every failure is
    /// [`WireError::InvalidTransportParameter`] with the ID of the parameter at fault.
    pub fn validate_server_cids(
        &self,
        server_scid: &[u8],
        original_dcid: &[u8],
        retry_scid: Option<&[u8]>,
    ) -> Result<(), WireError> {
        check_cid(
            &self.initial_source_connection_id,
            Some(server_scid),
            id::INITIAL_SOURCE_CONNECTION_ID,
        )?;
        check_cid(
            &self.original_destination_connection_id,
            Some(original_dcid),
            id::ORIGINAL_DESTINATION_CONNECTION_ID,
        )?;
        check_cid(&self.retry_source_connection_id, retry_scid, id::RETRY_SOURCE_CONNECTION_ID)?;
        if self.preferred_address.is_some() && server_scid.is_empty() {
            return Err(WireError::InvalidTransportParameter(id::PREFERRED_ADDRESS));
        }
        Ok(())
    }

    /// RFC 9000 §7.4.1: the server parameters a client keeps with a session ticket for
    /// 0-RTT. A client MUST NOT use remembered values of ack_delay_exponent, max_ack_delay,
    /// initial_source_connection_id, original_destination_connection_id, preferred_address,
    /// retry_source_connection_id and stateless_reset_token: they are reset to their defaults.
    pub fn remembered_for_0rtt(&self) -> Self {
        Self {
            ack_delay_exponent: Self::DEFAULT_ACK_DELAY_EXPONENT,
            max_ack_delay: Self::DEFAULT_MAX_ACK_DELAY,
            initial_source_connection_id: None,
            original_destination_connection_id: None,
            preferred_address: None,
            retry_source_connection_id: None,
            stateless_reset_token: None,
            version_information: self.version_information.as_ref().map(|v| v.remembered()),
            ..self.clone()
        }
    }
}

/// RFC 9369 §5: the QUIC version a session ticket belongs to, read from the server's
/// transport parameters remembered with it (`Ticket::server_transport_parameters`): their
/// version_information's Chosen Version, which a client checked equal to the version in use
/// (RFC 9368 §4) and a client that received no version_information writes in for a version
/// other than 1 (`connection::tls`), or else version 1 (RFC 9368 §8: a server without
/// version_information speaks version 1; RFC 9369 §4: one that supports version 2 sends
/// it). `None` if they do not decode: such a ticket is of no known version.
pub fn ticket_version(remembered: &[u8]) -> Option<Version> {
    let tp = TransportParameters::decode(remembered, Side::Server).ok()?;
    Some(tp.version_information.map_or(Version::V1, |vi| vi.chosen))
}

// RFC 9000 §7.3: a parameter must be present exactly when `expected` is, with that value.
fn check_cid(
    got: &Option<ConnectionId>,
    expected: Option<&[u8]>,
    id: u64,
) -> Result<(), WireError> {
    match (got, expected) {
        (None, None) => Ok(()),
        (Some(got), Some(expected)) if **got == *expected => Ok(()),
        _ => Err(WireError::InvalidTransportParameter(id)),
    }
}

// RFC 9000 §18.2, Figure 22. "A server MUST NOT include a zero-length connection ID in this
// transport parameter. A client MUST treat a violation of these requirements as a
// connection error of type TRANSPORT_PARAMETER_ERROR."
pub(crate) fn decode_preferred_address(value: &[u8]) -> Option<PreferredAddress> {
    // The value's length is fixed by its CID Length byte (offset 24): checked once, then
    // the fields are read at their offsets (issue 8: no reader state per field).
    let cid_len = usize::from(*value.get(24)?);
    if cid_len == 0 || cid_len > MAX_CID_LEN || value.len() != 41 + cid_len {
        return None;
    }
    let (addrs, rest) = value.split_at(25);
    let (cid, token) = rest.split_at(cid_len);
    let port = |i: usize| Some(u16::from_be_bytes(addrs.get(i..i + 2)?.try_into().ok()?));
    Some(PreferredAddress {
        ipv4: addrs.get(..4)?.try_into().ok()?,
        ipv4_port: port(4)?,
        ipv6: addrs.get(6..22)?.try_into().ok()?,
        ipv6_port: port(22)?,
        connection_id: ConnectionId::new(cid)?,
        stateless_reset_token: token.try_into().ok()?,
    })
}
