//! The client handshake state machine (RFC 8446 §4, over QUIC per RFC 9001).
//!
//! ```text
//! start ──ClientHello──▶ WaitServerHello ──HelloRetryRequest (once)──▶ ClientHello2 ─┐
//!                              │◀──────────────────────────────────────────────────┘
//!                              ▼ ServerHello
//!                          WaitEncryptedExtensions
//!                 PSK ┌────────┴────────┐ certificate
//!                     │                 ▼
//!                     │   WaitCertificateOrRequest ─CertificateRequest─▶ WaitCertificate
//!                     │                 ▼ Certificate ◀──────────────────────┘
//!                     │         WaitCertificateVerify
//!                     ▼                 ▼
//!                  WaitFinished ◀───────┘
//!                     ▼ (client Certificate, CertificateVerify,) Finished
//!                  Connected ── NewSessionTicket* (1-RTT)
//! ```

use mote_crypto::{
    AeadAlgorithm, CryptoProvider, Digest, HashAlgorithm, KeyExchange as _, NamedGroup, Secret,
    SignatureScheme, MAX_SIGNATURE_LEN,
};

use crate::config::{ClientConfig, ServerAuth};
use crate::key_schedule::{self, derive_secret_into, EarlySecret, HandshakeSecret, PskKind};
use crate::msgs::{
    self, certificate_type, handshake_type as ht, Certificate, CertificateRequest,
    CertificateVerify, ClientHelloParams, EncryptedExtensions, Finished, HandshakeMessage,
    KeyShareEntry, NewSessionTicket, PskOffer, ServerHello, PSK_DHE_KE, TLS13,
};
use crate::session::{KeyLevel, Level, QuicHooks, RxBuffer, Secrets, SendBuffer};
use crate::small::Small;
use crate::ticket::Ticket;
use crate::{
    auth::finished_verify_data_into, ct_eq, finished_verify_data, parse_spki,
    sign_certificate_verify, transport_error, verify_certificate_verify, verify_finished, Alert,
    Error, ProviderBound, Side, Transcript,
};

/// RFC 8446 §4.6.1: "Servers MUST NOT use any value greater than 604800 seconds".
const MAX_TICKET_LIFETIME_S: u32 = 604_800;

/// A ticket to resume with and its age (RFC 8446 §4.2.11.1: milliseconds since the ticket
/// was received; the caller keeps the clock).
#[derive(Clone, Copy, Debug)]
pub struct Resumption<'a> {
    /// The stored ticket.
    pub ticket: Ticket<'a>,
    /// Milliseconds since the NewSessionTicket was received.
    pub age_ms: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Start,
    WaitServerHello,
    WaitEncryptedExtensions,
    WaitCertificateOrRequest,
    WaitCertificate,
    WaitCertificateVerify,
    WaitFinished,
    Connected,
}

impl State {
    /// The handshake message type this state waits for (after a ServerHello without a PSK,
    /// the CertificateRequest; `handle` also takes a Certificate there). `Start` waits for
    /// none: 0 stands for it, and `handle` finds no transcript for a message of type 0.
    fn expected(self) -> u8 {
        match self {
            Self::Start => 0,
            Self::WaitServerHello => ht::SERVER_HELLO,
            Self::WaitEncryptedExtensions => ht::ENCRYPTED_EXTENSIONS,
            Self::WaitCertificateOrRequest => ht::CERTIFICATE_REQUEST,
            Self::WaitCertificate => ht::CERTIFICATE,
            Self::WaitCertificateVerify => ht::CERTIFICATE_VERIFY,
            Self::WaitFinished => ht::FINISHED,
            Self::Connected => ht::NEW_SESSION_TICKET,
        }
    }

    /// The encryption level the next expected message arrives at.
    fn level(self) -> Level {
        match self {
            Self::Start | Self::WaitServerHello => Level::Initial,
            Self::Connected => Level::OneRtt,
            _ => Level::Handshake,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EarlyData {
    NotOffered,
    Offered,
    Accepted,
    Rejected,
}

/// The PSK the client offers: an external PSK or a resumption ticket.
#[derive(Clone, Copy)]
struct PskSource<'c> {
    identity: &'c [u8],
    key: &'c [u8],
    hash: HashAlgorithm,
    kind: PskKind,
    obfuscated_age: u32,
}

/// A TLS 1.3 client handshake over QUIC. `RX` is the receive buffer for one partial
/// handshake message (see [`RxBuffer`]); the rest of the session is a few hundred bytes
/// (see the crate docs for the RAM budget).
pub struct ClientSession<'c, P: CryptoProvider, const RX: usize = 4096> {
    rx: RxBuffer<RX>,
    core: Client<'c, P>,
}

struct Client<'c, P: CryptoProvider> {
    provider: P,
    config: &'c ClientConfig<'c>,
    resumption: Option<Resumption<'c>>,
    state: State,
    error: Option<Error>,
    random: [u8; 32],
    kx: Option<P::KeyExchange>,
    /// Before the ServerHello: one transcript per hash among the offered suites. After it:
    /// slot 0 holds the transcript.
    transcripts: [Option<Transcript<P::Hash>>; HASH_SLOTS],
    suite: Option<AeadAlgorithm>,
    group: Option<NamedGroup>,
    retried: bool,
    psk_offered: bool,
    psk_accepted: bool,
    early_data: EarlyData,
    client_cert_rpk: bool,
    /// After a CertificateRequest: the scheme to sign with, or `None` to send an empty
    /// Certificate.
    cert_request: Option<Option<SignatureScheme>>,
    server_key: Option<usize>,
    alpn: Option<usize>,
    #[cfg(feature = "x509")]
    unix_time_s: Option<u64>,
    /// The X.509 end-entity's SubjectPublicKeyInfo, for its CertificateVerify.
    #[cfg(feature = "x509")]
    x509_spki: ([u8; crate::P256_SPKI_LEN], usize),
    handshake_secret: Option<HandshakeSecret>,
    secrets: Stage,
}

/// The secrets a session keeps, which change with the handshake's progress (one slot pair
/// serves both phases, to save RAM).
enum Stage {
    Start,
    /// client_/server_handshake_traffic_secret, for the Finished messages.
    Handshake {
        client: Secret,
        server: Secret,
    },
    /// exporter_master_secret and resumption_master_secret.
    Connected {
        exporter: Secret,
        resumption_master: Secret,
    },
}

/// One transcript per hash the offered suites use: SHA-256, and SHA-384 with `aes256`.
pub(crate) const HASH_SLOTS: usize = if cfg!(feature = "aes256") { 2 } else { 1 };

/// Whether this build negotiates `suite`: TLS_AES_256_GCM_SHA384 only with feature `aes256`
/// (whatever the provider offers), so minimal builds keep one transcript.
pub(crate) fn suite_built(suite: AeadAlgorithm) -> bool {
    cfg!(feature = "aes256") || suite.hash() == HashAlgorithm::Sha256
}

impl<'c, P: CryptoProvider> Client<'c, P> {
    /// The state before the ClientHello.
    fn new(provider: P, config: &'c ClientConfig<'c>, resumption: Option<Resumption<'c>>) -> Self {
        Self {
            provider,
            config,
            resumption,
            state: State::Start,
            error: None,
            random: [0; 32],
            kx: None,
            transcripts: core::array::from_fn(|_| None),
            suite: None,
            group: None,
            retried: false,
            psk_offered: false,
            psk_accepted: false,
            early_data: EarlyData::NotOffered,
            client_cert_rpk: false,
            cert_request: None,
            server_key: None,
            alpn: None,
            #[cfg(feature = "x509")]
            unix_time_s: None,
            #[cfg(feature = "x509")]
            x509_spki: ([0; crate::P256_SPKI_LEN], 0),
            handshake_secret: None,
            secrets: Stage::Start,
        }
    }
}

impl<'c, P: CryptoProvider + ProviderBound, const RX: usize> ClientSession<'c, P, RX> {
    /// A client for `config`, resuming with `resumption` if given (ignored with an external
    /// PSK). Nothing is sent until [`ClientSession::start`].
    pub fn new(
        provider: P,
        config: &'c ClientConfig<'c>,
        resumption: Option<Resumption<'c>>,
    ) -> Self {
        Self { rx: RxBuffer::new(), core: Client::new(provider, config, resumption) }
    }

