//! Hash-field expiration (Redis 7.4's `HEXPIRE` family): a deadline per field of a hash.
//!
//! It lives apart from the hash (`hash.rs`) because the lock's hash, the hot path, never has a
//! field TTL: a [`Hash`] carries an `Option<Box<FieldTtls>>` that stays `None` (and is tested
//! only where a field is removed) until a field gets a TTL. Once one has, the box stays, empty
//! or not, as Redis's `listpackex` encoding stays after the last TTL is gone.
//!
//! Fields expire as keys do, on the engine's clock. A command that reads one field (`HGET`,
//! `HEXISTS`, ...) deletes it lazily when it is past its deadline (`cmd/hash_ttl.rs`), and the
//! active cycle removes the rest at the engine's ticks ([`FieldExpiry`]): per database, the
//! hashes that may hold a field past its deadline, by that deadline, at most
//! [`FIELDS_PER_SECOND`]` / hz` fields a tick, as Redis 7.4's `activeExpireHashFieldCycle` does.
//! Each hash that lost fields is announced as `hexpired` (and `del` when it lost its last one).
//! A field is expired strictly after its deadline, as a key is.

use super::Engine;
use super::db::{Hash, Value};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Redis 7.4's `HFE_DB_BASE_ACTIVE_EXPIRE_FIELDS_PER_SEC`: fields the active cycle removes a
/// second at most (per tick, this divided by `hz`).
pub const FIELDS_PER_SECOND: usize = 10_000;

/// Redis 7.4's largest field deadline a command may set (`HFE_MAX_ABS_TIME_MSEC`: a quarter of
/// its 48-bit `EB_EXPIRE_TIME_MAX`), unix ms.
pub const MAX_FIELD_DEADLINE: i64 = ((1 << 48) - 1) >> 2;

/// The deadlines of a hash's fields, unix ms, by field and by deadline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldTtls {
    by_field: BTreeMap<Bytes, i64>,
    by_deadline: BTreeSet<(i64, Bytes)>,
}

impl Hash {
    /// Whether some field has a TTL.
    #[inline]
    pub fn has_field_ttls(&self) -> bool {
        self.1.as_ref().is_some_and(|t| !t.by_field.is_empty())
    }

    /// Whether a field ever had a TTL (Redis's `listpackex` encoding, once taken, stays).
    #[inline]
    pub fn had_field_ttls(&self) -> bool {
        self.1.is_some()
    }

    /// The deadline of `field`, unix ms, if it has one.
    pub fn field_deadline(&self, field: &[u8]) -> Option<i64> {
        self.1.as_ref()?.by_field.get(field).copied()
    }

    /// Whether `field` is past its deadline at `now` (present or not).
    #[inline]
    pub fn field_expired(&self, field: &[u8], now: i64) -> bool {
        self.1.is_some() && self.field_deadline(field).is_some_and(|d| d < now)
    }

    /// Gives `field` (which must be present) the deadline `deadline`, or none.
    pub fn set_field_deadline(&mut self, field: &[u8], deadline: Option<i64>) {
        if deadline.is_none() && self.1.is_none() {
            return;
        }
        let ttls = self.1.get_or_insert_with(Box::default);
        if let Some(old) = ttls.by_field.remove(field) {
            ttls.by_deadline
                .remove(&(old, Bytes::copy_from_slice(field)));
        }
        if let Some(d) = deadline {
            let field = Bytes::copy_from_slice(field);
            ttls.by_field.insert(field.clone(), d);
            ttls.by_deadline.insert((d, field));
        }
    }

    /// Forgets the TTL of `field`, which is being removed.
    pub(super) fn forget_field_ttl(&mut self, field: &[u8]) {
        if let Some(ttls) = &mut self.1
            && let Some(old) = ttls.by_field.remove(field)
        {
            ttls.by_deadline
                .remove(&(old, Bytes::copy_from_slice(field)));
        }
    }

    /// The earliest deadline of a field.
    pub fn next_field_deadline(&self) -> Option<i64> {
        self.1.as_ref()?.by_deadline.first().map(|(d, _)| *d)
    }

    /// Up to `limit` fields past their deadline at `now`, earliest first.
    pub fn expired_fields(&self, now: i64, limit: usize) -> Vec<Bytes> {
        let Some(ttls) = &self.1 else {
            return Vec::new();
        };
        ttls.by_deadline
            .iter()
            .take_while(|(d, _)| *d < now)
            .take(limit)
            .map(|(_, f)| f.clone())
            .collect()
    }

    /// Removes up to `limit` fields past their deadline at `now`: how many.
    pub fn remove_expired_fields(&mut self, now: i64, limit: usize) -> usize {
        let gone = self.expired_fields(now, limit);
        for f in &gone {
            self.remove(f);
        }
        gone.len()
    }

