//! What can go wrong with a lock operation, and what to do about it.

use super::{HoldMode, OwnerId};
use crate::backend::BackendError;
use crate::keys::Owner;
use crate::script::DecodeError;

/// Why a lock operation failed. "Not acquired" after a spent wait budget is not an error (it is
/// [`Done::NotAcquired`](super::Done::NotAcquired)).
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
         window; last error: {detail}); the lock may be held by this owner until its lease \
         expires: check the network to Redis, or raise response_timeout/latch_ttl"
    )]
    OutcomeUnknown {
        /// The lock.
        name: String,
        /// `acquire`, `unlock` or `force_unlock`.
        operation: &'static str,
        /// What the last attempt reported.
        detail: String,
    },
    /// The server refused the call, or it could not be sent.
    #[error("{operation} on lock {name:?} failed: {error}")]
    Backend {
        /// The lock.
        name: String,
        /// The operation.
        operation: &'static str,
        /// The backend's error.
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
        operation: &'static str,
        /// The reply.
        error: DecodeError,
    },
    /// A zero lease was given.
    #[error(transparent)]
    InvalidLease(#[from] crate::time::InvalidLease),
    /// The client's driver task has stopped (the `LockClient` was dropped, or its runtime shut
    /// down); every hold of it is to be treated as lost.
    #[error(
        "the lock client has stopped; its holds are no longer renewed: create a new LockClient"
    )]
    ClientStopped,
}
