//! The device connection's handler error: a transport error code and the frame type that
//! caused it, packed in 32 bits so that every handler returns it in a register. It becomes
//! a [`ConnectionClose`] once, where the connection enters closing.

use core::num::NonZeroU32;

use crate::connection::ConnectionClose;
use crate::error::TransportErrorCode;
use crate::frame::types;

/// A transport error a device handler detected (RFC 9000 §11, §20.1).
///
/// Bits 0–14 hold the error code (every code the device raises is one of RFC 9000 §20.1's
/// 0x00–0x10 or RFC 9001 §4.8's CRYPTO_ERROR 0x0100–0x01ff); bit 15 is always set (the
/// value is never zero, so `Result<(), Error>` is one register); bits 16–31 hold the frame
/// type plus one, 0 for none. Frame types up to 0xfffe fit: every type
/// the device acts on. A larger one (an unknown frame type, up to 2^62 - 1) does not fit:
/// the frame loop closes with it as a [`ConnectionClose`] directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Error(NonZeroU32);

const SET: u32 = 1 << 15;
const CODE_MASK: u32 = SET - 1;

impl Error {
    /// `code` caused by a frame of type `frame_type` (at most 0xfffe: a type the
    /// device handles).
    pub(crate) const fn frame(code: TransportErrorCode, frame_type: u64) -> Self {
        // 0xffff would wrap to "no frame type"; larger types would be cut.
        debug_assert!(frame_type <= 0xfffe, "frame type does not fit device::Error");
        Self::pack(code, (frame_type as u32).wrapping_add(1) << 16)
    }

    /// `code` with no frame type.
    pub(crate) const fn bare(code: TransportErrorCode) -> Self {
        Self::pack(code, 0)
    }

    const fn pack(code: TransportErrorCode, frame_bits: u32) -> Self {
        debug_assert!(code.0 <= CODE_MASK as u64, "error code does not fit device::Error");
        match NonZeroU32::new(frame_bits | SET | (code.0 as u32 & CODE_MASK)) {
            Some(v) => Self(v),
            // Not reached: bit 15 is set.
            None => Self(NonZeroU32::MIN),
        }
    }

    /// PROTOCOL_VIOLATION on a frame of type `frame_type`.
    pub(crate) const fn violation(frame_type: u64) -> Self {
        Self::frame(TransportErrorCode::PROTOCOL_VIOLATION, frame_type)
    }

    /// RFC 9001 §4.8: a TLS error is CRYPTO_ERROR (0x0100 + alert) or the transport code
    /// the TLS layer chose, on the CRYPTO frame.
    pub(crate) const fn tls(e: mote_tls::Error) -> Self {
        Self::frame(TransportErrorCode(e.quic_error_code()), types::CRYPTO)
    }

    /// The transport error code.
    pub(crate) const fn code(self) -> TransportErrorCode {
        TransportErrorCode((self.0.get() & CODE_MASK) as u64)
    }

    /// The frame type, if any.
    pub(crate) const fn frame_type(self) -> Option<u64> {
        match (self.0.get() >> 16).checked_sub(1) {
            Some(t) => Some(t as u64),
            None => None,
        }
    }
}

impl From<Error> for ConnectionClose {
    fn from(e: Error) -> Self {
        Self::transport(e.code(), e.frame_type())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(e: Error) -> (u64, Option<u64>, bool) {
        let c = ConnectionClose::from(e);
        (c.code, c.frame_type, c.application)
    }

    #[test]
    fn frame_type_none_and_zero_differ() {
        let code = TransportErrorCode::INTERNAL_ERROR;
        assert_eq!(close(Error::bare(code)), (0x01, None, false));
        assert_eq!(close(Error::frame(code, 0)), (0x01, Some(0), false));
        // NO_ERROR with no frame type still packs to a non-zero value.
        assert_eq!(close(Error::bare(TransportErrorCode::NO_ERROR)), (0, None, false));
    }

    #[test]
    fn largest_frame_type_round_trips() {
        let e = Error::frame(TransportErrorCode::FRAME_ENCODING_ERROR, 0xfffe);
        assert_eq!(close(e), (0x07, Some(0xfffe), false));
        // The device's own largest types: DATAGRAM, HANDSHAKE_DONE, STREAM with every flag.
        for t in [types::DATAGRAM_LEN, types::HANDSHAKE_DONE, types::STREAM_MAX] {
            assert_eq!(Error::violation(t).frame_type(), Some(t));
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "frame type does not fit")]
    fn frame_type_0xffff_is_not_silently_none() {
        // 0xffff + 1 wraps to 0 in 16 bits: it would read back as "no frame type".
        let _ = Error::violation(0xffff);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "error code does not fit")]
    fn code_above_15_bits_is_not_silently_cut() {
        let _ = Error::bare(TransportErrorCode(0x8000));
    }

    #[test]
    fn every_transport_and_crypto_code_round_trips() {
        for code in (0..=0x10).chain(0x100..=0x1ff) {
            let e = Error::frame(TransportErrorCode(code), types::CRYPTO);
            assert_eq!(close(e), (code, Some(types::CRYPTO), false));
            assert_eq!(Error::bare(TransportErrorCode(code)).code().0, code);
        }
    }

    #[test]
    fn tls_errors_are_crypto_errors_on_the_crypto_frame() {
        let e = mote_tls::Error::Alert(mote_tls::Alert::BadCertificate);
        assert_eq!(close(Error::tls(e)), (0x100 + 42, Some(types::CRYPTO), false));
        let e = mote_tls::Error::Transport(0x08);
        assert_eq!(close(Error::tls(e)), (0x08, Some(types::CRYPTO), false));
    }
}
