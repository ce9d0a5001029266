//! GHASH (NIST SP 800-38D §6.4) in a few hundred bytes of code, for device builds (feature
//! `compact`), in place of the ghash crate: a schoolbook carry-less multiplication of four
//! 32-bit words by four, each word product made from integer multiplications "with holes"
//! (BearSSL's ctmul idea: multiply operands masked to every fourth bit, so the carries of a
//! product land in bits that are masked off), then one reduction. The hash state is kept in
//! the multiplication's bit order and the bytes are XORed into it where they stand, so GCM's
//! tag needs no block buffer.
//!
//! Constant time: no branch and no memory index depends on the state, the key H or the data
//! (the only branches are on lengths and byte positions, which are public: a packet's
//! length); the arithmetic is AND, XOR, shifts, bit reversal and 32×32→64-bit multiplies.
//! That needs a multiplier whose time does not depend on its operands: true of the
//! Cortex-M4/M7 that `thumbv7em` builds run on (UMULL is one cycle, or fixed-latency) and of
//! hosts, not of a Cortex-M3 (`thumbv7m`: its UMULL exits early), which mote does not
//! target. A RISC-V device (the `riscv32imc` build, today a build check) needs the same of
//! its MUL/MULHU; a core with an early-out multiplier should not enable `compact`. About 1.35× the ghash crate's instructions per block and 500 B smaller on
//! Cortex-M4 (the note `issue8-cryptodev.md`). Hosts keep the ghash crate.

/// A GHASH computation under one key: Y_i = (Y_{i−1} ⊕ X_i) · H, fed bytes at a time.
///
/// Blocks are held as four words in which bit k of word i is the coefficient of x^(32i+k):
/// SP 800-38D §6.3 makes a block's first bit (the top bit of its first byte) the coefficient
/// of x^0, so every byte enters bit-reversed.
pub(crate) struct GHash {
    /// Y with the bytes of the current partial block already XORed in (words 0..4), then H
    /// (words 4..8): one array, so one wipe erases both.
    yh: [u32; 8],
    /// Bytes of the current block absorbed so far (0..16).
    filled: usize,
}

// H is the AES key's image (SP 800-38D §6.4) and Y depends on it: erased with the state.
impl Drop for GHash {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.yh);
    }
}

impl GHash {
    /// A state with no key yet: [`Self::key`] gives it one where it lies (a constructor
    /// returning the keyed state may leave a moved-from copy of H in its caller's frame).
    pub(crate) const fn new() -> Self {
        GHash { yh: [0; 8], filled: 0 }
    }

    /// Takes the key `h` (SP 800-38D §6.4: H = E_K(0^128)) and wipes it: from here on H lives
    /// only in the state, which its drop wipes.
    pub(crate) fn key(&mut self, h: &mut [u8; 16]) {
        for (i, &byte) in h.iter().enumerate() {
            xor_byte(&mut self.yh[4..], i, byte);
        }
        zeroize::Zeroize::zeroize(h);
    }

    /// XORs `data` into the state a byte at a time, multiplying by H after each whole block.
    pub(crate) fn absorb(&mut self, data: &[u8]) {
        for &byte in data {
            xor_byte(&mut self.yh[..4], self.filled, byte);
            self.filled += 1;
            if self.filled == 16 {
                self.multiply();
            }
        }
    }

    /// SP 800-38D §7.1 step 5: ends a zero-padded field (the AAD, the ciphertext); a partial
    /// block is multiplied as if the rest were zeros, which XOR would leave as they are.
    pub(crate) fn pad(&mut self) {
        if self.filled != 0 {
            self.multiply();
        }
    }

    /// The hash (after the last field is padded) XORed into `mask` (GCM's E_K(J0)), which
    /// becomes the tag in place: no copy of the mask is left behind.
    pub(crate) fn finish(&self, mask: &mut [u8; 16]) -> [u8; 16] {
        for (i, byte) in mask.iter_mut().enumerate() {
            *byte ^= ((self.yh[(i >> 2) & 3] >> (8 * (i & 3))) as u8).reverse_bits();
        }
        *mask
    }

    /// SP 800-38D §6.3: Y ← Y · H in GF(2^128) modulo x^128 + x^7 + x^2 + x + 1.
    fn multiply(&mut self) {
        // The 255-bit carry-less product, word by word (schoolbook).
        let mut p = [0u32; 8];
        for i in 0..4 {
            for j in 0..4 {
                let w = clmul32(self.yh[i], self.yh[4 + j]);
                p[i + j] ^= w as u32;
                p[i + j + 1] ^= (w >> 32) as u32;
            }
        }
        // x^128 = x^7 + x^2 + x + 1: each high word w at x^(32(i+4)) folds into words i and
        // i + 1 as w·(1 + x + x^2 + x^7); the top word first, as its fold reaches word 4.
        for i in (0..4).rev() {
            let w = p[i + 4];
            p[i] ^= w ^ (w << 1) ^ (w << 2) ^ (w << 7);
            p[i + 1] ^= (w >> 31) ^ (w >> 30) ^ (w >> 25);
        }
        self.yh[..4].copy_from_slice(&p[..4]);
        self.filled = 0;
    }
}

