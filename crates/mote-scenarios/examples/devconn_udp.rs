//! mote's device connection type over real UDP against a third-party HTTP/3 server: the
//! firmware's stack (`mote_quic::device::DeviceConnection` under `mote_h3::client::Client`
//! through `mote_h3::device::DeviceTransport`) GETs `/5120` and POSTs 1 KB, with a key
//! update of its own between them, authenticating the server's X.509 chain to a pinned CA.
//!
//! With aioquic (`examples/devconn_aioquic_server.py` writes the CA and serves HTTP/3):
//!
//! ```text
//! python -m venv venv && venv/bin/pip install aioquic==1.7.2 cryptography==50.0.2
//! venv/bin/python crates/mote-scenarios/examples/devconn_aioquic_server.py /tmp/dc 4433 &
//! cargo run -p mote-scenarios --example devconn_udp -- /tmp/dc/ca.der 127.0.0.1:4433
//! ```

use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration as StdDuration, Instant as StdInstant, SystemTime};

use mote_crypto::rustcrypto::RustCrypto;
use mote_h3::client::{Client, Event};
use mote_h3::device::DeviceTransport;
use mote_quic::device::{DeviceConnection, DeviceStorage, PEER_UNI};
use mote_quic::{ConnectionConfig, Instant};
use mote_tls::pki_types::CertificateDer;
use mote_tls::{ClientConfig, ClientSession, ServerAuth, X509Verifier};

type Conn =
    DeviceConnection<RustCrypto, ClientSession<'static, RustCrypto, 4096>, Vec<u8>, Vec<u8>>;

const H3_CONFIG: mote_h3::Config = mote_h3::Config {
    max_field_section_size: 512,
    max_encoded_field_section: 256,
    qpack_blocked_streams: 0,
    grease: Some(1),
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(ca), Some(server)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: devconn_udp CA_DER HOST:PORT");
        return ExitCode::from(2);
    };
    match run(ca, server) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("devconn_udp: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(ca: &str, server: &str) -> Result<(), String> {
    let server: SocketAddr = server.parse().map_err(|e| format!("{server}: {e}"))?;
    let ca = std::fs::read(ca).map_err(|e| format!("{ca}: {e}"))?;
    let ca: &'static CertificateDer<'static> =
        Box::leak(Box::new(CertificateDer::from(Box::leak(ca.into_boxed_slice()) as &[u8])));
    let anchor =
        mote_tls::webpki::anchor_from_trusted_cert(ca).map_err(|e| format!("CA: {e:?}"))?;
    let anchors = Box::leak(Box::new([anchor]));
    let alpn: &'static [&'static [u8]] = &[b"h3"];
    let tls_config: &'static ClientConfig<'static> = Box::leak(Box::new(ClientConfig {
        server_name: Some(b"localhost"),
        alpn,
        server_auth: ServerAuth::X509(X509Verifier { anchors }),
        client_key: None,
        cipher_suites: &[],
        groups: &[],
        early_data: false,
    }));
    let mut tls = ClientSession::new(RustCrypto, tls_config, None);
    let unix = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    tls.set_unix_time(unix);
    let mut config = ConnectionConfig::device();
    config.streams.max_streams_uni = PEER_UNI as u64;
    let storage = DeviceStorage {
        crypto: core::array::from_fn(|_| (vec![0; 4096], vec![0; 4096])),
        control: vec![0; 64],
        request: (vec![0; 1024], vec![0; 2048]),
        peer_uni: core::array::from_fn(|_| vec![0; 2048]),
    };
    let start = StdInstant::now();
    let now = || Instant(start.elapsed().as_micros() as u64);
    let mut rng = mote_crypto::fast::SystemRng::new();
    let mut conn = Box::new(
        Conn::client(&config, RustCrypto, tls, storage, now(), server, &mut rng)
            .map_err(|e| format!("connect: {e:?}"))?,
    );
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let mut h3 = Box::new(Client::<272>::new(H3_CONFIG));
    let (mut buf, mut rx) = (vec![0u8; 1500], vec![0u8; 65536]);
    // Requests: the GET, then the POST; each (status, body bytes, finished).
    let mut results: Vec<(u16, usize, bool)> = Vec::new();
    let mut post_sent = 0usize;
    let mut updated = false;
    let body: Vec<u8> = (0..1024).map(|i| b'a' + (i % 26) as u8).collect();
    while start.elapsed() < StdDuration::from_secs(30) && !conn.is_drained() {
        // Requests, one at a time, once the connection can carry them.
        if !conn.is_closed() && conn.is_handshake_complete() {
            let t = &mut DeviceTransport { conn: &mut *conn };
            if h3.is_open() || h3.open(t).is_ok() {
                let mut scratch = [0u8; 128];
                let busy = results.last().is_some_and(|r| !r.2);
                if results.is_empty() {
                    let get = mote_h3::Request::get(b"localhost", b"/5120");
                    if h3.request(t, &get, true, &mut scratch).is_ok() {
                        results.push((0, 0, false));
                    }
                } else if results.len() == 1 && !busy {
                    let headers: [(&[u8], &[u8]); 1] = [(b"content-length", b"1024")];
                    let post =
                        mote_h3::Request::post(b"localhost", b"/upload").with_headers(&headers);
                    if h3.request(t, &post, false, &mut scratch).is_ok() {
                        results.push((0, 0, false));
                    }
                }
                if results.len() == 2 && post_sent < body.len() {
                    if let Ok(n) = h3.send_data(t, &body[post_sent..], true) {
                        post_sent += n;
                    }
                }
                if let Some(r) = results.last_mut() {
                    let polled = h3.poll(t, |e| match e {
                        Event::Response { status } if status >= 200 => r.0 = status,
                        Event::Data(d) => r.1 += d.len(),
                        Event::Finished => r.2 = true,
                        _ => {}
                    });
                    if let Err(e) = polled {
                        return Err(format!("HTTP/3: {e:?}"));
                    }
                }
            }
            // RFC 9001 §6: the device's own key update after the first response.
            if results.first().is_some_and(|r| r.2) && !updated {
                updated = conn.initiate_key_update();
            }
            if results.len() == 2 && results.iter().all(|r| r.2) {
                conn.close(0x100, b"");
            }
        }
        while let Some(t) = conn.poll_transmit(now(), &mut buf) {
            let sent = socket.send_to(&buf[..t.len], t.destination);
            sent.map_err(|e| e.to_string())?;
        }
        let wait = conn.poll_timeout().map_or(StdDuration::from_millis(100), |t| {
            StdDuration::from_micros(t.0.saturating_sub(now().0)).min(StdDuration::from_millis(100))
        });
        socket
            .set_read_timeout(Some(wait.max(StdDuration::from_millis(1))))
            .map_err(|e| e.to_string())?;
        if let Ok((n, from)) = socket.recv_from(&mut rx) {
            if let Some(d) = rx.get_mut(..n) {
                conn.handle_datagram(now(), from, d);
            }
        }
        if conn.poll_timeout().is_some_and(|t| t <= now()) {
            conn.handle_timeout(now());
        }
    }
    let stats = conn.stats();
    println!(
        "alpn {:?}, results (status, body bytes, finished) {results:?}, key updates {}, close {:?}",
        conn.tls().alpn().map(String::from_utf8_lossy),
        stats.key_updates,
        conn.close_reason()
    );
    let ok = results.len() == 2
        && results[0] == (200, 5120, true)
        && results[1].0 == 200
        && results[1].2
        && stats.key_updates >= 1;
    if ok {
        Ok(())
    } else {
        Err("the transaction did not complete".into())
    }
}
