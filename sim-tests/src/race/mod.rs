//! Property tests of your own async code under lock races.
//!
//! A [`Race`] declares a server (the fake Redis, standalone or a primary with replicas), clients
//! (each your async function, given its own [`LockClient`] and its own `redis` connection on the
//! fake, through a [`Ctx`]), a shared resource model ([`Store`]) and invariants. Each seed draws a fault schedule from a [`Swarm`] (GC pauses, lost and late
//! messages, crashes, restarts, failovers, clock jumps) and runs your clients under it on virtual
//! time. A broken invariant is shrunk to a minimal schedule and reported with a timeline, a
//! picture and one command that replays it exactly.
//!
//! ```no_run
//! use sim_tests::race::{Ctx, Race};
//!
//! async fn worker(ctx: Ctx) -> Result<(), lock_core::LockError> {
//!     let guard = ctx.lock.lock("account").await?;
//!     let balance = ctx.store.read("balance");
//!     tokio::time::sleep(std::time::Duration::from_millis(100)).await;
//!     ctx.store.write_holding(&guard, "balance", balance + 1);
//!     guard.unlock().await?;
//!     Ok(())
//! }
//!
//! Race::new("balance")
//!     .clients(2, worker)
//!     .invariant("no lost update", |h| match h.lost_increment("balance") {
//!         Some((at, _, w)) => Err(format!("at {at} ms: {} replaced {}", w.value, w.before)),
//!         None => Ok(()),
//!     })
//!     .check(); // panics with the shrunk schedule, the timeline and the replay command
//! ```
//!
//! Every seed runs on a fresh current-thread tokio runtime with paused time: the fake's clock is
//! tokio's, so the lock's leases, its watchdog, your sleeps and the faults all move together, and
//! an hour of virtual time costs what its events cost. The same schedule gives a byte-identical
//! trace; [`Race::self_check`] (or `RACE_SELF_CHECK=1`) runs each seed twice and compares.
//!
//! Environment variables: `SIM_CASES` scales the seed count as the simulator's suites do
//! ([`crate::cases`]); `RACE_REPLAY='<schedule>'` plays that one schedule and prints its whole
//! trace; `RACE_SELF_CHECK=1` turns on the self-check; `RACE_OUT` is the folder the pictures go
//! to (the system's temporary folder by default).

mod check;
mod draw;
mod play;
mod record;
mod schedule;

pub use check::{Broken, Builtin, Situation};
pub use record::{Entry, History, Stale, Store, What, Write};
pub use schedule::{Fault, Kind, ParseError, Schedule, Swarm, client_name};

use crate::timeline::Timeline;
use fake_redis::{FakeConnection, FakeRedis, NodeId};
use lock_core::{LockClient, LockConfig};
use record::SharedLog;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

/// The server a race runs against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Server {
    /// One fake Redis.
    #[default]
    Standalone,
    /// A primary with `replicas` replicas that each lag by `lag_ms`, and a Sentinel. The clients
    /// talk to the primary; a [`Fault::Failover`] promotes, in place, a replica that lagged by
    /// the fault's lag.
    Sentinel {
        /// How many replicas.
        replicas: u16,
        /// How far each lags behind the primary.
        lag_ms: u64,
    },
}

/// What one client's code is given: its lock client, its connection, the shared resource, all
/// on the fake and all of one node of the fault plan (a pause or a crash strikes them together).
pub struct Ctx {
    /// The client's name in schedules and reports: `a`, `b`, ….
    pub name: String,
    /// Its index (`a` is 0).
    pub index: usize,
    /// Its lock client, on the fake, with the race's [`LockConfig`].
    pub lock: LockClient,
    /// Its connection: a `redis::aio::ConnectionLike` (typed commands, `redis::Script`,
    /// pipelines) served by the fake's engine in-process. A lost reply is a timeout error and the
    /// connection stays usable, as a reconnecting connection manager's would.
    pub redis: FakeConnection,
    /// The shared resource model, signing writes as this client.
    pub store: Store,
    fake: FakeRedis,
    node: NodeId,
    log: SharedLog,
}

