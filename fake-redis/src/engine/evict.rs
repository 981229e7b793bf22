//! `maxmemory`: the eviction Redis runs before a command when the memory estimate is over the
//! limit, by Redis 7.0's eight policies, and the access-frequency counter its LFU policies read.
//!
//! The memory is the fake's estimate (`engine/memory.rs`), kept as a running total by each
//! database. Before a command (`cmd/dispatch.rs`), while the total is over `maxmemory`, one key
//! is chosen and evicted, and again, until the total is under or nothing can go; a policy that
//! cannot free enough (`noeviction`, or `volatile-*` with no key left that has a TTL) leaves the
//! server out of memory, and the commands that may grow it are refused with `-OOM`.
//!
//! The choice is Redis's (`evict.c`), written anew:
//!
//! - `allkeys-random` and `volatile-random` take a random key of the next database in turn;
//! - the others sample `maxmemory-samples` keys of every database (of its keys with a TTL for the
//!   `volatile-*` ones) into a pool of the 16 best candidates kept across evictions, ranked by
//!   idle time (LRU), by how rarely the key is used (LFU: 255 less its counter), or by how soon
//!   its TTL ends (`volatile-ttl`), and evict the best one still present.
//!
//! Under an LFU policy a key's 24 bits of access history hold its last decrement time in minutes
//! (16 bits) and a logarithmic counter (8 bits): each access raises the counter with probability
//! `1 / ((counter - 5) * lfu-log-factor + 1)`, and it falls by one for every `lfu-decay-time`
//! minutes without access. Every random draw (the samples, the random policies, the counter's
//! coin) comes from the engine's seed, and the table's buckets from its fixed hash and its
//! history, so a run replays its evictions exactly.
//!
//! An evicted key goes through the keyspace's one removal path for keys the server drops on its
//! own (`Db::evict`, beside expiry's): watchers, client tracking's log, the replicas' stream and
//! the `evicted` keyspace event all follow it there, and `INFO`'s `evicted_keys` counts it.

use super::Engine;
use super::db::Sample;
use crate::seed::SplitMix64;
use bytes::Bytes;

/// Redis's `LFU_INIT_VAL`: the counter of a new key, so that it is not evicted at once.
pub(crate) const LFU_INIT_VAL: u32 = 5;

/// Redis's `EVPOOL_SIZE`.
const POOL_SIZE: usize = 16;

