//! The multi-lock: all of several locks under one owner, or none, as Redisson's multi-lock.
//!
//! Work that touches several resources needs every one of their locks at once, and two services
//! that take overlapping sets one lock at a time can deadlock: each holds what the other waits
//! for. A [`MultiLock`] takes its locks in one fixed order (the names sorted, duplicates dropped),
//! so two multi-locks of ours never wait for each other in a cycle; it spends one wait budget
//! across all of them, and when any lock stays held past that budget (or an acquire fails) it gives
//! back the locks it already took before answering. Each lock is an ordinary hold of one
//! [`LockOwner`] (the hash field `<client id>:<owner>` in each lock's key, as Redisson's multi-lock
//! writes its thread's field in each), with its own lease or its own watchdog, so a Redisson
//! multi-lock or plain lock on an overlapping name excludes ours and the reverse. It is built on
//! the client's lock handles alone: no script of its own.
//!
//! Redisson takes the locks in the order it was given them; against its multi-locks a cycle is
//! still possible, and it is broken the way Redisson breaks it: a wait that runs out releases
//! everything. That is why [`MultiLock::lock`], which waits as long as it takes, waits in rounds
//! (Redisson's: 1.5 s per lock), giving back its partial grants and pausing between rounds.
//!
//! A fixed lease runs from each lock's own grant, so the lock taken first expires first: choose a
//! lease longer than the wait. If one already ran out by the time the last lock is taken, the
//! acquire gives every lock back and fails with [`LockError::HoldLost`] rather than hand out a
//! guard that does not hold all of them.

use crate::client::{LockClient, LockGuard, LockOwner};
use crate::machine::{HoldState, LockError, Operation};
use std::time::Duration;
use tokio::time::Instant;

/// How long one round of [`MultiLock::lock`] waits, per lock: Redisson's multi-lock round.
const ROUND_PER_LOCK: Duration = Duration::from_millis(1500);

/// The pause of [`MultiLock::lock`] between a round that gave its locks back and the next.
const ROUND_PAUSE: Duration = Duration::from_millis(500);

/// Several locks taken together: all of them or none. Made by [`LockClient::multi_lock`].
///
/// ```
/// # use lock_core::{LockClient, LockError};
/// # use std::time::Duration;
/// # async fn run(client: LockClient) -> Result<(), LockError> {
/// let both = client.multi_lock(["account:7", "account:3"]);
/// // Taken as account:3 then account:7, whatever the order given; within 2 s or not at all.
/// if let Some(guard) = both.try_lock(Duration::from_secs(2), None).await? {
///     // ... move money between the two accounts ...
///     guard.unlock().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct MultiLock {
    client: LockClient,
    /// Sorted and without duplicates: the order every acquire takes them in.
    names: Vec<String>,
}

impl LockClient {
    /// A multi-lock over `names`: all of them, or none, under one new owner per acquire.
    pub fn multi_lock<I, S>(&self, names: I) -> MultiLock
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut names: Vec<String> = names.into_iter().map(Into::into).collect();
        names.sort_unstable();
        names.dedup();
        MultiLock {
            client: self.clone(),
            names,
        }
    }
}

impl MultiLock {
    /// The lock names, in the order they are taken.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Takes every lock, waiting as long as it takes; each is kept by its own watchdog. Waits in
    /// rounds of 1.5 s per lock and gives back what it took between rounds, so a peer that takes
    /// the same locks in another order gets its turn.
    ///
    /// # Errors
    ///
    /// The first error an acquire met (every lock taken before it is given back), or
    /// [`LockError::EmptyName`] for a multi-lock over no names.
    pub async fn lock(&self) -> Result<MultiLockGuard, LockError> {
        self.lock_in_rounds(None).await
    }

    /// As [`lock`](Self::lock), with a fixed lease on each lock from its own grant.
    ///
    /// # Errors
    ///
    /// As [`lock`](Self::lock), and [`LockError::HoldLost`] when a lease ran out before the last
    /// lock was taken.
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<MultiLockGuard, LockError> {
        self.lock_in_rounds(Some(lease)).await
    }

