//! Extension blocks (RFC 8446 §4.2) and the list types found inside extensions.
//!
//! An [`Extensions`] value has been validated once — every header complete, no trailing
//! bytes, no duplicate types, no known extension in a message that must not carry it — so
//! iterating it afterwards cannot fail. The list views ([`U16List`], [`ProtocolNames`],
//! [`KeyShares`], [`OfferedPsks`]) are likewise validated when the message is parsed.

#[cfg(feature = "server")]
use crate::codec::Writer;
use crate::codec::{In, Reader};
use crate::Error;

/// Extension type codepoints mote understands (RFC 8446 §4.2, RFC 7301, RFC 7250,
/// RFC 9001 §8.2). Other types are kept in the raw block and skipped.
pub mod extension_type {
    /// server_name (RFC 6066).
    pub const SERVER_NAME: u16 = 0;
    /// supported_groups (RFC 8446 §4.2.7).
    pub const SUPPORTED_GROUPS: u16 = 10;
    /// signature_algorithms (RFC 8446 §4.2.3).
    pub const SIGNATURE_ALGORITHMS: u16 = 13;
    /// application_layer_protocol_negotiation (RFC 7301).
    pub const ALPN: u16 = 16;
    /// client_certificate_type (RFC 7250).
    pub const CLIENT_CERTIFICATE_TYPE: u16 = 19;
    /// server_certificate_type (RFC 7250).
    pub const SERVER_CERTIFICATE_TYPE: u16 = 20;
    /// pre_shared_key (RFC 8446 §4.2.11).
    pub const PRE_SHARED_KEY: u16 = 41;
    /// early_data (RFC 8446 §4.2.10).
    pub const EARLY_DATA: u16 = 42;
    /// supported_versions (RFC 8446 §4.2.1).
    pub const SUPPORTED_VERSIONS: u16 = 43;
    /// cookie (RFC 8446 §4.2.2).
    pub const COOKIE: u16 = 44;
    /// psk_key_exchange_modes (RFC 8446 §4.2.9).
    pub const PSK_KEY_EXCHANGE_MODES: u16 = 45;
    /// key_share (RFC 8446 §4.2.8).
    pub const KEY_SHARE: u16 = 51;
    /// quic_transport_parameters (RFC 9001 §8.2).
    pub const QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;
}

use extension_type as et;

/// RFC 8446 §4.2.9: psk_ke, PSK-only key establishment (never used by mote).
pub const PSK_KE: u8 = 0;
/// RFC 8446 §4.2.9: psk_dhe_ke, PSK with (EC)DHE key establishment.
pub const PSK_DHE_KE: u8 = 1;

/// Certificate types of RFC 7250's client_/server_certificate_type extensions.
pub mod certificate_type {
    /// X.509 certificates.
    pub const X509: u8 = 0;
    /// A raw public key as a DER SubjectPublicKeyInfo.
    pub const RAW_PUBLIC_KEY: u8 = 2;
}

/// Most extensions accepted in one block; more is [`Error::BadLength`]. Bounds the
/// duplicate check, which is quadratic in the count.
pub const MAX_EXTENSIONS: usize = 64;

/// The extension types mote understands, in the order of their bits in the per-message
/// permission masks ([`known_bit`]).
const KNOWN_TYPES: [u16; 13] = [
    et::SERVER_NAME,
    et::SUPPORTED_GROUPS,
    et::SIGNATURE_ALGORITHMS,
    et::ALPN,
    et::CLIENT_CERTIFICATE_TYPE,
    et::SERVER_CERTIFICATE_TYPE,
    et::PRE_SHARED_KEY,
    et::EARLY_DATA,
    et::SUPPORTED_VERSIONS,
    et::COOKIE,
    et::PSK_KEY_EXCHANGE_MODES,
    et::KEY_SHARE,
    et::QUIC_TRANSPORT_PARAMETERS,
];

/// One bit per extension type mote understands, for the per-message permission masks; 0
/// for any other type. A table walk: smaller on a device than a `match`.
pub(crate) const fn known_bit(typ: u16) -> u16 {
    let mut i = 0;
    while i < KNOWN_TYPES.len() {
        if KNOWN_TYPES[i] == typ {
            return 1 << i;
        }
        i += 1;
    }
    0
}

