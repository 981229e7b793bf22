//! The tokio driver: [`LockClient`], its guards and owner handles.
//!
//! A client owns one [`LockMachine`], shared by its handles and one driver task behind a mutex
//! that no one holds across an `.await` (`state.rs`). A caller steps the machine itself, with the
//! time read from `tokio::time::Instant` relative to the client's creation (so tokio's paused time
//! drives it in tests), and runs its operation's call in its own task: an uncontended acquire or
//! unlock is one round trip with no hop through another task. The driver task handles what no
//! caller brings: timer expiries, pub/sub events, subscriptions (in order, one at a time, as the
//! machine requires) and the calls no caller runs, each bounded by the response timeout, side by
//! side so one slow call never stalls the others (`driver.rs`).
//!
//! Every acquire is one [`Acquire`] (lease or watchdog, wait budget, fencing, owner), awaited
//! directly; `lock`, `try_lock` and the rest are one-line shorthands of it. A [`LockGuard`] is
//! one count of a hold. It unlocks explicitly ([`LockGuard::unlock`], with a typed result) or,
//! when dropped, in the background; either way its renewal stops at once. It tells how long the
//! hold is certainly valid ([`LockGuard::valid_until`]) and resolves [`LockGuard::lost`] when the
//! lease is lost or may be lost, including when the driver stops; [`LockGuard::run`] stops a piece
//! of work at that moment. Reentrancy goes through an explicit [`LockOwner`] (from
//! [`LockGuard::owner`] or [`LockClient::new_owner`]), which can move between tasks: nothing
//! depends on thread or task identity (Redisson's thread ids are its most reported source of bugs:
//! #6662, #3580, #6878).
//!
//! Where each part lives: `acquire.rs` the builder and its future, `guard.rs` the guard and its
//! status, `owner.rs` the owner handle, `read_write.rs` the read-write lock's handle, `state.rs`
//! the machine and what the handles and the driver share, `driver.rs` the task, `os_seed.rs` the
//! ids of production clients.

/// The `lock*` shorthands, the same on [`LockClient`] (a new owner each time) and [`LockOwner`]
/// (which takes or re-enters as itself): each is one [`Acquire`] chain on the type's `acquire`.
macro_rules! acquire_shorthands {
    () => {
        /// Takes the lock, waiting as long as it takes; the watchdog keeps it.
        pub async fn lock(&self, name: &str) -> Result<LockGuard, LockError> {
            self.acquire(name).await
        }

        /// Takes the lock with a fixed lease (no watchdog: it expires after `lease`). Re-entering
        /// a fixed-lease hold sets the key's TTL to the new lease; re-entering a watchdog hold
        /// this way is refused.
        pub async fn lock_with_lease(
            &self,
            name: &str,
            lease: Duration,
        ) -> Result<LockGuard, LockError> {
            self.acquire(name).lease(lease).await
        }

        /// Tries to take the lock within `wait`; `Ok(None)` when it stayed held. `lease: None`
        /// uses the watchdog.
        pub async fn try_lock(
            &self,
            name: &str,
            wait: Duration,
            lease: Option<Duration>,
        ) -> Result<Option<LockGuard>, LockError> {
            self.acquire(name).wait(wait).lease_or_watchdog(lease).await
        }

        /// As [`lock`](Self::lock), also drawing a fencing token (returned, and on the guard).
        pub async fn lock_fenced(&self, name: &str) -> Result<(LockGuard, u64), LockError> {
            self.acquire(name).fenced().await.map(with_token)
        }

        /// As [`lock_with_lease`](Self::lock_with_lease), also drawing a fencing token.
        pub async fn lock_fenced_with_lease(
            &self,
            name: &str,
            lease: Duration,
        ) -> Result<(LockGuard, u64), LockError> {
            self.acquire(name)
                .lease(lease)
                .fenced()
                .await
                .map(with_token)
        }

        /// As [`try_lock`](Self::try_lock), also drawing a fencing token.
        pub async fn try_lock_fenced(
            &self,
            name: &str,
            wait: Duration,
            lease: Option<Duration>,
        ) -> Result<Option<(LockGuard, u64)>, LockError> {
            let acquire = self.acquire(name).wait(wait).lease_or_watchdog(lease);
            Ok(acquire.fenced().await?.map(with_token))
        }
    };
}

