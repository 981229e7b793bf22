//! The lock machine, stepped by hand: scripted replies, a manual clock, no runtime.

use crate::machine_rig;

use lock_core::machine::{
    AcquireRequest, Call, Done, HoldMode, HoldState, Input, LockEvent, LockMachine, Output,
    Request, SeededIds, Wait,
};
use lock_core::{BackendError, Lease, LockConfig, LockError, Millis, MonoTime, UnlockOutcome};
use machine_rig::{Fate, Rig, Sent, t};

fn config() -> LockConfig {
    LockConfig::default()
}

fn release(
    rig: &mut Rig,
    client: usize,
    a: &lock_core::machine::Acquired,
    name: &str,
) -> lock_core::machine::OpId {
    rig.request(
        client,
        Request::Release {
            hold: a.hold,
            name: name.into(),
            owner: a.owner,
        },
    )
}

/// A reentry of "orders" by `owner`, waiting as long as it takes; `lease: None` for the watchdog.
fn reenter(owner: lock_core::OwnerId, lease: Option<u64>) -> Request {
    Request::Acquire(AcquireRequest {
        name: "orders".into(),
        owner: Some(owner),
        lease: lease.map(|ms| Lease::from_millis(ms).unwrap()),
        wait: Wait::Forever,
        fenced: false,
    })
}

/// A fate that loses the reply of the first `script` call and answers every other call.
fn drop_first_reply_of(script: &'static str) -> Box<dyn FnMut(&Sent) -> Fate> {
    let mut first = true;
    Box::new(move |s| {
        if s.script() == script && first {
            first = false;
            Fate::DropReply
        } else {
            Fate::Reply
        }
    })
}

/// When `client` sent its acquire attempts.
fn acquire_times(rig: &Rig, client: usize) -> Vec<MonoTime> {
    rig.calls_named("acquire")
        .iter()
        .filter(|s| s.client == client)
        .map(|s| s.at)
        .collect()
}

#[test]
fn watchdog_pass_starts_a_period_after_the_previous_pass_ended() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    rig.acquired(0, op);
    // The second pass's reply takes 4 s: the third pass starts 10 s after that reply.
    rig.fate = Box::new(|s| {
        if s.script() == "renew_batch" && s.at == t(20_000) {
            Fate::Hold
        } else {
            Fate::Reply
        }
    });
    rig.advance_to(t(20_000));
    let held = rig.in_flight[0].id;
    rig.advance_to(t(24_000));
    rig.answer(held, Fate::Reply);
    rig.fate = Box::new(|_| Fate::Reply);
    rig.advance_to(t(40_000));
    assert_eq!(
        rig.renewals_of("orders"),
        vec![t(10_000), t(20_000), t(34_000)]
    );
    assert_eq!(rig.pttl("orders"), 24_000);
}

#[test]
fn acquire_sets_valid_until_from_its_send_time_minus_the_drift_margin() {
    let mut rig = Rig::new(config());
    rig.advance_to(t(500));
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    // 500 + 30 000 − (1 % of 30 000 + 2)
    assert_eq!(a.valid_until, t(30_198));
    rig.advance_to(t(10_500));
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, t(40_198));
}

