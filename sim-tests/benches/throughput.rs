//! How fast the simulator runs: events per second, and the wall time of one virtual hour of 100
//! clients on 10 locks (work 0.5–2 s, latency about 1 ms), on one node and on a Redis Cluster of
//! 3 shards, each a primary with one replica (the locks on the shards their slots fall in, every
//! lock write followed by the replica check's `WAIT`).
//!
//! `cargo bench -p sim-tests --bench throughput`
//!
//! Two settings make a shorter run to profile, the same every time:
//! `SIM_BENCH_HORIZON_MS` (the virtual horizon instead of the hour) and `SIM_BENCH_TOPOLOGY`
//! (`single` or `shards`, to run one of the two). For instructions per event, BENCHMARKS.md
//! (section "sim-tests throughput") runs the bench binary under callgrind with both set.

use sim_tests::cluster_server::ClusterServer;
use sim_tests::engine_server::EngineServer;
use sim_tests::{Case, ClientSpec, Run, World};
use std::time::{Duration, Instant};

fn hour_of_100_clients(seed: u64) -> Case {
    let mut case = Case::new(seed, 3_600_000);
    case.latency = (1, 2);
    case.clients = (0..100)
        .map(|i| {
            let mut c = ClientSpec::new(&format!("c{i}"), i % 10);
            c.work = (500, 2_000);
            c.cycles = 0;
            c.start = u64::from(i) * 7;
            c
        })
        .collect();
    case
}

/// The same hour on 3 shards of a primary and a replica lagging 1–2 ms.
fn on_three_shards(mut case: Case) -> Case {
    case.shards = 3;
    case.replicas = 1;
    case.replica_lag = (1, 2);
    case
}

fn report(topology: &str, case: &Case, run: &Run, wall: Duration) {
    let per_sec = run.events as f64 / wall.as_secs_f64();
    println!(
        "{topology}: simulated {} virtual s of {} clients on 10 locks: {} events in {:.3} s wall = {:.0} events/s ({} violations)",
        case.horizon / 1000,
        case.clients.len(),
        run.events,
        wall.as_secs_f64(),
        per_sec,
        run.violations.len()
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs it once as a smoke test.
    let quick = !std::env::args().any(|a| a == "--bench");
    let mut case = hour_of_100_clients(1);
    if quick {
        case.horizon = 60_000;
    }
    if let Some(horizon) = std::env::var("SIM_BENCH_HORIZON_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        case.horizon = horizon;
    }
    let topology = std::env::var("SIM_BENCH_TOPOLOGY").unwrap_or_default();

    if topology != "shards" {
        let started = Instant::now();
        let run = World::new(&case, EngineServer::new(case.seed))
            .without_trace()
            .run();
        report("single node", &case, &run, started.elapsed());
    }

    if topology != "single" {
        let case = on_three_shards(case);
        let started = Instant::now();
        let run = World::new(&case, ClusterServer::for_case(&case))
            .without_trace()
            .run();
        report(
            "3 shards (3 primaries x 1 replica)",
            &case,
            &run,
            started.elapsed(),
        );
    }
}
