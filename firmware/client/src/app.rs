//! The device's job: two transactions against the server over the serial radio, each an
//! HTTP/3 GET of a 5 KB object followed by a POST of 1 KB; the first with a full (1-RTT)
//! handshake, the second resumed from the first's session ticket with the GET in 0-RTT.
//! Each transaction is measured per phase and reported over the serial line.
//!
//! Everything lives in caller-owned memory: [`Buffers`] (CRYPTO and stream buffers, the
//! datagram buffer, the ticket) and [`Slots`] (the connection and the HTTP/3 session, built
//! in place) are statics; the stack holds only the event loop's small state (the device
//! has ~3 KB of it). Nothing allocates.

use core::mem::MaybeUninit;
use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use mote_crypto::rustcrypto::RustCrypto;
#[cfg(feature = "psk")]
use mote_crypto::HashAlgorithm;
use mote_h3::client::{Client, ClientRequest, EncodedRequest, Event as H3Event, Setup};
use mote_h3::Config as H3Config;
use mote_quic::connection::rng::Drbg;
#[cfg(feature = "selfmeasure")]
use mote_quic::connection::CloseReason;
use mote_quic::{ConnectionConfig, Duration, Instant};
use mote_tls::{ClientConfig, ClientSession, Resumption, ServerAuth, Ticket};

use crate::board::Board;
#[cfg(all(feature = "stats", feature = "selfmeasure"))]
use crate::conn::Stats;
use crate::conn::{self, Conn, StreamBuffers};
use crate::frame::{self, kind, Decoder};
#[cfg(feature = "selfmeasure")]
use crate::measure::{tag, Phase, Phases, Report};

#[cfg(not(any(feature = "rpk-ed25519", feature = "rpk-p256", feature = "psk")))]
compile_error!("choose a server authentication: rpk-ed25519, rpk-p256, psk or x509");

/// TLS receive buffer for one partial handshake message.
pub(crate) const TLS_RX: usize = 1024;
/// CRYPTO buffers per level and direction (a raw-public-key handshake needs a few hundred
/// bytes per level; a ticket's NewSessionTicket about 200). The stream buffers are the
/// connection type's ([`StreamBuffers`]).
pub(crate) const CRYPTO_BUF: usize = 1024;
/// Largest datagram (RFC 9000 §14: the client's Initial datagrams are 1200 bytes).
const DATAGRAM: usize = 1200;
/// Serial frames: type byte + datagram + CRC.
const FRAME: usize = 1 + 1500 + 2;
/// Session ticket storage (identity, PSK, remembered transport parameters).
const TICKET: usize = 512;

/// The HTTP/3 client: four receive streams (three server uni streams, the request) of
/// 272 bytes (a 256-byte HEADERS frame or a SETTINGS frame fits); response heads are
/// checked line by line as they are decoded (no decoded-fields buffer).
type H3 = Client<272>;
const H3_CONFIG: H3Config = H3Config {
    max_field_section_size: 512,
    max_encoded_field_section: 256,
    qpack_blocked_streams: 0,
    grease: Some(1),
};
/// The HTTP/3 client's setup: [`H3_CONFIG`] with our control stream's bytes, encoded at build
/// time.
const H3_SETUP: Setup = Setup::new(H3_CONFIG);

/// The server as the device addresses it (the bridge forwards everything to the real one).
const SERVER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 443));
const AUTHORITY: &[u8] = b"mote.example";
const GET_PATH: &[u8] = b"/5120";
const POST_PATH: &[u8] = b"/upload";
/// Size of the object the GET fetches.
pub const OBJECT_BYTES: usize = 5120;
/// Size of the body the POST publishes.
pub const POST_BYTES: usize = 1024;
/// H3_NO_ERROR (RFC 9114 §8.1).
const H3_NO_ERROR: u64 = 0x100;
/// How long the first transaction waits for a session ticket after its last response.
const TICKET_WAIT: Duration = Duration::from_micros(3_000_000);
/// A transaction that has not finished after this long has failed. The event loop keeps
/// time on the connection's clock (32-bit on a device: its instants compare right within
/// 35 minutes, mote_quic::time), so this stays well below that.
const TRANSACTION_LIMIT: Duration = Duration::from_micros(120_000_000);
const _: () = assert!(TRANSACTION_LIMIT.as_micros() + TICKET_WAIT.as_micros() < 1 << 29);

/// The server's raw public key, pinned in flash (RFC 7250; feature `rpk-ed25519`).
#[cfg(all(feature = "rpk-ed25519", not(any(feature = "psk", feature = "x509"))))]
static PINNED: [&[u8]; 1] = [include_bytes!("../keys/server-ed25519.spki.der")];
/// The server's raw public key, pinned in flash (RFC 7250; feature `rpk-p256`).
#[cfg(all(
    feature = "rpk-p256",
    not(any(feature = "rpk-ed25519", feature = "psk", feature = "x509"))
))]
static PINNED: [&[u8]; 1] = [include_bytes!("../keys/server-p256.spki.der")];

/// The trust anchor of the X.509 build: a test CA (Ed25519), pinned in flash.
#[cfg(feature = "x509")]
static CA_DER: &[u8] = include_bytes!("../keys/ca-ed25519.der");

