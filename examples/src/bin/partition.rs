//! The partition harness: the lock on real Redis processes in network namespaces, under a seeded
//! nemesis, with a checker over the recorded history. Run as root, through
//! `scripts/partition-test`, which installs what is missing and builds this binary.
//!
//! `partition test --seed 7 --topology sentinel --runs 3` runs and checks; the other subcommands
//! are the roles the orchestrator starts inside the namespaces, and `cleanup` removes what a run
//! of a given prefix left.

use clap::{Parser, Subcommand};
use examples::partition::client::{self, Mode, Plan};
use examples::partition::history::Recorder;
use examples::partition::nemesis::FaultKind;
use examples::partition::report::{Table, markdown};
use examples::partition::run::{Outcome, Settings, run};
use examples::partition::servers::Topology;
use examples::partition::{draw, net, proxy, resource};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The lock under partitions, pauses, kills and slow links.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand, Debug)]
enum Role {
    /// Run and check: the orchestrator.
    Test(TestArgs),
    /// A server's front-door proxy (started by the orchestrator).
    Proxy {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        upstream: SocketAddr,
        #[arg(long)]
        control: PathBuf,
        #[arg(long)]
        seed: u64,
    },
    /// The fencing resource (started by the orchestrator).
    Resource {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        history: PathBuf,
        #[arg(long)]
        epoch_ms: u64,
    },
    /// A workload client (started by the orchestrator).
    Client(ClientArgs),
    /// Removes every namespace, process and link of the run with this prefix.
    Cleanup {
        #[arg(long)]
        prefix: String,
    },
}

#[derive(clap::Args, Debug)]
struct TestArgs {
    /// The first run's seed (run i uses seed + i); drawn from the clock if not given.
    #[arg(long)]
    seed: Option<u64>,
    /// The topologies, each run `--runs` times.
    #[arg(long, value_delimiter = ',', default_value = "sentinel")]
    topology: Vec<Topology>,
    /// The modes, run side by side in every run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "unfenced,fenced,fenced-sync,scoped"
    )]
    mode: Vec<Mode>,
    /// Clients per mode (1 to 9: each has an address and a namespace of its own).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=9))]
    clients: u8,
    /// Seconds of workload per run (3 to 3600).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(3..=3600))]
    duration: u64,
    /// Runs per topology.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// The fault kinds to draw from (all if not given).
    #[arg(long, value_delimiter = ',')]
    faults: Vec<FaultKind>,
    /// Where each run's files go.
    #[arg(long, default_value = "partition-runs")]
    out: PathBuf,
    /// The prefix of the runs' namespaces and links (at most 6 characters; by default `pt` and
    /// four hex digits of the process id).
    #[arg(long)]
    prefix: Option<String>,
    /// Also write the first violation's SVG of each topology here.
    #[arg(long)]
    svg: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct ClientArgs {
    #[arg(long)]
    name: String,
    #[arg(long)]
    mode: Mode,
    #[arg(long)]
    topology: Topology,
    #[arg(long, value_delimiter = ',')]
    urls: Vec<String>,
    #[arg(long)]
    resource: String,
    #[arg(long)]
    epoch_ms: u64,
    #[arg(long)]
    stop_ms: u64,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    history: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(single) = single else {
        eprintln!("cannot start a tokio runtime");
        return ExitCode::FAILURE;
    };
    match cli.role {
        Role::Test(args) => orchestrate(args),
        Role::Proxy {
            listen,
            upstream,
            control,
            seed,
        } => report_io(single.block_on(proxy::serve(listen, upstream, control, seed))),
        Role::Resource {
            listen,
            history,
            epoch_ms,
        } => match Recorder::open(&history, "resource", epoch_ms) {
            Ok(recorder) => report_io(single.block_on(resource::serve(listen, recorder))),
            Err(e) => report_io(Err(e)),
        },
        Role::Client(args) => run_client(&single, args),
        Role::Cleanup { prefix } => report_io(net::teardown(&prefix)),
    }
}

