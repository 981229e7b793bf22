//! Replicas: a primary's write stream, its lag, and what a replica serves while it lags.
//!
//! A lock's worst race is a failover that promotes a replica which never saw the acquire. To
//! replay it, the fake runs each node of a topology as an engine of its own ([`Topology`]), all
//! on one clock and one seed. After every command, transaction or script, a primary sends the
//! keys it changed as their new entries (or deletions), one batch per command, with its
//! replication offset after it: effects at key granularity, which covers every command and the
//! lock's native script twins with one path (`docs/ARCHITECTURE.md`, "Replicas"). While a node
//! has no replicas none of this runs: the keyspace logs nothing and a command pays one branch.
//!
//! Each replica has a stream of its own, shared by the primary (which pushes) and the replica
//! (which takes) under a lock of the stream's, so neither ever takes the other's engine lock. A
//! batch sent at `t` arrives at `t + lag`, the replica's fixed lag plus a jitter keyed by
//! (replica, batch number) from the seed, never before the batch ahead of it; a stall
//! ([`Fault::ReplicaStall`](crate::Fault::ReplicaStall)) holds every arrival inside its window
//! until its end. The replica applies what has arrived before each command it runs and at
//! [`Engine::catch_up`]; the primary reads the same arrival times as the replicas'
//! acknowledgements, which is what `WAIT` counts. Nothing is an event on a queue of its own:
//! what a node answers is a pure function of the commands and their times.
//!
//! A replica refuses writes with Redis's `READONLY`, runs no active expiry, and hides a key past
//! its deadline from reads while keeping it until the primary's deletion arrives (Redis 7.0's
//! rule, `Db`'s `keep_expired`). `REPLICAOF NO ONE` promotes it with what it has applied: the
//! batches in flight are lost and the stream is cut; the old primary drops the replica at its
//! next write.

use crate::clock::Clock;
use crate::engine::blocking::{Blocked, Waiter};
use crate::engine::db::Entry;
use crate::engine::{Engine, EngineConfig};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};

mod elsewhere;
pub(crate) use elsewhere::MASTERDOWN;

/// Redis's error to a write on a primary with fewer good replicas than `min-replicas-to-write`.
pub(crate) const NOREPLICAS: Frame = Frame::error("NOREPLICAS Not enough good replicas to write.");

/// Redis's error to a write on a read-only replica.
pub(crate) const READONLY: Frame =
    Frame::error("READONLY You can't write against a read only replica.");

/// The address a node announces unless told otherwise.
const LOOPBACK: &str = "127.0.0.1";

/// The address a node listening on `ip` announces: `ip` itself, or for an unspecified address
/// (`0.0.0.0`, `::`) its family's loopback, where a client on this machine reaches it.
pub(crate) fn announced_ip(ip: std::net::IpAddr) -> std::net::IpAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    }
}

/// The port the first node of an in-process topology announces (`ROLE`, `INFO replication`);
/// the TCP server announces the ports it listens on instead ([`Topology::set_base_port`]).
pub const DEFAULT_BASE_PORT: u16 = 6379;

/// The seed's stream for replica lag jitter (a keyed draw: removing one replica or one batch
/// leaves the others' draws as they were).
const LAG_STREAM: u64 = 0x7265_706c_6167; // "replag"

/// A node of a topology: the primary, or one of its replicas by index; in a
/// [`Cluster`](crate::engine::cluster::Cluster), the same under a shard index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerNode {
    shard: u16,
    replica: Option<u16>,
}

impl ServerNode {
    /// The primary.
    pub const PRIMARY: ServerNode = ServerNode {
        shard: 0,
        replica: None,
    };

    /// Replica `index` of the primary, from 0.
    pub fn replica(index: u16) -> ServerNode {
        ServerNode {
            shard: 0,
            replica: Some(index),
        }
    }

    /// The replica's index, or None for a primary.
    pub fn replica_index(self) -> Option<u16> {
        self.replica
    }

    /// The primary of a cluster's shard `shard` (as the cluster was created: a failover may
    /// have promoted one of its replicas since).
    pub fn shard_primary(shard: u16) -> ServerNode {
        ServerNode {
            shard,
            replica: None,
        }
    }

    /// Replica `index` of a cluster's shard `shard`.
    pub fn shard_replica(shard: u16, index: u16) -> ServerNode {
        ServerNode {
            shard,
            replica: Some(index),
        }
    }

    /// The node of shard `shard`: its primary (None) or a replica.
    pub fn in_shard(shard: u16, replica: Option<u16>) -> ServerNode {
        ServerNode { shard, replica }
    }

    /// The node's shard (0 outside a cluster).
    pub fn shard(self) -> u16 {
        self.shard
    }

    /// The node's position in its topology: 0 for the primary, `1 + index` for a replica.
    fn position(self) -> usize {
        self.replica.map_or(0, |i| usize::from(i) + 1)
    }
}