/// How the server is authenticated: an X.509 chain to the pinned CA (its anchor parsed at
/// boot).
#[cfg(feature = "x509")]
fn server_auth() -> ServerAuth<'static> {
    {
        static CA: mote_tls::pki_types::CertificateDer<'static> =
            mote_tls::pki_types::CertificateDer::from_slice(CA_DER);
        // The anchor borrows the certificate in flash; it is kept for the whole run. A CA
        // that does not parse leaves no anchor, and every server is refused.
        static ANCHORS: OnceAnchors = OnceAnchors::new();
        let anchors = match mote_tls::webpki::anchor_from_trusted_cert(&CA) {
            Ok(anchor) => ANCHORS.set(anchor),
            Err(_) => &[],
        };
        ServerAuth::X509(mote_tls::X509Verifier { anchors })
    }
}

/// How the server is authenticated, from the build's features: an external PSK or the
/// pinned raw public key (constants).
#[cfg(not(feature = "x509"))]
const fn server_auth() -> ServerAuth<'static> {
    #[cfg(feature = "psk")]
    {
        ServerAuth::ExternalPsk(mote_tls::ExternalPsk {
            identity: crate::PSK_IDENTITY,
            key: crate::PSK_KEY,
            hash: HashAlgorithm::Sha256,
        })
    }
    #[cfg(not(feature = "psk"))]
    {
        ServerAuth::RawPublicKeys(&PINNED)
    }
}

/// A trust anchor set once at boot (the X.509 build).
#[cfg(feature = "x509")]
struct OnceAnchors(
    critical_section::Mutex<
        core::cell::Cell<Option<&'static [mote_tls::pki_types::TrustAnchor<'static>]>>,
    >,
);

#[cfg(feature = "x509")]
impl OnceAnchors {
    const fn new() -> Self {
        Self(critical_section::Mutex::new(core::cell::Cell::new(None)))
    }

    /// Stores `anchor` (leaked once into a static slot) and returns the set.
    fn set(
        &'static self,
        anchor: mote_tls::pki_types::TrustAnchor<'static>,
    ) -> &'static [mote_tls::pki_types::TrustAnchor<'static>] {
        extern crate alloc;
        critical_section::with(|cs| {
            let c = self.0.borrow(cs);
            if let Some(a) = c.get() {
                return a;
            }
            let a: &'static [_] = alloc::boxed::Box::leak(alloc::boxed::Box::new([anchor]));
            c.set(Some(a));
            a
        })
    }
}

/// The caller-owned memory of a transaction.
pub struct Buffers {
    crypto: [[u8; CRYPTO_BUF]; 6],
    streams: StreamBuffers,
    tx: [u8; DATAGRAM],
    ticket: [u8; TICKET],
    link: Decoder<FRAME>,
}

impl Buffers {
    /// Zeroed buffers (for a `static`).
    pub const fn new() -> Self {
        Self {
            crypto: [[0; CRYPTO_BUF]; 6],
            streams: StreamBuffers::new(),
            tx: [0; DATAGRAM],
            ticket: [0; TICKET],
            link: Decoder::new(),
        }
    }
}

impl Default for Buffers {
    fn default() -> Self {
        Self::new()
    }
}

/// The memory of a transaction's connection and HTTP/3 session: ~20 KB of state, so a
/// static rather than stack (Quant keeps the same in its 16 KB heap). Both are written in
/// place (`init_client`) and dropped in place after each transaction.
pub struct Slots {
    conn: MaybeUninit<Conn<'static>>,
    h3: MaybeUninit<H3>,
    /// The running transaction's record (phases, statistics): ~0.3 KB kept off the stack.
    outcome: MaybeUninit<Outcome>,
    /// What `run` keeps of each transaction for the final report, the TLS configuration
    /// and the random generator: `run`'s state across both transactions, kept out of its
    /// frame (which sits under every handshake step).
    kept: [Kept; 2],
    /// The X.509 build's TLS configuration (the others' is a constant, [`init_config`]).
    #[cfg(feature = "x509")]
    config: MaybeUninit<ClientConfig<'static>>,
    /// The connection's configuration for the announced link profile.
    transport: MaybeUninit<ConnectionConfig>,
    /// The device's random generator, instantiated at boot ([`seed_rng`]).
    rng: MaybeUninit<Rng>,
}

impl Slots {
    /// Empty slots (for a `static`).
    pub const fn new() -> Self {
        Self {
            conn: MaybeUninit::uninit(),
            h3: MaybeUninit::uninit(),
            outcome: MaybeUninit::uninit(),
            kept: [Kept::NONE; 2],
            #[cfg(feature = "x509")]
            config: MaybeUninit::uninit(),
            transport: MaybeUninit::uninit(),
            rng: MaybeUninit::uninit(),
        }
    }

    /// The connection slot, typed for connections that borrow for `'a`.
    fn typed<'a>(slot: &'a mut MaybeUninit<Conn<'static>>) -> &'a mut MaybeUninit<Conn<'a>> {
        let slot: *mut MaybeUninit<Conn<'static>> = slot;
        // SAFETY: `Conn<'a>` and `Conn<'static>` differ only in a lifetime, so they have the
        // same layout. The slot is exclusively borrowed for `'a`, and its content can only
        // be read through `unsafe` (`assume_init*`): a connection written through this
        // reference is dropped (by `transaction`) before `'a` ends and never read after.
        #[allow(unsafe_code)]
        unsafe {
            &mut *slot.cast::<MaybeUninit<Conn<'a>>>()
        }
    }
}

impl Default for Slots {
    fn default() -> Self {
        Self::new()
    }
}

/// The link profile the host announced (it sets the initial RTT).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Profile {
    Wlan,
    NbIot,
}

