//! One database of the keyspace: keys, values, deadlines, and the bookkeeping around them.
//!
//! Redis's keyspace is a hash table plus a second table of the keys that have a TTL, sampled by the
//! active expiry cycle. This module keeps the same split: a `hashbrown` table of slot numbers over
//! a vector of slots (`Table`), hashed with a fixed (seedless) hash so that two runs of one case
//! behave identically, and a vector of *volatile* keys to draw samples from. A key leaves the
//! vector the moment it is deleted or loses its TTL, as it leaves Redis's `expires` table, so the
//! cycle samples only keys that can expire.
//!
//! Expiry is Redis's: a key is logically gone once `now > deadline` (it lives through its deadline
//! millisecond), and physically gone when a lookup or the active cycle removes it. Nothing here
//! iterates the hash table in an order that could change behaviour; listings are sorted.
//!
//! Two optional duties live here because they must see every write: `WATCH` (a write or an expiry
//! marks the watching clients dirty, Redis's `signalModifiedKey`) and the write journal, which
//! records each key's previous entry so a failover can roll back the writes a lagging replica
//! never received.

use super::memory;
use super::server_state::Encodings;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The hash every table of the fake uses. Fixed (no random seed), so runs are reproducible; fast,
/// because it is on every command's path.
pub(crate) fn hash_key(key: &[u8]) -> u64 {
    // 16 bytes per round through a folded 64x64->128 multiply (wyhash's mixing step): few
    // instructions per byte for the 60-80-byte latch keys the lock writes. The tail is read as
    // words that may overlap bytes already mixed, never copied.
    const P0: u64 = 0xa076_1d64_78bd_642f;
    const P1: u64 = 0xe703_7ed1_a0b4_28db;
    fn fold(a: u64, b: u64) -> u64 {
        let m = u128::from(a) * u128::from(b);
        (m as u64) ^ ((m >> 64) as u64)
    }
    fn word(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
    }
    fn small(b: &[u8]) -> u64 {
        // 0 to 7 bytes: the first, middle and last byte, and the first and last four when there
        // are four or more.
        match b.len() {
            0 => 0,
            n if n < 4 => u64::from(b[0]) << 16 | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]),
            n => {
                let first = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
                let last = u32::from_le_bytes(b[n - 4..].try_into().expect("4 bytes"));
                u64::from(first) << 32 | u64::from(last)
            }
        }
    }
    let n = key.len();
    let mut h = P0 ^ (n as u64).wrapping_mul(P1);
    let (a, b) = if n < 8 {
        (small(key), 0)
    } else {
        let mut at = 0;
        while n - at > 16 {
            h = fold(word(key, at) ^ P1, word(key, at + 8) ^ h);
            at += 16;
        }
        // 1 to 16 bytes left: the last sixteen of the key (the whole key when it is shorter).
        (
            word(key, if at == 0 { 0 } else { n - 16 }),
            word(key, n - 8),
        )
    };
    h = fold(a ^ P0, b ^ h ^ P1);
    fold(h ^ P0, h ^ P1 ^ (n as u64))
}

/// A value in the keyspace.
///
/// Every collection iterates in an order fixed by its history, so that iteration, and the seeded
/// random draws over it, are deterministic.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A string (integers are strings holding decimal text, as `INCR` sees them).
    Str(Bytes),
    /// A hash.
    Hash(Hash),
    /// A list (its elements packed into chunks, as Redis's quicklist packs them).
    List(super::list::List),
    /// A set.
    Set(super::set::Set),
    /// A sorted set (boxed: it is the largest value and the rarest, and every slot is as big as
    /// the biggest value).
    ZSet(Box<ZSet>),
    /// A stream (boxed, as a sorted set is: its counters and groups would make every slot
    /// bigger).
    Stream(Box<super::stream::Stream>),
}

impl Value {
    /// The name `TYPE` replies for this value.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }
}

/// Redis's `proto-max-bulk-len` default: no string may grow past 512 MB.
pub(crate) const MAX_STRING: usize = 512 * 1024 * 1024;

pub use super::hash::Hash;
pub use super::zset::ZSet;

/// What [`Db::change_deadline_h`] does to a live key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeadlineChange {
    /// Leave it.
    Keep,
    /// Expire it at this unix ms.
    Set(i64),
    /// Delete the key.
    Delete,
}

/// A key's value and deadline.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Unix ms, or [`NO_DEADLINE`]: a plain integer rather than an `Option`, whose tag would
    /// cost every slot of the keyspace 8 bytes.
    deadline: i64,
    volatile_ix: u32,
    /// Redis's `lru:24` and a byte of encoding history, in what would otherwise be the entry's
    /// padding: the low 24 bits are the second of the last access ([`lru_clock`]), the high 8
    /// the [`Entry::encoding_marks`] (`OBJECT ENCODING`, in `cmd/server.rs`).
    meta: u32,
}

const NOT_VOLATILE: u32 = u32::MAX;

/// [`Entry`]'s deadline of a key without a TTL. No key is stored with this deadline: Redis
/// deletes a key given a deadline in the past rather than storing it, and [`Entry::put_deadline`]
/// moves this one instant (the most distant past) one millisecond on, which expires the same.
const NO_DEADLINE: i64 = i64::MIN;

/// Redis's `LRU_CLOCK_MAX`: the access clock counts seconds in 24 bits and wraps.
pub(crate) const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

/// Redis's LRU clock at `now` (unix ms): seconds, wrapped to 24 bits.
#[inline]
pub(crate) fn lru_clock(now: i64) -> u32 {
    (now.div_euclid(1000) as u32) & LRU_CLOCK_MAX
}

impl Entry {
    /// The deadline, unix ms: the key exists through this millisecond and is gone after it.
    #[inline]
    pub fn deadline(&self) -> Option<i64> {
        (self.deadline != NO_DEADLINE).then_some(self.deadline)
    }

    /// Redis's `keyIsExpired`: strictly past the deadline.
    #[inline]
    pub fn expired(&self, now: i64) -> bool {
        now > self.deadline && self.deadline != NO_DEADLINE
    }

