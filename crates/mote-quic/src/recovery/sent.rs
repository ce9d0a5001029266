//! Sent-packet records of one packet number space (RFC 9002 §6, App. A.1, A.7, A.10), with
//! ACK validation (RFC 9000 §13.1, §21.4).
//!
//! # Layout
//! A ring of `N` slots holding records in packet-number order. Acknowledged and lost
//! packets become tombstones (so an ACK walk and persistent congestion can still see that
//! something was acknowledged between two losses) and leave the ring from the front; when
//! the ring's span reaches `N` while some slots are tombstones, sending compacts it once
//! (O(N)). Lookups are binary searches over the span.
//!
//! Device builds (no `std`, [`EAGER`]) settle eagerly instead: the one compaction scan runs
//! at the end of each ACK, loss-timer or eviction pass, reporting the newly acknowledged
//! records as it drops them with the lost ones, so between passes the slots `0..span` hold
//! live records only (the head never moves, sending never compacts).
//!
//! Packets that are neither ack-eliciting nor in flight (ACK-only packets) need no recovery
//! and are not stored: their packet number is only counted as sent, so the sender can
//! always acknowledge even when the tracker is full.
//!
//! # Cost bounds
//! Marking an ACK costs O(R log N + k) for R ranges (capped by the caller) and k slots
//! inside them; loss detection walks the slots up to the largest acknowledged packet,
//! O(N). Nothing allocates and nothing indexes out of bounds: every access is `get`.

use super::RecoveryError;
#[cfg(feature = "std")]
use crate::packet::number::MAX_PN;
use crate::time::{Duration, Instant};

/// How many deliberately skipped packet numbers a space remembers (RFC 9000 §21.4). An ACK
/// covering one of them is an optimistic ACK. Skipping one number every few dozen packets
/// keeps every skipped number in flight within this memory.
pub const SKIPPED_MEMORY: usize = 4;

/// A packet number of ours as the records keep it: `u64` on hosts, `u32` in builds without
/// `std` (session 10: a device connection never sends 2^32 packets, and the 64-bit
/// compares and carries of the record, ACK and loss bookkeeping were about 120 bytes of a
/// Cortex-M4 client's flash; each record is 8 bytes smaller too).
#[cfg(feature = "std")]
pub(crate) type SentPn = u64;
/// A packet number of ours as the records keep it (see the `std` build's documentation).
#[cfg(not(feature = "std"))]
pub(crate) type SentPn = u32;

/// The first packet number a space cannot use: 2^62 - 1 on hosts (RFC 9000 §12.3: "A QUIC
/// endpoint MUST NOT reuse a packet number within the same packet number space in one
/// connection"; numbers run from 0 to 2^62 - 1), 2^32 - 2 without `std`, so `next_pn + 1`
/// never wraps and [`NO_PN`] is never a packet number. A space at the limit refuses to send
/// ([`RecoveryError::PacketNumbersExhausted`]) and the connection closes, as §12.3 has it at
/// 2^62 - 1: without a CONNECTION_CLOSE (it would need a packet number).
#[cfg(feature = "std")]
pub const PN_LIMIT: u64 = MAX_PN;
/// The first packet number a space cannot use (see the `std` build's documentation).
#[cfg(not(feature = "std"))]
pub const PN_LIMIT: u64 = u32::MAX as u64 - 1;

/// `pn` as stored, if below [`PN_LIMIT`].
#[allow(clippy::cast_possible_truncation, clippy::unnecessary_cast)]
const fn narrow(pn: u64) -> Option<SentPn> {
    if pn < PN_LIMIT {
        Some(pn as SentPn)
    } else {
        None
    }
}

/// A packet number of a validated ACK range: below `next_pn`, so it fits as it is.
#[allow(clippy::cast_possible_truncation, clippy::unnecessary_cast)]
const fn valid(pn: u64) -> SentPn {
    pn as SentPn
}

/// A stored packet number as a packet number.
#[allow(clippy::unnecessary_cast)]
const fn widen(pn: SentPn) -> u64 {
    pn as u64
}

/// A space's bytes in flight as kept: `u64` on hosts, `u32` without `std` (session 12: a
/// device's window is a few kilobytes; the count saturates at `u32::MAX` as at `u64::MAX` on
/// a host, and 32-bit adds and saturations are shorter on a 32-bit core).
#[cfg(feature = "std")]
type FlightBytes = u64;
/// A space's bytes in flight as kept (see the `std` build's documentation).
#[cfg(not(feature = "std"))]
type FlightBytes = u32;