/// The device's random generator: the same HMAC_DRBG (SP 800-90A §10.1.2, HMAC-SHA-256)
/// each connection seeds its own from, instantiated once at boot with the board's entropy
/// as entropy input and the host's CONFIG nonce as nonce (§8.6.7). One DRBG implementation
/// in the image (the connection's), no second SHA-256 counter generator.
type Rng = Drbg<RustCrypto>;

/// Sends one frame over the serial line.
fn send_frame<B: Board>(board: &mut B, kind: u8, payload: &[u8]) {
    frame::encode(kind, payload, |b| board.write_byte(b));
}

/// The outcome of one transaction.
#[derive(Default)]
struct Outcome {
    ok: bool,
    /// What the transaction's report carries (feature `selfmeasure`).
    #[cfg(feature = "selfmeasure")]
    record: Record,
    /// The event loop's request state (here, not in the event loop's frame).
    req: Requests,
}

/// What the QEMU harness is told about a transaction beyond its success (feature
/// `selfmeasure`): the responses, the connection's end, and the measurements.
#[cfg(feature = "selfmeasure")]
#[derive(Default)]
struct Record {
    early_data_accepted: bool,
    get_status: u16,
    post_status: u16,
    get_bytes: usize,
    phases: Phases,
    /// Key updates the connection completed (kept in every build: the QEMU run checks it).
    key_updates: u32,
    /// The connection's traffic counters (feature `stats`).
    #[cfg(feature = "stats")]
    stats: Stats,
    close_kind: u64,
    close_code: u64,
    h3_error: u64,
    /// An address at the bottom of the transaction's frame (its locals).
    frame: usize,
    /// Feature `stack-steps`: deepest stack address of each event-loop step (receive,
    /// transmit, HTTP/3, timeout).
    steps: [usize; 4],
}

/// Runs one event-loop step; with feature `stack-steps`, paints the stack before it and
/// records how deep it went (a diagnostic: painting costs instructions, so that build's
/// instruction counts are not the device's).
#[cfg(feature = "selfmeasure")]
#[inline(always)]
fn step<R>(_deepest: &mut [usize; 4], _which: usize, f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "stack-steps")]
    crate::measure::paint_stack();
    let r = f();
    #[cfg(feature = "stack-steps")]
    if let Some(d) = _deepest.get_mut(_which) {
        let now = crate::measure::deepest();
        *d = if *d == 0 { now } else { (*d).min(now) };
    }
    r
}

/// Runs one event-loop step (without `selfmeasure`: nothing is measured).
#[cfg(not(feature = "selfmeasure"))]
#[inline(always)]
fn step<R>(_deepest: &mut (), _which: usize, f: impl FnOnce() -> R) -> R {
    f()
}

/// The request side of a transaction: per request ([`GET`], [`POST`], in that order)
/// whether it is sent, its final status and whether its response is complete. One request
/// at a time (the POST goes out once the GET's response is complete), so the HTTP/3 client's
/// request events are the GET's until its response is complete, then the POST's: the
/// POST's response complete means both are.
#[derive(Default)]
struct Requests {
    sent: [bool; 2],
    status: [u16; 2],
    done: [bool; 2],
    get_bytes: usize,
    post_body_sent: usize,
    failed: bool,
    /// The HTTP/3 error that failed it (for the report, feature `selfmeasure`).
    #[cfg(feature = "selfmeasure")]
    h3_error: u64,
}

impl Requests {
    /// Records that the transaction failed with HTTP/3 error `code`.
    fn fail(&mut self, _code: u64) {
        self.failed = true;
        #[cfg(feature = "selfmeasure")]
        {
            self.h3_error = _code;
        }
    }
}

/// The transaction's requests: the GET, then the POST with its generated body.
/// Their HEADERS frames are validated and encoded at build time (at most `REQUEST_FRAME`
/// bytes each: checked below).
const REQUESTS: [EncodedRequest<REQUEST_FRAME>; 2] = [
    EncodedRequest::new(&ClientRequest::get(AUTHORITY, GET_PATH)),
    EncodedRequest::new(&ClientRequest::post(AUTHORITY, POST_PATH, POST_BYTES)),
];
const REQUEST_FRAME: usize = 40;
const _: () = assert!(REQUESTS[GET].is_ok() && REQUESTS[POST].is_ok(), "a request does not encode");
/// The GET's and the POST's index in [`Requests`].
const GET: usize = 0;
const POST: usize = 1;

/// What `run` keeps of a transaction once it is reported: whether it succeeded and its
/// stack depths (for the final memory report).
#[derive(Clone, Copy, Default)]
struct Kept {
    ok: bool,
    /// Deepest stack address per phase (0: not measured).
    #[cfg(feature = "selfmeasure")]
    deepest: [usize; 4],
    /// An address at the bottom of the event loop's frame.
    #[cfg(feature = "selfmeasure")]
    frame: usize,
    /// Feature `stack-steps`: deepest stack address of each event-loop step.
    #[cfg(feature = "selfmeasure")]
    #[cfg_attr(not(feature = "stack-steps"), allow(dead_code))]
    steps: [usize; 4],
}

impl Kept {
    /// Not run yet (for a `static`).
    const NONE: Self = Self {
        ok: false,
        #[cfg(feature = "selfmeasure")]
        deepest: [0; 4],
        #[cfg(feature = "selfmeasure")]
        frame: 0,
        #[cfg(feature = "selfmeasure")]
        steps: [0; 4],
    };
}