#[test]
fn reentry_with_another_lease_mode_is_refused() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    let again = rig.request(0, reenter(a.owner, Some(5000)));
    let err = rig.result(0, again).unwrap().clone().unwrap_err();
    assert!(
        matches!(
            err,
            LockError::LeaseModeMismatch {
                held: HoldMode::Watchdog,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("re-entering it with a fixed lease of 5000 ms is refused"),
        "{err}"
    );
    assert_eq!(rig.calls_named("acquire").len(), 1, "nothing was sent");
}

#[test]
fn reentry_with_a_shorter_lease_lowers_valid_until_at_once_and_to_the_new_ttl() {
    let mut rig = Rig::new(config());
    let op = rig.acquire(0, "orders", Some(20_000), Wait::Forever);
    let a = rig.acquired(0, op);
    assert_eq!(a.valid_until, t(20_000 - 202));
    rig.advance_to(t(1000));
    rig.fate = Box::new(|_| Fate::Hold);
    let again = rig.request(0, reenter(a.owner, Some(5000)));
    // While the reentry's outcome is unknown, valid_until is already lowered.
    let lowered = rig.machine(0).hold("orders", a.owner).unwrap().valid_until;
    assert_eq!(lowered, t(1000 + 5000 - 52));
    let id = rig.in_flight[0].id;
    rig.advance_to(t(1200));
    rig.answer(id, Fate::Reply);
    let b = rig.acquired(0, again);
    assert_eq!(b.count, 2);
    assert_eq!(b.valid_until, t(1000 + 5000 - 52));
    // The server applied it at 1200: its expiry (6200) is later than the promise.
    assert_eq!(rig.pttl("orders"), 5000);
}

#[test]
fn a_lost_acquire_reply_is_retried_with_the_same_request_id_and_counts_once() {
    let mut rig = Rig::new(config());
    rig.fate = drop_first_reply_of("acquire");
    let op = rig.lock(0, "orders");
    // The rig reports the loss at once; the retry goes out a tenth of a response timeout later.
    rig.advance(300);
    let a = rig.acquired(0, op);
    let attempts = rig.calls_named("acquire");
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        attempts[0].keys()[1],
        attempts[1].keys()[1],
        "same latch, same request id"
    );
    assert_eq!(a.count, 1);
    assert_eq!(rig.server_count("orders", &a.owner_name), 1);
}

#[test]
fn an_acquire_whose_attempts_all_go_unanswered_reports_unknown_when_the_latch_window_closes() {
    let mut rig = Rig::new(config());
    rig.fate = Box::new(|_| Fate::Hold);
    let op = rig.lock(0, "orders");
    // Each attempt times out after the response timeout (3 s); the driver reports unknown.
    while rig.result(0, op).is_none() {
        let id = rig.in_flight[0].id;
        rig.advance(3000);
        rig.answer(id, Fate::DropRequest);
        rig.advance(0);
    }
    let err = rig.result(0, op).unwrap().clone().unwrap_err();
    assert!(matches!(err, LockError::OutcomeUnknown { .. }), "{err}");
    // The last attempt's error is the error's source, as a value.
    let source = std::error::Error::source(&err).and_then(|e| e.downcast_ref::<BackendError>());
    assert_eq!(
        source,
        Some(&BackendError::Unknown("request dropped".into()))
    );
    let attempts = rig.calls_named("acquire");
    assert!(
        attempts
            .iter()
            .all(|s| s.keys()[1] == attempts[0].keys()[1])
    );
    // Every attempt went out so that it was answered within the 12 s latch window.
    assert!(
        attempts.iter().all(|s| s.at + Millis(3000) <= t(12_000)),
        "{:?}",
        attempts.iter().map(|s| s.at).collect::<Vec<_>>()
    );
    assert_eq!(rig.finished_at(0, op), Some(t(12_000)));
    assert!(
        rig.machine(0)
            .hold("orders", lock_core::OwnerId(0))
            .is_none()
    );
    rig.advance_to(t(60_000));
    assert!(rig.calls_named("renew_batch").is_empty());
}

