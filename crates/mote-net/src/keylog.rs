//! SSLKEYLOGFILE output (the NSS key log format Wireshark reads): one line per TLS traffic
//! secret, `LABEL <client random> <secret>` in lowercase hex.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use mote_quic::connection::keylog::KeyLogEntry;

use crate::Error;

/// An open key log, appended to.
#[derive(Debug)]
pub struct KeyLogFile {
    file: File,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key log line of `e` (with its newline).
pub fn line(e: &KeyLogEntry) -> String {
    format!("{} {} {}\n", e.label, hex(&e.client_random), hex(e.secret()))
}

impl KeyLogFile {
    /// Opens (creates, appends to) `path`.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::new(format!("keylog {}: {e}", path.display())))?;
        Ok(Self { file })
    }

    /// Writes the entries `next` yields (a connection's `poll_keylog`).
    pub fn drain(&mut self, mut next: impl FnMut() -> Option<KeyLogEntry>) {
        while let Some(e) = next() {
            // Best effort: a full disk must not stop the transfer.
            let _ = self.file.write_all(line(&e).as_bytes());
        }
    }
}
