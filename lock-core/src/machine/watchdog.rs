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
//! A pass takes its holds in cluster-slot order before it cuts them into batches, so that on a
//! cluster (where a batch is sent as one call per slot) a pass costs as few calls as the slots
//! allow: with 10,000 holds of distinct names, 7,557 calls of at most `batch_size` holds each,
//! against 9,983 in name order (the slots number 7,532; `tests/suite/renewal_slots.rs`).
//!
//! A read-write lock's read holds are renewed in batches of their own by `rw_renew`, which also
//! renews each reader's timeout keys; its write holds go with the plain holds.
//!
//! Batches are built when the driver polls them, not when the pass starts: a hold unlocked in
//! between is left out, so no renewal of an unlocked hold is ever sent.
//!
//! A batch whose call fails on its connection (refused, or broken before the response timeout ran
//! out) is sent again within the pass, a tenth of the response timeout later, as long as its
//! answer can still come before the next pass would start: a renewal only re-applies the lease, so
//! sending it twice is harmless, and a stale connection costs one retry instead of a whole period.
//! A call that timed out is left to the next pass, as before.
//!
//! A batch whose `WAIT` (the replica check, `replicas.rs`) came back short confirms nothing: its 1s
//! leave `valid_until` where it was, as an unknown outcome does; its 0s still end their holds.
//!
//! Loss is noticed at once. A lost subscriber connection is the client's sign that the server may
//! have restarted or failed over and forgotten its data: every hold becomes `MayBeLost` on the
//! spot (`valid_until` drops to the present), no renewal sent before that moment counts as a
//! confirmation, and when the subscription is back a pass starts at once, whose confirmation makes
//! the hold `Valid` again (or whose 0 tells the holder it is lost).

