//! Decrypting what the relay saw, as the interop runner does with tshark and a key log:
//! Initial packets with the keys every observer can derive (RFC 9001 §5.2), Handshake,
//! 0-RTT and 1-RTT packets with the endpoints' NSS key logs (SSLKEYLOGFILE), following key
//! updates (RFC 9001 §6). Packets that do not authenticate are counted, never guessed at.
//!
//! The crypto and the packet/frame parsers are mote-quic's (RustCrypto provider); the
//! checks that rest on them (ClientHello cipher suites, Certificate on resumption, key
//! phase, PATH_CHALLENGE, 0-RTT bytes, the stream limit) are about the *peer's* packets as
//! much as mote's, and a decryption bug would show up as undecryptable packets, which the
//! judge reports.

use std::collections::{BTreeMap, HashMap};

use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::AeadAlgorithm;
use mote_quic::frame::{Frame, Frames};
use mote_quic::packet::{
    self, initial_secrets, next_secret, number, remove_header_protection, Header, LongType,
    PacketKey, PacketKeys, PacketType,
};
use mote_quic::Version;

/// Most bytes kept per CRYPTO stream (a ClientHello or a server flight is far smaller).
const MAX_CRYPTO: u64 = 256 * 1024;
/// Most key generations followed per direction.
const MAX_GENERATIONS: usize = 64;

/// One datagram of the relay log, with bytes.
pub struct Datagram {
    /// Microseconds since the relay started.
    pub t_us: u64,
    /// Client → server.
    pub to_server: bool,
    /// The client address as the server sees it.
    pub path: String,
    /// The relay address the client sent to (or answers came from): the server's address
    /// as the client sees it.
    pub listen: String,
    /// The bytes as sent.
    pub bytes: Vec<u8>,
}

/// Secrets from an NSS key log, by client random.
#[derive(Default)]
pub struct KeyLog {
    secrets: HashMap<(Vec<u8>, String), Vec<u8>>,
}

impl KeyLog {
    /// Parses key log text (lines `LABEL <client_random hex> <secret hex>`); may be called
    /// for several files.
    pub fn add(&mut self, text: &str) {
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(label), Some(random), Some(secret)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if let (Some(r), Some(s)) = (unhex(random), unhex(secret)) {
                self.secrets.insert((r, label.to_string()), s);
            }
        }
    }

    fn get(&self, random: &[u8], label: &str) -> Option<&[u8]> {
        self.secrets.get(&(random.to_vec(), label.to_string())).map(Vec::as_slice)
    }
}

/// Hex to bytes.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// A CRYPTO stream being reassembled.
#[derive(Default)]
struct CryptoStream {
    contiguous: Vec<u8>,
    pending: BTreeMap<u64, Vec<u8>>,
}

impl CryptoStream {
    fn add(&mut self, offset: u64, data: &[u8]) {
        if offset.saturating_add(data.len() as u64) > MAX_CRYPTO {
            return;
        }
        self.pending.insert(offset, data.to_vec());
        while let Some((&off, _)) = self.pending.first_key_value() {
            let have = self.contiguous.len() as u64;
            if off > have {
                break;
            }
            let Some((off, d)) = self.pending.pop_first() else { break };
            let skip = (have - off) as usize;
            if let Some(rest) = d.get(skip..) {
                self.contiguous.extend_from_slice(rest);
            }
        }
    }

    /// The complete handshake messages so far: (type, body).
    fn messages(&self) -> Vec<(u8, &[u8])> {
        let mut out = Vec::new();
        let mut rest = self.contiguous.as_slice();
        while let [ty, a, b, c, tail @ ..] = rest {
            let len = usize::from(*a) << 16 | usize::from(*b) << 8 | usize::from(*c);
            let Some(body) = tail.get(..len) else { break };
            out.push((*ty, body));
            rest = &tail[len..];
        }
        out
    }
}

/// Keys of one direction of one packet number space.
struct DirKeys {
    /// RFC 9001 §6.1: the header-protection key is not updated by key updates.
    header: <RustCrypto as mote_crypto::CryptoProvider>::HeaderKey,
    /// Payload keys of generation 0 and later 1-RTT generations (index = generation).
    generations: Vec<PacketKey<RustCrypto>>,
    /// The secret of the last generation, to derive the next.
    last_secret: Vec<u8>,
    alg: AeadAlgorithm,
    version: Version,
    /// Generation of the last packet that decrypted.
    current: usize,
    largest_pn: Option<u64>,
}

