//! Replays one case exactly: `SIM_CASE='case seed=… ; client a …' cargo test -p sim-tests --test
//! replay -- --nocapture` prints its timeline and violations. Without `SIM_CASE` it replays the
//! classic scenarios below, so the command is always exercised.

use sim_tests::{Case, explain, run};

const CLASSICS: &[&str] = &[
    // Seed document 000: the holder crashes at 25 s; its key expires at 50 s; b gets it then.
    "case seed=0 horizon=80000 latency=1..1; client a lock=0 work=60000..60000; \
     client b lock=0 start=1000 work=1000..1000; fault crash a at=25000",
    // A GC pause longer than the lease, with a contender: outside the envelope.
    "case seed=0 horizon=120000 latency=1..1; client a lock=0 work=40000..40000; \
     client b lock=0 start=1000 work=30000..30000; fault pause a at=19000 for=36000",
];

fn replay_one(text: &str) -> sim_tests::Run {
    let case: Case = text
        .parse()
        .unwrap_or_else(|e| panic!("SIM_CASE does not parse: {e}"));
    let again: Case = case.one_line().parse().unwrap();
    assert_eq!(case, again, "a case's text parses back to the same case");
    let run = run(&case);
    let violations: Vec<_> = run.violations.iter().collect();
    println!("{}", explain(&case, &run, &violations));
    assert_eq!(
        run.trace_hash,
        sim_tests::run(&case).trace_hash,
        "replay is exact"
    );
    run
}

#[test]
fn replay() {
    match std::env::var("SIM_CASE") {
        Ok(text) => {
            replay_one(&text);
        }
        Err(_) => {
            let crash = replay_one(CLASSICS[0]);
            assert!(crash.violations.is_empty(), "{:#?}", crash.violations);
            let pause = replay_one(CLASSICS[1]);
            assert!(
                pause
                    .violations
                    .iter()
                    .any(|v| v.checker == sim_tests::Checker::UnfencedOverlap),
                "the pause outside the envelope lets two clients into the critical section"
            );
        }
    }
}
