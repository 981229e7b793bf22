//! The engine: a synchronous, single-threaded Redis on an injected clock.
//!
//! `execute(client, argv)` runs one command to completion and returns its reply; that is the whole
//! protocol between the engine and whatever drives it (the in-process front doors, a TCP server, a
//! simulator). Messages for *other* clients (pub/sub) go to per-client outboxes that their drivers
//! drain. Nothing here sleeps, spawns, or reads a clock except through [`Clock`]: time is read
//! once per command and frozen for its whole run, scripts and `EXEC` included (Redis 7.2's rule),
//! and the active expiry cycle catches up lazily, with bounded work, whenever a command sees that
//! time moved past its next 100 ms tick.
//!
//! # The outbox contract
//!
//! A command's reply comes after everything that was in the client's outbox before it ran, and
//! before anything queued while it ran. A driver keeps that order by draining the outbox, calling
//! `execute`, writing the reply, then draining again, all under one lock of the engine. (Only
//! `SUBSCRIBE` and friends with several channels queue frames for their own client: their first
//! confirmation is the reply, the others follow in the outbox, as Redis writes them.)

use crate::clock::Clock;
use crate::cmd;
use crate::db::{Db, Entry, Hash, Value, hash_key};
use crate::fault::{Fault, FaultEventKind, FaultPlan, NodeId};
use crate::frame::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::task::Waker;

/// The number of databases, as Redis's default `databases 16`.
pub const DATABASES: usize = 16;

/// Active expiry: cycles per second (Redis's `hz 10`).
pub const ACTIVE_EXPIRE_HZ: i64 = 10;
/// Active expiry: keys sampled per loop (`ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
pub const ACTIVE_EXPIRE_KEYS_PER_LOOP: usize = 20;
/// Active expiry: a loop repeats while more than this percentage of its sample had expired
/// (`ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE`).
pub const ACTIVE_EXPIRE_ACCEPTABLE_STALE: usize = 10;
/// Active expiry: loops per database per cycle, at most (Redis bounds a cycle by CPU time; a fake
/// needs a bound that does not depend on the machine).
pub const ACTIVE_EXPIRE_MAX_LOOPS: usize = 256;
/// Active expiry: cycles one `execute` catches up at most; further missed ticks are skipped.
pub const ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL: usize = 10;

/// The Redis version the engine claims to be (`INFO`, `HELLO`).
pub const REDIS_VERSION: &str = "7.0.15";

/// A connection to the engine, as `CLIENT ID` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

/// How an engine is set up.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Seeds the active expiry cycle's sampling.
    pub seed: u64,
    /// `requirepass`: clients must `AUTH` with it first.
    pub requirepass: Option<Bytes>,
    /// Whether data survives a restart (as with an fsync-always AOF).
    pub persistence: bool,
    /// Keep a journal of the writes of the last this-many ms, so a failover can roll them back.
    /// Scheduling a [`Fault::Failover`] turns it on with at least the failover's lag.
    pub journal_window_ms: Option<i64>,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            seed: 0x5eed,
            requirepass: None,
            persistence: false,
            journal_window_ms: None,
        }
    }
}

/// A queued `MULTI` transaction.
#[derive(Default)]
pub(crate) struct Multi {
    pub queue: Vec<Vec<Bytes>>,
    /// A command failed to queue (unknown, wrong arity): `EXEC` will reply `EXECABORT`.
    pub failed: bool,
}

/// A frame queued for a client outside its replies, with the time it was queued.
#[derive(Clone, Debug, PartialEq)]
pub struct Outbound {
    /// When it was queued (the engine's time, unix ms).
    pub at: i64,
    /// The frame (a [`Frame::Push`]: a message or a subscription confirmation).
    pub frame: Frame,
}

/// Per-connection state.
pub(crate) struct Client {
    pub db: usize,
    pub protocol: u8,
    pub name: Option<Bytes>,
    pub authenticated: bool,
    pub channels: BTreeSet<Bytes>,
    pub patterns: BTreeSet<Bytes>,
    pub multi: Option<Multi>,
    pub watching: Vec<(usize, Bytes)>,
    pub dirty_cas: bool,
    pub outbox: VecDeque<Outbound>,
    pub waker: Option<Waker>,
    pub node: Option<NodeId>,
    pub created_at: i64,
    pub last_command_at: i64,
    pub closing: bool,
}