#[test]
fn unlock_takes_the_hold_out_of_a_renewal_batch_that_was_queued_but_not_sent() {
    let mut m = LockMachine::new(config(), SeededIds::new(1)).unwrap();
    m.handle(
        Input::Request {
            op: lock_core::machine::OpId(1),
            request: Request::Acquire(AcquireRequest {
                name: "orders".into(),
                owner: None,
                lease: None,
                wait: Wait::Forever,
                fenced: false,
            }),
        },
        MonoTime(0),
    );
    let Some(Output::Call { id, call }) = m.poll_output() else {
        panic!()
    };
    assert!(matches!(call, Call::Script(ref s) if s.script.name == "acquire"));
    m.handle(
        Input::CallResult {
            id,
            result: Ok(lock_core::Reply::Nil),
        },
        MonoTime(1),
    );
    let mut acquired = None;
    while let Some(out) = m.poll_output() {
        if let Output::Done {
            result: Ok(Done::Acquired(a)),
            ..
        } = out
        {
            acquired = Some(a);
        }
    }
    let a = acquired.unwrap();
    assert_eq!(m.poll_timeout(), Some(MonoTime(10_000)));
    // The pass starts; its batch waits in the queue, unpolled.
    m.handle(Input::Timeout, MonoTime(10_000));
    m.handle(
        Input::Request {
            op: lock_core::machine::OpId(2),
            request: Request::Release {
                hold: a.hold,
                name: "orders".into(),
                owner: a.owner,
            },
        },
        MonoTime(10_000),
    );
    let mut scripts = Vec::new();
    while let Some(out) = m.poll_output() {
        if let Output::Call {
            call: Call::Script(s),
            ..
        } = out
        {
            scripts.push(s.script.name);
        }
    }
    assert_eq!(scripts, vec!["release"], "no renewal after unlock");
    assert_eq!(
        m.poll_timeout(),
        None,
        "the watchdog stops with its last hold"
    );
}

#[test]
fn unlock_stops_renewal_even_when_its_release_is_lost() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.advance_to(t(15_000));
    rig.fate = Box::new(|_| Fate::DropRequest);
    let un = release(&mut rig, 0, &a, "orders");
    rig.advance_to(t(120_000));
    assert!(matches!(
        rig.result(0, un),
        Some(Err(LockError::OutcomeUnknown { .. }))
    ));
    assert_eq!(rig.renewals_of("orders"), vec![t(10_000)]);
    assert_eq!(
        rig.pttl("orders"),
        -2,
        "the key expired 30 s after its last renewal"
    );
}

#[test]
fn a_lost_unlock_reply_is_replayed_by_the_latch() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.fate = drop_first_reply_of("release");
    let un = release(&mut rig, 0, &a, "orders");
    rig.advance(300);
    assert_eq!(
        rig.result(0, un),
        Some(&Ok(Done::Unlocked(UnlockOutcome::Released)))
    );
    let attempts = rig.calls_named("release");
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].keys()[2], attempts[1].keys()[2]);
}

#[test]
fn unlocking_a_lock_not_held_names_lock_client_and_owner() {
    let mut rig = Rig::new(config());
    let op = rig.acquire(0, "orders", Some(1000), Wait::Forever);
    let a = rig.acquired(0, op);
    rig.advance_to(t(2000));
    let un = release(&mut rig, 0, &a, "orders");
    let err = rig.result(0, un).unwrap().clone().unwrap_err();
    let text = err.to_string();
    let client = rig.machine(0).client_id().to_owned();
    assert!(
        text.contains(
            "attempt to unlock lock \"orders\", not locked by current owner by node id: "
        ),
        "{text}"
    );
    assert!(text.contains(&client), "{text}");
    assert!(text.contains(&format!("owner-id: {}", a.owner)), "{text}");
}

#[test]
fn a_cancelled_acquire_that_succeeds_is_released_and_never_renewed() {
    let mut rig = Rig::new(config());
    rig.fate = Box::new(|_| Fate::Hold);
    let op = rig.lock(0, "orders");
    let id = rig.in_flight[0].id;
    rig.input(0, Input::Cancel { op });
    rig.fate = Box::new(|_| Fate::Reply);
    rig.answer(id, Fate::Reply);
    assert_eq!(rig.result(0, op), None, "a cancelled op is not answered");
    assert_eq!(rig.calls_named("release").len(), 1);
    assert_eq!(rig.pttl("orders"), -2);
    rig.advance_to(t(60_000));
    assert!(rig.calls_named("renew_batch").is_empty());
    assert_eq!(rig.machine(0).ops_in_progress(), 0);
}

