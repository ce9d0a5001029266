//! SHA-512 (FIPS 180-4 §6.4) for Ed25519 verification on the device (RFC 8032 §5.1.7's
//! challenge hash, the `salty` path).
//!
//! Written here for stack, as `sha256.rs`: sha2's compact SHA-512 keeps all 80 message
//! words (a 952 B frame on Cortex-M4, at the bottom of the handshake's deepest chain under
//! CertificateVerify, issue 8); this one keeps a 16-word ring. Checked against sha2 below.

/// SHA-512's block length.
const BLOCK: usize = 128;

/// FIPS 180-4 §5.3.5: the initial hash value.
const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// FIPS 180-4 §4.2.3: the round constants' low 32 bits. Their high 32 bits are, for the
/// first 64, SHA-256's constants (§4.2.2: both are the first bits of the fractional parts of
/// the cube roots of the first primes), shared with `sha256.rs` (issue 8: 256 B of flash).
const K_LOW: [u32; 80] = [
    0xd728ae22, 0x23ef65cd, 0xec4d3b2f, 0x8189dbbc, 0xf348b538, 0xb605d019, 0xaf194f9b, 0xda6d8118,
    0xa3030242, 0x45706fbe, 0x4ee4b28c, 0xd5ffb4e2, 0xf27b896f, 0x3b1696b1, 0x25c71235, 0xcf692694,
    0x9ef14ad2, 0x384f25e3, 0x8b8cd5b5, 0x77ac9c65, 0x592b0275, 0x6ea6e483, 0xbd41fbd4, 0x831153b5,
    0xee66dfab, 0x2db43210, 0x98fb213f, 0xbeef0ee4, 0x3da88fc2, 0x930aa725, 0xe003826f, 0x0a0e6e70,
    0x46d22ffc, 0x5c26c926, 0x5ac42aed, 0x9d95b3df, 0x8baf63de, 0x3c77b2a8, 0x47edaee6, 0x1482353b,
    0x4cf10364, 0xbc423001, 0xd0f89791, 0x0654be30, 0xd6ef5218, 0x5565a910, 0x5771202a, 0x32bbd1b8,
    0xb8d2d0c8, 0x5141ab53, 0xdf8eeb99, 0xe19b48a8, 0xc5c95a63, 0xe3418acb, 0x7763e373, 0xd6b2b8a3,
    0x5defb2fc, 0x43172f60, 0xa1f0ab72, 0x1a6439ec, 0x23631e28, 0xde82bde9, 0xb2c67915, 0xe372532b,
    0xea26619c, 0x21c0c207, 0xcde0eb1e, 0xee6ed178, 0x72176fba, 0xa2c898a6, 0xbef90dae, 0x131c471b,
    0x23047d84, 0x40c72493, 0x15c9bebc, 0x9c100d4c, 0xcb3e42b6, 0xfc657e2a, 0x3ad6faec, 0x4a475817,
];

/// FIPS 180-4 §4.2.3: the high 32 bits of the last 16 round constants.
const K_HIGH_TAIL: [u32; 16] = [
    0xca273ece, 0xd186b8c7, 0xeada7dd6, 0xf57d4f7f, 0x06f067aa, 0x0a637dc5, 0x113f9804, 0x1b710b35,
    0x28db77f5, 0x32caab7b, 0x3c9ebe0a, 0x431d67c4, 0x4cc5d4be, 0x597f299c, 0x5fcb6fab, 0x6c44198c,
];

/// FIPS 180-4 §4.2.3: round constant t.
fn round_constant(t: usize) -> u64 {
    let high = match crate::sha256::K.get(t) {
        Some(high) => *high,
        None => K_HIGH_TAIL[(t - 64) & 15],
    };
    (u64::from(high) << 32) | u64::from(K_LOW[t % 80])
}

/// FIPS 180-4 §4.1.3 (4.10–4.13): Σ0, Σ1 (three rotations) and σ0, σ1 (two rotations
/// and a shift), as their amounts packed a byte each, low byte first; `SHIFT` on a byte
/// makes its term a shift (the rotation masked to the shift's bits).
const SHIFT: u32 = 0x80;
const BIG_SIGMA0: u32 = 28 | 34 << 8 | 39 << 16;
const BIG_SIGMA1: u32 = 14 | 18 << 8 | 41 << 16;
const SMALL_SIGMA0: u32 = 1 | 8 << 8 | (7 | SHIFT) << 16;
const SMALL_SIGMA1: u32 = 19 | 61 << 8 | (6 | SHIFT) << 16;