impl Client {
    pub fn subscriptions(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    pub fn push(&mut self, at: i64, frame: Frame) {
        self.outbox.push_back(Outbound { at, frame });
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// The script cache: SHAs of bodies that have a native twin and were loaded since the last flush.
#[derive(Default)]
pub(crate) struct ScriptCache {
    pub loaded: Vec<&'static lock_core::script::Script>,
}

impl ScriptCache {
    pub fn get(&self, sha: &[u8]) -> Option<&'static lock_core::script::Script> {
        // Clients send lowercase SHAs; compare exactly first, then without case.
        let loaded = self.loaded.iter().copied();
        loaded
            .clone()
            .find(|s| s.sha().as_bytes() == sha)
            .or_else(|| {
                loaded
                    .into_iter()
                    .find(|s| s.sha().as_bytes().eq_ignore_ascii_case(sha))
            })
    }

    pub fn insert(&mut self, script: &'static lock_core::script::Script) {
        if !self.loaded.iter().any(|s| std::ptr::eq(*s, script)) {
            self.loaded.push(script);
        }
    }
}

/// Counters `INFO` reports.
#[derive(Default)]
pub(crate) struct Stats {
    pub commands: u64,
    pub connections: u64,
}

/// The fake Redis server's state and command interpreter. See the [module docs](self).
pub struct Engine {
    clock: Box<dyn Clock>,
    clock_offset: i64,
    pub(crate) config: EngineConfig,
    pub(crate) dbs: Vec<Db>,
    pub(crate) clients: BTreeMap<u64, Client>,
    next_client_id: u64,
    pub(crate) channels: BTreeMap<Bytes, BTreeSet<u64>>,
    pub(crate) patterns: BTreeMap<Bytes, BTreeSet<u64>>,
    pub(crate) scripts: ScriptCache,
    pub(crate) watchers: usize,
    next_expire_tick: i64,
    rng: u64,
    faults: FaultPlan,
    pending_server_faults: Vec<(i64, usize, Fault)>,
    pub(crate) stats: Stats,
    pub(crate) started_at: i64,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("now", &self.now())
            .field("clients", &self.clients.len())
            .field("keys", &self.dbs.iter().map(Db::len).sum::<usize>())
            .finish_non_exhaustive()
    }
}

/// What a command handler works with: the engine, the calling client, its database, and the
/// frozen time of this command.
pub(crate) struct Cx<'a> {
    pub engine: &'a mut Engine,
    pub client: u64,
    pub db: usize,
    pub now: i64,
    /// The hashes of the running script's keys, computed once for all its calls.
    pub hashes: KeyHashes,
}

/// The hashes of the keys a script was called with: a native script names each key in several
/// calls, and hashing a 70-byte latch key costs more than probing the table with it.
///
/// An entry is matched by the address and length of the key's bytes. Those identify the bytes
/// while the script's arguments are alive, and arguments are immutable, so a match is always the
/// same key; the entries are set when a script starts and cleared when it ends, before the
/// arguments can be freed.
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyHashes {
    entries: [(usize, usize, u64); 4],
    len: usize,
}

impl KeyHashes {
    /// The hashes of (the first four of) `keys`.
    pub fn of(keys: &[Bytes]) -> KeyHashes {
        let mut hashes = KeyHashes::default();
        for (entry, key) in hashes.entries.iter_mut().zip(keys) {
            *entry = (key.as_ptr() as usize, key.len(), hash_key(key));
            hashes.len += 1;
        }
        hashes
    }

    /// The hash of `key`: remembered when it is one of the script's keys, computed otherwise.
    pub fn get(&self, key: &[u8]) -> u64 {
        let (at, len) = (key.as_ptr() as usize, key.len());
        self.entries[..self.len]
            .iter()
            .find(|e| e.0 == at && e.1 == len)
            .map_or_else(|| hash_key(key), |e| e.2)
    }
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
        }
    }

    pub fn db(&mut self) -> &mut Db {
        &mut self.engine.dbs[self.db]
    }

    pub fn client(&mut self) -> &mut Client {
        self.engine
            .clients
            .get_mut(&self.client)
            .expect("a command runs for a connected client")
    }

    /// The hash of `key` ([`hash_key`]), remembered for the running script's keys.
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hashes.get(key)
    }

    /// The live entry at `key` (lazily expiring it).
    pub fn lookup(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let (now, h) = (self.now, self.hash(key));
        self.engine.dbs[self.db].lookup_h(key, h, now)
    }
}

