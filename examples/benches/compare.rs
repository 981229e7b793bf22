//! The lock and the fake against the alternatives, on a real `redis-server`.
//!
//! Every measurement runs for a bounded time, puts the sides it compares in the same run
//! (interleaved in rounds, so a neighbour's compile slows both alike), and prints one `key value`
//! line per figure; `--out FILE` also appends them to a tab-separated file that `--report` turns
//! into the table of `BENCHMARKS.md`. `scripts/bench` runs the whole thing; by hand:
//!
//! ```text
//! cargo bench -p examples --features rslock --bench compare -- --url redis://127.0.0.1:6379/
//! ```
//!
//! The sections:
//! - **uncontended**: acquire+release pairs per second on one lock, one connection: our
//!   [`LockClient`] over [`RedisBackend`]; the same two scripts sent by hand as `EVALSHA` through
//!   the `redis` crate (two round trips per pair, the floor our client can reach); rslock's
//!   `lock` + `unlock` (`SET NX PX`, then a Lua compare-and-delete);
//! - **contended**: 50 tasks on 10 and on 1,000 locks, each hold lasting 1 ms: grants per second
//!   and the acquire latency's median and 99th percentile, ours (a waiter sleeps until the unlock
//!   message) against rslock (a waiter retries after a random sleep of up to 200 ms);
//! - **workload**: a typical test's traffic (1,000 `SET`/`GET`/`HSET`/`EXPIRE` and 100 lock
//!   cycles) through the in-process fake against the same through loopback Redis;
//! - **watchdog**: 10,000 watchdog holds on one client: renew calls and wall time per pass.
//!
//! The memory comparison needs a process of its own; see `fake_memory.rs`.
//!
//! This file measures and prints figures; `--report FILE` renders them with the `report` module
//! (`compare/report.rs`), whose texts (the targets and the table's rows) are in `compare/targets.rs`.

use bytes::Bytes;
use clap::Parser;
use fake_redis::{FakeConnection, NodeId, TokioClock, shared};
use lock_core::backend::{Backend, BackendError, PubSubEvent};
use lock_core::fake::FakeBackend;
use lock_core::keys::{KeyLayout, LockKeys, Owner, RequestId};
use lock_core::machine::{IdSource, SeededIds};
use lock_core::redis_backend::cmd_of;
use lock_core::script::{ScriptCall, acquire, release, renew_batch};
use lock_core::{Lease, LockClient, LockConfig, Millis, RedisBackend, Reply};
use redis::AsyncCommands;
use redis::aio::ConnectionLike;
use std::collections::BTreeMap;
use std::error::Error;
use std::future::Future;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

#[path = "compare/report.rs"]
mod report;
#[path = "compare/targets.rs"]
mod targets;

use report::report;

type BoxError = Box<dyn Error + Send + Sync>;

/// Compare the lock and the fake with their alternatives on a real Redis, or render a report.
#[derive(Parser, Debug)]
struct Args {
    /// The Redis to measure against (a server of its own: the benchmark writes `bench:*` keys).
    #[arg(long)]
    url: Option<String>,
    /// Append `key<TAB>value` lines to this file as well as printing them.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Only these sections (comma-separated: uncontended, contended, workload, watchdog).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Only these sides of the uncontended section (comma-separated: ours, raw, raw_mux,
    /// rslock), e.g. to profile one.
    #[arg(long, value_delimiter = ',')]
    sides: Vec<String>,
    /// Only these runtimes in the uncontended section (comma-separated: ct, mt).
    #[arg(long, value_delimiter = ',')]
    runtimes: Vec<String>,
    /// In the uncontended section, run exactly this many pairs per side and round instead of
    /// running for a time: the same work every run, for an instruction count per pair
    /// (`valgrind --tool=callgrind` at two counts; the difference over the pairs between them).
    #[arg(long)]
    pairs: Option<u64>,
    /// Multiply every measurement's duration by this (below 1 for a quick look).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Render the Markdown table and targets from a results file instead of measuring.
    #[arg(long)]
    report: Option<std::path::PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Where figures go: printed at once, and kept for the results file.
struct Figures {
    out: Mutex<Option<std::fs::File>>,
}

impl Figures {
    fn put(&self, key: &str, value: f64) {
        println!("{key} {value:.3}");
        if let Some(f) = &mut *self.out.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = writeln!(f, "{key}\t{value}");
        }
    }
}

/// The tokio runtime a section runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    /// `#[tokio::test]`'s and a small tool's: one thread.
    CurrentThread,
    /// `#[tokio::main]`'s: a worker per core (two here).
    MultiThread,
}

