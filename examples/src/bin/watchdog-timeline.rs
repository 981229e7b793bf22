//! Prints (and optionally draws) the timeline of a lock scenario, run on virtual time.
//!
//! `cargo run -p examples --bin watchdog-timeline -- --scenario client-crash --svg crash.svg`
//! `cargo run -p examples --bin watchdog-timeline -- --html docs/index.html` (every scenario)

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{CommandFactory, FromArgMatches, Parser};
use examples::page::{page, report};
use examples::scenarios::{Params, SCENARIOS, find};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run a lock scenario on virtual time and print its timeline.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Args {
    /// The scenario (its list comes from the scenario table; `--help` gives each one's lesson).
    #[arg(long, default_value = "watchdog")]
    scenario: String,
    /// Also draw the timeline as an SVG picture at this path.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Also write one self-contained web page of every scenario, run with these parameters.
    #[arg(long)]
    html: Option<PathBuf>,
    /// The watchdog timeout (the lease of a watchdog hold), ms.
    #[arg(long, default_value_t = 30_000)]
    watchdog_timeout: u64,
    /// The explicit lease of the scenarios that use one, ms.
    #[arg(long, default_value_t = 5_000)]
    lease: u64,
    /// How long the first client works while holding the lock, ms.
    #[arg(long)]
    work: Option<u64>,
    /// When the GC pause starts, ms.
    #[arg(long, default_value_t = 19_000)]
    pause_at: u64,
    /// How long the GC pause lasts, ms.
    #[arg(long, default_value_t = 36_000)]
    pause_for: u64,
    /// When the holder crashes, ms.
    #[arg(long, default_value_t = 25_000)]
    crash_at: u64,
    /// How many clients contend for the lock.
    #[arg(long)]
    clients: Option<usize>,
    /// The simulation's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also print the full simulation trace (every call and reply).
    #[arg(long)]
    trace: bool,
}

/// The command line, with the scenarios' names and lessons read from the scenario table, so the
/// help cannot fall behind it.
fn command() -> clap::Command {
    let scenarios = SCENARIOS.iter().map(|s| {
        let first = s.lesson.split(". ").next().unwrap_or(s.lesson);
        PossibleValue::new(s.name).help(first.trim_end_matches('.').to_string())
    });
    Args::command().mut_arg("scenario", |arg| {
        arg.value_parser(PossibleValuesParser::new(scenarios))
    })
}

fn main() -> ExitCode {
    let args = match Args::from_arg_matches(&command().get_matches()) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    let Some(scenario) = find(&args.scenario) else {
        let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
        eprintln!(
            "unknown scenario {:?}; choose one of: {}",
            args.scenario,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    if args.watchdog_timeout < 3 {
        eprintln!("--watchdog-timeout must be at least 3 ms (the watchdog renews every third)");
        return ExitCode::from(2);
    }
    if args.lease == 0 {
        eprintln!("--lease must be at least 1 ms");
        return ExitCode::from(2);
    }
    let params = Params {
        watchdog_timeout: args.watchdog_timeout,
        lease: args.lease,
        work: args.work,
        pause_at: args.pause_at,
        pause_for: args.pause_for,
        crash_at: args.crash_at,
        clients: args.clients,
        seed: args.seed,
    };
    let (case, run, timeline) = scenario.run(&params);
    print!(
        "{}",
        report(scenario, &params, (&case, &run, &timeline), args.trace)
    );
    if let Some(path) = args.svg {
        if let Err(e) = std::fs::write(&path, timeline.to_svg()) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("SVG written to {}", path.display());
    }
    if let Some(path) = args.html {
        if let Err(e) = std::fs::write(&path, page(&params)) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("HTML written to {}", path.display());
    }
    ExitCode::SUCCESS
}