impl Engine {
    /// An engine on `clock` with the default configuration.
    pub fn new(clock: impl Clock) -> Engine {
        Engine::with_config(clock, EngineConfig::default())
    }

    /// An engine on `clock` set up by `config`.
    pub fn with_config(clock: impl Clock, config: EngineConfig) -> Engine {
        let now = clock.now_ms();
        let mut dbs: Vec<Db> = (0..DATABASES).map(|_| Db::default()).collect();
        for db in &mut dbs {
            db.set_journal(config.journal_window_ms);
        }
        Engine {
            clock: Box::new(clock),
            clock_offset: 0,
            rng: config.seed ^ 0x9e37_79b9_7f4a_7c15,
            faults: FaultPlan::new(config.seed),
            config,
            dbs,
            clients: BTreeMap::new(),
            next_client_id: 1,
            channels: BTreeMap::new(),
            patterns: BTreeMap::new(),
            scripts: ScriptCache::default(),
            watchers: 0,
            next_expire_tick: next_tick_after(now),
            pending_server_faults: Vec::new(),
            stats: Stats::default(),
            started_at: now,
        }
    }

    /// The engine's current time, unix ms: its clock plus any clock jump.
    pub fn now(&self) -> i64 {
        self.clock.now_ms().saturating_add(self.clock_offset)
    }

    /// The clock's time without clock jumps: the time fault plans are written in.
    pub fn clock_now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    // ---- connections ----

    /// Opens a connection.
    pub fn connect(&mut self) -> ClientId {
        self.connect_node(None)
    }

    /// Opens a connection on behalf of `node` (faults on that node apply to it; a crash closes it).
    pub fn connect_as(&mut self, node: NodeId) -> ClientId {
        self.connect_node(Some(node))
    }

    fn connect_node(&mut self, node: Option<NodeId>) -> ClientId {
        let now = self.now();
        let id = self.next_client_id;
        self.next_client_id += 1;
        self.stats.connections += 1;
        self.clients.insert(
            id,
            Client {
                db: 0,
                protocol: 2,
                name: None,
                authenticated: self.config.requirepass.is_none(),
                channels: BTreeSet::new(),
                patterns: BTreeSet::new(),
                multi: None,
                watching: Vec::new(),
                dirty_cas: false,
                outbox: VecDeque::new(),
                waker: None,
                node,
                created_at: now,
                last_command_at: now,
                closing: false,
            },
        );
        ClientId(id)
    }

    /// Whether `client` is still connected (a restart, failover, crash or `QUIT` closes it).
    pub fn is_connected(&self, client: ClientId) -> bool {
        self.clients.contains_key(&client.0)
    }

    /// Closes a connection: its subscriptions, transaction and watches are gone; its driver is
    /// woken so it notices.
    pub fn disconnect(&mut self, client: ClientId) {
        let Some(mut c) = self.clients.remove(&client.0) else {
            return;
        };
        for ch in std::mem::take(&mut c.channels) {
            remove_subscriber(&mut self.channels, &ch, client.0);
        }
        for p in std::mem::take(&mut c.patterns) {
            remove_subscriber(&mut self.patterns, &p, client.0);
        }
        self.unwatch_all(&mut c, client.0);
        if let Some(w) = c.waker.take() {
            w.wake();
        }
    }

    /// The protocol `client` speaks (2, or 3 after `HELLO 3`).
    pub fn protocol(&self, client: ClientId) -> u8 {
        self.clients.get(&client.0).map_or(2, |c| c.protocol)
    }

    /// Whether `client` may run commands: it has authenticated, or the server has no
    /// `requirepass`. A network front door follows it to apply Redis's unauthenticated limits.
    pub fn is_authenticated(&self, client: ClientId) -> bool {
        self.clients.get(&client.0).is_some_and(|c| c.authenticated)
    }

    /// The node `client` belongs to, as faults see it (`None` for a connection opened with
    /// [`Engine::connect`] and never given one).
    pub fn node_of(&self, client: ClientId) -> Option<NodeId> {
        self.clients.get(&client.0).and_then(|c| c.node)
    }

