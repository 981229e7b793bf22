//! Keyspace notifications: what a write publishes on `__keyspace@<db>__:<key>` and
//! `__keyevent@<db>__:<event>` when `notify-keyspace-events` asks for it.
//!
//! A command names its event through `Cx::notify` (`cmd/context.rs`) (one line after its
//! write, as Redis's `notifyKeyspaceEvent` calls are), and the message goes through
//! [`Engine::publish`], so subscribers get it through the same outboxes, with the same delivery
//! faults, as any `PUBLISH`. Every family calls it with Redis 7.0's event names and classes: a
//! collection emptied by a write is deleted and announced as `del` after the write's own event
//! (`cmd/mod.rs`'s `finish_aggregate_if`), and a `…STORE` announces its event or, for an empty
//! result that deleted the destination, `del` (`store_or_delete`).
//!
//! Two events happen deep in the keyspace, where the engine is out of reach: expiry removes a key
//! (lazily on a lookup, or in the active cycle) and a write creates one (Redis's `dbAdd`, the `n`
//! class's `new`). The keyspace logs both, in the order they happened, while some flag asks for
//! them ([`KeyEvents`]), and the engine publishes the log before the next event a command names,
//! and at the end of each command and expiry cycle: so `expired` and `new` come before the
//! command's own events, at the time of the command or the cycle that caused them, as in Redis.
//! A key the fake created and removed again before anything was published (an empty collection
//! a write made and then found it had nothing to add) was never there for Redis, so its `new` is
//! dropped. With notifications off (the default) a write pays one test of a flag.
//!
//! A cluster node's keyspace also keeps when each key was created ([`Births`]), the same hook's
//! other use: `CLUSTER GETKEYSINSLOT` lists a slot's keys newest first, as Redis's does.

use super::Engine;
use super::db::Entry;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Notification classes, as Redis's `NOTIFY_*` bits.
pub(crate) mod class {
    /// `K`: `__keyspace@<db>__:<key>` messages.
    pub const KEYSPACE: u16 = 1 << 0;
    /// `E`: `__keyevent@<db>__:<event>` messages.
    pub const KEYEVENT: u16 = 1 << 1;
    /// `g`: generic commands (`DEL`, `EXPIRE`, `RENAME`, ...).
    pub const GENERIC: u16 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u16 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u16 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u16 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u16 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u16 = 1 << 7;
    /// `x`: a key expired.
    pub const EXPIRED: u16 = 1 << 8;
    /// `e`: a key was evicted.
    pub const EVICTED: u16 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u16 = 1 << 10;
    /// `m`: a key missed (not part of `A`).
    pub const KEY_MISS: u16 = 1 << 11;
    /// `d`: module events.
    pub const MODULE: u16 = 1 << 12;
    /// `n`: a key was created (not part of `A`).
    pub const NEW: u16 = 1 << 13;
    /// `A`: every class but `m` and `n`.
    pub const ALL: u16 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// Whether `flags` ask for any message at all: a class and a kind of channel.
fn publishes(flags: u16, class: u16) -> bool {
    flags & class != 0 && flags & (class::KEYSPACE | class::KEYEVENT) != 0
}

/// What happened to a key in the keyspace's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lifecycle {
    /// Expiry removed it (`expired`, class `x`).
    Expired,
    /// A write created it (`new`, class `n`).
    Created,
    /// `maxmemory` evicted it (`evicted`, class `e`; `engine/evict.rs`).
    Evicted,
}

/// The keys expiry removed and writes created since the engine last published, in order, for
/// the classes `notify-keyspace-events` asks for; and on a cluster node, when each key was last
/// created.
#[derive(Debug, Default)]
pub(crate) struct KeyEvents {
    expired: bool,
    created: bool,
    evicted: bool,
    log: Vec<(Lifecycle, Bytes)>,
    births: Option<Births>,
}

/// When each key of a cluster node's keyspace was last created (Redis's `dbAdd`; an overwrite
/// is not a creation): `CLUSTER GETKEYSINSLOT` lists a slot's keys newest first, as Redis 7.0's
/// slot-to-keys list, which `dbAdd` pushes onto, does. A key removed since keeps its entry until
/// [`Births::prune`]; a key created again is born again.
#[derive(Debug, Default)]
pub(crate) struct Births {
    next: u64,
    at: BTreeMap<Bytes, u64>,
}