/// Runs both transactions and reports; returns the exit status (0: both succeeded).
pub fn run<B: Board>(board: &mut B, bufs: &mut Buffers, slots: &mut Slots) -> u32 {
    #[cfg(feature = "selfmeasure")]
    let boot_busy = board.busy_ns();
    #[cfg(feature = "x509")]
    let Slots { conn, h3, outcome, kept, config, transport, rng } = slots;
    #[cfg(not(feature = "x509"))]
    let Slots { conn, h3, outcome, kept, transport, rng } = slots;
    // One DONE frame for every outcome (3: no random generator, nothing run).
    let status = 'run: {
        let Some((profile, rng)) = seed_rng(board, &mut bufs.link, rng) else {
            break 'run 3;
        };
        let transport = transport_config(transport, profile);
        #[cfg(feature = "x509")]
        let config = init_config(config);
        #[cfg(not(feature = "x509"))]
        let config = init_config();
        let Buffers { crypto, streams, tx, ticket, link } = bufs;
        let [first, second] = kept;
        // What both transactions work in, lent to each in turn (built once, not per call).
        let parts = &mut Parts { conn, h3, outcome, link, tx, crypto, streams };
        // One `Transaction` for both (one slot in this frame).
        let mut t = Transaction {
            config,
            transport,
            resumption: None,
            #[cfg(feature = "selfmeasure")]
            which: 0,
        };
        // 1: full handshake; keeps the session ticket.
        let ticket_len = transaction(board, parts, first, &t, rng, Some(&mut *ticket));
        // 2: resumed with the ticket, GET in 0-RTT.
        if let Some((len, at)) = ticket_len {
            resume(&mut t.resumption, ticket, len, Instant::from_micros(board.now_us()) - at);
        }
        #[cfg(feature = "selfmeasure")]
        {
            t.which = 1;
        }
        // With an external PSK the session resumes nothing (tickets are not used in that mode):
        // the second transaction is another PSK handshake.
        let resumed = t.resumption.is_some() || cfg!(feature = "psk");
        transaction(board, parts, second, &t, rng, None);
        let status = u32::from(!first.ok) | u32::from(!second.ok || !resumed) << 1;
        #[cfg(feature = "selfmeasure")]
        report_memory(board, boot_busy, kept);
        status
    };
    send_frame(board, kind::DONE, &[status as u8]);
    status
}

/// Sets `slot` to the resumption from the first `len` bytes of `ticket`, received `age`
/// ago; leaves it `None` if the ticket does not decode. Out of line and written in place:
/// neither the ticket parser's locals nor a copy of the result are in `run`'s frame.
#[inline(never)]
fn resume<'t>(
    slot: &mut Option<Resumption<'t>>,
    ticket: &'t [u8; TICKET],
    len: usize,
    age: Duration,
) {
    let age_ms = age.as_micros().min(u64::from(u32::MAX)) as u32 / 1000;
    if let Some(Ok(ticket)) = ticket.get(..len).map(Ticket::decode) {
        *slot = Some(Resumption { ticket, age_ms });
    }
}

/// Waits for the host's CONFIG frame and instantiates the random generator in `slot`
/// (SP 800-90A §10.1.2.3: the board's entropy as entropy input, the host's nonce as
/// nonce); returns the link profile and the generator, `None` if it could not be
/// instantiated.
#[inline(never)]
fn seed_rng<'r, B: Board>(
    board: &mut B,
    link: &mut Decoder<FRAME>,
    slot: &'r mut MaybeUninit<Rng>,
) -> Option<(Profile, &'r mut Rng)> {
    let mut seed = [0u8; 64];
    let (entropy, host) = seed.split_at_mut(32);
    // The host announces the link profile and a nonce first: the CONFIG frame, profile
    // byte (0 WLAN, 1 NB-IoT) and a 32-byte nonce.
    let profile = 'config: loop {
        while let Some(b) = board.read_byte() {
            if let Some(n) = link.push(b) {
                if let [kind::CONFIG, profile, nonce @ ..] = &*link.frame(n) {
                    if nonce.len() == host.len() {
                        host.copy_from_slice(nonce);
                        break 'config if *profile == 1 { Profile::NbIot } else { Profile::Wlan };
                    }
                }
            }
        }
        board.sleep_until(None);
    };
    entropy.copy_from_slice(&board.entropy());
    let rng = Drbg::new(RustCrypto, &seed).ok()?;
    Some((profile, slot.write(rng)))
}

/// The TLS client configuration for `server_auth`.
const fn client_config(server_auth: ServerAuth<'static>) -> ClientConfig<'static> {
    ClientConfig {
        server_name: Some(AUTHORITY),
        alpn: &[b"h3"],
        server_auth,
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: true,
    }
}

/// The TLS client configuration, written in `slot` (the X.509 build: its trust anchor is
/// parsed at boot).
#[cfg(feature = "x509")]
#[inline(never)]
fn init_config<'s>(slot: &'s mut MaybeUninit<ClientConfig<'static>>) -> &'s ClientConfig<'static> {
    slot.write(client_config(server_auth()))
}

/// The TLS client configuration: a constant in flash (raw public key and PSK builds), not
/// built in RAM at boot.
#[cfg(not(feature = "x509"))]
fn init_config() -> &'static ClientConfig<'static> {
    static CONFIG: ClientConfig<'static> = client_config(server_auth());
    &CONFIG
}

