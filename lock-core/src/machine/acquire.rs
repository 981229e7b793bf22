//! An acquire call: its registration, its attempts, and the wait loop.
//!
//! The wait loop is Redisson's, with its known gaps closed: try once; if held, subscribe to the
//! unlock channel, then try again (a release between the first try and the subscription would
//! otherwise be missed), then wait for a message or `min(ttl, remaining wait, wait_round_cap)` and
//! try again. The holder's key lives through its deadline millisecond (`PTTL` replies 0 there), so
//! a ttl of 0 waits 1 ms, never 0 (no spin); a ttl of -1 (no TTL) waits the cap instead of forever.
//! Budgets use the monotonic clock (Redisson uses the wall clock).
//!
//! Cancellation leaves nothing behind: a cancelled acquire whose attempt may have been applied
//! keeps resolving it under the same request id, and releases the grant if there was one; its
//! grant is never counted, so the watchdog never renews it (Redisson #2714, #4368, #7272). An
//! acquire that ends with its outcome unknown sends the same release, carrying the count a grant
//! would have made, so it undoes a grant that was applied and touches nothing otherwise. An
//! attempt still in the network when that release lands can still be applied after it; the grant
//! then lives out its lease.
//!
//! A grant that too few replicas acknowledged (the replica check, `replicas.rs`) is not a grant:
//! the caller gets `LockError::ReplicasNotSynced`, and the grant is given back by the same release.

use super::SharedKeys;
use super::attempts::{Answered, Attempts};
use super::hold::Hold;
use super::kind::{AcquireKind, Attempt, Outcome, RwSide};
use super::release::ReleaseOp;
use super::replicas::Shortfall;
use super::{
    AcquireRequest, Acquired, BackendError, Call, CallPurpose, Done, HoldId, HoldKey, HoldMode,
    LockError, LockEvent, LockMachine, OpId, OpKind, Operation, Wait, name_of,
};
use crate::keys::Owner;
use crate::reply::Reply;
use crate::script::acquire::HolderTtl;
use crate::time::{Millis, MonoTime};
use bytes::Bytes;
use std::collections::btree_map::Entry;

#[derive(Debug)]
pub(crate) struct AcquireOp {
    /// The hold's key; its name is the request's, handed back in the grant.
    pub key: HoldKey,
    pub keys: SharedKeys,
    pub owner: Owner,
    pub mode: HoldMode,
    /// Plain, fenced, fair or read-write: the call its attempts send.
    pub kind: AcquireKind,
    /// The end of the wait budget; `None` waits forever.
    pub deadline: Option<MonoTime>,
    pub attempts: Attempts,
    pub stage: Stage,
    /// The unlock channel, once this acquire waits on it.
    pub waiting_on: Option<Bytes>,
    /// A restored subscription asked every waiter to retry while this one was mid-attempt.
    pub wake_pending: bool,
    /// The current attempt was started by an unlock message (passed on if this one goes away).
    pub woken_by_message: bool,
    pub abandoned: bool,
    pub last_ttl: Option<HolderTtl>,
    /// The owner's count as the last attempt carried it: a grant of that attempt took the
    /// server's count one above it.
    pub held_at_send: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// An attempt is in flight.
    Calling,
    /// The last attempt failed; the next goes out when the timer fires.
    RetryWait,
    /// Waiting for the unlock channel's subscription before trying again.
    AwaitSubscription,
    /// Waiting for an unlock message or the end of the round.
    Sleeping,
}