fn report_io(result: std::io::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run_client(rt: &tokio::runtime::Runtime, args: ClientArgs) -> ExitCode {
    let recorder = match Recorder::open(&args.history, &args.name, args.epoch_ms) {
        Ok(r) => r,
        Err(e) => return report_io(Err(e)),
    };
    let plan = Plan {
        name: args.name,
        mode: args.mode,
        topology: args.topology,
        urls: args.urls,
        resource: args.resource,
        epoch_ms: args.epoch_ms,
        stop_ms: args.stop_ms,
        seed: args.seed,
    };
    rt.block_on(client::run(plan, recorder));
    ExitCode::SUCCESS
}

fn orchestrate(args: TestArgs) -> ExitCode {
    let base = args
        .prefix
        .clone()
        .unwrap_or_else(|| format!("pt{:04x}", std::process::id() & 0xffff));
    if base.len() > 6 || !base.chars().all(|c| c.is_ascii_alphanumeric()) {
        eprintln!("--prefix must be at most 6 letters or digits");
        return ExitCode::from(2);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    let Ok(rt) = rt else {
        eprintln!("cannot start a tokio runtime");
        return ExitCode::FAILURE;
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("partition"));
    let work = rt.spawn(all_runs(args, base.clone(), exe));
    rt.block_on(async move {
        tokio::select! {
            done = work => done.unwrap_or(ExitCode::FAILURE),
            _ = interrupted() => {
                eprintln!("interrupted: tearing down every namespace, process and link of {base}");
                net::stop_making();
                // Twice: a start-up step in flight when the first pass listed may finish after it.
                let _ = net::teardown(&base);
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                report_io(net::teardown(&base));
                ExitCode::from(130)
            }
        }
    })
}

/// Resolves on SIGINT or SIGTERM.
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

async fn all_runs(args: TestArgs, base: String, exe: PathBuf) -> ExitCode {
    let seed = args
        .seed
        .unwrap_or_else(|| examples::partition::history::unix_ms() % 1_000_000);
    let mut table = Table::new();
    let mut failed = false;
    // Each mode once: a mode's clients have the addresses and namespaces of its place.
    let mut modes = args.mode.clone();
    modes.sort();
    modes.dedup();
    for (t, topology) in args.topology.iter().enumerate() {
        let mut drawn = false;
        for i in 0..args.runs {
            let run_seed = seed.wrapping_add(i);
            let settings = Settings {
                seed: run_seed,
                topology: *topology,
                modes: modes.clone(),
                clients: usize::from(args.clients),
                duration_ms: args.duration * 1000,
                faults: args.faults.clone(),
                prefix: format!(
                    "{base}{:03}",
                    (t as u64).wrapping_mul(args.runs).wrapping_add(i) % 1000
                ),
                dir: args.out.join(format!("{}-{run_seed}", topology.name())),
                exe: exe.clone(),
            };
            announce(&settings, &args);
            match run(&settings).await {
                Ok(outcome) => {
                    failed |= summarise(&settings, &outcome, &mut table);
                    if !drawn && let Some(svg) = &args.svg {
                        drawn = draw_first_violation(&settings, &outcome, svg);
                    }
                }
                Err(e) => {
                    eprintln!("run with seed {} failed: {e}", settings.seed);
                    failed = true;
                }
            }
        }
    }
    println!("\n{}", markdown(&table));
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn announce(s: &Settings, args: &TestArgs) {
    let steps = examples::partition::nemesis::schedule(s.seed, s.duration_ms, &s.faults, s.clients);
    println!(
        "\n== seed {} on {} (prefix {})",
        s.seed,
        s.topology.name(),
        s.prefix
    );
    println!("schedule:");
    for step in &steps {
        println!("  {step}");
    }
    let modes: Vec<&str> = s.modes.iter().map(|m| m.name()).collect();
    let faults: Vec<&str> = args.faults.iter().map(|f| f.name()).collect();
    let faults = if faults.is_empty() {
        String::new()
    } else {
        format!(" --faults {}", faults.join(","))
    };
    println!(
        "rerun: sudo scripts/partition-test --seed {} --topology {} --mode {} --clients {} --duration {}{faults}",
        s.seed,
        s.topology.name(),
        modes.join(","),
        s.clients,
        s.duration_ms / 1000
    );
}

/// Prints a run's findings and adds them to the table; whether a fenced mode accepted a stale
/// token (the one finding that fails a run).
fn summarise(s: &Settings, outcome: &Outcome, table: &mut Table) -> bool {
    let mut stale = false;
    for (mode, f) in &outcome.findings {
        println!(
            "  {:<12} grants {:>3}  violations {:>2}  stale accepted {}  rejected {:>2}  double grants {:>2} ({} after server faults)  unavailable after heals {:?} ms",
            mode.name(),
            f.grants,
            f.violations.len(),
            f.stale_accepted,
            f.rejected,
            f.double_grants.len(),
            f.lost_grants,
            f.unavailable_ms
        );
        if mode.fenced() && f.stale_accepted > 0 {
            println!(
                "  FINDING: {} accepted {} stale token(s)",
                mode.name(),
                f.stale_accepted
            );
            stale = true;
        }
        table
            .entry((s.topology.name().to_owned(), *mode))
            .or_default()
            .add(f);
    }
    println!("  history: {}", s.dir.join("history.tsv").display());
    stale
}

/// Draws the run's first violation (the unfenced mode's first, else any mode's) as text and SVG
/// beside the history, and as SVG at `svg` too; whether one was drawn.
fn draw_first_violation(s: &Settings, outcome: &Outcome, svg: &Path) -> bool {
    let first = outcome
        .findings
        .iter()
        .find_map(|(mode, f)| f.violations.first().map(|v| (*mode, v.clone())));
    let Some((mode, v)) = first else {
        return false;
    };
    let title = format!(
        "{} on {}, seed {}: two holds write at once",
        mode.name(),
        s.topology.name(),
        s.seed
    );
    let timeline = draw::violation(&outcome.history, &mode.lock(), &v, &title);
    let text = timeline.to_string();
    println!("  first violation ({}):\n{text}", mode.name());
    let _ = std::fs::write(s.dir.join("violation.txt"), &text);
    let picture = timeline.to_svg();
    let _ = std::fs::write(s.dir.join("violation.svg"), &picture);
    match std::fs::write(svg, &picture) {
        Ok(()) => println!("  SVG written to {}", svg.display()),
        Err(e) => eprintln!("cannot write {}: {e}", svg.display()),
    }
    true
}
