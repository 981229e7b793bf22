//! Failover to a lagging replica: a primary with replicas (`replicas=N lag=A..B` on the case
//! line), the lock's replica check on or off (`sync=on|off`), and `fault failover at=T
//! replica=R`, which promotes replica `R` with whatever it had received by `T`.
//!
//! The envelope. With the replica check on, an acquire is confirmed only once a replica has
//! acknowledged it (`WAIT`), so the promoted replica has every grant its owner was told of: no
//! checker reports anything. A grant the promoted replica lacked was never confirmed (its `WAIT`
//! was still blocked, or it came back short and the grant was given back), and it ends at the
//! failover, since nobody relied on it. With the check off, the primary's reply confirms the
//! grant before any replica has it, and a failover within the lag hands the lock to a second
//! owner: server-side exclusivity is allowed to break, and the checkers must say so, by name.
//! Outside the envelope (check off), the suite reports only what data loss can break, as
//! `data_loss.rs` does for the single node's rollback failover.

use crate::common;
use crate::data_loss::lost_acquire_case;

use common::{SAFETY, all, checkers, clean_run, data_loss_may_break, of_rules, outside};
use proptest::prelude::*;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, Checker, Fault, Run, explain, run};
use std::collections::BTreeSet;

/// a locks at 1 s and works 20 s; b asks at 1.2 s; the primary fails over at `at` to its replica,
/// which lags 200 ms.
/// (The clients are `data_loss.rs`'s, the same two of the single node's rollback failover.)
fn lagging_case(sync: bool, at: u64) -> Case {
    let mut case = lost_acquire_case(Fault::Promote {
        at,
        replica: 0,
        shard: 0,
    });
    case.replicas = 1;
    case.replica_lag = (200, 200);
    case.sync = sync;
    case
}

/// The first time `actor` marked `what`.
fn first(run: &Run, actor: &str, what: &str) -> Option<u64> {
    run.marks
        .iter()
        .find(|m| m.actor == actor && m.what == what)
        .map(|m| m.at)
}

#[test]
fn without_the_replica_check_a_failover_within_the_lag_grants_a_second_owner_and_is_caught() {
    let case = lagging_case(false, 1_100);
    let run = run(&case);
    // a was told at once (no WAIT), before the replica had the grant.
    let a_at = first(&run, "a", "acquire").expect("a acquired");
    assert!(a_at < 1_100, "{}", explain(&case, &run, &all(&run)));
    // b took the lock on the promoted replica while a still held it.
    let b_at = first(&run, "b", "acquire").expect("b acquired");
    assert!(b_at < 21_000, "{}", explain(&case, &run, &all(&run)));
    let found = checkers(&run);
    assert!(
        found.contains(&Checker::ServerExclusive),
        "{}",
        explain(&case, &run, &all(&run))
    );
    let named = run.of(Checker::ServerExclusive);
    assert!(
        named[0].message.contains("failover or restart"),
        "{}",
        named[0].message
    );
    // Only what data loss may break: a learned of the failover and promised nothing after it.
    let allowed = BTreeSet::from([Checker::ServerExclusive, Checker::UnfencedOverlap]);
    assert!(
        found.is_subset(&allowed),
        "{}",
        explain(&case, &run, &all(&run))
    );
    assert!(run.trace.iter().any(|l| l.contains("replica 0 promoted")));
}

#[test]
fn with_the_replica_check_the_same_failover_loses_no_confirmed_acquire() {
    let case = lagging_case(true, 1_100);
    let run = clean_run(&case);
    // a's grant waited for the replica; the failover came first, so a was never told, and b
    // was granted on the new primary; a got the lock afterwards, or waits for b.
    assert!(
        run.trace.iter().any(|l| l.contains("WAIT blocks")),
        "{}",
        run.timeline()
    );
    let b_at = first(&run, "b", "acquire").expect("b acquired");
    let a_at = first(&run, "a", "acquire");
    assert!(
        a_at.is_none_or(|a| a > 1_100),
        "a was told of a grant the failover lost: {}",
        run.timeline()
    );
    assert!(b_at > 1_100, "{}", run.timeline());
}

#[test]
fn with_the_replica_check_a_grant_the_replica_acknowledged_survives_the_failover() {
    // The failover comes 500 ms after a's acquire, past the 200 ms lag: the replica has the grant.
    let case = lagging_case(true, 1_500);
    let run = clean_run(&case);
    let a_at = first(&run, "a", "acquire").expect("a acquired");
    assert!((1_200..1_500).contains(&a_at), "{}", run.timeline());
    // a waited for its replica (a round trip plus the lag) and kept the lock across the failover:
    // b is granted only after a's work.
    let b_at = first(&run, "b", "acquire").expect("b acquired");
    assert!(b_at >= 21_000, "{}", run.timeline());
}

