//! What the simulator's suites of replicated and clustered cases share: a run's violations read
//! for the assertions, and a run that must come out clean.

use sim_tests::{Case, Checker, Run, Violation, explain, run};
use std::collections::BTreeSet;

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