impl Flavor {
    /// The figure-key tag of the flavor.
    fn tag(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "ct",
            Flavor::MultiThread => "mt",
        }
    }
}

/// Runs `section` in a task spawned on a fresh runtime of `flavor`.
///
/// A spawned task, as a service's code is: a current-thread runtime wakes its `block_on` future
/// through the driver (an eventfd write each time), which would tax whichever side wakes the
/// caller more often.
fn on_runtime<S>(flavor: Flavor, section: S) -> Result<(), BoxError>
where
    S: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let runtime = match flavor {
        Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        Flavor::MultiThread => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
    };
    runtime.block_on(async move {
        tokio::spawn(section)
            .await
            .map_err(|e| -> BoxError { format!("a benchmark task failed: {e}").into() })?
    })
}

fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    if let Some(results) = &args.report {
        print!("{}", report(&std::fs::read_to_string(results)?));
        return Ok(());
    }
    let Some(url) = args.url.clone() else {
        return Err(
            "--url is required (a redis-server of its own, e.g. redis://127.0.0.1:6379/; \
                    scripts/bench starts one)"
                .into(),
        );
    };
    let out = match &args.out {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?,
        ),
        None => None,
    };
    let figures = Arc::new(Figures {
        out: Mutex::new(out),
    });
    let wanted = |section: &str| args.only.is_empty() || args.only.iter().any(|s| s == section);
    let scaled = |secs: f64| Duration::from_secs_f64(secs * args.scale);

    // Fail early, with a clear message, when the server is not there.
    let probe = url.clone();
    on_runtime(Flavor::CurrentThread, async move {
        let client = redis::Client::open(probe.as_str())?;
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| {
                format!(
                    "cannot reach Redis at {probe}: {e}; start one (scripts/bench does) and retry"
                )
            })?;
        let _: () = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    })?;

    if wanted("uncontended") {
        for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
            if !args.runtimes.is_empty() && !args.runtimes.iter().any(|r| r == flavor.tag()) {
                continue;
            }
            let (url, figures, sides) = (url.clone(), figures.clone(), args.sides.clone());
            let per_side = match args.pairs {
                Some(pairs) => PerSide::Pairs(pairs),
                None => PerSide::Time(scaled(0.5)),
            };
            on_runtime(flavor, async move {
                uncontended(&url, flavor, &sides, per_side, &figures).await
            })?;
        }
    }
    if wanted("contended") {
        for locks in [10, 1_000] {
            let (url, figures, window) = (url.clone(), figures.clone(), scaled(4.0));
            on_runtime(Flavor::MultiThread, async move {
                contended(&url, locks, window, &figures).await
            })?;
        }
    }
    if wanted("workload") {
        let (url, figures, budget) = (url.clone(), figures.clone(), scaled(8.0));
        // A test's runtime: `#[tokio::test]` is current-thread.
        on_runtime(Flavor::CurrentThread, async move {
            workload(&url, budget, &figures).await
        })?;
    }
    if wanted("watchdog") {
        let (url, figures) = (url.clone(), figures.clone());
        on_runtime(Flavor::MultiThread, async move {
            watchdog(&url, &figures).await
        })?;
    }
    Ok(())
}

// ---- uncontended pairs ----

/// Rounds of the uncontended comparison; each round runs every side once, in a rotated order.
/// Many short rounds, so that a ratio taken within each round (sides a second apart) and then its
/// median over the rounds shrugs off a neighbour's burst of work.
const UNCONTENDED_ROUNDS: usize = 15;

/// How long each side runs in a round of the uncontended section.
#[derive(Clone, Copy, Debug)]
enum PerSide {
    /// For this long (the measurement).
    Time(Duration),
    /// Exactly this many pairs (for instruction counts).
    Pairs(u64),
}

/// When a side's run in one round stops.
#[derive(Clone, Copy, Debug)]
struct Stop {
    until: Instant,
    pairs: u64,
}

impl Stop {
    fn starting_now(per_side: PerSide) -> Stop {
        match per_side {
            PerSide::Time(time) => Stop {
                until: Instant::now() + time,
                pairs: u64::MAX,
            },
            PerSide::Pairs(pairs) => Stop {
                until: Instant::now() + Duration::from_secs(24 * 3600),
                pairs,
            },
        }
    }

    /// Whether to run another pair after `done`.
    fn more(&self, done: u64) -> bool {
        done < self.pairs && Instant::now() < self.until
    }
}

