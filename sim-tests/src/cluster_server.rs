//! fake-redis's Redis Cluster as the simulator's server: every shard a primary with its replicas,
//! all on the one clock and seed, and each client's cluster client modelled in between.
//!
//! A case with `shards=N` runs on a [`Cluster`] of `N` shards, each primary with the case's
//! replicas and lag. The clients do not talk to one node: each call goes where its client's slot
//! table says the call's first key lives (every key of one lock shares its hash tag, so one
//! call names one slot), as the `redis` crate's cluster client sends it, and what that client
//! does with the answer is done here:
//!
//! - `MOVED` teaches the client's table the slot's new node, and the call goes there;
//! - `ASK` sends `ASKING` and the call to the importing node, leaving the table as it was;
//! - `TRYAGAIN`, `CLUSTERDOWN`, and a redirection still met after a few hops, reach the lock as
//!   refused unrun (`BackendError::NotApplied`, as `lock_core::redis_backend::classify` says),
//!   for it to send again.
//!
//! A call under the replica check goes, as `ClusterBackend` sends it, as a pipeline of the script
//! and its `WAIT` to the node the table names; a redirection met there is not followed (the
//! pipeline's replies are not), the table learns from a `MOVED`, and the call is refused unrun.
//! The tables start as the cluster was created (`redis-cli --cluster create`'s split), one per
//! client, so each client meets a migration or a failover in its own time.
//!
//! A failover (`Fault::ShardFailover`, the case's `failover shard=S replica=R`) promotes the
//! shard's replica with what has reached it; the old primary fails, answers `MOVED` to the new
//! one from then on, and its blocked `WAIT`s end as its connections do. A migration
//! (`Fault::SlotMigration`, the case's `migrate`) moves a lock's slot to another shard, its keys
//! at times spread over its window. A partition of a node ([`SimServer::isolate`]) stalls
//! the stream between it and its shard's other nodes; which clients it is cut from is the
//! world's network's to judge ([`SimServer::route`] names the node a call leaves for).
//!
//! Subscriptions go to the node serving the channel's slot when they are made (a sharded
//! subscriber's choice); an unlock is published with `PUBLISH`, which a cluster relays to every
//! node, so a subscriber left on a slot's old node still hears it.

use crate::case::Case;
use crate::on_engine::{
    self, Nodes, PendingWait, closed, drain_messages, fair_queue, lock, lock_state, replica_lag,
    send, subscription,
};
use crate::server::{ConnId, EPOCH_MS, LockState, SimServer, Synced};
use bytes::Bytes;
use fake_redis::{
    ClientId, Cluster, Engine, EngineConfig, Fault, Frame, ManualClock, NodeId, ServerNode,
    key_slot,
};
use lock_core::machine::Call;
use lock_core::script::{ReplicaAcks, ReplicaWait};
use lock_core::{BackendError, Reply};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// How many redirections a call follows before it is handed back refused (the `redis` crate's
/// cluster client retries a few times, `ClusterBackend` sets 3).
const HOPS: usize = 3;

/// How many hash slots a cluster has.
const SLOTS: u16 = 16_384;

/// The first port the nodes announce (only `MOVED` and `ASK` texts show it).
const BASE_PORT: u16 = 30_001;

/// One of the world's connections: a client's connection to each node it has reached.
struct Conn {
    client: NodeId,
    on: BTreeMap<usize, ClientId>,
}

/// A Redis Cluster on a manual clock, with each client's slot table.
pub struct ClusterServer {
    cluster: Cluster,
    /// Every node's engine, in port order (the primaries first, shard by shard).
    nodes: Nodes,
    /// Every node's place, in the same order.
    places: Vec<ServerNode>,
    /// Each node's announced port → its index.
    ports: BTreeMap<u16, usize>,
    /// Each shard's primary now.
    primaries: Vec<usize>,
    /// The primaries a failover left behind.
    failed: BTreeSet<usize>,
    /// How many replicas each shard's first primary has (a promoted one has none).
    replicas: u16,
    /// Each slot's node as the cluster was created: every table's start.
    created: Vec<usize>,
    /// Each client's slot table: what it learnt since, slot → node.
    tables: BTreeMap<NodeId, BTreeMap<u16, usize>>,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    /// The redirections followed since the last `take_notes`, for the trace.
    notes: Vec<String>,
}

