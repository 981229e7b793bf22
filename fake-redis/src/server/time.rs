//! The clock a TCP server runs on, and how a connection waits for it.
//!
//! Over the network a fault's time has to mean something to a client in any language: a delayed
//! request lands, a paused client runs again, a held pub/sub message arrives when the server's
//! clock reaches a time. With `--clock system` that is a tokio sleep. With `--clock virtual` the
//! clock is a [`ManualClock`] that only `FAKE.ADVANCE` moves, so a connection waiting for a time
//! waits for an advance instead of sleeping: nothing happens by itself, and a test drives every
//! moment from its own connection. On tokio's clock (the in-process handle's choice under a
//! paused runtime) a wait is a tokio sleep, as on the system clock.
//!
//! On the virtual clock a waiting connection also registers a *timer* (its due time), so that
//! `FAKE.ADVANCE` can move the clock from one due time to the next, letting each waiting
//! connection run at its own time, and reply only once everything due has run: after
//! `FAKE.ADVANCE 500` a request delayed by 300 ms has landed, at +300.

use crate::clock::{Clock, ManualClock, SystemClock, TokioClock};
use crate::engine::cluster::Cluster;
use crate::engine::replication::ReplicaLag;
use crate::engine::{ClientId, Engine, EngineConfig};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// How long `FAKE.ADVANCE` waits (real time) for the connections due at one time to run before
/// it moves on regardless: a safety net, never reached while the server is healthy.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// Which clock the server's engine reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockChoice {
    /// The machine's wall clock (the default), as a real Redis.
    System,
    /// A virtual clock starting at `epoch_ms` (unix ms) that only `FAKE.ADVANCE` moves.
    Virtual {
        /// The unix time the clock reads when the server starts.
        epoch_ms: i64,
    },
    /// tokio's clock, reading `epoch_ms` (unix ms) when the server starts ([`TokioClock`]):
    /// under a paused runtime (`#[tokio::test(start_paused = true)]`) it moves when the test
    /// sleeps or calls `tokio::time::advance`, together with every timer of the client's code.
    /// Must be chosen inside a tokio runtime.
    Tokio {
        /// The unix time the clock reads when the server starts.
        epoch_ms: i64,
    },
}

/// The server's clock: the engine's time source plus a way to wait for a time.
pub(crate) enum ServerClock {
    System(BatchClock),
    Tokio(TokioClock),
    Virtual {
        clock: ManualClock,
        /// Bumped on every advance, so waiters re-read the clock.
        advanced: watch::Sender<u64>,
        /// The due times of the connections waiting for the clock, with their client ids.
        timers: Mutex<BTreeSet<(i64, u64)>>,
        /// Notified when a timer is removed.
        timer_removed: Notify,
    },
}

impl ServerClock {
    pub fn new(choice: ClockChoice) -> ServerClock {
        match choice {
            ClockChoice::System => ServerClock::System(BatchClock::default()),
            ClockChoice::Tokio { epoch_ms } => ServerClock::Tokio(TokioClock::with_epoch(epoch_ms)),
            ClockChoice::Virtual { epoch_ms } => ServerClock::Virtual {
                clock: ManualClock::new(epoch_ms),
                advanced: watch::Sender::new(0),
                timers: Mutex::new(BTreeSet::new()),
                timer_removed: Notify::new(),
            },
        }
    }

    /// An engine on this clock.
    pub fn engine(&self, config: EngineConfig) -> Engine {
        match self {
            ServerClock::System(clock) => Engine::with_config(clock.clone(), config),
            ServerClock::Tokio(clock) => Engine::with_config(clock.clone(), config),
            ServerClock::Virtual { clock, .. } => Engine::with_config(clock.clone(), config),
        }
    }

    /// A cluster of engines on this clock (see [`Cluster::new`]).
    pub fn cluster(
        &self,
        config: EngineConfig,
        shards: u16,
        replicas: u16,
        lag: ReplicaLag,
        base_port: u16,
    ) -> Cluster {
        match self {
            ServerClock::System(clock) => {
                Cluster::new(clock.clone(), config, shards, replicas, lag, base_port)
            }
            ServerClock::Tokio(clock) => {
                Cluster::new(clock.clone(), config, shards, replicas, lag, base_port)
            }
            ServerClock::Virtual { clock, .. } => {
                Cluster::new(clock.clone(), config, shards, replicas, lag, base_port)
            }
        }
    }

    /// Whether this is the machine's wall clock, which moves by itself.
    pub fn is_system(&self) -> bool {
        matches!(self, ServerClock::System(_))
    }

    /// The virtual clock, if the server runs on one.
    pub fn manual(&self) -> Option<&ManualClock> {
        match self {
            ServerClock::System(_) | ServerClock::Tokio(_) => None,
            ServerClock::Virtual { clock, .. } => Some(clock),
        }
    }

