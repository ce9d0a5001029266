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

/// RFC 9369 §5, RFC 9368 §7.2: session tickets belong to the QUIC version of the connection
/// that issued them (after compatible version negotiation, the negotiated one), and are
/// used only to initiate connections of that version.
#[cfg(feature = "v2")]
mod versions {
    use super::*;
    use crate::transport_params::{ticket_version, VersionInformation};

    fn with_versions(
        mut c: ConnectionConfig,
        v: Version,
        compatible: Option<Version>,
    ) -> ConnectionConfig {
        c.version = v;
        c.compatible_version = compatible;
        c
    }

    /// A handshake between `client` and `server` (their configurations), the client resuming
    /// with `resumption`; the 0-RTT keys, if any, are in place when it returns (nothing has
    /// been sent).
    fn start(
        client: ConnectionConfig,
        server: ConnectionConfig,
        resumption: Option<Resumption<'static>>,
    ) -> Pair {
        let configs = tls_configs(b"ctx");
        let mut p = Pair::new(cfg(), server);
        let tls = ClientSession::new(P, configs.client, resumption);
        p.client = Client::client(
            &client,
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

    /// The ticket of a completed connection between `client` and `server`, leaked.
    fn ticket_of(client: ConnectionConfig, server: ConnectionConfig) -> (Ticket<'static>, Version) {
        let mut p = start(client, server, None);
        p.handshake();
        assert!(p.run_until(Duration::from_secs(5), |p| p.client.hs.ticket_len > 0));
        let mut t = vec![0u8; 512];
        let n = p.client.take_ticket(&mut t).expect("a ticket");
        t.truncate(n);
        let t: &'static [u8] = Box::leak(t.into_boxed_slice());
        (Ticket::decode(t).unwrap(), p.client.version())
    }

    fn v1_then_v2() -> ConnectionConfig {
        with_versions(cfg(), Version::V1, Some(Version::V2))
    }

    fn server_v1_then_v2() -> ConnectionConfig {
        with_versions(server_cfg(), Version::V1, Some(Version::V2))
    }

    fn version_of(d: &[u8]) -> u32 {
        u32::from_be_bytes(d[1..5].try_into().unwrap())
    }

    /// "After compatible version negotiation, any resulting session ticket maps to the
    /// negotiated version": a v1 → v2 connection's ticket is a v2 ticket. A client that may
    /// use either version starts the next connection in v2 to use it, and the server, which
    /// sealed it for v2, resumes it with 0-RTT (sent in v2, the original version now).
    #[test]
    fn negotiated_v2_ticket_resumes_in_v2() {
        let (ticket, version) = ticket_of(v1_then_v2(), server_v1_then_v2());
        assert_eq!(version, Version::V2);
        assert_eq!(ticket_version(ticket.server_transport_parameters), Some(Version::V2));
        let mut q =
            start(v1_then_v2(), server_v1_then_v2(), Some(Resumption { ticket, age_ms: 5 }));
        assert_eq!(q.client.original_version(), Version::V2);
        assert!(q.client.apply_remembered_params(ticket.server_transport_parameters));
        let id = q.client.stream_open(StreamDir::Bidi).unwrap();
        q.client.stream_send(id, b"GET /early").unwrap();
        q.handshake();
        assert!(q.client.tls().psk_accepted());
        assert_eq!(q.client.tls().early_data_accepted(), Some(true));
        assert_eq!(q.client.version(), Version::V2);
        assert_eq!(version_of(&q.log[0].3), Version::V2.0);
    }

    /// "Clients MUST NOT use a session ticket ... from a QUIC version 1 connection to
    /// initiate a QUIC version 2 connection, and vice versa": a client that starts in the
    /// other version (and may not use the ticket's) does not offer it — no PSK, no 0-RTT.
    #[test]
    fn ticket_of_another_version_is_not_offered() {
        let v2_only = with_versions(cfg(), Version::V2, None);
        let (v2_ticket, _) = ticket_of(v1_then_v2(), server_v1_then_v2());
        let (v1_ticket, v) = ticket_of(cfg(), server_v1_then_v2());
        assert_eq!(v, Version::V1);
        assert_eq!(ticket_version(v1_ticket.server_transport_parameters), Some(Version::V1));
        for (ticket, client) in [(v2_ticket, cfg()), (v1_ticket, v2_only)] {
            let mut q = start(client, server_v1_then_v2(), Some(Resumption { ticket, age_ms: 5 }));
            assert_eq!(q.client.original_version(), client.version);
            assert!(q.client.tls().resumption().is_none(), "ticket still offered");
            assert!(q.client.hs.keys.zero_rtt().is_none(), "0-RTT offered");
            q.handshake();
            assert!(!q.client.tls().psk_accepted());
        }
    }

    /// A v1 ticket used to start a v1 connection that the server then switches to v2:
    /// the ticket is of the version the client initiated with, so it resumes, with 0-RTT in
    /// v1 (RFC 9369 §4.1: "Servers can accept 0-RTT and then process 0-RTT packets from the
    /// original version").
    #[test]
    fn v1_ticket_resumes_a_connection_switched_to_v2() {
        let (ticket, _) = ticket_of(cfg(), server_v1_then_v2());
        let mut q =
            start(v1_then_v2(), server_v1_then_v2(), Some(Resumption { ticket, age_ms: 5 }));
        assert_eq!(q.client.original_version(), Version::V1);
        assert!(q.client.apply_remembered_params(ticket.server_transport_parameters));
        q.handshake();
        assert_eq!(q.client.version(), Version::V2);
        assert!(q.client.tls().psk_accepted());
        assert_eq!(q.client.tls().early_data_accepted(), Some(true));
    }

    /// "Servers MUST validate the originating version of any session ticket ... and not
    /// accept one issued from a different version. A rejected ticket results in falling
    /// back to a full TLS handshake, without 0-RTT." A client that offers a v1 ticket in a
    /// v2 connection anyway (here: its remembered parameters altered to name v2) gets a
    /// full handshake and its 0-RTT rejected.
    #[test]
    fn server_refuses_a_ticket_of_another_version() {
        let (ticket, _) = ticket_of(cfg(), server_v1_then_v2());
        let mut tp =
            TransportParameters::decode(ticket.server_transport_parameters, Side::Server).unwrap();
        tp.version_information = Some(VersionInformation::new(Version::V2, &[]));
        let mut buf = vec![0u8; 256];
        let mut w = crate::coding::Writer::new(&mut buf);
        tp.encode(&mut w).unwrap();
        let n = w.position();
        buf.truncate(n);
        let forged =
            Ticket { server_transport_parameters: Box::leak(buf.into_boxed_slice()), ..ticket };
        let v2 = with_versions(cfg(), Version::V2, Some(Version::V1));
        let mut q = start(v2, server_v1_then_v2(), Some(Resumption { ticket: forged, age_ms: 5 }));
        assert!(q.client.tls().resumption().is_some(), "the client offers it");
        assert!(q.client.apply_remembered_params(forged.server_transport_parameters));
        q.handshake();
        assert_eq!(q.client.version(), Version::V2);
        assert!(!q.client.tls().psk_accepted());
        assert!(!q.server().tls().psk_accepted());
        assert_eq!(q.client.tls().early_data_accepted(), Some(false));
    }
}
