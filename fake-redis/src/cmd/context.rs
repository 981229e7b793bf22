//! What a command handler works with: the calling client, its database, the frozen time of the
//! command, and the engine's state through methods named for what handlers need.
//!
//! A handler never sees the engine's fields. It asks its context for the keyspace of the selected
//! database, the calling client, the pub/sub registry, the watches, the script cache or the seeded
//! random generator, and the context fills in who is asking and when. So the engine keeps its own
//! invariants (a subscription is in the client and in the registry, or in neither), and a command
//! cannot reach past them.

use super::reads::Reads;
use crate::engine::db::{Db, Entry, hash_key};
use crate::engine::{Client, ClientId, Engine, ScriptCache, Subscription};
use bytes::Bytes;
use std::cell::Cell;

/// The context of one command of one client. See the [module docs](self).
pub(crate) struct Cx<'a> {
    engine: &'a mut Engine,
    /// The calling client's id (`CLIENT ID`).
    pub client: u64,
    /// The database the command runs in (`SELECT` inside a transaction changes it for the
    /// commands after it).
    pub db: usize,
    /// The command's frozen time, unix ms.
    pub now: i64,
    /// The hashes of the running script's keys, computed once for all its calls.
    hashes: KeyHashes,
    /// Who runs the command: a client directly, a transaction or a script (which never block).
    pub caller: Caller,
    /// Whether the door that sent the command waits for a blocked reply (`execute_or_block`);
    /// a blocking command blocks only then, and only as the client's own command (`caller`).
    pub may_block: bool,
    /// Which of the command's lookups are reads ([`Reads`]).
    pub reads: Reads,
    /// While a script runs: the time its `TIME` calls read, unix µs, frozen at its start as
    /// Redis 7.4 and Valkey freeze it (Redis 7.0 reads the clock at each call).
    pub script_us: Option<i64>,
}

/// Who runs a command, which decides whether a blocking command may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A client's own command.
    Client,
    /// A command of an `EXEC`.
    Transaction,
    /// A script's `redis.call`.
    Script,
}

impl<'a> Cx<'a> {
    /// A command of client `client` on database `db` at the frozen time `now`.
    pub fn new(engine: &'a mut Engine, client: u64, db: usize, now: i64) -> Cx<'a> {
        Cx {
            engine,
            client,
            db,
            now,
            hashes: KeyHashes::default(),
            caller: Caller::Client,
            may_block: false,
            reads: Reads::None,
            script_us: None,
        }
    }

    /// Whether a script runs the command.
    pub fn in_script(&self) -> bool {
        self.caller == Caller::Script
    }

    /// Blocks the calling client as `blocked` says (`engine/blocking.rs`).
    pub fn block(&mut self, blocked: crate::engine::blocking::Blocked) {
        self.engine.block(self.client, blocked);
    }

    /// Ends the block of client `id` with `reply`: false if it was not blocked.
    pub fn unblock(&mut self, id: u64, reply: crate::resp::Frame) -> bool {
        self.engine.unblock(id, reply)
    }

    /// The engine, to read what the whole server reports (`INFO`, `CLIENT LIST`, `PUBSUB`).
    pub fn engine(&self) -> &Engine {
        self.engine
    }

    /// The node the command runs on, for the replication commands, which change the node's
    /// role and block on its replicas (`engine/replication.rs`).
    pub fn node(&mut self) -> &mut Engine {
        self.engine
    }

    /// Runs a command its driver queued in the transaction that the engine does not know (see
    /// [`Engine::run_foreign_command`]).
    pub fn run_foreign(&mut self, argv: &[Bytes]) -> Option<crate::resp::Frame> {
        self.engine.run_foreign_command(ClientId(self.client), argv)
    }

    /// What the front doors see of the running script (its busy threshold, for `CONFIG SET`).
    pub fn script_watch(&mut self) -> std::sync::Arc<crate::engine::script_watch::ScriptWatch> {
        self.engine.script_watch()
    }

    /// The engine's configuration, for `CONFIG SET`.
    pub fn config_mut(&mut self) -> &mut crate::engine::EngineConfig {
        self.engine.config_mut()
    }

    /// Closes connection `id` (`CLIENT KILL`); the calling one closes once its reply is out.
    pub fn kill_client(&mut self, id: u64) {
        if id == self.client {
            self.client().closing = true;
        } else {
            self.engine.disconnect(ClientId(id));
        }
    }

    /// The users and the ACL log (`cmd/acl/`).
    pub fn acl_mut(&mut self) -> &mut super::Acl {
        self.engine.acl_mut()
    }

    /// What the server commands keep beside the keyspace (`cmd/server.rs`).
    pub fn server_state(&mut self) -> &mut crate::engine::server_state::ServerState {
        self.engine.server_state()
    }

    /// Sets `notify-keyspace-events` (`CONFIG SET`).
    pub fn set_keyspace_events(&mut self, flags: u16) {
        self.engine.set_keyspace_events(flags);
    }

    /// Forgets the statistics `INFO` reports (`CONFIG RESETSTAT`).
    pub fn reset_stats(&mut self) {
        self.engine.reset_stats();
    }

    /// Publishes keyspace event `event` (of class `class`, a `Class` flag) on `key` of the
    /// command's database, if `notify-keyspace-events` asks for it (`engine/notify.rs`).
    #[inline]
    pub fn notify(&mut self, class: u16, event: &str, key: &[u8]) {
        let (db, now) = (self.db, self.now);
        self.engine.notify(class, event, key, db, now);
    }

    /// Counts a call a script made, with its reply (`engine/stats.rs`).
    pub fn count_script_call(
        &mut self,
        spec: &'static super::Spec,
        argv: &[Bytes],
        reply: &crate::resp::Frame,
    ) {
        let name = super::command_name(self.engine.version(), spec, argv).unwrap_or(spec.name);
        self.engine.count_call(self.client, name, argv, reply, true);
    }

    /// [`Cx::notify`] for `key` of database `db` (`MOVE`'s and `COPY … DB`'s destination).
    pub fn notify_at(&mut self, db: usize, class: u16, event: &str, key: &[u8]) {
        let now = self.now;
        self.engine.notify(class, event, key, db, now);
    }

    /// The keyspace of the command's database.
    #[inline]
    pub fn keyspace(&mut self) -> &mut Db {
        self.engine.db_mut(self.db)
    }

    /// The keyspace of database `db` (an index below `DATABASES`).
    pub fn keyspace_at(&mut self, db: usize) -> &mut Db {
        self.engine.db_mut(db)
    }

    /// Every keyspace (`FLUSHALL`).
    pub fn keyspaces(&mut self) -> &mut [Db] {
        self.engine.dbs_mut()
    }

    /// The calling client.
    pub fn client(&mut self) -> &mut Client {
        self.engine
            .client_mut(self.client)
            .expect("a command runs for a connected client")
    }

    /// The database the calling client has selected now.
    pub fn selected_db(&self) -> usize {
        self.engine.selected_db(ClientId(self.client))
    }

    /// The hash of `key` ([`hash_key`]), remembered for the running script's keys.
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hashes.get(key)
    }