/// Whether mote understands extension type `typ`. A client sends only these, so any other
/// type in a server message answers nothing it offered (unsupported_extension, RFC 8446
/// §4.2) — a check left to the state machine, which knows what it offered.
pub const fn is_known_extension(typ: u16) -> bool {
    known_bit(typ) != 0
}

// RFC 8446 §4.2 table (plus RFC 7250, RFC 7301, RFC 9001 §8.2): which known extensions each
// message may carry. A known extension outside its message is illegal_parameter.
#[cfg(feature = "server")]
pub(crate) const ALLOW_CLIENT_HELLO: u16 = 0x1fff;
pub(crate) const ALLOW_SERVER_HELLO: u16 =
    known_bit(et::PRE_SHARED_KEY) | known_bit(et::SUPPORTED_VERSIONS) | known_bit(et::KEY_SHARE);
pub(crate) const ALLOW_HELLO_RETRY_REQUEST: u16 =
    known_bit(et::SUPPORTED_VERSIONS) | known_bit(et::KEY_SHARE) | known_bit(et::COOKIE);
pub(crate) const ALLOW_ENCRYPTED_EXTENSIONS: u16 = known_bit(et::SERVER_NAME)
    | known_bit(et::SUPPORTED_GROUPS)
    | known_bit(et::ALPN)
    | known_bit(et::CLIENT_CERTIFICATE_TYPE)
    | known_bit(et::SERVER_CERTIFICATE_TYPE)
    | known_bit(et::EARLY_DATA)
    | known_bit(et::QUIC_TRANSPORT_PARAMETERS);
pub(crate) const ALLOW_CERTIFICATE: u16 = 0;
pub(crate) const ALLOW_CERTIFICATE_REQUEST: u16 = known_bit(et::SIGNATURE_ALGORITHMS);
pub(crate) const ALLOW_NEW_SESSION_TICKET: u16 = known_bit(et::EARLY_DATA);

/// A validated extension block: `Extension extensions<0..2^16-1>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extensions<'a> {
    raw: &'a [u8],
}

impl<'a> Extensions<'a> {
    /// Reads a u16-length-prefixed extension block and validates it: complete headers, no
    /// trailing bytes, at most [`MAX_EXTENSIONS`], no duplicate type (RFC 8446 §4.2: "There
    /// MUST NOT be more than one extension of the same type in a given extension block"), and
    /// no known type outside `allowed`.
    pub(crate) fn read(r: &mut Reader<'a>, allowed: u16) -> Result<Self, Error> {
        Self::validate(r.vec(2, 0)?, allowed)
    }

    /// Reads an extension block with a sticky-error reader ([`In`]): the block's errors are
    /// recorded after those of the fields before it; an empty block if it is invalid.
    pub(crate) fn read_in(r: &mut In<'a>, allowed: u16) -> Self {
        let raw = r.vec(2, 0);
        r.take(Self::validate(raw, allowed)).unwrap_or(Self { raw: &[] })
    }

    /// Validates the contents of an extension block (without its length prefix), as
    /// [`Extensions::read`] does.
    fn validate(raw: &'a [u8], allowed: u16) -> Result<Self, Error> {
        let mut rest = raw;
        let mut count = 0;
        while !rest.is_empty() {
            let (typ, _, next) = split_extension(rest).ok_or(Error::Truncated)?;
            count += 1;
            if count > MAX_EXTENSIONS {
                return Err(Error::BadLength);
            }
            let bit = known_bit(typ);
            if bit != 0 && allowed & bit == 0 {
                return Err(Error::IllegalParameter);
            }
            let seen = raw.get(..raw.len() - rest.len()).unwrap_or(&[]);
            if (Extensions { raw: seen }).get(typ).is_some() {
                return Err(Error::DuplicateExtension);
            }
            rest = next;
        }
        Ok(Self { raw })
    }

    /// The block's contents (without its length prefix).
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The extensions in order, as `(type, extension_data)`.
    pub fn iter(&self) -> ExtensionIter<'a> {
        ExtensionIter { rest: self.raw }
    }

    /// The data of the extension of type `typ`, if present.
    pub fn get(&self, typ: u16) -> Option<&'a [u8]> {
        self.iter().find(|(t, _)| *t == typ).map(|(_, d)| d)
    }

    /// The type of the last extension (RFC 8446 §4.2.11: pre_shared_key must be last).
    pub fn last_type(&self) -> Option<u16> {
        self.iter().last().map(|(t, _)| t)
    }
}

