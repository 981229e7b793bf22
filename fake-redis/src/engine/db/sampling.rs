//! What eviction (`engine/evict.rs`) asks of one database: a few keys drawn from its table or
//! from its keys with a TTL, as Redis's `dictGetSomeKeys` draws them, and the removal of the key
//! it chose.
//!
//! Every draw comes from the generator eviction passes in, and the table's buckets are laid out
//! by a fixed hash and the keyspace's own history, so a seed replays the same draws.

use super::{Db, NOT_VOLATILE, expire_logs, shrink_if_sparse, unlist};
use bytes::Bytes;

/// A key eviction may choose: what its policy ranks it by.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    /// The key.
    pub key: Bytes,
    /// Its 24 bits of access history: the LRU clock of its last access, or its LFU counter.
    pub accessed: u32,
    /// Its deadline (unix ms), if it has one.
    pub deadline: Option<i64>,
}

/// A uniform draw below `n` (multiply-shift).
fn below(r: u64, n: usize) -> usize {
    ((u128::from(r) * n as u128) >> 64) as usize
}

impl Db {
    /// Up to `count` keys, from every key (`all`) or from the keys with a TTL: Redis's
    /// `dictGetSomeKeys`, which walks the table's buckets on from a random one (at most ten
    /// buckets per key wanted), or random keys of the TTL keys' list. A key may come twice.
    pub(crate) fn sample(
        &self,
        all: bool,
        count: usize,
        mut next_random: impl FnMut() -> u64,
    ) -> Vec<Sample> {
        let mut out = Vec::with_capacity(count);
        if all {
            let buckets = self.table.num_buckets();
            if self.table.is_empty() || buckets == 0 {
                return out;
            }
            let mut at = below(next_random(), buckets);
            for _ in 0..count.saturating_mul(10) {
                if out.len() == count {
                    break;
                }
                if let Some(slot) = self.table.get_bucket(at) {
                    out.push(Sample {
                        key: slot.key.to_bytes(),
                        accessed: slot.entry.accessed(),
                        deadline: slot.entry.deadline(),
                    });
                }
                at = (at + 1) % buckets;
            }
        } else {
            for _ in 0..count.min(self.volatile.len()) {
                let candidate = self.volatile[below(next_random(), self.volatile.len())];
                let slot = self.table.slot(candidate.slot);
                out.push(Sample {
                    key: slot.key.to_bytes(),
                    accessed: slot.entry.accessed(),
                    deadline: Some(candidate.deadline),
                });
            }
        }
        out
    }

    /// One random key with a TTL (`volatile-random`), or None when no key has one.
    pub(crate) fn random_volatile_key(&self, next_random: impl FnOnce() -> u64) -> Option<Bytes> {
        if self.volatile.is_empty() {
            return None;
        }
        let candidate = self.volatile[below(next_random(), self.volatile.len())];
        Some(self.table.slot(candidate.slot).key.to_bytes())
    }

    /// Whether `key` is in the table (live or not), and has a TTL when `volatile` asks.
    pub(crate) fn holds(&self, key: &[u8], volatile: bool) -> bool {
        self.table
            .find(super::hash_key(key), key)
            .is_some_and(|s| !volatile || s.entry.volatile_ix != NOT_VOLATILE)
    }

    /// Evicts `key`: out of the table, counted in `evicted_keys`, and told to the same logs an
    /// expiry tells (watchers, client tracking, the replicas' write stream), with an `evicted`
    /// keyspace event in place of `expired`. Whether the key was there.
    pub(crate) fn evict(&mut self, key: &[u8], now: i64) -> bool {
        self.journal_before(key, now);
        let Some(slot) = self.table.take(super::hash_key(key), key) else {
            return false;
        };
        unlist(&mut self.table, &mut self.volatile, slot.entry.volatile_ix);
        self.stats.evicted_keys += 1;
        expire_logs(&mut self.watches, slot.key.as_bytes(), true);
        shrink_if_sparse(&mut self.table, &mut self.volatile, &mut self.layout_epoch);
        true
    }
}
