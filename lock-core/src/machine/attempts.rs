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

use super::timers::TimerKey;
use super::{CallId, LockError};
use crate::backend::BackendError;
use crate::config::LockConfig;
use crate::keys::RequestId;
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
    pub last_error: Option<BackendError>,
    pub retry_timer: Option<TimerKey>,
}

/// What to do after a failed attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Send the next attempt at this time.
    At(MonoTime),
    /// The window closed: give up, the outcome being unknown (`true`) or a plain error.
    GiveUp { unknown: bool },
}

impl Attempts {
    pub(crate) fn new(request: RequestId) -> Attempts {
        Attempts {
            request,
            in_flight: None,
            first_unknown: None,
            window_start: None,
            window_unknown: false,
            last_error: None,
            retry_timer: None,
        }
    }

    /// The server gave a definitive answer to the attempt sent at `sent`.
    pub(crate) fn on_answer(&mut self) {
        self.window_start = None;
        self.window_unknown = false;
        self.last_error = None;
    }

    /// The send time a confirmation of the attempt sent at `sent` is anchored at.
    pub(crate) fn anchor(&self, sent: MonoTime) -> MonoTime {
        self.first_unknown.map_or(sent, |first| first.min(sent))
    }

    /// The attempt sent at `sent` failed with `error` (not a server error reply) at `now`.
    pub(crate) fn on_error(
        &mut self,
        sent: MonoTime,
        error: BackendError,
        now: MonoTime,
        config: &LockConfig,
    ) -> Retry {
        if error.is_unknown() {
            self.first_unknown = Some(self.first_unknown.map_or(sent, |f| f.min(sent)));
            self.window_unknown = true;
        }
        let start = *self.window_start.get_or_insert(sent);
        self.last_error = Some(error);
        let response_timeout = config.response_timeout();
        // Space attempts a little, so a backend that fails at once (connection refused) is not
        // hammered; a timed-out attempt already waited a full response timeout.
        let delay = Millis((response_timeout.as_u64() / 10).max(1));
        let at = now.max(sent + delay);
        if at + response_timeout <= start + config.latch_ttl() {
            Retry::At(at)
        } else {
            Retry::GiveUp {
                unknown: self.window_unknown,
            }
        }
    }

    /// The attempt sent at `sent` of an `operation` on lock `name` failed with `error` at `now`:
    /// when to send the next attempt, or the error that ends the operation. A server error reply
    /// ends it at once (the server ran the call and refused it; repeating cannot help).
    pub(crate) fn on_failure(
        &mut self,
        sent: MonoTime,
        error: BackendError,
        now: MonoTime,
        config: &LockConfig,
        name: String,
        operation: &'static str,
    ) -> Result<MonoTime, LockError> {
        if let BackendError::Server(_) = error {
            return Err(LockError::Backend {
                name,
                operation,
                error,
            });
        }
        match self.on_error(sent, error, now, config) {
            Retry::At(at) => Ok(at),
            Retry::GiveUp { unknown } => Err(match (unknown, self.last_error.clone()) {
                (false, Some(error)) => LockError::Backend {
                    name,
                    operation,
                    error,
                },
                _ => LockError::OutcomeUnknown {
                    name,
                    operation,
                    detail: self.last_error_text(),
                },
            }),
        }
    }

    /// Whether an attempt may have been applied and has not been resolved since.
    pub(crate) fn unresolved(&self) -> bool {
        self.in_flight.is_some() || self.window_unknown
    }

    pub(crate) fn last_error_text(&self) -> String {
        self.last_error
            .as_ref()
            .map_or_else(|| "none".to_owned(), ToString::to_string)
    }
}
