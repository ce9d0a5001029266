//! AES-128 encryption (FIPS 197) in about 1.5 KB of code, for device builds (feature
//! `compact`), in place of the aes crate's fixsliced AES: GCM and QUIC header protection
//! only ever encrypt.
//!
//! Bitsliced: two blocks are held as eight 32-bit words, word i holding bit i of all 32
//! bytes (bit 8·row + 4·block + column: a state row is a byte of the word), so every step is
//! the same logic on all bytes at once; a transposition (three SWAPMOVE stages) goes in and
//! out. The S-box is computed, not looked up: the inverse in GF(2^8) through the tower
//! field GF((2^4)^2) (a change of basis, one inversion in GF(16) as x^14 and five GF(16)
//! products, each a few ANDs and XORs on the words), then the affine map, merged with the
//! change of basis back. ShiftRows turns the nibbles of a row; MixColumns rotates words by
//! whole rows.
//!
//! Constant time: no branch and no memory index depends on the key or the data (no table:
//! the S-box is the circuit above, on whole words); the only branches and indices are loop
//! counters and byte positions. 1.2 KB smaller than the aes crate's fixsliced AES
//! (`aes_compact`) on Cortex-M4, about 2× its instructions per block (10.8k per two blocks
//! against 5.2k) and 2.7× per key expansion; the note `issue8-cryptodev.md` has the figures.
//! Round keys take 176 B instead of 352 B. Checked against FIPS 197's vectors and the aes
//! crate below. Hosts keep the aes crate.

use aes::cipher::consts::{U16, U2};
use aes::cipher::inout::InOut;
use aes::cipher::{
    Block, BlockBackend, BlockCipher, BlockClosure, BlockEncrypt, BlockSizeUser, Key, KeyInit,
    KeySizeUser, ParBlocks, ParBlocksSizeUser,
};

/// Eight bit planes of 32 bytes (two blocks).
type Planes = [u32; 8];

/// An AES-128 encryption key: the eleven round keys (FIPS 197 §5.2) as bit planes of one
/// block, four bits per row (`spread` makes them a round key of two blocks).
#[derive(Clone)]
pub struct Aes128 {
    round_keys: [[u16; 8]; 11],
}

impl Aes128 {
    /// A schedule of zeros, no usable key until [`Self::set_key`]: what a key slot is
    /// filled with before the key is expanded into it (zeros in transit are no secret). A
    /// constant, so writing it is a memset of the slot, not a value built in a temporary
    /// (176 B of stack) and copied.
    pub(crate) const ZERO: Self = Aes128 { round_keys: [[0; 8]; 11] };

    /// FIPS 197 §5.2 KeyExpansion of `key` into this schedule, where it lies: no schedule
    /// is built in a frame of its own and copied out (each copy was 176 B of key material
    /// left in freed stack). The expansion's temporaries are wiped, and the stack its
    /// callees used (register spills of the S-box on round-key bytes) is zeroed.
    #[inline(always)]
    pub(crate) fn set_key(&mut self, key: &[u8; 16]) {
        expand_into(&mut self.round_keys, key);
        // Called from this frame right after `expand_into`: its frame lies over theirs.
        crate::scrub::stack_below();
    }

    /// FIPS 197 §5.1 Cipher on the 32 bytes of two blocks, in place.
    fn encrypt_pair(&self, data: &mut [u8; 32]) {
        let mut state = to_planes(data);
        for (round, key) in self.round_keys.iter().enumerate() {
            if round > 0 {
                sub_bytes(&mut state);
                shift_rows(&mut state);
                if round < 10 {
                    mix_columns(&mut state);
                }
            }
            // AddRoundKey: the round key applies to both blocks.
            for (s, &k) in state.iter_mut().zip(key) {
                *s ^= spread(k);
            }
        }
        from_planes(&mut state, data);
    }
}

/// A stored round-key plane (row r's bits at 4r..4r+4) as a plane of two blocks (row r's
/// bits at 8r..8r+4 for the first block and 8r+4..8r+8 for the second).
fn spread(k: u16) -> u32 {
    let k = u32::from(k);
    let one = (k & 0xf) | ((k & 0xf0) << 4) | ((k & 0xf00) << 8) | ((k & 0xf000) << 12);
    one | (one << 4)
}

