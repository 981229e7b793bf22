//! One run: a fresh current-thread tokio runtime on paused time, a fake Redis on tokio's clock
//! with the run's seed, one lock client and one connection per client (each its own node of the
//! fault plan), the schedule's faults, and the clients' code, polled by one future that decides
//! who runs.
//!
//! A pause of client `c` is two things at once: the fake holds everything node `c` sends or
//! receives (so its lock's renewals wait out the pause), and the harness does not poll the
//! client's code, so its timers fire late, when it resumes. A crash drops the client's code,
//! stops its lock client ([`LockClient::abort`]) and kills its node on the fake. The server's
//! faults strike at their times through the fixture's handle.
//!
//! Nothing here reads the wall clock or spawns a thread: the trace of a schedule is a function of
//! the schedule (and the clients' code).

use super::Ctx;
use super::record::{Log, SharedLog, Store, What};
use super::schedule::{Fault, Schedule, client_name};
use super::{Race, Server};
use fake_redis::{CommandFate, FakeRedis, NodeId, RequestLog, Trigger};
use lock_core::LockClient;
use lock_core::fake::FakeBackend;
use lock_core::machine::SeededIds;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::{Instant, Sleep};

/// The fault plan's node of client `i`: far from the node numbers connections get by default.
pub(crate) fn node_of(i: usize) -> NodeId {
    NodeId(1_000 + i as u64)
}

/// The longest a run may take, virtual time: a client still running then is reported stalled.
pub(crate) const HORIZON_MS: u64 = 3_600_000;

/// What one run left behind.
pub(crate) struct Played {
    pub entries: Vec<super::record::Entry>,
    /// Every request the clients sent, as text lines.
    pub requests: Vec<String>,
    /// Every fault the fake applied, as text lines.
    pub fault_log: Vec<String>,
    /// The clients still running at the horizon.
    pub stalled: Vec<usize>,
    /// Virtual ms the run took.
    pub end: u64,
}

enum Slot {
    Running(Pin<Box<dyn Future<Output = String>>>),
    Over,
}

struct Client {
    slot: Slot,
    lock: LockClient,
    node: NodeId,
    pauses: Vec<(u64, u64)>,
    crash_at: Option<u64>,
    timer: Pin<Box<Sleep>>,
}

/// Plays `schedule` for `race` and returns what happened.
pub(crate) fn play(race: &Race, schedule: &Schedule) -> Played {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let played = runtime.block_on(run(race, schedule));
    // The servers' and drivers' tasks end with the runtime.
    drop(runtime);
    played
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}

