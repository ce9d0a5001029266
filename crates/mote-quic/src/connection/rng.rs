//! The connection's own random number generator: HMAC_DRBG (NIST SP 800-90A Rev. 1
//! §10.1.2) with HMAC-SHA-256 from the crypto provider, seeded once from the caller's
//! [`CryptoRng`] when the connection is created.
//!
//! Why a DRBG per connection rather than the caller's generator: the sans-IO calls
//! (`handle_datagram`, `handle_timeout`) take no generator, yet the TLS session needs
//! randomness while they run (a server's random and key share, ticket nonces, a client's
//! second key share after a HelloRetryRequest). Seeding a 64-byte DRBG from the caller's
//! generator keeps the API as the design brief has it and lets an endpoint create
//! connections from one generator. Determinism follows: a seeded caller RNG gives a
//! reproducible connection.

use mote_crypto::{CryptoProvider, CryptoRng, Error, HashAlgorithm, Hmac as _};

/// Bytes of seed drawn from the caller (entropy input plus nonce, SP 800-90A §8.6.7).
pub const SEED_LEN: usize = 48;

/// HMAC_DRBG over HMAC-SHA-256: the key `K` and value `V`, 64 bytes.
pub struct Drbg<P: CryptoProvider> {
    provider: P,
    k: [u8; 32],
    v: [u8; 32],
}

impl<P: CryptoProvider> Drbg<P> {
    /// SP 800-90A §10.1.2.3 instantiate: `K = 0x00…`, `V = 0x01…`, then update with the seed.
    pub fn new(provider: P, seed: &[u8]) -> Result<Self, Error> {
        let mut d = Self { provider, k: [0; 32], v: [1; 32] };
        d.update(seed)?;
        Ok(d)
    }

    /// Draws [`SEED_LEN`] bytes from `rng` and instantiates.
    pub fn from_rng(provider: P, rng: &mut dyn CryptoRng) -> Result<Self, Error> {
        let mut d = Self::unseeded(provider);
        d.seed_from(rng)?;
        Ok(d)
    }

    /// SP 800-90A §10.1.2.3 steps 2–3 only (`K = 0x00…`, `V = 0x01…`): a generator to be
    /// placed where it lives and instantiated there by [`Self::seed_from`], so the device
    /// constructor does not build it on its stack and copy it (issue 8). Not to be drawn
    /// from before that.
    pub(crate) const fn unseeded(provider: P) -> Self {
        Self { provider, k: [0; 32], v: [1; 32] }
    }

    /// SP 800-90A §10.1.2.3 step 4 for an [`Self::unseeded`] generator: updates with
    /// [`SEED_LEN`] bytes drawn from `rng`.
    pub(crate) fn seed_from(&mut self, rng: &mut dyn CryptoRng) -> Result<(), Error> {
        let mut seed = [0u8; SEED_LEN];
        rng.fill(&mut seed)?;
        self.update(&seed)
    }

    fn hmac(&self, parts: &[&[u8]]) -> Result<[u8; 32], Error> {
        let mut h = self.provider.hmac(HashAlgorithm::Sha256, &self.k)?;
        for p in parts {
            h.update(p);
        }
        let d = h.finish();
        let mut out = [0u8; 32];
        let bytes = d.as_ref();
        if bytes.len() != 32 {
            return Err(Error::BadLength);
        }
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// SP 800-90A §10.1.2.2 HMAC_DRBG_Update.
    /// One loop for both rounds (0x00, then 0x01 when there is data): one call site per
    /// HMAC instead of two (issue 8).
    fn update(&mut self, data: &[u8]) -> Result<(), Error> {
        let rounds: &[u8] = if data.is_empty() { &[0x00] } else { &[0x00, 0x01] };
        for r in rounds {
            self.k = self.hmac(&[&self.v, core::slice::from_ref(r), data])?;
            self.v = self.hmac(&[&self.v])?;
        }
        Ok(())
    }
}

impl<P: CryptoProvider> CryptoRng for Drbg<P> {
    /// SP 800-90A §10.1.2.5 HMAC_DRBG_Generate (no additional input; the reseed counter is
    /// not tracked: a connection draws far fewer than 2^48 requests).
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        for chunk in dest.chunks_mut(32) {
            self.v = self.hmac(&[&self.v])?;
            if let Some(src) = self.v.get(..chunk.len()) {
                chunk.copy_from_slice(src);
            }
        }
        self.update(&[])
    }
}

// SP 800-90A §8.3: the internal state (`K`, `V`) is secret. Erased with volatile writes
// (`zeroize`): plain stores to a value about to be dropped are dead stores the compiler
// may remove.
impl<P: CryptoProvider> Drop for Drbg<P> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.k);
        zeroize::Zeroize::zeroize(&mut self.v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mote_crypto::rustcrypto::RustCrypto;

    #[test]
    fn deterministic_and_distinct() {
        let mut a = Drbg::new(RustCrypto, &[7; SEED_LEN]).unwrap();
        let mut b = Drbg::new(RustCrypto, &[7; SEED_LEN]).unwrap();
        let mut c = Drbg::new(RustCrypto, &[8; SEED_LEN]).unwrap();
        let (mut x, mut y, mut z) = ([0u8; 70], [0u8; 70], [0u8; 70]);
        a.fill(&mut x).unwrap();
        b.fill(&mut y).unwrap();
        c.fill(&mut z).unwrap();
        assert_eq!(x, y);
        assert_ne!(x, z);
        let mut x2 = [0u8; 70];
        a.fill(&mut x2).unwrap();
        assert_ne!(x, x2);
    }

    /// The working state is erased when the generator is dropped (volatile writes: an
    /// optimized build keeps them even where the memory is not read again).
    #[test]
    #[allow(unsafe_code)]
    fn state_erased_on_drop() {
        let mut d = core::mem::ManuallyDrop::new(Drbg::new(RustCrypto, &[7; SEED_LEN]).unwrap());
        assert!(d.k != [0; 32] && d.v != [0; 32]);
        // SAFETY: dropped once; only its plain byte arrays are read after.
        unsafe { core::mem::ManuallyDrop::drop(&mut d) };
        assert_eq!((d.k, d.v), ([0; 32], [0; 32]));
    }

    fn hex(s: &str) -> std::vec::Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// NIST CAVP HMAC_DRBG SHA-256 (no prediction resistance, no reseed, no personalization
    /// string, no additional input), COUNT = 0: instantiate with EntropyInput || Nonce,
    /// generate 1024 bits twice, the second output is ReturnedBits.
    #[test]
    fn nist_cavp_sha256_count_0() {
        let seed = hex(concat!(
            "ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488",
            "659ba96c601dc69fc902940805ec0ca8"
        ));
        assert_eq!(seed.len(), SEED_LEN);
        let mut d = Drbg::new(RustCrypto, &seed).unwrap();
        let mut out = [0u8; 128];
        d.fill(&mut out).unwrap();
        d.fill(&mut out).unwrap();
        let expected = hex(concat!(
            "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89",
            "d54fbb978a15b5c443c9ec21036d2460b6f73ebad0dc2aba6e624abf07745bc1",
            "07694bb7547bb0995f70de25d6b29e2d3011bb19d27676c07162c8b5ccde0668",
            "961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8"
        ));
        assert_eq!(out[..], expected[..]);
    }
}
