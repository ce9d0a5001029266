//! `mote demo --wire`: the first round trip of a device's QUIC handshake, on the wire layer
//! (what `mote demo` printed before connections existed).
//!
//! A device (RustCrypto provider, as on the MCU) builds its real
//! first flight — a TLS 1.3 ClientHello with an X25519 share, ALPN `h3`, raw-public-key
//! server authentication and its QUIC transport parameters — in a padded, protected
//! Initial packet. A server (the `ring` provider) parses and decrypts it, answers with an
//! Initial carrying an ACK and its ServerHello, and both sides derive the TLS handshake
//! secrets, which must agree. Then the two other first answers a server can give: a Retry
//! (whose integrity tag the client checks) and Version Negotiation (for a greased version).
//! Every datagram is built and parsed by mote's own code; nothing is canned.

use anyhow::{anyhow, bail, ensure, Context, Result};
use mote_crypto::fast::{Ring, SystemRng};
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{AeadAlgorithm, CryptoProvider, CryptoRng, KeyExchange, NamedGroup};
use mote_quic::coding::{VarInt, Writer};
use mote_quic::frame::{Ack, Frame, Frames, RangeOrder};
use mote_quic::packet::{
    self, emit_version_negotiation, initial_keys, verify_retry, Header, LongHeader, LongType,
    PacketType, Retry, TAG_LEN,
};
use mote_quic::transport_params::{Side, TransportParameters, VersionInformation};
use mote_quic::Version;
use mote_tls::msgs::{self, ClientHello, ClientHelloParams, KeyShareEntry, ServerHello};
use mote_tls::{EarlySecret, Transcript};

/// RFC 9000 §14.1: a client's Initial datagrams are padded to at least 1200 bytes.
const MIN_INITIAL_DATAGRAM: usize = 1200;
/// Local connection-ID length both sides use.
const CID_LEN: usize = 8;
/// RFC 7250 certificate type RawPublicKey.
const RAW_PUBLIC_KEY: u8 = 2;
/// RFC 8446 §4.2.9 psk_dhe_ke.
const PSK_DHE_KE: u8 = 1;

/// One datagram that crossed the (in-memory) wire.
struct Row {
    version: Version,
    direction: &'static str,
    packet: &'static str,
    bytes: usize,
    detail: String,
}

/// Runs the wire-layer walkthrough and prints its rows (`json`: one object per datagram).
pub fn run(json: bool) -> Result<()> {
    let mut rows = Vec::new();
    for version in [Version::V1, Version::V2] {
        first_round_trip(version, &mut rows)
            .with_context(|| format!("first round trip, version {:#x}", version.0))?;
        retry(version, &mut rows).with_context(|| format!("Retry, version {:#x}", version.0))?;
    }
    version_negotiation(&mut rows).context("version negotiation")?;

    if json {
        for r in &rows {
            println!(
                "{}",
                serde_json::json!({
                    "version": format!("{:#010x}", r.version.0),
                    "direction": r.direction,
                    "packet": r.packet,
                    "bytes": r.bytes,
                    "detail": r.detail,
                })
            );
        }
        return Ok(());
    }

    println!("mote demo --wire — the first round trip of a device handshake, on mote's wire layer");
    println!(
        "(packets built and parsed by hand: the Retry and Version Negotiation answers are not"
    );
    println!(" yet used by connections; every byte below is real)\n");
    println!("{:<10} {:<8} {:<22} {:>6}  detail", "version", "dir", "packet", "bytes");
    for r in &rows {
        let version = match r.version {
            Version::V1 => "v1".to_string(),
            Version::V2 => "v2".to_string(),
            v => format!("{:#010x}", v.0),
        };
        let mut lines = r.detail.lines();
        println!(
            "{:<10} {:<8} {:<22} {:>6}  {}",
            version,
            r.direction,
            r.packet,
            r.bytes,
            lines.next().unwrap_or("")
        );
        for line in lines {
            println!("{:<50}{}", "", line);
        }
    }
    Ok(())
}

fn random<const N: usize>(rng: &mut SystemRng) -> Result<[u8; N]> {
    let mut out = [0u8; N];
    rng.fill(&mut out).map_err(|e| anyhow!("rng: {e:?}"))?;
    Ok(out)
}

