//! Liveness (e), on cases it applies to: `sim_tests::checkers::liveness` checks every run, and
//! each test states its bound once more by hand.
//!
//! Invariants: a client waiting on a lock whose holder crashed acquires it within the lease plus
//! two round trips plus 1 ms of the crash; with no faults at all, no watchdog hold is ever lost.

use proptest::prelude::*;
use sim_tests::checkers::liveness;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, ClientSpec, Fault, explain, run};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(1_000)))]

    #[test]
    fn a_waiter_gets_a_crashed_holders_lock_within_lease_plus_two_round_trips(
        seed in any::<u64>(),
        crash_at in 1_000u64..=60_000,
        watchdog in prop_oneof![Just(30_000u64), Just(9_000u64), 3_000u64..=60_000],
    ) {
        let mut case = Case::new(seed, crash_at + 2 * watchdog + 10_000);
        case.watchdog = watchdog;
        case.latency = (1, 5);
        let mut a = ClientSpec::new("a", 0);
        a.work = (1_000_000, 1_000_000);
        let mut b = ClientSpec::new("b", 0);
        b.start = 500;
        case.clients = vec![a, b];
        case.faults = vec![Fault::Crash { client: 0, at: crash_at }];
        let run = run(&case);
        let all: Vec<_> = run.violations.iter().collect();
        prop_assert!(all.is_empty(), "{}", explain(&case, &run, &all));
        let late = liveness(&case, &run);
        prop_assert!(late.is_empty(), "{}", explain(&case, &run, &late.iter().collect::<Vec<_>>()));
        let granted = run.first("b", "acquire");
        let bound = crash_at + watchdog + 4 * case.latency.1 + 1;
        prop_assert!(
            granted.is_some_and(|t| t <= bound),
            "b acquired at {granted:?}, later than {bound}\n{}",
            explain(&case, &run, &all)
        );
    }

    #[test]
    fn without_faults_no_watchdog_hold_is_ever_lost(case in cases(Envelope { faults: 0..=0, max_loss: 0, ..Envelope::safe() })) {
        let run = run(&case);
        let lost: Vec<_> = run
            .marks
            .iter()
            .filter(|m| {
                (m.what == "lost" || m.what == "may-be-lost")
                    && case.clients.iter().any(|c| c.name == m.actor
                        && matches!(c.acquire, sim_tests::AcquireKind::Watchdog | sim_tests::AcquireKind::Try { lease: None, .. }))
            })
            .collect();
        let all: Vec<_> = run.violations.iter().collect();
        let checked = liveness(&case, &run);
        prop_assert!(checked.is_empty(), "{}", explain(&case, &run, &checked.iter().collect::<Vec<_>>()));
        prop_assert!(lost.is_empty(), "{lost:?}\n{}", explain(&case, &run, &all));
        prop_assert!(all.iter().all(|v| v.checker == sim_tests::Checker::UnfencedOverlap), "{}", explain(&case, &run, &all));
    }
}
