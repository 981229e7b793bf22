//! A guard: one count of a hold, what it knows about the hold, and how it ends.
//!
//! The guard's view of its hold is the machine's: the driver forwards every [`HoldState`] the
//! machine reports into one watch channel per hold, and closes it when the hold ends. A channel
//! that closes while the hold still reads `Valid` or `MayBeLost` means the driver stopped, which
//! the guard reports as [`HoldState::ClientStopped`]. [`LockGuard::run`] builds on
//! [`LockGuard::lost`]: the work stops the moment the lease is lost or may be lost, because from
//! then on another holder may be writing too.

use super::state::{HoldStatus, HoldTicket};
use super::{LockClient, LockOwner};
use crate::machine::{
    Acquired, Done, HoldId, HoldMode, HoldState, LockError, RwSide, UnlockOutcome,
};
use std::fmt;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// One count of a hold. Unlock it with [`unlock`](Self::unlock); dropping it stops its renewal at
/// once and releases it in the background.
///
/// Hold on to it for as long as the work needs the lock: a guard that is not bound to a name is
/// dropped at once, and the lock with it, so the compiler warns about one.
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # async fn run(client: lock_core::LockClient) -> Result<(), lock_core::LockError> {
/// client.lock("orders").await?; // taken and released at once: refused by the lint
/// # Ok(()) }
/// ```
///
/// ```
/// #![deny(unused_must_use)]
/// # async fn run(client: lock_core::LockClient) -> Result<(), lock_core::LockError> {
/// let _guard = client.lock("orders").await?; // held to the end of the scope
/// # Ok(()) }
/// ```
#[must_use = "a guard that is not kept releases its lock at once: bind it (`let guard = ...`) \
              for as long as the work needs the lock"]
pub struct LockGuard {
    // Declared first so it drops first: its background release must reach the machine while
    // `client` still keeps the driver running.
    ticket: HoldTicket,
    client: LockClient,
    status: watch::Receiver<HoldStatus>,
    token: Option<u64>,
    mode: HoldMode,
    /// The side of a read-write lock's hold; `None` for any other lock.
    side: Option<RwSide>,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.ticket.name)
            .field("owner", &self.ticket.owner)
            .field("hold", &self.ticket.hold)
            .field("status", &self.status())
            .finish()
    }
}

impl LockGuard {
    pub(super) fn new(
        client: LockClient,
        ticket: HoldTicket,
        status: watch::Receiver<HoldStatus>,
        acquired: &Acquired,
    ) -> LockGuard {
        LockGuard {
            ticket,
            client,
            status,
            token: acquired.token,
            mode: acquired.mode,
            side: None,
        }
    }

    /// The guard as a hold of `side` of a read-write lock (or of another lock, for `None`).
    pub(super) fn on_side(mut self, side: Option<RwSide>) -> LockGuard {
        self.side = side;
        self
    }

    /// Which hold of a read-write lock this is a count of; `None` for any other lock.
    pub fn read_write_side(&self) -> Option<RwSide> {
        self.side
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.ticket.name
    }

    /// The hold this guard is a count of.
    pub fn hold_id(&self) -> HoldId {
        self.ticket.hold
    }

    /// The owner, for re-entering this lock (or taking others) as the same holder.
    pub fn owner(&self) -> LockOwner {
        LockOwner::new(self.client.clone(), self.ticket.owner)
    }

    /// The hold's mode (watchdog or fixed lease).
    pub fn mode(&self) -> HoldMode {
        self.mode
    }

    /// Until when the hold is certainly still this owner's (on tokio's clock).
    pub fn valid_until(&self) -> Instant {
        self.status.borrow().valid_until
    }

    /// Whether the hold is certainly still this owner's now: exactly when
    /// [`status`](LockGuard::status) reads [`HoldState::Valid`].
    pub fn is_valid(&self) -> bool {
        self.status().state == HoldState::Valid
    }