impl fmt::Display for ServerNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shard != 0 {
            write!(f, "shard({}).", self.shard)?;
        }
        match self.replica {
            None => write!(f, "primary"),
            Some(i) => write!(f, "replica({i})"),
        }
    }
}

/// How far a replica lags behind its primary: each batch of writes arrives `fixed_ms` plus a
/// jitter in `[0, jitter_ms]` drawn from the engine's seed after it was sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaLag {
    /// The lag every batch has.
    pub fixed_ms: i64,
    /// The most a batch's seeded jitter adds.
    pub jitter_ms: i64,
}

impl ReplicaLag {
    /// A lag of exactly `ms`.
    pub fn fixed(ms: i64) -> ReplicaLag {
        ReplicaLag {
            fixed_ms: ms.max(0),
            jitter_ms: 0,
        }
    }

    /// A lag of `fixed_ms` plus a seeded jitter of up to `jitter_ms`.
    pub fn jittered(fixed_ms: i64, jitter_ms: i64) -> ReplicaLag {
        ReplicaLag {
            fixed_ms: fixed_ms.max(0),
            jitter_ms: jitter_ms.max(0),
        }
    }

    /// The lag of batch `batch` to replica `replica` under `seed`.
    fn draw(self, seed: u64, replica: u16, batch: u64) -> i64 {
        if self.jitter_ms == 0 {
            return self.fixed_ms;
        }
        let draw = crate::seed::Seed(seed).draw(LAG_STREAM, u64::from(replica), batch);
        let span = self.jitter_ms as u64 + 1;
        self.fixed_ms.saturating_add((draw % span) as i64)
    }
}

/// A primary and its replicas, each an [`Engine`] behind its own lock, on the primary's clock and
/// seed. A front door addresses a node by taking that node's engine:
/// `FakeConnection::new(topology.node(ServerNode::replica(0)).clone(), NodeId(1))`.
pub struct Topology {
    nodes: Vec<Arc<Mutex<Engine>>>,
    base_port: u16,
    /// The shard it is in a cluster (0 alone).
    shard: u16,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("replicas", &(self.nodes.len() - 1))
            .field("base_port", &self.base_port)
            .finish()
    }
}

impl Topology {
    /// A topology of `primary` alone.
    pub fn new(primary: Engine) -> Topology {
        let mut primary = primary;
        primary.replication.port = DEFAULT_BASE_PORT;
        Topology {
            nodes: vec![Arc::new(Mutex::new(primary))],
            base_port: DEFAULT_BASE_PORT,
            shard: 0,
        }
    }

    /// `primary` with `count` replicas, each lagging by `lag`.
    pub fn with_replicas(primary: Engine, count: u16, lag: ReplicaLag) -> Topology {
        let mut topology = Topology::new(primary);
        for _ in 0..count {
            topology.add_replica(lag);
        }
        topology
    }

    /// Attaches a new replica lagging by `lag`: it starts with a copy of the primary's live keys
    /// (the full sync, instant here), then follows its write stream. Its name.
    pub fn add_replica(&mut self, lag: ReplicaLag) -> ServerNode {
        let index = u16::try_from(self.nodes.len() - 1).expect("at most 65535 replicas");
        let port = self.port_of(index as usize + 1);
        let replica = lock(&self.nodes[0]).attach_replica(index, lag, port);
        self.nodes.push(Arc::new(Mutex::new(replica)));
        ServerNode::in_shard(self.shard, Some(index))
    }

    /// The engine of `node`, if the topology has it.
    pub fn get(&self, node: ServerNode) -> Option<&Arc<Mutex<Engine>>> {
        if node.shard != self.shard {
            return None;
        }
        self.nodes.get(node.position())
    }

    /// The engine of `node`. Panics if the topology has no such node.
    pub fn node(&self, node: ServerNode) -> &Arc<Mutex<Engine>> {
        self.get(node)
            .unwrap_or_else(|| panic!("the topology has no {node}"))
    }

    /// The primary's engine.
    pub fn primary(&self) -> &Arc<Mutex<Engine>> {
        &self.nodes[0]
    }

    /// Every node with its engine: the primary first, then the replicas by index.
    pub fn nodes(&self) -> impl Iterator<Item = (ServerNode, &Arc<Mutex<Engine>>)> {
        let shard = self.shard;
        self.nodes.iter().enumerate().map(move |(i, e)| {
            let replica = i.checked_sub(1).map(|r| r as u16);
            (ServerNode::in_shard(shard, replica), e)
        })
    }

    /// Makes it shard `shard` of a cluster: its nodes are named under that shard.
    pub(crate) fn set_shard(&mut self, shard: u16) {
        self.shard = shard;
    }

    /// Announces the nodes on consecutive ports from `port` (the primary's), as the TCP server
    /// listens: what `ROLE` and `INFO replication` name.
    pub fn set_base_port(&mut self, port: u16) {
        self.base_port = port;
        let ports: Vec<u16> = (0..self.nodes.len()).map(|i| self.port_of(i)).collect();
        self.set_ports(&ports);
    }