/// A lease long enough that no benchmark lock expires while held.
fn lease() -> Lease {
    Lease::from_millis(30_000).expect("a positive lease")
}

async fn uncontended(
    url: &str,
    flavor: Flavor,
    only: &[String],
    per_side: PerSide,
    figures: &Figures,
) -> Result<(), BoxError> {
    println!(
        "# uncontended acquire+release pairs on one connection, {UNCONTENDED_ROUNDS} rounds, {flavor:?} runtime"
    );
    let ours = LockClient::new(
        RedisBackend::connect(url, Duration::from_secs(3)).await?,
        LockConfig::default(),
    )?;
    let client = redis::Client::open(url)?;
    let manager = client
        .get_connection_manager_with_config(
            redis::aio::ConnectionManagerConfig::new().set_response_timeout(None),
        )
        .await?;
    let mut raw = RawPairs::new(manager, "bench:unc:raw").await?;
    let mut raw_mux = RawPairs::new(
        client.get_multiplexed_async_connection().await?,
        "bench:unc:raw_mux",
    )
    .await?;
    let rslock = RslockSide::new(url);
    let mut stats = client.get_multiplexed_async_connection().await?;

    let sides: Vec<&str> = ["ours", "raw", "raw_mux", "rslock"]
        .into_iter()
        .filter(|s| only.is_empty() || only.iter().any(|o| o == s))
        .collect();
    let mut rates: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut cpu: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut server: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut by_round: BTreeMap<(usize, &str), f64> = BTreeMap::new();
    for round in 0..UNCONTENDED_ROUNDS {
        for i in 0..sides.len() {
            let side = sides[(i + round) % sides.len()];
            let until = Stop::starting_now(per_side);
            let server_before = server_cpu(&mut stats).await?;
            let started = Instant::now();
            let cpu_before = process_cpu();
            let pairs = match side {
                "ours" => ours_pairs(&ours, "bench:unc:ours", until).await?,
                "raw" => raw.pairs(until).await?,
                "raw_mux" => raw_mux.pairs(until).await?,
                _ => match rslock.pairs("bench:unc:rslock", until).await? {
                    Some(n) => n,
                    None => continue,
                },
            };
            let rate = pairs as f64 / started.elapsed().as_secs_f64();
            let cpu_us = (process_cpu() - cpu_before).as_secs_f64() * 1e6 / pairs.max(1) as f64;
            let server_us = (server_cpu(&mut stats).await? - server_before).as_secs_f64() * 1e6
                / pairs.max(1) as f64;
            rates.entry(side).or_default().push(rate);
            by_round.insert((round, side), rate);
            cpu.entry(side).or_default().push(cpu_us);
            server.entry(side).or_default().push(server_us);
        }
    }
    for (side, mut values) in rates {
        let median = median(&mut values);
        let cpu_us = self::median(cpu.get_mut(side).map_or(&mut [][..], |v| &mut v[..]));
        let server_us = self::median(server.get_mut(side).map_or(&mut [][..], |v| &mut v[..]));
        let tag = flavor.tag();
        figures.put(&format!("unc_{tag}_{side}_pairs_s"), median);
        figures.put(&format!("unc_{tag}_{side}_cpu_us"), cpu_us);
        figures.put(&format!("unc_{tag}_{side}_server_us"), server_us);
        let (lo, hi) = (values[0], values[values.len() - 1]);
        println!(
            "#   {side}: median {median:.0} pairs/s (rounds {lo:.0}..{hi:.0}), CPU per pair: client {cpu_us:.1} µs, server {server_us:.1} µs"
        );
    }
    for other in ["raw", "rslock"] {
        let mut ratios: Vec<f64> = (0..UNCONTENDED_ROUNDS)
            .filter_map(|r| Some(by_round.get(&(r, "ours"))? / by_round.get(&(r, other))?))
            .collect();
        if ratios.is_empty() {
            continue;
        }
        let ratio = median(&mut ratios);
        let tag = flavor.tag();
        figures.put(&format!("unc_{tag}_ours_over_{other}"), ratio);
        let (lo, hi) = (ratios[0], ratios[ratios.len() - 1]);
        println!(
            "#   ours / {other}: median of per-round ratios {ratio:.2} (rounds {lo:.2}..{hi:.2})"
        );
    }
    Ok(())
}

async fn ours_pairs(client: &LockClient, name: &str, until: Stop) -> Result<u64, BoxError> {
    let mut pairs = 0;
    while until.more(pairs) {
        let guard = client
            .lock_with_lease(name, Duration::from_secs(30))
            .await?;
        guard.unlock().await?;
        pairs += 1;
    }
    Ok(pairs)
}