impl Ctx {
    /// A `redis::aio::MultiplexedConnection` of this client's node, served over an in-memory
    /// stream by the fake's own server code, for code that names that type. A lost reply closes
    /// it, as a lost TCP connection would.
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        self.fake.connection_as(self.node).await
    }

    /// Adds `text` to the run's timeline, on this client's lane.
    pub fn note(&self, text: impl Into<String>) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        let at = log.now();
        log.push(at, Some(self.index), What::Note(text.into()));
    }

    /// Virtual milliseconds since the run began.
    pub fn now_ms(&self) -> u64 {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).now()
    }
}

type Worker = Box<dyn Fn(Ctx) -> Pin<Box<dyn Future<Output = String>>>>;
type Invariant = Box<dyn Fn(&History) -> Result<(), String>>;

/// A property test of clients' code under lock races: see the [module docs](self).
pub struct Race {
    name: String,
    server: Server,
    config: LockConfig,
    workers: Vec<Worker>,
    swarm: Swarm,
    seeds: u32,
    first_seed: u64,
    invariants: Vec<(String, Invariant)>,
    builtins: Vec<Builtin>,
    required: Vec<Situation>,
    self_check: bool,
    shrink: bool,
}

/// How many failing seeds [`Race::explore`] shrinks before it reports the smallest.
pub const FAILURES_TO_SHRINK: usize = 4;

/// The default number of seeds a race runs (times `SIM_CASES / 1000` when that is set).
pub const DEFAULT_SEEDS: u32 = 200;

impl Race {
    /// A race named `name` (its pictures' title), on a standalone fake, with the default lock
    /// config, the default swarm and the built-in invariants [`Builtin::OneBeliever`] and
    /// [`Builtin::FencingRises`].
    pub fn new(name: impl Into<String>) -> Race {
        Race {
            name: name.into(),
            server: Server::Standalone,
            config: LockConfig::default(),
            workers: Vec::new(),
            swarm: Swarm::default(),
            seeds: DEFAULT_SEEDS,
            first_seed: 1,
            invariants: Vec::new(),
            builtins: vec![Builtin::OneBeliever, Builtin::FencingRises],
            required: Vec::new(),
            self_check: std::env::var_os("RACE_SELF_CHECK").is_some_and(|v| v != "0"),
            shrink: true,
        }
    }

    /// The server.
    pub fn server(mut self, server: Server) -> Race {
        self.server = server;
        self
    }

    /// The lock clients' configuration.
    pub fn config(mut self, config: LockConfig) -> Race {
        self.config = config;
        self
    }

    /// Adds a client running `code` (named by its place: `a`, `b`, …). Its result is recorded
    /// in the trace by its `Debug` form.
    pub fn client<F, Fut>(mut self, code: F) -> Race
    where
        F: Fn(Ctx) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: fmt::Debug,
    {
        self.workers.push(Box::new(move |ctx| {
            let fut = code(ctx);
            Box::pin(async move { format!("{:?}", fut.await) })
        }));
        self
    }

    /// Adds `n` clients each running `code`.
    pub fn clients<F, Fut>(mut self, n: usize, code: F) -> Race
    where
        F: Fn(Ctx) -> Fut + Clone + 'static,
        Fut: Future + 'static,
        Fut::Output: fmt::Debug,
    {
        for _ in 0..n {
            self = self.client(code.clone());
        }
        self
    }

    /// The faults seeds draw from.
    pub fn swarm(mut self, swarm: Swarm) -> Race {
        self.swarm = swarm;
        self
    }

    /// Runs `n` seeds by default (scaled by `SIM_CASES`, as [`crate::cases`] does).
    pub fn seeds(mut self, n: u32) -> Race {
        self.seeds = n;
        self
    }

    /// Starts at seed `first` (1 by default).
    pub fn first_seed(mut self, first: u64) -> Race {
        self.first_seed = first;
        self
    }