    /// Announces each node on its port in `ports` (the primary's first, then the replicas'),
    /// which a cluster's shard needs: its nodes' ports are not consecutive.
    pub(crate) fn set_ports(&mut self, ports: &[u16]) {
        if let Some(&first) = ports.first() {
            self.base_port = first;
        }
        for (i, engine) in self.nodes.iter().enumerate().take(ports.len()) {
            let mut engine = lock(engine);
            let r = &mut engine.replication;
            r.port = ports[i];
            for link in &mut r.replicas {
                link.port = ports[usize::from(link.index) + 1];
            }
            if let Some(up) = &mut r.upstream {
                up.primary_port = ports[0];
            }
        }
    }

    /// Makes every node announce `ip` (`ROLE`, `INFO replication`, the Sentinel's replies)
    /// instead of loopback: the address the TCP door listens on, which is where a client finds
    /// each node. (A real replica on a loopback alias is seen from its primary at 127.0.0.1,
    /// the kernel's source address; on any other address, at the address it binds.)
    pub fn set_announce_ip(&self, ip: std::net::IpAddr) {
        let host: Arc<str> = Arc::from(announced_ip(ip).to_string());
        for engine in &self.nodes {
            lock(engine).replication.host = Some(host.clone());
        }
    }

    fn port_of(&self, position: usize) -> u16 {
        self.base_port.wrapping_add(position as u16)
    }
}

fn lock(engine: &Arc<Mutex<Engine>>) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|e| e.into_inner())
}

/// One key's new state, as a batch carries it.
struct Effect {
    db: usize,
    key: Bytes,
    /// The entry as the primary stored it, or None for a deletion.
    entry: Option<Entry>,
}

/// The effects of one command on the primary.
struct Batch {
    /// When it arrives if no stall holds it (never before the batch ahead of it).
    arrives: i64,
    /// The primary's replication offset after it.
    offset: i64,
    /// Shared by every replica's copy of the batch.
    effects: Arc<[Effect]>,
}

/// What is on the way from a primary to one replica (see the [module docs](self)).
#[derive(Default)]
struct Stream {
    batches: VecDeque<Batch>,
    /// Stall windows `[from, until)`.
    stalls: Vec<(i64, i64)>,
    /// The offset the replica has applied.
    applied: i64,
    /// When the newest batch arrives before stalls.
    last_arrival: i64,
    /// The replica was promoted: the primary drops it.
    cut: bool,
}

impl Stream {
    /// When a batch due at `arrives` reaches the replica: at the end of any stall it falls in.
    fn arrival(&self, arrives: i64) -> i64 {
        let mut t = arrives;
        while let Some(&(_, until)) = self.stalls.iter().find(|&&(f, u)| f <= t && t < u) {
            t = until;
        }
        t
    }

    /// The offset the replica has acknowledged by `now`: that of the last batch arrived.
    fn acked(&self, now: i64) -> i64 {
        let mut acked = self.applied;
        for b in &self.batches {
            if self.arrival(b.arrives) > now {
                break;
            }
            acked = b.offset;
        }
        acked
    }

    /// The first arrival after `now`, if a batch is still on the way.
    fn next_arrival(&self, now: i64) -> Option<i64> {
        self.batches
            .iter()
            .map(|b| self.arrival(b.arrives))
            .find(|&t| t > now)
    }

    /// When the stall the replica is in at `now` began, if it is in one.
    fn stalled_since(&self, now: i64) -> Option<i64> {
        self.stalls
            .iter()
            .find(|&&(f, u)| f <= now && now < u)
            .map(|&(f, _)| f)
    }
}

type SharedStream = Arc<Mutex<Stream>>;

fn stream(s: &SharedStream) -> MutexGuard<'_, Stream> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A primary's link to one replica.
struct Link {
    index: u16,
    stream: SharedStream,
    lag: ReplicaLag,
    port: u16,
}

/// A replica's link to its primary.
struct Upstream {
    stream: SharedStream,
    primary_port: u16,
    /// When the last batch arrived (or the sync ended): `master_last_io_seconds_ago`.
    last_io: i64,
    /// The offset the replica synced at (its backlog starts after it).
    synced_at: i64,
    /// Whether the lock's scripts ran on Lua before it became a replica, to restore on promotion.
    scripts_on_lua: bool,
}

/// A replica's primary that no node of the topology is (`elsewhere.rs`).
struct Elsewhere {
    host: Bytes,
    port: u16,
    /// Whether the lock's scripts ran on Lua before it became a replica, to restore on promotion.
    scripts_on_lua: bool,
    /// When its link to a primary of the topology went down, if it had one.
    down_since: Option<i64>,
}