/// The lock's acquire and release scripts sent by hand, one `EVALSHA` each.
struct RawPairs<C> {
    conn: C,
    keys: LockKeys,
    owner: Owner,
    next_request: u128,
}

impl<C: ConnectionLike + Send> RawPairs<C> {
    async fn new(mut conn: C, name: &str) -> Result<RawPairs<C>, BoxError> {
        for script in [&acquire::SCRIPT, &release::SCRIPT] {
            let _: String = cmd_of(&script.load_argv()).query_async(&mut conn).await?;
        }
        Ok(RawPairs {
            conn,
            keys: KeyLayout::default().lock(name),
            owner: Owner::new("0123456789abcdef0123456789abcdef", 1),
            // Fresh ids per run: a latch left by an earlier run would turn an acquire into a
            // replay of that run's request.
            next_request: SeededIds::from_os().next_u128() >> 1,
        })
    }

    async fn evalsha(&mut self, call: &ScriptCall) -> Result<redis::Value, BoxError> {
        Ok(cmd_of(&call.evalsha_argv())
            .query_async(&mut self.conn)
            .await?)
    }

    async fn pairs(&mut self, until: Stop) -> Result<u64, BoxError> {
        let latch = Millis(12_000);
        let mut pairs = 0;
        while until.more(pairs) {
            let request = RequestId(self.next_request);
            self.next_request += 2;
            let take = acquire::call(&self.keys, &request, lease(), &self.owner, latch);
            let granted = self.evalsha(&take).await?;
            if granted != redis::Value::Nil {
                return Err(format!("raw acquire was refused: {granted:?}").into());
            }
            let request = RequestId(self.next_request - 1);
            let give = release::call(&self.keys, &request, lease(), &self.owner, latch);
            let released = self.evalsha(&give).await?;
            if released != redis::Value::Int(1) {
                return Err(format!("raw release did not delete the lock: {released:?}").into());
            }
            pairs += 1;
        }
        Ok(pairs)
    }
}

// ---- rslock, when built with the `rslock` feature ----

#[cfg(feature = "rslock")]
struct RslockSide {
    manager: rslock::LockManager,
}

#[cfg(feature = "rslock")]
impl RslockSide {
    fn new(url: &str) -> RslockSide {
        RslockSide {
            manager: rslock::LockManager::new(vec![url.to_owned()]),
        }
    }

    async fn pairs(&self, name: &str, until: Stop) -> Result<Option<u64>, BoxError> {
        let mut pairs = 0;
        while until.more(pairs) {
            let lock = self.manager.lock(name, Duration::from_secs(30)).await?;
            self.manager.unlock(&lock).await;
            pairs += 1;
        }
        Ok(Some(pairs))
    }
}

#[cfg(not(feature = "rslock"))]
struct RslockSide;

#[cfg(not(feature = "rslock"))]
impl RslockSide {
    fn new(_url: &str) -> RslockSide {
        println!("# rslock: not built (run with --features rslock)");
        RslockSide
    }

    async fn pairs(&self, _name: &str, _until: Stop) -> Result<Option<u64>, BoxError> {
        Ok(None)
    }
}

// ---- contended ----

/// Tasks that contend in the contended section.
const TASKS: usize = 50;
/// How long each hold lasts.
const HOLD: Duration = Duration::from_millis(1);
/// Rounds of the contended comparison (ours, rslock; then rslock, ours).
const CONTENDED_ROUNDS: usize = 3;

/// What one side's tasks saw: grants within the measured window and each grant's wait.
#[derive(Default)]
struct Contention {
    grants: u64,
    window: Duration,
    /// The process's CPU time over the side's rounds.
    cpu: Duration,
    latencies_us: Vec<f64>,
}

/// A small deterministic generator for picking locks (SplitMix64).
struct Picker(u64);

