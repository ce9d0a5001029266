//! Address-validation tokens (RFC 9000 §8.1): what a server puts in Retry packets and
//! NEW_TOKEN frames, and checks when a client's Initial carries one back.
//!
//! A token is opaque to the client. Ours is AEAD-sealed (AES-128-GCM) under a server key,
//! so only the server can read it and nobody can forge or alter it:
//!
//! ```text
//! Token {
//!   Kind (8),              'R' Retry, 'N' NEW_TOKEN (RFC 9000 §8.1.3: distinguishable)
//!   Key Id (8),            which server key sealed it (rotation: current and previous)
//!   Nonce (96),            random
//!   Sealed {               AES-128-GCM, associated data = Kind, Key Id, client address,
//!                          QUIC version
//!     Issued (64),         server clock, microseconds
//!     ODCID Length (8), Original Destination Connection ID (0..160),
//!     Retry SCID Length (8), Retry Source Connection ID (0..160),
//!   },
//!   Tag (128),
//! }
//! ```
//!
//! The client's address is bound through the associated data rather than stored: a token
//! presented from another address simply fails to open. Retry tokens bind the IP address
//! and port (they are used within one round trip); NEW_TOKEN tokens only the IP address,
//! because a client's port usually changes between connections (RFC 9000 §8.1.3).
//!
//! The QUIC version is bound the same way (RFC 9369 §5: "Servers MUST validate the
//! originating version of any session ticket or token and not accept one issued from a
//! different version"): a Retry token is sealed in the version of the Initial it answers,
//! a NEW_TOKEN token in the connection's negotiated version, and each opens only in an
//! Initial of that version.
//!
//! The client keeps at most [`TOKEN_MAX`] bytes of token (the server's Retry or NEW_TOKEN
//! token); longer tokens from other servers are not kept.

/// Longest token a client keeps and a server issues (ours are at most 80 bytes). RFC 9000
/// sets no limit; quic-go's Retry tokens are 101 bytes, so a client keeping fewer ignores
/// its Retry and never connects.
pub const TOKEN_MAX: usize = 160;

#[cfg(feature = "server")]
pub use server::*;

#[cfg(feature = "server")]
mod server {
    use core::net::SocketAddr;

    use mote_crypto::{AeadAlgorithm, AeadKey as _, CryptoProvider, TAG_LEN};

    use super::TOKEN_MAX;
    use crate::cid::{ConnectionId, MAX_CID_LEN};
    use crate::time::{Duration, Instant};
    use crate::version::Version;

    const NONCE_LEN: usize = 12;
    /// Kind, key id, nonce.
    const HEADER_LEN: usize = 2 + NONCE_LEN;
    /// Issued time, two length-prefixed connection IDs.
    const PLAIN_MAX: usize = 8 + 2 * (1 + MAX_CID_LEN);
    const _: () = assert!(HEADER_LEN + PLAIN_MAX + TAG_LEN <= TOKEN_MAX);

