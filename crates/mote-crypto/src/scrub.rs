//! Zeroing the stack a computation on secrets used, on devices (feature `compact`): named
//! wipes (`zeroize` on a local) cannot reach the register spills and callee frames the
//! compiler made, so a function that ran such callees calls [`stack_below`] right after
//! them, from the same frame: its frame then lies over theirs.
//!
//! The callers and their callees' deepest chains (`cargo xtask stack --elf <image> --root
//! NAME` on the minimal client image): `Gcm::tag_parts` (H and E_K(J0) in `encrypt_blocks` →
//! `encrypt_pair` → `sub_bytes` → `gf16_mul`, 444 B on Cortex-M4 and 480 B on riscv32imc;
//! GHASH's `absorb` → `multiply` → `clmul32`, 180 and 224 B) and `Aes128::set_key` (the
//! round keys in `expand_into` → `sub_bytes` → `gf16_mul`, 380 and 384 B).

/// The bytes [`stack_below`] zeroes: the deepest of the chains above, rounded up.
const SCRUB_BYTES: usize = 512;

/// Zeroes the [`SCRUB_BYTES`] of stack just below the caller's frame, where the frames of
/// the functions it called last were. Volatile writes (`zeroize`): not optimised away.
#[inline(never)]
pub(crate) fn stack_below() {
    let mut below = [0u32; SCRUB_BYTES / 4];
    zeroize::Zeroize::zeroize(&mut below);
}