#[test]
fn waiting_subscribes_then_retries_then_sleeps_the_holders_ttl() {
    let mut rig = Rig::new(config());
    let holder = rig.acquire(0, "orders", Some(5000), Wait::Forever);
    rig.acquired(0, holder);
    let c1 = rig.add_client(config());
    let waiter = rig.lock(c1, "orders");
    let attempts = acquire_times(&rig, c1);
    assert_eq!(attempts, vec![t(0), t(0)], "try, subscribe, try again");
    assert_eq!(rig.clients[c1].subscribe_log.len(), 1);
    // The holder's key lives through 5000; PTTL 0 there makes the waiter wait 1 ms, not spin.
    rig.advance_to(t(5000));
    assert!(rig.result(c1, waiter).is_none());
    rig.advance_to(t(5001));
    assert_eq!(rig.finished_at(c1, waiter), Some(t(5001)));
    rig.acquired(c1, waiter);
    let attempts = acquire_times(&rig, c1);
    assert_eq!(attempts, vec![t(0), t(0), t(5000), t(5001)]);
    assert!(matches!(
        rig.clients[c1].subscribe_log.last(),
        Some((_, Output::Unsubscribe { .. }))
    ));
}

#[test]
fn try_lock_says_not_acquired_exactly_when_its_budget_is_spent() {
    let mut rig = Rig::new(config());
    let holder = rig.acquire(0, "orders", Some(10_000), Wait::Forever);
    rig.acquired(0, holder);
    let c1 = rig.add_client(config());
    let op = rig.acquire(c1, "orders", None, Wait::Budget(Millis(3000)));
    rig.advance_to(t(10_000));
    assert_eq!(rig.result(c1, op), Some(&Ok(Done::NotAcquired)));
    assert_eq!(rig.finished_at(c1, op), Some(t(3000)));
    let zero = rig.acquire(c1, "orders", None, Wait::Budget(Millis(0)));
    assert_eq!(rig.result(c1, zero), Some(&Ok(Done::NotAcquired)));
}

#[test]
fn an_unlock_message_wakes_one_local_waiter() {
    let mut rig = Rig::new(config());
    let holder = rig.lock(0, "orders");
    let a = rig.acquired(0, holder);
    let c1 = rig.add_client(config());
    let w1 = rig.lock(c1, "orders");
    let w2 = rig.lock(c1, "orders");
    rig.advance_to(t(1000));
    let before = rig.calls_named("acquire").len();
    release(&mut rig, 0, &a, "orders");
    assert_eq!(
        rig.calls_named("acquire").len(),
        before + 1,
        "one waiter woke"
    );
    assert!(rig.result(c1, w1).is_some() ^ rig.result(c1, w2).is_some());
    assert_eq!(
        rig.clients[c1].subscribe_log.len(),
        1,
        "one subscription per channel"
    );
}

#[test]
fn a_restored_subscription_makes_every_waiter_retry() {
    let mut rig = Rig::new(config());
    let holder = rig.lock(0, "orders");
    rig.acquired(0, holder);
    let c1 = rig.add_client(config());
    rig.lock(c1, "orders");
    rig.lock(c1, "orders");
    rig.advance_to(t(1000));
    let before = rig.calls_named("acquire").len();
    rig.input(c1, Input::PubSub(lock_core::PubSubEvent::SubscriptionLost));
    rig.input(
        c1,
        Input::PubSub(lock_core::PubSubEvent::SubscriptionRestored),
    );
    assert_eq!(rig.calls_named("acquire").len(), before + 2);
}

#[test]
fn a_holder_without_ttl_is_polled_every_wait_round_cap() {
    let mut rig = Rig::new(config());
    let holder = rig.lock(0, "orders");
    let a = rig.acquired(0, holder);
    assert!(rig.store.persist(b"orders"));
    let c1 = rig.add_client(config());
    let waiter = rig.lock(c1, "orders");
    rig.advance_to(t(10_000));
    let times = acquire_times(&rig, c1);
    assert_eq!(times, vec![t(0), t(0), t(10_000)]);
    let _ = (a, waiter);
}