impl LockMachine {
    /// An acquire of `kind`, which the caller chose (the request's `fenced` among the rest).
    pub(crate) fn start_acquire(&mut self, op: OpId, req: AcquireRequest, kind: AcquireKind) {
        // A lease the drift margin swallows whole could never be valid: refused before anything
        // is sent. One the round trip eats is granted and says so (`grant`).
        if let Some(lease) = req.lease {
            let margin = self.config.drift_margin(lease);
            if lease.millis() <= margin {
                let err = LockError::LeaseTooShort {
                    name: req.name.to_string(),
                    lease: lease.millis(),
                    margin,
                };
                self.done(Some(op), Err(err));
                return;
            }
        }
        let owner_id = req.owner.unwrap_or_else(|| self.new_owner());
        let mode = req.lease.map_or(HoldMode::Watchdog, HoldMode::Lease);
        let owner = self.owner(owner_id);
        let keys = self.keys(&req.name);
        let key: HoldKey = (req.name, owner_id, kind.side());
        if let Some(hold) = self.holds.get(&key) {
            let mismatch = matches!(
                (hold.mode, mode),
                (HoldMode::Watchdog, HoldMode::Lease(_)) | (HoldMode::Lease(_), HoldMode::Watchdog)
            );
            if mismatch {
                let err = LockError::LeaseModeMismatch {
                    name: name_of(&key),
                    owner,
                    held: hold.mode,
                    requested: mode,
                };
                self.done(Some(op), Err(err));
                return;
            }
        } else {
            let id = self.new_hold_id();
            let hold = Hold::new(id, keys.clone(), owner.clone(), mode);
            self.holds.insert(key.clone(), hold);
        }
        // Registered before the acquire is sent (Redisson #7272): from here on, an unlock or a
        // cancellation finds the hold, whatever order the replies come back in.
        if let Some(hold) = self.holds.get_mut(&key) {
            hold.pending += 1;
            match &kind {
                AcquireKind::Fair(fair) => hold.fair = Some(Box::new(fair.keys.clone())),
                AcquireKind::ReadWrite(rw, _) => hold.rw = Some(rw.clone()),
                AcquireKind::Plain | AcquireKind::Fenced => {}
            }
        }
        if mode == HoldMode::Watchdog {
            self.ensure_watchdog();
        }
        let request = self.new_request_id();
        let deadline = match req.wait {
            Wait::Forever => None,
            Wait::Budget(budget) => Some(self.now + budget),
        };
        let acquire = AcquireOp {
            key,
            keys,
            owner,
            mode,
            kind,
            deadline,
            attempts: Attempts::new(request),
            stage: Stage::Calling,
            waiting_on: None,
            wake_pending: false,
            woken_by_message: false,
            abandoned: false,
            last_ttl: None,
            held_at_send: 0,
        };
        let key = self.insert_op(Some(op), OpKind::Acquire(acquire));
        self.send_acquire_attempt(key);
    }

    op_of_kind!(acquire_op, Acquire, AcquireOp);

    pub(crate) fn send_acquire_attempt(&mut self, op: u64) {
        let latch_ttl = self.config.latch_ttl();
        let now = self.now;
        let clock = self.fair_clock();
        let Some(mode) = self.acquire_op(op).map(|a| a.mode) else {
            return;
        };
        let lease = self.lease_of(mode);
        let holds = &self.holds;
        let Some(a) = self.ops.get_mut(op).and_then(|o| match &mut o.kind {
            OpKind::Acquire(a) => Some(a),
            _ => None,
        }) else {
            return;
        };
        // The count the server should have now, so that a copy of this attempt delivered after
        // its latch expired cannot count twice.
        let held = holds.get(&a.key).map_or(0, |h| h.count);
        a.held_at_send = held;
        let script = a.kind.call(&Attempt {
            keys: &a.keys,
            request: &a.attempts.request,
            owner: &a.owner,
            lease,
            latch_ttl,
            held,
            clock,
        });
        let key = a.key.clone();
        self.cancel_op_timer(op);
        let id = self.send_call(Call::Script(script), CallPurpose::Attempt { op, sent: now });
        if let Some(a) = self.acquire_op(op) {
            a.attempts.in_flight = Some(id);
            a.stage = Stage::Calling;
        }
        // A reentry with a shorter lease lowers the key's TTL: promise less from now on.
        if let Some(hold_id) = self.holds.get(&key).filter(|h| h.count > 0).map(|h| h.id) {
            self.lower_for_call(&key, hold_id, now, lease);
        }
    }

    pub(crate) fn on_acquire_result(
        &mut self,
        op: u64,
        sent: MonoTime,
        result: Result<Reply, BackendError>,
        shortfall: Option<Shortfall>,
    ) {
        let reply = match self.attempt_answered(op, sent, result, Operation::Acquire) {
            Some(Answered::Reply(reply)) => reply,
            Some(Answered::Retrying) => {
                if let Some(a) = self.acquire_op(op) {
                    a.stage = Stage::RetryWait;
                }
                return;
            }
            Some(Answered::Failed(err)) => return self.end_acquire(op, Err(err)),
            None => return,
        };
        let Some(a) = self.acquire_op(op) else {
            return;
        };
        let outcome = a.kind.decode(&reply);
        // The name is spelled out only for an error.
        let outcome = outcome.map_err(|error| (error, a.keys.name()));
        match outcome {
            Ok(Outcome::Granted { token }) => match shortfall {
                None => self.grant(op, sent, token),
                Some(shortfall) => self.refuse_unsynced_grant(op, shortfall),
            },
            Ok(Outcome::Held(ttl)) => self.on_held(op, ttl),
            Err((error, name)) => {
                let err = LockError::UnexpectedReply {
                    name,
                    operation: Operation::Acquire,
                    error,
                };
                self.end_acquire(op, Err(err));
            }
        }
    }

