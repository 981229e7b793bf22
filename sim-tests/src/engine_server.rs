//! fake-redis's engine as the simulator's server: commands at the time the world sets, and the
//! engine's server-side faults when the world's queue reaches them.
//!
//! A case with replicas runs on a [`Topology`]: the primary and its replicas, each an engine on
//! the one clock and seed, the replicas lagging as the case says. The clients talk to the primary
//! only. A synced call runs its script and its `WAIT` on a connection of its own (a pipeline's
//! two commands, which must not hold up the client's other calls behind a blocked `WAIT`); the
//! world asks again at each time the engine would wake the `WAIT` (the next replica arrival, or
//! its timeout). A failover (`Fault::ShardFailover` of shard 0, the case's `failover replica=`)
//! promotes the replica with what it has received (`REPLICAOF NO ONE` at the fault's time), and
//! the clients connect to it; the old primary and the other replicas are left behind, so the new
//! primary has no replica and the lock's check has nothing to wait for.

use crate::case::Case;
use crate::on_engine::{
    Nodes, PendingWait, closed, drain_messages, fair_queue, lock, lock_state, replica_lag, reply,
    send, subscription,
};
use crate::server::{ConnId, EPOCH_MS, LockState, SimServer, Synced};
use bytes::Bytes;
use fake_redis::{
    ClientId, Engine, EngineConfig, Fault, Frame, ManualClock, NodeId, Topology, Value,
};
use lock_core::machine::Call;
use lock_core::script::{ReplicaAcks, ReplicaWait};
use lock_core::{BackendError, Reply};
use std::sync::MutexGuard;

/// The engine on a manual clock.
pub struct EngineServer {
    /// The topology's engines, the original primary first.
    nodes: Nodes,
    /// Which of `nodes` is the primary now.
    primary: usize,
    /// How many replicas follow the primary now.
    connected: u32,
    /// The planted break of the fair lock: see [`EngineServer::unfair`].
    unfair: bool,
    /// The planted break of the read-write lock: see [`EngineServer::careless_reads`].
    careless_reads: bool,
}

impl EngineServer {
    /// An empty server whose active expiry draws from `seed`, keeping a write journal long enough
    /// for any failover lag a case asks for.
    pub fn new(seed: u64) -> EngineServer {
        EngineServer::with_replicas(seed, 0, (0, 0))
    }

    /// The server a case asks for: one node, or a primary with its replicas.
    pub fn for_case(case: &Case) -> EngineServer {
        EngineServer::with_replicas(case.seed, case.replicas, case.replica_lag)
    }

    /// A primary with `replicas` replicas, each batch reaching a replica after a lag drawn in
    /// `lag` (ms, fixed..max).
    pub fn with_replicas(seed: u64, replicas: u16, lag: (u64, u64)) -> EngineServer {
        let clock = ManualClock::new(EPOCH_MS);
        let config = EngineConfig {
            seed,
            journal_window_ms: Some(120_000),
            // The lock's scripts run as their native twins (replicas copy the config).
            ..lock_core::fake::config()
        };
        let primary = Engine::with_config(clock.clone(), config);
        let topology = Topology::with_replicas(primary, replicas, replica_lag(lag));
        EngineServer {
            nodes: Nodes::new(clock, topology.nodes().map(|(_, e)| e.clone()).collect()),
            primary: 0,
            connected: u32::from(replicas),
            unfair: false,
            careless_reads: false,
        }
    }

    /// A server whose fair lock grants the lock to any waiter that asks while it is free, not only
    /// to the queue's head: before each `fair_acquire` that finds the lock free, its owner is moved
    /// to the head of the queue. A planted break, for proving that checker (g) notices; never
    /// used by a suite that expects a clean run.
    #[doc(hidden)]
    pub fn unfair(mut self) -> EngineServer {
        self.unfair = true;
        self
    }

    /// The planted break's step before `call`: the caller of a `fair_acquire` on a free lock
    /// goes to the head of the queue.
    fn jump_the_queue(&mut self, conn: ConnId, call: &Call) {
        let Call::Script(s) = call else { return };
        let (Some(lock), Some(queue), Some(owner)) = (s.keys.first(), s.keys.get(1), s.args.get(1))
        else {
            return;
        };
        if s.script.name != "fair_acquire" || self.engine().value(0, lock).is_some() {
            return;
        }
        let word = Bytes::from_static;
        let (queue, owner) = (queue.clone(), owner.clone());
        self.exec(
            conn,
            &[word(b"LREM"), queue.clone(), word(b"0"), owner.clone()],
        );
        self.exec(conn, &[word(b"LPUSH"), queue, owner]);
    }

