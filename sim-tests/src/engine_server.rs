//! fake-redis's engine as the simulator's server: commands at the time the world sets, and the
//! engine's server-side faults when the world's queue reaches them.

use crate::server::{ConnId, LockState, SimServer};
use crate::world::EPOCH_MS;
use bytes::Bytes;
use fake_redis::{ClientId, Engine, EngineConfig, Fault, Frame, ManualClock, NodeId, Value};
use lock_core::machine::Call;
use lock_core::{BackendError, Reply};
use std::collections::BTreeSet;

/// The engine on a manual clock.
pub struct EngineServer {
    engine: Engine,
    clock: ManualClock,
    subscribers: BTreeSet<u64>,
    /// Whether a call since the last `take_messages` may have published (a release, a force
    /// unlock, a PUBLISH): only then are the subscribers' outboxes worth reading.
    may_have_published: bool,
    /// The planted break of the fair lock: see [`EngineServer::unfair`].
    unfair: bool,
    /// The planted break of the read-write lock: see [`EngineServer::careless_reads`].
    careless_reads: bool,
}

impl EngineServer {
    /// An empty server whose active expiry draws from `seed`, keeping a write journal long enough
    /// for any failover lag a case asks for.
    pub fn new(seed: u64) -> EngineServer {
        let clock = ManualClock::new(EPOCH_MS);
        let config = EngineConfig {
            seed,
            journal_window_ms: Some(120_000),
            ..EngineConfig::default()
        };
        EngineServer {
            engine: Engine::with_config(clock.clone(), config),
            clock,
            subscribers: BTreeSet::new(),
            may_have_published: false,
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
        if s.script.name != "fair_acquire" || self.engine.value(0, lock).is_some() {
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
        let Some((Value::Hash(hash), _)) = self.engine.value(0, lock) else {
            return None;
        };
        let field = |name: &[u8]| hash.iter().find(|(f, _)| &f[..] == name).map(|(_, v)| v);
        let written = field(b"mode").is_some_and(|m| &m[..] == b"write");
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
        self.engine.execute(ClientId(conn), argv)
    }
}

fn reply(frame: Frame) -> Result<Reply, BackendError> {
    match frame.to_reply() {
        Reply::Error(e) => Err(BackendError::Server(e)),
        r => Ok(r),
    }
}

impl SimServer for EngineServer {
    fn connect(&mut self, node: NodeId) -> ConnId {
        self.engine.connect_as(node).0
    }

    fn call(&mut self, conn: ConnId, call: &Call, now_ms: i64) -> Result<Reply, BackendError> {
        self.clock.set(now_ms);
        match call {
            Call::Command(argv) => {
                self.may_have_published = true;
                reply(self.exec(conn, argv))
            }
            Call::Script(s) => {
                self.may_have_published |= matches!(
                    s.script.name,
                    "release"
                        | "force_unlock"
                        | "fair_release"
                        | "fair_force_unlock"
                        | "rw_read_release"
                        | "rw_write_release"
                        | "rw_force_unlock"
                );
                if self.unfair {
                    self.jump_the_queue(conn, call);
                }
                let hidden = if self.careless_reads {
                    self.hide_write_mode(conn, call)
                } else {
                    None
                };
                let argv = s.evalsha_argv();
                let mut result = self.exec(conn, &argv);
                if result
                    .error_text()
                    .is_some_and(|e| e.starts_with("NOSCRIPT"))
                {
                    // As the `redis` crate's `Script` does: load, then EVALSHA again.
                    self.exec(conn, &s.script.load_argv());
                    result = self.exec(conn, &argv);
                }
                if let Some(lock) = hidden {
                    self.restore_write_mode(conn, lock);
                }
                reply(result)
            }
        }
    }

    fn subscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64) {
        self.clock.set(now_ms);
        self.exec(conn, &[Bytes::from_static(b"SUBSCRIBE"), channel.clone()]);
        self.engine.drain_outbox(ClientId(conn));
        self.subscribers.insert(conn);
    }

    fn unsubscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64) {
        self.clock.set(now_ms);
        self.exec(conn, &[Bytes::from_static(b"UNSUBSCRIBE"), channel.clone()]);
        self.engine.drain_outbox(ClientId(conn));
    }