/// A reply's error code, if it is a redirection or a refusal a cluster client handles.
fn refusal(frame: &Frame) -> Option<&str> {
    let text = frame.error_text()?;
    ["MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN"]
        .into_iter()
        .find(|code| text.starts_with(code) && text[code.len()..].starts_with(' '))
}

/// The port a `MOVED` or `ASK` names: `MOVED <slot> <host>:<port>`.
fn redirected_port(frame: &Frame) -> Option<u16> {
    let text = frame.error_text()?;
    text.rsplit_once(':')?.1.parse().ok()
}

/// A reply as the lock takes it: a redirection or refusal still met is the call refused unrun.
fn reply(frame: Frame) -> Result<Reply, BackendError> {
    if refusal(&frame).is_some() {
        let text = frame.error_text().unwrap_or_default().to_owned();
        return Err(BackendError::NotApplied(text));
    }
    on_engine::reply(frame)
}

/// The slot a call routes by: its first key's (a command's first argument's).
fn slot_of(call: &Call) -> Option<u16> {
    let key = match call {
        Call::Script(s) => s.keys.first()?,
        Call::Command(argv) => argv.get(1)?,
    };
    Some(key_slot(key))
}

impl ClusterServer {
    /// The cluster a case asks for: `case.shards` shards, each primary with `case.replicas`
    /// replicas lagging by `case.replica_lag`.
    pub fn for_case(case: &Case) -> ClusterServer {
        ClusterServer::new(case.seed, case.shards, case.replicas, case.replica_lag)
    }

    /// `shards` primaries with `replicas` replicas each, every batch reaching a replica after a
    /// lag drawn in `lag` (ms, fixed..max), every seed drawn from `seed`.
    pub fn new(seed: u64, shards: u16, replicas: u16, lag: (u64, u64)) -> ClusterServer {
        let clock = ManualClock::new(EPOCH_MS);
        let config = EngineConfig {
            seed,
            // The lock's scripts run as their native twins on every node.
            ..lock_core::fake::config()
        };
        let cluster = Cluster::new(
            clock.clone(),
            config,
            shards,
            replicas,
            replica_lag(lag),
            BASE_PORT,
        );
        let (places, nodes): (Vec<ServerNode>, Vec<Arc<Mutex<Engine>>>) = cluster
            .nodes()
            .into_iter()
            .map(|(place, engine)| (place, engine.clone()))
            .unzip();
        let ports = places
            .iter()
            .enumerate()
            .filter_map(|(i, &place)| Some((cluster.port_of(place)?, i)))
            .collect();
        let index = |place: ServerNode| places.iter().position(|&p| p == place).unwrap_or(0);
        let created = (0..SLOTS)
            .map(|slot| cluster.serving(slot).map_or(0, index))
            .collect();
        let shards = cluster.shard_count();
        ClusterServer {
            primaries: (0..usize::from(shards)).collect(),
            failed: BTreeSet::new(),
            replicas,
            created,
            tables: BTreeMap::new(),
            conns: BTreeMap::new(),
            next_conn: 0,
            notes: Vec::new(),
            nodes: Nodes::new(clock, nodes),
            places,
            ports,
            cluster,
        }
    }

    /// The node `client`'s table names for `slot`.
    fn node_for(&self, client: NodeId, slot: u16) -> usize {
        self.tables
            .get(&client)
            .and_then(|t| t.get(&slot))
            .copied()
            .unwrap_or(self.created[usize::from(slot)])
    }

    /// The node serving `slot` now, as the cluster's map has it.
    fn serving(&self, slot: u16) -> usize {
        let place = self.cluster.serving(slot);
        place
            .and_then(|p| self.places.iter().position(|&q| q == p))
            .unwrap_or(self.primaries[0])
    }

    /// The connection of `conn` on `node`, opened on first use.
    fn on_node(&mut self, conn: ConnId, node: usize) -> Option<ClientId> {
        let c = self.conns.get_mut(&conn)?;
        let client = c.client;
        let engine = &self.nodes.engines[node];
        Some(
            *c.on
                .entry(node)
                .or_insert_with(|| lock(engine).connect_as(client)),
        )
    }

