//! The QUIC ↔ TLS interface (RFC 9001 §4): encryption levels, the hooks through which a
//! handshake session hands QUIC its output, and the receive buffer for partial messages.
//!
//! # Shape
//! A session ([`crate::ClientSession`], [`crate::ServerSession`]) is driven by two calls:
//!
//! * `start(hooks)` (client only) writes the ClientHello;
//! * `read_handshake(level, bytes, hooks)` takes CRYPTO stream bytes, in order, for one
//!   encryption level.
//!
//! Everything the session produces goes out *during* those calls through the caller's
//! [`QuicHooks`]: handshake bytes are written straight into QUIC's CRYPTO send buffer for
//! their level ([`QuicHooks::send_buffer`] / [`QuicHooks::sent`]), traffic secrets are lent
//! for QUIC to derive packet-protection keys from ([`QuicHooks::install_secrets`]), and the
//! peer's transport parameters, the 0-RTT verdict, handshake completion and session tickets
//! are reported as they become known.
//!
//! Why hooks rather than polling: QUIC must keep every CRYPTO byte it sends until that byte
//! is acknowledged, so it owns a send buffer per level anyway. Writing into that buffer
//! directly means the session needs no transmit buffer of its own, no copy, and no
//! "resumable write" bookkeeping — the caller's buffer is the only copy of a flight, however
//! large the certificate chain. Likewise, secrets and the peer's transport parameters are
//! lent while the session still holds them, so nothing waits in the session to be polled.
//! The same pattern is BoringSSL's QUIC API (`set_read_secret`, `add_handshake_data`).
//!
//! # Contract for the caller
//! * Feed bytes per level strictly in order (QUIC's CRYPTO reassembly does that). Complete
//!   messages are processed straight from the caller's slice; only a trailing partial
//!   message is copied into the session's receive buffer ([`RxBuffer`], `RX` bytes).
//! * A message longer than `RX` is refused with
//!   [`Error::Transport`]`(`[`transport_error::CRYPTO_BUFFER_EXCEEDED`]`)`.
//! * Bytes at a level other than the one a partial message is waiting on, or a message at a
//!   level the handshake has left, are errors (RFC 9001 §4.1.3).
//! * Every [`Error`] is fatal: close the connection with [`Error::quic_error_code`]
//!   (CRYPTO_ERROR 0x0100 + alert, RFC 9001 §4.8, or a transport code). Later calls return
//!   the same error.
//!
//! [`transport_error::CRYPTO_BUFFER_EXCEEDED`]: crate::transport_error::CRYPTO_BUFFER_EXCEEDED

use mote_crypto::{AeadAlgorithm, CryptoRng, Secret};

pub use crate::ticket::Ticket;

use crate::msgs::{message_len, split_message, HandshakeMessage};
use crate::{transport_error, Error};

/// The encryption levels that carry CRYPTO frames (RFC 9001 §4.1.4). 0-RTT packets carry
/// none, so 0-RTT appears only as a [`KeyLevel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Initial packets: ClientHello, ServerHello, HelloRetryRequest.
    Initial,
    /// Handshake packets: EncryptedExtensions through the Finished messages.
    Handshake,
    /// 1-RTT packets: NewSessionTicket.
    OneRtt,
}

/// Which packet-protection keys a set of secrets is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyLevel {
    /// 0-RTT: only the client_early_traffic_secret (client → server).
    ZeroRtt,
    /// Handshake: client_/server_handshake_traffic_secret.
    Handshake,
    /// 1-RTT: client_/server_application_traffic_secret_0. QUIC derives later generations
    /// itself with "quic ku" (RFC 9001 §6).
    OneRtt,
}

/// Traffic secrets for one key level, lent to [`QuicHooks::install_secrets`]. QUIC derives
/// its packet-protection key, IV and header-protection key from each with HKDF-Expand-Label
/// "quic key" / "quic iv" / "quic hp" and the suite's hash (RFC 9001 §5.1).
#[derive(Clone, Copy, Debug)]
pub struct Secrets<'a> {
    /// The level these secrets protect.
    pub level: KeyLevel,
    /// The negotiated cipher suite (its AEAD, and its hash for HKDF).
    pub suite: AeadAlgorithm,
    /// The client → server secret (always present).
    pub client: &'a Secret,
    /// The server → client secret (`None` for 0-RTT).
    pub server: Option<&'a Secret>,
}

/// Room for outgoing handshake bytes, lent by [`QuicHooks::send_buffer`].
#[derive(Debug)]
pub struct SendBuffer<'a> {
    /// Free space at the end of QUIC's CRYPTO send buffer for the level. The session writes
    /// one handshake message at its start, then reports the length with [`QuicHooks::sent`].
    pub space: &'a mut [u8],
    /// This endpoint's encoded QUIC transport parameters (RFC 9001 §8.2), to be copied into
    /// the ClientHello or EncryptedExtensions. Lent here, next to the send space, so the
    /// session never stores a copy.
    pub transport_parameters: &'a [u8],
}

