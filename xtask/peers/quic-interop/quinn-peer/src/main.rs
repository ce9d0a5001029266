//! quinn (crates.io, with h3/h3-quinn for HTTP/3) as an interop peer for
//! `cargo xtask interop`, with mote's command line:
//!
//! ```text
//! quinn-peer serve --listen ADDR --www DIR --cert PEM --key PEM [--retry]
//!                  [--alpn hq-interop,h3] [--keylog FILE] [--qlog-dir DIR]
//!                  [--advertise-preferred ADDR]
//! quinn-peer get URL... --output DIR --ca PEM [--alpn hq-interop|h3] [--chacha20]
//!                  [--key-update] [--keylog FILE] [--timeout-ms N]
//! ```
//!
//! quinn's examples speak only `hq-29` and h3/h3-quinn ship none, hence this harness.
//! HTTP/0.9 is the interop runner's ("GET /path\r\n", the file, FIN). `get` fetches all URLs
//! in parallel over one connection and exits 0 only when every file arrived; 127 for what
//! quinn cannot do here: `--v2` (quinn is v1 only), `--session-file`/`--0rtt` (rustls keeps
//! sessions in memory only, so no resumption across two runs), `--migrate`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Buf, Bytes};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// Largest HTTP/0.9 request read.
const MAX_REQUEST: usize = 4096;

#[derive(Default)]
struct Opts {
    positional: Vec<String>,
    values: Vec<(String, String)>,
    flags: Vec<String>,
}

impl Opts {
    fn parse(args: &[String]) -> Self {
        const FLAGS: &[&str] = &["--retry", "--0rtt", "--chacha20", "--v2", "--key-update", "--migrate"];
        let mut o = Opts::default();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if FLAGS.contains(&a.as_str()) {
                o.flags.push(a.clone());
            } else if a.starts_with("--") && i + 1 < args.len() {
                o.values.push((a.clone(), args[i + 1].clone()));
                i += 1;
            } else {
                o.positional.push(a.clone());
            }
            i += 1;
        }
        o
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    fn need(&self, name: &str) -> Result<&str> {
        self.get(name).ok_or_else(|| anyhow!("{name} is required"))
    }
    fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprintln!("usage: quinn-peer serve|get ...");
        return ExitCode::from(2);
    };
    let opts = Opts::parse(rest);
    if let Some(keylog) = opts.get("--keylog") {
        // rustls::KeyLogFile reads SSLKEYLOGFILE.
        std::env::set_var("SSLKEYLOGFILE", keylog);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cmd.as_str() {
        "serve" => rt.block_on(serve(&opts)),
        "get" => {
            for (flag, why) in [
                ("--v2", "quinn supports QUIC v1 only"),
                ("--0rtt", "rustls sessions cannot be kept across processes"),
                ("--migrate", "active migration is not driven by this harness"),
            ] {
                if opts.flag(flag) {
                    eprintln!("quinn peer: {why}");
                    return ExitCode::from(127);
                }
            }
            if opts.get("--session-file").is_some() {
                eprintln!("quinn peer: rustls sessions cannot be kept across processes");
                return ExitCode::from(127);
            }
            let timeout = opts.get("--timeout-ms").and_then(|t| t.parse().ok()).unwrap_or(60_000);
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(timeout), get(&opts))
                    .await
                    .unwrap_or_else(|_| Err(anyhow!("timed out")))
            })
        }
        other => Err(anyhow!("unknown command {other:?}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quinn peer: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn provider(chacha20: bool) -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    if chacha20 {
        p.cipher_suites = vec![rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256];
    }
    Arc::new(p)
}

async fn serve(o: &Opts) -> Result<()> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(o.need("--cert")?)?.collect::<Result<_, _>>()?;
    let key = PrivateKeyDer::from_pem_file(o.need("--key")?)?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider(false))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    tls.alpn_protocols = o.get("--alpn").unwrap_or("hq-interop,h3").split(',').map(|a| a.as_bytes().to_vec()).collect();
    tls.max_early_data_size = u32::MAX;
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    // The interop runner's connectionmigration case: offer preferred_address (RFC 9000
    // §9.6). quinn receives on its one socket; the relay listening at ADDR forwards there,
    // so a client that moves arrives from a new address.
    match o.get("--advertise-preferred").map(str::parse::<std::net::SocketAddr>).transpose()? {
        Some(std::net::SocketAddr::V4(a)) => {
            config.preferred_address_v4(Some(a));
        }
        Some(std::net::SocketAddr::V6(a)) => {
            config.preferred_address_v6(Some(a));
        }
        None => {}
    }
    let addr = o.need("--listen")?.parse()?;
    let endpoint = quinn::Endpoint::server(config, addr)?;
    let www = PathBuf::from(o.need("--www")?);
    let retry = o.flag("--retry");
    println!("quinn server listening on {addr}");
    while let Some(incoming) = endpoint.accept().await {
        if retry && !incoming.remote_address_validated() {
            let _ = incoming.retry();
            continue;
        }
        let www = www.clone();
        tokio::spawn(async move {
            if let Err(e) = serve_conn(incoming, &www).await {
                eprintln!("connection: {e:#}");
            }
        });
    }
    Ok(())
}