/// One of the four functions above, a term a loop turn. Out of line, with one variable
/// rotation: on a 32-bit core each 64-bit rotation by a constant is its own handful of
/// instructions, and SHA-512 only hashes Ed25519's challenge (two blocks a handshake), so
/// its code size, not its speed, counts.
#[inline(never)]
fn sigma(x: u64, mut terms: u32) -> u64 {
    let mut acc = 0;
    while terms != 0 {
        let n = terms & 63;
        let mut term = x.rotate_right(n);
        if terms & SHIFT != 0 {
            // x >> n: the rotation with its top n bits cleared (n < 32 for σ0 and σ1).
            term &= u64::from(u32::MAX >> n) << 32 | u64::from(u32::MAX);
        }
        acc ^= term;
        terms >>= 8;
    }
    acc
}

/// FIPS 180-4 §6.4.2: the compression function over one block, in place; the message
/// schedule in a ring of 16 words, as in `sha256::compress`. The working variables a..h
/// are not held in variables (eight 64-bit words a 32-bit core's registers do not hold):
/// they sit in an array with a free slot below a, the new a is written there and the new e
/// over d, and the array moves up one slot (one `memmove`, not eight register pairs).
fn compress(state: &mut [u64; 8], block: &[u8; BLOCK]) {
    let mut w: [u64; 16] = core::array::from_fn(|i| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&block[8 * i..8 * i + 8]);
        u64::from_be_bytes(b)
    });
    // [new a, a, b, c, d, e, f, g, h].
    let mut v = [0u64; 9];
    v[1..].copy_from_slice(state);
    for t in 0..80 {
        if t >= 16 {
            let s0 = sigma(w[(t + 1) & 15], SMALL_SIGMA0);
            let s1 = sigma(w[(t + 14) & 15], SMALL_SIGMA1);
            w[t & 15] = w[t & 15].wrapping_add(s0).wrapping_add(w[(t + 9) & 15]).wrapping_add(s1);
        }
        // Σ1(e) and Σ0(a) first: a..h are read after the calls, not held across them.
        let big_s1 = sigma(v[5], BIG_SIGMA1);
        let big_s0 = sigma(v[1], BIG_SIGMA0);
        // Ch(e, f, g) and Maj(a, b, c) (4.8, 4.9) in their two-operation forms.
        let ch = v[7] ^ (v[5] & (v[6] ^ v[7]));
        let maj = (v[1] & v[2]) | (v[3] & (v[1] | v[2]));
        let t1 = v[8]
            .wrapping_add(big_s1)
            .wrapping_add(ch)
            .wrapping_add(round_constant(t))
            .wrapping_add(w[t & 15]);
        v[0] = big_s0.wrapping_add(maj).wrapping_add(t1);
        v[4] = v[4].wrapping_add(t1);
        v.copy_within(..8, 1);
    }
    for (s, x) in state.iter_mut().zip(&v[1..]) {
        *s = s.wrapping_add(*x);
    }
}

/// A running SHA-512.
pub(crate) struct Sha512 {
    state: [u64; 8],
    buf: [u8; BLOCK],
    /// Bytes in `buf` (always < `BLOCK` between calls).
    buf_len: usize,
    /// Bytes absorbed in full blocks (a device never hashes 2^64 bytes: the 128-bit length
    /// field's high half is zero).
    absorbed: u64,
}

impl Sha512 {
    /// An empty hash.
    pub(crate) const fn new() -> Self {
        Self { state: IV, buf: [0; BLOCK], buf_len: 0, absorbed: 0 }
    }

