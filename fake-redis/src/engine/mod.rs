//! The engine: a synchronous, single-threaded Redis's state on an injected clock.
//!
//! An [`Engine`] holds what a Redis server holds (sixteen keyspaces, the connections, the pub/sub
//! registry, the watches, the script cache, the fault plan) and keeps the invariants that span
//! them: a connection's subscriptions and watches are in the registries exactly while it is
//! connected (`engine/pubsub.rs`, `engine/watches.rs`), a write to a watched key marks its
//! watchers, a restart empties what a restart empties. It knows no command: `execute(client,
//! argv)`, which runs one command to completion and returns its reply, lives beside the command
//! table (`cmd/dispatch.rs`), and the handlers reach this state through the methods below. That
//! call is the whole protocol between the engine and whatever drives it (the in-process front
//! doors, a TCP server, a simulator). Messages for *other* clients (pub/sub) go to per-client
//! outboxes that their drivers drain.
//!
//! Nothing here sleeps, spawns, or reads a clock except through [`Clock`]: time is read once per
//! command and frozen for its whole run, scripts and `EXEC` included (Redis 7.2's rule), and the
//! active expiry cycle (`expiry.rs`) catches up lazily, with bounded work, whenever a command sees
//! that time moved past its next 100 ms tick. Clients blocked on keys (`BLPOP` and its kin) wait
//! in a registry here too, timed on the same clock and served after the command that made their
//! keys ready (`blocking.rs`).
//!
//! # The outbox contract
//!
//! A command's reply comes after everything that was in the client's outbox before it ran, and
//! before anything queued while it ran. A driver keeps that order by draining the outbox, calling
//! `execute`, writing the reply, then draining again, all under one lock of the engine. (Only
//! `SUBSCRIBE` and friends with several channels queue frames for their own client: their first
//! confirmation is the reply, the others follow in the outbox, as Redis writes them.)

use crate::clock::Clock;
use crate::engine::db::Db;
use crate::engine::expiry::ActiveExpiry;
pub(crate) use crate::engine::stats::Stats;
use crate::fault::{Fault, FaultEventKind, FaultPlan, NodeId};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::task::Waker;

pub(crate) mod acl;
pub(crate) mod blocking;
pub mod client_limit;
pub mod cluster;
pub(crate) mod db;
pub(crate) mod evict;
pub(crate) mod expiry;
pub(crate) mod glob;
pub(crate) mod hash;
pub(crate) mod hash_ttl;
mod inspect;
pub(crate) mod list;
pub(crate) mod memory;
pub(crate) mod monitor;
pub(crate) mod notify;
pub mod output_limits;
pub(crate) mod pause;
mod pubsub;
pub(crate) mod rdb;
pub(crate) mod repl_stream;
pub mod replication;
pub(crate) mod reply;
pub(crate) mod script_watch;
pub mod sentinel;
pub(crate) mod server_state;
pub(crate) mod set;
mod shutdown;
mod stats;
pub(crate) mod stream;
pub(crate) mod tracking;
pub mod version;
mod watches;
pub use version::Version;
pub(crate) use watches::BusyTransaction;
pub(crate) mod zset;

pub use crate::engine::expiry::{
    ACTIVE_EXPIRE_ACCEPTABLE_STALE, ACTIVE_EXPIRE_DELETE_NS, ACTIVE_EXPIRE_FAST_LIMIT_US,
    ACTIVE_EXPIRE_HZ, ACTIVE_EXPIRE_KEYS_PER_LOOP, ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL,
    ACTIVE_EXPIRE_SAMPLE_NS, ACTIVE_EXPIRE_SLOW_LIMIT_US,
};

/// The number of databases, as Redis's default `databases 16`.
pub const DATABASES: usize = 16;

/// The Redis version the default engine claims to be (`INFO`, `HELLO`): Redis 7.0's
/// ([`Version::V7_0`]). An engine's own is its [`EngineConfig::version`]'s.
pub const REDIS_VERSION: &str = Version::V7_0.redis_version();

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
    /// `busy-reply-threshold` (alias `lua-time-limit`), ms: how long a script runs before other
    /// clients get `BUSY`. `CONFIG SET` changes it.
    pub busy_reply_threshold_ms: u64,
    /// `notify-keyspace-events` as flags (Redis's `NOTIFY_*` bits): 0, the default, sends none.
    pub notify_keyspace_events: u16,
    /// The parameters `CONFIG SET` changed from Redis's defaults, by canonical name, as
    /// `CONFIG GET` shows them (see `cmd/config.rs`).
    pub settings: BTreeMap<String, String>,
    /// `maxclients`: how many clients a server admits at once (`CONFIG SET` changes it).
    pub maxclients: usize,
    /// The most `maxclients` may be set to: what the open-file limit allows, where a server
    /// found it (see [`client_limit`]).
    pub maxclients_ceiling: Option<usize>,
    /// `client-output-buffer-limit`, per class of client (`CONFIG SET` changes it).
    pub output_limits: output_limits::OutputLimits,
    /// `timeout`: seconds after which the server closes an idle client; 0, the default, never.
    pub idle_timeout_s: u64,
    /// The scripts that run as Rust functions in place of their Lua bodies ([`crate::native`]):
    /// none by default, so every body runs on Lua.
    pub native_scripts: crate::native::NativeScripts,
    /// `enable-debug-command`: whether `DEBUG` runs (Redis 7.0 refuses it by default, and no
    /// `CONFIG SET` changes it).
    pub enable_debug_command: DebugCommand,
    /// The release the engine imitates: which commands it knows, and who it says it is.
    pub version: Version,
}

