//! TLS 1.3 for QUIC (RFC 8446, RFC 9001 §4): client and server handshake state machines.
//!
//! mote-tls carries TLS 1.3 handshakes inside QUIC only. There is no record layer: handshake
//! messages travel in QUIC CRYPTO frames, and the per-level secrets (0-RTT, handshake,
//! 1-RTT) are handed to QUIC, which derives its packet-protection keys from them.
//! Everything is generic over a [`mote_crypto::CryptoProvider`], `no_std`, heap-free and
//! sans-IO; no input can make it panic.
//!
//! # The QUIC interface
//! A connection owns one session — [`ClientSession`] (always built) or [`ServerSession`]
//! (feature `server`) — and implements [`QuicHooks`] over its own state:
//!
//! ```text
//! ClientSession::new(provider, &ClientConfig, Option<Resumption>) -> ClientSession
//! ClientSession::start(&mut self, &mut impl QuicHooks) -> Result<(), Error>     // ClientHello
//! ServerSession::new(provider, &ServerConfig, now_ms: u64) -> ServerSession
//! {Client,Server}Session::read_handshake(&mut self, Level, &[u8], &mut impl QuicHooks)
//!     -> Result<(), Error>                                                     // CRYPTO bytes in
//!
//! trait QuicHooks {
//!     fn rng(&mut self) -> &mut dyn CryptoRng;
//!     fn send_buffer(&mut self, Level) -> SendBuffer<'_>;     // space + local transport params
//!     fn sent(&mut self, Level, len: usize);                  // CRYPTO bytes out
//!     fn install_secrets(&mut self, Secrets<'_>) -> Result<(), Error>;   // per KeyLevel
//!     fn peer_transport_parameters(&mut self, &[u8]) -> Result<(), Error>;
//!     fn early_data(&mut self, accepted: bool) {}             // 0-RTT verdict
//!     fn handshake_complete(&mut self) {}                     // server: also confirmed
//!     fn new_ticket(&mut self, &Ticket<'_>) {}                // client: store for resumption
//! }
//! ```
//!
//! A connection's hooks are a small adapter over its own fields, e.g.:
//!
//! ```
//! use mote_crypto::{rustcrypto::RustCrypto, CryptoRng};
//! use mote_tls::{ClientConfig, ClientSession, Error, Level, QuicHooks, SendBuffer, Secrets, ServerAuth};
//!
//! struct Conn<'a> {
//!     rng: &'a mut dyn CryptoRng,
//!     crypto_out: [([u8; 1200], usize); 3], // CRYPTO send buffers (kept until acked)
//!     local_tp: &'a [u8],
//! }
//!
//! impl QuicHooks for Conn<'_> {
//!     fn rng(&mut self) -> &mut dyn CryptoRng { &mut *self.rng }
//!     fn send_buffer(&mut self, level: Level) -> SendBuffer<'_> {
//!         let (buf, used) = &mut self.crypto_out[level as usize];
//!         SendBuffer { space: &mut buf[*used..], transport_parameters: self.local_tp }
//!     }
//!     fn sent(&mut self, level: Level, len: usize) { self.crypto_out[level as usize].1 += len; }
//!     fn install_secrets(&mut self, s: Secrets<'_>) -> Result<(), Error> {
//!         // derive "quic key" / "quic iv" / "quic hp" for s.level from s.client / s.server
//!         Ok(())
//!     }
//!     fn peer_transport_parameters(&mut self, tp: &[u8]) -> Result<(), Error> {
//!         Ok(()) // decode; Err(Error::Transport(TRANSPORT_PARAMETER_ERROR)) if invalid
//!     }
//! }
//!
//! # struct Rng(u8);
//! # impl CryptoRng for Rng {
//! #     fn fill(&mut self, d: &mut [u8]) -> Result<(), mote_crypto::Error> {
//! #         d.iter_mut().for_each(|b| { self.0 = self.0.wrapping_add(7); *b = self.0 }); Ok(())
//! #     }
//! # }
//! static PINNED: [&[u8]; 1] = [&[0x30; 44]]; // the server's SubjectPublicKeyInfo
//! static CONFIG: ClientConfig<'static> = ClientConfig {
//!     server_name: Some(b"broker.example"),
//!     alpn: &[b"h3"],
//!     server_auth: ServerAuth::RawPublicKeys(&PINNED),
//!     client_key: None,
//!     cipher_suites: &[],
//!     groups: &[],
//!     early_data: false,
//! };
//! let mut rng = Rng(0);
//! let mut conn = Conn { rng: &mut rng, crypto_out: [([0; 1200], 0); 3], local_tp: b"\x0f\x00" };
//! let mut tls = ClientSession::<RustCrypto, 1024>::new(RustCrypto, &CONFIG, None);
//! tls.start(&mut conn)?;                 // the ClientHello is now in crypto_out[Initial]
//! assert!(conn.crypto_out[0].1 > 100);
//! // later, for each in-order run of CRYPTO bytes:
//! // tls.read_handshake(Level::Initial, bytes, &mut conn)?;
//! # Ok::<(), Error>(())
//! ```
//!
//! * **Input**: CRYPTO stream bytes per [`Level`] (Initial, Handshake, 1-RTT), in order.
//!   Complete messages are processed straight from the caller's slice; a trailing partial
//!   message is kept in the session's [`RxBuffer`] of `RX` bytes (a const parameter,
//!   default 4096 as RFC 9000 §7.5 asks). A longer message fails with
//!   [`Error::Transport`]`(CRYPTO_BUFFER_EXCEEDED)`.
//! * **Output**: each handshake message is written directly into QUIC's CRYPTO send buffer
//!   for its level ([`QuicHooks::send_buffer`], then [`QuicHooks::sent`]). QUIC must keep
//!   those bytes until acknowledged anyway, so the session holds no transmit buffer and a
//!   flight of any size (a 4 KB certificate chain) costs no extra copy; the caller's buffer
//!   only has to hold the message being written. Sizes: a ClientHello is about 250 bytes
//!   plus SNI, ALPN, transport parameters and (resuming) the ticket; the client's second
//!   flight is 36–52 bytes (about 250 with a client key); a server's Handshake flight is
//!   EncryptedExtensions (~30 bytes + transport parameters), Certificate (≈100 bytes for a
//!   raw public key, the chain plus 5 bytes per certificate for X.509), CertificateVerify
//!   (≤ 80) and Finished (≤ 52); NewSessionTickets are ≈ 150 bytes each.
//! * **Keys**: [`QuicHooks::install_secrets`] lends [`Secrets`] (the suite and the client
//!   and server traffic secrets) for [`KeyLevel::ZeroRtt`] (client: when offering 0-RTT;
//!   server: when accepting it), [`KeyLevel::Handshake`] (after the ServerHello) and
//!   [`KeyLevel::OneRtt`] (after the server Finished). QUIC derives "quic key/iv/hp" from
//!   them and later key-update generations itself.
//! * **Signals**: the peer's undecoded quic_transport_parameters
//!   ([`QuicHooks::peer_transport_parameters`]), the 0-RTT verdict, handshake completion
//!   (RFC 9001 §4.1.1; on the server also confirmation, §4.1.2 — a client is confirmed by
//!   QUIC's HANDSHAKE_DONE), session tickets ([`Ticket`], with [`Ticket::encode`] /
//!   [`Ticket::decode`] for storage), and accessors for the negotiated ALPN, suite and
//!   group, [`ClientSession::export`] / [`ServerSession::export`] (RFC 8446 §7.5).
//! * **Errors**: every [`Error`] is fatal; close the connection with
//!   [`Error::quic_error_code`]: CRYPTO_ERROR 0x0100 + [`Error::alert`] (RFC 9001 §4.8), or a
//!   transport code ([`transport_error`]) for RFC 9001's own rules.
//!
//! # Authentication
//! A client always authenticates its server ([`ServerAuth`]): a pinned raw public key
//! (RFC 7250; Ed25519 or ECDSA P-256), or an external PSK (RFC 8446 §4.2.11, with (EC)DHE).
//! With feature `x509`, an X.509 chain to pinned trust anchors (rustls-webpki; certificate
//! and CertificateVerify signatures in ECDSA P-256/SHA-256 or Ed25519), checked against
//! [`ClientConfig::server_name`] — a DNS name, sent as server_name, or an IP address, which
//! RFC 6066 §3 keeps out of server_name. A server can require client raw public keys from an allow-list
//! ([`ClientAuth`]). Alerts chosen where RFC 8446 leaves a choice: a server key that is not
//! the pinned one is bad_certificate (the entry is well formed but not acceptable); a
//! signature that does not verify is decrypt_error (§4.4.3).
//!
//! # Resumption and 0-RTT (server)
//! Tickets are stateless: the resumption state is sealed with an AEAD under a
//! [`TicketKey`] whose id travels in clear, so keys rotate ([`TicketConfig`]). 0-RTT is
//! accepted only for the first identity, with the ticket's suite and ALPN, an unchanged
//! 0-RTT context (a hash of the server's 0-RTT-relevant settings), a ticket age within the
//! configured skew, and a first use recorded in an [`AntiReplay`] register — a fixed-size
//! [`StrikeRegister`]; when it is full 0-RTT is refused and the handshake goes on in 1-RTT.
//!
//! # Crypto offload (server)
//! With [`ServerConfig::defer_signatures`] the server pauses its flight after the
//! Certificate; [`ServerSession::signature_request`] names the key and the exact bytes to
//! sign, the caller signs wherever it likes (a worker core, an accelerator), and
//! [`ServerSession::complete_signature`] writes CertificateVerify and Finished and installs
//! the 1-RTT secrets. Inline signing is the default.
//!
//! # Footprint (client, Cortex-M4, `opt-level = "z"`, LTO)
//! * RAM: `ClientSession<RustCrypto, RX>` is 456 bytes + `RX` with the minimal features
//!   (AES-128-GCM, SHA-256, X25519): one transcript hash (112 bytes), the key share (64),
//!   one pair of secrets reused across phases (2 × 33: 32-byte secrets, session 11; the
//!   456 bytes are from before, with 49), the handshake secret, the client random and
//!   flags. `aes256` makes every secret 49 bytes (SHA-384's 48, `MAX_HASH_LEN`) and adds a
//!   second (SHA-384) transcript until the ServerHello,
//!   `p256` a larger key share. A raw-public-key client can use `RX` = 1024: its largest
//!   incoming messages are EncryptedExtensions and NewSessionTicket.
//! * Flash: the client state machine, codecs and key schedule take about 13 KB of text
//!   (measured with `llvm-nm` on a test image that also links X25519, SHA-256 and HMAC);
//!   the ClientHello writer alone is 2.8 KB.
//!
//! # Building blocks
//! * [`key_schedule`]: the RFC 8446 §7.1 key schedule as consuming stages
//!   ([`EarlySecret`] → [`HandshakeSecret`] → [`MasterSecret`]), the ticket PSK and exporters;
//! * [`Transcript`]: the transcript hash with the HelloRetryRequest rule and the
//!   partial-ClientHello hash for PSK binders;
//! * [`finished_verify_data`], [`psk_binder`], and the CertificateVerify signature input;
//! * [`msgs`]: borrowed-view codecs for the handshake messages and extensions;
//! * [`parse_spki`] / [`encode_spki`]: raw public keys (RFC 7250) for Ed25519 and P-256;
//! * [`fuzz`]: entry points feeding arbitrary bytes to fresh sessions.
#![no_std]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

