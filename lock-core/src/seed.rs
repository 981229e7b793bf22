//! The lock's seeded sequence: SplitMix64, for request, owner and client ids.
//!
//! Ids only need to be unique, and a simulation needs them to replay from a seed, so the machine
//! draws them from this small sequence (`machine/ids.rs`); production seeds it from the
//! operating system once (`client/os_seed.rs`). The fake's fault plan and the simulator draw from
//! the keyed generator of the `fake-redis` crate (`fake_redis::seed`), which is the same SplitMix64:
//! the lock keeps its own copy of the sequence so that it depends on no fake.
//!
//! Not cryptographic: SplitMix64 spreads bits well and is fast, which is all ids ask of it.

/// The golden-ratio increment SplitMix64 adds per step (2^64 / φ, odd).
pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser: 64 bits in, 64 well-spread bits out (a bijection).
pub fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A sequence of SplitMix64 draws from a seed: the same seed, the same numbers, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The sequence that starts from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        finalize(self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64() {
        // The first outputs for seed 0 in the generator's reference implementation.
        let mut s = SplitMix64::new(0);
        assert_eq!(s.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(s.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut seven = SplitMix64::new(7);
        assert_eq!(
            [seven.next_u64(), seven.next_u64()],
            [0x63cb_e1e4_5932_0dd7, 0x044c_3cd7_f43c_661c]
        );
    }
}
