//! Connection settings and the profiles of the design brief.

use core::net::SocketAddr;

use crate::recovery::{PacerConfig, RecoveryConfig, NB_IOT_INITIAL_RTT};
use crate::stream::StreamConfig;
use crate::time::Duration;
use crate::version::Version;

/// The longest max_idle_timeout of a device (builds without `std`): 480 s. RFC 9000 §10.1:
/// the effective idle timeout is the smaller of both sides' (non-zero) values, so with ours
/// never above this (and never "none") no peer can hold a device's connection open without
/// sending for longer. This is what keeps the device's 32-bit instants, which wrap every
/// 71.6 minutes, comparable: the idle deadline (at least three PTOs, clamped to
/// [`crate::time::MAX_SPAN`], 537 s) bounds how long the caller sleeps (see `time`).
pub const DEVICE_MAX_IDLE_TIMEOUT_MS: u32 = 480_000;

/// Settings of one connection. Times that travel in transport parameters are kept in
/// milliseconds, as on the wire, so no division is needed on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// The QUIC version (the client's choice; a server answers in the client's version).
    pub version: Version,
    /// RFC 9368 compatible version negotiation (feature `v2`): a version compatible with
    /// `version` (v1 ↔ v2, RFC 9369 §4). A client lists it among its available versions; a
    /// server switches a client that lists it to it after the first Initial. `None`: no
    /// upgrade offered or made.
    pub compatible_version: Option<Version>,
    /// Length of the connection IDs this endpoint issues (0 or 4..=20; RFC 9000 §5.1).
    pub local_cid_len: usize,
    /// Largest UDP payload this endpoint sends (at least 1200, RFC 9000 §14). Without path
    /// MTU discovery this is the size of every full datagram.
    pub max_datagram_size: u16,
    /// The max_udp_payload_size transport parameter: the largest UDP payload this endpoint
    /// accepts (RFC 9000 §18.2).
    pub max_udp_payload_size: u16,
    /// max_idle_timeout in milliseconds, 0 for none (RFC 9000 §10.1). On a device at
    /// most, and for none, [`DEVICE_MAX_IDLE_TIMEOUT_MS`] ([`Self::local_idle_timeout_ms`]).
    pub idle_timeout_ms: u32,
    /// max_ack_delay in milliseconds (RFC 9000 §18.2; below 2^14).
    pub max_ack_delay_ms: u16,
    /// Ack-eliciting packets received before an ACK is sent at once (RFC 9000 §13.2.2: 2).
    pub ack_eliciting_threshold: u32,
    /// ACK ranges put in one ACK frame at most.
    pub max_ack_ranges: usize,
    /// Our flow-control and stream-count transport parameters.
    pub streams: StreamConfig,
    /// Loss recovery: initial RTT (and so the first PTO), probes per PTO, pacing.
    pub recovery: RecoveryConfig,
    /// Datagrams [`super::Connection::poll_transmit`] may put in one GSO batch (1: one
    /// datagram per call).
    pub max_gso_segments: usize,
    /// Mark packets ECT(0) and validate the peer's ECN counts (RFC 9000 §13.4). Counting
    /// received marks and reporting them is always on.
    pub ecn: bool,
    /// The largest datagram path MTU discovery probes for (feature `pmtud`, RFC 8899); the
    /// peer's max_udp_payload_size caps it too. At most `max_datagram_size`: no probing.
    pub max_pmtu: u16,
    /// Key that stateless reset tokens are derived from (HMAC-SHA-256 of the connection ID,
    /// RFC 9000 §10.3.2; feature `stateless-reset`). It must survive restarts, so that a
    /// server that lost its state can still reset connections. `None`: random tokens, and
    /// the endpoint sends no resets.
    pub stateless_reset_key: Option<[u8; 32]>,
    /// Server: an address to offer as preferred_address (RFC 9000 §9.6; feature
    /// `migration`).
    pub preferred_address: Option<SocketAddr>,
    /// RFC 9001 §6.6 AEAD limits; [`AeadLimits::SUITE`] uses the negotiated suite's.
    pub aead_limits: AeadLimits,
    /// RFC 9221 §3: the max_datagram_frame_size we offer (feature `datagram`); 0 offers no
    /// DATAGRAM frames. Received datagrams are queued up to
    /// [`super::DATAGRAM_QUEUE_BYTES`].
    pub max_datagram_frame_size: u16,
}

/// RFC 9001 §6.6: how many packets one 1-RTT key may protect (confidentiality) and how many
/// forged packets may be tried against a connection's 1-RTT keys (integrity). Zero means
/// the suite's limit: AES-GCM 2^23 / 2^52, ChaCha20-Poly1305 2^62 (kept as `u32::MAX`) /
/// 2^36. Smaller values serve tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AeadLimits {
    /// Packets per send key; a key update starts at half of it.
    pub confidentiality: u32,
    /// Failed 1-RTT decryptions over the connection; reaching it closes with
    /// AEAD_LIMIT_REACHED.
    pub integrity: u64,
}

impl AeadLimits {
    /// The negotiated suite's limits.
    pub const SUITE: Self = Self { confidentiality: 0, integrity: 0 };

    /// The confidentiality limit for `suite`.
    pub const fn confidentiality_for(&self, suite: mote_crypto::AeadAlgorithm) -> u32 {
        if self.confidentiality != 0 {
            return self.confidentiality;
        }
        match suite {
            mote_crypto::AeadAlgorithm::ChaCha20Poly1305 => u32::MAX,
            _ => 1 << 23,
        }
    }