/// The device's transport parameters: small windows for a few KB of RAM.
fn device_transport_parameters(version: Version, scid: &[u8]) -> Result<TransportParameters> {
    Ok(TransportParameters {
        initial_source_connection_id: mote_quic::ConnectionId::new(scid),
        max_idle_timeout: VarInt::from_u32(30_000),
        max_udp_payload_size: VarInt::from_u32(1200),
        initial_max_data: VarInt::from_u32(8192),
        initial_max_stream_data_bidi_local: VarInt::from_u32(4096),
        initial_max_stream_data_bidi_remote: VarInt::from_u32(4096),
        initial_max_stream_data_uni: VarInt::from_u32(1024),
        initial_max_streams_bidi: VarInt::from_u32(4),
        initial_max_streams_uni: VarInt::from_u32(3),
        // RFC 9368 §3: compatible version negotiation information.
        version_information: Some(VersionInformation::new(version, Version::SUPPORTED)),
        ..TransportParameters::default()
    })
}

/// Builds a padded, protected client Initial carrying `crypto` at offset 0.
fn client_initial<P: CryptoProvider>(
    provider: &P,
    version: Version,
    dcid: &[u8],
    scid: &[u8],
    token: &[u8],
    pn: u64,
    crypto: &[u8],
) -> Result<Vec<u8>> {
    let keys = initial_keys(provider, version, dcid).map_err(|e| anyhow!("keys: {e:?}"))?;
    let mut buf = vec![0u8; MIN_INITIAL_DATAGRAM];
    let mut w = Writer::new(&mut buf);
    let header = LongHeader { ty: LongType::Initial, version, dcid, scid, token };
    let offsets = header.emit(&mut w, pn, 4).map_err(|_| anyhow!("header does not fit"))?;
    Frame::Crypto { offset: VarInt::ZERO, data: crypto }
        .emit(&mut w)
        .map_err(|_| anyhow!("ClientHello does not fit in one Initial"))?;
    // RFC 9000 §14.1: PADDING up to 1200 bytes, leaving room for the AEAD tag.
    let pad = w.remaining().checked_sub(TAG_LEN).context("no room for the tag")?;
    w.put_repeated(0, pad).map_err(|_| anyhow!("padding"))?;
    w.reserve(TAG_LEN).map_err(|_| anyhow!("tag"))?;
    let len = w.position();
    offsets.set_length(&mut buf, len).map_err(|_| anyhow!("length"))?;
    keys.client.protect(&mut buf, offsets.pn_offset, pn).map_err(|e| anyhow!("protect: {e:?}"))?;
    Ok(buf)
}

/// What an Initial packet carried.
struct OpenedInitial {
    /// A one-line summary of the packet number and frames.
    summary: String,
    /// CRYPTO bytes, in order from offset 0.
    crypto: Vec<u8>,
    /// Packet-number ranges acknowledged by ACK frames.
    acked: Vec<(u64, u64)>,
}

/// Decrypts the first Initial packet of `datagram` with the Initial keys for `odcid`.
fn open_initial<P: CryptoProvider>(
    provider: &P,
    from_client: bool,
    odcid: &[u8],
    datagram: &mut [u8],
) -> Result<OpenedInitial> {
    let parsed = packet::parse(datagram, CID_LEN, false).map_err(|e| anyhow!("header: {e}"))?;
    let Header::Long(h) = parsed.header else { bail!("not a long-header packet") };
    ensure!(h.ty == LongType::Initial, "not an Initial packet");
    let version = h.version;
    let pn_offset = parsed.pn_offset.context("Initial without packet number")?;
    let packet = datagram.get_mut(..parsed.len).context("packet length")?;
    let keys = initial_keys(provider, version, odcid).map_err(|e| anyhow!("keys: {e:?}"))?;
    let keys = if from_client { keys.client } else { keys.server };
    let u = keys.unprotect(packet, pn_offset, None).map_err(|e| anyhow!("unprotect: {e}"))?;
    let payload = packet.get(u.payload_range()).context("payload")?;

    let mut summary = Vec::new();
    let mut crypto = Vec::new();
    let mut acked = Vec::new();
    for frame in Frames::new(payload, PacketType::Initial) {
        match frame.map_err(|e| anyhow!("frame: {e}"))? {
            Frame::Padding { len } => summary.push(format!("PADDING({len})")),
            Frame::Crypto { offset, data } => {
                // A single in-order CRYPTO frame in this demo; reassembly is the connection's.
                ensure!(offset.into_inner() == crypto.len() as u64, "out-of-order CRYPTO");
                crypto.extend_from_slice(data);
                summary.push(format!("CRYPTO({})", data.len()));
            }
            Frame::Ack(ack) => {
                acked.extend(ack.ranges());
                summary.push(format!("ACK(largest {})", ack.largest()));
            }
            other => summary.push(format!("{:#x}", other.frame_type())),
        }
    }
    Ok(OpenedInitial { summary: format!("pn {} · {}", u.pn, summary.join(" + ")), crypto, acked })
}