    /// The live entry at `key` (lazily expiring it), counted and announced as a read where the
    /// command reads it ([`Reads`]).
    #[inline]
    pub fn lookup(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.lookup_touching(key, true)
    }

    /// [`Cx::lookup`] of `key` whose hash `h` the caller computed ([`Cx::hash`]), to use again.
    #[inline]
    pub fn lookup_hashed(&mut self, key: &[u8], h: u64) -> Option<&mut Entry> {
        let now = self.now;
        match self.read_of(key) {
            None => self.engine.db_mut(self.db).lookup_h(key, h, now),
            Some(announce) => self
                .engine
                .read_lookup(self.db, key, h, now, true, announce),
        }
    }

    /// [`Cx::lookup`] without marking the key accessed (Redis's `LOOKUP_NOTOUCH`).
    pub fn lookup_untouched(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.lookup_touching(key, false)
    }

    /// [`Cx::lookup`], marking the key accessed only if `touch` is set.
    #[inline]
    fn lookup_touching(&mut self, key: &[u8], touch: bool) -> Option<&mut Entry> {
        let (now, h) = (self.now, self.hash(key));
        match self.read_of(key) {
            None if touch => self.engine.db_mut(self.db).lookup_h(key, h, now),
            None => self.engine.db_mut(self.db).lookup_untouched_h(key, h, now),
            Some(announce) => self
                .engine
                .read_lookup(self.db, key, h, now, touch, announce),
        }
    }

    /// Whether a lookup of `key` is a read: None for no, else whether a miss is announced.
    #[inline]
    fn read_of(&self, key: &[u8]) -> Option<bool> {
        match &self.reads {
            Reads::None => None,
            Reads::All => Some(true),
            Reads::Except(written) => (written != key).then_some(true),
            Reads::Unannounced => Some(false),
        }
    }