    /// Absorbs `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        let state = &mut self.state;
        crate::sha256::absorb(&mut self.buf, &mut self.buf_len, &mut self.absorbed, data, |b| {
            compress(state, b)
        });
    }

    /// FIPS 180-4 §5.1.2 padding, then the digest written into `out`; the hash is spent.
    pub(crate) fn finish(&mut self, out: &mut [u8; 64]) {
        let total = self.absorbed.wrapping_add(self.buf_len as u64);
        let len = self.buf_len.min(BLOCK - 1);
        self.buf[len] = 0x80;
        for b in self.buf.iter_mut().skip(len + 1) {
            *b = 0;
        }
        if len >= BLOCK - 16 {
            compress(&mut self.state, &self.buf);
            self.buf.fill(0);
        }
        self.buf[BLOCK - 8..].copy_from_slice(&total.wrapping_mul(8).to_be_bytes());
        compress(&mut self.state, &self.buf);
        for (o, word) in out.chunks_exact_mut(8).zip(&self.state) {
            o.copy_from_slice(&word.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

    /// FIPS 180-4 §4.2.3's table as printed.
    const K: [u64; 80] = [
        0x428a2f98d728ae22,
        0x7137449123ef65cd,
        0xb5c0fbcfec4d3b2f,
        0xe9b5dba58189dbbc,
        0x3956c25bf348b538,
        0x59f111f1b605d019,
        0x923f82a4af194f9b,
        0xab1c5ed5da6d8118,
        0xd807aa98a3030242,
        0x12835b0145706fbe,
        0x243185be4ee4b28c,
        0x550c7dc3d5ffb4e2,
        0x72be5d74f27b896f,
        0x80deb1fe3b1696b1,
        0x9bdc06a725c71235,
        0xc19bf174cf692694,
        0xe49b69c19ef14ad2,
        0xefbe4786384f25e3,
        0x0fc19dc68b8cd5b5,
        0x240ca1cc77ac9c65,
        0x2de92c6f592b0275,
        0x4a7484aa6ea6e483,
        0x5cb0a9dcbd41fbd4,
        0x76f988da831153b5,
        0x983e5152ee66dfab,
        0xa831c66d2db43210,
        0xb00327c898fb213f,
        0xbf597fc7beef0ee4,
        0xc6e00bf33da88fc2,
        0xd5a79147930aa725,
        0x06ca6351e003826f,
        0x142929670a0e6e70,
        0x27b70a8546d22ffc,
        0x2e1b21385c26c926,
        0x4d2c6dfc5ac42aed,
        0x53380d139d95b3df,
        0x650a73548baf63de,
        0x766a0abb3c77b2a8,
        0x81c2c92e47edaee6,
        0x92722c851482353b,
        0xa2bfe8a14cf10364,
        0xa81a664bbc423001,
        0xc24b8b70d0f89791,
        0xc76c51a30654be30,
        0xd192e819d6ef5218,
        0xd69906245565a910,
        0xf40e35855771202a,
        0x106aa07032bbd1b8,
        0x19a4c116b8d2d0c8,
        0x1e376c085141ab53,
        0x2748774cdf8eeb99,
        0x34b0bcb5e19b48a8,
        0x391c0cb3c5c95a63,
        0x4ed8aa4ae3418acb,
        0x5b9cca4f7763e373,
        0x682e6ff3d6b2b8a3,
        0x748f82ee5defb2fc,
        0x78a5636f43172f60,
        0x84c87814a1f0ab72,
        0x8cc702081a6439ec,
        0x90befffa23631e28,
        0xa4506cebde82bde9,
        0xbef9a3f7b2c67915,
        0xc67178f2e372532b,
        0xca273eceea26619c,
        0xd186b8c721c0c207,
        0xeada7dd6cde0eb1e,
        0xf57d4f7fee6ed178,
        0x06f067aa72176fba,
        0x0a637dc5a2c898a6,
        0x113f9804bef90dae,
        0x1b710b35131c471b,
        0x28db77f523047d84,
        0x32caab7b40c72493,
        0x3c9ebe0a15c9bebc,
        0x431d67c49c100d4c,
        0x4cc5d4becb3e42b6,
        0x597f299cfc657e2a,
        0x5fcb6fab3ad6faec,
        0x6c44198c4a475817,
    ];

    #[test]
    fn split_round_constants_are_fips_180_4() {
        for (t, k) in K.iter().enumerate() {
            assert_eq!(round_constant(t), *k, "{t}");
        }
    }

    /// The packed σ/Σ amounts are FIPS 180-4 §4.1.3's (4.10–4.13).
    #[test]
    fn sigmas_are_fips_180_4() {
        for x in [0u64, 1, 0x8000_0000_0000_0001, 0x0123_4567_89ab_cdef, u64::MAX] {
            let r = |n| x.rotate_right(n);
            assert_eq!(sigma(x, BIG_SIGMA0), r(28) ^ r(34) ^ r(39));
            assert_eq!(sigma(x, BIG_SIGMA1), r(14) ^ r(18) ^ r(41));
            assert_eq!(sigma(x, SMALL_SIGMA0), r(1) ^ r(8) ^ (x >> 7));
            assert_eq!(sigma(x, SMALL_SIGMA1), r(19) ^ r(61) ^ (x >> 6));
        }
    }

    fn sha512(parts: &[&[u8]]) -> [u8; 64] {
        let mut h = Sha512::new();
        parts.iter().for_each(|p| h.update(p));
        let mut out = [0; 64];
        h.finish(&mut out);
        out
    }

    /// FIPS 180-4 examples (NIST's SHA512.pdf): "abc" and the two-block 896-bit message.
    #[test]
    fn fips_180_examples() {
        assert_eq!(
            sha512(&[b"abc"]),
            hex_literal::hex!(
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
            )
        );
        assert_eq!(
            sha512(&[b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"]),
            hex_literal::hex!(
                "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
                "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"
            )
        );
    }

    #[test]
    fn same_as_sha2_at_every_length_and_split() {
        let mut data = [0u8; 400];
        data.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 29 + 11) as u8);
        for len in 0..=400 {
            let expected = sha2::Sha512::digest(&data[..len]);
            assert_eq!(sha512(&[&data[..len]])[..], expected[..], "{len}");
            let at = len * 2 / 3;
            let (a, b) = data[..len].split_at(at);
            assert_eq!(sha512(&[a, b])[..], expected[..], "{len} split at {at}");
        }
    }
}
