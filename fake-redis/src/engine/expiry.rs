//! Active expiry: Redis 7.0's `activeExpireCycle`, slow and fast, run on the engine's clock
//! instead of timers and the event loop.
//!
//! A key past its deadline is gone to every command at once (a lookup expires it lazily), but it
//! still takes memory until something removes it, and the lock writes a latch key with a 10 s
//! TTL on every call: without a background sweep the keyspace of a long run grows without bound.
//! Redis sweeps in two ways, and so does the engine:
//!
//! - **The slow cycle**, ten times a second (`hz 10`) from `serverCron`: per database, loops that
//!   sample 20 keys with a TTL and delete the expired ones, repeated while more than a tenth of a
//!   sample had expired, until 25% of the tick (25 ms) is spent.
//! - **The fast cycle**, from `beforeSleep`, each time the event loop is about to wait: the same
//!   loops with a budget of 1 ms, at most once per 2 ms, and only while the last cycle ended on
//!   its time limit (Redis also lets it run when its estimate of stale keys is above 10%, but it
//!   compares a fraction with a percentage, so that never decides).
//!
//! Those are the figures at Redis's defaults; `CONFIG SET hz` and `active-expire-effort` change
//! them as Redis does (the tick's length, keys a loop, the stale share, both budgets: `Tuning`).
//!
//! The fake has no background thread and no event loop (a simulated run must not depend on
//! either), and it must not measure CPU time (a run must replay). So:
//!
//! - **Time is work.** A cycle's time is the work it did at a fixed cost per key, Redis's on a
//!   quiet machine: [`ACTIVE_EXPIRE_SAMPLE_NS`] to sample a key and [`ACTIVE_EXPIRE_DELETE_NS`]
//!   more to delete an expired one, 0.53 µs in all, about what Redis 7.0.15 spends per key
//!   when 100,000 keys written with `PX 300` are down to 1,293 half a second later (two cron
//!   ticks and their fast cycles, 52 ms of budget, for most of the 98,707 keys). `scripts/expiry-lag` measures
//!   both servers side by side. Redis looks at its clock every 16 loops; so does the model.
//! - **The slow cycle runs at its tick.** The engine asks [`ActiveExpiry`] at the start of every
//!   command whether a 100 ms tick has passed, and runs the cycles it missed then, each at its
//!   own tick time, at most [`ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL`] of them, so a clock moved by an
//!   hour does not stall one command.
//! - **Redis's table of keys with a TTL has a size.** Its cycle samples that hash table by bucket,
//!   and stops on a database whose table is less than 1% full ("sampling the key space is
//!   expensive, so stop here waiting for better times"), until the cron shrinks the table, which
//!   it does at each tick once it is less than 10% full. So after a mass expiry the last 1% of
//!   the table's size (1,310 of 100,000 keys) stays until the next tick. The engine keeps its
//!   keys with a TTL in a dense vector, but keeps the size Redis's table would have (a power of
//!   two, grown past its count, shrunk at a tick) and stops where Redis stops.
//! - **"Before sleep" is after a command, and after a tick.** Redis's event loop sleeps after
//!   each batch of commands it read, and wakes for each cron tick. The engine runs the fast cycle
//!   at the end of every command and right after every slow cycle it catches up, when the rules
//!   above allow one, at that command's (or tick's) time; the 2 ms spacing is on the engine's
//!   clock, so a burst of commands at one frozen time runs at most one fast cycle.
//!
//! Every cycle draws its samples from the engine's seeded generator, so the same commands at the
//! same times leave the same keys.

use crate::engine::db::Db;