/// Iterator over an [`Extensions`] block.
#[derive(Clone, Debug)]
pub struct ExtensionIter<'a> {
    rest: &'a [u8],
}

/// Cuts the first extension off `block`: `(type, extension_data, the bytes after it)`, or
/// `None` if its header or data is incomplete. The one place extension headers are read.
#[inline(always)]
fn split_extension(block: &[u8]) -> Option<(u16, &[u8], &[u8])> {
    let [t0, t1, l0, l1, tail @ ..] = block else { return None };
    let (data, next) = tail.split_at_checked(usize::from(u16::from_be_bytes([*l0, *l1])))?;
    Some((u16::from_be_bytes([*t0, *t1]), data, next))
}

impl<'a> Iterator for ExtensionIter<'a> {
    type Item = (u16, &'a [u8]);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let (typ, data, next) = split_extension(self.rest)?;
        self.rest = next;
        Some((typ, data))
    }
}

/// Parses one element of a list; the list views are built on these.
pub(crate) type ItemFn<'a, T> = fn(&mut Reader<'a>) -> Result<T, Error>;

/// Checks that `raw` is a whole number of well-formed items.
#[cfg(feature = "server")]
fn validate<'a, T>(raw: &'a [u8], item: ItemFn<'a, T>) -> Result<usize, Error> {
    let mut r = Reader::new(raw);
    let mut n = 0;
    while !r.is_empty() {
        item(&mut r)?;
        n += 1;
    }
    Ok(n)
}

/// Iterator over a validated list.
#[derive(Clone, Debug)]
pub struct ListIter<'a, T> {
    r: Reader<'a>,
    item: ItemFn<'a, T>,
}

impl<'a, T> ListIter<'a, T> {
    pub(crate) fn new(raw: &'a [u8], item: ItemFn<'a, T>) -> Self {
        Self { r: Reader::new(raw), item }
    }
}

impl<'a, T> Iterator for ListIter<'a, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.r.is_empty() {
            return None;
        }
        (self.item)(&mut self.r).ok()
    }
}

/// A validated list of 16-bit codepoints (cipher suites, groups, signature schemes,
/// versions), as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U16List<'a>(pub(crate) &'a [u8]);

impl<'a> U16List<'a> {
    /// The codepoints in order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + 'a {
        self.0.as_chunks::<2>().0.iter().map(|c| u16::from_be_bytes(*c))
    }

    /// Whether `v` is in the list.
    pub fn contains(&self, v: u16) -> bool {
        self.iter().any(|x| x == v)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len() / 2
    }

    /// True for an empty list.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn protocol_name<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Error> {
    r.vec(1, 1)
}

/// RFC 7301 §3.1: a validated `ProtocolName protocol_name_list<2..2^16-1>` of
/// `opaque ProtocolName<1..2^8-1>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtocolNames<'a>(&'a [u8]);

impl<'a> ProtocolNames<'a> {
    #[cfg(feature = "server")]
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        let raw = r.vec(2, 2)?;
        validate(raw, protocol_name)?;
        Ok(Self(raw))
    }

    /// The protocol names in the client's order of preference.
    pub fn iter(&self) -> ListIter<'a, &'a [u8]> {
        ListIter::new(self.0, protocol_name)
    }

    /// Whether `name` is in the list.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.iter().any(|n| n == name)
    }
}

/// RFC 8446 §4.2.8: `struct { NamedGroup group; opaque key_exchange<1..2^16-1>; }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyShareEntry<'a> {
    /// The NamedGroup codepoint.
    pub group: u16,
    /// The public key share (32 bytes for X25519, a 65-byte SEC1 point for secp256r1).
    pub key_exchange: &'a [u8],
}

impl<'a> KeyShareEntry<'a> {
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        Ok(Self { group: r.u16()?, key_exchange: r.vec(2, 1)? })
    }

    #[cfg(feature = "server")]
    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        w.u16(self.group)?;
        w.vec(2, self.key_exchange)
    }
}

/// RFC 8446 §4.2.8: a validated `KeyShareEntry client_shares<0..2^16-1>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyShares<'a>(&'a [u8]);

