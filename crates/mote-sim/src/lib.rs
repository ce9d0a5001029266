//! A deterministic discrete-event network simulator for sans-IO endpoints.
//!
//! [`Simulator`] owns a virtual clock ([`mote_quic::Instant`], microseconds) and an event
//! queue, and connects [`Node`]s — anything with the sans-IO `handle_datagram` /
//! `poll_transmit` / `poll_timeout` / `handle_timeout` shape — through emulated links.
//! Each link direction ([`LinkConfig`]) has a rate limit with a tail-drop queue,
//! propagation delay and jitter, random and bursty ([`GilbertElliott`]) loss, reordering,
//! duplication, corruption, an MTU and outage windows ([`Blackhole`]). [`LinkProfile`]
//! holds the design brief's profiles (`nbiot`, `nbiot-nb1`, `wlan`, `lossy`). Nodes bind
//! socket addresses; a NAT mapping can give an address another external address mid-run
//! (NAT rebinding, see [`Simulator::rebind_at`]).
//!
//! Every datagram copy is recorded in a [`Trace`] with its fate and the QUIC packet types
//! it carried; [`Trace::summary`] totals them and [`Trace::write_jsonl`] exports them.
//! A run is a pure function of its seed: no wall clock, no OS randomness.
//!
//! ```
//! use mote_sim::testing::{Echo, Scripted};
//! use mote_sim::{LinkProfile, Simulator};
//! use mote_quic::Instant;
//!
//! let (dev, srv) = ("10.0.0.2:5000".parse().unwrap(), "192.0.2.1:443".parse().unwrap());
//! let mut sim = Simulator::new(7);
//! let mut client = Scripted::default();
//! client.send_at(Instant::ZERO, srv, vec![1; 1200]);
//! let c = sim.add_node(client, dev).unwrap();
//! sim.add_node(Echo::default(), srv).unwrap();
//! sim.connect(dev, srv, &"nbiot".parse::<LinkProfile>().unwrap()).unwrap();
//! sim.run_to(Instant(10_000_000)).unwrap();
//! let echoed = &sim.node::<Scripted>(c).unwrap().received[0];
//! // 1 s each way plus 1200 bytes serialized at 159 kbit/s up and 127 kbit/s down.
//! assert_eq!(echoed.at, Instant(2_000_000 + 60_378 + 75_591));
//! ```

mod addr;
mod classify;
mod error;
mod event;
mod link;
mod node;
mod profile;
#[cfg(feature = "quic")]
pub mod quic;
pub mod seed;
mod sim;
pub mod testing;
mod trace;

pub use classify::{quic_packets, Classifier, PacketKind};
pub use error::SimError;
pub use link::{
    Admission, Blackhole, Corruption, Fate, GilbertElliott, Link, LinkConfig, MAX_UDP_PAYLOAD,
};
pub use mote_quic::{Duration, Instant};
pub use node::{Ecn, Node, NodeId, RecvMeta, Transmit};
pub use profile::{LinkProfile, UnknownProfile, DEFAULT_MTU, PROFILE_NAMES};
pub use sim::{SimConfig, Simulator, Stop};
pub use trace::{DatagramRecord, Direction, DropReason, Outcome, Summary, Trace};
