//! The doors to the engine for tokio code in the same process.
//!
//! A test that uses Redis through the `redis` crate, or a lock through `lock-core`'s `Backend`
//! (whose side lives in `lock_core::fake`, built on the link and the subscriber door here),
//! runs unchanged on the fake through these doors, on tokio's clock (virtual under paused time).
//! Every door of one client process belongs to one node, so that a fault aimed at the node (a
//! pause, a crash) freezes all of them together.
//!
//! - `link.rs`: a client's link to the engine, where the fault plan's answer is carried out with
//!   tokio sleeps; the command doors send through it;
//! - `redis_connection.rs`: [`FakeConnection`](crate::FakeConnection), a
//!   `redis::aio::ConnectionLike`;
//! - `subscriber.rs`: [`SubscriberDoor`](crate::SubscriberDoor), pub/sub events through the plan.

pub mod link;
pub mod redis_connection;
pub mod subscriber;