    /// Sets or clears the deadline.
    #[inline]
    fn put_deadline(&mut self, deadline: Option<i64>) {
        self.deadline = match deadline {
            None => NO_DEADLINE,
            Some(NO_DEADLINE) => NO_DEADLINE + 1,
            Some(d) => d,
        };
    }

    /// The LRU clock of the last access ([`lru_clock`]).
    pub(crate) fn accessed(&self) -> u32 {
        self.meta & LRU_CLOCK_MAX
    }

    /// Sets the LRU clock of the last access (`RESTORE … IDLETIME`).
    pub(crate) fn set_accessed(&mut self, clock: u32) {
        self.meta = (self.meta & !LRU_CLOCK_MAX) | (clock & LRU_CLOCK_MAX);
    }

    /// Marks the entry accessed at `now`.
    #[inline]
    fn access(&mut self, now: i64) {
        self.meta = (self.meta & !LRU_CLOCK_MAX) | lru_clock(now);
    }

    /// The value's encoding history (bits chosen by `cmd/server.rs`): Redis converts a value to
    /// a larger encoding and never back, so what it went through decides `OBJECT ENCODING`.
    pub(crate) fn encoding_marks(&self) -> u8 {
        (self.meta >> 24) as u8
    }

    /// Replaces [`Entry::encoding_marks`] (a value Redis makes anew, or one moved with its
    /// history).
    pub(crate) fn set_encoding_marks(&mut self, marks: u8) {
        self.meta = (self.meta & LRU_CLOCK_MAX) | (u32::from(marks) << 24);
    }

    /// Adds `marks` to [`Entry::encoding_marks`].
    pub(crate) fn mark_encoding(&mut self, marks: u8) {
        self.meta |= u32::from(marks) << 24;
    }

