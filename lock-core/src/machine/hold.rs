//! What the client knows about each hold, and `valid_until`.
//!
//! A hold record exists per (lock, owner) from the moment an acquire is registered (before it is
//! sent: the watchdog knows about it while it is pending, which is the ordering that fixes
//! Redisson #7272) until its last count is given back and no acquire of that owner is in flight.
//!
//! `valid_until` is the client's promise to the holder: until then the lock is certainly still
//! its own, as long as the clocks drift within the margin. Every confirmed call that set the key's
//! TTL sets it to *the earliest send time of that request that may have been applied* + *that
//! call's lease* − the drift margin, even when this lowers it: the server applied the call after it
//! was first sent, so the key lives at least that long. A call that would lower it lowers it at
//! once, while its outcome is unknown.
//!
//! The hold's [`HoldState`] follows `valid_until` and nothing else: `MayBeLost` the moment it
//! passes (at the machine's `now`, when the validity timer fires or when a confirmation comes
//! back already too old), `Valid` again when a confirmation moves it past `now`.

use super::SharedKeys;
use super::timers::{TimerKey, TimerKind};
use super::{HoldId, HoldKey, HoldMode, HoldRef, HoldState, LockEvent, LockMachine};
use crate::keys::{FairKeys, Owner, ReadWriteKeys};
use crate::time::MonoTime;

#[derive(Debug)]
pub(crate) struct Hold {
    /// Changes at every grant from a count of zero: a new hold.
    pub id: HoldId,
    pub keys: SharedKeys,
    /// A fair lock's keys: its releases are the fair lock's. Boxed, as the read-write lock's:
    /// they are the rare case, and several times the size of the rest of the record.
    pub fair: Option<Box<FairKeys>>,
    /// A read-write lock's keys: its releases and renewals are the read-write lock's.
    pub rw: Option<Box<ReadWriteKeys>>,
    pub owner: Owner,
    pub mode: HoldMode,
    /// The count the client believes the server has. Raised when an acquire is confirmed,
    /// lowered when an unlock is sent.
    pub count: u32,
    /// Acquires of this owner in flight: registered with the watchdog, not yet confirmed.
    pub pending: u32,
    pub granted_at: MonoTime,
    pub valid_until: MonoTime,
    /// Whether the hold is [`HoldState::MayBeLost`]: its `valid_until` passed and no
    /// confirmation has moved it past the present since.
    pub maybe_lost: bool,
    pub validity_timer: Option<TimerKey>,
    /// Set when the hold passed `max_hold`.
    pub renewal_stopped: bool,
    pub token: Option<u64>,
    /// Kept renewing after its last unlock: only under `BrokenRule::RenewAfterUnlock`, to prove
    /// that the simulator's checkers catch it.
    pub zombie: bool,
}

impl Hold {
    pub(crate) fn new(id: HoldId, keys: SharedKeys, owner: Owner, mode: HoldMode) -> Hold {
        Hold {
            id,
            keys,
            fair: None,
            rw: None,
            owner,
            mode,
            count: 0,
            pending: 0,
            granted_at: MonoTime::ZERO,
            valid_until: MonoTime::ZERO,
            maybe_lost: false,
            validity_timer: None,
            renewal_stopped: false,
            zombie: false,
            token: None,
        }
    }

    /// Whether the watchdog renews it on its next pass.
    pub(crate) fn renewable(&self) -> bool {
        self.mode == HoldMode::Watchdog && (self.count > 0 || self.zombie) && !self.renewal_stopped
    }

    /// Whether it keeps the watchdog running (held, or being acquired).
    pub(crate) fn registered(&self) -> bool {
        self.mode == HoldMode::Watchdog
            && !self.renewal_stopped
            && (self.count > 0 || self.pending > 0)
    }

    /// The hold as events name it; `key` is its key in the machine's records.
    pub(crate) fn to_ref(&self, key: &HoldKey) -> HoldRef {
        HoldRef {
            id: self.id,
            name: key.0.clone(),
            owner: self.owner.clone(),
        }
    }
}

