//! What the simulator's suites share: a run's violations read for the assertions, a run that must
//! come out clean, and the one proptest runner the envelope suites draw their cases with.

use proptest::test_runner::{Config, TestCaseResult, TestRunner};
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, Checker, Run, Violation, explain, run};
use std::collections::BTreeSet;

/// The rules every run inside the safe envelope keeps (`safety.rs`).
pub const SAFETY: [Checker; 5] = [
    Checker::ServerExclusive,
    Checker::Fencing,
    Checker::ClientExclusive,
    Checker::NoRenewAfterUnlock,
    Checker::HoldCounts,
];

/// What a loss of the server's data (a restart without persistence, a failover to a replica
/// that lacked a grant) may break: server-side exclusivity, the unfenced resource and the hold
/// counts; and client-side exclusivity too when a client was `blind` at the loss (dead or paused,
/// it could not learn of it, so what it believed until then is what (c) still sees).
pub fn data_loss_may_break(blind: bool) -> BTreeSet<Checker> {
    let mut allowed = BTreeSet::from([
        Checker::ServerExclusive,
        Checker::UnfencedOverlap,
        Checker::HoldCounts,
    ]);
    if blind {
        allowed.insert(Checker::ClientExclusive);
    }
    allowed
}

/// The violations of `run` by a rule not in `allowed`, in the run's order.
pub fn outside<'a>(run: &'a Run, allowed: &BTreeSet<Checker>) -> Vec<&'a Violation> {
    run.violations
        .iter()
        .filter(|v| !allowed.contains(&v.checker))
        .collect()
}

/// Runs `test` on `sim_tests::cases(default)` cases drawn from `envelope` (so `SIM_CASES` scales
/// it), by proptest's runner with its default configuration, and panics with its report (the
/// shrunk case and `test`'s message) if a case fails.
pub fn each_case(default: u32, envelope: Envelope, test: impl Fn(Case) -> TestCaseResult) {
    let mut runner = TestRunner::new(Config {
        cases: sim_tests::cases(default),
        ..Config::default()
    });
    if let Err(e) = runner.run(&cases(envelope), test) {
        panic!("{e}");
    }
}

/// The violations of `run` that one of `rules` reported, in the run's order.
pub fn of_rules<'a>(run: &'a Run, rules: &[Checker]) -> Vec<&'a Violation> {
    run.violations
        .iter()
        .filter(|v| rules.contains(&v.checker))
        .collect()
}

/// The checkers that reported anything in `run`.
pub fn checkers(run: &Run) -> BTreeSet<Checker> {
    run.violations.iter().map(|v| v.checker).collect()
}

/// Every violation of `run`, for [`explain`].
pub fn all(run: &Run) -> Vec<&Violation> {
    run.violations.iter().collect()
}

/// Runs `case` and asserts that no checker reported anything, explaining what one did.
pub fn clean_run(case: &Case) -> Run {
    let run = run(case);
    assert!(
        run.violations.is_empty(),
        "{}",
        explain(case, &run, &all(&run))
    );
    run
}
