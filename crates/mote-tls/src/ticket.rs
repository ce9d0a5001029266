//! Session tickets: the client's stored form ([`Ticket`]), and (feature `server`) the
//! server's stateless, AEAD-sealed tickets and the bounded anti-replay register for 0-RTT.

use mote_crypto::AeadAlgorithm;

use crate::Error;

/// A session ticket received by the client (RFC 8446 §4.6.1), lent to
/// [`crate::QuicHooks::new_ticket`] and given back to [`crate::ClientSession::new`] to resume.
///
/// It borrows: store it with [`Ticket::encode`] and read it back with [`Ticket::decode`].
/// RFC 9000 §7.4.1 has the client remember the server's transport parameters with the
/// ticket for 0-RTT: the session leaves [`Ticket::server_transport_parameters`] empty (it
/// keeps no copy of them), and the QUIC layer fills them in before encoding, e.g.
/// `Ticket { server_transport_parameters: &remembered, ..*ticket }.encode(&mut out)`.
#[derive(Clone, Copy)]
pub struct Ticket<'a> {
    /// The opaque ticket: the PSK identity to offer.
    pub identity: &'a [u8],
    /// The resumption PSK (RFC 8446 §4.6.1). Secret: keep it as safe as a private key.
    pub psk: &'a [u8],
    /// The suite of the connection that issued the ticket; the PSK's hash is its hash, and
    /// 0-RTT is sent with it (RFC 8446 §4.2.10).
    pub suite: AeadAlgorithm,
    /// ticket_age_add.
    pub age_add: u32,
    /// ticket_lifetime in seconds (already capped at 604800).
    pub lifetime_s: u32,
    /// The server allows 0-RTT with this ticket (early_data with max_early_data_size
    /// 0xffffffff, RFC 9001 §4.6.1).
    pub early_data: bool,
    /// The ALPN protocol of the issuing connection; 0-RTT is only offered when it is among
    /// the protocols the client offers (RFC 8446 §4.2.10).
    pub alpn: &'a [u8],
    /// The server's transport parameters remembered for 0-RTT (RFC 9000 §7.4.1), encoded;
    /// empty when lent by the session (see above).
    pub server_transport_parameters: &'a [u8],
}

impl core::fmt::Debug for Ticket<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ticket")
            .field("identity_len", &self.identity.len())
            .field("suite", &self.suite)
            .field("lifetime_s", &self.lifetime_s)
            .field("early_data", &self.early_data)
            .finish_non_exhaustive()
    }
}

pub(crate) const TICKET_FORMAT: u8 = 1;

impl<'a> Ticket<'a> {
    /// Serialises the ticket (format byte, suite, age_add, lifetime, flags, then the PSK,
    /// ALPN, identity and remembered transport parameters with length prefixes) into `out`;
    /// returns the length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, Error> {
        // The fixed-size fields as one block (one write on a device, not five).
        let mut head = [TICKET_FORMAT; 12];
        head[1..3].copy_from_slice(&self.suite.cipher_suite().to_be_bytes());
        head[3..7].copy_from_slice(&self.age_add.to_be_bytes());
        head[7..11].copy_from_slice(&self.lifetime_s.to_be_bytes());
        head[11] = u8::from(self.early_data);
        let mut w = crate::codec::Out::new(out);
        w.put(&head);
        w.vec(1, self.psk);
        w.vec(1, self.alpn);
        w.vec(2, self.identity);
        w.vec(2, self.server_transport_parameters);
        w.finish()
    }

    /// Reads a ticket written by [`Ticket::encode`].
    pub fn decode(bytes: &'a [u8]) -> Result<Self, Error> {
        // Every field read, one error check at the end (issue 8: see `In`).
        let mut r = crate::codec::In::new(bytes);
        let format = r.u8();
        r.check(format == TICKET_FORMAT, Error::IllegalParameter);
        let suite = AeadAlgorithm::from_cipher_suite(r.u16());
        r.check(suite.is_some(), Error::IllegalParameter);
        let age_add = r.u32();
        let lifetime_s = r.u32();
        let early_data = r.u8() != 0;
        let psk = r.vec(1, 1);
        let alpn = r.vec(1, 0);
        let identity = r.vec(2, 1);
        let server_transport_parameters = r.vec(2, 0);
        r.end();
        r.finish()?;
        let suite = suite.ok_or(Error::IllegalParameter)?;
        Ok(Self {
            identity,
            psk,
            suite,
            age_add,
            lifetime_s,
            early_data,
            alpn,
            server_transport_parameters,
        })
    }
}