/// Active expiry: cycles per second (Redis's `hz 10`).
pub const ACTIVE_EXPIRE_HZ: i64 = 10;
/// Active expiry: keys sampled per loop (`ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
pub const ACTIVE_EXPIRE_KEYS_PER_LOOP: usize = 20;
/// Active expiry: a loop repeats while more than this percentage of its sample had expired
/// (`ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE`).
pub const ACTIVE_EXPIRE_ACCEPTABLE_STALE: usize = 10;
/// Active expiry: the slow cycle's time limit, µs (`ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC`, 25% of
/// a tick at `hz 10`).
pub const ACTIVE_EXPIRE_SLOW_LIMIT_US: u64 = 25_000;
/// Active expiry: the fast cycle's time limit, µs (`ACTIVE_EXPIRE_CYCLE_FAST_DURATION`); one
/// starts at most once per twice this.
pub const ACTIVE_EXPIRE_FAST_LIMIT_US: u64 = 1_000;
/// Active expiry: the modelled time to sample a key, ns.
pub const ACTIVE_EXPIRE_SAMPLE_NS: u64 = 100;
/// Active expiry: the modelled time to delete a sampled key that had expired, ns, beyond
/// sampling it.
pub const ACTIVE_EXPIRE_DELETE_NS: u64 = 430;
/// Active expiry: cycles one `execute` catches up at most; further missed ticks are skipped.
pub const ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL: usize = 10;

/// Redis's smallest hash table (`DICT_HT_INITIAL_SIZE`).
const SMALLEST_TABLE: usize = 4;

/// Which cycle runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cycle {
    Slow,
    Fast,
}

/// The cycle's figures under `hz` and `active-expire-effort`, rescaled as Redis 7.0's
/// `activeExpireCycle` rescales its constants: with effort `e` from 0 to 9 (the parameter minus
/// one), `20 + 20/4·e` keys a loop, `10 - e` percent acceptable stale, a slow cycle of
/// `(25 + 2e)%` of a tick and a fast one of `1000 + 1000/4·e` µs; a tick is `1000 / hz` ms. At
/// the defaults (`hz 10`, effort 1) these are the `ACTIVE_EXPIRE_*` constants above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tuning {
    /// The length of one tick, ms.
    period: i64,
    keys_per_loop: usize,
    acceptable_stale: usize,
    slow_limit_us: u64,
    fast_limit_us: u64,
}

impl Tuning {
    fn new(hz: u32, effort: u32) -> Tuning {
        // Redis keeps `hz` within 1..=500 and `active-expire-effort` within 1..=10.
        let hz = u64::from(hz.clamp(1, 500));
        let e = u64::from(effort.clamp(1, 10) - 1);
        let e_usize = usize::try_from(e).unwrap_or(0);
        Tuning {
            period: i64::try_from(1000 / hz).unwrap_or(1),
            keys_per_loop: ACTIVE_EXPIRE_KEYS_PER_LOOP + ACTIVE_EXPIRE_KEYS_PER_LOOP / 4 * e_usize,
            acceptable_stale: ACTIVE_EXPIRE_ACCEPTABLE_STALE - e_usize,
            slow_limit_us: ((25 + 2 * e) * 1_000_000 / hz / 100).max(1),
            fast_limit_us: ACTIVE_EXPIRE_FAST_LIMIT_US + ACTIVE_EXPIRE_FAST_LIMIT_US / 4 * e,
        }
    }

    fn limit_us(&self, cycle: Cycle) -> u64 {
        match cycle {
            Cycle::Slow => self.slow_limit_us,
            Cycle::Fast => self.fast_limit_us,
        }
    }

    /// A fast cycle starts at most once per twice its duration, ms.
    fn fast_spacing_ms(&self) -> i64 {
        i64::try_from(2 * self.fast_limit_us / 1000).unwrap_or(i64::MAX)
    }

    fn next_tick_after(&self, now: i64) -> i64 {
        now - now.rem_euclid(self.period) + self.period
    }
}

/// When the next cycle is due, and what the last one left for the fast cycle to decide on.
pub(crate) struct ActiveExpiry {
    tuning: Tuning,
    next_tick: i64,
    /// The last cycle ended on its time limit (Redis's `timelimit_exit`).
    hit_limit: bool,
    /// When the last fast cycle ran, ms.
    last_fast: i64,
    /// The database the next cycle starts at (Redis's `current_db`).
    next_db: usize,
    /// Cycles that ended on their time limit (`INFO`'s `expired_time_cap_reached_count`).
    pub time_cap_reached: u64,
    /// The share of sampled keys found expired, a running average weighting each cycle 5%
    /// (`INFO`'s `expired_stale_perc`, as a fraction).
    pub stale: f64,
    /// Per database, the size Redis's table of keys with a TTL would have.
    table_sizes: Vec<usize>,
    /// `DEBUG SET-ACTIVE-EXPIRE 0` turned the cycles off (Redis's `active_expire_enabled`).
    disabled: bool,
}

