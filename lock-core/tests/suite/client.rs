//! The tokio client's acceptance tests, on tokio's paused time.
//!
//! They run on the `fake-redis` crate (a `FakeBackend` per client over one engine on a
//! `TokioClock`, faults from the engine's fault plan), through `support::World`'s small helper API.

use crate::support;

use lock_core::{HoldState, LockClient, LockConfig, LockError, LockGuard, Millis, UnlockOutcome};
use support::{MS, World, ms, secs};

fn owner_field(client: &LockClient, guard: &LockGuard) -> String {
    format!("{}:{}", client.client_id(), guard.owner().id())
}

#[tokio::test(start_paused = true)]
async fn watchdog_renews_every_third_of_the_timeout_and_holds_for_an_hour() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    assert_eq!(world.pttl("orders"), 30_000);
    world.sleep_until(secs(30) + ms(500)).await;
    assert_eq!(world.renewals(ai), vec![secs(10), secs(20), secs(30)]);
    world.sleep_until(secs(3600) + ms(500)).await;
    assert!(guard.is_valid());
    assert!(world.exists("orders"));
    let renewals = world.renewals(ai).len();
    assert!(
        (359..=361).contains(&renewals),
        "{renewals} renewals in an hour"
    );
    // Each pass started one period after the previous one ended.
    let times = world.renewals(ai);
    assert!(times.windows(2).all(|w| w[1] - w[0] == secs(10)));
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
}