impl LockMachine {
    /// Sets `valid_until` of the hold at `key` (if it is still hold `id` and held), keeping its
    /// "may be lost" deadline and reporting a change of state; returns the hold's ref for the
    /// caller's event.
    pub(crate) fn set_valid_until(
        &mut self,
        key: &HoldKey,
        id: HoldId,
        valid_until: MonoTime,
    ) -> Option<HoldRef> {
        let now = self.now;
        let hold = self
            .holds
            .get_mut(key)
            .filter(|h| h.id == id && h.count > 0)?;
        hold.valid_until = valid_until;
        self.timers.cancel(hold.validity_timer.take());
        let hold_ref = hold.to_ref(key);
        let was_maybe_lost = hold.maybe_lost;
        if valid_until > now {
            hold.maybe_lost = false;
            hold.validity_timer = Some(
                self.timers
                    .arm(valid_until, TimerKind::Validity(key.clone(), id)),
            );
        } else {
            hold.maybe_lost = true;
        }
        let state = if hold.maybe_lost {
            HoldState::MayBeLost
        } else {
            HoldState::Valid
        };
        if hold.maybe_lost != was_maybe_lost {
            self.event(LockEvent::StateChanged {
                hold: hold_ref.clone(),
                state,
                valid_until,
            });
        }
        Some(hold_ref)
    }

    /// Lowers `valid_until` at once when a call about to be sent at `sent` with `lease` would set
    /// a TTL that ends earlier than the current promise (a reentry with a shorter lease).
    pub(crate) fn lower_for_call(
        &mut self,
        key: &HoldKey,
        id: HoldId,
        sent: MonoTime,
        lease: crate::time::Lease,
    ) {
        let candidate = self.valid_until_after(sent, lease);
        let lowers = self
            .holds
            .get(key)
            .is_some_and(|h| h.id == id && h.count > 0 && candidate < h.valid_until);
        if lowers && let Some(hold) = self.set_valid_until(key, id, candidate) {
            self.event(LockEvent::ValidUntilChanged {
                hold,
                valid_until: candidate,
            });
        }
    }

    pub(crate) fn on_validity_timer(&mut self, key: HoldKey, id: HoldId, timer: TimerKey) {
        let now = self.now;
        let Some(hold) = self.holds.get_mut(&key) else {
            return;
        };
        if hold.id != id || hold.validity_timer != Some(timer) {
            return;
        }
        hold.validity_timer = None;
        if hold.count > 0 && hold.valid_until <= now && !hold.maybe_lost {
            hold.maybe_lost = true;
            let event = LockEvent::StateChanged {
                hold: hold.to_ref(&key),
                state: HoldState::MayBeLost,
                valid_until: hold.valid_until,
            };
            self.event(event);
        }
    }

    /// The server says the owner no longer holds the lock: the hold is detached (its guards'
    /// unlocks are answered "not locked" without a call) and the holder told.
    pub(crate) fn mark_lost(&mut self, key: &HoldKey) {
        let Some(hold) = self.holds.remove(key) else {
            return;
        };
        self.timers.cancel(hold.validity_timer);
        if hold.count > 0 {
            self.lost.insert(hold.id, hold.count);
            self.event(LockEvent::StateChanged {
                hold: hold.to_ref(key),
                state: HoldState::Lost,
                valid_until: hold.valid_until,
            });
        }
        if hold.pending > 0 {
            // Acquires of this owner are still in flight; they start a new hold if granted.
            let id = self.new_hold_id();
            let mut fresh = Hold::new(id, hold.keys, hold.owner, hold.mode);
            fresh.pending = hold.pending;
            fresh.token = hold.token;
            fresh.rw = hold.rw;
            // A fair lock's acquire in flight grants a fair hold: released by the fair lock's
            // script, which hands the lock on to the queue.
            fresh.fair = hold.fair;
            self.holds.insert(key.clone(), fresh);
        }
    }

    /// Forgets the record at `key` once nothing holds or acquires it.
    pub(crate) fn drop_hold_if_idle(&mut self, key: &HoldKey) {
        if self
            .holds
            .get(key)
            .is_some_and(|h| h.count == 0 && h.pending == 0)
            && let Some(hold) = self.holds.remove(key)
        {
            self.timers.cancel(hold.validity_timer);
        }
    }
}
