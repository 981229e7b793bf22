//! [`ReadWriteLock`]: the read and write acquires of one read-write lock.
//!
//! Redisson's `RReadWriteLock` on the same keys, so a Java service and a Rust service share it:
//! any number of readers, or one writer, who may also read (its read holds outlive its write:
//! the downgrade). A read or write acquire is an [`Acquire`] with every option of the plain lock
//! (wait budget, fixed lease or the watchdog, an owner to re-enter as), and gives a
//! [`LockGuard`] that unlocks, renews and reports its state as any other. There is no upgrade: an
//! owner that reads and asks to write waits for its own read holds to go.

use super::{Acquire, LockClient, unexpected};
use crate::machine::{Done, LockError, Request, RwSide};

/// One read-write lock, by name. Made by [`LockClient::read_write`].
///
/// ```
/// # use lock_core::{LockClient, LockError};
/// # use std::time::Duration;
/// # async fn run(client: LockClient) -> Result<(), LockError> {
/// let prices = client.read_write("prices");
/// let reading = prices.read().await?; // shared with other readers
/// reading.unlock().await?;
/// if let Some(writing) = prices.write().wait(Duration::from_secs(1)).await? {
///     // ... no reader and no other writer until this unlocks ...
///     writing.unlock().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ReadWriteLock<'a> {
    client: &'a LockClient,
    name: &'a str,
}

impl<'a> ReadWriteLock<'a> {
    pub(super) fn new(client: &'a LockClient, name: &'a str) -> ReadWriteLock<'a> {
        ReadWriteLock { client, name }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// A read acquire for a new owner, to shape and then await: granted while nobody else
    /// writes; by default it waits as long as it takes and the watchdog keeps the hold.
    pub fn read(&self) -> Acquire<'a> {
        self.client.acquire(self.name).read_write(RwSide::Read)
    }

    /// A write acquire for a new owner, to shape and then await: granted while nobody else
    /// reads or writes; by default it waits as long as it takes and the watchdog keeps the hold.
    pub fn write(&self) -> Acquire<'a> {
        self.client.acquire(self.name).read_write(RwSide::Write)
    }

    /// Deletes the lock if it is held for reading, whoever holds it, and wakes its waiters;
    /// whether it was deleted. This client's own holds of it stop renewing first.
    pub async fn force_unlock_read(&self) -> Result<bool, LockError> {
        self.force_unlock(RwSide::Read).await
    }

    /// Deletes the lock if it is held for writing, whoever holds it, and wakes its waiters;
    /// whether it was deleted. This client's own holds of it stop renewing first.
    pub async fn force_unlock_write(&self) -> Result<bool, LockError> {
        self.force_unlock(RwSide::Write).await
    }

    async fn force_unlock(&self, side: RwSide) -> Result<bool, LockError> {
        let request = Request::ReadWriteForceUnlock {
            name: self.name.into(),
            side,
        };
        match self.client.ask(request).await? {
            Done::ForceUnlocked(deleted) => Ok(deleted),
            other => Err(unexpected(other)),
        }
    }
}
