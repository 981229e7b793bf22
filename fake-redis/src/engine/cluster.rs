//! Redis Cluster: shards of a primary and its replicas, 16,384 hash slots, and the faults that
//! move a slot or fail a shard over.
//!
//! A lock's cluster races (a `MOVED` in the middle of a renewal, a shard's failover that promotes
//! a replica which never saw the acquire, an unlock published on the old primary) replay here from
//! a seed. A [`Cluster`] is a [`Topology`] per shard, every engine on one clock, every seed drawn
//! from one; the shards share a `Shared` map (which shard owns each slot, which node is whose
//! replica, the migrations and failovers in progress, each node's pub/sub inbox) under a lock of
//! its own, which a node takes only while it holds no other node's lock. No node ever takes
//! another's engine lock: what crosses nodes (migrated keys, published messages) waits in the map
//! until the receiving node's next command or [`Engine::catch_up`] takes it.
//!
//! **Time decides, not delivery order.** A scheduled failover or migration is a pure function of
//! the clock: the map applies a failover's new owners when any node first looks at it at or after
//! its time, and the promoted replica applies exactly the write batches that had reached it by
//! then (its replica lag, `engine/replication.rs`); the shard's other replicas follow it from
//! their next command, each with a full sync it left them in the map. A migration moves the slot's keys one by one
//! at times spread evenly over its window; the source hands each key to the map as its time
//! passes (at the source's own next command, which is when a client could see it missing, and so
//! answer `ASK`), the target takes it before its next command, and the slot changes owner (`MOVED`
//! from then on) once the source has handed over every key at or after the window's end.
//!
//! Node layout follows `redis-cli --cluster create`: the primaries on the first ports, shard by
//! shard, then the first replica of every shard, then the second; slots split as it splits them.
//! Over TCP, the TCP server's `ServerGroup::clustered` (`fake-redis-server
//! --cluster <shards> --replicas <n>`) serves each node on the port it announces, and the nodes
//! announce the address it listens on ([`Cluster::set_announce_ip`]; loopback in-process).

use crate::engine::Engine;
use crate::engine::db::Entry;
use crate::engine::replication::{FullSync, ReplicaLag, ServerNode, Topology};
use crate::engine::{Client, EngineConfig};
use crate::fault::{Fault, FaultEventKind};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

/// How many hash slots a cluster has.
pub const SLOTS: u16 = 16384;

/// The seed's stream for node ids and the shards' engine seeds.
const CLUSTER_STREAM: u64 = 0x0063_6c75_7374_6572; // "cluster"

/// A slot no shard serves.
const UNASSIGNED: u16 = u16::MAX;

/// The hash slot of `key`, as Redis's `keyHashSlot`: CRC16 (XMODEM) of the key, or of its hash
/// tag (what lies between the first `{` and the next `}`, if that is not empty), modulo 16,384.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) & (SLOTS - 1)
}

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), Redis's `crc16`.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)]
    })
}

const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The slot ranges `redis-cli --cluster create` gives `primaries` primaries: `16384 / n` each as a
/// C `float`, each range's end rounded, the last one to 16,383.
pub fn create_slot_ranges(primaries: u16) -> Vec<(u16, u16)> {
    let n = primaries.max(1);
    let per_node = f32::from(SLOTS) / f32::from(n);
    let mut ranges = Vec::with_capacity(usize::from(n));
    let (mut first, mut cursor) = (0i64, 0f32);
    for i in 0..n {
        let mut last = (f64::from(cursor + per_node - 1.0)).round() as i64;
        if last > i64::from(SLOTS) || i == n - 1 {
            last = i64::from(SLOTS) - 1;
        }
        last = last.max(first);
        ranges.push((first as u16, last as u16));
        first = last + 1;
        cursor += per_node;
    }
    ranges
}

/// A node's part in the cluster, as the map sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Serves its shard's slots.
    Primary,
    /// Follows its shard's primary.
    Replica,
    /// A primary that was failed over: it serves nothing (`fail` in `CLUSTER NODES`).
    Failed,
}

