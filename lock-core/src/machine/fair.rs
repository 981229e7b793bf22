//! The fair lock: Redisson's `RFairLock`, its waiters served in arrival order.
//!
//! A fair acquire is an acquire (`acquire.rs`: its attempts, its wait loop, its cancellation)
//! whose attempt is the `fair_acquire` script: a waiter joins the lock's queue with a thread-wait
//! time (the acquire's wait budget, or `fair_lock_wait_timeout` when it has none, Redisson's
//! 5 minutes), the time its place is kept beyond the wait of the one before it. It waits on its own channel, `<channel>:<owner>`, on
//! which a release wakes only the queue's head, and retries on that message or when the reply's
//! wait runs out. A fair acquire that ends without the lock (its budget spent, or cancelled) after
//! it may have joined the queue (an attempt answered "queued", or one whose outcome is unknown)
//! sends `fair_give_up`, so the waiters behind it move up at once instead of
//! waiting out its thread-wait time. The give-up is repeated as a release is (`attempts.rs`), under
//! the acquire's request id, until it is answered or its window closes: a lost request or reply
//! would otherwise leave the place in the queue, holding everyone behind it up until the
//! stale-waiter purge. A repeat is harmless, since an owner no longer queued changes nothing. A fair
//! acquire asking for a fencing token is refused: Redisson has no fenced fair lock, and its
//! scripts draw none. A fair hold is released by `fair_release` and renewed by the
//! plain watchdog's `renew_batch`, since the lock's hash is a plain lock's.
//!
//! The scripts take the client's clock in unix ms, which the machine never reads: each fair
//! request carries a reading, the first anchors the machine's monotonic clock to it, and every
//! fair call after that uses the anchored clock, so that a run on virtual time stays
//! deterministic and a client's deadlines move by one clock only.

use super::attempts::{Answered, Attempts};
use super::kind::{AcquireKind, FairWait};
use super::{AcquireRequest, BackendError, Call, CallPurpose, Done, LockError, LockMachine, OpId};
use super::{LockName, OpKind, Operation, Wait};
use crate::keys::{Owner, RequestId};
use crate::reply::Reply;
use crate::script::{ScriptCall, fair};
use crate::time::MonoTime;

/// A fair waiter's give-up, which nobody waits for: its one call, sent again under the retry rule
/// until the server answers it.
#[derive(Debug)]
pub(crate) struct GiveUpOp {
    pub name: String,
    call: ScriptCall,
    pub attempts: Attempts,
}

impl LockMachine {
    /// The fair clock: the first fair request's reading of unix ms, moved on by the machine's
    /// own clock.
    pub(crate) fn fair_clock(&self) -> i64 {
        let (wall, at) = self.wall_anchor.unwrap_or((0, MonoTime::ZERO));
        wall.saturating_add(self.now.since(at).as_u64() as i64)
    }

    fn anchor_fair_clock(&mut self, wall_ms: i64) {
        if self.wall_anchor.is_none() {
            self.wall_anchor = Some((wall_ms, self.now));
        }
    }

    pub(crate) fn start_fair_acquire(&mut self, op: OpId, req: AcquireRequest, wall_ms: i64) {
        if req.fenced {
            self.done(
                Some(op),
                Err(LockError::FencedFairLock {
                    name: req.name.to_string(),
                }),
            );
            return;
        }
        self.anchor_fair_clock(wall_ms);
        let thread_wait = match req.wait {
            Wait::Budget(budget) if budget.as_u64() > 0 => budget,
            _ => self.config.fair_lock_wait_timeout,
        };
        let fair = FairWait {
            keys: self.config.key_layout.fair_lock(&req.name),
            thread_wait,
            queued: false,
        };
        self.start_acquire(op, req, AcquireKind::Fair(Box::new(fair)));
    }

    pub(crate) fn start_fair_force_unlock(&mut self, op: OpId, name: LockName, wall_ms: i64) {
        self.anchor_fair_clock(wall_ms);
        let call =
            fair::force_unlock::call(&self.config.key_layout.fair_lock(&name), self.fair_clock());
        self.start_force_unlock_with(op, name, call);
    }

    /// Takes `owner` out of the queue of a fair acquire that ends without the lock, if it may be
    /// there: an attempt was answered "queued", or `maybe_applied` (the last attempts' outcome is
    /// unknown: one may have joined the queue while its reply was lost). A give-up of an owner
    /// that is not queued changes nothing. Nobody waits for the answer; a give-up whose every
    /// attempt fails leaves the place to the stale-waiter purge.
    pub(crate) fn give_up_place(
        &mut self,
        fair: &FairWait,
        owner: &Owner,
        request: RequestId,
        maybe_applied: bool,
    ) {
        if !fair.queued && !maybe_applied {
            return;
        }
        let give_up = GiveUpOp {
            name: fair.keys.lock.name(),
            call: fair::give_up::call(&fair.keys, owner, fair.thread_wait),
            attempts: Attempts::new(request),
        };
        let op = self.insert_op(None, OpKind::GiveUp(give_up));
        self.send_give_up_attempt(op);
    }

    op_of_kind!(give_up_op, GiveUp, GiveUpOp);

    pub(crate) fn send_give_up_attempt(&mut self, op: u64) {
        let now = self.now;
        let Some(g) = self.give_up_op(op) else {
            return;
        };
        let call = Call::Script(g.call.clone());
        self.cancel_op_timer(op);
        let id = self.send_call(call, CallPurpose::Attempt { op, sent: now });
        if let Some(g) = self.give_up_op(op) {
            g.attempts.in_flight = Some(id);
        }
    }

    pub(crate) fn on_give_up_result(
        &mut self,
        op: u64,
        sent: MonoTime,
        result: Result<Reply, BackendError>,
    ) {
        let result = match self.attempt_answered(op, sent, result, Operation::Acquire) {
            Some(Answered::Reply(Reply::Nil)) => Ok(Done::NotAcquired),
            Some(Answered::Reply(reply)) => Err(LockError::UnexpectedReply {
                name: self
                    .give_up_op(op)
                    .map_or_else(String::new, |g| g.name.clone()),
                operation: Operation::Acquire,
                error: crate::script::DecodeError {
                    script: fair::give_up::SCRIPT.name,
                    reply: reply.to_string(),
                },
            }),
            Some(Answered::Failed(err)) => Err(err),
            Some(Answered::Retrying) | None => return,
        };
        if let Err(error) = &result {
            tracing::warn!(%error, "a fair waiter's give-up failed; its place stays in the queue until the stale-waiter purge");
        }
        self.finish_op(op, result);
    }
}
