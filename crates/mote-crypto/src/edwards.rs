//! The edwards25519 group operations Ed25519 verification needs on the device (RFC 8032
//! §5.1.2-§5.1.4), on salty's field arithmetic (Cortex-M4 assembly).
//!
//! salty's own point layer builds every intermediate value of an addition as a new field
//! element and moves whole points through its scalar multiplication: 1 KB of stack for
//! [k]A, at the bottom of the handshake's deepest chain (the server's CertificateVerify,
//! issue 8). Here points are updated in place and a multiplication holds one accumulator.
//! Verification has only public inputs (S, k, A, R), so the multiplication may branch on
//! the scalar's bits. Checked against curve25519-dalek below and by `ed25519_tests`.

use salty::{FieldElement, FieldImplementation as _};

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

    /// RFC 8032 §5.1: the base point B.
    pub(crate) fn base() -> Point {
        let x = FieldElement::EDWARDS_BASEPOINT_X;
        let y = FieldElement::EDWARDS_BASEPOINT_Y;
        Point { t: &x * &y, x, y, z: FieldElement::ONE }
    }

    /// RFC 8032 §5.1.3: decodes a point into `out`; false (and `out` unspecified) if it is
    /// not on the curve, or x = 0 with the sign bit set. The caller has checked that y is
    /// canonical (y < p).
    // Out of line, as `add` and `double`: each one's field temporaries in its own frame,
    // not summed in a caller's; the point is written where the caller keeps it.
    #[inline(never)]
    pub(crate) fn decode(bytes: &[u8; 32], out: &mut Point) -> bool {
        let sign = bytes[31] >> 7;
        let mut y_bytes = *bytes;
        y_bytes[31] &= 0x7f;
        out.y = FieldElement::from_bytes_unchecked(&y_bytes);
        out.z = FieldElement::ONE;
        // Step 2: x² = u / v with u = y² - 1, v = d·y² + 1.
        let mut u = out.y.squared();
        let mut v = &u * &FieldElement::D;
        v += &FieldElement::ONE;
        u -= &FieldElement::ONE;
        // Step 3: the candidate root x = u·v³·(u·v⁷)^((p-5)/8), built in `out.x`.
        out.x = v.squared();
        out.x *= &v; // v³
        out.t = out.x.squared();
        out.t *= &v;
        out.t *= &u; // u·v⁷
        out.x *= &u; // u·v³
        out.t = out.t.pow2523();
        out.x *= &out.t;
        // v·x² is u (x is the root), -u (x·sqrt(-1) is), or neither (no point).
        out.t = out.x.squared();
        out.t *= &v;
        let vx2 = out.t.to_bytes();
        if vx2 == (-&u).to_bytes() {
            out.x *= &FieldElement::I;
        } else if vx2 != u.to_bytes() {
            return false;
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
        let z_inv = self.z.inverse();
        let x = (&self.x * &z_inv).to_bytes();
        let mut y = (&self.y * &z_inv).to_bytes();
        y[31] |= (x[0] & 1) << 7;
        y
    }

    /// -P = (-x, y).
    pub(crate) fn negate(&mut self) {
        self.x = -&self.x;
        self.t = -&self.t;
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

    /// RFC 8032 §5.1.4: P = 2P (the doubling formula).
    #[inline(never)]
    pub(crate) fn double(&mut self) {
        let a = self.x.squared();
        let b = self.y.squared();
        let z2 = self.z.squared();
        let c = &z2 + &z2;
        let h = &a + &b;
        let e = &h - &(&self.x + &self.y).squared();
        let g = &a - &b;
        let f = &c + &g;
        self.finish(&e, &f, &g, &h);
    }

    /// The common last step: X3 = E·F, Y3 = G·H, T3 = E·H, Z3 = F·G.
    fn finish(&mut self, e: &FieldElement, f: &FieldElement, g: &FieldElement, h: &FieldElement) {
        self.x = e * f;
        self.y = g * h;
        self.t = e * h;
        self.z = f * g;
    }

    /// `acc` = `acc` + [k]P, k a 256-bit little-endian scalar: double-and-add from the top
    /// bit. Variable-time: only for public scalars and points (verification).
    pub(crate) fn add_multiple(acc: &mut Point, k: &[u8; 32], p: &Point) {
        let mut sum = Point::IDENTITY;
        for bit in (0..256).rev() {
            sum.double();
            if (k[bit / 8] >> (bit % 8)) & 1 == 1 {
                sum.add(p);
            }
        }
        acc.add(&sum);
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
        assert_eq!(
            Point::base().encode(),
            curve25519_dalek::constants::ED25519_BASEPOINT_POINT.compress().to_bytes()
        );
        let mut one = [0u8; 32];
        one[0] = 1;
        assert_eq!(Point::IDENTITY.encode(), one);
    }

    #[test]
    fn multiples_match_dalek() {
        for seed in 1u8..6 {
            let k = scalar(seed);
            let dalek_k = Scalar::from_bytes_mod_order(k);
            // [k]B
            let mut acc = Point::IDENTITY;
            Point::add_multiple(&mut acc, &k, &Point::base());
            let expected = curve25519_dalek::constants::ED25519_BASEPOINT_POINT * dalek_k;
            assert_eq!(acc.encode(), expected.compress().to_bytes(), "[k]B, seed {seed}");
            // [k]A for a decoded A, added to an accumulator, and negated.
            let a_bytes = expected.compress().to_bytes();
            let mut a = Point::IDENTITY;
            assert!(Point::decode(&a_bytes, &mut a));
            assert_eq!(a.encode(), a_bytes);
            let k2 = scalar(seed + 17);
            let mut acc = a;
            Point::add_multiple(&mut acc, &k2, &a);
            let a_dalek = expected;
            let want = a_dalek + a_dalek * Scalar::from_bytes_mod_order(k2);
            assert_eq!(acc.encode(), want.compress().to_bytes(), "A + [k]A, seed {seed}");
            let mut neg = a;
            neg.negate();
            assert_eq!(neg.encode(), (-a_dalek).compress().to_bytes());
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
