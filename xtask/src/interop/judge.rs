//! Judging a cell by the interop runner's criteria (`anchors-verification.md` §1.2, §1.3)
//! from the relay's datagram log, the decrypted packets ([`decode`](super::decode)) and the
//! files. A pass needs positive evidence; anything that cannot be read is a failure with
//! the reason.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use super::cases::{Case, Plan};
use super::decode::{self, Conn, Datagram, KeyLog};
use super::Verdict;

const V1: u32 = 0x0000_0001;
const V2: u32 = 0x6b33_43cf;

/// One QUIC packet of a logged datagram.
struct Pkt {
    ty: String,
    version: Option<u32>,
    scid: String,
    token_hash: Option<String>,
    len: usize,
}

/// One logged datagram.
struct Rec {
    t_us: u64,
    arrive_us: Option<u64>,
    to_server: bool,
    size: usize,
    forwarded: bool,
    path: String,
    /// The relay address the client used (the server's address as the client sees it).
    listen: String,
    /// ECN codepoint of the IP header as the sender set it (`not-ect`, `ect0`, `ect1`,
    /// `ce`); empty in logs of relays that did not record it.
    ecn: String,
    packets: Vec<Pkt>,
}

/// Everything a cell left behind.
pub struct Evidence {
    recs: Vec<Rec>,
    conns: Vec<Conn>,
    files: Result<(), String>,
}

impl Evidence {
    /// Reads the relay log, decrypts with the key logs, compares the files.
    pub fn load(
        relay_log: &Path,
        keylogs: &[&Path],
        www: &Path,
        downloads: &Path,
        names: &[String],
    ) -> Result<Evidence> {
        let text = fs::read_to_string(relay_log)
            .with_context(|| format!("reading {}", relay_log.display()))?;
        let mut recs = Vec::new();
        let mut datagrams = Vec::new();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            if v.get("event").is_some() {
                continue;
            }
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            let to_server = v["dir"] == "to_server";
            let packets = v["packets"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| Pkt {
                            ty: p["type"].as_str().unwrap_or_default().to_string(),
                            version: p["version"].as_str().and_then(|x| {
                                u32::from_str_radix(x.trim_start_matches("0x"), 16).ok()
                            }),
                            scid: p["scid"].as_str().unwrap_or_default().to_string(),
                            token_hash: p["token_hash"]
                                .as_str()
                                .filter(|_| p["token_len"].as_u64().unwrap_or(0) > 0)
                                .map(str::to_string),
                            len: p["len"].as_u64().unwrap_or(0) as usize,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let rec = Rec {
                t_us: v["t_us"].as_u64().unwrap_or(0),
                arrive_us: v["arrive_us"].as_u64(),
                to_server,
                size: v["size"].as_u64().unwrap_or(0) as usize,
                forwarded: v["fate"] != "dropped",
                path: s("path"),
                listen: s("listen"),
                ecn: s("ecn"),
                packets,
            };
            if let Some(bytes) = v["hex"].as_str().and_then(decode::unhex) {
                datagrams.push(Datagram {
                    t_us: rec.t_us,
                    to_server,
                    path: rec.path.clone(),
                    listen: rec.listen.clone(),
                    bytes,
                });
            }
            recs.push(rec);
        }
        let mut keylog = KeyLog::default();
        for k in keylogs {
            if let Ok(t) = fs::read_to_string(k) {
                keylog.add(&t);
            }
        }
        let conns = decode::decode(&datagrams, &keylog);
        Ok(Evidence { recs, conns, files: check_files(www, downloads, names) })
    }

    /// Distinct SCIDs of server Initial packets (the runner's handshake count).
    fn handshakes(&self) -> usize {
        self.server_packets("initial").map(|p| p.scid.clone()).collect::<BTreeSet<_>>().len()
    }

    fn server_packets<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Pkt> + 'a {
        self.recs
            .iter()
            .filter(|r| !r.to_server)
            .flat_map(|r| &r.packets)
            .filter(move |p| p.ty == ty)
    }

    fn client_packets<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Pkt> + 'a {
        self.recs
            .iter()
            .filter(|r| r.to_server)
            .flat_map(|r| &r.packets)
            .filter(move |p| p.ty == ty)
    }
}