    /// How many replicas follow `node` now: a shard's first primary has the case's, until it
    /// fails; a promoted replica has none (the others were left behind with the old primary).
    fn following(&self, node: usize) -> u32 {
        let first_primary = node < self.primaries.len();
        if first_primary && !self.failed.contains(&node) {
            u32::from(self.replicas)
        } else {
            0
        }
    }

    /// Runs `call` on `node` for `conn`, a script by `EVALSHA` and loading it on `NOSCRIPT`,
    /// after `ASKING` when `asking`.
    fn run_on(&mut self, conn: ConnId, node: usize, call: &Call, asking: bool) -> Frame {
        let Some(id) = self.on_node(conn, node) else {
            return Frame::error("ERR the connection is closed");
        };
        let mut engine = self.nodes.engine(node);
        let exec = |argv: &[Bytes]| {
            if asking {
                engine.execute(id, &[Bytes::from_static(b"ASKING")]);
            }
            engine.execute(id, argv)
        };
        send(exec, call)
    }

    /// Sends `call` as the client's cluster client would: to the node its table names,
    /// following `MOVED` (and learning it) and `ASK` for a few hops.
    fn routed(&mut self, conn: ConnId, call: &Call) -> Frame {
        let Some(client) = self.conns.get(&conn).map(|c| c.client) else {
            return Frame::error("ERR the connection is closed");
        };
        let slot = slot_of(call);
        let mut node = slot.map_or(self.primaries[0], |s| self.node_for(client, s));
        let mut answer = self.run_on(conn, node, call, false);
        for _ in 0..HOPS {
            let (Some(code), Some(port), Some(slot)) =
                (refusal(&answer), redirected_port(&answer), slot)
            else {
                break;
            };
            let Some(&to) = self.ports.get(&port) else {
                break;
            };
            let asking = match code {
                "MOVED" => {
                    self.tables.entry(client).or_default().insert(slot, to);
                    false
                }
                "ASK" => true,
                _ => break,
            };
            self.notes.push(format!(
                "node {node}: {code} slot {slot}, follows to node {to}"
            ));
            node = to;
            answer = self.run_on(conn, node, call, asking);
        }
        if let Some(code) = refusal(&answer) {
            self.notes
                .push(format!("node {node}: {code}, handed back refused unrun"));
        }
        answer
    }

    /// Brings the replicas of `node`'s shard up to the clock. What a replica serves and
    /// acknowledges is a function of the time alone, but it takes its batches off the stream only
    /// at a command or a catch-up, and nobody sends it commands here: without this the stream
    /// would grow for the whole run, and every `WAIT` would read all of it.
    fn catch_up_replicas(&self, node: usize) {
        let shards = self.primaries.len();
        if node >= shards {
            return;
        }
        for r in 0..usize::from(self.replicas) {
            if let Some(replica) = self.nodes.engines.get(shards * (1 + r) + node) {
                lock(replica).catch_up();
            }
        }
    }

    /// What every current primary does for a server fault that is not the cluster's own.
    fn on_primaries(&self, mut f: impl FnMut(&mut Engine)) {
        for &p in &self.primaries {
            f(&mut self.nodes.engine(p));
        }
    }
}

