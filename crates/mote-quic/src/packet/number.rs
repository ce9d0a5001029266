//! Packet numbers (RFC 9000 §12.3, §17.1, Appendix A.2 and A.3).
//!
//! Packet numbers are integers in 0..2^62 sent truncated to 1 to 4 bytes. Everything here is
//! shifts, masks and comparisons: no 64-bit division, which Cortex-M4 lacks in hardware.

/// The largest packet number (RFC 9000 §12.3: packet numbers are below 2^62).
pub const MAX_PN: u64 = (1 << 62) - 1;

/// RFC 9000 Appendix A.2 / §17.1: the number of bytes to encode `full_pn` in, given the
/// largest packet number the peer has acknowledged in this space (`None` if none yet).
///
/// The encoding must cover more than twice the range of unacknowledged packets:
/// `num_unacked = full_pn - largest_acked` (or `full_pn + 1`), `min_bits = log2(num_unacked)
/// + 1`, `num_bytes = ceil(min_bits / 8)`; that is, the smallest `b` with
/// `num_unacked <= 2^(8b - 1)`, capped at 4.
pub const fn encoded_len(full_pn: u64, largest_acked: Option<u64>) -> usize {
    let num_unacked = match largest_acked {
        Some(acked) => full_pn.saturating_sub(acked),
        None => full_pn.saturating_add(1),
    };
    if num_unacked <= 1 << 7 {
        1
    } else if num_unacked <= 1 << 15 {
        2
    } else if num_unacked <= 1 << 23 {
        3
    } else {
        4
    }
}

/// RFC 9000 §17.1: the least significant `pn_len` bytes of `full_pn` (`pn_len` is clamped
/// to 1..=4).
pub const fn truncate(full_pn: u64, pn_len: usize) -> u32 {
    let bits = clamp_len(pn_len) * 8;
    (full_pn & ((1u64 << bits) - 1)) as u32
}

const fn clamp_len(pn_len: usize) -> u32 {
    if pn_len < 1 {
        1
    } else if pn_len > 4 {
        4
    } else {
        pn_len as u32
    }
}

/// RFC 9000 Appendix A.3: recovers a full packet number from its `pn_len`-byte truncation
/// (`pn_len` clamped to 1..=4), given the largest packet number successfully processed in
/// this space (`None` if none yet). The result is the candidate closest to the next
/// expected packet number.
pub const fn decode(largest_pn: Option<u64>, truncated_pn: u32, pn_len: usize) -> u64 {
    let expected_pn = match largest_pn {
        Some(pn) => pn.saturating_add(1),
        None => 0,
    };
    let pn_win = 1u64 << (clamp_len(pn_len) * 8);
    let pn_hwin = pn_win >> 1;
    let pn_mask = pn_win - 1;
    // The incoming packet number should be greater than expected_pn - pn_hwin and less than
    // or equal to expected_pn + pn_hwin. This means we cannot just strip the trailing bits
    // from expected_pn and add the truncated_pn because that might yield a value outside
    // the window.
    let candidate_pn = (expected_pn & !pn_mask) | (truncated_pn as u64 & pn_mask);
    // `candidate_pn <= expected_pn - pn_hwin`, written so it cannot underflow.
    if candidate_pn + pn_hwin <= expected_pn && candidate_pn < (1 << 62) - pn_win {
        candidate_pn + pn_win
    } else if candidate_pn > expected_pn + pn_hwin && candidate_pn >= pn_win {
        candidate_pn - pn_win
    } else {
        candidate_pn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 Appendix A.3's example: largest 0xa82f30ea, 16-bit 0x9b32 → 0xa82f9b32.
    #[test]
    fn rfc9000_a_packet_number_decode() {
        assert_eq!(decode(Some(0xa82f_30ea), 0x9b32, 2), 0xa82f_9b32);
        // Window edges, and no packet yet received.
        assert_eq!(decode(None, 0, 1), 0);
        assert_eq!(decode(None, 0xff, 1), 0xff);
        assert_eq!(decode(Some(0xff), 0x00, 1), 0x100);
        assert_eq!(decode(Some(0x100), 0xff, 1), 0xff);
        // Near 2^62 the candidate is not pushed past the maximum.
        assert_eq!(decode(Some(MAX_PN - 1), 0xff, 1), MAX_PN);
    }

    /// RFC 9000 Appendix A.2's examples.
    #[test]
    fn rfc9000_a_packet_number_encode_length() {
        assert_eq!(encoded_len(0x00ac_5c02, Some(0x00ab_e8b3)), 2);
        assert_eq!(encoded_len(0x00ac_e8fe, Some(0x00ab_e8b3)), 3);
        assert_eq!(truncate(0x00ac_5c02, 2), 0x5c02);
        assert_eq!(truncate(0x00ac_e8fe, 3), 0xace8fe);
        assert_eq!(encoded_len(0, None), 1);
        assert_eq!(encoded_len(127, None), 1);
        assert_eq!(encoded_len(128, None), 2);
        assert_eq!(encoded_len(1 << 40, None), 4);
    }

    proptest::proptest! {
        /// decode(encode(pn)) == pn whenever the receiver's largest packet number lies
        /// between the sender's largest acknowledged and the packet itself.
        #[test]
        fn decode_inverts_encode(
            largest_acked in 0u64..(1 << 61),
            ahead in 1u64..(1 << 31),
            received_frac in 0u64..1024,
        ) {
            let pn = largest_acked + ahead;
            let len = encoded_len(pn, Some(largest_acked));
            // Any largest received in [largest_acked, pn - 1].
            let largest_received = largest_acked + (((ahead - 1) * received_frac) >> 10);
            proptest::prop_assert_eq!(decode(Some(largest_received), truncate(pn, len), len), pn);
        }

        #[test]
        fn decode_first_packets(pn in 0u64..(1 << 31)) {
            let len = encoded_len(pn, None);
            proptest::prop_assert_eq!(decode(None, truncate(pn, len), len), pn);
        }
    }
}
