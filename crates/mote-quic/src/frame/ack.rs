//! ACK frames (RFC 9000 §19.3) without allocation.
//!
//! A received ACK keeps a borrow of its encoded ACK Range section, validated once at parse
//! time; [`AckRanges`] walks it again to yield the acknowledged packet-number ranges. An ACK
//! to send borrows the caller's own list of inclusive ranges ([`Ack::new`]) and encodes it
//! straight into the packet.

use crate::arith::Sat64 as _;
use crate::coding::{encoded_size, BufferTooSmall, Reader, VarInt, Writer};
use crate::error::WireError;

use super::types;

/// The ECN counts of an ACK frame of type 0x03 (RFC 9000 §19.3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EcnCounts {
    /// Packets received with the ECT(0) codepoint in this packet number space.
    pub ect0: VarInt,
    /// Packets received with the ECT(1) codepoint in this packet number space.
    pub ect1: VarInt,
    /// Packets received with the ECN-CE codepoint in this packet number space.
    pub ce: VarInt,
}

impl EcnCounts {
    fn encoded_len(&self) -> usize {
        self.ect0.size() + self.ect1.size() + self.ce.size()
    }
}

/// The order of a caller's range list passed to [`Ack::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RangeOrder {
    /// Highest range first: the order of the wire encoding.
    Descending,
    /// Lowest range first: the order a received-packet tracker usually keeps; the ACK is
    /// encoded from the end of the slice backwards.
    Ascending,
}

