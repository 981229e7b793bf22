//! fake-redis's engine as the simulator's server: commands at the time the world sets.

use crate::server::{ConnId, LockState, SimServer};
use crate::world::EPOCH_MS;
use bytes::Bytes;
use fake_redis::{ClientId, Engine, EngineConfig, Frame, ManualClock, Value};
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
        }
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
    fn connect(&mut self) -> ConnId {
        self.engine.connect().0
    }

    fn disconnect(&mut self, conn: ConnId) {
        self.subscribers.remove(&conn);
        self.engine.disconnect(ClientId(conn));
    }

    fn call(&mut self, conn: ConnId, call: &Call, now_ms: i64) -> Result<Reply, BackendError> {
        self.clock.set(now_ms);
        match call {
            Call::Command(argv) => {
                self.may_have_published = true;
                reply(self.exec(conn, argv))
            }
            Call::Script(s) => {
                self.may_have_published |= matches!(s.script.name, "release" | "force_unlock");
                let argv = s.evalsha_argv();
                let first = self.exec(conn, &argv);
                if first
                    .error_text()
                    .is_some_and(|e| e.starts_with("NOSCRIPT"))
                {
                    // As the `redis` crate's `Script` does: load, then EVALSHA again.
                    self.exec(conn, &s.script.load_argv());
                    return reply(self.exec(conn, &argv));
                }
                reply(first)
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
                owners: Vec::new(),
                deadline,
            });
        };
        let owners = hash
            .iter()
            .map(|(f, v)| {
                let n = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                (f.clone(), n.unwrap_or(0))
            })
            .collect();
        Some(LockState { owners, deadline })
    }

    fn restart(&mut self, now_ms: i64) {
        self.clock.set(now_ms);
        self.subscribers.clear();
        self.engine.restart();
    }

    fn failover(&mut self, lag_ms: i64, now_ms: i64) {
        self.clock.set(now_ms);
        self.subscribers.clear();
        self.engine.failover(lag_ms);
    }
}
