//! Unlock: give back one count of a hold.
//!
//! The last count's unlock takes the hold off the watchdog *before* the release is sent, whatever
//! happens to the release afterwards (Redisson cancels renewal in the release's callback, which
//! left renewals running after a failed or lost unlock: #2515, #7272). A renewal batch already
//! queued but not yet sent is rebuilt without it (see `watchdog.rs`). Every attempt of one unlock
//! reuses its request id, so the unlock latch turns a repeat into a replay of the first answer
//! (Redisson #4871, #6651).
//!
//! The same operation, with no caller, undoes the grant of a cancelled acquire.
//!
//! An unlock that too few replicas acknowledged (the replica check, `replicas.rs`) answers
//! `LockError::ReplicasNotSynced`, whose outcome is unknown: a failover could bring the hold back.

use super::SharedKeys;
use super::attempts::{Answered, Attempts};
use super::kind::{Attempt, ReleaseKind, RwSide};
use super::replicas::Shortfall;
use super::{
    BackendError, Call, CallPurpose, Done, HoldId, HoldKey, HoldState, LockError, LockEvent,
    LockMachine, LockName, OpId, OpKind, Operation, OwnerId, UnlockOutcome,
};
use crate::keys::{Owner, RequestId};
use crate::reply::Reply;
use crate::script::release::ReleaseReply;
use crate::time::{Lease, MonoTime};

#[derive(Debug)]
pub(crate) struct ReleaseOp {
    pub key: HoldKey,
    /// The hold whose count this gives back; `None` when it undoes an uncounted grant.
    pub hold: Option<HoldId>,
    pub keys: SharedKeys,
    /// Plain, fair (which wakes the queue's head) or a read-write lock's side: the call its
    /// attempts send.
    pub kind: ReleaseKind,
    pub owner: Owner,
    pub lease: Lease,
    /// Whether this was the hold's last count.
    pub last: bool,
    /// The owner's count on the server before this release, as the client believes it.
    pub held: u32,
    pub attempts: Attempts,
}

impl ReleaseOp {
    /// A release that gives back a grant the client never counted (a cancelled acquire's).
    pub(crate) fn undo(
        key: HoldKey,
        keys: SharedKeys,
        kind: ReleaseKind,
        owner: Owner,
        lease: Lease,
        request: RequestId,
        held: u32,
    ) -> ReleaseOp {
        ReleaseOp {
            key,
            hold: None,
            keys,
            kind,
            owner,
            lease,
            last: false,
            held,
            attempts: Attempts::new(request),
        }
    }
}

impl LockMachine {
    pub(crate) fn start_release(
        &mut self,
        op: OpId,
        hold_id: HoldId,
        name: LockName,
        owner: OwnerId,
    ) {
        let mut key: HoldKey = (name, owner, None);
        if self.holds.get(&key).is_none_or(|h| h.id != hold_id) {
            // Not a plain hold: the id may be a read-write lock's, keyed by its side.
            for side in [RwSide::Read, RwSide::Write] {
                key.2 = Some(side);
                if self.holds.get(&key).is_some_and(|h| h.id == hold_id) {
                    break;
                }
                key.2 = None;
            }
        }
        let held = self
            .holds
            .get(&key)
            .is_some_and(|h| h.id == hold_id && h.count > 0);
        if !held {
            // A hold found lost (or already ended): sending a release could take a count of a
            // newer hold of the same owner, so the answer is given here.
            if let Some(count) = self.lost.get_mut(&hold_id) {
                *count -= 1;
                if *count == 0 {
                    self.lost.remove(&hold_id);
                }
            }
            let err = self.not_locked(&key);
            self.done(Some(op), Err(err));
            return;
        }
        let Some(hold) = self.holds.get_mut(&key) else {
            return;
        };
        let held = hold.count;
        hold.count -= 1;
        let last = hold.count == 0;
        let (keys, owner_name, mode) = (hold.keys.clone(), hold.owner.clone(), hold.mode);
        let kind = ReleaseKind::of_hold(hold.fair.clone(), hold.rw.clone(), key.2);
        if last {
            // Off the watchdog now, before the release is sent (fixes Redisson #7272, #2515).
            let timer = hold.validity_timer.take();
            let (hold_ref, valid_until) = (hold.to_ref(&key), hold.valid_until);
            let broken = self.broken == Some(super::BrokenRule::RenewAfterUnlock);
            hold.zombie = broken;
            self.timers.cancel(timer);
            self.event(LockEvent::StateChanged {
                hold: hold_ref,
                state: HoldState::Released,
                valid_until,
            });
            if !broken {
                self.drop_hold_if_idle(&key);
            }
        }
        let lease = self.lease_of(mode);
        let request = self.new_request_id();
        let release = ReleaseOp {
            key,
            hold: Some(hold_id),
            keys,
            kind,
            owner: owner_name,
            lease,
            last,
            held,
            attempts: Attempts::new(request),
        };
        let op = self.insert_op(Some(op), OpKind::Release(release));
        self.send_release_attempt(op);
    }