/// Where an [`Ack`]'s ranges come from.
#[derive(Clone, Copy, Debug)]
enum Source<'a> {
    /// A received frame: First ACK Range and the validated Gap/ACK Range Length pairs.
    Wire { first_range: u64, count: u64, bytes: &'a [u8] },
    /// A frame to send: the caller's `(smallest, largest)` ranges, validated by [`Ack::new`].
    Ranges { ranges: &'a [(u64, u64)], order: RangeOrder },
    /// A frame to send from a device's 32-bit received-packet ranges, lowest first.
    #[cfg(not(feature = "std"))]
    Received(&'a [(u32, u32)]),
}

/// An ACK frame (RFC 9000 §19.3): type 0x02, or 0x03 when it carries [`EcnCounts`].
///
/// Equality compares the acknowledged ranges, not their encoding, so a received ACK equals
/// the [`Ack::new`] value it was emitted from.
#[derive(Clone, Copy, Debug)]
pub struct Ack<'a> {
    largest: u64,
    ack_delay: VarInt,
    ecn: Option<EcnCounts>,
    source: Source<'a>,
}

impl<'a> Ack<'a> {
    /// An ACK to send for `ranges`, each an inclusive `(smallest, largest)` pair of packet
    /// numbers, listed in `order`. `ack_delay` is the already-scaled wire value (RFC 9000
    /// §19.3: microseconds shifted right by the ack_delay_exponent).
    ///
    /// Returns `None` unless the ranges are encodable: at least one range, each with
    /// `smallest <= largest`, the highest below 2^62, and every two neighbours separated by
    /// at least one unacknowledged packet (RFC 9000 §19.3.1: a Gap encodes one or more
    /// missing packets, so touching or overlapping ranges must be merged first). To shorten
    /// an ACK, pass a sub-slice that keeps the highest ranges.
    pub fn new(
        ranges: &'a [(u64, u64)],
        order: RangeOrder,
        ack_delay: VarInt,
        ecn: Option<EcnCounts>,
    ) -> Option<Self> {
        let source = Source::Ranges { ranges, order };
        let mut iter = AckRanges::new(0, source);
        let (mut prev_smallest, largest) = iter.next()?;
        if prev_smallest > largest || largest > VarInt::MAX.into_inner() {
            return None;
        }
        for (smallest, next_largest) in iter {
            // RFC 9000 §19.3.1: the next range's largest is at least two below the previous
            // range's smallest (Gap = previous smallest - largest - 2 >= 0).
            if smallest > next_largest || next_largest.checked_add(2)? > prev_smallest {
                return None;
            }
            prev_smallest = smallest;
        }
        Some(Self { largest, ack_delay, ecn, source })
    }

    /// An ACK to send for a device's received-packet ranges (`ReceivedRanges`, 32-bit
    /// without `std`), lowest first. `None` if `ranges` is empty. The set keeps them
    /// ascending, disjoint, non-adjacent and below 2^32 - 1 — what [`Ack::new`] checks —,
    /// so they are taken as they are.
    #[cfg(not(feature = "std"))]
    pub(crate) fn from_received(
        ranges: &'a [(u32, u32)],
        ack_delay: VarInt,
        ecn: Option<EcnCounts>,
    ) -> Option<Self> {
        let largest = u64::from(ranges.last()?.1);
        Some(Self { largest, ack_delay, ecn, source: Source::Received(ranges) })
    }

    /// The Largest Acknowledged packet number.
    pub const fn largest(&self) -> u64 {
        self.largest
    }

    /// The ACK Delay field as sent: not yet scaled by the peer's ack_delay_exponent.
    pub const fn ack_delay(&self) -> VarInt {
        self.ack_delay
    }

    /// The ECN counts, present in an ACK of type 0x03.
    pub const fn ecn(&self) -> Option<EcnCounts> {
        self.ecn
    }

    /// The acknowledged ranges as inclusive `(smallest, largest)` packet numbers, highest
    /// first. Every yielded range is valid: parsing rejected any that would go below zero.
    pub fn ranges(&self) -> AckRanges<'a> {
        AckRanges::new(self.largest, self.source)
    }

    /// How many ranges [`Ack::ranges`] yields (the ACK Range Count plus one).
    pub fn range_count(&self) -> usize {
        match self.source {
            // The count was checked against the bytes at parse time, so it fits a usize.
            Source::Wire { count, .. } => {
                usize::try_from(count).unwrap_or(usize::MAX).saturating_add(1)
            }
            Source::Ranges { ranges, .. } => ranges.len(),
            #[cfg(not(feature = "std"))]
            Source::Received(ranges) => ranges.len(),
        }
    }

    /// The frame type: 0x03 with ECN counts, else 0x02.
    pub const fn frame_type(&self) -> u64 {
        if self.ecn.is_some() {
            types::ACK_ECN
        } else {
            types::ACK
        }
    }

    /// Bytes [`Ack::emit`] writes, frame type included.
    pub fn encoded_len(&self) -> usize {
        let ranges_len = match self.source {
            Source::Wire { first_range, count, bytes } => {
                encoded_size(count) + encoded_size(first_range) + bytes.len()
            }
            _ => {
                let mut n = 0;
                let _ = self.each_range_field(|v| {
                    n += encoded_size(v);
                    Ok::<(), core::convert::Infallible>(())
                });
                n
            }
        };
        1 + encoded_size(self.largest)
            + self.ack_delay.size()
            + ranges_len
            + self.ecn.as_ref().map_or(0, EcnCounts::encoded_len)
    }

    // RFC 9000 §19.3: ACK Frame {
    //   Type (i) = 0x02..0x03, Largest Acknowledged (i), ACK Delay (i), ACK Range Count (i),
    //   First ACK Range (i), ACK Range (..) ..., [ECN Counts (..)] }
    /// Writes the frame, type included.
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<(), BufferTooSmall> {
        w.put_varint_u64(self.frame_type())?;
        w.put_varint_u64(self.largest)?;
        w.put_varint(self.ack_delay)?;
        match self.source {
            Source::Wire { first_range, count, bytes } => {
                w.put_varint_u64(count)?;
                w.put_varint_u64(first_range)?;
                w.put_slice(bytes)?;
            }
            _ => self.each_range_field(|v| w.put_varint_u64(v))?,
        }
        // RFC 9000 §19.3.2: ECN Counts { ECT0 Count (i), ECT1 Count (i), ECN-CE Count (i) }
        if let Some(ecn) = &self.ecn {
            w.put_varint(ecn.ect0)?;
            w.put_varint(ecn.ect1)?;
            w.put_varint(ecn.ce)?;
        }
        Ok(())
    }

    /// Passes the ACK Range Count, the First ACK Range and each (Gap, ACK Range Length) pair
    /// to `f` in wire order: the ranges to send turned back into the wire's fields, walked
    /// in place. They were validated by [`Ack::new`] (or are a received-packet set's);
    /// saturating arithmetic only keeps this total.
    fn each_range_field<E>(&self, mut f: impl FnMut(u64) -> Result<(), E>) -> Result<(), E> {
        let mut ranges = self.ranges();
        let (mut prev_smallest, largest) = ranges.next().unwrap_or((0, 0));
        f(self.range_count().saturating_sub(1) as u64)?;
        f(largest.sat_sub(prev_smallest))?;
        for (smallest, largest) in ranges {
            // RFC 9000 §19.3.1: Gap = previous smallest - largest - 2.
            f(prev_smallest.sat_sub(largest).sat_sub(2))?;
            f(largest.sat_sub(smallest))?;
            prev_smallest = smallest;
        }
        Ok(())
    }

    /// Parses the body of an ACK frame whose type `ty` (0x02 or 0x03) was already read.
    pub(crate) fn parse_body(ty: u64, r: &mut Reader<'a>) -> Result<Self, WireError> {
        // Largest Acknowledged, ACK Delay, ACK Range Count, First ACK Range: read by one
        // loop (issue 8: one inlined varint read, not four).
        let mut fields = [VarInt::ZERO; 4];
        for f in &mut fields {
            *f = r.varint()?;
        }
        let [largest, ack_delay, count, first_range] = fields;
        let (largest, count, first_range) =
            (largest.into_inner(), count.into_inner(), first_range.into_inner());
        let section = r.peek_rest();
        let before = r.remaining();
        // RFC 9000 §19.3.1: the First ACK Range's smallest packet number is Largest
        // Acknowledged - First ACK Range; each next range's largest is the previous smallest
        // - Gap - 2, its smallest that largest - ACK Range Length. Any of them negative is a
        // FRAME_ENCODING_ERROR: checked by one subtraction per range (Gap and Length are
        // varints, below 2^62, so Gap + 2 + Length cannot overflow).
        // Each pair takes at least two bytes, so a huge count ends in Truncated after at
        // most len/2 iterations: linear in the input, whatever the count claims.
        let mut smallest = largest;
        let mut step = first_range;
        let mut i = 0u64;
        loop {
            smallest = smallest.checked_sub(step).ok_or(WireError::InvalidFrame(ty))?;
            if i == count {
                break;
            }
            step = r.varint_u64()? + 2 + r.varint_u64()?;
            i += 1;
        }
        let used = before.saturating_sub(r.remaining());
        let bytes = section.get(..used).ok_or(WireError::Truncated)?;
        // RFC 9000 §19.3.2: the three ECN counts follow in a frame of type 0x03.
        let ecn = if ty == types::ACK_ECN {
            let mut counts = [VarInt::ZERO; 3];
            for c in &mut counts {
                *c = r.varint()?;
            }
            let [ect0, ect1, ce] = counts;
            Some(EcnCounts { ect0, ect1, ce })
        } else {
            None
        };
        Ok(Self { largest, ack_delay, ecn, source: Source::Wire { first_range, count, bytes } })
    }
}

