//! What happened in a run, as the checkers need it: the facts the world records as they happen,
//! the finished [`Run`] they end up in, and the [`Violation`]s the checkers name.
//!
//! Server-side grants and their ends (a read-write lock's per side), the tokens the server handed
//! out, client-side intervals of believed ownership, writes to the fenced resource, overlapping
//! writes to the unfenced one, the moments the server lost data, and the violations the online
//! checkers found while the run went on; the checkers turn them into the run's violations.
//!
//! This module is the bottom of the simulator's layers: the world writes it and the checkers read
//! it, and it names neither of them (a test in the suite holds it to that).

use lock_core::machine::RwSide;
use std::collections::BTreeMap;
use std::fmt;

mod run;

pub use run::{
    Delivery, ForeignMessage, ForeignRun, ForeignSpec, Mark, Message, QueueSnapshot, Run,
};

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

/// The rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Checker {
    /// (a) server-side exclusivity.
    ServerExclusive,
    /// (b) fencing tokens.
    Fencing,
    /// (c) client-side exclusivity.
    ClientExclusive,
    /// (d) no renewal after unlock.
    NoRenewAfterUnlock,
    /// (e) liveness.
    Liveness,
    /// (f) hold counts agree.
    HoldCounts,
    /// (g) a fair lock is granted in arrival order among live waiters.
    FairOrder,
    /// (h) on the server, no write hold of a read-write lock overlaps another owner's hold.
    ReadWriteServer,
    /// (h) by `valid_until`, no client believes it writes while another believes it holds.
    ReadWriteClient,
    /// The unfenced resource saw overlapping critical sections (expected outside the envelope).
    UnfencedOverlap,
}

impl fmt::Display for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Checker::ServerExclusive => "(a) server-side exclusivity",
            Checker::Fencing => "(b) fencing",
            Checker::ClientExclusive => "(c) client-side exclusivity",
            Checker::NoRenewAfterUnlock => "(d) no renewal after unlock",
            Checker::Liveness => "(e) liveness",
            Checker::HoldCounts => "(f) hold counts agree",
            Checker::FairOrder => "(g) fair grant order",
            Checker::ReadWriteServer => "(h) read-write exclusion on the server",
            Checker::ReadWriteClient => "(h) read-write exclusion by valid_until",
            Checker::UnfencedOverlap => "unfenced resource overlap",
        })
    }
}

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which rule.
    pub checker: Checker,
    /// When (simulation ms).
    pub at: u64,
    /// What, in words.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} ms: {}", self.checker, self.at, self.message)
    }
}