async fn run(race: &Race, schedule: &Schedule) -> Played {
    let mut builder = FakeRedis::builder()
        .tokio_clock()
        .seed(schedule.seed)
        .native_scripts(lock_core::fake::twins());
    if let Server::Sentinel { replicas, lag_ms } = race.server {
        builder = builder
            .sentinel(replicas)
            .replica_lag(Duration::from_millis(lag_ms));
    }
    let redis = builder.start().await;
    let origin = Instant::now();
    let base = unix_ms(redis.now());
    let log = Log::new(origin);
    let requests = RequestLog::new();

    // The client-side faults go into the plan up front, at their absolute times.
    for fault in &schedule.faults {
        let plan = match *fault {
            Fault::Pause { client, at, ms } => {
                fake_redis::Fault::pause(node_of(client), base + at as i64, ms as i64)
            }
            Fault::DropRequest { client, nth } => nth_fault(client, nth, CommandFate::DropRequest),
            Fault::DropReply { client, nth } => nth_fault(client, nth, CommandFate::DropReply),
            Fault::Delay { client, nth, ms } => {
                nth_fault(client, nth, CommandFate::DelayRequest(ms))
            }
            Fault::Crash { client, at } => fake_redis::Fault::Crash {
                node: node_of(client),
                at: base + at as i64,
            },
            // Up front, so that the engine journals the writes a failover may undo from the
            // start; the director makes it fire on time.
            Fault::Failover { at, lag } => fake_redis::Fault::Failover {
                at: base + at as i64,
                lag_ms: lag as i64,
            },
            _ => continue,
        };
        redis.add_fault(plan);
    }

    let timeout = race.config.response_timeout().to_duration();
    let mut clients = Vec::new();
    for (i, worker) in race.workers.iter().enumerate() {
        let node = node_of(i);
        let mut backend = FakeBackend::with_response_timeout(redis.engine().clone(), node, timeout)
            .with_request_log(requests.clone());
        if let Server::Sentinel { replicas, .. } = race.server {
            // The lock's replica check, when its config asks for one, waits for these.
            backend = backend.with_replicas(u32::from(replicas));
        }
        let ids = SeededIds::new(
            schedule
                .seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i as u64 + 1),
        );
        let lock = LockClient::with_ids(backend, race.config.clone(), ids)
            .unwrap_or_else(|e| panic!("the race's lock config: {e}"));
        let observed = log.clone();
        lock.observe(move |e| {
            observed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .hold_event(i, e);
        });
        let ctx = Ctx {
            name: client_name(i),
            index: i,
            lock: lock.clone(),
            redis: redis
                .fake_connection(node)
                .with_request_log(requests.clone()),
            store: Store::new(i, log.clone()),
            fake: redis.clone(),
            node,
            log: log.clone(),
        };
        let pauses = schedule
            .faults
            .iter()
            .filter_map(|f| match *f {
                Fault::Pause { client, at, ms } if client == i => Some((at, at + ms)),
                _ => None,
            })
            .collect();
        let crash_at = schedule
            .faults
            .iter()
            .filter_map(|f| match *f {
                Fault::Crash { client, at } if client == i => Some(at),
                _ => None,
            })
            .min();
        clients.push(Client {
            slot: Slot::Running(worker(ctx)),
            lock,
            node,
            pauses,
            crash_at,
            timer: Box::pin(tokio::time::sleep_until(origin)),
        });
    }

    let mut server_faults: Vec<Fault> = schedule
        .faults
        .iter()
        .copied()
        .filter(|f| f.client().is_none())
        .collect();
    server_faults.sort_by_key(|f| f.at());
    let mut director = Director {
        redis: redis.clone(),
        log: log.clone(),
        origin,
        faults: server_faults.into_iter().collect(),
        timer: Box::pin(tokio::time::sleep_until(origin)),
        clients,
        horizon: Box::pin(tokio::time::sleep_until(
            origin + Duration::from_millis(HORIZON_MS),
        )),
    };
    std::future::poll_fn(|cx| director.poll(cx)).await;

    let stalled: Vec<usize> = director
        .clients
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.slot, Slot::Running(_)))
        .map(|(i, _)| i)
        .collect();
    let end = log.lock().unwrap_or_else(|p| p.into_inner()).now();
    let requests = requests
        .entries()
        .iter()
        .map(|r| request_line(r, base))
        .collect();
    let fault_log = redis
        .fault_log()
        .iter()
        .map(|e| {
            let who = e
                .node
                .and_then(|n| n.0.checked_sub(1_000))
                .map_or_else(|| "server".to_owned(), |i| client_name(i as usize));
            let seq = e.seq.map(|s| format!(" n={s}")).unwrap_or_default();
            let kind = match e.kind {
                fake_redis::FaultEventKind::PausedUntil(until) => {
                    format!("paused until {} ms", until - base)
                }
                ref other => format!("{other:?}"),
            };
            format!("{:>8} ms {who}{seq}: {kind}", e.at - base)
        })
        .collect();
    drop(director);
    let entries = std::mem::take(&mut log.lock().unwrap_or_else(|p| p.into_inner()).entries);
    Played {
        entries,
        requests,
        fault_log,
        stalled,
        end,
    }
}

fn nth_fault(client: usize, nth: u64, fate: CommandFate) -> fake_redis::Fault {
    fake_redis::Fault::Command {
        node: Some(node_of(client)),
        fault: fate,
        trigger: Trigger::Seqs {
            from: nth,
            until: nth + 1,
        },
    }
}