/// FIPS 197 §5.2 KeyExpansion, a round key (four words) at a time, into `round_keys`:
/// w[i] = w[i−4] ⊕ (SubWord(RotWord(w[i−1])) ⊕ Rcon for the first word of a round key).
/// Out of line, so [`Aes128::set_key`] can zero the stack it and its callees used.
#[inline(never)]
fn expand_into(round_keys: &mut [[u16; 8]; 11], key: &[u8; 16]) {
    // The current round key (any round key gives the key: AES-128's expansion runs
    // backwards too), RotWord of its last word, and planes of either: all wiped below.
    let mut words = *key;
    let mut temp = [0u8; 4];
    let mut planes: Planes = [0; 8];
    let mut rcon = 1u8;
    for (round, planes16) in round_keys.iter_mut().enumerate() {
        if round > 0 {
            temp = [words[13], words[14], words[15], words[12]];
            planes = to_planes(&temp);
            sub_bytes(&mut planes);
            from_planes(&mut planes, &mut temp);
            temp[0] ^= rcon;
            rcon = xtime_byte(rcon);
            for i in 0..16 {
                let prev = if i < 4 { temp[i] } else { words[i - 4] };
                words[i] ^= prev;
            }
        }
        // Row r's four column bits (the low nibble of byte r) to bits 4r..4r+4.
        planes = to_planes(&words);
        for (p16, &p) in planes16.iter_mut().zip(&planes) {
            *p16 =
                ((p & 0xf) | ((p >> 4) & 0xf0) | ((p >> 8) & 0xf00) | ((p >> 12) & 0xf000)) as u16;
        }
    }
    zeroize::Zeroize::zeroize(&mut words);
    zeroize::Zeroize::zeroize(&mut temp);
    zeroize::Zeroize::zeroize(&mut planes);
}

/// The planes of up to 32 bytes (the rest zero): the bytes as eight little-endian words,
/// transposed. Byte i = 16·block + 4·column + row lands at bit 8·row + 4·block + column.
fn to_planes(bytes: &[u8]) -> Planes {
    let mut w = [0u32; 8];
    for (i, &byte) in bytes.iter().enumerate() {
        w[(i >> 2) & 7] |= u32::from(byte) << (8 * (i & 3));
    }
    transpose(&mut w);
    w
}

/// Writes `bytes` (up to 32) back from the planes (which are spent).
fn from_planes(planes: &mut Planes, bytes: &mut [u8]) {
    transpose(planes);
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = (planes[(i >> 2) & 7] >> (8 * (i & 3))) as u8;
    }
}

/// The 8×8 bit transposition of each byte column of eight words (its own inverse): word w,
/// bit 8k + b ↔ word b, bit 8k + w. Three SWAPMOVE stages exchange bits between words 1, 2
/// and 4 apart.
fn transpose(w: &mut Planes) {
    const MASKS: [u32; 3] = [0x5555_5555, 0x3333_3333, 0x0f0f_0f0f];
    for (stage, mask) in MASKS.iter().enumerate() {
        let n = 1 << stage;
        for a in 0..8 {
            if a & n == 0 {
                let b = (a | n) & 7;
                let t = ((w[a] >> n) ^ w[b]) & mask;
                w[b] ^= t;
                w[a] ^= t << n;
            }
        }
    }
}

/// FIPS 197 §4.2.1 xtime on a public byte (the round constant).
fn xtime_byte(b: u8) -> u8 {
    (b << 1) ^ (((b >> 7) & 1) * 0x1b)
}

/// A GF(16) element (modulo x^4 + x + 1) as four bit planes.
type Nibble = [u32; 4];

/// The product in GF(16), schoolbook then reduced with x^4 = x + 1.
#[inline(never)]
fn gf16_mul(a: &Nibble, b: &Nibble) -> Nibble {
    let p0 = a[0] & b[0];
    let p1 = (a[0] & b[1]) ^ (a[1] & b[0]);
    let p2 = (a[0] & b[2]) ^ (a[1] & b[1]) ^ (a[2] & b[0]);
    let p3 = (a[0] & b[3]) ^ (a[1] & b[2]) ^ (a[2] & b[1]) ^ (a[3] & b[0]);
    let p4 = (a[1] & b[3]) ^ (a[2] & b[2]) ^ (a[3] & b[1]);
    let p5 = (a[2] & b[3]) ^ (a[3] & b[2]);
    let p6 = a[3] & b[3];
    [p0 ^ p4, p1 ^ p4 ^ p5, p2 ^ p5 ^ p6, p3 ^ p6]
}

