//! One rule, checked across a failover of the server holding a lock: the holder either keeps the
//! lock with its renewals confirmed, or is told (`lost()`) before another owner is granted; a
//! fenced resource never accepts an older token after a newer one; a waiter is woken by the
//! unlock message that follows.

#![allow(dead_code)]

use lock_core::{HoldState, LockClient, LockError, UnlockOutcome};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A resource that accepts a write only with a token above every token it has seen.
#[derive(Default)]
pub struct FencedResource {
    highest: Mutex<u64>,
}

impl FencedResource {
    /// Writes with `token`: whether the resource accepted it.
    pub fn write(&self, token: u64) -> bool {
        let mut highest = self.highest.lock().unwrap();
        if token > *highest {
            *highest = token;
            true
        } else {
            false
        }
    }
}

/// Settings for a hold that should outlive a failover: a watchdog lease longer than the failover
/// takes (`lease_ms`), with an 800 ms response timeout.
pub fn failover_config(prefix: &str, lease_ms: u64) -> lock_core::LockConfig {
    lock_core::LockConfig {
        watchdog_timeout: lock_core::Millis(lease_ms),
        response_timeout: Some(lock_core::Millis(800)),
        key_layout: lock_core::KeyLayout::new(prefix),
        ..lock_core::LockConfig::default()
    }
}

/// Which way a hold came through a failover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThroughFailover {
    /// The holder kept it, with a renewal confirmed after the failover.
    Kept,
    /// The holder was told that it was lost or may be lost.
    Told,
}

/// `a` takes `name` fenced, `b` waits for it (with a wait round far longer than the test, so only
/// an unlock message can wake it in time), `failover` runs while `a` holds it, then the rule
/// above is checked and `a` unlocks. Says which way the hold came through.
pub async fn hold_through_failover(
    a: &LockClient,
    b: Arc<LockClient>,
    name: &str,
    failover: impl FnOnce() + Send + 'static,
) -> ThroughFailover {
    let resource = Arc::new(FencedResource::default());
    let (guard, first) = a.lock_fenced(name).await.unwrap();
    assert!(resource.write(first));
    let waiter = {
        let (b, name, resource) = (Arc::clone(&b), name.to_owned(), Arc::clone(&resource));
        tokio::spawn(async move {
            // A grant too few replicas acknowledged (the new primary's replica is still catching
            // up) is refused and given back: the waiter asks again.
            let granted = loop {
                match b
                    .try_lock_fenced(&name, Duration::from_secs(90), None)
                    .await
                {
                    Err(lock_core::LockError::ReplicasNotSynced { .. }) => continue,
                    other => break other.unwrap(),
                }
            }
            .expect("the waiter gets the lock once the holder lets go");
            let at = Instant::now();
            let (guard, token) = granted;
            assert!(
                resource.write(token),
                "the fenced resource refused the waiter's token {token}: an older token came \
                 after a newer one"
            );
            (guard, at)
        })
    };
    // The waiter has tried once and subscribed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "the waiter was granted a held lock");

    let lost_at: Arc<Mutex<Option<(Instant, HoldState)>>> = Arc::default();
    let watch = {
        let mut status = guard.watch();
        let lost_at = Arc::clone(&lost_at);
        tokio::spawn(async move {
            loop {
                let state = status.borrow_and_update().state;
                if state != HoldState::Valid {
                    lost_at
                        .lock()
                        .unwrap()
                        .get_or_insert((Instant::now(), state));
                }
                if status.changed().await.is_err() {
                    return;
                }
            }
        })
    };
    let failover_started = Instant::now();
    tokio::task::spawn_blocking(failover).await.unwrap();
    let promised = guard.valid_until();
    // More than a watchdog period past the failover: a hold still valid now whose valid_until
    // moved was renewed, and the renewal confirmed, after it.
    let period = a.config().watchdog_period().to_duration();
    tokio::time::sleep(period + Duration::from_secs(1)).await;
    let status = guard.status();
    eprintln!(
        "the hold a watchdog period after the failover: {}",
        status.state
    );
    if status.state == HoldState::Valid {
        assert!(
            guard.valid_until() > promised,
            "no renewal was confirmed after the failover"
        );
        assert!(
            !waiter.is_finished(),
            "another owner was granted while the holder's lease was confirmed"
        );
        // The waiter may be granted before the unlock returns: the release is applied on the
        // primary before its WAIT for the replica comes back.
        let unlocking = Instant::now();
        assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
        let (b_guard, granted_at) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the unlock message woke the waiter well before its wait round ended")
            .unwrap();
        assert!(granted_at >= unlocking);
        b_guard.unlock().await.unwrap();
        watch.abort();
        ThroughFailover::Kept
    } else {
        // Told: the other owner's grant comes after the holder heard of the loss.
        let (b_guard, granted_at) = waiter.await.unwrap();
        let (told_at, state) = lost_at.lock().unwrap().expect("the holder was told");
        eprintln!(
            "the holder was told {state} at {:?} and the waiter granted at {:?} after the failover began",
            told_at.saturating_duration_since(failover_started),
            granted_at.saturating_duration_since(failover_started),
        );
        assert!(
            told_at <= granted_at,
            "the holder was told {state} only after another owner was granted"
        );
        drop(guard);
        waiters_unlock(b_guard).await;
        watch.abort();
        ThroughFailover::Told
    }
}

/// The waiter's unlock after the holder was told. The waiter was granted while the topology may
/// still be settling (on a Sentinel group its grant comes as the old primary resyncs, before the
/// group is healthy again), so its own hold may be lost in turn. The rule is the holder's: it
/// keeps the lock, or it is told. `NotLocked` is accepted only when the waiter's status said its
/// hold was no longer valid before it unlocked; a loss it was not told of fails.
async fn waiters_unlock(b_guard: lock_core::LockGuard) {
    let before = b_guard.status().state;
    eprintln!("the waiter's hold at its unlock: {before}");
    match b_guard.unlock().await {
        Ok(_) => {}
        Err(LockError::NotLocked { .. }) => assert_ne!(
            before,
            HoldState::Valid,
            "the waiter's hold was lost without the waiter being told"
        ),
        Err(e) => panic!("the waiter's unlock failed: {e}"),
    }
}
