//! Worked example 2: a lock written by hand, the way redis-py's `Lock` is: `SET key token NX PX
//! lease` to take it, a compare-and-delete script to give it back. Nothing renews it and nothing
//! tells its holder that the lease ran out, so a pause longer than the lease lets a second
//! holder in while the first still works.

use super::lost_update::no_lost_update;
use redis::RedisResult;
use sim_tests::race::{Ctx, Race};
use std::time::Duration;

/// The lease of the hand-written lock.
const LEASE_MS: u64 = 10_000;

/// Deletes the key only if it still holds our token.
const RELEASE: &str = r"
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
else
    return 0
end";

/// Three increments of the balance, each under the hand-written lock.
async fn worker(ctx: Ctx) -> RedisResult<()> {
    let mut con = ctx.redis.clone();
    let release = redis::Script::new(RELEASE);
    for n in 0..3 {
        let token = format!("{}-{n}", ctx.name);
        // Take it: retry every 10 ms while someone else has it.
        loop {
            let set: Option<String> = redis::cmd("SET")
                .arg("lock:account")
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(LEASE_MS)
                .query_async(&mut con)
                .await?;
            if set.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let balance = ctx.store.read("balance");
        tokio::time::sleep(Duration::from_millis(50)).await;
        ctx.store.write("balance", balance + 1);
        let _: i64 = release
            .key("lock:account")
            .arg(&token)
            .invoke_async(&mut con)
            .await?;
    }
    Ok(())
}

pub fn own_lock_race() -> Race {
    Race::new("hand-written SET NX PX lock")
        .clients(2, worker)
        .invariant("no lost update", no_lost_update)
}

#[test]
fn a_hand_written_lock_loses_an_update_under_a_pause_longer_than_its_lease() {
    let summary = own_lock_race().explore();
    let failure = summary.failure.expect("the hand-written lock is unsafe");
    println!("{failure}");
    assert_eq!(failure.shrunk.broken[0].invariant, "no lost update");
    assert!(
        failure
            .shrunk
            .schedule
            .faults
            .iter()
            .any(|f| matches!(f, sim_tests::race::Fault::Pause { ms, .. } if *ms > LEASE_MS)),
        "a pause longer than the lease: {}",
        failure.shrunk.schedule
    );
}
