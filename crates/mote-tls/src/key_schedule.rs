//! The TLS 1.3 key schedule (RFC 8446 §7.1), as three stages that consume each other:
//! [`EarlySecret`] → [`HandshakeSecret`] → [`MasterSecret`]. Moving to the next stage drops
//! the previous secret, and [`Secret`] erases itself on drop, so no stage outlives its use.
//!
//! ```text
//!              0
//!              |
//!              v
//!    PSK ->  HKDF-Extract = Early Secret
//!              +-----> Derive-Secret(., "ext binder" | "res binder", "") = binder_key
//!              +-----> Derive-Secret(., "c e traffic", ClientHello)
//!              +-----> Derive-Secret(., "e exp master", ClientHello)
//!              v
//!        Derive-Secret(., "derived", "")
//!              v
//!    (EC)DHE -> HKDF-Extract = Handshake Secret
//!              +-----> Derive-Secret(., "c hs traffic", ClientHello...ServerHello)
//!              +-----> Derive-Secret(., "s hs traffic", ClientHello...ServerHello)
//!              v
//!        Derive-Secret(., "derived", "")
//!              v
//!    0 -> HKDF-Extract = Master Secret
//!              +-----> Derive-Secret(., "c ap traffic", ClientHello...server Finished)
//!              +-----> Derive-Secret(., "s ap traffic", ClientHello...server Finished)
//!              +-----> Derive-Secret(., "exp master", ClientHello...server Finished)
//!              +-----> Derive-Secret(., "res master", ClientHello...client Finished)
//! ```
//!
//! A SHA-384 schedule needs feature `aes256` (that of TLS_AES_256_GCM_SHA384, the one
//! SHA-384 suite; neither side negotiates it without): the "derived" steps use
//! Transcript-Hash("") as a built-in constant, and without `aes256` there is none for
//! SHA-384 (unsupported).
//!
//! Transcript hashes are passed in as bytes (see [`crate::Transcript`]). Traffic-secret update
//! ("traffic upd") is not here: QUIC updates keys with its own "quic ku" label (RFC 9001 §6).

use mote_crypto::{hkdf, CryptoProvider, Digest, Hash as _, HashAlgorithm, Secret, MAX_HASH_LEN};

use crate::Error;

/// RFC 8446 §7.1: Derive-Secret(Secret, Label, Messages) =
/// HKDF-Expand-Label(Secret, Label, Transcript-Hash(Messages), Hash.length). `label` is without
/// the "tls13 " prefix, which HKDF-Expand-Label adds.
pub fn derive_secret<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    transcript_hash: &[u8],
) -> Result<Secret, Error> {
    let mut out = Secret::zeroed(0);
    derive_secret_into(provider, alg, secret, label, transcript_hash, &mut out)?;
    Ok(out)
}

/// [`derive_secret`] written into `out` (the secret's place in a session): no `Secret` moved
/// through a `Result` on a device (issue 8). `out` is replaced (the old value erased) first.
pub(crate) fn derive_secret_into<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    secret: &[u8],
    label: &[u8],
    transcript_hash: &[u8],
    out: &mut Secret,
) -> Result<(), Error> {
    *out = Secret::zeroed(alg.output_len());
    Ok(hkdf::expand_label(provider, alg, secret, label, transcript_hash, out.as_mut())?)
}

/// Transcript-Hash("") — the context of the "derived" and binder-key derivations.
pub fn empty_hash<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
) -> Result<Digest, Error> {
    Ok(provider.hash(alg)?.finish())
}

