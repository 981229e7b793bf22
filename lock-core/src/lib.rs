//! A Redisson-grade reentrant distributed lock for async Rust.
//!
//! ```
//! use fake_redis::{NodeId, TokioClock, shared};
//! use lock_core::fake::FakeBackend;
//! use lock_core::{LockClient, LockConfig, Millis, RemainingLease, UnlockOutcome};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An in-process Redis (the `fake-redis` crate) on tokio's clock, paused here: the 55 s below
//! // passes in microseconds. In production, a real one:
//! // `let backend = RedisBackend::connect("redis://127.0.0.1/", Duration::from_secs(3)).await?;`
//! // The engine runs the lock's scripts as their native twins (the `fake` feature).
//! let redis = shared(lock_core::fake::engine(TokioClock::new()));
//! let backend = FakeBackend::new(redis, NodeId(1));
//! let client = LockClient::new(backend, LockConfig::default())?;
//!
//! // No lease given: a 30 s lease that the watchdog renews every 10 s while the guard lives.
//! let guard = client.lock("orders").await?;
//! tokio::select! {
//!     // 55 s of work, well past the first lease.
//!     _ = tokio::time::sleep(Duration::from_secs(55)) => {}
//!     state = guard.lost() => panic!("stop writing: the hold is {state}"),
//! }
//! assert!(guard.is_valid());
//! // Renewed at 50 s: 25 s of the lease are left.
//! let left = client.remaining_lease("orders").await?;
//! assert_eq!(left, RemainingLease::Remaining(Millis(25_000)));
//! assert_eq!(guard.unlock().await?, UnlockOutcome::Released);
//!
//! // Every acquire is one builder: here a fencing token and at most 1 s of waiting (`None` if
//! // the lock stays held). `run` drops the work, with `LockError::HoldLost`, the moment the
//! // lease may be lost, and unlocks once the work is done.
//! let acquire = client.acquire("orders").fenced().wait(Duration::from_secs(1));
//! let guard = acquire.await?.expect("nobody else holds it");
//! let token = guard.run(async |guard| guard.token()).await?;
//! // The token is the server's clock in microseconds at the grant (55 s after the paused clock's
//! // start) unless the counter is ahead of it, so tokens stay rising when a restart loses it.
//! assert_eq!(token, Some(1_704_067_255_000_000));
//! assert!(!client.is_locked("orders").await?);
//! # Ok(())
//! # }
//! ```
//!
//! How it is built:
//! - [`script`]: the lock's behaviour on the server, fifteen Lua scripts (five for the lock, four
//!   for the fair lock, six for the read-write lock), each with a native Rust twin that a
//!   differential test holds equal to it;
//! - [`machine`]: the client as a sans-IO state machine (every rule of the lock: leases, the
//!   watchdog, waiting, unknown outcomes, `valid_until`, a hold's [`HoldState`]), driven by time
//!   as an input;
//! - [`client`]: the tokio driver around the machine ([`LockClient`] and its [`Acquire`] builder,
//!   [`LockGuard`], [`LockOwner`]);
//! - [`multi_lock`]: several locks taken together, all or none ([`MultiLock`]), on the client's
//!   lock handles;
//! - [`backend`]: the boundary to a Redis (a real one through [`RedisBackend`], or the in-process
//!   fake of the `fake-redis` crate through `fake::FakeBackend`, with the `fake` feature);
//! - [`config`]: the settings, with Redisson's names and defaults.

pub mod backend;
pub mod client;
#[cfg(feature = "cluster")]
pub mod cluster_backend;
pub mod config;
#[cfg(feature = "fake")]
pub mod fake;
pub mod keys;
pub mod machine;
pub mod multi_lock;
#[cfg(feature = "redis")]
pub mod redis_backend;
pub mod reply;
pub mod script;
pub mod seed;
#[cfg(feature = "sentinel")]
pub mod sentinel_backend;
#[cfg(feature = "cluster")]
pub mod sharded_subscriber;
pub mod time;

pub use backend::Backend;
pub use client::{
    Acquire, ClientError, HoldStatus, LockClient, LockGuard, LockOwner, ReadWriteLock,
};
#[cfg(feature = "cluster")]
pub use cluster_backend::{ClusterBackend, ShardedPubSub};
pub use config::{ConfigError, LockConfig, SyncReplicas};
pub use keys::{FairKeys, KeyLayout, LockKeys, Owner, ReadWriteKeys, RequestId};
pub use machine::{
    BackendError, HoldId, HoldMode, HoldState, LockError, Operation, OwnerId, PubSubEvent,
    RemainingLease, RwSide, UnlockOutcome,
};
pub use multi_lock::{MultiLock, MultiLockGuard};
#[cfg(feature = "redis")]
pub use redis_backend::{RedisBackend, RedisSubscriber};
pub use reply::Reply;
#[cfg(feature = "sentinel")]
pub use sentinel_backend::SentinelBackend;
pub use time::{InvalidLease, Lease, Millis, MonoTime};
