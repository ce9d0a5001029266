//! Loss detection and the loss detection timer across the three packet number spaces
//! (RFC 9002 §6, §7.6, App. A), driving a [`CongestionController`] and a [`Pacer`].

#[cfg(feature = "pacing")]
use super::pacer::Pacer;
use super::pacer::PacerConfig;
use super::sent::{LossSummary, SentPacket, SentPackets, SentRecords};
use super::{
    backoff, decode_ack_delay, CongestionController, PnSpace, RecoveryError, RttEstimator,
    DEFAULT_INITIAL_RTT, DEFAULT_MAX_ACK_DELAY,
};
use crate::frame::{Ack, EcnCounts};
use crate::time::{Duration, Instant};

/// Recovery settings, chosen by the connection's profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryConfig {
    /// Servers assume the client's address is validated for the anti-deadlock rule and
    /// stop their timer at the anti-amplification limit (RFC 9002 §6.2.2.1).
    pub is_server: bool,
    /// The RTT assumed before the first sample (RFC 9002 §6.2.2).
    pub initial_rtt: Duration,
    /// The path's maximum datagram size, for the congestion windows and pacing.
    pub max_datagram_size: u16,
    /// Probe datagrams to send when a PTO fires: 1 or 2 (RFC 9002 §6.2.4). Devices may
    /// prefer 1 (radio energy), servers 2.
    pub probe_packets: u8,
    /// How many ranges of one ACK frame are processed (at least 1). Later ranges are
    /// ignored: they acknowledge the oldest packets, which a later ACK or loss detection
    /// settles. Bounds the work per ACK to O(max_ack_ranges × log N + N).
    pub max_ack_ranges: usize,
    /// Pacing.
    pub pacer: PacerConfig,
}

impl RecoveryConfig {
    /// RFC 9002 defaults: 333 ms initial RTT, 1200-byte datagrams, 2 probes, 64 ranges,
    /// pacing at 1.25 with bursts of 4.
    pub const fn new(is_server: bool) -> Self {
        Self {
            is_server,
            initial_rtt: DEFAULT_INITIAL_RTT,
            max_datagram_size: 1200,
            probe_packets: 2,
            max_ack_ranges: 64,
            pacer: PacerConfig::DEFAULT,
        }
    }

    /// A client on a ~2 s RTT link (NB-IoT): initial RTT 2 s, two probes per PTO (as
    /// [`crate::ConnectionConfig::device`]), 16 ranges.
    pub const fn nb_iot_client() -> Self {
        let mut c = Self::new(false);
        c.initial_rtt = super::NB_IOT_INITIAL_RTT;
        c.max_ack_ranges = 16;
        c
    }
}

/// A packet leaving the tracker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketEvent<T> {
    /// Newly acknowledged: its frames are delivered.
    Acked {
        /// The packet's space.
        space: PnSpace,
        /// The record.
        packet: SentPacket<T>,
    },
    /// Declared lost (RFC 9002 §6.1): retransmit what its frames carried, if still needed.
    Lost {
        /// The packet's space.
        space: PnSpace,
        /// The record.
        packet: SentPacket<T>,
    },
    /// Dropped without a loss verdict to free a record for a PTO probe when the tracker was
    /// full; no congestion reaction. Retransmit its frames (in the probe, ideally).
    Evicted {
        /// The packet's space.
        space: PnSpace,
        /// The record.
        packet: SentPacket<T>,
    },
}

/// What [`Recovery::on_ack_received`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Packets newly acknowledged (0 for a duplicate ACK, which changes nothing).
    pub newly_acked: usize,
    /// Packets declared lost.
    pub lost: usize,
    /// Whether an RTT sample was taken.
    pub rtt_sampled: bool,
    /// Whether the peer's ECN-CE count increased.
    pub ecn_ce_increased: bool,
    /// Whether persistent congestion was established.
    pub persistent_congestion: bool,
}

/// What [`Recovery::on_timeout`] asks of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutAction {
    /// The timer had not expired (or there was nothing to do).
    None,
    /// Time-threshold loss: these packets (reported through the callback) are lost.
    PacketsLost {
        /// The space.
        space: PnSpace,
        /// How many.
        count: usize,
    },
    /// PTO (RFC 9002 §6.2.4): send `count` ack-eliciting packets in `space` regardless of
    /// the congestion window (new data, else retransmitted data, else PING). A record is
    /// free for each. `anti_deadlock`: a client with nothing in flight whose address the
    /// server may not have validated (§6.2.2.1): send a Handshake packet if it has
    /// Handshake keys, else an Initial padded to 1200 bytes.
    SendProbes {
        /// The space.
        space: PnSpace,
        /// 1 or 2.
        count: u8,
        /// The anti-deadlock case.
        anti_deadlock: bool,
    },
}

