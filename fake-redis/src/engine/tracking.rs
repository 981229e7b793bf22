//! Client-side caching (`CLIENT TRACKING`): which client may hold which key, and the
//! invalidation messages that tell it a key changed.
//!
//! This is Redis 7.0's `tracking.c`, with its tables and its order:
//!
//! - In the default mode, the keys a tracking client reads (a read-only command's keys, in a
//!   transaction too) are remembered in the tracking table, key to client ids, global across
//!   databases. For each read-only command a script calls, Redis 7.0 remembers the keys the
//!   script was called with (`EVAL`'s `KEYS`), not the ones the command read: a script that
//!   reads a key it was not given leaves nothing to invalidate. Redis 7.4 (and Valkey)
//!   remembers the keys the called command read. When a remembered key is modified or expires, each client in its
//!   entry gets one message naming it and the entry is dropped: the next change of the key says
//!   nothing until the client reads it again. `OPTIN` remembers only after `CLIENT CACHING yes`,
//!   `OPTOUT` all but after `CLIENT CACHING no`; `NOLOOP` spares a client the messages of its own
//!   changes.
//! - In `BCAST` mode nothing is remembered: every key modified under one of a client's prefixes
//!   (the empty prefix by default) is collected per prefix, and after the command each client of
//!   the prefix gets one message with all of them, in byte order (Redis collects them for one
//!   turn of its event loop, which the fake's turn is: one command).
//! - A flush (`FLUSHALL`, `FLUSHDB`) sends every tracking client a null in place of the keys,
//!   and forgets the whole table.
//!
//! A message goes to the client itself in RESP3 as the push `invalidate`, or to the client its
//! `REDIRECT` names: in RESP3 as that push, in RESP2 as a pub/sub message on
//! `__redis__:invalidate` if that client is subscribed to anything (and nowhere otherwise). A
//! redirect to a client that has gone marks the tracking broken (`CLIENT TRACKINGINFO`'s
//! `broken_redirect`), and a RESP3 client hears `tracking-redir-broken` instead. Messages reach a
//! client's outbox like any push, so doors and faults carry them; the messages a command's own
//! changes send its client come after its reply, as Redis 7.0 holds them back until then.
//! Those sent before a command runs (of keys evicted for it, or dropped to keep the table
//! within `tracking-table-max-keys`) come ahead of its reply, as Redis sends them at once.
//!
//! The keyspace logs the keys each write signals (`Db::touch`, Redis's `signalModifiedKey`),
//! expiry removes, and flushes, while any client tracks; the engine reads that log before each
//! read is remembered and at the end of each command (and after the active expiry cycle), so
//! invalidations follow the order of the changes.

use crate::engine::{ClientId, Engine};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// The channel RESP2 invalidation messages are published on.
const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// One client's tracking mode (`CLIENT TRACKING on …`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Tracking {
    /// The client that gets the messages (`REDIRECT`); 0 for the client itself.
    pub redirect: u64,
    /// `BCAST`.
    pub bcast: bool,
    /// `OPTIN`.
    pub optin: bool,
    /// `OPTOUT`.
    pub optout: bool,
    /// `NOLOOP`.
    pub noloop: bool,
    /// `CLIENT CACHING yes|no` was given for the next command (or transaction).
    pub caching: bool,
    /// The redirect client has gone.
    pub broken_redirect: bool,
    /// The `BCAST` prefixes, in byte order.
    pub prefixes: BTreeSet<Bytes>,
}

/// What a `BCAST` prefix collects: the keys modified under it since the last broadcast, each
/// with the client that modified it last (for `NOLOOP`), and the clients that listen to it.
#[derive(Default)]
pub(crate) struct Prefix {
    keys: BTreeMap<Bytes, Option<u64>>,
    clients: BTreeSet<u64>,
}

/// The server's tracking state.
#[derive(Default)]
pub(crate) struct TrackingTables {
    /// How many clients track (`INFO`'s `tracking_clients`).
    clients: usize,
    /// Key to the ids of the clients that may hold it, each id as the bytes Redis's radix tree
    /// orders it by (its memory, little-endian), so messages go out in Redis's order.
    keys: BTreeMap<Bytes, BTreeSet<[u8; 8]>>,
    /// The `BCAST` prefixes.
    prefixes: BTreeMap<Bytes, Prefix>,
    /// The keys the running script was called with (`EVAL`'s `KEYS`), which Redis 7.0 remembers
    /// for each read-only command the script calls, in place of that command's keys.
    script_keys: Vec<Bytes>,
    /// The invalidations sent before a command ran to its own client: the client, and
    /// where they sit in its outbox (from, to). They go out ahead of the command's reply.
    early: Option<(u64, usize, usize)>,
}

