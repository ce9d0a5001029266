//! The two exponentiations the device's curve25519 code needs (inversion for X25519 and
//! point encoding, the square root's (p+3)/8 power for point decoding), as one routine on
//! salty's field arithmetic: salty has a loop for each. Also the square both use.
//!
//! Both exponents are 2^250 - 1 followed by a few bits, so one square-and-multiply loop
//! with a short tail serves both. The exponents are public constants: which steps multiply
//! depends only on them, never on the base, so X25519's inversion of a secret stays
//! constant time.

// The field mote's curve code runs on: salty's (Cortex-M4 assembly; TweetNaCl's portable
// code elsewhere), or fiat-crypto's verified 32-bit field with feature `fiat`.
#[cfg(feature = "fiat")]
pub(crate) use crate::fiat25519::FieldElement;
#[cfg(not(feature = "fiat"))]
pub(crate) use salty::FieldElement;

/// x² as x·x: salty's squaring is its own 410 B of assembly, ~30 % faster than its
/// multiplication; only the multiplication is kept on the device (every square of mote's
/// X25519 and Ed25519 goes through here, so the squaring routine is not linked).
#[cfg(not(feature = "fiat"))]
#[inline(always)]
pub(crate) fn square(x: &FieldElement) -> FieldElement {
    x * x
}

/// x² with fiat's squaring (55 products against the multiplication's 100).
// (On riscv32imc x·x instead saves 1,922 B of flash but makes the 1-RTT handshake 1.11x
// the instructions: not taken, issue 8 notes.)
#[cfg(feature = "fiat")]
#[inline(always)]
pub(crate) fn square(x: &FieldElement) -> FieldElement {
    x.squared()
}

/// 121666·x, RFC 7748 §5's ladder constant (A + 2)/4 times x: a multiplication by the
/// constant on salty's field.
#[cfg(not(feature = "fiat"))]
#[inline(always)]
pub(crate) fn mul_121666(x: &FieldElement) -> FieldElement {
    use salty::FieldImplementation as _;
    x * &FieldElement::APLUS2_OVER_FOUR
}

/// 121666·x with fiat's scalar multiplication (10 products instead of 100).
#[cfg(feature = "fiat")]
#[inline(always)]
pub(crate) fn mul_121666(x: &FieldElement) -> FieldElement {
    x.mul_121666()
}

/// x^e for e = (2^250 - 1)·2^n + tail (tail < 2^n), by square-and-multiply from the top bit.
#[inline(never)]
fn pow(x: &FieldElement, tail: u8, n: u32) -> FieldElement {
    let mut r = *x; // the leading 1
    for i in (0..249 + n).rev() {
        r = square(&r);
        if i >= n || (tail >> i) & 1 == 1 {
            r *= x;
        }
    }
    r
}

/// 1/x = x^(p-2) (Fermat; 0 maps to 0): p - 2 = 2^255 - 21 = (2^250 - 1)·2^5 + 0b01011.
pub(crate) fn invert(x: &FieldElement) -> FieldElement {
    pow(x, 0b01011, 5)
}

/// x^((p+3)/8), RFC 8032 §5.1.3's candidate square root of x: (p+3)/8 = 2^252 - 2 =
/// (2^250 - 1)·2^2 + 0b10.
#[cfg(feature = "ed25519")]
pub(crate) fn pow_p38(x: &FieldElement) -> FieldElement {
    pow(x, 0b10, 2)
}

#[cfg(all(test, not(feature = "fiat")))]
mod tests {
    use super::*;
    use salty::FieldImplementation as _;

    #[test]
    fn same_as_salty() {
        let mut x = FieldElement::D;
        for _ in 0..8 {
            assert_eq!(invert(&x).to_bytes(), x.inverse().to_bytes());
            assert_eq!((&invert(&x) * &x).to_bytes(), FieldElement::ONE.to_bytes());
            // x^((p+3)/8) = x·x^((p-5)/8).
            #[cfg(feature = "ed25519")]
            assert_eq!(pow_p38(&x).to_bytes(), (&x * &x.pow2523()).to_bytes());
            x = &x.squared() + &FieldElement::I;
        }
        assert_eq!(invert(&FieldElement::ZERO).to_bytes(), [0; 32]);
    }
}