    /// The server granted the acquire (taken, re-entered, or a replay of an earlier grant).
    fn grant(&mut self, op: u64, sent: MonoTime, token: Option<u64>) {
        let Some((reply_to, a)) = self.take_acquire(op, true) else {
            return;
        };
        let lease = self.lease_of(a.mode);
        if a.abandoned {
            if let Some(hold) = self.holds.get_mut(&a.key) {
                hold.pending = hold.pending.saturating_sub(1);
            }
            self.give_back_grant(a);
            return;
        }
        let now = self.now;
        // One look-up for the record, which the rest of the grant reads and writes; the hold ids
        // drawn are `new_hold_id`'s, in the same order.
        let next_hold = &mut self.next_hold;
        let hold = match self.holds.entry(a.key.clone()) {
            Entry::Occupied(entry) => {
                let hold = entry.into_mut();
                hold.pending = hold.pending.saturating_sub(1);
                hold
            }
            Entry::Vacant(entry) => {
                // Registration keeps the record while the acquire is pending; recreate it rather
                // than leave the caller unanswered if that ever failed.
                *next_hold += 1;
                let id = HoldId(*next_hold);
                entry.insert(Hold::new(id, a.keys.clone(), a.owner.clone(), a.mode))
            }
        };
        // A grant from a count of zero starts a new hold (a new id for its guards and events).
        let new_id = (hold.count == 0).then(|| {
            *next_hold += 1;
            HoldId(*next_hold)
        });
        if let AcquireKind::ReadWrite(rw, _) = &a.kind {
            hold.rw = Some(rw.clone());
        }
        // A read reentry's count expires by its own key, after the counts before it: it
        // promises no more than they do (`read_write.rs`).
        let earlier_reads =
            (a.key.2 == Some(RwSide::Read) && new_id.is_none()).then_some(hold.valid_until);
        if let Some(id) = new_id {
            hold.id = id;
            hold.granted_at = now;
            hold.renewal_stopped = false;
            hold.maybe_lost = false;
        }
        hold.count += 1;
        hold.mode = a.mode;
        if let Some(token) = token {
            hold.token = Some(hold.token.map_or(token, |t| t.max(token)));
        }
        let (id, count, hold_token) = (hold.id, hold.count, hold.token);
        let anchor = a.attempts.anchor(sent);
        let valid_until = self.valid_until_after(anchor, lease);
        if valid_until <= now {
            tracing::warn!(
                lock = %a.keys.name(),
                owner = %a.owner,
                lease = %lease.millis(),
                since_sent = %now.since(anchor),
                margin = %self.config.drift_margin(lease),
                "granted, but the round trip used up the lease less its drift margin: the hold is \
                 may-be-lost from the start; use a longer lease"
            );
        }
        // Granted by a server that may have lost its data since: promise nothing past the loss,
        // and let a renewal tell whether the hold survived.
        let valid_until = self.promise_after_doubt(anchor, valid_until);
        let valid_until = earlier_reads.map_or(valid_until, |v| v.min(valid_until));
        let doubted = self.sent_before_doubt(anchor);
        if let Some(hold) = self.set_valid_until(&a.key, id, valid_until) {
            self.event(LockEvent::Acquired {
                hold,
                count,
                valid_until,
            });
        }
        if doubted && a.mode == HoldMode::Watchdog {
            self.renew_now();
        }
        let acquired = Acquired {
            name: a.key.0,
            hold: id,
            owner: a.key.1,
            owner_name: a.owner,
            count,
            valid_until,
            token: hold_token,
            mode: a.mode,
        };
        self.done(reply_to, Ok(Done::Acquired(acquired)));
    }