    /// Runs `f` with no lookup a read: Redis's `lookupKeyWrite`, for a write's own lookups and
    /// for a key the command has read already.
    pub fn writing<T>(&mut self, f: impl FnOnce(&mut Cx<'a>) -> T) -> T {
        let outer = std::mem::take(&mut self.reads);
        let result = f(self);
        self.reads = outer;
        result
    }

    /// Runs `f` with every lookup a read (a native twin's read-only call).
    pub fn reading<T>(&mut self, f: impl FnOnce(&mut Cx<'a>) -> T) -> T {
        let outer = std::mem::replace(&mut self.reads, Reads::All);
        let result = f(self);
        self.reads = outer;
        result
    }

    /// Runs `f` with the hashes of a script's `keys` remembered, so its calls hash each key
    /// once; the hashes are forgotten before the keys can be freed.
    #[inline]
    pub fn with_script_keys<T>(&mut self, keys: &[Bytes], f: impl FnOnce(&mut Cx<'a>) -> T) -> T {
        let outer = std::mem::replace(&mut self.hashes, KeyHashes::of(keys));
        let result = f(self);
        self.hashes = outer;
        result
    }

    /// The script cache.
    pub fn scripts(&mut self) -> &mut ScriptCache {
        self.engine.scripts()
    }

    /// The libraries of Redis 7.0's Functions.
    #[cfg(feature = "lua")]
    pub fn functions(&mut self) -> &mut crate::lua::functions::Functions {
        self.engine.functions().get_or_default()
    }

    /// The next number of the engine's seeded generator.
    pub fn random(&mut self) -> u64 {
        self.engine.random()
    }

    /// A key of the selected database drawn with the engine's generator (`RANDOMKEY`), live or
    /// not; None when it is empty.
    pub fn random_key(&mut self) -> Option<Bytes> {
        self.engine.random_key(self.db)
    }

    /// Subscribes the calling client to `name`: how many subscriptions it has then.
    pub fn subscribe(&mut self, kind: Subscription, name: &Bytes) -> usize {
        self.engine.subscribe(self.client, kind, name)
    }

    /// Unsubscribes the calling client from `name`: how many subscriptions it has then.
    pub fn unsubscribe(&mut self, kind: Subscription, name: &[u8]) -> usize {
        self.engine.unsubscribe(self.client, kind, name)
    }

    /// The calling client's subscriptions of one kind, in order.
    pub fn subscriptions(&self, kind: Subscription) -> Vec<Bytes> {
        self.engine.subscriptions_of(self.client, kind)
    }

    /// Drops every subscription of the calling client (`RESET`).
    pub fn unsubscribe_all(&mut self) {
        self.engine.unsubscribe_all(self.client);
    }

    /// `SPUBLISH shardchannel message` now: how many clients received it.
    pub fn spublish(&mut self, channel: &[u8], message: &[u8]) -> i64 {
        if self.engine.is_cluster_node() {
            // The other nodes of the shard deliver it too; the count is this node's.
            self.engine.shard_publish(channel, message);
        }
        self.engine.spublish(channel, message, self.now)
    }

    /// `PUBLISH channel message` now: how many clients received it.
    pub fn publish(&mut self, channel: &[u8], message: &[u8]) -> i64 {
        if self.engine.is_cluster_node() {
            // Every node of a cluster delivers it; the count is this node's.
            self.engine.broadcast_publish(channel, message);
        }
        self.engine.publish(channel, message, self.now)
    }

    /// The calling client watches `key` of the command's database.
    pub fn watch(&mut self, key: &Bytes) {
        self.engine.watch(self.client, self.db, key, self.now);
    }

    /// Whether a key the calling client watches changed since: its `EXEC` fails.
    pub fn watch_broken(&self) -> bool {
        self.engine.watch_broken(self.client, self.now)
    }

    /// The calling client forgets every key it watches.
    pub fn unwatch(&mut self) {
        self.engine.unwatch(self.client);
    }
}

/// The hashes of the keys a script was called with: a native script names each key in several
/// calls, and hashing a 70-byte latch key costs more than probing the table with it.
///
/// An entry is matched by the address and length of the key's bytes. Those identify the bytes
/// while the script's arguments are alive, and arguments are immutable, so a match is always the
/// same key; the entries are set when a script starts and cleared when it ends, before the
/// arguments can be freed. A hash is computed when a call first needs it: a key the script only
/// names as a channel (the lock's unlock channel) is never hashed.
#[derive(Default)]
struct KeyHashes {
    /// Address, length, and the hash once computed (0 until then: a key whose hash is 0 is
    /// hashed at each call, which is only slower).
    entries: [(usize, usize, Cell<u64>); 4],
    len: usize,
}

impl KeyHashes {
    /// (The first four of) `keys`, none hashed yet.
    #[inline]
    fn of(keys: &[Bytes]) -> KeyHashes {
        let mut hashes = KeyHashes::default();
        for (entry, key) in hashes.entries.iter_mut().zip(keys) {
            *entry = (key.as_ptr() as usize, key.len(), Cell::new(0));
            hashes.len += 1;
        }
        hashes
    }

    /// The hash of `key`: remembered when it is one of the script's keys, computed otherwise.
    #[inline]
    fn get(&self, key: &[u8]) -> u64 {
        let (at, len) = (key.as_ptr() as usize, key.len());
        let Some(entry) = self.entries[..self.len]
            .iter()
            .find(|e| e.0 == at && e.1 == len)
        else {
            return hash_key(key);
        };
        match entry.2.get() {
            0 => {
                let h = hash_key(key);
                entry.2.set(h);
                h
            }
            h => h,
        }
    }
}
