//! Every random draw of a run, as a pure function of (seed, stream, client, sequence number).
//!
//! No draw depends on how many draws came before it in other streams or for other clients, so
//! shrinking a case (removing a client, a fault, a message) does not shift every later draw, and a
//! case replays exactly.

/// What a draw is for; each stream is independent of the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Stream {
    /// One-way latency of a message.
    Latency = 1,
    /// Whether a message is lost.
    Loss = 2,
    /// A client's work duration.
    Work = 3,
    /// A client's request and owner ids.
    Ids = 4,
}

/// A 64-bit draw for (seed, stream, client, seq): SplitMix64's finaliser over their mix.
pub fn draw(seed: u64, stream: Stream, client: u64, seq: u64) -> u64 {
    let mut z = seed
        ^ (stream as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ client.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ seq.wrapping_mul(0x1656_67b1_9e37_79f9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A draw in `lo..=hi`.
pub fn draw_range(seed: u64, stream: Stream, client: u64, seq: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    lo + draw(seed, stream, client, seq) % (hi - lo + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_pure_and_streams_independent() {
        assert_eq!(draw(1, Stream::Loss, 2, 3), draw(1, Stream::Loss, 2, 3));
        assert_ne!(draw(1, Stream::Loss, 2, 3), draw(1, Stream::Latency, 2, 3));
        assert_ne!(draw(1, Stream::Loss, 2, 3), draw(1, Stream::Loss, 3, 3));
        assert_ne!(draw(1, Stream::Loss, 2, 3), draw(2, Stream::Loss, 2, 3));
        for seq in 0..100 {
            let v = draw_range(9, Stream::Work, 0, seq, 500, 2_000);
            assert!((500..=2_000).contains(&v));
        }
    }
}
