//! The fake's seeded generator: SplitMix64, as a sequence and as a keyed pure draw.
//!
//! Every random choice of the fake and of the simulator on it comes from a seed, so that a run
//! replays exactly: the fault plan (which command a `CHANCE` fault hits), replicas' lag, a
//! cluster's and a Sentinel's ids, the simulator's latencies and losses. They need two shapes of
//! the same generator. Ids are drawn one after another from a sequence
//! ([`SplitMix64`]). A fault plan needs a draw that depends only on *what* it is for, never on how
//! many draws came before: [`Seed::draw`] is a pure function of (seed, stream, key, sequence
//! number), so removing one fault or one client while shrinking a failing case leaves every other
//! draw as it was. The simulator's draws (latencies, losses, work times) are keyed the same way but
//! combined by an older formula, [`Seed::blend`], kept because every stored simulation case replays
//! from its values.
//!
//! Not cryptographic: SplitMix64 spreads bits well and is fast, which is all ids that need only be
//! unique and faults that need only be reproducible ask of it.
//!
//! It lives here, not in the lock's crate, because the fake depends on no lock crate: the lock
//! keeps only the sequence it draws its ids from (`lock_core::seed`), which yields the same
//! numbers as [`SplitMix64`] here for the same seed.

/// The golden-ratio increment SplitMix64 adds per step (2^64 / φ, odd).
pub const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// What [`Seed::blend`] multiplies a key by before folding it in (odd, so no key is lost).
const BLEND_KEY: u64 = 0xc2b2_ae3d_27d4_eb4f;

/// What [`Seed::blend`] multiplies a sequence number by before folding it in (odd).
const BLEND_SEQ: u64 = 0x1656_67b1_9e37_79f9;

