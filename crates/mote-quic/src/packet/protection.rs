//! Header protection and whole-packet protection (RFC 9001 §5.3, §5.4, §5.5).
//!
//! Protection is two independent steps, each callable on its own:
//!
//! * the AEAD over the payload ([`PacketKey`](super::PacketKey): `seal`/`open`, with the
//!   packet number, the unprotected header as associated data, and the payload), and
//! * header protection, which masks the low bits of the first byte and the packet number
//!   with a mask computed from a sample of the ciphertext ([`apply_header_protection`],
//!   [`remove_header_protection`]).
//!
//! [`PacketKeys::protect`] and [`PacketKeys::unprotect`] chain them for the common case.

use core::ops::Range;

use mote_crypto::{CryptoProvider, Error, HeaderProtectionKey, SAMPLE_LEN};

use super::header::FORM_BIT;
use super::keys::PacketKeys;
use super::number;
use crate::error::WireError;

/// RFC 9001 §5.4.2: "the sampled ciphertext starts 4 bytes after the start of the Packet
/// Number field" (as if the packet number were always 4 bytes long).
pub const SAMPLE_OFFSET: usize = 4;
/// RFC 9000 §17.3.1: the Key Phase bit of a short header (header-protected).
pub const KEY_PHASE_BIT: u8 = 0x04;
/// RFC 9000 §17.2/§17.3.1: the two low bits of the first byte hold the packet number
/// length minus one.
const PN_LEN_BITS: u8 = 0x03;
/// RFC 9000 §17.2: the Reserved Bits of a long header.
const LONG_RESERVED_BITS: u8 = 0x0c;
/// RFC 9000 §17.3.1: the Reserved Bits of a short header.
const SHORT_RESERVED_BITS: u8 = 0x18;

/// RFC 9001 §5.4.1: "the four least significant bits of the first byte are protected for
/// packets with long headers; the five least significant bits of the first byte are
/// protected for packets with short headers." The Header Form bit itself is never masked.
const fn protected_bits(first: u8) -> u8 {
    if first & FORM_BIT != 0 {
        0x0f
    } else {
        0x1f
    }
}

/// RFC 9001 §5.4.2: the 16-byte sample at `pn_offset + 4`, or `None` if the packet is too
/// short to contain it.
fn sample(packet: &[u8], pn_offset: usize) -> Option<&[u8; SAMPLE_LEN]> {
    let start = pn_offset.checked_add(SAMPLE_OFFSET)?;
    let end = start.checked_add(SAMPLE_LEN)?;
    packet.get(start..end)?.try_into().ok()
}

/// RFC 9001 §5.4.1: `packet[pn_offset:pn_offset+pn_length] ^= mask[1:1+pn_length]`.
///
/// RFC 9001 §9.5 asks that header protection removal not leak the packet number length
/// through timing, so all four bytes after `pn_offset` are written (they exist whenever a
/// sample does), with the mask zeroed beyond `pn_len` without branching.
fn mask_pn(packet: &mut [u8], pn_offset: usize, mask: &[u8; 5], pn_len: u8) {
    let end = pn_offset.saturating_add(4);
    if let Some(pn) = packet.get_mut(pn_offset..end) {
        for (i, (byte, m)) in (0u8..).zip(pn.iter_mut().zip(&mask[1..])) {
            // 0xff when i < pn_len (i - pn_len wraps to 0xfc..=0xff), else 0x00.
            let keep = 0u8.wrapping_sub(i.wrapping_sub(pn_len) >> 7);
            *byte ^= m & keep;
        }
    }
}

/// Applies header protection to a packet whose payload is already sealed (RFC 9001
/// §5.4.1): masks the low 4 (long header) or 5 (short header) bits of the first byte and the
/// packet number, whose length is read from the unprotected first byte. Fails with
/// [`Error::BufferTooSmall`] if the packet is too short to sample: the sender must pad so
/// that the packet number and payload together are at least 4 bytes (RFC 9001 §5.4.2).
pub fn apply_header_protection<H: HeaderProtectionKey>(
    hp: &H,
    packet: &mut [u8],
    pn_offset: usize,
) -> Result<(), Error> {
    let mask = hp.mask(sample(packet, pn_offset).ok_or(Error::BufferTooSmall)?)?;
    #[cfg(fuzzing)]
    let mask = super::fuzzing_mask(mask);
    let first = packet.first_mut().ok_or(Error::BufferTooSmall)?;
    let pn_len = (*first & PN_LEN_BITS) + 1;
    *first ^= mask[0] & protected_bits(*first);
    mask_pn(packet, pn_offset, &mask, pn_len);
    Ok(())
}

/// The header fields recovered by [`remove_header_protection`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruncatedPn {
    /// The first byte with protection removed (reserved bits, key phase, length bits).
    pub first_byte: u8,
    /// The packet number as sent, `len` bytes long: decode it with [`number::decode`].
    pub value: u32,
    /// Packet number length in bytes (1 to 4).
    pub len: usize,
}

