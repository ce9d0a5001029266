//! X25519 (RFC 7748 §5) on salty's field arithmetic (Cortex-M4 assembly), for the device.
//!
//! salty's own ladder keeps every intermediate value of a step as a new field element: a
//! 1,136 B frame at the bottom of two of the handshake's deepest chains (the ClientHello's
//! key share and the ServerHello's shared secret, issue 8). This one updates the ladder's
//! four coordinates in place. Constant time as RFC 7748 §5 requires: the swaps are
//! conditional swaps, no branch or index depends on the scalar. Checked against
//! x25519-dalek below and by RFC 7748's vectors (tests/vectors.rs).

use crate::field25519::{square, FieldElement};
#[cfg(not(feature = "fiat"))]
use salty::FieldImplementation as _;
use subtle::{Choice, ConditionallySelectable as _};

/// RFC 7748 §5: X25519(k, u), the scalar clamped here.
pub(crate) fn x25519(mut k: [u8; 32], u: [u8; 32]) -> [u8; 32] {
    // "decodeScalar25519".
    k[0] &= 248;
    k[31] &= 127;
    k[31] |= 64;
    // "decodeUCoordinate": the top bit is masked, non-canonical values are accepted.
    let mut u_bytes = u;
    u_bytes[31] &= 0x7f;
    let x1 = FieldElement::from_unreduced_bytes(&u_bytes);
    let mut ladder =
        Ladder { x2: FieldElement::ONE, z2: FieldElement::ZERO, x3: x1, z3: FieldElement::ONE };
    let mut swap = 0u8;
    for t in (0..255).rev() {
        let k_t = (k[t / 8] >> (t % 8)) & 1;
        swap ^= k_t;
        ladder.swap(Choice::from(swap));
        swap = k_t;
        ladder.step(&x1);
    }
    ladder.swap(Choice::from(swap));
    // x2 · z2^(p-2).
    let out = &ladder.x2 * &crate::field25519::invert(&ladder.z2);
    zeroize::Zeroize::zeroize(&mut k);
    out.to_bytes()
}

/// The Montgomery ladder's two points, (x2 : z2) and (x3 : z3).
struct Ladder {
    x2: FieldElement,
    z2: FieldElement,
    x3: FieldElement,
    z3: FieldElement,
}

impl Ladder {
    /// "cswap": exchanges the two points when `choice` is set, in constant time.
    fn swap(&mut self, choice: Choice) {
        FieldElement::conditional_swap(&mut self.x2, &mut self.x3, choice);
        FieldElement::conditional_swap(&mut self.z2, &mut self.z3, choice);
    }

    /// One ladder step of RFC 7748 §5 (differential addition and doubling), in place.
    /// z2 = E·(AA + a24·E) with a24 = 121665 is written as E·(BB + 121666·E), the same
    /// since AA = BB + E (121666 is salty's `APLUS2_OVER_FOUR`).
    #[inline(never)]
    fn step(&mut self, x1: &FieldElement) {
        let a = &self.x2 + &self.z2;
        let b = &self.x2 - &self.z2;
        let c = &self.x3 + &self.z3;
        let d = &self.x3 - &self.z3;
        let da = &d * &a;
        let cb = &c * &b;
        // x3 = (DA + CB)², z3 = x1·(DA - CB)².
        self.x3 = square(&(&da + &cb));
        self.z3 = square(&(&da - &cb));
        self.z3 *= x1;
        // x2 = AA·BB, z2 = E·(BB + a24·E).
        let aa = square(&a);
        let bb = square(&b);
        let e = &aa - &bb;
        self.x2 = &aa * &bb;
        self.z2 = crate::field25519::mul_121666(&e);
        self.z2 += &bb;
        self.z2 *= &e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_as_x25519_dalek() {
        let mut u = x25519_dalek::X25519_BASEPOINT_BYTES;
        for seed in 0u8..24 {
            let k: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(seed | 1) ^ seed);
            let ours = x25519(k, u);
            assert_eq!(ours, x25519_dalek::x25519(k, u), "seed {seed}");
            // Next round: a point from the last result, and sometimes a non-canonical u
            // or one with the top bit set (both must be accepted and reduced/masked).
            u = ours;
            if seed % 5 == 0 {
                u[31] |= 0x80;
            }
            if seed % 7 == 0 {
                u = [0xff; 32];
                u[0] = 0xec + (seed & 1);
                u[31] = 0x7f;
            }
        }
    }
}
