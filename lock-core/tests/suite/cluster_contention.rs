//! Contention on a real Redis Cluster: 50 tasks on 30 locks over the 3 shards, each grant guarding
//! a read-then-write of a counter beside its lock. Every counter must end equal to its grants.
//! It runs `CLUSTER_CONTENTION_SECS` seconds (default 4; the acceptance run uses 20) and prints
//! grants per second and the acquire latency's p50 and p99. It fails nothing over: the cluster is
//! shared by the other tests. The same run on the standalone server of `REDIS_URL` gives the
//! figures to compare with (`BENCHMARKS.md`).

use crate::common;

use common::cluster::{self as topology, cluster_urls};
use common::{redis_url, short_watchdog, unique_prefix};
use lock_core::cluster_backend::key_slot;
use lock_core::{LockClient, LockConfig, RedisBackend};
use redis::AsyncCommands;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TASKS: usize = 50;
const LOCKS: usize = 30;

fn phase_length() -> Duration {
    let secs = std::env::var("CLUSTER_CONTENTION_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    Duration::from_secs(secs)
}

/// Redis's `{name}` hash tag keeps the counter on its lock's slot.
fn counter_key(name: &str) -> String {
    format!("{{{name}}}:counter")
}

struct Outcome {
    grants: Vec<u64>,
    latencies: Vec<Duration>,
}

/// Where the run happens: the shared cluster, or the standalone server of `REDIS_URL`.
#[derive(Clone, Copy)]
enum Server {
    Cluster,
    Standalone,
}

/// The clients' settings: the replica check as by default, or off with
/// `CONTENTION_SYNC_REPLICAS=off` (to measure what it costs).
fn config(prefix: &str) -> LockConfig {
    let off = std::env::var("CONTENTION_SYNC_REPLICAS").is_ok_and(|v| v == "off");
    LockConfig {
        sync_replicas: if off {
            None
        } else {
            short_watchdog(prefix).sync_replicas
        },
        ..short_watchdog(prefix)
    }
}

impl Server {
    async fn client(self, prefix: &str) -> LockClient {
        match self {
            Server::Cluster => topology::client(config(prefix)).await,
            Server::Standalone => {
                let backend = RedisBackend::connect(&redis_url(), Duration::from_millis(800))
                    .await
                    .unwrap();
                LockClient::new(backend, config(prefix)).unwrap()
            }
        }
    }

    async fn counters(self) -> Counters {
        match self {
            Server::Cluster => {
                let cluster = redis::cluster::ClusterClient::new(cluster_urls()).unwrap();
                Counters::Cluster(cluster.get_async_connection().await.unwrap())
            }
            Server::Standalone => {
                let client = redis::Client::open(redis_url()).unwrap();
                Counters::Standalone(client.get_multiplexed_async_connection().await.unwrap())
            }
        }
    }
}

/// A connection for the counters, on the server the locks are on.
enum Counters {
    Cluster(redis::cluster_async::ClusterConnection),
    Standalone(redis::aio::MultiplexedConnection),
}

impl Counters {
    async fn get(&mut self, key: &str) -> redis::RedisResult<Option<u64>> {
        match self {
            Counters::Cluster(c) => c.get(key).await,
            Counters::Standalone(c) => c.get(key).await,
        }
    }

    async fn set(&mut self, key: &str, value: u64) -> redis::RedisResult<()> {
        match self {
            Counters::Cluster(c) => c.set(key, value).await,
            Counters::Standalone(c) => c.set(key, value).await,
        }
    }

    async fn del(&mut self, key: &str) -> redis::RedisResult<()> {
        match self {
            Counters::Cluster(c) => c.del(key).await,
            Counters::Standalone(c) => c.del(key).await,
        }
    }
}

async fn contend(
    server: Server,
    prefix: &str,
    names: &Arc<Vec<String>>,
    length: Duration,
) -> Outcome {
    let clients: Vec<Arc<LockClient>> = {
        let mut v = Vec::new();
        // Five clients, ten tasks each: several owners per client, several clients per lock.
        for _ in 0..5 {
            v.push(Arc::new(server.client(prefix).await));
        }
        v
    };
    let grants: Arc<Vec<AtomicU64>> = Arc::new((0..LOCKS).map(|_| AtomicU64::new(0)).collect());
    let until = Instant::now() + length;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let client = Arc::clone(&clients[t % clients.len()]);
        let names = Arc::clone(names);
        let grants = Arc::clone(&grants);
        tasks.push(tokio::spawn(async move {
            let mut conn = server.counters().await;
            let mut latencies = Vec::new();
            let mut i = t;
            while Instant::now() < until {
                i = (i * 7 + 3) % LOCKS;
                let name = &names[i];
                let asked = Instant::now();
                // A call that outlives its response timeout (a shard changing hands) has an
                // unknown outcome: the client undoes a grant it may have made, and the task
                // tries again. Only a guard in hand counts as a grant.
                let Ok(Some(guard)) = client.try_lock(name, Duration::from_secs(10), None).await
                else {
                    continue;
                };
                latencies.push(asked.elapsed());
                // Not atomic on purpose: only the lock keeps two of these apart. A failed step
                // (during the failover) retries until it is done, still under the lock.
                loop {
                    let Ok(seen) = conn.get(&counter_key(name)).await else {
                        continue;
                    };
                    let wrote = conn.set(&counter_key(name), seen.unwrap_or(0) + 1).await;
                    if wrote.is_ok() {
                        break;
                    }
                }
                grants[i].fetch_add(1, Ordering::Relaxed);
                // An unknown unlock leaves the lock to its lease; the count is already written.
                let _ = guard.unlock().await;
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    Outcome {
        grants: grants.iter().map(|g| g.load(Ordering::Relaxed)).collect(),
        latencies,
    }
}

async fn check_and_report(
    server: Server,
    phase: &str,
    names: &[String],
    outcome: &Outcome,
    length: Duration,
) {
    let mut conn = server.counters().await;
    for (name, &grants) in names.iter().zip(&outcome.grants) {
        let counted = conn.get(&counter_key(name)).await.unwrap();
        assert_eq!(
            counted.unwrap_or(0),
            grants,
            "{phase}: {name}'s counter lost an update under the lock"
        );
        conn.del(&counter_key(name)).await.unwrap();
    }
    let mut sorted = outcome.latencies.clone();
    sorted.sort_unstable();
    let total: u64 = outcome.grants.iter().sum();
    assert!(total > 0, "{phase}: no grant at all");
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
    eprintln!(
        "{phase}: {total} grants in {length:?} ({:.0}/s), acquire p50 {:?}, p99 {:?}",
        total as f64 / length.as_secs_f64(),
        at(0.5),
        at(0.99),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_equal_grants_on_every_shard() {
    let prefix = unique_prefix("cluster-contention");
    let names: Arc<Vec<String>> = Arc::new((0..LOCKS).map(|i| format!("{prefix}:l{i}")).collect());
    let mut shards = Vec::new();
    for name in names.iter() {
        shards.push(topology::shard_of(key_slot(name.as_bytes())).await.0.id);
    }
    shards.sort_unstable();
    shards.dedup();
    assert_eq!(shards.len(), 3, "the locks cover all 3 shards");
    let length = phase_length();

    let outcome = contend(Server::Cluster, &prefix, &names, length).await;
    check_and_report(Server::Cluster, "cluster", &names, &outcome, length).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_contention_on_a_standalone_server() {
    let prefix = unique_prefix("standalone-contention");
    let names: Arc<Vec<String>> = Arc::new((0..LOCKS).map(|i| format!("{prefix}:l{i}")).collect());
    let length = phase_length();
    let outcome = contend(Server::Standalone, &prefix, &names, length).await;
    check_and_report(Server::Standalone, "standalone", &names, &outcome, length).await;
}
