//! TLS 1.3 for QUIC (RFC 8446, RFC 9001 §4): the handshake engine's building blocks.
//!
//! mote-tls carries TLS 1.3 handshakes inside QUIC only. There is no record layer: handshake
//! messages travel in QUIC CRYPTO frames, and the per-epoch secrets (early, handshake,
//! application) are handed to QUIC, which derives its packet-protection keys from them.
//!
//! This part of the crate provides what the client and server state machines are built on:
//!
//! * [`key_schedule`]: the RFC 8446 §7.1 key schedule as consuming stages
//!   ([`EarlySecret`] → [`HandshakeSecret`] → [`MasterSecret`]), the ticket PSK and exporters;
//! * [`Transcript`]: the transcript hash with the HelloRetryRequest rule and the
//!   partial-ClientHello hash for PSK binders;
//! * [`finished_verify_data`], [`psk_binder`], and the CertificateVerify signature input;
//! * [`msgs`]: borrowed-view codecs for the handshake messages and extensions;
//! * [`parse_spki`] / [`encode_spki`]: raw public keys (RFC 7250) for Ed25519 and P-256;
//! * [`Alert`] and [`Error`]: every failure maps onto the TLS alert QUIC reports as
//!   CRYPTO_ERROR (0x0100 + alert).
//!
//! Everything is generic over a [`mote_crypto::CryptoProvider`], `no_std`, and heap-free;
//! parsers never panic, whatever the input. Server-only code is behind feature `server`.
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
pub use server::ServerSession;
pub use session::{KeyLevel, Level, QuicHooks, RxBuffer, Secrets, SendBuffer};
pub use spki::{encode_spki, parse_spki, ED25519_SPKI_LEN, P256_SPKI_LEN};
pub use ticket::Ticket;
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
