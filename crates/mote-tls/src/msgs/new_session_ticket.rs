//! NewSessionTicket (RFC 8446 §4.6.1).

use super::extensions::{extension_type as et, Extensions, ALLOW_NEW_SESSION_TICKET};
use crate::codec::In;
use crate::Error;

/// RFC 8446 §4.6.1, parsed:
///
/// ```text
/// struct {
///     uint32 ticket_lifetime;
///     uint32 ticket_age_add;
///     opaque ticket_nonce<0..255>;
///     opaque ticket<1..2^16-1>;
///     Extension extensions<0..2^16-2>;
/// } NewSessionTicket;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewSessionTicket<'a> {
    /// Lifetime in seconds (at most 604800; clients must not keep the ticket longer).
    pub lifetime: u32,
    /// Added (mod 2^32) to the ticket age to obfuscate it.
    pub age_add: u32,
    /// The nonce for [`crate::resumption_psk`].
    pub nonce: &'a [u8],
    /// The opaque ticket, sent back as the PSK identity.
    pub ticket: &'a [u8],
    /// Every extension, in order.
    pub extensions: Extensions<'a>,
    /// early_data's max_early_data_size. RFC 9001 §4.6.1: over QUIC it must be 0xffffffff
    /// when present, else PROTOCOL_VIOLATION — a check for the state machine.
    pub max_early_data_size: Option<u32>,
}

impl<'a> NewSessionTicket<'a> {
    /// Parses a NewSessionTicket body.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        // Every field read, one error check at the end (issue 8: see `In`).
        let mut r = In::new(body);
        let lifetime = r.u32();
        let age_add = r.u32();
        let nonce = r.vec(1, 0);
        let ticket = r.vec(2, 1);
        let extensions = Extensions::read_in(&mut r, ALLOW_NEW_SESSION_TICKET);
        r.end();
        let mut max_early_data_size = None;
        if let Some(data) = extensions.get(et::EARLY_DATA) {
            r.enter(data);
            max_early_data_size = Some(r.u32());
            r.end();
        }
        r.finish()?;
        Ok(Self { lifetime, age_add, nonce, ticket, extensions, max_early_data_size })
    }
}

#[cfg(feature = "server")]
pub use emit::NewSessionTicketParams;

#[cfg(feature = "server")]
mod emit {
    use super::super::extensions::extension_type as et;
    use super::super::{handshake_type, start_message};
    use crate::codec::Writer;
    use crate::Error;

    /// What goes into a NewSessionTicket.
    #[derive(Clone, Copy, Debug)]
    pub struct NewSessionTicketParams<'a> {
        /// Lifetime in seconds (RFC 8446 §4.6.1: at most 604800).
        pub lifetime: u32,
        /// Random value added to the ticket age.
        pub age_add: u32,
        /// Nonce, unique per ticket on this connection.
        pub nonce: &'a [u8],
        /// The ticket.
        pub ticket: &'a [u8],
        /// Allow 0-RTT with this ticket: writes early_data with max_early_data_size
        /// 0xffffffff, the only value QUIC allows (RFC 9001 §4.6.1).
        pub early_data: bool,
    }

    impl NewSessionTicketParams<'_> {
        /// Writes the NewSessionTicket message (header included); returns its length.
        pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
            let mut w = Writer::new(out);
            let msg = start_message(&mut w, handshake_type::NEW_SESSION_TICKET)?;
            w.u32(self.lifetime)?;
            w.u32(self.age_add)?;
            w.vec(1, self.nonce)?;
            w.vec(2, self.ticket)?;
            let exts = w.start(2)?;
            if self.early_data {
                w.u16(et::EARLY_DATA)?;
                w.vec(2, &u32::MAX.to_be_bytes())?;
            }
            w.end(exts)?;
            w.end(msg)?;
            Ok(w.position())
        }
    }
}