/// The device's real ClientHello (RFC 8446 §4.1.2 with the QUIC extensions of RFC 9001 §8)
/// and its pending key exchange.
fn device_client_hello(
    version: Version,
    client_scid: &[u8],
    rng: &mut SystemRng,
) -> Result<(Vec<u8>, <RustCrypto as CryptoProvider>::KeyExchange)> {
    let device = RustCrypto;
    let client_kx = device
        .start_key_exchange(NamedGroup::X25519, rng)
        .map_err(|e| anyhow!("key exchange: {e:?}"))?;
    let tp = device_transport_parameters(version, client_scid)?;
    let mut tp_buf = [0u8; 512];
    let mut w = Writer::new(&mut tp_buf);
    tp.encode(&mut w).map_err(|_| anyhow!("transport parameters too long"))?;
    let tp_len = w.position();
    let client_random: [u8; 32] = random(rng)?;
    let mut ch_buf = [0u8; 1024];
    let client_share = [KeyShareEntry {
        group: NamedGroup::X25519.codepoint(),
        key_exchange: client_kx.public_key(),
    }];
    let ch_len = ClientHelloParams {
        random: &client_random,
        cipher_suites: &[AeadAlgorithm::Aes128Gcm],
        server_name: Some(b"broker.mote.example"),
        supported_groups: &[NamedGroup::X25519],
        signature_algorithms: &[mote_crypto::SignatureScheme::Ed25519],
        key_shares: &client_share,
        alpn: &[b"h3"],
        server_certificate_types: &[RAW_PUBLIC_KEY],
        client_certificate_types: &[],
        psk_key_exchange_modes: &[PSK_DHE_KE],
        cookie: None,
        early_data: false,
        quic_transport_parameters: &tp_buf[..tp_len],
        psk: None,
    }
    .emit(&mut ch_buf)
    .map_err(|e| anyhow!("ClientHello: {e:?}"))?
    .len;
    Ok((ch_buf[..ch_len].to_vec(), client_kx))
}