/// One node of the map.
#[derive(Clone, Debug)]
pub(crate) struct NodeInfo {
    /// Its 40-hex-digit id, drawn from the seed.
    pub id: String,
    pub port: u16,
    pub shard: u16,
    pub role: Role,
    /// Its config epoch (a replica shows its primary's).
    pub epoch: u64,
    /// When it was promoted by a failover.
    promoted_at: Option<i64>,
}

/// A slot on its way from one shard to another (see the [module docs](self)).
#[derive(Clone, Debug)]
pub(crate) struct Migration {
    pub slot: u16,
    pub from_shard: u16,
    pub to_shard: u16,
    start: i64,
    end: i64,
    /// The slot's keys on the source when it started, each with the time it moves; planned by
    /// the source at its first command in the window.
    moves: Option<Vec<(i64, Bytes)>>,
    /// Keys the source handed over that the target has not taken yet.
    transit: Vec<(Bytes, Entry)>,
    /// The source handed over everything: the target owns the slot.
    pub done: bool,
}

impl Migration {
    /// Whether the slot is MIGRATING/IMPORTING at `now`.
    pub fn open(&self, now: i64) -> bool {
        self.start <= now && !self.done
    }
}

/// A scheduled failover of a shard.
#[derive(Clone, Copy, Debug)]
struct Failover {
    at: i64,
    shard: u16,
    replica: u16,
    applied: bool,
}

/// A message one node sends another's subscribers.
#[derive(Clone, Debug)]
enum BusMessage {
    /// `PUBLISH`, broadcast to every node.
    Publish(Bytes, Bytes),
    /// `SPUBLISH`, to the other nodes of the shard.
    ShardPublish(Bytes, Bytes),
}

/// What a node's subscribers are sent by the others, until the node takes it.
#[derive(Default)]
struct Inbox {
    pending: AtomicBool,
    messages: Mutex<Vec<BusMessage>>,
    /// The drivers waiting for a frame of this node's clients, woken when a message lands.
    wakers: Mutex<BTreeMap<u64, Waker>>,
}

/// The cluster's map, shared by its nodes (see the [module docs](self)).
pub(crate) struct Shared {
    state: Mutex<ClusterState>,
    /// Bumped on every change a node may have to act on.
    generation: AtomicU64,
    /// The earliest scheduled change not yet applied (`i64::MAX`: none).
    next_due: AtomicI64,
    inboxes: Vec<Inbox>,
    /// Each node's replication offset, as it last published it (`CLUSTER SHARDS`).
    offsets: Vec<AtomicI64>,
    /// The full syncs a promoted primary made for its shard's other replicas, by node, each
    /// waiting for its replica's next command or `catch_up` to take it.
    syncs: Mutex<BTreeMap<usize, FullSync>>,
}

/// What the map holds under its lock.
#[derive(Clone)]
pub(crate) struct ClusterState {
    pub nodes: Vec<NodeInfo>,
    /// The shard that owns each slot.
    slots: Vec<u16>,
    pub current_epoch: u64,
    pub migrations: Vec<Migration>,
    failovers: Vec<Failover>,
    /// The address every node announces (`CLUSTER SLOTS`, `NODES`, `SHARDS`, `MOVED`, `ASK`):
    /// loopback in-process, the address the TCP door listens on
    /// ([`Cluster::set_announce_ip`]).
    pub ip: Arc<str>,
    /// How many shards it was created with (the node layout's modulus).
    shards: u16,
    /// The lag of every replica, which a replica keeps when it follows a promoted primary.
    lag: ReplicaLag,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// The map, with every scheduled failover due by `now` applied.
    pub fn state(&self, now: i64) -> MutexGuard<'_, ClusterState> {
        let mut state = lock(&self.state);
        if now >= self.next_due.load(Ordering::Acquire) {
            if state.apply_failovers(now) {
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
            self.next_due.store(state.next_due(), Ordering::Release);
        }
        state
    }

