//! Loss recovery, congestion control, pacing and ACK bookkeeping (RFC 9002; RFC 9000 §13).
//!
//! Building blocks the connection state machine calls; none of them reads a clock, sends a
//! packet or allocates:
//!
//! | block | RFC | what it does |
//! |---|---|---|
//! | [`RttEstimator`] | 9002 §5 | latest / min / smoothed RTT and rttvar, ack-delay handling |
//! | [`SentPackets`] | 9002 §6, App. A.1 | fixed-capacity record of sent packets of one packet number space, each with a caller payload `T` |
//! | [`Recovery`] | 9002 §6, §7.6, App. A | ACK processing and validation, packet- and time-threshold loss, PTO, persistent congestion, the loss detection timer |
//! | [`CongestionController`], [`NewReno`], `Cubic` | 9002 §7, App. B; RFC 9438 | the congestion window |
//! | [`Pacer`] | 9002 §7.7 | token bucket spreading a window over the RTT |
//! | [`ReceivedPackets`], [`ReceivedRanges`] | 9000 §13.2 | received packet numbers, duplicate detection, when to send an ACK, the ranges to put in it, ECN counts |
//!
//! # Memory
//! Everything is inline; capacities are const generics chosen by the connection's profile.
//! Host sizes are pinned by the `memory_footprint` test; the `thumbv7em` column was read
//! from a release build for that target.
//!
//! | structure | host (64-bit) | thumbv7em |
//! |---|---|---|
//! | one sent-packet record (a [`SentPackets`] slot), payload `T` | 24 + `size_of::<T>()` rounded up to 8 (32 for `u32`) | 20 + `size_of::<T>()` rounded up to 8 (24 for `u32`: 32-bit packet numbers) |
//! | `SentPackets<T, N>` | N × record + 144 (136 without `ecn`) | N × record + 96 (88 without `ecn`) |
//! | `ReceivedRanges<N>` | 16 × N + 16 | 16 × N + 16 |
//! | `ReceivedPackets<N>` | 16 × N + 120 | 16 × N + 120 |
//! | [`RttEstimator`] / [`NewReno`] / [`Pacer`] / `Cubic` | 48 / 48 / 80 / 120 | 32 (32-bit estimates without `std`) / 24 (32-bit byte counts) / 80 / 120 |
//! | `Recovery<u32, NewReno, 8, 8, 32>` (device) | 2 224 | 1 584 (without `ecn`) |
//! | `Recovery<u32, NewReno, 64, 64, 1024>` (server) | 37 552 | — |
//!
//! A device profile — 8 + 8 + 32 sent records (Initial, Handshake, Application), a 4-byte
//! payload and 8 received ranges per space — is about 2.1 KiB on a Cortex-M4 (`Recovery`
//! 1.5 KiB plus three `ReceivedPackets<8>` of 184 bytes; 2.9 KiB on a host); 4
//! Initial/Handshake records and 4 ranges per space bring it to about 1.8 KiB. A server profile with 64 + 64 + 1024 records and 64
//! ranges is about 40 KiB per connection.
//!
//! # Arithmetic on the device
//! Times are `u64` microseconds. Nothing here uses floating point (the CUBIC cube root is an
//! integer root) or `core::fmt`. Divisions are listed where they happen; each goes through
//! `div_u64`, which uses the Cortex-M4's 32-bit hardware divider whenever both operands
//! fit in 32 bits. The per-packet paths (sending, ACK processing, loss detection, the
//! timers, NewReno, ACK generation) use shifts and multiplications only; in a `thumbv7em`
//! release build the only call sites of `__aeabi_uldivmod` in this module are
//! [`Pacer::update`] (once per ACK frame that changed the window or the RTT, 32-bit
//! hardware division for windows below ~50 KB) and, with the `cubic` feature, CUBIC's
//! congestion avoidance (once per acknowledged packet, 32-bit while the operands fit).

mod cc;
mod loss;
mod pacer;
mod received;
mod rtt;
mod sent;

#[cfg(test)]
mod tests;

#[cfg(feature = "cubic")]
pub use cc::Cubic;
pub use cc::{initial_window, minimum_window, CongestionController, NewReno};
pub use loss::{AckOutcome, PacketEvent, Recovery, RecoveryConfig, TimeoutAction};
pub use pacer::{Pacer, PacerConfig};
// For the connection's attack tests, which need a server.
// And for the device connection's ACK-of-ACK records.
#[cfg(any(feature = "device", all(test, feature = "server")))]
pub(crate) use received::widen;
pub use received::{
    Ecn, ReceivedPackets, ReceivedPacketsOf, ReceivedRangeList, ReceivedRanges, ReceivedRangesOf,
    ReceivedSpace, TrackedPn, MAX_TRACKED_PN,
};
pub use rtt::RttEstimator;
pub use sent::{SentPacket, SentPackets, SentRecords, SentSpace, PN_LIMIT, SKIPPED_MEMORY};

use crate::error::TransportErrorCode;
use crate::time::{Duration, Micros};

