//! The watchdog: one per client, renewing every watchdog hold in batches.
//!
//! A pass starts `watchdog_timeout / 3` after the previous one *ended* (a one-shot timer re-armed
//! when the last batch of a pass is answered), so a paused client never fires a burst of passes
//! when it wakes. A pass renews every hold held with the watchdog in `renew_batch` calls of at
//! most `batch_size` locks (Redisson 3.44+, #6303), all sent at once; a slow or failing batch does
//! not hold back the others (Redisson skips the rest of a pass after one failure). Per lock, 1
//! confirms (`valid_until` moves), 0 means the lock is lost (stop renewing it and tell the holder),
//! and an error or timeout is unknown: the hold stays, the next pass tries again, and
//! `valid_until` does not move. A hold past `max_hold` is no longer renewed and its holder warned.
//!
//! Batches are built when the driver polls them, not when the pass starts: a hold unlocked in
//! between is left out, so no renewal of an unlocked hold is ever sent.

use super::timers::{TimerKey, TimerKind};
use super::{
    BackendError, CallId, CallPurpose, HoldRefKey, LockEvent, LockMachine, Output, Queued,
};
use crate::reply::Reply;
use crate::script::renew_batch;
use crate::time::MonoTime;
use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub(crate) struct Watchdog {
    pub timer: Option<TimerKey>,
    /// Batches of the current pass not answered yet.
    outstanding: BTreeSet<CallId>,
    running: bool,
}

impl LockMachine {
    /// Arms the next pass if the watchdog is idle.
    pub(crate) fn ensure_watchdog(&mut self) {
        if !self.watchdog.running && self.watchdog.timer.is_none() {
            let at = self.now + self.config.watchdog_period();
            self.watchdog.timer = Some(self.timers.arm(at, TimerKind::Watchdog));
        }
    }

    pub(crate) fn start_pass(&mut self) {
        self.watchdog.running = true;
        let now = self.now;
        let max_hold = self.config.max_hold;
        let mut renew: Vec<HoldRefKey> = Vec::new();
        let mut warnings = Vec::new();
        for (key, hold) in self.holds.iter_mut() {
            if !hold.renewable() {
                continue;
            }
            let held_for = now.since(hold.granted_at);
            if max_hold.is_some_and(|max| held_for >= max) {
                hold.renewal_stopped = true;
                warnings.push(LockEvent::MaxHoldReached {
                    hold: hold.as_ref(),
                    held_for,
                });
                continue;
            }
            renew.push((key.clone(), hold.id));
        }
        for warning in warnings {
            self.event(warning);
        }
        for chunk in renew.chunks(self.config.batch_size) {
            let id = self.new_call_id();
            self.watchdog.outstanding.insert(id);
            self.out.push_back(Queued::RenewBatch {
                id,
                holds: chunk.to_vec(),
            });
        }
        if self.watchdog.outstanding.is_empty() {
            self.end_pass();
        }
    }

    fn end_pass(&mut self) {
        self.watchdog.running = false;
        if self.holds.values().any(|h| h.registered()) {
            self.ensure_watchdog();
        }
    }

    /// Builds a queued batch from the holds that are still renewable now.
    pub(crate) fn build_renew_batch(
        &mut self,
        id: CallId,
        holds: Vec<HoldRefKey>,
    ) -> Option<Output> {
        let holds: Vec<HoldRefKey> = holds
            .into_iter()
            .filter(|(key, hold_id)| {
                self.holds
                    .get(key)
                    .is_some_and(|h| h.id == *hold_id && h.renewable())
            })
            .collect();
        if holds.is_empty() {
            self.batch_answered(id);
            return None;
        }
        let targets: Vec<_> = holds
            .iter()
            .filter_map(|(key, _)| self.holds.get(key))
            .map(|h| (h.keys.lock.clone(), h.owner.clone()))
            .collect();
        let call = renew_batch::call(
            self.config.watchdog_lease(),
            targets.iter().map(|(k, o)| (k, o)),
        );
        self.calls.insert(
            id,
            CallPurpose::Renew {
                holds,
                sent: self.now,
            },
        );
        Some(Output::Call {
            id,
            call: super::Call::Script(call),
        })
    }

    fn batch_answered(&mut self, id: CallId) {
        if self.watchdog.outstanding.remove(&id)
            && self.watchdog.outstanding.is_empty()
            && self.watchdog.running
        {
            self.end_pass();
        }
    }

    pub(crate) fn on_renew_result(
        &mut self,
        id: CallId,
        holds: Vec<HoldRefKey>,
        sent: MonoTime,
        result: Result<Reply, BackendError>,
    ) {
        let decoded = result
            .map_err(|e| e.to_string())
            .and_then(|reply| renew_batch::decode(&reply, holds.len()).map_err(|e| e.to_string()));
        match decoded {
            Ok(confirmed) => {
                let valid_until = self.valid_until_after(sent, self.config.watchdog_lease());
                for ((key, hold_id), renewed) in holds.into_iter().zip(confirmed) {
                    let live = self
                        .holds
                        .get(&key)
                        .is_some_and(|h| h.id == hold_id && h.count > 0);
                    if !live {
                        continue;
                    }
                    if renewed {
                        if let Some(hold) = self.set_valid_until(&key, hold_id, valid_until) {
                            self.event(LockEvent::Renewed { hold, valid_until });
                        }
                    } else {
                        self.mark_lost(&key);
                    }
                }
            }
            Err(error) => {
                // Unknown: keep every hold, retry next pass, do not move valid_until.
                tracing::warn!(locks = holds.len(), %error, "can't renew locks; retrying next pass");
            }
        }
        self.batch_answered(id);
    }
}