/// Sends the memory report: heap, object sizes, and the stack depths of both transactions.
#[cfg(feature = "selfmeasure")]
#[inline(never)]
fn report_memory<B: Board>(board: &mut B, boot_busy: u64, kept: &[Kept; 2]) {
    let mut sizes = Report::new();
    #[cfg(feature = "x509")]
    sizes.put(tag::HEAP_PEAK, crate::heap::peak() as u64);
    #[cfg(not(feature = "x509"))]
    sizes.put(tag::HEAP_PEAK, 0);
    sizes.put(tag::CONNECTION_BYTES, core::mem::size_of::<Conn<'_>>() as u64);
    sizes.put(tag::H3_BYTES, core::mem::size_of::<H3>() as u64);
    sizes.put(tag::BUFFER_BYTES, core::mem::size_of::<Buffers>() as u64);
    sizes.put(tag::INSN_INIT, boot_busy);
    // The deepest point of any phase of either transaction (from the top of the stack),
    // and per phase (and event-loop step) the most stack below the event loop's frame, the
    // larger of the two transactions. 0: not measured.
    let top = crate::measure::stack_top();
    let mut deepest = top;
    let mut phases = [0usize; 4];
    #[cfg(feature = "stack-steps")]
    let mut steps = [0usize; 4];
    for k in kept {
        for (most, d) in phases.iter_mut().zip(k.deepest) {
            if d != 0 {
                deepest = deepest.min(d);
                *most = (*most).max(k.frame.saturating_sub(d));
            }
        }
        #[cfg(feature = "stack-steps")]
        for (most, d) in steps.iter_mut().zip(k.steps) {
            if d != 0 {
                *most = (*most).max(k.frame.saturating_sub(d));
            }
        }
    }
    sizes.put(tag::STACK_PEAK, (top - deepest) as u64);
    sizes.put(tag::STACK_SIZE, crate::measure::window() as u64);
    // The tags of the phases (and of the steps) are consecutive.
    put_each(&mut sizes, tag::STACK_INIT, &phases.map(|b| b as u64));
    sizes.put(tag::STACK_FRAME, (top - kept[0].frame) as u64);
    #[cfg(feature = "stack-steps")]
    put_each(&mut sizes, tag::STEP_RECEIVE, &steps.map(|b| b as u64));
    send_frame(board, kind::REPORT, sizes.bytes());
}

/// The serial link and the datagram buffer.
struct Io<'a> {
    link: &'a mut Decoder<FRAME>,
    tx: &'a mut [u8; DATAGRAM],
}

/// The static buffers a connection's storage is made of: two pointers, passed down to
/// `connect`, which splits them ([`conn::storage`]); the split storage (a dozen or more
/// slices) is built only there, not copied through every frame above it.
struct Store<'a> {
    crypto: &'a mut [[u8; CRYPTO_BUF]; 6],
    streams: &'a mut StreamBuffers,
}

/// Adds `values` under the consecutive tags from `first` on.
#[cfg(feature = "selfmeasure")]
fn put_each(r: &mut Report, first: u8, values: &[u64; 4]) {
    for (i, v) in values.iter().enumerate() {
        r.put(first + i as u8, *v);
    }
}

/// Sends the report of transaction `which` (0: 1-RTT, 1: 0-RTT).
#[cfg(feature = "selfmeasure")]
#[inline(never)]
fn report<B: Board>(board: &mut B, which: u64, ok: bool, o: &Record, dropped: u32) {
    let mut r = Report::new();
    r.put(tag::TRANSACTION, which);
    r.put(tag::OK, u64::from(ok));
    r.put(tag::EARLY_DATA_ACCEPTED, u64::from(o.early_data_accepted));
    r.put(tag::GET_STATUS, u64::from(o.get_status));
    r.put(tag::POST_STATUS, u64::from(o.post_status));
    r.put(tag::GET_BYTES, o.get_bytes as u64);
    r.put(tag::KEY_UPDATES, u64::from(o.key_updates));
    // The tags of the four phases are consecutive.
    put_each(&mut r, tag::INSN_INIT, &o.phases.insn);
    put_each(&mut r, tag::US_INIT, &o.phases.us);
    // The traffic counters exist only with `stats` (the bridge counts the wire itself).
    #[cfg(feature = "stats")]
    {
        r.put(tag::DATAGRAMS_SENT, o.stats.datagrams_sent);
        r.put(tag::BYTES_SENT, o.stats.bytes_sent);
        r.put(tag::DATAGRAMS_RECEIVED, o.stats.datagrams_received);
        r.put(tag::BYTES_RECEIVED, o.stats.bytes_received);
        r.put(tag::PTOS, conn::ptos(&o.stats));
        r.put(tag::PACKETS_LOST, o.stats.packets_lost);
    }
    r.put(tag::FRAMES_DROPPED, u64::from(dropped));
    r.put(tag::CLOSE_KIND, o.close_kind);
    r.put(tag::CLOSE_CODE, o.close_code);
    r.put(tag::H3_ERROR, o.h3_error);
    send_frame(board, kind::REPORT, r.bytes());
}

/// The POST body from byte `from` on, generated into `buf` (the datagram buffer, free between
/// transmits): the repeating alphabet `a`..`z`, which the QEMU server checks
/// (xtask/src/qemu/server.rs). Generated rather than a 1 KB constant in flash.
fn post_body(from: usize, buf: &mut [u8]) -> &[u8] {
    let n = POST_BYTES.saturating_sub(from).min(buf.len());
    let out = buf.get_mut(..n).unwrap_or(&mut []);
    for (i, b) in out.iter_mut().enumerate() {
        *b = b'a' + ((from + i) % 26) as u8;
    }
    out
}

// The whole body fits in the datagram buffer, so it goes to `send_data` in one piece.
const _: () = assert!(POST_BYTES <= DATAGRAM);

