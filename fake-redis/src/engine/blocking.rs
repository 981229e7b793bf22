//! Clients blocked on keys (`BLPOP` and its kin), on the engine's clock and without I/O.
//!
//! A blocking command that finds nothing to take leaves its client here: registered on each of
//! its keys, first come first served per key, with a deadline on the engine's clock (none for a
//! timeout of 0). Nothing here waits. The engine only keeps the registry, and a front door asks
//! it three things: whether its client is blocked, when its deadline falls (to sleep until then,
//! on whatever clock the door runs), and the reply once the block ended.
//!
//! A key becomes *ready* when it is created while a client waits on it (Redis's
//! `signalKeyAsReady`, called from `dbAdd`): the keyspace notes it (`Db::insert`), in the order it
//! happened. After the whole command, transaction or script that made keys ready, the engine
//! serves the waiters, as Redis's `handleClientsBlockedOnKeys` does: keys in the order they became
//! ready, each key's clients in the order they blocked, each served client's pop possibly emptying
//! the key for the next, and a served move making its destination ready in turn
//! (`cmd/blocking.rs` does the serving). A client whose deadline the clock passes is answered
//! nil when the engine next looks at its clock: the catch-up at every command, or
//! [`Engine::catch_up`] from a driver that woke at [`Engine::next_block_deadline`].
//!
//! The registry is generic over what a waiter wants. A [`Waiter`] says which type of value at a
//! ready key can serve it; `cmd/blocking.rs` says how it is served. A stream reader
//! (`XREAD`/`XREADGROUP … BLOCK`) wants a stream; `XADD` signals its key (an existing stream
//! that grows is ready too), and so does `XGROUP DESTROY`. Serving it reads the entries after
//! its ID (for a group, the group's last delivered ID as it is then) without emptying anything,
//! so every plain reader blocked on the key is served in turn, and a reader the stream has
//! nothing new for stays blocked. A group reader whose key is no longer a stream with its group
//! is answered an error after the command that changed it, as Redis 7.0 does.
//!
//! A disconnect, a restart, a failover or a crash forgets a blocked client with its connection;
//! `CLIENT UNBLOCK` ends a block early, as a timeout or with an error.

use crate::engine::db::Value;
use crate::engine::stream::StreamId;
use crate::engine::{ClientId, Engine};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What a blocked client waits for, and so what serves it (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Waiter {
    /// `BLPOP`/`BRPOP` (`count` None: one element, answered `[key, element]`) and `BLMPOP`
    /// (`count` elements, answered `[key, [element…]]`), from the head when `left`.
    ListPop { left: bool, count: Option<usize> },
    /// `BLMOVE`/`BRPOPLPUSH`: one element moved to `destination`, answered as the element.
    ListMove {
        left: bool,
        destination: Bytes,
        to_left: bool,
    },
    /// `BZPOPMIN`/`BZPOPMAX` (`count` None: answered `[key, member, score]`) and `BZMPOP`
    /// (answered `[key, [[member, score]…]]`), the highest scores when `max`.
    ZSetPop { max: bool, count: Option<usize> },
    /// `XREAD … BLOCK` (`group` None: the entries after `after[i]` of the i-th key, `$` resolved
    /// when it blocked) and `XREADGROUP … BLOCK … >` (the entries new to the group when served),
    /// at most `count` (0 for all), answered as `XREAD` answers one stream.
    StreamRead {
        after: Vec<StreamId>,
        group: Option<Box<GroupRead>>,
        count: usize,
    },
    /// `WAIT`: no key serves it; the replication tick ends it (`engine/replication.rs`), and an
    /// early end answers how many replicas had acknowledged when it last looked (`acked`).
    /// `WAITAOF` is one too, answering `[local, acked]` with its `local` count.
    Replicas { acked: i64, local: Option<i64> },
    /// A command `CLIENT PAUSE` holds (`engine/pause.rs`): no key serves it, and it runs again
    /// when the pause ends.
    Postponed { argv: Vec<Bytes> },
}

/// `WAIT`'s reply (`acked`), or `WAITAOF`'s (`[local, acked]`).
pub(crate) fn wait_reply(acked: i64, local: Option<i64>) -> Frame {
    match local {
        None => Frame::Integer(acked),
        Some(local) => Frame::Array(vec![Frame::Integer(local), Frame::Integer(acked)]),
    }
}

/// Who an `XREADGROUP` reads as.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GroupRead {
    /// The group's name.
    pub group: Bytes,
    /// The consumer's name, created when it is served if it is missing.
    pub consumer: Bytes,
    /// `NOACK`: delivered entries do not become pending.
    pub noack: bool,
}