    /// The primary granted the acquire, but too few replicas have the grant: a failover now could
    /// hand the lock to another owner while this one believes it holds it. The caller is told it
    /// was not granted, and the grant is given back as a cancelled acquire's is (a release
    /// carrying the count it made), so the lock is free again rather than held to its lease.
    fn refuse_unsynced_grant(&mut self, op: u64, shortfall: Shortfall) {
        let Some(a) = self.acquire_op(op) else {
            return;
        };
        tracing::warn!(
            lock = %a.keys.name(),
            owner = %a.owner,
            acked = shortfall.acked,
            required = shortfall.required,
            "grant acknowledged by too few replicas; giving it back"
        );
        let name = a.keys.name();
        let reply_to = self.ops.get_mut(op).and_then(|o| o.reply_to.take());
        // Not granted: a wake it was given passes on to the next waiter. The release goes out
        // before the caller hears of the refusal.
        if let Some((_, a)) = self.take_acquire(op, false) {
            if let Some(hold) = self.holds.get_mut(&a.key) {
                hold.pending = hold.pending.saturating_sub(1);
            }
            self.give_back_grant(a);
        }
        if let Some(reply_to) = reply_to {
            self.op_index.remove(&reply_to);
            let err = LockError::ReplicasNotSynced {
                name,
                operation: Operation::Acquire,
                acked: shortfall.acked,
                required: shortfall.required,
            };
            self.done(Some(reply_to), Err(err));
        }
    }

    /// Gives back a grant nobody takes (a cancelled acquire's, or one too few replicas have),
    /// without ever counting it, so the watchdog never renews it.
    fn give_back_grant(&mut self, a: AcquireOp) {
        let lease = self.lease_of(a.mode);
        tracing::debug!(lock = %a.keys.name(), owner = %a.owner, "giving back a grant nobody takes");
        self.drop_hold_if_idle(&a.key);
        let request = self.new_request_id();
        let held = a.held_at_send + 1;
        let kind = a.kind.into_release();
        let release = ReleaseOp::undo(a.key, a.keys, kind, a.owner, lease, request, held);
        let key = self.insert_op(None, OpKind::Release(release));
        self.send_release_attempt(key);
    }

    fn on_held(&mut self, op: u64, ttl: HolderTtl) {
        let now = self.now;
        let Some(a) = self.acquire_op(op) else {
            return;
        };
        a.attempts.on_answer();
        a.last_ttl = Some(ttl);
        a.woken_by_message = false;
        if a.abandoned {
            self.end_acquire(op, Ok(Done::NotAcquired));
            return;
        }
        if a.deadline.is_some_and(|d| now >= d) {
            self.end_acquire(op, Ok(Done::NotAcquired));
            return;
        }
        if a.waiting_on.is_none() {
            let channel = a.kind.channel(&a.keys, &a.owner);
            a.waiting_on = Some(channel.clone());
            let deadline = a.deadline;
            if self.join_waiters(op, channel) {
                // Subscribed already: the retry that closes the missed-wakeup window.
                self.send_acquire_attempt(op);
            } else {
                if let Some(a) = self.acquire_op(op) {
                    a.stage = Stage::AwaitSubscription;
                }
                if let Some(deadline) = deadline {
                    self.arm_op_timer(op, deadline);
                }
            }
        } else {
            self.sleep(op);
        }
    }

    /// Waits for an unlock message or the end of the round.
    fn sleep(&mut self, op: u64) {
        let now = self.now;
        let cap = self.config.wait_round_cap();
        let permit = self.take_permit(op);
        let Some(a) = self.acquire_op(op) else {
            return;
        };
        if permit || std::mem::take(&mut a.wake_pending) {
            self.send_acquire_attempt(op);
            return;
        }
        let ttl = match a.last_ttl {
            // The key lives through its deadline millisecond: wait one more, never zero.
            Some(HolderTtl::Remaining(Millis(0))) => Millis(1),
            Some(HolderTtl::Remaining(ttl)) => ttl,
            Some(HolderTtl::NoTtl) | None => cap,
        };
        let mut wait = ttl.min(cap);
        if let Some(deadline) = a.deadline {
            wait = wait.min(deadline.since(now));
        }
        a.stage = Stage::Sleeping;
        self.arm_op_timer(op, now + wait);
    }

    pub(crate) fn on_acquire_timer(&mut self, op: u64) {
        let now = self.now;
        let Some(a) = self.acquire_op(op) else {
            return;
        };
        let spent = a.deadline.is_some_and(|d| now >= d);
        match a.stage {
            Stage::RetryWait => self.send_acquire_attempt(op),
            Stage::Sleeping if spent => self.end_acquire(op, Ok(Done::NotAcquired)),
            Stage::Sleeping => self.send_acquire_attempt(op),
            Stage::AwaitSubscription if spent => self.end_acquire(op, Ok(Done::NotAcquired)),
            Stage::AwaitSubscription | Stage::Calling => {}
        }
    }

