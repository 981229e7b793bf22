//! An in-process Redis fake on virtual time, for testing code that uses Redis, and locks above all.
//!
//! A lock's hard cases are about time and loss: a 30-second lease running out under a 35-second GC
//! pause, a reply lost after the server applied the call, a failover that forgets the last writes.
//! Against a real Redis they take real seconds and luck; here they replay in microseconds from a
//! seed. The pieces:
//!
//! - [`Engine`]: a synchronous Redis (strings, hashes, keys and TTLs, pub/sub, transactions,
//!   scripts, connection commands) whose replies and error texts are Redis 7.0's, on an injected
//!   [`Clock`] ([`ManualClock`], [`TokioClock`], [`SystemClock`]). `execute(client, argv)` returns a
//!   [`Frame`]; pub/sub messages wait in per-client outboxes.
//! - Scripts: a body registered in the engine's config as a [`NativeScript`] ([`native`]) runs as
//!   that Rust function (the lock's crate registers its scripts' twins so, `lock_core::fake`);
//!   any other body runs on an embedded Lua 5.1 with Redis 7.0's script environment (the default
//!   feature `lua`; without it, other bodies are refused with an error naming their SHA). The fake
//!   depends on no lock crate.
//! - [`FaultPlan`] ([`fault`]): lost requests and replies, delays, link outages, GC pauses,
//!   crashes, restarts, failovers with lag, clock jumps; every decision a pure function of the seed.
//! - [`FakeRedis`] ([`fixture`]): the test handle that puts it all together. It starts a server
//!   (or a Sentinel group, or a cluster), hands out `redis::aio::MultiplexedConnection`s over
//!   in-memory streams and a URL for any other client, moves the clock, adds faults at the
//!   current time, and reads keys without side effects. Start there.
//! - Front doors: [`FakeConnection`] (`redis::aio::ConnectionLike`, so `redis`-crate code runs
//!   unchanged), [`SubscriberDoor`] (pub/sub events through the fault plan) and the [`Link`] under
//!   both, on which other clients build their own doors (the lock's `FakeBackend` and
//!   `FakeSubscriber`, in `lock_core::fake`). Several share one engine through [`SharedEngine`].
//!
//! # Example
//!
//! A test of code that uses Redis, through the handle:
//!
//! ```
//! use fake_redis::FakeRedis;
//! use redis::AsyncCommands;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let redis = FakeRedis::start().await;
//! let mut con = redis.connection().await;
//! let _: () = con.set_ex("lease", "held", 30).await.unwrap();
//! redis.advance(Duration::from_secs(31)).await;
//! assert!(redis.get("lease").is_none());
//! # }
//! ```
//!
//! The engine alone, without a runtime: a key lives through its deadline millisecond and is
//! gone one millisecond later:
//!
//! ```
//! use bytes::Bytes;
//! use fake_redis::{Engine, Frame, ManualClock};
//!
//! let clock = ManualClock::default();
//! let mut engine = Engine::new(clock.clone());
//! let client = engine.connect();
//! let cmd = |line: &str| -> Vec<Bytes> {
//!     line.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
//! };
//! assert_eq!(engine.execute(client, &cmd("SET lease held PX 30000")), Frame::OK);
//! clock.advance(30_000);
//! assert_eq!(engine.execute(client, &cmd("PTTL lease")), Frame::Integer(0));
//! clock.advance(1);
//! assert_eq!(engine.execute(client, &cmd("GET lease")), Frame::Null);
//! ```
//!
//! An engine under a `redis`-crate connection without the protocol, on tokio's paused clock,
//! with the reply of one call lost:
//!
//! ```
//! use fake_redis::{CommandFate, Engine, FakeConnection, Fault, NodeId, TokioClock, shared};
//! use redis::AsyncCommands;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let engine = shared(Engine::new(TokioClock::new()));
//! let mut conn = FakeConnection::new(engine.clone(), NodeId(1));
//! let _: () = conn.set_ex("lease", "held", 30).await.unwrap();
//! engine.lock().unwrap().add_fault(Fault::next_commands(NodeId(1), 1, CommandFate::DropReply));
//! let lost = conn.del::<_, i64>("lease").await.unwrap_err();
//! assert!(lost.is_timeout()); // applied, but the caller cannot know
//! assert!(!conn.exists::<_, bool>("lease").await.unwrap());
//! # }
//! ```

// Without the embedded Lua (feature `lua`), what only a script's run reaches (its ACL check, its
// routing, the busy-script watch's Lua side) is unused. It stays compiled in both builds, so the
// two cannot drift apart; `scripts/test` checks the build without it.
#![cfg_attr(not(feature = "lua"), allow(dead_code, unused_imports))]

pub mod clock;
mod cmd;
pub mod engine;
pub mod fault;
pub mod fixture;
pub mod inprocess;
#[cfg(feature = "lua")]
mod lua;
pub mod native;
pub mod resp;
pub mod seed;
pub mod server;
/// Real servers for the unit tests that compare with one (the workspace's shared helper).
#[cfg(test)]
#[path = "../../scripts/servers.rs"]
mod test_servers;

pub use clock::{Clock, DEFAULT_EPOCH_MS, ManualClock, SystemClock, TokioClock};
pub use engine::cluster::{Cluster, key_slot};
pub use engine::db::{Entry, Hash, Value};
pub use engine::monitor::LoggedCommand;
pub use engine::replication::{DEFAULT_BASE_PORT, ReplicaLag, ServerNode, Topology};
pub use engine::sentinel::DEFAULT_MASTER_NAME;
pub use engine::{ClientId, DebugCommand, Engine, EngineConfig, Outbound, Version};
pub use fault::{
    Admission, CommandFate, DeliveryFate, Fault, FaultEvent, FaultEventKind, FaultPlan, NodeId,
    Trigger,
};
pub use fixture::FakeRedis;
pub use inprocess::link::{
    DEFAULT_RESPONSE_TIMEOUT, Link, LinkError, RequestLog, SentRequest, SharedEngine, shared,
};
pub use inprocess::redis_connection::FakeConnection;
pub use inprocess::subscriber::{SubscriberDoor, SubscriberError, SubscriberEvent};
pub use native::{Keyspace, NativeScript, NativeScripts};
pub use resp::Frame;

/// The crate's README, whose example is compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
