//! Active expiry's slow and fast cycles on virtual time (`fake-redis/src/engine/expiry.rs`): how
//! many keys a mass expiry leaves, tick by tick and command by command. `scripts/expiry-lag`
//! measures the same burst on redis-server and on fake-redis-server side by side; these tests hold
//! the fake's side of it exactly, on a manual clock.

use crate::support;

use fake_redis::engine::{
    ACTIVE_EXPIRE_DELETE_NS, ACTIVE_EXPIRE_FAST_LIMIT_US, ACTIVE_EXPIRE_SAMPLE_NS,
    ACTIVE_EXPIRE_SLOW_LIMIT_US,
};
use fake_redis::{Engine, Frame, ManualClock};
use support::argv;

/// Keys a cycle of `limit_us` deletes from a keyspace where every sampled key expired, give or
/// take the 16 loops of 20 keys between two looks at the modelled clock.
fn per_cycle(limit_us: u64) -> i64 {
    (limit_us * 1000 / (ACTIVE_EXPIRE_SAMPLE_NS + ACTIVE_EXPIRE_DELETE_NS)) as i64
}

/// An engine at time 0 holding `n` keys that expire at 300 ms (`SET … PX 300`).
fn burst(n: usize) -> (Engine, ManualClock, fake_redis::ClientId) {
    let clock = ManualClock::new(0);
    let mut engine = Engine::new(clock.clone());
    let client = engine.connect();
    for i in 0..n {
        engine.execute(client, &argv(&format!("SET key:{i} v PX 300")));
    }
    (engine, clock, client)
}

fn dbsize(engine: &mut Engine, client: fake_redis::ClientId) -> i64 {
    match engine.execute(client, &argv("DBSIZE")) {
        Frame::Integer(n) => n,
        other => panic!("DBSIZE replied {other:?}"),
    }
}

/// The slow cycle at a tick deletes keys until its 25 ms are spent, then the fast cycle the
/// tick's wake-up allows spends its 1 ms; nothing expires before the deadline.
#[test]
fn a_tick_spends_the_slow_cycle_s_time_then_the_fast_cycle_s() {
    let (mut engine, clock, client) = burst(100_000);
    clock.set(300);
    assert_eq!(dbsize(&mut engine, client), 100_000, "alive through 300 ms");
    clock.set(400);
    let removed = 100_000 - dbsize(&mut engine, client);
    let expected = per_cycle(ACTIVE_EXPIRE_SLOW_LIMIT_US) + per_cycle(ACTIVE_EXPIRE_FAST_LIMIT_US);
    let granularity = 2 * 16 * 20;
    assert!(
        (expected..=expected + granularity).contains(&removed),
        "removed {removed}, expected {expected} (+{granularity})"
    );
    let info = match engine.execute(client, &argv("INFO stats")) {
        Frame::Bulk(text) | Frame::Verbatim { text, .. } => text,
        other => panic!("INFO replied {other:?}"),
    };
    let info = String::from_utf8_lossy(&info);
    assert!(
        info.contains("\r\nexpired_time_cap_reached_count:2\r\n"),
        "both cycles ran out of time: {info}"
    );
    // Each cycle found every sample expired; the running average weighs each 5%.
    assert!(info.contains("\r\nexpired_stale_perc:9.75\r\n"), "{info}");
}

/// Redis's `beforeSleep` runs the fast cycle after each batch of commands while the last cycle
/// hit its limit, at most once per 2 ms: commands every millisecond after a tick delete a fast
/// cycle's keys every other millisecond (after the command at 402 ms, which the one at 403 ms
/// sees, and so on).
#[test]
fn commands_after_a_tick_run_a_fast_cycle_every_two_milliseconds() {
    let (mut engine, clock, client) = burst(100_000);
    clock.set(400);
    let after_tick = dbsize(&mut engine, client);
    let mut counts = Vec::new();
    for ms in 401..=410 {
        clock.set(ms);
        counts.push(dbsize(&mut engine, client));
    }
    let fast = per_cycle(ACTIVE_EXPIRE_FAST_LIMIT_US);
    let mut previous = after_tick;
    for (i, &count) in counts.iter().enumerate() {
        let removed = previous - count;
        let ms = 401 + i;
        if ms % 2 == 1 && ms > 401 {
            assert!(
                (fast..=fast + 320).contains(&removed),
                "{ms} ms: a fast cycle removed {removed}"
            );
        } else {
            assert_eq!(
                removed, 0,
                "{ms} ms: less than 2 ms after the last fast cycle"
            );
        }
        previous = count;
    }
}