/// What a handshake session needs from, and reports to, the QUIC connection.
///
/// The session calls these during [`crate::ClientSession::start`] and `read_handshake`;
/// none is called at any other time. Methods with a default body are notifications a
/// caller may ignore.
pub trait QuicHooks {
    /// The caller's random number generator (client random, key shares, ticket nonces).
    fn rng(&mut self) -> &mut dyn CryptoRng;

    /// Free space in QUIC's CRYPTO send buffer for `level`, and the local transport
    /// parameters. Too little space fails the handshake with internal_error
    /// ([`Error::BufferTooSmall`]); see the crate docs for the sizes a flight needs.
    fn send_buffer(&mut self, level: Level) -> SendBuffer<'_>;

    /// The session wrote `len` bytes at the start of the last [`QuicHooks::send_buffer`] for
    /// `level`: append them to that level's CRYPTO stream.
    fn sent(&mut self, level: Level, len: usize);

    /// New traffic secrets (RFC 9001 §4.1.4). Handshake and 1-RTT secrets come for both
    /// directions at once; 0-RTT only for client → server. An error (e.g. a suite QUIC
    /// cannot build keys for) fails the handshake.
    ///
    /// A server gets its 1-RTT secrets with its Finished, before the handshake completes:
    /// it may send 0.5-RTT data but must not process 1-RTT packets until
    /// [`QuicHooks::handshake_complete`] (RFC 9001 §5.7). A client gets them after writing
    /// its Finished.
    fn install_secrets(&mut self, secrets: Secrets<'_>) -> Result<(), Error>;

    /// The peer's quic_transport_parameters extension data, undecoded (RFC 9001 §8.2).
    /// Return [`Error::Transport`] (e.g. TRANSPORT_PARAMETER_ERROR) if they do not decode.
    fn peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), Error>;

    /// Client: whether the server accepted the 0-RTT data offered (EncryptedExtensions
    /// early_data; a HelloRetryRequest also rejects it). Server: whether it accepted the
    /// client's offer. Called only when 0-RTT was offered.
    fn early_data(&mut self, _accepted: bool) {}

    /// The handshake is complete (RFC 9001 §4.1.1): the client sent its Finished, or the
    /// server verified the client's. On the server it is also confirmed (§4.1.2); a client
    /// is confirmed when QUIC receives HANDSHAKE_DONE.
    fn handshake_complete(&mut self) {}

    /// Client: a NewSessionTicket to keep for resumption (RFC 8446 §4.6.1).
    fn new_ticket(&mut self, _ticket: &Ticket<'_>) {}

    /// Server: the context this connection's session tickets are bound to. It is
    /// authenticated with each ticket sealed (`issuing`: the context the connection ended
    /// up in) and required of each ticket a ClientHello offers (not `issuing`: the context
    /// the client started in); a ticket sealed under another context does not open, so the
    /// client gets a full handshake without 0-RTT. QUIC binds tickets to its version (RFC
    /// 9369 §5, RFC 9368 §7.2), which compatible version negotiation may change in between.
    /// The default binds nothing (context 0 both ways).
    fn ticket_context(&self, _issuing: bool) -> u32 {
        0
    }

    /// The ClientHello's random (a client's own when it writes its ClientHello, a server's
    /// peer's when it reads one), reported before any secret derived from that hello. Only
    /// for key logging (the SSLKEYLOGFILE format names secrets by client random); the
    /// default ignores it.
    fn client_random(&mut self, _random: &[u8; 32]) {}
}

/// Receive-side buffer for one partial handshake message, `N` bytes of RAM.
///
/// RFC 9000 §7.5 asks endpoints to buffer at least 4096 bytes of CRYPTO data; with `N`
/// smaller than the peer's largest message (a certificate chain), that message is refused
/// with CRYPTO_BUFFER_EXCEEDED.
#[derive(Debug)]
pub struct RxBuffer<const N: usize> {
    buf: [u8; N],
    len: usize,
    level: Level,
}

impl<const N: usize> RxBuffer<N> {
    pub(crate) const fn new() -> Self {
        Self { buf: [0; N], len: 0, level: Level::Initial }
    }

    /// [`RxBuffer::new`] written to `dst` in place: the `N`-byte buffer is zeroed where it
    /// lives, never built on the stack and copied (issue 8: a device has ~3 KB of stack).
    ///
    /// # Safety
    /// `dst` must be valid and aligned for a write of `Self`; what it held is not dropped.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn write_new(dst: *mut Self) {
        // SAFETY: `dst` is valid and aligned for `Self` (the caller's contract), so are its
        // fields' addresses (`addr_of_mut!` makes no reference to uninitialized memory);
        // `[u8; N]` is valid all-zero and `write_bytes` of one array zeroes all `N` bytes;
        // nothing is dropped.
        unsafe {
            core::ptr::addr_of_mut!((*dst).buf).write_bytes(0, 1);
            core::ptr::addr_of_mut!((*dst).len).write(0);
            core::ptr::addr_of_mut!((*dst).level).write(Level::Initial);
        }
    }

