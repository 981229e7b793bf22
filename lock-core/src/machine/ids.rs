//! Where request ids, owner ids and the client id come from.
//!
//! The machine never draws randomness itself: the driver hands it an [`IdSource`]. The simulator
//! gives it a seeded one, so a run replays exactly; the async client seeds a [`SeededIds`] from the
//! operating system once, at construction.

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
    state: u64,
}

impl SeededIds {
    /// A source that replays the same ids for the same seed.
    pub fn new(seed: u64) -> SeededIds {
        SeededIds { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl IdSource for SeededIds {
    fn next_u128(&mut self) -> u128 {
        (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64())
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
}