/// Everything but the per-space records, so a space and this can be borrowed together.
#[derive(Clone, Copy, Debug)]
struct Core<C> {
    config: RecoveryConfig,
    rtt: RttEstimator,
    cc: C,
    #[cfg(feature = "pacing")]
    pacer: Pacer,
    peer_max_ack_delay: Duration,
    pto_count: u32,
    first_rtt_sample: Option<Instant>,
    has_handshake_keys: bool,
    handshake_confirmed: bool,
    handshake_ack_received: bool,
    amplification_limited: bool,
    app_limited: bool,
    /// The most bytes in flight since the previous ACK frame (RFC 9002 §7.8 detection).
    peak_in_flight: u64,
    probes_pending: u8,
    /// The armed loss detection timer, with what it does when it fires (chosen when armed:
    /// every input that changes the choice re-arms it).
    timer: Option<Armed>,
}

impl<C: CongestionController> Core<C> {
    /// RFC 9002 App. B.8 `OnPacketsLost` (bytes in flight were already removed): one
    /// congestion event for the newest lost packet, then persistent congestion (§7.6.2).
    /// Called from `detect_lost` only; out of line there (inlined it cost 30 B more).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn on_packets_lost(&mut self, now: Instant, loss: &LossSummary) {
        if let Some(sent) = loss.largest_lost_in_flight_sent {
            self.cc.on_congestion_event(now, sent);
        }
        if loss.persistent_congestion {
            self.cc.on_persistent_congestion(now);
        }
    }

    /// RFC 9002 App. A.6 `PeerCompletedAddressValidation`.
    // Out of line on devices: three inlined copies (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn peer_completed_address_validation(&self) -> bool {
        self.config.is_server || self.handshake_ack_received || self.handshake_confirmed
    }

    /// Feature `pacing`: without it a device's window of a few packets leaves as a burst
    /// (RFC 9002 §7.7 paces "SHOULD"; the congestion window still limits), and the pacer's
    /// rate arithmetic — the only 64-bit division on the per-ACK path — is not built.
    fn update_pacer(&mut self) {
        #[cfg(feature = "pacing")]
        self.pacer.update(self.cc.window(), self.rtt.smoothed(), self.config.max_datagram_size);
    }
}

/// Runs `$body` with `$s` bound to the records of `$space`.
// The space's records with their capacity erased, so `$body` is compiled once for all
// three spaces (their capacities differ on a device).
macro_rules! with_space {
    ($self:ident, $space:expr, |$s:ident| $body:expr) => {{
        let $s: &mut SentRecords<T> = $self.records_mut($space).1;
        $body
    }};
}

macro_rules! with_space_ref {
    ($self:ident, $space:expr, |$s:ident| $body:expr) => {{
        let $s: &SentRecords<T> = $self.records($space);
        $body
    }};
}

/// Loss recovery for one connection (RFC 9002 App. A): sent records of the three packet
/// number spaces (`NI`, `NH`, `NA` records, payload `T`), the RTT estimator, the congestion
/// controller `C`, the pacer and the loss detection timer.
///
/// Size: `NI + NH + NA` records (see [`SentPackets`]), 3 × 144 bytes of per-space state and
/// 256 bytes of RTT, controller, pacer and flags with
/// [`super::NewReno`].
///
/// # Driving it
/// * before sending in a space: [`Recovery::is_full`] (no ack-eliciting packet if full),
///   [`Recovery::send_window`] and [`Recovery::pacing_time`] (not for probes or ACK-only
///   packets); take the number from [`Recovery::next_pn`], then
///   [`Recovery::on_packet_sent`];
/// * on an ACK frame: [`Recovery::on_ack_frame`] (or [`Recovery::on_ack_received`]);
/// * wake up at [`Recovery::loss_detection_timer`] and call [`Recovery::on_timeout`];
/// * tell it about the handshake: [`Recovery::on_handshake_keys_available`],
///   [`Recovery::on_handshake_confirmed`], [`Recovery::set_peer_max_ack_delay`],
///   [`Recovery::discard_space`], [`Recovery::set_amplification_limited`] (server), and
///   [`Recovery::set_app_limited`] when it runs out of data to send.
#[derive(Clone, Debug)]
pub struct Recovery<T, C, const NI: usize, const NH: usize, const NA: usize> {
    core: Core<C>,
    initial: SentPackets<T, NI>,
    handshake: SentPackets<T, NH>,
    data: SentPackets<T, NA>,
}

