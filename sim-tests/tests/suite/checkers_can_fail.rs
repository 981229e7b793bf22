//! The checkers can fail: a machine told to break one rule is caught, and shrunk to a short case.
//!
//! The switch is a hidden method of the machine (`break_rule`), off by default, not a cargo feature
//! (which would leak into every crate's build). The fair lock's order is the server's to keep, so
//! its planted break is the simulator's server's (`EngineServer::unfair`, planted by
//! `run_planted(case, Planted::Unfair)`), as is the read-write lock's exclusion
//! (`EngineServer::careless_reads`, `Planted::CarelessReads`: a read acquire that ignores the
//! write mode).

use lock_core::machine::BrokenRule;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, Checker, Planted, RwRole, run_planted};

/// The first case drawn from `envelope` that is `caught`, shrunk by proptest to the smallest that
/// still is: 500 cases from a fixed seed, so the shrunk case is the same on every run. Panics,
/// saying `never`, if no case is caught.
fn shrunk(envelope: Envelope, never: &str, caught: impl Fn(&Case) -> bool) -> Case {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 500,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let result = runner.run(&cases(envelope), |case| {
        if caught(&case) {
            Err(TestCaseError::fail(never.to_owned()))
        } else {
            Ok(())
        }
    });
    let Err(TestError::Fail(_, minimal)) = result else {
        panic!("{never}: {result:?}");
    };
    minimal
}

#[test]
fn renewing_after_unlock_is_caught_by_checker_d_and_shrunk() {
    let minimal = shrunk(
        Envelope::safe(),
        "checker (d) never noticed a machine that renews after unlock",
        |case| {
            let run = run_planted(case, Planted::Rule(BrokenRule::RenewAfterUnlock));
            !run.of(Checker::NoRenewAfterUnlock).is_empty()
        },
    );
    let run = run_planted(&minimal, Planted::Rule(BrokenRule::RenewAfterUnlock));
    let caught = run.of(Checker::NoRenewAfterUnlock);
    println!("shrunk to:\n{minimal}\n{}", caught[0]);
    // Shrunk to a short timeline: no faults, the least work, everyone starting at once.
    assert!(minimal.clients.len() <= 3, "not shrunk: {minimal}");
    assert!(minimal.faults.is_empty(), "not shrunk: {minimal}");
    assert!(
        minimal
            .clients
            .iter()
            .all(|c| c.start == 0 && c.work.1 <= 200),
        "not shrunk: {minimal}"
    );
    assert!(caught[0].at <= 10_000, "caught at the first watchdog pass");
    // The same case with the rule kept is clean.
    assert!(
        sim_tests::run(&minimal)
            .of(Checker::NoRenewAfterUnlock)
            .is_empty()
    );
}

#[test]
fn a_fair_lock_granted_out_of_turn_is_caught_by_checker_g_and_shrunk() {
    let minimal = shrunk(
        Envelope::safe_fair(),
        "checker (g) never noticed a fair lock that grants any waiter",
        |case| {
            !run_planted(case, Planted::Unfair)
                .of(Checker::FairOrder)
                .is_empty()
        },
    );
    let run = run_planted(&minimal, Planted::Unfair);
    let caught = run.of(Checker::FairOrder);
    println!("shrunk to:\n{minimal}\n{}", caught[0]);
    assert!(!minimal.fair.is_empty(), "not shrunk: {minimal}");
    // It takes a waiter ahead and one that jumps it: three clients at most with the holder.
    assert!(minimal.clients.len() <= 3, "not shrunk: {minimal}");
    // The same case on a fair server is clean.
    assert!(sim_tests::run(&minimal).of(Checker::FairOrder).is_empty());
}

#[test]
fn a_read_granted_beside_a_writer_is_caught_by_checker_h_and_shrunk() {
    let caught = |run: &sim_tests::Run| {
        !run.of(Checker::ReadWriteServer).is_empty() && !run.of(Checker::ReadWriteClient).is_empty()
    };
    let minimal = shrunk(
        Envelope::safe_read_write(),
        "checker (h) never noticed a read granted while another owner writes",
        |case| caught(&run_planted(case, Planted::CarelessReads)),
    );
    let run = run_planted(&minimal, Planted::CarelessReads);
    assert!(caught(&run), "{minimal}");
    println!(
        "shrunk to:\n{minimal}\n{}\n{}",
        run.of(Checker::ReadWriteServer)[0],
        run.of(Checker::ReadWriteClient)[0]
    );
    assert!(!minimal.rw.is_empty(), "not shrunk: {minimal}");
    // It takes a writer and a reader, on one lock, and nothing else.
    assert!(minimal.clients.len() <= 2, "not shrunk: {minimal}");
    assert!(minimal.faults.is_empty(), "not shrunk: {minimal}");
    let roles: Vec<RwRole> = minimal.clients.iter().map(|c| c.role).collect();
    assert!(roles.contains(&RwRole::Read), "not shrunk: {minimal}");
    // The same case on an honest server is clean.
    let honest = sim_tests::run(&minimal);
    assert!(honest.of(Checker::ReadWriteServer).is_empty());
    assert!(honest.of(Checker::ReadWriteClient).is_empty());
}