#[test]
fn a_renewal_answered_0_marks_the_hold_lost_and_stops_renewing_it() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.advance_to(t(5000));
    rig.store.set_now(machine_rig::EPOCH_MS + 5000);
    lock_core::script::Store::del(&mut rig.store, b"orders").unwrap();
    rig.advance_to(t(60_000));
    assert_eq!(rig.renewals_of("orders"), vec![t(10_000)]);
    assert!(rig.events(0).iter().any(|(at, e)| *at == t(10_000)
        && matches!(
            e,
            LockEvent::StateChanged {
                state: HoldState::Lost,
                ..
            }
        )));
    let un = release(&mut rig, 0, &a, "orders");
    assert!(matches!(
        rig.result(0, un),
        Some(Err(LockError::NotLocked { .. }))
    ));
    assert_eq!(
        rig.calls_named("release").len(),
        0,
        "a lost hold's unlock is answered locally"
    );
}

#[test]
fn unknown_renewals_keep_the_hold_and_valid_until_and_may_be_lost_fires_when_it_passes() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.fate = Box::new(|s| {
        if s.script() == "renew_batch" {
            Fate::DropReply
        } else {
            Fate::Reply
        }
    });
    rig.advance_to(t(31_000));
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, a.valid_until);
    let may_be_lost: Vec<_> = rig
        .events(0)
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                LockEvent::StateChanged {
                    state: HoldState::MayBeLost,
                    ..
                }
            )
        })
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(may_be_lost, vec![a.valid_until]);
    rig.fate = Box::new(|_| Fate::Reply);
    rig.advance_to(t(45_000));
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert!(hold.valid_until > t(45_000));
    assert!(
        rig.events(0)
            .iter()
            .any(|(_, e)| matches!(e, LockEvent::Renewed { .. }))
    );
    // The machine, not its driver, makes the hold valid again: right before the first renewal
    // confirmed after valid_until passed.
    let events = rig.events(0);
    let again = events
        .iter()
        .position(|(_, e)| {
            matches!(
                e,
                LockEvent::StateChanged {
                    state: HoldState::Valid,
                    ..
                }
            )
        })
        .expect("valid again");
    assert!(events[again].0 > a.valid_until);
    assert!(matches!(events[again + 1].1, LockEvent::Renewed { .. }));
}

#[test]
fn max_hold_stops_renewal_with_a_warning() {
    let mut rig = Rig::new(LockConfig {
        max_hold: Some(Millis(25_000)),
        ..config()
    });
    let op = rig.lock(0, "orders");
    rig.acquired(0, op);
    rig.advance_to(t(90_000));
    assert_eq!(rig.renewals_of("orders"), vec![t(10_000), t(20_000)]);
    assert!(
        rig.events(0)
            .iter()
            .any(|(at, e)| *at == t(30_000) && matches!(e, LockEvent::MaxHoldReached { .. }))
    );
    assert_eq!(rig.pttl("orders"), -2);
}

#[test]
fn a_pass_renews_in_batches_of_batch_size() {
    let mut rig = Rig::new(config());
    for i in 0..250 {
        let op = rig.lock(0, &format!("lock-{i}"));
        rig.acquired(0, op);
    }
    rig.advance_to(t(10_000));
    let sizes: Vec<_> = rig
        .calls_named("renew_batch")
        .iter()
        .map(|s| s.keys().len())
        .collect();
    assert_eq!(sizes, vec![100, 100, 50]);
}

#[test]
fn reentry_three_times_and_two_unlocks_keep_count_one_and_a_full_lease() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    for _ in 0..2 {
        let again = rig.request(0, reenter(a.owner, None));
        rig.acquired(0, again);
    }
    rig.advance_to(t(5000));
    for _ in 0..2 {
        let un = release(&mut rig, 0, &a, "orders");
        assert_eq!(
            rig.result(0, un),
            Some(&Ok(Done::Unlocked(UnlockOutcome::StillHeld)))
        );
    }
    assert_eq!(rig.server_count("orders", &a.owner_name), 1);
    assert_eq!(rig.pttl("orders"), 30_000);
    rig.advance_to(t(20_000));
    assert_eq!(rig.renewals_of("orders"), vec![t(10_000), t(20_000)]);
}

