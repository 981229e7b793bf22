//! Active expiry: Redis's `activeExpireCycle`, run on the engine's clock instead of a timer.
//!
//! A key past its deadline is gone to every command at once (a lookup expires it lazily), but it
//! still takes memory until something removes it, and the lock writes a latch key with a 10 s
//! TTL on every call: without a background sweep the keyspace of a long run grows without bound.
//! Redis sweeps ten times a second, sampling 20 keys with a TTL per loop and looping while more
//! than a tenth of a sample had expired. The fake has no background thread (a simulated run must
//! not depend on one), so the engine asks [`ActiveExpiry`] at the start of every command whether
//! a 100 ms tick has passed, and runs the cycles it missed then, at their own tick times, with a
//! bound on the work so that a clock moved by an hour does not stall one command.

use crate::engine::db::Db;

/// Active expiry: cycles per second (Redis's `hz 10`).
pub const ACTIVE_EXPIRE_HZ: i64 = 10;
/// Active expiry: keys sampled per loop (`ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
pub const ACTIVE_EXPIRE_KEYS_PER_LOOP: usize = 20;
/// Active expiry: a loop repeats while more than this percentage of its sample had expired
/// (`ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE`).
pub const ACTIVE_EXPIRE_ACCEPTABLE_STALE: usize = 10;
/// Active expiry: loops per database per cycle, at most (Redis bounds a cycle by CPU time; a fake
/// needs a bound that does not depend on the machine).
pub const ACTIVE_EXPIRE_MAX_LOOPS: usize = 256;
/// Active expiry: cycles one `execute` catches up at most; further missed ticks are skipped.
pub const ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL: usize = 10;

/// The length of one tick, ms.
const PERIOD: i64 = 1000 / ACTIVE_EXPIRE_HZ;

/// When the next cycle is due.
pub(crate) struct ActiveExpiry {
    next_tick: i64,
}

impl ActiveExpiry {
    /// Ticks counted from `now`.
    pub fn new(now: i64) -> ActiveExpiry {
        ActiveExpiry {
            next_tick: next_tick_after(now),
        }
    }

    /// Whether [`catch_up`](Self::catch_up) has work at `now`: a tick has passed, or the clock
    /// went back past the last one. Every command asks, so this is two comparisons.
    #[inline]
    pub fn is_due(&self, now: i64) -> bool {
        now >= self.next_tick || now < self.next_tick - PERIOD
    }

    /// Runs the cycles of the ticks up to `now` over `dbs`, drawing samples from `random`.
    pub fn catch_up(&mut self, dbs: &mut [Db], now: i64, random: &mut impl FnMut() -> u64) {
        if now < self.next_tick - PERIOD {
            // The clock went back (a jump): start counting ticks from here.
            self.next_tick = next_tick_after(now);
            return;
        }
        let mut cycles = 0;
        while self.next_tick <= now && cycles < ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL {
            cycle(dbs, self.next_tick, random);
            self.next_tick += PERIOD;
            cycles += 1;
        }
        if self.next_tick <= now {
            // Too far behind: the missed ticks are skipped, as a stalled server would skip them.
            self.next_tick = next_tick_after(now);
        }
    }
}

/// One cycle of Redis's `activeExpireCycle` at time `at`: per database, loops of 20 sampled
/// keys, repeated while more than 10% of a sample had expired.
fn cycle(dbs: &mut [Db], at: i64, random: &mut impl FnMut() -> u64) {
    for db in dbs {
        let mut loops = 0;
        while db.has_volatile() && loops < ACTIVE_EXPIRE_MAX_LOOPS {
            loops += 1;
            let (sampled, expired) =
                db.expire_sample(at, ACTIVE_EXPIRE_KEYS_PER_LOOP, &mut *random);
            if sampled == 0 || expired * 100 / sampled <= ACTIVE_EXPIRE_ACCEPTABLE_STALE {
                break;
            }
        }
    }
}

fn next_tick_after(now: i64) -> i64 {
    now - now.rem_euclid(PERIOD) + PERIOD
}
