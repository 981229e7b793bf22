//! Restarts and failovers: the documented limit of a lock on a single Redis, and what the client
//! does about it.
//!
//! A server that loses data (a restart without persistence, a failover to a lagging replica) can
//! forget a grant and give the lock to a second owner. Its fencing counter resets with it. The
//! client notices at once: the loss drops its subscriber connection, and from that moment it
//! promises nothing (`valid_until` drops to the present, the hold is may-be-lost) until a renewal
//! sent afterwards confirms the hold. This suite states which checkers data loss still makes
//! report, and asserts exactly those: (a) server-side exclusivity, reported by name as lost data;
//! (b) fencing (the counter restarted); the unfenced resource's overlap (the workload writes
//! without asking). (c) client-side exclusivity holds across the loss, and so do (d), no renewal
//! after unlock, and liveness after the restart: the scripts are loaded again and the lock is
//! granted again. A machine told to ignore the loss is caught by (c).

use lock_core::machine::BrokenRule;
use proptest::prelude::*;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, Checker, ClientSpec, Fault, explain, run, run_broken};
use std::collections::BTreeSet;

fn lost_acquire_case(fault: Fault) -> Case {
    let mut case = Case::new(3, 60_000);
    let mut a = ClientSpec::new("a", 0);
    a.start = 1_000;
    a.work = (20_000, 20_000);
    let mut b = ClientSpec::new("b", 0);
    b.start = 1_200;
    b.work = (5_000, 5_000);
    case.clients = vec![a, b];
    case.faults = vec![fault];
    case
}

/// Whether some client is crashed or paused at the moment of one of the case's data losses.
fn blind_at_a_loss(case: &Case) -> bool {
    let losses: Vec<u64> = case
        .faults
        .iter()
        .filter_map(|f| match f {
            Fault::Restart { at } | Fault::Failover { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    case.faults.iter().any(|f| match *f {
        Fault::Crash { at, .. } => losses.iter().any(|&loss| at <= loss),
        Fault::Pause { at, for_ms, .. } => {
            losses.iter().any(|&loss| at <= loss && loss < at + for_ms)
        }
        _ => false,
    })
}

fn checkers(run: &sim_tests::Run) -> BTreeSet<Checker> {
    run.violations.iter().map(|v| v.checker).collect()
}

#[test]
fn a_failover_that_loses_an_acquire_grants_a_second_owner_and_is_reported_by_name() {
    let case = lost_acquire_case(Fault::Failover {
        at: 1_500,
        lag: 1_000,
    });
    let run = run(&case);
    let expected = BTreeSet::from([
        Checker::ServerExclusive,
        Checker::Fencing,
        Checker::UnfencedOverlap,
    ]);
    let all: Vec<_> = run.violations.iter().collect();
    assert_eq!(checkers(&run), expected, "{}", explain(&case, &run, &all));
    let named = run.of(Checker::ServerExclusive);
    assert!(
        named[0].message.contains("failover or restart"),
        "{}",
        named[0].message
    );
    // a stopped promising at the failover, and learned at once that the hold was gone.
    assert!(
        run.marks
            .iter()
            .any(|m| m.actor == "a" && m.what == "may-be-lost" && m.at == 1_500),
        "{}",
        explain(&case, &run, &all)
    );
    assert!(
        run.marks
            .iter()
            .any(|m| m.actor == "a" && m.what == "lost" && m.at <= 1_600),
        "{}",
        explain(&case, &run, &all)
    );
}

#[test]
fn a_machine_that_ignores_the_loss_is_caught_by_client_exclusivity() {
    for fault in [
        Fault::Failover {
            at: 1_500,
            lag: 1_000,
        },
        Fault::Restart { at: 1_500 },
    ] {
        let case = lost_acquire_case(fault.clone());
        let broken = run_broken(&case, BrokenRule::IgnoreDataLoss);
        assert!(
            !broken.of(Checker::ClientExclusive).is_empty(),
            "{fault:?}: a holder that keeps its valid_until across the loss must be caught"
        );
        assert!(
            run(&case).of(Checker::ClientExclusive).is_empty(),
            "{fault:?}"
        );
    }
}

#[test]
fn a_restart_without_persistence_does_the_same_and_scripts_are_reloaded() {
    let case = lost_acquire_case(Fault::Restart { at: 1_500 });
    let run = run(&case);
    let all: Vec<_> = run.violations.iter().collect();
    assert!(run.trace.iter().any(|l| l.contains("restart")));
    // b's acquire after the restart ran through NOSCRIPT and a reload, and was granted.
    assert!(
        run.marks
            .iter()
            .any(|m| m.actor == "b" && m.what == "acquire" && m.at > 1_500),
        "{}",
        explain(&case, &run, &all)
    );
    assert!(checkers(&run).contains(&Checker::ServerExclusive));
    assert!(run.of(Checker::NoRenewAfterUnlock).is_empty());
    assert!(
        run.of(Checker::ClientExclusive).is_empty(),
        "{}",
        explain(&case, &run, &all)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(1_000)))]

    /// Random workloads with restarts and failovers report nothing outside the data-loss set, and
    /// client-side exclusivity (`valid_until`) is in it only for a client that was dead or paused
    /// at the loss.
    #[test]
    fn data_loss_reports_only_what_data_loss_can_break(
        mut case in cases(Envelope { faults: 0..=2, ..Envelope::safe() }),
        at in 0u64..60_000,
        lag in 0u64..5_000,
        failover in any::<bool>(),
    ) {
        case.faults.push(if failover { Fault::Failover { at, lag } } else { Fault::Restart { at } });
        let run = run(&case);
        let mut allowed = BTreeSet::from([
            Checker::ServerExclusive,
            Checker::Fencing,
            Checker::UnfencedOverlap,
            Checker::HoldCounts,
        ]);
        // A client that is dead or paused when the server loses its data cannot learn of it:
        // what it believed until then is what (c) still sees.
        if blind_at_a_loss(&case) {
            allowed.insert(Checker::ClientExclusive);
        }
        let bad: Vec<_> = run.violations.iter().filter(|v| !allowed.contains(&v.checker)).collect();
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }
}