impl DirKeys {
    fn new(version: Version, alg: AeadAlgorithm, secret: &[u8]) -> Option<Self> {
        let keys = PacketKeys::from_secret(&RustCrypto, version, alg, secret).ok()?;
        Some(DirKeys {
            header: keys.header,
            generations: vec![keys.packet],
            last_secret: secret.to_vec(),
            alg,
            version,
            current: 0,
            largest_pn: None,
        })
    }

    /// Decrypts a copy of `packet`: removes header protection (RFC 9001 §5.4), decodes the
    /// packet number (RFC 9000 §17.1), and for 1-RTT picks the key generation by the Key
    /// Phase bit (RFC 9001 §6): the current one, the next (a key update), or the previous
    /// (reordering). Returns the plaintext frames, the packet number, the generation and
    /// the Key Phase bit.
    fn open(
        &mut self,
        packet: &[u8],
        pn_offset: usize,
        one_rtt: bool,
    ) -> Option<(Vec<u8>, u64, usize, bool)> {
        let mut copy = packet.to_vec();
        let t = remove_header_protection(&self.header, &mut copy, pn_offset).ok()?;
        let pn = number::decode(self.largest_pn, t.value, t.len);
        let header_len = pn_offset + t.len;
        let key_phase = one_rtt && t.first_byte & 0x04 != 0;
        let mut order = vec![self.current];
        if one_rtt && key_phase != (self.current % 2 == 1) {
            order = vec![self.current + 1];
            if self.current > 0 {
                order.push(self.current - 1);
            }
        }
        for generation in order {
            while self.generations.len() <= generation && self.generations.len() < MAX_GENERATIONS {
                let next =
                    next_secret(&RustCrypto, self.version, self.alg.hash(), &self.last_secret)
                        .ok()?;
                let key =
                    PacketKey::from_secret(&RustCrypto, self.version, self.alg, next.as_ref())
                        .ok()?;
                self.generations.push(key);
                self.last_secret = next.as_ref().to_vec();
            }
            let Some(key) = self.generations.get(generation) else { continue };
            let mut attempt = copy.clone();
            if let Ok(payload_len) = key.open_in_place(pn, &mut attempt, header_len) {
                self.largest_pn = Some(self.largest_pn.map_or(pn, |l| l.max(pn)));
                self.current = self.current.max(generation);
                let payload = attempt.get(header_len..header_len + payload_len)?.to_vec();
                return Some((payload, pn, generation, key_phase));
            }
        }
        None
    }
}

/// What one connection showed, once decrypted.
#[derive(Default)]
pub struct Conn {
    /// The client's Source Connection ID.
    pub client_scid: Vec<u8>,
    /// The server's Source Connection ID (from its first Initial).
    pub server_scid: Vec<u8>,
    /// Every connection ID the server issued (its SCID and NEW_CONNECTION_ID), and the
    /// client's.
    server_cids: Vec<Vec<u8>>,
    client_cids: Vec<Vec<u8>>,
    /// The DCID of the client's first Initial.
    odcid: Vec<u8>,
    /// The DCID the Initial keys come from (the Retry's SCID after a Retry).
    initial_dcid: Vec<u8>,
    /// Client Initial packets that carried the start of the ClientHello (offset 0).
    pub client_hellos: usize,
    /// Cipher suites offered in the ClientHello.
    pub offered_suites: Vec<u16>,
    /// The suite the ServerHello chose.
    pub suite: Option<u16>,
    client_random: Option<Vec<u8>>,
    /// Handshake message types the server sent in Handshake packets.
    pub server_handshake_types: Vec<u8>,
    /// initial_max_streams_bidi from the server's transport parameters.
    pub server_max_streams_bidi: Option<u64>,
    /// Whether the server's transport parameters carry preferred_address.
    pub server_preferred_address: bool,
    /// Whether each side (client, server) sent an ACK frame with ECN counts (type 0x03).
    pub ack_ecn: [bool; 2],
    /// The client's first 1-RTT packet to each server address (the relay's listening
    /// address): (that address, its Destination Connection ID, whether it carried
    /// PATH_CHALLENGE).
    pub client_first_on_path: Vec<(String, Vec<u8>, bool)>,
    /// Whether a Retry was seen, the largest client Initial packet number before it, and
    /// the packet number of the first client Initial carrying a token after it.
    pub retry: bool,
    /// Largest client Initial packet number before the Retry.
    pub pn_before_retry: Option<u64>,
    /// Packet number of the first client Initial with a token after the Retry.
    pub pn_with_token: Option<u64>,
    /// STREAM bytes the client sent in 0-RTT and in 1-RTT packets.
    pub client_0rtt_stream_bytes: u64,
    /// STREAM bytes the client sent in 1-RTT packets.
    pub client_1rtt_stream_bytes: u64,
    /// 0-RTT packets the client sent (decrypted or not).
    pub client_0rtt_packets: usize,
    /// Whether each side (client, server) sent a 1-RTT packet with Key Phase 1 that
    /// decrypted with the updated keys.
    pub key_phase_1: [bool; 2],
    /// Highest key generation seen per side.
    pub generations: [usize; 2],
    /// 1-RTT packets decrypted per side.
    pub decrypted_1rtt: [usize; 2],
    /// Packets that failed to decrypt (no keys, or not authentic), per side.
    pub undecryptable: [usize; 2],
    /// (time, path) of each server packet carrying PATH_CHALLENGE, and the first server
    /// 1-RTT packet on each path the server sent to.
    pub server_path_challenges: Vec<(u64, String)>,
    /// The first server packet on each path: (path, whether it carried PATH_CHALLENGE).
    pub first_on_path: Vec<(String, bool)>,
    /// The frame types of those packets (evidence for a verdict), in the same order.
    pub first_on_path_frames: Vec<Vec<u64>>,
    /// PATH_CHALLENGE data from the server and PATH_RESPONSE data from the client.
    pub challenges: Vec<[u8; 8]>,
    /// PATH_RESPONSE data from the client.
    pub responses: Vec<[u8; 8]>,
    keys: HashMap<(u8, bool), DirKeys>,
    crypto: HashMap<(u8, bool), CryptoStream>,
}