impl Waiter {
    /// Whether a ready key holding `value` can serve this waiter (Redis serves a list waiter only
    /// from a list, a sorted-set waiter only from a sorted set; any other type leaves it blocked).
    pub fn served_by(&self, value: &Value) -> bool {
        match self {
            Waiter::ListPop { .. } | Waiter::ListMove { .. } => matches!(value, Value::List(_)),
            Waiter::ZSetPop { .. } => matches!(value, Value::ZSet(_)),
            Waiter::StreamRead { .. } => matches!(value, Value::Stream(_)),
            Waiter::Replicas { .. } | Waiter::Postponed { .. } => false,
        }
    }

    /// The reply when the block ends without being served (a timeout, `CLIENT UNBLOCK`): a null
    /// array for every blocking command in Redis 7.0, moves included.
    pub fn timed_out(&self) -> Frame {
        match self {
            Waiter::Replicas { acked, local } => wait_reply(*acked, *local),
            _ => Frame::NullArray,
        }
    }
}

/// One blocked client's wait.
#[derive(Debug)]
pub(crate) struct Blocked {
    /// The database of its keys (the one it had selected when it blocked).
    pub db: usize,
    /// The keys it waits on, in the order it named them.
    pub keys: Vec<Bytes>,
    /// When it times out, on the engine's clock (clock jumps included); None waits forever.
    pub deadline: Option<i64>,
    /// What serves it.
    pub waiter: Waiter,
}

/// The clients waiting on the keys of one database, and the keys that became ready since the
/// engine last served them.
#[derive(Default)]
pub(crate) struct KeyWaiters {
    by_key: BTreeMap<Bytes, VecDeque<u64>>,
    ready: Vec<Bytes>,
    /// The blocked `XREADGROUP` clients, which a deleted key or group answers.
    group_readers: BTreeSet<u64>,
}

impl KeyWaiters {
    /// Whether no client waits on a key of the database: then a created key signals nothing.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Redis's `signalKeyAsReady`: `key` was created; if a client waits on it, it is ready.
    #[inline]
    pub fn signal(&mut self, key: &[u8]) {
        if self.by_key.is_empty() {
            return;
        }
        if self.by_key.contains_key(key) && !self.ready.iter().any(|k| k.as_ref() == key) {
            self.ready.push(Bytes::copy_from_slice(key));
        }
    }

    /// Signals every waited-on key that `present` says the database now holds (Redis's
    /// `scanDatabaseForReadyKeys`, after `SWAPDB` brought in other keys).
    pub fn signal_present(&mut self, present: impl Fn(&[u8]) -> bool) {
        let keys: Vec<Bytes> = self.by_key.keys().filter(|k| present(k)).cloned().collect();
        for key in keys {
            self.signal(&key);
        }
    }