    /// A server whose read acquire ignores the write mode: before each `rw_read_acquire` on a lock
    /// another owner holds for writing, the lock's `mode` is set to `read`, so the script grants
    /// the read hold, and set back to `write` after it. A planted break, for proving that checker
    /// (h) notices; never used by a suite that expects a clean run.
    #[doc(hidden)]
    pub fn careless_reads(mut self) -> EngineServer {
        self.careless_reads = true;
        self
    }

    /// The planted break's step before `call`: whether it hid a writer's mode, to be put back
    /// by [`EngineServer::restore_write_mode`].
    fn hide_write_mode(&mut self, conn: ConnId, call: &Call) -> Option<Bytes> {
        let Call::Script(s) = call else { return None };
        let (lock, writer) = (s.keys.first()?, s.args.get(2)?);
        if s.script.name != "rw_read_acquire" {
            return None;
        }
        let Some((Value::Hash(hash), _)) = self.engine().value(0, lock) else {
            return None;
        };
        let field = |name: &[u8]| hash.iter().find(|(f, _)| &f[..] == name).map(|(_, v)| v);
        let written = field(b"mode").is_some_and(|m| m == b"write");
        if !written || field(writer).is_some() {
            return None;
        }
        let word = Bytes::from_static;
        let lock = lock.clone();
        self.exec(
            conn,
            &[word(b"HSET"), lock.clone(), word(b"mode"), word(b"read")],
        );
        Some(lock)
    }

    /// Puts back the `write` mode that [`EngineServer::hide_write_mode`] hid on `lock`.
    fn restore_write_mode(&mut self, conn: ConnId, lock: Bytes) {
        let word = Bytes::from_static;
        self.exec(conn, &[word(b"HSET"), lock, word(b"mode"), word(b"write")]);
    }

    fn exec(&mut self, conn: ConnId, argv: &[Bytes]) -> Frame {
        self.engine().execute(ClientId(conn), argv)
    }

    /// The primary's engine.
    fn engine(&self) -> MutexGuard<'_, Engine> {
        self.nodes.engine(self.primary)
    }

    /// Promotes replica `replica` of the original primary with what it has received by now, if
    /// it still follows the primary; the clients' connections to the old primary are left to
    /// close (the world connects again).
    fn promote(&mut self, replica: u16) -> bool {
        let node = usize::from(replica) + 1;
        if self.primary != 0 || node >= self.nodes.engines.len() {
            return false;
        }
        {
            let mut engine = self.nodes.engine(node);
            let conn = engine.connect();
            let argv = [&b"REPLICAOF"[..], b"NO", b"ONE"].map(Bytes::from_static);
            engine.execute(conn, &argv);
            engine.disconnect(conn);
        }
        self.primary = node;
        self.connected = 0;
        self.nodes.subscribers.clear();
        true
    }
}

impl SimServer for EngineServer {
    fn connect(&mut self, node: NodeId) -> ConnId {
        self.engine().connect_as(node).0
    }

    fn route(&mut self, _conn: ConnId, _call: &Call) -> Option<usize> {
        Some(self.primary)
    }

    fn isolate(&mut self, node: usize, from_ms: i64, until_ms: i64) {
        let replicas = self.nodes.engines.len().saturating_sub(1) as u16;
        let cut: Vec<u16> = match node {
            0 => (0..replicas).collect(),
            n if n <= usize::from(replicas) => vec![(n - 1) as u16],
            _ => Vec::new(),
        };
        let mut primary = self.nodes.engine(0);
        for replica in cut {
            primary.add_fault(Fault::ReplicaStall {
                replica,
                from: from_ms,
                until: until_ms,
            });
        }
    }

    fn call_synced(&mut self, conn: ConnId, call: &Call, wait: ReplicaWait, now_ms: i64) -> Synced {
        if self.connected == 0 {
            return Synced::Done(self.call(conn, call, now_ms), None);
        }
        // The pipeline's own connection, on the caller's node (its crash closes it too).
        let node = self.engine().node_of(ClientId(conn));
        let own = match node {
            Some(node) => self.engine().connect_as(node),
            None => return Synced::Done(Err(closed()), None),
        };
        let result = self.call(own.0, call, now_ms);
        let reply = match result {
            Ok(reply) => reply,
            Err(e) => {
                self.engine().disconnect(own);
                return Synced::Done(Err(e), None);
            }
        };
        let pending = PendingWait {
            node: self.primary,
            conn: own,
            connected: self.connected,
        };
        self.nodes.send_wait(pending, &wait, reply, now_ms)
    }

    fn poll_wait(
        &mut self,
        ticket: u64,
        now_ms: i64,
    ) -> Result<Result<ReplicaAcks, BackendError>, i64> {
        let primary = self.primary;
        self.nodes.poll_wait(ticket, now_ms, |node| node != primary)
    }

