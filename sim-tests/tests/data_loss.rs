//! Restarts and failovers: the documented limit of a lock on a single Redis.
//!
//! A server that loses data (a restart without persistence, a failover to a lagging replica) can
//! forget a grant and give the lock to a second owner. Its fencing counter resets with it. This
//! suite states which checkers that makes report, and asserts exactly those:
//! (a) server-side exclusivity, reported by name as lost data; (b) fencing (the counter restarted);
//! (c) client-side exclusivity (the first owner still believes it holds the lock); the unfenced
//! resource's overlap; and (f) hold counts (the client counts a hold the server forgot). (d) — no
//! renewal after unlock — holds whatever the server does, and so does liveness after the restart:
//! the script cache is reloaded after NOSCRIPT and the lock is granted again.

use proptest::prelude::*;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, Checker, ClientSpec, Fault, explain, run};
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
        Checker::ClientExclusive,
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
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(1_000)))]

    /// Random workloads with restarts and failovers report nothing outside the data-loss set.
    #[test]
    fn data_loss_reports_only_what_data_loss_can_break(
        mut case in cases(Envelope { faults: 0..=2, ..Envelope::safe() }),
        at in 0u64..60_000,
        lag in 0u64..5_000,
        failover in any::<bool>(),
    ) {
        case.faults.push(if failover { Fault::Failover { at, lag } } else { Fault::Restart { at } });
        let run = run(&case);
        let allowed = BTreeSet::from([
            Checker::ServerExclusive,
            Checker::Fencing,
            Checker::ClientExclusive,
            Checker::UnfencedOverlap,
            Checker::HoldCounts,
        ]);
        let bad: Vec<_> = run.violations.iter().filter(|v| !allowed.contains(&v.checker)).collect();
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }
}