/// What a primary hands a node that starts to follow it (see [`Engine::sync_replica`]).
pub(crate) struct FullSync {
    /// Each database's live keys.
    snapshot: Vec<(usize, Vec<(Bytes, Entry)>)>,
    stream: SharedStream,
    ids: (String, String),
    /// The primary's offset at the sync.
    offset: i64,
    primary_port: u16,
    /// The port the replica announces.
    port: u16,
    /// The address every node of the topology announces.
    host: Option<Arc<str>>,
}

/// A client waiting in `WAIT`.
#[derive(Clone, Copy)]
struct Wait {
    replicas: i64,
    offset: i64,
    timeout_at: Option<i64>,
    /// `WAITAOF`'s count of local fsyncs, given back beside the replicas' (None for `WAIT`).
    local: Option<i64>,
}

/// A node's replication state (see the [module docs](self)).
#[derive(Default)]
pub(crate) struct Replication {
    /// `master_repl_offset`.
    offset: i64,
    /// As a primary: its replicas.
    replicas: Vec<Link>,
    /// Stalls of replicas by index, kept for a replica attached after its fault was added.
    stalls: Vec<(u16, i64, i64)>,
    /// As a replica: the stream it applies.
    upstream: Option<Upstream>,
    /// As a replica of a primary it cannot reach: that primary's address.
    elsewhere: Option<Elsewhere>,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (seconds), while both are set.
    min_replicas: Option<(i64, i64)>,
    /// The clients blocked in `WAIT`, by id.
    waits: BTreeMap<u64, Wait>,
    /// Batches sent: the key of each batch's lag draw.
    batches: u64,
    /// `master_replid` and `master_replid2`, once the node took part in replication.
    replid: Option<(String, String)>,
    /// `second_repl_offset` after a promotion.
    second_offset: Option<i64>,
    /// The port the node announces.
    port: u16,
    /// The address the node announces, and its primary and replicas with it (one per topology,
    /// as the TCP door binds one): None for loopback ([`Topology::set_announce_ip`]).
    host: Option<Arc<str>>,
}

impl Replication {
    /// Whether the engine's tick has replication work: a stream to apply or `WAIT`s to serve.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.upstream.is_some() || !self.waits.is_empty()
    }

    /// Whether the node is a replica.
    #[inline]
    pub fn is_replica(&self) -> bool {
        self.upstream.is_some() || self.elsewhere.is_some()
    }

    /// Records a stall of replica `replica` in `[from, until)`.
    pub fn stall(&mut self, replica: u16, from: i64, until: i64) {
        self.stalls.push((replica, from, until));
        for link in self.replicas.iter().filter(|l| l.index == replica) {
            stream(&link.stream).stalls.push((from, until));
        }
    }
}

/// A replication id: 40 hex digits drawn from the seed (Redis draws them at random).
fn replid(seed: u64, salt: u64) -> String {
    let s = crate::seed::Seed(seed);
    let mut id = String::with_capacity(40);
    for i in 0..3 {
        let _ = write!(id, "{:016x}", s.draw(LAG_STREAM ^ 1, salt, i));
    }
    id.truncate(40);
    id
}

/// The bytes a batch adds to the replication offset: the fake's measure of its effects (the key
/// and, for strings, the value, plus a fixed overhead per key), not Redis's byte count of a
/// command stream, which the fake does not produce.
fn batch_size(effects: &[Effect]) -> i64 {
    effects
        .iter()
        .map(|e| {
            let value = match e.entry.as_ref().map(|e| &e.value) {
                Some(crate::engine::db::Value::Str(s)) => s.len(),
                _ => 0,
            };
            (e.key.len() + value + 32) as i64
        })
        .sum()
}

impl Engine {
    /// Whether the node is a replica, which refuses writes.
    #[inline]
    pub fn is_read_only_replica(&self) -> bool {
        self.replication.is_replica()
    }

    /// Whether a write meets a check of the node's replication: the node is a replica
    /// (`READONLY`), or a primary with fewer good replicas than `min-replicas-to-write` asks
    /// (`NOREPLICAS`).
    #[inline]
    pub(crate) fn checks_replicas(&self) -> bool {
        self.replication.is_replica()
            || (self.replication.min_replicas.is_some() && self.too_few_good_replicas())
    }

    /// Redis's `checkGoodReplicasStatus`: whether writes may run as `min-replicas-to-write` asks
    /// (always on a replica, or while it is not set). Scripts and functions that may write ask
    /// it before they run.
    #[inline]
    pub(crate) fn has_good_replicas(&self) -> bool {
        self.replication.is_replica()
            || self.replication.min_replicas.is_none()
            || !self.too_few_good_replicas()
    }

    /// Whether a primary has fewer good replicas than `min-replicas-to-write`: a good one is
    /// live and has acknowledged within `min-replicas-max-lag` seconds (a stalled replica stops
    /// acknowledging when its stall starts), as Redis's `refreshGoodSlavesCount` counts them.
    #[cold]
    fn too_few_good_replicas(&self) -> bool {
        let Some((to_write, max_lag)) = self.replication.min_replicas else {
            return false;
        };
        let now = self.now();
        let good = (self.live_links())
            .filter(|(_, s)| {
                s.stalled_since(now)
                    .is_none_or(|from| (now - from) / 1000 <= max_lag)
            })
            .count();
        i64::try_from(good).unwrap_or(i64::MAX) < to_write
    }