/// What a transaction connects with.
struct Transaction<'a> {
    config: &'a ClientConfig<'a>,
    resumption: Option<Resumption<'a>>,
    /// The connection's configuration (the link profile's).
    transport: &'a ConnectionConfig,
    /// 0: the 1-RTT transaction, 1: the resumed one (for the report, feature `selfmeasure`).
    #[cfg(feature = "selfmeasure")]
    which: u64,
}

/// One transaction: connect (resuming with `resumption` if given), GET, POST, close.
/// With `ticket_out`, waits briefly for a session ticket and returns its length and the
/// time it arrived. The connection and the HTTP/3 session are built in `slots` and dropped
/// there at the end. Sends the transaction's report.
#[inline(never)]
fn transaction<'a, B: Board>(
    board: &mut B,
    parts: &'a mut Parts<'_>,
    kept: &mut Kept,
    t: &Transaction<'a>,
    rng: &mut Rng,
    ticket_out: Option<&mut [u8; TICKET]>,
) -> Option<(usize, Instant)> {
    let Parts { conn, h3, outcome, link, tx, crypto, streams } = parts;
    let out = fresh_outcome(outcome);
    let store = Store { crypto, streams };
    let io = Io { link, tx };
    let ticket = connected(board, (conn, h3), io, store, t, rng, ticket_out, out);
    #[cfg(feature = "selfmeasure")]
    {
        let r = &out.record;
        report(board, t.which, out.ok, r, link.dropped);
        *kept = Kept { ok: out.ok, deepest: r.phases.deepest, frame: r.frame, steps: r.steps };
    }
    #[cfg(not(feature = "selfmeasure"))]
    {
        *kept = Kept { ok: out.ok };
    }
    ticket
}

/// The static memory a transaction works in: the connection, the HTTP/3 session and the
/// transaction's record (slots), the serial link, the datagram buffer and the connection's
/// buffers.
struct Parts<'p> {
    conn: &'p mut MaybeUninit<Conn<'static>>,
    h3: &'p mut MaybeUninit<H3>,
    outcome: &'p mut MaybeUninit<Outcome>,
    link: &'p mut Decoder<FRAME>,
    tx: &'p mut [u8; DATAGRAM],
    crypto: &'p mut [[u8; CRYPTO_BUF]; 6],
    streams: &'p mut StreamBuffers,
}

/// A new transaction record in `slot` (built out of line: no copy of it in the caller's
/// frame).
#[inline(never)]
fn fresh_outcome(slot: &mut MaybeUninit<Outcome>) -> &mut Outcome {
    slot.write(Outcome::default())
}

/// Connects, runs the event loop and closes, recording into `out`; drops the connection.
#[allow(clippy::too_many_arguments)]
fn connected<'a, B: Board>(
    board: &mut B,
    (conn_slot, h3_slot): (&'a mut MaybeUninit<Conn<'static>>, &'a mut MaybeUninit<H3>),
    io: Io<'_>,
    store: Store<'a>,
    t: &Transaction<'a>,
    rng: &mut Rng,
    ticket_out: Option<&mut [u8; TICKET]>,
    out: &mut Outcome,
) -> Option<(usize, Instant)> {
    #[cfg(feature = "selfmeasure")]
    out.record.phases.enter(board, Some(Phase::Init));
    let now = Instant::from_micros(board.now_us());
    #[cfg(feature = "x509")]
    let unix_time = crate::UNIX_TIME_AT_BOOT + board.now_us() / 1_000_000;
    #[cfg(not(feature = "x509"))]
    let unix_time = 0;
    let h3 = init_h3(h3_slot);
    let slot = Slots::typed(conn_slot);
    let conn = connect(slot, t, unix_time, store, now, rng)?;
    let ticket = event_loop(board, conn, h3, io, ticket_out, now, out);
    #[cfg(feature = "selfmeasure")]
    record_connection(&mut out.record, conn);
    // Erase the keys (their `Drop`) before the slot is reused.
    #[allow(unsafe_code)]
    // SAFETY: `conn` is the slot `connect` initialized; it is not used after this.
    unsafe {
        drop_connection(conn)
    };
    ticket
}

/// Records how the connection went: early data, key updates, counters, how it closed.
#[cfg(feature = "selfmeasure")]
fn record_connection(r: &mut Record, conn: &Conn<'_>) {
    r.early_data_accepted = conn.tls().early_data_accepted() == Some(true);
    let stats = conn.stats();
    r.key_updates = stats.key_updates;
    #[cfg(feature = "stats")]
    {
        r.stats = stats;
    }
    (r.close_kind, r.close_code) = match conn.close_reason() {
        Some(CloseReason::Local(c)) if c.application && c.code == H3_NO_ERROR => (0, c.code),
        Some(CloseReason::Local(c)) => (1, c.code),
        Some(CloseReason::Peer(c)) => (2, c.code),
        Some(CloseReason::IdleTimeout) => (3, 0),
        _ => (4, 0),
    };
}

/// Drops the connection in place. Out of line: the connection's drop glue is then one copy
/// in the image (it was inlined into the transaction and kept out of line as well).
///
/// # Safety
/// `conn` points to an initialized connection that is not used after this call.
#[inline(never)]
#[allow(unsafe_code)]
unsafe fn drop_connection(conn: *mut Conn<'_>) {
    // SAFETY: the caller's contract.
    unsafe { core::ptr::drop_in_place(conn) };
}