impl Births {
    /// When `key` was last created, in creation order; None if before the node kept births.
    pub(crate) fn of(&self, key: &[u8]) -> Option<u64> {
        self.at.get(key).copied()
    }

    /// How many keys it remembers, present or removed since.
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// Forgets the keys `present` says are gone.
    pub(crate) fn prune(&mut self, present: impl Fn(&[u8]) -> bool) {
        self.at.retain(|k, _| present(k));
    }
}

impl KeyEvents {
    /// A log for `flags` that keeps `births`, or None when it has nothing to keep.
    fn for_flags(flags: u16, births: Option<Births>) -> Option<KeyEvents> {
        let (expired, created, evicted) = (
            publishes(flags, class::EXPIRED),
            publishes(flags, class::NEW),
            publishes(flags, class::EVICTED),
        );
        (expired || created || evicted || births.is_some()).then(|| KeyEvents {
            expired,
            created,
            evicted,
            log: Vec::new(),
            births,
        })
    }

    /// Expiry removed `key`.
    #[inline]
    pub(crate) fn expired(&mut self, key: &[u8]) {
        if self.expired {
            self.log
                .push((Lifecycle::Expired, Bytes::copy_from_slice(key)));
        }
    }

    /// Eviction removed `key`.
    pub(crate) fn evicted(&mut self, key: &[u8]) {
        if self.evicted {
            self.log
                .push((Lifecycle::Evicted, Bytes::copy_from_slice(key)));
        }
    }

    /// A write created `key`.
    #[inline]
    pub(crate) fn created(&mut self, key: &[u8]) {
        if self.created {
            self.log
                .push((Lifecycle::Created, Bytes::copy_from_slice(key)));
        }
        if let Some(births) = &mut self.births {
            births.next += 1;
            births.at.insert(Bytes::copy_from_slice(key), births.next);
        }
    }

    /// When each key was last created, on a cluster node.
    pub(crate) fn births(&self) -> Option<&Births> {
        self.births.as_ref()
    }

    /// The same log with nothing in it.
    pub(crate) fn emptied(self) -> KeyEvents {
        KeyEvents {
            log: Vec::new(),
            ..self
        }
    }
}

impl Engine {
    /// Sets `notify-keyspace-events` (flags of `cmd/config.rs`'s `class`), and with it what the
    /// keyspaces log.
    pub(crate) fn set_keyspace_events(&mut self, flags: u16) {
        self.config_mut().notify_keyspace_events = flags;
        for db in self.dbs_mut() {
            let births = db.watches.key_events.take().and_then(|e| e.births);
            db.watches.key_events = KeyEvents::for_flags(flags, births);
        }
    }

    /// Makes database 0 keep when each key was created (a cluster node's, for
    /// `CLUSTER GETKEYSINSLOT`).
    pub(crate) fn keep_births(&mut self) {
        let events = &mut self.db_mut(0).watches.key_events;
        events.get_or_insert_with(KeyEvents::default).births = Some(Births::default());
    }

    /// Forgets the births of removed keys once they outnumber the present ones, so that what a
    /// churning keyspace remembers stays in proportion to what it holds.
    pub(crate) fn prune_births(&mut self) {
        let db = self.db_mut(0);
        let present = db.len();
        let Some(events) = &mut db.watches.key_events else {
            return;
        };
        if events
            .births
            .as_ref()
            .is_none_or(|b| b.len() <= 2 * present + 64)
        {
            return;
        }
        let Some(mut births) = events.births.take() else {
            return;
        };
        births.prune(|k| db.stored(k).is_some());
        if let Some(events) = &mut db.watches.key_events {
            events.births = Some(births);
        }
    }