    fn call(&mut self, conn: ConnId, call: &Call, now_ms: i64) -> Result<Reply, BackendError> {
        self.nodes.at(now_ms);
        self.nodes.sending(call);
        if let Call::Command(argv) = call {
            return reply(self.exec(conn, argv));
        }
        if self.unfair {
            self.jump_the_queue(conn, call);
        }
        let hidden = if self.careless_reads {
            self.hide_write_mode(conn, call)
        } else {
            None
        };
        let result = send(|argv| self.exec(conn, argv), call);
        if let Some(lock) = hidden {
            self.restore_write_mode(conn, lock);
        }
        reply(result)
    }

    fn subscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64) {
        self.nodes.at(now_ms);
        subscription(&mut self.engine(), ClientId(conn), b"SUBSCRIBE", channel);
        self.nodes.subscribed(conn, channel);
    }

    fn unsubscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64) {
        self.nodes.at(now_ms);
        subscription(&mut self.engine(), ClientId(conn), b"UNSUBSCRIBE", channel);
        self.nodes.unsubscribed(conn, channel);
    }

    fn take_messages(&mut self) -> Vec<(ConnId, Bytes, Bytes)> {
        let mut out = Vec::new();
        let conns = self.nodes.take_published_to();
        if conns.is_empty() {
            return out;
        }
        // One engine, no cluster bus: an empty outbox is seen without draining it.
        let mut engine = self.nodes.engine(self.primary);
        for conn in conns {
            if engine.outbox_len(ClientId(conn)) == 0 {
                continue;
            }
            drain_messages(&mut engine, conn, ClientId(conn), &mut out);
        }
        drop(engine);
        out
    }

    fn lock_state(&mut self, key: &Bytes, now_ms: i64) -> Option<LockState> {
        self.nodes.at(now_ms);
        let engine = self.engine();
        let (value, deadline) = engine.peek_value(0, key)?;
        Some(lock_state(value, deadline))
    }

    fn fair_queue(
        &mut self,
        queue: &Bytes,
        timeouts: &Bytes,
        now_ms: i64,
    ) -> Vec<(Bytes, Option<i64>)> {
        self.nodes.at(now_ms);
        fair_queue(|key| self.engine().value(0, key), queue, timeouts)
    }

    /// By the engine's own fault actions, at once, rather than scheduled with
    /// [`Engine::add_fault`]: the world's queue already places each fault among the events of its
    /// millisecond, where the engine would fire every fault due by a time together, before its next
    /// command; and a failover added there would start the write journal afresh, with nothing in it
    /// to undo.
    fn fault(&mut self, fault: Fault, now_ms: i64) {
        self.nodes.at(now_ms);
        match fault {
            Fault::Crash { node, .. } => self.engine().crash(node),
            Fault::Restart { .. } => self.engine().restart(),
            Fault::Failover { lag_ms, .. } => {
                self.engine().failover(lag_ms);
            }
            Fault::ClockJump { delta_ms, .. } => self.nodes.jump_clocks(delta_ms),
            Fault::ShardFailover { replica, .. } => {
                self.promote(replica);
            }
            // The simulated server is no cluster, and its replicas are not stalled.
            Fault::ReplicaStall { .. } | Fault::SlotMigration { .. } => {}
            Fault::ClientPause {
                until, writes_only, ..
            } => self.engine().pause_clients_until(until, writes_only),
            // A front door's faults, not the server's: the simulator's network judges messages.
            Fault::Command { .. }
            | Fault::LinkDown { .. }
            | Fault::DropDelivery { .. }
            | Fault::SubscriberDown { .. }
            | Fault::Pause { .. } => {}
        }
        let engine = lock(&self.nodes.engines[self.primary]);
        self.nodes
            .subscribers
            .retain(|&conn| engine.is_connected(ClientId(conn)));
    }

    fn clock_jump(&self) -> i64 {
        self.engine().clock_offset()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_closes_only_its_nodes_connections_and_a_jump_moves_the_servers_time() {
        let mut server = EngineServer::new(0);
        let (a, a_sub, b) = (
            server.connect(NodeId(0)),
            server.connect(NodeId(0)),
            server.connect(NodeId(1)),
        );
        let channel = Bytes::from_static(b"ch");
        server.subscribe(a_sub, &channel, EPOCH_MS);
        server.fault(
            Fault::Crash {
                node: NodeId(0),
                at: 0,
            },
            EPOCH_MS + 5,
        );
        let connected = |s: &EngineServer, c| s.engine().is_connected(ClientId(c));
        assert!(!connected(&server, a) && !connected(&server, a_sub));
        assert!(connected(&server, b));
        assert!(server.nodes.subscribers.is_empty());
        server.fault(
            Fault::ClockJump {
                at: 0,
                delta_ms: -7,
            },
            EPOCH_MS + 10,
        );
        assert_eq!(server.clock_jump(), -7);
        assert_eq!(server.engine().now(), EPOCH_MS + 3);
        assert_eq!(server.engine().fault_plan().log().len(), 2);
    }
}