    /// A fresh entry, accessed at `now`.
    fn new(value: Value, deadline: Option<i64>, now: i64) -> Entry {
        let mut entry = Entry {
            value,
            deadline: NO_DEADLINE,
            volatile_ix: NOT_VOLATILE,
            meta: lru_clock(now),
        };
        entry.put_deadline(deadline);
        entry
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct WatchMark {
    client: u64,
    /// The key was already logically expired when `WATCH` ran (Redis's `wk->expired`).
    expired_at_watch: bool,
}

/// The clients watching keys of one database (Redis's `WATCH`), and those among them whose
/// watched keys changed since the engine last looked.
#[derive(Default)]
pub(crate) struct Watches {
    keys: BTreeMap<Bytes, Vec<WatchMark>>,
    pub(crate) dirty: BTreeSet<u64>,
    /// The keys expiry removed and the keys created since the engine last looked, in order, kept
    /// only while an `expired` or `new` keyspace notification is on (`engine/notify.rs`).
    pub(crate) key_events: Option<crate::engine::notify::KeyEvents>,
    /// Every key written or expired since the engine last looked, kept only while the node has
    /// replicas: what the next batch of the write stream carries (`engine/replication.rs`).
    pub(crate) replicated_log: Option<Vec<Bytes>>,
    /// Every key modified or expired since the engine last looked, in order, and `None` for a
    /// flush, kept only while a client tracks keys: what invalidation messages say
    /// (`engine/tracking.rs`).
    pub(crate) tracked_log: Option<Vec<Option<Bytes>>>,
    /// Kept only while a client reads the command stream (`SYNC`, `engine/repl_stream.rs`):
    /// how many writes there were, and the keys expiry or eviction removed since the engine
    /// last looked, which the stream carries as `DEL`s.
    pub(crate) stream_log: Option<StreamLog>,
}

/// What the command stream needs of a database's writes (see [`Watches::stream_log`]).
#[derive(Default)]
pub(crate) struct StreamLog {
    pub(crate) writes: u64,
    pub(crate) removed: Vec<Bytes>,
}

impl Watches {
    /// Redis's `signalModifiedKey` for `key`, which is `present` after the change.
    fn touch(&mut self, key: &[u8], present: bool) {
        let Some(marks) = self.keys.get_mut(key) else {
            return;
        };
        for m in marks.iter_mut() {
            if m.expired_at_watch && !present {
                // Already expired at WATCH and now deleted: logically no change (Redis 7.0 multi.c).
                m.expired_at_watch = false;
            } else {
                self.dirty.insert(m.client);
            }
        }
    }
}

/// Previous entries of written keys, newest last, for a failover's rollback.
#[derive(Default)]
struct Journal {
    window_ms: i64,
    records: VecDeque<(i64, Bytes, Option<Entry>)>,
}

/// Counters `INFO` reports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DbStats {
    pub expired_keys: u64,
    /// Keys `maxmemory` evicted (`engine/evict.rs`).
    pub evicted_keys: u64,
}

/// One of the sixteen databases.
#[derive(Default)]
pub(crate) struct Db {
    table: Table,
    /// The keys with a TTL, for the active expiry cycle to sample (see the module docs).
    volatile: Vec<Candidate>,
    pub(crate) watches: Watches,
    /// The clients blocked on its keys, and the keys that became ready (`engine/blocking.rs`).
    pub(crate) waiters: crate::engine::blocking::KeyWaiters,
    journal: Option<Journal>,
    pub(crate) stats: DbStats,
    /// Changes whenever keys may have moved in the table (it grew or rehashed, or was cleared):
    /// the stamp on a `SCAN` cursor (see [`Db::scan`]).
    layout_epoch: u64,
    /// A replica's rule: a logically expired key is hidden from reads but stays until the
    /// primary's deletion arrives (`engine/replication.rs`).
    keep_expired: bool,
    /// The encoding thresholds the memory estimate reads (`engine/memory.rs`).
    encodings: Encodings,
    /// The access-frequency counter's parameters and random draws, while `maxmemory-policy` is
    /// an LFU policy: then an access updates the key's counter instead of its access time
    /// (`engine/evict.rs`).
    lfu: Option<super::evict::Lfu>,
}

/// Marks `entry` accessed at `now`: its access time, or its frequency counter under an LFU
/// policy (Redis's `updateLFU`).
#[inline]
fn touch_entry(entry: &mut Entry, lfu: Option<&mut super::evict::Lfu>, now: i64) {
    match lfu {
        None => entry.access(now),
        Some(lfu) => entry.set_accessed(lfu.touched(entry.accessed(), now)),
    }
}

/// Bits of a `SCAN` cursor that hold the bucket to resume at; the bits above hold the layout
/// epoch it was issued in.
const CURSOR_POSITION_BITS: u32 = 40;
/// The epochs a cursor tells apart (they wrap).
const CURSOR_EPOCH_MASK: u64 = (1 << 23) - 1;

/// A key with a TTL, as the active expiry cycle samples it. The deadline is a copy kept exact, so
/// sampling a key that has not expired costs no table lookup.
///
/// A candidate names its key's slot by number (the slot's `volatile_ix` is the candidate's
/// position), so no copy of the key is kept and neither expiring it nor moving a candidate
/// searches the table by key.
#[derive(Clone, Copy)]
struct Candidate {
    deadline: i64,
    slot: u32,
}

/// Removes the key of slot `ix`, which the clock has expired, found lazily or by the active
/// cycle: out of the table and the sample, counted, and its watchers told (Redis's
/// `deleteExpiredKeyAndPropagate`).
fn expire(
    table: &mut Table,
    ix: u32,
    volatile: &mut Vec<Candidate>,
    watches: &mut Watches,
    stats: &mut DbStats,
) {
    let slot = table.remove_at(ix);
    unlist(table, volatile, slot.entry.volatile_ix);
    stats.expired_keys += 1;
    expire_logs(watches, slot.key.as_bytes(), false);
}

/// What a key that expiry (or eviction, `evicted`) removed tells: its watchers, client tracking
/// (`tracked_log`), the replicas' write stream, and the keyspace event log. The one path both
/// take, so whatever follows an expiry follows an eviction too.
fn expire_logs(watches: &mut Watches, key: &[u8], evicted: bool) {
    watches.touch(key, false);
    if let Some(log) = &mut watches.tracked_log {
        log.push(Some(Bytes::copy_from_slice(key)));
    }
    if let Some(log) = &mut watches.replicated_log {
        log.push(Bytes::copy_from_slice(key));
    }
    if let Some(log) = &mut watches.stream_log {
        log.removed.push(Bytes::copy_from_slice(key));
    }
    if let Some(log) = &mut watches.key_events {
        match evicted {
            false => log.expired(key),
            true => log.evicted(key),
        }
    }
}

/// Takes candidate `ix` out of the vector (its key was deleted or lost its TTL, and its slot no
/// longer points at it): the last candidate moves into its place, and that key's slot is told.
fn unlist(table: &mut Table, volatile: &mut Vec<Candidate>, ix: u32) {
    if ix == NOT_VOLATILE {
        return;
    }
    let i = ix as usize;
    volatile.swap_remove(i);
    if let Some(moved) = volatile.get(i) {
        table.slot_mut(moved.slot).entry.volatile_ix = ix;
    }
}

/// [`Db::shrink_if_sparse`] on the parts of a database.
fn shrink_if_sparse(table: &mut Table, volatile: &mut Vec<Candidate>, layout_epoch: &mut u64) {
    const MIN_BUCKETS: usize = 64;
    let buckets = table.num_buckets();
    if buckets > MIN_BUCKETS && table.len() * 10 < buckets {
        table.shrink(volatile);
        volatile.shrink_to(volatile.len().max(MIN_BUCKETS));
        *layout_epoch += 1;
    }
}

/// Puts `entry` (deadline `deadline`) in place of the live key of `slot`, which keeps its
/// candidate for the active expiry cycle with the new deadline, or leaves the list without one.
#[inline]
fn replace_at(
    table: &mut Table,
    volatile: &mut Vec<Candidate>,
    slot: u32,
    entry: Entry,
    deadline: Option<i64>,
    encodings: &Encodings,
) {
    let old = &mut table.slot_mut(slot).entry;
    let ix = old.volatile_ix;
    *old = entry;
    match (deadline, ix) {
        // Overwritten with a TTL: the key keeps its candidate, with the new deadline.
        (Some(deadline), NOT_VOLATILE) => {
            old.volatile_ix = volatile.len() as u32;
            volatile.push(Candidate { deadline, slot });
        }
        (Some(d), ix) => {
            volatile[ix as usize].deadline = d;
            old.volatile_ix = ix;
        }
        (None, ix) => unlist(table, volatile, ix),
    }
    table.handed_out(slot, encodings);
}

/// Before a new key goes in: a table with no room left grows or rehashes on this insert, and its
/// keys move, so a `SCAN` cursor issued before must not resume by position.
#[inline]
fn note_layout(table: &Table, layout_epoch: &mut u64) {
    if table.capacity() == table.len() {
        *layout_epoch += 1;
    }
}

/// A new slot for `key`, whose candidate (if it has a deadline) goes in `volatile`: the slot's
/// number is known only once it is in the table, so the candidate is told after.
fn insert_new(
    table: &mut Table,
    volatile: &mut Vec<Candidate>,
    key: &[u8],
    h: u64,
    mut entry: Entry,
    e: &Encodings,
) -> u32 {
    let deadline = entry.deadline;
    let volatile_ix = (entry.deadline != NO_DEADLINE).then_some(volatile.len() as u32);
    entry.volatile_ix = volatile_ix.unwrap_or(NOT_VOLATILE);
    let slot = Slot {
        key: Key::new(key),
        hash: h,
        entry,
    };
    let slot = table.insert_unique(slot, e);
    if volatile_ix.is_some() {
        volatile.push(Candidate { deadline, slot });
    }
    slot
}

impl Db {
    /// A new entry: accessed now, or under an LFU policy, with a new key's frequency.
    fn new_entry(&self, value: Value, deadline: Option<i64>, now: i64) -> Entry {
        let mut entry = Entry::new(value, deadline, now);
        if self.lfu.is_some() {
            entry.set_accessed(super::evict::lfu_init(now));
        }
        entry
    }

