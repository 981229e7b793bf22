//! A deterministic simulator of lock races: lock machines, a network, the fake's engine and
//! faults on one virtual clock, with checkers for every safety and liveness rule of the lock.
//!
//! A [`Case`] is a plain value (it prints as text and parses back); [`run`] plays it on the fake
//! engine and returns the trace and the [`Violation`]s. The same case always gives the same trace.
//!
//! The modules point one way, each using only those below it:
//!
//! ```text
//! lib (run, run_planted, explain)
//!  ├─> world ──> checkers ──> history ──> server (the SimServer trait, LockState)
//!  │     └──────────────────> history
//!  └─> engine_server, cluster_server ──> on_engine ──> server
//!
//! race (the user's code under lock races) ──> checkers ──> history
//!   └──────────────────────────────────────> timeline
//! ```
//!
//! `case` and `strategy` are plain values and their generators, used by all and using none of
//! these. [`timeline`] is the teaching renderer (text and SVG), which knows nothing of locks.
//!
//! - [`race`] is the public harness for property tests of a user's own async code: the user's
//!   clients run on tokio (paused time) against `fake_redis::FakeRedis` under a seeded fault
//!   schedule, and it reuses checkers (b) and (c) and the renderer. It and [`world`] are two
//!   drivers side by side; neither names the other.
//!
//! - [`history`] is what a run leaves behind ([`History`], [`Run`], [`Mark`], [`Violation`]):
//!   plain records that name neither the world nor the checkers.
//! - [`checkers`] read a history (and a finished [`Run`]) and name the broken rules; they know
//!   nothing of the world that recorded it.
//! - [`world`] plays a case, records its history, and runs the online checkers at the moment
//!   their rule applies ((d), (f), (g)) and the others at the end.
//! - The servers ([`engine_server`], [`cluster_server`]) drive fake-redis for the world through
//!   the [`server::SimServer`] trait and know nothing of the world either.
//!
//! A test in the suite reads the sources and fails when one of these arrows is turned round.

pub mod case;
pub mod checkers;
pub mod cluster_server;
pub mod engine_server;
pub mod history;
mod on_engine;
pub mod race;
pub mod server;
pub mod strategy;
pub mod timeline;
pub mod world;

pub use case::{AcquireKind, Case, ClientSpec, Fault, RwRole};
pub use history::{Checker, Delivery, History, Mark, Message, Run, Violation};
pub use world::World;

use cluster_server::ClusterServer;
use engine_server::EngineServer;
use lock_core::machine::BrokenRule;
use server::SimServer;

/// Plays `case` on fake-redis's engine (a Redis Cluster when the case names shards) and checks
/// the history.
pub fn run(case: &Case) -> Run {
    play(case, None)
}

/// A break planted in a run, for proving that the checkers can fail: a suite that expects a clean
/// run never plants one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planted {
    /// Every client's machine breaks the rule (a hidden switch of the machine, off by default).
    Rule(BrokenRule),
    /// The server's fair lock grants the lock to any waiter that asks while it is free, for
    /// checker (g): [`EngineServer::unfair`].
    Unfair,
    /// The server's read acquire ignores a read-write lock's write mode, for checker (h):
    /// [`EngineServer::careless_reads`].
    CarelessReads,
}

/// Plays `case` with `planted` in it and checks the history. A server's break is planted in the
/// one-node server, which plays the case even if it names shards; a machine's rule is broken on
/// whichever server [`run`] would choose.
pub fn run_planted(case: &Case, planted: Planted) -> Run {
    play(case, Some(planted))
}

/// [`run`] and [`run_planted`]: the server the case and the break ask for, and the world on it.
fn play(case: &Case, planted: Option<Planted>) -> Run {
    let rule = match planted {
        Some(Planted::Rule(rule)) => Some(rule),
        _ => None,
    };
    let on_server = planted.is_some() && rule.is_none();
    if case.shards > 0 && !on_server {
        return with_rule(World::new(case, ClusterServer::for_case(case)), rule).run();
    }
    let server = match planted {
        Some(Planted::Unfair) => EngineServer::for_case(case).unfair(),
        Some(Planted::CarelessReads) => EngineServer::for_case(case).careless_reads(),
        Some(Planted::Rule(_)) | None => EngineServer::for_case(case),
    };
    with_rule(World::new(case, server), rule).run()
}

/// `world`, its clients' machines breaking `rule` if there is one.
fn with_rule<S: SimServer>(world: World<S>, rule: Option<BrokenRule>) -> World<S> {
    match rule {
        Some(rule) => world.break_rule(rule),
        None => world,
    }
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