async fn serve_conn(incoming: quinn::Incoming, www: &Path) -> Result<()> {
    let connecting = incoming.accept()?;
    // Accept 0-RTT when the client offers it.
    let conn = match connecting.into_0rtt() {
        Ok((conn, _)) => conn,
        Err(connecting) => connecting.await?,
    };
    let alpn = conn
        .handshake_data()
        .and_then(|h| h.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|h| h.protocol)
        .unwrap_or_default();
    if alpn == b"h3" {
        let mut h3c: h3::server::Connection<h3_quinn::Connection, Bytes> =
            h3::server::Connection::new(h3_quinn::Connection::new(conn)).await?;
        while let Some(resolver) = h3c.accept().await? {
            let www = www.to_path_buf();
            tokio::spawn(async move {
                let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                let file = safe_path(&www, req.uri().path());
                let body = match file {
                    Some(p) => tokio::fs::read(p).await.ok(),
                    None => None,
                };
                let status = if body.is_some() { 200 } else { 404 };
                let Ok(rsp) = http::Response::builder().status(status).body(()) else { return };
                if stream.send_response(rsp).await.is_err() {
                    return;
                }
                if let Some(body) = body {
                    if stream.send_data(Bytes::from(body)).await.is_err() {
                        return;
                    }
                }
                let _ = stream.finish().await;
            });
        }
        return Ok(());
    }
    loop {
        let (mut send, mut recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(_) => return Ok(()),
        };
        let www = www.to_path_buf();
        tokio::spawn(async move {
            let Ok(req) = recv.read_to_end(MAX_REQUEST).await else { return };
            let line = String::from_utf8_lossy(&req);
            let mut parts = line.split_whitespace();
            let file = match (parts.next(), parts.next()) {
                (Some("GET"), Some(path)) => safe_path(&www, path),
                _ => None,
            };
            match file {
                Some(p) => {
                    if let Ok(data) = tokio::fs::read(p).await {
                        let _ = send.write_all(&data).await;
                        let _ = send.finish();
                    }
                }
                None => {
                    let _ = send.reset(0x10c_u32.into());
                }
            }
        });
    }
}

/// The file under `www` for a request path, if it stays inside `www` and exists.
fn safe_path(www: &Path, path: &str) -> Option<PathBuf> {
    let rel = path.trim_start_matches('/');
    if rel.is_empty() || rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return None;
    }
    let p = www.join(rel);
    p.is_file().then_some(p)
}

async fn get(o: &Opts) -> Result<()> {
    let urls: Vec<http::Uri> = o.positional.iter().map(|u| u.parse()).collect::<Result<_, _>>()?;
    let first = urls.first().context("no URL")?;
    let host = first.host().context("URL without host")?.trim_matches(|c| c == '[' || c == ']').to_string();
    let port = first.port_u16().unwrap_or(443);
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(o.need("--ca")?)? {
        roots.add(cert?)?;
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(provider(o.flag("--chacha20")))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let alpn = o.get("--alpn").unwrap_or("hq-interop").to_string();
    tls.alpn_protocols = vec![alpn.as_bytes().to_vec()];
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    // Initial packets always use AES-128-GCM (RFC 9001 §5.2), even when the handshake
    // offers only ChaCha20-Poly1305.
    let initial = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .context("ring has no TLS_AES_128_GCM_SHA256")?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::with_initial(Arc::new(tls), initial)?;
    let ip: std::net::IpAddr = host.parse().context("this harness needs an IP address in the URL")?;
    let server = std::net::SocketAddr::new(ip, port);
    let bind: std::net::SocketAddr = if ip.is_ipv6() { "[::]:0".parse()? } else { "0.0.0.0:0".parse()? };
    let mut endpoint = quinn::Endpoint::client(bind)?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let name = ServerName::try_from(host.clone())?.to_str().into_owned();
    let conn = endpoint.connect(server, &name)?.await?;
    if o.flag("--key-update") {
        conn.force_key_update();
    }
    let output = PathBuf::from(o.need("--output")?);
    tokio::fs::create_dir_all(&output).await?;
    if alpn == "h3" {
        let (mut driver, send_request) = h3::client::new(h3_quinn::Connection::new(conn.clone())).await?;
        let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        let mut tasks = Vec::new();
        for uri in urls {
            let mut send_request = send_request.clone();
            let output = output.clone();
            tasks.push(tokio::spawn(async move {
                let req = http::Request::get(uri.clone()).body(())?;
                let mut stream = send_request.send_request(req).await?;
                stream.finish().await?;
                let rsp = stream.recv_response().await?;
                if rsp.status() != http::StatusCode::OK {
                    bail!("{uri}: status {}", rsp.status());
                }
                let mut body = Vec::new();
                while let Some(mut chunk) = stream.recv_data().await? {
                    while chunk.has_remaining() {
                        let c = chunk.chunk();
                        body.extend_from_slice(c);
                        let n = c.len();
                        chunk.advance(n);
                    }
                }
                save(&output, &uri, &body).await
            }));
        }
        for t in tasks {
            t.await??;
        }
        drop(send_request);
        drive.abort();
    } else {
        let mut tasks = Vec::new();
        for uri in urls {
            let conn = conn.clone();
            let output = output.clone();
            tasks.push(tokio::spawn(async move {
                let (mut send, mut recv) = conn.open_bi().await?;
                send.write_all(format!("GET {}\r\n", uri.path()).as_bytes()).await?;
                send.finish()?;
                let body = recv.read_to_end(usize::MAX).await?;
                save(&output, &uri, &body).await
            }));
        }
        for t in tasks {
            t.await??;
        }
    }
    conn.close(0u32.into(), b"done");
    endpoint.wait_idle().await;
    Ok(())
}

async fn save(dir: &Path, uri: &http::Uri, body: &[u8]) -> Result<()> {
    let name = uri.path().rsplit('/').next().filter(|n| !n.is_empty()).context("URL without a file name")?;
    tokio::fs::write(dir.join(name), body).await?;
    Ok(())
}
