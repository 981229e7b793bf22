//! What goes into the machine: the application's requests, call results and pub/sub events.
//!
//! These are the machine's own types, not the async backend's: a driver (the async client, the
//! simulator) builds them from whatever it runs the calls on, and the machine never depends on
//! how. [`BackendError`] and [`PubSubEvent`] are also the vocabulary of the async
//! [`Backend`](crate::Backend) trait, which re-exports them, so a backend hands its results to
//! the machine unchanged.

use super::{CallId, HoldId, OpId, OwnerId, RwSide};
use crate::reply::Reply;
use crate::script::ReplicaAcks;
use crate::time::{Lease, Millis};
use bytes::Bytes;
use std::sync::Arc;

/// What a backend knows about a call that did not return a reply.
///
/// Exhaustive on purpose: the three variants are the three things a caller can know (the server
/// refused it, it never arrived, nobody can tell), and the lock's retry rule depends on telling
/// them apart.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The server ran the call and replied with this error (its full text, code first).
    #[error("the server replied with an error: {0}")]
    Server(String),
    /// The call certainly did not reach the server; it is safe to send again.
    #[error("the call was not applied: {0}")]
    NotApplied(String),
    /// The call may or may not have been applied (a timeout, a dropped connection). Repeat it only
    /// in a way that is idempotent (the lock's latches make its own calls so).
    #[error("the call's outcome is unknown (it may have been applied): {0}")]
    Unknown(String),
}

impl BackendError {
    /// Whether the call may have been applied without its reply reaching us.
    pub fn is_unknown(&self) -> bool {
        matches!(self, BackendError::Unknown(_))
    }
}

/// An event of the subscriber side.
///
/// Exhaustive on purpose: a message, or the two edges of a subscriber connection, are all the
/// waiters' wake-up rule needs to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PubSubEvent {
    /// A message published on a subscribed channel.
    Message {
        /// The channel.
        channel: Bytes,
        /// The payload (`0` for an unlock).
        payload: Bytes,
    },
    /// The subscriber connection was lost; messages published meanwhile are not delivered.
    SubscriptionLost,
    /// The subscriber connection is back and every channel is subscribed again.
    SubscriptionRestored,
}

/// A lock's name as requests and answers carry it: shared, so that handing a name to the machine,
/// and getting it back in a grant or an event, copies a count and never the text. A driver keeps
/// one per lock and clones it into each request; `.into()` makes one from a `&str` or a `String`.
pub type LockName = Arc<str>;

/// How long an acquire may wait for the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Until it gets it (`lock`).
    Forever,
    /// At most this long (`try_lock`); zero makes one attempt.
    Budget(Millis),
}

/// Take a lock or re-enter it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcquireRequest {
    /// The lock's name (its key).
    pub name: LockName,
    /// Who acquires: an existing owner (reentry), or `None` for a new owner drawn from the id
    /// source.
    pub owner: Option<OwnerId>,
    /// The lease: `None` for the watchdog.
    pub lease: Option<Lease>,
    /// How long to wait.
    pub wait: Wait,
    /// Whether to draw a fencing token.
    pub fenced: bool,
}

/// What the application asks of the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Acquire (or re-enter).
    Acquire(AcquireRequest),
    /// Give back one count of a hold.
    Release {
        /// The hold.
        hold: HoldId,
        /// The lock's name.
        name: LockName,
        /// Its owner.
        owner: OwnerId,
    },
    /// Delete the lock whoever holds it, and wake its waiters.
    ForceUnlock {
        /// The lock's name.
        name: LockName,
    },
    /// Whether anyone holds the lock (`EXISTS`).
    IsLocked {
        /// The lock's name.
        name: LockName,
    },
    /// How many times `owner` holds the lock (`HGET`).
    HoldCount {
        /// The lock's name.
        name: LockName,
        /// The owner.
        owner: OwnerId,
    },
    /// The lock's remaining time to live (`PTTL`).
    RemainingLease {
        /// The lock's name.
        name: LockName,
    },
    /// A fresh owner id, for an owner handle made before its first acquire.
    NewOwner,
    /// Acquire (or re-enter) a fair lock: waiters are served in arrival order, as Redisson's
    /// `RFairLock`. Its hold is released and renewed as any other.
    FairAcquire {
        /// The acquire; a fair lock draws no fencing token, so `fenced` is refused with
        /// [`LockError::FencedFairLock`](super::LockError::FencedFairLock).
        acquire: AcquireRequest,
        /// The client's clock, unix ms, that the fair lock's queue deadlines are reckoned in
        /// (the machine reads no clock; the first fair request's reading anchors its own).
        wall_ms: i64,
    },
    /// Delete the fair lock whoever holds it, and wake the waiter at the head of its queue.
    FairForceUnlock {
        /// The lock's name.
        name: LockName,
        /// The client's clock, unix ms (see [`Request::FairAcquire`]).
        wall_ms: i64,
    },
    /// Take (or re-enter) a read or the write hold of a read-write lock, as Redisson's
    /// `RReadWriteLock`. Its hold is released by [`Request::Release`] as any other.
    ReadWriteAcquire {
        /// The acquire; `fenced` is not supported on a read-write lock and is ignored.
        acquire: AcquireRequest,
        /// Which hold.
        side: RwSide,
    },
    /// Delete the read-write lock whoever holds it, if it is held on `side` (in read or in write
    /// mode), and wake its waiters.
    ReadWriteForceUnlock {
        /// The lock's name.
        name: LockName,
        /// The mode the lock must be in to be deleted.
        side: RwSide,
    },
}

/// Everything that can happen to the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The application asks for something; `op` numbers it.
    Request {
        /// The driver's number for this operation.
        op: OpId,
        /// What is asked.
        request: Request,
    },
    /// The application stopped waiting for `op` (its future was dropped). An acquire in flight is
    /// undone if it turns out to have succeeded.
    Cancel {
        /// The operation.
        op: OpId,
    },
    /// A call's result. The driver bounds every call by the response timeout and reports one that
    /// ran out as [`BackendError::Unknown`].
    CallResult {
        /// The call.
        id: CallId,
        /// Its reply or error.
        result: Result<Reply, BackendError>,
    },
    /// A call's reply with the replica count of its `WAIT`, for a script call that asked for
    /// one ([`ScriptCall::sync`](crate::script::ScriptCall::sync)); a driver that ran it without
    /// `WAIT` reports [`Input::CallResult`] instead, and the call is not checked.
    SyncedCallResult {
        /// The call.
        id: CallId,
        /// Its reply.
        reply: Reply,
        /// How many replicas had its writes.
        replicas: ReplicaAcks,
    },
    /// The result of an [`Output::Subscribe`](super::Output::Subscribe).
    Subscribed {
        /// The channel.
        channel: Bytes,
        /// Whether the subscription is in place.
        result: Result<(), BackendError>,
    },
    /// A pub/sub event.
    PubSub(PubSubEvent),
    /// The deadline from [`LockMachine::poll_timeout`](super::LockMachine::poll_timeout) was reached.
    Timeout,
}