impl ActiveExpiry {
    /// Ticks counted from `now`.
    pub fn new(now: i64) -> ActiveExpiry {
        let tuning = Tuning::new(10, 1);
        ActiveExpiry {
            tuning,
            next_tick: tuning.next_tick_after(now),
            hit_limit: false,
            last_fast: i64::MIN,
            next_db: 0,
            time_cap_reached: 0,
            stale: 0.0,
            table_sizes: Vec::new(),
            disabled: false,
        }
    }

    /// Turns the cycles on or off (`DEBUG SET-ACTIVE-EXPIRE`). Off, no cycle runs, slow or
    /// fast; back on, the next command catches up as after any stall.
    pub fn set_enabled(&mut self, on: bool) {
        self.disabled = !on;
    }

    /// Whether [`catch_up`](Self::catch_up) has work at `now`: a tick has passed, or the clock
    /// went back past the last one. Every command asks, so this is two comparisons.
    #[inline]
    pub fn is_due(&self, now: i64) -> bool {
        !self.disabled && now >= self.next_tick || now < self.next_tick - self.tuning.period
    }

    /// The time of the last tick whose cycle ran, and the length of a tick, ms (the field
    /// cycle of `hash_ttl.rs` runs at the same ticks).
    pub(crate) fn last_tick(&self) -> (i64, i64) {
        (self.next_tick - self.tuning.period, self.tuning.period)
    }

    /// `CONFIG SET hz` or `active-expire-effort`: the next cycles run with the new figures, the
    /// ticks counted again from `now` when their length changed.
    pub fn tune(&mut self, hz: u32, effort: u32, now: i64) {
        let tuning = Tuning::new(hz, effort);
        if tuning.period != self.tuning.period {
            self.next_tick = tuning.next_tick_after(now);
        }
        self.tuning = tuning;
    }

    /// Runs the slow cycles of the ticks up to `now` over `dbs`, each followed by the fast
    /// cycle its wake-up allows, drawing samples from `random`.
    pub fn catch_up(&mut self, dbs: &mut [Db], now: i64, random: &mut impl FnMut() -> u64) {
        let period = self.tuning.period;
        if now < self.next_tick - period {
            // The clock went back (a jump): start counting ticks from here.
            self.next_tick = self.tuning.next_tick_after(now);
            self.last_fast = i64::MIN;
            return;
        }
        let mut cycles = 0;
        while self.next_tick <= now && cycles < ACTIVE_EXPIRE_MAX_CYCLES_PER_CALL {
            let at = self.next_tick;
            self.run(Cycle::Slow, dbs, at, random);
            self.shrink_tables(dbs);
            self.before_sleep(dbs, at, random);
            self.next_tick += period;
            cycles += 1;
        }
        if self.next_tick <= now {
            // Too far behind: the missed ticks are skipped, as a stalled server would skip them.
            self.next_tick = self.tuning.next_tick_after(now);
        }
    }

    /// Whether a fast cycle may run at `now`: the last cycle hit its time limit and none ran in
    /// the last 2 ms. After every command, so two comparisons.
    #[inline]
    pub fn wants_fast_cycle(&self, now: i64) -> bool {
        self.hit_limit
            && !self.disabled
            && now >= self.last_fast.saturating_add(self.tuning.fast_spacing_ms())
    }

    /// Redis's `beforeSleep`: the fast cycle at `now`, if [`wants_fast_cycle`] allows one.
    ///
    /// [`wants_fast_cycle`]: Self::wants_fast_cycle
    pub fn before_sleep(&mut self, dbs: &mut [Db], now: i64, random: &mut impl FnMut() -> u64) {
        if self.wants_fast_cycle(now) {
            self.last_fast = now;
            self.run(Cycle::Fast, dbs, now, random);
        }
    }