    /// Tries to take every lock within one budget of `wait`, shared by all of them (zero makes one
    /// attempt at each); `Ok(None)` when one stayed held, with every lock taken before it given
    /// back. `lease: None` keeps each lock by its own watchdog.
    ///
    /// # Errors
    ///
    /// As [`lock_with_lease`](Self::lock_with_lease).
    pub async fn try_lock(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<MultiLockGuard>, LockError> {
        if self.names.is_empty() {
            return Err(LockError::EmptyName {
                operation: Operation::Acquire,
            });
        }
        let owner = self.client.new_owner().await?;
        let deadline = Instant::now() + wait;
        let mut guards = Vec::with_capacity(self.names.len());
        for name in &self.names {
            let budget = deadline.saturating_duration_since(Instant::now());
            match owner.try_lock(name, budget, lease).await {
                Ok(Some(guard)) => guards.push(guard),
                Ok(None) => {
                    give_back(guards).await;
                    return Ok(None);
                }
                Err(error) => {
                    give_back(guards).await;
                    return Err(error);
                }
            }
        }
        if let Some(expired) = guards.iter().find(|guard| !guard.is_valid()) {
            let lost = LockError::HoldLost {
                name: expired.name().to_owned(),
                state: expired.status().state,
            };
            give_back(guards).await;
            return Err(lost);
        }
        Ok(Some(MultiLockGuard { owner, guards }))
    }

    async fn lock_in_rounds(&self, lease: Option<Duration>) -> Result<MultiLockGuard, LockError> {
        let locks = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let round = ROUND_PER_LOCK.saturating_mul(locks);
        loop {
            if let Some(guard) = self.try_lock(round, lease).await? {
                return Ok(guard);
            }
            // A peer woken by our release needs a round trip and its own wake-up (a JVM's, on a
            // loaded machine, can take a few hundred ms) to take the lock; without the pause our
            // next round's first acquire would win that race every time.
            tokio::time::sleep(ROUND_PAUSE).await;
        }
    }
}

/// Unlocks the holds of an acquire that did not get all its locks, before it answers: what the
/// unlocks say does not change that answer (a hold that expired meanwhile is gone anyway, one
/// whose unlock went unanswered runs out with its lease or watchdog).
async fn give_back(guards: Vec<LockGuard>) {
    for guard in guards.into_iter().rev() {
        let _ = guard.unlock().await;
    }
}

/// Every lock of a [`MultiLock`], held by one owner. Dropping it releases each in the background,
/// as dropping its guards would.
#[must_use = "a guard that is not kept releases its locks at once: bind it for as long as the \
              work needs them"]
#[derive(Debug)]
pub struct MultiLockGuard {
    owner: LockOwner,
    /// In acquire order.
    guards: Vec<LockGuard>,
}

impl MultiLockGuard {
    /// The owner of every hold, for re-entering one of the locks as the same holder.
    pub fn owner(&self) -> &LockOwner {
        &self.owner
    }

    /// One guard per lock, in the order they were taken.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Until when every hold is certainly still this owner's: the earliest of their
    /// [`LockGuard::valid_until`].
    pub fn valid_until(&self) -> Instant {
        self.guards
            .iter()
            .map(LockGuard::valid_until)
            .min()
            .expect("a multi-lock guard holds at least one lock")
    }

    /// Whether every hold is certainly still this owner's now.
    pub fn is_valid(&self) -> bool {
        self.guards.iter().all(LockGuard::is_valid)
    }

    /// Resolves when any hold is lost or may be lost, with that hold's state.
    pub async fn lost(&self) -> HoldState {
        let losses = self.guards.iter().map(|guard| Box::pin(guard.lost()));
        futures_util::future::select_all(losses).await.0
    }

    /// Gives back every lock, each whatever the others answered.
    ///
    /// # Errors
    ///
    /// The first error of the unlocks (taken in reverse acquire order), after all were tried: a
    /// lock that expired or was deleted is [`LockError::NotLocked`].
    pub async fn unlock(mut self) -> Result<(), LockError> {
        let mut first_error = None;
        while let Some(guard) = self.guards.pop() {
            if let Err(error) = guard.unlock().await {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
