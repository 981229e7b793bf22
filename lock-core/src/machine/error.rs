//! What can go wrong with a lock operation, and what to do about it.
//!
//! Every message names the lock and says what to do next. An error that comes from the backend or
//! from a reply the lock could not read keeps it as its [`source`](std::error::Error::source), so
//! a caller can tell a refused connection from a server's error reply without parsing text.

use super::{BackendError, HoldMode, HoldState, OwnerId};
use crate::keys::Owner;
use crate::script::DecodeError;
use std::fmt;

/// The lock operation an error is about.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Taking or re-entering a lock.
    Acquire,
    /// Giving back one count of a hold.
    Unlock,
    /// Deleting a lock whoever holds it.
    ForceUnlock,
    /// Asking whether anyone holds a lock.
    IsLocked,
    /// Asking how many times an owner holds a lock.
    HoldCount,
    /// Asking for a lock's remaining lease.
    RemainingLease,
}

impl Operation {
    /// The operation's name, as the client's methods spell it (`acquire`, `unlock`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Operation::Acquire => "acquire",
            Operation::Unlock => "unlock",
            Operation::ForceUnlock => "force_unlock",
            Operation::IsLocked => "is_locked",
            Operation::HoldCount => "hold_count",
            Operation::RemainingLease => "remaining_lease",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl LockError {
    /// Whether the operation may have taken effect on the server although it failed: an unknown
    /// outcome, or an unlock whose replicas did not acknowledge it.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            LockError::OutcomeUnknown { .. } => true,
            LockError::ReplicasNotSynced { operation, .. } => *operation == Operation::Unlock,
            _ => false,
        }
    }
}

/// Why a lock operation failed. "Not acquired" after a spent wait budget is not an error (it is
/// [`Done::NotAcquired`](super::Done::NotAcquired)).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// A reentry asked for another lease mode than the hold it re-enters.
    #[error(
        "lock {name:?} is held by owner {owner} with {held}; re-entering it with {requested} is \
         refused: re-enter with the same kind of lease (no lease for a watchdog hold, a lease for \
         a fixed-lease hold)"
    )]
    LeaseModeMismatch {
        /// The lock.
        name: String,
        /// The owner.
        owner: Owner,
        /// The mode of the hold.
        held: HoldMode,
        /// The mode asked for.
        requested: HoldMode,
    },
    /// Unlock by an owner that does not hold the lock (Redisson's `IllegalMonitorStateException`).
    #[error(
        "attempt to unlock lock {name:?}, not locked by current owner by node id: {client_id} \
         owner-id: {owner_id}; its lease expired or it was lost (see the guard's lost signal) \
         before this unlock"
    )]
    NotLocked {
        /// The lock.
        name: String,
        /// This client's id.
        client_id: String,
        /// The owner id.
        owner_id: OwnerId,
    },
    /// No attempt of the call got an answer before its latch window closed: it may or may not
    /// have been applied.
    #[error(
        "the outcome of {operation} on lock {name:?} is unknown (no answer within the latch \
         window; last error: {last_error}); the lock may be held by this owner until its lease \
         expires: check the network to Redis, or raise response_timeout/latch_ttl"
    )]
    OutcomeUnknown {
        /// The lock.
        name: String,
        /// The operation (an acquire, an unlock or a force unlock).
        operation: Operation,
        /// What the last attempt reported (the error's source).
        #[source]
        last_error: BackendError,
    },
    /// The primary applied the call, but fewer replicas than `sync_replicas.min_replicas`
    /// acknowledged it within the replica check's timeout, so a failover now could lose it
    /// ([`SyncReplicas`](crate::config::SyncReplicas), Redisson's `NoSyncedSlavesException`).
    ///
    /// For an acquire, the lock was **not granted**: the primary's grant has been given back (a
    /// release carrying its count). For an unlock, the outcome is **unknown**
    /// ([`outcome_unknown`](LockError::outcome_unknown)): the primary released it, but a failover
    /// may bring the hold back until its lease runs out.
    #[error(
        "{operation} on lock {name:?} was acknowledged by {acked} of the {required} replicas \
         required within the replica check's timeout{}; check the replicas' health and lag, or \
         raise sync_replicas.timeout",
        match operation {
            Operation::Acquire => ", so it was not granted (the grant was given back)",
            Operation::Unlock => ": the primary applied it, but a failover could undo it",
            _ => "",
        }
    )]
    ReplicasNotSynced {
        /// The lock.
        name: String,
        /// The operation: an acquire or an unlock.
        operation: Operation,
        /// How many replicas acknowledged.
        acked: u32,
        /// How many were required.
        required: u32,
    },
    /// The server refused the call, or it could not be sent.
    #[error("{operation} on lock {name:?} failed: {error}")]
    Backend {
        /// The lock.
        name: String,
        /// The operation.
        operation: Operation,
        /// The backend's error (the error's source).
        #[source]
        error: BackendError,
    },
    /// The server answered something the lock does not expect (is the key used for something
    /// else?).
    #[error(
        "{operation} on lock {name:?}: {error}; is that key used by something other than this lock?"
    )]
    UnexpectedReply {
        /// The lock.
        name: String,
        /// The operation.
        operation: Operation,
        /// The reply (the error's source).
        #[source]
        error: DecodeError,
    },
    /// Work run under the lock ([`LockGuard::run`](crate::LockGuard::run)) was stopped because
    /// the lease was lost or may have been lost: another holder may have written meanwhile.
    #[error(
        "the work under lock {name:?} was stopped: the hold is {state}; another holder may have \
         taken the lock meanwhile, so treat what the work wrote as unprotected and acquire again"
    )]
    HoldLost {
        /// The lock.
        name: String,
        /// The hold's state when the work was stopped (never `Valid`).
        state: HoldState,
    },
    /// The lock's name is empty: it would live at the key `""`, which no one would recognise as a
    /// lock, and its helper keys would share the name of every other empty-named lock.
    #[error("a lock name must not be empty (the lock's key is its name); {operation} was refused")]
    EmptyName {
        /// The operation refused.
        operation: Operation,
    },
    /// A fair acquire asked for a fencing token: Redisson has no fenced fair lock, and the fair
    /// lock's scripts draw no token.
    #[error(
        "lock {name:?}: a fair acquire cannot be fenced (Redisson has no fenced fair lock, so no \
         token would be drawn); acquire the fair lock without fenced(), or fence a plain lock"
    )]
    FencedFairLock {
        /// The lock.
        name: String,
    },
    /// A lease no longer than the drift margin the lock keeps below it: the hold it granted would
    /// be "may be lost" from the start, whatever the round trip, so it is refused before anything
    /// is sent.
    #[error(
        "lock {name:?}: a lease of {lease} is not above the drift margin {margin} the lock keeps \
         below a lease (drift_rate × lease + drift_constant), so the hold could never be valid; \
         use a lease longer than the margin plus a round trip to Redis"
    )]
    LeaseTooShort {
        /// The lock.
        name: String,
        /// The lease asked for.
        lease: crate::time::Millis,
        /// The drift margin at that lease.
        margin: crate::time::Millis,
    },
    /// A lease of zero, or beyond what Redis accepts, was given.
    #[error(transparent)]
    InvalidLease(#[from] crate::time::InvalidLease),
    /// The client's driver task has stopped (the `LockClient` was dropped, or its runtime shut
    /// down); every hold of it is to be treated as lost.
    #[error(
        "the lock client has stopped; its holds are no longer renewed: create a new LockClient"
    )]
    ClientStopped,
}