/// The event loop of a connected transaction: GET, POST, close. Returns the session
/// ticket's length and arrival time, if one was asked for and came.
fn event_loop<B: Board>(
    board: &mut B,
    conn: &mut Conn<'_>,
    h3: &mut H3,
    io: Io<'_>,
    mut ticket_out: Option<&mut [u8; TICKET]>,
    start: Instant,
    out: &mut Outcome,
) -> Option<(usize, Instant)> {
    let req = &mut out.req;
    let mut ticket: Option<(usize, Instant)> = None;
    let mut updated = false;
    // The transaction ends by this time: its limit from its start, and once both responses
    // are complete at the latest the end of the ticket wait.
    let mut deadline = start + TRANSACTION_LIMIT;
    #[cfg(feature = "selfmeasure")]
    {
        out.record.frame = crate::measure::frame_marker();
        out.record.phases.enter(board, Some(Phase::Open));
    }
    #[cfg(feature = "selfmeasure")]
    let steps = &mut out.record.steps;
    #[cfg(not(feature = "selfmeasure"))]
    let steps = &mut ();
    let Io { link, tx } = io;
    loop {
        let now = Instant::from_micros(board.now_us());
        step(steps, 0, || receive(board, link, conn, now));
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            step(steps, 3, || on_timeout(conn, now));
        }
        // What the connection has for the application: a session ticket, stopped streams.
        conn::poll_news(
            conn,
            |conn| {
                if let Some(buf) = ticket_out.as_deref_mut() {
                    if let Some(n) = conn.take_ticket(buf) {
                        ticket = Some((n, now));
                    }
                }
            },
            |conn, id, code| {
                let _ = h3.on_stop_sending(&mut conn::transport(conn), id, code);
            },
        );
        if conn.is_closed() {
            break;
        }
        // The first request goes out as soon as the connection can carry it: after the
        // handshake, or at once in 0-RTT. Not gated here: until then the connection opens
        // no stream (`drive_requests` finds the control stream refused and sends nothing),
        // no key update starts and there is nothing to read.
        drive_requests(conn, h3, req, tx);
        // RFC 9001 §6.1, §6.5, §6.6: the device's own key update (as when half its AEAD
        // confidentiality limit is used), once per transaction after the GET: the
        // connection starts it once the handshake is confirmed and a packet of the
        // current phase acknowledged, and after the server's update only three PTOs past
        // the acknowledgment that confirmed it, so it is tried until it starts. The
        // measured transactions end before that wait is over (the built-in server
        // updates first), and are not held open for it: QEMU shows the server's update
        // answered; the device's own is exercised by mote-quic's tests and interop.
        if req.done[GET] && !updated {
            updated = conn.initiate_key_update();
        }
        #[cfg(feature = "selfmeasure")]
        if req.sent[GET] && out.record.phases.current() == Some(Phase::Open) {
            out.record.phases.enter(board, Some(Phase::Transfer));
        }
        step(steps, 2, || poll_h3(conn, h3, req));
        // Both responses are complete: the ticket wait ends the transaction at the latest
        // (set the first time; `min` keeps it after that, as `now` moves on).
        let responded = req.done[POST];
        if responded {
            deadline = deadline.min(now + TICKET_WAIT);
        }
        let finished =
            req.failed || now > deadline || responded && (ticket.is_some() || ticket_out.is_none());
        if finished {
            #[cfg(feature = "selfmeasure")]
            out.record.phases.enter(board, Some(Phase::Close));
            conn.close(H3_NO_ERROR, b"");
        }
        // Every datagram the connection has.
        step(steps, 1, || while transmit(board, conn, tx, now) {});
        if finished {
            // CONNECTION_CLOSE is out; the closing period needs no more from the device
            // (RFC 9000 §10.2: it may discard state and answer nothing).
            break;
        }
        // The connection's clock is the board's (modulo 2^32 µs on a device): its timer is
        // the board's wake-up deadline as it is.
        board.sleep_until(conn.poll_timeout());
    }
    #[cfg(feature = "selfmeasure")]
    {
        let r = &mut out.record;
        r.phases.enter(board, None);
        ([r.get_status, r.post_status], r.get_bytes) = (req.status, req.get_bytes);
        r.h3_error = req.h3_error;
    }
    out.ok =
        !req.failed && req.done[POST] && req.status == [200; 2] && req.get_bytes == OBJECT_BYTES;
    ticket
}

// The steps of the event loop are separate, non-inlined functions: each one's locals (and
// those of the connection code inlined into it) live only while it runs, instead of all
// adding up in the transaction's frame.

/// The connection's configuration on WLAN, in flash. NB-IoT's differs in its initial RTT
/// and idle timeout only: [`transport_config`] patches those into a RAM copy
/// rather than keeping a second 200-byte configuration in flash.
static DEVICE_CONFIG: ConnectionConfig = with_h3_streams(ConnectionConfig::device());

/// The connection's configuration for `profile`, written in `slot`: [`DEVICE_CONFIG`], on
/// NB-IoT with [`ConnectionConfig::nb_iot_device`]'s initial RTT and idle timeout.
#[inline(never)]
fn transport_config(
    slot: &mut MaybeUninit<ConnectionConfig>,
    profile: Profile,
) -> &ConnectionConfig {
    let c = slot.write(DEVICE_CONFIG);
    if profile == Profile::NbIot {
        // Constants: the compiler folds them, no second configuration is built. The two
        // profiles differ in these two fields only (`profile_configs_are_the_quic_profiles`).
        let nb = ConnectionConfig::nb_iot_device();
        c.recovery.initial_rtt = nb.recovery.initial_rtt;
        c.idle_timeout_ms = nb.idle_timeout_ms;
    }
    c
}