#[test]
fn fenced_acquires_return_rising_tokens_and_a_replay_gets_the_same_token() {
    let mut rig = Rig::new(config());
    rig.fate = drop_first_reply_of("acquire_fenced");
    let fenced = |owner| {
        Request::Acquire(AcquireRequest {
            name: "orders".into(),
            owner,
            lease: None,
            wait: Wait::Forever,
            fenced: true,
        })
    };
    let op = rig.request(0, fenced(None));
    rig.advance(300);
    let a = rig.acquired(0, op);
    // Granted at 0 ms: the server's clock in microseconds; the replay returns the same token.
    assert_eq!(a.token, Some(machine_rig::EPOCH_MS as u64 * 1000));
    let op2 = rig.request(0, fenced(Some(a.owner)));
    // The reentry at 300 ms: the clock has passed the counter.
    assert_eq!(
        rig.acquired(0, op2).token,
        Some((machine_rig::EPOCH_MS as u64 + 300) * 1000)
    );
}

#[test]
fn a_woken_waiter_that_stops_waiting_passes_the_wake_to_the_next() {
    let mut rig = Rig::new(config());
    let holder = rig.lock(0, "orders");
    let a = rig.acquired(0, holder);
    let c1 = rig.add_client(config());
    let w1 = rig.lock(c1, "orders");
    let w2 = rig.lock(c1, "orders");
    rig.advance_to(t(1000));
    // The woken waiter's attempt stays in flight; it is cancelled before the answer.
    rig.fate = Box::new(move |s| {
        if s.client == c1 {
            Fate::Hold
        } else {
            Fate::Reply
        }
    });
    release(&mut rig, 0, &a, "orders");
    let woken = rig.in_flight.len();
    assert_eq!(woken, 1);
    rig.input(c1, Input::Cancel { op: w1 });
    assert_eq!(rig.in_flight.len(), 2, "the next waiter tries at once");
    rig.fate = Box::new(|_| Fate::Reply);
    rig.advance(0);
    rig.acquired(c1, w2);
    assert_eq!(rig.result(c1, w1), None);
    // The cancelled attempt was granted and given straight back; nothing is left behind.
    assert_eq!(rig.machine(c1).ops_in_progress(), 0);
}

#[test]
fn a_renewal_that_fails_on_a_broken_connection_is_retried_within_the_pass() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    let mut first = true;
    rig.fate = Box::new(move |s| {
        if s.script() == "renew_batch" && first {
            first = false;
            Fate::Refused
        } else {
            Fate::Reply
        }
    });
    rig.advance_to(t(11_000));
    // Refused at 10 s; sent again a tenth of the response timeout later, and confirmed.
    assert_eq!(rig.renewals_of("orders"), vec![t(10_000), t(10_300)]);
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, t(10_300 + 30_000 - 302));
    // The next pass starts a period after the retried one ended.
    rig.advance_to(t(21_000));
    assert_eq!(
        rig.renewals_of("orders"),
        vec![t(10_000), t(10_300), t(20_300)]
    );
}

#[test]
fn a_lost_subscription_makes_every_hold_may_be_lost_until_a_renewal_confirms_it() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.advance_to(t(2_000));
    rig.input(0, Input::PubSub(lock_core::PubSubEvent::SubscriptionLost));
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, t(2_000), "nothing promised past the loss");
    assert!(rig.events(0).iter().any(|(at, e)| *at == t(2_000)
        && matches!(
            e,
            LockEvent::StateChanged {
                state: HoldState::MayBeLost,
                ..
            }
        )));
    rig.advance_to(t(2_500));
    rig.input(
        0,
        Input::PubSub(lock_core::PubSubEvent::SubscriptionRestored),
    );
    // A pass at once, not a period later; its confirmation makes the hold valid again.
    assert_eq!(rig.renewals_of("orders"), vec![t(2_500)]);
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, t(2_500 + 30_000 - 302));
    assert!(rig.events(0).iter().any(|(at, e)| *at == t(2_500)
        && matches!(
            e,
            LockEvent::StateChanged {
                state: HoldState::Valid,
                ..
            }
        )));
}