/// [`empty_hash`] as a constant (issue 8: no hash run, and no SHA-256 finish inlined, for the
/// "derived" salts and the binder key): FIPS 180-4's SHA-256("") and, with `aes256`,
/// SHA-384(""); pinned against the provider by a test. SHA-384 is never negotiated without
/// `aes256` (unsupported, as the provider's hash would be).
pub(crate) fn empty_transcript_hash(alg: HashAlgorithm) -> Result<&'static [u8], Error> {
    const SHA256_EMPTY: [u8; 32] = [
        0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9,
        0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52,
        0xb8, 0x55,
    ];
    #[cfg(feature = "aes256")]
    const SHA384_EMPTY: [u8; 48] = [
        0x38, 0xb0, 0x60, 0xa7, 0x51, 0xac, 0x96, 0x38, 0x4c, 0xd9, 0x32, 0x7e, 0xb1, 0xb1, 0xe3,
        0x6a, 0x21, 0xfd, 0xb7, 0x11, 0x14, 0xbe, 0x07, 0x43, 0x4c, 0x0c, 0xc7, 0xbf, 0x63, 0xf6,
        0xe1, 0xda, 0x27, 0x4e, 0xde, 0xbf, 0xe7, 0x6f, 0x65, 0xfb, 0xd5, 0x1a, 0xd2, 0xf1, 0x48,
        0x98, 0xb9, 0x5b,
    ];
    match alg {
        HashAlgorithm::Sha256 => Ok(&SHA256_EMPTY),
        #[cfg(feature = "aes256")]
        HashAlgorithm::Sha384 => Ok(&SHA384_EMPTY),
        _ => Err(Error::Crypto(mote_crypto::Error::Unsupported)),
    }
}

/// A string of `Hash.length` zero bytes: the "0" inputs of the key schedule diagram.
fn zeros(alg: HashAlgorithm) -> &'static [u8] {
    static ZEROS: [u8; MAX_HASH_LEN] = [0; MAX_HASH_LEN];
    ZEROS.get(..alg.output_len()).unwrap_or(&ZEROS)
}

/// RFC 8446 §7.1: the step between stages,
/// HKDF-Extract(salt = Derive-Secret(secret, "derived", ""), ikm).
fn next_stage<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    secret: &Secret,
    ikm: &[u8],
) -> Result<Secret, Error> {
    let empty = empty_transcript_hash(alg)?;
    let mut salt = Secret::zeroed(0);
    derive_secret_into(provider, alg, secret.as_ref(), b"derived", empty, &mut salt)?;
    Ok(hkdf::extract(provider, alg, salt.as_ref(), ikm)?)
}

/// Which binder label a PSK uses (RFC 8446 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PskKind {
    /// An external PSK, provisioned out of band: "ext binder".
    External,
    /// A resumption PSK from a NewSessionTicket: "res binder".
    Resumption,
}

impl PskKind {
    /// RFC 8446 §7.1: the label of this kind's binder_key.
    pub(crate) const fn binder_label(self) -> &'static [u8] {
        match self {
            PskKind::External => b"ext binder",
            PskKind::Resumption => b"res binder",
        }
    }
}

