//! Which frames each packet type may carry, and how frames count for acknowledgement and
//! path probing (RFC 9000 §12.4 Table 3, §12.5, §13.2, §9.1; RFC 9221 §5).

use crate::packet::PacketType;

use super::types::*;

/// True if a frame of type `frame_type` may appear in a packet of type `packet`.
///
/// Unknown frame types (including DATAGRAM without the `datagram` feature) are permitted
/// nowhere. The table is RFC 9000 §12.4 Table 3 with one deliberate tightening:
/// RETIRE_CONNECTION_ID is refused in 0-RTT. Table 3 marks it `__01`, but §12.5 lists it
/// among the frames that cannot be sent in 0-RTT packets ("A server MAY treat receipt of
/// these frames in 0-RTT packets as a connection error of type PROTOCOL_VIOLATION"): the
/// only connection IDs a client could retire are issued in 1-RTT packets, after which it no
/// longer sends 0-RTT.
pub const fn permitted(frame_type: u64, packet: PacketType) -> bool {
    // Pkts column of Table 3: I = Initial, H = Handshake, 0 = 0-RTT, 1 = 1-RTT.
    let (i, h, z, o) = match frame_type {
        // RFC 9000 §12.4: IH01. The lower-case "ih" of CONNECTION_CLOSE means only type
        // 0x1c may appear in Initial and Handshake packets.
        PADDING | PING | CONNECTION_CLOSE => (true, true, true, true),
        // RFC 9000 §12.4: IH_1; §12.5: 0-RTT packets cannot carry ACK or CRYPTO.
        ACK | ACK_ECN | CRYPTO => (true, true, false, true),
        // RFC 9000 §12.4: ___1 (RETIRE_CONNECTION_ID: see above).
        NEW_TOKEN | PATH_RESPONSE | HANDSHAKE_DONE | RETIRE_CONNECTION_ID => {
            (false, false, false, true)
        }
        // RFC 9000 §12.4: __01.
        RESET_STREAM
        | STOP_SENDING
        | STREAM..=STREAM_MAX
        | MAX_DATA
        | MAX_STREAM_DATA
        | MAX_STREAMS_BIDI
        | MAX_STREAMS_UNI
        | DATA_BLOCKED
        | STREAM_DATA_BLOCKED
        | STREAMS_BLOCKED_BIDI
        | STREAMS_BLOCKED_UNI
        | NEW_CONNECTION_ID
        | PATH_CHALLENGE
        | CONNECTION_CLOSE_APP => (false, false, true, true),
        // RFC 9221 §5: DATAGRAM frames MUST be protected with either 0-RTT or 1-RTT keys.
        #[cfg(feature = "datagram")]
        DATAGRAM | DATAGRAM_LEN => (false, false, true, true),
        _ => (false, false, false, false),
    };
    match packet {
        PacketType::Initial => i,
        PacketType::Handshake => h,
        PacketType::ZeroRtt => z,
        PacketType::OneRtt => o,
    }
}

/// [`permitted`] for a frame type [`is_known`] accepted, as one bit per type for each
/// packet type (RFC 9000 §12.4 Table 3, the same tightening; RFC 9221 §5 for DATAGRAM):
/// the receive path's check after the type is read (issue 8: a mask and a shift instead
/// of a four-way table per type). Every 1-RTT packet may carry every known frame.
pub(crate) const fn permitted_known(frame_type: u64, packet: PacketType) -> bool {
    const fn bit(ty: u64) -> u32 {
        1 << ty
    }
    // RFC 9000 §12.4: IH__ (CONNECTION_CLOSE 0x1c only).
    const INITIAL_HANDSHAKE: u32 =
        bit(PADDING) | bit(PING) | bit(ACK) | bit(ACK_ECN) | bit(CRYPTO) | bit(CONNECTION_CLOSE);
    // RFC 9000 §12.4, §12.5: every type but these in 0-RTT (RETIRE_CONNECTION_ID: see
    // `permitted`).
    const ZERO_RTT: u32 = !(bit(ACK)
        | bit(ACK_ECN)
        | bit(CRYPTO)
        | bit(NEW_TOKEN)
        | bit(PATH_RESPONSE)
        | bit(HANDSHAKE_DONE)
        | bit(RETIRE_CONNECTION_ID));
    let long_handshake = matches!(packet, PacketType::Initial | PacketType::Handshake);
    // The known types above 0x1e are DATAGRAM's (0x30, 0x31): 0-RTT and 1-RTT only.
    if frame_type > HANDSHAKE_DONE {
        return !long_handshake;
    }
    let mask = match packet {
        PacketType::Initial | PacketType::Handshake => INITIAL_HANDSHAKE,
        PacketType::ZeroRtt => ZERO_RTT,
        PacketType::OneRtt => u32::MAX,
    };
    (mask >> frame_type) & 1 != 0
}

