//! RFC 9001 §4.6.2, RFC 9000 §7.4.1: the limits a resuming client's 0-RTT data relied on,
//! and what the server's new transport parameters do to them when it accepts or rejects
//! the early data.

use mote_crypto::AeadAlgorithm;
use mote_tls::{EarlyDataConfig, ReplayCheck, Resumption, Ticket, TicketConfig, TicketKey};

use super::*;
use crate::error::TransportErrorCode;

/// Always fresh: these tests resume each ticket once.
struct NoReplay;
impl mote_tls::AntiReplay for NoReplay {
    fn check_and_insert(&self, _: &[u8; 16], _: u64, _: u64) -> ReplayCheck {
        ReplayCheck::Fresh
    }
}

/// TLS configurations whose server issues tickets and accepts 0-RTT under `context`.
fn tls_configs(context: &'static [u8]) -> Configs {
    let base = configs();
    let client = Box::leak(Box::new(ClientConfig { early_data: true, ..*base.client }));
    let keys: &'static [TicketKey<'static>] = Box::leak(Box::new([TicketKey {
        id: *b"test",
        aead: AeadAlgorithm::Aes128Gcm,
        key: &[7; 16],
    }]));
    let server = Box::leak(Box::new(ServerConfig {
        tickets: Some(TicketConfig { keys, lifetime_s: 3600, count: 1, max_age_skew_ms: 60_000 }),
        early_data: Some(EarlyDataConfig { anti_replay: &NoReplay, context }),
        ..*base.server
    }));
    Configs { client, server }
}

/// A pair whose client uses `configs` (resuming with `resumption`).
fn pair(
    configs: Configs,
    resumption: Option<Resumption<'static>>,
    server: ConnectionConfig,
) -> Pair {
    let mut p = Pair::new(cfg(), server);
    let tls = ClientSession::new(P, configs.client, resumption);
    p.client = Client::client(
        &cfg(),
        P,
        tls,
        storage(4096, 16384),
        Instant::ZERO,
        addr(SERVER_ADDR),
        &mut TestRng(5),
    )
    .unwrap();
    p.configs = configs;
    p
}

/// A first connection's ticket, then a resumed client whose server (0-RTT context
/// `context`, stream limits `limits`: max_data, max_stream_data_bidi_remote,
/// max_stream_data_uni) is not yet there; the remembered parameters are applied.
fn resumed(context: &'static [u8], limits: [u64; 3]) -> Pair {
    let mut p = pair(tls_configs(b"ctx"), None, server_cfg());
    p.handshake();
    assert!(p.run_until(Duration::from_secs(5), |p| p.client.hs.ticket_len > 0));
    let mut t = vec![0u8; 512];
    let n = p.client.take_ticket(&mut t).expect("a ticket");
    t.truncate(n);
    let t: &'static [u8] = Box::leak(t.into_boxed_slice());
    let ticket = Ticket::decode(t).unwrap();
    let mut server = server_cfg();
    let s = &mut server.streams;
    [s.max_data, s.max_stream_data_bidi_remote, s.max_stream_data_uni] = limits;
    let mut configs = tls_configs(context);
    configs.server =
        Box::leak(Box::new(ServerConfig { tickets: p.configs.server.tickets, ..*configs.server }));
    let mut q = pair(configs, Some(Resumption { ticket, age_ms: 10 }), server);
    q.now = p.now;
    assert!(q.client.apply_remembered_params(ticket.server_transport_parameters));
    assert!(q.client.can_send_early_data());
    q
}

/// Rejected 0-RTT, and the server lowered its limits: the client sends within its new
/// ones (the remembered ones would break them: FLOW_CONTROL_ERROR), and the body still
/// arrives whole as the server raises them.
#[test]
fn zero_rtt_rejected_uses_the_servers_new_lower_limits() {
    let mut q = resumed(b"another context", [3000, 2000, 2000]);
    let id = q.client.stream_open(StreamDir::Bidi).unwrap();
    q.client.stream_send(id, b"POST /early ").unwrap();
    q.handshake();
    assert_eq!(q.client.tls.early_data_accepted(), Some(false));
    let body = pattern(20_000);
    let mut want = b"POST /early ".to_vec();
    want.extend_from_slice(&body);
    let (mut sent, mut got) = (0, Vec::new());
    let ok = q.run_until(Duration::from_secs(60), |q| {
        if sent < body.len() && !q.client.is_closed() {
            sent += q.client.stream_send(id, &body[sent..]).unwrap_or(0);
            if sent == body.len() {
                q.client.stream_finish(id).unwrap();
            }
        }
        let Some(s) = q.server.as_mut() else { return false };
        drain(s, id, &mut got)
    });
    let server_close = q.server.as_ref().and_then(|s| s.close_reason());
    assert!(ok, "client {:?}, server {:?}", q.client.close_reason(), server_close);
    assert_eq!(got, want);
}

/// The rejected 0-RTT data does not fit the server's new limits: the client closes
/// (INTERNAL_ERROR) rather than send it again beyond them.
#[test]
fn zero_rtt_rejected_beyond_the_new_limits_closes() {
    let mut q = resumed(b"another context", [3000, 1000, 2000]);
    let id = q.client.stream_open(StreamDir::Bidi).unwrap();
    assert_eq!(q.client.stream_send(id, &pattern(1500)).unwrap(), 1500);
    q.run_until(Duration::from_secs(10), |q| q.client.is_closed());
    match q.client.close_reason() {
        Some(CloseReason::Local(c)) => assert_eq!(c.code, TransportErrorCode::INTERNAL_ERROR.0),
        other => panic!("{other:?}"),
    }
    let s = q.server.as_mut().unwrap();
    assert!(!matches!(s.close_reason(), Some(CloseReason::Local(_))), "{:?}", s.close_reason());
}

/// RFC 9000 §7.4.1: "If 0-RTT data is accepted by the server, the server MUST NOT reduce
/// any limits": a server accepting 0-RTT with a lower MAX_DATA than the ticket remembers
/// is a PROTOCOL_VIOLATION the client closes with (its 0-RTT data may already exceed it).
#[test]
fn zero_rtt_accepted_with_lower_limits_is_a_protocol_violation() {
    let mut q = resumed(b"ctx", [3000, 16384, 16384]);
    let id = q.client.stream_open(StreamDir::Bidi).unwrap();
    q.client.stream_send(id, b"GET /early").unwrap();
    q.run_until(Duration::from_secs(10), |q| q.client.is_closed());
    assert_eq!(q.client.tls.early_data_accepted(), Some(true));
    match q.client.close_reason() {
        Some(CloseReason::Local(c)) => {
            assert_eq!(c.code, TransportErrorCode::PROTOCOL_VIOLATION.0)
        }
        other => panic!("{other:?}"),
    }
    // The same limits as remembered: accepted, and the request arrives.
    let mut q = resumed(b"ctx", [1 << 20, 16384, 16384]);
    let id = q.client.stream_open(StreamDir::Bidi).unwrap();
    q.client.stream_send(id, b"GET /early").unwrap();
    q.client.stream_finish(id).unwrap();
    let mut got = Vec::new();
    let ok = q.run_until(Duration::from_secs(10), |q| {
        q.server.as_mut().is_some_and(|s| drain(s, id, &mut got))
    });
    assert!(ok, "{:?}", q.client.close_reason());
    assert_eq!(got, b"GET /early");
    q.handshake();
    assert_eq!(q.client.tls.early_data_accepted(), Some(true));
}
