//! A real `CLUSTER FAILOVER` under a held lock, on the cluster `scripts/test` starts.
//!
//! In a test binary of its own, so that no other test's locks are on the shard while it changes
//! hands (cargo runs test binaries one after another). It fails the shard of its own lock over to
//! the replica and back, so the cluster has its first shape again when the test ends, and it never
//! flushes anything. A coordinated failover (`CLUSTER FAILOVER` without FORCE) waits until the
//! replica has every write, so the lock must survive it: the holder keeps renewing through the
//! redirection, a waiter on the shard is woken by the unlock message after it, and the tokens keep
//! growing.

mod common;

use common::unique_prefix;
use lock_core::cluster_backend::key_slot;
use lock_core::{ClusterBackend, KeyLayout, LockClient, LockConfig, Millis, UnlockOutcome};
use std::time::{Duration, Instant};

fn cluster_urls() -> Vec<String> {
    std::env::var("REDIS_CLUSTER_URLS")
        .unwrap_or_else(|_| {
            panic!(
                "REDIS_CLUSTER_URLS is not set: this test needs a Redis Cluster. Run it through \
                 `scripts/test`, which starts one"
            )
        })
        .split(',')
        .map(str::to_owned)
        .collect()
}

fn config(prefix: &str) -> LockConfig {
    LockConfig {
        watchdog_timeout: Millis(3000),
        response_timeout: Some(Millis(800)),
        key_layout: KeyLayout::new(prefix),
        ..LockConfig::default()
    }
}

async fn client(config: LockConfig) -> LockClient {
    let backend = ClusterBackend::connect(&cluster_urls(), Duration::from_millis(800))
        .await
        .expect("connect to REDIS_CLUSTER_URLS");
    LockClient::new(backend, config).unwrap()
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
struct Node {
    id: String,
    addr: String,
    primary: bool,
    primary_id: String,
    ranges: Vec<(u16, u16)>,
}

async fn query(addr: &str, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(format!("redis://{addr}/"))?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(&mut conn).await
}

async fn nodes() -> Vec<Node> {
    let first = cluster_urls()[0]
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let text: String =
        redis::from_redis_value(query(&first, &["CLUSTER", "NODES"]).await.unwrap()).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let ranges = f[8..]
                .iter()
                .filter(|s| !s.starts_with('['))
                .map(|s| match s.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (s.parse().unwrap(), s.parse().unwrap()),
                })
                .collect();
            Node {
                id: f[0].to_owned(),
                addr: f[1].split('@').next().unwrap().to_owned(),
                primary: f[2].contains("master"),
                primary_id: f[3].to_owned(),
                ranges,
            }
        })
        .collect()
}

/// The primary serving `slot` and its replica.
async fn shard_of(slot: u16) -> (Node, Node) {
    let all = nodes().await;
    let primary = all
        .iter()
        .find(|n| n.primary && n.ranges.iter().any(|&(a, b)| (a..=b).contains(&slot)))
        .unwrap_or_else(|| panic!("no primary serves slot {slot}: {all:?}"))
        .clone();
    let replica = all
        .iter()
        .find(|n| !n.primary && n.primary_id == primary.id)
        .unwrap_or_else(|| panic!("the primary of slot {slot} has no replica: {all:?}"))
        .clone();
    (primary, replica)
}

/// Fails `replica` over to be its shard's primary, and waits until every node says so.
async fn fail_over_to(replica: &Node) {
    query(&replica.addr, &["CLUSTER", "FAILOVER"])
        .await
        .expect("CLUSTER FAILOVER");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = nodes().await;
        if all.iter().any(|n| n.id == replica.id && n.primary) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the failover to {} did not finish: {all:?}",
            replica.addr
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinated_failover_under_a_hold_keeps_the_lock_and_wakes_the_waiter() {
    let prefix = unique_prefix("cluster-failover");
    let name = format!("{prefix}:orders");
    let (primary, replica) = shard_of(key_slot(name.as_bytes())).await;

    let a = client(config(&prefix)).await;
    let b = client(LockConfig {
        wait_round_cap: Some(Millis(60_000)),
        ..config(&prefix)
    })
    .await;
    let (guard, first_token) = a.lock_fenced(&name).await.unwrap();
    let waiter = {
        let name = name.clone();
        tokio::spawn(async move { b.lock_fenced(&name).await.map(|held| (held, b)) })
    };

    fail_over_to(&replica).await;
    // Two leases after the failover: only renewals through the new primary keep the lock.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(
        a.is_locked(&name).await.unwrap(),
        "the lock expired across the failover"
    );
    assert!(
        guard.is_valid(),
        "renewals on the new primary were not confirmed"
    );
    assert!(!waiter.is_finished(), "the waiter got a held lock");

    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    let ((second, second_token), b) = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the waiter was not woken after the failover")
        .unwrap()
        .unwrap();
    assert!(
        second_token > first_token,
        "tokens grow across the failover ({first_token} then {second_token})"
    );
    second.unlock().await.unwrap();
    drop(b);

    // Give the cluster its first shape back.
    let back = nodes()
        .await
        .into_iter()
        .find(|n| n.id == primary.id)
        .unwrap();
    fail_over_to(&back).await;
}
