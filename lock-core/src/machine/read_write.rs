//! The read-write lock: Redisson's `RReadWriteLock`, many readers or one writer on one hash.
//!
//! A read or write acquire is an acquire (`acquire.rs`: its attempts, its wait loop, its
//! cancellation) whose attempt is `rw_read_acquire` or `rw_write_acquire`; its hold is released by
//! `rw_read_release` or `rw_write_release`, and waits on the lock's one channel,
//! `<prefix>_rwlock:{name}`. A read release that ends the lock publishes `0`, which wakes one
//! waiter of each client, as a plain unlock does; a write release publishes `1`, which wakes every
//! waiter (`waiters.rs`), since several readers may come in at once.
//!
//! One owner has two holds of one lock, its read hold (the hash field `<owner>`) and its write
//! hold (`<owner>:write`), keyed apart in the machine. A writer may take read holds (the
//! downgrade: they outlive its write release), a reader may not take the write. The watchdog renews
//! write holds with the plain `renew_batch` (the writer's field is a plain hold's), and read holds
//! with `rw_renew`, which also re-applies the lease to each of the reader's timeout keys.
//!
//! A read hold's counts each expire by their own key, so a reentry never raises the hold's
//! `valid_until`: the count taken first expires first, and it is the one a release leaves longest.
//! A renewal re-applies the lease to all of them, and moves `valid_until` as for any hold.

use super::release::ReleaseOp;
use super::{AcquireRequest, LockMachine, OpId};
use crate::keys::{Owner, ReadWriteKeys, RequestId};
use crate::reply::Reply;
use crate::script::acquire::AcquireReply;
use crate::script::release::ReleaseReply;
use crate::script::{
    DecodeError, ScriptCall, rw_force_unlock, rw_read_acquire, rw_read_release, rw_renew,
    rw_write_acquire, rw_write_release,
};
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

/// The attempt of a read or write acquire.
pub(crate) fn acquire_call(
    keys: &ReadWriteKeys,
    side: RwSide,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
    held: u32,
) -> ScriptCall {
    let held = Some(held);
    match side {
        RwSide::Read => rw_read_acquire::call(keys, request, lease, owner, latch_ttl, held),
        RwSide::Write => rw_write_acquire::call(keys, request, lease, owner, latch_ttl, held),
    }
}

/// Decodes a read or write acquire's reply.
pub(crate) fn decode_acquire(side: RwSide, reply: &Reply) -> Result<AcquireReply, DecodeError> {
    match side {
        RwSide::Read => rw_read_acquire::decode(reply),
        RwSide::Write => rw_write_acquire::decode(reply),
    }
}

/// The attempt of a read or write release.
pub(crate) fn release_call(
    keys: &ReadWriteKeys,
    side: RwSide,
    release: &ReleaseOp,
    latch_ttl: Millis,
) -> ScriptCall {
    let (request, owner, held) = (
        &release.attempts.request,
        &release.owner,
        Some(release.held),
    );
    match side {
        RwSide::Read => rw_read_release::call(keys, request, owner, latch_ttl, held),
        RwSide::Write => {
            rw_write_release::call(keys, request, release.lease, owner, latch_ttl, held)
        }
    }
}

/// Decodes a read or write release's reply.
pub(crate) fn decode_release(side: RwSide, reply: &Reply) -> Result<ReleaseReply, DecodeError> {
    match side {
        RwSide::Read => rw_read_release::decode(reply),
        RwSide::Write => rw_write_release::decode(reply),
    }
}

/// The renewal of read holds `(lock key, key prefix, owner)` with `lease`.
pub(crate) fn renew_call(lease: Lease, holds: &[(Bytes, Bytes, Owner)]) -> ScriptCall {
    rw_renew::call(
        lease,
        holds
            .iter()
            .map(|(lock, prefix, owner)| (lock, prefix, owner)),
    )
}

impl LockMachine {
    pub(crate) fn start_rw_acquire(&mut self, op: OpId, req: AcquireRequest, side: RwSide) {
        let keys = self.config.key_layout.read_write(&req.name);
        self.start_acquire_kind(op, req, None, Some((keys, side)));
    }

    pub(crate) fn start_rw_force_unlock(&mut self, op: OpId, name: String, write: bool) {
        let call = rw_force_unlock::call(&self.config.key_layout.read_write(&name), write);
        self.start_force_unlock_with(op, name, call);
    }
}
