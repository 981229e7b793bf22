//! The replica check (Redisson's `checkLockSyncedSlaves`), stepped by hand on the machine: which
//! calls carry `WAIT`, and what a reply acknowledged by too few replicas does to an acquire, a
//! renewal and an unlock.

use crate::machine_rig;

use lock_core::machine::{AcquireRequest, Call, Done, HoldState, LockEvent, Request, RwSide, Wait};
use lock_core::script::ReplicaWait;
use lock_core::{LockConfig, LockError, Millis, Operation, SyncMode, SyncReplicas, UnlockOutcome};
use machine_rig::{Fate, Rig, t};

/// Every reply acknowledged by `acked` of `connected` replicas.
fn replicas(acked: u32, connected: u32) -> Box<dyn FnMut(&machine_rig::Sent) -> Fate> {
    Box::new(move |_| Fate::ReplyWithReplicas { acked, connected })
}

fn release(rig: &mut Rig, a: &lock_core::machine::Acquired) -> lock_core::machine::OpId {
    rig.request(
        0,
        Request::Release {
            hold: a.hold,
            name: a.name.clone(),
            owner: a.owner,
        },
    )
}

fn not_synced(operation: Operation) -> LockError {
    LockError::ReplicasNotSynced {
        name: "orders".into(),
        operation,
        acked: 0,
        required: 1,
    }
}

#[test]
fn every_write_of_a_hold_carries_a_wait_and_nothing_else_does() {
    let mut rig = Rig::new(LockConfig::default());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.advance_to(t(10_000));
    let un = release(&mut rig, &a);
    assert!(rig.result(0, un).unwrap().is_ok());
    rig.request(
        0,
        Request::ForceUnlock {
            name: "orders".into(),
        },
    );
    rig.request(
        0,
        Request::IsLocked {
            name: "orders".into(),
        },
    );
    rig.settle();
    let wait = Some(ReplicaWait {
        replicas: 1,
        timeout: Millis(1000),
        mode: SyncMode::Ack,
    });
    let sync_of = |name: &str| -> Vec<_> {
        rig.sent
            .iter()
            .filter(|s| s.script() == name)
            .map(|s| match &s.call {
                Call::Script(s) => s.sync,
                Call::Command(_) => None,
            })
            .collect()
    };
    assert_eq!(sync_of("acquire"), vec![wait]);
    assert_eq!(sync_of("renew_batch"), vec![wait]);
    assert_eq!(sync_of("release"), vec![wait]);
    assert_eq!(sync_of("force_unlock"), vec![None]);
    assert!(
        rig.sent.iter().any(|s| s.script() == "command"),
        "the query was sent"
    );

    // Off: no call waits.
    let mut rig = Rig::new(LockConfig {
        sync_replicas: None,
        ..LockConfig::default()
    });
    let op = rig.lock(0, "orders");
    rig.acquired(0, op);
    rig.advance_to(t(10_000));
    assert!(
        rig.sent
            .iter()
            .all(|s| !matches!(&s.call, Call::Script(s) if s.sync.is_some()))
    );
}

#[test]
fn an_acquire_too_few_replicas_acknowledged_is_not_granted_and_its_grant_is_given_back() {
    let mut rig = Rig::new(LockConfig::default());
    rig.fate = replicas(0, 1);
    let op = rig.lock(0, "orders");
    assert_eq!(
        rig.result(0, op),
        Some(&Err(not_synced(Operation::Acquire)))
    );
    assert_eq!(
        rig.result(0, op).unwrap().as_ref().unwrap_err().to_string(),
        "acquire on lock \"orders\" was acknowledged by 0 of the 1 replicas required within the \
         replica check's timeout, so it was not granted (the grant was given back); check the \
         replicas' health and lag, or raise sync_replicas.timeout"
    );
    // The primary's grant was released at once, by a release carrying the grant's count.
    assert_eq!(rig.calls_named("release").len(), 1);
    assert_eq!(rig.pttl("orders"), -2, "the lock is free again");
    // Never counted, never renewed.
    rig.advance_to(t(60_000));
    assert!(rig.calls_named("renew_batch").is_empty());
    assert_eq!(rig.machine(0).ops_in_progress(), 0);

    // Acknowledged: granted as ever.
    rig.fate = replicas(1, 1);
    let op = rig.lock(0, "orders");
    rig.acquired(0, op);
}

#[test]
fn a_reentry_too_few_replicas_acknowledged_gives_back_only_its_own_count() {
    let mut rig = Rig::new(LockConfig::default());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.fate = replicas(0, 1);
    let again = rig.request(
        0,
        Request::Acquire(AcquireRequest {
            name: "orders".into(),
            owner: Some(a.owner),
            lease: None,
            wait: Wait::Forever,
            fenced: false,
        }),
    );
    assert_eq!(
        rig.result(0, again),
        Some(&Err(not_synced(Operation::Acquire)))
    );
    assert_eq!(rig.server_count("orders", &a.owner_name), 1);
    assert_eq!(rig.machine(0).hold("orders", a.owner).unwrap().count, 1);
}

