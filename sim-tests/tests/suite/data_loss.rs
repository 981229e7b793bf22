//! Restarts and failovers: the documented limit of a lock on a single Redis, and what the client
//! does about it.
//!
//! A server that loses data (a restart without persistence, a failover to a lagging replica) can
//! forget a grant and give the lock to a second owner. Its fencing counter is lost or turned back
//! with it, but the fenced acquire never draws a token below the server's clock in microseconds,
//! so tokens keep rising. The client notices the loss at once: it drops its subscriber
//! connection, and from that moment it promises nothing (`valid_until` drops to the present, the
//! hold is may-be-lost) until a renewal sent afterwards confirms the hold. This suite states which
//! checkers data loss still makes report, and asserts exactly those: (a) server-side exclusivity,
//! reported by name as lost data; the unfenced resource's overlap (the workload writes without
//! asking). (b) fencing holds across the loss: the fenced resource that has seen token N never
//! sees a later holder with a token at or below N. (c) client-side exclusivity holds too, and so
//! do (d), no renewal after unlock, and liveness after the restart: the scripts are loaded again
//! and the lock is granted again. A machine told to ignore the loss is caught by (c), and a
//! counter that restarts at 1 (a server clock set back across the loss, past the bound the fenced
//! acquire documents) is caught by (b).
//!
//! The replica check (`LockConfig::sync_replicas`, `WAIT` after each lock write, on by default)
//! covers one of these fault kinds and not the other. A `Failover` to a replica that lags: a grant,
//! renewal or release the replica had not acknowledged is refused, left unconfirmed or reported
//! unknown before the failover, so the lag cannot hand the lock to a second owner while the first
//! believes it holds it. A `Restart` without persistence, or a failover that loses both copies
//! (the primary and every replica that acknowledged): nothing the client waited for survives, and
//! only fencing keeps the resource safe. These cases run on one node, which has no replica and so
//! no `WAIT` (the check is skipped): they are the unchecked lock's limit. `failover.rs` runs
//! the check on a primary with replicas and a failover that promotes one of them;
//! `lock-core/tests/suite/own_cluster.rs` and `own_sentinel.rs` hold it to real failovers.

use crate::common::{data_loss_may_break, outside};
use lock_core::machine::BrokenRule;
use proptest::prelude::*;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::world::EPOCH_MS;
use sim_tests::{Case, Checker, ClientSpec, Fault, Planted, explain, run, run_planted};
use std::collections::BTreeSet;