mod acquire;
mod driver;
mod guard;
mod os_seed;
mod owner;
mod read_write;
mod state;

pub use acquire::{Acquire, AcquireFuture, UntilAcquired, WithinBudget};
pub use guard::LockGuard;
pub use owner::LockOwner;
pub use read_write::ReadWriteLock;
pub use state::{HoldEvent, HoldStatus};

use crate::backend::Backend;
use crate::config::{ConfigError, LockConfig};
use crate::machine::{
    CallId, Done, IdSource, Input, LockError, LockMachine, OpId, RemainingLease, Request, SeededIds,
};
use acquire::with_token;
use driver::Driver;
use state::{Answer, BackendCalls, CallFuture, ClientState, call_result};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// A lock client: one driver task, one watchdog, one set of unlock subscriptions.
///
/// Cheap to clone (clones share the driver). The driver runs while the client, a clone, a guard
/// or an owner handle exists, and stops once all are gone and their unlocks are done; or at once
/// on [`LockClient::abort`].
#[derive(Clone)]
pub struct LockClient {
    shared: Arc<Shared>,
}

struct Shared {
    state: Arc<ClientState>,
    client_id: String,
    config: LockConfig,
    next_op: AtomicU64,
    driver: tokio::task::AbortHandle,
}

impl Drop for Shared {
    /// The last handle is gone: the driver finishes the operations in progress and ends.
    fn drop(&mut self) {
        self.state.close();
    }
}

/// Why a [`LockClient`] could not start.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The configuration is unsafe; the error names the setting and the rule.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No tokio runtime is running here, and the client's driver is a tokio task.
    #[error(
        "a LockClient needs a tokio runtime to run its driver task: create it from code running \
         on the runtime (an async fn, or after Runtime::enter)"
    )]
    NoRuntime,
}

impl LockClient {
    /// A client on the Redis at `url` (any URL the `redis` crate accepts: `redis://`, `rediss://`
    /// with the `tls` feature, a password, a database number), with the one response timeout of
    /// `config` ([`LockConfig::response_timeout`]) for connecting and for every call. For a
    /// Cluster or Sentinel, connect their backend and use [`LockClient::new`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = lock_core::LockClient::connect("redis://127.0.0.1/", Default::default()).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "redis")]
    pub async fn connect(
        url: &str,
        config: LockConfig,
    ) -> Result<LockClient, crate::redis_backend::ConnectError> {
        config.validate().map_err(ClientError::from)?;
        let timeout = config.response_timeout().to_duration();
        let backend = crate::RedisBackend::connect(url, timeout).await?;
        Ok(LockClient::new(backend, config)?)
    }

    /// A client over `backend`; refuses an unsafe `config`, and a call outside a tokio runtime.
    /// Ids are drawn from a generator seeded once from the operating system.
    pub fn new<B: Backend>(backend: B, config: LockConfig) -> Result<LockClient, ClientError> {
        LockClient::with_ids(backend, config, SeededIds::from_os())
    }