    /// The memory estimate of this database (`engine/memory.rs`): its keys, the buckets of its
    /// table, and its expires table (a bucket and an entry per key with a TTL). With `keep`
    /// (`maxmemory` is set, and the estimate is read before every command) the keys' part is
    /// kept up to date as they change from now on; without, it is measured now and not kept.
    pub(crate) fn used_memory(&mut self, keep: bool) -> u64 {
        self.table.keep_sizes(keep, &self.encodings);
        let (keys, volatile) = (self.table.len(), self.volatile.len());
        let mut total = self.table.bytes(&self.encodings);
        if keys > 0 {
            total += 8 * memory::dict_slots(keys) as u64;
        }
        if volatile > 0 {
            let each = memory::jemalloc(memory::DICT_ENTRY) as u64;
            total += 8 * memory::dict_slots(volatile) as u64 + each * volatile as u64;
        }
        total
    }

    /// Reads the encoding thresholds from now on, and measures every key again by them (only a
    /// `CONFIG SET` of a threshold does this).
    pub(crate) fn set_encodings(&mut self, e: &Encodings) {
        self.table.settle(&self.encodings);
        self.encodings = e.clone();
        if !self.table.keeps {
            return;
        }
        let numbers: Vec<u32> = self.table.index.iter().copied().collect();
        for ix in numbers {
            let size = measure(self.table.slot(ix), e);
            self.table.resize(ix, size);
        }
    }

    /// Turns the LFU counter on (with its parameters) or off: what an access updates.
    pub(crate) fn set_lfu(&mut self, lfu: Option<super::evict::Lfu>) {
        self.lfu = lfu;
    }

    /// The number of keys physically present, logically expired ones included (`DBSIZE`).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// The number of keys with a TTL (`INFO keyspace`'s `expires`).
    pub fn volatile_len(&self) -> usize {
        self.table
            .iter()
            .filter(|s| s.entry.deadline().is_some())
            .count()
    }

    /// The live entry at `key`; a logically expired key is deleted first (Redis's lazy expiry).
    pub fn lookup(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        self.lookup_h(key, hash_key(key), now)
    }

    /// [`Db::lookup`] with the key's hash already computed ([`hash_key`]).
    #[inline]
    pub fn lookup_h(&mut self, key: &[u8], h: u64, now: i64) -> Option<&mut Entry> {
        let ix = self.live_ix(key, h, now)?;
        let entry = &mut self.table.slot_mut(ix).entry;
        touch_entry(entry, self.lfu.as_mut(), now);
        Some(entry)
    }

    /// [`Db::lookup_h`] without marking the key accessed: Redis's lookups with `LOOKUP_NOTOUCH`
    /// (`EXISTS`, `TYPE`, `TTL`), which expire a dead key but leave a live one's idle time.
    pub fn lookup_untouched_h(&mut self, key: &[u8], h: u64, now: i64) -> Option<&mut Entry> {
        let ix = self.live_ix(key, h, now)?;
        Some(&mut self.table.slot_mut(ix).entry)
    }

    /// The slot of the live key at `key`, handed out for a change in place (its size is
    /// measured again later); a logically expired key is deleted first.
    #[inline]
    fn live_ix(&mut self, key: &[u8], h: u64, now: i64) -> Option<u32> {
        let Db {
            table,
            volatile,
            watches,
            stats,
            keep_expired,
            layout_epoch,
            encodings,
            ..
        } = self;
        let ix = table.find_ix(h, key)?;
        if table.slot(ix).entry.expired(now) {
            if !*keep_expired {
                expire(table, ix, volatile, watches, stats);
                shrink_if_sparse(table, volatile, layout_epoch);
            }
            return None;
        }
        table.handed_out(ix, encodings);
        Some(ix)
    }

    /// The entry at `key` if it is live, without deleting an expired one (`KEYS`, `TYPE` peeks).
    pub fn peek(&self, key: &[u8], now: i64) -> Option<&Entry> {
        self.table
            .find(hash_key(key), key)
            .map(|s| &s.entry)
            .filter(|e| !e.expired(now))
    }

    /// The live entry at `key`, for an in-place change of its value (journaled first).
    pub fn write(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        self.write_h(key, hash_key(key), now)
    }

    /// [`Db::write`] with the key's hash already computed.
    pub fn write_h(&mut self, key: &[u8], h: u64, now: i64) -> Option<&mut Entry> {
        if !self.logs_writes() {
            return self.lookup_h(key, h, now);
        }
        self.lookup_h(key, h, now)?;
        self.journal_before(key, now);
        self.lookup_h(key, h, now)
    }

    /// Puts `value` at `key` with `deadline`, replacing whatever was there.
    pub fn insert(&mut self, key: &[u8], value: Value, deadline: Option<i64>, now: i64) {
        let h = hash_key(key);
        self.insert_h(key, h, value, deadline, now);
    }

    /// [`Db::insert`] with the key's hash already computed.
    pub fn insert_h(&mut self, key: &[u8], h: u64, value: Value, deadline: Option<i64>, now: i64) {
        self.journal_before(key, now);
        let entry = self.new_entry(value, deadline, now);
        match self.table.find_ix(h, key) {
            Some(slot) => {
                let Db {
                    table,
                    volatile,
                    encodings,
                    ..
                } = self;
                replace_at(table, volatile, slot, entry, deadline, encodings);
            }
            None => self.create(key, h, entry),
        }
    }