/// The empty skipped-number slot: above [`PN_LIMIT`], never a packet number.
const NO_PN: SentPn = SentPn::MAX;

/// A sent packet as recorded and reported back on acknowledgement or loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket<T> {
    /// Packet number.
    pub pn: u64,
    /// When it was sent.
    pub time_sent: Instant,
    /// Bytes counted in flight (the UDP payload bytes of this packet).
    pub size: u16,
    /// Whether it carries an ack-eliciting frame (RFC 9002 §2). Ack-eliciting packets are
    /// always in flight.
    pub ack_eliciting: bool,
    /// Whether it counts towards bytes in flight (ack-eliciting, or PADDING only).
    pub in_flight: bool,
    /// The caller's payload: which frames to retransmit or forget.
    pub payload: T,
}

impl<T> SentPacket<T> {
    /// A record for packet `pn` sent at `time_sent`.
    pub const fn new(
        pn: u64,
        time_sent: Instant,
        size: u16,
        ack_eliciting: bool,
        in_flight: bool,
        payload: T,
    ) -> Self {
        Self { pn, time_sent, size, ack_eliciting, in_flight: in_flight || ack_eliciting, payload }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Awaiting acknowledgement or loss.
    Live,
    /// Acknowledged by the ACK being processed; becomes `Acked` when it is reported.
    NewlyAcked,
    Acked,
    Lost,
}

/// One record. Flattened (rather than a `SentPacket` plus state) so the fields pack into
/// 24 bytes plus the payload; the `bool`s and the enum give `Option<Slot>` a niche.
/// One record slot (unnameable outside this module).
#[derive(Clone, Copy, Debug)]
pub struct Slot<T> {
    pn: SentPn,
    time_sent: Instant,
    size: u16,
    ack_eliciting: bool,
    in_flight: bool,
    state: State,
    /// Some packet between the previous slot and this one was acknowledged and its
    /// tombstone compacted away (keeps persistent congestion detection exact).
    acked_before: bool,
    payload: T,
}

impl<T: Copy> Slot<T> {
    // Out of line on devices: three copies of the record copy were inlined (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn packet(&self) -> SentPacket<T> {
        SentPacket {
            pn: widen(self.pn),
            time_sent: self.time_sent,
            size: self.size,
            ack_eliciting: self.ack_eliciting,
            in_flight: self.in_flight,
            payload: self.payload,
        }
    }
}

/// What marking an ACK found.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckMark {
    /// Packets newly acknowledged.
    pub newly_acked: usize,
    /// The largest newly acknowledged packet: number, send time, ack-eliciting.
    pub largest: Option<(SentPn, Instant, bool)>,
    /// Whether any newly acknowledged packet was ack-eliciting.
    pub any_ack_eliciting: bool,
}

/// What a loss detection pass found.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LossSummary {
    /// Packets declared lost.
    pub count: usize,
    /// The latest send time of a lost in-flight packet (the congestion event's time).
    pub largest_lost_in_flight_sent: Option<Instant>,
    /// Two ack-eliciting packets sent after the first RTT sample were lost with nothing
    /// acknowledged between them, more than the persistent congestion duration apart.
    pub persistent_congestion: bool,
}

/// Sent packets of one packet number space, at most `N` records of 24 + `size_of::<T>()`
/// bytes (rounded up to 8), plus the space's loss-detection state.
///
/// The caller takes a packet number with [`SentPackets::next_pn`], builds and protects the
/// packet, then records it with [`SentPackets::on_packet_sent`] (usually through
/// [`super::Recovery::on_packet_sent`]). ACK processing and loss detection run through
/// [`super::Recovery`].
///
/// The capacity is erased for everything but construction: the records live in the last
/// field, so `SentPackets<T, N>` dereferences to [`SentRecords<T>`] (the same struct over a
/// slice of slots) and every method is compiled once, not once per capacity (a device's
/// Initial/Handshake and Application Data spaces have different capacities).
pub type SentPackets<T, const N: usize> = SentSpace<T, [Option<Slot<T>>; N]>;

/// How settled records leave the ring: `false` (hosts) keeps acknowledged and lost records
/// as tombstones until they reach the front or a full ring is compacted on send; `true`
/// (device builds, no `std`) removes them at the end of the ACK, loss or eviction pass that
/// settled them, by one compaction scan after a scan that reports the newly acknowledged
/// records (in ascending packet-number order rather than range by range). Between passes
/// the ring then holds live records only, so sending never compacts and tombstones are never
/// popped (issue 8: the tombstone walks leave the device image). Both modes take the same
/// decisions; `recovery::tests::eager_store_agrees_with_tombstones` drives them side by side.
pub(crate) const EAGER: bool = cfg!(not(feature = "std"));

