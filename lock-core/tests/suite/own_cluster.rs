//! The lock on a Redis Cluster of this test's own (3 primaries, a replica each), which it fails
//! over and whose slots it migrates: the shared cluster of `scripts/test` is never touched. The
//! scenarios run in sequence on one cluster, started once (about ten seconds).

use crate::common;
use crate::through_failover;
use crate::topology;

use common::{short_watchdog, unique_prefix};
use lock_core::cluster_backend::key_slot;
use lock_core::{ClusterBackend, LockClient, LockConfig, Millis};
use redis::AsyncCommands;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use topology::OwnCluster;

async fn client(own: &OwnCluster, config: LockConfig) -> LockClient {
    let backend = ClusterBackend::connect(&own.urls(), Duration::from_millis(800))
        .await
        .expect("connect to the cluster");
    LockClient::new(backend, config).unwrap()
}

/// A holder, and a waiter whose wait round outlasts the test (only a message wakes it in time).
async fn holder_and_waiter(own: &OwnCluster, prefix: &str) -> (LockClient, Arc<LockClient>) {
    let a = client(own, through_failover::failover_config(prefix, 9000)).await;
    let b = client(
        own,
        LockConfig {
            wait_round_cap: Some(Millis(120_000)),
            ..through_failover::failover_config(prefix, 9000)
        },
    )
    .await;
    (a, Arc::new(b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_of_its_own_fails_over_and_migrates_slots_under_held_locks() {
    let own = Arc::new(
        tokio::task::spawn_blocking(OwnCluster::start)
            .await
            .unwrap(),
    );
    a_hold_survives_a_cluster_failover_of_its_shard_or_its_holder_is_told(&own).await;
    a_hold_survives_its_slot_migrating_to_another_shard(&own).await;
    counters_equal_grants_across_a_failover_in_the_middle_of_contention(&own).await;
}

async fn a_hold_survives_a_cluster_failover_of_its_shard_or_its_holder_is_told(
    own: &Arc<OwnCluster>,
) {
    let prefix = unique_prefix("own-cluster-failover");
    let name = format!("{prefix}:orders");
    let (_, replica) = own.shard_of(key_slot(name.as_bytes()));
    let (a, b) = holder_and_waiter(own, &prefix).await;
    let cluster = Arc::clone(own);
    through_failover::hold_through_failover(&a, b, &name, move || cluster.failover_to(&replica))
        .await;
}

async fn a_hold_survives_its_slot_migrating_to_another_shard(own: &Arc<OwnCluster>) {
    let prefix = unique_prefix("own-cluster-migrate");
    let name = format!("{prefix}:orders");
    let slot = key_slot(name.as_bytes());
    let (a, b) = holder_and_waiter(own, &prefix).await;
    let cluster = Arc::clone(own);
    through_failover::hold_through_failover(&a, b, &name, move || migrate(&cluster, slot)).await;
}

/// Moves `slot` to another primary as `redis-cli --cluster reshard` does: the target imports it,
/// the source marks it migrating, every key moves with `MIGRATE`, and both (then every primary)
/// are told the slot's new owner.
fn migrate(own: &OwnCluster, slot: u16) {
    let (source, _) = own.shard_of(slot);
    let (target, _) = own.shard_of(if slot < 8192 { 16_000 } else { 100 });
    assert_ne!(source.port, target.port);
    let (source_id, target_id) = (own.id_of(&source), own.id_of(&target));
    let slot = slot.to_string();
    assert_eq!(
        target
            .cli(&["cluster", "setslot", &slot, "importing", &source_id])
            .trim(),
        "OK"
    );
    assert_eq!(
        source
            .cli(&["cluster", "setslot", &slot, "migrating", &target_id])
            .trim(),
        "OK"
    );
    loop {
        let keys = source.cli(&["cluster", "getkeysinslot", &slot, "100"]);
        let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            break;
        }
        let port = target.port.to_string();
        let mut args = vec!["migrate", "127.0.0.1", &port, "", "0", "5000", "keys"];
        args.extend(keys);
        assert_eq!(source.cli(&args).trim(), "OK");
    }
    for node in [&target, &source] {
        assert_eq!(
            node.cli(&["cluster", "setslot", &slot, "node", &target_id])
                .trim(),
            "OK"
        );
    }
    own.wait_healthy();
}

const TASKS: usize = 50;
const LOCKS: usize = 30;

/// The contention run's length: `OWN_CLUSTER_CONTENTION_SECS` (the acceptance run uses 20), 6 s
/// by default so that the file stays well within CI's time.
fn contention_length() -> Duration {
    let secs = std::env::var("OWN_CLUSTER_CONTENTION_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    Duration::from_secs(secs)
}

/// 50 tasks on 30 locks over the 3 shards, each grant guarding a read-then-write of a counter
/// beside its lock, with one `CLUSTER FAILOVER` halfway: every counter must equal its grants.
async fn counters_equal_grants_across_a_failover_in_the_middle_of_contention(
    own: &Arc<OwnCluster>,
) {
    let prefix = unique_prefix("own-cluster-contention");
    let names: Arc<Vec<String>> = Arc::new((0..LOCKS).map(|i| format!("{prefix}:l{i}")).collect());
    let mut shards: Vec<u16> = names
        .iter()
        .map(|n| own.shard_of(key_slot(n.as_bytes())).0.port)
        .collect();
    shards.sort_unstable();
    shards.dedup();
    assert_eq!(shards.len(), 3, "the locks cover all 3 shards");
    let counter = |name: &str| format!("{{{name}}}:counter");

    let mut clients = Vec::new();
    for _ in 0..5 {
        clients.push(Arc::new(client(own, short_watchdog(&prefix)).await));
    }
    let grants: Arc<Vec<AtomicU64>> = Arc::new((0..LOCKS).map(|_| AtomicU64::new(0)).collect());
    let length = contention_length();
    let until = Instant::now() + length;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let client = Arc::clone(&clients[t % clients.len()]);
        let (names, grants, urls) = (Arc::clone(&names), Arc::clone(&grants), own.urls());
        tasks.push(tokio::spawn(async move {
            let cluster = redis::cluster::ClusterClient::new(urls).unwrap();
            let mut conn = cluster.get_async_connection().await.unwrap();
            let mut i = t;
            while Instant::now() < until {
                i = (i * 7 + 3) % LOCKS;
                let name = &names[i];
                // An acquire refused or of unknown outcome during the failover gives its grant
                // back; only a guard in hand counts.
                let Ok(Some(guard)) = client.try_lock(name, Duration::from_secs(10), None).await
                else {
                    continue;
                };
                // Not atomic on purpose: only the lock keeps two of these apart.
                loop {
                    let read: redis::RedisResult<Option<u64>> = conn.get(counter(name)).await;
                    let Ok(seen) = read else { continue };
                    let wrote: redis::RedisResult<()> =
                        conn.set(counter(name), seen.unwrap_or(0) + 1).await;
                    if wrote.is_ok() {
                        break;
                    }
                }
                grants[i].fetch_add(1, Ordering::Relaxed);
                let _ = guard.unlock().await;
            }
        }));
    }
    tokio::time::sleep(length / 2).await;
    let (_, replica) = own.shard_of(key_slot(names[0].as_bytes()));
    let cluster = Arc::clone(own);
    tokio::task::spawn_blocking(move || cluster.failover_to(&replica))
        .await
        .unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let cluster = redis::cluster::ClusterClient::new(own.urls()).unwrap();
    let mut conn = cluster.get_async_connection().await.unwrap();
    let mut total = 0;
    for (name, grants) in names.iter().zip(grants.iter()) {
        let grants = grants.load(Ordering::Relaxed);
        let counted: Option<u64> = conn.get(counter(name)).await.unwrap();
        assert_eq!(
            counted.unwrap_or(0),
            grants,
            "{name}'s counter lost an update under the lock"
        );
        total += grants;
    }
    assert!(total > 0, "no grant at all");
    eprintln!("contention with a failover: {total} grants in {length:?}");
}
