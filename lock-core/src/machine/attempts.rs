//! The attempts of one acquire or unlock call, all under one request id.
//!
//! A call whose reply is lost has an unknown outcome, never "failed": it may have been applied.
//! The only safe repeat is the same request id, which the script's latch turns into a no-op if an
//! earlier attempt was applied. That latch lives `latch_ttl` from when the server applied the
//! attempt, which is no earlier than when it was sent. So, while an attempt's outcome is unknown,
//! the next attempt must go out (and be answered, within one response timeout) before
//! `first send of the unknown streak + latch_ttl`; once that window closes without an answer, the
//! caller is told "unknown". A fresh id is never used to repeat an acquire: a second `HINCRBY`
//! would count one hold twice (the reason Redisson sends lock scripts with no retry since 3.37.0).
//!
//! An acquire with a wait budget repeats on past the latch window, until its budget ends: every
//! acquire attempt also carries the count the client believes the owner has, and a copy that finds
//! the count moved (an earlier attempt applied, its latch gone) confirms the hold without counting
//! it. So a waiter rides out a paused or slow server for as long as it was willing to wait, and
//! its attempts, queued on the one connection, are applied in order, as is the give-back that
//! follows them if it gives up. An unlock keeps to the latch window: a copy of a release that
//! finds the count moved can only say "still held".

use super::{BackendError, CallId, LockError, LockMachine, OpKind, Operation};
use crate::config::LockConfig;
use crate::keys::RequestId;
use crate::reply::Reply;
use crate::time::{Millis, MonoTime};

#[derive(Debug)]
pub(crate) struct Attempts {
    pub request: RequestId,
    pub in_flight: Option<CallId>,
    /// The earliest send time of any attempt that may have been applied without our knowing:
    /// the anchor of `valid_until` if the call is confirmed later (a confirmation may be the
    /// latch replaying that earlier grant). Never reset.
    pub first_unknown: Option<MonoTime>,
    /// The first send of the current streak of failed attempts; reset by a definitive answer.
    pub window_start: Option<MonoTime>,
    /// Whether an attempt of the current streak had an unknown outcome.
    pub window_unknown: bool,
}

/// The settings the retry rule reads, copied out of the config (both are plain durations), so
/// that a caller can hand them over while it holds an operation borrowed from the machine.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryWindow {
    pub response_timeout: Millis,
    pub latch_ttl: Millis,
}

impl RetryWindow {
    pub(crate) fn of(config: &LockConfig) -> RetryWindow {
        RetryWindow {
            response_timeout: config.response_timeout(),
            latch_ttl: config.latch_ttl(),
        }
    }
}

impl Attempts {
    pub(crate) fn new(request: RequestId) -> Attempts {
        Attempts {
            request,
            in_flight: None,
            first_unknown: None,
            window_start: None,
            window_unknown: false,
        }
    }

    /// The server gave a definitive answer to the last attempt.
    pub(crate) fn on_answer(&mut self) {
        self.window_start = None;
        self.window_unknown = false;
    }

    /// The send time a confirmation of the attempt sent at `sent` is anchored at.
    pub(crate) fn anchor(&self, sent: MonoTime) -> MonoTime {
        self.first_unknown.map_or(sent, |first| first.min(sent))
    }

    /// The attempt sent at `sent` of an `operation` on lock `name` failed with `error` at `now`:
    /// when to send the next attempt, or the error that ends the operation. A server error reply
    /// ends it at once (the server ran the call and refused it; repeating cannot help). Attempts
    /// go on while the next can be answered within the latch window, or by `budget_end` (an
    /// acquire's wait budget) when that is later.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_failure(
        &mut self,
        sent: MonoTime,
        error: BackendError,
        now: MonoTime,
        window: RetryWindow,
        budget_end: Option<MonoTime>,
        name: String,
        operation: Operation,
    ) -> Result<MonoTime, LockError> {
        if let BackendError::Server(_) = error {
            return Err(LockError::Backend {
                name,
                operation,
                error,
            });
        }
        if error.is_unknown() {
            self.first_unknown = Some(self.anchor(sent));
            self.window_unknown = true;
        }
        let start = *self.window_start.get_or_insert(sent);
        // Space attempts a little, so a backend that fails at once (connection refused) is not
        // hammered; a timed-out attempt already waited a full response timeout.
        let delay = Millis((window.response_timeout.as_u64() / 10).max(1));
        let at = now.max(sent + delay);
        let end = budget_end.map_or(start + window.latch_ttl, |b| {
            b.max(start + window.latch_ttl)
        });
        if at + window.response_timeout <= end {
            Ok(at)
        } else if self.window_unknown {
            Err(LockError::OutcomeUnknown {
                name,
                operation,
                last_error: error,
            })
        } else {
            Err(LockError::Backend {
                name,
                operation,
                error,
            })
        }
    }

    /// Whether an attempt may have been applied and has not been resolved since.
    pub(crate) fn unresolved(&self) -> bool {
        self.in_flight.is_some() || self.window_unknown
    }
}

/// What the retry rule made of an attempt's result (see [`LockMachine::attempt_answered`]).
pub(crate) enum Answered {
    /// The server answered: the operation goes on with the reply.
    Reply(Reply),
    /// The attempt failed and the next one is due: the operation's timer is armed for it.
    Retrying,
    /// The attempt failed and the operation ends with this error.
    Failed(LockError),
}

impl LockMachine {
    /// The opening every operation with attempts gives a result: the attempt is no longer in
    /// flight, and a failure goes through the retry rule, which arms the operation's timer for
    /// the next attempt or ends it. `None` when the operation is gone.
    pub(crate) fn attempt_answered(
        &mut self,
        op: u64,
        sent: MonoTime,
        result: Result<Reply, BackendError>,
        operation: Operation,
    ) -> Option<Answered> {
        let now = self.now;
        let window = RetryWindow::of(&self.config);
        let kind = &mut self.ops.get_mut(op)?.kind;
        kind.attempts()?.in_flight = None;
        let error = match result {
            Ok(reply) => return Some(Answered::Reply(reply)),
            Err(error) => error,
        };
        // The name is spelled out only for an error.
        let name = kind.lock_name();
        let budget_end = kind.budget_end();
        let failure = kind
            .attempts()?
            .on_failure(sent, error, now, window, budget_end, name, operation);
        match failure {
            Ok(at) => {
                self.arm_op_timer(op, at);
                Some(Answered::Retrying)
            }
            Err(err) => Some(Answered::Failed(err)),
        }
    }
}

impl OpKind {
    /// The attempts of an operation that has them.
    fn attempts(&mut self) -> Option<&mut Attempts> {
        match self {
            OpKind::Acquire(a) => Some(&mut a.attempts),
            OpKind::Release(r) => Some(&mut r.attempts),
            OpKind::GiveUp(g) => Some(&mut g.attempts),
            OpKind::Single(_) => None,
        }
    }

    /// The end of the wait budget of an acquire its caller still waits for: its attempts may go
    /// on until then (see the module docs).
    fn budget_end(&self) -> Option<MonoTime> {
        match self {
            OpKind::Acquire(a) if !a.abandoned => a.deadline,
            _ => None,
        }
    }

    /// The name of the lock the operation is about, for an error.
    fn lock_name(&self) -> String {
        match self {
            OpKind::Acquire(a) => a.keys.name(),
            OpKind::Release(r) => r.keys.name(),
            OpKind::GiveUp(g) => g.name.clone(),
            OpKind::Single(s) => s.name.to_string(),
        }
    }
}