fn first_round_trip(version: Version, rows: &mut Vec<Row>) -> Result<()> {
    let mut rng = SystemRng::new();
    let device = RustCrypto;
    let server = Ring;

    // ---- Device: ClientHello in a padded client Initial ----
    let odcid: [u8; CID_LEN] = random(&mut rng)?;
    let client_scid: [u8; CID_LEN] = random(&mut rng)?;
    let (client_hello, client_kx) = device_client_hello(version, &client_scid, &mut rng)?;
    let client_hello = &client_hello[..];
    let ch_len = client_hello.len();
    let mut datagram =
        client_initial(&device, version, &odcid, &client_scid, &[], 0, client_hello)?;
    let sent = datagram.len();

    // ---- Server: decrypt with keys derived from the client's DCID ----
    ensure!(datagram.len() >= MIN_INITIAL_DATAGRAM, "RFC 9000 §14.1: Initial datagram too small");
    let OpenedInitial { summary: frames, crypto, .. } =
        open_initial(&server, true, &odcid, &mut datagram)?;
    let (msg, rest) = msgs::split_message(&crypto).context("incomplete ClientHello")?;
    ensure!(rest.is_empty() && msg.typ == msgs::handshake_type::CLIENT_HELLO, "not a ClientHello");
    let ch = ClientHello::parse(msg.body).map_err(|e| anyhow!("ClientHello: {e:?}"))?;
    let peer_tp = TransportParameters::decode(
        ch.quic_transport_parameters.context("RFC 9001 §8.2: no transport parameters")?,
        Side::Client,
    )
    .map_err(|e| anyhow!("transport parameters: {e}"))?;
    peer_tp.validate_client_cids(&client_scid).map_err(|e| anyhow!("RFC 9000 §7.3: {e}"))?;
    let alpn = ch.alpn.and_then(|a| a.iter().next()).context("no ALPN")?;
    let share = ch
        .key_shares
        .and_then(|k| k.find(NamedGroup::X25519.codepoint()))
        .context("no X25519 key share")?;
    rows.push(Row {
        version,
        direction: "dev→srv",
        packet: "Initial",
        bytes: sent,
        detail: format!(
            "{frames}\nClientHello {ch_len} B: ALPN {}, SNI {}, X25519 share, RPK server auth\n\
             device transport parameters: max_data {}, {} bidi streams, idle {} ms, \
             max_udp_payload {}",
            String::from_utf8_lossy(alpn),
            String::from_utf8_lossy(ch.server_name.unwrap_or_default()),
            peer_tp.initial_max_data.into_inner(),
            peer_tp.initial_max_streams_bidi.into_inner(),
            peer_tp.max_idle_timeout.into_inner(),
            peer_tp.max_udp_payload_size.into_inner(),
        ),
    });

    // ---- Server: ACK + ServerHello in its Initial ----
    let server_kx = server
        .start_key_exchange(NamedGroup::X25519, &mut rng)
        .map_err(|e| anyhow!("key exchange: {e:?}"))?;
    let server_pub = server_kx.public_key().to_vec();
    let server_shared =
        server_kx.complete(share.key_exchange).map_err(|e| anyhow!("ECDHE: {e:?}"))?;
    let server_random: [u8; 32] = random(&mut rng)?;
    let mut sh_buf = [0u8; 256];
    let sh_len = msgs::ServerHelloParams {
        random: &server_random,
        legacy_session_id_echo: ch.legacy_session_id,
        cipher_suite: AeadAlgorithm::Aes128Gcm,
        key_share: Some(KeyShareEntry {
            group: NamedGroup::X25519.codepoint(),
            key_exchange: &server_pub,
        }),
        selected_psk: None,
    }
    .emit(&mut sh_buf)
    .map_err(|e| anyhow!("ServerHello: {e:?}"))?;
    let server_hello = &sh_buf[..sh_len];
    let server_scid: [u8; CID_LEN] = random(&mut rng)?;
    let mut transcript = Transcript::new(&server, mote_crypto::HashAlgorithm::Sha256)
        .map_err(|e| anyhow!("{e:?}"))?;
    transcript.update(client_hello);
    transcript.update(server_hello);
    let server_hs = EarlySecret::new(&server, mote_crypto::HashAlgorithm::Sha256, None)
        .and_then(|e| e.into_handshake_secret(&server, server_shared.as_ref()))
        .map_err(|e| anyhow!("key schedule: {e:?}"))?;
    let th = transcript.current_hash();
    let server_view = server_hs
        .client_handshake_traffic_secret(&server, th.as_ref())
        .map_err(|e| anyhow!("{e:?}"))?;

    let keys = initial_keys(&server, version, &odcid).map_err(|e| anyhow!("{e:?}"))?;
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    let header = LongHeader {
        ty: LongType::Initial,
        version,
        dcid: &client_scid,
        scid: &server_scid,
        token: &[],
    };
    let offsets = header.emit(&mut w, 0, 1).map_err(|_| anyhow!("header"))?;
    let ack = Ack::new(&[(0, 0)], RangeOrder::Descending, VarInt::ZERO, None)
        .context("ACK of packet 0")?;
    Frame::Ack(ack).emit(&mut w).map_err(|_| anyhow!("ACK"))?;
    Frame::Crypto { offset: VarInt::ZERO, data: server_hello }
        .emit(&mut w)
        .map_err(|_| anyhow!("CRYPTO"))?;
    w.reserve(TAG_LEN).map_err(|_| anyhow!("tag"))?;
    let len = w.position();
    offsets.set_length(&mut buf, len).map_err(|_| anyhow!("length"))?;
    buf.truncate(len);
    keys.server.protect(&mut buf, offsets.pn_offset, 0).map_err(|e| anyhow!("{e:?}"))?;
    let server_sent = buf.len();

    // ---- Device: open the server Initial, finish ECDHE, derive handshake secrets ----
    let OpenedInitial { summary: frames, crypto, acked } =
        open_initial(&device, false, &odcid, &mut buf)?;
    ensure!(acked == [(0, 0)], "server did not acknowledge packet 0");
    let (msg, _) = msgs::split_message(&crypto).context("incomplete ServerHello")?;
    let sh = ServerHello::parse(msg.body).map_err(|e| anyhow!("ServerHello: {e:?}"))?;
    ensure!(!sh.is_hello_retry_request(), "unexpected HelloRetryRequest");
    let peer_share = sh.key_share.context("ServerHello without key share")?;
    let client_shared =
        client_kx.complete(peer_share.key_exchange).map_err(|e| anyhow!("ECDHE: {e:?}"))?;
    let mut transcript = Transcript::new(&device, mote_crypto::HashAlgorithm::Sha256)
        .map_err(|e| anyhow!("{e:?}"))?;
    transcript.update(client_hello);
    transcript.update(msg.bytes);
    let client_view = EarlySecret::new(&device, mote_crypto::HashAlgorithm::Sha256, None)
        .and_then(|e| e.into_handshake_secret(&device, client_shared.as_ref()))
        .and_then(|hs| {
            hs.client_handshake_traffic_secret(&device, transcript.current_hash().as_ref())
        })
        .map_err(|e| anyhow!("key schedule: {e:?}"))?;
    let agree = mote_tls::ct_eq(client_view.as_ref(), server_view.as_ref());
    ensure!(agree, "device and server derived different handshake secrets");
    rows.push(Row {
        version,
        direction: "srv→dev",
        packet: "Initial",
        bytes: server_sent,
        detail: format!(
            "{frames}\nServerHello {sh_len} B (TLS_AES_128_GCM_SHA256, X25519)\n\
             device (RustCrypto) and server (ring) derive the same handshake secrets: yes"
        ),
    });
    Ok(())
}

