//! What the tests of `FakeBackend` on tokio's paused clock share: an engine on a `TokioClock`, its
//! clock and keyspace read directly, and a command run from one line of words.

use super::argv;
use fake_redis::{Fault, SharedEngine, TokioClock, shared};
use lock_core::backend::{Backend, BackendError};
use lock_core::fake::FakeBackend;
use lock_core::reply::Reply;

/// An engine on tokio's clock (paused in these tests), running the lock's scripts as their
/// native twins.
pub fn engine() -> SharedEngine {
    shared(lock_core::fake::engine(TokioClock::new()))
}

/// Adds `fault` to the engine's plan.
pub fn add(engine: &SharedEngine, fault: Fault) {
    engine.lock().unwrap().add_fault(fault);
}

/// The engine's clock, in milliseconds.
pub fn now(engine: &SharedEngine) -> i64 {
    engine.lock().unwrap().clock_now()
}

/// Whether `key` is in database 0, read directly (no command, no expiry on access).
pub fn exists(engine: &SharedEngine, key: &str) -> bool {
    engine.lock().unwrap().value(0, key.as_bytes()).is_some()
}

pub async fn run(backend: &FakeBackend, cmd: &str) -> Result<Reply, BackendError> {
    backend.command(&argv(cmd)).await
}

/// Asserts that a call's outcome is unknown to its caller (it timed out, applied or not).
#[track_caller]
pub fn assert_unknown(result: &Result<Reply, BackendError>) {
    assert!(
        matches!(result, Err(BackendError::Unknown(_))),
        "{result:?}"
    );
}