impl<'a> KeyShares<'a> {
    #[cfg(feature = "server")]
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        let raw = r.vec(2, 0)?;
        validate(raw, KeyShareEntry::read)?;
        Ok(Self(raw))
    }

    /// The shares in the client's order of preference.
    pub fn iter(&self) -> ListIter<'a, KeyShareEntry<'a>> {
        ListIter::new(self.0, KeyShareEntry::read)
    }

    /// The first share for `group`.
    pub fn find(&self, group: u16) -> Option<KeyShareEntry<'a>> {
        self.iter().find(|e| e.group == group)
    }
}

/// RFC 8446 §4.2.11: `struct { opaque identity<1..2^16-1>; uint32 obfuscated_ticket_age; }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PskIdentity<'a> {
    /// The ticket or external PSK identity.
    pub identity: &'a [u8],
    /// The ticket age plus ticket_age_add, mod 2^32 (0 for external PSKs).
    pub obfuscated_ticket_age: u32,
}

impl<'a> PskIdentity<'a> {
    fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        Ok(Self { identity: r.vec(2, 1)?, obfuscated_ticket_age: r.u32()? })
    }
}

/// RFC 8446 §4.2.11: `opaque PskBinderEntry<32..255>`.
fn binder<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Error> {
    r.vec(1, 32)
}

/// RFC 8446 §4.2.11: the ClientHello's `OfferedPsks { PskIdentity identities<7..2^16-1>;
/// PskBinderEntry binders<33..2^16-1>; }`, validated, with as many binders as identities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OfferedPsks<'a> {
    identities: &'a [u8],
    binders: &'a [u8],
}

impl<'a> OfferedPsks<'a> {
    #[cfg(feature = "server")]
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        let identities = r.vec(2, 7)?;
        let binders = r.vec(2, 33)?;
        if validate(identities, PskIdentity::read)? != validate(binders, binder)? {
            return Err(Error::IllegalParameter);
        }
        Ok(Self { identities, binders })
    }

    /// The offered identities, in order (the server's selected_identity indexes these).
    pub fn identities(&self) -> ListIter<'a, PskIdentity<'a>> {
        ListIter::new(self.identities, PskIdentity::read)
    }

    /// The binders, in the order of the identities.
    pub fn binders(&self) -> ListIter<'a, &'a [u8]> {
        ListIter::new(self.binders, binder)
    }

    /// Bytes the binders list takes at the end of the ClientHello, length prefix included:
    /// what RFC 8446 §4.2.11.2's Truncate() removes.
    pub fn binders_wire_len(&self) -> usize {
        2 + self.binders.len()
    }
}

/// RFC 6066 §3: the host_name of a `ServerNameList server_name_list<1..2^16-1>`, where each
/// entry is `NameType name_type; opaque name<1..2^16-1>`. Entries of other name types are
/// skipped; two host_names are illegal_parameter ("MUST NOT contain more than one name of
/// the same name_type").
#[cfg(feature = "server")]
pub(crate) fn read_server_name<'a>(r: &mut Reader<'a>) -> Result<Option<&'a [u8]>, Error> {
    let mut list = Reader::new(r.vec(2, 1)?);
    let mut host = None;
    while !list.is_empty() {
        let name_type = list.u8()?;
        let name = list.vec(2, 1)?;
        if name_type == 0 {
            if host.is_some() {
                return Err(Error::IllegalParameter);
            }
            host = Some(name);
        }
    }
    Ok(host)
}

/// Writes one extension: its type and u16-length-prefixed data.
#[cfg(feature = "server")]
pub(crate) fn write_extension(w: &mut Writer<'_>, typ: u16, data: &[u8]) -> Result<(), Error> {
    w.u16(typ)?;
    w.vec(2, data)
}

/// Writes an extension whose data is a single u16-prefixed list of u16 codepoints.
#[cfg(feature = "server")]
pub(crate) fn write_u16_list_extension(
    w: &mut Writer<'_>,
    typ: u16,
    width: usize,
    items: impl Iterator<Item = u16>,
) -> Result<(), Error> {
    w.u16(typ)?;
    let ext = w.start(2)?;
    let list = w.start(width)?;
    for v in items {
        w.u16(v)?;
    }
    w.end(list)?;
    w.end(ext)
}