fn retry(version: Version, rows: &mut Vec<Row>) -> Result<()> {
    let mut rng = SystemRng::new();
    let odcid: [u8; CID_LEN] = random(&mut rng)?;
    let client_scid: [u8; CID_LEN] = random(&mut rng)?;
    let server_scid: [u8; CID_LEN] = random(&mut rng)?;
    // An opaque token; encrypted, expiring address-validation tokens come with the
    // address-validation issue.
    let token: [u8; 24] = random(&mut rng)?;
    let mut out = [0u8; 256];
    let retry = Retry { version, dcid: &client_scid, scid: &server_scid, token: &token };
    let unused: [u8; 1] = random(&mut rng)?;
    let len = retry.emit(&Ring, unused[0], &odcid, &mut out).map_err(|e| anyhow!("{e:?}"))?;
    let datagram = &out[..len];

    // Device: parse, verify the integrity tag against its original DCID (RFC 9001 §5.8).
    let parsed = packet::parse(datagram, CID_LEN, false).map_err(|e| anyhow!("{e}"))?;
    let Header::Retry(r) = parsed.header else { bail!("not a Retry") };
    verify_retry(&RustCrypto, version, &odcid, datagram)
        .map_err(|e| anyhow!("Retry integrity: {e}"))?;
    let mut tampered = datagram.to_vec();
    if let Some(b) = tampered.get_mut(len / 2) {
        *b ^= 1;
    }
    let rejects_tampered = verify_retry(&RustCrypto, version, &odcid, &tampered).is_err();
    ensure!(rejects_tampered, "a tampered Retry verified");
    rows.push(Row {
        version,
        direction: "srv→dev",
        packet: "Retry",
        bytes: len,
        detail: format!(
            "token {} B; integrity tag verified with the original DCID; a 1-bit change is rejected",
            r.token.len()
        ),
    });

    // Device: the second Initial goes to the server's new CID and carries the token
    // (RFC 9000 §17.2.5.2); its packet number continues (here 1).
    let (client_hello, _kx) = device_client_hello(version, &client_scid, &mut rng)?;
    let datagram =
        client_initial(&RustCrypto, version, r.scid, &client_scid, r.token, 1, &client_hello)?;
    let mut copy = datagram.clone();
    let frames = open_initial(&Ring, true, r.scid, &mut copy)?.summary;
    let parsed = packet::parse(&datagram, CID_LEN, false).map_err(|e| anyhow!("{e}"))?;
    let Header::Long(h) = parsed.header else { bail!("not a long header") };
    ensure!(h.token == token, "token not echoed");
    rows.push(Row {
        version,
        direction: "dev→srv",
        packet: "Initial (with token)",
        bytes: datagram.len(),
        detail: format!("{frames}; echoes the {} B Retry token", h.token.len()),
    });
    Ok(())
}