    /// Schedules a cluster fault (a [`Fault::SlotMigration`] or a [`Fault::ShardFailover`]; any
    /// other is not the map's and is ignored), whichever node or driver names it.
    pub fn schedule(&self, fault: Fault) {
        let mut state = lock(&self.state);
        match fault {
            Fault::SlotMigration {
                slot,
                to_shard,
                from,
                until,
            } => {
                let Some(from_shard) = state.owner(slot % SLOTS) else {
                    return;
                };
                let shards = state.nodes.iter().map(|n| n.shard + 1).max().unwrap_or(0);
                if from_shard == to_shard || to_shard >= shards {
                    return;
                }
                state.migrations.push(Migration {
                    slot: slot % SLOTS,
                    from_shard,
                    to_shard,
                    start: from,
                    end: until.max(from),
                    moves: None,
                    transit: Vec::new(),
                    done: false,
                });
            }
            Fault::ShardFailover { shard, replica, at } => {
                state.failovers.push(Failover {
                    at,
                    shard,
                    replica,
                    applied: false,
                });
                state.failovers.sort_by_key(|f| f.at);
            }
            _ => return,
        }
        self.changed(&state);
    }

    fn changed(&self, state: &ClusterState) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.next_due.store(state.next_due(), Ordering::Release);
    }

    fn send(&self, to: usize, message: BusMessage) {
        let inbox = &self.inboxes[to];
        lock(&inbox.messages).push(message);
        inbox.pending.store(true, Ordering::Release);
        let wakers = std::mem::take(&mut *lock(&inbox.wakers));
        for (_, w) in wakers {
            w.wake();
        }
    }
}

impl ClusterState {
    /// The primary of `shard`.
    pub fn primary_of(&self, shard: u16) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.shard == shard && n.role == Role::Primary)
    }

    /// The replicas of `shard`, in the order they attached.
    pub fn replicas_of(&self, shard: u16) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len())
            .filter(move |&i| self.nodes[i].shard == shard && self.nodes[i].role == Role::Replica)
    }

    /// The shard that owns `slot`, if one does.
    pub fn owner(&self, slot: u16) -> Option<u16> {
        let s = self.slots[usize::from(slot)];
        (s != UNASSIGNED).then_some(s)
    }

    /// The node serving `slot`: its shard's primary.
    pub fn serving(&self, slot: u16) -> Option<usize> {
        self.owner(slot).and_then(|s| self.primary_of(s))
    }

    /// The node the map gives `slot` to: its shard's primary, or the failed primary of a shard
    /// left without one (the cluster is down then).
    pub fn owner_node(&self, slot: u16) -> Option<usize> {
        let shard = self.owner(slot)?;
        self.primary_of(shard).or_else(|| self.failed_owner(shard))
    }

    /// The failed primary of `shard` that still holds its slots: the last one to fail.
    fn failed_owner(&self, shard: u16) -> Option<usize> {
        (0..self.nodes.len())
            .rev()
            .find(|&i| self.nodes[i].shard == shard && self.nodes[i].role == Role::Failed)
    }

    /// Whether every slot is served (`cluster_state:ok`): no shard that owns slots is left
    /// without a primary.
    pub fn is_ok(&self) -> bool {
        let shards = self.nodes.iter().map(|n| n.shard + 1).max().unwrap_or(0);
        let headless: Vec<u16> = (0..shards)
            .filter(|&s| self.primary_of(s).is_none())
            .collect();
        // Asked by every routed command: the usual answer, every shard with a primary, needs
        // no look at the 16,384 slots.
        headless.is_empty() || !self.slots.iter().any(|s| headless.contains(s))
    }

    /// The slot ranges each shard owns, in slot order: `(first, last, shard)`.
    pub fn ranges(&self) -> Vec<(u16, u16, u16)> {
        let mut ranges: Vec<(u16, u16, u16)> = Vec::new();
        for (slot, &shard) in self.slots.iter().enumerate() {
            let slot = slot as u16;
            match ranges.last_mut() {
                Some(r) if r.2 == shard && r.1 + 1 == slot => r.1 = slot,
                _ => ranges.push((slot, slot, shard)),
            }
        }
        ranges.retain(|r| r.2 != UNASSIGNED);
        ranges
    }

    /// The open migration of `slot` at `now`, if any.
    pub fn migration(&self, slot: u16, now: i64) -> Option<&Migration> {
        self.migrations
            .iter()
            .find(|m| m.slot == slot && m.open(now))
    }

    fn next_due(&self) -> i64 {
        let failovers = self.failovers.iter().filter(|f| !f.applied).map(|f| f.at);
        let migrations = self.migrations.iter().filter(|m| !m.done).map(|m| {
            let next_move = m.moves.as_ref().and_then(|v| v.first()).map(|&(t, _)| t);
            next_move.unwrap_or(m.start).min(m.end)
        });
        failovers.chain(migrations).min().unwrap_or(i64::MAX)
    }

    /// Applies the failovers due by `now` to the map; whether one was.
    fn apply_failovers(&mut self, now: i64) -> bool {
        let mut any = false;
        for i in 0..self.failovers.len() {
            let f = self.failovers[i];
            if f.applied || f.at > now {
                continue;
            }
            self.failovers[i].applied = true;
            let replica = self.replicas_of(f.shard).nth(usize::from(f.replica));
            let Some(old) = self.primary_of(f.shard) else {
                continue;
            };
            self.nodes[old].role = Role::Failed;
            any = true;
            // No such replica: the shard is left without a primary, and the cluster is down.
            let Some(new) = replica else {
                continue;
            };
            self.current_epoch += 1;
            self.nodes[new].role = Role::Primary;
            self.nodes[new].promoted_at = Some(f.at);
            let epoch = self.current_epoch;
            for n in &mut self.nodes {
                if n.shard == f.shard && n.role != Role::Failed {
                    n.epoch = epoch;
                }
            }
        }
        any
    }
}