    fn take_messages(&mut self) -> Vec<(ConnId, Bytes, Bytes)> {
        let mut out = Vec::new();
        if !std::mem::take(&mut self.may_have_published) {
            return out;
        }
        for &conn in &self.subscribers {
            for frame in self.engine.drain_outbox(ClientId(conn)) {
                if let Frame::Push(items) | Frame::Array(items) = frame
                    && let [
                        Frame::Bulk(kind),
                        Frame::Bulk(channel),
                        Frame::Bulk(payload),
                    ] = items.as_slice()
                    && &kind[..] == b"message"
                {
                    out.push((conn, channel.clone(), payload.clone()));
                }
            }
        }
        out
    }

    fn lock_state(&mut self, key: &Bytes, now_ms: i64) -> Option<LockState> {
        self.clock.set(now_ms);
        let (value, deadline) = self.engine.value(0, key)?;
        let Value::Hash(hash) = value else {
            return Some(LockState {
                deadline,
                ..LockState::default()
            });
        };
        let mut state = LockState {
            deadline,
            ..LockState::default()
        };
        for (f, v) in hash.iter() {
            if &f[..] == b"mode" {
                state.mode = Some(v.clone());
                continue;
            }
            let n = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
            state.owners.push((f.clone(), n.unwrap_or(0)));
        }
        Some(state)
    }

    fn fair_queue(
        &mut self,
        queue: &Bytes,
        timeouts: &Bytes,
        now_ms: i64,
    ) -> Vec<(Bytes, Option<i64>)> {
        self.clock.set(now_ms);
        let scores = match self.engine.value(0, timeouts) {
            Some((Value::ZSet(set), _)) => set
                .iter()
                .map(|(score, owner)| (owner.clone(), score as i64))
                .collect(),
            _ => Vec::new(),
        };
        let Some((Value::List(list), _)) = self.engine.value(0, queue) else {
            return Vec::new();
        };
        list.iter()
            .map(|owner| {
                let score = scores.iter().find(|(o, _)| o == owner).map(|(_, s)| *s);
                (owner.clone(), score)
            })
            .collect()
    }

    /// By the engine's own fault actions, at once, rather than scheduled with
    /// [`Engine::add_fault`]: the world's queue already places each fault among the events of its
    /// millisecond, where the engine would fire every fault due by a time together, before its next
    /// command; and a failover added there would start the write journal afresh, with nothing in it
    /// to undo.
    fn fault(&mut self, fault: Fault, now_ms: i64) {
        self.clock.set(now_ms);
        match fault {
            Fault::Crash { node, .. } => self.engine.crash(node),
            Fault::Restart { .. } => self.engine.restart(),
            Fault::Failover { lag_ms, .. } => {
                self.engine.failover(lag_ms);
            }
            Fault::ClockJump { delta_ms, .. } => self.engine.jump_clock(delta_ms),
            // The simulated server is one node: no replica to stall, no cluster.
            Fault::ReplicaStall { .. }
            | Fault::SlotMigration { .. }
            | Fault::ShardFailover { .. } => {}
            Fault::ClientPause {
                until, writes_only, ..
            } => self.engine.pause_clients_until(until, writes_only),
            // A front door's faults, not the server's: the simulator's network judges messages.
            Fault::Command { .. }
            | Fault::LinkDown { .. }
            | Fault::DropDelivery { .. }
            | Fault::SubscriberDown { .. }
            | Fault::Pause { .. } => {}
        }
        let engine = &self.engine;
        self.subscribers
            .retain(|&conn| engine.is_connected(ClientId(conn)));
    }

    fn clock_jump(&self) -> i64 {
        self.engine.clock_offset()
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
        let connected = |s: &EngineServer, c| s.engine.is_connected(ClientId(c));
        assert!(!connected(&server, a) && !connected(&server, a_sub));
        assert!(connected(&server, b));
        assert!(server.subscribers.is_empty());
        server.fault(
            Fault::ClockJump {
                at: 0,
                delta_ms: -7,
            },
            EPOCH_MS + 10,
        );
        assert_eq!(server.clock_jump(), -7);
        assert_eq!(server.engine.now(), EPOCH_MS + 3);
        assert_eq!(server.engine.fault_plan().log().len(), 2);
    }
}
