//! How fast the race harness runs the book's first example (the fenced worker, two clients, the
//! default swarm): `cargo run --release -p sim-tests --example race_seeds -- <seeds>` prints the
//! seeds run, the wall time and the seeds per second. Under callgrind, the instructions per seed
//! are the difference of two runs' counts divided by the difference of their seeds.

use lock_core::LockError;
use sim_tests::race::{Builtin, Ctx, Race};
use std::time::{Duration, Instant};

async fn fenced(ctx: Ctx) -> Result<(), LockError> {
    for _ in 0..3 {
        let guard = ctx.lock.acquire("account").fenced().await?;
        let _ = guard
            .run(async |guard| {
                let balance = ctx.store.read("balance");
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.store.write_fenced(guard, "balance", balance + 1)
            })
            .await;
    }
    Ok(())
}

fn main() {
    let seeds: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let race = Race::new("fenced worker")
        .clients(2, fenced)
        .with(Builtin::NoWriteAfterLoss)
        .invariant("no lost update", |h| match h.lost_increment("balance") {
            Some((at, _, w)) => Err(format!("{} over {} at {at} ms", w.value, w.before)),
            None => Ok(()),
        })
        .seeds(seeds);
    // Wall time for the measurement only; nothing simulated reads it.
    let started = Instant::now();
    let summary = race.explore();
    let took = started.elapsed();
    assert!(
        summary.failure.is_none(),
        "the fenced worker broke an invariant"
    );
    println!(
        "{} seeds in {:.3} s: {:.0} seeds/s",
        summary.seeds,
        took.as_secs_f64(),
        f64::from(summary.seeds) / took.as_secs_f64()
    );
}