/// A key schedule's hash. SHA-384 only with feature `aes256`: without it no suite with
/// SHA-384 is offered or accepted and `empty_transcript_hash` refuses it past the Early
/// Secret, so a schedule is not started with it, and the hash is SHA-256 — a zero-sized
/// constant, so the derivations' lengths fold where they are inlined (session 11: flash).
#[derive(Clone, Copy, Debug)]
struct StageHash(#[cfg(feature = "aes256")] HashAlgorithm);

impl StageHash {
    /// `alg`, or Unsupported for SHA-384 without `aes256`.
    fn new(alg: HashAlgorithm) -> Result<Self, Error> {
        #[cfg(feature = "aes256")]
        return Ok(Self(alg));
        #[cfg(not(feature = "aes256"))]
        match alg {
            HashAlgorithm::Sha256 => Ok(Self()),
            _ => Err(Error::Crypto(mote_crypto::Error::Unsupported)),
        }
    }

    #[inline(always)]
    fn get(self) -> HashAlgorithm {
        #[cfg(feature = "aes256")]
        return self.0;
        #[cfg(not(feature = "aes256"))]
        HashAlgorithm::Sha256
    }
}

/// The Early Secret stage: HKDF-Extract(0, PSK), or HKDF-Extract(0, 0) without a PSK.
#[derive(Debug)]
pub struct EarlySecret {
    alg: StageHash,
    secret: Secret,
}

impl EarlySecret {
    /// The schedule's hash ([`StageHash`]: a constant without `aes256`).
    #[inline(always)]
    fn alg(&self) -> HashAlgorithm {
        self.alg.get()
    }

    /// RFC 8446 §7.1: Early Secret = HKDF-Extract(salt = 0, IKM = PSK), where a handshake
    /// without a PSK uses a string of Hash.length zeros as the PSK.
    pub fn new<P: CryptoProvider + ?Sized>(
        provider: &P,
        alg: HashAlgorithm,
        psk: Option<&[u8]>,
    ) -> Result<Self, Error> {
        let hash = StageHash::new(alg)?;
        let alg = hash.get();
        let ikm = psk.unwrap_or(zeros(alg));
        Ok(Self { alg: hash, secret: hkdf::extract(provider, alg, zeros(alg), ikm)? })
    }

    /// [`EarlySecret::new`] written into `slot` (not returned through a `Result` and moved:
    /// issue 8); the slot is left empty on an error.
    pub(crate) fn new_in<'s, P: CryptoProvider + ?Sized>(
        provider: &P,
        alg: HashAlgorithm,
        psk: Option<&[u8]>,
        slot: &'s mut Option<Self>,
    ) -> Result<&'s Self, Error> {
        *slot = None;
        let hash = StageHash::new(alg)?;
        let alg = hash.get();
        let ikm = psk.unwrap_or(zeros(alg));
        let secret = hkdf::extract(provider, alg, zeros(alg), ikm)?;
        Ok(slot.insert(Self { alg: hash, secret }))
    }

    /// The hash algorithm of this schedule.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.alg()
    }

    /// Derive-Secret(Early Secret, `label`, Messages) into `out` (see
    /// [`derive_secret_into`]); the labels are those of the methods below.
    pub(crate) fn derive_into<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        label: &[u8],
        transcript_hash: &[u8],
        out: &mut Secret,
    ) -> Result<(), Error> {
        derive_secret_into(provider, self.alg(), self.secret.as_ref(), label, transcript_hash, out)
    }

    /// RFC 8446 §7.1: binder_key = Derive-Secret(Early Secret, "ext binder" | "res binder", "").
    /// The PSK binder is a Finished computed with this key (see [`crate::psk_binder`]).
    pub fn binder_key<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        kind: PskKind,
    ) -> Result<Secret, Error> {
        let empty = empty_hash(provider, self.alg())?;
        derive_secret(
            provider,
            self.alg(),
            self.secret.as_ref(),
            kind.binder_label(),
            empty.as_ref(),
        )
    }

    /// RFC 8446 §7.1: client_early_traffic_secret =
    /// Derive-Secret(Early Secret, "c e traffic", ClientHello) — the 0-RTT secret handed to
    /// QUIC. `client_hello_hash` is the transcript hash through the (full) ClientHello.
    pub fn client_early_traffic_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        client_hello_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(provider, self.alg(), self.secret.as_ref(), b"c e traffic", client_hello_hash)
    }

    /// RFC 8446 §7.1: early_exporter_master_secret =
    /// Derive-Secret(Early Secret, "e exp master", ClientHello).
    pub fn early_exporter_master_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        client_hello_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(
            provider,
            self.alg(),
            self.secret.as_ref(),
            b"e exp master",
            client_hello_hash,
        )
    }

    /// RFC 8446 §7.1: Handshake Secret = HKDF-Extract(Derive-Secret(Early Secret, "derived",
    /// ""), (EC)DHE). Consumes (and so erases) the Early Secret. mote always uses an (EC)DHE
    /// share (psk_dhe_ke), so `shared_secret` is required.
    pub fn into_handshake_secret<P: CryptoProvider + ?Sized>(
        self,
        provider: &P,
        shared_secret: &[u8],
    ) -> Result<HandshakeSecret, Error> {
        Ok(HandshakeSecret {
            alg: self.alg,
            secret: next_stage(provider, self.alg(), &self.secret, shared_secret)?,
        })
    }

    /// [`EarlySecret::into_handshake_secret`] written into a session's slot (the Handshake
    /// Secret is not returned through a `Result` and moved: issue 8). On an error the slot
    /// is left empty.
    pub(crate) fn into_handshake_secret_slot<'s, P: CryptoProvider + ?Sized>(
        self,
        provider: &P,
        shared_secret: &[u8],
        slot: &'s mut Option<HandshakeSecret>,
    ) -> Result<&'s HandshakeSecret, Error> {
        let secret = match next_stage(provider, self.alg(), &self.secret, shared_secret) {
            Ok(secret) => secret,
            Err(e) => {
                *slot = None;
                return Err(e);
            }
        };
        Ok(slot.insert(HandshakeSecret { alg: self.alg, secret }))
    }

    #[cfg(test)]
    pub(crate) fn secret(&self) -> &[u8] {
        self.secret.as_ref()
    }
}