/// `maxmemory-policy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Policy {
    #[default]
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// The policy `CONFIG SET maxmemory-policy` names (checked against the list already).
    pub(crate) fn parse(name: &str) -> Policy {
        match name {
            "allkeys-lru" => Policy::AllKeysLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// Whether it tracks access frequency rather than access time.
    pub(crate) fn lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    fn all_keys(self) -> bool {
        matches!(
            self,
            Policy::AllKeysLru | Policy::AllKeysLfu | Policy::AllKeysRandom
        )
    }

    fn random(self) -> bool {
        matches!(self, Policy::AllKeysRandom | Policy::VolatileRandom)
    }
}

/// The LFU counter's parameters and its coin, for one database (`engine/db.rs` updates a key's
/// counter on each access while an LFU policy is set).
pub(crate) struct Lfu {
    log_factor: u32,
    decay_time: u32,
    coin: SplitMix64,
}

impl Lfu {
    /// A counter with `lfu-log-factor` and `lfu-decay-time`, its coin seeded by `seed`.
    pub(crate) fn new(log_factor: u32, decay_time: u32, seed: u64) -> Lfu {
        Lfu {
            log_factor,
            decay_time,
            coin: SplitMix64::new(seed),
        }
    }

    /// The 24 bits of a key accessed at `now` whose bits were `bits` (Redis's `updateLFU`):
    /// decayed, then raised by chance.
    #[inline]
    pub(crate) fn touched(&mut self, bits: u32, now: i64) -> u32 {
        let counter = lfu_decayed(bits, now, self.decay_time);
        (minutes(now) << 8) | self.log_incr(counter)
    }

    /// Redis's `LFULogIncr`: the higher the counter, the less likely it grows.
    fn log_incr(&mut self, counter: u32) -> u32 {
        if counter >= 255 {
            return 255;
        }
        let r = (self.coin.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
        let p = 1.0 / (base * f64::from(self.log_factor) + 1.0);
        if r < p { counter + 1 } else { counter }
    }
}

/// Redis's `LFUGetTimeInMinutes`: unix minutes, wrapped to 16 bits.
fn minutes(now: i64) -> u32 {
    (now.div_euclid(60_000) as u32) & 0xffff
}

/// The 24 bits of a key created at `now` under an LFU policy.
pub(crate) fn lfu_init(now: i64) -> u32 {
    lfu_bits(now, LFU_INIT_VAL)
}

/// The 24 bits of a counter of `freq` (at most 255) last decremented at `now` (`RESTORE … FREQ`).
pub(crate) fn lfu_bits(now: i64, freq: u32) -> u32 {
    (minutes(now) << 8) | freq.min(255)
}

/// Redis's `LFUDecrAndReturn`: the counter in `bits`, less one for every `decay_time` minutes
/// since its last decrement (none when `decay_time` is 0). What `OBJECT FREQ` answers.
pub(crate) fn lfu_decayed(bits: u32, now: i64, decay_time: u32) -> u32 {
    let (last, counter) = ((bits >> 8) & 0xffff, bits & 0xff);
    let now = minutes(now);
    let elapsed = if now >= last {
        now - last
    } else {
        0xffff - last + now
    };
    match decay_time {
        0 => counter,
        d => counter.saturating_sub(elapsed / d),
    }
}

/// Redis's `estimateObjectIdleTime`, in seconds: the LRU clock wraps at 24 bits.
fn idle_seconds(accessed: u32, now: i64) -> u64 {
    let clock = super::db::lru_clock(now);
    let idle = if clock >= accessed {
        clock - accessed
    } else {
        clock + (super::db::LRU_CLOCK_MAX - accessed)
    };
    u64::from(idle)
}

/// A key in the eviction pool: the higher its score, the sooner it goes.
#[derive(Clone, Debug)]
struct Candidate {
    score: u64,
    db: usize,
    key: Bytes,
}

/// The `maxmemory` settings and the eviction pool, kept across commands as Redis keeps its pool.
#[derive(Debug)]
pub(crate) struct Evictor {
    maxmemory: u64,
    policy: Policy,
    samples: usize,
    log_factor: u32,
    decay_time: u32,
    /// Candidates in ascending score, at most [`POOL_SIZE`].
    pool: Vec<Candidate>,
    /// The database the random policies draw from next.
    next_db: usize,
    /// Whether the last command found the server out of memory (Redis's
    /// `pre_command_oom_state`): a script's first write that may grow memory is refused then.
    oom: bool,
}

impl Default for Evictor {
    fn default() -> Evictor {
        // Redis 7.0's defaults.
        Evictor {
            maxmemory: 0,
            policy: Policy::NoEviction,
            samples: 5,
            log_factor: 10,
            decay_time: 1,
            pool: Vec::new(),
            next_db: 0,
            oom: false,
        }
    }
}

/// What [`Evictor::insert`] does with a key's score: Redis's pool insertion.
fn pool_insert(pool: &mut Vec<Candidate>, candidate: Candidate) {
    let k = pool.partition_point(|c| c.score < candidate.score);
    if pool.len() < POOL_SIZE {
        pool.insert(k, candidate);
    } else if k > 0 {
        // Full: the worst candidate makes room, unless the new one is worse than all.
        pool.remove(0);
        pool.insert(k - 1, candidate);
    }
}

impl Engine {
    /// `maxmemory` in bytes (0: no limit).
    pub(crate) fn maxmemory(&self) -> u64 {
        self.evict.maxmemory
    }

    /// `maxmemory-policy`.
    pub(crate) fn maxmemory_policy(&self) -> Policy {
        self.evict.policy
    }

    /// Whether a limit is set: the one test a command pays when none is.
    #[inline]
    pub(crate) fn evicts(&self) -> bool {
        self.evict.maxmemory != 0
    }

    /// Whether the check before this command found the server out of memory.
    #[inline]
    pub(crate) fn out_of_memory(&self) -> bool {
        self.evict.maxmemory != 0 && self.evict.oom
    }

    /// `lfu-decay-time`, for `OBJECT FREQ`.
    pub(crate) fn lfu_decay_time(&self) -> u32 {
        self.evict.decay_time
    }

    /// Follows `CONFIG SET` of `maxmemory`, `maxmemory-policy`, `maxmemory-samples`,
    /// `lfu-log-factor` or `lfu-decay-time` (already checked). Setting a limit evicts at once
    /// what it must, as Redis's does.
    pub(crate) fn set_eviction_param(&mut self, name: &str, value: &str, now: i64) {
        let e = &mut self.evict;
        match name {
            "maxmemory" => e.maxmemory = value.parse().unwrap_or(0),
            "maxmemory-policy" => {
                e.policy = Policy::parse(value);
                e.pool.clear();
            }
            "maxmemory-samples" => e.samples = value.parse().unwrap_or(5),
            "lfu-log-factor" => e.log_factor = value.parse().unwrap_or(10),
            "lfu-decay-time" => e.decay_time = value.parse().unwrap_or(1),
            _ => return,
        }
        self.arm_lfu();
        if name == "maxmemory" && self.evicts() {
            self.perform_evictions(now);
        }
    }

    /// Gives each database its LFU counter while an LFU policy is set, none otherwise.
    fn arm_lfu(&mut self) {
        let (lfu, log_factor, decay) = (
            self.evict.policy.lfu(),
            self.evict.log_factor,
            self.evict.decay_time,
        );
        let seed = self.config.seed;
        for (i, db) in self.dbs.iter_mut().enumerate() {
            let seed = crate::seed::mix(seed ^ 0x6c66_7563_6f69_6e00 ^ i as u64);
            db.set_lfu(lfu.then(|| Lfu::new(log_factor, decay, seed)));
        }
    }

    /// `used_memory`: a started server's memory plus every database's estimate.
    pub(crate) fn used_memory(&mut self) -> u64 {
        let keep = self.evicts();
        let dbs: u64 = self.dbs.iter_mut().map(|db| db.used_memory(keep)).sum();
        super::memory::STARTUP + dbs
    }

    /// Redis's `performEvictions`, before a command: evicts keys while the estimate is over
    /// `maxmemory`. Whether memory is within the limit after (false: out of memory). A replica
    /// never evicts (Redis's `replica-ignore-maxmemory`); it takes its primary's deletions.
    pub(crate) fn perform_evictions(&mut self, now: i64) -> bool {
        let limit = self.evict.maxmemory;
        let ok = limit == 0 || self.replication.is_replica() || self.evict_until(limit, now);
        self.evict.oom = !ok;
        ok
    }

    /// Evicts one key at a time until `used_memory` is at most `limit`: whether it got there.
    /// Each round evicts a key or stops, so the rounds are at most the keys there are.
    fn evict_until(&mut self, limit: u64, now: i64) -> bool {
        while self.used_memory() > limit {
            if self.evict.policy == Policy::NoEviction {
                return false;
            }
            let Some((db, key)) = self.choose_victim(now) else {
                return false;
            };
            self.dbs[db].evict(&key, now);
        }
        true
    }

    /// The key the policy evicts next, and its database; None when there is none to evict.
    fn choose_victim(&mut self, now: i64) -> Option<(usize, Bytes)> {
        let policy = self.evict.policy;
        if policy.random() {
            return self.random_victim(policy.all_keys());
        }
        self.fill_pool(now);
        let volatile = !policy.all_keys();
        while let Some(best) = self.evict.pool.pop() {
            if self.dbs[best.db].holds(&best.key, volatile) {
                return Some((best.db, best.key));
            }
        }
        None
    }

    /// `allkeys-random`, `volatile-random`: a random key of the next database that has one.
    fn random_victim(&mut self, all: bool) -> Option<(usize, Bytes)> {
        for _ in 0..self.dbs.len() {
            let db = self.evict.next_db;
            self.evict.next_db = (db + 1) % self.dbs.len();
            let Engine { dbs, rng, .. } = self;
            let key = match all {
                true => dbs[db].random_key(|| super::xorshift(rng)),
                false => dbs[db].random_volatile_key(|| super::xorshift(rng)),
            };
            if let Some(key) = key {
                return Some((db, key));
            }
        }
        None
    }

    /// Redis's `evictionPoolPopulate` over every database: samples each and ranks the samples
    /// into the pool.
    fn fill_pool(&mut self, now: i64) {
        let (policy, samples) = (self.evict.policy, self.evict.samples);
        let decay = self.evict.decay_time;
        for db in 0..self.dbs.len() {
            let Engine { dbs, rng, .. } = self;
            let drawn = dbs[db].sample(policy.all_keys(), samples, || super::xorshift(rng));
            for Sample {
                key,
                accessed,
                deadline,
            } in drawn
            {
                let score = match policy {
                    Policy::VolatileTtl => u64::MAX - deadline.unwrap_or(i64::MAX).max(0) as u64,
                    p if p.lfu() => 255 - u64::from(lfu_decayed(accessed, now, decay)),
                    _ => idle_seconds(accessed, now),
                };
                pool_insert(&mut self.evict.pool, Candidate { score, db, key });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(score: u64) -> Candidate {
        Candidate {
            score,
            db: 0,
            key: Bytes::from(score.to_string()),
        }
    }

    #[test]
    fn the_pool_keeps_the_sixteen_best_in_ascending_order() {
        let mut pool = Vec::new();
        for s in [5, 1, 9, 3] {
            pool_insert(&mut pool, candidate(s));
        }
        let scores: Vec<u64> = pool.iter().map(|c| c.score).collect();
        assert_eq!(scores, [1, 3, 5, 9]);
        for s in 10..30 {
            pool_insert(&mut pool, candidate(s));
        }
        assert_eq!(pool.len(), POOL_SIZE);
        assert_eq!(pool.last().map(|c| c.score), Some(29));
        // Worse than every candidate of a full pool: left out.
        pool_insert(&mut pool, candidate(0));
        assert!(pool.iter().all(|c| c.score != 0));
    }

    #[test]
    fn the_lfu_counter_grows_logarithmically_and_decays_by_the_minute() {
        let mut lfu = Lfu::new(10, 1, 7);
        let mut bits = lfu_init(0);
        assert_eq!(lfu_decayed(bits, 0, 1), LFU_INIT_VAL);
        for _ in 0..1000 {
            bits = lfu.touched(bits, 0);
        }
        let counter = lfu_decayed(bits, 0, 1);
        // Redis's table for lfu-log-factor 10: about 18 after 1,000 hits.
        assert!((10..40).contains(&counter), "{counter}");
        // Three minutes later, three less.
        assert_eq!(lfu_decayed(bits, 180_000, 1), counter - 3);
        assert_eq!(lfu_decayed(bits, 180_000, 0), counter);
    }
}