    /// An invariant of yours over the run's history: `Err` says what broke.
    pub fn invariant(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&History) -> Result<(), String> + 'static,
    ) -> Race {
        self.invariants.push((name.into(), Box::new(check)));
        self
    }

    /// Adds a built-in invariant: [`Builtin::NoWriteAfterLoss`] is for code that writes only
    /// inside [`LockGuard::run`](lock_core::LockGuard::run), and is off until asked for.
    pub fn with(mut self, builtin: Builtin) -> Race {
        if !self.builtins.contains(&builtin) {
            self.builtins.push(builtin);
        }
        self
    }

    /// Leaves out a built-in invariant.
    pub fn without(mut self, builtin: Builtin) -> Race {
        self.builtins.retain(|b| *b != builtin);
        self
    }

    /// Fails [`check`](Race::check) unless every one of `situations` was reached by some seed.
    pub fn require(mut self, situations: &[Situation]) -> Race {
        self.required.extend_from_slice(situations);
        self
    }

    /// Runs every seed twice and fails if the two traces differ by a byte.
    pub fn self_check(mut self, on: bool) -> Race {
        self.self_check = on;
        self
    }

    /// Whether a failure is shrunk (on by default).
    pub fn shrink(mut self, on: bool) -> Race {
        self.shrink = on;
        self
    }

    /// How many seeds [`explore`](Race::explore) runs.
    pub fn seed_count(&self) -> u32 {
        crate::cases(self.seeds)
    }

    /// The seeds' schedules, in the order they run.
    pub fn schedules(&self) -> impl Iterator<Item = Schedule> + '_ {
        let clients = self.workers.len();
        (0..u64::from(self.seed_count()))
            .map(move |n| self.swarm.draw(self.first_seed + n, clients))
    }

    /// Plays one schedule.
    pub fn replay(&self, schedule: &Schedule) -> Run {
        let played = play::play(self, schedule);
        let history = History {
            entries: played.entries.clone(),
            clients: self.workers.len(),
        };
        let mut broken = check::builtins(&history, &schedule.faults, &self.builtins);
        for (name, invariant) in &self.invariants {
            if let Err(message) = invariant(&history) {
                broken.push(Broken {
                    invariant: name.clone(),
                    at: played.end,
                    message,
                });
            }
        }
        let timeline = draw::timeline(&self.name, schedule, &played, self.workers.len());
        let trace = draw::trace(&timeline, &played);
        Run {
            schedule: schedule.clone(),
            situations: check::situations(&history, &schedule.faults),
            history,
            broken,
            stalled: played.stalled,
            timeline,
            trace,
        }
    }

    /// Plays a schedule given as text (`seed=3; pause a at=100 for=40000`).
    pub fn replay_text(&self, schedule: &str) -> Result<Run, ParseError> {
        Ok(self.replay(&schedule.parse()?))
    }

    /// Runs the seeds until [`FAILURES_TO_SHRINK`] of them broke an invariant, or all ran,
    /// counting the situations each seed reached; shrinks the failures (one at a time, stopping
    /// at one shrunk to a single fault) and keeps the smallest. Never panics on a broken
    /// invariant: [`check`](Race::check) does.
    ///
    /// # Panics
    ///
    /// In self-check mode, when a seed's two traces differ.
    pub fn explore(&self) -> Summary {
        if let Some(summary) = self.replay_from_env() {
            return summary;
        }
        let mut summary = Summary {
            seeds: 0,
            reached: Situation::ALL.iter().map(|s| (*s, 0)).collect(),
            failure: None,
        };
        let mut failures: Vec<Run> = Vec::new();
        for schedule in self.schedules() {
            let run = self.replay(&schedule);
            if self.self_check {
                let again = self.replay(&schedule);
                assert!(
                    again.trace == run.trace,
                    "{}",
                    not_deterministic(&schedule, &run.trace, &again.trace)
                );
            }
            summary.seeds += 1;
            for s in &run.situations {
                *summary.reached.entry(*s).or_default() += 1;
            }
            if !run.broken.is_empty() {
                failures.push(run);
                if failures.len() >= FAILURES_TO_SHRINK {
                    break;
                }
            }
        }
        // The smallest of the first few failures once shrunk (the earliest among equals): a
        // seed's schedule may hold a fault the failure needs only for its timing.
        let mut best: Option<Failure> = None;
        for run in failures {
            let failure = self.fail(run);
            let size = failure.shrunk.schedule.faults.len();
            if best
                .as_ref()
                .is_none_or(|b| size < b.shrunk.schedule.faults.len())
            {
                best = Some(failure);
            }
            if size <= 1 {
                break;
            }
        }
        if let Some(failure) = &mut best {
            failure.picture = write_picture(&self.name, &failure.shrunk);
        }
        summary.failure = best;
        summary
    }

    /// Runs the race (or, with `RACE_REPLAY` set, the one schedule it names, printing its trace)
    /// and panics with the failure's report if an invariant broke, or if a required situation
    /// was never reached (not asked of a replay).
    pub fn check(&self) -> Summary {
        let summary = self.explore();
        if let Some(failure) = &summary.failure {
            panic!("{failure}");
        }
        if std::env::var_os("RACE_REPLAY").is_some() {
            return summary;
        }
        let missing: Vec<String> = self
            .required
            .iter()
            .filter(|s| summary.reached(**s) == 0)
            .map(|s| format!("  {s}"))
            .collect();
        assert!(
            missing.is_empty(),
            "race `{}`: {} seeds never reached:\n{}\n{summary}",
            self.name,
            summary.seeds,
            missing.join("\n")
        );
        summary
    }

    /// With `RACE_REPLAY` set: plays that one schedule, prints its whole trace, and returns its
    /// summary (its failure unshrunk).
    fn replay_from_env(&self) -> Option<Summary> {
        let text = std::env::var("RACE_REPLAY").ok()?;
        let run = self
            .replay_text(&text)
            .unwrap_or_else(|e| panic!("RACE_REPLAY: {e}"));
        println!("{}\n{}", run.trace, run.report_head());
        println!("trace digest: {:016x}", digest(&run.trace));
        Some(Summary {
            seeds: 1,
            reached: run.situations.iter().map(|s| (*s, 1)).collect(),
            failure: (!run.broken.is_empty()).then(|| {
                let mut failure = self.fail_without_shrinking(run);
                failure.picture = write_picture(&self.name, &failure.shrunk);
                failure
            }),
        })
    }

    fn fail(&self, run: Run) -> Failure {
        let found = run.schedule.clone();
        let (shrunk, tries) = if self.shrink {
            self.shrink_run(run)
        } else {
            (run, 0)
        };
        self.failure(found, shrunk, tries)
    }

    fn fail_without_shrinking(&self, run: Run) -> Failure {
        self.failure(run.schedule.clone(), run, 0)
    }

    fn failure(&self, found: Schedule, shrunk: Run, tries: u32) -> Failure {
        Failure {
            replay: replay_command(&shrunk.schedule),
            found,
            shrunk,
            tries,
            picture: None,
        }
    }

    /// Removes faults one at a time while the run still breaks the invariant it broke first, then
    /// shortens each remaining pause and delay by a quarter at a time while it still does.
    fn shrink_run(&self, mut best: Run) -> (Run, u32) {
        let invariant = best.broken[0].invariant.clone();
        let still = |run: &Run| run.broken.iter().any(|b| b.invariant == invariant);
        let mut tries = 0;
        let mut improved = true;
        while improved {
            improved = false;
            for i in 0..best.schedule.faults.len() {
                let mut s = best.schedule.clone();
                s.faults.remove(i);
                tries += 1;
                let run = self.replay(&s);
                if still(&run) {
                    best = run;
                    improved = true;
                    break;
                }
            }
        }
        for i in 0..best.schedule.faults.len() {
            for _ in 0..8 {
                let mut s = best.schedule.clone();
                match &mut s.faults[i] {
                    Fault::Pause { ms, .. } | Fault::Delay { ms, .. } if *ms > 1 => {
                        *ms -= *ms / 4;
                    }
                    _ => break,
                }
                tries += 1;
                let run = self.replay(&s);
                if !still(&run) {
                    break;
                }
                best = run;
            }
        }
        (best, tries)
    }
}

