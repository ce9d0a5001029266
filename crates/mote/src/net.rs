//! `mote serve` and `mote get`: the file server and client on real UDP sockets
//! (`mote-net`), with the options the interop runner's test cases need.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use mote_net::client::{GetOptions, ServerAuthOption};
use mote_net::driver::block_on;
use mote_net::identity;
use mote_net::server::{ServeOptions, Server};

/// `mote serve` options.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (e.g. 0.0.0.0:443 or [::]:4433).
    #[arg(long)]
    pub listen: SocketAddr,
    /// Directory to serve files from.
    #[arg(long)]
    pub www: PathBuf,
    /// Certificate chain (PEM, end-entity first; ECDSA P-256 or Ed25519 keys).
    #[arg(long, requires = "key", conflicts_with = "rpk_key")]
    pub cert: Option<PathBuf>,
    /// The certificate's private key (PKCS#8 or SEC1 PEM).
    #[arg(long, requires = "cert")]
    pub key: Option<PathBuf>,
    /// Raw-public-key mode (RFC 7250): the server's private key (PEM); clients pin its
    /// public key.
    #[arg(long)]
    pub rpk_key: Option<PathBuf>,
    /// Validate client addresses with Retry before accepting.
    #[arg(long)]
    pub retry: bool,
    /// ALPNs to accept, comma-separated, in preference order.
    #[arg(long, default_value = "hq-interop,h3", value_delimiter = ',')]
    pub alpn: Vec<String>,
    /// Write one qlog (JSON-SEQ) per connection into this directory.
    #[arg(long, env = "QLOGDIR")]
    pub qlog_dir: Option<PathBuf>,
    /// Append TLS secrets to this file (SSLKEYLOGFILE format).
    #[arg(long, env = "SSLKEYLOGFILE")]
    pub keylog: Option<PathBuf>,
    /// Idle timeout in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub max_idle_ms: u32,
    /// Prefer QUIC v2 (RFC 9369): move v1 clients that offer v2 to it (RFC 9368 compatible
    /// version negotiation). Clients that start in v2 are served in v2 without it.
    #[arg(long)]
    pub v2: bool,
    /// Also listen on this address and offer it to clients as the server's preferred
    /// address (RFC 9000 §9.6; the interop runner's connectionmigration case).
    #[arg(long)]
    pub preferred_address: Option<SocketAddr>,
    /// Offer this address as the preferred address instead of `--preferred-address`'s own
    /// (clients reach that socket through a NAT or relay listening here).
    #[arg(long, requires = "preferred_address")]
    pub advertise_preferred: Option<SocketAddr>,
    /// Stateless reset key (32 bytes; created if missing), so a restarted server resets
    /// the connections it lost instead of leaving clients to time out. Default: a random
    /// key per process.
    #[arg(long)]
    pub reset_key_file: Option<PathBuf>,
}

/// `mote get` options.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// URLs to fetch (https://host:port/path), all from one server, over one connection.
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Directory to write the files to (named by the path's last segment).
    #[arg(long)]
    pub output: PathBuf,
    /// Trust anchor(s) for the server's X.509 certificate (PEM); the name checked is the
    /// URL's host.
    #[arg(long, conflicts_with = "pin_key")]
    pub ca: Option<PathBuf>,
    /// The server's raw public key (PUBLIC KEY PEM, or its private key file).
    #[arg(long)]
    pub pin_key: Option<PathBuf>,
    /// Resume from this file if it exists (ticket, and NEW_TOKEN token so a Retry server
    /// does not Retry again); save the newest ticket and token to it.
    #[arg(long)]
    pub session_file: Option<PathBuf>,
    /// Send the requests as 0-RTT when resuming.
    #[arg(long = "0rtt")]
    pub zero_rtt: bool,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    #[arg(long)]
    pub chacha20: bool,
    /// Offer QUIC version 2 (RFC 9369): start in v1, and the server upgrades the connection
    /// (RFC 9368 compatible version negotiation).
    #[arg(long)]
    pub v2: bool,
    /// Initiate a key update once the handshake is confirmed.
    #[arg(long)]
    pub key_update: bool,
    /// hq-interop or h3.
    #[arg(long, default_value = "hq-interop")]
    pub alpn: String,
    /// Write the connection's qlog (JSON-SEQ) into this directory.
    #[arg(long, env = "QLOGDIR")]
    pub qlog_dir: Option<PathBuf>,
    /// Append TLS secrets to this file (SSLKEYLOGFILE format).
    #[arg(long, env = "SSLKEYLOGFILE")]
    pub keylog: Option<PathBuf>,
    /// Migrate to a new local port once the handshake is confirmed and the first bytes
    /// arrived (RFC 9000 §9.2).
    #[arg(long)]
    pub migrate: bool,
    /// Give up after this many milliseconds.
    #[arg(long, default_value_t = 60_000)]
    pub timeout_ms: u64,
    /// Use the device connection and the HTTP/3 device client (the firmware's stack, one
    /// request at a time) instead of the host's; needs `--alpn h3`.
    #[arg(long, conflicts_with_all = ["migrate", "v2"])]
    pub device: bool,
}

