//! The fair lock inside the envelope.
//!
//! Invariant: with clients of fair locks among the plain ones (all clients of one name alike), and
//! under the same pauses, dropped and delayed requests and replies, lost unlock messages and
//! crashes as the safety suite: every safety checker holds for the fair clients too ((a), (c),
//! (d), (f); a fair lock draws no fencing token), and (g) a fair lock is granted in arrival order
//! among its live waiters.

use crate::common::{SAFETY, each_case, of_rules};
use proptest::prelude::*;
use sim_tests::strategy::Envelope;
use sim_tests::{Case, Checker, ClientSpec, explain, run};

#[test]
fn fair_locks_are_safe_and_served_in_arrival_order_under_faults() {
    let rules = [&SAFETY[..], &[Checker::FairOrder]].concat();
    each_case(1_000, Envelope::safe_fair(), |case| {
        let run = run(&case);
        let bad = of_rules(&run, &rules);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
        Ok(())
    });
}

/// Three clients queue on a fair lock held by a fourth, in the order a, b, c, 1 ms apart.
fn three_waiters() -> Case {
    let mut case = Case::new(3, 60_000);
    case.fair = vec![0];
    let mut holder = ClientSpec::new("h", 0);
    holder.work = (5_000, 5_000);
    case.clients.push(holder);
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let mut waiter = ClientSpec::new(name, 0);
        waiter.start = 1_000 + i as u64;
        waiter.work = (1_000, 1_000);
        case.clients.push(waiter);
    }
    case
}

#[test]
fn three_fair_waiters_are_granted_in_the_order_they_queued() {
    let case = three_waiters();
    let run = run(&case);
    let all: Vec<_> = run.violations.iter().collect();
    assert!(all.is_empty(), "{}", explain(&case, &run, &all));
    let granted: Vec<u64> = ["h", "a", "b", "c"]
        .iter()
        .map(|n| run.first(n, "acquire").expect("every client acquires"))
        .collect();
    assert!(granted.windows(2).all(|w| w[0] < w[1]), "{granted:?}");
    // Each is woken by the release before it, not by a poll: within a few round trips.
    assert!(granted[1] - 5_000 < 50, "{granted:?}\n{}", run.timeline());
    // A fair lock draws no token, whatever the client's spec says.
    assert!(run.history.tokens.is_empty());
}
