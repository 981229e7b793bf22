//! Client clock drift, and server clock jumps.
//!
//! Invariants: client clocks that drift within the configured margin keep (c); a client clock
//! that runs slow beyond the margin, with a contender granted inside the gap, breaks (c) and the
//! checker reports it; a forward jump of the server's clock expires keys early and, with a
//! contender granted inside the gap, (c) reports it too (both outside the envelope).

use proptest::prelude::*;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{AcquireKind, Case, Checker, ClientSpec, Fault, Run, explain, run};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(1_000)))]

    #[test]
    fn drift_within_the_margin_keeps_client_exclusivity(
        case in cases(Envelope { max_drift_ppm: 4_000, ..Envelope::safe() })
    ) {
        // The default margin is 1 % of the lease (10,000 ppm) plus 2 ms.
        let run = run(&case);
        let bad: Vec<_> = run.of(Checker::ClientExclusive);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }
}

fn lease_case(drift_ppm: i64) -> Case {
    let mut case = Case::new(11, 60_000);
    let mut a = ClientSpec::new("a", 0);
    a.acquire = AcquireKind::Lease(10_000);
    a.work = (20_000, 20_000);
    a.drift_ppm = drift_ppm;
    let mut b = ClientSpec::new("b", 0);
    b.start = 500;
    b.work = (1_000, 1_000);
    case.clients = vec![a, b];
    case
}

#[test]
fn a_slow_clock_beyond_the_margin_is_reported_by_client_exclusivity() {
    let case = lease_case(-50_000);
    let run = run_reporting_client_exclusivity(&case);
    assert!(run.of(Checker::ServerExclusive).is_empty());
}

#[test]
fn the_same_clock_within_the_margin_is_safe() {
    let case = lease_case(-5_000);
    let run = run(&case);
    assert!(
        run.of(Checker::ClientExclusive).is_empty(),
        "{}",
        run.timeline()
    );
}

#[test]
fn a_forward_server_clock_jump_expires_the_lock_early_and_is_reported() {
    let mut case = Case::new(5, 60_000);
    let mut a = ClientSpec::new("a", 0);
    a.work = (30_000, 30_000);
    let mut b = ClientSpec::new("b", 0);
    b.start = 500;
    b.work = (1_000, 1_000);
    case.clients = vec![a, b];
    // Just after a's renewal at 10 s, so b's next attempt (11 s) wins before a's next renewal.
    case.faults = vec![Fault::ClockJump {
        at: 10_500,
        by: 40_000,
    }];
    run_reporting_client_exclusivity(&case);
}

/// Runs `case` and asserts that client exclusivity was reported, explaining every violation if
/// it was not: the outcome both of this file's breaking cases expect.
fn run_reporting_client_exclusivity(case: &Case) -> Run {
    let run = run(case);
    let all: Vec<_> = run.violations.iter().collect();
    assert!(
        !run.of(Checker::ClientExclusive).is_empty(),
        "{}",
        explain(case, &run, &all)
    );
    run
}