/// Redis's `enable-debug-command`: who may run `DEBUG`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DebugCommand {
    /// Nobody (Redis 7.0's default).
    #[default]
    No,
    /// Every client.
    Yes,
    /// Clients on the server's machine. The fake's clients are in-process, or reach a TCP
    /// server that listens on loopback by default, so it lets every client run it.
    Local,
}

impl DebugCommand {
    /// The value as `CONFIG GET` shows it and a server flag takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }

    /// Whether `DEBUG` runs.
    pub fn allows(self) -> bool {
        self != DebugCommand::No
    }
}

impl std::str::FromStr for DebugCommand {
    type Err = String;

    fn from_str(s: &str) -> Result<DebugCommand, String> {
        match s.to_ascii_lowercase().as_str() {
            "no" => Ok(DebugCommand::No),
            "yes" => Ok(DebugCommand::Yes),
            "local" => Ok(DebugCommand::Local),
            _ => Err(format!(
                "enable-debug-command takes yes, local or no, not {s:?}"
            )),
        }
    }
}

impl EngineConfig {
    /// Whether `appendonly` is `yes` (as `CONFIG SET` left it; Redis's default is `no`).
    pub(crate) fn appendonly(&self) -> bool {
        self.settings.get("appendonly").is_some_and(|v| v == "yes")
    }
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            seed: 0x5eed,
            requirepass: None,
            persistence: false,
            journal_window_ms: None,
            busy_reply_threshold_ms: 5000,
            notify_keyspace_events: 0,
            settings: BTreeMap::new(),
            maxclients: client_limit::DEFAULT_MAXCLIENTS,
            maxclients_ceiling: None,
            output_limits: output_limits::OutputLimits::default(),
            idle_timeout_s: 0,
            native_scripts: crate::native::NativeScripts::new(),
            enable_debug_command: DebugCommand::No,
            version: Version::V7_0,
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

/// Per-connection state. Its subscriptions and watches change only through the engine, which
/// keeps the registries that mirror them.
pub(crate) struct Client {
    pub db: usize,
    pub protocol: u8,
    pub name: Option<Bytes>,
    /// `CLIENT SETINFO lib-name` and `lib-ver` (Redis 7.2 and later), as `CLIENT LIST` shows them.
    pub lib: [Option<Bytes>; 2],
    pub authenticated: bool,
    /// The user it runs as (`AUTH`): `default` until it authenticates as another.
    pub user: Bytes,
    channels: BTreeSet<Bytes>,
    patterns: BTreeSet<Bytes>,
    shard_channels: BTreeSet<Bytes>,
    pub multi: Option<Multi>,
    watching: Vec<(usize, Bytes)>,
    dirty_cas: bool,
    outbox: VecDeque<Outbound>,
    waker: Option<Waker>,
    node: Option<NodeId>,
    pub created_at: i64,
    pub last_command_at: i64,
    /// The name of the last command it sent (`CLIENT LIST`'s `cmd`), `NULL` before any.
    pub last_command: &'static str,
    /// `QUIT` ran: the connection closes once its reply is out.
    pub closing: bool,
    /// `FAKE.AUTH` accepted the admin password on this connection.
    pub admin: bool,
    /// What it waits for while a blocking command holds it (`engine/blocking.rs`).
    blocked: Option<Box<blocking::Blocked>>,
    /// The replication offset right after its last command that wrote (Redis's `woff`), which
    /// its `WAIT` waits for (`engine/replication.rs`).
    repl_offset: i64,
    /// The reply of its blocking command once the block ended, until its driver takes it.
    unblocked: Option<Frame>,
    /// It sent `MONITOR` (`engine/monitor.rs`).
    pub monitor: bool,
    /// `CLIENT REPLY` (`engine/reply.rs`).
    pub reply_mode: reply::ReplyMode,
    /// The running command answers nothing, whatever the mode (`engine/reply.rs`).
    pub no_reply: bool,
    /// The last reply must not be sent (`engine/reply.rs`).
    silenced: bool,
    /// `CLIENT TRACKING on` (`engine/tracking.rs`).
    pub tracking: Option<Box<tracking::Tracking>>,
    /// `READONLY` and a pending `ASKING` on a cluster node (`engine/cluster.rs`).
    cluster_flags: u8,
}

impl Client {
    /// How many keys it watches (`CLIENT LIST`'s `watch`, Redis 7.2 and later).
    pub fn watch_count(&self) -> usize {
        self.watching.len()
    }

