//! What comes out of the machine: calls to run, completions, and what happened to each hold.
//!
//! [`HoldState`] is the one account of a hold's lifecycle: the machine reports its changes in
//! [`LockEvent::StateChanged`], and the async client shows the same value on a guard
//! (`LockGuard::status`) and resolves `LockGuard::lost` with it, so no driver re-derives a state
//! rule of its own.

use super::{CallId, HoldId, HoldMode, LockError, LockName, OpId, OwnerId};
use crate::keys::Owner;
use crate::script::ScriptCall;
use crate::time::{Millis, MonoTime};
use bytes::Bytes;
use std::fmt;

/// A call to run on the backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// A script ([`Backend::eval`](crate::Backend::eval)).
    Script(ScriptCall),
    /// A plain command ([`Backend::command`](crate::Backend::command)).
    Command(Vec<Bytes>),
}

/// Something the machine wants done or known.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Run this call and report its result with the same id.
    Call {
        /// The id to echo.
        id: CallId,
        /// The call.
        call: Call,
    },
    /// Subscribe to an unlock channel, then report [`Input::Subscribed`](super::Input::Subscribed). Subscriptions and
    /// unsubscriptions must be applied in the order they are output.
    Subscribe {
        /// The channel.
        channel: Bytes,
    },
    /// Unsubscribe from an unlock channel (no report).
    Unsubscribe {
        /// The channel.
        channel: Bytes,
    },
    /// An operation finished.
    Done {
        /// The operation.
        op: OpId,
        /// Its result.
        result: Result<Done, LockError>,
    },
    /// Something happened to a hold.
    Event(LockEvent),
}

/// The successful result of an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Done {
    /// The lock is held (taken or re-entered).
    Acquired(Acquired),
    /// The wait budget ran out while another owner held the lock (not an error).
    NotAcquired,
    /// The unlock was applied.
    Unlocked(UnlockOutcome),
    /// Whether a force unlock deleted the lock.
    ForceUnlocked(bool),
    /// Whether the lock is held by anyone.
    Locked(bool),
    /// The owner's hold count on the server.
    HoldCount(u64),
    /// The lock's remaining lease on the server.
    RemainingLease(RemainingLease),
    /// A fresh owner id.
    Owner(OwnerId),
}

/// A granted acquire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acquired {
    /// The lock's name.
    pub name: LockName,
    /// The hold.
    pub hold: HoldId,
    /// Its owner.
    pub owner: OwnerId,
    /// The owner string written into the lock (`client_id:owner_id`).
    pub owner_name: Owner,
    /// How many times the owner holds it now.
    pub count: u32,
    /// Until when the hold is certainly still the owner's (client clock).
    pub valid_until: MonoTime,
    /// The owner's newest fencing token, if it ever drew one.
    pub token: Option<u64>,
    /// The mode of the hold.
    pub mode: HoldMode,
}

/// What an unlock did on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnlockOutcome {
    /// The lock was deleted and its waiters woken.
    Released,
    /// One count was given back; the owner still holds the lock, with its lease re-applied.
    StillHeld,
}

/// A lock's time to live as the server reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemainingLease {
    /// Nobody holds the lock (`PTTL` -2).
    NotLocked,
    /// The lock has no TTL (`PTTL` -1): someone persisted it.
    NoTtl,
    /// It expires in this long.
    Remaining(Millis),
}

/// A hold, as events name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldRef {
    /// The hold.
    pub id: HoldId,
    /// The lock's name.
    pub name: LockName,
    /// The owner string (`client_id:owner_id`).
    pub owner: Owner,
}

/// Where one hold stands.
///
/// A hold starts `Valid`. It becomes `MayBeLost` when its `valid_until` passes without a confirmed
/// renewal (the lease may have run out on the server, or a renewal may have been applied with its
/// reply lost), and `Valid` again once a confirmed call (a renewal, a reentry, a reentrant
/// release) moves `valid_until` past the present. It ends `Lost` (the server says the owner no
/// longer holds the lock), `Released` (its last count was handed to an unlock) or `ClientStopped`.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HoldState {
    /// Held, and `valid_until` has not passed.
    Valid,
    /// `valid_until` passed without a confirmed renewal: the lease may be lost.
    MayBeLost,
    /// The server says the owner no longer holds the lock (a renewal or an unlock found no hold,
    /// or a force unlock deleted it).
    Lost,
    /// The hold's last count was handed to an unlock: renewal stopped as the release was sent
    /// (so no renewal can follow it, Redisson #7272). Whether the server deleted the key is that
    /// unlock's own result ([`UnlockOutcome`], or an error whose outcome may be unknown).
    Released,
    /// Nothing renews the hold any more: the driver that ran its machine stopped (the client was
    /// aborted, or its runtime shut down). Only a driver can know this; the machine never
    /// reports it.
    ClientStopped,
}

impl HoldState {
    /// Whether the hold has ended: it is no longer the owner's to rely on, and its state never
    /// changes again.
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            HoldState::Lost | HoldState::Released | HoldState::ClientStopped
        )
    }
}

impl fmt::Display for HoldState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HoldState::Valid => "valid",
            HoldState::MayBeLost => "possibly lost",
            HoldState::Lost => "lost",
            HoldState::Released => "released",
            HoldState::ClientStopped => "orphaned (its client stopped, nothing renews it)",
        })
    }
}

/// Something that happened to a hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockEvent {
    /// The hold was granted or re-entered.
    Acquired {
        /// The hold.
        hold: HoldRef,
        /// The count now.
        count: u32,
        /// The new `valid_until`.
        valid_until: MonoTime,
    },
    /// The watchdog confirmed a renewal.
    Renewed {
        /// The hold.
        hold: HoldRef,
        /// The new `valid_until`.
        valid_until: MonoTime,
    },
    /// `valid_until` moved for another reason: a reentry with another lease, a reentrant
    /// release, or a call that would lower it whose outcome is not known yet.
    ValidUntilChanged {
        /// The hold.
        hold: HoldRef,
        /// The new `valid_until`.
        valid_until: MonoTime,
    },
    /// The hold's [`HoldState`] changed. When a confirmed call moved `valid_until` and with it
    /// the state, this comes just before that call's `Acquired`, `Renewed` or
    /// `ValidUntilChanged`.
    StateChanged {
        /// The hold.
        hold: HoldRef,
        /// Its state from now on.
        state: HoldState,
        /// Its `valid_until` at the change (for `MayBeLost`, the one that passed).
        valid_until: MonoTime,
    },
    /// The hold reached `max_hold`; the watchdog no longer renews it.
    MaxHoldReached {
        /// The hold.
        hold: HoldRef,
        /// How long it had been held.
        held_for: Millis,
    },
}

impl LockEvent {
    /// The hold the event is about.
    pub fn hold(&self) -> &HoldRef {
        match self {
            LockEvent::Acquired { hold, .. }
            | LockEvent::Renewed { hold, .. }
            | LockEvent::ValidUntilChanged { hold, .. }
            | LockEvent::StateChanged { hold, .. }
            | LockEvent::MaxHoldReached { hold, .. } => hold,
        }
    }
}