/// SplitMix64's finaliser: 64 bits in, 64 well-spread bits out (a bijection).
pub fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One SplitMix64 output for the state `z`: the step ([`GAMMA`] added), then the finaliser.
pub fn mix(z: u64) -> u64 {
    finalize(z.wrapping_add(GAMMA))
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

/// A root seed, and the keyed draws that come from it.
///
/// A draw is named by a *stream* (what kind of choice it is: a loss, a latency, a fault), a *key*
/// (whose: a node, a client) and a *sequence number* (which of theirs), so draws of one kind never
/// shift another's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seed(pub u64);

impl Seed {
    /// The 64 uniform bits for (stream, key, seq): a pure function of them and the seed, each
    /// folded in by one SplitMix64 output.
    pub fn draw(self, stream: u64, key: u64, seq: u64) -> u64 {
        let mut x = mix(self.0);
        x = mix(x ^ stream);
        x = mix(x ^ key);
        mix(x ^ seq)
    }

    /// The draw for (stream, key, seq) as a number in `[0, 1)`, from its top 53 bits.
    pub fn unit(self, stream: u64, key: u64, seq: u64) -> f64 {
        (self.draw(stream, key, seq) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether the draw for (stream, key, seq) falls under probability `p` (never for `p <= 0`,
    /// always for `p >= 1`).
    pub fn chance(self, stream: u64, key: u64, seq: u64, p: f64) -> bool {
        self.unit(stream, key, seq) < p
    }

    /// The draw for (stream, key, seq) in `lo..=hi` (`lo` when the range is empty).
    pub fn range(self, stream: u64, key: u64, seq: u64, lo: u64, hi: u64) -> u64 {
        within(lo, hi, || self.draw(stream, key, seq))
    }

    /// The 64 bits for (stream, key, seq) by the simulator's formula: each input multiplied by
    /// its own odd constant (the stream by [`GAMMA`]), all XORed into the seed, then one
    /// [`finalize`].
    ///
    /// Cheaper than [`draw`](Seed::draw) (one finaliser rather than four) and as pure, but less
    /// thoroughly mixed: inputs whose products cancel each other's bits give the same value. It
    /// stays because the simulator's stored cases (`SIM_CASE=` lines, proptest regressions) replay
    /// only with these exact values; new uses take `draw`.
    pub fn blend(self, stream: u64, key: u64, seq: u64) -> u64 {
        finalize(
            self.0
                ^ stream.wrapping_mul(GAMMA)
                ^ key.wrapping_mul(BLEND_KEY)
                ^ seq.wrapping_mul(BLEND_SEQ),
        )
    }

    /// The [`blend`](Seed::blend) for (stream, key, seq) in `lo..=hi` (`lo` when the range is
    /// empty), as [`range`](Seed::range) takes it from `draw`.
    pub fn blend_range(self, stream: u64, key: u64, seq: u64, lo: u64, hi: u64) -> u64 {
        within(lo, hi, || self.blend(stream, key, seq))
    }

    /// The sequence of draws that starts from this seed.
    pub fn sequence(self) -> SplitMix64 {
        SplitMix64::new(self.0)
    }
}

/// `bits()` brought into `lo..=hi` by remainder; `lo` for an empty range (without drawing), the
/// bits themselves for the full range.
fn within(lo: u64, hi: u64, bits: impl FnOnce() -> u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    match (hi - lo).checked_add(1) {
        Some(count) => lo + bits() % count,
        None => bits(),
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
        let mut seven = Seed(7).sequence();
        assert_eq!(
            [seven.next_u64(), seven.next_u64()],
            [0x63cb_e1e4_5932_0dd7, 0x044c_3cd7_f43c_661c]
        );
    }

    #[test]
    fn keyed_draws_are_pure_and_every_input_counts() {
        assert_eq!(Seed(0).draw(1, 0, 0), 0xd1c0_2706_8798_4b37);
        assert_eq!(Seed(24_301).draw(2, 7, 41), 0xf4f6_6f7f_0955_bdbb);
        assert_eq!(Seed(1).draw(2, 3, 4), Seed(1).draw(2, 3, 4));
        let base = Seed(1).draw(2, 3, 4);
        for other in [
            Seed(2).draw(2, 3, 4),
            Seed(1).draw(1, 3, 4),
            Seed(1).draw(2, 4, 4),
            Seed(1).draw(2, 3, 5),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn chance_and_range_follow_the_draw() {
        let hits = (0..10_000)
            .filter(|&s| Seed(9).chance(1, 1, s, 0.25))
            .count();
        assert_eq!(hits, 2_584);
        assert!((0..100).all(|s| !Seed(9).chance(1, 1, s, 0.0)));
        assert!((0..100).all(|s| Seed(9).chance(1, 1, s, 1.0)));
        for seq in 0..100 {
            let v = Seed(9).range(3, 0, seq, 500, 2_000);
            assert!((500..=2_000).contains(&v));
        }
        assert_eq!(Seed(9).range(3, 0, 0, 5, 5), 5);
        assert_eq!(Seed(9).range(3, 0, 0, 0, u64::MAX), Seed(9).draw(3, 0, 0));
    }

    #[test]
    fn blend_keeps_the_simulators_values() {
        // Pinned from the simulator's own generator before it moved here: stored cases replay
        // only if these never change.
        assert_eq!(Seed(0).blend(1, 0, 0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(Seed(1).blend(4, 0, 0), 0x71c1_8690_ee42_c90b);
        assert_eq!(
            Seed(9_213_345_741_490_988_747).blend(1, 1, 7),
            0x2daa_0360_7538_8bb2
        );
        assert_eq!(Seed(42).blend(3, 2, 1), 0xeabb_7232_9b29_8d7a);
        assert_eq!(Seed(9).blend_range(3, 0, 5, 500, 2_000), 1_890);
        assert_eq!(Seed(9).blend_range(3, 0, 5, 7, 7), 7);
        assert_eq!(
            Seed(9).blend_range(3, 0, 5, 0, u64::MAX),
            Seed(9).blend(3, 0, 5)
        );
        // Seed 0's first blend on stream 1 is SplitMix64's first output: one step, one finaliser.
        assert_eq!(Seed(0).blend(1, 0, 0), SplitMix64::new(0).next_u64());
    }
}