    /// How many channels and patterns it is subscribed to: the count `SUBSCRIBE`, `PSUBSCRIBE`
    /// and their unsubscribes confirm (shard channels are counted apart, as in Redis 7.0).
    pub fn subscriptions(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// How many of one kind (`CLIENT LIST`'s `sub`, `psub` and `ssub`).
    pub fn subscription_count(&self, kind: Subscription) -> usize {
        match kind {
            Subscription::Channel => self.channels.len(),
            Subscription::Pattern => self.patterns.len(),
            Subscription::Shard => self.shard_channels.len(),
        }
    }

    /// The count a confirmation of `kind` carries: shard channels alone for `SSUBSCRIBE` and
    /// `SUNSUBSCRIBE`, channels and patterns together for the others.
    pub fn confirmed_count(&self, kind: Subscription) -> usize {
        match kind {
            Subscription::Shard => self.shard_channels.len(),
            Subscription::Channel | Subscription::Pattern => self.subscriptions(),
        }
    }

    /// Whether it has a subscription of any kind: what makes it a pub/sub connection.
    pub fn is_subscriber(&self) -> bool {
        self.subscriptions() + self.shard_channels.len() > 0
    }

    /// Whether a blocking command holds it (`CLIENT LIST`'s `b` flag).
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// Whether a RESP2 connection is in the pub/sub context, where only a few commands may run.
    pub fn in_pubsub_context(&self) -> bool {
        self.protocol == 2 && self.is_subscriber()
    }

    /// Queues `frame` in the outbox and wakes the driver waiting for one.
    pub fn push(&mut self, at: i64, frame: Frame) {
        self.outbox.push_back(Outbound { at, frame });
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn subscribed(&mut self, kind: Subscription) -> &mut BTreeSet<Bytes> {
        match kind {
            Subscription::Channel => &mut self.channels,
            Subscription::Pattern => &mut self.patterns,
            Subscription::Shard => &mut self.shard_channels,
        }
    }
}

/// What a subscription names: one channel (`SUBSCRIBE`), a glob over channels (`PSUBSCRIBE`), or
/// one shard channel (`SSUBSCRIBE`, Redis 7.0's sharded pub/sub: a namespace of its own, reached
/// only by `SPUBLISH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subscription {
    Channel,
    Pattern,
    Shard,
}

/// The script cache: the registered native scripts ([`crate::native`]) loaded since the last
/// flush, and (with the `lua` feature) the Lua state with every other body loaded into it.
#[derive(Default)]
pub(crate) struct ScriptCache {
    loaded: Vec<std::sync::Arc<crate::native::NativeScript>>,
    /// Bodies without a native script: the state of the embedded Lua they are loaded into, which
    /// the Lua runner keeps here without the engine knowing its type; empty until it first runs.
    pub lua: Slot,
    /// What front doors see of the running script (`script_watch.rs`); it outlives the state.
    watch: std::sync::Arc<script_watch::ScriptWatch>,
}

impl ScriptCache {
    /// The loaded native script with this SHA (any case).
    #[inline]
    pub fn get(&self, sha: &[u8]) -> Option<&std::sync::Arc<crate::native::NativeScript>> {
        // Clients send lowercase SHAs; compare exactly first, then without case.
        self.loaded
            .iter()
            .find(|s| s.sha_bytes() == sha)
            .or_else(|| self.loaded.iter().find(|s| s.has_sha(sha)))
    }

    /// A new server's cache, after a restart or a failover: every script and the Lua state go,
    /// and the script generator starts over. The watch on the running script stays the same
    /// object, since the front doors hold it and read its threshold.
    pub fn start_over(&mut self) {
        let watch = std::mem::take(&mut self.watch);
        *self = ScriptCache::default();
        self.watch = watch;
    }

    /// The watch on the running script: the same object for the engine's whole life.
    pub fn watch(&self) -> std::sync::Arc<script_watch::ScriptWatch> {
        std::sync::Arc::clone(&self.watch)
    }

    /// The SHA and body length of each loaded native script.
    pub fn native_bodies(&self) -> Vec<(&str, usize)> {
        self.loaded
            .iter()
            .map(|s| (s.sha(), s.body().len()))
            .collect()
    }

    /// Forgets every native script (`SCRIPT FLUSH`; the Lua half is flushed beside).
    pub fn clear_native(&mut self) {
        self.loaded.clear();
    }

    /// Loads `script` (once).
    pub fn insert(&mut self, script: &std::sync::Arc<crate::native::NativeScript>) {
        if !self
            .loaded
            .iter()
            .any(|s| std::sync::Arc::ptr_eq(s, script))
        {
            self.loaded.push(std::sync::Arc::clone(script));
        }
    }
}

/// State the engine keeps for a layer above it without knowing its type (the embedded Lua's
/// states, for `EVAL` and for Functions): nothing until the layer first asks for it, then the
/// `Default` of the type it asks for. Emptying it ([`Slot::clear`]) is starting that state
/// over, as a restart does.
#[derive(Default)]
pub(crate) struct Slot(Option<Box<dyn std::any::Any + Send>>);

// Only the Lua runner fills slots.
#[cfg_attr(not(feature = "lua"), allow(dead_code))]
impl Slot {
    /// The state, made by `T::default()` if the slot is empty. A slot holds one type for good.
    pub fn get_or_default<T: std::any::Any + Send + Default>(&mut self) -> &mut T {
        self.0
            .get_or_insert_with(|| Box::new(T::default()))
            .downcast_mut()
            .expect("a slot holds one type")
    }