    /// The fields and values not past their deadline at `now`, in iteration order.
    pub fn live_iter(&self, now: i64) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.iter()
            .filter(move |(f, _)| !self.field_expired(f, now))
    }

    /// The number of fields not past their deadline at `now`.
    pub fn live_len(&self, now: i64) -> usize {
        match self.has_field_ttls() {
            false => self.len(),
            true => self.live_iter(now).count(),
        }
    }
}

/// The active cycle's registry: per database, (deadline, key) of the hashes that may hold a
/// field past that deadline (Redis's `db->hexpires`). An entry is a hint: the cycle looks the key
/// up, and a key gone, renamed or without field TTLs since is dropped then; a hash that keeps
/// some TTL goes back in at its next deadline. `rescan` asks for the registry to be rebuilt from
/// the keyspace (after `SWAPDB`, a promotion, a restore of the whole keyspace), where values
/// moved under it.
#[derive(Debug, Default)]
pub(crate) struct FieldExpiry {
    due: Vec<BTreeSet<(i64, Bytes)>>,
    rescan: bool,
    /// The tick the field cycle last ran at.
    last_at: Option<i64>,
}

impl Engine {
    /// The hash at `key` of database `db` may hold a field past `deadline` from then on.
    pub(crate) fn register_field_deadline(&mut self, db: usize, key: &[u8], deadline: i64) {
        let due = &mut self.field_expiry.due;
        if due.len() <= db {
            due.resize_with(db + 1, BTreeSet::new);
        }
        due[db].insert((deadline, Bytes::copy_from_slice(key)));
    }

    /// Whether no hash of any database may hold a field TTL: the registry is empty and needs no
    /// rebuild (every hash that gets a field TTL is registered until it has none). The script
    /// path by key handle (`cmd/scripting.rs`) serves only then: it reads and writes fields
    /// without looking at their deadlines.
    pub(crate) fn no_field_ttls(&self) -> bool {
        !self.field_expiry.rescan && self.field_expiry.due.iter().all(BTreeSet::is_empty)
    }

    /// Values with field TTLs may have moved between keys or databases: the next cycle
    /// rebuilds its registry from the keyspace.
    pub(crate) fn rescan_field_ttls(&mut self) {
        self.field_expiry.rescan = true;
    }

    /// Registers the value at `key` of database `db`, if it is a hash with field TTLs (a value
    /// that moved there: `RENAME`, `COPY`, `MOVE`, `RESTORE`).
    pub(crate) fn track_field_ttls(&mut self, db: usize, key: &[u8], now: i64) {
        let next = match self.dbs.get(db).and_then(|d| d.peek(key, now)) {
            Some(e) => match &e.value {
                Value::Hash(h) => h.next_field_deadline(),
                _ => None,
            },
            None => None,
        };
        if let Some(d) = next {
            self.register_field_deadline(db, key, d);
        }
    }

    fn rebuild_field_registry(&mut self) {
        self.field_expiry.rescan = false;
        let mut found = Vec::new();
        for (i, db) in self.dbs.iter().enumerate() {
            for (key, entry) in db.stored_iter() {
                if let Value::Hash(h) = &entry.value
                    && let Some(d) = h.next_field_deadline()
                {
                    found.push((i, Bytes::copy_from_slice(key), d));
                }
            }
        }
        self.field_expiry.due.clear();
        for (db, key, d) in found {
            self.register_field_deadline(db, &key, d);
        }
    }

    /// The active cycle for fields, at tick `at` (the last tick at or before the command's
    /// time), with `quota` fields at most: removes the fields past their deadline of the
    /// registered hashes, earliest first, and announces each hash that lost some.
    pub(crate) fn expire_hash_fields(&mut self, at: i64, now: i64, quota: usize) {
        if self.field_expiry.rescan {
            self.rebuild_field_registry();
        }
        let mut quota = quota;
        let mut events: Vec<(usize, Bytes, bool)> = Vec::new();
        for db in 0..self.field_expiry.due.len() {
            while quota > 0 {
                let Some(first) = self.field_expiry.due[db].first().cloned() else {
                    break;
                };
                if first.0 >= at {
                    break;
                }
                self.field_expiry.due[db].pop_first();
                let key = first.1;
                let Some(Value::Hash(h)) = self.dbs[db].peek(&key, now).map(|e| &e.value) else {
                    continue;
                };
                if h.expired_fields(at, 1).is_empty() {
                    if let Some(d) = h.next_field_deadline() {
                        self.register_field_deadline(db, &key, d);
                    }
                    continue;
                }
                let Some(Value::Hash(h)) = self.dbs[db].write(&key, now).map(|e| &mut e.value)
                else {
                    continue;
                };
                let removed = h.remove_expired_fields(at, quota);
                quota -= removed;
                let (empty, next) = (h.is_empty(), h.next_field_deadline());
                if empty {
                    self.dbs[db].remove(&key, now);
                }
                self.dbs[db].touch(&key);
                if let Some(d) = next {
                    self.register_field_deadline(db, &key, d);
                }
                events.push((db, key, empty));
            }
        }
        for (db, key, deleted) in events {
            self.notify(super::notify::class::HASH, "hexpired", &key, db, now);
            if deleted {
                self.notify(super::notify::class::GENERIC, "del", &key, db, now);
            }
        }
    }
}