    /// A write of `key` (hash `h`) that first looks at what is there (`SET`'s conditions), by
    /// one probe where nothing needs the previous entry before the write (no journal, no
    /// replicas' log, no replica's rule for expired keys) and by a lookup and an insert
    /// elsewhere. As the lookup, it deletes a logically expired key (lazy expiry) and marks a
    /// live one accessed; `decide` sees the live entry (None for a missing key) and gives the
    /// value and deadline to put, or None to write nothing. Whether it wrote.
    pub fn upsert_h(
        &mut self,
        key: &[u8],
        h: u64,
        now: i64,
        decide: impl FnOnce(Option<&Entry>) -> Option<(Value, Option<i64>)>,
    ) -> bool {
        if self.logs_writes() || self.keep_expired {
            let old = self.lookup_h(key, h, now).map(|e| &*e);
            let Some((value, deadline)) = decide(old) else {
                return false;
            };
            self.insert_h(key, h, value, deadline, now);
            return true;
        }
        let found = self.live_ix(key, h, now);
        if let Some(ix) = found {
            touch_entry(&mut self.table.slot_mut(ix).entry, self.lfu.as_mut(), now);
        }
        let old = found.map(|ix| &self.table.slot(ix).entry);
        let Some((value, deadline)) = decide(old) else {
            return false;
        };
        let entry = self.new_entry(value, deadline, now);
        match found {
            Some(slot) => {
                let Db {
                    table,
                    volatile,
                    encodings,
                    ..
                } = self;
                replace_at(table, volatile, slot, entry, deadline, encodings);
            }
            None => self.create(key, h, entry),
        }
        true
    }

    /// Changes the deadline of the live key at `key` (hash `h`) as `decide` says, given its
    /// current deadline, with one probe of the table: whether the key was live. A logically
    /// expired key is deleted (lazy expiry) and counts as missing; `decide` is not called then.
    /// A live key is marked accessed, whatever `decide` says.
    pub fn change_deadline_h(
        &mut self,
        key: &[u8],
        h: u64,
        now: i64,
        decide: impl FnOnce(Option<i64>) -> DeadlineChange,
    ) -> bool {
        if self.logs_writes() {
            // The journal needs the previous entry first: the plain two-probe path.
            let Some(entry) = self.lookup_h(key, h, now) else {
                return false;
            };
            match decide(entry.deadline()) {
                DeadlineChange::Keep => {}
                DeadlineChange::Set(d) => self.set_deadline_h(key, h, Some(d), now),
                DeadlineChange::Delete => {
                    self.remove_h(key, h, now);
                }
            }
            return true;
        }
        let Db {
            table,
            volatile,
            watches,
            stats,
            ..
        } = self;
        // One probe: the bucket found is the one a deletion takes out.
        let Table { index, slots, .. } = table;
        let Ok(bucket) = index.find_entry(h, |&i| table::holds(slots, i, h, key)) else {
            return false;
        };
        let slot = *bucket.get();
        let entry = &mut slots[slot as usize].as_mut().expect(table::HELD).entry;
        if entry.expired(now) {
            expire(table, slot, volatile, watches, stats);
            self.shrink_if_sparse();
            return false;
        }
        // A lookup for writing, as `EXPIRE`'s in Redis: it touches the key.
        touch_entry(entry, self.lfu.as_mut(), now);
        match decide(entry.deadline()) {
            DeadlineChange::Keep => {}
            DeadlineChange::Delete => {
                bucket.remove();
                let removed = table.vacate(slot);
                unlist(table, volatile, removed.entry.volatile_ix);
                self.shrink_if_sparse();
            }
            DeadlineChange::Set(d) => {
                entry.put_deadline(Some(d));
                if entry.volatile_ix == NOT_VOLATILE {
                    entry.volatile_ix = volatile.len() as u32;
                    volatile.push(Candidate { deadline: d, slot });
                } else {
                    volatile[entry.volatile_ix as usize].deadline = d;
                }
            }
        }
        true
    }

    /// Puts a new key known to be absent (a lookup at this frozen time missed), with `deadline`,
    /// skipping the search for an old entry.
    pub fn insert_absent_h(
        &mut self,
        key: &[u8],
        h: u64,
        value: Value,
        deadline: Option<i64>,
        now: i64,
    ) {
        // The journal needs the previous entry, and a replica's lookup misses a logically
        // expired key that is still in the table: the path that searches.
        if self.logs_writes() || self.keep_expired {
            return self.insert_h(key, h, value, deadline, now);
        }
        let entry = self.new_entry(value, deadline, now);
        self.create(key, h, entry);
    }

    /// Adds `entry` at `key` (hash `h`), known to be absent from the table: wakes the key's
    /// blocked clients, tells the key-event log, and inserts without searching.
    fn create(&mut self, key: &[u8], h: u64, entry: Entry) {
        self.waiters.signal(key);
        if let Some(log) = &mut self.watches.key_events {
            log.created(key);
        }
        note_layout(&self.table, &mut self.layout_epoch);
        insert_new(
            &mut self.table,
            &mut self.volatile,
            key,
            h,
            entry,
            &self.encodings,
        );
    }

    /// Sets or clears the deadline of the key at `key`, which must exist.
    pub fn set_deadline(&mut self, key: &[u8], deadline: Option<i64>, now: i64) {
        self.set_deadline_h(key, hash_key(key), deadline, now);
    }

    /// [`Db::set_deadline`] with the key's hash already computed.
    pub fn set_deadline_h(&mut self, key: &[u8], h: u64, deadline: Option<i64>, now: i64) {
        self.journal_before(key, now);
        let Some(ix) = self.table.find_ix(h, key) else {
            return;
        };
        let slot = self.table.slot_mut(ix);
        slot.entry.put_deadline(deadline);
        match (deadline, slot.entry.volatile_ix) {
            (Some(d), NOT_VOLATILE) => {
                slot.entry.volatile_ix = self.volatile.len() as u32;
                self.volatile.push(Candidate {
                    deadline: d,
                    slot: ix,
                });
            }
            (Some(d), ix) => self.volatile[ix as usize].deadline = d,
            (None, NOT_VOLATILE) => {}
            (None, ix) => {
                slot.entry.volatile_ix = NOT_VOLATILE;
                unlist(&mut self.table, &mut self.volatile, ix);
            }
        }
    }

    /// Removes the key at `key` (whether live or not): its entry.
    pub fn remove(&mut self, key: &[u8], now: i64) -> Option<Entry> {
        self.remove_h(key, hash_key(key), now)
    }