/// a locks at 1 s and works 20 s, b asks at 1.2 s and works 5 s, on a 60 s lease, with `fault`
/// (the replica failovers in `failover.rs` start from it too).
pub(crate) fn lost_acquire_case(fault: Fault) -> Case {
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

/// Whether some client is crashed or paused at the moment of one of the case's data losses.
fn blind_at_a_loss(case: &Case) -> bool {
    let losses: Vec<u64> = case
        .faults
        .iter()
        .filter_map(|f| match f {
            Fault::Restart { at } | Fault::Failover { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    case.faults.iter().any(|f| match *f {
        Fault::Crash { at, .. } => losses.iter().any(|&loss| at <= loss),
        Fault::Pause { at, for_ms, .. } => {
            losses.iter().any(|&loss| at <= loss && loss < at + for_ms)
        }
        _ => false,
    })
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
    let expected = BTreeSet::from([Checker::ServerExclusive, Checker::UnfencedOverlap]);
    let all: Vec<_> = run.violations.iter().collect();
    assert_eq!(checkers(&run), expected, "{}", explain(&case, &run, &all));
    let named = run.of(Checker::ServerExclusive);
    assert!(
        named[0].message.contains("failover or restart"),
        "{}",
        named[0].message
    );
    // a stopped promising at the failover, and learned at once that the hold was gone.
    assert!(
        run.marks
            .iter()
            .any(|m| m.actor == "a" && m.what == "may-be-lost" && m.at == 1_500),
        "{}",
        explain(&case, &run, &all)
    );
    assert!(
        run.marks
            .iter()
            .any(|m| m.actor == "a" && m.what == "lost" && m.at <= 1_600),
        "{}",
        explain(&case, &run, &all)
    );
}

#[test]
fn a_machine_that_ignores_the_loss_is_caught_by_client_exclusivity() {
    for fault in [
        Fault::Failover {
            at: 1_500,
            lag: 1_000,
        },
        Fault::Restart { at: 1_500 },
    ] {
        let case = lost_acquire_case(fault.clone());
        let broken = run_planted(&case, Planted::Rule(BrokenRule::IgnoreDataLoss));
        assert!(
            !broken.of(Checker::ClientExclusive).is_empty(),
            "{fault:?}: a holder that keeps its valid_until across the loss must be caught"
        );
        assert!(
            run(&case).of(Checker::ClientExclusive).is_empty(),
            "{fault:?}"
        );
    }
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
    assert!(
        run.of(Checker::ClientExclusive).is_empty(),
        "{}",
        explain(&case, &run, &all)
    );
}

/// The tokens granted on lock 0, in grant order, split at `loss`.
fn tokens_around(run: &sim_tests::Run, loss: u64) -> (Vec<u64>, Vec<u64>) {
    let grants = run.history.tokens.get(&0).cloned().unwrap_or_default();
    let before = grants.iter().filter(|g| g.0 < loss).map(|g| g.2).collect();
    let after = grants.iter().filter(|g| g.0 >= loss).map(|g| g.2).collect();
    (before, after)
}

#[test]
fn fencing_tokens_keep_rising_across_a_restart_and_a_failover() {
    for fault in [
        Fault::Restart { at: 1_500 },
        Fault::Failover {
            at: 1_500,
            lag: 1_000,
        },
    ] {
        let mut case = lost_acquire_case(fault.clone());
        // c's grant at 100 ms, before the replica's lag, so the failover turns the counter back to
        // c's token rather than forgetting it; a's grant at 1 s is the one lost.
        let mut c = ClientSpec::new("c", 0);
        c.start = 100;
        c.work = (200, 200);
        case.clients.push(c);
        let run = run(&case);
        let all: Vec<_> = run.violations.iter().collect();
        let (before, after) = tokens_around(&run, 1_500);
        assert!(
            !before.is_empty() && !after.is_empty(),
            "{fault:?}: {}",
            explain(&case, &run, &all)
        );
        let highest = before.iter().max().copied().unwrap_or_default();
        assert!(
            after.iter().all(|&t| t > highest),
            "{fault:?}: {before:?} then {after:?}"
        );
        assert!(
            run.of(Checker::Fencing).is_empty(),
            "{fault:?}: {}",
            explain(&case, &run, &all)
        );
        // The fenced resource saw both holders' writes, and refused none of the later holder's.
        assert!(run.history.fenced_writes.iter().any(|w| w.2 == "b" && w.4));
    }
}

#[test]
fn a_counter_that_restarts_at_1_is_caught_by_fencing() {
    // The server's clock is set back to before the unix epoch as it restarts: the floor is gone,
    // and the forgotten counter restarts at 1, below a's token.
    let mut case = lost_acquire_case(Fault::Restart { at: 1_500 });
    case.faults.push(Fault::ClockJump {
        at: 1_500,
        by: -(EPOCH_MS + 100_000),
    });
    let run = run(&case);
    let all: Vec<_> = run.violations.iter().collect();
    let (before, after) = tokens_around(&run, 1_500);
    assert_eq!(after.first(), Some(&1), "{}", explain(&case, &run, &all));
    assert!(before.iter().all(|&t| t > 1), "{before:?}");
    let fencing = run.of(Checker::Fencing);
    assert!(
        fencing
            .iter()
            .any(|v| v.message.contains("granted token 1,")),
        "{}",
        explain(&case, &run, &all)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(1_000)))]

    /// Random workloads with restarts and failovers report nothing outside the data-loss set (in
    /// which fencing is not), and client-side exclusivity (`valid_until`) is in it only for a
    /// client that was dead or paused at the loss.
    #[test]
    fn data_loss_reports_only_what_data_loss_can_break(
        mut case in cases(Envelope { faults: 0..=2, ..Envelope::safe() }),
        at in 0u64..60_000,
        lag in 0u64..5_000,
        failover in any::<bool>(),
    ) {
        case.faults.push(if failover { Fault::Failover { at, lag } } else { Fault::Restart { at } });
        let run = run(&case);
        // A client that is dead or paused when the server loses its data cannot learn of it:
        // what it believed until then is what (c) still sees.
        let allowed = data_loss_may_break(blind_at_a_loss(&case));
        let bad = outside(&run, &allowed);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }
}
