//! The edwards25519 group operations Ed25519 verification needs on the device (RFC 8032
//! §5.1.2-§5.1.4), on salty's field arithmetic (Cortex-M4 assembly).
//!
//! salty's own point layer builds every intermediate value of an addition as a new field
//! element and moves whole points through its scalar multiplication: 1 KB of stack for
//! [k]A, at the bottom of the handshake's deepest chain (the server's CertificateVerify,
//! issue 8). Here points are updated in place, and [S]B + [k](-A) is one double-and-add
//! holding one accumulator. For flash (issue 8), one formula serves addition and doubling,
//! and squares, inversion and the square root go through `field25519.rs`. Verification has
//! only public inputs (S, k, A, R), so the multiplication may branch on the scalars' bits.
//! Checked against curve25519-dalek below and by `ed25519_tests`.

use crate::field25519::FieldElement;
#[cfg(not(feature = "fiat"))]
use salty::FieldImplementation as _;

/// A field element from its value as eight little-endian 32-bit words, at compile time, in
/// salty's limbs: eight 32-bit limbs on Cortex-M4, sixteen 16-bit ones (in i64) elsewhere.
#[cfg(not(feature = "fiat"))]
const fn field_element(words: [u32; 8]) -> FieldElement {
    let mut limbs = FieldElement::ZERO.0;
    let bits = 256 / limbs.len();
    let mut i = 0;
    while i < limbs.len() {
        let at = i * bits;
        let piece = (words[at / 32] as u64 >> (at % 32)) & ((1u64 << bits) - 1);
        limbs[i] = piece as _;
        i += 1;
    }
    FieldElement(limbs)
}

/// As above, in fiat's limbs (feature `fiat`).
#[cfg(feature = "fiat")]
const fn field_element(words: [u32; 8]) -> FieldElement {
    FieldElement::from_words(words)
}

/// A point in extended homogeneous coordinates (X : Y : Z : T), x = X/Z, y = Y/Z,
/// x·y = T/Z (RFC 8032 §5.1.4).
#[derive(Clone, Copy)]
pub(crate) struct Point {
    x: FieldElement,
    y: FieldElement,
    z: FieldElement,
    t: FieldElement,
}

impl Point {
    /// The neutral element (0, 1).
    pub(crate) const IDENTITY: Point = Point {
        x: FieldElement::ZERO,
        y: FieldElement::ONE,
        z: FieldElement::ONE,
        t: FieldElement::ZERO,
    };

    /// RFC 8032 §5.1: the base point B, with T = x·y precomputed (a constant, so the
    /// verification's ladder adds it from flash and holds no copy).
    pub(crate) const BASE: Point = Point {
        x: FieldElement::EDWARDS_BASEPOINT_X,
        y: FieldElement::EDWARDS_BASEPOINT_Y,
        z: FieldElement::ONE,
        t: field_element([
            0xa5b7dda3, 0x6dde8ab3, 0x775152f5, 0x20f09f80, 0x64abe37d, 0x66ea4e8e, 0xd78b7665,
            0x67875f0f,
        ]),
    };

    /// RFC 8032 §5.1.3: decodes a point into `out`; false (and `out` unspecified) if it is
    /// not on the curve, or x = 0 with the sign bit set. The caller has checked that y is
    /// canonical (y < p).
    // Out of line, as `add`: each one's field temporaries in its own frame,
    // not summed in a caller's; the point is written where the caller keeps it.
    #[inline(never)]
    pub(crate) fn decode(bytes: &[u8; 32], out: &mut Point) -> bool {
        let sign = bytes[31] >> 7;
        let mut y_bytes = *bytes;
        y_bytes[31] &= 0x7f;
        out.y = FieldElement::from_bytes_unchecked(&y_bytes);
        out.z = FieldElement::ONE;
        // Step 2: x² = u / v with u = y² - 1, v = d·y² + 1.
        let mut u = crate::field25519::square(&out.y);
        let mut v = &u * &FieldElement::D;
        v += &FieldElement::ONE;
        u -= &FieldElement::ONE;
        // Step 3: the candidate root x = (u/v)^((p+3)/8), as the RFC first writes it (one
        // more exponentiation than its u·v³·(u·v⁷)^((p-5)/8) trick, on the routine the
        // inversion already uses: less flash). v ≠ 0 (-1/d is not a square), so v·x² = ±u
        // is x² = ±u/v.
        out.t = &u * &crate::field25519::invert(&v); // u/v
        out.x = crate::field25519::pow_p38(&out.t);
        // x² is u/v (x is the root), -u/v (x·sqrt(-1) is), or neither (no point).
        let x2 = crate::field25519::square(&out.x);
        if x2.to_bytes() != out.t.to_bytes() {
            if (&x2 + &out.t).to_bytes() != [0; 32] {
                return false;
            }
            out.x *= &FieldElement::I;
        }
        // Step 4: x = 0 has no negative; otherwise the root of the encoded sign.
        let x_bytes = out.x.to_bytes();
        if x_bytes == [0; 32] && sign == 1 {
            return false;
        }
        if x_bytes[0] & 1 != sign {
            out.x = -&out.x;
        }
        out.t = &out.x * &out.y;
        true
    }