/// Spaces used as key map indices.
const INITIAL: u8 = 0;
const HANDSHAKE: u8 = 1;
const ZERO_RTT: u8 = 2;
const ONE_RTT: u8 = 3;

fn aead(suite: u16) -> Option<AeadAlgorithm> {
    match suite {
        0x1301 => Some(AeadAlgorithm::Aes128Gcm),
        0x1302 => Some(AeadAlgorithm::Aes256Gcm),
        0x1303 => Some(AeadAlgorithm::ChaCha20Poly1305),
        _ => None,
    }
}

/// Decrypts every datagram and returns the connections in order of appearance.
pub fn decode(datagrams: &[Datagram], keylog: &KeyLog) -> Vec<Conn> {
    let mut conns: Vec<Conn> = Vec::new();
    for d in datagrams {
        let mut rest: &[u8] = &d.bytes;
        while !rest.is_empty() && rest.iter().any(|&b| b != 0) {
            // The short-header DCID length: that of the connection the packet belongs to.
            let short_len = if rest[0] & 0x80 == 0 {
                find_short(&conns, rest, d.to_server).map_or(0, |(_, len)| len)
            } else {
                0
            };
            let Ok(parsed) = packet::parse(rest, short_len, true) else { break };
            let len = parsed.len.min(rest.len());
            let pkt = &rest[..len];
            rest = &rest[len..];
            handle_packet(&mut conns, d, pkt, &parsed, keylog);
            if len == 0 {
                break;
            }
        }
    }
    conns
}

/// The connection a short-header packet belongs to, by its DCID, and that DCID's length.
fn find_short(conns: &[Conn], pkt: &[u8], to_server: bool) -> Option<(usize, usize)> {
    for (i, c) in conns.iter().enumerate().rev() {
        let cids = if to_server { &c.server_cids } else { &c.client_cids };
        for cid in cids {
            if pkt.get(1..1 + cid.len()) == Some(cid.as_slice()) {
                return Some((i, cid.len()));
            }
        }
    }
    None
}

