//! The server handshake state machine (RFC 8446 §4, over QUIC per RFC 9001), feature
//! `server`.
//!
//! ```text
//! WaitClientHello ──(no acceptable key share)──▶ HelloRetryRequest ──▶ WaitClientHello
//!        │ ClientHello
//!        ▼ ServerHello, EncryptedExtensions, [CertificateRequest], [Certificate,
//!        │ CertificateVerify], Finished; 1-RTT keys
//!        ├──(CertificateRequest)──▶ WaitClientCertificate ─▶ [WaitClientCertificateVerify]
//!        ▼                                                        │
//!  WaitClientFinished ◀────────────────────────────────────────────┘
//!        ▼ NewSessionTicket* (1-RTT)
//!    Connected
//! ```

use mote_crypto::{
    AeadAlgorithm, CryptoProvider, KeyExchange as _, NamedGroup, Secret, SignatureScheme,
    MAX_PUBLIC_KEY_LEN, MAX_SIGNATURE_LEN, NONCE_LEN,
};

use crate::client::{send_message, suite_built};
use crate::config::{ServerConfig, ServerIdentity};
use crate::key_schedule::{
    self, resumption_psk, EarlySecret, HandshakeSecret, MasterSecret, PskKind,
};
use crate::msgs::{
    self, certificate_type, check_quic_message_type, handshake_type as ht, Certificate,
    CertificateVerify, ClientHello, EncryptedExtensionsParams, Finished, HandshakeMessage,
    HelloRetryRequestParams, KeyShareEntry, NewSessionTicketParams, ServerHelloParams, PSK_DHE_KE,
    TLS13,
};
use crate::session::{KeyLevel, Level, QuicHooks, RxBuffer, Secrets, SendBuffer};
use crate::small::Small;
use crate::ticket::{
    open_ticket, seal_ticket, strike_id, ReplayCheck, SealedState, MAX_TICKET_LEN,
};
use crate::{
    certificate_verify_content, ct_eq, finished_verify_data, parse_spki, sign_certificate_verify,
    transport_error, verify_certificate_verify, verify_finished, verify_psk_binder, Alert, Error,
    Side, Transcript, MAX_CERTIFICATE_VERIFY_CONTENT_LEN,
};

const MAX_TICKET_LIFETIME_S: u32 = 604_800;

/// PSK identities of one ClientHello the server considers.
const MAX_PSK_IDENTITIES_TRIED: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    WaitClientHello,
    /// The CertificateVerify signature is being computed by the caller.
    WaitSignature,
    WaitClientCertificate,
    WaitClientCertificateVerify,
    WaitClientFinished,
    Connected,
}

impl State {
    fn level(self) -> Level {
        match self {
            Self::WaitClientHello => Level::Initial,
            Self::Connected => Level::OneRtt,
            _ => Level::Handshake,
        }
    }
}

/// The PSK the server selected.
#[derive(Clone, Copy)]
struct ChosenPsk<'s> {
    index: usize,
    key: &'s [u8],
    hash: mote_crypto::HashAlgorithm,
    kind: PskKind,
    obfuscated_age: u32,
    identity: &'s [u8],
    ticket: Option<SealedState<'s>>,
    /// The [`crate::ClientAuth::allowed`] key the ticket's client authenticated with.
    client_key: Option<usize>,
}

/// The server's flight between its Certificate and its Finished.
struct Flight<H: mote_crypto::Hash> {
    transcript: Transcript<H>,
    hs: HandshakeSecret,
    client_hs: Secret,
    server_hs: Secret,
}

/// A flight waiting for its CertificateVerify signature (crypto offload).
struct Pending<'c, H: mote_crypto::Hash> {
    flight: Flight<H>,
    key: &'c (dyn mote_crypto::SigningKey + Sync),
    content: [u8; MAX_CERTIFICATE_VERIFY_CONTENT_LEN],
    len: usize,
}

/// A CertificateVerify signature for the caller to compute (RFC 8446 §4.4.3), e.g. on a
/// worker core or an accelerator, when [`crate::ServerConfig::defer_signatures`] is set.
#[derive(Clone, Copy)]
pub struct SignatureRequest<'a> {
    /// The key to sign with (the configured identity's).
    pub key: &'a (dyn mote_crypto::SigningKey + Sync),
    /// The scheme, as the key signs.
    pub scheme: SignatureScheme,
    /// The exact bytes to sign (the CertificateVerify content: 64 spaces, the context
    /// string, a zero byte and the transcript hash).
    pub message: &'a [u8],
}

/// How the server authenticates itself in a full handshake.
#[derive(Clone, Copy)]
enum CertChoice<'c> {
    RawPublicKey(&'c (dyn mote_crypto::SigningKey + Sync)),
    X509(ServerIdentity<'c>),
}

/// A TLS 1.3 server handshake over QUIC (feature `server`). `RX` bounds the ClientHello and
/// client Certificate it buffers (RFC 9000 §7.5 asks for at least 4096).
pub struct ServerSession<'c, P: CryptoProvider, const RX: usize = 4096> {
    rx: RxBuffer<RX>,
    core: Server<'c, P>,
}

