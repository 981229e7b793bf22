//! `math.random`'s generator: Redis's `rand48`, so a script draws what Redis 7.0 draws.
//!
//! Redis replaces Lua's `math.random` with the 48-bit linear congruential generator of `drand48`
//! (multiplier `0x5DEECE66D`, increment 11), starting from the same state in every server and
//! reseeded only by `math.randomseed`. It is not reseeded per script: the draws continue from
//! script to script until the server restarts. A fresh fake therefore gives the numbers a fresh
//! Redis gives, whatever the engine's seed, and a restart starts them over.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const MASK: u64 = (1 << 48) - 1;
/// `drand48`'s state before any seed: `0x1234ABCD330E`.
const INITIAL: u64 = 0x1234_abcd_330e;
/// `REDIS_LRAND48_MAX`.
const LRAND48_MAX: u64 = i32::MAX as u64;

/// The generator's state, shared by the Lua functions that draw from it and kept across
/// `SCRIPT FLUSH` (Redis's lives outside the Lua state).
#[derive(Clone, Debug)]
pub(crate) struct Rand48(Arc<AtomicU64>);

impl Default for Rand48 {
    fn default() -> Rand48 {
        Rand48(Arc::new(AtomicU64::new(INITIAL)))
    }
}

impl Rand48 {
    /// `redisSrand48(seed)`.
    pub fn seed(&self, seed: i32) {
        self.0
            .store((u64::from(seed as u32) << 16) | 0x330e, Ordering::Relaxed);
    }

    /// `redisLrand48()`: the next 31 bits.
    fn next_u31(&self) -> u64 {
        let x = self.0.load(Ordering::Relaxed);
        let x = (x.wrapping_mul(0x5_deec_e66d).wrapping_add(0xb)) & MASK;
        self.0.store(x, Ordering::Relaxed);
        x >> 17
    }

    /// `math.random()`'s number in [0, 1).
    pub fn next_f64(&self) -> f64 {
        (self.next_u31() % LRAND48_MAX) as f64 / LRAND48_MAX as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_draws_are_redis_s() {
        // `math.randomseed(1) return tostring(math.random())` on redis-server 7.0.
        let r = Rand48::default();
        r.seed(1);
        assert_eq!(format!("{:.15}", r.next_f64()), "0.041630344484761");
    }
}