    /// [`ClientSession::new`] written into `slot` (its place in a connection) and returned:
    /// the `RX`-byte receive buffer is zeroed in place, so the session is never built on the
    /// stack and moved (issue 8).
    #[allow(unsafe_code)]
    pub fn write_new<'s>(
        slot: &'s mut core::mem::MaybeUninit<Self>,
        provider: P,
        config: &'c ClientConfig<'c>,
        resumption: Option<Resumption<'c>>,
    ) -> &'s mut Self {
        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from a `&mut MaybeUninit<Self>`, so it is valid and aligned for
        // writes of each field (`addr_of_mut!` makes no reference to uninitialized memory);
        // both fields are written, so the slot is initialized when it is read.
        unsafe {
            RxBuffer::write_new(core::ptr::addr_of_mut!((*p).rx));
            core::ptr::addr_of_mut!((*p).core).write(Client::new(provider, config, resumption));
            slot.assume_init_mut()
        }
    }

    /// Writes the ClientHello at the Initial level and, when offering 0-RTT, installs the
    /// 0-RTT secret. Call once.
    pub fn start<H: QuicHooks>(&mut self, hooks: &mut H) -> Result<(), Error> {
        if let Some(e) = self.core.error {
            return Err(e);
        }
        let result = self.core.start(hooks);
        self.core.fail_on(result)
    }

    /// Processes CRYPTO stream bytes received at `level`, in order. See the
    /// [`crate::session`] docs for the contract.
    pub fn read_handshake<H: QuicHooks>(
        &mut self,
        level: Level,
        data: &[u8],
        hooks: &mut H,
    ) -> Result<(), Error> {
        if let Some(e) = self.core.error {
            return Err(e);
        }
        let core = &mut self.core;
        let result = self
            .rx
            .feed(level, data, |level, msg| core.handle(level, msg, hooks))
            .and_then(|()| self.rx.check_not_stranded(core.state.level()));
        core.fail_on(result)
    }

    /// Whether the handshake is complete (the client Finished is written).
    pub fn is_handshake_complete(&self) -> bool {
        self.core.state == State::Connected
    }

    /// The negotiated cipher suite, once the ServerHello (or HelloRetryRequest) arrived.
    pub fn suite(&self) -> Option<AeadAlgorithm> {
        self.core.suite
    }

    /// Sets the wall-clock time (seconds since the Unix epoch) X.509 validity is checked
    /// against (feature `x509`). Without it, an X.509 handshake fails with internal_error.
    #[cfg(feature = "x509")]
    pub fn set_unix_time(&mut self, unix_time_s: u64) {
        self.core.unix_time_s = Some(unix_time_s);
    }

    /// The key-exchange group, once the ServerHello arrived.
    pub fn group(&self) -> Option<NamedGroup> {
        self.core.group
    }

    /// Whether the server sent a HelloRetryRequest.
    pub fn hello_retry_request(&self) -> bool {
        self.core.retried
    }

    /// The negotiated ALPN protocol, once EncryptedExtensions arrived.
    pub fn alpn(&self) -> Option<&'c [u8]> {
        self.core.config.alpn.get(self.core.alpn?).copied()
    }

    /// The resumption ticket this session was given, until [`ClientSession::start`] or
    /// [`ClientSession::forget_resumption`]; `None` with an external PSK, which is offered
    /// instead.
    pub fn resumption(&self) -> Option<&Resumption<'c>> {
        if matches!(self.core.config.server_auth, ServerAuth::ExternalPsk(_)) {
            return None;
        }
        self.core.resumption.as_ref()
    }

    /// Before [`ClientSession::start`]: drops the resumption ticket, so the ClientHello
    /// offers no PSK and no 0-RTT (a full handshake), e.g. because QUIC must not use it for
    /// this connection (RFC 9369 §5: a ticket of another QUIC version). Returns whether
    /// the ticket was dropped (false once started: the ClientHello is written).
    pub fn forget_resumption(&mut self) -> bool {
        if self.core.state != State::Start {
            return false;
        }
        self.core.resumption = None;
        true
    }

    /// Whether the server accepted the PSK (a resumption ticket or the external PSK).
    pub fn psk_accepted(&self) -> bool {
        self.core.psk_accepted
    }

    /// `Some(accepted)` once the server answered a 0-RTT offer; `None` if none was made or
    /// no answer came yet.
    pub fn early_data_accepted(&self) -> Option<bool> {
        match self.core.early_data {
            EarlyData::Accepted => Some(true),
            EarlyData::Rejected => Some(false),
            _ => None,
        }
    }

    /// Which pinned raw public key ([`ServerAuth::RawPublicKeys`]) the server proved it holds.
    pub fn server_key_index(&self) -> Option<usize> {
        self.core.server_key
    }

    /// The error that failed the handshake, if any.
    pub fn error(&self) -> Option<Error> {
        self.core.error
    }

    /// RFC 8446 §7.5: TLS-Exporter(label, context, out.len()), once the server Finished is
    /// verified.
    pub fn export(&self, label: &[u8], context: &[u8], out: &mut [u8]) -> Result<(), Error> {
        let c = &self.core;
        let suite = c.suite.ok_or(Error::UnexpectedMessage)?;
        let Stage::Connected { exporter, .. } = &c.secrets else {
            return Err(Error::UnexpectedMessage);
        };
        key_schedule::export(&c.provider, suite.hash(), exporter.as_ref(), label, context, out)
    }
}

/// Writes one handshake message at `level` into QUIC's send buffer with `write`, adds it to
/// `transcript`, and commits it.
/// RFC 8446 §7.1: the client and server application traffic secrets of a completed
/// handshake (erased on drop), until the 1-RTT keys are installed from them.
struct ApplicationSecrets {
    suite: AeadAlgorithm,
    client: Secret,
    server: Secret,
}

/// RFC 8446 §4.1.4: a HelloRetryRequest accepted; the second ClientHello (with the same
/// random, the new key share and the HelloRetryRequest's `cookie`) is still to be written.
struct Retry<'m> {
    cookie: Option<&'m [u8]>,
}