/// A node's membership of its cluster, kept by its engine.
pub(crate) struct Member {
    pub shared: Arc<Shared>,
    /// The node's index in the map.
    pub me: usize,
    /// The map's generation the node last acted on.
    seen: u64,
    /// The node's shard, fixed at creation (read without the map's lock).
    pub shard: u16,
}

/// A Redis Cluster of engines: `shards` primaries, each with its replicas, on one clock and one
/// seed (see the [module docs](self)). A front door addresses a node by taking its engine:
/// `FakeConnection::new(cluster.node(ServerNode::shard_primary(1)).clone(), NodeId(1))`.
pub struct Cluster {
    shards: Vec<Topology>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// A cluster of `shards` primaries with `replicas` replicas each, lagging by `lag`, its nodes
    /// on `clock` and their seeds drawn from `config.seed`; the nodes announce consecutive ports
    /// from `base_port`, primaries first, as `redis-cli --cluster create` lays them out.
    pub fn new(
        clock: impl crate::clock::Clock,
        config: EngineConfig,
        shards: u16,
        replicas: u16,
        lag: ReplicaLag,
        base_port: u16,
    ) -> Cluster {
        let shards = shards.max(1);
        let clock: Arc<dyn crate::clock::Clock> = Arc::new(clock);
        let seed = config.seed;
        let draw = |a: u64, b: u64| crate::seed::Seed(seed).draw(CLUSTER_STREAM, a, b);
        let ranges = create_slot_ranges(shards);
        let total = usize::from(shards) * (1 + usize::from(replicas));
        let mut nodes = Vec::with_capacity(total);
        // Redis-cli gives each node its own config epoch, 1 to n, in its list's order; a replica
        // shows its primary's.
        for index in 0..total {
            let (shard, replica) = layout(index, shards);
            let id = node_id(&draw, index as u64);
            nodes.push(NodeInfo {
                id,
                port: base_port.wrapping_add(index as u16),
                shard,
                role: if replica.is_none() {
                    Role::Primary
                } else {
                    Role::Replica
                },
                epoch: u64::from(shard) + 1,
                promoted_at: None,
            });
        }
        let mut slots = vec![UNASSIGNED; usize::from(SLOTS)];
        for (shard, &(first, last)) in ranges.iter().enumerate() {
            for s in &mut slots[usize::from(first)..=usize::from(last)] {
                *s = shard as u16;
            }
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(ClusterState {
                nodes,
                slots,
                current_epoch: total as u64,
                migrations: Vec::new(),
                failovers: Vec::new(),
                ip: Arc::from("127.0.0.1"),
                shards,
                lag,
            }),
            generation: AtomicU64::new(0),
            next_due: AtomicI64::new(i64::MAX),
            inboxes: (0..total).map(|_| Inbox::default()).collect(),
            offsets: (0..total).map(|_| AtomicI64::new(0)).collect(),
            syncs: Mutex::new(BTreeMap::new()),
        });
        let mut topologies = Vec::with_capacity(usize::from(shards));
        for shard in 0..shards {
            let config = EngineConfig {
                seed: draw(u64::from(shard), u64::MAX),
                ..config.clone()
            };
            let primary = Engine::with_config(clock.clone(), config);
            let mut topology = Topology::new(primary);
            topology.set_shard(shard);
            for _ in 0..replicas {
                topology.add_replica(lag);
            }
            let mut ports = Vec::new();
            for (node, engine) in topology.nodes() {
                let index = position(shard, node.replica_index(), shards);
                ports.push(base_port.wrapping_add(index as u16));
                let mut e = engine.lock().unwrap_or_else(|e| e.into_inner());
                e.keep_births();
                e.cluster = Some(Box::new(Member {
                    shared: shared.clone(),
                    me: index,
                    seen: 0,
                    shard,
                }));
            }
            topology.set_ports(&ports);
            topologies.push(topology);
        }
        Cluster {
            shards: topologies,
            shared,
        }
    }

    /// How many shards it has.
    pub fn shard_count(&self) -> u16 {
        self.shards.len() as u16
    }

    /// The engine of `node` (`ServerNode::shard_primary`, `ServerNode::shard_replica`), if the
    /// cluster has it. Its role may have changed since: after a failover the replica serves.
    pub fn get(&self, node: ServerNode) -> Option<&Arc<Mutex<Engine>>> {
        self.shards.get(usize::from(node.shard()))?.get(node)
    }

    /// The engine of `node`. Panics if the cluster has no such node.
    pub fn node(&self, node: ServerNode) -> &Arc<Mutex<Engine>> {
        self.get(node)
            .unwrap_or_else(|| panic!("the cluster has no {node}"))
    }

    /// Every node with its engine, in port order (the primaries first).
    pub fn nodes(&self) -> Vec<(ServerNode, &Arc<Mutex<Engine>>)> {
        let mut all: Vec<(usize, ServerNode, &Arc<Mutex<Engine>>)> = Vec::new();
        let shards = self.shard_count();
        for (s, topology) in self.shards.iter().enumerate() {
            for (node, engine) in topology.nodes() {
                let node = ServerNode::in_shard(s as u16, node.replica_index());
                all.push((
                    position(s as u16, node.replica_index(), shards),
                    node,
                    engine,
                ));
            }
        }
        all.sort_by_key(|&(i, _, _)| i);
        all.into_iter().map(|(_, n, e)| (n, e)).collect()
    }

    /// The port `node` announces.
    pub fn port_of(&self, node: ServerNode) -> Option<u16> {
        let index = position(node.shard(), node.replica_index(), self.shard_count());
        let state = lock(&self.shared.state);
        state.nodes.get(index).map(|n| n.port)
    }

    /// Makes every node announce `ip` (`CLUSTER SLOTS`, `NODES`, `SHARDS`, `MOVED`, `ASK`,
    /// `ROLE`, `INFO replication`) instead of loopback: the address the TCP door listens on. An
    /// unspecified address (`0.0.0.0`, `::`) announces its family's loopback, where a client on
    /// this machine reaches every node.
    pub fn set_announce_ip(&self, ip: std::net::IpAddr) {
        for topology in &self.shards {
            topology.set_announce_ip(ip);
        }
        let ip = crate::engine::replication::announced_ip(ip);
        let mut state = lock(&self.shared.state);
        state.ip = Arc::from(ip.to_string());
        self.shared.changed(&state);
    }

    /// The node serving `slot` now, after the failovers and migrations applied so far.
    pub fn serving(&self, slot: u16) -> Option<ServerNode> {
        let shards = self.shard_count();
        let state = lock(&self.shared.state);
        let index = state.serving(slot)?;
        let (shard, replica) = layout(index, shards);
        Some(ServerNode::in_shard(shard, replica))
    }

    /// The live value and deadline of `key` at `now` while a migration carries it: handed over
    /// by its source and not yet taken by its target, so on no node. For a reader that must see
    /// every key wherever it is (a simulator's observer); a client never sees it there.
    pub fn in_transit(&self, key: &[u8], now: i64) -> Option<(crate::Value, Option<i64>)> {
        let state = lock(&self.shared.state);
        state
            .migrations
            .iter()
            .flat_map(|m| &m.transit)
            .find(|(k, e)| &k[..] == key && !e.expired(now))
            .map(|(_, e)| (e.value.clone(), e.deadline()))
    }

    /// Schedules a cluster fault: a [`Fault::SlotMigration`] or a [`Fault::ShardFailover`] (the
    /// cluster's own), or any other fault, which goes to every node's engine.
    pub fn add_fault(&self, fault: Fault) {
        match fault {
            Fault::SlotMigration { .. } | Fault::ShardFailover { .. } => {
                self.shared.schedule(fault);
            }
            other => {
                for (_, engine) in self.nodes() {
                    engine
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .add_fault(other);
                }
            }
        }
    }

    /// Brings every node up to the clock, one at a time (see [`Engine::catch_up`]): due
    /// failovers promote, due key moves of a migration happen, messages reach subscribers.
    pub fn catch_up(&self) {
        // Twice: a migration's target takes what its source handed over in the first pass.
        for _ in 0..2 {
            for (_, engine) in self.nodes() {
                engine.lock().unwrap_or_else(|e| e.into_inner()).catch_up();
            }
        }
    }
}