    /// Moves `client` to `node`: from now on the faults of that node apply to it and a crash of
    /// that node closes it (the TCP server's `FAKE.NODE`).
    pub fn set_node(&mut self, client: ClientId, node: Option<NodeId>) {
        if let Some(c) = self.clients.get_mut(&client.0) {
            c.node = node;
        }
    }

    /// The database `client` has selected.
    pub fn selected_db(&self, client: ClientId) -> usize {
        self.clients.get(&client.0).map_or(0, |c| c.db)
    }

    /// The channels `client` is subscribed to.
    pub fn subscribed_channels(&self, client: ClientId) -> Vec<Bytes> {
        self.clients
            .get(&client.0)
            .map(|c| c.channels.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The number of open connections.
    pub fn client_count(&self) -> usize {
        self.clients.len()
    }

    // ---- outboxes ----

    /// Takes the oldest frame queued for `client`.
    pub fn pop_outbox(&mut self, client: ClientId) -> Option<Outbound> {
        self.clients.get_mut(&client.0)?.outbox.pop_front()
    }

    /// Takes every frame queued for `client`, oldest first.
    pub fn drain_outbox(&mut self, client: ClientId) -> Vec<Frame> {
        self.clients
            .get_mut(&client.0)
            .map(|c| c.outbox.drain(..).map(|o| o.frame).collect())
            .unwrap_or_default()
    }

    /// How many frames are queued for `client`.
    pub fn outbox_len(&self, client: ClientId) -> usize {
        self.clients.get(&client.0).map_or(0, |c| c.outbox.len())
    }

    /// Asks to be woken (once) when a frame is queued for `client` or it is disconnected. Wakes at
    /// once if either already happened.
    pub fn register_waker(&mut self, client: ClientId, waker: &Waker) {
        match self.clients.get_mut(&client.0) {
            Some(c) if c.outbox.is_empty() => c.waker = Some(waker.clone()),
            _ => waker.wake_by_ref(),
        }
    }

    // ---- execution ----

    /// Runs one command for `client` and returns its reply. `argv[0]` is the command's name, in
    /// any case. See the [module docs](self) for the outbox contract. A closed connection (after
    /// `QUIT`, a restart, a failover or a crash) gets `ERR the connection is closed`; its driver
    /// should [`connect`](Engine::connect) again.
    pub fn execute(&mut self, client: ClientId, argv: &[Bytes]) -> Frame {
        let now = self.tick();
        if !self.clients.contains_key(&client.0) {
            return Frame::error("ERR the connection is closed");
        }
        self.stats.commands += 1;
        let reply = self.dispatch(client.0, argv, now);
        if self.watchers > 0 {
            self.collect_dirty();
        }
        if let Some(c) = self.clients.get_mut(&client.0) {
            c.last_command_at = now;
            if c.closing {
                self.disconnect(client);
            }
        }
        reply
    }

    /// Does now what the next command would do first: applies the scheduled server-side faults
    /// that are due and catches up on active expiry. Returns the engine's time. For drivers that
    /// move a clock by hand (the TCP server's `FAKE.ADVANCE`) and want the work that fell due
    /// done at once rather than at the next command.
    pub fn catch_up(&mut self) -> i64 {
        self.tick()
    }

    /// Reads the clock, applies the server-side faults that are due and catches up on active
    /// expiry: the command's frozen time.
    fn tick(&mut self) -> i64 {
        if !self.pending_server_faults.is_empty() {
            self.apply_due_server_faults();
        }
        let now = self.now();
        if now >= self.next_expire_tick || now < self.next_expire_tick - 1000 / ACTIVE_EXPIRE_HZ {
            self.catch_up_expiry(now);
        }
        now
    }

    fn dispatch(&mut self, id: u64, argv: &[Bytes], now: i64) -> Frame {
        let Some(name) = argv.first() else {
            return Frame::error("ERR empty command");
        };
        let spec = cmd::lookup(name);
        let requirepass = self.config.requirepass.is_some();
        let client = self.clients.get_mut(&id).expect("checked by execute");
        let Some(spec) = spec else {
            if let Some(m) = &mut client.multi {
                m.failed = true;
            }
            return cmd::unknown_command(argv);
        };
        if !spec.arity_ok(argv.len()) {
            if let Some(m) = &mut client.multi {
                m.failed = true;
            }
            return cmd::wrong_arity(spec.name);
        }
        if requirepass && !client.authenticated && !spec.has(cmd::NO_AUTH) {
            if let Some(m) = &mut client.multi {
                m.failed = true;
            }
            return Frame::error("NOAUTH Authentication required.");
        }
        if client.protocol == 2 && client.subscriptions() > 0 && !spec.has(cmd::PUBSUB_CONTEXT) {
            return Frame::error_owned(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
                 RESET are allowed in this context",
                spec.name
            ));
        }
        if let Some(m) = &mut client.multi
            && !spec.has(cmd::NOT_QUEUED)
        {
            m.queue.push(argv.to_vec());
            return Frame::simple("QUEUED");
        }
        let db = client.db;
        (spec.run)(&mut Cx::new(self, id, db, now), argv)
    }

    /// Runs a queued command inside `EXEC` (already checked when queued).
    pub(crate) fn run_queued(&mut self, id: u64, argv: &[Bytes], now: i64) -> Frame {
        let Some(spec) = argv.first().and_then(|n| cmd::lookup(n)) else {
            return cmd::unknown_command(argv);
        };
        let db = self.clients.get(&id).map_or(0, |c| c.db);
        (spec.run)(&mut Cx::new(self, id, db, now), argv)
    }

    /// Marks the clients whose watched keys were touched: their `EXEC` will fail.
    pub(crate) fn collect_dirty(&mut self) {
        for db in &mut self.dbs {
            for id in std::mem::take(&mut db.watches.dirty) {
                if let Some(c) = self.clients.get_mut(&id) {
                    c.dirty_cas = true;
                }
            }
        }
    }

    /// Forgets every key client `id` watches (`UNWATCH`, and after `EXEC`/`DISCARD`).
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

    /// Forgets every key `c` (already removed from the client map) watches.
    pub(crate) fn unwatch_all(&mut self, c: &mut Client, id: u64) {
        for (db, key) in c.watching.drain(..) {
            self.dbs[db].unwatch(&key, id);
            self.watchers = self.watchers.saturating_sub(1);
        }
        c.dirty_cas = false;
    }

    // ---- active expiry ----

    fn catch_up_expiry(&mut self, now: i64) {
        let period = 1000 / ACTIVE_EXPIRE_HZ;
        if now < self.next_expire_tick - period {
            // The clock went back (a jump): start counting ticks from here.
            self.next_expire_tick = next_tick_after(now);
            return;
        }
        let mut cycles = 0;
        while self.next_expire_tick <= now && cycles < ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL {
            let tick = self.next_expire_tick;
            self.active_expire_cycle(tick);
            self.next_expire_tick += period;
            cycles += 1;
        }
        if self.next_expire_tick <= now {
            // Too far behind: the missed ticks are skipped, as a stalled server would skip them.
            self.next_expire_tick = next_tick_after(now);
        }
    }

    /// One cycle of Redis's `activeExpireCycle` at time `at`: per database, loops of 20 sampled
    /// keys, repeated while more than 10% of a sample had expired.
    pub(crate) fn active_expire_cycle(&mut self, at: i64) {
        for i in 0..self.dbs.len() {
            let mut loops = 0;
            while self.dbs[i].has_volatile() && loops < ACTIVE_EXPIRE_MAX_LOOPS {
                loops += 1;
                let mut rng = self.rng;
                let mut next = || xorshift(&mut rng);
                let (sampled, expired) =
                    self.dbs[i].expire_sample(at, ACTIVE_EXPIRE_KEYS_PER_LOOP, &mut next);
                self.rng = rng;
                if sampled == 0 || expired * 100 / sampled <= ACTIVE_EXPIRE_ACCEPTABLE_STALE {
                    break;
                }
            }
        }
        if self.watchers > 0 {
            self.collect_dirty();
        }
    }

    /// The next number of the engine's seeded generator (expiry sampling, `SPOP`,
    /// `SRANDMEMBER`): never unseeded randomness, so a run replays exactly.
    pub(crate) fn random(&mut self) -> u64 {
        xorshift(&mut self.rng)
    }

    /// Runs `cycles` active expiry cycles at the current time, without moving the clock (for
    /// tests and simulators that want expired keys physically removed now).
    pub fn run_expiry_cycles(&mut self, cycles: usize) {
        let now = self.now();
        for _ in 0..cycles {
            self.active_expire_cycle(now);
        }
    }

    // ---- faults ----

    /// The fault plan: the faults, each node's sequence numbers and the fault log.
    pub fn fault_plan(&self) -> &FaultPlan {
        &self.faults
    }

    /// The fault plan, for the front doors (and simulators) that ask it about each command and
    /// delivery. Add faults with [`Engine::add_fault`], which also schedules the server-side ones.
    pub fn fault_plan_mut(&mut self) -> &mut FaultPlan {
        &mut self.faults
    }

    /// Replaces the plan's faults and seed with `plan`'s; scheduled server faults of the old plan
    /// that have not fired are dropped. The nodes' sequence numbers and the fault log stay.
    pub fn set_fault_plan(&mut self, plan: FaultPlan) {
        self.faults.forget_faults(plan.seed());
        self.pending_server_faults.clear();
        for f in plan.faults() {
            self.add_fault(*f);
        }
    }

    /// Adds a fault. A [`Trigger::Next`](crate::Trigger::Next) counts from the node's next command
    /// (or delivery); a server-side fault ([`Fault::server_time`]) fires when the clock reaches its
    /// time, before the first command at or after it; a [`Fault::Failover`] turns the write journal
    /// on.
    pub fn add_fault(&mut self, fault: Fault) {
        let fault = self.faults.resolve(fault);
        if let Fault::Failover { lag_ms, .. } = fault {
            let window = self.config.journal_window_ms.unwrap_or(0).max(lag_ms + 1);
            self.config.journal_window_ms = Some(window);
            for db in &mut self.dbs {
                db.set_journal(Some(window));
            }
        }
        if let Some(at) = fault.server_time() {
            let n = self.pending_server_faults.len();
            self.pending_server_faults.push((at, n, fault));
            self.pending_server_faults
                .sort_by_key(|&(at, n, _)| (at, n));
        }
        self.faults.add(fault);
    }

    /// Records a server-side fault the engine applied, at the clock's time.
    fn record_server_fault(&mut self, node: Option<NodeId>, kind: FaultEventKind) {
        let at = self.clock_now();
        self.faults.record(at, node, None, kind);
    }

    /// When the next scheduled server-side fault fires, if one is pending.
    pub fn next_server_fault_time(&self) -> Option<i64> {
        self.pending_server_faults.first().map(|&(at, _, _)| at)
    }

    /// Applies every scheduled server-side fault whose time has come.
    pub fn apply_due_server_faults(&mut self) {
        let now = self.clock_now();
        while let Some(&(at, _, fault)) = self.pending_server_faults.first() {
            if at > now {
                break;
            }
            self.pending_server_faults.remove(0);
            match fault {
                Fault::Restart { .. } => self.restart(),
                Fault::Failover { lag_ms, .. } => {
                    self.failover(lag_ms);
                }
                Fault::ClockJump { delta_ms, .. } => self.jump_clock(delta_ms),
                Fault::Crash { node, .. } => self.crash(node),
                _ => {}
            }
        }
    }

    /// Restarts the server now: every connection closes, the script cache empties, and the data is
    /// lost unless persistence is on.
    pub fn restart(&mut self) {
        let persistence = self.config.persistence;
        self.close_all_connections();
        self.scripts = ScriptCache::default();
        if !persistence {
            let now = self.now();
            for db in &mut self.dbs {
                db.flush(now);
                db.set_journal(self.config.journal_window_ms);
            }
        }
        self.record_server_fault(None, FaultEventKind::Restarted(persistence));
    }

    /// Fails over now to a replica lagging by `lag_ms`: the writes of the last `lag_ms` are undone
    /// (as far as the write journal reaches), every connection closes, the script cache empties.
    /// Returns how many writes were undone.
    pub fn failover(&mut self, lag_ms: i64) -> usize {
        let since = self.now() - lag_ms;
        let undone = self.dbs.iter_mut().map(|db| db.rollback_after(since)).sum();
        self.close_all_connections();
        self.scripts = ScriptCache::default();
        self.record_server_fault(None, FaultEventKind::FailedOver { lag_ms, undone });
        undone
    }

    /// Moves the server's clock by `delta_ms` from now on (forward when positive).
    pub fn jump_clock(&mut self, delta_ms: i64) {
        self.clock_offset = self.clock_offset.saturating_add(delta_ms);
        self.record_server_fault(None, FaultEventKind::ClockJumped(delta_ms));
    }

    /// The total clock jump applied so far.
    pub fn clock_offset(&self) -> i64 {
        self.clock_offset
    }

    /// Crashes `node`: every connection it opened closes (its subscriptions are gone).
    pub fn crash(&mut self, node: NodeId) {
        let ids: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.node == Some(node))
            .map(|(&id, _)| id)
            .collect();
        for &id in &ids {
            self.disconnect(ClientId(id));
        }
        self.record_server_fault(Some(node), FaultEventKind::Crashed(ids.len()));
    }

