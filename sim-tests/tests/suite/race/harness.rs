//! The harness's own promises.

use sim_tests::race::{Fault, Schedule, Swarm};

#[test]
fn a_schedule_prints_and_parses_back() {
    for seed in 1..200 {
        let schedule = Swarm::default().draw(seed, 3);
        let text = schedule.to_string();
        assert_eq!(text.parse::<Schedule>(), Ok(schedule), "{text}");
    }
    let s: Schedule = "seed=7; pause a at=10 for=40000; restart at=5 data=lose"
        .parse()
        .unwrap();
    assert_eq!(
        s.faults,
        vec![
            Fault::Pause {
                client: 0,
                at: 10,
                ms: 40_000
            },
            Fault::Restart {
                at: 5,
                keep_data: false
            }
        ]
    );
}

/// The determinism self-check over the worked examples' seeds: each seed runs twice and the two
/// traces must be equal byte for byte (`scripts/test` runs this with the workspace's tests).
#[test]
fn every_seed_of_the_worked_examples_gives_the_same_trace_twice() {
    for race in [
        super::lost_update::naive_race(),
        super::lost_update::fenced_race(),
        super::own_lock::own_lock_race(),
        super::replica_check::race(None),
        super::replica_check::race(Some(lock_core::SyncReplicas::default())),
    ] {
        // Panics, naming the first line that differs, if a seed's two runs differ.
        let _ = race.self_check(true).shrink(false).explore();
    }
}

/// A worker on the `MultiplexedConnection` the fake's own server code serves: its traffic takes
/// the server's connection tasks, whose order must not depend on tokio's random `select!`.
#[test]
fn a_multiplexed_connection_replays_byte_identically() {
    use redis::AsyncCommands;
    let race = sim_tests::race::Race::new("multiplexed")
        .clients(2, async |ctx: sim_tests::race::Ctx| {
            let mut con = ctx.connection().await;
            for n in 0..20i64 {
                let _: redis::RedisResult<i64> = con.incr("hits", n).await;
                tokio::time::sleep(std::time::Duration::from_millis(7)).await;
            }
        })
        .seeds(50)
        .self_check(true);
    assert!(race.explore().failure.is_none());
}

/// The self-check catches a worker whose trace depends on something outside the seed: here a
/// counter that lives across runs.
#[test]
#[should_panic(expected = "not deterministic")]
fn the_self_check_catches_a_trace_that_changes_between_runs() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let race = sim_tests::race::Race::new("leaky")
        .client(async |ctx: sim_tests::race::Ctx| {
            ctx.note(format!("run {}", RUNS.fetch_add(1, Ordering::Relaxed)));
        })
        .seeds(1)
        .self_check(true);
    let _ = race.explore();
}