impl Picker {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// Runs `TASKS` tasks for `window`, each picking a random one of `locks` locks, taking it with
/// `take`, holding it for [`HOLD`] and giving it back with `give`.
async fn contend<G, T, TF, R, RF>(
    locks: usize,
    prefix: &str,
    window: Duration,
    take: T,
    give: R,
) -> Result<Contention, BoxError>
where
    G: Send + 'static,
    T: Fn(String) -> TF + Clone + Send + 'static,
    TF: Future<Output = Result<G, BoxError>> + Send,
    R: Fn(G) -> RF + Clone + Send + 'static,
    RF: Future<Output = Result<(), BoxError>> + Send,
{
    let started = tokio::time::Instant::now();
    let deadline = started + window;
    let mut tasks = JoinSet::new();
    for task in 0..TASKS {
        let (take, give) = (take.clone(), give.clone());
        let prefix = prefix.to_owned();
        tasks.spawn(async move {
            let mut picker = Picker(task as u64 + 1);
            let mut seen = Contention::default();
            loop {
                let name = format!("{prefix}:{}", picker.next(locks));
                let asked = tokio::time::Instant::now();
                let guard = match tokio::time::timeout_at(deadline, take(name)).await {
                    Ok(guard) => guard?,
                    Err(_) => break,
                };
                let granted = tokio::time::Instant::now();
                if granted > deadline {
                    give(guard).await?;
                    break;
                }
                seen.grants += 1;
                seen.latencies_us
                    .push((granted - asked).as_secs_f64() * 1e6);
                tokio::time::sleep(HOLD).await;
                give(guard).await?;
            }
            Ok::<_, BoxError>(seen)
        });
    }
    let mut all = Contention {
        window,
        ..Contention::default()
    };
    while let Some(joined) = tasks.join_next().await {
        let seen = joined??;
        all.grants += seen.grants;
        all.latencies_us.extend(seen.latencies_us);
    }
    Ok(all)
}

async fn contended(
    url: &str,
    locks: usize,
    window: Duration,
    figures: &Figures,
) -> Result<(), BoxError> {
    println!(
        "# contended: {TASKS} tasks on {locks} locks, holds of {HOLD:?}, {CONTENDED_ROUNDS} rounds"
    );
    let ours = LockClient::new(
        RedisBackend::connect(url, Duration::from_secs(3)).await?,
        LockConfig::default(),
    )?;
    let mut results: BTreeMap<&str, Contention> = BTreeMap::new();
    for round in 0..CONTENDED_ROUNDS {
        // Ours, ours with a fair wait (Redisson's RFairLock), and rslock, in rotated order.
        let mut order = ["ours", "fair", "rslock"];
        order.rotate_left(round % 3);
        for side in order {
            let prefix = format!("bench:c{locks}:{side}:r{round}");
            let cpu_before = process_cpu();
            let seen = match side {
                "ours" | "fair" => {
                    let client = ours.clone();
                    let fair = side == "fair";
                    contend(
                        locks,
                        &prefix,
                        window,
                        move |name| {
                            let client = client.clone();
                            async move {
                                let acquire = client.acquire(&name).lease(Duration::from_secs(10));
                                let acquire = if fair { acquire.fair() } else { acquire };
                                Ok(acquire.await?)
                            }
                        },
                        |guard: lock_core::LockGuard| async move {
                            guard.unlock().await?;
                            Ok(())
                        },
                    )
                    .await?
                }
                _ => match rslock_contend(url, locks, &prefix, window).await? {
                    Some(seen) => seen,
                    None => continue,
                },
            };
            let entry = results.entry(side).or_default();
            entry.cpu += process_cpu() - cpu_before;
            entry.grants += seen.grants;
            entry.window += seen.window;
            entry.latencies_us.extend(seen.latencies_us);
        }
    }
    for (side, mut seen) in results {
        let rate = seen.grants as f64 / seen.window.as_secs_f64();
        let latencies = &mut seen.latencies_us;
        let (p50, p90, p99, max) = (
            percentile(latencies, 0.50),
            percentile(latencies, 0.90),
            percentile(latencies, 0.99),
            percentile(latencies, 1.0),
        );
        let cpu_us = seen.cpu.as_secs_f64() * 1e6 / seen.grants.max(1) as f64;
        figures.put(&format!("c{locks}_{side}_grants_s"), rate);
        figures.put(&format!("c{locks}_{side}_p50_us"), p50);
        figures.put(&format!("c{locks}_{side}_p99_us"), p99);
        figures.put(&format!("c{locks}_{side}_cpu_us"), cpu_us);
        println!(
            "#   {side}: {rate:.0} grants/s, acquire p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} grants, client CPU {cpu_us:.0} µs per grant)",
            p50 / 1e3,
            p90 / 1e3,
            p99 / 1e3,
            max / 1e3,
            seen.grants
        );
    }
    Ok(())
}

#[cfg(feature = "rslock")]
async fn rslock_contend(
    url: &str,
    locks: usize,
    prefix: &str,
    window: Duration,
) -> Result<Option<Contention>, BoxError> {
    let manager = rslock::LockManager::new(vec![url.to_owned()]);
    let giver = manager.clone();
    let seen = contend(
        locks,
        prefix,
        window,
        move |name| {
            let manager = manager.clone();
            async move {
                // `acquire` retries until it gets the lock: up to 3 tries with a random sleep
                // of up to 200 ms between them, then again (rslock's defaults).
                Ok(manager
                    .acquire_no_guard(name.as_bytes(), Duration::from_secs(10))
                    .await?)
            }
        },
        move |lock: rslock::Lock| {
            let manager = giver.clone();
            async move {
                manager.unlock(&lock).await;
                Ok(())
            }
        },
    )
    .await?;
    Ok(Some(seen))
}

#[cfg(not(feature = "rslock"))]
async fn rslock_contend(
    _url: &str,
    _locks: usize,
    _prefix: &str,
    _window: Duration,
) -> Result<Option<Contention>, BoxError> {
    Ok(None)
}

// ---- a typical test's workload: the fake against loopback Redis ----

/// Lock cycles in the workload.
const WORKLOAD_LOCK_CYCLES: usize = 100;
/// Groups of four plain commands (`SET`, `GET`, `HSET`, `EXPIRE`): 1,000 commands.
const WORKLOAD_GROUPS: usize = 250;

/// How long one run of the workload took, part by part.
#[derive(Clone, Copy, Debug)]
struct WorkloadRun {
    /// Creating the engine, or connecting, and making the lock client.
    setup: Duration,
    /// The 1,000 plain commands.
    commands: Duration,
    /// The 100 lock cycles.
    locks: Duration,
}

/// The workload a test of Redis-using code might run: 1,000 plain commands through the `redis`
/// crate's typed API, then 100 acquire+release cycles through the lock client. Returns how long
/// each of the two parts took.
async fn test_workload<C: ConnectionLike + Send + Sync>(
    conn: &mut C,
    locks: &LockClient,
    prefix: &str,
) -> Result<(Duration, Duration), BoxError> {
    let started = Instant::now();
    for i in 0..WORKLOAD_GROUPS {
        let key = format!("{prefix}:k{i}");
        conn.set::<_, _, ()>(&key, "some value").await?;
        let value: Option<String> = conn.get(&key).await?;
        if value.as_deref() != Some("some value") {
            return Err(format!("GET {key} returned {value:?}").into());
        }
        conn.hset::<_, _, _, ()>(format!("{prefix}:h{i}"), "field", i)
            .await?;
        conn.expire::<_, ()>(&key, 60).await?;
    }
    let commands_done = Instant::now();
    for i in 0..WORKLOAD_LOCK_CYCLES {
        let guard = locks
            .lock_with_lease(&format!("{prefix}:lock{i}"), Duration::from_secs(10))
            .await?;
        guard.unlock().await?;
    }
    Ok((commands_done - started, commands_done.elapsed()))
}

/// One run on the fake: set up an engine, a connection and a lock client, run the workload.
async fn workload_on_fake(run: usize) -> Result<WorkloadRun, BoxError> {
    let started = Instant::now();
    let engine = shared(lock_core::fake::engine(TokioClock::new()));
    let mut conn = FakeConnection::new(engine.clone(), NodeId(1));
    let locks = LockClient::new(FakeBackend::new(engine, NodeId(2)), LockConfig::default())?;
    let setup = started.elapsed();
    let (commands, locks) =
        test_workload(&mut conn, &locks, &format!("bench:wl:fake:{run}")).await?;
    Ok(WorkloadRun {
        setup,
        commands,
        locks,
    })
}

/// The same run on a real Redis: connect, set up the lock client, run the workload.
async fn workload_on_redis(url: &str, run: usize) -> Result<WorkloadRun, BoxError> {
    let started = Instant::now();
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    let locks = LockClient::new(
        RedisBackend::connect(url, Duration::from_secs(3)).await?,
        LockConfig::default(),
    )?;
    let setup = started.elapsed();
    let (commands, locks) =
        test_workload(&mut conn, &locks, &format!("bench:wl:redis:{run}")).await?;
    Ok(WorkloadRun {
        setup,
        commands,
        locks,
    })
}

/// The medians of a side's runs, in ms: (workload, commands part, locks part, with setup).
fn workload_medians(runs: &[WorkloadRun]) -> [f64; 4] {
    let ms = |f: &dyn Fn(&WorkloadRun) -> Duration| {
        let mut v: Vec<f64> = runs.iter().map(|r| f(r).as_secs_f64() * 1e3).collect();
        median(&mut v)
    };
    [
        ms(&|r| r.commands + r.locks),
        ms(&|r| r.commands),
        ms(&|r| r.locks),
        ms(&|r| r.setup + r.commands + r.locks),
    ]
}

async fn workload(url: &str, budget: Duration, figures: &Figures) -> Result<(), BoxError> {
    println!(
        "# a test's workload ({} commands, {WORKLOAD_LOCK_CYCLES} lock cycles): fake vs loopback redis, current-thread runtime",
        WORKLOAD_GROUPS * 4
    );
    let mut fake = Vec::new();
    let mut real = Vec::new();
    let started = Instant::now();
    let mut run = 0;
    // Alternate: one run on Redis, then fake runs for about as long, so both sides see the same
    // neighbours.
    while started.elapsed() < budget || real.len() < 3 {
        let on_redis = workload_on_redis(url, run).await?;
        real.push(on_redis);
        let fake_until = Instant::now() + on_redis.setup + on_redis.commands + on_redis.locks;
        loop {
            fake.push(workload_on_fake(run).await?);
            if Instant::now() >= fake_until {
                break;
            }
        }
        run += 1;
    }
    for (side, runs) in [("fake", &fake), ("redis", &real)] {
        let [total, commands, locks, with_setup] = workload_medians(runs);
        figures.put(&format!("wl_{side}_ms"), total);
        figures.put(&format!("wl_{side}_commands_ms"), commands);
        figures.put(&format!("wl_{side}_locks_ms"), locks);
        figures.put(&format!("wl_{side}_setup_ms"), with_setup);
        figures.put(&format!("wl_{side}_runs"), runs.len() as f64);
        println!(
            "#   {side}: {total:.2} ms per workload ({commands:.2} commands + {locks:.2} lock cycles), {with_setup:.2} ms with setup, {} runs",
            runs.len()
        );
    }
    Ok(())
}

// ---- the watchdog with many holds ----

/// Watchdog holds in the watchdog section.
const WATCHDOG_HOLDS: usize = 10_000;
/// The watchdog timeout there: a pass every second.
const WATCHDOG_TIMEOUT_MS: u64 = 3_000;
/// Passes measured.
const WATCHDOG_PASSES: u32 = 5;

/// One renew call as the backend saw it.
#[derive(Clone, Copy, Debug)]
struct RenewCall {
    sent: Duration,
    answered: Duration,
    keys: usize,
    ok: bool,
}

/// A [`Backend`] that passes everything to `inner` and records each renew call.
struct RecordingBackend<B> {
    inner: B,
    origin: Instant,
    renewals: Arc<Mutex<Vec<RenewCall>>>,
}

impl<B: Backend> Backend for RecordingBackend<B> {
    async fn eval(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        if !std::ptr::eq(call.script, &renew_batch::SCRIPT) {
            return self.inner.eval(call).await;
        }
        let sent = self.origin.elapsed();
        let result = self.inner.eval(call).await;
        let record = RenewCall {
            sent,
            answered: self.origin.elapsed(),
            keys: call.keys.len(),
            ok: result.is_ok(),
        };
        self.renewals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
        result
    }

