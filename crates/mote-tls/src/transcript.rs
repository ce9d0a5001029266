//! The handshake transcript hash (RFC 8446 §4.4.1).

use mote_crypto::{CryptoProvider, Digest, Hash, HashAlgorithm};

use crate::msgs::handshake_type;
use crate::Error;

/// A running Transcript-Hash over the handshake messages (each including its 4-byte
/// handshake header), as they were sent or received.
///
/// The hash cannot be chosen before the ServerHello names the cipher suite; a client that
/// offers suites with different hashes keeps one transcript per hash until then.
#[derive(Clone)]
pub struct Transcript<H: Hash> {
    hash: H,
}

impl<H: Hash> Transcript<H> {
    /// Starts an empty transcript with `alg`.
    pub fn new<P: CryptoProvider<Hash = H> + ?Sized>(
        provider: &P,
        alg: HashAlgorithm,
    ) -> Result<Self, Error> {
        Ok(Self { hash: provider.hash(alg)? })
    }

    /// [`Self::new`] written into `slot` (replacing any there), with one copy of the hash
    /// state fewer on a device than building it and moving it in.
    #[inline(always)]
    pub(crate) fn start_in<P: CryptoProvider<Hash = H> + ?Sized>(
        provider: &P,
        alg: HashAlgorithm,
        slot: &mut Option<Self>,
    ) -> Result<(), Error> {
        match provider.hash(alg) {
            Ok(hash) => {
                *slot = Some(Self { hash });
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// RFC 8446 §4.4.1: absorbs the `message_hash` synthetic message standing for
    /// ClientHello1, `handshake_type(254) || 00 00 Hash.length || Hash(CH1)`, given
    /// Hash(CH1): the start of the transcript after a HelloRetryRequest.
    pub(crate) fn update_message_hash(&mut self, client_hello1_hash: &[u8]) {
        self.update(&[handshake_type::MESSAGE_HASH, 0, 0, client_hello1_hash.len() as u8]);
        self.update(client_hello1_hash);
    }

    /// RFC 8446 §4.4.1: a transcript that begins with the synthetic `message_hash` message
    /// standing for ClientHello1, `handshake_type(254) || 00 00 Hash.length || Hash(CH1)`.
    /// A server that sent a stateless HelloRetryRequest rebuilds its transcript this way from
    /// the hash it kept in the cookie.
    pub fn from_message_hash<P: CryptoProvider<Hash = H> + ?Sized>(
        provider: &P,
        alg: HashAlgorithm,
        client_hello1_hash: &[u8],
    ) -> Result<Self, Error> {
        if client_hello1_hash.len() > mote_crypto::MAX_HASH_LEN {
            return Err(Error::BadLength);
        }
        let mut t = Self::new(provider, alg)?;
        t.update_message_hash(client_hello1_hash);
        Ok(t)
    }

    /// RFC 8446 §4.4.1: on a HelloRetryRequest, replaces ClientHello1 — which must be all the
    /// transcript holds so far — with the `message_hash` synthetic message. Call it after
    /// hashing ClientHello1 and before hashing the HelloRetryRequest.
    pub fn replace_with_message_hash<P: CryptoProvider<Hash = H> + ?Sized>(
        &mut self,
        provider: &P,
    ) -> Result<(), Error> {
        let ch1 = self.current_hash();
        // Restarted in place (no second transcript built and moved over this one).
        self.hash = provider.hash(self.algorithm())?;
        self.update_message_hash(ch1.as_ref());
        Ok(())
    }

    /// The hash algorithm.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.hash.algorithm()
    }

    /// Absorbs one handshake message (header included) or any part of one.
    pub fn update(&mut self, message: &[u8]) {
        self.hash.update(message);
    }

    /// Transcript-Hash of everything absorbed so far; the transcript keeps running.
    pub fn current_hash(&self) -> Digest {
        self.hash.snapshot()
    }

    /// Transcript-Hash of everything absorbed so far followed by `extra`, without absorbing
    /// `extra`. RFC 8446 §4.2.11.2 uses it for PSK binders: the hash over the preceding
    /// messages and the ClientHello truncated before its binders list
    /// ([`crate::msgs::ClientHello::truncated_len`] /
    /// [`crate::msgs::EmittedClientHello::binders_offset`]).
    pub fn hash_with(&self, extra: &[u8]) -> Digest {
        let mut h = self.hash.clone();
        h.update(extra);
        h.finish()
    }
}