impl PartialEq for Ack<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.largest == other.largest
            && self.ack_delay == other.ack_delay
            && self.ecn == other.ecn
            && self.ranges().eq(other.ranges())
    }
}

impl Eq for Ack<'_> {}

/// Iterator over an ACK frame's acknowledged ranges, as inclusive `(smallest, largest)`
/// packet numbers, highest first. Returned by [`Ack::ranges`]; it does constant work per
/// range and never panics.
#[derive(Clone, Debug)]
pub struct AckRanges<'a> {
    inner: Inner<'a>,
}

#[derive(Clone, Debug)]
enum Inner<'a> {
    Wire {
        /// The Largest Acknowledged, then the smallest of the range last yielded.
        edge: u64,
        /// The First ACK Range until the first range is yielded.
        first_len: Option<u64>,
        /// The Gap/ACK Range Length pairs not yet read.
        remaining: u64,
        r: Reader<'a>,
    },
    Descending(core::slice::Iter<'a, (u64, u64)>),
    Ascending(core::iter::Rev<core::slice::Iter<'a, (u64, u64)>>),
    #[cfg(not(feature = "std"))]
    Received(core::iter::Rev<core::slice::Iter<'a, (u32, u32)>>),
}

impl<'a> AckRanges<'a> {
    /// `largest` is the ACK's Largest Acknowledged; only a received ACK needs it here.
    // One copy on a device (the ACK sender and the ACK processing).
    #[cfg_attr(not(feature = "std"), inline(never))]
    fn new(largest: u64, source: Source<'a>) -> Self {
        let inner = match source {
            Source::Wire { first_range, count, bytes } => Inner::Wire {
                edge: largest,
                first_len: Some(first_range),
                remaining: count,
                r: Reader::new(bytes),
            },
            Source::Ranges { ranges, order: RangeOrder::Descending } => {
                Inner::Descending(ranges.iter())
            }
            Source::Ranges { ranges, order: RangeOrder::Ascending } => {
                Inner::Ascending(ranges.iter().rev())
            }
            #[cfg(not(feature = "std"))]
            Source::Received(ranges) => Inner::Received(ranges.iter().rev()),
        };
        Self { inner }
    }
}

impl Iterator for AckRanges<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        match &mut self.inner {
            Inner::Descending(it) => it.next().copied(),
            Inner::Ascending(it) => it.next().copied(),
            #[cfg(not(feature = "std"))]
            Inner::Received(it) => it.next().map(|r| (u64::from(r.0), u64::from(r.1))),
            Inner::Wire { edge, first_len, remaining, r } => {
                // Validated at parse time (no range goes below zero, so the saturating
                // subtractions are exact); a failure here only ends the iteration.
                // RFC 9000 §19.3.1: the first range is Largest Acknowledged - First ACK
                // Range ..= Largest Acknowledged; each next one's largest is the previous
                // smallest - Gap - 2, its smallest that largest - ACK Range Length.
                let (top, len) = match first_len.take() {
                    Some(len) => (*edge, len),
                    None => {
                        if *remaining == 0 {
                            return None;
                        }
                        *remaining -= 1;
                        let (Ok(gap), Ok(len)) = (r.varint_u64(), r.varint_u64()) else {
                            *remaining = 0;
                            return None;
                        };
                        (edge.sat_sub(gap).sat_sub(2), len)
                    }
                };
                *edge = top.sat_sub(len);
                Some((*edge, top))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.inner {
            Inner::Descending(it) => it.len(),
            Inner::Ascending(it) => it.len(),
            #[cfg(not(feature = "std"))]
            Inner::Received(it) => it.len(),
            Inner::Wire { first_len, remaining, .. } => usize::try_from(*remaining)
                .unwrap_or(usize::MAX)
                .saturating_add(usize::from(first_len.is_some())),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for AckRanges<'_> {}
impl core::iter::FusedIterator for AckRanges<'_> {}
