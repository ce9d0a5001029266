//! The session file of `mote get --session-file`: the newest session ticket (mote-tls'
//! encoding, which carries the server's remembered transport parameters, RFC 9000 §7.4.1),
//! when it was received, the server it came from, and the newest NEW_TOKEN token (RFC 9000
//! §8.1.3: it spares the next connection a Retry) with the QUIC version of the connection
//! that received it (RFC 9369 §5: it is used only to start a connection of that version;
//! the ticket's version is in its remembered transport parameters). JSON, so it can be
//! inspected.

use std::path::Path;

use serde_json::{json, Value};

use crate::Error;

/// What a session file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedSession {
    /// The encoded ticket (`mote_tls::Ticket::encode`); empty when only a token was kept.
    pub ticket: Vec<u8>,
    /// The server's address-validation token from NEW_TOKEN; empty for none.
    pub token: Vec<u8>,
    /// The QUIC version of the connection that received `token` (1 in files written
    /// before it was kept).
    pub token_version: u32,
    /// Unix time (ms) it was received, for the ticket age (RFC 8446 §4.2.11.1).
    pub received_unix_ms: u64,
    /// `host:port` of the server.
    pub server: String,
    /// The ALPN the ticket was issued under.
    pub alpn: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

impl SavedSession {
    /// Reads `path`; `Ok(None)` when it does not exist.
    pub fn load(path: &Path) -> Result<Option<Self>, Error> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::new(format!("{}: {e}", path.display()))),
        };
        let bad = || Error::new(format!("{}: not a mote session file", path.display()));
        let v: Value = serde_json::from_str(&text).map_err(|_| bad())?;
        Ok(Some(Self {
            ticket: v["ticket"].as_str().and_then(unhex).ok_or_else(bad)?,
            token: match v.get("token") {
                None => Vec::new(),
                Some(t) => t.as_str().and_then(unhex).ok_or_else(bad)?,
            },
            token_version: match v.get("token_version") {
                None => 1,
                Some(t) => t.as_u64().and_then(|t| u32::try_from(t).ok()).ok_or_else(bad)?,
            },
            received_unix_ms: v["received_unix_ms"].as_u64().ok_or_else(bad)?,
            server: v["server"].as_str().unwrap_or("").to_string(),
            alpn: v["alpn"].as_str().unwrap_or("").to_string(),
        }))
    }

    /// Writes `path` (replacing it).
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let v = json!({
            "ticket": hex(&self.ticket),
            "token": hex(&self.token),
            "token_version": self.token_version,
            "received_unix_ms": self.received_unix_ms,
            "server": self.server,
            "alpn": self.alpn,
        });
        std::fs::write(path, format!("{v}\n"))
            .map_err(|e| Error::new(format!("{}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let dir = std::env::temp_dir().join(format!("mote-session-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        let _ = std::fs::remove_file(&path);
        assert_eq!(SavedSession::load(&path).unwrap(), None);
        let s = SavedSession {
            ticket: vec![1, 2, 0xff],
            token: vec![9; 40],
            token_version: 0x6b33_43cf,
            received_unix_ms: 42,
            server: "127.0.0.1:4433".into(),
            alpn: "h3".into(),
        };
        s.save(&path).unwrap();
        assert_eq!(SavedSession::load(&path).unwrap(), Some(s));
        std::fs::write(&path, "{\"ticket\":\"0g\"}").unwrap();
        assert!(SavedSession::load(&path).is_err());
        // Files written before tokens were kept still load.
        std::fs::write(&path, "{\"ticket\":\"01\",\"received_unix_ms\":1}").unwrap();
        assert_eq!(SavedSession::load(&path).unwrap().unwrap().token, Vec::<u8>::new());
        // Files written before the token's version was kept: version 1.
        std::fs::write(&path, "{\"ticket\":\"01\",\"received_unix_ms\":1,\"token\":\"07\"}")
            .unwrap();
        assert_eq!(SavedSession::load(&path).unwrap().unwrap().token_version, 1);
        std::fs::write(&path, "{\"ticket\":\"01\",\"received_unix_ms\":1,\"token\":7}").unwrap();
        assert!(SavedSession::load(&path).is_err());
    }
}
