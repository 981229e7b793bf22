//! The kinds of acquire and release: which script each sends, and what its reply means.
//!
//! An acquire is plain, fenced, fair (with its queue's wait) or one side of a read-write lock; a
//! release is plain, fair or one side of a read-write lock. Everything else about them (the
//! attempts under one request id, the wait loop, cancellation, `valid_until`) is the same for every
//! kind and lives in `acquire.rs` and `release.rs`, which ask the kind for the call to send and
//! hand it the reply to decode. So the choice of script is made once, here, where a new kind is
//! one more case.
//!
//! This file names only scripts, keys and replies: the operations that use it are above it, and
//! the fair and read-write entry points (`fair.rs`, `read_write.rs`) build their kind here.

use crate::keys::{FairKeys, LockKeys, Owner, ReadWriteKeys, RequestId};
use crate::reply::Reply;
use crate::script::acquire::{self, AcquireReply, HolderTtl};
use crate::script::acquire_fenced::{self, FencedReply};
use crate::script::fair::acquire::FairAcquireReply;
use crate::script::release::{self, ReleaseReply};
use crate::script::{DecodeError, ScriptCall, fair, rw};
use crate::time::{Lease, Millis};
use bytes::Bytes;

/// Which hold of a read-write lock an acquire asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RwSide {
    /// A read hold: shared with other readers, refused while another owner writes.
    Read,
    /// The write hold: exclusive, refused while anyone else reads or writes.
    Write,
}

/// What one attempt of an acquire or release carries, whatever its kind.
pub(crate) struct Attempt<'a> {
    pub keys: &'a LockKeys,
    pub request: &'a RequestId,
    pub owner: &'a Owner,
    pub lease: Lease,
    pub latch_ttl: Millis,
    /// The owner's count on the server before this call, as the client knows it.
    pub held: u32,
    /// The fair clock in unix ms (`fair.rs`), which only the fair lock's scripts read.
    pub clock: i64,
}

/// The kind of an acquire: the script its attempts run, and how their replies read.
#[derive(Debug)]
pub(crate) enum AcquireKind {
    /// `acquire`.
    Plain,
    /// `acquire_fenced`: a grant carries a fencing token.
    Fenced,
    /// `fair_acquire`, with the acquire's place in the queue. Boxed, as the read-write lock's
    /// keys are: every operation carries its kind, and these two are the rare ones, several
    /// times the size of the rest of an operation.
    Fair(Box<FairWait>),
    /// `rw_read_acquire` or `rw_write_acquire`.
    ReadWrite(Box<ReadWriteKeys>, RwSide),
}

/// What an acquire attempt learned, whatever its kind.
pub(crate) enum Outcome {
    Granted { token: Option<u64> },
    Held(HolderTtl),
}

impl From<AcquireReply> for Outcome {
    fn from(reply: AcquireReply) -> Outcome {
        match reply {
            AcquireReply::Acquired => Outcome::Granted { token: None },
            AcquireReply::Held(ttl) => Outcome::Held(ttl),
        }
    }
}

impl AcquireKind {
    /// The side of a read-write lock this acquire asks for; `None` for any other lock.
    pub(crate) fn side(&self) -> Option<RwSide> {
        match self {
            AcquireKind::ReadWrite(_, side) => Some(*side),
            AcquireKind::Plain | AcquireKind::Fenced | AcquireKind::Fair(_) => None,
        }
    }

    /// The fair acquire's place in the queue, for a fair acquire.
    pub(crate) fn fair(&self) -> Option<&FairWait> {
        match self {
            AcquireKind::Fair(fair) => Some(fair),
            _ => None,
        }
    }

    /// The call of one attempt.
    pub(crate) fn call(&self, at: &Attempt<'_>) -> ScriptCall {
        let (keys, request, owner) = (at.keys, at.request, at.owner);
        let (lease, latch_ttl, held) = (at.lease, at.latch_ttl, at.held);
        match self {
            AcquireKind::Plain => acquire::call_from(keys, request, lease, owner, latch_ttl, held),
            AcquireKind::Fenced => {
                acquire_fenced::call_from(keys, request, lease, owner, latch_ttl, held)
            }
            AcquireKind::Fair(fair) => {
                let wait = fair.thread_wait;
                fair::acquire::call(&fair.keys, lease, owner, wait, at.clock, Some(held))
            }
            AcquireKind::ReadWrite(rw, RwSide::Read) => {
                rw::read_acquire::call(rw, request, lease, owner, latch_ttl, Some(held))
            }
            AcquireKind::ReadWrite(rw, RwSide::Write) => {
                rw::write_acquire::call(rw, request, lease, owner, latch_ttl, Some(held))
            }
        }
    }

    /// Decodes an attempt's reply. A fair acquire notes that it joined the queue.
    pub(crate) fn decode(&mut self, reply: &Reply) -> Result<Outcome, DecodeError> {
        match self {
            AcquireKind::Plain => acquire::decode(reply).map(Outcome::from),
            AcquireKind::Fenced => acquire_fenced::decode(reply).map(|r| match r {
                FencedReply::Acquired { token } => Outcome::Granted { token: Some(token) },
                FencedReply::Held(ttl) => Outcome::Held(ttl),
            }),
            AcquireKind::Fair(fair) => {
                fair::acquire::decode(reply).map(|r| match fair.holder_ttl(r) {
                    Some(ttl) => Outcome::Held(ttl),
                    None => Outcome::Granted { token: None },
                })
            }
            AcquireKind::ReadWrite(_, RwSide::Read) => {
                rw::read_acquire::decode(reply).map(Outcome::from)
            }
            AcquireKind::ReadWrite(_, RwSide::Write) => {
                rw::write_acquire::decode(reply).map(Outcome::from)
            }
        }
    }