impl SimServer for ClusterServer {
    fn connect(&mut self, node: NodeId) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            id,
            Conn {
                client: node,
                on: BTreeMap::new(),
            },
        );
        id
    }

    fn route(&mut self, conn: ConnId, call: &Call) -> Option<usize> {
        let client = self.conns.get(&conn)?.client;
        Some(slot_of(call).map_or(self.primaries[0], |s| self.node_for(client, s)))
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn call(&mut self, conn: ConnId, call: &Call, now_ms: i64) -> Result<Reply, BackendError> {
        self.nodes.at(now_ms);
        self.nodes.sending(call);
        let answer = self.routed(conn, call);
        if let Some(node) = self.route(conn, call) {
            self.catch_up_replicas(node);
        }
        reply(answer)
    }

    fn call_synced(&mut self, conn: ConnId, call: &Call, wait: ReplicaWait, now_ms: i64) -> Synced {
        self.nodes.at(now_ms);
        self.nodes.sending(call);
        let Some(client) = self.conns.get(&conn).map(|c| c.client) else {
            return Synced::Done(Err(closed()), None);
        };
        let slot = slot_of(call);
        let node = slot.map_or(self.primaries[0], |s| self.node_for(client, s));
        self.catch_up_replicas(node);
        let connected = self.following(node);
        if connected == 0 {
            return Synced::Done(reply(self.routed(conn, call)), None);
        }
        // The pipeline's own connection, on the caller's node (its crash closes it too).
        let own = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            own,
            Conn {
                client,
                on: BTreeMap::new(),
            },
        );
        let answer = self.run_on(own, node, call, false);
        let Some(id) = self
            .conns
            .remove(&own)
            .and_then(|c| c.on.get(&node).copied())
        else {
            return Synced::Done(Err(closed()), None);
        };
        let mut engine = self.nodes.engine(node);
        if let Some(code) = refusal(&answer) {
            // A pipeline's redirection is not followed: the table learns a MOVED, and the call
            // goes back to the lock refused.
            engine.disconnect(id);
            drop(engine);
            self.notes.push(format!(
                "node {node}: {code} in a pipeline, not followed: refused unrun"
            ));
            if let (Some(port), Some(slot)) = (redirected_port(&answer), slot)
                && code == "MOVED"
                && let Some(&to) = self.ports.get(&port)
            {
                self.tables.entry(client).or_default().insert(slot, to);
            }
            return Synced::Done(reply(answer), None);
        }
        let script = match reply(answer) {
            Ok(r) => r,
            Err(e) => {
                engine.disconnect(id);
                return Synced::Done(Err(e), None);
            }
        };
        drop(engine);
        let pending = PendingWait {
            node,
            conn: id,
            connected,
        };
        self.nodes.send_wait(pending, &wait, script, now_ms)
    }

    fn poll_wait(
        &mut self,
        ticket: u64,
        now_ms: i64,
    ) -> Result<Result<ReplicaAcks, BackendError>, i64> {
        let failed = &self.failed;
        self.nodes
            .poll_wait(ticket, now_ms, |node| failed.contains(&node))
    }

    fn subscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64) {
        self.nodes.at(now_ms);
        let node = self.serving(key_slot(channel));
        let Some(id) = self.on_node(conn, node) else {
            return;
        };
        subscription(&mut self.nodes.engine(node), id, b"SUBSCRIBE", channel);
        self.nodes.subscribers.insert(conn);
    }

    fn unsubscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64) {
        self.nodes.at(now_ms);
        let on: Vec<(usize, ClientId)> = self
            .conns
            .get(&conn)
            .map(|c| c.on.iter().map(|(&n, &id)| (n, id)).collect())
            .unwrap_or_default();
        for (node, id) in on {
            subscription(&mut self.nodes.engine(node), id, b"UNSUBSCRIBE", channel);
        }
    }

    fn take_messages(&mut self) -> Vec<(ConnId, Bytes, Bytes)> {
        let mut out = Vec::new();
        if !self.nodes.take_published() {
            return out;
        }
        // Each subscriber's connection on each node it reached, in subscriber then node order,
        // found once; and each node they are on, caught up once (what other nodes relayed waits
        // in its inbox until it next looks).
        let mut listening = vec![false; self.nodes.engines.len()];
        let mut outboxes: Vec<(ConnId, usize, ClientId)> = Vec::new();
        for &conn in &self.nodes.subscribers {
            let Some(c) = self.conns.get(&conn) else {
                continue;
            };
            for (&node, &id) in &c.on {
                listening[node] = true;
                outboxes.push((conn, node, id));
            }
        }
        for (node, &listens) in listening.iter().enumerate() {
            if listens {
                self.nodes.engine(node).catch_up();
            }
        }
        for (conn, node, id) in outboxes {
            drain_messages(&mut self.nodes.engine(node), conn, id, &mut out);
        }
        out
    }

    fn lock_state(&mut self, key: &Bytes, now_ms: i64) -> Option<LockState> {
        self.nodes.at(now_ms);
        // Wherever the key is: on a primary (its slot's, or a migration's other end), or
        // between them.
        let now = self.nodes.engine(self.primaries[0]).now();
        for &p in &self.primaries {
            let engine = self.nodes.engine(p);
            if let Some((value, deadline)) = engine.peek_value(0, key) {
                return Some(lock_state(value, deadline));
            }
        }
        let (value, deadline) = self.cluster.in_transit(key, now)?;
        Some(lock_state(&value, deadline))
    }

    fn fair_queue(
        &mut self,
        queue: &Bytes,
        timeouts: &Bytes,
        now_ms: i64,
    ) -> Vec<(Bytes, Option<i64>)> {
        self.nodes.at(now_ms);
        let read = |key: &Bytes| {
            self.primaries
                .iter()
                .find_map(|&p| self.nodes.engine(p).value(0, key))
        };
        fair_queue(read, queue, timeouts)
    }

    /// The cluster's own faults go to its map, and the clock is brought up to them at once
    /// (`Cluster::catch_up`), so a failover has promoted before the world reads the locks; the
    /// others act on every current primary (a crash closes the client's connections on every
    /// node).
    fn fault(&mut self, fault: Fault, now_ms: i64) {
        self.nodes.at(now_ms);
        match fault {
            Fault::ShardFailover { shard, replica, .. } => {
                let s = usize::from(shard);
                if s >= self.primaries.len() || replica >= self.replicas {
                    return;
                }
                let promoted = self
                    .places
                    .iter()
                    .position(|&p| p == ServerNode::shard_replica(shard, replica));
                let Some(promoted) = promoted else { return };
                if self.primaries[s] != s || self.failed.contains(&s) {
                    // Promoted once already: the new primary has no replica to promote.
                    return;
                }
                self.cluster.add_fault(Fault::ShardFailover {
                    shard,
                    replica,
                    at: now_ms,
                });
                self.cluster.catch_up();
                self.failed.insert(s);
                self.primaries[s] = promoted;
                let old = &self.nodes.engines[s];
                let on_old: Vec<ClientId> = self
                    .conns
                    .values()
                    .filter_map(|c| c.on.get(&s).copied())
                    .collect();
                let mut engine = lock(old);
                for id in on_old {
                    engine.disconnect(id);
                }
                drop(engine);
                for c in self.conns.values_mut() {
                    c.on.remove(&s);
                }
            }
            Fault::SlotMigration { .. } => {
                self.cluster.add_fault(fault);
                self.cluster.catch_up();
            }
            Fault::Crash { node, .. } => {
                for engine in &self.nodes.engines {
                    lock(engine).crash(node);
                }
            }
            Fault::Restart { .. } => self.on_primaries(Engine::restart),
            Fault::Failover { lag_ms, .. } => self.on_primaries(|e| {
                e.failover(lag_ms);
            }),
            Fault::ClockJump { delta_ms, .. } => self.nodes.jump_clocks(delta_ms),
            Fault::ClientPause {
                until, writes_only, ..
            } => self.on_primaries(|e| e.pause_clients_until(until, writes_only)),
            Fault::ReplicaStall { .. }
            | Fault::Command { .. }
            | Fault::LinkDown { .. }
            | Fault::DropDelivery { .. }
            | Fault::SubscriberDown { .. }
            | Fault::Pause { .. } => {}
        }
        let nodes = &self.nodes.engines;
        self.nodes.subscribers.retain(|conn| {
            self.conns.get(conn).is_some_and(|c| {
                c.on.iter()
                    .any(|(&n, &id)| lock(&nodes[n]).is_connected(id))
            })
        });
    }

    fn isolate(&mut self, node: usize, from_ms: i64, until_ms: i64) {
        let Some(&place) = self.places.get(node) else {
            return;
        };
        let shard = place.shard();
        let (primary, replicas) = match place.replica_index() {
            // A primary is cut from every replica; a replica from its primary.
            None => (node, (0..self.replicas).collect::<Vec<_>>()),
            Some(r) => (usize::from(shard), vec![r]),
        };
        let mut engine = self.nodes.engine(primary);
        for replica in replicas {
            engine.add_fault(Fault::ReplicaStall {
                replica,
                from: from_ms,
                until: until_ms,
            });
        }
    }

    fn clock_jump(&self) -> i64 {
        self.nodes.engine(0).clock_offset()
    }
}