fn handle_packet(
    conns: &mut Vec<Conn>,
    d: &Datagram,
    pkt: &[u8],
    parsed: &packet::Parsed<'_>,
    keylog: &KeyLog,
) {
    let side = usize::from(!d.to_server); // 0 = client sent it, 1 = server
    let mut short_dcid = None;
    let (idx, space, version) = match parsed.header {
        Header::Long(h) => {
            let idx = if d.to_server {
                // A client may use an empty SCID for every connection (quic-go does), so an
                // Initial belongs to an earlier connection only if its DCID is one that
                // connection's Initials use.
                let known = conns.iter().rposition(|c| {
                    c.client_scid == h.scid
                        && (h.ty != LongType::Initial
                            || c.odcid == h.dcid
                            || c.initial_dcid == h.dcid
                            || c.server_cids.iter().any(|s| s == h.dcid))
                });
                match known {
                    Some(i) => i,
                    None if h.ty == LongType::Initial => {
                        conns.push(Conn {
                            client_scid: h.scid.to_vec(),
                            client_cids: vec![h.scid.to_vec()],
                            odcid: h.dcid.to_vec(),
                            initial_dcid: h.dcid.to_vec(),
                            ..Conn::default()
                        });
                        conns.len() - 1
                    }
                    None => return,
                }
            } else {
                match conns.iter().rposition(|c| c.client_scid == h.dcid) {
                    Some(i) => i,
                    None => return,
                }
            };
            let c = &mut conns[idx];
            if !d.to_server && h.ty == LongType::Initial && c.server_scid.is_empty() {
                c.server_scid = h.scid.to_vec();
                c.server_cids.push(h.scid.to_vec());
            }
            let space = match h.ty {
                LongType::Initial => INITIAL,
                LongType::Handshake => HANDSHAKE,
                LongType::ZeroRtt => ZERO_RTT,
                LongType::Retry => return,
            };
            (idx, space, h.version)
        }
        Header::Retry(r) => {
            // RFC 9000 §17.2.5.2: a client accepts only the first Retry (a server may
            // send one per client Initial datagram).
            if let Some(c) =
                conns.iter_mut().rev().find(|c| c.client_scid == r.dcid).filter(|c| !c.retry)
            {
                c.retry = true;
                c.pn_before_retry = c.keys.get(&(INITIAL, true)).and_then(|k| k.largest_pn);
                c.initial_dcid = r.scid.to_vec();
                c.keys.remove(&(INITIAL, true));
                c.keys.remove(&(INITIAL, false));
            }
            return;
        }
        Header::Short(_) => {
            let Some((idx, len)) = find_short(conns, pkt, d.to_server) else { return };
            short_dcid = pkt.get(1..1 + len).map(<[u8]>::to_vec);
            (idx, ONE_RTT, Version::V1)
        }
        _ => return,
    };
    let c = &mut conns[idx];
    if space == ZERO_RTT && d.to_server {
        c.client_0rtt_packets += 1;
    }
    let Some(pn_offset) = parsed.pn_offset else { return };
    let dir = d.to_server;
    if !c.keys.contains_key(&(space, dir)) {
        if let Some(k) = make_keys(c, space, dir, version, keylog) {
            c.keys.insert((space, dir), k);
        }
    }
    let Some(keys) = c.keys.get_mut(&(space, dir)) else {
        c.undecryptable[side] += 1;
        return;
    };
    let Some((payload, pn, generation, key_phase)) = keys.open(pkt, pn_offset, space == ONE_RTT)
    else {
        c.undecryptable[side] += 1;
        return;
    };
    if space == INITIAL && d.to_server && c.retry && c.pn_with_token.is_none() {
        if let Header::Long(h) = parsed.header {
            if !h.token.is_empty() {
                c.pn_with_token = Some(pn);
            }
        }
    }
    if space == ONE_RTT {
        c.decrypted_1rtt[side] += 1;
        c.generations[side] = c.generations[side].max(generation);
        if key_phase && generation >= 1 {
            c.key_phase_1[side] = true;
        }
    }
    let ptype = match space {
        INITIAL => PacketType::Initial,
        HANDSHAKE => PacketType::Handshake,
        ZERO_RTT => PacketType::ZeroRtt,
        _ => PacketType::OneRtt,
    };
    let mut challenge_here = false;
    let mut types = Vec::new();
    for frame in Frames::new(&payload, ptype) {
        let Ok(frame) = frame else { break };
        if types.len() < 16 && !types.contains(&frame.frame_type()) {
            types.push(frame.frame_type());
        }
        match frame {
            Frame::Crypto { offset, data } => {
                if space == INITIAL && d.to_server && offset.into_inner() == 0 {
                    c.client_hellos += 1;
                }
                c.crypto.entry((space, dir)).or_default().add(offset.into_inner(), data);
            }
            Frame::Stream { data, .. } if d.to_server => match space {
                ZERO_RTT => c.client_0rtt_stream_bytes += data.len() as u64,
                ONE_RTT => c.client_1rtt_stream_bytes += data.len() as u64,
                _ => {}
            },
            Frame::NewConnectionId { cid, .. } => {
                let cids = if d.to_server { &mut c.client_cids } else { &mut c.server_cids };
                if cids.len() < 64 {
                    cids.push(cid.as_ref().to_vec());
                }
            }
            Frame::PathChallenge { data } if !d.to_server => {
                challenge_here = true;
                c.challenges.push(data);
                c.server_path_challenges.push((d.t_us, d.path.clone()));
            }
            Frame::PathResponse { data } if d.to_server => c.responses.push(data),
            Frame::PathChallenge { .. } => challenge_here = true,
            Frame::Ack(ack) if ack.ecn().is_some() => c.ack_ecn[side] = true,
            _ => {}
        }
    }
    if space == ONE_RTT && !d.to_server && !c.first_on_path.iter().any(|(p, _)| *p == d.path) {
        c.first_on_path.push((d.path.clone(), challenge_here));
        c.first_on_path_frames.push(types);
    }
    if let Some(dcid) = short_dcid.filter(|_| d.to_server) {
        if !c.client_first_on_path.iter().any(|(l, ..)| *l == d.listen) {
            c.client_first_on_path.push((d.listen.clone(), dcid, challenge_here));
        }
    }
    after_crypto(c, space, dir);
}