    /// The state, if it was ever asked for since the slot was last emptied.
    pub fn get<T: std::any::Any + Send>(&self) -> Option<&T> {
        self.0.as_ref().and_then(|b| b.downcast_ref())
    }

    /// The same, for writing.
    pub fn get_mut<T: std::any::Any + Send>(&mut self) -> Option<&mut T> {
        self.0.as_mut().and_then(|b| b.downcast_mut())
    }

    /// Forgets the state: the next use starts from its `Default`.
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

/// The fake Redis server's state. See the [module docs](self).
pub struct Engine {
    /// Shared with the node's replicas, which read the same time (`engine/replication.rs`).
    clock: std::sync::Arc<dyn Clock>,
    clock_offset: i64,
    config: EngineConfig,
    dbs: Vec<Db>,
    clients: BTreeMap<u64, Client>,
    next_client_id: u64,
    channels: BTreeMap<Bytes, BTreeSet<u64>>,
    patterns: BTreeMap<Bytes, BTreeSet<u64>>,
    shard_channels: BTreeMap<Bytes, BTreeSet<u64>>,
    scripts: ScriptCache,
    /// The libraries of Redis 7.0's Functions and their Lua state, which the Lua runner keeps
    /// here: kept by a failover, and by a restart only with persistence.
    functions: Slot,
    /// How many (client, key) watches exist: while none do, no command pays for `WATCH`.
    watchers: usize,
    expiry: ActiveExpiry,
    /// The hashes whose fields the active cycle expires (`hash_ttl.rs`).
    field_expiry: hash_ttl::FieldExpiry,
    rng: u64,
    faults: FaultPlan,
    pending_server_faults: Vec<(i64, usize, Fault)>,
    stats: Stats,
    /// The keys reads missed since the engine last published, for `keymiss` events: kept apart
    /// from the keyspaces' logs, so that a read can note one while it holds its miss.
    key_misses: Vec<(usize, Bytes)>,
    /// `maxclients` and the connections refused by it, shared with the TCP server.
    client_limit: std::sync::Arc<client_limit::ClientLimit>,
    /// How many clients are blocked: while none are, no command pays for serving them.
    blocked_clients: usize,
    /// The blocked clients' deadlines (engine time, client id), earliest first.
    block_deadlines: BTreeSet<(i64, u64)>,
    started_at: i64,
    /// The lock's scripts run on the Lua state like any other body, not as their native twins.
    lock_scripts_on_lua: bool,
    /// Runs the commands a driver queued in a transaction that the engine does not know (the TCP
    /// server's `FAKE.*`), when `EXEC` reaches them.
    queued_foreign: Option<ForeignCommands>,
    /// What the server commands keep beside the keyspace (`server_state.rs`).
    server: server_state::ServerState,
    /// The users and the ACL log (`acl/`).
    acl: acl::Acl,
    /// What the layer that runs commands does for the engine (see [`CommandHooks`]).
    hooks: CommandHooks,
    /// The clients that sent `MONITOR`, in that order (`engine/monitor.rs`).
    monitors: Vec<u64>,
    /// The commands a test asked to keep (`engine/monitor.rs`), if it asked.
    command_log: Option<Box<monitor::CommandLog>>,
    /// Whether a monitor or the command log watches the commands (one flag for the hot path).
    observed: bool,
    /// The clients that read the command stream after `SYNC` (`engine/repl_stream.rs`).
    repl_streams: Option<Box<repl_stream::ReplStreams>>,
    /// `CLIENT PAUSE` in force, and the clients it holds in the order it held them
    /// (`engine/pause.rs`).
    pause: Option<pause::ClientPause>,
    postponed: Vec<u64>,
    /// `SHUTDOWN` stopped the server (`engine/shutdown.rs`).
    shut_down: bool,
    /// Client-side caching (`engine/tracking.rs`).
    tracking: tracking::TrackingTables,
    /// The node's place in its topology: a primary and its replicas' streams, or a replica and
    /// the stream it applies (`engine/replication.rs`).
    replication: replication::Replication,
    /// The node's cluster, when it runs in cluster mode (`engine/cluster.rs`).
    cluster: Option<Box<cluster::Member>>,
    /// `maxmemory` and its eviction pool (`evict.rs`).
    evict: evict::Evictor,
    /// A Sentinel's state: the engine answers the sentinel's commands instead of Redis's
    /// (`engine/sentinel.rs`, `cmd/sentinel.rs`).
    pub(crate) sentinel: Option<Box<sentinel::Sentinel>>,
}

/// How a driver runs, at `EXEC`, the commands of its own it queued in a client's transaction: the
/// reply, or None for a command it does not know either.
pub(crate) type ForeignCommands =
    Box<dyn FnMut(&mut Engine, ClientId, &[Bytes]) -> Option<Frame> + Send>;

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("now", &self.now())
            .field("clients", &self.clients.len())
            .field("keys", &self.dbs.iter().map(Db::len).sum::<usize>())
            .finish_non_exhaustive()
    }
}

/// What the layer that runs commands does for the engine, handed to it when it is built (the
/// public constructors, `Engine::new` and `Engine::with_config`, live beside the command table
/// and install these): the work at the end of a command that only that layer knows how to do,
/// and the users a server starts with, whose rules only it can read. The engine calls them and
/// knows nothing else of commands.
#[derive(Clone, Copy)]
pub(crate) struct CommandHooks {
    /// Resumes the clients a `CLIENT PAUSE` postponed, once it has ended (at time `now`).
    pub resume_postponed: fn(&mut Engine, i64),
    /// Serves the blocked clients whose keys became ready (at time `now`).
    pub serve_blocked: fn(&mut Engine, i64),
    /// The users and the ACL log of a server that starts, with `requirepass` (or without).
    pub new_acl: fn(Option<&[u8]>, Version) -> acl::Acl,
}

impl Engine {
    /// An engine on `clock` set up by `config`, running `hooks` where it needs its commands.
    pub(crate) fn build(clock: impl Clock, config: EngineConfig, hooks: CommandHooks) -> Engine {
        let now = clock.now_ms();
        let acl = (hooks.new_acl)(config.requirepass.as_deref(), config.version);
        let mut dbs: Vec<Db> = (0..DATABASES).map(|_| Db::default()).collect();
        for db in &mut dbs {
            db.set_journal(config.journal_window_ms);
        }
        let client_limit = std::sync::Arc::new(client_limit::ClientLimit::new(
            config.maxclients,
            config.maxclients_ceiling,
        ));
        let mut engine = Engine {
            clock: std::sync::Arc::new(clock),
            clock_offset: 0,
            rng: config.seed ^ 0x9e37_79b9_7f4a_7c15,
            faults: FaultPlan::new(config.seed),
            config,
            dbs,
            clients: BTreeMap::new(),
            next_client_id: 1,
            channels: BTreeMap::new(),
            patterns: BTreeMap::new(),
            shard_channels: BTreeMap::new(),
            scripts: ScriptCache::default(),
            functions: Slot::default(),
            watchers: 0,
            expiry: ActiveExpiry::new(now),
            field_expiry: hash_ttl::FieldExpiry::default(),
            pending_server_faults: Vec::new(),
            stats: Stats::default(),
            key_misses: Vec::new(),
            client_limit,
            blocked_clients: 0,
            block_deadlines: BTreeSet::new(),
            started_at: now,
            lock_scripts_on_lua: false,
            queued_foreign: None,
            server: server_state::ServerState::default(),
            acl,
            hooks,
            monitors: Vec::new(),
            command_log: None,
            observed: false,
            repl_streams: None,
            pause: None,
            postponed: Vec::new(),
            shut_down: false,
            tracking: tracking::TrackingTables::default(),
            replication: replication::Replication::default(),
            cluster: None,
            sentinel: None,
            evict: evict::Evictor::default(),
        };
        // Redis 7.2 and later keep a small set of other members, and a small list, as a listpack.
        if engine.config.version != Version::V7_0 {
            engine.server.encodings.set_listpack = true;
            engine.server.encodings.list_listpack = true;
            let e = engine.server.encodings.clone();
            for db in &mut engine.dbs {
                db.set_encodings(&e);
            }
        }
        // The keyspaces log what the configured notifications need.
        let flags = engine.config.notify_keyspace_events;
        engine.set_keyspace_events(flags);
        engine
    }