/// One played schedule.
#[derive(Clone, Debug)]
pub struct Run {
    /// The schedule played.
    pub schedule: Schedule,
    /// What happened.
    pub history: History,
    /// The invariants it broke.
    pub broken: Vec<Broken>,
    /// The situations it reached.
    pub situations: Vec<Situation>,
    /// The clients still running when the run hit its horizon (an hour of virtual time).
    pub stalled: Vec<usize>,
    /// Its timeline.
    pub timeline: Timeline,
    /// Its whole trace: the timeline, every request, every fault the fake applied.
    pub trace: String,
}

impl Run {
    fn report_head(&self) -> String {
        let mut out = format!("schedule: {}\n", self.schedule);
        if self.broken.is_empty() {
            out.push_str("no invariant broke\n");
        }
        for b in &self.broken {
            out.push_str(&format!("broken: {b}\n"));
        }
        out
    }
}

/// What a race found.
#[derive(Clone, Debug)]
pub struct Summary {
    /// How many seeds ran.
    pub seeds: u32,
    /// How many seeds reached each situation.
    pub reached: BTreeMap<Situation, u32>,
    /// The first failing seed, shrunk.
    pub failure: Option<Failure>,
}

impl Summary {
    /// How many seeds reached `s`.
    pub fn reached(&self, s: Situation) -> u32 {
        self.reached.get(&s).copied().unwrap_or(0)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} seeds; situations reached:", self.seeds)?;
        for s in Situation::ALL {
            writeln!(f, "  {:>5}  {s}", self.reached(s))?;
        }
        Ok(())
    }
}