struct Server<'c, P: CryptoProvider> {
    provider: P,
    config: &'c ServerConfig<'c>,
    now_ms: u64,
    state: State,
    error: Option<Error>,
    transcript: Option<Transcript<P::Hash>>,
    suite: Option<AeadAlgorithm>,
    hrr_group: Option<NamedGroup>,
    group: Option<NamedGroup>,
    psk_accepted: bool,
    early_data: Option<bool>,
    alpn: Option<usize>,
    client_auth: bool,
    client_key: Option<usize>,
    tickets_allowed: bool,
    client_hs: Secret,
    pending: Option<Pending<'c, P::Hash>>,
    master: Option<MasterSecret>,
    exporter: Secret,
}

fn internal() -> Error {
    Error::Alert(Alert::InternalError)
}

impl<'c, P: CryptoProvider, const RX: usize> ServerSession<'c, P, RX> {
    /// A server for `config`. `now_ms` is the caller's clock in milliseconds (any epoch that
    /// is the same for every connection sharing the ticket keys): tickets record it, and
    /// resumption checks ticket ages against it.
    pub fn new(provider: P, config: &'c ServerConfig<'c>, now_ms: u64) -> Self {
        Self {
            rx: RxBuffer::new(),
            core: Server {
                provider,
                config,
                now_ms,
                state: State::WaitClientHello,
                error: None,
                transcript: None,
                suite: None,
                hrr_group: None,
                group: None,
                psk_accepted: false,
                early_data: None,
                alpn: None,
                client_auth: false,
                client_key: None,
                tickets_allowed: false,
                client_hs: Secret::zeroed(0),
                pending: None,
                master: None,
                exporter: Secret::zeroed(0),
            },
        }
    }

    /// Updates the clock (milliseconds) used for ticket issue times and age checks.
    pub fn set_time(&mut self, now_ms: u64) {
        self.core.now_ms = now_ms;
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
        if let Err(e) = result {
            core.error = Some(e);
        }
        result
    }

    /// With [`crate::ServerConfig::defer_signatures`]: the signature the server's flight is
    /// waiting for, after a `read_handshake` that processed the ClientHello.
    pub fn signature_request(&self) -> Option<SignatureRequest<'_>> {
        let p = self.core.pending.as_ref()?;
        Some(SignatureRequest {
            key: p.key,
            scheme: p.key.scheme(),
            message: p.content.get(..p.len)?,
        })
    }

    /// Resumes the server's flight with the signature for [`ServerSession::signature_request`]
    /// (TLS wire format, DER for ECDSA): writes CertificateVerify and Finished and installs
    /// the 1-RTT secrets, as `read_handshake` would have.
    pub fn complete_signature<H: QuicHooks>(
        &mut self,
        signature: &[u8],
        hooks: &mut H,
    ) -> Result<(), Error> {
        if let Some(e) = self.core.error {
            return Err(e);
        }
        let result = self.core.complete_signature(signature, hooks);
        if let Err(e) = result {
            self.core.error = Some(e);
        }
        result
    }

    /// Whether the client's Finished is verified (handshake complete and confirmed).
    pub fn is_handshake_complete(&self) -> bool {
        self.core.state == State::Connected
    }

    /// The negotiated cipher suite.
    pub fn suite(&self) -> Option<AeadAlgorithm> {
        self.core.suite
    }

    /// The key-exchange group.
    pub fn group(&self) -> Option<NamedGroup> {
        self.core.group
    }

    /// Whether a HelloRetryRequest was sent.
    pub fn hello_retry_request(&self) -> bool {
        self.core.hrr_group.is_some()
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&'c [u8]> {
        self.core.config.alpn.get(self.core.alpn?).copied()
    }

    /// Whether a PSK (ticket or external) was accepted.
    pub fn psk_accepted(&self) -> bool {
        self.core.psk_accepted
    }

    /// `Some(accepted)` when the client offered 0-RTT.
    pub fn early_data_accepted(&self) -> Option<bool> {
        self.core.early_data
    }

    /// Which [`crate::ClientAuth::allowed`] key the client proved it holds: in this
    /// handshake, or (resuming) in the one that issued its ticket, if that key is still at
    /// the same place in the list.
    pub fn client_key_index(&self) -> Option<usize> {
        self.core.client_key
    }

    /// The error that failed the handshake, if any.
    pub fn error(&self) -> Option<Error> {
        self.core.error
    }

    /// RFC 8446 §7.5: TLS-Exporter(label, context, out.len()), once the server Finished is
    /// sent.
    pub fn export(&self, label: &[u8], context: &[u8], out: &mut [u8]) -> Result<(), Error> {
        let c = &self.core;
        let suite = c.suite.ok_or(Error::UnexpectedMessage)?;
        if c.exporter.is_empty() {
            return Err(Error::UnexpectedMessage);
        }
        key_schedule::export(&c.provider, suite.hash(), c.exporter.as_ref(), label, context, out)
    }
}