    /// Follows `CONFIG SET` of `min-replicas-to-write` and `min-replicas-max-lag`: Redis checks
    /// writes only while both are above 0.
    pub(crate) fn set_min_replicas(&mut self, to_write: i64, max_lag: i64) {
        self.replication.min_replicas =
            (to_write > 0 && max_lag > 0).then_some((to_write, max_lag));
    }

    /// Makes a replica of this primary (see [`Topology::add_replica`]).
    fn attach_replica(&mut self, index: u16, lag: ReplicaLag, port: u16) -> Engine {
        let seed = self.config.seed;
        let config = EngineConfig {
            seed: crate::seed::Seed(seed).draw(LAG_STREAM ^ 2, u64::from(index), 0),
            ..self.config.clone()
        };
        let clock: Arc<dyn Clock> = self.clock.clone();
        let mut replica = Engine::build(clock, config, self.hooks);
        replica.follow(self.sync_replica(index, lag, port));
        replica
    }

    /// The primary's half of a full sync: a copy of its live keys and a new stream to the replica
    /// at `port`, which it feeds from now on. The replica's half is [`Engine::follow`], under its
    /// own lock: no engine lock is ever taken inside another.
    pub(crate) fn sync_replica(&mut self, index: u16, lag: ReplicaLag, port: u16) -> FullSync {
        let now = self.now();
        let seed = self.config.seed;
        let snapshot = (self.dbs.iter().enumerate())
            .map(|(i, db)| (i, db.live_entries(now)))
            .collect();
        let ids = self
            .replication
            .replid
            .get_or_insert_with(|| (replid(seed, 0), "0".repeat(40)))
            .clone();
        let stream = Arc::new(Mutex::new(Stream {
            applied: self.replication.offset,
            last_arrival: now,
            stalls: (self.replication.stalls.iter())
                .filter(|s| s.0 == index)
                .map(|&(_, f, u)| (f, u))
                .collect(),
            ..Stream::default()
        }));
        self.replication.replicas.push(Link {
            index,
            stream: stream.clone(),
            lag,
            port,
        });
        for db in &mut self.dbs {
            db.log_replicated(true);
        }
        FullSync {
            snapshot,
            stream,
            ids,
            offset: self.replication.offset,
            primary_port: self.replication.port,
            port,
            host: self.replication.host.clone(),
        }
    }

    /// The replica's half of a full sync ([`Engine::sync_replica`]): the node drops its own
    /// replicas (their streams are cut) and the primary it followed, if any, replaces its keys
    /// with the primary's, and follows the new stream. This is how a Sentinel's failover turns
    /// the old primary, and the other replicas, into replicas of the promoted one, as Redis's
    /// `REPLICAOF host port` does with a full resync.
    pub(crate) fn follow(&mut self, sync: FullSync) {
        let now = self.now();
        let elsewhere = self.replication.elsewhere.take();
        if let Some(up) = self.replication.upstream.take() {
            let mut s = stream(&up.stream);
            s.cut = true;
            s.batches.clear();
        }
        for link in self.replication.replicas.drain(..) {
            let mut s = stream(&link.stream);
            s.cut = true;
            s.batches.clear();
        }
        for (i, entries) in sync.snapshot {
            let db = &mut self.dbs[i];
            db.log_replicated(false);
            db.flush(now);
            for (key, entry) in entries {
                db.apply_replicated(&key, Some(entry), now);
            }
            db.keep_expired(true);
        }
        let scripts_on_lua = elsewhere.map_or(self.lock_scripts_on_lua, |e| e.scripts_on_lua);
        // A script's write call on a replica fails as Redis words it; the Lua body says it.
        self.run_lock_scripts_on_lua(true);
        let r = &mut self.replication;
        r.offset = sync.offset;
        r.upstream = Some(Upstream {
            stream: sync.stream,
            primary_port: sync.primary_port,
            last_io: now,
            synced_at: sync.offset,
            scripts_on_lua,
        });
        r.replid = Some(sync.ids);
        r.second_offset = None;
        r.port = sync.port;
        r.host = sync.host;
    }

    /// Ends a command (or an expiry pass) on a primary: what it changed goes to the replicas as
    /// one batch, and the client that wrote remembers the offset for its `WAIT`.
    #[inline]
    pub(crate) fn propagate(&mut self, client: Option<u64>, now: i64) {
        if !self.replication.replicas.is_empty() {
            self.send_batch(client, now);
        }
        if self.repl_streams.is_some() {
            self.flush_streams(now);
        }
    }

