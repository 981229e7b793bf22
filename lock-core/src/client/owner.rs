//! An owner handle: the holder a reentrant lock counts, as a value that moves between tasks.
//!
//! Redisson counts holds per thread, and its thread ids are its most reported source of bugs
//! (#6662, #3580, #6878): async code moves between threads. Here the holder is explicit: every
//! guard has an owner, and taking a lock as that owner again re-enters its hold, from any task.

use super::{Acquire, LockClient, LockError, LockGuard, with_token};
use crate::machine::OwnerId;
use std::fmt;
use std::time::Duration;

/// An owner: the `owner_id` half of the hash field. Re-entering a lock goes through the same
/// owner; the handle can be cloned and moved between tasks.
#[derive(Clone)]
pub struct LockOwner {
    client: LockClient,
    id: OwnerId,
}

impl fmt::Debug for LockOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LockOwner({}:{})", self.client.client_id(), self.id)
    }
}

impl LockOwner {
    pub(super) fn new(client: LockClient, id: OwnerId) -> LockOwner {
        LockOwner { client, id }
    }

    /// The owner id.
    pub fn id(&self) -> OwnerId {
        self.id
    }

    /// The client this owner belongs to.
    pub(super) fn client(&self) -> &LockClient {
        &self.client
    }

    /// An acquire of the lock `name` as this owner (re-entering its hold if it has one), to
    /// shape and then await.
    pub fn acquire(&self, name: &str) -> Acquire<'_> {
        self.client.acquire(name).owner(self)
    }

    acquire_shorthands!();

    /// How many times this owner holds the lock, as the server counts.
    pub async fn hold_count(&self, name: &str) -> Result<u64, LockError> {
        self.client.hold_count(name, self).await
    }
}