/// Removes header protection in place (RFC 9001 §5.4.1) and returns the first byte and the
/// truncated packet number; the header is then `pn_offset + len` bytes long and ready to be
/// the AEAD's associated data.
///
/// A packet too short to sample (fewer than `pn_offset + 20` bytes) is
/// [`WireError::Truncated`] and must be dropped (RFC 9001 §5.4.2). The reserved bits are not
/// checked here: see [`check_reserved_bits`].
pub fn remove_header_protection<H: HeaderProtectionKey>(
    hp: &H,
    packet: &mut [u8],
    pn_offset: usize,
) -> Result<TruncatedPn, WireError> {
    let sample = sample(packet, pn_offset).ok_or(WireError::Truncated)?;
    let mask = hp.mask(sample).map_err(|_| WireError::DecryptFailed)?;
    #[cfg(fuzzing)]
    let mask = super::fuzzing_mask(mask);
    let first = packet.first_mut().ok_or(WireError::Truncated)?;
    *first ^= mask[0] & protected_bits(*first);
    let first_byte = *first;
    let pn_len = (first_byte & PN_LEN_BITS) + 1;
    mask_pn(packet, pn_offset, &mask, pn_len);
    // Read all four bytes (present, as the sample follows them) and shift the unused ones
    // out, again without branching on the length.
    let end = pn_offset.checked_add(4).ok_or(WireError::Truncated)?;
    let four: [u8; 4] =
        packet.get(pn_offset..end).and_then(|b| b.try_into().ok()).ok_or(WireError::Truncated)?;
    let value = u32::from_be_bytes(four) >> (8 * (4 - u32::from(pn_len)));
    Ok(TruncatedPn { first_byte, value, len: usize::from(pn_len) })
}

/// RFC 9000 §17.2 (long) and §17.3.1 (short): "An endpoint MUST treat receipt of a packet
/// that has a non-zero value for these bits after removing both packet and header
/// protection as a connection error of type PROTOCOL_VIOLATION."
///
/// Call this only after the AEAD open succeeded: RFC 9000 notes that discarding such a
/// packet after only removing header protection can expose the endpoint to attacks (an
/// attacker could learn about the header-protection mask by probing which packets are
/// dropped), and an unauthenticated packet must never close the connection.
pub fn check_reserved_bits(first_byte: u8) -> Result<(), WireError> {
    let reserved =
        if first_byte & FORM_BIT != 0 { LONG_RESERVED_BITS } else { SHORT_RESERVED_BITS };
    if first_byte & reserved != 0 {
        return Err(WireError::ReservedBitsSet);
    }
    Ok(())
}

/// A packet whose protection [`PacketKeys::unprotect`] removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unprotected {
    /// The full, decoded packet number.
    pub pn: u64,
    /// The unprotected first byte.
    pub first_byte: u8,
    /// Header length including the packet number; the plaintext starts here.
    pub header_len: usize,
    /// Plaintext length (the payload minus the AEAD tag).
    pub payload_len: usize,
}

impl Unprotected {
    /// The Key Phase bit (meaningful for short headers only, RFC 9001 §6).
    pub const fn key_phase(&self) -> bool {
        self.first_byte & FORM_BIT == 0 && self.first_byte & KEY_PHASE_BIT != 0
    }

    /// Where the plaintext frames are in the packet.
    pub const fn payload_range(&self) -> Range<usize> {
        self.header_len..self.header_len + self.payload_len
    }
}

impl<P: CryptoProvider> PacketKeys<P> {
    /// Protects a packet in place (RFC 9001 §5.3, §5.4): seals the payload, then applies
    /// header protection.
    ///
    /// `packet` is the complete unprotected packet: the header as emitted (its first byte
    /// giving the packet number length, its Length field already set for long headers), the
    /// plaintext, and [`TAG_LEN`](super::TAG_LEN) bytes of room at the end. `pn_offset` is
    /// where the packet number starts and `pn` its full value. Fails without touching the
    /// packet if it is too short to sample for header protection.
    pub fn protect(&self, packet: &mut [u8], pn_offset: usize, pn: u64) -> Result<(), Error> {
        let first = *packet.first().ok_or(Error::BufferTooSmall)?;
        let header_len = pn_offset
            .checked_add(usize::from(first & PN_LEN_BITS) + 1)
            .ok_or(Error::BufferTooSmall)?;
        // RFC 9001 §5.4.2: check before sealing, so a failure leaves the packet as it was.
        if sample(packet, pn_offset).is_none() {
            return Err(Error::BufferTooSmall);
        }
        self.packet.seal_in_place(pn, packet, header_len)?;
        apply_header_protection(&self.header, packet, pn_offset)
    }

    /// Removes protection in place (RFC 9001 §5.4, §5.3, §5.5): header protection, packet
    /// number decoding against `largest_pn` (the largest packet number successfully
    /// processed in this space, `None` if none), AEAD open, and the reserved-bits check.
    ///
    /// `packet` is exactly this packet's bytes (from [`Parsed::len`](super::Parsed)). A
    /// short-header packet whose Key Phase may differ from the current one needs the steps
    /// one by one, so the key can be chosen after header protection is removed.
    ///
    /// Errors: [`WireError::Truncated`] (too short to sample: drop),
    /// [`WireError::DecryptFailed`] (drop), [`WireError::ReservedBitsSet`] (authenticated,
    /// so a connection error: PROTOCOL_VIOLATION).
    pub fn unprotect(
        &self,
        packet: &mut [u8],
        pn_offset: usize,
        largest_pn: Option<u64>,
    ) -> Result<Unprotected, WireError> {
        let t = remove_header_protection(&self.header, packet, pn_offset)?;
        let pn = number::decode(largest_pn, t.value, t.len);
        let header_len = pn_offset + t.len;
        let payload_len = self.packet.open_in_place(pn, packet, header_len)?;
        // Only now, with the packet authenticated (see `check_reserved_bits`).
        check_reserved_bits(t.first_byte)?;
        Ok(Unprotected { pn, first_byte: t.first_byte, header_len, payload_len })
    }
}
