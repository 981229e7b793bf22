//! A Redisson-grade reentrant distributed lock for async Rust.
//!
//! A lock on a real Redis: the watchdog renews its 30-second lease every 10 seconds while the
//! guard lives, and the guard tells the holder the moment its hold may be lost.
//!
//! ```no_run
//! use lock_core::{LockClient, LockConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = LockClient::connect("redis://127.0.0.1/", LockConfig::default()).await?;
//! let guard = client.lock("orders").await?;
//! tokio::select! {
//!     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {} // the critical section
//!     state = guard.lost() => eprintln!("stop writing: the hold is {state}"),
//! }
//! guard.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! The same lock on the in-process fake of the `fake-redis` crate (this crate's `fake` feature),
//! on tokio's paused clock: the 55 s below pass in microseconds, and the lease is renewed through
//! them.
//!
//! ```
//! use fake_redis::{NodeId, TokioClock, shared};
//! use lock_core::fake::FakeBackend;
//! use lock_core::{LockClient, LockConfig, Millis, RemainingLease, UnlockOutcome};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An engine that runs the lock's scripts as their native twins.
//! let redis = shared(lock_core::fake::engine(TokioClock::new()));
//! let client = LockClient::new(FakeBackend::new(redis, NodeId(1)), LockConfig::default())?;
//!
//! // No lease given: a 30 s lease that the watchdog renews every 10 s while the guard lives.
//! let guard = client.lock("orders").await?;
//! tokio::time::sleep(Duration::from_secs(55)).await; // 55 s of work, well past the first lease
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
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `redis` | yes | [`RedisBackend`] and [`LockClient::connect`], on the `redis` crate |
//! | `cluster` | yes | `ClusterBackend`, for a Redis Cluster |
//! | `sentinel` | yes | `SentinelBackend`, which finds and follows the primary through Sentinel |
//! | `tls` | no | `rediss://` URLs, through the `redis` crate's rustls support |
//! | `fake` | no | the lock on the in-process `fake-redis` (`lock_core::fake`), for tests |
//!
//! Logs go through `tracing`: a hold found lost or possibly lost is a warning; each acquire and
//! release is a debug event.
//!
//! # MSRV
//!
//! Rust 1.88, edition 2024.
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
    Acquire, ClientError, HoldEvent, HoldStatus, LockClient, LockGuard, LockOwner, ReadWriteLock,
};
#[cfg(feature = "cluster")]
pub use cluster_backend::{ClusterBackend, ShardedPubSub};
pub use config::{ConfigError, LockConfig, SyncMode, SyncReplicas};
pub use keys::{FairKeys, KeyLayout, LockKeys, Owner, ReadWriteKeys, RequestId};
pub use machine::{
    BackendError, HoldId, HoldMode, HoldState, LockError, Operation, OwnerId, PubSubEvent,
    RemainingLease, RwSide, UnlockOutcome,
};
pub use multi_lock::{MultiLock, MultiLockGuard};
#[cfg(feature = "redis")]
pub use redis_backend::{ConnectError, RedisBackend, RedisSubscriber};
pub use reply::Reply;
pub use script::{CommandError, DecodeError};
#[cfg(feature = "sentinel")]
pub use sentinel_backend::SentinelBackend;
pub use time::{InvalidLease, Lease, Millis, MonoTime};

/// The crate's README, whose example is compiled as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