/// [`SentPackets`] with its capacity erased: what the methods work on.
pub type SentRecords<T> = SentSpace<T, [Option<Slot<T>>]>;

/// The struct behind [`SentPackets`] and [`SentRecords`]; `S` is the slot storage.
#[derive(Clone, Debug)]
pub struct SentSpace<T, S: ?Sized, const E: bool = EAGER> {
    /// Physical index of the oldest slot.
    head: usize,
    /// Slots in use, tombstones included.
    span: usize,
    /// Live records.
    live: usize,
    next_pn: SentPn,
    largest_acked: Option<SentPn>,
    skipped: [SentPn; SKIPPED_MEMORY],
    skipped_next: u8,
    /// Acknowledged records were removed after the newest record: the next record sent
    /// starts with `acked_before` (keeps persistent congestion detection exact).
    acked_gap: bool,
    ack_eliciting_in_flight: usize,
    bytes_in_flight: FlightBytes,
    time_of_last_ack_eliciting: Option<Instant>,
    loss_time: Option<Instant>,
    /// The peer's ECN-CE count (feature `ecn`: without it nothing is marked ECT, the path
    /// is never ECN-capable and CE counts are no congestion signal, RFC 9002 §7.1).
    #[cfg(feature = "ecn")]
    ecn_ce: u64,
    _payload: core::marker::PhantomData<T>,
    /// The records (last, so the storage can be unsized).
    slots: S,
}

impl<T: Copy, const N: usize, const E: bool> Default for SentSpace<T, [Option<Slot<T>>; N], E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy, const N: usize, const E: bool> SentSpace<T, [Option<Slot<T>>; N], E> {
    /// An empty space whose first packet number is 0.
    pub const fn new() -> Self {
        Self {
            slots: [None; N],
            _payload: core::marker::PhantomData,
            head: 0,
            span: 0,
            live: 0,
            next_pn: 0,
            largest_acked: None,
            skipped: [NO_PN; SKIPPED_MEMORY],
            skipped_next: 0,
            acked_gap: false,
            ack_eliciting_in_flight: 0,
            bytes_in_flight: 0,
            time_of_last_ack_eliciting: None,
            loss_time: None,
            #[cfg(feature = "ecn")]
            ecn_ce: 0,
        }
    }
}

impl<T: Copy, const N: usize, const E: bool> SentSpace<T, [Option<Slot<T>>; N], E> {
    /// Writes an empty space (as [`SentPackets::new`]) to `dst` field by field and slot by
    /// slot: `new()` by value is a whole table on the stack before it is moved (issue 8: a
    /// device's Application Data space is ~1 KB).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self`; what it held is not dropped.
    /// On return it is initialized.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_new(dst: *mut Self) {
        // The same struct over a slice of the `N` slots: a pointer with the slice length as
        // its metadata, so the writing is compiled once for every capacity.
        let erased = core::ptr::slice_from_raw_parts_mut(dst.cast::<Option<Slot<T>>>(), N)
            as *mut SentSpace<T, [Option<Slot<T>>], E>;
        // SAFETY: the caller's contract; `erased` addresses the same memory as `dst` (an
        // unsizing cast keeps the layout), with the slot count as its length.
        unsafe { SentSpace::write_empty(erased) }
    }
    /// Names every field (an exhaustive pattern, never called): a new field fails to build
    /// until `SentRecords::write_empty` writes it.
    #[allow(dead_code)]
    fn all_fields(&self) {
        let Self {
            head: _,
            span: _,
            live: _,
            next_pn: _,
            largest_acked: _,
            skipped: _,
            skipped_next: _,
            acked_gap: _,
            ack_eliciting_in_flight: _,
            bytes_in_flight: _,
            time_of_last_ack_eliciting: _,
            loss_time: _,
            #[cfg(feature = "ecn")]
                ecn_ce: _,
            _payload: _,
            slots: _,
        } = self;
    }
}

impl<T: Copy, const N: usize, const E: bool> core::ops::Deref
    for SentSpace<T, [Option<Slot<T>>; N], E>
{
    type Target = SentSpace<T, [Option<Slot<T>>], E>;

    fn deref(&self) -> &Self::Target {
        self
    }
}