/// A request as one line of the trace: time, client, commands (a lock script by its name), and
/// what the plan did to it.
fn request_line(r: &fake_redis::SentRequest, base: i64) -> String {
    let who = r
        .node
        .0
        .checked_sub(1_000)
        .map_or_else(|| r.node.to_string(), |i| client_name(i as usize));
    let commands: Vec<String> = r
        .commands
        .iter()
        .map(|argv| {
            let name = String::from_utf8_lossy(argv.first().map_or(&b""[..], |a| a));
            let script = argv.get(1).and_then(|sha| {
                lock_core::script::all()
                    .into_iter()
                    .find(|s| s.sha().as_bytes() == &sha[..])
            });
            let loaded = argv.get(2).and_then(|body| {
                lock_core::script::all()
                    .into_iter()
                    .find(|s| s.body.as_bytes() == &body[..])
            });
            match (script, loaded) {
                (Some(s), _) => format!("{name} {}", s.name),
                (None, Some(s)) => format!("SCRIPT LOAD {}", s.name),
                (None, None) => argv
                    .iter()
                    .take(3)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
            }
        })
        .collect();
    let fate = match r.fate {
        CommandFate::Deliver => String::new(),
        other => format!(" [{other:?}]"),
    };
    format!(
        "{:>8} ms {who} n={}: {}{fate}{}",
        r.at - base,
        r.seq,
        commands.join(" | "),
        if r.applied { "" } else { " (not applied)" }
    )
}

/// Polls the clients' code and strikes the server's faults at their times.
struct Director {
    redis: FakeRedis,
    log: SharedLog,
    origin: Instant,
    faults: std::collections::VecDeque<Fault>,
    timer: Pin<Box<Sleep>>,
    clients: Vec<Client>,
    horizon: Pin<Box<Sleep>>,
}

impl Director {
    fn now(&self) -> u64 {
        Instant::now()
            .saturating_duration_since(self.origin)
            .as_millis() as u64
    }

    fn record(&self, at: u64, client: Option<usize>, what: What) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(at, client, what);
    }

    fn strike(&self, fault: Fault) {
        let at = self.now();
        let mut text = fault.to_string();
        match fault {
            Fault::Restart { keep_data, .. } => self.redis.restart(keep_data),
            Fault::Failover { .. } => {
                // The plan has it: fire it now, and name the keys it lost.
                let before = self.redis.keys();
                self.redis
                    .engine()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .apply_due_server_faults();
                let after = self.redis.keys();
                let lost: Vec<String> = before
                    .iter()
                    .filter(|k| !after.contains(k))
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect();
                if !lost.is_empty() {
                    text.push_str(&format!(": lost {}", lost.join(" ")));
                }
            }
            Fault::ClockJump { by, .. } => self.redis.jump_clock(by),
            _ => return,
        }
        self.record(at, None, What::Fault(text));
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let now = self.now();
        while let Some(next) = self.faults.front().copied() {
            if next.at().unwrap_or(0) > now {
                let at = self.origin + Duration::from_millis(next.at().unwrap_or(0));
                self.timer.as_mut().reset(at);
                if self.timer.as_mut().poll(cx).is_ready() {
                    cx.waker().wake_by_ref();
                }
                break;
            }
            self.faults.pop_front();
            self.strike(next);
        }
        let mut running = 0;
        for i in 0..self.clients.len() {
            if self.poll_client(i, now, cx) {
                running += 1;
            }
        }
        if running == 0 || self.horizon.as_mut().poll(cx).is_ready() {
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Polls client `i` if it may run now; whether it is still running.
    fn poll_client(&mut self, i: usize, now: u64, cx: &mut Context<'_>) -> bool {
        let (log, redis) = (self.log.clone(), self.redis.clone());
        let record = |what: What| {
            log.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(now, Some(i), what)
        };
        let origin = self.origin;
        let c = &mut self.clients[i];
        let Slot::Running(code) = &mut c.slot else {
            return false;
        };
        if c.crash_at.is_some_and(|t| t <= now) {
            c.lock.abort();
            redis.node(c.node).crash();
            c.slot = Slot::Over;
            record(What::Fault("crashed".into()));
            return false;
        }
        let pause = c
            .pauses
            .iter()
            .find(|(from, until)| *from <= now && now < *until);
        let mut wake_at = c.crash_at;
        if let Some(&(_, until)) = pause {
            wake_at = Some(wake_at.map_or(until, |t| t.min(until)));
        } else if let Poll::Ready(out) = code.as_mut().poll(cx) {
            record(What::Done(out));
            c.slot = Slot::Over;
            return false;
        }
        if let Some(at) = wake_at {
            c.timer.as_mut().reset(origin + Duration::from_millis(at));
            if c.timer.as_mut().poll(cx).is_ready() {
                cx.waker().wake_by_ref();
            }
        }
        true
    }
}