    /// [`Db::remove`] with the key's hash already computed.
    pub fn remove_h(&mut self, key: &[u8], h: u64, now: i64) -> Option<Entry> {
        self.journal_before(key, now);
        let entry = self.table.take(h, key)?.entry;
        unlist(&mut self.table, &mut self.volatile, entry.volatile_ix);
        self.shrink_if_sparse();
        Some(entry)
    }

    /// Redis's `signalModifiedKey`: clients watching `key` will see their `EXEC` fail.
    pub fn touch(&mut self, key: &[u8]) {
        if let Some(log) = &mut self.watches.tracked_log {
            log.push(Some(Bytes::copy_from_slice(key)));
        }
        if self.watches.keys.is_empty() {
            return;
        }
        let present = self.table.find(hash_key(key), key).is_some();
        self.watches.touch(key, present);
    }

    /// Swaps the keys of two databases (`SWAPDB`): keys and TTLs move, while watches and
    /// blocked clients stay with their database, as Redis's do. First, as Redis's
    /// `touchAllWatchedKeysInDb`, the watchers of a key the swap changes are touched; after, a
    /// key a client waits on that its database now holds is ready.
    pub fn swap(a: &mut Db, b: &mut Db, now: i64) {
        a.before_swap(b, now);
        b.before_swap(a, now);
        std::mem::swap(&mut a.table, &mut b.table);
        std::mem::swap(&mut a.volatile, &mut b.volatile);
        // A SCAN cursor of either database starts over in both.
        let epoch = a.layout_epoch.max(b.layout_epoch) + 1;
        (a.layout_epoch, b.layout_epoch) = (epoch, epoch);
        for db in [a, b] {
            let table = &db.table;
            db.waiters.signal_present(|k| {
                table
                    .find(hash_key(k), k)
                    .is_some_and(|s| !s.entry.expired(now))
            });
        }
    }

    /// One side of [`Db::swap`] before the keys move: journals (and logs for the replicas) the
    /// keys that go and come, touches the watchers of keys present in either database as Redis
    /// does.
    fn before_swap(&mut self, other: &Db, now: i64) {
        if self.logs_writes() {
            // Its own keys go, the other's come: a rollback restores the one, removes the other,
            // and a replica is sent both as this database now has them.
            let keys: Vec<Bytes> = self
                .table
                .iter()
                .chain(other.table.iter())
                .map(|s| s.key.to_bytes())
                .collect();
            for k in keys {
                self.journal_before(&k, now);
            }
        }
        // Redis's `touchAllWatchedKeysInDb`: a key present on either side (live or not) touches
        // its watchers, except where nothing changes logically: an expired key a watcher saw
        // expired that goes away or stays expired, and a missing key replaced by an expired one
        // (then watched as expired).
        let Watches { keys, dirty, .. } = &mut self.watches;
        for (k, marks) in keys.iter_mut() {
            let h = hash_key(k);
            let here = self.table.find(h, k).is_some();
            let coming = other.table.find(h, k).map(|s| s.entry.expired(now));
            if !here && coming.is_none() {
                continue;
            }
            for m in marks.iter_mut() {
                match (m.expired_at_watch, coming) {
                    (true, None) => m.expired_at_watch = false,
                    (true, Some(true)) => {}
                    (false, Some(true)) if !here => m.expired_at_watch = true,
                    _ => {
                        dirty.insert(m.client);
                    }
                }
            }
        }
    }

    /// Empties the database (`FLUSHDB`): every watcher of a present key is touched.
    pub fn flush(&mut self, now: i64) {
        if self.logs_writes() {
            let keys: Vec<Bytes> = self.table.iter().map(|s| s.key.to_bytes()).collect();
            for k in keys {
                self.journal_before(&k, now);
            }
        }
        if !self.watches.keys.is_empty() {
            let present: Vec<Bytes> = self
                .watches
                .keys
                .keys()
                .filter(|k| self.table.find(hash_key(k), k).is_some())
                .cloned()
                .collect();
            for k in present {
                self.watches.touch(&k, false);
            }
        }
        if let Some(log) = &mut self.watches.tracked_log {
            log.push(None);
        }
        // The tables go, not only their keys (`clear` would keep every bucket): Redis frees a
        // flushed database's dicts, and so its memory goes back to the allocator.
        self.table = Table::default();
        self.volatile = Vec::new();
        self.layout_epoch += 1;
    }

    /// Redis's dict resize down (`htNeedsResize`: under 10% full): a table that deletions left
    /// sparse is rebuilt for the keys it holds, so a keyspace that shrinks gives its memory back.
    /// Rebuilding moves keys, so a `SCAN` cursor issued before starts over (the layout epoch).
    /// A rebuild halves the table at least, so its cost is paid for by the deletions before it.
    fn shrink_if_sparse(&mut self) {
        shrink_if_sparse(&mut self.table, &mut self.volatile, &mut self.layout_epoch);
    }

    /// One step of `SCAN` from `cursor`: the keys (live or not) of the table's next buckets, until
    /// `count` keys or `10 × count` buckets, and the cursor to resume at (0 once the table is
    /// done). A call costs in proportion to `count`, whatever the size of the keyspace.
    ///
    /// The cursor is a bucket position stamped with the layout epoch. A key never moves in the
    /// table while it stays (a removal leaves the others where they are, an insert fills a free
    /// bucket) unless the table grows or rehashes, which only an insert into a table with no room
    /// left does, or is cleared; the epoch changes then. A cursor of another epoch starts over,
    /// which SCAN's contract allows: a key may come twice, none present throughout is missed. (So
    /// a scan slower than a keyspace that keeps doubling starts over until the growth stops; a
    /// keyspace of steady size, however busy, rehashes rarely.)
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Bytes>) {
        let epoch = self.layout_epoch & CURSOR_EPOCH_MASK;
        let mut at = if cursor >> CURSOR_POSITION_BITS == epoch {
            (cursor & ((1 << CURSOR_POSITION_BITS) - 1)) as usize
        } else {
            0
        };
        let buckets = self.table.num_buckets();
        let budget = at.saturating_add(count.saturating_mul(10));
        let mut keys = Vec::with_capacity(count.min(1024));
        while at < buckets && at < budget && keys.len() < count {
            if let Some(slot) = self.table.get_bucket(at) {
                keys.push(slot.key.to_bytes());
            }
            at += 1;
        }
        let next = if at >= buckets {
            0
        } else {
            epoch << CURSOR_POSITION_BITS | at as u64
        };
        (next, keys)
    }