/// RFC 9114 §6.2: allows the server its control and two QPACK streams.
const fn with_h3_streams(mut c: ConnectionConfig) -> ConnectionConfig {
    c.streams.max_streams_uni = 3;
    c
}

/// Builds the connection in `slot` (writes the ClientHello); `None` if it could not start.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn connect<'a, 's>(
    slot: &'s mut MaybeUninit<Conn<'a>>,
    t: &Transaction<'a>,
    _unix_time: u64,
    store: Store<'a>,
    now: Instant,
    rng: &mut Rng,
) -> Option<&'s mut Conn<'a>> {
    // Static, not built on the stack.
    let qcfg = t.transport;
    // The TLS session is written in its place in the connection (its receive buffer zeroed
    // there), never built on the stack and moved.
    let conn = Conn::init_client(
        slot,
        qcfg,
        RustCrypto,
        |session| {
            let session = ClientSession::write_new(session, RustCrypto, t.config, t.resumption);
            // X.509 validity needs the time; a device gets it from its network (NB-IoT
            // NITZ, SNTP).
            #[cfg(feature = "x509")]
            session.set_unix_time(_unix_time);
            session
        },
        conn::storage(store.crypto, store.streams),
        now,
        SERVER,
        rng,
    )
    .ok()?;
    if let Some(r) = t.resumption {
        // RFC 9000 §7.4.1: 0-RTT uses the server's remembered transport parameters.
        conn.apply_remembered_params(r.ticket.server_transport_parameters);
    }
    Some(conn)
}

/// A new HTTP/3 session in `slot`, written in place.
fn init_h3(slot: &mut MaybeUninit<H3>) -> &mut H3 {
    H3::init(slot, &H3_SETUP)
}

/// Feeds every datagram waiting on the serial line to the connection.
#[inline(never)]
fn receive<B: Board>(board: &mut B, link: &mut Decoder<FRAME>, conn: &mut Conn<'_>, now: Instant) {
    while let Some(b) = board.read_byte() {
        if let Some(n) = link.push(b) {
            let f = link.frame(n);
            if let Some((&mut kind::DATAGRAM, dgram)) = f.split_first_mut() {
                conn.handle_datagram(now, SERVER, dgram);
            }
        }
    }
}

/// The connection's timer fired.
#[inline(never)]
fn on_timeout(conn: &mut Conn<'_>, now: Instant) {
    conn.handle_timeout(now);
}

/// Sends the connection's next datagram; `false` if it has none. One datagram per call,
/// the loop in the caller: in a loop around the inlined `poll_transmit` the compiler
/// hoisted some twenty field addresses of the connection into stack slots (188 B of
/// prologue).
#[inline(never)]
fn transmit<B: Board>(
    board: &mut B,
    conn: &mut Conn<'_>,
    tx: &mut [u8; DATAGRAM],
    now: Instant,
) -> bool {
    let Some(t) = conn.poll_transmit(now, tx) else { return false };
    if let Some(d) = tx.get(..t.len) {
        send_frame(board, kind::DATAGRAM, d);
    }
    true
}

/// Reads the HTTP/3 streams and records the responses.
#[inline(never)]
fn poll_h3(conn: &mut Conn<'_>, h3: &mut H3, req: &mut Requests) {
    let polled = h3.poll(&mut conn::transport(conn), |e| on_h3_event(req, e));
    if let Err(e) = polled {
        req.fail(e.code());
    }
}

/// Opens the control stream, sends the GET, and once its response is complete the POST
/// (its body generated into `body_buf`).
#[inline(never)]
fn drive_requests(conn: &mut Conn<'_>, h3: &mut H3, req: &mut Requests, body_buf: &mut [u8]) {
    let t = &mut conn::transport(conn);
    if !h3.is_open() && h3.open(t).is_err() {
        return;
    }
    // The GET, and once its response is complete the POST.
    let i = usize::from(req.done[GET]);
    if let (Some(sent @ false), Some(r)) = (req.sent.get_mut(i), REQUESTS.get(i)) {
        *sent = h3.send_request(t, r, i == GET).is_ok();
    }
    while req.sent[POST] && req.post_body_sent < POST_BYTES {
        let rest = post_body(req.post_body_sent, body_buf);
        match h3.send_data(t, rest, true) {
            Ok(n) if n > 0 => req.post_body_sent += n,
            _ => break,
        }
    }
}

/// Records what the server's responses carry.
fn on_h3_event(req: &mut Requests, e: H3Event<'_>) {
    // The current request (see [`Requests`]).
    let i = usize::from(req.done[GET]);
    let get = i == GET;
    match e {
        H3Event::Response { status, .. } if status >= 200 => {
            if let Some(s) = req.status.get_mut(i) {
                *s = status;
            }
        }
        H3Event::Data(d) if get => req.get_bytes += d.len(),
        H3Event::Finished => {
            if let Some(d) = req.done.get_mut(i) {
                *d = true;
            }
        }
        H3Event::StreamError(e) => req.fail(e.code()),
        H3Event::Reset(code) => req.fail(code),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_configs_are_the_quic_profiles() {
        let mut slot = MaybeUninit::uninit();
        let wlan = with_h3_streams(ConnectionConfig::device());
        assert_eq!(*transport_config(&mut slot, Profile::Wlan), wlan);
        let nb_iot = with_h3_streams(ConnectionConfig::nb_iot_device());
        assert_eq!(*transport_config(&mut slot, Profile::NbIot), nb_iot);
        assert_ne!(wlan, nb_iot);
    }
}