/// The square in GF(16) (a linear map).
fn gf16_square(a: &Nibble) -> Nibble {
    [a[0] ^ a[2], a[2], a[1] ^ a[3], a[3]]
}

/// FIPS 197 §5.1.1 SubBytes on every byte: the multiplicative inverse (0 for 0), then the
/// affine transformation. The inverse is taken in GF(16)[y]/(y^2 + y + λ), λ = x^3: with
/// a = h·y + l, a^−1 = (h·y + h + l) / Δ, Δ = λ·h^2 + h·l + l^2, and Δ^−1 = Δ^14 (0 for
/// 0). The basis changes were derived by mapping x to a root of the AES polynomial in the
/// tower field (test `tower_sbox_matches_fips_197`).
fn sub_bytes(s: &mut Planes) {
    // Into the tower basis: l = t[0..4], h = t[4..8].
    let l = [s[0] ^ s[5] ^ s[7], s[2], s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7], s[3] ^ s[4]];
    let h = [s[4] ^ s[5] ^ s[6], s[1] ^ s[4] ^ s[6] ^ s[7], s[2] ^ s[3] ^ s[5] ^ s[7], s[5] ^ s[7]];
    // Δ = λ·h^2 ⊕ h·l ⊕ l^2 (λ·h^2 is linear in h).
    let hl = gf16_mul(&h, &l);
    let l2 = gf16_square(&l);
    let delta = [
        h[2] ^ hl[0] ^ l2[0],
        h[1] ^ h[2] ^ h[3] ^ hl[1] ^ l2[1],
        h[1] ^ hl[2] ^ l2[2],
        h[0] ^ h[2] ^ h[3] ^ hl[3] ^ l2[3],
    ];
    // Δ^14 = Δ^2 · Δ^4 · Δ^8.
    let d2 = gf16_square(&delta);
    let d4 = gf16_square(&d2);
    let d8 = gf16_square(&d4);
    let inv = gf16_mul(&gf16_mul(&d2, &d4), &d8);
    let rh = gf16_mul(&h, &inv);
    let hl_sum = [h[0] ^ l[0], h[1] ^ l[1], h[2] ^ l[2], h[3] ^ l[3]];
    let rl = gf16_mul(&hl_sum, &inv);
    // Back to the AES basis and the affine map in one linear map, then ⊕ 0x63.
    let r = [rl[0], rl[1], rl[2], rl[3], rh[0], rh[1], rh[2], rh[3]];
    s[0] = !(r[0] ^ r[2] ^ r[6]);
    s[1] = !(r[0] ^ r[1] ^ r[2] ^ r[3] ^ r[4] ^ r[5]);
    s[2] = r[0] ^ r[3] ^ r[5] ^ r[6];
    s[3] = r[0] ^ r[2] ^ r[5];
    s[4] = r[0] ^ r[1] ^ r[3] ^ r[4] ^ r[5];
    s[5] = !(r[1] ^ r[2] ^ r[3] ^ r[5] ^ r[6] ^ r[7]);
    s[6] = !(r[4] ^ r[6] ^ r[7]);
    s[7] = r[1] ^ r[2];
}

/// FIPS 197 §5.1.2 ShiftRows: row r turns left by r columns, a rotation right by r within
/// each block's nibble of byte r.
fn shift_rows(s: &mut Planes) {
    for p in s.iter_mut() {
        let x = *p;
        *p = (x & 0x0000_00ff)
            | ((x >> 1) & 0x0000_7700)
            | ((x << 3) & 0x0000_8800)
            | ((x >> 2) & 0x0033_0000)
            | ((x << 2) & 0x00cc_0000)
            | ((x >> 3) & 0x1100_0000)
            | ((x << 1) & 0xee00_0000);
    }
}