    fn close_all_connections(&mut self) {
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            self.disconnect(ClientId(id));
        }
        for db in &mut self.dbs {
            db.clear_watches();
        }
        self.watchers = 0;
        self.channels.clear();
        self.patterns.clear();
    }

    // ---- direct access, for tests and simulators ----

    /// The live value and deadline at `key` in database `db`, without side effects.
    pub fn value(&self, db: usize, key: &[u8]) -> Option<(Value, Option<i64>)> {
        let now = self.now();
        self.dbs
            .get(db)?
            .peek(key, now)
            .map(|e| (e.value.clone(), e.deadline()))
    }

    /// Writes `value` at `key` in database `db` with `deadline` (unix ms), replacing what was
    /// there, as a command would (watchers are touched, the journal records it).
    pub fn set_value(&mut self, db: usize, key: &[u8], value: Value, deadline: Option<i64>) {
        let now = self.now();
        let d = &mut self.dbs[db];
        d.insert(key, value, deadline, now);
        d.touch(key);
    }

    /// `SET key value` in database `db`.
    pub fn set_string(&mut self, db: usize, key: &[u8], value: &[u8]) {
        self.set_value(db, key, Value::Str(Bytes::copy_from_slice(value)), None);
    }

    /// `DEL key` then `RPUSH key items…` in database `db` (lists have no commands yet).
    pub fn set_list(&mut self, db: usize, key: &[u8], items: &[&[u8]]) {
        let list = items.iter().map(|i| Bytes::copy_from_slice(i)).collect();
        self.set_value(db, key, Value::List(list), None);
    }

    /// `HSET key field value…` semantics for a whole new hash in database `db`.
    pub fn set_hash(&mut self, db: usize, key: &[u8], fields: &[(&[u8], &[u8])]) {
        let hash = Hash::from_pairs(
            fields
                .iter()
                .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v))),
        );
        self.set_value(db, key, Value::Hash(hash), None);
    }

    /// Every live key of database `db` with its value and deadline, sorted by key.
    pub fn snapshot(&self, db: usize) -> Vec<(Bytes, Value, Option<i64>)> {
        let now = self.now();
        self.dbs[db]
            .live_entries(now)
            .into_iter()
            .map(|(k, e)| {
                let d = e.deadline();
                (k, e.value, d)
            })
            .collect()
    }

    /// The number of keys physically present in database `db`, logically expired ones included
    /// (`DBSIZE`).
    pub fn dbsize(&self, db: usize) -> usize {
        self.dbs[db].len()
    }

    /// The SHAs in the script cache.
    pub fn cached_scripts(&self) -> Vec<String> {
        self.scripts
            .loaded
            .iter()
            .map(|s| s.sha().to_owned())
            .collect()
    }

    /// Runs one of the lock's script calls natively in database `db`, as `EVALSHA` would, whether
    /// or not it is in the script cache (for simulators that skip the protocol).
    pub fn run_script(&mut self, db: usize, call: &lock_core::script::ScriptCall) -> Frame {
        let now = self.tick();
        cmd::scripting::run_native(self, None, db, now, call.script, &call.keys, &call.args)
    }
}

fn next_tick_after(now: i64) -> i64 {
    let period = 1000 / ACTIVE_EXPIRE_HZ;
    now - now.rem_euclid(period) + period
}

pub(crate) fn remove_subscriber(map: &mut BTreeMap<Bytes, BTreeSet<u64>>, name: &[u8], id: u64) {
    if let Some(set) = map.get_mut(name) {
        set.remove(&id);
        if set.is_empty() {
            map.remove(name);
        }
    }
}

/// xorshift64*, seeded from the configuration: every run draws the same numbers.
fn xorshift(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}