/// A failing seed, shrunk, with everything needed to see and replay it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The schedule the seed drew.
    pub found: Schedule,
    /// The shrunk run.
    pub shrunk: Run,
    /// How many runs the shrinking took.
    pub tries: u32,
    /// The command that replays the shrunk schedule.
    pub replay: String,
    /// Where its picture was written, if it could be.
    pub picture: Option<PathBuf>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let run = &self.shrunk;
        writeln!(f, "a race broke an invariant\n")?;
        writeln!(f, "seed {} drew: {}", self.found.seed, self.found)?;
        writeln!(
            f,
            "shrunk in {} runs to {} fault(s): {}\n",
            self.tries,
            run.schedule.faults.len(),
            run.schedule
        )?;
        for b in &run.broken {
            writeln!(f, "broken: {b}")?;
        }
        writeln!(f, "\ntimeline:\n{}", run.timeline)?;
        writeln!(f, "trace digest: {:016x}", digest(&run.trace))?;
        if let Some(p) = &self.picture {
            writeln!(f, "picture: {}", p.display())?;
        }
        writeln!(f, "replay: {}", self.replay)
    }
}

/// FNV-1a over the trace: a short name for its bytes.
pub fn digest(trace: &str) -> u64 {
    trace.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn not_deterministic(schedule: &Schedule, a: &str, b: &str) -> String {
    let line = a
        .lines()
        .zip(b.lines())
        .position(|(x, y)| x != y)
        .unwrap_or_else(|| a.lines().count().min(b.lines().count()));
    format!(
        "not deterministic: two runs of `{schedule}` differ from line {}:\n  first:  {}\n  second: {}",
        line + 1,
        a.lines().nth(line).unwrap_or("<end>"),
        b.lines().nth(line).unwrap_or("<end>")
    )
}

/// The one command that replays `schedule` in the test running now.
fn replay_command(schedule: &Schedule) -> String {
    let env = format!("RACE_REPLAY='{schedule}'");
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(str::to_owned);
    let package = std::env::var("CARGO_PKG_NAME").ok();
    let binary = std::env::args().next().and_then(|path| {
        let stem = PathBuf::from(path).file_stem()?.to_str()?.to_owned();
        Some(match stem.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_owned(),
            _ => stem,
        })
    });
    match (package, test, binary) {
        (Some(p), Some(t), Some(b)) => {
            let target = if b == p.replace('-', "_") {
                "--lib".to_owned()
            } else {
                format!("--test {b}")
            };
            format!("{env} cargo test -p {p} {target} -- --exact {t} --nocapture")
        }
        _ => format!("{env} <the command that ran this test> -- --nocapture"),
    }
}

/// Writes the run's picture as SVG under `RACE_OUT` (or the system's temporary folder).
fn write_picture(name: &str, run: &Run) -> Option<PathBuf> {
    let dir = std::env::var_os("RACE_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("race"));
    std::fs::create_dir_all(&dir).ok()?;
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = dir.join(format!("{slug}-seed-{}.svg", run.schedule.seed));
    std::fs::write(&path, run.timeline.to_svg()).ok()?;
    Some(path)
}