    /// Splits `data` (received at `level`) into complete messages, calling `process` on each
    /// in order, and keeps a trailing partial message. A message may start in the buffer and
    /// end in `data`.
    pub(crate) fn feed(
        &mut self,
        level: Level,
        mut data: &[u8],
        mut process: impl FnMut(Level, HandshakeMessage<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.len > 0 {
            // RFC 9001 §4.1.3: a partial message cannot continue at another level.
            if level != self.level {
                return Err(Error::Transport(transport_error::PROTOCOL_VIOLATION));
            }
            // Complete the header first, then the body.
            let have_header = self.len >= crate::msgs::HEADER_LEN;
            if !have_header {
                let take = (crate::msgs::HEADER_LEN - self.len).min(data.len());
                let (head, rest) = data.split_at_checked(take).ok_or(Error::Truncated)?;
                self.append(head)?;
                data = rest;
            }
            let Some(total) = message_len(self.filled()) else {
                return Ok(()); // still waiting for the header
            };
            if total > N {
                return Err(Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED));
            }
            let take = total.saturating_sub(self.len).min(data.len());
            let (head, rest) = data.split_at_checked(take).ok_or(Error::Truncated)?;
            self.append(head)?;
            data = rest;
            if self.len < total {
                return Ok(());
            }
            let filled = self.buf.get(..self.len).ok_or(Error::Truncated)?;
            let (msg, _) = split_message(filled).ok_or(Error::Truncated)?;
            let result = process(level, msg);
            self.len = 0;
            result?;
        }
        while let Some((msg, rest)) = split_message(data) {
            process(level, msg)?;
            data = rest;
        }
        if !data.is_empty() {
            if message_len(data).is_some_and(|total| total > N) || data.len() > N {
                return Err(Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED));
            }
            self.level = level;
            self.append(data)?;
        }
        Ok(())
    }

    /// Whether a partial message is waiting.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// RFC 9001 §4.1.3: once the handshake has moved on to `current`, a partial message
    /// still waiting at an earlier level can never be completed.
    pub(crate) fn check_not_stranded(&self, current: Level) -> Result<(), Error> {
        if self.len > 0 && self.level < current {
            return Err(Error::Transport(transport_error::PROTOCOL_VIOLATION));
        }
        Ok(())
    }

    fn filled(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    fn append(&mut self, data: &[u8]) -> Result<(), Error> {
        let end = self.len.checked_add(data.len()).ok_or(Error::BufferTooSmall)?;
        self.buf
            .get_mut(self.len..end)
            .ok_or(Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED))?
            .copy_from_slice(data);
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn collect<const N: usize>(
        rx: &mut RxBuffer<N>,
        level: Level,
        data: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Result<(), Error> {
        rx.feed(level, data, |_, m| {
            out.push(m.bytes.to_vec());
            Ok(())
        })
    }

    #[test]
    fn reassembles_across_every_split() {
        let stream = [20u8, 0, 0, 3, 1, 2, 3, 8, 0, 0, 0, 11, 0, 0, 1, 9];
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let mut rx = RxBuffer::<16>::new();
                let mut out = Vec::new();
                for part in [&stream[..a], &stream[a..b], &stream[b..]] {
                    collect(&mut rx, Level::Handshake, part, &mut out).unwrap();
                }
                assert_eq!(out, [&stream[..7], &stream[7..11], &stream[11..]], "{a} {b}");
                assert!(rx.is_empty());
            }
        }
    }

    #[test]
    fn partial_message_stranded_by_a_level_change() {
        let mut rx = RxBuffer::<16>::new();
        let mut out = Vec::new();
        // Half of a message at Initial: fine while the handshake is still at Initial.
        collect(&mut rx, Level::Initial, &[2u8, 0, 0, 4, 1], &mut out).unwrap();
        assert_eq!(rx.check_not_stranded(Level::Initial), Ok(()));
        // RFC 9001 §4.1.3: once the handshake is at Handshake it can never complete.
        assert_eq!(
            rx.check_not_stranded(Level::Handshake),
            Err(Error::Transport(transport_error::PROTOCOL_VIOLATION))
        );
        let empty = RxBuffer::<16>::new();
        assert_eq!(empty.check_not_stranded(Level::OneRtt), Ok(()));
    }

    #[test]
    fn oversized_and_level_change() {
        let mut rx = RxBuffer::<8>::new();
        let mut out = Vec::new();
        let big = [11u8, 0, 0, 5, 1];
        assert_eq!(
            collect(&mut rx, Level::Handshake, &big, &mut out),
            Err(Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED))
        );
        let mut rx = RxBuffer::<8>::new();
        collect(&mut rx, Level::Handshake, &[11u8, 0], &mut out).unwrap();
        assert_eq!(
            collect(&mut rx, Level::Handshake, &[0, 5], &mut out),
            Err(Error::Transport(transport_error::CRYPTO_BUFFER_EXCEEDED))
        );
        let mut rx = RxBuffer::<8>::new();
        collect(&mut rx, Level::Initial, &[2u8, 0], &mut out).unwrap();
        assert_eq!(
            collect(&mut rx, Level::Handshake, &[0, 1, 0], &mut out),
            Err(Error::Transport(transport_error::PROTOCOL_VIOLATION))
        );
    }
}
