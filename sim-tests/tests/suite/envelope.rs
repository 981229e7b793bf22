//! Outside the safe envelope: a GC pause longer than the remaining lease, with a contender
//! waiting on the lock.
//!
//! Invariant: whenever the contender is granted the lock inside the holder's pause, the unfenced
//! resource records overlapping critical sections, and the fenced resource rejects every write of
//! the paused holder that comes after the contender's first write.

use proptest::prelude::*;
use sim_tests::{Case, Checker, ClientSpec, Fault, explain, run};

fn pause_case(seed: u64, pause_at: u64, pause_for: u64, b_work: u64) -> Case {
    let mut case = Case::new(seed, pause_at + pause_for + 60_000);
    case.latency = (1, 3);
    let mut a = ClientSpec::new("a", 0);
    a.work = (pause_at + 2_000, pause_at + 2_000);
    let mut b = ClientSpec::new("b", 0);
    b.start = 500;
    b.work = (b_work, b_work);
    case.clients = vec![a, b];
    case.faults = vec![Fault::Pause {
        client: 0,
        at: pause_at,
        for_ms: pause_for,
    }];
    case
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(1_000)))]

    #[test]
    fn a_pause_longer_than_the_lease_is_caught_by_both_resources(
        seed in any::<u64>(),
        pause_at in 1_000u64..=25_000,
        pause_for in 31_000u64..=60_000,
        b_work in 1_000u64..=40_000,
    ) {
        let case = pause_case(seed, pause_at, pause_for, b_work);
        let run = run(&case);
        let pause_end = pause_at + pause_for;
        let b_granted = run.first("b", "acquire");
        let all: Vec<_> = run.violations.iter().collect();
        if let Some(t) = b_granted.filter(|t| (pause_at..pause_end).contains(t)) {
            prop_assert!(
                !run.of(Checker::UnfencedOverlap).is_empty(),
                "b entered at {t} inside a's pause, but no overlap was recorded\n{}",
                explain(&case, &run, &all)
            );
            let first_b = run
                .history
                .fenced_writes
                .iter()
                .find(|w| w.2 == "b" && w.4)
                .map(|w| (w.0, w.3))
                .expect("b wrote with its token");
            for w in &run.history.fenced_writes {
                if w.2 == "a" && w.0 >= first_b.0 {
                    prop_assert!(
                        !w.4 && w.3 < first_b.1,
                        "a's stale write {w:?} after b's first write was accepted\n{}",
                        explain(&case, &run, &all)
                    );
                }
            }
            prop_assert!(
                run.history.fenced_writes.iter().any(|w| w.2 == "a" && !w.4),
                "a writes after its pause, and the fence refuses it\n{}",
                explain(&case, &run, &all)
            );
        }
        // The lock itself stays safe from the server's and the clients' point of view.
        prop_assert!(run.of(Checker::ServerExclusive).is_empty(), "{}", explain(&case, &run, &all));
        prop_assert!(run.of(Checker::ClientExclusive).is_empty(), "{}", explain(&case, &run, &all));
    }
}

#[test]
fn the_classic_36_second_pause_lets_b_in_at_40_seconds() {
    let case = pause_case(7, 19_000, 36_000, 30_000);
    let run = run(&case);
    let b = run.first("b", "acquire").expect("b acquires");
    // a's last renewal landed at ~10 s (the one due at ~20 s falls in the pause), so its key
    // expires 30 s later and b's next attempt takes it.
    assert!(
        (40_000..=41_000).contains(&b),
        "b acquired at {b}\n{}",
        run.timeline()
    );
    assert!(!run.of(Checker::UnfencedOverlap).is_empty());
}