impl<'c, P: CryptoProvider> Server<'c, P> {
    fn handle<H: QuicHooks>(
        &mut self,
        level: Level,
        msg: HandshakeMessage<'_>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        // RFC 9001 §6 and §8.3: KeyUpdate and EndOfEarlyData do not exist over QUIC.
        check_quic_message_type(msg.typ)?;
        if level != self.state.level() {
            return Err(Error::UnexpectedMessage);
        }
        match (self.state, msg.typ) {
            (State::WaitClientHello, ht::CLIENT_HELLO) => self.client_hello(msg, hooks),
            (State::WaitClientCertificate, ht::CERTIFICATE) => self.client_certificate(msg),
            (State::WaitClientCertificateVerify, ht::CERTIFICATE_VERIFY) => {
                self.client_certificate_verify(msg)
            }
            (State::WaitClientFinished, ht::FINISHED) => self.client_finished(msg, hooks),
            _ => Err(Error::UnexpectedMessage),
        }
    }

    fn suites(&self) -> Small<AeadAlgorithm, 3> {
        let supported = self.provider.aead_algorithms();
        let wanted = if self.config.cipher_suites.is_empty() {
            supported
        } else {
            self.config.cipher_suites
        };
        let mut out = Small::new(AeadAlgorithm::Aes128Gcm);
        for s in wanted.iter().filter(|s| supported.contains(s) && suite_built(**s)) {
            out.push_unique(*s);
        }
        out
    }

    fn groups(&self) -> Small<NamedGroup, 2> {
        let supported = self.provider.groups();
        let wanted = if self.config.groups.is_empty() { supported } else { self.config.groups };
        let mut out = Small::new(NamedGroup::X25519);
        for g in wanted.iter().filter(|g| supported.contains(g)) {
            out.push_unique(*g);
        }
        out
    }

    /// Finds the first offered PSK identity the server knows (an external PSK or one of its
    /// tickets, unexpired) whose hash fits a suite both sides have. Returns its index.
    /// `context`: what tickets must be bound to ([`QuicHooks::ticket_context`]).
    fn find_psk(
        &self,
        ch: &ClientHello<'_>,
        suites: &Small<AeadAlgorithm, 3>,
        context: u32,
    ) -> Option<usize> {
        let offered = ch.pre_shared_key?;
        // RFC 8446 §4.2.9: "Servers MUST NOT select a key exchange mode that is not listed by
        // the client"; mote only does psk_dhe_ke.
        if !ch.psk_key_exchange_modes?.contains(&PSK_DHE_KE) {
            return None;
        }
        // Holds a decrypted ticket, resumption PSK included: erased when it goes out of scope.
        let mut scratch = zeroize::Zeroizing::new([0u8; MAX_TICKET_LEN]);
        // Each identity may cost an AEAD open: look at the first few only, so a ClientHello
        // listing thousands of identities cannot buy much server work.
        offered.identities().take(MAX_PSK_IDENTITIES_TRIED).enumerate().find_map(|(i, id)| {
            let age = id.obfuscated_ticket_age;
            let hash = self.psk_for(id.identity, age, context, &mut scratch)?.hash;
            let usable = suites.as_slice().iter().any(|s| {
                s.hash() == hash
                    && ch.cipher_suites.contains(s.cipher_suite())
                    && self.suite.is_none_or(|h| h == *s)
            });
            usable.then_some(i)
        })
    }

