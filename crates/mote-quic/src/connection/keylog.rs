//! Key logging (feature `keylog`): the TLS secrets of a connection in the NSS key log format
//! that Wireshark and qvis read (`SSLKEYLOGFILE`), so packet captures of a test run can be
//! decrypted. Debugging only: a build that ships to devices leaves the feature off and has
//! none of this code.
//!
//! The connection queues each traffic secret when mote-tls lends it and the driver drains
//! them with [`super::Connection::poll_keylog`] and writes one line per entry:
//! `LABEL <client random hex> <secret hex>`.

use mote_tls::{KeyLevel, Secrets};

/// Longest secret (SHA-384).
const SECRET_MAX: usize = 48;
/// Entries a connection produces at most: the early secret, two handshake and two 1-RTT
/// traffic secrets (key updates are derived by the reader, not logged).
const ENTRIES: usize = 5;

/// One key log line.
#[derive(Clone, Copy)]
pub struct KeyLogEntry {
    /// The NSS label (`CLIENT_HANDSHAKE_TRAFFIC_SECRET`, …).
    pub label: &'static str,
    /// The ClientHello random the line is keyed by.
    pub client_random: [u8; 32],
    secret: [u8; SECRET_MAX],
    secret_len: u8,
}

impl KeyLogEntry {
    /// The secret.
    pub fn secret(&self) -> &[u8] {
        self.secret.get(..usize::from(self.secret_len)).unwrap_or(&[])
    }
}

impl core::fmt::Debug for KeyLogEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never print secrets by accident.
        f.debug_struct("KeyLogEntry").field("label", &self.label).finish_non_exhaustive()
    }
}

/// The queued entries of one connection.
pub(crate) struct KeyLog {
    client_random: [u8; 32],
    entries: [Option<KeyLogEntry>; ENTRIES],
    next: usize,
}

impl KeyLog {
    pub(crate) const fn new() -> Self {
        Self { client_random: [0; 32], entries: [None; ENTRIES], next: 0 }
    }

    pub(crate) fn set_client_random(&mut self, random: &[u8; 32]) {
        self.client_random = *random;
    }

    fn push(&mut self, label: &'static str, secret: &[u8]) {
        let mut s = [0u8; SECRET_MAX];
        let Some(dst) = s.get_mut(..secret.len()) else { return };
        dst.copy_from_slice(secret);
        let entry = KeyLogEntry {
            label,
            client_random: self.client_random,
            secret: s,
            secret_len: secret.len() as u8,
        };
        if let Some(slot) = self.entries.iter_mut().find(|e| e.is_none()) {
            *slot = Some(entry);
        }
    }

    /// Queues the lines for `s` (RFC 8446 §7.1 secret names, as NSS labels them).
    pub(crate) fn on_secrets(&mut self, s: &Secrets<'_>) {
        let (client, server) = match s.level {
            KeyLevel::ZeroRtt => ("CLIENT_EARLY_TRAFFIC_SECRET", None),
            KeyLevel::Handshake => {
                ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", Some("SERVER_HANDSHAKE_TRAFFIC_SECRET"))
            }
            KeyLevel::OneRtt => ("CLIENT_TRAFFIC_SECRET_0", Some("SERVER_TRAFFIC_SECRET_0")),
        };
        self.push(client, s.client.as_ref());
        if let (Some(label), Some(secret)) = (server, s.server) {
            self.push(label, secret.as_ref());
        }
    }

    pub(crate) fn pop(&mut self) -> Option<KeyLogEntry> {
        let e = self.entries.get_mut(self.next)?.take()?;
        self.next += 1;
        Some(e)
    }
}
