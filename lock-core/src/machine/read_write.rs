//! The read-write lock: Redisson's `RReadWriteLock`, many readers or one writer on one hash.
//!
//! A read or write acquire is an acquire (`acquire.rs`: its attempts, its wait loop, its
//! cancellation) whose attempt is `rw_read_acquire` or `rw_write_acquire`; its hold is released by
//! `rw_read_release` or `rw_write_release` (the kinds in `kind.rs` choose them), and waits on the
//! lock's one channel,
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

use super::kind::{AcquireKind, RwSide};
use super::{AcquireRequest, LockMachine, LockName, OpId};
use crate::keys::Owner;
use crate::script::{ScriptCall, rw};
use crate::time::Lease;
use bytes::Bytes;

/// The renewal of read holds `(lock key, key prefix, owner)` with `lease`.
pub(crate) fn renew_call(lease: Lease, holds: &[(Bytes, Bytes, Owner)]) -> ScriptCall {
    rw::renew::call(
        lease,
        holds
            .iter()
            .map(|(lock, prefix, owner)| (lock, prefix, owner)),
    )
}

impl LockMachine {
    pub(crate) fn start_rw_acquire(&mut self, op: OpId, req: AcquireRequest, side: RwSide) {
        let keys = self.config.key_layout.read_write(&req.name);
        self.start_acquire(op, req, AcquireKind::ReadWrite(Box::new(keys), side));
    }

    pub(crate) fn start_rw_force_unlock(&mut self, op: OpId, name: LockName, write: bool) {
        let call = rw::force_unlock::call(&self.config.key_layout.read_write(&name), write);
        self.start_force_unlock_with(op, name, call);
    }
}