/// A new hold's end is a deadline for the driver's timer. Once the timer exists, the caller's own
/// step sets it (the driver is not woken for it): here when it sleeps without a deadline since the
/// first hold was released, and again after it fired and the driver found nothing more to wait
/// for. Either way the driver must wake at the hold's end and report it.
#[tokio::test(start_paused = true)]
async fn a_holds_end_is_reported_on_time_when_the_caller_sets_the_drivers_timer() {
    let world = World::new();
    let (a, _) = world.client();
    let first = a.lock_with_lease("orders", secs(30)).await.unwrap();
    assert_eq!(first.unlock().await.unwrap(), UnlockOutcome::Released);
    for round in 0..3 {
        let guard = a.lock_with_lease("orders", secs(2)).await.unwrap();
        let taken = world.elapsed();
        let valid_until = guard.status().valid_until;
        let state = tokio::time::timeout(secs(60), guard.lost()).await;
        assert_eq!(
            state,
            Ok(HoldState::MayBeLost),
            "round {round}: the end of a 2 s lease was reported"
        );
        assert!(
            tokio::time::Instant::now() <= valid_until + MS,
            "round {round}: reported {:?} after the lock was taken, on a 2 s lease",
            world.elapsed() - taken
        );
        drop(guard);
        // The next round starts after the timer fired and the driver went back to sleep.
        world.sleep_until(world.elapsed() + secs(40)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_fixed_lease_expires_and_a_waiter_takes_over_without_any_renewal() {
    let world = World::with_latency(ms(1));
    let (a, ai) = world.client();
    let (b, _) = world.client();
    let guard = a.lock_with_lease("orders", secs(5)).await.unwrap();
    let acquired_at = world.elapsed();
    let holder = owner_field(&a, &guard);
    let waiter = tokio::spawn(async move {
        let g = b.lock("orders").await.unwrap();
        (g, b)
    });
    // Eight seconds of work on a five-second lease.
    world.sleep_until(acquired_at + secs(5) + MS).await;
    assert_eq!(
        world.count("orders", &holder),
        0,
        "the key expired at its lease"
    );
    let (b_guard, b) = waiter.await.unwrap();
    let round_trip = ms(2);
    assert!(world.elapsed() <= acquired_at + secs(5) + MS + round_trip + round_trip);
    world.sleep_until(secs(8)).await;
    assert!(matches!(
        guard.unlock().await,
        Err(LockError::NotLocked { .. })
    ));
    assert!(
        world.renewals(ai).is_empty(),
        "a fixed lease is never renewed"
    );
    assert_eq!(world.count("orders", &owner_field(&b, &b_guard)), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unlock_whose_reply_is_dropped_is_replayed_by_the_latch() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    world.sleep_until(secs(15)).await;
    world.drop_next_reply(ai, 1);
    let unlock_at = world.elapsed();
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    let releases = world.calls(ai, "release");
    assert_eq!(releases.len(), 2);
    assert_eq!(releases[0].keys[2], releases[1].keys[2], "one request id");
    world.sleep_until(secs(120)).await;
    assert!(world.renewals(ai).iter().all(|t| *t < unlock_at));
    assert!(!world.exists("orders"));
}

#[tokio::test(start_paused = true)]
async fn an_unlock_that_never_arrives_is_unknown_once_the_latch_window_closes() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    world.sleep_until(secs(15)).await;
    world.link_down(ai, secs(60));
    let result = guard.unlock().await;
    assert!(
        matches!(result, Err(LockError::OutcomeUnknown { .. })),
        "{result:?}"
    );
    // The latch window (4 response timeouts) closed 12 s after the first attempt.
    assert_eq!(world.elapsed(), secs(27));
    world.sleep_until(secs(90)).await;
    let renewals = world.renewals(ai);
    assert_eq!(renewals, vec![secs(10)], "no renewal after the unlock call");
    assert!(!world.exists("orders"));
    // It expired 30 s after the last renewal.
    let (c, _) = world.client();
    assert!(!c.is_locked("orders").await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn the_key_of_an_unlock_lost_on_the_wire_expires_30s_after_its_last_renewal() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    world.sleep_until(secs(15)).await;
    world.link_down(ai, secs(60));
    let _ = guard.unlock().await;
    world.sleep_until(secs(40)).await;
    assert!(world.exists("orders"), "alive through its deadline");
    world.sleep_until(secs(40) + MS).await;
    assert!(!world.exists("orders"));
}

#[tokio::test(start_paused = true)]
async fn an_acquire_whose_reply_is_dropped_counts_once() {
    let world = World::new();
    let (a, ai) = world.client();
    world.drop_next_reply(ai, 1);
    let guard = a.lock("orders").await.unwrap();
    let acquires = world.calls(ai, "acquire");
    assert_eq!(acquires.len(), 2);
    assert_eq!(acquires[0].keys[1], acquires[1].keys[1], "one request id");
    assert_eq!(world.count("orders", &owner_field(&a, &guard)), 1);
    assert_eq!(guard.hold_count().await.unwrap(), 1);
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert!(!world.exists("orders"), "no orphaned hold");
}

#[tokio::test(start_paused = true)]
async fn an_acquire_delayed_past_the_clients_retry_counts_once() {
    let world = World::new();
    let (a, ai) = world.client();
    world.delay_next_request(ai, secs(5));
    let guard = a.lock("orders").await.unwrap();
    // The retry (after the 3 s response timeout) acquired; the first lands at 5 s on the latch.
    assert_eq!(world.elapsed(), secs(3));
    world.sleep_until(secs(6)).await;
    let acquires = world.calls(ai, "acquire");
    assert_eq!(acquires.len(), 2);
    assert!(acquires.iter().all(|c| c.applied));
    assert_eq!(world.count("orders", &owner_field(&a, &guard)), 1);
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert!(!world.exists("orders"), "no orphaned hold");
}

#[tokio::test(start_paused = true)]
async fn a_lock_future_dropped_mid_acquire_leaves_nothing_behind() {
    let world = World::new();
    let (a, ai) = world.client();
    world.delay_next_request(ai, secs(2));
    let attempt = tokio::time::timeout(secs(1), a.lock("orders")).await;
    assert!(attempt.is_err(), "timed out");
    // The acquire lands at 2 s and is granted; the client gives it straight back.
    world.sleep_until(secs(2) + ms(10)).await;
    assert_eq!(world.calls(ai, "release").len(), 1);
    assert!(!world.exists("orders"));
    // A lock taken afterwards is unharmed.
    let (b, bi) = world.client();
    let guard = b.lock("orders").await.unwrap();
    world.sleep_until(secs(70)).await;
    assert!(guard.is_valid());
    assert_eq!(world.count("orders", &owner_field(&b, &guard)), 1);
    assert!(
        world.renewals(ai).is_empty(),
        "the cancelled acquire was never renewed"
    );
    assert!(!world.renewals(bi).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_crashed_holders_lock_expires_and_a_waiter_takes_it() {
    let world = World::with_latency(ms(1));
    let (a, ai) = world.client();
    let (b, _) = world.client();
    let guard = a.lock("orders").await.unwrap();
    let waiter = tokio::spawn(async move { b.lock("orders").await.map(|g| (g, b)) });
    world.sleep_until(secs(25)).await;
    let crash = world.elapsed();
    a.abort();
    world.cut_link(ai);
    assert_eq!(guard.lost().await, HoldState::ClientStopped);
    let (b_guard, b) = waiter.await.unwrap().unwrap();
    let round_trip = ms(2);
    assert!(
        world.elapsed() <= crash + secs(30) + round_trip * 2 + MS,
        "{:?}",
        world.elapsed()
    );
    assert!(world.renewals(ai).iter().all(|t| *t < crash));
    assert_eq!(world.count("orders", &owner_field(&b, &b_guard)), 1);
}

#[tokio::test(start_paused = true)]
async fn reentry_three_times_and_two_unlocks_keep_the_lock_with_a_full_lease() {
    let world = World::new();
    let (a, ai) = world.client();
    let (b, _) = world.client();
    let outer = a.lock("orders").await.unwrap();
    let second = outer.reenter(None).await.unwrap();
    let third = second.owner().lock("orders").await.unwrap();
    let field = owner_field(&a, &outer);
    assert_eq!(world.count("orders", &field), 3);
    world.sleep_until(secs(1)).await;
    let waiter = tokio::spawn(async move { b.lock("orders").await.map(|g| (g, b)) });
    world.sleep_until(secs(5)).await;
    assert_eq!(third.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    assert_eq!(second.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    assert_eq!(world.count("orders", &field), 1);
    assert_eq!(world.pttl("orders"), 30_000, "the lease is back to full");
    world.sleep_until(secs(40) + ms(500)).await;
    assert_eq!(world.renewals_of(ai, "orders").len(), 4, "still renewing");
    assert!(!waiter.is_finished());
    // The waiter sleeps in 10 s rounds; only the unlock message can wake it at 40.5 s.
    let released_at = world.elapsed();
    assert_eq!(outer.unlock().await.unwrap(), UnlockOutcome::Released);
    let (b_guard, b) = waiter.await.unwrap().unwrap();
    assert_eq!(
        world.elapsed(),
        released_at,
        "woken by pub/sub within one round trip"
    );
    assert_eq!(world.count("orders", &owner_field(&b, &b_guard)), 1);
}

#[tokio::test(start_paused = true)]
async fn reentering_a_watchdog_hold_with_a_lease_is_refused() {
    let world = World::new();
    let (a, _) = world.client();
    let guard = a.lock("orders").await.unwrap();
    let err = guard.reenter(Some(secs(5))).await.unwrap_err();
    assert!(matches!(err, LockError::LeaseModeMismatch { .. }), "{err}");
    assert!(err.to_string().contains("with watchdog"), "{err}");
    assert_eq!(guard.hold_count().await.unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_shorter_lease_reentry_moves_valid_until_down_with_the_keys_ttl() {
    let world = World::new();
    let (a, _) = world.client();
    let guard = a.lock_with_lease("orders", secs(20)).await.unwrap();
    assert_eq!(guard.valid_until(), world.at(secs(20) - ms(202)));
    world.sleep_until(secs(1)).await;
    let inner = guard.reenter(Some(secs(5))).await.unwrap();
    assert_eq!(world.pttl("orders"), 5000);
    // 1 s + 5 s − (1 % × 5 s + 2 ms)
    assert_eq!(guard.valid_until(), world.at(secs(6) - ms(52)));
    assert_eq!(inner.valid_until(), guard.valid_until());
}

#[tokio::test(start_paused = true)]
async fn try_lock_is_not_acquired_exactly_when_its_wait_is_spent() {
    let world = World::new();
    let (a, _) = world.client();
    let (b, _) = world.client();
    let _holder = a.lock_with_lease("orders", secs(10)).await.unwrap();
    let got = b.try_lock("orders", secs(3), None).await.unwrap();
    assert!(got.is_none());
    assert_eq!(world.elapsed(), secs(3));
}

#[tokio::test(start_paused = true)]
async fn try_lock_gets_a_lock_released_during_its_wait_within_one_round_trip() {
    let world = World::new();
    let (a, _) = world.client();
    let (b, _) = world.client();
    let holder = a.lock_with_lease("orders", secs(10)).await.unwrap();
    let w = world.clone();
    tokio::spawn(async move {
        w.sleep_until(secs(2)).await;
        holder.unlock().await.unwrap();
    });
    let got = b.try_lock("orders", secs(3), None).await.unwrap();
    assert!(got.is_some());
    assert_eq!(world.elapsed(), secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_waiter_on_a_holder_without_ttl_whose_unlock_message_is_lost_retries_within_a_round() {
    let world = World::new();
    let (a, _) = world.client();
    let (b, bi) = world.client();
    let holder = a.lock("orders").await.unwrap();
    assert!(world.persist("orders"));
    let waiter = tokio::spawn(async move { b.lock("orders").await.map(|g| (g, b)) });
    world.sleep_until(secs(2)).await;
    world.drop_next_message(bi, 1);
    assert_eq!(holder.unlock().await.unwrap(), UnlockOutcome::Released);
    let released_at = world.elapsed();
    let (_guard, b) = waiter.await.unwrap().unwrap();
    let cap = b.config().wait_round_cap().to_duration();
    assert!(world.elapsed() > released_at, "the message was lost");
    assert!(world.elapsed() <= released_at + cap);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_woken_at_the_holders_deadline_acquires_1ms_later_without_spinning() {
    let world = World::new();
    let (a, _) = world.client();
    let (b, bi) = world.client();
    let _holder = a.lock_with_lease("orders", secs(5)).await.unwrap();
    let guard = b.try_lock("orders", secs(10), None).await.unwrap();
    assert!(guard.is_some());
    assert_eq!(world.elapsed(), secs(5) + MS);
    let attempts: Vec<_> = world.calls(bi, "acquire").iter().map(|c| c.at).collect();
    assert_eq!(attempts, vec![secs(0), secs(0), secs(5), secs(5) + MS]);
}

#[tokio::test(start_paused = true)]
async fn force_unlock_by_another_client_makes_the_holders_next_renewal_find_it_lost() {
    let world = World::new();
    let (a, ai) = world.client();
    let (b, _) = world.client();
    let guard = a.lock("orders").await.unwrap();
    world.sleep_until(secs(5)).await;
    assert!(b.force_unlock("orders").await.unwrap());
    assert_eq!(guard.lost().await, HoldState::Lost);
    assert_eq!(world.elapsed(), secs(10));
    assert_eq!(guard.status().state, HoldState::Lost);
    assert!(!guard.is_valid());
    world.sleep_until(secs(60)).await;
    assert_eq!(world.renewals_of(ai, "orders"), vec![secs(10)]);
    assert!(matches!(
        guard.unlock().await,
        Err(LockError::NotLocked { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn dropped_renew_replies_keep_valid_until_and_renewal_resumes_after() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    let first_valid_until = guard.valid_until();
    assert_eq!(first_valid_until, world.at(secs(30) - ms(302)));
    world.sleep_until(secs(5)).await;
    world.drop_replies_for(ai, secs(25));
    world.sleep_until(secs(29)).await;
    assert_eq!(
        guard.valid_until(),
        first_valid_until,
        "unknown renewals do not move it"
    );
    assert_eq!(guard.lost().await, HoldState::MayBeLost);
    assert_eq!(tokio::time::Instant::now(), first_valid_until);
    assert!(!guard.is_valid());
    // Passes at 10 s and 23 s went unanswered (3 s each); the one at 36 s is answered.
    world.sleep_until(secs(36) + ms(500)).await;
    assert_eq!(world.renewals(ai), vec![secs(10), secs(23), secs(36)]);
    let in_window = |c: &support::CallRecord| c.client == ai && (secs(5)..secs(30)).contains(&c.at);
    assert!(
        world
            .log()
            .iter()
            .filter(|c| in_window(c))
            .all(|c| c.name == "renew_batch"),
        "only renewal replies were dropped: nothing else was sent in the window"
    );
    assert_eq!(guard.status().state, HoldState::Valid);
    assert_eq!(guard.valid_until(), world.at(secs(66) - ms(302)));
    assert!(guard.is_valid());
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_watchdog_locks_renew_in_100_calls_per_pass() {
    let world = World::new();
    let (a, ai) = world.client();
    let mut guards = Vec::new();
    for i in 0..10_000 {
        guards.push(a.lock(&format!("lock-{i}")).await.unwrap());
    }
    world.sleep_until(secs(25)).await;
    let renewals = world.renewals(ai);
    assert_eq!(renewals.len(), 200);
    assert_eq!(renewals.iter().filter(|t| **t == secs(10)).count(), 100);
    assert_eq!(renewals.iter().filter(|t| **t == secs(20)).count(), 100);
    assert!(
        world
            .calls(ai, "renew_batch")
            .iter()
            .all(|c| c.keys.len() == 100)
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_guard_stops_renewal_at_once_and_releases_in_the_background() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    world.sleep_until(secs(5)).await;
    drop(guard);
    world.sleep_until(secs(5) + ms(10)).await;
    assert!(!world.exists("orders"));
    world.sleep_until(secs(60)).await;
    assert!(world.renewals(ai).is_empty());
}

#[tokio::test(start_paused = true)]
async fn fenced_locks_return_the_owners_newest_token() {
    let world = World::new();
    let (a, _) = world.client();
    let (guard, token) = a.lock_fenced("orders").await.unwrap();
    let floor = world.token_floor();
    assert_eq!(token, floor);
    let (inner, token2) = guard.owner().lock_fenced("orders").await.unwrap();
    assert_eq!(token2, floor + 1);
    assert_eq!(guard.token(), Some(floor + 1));
    drop(inner);
    drop(guard);
    let (b, _) = world.client();
    world.sleep_until(secs(1)).await;
    let (_g, token3) = b
        .try_lock_fenced("orders", secs(1), None)
        .await
        .unwrap()
        .expect("free");
    // A second later the clock's floor is above the counter.
    assert_eq!(token3, world.token_floor());
    assert!(token3 > floor + 1);
}

#[tokio::test(start_paused = true)]
async fn queries_report_the_servers_view() {
    let world = World::new();
    let (a, _) = world.client();
    assert!(!a.is_locked("orders").await.unwrap());
    assert_eq!(
        a.remaining_lease("orders").await.unwrap(),
        lock_core::RemainingLease::NotLocked
    );
    let guard = a.lock_with_lease("orders", secs(10)).await.unwrap();
    world.sleep_until(secs(4)).await;
    assert!(a.is_locked("orders").await.unwrap());
    assert_eq!(
        a.remaining_lease("orders").await.unwrap(),
        lock_core::RemainingLease::Remaining(Millis(6000))
    );
    assert_eq!(a.hold_count("orders", &guard.owner()).await.unwrap(), 1);
    let stranger = a.new_owner().await.unwrap();
    assert_eq!(stranger.hold_count("orders").await.unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_unsafe_config_is_refused_at_construction_naming_the_value_and_the_rule() {
    let world = World::new();
    let (backend, _) = world.backend();
    let slow = LockConfig {
        response_timeout: Some(Millis(10_000)),
        ..LockConfig::default()
    };
    let err = LockClient::new(backend, slow).expect_err("refused");
    assert_eq!(
        err,
        lock_core::ClientError::Config(lock_core::ConfigError::ResponseTimeoutTooLong {
            response_timeout: Millis(10_000),
            limit: Millis(10_000),
        })
    );
    let (backend, _) = world.backend();
    let zero = LockConfig {
        batch_size: 0,
        ..LockConfig::default()
    };
    let err = LockClient::new(backend, zero).expect_err("refused");
    assert!(err.to_string().contains("batch_size is 0"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_latch_ttl_that_would_leave_keys_for_ever_is_refused_naming_the_limit() {
    let world = World::new();
    let (backend, _) = world.backend();
    let forever = LockConfig {
        latch_ttl: Some(lock_core::Lease::MAX),
        ..LockConfig::default()
    };
    let err = LockClient::new(backend, forever).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("latch_ttl is 9000000000000000000 ms, above the 3600000 ms a latch may live"),
        "{text}"
    );
    let (backend, _) = world.backend();
    let longest = LockConfig {
        latch_ttl: Some(Millis(3_600_000)),
        ..LockConfig::default()
    };
    assert!(LockClient::new(backend, longest).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_lease_the_drift_margin_swallows_is_refused_before_anything_is_sent() {
    let world = World::new();
    let (a, ai) = world.client();
    // The default margin at a 1 ms lease: 1 % of it (rounded up) plus 2 ms, 3 ms.
    let err = a
        .lock_with_lease("orders", ms(1))
        .await
        .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains(
            "lock \"orders\": a lease of 1 ms is not above the drift margin 3 ms the lock keeps"
        ),
        "{text}"
    );
    assert!(text.contains("could never be valid"), "{text}");
    let err = a
        .acquire("orders")
        .lease(ms(3))
        .wait(secs(1))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("a lease of 3 ms"), "{err}");
    assert!(world.calls(ai, "acquire").is_empty(), "nothing was sent");
    assert!(!world.exists("orders"));
    // The shortest lease above the margin is a valid hold on a quick server.
    let guard = a.lock_with_lease("orders", ms(4)).await.unwrap();
    assert!(guard.is_valid());
}

#[tokio::test(start_paused = true)]
async fn a_guard_dropped_after_its_client_still_releases_in_the_background() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.lock("orders").await.unwrap();
    drop(a);
    world.sleep_until(secs(5)).await;
    assert!(world.exists("orders"), "the guard keeps the driver alive");
    drop(guard);
    world.sleep_until(secs(5) + ms(10)).await;
    assert!(!world.exists("orders"));
    assert_eq!(world.calls(ai, "release").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_grant_whose_caller_and_client_are_both_gone_is_given_back() {
    // The acquire lands just as its caller gives up, and the caller's client is dropped at once:
    // whichever of the grant and the cancellation the driver sees first, the lock is released,
    // not left to its 30 s lease.
    for delay in [ms(999), secs(1), ms(1001)] {
        let world = World::new();
        let (a, ai) = world.client();
        world.delay_next_request(ai, delay);
        let attempt = tokio::time::timeout(secs(1), a.lock("orders")).await;
        drop(a);
        world.sleep_until(secs(2)).await;
        if let Ok(granted) = attempt {
            drop(granted.unwrap());
            world.sleep_until(secs(3)).await;
        }
        assert!(!world.exists("orders"), "released after a {delay:?} delay");
        assert_eq!(world.calls(ai, "release").len(), 1, "{delay:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn status_and_is_valid_never_disagree() {
    let world = World::with_latency(ms(1));
    let (a, _) = world.client();
    let guard = a.lock("orders").await.unwrap();
    let agree = |guard: &LockGuard| {
        let status = guard.status();
        assert_eq!(
            status.state == HoldState::Valid,
            guard.is_valid(),
            "{status:?}"
        );
    };
    agree(&guard);
    a.abort();
    for _ in 0..1000 {
        agree(&guard);
        if !guard.is_valid() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(!guard.is_valid());
    assert_eq!(guard.status().state, HoldState::ClientStopped);
    // A second client's hold, past its valid_until before its machine has run again.
    let (b, _) = world.client();
    let lease = b
        .lock_with_lease("leased", std::time::Duration::from_secs(5))
        .await
        .unwrap();
    agree(&lease);
    tokio::time::advance(secs(6)).await;
    agree(&lease);
}

#[tokio::test(start_paused = true)]
async fn an_empty_lock_name_is_refused() {
    let world = World::new();
    let (a, _) = world.client();
    let err = a.lock("").await.unwrap_err();
    assert!(matches!(err, LockError::EmptyName { .. }), "{err}");
    assert!(err.to_string().contains("must not be empty"), "{err}");
    assert!(!world.exists(""));
    assert!(matches!(
        a.is_locked("").await,
        Err(LockError::EmptyName { .. })
    ));
    assert!(matches!(
        a.force_unlock("").await,
        Err(LockError::EmptyName { .. })
    ));
}
