//! GHASH (NIST SP 800-38D §6.4) in a few hundred bytes of code, for device builds (feature
//! `compact`): a bit-serial multiplication in GF(2^128) on four 32-bit words, and the bytes
//! XORed into the hash state where they stand, so GCM's tag needs no block buffer.
//!
//! Constant time: the multiplication walks all 128 bits of the state with masks made from
//! them (an arithmetic shift turns a bit into all-zeros or all-ones); no branch and no table
//! index depends on the state, the key H or the data. The only branches are on lengths and
//! byte positions, which are public (a packet's length). Slower than the ghash crate's
//! 32-bit Karatsuba (`soft32`, BearSSL's ctmul32) by about 3× per block, for about 1 KB less
//! flash; `cargo xtask qemu` and the note `issue8-cryptodev.md` give the instruction counts.
//! Hosts keep the ghash crate.

/// SP 800-38D §6.3: R = 11100001 ‖ 0^120, the reduction of x^128 + x^7 + x^2 + x + 1 in
/// GCM's bit order (the first bit of a block is the coefficient of x^0), as the high word.
const R: u32 = 0xe100_0000;

/// A GHASH computation under one key: Y_i = (Y_{i−1} ⊕ X_i) · H, fed bytes at a time.
pub(crate) struct GHash {
    /// H as big-endian words (bit 0 of the block is the top bit of `h[0]`).
    h: [u32; 4],
    /// Y with the bytes of the current partial block already XORed in.
    y: [u32; 4],
    /// Bytes of the current block absorbed so far (0..16).
    filled: usize,
}

impl GHash {
    /// GHASH under the key `h` (SP 800-38D §6.4: H = E_K(0^128)).
    pub(crate) fn new(h: &[u8; 16]) -> Self {
        let mut words = [0u32; 4];
        for (i, &byte) in h.iter().enumerate() {
            xor_byte(&mut words, i, byte);
        }
        GHash { h: words, y: [0; 4], filled: 0 }
    }

    /// XORs `data` into the state a byte at a time, multiplying by H after each whole block.
    pub(crate) fn absorb(&mut self, data: &[u8]) {
        for &byte in data {
            xor_byte(&mut self.y, self.filled, byte);
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

    /// The hash (after the last field is padded) XORed with `mask` (GCM's E_K(J0)).
    pub(crate) fn finish(&self, mask: &[u8; 16]) -> [u8; 16] {
        let mut out = *mask;
        for (i, byte) in out.iter_mut().enumerate() {
            *byte ^= (self.y[(i >> 2) & 3] >> (24 - 8 * (i & 3))) as u8;
        }
        out
    }

    /// SP 800-38D §6.3 Algorithm 1: Y ← Y · H. For each bit x_i of Y (first bit first),
    /// Z ⊕= V if x_i is set, then V ← V >> 1, ⊕ R if the bit shifted out was set; V starts
    /// at H. Both conditions are masks, so every bit costs the same.
    fn multiply(&mut self) {
        let [mut z0, mut z1, mut z2, mut z3] = [0u32; 4];
        let [mut v0, mut v1, mut v2, mut v3] = self.h;
        for i in 0..4 {
            let mut x = self.y[i];
            for _ in 0..32 {
                let take = mask(x >> 31);
                x <<= 1;
                z0 ^= v0 & take;
                z1 ^= v1 & take;
                z2 ^= v2 & take;
                z3 ^= v3 & take;
                let reduce = mask(v3 & 1);
                v3 = (v3 >> 1) | (v2 << 31);
                v2 = (v2 >> 1) | (v1 << 31);
                v1 = (v1 >> 1) | (v0 << 31);
                v0 = (v0 >> 1) ^ (R & reduce);
            }
        }
        self.y = [z0, z1, z2, z3];
        self.filled = 0;
    }
}

/// XORs `byte` into position `i` (0..16) of a block held as big-endian words.
fn xor_byte(words: &mut [u32; 4], i: usize, byte: u8) {
    words[(i >> 2) & 3] ^= u32::from(byte) << (24 - 8 * (i & 3));
}

/// All ones if `bit` (0 or 1) is set, else zero, through an optimisation barrier: the
/// compiler would otherwise see a 0/−1 mask and may turn `v & mask` back into a conditional
/// instruction (it does, on Cortex-M4: an IT block).
#[inline(always)]
fn mask(bit: u32) -> u32 {
    0u32.wrapping_sub(core::hint::black_box(bit))
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
        let mut g = GHash::new(h);
        g.absorb(data);
        g.pad();
        g.finish(&[0; 16])
    }

    // The GCM specification's test case 2 (McGrew and Viega, also SP 800-38D's examples):
    // H = 66e94bd4..., one ciphertext block and the length block; GHASH(H, {}, C) =
    // f38cbb1ad69223dcc3457ae5b6b0f885.
    #[test]
    fn gcm_spec_test_case_2_ghash() {
        let h = hex!("66e94bd4ef8a2c3b884cfa59ca342b2e");
        let c = hex!("0388dace60b6a392f328c2b971b2fe78");
        let mut g = GHash::new(&h);
        g.absorb(&c);
        g.pad();
        g.absorb(&hex!("00000000000000000000000000000080"));
        assert_eq!(g.finish(&[0; 16]), hex!("f38cbb1ad69223dcc3457ae5b6b0f885"));
    }

    #[test]
    fn multiplying_by_one_is_identity() {
        // In GCM's bit order the field's 1 is the block 80 00 .. 00.
        let one = hex!("80000000000000000000000000000000");
        let x = hex!("0123456789abcdeffedcba9876543210");
        assert_eq!(ours(&one, &x), x);
        assert_eq!(ours(&x, &one), x);
    }

    proptest! {
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
            let mut g = GHash::new(&h);
            g.absorb(&data[..cut]);
            g.absorb(&data[cut..]);
            g.pad();
            prop_assert_eq!(g.finish(&[0; 16]), want);
        }
    }
}