/// True if `frame_type` is one this endpoint parses (RFC 9000 §12.4: any other type is a
/// FRAME_ENCODING_ERROR). DATAGRAM types count only with the `datagram` feature.
pub const fn is_known(frame_type: u64) -> bool {
    match frame_type {
        PADDING..=HANDSHAKE_DONE => true,
        #[cfg(feature = "datagram")]
        DATAGRAM | DATAGRAM_LEN => true,
        _ => false,
    }
}

/// True if a frame of this type makes its packet ack-eliciting (RFC 9000 §13.2, §2: every
/// frame other than ACK, PADDING and CONNECTION_CLOSE). Unknown types report true, the
/// conservative answer; they never come out of a successful parse.
pub const fn is_ack_eliciting(frame_type: u64) -> bool {
    !matches!(frame_type, PADDING | ACK | ACK_ECN | CONNECTION_CLOSE | CONNECTION_CLOSE_APP)
}

/// True for the probing frames (RFC 9000 §9.1, Table 3 "P"): PATH_CHALLENGE,
/// PATH_RESPONSE, NEW_CONNECTION_ID and PADDING. A packet holding only these is a probing
/// packet and does not migrate the connection.
pub const fn is_probing(frame_type: u64) -> bool {
    matches!(frame_type, PADDING | NEW_CONNECTION_ID | PATH_CHALLENGE | PATH_RESPONSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receive path's mask table says what `permitted` says, for every known type.
    #[test]
    fn permitted_known_is_permitted() {
        for ty in 0..=0x40 {
            if !is_known(ty) {
                continue;
            }
            for packet in [
                PacketType::Initial,
                PacketType::Handshake,
                PacketType::ZeroRtt,
                PacketType::OneRtt,
            ] {
                assert_eq!(permitted_known(ty, packet), permitted(ty, packet), "{ty:#x}");
            }
        }
    }

    /// Table 3 written out letter by letter ("IH01" with '_' for not allowed), checked for
    /// every type and packet type.
    #[test]
    fn table_3() {
        let table: &[(u64, &str)] = &[
            (PADDING, "IH01"),
            (PING, "IH01"),
            (ACK, "IH_1"),
            (ACK_ECN, "IH_1"),
            (RESET_STREAM, "__01"),
            (STOP_SENDING, "__01"),
            (CRYPTO, "IH_1"),
            (NEW_TOKEN, "___1"),
            (0x08, "__01"),
            (0x09, "__01"),
            (0x0a, "__01"),
            (0x0b, "__01"),
            (0x0c, "__01"),
            (0x0d, "__01"),
            (0x0e, "__01"),
            (0x0f, "__01"),
            (MAX_DATA, "__01"),
            (MAX_STREAM_DATA, "__01"),
            (MAX_STREAMS_BIDI, "__01"),
            (MAX_STREAMS_UNI, "__01"),
            (DATA_BLOCKED, "__01"),
            (STREAM_DATA_BLOCKED, "__01"),
            (STREAMS_BLOCKED_BIDI, "__01"),
            (STREAMS_BLOCKED_UNI, "__01"),
            (NEW_CONNECTION_ID, "__01"),
            // Table 3 says __01; §12.5 forbids it in 0-RTT (see `permitted`).
            (RETIRE_CONNECTION_ID, "___1"),
            (PATH_CHALLENGE, "__01"),
            (PATH_RESPONSE, "___1"),
            (CONNECTION_CLOSE, "IH01"),
            (CONNECTION_CLOSE_APP, "__01"),
            (HANDSHAKE_DONE, "___1"),
            #[cfg(feature = "datagram")]
            (DATAGRAM, "__01"),
            #[cfg(feature = "datagram")]
            (DATAGRAM_LEN, "__01"),
            #[cfg(not(feature = "datagram"))]
            (DATAGRAM, "____"),
            #[cfg(not(feature = "datagram"))]
            (DATAGRAM_LEN, "____"),
            (0x1f, "____"),
            (0x20, "____"),
            (0x2f, "____"),
            (0x32, "____"),
            (0x3f, "____"),
            (0x40, "____"),
            (u64::MAX, "____"),
        ];
        let packets =
            [PacketType::Initial, PacketType::Handshake, PacketType::ZeroRtt, PacketType::OneRtt];
        for (ty, letters) in table {
            for (packet, letter) in packets.iter().zip(letters.bytes()) {
                assert_eq!(permitted(*ty, *packet), letter != b'_', "type {ty:#x} in {packet:?}");
            }
            assert_eq!(is_known(*ty), *letters != "____", "type {ty:#x}");
        }
    }

    #[test]
    fn ack_eliciting_and_probing() {
        for ty in PADDING..=HANDSHAKE_DONE {
            let non_eliciting = matches!(ty, 0x00 | 0x02 | 0x03 | 0x1c | 0x1d);
            assert_eq!(is_ack_eliciting(ty), !non_eliciting, "type {ty:#x}");
            let probing = matches!(ty, 0x00 | 0x18 | 0x1a | 0x1b);
            assert_eq!(is_probing(ty), probing, "type {ty:#x}");
        }
        assert!(is_ack_eliciting(DATAGRAM) && is_ack_eliciting(DATAGRAM_LEN));
        assert!(!is_probing(DATAGRAM));
    }
}