/// The Handshake Secret stage.
#[derive(Debug)]
pub struct HandshakeSecret {
    alg: StageHash,
    secret: Secret,
}

impl HandshakeSecret {
    /// The schedule's hash ([`StageHash`]: a constant without `aes256`).
    #[inline(always)]
    fn alg(&self) -> HashAlgorithm {
        self.alg.get()
    }

    /// The hash algorithm of this schedule.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.alg()
    }

    /// Derive-Secret(Handshake Secret, `label`, Messages) into `out` (see
    /// [`derive_secret_into`]); the labels are those of the two methods below.
    pub(crate) fn derive_into<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        label: &[u8],
        transcript_hash: &[u8],
        out: &mut Secret,
    ) -> Result<(), Error> {
        derive_secret_into(provider, self.alg(), self.secret.as_ref(), label, transcript_hash, out)
    }

    /// RFC 8446 §7.1: client_handshake_traffic_secret =
    /// Derive-Secret(Handshake Secret, "c hs traffic", ClientHello...ServerHello).
    pub fn client_handshake_traffic_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        hello_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(provider, self.alg(), self.secret.as_ref(), b"c hs traffic", hello_hash)
    }

    /// RFC 8446 §7.1: server_handshake_traffic_secret =
    /// Derive-Secret(Handshake Secret, "s hs traffic", ClientHello...ServerHello).
    pub fn server_handshake_traffic_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        hello_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(provider, self.alg(), self.secret.as_ref(), b"s hs traffic", hello_hash)
    }

    /// RFC 8446 §7.1: Master Secret = HKDF-Extract(Derive-Secret(Handshake Secret, "derived",
    /// ""), 0). Consumes (and so erases) the Handshake Secret.
    pub fn into_master_secret<P: CryptoProvider + ?Sized>(
        self,
        provider: &P,
    ) -> Result<MasterSecret, Error> {
        Ok(MasterSecret {
            alg: self.alg,
            secret: next_stage(provider, self.alg(), &self.secret, zeros(self.alg()))?,
        })
    }

    /// [`HandshakeSecret::into_master_secret`] from a session's slot, which is erased
    /// (`None`) whether the derivation succeeds or not: the Handshake Secret is not moved
    /// out of the slot first (issue 8).
    pub(crate) fn take_into_master_secret<P: CryptoProvider + ?Sized>(
        slot: &mut Option<Self>,
        provider: &P,
    ) -> Result<MasterSecret, Error> {
        let master = match slot {
            Some(hs) => next_stage(provider, hs.alg(), &hs.secret, zeros(hs.alg()))
                .map(|secret| MasterSecret { alg: hs.alg, secret }),
            None => Err(Error::Alert(crate::Alert::InternalError)),
        };
        *slot = None;
        master
    }

    #[cfg(test)]
    pub(crate) fn secret(&self) -> &[u8] {
        self.secret.as_ref()
    }
}

/// The Master Secret stage.
#[derive(Debug)]
pub struct MasterSecret {
    alg: StageHash,
    secret: Secret,
}

impl MasterSecret {
    /// The schedule's hash ([`StageHash`]: a constant without `aes256`).
    #[inline(always)]
    fn alg(&self) -> HashAlgorithm {
        self.alg.get()
    }

