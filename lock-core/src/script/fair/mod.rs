//! The fair lock's scripts (Redisson's `RFairLock`): the lock's hash is a plain lock's, and beside
//! it a queue of waiters in arrival order with each waiter's deadline to ask again.
//!
//! One module per script, as for the plain lock's; `queue.rs` holds what they share, the
//! stale-waiter purge.

pub mod acquire;
pub mod force_unlock;
pub mod give_up;
mod queue;
pub mod release;
