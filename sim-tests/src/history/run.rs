//! What a finished run hands back: the trace, the history, the marks, each call's journey, and
//! what the foreign clients did.
//!
//! These are plain records, written by the world and read by the checkers, the tests and the
//! examples; they live here, beside the [`History`], so that the checkers read a run without
//! depending on the world that played it.

use super::{Checker, History, Interval, Violation};
use crate::server::LockState;
use bytes::Bytes;
use lock_core::machine::Call;
use lock_core::{BackendError, Reply};

/// The result of a run.
#[derive(Debug)]
pub struct Run {
    /// Every event, one line each: `[  10.001s] a  renew  L0 …`.
    pub trace: Vec<String>,
    /// FNV-1a of the trace: equal runs have equal hashes.
    pub trace_hash: u64,
    /// How many events were processed.
    pub events: u64,
    /// The broken rules.
    pub violations: Vec<Violation>,
    /// The facts the checkers read.
    pub history: History,
    /// Named moments for tests and the examples, in time order.
    pub marks: Vec<Mark>,
    /// Each client's id on the server (the first part of its owners), with the client's name.
    pub client_ids: Vec<(String, String)>,
    /// Every call's journey, in the order the calls were sent.
    pub messages: Vec<Message>,
    /// Every unlock message that reached a subscriber, in the order they arrived.
    pub deliveries: Vec<Delivery>,
    /// Each fair lock's queue every time it was seen changed, in time order.
    pub queues: Vec<QueueSnapshot>,
    /// What the foreign clients did, if the world had any.
    pub foreign: ForeignRun,
}

/// A fair lock's queue as the world read it after a call: its waiting owners, head first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSnapshot {
    /// Simulation ms.
    pub at: u64,
    /// The lock.
    pub lock: u32,
    /// The owners in the queue (`<client_id>:<owner_id>`), head first.
    pub owners: Vec<String>,
}

/// One call's journey between a client and the server: when it left, when the server applied it
/// and what it replied, whether either leg was lost, and when the reply got back. A leg that is
/// late by a delay fault shows as the gap between its ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The client that sent it (its index in the case).
    pub client: usize,
    /// The call.
    pub call: Call,
    /// When it left the client, simulation ms.
    pub sent: u64,
    /// The request was lost on the way to the server.
    pub request_lost: bool,
    /// When the server applied it (`None`: lost, or never got there before the horizon).
    pub applied: Option<u64>,
    /// What the server replied.
    pub reply: Option<Result<Reply, BackendError>>,
    /// The reply was lost on the way back.
    pub reply_lost: bool,
    /// When the reply reached the client (after any pause of the client's).
    pub answered: Option<u64>,
    /// The state of each key a script names, read just after the server applied it: the lock's
    /// owners and counts, and for the other keys (a latch, a counter) their deadline.
    pub keys_after: Vec<(Bytes, Option<LockState>)>,
}

/// An unlock message that reached a subscribed client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The client that heard it.
    pub client: usize,
    /// When the server published it, simulation ms.
    pub sent: u64,
    /// When the client heard it.
    pub arrived: u64,
}

/// A named moment of a run: what an actor (a client's name, or `server`) did or met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Simulation ms.
    pub at: u64,
    /// A client's name, or `server`.
    pub actor: String,
    /// What: acquire, renew, unlock, released, expire, lost, may-be-lost, pause, resume, crash,
    /// write, write-accepted, write-rejected, restart, failover, clock-jump, …
    pub what: String,
    /// The details (lock, TTL, token).
    pub detail: String,
}

impl Run {
    /// The client name behind an owner string `<client_id>:<owner_id>`.
    pub fn client_of(&self, owner: &str) -> Option<&str> {
        let id = owner.rsplit_once(':').map_or(owner, |(id, _)| id);
        self.client_ids
            .iter()
            .find(|(cid, _)| cid == id)
            .map(|(_, name)| name.as_str())
    }

    /// The violations of one checker.
    pub fn of(&self, checker: Checker) -> Vec<&Violation> {
        self.violations
            .iter()
            .filter(|v| v.checker == checker)
            .collect()
    }

    /// The first moment `actor` did `what`, if it did.
    pub fn first(&self, actor: &str, what: &str) -> Option<u64> {
        self.marks
            .iter()
            .find(|m| m.actor == actor && m.what == what)
            .map(|m| m.at)
    }

    /// Every moment `actor` did `what`.
    pub fn all(&self, actor: &str, what: &str) -> Vec<u64> {
        self.marks
            .iter()
            .filter(|m| m.actor == actor && m.what == what)
            .map(|m| m.at)
            .collect()
    }

    /// The trace as one text block.
    pub fn timeline(&self) -> String {
        self.trace.join("\n")
    }
}

/// A foreign client and its one cycle, in simulation ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignSpec {
    /// Its name in timelines.
    pub name: String,
    /// The lock's key (also the name of its unfenced resource).
    pub key: String,
    /// When it starts to acquire.
    pub start: u64,
    /// redis-py's `timeout`: the lease `SET … PX` gives the key.
    pub timeout: u64,
    /// redis-py's `sleep`: how long a blocking acquire waits before trying again.
    pub sleep: u64,
    /// How long it works while it believes it holds the lock.
    pub work: u64,
    /// A GC pause: from, and for how long.
    pub pause: Option<(u64, u64)>,
}

/// One command of a foreign client: when it left, when the server ran it and what it replied.
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignMessage {
    /// The foreign client (its index among the foreign clients).
    pub client: usize,
    /// The command as sent.
    pub argv: Vec<Bytes>,
    /// What it is for: `acquire`, `release` or `extend`.
    pub purpose: &'static str,
    /// When it left the client.
    pub sent: u64,
    /// When the server ran it.
    pub applied: Option<u64>,
    /// What the server replied.
    pub reply: Option<Result<Reply, BackendError>>,
    /// When the reply reached the client (after any pause).
    pub answered: Option<u64>,
}

/// What the foreign clients did: their names, commands, and the key's life on the server.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForeignRun {
    /// The clients, in the order given.
    pub specs: Vec<ForeignSpec>,
    /// Every command, in the order sent.
    pub messages: Vec<ForeignMessage>,
    /// Who held each key on the server, when (`lock` is the index of the key among
    /// [`ForeignRun::keys`], `who` the client's name); from the grant to its deletion or expiry.
    pub grants: Vec<Interval>,
    /// When each client believed it held its lock: from the grant to the release it sent.
    pub beliefs: Vec<Interval>,
    /// Writes to a resource while another client's critical section on it was open:
    /// (when, key, writer, the other).
    pub overlaps: Vec<(u64, String, String, String)>,
}

impl ForeignRun {
    /// The keys the foreign clients lock, in the order first named.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for s in &self.specs {
            if !keys.contains(&s.key) {
                keys.push(s.key.clone());
            }
        }
        keys
    }
}