#[test]
fn a_release_in_the_failovers_millisecond_is_not_a_lost_grant() {
    // a's last unlock reaches the new primary in the very millisecond of the failover, after it:
    // the replica had a's grant, and the release deletes it, so b's grant right after is no
    // second owner (found by the suite: the grant was once taken as lost with the failover).
    let text = "case seed=18060013032972132352 horizon=90000 watchdog=30000 margin_ppm=10000 \
                latency=1..5 loss=2/3 replicas=1 lag=74..112 sync=on; client a lock=1 \
                acquire=watchdog fenced=false start=722 work=1464..4565 think=883 reentry=1 \
                cycles=0 drift_ppm=0; client b lock=1 acquire=watchdog fenced=false start=1720 \
                work=1044..7847 think=700 reentry=0 cycles=0 drift_ppm=0; fault drop-requests b \
                from=16361 to=19860; fault failover at=52677 replica=0";
    let case: Case = text.parse().unwrap();
    let run = run(&case);
    let bad = of_rules(&run, &SAFETY);
    assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
}

#[test]
fn a_failover_case_replays_exactly_from_its_text() {
    for sync in [false, true] {
        let case = lagging_case(sync, 1_100);
        let again: Case = case.one_line().parse().unwrap();
        assert_eq!(again, case);
        let (one, two) = (run(&case), run(&again));
        assert_eq!(one.trace, two.trace);
        assert_eq!(one.trace_hash, two.trace_hash);
    }
}

#[test]
fn the_old_failover_word_keeps_its_rollback_meaning_beside_replicas() {
    // `failover lag=` rolls the primary back in place, with or without replicas.
    let mut case = lagging_case(false, 1_100);
    case.faults = vec![Fault::Failover {
        at: 1_500,
        lag: 1_000,
    }];
    let run = run(&case);
    assert!(
        checkers(&run).contains(&Checker::ServerExclusive),
        "{}",
        explain(&case, &run, &all(&run))
    );
    assert!(!run.trace.iter().any(|l| l.contains("promoted")));
}

#[test]
fn a_primary_partitioned_from_its_replica_has_its_grants_refused_and_a_cut_client_times_out() {
    let mut case = lagging_case(true, 0);
    case.faults = vec![Fault::Partition {
        node: 0,
        at: 500,
        for_ms: 5_000,
        clients: vec![1],
    }];
    let run = clean_run(&case);
    // a reaches the primary, whose WAIT comes back short while its replica is cut off.
    assert!(
        run.trace
            .iter()
            .any(|l| l.contains("(WAIT: 0 of 1 replicas)"))
    );
    assert!(
        first(&run, "a", "not-acquired").is_some(),
        "{}",
        run.timeline()
    );
    // b is cut off from the primary: its request is lost, and it times out.
    assert!(run.trace.iter().any(|l| l.contains("lost (partitioned)")));
    assert!(first(&run, "b", "timeout").is_some(), "{}", run.timeline());
}

#[test]
fn every_failover_inside_the_lag_is_caught_without_the_check_and_none_breaks_with_it() {
    // a's grant reaches the primary at about 1 s and its replica 200 ms later: every failover in
    // between loses a grant a was told of (without the check), and none does with it.
    let mut detected = 0;
    for at in (1_010..1_200).step_by(10) {
        let off = run(&lagging_case(false, at));
        let on = run(&lagging_case(true, at));
        let case = lagging_case(false, at);
        assert!(
            !off.of(Checker::ServerExclusive).is_empty(),
            "failover at {at}: {}",
            explain(&case, &off, &all(&off))
        );
        detected += 1;
        let case = lagging_case(true, at);
        let bad = of_rules(&on, &SAFETY);
        assert!(
            bad.is_empty(),
            "failover at {at}: {}",
            explain(&case, &on, &bad)
        );
    }
    assert_eq!(detected, 19);
}

/// Random cases on a primary with one replica lagging 0..300 ms, and a failover.
fn replicated(sync: bool) -> impl Strategy<Value = Case> {
    (
        cases(Envelope {
            faults: 0..=2,
            ..Envelope::safe()
        }),
        0u64..60_000,
        0u64..=200,
        0u64..=100,
    )
        .prop_map(move |(mut case, at, fixed, jitter)| {
            case.replicas = 1;
            case.replica_lag = (fixed, fixed + jitter);
            case.sync = sync;
            case.faults.push(Fault::Promote {
                at,
                replica: 0,
                shard: 0,
            });
            case
        })
}

/// Whether some client is crashed or paused at the failover: it cannot learn of it, and what it
/// believed until then is what client-side exclusivity still sees.
fn blind_at_the_failover(case: &Case) -> bool {
    let Some(loss) = case.faults.iter().find_map(|f| match f {
        Fault::Promote { at, .. } => Some(*at),
        _ => None,
    }) else {
        return false;
    };
    case.faults.iter().any(|f| match *f {
        Fault::Crash { at, .. } => at <= loss,
        Fault::Pause { at, for_ms, .. } => at <= loss && loss < at + for_ms,
        _ => false,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(200)))]

    /// Inside the envelope: with the replica check on, a failover breaks none of the safety
    /// rules `safety.rs` holds (the unfenced resource may still see a fixed lease run out during
    /// the work, as there).
    #[test]
    fn with_the_replica_check_a_failover_breaks_no_safety_rule(case in replicated(true)) {
        let run = run(&case);
        let bad = of_rules(&run, &SAFETY);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }

    /// Outside it: with the check off, a failover may break only what data loss can break.
    #[test]
    fn without_the_replica_check_a_failover_breaks_only_what_data_loss_can(
        case in replicated(false),
    ) {
        let run = run(&case);
        let allowed = data_loss_may_break(blind_at_the_failover(&case));
        let bad = outside(&run, &allowed);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }
}
