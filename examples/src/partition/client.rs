//! A workload client: one process, in a namespace of its own, that takes the lock, writes to the
//! resource under it and gives it back, over and over, recording each step in its history.
//!
//! Its mode says how careful it is:
//! - `unfenced`: writes with no token (what a lock alone gives);
//! - `fenced`: draws a fencing token (`acquire(..).fenced()`) and writes with it;
//! - `fenced-sync`: as `fenced`, with the replica check (`SyncReplicas`), so each lock write
//!   waits for a replica;
//! - `scoped`: writes with no token inside `LockGuard::run`, which drops the work the moment the
//!   hold may be lost.
//!
//! Each hold writes three times, spread over a drawn work time, so a hold has a span at the
//! resource that another hold's writes can land inside. A watcher task records when the guard
//! says the hold is lost or may be lost.

use super::history::{Kind, Recorder};
use super::resource::Write;
use super::servers::Topology;
use lock_core::seed::SplitMix64;
use lock_core::{
    ClusterBackend, HoldState, LockClient, LockConfig, LockError, LockGuard, Millis,
    SentinelBackend, SyncReplicas,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How a client uses the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Mode {
    /// No fencing token.
    Unfenced,
    /// A fencing token on every write.
    Fenced,
    /// A fencing token, and the replica check on every lock write.
    FencedSync,
    /// No token; the work runs inside `LockGuard::run`.
    Scoped,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 4] = [Mode::Unfenced, Mode::Fenced, Mode::FencedSync, Mode::Scoped];

    /// The name on the command line and in client names.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Unfenced => "unfenced",
            Mode::Fenced => "fenced",
            Mode::FencedSync => "fenced-sync",
            Mode::Scoped => "scoped",
        }
    }

    /// Whether its writes carry a token.
    pub fn fenced(self) -> bool {
        matches!(self, Mode::Fenced | Mode::FencedSync)
    }

    /// The lock name of the mode: one hash tag for all, so on a cluster they share a shard.
    pub fn lock(self) -> String {
        format!("{{pt}}{}", self.name())
    }

    /// The lock's settings: a 3 s watchdog lease (renewed every second), so faults of a few
    /// seconds outlive it; the replica check only in `fenced-sync`.
    pub fn config(self) -> LockConfig {
        LockConfig {
            watchdog_timeout: Millis::from_secs(3),
            sync_replicas: (self == Mode::FencedSync).then(SyncReplicas::default),
            ..LockConfig::default()
        }
    }
}

/// What a client is told to do.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Its name (`<mode>-<index>`), its actor in the history.
    pub name: String,
    /// Its mode.
    pub mode: Mode,
    /// Which servers.
    pub topology: Topology,
    /// The sentinels' or the cluster nodes' URLs.
    pub urls: Vec<String>,
    /// The resource's address.
    pub resource: String,
    /// The run's epoch, unix ms.
    pub epoch_ms: u64,
    /// When to stop, ms after the epoch.
    pub stop_ms: u64,
    /// Its seed (work times).
    pub seed: u64,
}

type Shared = Arc<Mutex<Recorder>>;

fn record(rec: &Shared, kind: Kind, lock: &str, hold: u64, token: Option<u64>, detail: &str) {
    let mut guard = match rec.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard.record(kind, lock, hold, token, detail);
}

async fn connect(plan: &Plan) -> Result<LockClient, String> {
    let config = plan.mode.config();
    let timeout = config.response_timeout().to_duration();
    let result = match plan.topology {
        Topology::Sentinel => {
            let backend =
                SentinelBackend::connect_sentinel(&plan.urls, super::servers::MASTER, timeout);
            LockClient::new(backend.await.map_err(|e| e.to_string())?, config)
        }
        Topology::Cluster => {
            let backend = ClusterBackend::connect(&plan.urls, timeout);
            LockClient::new(backend.await.map_err(|e| e.to_string())?, config)
        }
    };
    result.map_err(|e| e.to_string())
}

fn now_ms(plan: &Plan) -> u64 {
    super::history::since_epoch_us(plan.epoch_ms) / 1000
}

