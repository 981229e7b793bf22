//! The lock on a Sentinel group of this test's own (a primary, a replica, 3 sentinels), which it
//! fails over and whose replica it stops: the shared group of `scripts/test` is never touched.
//! The scenarios run in sequence on one group, started once (a few seconds).

use crate::common;
use crate::through_failover;
use crate::topology;

use common::{short_watchdog, unique_prefix};
use lock_core::{LockClient, LockConfig, LockError, Operation, SentinelBackend};
use std::sync::Arc;
use std::time::{Duration, Instant};
use topology::{MASTER, OwnSentinel};

async fn client(own: &OwnSentinel, config: LockConfig) -> LockClient {
    let backend =
        SentinelBackend::connect_sentinel(&own.sentinel_urls(), MASTER, Duration::from_millis(800))
            .await
            .expect("connect through the group's sentinels");
    LockClient::new(backend, config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_group_of_its_own_loses_its_replica_then_fails_over() {
    let own = Arc::new(
        tokio::task::spawn_blocking(OwnSentinel::start)
            .await
            .unwrap(),
    );
    an_acquire_no_replica_acknowledges_is_refused_within_the_wait(&own).await;
    a_hold_survives_a_sentinel_failover_or_its_holder_is_told(&own).await;
}

/// With the replica stopped (`SIGSTOP`; the primary still counts it as connected), an acquire with
/// the replica check gets no acknowledgement within the check's timeout (400 ms with these
/// settings) and is refused, its grant given back; without the check it succeeds.
async fn an_acquire_no_replica_acknowledges_is_refused_within_the_wait(own: &Arc<OwnSentinel>) {
    let prefix = unique_prefix("own-sentinel-stopped");
    let name = format!("{prefix}:orders");
    let checked = client(own, short_watchdog(&prefix)).await;
    let unchecked = client(
        own,
        LockConfig {
            sync_replicas: None,
            ..short_watchdog(&prefix)
        },
    )
    .await;
    assert_eq!(checked.config().replica_wait().unwrap().1.as_u64(), 400);
    // With the replica running, the check passes.
    checked.lock(&name).await.unwrap().unlock().await.unwrap();

    let stopped = own.current_primary();
    let follower = if stopped.port == own.primary.port {
        &own.replica
    } else {
        &own.primary
    };
    let paused = follower.stop();
    let asked = Instant::now();
    let err = checked.lock(&name).await.unwrap_err();
    let took = asked.elapsed();
    assert_eq!(
        err,
        LockError::ReplicasNotSynced {
            name: name.clone(),
            operation: Operation::Acquire,
            acked: 0,
            required: 1,
        }
    );
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(3),
        "refused after {took:?}: WAIT's 400 ms, and not much more"
    );
    // The release that gives the grant back goes out with the refusal.
    let given_back = Instant::now() + Duration::from_secs(3);
    while checked.is_locked(&name).await.unwrap() {
        assert!(
            Instant::now() < given_back,
            "the refused grant was given back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let guard = unchecked.lock(&name).await.unwrap();
    assert!(guard.is_valid());
    guard.unlock().await.unwrap();
    drop(paused);
    let group = Arc::clone(own);
    tokio::task::spawn_blocking(move || group.wait_healthy())
        .await
        .unwrap();
}

/// The holder's lease in the failover: Sentinel leaves the old primary writable until it tells it
/// to follow the new one (its next look at it, up to ten seconds later), and renewals it takes
/// meanwhile are lost, rightly unconfirmed by the replica check; the lease outlasts that.
const SENTINEL_LEASE_MS: u64 = 30_000;

async fn a_hold_survives_a_sentinel_failover_or_its_holder_is_told(own: &Arc<OwnSentinel>) {
    let prefix = unique_prefix("own-sentinel-failover");
    let name = format!("{prefix}:orders");
    let a = client(
        own,
        through_failover::failover_config(&prefix, SENTINEL_LEASE_MS),
    )
    .await;
    let b = client(
        own,
        LockConfig {
            wait_round_cap: Some(lock_core::Millis(120_000)),
            ..through_failover::failover_config(&prefix, SENTINEL_LEASE_MS)
        },
    )
    .await;
    let group = Arc::clone(own);
    through_failover::hold_through_failover(&a, Arc::new(b), &name, move || group.failover()).await;
}

/// The lease of the hold cut off from every server in [`a_holder_cut_off_by_a_failover_is_told`]:
/// a third of it is the watchdog's period, and the cut-off outlasts it.
const CUT_OFF_LEASE_MS: u64 = 6_000;

/// The "told" way through a failover, taken on purpose: the old primary is stopped from the
/// moment the sentinels name the new one until the holder's lease has run out, so no renewal of
/// the hold can be confirmed, and its key on the new primary expires unrenewed. The holder must
/// be told before the waiter is granted, and the waiter's own hold must hold (or its loss be
/// reported before its unlock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_by_a_failover_is_told() {
    let own = Arc::new(
        tokio::task::spawn_blocking(OwnSentinel::start)
            .await
            .unwrap(),
    );
    let prefix = unique_prefix("own-sentinel-cut-off");
    let name = format!("{prefix}:orders");
    let a = client(
        &own,
        through_failover::failover_config(&prefix, CUT_OFF_LEASE_MS),
    )
    .await;
    let b = client(
        &own,
        LockConfig {
            wait_round_cap: Some(lock_core::Millis(120_000)),
            ..through_failover::failover_config(&prefix, CUT_OFF_LEASE_MS)
        },
    )
    .await;
    let group = Arc::clone(&own);
    let cut_off = Duration::from_millis(CUT_OFF_LEASE_MS + 2_000);
    let way = through_failover::hold_through_failover(&a, Arc::new(b), &name, move || {
        group.failover_cutting_off_the_old_primary(cut_off)
    })
    .await;
    assert_eq!(way, through_failover::ThroughFailover::Told);
}
