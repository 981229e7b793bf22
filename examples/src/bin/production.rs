//! The lock against a real Redis, as a service would use it.
//!
//! `cargo run -p examples --bin production -- --url redis://127.0.0.1:6379/ --name orders`
//!
//! On a Redis Cluster, name some of its nodes: `--cluster redis://10.0.0.1:7000/,redis://10.0.0.2:7000/`.
//! Through Sentinel, name the sentinels and the master they watch:
//! `--sentinel redis://10.0.0.1:26379/,redis://10.0.0.2:26379/ --master mymaster`.
//!
//! Every acquire, renewal and release waits for `--sync-replicas` replicas (default 1, `0` turns
//! the check off) for at most `--sync-timeout` ms, as Redisson's `checkLockSyncedSlaves` does; a
//! primary with no replica connected is not checked.
//!
//! Takes the lock with the watchdog, works past the lease while the log shows the renewals (run
//! with `RUST_LOG=lock_core=debug` to see each one), stops early if the lease may be lost, and
//! unlocks. When the server cannot be reached it says so and exits with an error, without a panic.

use clap::Parser;
use lock_core::{
    ClusterBackend, LockClient, LockConfig, Millis, RedisBackend, SentinelBackend, SyncReplicas,
};
use std::process::ExitCode;
use std::time::Duration;

/// Hold a Redis lock with the watchdog while doing some work.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The Redis to use (any URL the `redis` crate accepts: password, database, TLS).
    #[arg(long, default_value = "redis://127.0.0.1:6379/")]
    url: String,
    /// A Redis Cluster instead: some of its nodes' URLs, comma-separated.
    #[arg(long, conflicts_with = "sentinel")]
    cluster: Option<String>,
    /// A Sentinel-watched primary instead: the sentinels' URLs, comma-separated (with `--master`).
    #[arg(long, requires = "master")]
    sentinel: Option<String>,
    /// The name the sentinels watch the primary under.
    #[arg(long)]
    master: Option<String>,
    /// The lock's name.
    #[arg(long, default_value = "orders")]
    name: String,
    /// The watchdog timeout (the lease, renewed every third of it), ms.
    #[arg(long, default_value_t = 3_000)]
    watchdog_timeout: u64,
    /// How many replicas must acknowledge each lock write (`WAIT`); 0 turns the check off.
    #[arg(long, default_value_t = 1)]
    sync_replicas: u32,
    /// How long the server waits for them, ms (default: 1 s, or half the response timeout).
    #[arg(long)]
    sync_timeout: Option<u64>,
    /// How long to work while holding the lock, ms (longer than the lease, to show the renewals).
    #[arg(long, default_value_t = 7_000)]
    work: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,lock_core=debug".into()),
        )
        .init();
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let sync_replicas = (args.sync_replicas > 0).then(|| SyncReplicas {
        min_replicas: args.sync_replicas,
        timeout: args.sync_timeout.map(Millis),
        ..SyncReplicas::default()
    });
    let config = LockConfig {
        watchdog_timeout: Millis(args.watchdog_timeout),
        sync_replicas,
        ..LockConfig::default()
    };
    let timeout = config.response_timeout().to_duration();
    let urls = |list: &str| list.split(',').map(str::to_owned).collect::<Vec<_>>();
    let client = match (&args.cluster, &args.sentinel, &args.master) {
        (Some(nodes), _, _) => LockClient::new(
            ClusterBackend::connect(&urls(nodes), timeout).await?,
            config,
        )?,
        (None, Some(sentinels), Some(master)) => LockClient::new(
            SentinelBackend::connect_sentinel(&urls(sentinels), master, timeout).await?,
            config,
        )?,
        _ => LockClient::new(RedisBackend::connect(&args.url, timeout).await?, config)?,
    };
    tracing::info!(lock = %args.name, "waiting for the lock");
    let guard = client.lock(&args.name).await?;
    tracing::info!(lock = %args.name, token = ?guard.token(), "working under the lock for {} ms", args.work);
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(args.work)) => {
            tracing::info!("work done");
        }
        loss = guard.lost() => {
            tracing::warn!(?loss, "stopping early: the lease may be lost");
        }
    }
    let outcome = guard.unlock().await?;
    tracing::info!(lock = %args.name, ?outcome, "unlocked");
    Ok(())
}