/// Runs the plan to its stop time.
pub async fn run(plan: Plan, recorder: Recorder) {
    let rec: Shared = Arc::new(Mutex::new(recorder));
    let lock = plan.mode.lock();
    let client = loop {
        match connect(&plan).await {
            Ok(client) => break client,
            Err(e) if now_ms(&plan) < plan.stop_ms => {
                record(
                    &rec,
                    Kind::NotGranted,
                    &lock,
                    0,
                    None,
                    &format!("connect: {e}"),
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(_) => return,
        }
    };
    let mut rng = SplitMix64::new(plan.seed);
    let mut resource = Resource::new(&plan.resource);
    let mut hold = 0;
    while now_ms(&plan) < plan.stop_ms {
        hold += 1;
        let work = Duration::from_millis(150 + rng.next_u64() % 600);
        one_hold(&client, &plan, &rec, &mut resource, hold, work).await;
        tokio::time::sleep(Duration::from_millis(rng.next_u64() % 50)).await;
    }
    client.abort();
}

async fn one_hold(
    client: &LockClient,
    plan: &Plan,
    rec: &Shared,
    resource: &mut Resource,
    hold: u64,
    work: Duration,
) {
    let lock = plan.mode.lock();
    record(rec, Kind::Acquiring, &lock, hold, None, "");
    let acquire = client.acquire(&lock);
    let acquire = if plan.mode.fenced() {
        acquire.fenced()
    } else {
        acquire
    };
    let guard = match acquire.wait(Duration::from_secs(2)).await {
        Ok(Some(guard)) => guard,
        Ok(None) => {
            return record(
                rec,
                Kind::NotGranted,
                &lock,
                hold,
                None,
                "wait budget spent",
            );
        }
        Err(e) => {
            record(rec, Kind::NotGranted, &lock, hold, None, &e.to_string());
            return tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let token = guard.token();
    record(rec, Kind::Granted, &lock, hold, token, "");
    watch_loss(&guard, rec, &lock, hold);
    let writes = Writes {
        plan,
        rec,
        hold,
        token,
        work,
    };
    if plan.mode == Mode::Scoped {
        // The work's end is where the client stops believing it holds: `run` unlocks next.
        let result = guard
            .run(async |_| {
                writes.all(resource).await;
                record(rec, Kind::Unlock, &lock, hold, None, "");
            })
            .await;
        match result {
            Ok(()) => record(rec, Kind::Unlocked, &lock, hold, None, "released"),
            Err(LockError::HoldLost { state, .. }) => {
                record(rec, Kind::Stopped, &lock, hold, None, &state.to_string());
            }
            Err(e) => record(rec, Kind::Unlocked, &lock, hold, None, &e.to_string()),
        }
        return;
    }
    writes.all(resource).await;
    record(rec, Kind::Unlock, &lock, hold, None, "");
    let outcome = match guard.unlock().await {
        Ok(outcome) => format!("{outcome:?}"),
        Err(e) => e.to_string(),
    };
    record(rec, Kind::Unlocked, &lock, hold, None, &outcome);
}

/// Records the moment the guard reports the hold lost or possibly lost (not its own release).
fn watch_loss(guard: &LockGuard, rec: &Shared, lock: &str, hold: u64) {
    let mut status = guard.watch();
    let (rec, lock) = (Arc::clone(rec), lock.to_owned());
    tokio::spawn(async move {
        loop {
            let state = status.borrow_and_update().state;
            match state {
                HoldState::Valid => {}
                HoldState::Released => return,
                other => {
                    return record(&rec, Kind::Lost, &lock, hold, None, &other.to_string());
                }
            }
            if status.changed().await.is_err() {
                return;
            }
        }
    });
}

/// The writes of one hold.
struct Writes<'a> {
    plan: &'a Plan,
    rec: &'a Shared,
    hold: u64,
    token: Option<u64>,
    work: Duration,
}

impl Writes<'_> {
    /// Three writes, a third of the work time apart; a refused write ends the work (the resource
    /// said the hold is stale).
    async fn all(&self, resource: &mut Resource) {
        for seq in 0..3 {
            if seq > 0 {
                tokio::time::sleep(self.work / 3).await;
            }
            let write = Write {
                lock: self.plan.mode.lock(),
                writer: self.plan.name.clone(),
                hold: self.hold,
                seq,
                token: self.token,
            };
            match resource.send(&write).await {
                Ok(reply) if reply == "OK" => {}
                Ok(_) => return, // the resource recorded the rejection
                Err(e) => {
                    record(
                        self.rec,
                        Kind::WriteFailed,
                        &write.lock,
                        self.hold,
                        self.token,
                        &e,
                    );
                    return;
                }
            }
        }
    }
}

/// A connection to the resource, made again after a failure.
struct Resource {
    addr: String,
    conn: Option<BufReader<TcpStream>>,
}

impl Resource {
    fn new(addr: &str) -> Resource {
        Resource {
            addr: addr.to_owned(),
            conn: None,
        }
    }

    async fn send(&mut self, write: &Write) -> Result<String, String> {
        let exchange = async {
            if self.conn.is_none() {
                let stream = TcpStream::connect(&self.addr)
                    .await
                    .map_err(|e| e.to_string())?;
                self.conn = Some(BufReader::new(stream));
            }
            let conn = self.conn.as_mut().ok_or("no connection")?;
            let line = format!("{}\n", write.line());
            conn.get_mut()
                .write_all(line.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let mut reply = String::new();
            match conn.read_line(&mut reply).await {
                Ok(0) => Err("the resource closed the connection".to_owned()),
                Ok(_) => Ok(reply.trim().to_owned()),
                Err(e) => Err(e.to_string()),
            }
        };
        let result = tokio::time::timeout(Duration::from_secs(2), exchange).await;
        let result = result.unwrap_or_else(|_| Err("timed out".to_owned()));
        if result.is_err() {
            self.conn = None;
        }
        result
    }
}
