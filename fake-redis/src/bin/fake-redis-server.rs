//! `fake-redis-server`: the fake engine as a RESP2/RESP3 TCP server, for tests in any language.
//!
//! A thin `main` around [`fake_redis::server`]: flags, logging, signals (see
//! the README, "fake-redis-server"). Built with the crate's `server-bin` feature (a default one),
//! which brings in the flag parser and the log output only this binary uses.

use bytes::Bytes;
use clap::Parser;
use fake_redis::Clock;
use fake_redis::server::{
    ClockChoice, DEFAULT_MAXCLIENTS, DEFAULT_PORT, DEFAULT_TCP_BACKLOG, Door, Server, ServerConfig,
    ServerGroup,
};
use std::net::IpAddr;
use std::process::ExitCode;

/// The clock the engine reads.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ClockFlag {
    /// The machine's wall clock, as a real Redis.
    System,
    /// A virtual clock that only `FAKE.ADVANCE` moves.
    Virtual,
}

/// A fake Redis 7.0 server on a virtual clock, with fault injection (FAKE.* commands).
#[derive(Debug, Parser)]
#[command(name = "fake-redis-server", version)]
struct Args {
    /// TCP port to listen on (0 picks a free one; the log says which).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The clock: the wall clock, or a virtual one moved by FAKE.ADVANCE.
    #[arg(long, value_enum, default_value_t = ClockFlag::System)]
    clock: ClockFlag,
    /// Where the virtual clock starts, unix ms [default: the host's time at start]. The log
    /// names the epoch either way, so a run can be replayed with this flag.
    #[arg(long)]
    epoch_ms: Option<i64>,
    /// Seeds active expiry sampling and the fault plan's random draws.
    #[arg(long)]
    seed: Option<u64>,
    /// Clients must AUTH with this password first.
    #[arg(long)]
    requirepass: Option<String>,
    /// FAKE.* admin commands need `FAKE.AUTH <this>` first on each connection. Without it they
    /// are open on a loopback --bind and refused on any other.
    #[arg(long)]
    admin_password: Option<String>,
    /// Refuse connections beyond this many (with Redis's error). Lowered at start to what the
    /// open-file limit allows, less 32, after raising the soft limit to the hard one.
    #[arg(
        long,
        default_value_t = DEFAULT_MAXCLIENTS as u64,
        value_parser = clap::value_parser!(u64).range(1..=4_294_967_295)
    )]
    maxclients: u64,
    /// The listen queue's length (Redis's tcp-backlog; Linux caps it at net.core.somaxconn).
    #[arg(long, default_value_t = DEFAULT_TCP_BACKLOG)]
    tcp_backlog: u32,
    /// Threads serving connections. The engine runs one command at a time whatever this is (as
    /// Redis does); 1, the default, also spares the lock and cross-thread wake-ups.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Milliseconds a script runs (with --clock system) before other clients get BUSY and may
    /// SCRIPT KILL it (Redis's busy-reply-threshold). On the virtual clock a script is measured
    /// in Lua instructions instead, so that runs replay.
    #[arg(
        long,
        alias = "lua-time-limit",
        value_name = "MS",
        default_value_t = 5000
    )]
    busy_reply_threshold: u64,
    /// Whether clients may run DEBUG (Redis's enable-debug-command): no, as Redis 7.0's
    /// default; yes; or local, which the fake treats as yes (it cannot tell a local client from
    /// another). It cannot change at run time, as in Redis.
    #[arg(long, value_name = "yes|local|no", default_value = "no")]
    enable_debug_command: fake_redis::DebugCommand,
    /// The release to imitate: its command set, and who the server says it is (INFO, HELLO, a
    /// script's redis.REDIS_VERSION). Redis 7.0.15 by default.
    #[arg(
        long,
        value_name = "redis-7.0|redis-7.4|valkey-9.1",
        default_value = "redis-7.0"
    )]
    server_version: fake_redis::Version,
    /// Serve a primary, N replicas and a Sentinel, in this one process on one clock and seed:
    /// the primary on --port, replica i on --port + 1 + i, the Sentinel on --port + 1 + N (with
    /// --port 0, a free run of N + 2 ports; the log names each). ROLE and INFO replication
    /// announce these ports; the Sentinel answers SENTINEL get-master-addr-by-name, masters,
    /// replicas, failover and the others clients use, and publishes +switch-master. With
    /// --cluster: the replicas of each shard, and no Sentinel.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1000))]
    replicas: Option<u16>,
    /// Serve a Redis Cluster of SHARDS primaries, each with --replicas replicas (default 0),
    /// in this one process on one clock and seed, as `redis-cli --cluster create` lays one out:
    /// the primary of shard s on --port + s, replica r of shard s on
    /// --port + SHARDS * (1 + r) + s (with --port 0, a free run of SHARDS * (1 + N) ports; the
    /// log names each), the 16384 slots split evenly over the shards in order. CLUSTER SLOTS,
    /// NODES and SHARDS, MOVED and ASK announce these ports and the --bind address.
    #[arg(long, value_name = "SHARDS", value_parser = clap::value_parser!(u16).range(1..=1000), conflicts_with = "sentinel_master_name")]
    cluster: Option<u16>,
    /// How far behind each replica applies its primary's writes, ms (with --replicas).
    #[arg(long, value_name = "MS", default_value_t = 0, requires = "replicas")]
    replica_lag_ms: u32,
    /// The master name the Sentinel watches (with --replicas).
    #[arg(long, value_name = "NAME", default_value = fake_redis::DEFAULT_MASTER_NAME, requires = "replicas")]
    sentinel_master_name: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.epoch_ms.is_some() && matches!(args.clock, ClockFlag::System) {
        eprintln!("--epoch-ms sets where the virtual clock starts: add --clock virtual");
        return ExitCode::from(2);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let open_files =
        fake_redis::server::fit_open_files(usize::try_from(args.maxclients).unwrap_or(usize::MAX));
    let mut config = ServerConfig {
        bind: args.bind,
        port: args.port,
        clock: match args.clock {
            ClockFlag::System => ClockChoice::System,
            ClockFlag::Virtual => ClockChoice::Virtual {
                // The host's time, so that a client computing `now + 60 s` from its own clock
                // (`EXPIREAT`) gets a TTL of 60 s, as from a real server.
                epoch_ms: args
                    .epoch_ms
                    .unwrap_or_else(|| fake_redis::SystemClock.now_ms()),
            },
        },
        requirepass: args.requirepass.map(Bytes::from),
        maxclients: open_files.maxclients,
        maxclients_ceiling: open_files.ceiling,
        tcp_backlog: args.tcp_backlog,
        admin_password: args.admin_password.map(Bytes::from),
        busy_reply_threshold: std::time::Duration::from_millis(args.busy_reply_threshold),
        enable_debug_command: args.enable_debug_command,
        version: args.server_version,
        ..ServerConfig::default()
    };
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    memory::spawn_trimmer();
    // Multi-threaded even with one worker: a runaway script's thread hands its worker over to
    // a fresh thread, which a current-thread runtime cannot do (see `fake_redis::server`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(args.threads))
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(shards) = args.cluster {
        let lag = fake_redis::ReplicaLag::fixed(i64::from(args.replica_lag_ms));
        let replicas = args.replicas.unwrap_or(0);
        return runtime.block_on(serve_clustered(config, shards, replicas, lag));
    }
    if let Some(replicas) = args.replicas {
        let lag = fake_redis::ReplicaLag::fixed(i64::from(args.replica_lag_ms));
        return runtime.block_on(serve_replicated(
            config,
            replicas,
            lag,
            &args.sentinel_master_name,
        ));
    }
    runtime.block_on(async move {
        let listener = match fake_redis::server::bind(&config).await {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("{e}");
                return ExitCode::FAILURE;
            }
        };
        // Before anything names a port: a signal from whoever reads it finds the handlers.
        let shutdown = shutdown_signal();
        log_start(&config);
        Server::new(&config).run(listener, shutdown).await;
        ExitCode::SUCCESS
    })
}