#[test]
fn a_restart_that_forgot_the_hold_is_told_to_the_holder_at_once() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    rig.acquired(0, op);
    rig.advance_to(t(2_000));
    let lock = bytes::Bytes::from_static(b"orders");
    lock_core::script::Store::del(&mut rig.store, &lock).unwrap();
    rig.input(0, Input::PubSub(lock_core::PubSubEvent::SubscriptionLost));
    rig.input(
        0,
        Input::PubSub(lock_core::PubSubEvent::SubscriptionRestored),
    );
    assert!(rig.events(0).iter().any(|(at, e)| *at == t(2_000)
        && matches!(
            e,
            LockEvent::StateChanged {
                state: HoldState::Lost,
                ..
            }
        )));
}

#[test]
fn a_late_copy_of_a_reentrant_unlock_leaves_the_owner_holding() {
    let mut rig = Rig::new(config());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    let again = rig.request(0, reenter(a.owner, None));
    rig.acquired(0, again);
    release(&mut rig, 0, &a, "orders");
    let unlock = rig
        .calls_named("release")
        .last()
        .map(|s| (*s).clone())
        .unwrap();
    let owner = rig.machine(0).owner(a.owner);
    assert_eq!(rig.server_count("orders", &owner), 1);
    // The network delivers the unlock again after its latch expired.
    rig.advance_to(t(13_000));
    rig.store
        .set_now(machine_rig::EPOCH_MS + rig.now.as_millis() as i64);
    let _ = machine_rig::execute(&mut rig.store, &unlock.call);
    assert_eq!(rig.server_count("orders", &owner), 1);
    let other = rig.add_client(config());
    let b = rig.acquire(other, "orders", None, Wait::Budget(Millis(0)));
    assert_eq!(rig.result(other, b), Some(&Ok(Done::NotAcquired)));
}

#[test]
fn an_acquire_that_ends_with_its_outcome_unknown_gives_its_grant_back() {
    let mut rig = Rig::new(config());
    rig.fate = Box::new(|s| {
        if s.script() == "acquire" {
            Fate::DropReply
        } else {
            Fate::Reply
        }
    });
    let op = rig.lock(0, "orders");
    rig.advance_to(t(20_000));
    assert!(
        matches!(
            rig.result(0, op),
            Some(Err(LockError::OutcomeUnknown { .. }))
        ),
        "{:?}",
        rig.result(0, op)
    );
    // Every attempt was applied (the first granted, the rest replayed its latch); the release
    // that followed took the grant back instead of leaving it to its 30 s lease.
    assert_eq!(rig.calls_named("release").len(), 1);
    assert_eq!(rig.pttl("orders"), -2);
    assert!(rig.renewals_of("orders").is_empty());
}

/// A fair acquire of "orders" by a new owner of `client`, waiting at most `budget_ms`.
fn fair_try(rig: &mut Rig, client: usize, budget_ms: u64) -> lock_core::machine::OpId {
    rig.request(
        client,
        Request::FairAcquire {
            acquire: AcquireRequest {
                name: "orders".into(),
                owner: None,
                lease: Some(Lease::from_millis(30_000).unwrap()),
                wait: Wait::Budget(Millis(budget_ms)),
                fenced: false,
            },
            wall_ms: 1_800_000_000_000,
        },
    )
}

#[test]
fn a_fair_waiter_whose_join_replies_were_all_lost_still_gives_up_its_place() {
    let mut rig = Rig::new(config());
    let waiter = rig.add_client(config());
    let holder = fair_try(&mut rig, 0, 0);
    rig.settle();
    assert!(matches!(rig.result(0, holder), Some(Ok(_))));
    // The waiter's attempts all run on the server (it joins the queue), but no reply comes back.
    rig.fate = Box::new(|s| {
        if s.script() == "fair_acquire" {
            Fate::DropReply
        } else {
            Fate::Reply
        }
    });
    let op = fair_try(&mut rig, waiter, 5_000);
    rig.advance_to(t(60_000));
    assert!(
        matches!(
            rig.result(waiter, op),
            Some(Err(LockError::OutcomeUnknown { .. }))
        ),
        "{:?}",
        rig.result(waiter, op)
    );
    // It never heard "queued", yet it may have joined: its give-up leaves the queue empty
    // instead of holding everyone behind it up for its thread-wait time.
    assert_eq!(rig.calls_named("fair_give_up").len(), 1);
    let keys = LockConfig::default().key_layout.fair_lock("orders");
    assert_eq!(rig.store.value(&keys.queue), None, "the queue is empty");
    assert_eq!(rig.store.value(&keys.timeouts), None, "no deadline is left");
}

