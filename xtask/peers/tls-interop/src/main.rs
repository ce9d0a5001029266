//! `tls-interop`: one mote-tls handshake session (client or server) driven over stdin/stdout,
//! for the interop check against aioquic's TLS engine (`cargo xtask interop-tls`, harness in
//! `aioquic_peer.py` next to this crate).
//!
//! # Wire protocol (both directions)
//! Frames of `type(1) length(4, big-endian) payload`:
//!
//! | type | meaning |
//! |---|---|
//! | 0, 1, 2 | CRYPTO bytes at the Initial, Handshake, 1-RTT level (in order) |
//! | 0x10 | end of turn: the harness has sent this turn's input / the driver has written all it produced |
//! | 0x11 | finish (harness → driver): report and exit |
//! | 0x12 | report (driver → harness): one line of JSON, see [`report`] |
//!
//! The exchange is lock-step. For each turn the harness sends zero or more CRYPTO frames and
//! an end-of-turn frame; the driver feeds the frames to the session in order, then writes
//! what the session produced (in the order it was produced) and an end-of-turn frame. A
//! client writes its ClientHello in the first turn. A failed handshake keeps answering
//! turns with no output; the error is in the report. End of input counts as finish.
//!
//! # Arguments
//! `--role client|server` (required), `--provider rustcrypto|ring`, `--suites
//! aes128,aes256,chacha20`, `--groups x25519,p256`, `--alpn h3[,…]`, `--tp HEX` (local
//! transport parameters), `--unix-time S` (defaults to the clock).
//!
//! Client: `--server-name NAME`, `--ca FILE.der` (repeatable trust anchors),
//! `--early-data`, `--resume FILE` (a ticket saved by `--save-ticket`), `--save-ticket FILE`
//! (the first ticket received, with the server's transport parameters), `--client-key
//! FILE.pk8` (a raw-public-key client key, RFC 7250).
//!
//! Server: `--cert FILE.der` (repeatable, end-entity first), `--key FILE.pk8` (PKCS#8, ECDSA
//! P-256 or Ed25519), `--tickets N` (NewSessionTickets per handshake; tickets are sealed
//! under a fixed key so a second process can open them), `--early-data` (accept 0-RTT),
//! `--defer-signatures` (sign the CertificateVerify through the offload API),
//! `--client-auth optional|required` with `--client-allow FILE.der` (repeatable
//! SubjectPublicKeyInfos): ask for a client raw public key.

use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use mote_crypto::fast::{Ring, SystemRng};
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{
    AeadAlgorithm, CryptoProvider, CryptoRng, NamedGroup, SignatureScheme, SigningKey,
};
use mote_tls::pki_types::{CertificateDer, TrustAnchor};
use mote_tls::{
    AntiReplay, ClientAuth, ClientConfig, ClientSession, EarlyDataConfig, Error, KeyLevel, Level,
    ProviderBound, QuicHooks, ReplayCheck, Resumption, Secrets, SendBuffer, ServerAuth,
    ServerConfig, ServerIdentity, ServerSession, StrikeRegister, Ticket, TicketConfig, TicketKey,
    X509Verifier,
};

/// Frame types (see the crate docs).
mod frame {
    pub const TURN: u8 = 0x10;
    pub const FINISH: u8 = 0x11;
    pub const REPORT: u8 = 0x12;
}

/// The server's ticket-sealing key: fixed, so the process that resumes can open tickets
/// sealed by the one before it. A test fixture, protecting nothing.
const TICKET_KEY: [u8; 16] = *b"mote-interop-tkt";

/// The server's 0-RTT context (what 0-RTT acceptance is bound to).
const EARLY_CONTEXT: &[u8] = b"mote tls-interop 0-RTT context v1";

fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tls-interop: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match args.provider.as_str() {
        "rustcrypto" => run(RustCrypto, &args),
        "ring" => run(Ring, &args),
        other => Err(format!("unknown provider {other:?}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tls-interop: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line options (see the crate docs).
#[derive(Debug, Default)]
struct Args {
    server: bool,
    provider: String,
    suites: Vec<AeadAlgorithm>,
    groups: Vec<NamedGroup>,
    alpn: Vec<Vec<u8>>,
    tp: Vec<u8>,
    unix_time_s: Option<u64>,
    server_name: Option<String>,
    ca: Vec<PathBuf>,
    early_data: bool,
    resume: Option<PathBuf>,
    save_ticket: Option<PathBuf>,
    cert: Vec<PathBuf>,
    key: Option<PathBuf>,
    tickets: u8,
    defer_signatures: bool,
    client_key: Option<PathBuf>,
    client_auth: Option<bool>,
    client_allow: Vec<PathBuf>,
}

impl Args {
    fn parse(mut it: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut a =
            Args { provider: "rustcrypto".into(), alpn: vec![b"h3".to_vec()], ..Args::default() };
        let mut role = None;
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--role" => role = Some(value()?),
                "--provider" => a.provider = value()?,
                "--suites" => {
                    a.suites = list(&value()?, |s| match s {
                        "aes128" => Some(AeadAlgorithm::Aes128Gcm),
                        "aes256" => Some(AeadAlgorithm::Aes256Gcm),
                        "chacha20" => Some(AeadAlgorithm::ChaCha20Poly1305),
                        _ => None,
                    })?
                }
                "--groups" => {
                    a.groups = list(&value()?, |s| match s {
                        "x25519" => Some(NamedGroup::X25519),
                        "p256" => Some(NamedGroup::Secp256r1),
                        _ => None,
                    })?
                }
                "--alpn" => a.alpn = list(&value()?, |s| Some(s.as_bytes().to_vec()))?,
                "--tp" => a.tp = hex_decode(&value()?)?,
                "--unix-time" => {
                    a.unix_time_s = Some(value()?.parse().map_err(|e| format!("--unix-time: {e}"))?)
                }
                "--server-name" => a.server_name = Some(value()?),
                "--ca" => a.ca.push(value()?.into()),
                "--early-data" => a.early_data = true,
                "--resume" => a.resume = Some(value()?.into()),
                "--save-ticket" => a.save_ticket = Some(value()?.into()),
                "--cert" => a.cert.push(value()?.into()),
                "--key" => a.key = Some(value()?.into()),
                "--tickets" => {
                    a.tickets = value()?.parse().map_err(|e| format!("--tickets: {e}"))?
                }
                "--defer-signatures" => a.defer_signatures = true,
                "--client-key" => a.client_key = Some(value()?.into()),
                "--client-auth" => {
                    a.client_auth = match value()?.as_str() {
                        "optional" => Some(false),
                        "required" => Some(true),
                        other => return Err(format!("--client-auth {other:?}")),
                    }
                }
                "--client-allow" => a.client_allow.push(value()?.into()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        a.server = match role.as_deref() {
            Some("client") => false,
            Some("server") => true,
            _ => return Err("--role client|server is required".into()),
        };
        Ok(a)
    }
}

fn list<T>(s: &str, f: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| f(x).ok_or(format!("unknown value {x:?}")))
        .collect()
}

fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    let digit =
        |c: u8| char::from(c).to_digit(16).ok_or(format!("bad hex digit {:?}", char::from(c)));
    s.as_bytes()
        .chunks(2)
        .map(|pair| match *pair {
            [hi, lo] => Ok((digit(hi)? << 4 | digit(lo)?) as u8),
            _ => Err("odd-length hex".to_string()),
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_file(path: &PathBuf) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Leaks `value` for the process's lifetime: configurations borrow for `'static` in this
/// one-shot program.
fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// One set of installed secrets.
struct Installed {
    level: KeyLevel,
    suite: AeadAlgorithm,
    client: Vec<u8>,
    server: Option<Vec<u8>>,
}

/// The QUIC stand-in: records everything the session hands out.
struct Hooks {
    rng: SystemRng,
    tp: Vec<u8>,
    scratch: Vec<u8>,
    /// Bytes produced this turn, in order, by level.
    out: Vec<(Level, Vec<u8>)>,
    /// Every handshake message written: (level, type).
    sent_types: Vec<(Level, u8)>,
    secrets: Vec<Installed>,
    peer_tp: Option<Vec<u8>>,
    early_data: Option<bool>,
    complete: bool,
    /// Client: tickets received, encoded with the server's transport parameters.
    tickets: Vec<Vec<u8>>,
}

impl Hooks {
    fn new(tp: Vec<u8>) -> Self {
        Self {
            rng: SystemRng::new(),
            tp,
            scratch: vec![0; 1 << 16],
            out: Vec::new(),
            sent_types: Vec::new(),
            secrets: Vec::new(),
            peer_tp: None,
            early_data: None,
            complete: false,
            tickets: Vec::new(),
        }
    }
}

impl QuicHooks for Hooks {
    fn rng(&mut self) -> &mut dyn CryptoRng {
        &mut self.rng
    }

    fn send_buffer(&mut self, _level: Level) -> SendBuffer<'_> {
        SendBuffer { space: &mut self.scratch, transport_parameters: &self.tp }
    }

    fn sent(&mut self, level: Level, len: usize) {
        let bytes = &self.scratch[..len];
        let mut rest = bytes;
        while rest.len() >= 4 {
            self.sent_types.push((level, rest[0]));
            let body =
                usize::from(rest[1]) << 16 | usize::from(rest[2]) << 8 | usize::from(rest[3]);
            rest = rest.get(4 + body..).unwrap_or(&[]);
        }
        match self.out.last_mut() {
            Some((l, buf)) if *l == level => buf.extend_from_slice(bytes),
            _ => self.out.push((level, bytes.to_vec())),
        }
    }

    fn install_secrets(&mut self, s: Secrets<'_>) -> Result<(), Error> {
        self.secrets.push(Installed {
            level: s.level,
            suite: s.suite,
            client: s.client.as_ref().to_vec(),
            server: s.server.map(|x| x.as_ref().to_vec()),
        });
        Ok(())
    }

    fn peer_transport_parameters(&mut self, params: &[u8]) -> Result<(), Error> {
        self.peer_tp = Some(params.to_vec());
        Ok(())
    }

    fn early_data(&mut self, accepted: bool) {
        self.early_data = Some(accepted);
    }

    fn handshake_complete(&mut self) {
        self.complete = true;
    }

    fn new_ticket(&mut self, ticket: &Ticket<'_>) {
        // As a QUIC layer would: remember the server's transport parameters with it.
        let remembered = self.peer_tp.clone().unwrap_or_default();
        let with_tp = Ticket { server_transport_parameters: &remembered, ..*ticket };
        let mut buf = vec![0u8; 4096];
        if let Ok(n) = with_tp.encode(&mut buf) {
            buf.truncate(n);
            self.tickets.push(buf);
        }
    }
}

/// A session of either role, as the turn loop sees it.
trait Session {
    /// Feeds CRYPTO bytes (and, on a server deferring signatures, completes the signature).
    fn feed(&mut self, level: Level, data: &[u8], hooks: &mut Hooks) -> Result<(), Error>;
    /// The role-specific part of the report.
    fn describe(&self, out: &mut Json);
}

impl<P: CryptoProvider + ProviderBound> Session for ClientSession<'_, P> {
    fn feed(&mut self, level: Level, data: &[u8], hooks: &mut Hooks) -> Result<(), Error> {
        self.read_handshake(level, data, hooks)
    }

    fn describe(&self, out: &mut Json) {
        out.bool("complete", self.is_handshake_complete());
        out.opt_u64("suite", self.suite().map(|s| u64::from(s.cipher_suite())));
        out.opt_u64("group", self.group().map(|g| u64::from(g.codepoint())));
        out.bool("hello_retry_request", self.hello_retry_request());
        out.opt_str("alpn", self.alpn().map(String::from_utf8_lossy).as_deref());
        out.bool("psk_accepted", self.psk_accepted());
        out.opt_bool("early_data_accepted", self.early_data_accepted());
    }
}

/// A server session with the key it signs deferred CertificateVerify signatures with.
struct Server<'c, P: CryptoProvider> {
    session: ServerSession<'c, P>,
    key: &'c (dyn SigningKey + Sync),
}

impl<P: CryptoProvider> Session for Server<'_, P> {
    fn feed(&mut self, level: Level, data: &[u8], hooks: &mut Hooks) -> Result<(), Error> {
        self.session.set_time(now_ms());
        self.session.read_handshake(level, data, hooks)?;
        // Crypto offload: sign "elsewhere" and resume the flight.
        if let Some(req) = self.session.signature_request() {
            let mut sig = [0u8; mote_crypto::MAX_SIGNATURE_LEN];
            let n = self.key.sign(&mut hooks.rng, req.message, &mut sig)?;
            let sig = sig[..n].to_vec();
            self.session.complete_signature(&sig, hooks)?;
        }
        Ok(())
    }

    fn describe(&self, out: &mut Json) {
        let s = &self.session;
        out.bool("complete", s.is_handshake_complete());
        out.opt_u64("suite", s.suite().map(|s| u64::from(s.cipher_suite())));
        out.opt_u64("group", s.group().map(|g| u64::from(g.codepoint())));
        out.bool("hello_retry_request", s.hello_retry_request());
        out.opt_str("alpn", s.alpn().map(String::from_utf8_lossy).as_deref());
        out.bool("psk_accepted", s.psk_accepted());
        out.opt_bool("early_data_accepted", s.early_data_accepted());
    }
}

/// A strike register shared the way a server would (behind a lock).
struct Register(Mutex<StrikeRegister<64>>);

impl AntiReplay for Register {
    fn check_and_insert(&self, id: &[u8; 16], now_ms: u64, expires_ms: u64) -> ReplayCheck {
        self.0.lock().map_or(ReplayCheck::Full, |mut r| r.check_and_insert(id, now_ms, expires_ms))
    }
}

fn run<P: CryptoProvider + ProviderBound + Copy + 'static>(
    provider: P,
    args: &Args,
) -> Result<(), String>
where
    P::SigningKey: Sync,
{
    let mut hooks = Hooks::new(args.tp.clone());
    let alpn: &'static [&'static [u8]] =
        Box::leak(args.alpn.iter().map(|a| &*Box::leak(a.clone().into_boxed_slice())).collect());
    let suites: &'static [AeadAlgorithm] = Box::leak(args.suites.clone().into_boxed_slice());
    let groups: &'static [NamedGroup] = Box::leak(args.groups.clone().into_boxed_slice());
    let unix_time_s = args.unix_time_s.unwrap_or(now_ms() / 1000);

    if args.server {
        let key = load_key(provider, args.key.as_ref().ok_or("--key is required for a server")?)?;
        let chain: Vec<&'static [u8]> = args
            .cert
            .iter()
            .map(|p| Ok(&*Box::leak(read_file(p)?.into_boxed_slice())))
            .collect::<Result<_, String>>()?;
        let allowed: Vec<&'static [u8]> = args
            .client_allow
            .iter()
            .map(|p| Ok(&*Box::leak(read_file(p)?.into_boxed_slice())))
            .collect::<Result<_, String>>()?;
        let allowed = Box::leak(allowed.into_boxed_slice());
        let tickets = (args.tickets > 0).then(|| TicketConfig {
            keys: leak([TicketKey {
                id: *b"tk01",
                aead: AeadAlgorithm::Aes128Gcm,
                key: &TICKET_KEY,
            }]),
            lifetime_s: 86_400,
            count: args.tickets,
            max_age_skew_ms: 10_000,
        });
        let early_data = args.early_data.then(|| EarlyDataConfig {
            anti_replay: leak(Register(Mutex::new(StrikeRegister::new()))),
            context: EARLY_CONTEXT,
        });
        let config = leak(ServerConfig {
            cipher_suites: suites,
            groups,
            alpn,
            identity: Some(ServerIdentity { key, x509_chain: Box::leak(chain.into_boxed_slice()) }),
            external_psks: &[],
            client_auth: args.client_auth.map(|required| ClientAuth { allowed, required }),
            tickets,
            early_data,
            defer_signatures: args.defer_signatures,
        });
        let mut server = Server { session: ServerSession::new(provider, config, now_ms()), key };
        serve(&mut server, None, &mut hooks, args)
    } else {
        let anchors: Vec<TrustAnchor<'static>> = args
            .ca
            .iter()
            .map(|p| {
                let der = CertificateDer::from(read_file(p)?);
                mote_tls::webpki::anchor_from_trusted_cert(&der)
                    .map(|a| a.to_owned())
                    .map_err(|e| format!("{}: {e:?}", p.display()))
            })
            .collect::<Result<_, String>>()?;
        let anchors: &'static [TrustAnchor<'static>] = Box::leak(anchors.into_boxed_slice());
        let server_name: Option<&'static [u8]> = args
            .server_name
            .as_ref()
            .map(|n| &*Box::leak(n.clone().into_bytes().into_boxed_slice()));
        let config = leak(ClientConfig {
            server_name,
            alpn,
            server_auth: ServerAuth::X509(X509Verifier { anchors }),
            client_key: args.client_key.as_ref().map(|p| load_key(provider, p)).transpose()?,
            cipher_suites: suites,
            groups,
            early_data: args.early_data,
        });
        let resumption = match &args.resume {
            Some(path) => {
                let saved: &'static [u8] = Box::leak(read_file(path)?.into_boxed_slice());
                let (received, encoded) = saved.split_at_checked(8).ok_or("short ticket file")?;
                let received =
                    u64::from_be_bytes(received.try_into().map_err(|_| "short ticket file")?);
                let ticket = Ticket::decode(encoded).map_err(|e| format!("ticket: {e:?}"))?;
                let age_ms = u32::try_from(now_ms().saturating_sub(received)).unwrap_or(u32::MAX);
                Some(Resumption { ticket, age_ms })
            }
            None => None,
        };
        let mut session = ClientSession::<P>::new(provider, config, resumption);
        session.set_unix_time(unix_time_s);
        let started = session.start(&mut hooks);
        serve(&mut session, Some(started), &mut hooks, args)
    }
}

/// Loads a PKCS#8 signing key (ECDSA P-256 or Ed25519) for the process's lifetime.
fn load_key<P: CryptoProvider>(
    provider: P,
    path: &PathBuf,
) -> Result<&'static (dyn SigningKey + Sync), String>
where
    P::SigningKey: Sync + 'static,
{
    let der = read_file(path)?;
    let key = [SignatureScheme::EcdsaSecp256r1Sha256, SignatureScheme::Ed25519]
        .into_iter()
        .find_map(|s| provider.signing_key(s, &der).ok())
        .ok_or_else(|| format!("{}: neither a P-256 nor an Ed25519 PKCS#8 key", path.display()))?;
    Ok(leak(key))
}

/// The turn loop, then the report. `started` is the client's `start()` result.
fn serve(
    session: &mut dyn Session,
    started: Option<Result<(), Error>>,
    hooks: &mut Hooks,
    args: &Args,
) -> Result<(), String> {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut output = BufWriter::new(stdout.lock());
    let mut error = started.and_then(Result::err);
    let io_err = |e: io::Error| format!("stdio: {e}");
    while let Some((typ, payload)) = read_frame(&mut input).map_err(io_err)? {
        match typ {
            0..=2 => {
                let level = [Level::Initial, Level::Handshake, Level::OneRtt][usize::from(typ)];
                if error.is_none() {
                    error = session.feed(level, &payload, hooks).err();
                }
            }
            frame::TURN => {
                for (level, bytes) in hooks.out.drain(..) {
                    write_frame(&mut output, level as u8, &bytes).map_err(io_err)?;
                }
                write_frame(&mut output, frame::TURN, &[]).map_err(io_err)?;
                output.flush().map_err(io_err)?;
            }
            frame::FINISH => break,
            other => return Err(format!("unknown frame type {other:#x}")),
        }
    }
    if let (Some(path), Some(ticket)) = (&args.save_ticket, hooks.tickets.first()) {
        let mut saved = now_ms().to_be_bytes().to_vec();
        saved.extend_from_slice(ticket);
        std::fs::write(path, saved).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let report = report(session, hooks, error, args);
    write_frame(&mut output, frame::REPORT, report.as_bytes()).map_err(io_err)?;
    output.flush().map_err(io_err)
}

/// The JSON report: role and provider; the session's view (`complete`, `suite` and `group`
/// as code points, `hello_retry_request`, `alpn`, `psk_accepted`, `early_data_accepted`);
/// the hooks' view (`handshake_complete`, `early_data_hook`, `peer_transport_parameters`
/// in hex, `secrets` per key level with `suite`, `client` and `server` in hex, `sent` as
/// `[level, handshake type]` pairs, `tickets` received); and `error` (`debug`, `alert`,
/// `quic_error_code`) or null.
fn report(session: &dyn Session, hooks: &Hooks, error: Option<Error>, args: &Args) -> String {
    let mut j = Json::new();
    j.str("role", if args.server { "server" } else { "client" });
    j.str("provider", &args.provider);
    session.describe(&mut j);
    j.bool("handshake_complete", hooks.complete);
    j.opt_bool("early_data_hook", hooks.early_data);
    j.opt_str("peer_transport_parameters", hooks.peer_tp.as_deref().map(hex).as_deref());
    let mut secrets = Json::new();
    for s in &hooks.secrets {
        let mut one = Json::new();
        one.u64("suite", u64::from(s.suite.cipher_suite()));
        one.str("client", &hex(&s.client));
        one.opt_str("server", s.server.as_deref().map(hex).as_deref());
        let name = match s.level {
            KeyLevel::ZeroRtt => "zero_rtt",
            KeyLevel::Handshake => "handshake",
            KeyLevel::OneRtt => "one_rtt",
        };
        secrets.raw(name, &one.finish());
    }
    j.raw("secrets", &secrets.finish());
    let sent: Vec<String> =
        hooks.sent_types.iter().map(|(l, t)| format!("[{},{t}]", *l as u8)).collect();
    j.raw("sent", &format!("[{}]", sent.join(",")));
    j.u64("tickets", hooks.tickets.len() as u64);
    match error {
        Some(e) => {
            let mut err = Json::new();
            err.str("debug", &format!("{e:?}"));
            err.u64("alert", u64::from(e.alert().code()));
            err.u64("quic_error_code", e.quic_error_code());
            j.raw("error", &err.finish());
        }
        None => j.raw("error", "null"),
    }
    j.finish()
}

/// A minimal JSON object writer (keys and values here never need more than this).
struct Json(String);

impl Json {
    fn new() -> Self {
        Self(String::from("{"))
    }
    fn key(&mut self, k: &str) {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push_str(&quote(k));
        self.0.push(':');
    }
    fn raw(&mut self, k: &str, v: &str) {
        self.key(k);
        self.0.push_str(v);
    }
    fn str(&mut self, k: &str, v: &str) {
        self.raw(k, &quote(v));
    }
    fn opt_str(&mut self, k: &str, v: Option<&str>) {
        self.raw(k, &v.map_or("null".into(), quote));
    }
    fn u64(&mut self, k: &str, v: u64) {
        self.raw(k, &v.to_string());
    }
    fn opt_u64(&mut self, k: &str, v: Option<u64>) {
        self.raw(k, &v.map_or("null".into(), |v| v.to_string()));
    }
    fn bool(&mut self, k: &str, v: bool) {
        self.raw(k, if v { "true" } else { "false" });
    }
    fn opt_bool(&mut self, k: &str, v: Option<bool>) {
        self.raw(k, v.map_or("null", |v| if v { "true" } else { "false" }));
    }
    fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads one frame; `None` at a clean end of input.
fn read_frame(r: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let [typ, len @ ..] = head;
    let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
    r.read_exact(&mut payload)?;
    Ok(Some((typ, payload)))
}

fn write_frame(w: &mut impl Write, typ: u8, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| io::Error::other("frame too long"))?;
    w.write_all(&[typ])?;
    w.write_all(&len.to_be_bytes())?;
    w.write_all(payload)
}