    /// A client whose client, owner and request ids come from `ids` (a seeded source makes a test
    /// replay exactly).
    pub fn with_ids<B: Backend>(
        backend: B,
        config: LockConfig,
        ids: impl IdSource,
    ) -> Result<LockClient, ClientError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ClientError::NoRuntime)?;
        let mut machine = LockMachine::new(config.clone(), ids)?;
        machine.set_publish_command(backend.publish_command());
        let client_id = machine.client_id().to_owned();
        let response_timeout = config.response_timeout().to_duration();
        let backend = Arc::new(backend);
        let calls = BackendCalls::new(Arc::clone(&backend), response_timeout);
        let state = ClientState::new(machine, Box::new(calls));
        let driver = Driver::new(Arc::clone(&state), backend, response_timeout);
        let handle = runtime.spawn(driver);
        Ok(LockClient {
            shared: Arc::new(Shared {
                state,
                client_id,
                config,
                next_op: AtomicU64::new(1),
                driver: handle.abort_handle(),
            }),
        })
    }

    /// Calls `observer` with every event of this client's holds from now on: each grant,
    /// renewal, move of `valid_until` and change of state, as the machine reports it and its
    /// guards see it. For test harnesses and metrics; it runs under the client's own lock, so it
    /// must be quick and must not call the client. A second call replaces the first observer.
    pub fn observe(&self, observer: impl FnMut(HoldEvent) + Send + 'static) {
        self.shared.state.observe(Box::new(observer));
    }

    /// This client's id (the first part of every owner it writes).
    pub fn client_id(&self) -> &str {
        &self.shared.client_id
    }

    /// The configuration.
    pub fn config(&self) -> &LockConfig {
        &self.shared.config
    }

    /// Stops the driver at once, as a crash would: no renewal, no release, no answer is sent
    /// any more, and every guard's [`LockGuard::lost`] resolves. Locks expire with their leases.
    pub fn abort(&self) {
        self.shared.state.stop();
        self.shared.driver.abort();
    }

    /// A new owner, for reentrant use across tasks.
    pub async fn new_owner(&self) -> Result<LockOwner, LockError> {
        match self.send(Request::NewOwner)?.await?.result? {
            Done::Owner(id) => Ok(LockOwner::new(self.clone(), id)),
            other => Err(unexpected(other)),
        }
    }

    /// An acquire of the lock `name` for a new owner, to shape and then await: by default it
    /// waits as long as it takes and the watchdog keeps the lock.
    pub fn acquire(&self, name: &str) -> Acquire<'_> {
        Acquire::new(self, name)
    }

    acquire_shorthands!();

    /// The read-write lock `name` (Redisson's `RReadWriteLock`, the same keys): many readers
    /// or one writer.
    pub fn read_write<'a>(&'a self, name: &'a str) -> ReadWriteLock<'a> {
        ReadWriteLock::new(self, name)
    }

    /// Takes the lock (as [`lock`](Self::lock) does), runs `work` under it and unlocks; the
    /// scoped form of [`LockGuard::run`], which says what happens when the lease is lost.
    pub async fn with_lock<T>(
        &self,
        name: &str,
        work: impl AsyncFnOnce(&LockGuard) -> T,
    ) -> Result<T, LockError> {
        self.lock(name).await?.run(work).await
    }

    /// Deletes the lock whoever holds it and wakes its waiters; whether a lock was deleted.
    /// This client's own holds of it stop renewing first and are reported lost.
    pub async fn force_unlock(&self, name: &str) -> Result<bool, LockError> {
        match self.ask(Request::ForceUnlock { name: name.into() }).await? {
            Done::ForceUnlocked(deleted) => Ok(deleted),
            other => Err(unexpected(other)),
        }
    }

    /// [`force_unlock`](Self::force_unlock) of a fair lock (see [`Acquire::fair`]): also drops
    /// the queue's stale waiters, and wakes the waiter whose turn it is.
    pub async fn force_unlock_fair(&self, name: &str) -> Result<bool, LockError> {
        let request = Request::FairForceUnlock {
            name: name.into(),
            wall_ms: unix_ms(),
        };
        match self.ask(request).await? {
            Done::ForceUnlocked(deleted) => Ok(deleted),
            other => Err(unexpected(other)),
        }
    }

    /// Whether anyone holds the lock.
    pub async fn is_locked(&self, name: &str) -> Result<bool, LockError> {
        match self.ask(Request::IsLocked { name: name.into() }).await? {
            Done::Locked(locked) => Ok(locked),
            other => Err(unexpected(other)),
        }
    }

    /// How many times `owner` holds the lock, as the server counts.
    pub async fn hold_count(&self, name: &str, owner: &LockOwner) -> Result<u64, LockError> {
        let request = Request::HoldCount {
            name: name.into(),
            owner: owner.id(),
        };
        match self.ask(request).await? {
            Done::HoldCount(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// The lock's remaining lease on the server.
    pub async fn remaining_lease(&self, name: &str) -> Result<RemainingLease, LockError> {
        match self
            .ask(Request::RemainingLease { name: name.into() })
            .await?
        {
            Done::RemainingLease(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Sends one request and waits for its result.
    async fn ask(&self, request: Request) -> Result<Done, LockError> {
        self.send(request)?.await?.result
    }

    /// Hands one request to the machine; the returned [`Exchange`] resolves with its answer.
    ///
    /// The step happens here, in the caller's task. A call the step makes for this operation is
    /// the exchange's to run, when the caller is on a tokio runtime (a backend's futures may need
    /// its timers and I/O); otherwise the driver runs it.
    fn send(&self, request: Request) -> Result<Exchange<'_>, LockError> {
        let op = OpId(self.shared.next_op.fetch_add(1, Ordering::Relaxed));
        let state = &self.shared.state;
        let runs_own_call = tokio::runtime::Handle::try_current().is_ok();
        let now = state.now();
        let own = {
            let mut core = state.lock();
            if core.is_stopped() {
                return Err(LockError::ClientStopped);
            }
            core.expect(op);
            let own = core.step(
                Input::Request { op, request },
                now,
                runs_own_call.then_some(op),
            );
            core.nudge_driver();
            own
        };
        Ok(Exchange {
            client: self,
            op,
            call: own.map(|(id, call)| (id, state.start_call(call))),
            answered: false,
        })
    }

    /// Whether the client has stopped (aborted, its driver ended, or its runtime shut down).
    fn stopped(&self) -> bool {
        self.shared.state.is_stopped() || self.shared.driver.is_finished()
    }
}

impl fmt::Debug for LockClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockClient")
            .field("client_id", &self.shared.client_id)
            .field("stopped", &self.stopped())
            .finish_non_exhaustive()
    }
}

/// One request in flight and its answer to come. Dropping it unanswered cancels the request (an
/// acquire in flight is undone if it succeeds); a call it was running goes on in the driver.
struct Exchange<'a> {
    client: &'a LockClient,
    op: OpId,
    /// The operation's call, while this exchange runs it itself.
    call: Option<(CallId, CallFuture)>,
    answered: bool,
}

impl Future for Exchange<'_> {
    type Output = Result<Answer, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let state = &this.client.shared.state;
        loop {
            let came_back = match &mut this.call {
                Some((id, call)) => match call.as_mut().poll(cx) {
                    Poll::Ready(outcome) => Some((*id, outcome)),
                    Poll::Pending => None,
                },
                None => None,
            };
            let now = state.now();
            let mut core = state.lock();
            let mut next = None;
            if let Some((id, outcome)) = came_back {
                this.call = None;
                if !core.is_stopped() {
                    next = core.step(call_result(id, outcome), now, Some(this.op));
                    core.nudge_driver();
                }
            }
            let answer = core.poll_answer(this.op, cx.waker());
            if answer.is_ready() {
                this.answered = true;
                if let Some((id, call)) = next {
                    // Answered with a call still to make: not this caller's to wait for.
                    core.hand_over((id, state.start_call(call)));
                }
                return answer;
            }
            drop(core);
            match next {
                // The operation's next attempt: this caller runs it too.
                Some((id, call)) => this.call = Some((id, state.start_call(call))),
                None => return Poll::Pending,
            }
        }
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let state = &self.client.shared.state;
            let now = state.now();
            state.lock().abandon(self.op, self.call.take(), now);
        }
    }
}

fn unexpected(done: Done) -> LockError {
    tracing::error!(
        ?done,
        "the lock machine answered an operation with another's result"
    );
    LockError::ClientStopped
}

/// The wall clock in unix ms, which the fair lock's queue deadlines are reckoned in (the machine
/// reads no clock; it anchors its own to the first reading it is given). It is read once per
/// process and moved on by tokio's clock, so every client of the process reckons in one clock,
/// and on tokio's paused time that clock moves with the virtual time the queue's waits are
/// measured in.
fn unix_ms() -> i64 {
    static ANCHOR: std::sync::OnceLock<(i64, tokio::time::Instant)> = std::sync::OnceLock::new();
    let (wall, at) = *ANCHOR.get_or_init(|| {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        (wall, tokio::time::Instant::now())
    });
    let moved = tokio::time::Instant::now().saturating_duration_since(at);
    wall.saturating_add(moved.as_millis() as i64)
}
