//! Worked example 1: a worker that takes the lock, reads a balance, awaits something, and writes
//! the balance plus one. Naive, a GC pause longer than the lease lets a second worker in, and an
//! update is lost; with the lock's scoped run and a fenced resource, no seed loses one.

use lock_core::LockError;
use sim_tests::race::{Builtin, Ctx, Fault, History, Kind, Race, Situation, Swarm};
use std::time::Duration;

/// The naive worker: three increments, each under the lock (watchdog lease), with an await
/// between the read and the write.
pub async fn naive(ctx: Ctx) -> Result<(), LockError> {
    for _ in 0..3 {
        let guard = ctx.lock.lock("account").await?;
        let balance = ctx.store.read("balance");
        tokio::time::sleep(Duration::from_millis(50)).await; // a call to another service
        ctx.store.write_holding(&guard, "balance", balance + 1);
        guard.unlock().await?;
    }
    Ok(())
}

/// The same worker, safe: a fenced acquire, the work inside `LockGuard::run` (dropped the moment
/// the lease may be lost), and a write the resource checks against the token.
pub async fn fenced(ctx: Ctx) -> Result<(), LockError> {
    for _ in 0..3 {
        let guard = ctx.lock.acquire("account").fenced().await?;
        let wrote = guard
            .run(async |guard| {
                let balance = ctx.store.read("balance");
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.store.write_fenced(guard, "balance", balance + 1)
            })
            .await;
        ctx.note(format!("{wrote:?}"));
    }
    Ok(())
}

/// Every accepted write of the balance added one to the value it replaced.
pub fn no_lost_update(h: &History) -> Result<(), String> {
    match h.lost_increment("balance") {
        Some((at, client, w)) => Err(format!(
            "{} wrote {} over {} at {at} ms: an increment was lost",
            sim_tests::race::client_name(client),
            w.value,
            w.before
        )),
        None => Ok(()),
    }
}

/// The naive worker under GC pauses, the fault this example is about.
pub fn naive_race() -> Race {
    Race::new("naive worker")
        .clients(2, naive)
        .swarm(Swarm::default().only(&[Kind::Pause]))
        .invariant("no lost update", no_lost_update)
}

/// The fenced worker under every fault of the default swarm.
pub fn fenced_race() -> Race {
    Race::new("fenced worker")
        .clients(2, fenced)
        .with(Builtin::NoWriteAfterLoss)
        .invariant("no lost update", no_lost_update)
}

#[test]
fn the_naive_worker_loses_an_update_within_200_seeds() {
    let summary = naive_race().seeds(200).explore();
    let failure = summary.failure.expect("a lost update within 200 seeds");
    println!("{failure}");
    assert!(failure.found.seed <= 200);
    let faults = &failure.shrunk.schedule.faults;
    assert!(faults.len() <= 3, "shrunk to {faults:?}");
    // One pause, longer than the 30 s lease.
    assert!(
        matches!(faults[..], [Fault::Pause { ms, .. }] if ms > 30_000),
        "shrunk to {faults:?}"
    );
    // The replay of the shrunk schedule gives the same trace, byte for byte.
    let again = naive_race().replay(&failure.shrunk.schedule);
    assert_eq!(again.trace, failure.shrunk.trace);
    assert!(!again.broken.is_empty());
}

#[test]
fn the_naive_worker_also_loses_updates_to_the_default_swarms_other_faults() {
    let race = Race::new("naive worker, every fault")
        .clients(2, naive)
        .invariant("no lost update", no_lost_update);
    assert!(race.explore().failure.is_some());
}

#[test]
fn the_fenced_worker_passes_every_seed() {
    let summary = fenced_race().check();
    println!("{summary}");
}

#[test]
fn the_fenced_worker_reaches_every_named_situation() {
    let summary = fenced_race().require(&Situation::ALL).check();
    println!("{summary}");
}