    /// The clients waiting on `key`, in the order they blocked.
    pub fn waiting_on(&self, key: &[u8]) -> Vec<u64> {
        self.by_key
            .get(key)
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The keys that became ready, in order; the list starts over.
    pub fn take_ready(&mut self) -> Vec<Bytes> {
        std::mem::take(&mut self.ready)
    }

    /// The blocked `XREADGROUP` clients of this database, in the order of their ids.
    pub fn group_readers(&self) -> Vec<u64> {
        self.group_readers.iter().copied().collect()
    }

    /// Whether a blocked `XREADGROUP` client waits on a key of this database.
    pub fn has_group_readers(&self) -> bool {
        !self.group_readers.is_empty()
    }

    /// How many keys a client waits on, and how many of them a blocked `XREADGROUP` client
    /// waits on (Redis's `blocking_keys` and `blocking_keys_unblock_on_nokey`: a group reader is
    /// answered when its key goes).
    fn key_counts(&self) -> (usize, usize) {
        let on_nokey = self
            .by_key
            .values()
            .filter(|q| q.iter().any(|c| self.group_readers.contains(c)))
            .count();
        (self.by_key.len(), on_nokey)
    }

    fn add(&mut self, key: &Bytes, client: u64) {
        let queue = self.by_key.entry(key.clone()).or_default();
        if !queue.contains(&client) {
            queue.push_back(client);
        }
    }

    fn remove(&mut self, key: &[u8], client: u64) {
        if let Some(queue) = self.by_key.get_mut(key) {
            queue.retain(|&c| c != client);
            if queue.is_empty() {
                self.by_key.remove(key);
            }
        }
    }
}

impl Engine {
    /// Blocks client `id` as `blocked` says (see the [module docs](self)). The command that
    /// blocks it has no reply yet.
    pub(crate) fn block(&mut self, id: u64, blocked: Blocked) {
        // A driver that breaks the contract and runs a command on a blocked client replaces the
        // block: the old one must leave no key entry or deadline behind.
        self.forget_block(id);
        let Some(client) = self.clients.get_mut(&id) else {
            return;
        };
        let db = &mut self.dbs[blocked.db];
        for key in &blocked.keys {
            db.waiters.add(key, id);
        }
        if let Waiter::StreamRead { group: Some(_), .. } = blocked.waiter {
            db.waiters.group_readers.insert(id);
        }
        if let Some(at) = blocked.deadline {
            self.block_deadlines.insert((at, id));
        }
        client.unblocked = None;
        client.blocked = Some(Box::new(blocked));
        self.blocked_clients += 1;
    }

    /// Ends the block of client `id` with `reply`, which its driver then takes
    /// ([`Engine::take_unblocked_reply`]); its driver is woken. False if it was not blocked.
    pub(crate) fn unblock(&mut self, id: u64, reply: Frame) -> bool {
        if !self.forget_block(id) {
            return false;
        }
        // The blocking command counts now, with the reply it ends with (`engine/stats.rs`).
        let name = self.clients.get(&id).map_or("NULL", |c| c.last_command);
        self.count_unblocked(name, &reply);
        let client = self
            .clients
            .get_mut(&id)
            .expect("a blocked client is connected");
        client.unblocked = Some(reply);
        client.settle_unblocked_reply();
        if let Some(w) = client.waker.take() {
            w.wake();
        }
        true
    }

    /// Takes client `id` out of the registry, replying nothing (a disconnect). False if it was
    /// not blocked.
    pub(crate) fn forget_block(&mut self, id: u64) -> bool {
        let Some(blocked) = self.clients.get_mut(&id).and_then(|c| c.blocked.take()) else {
            return false;
        };
        if let Waiter::Postponed { .. } = blocked.waiter {
            self.forget_postponed(id);
        }
        let db = &mut self.dbs[blocked.db];
        for key in &blocked.keys {
            db.waiters.remove(key, id);
        }
        db.waiters.group_readers.remove(&id);
        if let Some(at) = blocked.deadline {
            self.block_deadlines.remove(&(at, id));
        }
        self.blocked_clients -= 1;
        true
    }