/// `--replicas <n>`: a primary, its replicas and a Sentinel on consecutive ports.
async fn serve_replicated(
    config: ServerConfig,
    replicas: u16,
    lag: fake_redis::ReplicaLag,
    master_name: &str,
) -> ExitCode {
    let Some((listeners, ports)) = bind_doors(&config, usize::from(replicas) + 2).await else {
        return ExitCode::FAILURE;
    };
    let shutdown = shutdown_signal();
    log_start(&config);
    for (door, port) in ServerGroup::replicated_doors(replicas)
        .iter()
        .zip(&ports.all)
    {
        match door {
            Door::Node(node) => tracing::info!(port, "{node} on port {port}"),
            Door::Sentinel => tracing::info!(
                port,
                "sentinel on port {port}, watching the primary as {master_name:?}"
            ),
        }
    }
    let group = ServerGroup::replicated(&config, ports.base, replicas, lag, master_name);
    group.run(listeners, shutdown).await;
    ExitCode::SUCCESS
}

/// `--cluster <shards> --replicas <n>`: every node of a cluster on consecutive ports.
async fn serve_clustered(
    config: ServerConfig,
    shards: u16,
    replicas: u16,
    lag: fake_redis::ReplicaLag,
) -> ExitCode {
    let doors = ServerGroup::clustered_doors(shards, replicas);
    let Some((listeners, ports)) = bind_doors(&config, doors.len()).await else {
        return ExitCode::FAILURE;
    };
    let shutdown = shutdown_signal();
    log_start(&config);
    for (door, port) in doors.iter().zip(&ports.all) {
        if let Door::Node(node) = door {
            let shard = node.shard();
            match node.replica_index() {
                None => tracing::info!(port, "shard {shard}'s primary on port {port}"),
                Some(r) => tracing::info!(port, "shard {shard}'s replica {r} on port {port}"),
            }
        }
    }
    let group = ServerGroup::clustered(&config, ports.base, shards, replicas, lag);
    group.run(listeners, shutdown).await;
    ExitCode::SUCCESS
}