mod alert;
mod auth;
mod client;
mod codec;
pub mod config;
pub mod fuzz;
pub mod key_schedule;
pub mod msgs;
#[cfg(feature = "server")]
mod server;
pub mod session;
mod small;
mod spki;
pub mod ticket;
mod transcript;
#[cfg(feature = "x509")]
mod x509;

#[cfg(test)]
extern crate std;

#[cfg(test)]
mod tests;

pub use alert::{transport_error, Alert, Error};
pub use auth::{
    certificate_verify_content, ct_eq, finished_verify_data, psk_binder, sign_certificate_verify,
    verify_certificate_verify, verify_finished, verify_psk_binder,
    MAX_CERTIFICATE_VERIFY_CONTENT_LEN,
};
pub use client::{ClientSession, Resumption};
#[cfg(feature = "server")]
pub use config::{
    ClientAuth, EarlyDataConfig, ServerConfig, ServerIdentity, TicketConfig, TicketKey,
};
pub use config::{ClientConfig, ExternalPsk, ServerAuth};
pub use key_schedule::{resumption_psk, EarlySecret, HandshakeSecret, MasterSecret, PskKind};
#[cfg(feature = "server")]
pub use server::{ServerSession, SignatureRequest};
pub use session::{KeyLevel, Level, QuicHooks, RxBuffer, Secrets, SendBuffer};
pub use spki::{encode_spki, parse_spki, ED25519_SPKI_LEN, P256_SPKI_LEN};
pub use ticket::Ticket;
#[cfg(feature = "x509")]
pub use x509::X509Verifier;
#[cfg(feature = "x509")]
pub use {pki_types, webpki};

/// The bound a provider needs beyond [`mote_crypto::CryptoProvider`]: `Sync` with feature
/// `x509` (rustls-webpki's algorithm objects are shared references), nothing otherwise.
/// Every provider mote ships is a zero-sized `Sync` value.
#[cfg(feature = "x509")]
pub trait ProviderBound: Sync {}
#[cfg(feature = "x509")]
impl<T: Sync + ?Sized> ProviderBound for T {}
/// The bound a provider needs beyond [`mote_crypto::CryptoProvider`]: `Sync` with feature
/// `x509` (rustls-webpki's algorithm objects are shared references), nothing otherwise.
#[cfg(not(feature = "x509"))]
pub trait ProviderBound {}
#[cfg(not(feature = "x509"))]
impl<T: ?Sized> ProviderBound for T {}
#[cfg(feature = "server")]
pub use ticket::{AntiReplay, ReplayCheck, StrikeRegister};
pub use transcript::Transcript;

/// Which end of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The client.
    Client,
    /// The server.
    Server,
}
