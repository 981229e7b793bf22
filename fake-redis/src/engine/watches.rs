//! `WATCH` bookkeeping: which client watches which key, and whose `EXEC` must fail.
//!
//! A watch lives in two places that must agree: the client's list of watched keys (so `UNWATCH`,
//! `EXEC` and a disconnect can forget them) and the database's index from key to watchers (so a
//! write can find them, Redis's `signalModifiedKey`). A write only marks the key in its database;
//! the engine moves those marks to the clients after every command and every expiry cycle, and
//! only while some watch exists, so a server nobody watches pays nothing for `WATCH`.

use super::{Engine, Multi};
use bytes::Bytes;

/// What a client did to its transaction while a script was busy. Redis answers `MULTI`,
/// `DISCARD` and `EXEC` at once meanwhile, and refuses every other command with `BUSY`, which
/// dooms an open transaction; a front door answers them without the engine's lock and settles
/// them here at the client's next step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BusyTransaction {
    /// The transaction the engine knows was dropped, with the client's watches (`DISCARD`, and
    /// `EXEC`'s `EXECABORT`, which Redis answers even without a `MULTI`).
    pub discarded: bool,
    /// A `MULTI` was answered `+OK`.
    pub opened: bool,
    /// A command was refused inside the transaction: its `EXEC` replies `EXECABORT`.
    pub flagged: bool,
}

impl Engine {
    /// Client `id` watches `key` of database `db` from `now` on (once per key).
    pub(crate) fn watch(&mut self, id: u64, db: usize, key: &Bytes, now: i64) {
        let Some(client) = self.clients.get_mut(&id) else {
            return;
        };
        if client.watching.iter().any(|(d, k)| *d == db && k == key) {
            return;
        }
        client.watching.push((db, key.clone()));
        self.dbs[db].watch(key, id, now);
        self.watchers += 1;
    }

    /// Whether a key client `id` watches was written, or expired, since it was watched: its
    /// `EXEC` must fail.
    pub(crate) fn watch_broken(&self, id: u64, now: i64) -> bool {
        self.clients.get(&id).is_some_and(|c| {
            c.dirty_cas
                || c.watching
                    .iter()
                    .any(|(db, key)| self.dbs[*db].watched_key_expired(key, id, now))
        })
    }

    /// Marks the clients whose watched keys were touched: their `EXEC` will fail. Every command
    /// ends here, so without watches this is one comparison.
    #[inline]
    pub(crate) fn collect_dirty(&mut self) {
        if self.watchers > 0 {
            self.mark_dirty_watchers();
        }
    }

    fn mark_dirty_watchers(&mut self) {
        for db in &mut self.dbs {
            for id in std::mem::take(&mut db.watches.dirty) {
                if let Some(c) = self.clients.get_mut(&id) {
                    c.dirty_cas = true;
                }
            }
        }
    }

    /// Forgets every key client `id` watches (`UNWATCH`, after `EXEC`/`DISCARD`, a disconnect).
    pub(crate) fn unwatch(&mut self, id: u64) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let watching = std::mem::take(&mut c.watching);
        c.dirty_cas = false;
        for (db, key) in watching {
            self.dbs[db].unwatch(&key, id);
            self.watchers = self.watchers.saturating_sub(1);
        }
    }

    /// Whether client `id` has a transaction open.
    pub(crate) fn in_multi(&self, id: u64) -> bool {
        self.clients.get(&id).is_some_and(|c| c.multi.is_some())
    }

    /// Settles what client `id` did to its transaction while a script was busy.
    pub(crate) fn settle_busy_transaction(&mut self, id: u64, done: BusyTransaction) {
        if done.discarded {
            if let Some(c) = self.clients.get_mut(&id) {
                c.multi = None;
            }
            self.unwatch(id);
        }
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        if done.opened {
            c.multi = Some(Multi::default());
        }
        if let (true, Some(multi)) = (done.flagged, &mut c.multi) {
            multi.failed = true;
        }
    }
}