    #[cold]
    fn send_batch(&mut self, client: Option<u64>, now: i64) {
        let mut effects = Vec::new();
        for (i, db) in self.dbs.iter_mut().enumerate() {
            if !db.has_replicated() {
                continue;
            }
            for key in db.take_replicated() {
                let entry = db.stored(&key).cloned();
                effects.push(Effect { db: i, key, entry });
            }
        }
        if effects.is_empty() {
            return;
        }
        let r = &mut self.replication;
        r.offset += batch_size(&effects);
        r.batches += 1;
        let effects: Arc<[Effect]> = effects.into();
        let seed = self.config.seed;
        r.replicas.retain(|link| {
            let mut s = stream(&link.stream);
            if s.cut {
                return false;
            }
            let lag = link.lag.draw(seed, link.index, r.batches);
            let arrives = s.last_arrival.max(now.saturating_add(lag));
            s.last_arrival = arrives;
            s.batches.push_back(Batch {
                arrives,
                offset: r.offset,
                effects: effects.clone(),
            });
            true
        });
        let offset = r.offset;
        if r.replicas.is_empty() {
            for db in &mut self.dbs {
                db.log_replicated(false);
            }
        }
        if let Some(c) = client.and_then(|id| self.clients.get_mut(&id)) {
            c.repl_offset = offset;
        }
        if !self.replication.waits.is_empty() {
            self.serve_waits(now);
        }
    }

    /// The replication part of the engine's tick: a replica applies what has arrived; a primary
    /// answers the `WAIT`s that are done and moves the others' wake-ups.
    #[cold]
    pub(crate) fn replication_tick(&mut self, now: i64) {
        if self.replication.upstream.is_some() {
            self.receive(now);
        }
        if !self.replication.waits.is_empty() {
            self.serve_waits(now);
        }
    }

    /// Applies the batches that have arrived by `now`, in order.
    fn receive(&mut self, now: i64) {
        let Some(up) = &self.replication.upstream else {
            return;
        };
        let arrived: Vec<(i64, Batch)> = {
            let mut s = stream(&up.stream);
            let mut arrived = Vec::new();
            while let Some(b) = s.batches.front() {
                let at = s.arrival(b.arrives);
                if at > now {
                    break;
                }
                let b = s.batches.pop_front().expect("just seen");
                s.applied = b.offset;
                arrived.push((at, b));
            }
            arrived
        };
        let Some(&(last_at, _)) = arrived.last() else {
            return;
        };
        for (_, batch) in &arrived {
            for e in batch.effects.iter() {
                self.dbs[e.db].apply_replicated(&e.key, e.entry.clone(), now);
            }
            self.replication.offset = batch.offset;
        }
        if let Some(up) = &mut self.replication.upstream {
            up.last_io = last_at;
        }
        self.collect_dirty();
        if self.blocked_clients > 0 {
            (self.hooks.serve_blocked)(self, now);
        }
    }

    /// How many replicas have acknowledged `offset` by `now`.
    fn acks(&self, offset: i64, now: i64) -> i64 {
        let acked = self.replication.replicas.iter().filter(|l| {
            let s = stream(&l.stream);
            !s.cut && s.acked(now) >= offset
        });
        acked.count() as i64
    }

    /// When the next batch reaches any replica after `now`.
    fn next_arrival(&self, now: i64) -> Option<i64> {
        let arrivals = self.replication.replicas.iter();
        arrivals
            .filter_map(|l| stream(&l.stream).next_arrival(now))
            .min()
    }

    /// `WAIT replicas timeout_ms` for client `id` at `now`: the count to reply now, or None when
    /// the client blocks (only if `may_block`; a transaction's or a script's `WAIT`, or one
    /// already satisfied, answers at once, as Redis's).
    pub(crate) fn wait_for_replicas(
        &mut self,
        id: u64,
        replicas: i64,
        timeout_ms: i64,
        now: i64,
        may_block: bool,
        local: Option<i64>,
    ) -> Option<Frame> {
        let offset = self.clients.get(&id).map_or(0, |c| c.repl_offset);
        let acked = self.acks(offset, now);
        if acked >= replicas || !may_block {
            return Some(super::blocking::wait_reply(acked, local));
        }
        let timeout_at = (timeout_ms > 0).then(|| now.saturating_add(timeout_ms));
        let wait = Wait {
            replicas,
            offset,
            timeout_at,
            local,
        };
        self.replication.waits.insert(id, wait);
        let deadline = earliest(timeout_at, self.next_arrival(now));
        self.block(id, wait_block(deadline, acked, local));
        None
    }

