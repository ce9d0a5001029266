//! Handshake configuration: what a client offers and how it authenticates the server, and
//! (feature `server`) what a server accepts and presents. Configurations borrow everything
//! (keys, names, pinned keys) and are `Sync`, so they can live in flash as `static`s or be
//! shared by the threads of a server.

use mote_crypto::{AeadAlgorithm, HashAlgorithm, NamedGroup, SigningKey};

/// How the client authenticates the server. There is deliberately no variant that skips
/// authentication.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum ServerAuth<'a> {
    /// RFC 7250 raw public keys: the client sends server_certificate_type = RawPublicKey and
    /// accepts only a server whose SubjectPublicKeyInfo (DER, Ed25519 or ECDSA P-256) is
    /// byte-for-byte one of these (several allow key rotation).
    RawPublicKeys(&'a [&'a [u8]]),
    /// An external PSK (RFC 8446 §4.2.11) with (EC)DHE (psk_dhe_ke): the server proves it
    /// knows the key through its Finished. Only suites with the PSK's hash are offered; a
    /// server that does not select the PSK fails the handshake (handshake_failure).
    /// Resumption tickets are not used in this mode.
    ExternalPsk(ExternalPsk<'a>),
    /// X.509 (feature `x509`): the server's chain must lead to one of the pinned trust
    /// anchors, be valid now ([`crate::ClientSession::set_unix_time`]) for TLS server
    /// authentication, and name [`ClientConfig::server_name`]; its end-entity key must be
    /// ECDSA P-256 or Ed25519.
    #[cfg(feature = "x509")]
    X509(crate::x509::X509Verifier<'a>),
}

/// An external pre-shared key (RFC 8446 §4.2.11): identity, key and the hash it is used
/// with (RFC 8446 §4.2.11: "each PSK is associated with a single Hash algorithm").
#[derive(Clone, Copy)]
pub struct ExternalPsk<'a> {
    /// The identity sent in pre_shared_key.
    pub identity: &'a [u8],
    /// The key (at least 16 random bytes; RFC 9257 recommends ≥ 128 bits of entropy).
    pub key: &'a [u8],
    /// The hash of suites this PSK may be used with.
    pub hash: HashAlgorithm,
}

/// Client configuration.
#[derive(Clone, Copy)]
pub struct ClientConfig<'a> {
    /// The server's name, if any: a DNS host name, sent as server_name (RFC 6066 §3; a
    /// trailing dot is left out), or an IP address literal (IPv4 dotted quad, or IPv6
    /// without brackets), which is *not* sent (RFC 6066 §3 forbids IP literals in
    /// server_name) but is what an X.509 certificate is verified against (its iPAddress
    /// subjectAltName).
    pub server_name: Option<&'a [u8]>,
    /// ALPN protocols in order of preference; QUIC requires at least one (RFC 9001 §8.1).
    pub alpn: &'a [&'a [u8]],
    /// How the server is authenticated.
    pub server_auth: ServerAuth<'a>,
    /// A key for client authentication with a raw public key (RFC 7250): offered as
    /// client_certificate_type = RawPublicKey and used when the server sends a
    /// CertificateRequest. Without one, such a request gets an empty Certificate.
    pub client_key: Option<&'a (dyn SigningKey + Sync)>,
    /// Cipher suites in order of preference; empty means the provider's. Suites the provider
    /// lacks are skipped.
    pub cipher_suites: &'a [AeadAlgorithm],
    /// Groups in order of preference; the first one the provider has gets the key share.
    /// Empty means the provider's order.
    pub groups: &'a [NamedGroup],
    /// Offer 0-RTT when resuming with a ticket that allows it.
    pub early_data: bool,
}

#[cfg(feature = "server")]
pub use server::*;

#[cfg(feature = "server")]
mod server {
    use super::*;