    op_of_kind!(release_op, Release, ReleaseOp);

    pub(crate) fn send_release_attempt(&mut self, op: u64) {
        let latch_ttl = self.config.latch_ttl();
        let now = self.now;
        let clock = self.fair_clock();
        let Some(r) = self.release_op(op) else {
            return;
        };
        let call = r.kind.call(&Attempt {
            keys: &r.keys,
            request: &r.attempts.request,
            owner: &r.owner,
            lease: r.lease,
            latch_ttl,
            held: r.held,
            clock,
        });
        // A read release re-applies no lease: it neither lowers nor raises the promise.
        let reapplies = r.kind.reapplies_lease();
        let reentrant = (!r.last && reapplies).then_some(r.hold).flatten();
        let (key, lease) = (r.key.clone(), r.lease);
        self.cancel_op_timer(op);
        let id = self.send_call(Call::Script(call), CallPurpose::Attempt { op, sent: now });
        if let Some(r) = self.release_op(op) {
            r.attempts.in_flight = Some(id);
        }
        if let Some(hold_id) = reentrant {
            self.lower_for_call(&key, hold_id, now, lease);
        }
    }

    pub(crate) fn on_release_result(
        &mut self,
        op: u64,
        sent: MonoTime,
        result: Result<Reply, BackendError>,
        shortfall: Option<Shortfall>,
    ) {
        let reply = match self.attempt_answered(op, sent, result, Operation::Unlock) {
            Some(Answered::Reply(reply)) => reply,
            Some(Answered::Failed(err)) => return self.finish_op(op, Err(err)),
            Some(Answered::Retrying) | None => return,
        };
        let Some(r) = self.release_op(op) else {
            return;
        };
        let anchor = r.attempts.anchor(sent);
        let (key, hold, last, lease) = (r.key.clone(), r.hold, r.last, r.lease);
        let reapplies = r.kind.reapplies_lease();
        let decoded = r.kind.decode(&reply);
        // The hold this reply can still say something about: a reentrant release of a live hold.
        let live = hold.filter(|id| {
            !last
                && self
                    .holds
                    .get(&key)
                    .is_some_and(|h| h.id == *id && h.count > 0)
        });
        let unsynced = |shortfall: Shortfall| LockError::ReplicasNotSynced {
            name: super::name_of(&key),
            operation: Operation::Unlock,
            acked: shortfall.acked,
            required: shortfall.required,
        };
        let result = match (decoded, shortfall) {
            // Applied on the primary only: a failover could bring the count back, so the unlock's
            // outcome is unknown and a reentrant release confirms no lease.
            (Ok(ReleaseReply::StillHeld | ReleaseReply::Released), Some(shortfall)) => {
                tracing::warn!(
                    lock = %super::name_of(&key),
                    owner = %key.1,
                    acked = shortfall.acked,
                    required = shortfall.required,
                    "unlock acknowledged by too few replicas; its outcome is unknown"
                );
                Err(unsynced(shortfall))
            }
            (Ok(ReleaseReply::StillHeld), None) => {
                if let Some(id) = live.filter(|_| reapplies) {
                    let valid_until = self.valid_until_after(anchor, lease);
                    let valid_until = self.promise_after_doubt(anchor, valid_until);
                    if let Some(hold) = self.set_valid_until(&key, id, valid_until) {
                        self.event(LockEvent::ValidUntilChanged { hold, valid_until });
                    }
                } else if last {
                    tracing::warn!(
                        lock = %super::name_of(&key),
                        owner = %key.1,
                        "the last unlock left a count on the server; the lock expires with its lease"
                    );
                }
                Ok(Done::Unlocked(UnlockOutcome::StillHeld))
            }
            (Ok(ReleaseReply::Released), None) => {
                if live.is_some() {
                    // The server had fewer counts than the client: the hold is gone.
                    self.mark_lost(&key);
                }
                Ok(Done::Unlocked(UnlockOutcome::Released))
            }
            (Ok(ReleaseReply::NotHeld), _) => {
                if live.is_some() {
                    self.mark_lost(&key);
                }
                Err(self.not_locked(&key))
            }
            (Err(error), _) => Err(LockError::UnexpectedReply {
                name: super::name_of(&key),
                operation: Operation::Unlock,
                error,
            }),
        };
        self.finish_op(op, result);
    }

    pub(crate) fn not_locked(&self, key: &HoldKey) -> LockError {
        LockError::NotLocked {
            name: super::name_of(key),
            client_id: self.client_id.clone(),
            owner_id: key.1,
        }
    }
}