/// The ports a group's listeners took: every one, in order, and the first.
struct Ports {
    all: Vec<u16>,
    base: u16,
}

/// Binds `count` consecutive doors for a group (`server::bind_group`), or logs why not.
async fn bind_doors(
    config: &ServerConfig,
    count: usize,
) -> Option<(Vec<tokio::net::TcpListener>, Ports)> {
    let listeners = match fake_redis::server::bind_group(config, count).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{e}");
            return None;
        }
    };
    let all = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<Vec<u16>>>();
    match all {
        Ok(all) if !all.is_empty() => {
            let base = all[0];
            Some((listeners, Ports { all, base }))
        }
        Ok(_) => None,
        Err(e) => {
            tracing::error!("a listener has no address: {e}");
            None
        }
    }
}

/// The start's log lines: the virtual clock's epoch (to replay with), then the settings.
fn log_start(config: &ServerConfig) {
    if let ClockChoice::Virtual { epoch_ms } = config.clock {
        tracing::info!(
            epoch_ms,
            "virtual clock starts at {epoch_ms} (replay with --epoch-ms {epoch_ms})"
        );
    }
    tracing::info!(
        clock = ?config.clock,
        seed = config.seed,
        auth = config.requirepass.is_some(),
        maxclients = config.maxclients,
        "starting"
    );
}

/// Resolves on SIGINT or SIGTERM.
///
/// The handlers are installed here, when it is called, not when the future is first polled: the
/// server's accept loop may serve a first connection before it polls this future, and a SIGTERM
/// in that window would otherwise meet the default action and kill the process instead of
/// stopping it gracefully. Callers call it before they log a port.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => tracing::info!("SIGINT received"),
                        _ = terminate.recv() => tracing::info!("SIGTERM received"),
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                    tracing::info!("interrupt received");
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("interrupt received");
        }
    }
}

/// Memory given back to the operating system after large releases (glibc's malloc only).
///
/// glibc returns memory to the system only from the top of each heap. What a million keys leave
/// behind when `FLUSHALL` frees them (small blocks spread over the whole heap), or a burst of
/// connections when it ends, stays mapped, and the server's resident set stays at its peak:
/// Redis, on jemalloc, purges after a flush and drops back. `malloc_trim(0)` hands every whole
/// free page back. A thread of its own reads malloc's free total twice a second and trims when
/// it grew by [`STEP`](memory::STEP) since its low point or the last trim: nothing is paid
/// while data stays, one trim per large release.
///
/// Trimming, rather than another allocator for the binary: glibc's is already linked (`libc` is
/// already in the dependency tree), the engine's speed was tuned on it, and a library user
/// (tests linking `fake_redis`) keeps whatever allocator they have.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod memory {
    use std::time::Duration;

    /// How much free memory malloc must have gained before a trim is worth its walk.
    pub(crate) const STEP: usize = 32 * 1024 * 1024;

    pub(crate) fn spawn_trimmer() {
        let spawned = std::thread::Builder::new()
            .name("malloc-trim".into())
            .spawn(run);
        if let Err(e) = spawned {
            tracing::warn!("no thread to give freed memory back to the system: {e}");
        }
    }

    // The two foreign calls of this module; each is a plain C function of glibc's with no
    // pointer argument.
    #[allow(unsafe_code)]
    fn free_bytes() -> usize {
        // SAFETY: mallinfo2 takes no argument and only reads malloc's own counters.
        unsafe { libc::mallinfo2() }.fordblks
    }

    #[allow(unsafe_code)]
    fn trim() {
        // SAFETY: malloc_trim is thread-safe and only releases pages malloc holds free.
        unsafe { libc::malloc_trim(0) };
    }

    fn run() {
        let mut low = free_bytes();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let free = free_bytes();
            if free >= low.saturating_add(STEP) {
                trim();
                // The trimmed pages still count as free in malloc's total: the next trim waits
                // for that much more.
                low = free_bytes();
            } else {
                low = low.min(free);
            }
        }
    }
}