    /// A key drawn uniformly from the table (live or not), or None when it is empty: random
    /// buckets until one holds a key, as Redis draws from its buckets. A table thinned by
    /// deletions (hashbrown keeps its buckets) falls back to the first key after a drawn bucket.
    pub fn random_key(&self, mut next_random: impl FnMut() -> u64) -> Option<Bytes> {
        if self.table.is_empty() {
            return None;
        }
        let buckets = self.table.num_buckets();
        let mut draw = || ((u128::from(next_random()) * buckets as u128) >> 64) as usize;
        for _ in 0..64 {
            if let Some(slot) = self.table.get_bucket(draw()) {
                return Some(slot.key.to_bytes());
            }
        }
        let start = draw();
        (0..buckets)
            .find_map(|k| self.table.get_bucket((start + k) % buckets))
            .map(|slot| slot.key.to_bytes())
    }

    /// Every key, live or not, in the fixed order of its hash (then bytes): SCAN's order.
    pub fn keys_in_scan_order(&self) -> Vec<(u64, Bytes)> {
        let mut keys: Vec<(u64, Bytes)> = self
            .table
            .iter()
            .map(|s| (s.hash, s.key.to_bytes()))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Every live key with its entry, by reference, in the table's order (for sums, whose
    /// result does not depend on it).
    pub fn live_iter(&self, now: i64) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.table
            .iter()
            .filter(move |s| !s.entry.expired(now))
            .map(|s| (s.key.as_bytes(), &s.entry))
    }