    /// Answers the `WAIT`s that have their acknowledgements or their timeout by `now`, and moves
    /// the others' deadlines to the next arrival (waking their drivers to sleep on it).
    fn serve_waits(&mut self, now: i64) {
        let next = self.next_arrival(now);
        let waits: Vec<(u64, Wait)> = self
            .replication
            .waits
            .iter()
            .map(|(&i, &w)| (i, w))
            .collect();
        for (id, wait) in waits {
            let blocked = self.blocked(id).map(|b| (&b.waiter, b.deadline));
            let Some((&Waiter::Replicas { acked: was, .. }, deadline)) = blocked else {
                // Its block ended otherwise (a disconnect, `CLIENT UNBLOCK`).
                self.replication.waits.remove(&id);
                continue;
            };
            let acked = self.acks(wait.offset, now);
            if acked >= wait.replicas || wait.timeout_at.is_some_and(|t| t <= now) {
                self.replication.waits.remove(&id);
                self.unblock(id, super::blocking::wait_reply(acked, wait.local));
                continue;
            }
            let wake = earliest(wait.timeout_at, next);
            if wake != deadline || acked != was {
                self.block(id, wait_block(wake, acked, wait.local));
                if let Some(w) = self.clients.get_mut(&id).and_then(|c| c.waker.take()) {
                    w.wake();
                }
            }
        }
    }

    /// The node's replication offset (`master_repl_offset`).
    pub(crate) fn repl_offset(&self) -> i64 {
        self.replication.offset
    }

    /// A cluster's failover of the replica at `at` (now or a moment ago): it applies the batches
    /// that had reached it by then, and is promoted with them (see [`Engine::promote`]).
    pub(crate) fn promote_at(&mut self, at: i64) -> bool {
        if self.replication.upstream.is_some() {
            self.receive(at);
        }
        self.promote()
    }

    /// `REPLICAOF NO ONE` on a replica: it becomes a primary with what it has applied; what is
    /// still on the way is lost, and its old primary drops it. False if it was a primary already.
    pub(crate) fn promote(&mut self) -> bool {
        if self.promote_from_elsewhere() {
            return true;
        }
        let Some(up) = self.replication.upstream.take() else {
            return false;
        };
        {
            let mut s = stream(&up.stream);
            s.cut = true;
            s.batches.clear();
        }
        for db in &mut self.dbs {
            db.keep_expired(false);
        }
        self.run_lock_scripts_on_lua(up.scripts_on_lua);
        let r = &mut self.replication;
        let old = r.replid.take().map(|(id, _)| id).unwrap_or_default();
        let new = replid(self.config.seed, r.offset as u64 ^ 0x9e37);
        r.replid = Some((new, old));
        r.second_offset = Some(r.offset + 1);
        true
    }

    /// `DEBUG CHANGE-REPL-ID` (Redis's `changeReplicationId` and `clearReplicationId2`): a new
    /// replication id, drawn from the seed, and no second one. A node that never replicated
    /// shows no id, and keeps showing none.
    pub(crate) fn change_replication_id(&mut self) {
        let r = &mut self.replication;
        if let Some((id, _)) = &r.replid {
            let salt = u64::from_str_radix(&id[..16], 16).unwrap_or(0) ^ 0xdeb6;
            r.replid = Some((replid(self.config.seed, salt), "0".repeat(40)));
            r.second_offset = None;
        }
    }

    /// How many replicas follow this node (`INFO`'s `connected_slaves`, `FAILOVER`'s check).
    pub(crate) fn connected_replicas(&self) -> usize {
        self.live_links().count()
    }

    /// The node's replication id and offset, as `PSYNC`'s `+FULLRESYNC` line names them: the id
    /// `INFO replication` prints (zeros on a node that never replicated).
    pub(crate) fn replication_id_and_offset(&self) -> (String, i64) {
        let r = &self.replication;
        let id = r
            .replid
            .as_ref()
            .map_or_else(|| "0".repeat(40), |(id, _)| id.clone());
        (id, r.offset)
    }

    /// The port of the primary a replica follows; None on a primary.
    pub(crate) fn followed_primary_port(&self) -> Option<i64> {
        let up = self.replication.upstream.as_ref()?;
        Some(i64::from(up.primary_port))
    }

    /// The address the node announces (`ROLE`, `INFO replication`, a Sentinel's replies).
    pub(crate) fn announced_host(&self) -> &str {
        self.replication.host.as_deref().unwrap_or(LOOPBACK)
    }

    /// The port the node announces (`ROLE`, `INFO replication`, a Sentinel's replies).
    pub(crate) fn announced_port(&self) -> u16 {
        self.replication.port
    }

    /// As a primary: each live replica's port, index and lag.
    pub(crate) fn replica_links(&self) -> Vec<(u16, u16, ReplicaLag)> {
        (self.live_links())
            .map(|(l, _)| (l.port, l.index, l.lag))
            .collect()
    }

