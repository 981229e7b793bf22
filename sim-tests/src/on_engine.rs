//! What the simulator's two servers, one node ([`crate::engine_server`]) and a cluster
//! ([`crate::cluster_server`]), do alike on one of fake-redis's engines: take a reply as the
//! lock's, read a lock's state and a fair lock's queue out of the keys, pick the published
//! messages out of a subscriber's outbox, and keep the `WAIT`s a synced call left blocked.
//!
//! Where the servers differ (which engine a call goes to, which of them failed over) stays in
//! each; what is here is the same step on whichever engine they chose, so both servers' traces
//! come from one piece of code.

use crate::server::{LockState, Synced};
use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, ReplicaLag, Value};
use lock_core::fake::FrameExt;
use lock_core::script::ReplicaAcks;
use lock_core::{BackendError, Reply};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The engine, even if a panic elsewhere poisoned its lock (the simulator is one thread).
pub(crate) fn lock(engine: &Arc<Mutex<Engine>>) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|e| e.into_inner())
}

/// A case's replica lag (ms, fixed..max) as the replicas' stream draws it.
pub(crate) fn replica_lag(lag: (u64, u64)) -> ReplicaLag {
    let fixed = i64::try_from(lag.0).unwrap_or(i64::MAX);
    let jitter = i64::try_from(lag.1.saturating_sub(lag.0)).unwrap_or(i64::MAX);
    ReplicaLag::jittered(fixed, jitter)
}

/// A reply as the lock takes it: an error reply is the server's error.
pub(crate) fn reply(frame: Frame) -> Result<Reply, BackendError> {
    match frame.to_reply() {
        Reply::Error(e) => Err(BackendError::Server(e)),
        r => Ok(r),
    }
}

/// What a `WAIT` ends with when its connection closes under it.
pub(crate) fn closed() -> BackendError {
    BackendError::Unknown("the connection closed while WAIT blocked".into())
}

/// `WAIT`'s reply as the replicas' count.
fn acks(frame: Frame, connected: u32) -> Result<ReplicaAcks, BackendError> {
    match frame {
        Frame::Integer(n) => Ok(ReplicaAcks {
            acked: u32::try_from(n).unwrap_or(0),
            connected,
        }),
        other => match other.to_reply() {
            Reply::Error(e) => Err(BackendError::Server(e)),
            r => Err(BackendError::Unknown(format!("WAIT replied {r}"))),
        },
    }
}

/// A lock's key read as its state: each hash field an owner and its hold count, but a
/// read-write lock's `mode`; a key of another type has no owners.
pub(crate) fn lock_state(value: Value, deadline: Option<i64>) -> LockState {
    let mut state = LockState {
        deadline,
        ..LockState::default()
    };
    if let Value::Hash(hash) = value {
        for (f, v) in hash.iter() {
            if f == b"mode" {
                state.mode = Some(Bytes::copy_from_slice(v));
                continue;
            }
            let n = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
            state
                .owners
                .push((Bytes::copy_from_slice(f), n.unwrap_or(0)));
        }
    }
    state
}

/// A fair lock's queue in order, each owner with its timeout's score, from the keys as `read`
/// finds them (the timeouts first, then the queue).
pub(crate) fn fair_queue(
    mut read: impl FnMut(&Bytes) -> Option<(Value, Option<i64>)>,
    queue: &Bytes,
    timeouts: &Bytes,
) -> Vec<(Bytes, Option<i64>)> {
    let scores: Vec<(Bytes, i64)> = match read(timeouts) {
        Some((Value::ZSet(set), _)) => set
            .iter()
            .map(|(score, owner)| (owner.clone(), score as i64))
            .collect(),
        _ => Vec::new(),
    };
    let Some((Value::List(list), _)) = read(queue) else {
        return Vec::new();
    };
    list.iter()
        .map(|owner| {
            let score = scores.iter().find(|(o, _)| o == owner).map(|(_, s)| *s);
            (Bytes::copy_from_slice(owner), score)
        })
        .collect()
}

/// A published message a subscriber's outbox holds, as its channel and payload; None for
/// anything else there.
pub(crate) fn message(frame: Frame) -> Option<(Bytes, Bytes)> {
    if let Frame::Push(items) | Frame::Array(items) = frame
        && let [
            Frame::Bulk(kind),
            Frame::Bulk(channel),
            Frame::Bulk(payload),
        ] = items.as_slice()
        && &kind[..] == b"message"
    {
        return Some((channel.clone(), payload.clone()));
    }
    None
}

/// A `WAIT` sent on the node it blocks on.
pub(crate) struct PendingWait {
    /// The node (the server's index) it waits on.
    pub(crate) node: usize,
    /// Its own connection there.
    pub(crate) conn: ClientId,
    /// How many replicas that node had.
    pub(crate) connected: u32,
}

/// The `WAIT`s synced calls left blocked, by ticket.
#[derive(Default)]
pub(crate) struct Waits {
    pending: BTreeMap<u64, PendingWait>,
    next_ticket: u64,
}

impl Waits {
    /// Sends `wait_argv` on `wait.conn`, the pipeline's own connection on `wait.node`
    /// (`engine`), after its script answered `reply`: the count at once (and the connection
    /// closed), or a ticket to poll at the time the engine would wake it.
    pub(crate) fn send(
        &mut self,
        engine: &mut Engine,
        wait: PendingWait,
        wait_argv: &[Bytes],
        reply: Reply,
        now_ms: i64,
    ) -> Synced {
        let (conn, connected) = (wait.conn, wait.connected);
        match engine.execute_or_block(conn, wait_argv) {
            Some(frame) => {
                engine.disconnect(conn);
                match acks(frame, connected) {
                    Ok(a) => Synced::Done(Ok(reply), Some(a)),
                    Err(e) => Synced::Done(Err(e), None),
                }
            }
            None => {
                let wake = engine.block_deadline(conn).unwrap_or(now_ms);
                let ticket = self.next_ticket;
                self.next_ticket += 1;
                self.pending.insert(ticket, wait);
                Synced::Waiting {
                    ticket,
                    reply,
                    wake,
                }
            }
        }
    }

    /// The node `ticket`'s `WAIT` blocks on, if it is still pending.
    pub(crate) fn node(&self, ticket: u64) -> Option<usize> {
        self.pending.get(&ticket).map(|w| w.node)
    }

    /// Ends `ticket`'s `WAIT` as closed: its node failed over.
    pub(crate) fn close(&mut self, ticket: u64) -> BackendError {
        self.pending.remove(&ticket);
        closed()
    }

    /// Asks `ticket`'s `WAIT` on its node's `engine`, brought up to now: its count (or that its
    /// connection closed), or the time to ask again.
    pub(crate) fn poll(
        &mut self,
        ticket: u64,
        engine: &mut Engine,
        now_ms: i64,
    ) -> Result<Result<ReplicaAcks, BackendError>, i64> {
        let Some(wait) = self.pending.get(&ticket) else {
            return Ok(Err(closed()));
        };
        let (conn, connected) = (wait.conn, wait.connected);
        engine.catch_up();
        let done = match engine.take_unblocked_reply(conn) {
            Some(frame) => Some(acks(frame, connected)),
            None if !engine.is_connected(conn) => Some(Err(closed())),
            None => None,
        };
        match done {
            Some(result) => {
                engine.disconnect(conn);
                self.pending.remove(&ticket);
                Ok(result)
            }
            None => Err(engine
                .block_deadline(conn)
                .unwrap_or(now_ms + 1)
                .max(now_ms + 1)),
        }
    }
}