/// Runs `mote serve` until killed.
pub fn serve(a: &ServeArgs) -> Result<()> {
    let identity = match (&a.cert, &a.key, &a.rpk_key) {
        (Some(cert), Some(key), None) => identity::server_identity(Some(cert), key)?,
        (None, None, Some(key)) => identity::server_identity(None, key)?,
        _ => bail!("give --cert and --key, or --rpk-key"),
    };
    let options = ServeOptions {
        listen: a.listen,
        www: a.www.clone(),
        identity,
        alpn: a.alpn.iter().map(|s| s.trim().as_bytes().to_vec()).collect(),
        retry: a.retry,
        qlog_dir: a.qlog_dir.clone(),
        keylog: a.keylog.clone(),
        max_idle_ms: a.max_idle_ms,
        v2: a.v2,
        preferred_address: a.preferred_address,
        advertise_preferred: a.advertise_preferred,
        reset_key_file: a.reset_key_file.clone(),
    };
    let advertised = a.advertise_preferred;
    block_on(async move {
        let server = Server::bind(options)?;
        eprintln!("mote serve: listening on {}", server.local_addr()?);
        if let Some(p) = server.preferred_addr()? {
            match advertised {
                Some(adv) => eprintln!("mote serve: preferred address {p}, offered as {adv}"),
                None => eprintln!("mote serve: preferred address {p}"),
            }
        }
        server.run().await
    })??;
    Ok(())
}

/// Runs `mote get`; fails unless every file arrived complete.
pub fn get(a: &GetArgs) -> Result<()> {
    let auth = match (&a.ca, &a.pin_key) {
        (Some(ca), None) => ServerAuthOption::Ca(ca.clone()),
        (None, Some(pin)) => ServerAuthOption::PinKey(pin.clone()),
        _ => bail!("give --ca or --pin-key (mote always authenticates the server)"),
    };
    let options = GetOptions {
        urls: a.urls.clone(),
        output: a.output.clone(),
        auth,
        session_file: a.session_file.clone(),
        zero_rtt: a.zero_rtt,
        chacha20: a.chacha20,
        v2: a.v2,
        key_update: a.key_update,
        alpn: a.alpn.as_bytes().to_vec(),
        qlog_dir: a.qlog_dir.clone(),
        keylog: a.keylog.clone(),
        migrate: a.migrate,
        timeout_ms: a.timeout_ms,
    };
    let r = if a.device {
        if a.alpn != "h3" {
            bail!("--device speaks HTTP/3 only: give --alpn h3");
        }
        block_on(mote_net::device_client::get(options))??
    } else {
        block_on(mote_net::client::get(options))??
    };
    eprintln!(
        "mote get: {} files, {} bytes in {} ms (handshake {} ms, QUIC version {:#x}{}{}{}{}{}{}{}{}{})",
        r.files,
        r.bytes,
        r.duration_ms,
        r.handshake_ms,
        r.version,
        if r.resumed { ", resumed" } else { "" },
        match r.early_data {
            Some(true) => ", 0-RTT accepted",
            Some(false) => ", 0-RTT rejected",
            None => "",
        },
        if r.key_updated { ", key updated" } else { "" },
        if r.ticket_saved { ", ticket saved" } else { "" },
        if r.token_saved { ", token saved" } else { "" },
        if r.retried { ", Retry" } else { "" },
        if r.migrated { ", migrated" } else { "" },
        if r.migrations > u32::from(r.migrated) { ", moved to the preferred address" } else { "" },
        if r.ecn_capable { ", ECN validated" } else { "" },
    );
    Ok(())
}
