//! What happened in a run, as the checkers need it: the facts the world records as they happen.
//!
//! Server-side grants and their ends (a read-write lock's per side), the tokens the server handed out, client-side intervals of
//! believed ownership, writes to the fenced resource, overlapping writes to the unfenced one, the
//! moments the server lost data, and the violations the online checkers found while the run went
//! on. [`crate::checkers::check`] turns them into the run's violations.

use crate::checkers::Violation;
use lock_core::machine::RwSide;
use std::collections::BTreeMap;

/// A span of ownership, half-open: `[from, to)` in simulation ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Which lock.
    pub lock: u32,
    /// Who (an owner string on the server, a client name on the client side).
    pub who: String,
    /// Start.
    pub from: u64,
    /// End.
    pub to: u64,
}

/// A span of a read hold or the write hold of a read-write lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RwInterval {
    /// Whose and when: on the server the owner (a writer's field without its `:write`, so that a
    /// downgrading writer's two holds are one owner's), on the client side the client's name.
    pub span: Interval,
    /// Which hold.
    pub side: RwSide,
}

/// Everything the checkers read.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// (a): closed server-side grant intervals.
    pub server_grants: Vec<Interval>,
    /// Times at which the server lost data (restart, failover).
    pub data_loss: Vec<u64>,
    /// (b): tokens granted by the server, per lock, in order: (time, owner, token).
    pub tokens: BTreeMap<u32, Vec<(u64, String, u64)>>,
    /// (b): writes to the fenced resource: (time, lock, client, token, accepted).
    pub fenced_writes: Vec<(u64, u32, String, u64, bool)>,
    /// (c): closed client-side intervals.
    pub client_intervals: Vec<Interval>,
    /// Unfenced resource overlaps: (time, lock, writer, other holder).
    pub unfenced_overlaps: Vec<(u64, u32, String, String)>,
    /// (h): closed server-side holds of read-write locks (their grants are not in
    /// `server_grants`: readers share).
    pub rw_server_holds: Vec<RwInterval>,
    /// (h): closed client-side holds of read-write locks (not in `client_intervals`).
    pub rw_client_holds: Vec<RwInterval>,
    /// (d) and (f): violations found while running.
    pub online: Vec<Violation>,
}
