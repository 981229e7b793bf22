//! The server as the simulator drives it: two connections per client (calls, pub/sub), commands
//! run at a time the simulator chooses, and the server-side faults, in fake-redis's words.
//!
//! Implemented by fake-redis's engine; the simulator never touches an async runtime.

use bytes::Bytes;
use fake_redis::{Fault, NodeId};
use lock_core::machine::Call;
use lock_core::script::{ReplicaAcks, ReplicaWait};
use lock_core::{BackendError, Reply};

/// What became of a call that carries the replica check's `WAIT`
/// ([`SimServer::call_synced`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Synced {
    /// Answered now: the script's result, and the replicas' count when a `WAIT` was sent (None:
    /// the server has no replica, so none was, and the call is not checked).
    Done(Result<Reply, BackendError>, Option<ReplicaAcks>),
    /// The script ran and its `WAIT` blocks: ask [`SimServer::poll_wait`] with `ticket` at `wake`
    /// (server time before jumps, the next replica arrival or the timeout).
    Waiting {
        /// Which wait.
        ticket: u64,
        /// The script's reply, sent back with the count.
        reply: Reply,
        /// When to ask again.
        wake: i64,
    },
}

/// The server's unix time at simulation time 0.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// A connection's id on the simulated server.
pub type ConnId = u64;

/// The lock's state on the server, for the history: each owner's hold count, and the deadline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockState {
    /// Owner field → hold count, in the hash's order. On a read-write lock a reader's field is
    /// its owner and a writer's `<owner>:write`.
    pub owners: Vec<(Bytes, i64)>,
    /// A read-write lock's `mode` field (`read` or `write`), which is not an owner.
    pub mode: Option<Bytes>,
    /// The key's deadline (server unix ms), if it has one.
    pub deadline: Option<i64>,
}

/// What the simulator needs from a server.
pub trait SimServer {
    /// Opens a connection for the client fault plans know as `node` (its crash closes it).
    fn connect(&mut self, node: NodeId) -> ConnId;
    /// Runs a call at server time `now_ms`, as a client library would (a script by `EVALSHA`,
    /// loading it on `NOSCRIPT`).
    fn call(&mut self, conn: ConnId, call: &Call, now_ms: i64) -> Result<Reply, BackendError>;
    /// Runs a call that asks for the replica check's `WAIT` (`wait`), as the lock's backends do:
    /// the script, then `WAIT` on the same connection when the primary has replicas. A server
    /// without replicas runs the call alone.
    fn call_synced(&mut self, conn: ConnId, call: &Call, wait: ReplicaWait, now_ms: i64) -> Synced {
        let _ = wait;
        Synced::Done(self.call(conn, call, now_ms), None)
    }
    /// At server time `now_ms`, the end of the blocked `WAIT` `ticket`: the replicas' count (or
    /// the error that ended it: its connection closed), or the next time to ask.
    fn poll_wait(
        &mut self,
        ticket: u64,
        now_ms: i64,
    ) -> Result<Result<ReplicaAcks, BackendError>, i64> {
        let _ = (ticket, now_ms);
        Ok(Err(BackendError::Unknown("no such wait".into())))
    }
    /// The node (its index in the topology's port order: a cluster's primaries first, then
    /// their replicas; or the primary, then its replicas) that `call` leaves `conn` for, as the
    /// client's routing sees it now, for the network to judge a partition by. `None`: one node.
    fn route(&mut self, conn: ConnId, call: &Call) -> Option<usize> {
        let _ = (conn, call);
        None
    }
    /// Cuts node `node` (numbered as [`SimServer::route`] numbers them) off from the others of
    /// its shard in `[from_ms, until_ms)` (server times before jumps): a primary's write stream
    /// stops reaching its replicas, or a replica's stops reaching it, and what it holds arrives
    /// when the partition heals, as a replica's partial resync brings it.
    fn isolate(&mut self, node: usize, from_ms: i64, until_ms: i64) {
        let _ = (node, from_ms, until_ms);
    }
    /// What the server's side of the client did since the last call that the trace should show
    /// (a cluster client following a redirection), one line each.
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Subscribes `conn` to `channel`.
    fn subscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64);
    /// Unsubscribes `conn` from `channel`.
    fn unsubscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64);
    /// Messages published since the last call: (receiving connection, channel, payload).
    fn take_messages(&mut self) -> Vec<(ConnId, Bytes, Bytes)>;
    /// The lock key's live state at `now_ms`, read without changing what commands see.
    fn lock_state(&mut self, key: &Bytes, now_ms: i64) -> Option<LockState>;
    /// A fair lock's queue at `now_ms`, in order, each waiter with its score in the `timeouts`
    /// sorted set (its deadline, unix ms), read without changing what commands see.
    fn fair_queue(
        &mut self,
        queue: &Bytes,
        timeouts: &Bytes,
        now_ms: i64,
    ) -> Vec<(Bytes, Option<i64>)>;
    /// Carries out a server-side fault (one with a [`Fault::server_time`]: a crash, a restart
    /// without persistence, a failover, a clock jump) now, at server time `now_ms`, whatever time
    /// the fault names.
    fn fault(&mut self, fault: Fault, now_ms: i64);
    /// How far the server's clock has jumped in all, ms (its times read this much ahead of the
    /// clock the simulator sets).
    fn clock_jump(&self) -> i64;
}