/// What follows a checked ServerHello ([`Client::server_hello`]).
enum ServerHelloNext<'m> {
    /// A HelloRetryRequest: the second ClientHello.
    Retry(Retry<'m>),
    /// A ServerHello: the handshake keys, from the server's key share.
    HandshakeKeys { server_share: &'m [u8] },
}

pub(crate) fn send_message<H: QuicHooks, X: mote_crypto::Hash>(
    hooks: &mut H,
    level: Level,
    transcript: &mut Transcript<X>,
    write: impl FnOnce(&mut [u8], &[u8]) -> Result<usize, Error>,
) -> Result<(), Error> {
    let SendBuffer { space, transport_parameters } = hooks.send_buffer(level);
    let len = write(space, transport_parameters)?;
    transcript.update(space.get(..len).ok_or(Error::BufferTooSmall)?);
    hooks.sent(level, len);
    Ok(())
}

fn internal() -> Error {
    Error::Alert(Alert::InternalError)
}

/// What goes into the server_name extension for the configured name (RFC 6066 §3): a DNS
/// host name "without a trailing dot", and nothing for an IP address literal ("Literal IPv4
/// and IPv6 addresses are not permitted in "HostName""). The configured name, as given, is
/// still what an X.509 certificate is checked against (a dNSName or iPAddress SAN).
///
/// A name with a colon is IPv6 (no DNS name has one); a name of only digits and dots is
/// IPv4 (RFC 1123 §2.1: a valid host name never has an all-numeric top-level label). This
/// is deliberately not a full address parser, which would cost flash on a device.
pub(crate) fn sni_host_name(name: &[u8]) -> Option<&[u8]> {
    let host = name.strip_suffix(b".").unwrap_or(name);
    // One pass (smaller on a device than a search and a predicate walk).
    let mut ipv4 = true;
    for &b in host {
        if b == b':' {
            return None; // IPv6
        }
        ipv4 &= b.is_ascii_digit() || b == b'.';
    }
    (!ipv4).then_some(host)
}

impl<'c, P: CryptoProvider + ProviderBound> Client<'c, P> {
    /// The key for client authentication with a raw public key (RFC 7250). Without feature
    /// `client-auth` there is none ([`Client::start`] refuses a configuration with one), so
    /// the signing half of the client's second flight compiles out: a CertificateRequest
    /// is still answered, with an empty Certificate (RFC 8446 §4.4.2).
    fn client_key(&self) -> Option<&'c (dyn mote_crypto::SigningKey + Sync)> {
        #[cfg(feature = "client-auth")]
        return self.config.client_key;
        #[cfg(not(feature = "client-auth"))]
        return None;
    }

    fn fail_on(&mut self, result: Result<(), Error>) -> Result<(), Error> {
        if let Err(e) = result {
            self.error = Some(e);
        }
        result
    }

    /// Suites offered: the configured (or provider's) ones the provider implements, limited
    /// to the external PSK's hash in PSK mode.
    fn offered_suites(&self) -> Small<AeadAlgorithm, 3> {
        let supported = self.provider.aead_algorithms();
        let psk_ok = |s: AeadAlgorithm| match self.config.server_auth {
            ServerAuth::ExternalPsk(psk) => s.hash() == psk.hash,
            _ => true,
        };
        let mut out = Small::new(AeadAlgorithm::Aes128Gcm);
        // A provider with one suite (a device's: its list is a constant, so this folds):
        // that suite or none, whatever the configured order; the walk below is not built.
        if let [only] = supported {
            let c = self.config.cipher_suites;
            if (c.is_empty() || c.contains(only)) && psk_ok(*only) && suite_built(*only) {
                out.push_unique(*only);
            }
            return out;
        }
        let wanted = if self.config.cipher_suites.is_empty() {
            supported
        } else {
            self.config.cipher_suites
        };
        for s in wanted {
            if supported.contains(s) && psk_ok(*s) && suite_built(*s) {
                out.push_unique(*s);
            }
        }
        out
    }

    fn offered_groups(&self) -> Small<NamedGroup, 2> {
        let supported = self.provider.groups();
        let mut out = Small::new(NamedGroup::X25519);
        // A provider with one group: that group or none (as for the suites).
        if let [only] = supported {
            let c = self.config.groups;
            if c.is_empty() || c.contains(only) {
                out.push_unique(*only);
            }
            return out;
        }
        let wanted = if self.config.groups.is_empty() { supported } else { self.config.groups };
        for g in wanted {
            if supported.contains(g) {
                out.push_unique(*g);
            }
        }
        out
    }

    /// signature_algorithms: the schemes of the pinned keys the provider can verify (with
    /// X.509: every scheme it can verify).
    fn offered_schemes(&self) -> Small<SignatureScheme, 2> {
        let mut out = Small::new(SignatureScheme::Ed25519);
        // A provider that verifies one scheme: that scheme, if X.509 or a pinned key uses
        // it (as for the suites: the same list, without the walk).
        if let [only] = self.provider.verify_schemes() {
            let offered = match self.config.server_auth {
                #[cfg(feature = "x509")]
                ServerAuth::X509(_) => true,
                ServerAuth::RawPublicKeys(keys) => {
                    keys.iter().any(|k| parse_spki(k).is_ok_and(|(s, _)| s == *only))
                }
                _ => false,
            };
            if offered {
                out.push_unique(*only);
            }
            return out;
        }
        #[cfg(feature = "x509")]
        if let ServerAuth::X509(_) = self.config.server_auth {
            for s in self.provider.verify_schemes() {
                out.push_unique(*s);
            }
        }
        if let ServerAuth::RawPublicKeys(keys) = self.config.server_auth {
            for spki in keys {
                if let Ok((scheme, _)) = parse_spki(spki) {
                    if self.provider.verify_schemes().contains(&scheme) {
                        out.push_unique(scheme);
                    }
                }
            }
        }
        out
    }

    /// The PSK to offer, if any: the external PSK, or the resumption ticket when its hash is
    /// usable. After a HelloRetryRequest only a PSK matching the chosen suite's hash is kept
    /// (RFC 8446 §4.1.2).
    fn psk_source(&self) -> Option<PskSource<'c>> {
        let src = match self.config.server_auth {
            ServerAuth::ExternalPsk(psk) => PskSource {
                identity: psk.identity,
                key: psk.key,
                hash: psk.hash,
                kind: PskKind::External,
                obfuscated_age: 0,
            },
            _ => {
                let r = self.resumption?;
                let hash = r.ticket.suite.hash();
                // One offer (a device's): `start` refused an empty one, so the offered suite
                // is TLS_AES_128_GCM_SHA256.
                let usable = if self.one_offer() {
                    hash == HashAlgorithm::Sha256
                } else {
                    self.offered_suites().as_slice().iter().any(|s| s.hash() == hash)
                };
                if !usable {
                    return None;
                }
                PskSource {
                    identity: r.ticket.identity,
                    key: r.ticket.psk,
                    hash,
                    kind: PskKind::Resumption,
                    // RFC 8446 §4.2.11.1: (age in ms + ticket_age_add) mod 2^32.
                    obfuscated_age: r.age_ms.wrapping_add(r.ticket.age_add),
                }
            }
        };
        match self.suite {
            Some(s) if s.hash() != src.hash => None,
            _ => Some(src),
        }
    }

    /// Whether `suite` is among the offered suites (after `start`, which refused an empty
    /// offer: with one offer, it is TLS_AES_128_GCM_SHA256).
    fn suite_offered(&self, suite: AeadAlgorithm) -> bool {
        if self.one_offer() {
            return suite == AeadAlgorithm::Aes128Gcm;
        }
        self.offered_suites().contains(&suite)
    }

    /// 0-RTT is offered with a resumption ticket that allows it, whose suite is offered and
    /// whose ALPN is among ours (RFC 8446 §4.2.10).
    fn can_offer_early_data(&self) -> bool {
        let Some(r) = self.resumption else { return false };
        self.config.early_data
            && r.ticket.early_data
            && !matches!(self.config.server_auth, ServerAuth::ExternalPsk(_))
            && self.suite_offered(r.ticket.suite)
            && self.config.alpn.contains(&r.ticket.alpn)
    }

    /// The suite the ServerHello (or HelloRetryRequest) selected, for the handlers that run
    /// after it. One offer: the one suite, a constant (`server_hello` accepted no other), so
    /// its hash and lengths fold where they are used.
    fn negotiated_suite(&self) -> Result<AeadAlgorithm, Error> {
        if self.one_offer() {
            return Ok(AeadAlgorithm::Aes128Gcm);
        }
        self.suite.ok_or_else(internal)
    }

    /// The hash of the PSK being offered. One offer: SHA-256, a constant
    /// (`write_client_hello` refuses a PSK with another hash, and `psk_source` offers none).
    fn psk_hash(&self, p: &PskSource<'c>) -> HashAlgorithm {
        if self.one_offer() {
            return HashAlgorithm::Sha256;
        }
        p.hash
    }

    /// The suite of the ticket 0-RTT is offered with. One offer: the one suite, a constant
    /// (`can_offer_early_data` offers 0-RTT only with a ticket of an offered suite).
    fn ticket_suite(&self, r: &Resumption<'c>) -> AeadAlgorithm {
        if self.one_offer() {
            return AeadAlgorithm::Aes128Gcm;
        }
        r.ticket.suite
    }

    fn transcript_for(&self, alg: HashAlgorithm) -> Result<&Transcript<P::Hash>, Error> {
        // One slot (builds without `aes256`): that slot's transcript, if it has `alg`.
        if let (1, Some(slot)) = (HASH_SLOTS, self.transcripts.first()) {
            return slot.as_ref().filter(|t| t.algorithm() == alg).ok_or_else(internal);
        }
        self.transcripts.iter().flatten().find(|t| t.algorithm() == alg).ok_or_else(internal)
    }

    /// Keeps only the transcript for `alg` (in slot 0).
    fn select_transcript(&mut self, alg: HashAlgorithm) -> Result<(), Error> {
        // One slot (builds without `aes256`): it holds the transcript for `alg` or none.
        if let (1, Some(slot)) = (HASH_SLOTS, self.transcripts.first_mut()) {
            if slot.as_ref().is_some_and(|t| t.algorithm() == alg) {
                return Ok(());
            }
            *slot = None;
            return Err(internal());
        }
        let mut chosen = None;
        for slot in self.transcripts.iter_mut() {
            if let Some(t) = slot.take() {
                if t.algorithm() == alg && chosen.is_none() {
                    chosen = Some(t);
                }
            }
        }
        *self.transcripts.first_mut().ok_or_else(internal)? = Some(chosen.ok_or_else(internal)?);
        Ok(())
    }

    fn transcript(&mut self) -> Result<&mut Transcript<P::Hash>, Error> {
        self.transcripts.first_mut().and_then(Option::as_mut).ok_or_else(internal)
    }

    fn start<H: QuicHooks>(&mut self, hooks: &mut H) -> Result<(), Error> {
        if self.state != State::Start {
            return Err(internal());
        }
        // A client key this build cannot use is a configuration error, not silently dropped.
        if cfg!(not(feature = "client-auth")) && self.config.client_key.is_some() {
            return Err(Error::Crypto(mote_crypto::Error::Unsupported));
        }
        // QUIC requires ALPN (RFC 9001 §8.1).
        if self.config.alpn.is_empty() {
            return Err(internal());
        }
        hooks.rng().fill(&mut self.random)?;
        hooks.client_random(&self.random);
        let group = self.offered_groups().first().ok_or_else(internal)?;
        self.provider.start_key_exchange_in(group, hooks.rng(), &mut self.kx)?;
        let suites = self.offered_suites();
        if suites.first().is_none() {
            return Err(Error::Alert(Alert::HandshakeFailure));
        }
        self.start_transcripts()?;
        let early = self.can_offer_early_data();
        if early {
            self.early_data = EarlyData::Offered;
        }
        let mut early_secret = Secret::zeroed(0);
        self.emit_client_hello(hooks, None, early.then_some(&mut early_secret))?;
        self.state = State::WaitServerHello;
        // Installed once the ClientHello's frame is gone (issue 8: the packet key setup is
        // not under it on a device's stack).
        if let (true, Some(r)) = (early, self.resumption) {
            hooks.install_secrets(Secrets {
                level: KeyLevel::ZeroRtt,
                suite: self.ticket_suite(&r),
                client: &early_secret,
                server: None,
            })?;
        }
        Ok(())
    }

    /// One transcript per hash of the offered suites (RFC 8446 §4.4.1). Inlined into
    /// `start` (issue 8: −32 B of flash; the ClientHello's path stays under the
    /// ServerHello's key installation, the deepest).
    fn start_transcripts(&mut self) -> Result<(), Error> {
        // One offer: the one suite's SHA-256 transcript, in slot 0.
        if self.one_offer() {
            let slot = self.transcripts.first_mut().ok_or_else(internal)?;
            return Transcript::start_in(&self.provider, HashAlgorithm::Sha256, slot);
        }
        let suites = self.offered_suites();
        let mut slot = 0;
        for s in suites.as_slice() {
            let alg = s.hash();
            if self.transcripts.iter().flatten().any(|t| t.algorithm() == alg) {
                continue;
            }
            if let Some(t) = self.transcripts.get_mut(slot) {
                *t = Some(Transcript::new(&self.provider, alg)?);
                slot += 1;
            }
        }
        Ok(())
    }

    /// RFC 8446 §4.1.2: writes a ClientHello (the second one after a HelloRetryRequest,
    /// with the same random and `cookie`), fills in the PSK binder (§4.2.11.2), adds it to
    /// the transcript(s). Given `early_secret`, it offers 0-RTT and writes
    /// client_early_traffic_secret there for the caller to install (issue 8: no secret
    /// returned through a `Result`).
    fn emit_client_hello<H: QuicHooks>(
        &mut self,
        hooks: &mut H,
        cookie: Option<&[u8]>,
        early_secret: Option<&mut Secret>,
    ) -> Result<(), Error> {
        let early_data = early_secret.is_some();
        let psk = self.psk_source();
        let SendBuffer { space, transport_parameters } = hooks.send_buffer(Level::Initial);
        let emitted =
            self.write_client_hello(space, transport_parameters, cookie, early_data, psk)?;
        let mut early = None;
        if let (Some(p), Some(offset)) = (psk, emitted.binders_offset) {
            // RFC 8446 §4.2.11.2: the binder is a Finished over the transcript so far and
            // the ClientHello truncated before the binders list.
            let alg = self.psk_hash(&p);
            let es = EarlySecret::new_in(&self.provider, alg, Some(p.key), &mut early)?;
            self.write_psk_binder(&p, es, space, offset)?;
        }
        let message = space.get(..emitted.len).ok_or(Error::BufferTooSmall)?;
        // One slot (builds without `aes256`): `start_transcripts` filled it, so no walk.
        if HASH_SLOTS == 1 {
            self.transcript()?.update(message);
        } else {
            for t in self.transcripts.iter_mut().flatten() {
                t.update(message);
            }
        }
        hooks.sent(Level::Initial, emitted.len);
        self.psk_offered = psk.is_some();

        if let Some(out) = early_secret {
            // RFC 8446 §7.1: client_early_traffic_secret = Derive-Secret(Early Secret,
            // "c e traffic", ClientHello), with the ticket's suite (§4.2.10).
            let (Some(es), Some(r)) = (&early, self.resumption) else {
                return Err(internal());
            };
            let hash = self.transcript_for(self.ticket_suite(&r).hash())?.current_hash();
            es.derive_into(&self.provider, b"c e traffic", hash.as_ref(), out)?;
        }
        Ok(())
    }

    /// Whether this client's offer is one suite (TLS_AES_128_GCM_SHA256), one group
    /// (X25519) and at most one scheme, with no client key: then its ClientHello
    /// is [`msgs::OneOfferHello`]'s template. The provider's lists are constants, so on a
    /// device (a provider built with just those) this folds and the general emitter leaves
    /// the image; a host provider with more takes the general path.
    fn one_offer(&self) -> bool {
        matches!(self.provider.aead_algorithms(), [AeadAlgorithm::Aes128Gcm])
            && matches!(self.provider.groups(), [NamedGroup::X25519])
            && self.provider.verify_schemes().len() <= 1
            && self.client_key().is_none()
    }

    /// RFC 8446 §4.1.2: writes the ClientHello into `space` (the PSK's binder zeroed).
    fn write_client_hello(
        &self,
        space: &mut [u8],
        transport_parameters: &[u8],
        cookie: Option<&[u8]>,
        early_data: bool,
        psk: Option<PskSource<'c>>,
    ) -> Result<msgs::EmittedClientHello, Error> {
        let kx = self.kx.as_ref().ok_or_else(internal)?;
        let rpk_server = matches!(self.config.server_auth, ServerAuth::RawPublicKeys(_));
        let server_name = self.config.server_name.and_then(sni_host_name);
        if self.one_offer() {
            // `start` refused an empty suite or group offer, so the offer is the one suite
            // and group; an X25519 key share is 32 bytes (RFC 7748 §6.1), and a PSK offered
            // with the one suite has its hash, SHA-256.
            let share: &[u8; 32] = kx.public_key().try_into().map_err(|_| internal())?;
            let psk = match psk {
                Some(p) if p.hash != HashAlgorithm::Sha256 => return Err(internal()),
                p => p.map(|p| (p.identity, p.obfuscated_age)),
            };
            return msgs::OneOfferHello {
                random: &self.random,
                server_name,
                // The provider's one scheme (a constant on a device), if offered.
                scheme: match self.provider.verify_schemes() {
                    [only] if self.offered_schemes().first().is_some() => Some(only.codepoint()),
                    _ => None,
                },
                share,
                alpn: self.config.alpn,
                rpk: rpk_server,
                cookie,
                early_data,
                quic_transport_parameters: transport_parameters,
                psk,
            }
            .emit(space);
        }
        let suites = self.offered_suites();
        let groups = self.offered_groups();
        let schemes = self.offered_schemes();
        let share =
            [KeyShareEntry { group: kx.group().codepoint(), key_exchange: kx.public_key() }];
        let rpk: &[u8] = &[certificate_type::RAW_PUBLIC_KEY];
        let server_types = if rpk_server { rpk } else { &[] };
        let client_types = if self.client_key().is_some() { rpk } else { &[] };
        ClientHelloParams {
            random: &self.random,
            cipher_suites: suites.as_slice(),
            server_name,
            supported_groups: groups.as_slice(),
            signature_algorithms: schemes.as_slice(),
            key_shares: &share,
            alpn: self.config.alpn,
            server_certificate_types: server_types,
            client_certificate_types: client_types,
            psk_key_exchange_modes: &[PSK_DHE_KE],
            cookie,
            early_data,
            quic_transport_parameters: transport_parameters,
            psk: psk.map(|p| PskOffer {
                identity: p.identity,
                obfuscated_ticket_age: p.obfuscated_age,
                binder_len: p.hash.output_len() as u8,
            }),
        }
        .emit(space)
    }

    /// RFC 8446 §4.2.11.2: writes the binder of PSK `p` (early secret `es`) into the
    /// ClientHello `message` at `offset`. Out of line: its key and hashes are not in
    /// `emit_client_hello`'s frame while the 0-RTT keys are installed (issue 8: stack).
    #[inline(never)]
    fn write_psk_binder(
        &self,
        p: &PskSource<'c>,
        es: &EarlySecret,
        message: &mut [u8],
        offset: usize,
    ) -> Result<(), Error> {
        // binder_key = Derive-Secret(Early Secret, "ext binder" | "res binder", "").
        let mut binder_key = Secret::zeroed(0);
        let alg = self.psk_hash(p);
        let empty = key_schedule::empty_transcript_hash(alg)?;
        es.derive_into(&self.provider, p.kind.binder_label(), empty, &mut binder_key)?;
        let partial = message.get(..offset).ok_or(Error::BufferTooSmall)?;
        let partial_hash = self.transcript_for(alg)?.hash_with(partial);
        // The binder is a Finished MAC (`psk_binder`), written in place behind the binders
        // list's u16 length and its own u8 length, which must announce it (issue 8: no
        // Digest returned and copied).
        let (lengths, binder) = message
            .get_mut(offset..)
            .and_then(|m| m.split_first_chunk_mut::<3>())
            .ok_or(Error::BufferTooSmall)?;
        let n = finished_verify_data_into(
            &self.provider,
            alg,
            binder_key.as_ref(),
            partial_hash.as_ref(),
            binder,
        )?;
        if usize::from(lengths[2]) != n {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    fn handle<H: QuicHooks>(
        &mut self,
        level: Level,
        msg: HandshakeMessage<'_>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        // One check for the level and the type each state waits for (a Certificate may also
        // come instead of a CertificateRequest). RFC 9001 §6 and §8.3: KeyUpdate and
        // EndOfEarlyData do not exist over QUIC; no state waits for them (or for a type
        // TLS 1.3 does not have), so they are unexpected_message here too.
        let typ = msg.typ;
        let certificate_first =
            self.state == State::WaitCertificateOrRequest && typ == ht::CERTIFICATE;
        if level != self.state.level() || (typ != self.state.expected() && !certificate_first) {
            return Err(Error::UnexpectedMessage);
        }
        match typ {
            ht::SERVER_HELLO => return self.server_hello_or_retry(msg, hooks),
            ht::NEW_SESSION_TICKET => return self.new_session_ticket(msg, hooks),
            _ => {}
        }
        // RFC 8446 §4.4.1: the server's messages from EncryptedExtensions to its Finished go
        // into the transcript, here for all of them; CertificateVerify (§4.4.3) and
        // Finished (§4.4.4) are checked against the hash of the messages before them,
        // `before`. Added before the checks: any error fails the session for good, so a
        // refused message left in the transcript is never used (one step, not one a type).
        // (No transcript only before `start`, so the message was not expected.)
        let t = self.transcripts.first_mut().and_then(Option::as_mut);
        let t = t.ok_or(Error::UnexpectedMessage)?;
        let before = t.current_hash();
        t.update(msg.bytes);
        match typ {
            ht::ENCRYPTED_EXTENSIONS => self.encrypted_extensions(msg.body, hooks),
            ht::CERTIFICATE_REQUEST => self.certificate_request(msg.body),
            ht::CERTIFICATE => self.certificate(msg.body),
            ht::CERTIFICATE_VERIFY => self.certificate_verify(msg.body, &before),
            ht::FINISHED => self.finished_then_keys(msg.body, &before, hooks),
            // Only `Start`'s 0 gets here, and `Start` has no transcript: kept explicit so
            // no future state change can route an unexpected type to Finished.
            _ => Err(Error::UnexpectedMessage),
        }
    }

    // The handlers with large frames (ServerHello and its key schedule, CertificateVerify,
    // Finished, NewSessionTicket) stay out of line (issue 8): inlined into `handle`, their
    // locals would all add up in one frame under the deepest of them on a device. The
    // small ones (HelloRetryRequest checks, EncryptedExtensions, CertificateRequest,
    // Certificate) are inlined: that measured smaller and the stack bound did not move.
    /// A ServerHello, or a HelloRetryRequest and the second ClientHello: written once the
    /// ServerHello handlers' frames are gone (issue 8: not under them on a device's stack).
    /// Out of line: the retry is not in the frame of every message handler.
    #[inline(never)]
    fn server_hello_or_retry<H: QuicHooks>(
        &mut self,
        msg: HandshakeMessage<'_>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        match self.server_hello(msg, hooks)? {
            // RFC 8446 §4.2.10: no early data after a HelloRetryRequest, so no secret.
            ServerHelloNext::Retry(Retry { cookie }) => self.emit_client_hello(hooks, cookie, None),
            ServerHelloNext::HandshakeKeys { server_share } => {
                self.handshake_keys(server_share, hooks)
            }
        }
    }

    /// Checks a ServerHello (or a HelloRetryRequest) and adds it to the transcript; returns
    /// what comes next: the [`Retry`] to answer, or the server's key share for
    /// [`Self::handshake_keys`], which runs once this frame is gone (issue 8: the X25519
    /// ladder is not under the ServerHello's parse on a device's stack).
    #[inline(never)]
    fn server_hello<'m, H: QuicHooks>(
        &mut self,
        msg: HandshakeMessage<'m>,
        hooks: &mut H,
    ) -> Result<ServerHelloNext<'m>, Error> {
        let (sh, hello_retry_request) = ServerHello::parse_hello(msg.body)?;
        // RFC 8446 §4.2.1: a ServerHello without supported_versions negotiates TLS 1.2 or
        // earlier, which this client does not speak (protocol_version); one naming another
        // version is illegal_parameter ("a version not offered by the client").
        match sh.selected_version {
            Some(TLS13) => {}
            Some(_) => return Err(Error::IllegalParameter),
            None => return Err(Error::Alert(Alert::ProtocolVersion)),
        }
        // RFC 8446 §4.1.3: "A client which receives a legacy_session_id_echo field that does
        // not match what it sent in the ClientHello MUST abort the handshake with an
        // "illegal_parameter" alert." (It sent an empty one, RFC 9001 §8.4.)
        if !sh.legacy_session_id_echo.is_empty() {
            return Err(Error::IllegalParameter);
        }
        // RFC 8446 §4.1.3: "A client which receives a cipher suite that was not offered MUST
        // abort the handshake with an "illegal_parameter" alert."
        // (One offer: the codepoint compared with the one suite's, no table.)
        let suite = if self.one_offer() {
            let only = AeadAlgorithm::Aes128Gcm;
            (sh.cipher_suite == only.cipher_suite()).then_some(only)
        } else {
            AeadAlgorithm::from_cipher_suite(sh.cipher_suite).filter(|s| self.suite_offered(*s))
        }
        .ok_or(Error::IllegalParameter)?;
        if hello_retry_request {
            self.hello_retry_request(
                sh.selected_group,
                sh.cookie.is_some(),
                msg.bytes,
                suite,
                hooks,
            )?;
            return Ok(ServerHelloNext::Retry(Retry { cookie: sh.cookie }));
        }
        // RFC 8446 §4.1.4: the ServerHello after a HelloRetryRequest must keep its suite.
        // (One offer: there is one suite to keep.)
        if !self.one_offer() && self.suite.is_some_and(|s| s != suite) {
            return Err(Error::IllegalParameter);
        }
        // mote always uses (EC)DHE (psk_dhe_ke): the server must send a share.
        let share = sh.key_share.ok_or(Error::Alert(Alert::MissingExtension))?;
        // (One offer: the share was sent for X25519, the one group.)
        let group = if self.one_offer() {
            NamedGroup::X25519
        } else {
            self.kx.as_ref().ok_or_else(internal)?.group()
        };
        // RFC 8446 §4.2.8: "the selected group MUST be the same as the one in the
        // corresponding KeyShareEntry" the client sent.
        if share.group != group.codepoint() {
            return Err(Error::IllegalParameter);
        }
        self.group = Some(group);
        // RFC 8446 §4.2.11: the selected identity must be one offered, and the suite's hash
        // must be the PSK's ("Clients MUST verify that the server's selected_identity is
        // within the range supplied by the client, that the server selected a cipher suite
        // indicating a Hash associated with the PSK ...").
        self.suite = Some(suite);
        // (One offer: a PSK offered had the one suite's hash, SHA-256 — `write_client_hello`
        // refuses any other — so only the index is left to check.)
        let psk = match sh.selected_psk {
            None => false,
            Some(0) if self.psk_offered && self.one_offer() => true,
            Some(0) if self.psk_offered => {
                self.psk_source().ok_or(Error::IllegalParameter)?;
                true
            }
            Some(_) => return Err(Error::IllegalParameter),
        };
        // External-PSK mode has no other way to authenticate the server.
        if !psk && matches!(self.config.server_auth, ServerAuth::ExternalPsk(_)) {
            return Err(Error::Alert(Alert::HandshakeFailure));
        }
        self.psk_accepted = psk;
        self.select_transcript(suite.hash())?;
        self.transcript()?.update(msg.bytes);
        Ok(ServerHelloNext::HandshakeKeys { server_share: share.key_exchange })
    }

    /// RFC 8446 §7.1 after a ServerHello: the (EC)DHE shared secret with the server's share,
    /// the handshake secret and the handshake traffic secrets, installed.
    #[inline(never)]
    fn handshake_keys<H: QuicHooks>(
        &mut self,
        server_share: &[u8],
        hooks: &mut H,
    ) -> Result<(), Error> {
        let suite = self.negotiated_suite()?;
        let alg = suite.hash();
        let psk = if self.psk_accepted { self.psk_source() } else { None };
        if self.kx.is_none() {
            return Err(internal());
        }
        // The key is used where it lies and erased (issue 8: not moved out of its `Option`).
        let shared = P::KeyExchange::complete_in(&mut self.kx, server_share)?;
        let hello_hash = self.transcript()?.current_hash();
        let es = EarlySecret::new(&self.provider, alg, psk.map(|p| p.key))?;
        let hs = es.into_handshake_secret_slot(
            &self.provider,
            shared.as_ref(),
            &mut self.handshake_secret,
        )?;
        // RFC 8446 §7.1: client_/server_handshake_traffic_secret = Derive-Secret(Handshake
        // Secret, "c hs traffic" / "s hs traffic", ClientHello...ServerHello), written where
        // the session keeps them (issue 8: no secret moved through a `Result`).
        self.secrets = Stage::Handshake { client: Secret::zeroed(0), server: Secret::zeroed(0) };
        let Stage::Handshake { client, server } = &mut self.secrets else {
            return Err(internal());
        };
        let p = &self.provider;
        let hello_hash = hello_hash.as_ref();
        hs.derive_into(p, b"c hs traffic", hello_hash, client)?;
        hs.derive_into(p, b"s hs traffic", hello_hash, server)?;
        hooks.install_secrets(Secrets {
            level: KeyLevel::Handshake,
            suite,
            client,
            server: Some(server),
        })?;
        self.state = State::WaitEncryptedExtensions;
        Ok(())
    }

    /// RFC 8446 §4.1.4: checks a HelloRetryRequest and prepares the second ClientHello (the
    /// transcript's `message_hash`, a key share of the group asked for), which the caller
    /// writes ([`Retry`]). Takes the two fields it checks, not the parsed message (issue 8:
    /// the caller does not build the whole `ServerHello` in its frame to lend it). Inlined
    /// into `server_hello` (issue 8: −68 B); `cargo xtask stack` bounds the HelloRetryRequest
    /// path from `Client<P>::server_hello`, whose frame holds it.
    fn hello_retry_request<H: QuicHooks>(
        &mut self,
        selected_group: Option<u16>,
        cookie: bool,
        bytes: &[u8],
        suite: AeadAlgorithm,
        hooks: &mut H,
    ) -> Result<(), Error> {
        // RFC 8446 §4.1.4: "If a client receives a second HelloRetryRequest in the same
        // connection ..., it MUST abort the handshake with an "unexpected_message" alert."
        if self.retried {
            return Err(Error::UnexpectedMessage);
        }
        self.retried = true;
        let current = self.kx.as_ref().ok_or_else(internal)?.group();
        // RFC 8446 §4.2.8: the selected group must be one the client supports and not the
        // one it already sent a share for (illegal_parameter).
        let group = match selected_group {
            Some(cp) => {
                // One offer: the one group offered is the one the share was sent for, so
                // no group can be asked for.
                let g = NamedGroup::from_codepoint(cp)
                    .filter(|g| {
                        !self.one_offer() && self.offered_groups().contains(g) && *g != current
                    })
                    .ok_or(Error::IllegalParameter)?;
                Some(g)
            }
            None => None,
        };
        // RFC 8446 §4.1.4: "Clients MUST abort the handshake with an "illegal_parameter"
        // alert if the HelloRetryRequest would not result in any change in the ClientHello."
        if group.is_none() && !cookie {
            return Err(Error::IllegalParameter);
        }
        self.suite = Some(suite);
        // RFC 8446 §4.4.1: ClientHello1 becomes message_hash, followed by the HRR.
        self.select_transcript(suite.hash())?;
        // (Restarted in its slot: one copy of the hash state fewer on a device.)
        let slot = self.transcripts.first_mut().ok_or_else(internal)?;
        let ch1 = slot.as_ref().ok_or_else(internal)?.current_hash();
        Transcript::start_in(&self.provider, suite.hash(), slot)?;
        let t = slot.as_mut().ok_or_else(internal)?;
        t.update_message_hash(ch1.as_ref());
        t.update(bytes);
        if let Some(g) = group {
            self.provider.start_key_exchange_in(g, hooks.rng(), &mut self.kx)?;
        }
        // RFC 8446 §4.2.10: a HelloRetryRequest rejects 0-RTT, and the second ClientHello
        // must not offer it.
        if self.early_data == EarlyData::Offered {
            self.early_data = EarlyData::Rejected;
            hooks.early_data(false);
        }
        Ok(())
    }

    // Inlined into the handshake reader (issue 8: −40 B of flash). The reader's frame grows
    // and sits under the ServerHello's key installation (2,672 B static with the two
    // handlers below), still under the connection constructor's chain, the deepest.
    fn encrypted_extensions<H: QuicHooks>(
        &mut self,
        body: &[u8],
        hooks: &mut H,
    ) -> Result<(), Error> {
        let ee = EncryptedExtensions::parse(body)?;
        // RFC 8446 §4.2: "If an implementation receives an extension which it recognizes and
        // which it did not request in the associated ClientHello, it MUST abort the
        // handshake with an "unsupported_extension" alert." An extension mote does not know
        // was certainly not requested.
        let unsupported = Error::Alert(Alert::UnsupportedExtension);
        if ee.unknown_extension {
            return Err(unsupported);
        }
        let rpk_mode = matches!(self.config.server_auth, ServerAuth::RawPublicKeys(_));
        let sent_server_name = self.config.server_name.and_then(sni_host_name).is_some();
        if (ee.server_name_acknowledged && !sent_server_name)
            || (ee.server_certificate_type.is_some() && !rpk_mode)
            || (ee.client_certificate_type.is_some() && self.client_key().is_none())
            || (ee.early_data && self.early_data != EarlyData::Offered)
        {
            return Err(unsupported);
        }
        // RFC 7250 §4.2: the server picks one of the offered types; only RawPublicKey was.
        let rpk = Some(certificate_type::RAW_PUBLIC_KEY);
        if ee.server_certificate_type.is_some_and(|t| Some(t) != rpk)
            || ee.client_certificate_type.is_some_and(|t| Some(t) != rpk)
        {
            return Err(Error::IllegalParameter);
        }
        self.client_cert_rpk = ee.client_certificate_type.is_some();
        // RFC 9001 §8.1: no negotiated protocol is no_application_protocol; a protocol the
        // client did not offer is treated the same.
        let no_alpn = Error::Alert(Alert::NoApplicationProtocol);
        let alpn = ee.alpn.ok_or(no_alpn)?;
        self.alpn = Some(self.config.alpn.iter().position(|a| *a == alpn).ok_or(no_alpn)?);
        // RFC 9001 §8.2: "endpoints that receive ClientHello or EncryptedExtensions messages
        // without the quic_transport_parameters extension MUST close the connection with an
        // error of type 0x016d (equivalent to a fatal TLS missing_extension alert)".
        let tp = ee.quic_transport_parameters.ok_or(Error::Alert(Alert::MissingExtension))?;
        hooks.peer_transport_parameters(tp)?;
        if self.early_data == EarlyData::Offered {
            if ee.early_data {
                // RFC 8446 §4.2.10: accepted early data means the first PSK was selected,
                // with the ticket's suite and ALPN.
                let r = self.resumption.ok_or_else(internal)?;
                // (One offer: 0-RTT was offered only with a ticket of the one suite, which
                // the ServerHello kept.)
                let same_suite = self.one_offer() || self.suite == Some(r.ticket.suite);
                if !self.psk_accepted || !same_suite || alpn != r.ticket.alpn {
                    return Err(Error::IllegalParameter);
                }
                self.early_data = EarlyData::Accepted;
            } else {
                self.early_data = EarlyData::Rejected;
            }
            hooks.early_data(self.early_data == EarlyData::Accepted);
        }
        if !self.psk_accepted && rpk_mode && ee.server_certificate_type.is_none() {
            // RFC 7250 §4.2: without server_certificate_type the server would send X.509,
            // which this configuration cannot verify.
            return Err(Error::Alert(Alert::UnsupportedCertificate));
        }
        self.state =
            if self.psk_accepted { State::WaitFinished } else { State::WaitCertificateOrRequest };
        Ok(())
    }

    // Inlined into the handshake reader (issue 8, with the Certificate's: −88 B of flash;
    // see `encrypted_extensions` for the stack).
    fn certificate_request(&mut self, body: &[u8]) -> Result<(), Error> {
        let cr = CertificateRequest::parse(body)?;
        // RFC 8446 §4.3.2: the context "SHALL be zero length unless used for the
        // post-handshake authentication exchanges".
        if !cr.context.is_empty() {
            return Err(Error::IllegalParameter);
        }
        // Answer with our raw public key if RawPublicKey was negotiated and the server
        // accepts our scheme; otherwise with an empty Certificate (RFC 8446 §4.4.2).
        let scheme = self
            .client_key()
            .map(|k| k.scheme())
            .filter(|s| self.client_cert_rpk && cr.signature_algorithms.contains(s.codepoint()));
        self.cert_request = Some(scheme);
        self.state = State::WaitCertificate;
        Ok(())
    }

    // Inlined into the handshake reader (issue 8, with the CertificateRequest's: −88 B;
    // see `encrypted_extensions` for the stack) — except with X.509, whose chain check's
    // locals would add ~3.3 KB to the reader's frame, under every later handler.
    #[cfg_attr(feature = "x509", inline(never))]
    fn certificate(&mut self, body: &[u8]) -> Result<(), Error> {
        let (cert, end_entity) = Certificate::parse_end_entity(body)?;
        // RFC 8446 §4.4.2: the server's certificate_request_context is empty.
        if !cert.context.is_empty() {
            return Err(Error::IllegalParameter);
        }
        let more = end_entity.more;
        // RFC 8446 §4.4.2.4: "If the server supplies an empty Certificate message, the client
        // MUST abort the handshake with a "decode_error" alert."
        let end_entity = end_entity.data.ok_or(Error::BadLength)?;
        #[cfg(feature = "x509")]
        if let ServerAuth::X509(verifier) = self.config.server_auth {
            let (spki, len) = &mut self.x509_spki;
            *len = crate::x509::verify_server_chain(
                &self.provider,
                &verifier,
                &cert,
                self.config.server_name,
                self.unix_time_s,
                spki,
            )?;
            self.state = State::WaitCertificateVerify;
            return Ok(());
        }
        let ServerAuth::RawPublicKeys(pinned) = self.config.server_auth else {
            return Err(Error::UnexpectedMessage);
        };
        // RFC 7250 §3: a raw public key Certificate carries exactly one entry.
        if more {
            return Err(Error::Alert(Alert::BadCertificate));
        }
        parse_spki(end_entity)?;
        // A key that is not pinned is bad_certificate (RFC 8446 §6.2: "A certificate was
        // corrupt, contained signatures that did not verify correctly, etc."): the entry is
        // well formed but not acceptable. decrypt_error is kept for the signature check.
        let index = pinned
            .iter()
            .position(|k| ct_eq(k, end_entity))
            .ok_or(Error::Alert(Alert::BadCertificate))?;
        self.server_key = Some(index);
        self.state = State::WaitCertificateVerify;
        Ok(())
    }

    /// RFC 8446 §4.4.3: the server's CertificateVerify, a signature over `hash`, the
    /// transcript hash of the messages before it.
    #[inline(never)]
    fn certificate_verify(&mut self, body: &[u8], hash: &Digest) -> Result<(), Error> {
        let cv = CertificateVerify::parse(body)?;
        let spki: &[u8] = match self.config.server_auth {
            ServerAuth::RawPublicKeys(pinned) => {
                self.server_key.and_then(|i| pinned.get(i)).ok_or_else(internal)?
            }
            #[cfg(feature = "x509")]
            ServerAuth::X509(_) => self.x509_spki.0.get(..self.x509_spki.1).ok_or_else(internal)?,
            ServerAuth::ExternalPsk(_) => return Err(internal()),
        };
        let (scheme, key) = parse_spki(spki)?;
        // RFC 8446 §4.4.3: the scheme must be one the client offered and fit the key.
        // (One offer: the key's scheme was offered if it is the one the provider verifies,
        // since this pinned key, or X.509, uses it.)
        let offered = if self.one_offer() {
            self.provider.verify_schemes() == [scheme]
        } else {
            self.offered_schemes().contains(&scheme)
        };
        if cv.scheme != scheme.codepoint() || !offered {
            return Err(Error::IllegalParameter);
        }
        verify_certificate_verify(
            &self.provider,
            Side::Server,
            scheme,
            key,
            hash.as_ref(),
            cv.signature,
        )?;
        self.state = State::WaitFinished;
        Ok(())
    }

    /// After the server Finished verified: writes the application traffic secrets into
    /// `app`, for [`Self::install_application_secrets`], and sends the client's Finished.
    #[inline(never)]
    fn finished<H: QuicHooks>(
        &mut self,
        suite: AeadAlgorithm,
        hooks: &mut H,
        app: &mut ApplicationSecrets,
    ) -> Result<(), Error> {
        let alg = suite.hash();
        let server_finished_hash = self.transcript()?.current_hash();
        let master =
            HandshakeSecret::take_into_master_secret(&mut self.handshake_secret, &self.provider)?;
        let p = &self.provider;
        // RFC 8446 §7.1: client_/server_application_traffic_secret_0 = Derive-Secret(Master
        // Secret, "c ap traffic" / "s ap traffic", ClientHello...server Finished), written
        // into the caller's `app` (issue 8: no secret moved through a `Result`).
        let server_finished_hash = server_finished_hash.as_ref();
        master.derive_into(p, b"c ap traffic", server_finished_hash, &mut app.client)?;
        master.derive_into(p, b"s ap traffic", server_finished_hash, &mut app.server)?;
        // The client's second flight, at the Handshake level: with a key to present (a
        // CertificateRequest that allows its scheme), Certificate and CertificateVerify and
        // Finished; otherwise (always, without `client-auth`) Finished, after an empty
        // Certificate if one was requested, written in one go.
        let client_finished_hash = match (self.cert_request, self.client_key()) {
            (Some(Some(_)), Some(key)) => {
                self.send_client_certificate(key, hooks)?;
                self.send_client_finished(alg, hooks)?
            }
            (request, _) => self.send_finished_flight(alg, request.is_some(), hooks)?,
        };
        // RFC 8446 §7.1: exporter_master_secret ("exp master", through the server Finished)
        // and resumption_master_secret ("res master", through the client Finished), written
        // where the session keeps them once the handshake secrets are no longer needed
        // (issue 8: not derived into locals and moved). If either fails, neither is kept
        // (`Start`, which `ClientSession::export` treats as before completion).
        self.secrets =
            Stage::Connected { exporter: Secret::zeroed(0), resumption_master: Secret::zeroed(0) };
        let Stage::Connected { exporter, resumption_master } = &mut self.secrets else {
            return Err(internal());
        };
        let p = &self.provider;
        let derived =
            master.derive_into(p, b"exp master", server_finished_hash, exporter).and_then(|()| {
                master.derive_into(
                    p,
                    b"res master",
                    client_finished_hash.as_ref(),
                    resumption_master,
                )
            });
        if derived.is_err() {
            self.secrets = Stage::Start;
        }
        derived
    }

    /// RFC 8446 §4.4.4: checks the server Finished against `hash`, the transcript hash of
    /// the messages before it (one that does not verify is decrypt_error); the client
    /// handshake traffic secret stays in the session for the client's Finished. Inlined into
    /// [`Self::finished_then_keys`] (issue 8: −44 B of flash; its frame grows by 96 B, off
    /// the deepest path, which is the ServerHello's key installation).
    fn verify_server_finished(
        &mut self,
        body: &[u8],
        hash: &Digest,
        alg: HashAlgorithm,
    ) -> Result<(), Error> {
        let fin = Finished::parse(body, alg.output_len())?;
        // The secrets are read where they are (no copy of the stage in this frame); both are
        // erased (`Start`) if the Finished does not verify, else the client's is used for
        // its Finished and both are replaced by the `Connected` stage.
        let Stage::Handshake { server: server_hs, .. } = &self.secrets else {
            return Err(internal());
        };
        if let Err(e) =
            verify_finished(&self.provider, alg, server_hs.as_ref(), hash.as_ref(), fin.verify_data)
        {
            self.secrets = Stage::Start;
            return Err(e);
        }
        Ok(())
    }

    /// RFC 8446 §4.4.4: the client's Finished, at the Handshake level; returns the transcript
    /// hash through it (for the resumption master secret). Inlined: out of line it saves
    /// another 96 B of `finished`'s frame for 48 B of flash (issue 8).
    fn send_client_finished<H: QuicHooks>(
        &mut self,
        alg: HashAlgorithm,
        hooks: &mut H,
    ) -> Result<Digest, Error> {
        let hash = self.transcript()?.current_hash();
        let Stage::Handshake { client: client_hs, .. } = &self.secrets else {
            return Err(internal());
        };
        let verify_data =
            finished_verify_data(&self.provider, alg, client_hs.as_ref(), hash.as_ref())?;
        let t = self.transcripts.first_mut().and_then(Option::as_mut).ok_or_else(internal)?;
        send_message(hooks, Level::Handshake, t, |out, _| {
            Finished::emit(verify_data.as_ref(), out)
        })?;
        Ok(t.current_hash())
    }

    /// The server Finished, then the 1-RTT keys: installed once `finished`'s frame (the key
    /// schedule's secrets and hashes) is gone (issue 8: not under it on a device's stack).
    /// Out of line: the application secrets are not in the frame of every message handler.
    #[inline(never)]
    fn finished_then_keys<H: QuicHooks>(
        &mut self,
        body: &[u8],
        hash: &Digest,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let suite = self.negotiated_suite()?;
        // Checked before `finished`'s frame exists: the check's key derivation is not under
        // it on a device's stack (issue 8).
        self.verify_server_finished(body, hash, suite.hash())?;
        let mut app =
            ApplicationSecrets { suite, client: Secret::zeroed(0), server: Secret::zeroed(0) };
        self.finished(suite, hooks, &mut app)?;
        self.install_application_secrets(&app, hooks)
    }

    /// RFC 8446 §7.1, RFC 9001 §4.1.4: after the client Finished, the 1-RTT keys from the
    /// application traffic secrets; the handshake is complete.
    fn install_application_secrets<H: QuicHooks>(
        &mut self,
        app: &ApplicationSecrets,
        hooks: &mut H,
    ) -> Result<(), Error> {
        hooks.install_secrets(Secrets {
            level: KeyLevel::OneRtt,
            suite: app.suite,
            client: &app.client,
            server: Some(&app.server),
        })?;
        self.state = State::Connected;
        hooks.handshake_complete();
        Ok(())
    }

    /// RFC 8446 §4.4.2/§4.4.3: the client's Certificate (its raw public key) and its
    /// CertificateVerify.
    fn send_client_certificate<H: QuicHooks>(
        &mut self,
        key: &(dyn mote_crypto::SigningKey + Sync),
        hooks: &mut H,
    ) -> Result<(), Error> {
        let t = self.transcripts.first_mut().and_then(Option::as_mut).ok_or_else(internal)?;
        let mut spki = [0u8; crate::P256_SPKI_LEN];
        let spki_len = crate::encode_spki(key.scheme(), key.public_key(), &mut spki)?;
        let spki = spki.get(..spki_len).ok_or_else(internal)?;
        send_message(hooks, Level::Handshake, t, |out, _| {
            msgs::emit_certificate(&[], &[spki], out)
        })?;
        let hash = t.current_hash();
        let mut sig = [0u8; MAX_SIGNATURE_LEN];
        let sig_len =
            sign_certificate_verify(key, hooks.rng(), Side::Client, hash.as_ref(), &mut sig)?;
        let sig = sig.get(..sig_len).ok_or_else(internal)?;
        send_message(hooks, Level::Handshake, t, |out, _| {
            msgs::emit_certificate_verify(key.scheme().codepoint(), sig, out)
        })
    }

    /// RFC 8446 §4.4.2, §4.4.4: the client's second flight without a key to present: an
    /// empty Certificate if `empty_certificate` (a CertificateRequest came; always the same
    /// bytes, [`msgs::EMPTY_CERTIFICATE`]), then its Finished, written into QUIC's send
    /// buffer together and each added to the transcript; returns the transcript hash
    /// through the Finished (for the resumption master secret). One send for both (issue 8:
    /// a device, which never has a key, builds only this).
    fn send_finished_flight<H: QuicHooks>(
        &mut self,
        alg: HashAlgorithm,
        empty_certificate: bool,
        hooks: &mut H,
    ) -> Result<Digest, Error> {
        let Stage::Handshake { client: client_hs, .. } = &self.secrets else {
            return Err(internal());
        };
        let t = self.transcripts.first_mut().and_then(Option::as_mut).ok_or_else(internal)?;
        let SendBuffer { space, .. } = hooks.send_buffer(Level::Handshake);
        let mut len = 0;
        if empty_certificate {
            let certificate = &msgs::EMPTY_CERTIFICATE;
            len = certificate.len();
            space.get_mut(..len).ok_or(Error::BufferTooSmall)?.copy_from_slice(certificate);
            t.update(certificate);
        }
        let hash = t.current_hash();
        // RFC 8446 §4.4.4: the Finished, its verify_data written in place behind the header
        // (no Digest returned and copied: issue 8).
        let out = space.get_mut(len..).ok_or(Error::BufferTooSmall)?;
        let (header, body) = out.split_first_chunk_mut::<4>().ok_or(Error::BufferTooSmall)?;
        let n = finished_verify_data_into(
            &self.provider,
            alg,
            client_hs.as_ref(),
            hash.as_ref(),
            body,
        )?;
        *header = [ht::FINISHED, 0, 0, n as u8];
        let n = n + 4;
        t.update(out.get(..n).ok_or(Error::BufferTooSmall)?);
        hooks.sent(Level::Handshake, len + n);
        Ok(t.current_hash())
    }

    #[inline(never)]
    fn new_session_ticket<H: QuicHooks>(
        &mut self,
        msg: HandshakeMessage<'_>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let nst = NewSessionTicket::parse(msg.body)?;
        // RFC 9001 §4.6.1: "A client that receives a NewSessionTicket message with a
        // max_early_data_size other than 0xffffffff MUST treat it as a connection error of
        // type PROTOCOL_VIOLATION" (when the early_data extension is present).
        if nst.max_early_data_size.is_some_and(|m| m != u32::MAX) {
            return Err(Error::Transport(transport_error::PROTOCOL_VIOLATION));
        }
        // RFC 8446 §4.6.1: a lifetime of zero means "discard immediately".
        if nst.lifetime == 0 {
            return Ok(());
        }
        let suite = self.negotiated_suite()?;
        let Stage::Connected { resumption_master, .. } = &self.secrets else {
            return Err(internal());
        };
        // RFC 8446 §4.6.1: the ticket's PSK (`resumption_psk`), derived in this frame.
        let mut psk = Secret::zeroed(0);
        let (p, rms) = (&self.provider, resumption_master.as_ref());
        derive_secret_into(p, suite.hash(), rms, b"resumption", nst.nonce, &mut psk)?;
        let alpn = self.config.alpn.get(self.alpn.ok_or_else(internal)?).copied().unwrap_or(&[]);
        hooks.new_ticket(&Ticket {
            identity: nst.ticket,
            psk: psk.as_ref(),
            suite,
            age_add: nst.age_add,
            lifetime_s: nst.lifetime.min(MAX_TICKET_LIFETIME_S),
            early_data: nst.max_early_data_size.is_some(),
            alpn,
            server_transport_parameters: &[],
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::sni_host_name;

    /// Regression (found against aioquic): an IP-address server name went into server_name,
    /// which RFC 6066 §3 forbids; aioquic's own client leaves it out.
    #[test]
    fn ip_literals_are_not_host_names() {
        for ip in [&b"127.0.0.1"[..], b"192.0.2.10", b"::1", b"2001:db8::17", b"fe80::1%eth0"] {
            assert_eq!(sni_host_name(ip), None, "{}", core::str::from_utf8(ip).unwrap());
        }
        for name in
            [&b"mote.example"[..], b"broker", b"1.example", b"a1.2.3.4", b"xn--bcher-kva.ch"]
        {
            assert_eq!(sni_host_name(name), Some(name));
        }
        assert_eq!(sni_host_name(b""), None);
        assert_eq!(sni_host_name(b"."), None);
    }

    /// Regression (found probing with the aioquic harness): a fully qualified name's trailing
    /// dot went into server_name; RFC 6066 §3 wants the host name "without a trailing dot".
    #[test]
    fn trailing_dot_is_dropped() {
        assert_eq!(sni_host_name(b"mote.example."), Some(&b"mote.example"[..]));
        assert_eq!(sni_host_name(b"127.0.0.1."), None);
    }
}