    /// The hash algorithm of this schedule.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.alg()
    }

    /// Derive-Secret(Master Secret, `label`, Messages) into `out` (see
    /// [`derive_secret_into`]); the labels are those of the methods below.
    pub(crate) fn derive_into<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        label: &[u8],
        transcript_hash: &[u8],
        out: &mut Secret,
    ) -> Result<(), Error> {
        derive_secret_into(provider, self.alg(), self.secret.as_ref(), label, transcript_hash, out)
    }

    /// RFC 8446 §7.1: client_application_traffic_secret_0 =
    /// Derive-Secret(Master Secret, "c ap traffic", ClientHello...server Finished).
    pub fn client_application_traffic_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        server_finished_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(
            provider,
            self.alg(),
            self.secret.as_ref(),
            b"c ap traffic",
            server_finished_hash,
        )
    }

    /// RFC 8446 §7.1: server_application_traffic_secret_0 =
    /// Derive-Secret(Master Secret, "s ap traffic", ClientHello...server Finished).
    pub fn server_application_traffic_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        server_finished_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(
            provider,
            self.alg(),
            self.secret.as_ref(),
            b"s ap traffic",
            server_finished_hash,
        )
    }

    /// RFC 8446 §7.1: exporter_master_secret =
    /// Derive-Secret(Master Secret, "exp master", ClientHello...server Finished).
    pub fn exporter_master_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        server_finished_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(
            provider,
            self.alg(),
            self.secret.as_ref(),
            b"exp master",
            server_finished_hash,
        )
    }

    /// RFC 8446 §7.1: resumption_master_secret =
    /// Derive-Secret(Master Secret, "res master", ClientHello...client Finished).
    pub fn resumption_master_secret<P: CryptoProvider + ?Sized>(
        &self,
        provider: &P,
        client_finished_hash: &[u8],
    ) -> Result<Secret, Error> {
        derive_secret(
            provider,
            self.alg(),
            self.secret.as_ref(),
            b"res master",
            client_finished_hash,
        )
    }

    #[cfg(test)]
    pub(crate) fn secret(&self) -> &[u8] {
        self.secret.as_ref()
    }
}

/// RFC 8446 §4.6.1: the PSK of a ticket,
/// HKDF-Expand-Label(resumption_master_secret, "resumption", ticket_nonce, Hash.length).
pub fn resumption_psk<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    resumption_master_secret: &[u8],
    ticket_nonce: &[u8],
) -> Result<Secret, Error> {
    derive_secret(provider, alg, resumption_master_secret, b"resumption", ticket_nonce)
}

/// RFC 8446 §7.5: TLS-Exporter(label, context_value, key_length) =
/// HKDF-Expand-Label(Derive-Secret(Secret, label, ""), "exporter", Hash(context_value),
/// key_length), with `secret` the (early) exporter master secret. Writes `out.len()` bytes.
pub fn export<P: CryptoProvider + ?Sized>(
    provider: &P,
    alg: HashAlgorithm,
    exporter_master_secret: &[u8],
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Result<(), Error> {
    let empty = empty_hash(provider, alg)?;
    let derived = derive_secret(provider, alg, exporter_master_secret, label, empty.as_ref())?;
    let mut h = provider.hash(alg)?;
    h.update(context);
    let context_hash = h.finish();
    Ok(hkdf::expand_label(
        provider,
        alg,
        derived.as_ref(),
        b"exporter",
        context_hash.as_ref(),
        out,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mote_crypto::rustcrypto::RustCrypto;

    /// Without `aes256` no SHA-384 schedule is started (the stages' hash is then the
    /// constant SHA-256), even with a provider that has SHA-384.
    #[test]
    fn sha384_schedules_only_with_aes256() {
        let mut slot = None;
        let early =
            EarlySecret::new(&RustCrypto, HashAlgorithm::Sha384, None).map(|e| e.algorithm());
        let early_in =
            EarlySecret::new_in(&RustCrypto, HashAlgorithm::Sha384, Some(&[1; 48]), &mut slot)
                .map(|e| e.algorithm());
        let expected = if cfg!(feature = "aes256") {
            Ok(HashAlgorithm::Sha384)
        } else {
            Err(Error::Crypto(mote_crypto::Error::Unsupported))
        };
        assert_eq!(early, expected);
        assert_eq!(early_in, expected);
        assert_eq!(slot.is_some(), cfg!(feature = "aes256"));
        let sha256 = EarlySecret::new(&RustCrypto, HashAlgorithm::Sha256, None).unwrap();
        assert_eq!(sha256.algorithm(), HashAlgorithm::Sha256);
    }

    /// The constants are the provider's hash of nothing, for each hash this build negotiates.
    #[test]
    fn empty_transcript_hash_is_the_hash_of_nothing() {
        let sha256 = empty_hash(&RustCrypto, HashAlgorithm::Sha256).unwrap();
        assert_eq!(empty_transcript_hash(HashAlgorithm::Sha256), Ok(sha256.as_ref()));
        let sha384 = empty_hash(&RustCrypto, HashAlgorithm::Sha384).unwrap();
        let expected = if cfg!(feature = "aes256") {
            Ok(sha384.as_ref())
        } else {
            Err(Error::Crypto(mote_crypto::Error::Unsupported))
        };
        assert_eq!(empty_transcript_hash(HashAlgorithm::Sha384), expected);
    }
}