    /// `ROLE`'s reply.
    pub(crate) fn role_reply(&self) -> Frame {
        let r = &self.replication;
        let bulk = |s: String| Frame::Bulk(Bytes::from(s));
        if let Some(role) = self.elsewhere_role() {
            return role;
        }
        let host = Frame::Bulk(Bytes::copy_from_slice(self.announced_host().as_bytes()));
        if let Some(up) = &r.upstream {
            return Frame::Array(vec![
                Frame::Bulk(Bytes::from_static(b"slave")),
                host,
                Frame::Integer(i64::from(up.primary_port)),
                Frame::Bulk(Bytes::from_static(b"connected")),
                Frame::Integer(r.offset),
            ]);
        }
        let now = self.now();
        let replicas = self.live_links().map(|(link, s)| {
            Frame::Array(vec![
                host.clone(),
                bulk(link.port.to_string()),
                bulk(s.acked(now).to_string()),
            ])
        });
        Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"master")),
            Frame::Integer(r.offset),
            Frame::Array(replicas.collect()),
        ])
    }

    /// The links whose replica was not promoted away, each with its stream locked.
    fn live_links(&self) -> impl Iterator<Item = (&Link, MutexGuard<'_, Stream>)> {
        let links = self.replication.replicas.iter();
        links
            .map(|l| (l, stream(&l.stream)))
            .filter(|(_, s)| !s.cut)
    }

    /// `INFO`'s `# Replication` section, as Redis 7.0 prints it, or as Valkey 9.1 does
    /// (`valkey`): its default backlog of 10 MB, `replicas_waiting_psync`, a replica's
    /// replication-buffer figures, and each replica's `type`.
    pub(crate) fn replication_info(&self, valkey: bool) -> String {
        let r = &self.replication;
        let zeros = "0".repeat(40);
        let backlog = match valkey {
            true => 10_485_760,
            false => 1_048_576,
        };
        let waiting = match valkey {
            true => "replicas_waiting_psync:0\r\n",
            false => "",
        };
        let Some((replid, replid2)) = &r.replid else {
            // A node that never replicated: Redis's section before any replica.
            let mut s = String::from("# Replication\r\n");
            if !self.elsewhere_info(&mut s) {
                s.push_str("role:master\r\n");
            }
            let _ = write!(
                s,
                "connected_slaves:0\r\n{waiting}\
                 master_failover_state:no-failover\r\nmaster_replid:{zeros}\r\n\
                 master_replid2:{zeros}\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\n\
                 repl_backlog_active:0\r\nrepl_backlog_size:{backlog}\r\n\
                 repl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n"
            );
            return s;
        };
        let now = self.now();
        let host = self.announced_host();
        let mut s = String::from("# Replication\r\n");
        let first_byte = match &r.upstream {
            Some(up) => {
                let buffers = match valkey {
                    true => "replicas_repl_buffer_size:0\r\nreplicas_repl_buffer_peak:0\r\n",
                    false => "",
                };
                let _ = write!(
                    s,
                    "role:slave\r\nmaster_host:{host}\r\nmaster_port:{}\r\n\
                     master_link_status:up\r\nmaster_last_io_seconds_ago:{}\r\n\
                     master_sync_in_progress:0\r\nslave_read_repl_offset:{off}\r\n\
                     slave_repl_offset:{off}\r\n{buffers}slave_priority:100\r\n\
                     slave_read_only:1\r\nreplica_announced:1\r\nconnected_slaves:0\r\n",
                    up.primary_port,
                    (now - up.last_io).max(0) / 1000,
                    off = r.offset,
                );
                up.synced_at + 1
            }
            None => {
                let links: Vec<(u16, i64, Option<i64>)> = self
                    .live_links()
                    .map(|(l, st)| (l.port, st.acked(now), st.stalled_since(now)))
                    .collect();
                if !self.elsewhere_info(&mut s) {
                    s.push_str("role:master\r\n");
                }
                let _ = write!(s, "connected_slaves:{}\r\n", links.len());
                let kind = match valkey {
                    true => ",type=replica",
                    false => "",
                };
                for (i, (port, acked, stalled)) in links.into_iter().enumerate() {
                    let lag = stalled.map_or(0, |from| (now - from).max(0) / 1000);
                    let _ = write!(
                        s,
                        "slave{i}:ip={host},port={port},state=online,offset={acked},lag={lag}{kind}\r\n"
                    );
                }
                1
            }
        };
        let second = r.second_offset.unwrap_or(-1);
        let histlen = (r.offset - first_byte + 1).max(0);
        let _ = write!(
            s,
            "{waiting}master_failover_state:no-failover\r\nmaster_replid:{replid}\r\n\
             master_replid2:{replid2}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{second}\r\n\
             repl_backlog_active:1\r\nrepl_backlog_size:{backlog}\r\n\
             repl_backlog_first_byte_offset:{first_byte}\r\nrepl_backlog_histlen:{histlen}\r\n",
            r.offset,
        );
        s
    }
}

/// A `WAIT`'s block: no keys, woken at `deadline`.
fn wait_block(deadline: Option<i64>, acked: i64, local: Option<i64>) -> Blocked {
    Blocked {
        db: 0,
        keys: Vec::new(),
        deadline,
        waiter: Waiter::Replicas { acked, local },
    }
}

/// The earlier of two optional times (None is never).
fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
