//! A Redisson-grade reentrant distributed lock for async Rust.
//!
//! The lock's behaviour on the server lives in [`script`]: five Lua scripts, each with a native
//! Rust twin that a differential test holds equal to it. [`backend`] is the boundary to a Redis
//! (a real one through [`RedisBackend`], or the in-process fake of the `fake-redis` crate).

pub mod backend;
pub mod client;
pub mod config;
pub mod keys;
pub mod machine;
#[cfg(feature = "redis")]
pub mod redis_backend;
pub mod reply;
pub mod script;
pub mod time;

pub use backend::{Backend, BackendError, PubSubEvent};
pub use client::{HoldLoss, HoldState, HoldStatus, LockClient, LockGuard, LockOwner};
pub use config::{ConfigError, LockConfig};
pub use keys::{KeyLayout, LockKeys, Owner, RequestId};
pub use machine::{HoldId, HoldMode, LockError, OwnerId, RemainingLease, UnlockOutcome};
#[cfg(feature = "redis")]
pub use redis_backend::{RedisBackend, RedisSubscriber};
pub use reply::Reply;
pub use time::{InvalidLease, Lease, Millis, MonoTime};