    /// Answers nil to every blocked client whose deadline is at or before `now`, earliest first.
    pub(crate) fn time_out_blocked(&mut self, now: i64) {
        while let Some(&(at, id)) = self.block_deadlines.first() {
            if at > now {
                break;
            }
            let Some(blocked) = self.clients.get(&id).and_then(|c| c.blocked.as_ref()) else {
                // Every path that ends a block removes its deadline; never loop on one left.
                self.block_deadlines.remove(&(at, id));
                continue;
            };
            let reply = blocked.waiter.timed_out();
            self.unblock(id, reply);
        }
    }

    /// What client `id` waits for, if it is blocked.
    pub(crate) fn blocked(&self, id: u64) -> Option<&Blocked> {
        self.clients.get(&id)?.blocked.as_deref()
    }

    /// How many clients are blocked (`INFO`'s `blocked_clients`): those a pause holds count, as
    /// Redis 7.0 counts them.
    pub(crate) fn blocked_clients(&self) -> usize {
        self.blocked_clients
    }

    /// `INFO`'s `total_blocking_keys` and `total_blocking_keys_on_nokey`: the keys clients
    /// wait on over every database, and those of them a blocked `XREADGROUP` waits on.
    pub(crate) fn blocking_keys(&self) -> (usize, usize) {
        self.dbs.iter().fold((0, 0), |(all, nokey), db| {
            let (a, n) = db.waiters.key_counts();
            (all + a, nokey + n)
        })
    }

    /// Whether `client` is blocked: its command has no reply yet.
    pub fn is_blocked(&self, client: ClientId) -> bool {
        self.clients
            .get(&client.0)
            .is_some_and(|c| c.blocked.is_some())
    }

    /// The reply of `client`'s blocking command once its block ended (served, timed out or
    /// unblocked), once. A client whose block ended by closing it (Redis's
    /// `CLIENT_CLOSE_AFTER_REPLY`) is disconnected as its reply is taken.
    pub fn take_unblocked_reply(&mut self, client: ClientId) -> Option<Frame> {
        let c = self.clients.get_mut(&client.0)?;
        let reply = c.unblocked.take();
        if reply.is_some() && c.closing {
            self.disconnect(client);
        }
        reply
    }

    /// Ends `client`'s block without a reply, as if it had not sent the command (its driver gave
    /// up on it). Nothing was taken from the keys for it.
    pub fn cancel_block(&mut self, client: ClientId) {
        self.forget_block(client.0);
        if let Some(c) = self.clients.get_mut(&client.0) {
            c.unblocked = None;
        }
    }

    /// When `client`'s block times out, in the clock's time before jumps (the time drivers
    /// sleep on): None when it is not blocked or waits forever.
    pub fn block_deadline(&self, client: ClientId) -> Option<i64> {
        let blocked = self.blocked(client.0)?;
        if let Waiter::Postponed { .. } = blocked.waiter {
            return self.pause_wake_time();
        }
        Some(blocked.deadline?.saturating_sub(self.clock_offset))
    }

    /// The earliest deadline of any blocked client, in the clock's time before jumps: a driver
    /// that moves the clock stops there and calls [`Engine::catch_up`], which answers it.
    pub fn next_block_deadline(&self) -> Option<i64> {
        let deadline = self
            .block_deadlines
            .first()
            .map(|&(at, _)| at.saturating_sub(self.clock_offset));
        let pause_end = (!self.postponed.is_empty())
            .then(|| self.pause_wake_time())
            .flatten();
        deadline.into_iter().chain(pause_end).min()
    }

    /// Asks to be woken (once) when `client`'s block ends or it is disconnected; at once if either
    /// already happened. Unlike [`Engine::register_waker`], frames in its outbox do not wake it.
    pub fn wake_when_unblocked(&mut self, client: ClientId, waker: &std::task::Waker) {
        match self.clients.get_mut(&client.0) {
            Some(c) if c.blocked.is_some() => c.waker = Some(waker.clone()),
            _ => waker.wake_by_ref(),
        }
    }
}