fn version_negotiation(rows: &mut Vec<Row>) -> Result<()> {
    let mut rng = SystemRng::new();
    // RFC 9000 §15: a reserved 0x?a?a?a?a version, as a client greasing negotiation sends.
    let greased = Version(0x5a6a_7a8a);
    let dcid: [u8; CID_LEN] = random(&mut rng)?;
    let scid: [u8; CID_LEN] = random(&mut rng)?;
    let mut datagram = vec![0u8; MIN_INITIAL_DATAGRAM];
    let mut w = Writer::new(&mut datagram);
    // The invariant long header (RFC 8999 §5.1) of the unknown version, then filler.
    w.put_u8(0xc0).and_then(|_| w.put_u32(greased.0)).map_err(|_| anyhow!("header"))?;
    w.put_u8(CID_LEN as u8).and_then(|_| w.put_slice(&dcid)).map_err(|_| anyhow!("dcid"))?;
    w.put_u8(CID_LEN as u8).and_then(|_| w.put_slice(&scid)).map_err(|_| anyhow!("scid"))?;
    rows.push(Row {
        version: greased,
        direction: "dev→srv",
        packet: "Initial (greased)",
        bytes: datagram.len(),
        detail: "a reserved version (RFC 9000 §15), padded to 1200 bytes".into(),
    });

    // Server: unknown version → Version Negotiation listing what it speaks (RFC 9000 §6.1).
    let parsed = packet::parse(&datagram, CID_LEN, false).map_err(|e| anyhow!("{e}"))?;
    let Header::UnsupportedVersion(u) = parsed.header else { bail!("expected unknown version") };
    let mut vn = [0u8; 128];
    let mut w = Writer::new(&mut vn);
    let random_bits: [u8; 1] = random(&mut rng)?;
    emit_version_negotiation(&mut w, random_bits[0], u.dcid, u.scid, Version::SUPPORTED)
        .map_err(|_| anyhow!("VN"))?;
    let vn_len = w.position();

    // Device: check the echoed CIDs and pick a version.
    let parsed = packet::parse(&vn[..vn_len], CID_LEN, false).map_err(|e| anyhow!("{e}"))?;
    let Header::VersionNegotiation(v) = parsed.header else { bail!("expected VN") };
    ensure!(v.is_valid_for_client(greased, &dcid, &scid), "VN not valid for this client");
    let chosen = v.choose(Version::SUPPORTED).context("no common version")?;
    let listed: Vec<String> = v.versions().map(|x| format!("{:#x}", x.0)).collect();
    rows.push(Row {
        version: Version::NEGOTIATION,
        direction: "srv→dev",
        packet: "Version Negotiation",
        bytes: vn_len,
        detail: format!("lists {}; CIDs echoed; device picks {:#x}", listed.join(", "), chosen.0),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_round_trips_in_both_versions() {
        let mut rows = Vec::new();
        for version in [Version::V1, Version::V2] {
            first_round_trip(version, &mut rows).unwrap();
            retry(version, &mut rows).unwrap();
        }
        version_negotiation(&mut rows).unwrap();
        assert_eq!(rows.len(), 10);
        // RFC 9000 §14.1: every client Initial datagram is padded to 1200 bytes; the
        // server's Initial (no padding needed) is well under the 3x amplification limit.
        for r in rows.iter().filter(|r| r.direction == "dev→srv") {
            assert_eq!(r.bytes, MIN_INITIAL_DATAGRAM, "{}", r.packet);
        }
        for r in rows.iter().filter(|r| r.direction == "srv→dev") {
            assert!(r.bytes < 3 * MIN_INITIAL_DATAGRAM);
        }
    }
}
