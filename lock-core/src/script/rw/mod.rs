//! The read-write lock's scripts (Redisson's `RReadWriteLock`): many readers or one writer on one
//! hash, whose `mode` field says which, with a timeout key per read count.
//!
//! One module per script, as for the plain lock's. The acquires share their close
//! (`read_acquire.rs`), the releases their opening (`read_release.rs`).

pub mod force_unlock;
pub mod read_acquire;
pub mod read_release;
pub mod renew;
pub mod write_acquire;
pub mod write_release;