    /// The server's signing key and what it presents: an X.509 chain, or (when the client
    /// asks for RawPublicKey, RFC 7250) the key's SubjectPublicKeyInfo.
    #[derive(Clone, Copy)]
    pub struct ServerIdentity<'a> {
        /// The CertificateVerify signing key (Ed25519 or ECDSA P-256).
        pub key: &'a (dyn SigningKey + Sync),
        /// DER certificates, end-entity first; empty when only raw public keys are offered.
        pub x509_chain: &'a [&'a [u8]],
    }

    /// Client authentication by raw public key (RFC 7250).
    #[derive(Clone, Copy)]
    pub struct ClientAuth<'a> {
        /// The SubjectPublicKeyInfos (DER) of the clients allowed in.
        pub allowed: &'a [&'a [u8]],
        /// Fail the handshake (certificate_required) when the client presents no key; when
        /// false, a client without a key is let in unauthenticated.
        pub required: bool,
    }

    /// One key for sealing session tickets. The first key of [`TicketConfig::keys`] seals;
    /// every key opens tickets carrying its id, so keys can be rotated.
    #[derive(Clone, Copy)]
    pub struct TicketKey<'a> {
        /// The key id, sent in clear at the front of each ticket.
        pub id: [u8; 4],
        /// The AEAD (its key length fixes `key`'s).
        pub aead: AeadAlgorithm,
        /// The key. Tickets use random 96-bit nonces, so rotate well before 2^32 tickets.
        pub key: &'a [u8],
    }

    /// Stateless session tickets (RFC 8446 §4.6.1).
    #[derive(Clone, Copy)]
    pub struct TicketConfig<'a> {
        /// Ticket keys, sealing key first.
        pub keys: &'a [TicketKey<'a>],
        /// Ticket lifetime in seconds (capped at 604800, RFC 8446 §4.6.1).
        pub lifetime_s: u32,
        /// Tickets sent after each full or resumed handshake.
        pub count: u8,
        /// 0-RTT freshness window (RFC 8446 §8.3): largest accepted difference between the
        /// client's reported ticket age and the server's view, in milliseconds.
        pub max_age_skew_ms: u32,
    }

    /// 0-RTT acceptance (RFC 8446 §4.2.10, §8).
    #[derive(Clone, Copy)]
    pub struct EarlyDataConfig<'a> {
        /// The single-use register that makes 0-RTT replay-safe (RFC 8446 §8.1).
        pub anti_replay: &'a (dyn crate::ticket::AntiReplay + Sync),
        /// The application's 0-RTT-relevant state (e.g. the encoded flow-control limits and
        /// other transport parameters RFC 9000 §7.4.1 says must not shrink). Its hash goes
        /// into each ticket; 0-RTT is rejected when it has changed since.
        pub context: &'a [u8],
    }

    /// Server configuration.
    #[derive(Clone, Copy)]
    pub struct ServerConfig<'a> {
        /// Cipher suites in order of preference (the server's choice wins); empty means the
        /// provider's.
        pub cipher_suites: &'a [AeadAlgorithm],
        /// Acceptable groups in order of preference; empty means the provider's. A client
        /// whose key shares hold none of them but who supports one gets a
        /// HelloRetryRequest.
        pub groups: &'a [NamedGroup],
        /// ALPN protocols in order of preference.
        pub alpn: &'a [&'a [u8]],
        /// The certificate / raw public key and its signing key; `None` for a PSK-only
        /// server.
        pub identity: Option<ServerIdentity<'a>>,
        /// External PSKs accepted (RFC 8446 §4.2.11), by identity.
        pub external_psks: &'a [ExternalPsk<'a>],
        /// Request client authentication by raw public key.
        pub client_auth: Option<ClientAuth<'a>>,
        /// Issue and accept session tickets.
        pub tickets: Option<TicketConfig<'a>>,
        /// Accept 0-RTT (needs `tickets`).
        pub early_data: Option<EarlyDataConfig<'a>>,
        /// Crypto offload: instead of signing its CertificateVerify inline, the session
        /// pauses after the Certificate and lets the caller compute the signature elsewhere
        /// ([`crate::ServerSession::signature_request`],
        /// [`crate::ServerSession::complete_signature`]).
        pub defer_signatures: bool,
    }
}
