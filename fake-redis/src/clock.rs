//! Where the engine's time comes from.
//!
//! Redis reads the wall clock; a fake that must replay a 30-second lease in microseconds cannot.
//! Every reading of time in the engine goes through one [`Clock`], in unix milliseconds, so a test
//! picks its notion of time once: [`ManualClock`] for a simulator that jumps from event to event,
//! [`TokioClock`] for tokio tests (virtual under tokio's paused time, so the fake, the lock's
//! timers and the fault delays all move together), [`SystemClock`] for a server on real time.
//! Nothing else in this crate reads `SystemTime` or `Instant`.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of unix time in milliseconds.
pub trait Clock: Send + Sync + 'static {
    /// The current time, unix milliseconds.
    fn now_ms(&self) -> i64;

    /// The current time, unix microseconds, for `TIME`: the wall clock has them; a clock that
    /// moves in milliseconds reads its millisecond (the default).
    fn now_us(&self) -> i64 {
        self.now_ms().saturating_mul(1000)
    }

    /// Moves the clock forward by `ms` itself, when it is a virtual clock that its readers may
    /// move (`DEBUG SLEEP` on a [`ManualClock`]): `false`, the default, for a clock that moves by
    /// itself, on which a sleep has to be waited out instead.
    fn advance_by(&self, _ms: i64) -> bool {
        false
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }

    fn now_us(&self) -> i64 {
        (**self).now_us()
    }

    fn advance_by(&self, ms: i64) -> bool {
        (**self).advance_by(ms)
    }
}

/// A clock that moves only when its owner moves it: the simulator's clock.
///
/// Clones share the same time, so the owner keeps one handle and gives another to the engine.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock {
            now: Arc::new(AtomicI64::new(now_ms)),
        }
    }

    /// Moves the clock forward by `ms` (backward when negative).
    pub fn advance(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `now_ms`.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    /// A clock at [`DEFAULT_EPOCH_MS`].
    fn default() -> ManualClock {
        ManualClock::new(DEFAULT_EPOCH_MS)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    fn advance_by(&self, ms: i64) -> bool {
        self.advance(ms);
        true
    }
}

/// The unix time virtual clocks start at unless told otherwise: 2024-01-01T00:00:00Z.
///
/// A fixed, plausible date, so that replies such as `TIME` and `EXPIRETIME` look like a real
/// server's and never depend on when a test ran.
pub const DEFAULT_EPOCH_MS: i64 = 1_704_067_200_000;

/// A fixed epoch plus the time tokio's clock has moved since the clock was made.
///
/// Under `#[tokio::test(start_paused = true)]` tokio's clock is virtual and auto-advances when
/// every task waits on a timer, so a 30 s lease expires in microseconds of wall time; outside it,
/// this is real time from the epoch. Must be created inside a tokio runtime.
#[derive(Clone, Debug)]
pub struct TokioClock {
    epoch_ms: i64,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading [`DEFAULT_EPOCH_MS`] now.
    pub fn new() -> TokioClock {
        TokioClock::with_epoch(DEFAULT_EPOCH_MS)
    }

    /// A clock reading `epoch_ms` now.
    pub fn with_epoch(epoch_ms: i64) -> TokioClock {
        TokioClock {
            epoch_ms,
            origin: tokio::time::Instant::now(),
        }
    }

    /// The tokio instant at which this clock reads `unix_ms` (the origin if that is earlier).
    pub fn instant_at(&self, unix_ms: i64) -> tokio::time::Instant {
        let ms = unix_ms.saturating_sub(self.epoch_ms).max(0) as u64;
        self.origin + std::time::Duration::from_millis(ms)
    }
}

impl Default for TokioClock {
    fn default() -> TokioClock {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> i64 {
        let elapsed = self.origin.elapsed().as_millis();
        self.epoch_ms
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }
}

/// The machine's wall clock, as a real Redis reads it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    }

    fn now_us(&self) -> i64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        let shared = clock.clone();
        assert_eq!(shared.now_ms(), 1_000);
        clock.advance(250);
        assert_eq!(shared.now_ms(), 1_250);
        clock.set(7);
        assert_eq!(shared.now_ms(), 7);
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = TokioClock::with_epoch(5_000);
        assert_eq!(clock.now_ms(), 5_000);
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        assert_eq!(clock.now_ms(), 35_000);
        assert_eq!(clock.instant_at(35_000), tokio::time::Instant::now());
    }
}