/// A fair waiter that queued behind a holder and whose budget ran out, with every request of
/// its give-up lost `lost` times before one gets through.
fn fair_waiter_gives_up_through(lost: usize) -> Rig {
    let mut rig = Rig::new(config());
    let waiter = rig.add_client(config());
    let holder = fair_try(&mut rig, 0, 0);
    rig.settle();
    assert!(matches!(rig.result(0, holder), Some(Ok(_))));
    let mut left = lost;
    rig.fate = Box::new(move |s| {
        if s.script() == "fair_give_up" && left > 0 {
            left -= 1;
            Fate::DropRequest
        } else {
            Fate::Reply
        }
    });
    let op = fair_try(&mut rig, waiter, 5_000);
    rig.advance_to(t(60_000));
    assert_eq!(rig.result(waiter, op), Some(&Ok(Done::NotAcquired)));
    rig
}

#[test]
fn a_fair_give_up_whose_requests_are_lost_is_sent_again_until_answered() {
    // Three lost, the fourth answered; attempts spaced as a release's are.
    let mut rig = fair_waiter_gives_up_through(3);
    let sent: Vec<MonoTime> = rig
        .calls_named("fair_give_up")
        .iter()
        .map(|s| s.at)
        .collect();
    assert_eq!(sent.len(), 4, "{sent:?}");
    let spacing = Millis(config().response_timeout().as_u64() / 10);
    for pair in sent.windows(2) {
        assert!(pair[1].since(pair[0]) >= spacing, "{sent:?}");
    }
    let keys = config().key_layout.fair_lock("orders");
    assert_eq!(rig.store.value(&keys.queue), None, "the queue is empty");
    assert_eq!(rig.store.value(&keys.timeouts), None, "no deadline is left");
    assert_eq!(rig.machine(1).ops_in_progress(), 0);
}

#[test]
fn a_fair_give_up_stops_when_its_window_closes_and_leaves_the_place_to_the_purge() {
    let mut rig = fair_waiter_gives_up_through(usize::MAX);
    let sent: Vec<MonoTime> = rig
        .calls_named("fair_give_up")
        .iter()
        .map(|s| s.at)
        .collect();
    assert!(sent.len() > 1, "{sent:?}");
    // Every attempt went out within the window a release gets (its latch TTL).
    let (first, last) = (sent[0], sent[sent.len() - 1]);
    assert!(last.since(first) < config().latch_ttl(), "{sent:?}");
    // Nothing more is sent for it, and the machine has nothing left to do for it.
    rig.advance_to(t(120_000));
    assert_eq!(rig.calls_named("fair_give_up").len(), sent.len());
    assert_eq!(rig.machine(1).ops_in_progress(), 0);
    let keys = config().key_layout.fair_lock("orders");
    assert!(
        rig.store.value(&keys.queue).is_some(),
        "the place is still queued"
    );
}

#[test]
fn a_fenced_fair_acquire_is_refused_before_anything_is_sent() {
    let mut rig = Rig::new(config());
    let op = rig.request(
        0,
        Request::FairAcquire {
            acquire: AcquireRequest {
                name: "orders".into(),
                owner: None,
                lease: None,
                wait: Wait::Forever,
                fenced: true,
            },
            wall_ms: 1_800_000_000_000,
        },
    );
    rig.settle();
    assert_eq!(
        rig.result(0, op),
        Some(&Err(LockError::FencedFairLock {
            name: "orders".into()
        }))
    );
    assert!(rig.sent.is_empty(), "nothing was sent");
    assert_eq!(rig.machine(0).ops_in_progress(), 0);
}
