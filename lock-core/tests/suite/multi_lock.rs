//! The multi-lock's rules, on the fake and tokio's paused time: one fixed acquire order, all
//! under one owner, partial grants given back, one wait budget for all, a lease (or a watchdog)
//! per lock, and an unlock of all.

use crate::support;

use lock_core::{LockClient, LockError, MultiLockGuard, UnlockOutcome};
use support::{ClientIdx, MS, World, ms, secs};

fn field(client: &LockClient, guard: &MultiLockGuard) -> String {
    format!("{}:{}", client.client_id(), guard.owner().id())
}

/// The keys of `client`'s acquire calls, in the order it sent them.
fn acquired_keys(world: &World, client: ClientIdx) -> Vec<String> {
    world
        .calls(client, "acquire")
        .into_iter()
        .map(|call| String::from_utf8_lossy(&call.keys[0]).into_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_locks_are_taken_in_name_order_under_one_owner_and_all_given_back() {
    let world = World::with_latency(MS);
    let (a, ai) = world.client();
    let multi = a.multi_lock(["orders", "accounts", "stock", "accounts"]);
    assert_eq!(multi.names(), ["accounts", "orders", "stock"]);

    let guard = multi.lock().await.unwrap();
    assert_eq!(acquired_keys(&world, ai), ["accounts", "orders", "stock"]);
    let holder = field(&a, &guard);
    for name in multi.names() {
        assert_eq!(world.holders(name), vec![(holder.clone(), "1".to_owned())]);
    }
    assert_eq!(guard.guards().len(), 3);
    assert!(guard.is_valid());

    guard.unlock().await.unwrap();
    for name in multi.names() {
        assert!(!world.exists(name), "{name} was given back");
    }
}

#[tokio::test(start_paused = true)]
async fn one_lock_held_elsewhere_fails_the_whole_and_gives_back_the_ones_taken() {
    let world = World::with_latency(MS);
    let (a, ai) = world.client();
    let (b, _) = world.client();
    let held = b.lock("orders").await.unwrap();

    let started = world.elapsed();
    let multi = a.multi_lock(["accounts", "orders", "stock"]);
    assert!(multi.try_lock(secs(1), None).await.unwrap().is_none());
    assert!(world.elapsed() - started >= secs(1));
    // The lock after the refused one was never asked for; the one before it is released
    // before the answer.
    let asked = acquired_keys(&world, ai);
    assert_eq!(asked[..2], ["accounts", "orders"]);
    assert!(!asked.iter().any(|name| name == "stock"), "{asked:?}");
    assert!(!world.exists("accounts"));
    assert!(!world.exists("stock"));
    assert!(
        world.exists("orders"),
        "the other holder's lock is untouched"
    );

    // With no wait at all: one attempt at each, and the same outcome.
    assert!(multi.try_lock(secs(0), None).await.unwrap().is_none());
    assert!(!world.exists("accounts"));
    assert_eq!(held.unlock().await.unwrap(), UnlockOutcome::Released);
}

#[tokio::test(start_paused = true)]
async fn the_wait_budget_is_shared_across_the_locks() {
    let world = World::with_latency(MS);
    let (a, _) = world.client();
    let (b, _) = world.client();
    let (c, _) = world.client();
    // `accounts` frees itself at 600 ms; `orders` stays held for a minute.
    let _first = b.lock_with_lease("accounts", ms(600)).await.unwrap();
    let second = c.lock_with_lease("orders", secs(60)).await.unwrap();

    let started = world.elapsed();
    let multi = a.multi_lock(["accounts", "orders"]);
    assert!(multi.try_lock(secs(1), None).await.unwrap().is_none());
    let waited = world.elapsed() - started;
    // 600 ms for the first lock and the rest of the second, not a full second for each.
    assert!(
        waited >= secs(1) && waited < secs(1) + ms(100),
        "waited {waited:?}"
    );
    assert!(
        !world.exists("accounts"),
        "the grant of `accounts` was given back"
    );
    assert_eq!(second.unlock().await.unwrap(), UnlockOutcome::Released);
}

#[tokio::test(start_paused = true)]
async fn each_lock_has_its_own_lease_or_its_own_watchdog() {
    let world = World::with_latency(MS);
    let (a, ai) = world.client();

    let leased = a.multi_lock(["l1", "l2"]);
    let guard = leased.lock_with_lease(secs(5)).await.unwrap();
    assert!(world.pttl("l1") > 4_990 && world.pttl("l1") <= 5_000);
    assert!(world.pttl("l2") > 4_990 && world.pttl("l2") <= 5_000);
    world.sleep_until(world.elapsed() + secs(5) + ms(10)).await;
    assert!(
        !world.exists("l1") && !world.exists("l2"),
        "both leases ran out"
    );
    assert!(
        world.renewals(ai).is_empty(),
        "a fixed lease is never renewed"
    );
    assert!(!guard.is_valid());
    assert!(matches!(
        guard.unlock().await,
        Err(LockError::NotLocked { .. })
    ));

    let kept = a.multi_lock(["w1", "w2"]);
    let guard = kept.lock().await.unwrap();
    let taken_at = world.elapsed();
    world.sleep_until(taken_at + secs(65)).await;
    assert!(guard.is_valid());
    for name in ["w1", "w2"] {
        assert!(world.renewals_of(ai, name).len() >= 6, "{name} renewed");
        assert!(world.pttl(name) > 0);
    }
    guard.unlock().await.unwrap();
    assert!(!world.exists("w1") && !world.exists("w2"));
}

#[tokio::test(start_paused = true)]
async fn a_lease_that_ran_out_before_the_last_grant_fails_the_acquire() {
    let world = World::with_latency(MS);
    let (a, _) = world.client();
    let (b, _) = world.client();
    let _blocker = b.lock_with_lease("second", secs(1)).await.unwrap();

    // `first` is taken at once with a 300 ms lease; `second` only after a second.
    let multi = a.multi_lock(["first", "second"]);
    let err = multi.try_lock(secs(2), Some(ms(300))).await.unwrap_err();
    assert!(
        matches!(&err, LockError::HoldLost { name, .. } if name == "first"),
        "{err}"
    );
    assert!(
        !world.exists("second"),
        "the grant of `second` was given back"
    );
}

#[tokio::test(start_paused = true)]
async fn lock_waits_in_rounds_so_a_peer_taking_the_locks_in_another_order_gets_through() {
    let world = World::with_latency(MS);
    let (a, _) = world.client();
    let (b, _) = world.client();
    // The peer holds `second` and then waits for `first`, as a multi-lock taking the names in
    // the opposite order would: ours holds `first` and waits for `second`.
    let peer_second = b.lock("second").await.unwrap();
    let peer = b.new_owner().await.unwrap();
    let ours = tokio::spawn({
        let multi = a.multi_lock(["first", "second"]);
        async move { multi.lock().await }
    });
    world.sleep_until(world.elapsed() + ms(100)).await;
    assert!(
        world.exists("first"),
        "ours took `first` and waits for `second`"
    );
    let peer_first = tokio::spawn(async move { peer.lock("first").await });

    // Ours gives `first` back at the end of its 3 s round; the peer gets it, finishes, and
    // frees both; ours then takes both.
    let peer_first = peer_first.await.unwrap().unwrap();
    assert!(world.elapsed() < secs(4), "{:?}", world.elapsed());
    assert_eq!(peer_first.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(peer_second.unlock().await.unwrap(), UnlockOutcome::Released);
    let guard = ours.await.unwrap().unwrap();
    assert!(guard.is_valid());
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_multi_lock_over_no_names_is_refused() {
    let world = World::new();
    let (a, _) = world.client();
    let none: [&str; 0] = [];
    let err = a.multi_lock(none).lock().await.unwrap_err();
    assert!(matches!(err, LockError::EmptyName { .. }), "{err}");
}