    async fn command(&self, argv: &[Bytes]) -> Result<Reply, BackendError> {
        self.inner.command(argv).await
    }

    fn subscribe(&self, channel: &Bytes) -> impl Future<Output = Result<(), BackendError>> + Send {
        self.inner.subscribe(channel)
    }

    fn unsubscribe(
        &self,
        channel: &Bytes,
    ) -> impl Future<Output = Result<(), BackendError>> + Send {
        self.inner.unsubscribe(channel)
    }

    fn next_event(&self) -> impl Future<Output = PubSubEvent> + Send {
        self.inner.next_event()
    }
}

/// A pass of the watchdog: its renew calls, from the first sent to the last answered.
#[derive(Debug, Default)]
struct Pass {
    calls: usize,
    keys: usize,
    failed: usize,
    first_sent: Duration,
    last_answered: Duration,
}

/// Groups renew calls into passes: a call sent more than half a period after the previous one
/// starts a new pass.
fn passes(mut calls: Vec<RenewCall>, period: Duration) -> Vec<Pass> {
    calls.sort_by_key(|c| c.sent);
    let mut passes: Vec<Pass> = Vec::new();
    let mut previous: Option<Duration> = None;
    for call in calls {
        if previous.is_none_or(|p| call.sent - p > period / 2) {
            passes.push(Pass {
                first_sent: call.sent,
                ..Pass::default()
            });
        }
        previous = Some(call.sent);
        let pass = passes.last_mut().expect("a pass was just started");
        pass.calls += 1;
        pass.keys += call.keys;
        pass.failed += usize::from(!call.ok);
        pass.last_answered = pass.last_answered.max(call.answered);
    }
    passes
}

async fn watchdog(url: &str, figures: &Figures) -> Result<(), BoxError> {
    let config = LockConfig {
        watchdog_timeout: Millis(WATCHDOG_TIMEOUT_MS),
        ..LockConfig::default()
    };
    let period = config.watchdog_period().to_duration();
    println!(
        "# watchdog: {WATCHDOG_HOLDS} holds, batch {}, a pass every {period:?}",
        config.batch_size
    );
    let renewals = Arc::new(Mutex::new(Vec::new()));
    let backend = RecordingBackend {
        inner: RedisBackend::connect(url, config.response_timeout().to_duration()).await?,
        origin: Instant::now(),
        renewals: renewals.clone(),
    };
    let client = LockClient::new(backend, config)?;

    let started = Instant::now();
    let mut takers = JoinSet::new();
    let per_task = WATCHDOG_HOLDS / TASKS;
    for task in 0..TASKS {
        let client = client.clone();
        takers.spawn(async move {
            let mut guards = Vec::with_capacity(per_task);
            for i in 0..per_task {
                guards.push(client.lock(&format!("bench:wd:{task}:{i}")).await?);
            }
            Ok::<_, BoxError>(guards)
        });
    }
    let mut guards = Vec::with_capacity(WATCHDOG_HOLDS);
    while let Some(joined) = takers.join_next().await {
        guards.extend(joined??);
    }
    println!(
        "#   {} holds taken in {:.2} s",
        guards.len(),
        started.elapsed().as_secs_f64()
    );
    // Let a pass that overlaps the last grants finish, then measure whole passes only.
    tokio::time::sleep(period + period / 2).await;
    renewals.lock().unwrap_or_else(|e| e.into_inner()).clear();
    tokio::time::sleep(period * WATCHDOG_PASSES + period / 2).await;
    let calls = std::mem::take(&mut *renewals.lock().unwrap_or_else(|e| e.into_inner()));
    let complete: Vec<Pass> = passes(calls, period)
        .into_iter()
        .filter(|p| p.keys == guards.len())
        .collect();
    if complete.is_empty() {
        return Err("no complete watchdog pass was seen".into());
    }
    let mut walls: Vec<f64> = complete
        .iter()
        .map(|p| (p.last_answered - p.first_sent).as_secs_f64() * 1e3)
        .collect();
    let calls_per_pass =
        complete.iter().map(|p| p.calls).sum::<usize>() as f64 / complete.len() as f64;
    let failed: usize = complete.iter().map(|p| p.failed).sum();
    let wall_median = median(&mut walls);
    let wall_max = walls[walls.len() - 1];
    figures.put("wd_holds", guards.len() as f64);
    figures.put("wd_passes", complete.len() as f64);
    figures.put("wd_calls_per_pass", calls_per_pass);
    figures.put("wd_failed_calls", failed as f64);
    figures.put("wd_pass_ms_median", wall_median);
    figures.put("wd_pass_ms_max", wall_max);
    println!(
        "#   {} passes: {calls_per_pass:.0} renew calls each, {wall_median:.1} ms median wall ({wall_max:.1} ms max), {failed} failed calls",
        complete.len()
    );
    let mut releasers = JoinSet::new();
    let mut chunks = Vec::new();
    while !guards.is_empty() {
        let n = guards.len().min(per_task);
        chunks.push(guards.split_off(guards.len() - n));
    }
    for chunk in chunks {
        releasers.spawn(async move {
            for guard in chunk {
                guard.unlock().await?;
            }
            Ok::<_, BoxError>(())
        });
    }
    while let Some(joined) = releasers.join_next().await {
        joined??;
    }
    Ok(())
}

// ---- statistics ----

/// The CPU time (user + system) the Redis server has used so far (`INFO cpu`).
async fn server_cpu(conn: &mut impl ConnectionLike) -> Result<Duration, BoxError> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| {
                l.strip_prefix(name)?
                    .strip_prefix(':')?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0)
    };
    Ok(Duration::from_secs_f64(
        field("used_cpu_user") + field("used_cpu_sys"),
    ))
}

/// The CPU time (user + system) this process has used so far, from `/proc/self/stat`, in clock
/// ticks of 10 ms; zero where that file does not exist.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line, 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The median of `values` (sorts them).
fn median(values: &mut [f64]) -> f64 {
    percentile(values, 0.5)
}

/// The `q` quantile of `values` by the nearest-rank method (sorts them); 0 when empty.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = (q * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}