#[test]
fn a_primary_without_replicas_has_nothing_to_wait_for() {
    let mut rig = Rig::new(LockConfig::default());
    rig.fate = replicas(0, 0);
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.advance_to(t(10_000));
    let renewed = rig
        .events(0)
        .iter()
        .any(|(_, e)| matches!(e, LockEvent::Renewed { .. }));
    assert!(renewed);
    let un = release(&mut rig, &a);
    assert_eq!(
        rig.result(0, un),
        Some(&Ok(Done::Unlocked(UnlockOutcome::Released)))
    );
}

#[test]
fn a_renewal_too_few_replicas_acknowledged_confirms_nothing() {
    let mut rig = Rig::new(LockConfig::default());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    assert_eq!(a.valid_until, t(29_698));
    rig.fate = replicas(0, 1);
    // Renewed on the primary at 10 s and 20 s, acknowledged by no replica: valid_until stays.
    rig.advance_to(t(25_000));
    assert_eq!(rig.renewals_of("orders"), vec![t(10_000), t(20_000)]);
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, t(29_698));
    assert!(
        !rig.events(0)
            .iter()
            .any(|(_, e)| matches!(e, LockEvent::Renewed { .. }))
    );
    // It passes: the hold may be lost (the primary still has it; a failover may not).
    rig.advance_to(t(29_699));
    let may_be_lost = rig.events(0).iter().any(|(at, e)| {
        *at == t(29_698)
            && matches!(
                e,
                LockEvent::StateChanged {
                    state: HoldState::MayBeLost,
                    ..
                }
            )
    });
    assert!(may_be_lost, "{:?}", rig.events(0));
    // The next acknowledged renewal (at 30 s) makes it valid again.
    rig.fate = replicas(1, 1);
    rig.advance_to(t(30_000));
    let hold = rig.machine(0).hold("orders", a.owner).unwrap();
    assert_eq!(hold.valid_until, t(59_698));
    assert!(rig.events(0).iter().any(|(_, e)| matches!(
        e,
        LockEvent::StateChanged {
            state: HoldState::Valid,
            ..
        }
    )));
}

#[test]
fn an_unlock_too_few_replicas_acknowledged_has_an_unknown_outcome() {
    let mut rig = Rig::new(LockConfig::default());
    let op = rig.lock(0, "orders");
    let a = rig.acquired(0, op);
    rig.fate = replicas(0, 1);
    let un = release(&mut rig, &a);
    let err = rig.result(0, un).unwrap().clone().unwrap_err();
    assert_eq!(err, not_synced(Operation::Unlock));
    assert!(err.outcome_unknown());
    assert!(
        err.to_string()
            .contains("the primary applied it, but a failover could undo it"),
        "{err}"
    );
    // The primary did release it, and the hold is off the watchdog as after any last unlock.
    assert_eq!(rig.pttl("orders"), -2);
    rig.advance_to(t(60_000));
    assert!(rig.calls_named("renew_batch").is_empty());
}

#[test]
fn the_fair_and_read_write_locks_writes_are_checked_too() {
    let mut rig = Rig::new(LockConfig::default());
    rig.fate = replicas(0, 1);
    let acquire = AcquireRequest {
        name: "orders".into(),
        owner: None,
        lease: None,
        wait: Wait::Forever,
        fenced: false,
    };
    let fair = rig.request(
        0,
        Request::FairAcquire {
            acquire: acquire.clone(),
            wall_ms: machine_rig::EPOCH_MS,
        },
    );
    assert_eq!(
        rig.result(0, fair),
        Some(&Err(not_synced(Operation::Acquire)))
    );
    for side in [RwSide::Read, RwSide::Write] {
        let op = rig.request(
            0,
            Request::ReadWriteAcquire {
                acquire: acquire.clone(),
                side,
            },
        );
        assert_eq!(
            rig.result(0, op),
            Some(&Err(not_synced(Operation::Acquire))),
            "{side:?}"
        );
    }
    let checked = rig
        .sent
        .iter()
        .filter(|s| matches!(&s.call, Call::Script(c) if c.sync.is_some()))
        .map(|s| s.script())
        .collect::<Vec<_>>();
    for name in [
        "fair_acquire",
        "fair_release",
        "rw_read_acquire",
        "rw_read_release",
        "rw_write_acquire",
        "rw_write_release",
    ] {
        assert!(checked.contains(&name), "{name} in {checked:?}");
    }
    // Every grant was given back: nothing is left of the locks.
    assert_eq!(rig.pttl("orders"), -2);
}

#[test]
fn a_higher_minimum_needs_that_many_acknowledgements() {
    let config = LockConfig {
        sync_replicas: Some(SyncReplicas {
            min_replicas: 2,
            timeout: Some(Millis(500)),
            ..SyncReplicas::default()
        }),
        ..LockConfig::default()
    };
    let mut rig = Rig::new(config);
    rig.fate = replicas(1, 2);
    let op = rig.lock(0, "orders");
    assert!(matches!(
        rig.result(0, op),
        Some(Err(LockError::ReplicasNotSynced {
            acked: 1,
            required: 2,
            ..
        }))
    ));
    let sync = rig.calls_named("acquire")[0].call.clone();
    assert!(
        matches!(sync, Call::Script(s) if s.sync == Some(ReplicaWait { replicas: 2, timeout: Millis(500), mode: SyncMode::Ack }))
    );
    rig.fate = replicas(2, 2);
    let op = rig.lock(0, "orders");
    rig.acquired(0, op);
}
