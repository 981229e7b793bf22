//! What the simulator's two servers, one node ([`crate::engine_server`]) and a cluster
//! ([`crate::cluster_server`]), do alike on fake-redis's engines: [`Nodes`], the wrapper both are
//! built on (the engines on one manual clock, the `WAIT`s a synced call left blocked, the
//! subscribed connections and whether anything may have been published), and the steps on one
//! engine: send a call as the lock's client does (`EVALSHA`, loading the script on `NOSCRIPT`),
//! take a reply as the lock's, read a lock's state and a fair lock's queue out of the keys, and
//! pick the published messages out of a subscriber's outbox.
//!
//! Where the servers differ (which engine a call goes to, which of them failed over) stays in
//! each; what is here is the same step on whichever engine they chose, so both servers' traces
//! come from one piece of code.

use crate::server::{ConnId, LockState, Synced};
use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, ManualClock, ReplicaLag, Value};
use lock_core::fake::FrameExt;
use lock_core::machine::Call;
use lock_core::script::{ReplicaAcks, ReplicaWait};
use lock_core::{BackendError, Reply};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// The engines a server drives, all on one manual clock, and what both servers keep about them
/// alike.
pub(crate) struct Nodes {
    /// Every node's engine, in the server's order.
    pub(crate) engines: Vec<Arc<Mutex<Engine>>>,
    /// The clock every engine reads, set before each step to the world's time.
    clock: ManualClock,
    /// The `WAIT`s synced calls left blocked.
    pub(crate) waits: Waits,
    /// The world's connections that subscribed to a channel.
    pub(crate) subscribers: BTreeSet<ConnId>,
    /// Whether a call since the last [`Nodes::take_published`] may have published (a release, a
    /// force unlock, any plain command): only then are the subscribers' outboxes worth reading.
    may_have_published: bool,
    /// Where the calls since the last look may have published: the channels named, unless one
    /// of them could have published anywhere.
    published_on: Vec<Bytes>,
    /// Whether a call since the last look could have published on a channel it does not name
    /// where [`publishing_channel`] finds it (a plain command, a fair lock's release).
    published_anywhere: bool,
    /// Per channel, the world's connections that subscribed to it and did not unsubscribe: all
    /// that a publish on it can reach (a connection closed since stays listed, and is found
    /// empty).
    channel_subscribers: BTreeMap<Bytes, BTreeSet<ConnId>>,
}

impl Nodes {
    /// `engines`, which read `clock`, with nothing waiting and nobody subscribed.
    pub(crate) fn new(clock: ManualClock, engines: Vec<Arc<Mutex<Engine>>>) -> Nodes {
        Nodes {
            engines,
            clock,
            waits: Waits::default(),
            subscribers: BTreeSet::new(),
            may_have_published: false,
            published_on: Vec::new(),
            published_anywhere: false,
            channel_subscribers: BTreeMap::new(),
        }
    }