    /// Starts a batch of requests run under one lock of the engine, until the guard drops: with
    /// the system clock, the time is read once here and every request of the batch sees it, as
    /// Redis reads its clock once per event-loop iteration. Take it with the engine locked and
    /// drop it before unlocking.
    pub fn batch(&self) -> Batch<'_> {
        if let ServerClock::System(clock) = self {
            clock.cached.store(SystemClock.now_ms(), Ordering::SeqCst);
            clock.in_batch.store(true, Ordering::SeqCst);
        }
        Batch(self)
    }

    /// Tells every waiter the virtual clock moved.
    pub fn notify_advanced(&self) {
        if let ServerClock::Virtual { advanced, .. } = self {
            advanced.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Records that `client` waits for the clock to read `due` (virtual clock only). Call it
    /// under the engine's lock, with the work that decided the wait.
    pub fn register_timer(&self, due: i64, client: ClientId) {
        if let ServerClock::Virtual { timers, .. } = self {
            lock(timers).insert((due, client.0));
        }
    }

    /// Records that `client`'s wait for `due` is over. Call it under the engine's lock, with the
    /// work the wait was for.
    pub fn remove_timer(&self, due: i64, client: ClientId) {
        if let ServerClock::Virtual {
            timers,
            timer_removed,
            ..
        } = self
        {
            lock(timers).remove(&(due, client.0));
            timer_removed.notify_waiters();
        }
    }

    /// The earliest due time at or before `until`, if a connection waits for one.
    pub fn next_timer_until(&self, until: i64) -> Option<i64> {
        match self {
            ServerClock::System(_) | ServerClock::Tokio(_) => None,
            ServerClock::Virtual { timers, .. } => lock(timers)
                .first()
                .map(|&(due, _)| due)
                .filter(|&due| due <= until),
        }
    }

    /// Waits until no connection waits for a time at or before `at` any more: each has run what
    /// it waited for (or gone). `false` if they have not after [`SETTLE_LIMIT`].
    pub async fn settled(&self, at: i64) -> bool {
        let ServerClock::Virtual {
            timers,
            timer_removed,
            ..
        } = self
        else {
            return true;
        };
        let deadline = tokio::time::Instant::now() + SETTLE_LIMIT;
        loop {
            let removed = timer_removed.notified();
            tokio::pin!(removed);
            removed.as_mut().enable();
            if lock(timers).first().is_none_or(|&(due, _)| due > at) {
                return true;
            }
            if tokio::time::timeout_at(deadline, removed).await.is_err() {
                tracing::warn!(at, "connections due at this time did not run; moving on");
                return false;
            }
        }
    }

    /// Waits until `now()` reads at least `until`. `now` reads the engine's clock (before jumps)
    /// and must not block.
    pub async fn wait_until(&self, until: i64, now: impl Fn() -> i64) {
        match self {
            ServerClock::System(_) | ServerClock::Tokio(_) => loop {
                let left = until.saturating_sub(now());
                if left <= 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(left.unsigned_abs())).await;
            },
            ServerClock::Virtual { advanced, .. } => {
                let mut rx = advanced.subscribe();
                loop {
                    // Marked seen before the check: an advance after it wakes `changed`.
                    rx.borrow_and_update();
                    if now() >= until {
                        return;
                    }
                    if rx.changed().await.is_err() {
                        // The server is gone; nothing will move the clock again.
                        return std::future::pending().await;
                    }
                }
            }
        }
    }
}

/// A batch of requests on one reading of the system clock (see [`ServerClock::batch`]); ends
/// when dropped, a panic included.
pub(crate) struct Batch<'a>(&'a ServerClock);

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if let ServerClock::System(clock) = self.0 {
            clock.in_batch.store(false, Ordering::SeqCst);
        }
    }
}

/// The system clock, read once per batch of requests while one runs (see
/// [`ServerClock::batch`]) and on every call otherwise: reading the time per request is a
/// measurable part of a cheap request's cost.
#[derive(Clone, Debug, Default)]
pub(crate) struct BatchClock {
    in_batch: Arc<AtomicBool>,
    cached: Arc<AtomicI64>,
}

impl Clock for BatchClock {
    fn now_ms(&self) -> i64 {
        if self.in_batch.load(Ordering::SeqCst) {
            self.cached.load(Ordering::SeqCst)
        } else {
            SystemClock.now_ms()
        }
    }

    /// Read afresh, as Redis's `TIME` reads `gettimeofday`, never before the batch's millisecond.
    fn now_us(&self) -> i64 {
        SystemClock.now_us().max(self.now_ms().saturating_mul(1000))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