/// RFC 9002 §6.1.1: kPacketThreshold, the reordering threshold in packets.
pub const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §6.1.2 / App. A.2: kGranularity, the system timer granularity (1 ms).
pub const GRANULARITY: Duration = Duration::from_millis(1);
/// RFC 9002 §6.2.2: the initial RTT before any sample, 333 ms.
pub const DEFAULT_INITIAL_RTT: Duration = Duration::from_millis(333);
/// An initial RTT for NB-IoT / LTE-M class links (~2 s round trips), so that a client does
/// not fire PTOs and retransmit its Initial before the first answer can possibly arrive.
pub const NB_IOT_INITIAL_RTT: Duration = Duration::from_secs(2);
/// RFC 9002 §7.6.1: kPersistentCongestionThreshold.
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// RFC 9000 §18.2: the default max_ack_delay transport parameter (25 ms).
pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// A packet number space (RFC 9000 §12.3). 0-RTT and 1-RTT packets share
/// [`PnSpace::ApplicationData`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PnSpace {
    /// Initial packets.
    Initial,
    /// Handshake packets.
    Handshake,
    /// 0-RTT and 1-RTT packets.
    ApplicationData,
}

impl PnSpace {
    /// The three spaces in the order RFC 9002 walks them.
    pub const ALL: [PnSpace; 3] = [PnSpace::Initial, PnSpace::Handshake, PnSpace::ApplicationData];

    /// The space a packet of type `ty` belongs to.
    pub const fn of(ty: crate::packet::PacketType) -> Self {
        match ty {
            crate::packet::PacketType::Initial => PnSpace::Initial,
            crate::packet::PacketType::Handshake => PnSpace::Handshake,
            crate::packet::PacketType::ZeroRtt | crate::packet::PacketType::OneRtt => {
                PnSpace::ApplicationData
            }
        }
    }
}

/// Why recovery refused an input. ACK errors close the connection with [`RecoveryError::code`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecoveryError {
    /// An ACK covers a packet number above the largest one sent in its space (RFC 9000
    /// §13.1: PROTOCOL_VIOLATION).
    AckOfUnsentPacket,
    /// An ACK covers a packet number deliberately skipped to detect optimistic ACKs (RFC
    /// 9000 §21.4: PROTOCOL_VIOLATION).
    AckOfSkippedPacket,
    /// ACK ranges that are empty, inverted, overlapping or not in descending order. The
    /// wire parser never yields these; a hand-built iterator can (FRAME_ENCODING_ERROR).
    InvalidAckRanges,
    /// No free sent-packet record: the caller must not send ack-eliciting or in-flight
    /// packets in this space until ACKs or losses free some ([`SentPackets::is_full`]).
    Full,
    /// The packet number is not the space's next one ([`SentPackets::next_pn`]).
    UnexpectedPacketNumber,
    /// The packet number space is exhausted (RFC 9000 §12.3: 2^62 packets; 2^32 - 2
    /// without `std`, [`PN_LIMIT`]); the connection must close.
    PacketNumbersExhausted,
}

impl RecoveryError {
    /// The transport error to close the connection with.
    pub const fn code(self) -> TransportErrorCode {
        match self {
            Self::AckOfUnsentPacket | Self::AckOfSkippedPacket => {
                TransportErrorCode::PROTOCOL_VIOLATION
            }
            Self::InvalidAckRanges => TransportErrorCode::FRAME_ENCODING_ERROR,
            Self::Full | Self::UnexpectedPacketNumber | Self::PacketNumbersExhausted => {
                TransportErrorCode::INTERNAL_ERROR
            }
        }
    }
}

/// Decodes an ACK frame's ACK Delay field (RFC 9000 §19.3): `raw × 2^exponent` microseconds,
/// saturating. `exponent` is the peer's ack_delay_exponent (at most 20, RFC 9000 §18.2).
pub const fn decode_ack_delay(raw: u64, exponent: u8) -> Duration {
    if exponent >= 64 || raw.leading_zeros() < exponent as u32 {
        Duration::MAX
    } else {
        Duration::from_micros(raw << exponent)
    }
}

/// Encodes an ACK Delay field: microseconds shifted right by our ack_delay_exponent.
pub const fn encode_ack_delay(delay: Duration, exponent: u8) -> crate::coding::VarInt {
    let v = if exponent >= 64 { 0 } else { delay.as_micros() >> exponent };
    match crate::coding::VarInt::new(v) {
        Some(v) => v,
        None => crate::coding::VarInt::MAX,
    }
}

/// `d × 2^n`, saturating: the PTO backoff (RFC 9002 §6.2.1).
// Out of line on devices: the timer scan calls it at two places (issue 8).
#[cfg_attr(not(feature = "std"), inline(never))]
pub(crate) const fn backoff(d: Duration, n: u32) -> Duration {
    if n >= Micros::BITS || d.0.leading_zeros() < n {
        Duration::MAX
    } else {
        Duration(d.0 << n)
    }
}

/// `n / d` (`u64::MAX` when `d == 0`), with the 32-bit hardware divider when both operands
/// fit, so Cortex-M4 builds only call the 64-bit software division for values beyond
/// 2^32. Every division in this module goes through here.
pub(crate) fn div_u64(n: u64, d: u64) -> u64 {
    if d == 0 {
        return u64::MAX;
    }
    match (u32::try_from(n), u32::try_from(d)) {
        (Ok(n), Ok(d)) => u64::from(n / d),
        _ => n / d,
    }
}