use super::kind::RwSide;
use super::read_write;
use super::replicas::Shortfall;
use super::timers::{TimerKey, TimerKind};
use super::{
    BackendError, CallId, CallPurpose, HoldRefKey, LockEvent, LockMachine, Output, Queued,
};
use crate::keys::key_slot;
use crate::reply::Reply;
use crate::script::{renew_batch, rw};
use crate::time::{Millis, MonoTime};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub(crate) struct Watchdog {
    pub timer: Option<TimerKey>,
    /// Batches of the current pass not answered yet.
    outstanding: BTreeSet<CallId>,
    running: bool,
    /// When the current pass started: its failed batches are retried until the next would start.
    pass_started: MonoTime,
    /// A pass was asked for while one was running: start the next as soon as it ends.
    rerun: bool,
    /// The last moment the server may have lost data: renewals sent before it confirm nothing.
    doubt_since: Option<MonoTime>,
    /// Failed batches waiting for their retry, by the id the retry will be sent under.
    retries: BTreeMap<CallId, Vec<HoldRefKey>>,
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
        self.watchdog.pass_started = now;
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
                    hold: hold.to_ref(key),
                    held_for,
                });
                continue;
            }
            renew.push((key.clone(), hold.id));
        }
        for warning in warnings {
            self.event(warning);
        }
        // Read holds need their own script: they go in batches of their own, after the others.
        let (reads, mut plain): (Vec<_>, Vec<_>) = renew
            .into_iter()
            .partition(|((_, _, side), _)| *side == Some(RwSide::Read));
        // In slot order, so that a batch's locks share as few cluster slots as they can: a
        // cluster backend sends one call per slot of a batch (a script's keys must share one),
        // and a single server does not mind the order.
        plain.sort_by_cached_key(|(key, _)| {
            let lock = self.holds.get(key).map(|h| h.keys.lock.clone());
            (lock.as_deref().map_or(0, key_slot), key.clone())
        });
        let batches = plain.chunks(self.config.batch_size);
        for chunk in batches.chain(reads.chunks(self.config.batch_size)) {
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
        if std::mem::take(&mut self.watchdog.rerun) {
            self.renew_now();
            return;
        }
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
        let call = if is_read_batch(&holds) {
            let targets: Vec<_> = holds
                .iter()
                .filter_map(|(key, _)| self.holds.get(key))
                .filter_map(|h| {
                    let rw = h.rw.as_ref()?;
                    Some((rw.lock.lock.clone(), rw.key_prefix.clone(), h.owner.clone()))
                })
                .collect();
            read_write::renew_call(self.config.watchdog_lease(), &targets)
        } else {
            let targets: Vec<_> = holds
                .iter()
                .filter_map(|(key, _)| self.holds.get(key).map(|h| (key, h)))
                .map(|((_, _, side), h)| {
                    // A writer's field is `<owner>:write`.
                    let owner = match side {
                        Some(RwSide::Write) => h.owner.writer(),
                        _ => h.owner.clone(),
                    };
                    (h.keys.lock.clone(), owner)
                })
                .collect();
            renew_batch::call(
                self.config.watchdog_lease(),
                targets.iter().map(|(k, o)| (k, o)),
            )
        };
        let call = crate::script::ScriptCall {
            sync: self.replica_wait(),
            ..call
        };
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
        shortfall: Option<Shortfall>,
    ) {
        // A call that failed on its connection (refused, or broken well before the response
        // timeout) is worth sending again now; one that ran out of time met a slow or lossy
        // network, which the next pass meets soon enough.
        let broken_connection = match &result {
            Err(BackendError::NotApplied(_)) => true,
            Err(BackendError::Unknown(_)) => self.now.since(sent) < self.config.response_timeout(),
            _ => false,
        };
        let read_batch = is_read_batch(&holds);
        let decoded = result.map_err(|e| e.to_string()).and_then(|reply| {
            if read_batch {
                rw::renew::decode(&reply, holds.len())
            } else {
                renew_batch::decode(&reply, holds.len())
            }
            .map_err(|e| e.to_string())
        });
        // A renewal sent before the server may have lost its data confirms nothing: it may have
        // been applied by the server that forgot it.
        let doubted = self.sent_before_doubt(sent);
        match decoded {
            Ok(confirmed) => {
                if let Some(Shortfall { acked, required }) = shortfall {
                    tracing::warn!(
                        locks = holds.len(),
                        acked,
                        required,
                        "renewal acknowledged by too few replicas; valid_until does not move"
                    );
                }
                let valid_until = self.valid_until_after(sent, self.config.watchdog_lease());
                for ((key, hold_id), renewed) in holds.into_iter().zip(confirmed) {
                    let live = self
                        .holds
                        .get(&key)
                        .is_some_and(|h| h.id == hold_id && h.count > 0);
                    if !live {
                        continue;
                    }
                    // Renewed on the primary only: a failover now could lose the new TTL, so it
                    // confirms nothing (its 0 still says the hold is gone).
                    if renewed && (doubted || shortfall.is_some()) {
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
                // Unknown: keep every hold and do not move valid_until; send the batch again
                // within the pass if its answer can come before the next one.
                let retry = Millis((self.config.response_timeout().as_u64() / 10).max(1));
                let at = self.now.max(sent + retry);
                let next_pass = self.watchdog.pass_started + self.config.watchdog_period();
                if broken_connection && at + self.config.response_timeout() <= next_pass {
                    tracing::debug!(locks = holds.len(), %error, "can't renew locks; retrying now");
                    self.watchdog.outstanding.remove(&id);
                    let retry_id = self.new_call_id();
                    self.watchdog.outstanding.insert(retry_id);
                    self.watchdog.retries.insert(retry_id, holds.clone());
                    self.timers.arm(at, TimerKind::RenewRetry(retry_id));
                    return;
                }
                tracing::warn!(locks = holds.len(), %error, "can't renew locks; retrying next pass");
            }
        }
        self.batch_answered(id);
    }

    /// Sends a failed batch again, built from the holds still renewable now.
    pub(crate) fn retry_renew_batch(&mut self, id: CallId) {
        if let Some(holds) = self.watchdog.retries.remove(&id) {
            self.out.push_back(Queued::RenewBatch { id, holds });
        }
    }

    /// The server may have lost its data: no hold is promised beyond now until a renewal sent
    /// from now on confirms it.
    pub(crate) fn doubt_every_hold(&mut self) {
        let now = self.now;
        self.watchdog.doubt_since = Some(now);
        let doubted: Vec<HoldRefKey> = self
            .holds
            .iter()
            .filter(|(_, h)| h.count > 0 && h.valid_until > now)
            .map(|(key, h)| (key.clone(), h.id))
            .collect();
        for (key, id) in doubted {
            if let Some(hold) = self.set_valid_until(&key, id, now) {
                self.event(LockEvent::ValidUntilChanged {
                    hold,
                    valid_until: now,
                });
            }
        }
    }

    /// Whether a call sent at `sent` went out before the server may have lost its data: its
    /// confirmation may come from the state that was lost.
    pub(crate) fn sent_before_doubt(&self, sent: MonoTime) -> bool {
        self.watchdog.doubt_since.is_some_and(|t| sent < t)
    }

    /// The promise a confirmation of a call anchored at `anchor` may give: `valid_until`, or, if
    /// the call went out before the server may have lost its data, nothing past that moment.
    pub(crate) fn promise_after_doubt(&self, anchor: MonoTime, valid_until: MonoTime) -> MonoTime {
        match self.watchdog.doubt_since {
            Some(t) if anchor < t => valid_until.min(t),
            _ => valid_until,
        }
    }

    /// Starts a pass now (or right after the one running), to confirm every hold at once.
    pub(crate) fn renew_now(&mut self) {
        if self.watchdog.running {
            self.watchdog.rerun = true;
            return;
        }
        if !self.holds.values().any(|h| h.renewable()) {
            return;
        }
        let timer = self.watchdog.timer.take();
        self.timers.cancel(timer);
        self.start_pass();
    }
}

/// Whether a batch renews read holds (`rw_renew`): its holds are all of one kind.
fn is_read_batch(holds: &[HoldRefKey]) -> bool {
    holds
        .first()
        .is_some_and(|((_, _, side), _)| *side == Some(RwSide::Read))
}