impl<T: Copy, C: CongestionController, const NI: usize, const NH: usize, const NA: usize>
    Recovery<T, C, NI, NH, NA>
{
    /// Recovery with `config` and the controller `cc` (e.g.
    /// `NewReno::new(config.max_datagram_size)`).
    pub fn new(config: RecoveryConfig, cc: C) -> Self {
        let mut recovery = core::mem::MaybeUninit::uninit();
        // SAFETY: a local slot, valid for the write; `write_new` initializes it entirely.
        #[allow(unsafe_code)]
        unsafe {
            Self::write_new(recovery.as_mut_ptr(), config, cc);
            recovery.assume_init()
        }
    }

    /// [`Recovery::new`] written to `dst` in place, one part at a time: a device building
    /// its connection in a static never holds the sent-packet tables on its stack.
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self`; what it held is not dropped.
    /// On return it is initialized.
    #[allow(unsafe_code)]
    #[inline(never)]
    pub(crate) unsafe fn write_new(dst: *mut Self, config: RecoveryConfig, cc: C) {
        let mut core = Core {
            config,
            rtt: RttEstimator::new(config.initial_rtt),
            cc,
            #[cfg(feature = "pacing")]
            pacer: Pacer::new(config.pacer),
            peer_max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            pto_count: 0,
            first_rtt_sample: None,
            has_handshake_keys: false,
            handshake_confirmed: false,
            handshake_ack_received: false,
            amplification_limited: false,
            app_limited: false,
            peak_in_flight: 0,
            probes_pending: 0,
            timer: None,
        };
        core.update_pacer();
        // SAFETY: the caller's contract; each field is written once, through its address.
        unsafe {
            core::ptr::addr_of_mut!((*dst).core).write(core);
            SentPackets::write_new(core::ptr::addr_of_mut!((*dst).initial));
            SentPackets::write_new(core::ptr::addr_of_mut!((*dst).handshake));
            SentPackets::write_new(core::ptr::addr_of_mut!((*dst).data));
        }
    }

    /// [`Recovery::write_new`] on zero-filled memory (the device connection's slot): the
    /// configuration, RTT estimator, controller, pacer and the peer's default
    /// max_ack_delay are written, the other state starts at zero (checked at compile
    /// time), and the sent-packet spaces are written as by `write_new`.
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self` and hold all-zero bytes. On
    /// return it is initialized.
    #[cfg(feature = "device")]
    #[allow(unsafe_code)]
    #[inline(never)]
    pub(crate) unsafe fn write_zeroed(dst: *mut Self, config: RecoveryConfig, cc: C) {
        use core::ptr::addr_of_mut;
        // Checked without a controller: a field's all-zero value depends on its type only.
        // The pattern names every field (no `..`), so a new field fails to build until it
        // is either written below or checked to start at zero here.
        crate::connection::init::zeroed!(Core::<()>, |z| matches!(
            z,
            Core {
                config: _,
                rtt: _,
                cc: (),
                #[cfg(feature = "pacing")]
                pacer: _,
                peer_max_ack_delay: _,
                timer: _,
                pto_count: 0,
                first_rtt_sample: None,
                has_handshake_keys: false,
                handshake_confirmed: false,
                handshake_ack_received: false,
                amplification_limited: false,
                app_limited: false,
                peak_in_flight: 0,
                probes_pending: 0,
            }
        ));
        // SAFETY: the caller's contract; each field written is written once, through its
        // address; `update_pacer` runs on the initialized core.
        unsafe {
            let core = addr_of_mut!((*dst).core);
            addr_of_mut!((*core).config).write(config);
            addr_of_mut!((*core).rtt).write(RttEstimator::new(config.initial_rtt));
            addr_of_mut!((*core).cc).write(cc);
            #[cfg(feature = "pacing")]
            addr_of_mut!((*core).pacer).write(Pacer::new(config.pacer));
            addr_of_mut!((*core).peer_max_ack_delay).write(DEFAULT_MAX_ACK_DELAY);
            // `Option<Armed>`'s None is a niche value, not zero bytes.
            addr_of_mut!((*core).timer).write(None);
            (*core).update_pacer();
            SentPackets::write_new(addr_of_mut!((*dst).initial));
            SentPackets::write_new(addr_of_mut!((*dst).handshake));
            SentPackets::write_new(addr_of_mut!((*dst).data));
        }
    }

    /// Names every field (an exhaustive pattern, never called): a new field fails to build
    /// until [`Recovery::write_new`] writes it.
    #[allow(dead_code)]
    fn all_fields(&self) {
        let Self { core: _, initial: _, handshake: _, data: _ } = self;
    }

    /// The records of `space`, capacity erased.
    // Out of line on devices: a match over the three spaces was inlined at every use, ten
    // of them (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn records(&self, space: PnSpace) -> &SentRecords<T> {
        match space {
            PnSpace::Initial => &self.initial,
            PnSpace::Handshake => &self.handshake,
            PnSpace::ApplicationData => &self.data,
        }
    }

    /// [`Self::records`], mutable, with the rest of the state borrowed alongside.
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn records_mut(&mut self, space: PnSpace) -> (&mut Core<C>, &mut SentRecords<T>) {
        let s: &mut SentRecords<T> = match space {
            PnSpace::Initial => &mut self.initial,
            PnSpace::Handshake => &mut self.handshake,
            PnSpace::ApplicationData => &mut self.data,
        };
        (&mut self.core, s)
    }

    // --- queries ---

    /// The RTT estimates.
    pub const fn rtt(&self) -> &RttEstimator {
        &self.core.rtt
    }

    /// The congestion controller.
    pub const fn congestion_controller(&self) -> &C {
        &self.core.cc
    }

    /// The congestion window in bytes.
    pub fn congestion_window(&self) -> u64 {
        self.core.cc.window()
    }

    /// Bytes in flight across all spaces.
    // Out of line: the send window, sending and ACK processing each inlined a copy (issue 8).
    #[inline(never)]
    pub fn bytes_in_flight(&self) -> u64 {
        // Inline saturation: without `std` the counts are 32-bit, so the sums never
        // saturate and compile to 32-bit adds with a carry.
        self.initial
            .bytes_in_flight()
            .saturating_add(self.handshake.bytes_in_flight())
            .saturating_add(self.data.bytes_in_flight())
    }

    /// Bytes the congestion window still allows (RFC 9002 §7). PTO probes may exceed it
    /// ([`Recovery::probes_pending`]); ACK-only packets are not limited.
    pub fn send_window(&self) -> u64 {
        self.congestion_window().saturating_sub(self.bytes_in_flight())
    }

    /// PTO probes asked for by the last timeout and not sent yet.
    pub const fn probes_pending(&self) -> u8 {
        self.core.probes_pending
    }

    /// When a packet of `bytes` may leave according to the pacer (`None`: now).
    /// Always `None` without the `pacing` feature.
    pub fn pacing_time(&self, now: Instant, bytes: u64) -> Option<Instant> {
        #[cfg(feature = "pacing")]
        return self.core.pacer.send_time(now, bytes);
        #[cfg(not(feature = "pacing"))]
        {
            let _ = (now, bytes);
            None
        }
    }

    /// The consecutive PTO count (RFC 9002 §6.2.1).
    pub const fn pto_count(&self) -> u32 {
        self.core.pto_count
    }

    /// The current PTO period without backoff, `smoothed_rtt + max(4 × rttvar,
    /// kGranularity) + max_ack_delay` (for idle timeouts, RFC 9000 §10.1).
    pub fn pto_period(&self) -> Duration {
        self.core.rtt.pto_base().saturating_add(self.core.peer_max_ack_delay)
    }

    /// Keeps the instants recovery holds for the connection's lifetime — the first RTT
    /// sample (RFC 9002 §7.6.2), the congestion controller's recovery start (App. B.5),
    /// the pacer's last refill — comparable with `now` on a device ([`Instant::age`],
    /// `time`): the connections call it for every datagram received. Nothing on a host.
    pub fn age(&mut self, now: Instant) {
        let core = &mut self.core;
        if let Some(t) = core.first_rtt_sample.as_mut() {
            t.age(now);
        }
        core.cc.age(now);
        #[cfg(feature = "pacing")]
        core.pacer.age(now);
    }

    /// When [`Recovery::on_timeout`] must be called next (RFC 9002 App. A.8).
    pub const fn loss_detection_timer(&self) -> Option<Instant> {
        match self.core.timer {
            Some(a) => Some(a.at),
            None => None,
        }
    }

    /// The next packet number of `space`.
    pub fn next_pn(&self, space: PnSpace) -> u64 {
        with_space_ref!(self, space, |s| s.next_pn())
    }

    /// Moves the next packet number of `space` to `pn`, for tests of the limit.
    #[cfg(test)]
    pub(crate) fn jump_to(&mut self, space: PnSpace, pn: u64) {
        with_space!(self, space, |s| s.jump_to(pn));
    }

    /// Whether `space` has no free record (send no ack-eliciting or in-flight packet).
    pub fn is_full(&self, space: PnSpace) -> bool {
        with_space_ref!(self, space, |s| s.is_full())
    }

    /// The largest packet number the peer acknowledged in `space`.
    pub fn largest_acked(&self, space: PnSpace) -> Option<u64> {
        with_space_ref!(self, space, |s| s.largest_acked())
    }

    /// Records of `space` awaiting acknowledgement or loss.
    pub fn in_flight_packets(&self, space: PnSpace) -> usize {
        with_space_ref!(self, space, |s| s.len())
    }

    /// The Initial records.
    pub const fn initial_packets(&self) -> &SentPackets<T, NI> {
        &self.initial
    }

    /// The Handshake records.
    pub const fn handshake_packets(&self) -> &SentPackets<T, NH> {
        &self.handshake
    }

    /// The Application Data records.
    pub const fn application_packets(&self) -> &SentPackets<T, NA> {
        &self.data
    }

    // --- inputs ---

    /// Skips the next packet number of `space` (optimistic ACK detection, RFC 9000 §21.4);
    /// see [`SentPackets::skip_pn`]. Skip e.g. one number in every 2^k packets, k drawn
    /// from the connection's RNG so the peer cannot predict it.
    pub fn skip_pn(&mut self, space: PnSpace) -> Result<u64, RecoveryError> {
        with_space!(self, space, |s| s.skip_pn())
    }

    /// RFC 9002 App. A.5 `OnPacketSent`. `packet.pn` must be [`Recovery::next_pn`]; fails
    /// with [`RecoveryError::Full`] when an ack-eliciting or in-flight packet finds no
    /// free record.
    pub fn on_packet_sent(
        &mut self,
        space: PnSpace,
        packet: SentPacket<T>,
    ) -> Result<(), RecoveryError> {
        with_space!(self, space, |s| s.on_packet_sent(packet))?;
        if !(packet.in_flight || packet.ack_eliciting) {
            return Ok(());
        }
        let now = packet.time_sent;
        let bytes = u64::from(packet.size);
        self.core.cc.on_packet_sent(now, bytes);
        #[cfg(feature = "pacing")]
        self.core.pacer.on_packet_sent(now, bytes);
        let in_flight = self.bytes_in_flight();
        self.core.peak_in_flight = self.core.peak_in_flight.max(in_flight);
        if in_flight >= self.core.cc.window() {
            // The window is used up: whatever the application said, it is not limiting.
            self.core.app_limited = false;
        }
        if packet.ack_eliciting {
            self.core.probes_pending = self.core.probes_pending.saturating_sub(1);
        }
        self.set_loss_detection_timer(now);
        Ok(())
    }

    /// The connection has nothing more to send although the window has room (RFC 9002
    /// §7.8): the window must not grow on the ACKs of what is in flight. Cleared by passing
    /// false, and automatically when a send fills the window.
    ///
    /// Independently of this flag, an ACK only grows the window if the bytes in flight
    /// reached at least half the window at some point since the previous ACK frame (the
    /// slow-start rule of Linux' `tcp_is_cwnd_limited`): a sender that trickles a packet
    /// at a time never inflates a window it does not use, even if the connection never
    /// calls this.
    pub fn set_app_limited(&mut self, limited: bool) {
        self.core.app_limited = limited;
    }

    /// The peer's max_ack_delay transport parameter (RFC 9000 §18.2; 25 ms until known).
    /// It does not re-arm the timer: only the Application Data PTO reads it, and that is
    /// not armed before confirmation (RFC 9002 §6.2.1), which comes after the peer's
    /// transport parameters.
    pub fn set_peer_max_ack_delay(&mut self, max_ack_delay: Duration) {
        self.core.peer_max_ack_delay = max_ack_delay;
    }

    /// Handshake keys are available: the anti-deadlock probe becomes a Handshake packet.
    pub fn on_handshake_keys_available(&mut self, now: Instant) {
        self.core.has_handshake_keys = true;
        self.set_loss_detection_timer(now);
    }

    /// The handshake is confirmed (RFC 9001 §4.1.2): Application Data PTOs are armed, the
    /// ack delay is clamped to max_ack_delay.
    pub fn on_handshake_confirmed(&mut self, now: Instant) {
        self.core.handshake_confirmed = true;
        self.set_loss_detection_timer(now);
    }

    /// Server: whether it is blocked by the anti-amplification limit (RFC 9000 §8.1). While
    /// blocked the loss detection timer is off (RFC 9002 §6.2.2.1).
    pub fn set_amplification_limited(&mut self, limited: bool, now: Instant) {
        self.core.amplification_limited = limited;
        self.set_loss_detection_timer(now);
    }

    /// RFC 9000 §9.4: the peer's address changed (not just its port): congestion control
    /// starts over with `cc` and the RTT estimator from the initial RTT.
    pub fn on_new_path(&mut self, cc: C, now: Instant) {
        self.core.cc = cc;
        self.core.rtt.reset();
        self.core.peak_in_flight = 0;
        self.core.update_pacer();
        self.set_loss_detection_timer(now);
    }

    /// The path MTU changed.
    pub fn set_max_datagram_size(&mut self, max_datagram_size: u16) {
        self.core.config.max_datagram_size = max_datagram_size;
        self.core.cc.set_max_datagram_size(max_datagram_size);
        self.core.update_pacer();
    }

    /// RFC 9002 §6.4 / App. A.11 `OnPacketNumberSpaceDiscarded`: the keys of `space` are
    /// gone; its packets leave bytes in flight without a congestion reaction.
    pub fn discard_space(&mut self, space: PnSpace, now: Instant) {
        with_space!(self, space, |s| s.discard());
        self.core.pto_count = 0;
        self.set_loss_detection_timer(now);
    }

    /// An ACK frame received in a packet of `space`. Its ACK Delay is decoded with
    /// `ack_delay_exponent` (the peer's transport parameter, 3 until known). See
    /// [`Recovery::on_ack_received`].
    pub fn on_ack_frame<F>(
        &mut self,
        space: PnSpace,
        ack: &Ack<'_>,
        ack_delay_exponent: u8,
        now: Instant,
        on_event: F,
    ) -> Result<AckOutcome, RecoveryError>
    where
        F: FnMut(PacketEvent<T>),
    {
        let delay = decode_ack_delay(ack.ack_delay().into_inner(), ack_delay_exponent);
        // The ranges are walked afresh from the frame for each pass (no iterator clones:
        // issue 8, the device's `AckRanges::clone` leaves the image).
        self.on_ack_ranges(space, || ack.ranges(), delay, ack.ecn(), now, on_event)
    }

    /// RFC 9002 App. A.7 `OnAckReceived`. `ranges` are inclusive `(smallest, largest)`
    /// pairs, highest first, the first holding the ACK's Largest Acknowledged
    /// ([`Ack::ranges`]); only the first [`RecoveryConfig::max_ack_ranges`] are used.
    ///
    /// First every used range is validated (RFC 9000 §13.1, §21.4): one reaching a packet
    /// number never used, or covering a skipped one, fails with a PROTOCOL_VIOLATION error
    /// and changes nothing. Then newly acknowledged packets are marked, the RTT sampled if
    /// the largest acknowledged is newly acknowledged and any newly acknowledged packet is
    /// ack-eliciting, ECN-CE reacted to, losses detected and reported (`Lost` events, then a
    /// congestion event and persistent congestion), and finally each newly acknowledged
    /// packet is reported (`Acked`) and — if it was in flight — fed to the congestion
    /// controller, after the loss reaction as in the RFC. A duplicate ACK changes nothing.
    pub fn on_ack_received<I, F>(
        &mut self,
        space: PnSpace,
        ranges: I,
        ack_delay: Duration,
        ecn: Option<EcnCounts>,
        now: Instant,
        on_event: F,
    ) -> Result<AckOutcome, RecoveryError>
    where
        I: Iterator<Item = (u64, u64)> + Clone,
        F: FnMut(PacketEvent<T>),
    {
        self.on_ack_ranges(space, || ranges.clone(), ack_delay, ecn, now, on_event)
    }

    /// [`Recovery::on_ack_received`] with the ranges as a function returning a fresh
    /// iterator for each of the passes (validate, mark, report).
    fn on_ack_ranges<I, R, F>(
        &mut self,
        space: PnSpace,
        ranges: R,
        ack_delay: Duration,
        ecn: Option<EcnCounts>,
        now: Instant,
        mut on_event: F,
    ) -> Result<AckOutcome, RecoveryError>
    where
        I: Iterator<Item = (u64, u64)>,
        R: Fn() -> I,
        F: FnMut(PacketEvent<T>),
    {
        let under_used = self.core.peak_in_flight.saturating_mul(2) < self.core.cc.window();
        let app_limited = self.core.app_limited || under_used;
        let (core, s) = self.records_mut(space);
        let outcome = on_ack_in_space(
            s,
            core,
            space,
            ranges,
            ack_delay,
            ecn,
            app_limited,
            now,
            &mut on_event,
        )?;
        self.core.peak_in_flight = self.bytes_in_flight();
        if outcome.newly_acked > 0 {
            if self.core.peer_completed_address_validation() {
                self.core.pto_count = 0;
            }
            self.set_loss_detection_timer(now);
            self.core.update_pacer();
        }
        Ok(outcome)
    }

    /// RFC 9002 App. A.9 `OnLossDetectionTimeout`, at or after
    /// [`Recovery::loss_detection_timer`]: declares time-threshold losses (reported through
    /// `on_event`), or asks for PTO probes, making room for them if the space is full
    /// (`Evicted` events). Before the timer it does nothing.
    pub fn on_timeout<F>(&mut self, now: Instant, mut on_event: F) -> TimeoutAction
    where
        F: FnMut(PacketEvent<T>),
    {
        // The space and kind were chosen when the timer was armed
        // (`set_loss_detection_timer`).
        let armed = match self.core.timer {
            Some(a) if now >= a.at => a,
            _ => return TimeoutAction::None,
        };
        let space = armed.space;
        let (core, s) = self.records_mut(space);
        let Some(anti_deadlock) = armed.probe else {
            let count = detect_lost(s, core, space, now, &mut on_event).count;
            s.settle();
            self.core.update_pacer();
            self.set_loss_detection_timer(now);
            return TimeoutAction::PacketsLost { space, count };
        };
        // RFC 9002 §6.2.2.1: no anti-deadlock probe once the peer validated our address (a
        // duplicate Handshake ACK tells without re-arming the timer).
        if anti_deadlock && core.peer_completed_address_validation() {
            self.set_loss_detection_timer(now);
            return TimeoutAction::None;
        }
        // RFC 9002 §6.2.4: one or two probes; the anti-deadlock probe (nothing ack-eliciting
        // in flight, §6.2.2.1: the space is Handshake with Handshake keys, else Initial) is
        // one packet.
        let count = if anti_deadlock { 1 } else { core.config.probe_packets.clamp(1, 2) };
        s.evict_for(usize::from(count), |packet| on_event(PacketEvent::Evicted { space, packet }));
        // RFC 9002 §6.2.1: the PTO backs off exponentially.
        self.core.pto_count = self.core.pto_count.saturating_add(1);
        self.core.probes_pending = count;
        self.set_loss_detection_timer(now);
        TimeoutAction::SendProbes { space, count, anti_deadlock }
    }

    // --- timer (RFC 9002 App. A.8) ---

    /// `SetLossDetectionTimer`: one pass over the three spaces for `GetLossTimeAndSpace`,
    /// `GetPtoTimeAndSpace` and whether anything ack-eliciting is in flight (one scan, not
    /// one per question: the device runs it after every send and ACK). The timer keeps the
    /// space and kind it was armed for, so [`Recovery::on_timeout`] does not scan again.
    #[inline(never)]
    fn set_loss_detection_timer(&mut self, now: Instant) {
        let core = &self.core;
        let base = core.rtt.pto_base();
        let mut loss: Option<Armed> = None;
        let mut pto: Option<Armed> = None;
        for space in PnSpace::ALL {
            let s = with_space_ref!(self, space, |s| s);
            if let Some(at) = s.loss_time() {
                if loss.is_none_or(|b| at < b.at) {
                    loss = Some(Armed { at, space, probe: None });
                }
            }
            // Set exactly while ack-eliciting packets are in flight.
            let Some(last) = s.time_of_last_ack_eliciting() else { continue };
            let mut d = base;
            if space == PnSpace::ApplicationData {
                // RFC 9002 §6.2.1: no Application Data PTO before confirmation.
                if !core.handshake_confirmed {
                    continue;
                }
                // App. A.8: `base × 2^pto_count + max_ack_delay × 2^pto_count`, shifted
                // once as `(base + max_ack_delay) × 2^pto_count` (the same value, saturation
                // included: either sum saturates exactly when the other does).
                d = d.saturating_add(core.peer_max_ack_delay);
            }
            let at = last + backoff(d, core.pto_count);
            if pto.is_none_or(|b| at < b.at) {
                pto = Some(Armed { at, space, probe: Some(false) });
            }
        }
        // RFC 9002 §6.2.2.1: a server blocked by the anti-amplification limit stops its
        // timer; so does an endpoint with no PTO to arm once the peer validated its address
        // (App. A.8).
        let timer = if loss.is_some() {
            loss
        } else if core.config.is_server && core.amplification_limited {
            None
        } else if pto.is_some() {
            pto
        } else if core.peer_completed_address_validation() {
            None
        } else {
            // RFC 9002 §6.2.2.1: a client whose address the server may not have validated
            // MUST arm a PTO "even if there are no packets in flight" — and so also when only
            // 0-RTT packets are, whose space has no PTO before confirmation (§6.2.1; App.
            // A.8's pseudocode leaves that case without a timer). The anti-deadlock PTO:
            // Handshake with Handshake keys, else Initial.
            let space = if core.has_handshake_keys { PnSpace::Handshake } else { PnSpace::Initial };
            Some(Armed { at: now + backoff(base, core.pto_count), space, probe: Some(true) })
        };
        self.core.timer = timer;
    }
}