    /// The engine's current time, unix ms: its clock plus any clock jump.
    pub fn now(&self) -> i64 {
        self.clock.now_ms().saturating_add(self.clock_offset)
    }

    /// The server's time in microseconds (`TIME`), clock jumps included: the clock's own
    /// microseconds where it has them, its millisecond otherwise.
    pub fn now_us(&self) -> i64 {
        self.clock
            .now_us()
            .saturating_add(self.clock_offset.saturating_mul(1000))
    }

    /// The clock's time without clock jumps: the time fault plans are written in.
    pub fn clock_now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Whether the engine is a Sentinel ([`Topology::sentinel`](replication::Topology::sentinel)).
    #[inline]
    pub fn is_sentinel(&self) -> bool {
        self.sentinel.is_some()
    }

    /// Moves a virtual clock forward by `ms` (`DEBUG SLEEP`): `false` on a clock that moves by
    /// itself (see [`Clock::advance_by`]).
    pub(crate) fn advance_clock_by(&mut self, ms: i64) -> bool {
        self.clock.advance_by(ms)
    }

    /// `DEBUG SET-ACTIVE-EXPIRE`: turns the active expiry cycles off or back on; keys still
    /// expire when a command finds them past their time.
    pub(crate) fn set_active_expire(&mut self, on: bool) {
        self.expiry.set_enabled(on);
    }