#[cfg(feature = "server")]
pub(crate) use server::{open_ticket, seal_ticket, strike_id, SealedState, MAX_TICKET_LEN};
#[cfg(feature = "server")]
pub use server::{AntiReplay, ReplayCheck, StrikeRegister};

#[cfg(feature = "server")]
mod server {
    use mote_crypto::{AeadKey as _, CryptoProvider, Hash as _, HashAlgorithm, NONCE_LEN, TAG_LEN};

    use super::*;
    use crate::codec::{Reader, Writer};
    use crate::config::TicketKey;

    /// Longest ticket the server issues or tries to open.
    pub(crate) const MAX_TICKET_LEN: usize = 512;
    const KEY_ID_LEN: usize = 4;
    const STATE_FORMAT: u8 = 1;

    /// The resumption state a server seals into a ticket.
    ///
    /// ```text
    /// ticket    = key_id[4] || nonce[12] || AEAD-Seal(key, nonce, aad, state) || tag[16]
    /// aad       = key_id[4] || context(4)
    /// state     = format(1) || suite(2) || issued_ms(8) || lifetime_s(4) || age_add(4)
    ///             || flags(1: bit 0 = 0-RTT allowed, bit 1 = client authenticated)
    ///             || early_context_hash[16] || [client_key_index(4) || client_key_hash[16]]
    ///             || psk<1..255> || alpn<0..255>
    /// ```
    ///
    /// The client key fields are present when bit 1 is set: the index of the
    /// [`crate::ClientAuth::allowed`] key the client proved it holds, and the first 16 bytes
    /// of SHA-256 over that key, so a resumption still names that key and stops working once
    /// the key is no longer allowed.
    ///
    /// The context ([`crate::QuicHooks::ticket_context`]; QUIC's version, RFC 9369 §5) is
    /// authenticated, not stored: a ticket presented under another context fails to open
    /// like a forged one, and costs no byte.
    #[derive(Clone, Copy)]
    pub(crate) struct SealedState<'a> {
        pub(crate) suite: AeadAlgorithm,
        pub(crate) issued_ms: u64,
        pub(crate) lifetime_s: u32,
        pub(crate) age_add: u32,
        pub(crate) early_data: bool,
        pub(crate) early_context_hash: [u8; 16],
        /// The client's authenticated key: its index in `ClientAuth::allowed` and the
        /// [`strike_id`] of its SubjectPublicKeyInfo.
        pub(crate) client_key: Option<(u32, [u8; 16])>,
        pub(crate) psk: &'a [u8],
        pub(crate) alpn: &'a [u8],
    }

    /// The associated data of a ticket: its key id and the context it is bound to.
    fn associated_data(id: &[u8; KEY_ID_LEN], context: u32) -> [u8; KEY_ID_LEN + 4] {
        let mut aad = [0u8; KEY_ID_LEN + 4];
        let (a, b) = aad.split_at_mut(KEY_ID_LEN);
        a.copy_from_slice(id);
        b.copy_from_slice(&context.to_be_bytes());
        aad
    }

    /// Seals `state` under `key`, bound to `context`, into `out`; returns the ticket length.
    pub(crate) fn seal_ticket<P: CryptoProvider + ?Sized>(
        provider: &P,
        key: &TicketKey<'_>,
        nonce: &[u8; NONCE_LEN],
        state: &SealedState<'_>,
        context: u32,
        out: &mut [u8],
    ) -> Result<usize, Error> {
        let mut w = Writer::new(out);
        w.put(&key.id)?;
        w.put(nonce)?;
        let body_start = w.position();
        w.u8(STATE_FORMAT)?;
        w.u16(state.suite.cipher_suite())?;
        w.put(&state.issued_ms.to_be_bytes())?;
        w.u32(state.lifetime_s)?;
        w.u32(state.age_add)?;
        w.u8(u8::from(state.early_data) | (u8::from(state.client_key.is_some()) << 1))?;
        w.put(&state.early_context_hash)?;
        if let Some((index, hash)) = &state.client_key {
            w.u32(*index)?;
            w.put(hash)?;
        }
        w.vec(1, state.psk)?;
        w.vec(1, state.alpn)?;
        let body_end = w.position();
        w.put(&[0; TAG_LEN])?;
        let total = w.position();
        let aead = provider.aead_key(key.aead, key.key)?;
        let body = out.get_mut(body_start..body_end).ok_or(Error::BufferTooSmall)?;
        let tag = aead.seal_in_place(nonce, &associated_data(&key.id, context), body)?;
        out.get_mut(body_end..total).ok_or(Error::BufferTooSmall)?.copy_from_slice(&tag);
        Ok(total)
    }

    /// Opens a ticket sealed by one of `keys` under `context` (copied into `scratch` and
    /// decrypted there). `None` for anything that is not a valid ticket of ours for this
    /// context: the server then ignores the PSK identity (RFC 8446 §4.2.11).
    pub(crate) fn open_ticket<'s, P: CryptoProvider + ?Sized>(
        provider: &P,
        keys: &[TicketKey<'_>],
        ticket: &[u8],
        context: u32,
        scratch: &'s mut [u8; MAX_TICKET_LEN],
    ) -> Option<SealedState<'s>> {
        let mut r = Reader::new(ticket);
        let id = r.array::<KEY_ID_LEN>().ok()?;
        let nonce = r.array::<NONCE_LEN>().ok()?;
        let sealed = r.rest();
        let body_len = sealed.len().checked_sub(TAG_LEN)?;
        let (body, tag) = sealed.split_at_checked(body_len)?;
        let tag: &[u8; TAG_LEN] = tag.try_into().ok()?;
        let key = keys.iter().find(|k| k.id == *id)?;
        let aead = provider.aead_key(key.aead, key.key).ok()?;
        let plain = scratch.get_mut(..body_len)?;
        plain.copy_from_slice(body);
        // RFC 9369 §5: "Servers MUST validate the originating version of any session
        // ticket ... and not accept one issued from a different version": the version (the
        // context) is in the associated data, so such a ticket does not open.
        aead.open_in_place(nonce, &associated_data(id, context), plain, tag).ok()?;
        let plain: &'s [u8] = plain;
        let mut r = Reader::new(plain);
        if r.u8().ok()? != STATE_FORMAT {
            return None;
        }
        let suite = AeadAlgorithm::from_cipher_suite(r.u16().ok()?)?;
        let issued_ms = u64::from_be_bytes(*r.array::<8>().ok()?);
        let lifetime_s = r.u32().ok()?;
        let age_add = r.u32().ok()?;
        let flags = r.u8().ok()?;
        let early_data = flags & 1 != 0;
        let early_context_hash = *r.array::<16>().ok()?;
        let client_key =
            if flags & 2 != 0 { Some((r.u32().ok()?, *r.array::<16>().ok()?)) } else { None };
        let psk = r.vec(1, 1).ok()?;
        let alpn = r.vec(1, 0).ok()?;
        r.finish().ok()?;
        Some(SealedState {
            suite,
            issued_ms,
            lifetime_s,
            age_add,
            early_data,
            early_context_hash,
            client_key,
            psk,
            alpn,
        })
    }

    /// The anti-replay key of a ticket: the first 16 bytes of SHA-256(ticket). Each ticket
    /// is sealed with a fresh random nonce, so the key is unique per issued ticket.
    pub(crate) fn strike_id<P: CryptoProvider + ?Sized>(
        provider: &P,
        data: &[u8],
    ) -> Result<[u8; 16], Error> {
        let mut h = provider.hash(HashAlgorithm::Sha256)?;
        h.update(data);
        let d = h.finish();
        let mut id = [0u8; 16];
        id.copy_from_slice(d.as_ref().get(..16).ok_or(Error::BadLength)?);
        Ok(id)
    }

    /// The verdict of an anti-replay check.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ReplayCheck {
        /// First use: 0-RTT may be accepted (the use is now recorded).
        Fresh,
        /// Seen before: reject 0-RTT (the handshake itself goes on).
        Replayed,
        /// No room to record the use: reject 0-RTT (the handshake itself goes on).
        Full,
    }

    /// Records single uses of tickets for 0-RTT (RFC 8446 §8.1). Shared by every connection
    /// (and thread) of a server, hence `&self` and the `Sync` bound where it is configured:
    /// implement it over the platform's lock around a [`StrikeRegister`], e.g.
    ///
    /// ```
    /// use mote_tls::{AntiReplay, ReplayCheck, StrikeRegister};
    /// struct Register(std::sync::Mutex<StrikeRegister<4096>>);
    /// impl AntiReplay for Register {
    ///     fn check_and_insert(&self, id: &[u8; 16], now_ms: u64, expires_ms: u64) -> ReplayCheck {
    ///         match self.0.lock() {
    ///             Ok(mut r) => r.check_and_insert(id, now_ms, expires_ms),
    ///             Err(_) => ReplayCheck::Full, // a poisoned lock: refuse 0-RTT
    ///         }
    ///     }
    /// }
    /// ```
    pub trait AntiReplay {
        /// Records `id` as used at `now_ms`, remembered until `expires_ms` (the ticket's
        /// expiry), and tells whether it had been used before.
        fn check_and_insert(&self, id: &[u8; 16], now_ms: u64, expires_ms: u64) -> ReplayCheck;
    }

    /// A fixed-capacity strike register: `N` entries of 24 bytes. Entries expire with their
    /// ticket; when all `N` are live, new 0-RTT attempts are rejected ([`ReplayCheck::Full`])
    /// — memory stays bounded and replay stays impossible, at the cost of 1-RTT fallbacks.
    #[derive(Debug)]
    pub struct StrikeRegister<const N: usize> {
        ids: [[u8; 16]; N],
        expiry: [u64; N],
        len: usize,
    }

    impl<const N: usize> Default for StrikeRegister<N> {
        fn default() -> Self {
            Self::new()
        }
    }

    impl<const N: usize> StrikeRegister<N> {
        /// An empty register.
        pub const fn new() -> Self {
            Self { ids: [[0; 16]; N], expiry: [0; N], len: 0 }
        }

        /// Live entries.
        pub fn len(&self) -> usize {
            self.len
        }

        /// True when nothing is recorded.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// See [`AntiReplay::check_and_insert`].
        pub fn check_and_insert(
            &mut self,
            id: &[u8; 16],
            now_ms: u64,
            expires_ms: u64,
        ) -> ReplayCheck {
            // Drop expired entries (swap-remove), then look for `id`.
            let mut i = 0;
            while i < self.len.min(N) {
                let expired = self.expiry.get(i).is_none_or(|e| *e <= now_ms);
                if expired {
                    let last = self.len - 1;
                    self.ids.swap(i, last);
                    self.expiry.swap(i, last);
                    self.len = last;
                } else {
                    i += 1;
                }
            }
            let live = self.ids.get(..self.len).unwrap_or(&[]);
            if live.iter().any(|x| crate::ct_eq(x, id)) {
                return ReplayCheck::Replayed;
            }
            match (self.ids.get_mut(self.len), self.expiry.get_mut(self.len)) {
                (Some(slot), Some(exp)) => {
                    *slot = *id;
                    *exp = expires_ms;
                    self.len += 1;
                    ReplayCheck::Fresh
                }
                _ => ReplayCheck::Full,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticket_round_trip() {
        let t = Ticket {
            identity: b"ticket",
            psk: &[7; 32],
            suite: AeadAlgorithm::Aes128Gcm,
            age_add: 0x01020304,
            lifetime_s: 3600,
            early_data: true,
            alpn: b"h3",
            server_transport_parameters: b"\x04\x04\x80\x10\x00\x00",
        };
        let mut buf = [0u8; 128];
        let n = t.encode(&mut buf).unwrap();
        let d = Ticket::decode(&buf[..n]).unwrap();
        assert_eq!((d.identity, d.psk, d.alpn), (t.identity, t.psk, t.alpn));
        assert_eq!(d.server_transport_parameters, t.server_transport_parameters);
        assert_eq!(
            (d.suite, d.age_add, d.lifetime_s, d.early_data),
            (t.suite, 0x01020304, 3600, true)
        );
        assert!(Ticket::decode(&buf[..n - 1]).is_err());
    }

    #[cfg(feature = "server")]
    #[test]
    fn strike_register_bounds_and_expiry() {
        let mut r = StrikeRegister::<2>::new();
        assert_eq!(r.check_and_insert(&[1; 16], 0, 100), ReplayCheck::Fresh);
        assert_eq!(r.check_and_insert(&[1; 16], 10, 100), ReplayCheck::Replayed);
        assert_eq!(r.check_and_insert(&[2; 16], 10, 50), ReplayCheck::Fresh);
        assert_eq!(r.check_and_insert(&[3; 16], 20, 100), ReplayCheck::Full);
        // [2] expires at 50: room again, [1] still remembered.
        assert_eq!(r.check_and_insert(&[3; 16], 60, 100), ReplayCheck::Fresh);
        assert_eq!(r.check_and_insert(&[1; 16], 60, 100), ReplayCheck::Replayed);
        assert_eq!(r.len(), 2);
    }

    #[cfg(feature = "server")]
    #[test]
    fn sealed_ticket_round_trip_and_tamper() {
        use crate::config::TicketKey;
        let p = mote_crypto::rustcrypto::RustCrypto;
        let keys = [
            TicketKey { id: *b"new!", aead: AeadAlgorithm::Aes128Gcm, key: &[9; 16] },
            TicketKey { id: *b"old!", aead: AeadAlgorithm::Aes128Gcm, key: &[8; 16] },
        ];
        let state = SealedState {
            suite: AeadAlgorithm::ChaCha20Poly1305,
            issued_ms: 123_456_789_000,
            lifetime_s: 7200,
            age_add: 42,
            early_data: true,
            early_context_hash: [5; 16],
            client_key: Some((7, [6; 16])),
            psk: &[1; 32],
            alpn: b"h3",
        };
        let mut t = [0u8; MAX_TICKET_LEN];
        let n = seal_ticket(&p, &keys[1], &[3; 12], &state, 1, &mut t).unwrap();
        let mut scratch = [0u8; MAX_TICKET_LEN];
        let o = open_ticket(&p, &keys, &t[..n], 1, &mut scratch).unwrap();
        assert_eq!(
            (o.suite, o.issued_ms, o.lifetime_s, o.age_add),
            (state.suite, state.issued_ms, 7200, 42)
        );
        assert!(o.early_data);
        assert_eq!((o.psk, o.alpn, o.early_context_hash), (&[1u8; 32][..], &b"h3"[..], [5; 16]));
        assert_eq!(o.client_key, Some((7, [6; 16])));
        for i in 0..n {
            let mut bad = t;
            bad[i] ^= 1;
            assert!(open_ticket(&p, &keys, &bad[..n], 1, &mut scratch).is_none(), "byte {i}");
        }
        assert!(open_ticket(&p, &keys[..1], &t[..n], 1, &mut scratch).is_none());
        // RFC 9369 §5: sealed under context 1 (QUIC v1), it does not open under another
        // (v2's version number), nor under none.
        for other in [0x6b33_43cf, 0] {
            assert!(open_ticket(&p, &keys, &t[..n], other, &mut scratch).is_none(), "{other:x}");
        }
    }

    /// Review finding: the server opened tickets into plain stack arrays, so every
    /// resumption left the client's decrypted resumption PSK behind on the server's stack.
    /// The server now opens them into a `Zeroizing` buffer; this checks that the decrypted
    /// state (the PSK above all) lives only in that buffer, so erasing it erases the PSK.
    #[cfg(feature = "server")]
    #[test]
    fn review_ticket_plaintext_only_in_scratch() {
        use crate::config::TicketKey;
        use zeroize::Zeroize;
        let p = mote_crypto::rustcrypto::RustCrypto;
        let keys = [TicketKey { id: *b"key!", aead: AeadAlgorithm::Aes128Gcm, key: &[9; 16] }];
        let state = SealedState {
            suite: AeadAlgorithm::Aes128Gcm,
            issued_ms: 1,
            lifetime_s: 60,
            age_add: 0,
            early_data: false,
            early_context_hash: [0; 16],
            client_key: None,
            psk: &[0x5a; 32],
            alpn: b"h3",
        };
        let mut t = [0u8; MAX_TICKET_LEN];
        let n = seal_ticket(&p, &keys[0], &[3; 12], &state, 0, &mut t).unwrap();
        assert!(!t[..n].windows(32).any(|w| w == [0x5a; 32]), "sealed ticket holds the PSK");
        let mut scratch = zeroize::Zeroizing::new([0u8; MAX_TICKET_LEN]);
        let range = scratch.as_ptr_range();
        let o = open_ticket(&p, &keys, &t[..n], 0, &mut scratch).unwrap();
        assert_eq!(o.psk, &[0x5a; 32]);
        assert!(range.contains(&o.psk.as_ptr()) && range.contains(&o.alpn.as_ptr()));
        // What dropping the buffer does.
        scratch.zeroize();
        assert_eq!(*scratch, [0; MAX_TICKET_LEN]);
    }
}
