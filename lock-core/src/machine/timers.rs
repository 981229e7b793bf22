//! The machine's deadlines, in one ordered queue.
//!
//! Every deadline the machine keeps (the watchdog's next pass, a waiter's wake-up, a retry, the
//! moment a hold's `valid_until` passes) is an entry keyed by (time, sequence), so two deadlines at
//! the same millisecond fire in the order they were set and a cancelled one is removed exactly.

use super::sorted::SortedMap;
use super::{HoldId, HoldKey};
use crate::time::MonoTime;

/// Identifies one armed deadline, for cancelling it.
pub(crate) type TimerKey = (MonoTime, u64);

/// What a deadline is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TimerKind {
    /// The watchdog's next pass.
    Watchdog,
    /// An operation's wake-up (a retry, the end of a wait round, the end of its wait budget).
    Op(u64),
    /// The moment a hold's `valid_until` passes.
    Validity(HoldKey, HoldId),
    /// A renewal batch whose call failed, sent again within its pass.
    RenewRetry(super::CallId),
}

#[derive(Debug, Default)]
pub(crate) struct Timers {
    queue: SortedMap<TimerKey, TimerKind>,
    seq: u64,
}

impl Timers {
    pub(crate) fn arm(&mut self, at: MonoTime, kind: TimerKind) -> TimerKey {
        self.seq += 1;
        let key = (at, self.seq);
        self.queue.insert(key, kind);
        key
    }

    pub(crate) fn cancel(&mut self, key: Option<TimerKey>) {
        if let Some(key) = key {
            self.queue.remove(&key);
        }
    }

    pub(crate) fn next(&self) -> Option<MonoTime> {
        self.queue.first().map(|((at, _), _)| *at)
    }

    /// The earliest deadline at or before `now`, removed.
    pub(crate) fn pop_due(&mut self, now: MonoTime) -> Option<(TimerKey, TimerKind)> {
        let (&(at, _), _) = self.queue.first()?;
        if at > now {
            return None;
        }
        self.queue.pop_first()
    }
}