    /// Node `node`'s engine.
    pub(crate) fn engine(&self, node: usize) -> MutexGuard<'_, Engine> {
        lock(&self.engines[node])
    }

    /// Brings every engine's clock to `now_ms`.
    pub(crate) fn at(&self, now_ms: i64) {
        self.clock.set(now_ms);
    }

    /// Notes that `call` is about to be sent: whether it may publish.
    pub(crate) fn sending(&mut self, call: &Call) {
        let publishes = matches!(call, Call::Command(_)) || publishes(call);
        self.may_have_published |= publishes;
        if publishes {
            match publishing_channel(call) {
                Some(channel) => self.published_on.push(channel.clone()),
                None => self.published_anywhere = true,
            }
        }
    }

    /// Whether a call since the last look may have published; the next look starts afresh.
    pub(crate) fn take_published(&mut self) -> bool {
        self.published_on.clear();
        self.published_anywhere = false;
        std::mem::take(&mut self.may_have_published)
    }

    /// Notes that `conn` subscribed to `channel`.
    pub(crate) fn subscribed(&mut self, conn: ConnId, channel: &Bytes) {
        self.subscribers.insert(conn);
        self.channel_subscribers
            .entry(channel.clone())
            .or_default()
            .insert(conn);
    }

    /// Notes that `conn` unsubscribed from `channel`.
    pub(crate) fn unsubscribed(&mut self, conn: ConnId, channel: &Bytes) {
        if let Some(conns) = self.channel_subscribers.get_mut(channel) {
            conns.remove(&conn);
        }
    }

    /// The subscribed connections whose outboxes a call since the last look may have published
    /// to, in ascending order, each once: every subscriber when a call could have published on
    /// any channel, only the subscribers of the channels named otherwise, none if nothing
    /// published. The next look starts afresh.
    pub(crate) fn take_published_to(&mut self) -> Vec<ConnId> {
        let anywhere = std::mem::take(&mut self.published_anywhere);
        let channels = std::mem::take(&mut self.published_on);
        if !std::mem::take(&mut self.may_have_published) {
            return Vec::new();
        }
        if anywhere {
            return self.subscribers.iter().copied().collect();
        }
        let mut conns: Vec<ConnId> = channels
            .iter()
            .filter_map(|c| self.channel_subscribers.get(c))
            .flatten()
            .copied()
            .filter(|conn| self.subscribers.contains(conn))
            .collect();
        if channels.len() > 1 {
            conns.sort_unstable();
            conns.dedup();
        }
        self.published_on = channels;
        self.published_on.clear();
        conns
    }

    /// Sends a synced call's `WAIT` on `pending.node`, after its script answered `reply`.
    pub(crate) fn send_wait(
        &mut self,
        pending: PendingWait,
        wait: &ReplicaWait,
        reply: Reply,
        now_ms: i64,
    ) -> Synced {
        let mut engine = lock(&self.engines[pending.node]);
        self.waits
            .send(&mut engine, pending, &wait.argv(), reply, now_ms)
    }

    /// [`crate::server::SimServer::poll_wait`] for both servers: `ticket`'s count, or the time to
    /// ask again; closed if its node `failed_over`.
    pub(crate) fn poll_wait(
        &mut self,
        ticket: u64,
        now_ms: i64,
        failed_over: impl FnOnce(usize) -> bool,
    ) -> Result<Result<ReplicaAcks, BackendError>, i64> {
        let Some(node) = self.waits.node(ticket) else {
            return Ok(Err(closed()));
        };
        if failed_over(node) {
            // The primary it waited on failed over: its connections closed.
            return Ok(Err(self.waits.close(ticket)));
        }
        self.at(now_ms);
        let mut engine = lock(&self.engines[node]);
        self.waits.poll(ticket, &mut engine, now_ms)
    }

    /// A clock jump: every node's clock, the replicas too (they hide expired keys by their own).
    pub(crate) fn jump_clocks(&self, delta_ms: i64) {
        for engine in &self.engines {
            lock(engine).jump_clock(delta_ms);
        }
    }
}

/// Whether a call is the lock's script that may publish (a release, a force unlock).
pub(crate) fn publishes(call: &Call) -> bool {
    matches!(call, Call::Script(s) if matches!(
        s.script.name,
        "release"
            | "force_unlock"
            | "fair_release"
            | "fair_force_unlock"
            | "rw_read_release"
            | "rw_write_release"
            | "rw_force_unlock"
    ))
}

/// The channel a call of the lock's scripts publishes its unlock message on, when the script
/// publishes only there: the release, the force unlock and the read-write lock's three publish
/// on `KEYS[2]`, the lock's channel. A fair lock's scripts publish on the next waiter's channel,
/// which they read from the queue: `None`, as for anything else.
fn publishing_channel(call: &Call) -> Option<&Bytes> {
    match call {
        Call::Script(s)
            if matches!(
                s.script.name,
                "release"
                    | "force_unlock"
                    | "rw_read_release"
                    | "rw_write_release"
                    | "rw_force_unlock"
            ) =>
        {
            s.keys.get(1)
        }
        _ => None,
    }
}

/// Sends `call` by `exec` as the lock's client does: a command as it is, a script by `EVALSHA`,
/// and on `NOSCRIPT`, as the `redis` crate's `Script` does, `SCRIPT LOAD` and `EVALSHA` again.
pub(crate) fn send(mut exec: impl FnMut(&[Bytes]) -> Frame, call: &Call) -> Frame {
    match call {
        Call::Command(argv) => exec(argv),
        Call::Script(s) => {
            let argv = s.evalsha_argv();
            let result = exec(&argv);
            if result
                .error_text()
                .is_some_and(|e| e.starts_with("NOSCRIPT"))
            {
                exec(&s.script.load_argv());
                return exec(&argv);
            }
            result
        }
    }
}

/// `SUBSCRIBE` or `UNSUBSCRIBE` (`verb`) `channel` on connection `id` of `engine`, its
/// confirmation taken off the outbox.
pub(crate) fn subscription(
    engine: &mut Engine,
    id: ClientId,
    verb: &'static [u8],
    channel: &Bytes,
) {
    engine.execute(id, &[Bytes::from_static(verb), channel.clone()]);
    engine.drain_outbox(id);
}

/// The messages published to connection `id` of `engine` (the world's `conn`), into `out`.
pub(crate) fn drain_messages(
    engine: &mut Engine,
    conn: ConnId,
    id: ClientId,
    out: &mut Vec<(ConnId, Bytes, Bytes)>,
) {
    for (channel, payload) in engine.drain_outbox(id).into_iter().filter_map(message) {
        out.push((conn, channel, payload));
    }
}

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
pub(crate) fn lock_state(value: &Value, deadline: Option<i64>) -> LockState {
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
