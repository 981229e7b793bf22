//! A deterministic simulator of lock races: lock machines, a network, the fake's engine and
//! faults on one virtual clock, with checkers for every safety and liveness rule of the lock.
//!
//! A [`Case`] is a plain value (it prints as text and parses back); [`run`] plays it on the fake
//! engine and returns the trace and the [`Violation`]s. The same case always gives the same trace.

pub mod case;
pub mod checkers;
pub mod cluster_server;
pub mod engine_server;
pub mod history;
mod on_engine;
pub mod server;
pub mod strategy;
pub mod world;

pub use case::{AcquireKind, Case, ClientSpec, Fault, RwRole};
pub use checkers::{Checker, Violation};
pub use history::History;
pub use world::{Delivery, Mark, Message, Run, World};

use cluster_server::ClusterServer;
use engine_server::EngineServer;

/// Plays `case` on fake-redis's engine (a Redis Cluster when the case names shards) and checks
/// the history.
pub fn run(case: &Case) -> Run {
    if case.shards > 0 {
        return World::new(case, ClusterServer::for_case(case)).run();
    }
    World::new(case, EngineServer::for_case(case)).run()
}

/// Plays `case` with every client's machine breaking `rule` (a hidden switch, off by default,
/// for proving that the checkers can fail).
pub fn run_broken(case: &Case, rule: lock_core::machine::BrokenRule) -> Run {
    if case.shards > 0 {
        return World::new(case, ClusterServer::for_case(case))
            .break_rule(rule)
            .run();
    }
    World::new(case, EngineServer::for_case(case))
        .break_rule(rule)
        .run()
}

/// Plays `case` on a server whose fair lock grants the lock to any waiter that asks while it is
/// free (a planted break, for proving that checker (g) notices).
pub fn run_unfair(case: &Case) -> Run {
    World::new(case, EngineServer::for_case(case).unfair()).run()
}

/// Plays `case` on a server whose read acquire ignores a read-write lock's write mode (a planted
/// break, for proving that checker (h) notices).
pub fn run_careless_reads(case: &Case) -> Run {
    World::new(case, EngineServer::for_case(case).careless_reads()).run()
}

/// The report of a failing case: its seed, its text, its violations, its timeline, and the one
/// command that replays it exactly.
pub fn explain(case: &Case, run: &Run, violations: &[&Violation]) -> String {
    let mut out = format!("seed {}\n\ncase:\n{case}\nviolations:\n", case.seed);
    for v in violations {
        out.push_str(&format!("  {v}\n"));
    }
    out.push_str("\ntimeline:\n");
    out.push_str(&run.timeline());
    out.push_str(&format!(
        "\n\nreplay: SIM_CASE='{}' cargo test -p sim-tests --test replay -- --nocapture\n",
        case.one_line()
    ));
    out
}

/// How many cases a suite runs: its default, times `SIM_CASES / 1000` when that is set (so
/// `SIM_CASES=10000` runs ten times the default).
pub fn cases(default: u32) -> u32 {
    match std::env::var("SIM_CASES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(n) => ((u64::from(default) * n) / 1000).max(1) as u32,
        None => default,
    }
}