/// The keys a prefix collected, each with the client that changed it last.
type Collected = Vec<(Bytes, Option<u64>)>;

/// What an invalidation message says.
enum Invalidated<'a> {
    /// These keys changed.
    Keys(&'a [Bytes]),
    /// Everything did (a flush).
    All,
}

impl Engine {
    /// Whether any client tracks keys: while none does, no command pays for tracking.
    #[inline]
    pub(crate) fn is_tracking(&self) -> bool {
        self.tracking.clients > 0
    }

    /// How many clients track keys.
    pub(crate) fn tracking_clients(&self) -> usize {
        self.tracking.clients
    }

    /// Redis's `enableTracking`: client `id` tracks in `mode` (its `caching` and
    /// `broken_redirect` start over), with `prefixes` added to its `BCAST` prefixes.
    pub(crate) fn enable_tracking(&mut self, id: u64, mode: Tracking, prefixes: &[Bytes]) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let old = c.tracking.take().map(|t| *t).unwrap_or_default();
        let mut tracking = Tracking {
            caching: old.caching,
            broken_redirect: false,
            prefixes: old.prefixes,
            ..mode
        };
        if tracking.bcast {
            let wanted = if prefixes.is_empty() {
                vec![Bytes::new()]
            } else {
                prefixes.to_vec()
            };
            for prefix in wanted {
                let entry = self.tracking.prefixes.entry(prefix.clone()).or_default();
                if entry.clients.insert(id) {
                    tracking.prefixes.insert(prefix);
                }
            }
        }
        if let Some(c) = self.clients.get_mut(&id) {
            c.tracking = Some(Box::new(tracking));
        }
        self.set_tracking_count(self.count_tracking_clients());
    }

    /// Redis's `disableTracking`: client `id` stops tracking and leaves its prefixes. Its ids in
    /// the tracking table are forgotten lazily, as Redis's are.
    pub(crate) fn disable_tracking(&mut self, id: u64) {
        let Some(tracking) = self.clients.get_mut(&id).and_then(|c| c.tracking.take()) else {
            return;
        };
        for prefix in &tracking.prefixes {
            if let Some(p) = self.tracking.prefixes.get_mut(prefix) {
                p.clients.remove(&id);
                if p.clients.is_empty() {
                    self.tracking.prefixes.remove(prefix);
                }
            }
        }
        self.set_tracking_count(self.count_tracking_clients());
    }

    fn count_tracking_clients(&self) -> usize {
        self.clients
            .values()
            .filter(|c| c.tracking.is_some())
            .count()
    }

    /// Sets the count of tracking clients; the keyspace logs changes while it is above 0.
    fn set_tracking_count(&mut self, count: usize) {
        let (was, now) = (self.tracking.clients > 0, count > 0);
        self.tracking.clients = count;
        if was != now {
            for db in &mut self.dbs {
                db.log_tracked(now);
            }
        }
        if !now {
            self.tracking.keys.clear();
        }
    }

    /// Redis's `trackingRememberKeys`: client `id` read `keys`; remembered unless it tracks in
    /// `BCAST` mode, or `OPTIN`/`OPTOUT` and `CLIENT CACHING` say not to.
    pub(crate) fn remember_tracked_keys(&mut self, id: u64, keys: &[Bytes]) {
        let Some(t) = self.clients.get(&id).and_then(|c| c.tracking.as_deref()) else {
            return;
        };
        if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) {
            return;
        }
        for key in keys {
            self.tracking
                .keys
                .entry(key.clone())
                .or_default()
                .insert(id.to_le_bytes());
        }
    }

    /// Sends the invalidations of the changes the keyspace logged since the last look, in
    /// order; `current` is the client whose command made them (for `NOLOOP`), None for expiry.
    pub(crate) fn invalidate_logged(&mut self, current: Option<u64>, now: i64) {
        if !self.is_tracking() {
            return;
        }
        // `FLUSHALL` flushes every database but sends one message, as Redis does.
        let mut flushed = false;
        for db in 0..self.dbs.len() {
            for change in self.dbs[db].take_tracked() {
                match change {
                    Some(key) => {
                        self.invalidate_key(&key, current, true, now);
                        flushed = false;
                    }
                    None if !flushed => {
                        self.invalidate_all(now);
                        flushed = true;
                    }
                    None => {}
                }
            }
        }
    }

    /// Redis's `trackingInvalidateKey`: `key` changed (or, without `bcast`, left the table).
    fn invalidate_key(&mut self, key: &Bytes, current: Option<u64>, bcast: bool, now: i64) {
        if bcast {
            for (prefix, p) in &mut self.tracking.prefixes {
                if key.starts_with(prefix) {
                    p.keys.insert(key.clone(), current);
                }
            }
        }
        let Some(ids) = self.tracking.keys.remove(key) else {
            return;
        };
        for id in ids {
            let id = u64::from_le_bytes(id);
            let Some(t) = self.clients.get(&id).and_then(|c| c.tracking.as_deref()) else {
                continue;
            };
            if t.bcast || (t.noloop && current == Some(id)) {
                continue;
            }
            self.send_invalidation(id, Invalidated::Keys(std::slice::from_ref(key)), now);
        }
    }

    /// Redis's `trackingLimitUsedSlots`, after each command (Redis's `beforeSleep`): while the
    /// table holds more keys than `tracking-table-max-keys` (0: no limit), keys from a random
    /// place in it on are invalidated and forgotten. Redis spreads that work over the turns of
    /// its event loop; the fake, which has no idle turns, does it at once.
    pub(crate) fn limit_tracking_table(&mut self, now: i64) {
        let max = self
            .config
            .settings
            .get("tracking-table-max-keys")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1_000_000);
        if max == 0 || self.tracking.keys.len() <= max {
            return;
        }
        let start = super::xorshift(&mut self.rng).to_be_bytes();
        while self.tracking.keys.len() > max {
            let from = (Bound::Included(&start[..]), Bound::Unbounded);
            let keys = &self.tracking.keys;
            let Some(key) = keys
                .range::<[u8], _>(from)
                .next()
                .or_else(|| keys.iter().next())
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.invalidate_key(&key, None, false, now);
        }
    }

    /// `INFO`'s `tracking_total_keys`, `tracking_total_items` (a client per key, ids of clients
    /// that stopped tracking included, as Redis forgets them lazily) and
    /// `tracking_total_prefixes`.
    pub(crate) fn tracking_totals(&self) -> (usize, usize, usize) {
        let t = &self.tracking;
        let items = t.keys.values().map(BTreeSet::len).sum();
        (t.keys.len(), items, t.prefixes.len())
    }

    /// Redis's `trackingInvalidateKeysOnFlush`: every tracking client hears that everything
    /// changed, and the table is forgotten.
    fn invalidate_all(&mut self, now: i64) {
        let ids: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.tracking.is_some())
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.send_invalidation(id, Invalidated::All, now);
        }
        self.tracking.keys.clear();
    }

    /// Redis's `trackingBroadcastInvalidationMessages`: each `BCAST` prefix that collected keys
    /// sends them to its clients (a `NOLOOP` client without its own changes), and starts over.
    pub(crate) fn broadcast_invalidations(&mut self, now: i64) {
        if !self.is_tracking() || self.tracking.prefixes.values().all(|p| p.keys.is_empty()) {
            return;
        }
        let prefixes: Vec<(Collected, Vec<u64>)> = self
            .tracking
            .prefixes
            .values_mut()
            .filter(|p| !p.keys.is_empty())
            .map(|p| {
                let keys = std::mem::take(&mut p.keys).into_iter().collect();
                (keys, p.clients.iter().copied().collect())
            })
            .collect();
        for (keys, clients) in prefixes {
            let all: Vec<Bytes> = keys.iter().map(|(k, _)| k.clone()).collect();
            for id in clients {
                let noloop = self
                    .clients
                    .get(&id)
                    .and_then(|c| c.tracking.as_deref())
                    .is_some_and(|t| t.noloop);
                if noloop {
                    let others: Vec<Bytes> = keys
                        .iter()
                        .filter(|(_, by)| *by != Some(id))
                        .map(|(k, _)| k.clone())
                        .collect();
                    if !others.is_empty() {
                        self.send_invalidation(id, Invalidated::Keys(&others), now);
                    }
                } else {
                    self.send_invalidation(id, Invalidated::Keys(&all), now);
                }
            }
        }
    }

    /// Redis's `sendTrackingMessage`: the message for client `id`, to it or to its redirect.
    fn send_invalidation(&mut self, id: u64, what: Invalidated<'_>, now: i64) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let redirect = c.tracking.as_deref().map_or(0, |t| t.redirect);
        let mut target = id;
        if redirect != 0 {
            if !self.clients.contains_key(&redirect) {
                let c = self.clients.get_mut(&id).expect("looked up above");
                if let Some(t) = c.tracking.as_deref_mut() {
                    t.broken_redirect = true;
                }
                if c.protocol > 2 {
                    c.push(
                        now,
                        Frame::Push(vec![
                            Frame::Bulk(Bytes::from_static(b"tracking-redir-broken")),
                            Frame::Integer(redirect as i64),
                        ]),
                    );
                }
                return;
            }
            target = redirect;
        }
        let c = self.clients.get_mut(&target).expect("looked up above");
        let payload = match what {
            Invalidated::Keys(keys) => {
                Frame::Array(keys.iter().cloned().map(Frame::Bulk).collect())
            }
            Invalidated::All => Frame::Null,
        };
        let frame = if c.protocol > 2 {
            Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"invalidate")),
                payload,
            ])
        } else if redirect != 0 && c.is_subscriber() {
            Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"message")),
                Frame::Bulk(Bytes::from_static(INVALIDATE_CHANNEL)),
                payload,
            ])
        } else {
            // RESP2 without a redirect to a subscriber: RESP2 has no way to push it.
            return;
        };
        c.push(now, frame);
    }

    /// Before client `id`'s command runs, after the eviction (Redis's `processCommand`): the
    /// invalidations of the evicted keys, and of those the tracking table's limit drops, go
    /// out at once, as no command runs yet, so those for `id` itself come ahead of its reply.
    /// `queued` is how many pushes its outbox held before the eviction.
    pub(crate) fn invalidate_before_command(&mut self, id: u64, queued: usize, now: i64) {
        if !self.is_tracking() {
            return;
        }
        self.invalidate_logged(None, now);
        self.limit_tracking_table(now);
        let held = self.clients.get(&id).map_or(0, |c| c.outbox.len());
        self.tracking.early = (held > queued).then_some((id, queued, held));
    }

    /// The reply `client` is sent first: the first of the invalidations sent to it before its
    /// command ran, when there are any, with the rest and then `reply` in its outbox in
    /// their place; `reply` itself otherwise. A reply that must not be sent (`CLIENT REPLY OFF`)
    /// is dropped, and the invalidations go out all the same.
    pub(crate) fn reply_after_early_invalidations(
        &mut self,
        client: ClientId,
        reply: Frame,
    ) -> Frame {
        let Some((id, from, to)) = self.tracking.early.take() else {
            return reply;
        };
        let Some(c) = self.clients.get_mut(&client.0) else {
            return reply;
        };
        if id != client.0 || c.is_blocked() || to > c.outbox.len() || from >= to {
            return reply;
        }
        let mut early: Vec<_> = c.outbox.drain(from..to).collect();
        let first = early.remove(0);
        if !std::mem::take(&mut c.silenced) {
            early.push(crate::engine::Outbound {
                at: first.at,
                frame: reply,
            });
        }
        for (i, out) in early.into_iter().enumerate() {
            c.outbox.insert(from + i, out);
        }
        first.frame
    }

    /// Notes the keys of the script command about to run (see [`TrackingTables`]).
    pub(crate) fn set_script_keys(&mut self, keys: Vec<Bytes>) {
        self.tracking.script_keys = keys;
    }

    /// The keys of the running script command.
    pub(crate) fn script_keys(&self) -> Vec<Bytes> {
        self.tracking.script_keys.clone()
    }

    /// The tracking mode of `client`, if it tracks.
    pub(crate) fn tracking_of(&self, client: ClientId) -> Option<&Tracking> {
        self.clients.get(&client.0)?.tracking.as_deref()
    }
}