/// FIPS 197 §5.1.3 MixColumns: row r becomes 2·a_r ⊕ 3·a_{r+1} ⊕ a_{r+2} ⊕ a_{r+3}
/// = xtime(a_r ⊕ a_{r+1}) ⊕ a_{r+1} ⊕ a_{r+2} ⊕ a_{r+3} (rows r + n are the word rotated
/// right by 8n bits); xtime on planes is a shift of the planes with the top plane folded
/// into planes 0, 1, 3 and 4 (x^8 = x^4 + x^3 + x + 1).
fn mix_columns(s: &mut Planes) {
    let mut t = [0u32; 8];
    for i in 0..8 {
        let r1 = s[i].rotate_right(8);
        t[i] = s[i] ^ r1;
        s[i] = r1 ^ s[i].rotate_right(16) ^ s[i].rotate_right(24);
    }
    for i in 0..8 {
        let shifted = if i > 0 { t[i - 1] } else { 0 };
        let fold = if (0x1b >> i) & 1 == 1 { t[7] } else { 0 };
        s[i] ^= shifted ^ fold;
    }
}

// A key schedule is key material: erased when the key goes (a replaced or discarded packet
// key, RFC 9001 §6.5, §4.9).
impl Drop for Aes128 {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.round_keys);
    }
}

impl KeySizeUser for Aes128 {
    type KeySize = U16;
}

// By value for the cipher crate's users (tests, hosts' generic code); devices key their
// slots with `set_key` (`RustCrypto::write_aead_key`, `write_header_key`).
impl KeyInit for Aes128 {
    fn new(key: &Key<Self>) -> Self {
        let mut aes = Self::ZERO;
        aes.set_key(key.as_ref());
        aes
    }
}

impl BlockSizeUser for Aes128 {
    type BlockSize = U16;
}

impl BlockCipher for Aes128 {}

impl BlockEncrypt for Aes128 {
    fn encrypt_with_backend(&self, f: impl BlockClosure<BlockSize = U16>) {
        f.call(&mut Backend(self));
    }
}

/// The cipher crate's view of the key: two blocks at a time.
struct Backend<'a>(&'a Aes128);

impl BlockSizeUser for Backend<'_> {
    type BlockSize = U16;
}

impl ParBlocksSizeUser for Backend<'_> {
    type ParBlocksSize = U2;
}