    /// One `activeExpireCycle` at time `at`: from the database after the one the last cycle
    /// started at, per database loops of 20 sampled keys, repeated while more than 10% of a
    /// sample had expired, until the modelled time passes the cycle's limit (looked at every 16
    /// loops, as Redis looks at its clock).
    fn run(&mut self, cycle: Cycle, dbs: &mut [Db], at: i64, random: &mut impl FnMut() -> u64) {
        let tuning = self.tuning;
        let limit_ns = tuning.limit_us(cycle) * 1000;
        let (mut spent_ns, mut loops) = (0u64, 0u64);
        let (mut total_sampled, mut total_expired) = (0usize, 0usize);
        self.hit_limit = false;
        let count = dbs.len();
        self.grow_tables(dbs);
        for _ in 0..count {
            if self.hit_limit {
                break;
            }
            let i = self.next_db % count;
            let (db, table) = (&mut dbs[i], self.table_sizes[i]);
            self.next_db = (self.next_db + 1) % count;
            while db.has_volatile() {
                // Less than 1% of the table full: Redis waits for the cron to shrink it.
                if table > SMALLEST_TABLE && db.volatile_count() * 100 / table < 1 {
                    break;
                }
                loops += 1;
                let (sampled, expired) = db.expire_sample(at, tuning.keys_per_loop, &mut *random);
                spent_ns += sampled as u64 * ACTIVE_EXPIRE_SAMPLE_NS
                    + expired as u64 * ACTIVE_EXPIRE_DELETE_NS;
                total_sampled += sampled;
                total_expired += expired;
                if loops % 16 == 0 && spent_ns > limit_ns {
                    self.hit_limit = true;
                    self.time_cap_reached += 1;
                    break;
                }
                if sampled == 0 || expired * 100 / sampled <= tuning.acceptable_stale {
                    break;
                }
            }
        }
        let current = if total_sampled == 0 {
            0.0
        } else {
            total_expired as f64 / total_sampled as f64
        };
        self.stale = current * 0.05 + self.stale * 0.95;
    }
}

impl ActiveExpiry {
    /// Each table grows as Redis's does when its keys reach its size: to the power of two past
    /// their count.
    fn grow_tables(&mut self, dbs: &[Db]) {
        self.table_sizes.resize(dbs.len(), 0);
        for (size, db) in self.table_sizes.iter_mut().zip(dbs) {
            let used = db.volatile_count();
            if used >= *size {
                *size = (used + 1).next_power_of_two().max(SMALLEST_TABLE);
            }
        }
    }

    /// The cron's `tryResizeHashTables`: a table less than 10% full shrinks to the power of two
    /// that holds its keys (its rehashing is taken as done by the next cycle).
    fn shrink_tables(&mut self, dbs: &[Db]) {
        for (size, db) in self.table_sizes.iter_mut().zip(dbs) {
            let used = db.volatile_count();
            if *size > SMALLEST_TABLE && used * 100 / *size < 10 {
                *size = used.next_power_of_two().max(SMALLEST_TABLE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_redis_constants_and_effort_rescales_them() {
        let d = Tuning::new(10, 1);
        assert_eq!(d.period, 1000 / ACTIVE_EXPIRE_HZ);
        assert_eq!(d.keys_per_loop, ACTIVE_EXPIRE_KEYS_PER_LOOP);
        assert_eq!(d.acceptable_stale, ACTIVE_EXPIRE_ACCEPTABLE_STALE);
        assert_eq!(d.slow_limit_us, ACTIVE_EXPIRE_SLOW_LIMIT_US);
        assert_eq!(d.fast_limit_us, ACTIVE_EXPIRE_FAST_LIMIT_US);
        // Effort 10 and hz 100, as `activeExpireCycle` computes them.
        let t = Tuning::new(100, 10);
        assert_eq!((t.period, t.keys_per_loop, t.acceptable_stale), (10, 65, 1));
        assert_eq!((t.slow_limit_us, t.fast_limit_us), (4_300, 3_250));
        assert_eq!(t.fast_spacing_ms(), 6);
        assert_eq!(Tuning::new(500, 1).period, 2);
    }
}