/// The `(shard, replica)` of the node at port position `index`.
fn layout(index: usize, shards: u16) -> (u16, Option<u16>) {
    let n = usize::from(shards);
    if index < n {
        (index as u16, None)
    } else {
        let r = index - n;
        ((r % n) as u16, Some((r / n) as u16))
    }
}

/// The port position of a shard's node (the inverse of [`layout`]).
fn position(shard: u16, replica: Option<u16>, shards: u16) -> usize {
    let n = usize::from(shards);
    match replica {
        None => usize::from(shard),
        Some(r) => n + usize::from(r) * n + usize::from(shard),
    }
}

/// A node id: 40 hex digits drawn from the seed (Redis draws them at random).
fn node_id(draw: &impl Fn(u64, u64) -> u64, index: u64) -> String {
    let mut id = String::with_capacity(48);
    for i in 0..3 {
        let _ = write!(id, "{:016x}", draw(index | 1 << 32, i));
    }
    id.truncate(40);
    id
}

impl Engine {
    /// Whether the node runs in cluster mode (`cluster-enabled yes`).
    #[inline]
    pub fn is_cluster_node(&self) -> bool {
        self.cluster.is_some()
    }

    /// The node's cluster membership.
    pub(crate) fn cluster_member(&self) -> Option<&Member> {
        self.cluster.as_deref()
    }