    /// RFC 8032 §5.1.2: the encoding of y with the sign of x in the top bit.
    pub(crate) fn encode(&self) -> [u8; 32] {
        let z_inv = crate::field25519::invert(&self.z);
        let x = (&self.x * &z_inv).to_bytes();
        let mut y = (&self.y * &z_inv).to_bytes();
        y[31] |= (x[0] & 1) << 7;
        y
    }

    /// RFC 8032 §5.1.4: P = P + Q (the unified addition formula, with k = 2d).
    #[inline(never)]
    pub(crate) fn add(&mut self, q: &Point) {
        let mut a = &self.y - &self.x;
        a *= &(&q.y - &q.x);
        let mut b = &self.y + &self.x;
        b *= &(&q.y + &q.x);
        let mut c = &self.t * &FieldElement::D2;
        c *= &q.t;
        let mut d = &self.z * &q.z;
        d += &d.clone();
        // E = B - A and H = B + A in `b` and `a`; F = D - C and G = D + C in `c` and `d`.
        let e = &b - &a;
        a += &b;
        let f = &d - &c;
        d += &c;
        self.finish(&e, &f, &d, &a);
    }

    /// The common last step: X3 = E·F, Y3 = G·H, T3 = E·H, Z3 = F·G.
    fn finish(&mut self, e: &FieldElement, f: &FieldElement, g: &FieldElement, h: &FieldElement) {
        self.x = e * f;
        self.y = g * h;
        self.t = e * h;
        self.z = f * g;
    }

    /// P = 2P as P + P: the addition formula is complete (RFC 8032 §5.1.4 gives a cheaper
    /// doubling; one formula is less flash).
    #[inline(never)]
    fn double(&mut self) {
        let p = *self;
        self.add(&p);
    }

    /// P = [4]P, and whether x = 0 there: [4]P is then the identity or (0, -1), so P's order
    /// divides 8 (P is of small order: the eight-torsion, which dalek's `verify_strict`
    /// refuses as key and as R). Public data: variable-time.
    pub(crate) fn quadruple_is_on_y_axis(&mut self) -> bool {
        self.double();
        self.double();
        self.x.to_bytes() == [0; 32]
    }

