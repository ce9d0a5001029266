//! Seeds: every random stream of a run (one per link direction, and any a caller asks for)
//! is derived from the run's single seed, so one number reproduces the whole run and
//! adding a link does not disturb the randomness of the others.

use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;

/// SplitMix64's finaliser: a bijective mix of 64 bits.
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of random stream `stream` of a run seeded with `seed`.
pub const fn derive(seed: u64, stream: u64) -> u64 {
    mix(mix(seed) ^ mix(stream.wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

/// The generator every simulator stream uses: Xoshiro256++, whose output for a given seed
/// is fixed by its specification (unlike `StdRng`'s, which may change between versions).
pub type SimRng = Xoshiro256PlusPlus;

/// A generator for stream `stream` of a run seeded with `seed`.
pub fn rng(seed: u64, stream: u64) -> SimRng {
    SimRng::seed_from_u64(derive(seed, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ() {
        assert_ne!(derive(1, 0), derive(1, 1));
        assert_ne!(derive(1, 0), derive(2, 0));
        assert_eq!(derive(7, 3), derive(7, 3));
    }
}