/// `_check_files`: every file downloaded, same size, same bytes.
fn check_files(www: &Path, downloads: &Path, names: &[String]) -> Result<(), String> {
    let mut bad = Vec::new();
    for name in names {
        let want = fs::read(www.join(name)).map_err(|e| format!("reading served {name}: {e}"))?;
        match fs::read(downloads.join(name)) {
            Err(_) => bad.push(format!("{} missing", short(name))),
            Ok(got) if got.len() != want.len() => {
                bad.push(format!("{} has {} bytes, not {}", short(name), got.len(), want.len()))
            }
            Ok(got) if got != want => bad.push(format!("{} differs", short(name))),
            Ok(_) => {}
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let n = bad.len();
    bad.truncate(3);
    Err(format!("{n} of {} files wrong: {}", names.len(), bad.join(", ")))
}

fn short(name: &str) -> &str {
    name.get(..12).unwrap_or(name)
}

/// Judges a cell.
pub fn judge(case: &Case, e: &Evidence, client_failure: Option<String>) -> (Verdict, Vec<String>) {
    let mut notes = Vec::new();
    let undecryptable: [usize; 2] =
        e.conns.iter().fold([0, 0], |a, c| [a[0] + c.undecryptable[0], a[1] + c.undecryptable[1]]);
    if undecryptable != [0, 0] {
        notes.push(format!(
            "{} client and {} server packets did not decrypt",
            undecryptable[0], undecryptable[1]
        ));
    }
    let verdict = match check(case, e, client_failure, &mut notes) {
        Ok(()) => Verdict::Pass,
        Err(reason) => Verdict::Fail(reason),
    };
    (verdict, notes)
}

fn check(
    case: &Case,
    e: &Evidence,
    client_failure: Option<String>,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    if let Some(f) = client_failure {
        let files = match &e.files {
            Ok(()) => String::new(),
            Err(f) => format!("; {f}"),
        };
        return Err(format!("{f}{files}"));
    }
    e.files.clone()?;
    let expected = match case.plan {
        Plan::Single => 1,
        Plan::Resume | Plan::ZeroRtt => 2,
        Plan::Multiconnect => case.files.len(),
    };
    let hs = e.handshakes();
    if hs != expected {
        return Err(format!(
            "{hs} handshakes (distinct server Initial SCIDs), expected {expected}"
        ));
    }
    let retries = e.server_packets("retry").count();
    if !case.retry && retries > 0 {
        return Err(format!("{retries} Retry packets in a case without Retry"));
    }
    if !case.v2 {
        let versions: BTreeSet<u32> =
            e.server_packets("initial").filter_map(|p| p.version).collect();
        if versions != BTreeSet::from([V1]) {
            return Err(format!("server Initial versions {versions:x?}, expected only v1"));
        }
    }
    let first = e.conns.first().ok_or("no connection could be followed in the relay log")?;
    match case.name {
        "longrtt" if first.client_hellos < 2 => {
            return Err(format!(
                "{} client Initial packets started the ClientHello; expected >= 2 (a retransmission)",
                first.client_hellos
            ));
        }
        "chacha20" => {
            for (i, c) in e.conns.iter().enumerate() {
                if c.offered_suites != [0x1303] {
                    return Err(format!("connection {} offered cipher suites {:04x?}, expected only 1303", i + 1, c.offered_suites));
                }
            }
        }
        "multiplexing" => match first.server_max_streams_bidi {
            Some(n) if n <= 1000 => notes.push(format!("server initial_max_streams_bidi {n}")),
            Some(n) => return Err(format!("server initial_max_streams_bidi {n} > 1000: the client is not made to honour MAX_STREAMS")),
            None => return Err("could not read the server's transport parameters (key log?)".into()),
        },
        "retry" => {
            let retry_tokens: Vec<&String> = e.server_packets("retry").filter_map(|p| p.token_hash.as_ref()).collect();
            if retry_tokens.is_empty() {
                return Err("no Retry packet with a token".into());
            }
            let reused = e.client_packets("initial").any(|p| p.token_hash.as_ref().is_some_and(|t| retry_tokens.contains(&t)));
            if !reused {
                return Err("no client Initial carried the Retry token".into());
            }
            match (first.pn_before_retry, first.pn_with_token) {
                (Some(before), Some(after)) if after <= before => {
                    return Err(format!("the Initial with the token has packet number {after}, not above {before} (reset after Retry)"));
                }
                (_, None) => return Err("could not decrypt the client Initial carrying the token".into()),
                _ => {}
            }
        }
        "resumption" | "zerortt" | "zerortt-1" => {
            let [a, b] = [e.conns.first(), e.conns.get(1)];
            let (Some(a), Some(b)) = (a, b) else { return Err(format!("{} connections followed, expected 2", e.conns.len())) };
            if !a.server_handshake_types.contains(&11) {
                return Err(format!("first handshake: no Certificate seen (server Handshake messages {:?})", a.server_handshake_types));
            }
            if !b.server_handshake_types.contains(&20) {
                return Err(format!("second handshake: server Handshake flight not decrypted (messages {:?})", b.server_handshake_types));
            }
            if b.server_handshake_types.contains(&11) {
                return Err("second handshake carried a Certificate: not resumed".into());
            }
            if case.name != "resumption" {
                if b.client_0rtt_stream_bytes == 0 {
                    return Err(format!(
                        "no 0-RTT STREAM data in the second connection ({} 0-RTT packets seen)",
                        b.client_0rtt_packets
                    ));
                }
                // 0.5 × 250-character names × 40 requests (the runner's bound).
                if b.client_1rtt_stream_bytes > 5000 {
                    return Err(format!("client sent {} STREAM bytes in 1-RTT (> 5000): requests not in 0-RTT", b.client_1rtt_stream_bytes));
                }
                notes.push(format!(
                    "0-RTT STREAM bytes {}, 1-RTT STREAM bytes {}",
                    b.client_0rtt_stream_bytes, b.client_1rtt_stream_bytes
                ));
            }
        }
        "keyupdate" if first.key_phase_1 != [true, true] => {
            return Err(format!(
                "key phase 1 seen from client: {}, from server: {} (1-RTT packets decrypted: {} client, {} server)",
                first.key_phase_1[0], first.key_phase_1[1], first.decrypted_1rtt[0], first.decrypted_1rtt[1]
            ));
        }
        "amplificationlimit" => amplification(e, notes)?,
        "ipv6" => {
            if let Some(r) = e.recs.iter().find(|r| !r.path.starts_with('[')) {
                return Err(format!("an IPv4 path {} in the log", r.path));
            }
        }
        "v2" => {
            let first_initial = e.client_packets("initial").next().and_then(|p| p.version);
            if first_initial != Some(V1) {
                return Err(format!("the client's first Initial is version {first_initial:x?}, expected v1"));
            }
            if !e.server_packets("initial").any(|p| p.version == Some(V2)) {
                return Err("no server Initial in v2".into());
            }
            let hs: Vec<Option<u32>> = e.recs.iter().flat_map(|r| &r.packets).filter(|p| p.ty == "handshake").map(|p| p.version).collect();
            if hs.is_empty() || hs.iter().any(|v| *v != Some(V2)) {
                return Err(format!("Handshake packets not all v2: {:x?}", hs.iter().collect::<BTreeSet<_>>()));
            }
        }
        "rebind-port" | "rebind-addr" => {
            let paths: BTreeSet<&str> = e.recs.iter().filter(|r| !r.to_server && r.forwarded).map(|r| r.path.as_str()).collect();
            if paths.len() < 2 {
                return Err("the server never sent on a second path".into());
            }
            if case.name == "rebind-addr" {
                let ips: BTreeSet<&str> = paths.iter().map(|p| p.rsplit_once(':').map_or(*p, |(ip, _)| ip)).collect();
                if ips.len() < 2 {
                    return Err("the server saw only one client IP".into());
                }
            }
            unchallenged_path(first)?;
            if let Some(c) = first.challenges.iter().find(|c| !first.responses.contains(c)) {
                return Err(format!("PATH_CHALLENGE {c:02x?} got no PATH_RESPONSE"));
            }
            notes.push(format!("{} paths, {} challenges", paths.len(), first.challenges.len()));
        }
        "connectionmigration" => connection_migration(e, first, notes)?,
        "ecn" => ecn(e, first, notes)?,
        _ => {}
    }
    Ok(())
}

/// The runner's rebinding check: the server's first packet on each new path carries
/// PATH_CHALLENGE; the failure names the frame types that packet carried instead.
fn unchallenged_path(first: &decode::Conn) -> Result<(), String> {
    for (i, (path, challenged)) in first.first_on_path.iter().enumerate().skip(1) {
        if !challenged {
            let frames = first.first_on_path_frames.get(i).cloned().unwrap_or_default();
            return Err(format!(
                "the server's first packet to new path {path} carried no PATH_CHALLENGE \
                 (frame types {frames:02x?})"
            ));
        }
    }
    Ok(())
}

/// The runner's ecn check (`TestCaseECN`): each side marked packets ECT(0) or ECT(1) and
/// none CE (the relay applies no CE marking, so a CE mark is the sender's), and each side
/// sent ACK frames carrying ECN counts (RFC 9000 §19.3.2) — the proof that it reads the
/// codepoints it receives.
fn ecn(e: &Evidence, first: &decode::Conn, notes: &mut Vec<String>) -> Result<(), String> {
    let count = |to_server: bool| {
        let mut n = [0usize; 4];
        for r in e.recs.iter().filter(|r| r.to_server == to_server) {
            let i = match r.ecn.as_str() {
                "ect0" => 1,
                "ect1" => 2,
                "ce" => 3,
                _ => 0,
            };
            n[i] += 1;
        }
        n
    };
    for (to_server, who) in [(true, "client"), (false, "server")] {
        let [not_ect, ect0, ect1, ce] = count(to_server);
        notes.push(format!(
            "{who} datagrams: {ect0} ECT(0), {ect1} ECT(1), {ce} CE, {not_ect} not-ECT"
        ));
        if ect0 + ect1 == 0 {
            return Err(format!("the {who} marked no packet ECT(0) or ECT(1)"));
        }
        if ce > 0 {
            return Err(format!("the {who} sent {ce} datagrams marked CE"));
        }
    }
    for (side, who) in [(0, "client"), (1, "server")] {
        if !first.ack_ecn[side] {
            return Err(format!("the {who} sent no ACK frame with ECN counts"));
        }
    }
    Ok(())
}

/// The runner's connectionmigration check (`TestCaseConnectionMigration`): the server
/// offered preferred_address; the rebinding checks on the server's side (the first server
/// packet on each new path carries PATH_CHALLENGE, each challenge is answered); and the
/// client's first packet to the new server address uses a new Destination Connection ID.
fn connection_migration(
    e: &Evidence,
    first: &decode::Conn,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    if !first.server_preferred_address {
        return Err("the server's transport parameters carry no preferred_address".into());
    }
    let targets = &first.client_first_on_path;
    if targets.len() < 2 {
        return Err(format!(
            "the client sent 1-RTT packets to {} server address(es): it never moved to the \
             preferred address",
            targets.len()
        ));
    }
    for pair in targets.windows(2) {
        let [(_, old, _), (addr, new, challenged)] = pair else { continue };
        if old == new {
            return Err(format!("the client's first packet to {addr} reused the DCID {old:02x?}"));
        }
        if !challenged {
            notes.push(format!("the client's first packet to {addr} carried no PATH_CHALLENGE"));
        }
    }
    let paths: BTreeSet<&str> =
        e.recs.iter().filter(|r| !r.to_server && r.forwarded).map(|r| r.path.as_str()).collect();
    if paths.len() < 2 {
        return Err("the server never sent on a second path".into());
    }
    unchallenged_path(first)?;
    if let Some(c) = first.challenges.iter().find(|c| !first.responses.contains(c)) {
        return Err(format!("PATH_CHALLENGE {c:02x?} got no PATH_RESPONSE"));
    }
    notes.push(format!(
        "client moved to {}; server paths {}, server challenges {}",
        targets.last().map_or("", |t| t.0.as_str()),
        paths.len(),
        first.challenges.len()
    ));
    Ok(())
}

/// The runner's amplificationlimit check: until the first client Handshake packet reaches
/// the server, each server datagram must keep the server within 3× the bytes it received
/// (fail at ≥ 4×, note between 3× and 4×); the server sends ≥ 7500 bytes of Handshake; no
/// Version Negotiation.
fn amplification(e: &Evidence, notes: &mut Vec<String>) -> Result<(), String> {
    if e.recs.iter().flat_map(|r| &r.packets).any(|p| p.ty == "vn") {
        return Err("a Version Negotiation packet".into());
    }
    let validated_at = e
        .recs
        .iter()
        .filter(|r| r.to_server && r.forwarded && r.packets.iter().any(|p| p.ty == "handshake"))
        .filter_map(|r| r.arrive_us)
        .min()
        .unwrap_or(u64::MAX);
    let mut worst = 0.0f64;
    for r in e.recs.iter().filter(|r| !r.to_server && r.t_us < validated_at) {
        let received: usize = e
            .recs
            .iter()
            .filter(|c| c.to_server && c.forwarded && c.arrive_us.is_some_and(|a| a <= r.t_us))
            .map(|c| c.size)
            .sum();
        let sent: usize =
            e.recs.iter().filter(|s| !s.to_server && s.t_us <= r.t_us).map(|s| s.size).sum();
        let ratio = sent as f64 / received.max(1) as f64;
        worst = worst.max(ratio);
    }
    if worst >= 4.0 {
        return Err(format!("the server sent {worst:.2}× the bytes it received before validation"));
    }
    if worst > 3.0 {
        notes.push(format!(
            "amplification {worst:.2}× (between 3× and 4×, tolerated like the runner)"
        ));
    } else {
        notes.push(format!("amplification at most {worst:.2}×"));
    }
    let handshake: usize = e.server_packets("handshake").map(|p| p.len).sum();
    if handshake < 7500 {
        return Err(format!("only {handshake} bytes of server Handshake packets (expected >= 7500 with the long chain)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::cases;

    /// A cell directory with one served file, its download, and a relay log of `lines`.
    fn evidence(name: &str, lines: &[serde_json::Value], download: Option<&[u8]>) -> Evidence {
        let dir = std::env::temp_dir().join(format!("mote-judge-{name}-{}", std::process::id()));
        let (www, dl) = (dir.join("www"), dir.join("dl"));
        fs::create_dir_all(&www).unwrap();
        fs::create_dir_all(&dl).unwrap();
        fs::write(www.join("f"), b"0123456789").unwrap();
        if let Some(d) = download {
            fs::write(dl.join("f"), d).unwrap();
        }
        let log = dir.join("relay.jsonl");
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        fs::write(&log, text.join("\n")).unwrap();
        Evidence::load(&log, &[], &www, &dl, &["f".to_string()]).unwrap()
    }

    fn datagram(t: u64, to_server: bool, size: usize, ty: &str, scid: &str) -> serde_json::Value {
        serde_json::json!({
            "t_us": t, "arrive_us": t + 10, "dir": if to_server { "to_server" } else { "to_client" },
            "size": size, "fate": "forwarded", "path": "127.0.0.1:1",
            "packets": [{"type": ty, "version": "0x00000001", "scid": scid, "len": size}],
        })
    }

    fn case(name: &str) -> Case {
        cases::all().into_iter().find(|c| c.name == name).unwrap()
    }

    #[test]
    fn files_and_handshake_count() {
        let lines =
            [datagram(0, true, 1200, "initial", "aa"), datagram(20, false, 1200, "initial", "bb")];
        let ok = evidence("ok", &lines, Some(b"0123456789"));
        assert_eq!(ok.handshakes(), 1);
        assert!(ok.files.is_ok());
        let short = evidence("short", &lines, Some(b"0123"));
        assert!(short.files.as_ref().unwrap_err().contains("4 bytes, not 10"));
        let missing = evidence("missing", &lines, None);
        assert!(missing.files.as_ref().unwrap_err().contains("missing"));
        // Two server SCIDs are two handshakes: a "handshake" cell must fail.
        let two = [lines[0].clone(), lines[1].clone(), datagram(30, false, 1200, "initial", "cc")];
        let e = evidence("two", &two, Some(b"0123456789"));
        assert_eq!(e.handshakes(), 2);
        let (v, _) = judge(&case("handshake"), &e, None);
        assert!(matches!(v, Verdict::Fail(r) if r.contains("2 handshakes")));
        // A client failure is a failure whatever the files say.
        let (v, _) = judge(&case("handshake"), &ok, Some("client run 1 exited 1".into()));
        assert!(matches!(v, Verdict::Fail(r) if r.contains("exited 1")));
    }

    #[test]
    fn amplification_limit() {
        // 1200 bytes received, then 3600 sent: exactly 3×, allowed; 4800 sent: 4×, fails.
        let mut lines = vec![datagram(0, true, 1200, "initial", "aa")];
        for i in 0..3 {
            lines.push(datagram(100 + i, false, 1200, "handshake", "bb"));
        }
        let mut notes = Vec::new();
        let e = evidence("amp3", &lines, Some(b"0123456789"));
        let err = amplification(&e, &mut notes).unwrap_err();
        assert!(err.contains("7500"), "{err}");
        assert!(notes[0].contains("3.00"));
        lines.push(datagram(200, false, 1200, "handshake", "bb"));
        let e = evidence("amp4", &lines, Some(b"0123456789"));
        let err = amplification(&e, &mut Vec::new()).unwrap_err();
        assert!(err.contains("4.00×"), "{err}");
    }

    fn marked(t: u64, to_server: bool, ecn: &str, path: &str) -> serde_json::Value {
        let mut d = datagram(t, to_server, 1200, "1rtt", "");
        d["ecn"] = serde_json::json!(ecn);
        d["path"] = serde_json::json!(path);
        d
    }

    #[test]
    fn ecn_needs_marks_both_ways_no_ce_and_ack_ecn_both_ways() {
        let both = [marked(0, true, "ect0", "p"), marked(1, false, "ect0", "p")];
        let e = evidence("ecn-ok", &both, Some(b"0123456789"));
        let mut conn = decode::Conn::default();
        let err = ecn(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("client sent no ACK frame with ECN counts"), "{err}");
        conn.ack_ecn = [true, true];
        let mut notes = Vec::new();
        ecn(&e, &conn, &mut notes).unwrap();
        assert!(notes[0].contains("1 ECT(0)"), "{notes:?}");
        // A side that never marks, or marks CE itself, fails.
        let unmarked = [marked(0, true, "ect0", "p"), marked(1, false, "not-ect", "p")];
        let e = evidence("ecn-unmarked", &unmarked, Some(b"0123456789"));
        let err = ecn(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("server marked no packet"), "{err}");
        let ce = [marked(0, true, "ce", "p"), marked(1, true, "ect1", "p")];
        let e = evidence("ecn-ce", &ce, Some(b"0123456789"));
        let err = ecn(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("client sent 1 datagrams marked CE"), "{err}");
    }

    #[test]
    fn connection_migration_needs_preferred_address_a_new_dcid_and_challenges() {
        let lines = [marked(0, false, "ect0", "c:1"), marked(9, false, "ect0", "c:2")];
        let e = evidence("cm", &lines, Some(b"0123456789"));
        let mut conn = decode::Conn::default();
        let err = connection_migration(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("no preferred_address"), "{err}");
        conn.server_preferred_address = true;
        conn.client_first_on_path = vec![("s:1".into(), vec![1], false)];
        let err = connection_migration(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("never moved"), "{err}");
        conn.client_first_on_path.push(("s:2".into(), vec![1], true));
        let err = connection_migration(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("reused the DCID"), "{err}");
        conn.client_first_on_path[1].1 = vec![2];
        conn.first_on_path = vec![("c:1".into(), false), ("c:2".into(), false)];
        let err = connection_migration(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("carried no PATH_CHALLENGE"), "{err}");
        conn.first_on_path[1].1 = true;
        conn.challenges = vec![[5; 8]];
        let err = connection_migration(&e, &conn, &mut Vec::new()).unwrap_err();
        assert!(err.contains("got no PATH_RESPONSE"), "{err}");
        conn.responses = vec![[5; 8]];
        connection_migration(&e, &conn, &mut Vec::new()).unwrap();
    }

    /// `CELL=target/interop/<run>/<case>/<pair> CASE=<case> cargo test -p xtask judge_cell
    /// -- --ignored --nocapture` judges a cell's logs again (after a judge change, or to
    /// see a verdict's evidence).
    #[test]
    #[ignore]
    fn judge_cell() {
        let dir = std::path::PathBuf::from(std::env::var("CELL").unwrap());
        let mut names: Vec<String> = fs::read_dir(dir.join("www"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let keylogs = [dir.join("client-keys.log"), dir.join("server-keys.log")];
        let keylogs: Vec<&Path> = keylogs.iter().map(|p| p.as_path()).collect();
        let e = Evidence::load(
            &dir.join("relay.jsonl"),
            &keylogs,
            &dir.join("www"),
            &dir.join("downloads"),
            &names,
        )
        .unwrap();
        let (verdict, notes) = judge(&case(&std::env::var("CASE").unwrap()), &e, None);
        eprintln!("{verdict:?} {notes:?}");
    }
}