    /// Publishes event `event` of class `class` on `key` of database `db`, if
    /// `notify-keyspace-events` asks for its class.
    #[inline]
    pub(crate) fn notify(&mut self, class: u16, event: &str, key: &[u8], db: usize, now: i64) {
        let flags = self.config().notify_keyspace_events;
        if flags == 0 {
            return;
        }
        // What the keyspace logged happened before this event, whether or not its class is on.
        self.publish_key_events(now);
        if flags & class != 0 {
            self.publish_event(flags, event, key, db, now);
        }
    }

    fn publish_event(&mut self, flags: u16, event: &str, key: &[u8], db: usize, now: i64) {
        if flags & class::KEYSPACE != 0 {
            let channel = [format!("__keyspace@{db}__:").as_bytes(), key].concat();
            self.publish(&channel, event.as_bytes(), now);
        }
        if flags & class::KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}");
            self.publish(channel.as_bytes(), key, now);
        }
    }

    /// The live entry at `key` of database `db`, looked up as a read: Redis's `lookupKeyRead`,
    /// which counts a hit or a miss (`INFO stats`'s `keyspace_hits` and `keyspace_misses`) and,
    /// with `announce`, publishes `keymiss` for a miss (class `m`). `touch` marks a found key
    /// accessed (not for `LOOKUP_NOTOUCH`). The miss is published with the keyspaces' `expired`
    /// events, after them ([`Engine::publish_key_events`]): so a read of an expired key says
    /// `expired`, then `keymiss`, as Redis does.
    pub(crate) fn read_lookup(
        &mut self,
        db: usize,
        key: &[u8],
        h: u64,
        now: i64,
        touch: bool,
        announce: bool,
    ) -> Option<&mut Entry> {
        let Engine {
            dbs,
            stats,
            key_misses,
            config,
            ..
        } = self;
        let found = if touch {
            dbs[db].lookup_h(key, h, now)
        } else {
            dbs[db].lookup_untouched_h(key, h, now)
        };
        match found {
            Some(entry) => {
                stats.keyspace_hits += 1;
                Some(entry)
            }
            None => {
                stats.keyspace_misses += 1;
                if announce && publishes(config.notify_keyspace_events, class::KEY_MISS) {
                    key_misses.push((db, Bytes::copy_from_slice(key)));
                }
                None
            }
        }
    }

    /// What [`read_lookup`](Engine::read_lookup) does for a key it finds live, for a caller
    /// that found it by a handle (`db/handle.rs`): the hit is counted.
    #[inline]
    pub(crate) fn read_hit(&mut self) {
        self.stats.keyspace_hits += 1;
    }

    /// What [`read_lookup`](Engine::read_lookup) does for a key it finds missing, for a caller
    /// that knows the key is missing without probing for it (a native script that found it
    /// missing before, at the same frozen time).
    pub(crate) fn read_missed(&mut self, db: usize, key: &[u8], announce: bool) {
        self.stats.keyspace_misses += 1;
        if announce && publishes(self.config.notify_keyspace_events, class::KEY_MISS) {
            self.key_misses.push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// Publishes `expired` and `new` for every key expiry removed or a write created since the
    /// last call, in order, then `keymiss` for every read that missed.
    pub(crate) fn publish_key_events(&mut self, now: i64) {
        let flags = self.config().notify_keyspace_events;
        self.publish_key_lifecycle(flags, now);
        if !self.key_misses.is_empty() {
            for (db, key) in std::mem::take(&mut self.key_misses) {
                self.publish_event(flags, "keymiss", &key, db, now);
            }
        }
    }

    fn publish_key_lifecycle(&mut self, flags: u16, now: i64) {
        if flags & (class::EXPIRED | class::NEW | class::EVICTED) == 0 {
            return;
        }
        for db in 0..self.dbs().len() {
            let log = match &mut self.db_mut(db).watches.key_events {
                Some(events) if !events.log.is_empty() => std::mem::take(&mut events.log),
                _ => continue,
            };
            for (what, key) in log {
                let event = match what {
                    Lifecycle::Expired => "expired",
                    Lifecycle::Evicted => "evicted",
                    // Created and removed again before anything was published: never there.
                    Lifecycle::Created if self.dbs()[db].peek(&key, now).is_none() => continue,
                    Lifecycle::Created => "new",
                };
                self.publish_event(flags, event, &key, db, now);
            }
        }
    }
}
