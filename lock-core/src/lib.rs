//! A Redisson-grade reentrant distributed lock for async Rust.
//!
//! ```no_run
//! # // `no_run`: it needs a Redis at REDIS_URL. It will run against the `fake-redis` crate's
//! # // in-process FakeBackend once that crate lands.
//! use lock_core::{LockClient, LockConfig, RedisBackend, UnlockOutcome};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let url = std::env::var("REDIS_URL")?;
//! let backend = RedisBackend::connect(&url, Duration::from_secs(3)).await?;
//! let client = LockClient::new(backend, LockConfig::default())?;
//!
//! // No lease: the watchdog renews the 30 s lease every 10 s while the guard lives.
//! let guard = client.lock("orders").await?;
//! // Re-enter as the same owner (from any task): the server counts 2.
//! let inner = guard.owner().lock("orders").await?;
//! assert_eq!(inner.unlock().await?, UnlockOutcome::StillHeld);
//!
//! tokio::select! {
//!     _ = tokio::time::sleep(Duration::from_secs(1)) => { /* the work, done under the lock */ }
//!     loss = guard.lost() => eprintln!("stop writing: the lease is {loss:?}"),
//! }
//! assert_eq!(guard.unlock().await?, UnlockOutcome::Released);
//!
//! // Wait at most 2 s; a 5 s lease, no watchdog.
//! if let Some(guard) = client.try_lock("orders", Duration::from_secs(2), Some(Duration::from_secs(5))).await? {
//!     guard.unlock().await?;
//! }
//! # Ok(())
//! # }
//! ```
//!
//! How it is built:
//! - [`script`]: the lock's behaviour on the server, five Lua scripts, each with a native Rust twin
//!   that a differential test holds equal to it;
//! - [`machine`]: the client as a sans-IO state machine (every rule of the lock: leases, the
//!   watchdog, waiting, unknown outcomes, `valid_until`), driven by time as an input;
//! - [`client`]: the tokio driver around the machine ([`LockClient`], [`LockGuard`], [`LockOwner`]);
//! - [`backend`]: the boundary to a Redis (a real one through [`RedisBackend`], or the in-process
//!   fake of the `fake-redis` crate);
//! - [`config`]: the settings, with Redisson's names and defaults.

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