impl BlockBackend for Backend<'_> {
    fn proc_block(&mut self, mut block: InOut<'_, '_, Block<Self>>) {
        let mut pair = [0u8; 32];
        pair[..16].copy_from_slice(block.get_in());
        self.0.encrypt_pair(&mut pair);
        block.get_out().copy_from_slice(&pair[..16]);
    }

    // Block by block through `chunks_exact`: written as two indexed copies, riscv32imc
    // inlines one as byte loads (+100 B once GCM's tag calls this too).
    fn proc_par_blocks(&mut self, mut blocks: InOut<'_, '_, ParBlocks<Self>>) {
        let mut pair = [0u8; 32];
        for (p, b) in pair.chunks_exact_mut(16).zip(blocks.get_in().iter()) {
            p.copy_from_slice(b);
        }
        self.0.encrypt_pair(&mut pair);
        for (b, p) in blocks.get_out().iter_mut().zip(pair.chunks_exact(16)) {
            b.copy_from_slice(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    /// FIPS 197 §5.1.1's S-box from its definition: the inverse by search, then the affine
    /// map (independent of the tower-field circuit).
    fn sbox_by_definition(a: u8) -> u8 {
        fn mul(mut a: u8, mut b: u8) -> u8 {
            let mut p = 0;
            while b != 0 {
                if b & 1 == 1 {
                    p ^= a;
                }
                a = xtime_byte(a);
                b >>= 1;
            }
            p
        }
        let inv = (1..=255u8).find(|&x| mul(a, x) == 1).unwrap_or(0);
        inv ^ inv.rotate_left(1)
            ^ inv.rotate_left(2)
            ^ inv.rotate_left(3)
            ^ inv.rotate_left(4)
            ^ 0x63
    }

    #[test]
    fn tower_sbox_matches_fips_197() {
        for start in (0..256).step_by(32) {
            let bytes: [u8; 32] = core::array::from_fn(|i| (start + i) as u8);
            let mut planes = to_planes(&bytes);
            sub_bytes(&mut planes);
            let mut out = [0u8; 32];
            from_planes(&mut planes, &mut out);
            for (i, &o) in out.iter().enumerate() {
                assert_eq!(o, sbox_by_definition(bytes[i]), "S({:#04x})", bytes[i]);
            }
        }
        // FIPS 197 Figure 7's corners.
        assert_eq!(sbox_by_definition(0x00), 0x63);
        assert_eq!(sbox_by_definition(0x53), 0xed);
        assert_eq!(sbox_by_definition(0xff), 0x16);
    }

    fn encrypt(key: &[u8; 16], block: &[u8; 16]) -> [u8; 16] {
        let mut b = (*block).into();
        Aes128::new(key.into()).encrypt_block(&mut b);
        b.into()
    }

    // FIPS 197 Appendix C.1 (AES-128) and Appendix B.
    #[test]
    fn fips_197_vectors() {
        assert_eq!(
            encrypt(
                &hex!("000102030405060708090a0b0c0d0e0f"),
                &hex!("00112233445566778899aabbccddeeff")
            ),
            hex!("69c4e0d86a7b0430d8cdb78070b4c55a")
        );
        assert_eq!(
            encrypt(
                &hex!("2b7e151628aed2a6abf7158809cf4f3c"),
                &hex!("3243f6a8885a308d313198a2e0370734")
            ),
            hex!("3925841d02dc09fbdc118597196a0b32")
        );
    }

    /// FIPS 197 Appendix C.1 and B through the in-place path devices take (`set_key` on a
    /// schedule that already holds another key, as a reused key slot does): the expansion
    /// overwrites every round key rather than mixing with what was there, and equals the
    /// by-value `KeyInit` schedule.
    #[test]
    fn set_key_in_place_matches_fips_197() {
        let vectors = [
            (
                hex!("000102030405060708090a0b0c0d0e0f"),
                hex!("00112233445566778899aabbccddeeff"),
                hex!("69c4e0d86a7b0430d8cdb78070b4c55a"),
            ),
            (
                hex!("2b7e151628aed2a6abf7158809cf4f3c"),
                hex!("3243f6a8885a308d313198a2e0370734"),
                hex!("3925841d02dc09fbdc118597196a0b32"),
            ),
        ];
        let mut slot = Aes128::ZERO;
        slot.round_keys = [[0xa5a5; 8]; 11];
        for (key, plain, cipher) in vectors {
            slot.set_key(&key);
            assert_eq!(slot.round_keys, Aes128::new(&key.into()).round_keys);
            let mut block = plain.into();
            slot.encrypt_block(&mut block);
            assert_eq!(block[..], cipher);
        }
    }

    // FIPS 197 Appendix A.1: the last round key of the expansion of 2b7e1516...
    #[test]
    fn key_expansion_last_round_key() {
        let key = Aes128::new(&hex!("2b7e151628aed2a6abf7158809cf4f3c").into());
        let mut planes = [0u32; 8];
        for (p, &k) in planes.iter_mut().zip(&key.round_keys[10]) {
            *p = spread(k);
        }
        let mut bytes = [0u8; 32];
        from_planes(&mut planes, &mut bytes);
        assert_eq!(bytes[..16], bytes[16..], "both blocks get the round key");
        let bytes: [u8; 16] = bytes[..16].try_into().unwrap();
        assert_eq!(bytes, hex!("d014f9a8c9ee2589e13f0cc8b6630ca6"));
    }

    proptest! {
        #[test]
        fn matches_the_aes_crate(key in any::<[u8; 16]>(), a in any::<[u8; 16]>(), b in any::<[u8; 16]>()) {
            let theirs = aes::Aes128::new(&key.into());
            let ours = Aes128::new(&key.into());
            let mut want = [a.into(), b.into()];
            theirs.encrypt_blocks(&mut want);
            let mut got = [a.into(), b.into()];
            ours.encrypt_blocks(&mut got);
            prop_assert_eq!(got, want);
            let mut one = a.into();
            ours.encrypt_block(&mut one);
            prop_assert_eq!(one, want[0]);
        }
    }
}