/// The armed loss detection timer.
#[derive(Clone, Copy, Debug)]
struct Armed {
    /// When it fires.
    at: Instant,
    /// The space it fires for.
    space: PnSpace,
    /// `None`: time-threshold loss (RFC 9002 §6.1.2); `Some(anti_deadlock)`: a PTO (§6.2).
    probe: Option<bool>,
}

// Called from ACK processing and from the loss timer: no inlining keeps it one copy per
// callback type in the image.
#[inline(never)]
fn detect_lost<T: Copy, C: CongestionController, F: FnMut(PacketEvent<T>)>(
    sent: &mut SentRecords<T>,
    core: &mut Core<C>,
    space: PnSpace,
    now: Instant,
    on_event: &mut F,
) -> LossSummary {
    let loss = sent.detect_lost(
        now,
        core.rtt.loss_delay(),
        core.first_rtt_sample,
        core.rtt.persistent_congestion_duration(core.peer_max_ack_delay),
        |packet| on_event(PacketEvent::Lost { space, packet }),
    );
    core.on_packets_lost(now, &loss);
    loss
}

#[allow(clippy::too_many_arguments)]
fn on_ack_in_space<T: Copy, C: CongestionController, I, R, F>(
    sent: &mut SentRecords<T>,
    core: &mut Core<C>,
    space: PnSpace,
    ranges: R,
    ack_delay: Duration,
    ecn: Option<EcnCounts>,
    app_limited: bool,
    now: Instant,
    on_event: &mut F,
) -> Result<AckOutcome, RecoveryError>
where
    I: Iterator<Item = (u64, u64)>,
    R: Fn() -> I,
    F: FnMut(PacketEvent<T>),
{
    let cap = core.config.max_ack_ranges.max(1);
    let largest = sent.validate_ack(ranges(), cap)?;
    if space == PnSpace::Handshake {
        core.handshake_ack_received = true;
    }
    let mark = sent.mark_acked(largest, ranges(), cap);
    let mut outcome = AckOutcome { newly_acked: mark.newly_acked, ..AckOutcome::default() };
    if mark.newly_acked == 0 {
        return Ok(outcome);
    }
    // RFC 9002 §5.1: sample when the largest acknowledged is newly acknowledged and an
    // ack-eliciting packet was newly acknowledged.
    if let Some((pn, sent_time, _)) = mark.largest {
        if pn == largest && mark.any_ack_eliciting {
            // RFC 9002 §5.3: Initial ACKs are not delayed by the peer; ignore ack_delay.
            let delay = if space == PnSpace::Initial { Duration::ZERO } else { ack_delay };
            core.rtt.update(
                now - sent_time,
                delay,
                core.peer_max_ack_delay,
                core.handshake_confirmed,
            );
            if core.first_rtt_sample.is_none() {
                core.first_rtt_sample = Some(now);
            }
            outcome.rtt_sampled = true;
        }
    }
    // RFC 9002 App. B.7 ProcessECN. Without the `ecn` feature nothing is sent ECT, so the
    // path is never ECN-capable and a CE count is no congestion signal (RFC 9002 §7.1).
    #[cfg(not(feature = "ecn"))]
    let _ = ecn;
    #[cfg(feature = "ecn")]
    if let (Some(counts), Some((_, sent_time, _))) = (ecn, mark.largest) {
        if sent.update_ecn_ce(counts.ce.into_inner()) {
            outcome.ecn_ce_increased = true;
            core.cc.on_congestion_event(now, sent_time);
        }
    }
    let loss = detect_lost(sent, core, space, now, on_event);
    outcome.lost = loss.count;
    outcome.persistent_congestion = loss.persistent_congestion;
    // RFC 9002 App. B.5 OnPacketsAcked, after the loss reaction.
    let (cc, rtt) = (&mut core.cc, &core.rtt);
    sent.finish_acked(ranges(), cap, |packet| {
        if packet.in_flight {
            cc.on_packet_acked(now, packet.time_sent, u64::from(packet.size), rtt, app_limited);
        }
        on_event(PacketEvent::Acked { space, packet });
    });
    Ok(outcome)
}
