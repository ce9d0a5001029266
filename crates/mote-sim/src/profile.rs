//! Link profiles of the design brief, shared with the userspace relay: each builds the two
//! directions of a link and can then be modified (loss, reordering, …).
//!
//! | name | down (server→device) | up (device→server) | RTT | loss |
//! |---|---|---|---|---|
//! | `nbiot` | 127 kbit/s | 159 kbit/s | 2 s | 0 |
//! | `nbiot-nb1` | 26 kbit/s | 62 kbit/s | 2 s | 0 |
//! | `wlan` | 20 Mbit/s | 20 Mbit/s | 5 ms | 0 |
//! | `lossy` | 10 Mbit/s | 10 Mbit/s | 30 ms | 2.5 % each way |
//!
//! The RTT is split evenly into the two one-way delays. Each direction's buffer holds one
//! bandwidth-delay product (rate × RTT), at least 16 full-size (1500-byte) datagrams. The MTU
//! is 1472 bytes of UDP payload (1500-byte Ethernet/PDN MTU less IPv4 and UDP headers).

use core::fmt;
use core::ops::Range;
use core::str::FromStr;

use mote_quic::{Duration, Instant};

use crate::link::{Blackhole, GilbertElliott, LinkConfig};

/// UDP payload that fits a 1500-byte IP MTU over IPv4.
pub const DEFAULT_MTU: usize = 1472;

/// The minimum buffer of a profile's link direction, in bytes.
const MIN_BUFFER: usize = 16 * 1500;

/// The names [`LinkProfile::from_str`] accepts.
pub const PROFILE_NAMES: &[&str] = &["nbiot", "nbiot-nb1", "wlan", "lossy"];

/// The two directions of a link. "Up" is device → server, "down" server → device, as in
/// [`Simulator::connect`](crate::Simulator::connect)`(device, server, &profile)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkProfile {
    /// The profile's name (`"custom"` for hand-made ones).
    pub name: String,
    /// Device → server.
    pub up: LinkConfig,
    /// Server → device.
    pub down: LinkConfig,
}

/// One direction of a profile: rate limit, one-way delay and a buffer of rate × RTT.
fn direction(rate_bps: u64, rtt: Duration, loss: f64) -> LinkConfig {
    let bdp = u128::from(rate_bps) * u128::from(rtt.as_micros()) / 8 / 1_000_000;
    LinkConfig {
        rate_bps: Some(rate_bps),
        buffer_bytes: usize::try_from(bdp).unwrap_or(usize::MAX).max(MIN_BUFFER),
        delay: Duration(rtt.as_micros() / 2),
        loss,
        mtu: DEFAULT_MTU,
        ..LinkConfig::default()
    }
}

impl LinkProfile {
    /// A profile from two hand-made directions.
    pub fn custom(up: LinkConfig, down: LinkConfig) -> Self {
        LinkProfile { name: "custom".into(), up, down }
    }

    /// The same configuration both ways.
    pub fn symmetric(config: LinkConfig) -> Self {
        LinkProfile::custom(config.clone(), config)
    }

    /// No rate limit and no loss; `rtt` split evenly between the directions.
    pub fn ideal(rtt: Duration) -> Self {
        let one_way = LinkConfig::with_delay(Duration(rtt.as_micros() / 2));
        LinkProfile { name: "ideal".into(), ..LinkProfile::symmetric(one_way) }
    }

    /// NB-IoT Cat NB2 (Saif & Matrawy, Table II): 127 kbit/s down, 159 kbit/s up, 2 s RTT.
    pub fn nbiot() -> Self {
        let rtt = Duration::from_secs(2);
        LinkProfile {
            name: "nbiot".into(),
            up: direction(159_000, rtt, 0.0),
            down: direction(127_000, rtt, 0.0),
        }
    }

    /// NB-IoT Cat NB1 peak rates: 26 kbit/s down, 62 kbit/s up, 2 s RTT.
    pub fn nbiot_nb1() -> Self {
        let rtt = Duration::from_secs(2);
        LinkProfile {
            name: "nbiot-nb1".into(),
            up: direction(62_000, rtt, 0.0),
            down: direction(26_000, rtt, 0.0),
        }
    }

    /// Same-WLAN setup (Eggert): 20 Mbit/s each way, 5 ms RTT.
    pub fn wlan() -> Self {
        let rtt = Duration::from_millis(5);
        LinkProfile {
            name: "wlan".into(),
            up: direction(20_000_000, rtt, 0.0),
            down: direction(20_000_000, rtt, 0.0),
        }
    }

    /// kQUIC's worst case: 10 Mbit/s each way, 30 ms RTT, 2.5 % random loss each way.
    pub fn lossy() -> Self {
        let rtt = Duration::from_millis(30);
        LinkProfile {
            name: "lossy".into(),
            up: direction(10_000_000, rtt, 0.025),
            down: direction(10_000_000, rtt, 0.025),
        }
    }

    /// The round-trip propagation delay (without serialization, queueing or jitter): a
    /// hint for an endpoint's initial RTT.
    pub fn rtt(&self) -> Duration {
        self.up.delay + self.down.delay
    }