    /// The owner's newest fencing token (write with this one), if it ever drew one.
    pub fn token(&self) -> Option<u64> {
        let newest = self.status.borrow().token;
        match (newest, self.token) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The token this guard's own grant carried.
    pub(super) fn grant_token(&self) -> Option<u64> {
        self.token
    }

    /// The hold's status now.
    ///
    /// Read against the clock and the driver as well as the machine's last report: the machine
    /// turns a hold `MayBeLost` only when it next runs after `valid_until`, and a stopped driver
    /// may not have closed the channel yet, so a caller that checks before a write never writes
    /// past either.
    pub fn status(&self) -> HoldStatus {
        let closed = self.status.has_changed().is_err() || self.client.stopped();
        against_the_clock(self.status.borrow().reported(closed))
    }

    /// A watch of the hold's status, for `select!` loops. The channel closes when the hold ends;
    /// closed while the state still reads `Valid` or `MayBeLost`, it means the client stopped
    /// ([`HoldState::ClientStopped`], as [`status`](Self::status) reports it).
    pub fn watch(&self) -> watch::Receiver<HoldStatus> {
        self.status.clone()
    }

    /// Resolves when the lease is lost or may be lost, or the client stops, with the state that
    /// made it resolve (never [`HoldState::Valid`]).
    ///
    /// Like [`status`](Self::status), it reads the clock as well as the driver's report: a hold
    /// whose `valid_until` has passed may be lost, whether or not the driver has run since. A
    /// process that was stopped (a GC pause, `SIGSTOP`) wakes with its timers and its work ready
    /// at once, and its tasks may run before the driver does; every poll compares the time with
    /// `valid_until` first, so work scoped by [`run`](Self::run) is stopped at its next await
    /// rather than after one more step.
    pub async fn lost(&self) -> HoldState {
        let mut status = self.status.clone();
        loop {
            let closed = status.has_changed().is_err();
            let now = against_the_clock(status.borrow_and_update().reported(closed));
            if now.state != HoldState::Valid {
                return now.state;
            }
            let deadline = now.valid_until;
            let mut changed = std::pin::pin!(status.changed());
            let mut ends = std::pin::pin!(tokio::time::sleep_until(deadline));
            std::future::poll_fn(|cx| {
                // The clock first: the timer may not have fired yet though its time has come.
                if Instant::now() >= deadline
                    || changed.as_mut().poll(cx).is_ready()
                    || ends.as_mut().poll(cx).is_ready()
                {
                    return std::task::Poll::Ready(());
                }
                std::task::Poll::Pending
            })
            .await;
            // A closed channel ends the wait too: the next round reads it as `ClientStopped`.
        }
    }

    /// Runs `work` under this guard's lock, then unlocks; the work's output once the unlock is
    /// done.
    ///
    /// If the lease is lost or may be lost first ([`lost`](Self::lost) resolves), `work` is
    /// dropped where it stands and the error is [`LockError::HoldLost`], with the state that
    /// stopped it; the guard is then released in the background. An unlock that fails after the
    /// work finished is returned as its error: the work ran, but the lock may not have been its
    /// alone to the end ([`LockError::NotLocked`]: someone deleted it or it expired) or may still
    /// be held ([`LockError::OutcomeUnknown`]).
    pub async fn run<T>(self, work: impl AsyncFnOnce(&LockGuard) -> T) -> Result<T, LockError> {
        let output = tokio::select! {
            // A loss noticed while the work finishes wins: its last steps may not have been
            // covered by the lease.
            biased;
            state = self.lost() => {
                return Err(LockError::HoldLost {
                    name: self.name().to_owned(),
                    state,
                });
            }
            output = work(&self) => output,
        };
        self.unlock().await?;
        Ok(output)
    }

    /// Re-enters the lock as the same owner with the same kind of lease (the watchdog, or
    /// `lease` for a fixed-lease hold: `None` keeps the watchdog).
    pub async fn reenter(&self, lease: Option<Duration>) -> Result<LockGuard, LockError> {
        let mut acquire = self.client.acquire(self.name()).owner_id(self.ticket.owner);
        if let Some(side) = self.side {
            acquire = acquire.read_write(side);
        }
        acquire.lease_or_watchdog(lease).await
    }

    /// How many times this guard's owner holds the lock, as the server counts.
    pub async fn hold_count(&self) -> Result<u64, LockError> {
        self.owner().hold_count(self.name()).await
    }

    /// Gives back this count. `Released` when the lock was deleted (waiters are woken),
    /// `StillHeld` when the owner still holds it (its lease re-applied). The hold's renewal stops
    /// before the release is sent, whatever the outcome; "not locked" names the lock, client and
    /// owner; "outcome unknown" means no attempt was answered within the latch window.
    pub async fn unlock(mut self) -> Result<UnlockOutcome, LockError> {
        self.ticket.armed = false;
        let request = self.ticket.release_request();
        match self.client.ask(request).await? {
            Done::Unlocked(outcome) => Ok(outcome),
            other => Err(super::unexpected(other)),
        }
    }
}

/// A reported status read against the clock: a hold still `Valid` in the machine's last report
/// whose `valid_until` has passed may be lost, whether or not the machine has run since.
fn against_the_clock(mut status: HoldStatus) -> HoldStatus {
    if status.state == HoldState::Valid && Instant::now() >= status.valid_until {
        status.state = HoldState::MayBeLost;
    }
    status
}