impl Engine {
    /// After the key cycles of a tick: the field cycle at the last tick's time, with the quota
    /// of the ticks since the last one that ran (ten at most, as the key cycles catch up).
    pub(crate) fn field_tick(&mut self, now: i64) {
        if self.field_expiry.due.iter().all(BTreeSet::is_empty) && !self.field_expiry.rescan {
            return;
        }
        let (at, period) = self.expiry.last_tick();
        let ticks = match self.field_expiry.last_at {
            Some(last) if last < at => ((at - last) / period.max(1)).clamp(1, 10),
            Some(_) => 1,
            None => 1,
        };
        self.field_expiry.last_at = Some(at);
        let per_tick = (FIELDS_PER_SECOND as i64 * period / 1000).max(1);
        self.expire_hash_fields(at, now, usize::try_from(per_tick * ticks).unwrap_or(1));
    }
}

// ---- DUMP and RESTORE: Redis 7.4's types for a hash with field TTLs ----

/// Redis 7.4's `RDB_TYPE_HASH_METADATA`: a hash table with field TTLs.
pub(crate) const TYPE_HASH_METADATA: u8 = 24;
/// Redis 7.4's `RDB_TYPE_HASH_LISTPACK_EX`: a listpack of (field, value, deadline) with TTLs.
pub(crate) const TYPE_HASH_LISTPACK_EX: u8 = 25;
/// The RDB version of Redis 7.4, which a payload of the two types above carries.
pub(crate) const RDB_VERSION_7_4: u16 = 12;

/// Writes `hash`, which had field TTLs, as Redis 7.4 does: `listpackex` (`compact`) or a hash
/// table with its TTLs; None when it is a hash table without TTLs left (the plain type then).
pub(crate) fn dump_hash(out: &mut Vec<u8>, hash: &Hash, compact: bool) -> Option<()> {
    use super::rdb::{Listpack, put_len, put_string};
    let min = hash.next_field_deadline();
    if !compact && min.is_none() {
        return None;
    }
    let min_or_0 = min.unwrap_or(0);
    if compact {
        out.push(TYPE_HASH_LISTPACK_EX);
        out.extend_from_slice(&min_or_0.to_le_bytes());
        let mut lp = Listpack::new();
        for (f, v) in hash.iter() {
            lp.push(f);
            lp.push(v);
            lp.push(hash.field_deadline(f).unwrap_or(0).to_string().as_bytes());
        }
        put_string(out, &lp.finish());
    } else {
        out.push(TYPE_HASH_METADATA);
        out.extend_from_slice(&min_or_0.to_le_bytes());
        put_len(out, hash.len() as u64);
        for (f, v) in hash.iter() {
            let rel = hash.field_deadline(f).map_or(0, |d| d - min_or_0 + 1);
            put_len(out, u64::try_from(rel).unwrap_or(0));
            put_string(out, f);
            put_string(out, v);
        }
    }
    Some(())
}

/// Reads a hash of [`TYPE_HASH_METADATA`] or [`TYPE_HASH_LISTPACK_EX`] (the type byte read).
pub(crate) fn load_hash(
    r: &mut super::rdb::Reader<'_>,
    kind: u8,
) -> Result<Hash, super::rdb::BadData> {
    use super::rdb::{BadData, listpack_entries};
    let min = i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| BadData)?);
    let mut hash = Hash::default();
    let put = |hash: &mut Hash, f: Bytes, v: Bytes, deadline: i64| {
        if !(0..=(1 << 48) - 1).contains(&deadline) || !hash.insert(f.clone(), v) {
            return Err(BadData);
        }
        hash.set_field_deadline(&f, (deadline != 0).then_some(deadline));
        Ok(())
    };
    if kind == TYPE_HASH_LISTPACK_EX {
        let lp = r.string()?;
        let entries = listpack_entries(lp.as_slice())?;
        if entries.len() % 3 != 0 {
            return Err(BadData);
        }
        for triple in entries.chunks_exact(3) {
            let deadline = crate::resp::number::parse_i64(&triple[2]).ok_or(BadData)?;
            put(&mut hash, triple[0].clone(), triple[1].clone(), deadline)?;
        }
    } else {
        let n = r.len()?;
        for _ in 0..n {
            let rel = i64::try_from(r.len()?).map_err(|_| BadData)?;
            let deadline = if rel == 0 {
                0
            } else {
                min.checked_add(rel - 1).ok_or(BadData)?
            };
            let (f, v) = (r.bytes()?, r.bytes()?);
            put(&mut hash, f, v, deadline)?;
        }
    }
    // Redis converts a hash that held TTLs to `listpackex`, and keeps it so.
    if hash.1.is_none() {
        hash.1 = Some(Box::default());
    }
    Ok(hash)
}