    /// Whether the cluster has something for this node to do at `now`: a change of the map it
    /// has not acted on, a scheduled change due, or messages for its subscribers.
    #[inline]
    pub(crate) fn cluster_due(&self, now: i64) -> bool {
        self.cluster.as_ref().is_some_and(|m| {
            m.shared.generation.load(Ordering::Acquire) != m.seen
                || now >= m.shared.next_due.load(Ordering::Acquire)
                || m.shared.inboxes[m.me].pending.load(Ordering::Acquire)
        })
    }

    /// The cluster part of the engine's tick (see the [module docs](self)).
    #[cold]
    pub(crate) fn cluster_tick(&mut self, now: i64) {
        let Some(member) = self.cluster.as_ref() else {
            return;
        };
        let (shared, me) = (member.shared.clone(), member.me);
        self.take_bus(now);
        let mut state = shared.state(now);
        let generation = shared.generation.load(Ordering::Acquire);
        let mine = state.nodes[me].clone();
        let mut changed = false;
        // First, so that a replica promoted by a second failover before it took its sync from
        // the first one's primary is promoted with what that primary sent it.
        if let Some(sync) = lock(&shared.syncs).remove(&me) {
            self.follow(sync);
        }
        if mine.role == Role::Primary && self.replication.is_replica() {
            let at = mine.promoted_at.unwrap_or(now);
            self.promote_at(at);
            self.record_server_fault(None, FaultEventKind::ShardFailedOver(mine.shard));
            // The shard's other replicas follow the promoted primary, as Redis's do once the
            // failover's new epoch reaches them: a full sync each, taken at its next command.
            let followers: Vec<usize> = state.replicas_of(mine.shard).collect();
            let mut syncs = lock(&shared.syncs);
            for node in followers {
                let index = layout(node, state.shards).1.unwrap_or(0);
                let sync = self.sync_replica(index, state.lag, state.nodes[node].port);
                syncs.insert(node, sync);
                changed = true;
            }
        }
        for i in 0..state.migrations.len() {
            let (from, to) = (state.migrations[i].from_shard, state.migrations[i].to_shard);
            if state.migrations[i].start > now {
                continue;
            }
            if state.primary_of(to) == Some(me) && !state.migrations[i].transit.is_empty() {
                let keys = std::mem::take(&mut state.migrations[i].transit);
                let db = self.db_mut(0);
                for (key, entry) in keys {
                    db.apply_replicated(&key, Some(entry), now);
                }
            }
            if state.primary_of(from) == Some(me) && !state.migrations[i].done {
                changed |= self.export_keys(&mut state.migrations[i], now);
                if state.migrations[i].done {
                    let m = &state.migrations[i];
                    let (slot, to) = (m.slot, m.to_shard);
                    state.slots[usize::from(slot)] = to;
                    state.current_epoch += 1;
                    let epoch = state.current_epoch;
                    for n in &mut state.nodes {
                        if n.shard == to {
                            n.epoch = epoch;
                        }
                    }
                    let note = FaultEventKind::SlotMigrated { slot, to_shard: to };
                    self.record_server_fault(None, note);
                }
            }
        }
        state
            .migrations
            .retain(|m| !(m.done && m.transit.is_empty()));
        if changed {
            shared.changed(&state);
        }
        drop(state);
        if let Some(m) = self.cluster.as_mut() {
            m.seen = if changed {
                shared.generation.load(Ordering::Acquire)
            } else {
                generation
            };
        }
        self.collect_dirty();
        self.propagate(None, now);
    }