    /// `acc` = [s]B + [k]P for scalars below L < 2^253 (little-endian): one double-and-add
    /// from bit 252 down, adding B and P where their bits are set (Straus/Shamir: one chain
    /// of doublings for both products). Variable-time: it branches on the scalars' bits, so
    /// it is only for public scalars and points (signature verification).
    pub(crate) fn double_scalar_mul(acc: &mut Point, s: &[u8; 32], k: &[u8; 32], p: &Point) {
        *acc = Point::IDENTITY;
        for bit in (0..253).rev() {
            acc.double();
            if (s[bit / 8] >> (bit % 8)) & 1 == 1 {
                acc.add(&Point::BASE);
            }
            if (k[bit / 8] >> (bit % 8)) & 1 == 1 {
                acc.add(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::edwards::CompressedEdwardsY;
    use curve25519_dalek::Scalar;

    fn scalar(seed: u8) -> [u8; 32] {
        // Below 2^252 < L, so dalek's canonical scalar is the same integer.
        let mut k: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(seed) ^ seed);
        k[31] &= 0x0f;
        k
    }

    #[test]
    fn base_encodes_as_rfc8032() {
        let base = curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
        assert_eq!(Point::BASE.encode(), base.compress().to_bytes());
        // The precomputed T is x·y.
        let b = Point::BASE;
        assert_eq!(b.t.to_bytes(), (&b.x * &b.y).to_bytes());
        let mut one = [0u8; 32];
        one[0] = 1;
        assert_eq!(Point::IDENTITY.encode(), one);
    }

    #[test]
    fn double_scalar_mul_matches_dalek() {
        let base = curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
        for seed in 1u8..6 {
            let s = scalar(seed);
            let k = scalar(seed + 17);
            let (dalek_s, dalek_k) =
                (Scalar::from_bytes_mod_order(s), Scalar::from_bytes_mod_order(k));
            // A decoded from [s]B's encoding, then [s]B + [k]A, [s]B alone and [k]A alone.
            let a_dalek = base * dalek_s;
            let a_bytes = a_dalek.compress().to_bytes();
            let mut a = Point::IDENTITY;
            assert!(Point::decode(&a_bytes, &mut a));
            assert_eq!(a.encode(), a_bytes);
            let mut acc = a;
            Point::double_scalar_mul(&mut acc, &s, &k, &a);
            let want = base * dalek_s + a_dalek * dalek_k;
            assert_eq!(acc.encode(), want.compress().to_bytes(), "[s]B + [k]A, seed {seed}");
            Point::double_scalar_mul(&mut acc, &s, &[0; 32], &a);
            assert_eq!(acc.encode(), a_bytes, "[s]B, seed {seed}");
            Point::double_scalar_mul(&mut acc, &[0; 32], &k, &a);
            assert_eq!(acc.encode(), (a_dalek * dalek_k).compress().to_bytes(), "[k]A");
            // The top bit a scalar below L can have (bit 252).
            let mut top = [0u8; 32];
            top[31] = 0x10;
            Point::double_scalar_mul(&mut acc, &top, &top, &a);
            let t = Scalar::from_bytes_mod_order(top);
            assert_eq!(acc.encode(), (base * t + a_dalek * t).compress().to_bytes());
            // -A from A's encoding with the sign bit flipped.
            let mut flipped = a_bytes;
            flipped[31] ^= 0x80;
            let mut neg = a;
            assert!(Point::decode(&flipped, &mut neg));
            assert_eq!(neg.encode(), (-a_dalek).compress().to_bytes());
        }
    }

    #[test]
    fn small_order_is_the_eight_torsion() {
        let base = curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
        for t in curve25519_dalek::constants::EIGHT_TORSION {
            let mut p = Point::IDENTITY;
            // (0, -1)'s and the identity's negatives encode with the sign bit set: refused
            // by decoding, so only the canonical encodings are decoded here.
            assert!(Point::decode(&t.compress().to_bytes(), &mut p), "{t:?}");
            assert!(p.quadruple_is_on_y_axis(), "{t:?}");
            // A point of order 8L, 4L, 2L or L is not of small order.
            let mixed = (base * Scalar::from(3u8) + t).compress().to_bytes();
            assert!(Point::decode(&mixed, &mut p));
            assert!(!p.quadruple_is_on_y_axis(), "{t:?}");
        }
    }

    #[test]
    fn decoding_refuses_what_dalek_refuses() {
        // y values whose x² has no root, and x = 0 with the sign bit set.
        let mut refused = 0;
        for y0 in 0u8..64 {
            let mut bytes = [0u8; 32];
            bytes[0] = y0;
            for sign in [0u8, 0x80] {
                bytes[31] = sign;
                let mut p = Point::IDENTITY;
                let ours = Point::decode(&bytes, &mut p).then(|| p.encode());
                // dalek decodes x = 0 with the sign bit set (as x = 0), which RFC 8032
                // §5.1.3 refuses: compare where dalek's point encodes back to the input.
                let theirs = CompressedEdwardsY(bytes)
                    .decompress()
                    .map(|p| p.compress().to_bytes())
                    .filter(|e| *e == bytes);
                assert_eq!(ours, theirs, "y0 {y0} sign {sign}");
                refused += usize::from(ours.is_none());
            }
        }
        assert!(refused > 10);
    }
}