/// Reads what the handshake bytes so far say: ClientHello (suites, random), ServerHello
/// (suite), the server's Handshake messages (types, transport parameters).
fn after_crypto(c: &mut Conn, space: u8, to_server: bool) {
    let Some(stream) = c.crypto.get(&(space, to_server)) else { return };
    let messages: Vec<(u8, Vec<u8>)> =
        stream.messages().into_iter().map(|(t, b)| (t, b.to_vec())).collect();
    for (ty, body) in messages {
        match (space, to_server, ty) {
            (INITIAL, true, 1) if c.client_random.is_none() => {
                if let Some((random, suites)) = client_hello(&body) {
                    c.client_random = Some(random);
                    c.offered_suites = suites;
                }
            }
            (INITIAL, false, 2) if c.suite.is_none() => c.suite = server_hello_suite(&body),
            (HANDSHAKE, false, t) => {
                if c.server_handshake_types.len() < 16 && !c.server_handshake_types.contains(&t) {
                    c.server_handshake_types.push(t);
                }
                if t == 8 && c.server_max_streams_bidi.is_none() {
                    c.server_max_streams_bidi = encrypted_extensions_param(&body, 0x08)
                        .and_then(|v| mote_quic::coding::Reader::new(v).varint().ok())
                        .map(|v| v.into_inner());
                    // RFC 9000 §18.2: preferred_address = IPv4 address and port, IPv6
                    // address and port, a connection ID (8-bit length) the client uses
                    // there, a stateless reset token.
                    if let Some(pa) = encrypted_extensions_param(&body, 0x0d) {
                        c.server_preferred_address = true;
                        let len = pa.get(24).map_or(0, |&l| usize::from(l));
                        let cid = pa.get(25..25 + len).filter(|cid| !cid.is_empty());
                        if let Some(cid) = cid.filter(|cid| !c.server_cids.iter().any(|k| k == cid))
                        {
                            c.server_cids.push(cid.to_vec());
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn make_keys(
    c: &Conn,
    space: u8,
    to_server: bool,
    version: Version,
    keylog: &KeyLog,
) -> Option<DirKeys> {
    if space == INITIAL {
        let (client, server) = initial_secrets(&RustCrypto, version, &c.initial_dcid).ok()?;
        let secret = if to_server { client } else { server };
        return DirKeys::new(version, AeadAlgorithm::Aes128Gcm, secret.as_ref());
    }
    let random = c.client_random.as_ref()?;
    let label = match (space, to_server) {
        (HANDSHAKE, true) => "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        (HANDSHAKE, false) => "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        (ZERO_RTT, _) => "CLIENT_EARLY_TRAFFIC_SECRET",
        (_, true) => "CLIENT_TRAFFIC_SECRET_0",
        (_, false) => "SERVER_TRAFFIC_SECRET_0",
    };
    let secret = keylog.get(random, label)?;
    // 0-RTT uses the resumed session's suite; in practice the same as the ServerHello's,
    // and when the server rejects 0-RTT there may be no ServerHello yet: guess from the
    // secret length (32 bytes: SHA-256 suites, AES-128-GCM unless only ChaCha20 offered).
    let suite = c.suite.unwrap_or(if c.offered_suites == [0x1303] {
        0x1303
    } else if secret.len() == 48 {
        0x1302
    } else {
        0x1301
    });
    // The version of 1-RTT packets is that of the connection's Handshake packets.
    let version = if space == ONE_RTT {
        c.keys.get(&(HANDSHAKE, to_server)).map_or(version, |k| k.version)
    } else {
        version
    };
    DirKeys::new(version, aead(suite)?, secret)
}

/// A cursor over TLS structures.
struct Tls<'a>(&'a [u8]);

impl<'a> Tls<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (a, b) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
}

/// RFC 8446 §4.1.2: the client random and the offered cipher suites.
fn client_hello(body: &[u8]) -> Option<(Vec<u8>, Vec<u16>)> {
    let mut r = Tls(body);
    r.u16()?; // legacy_version
    let random = r.take(32)?.to_vec();
    r.vec8()?; // legacy_session_id
    let suites = r.vec16()?;
    let suites = suites.chunks_exact(2).map(|s| u16::from_be_bytes([s[0], s[1]])).collect();
    Some((random, suites))
}

/// RFC 8446 §4.1.3: the chosen cipher suite.
fn server_hello_suite(body: &[u8]) -> Option<u16> {
    let mut r = Tls(body);
    r.u16()?;
    r.take(32)?;
    r.vec8()?;
    r.u16()
}

/// RFC 9000 §18.2 inside RFC 9001 §8.2's extension (0x39) of EncryptedExtensions: the
/// value of transport parameter `want` (initial_max_streams_bidi 0x08, preferred_address
/// 0x0d).
fn encrypted_extensions_param(body: &[u8], want: u64) -> Option<&[u8]> {
    let mut r = Tls(body);
    let mut exts = Tls(r.vec16()?);
    while !exts.0.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        if ty != 0x39 {
            continue;
        }
        let mut p = mote_quic::coding::Reader::new(data);
        while !p.is_empty() {
            let id = p.varint().ok()?.into_inner();
            let value = p.varint_prefixed().ok()?;
            if id == want {
                return Some(value);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crypto_stream_reassembles_out_of_order() {
        let mut s = CryptoStream::default();
        s.add(4, &[0xaa, 0xbb]);
        assert!(s.messages().is_empty());
        s.add(0, &[1, 0, 0, 2]);
        assert_eq!(s.messages(), vec![(1u8, &[0xaa, 0xbb][..])]);
        s.add(0, &[1, 0]); // duplicate
        assert_eq!(s.contiguous.len(), 6);
    }

    #[test]
    fn keylog_lines() {
        let mut k = KeyLog::default();
        k.add("# comment\nCLIENT_TRAFFIC_SECRET_0 0102 aabb\nbad line\n");
        assert_eq!(k.get(&[1, 2], "CLIENT_TRAFFIC_SECRET_0"), Some(&[0xaa, 0xbb][..]));
        assert_eq!(k.get(&[1, 2], "SERVER_TRAFFIC_SECRET_0"), None);
    }

    #[test]
    fn client_hello_fields() {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.extend([0, 0, 4, 0x13, 0x01, 0x13, 0x03, 1, 0]);
        let (random, suites) = client_hello(&body).unwrap();
        assert_eq!(random, [7u8; 32]);
        assert_eq!(suites, [0x1301, 0x1303]);
        assert_eq!(client_hello(&body[..20]), None);
    }
}
/// `CELL=target/interop/<run>/<case>/<pair> cargo test -p xtask decode_cell -- --ignored
/// --nocapture` prints what the decoder follows in one cell's logs (for debugging a verdict).
#[cfg(test)]
mod debug {
    #[test]
    #[ignore]
    fn decode_cell() {
        let dir = std::path::PathBuf::from(std::env::var("CELL").unwrap());
        let text = std::fs::read_to_string(dir.join("relay.jsonl")).unwrap();
        let mut ds = Vec::new();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(h) = v["hex"].as_str() {
                ds.push(super::Datagram {
                    t_us: 0,
                    to_server: v["dir"] == "to_server",
                    path: String::new(),
                    listen: String::new(),
                    bytes: super::unhex(h).unwrap(),
                });
            }
        }
        let mut k = super::KeyLog::default();
        k.add(&std::fs::read_to_string(dir.join("client-keys.log")).unwrap_or_default());
        let conns = super::decode(&ds, &k);
        for c in &conns {
            eprintln!(
                "scid {:02x?} server {:02x?} cids {:?} {:?} dec {:?} undec {:?} suite {:?}",
                c.client_scid,
                c.server_scid,
                c.client_cids.len(),
                c.server_cids.len(),
                c.decrypted_1rtt,
                c.undecryptable,
                c.suite
            );
        }
    }
}