    /// The source's part of a migration at `now`: plans the moves at its first look, hands over
    /// the keys whose time has come (all of them once the window ends). Whether it handed any.
    fn export_keys(&mut self, m: &mut Migration, now: i64) -> bool {
        let moves = m.moves.get_or_insert_with(|| {
            let keys: Vec<Bytes> = self.dbs[0]
                .live_entries(now)
                .into_iter()
                .map(|(k, _)| k)
                .filter(|k| key_slot(k) == m.slot)
                .collect();
            let n = keys.len() as i64;
            let span = m.end - m.start;
            keys.into_iter()
                .enumerate()
                .map(|(i, k)| (m.start + span * (i as i64 + 1) / (n + 1), k))
                .collect()
        });
        let due: Vec<Bytes> = if now >= m.end {
            let mut rest: Vec<Bytes> = std::mem::take(moves).into_iter().map(|(_, k)| k).collect();
            // Keys of the slot written meanwhile (through ASKING on the source? never: they
            // went to the target) and keys planned: every key of the slot goes.
            for (k, _) in self.dbs[0].live_entries(now) {
                if key_slot(&k) == m.slot && !rest.contains(&k) {
                    rest.push(k);
                }
            }
            m.done = true;
            rest
        } else {
            let split = moves.partition_point(|&(t, _)| t <= now);
            moves.drain(..split).map(|(_, k)| k).collect()
        };
        let handed = !due.is_empty() || m.done;
        for key in due {
            let db = self.db_mut(0);
            if let Some(entry) = db.peek(&key, now).cloned() {
                db.remove(&key, now);
                db.touch(&key);
                m.transit.push((key, entry));
            }
        }
        handed
    }

    /// Publishes this node's replication offset for the others' `CLUSTER SHARDS`.
    pub(crate) fn publish_cluster_offset(&self) {
        if let Some(m) = &self.cluster {
            m.shared.offsets[m.me].store(self.repl_offset(), Ordering::Relaxed);
        }
    }