/// Without a slow cycle that ran out of time there is no fast cycle: a few expired keys among
/// many live ones are left to the slow cycle.
#[test]
fn no_fast_cycle_runs_while_the_slow_cycle_finishes_in_time() {
    let clock = ManualClock::new(0);
    let mut engine = Engine::new(clock.clone());
    let client = engine.connect();
    for i in 0..1_000 {
        engine.execute(client, &argv(&format!("SET live:{i} v PX 100000")));
    }
    for i in 0..200 {
        engine.execute(client, &argv(&format!("SET doomed:{i} v PX 50")));
    }
    clock.set(100);
    let after_tick = dbsize(&mut engine, client);
    assert!(
        (1_000..1_200).contains(&after_tick),
        "the tick's slow cycle deleted some: {after_tick} left"
    );
    for ms in 101..=120 {
        clock.set(ms);
        assert_eq!(dbsize(&mut engine, client), after_tick, "{ms} ms");
    }
}

/// Redis 7.0.15's figure on a quiet machine: of 100,000 keys written with `PX 300` at once, this
/// many were still there (`DBSIZE`) half a second later.
const REDIS_LEFT_AT_500_MS: i64 = 1_293;

/// That measurement on virtual time: the fake leaves as many keys as Redis within a factor of
/// two; the next tick leaves at most 1% of the shrunk table (4,096 slots), and the one after
/// none.
#[test]
fn mass_expiry_leaves_what_redis_leaves_within_a_factor_of_two() {
    let (mut engine, clock, client) = burst(100_000);
    clock.set(500);
    let left = dbsize(&mut engine, client);
    assert!(
        (REDIS_LEFT_AT_500_MS / 2..=REDIS_LEFT_AT_500_MS * 2).contains(&left),
        "{left} keys left at 500 ms, Redis {REDIS_LEFT_AT_500_MS}"
    );
    clock.set(600);
    assert!(dbsize(&mut engine, client) <= 4_096 / 100);
    clock.set(700);
    assert_eq!(dbsize(&mut engine, client), 0);
}

/// Redis's cycle stops on a table less than 1% full until the cron shrinks it: 20,000 expired
/// keys in a table of 32,768 leave 1% of that, 327 at most, to the next tick, which has the
/// table shrunk and takes them.
#[test]
fn the_last_percent_of_the_table_waits_for_the_next_tick() {
    let (mut engine, clock, client) = burst(20_000);
    clock.set(400);
    let left = dbsize(&mut engine, client);
    assert!(
        (327 - 20..=327).contains(&left),
        "{left} keys left after the first tick"
    );
    for ms in 401..=420 {
        clock.set(ms);
        assert_eq!(
            dbsize(&mut engine, client),
            left,
            "no fast cycle: the slow one had time"
        );
    }
    clock.set(500);
    assert_eq!(dbsize(&mut engine, client), 0);
}

/// `CONFIG SET hz` shortens the tick and its slow cycle's budget, and `active-expire-effort`
/// widens the budgets, as Redis rescales them: at `hz 100` the first tick after the deadline comes
/// 10 ms later, not 100, with a 2.5 ms slow cycle; effort 10 makes that 4.3 ms and the fast cycle
/// 3.25 ms.
#[test]
fn hz_and_active_expire_effort_retune_the_cycles() {
    let (mut engine, clock, client) = burst(100_000);
    assert_eq!(
        engine.execute(client, &argv("CONFIG SET hz 100")),
        Frame::OK
    );
    clock.set(305);
    assert_eq!(dbsize(&mut engine, client), 100_000, "no tick since 300 ms");
    clock.set(310);
    let removed = 100_000 - dbsize(&mut engine, client);
    let granularity = 2 * 16 * 20;
    let expected = per_cycle(2_500) + per_cycle(ACTIVE_EXPIRE_FAST_LIMIT_US);
    assert!(
        (expected..=expected + granularity).contains(&removed),
        "hz 100: removed {removed}, expected {expected} (+{granularity})"
    );

    let (mut engine, clock, client) = burst(100_000);
    for set in ["CONFIG SET hz 100", "CONFIG SET active-expire-effort 10"] {
        assert_eq!(engine.execute(client, &argv(set)), Frame::OK);
    }
    // A command at 305 catches the ticks up (at most ten a command), none yet past 300.
    clock.set(305);
    assert_eq!(dbsize(&mut engine, client), 100_000);
    clock.set(310);
    let removed = 100_000 - dbsize(&mut engine, client);
    // Effort 10 samples 65 keys a loop: the granularity grows with it.
    let granularity = 2 * 16 * 65;
    let expected = per_cycle(4_300) + per_cycle(3_250);
    assert!(
        (expected..=expected + granularity).contains(&removed),
        "hz 100, effort 10: removed {removed}, expected {expected} (+{granularity})"
    );
}