    /// Wakes a sleeping or subscription-waiting acquire for an attempt now.
    pub(crate) fn wake_acquire(&mut self, op: u64, by_message: bool) -> bool {
        let Some(a) = self.acquire_op(op) else {
            return false;
        };
        match a.stage {
            Stage::Sleeping | Stage::AwaitSubscription => {
                a.woken_by_message = by_message;
                self.send_acquire_attempt(op);
                true
            }
            Stage::Calling | Stage::RetryWait => false,
        }
    }

    /// Marks a waiter to retry as soon as its current attempt comes back held.
    pub(crate) fn set_wake_pending(&mut self, op: u64) {
        if let Some(a) = self.acquire_op(op) {
            a.wake_pending = true;
        }
    }

    pub(crate) fn is_sleeping(&self, op: u64) -> bool {
        matches!(
            self.ops.get(op).map(|o| &o.kind),
            Some(OpKind::Acquire(AcquireOp {
                stage: Stage::Sleeping,
                ..
            }))
        )
    }

    pub(crate) fn is_awaiting_subscription(&self, op: u64) -> bool {
        matches!(
            self.ops.get(op).map(|o| &o.kind),
            Some(OpKind::Acquire(AcquireOp {
                stage: Stage::AwaitSubscription,
                ..
            }))
        )
    }

    /// The application stopped waiting. If an attempt may have been applied, keep resolving it
    /// (same request id) and release a grant; otherwise end now.
    pub(crate) fn abandon_acquire(&mut self, op: u64) {
        let Some(a) = self.acquire_op(op) else {
            return;
        };
        a.abandoned = true;
        let resolving = a.attempts.unresolved();
        let channel = a.waiting_on.take();
        let pass_wake = std::mem::take(&mut a.woken_by_message);
        if let Some(channel) = channel {
            self.leave_waiters(op, &channel, pass_wake);
        }
        if !resolving {
            self.end_acquire(op, Ok(Done::NotAcquired));
        }
    }

    /// Removes an acquire, leaving its channel; a wake it was given passes on unless it was
    /// `granted` (the wake did its job).
    fn take_acquire(&mut self, op: u64, granted: bool) -> Option<(Option<OpId>, AcquireOp)> {
        if !matches!(self.ops.get(op), Some(entry) if matches!(entry.kind, OpKind::Acquire(_))) {
            return None;
        }
        let entry = self.ops.remove(op)?;
        let OpKind::Acquire(mut a) = entry.kind else {
            return None;
        };
        if let Some(reply_to) = entry.reply_to {
            self.op_index.remove(&reply_to);
        }
        self.timers.cancel(entry.timer);
        if let Some(channel) = a.waiting_on.take() {
            let pass_wake = a.woken_by_message && !granted;
            self.leave_waiters(op, &channel, pass_wake);
        }
        Some((entry.reply_to, a))
    }

    /// Ends an acquire that did not get the lock, with `result` for its caller.
    fn end_acquire(&mut self, op: u64, result: Result<Done, LockError>) {
        let Some((reply_to, a)) = self.take_acquire(op, false) else {
            return;
        };
        if let Some(hold) = self.holds.get_mut(&a.key) {
            hold.pending = hold.pending.saturating_sub(1);
        }
        let undo = a.attempts.window_unknown.then(|| {
            // The last attempts may have been applied and nobody can tell now: the grant, if
            // any, is not counted and not renewed, and is given back. The release carries the
            // count such a grant made, so it takes nothing if the acquire was never applied.
            tracing::warn!(
                lock = %a.keys.name(),
                owner = %a.owner,
                "acquire outcome unknown; releasing the grant, if there was one"
            );
            let lease = self.lease_of(a.mode);
            let held = a.held_at_send + 1;
            (a.key.clone(), a.keys.clone(), a.owner.clone(), lease, held)
        });
        if let Some(fair) = a.kind.fair() {
            self.give_up_place(
                fair,
                &a.owner,
                a.attempts.request,
                a.attempts.window_unknown,
            );
        }
        self.drop_hold_if_idle(&a.key);
        self.done(reply_to, result);
        if let Some((key, keys, owner, lease, held)) = undo {
            let request = self.new_request_id();
            let kind = a.kind.into_release();
            let release = ReleaseOp::undo(key, keys, kind, owner, lease, request, held);
            let op = self.insert_op(None, OpKind::Release(release));
            self.send_release_attempt(op);
        }
    }
}