    /// The integrity limit for `suite`.
    pub const fn integrity_for(&self, suite: mote_crypto::AeadAlgorithm) -> u64 {
        if self.integrity != 0 {
            return self.integrity;
        }
        match suite {
            mote_crypto::AeadAlgorithm::ChaCha20Poly1305 => 1 << 36,
            _ => 1 << 52,
        }
    }
}

impl ConnectionConfig {
    /// The max_idle_timeout this endpoint advertises and uses (RFC 9000 §10.1):
    /// [`Self::idle_timeout_ms`] on a host; on a device at most
    /// [`DEVICE_MAX_IDLE_TIMEOUT_MS`], which also replaces 0 (none).
    pub const fn local_idle_timeout_ms(&self) -> u32 {
        let ms = self.idle_timeout_ms;
        if cfg!(feature = "std") || (ms != 0 && ms <= DEVICE_MAX_IDLE_TIMEOUT_MS) {
            ms
        } else {
            DEVICE_MAX_IDLE_TIMEOUT_MS
        }
    }

    /// A device client on a WLAN-class link: small windows (the stream buffers bound them
    /// anyway), 30 s idle timeout, RFC 9002 recovery defaults with two probes per PTO.
    pub const fn device() -> Self {
        // RFC 9002 §6.2.4: up to two probe datagrams per PTO. One was the device's choice
        // (radio energy), but a lost or corrupted Finished then has only one retransmission
        // per PTO, and quic-go's handshakecorruption interop case times out (5 s) before
        // the third PTO when two single probes are corrupted: two per PTO cost one more
        // datagram on a loss and no code.
        let mut recovery = RecoveryConfig::new(false);
        recovery.max_ack_ranges = 16;
        Self {
            version: Version::V1,
            compatible_version: None,
            local_cid_len: 8,
            max_datagram_size: 1200,
            max_udp_payload_size: 1472,
            idle_timeout_ms: 30_000,
            max_ack_delay_ms: 25,
            ack_eliciting_threshold: 2,
            max_ack_ranges: 8,
            streams: StreamConfig {
                max_data: 16 * 1024,
                max_stream_data_bidi_local: 16 * 1024,
                max_stream_data_bidi_remote: 16 * 1024,
                max_stream_data_uni: 16 * 1024,
                // The server may open one unidirectional stream (e.g. an HTTP/3 control
                // stream); the device opens its own streams.
                max_streams_bidi: 0,
                max_streams_uni: 1,
            },
            recovery,
            max_gso_segments: 1,
            ecn: true,
            max_pmtu: 1200,
            stateless_reset_key: None,
            preferred_address: None,
            aead_limits: AeadLimits::SUITE,
            max_datagram_frame_size: 0,
        }
    }

    /// A device client on NB-IoT (~2 s RTT): the initial RTT is 2 s, so the first PTO is
    /// 2 s + 4 × 1 s = 6 s and the client does not retransmit its Initial before the
    /// server's answer can arrive (RFC 9002 §6.2.2 lets the initial RTT be configured).
    /// Idle timeout 120 s.
    pub const fn nb_iot_device() -> Self {
        let mut c = Self::device();
        c.recovery = RecoveryConfig::nb_iot_client();
        c.idle_timeout_ms = 120_000;
        c
    }

    /// A server: larger windows and stream counts, two probes per PTO, 30 s idle timeout,
    /// GSO batches of up to 10 datagrams.
    pub const fn server() -> Self {
        Self {
            version: Version::V1,
            compatible_version: None,
            local_cid_len: 8,
            max_datagram_size: 1200,
            max_udp_payload_size: 1472,
            idle_timeout_ms: 30_000,
            max_ack_delay_ms: 25,
            ack_eliciting_threshold: 2,
            max_ack_ranges: 32,
            streams: StreamConfig {
                max_data: 1 << 20,
                max_stream_data_bidi_local: 256 * 1024,
                max_stream_data_bidi_remote: 256 * 1024,
                max_stream_data_uni: 256 * 1024,
                max_streams_bidi: 100,
                max_streams_uni: 100,
            },
            recovery: RecoveryConfig::new(true),
            max_gso_segments: 10,
            ecn: true,
            max_pmtu: 1200,
            stateless_reset_key: None,
            preferred_address: None,
            aead_limits: AeadLimits::SUITE,
            max_datagram_frame_size: 0,
        }
    }

    /// This configuration with the initial RTT `rtt` (RFC 9002 §6.2.2), e.g. the NB-IoT
    /// value for a server that knows its clients sit on such links.
    pub const fn with_initial_rtt(mut self, rtt: Duration) -> Self {
        self.recovery.initial_rtt = rtt;
        self
    }

    /// A server facing NB-IoT devices: initial RTT 2 s, so its handshake flight is not
    /// retransmitted before the client's answer can arrive.
    pub const fn nb_iot_server() -> Self {
        Self::server().with_initial_rtt(NB_IOT_INITIAL_RTT)
    }

    /// Path MTU discovery up to `max` bytes (feature `pmtud`; the profiles start at 1200
    /// and do not probe, since a device's receive buffers are sized for its datagrams).
    pub const fn with_pmtud(mut self, max: u16) -> Self {
        self.max_pmtu = max;
        self
    }

    /// Pacing off (e.g. for unit tests counting packets).
    pub const fn without_pacing(mut self) -> Self {
        self.recovery.pacer = PacerConfig::OFF;
        self
    }

    /// The effective max_ack_delay.
    pub const fn max_ack_delay(&self) -> Duration {
        Duration::from_millis(self.max_ack_delay_ms as u64)
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self::device()
    }
}