    /// The PSK behind `identity`: an external PSK, or a ticket sealed by one of our keys
    /// under `context` and not expired (RFC 8446 §4.6.1: not used beyond its lifetime).
    fn psk_for<'s>(
        &self,
        identity: &'s [u8],
        obfuscated_age: u32,
        context: u32,
        scratch: &'s mut [u8; MAX_TICKET_LEN],
    ) -> Option<ChosenPsk<'s>>
    where
        'c: 's,
    {
        if let Some(ext) = self.config.external_psks.iter().find(|e| ct_eq(e.identity, identity)) {
            return Some(ChosenPsk {
                index: 0,
                key: ext.key,
                hash: ext.hash,
                kind: PskKind::External,
                obfuscated_age,
                identity,
                ticket: None,
                client_key: None,
            });
        }
        let tickets = self.config.tickets?;
        let state = open_ticket(&self.provider, tickets.keys, identity, context, scratch)?;
        let server_age = self.now_ms.saturating_sub(state.issued_ms);
        if server_age > u64::from(state.lifetime_s) * 1000 {
            return None;
        }
        // A PSK handshake has no CertificateRequest (RFC 8446 §4.3.2), so with client
        // authentication configured the ticket stands in for it: it must name a key that
        // is still allowed (a removed key no longer resumes), and when authentication is
        // required a ticket from an unauthenticated client is not enough. Either way the
        // ticket is ignored and the client gets a full handshake.
        let client_key = match (self.config.client_auth, state.client_key) {
            (Some(auth), Some((index, hash))) => {
                let index = usize::try_from(index).ok()?;
                let key = auth.allowed.get(index)?;
                let now = strike_id(&self.provider, key).ok()?;
                if !ct_eq(&now, &hash) {
                    return None;
                }
                Some(index)
            }
            (Some(auth), None) if auth.required => return None,
            _ => None,
        };
        Some(ChosenPsk {
            index: 0,
            key: state.psk,
            hash: state.suite.hash(),
            kind: PskKind::Resumption,
            obfuscated_age,
            identity,
            ticket: Some(state),
            client_key,
        })
    }

    fn client_hello<H: QuicHooks>(
        &mut self,
        msg: HandshakeMessage<'_>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let ch = ClientHello::parse(msg.body)?;
        hooks.client_random(ch.random);
        let retried = self.hrr_group.is_some();
        // RFC 9001 §8.4: "A server SHOULD treat the receipt of a TLS ClientHello with a
        // non-empty legacy_session_id field as a connection error of type
        // PROTOCOL_VIOLATION."
        if !ch.legacy_session_id.is_empty() {
            return Err(Error::Transport(transport_error::PROTOCOL_VIOLATION));
        }
        // RFC 8446 §4.2.1: without TLS 1.3 in supported_versions the client wants TLS 1.2 or
        // earlier, which this server does not speak.
        if !ch.supported_versions.is_some_and(|v| v.contains(TLS13)) {
            return Err(Error::Alert(Alert::ProtocolVersion));
        }
        // RFC 9001 §8.2: quic_transport_parameters is mandatory (missing_extension).
        let peer_tp = ch.quic_transport_parameters.ok_or(Error::Alert(Alert::MissingExtension))?;
        // RFC 9001 §8.1: no common application protocol is no_application_protocol.
        let alpn = ch
            .alpn
            .and_then(|offered| self.config.alpn.iter().position(|a| offered.contains(a)))
            .ok_or(Error::Alert(Alert::NoApplicationProtocol))?;
        // RFC 8446 §4.2.10: "A client MUST NOT include the "early_data" extension in its
        // followup ClientHello."
        if retried && ch.early_data {
            return Err(Error::IllegalParameter);
        }

        let suites = self.suites();
        // RFC 9369 §5: only tickets of the version the client started in (QUIC's context
        // for the offered tickets) resume; another version's get a full handshake.
        let context = hooks.ticket_context(false);
        let psk_index = self.find_psk(&ch, &suites, context);
        // The chosen ticket's decrypted state (its PSK): erased on every return path.
        let mut scratch = zeroize::Zeroizing::new([0u8; MAX_TICKET_LEN]);
        let psk = match (psk_index, ch.pre_shared_key) {
            (Some(i), Some(offered)) => {
                let id = offered.identities().nth(i).ok_or_else(internal)?;
                let mut p = self
                    .psk_for(id.identity, id.obfuscated_ticket_age, context, &mut scratch)
                    .ok_or_else(internal)?;
                p.index = i;
                Some(p)
            }
            _ => None,
        };

        // Suite: the server's preference among the client's, fitting the PSK's hash (and
        // the ticket's own suite first, so 0-RTT stays possible), and after a
        // HelloRetryRequest the suite it named.
        let acceptable = |s: &AeadAlgorithm| {
            suites.contains(s)
                && ch.cipher_suites.contains(s.cipher_suite())
                && psk.is_none_or(|p| p.hash == s.hash())
                && self.suite.is_none_or(|h| h == *s)
        };
        let ticket_suite = psk.and_then(|p| p.ticket).map(|t| t.suite);
        let suite = ticket_suite
            .filter(acceptable)
            .or_else(|| suites.as_slice().iter().copied().find(acceptable))
            // RFC 8446 §4.1.1: no common cipher suite is handshake_failure.
            .ok_or(Error::Alert(Alert::HandshakeFailure))?;

        // Key share (RFC 8446 §4.2.8). mote always does (EC)DHE.
        let missing = Error::Alert(Alert::MissingExtension);
        let shares = ch.key_shares.ok_or(missing)?;
        let client_groups = ch.supported_groups.ok_or(missing)?;
        // "Clients MUST NOT offer any KeyShareEntry values for groups not listed in the
        // client's "supported_groups" extension."
        if shares.iter().any(|e| !client_groups.contains(e.group)) {
            return Err(Error::IllegalParameter);
        }
        let groups = self.groups();
        let chosen = groups
            .as_slice()
            .iter()
            .find_map(|g| shares.find(g.codepoint()).map(|entry| (*g, entry)));
        let (group, client_share) = match chosen {
            Some((g, entry)) => {
                // RFC 8446 §4.1.4: the second ClientHello carries the share asked for.
                if self.hrr_group.is_some_and(|h| h != g) {
                    return Err(Error::IllegalParameter);
                }
                (g, entry)
            }
            // After a HelloRetryRequest the share for the named group must be there.
            None if retried => return Err(Error::IllegalParameter),
            None => {
                // RFC 8446 §4.1.1: a common group without a share gets a HelloRetryRequest;
                // no common group at all is handshake_failure.
                let g = groups
                    .as_slice()
                    .iter()
                    .copied()
                    .find(|g| client_groups.contains(g.codepoint()))
                    .ok_or(Error::Alert(Alert::HandshakeFailure))?;
                return self.hello_retry_request(&ch, msg.bytes, suite, g, hooks);
            }
        };

        // PSK binder (RFC 8446 §4.2.11.2): over the transcript so far (empty, or
        // message_hash + HelloRetryRequest) and the ClientHello truncated before the binders.
        let mut transcript = match self.transcript.take() {
            Some(t) => t,
            None => Transcript::new(&self.provider, suite.hash())?,
        };
        if let (Some(p), Some(offered)) = (psk, ch.pre_shared_key) {
            let binder = offered.binders().nth(p.index).ok_or_else(internal)?;
            let truncated = ch.truncated_len(msg.bytes.len()).ok_or_else(internal)?;
            let partial = msg.bytes.get(..truncated).ok_or_else(internal)?;
            let es = EarlySecret::new(&self.provider, p.hash, Some(p.key))?;
            let binder_key = es.binder_key(&self.provider, p.kind)?;
            let partial_hash = transcript.hash_with(partial);
            // "If this value is not present or does not validate, the server MUST abort the
            // handshake" (decrypt_error).
            verify_psk_binder(
                &self.provider,
                p.hash,
                binder_key.as_ref(),
                partial_hash.as_ref(),
                binder,
            )?;
        }
        transcript.update(msg.bytes);

        // Server authentication for a full handshake.
        let cert = if psk.is_none() { Some(self.choose_certificate(&ch)?) } else { None };
        // Client authentication: only in full handshakes, by raw public key.
        let mut client_cert_type = None;
        if let (None, Some(auth)) = (psk, self.config.client_auth) {
            let offers_rpk = ch
                .client_certificate_types
                .is_some_and(|t| t.contains(&certificate_type::RAW_PUBLIC_KEY));
            if offers_rpk {
                client_cert_type = Some(certificate_type::RAW_PUBLIC_KEY);
                self.client_auth = true;
            } else if auth.required {
                // RFC 7250 §4.2: no certificate type in common.
                return Err(Error::Alert(Alert::UnsupportedCertificate));
            }
        }

        self.suite = Some(suite);
        self.group = Some(group);
        self.alpn = Some(alpn);
        self.psk_accepted = psk.is_some();
        if let Some(p) = psk {
            self.client_key = p.client_key;
        }
        self.tickets_allowed = ch.psk_key_exchange_modes.is_some_and(|m| m.contains(&PSK_DHE_KE));
        hooks.peer_transport_parameters(peer_tp)?;

        // 0-RTT (RFC 8446 §4.2.10, §8).
        if ch.early_data {
            let accept = psk.is_some_and(|p| self.accept_early_data(&p, suite, alpn));
            self.early_data = Some(accept);
            if accept {
                let p = psk.ok_or_else(internal)?;
                let es = EarlySecret::new(&self.provider, p.hash, Some(p.key))?;
                let ch_hash = transcript.current_hash();
                let secret = es.client_early_traffic_secret(&self.provider, ch_hash.as_ref())?;
                hooks.install_secrets(Secrets {
                    level: KeyLevel::ZeroRtt,
                    suite,
                    client: &secret,
                    server: None,
                })?;
            }
            hooks.early_data(accept);
        }

        // ServerHello.
        let kx = self.provider.start_key_exchange(group, hooks.rng())?;
        let mut public = [0u8; MAX_PUBLIC_KEY_LEN];
        let public_len = kx.public_key().len();
        public.get_mut(..public_len).ok_or_else(internal)?.copy_from_slice(kx.public_key());
        let shared = kx.complete(client_share.key_exchange)?;
        let mut random = [0u8; 32];
        hooks.rng().fill(&mut random)?;
        let sh = ServerHelloParams {
            random: &random,
            legacy_session_id_echo: &[],
            cipher_suite: suite,
            key_share: Some(KeyShareEntry {
                group: group.codepoint(),
                key_exchange: public.get(..public_len).ok_or_else(internal)?,
            }),
            selected_psk: psk.map(|p| p.index as u16),
        };
        send_message(hooks, Level::Initial, &mut transcript, |out, _| sh.emit(out))?;

        // Handshake secrets.
        let hello_hash = transcript.current_hash();
        let es = EarlySecret::new(&self.provider, suite.hash(), psk.map(|p| p.key))?;
        let hs = es.into_handshake_secret(&self.provider, shared.as_ref())?;
        let client_hs = hs.client_handshake_traffic_secret(&self.provider, hello_hash.as_ref())?;
        let server_hs = hs.server_handshake_traffic_secret(&self.provider, hello_hash.as_ref())?;
        hooks.install_secrets(Secrets {
            level: KeyLevel::Handshake,
            suite,
            client: &client_hs,
            server: Some(&server_hs),
        })?;

        // EncryptedExtensions.
        let server_cert_type = match (cert, ch.server_certificate_types) {
            (Some(CertChoice::RawPublicKey(_)), _) => Some(certificate_type::RAW_PUBLIC_KEY),
            (Some(CertChoice::X509(_)), Some(_)) => Some(certificate_type::X509),
            _ => None,
        };
        let ee = |out: &mut [u8], tp: &[u8]| {
            EncryptedExtensionsParams {
                server_name_acknowledged: ch.server_name.is_some(),
                alpn: self.config.alpn.get(alpn).copied(),
                client_certificate_type: client_cert_type,
                server_certificate_type: server_cert_type,
                early_data: self.early_data == Some(true),
                quic_transport_parameters: tp,
            }
            .emit(out)
        };
        send_message(hooks, Level::Handshake, &mut transcript, ee)?;

        // CertificateRequest (RFC 8446 §4.3.2), with the schemes we can verify.
        if self.client_auth {
            let schemes = self.provider.verify_schemes();
            send_message(hooks, Level::Handshake, &mut transcript, |out, _| {
                msgs::emit_certificate_request(&[], schemes, out)
            })?;
        }

        // Certificate and CertificateVerify.
        if let Some(cert) = cert {
            let key = match cert {
                CertChoice::RawPublicKey(key) => {
                    let mut spki = [0u8; crate::P256_SPKI_LEN];
                    let n = crate::encode_spki(key.scheme(), key.public_key(), &mut spki)?;
                    let spki = spki.get(..n).ok_or_else(internal)?;
                    send_message(hooks, Level::Handshake, &mut transcript, |out, _| {
                        msgs::emit_certificate(&[], &[spki], out)
                    })?;
                    key
                }
                CertChoice::X509(id) => {
                    send_message(hooks, Level::Handshake, &mut transcript, |out, _| {
                        msgs::emit_certificate(&[], id.x509_chain, out)
                    })?;
                    id.key
                }
            };
            let hash = transcript.current_hash();
            let flight = Flight { transcript, hs, client_hs, server_hs };
            if self.config.defer_signatures {
                // Crypto offload: the caller signs (see `signature_request`) and resumes the
                // flight with `complete_signature`.
                let mut content = [0u8; MAX_CERTIFICATE_VERIFY_CONTENT_LEN];
                let len = certificate_verify_content(Side::Server, hash.as_ref(), &mut content)?;
                self.pending = Some(Pending { flight, key, content, len });
                self.state = State::WaitSignature;
                return Ok(());
            }
            let mut sig = [0u8; MAX_SIGNATURE_LEN];
            let n =
                sign_certificate_verify(key, hooks.rng(), Side::Server, hash.as_ref(), &mut sig)?;
            let sig = sig.get(..n).ok_or_else(internal)?;
            return self.finish_flight(flight, Some((key.scheme(), sig)), hooks);
        }
        self.finish_flight(Flight { transcript, hs, client_hs, server_hs }, None, hooks)
    }

    /// The rest of the server's flight: CertificateVerify (with a signature), Finished, and
    /// the 1-RTT secrets (the server may send 0.5-RTT data).
    fn finish_flight<H: QuicHooks>(
        &mut self,
        flight: Flight<P::Hash>,
        certificate_verify: Option<(SignatureScheme, &[u8])>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let Flight { mut transcript, hs, client_hs, server_hs } = flight;
        let suite = self.suite.ok_or_else(internal)?;
        if let Some((scheme, sig)) = certificate_verify {
            send_message(hooks, Level::Handshake, &mut transcript, |out, _| {
                msgs::emit_certificate_verify(scheme.codepoint(), sig, out)
            })?;
        }
        let hash = transcript.current_hash();
        let verify_data =
            finished_verify_data(&self.provider, suite.hash(), server_hs.as_ref(), hash.as_ref())?;
        send_message(hooks, Level::Handshake, &mut transcript, |out, _| {
            Finished::emit(verify_data.as_ref(), out)
        })?;
        let server_finished_hash = transcript.current_hash();
        let master = hs.into_master_secret(&self.provider)?;
        let p = &self.provider;
        let client_ap =
            master.client_application_traffic_secret(p, server_finished_hash.as_ref())?;
        let server_ap =
            master.server_application_traffic_secret(p, server_finished_hash.as_ref())?;
        self.exporter = master.exporter_master_secret(p, server_finished_hash.as_ref())?;
        hooks.install_secrets(Secrets {
            level: KeyLevel::OneRtt,
            suite,
            client: &client_ap,
            server: Some(&server_ap),
        })?;
        self.master = Some(master);
        self.client_hs = client_hs;
        self.transcript = Some(transcript);
        self.state =
            if self.client_auth { State::WaitClientCertificate } else { State::WaitClientFinished };
        Ok(())
    }

    fn complete_signature<H: QuicHooks>(
        &mut self,
        signature: &[u8],
        hooks: &mut H,
    ) -> Result<(), Error> {
        if self.state != State::WaitSignature {
            return Err(internal());
        }
        let pending = self.pending.take().ok_or_else(internal)?;
        self.finish_flight(pending.flight, Some((pending.key.scheme(), signature)), hooks)
    }

    /// RFC 8446 §4.1.4: asks the client for a share of `group`. The server keeps its state
    /// (no stateless cookie).
    fn hello_retry_request<H: QuicHooks>(
        &mut self,
        ch: &ClientHello<'_>,
        bytes: &[u8],
        suite: AeadAlgorithm,
        group: NamedGroup,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let mut transcript = Transcript::new(&self.provider, suite.hash())?;
        transcript.update(bytes);
        transcript.replace_with_message_hash(&self.provider)?;
        let hrr = HelloRetryRequestParams {
            legacy_session_id_echo: &[],
            cipher_suite: suite,
            selected_group: Some(group),
            cookie: None,
        };
        send_message(hooks, Level::Initial, &mut transcript, |out, _| hrr.emit(out))?;
        self.transcript = Some(transcript);
        self.suite = Some(suite);
        self.hrr_group = Some(group);
        if ch.early_data {
            self.early_data = Some(false);
            hooks.early_data(false);
        }
        Ok(())
    }

    /// Picks how to authenticate: a raw public key when the client asks for one (RFC 7250),
    /// else the X.509 chain; the key's scheme must be one the client accepts.
    fn choose_certificate(&self, ch: &ClientHello<'_>) -> Result<CertChoice<'c>, Error> {
        let id = self.config.identity.ok_or(Error::Alert(Alert::HandshakeFailure))?;
        // RFC 8446 §4.2.3 / §9.2: a certificate-based handshake needs signature_algorithms.
        let schemes = ch.signature_algorithms.ok_or(Error::Alert(Alert::MissingExtension))?;
        if !schemes.contains(id.key.scheme().codepoint()) {
            return Err(Error::Alert(Alert::HandshakeFailure));
        }
        let types = ch.server_certificate_types;
        if types.is_some_and(|t| t.contains(&certificate_type::RAW_PUBLIC_KEY)) {
            return Ok(CertChoice::RawPublicKey(id.key));
        }
        // Without the extension the client takes X.509 only (RFC 7250 §4.2).
        let x509_ok = types.is_none_or(|t| t.contains(&certificate_type::X509));
        if x509_ok && !id.x509_chain.is_empty() {
            return Ok(CertChoice::X509(id));
        }
        Err(Error::Alert(Alert::UnsupportedCertificate))
    }

    /// RFC 8446 §4.2.10 and §8: 0-RTT is accepted only for the first identity, a ticket that
    /// allows it, with the ticket's suite and ALPN, an unchanged 0-RTT context, a fresh
    /// ticket age, and a first use recorded by the anti-replay register.
    fn accept_early_data(&self, psk: &ChosenPsk<'_>, suite: AeadAlgorithm, alpn: usize) -> bool {
        let (Some(ticket), Some(early), Some(tickets)) =
            (psk.ticket, self.config.early_data, self.config.tickets)
        else {
            return false;
        };
        if psk.index != 0
            || !ticket.early_data
            || ticket.suite != suite
            || self.config.alpn.get(alpn).copied() != Some(ticket.alpn)
        {
            return false;
        }
        match strike_id(&self.provider, early.context) {
            Ok(h) if ct_eq(&h, &ticket.early_context_hash) => {}
            _ => return false,
        }
        // RFC 8446 §8.3: the client's view of the ticket age against the server's.
        let client_age = psk.obfuscated_age.wrapping_sub(ticket.age_add);
        let server_age = self.now_ms.saturating_sub(ticket.issued_ms);
        let server_age = u32::try_from(server_age).unwrap_or(u32::MAX);
        if client_age.abs_diff(server_age) > tickets.max_age_skew_ms {
            return false;
        }
        let Ok(id) = strike_id(&self.provider, psk.identity) else { return false };
        let expires = ticket.issued_ms.saturating_add(u64::from(ticket.lifetime_s) * 1000);
        early.anti_replay.check_and_insert(&id, self.now_ms, expires) == ReplayCheck::Fresh
    }

    fn client_certificate(&mut self, msg: HandshakeMessage<'_>) -> Result<(), Error> {
        let cert = Certificate::parse(msg.body)?;
        // RFC 8446 §4.4.2: the context echoes the CertificateRequest's (empty).
        if !cert.context.is_empty() {
            return Err(Error::IllegalParameter);
        }
        let auth = self.config.client_auth.ok_or_else(internal)?;
        let mut entries = cert.entries();
        match entries.next() {
            // RFC 8446 §4.4.2.4: "If the client does not send any certificates ... the
            // server MAY at its discretion either continue the handshake without client
            // authentication, or abort the handshake with a "certificate_required" alert."
            None if auth.required => return Err(Error::Alert(Alert::CertificateRequired)),
            None => self.state = State::WaitClientFinished,
            Some(entry) => {
                if entries.next().is_some() {
                    return Err(Error::Alert(Alert::BadCertificate));
                }
                parse_spki(entry.data)?;
                let index = auth
                    .allowed
                    .iter()
                    .position(|k| ct_eq(k, entry.data))
                    .ok_or(Error::Alert(Alert::BadCertificate))?;
                self.client_key = Some(index);
                self.state = State::WaitClientCertificateVerify;
            }
        }
        self.transcript.as_mut().ok_or_else(internal)?.update(msg.bytes);
        Ok(())
    }

    fn client_certificate_verify(&mut self, msg: HandshakeMessage<'_>) -> Result<(), Error> {
        let cv = CertificateVerify::parse(msg.body)?;
        let auth = self.config.client_auth.ok_or_else(internal)?;
        let spki = self.client_key.and_then(|i| auth.allowed.get(i)).ok_or_else(internal)?;
        let (scheme, key) = parse_spki(spki)?;
        // RFC 8446 §4.4.3: a scheme the server offered, fitting the key.
        let offered: &[SignatureScheme] = self.provider.verify_schemes();
        if cv.scheme != scheme.codepoint() || !offered.contains(&scheme) {
            return Err(Error::IllegalParameter);
        }
        let t = self.transcript.as_mut().ok_or_else(internal)?;
        let hash = t.current_hash();
        verify_certificate_verify(
            &self.provider,
            Side::Client,
            scheme,
            key,
            hash.as_ref(),
            cv.signature,
        )?;
        t.update(msg.bytes);
        self.state = State::WaitClientFinished;
        Ok(())
    }

    fn client_finished<H: QuicHooks>(
        &mut self,
        msg: HandshakeMessage<'_>,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let suite = self.suite.ok_or_else(internal)?;
        let alg = suite.hash();
        let fin = Finished::parse(msg.body, alg.output_len())?;
        let t = self.transcript.as_mut().ok_or_else(internal)?;
        let hash = t.current_hash();
        verify_finished(
            &self.provider,
            alg,
            self.client_hs.as_ref(),
            hash.as_ref(),
            fin.verify_data,
        )?;
        t.update(msg.bytes);
        let client_finished_hash = t.current_hash();
        let master = self.master.take().ok_or_else(internal)?;
        let resumption_master =
            master.resumption_master_secret(&self.provider, client_finished_hash.as_ref())?;
        drop(master);
        self.client_hs = Secret::zeroed(0);
        self.transcript = None;
        self.state = State::Connected;
        hooks.handshake_complete();
        if self.tickets_allowed {
            self.issue_tickets(&resumption_master, hooks)?;
        }
        Ok(())
    }

    /// RFC 8446 §4.6.1: NewSessionTickets at the 1-RTT level, each a sealed copy of the
    /// resumption state (stateless tickets).
    fn issue_tickets<H: QuicHooks>(
        &mut self,
        resumption_master: &Secret,
        hooks: &mut H,
    ) -> Result<(), Error> {
        let Some(tickets) = self.config.tickets else { return Ok(()) };
        let Some(key) = tickets.keys.first() else { return Ok(()) };
        let suite = self.suite.ok_or_else(internal)?;
        let alpn = self.config.alpn.get(self.alpn.ok_or_else(internal)?).copied().unwrap_or(&[]);
        let early_context_hash = match self.config.early_data {
            Some(early) => strike_id(&self.provider, early.context)?,
            None => [0; 16],
        };
        let lifetime_s = tickets.lifetime_s.min(MAX_TICKET_LIFETIME_S);
        // RFC 9369 §5: "After compatible version negotiation, any resulting session ticket
        // maps to the negotiated version rather than the original one" (QUIC's context for
        // issued tickets).
        let context = hooks.ticket_context(true);
        // The client key this connection authenticated (or resumed) with, so that a
        // resumption keeps naming it (see `psk_for`).
        let client_key = match (self.client_key, self.config.client_auth) {
            (Some(i), Some(auth)) => {
                let spki = auth.allowed.get(i).ok_or_else(internal)?;
                let index = u32::try_from(i).map_err(|_| internal())?;
                Some((index, strike_id(&self.provider, spki)?))
            }
            _ => None,
        };
        for n in 0..tickets.count {
            let nonce = [n];
            let psk =
                resumption_psk(&self.provider, suite.hash(), resumption_master.as_ref(), &nonce)?;
            let mut random = [0u8; 4 + NONCE_LEN];
            hooks.rng().fill(&mut random)?;
            let [a, b, c, d, aead_nonce @ ..] = random;
            let state = SealedState {
                suite,
                issued_ms: self.now_ms,
                lifetime_s,
                age_add: u32::from_be_bytes([a, b, c, d]),
                early_data: self.config.early_data.is_some(),
                early_context_hash,
                client_key,
                psk: psk.as_ref(),
                alpn,
            };
            let mut ticket = [0u8; MAX_TICKET_LEN];
            let len = seal_ticket(&self.provider, key, &aead_nonce, &state, context, &mut ticket)?;
            let nst = NewSessionTicketParams {
                lifetime: lifetime_s,
                age_add: state.age_add,
                nonce: &nonce,
                ticket: ticket.get(..len).ok_or_else(internal)?,
                early_data: state.early_data,
            };
            let SendBuffer { space, .. } = hooks.send_buffer(Level::OneRtt);
            let written = nst.emit(space)?;
            hooks.sent(Level::OneRtt, written);
        }
        Ok(())
    }
}
