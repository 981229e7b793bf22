//! The clock a TCP server runs on, and how a connection waits for it.
//!
//! Over the network a fault's time has to mean something to a client in any language: a delayed
//! request lands, a paused client runs again, a held pub/sub message arrives when the server's
//! clock reaches a time. With `--clock system` that is a tokio sleep. With `--clock virtual` the
//! clock is a [`ManualClock`] that only `FAKE.ADVANCE` moves, so a connection waiting for a time
//! waits for an advance instead of sleeping: nothing happens by itself, and a test drives every
//! moment from its own connection.

use crate::clock::{ManualClock, SystemClock};
use crate::engine::{Engine, EngineConfig};
use std::time::Duration;
use tokio::sync::watch;

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
}

/// The server's clock: the engine's time source plus a way to wait for a time.
pub(crate) enum ServerClock {
    System,
    Virtual {
        clock: ManualClock,
        /// Bumped on every advance, so waiters re-read the clock.
        advanced: watch::Sender<u64>,
    },
}

impl ServerClock {
    pub fn new(choice: ClockChoice) -> ServerClock {
        match choice {
            ClockChoice::System => ServerClock::System,
            ClockChoice::Virtual { epoch_ms } => ServerClock::Virtual {
                clock: ManualClock::new(epoch_ms),
                advanced: watch::Sender::new(0),
            },
        }
    }

    /// An engine on this clock.
    pub fn engine(&self, config: EngineConfig) -> Engine {
        match self {
            ServerClock::System => Engine::with_config(SystemClock, config),
            ServerClock::Virtual { clock, .. } => Engine::with_config(clock.clone(), config),
        }
    }

    /// The virtual clock, if the server runs on one.
    pub fn manual(&self) -> Option<&ManualClock> {
        match self {
            ServerClock::System => None,
            ServerClock::Virtual { clock, .. } => Some(clock),
        }
    }

    /// Tells every waiter the virtual clock moved.
    pub fn notify_advanced(&self) {
        if let ServerClock::Virtual { advanced, .. } = self {
            advanced.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Waits until `now()` reads at least `until`. `now` reads the engine's clock (before jumps)
    /// and must not block.
    pub async fn wait_until(&self, until: i64, now: impl Fn() -> i64) {
        match self {
            ServerClock::System => loop {
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