/// XORs `byte` into position `i` (0..16) of a block held as in [`GHash`] (four words).
fn xor_byte(words: &mut [u32], i: usize, byte: u8) {
    words[(i >> 2) & 3] ^= u32::from(byte.reverse_bits()) << (8 * (i & 3));
}

/// The carry-less product of two 32-bit words. Each operand is split into its four classes
/// of bits (positions ≡ 0, 1, 2, 3 mod 4); the integer product of two classes has at most 8
/// terms per position, a sum below 16 that stays inside its 4-bit group, so its bits of
/// class (a + b) mod 4 are the carry-less product's and the rest are carries, masked off.
#[inline(never)]
fn clmul32(x: u32, y: u32) -> u64 {
    const M: u32 = 0x1111_1111;
    const M64: u64 = 0x1111_1111_1111_1111;
    let (x0, x1, x2, x3) = (x & M, x & (M << 1), x & (M << 2), x & (M << 3));
    let (y0, y1, y2, y3) = (y & M, y & (M << 1), y & (M << 2), y & (M << 3));
    let m = |a: u32, b: u32| u64::from(a) * u64::from(b);
    // The products of classes i and j with i + j ≡ c (mod 4), for c = 0, 1, 2, 3.
    let z0 = m(x0, y0) ^ m(x1, y3) ^ m(x2, y2) ^ m(x3, y1);
    let z1 = m(x0, y1) ^ m(x1, y0) ^ m(x2, y3) ^ m(x3, y2);
    let z2 = m(x0, y2) ^ m(x1, y1) ^ m(x2, y0) ^ m(x3, y3);
    let z3 = m(x0, y3) ^ m(x1, y2) ^ m(x2, y1) ^ m(x3, y0);
    (z0 & M64) | (z1 & (M64 << 1)) | (z2 & (M64 << 2)) | (z3 & (M64 << 3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghash::universal_hash::{KeyInit, UniversalHash};
    use hex_literal::hex;
    use proptest::prelude::*;

    /// The ghash crate's GHASH over `data` zero-padded to a block.
    fn reference(h: &[u8; 16], data: &[u8]) -> [u8; 16] {
        let mut g = ghash::GHash::new(h.into());
        g.update_padded(data);
        g.finalize().into()
    }

    fn ours(h: &[u8; 16], data: &[u8]) -> [u8; 16] {
        let mut g = GHash::new();
        g.key(&mut { *h });
        g.absorb(data);
        g.pad();
        g.finish(&mut [0; 16])
    }

    // The GCM specification's test case 2 (McGrew and Viega, also SP 800-38D's examples):
    // H = 66e94bd4..., one ciphertext block and the length block; GHASH(H, {}, C) =
    // f38cbb1ad69223dcc3457ae5b6b0f885.
    #[test]
    fn gcm_spec_test_case_2_ghash() {
        let h = hex!("66e94bd4ef8a2c3b884cfa59ca342b2e");
        let c = hex!("0388dace60b6a392f328c2b971b2fe78");
        let mut key = h;
        let mut g = GHash::new();
        g.key(&mut key);
        // H lives on only in the state (the caller's copy is wiped).
        assert_eq!(key, [0; 16]);
        g.absorb(&c);
        g.pad();
        g.absorb(&hex!("00000000000000000000000000000080"));
        let mut mask = [0; 16];
        assert_eq!(g.finish(&mut mask), hex!("f38cbb1ad69223dcc3457ae5b6b0f885"));
        // The mask became the tag in place.
        assert_eq!(mask, hex!("f38cbb1ad69223dcc3457ae5b6b0f885"));
    }

    #[test]
    fn multiplying_by_one_is_identity() {
        // In GCM's bit order the field's 1 is the block 80 00 .. 00.
        let one = hex!("80000000000000000000000000000000");
        let x = hex!("0123456789abcdeffedcba9876543210");
        assert_eq!(ours(&one, &x), x);
        assert_eq!(ours(&x, &one), x);
    }

    /// The carry-less product bit by bit.
    fn clmul_slow(x: u32, y: u32) -> u64 {
        (0..32).filter(|i| y >> i & 1 == 1).fold(0, |z, i| z ^ (u64::from(x) << i))
    }

    #[test]
    fn clmul32_extremes() {
        for (x, y) in [(0, 0), (u32::MAX, u32::MAX), (1, u32::MAX), (0x8000_0000, 0x8000_0000)] {
            assert_eq!(clmul32(x, y), clmul_slow(x, y), "{x:x} {y:x}");
        }
    }

    proptest! {
        #[test]
        fn clmul32_is_carry_less(x in any::<u32>(), y in any::<u32>()) {
            prop_assert_eq!(clmul32(x, y), clmul_slow(x, y));
        }

        #[test]
        fn matches_the_ghash_crate(
            h in any::<[u8; 16]>(),
            data in proptest::collection::vec(any::<u8>(), 0..100),
            cut in 0usize..100,
        ) {
            let want = reference(&h, &data);
            prop_assert_eq!(ours(&h, &data), want);
            // Fed in two pieces at any point: the same hash.
            let cut = cut.min(data.len());
            let mut g = GHash::new();
            g.key(&mut { h });
            g.absorb(&data[..cut]);
            g.absorb(&data[cut..]);
            g.pad();
            prop_assert_eq!(g.finish(&mut [0; 16]), want);
        }
    }
}