    /// Applies `f` to both directions.
    pub fn map(mut self, mut f: impl FnMut(&mut LinkConfig)) -> Self {
        f(&mut self.up);
        f(&mut self.down);
        self
    }

    /// Random loss probability, both ways.
    pub fn with_loss(self, loss: f64) -> Self {
        self.map(|c| c.loss = loss)
    }

    /// Bursty loss, both ways (each direction runs its own chain).
    pub fn with_burst_loss(self, ge: GilbertElliott) -> Self {
        self.map(|c| c.burst_loss = Some(ge))
    }

    /// Caps runs of consecutive losses (random or bursty) at `datagrams`, both ways (see
    /// [`LinkConfig::max_burst`]).
    pub fn with_max_burst(self, datagrams: usize) -> Self {
        self.map(|c| c.max_burst = datagrams)
    }

    /// Jitter, both ways.
    pub fn with_jitter(self, jitter: Duration) -> Self {
        self.map(|c| c.jitter = jitter)
    }

    /// Reordering probability and the extra delay of a reordered datagram, both ways.
    pub fn with_reordering(self, probability: f64, extra_delay: Duration) -> Self {
        self.map(|c| {
            c.reorder = probability;
            c.reorder_delay = extra_delay;
        })
    }

    /// Duplication probability, both ways.
    pub fn with_duplication(self, probability: f64) -> Self {
        self.map(|c| c.duplicate = probability)
    }

    /// Corruption probability and the byte positions it may hit, both ways.
    pub fn with_corruption(self, probability: f64, positions: Range<usize>) -> Self {
        self.map(|c| {
            c.corrupt = probability;
            c.corrupt_range = positions.clone();
        })
    }

    /// MTU (largest UDP payload), both ways.
    pub fn with_mtu(self, mtu: usize) -> Self {
        self.map(|c| c.mtu = mtu)
    }

    /// Buffer size in bytes, both ways.
    pub fn with_buffer(self, bytes: usize) -> Self {
        self.map(|c| c.buffer_bytes = bytes)
    }

    /// Per-datagram lower-layer overhead in bytes (e.g. 28 for IPv4 + UDP), both ways.
    pub fn with_overhead(self, bytes: usize) -> Self {
        self.map(|c| c.overhead_bytes = bytes)
    }

    /// An outage `[start, start + length)`, both ways.
    pub fn with_blackhole(self, start: Instant, length: Duration) -> Self {
        self.map(|c| c.blackholes.push(Blackhole::new(start, length)))
    }
}

/// A profile name that [`LinkProfile::from_str`] does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown link profile {:?} (known: {})", self.0, PROFILE_NAMES.join(", "))
    }
}

impl std::error::Error for UnknownProfile {}

impl FromStr for LinkProfile {
    type Err = UnknownProfile;

    /// One of [`PROFILE_NAMES`], case-insensitive; `_` is accepted for `-`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "nbiot" => Ok(LinkProfile::nbiot()),
            "nbiot-nb1" => Ok(LinkProfile::nbiot_nb1()),
            "wlan" => Ok(LinkProfile::wlan()),
            "lossy" => Ok(LinkProfile::lossy()),
            _ => Err(UnknownProfile(s.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names() {
        for name in PROFILE_NAMES {
            let p: LinkProfile = name.parse().unwrap();
            assert_eq!(p.name, *name);
        }
        assert_eq!("NBIOT_NB1".parse::<LinkProfile>().unwrap().name, "nbiot-nb1");
        let err = "lte".parse::<LinkProfile>().unwrap_err();
        assert!(err.to_string().contains("nbiot-nb1"));
    }

    #[test]
    fn table_values() {
        let p = LinkProfile::nbiot();
        assert_eq!(p.down.rate_bps, Some(127_000));
        assert_eq!(p.up.rate_bps, Some(159_000));
        assert_eq!(p.rtt(), Duration::from_secs(2));
        assert_eq!(p.down.buffer_bytes, 31_750);
        let p = LinkProfile::nbiot_nb1();
        assert_eq!((p.down.rate_bps, p.up.rate_bps), (Some(26_000), Some(62_000)));
        assert_eq!(p.down.buffer_bytes, MIN_BUFFER);
        let p = LinkProfile::wlan();
        assert_eq!(p.rtt(), Duration::from_millis(5));
        assert_eq!(p.up.rate_bps, Some(20_000_000));
        let p = LinkProfile::lossy();
        assert_eq!(p.rtt(), Duration::from_millis(30));
        assert_eq!((p.up.loss, p.down.loss), (0.025, 0.025));
    }

    #[test]
    fn modifiers() {
        let p = LinkProfile::wlan()
            .with_loss(0.1)
            .with_reordering(0.2, Duration::from_millis(3))
            .with_mtu(1280)
            .with_blackhole(Instant(5), Duration(10));
        for c in [&p.up, &p.down] {
            assert_eq!(c.loss, 0.1);
            assert_eq!(c.reorder, 0.2);
            assert_eq!(c.mtu, 1280);
            assert!(c.blackholed(Instant(14)) && !c.blackholed(Instant(15)));
        }
    }
}