impl<T: Copy, const N: usize, const E: bool> core::ops::DerefMut
    for SentSpace<T, [Option<Slot<T>>; N], E>
{
    fn deref_mut(&mut self) -> &mut Self::Target {
        self
    }
}

impl<T: Copy, const E: bool> SentSpace<T, [Option<Slot<T>>], E> {
    /// Writes an empty space (as [`SentPackets::new`]) to `dst` field by field and slot by
    /// slot: `new()` by value is a whole table on the stack before it is moved (issue 8: a
    /// device's Application Data space is ~1 KB). Capacity-erased: one copy in the image.
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of the struct with as many slots as its
    /// metadata says; what it held is not dropped. On return it is initialized.
    #[allow(unsafe_code)]
    #[inline(never)]
    unsafe fn write_empty(dst: *mut Self) {
        use core::ptr::addr_of_mut;
        // SAFETY: the caller's contract; each field is written once, through its address,
        // and each slot of the slice once, through the slice's address.
        unsafe {
            addr_of_mut!((*dst).head).write(0);
            addr_of_mut!((*dst).span).write(0);
            addr_of_mut!((*dst).live).write(0);
            addr_of_mut!((*dst).next_pn).write(0);
            addr_of_mut!((*dst).largest_acked).write(None);
            addr_of_mut!((*dst).skipped).write([NO_PN; SKIPPED_MEMORY]);
            addr_of_mut!((*dst).skipped_next).write(0);
            addr_of_mut!((*dst).acked_gap).write(false);
            addr_of_mut!((*dst).ack_eliciting_in_flight).write(0);
            addr_of_mut!((*dst).bytes_in_flight).write(0);
            addr_of_mut!((*dst).time_of_last_ack_eliciting).write(None);
            addr_of_mut!((*dst).loss_time).write(None);
            #[cfg(feature = "ecn")]
            addr_of_mut!((*dst).ecn_ce).write(0);
            addr_of_mut!((*dst)._payload).write(core::marker::PhantomData);
            let slots = addr_of_mut!((*dst).slots);
            let first = slots.cast::<Option<Slot<T>>>();
            for i in 0..slots.len() {
                first.add(i).write(None);
            }
        }
    }

    /// The record capacity.
    pub const fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The packet number the next packet of this space must use.
    pub const fn next_pn(&self) -> u64 {
        widen(self.next_pn)
    }

    /// Moves the next packet number to `pn` (below [`PN_LIMIT`]), for tests of the limit.
    #[cfg(test)]
    pub(crate) fn jump_to(&mut self, pn: u64) {
        self.next_pn = narrow(pn).unwrap_or(self.next_pn);
    }

    /// Skips the next packet number (RFC 9000 §21.4) and returns it: it is never sent, so an
    /// ACK covering it is an optimistic ACK ([`RecoveryError::AckOfSkippedPacket`]). The
    /// last [`SKIPPED_MEMORY`] skipped numbers are remembered. A skip also makes the peer
    /// acknowledge the next packet immediately (RFC 9002 §6.2.4), which a PTO probe can use.
    pub fn skip_pn(&mut self) -> Result<u64, RecoveryError> {
        let pn = self.next_pn;
        if widen(pn) >= PN_LIMIT {
            return Err(RecoveryError::PacketNumbersExhausted);
        }
        if let Some(s) = self.skipped.get_mut(usize::from(self.skipped_next)) {
            *s = pn;
        }
        self.skipped_next = (self.skipped_next + 1) % SKIPPED_MEMORY as u8;
        self.next_pn = pn + 1;
        Ok(widen(pn))
    }

    /// Whether `pn` is one of the remembered skipped packet numbers.
    pub fn is_skipped(&self, pn: u64) -> bool {
        narrow(pn).is_some_and(|pn| self.skipped.contains(&pn))
    }

    /// True when no record is free: the connection must not send ack-eliciting or in-flight
    /// packets in this space (ACK-only packets are fine) until an ACK or a loss frees one.
    /// A PTO makes room for its probes itself (see [`super::Recovery::on_timeout`]).
    pub const fn is_full(&self) -> bool {
        self.live >= self.slots.len()
    }

    /// Records awaiting acknowledgement or loss.
    pub const fn len(&self) -> usize {
        self.live
    }

    /// Whether no packet awaits acknowledgement or loss.
    pub const fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The largest packet number the peer acknowledged in this space.
    pub const fn largest_acked(&self) -> Option<u64> {
        match self.largest_acked {
            Some(l) => Some(widen(l)),
            None => None,
        }
    }

