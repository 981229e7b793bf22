//! What every real-server test file checks of the lock, whatever the topology: the same steps
//! against a standalone server, a cluster's shards and a Sentinel-watched primary.

use lock_core::{LockClient, UnlockOutcome};
use std::time::{Duration, Instant};

/// `a` takes `name` and re-enters it while `b` is refused, gives both holds back, then the two
/// draw growing fencing tokens and `a` force-unlocks `b`'s hold.
pub async fn holds_reenters_fences_and_force_unlocks(a: &LockClient, b: &LockClient, name: &str) {
    let guard = a.lock(name).await.unwrap();
    let again = guard.reenter(None).await.unwrap();
    assert_eq!(guard.hold_count().await.unwrap(), 2);
    assert!(
        b.try_lock(name, Duration::from_millis(200), None)
            .await
            .unwrap()
            .is_none(),
        "{name}: another client must not get a held lock"
    );
    assert_eq!(again.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert!(!b.is_locked(name).await.unwrap());

    let (first, t1) = a.lock_fenced(name).await.unwrap();
    first.unlock().await.unwrap();
    let (second, t2) = b.lock_fenced(name).await.unwrap();
    assert!(t2 > t1, "{name}: tokens grow ({t1} then {t2})");
    assert!(a.force_unlock(name).await.unwrap());
    assert!(!a.is_locked(name).await.unwrap());
    drop(second);
}

/// `holder` holds `name` for a minute while `waiter` (whose wait rounds must be a minute long
/// too) waits; the unlock's message must wake it well within that. Prints the wake-up latency.
pub async fn an_unlock_message_wakes_the_waiter(
    holder: &LockClient,
    waiter: std::sync::Arc<LockClient>,
    name: &str,
) {
    let held = holder
        .lock_with_lease(name, Duration::from_secs(60))
        .await
        .unwrap();
    let waiting = {
        let waiter = std::sync::Arc::clone(&waiter);
        let name = name.to_owned();
        tokio::spawn(async move { waiter.lock(&name).await })
    };
    // Let the waiter subscribe and make its first attempt.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = Instant::now();
    assert_eq!(held.unlock().await.unwrap(), UnlockOutcome::Released);
    let guard = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .unwrap_or_else(|_| panic!("{name}: the waiter was not woken by the unlock message"))
        .unwrap()
        .unwrap();
    eprintln!("{name}: woken {:?} after the unlock", released.elapsed());
    assert!(waiter.is_locked(name).await.unwrap());
    guard.unlock().await.unwrap();
}