    /// What a token was issued for.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TokenKind {
        /// In a Retry packet (RFC 9000 §8.1.2): valid for one connection attempt, briefly.
        Retry,
        /// In a NEW_TOKEN frame (RFC 9000 §8.1.3): for future connections, valid longer.
        NewToken,
    }

    impl TokenKind {
        const fn byte(self) -> u8 {
            match self {
                TokenKind::Retry => b'R',
                TokenKind::NewToken => b'N',
            }
        }

        const fn from_byte(b: u8) -> Option<Self> {
            match b {
                b'R' => Some(TokenKind::Retry),
                b'N' => Some(TokenKind::NewToken),
                _ => None,
            }
        }
    }

    /// One AES-128-GCM token key and the id that names it in tokens.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct TokenKey {
        /// Carried in clear in each token so the right key opens it.
        pub id: u8,
        /// The key.
        pub key: [u8; 16],
    }

    impl core::fmt::Debug for TokenKey {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.debug_struct("TokenKey").field("id", &self.id).finish_non_exhaustive()
        }
    }

    /// The server's token keys and lifetimes. `current` seals; `current` and `previous`
    /// open, so a rotation ([`TokenConfig::rotate`]) does not invalidate tokens in flight.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct TokenConfig {
        /// The key new tokens are sealed with.
        pub current: TokenKey,
        /// The key before the last rotation, still accepted.
        pub previous: Option<TokenKey>,
        /// How long a Retry token is accepted (it comes back after one round trip).
        pub retry_lifetime: Duration,
        /// How long a NEW_TOKEN token is accepted.
        pub new_token_lifetime: Duration,
    }

    impl TokenConfig {
        /// Keys `current`, Retry tokens valid for 10 s, NEW_TOKEN tokens for a day.
        pub const fn new(current: TokenKey) -> Self {
            Self {
                current,
                previous: None,
                retry_lifetime: Duration::from_secs(10),
                new_token_lifetime: Duration::from_secs(24 * 3600),
            }
        }

        /// Starts sealing with `next`; the current key still opens tokens.
        pub fn rotate(&mut self, next: TokenKey) {
            self.previous = Some(self.current);
            self.current = next;
        }

        fn key(&self, id: u8) -> Option<&TokenKey> {
            if self.current.id == id {
                return Some(&self.current);
            }
            self.previous.as_ref().filter(|k| k.id == id)
        }
    }

    /// A token that opened and is within its lifetime.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct ValidToken {
        /// Retry or NEW_TOKEN.
        pub kind: TokenKind,
        /// Retry tokens: the Destination Connection ID of the client's first Initial.
        pub original_dcid: ConnectionId,
        /// Retry tokens: the Source Connection ID of our Retry packet.
        pub retry_scid: ConnectionId,
    }

    /// Why a token was refused.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TokenError {
        /// Not one of ours, altered, from another address, or sealed with a retired key.
        Invalid,
        /// Past its lifetime.
        Expired,
    }

    /// Bytes of associated data: kind, key id, IPv6(-mapped) address, port, version.
    const AAD_LEN: usize = 2 + 16 + 2 + 4;

    /// The associated data: kind, key id, the client address (the port only for Retry
    /// tokens) and the QUIC version.
    fn associated_data(
        kind: TokenKind,
        id: u8,
        addr: &SocketAddr,
        version: Version,
        out: &mut [u8; AAD_LEN],
    ) {
        out[0] = kind.byte();
        out[1] = id;
        let ip = match addr.ip() {
            core::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            core::net::IpAddr::V6(v6) => v6,
        };
        out[2..18].copy_from_slice(&ip.octets());
        let port = if kind == TokenKind::Retry { addr.port() } else { 0 };
        out[18..20].copy_from_slice(&port.to_be_bytes());
        out[20..24].copy_from_slice(&version.0.to_be_bytes());
    }

    fn put_cid(out: &mut [u8], pos: &mut usize, cid: &[u8]) -> Option<()> {
        *out.get_mut(*pos)? = u8::try_from(cid.len()).ok()?;
        out.get_mut(*pos + 1..*pos + 1 + cid.len())?.copy_from_slice(cid);
        *pos += 1 + cid.len();
        Some(())
    }

    fn get_cid(inp: &[u8], pos: &mut usize) -> Option<ConnectionId> {
        let n = usize::from(*inp.get(*pos)?);
        let cid = ConnectionId::new(inp.get(*pos + 1..*pos + 1 + n)?)?;
        *pos += 1 + n;
        Some(cid)
    }

    /// RFC 9000 §8.1.2, §8.1.3: seals a token of `kind` for a client at `addr` into `out`
    /// (at least [`TOKEN_MAX`] bytes); returns its length. `nonce` must be fresh random
    /// bytes. Retry tokens carry the client's original DCID and our Retry SCID; NEW_TOKEN
    /// tokens pass empty IDs. `version`: the QUIC version the token is for (RFC 9369 §4.1,
    /// §5: a Retry's, the version of the Initial it answers; a NEW_TOKEN token's, the
    /// connection's negotiated version).
    #[allow(clippy::too_many_arguments)]
    pub fn seal_token<P: CryptoProvider>(
        provider: &P,
        config: &TokenConfig,
        kind: TokenKind,
        addr: &SocketAddr,
        version: Version,
        now: Instant,
        original_dcid: &[u8],
        retry_scid: &[u8],
        nonce: [u8; NONCE_LEN],
        out: &mut [u8],
    ) -> Option<usize> {
        let key = &config.current;
        let mut plain = [0u8; PLAIN_MAX];
        plain[..8].copy_from_slice(&now.as_micros().to_be_bytes());
        let mut n = 8;
        put_cid(&mut plain, &mut n, original_dcid)?;
        put_cid(&mut plain, &mut n, retry_scid)?;
        let total = HEADER_LEN + n + TAG_LEN;
        let out = out.get_mut(..total)?;
        out[0] = kind.byte();
        out[1] = key.id;
        out[2..HEADER_LEN].copy_from_slice(&nonce);
        let body = out.get_mut(HEADER_LEN..HEADER_LEN + n)?;
        body.copy_from_slice(plain.get(..n)?);
        let mut aad = [0u8; AAD_LEN];
        associated_data(kind, key.id, addr, version, &mut aad);
        let aead = provider.aead_key(AeadAlgorithm::Aes128Gcm, &key.key).ok()?;
        let tag = aead.seal_in_place(&nonce, &aad, body).ok()?;
        out.get_mut(HEADER_LEN + n..total)?.copy_from_slice(&tag);
        Some(total)
    }

    /// Opens `token` presented by a client at `addr` in an Initial of `version`: the key it
    /// names must be one of ours, the address the one it was issued to, the version the one
    /// it was issued for, and it must be within the lifetime of its kind. The token is
    /// copied, not altered.
    pub fn open_token<P: CryptoProvider>(
        provider: &P,
        config: &TokenConfig,
        token: &[u8],
        addr: &SocketAddr,
        version: Version,
        now: Instant,
    ) -> Result<ValidToken, TokenError> {
        let bad = TokenError::Invalid;
        if token.len() < HEADER_LEN + 8 + 2 + TAG_LEN || token.len() > TOKEN_MAX {
            return Err(bad);
        }
        let kind = TokenKind::from_byte(token[0]).ok_or(bad)?;
        let key = config.key(token[1]).ok_or(bad)?;
        let nonce: [u8; NONCE_LEN] = token[2..HEADER_LEN].try_into().map_err(|_| bad)?;
        let body_end = token.len() - TAG_LEN;
        let tag: &[u8; TAG_LEN] = token[body_end..].try_into().map_err(|_| bad)?;
        let mut plain = [0u8; PLAIN_MAX];
        let n = body_end - HEADER_LEN;
        let body = plain.get_mut(..n).ok_or(bad)?;
        body.copy_from_slice(&token[HEADER_LEN..body_end]);
        // RFC 9369 §5: "Servers MUST validate the originating version of any ... token and
        // not accept one issued from a different version": the version is in the
        // associated data, so a token of another version does not open.
        let mut aad = [0u8; AAD_LEN];
        associated_data(kind, key.id, addr, version, &mut aad);
        let aead = provider.aead_key(AeadAlgorithm::Aes128Gcm, &key.key).map_err(|_| bad)?;
        aead.open_in_place(&nonce, &aad, body, tag).map_err(|_| bad)?;
        let issued =
            Instant::from_micros(u64::from_be_bytes(body[..8].try_into().map_err(|_| bad)?));
        let mut pos = 8;
        let original_dcid = get_cid(body, &mut pos).ok_or(bad)?;
        let retry_scid = get_cid(body, &mut pos).ok_or(bad)?;
        if pos != n {
            return Err(bad);
        }
        let lifetime = match kind {
            TokenKind::Retry => config.retry_lifetime,
            TokenKind::NewToken => config.new_token_lifetime,
        };
        // A token from the future (a clock reset) is refused like an expired one.
        if issued > now || now - issued > lifetime {
            return Err(TokenError::Expired);
        }
        Ok(ValidToken { kind, original_dcid, retry_scid })
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use mote_crypto::rustcrypto::RustCrypto;

        const V1: Version = Version::V1;

        fn cfg() -> TokenConfig {
            TokenConfig::new(TokenKey { id: 1, key: [7; 16] })
        }

        fn secs(s: u64) -> Instant {
            Instant::ZERO + Duration::from_secs(s)
        }

        fn a(s: &str) -> SocketAddr {
            s.parse().unwrap()
        }

        fn seal(c: &TokenConfig, kind: TokenKind, addr: &str, at: u64) -> ([u8; TOKEN_MAX], usize) {
            seal_in(c, kind, addr, Version::V1, at)
        }

        fn seal_in(
            c: &TokenConfig,
            kind: TokenKind,
            addr: &str,
            version: Version,
            at: u64,
        ) -> ([u8; TOKEN_MAX], usize) {
            let mut out = [0u8; TOKEN_MAX];
            let n = seal_token(
                &RustCrypto,
                c,
                kind,
                &a(addr),
                version,
                secs(at),
                &[1; 8],
                &[2; 20],
                [3; 12],
                &mut out,
            )
            .unwrap();
            (out, n)
        }

        #[test]
        fn retry_token_round_trip_and_bindings() {
            let c = cfg();
            let (t, n) = seal(&c, TokenKind::Retry, "10.0.0.2:5000", 100);
            assert_eq!(n, 14 + 8 + 9 + 21 + 16);
            let v =
                open_token(&RustCrypto, &c, &t[..n], &a("10.0.0.2:5000"), V1, secs(101)).unwrap();
            assert_eq!(v.kind, TokenKind::Retry);
            assert_eq!(&*v.original_dcid, &[1; 8]);
            assert_eq!(&*v.retry_scid, &[2; 20]);
            // Another port, another address: refused.
            for other in ["10.0.0.2:5001", "10.0.0.3:5000", "[::1]:5000"] {
                let r = open_token(&RustCrypto, &c, &t[..n], &a(other), V1, secs(101));
                assert_eq!(r, Err(TokenError::Invalid), "{other}");
            }
            // Expired after 10 s.
            let r = open_token(&RustCrypto, &c, &t[..n], &a("10.0.0.2:5000"), V1, secs(111));
            assert_eq!(r, Err(TokenError::Expired));
            // Any altered byte (kind, key id, nonce, body, tag) is refused.
            for i in 0..n {
                let mut bad = t;
                bad[i] ^= 0x01;
                let r = open_token(&RustCrypto, &c, &bad[..n], &a("10.0.0.2:5000"), V1, secs(101));
                assert!(r.is_err(), "byte {i}");
            }
            // Truncated or empty.
            assert!(open_token(&RustCrypto, &c, &t[..n - 1], &a("10.0.0.2:5000"), V1, secs(101))
                .is_err());
            assert!(
                open_token(&RustCrypto, &c, &[], &a("10.0.0.2:5000"), V1, Instant::ZERO).is_err()
            );
        }

        #[test]
        fn new_token_ignores_port_and_lives_longer_and_rotation() {
            let mut c = cfg();
            let (t, n) = seal(&c, TokenKind::NewToken, "10.0.0.2:5000", 100);
            let later = secs(100 + 3600);
            let v = open_token(&RustCrypto, &c, &t[..n], &a("10.0.0.2:6000"), V1, later).unwrap();
            assert_eq!(v.kind, TokenKind::NewToken);
            // After one rotation the old key still opens; after two it does not.
            c.rotate(TokenKey { id: 2, key: [8; 16] });
            assert!(open_token(&RustCrypto, &c, &t[..n], &a("10.0.0.2:1"), V1, later).is_ok());
            c.rotate(TokenKey { id: 3, key: [9; 16] });
            let r = open_token(&RustCrypto, &c, &t[..n], &a("10.0.0.2:1"), V1, later);
            assert_eq!(r, Err(TokenError::Invalid));
            // A NEW_TOKEN token cannot pass for a Retry token: the kind is authenticated.
            let c = cfg();
            let (mut t, n) = seal(&c, TokenKind::NewToken, "10.0.0.2:5000", 100);
            t[0] = b'R';
            let r = open_token(&RustCrypto, &c, &t[..n], &a("10.0.0.2:5000"), V1, later);
            assert_eq!(r, Err(TokenError::Invalid));
        }

        /// RFC 9369 §5: a token opens only in an Initial of the version it was issued for —
        /// a v1 connection's NEW_TOKEN token not in a v2 Initial, nor a v2 connection's in a
        /// v1 Initial; RFC 9369 §4.1: a Retry token not after the client switched versions.
        #[test]
        fn tokens_are_bound_to_their_version() {
            let c = cfg();
            let v2 = Version::V2;
            for kind in [TokenKind::NewToken, TokenKind::Retry] {
                for (issued, used) in [(V1, v2), (v2, V1)] {
                    let (t, n) = seal_in(&c, kind, "10.0.0.2:5000", issued, 100);
                    let addr = a("10.0.0.2:5000");
                    let r = open_token(&RustCrypto, &c, &t[..n], &addr, used, secs(101));
                    assert_eq!(r, Err(TokenError::Invalid), "{kind:?} {issued:?} in {used:?}");
                    let r = open_token(&RustCrypto, &c, &t[..n], &addr, issued, secs(101));
                    assert_eq!(r.map(|v| v.kind), Ok(kind), "{kind:?} {issued:?}");
                }
            }
        }
    }
}