    /// The largest packet number used (sent or skipped).
    pub const fn largest_sent(&self) -> Option<u64> {
        widen(self.next_pn).checked_sub(1)
    }

    /// Bytes of this space's packets in flight.
    #[allow(clippy::unnecessary_cast)]
    pub const fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight as u64
    }

    /// Ack-eliciting packets of this space in flight.
    pub const fn ack_eliciting_in_flight(&self) -> usize {
        self.ack_eliciting_in_flight
    }

    /// When the last ack-eliciting packet was sent (`None` once none is in flight).
    pub const fn time_of_last_ack_eliciting(&self) -> Option<Instant> {
        self.time_of_last_ack_eliciting
    }

    /// The time-threshold loss timer of this space (RFC 9002 §6.1.2).
    pub const fn loss_time(&self) -> Option<Instant> {
        self.loss_time
    }

    /// Records a sent packet. `packet.pn` must be [`SentPackets::next_pn`]. Packets that are
    /// neither ack-eliciting nor in flight only advance the packet number.
    pub fn on_packet_sent(&mut self, packet: SentPacket<T>) -> Result<(), RecoveryError> {
        if packet.pn != widen(self.next_pn) {
            return Err(RecoveryError::UnexpectedPacketNumber);
        }
        if packet.pn >= PN_LIMIT {
            return Err(RecoveryError::PacketNumbersExhausted);
        }
        let in_flight = packet.in_flight || packet.ack_eliciting;
        if !in_flight {
            self.next_pn += 1;
            return Ok(());
        }
        if self.live >= self.slots.len() {
            return Err(RecoveryError::Full);
        }
        // Eagerly settled rings hold live records only here (`span == live`).
        if !E && self.span >= self.slots.len() {
            self.compact();
        }
        let idx = self.phys(self.span);
        let Some(slot) = self.slots.get_mut(idx) else {
            return Err(RecoveryError::Full);
        };
        *slot = Some(Slot {
            pn: self.next_pn,
            time_sent: packet.time_sent,
            size: packet.size,
            ack_eliciting: packet.ack_eliciting,
            in_flight,
            state: State::Live,
            acked_before: self.acked_gap,
            payload: packet.payload,
        });
        self.acked_gap = false;
        self.span += 1;
        self.live += 1;
        self.next_pn += 1;
        self.bytes_in_flight = self.bytes_in_flight.saturating_add(packet.size.into());
        if packet.ack_eliciting {
            self.ack_eliciting_in_flight += 1;
            self.time_of_last_ack_eliciting = Some(packet.time_sent);
        }
        Ok(())
    }

    /// The records awaiting acknowledgement or loss, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = SentPacket<T>> + '_ {
        (0..self.span).filter_map(move |i| {
            self.slot(i).filter(|s| s.state == State::Live).map(|s| s.packet())
        })
    }

    /// The payloads of the ack-eliciting records awaiting acknowledgement or loss, oldest
    /// first, by reference (no record copied out: PTO probes walk them on a device).
    pub(crate) fn ack_eliciting_payloads(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.span).filter_map(move |i| {
            self.slot(i).filter(|s| s.state == State::Live && s.ack_eliciting).map(|s| &s.payload)
        })
    }

    /// The record of `pn` if it awaits acknowledgement or loss.
    pub fn get(&self, pn: u64) -> Option<SentPacket<T>> {
        let pn = narrow(pn)?;
        let i = self.lower_bound(pn);
        self.slot(i).filter(|s| s.pn == pn && s.state == State::Live).map(|s| s.packet())
    }

    // --- ring helpers ---

    /// Physical index of logical position `i` (< N): a conditional subtraction, no modulo.
    /// An eagerly settled ring never moves its head (compaction starts at slot 0).
    fn phys(&self, i: usize) -> usize {
        if E {
            return i;
        }
        let p = self.head + i;
        let n = self.slots.len();
        if p >= n {
            p - n
        } else {
            p
        }
    }

    // Out of line on devices: inlined four times once `phys` became trivial (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn slot(&self, i: usize) -> Option<&Slot<T>> {
        if i >= self.span {
            return None;
        }
        self.slots.get(self.phys(i)).and_then(Option::as_ref)
    }

    fn slot_mut(&mut self, i: usize) -> Option<&mut Slot<T>> {
        if i >= self.span {
            return None;
        }
        let p = self.phys(i);
        self.slots.get_mut(p).and_then(Option::as_mut)
    }

    /// The first logical position whose packet number is at least `pn` (`span` if none).
    fn lower_bound(&self, pn: SentPn) -> usize {
        let (mut lo, mut hi) = (0, self.span);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.slot(mid) {
                Some(s) if s.pn < pn => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// Drops tombstones from the front of the ring.
    fn pop_front(&mut self) {
        while self.span > 0 {
            let head = self.head;
            let Some(cell) = self.slots.get_mut(head) else { break };
            match cell {
                Some(s) if s.state == State::Live || s.state == State::NewlyAcked => break,
                _ => *cell = None,
            }
            self.head = if head + 1 >= self.slots.len() { 0 } else { head + 1 };
            self.span -= 1;
        }
        if self.span == 0 {
            self.head = 0;
        }
    }

    /// Reports each `NewlyAcked` record to `on_acked` (ascending packet numbers);
    /// [`Self::compact`] then removes them. A separate scan keeps `compact` free of
    /// the callback: one copy in the image, called directly (issue 8).
    fn report_newly_acked<F: FnMut(SentPacket<T>)>(&self, on_acked: &mut F) {
        for r in 0..self.span {
            if let Some(Some(slot)) = self.slots.get(self.phys(r)) {
                if slot.state == State::NewlyAcked {
                    on_acked(slot.packet());
                }
            }
        }
    }

    /// Moves the live records together at the front of the ring, O(N), dropping the
    /// acknowledged and lost ones. An acknowledged record that disappears sets
    /// `acked_before` on the next live record (or, after the newest, on the next one sent).
    fn compact(&mut self) {
        let mut w = 0;
        let mut acked_gap = false;
        for r in 0..self.span {
            let (rp, wp) = (self.phys(r), self.phys(w));
            let Some(Some(slot)) = self.slots.get_mut(rp) else { continue };
            match slot.state {
                State::Live => {
                    slot.acked_before |= acked_gap;
                    acked_gap = false;
                    if wp != rp {
                        // The record moves down; its old slot is cleared below.
                        let moved = *slot;
                        if let Some(dst) = self.slots.get_mut(wp) {
                            *dst = Some(moved);
                        }
                    }
                    w += 1;
                }
                State::NewlyAcked | State::Acked => acked_gap = true,
                State::Lost => {}
            }
        }
        self.acked_gap |= acked_gap;
        for r in w..self.span {
            let rp = self.phys(r);
            if let Some(s) = self.slots.get_mut(rp) {
                *s = None;
            }
        }
        self.span = w;
    }

    fn remove_live_accounting(&mut self, size: u16, in_flight: bool, ack_eliciting: bool) {
        self.live = self.live.saturating_sub(1);
        if in_flight {
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(size.into());
        }
        if ack_eliciting {
            self.ack_eliciting_in_flight = self.ack_eliciting_in_flight.saturating_sub(1);
            if self.ack_eliciting_in_flight == 0 {
                self.time_of_last_ack_eliciting = None;
            }
        }
    }

    /// Marks the record at logical position `i` lost, takes it out of flight and returns
    /// it (loss detection and PTO eviction).
    fn declare_lost(&mut self, i: usize) -> Option<SentPacket<T>> {
        self.retire(i, State::Lost).map(Slot::packet)
    }

    /// Moves the live record at logical position `i` to `state` (lost or newly
    /// acknowledged) and takes it out of flight; `None` if it is not live.
    // One copy for loss detection, eviction and ACK marking (issue 8).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn retire(&mut self, i: usize, state: State) -> Option<&Slot<T>> {
        let slot = self.slot_mut(i)?;
        if slot.state != State::Live {
            return None;
        }
        slot.state = state;
        let (size, in_flight, ack_eliciting) = (slot.size, slot.in_flight, slot.ack_eliciting);
        self.remove_live_accounting(size, in_flight, ack_eliciting);
        self.slot(i)
    }

    // --- ACK processing (driven by Recovery) ---

    /// RFC 9000 §13.1, §21.4: checks the first `cap` ranges before anything changes. Ranges
    /// must be non-empty, descending and disjoint; none may reach a packet number not yet
    /// used, nor cover a remembered skipped one. Returns the first range's largest (the
    /// ACK's Largest Acknowledged).
    pub(crate) fn validate_ack<I>(&self, ranges: I, cap: usize) -> Result<SentPn, RecoveryError>
    where
        I: Iterator<Item = (u64, u64)>,
    {
        // The first range is checked against `next_pn`, the others against the previous
        // range's smallest: `bound` is the lowest packet number a range may not reach.
        let mut bound = self.next_pn;
        let mut largest = None;
        for (lo, hi) in ranges.take(cap) {
            if lo > hi || hi >= widen(bound) {
                return Err(match largest {
                    // Only the first range can reach `next_pn`: the others are below it.
                    None if lo <= hi => RecoveryError::AckOfUnsentPacket,
                    _ => RecoveryError::InvalidAckRanges,
                });
            }
            // `hi < next_pn <= PN_LIMIT` here, so the empty marker (`NO_PN`) never matches,
            // and both ends fit a `SentPn`.
            let (lo, hi) = (valid(lo), valid(hi));
            if self.skipped.iter().any(|&s| lo <= s && s <= hi) {
                return Err(RecoveryError::AckOfSkippedPacket);
            }
            largest.get_or_insert(hi);
            bound = lo;
        }
        largest.ok_or(RecoveryError::InvalidAckRanges)
    }

    /// Marks the live records inside the first `cap` (validated) ranges as newly acked and
    /// takes them out of flight. `largest` is the ACK's Largest Acknowledged.
    pub(crate) fn mark_acked<I>(&mut self, largest: SentPn, ranges: I, cap: usize) -> AckMark
    where
        I: Iterator<Item = (u64, u64)>,
    {
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
        let mut mark = AckMark::default();
        let valid2 = |(lo, hi): (u64, u64)| (valid(lo), valid(hi));
        let mut ranges = ranges.take(cap);
        if E {
            // One walk down the ring against the (descending) ranges, no search: a record
            // below the current range moves on to the next range.
            let mut range = ranges.next().map(valid2);
            let mut i = self.span;
            while let (Some((lo, hi)), Some(below)) = (range, i.checked_sub(1)) {
                let Some(pn) = self.slot(below).map(|s| s.pn) else { break };
                if pn < lo {
                    range = ranges.next().map(valid2);
                    continue;
                }
                if pn <= hi {
                    self.mark_one(below, &mut mark);
                }
                i = below;
            }
            return mark;
        }
        for (lo, hi) in ranges {
            let (lo, hi) = valid2((lo, hi));
            let mut i = self.lower_bound(lo);
            while let Some(slot) = self.slot(i) {
                if slot.pn > hi {
                    break;
                }
                self.mark_one(i, &mut mark);
                i += 1;
            }
        }
        mark
    }

    /// Marks the record at logical position `i` newly acknowledged if it is live.
    fn mark_one(&mut self, i: usize, mark: &mut AckMark) {
        let Some(slot) = self.retire(i, State::NewlyAcked) else { return };
        let (pn, t, ae) = (slot.pn, slot.time_sent, slot.ack_eliciting);
        mark.newly_acked += 1;
        mark.any_ack_eliciting |= ae;
        // Eagerly, the ring is walked downwards: the first one marked is the largest.
        if mark.largest.is_none_or(|(l, _, _)| !E && pn > l) {
            mark.largest = Some((pn, t, ae));
        }
    }

    /// Reports the records [`Self::mark_acked`] marked, in the same ranges, then drops the
    /// tombstones at the front (eagerly: reports them in one scan of the ring, ascending,
    /// and removes them with the lost records).
    pub(crate) fn finish_acked<I, F>(&mut self, ranges: I, cap: usize, mut on_acked: F)
    where
        I: Iterator<Item = (u64, u64)>,
        F: FnMut(SentPacket<T>),
    {
        if E {
            // One scan reports and removes them with the lost records of this ACK.
            self.report_newly_acked(&mut on_acked);
            self.compact();
            return;
        }
        for (lo, hi) in ranges.take(cap) {
            let (lo, hi) = (valid(lo), valid(hi));
            let mut i = self.lower_bound(lo);
            while let Some(slot) = self.slot_mut(i) {
                if slot.pn > hi {
                    break;
                }
                if slot.state == State::NewlyAcked {
                    slot.state = State::Acked;
                    let p = slot.packet();
                    on_acked(p);
                }
                i += 1;
            }
        }
        self.pop_front();
    }

    /// RFC 9002 App. A.10 `DetectAndRemoveLostPackets`: declares lost every live packet at
    /// or below the largest acknowledged that is [`super::PACKET_THRESHOLD`] packets older,
    /// or was sent `loss_delay` before `now`; arms the space's loss timer for the others.
    /// Persistent congestion (RFC 9002 §7.6.2) is checked within this batch: needs
    /// `first_rtt_sample` (the time of the first RTT sample) and the duration. The lost
    /// records stay as tombstones until [`Self::finish_acked`] or [`Self::settle`].
    pub(crate) fn detect_lost<F>(
        &mut self,
        now: Instant,
        loss_delay: Duration,
        first_rtt_sample: Option<Instant>,
        pc_duration: Duration,
        mut on_lost: F,
    ) -> LossSummary
    where
        F: FnMut(SentPacket<T>),
    {
        self.loss_time = None;
        let mut summary = LossSummary::default();
        let Some(largest_acked) = self.largest_acked else { return summary };
        let mut run_start: Option<Instant> = None;
        let mut i = 0;
        while let Some(slot) = self.slot(i) {
            let (pn, time_sent, state) = (slot.pn, slot.time_sent, slot.state);
            if pn > largest_acked {
                break;
            }
            if slot.acked_before {
                run_start = None;
            }
            i += 1;
            match state {
                State::Live => {}
                State::Acked | State::NewlyAcked => {
                    run_start = None;
                    continue;
                }
                State::Lost => continue,
            }
            // RFC 9002 App. A.10: lost when sent at or before `now - loss_delay` (its
            // loss time `time_sent + loss_delay` has come; one sum serves both tests), or
            // kPacketThreshold below the largest acknowledged (`pn <= largest_acked` here).
            let t = time_sent + loss_delay;
            let by_time = t <= now;
            let by_count = largest_acked - pn >= super::PACKET_THRESHOLD as SentPn;
            if !(by_time || by_count) {
                self.loss_time = Some(self.loss_time.map_or(t, |l| l.min(t)));
                run_start = None;
                continue;
            }
            let Some(packet) = self.declare_lost(i - 1) else { break };
            summary.count += 1;
            if packet.in_flight {
                let t = summary.largest_lost_in_flight_sent;
                summary.largest_lost_in_flight_sent =
                    Some(t.map_or(time_sent, |t| t.max(time_sent)));
            }
            if packet.ack_eliciting && first_rtt_sample.is_some_and(|f| time_sent > f) {
                match run_start {
                    Some(start) if time_sent - start > pc_duration => {
                        summary.persistent_congestion = true;
                    }
                    Some(_) => {}
                    None => run_start = Some(time_sent),
                }
            }
            on_lost(packet);
        }
        // The lost records leave with the ACK's (`finish_acked`) or by `settle`.
        summary
    }

    /// Declares the oldest live records lost until `free` records are free, for PTO probes
    /// when the tracker is full. No congestion reaction: these were not detected as lost,
    /// their frames are simply handed back for the probes to carry. Returns how many.
    pub(crate) fn evict_for<F>(&mut self, free: usize, mut on_lost: F) -> usize
    where
        F: FnMut(SentPacket<T>),
    {
        let mut evicted = 0;
        let mut i = 0;
        let n = self.slots.len();
        while n.saturating_sub(self.live) < free.min(n) {
            let Some(slot) = self.slot(i) else { break };
            if slot.state == State::Live {
                if let Some(packet) = self.declare_lost(i) {
                    on_lost(packet);
                    evicted += 1;
                }
            }
            i += 1;
        }
        self.settle();
        evicted
    }

    /// Drops the records a loss pass outside an ACK (or an eviction) settled: tombstones at
    /// the front, or, eagerly, every lost record (none is newly acknowledged here).
    pub(crate) fn settle(&mut self) {
        if E {
            self.compact();
        } else {
            self.pop_front();
        }
    }

    /// RFC 9002 §6.4: forgets every record when the space's keys are discarded; returns the
    /// bytes that were in flight. Packet numbers keep counting.
    pub(crate) fn discard(&mut self) -> u64 {
        let bytes = self.bytes_in_flight();
        self.slots.fill(None);
        self.head = 0;
        self.span = 0;
        self.live = 0;
        self.ack_eliciting_in_flight = 0;
        self.bytes_in_flight = 0;
        self.time_of_last_ack_eliciting = None;
        self.loss_time = None;
        self.acked_gap = false;
        bytes
    }

    /// The peer's ECN-CE count seen so far; returns whether `ce` increased it (RFC 9002
    /// App. B.7).
    #[cfg(feature = "ecn")]
    pub(crate) fn update_ecn_ce(&mut self, ce: u64) -> bool {
        if ce > self.ecn_ce {
            self.ecn_ce = ce;
            true
        } else {
            false
        }
    }
}