    /// Sends `PUBLISH` to every other node's subscribers.
    pub(crate) fn broadcast_publish(&self, channel: &[u8], message: &[u8]) {
        let Some(m) = &self.cluster else { return };
        for to in 0..m.shared.inboxes.len() {
            if to != m.me {
                let msg = BusMessage::Publish(
                    Bytes::copy_from_slice(channel),
                    Bytes::copy_from_slice(message),
                );
                m.shared.send(to, msg);
            }
        }
    }

    /// Sends `SPUBLISH` to the subscribers of the other nodes of this node's shard.
    pub(crate) fn shard_publish(&self, channel: &[u8], message: &[u8]) {
        let Some(m) = &self.cluster else { return };
        let targets: Vec<usize> = {
            let state = lock(&m.shared.state);
            (0..state.nodes.len())
                .filter(|&i| i != m.me && state.nodes[i].shard == m.shard)
                .collect()
        };
        for to in targets {
            let msg = BusMessage::ShardPublish(
                Bytes::copy_from_slice(channel),
                Bytes::copy_from_slice(message),
            );
            m.shared.send(to, msg);
        }
    }

    /// Delivers the messages other nodes sent this node's subscribers.
    pub(crate) fn take_bus(&mut self, now: i64) {
        let Some(m) = &self.cluster else { return };
        let inbox = &m.shared.inboxes[m.me];
        if !inbox.pending.swap(false, Ordering::AcqRel) {
            return;
        }
        let messages = std::mem::take(&mut *lock(&inbox.messages));
        for message in messages {
            match message {
                BusMessage::Publish(channel, text) => {
                    self.publish(&channel, &text, now);
                }
                BusMessage::ShardPublish(channel, text) => {
                    self.spublish(&channel, &text, now);
                }
            }
        }
    }

    /// Asks to be woken when another node sends this node's subscribers a message.
    pub(crate) fn register_bus_waker(&self, client: u64, waker: &Waker) {
        if let Some(m) = &self.cluster {
            let inbox = &m.shared.inboxes[m.me];
            lock(&inbox.wakers).insert(client, waker.clone());
        }
    }

    /// Forgets a closed connection's bus waker.
    pub(crate) fn forget_bus_waker(&self, client: u64) {
        if let Some(m) = &self.cluster {
            let inbox = &m.shared.inboxes[m.me];
            lock(&inbox.wakers).remove(&client);
        }
    }

    /// The offset another node last published.
    pub(crate) fn cluster_offset_of(&self, index: usize) -> i64 {
        self.cluster
            .as_ref()
            .and_then(|m| m.shared.offsets.get(index))
            .map_or(0, |o| o.load(Ordering::Relaxed))
    }
}

/// A client's cluster flags: `READONLY`, a pending `ASKING`, and whether the running command
/// came under one.
impl Client {
    /// `READONLY` is on: a replica serves its reads.
    pub(crate) fn cluster_readonly(&self) -> bool {
        self.cluster_flags & READONLY_FLAG != 0
    }

    pub(crate) fn set_cluster_readonly(&mut self, on: bool) {
        self.set_flag(READONLY_FLAG, on);
    }

    /// Whether `ASKING` is pending.
    pub(crate) fn asking(&self) -> bool {
        self.cluster_flags & ASKING_FLAG != 0
    }

    pub(crate) fn set_asking(&mut self, on: bool) {
        self.set_flag(ASKING_FLAG, on);
    }

    /// Whether the running command came under `ASKING`: Redis clears the flag only after the
    /// command, so a script's calls route under it too.
    pub(crate) fn runs_asking(&self) -> bool {
        self.cluster_flags & RUNS_ASKING_FLAG != 0
    }

    pub(crate) fn set_runs_asking(&mut self, on: bool) {
        self.set_flag(RUNS_ASKING_FLAG, on);
    }

    fn set_flag(&mut self, flag: u8, on: bool) {
        if on {
            self.cluster_flags |= flag;
        } else {
            self.cluster_flags &= !flag;
        }
    }
}

const READONLY_FLAG: u8 = 1;
const ASKING_FLAG: u8 = 2;
const RUNS_ASKING_FLAG: u8 = 4;

/// `CLUSTERDOWN Hash slot not served`.
pub(crate) const DOWN_UNBOUND: Frame = Frame::error("CLUSTERDOWN Hash slot not served");
