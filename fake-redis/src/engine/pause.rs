//! `CLIENT PAUSE`: the server holds clients' commands until a time on its clock.
//!
//! A pause has an end (unix ms on the engine's clock, clock jumps included) and a mode: `ALL`
//! holds every command, `WRITE` the commands that may change the data or replicate (Redis's
//! `write` and `may-replicate` flags, `EXEC` of a transaction holding one, a script without a
//! `no-writes` shebang flag; `cmd/client.rs` decides). A pause only grows: a second `CLIENT
//! PAUSE` moves the end later, never earlier, and `WRITE` never weakens `ALL` (Redis's
//! `pauseClients`). The pause lasts while the clock reads at most its end (Redis unpauses once
//! `end < now`), or until `CLIENT UNPAUSE`.
//!
//! A held command is *postponed*, as Redis's `blockPostponeClient` does: its client is blocked
//! (`engine/blocking.rs`, `CLIENT LIST` shows `b`), without a deadline of its own, and its door
//! waits for the block to end as it waits for a `BLPOP`, until the pause's end
//! ([`Engine::block_deadline`] gives it). When the pause ends, at the first look at the clock
//! after its end ([`Engine::catch_up`], or any command) or at `CLIENT UNPAUSE`, the postponed
//! commands run again from the start, in the order they were held, and each reply ends its
//! client's block. A door that cannot wait ([`Engine::execute`]) runs its commands through a
//! pause. Monitors are never paused, as Redis never pauses a replica.
//!
//! While a pause lasts, the active expiry cycle stands still, as Redis keeps the dataset
//! unchanged (its lazy expiry still deletes a key a command finds expired here).

use crate::engine::Engine;
use crate::engine::blocking::{Blocked, Waiter};
use crate::resp::Frame;
use bytes::Bytes;

/// What a pause holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PauseMode {
    /// Commands that may write or replicate (`CLIENT PAUSE … WRITE`).
    Write,
    /// Every command (`CLIENT PAUSE …` and `… ALL`).
    All,
}

/// The pause in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientPause {
    /// The last paused millisecond, on the engine's clock.
    pub until: i64,
    pub mode: PauseMode,
}

impl Engine {
    /// Pauses clients until `until` in `mode`, or extends the pause in force (`CLIENT PAUSE`).
    pub(crate) fn pause_clients(&mut self, until: i64, mode: PauseMode) {
        self.pause = Some(match self.pause {
            None => ClientPause { until, mode },
            Some(p) => ClientPause {
                until: p.until.max(until),
                mode: p.mode.max(mode),
            },
        });
    }

    /// Pauses clients as `CLIENT PAUSE` does, until (before) `until` on the clock the fault plan
    /// reads (before clock jumps), holding writes only with `writes_only`: the
    /// [`Fault::ClientPause`](crate::Fault::ClientPause) a plan schedules, or a simulator's.
    pub fn pause_clients_until(&mut self, until: i64, writes_only: bool) {
        let mode = if writes_only {
            PauseMode::Write
        } else {
            PauseMode::All
        };
        // The engine's pause lasts through its last millisecond, on its own clock.
        let last = until.saturating_add(self.clock_offset).saturating_sub(1);
        self.pause_clients(last, mode);
        let at = self.clock_now();
        self.faults.record(
            at,
            None,
            None,
            crate::fault::FaultEventKind::ClientsPaused(until, writes_only),
        );
    }

    /// The pause in force at `now`, if any (one that has run out counts as none).
    pub(crate) fn pause_at(&self, now: i64) -> Option<ClientPause> {
        self.pause.filter(|p| now <= p.until)
    }

    /// Whether a pause has run out by `now`, and its postponed commands must run again.
    #[inline]
    pub(crate) fn pause_ended(&self, now: i64) -> bool {
        self.pause.is_some_and(|p| now > p.until)
    }

    /// Ends the pause (`CLIENT UNPAUSE`, or its end passed): the clients it held, in the order
    /// it held them, to run their commands again (`cmd/client.rs`).
    pub(crate) fn end_pause(&mut self) -> Vec<u64> {
        self.pause = None;
        std::mem::take(&mut self.postponed)
    }

    /// Whether the active expiry cycle stands still (a pause is in force).
    pub(crate) fn expiry_paused(&self, now: i64) -> bool {
        self.pause_at(now).is_some()
    }

    /// When the postponed clients run again, in the clock's time before jumps (the time doors
    /// sleep on): the first millisecond after the pause.
    pub(crate) fn pause_wake_time(&self) -> Option<i64> {
        let p = self.pause?;
        Some(p.until.saturating_add(1).saturating_sub(self.clock_offset))
    }

    /// Ends the pause now (`CLIENT UNPAUSE`): the commands it held run at the end of the command
    /// that ended it, as Redis runs them once that command is done.
    pub(crate) fn unpause(&mut self) {
        if let Some(p) = &mut self.pause {
            p.until = i64::MIN;
        }
    }

    /// Holds `argv`, a command of client `id`, until the pause ends: the client is blocked.
    pub(crate) fn postpone(&mut self, id: u64, argv: Vec<Bytes>) {
        let db = self.clients.get(&id).map_or(0, |c| c.db);
        self.block(
            id,
            Blocked {
                db,
                keys: Vec::new(),
                deadline: None,
                waiter: Waiter::Postponed { argv },
            },
        );
        self.postponed.push(id);
    }

    /// Takes the command the pause held for client `id` out of its block, to run it again.
    pub(crate) fn take_postponed(&mut self, id: u64) -> Option<Vec<Bytes>> {
        let argv = match &self.blocked(id)?.waiter {
            Waiter::Postponed { argv } => argv.clone(),
            _ => return None,
        };
        self.forget_block(id);
        Some(argv)
    }

    /// Gives client `id`, whose held command ran again, that command's reply: its door, waiting
    /// for the block to end, takes it.
    pub(crate) fn give_unblocked_reply(&mut self, id: u64, reply: Frame) {
        if let Some(c) = self.clients.get_mut(&id) {
            c.unblocked = Some(reply);
            if let Some(w) = c.waker.take() {
                w.wake();
            }
        }
    }

    /// Forgets `id` among the postponed (its block ended another way, or it left).
    pub(crate) fn forget_postponed(&mut self, id: u64) {
        self.postponed.retain(|&p| p != id);
    }
}
