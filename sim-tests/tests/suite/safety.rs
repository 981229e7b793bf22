//! Safety inside the envelope.
//!
//! Invariant: under arbitrary GC pauses, dropped and delayed requests and replies, lost unlock
//! messages and client crashes (with clocks that agree and a server that keeps its data):
//! (a) the server never grants one lock to two owners at once, (b) fencing tokens strictly rise,
//! (c) no two clients believe they hold one lock at the same time, (d) no renewal of a hold is
//! sent after its unlock, and (f) client and server agree on hold counts whenever quiet.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Checker, explain, run};

#[test]
fn safety_holds_under_pauses_drops_delays_and_crashes() {
    let mut runner = TestRunner::new(Config {
        cases: sim_tests::cases(4_000),
        ..Config::default()
    });
    let result = runner.run(&cases(Envelope::safe()), |case| {
        let run = run(&case);
        let bad: Vec<_> = run
            .violations
            .iter()
            .filter(|v| {
                matches!(
                    v.checker,
                    Checker::ServerExclusive
                        | Checker::Fencing
                        | Checker::ClientExclusive
                        | Checker::NoRenewAfterUnlock
                        | Checker::HoldCounts
                )
            })
            .collect();
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