    /// `CONFIG SET hz` or `active-expire-effort`: the active expiry cycle's figures from now on
    /// (`expiry.rs`).
    pub(crate) fn tune_active_expiry(&mut self, hz: u32, effort: u32) {
        let now = self.clock_now();
        self.expiry.tune(hz, effort, now);
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The release the engine imitates ([`EngineConfig::version`]).
    pub fn version(&self) -> Version {
        self.config.version
    }

    /// The configuration, for `CONFIG SET`.
    pub(crate) fn config_mut(&mut self) -> &mut EngineConfig {
        &mut self.config
    }

    /// What the server commands keep beside the keyspace (`server_state.rs`).
    pub(crate) fn server_state(&mut self) -> &mut server_state::ServerState {
        &mut self.server
    }

    /// The users and the ACL log (`acl/`).
    pub(crate) fn acl(&self) -> &acl::Acl {
        &self.acl
    }

    /// The same, for `ACL SETUSER`, `CONFIG SET requirepass` and the log.
    pub(crate) fn acl_mut(&mut self) -> &mut acl::Acl {
        &mut self.acl
    }

    /// Forgets the statistics `INFO` reports (`CONFIG RESETSTAT`).
    pub(crate) fn reset_stats(&mut self) {
        self.stats.reset();
        self.expiry.stale = 0.0;
        self.expiry.time_cap_reached = 0;
        self.client_limit.reset_stats();
    }

    /// `maxclients` and the connections refused by it, which a server admits connections by.
    pub fn client_limit(&self) -> &std::sync::Arc<client_limit::ClientLimit> {
        &self.client_limit
    }

    /// Whether a driver has said how to run its own queued commands ([`ForeignCommands`]).
    pub(crate) fn runs_foreign_commands(&self) -> bool {
        self.queued_foreign.is_some()
    }

    /// Says how to run the commands a driver queues in transactions itself.
    pub(crate) fn set_foreign_commands(&mut self, run: ForeignCommands) {
        self.queued_foreign = Some(run);
    }

    /// Runs a queued command the engine does not know through its driver's [`ForeignCommands`]:
    /// None when there are none or they do not know it either.
    pub(crate) fn run_foreign_command(
        &mut self,
        client: ClientId,
        argv: &[Bytes],
    ) -> Option<Frame> {
        let mut run = self.queued_foreign.take()?;
        let reply = run(self, client, argv);
        self.queued_foreign = Some(run);
        reply
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
                lib: [None, None],
                authenticated: !self.acl.users.auth_required(),
                user: acl::DEFAULT_USER,
                channels: BTreeSet::new(),
                patterns: BTreeSet::new(),
                shard_channels: BTreeSet::new(),
                multi: None,
                watching: Vec::new(),
                dirty_cas: false,
                outbox: VecDeque::new(),
                waker: None,
                node,
                created_at: now,
                last_command_at: now,
                last_command: "NULL",
                closing: false,
                admin: false,
                blocked: None,
                unblocked: None,
                repl_offset: 0,
                monitor: false,
                reply_mode: reply::ReplyMode::default(),
                no_reply: false,
                silenced: false,
                tracking: None,
                cluster_flags: 0,
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
        self.forget_block(client.0);
        self.unsubscribe_all(client.0);
        self.unwatch(client.0);
        self.remove_monitor(client.0);
        self.detach_replica_stream(client.0);
        self.disable_tracking(client.0);
        if self.cluster.is_some() {
            self.forget_bus_waker(client.0);
        }
        let Some(mut c) = self.clients.remove(&client.0) else {
            return;
        };
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

    /// How many connected clients belong to `node`.
    pub fn clients_of_node(&self, node: NodeId) -> usize {
        self.clients
            .values()
            .filter(|c| c.node == Some(node))
            .count()
    }

    /// The nodes with a connection open, in order.
    pub fn nodes(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self.clients.values().filter_map(|c| c.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
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

    /// Whether `client` has a subscription of any kind (channel, pattern or shard channel): a
    /// fault that takes subscribers down closes it.
    pub fn is_subscriber(&self, client: ClientId) -> bool {
        self.clients
            .get(&client.0)
            .is_some_and(Client::is_subscriber)
    }

    /// The number of open connections.
    pub fn client_count(&self) -> usize {
        self.clients.len()
    }

    // ---- outboxes ----

    /// Takes the oldest frame queued for `client`.
    pub fn pop_outbox(&mut self, client: ClientId) -> Option<Outbound> {
        if self.cluster.is_some() {
            self.take_bus(self.now());
        }
        self.clients.get_mut(&client.0)?.outbox.pop_front()
    }

    /// Takes every frame queued for `client`, oldest first.
    pub fn drain_outbox(&mut self, client: ClientId) -> Vec<Frame> {
        if self.cluster.is_some() {
            self.take_bus(self.now());
        }
        self.clients
            .get_mut(&client.0)
            .map(|c| c.outbox.drain(..).map(|o| o.frame).collect())
            .unwrap_or_default()
    }

    /// How many frames are queued for `client`.
    pub fn outbox_len(&self, client: ClientId) -> usize {
        self.clients.get(&client.0).map_or(0, |c| c.outbox.len())
    }

    /// Asks to be woken (once) when a frame is queued for `client`, its block ends, or it is
    /// disconnected. Wakes at once if any already happened.
    pub fn register_waker(&mut self, client: ClientId, waker: &Waker) {
        if self.cluster.is_some() {
            self.take_bus(self.now());
            self.register_bus_waker(client.0, waker);
        }
        match self.clients.get_mut(&client.0) {
            Some(c) if c.outbox.is_empty() && c.unblocked.is_none() => {
                c.waker = Some(waker.clone());
            }
            _ => waker.wake_by_ref(),
        }
    }

    // ---- a command's frame ----

    /// Does now what the next command would do first: applies the scheduled server-side faults
    /// that are due, catches up on active expiry and times out the blocked clients whose
    /// deadline passed. Returns the engine's time. For drivers that
    /// move a clock by hand (the TCP server's `FAKE.ADVANCE`) and want the work that fell due
    /// done at once rather than at the next command.
    pub fn catch_up(&mut self) -> i64 {
        self.tick()
    }

    /// Reads the clock, applies the server-side faults that are due, catches up on active
    /// expiry and times out blocked clients: the frozen time of the command about to run.
    pub(crate) fn tick(&mut self) -> i64 {
        if !self.pending_server_faults.is_empty() {
            self.apply_due_server_faults();
        }
        let now = self.now();
        self.stats.ops.tick(now, self.stats.commands);
        if self.cluster_due(now) {
            self.cluster_tick(now);
        }
        if self.replication.is_active() {
            self.replication_tick(now);
        }
        if self.pause.is_some() && self.pause_ended(now) {
            (self.hooks.resume_postponed)(self, now);
        }
        if self.expiry.is_due(now)
            && !self.replication.is_replica()
            && !self.expiry_paused(now)
            && !self.server.debug.pause_cron
        {
            let rng = &mut self.rng;
            self.expiry
                .catch_up(&mut self.dbs, now, &mut || xorshift(rng));
            self.field_tick(now);
            self.publish_key_events(now);
            if self.is_tracking() {
                self.invalidate_logged(None, now);
                self.broadcast_invalidations(now);
            }
            self.collect_dirty();
            self.propagate(None, now);
        }
        if self
            .block_deadlines
            .first()
            .is_some_and(|&(at, _)| at <= now)
        {
            self.time_out_blocked(now);
        }
        now
    }

    /// Starts a command of `client`: its frozen time, or `None` when the connection is closed
    /// (the tick's faults may have just closed it).
    pub(crate) fn start_command(&mut self, client: ClientId) -> Option<i64> {
        let now = self.tick();
        if self.shut_down || !self.clients.contains_key(&client.0) {
            return None;
        }
        Some(now)
    }

    /// Ends a command of `client` started at `now`: its writes reach the watchers, and a `QUIT`
    /// closes the connection.
    pub(crate) fn end_command(&mut self, client: ClientId, now: i64) {
        if self.pause.is_some() && self.pause_ended(now) {
            (self.hooks.resume_postponed)(self, now);
        }
        if self.blocked_clients > 0 {
            (self.hooks.serve_blocked)(self, now);
        }
        // Redis's `beforeSleep`: the fast expiry cycle, when the last cycle ran out of time
        // (not while a client pause holds expiry).
        if self.expiry.wants_fast_cycle(now)
            && !self.replication.is_replica()
            && !self.expiry_paused(now)
        {
            let rng = &mut self.rng;
            self.expiry
                .before_sleep(&mut self.dbs, now, &mut || xorshift(rng));
        }
        self.publish_key_events(now);
        if self.is_tracking() {
            self.invalidate_logged(Some(client.0), now);
            self.broadcast_invalidations(now);
            if !self.server.debug.pause_cron {
                self.limit_tracking_table(now);
            }
        }
        self.collect_dirty();
        self.propagate(Some(client.0), now);
        if self.cluster.is_some() {
            self.publish_cluster_offset();
            self.prune_births();
        }
        if let Some(c) = self.clients.get_mut(&client.0) {
            c.last_command_at = now;
            if c.closing {
                self.disconnect(client);
            }
        }
    }

    // ---- the state command handlers reach ----

    /// Database `db` (an index below [`DATABASES`]).
    #[inline]
    pub(crate) fn db_mut(&mut self, db: usize) -> &mut Db {
        &mut self.dbs[db]
    }

    /// Every database, in index order.
    pub(crate) fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    /// Every database, for writing (`FLUSHALL`).
    pub(crate) fn dbs_mut(&mut self) -> &mut [Db] {
        &mut self.dbs
    }

    /// The connection `id`, if it is open.
    #[inline]
    pub(crate) fn client_mut(&mut self, id: u64) -> Option<&mut Client> {
        self.clients.get_mut(&id)
    }

    /// The connection `id`, if it is open.
    pub(crate) fn client(&self, id: u64) -> Option<&Client> {
        self.clients.get(&id)
    }

    /// Every open connection by id, in id order (`CLIENT LIST`).
    pub(crate) fn clients(&self) -> impl Iterator<Item = (u64, &Client)> {
        self.clients.iter().map(|(&id, c)| (id, c))
    }

    /// The script cache.
    pub(crate) fn scripts(&mut self) -> &mut ScriptCache {
        &mut self.scripts
    }

    /// The libraries `FUNCTION LOAD` loaded, as the Lua runner keeps them.
    #[cfg(feature = "lua")]
    pub(crate) fn functions(&mut self) -> &mut Slot {
        &mut self.functions
    }

    /// Runs the lock's five scripts on the embedded Lua, as any other body, instead of as their
    /// native twins (`on`), or natively again (the default). For comparing the two: the replies
    /// and the keys they leave must be the same. Without the `lua` feature the twins always run.
    pub fn run_lock_scripts_on_lua(&mut self, on: bool) {
        self.lock_scripts_on_lua = on && cfg!(feature = "lua");
    }

    /// Whether the lock's scripts run on the embedded Lua (see
    /// [`run_lock_scripts_on_lua`](Engine::run_lock_scripts_on_lua)).
    pub fn lock_scripts_run_on_lua(&self) -> bool {
        self.lock_scripts_on_lua
    }

    /// The counters `INFO` reports.
    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// What active expiry reports (`INFO`'s `expired_stale_perc` and
    /// `expired_time_cap_reached_count`).
    pub(crate) fn expiry_stats(&self) -> (f64, u64) {
        (self.expiry.stale, self.expiry.time_cap_reached)
    }

    /// The counters, for `SLOWLOG` and `CONFIG SET slowlog-*`.
    pub(crate) fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }

    /// When the engine started, unix ms (`INFO`'s uptime).
    pub(crate) fn started_at(&self) -> i64 {
        self.started_at
    }

    /// The next number of the engine's seeded generator (`SPOP`, `SRANDMEMBER`, `RANDOMKEY`;
    /// expiry sampling draws from it too): never unseeded randomness, so a run replays exactly.
    pub(crate) fn random(&mut self) -> u64 {
        xorshift(&mut self.rng)
    }

    /// A key of database `db` drawn with the seeded generator, live or not (`RANDOMKEY`).
    pub(crate) fn random_key(&mut self, db: usize) -> Option<Bytes> {
        let Engine { dbs, rng, .. } = self;
        dbs[db].random_key(|| xorshift(rng))
    }

    // ---- faults ----

    /// The fault plan: the faults, each node's sequence numbers and the fault log.
    pub fn fault_plan(&self) -> &FaultPlan {
        &self.faults
    }

    /// The fault plan, for the front doors that ask it about each command and delivery. Crate
    /// private: a fault added past [`Engine::add_fault`] would never schedule its server-side
    /// event nor resolve its `NEXT` trigger. (A simulator keeps plans of its own.)
    pub(crate) fn fault_plan_mut(&mut self) -> &mut FaultPlan {
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
        // A cluster's own faults belong to its map, whichever node is told of them (`FAKE.FAULT`
        // on any node of `--cluster`), not to the node's plan.
        if let (Fault::SlotMigration { .. } | Fault::ShardFailover { .. }, Some(member)) =
            (fault, self.cluster.as_ref())
        {
            member.shared.schedule(fault);
            return;
        }
        if let Fault::ReplicaStall {
            replica,
            from,
            until,
        } = fault
        {
            self.replication.stall(replica, from, until);
        }
        if let Fault::Failover { lag_ms, .. } = fault {
            self.journal_writes(lag_ms + 1);
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
                Fault::ClientPause {
                    until, writes_only, ..
                } => self.pause_clients_until(until, writes_only),
                _ => {}
            }
        }
    }

    /// Keeps a journal of at least the last `window_ms` of writes from now on, so that a failover
    /// can undo the writes its replica had not received (a wider window already kept stays).
    pub fn journal_writes(&mut self, window_ms: i64) {
        let window = self.config.journal_window_ms.unwrap_or(0).max(window_ms);
        self.config.journal_window_ms = Some(window);
        for db in &mut self.dbs {
            db.set_journal(Some(window));
        }
    }

    /// Restarts the server now: every connection closes, the script cache empties, the users
    /// are `default` alone again (the fake has no ACL file), and the data and the Functions
    /// libraries are lost unless persistence is on. As a new process's, the counters `INFO`
    /// reports, the slow log and the uptime start over, and `run_id` changes with the start
    /// time.
    pub fn restart(&mut self) {
        let persistence = self.config.persistence;
        self.close_all_connections();
        self.stats = Stats::default();
        self.key_misses.clear();
        self.started_at = self.now();
        self.acl = (self.hooks.new_acl)(self.config.requirepass.as_deref(), self.config.version);
        self.shut_down = false;
        self.pause = None;
        self.scripts.start_over();
        if !persistence {
            self.functions.clear();
            let now = self.now();
            for db in &mut self.dbs {
                db.flush(now);
                // A new process: no write before it can be undone.
                db.set_journal(None);
                db.set_journal(self.config.journal_window_ms);
            }
        }
        self.record_server_fault(None, FaultEventKind::Restarted(persistence));
    }

    /// Fails over now to a replica lagging by `lag_ms`: the writes of the last `lag_ms` are undone
    /// (as far as the write journal reaches), every connection closes, the script cache empties;
    /// the Functions libraries stay, as Redis replicates them. Returns how many writes were undone.
    pub fn failover(&mut self, lag_ms: i64) -> usize {
        let since = self.now() - lag_ms;
        let undone = self.dbs.iter_mut().map(|db| db.rollback_after(since)).sum();
        self.close_all_connections();
        self.shut_down = false;
        self.pause = None;
        self.scripts.start_over();
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

    /// Closes `node`'s connections now, as a broken network does (the node lives on, and may
    /// connect again).
    pub fn sever(&mut self, node: NodeId) {
        let ids: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.node == Some(node))
            .map(|(&id, _)| id)
            .collect();
        for &id in &ids {
            self.disconnect(ClientId(id));
        }
        self.record_server_fault(Some(node), FaultEventKind::Severed(ids.len()));
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
        self.shard_channels.clear();
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
