//! How fast the simulator runs: events per second, and the wall time of one virtual hour of 100
//! clients on 10 locks (work 0.5–2 s, latency about 1 ms).
//!
//! `cargo bench -p sim-tests --bench throughput`

use sim_tests::engine_server::EngineServer;
use sim_tests::{Case, ClientSpec, World};
use std::time::Instant;

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

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs it once as a smoke test.
    let quick = !std::env::args().any(|a| a == "--bench");
    let mut case = hour_of_100_clients(1);
    if quick {
        case.horizon = 60_000;
    }
    let started = Instant::now();
    let result = World::new(&case, EngineServer::new(case.seed))
        .without_trace()
        .run();
    let wall = started.elapsed();
    let per_sec = result.events as f64 / wall.as_secs_f64();
    println!(
        "simulated {} virtual s of {} clients on 10 locks: {} events in {:.3} s wall = {:.0} events/s ({} violations)",
        case.horizon / 1000,
        case.clients.len(),
        result.events,
        wall.as_secs_f64(),
        per_sec,
        result.violations.len()
    );
}