    /// The channel whose message wakes this acquire while it waits: the lock's unlock channel, a
    /// fair waiter's own, or the read-write lock's one channel.
    pub(crate) fn channel(&self, keys: &LockKeys, owner: &Owner) -> Bytes {
        match self {
            AcquireKind::Fair(fair) => fair.keys.waiter_channel(owner),
            AcquireKind::ReadWrite(rw, _) => rw.channel.clone(),
            AcquireKind::Plain | AcquireKind::Fenced => keys.channel.clone(),
        }
    }

    /// The kind of release that gives back this acquire's grant.
    pub(crate) fn into_release(self) -> ReleaseKind {
        match self {
            AcquireKind::Plain | AcquireKind::Fenced => ReleaseKind::Plain,
            AcquireKind::Fair(fair) => ReleaseKind::Fair(Box::new(fair.keys)),
            AcquireKind::ReadWrite(rw, side) => ReleaseKind::ReadWrite(rw, side),
        }
    }
}

/// The kind of a release: the script its attempts run, and how their replies read.
#[derive(Debug)]
pub(crate) enum ReleaseKind {
    /// `release`.
    Plain,
    /// `fair_release`, which wakes the queue's head (boxed, as [`AcquireKind::Fair`] is).
    Fair(Box<FairKeys>),
    /// `rw_read_release` or `rw_write_release`.
    ReadWrite(Box<ReadWriteKeys>, RwSide),
}

impl ReleaseKind {
    /// The release of a hold of `side` that knows a fair lock's keys (`fair`) or a read-write
    /// lock's (`rw`); a fair lock's comes first, and a hold that knows neither is a plain lock's.
    pub(crate) fn of_hold(
        fair: Option<Box<FairKeys>>,
        rw: Option<Box<ReadWriteKeys>>,
        side: Option<RwSide>,
    ) -> ReleaseKind {
        match (fair, rw, side) {
            (Some(fair), _, _) => ReleaseKind::Fair(fair),
            (None, Some(rw), Some(side)) => ReleaseKind::ReadWrite(rw, side),
            _ => ReleaseKind::Plain,
        }
    }

    /// Whether a release that leaves counts re-applies the lease. A read release does not: each
    /// read count expires by its own key, and the lock's TTL follows the longest of them.
    pub(crate) fn reapplies_lease(&self) -> bool {
        !matches!(self, ReleaseKind::ReadWrite(_, RwSide::Read))
    }

    /// The call of one attempt.
    pub(crate) fn call(&self, at: &Attempt<'_>) -> ScriptCall {
        let (keys, request, owner) = (at.keys, at.request, at.owner);
        let (lease, latch_ttl, held) = (at.lease, at.latch_ttl, at.held);
        match self {
            ReleaseKind::Plain => release::call_from(keys, request, lease, owner, latch_ttl, held),
            ReleaseKind::Fair(fair) => {
                fair::release::call(fair, request, lease, owner, at.clock, latch_ttl, Some(held))
            }
            ReleaseKind::ReadWrite(rw, RwSide::Read) => {
                rw::read_release::call(rw, request, owner, latch_ttl, Some(held))
            }
            ReleaseKind::ReadWrite(rw, RwSide::Write) => {
                rw::write_release::call(rw, request, lease, owner, latch_ttl, Some(held))
            }
        }
    }

    /// Decodes an attempt's reply. A fair release's three answers are a plain release's, and it
    /// is decoded as one.
    pub(crate) fn decode(&self, reply: &Reply) -> Result<ReleaseReply, DecodeError> {
        match self {
            ReleaseKind::Plain | ReleaseKind::Fair(_) => release::decode(reply),
            ReleaseKind::ReadWrite(_, RwSide::Read) => rw::read_release::decode(reply),
            ReleaseKind::ReadWrite(_, RwSide::Write) => rw::write_release::decode(reply),
        }
    }
}

/// A fair acquire's place in the queue (`fair.rs`).
#[derive(Debug)]
pub(crate) struct FairWait {
    pub keys: FairKeys,
    /// The thread-wait time the attempts carry.
    pub thread_wait: Millis,
    /// Whether an attempt was answered "queued": if the acquire ends without the lock, it gives
    /// up its place.
    pub queued: bool,
}

impl FairWait {
    /// What the wait loop makes of a "queued" reply: a positive wait as the holder's TTL, `-1`
    /// as a lock without TTL; `0` or `-2` (the lock is free and it is another waiter's turn) a
    /// tenth of the thread-wait time, so that a waiter behind a head that went silent polls for
    /// the head's removal without spinning, while a release's message wakes it sooner.
    pub fn holder_ttl(&mut self, reply: FairAcquireReply) -> Option<HolderTtl> {
        let FairAcquireReply::Queued(wait) = reply else {
            return None;
        };
        self.queued = true;
        Some(match wait {
            -1 => HolderTtl::NoTtl,
            n if n > 0 => HolderTtl::Remaining(Millis(n as u64)),
            _ => HolderTtl::Remaining(Millis((self.thread_wait.as_u64() / 10).max(1))),
        })
    }
}
