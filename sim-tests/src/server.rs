//! The server as the simulator drives it: one connection per client for calls, one for pub/sub,
//! commands run at a time the simulator chooses, and the server-side faults.
//!
//! Implemented by fake-redis's engine; the simulator never touches an async runtime.

use bytes::Bytes;
use lock_core::machine::Call;
use lock_core::{BackendError, Reply};

/// A connection's id on the simulated server.
pub type ConnId = u64;

/// The lock's state on the server, for the history: each owner's hold count, and the deadline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockState {
    /// Owner field → hold count, in the hash's order.
    pub owners: Vec<(Bytes, i64)>,
    /// The key's deadline (server unix ms), if it has one.
    pub deadline: Option<i64>,
}

/// What the simulator needs from a server.
pub trait SimServer {
    /// Opens a connection.
    fn connect(&mut self) -> ConnId;
    /// Closes a connection (its subscriptions end).
    fn disconnect(&mut self, conn: ConnId);
    /// Runs a call at server time `now_ms`, as a client library would (a script by `EVALSHA`,
    /// loading it on `NOSCRIPT`).
    fn call(&mut self, conn: ConnId, call: &Call, now_ms: i64) -> Result<Reply, BackendError>;
    /// Subscribes `conn` to `channel`.
    fn subscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64);
    /// Unsubscribes `conn` from `channel`.
    fn unsubscribe(&mut self, conn: ConnId, channel: &Bytes, now_ms: i64);
    /// Messages published since the last call: (receiving connection, channel, payload).
    fn take_messages(&mut self) -> Vec<(ConnId, Bytes, Bytes)>;
    /// The lock key's live state at `now_ms`, read without changing what commands see.
    fn lock_state(&mut self, key: &Bytes, now_ms: i64) -> Option<LockState>;
    /// Restarts without persistence: data and scripts gone, connections closed.
    fn restart(&mut self, now_ms: i64);
    /// Fails over to a replica missing the writes of the last `lag_ms`: scripts gone too.
    fn failover(&mut self, lag_ms: i64, now_ms: i64);
}
