//! The front-door proxy of a server: a small TCP relay in the server's namespace that adds
//! latency and loss, since this kernel has no `netem`.
//!
//! It listens on the server's address and relays each connection to the server's inner port. Its
//! faults come from a control file the nemesis writes (`<latency ms> <loss %>`; absent or empty
//! means none), read every 100 ms, so a fault reaches connections already open. Loss on TCP is
//! not a missing byte: the kernel resends a lost segment after its retransmission timeout, so a
//! segment "lost" here is held back by 200 ms (Linux's smallest RTO) before it is relayed.

use lock_core::seed::SplitMix64;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a lost segment costs.
const RETRANSMIT: Duration = Duration::from_millis(200);

/// The faults in force, as the control file last said.
#[derive(Debug, Default)]
struct Faults {
    latency_ms: AtomicU64,
    loss_percent: AtomicU64,
}

impl Faults {
    fn read(&self, control: &std::path::Path) {
        let text = std::fs::read_to_string(control).unwrap_or_default();
        let mut numbers = text
            .split_whitespace()
            .map(|n| n.parse::<u64>().unwrap_or(0));
        let latency = numbers.next().unwrap_or(0).min(10_000);
        let loss = numbers.next().unwrap_or(0).min(100);
        self.latency_ms.store(latency, Ordering::Relaxed);
        self.loss_percent.store(loss, Ordering::Relaxed);
    }
}

/// Relays `listen` to `upstream` until the process ends, with the faults `control` names.
pub async fn serve(
    listen: SocketAddr,
    upstream: SocketAddr,
    control: PathBuf,
    seed: u64,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let faults = Arc::new(Faults::default());
    let watcher = Arc::clone(&faults);
    tokio::spawn(async move {
        loop {
            watcher.read(&control);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut rng = SplitMix64::new(seed);
    loop {
        let (client, _) = listener.accept().await?;
        let faults = Arc::clone(&faults);
        let seeds = (rng.next_u64(), rng.next_u64());
        tokio::spawn(async move {
            let connect = TcpStream::connect(upstream);
            let Ok(Ok(server)) = tokio::time::timeout(Duration::from_secs(1), connect).await else {
                return; // the server is down or stopped: the client sees its connection close
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            let up = pump(client_read, server_write, Arc::clone(&faults), seeds.0);
            let down = pump(server_read, client_write, faults, seeds.1);
            // Either side closing ends the relay: dropping both halves closes the other side.
            tokio::select! {
                _ = up => {}
                _ = down => {}
            }
        });
    }
}

/// Copies `from` to `to`, delaying each chunk by the latency and, with the loss probability, by
/// a retransmission.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    faults: Arc<Faults>,
    seed: u64,
) {
    let mut rng = SplitMix64::new(seed);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut delay = Duration::from_millis(faults.latency_ms.load(Ordering::Relaxed));
        if rng.next_u64() % 100 < faults.loss_percent.load(Ordering::Relaxed) {
            delay += RETRANSMIT;
        }
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