    /// Every live key with its entry, sorted by key.
    pub fn live_entries(&self, now: i64) -> Vec<(Bytes, Entry)> {
        let mut out: Vec<(Bytes, Entry)> = self
            .table
            .iter()
            .filter(|s| !s.entry.expired(now))
            .map(|s| (s.key.to_bytes(), s.entry.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// One loop of Redis's active expiry: samples up to `samples` volatile keys (drawing indices
    /// from `next_random`), deletes the expired ones. Returns (sampled, expired).
    pub fn expire_sample(
        &mut self,
        now: i64,
        samples: usize,
        mut next_random: impl FnMut() -> u64,
    ) -> (usize, usize) {
        let mut sampled = 0;
        let mut expired = 0;
        while sampled < samples && !self.volatile.is_empty() {
            sampled += 1;
            // Multiply-shift instead of a modulo: the same uniform pick, without a division.
            let i = ((u128::from(next_random()) * self.volatile.len() as u128) >> 64) as usize;
            if now <= self.volatile[i].deadline {
                continue; // live: the copy of its deadline is exact
            }
            expired += 1;
            let slot = self.volatile[i].slot;
            let Db {
                table,
                volatile,
                watches,
                stats,
                ..
            } = self;
            expire(table, slot, volatile, watches, stats);
        }
        if expired > 0 {
            self.shrink_if_sparse();
        }
        (sampled, expired)
    }

    /// Whether the database has any candidate for the active expiry cycle.
    pub fn has_volatile(&self) -> bool {
        !self.volatile.is_empty()
    }

    /// How many keys have a TTL (the active expiry cycle's candidates), in constant time.
    pub fn volatile_count(&self) -> usize {
        self.volatile.len()
    }

    // ---- WATCH ----

    /// Starts watching `key` for `client`.
    pub fn watch(&mut self, key: &Bytes, client: u64, now: i64) {
        let expired_at_watch = self
            .table
            .find(hash_key(key), key)
            .is_some_and(|s| s.entry.expired(now));
        let marks = self.watches.keys.entry(key.clone()).or_default();
        if !marks.iter().any(|m| m.client == client) {
            marks.push(WatchMark {
                client,
                expired_at_watch,
            });
        }
    }

    /// Stops watching `key` for `client`.
    pub fn unwatch(&mut self, key: &[u8], client: u64) {
        if let Some(marks) = self.watches.keys.get_mut(key) {
            marks.retain(|m| m.client != client);
            if marks.is_empty() {
                self.watches.keys.remove(key);
            }
        }
        self.watches.dirty.remove(&client);
    }

    /// Redis's `isWatchedKeyExpired` for one key: it was live at `WATCH` and is expired now.
    pub fn watched_key_expired(&self, key: &[u8], client: u64, now: i64) -> bool {
        let live_at_watch = self
            .watches
            .keys
            .get(key)
            .and_then(|m| m.iter().find(|m| m.client == client))
            .is_some_and(|m| !m.expired_at_watch);
        live_at_watch
            && self
                .table
                .find(hash_key(key), key)
                .is_some_and(|s| s.entry.expired(now))
    }

    // ---- the write journal ----

    /// Keeps the previous entry of every written key for `window_ms` (None stops journaling).
    /// A journal already kept keeps its records: a failover added later still undoes them.
    pub fn set_journal(&mut self, window_ms: Option<i64>) {
        match (window_ms, &mut self.journal) {
            (Some(window_ms), Some(journal)) => journal.window_ms = window_ms,
            (window_ms, journal) => {
                *journal = window_ms.map(|window_ms| Journal {
                    window_ms,
                    records: VecDeque::new(),
                });
            }
        }
    }

    /// Whether a write must pass [`Db::journal_before`]: the journal or the replicas' log is on.
    #[inline]
    fn logs_writes(&self) -> bool {
        self.journal.is_some()
            || self.watches.replicated_log.is_some()
            || self.watches.stream_log.is_some()
    }

    fn journal_before(&mut self, key: &[u8], now: i64) {
        if let Some(log) = &mut self.watches.stream_log {
            log.writes += 1;
        }
        if let Some(log) = &mut self.watches.replicated_log {
            log.push(Bytes::copy_from_slice(key));
        }
        let Some(journal) = &mut self.journal else {
            return;
        };
        let h = hash_key(key);
        let previous = self.table.find(h, key).map(|s| {
            let mut e = s.entry.clone();
            e.volatile_ix = NOT_VOLATILE;
            e
        });
        journal
            .records
            .push_back((now, Bytes::copy_from_slice(key), previous));
        while journal
            .records
            .front()
            .is_some_and(|(t, _, _)| *t < now - journal.window_ms)
        {
            journal.records.pop_front();
        }
    }

    /// Undoes every journaled write made after `since` (unix ms), newest first: the state a replica
    /// that stopped receiving writes at `since` holds. Returns how many writes were undone.
    pub fn rollback_after(&mut self, since: i64) -> usize {
        let Some(mut journal) = self.journal.take() else {
            return 0;
        };
        let mut undone = 0;
        while journal.records.back().is_some_and(|(t, _, _)| *t > since) {
            let Some((_, key, previous)) = journal.records.pop_back() else {
                break;
            };
            undone += 1;
            let h = hash_key(&key);
            if let Some(slot) = self.table.take(h, &key) {
                unlist(&mut self.table, &mut self.volatile, slot.entry.volatile_ix);
            }
            if let Some(entry) = previous {
                note_layout(&self.table, &mut self.layout_epoch);
                let e = &self.encodings;
                insert_new(&mut self.table, &mut self.volatile, &key, h, entry, e);
            }
        }
        self.journal = Some(journal);
        undone
    }

    /// Forgets every watcher (a restart closes every connection). The key event log stays on
    /// if it was: it follows `notify-keyspace-events`, which a restart does not change.
    pub fn clear_watches(&mut self) {
        let key_events = self.watches.key_events.take().map(|log| log.emptied());
        let replicated_log = self.watches.replicated_log.take();
        let stream_log = self.watches.stream_log.take();
        self.watches = Watches::default();
        self.watches.key_events = key_events;
        self.watches.replicated_log = replicated_log;
        self.watches.stream_log = stream_log;
    }

    // ---- client-side caching (`engine/tracking.rs`) ----

    /// Starts (or stops) logging the keys every modification and expiry touches, and flushes.
    pub(crate) fn log_tracked(&mut self, on: bool) {
        if on != self.watches.tracked_log.is_some() {
            self.watches.tracked_log = on.then(Vec::new);
        }
    }

    /// The modifications logged since the last call, in order (`None`: a flush).
    pub(crate) fn take_tracked(&mut self) -> Vec<Option<Bytes>> {
        match &mut self.watches.tracked_log {
            Some(log) if !log.is_empty() => std::mem::take(log),
            _ => Vec::new(),
        }
    }

    // ---- replication (`engine/replication.rs`) ----

    /// Starts (or stops) logging the keys every write and expiry touches, for the write stream.
    pub(crate) fn log_replicated(&mut self, on: bool) {
        if on != self.watches.replicated_log.is_some() {
            self.watches.replicated_log = on.then(Vec::new);
        }
    }

    /// The keys logged since the last call, each once, in byte order.
    pub(crate) fn take_replicated(&mut self) -> Vec<Bytes> {
        let Some(log) = &mut self.watches.replicated_log else {
            return Vec::new();
        };
        let mut keys = std::mem::take(log);
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Starts (or stops) counting writes and logging removals for the command stream.
    pub(crate) fn log_stream(&mut self, on: bool) {
        if on != self.watches.stream_log.is_some() {
            self.watches.stream_log = on.then(StreamLog::default);
        }
    }

    /// How many writes there were since the command stream's log started (0 when it is off).
    pub(crate) fn stream_writes(&self) -> u64 {
        self.watches.stream_log.as_ref().map_or(0, |log| log.writes)
    }

    /// The keys expiry or eviction removed since the last call, in order.
    pub(crate) fn take_stream_removed(&mut self) -> Vec<Bytes> {
        match &mut self.watches.stream_log {
            Some(log) if !log.removed.is_empty() => std::mem::take(&mut log.removed),
            _ => Vec::new(),
        }
    }

    /// Whether a write or expiry was logged since the last [`Db::take_replicated`].
    pub(crate) fn has_replicated(&self) -> bool {
        self.watches
            .replicated_log
            .as_ref()
            .is_some_and(|log| !log.is_empty())
    }

    /// Every key with its entry as stored, live or not, in the table's order (`DEBUG DIGEST`,
    /// whose result does not depend on it).
    pub(crate) fn stored_iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.table.iter().map(|s| (s.key.as_bytes(), &s.entry))
    }

    /// The entry at `key` as stored, live or not (what a batch carries).
    pub(crate) fn stored(&self, key: &[u8]) -> Option<&Entry> {
        self.table.find(hash_key(key), key).map(|s| &s.entry)
    }

    /// Puts `entry` at `key` as the primary sent it, or deletes the key (`None`), and tells
    /// the key's watchers and waiters, as a replicated command does on a Redis replica.
    pub(crate) fn apply_replicated(&mut self, key: &[u8], entry: Option<Entry>, now: i64) {
        match entry {
            Some(entry) => {
                let marks = entry.encoding_marks();
                let deadline = entry.deadline();
                self.insert(key, entry.value, deadline, now);
                if let Some(ix) = self.table.find_ix(hash_key(key), key) {
                    self.table.slot_mut(ix).entry.mark_encoding(marks);
                    // The marks may change its encoding, and so its size.
                    self.table.handed_out(ix, &self.encodings);
                }
            }
            None => {
                self.remove(key, now);
            }
        }
        self.touch(key);
    }

    /// Sets the replica's expiry rule ([`Db`]'s `keep_expired`).
    pub(crate) fn keep_expired(&mut self, on: bool) {
        self.keep_expired = on;
    }

    /// Whether a lookup may miss a key that is still in the table (a replica's rule).
    pub(crate) fn keeps_expired(&self) -> bool {
        self.keep_expired
    }
}

mod sampling;
pub(crate) use sampling::Sample;
mod handle;
pub(crate) use handle::Probe;
mod table;
use table::{Key, Slot, Table, measure};

#[cfg(test)]
mod tests;
