//! Where request ids, owner ids and the client id come from.
//!
//! The machine never draws randomness itself: the driver hands it an [`IdSource`]. The simulator
//! gives it a seeded one, so a run replays exactly; the async client seeds a [`SeededIds`] from the
//! operating system once, at construction.

use crate::seed::SplitMix64;

/// A source of 128-bit ids, owned by the machine.
pub trait IdSource: Send + 'static {
    /// The next id.
    fn next_u128(&mut self) -> u128;
}

/// A deterministic id source: SplitMix64 over a 64-bit seed, two draws per id.
///
/// Not cryptographic. Ids only need to be unique across clients and requests, which 128 bits drawn
/// from a seed that differs per client give with overwhelming probability.
#[derive(Clone, Debug)]
pub struct SeededIds {
    draws: SplitMix64,
}

impl SeededIds {
    /// A source that replays the same ids for the same seed.
    pub fn new(seed: u64) -> SeededIds {
        SeededIds {
            draws: SplitMix64::new(seed),
        }
    }
}

impl IdSource for SeededIds {
    fn next_u128(&mut self) -> u128 {
        (u128::from(self.draws.next_u64()) << 64) | u128::from(self.draws.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_ids() {
        let mut a = SeededIds::new(7);
        let mut b = SeededIds::new(7);
        let first = a.next_u128();
        assert_eq!(first, b.next_u128());
        assert_ne!(first, a.next_u128());
    }

    #[test]
    fn ids_are_the_ones_seeded_ids_always_drew() {
        // Fixed before the generator moved to `seed.rs`: a seed's ids must never change.
        let mut ids = SeededIds::new(7);
        assert_eq!(ids.next_u128(), 0x63cb_e1e4_5932_0dd7_044c_3cd7_f43c_661c);
        assert_eq!(ids.next_u128(), 0xe698_4080_bab1_2a02_953a_eb70_673e_29cb);
        assert_eq!(
            SeededIds::new(0).next_u128(),
            0xe220_a839_7b1d_cdaf_6e78_9e6a_a1b9_65f4
        );
    }
}
