//! The lessons: each scenario is a simulated case, run by the real lock machine on the fake
//! engine in virtual time, and told as a [`Timeline`].
//!
//! Nothing here decides what the lock does. A scenario only sets the stage (who locks what, how
//! long they work, which fault strikes when); the timeline is whatever the library then did, so the
//! lesson cannot drift from the code.

use crate::timeline::{Arrow, ArrowKind, EventKind, Note, Timeline, stamp};
use lock_core::Reply;
use lock_core::machine::Call;
use lock_core::machine::RwSide;
use sim_tests::engine_server::EngineServer;
use sim_tests::world::{EPOCH_MS, ForeignRun, ForeignSpec, RELEASE_SCRIPT, describe, lock_name};
use sim_tests::{AcquireKind, Case, Checker, ClientSpec, Fault, Run, RwRole, Violation, World};
use std::collections::{BTreeMap, BTreeSet};

/// The knobs a scenario honours where they apply (all in milliseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The watchdog timeout: the lease of a watchdog hold, renewed every third of it.
    pub watchdog_timeout: u64,
    /// An explicit lease, for the scenarios that use one.
    pub lease: u64,
    /// How long the first client works while holding the lock.
    pub work: Option<u64>,
    /// When the GC pause starts.
    pub pause_at: u64,
    /// How long it lasts.
    pub pause_for: u64,
    /// When the holder crashes.
    pub crash_at: u64,
    /// How many clients contend (the scenario's own count if not given).
    pub clients: Option<usize>,
    /// The run's seed.
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            watchdog_timeout: 30_000,
            lease: 5_000,
            work: None,
            pause_at: 19_000,
            pause_for: 36_000,
            crash_at: 25_000,
            clients: None,
            seed: 1,
        }
    }
}

/// One knob of [`Params`], as the command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// `--watchdog-timeout`.
    WatchdogTimeout,
    /// `--lease`.
    Lease,
    /// `--work`.
    Work,
    /// `--pause-at`.
    PauseAt,
    /// `--pause-for`.
    PauseFor,
    /// `--crash-at`.
    CrashAt,
    /// `--clients`.
    Clients,
    /// `--seed`.
    Seed,
}

impl Knob {
    /// Every knob, in the order the command line lists them.
    pub const ALL: [Knob; 8] = [
        Knob::WatchdogTimeout,
        Knob::Lease,
        Knob::Work,
        Knob::PauseAt,
        Knob::PauseFor,
        Knob::CrashAt,
        Knob::Clients,
        Knob::Seed,
    ];

    /// Its flag, without the dashes.
    pub fn flag(self) -> &'static str {
        match self {
            Knob::WatchdogTimeout => "watchdog-timeout",
            Knob::Lease => "lease",
            Knob::Work => "work",
            Knob::PauseAt => "pause-at",
            Knob::PauseFor => "pause-for",
            Knob::CrashAt => "crash-at",
            Knob::Clients => "clients",
            Knob::Seed => "seed",
        }
    }

    /// Its value in `p`, as a flag takes it (`None` where the scenario's own is used).
    pub fn value(self, p: &Params) -> Option<u64> {
        match self {
            Knob::WatchdogTimeout => Some(p.watchdog_timeout),
            Knob::Lease => Some(p.lease),
            Knob::Work => p.work,
            Knob::PauseAt => Some(p.pause_at),
            Knob::PauseFor => Some(p.pause_for),
            Knob::CrashAt => Some(p.crash_at),
            Knob::Clients => p.clients.map(|n| n as u64),
            Knob::Seed => Some(p.seed),
        }
    }

    /// Its value in `p` in words, with its unit.
    pub fn describe(self, p: &Params) -> String {
        match (self, self.value(p)) {
            (_, None) => "the scenario's own".to_owned(),
            (Knob::Clients | Knob::Seed, Some(v)) => v.to_string(),
            (_, Some(ms)) => format!("{ms} ms"),
        }
    }
}

/// A scenario's name, its one-line lesson, and how to build its case.
pub struct Scenario {
    /// The name given to `--scenario`.
    pub name: &'static str,
    /// What it teaches, in two sentences.
    pub lesson: &'static str,
    /// The knobs of [`Params`] it honours, in the command line's order: any other is ignored (a
    /// test holds this list to what changes its case).
    pub honours: &'static [Knob],
    build: fn(&Params) -> Case,
    /// The foreign lock clients it runs beside the case's, if any.
    foreign: Option<fn(&Params) -> Vec<ForeignSpec>>,
}

/// Every scenario, the default first.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "watchdog",
        lesson: "Without a lease the lock gets watchdog_timeout (30 s) and the watchdog renews it every third of that while the holder lives. \
                 Unlock takes the hold off the watchdog before the release is sent, so renewal stops at once.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Clients, Knob::Seed],
        build: watchdog,
        foreign: None,
    },
    Scenario {
        name: "lease-too-short",
        lesson: "An explicit lease is never renewed: work longer than the lease outlives the lock, a second client enters, and the work is done twice. \
                 The same work under the watchdog keeps the lock to the end, and the waiter enters only after the unlock.",
        honours: &[Knob::WatchdogTimeout, Knob::Lease, Knob::Work, Knob::Seed],
        build: lease_too_short,
        foreign: None,
    },
    Scenario {
        name: "lost-unlock-reply",
        lesson: "The unlock was applied but its reply was lost; renewal had already been cancelled before it was sent. \
                 The retry carries the same request id, so the server's latch answers \"released\" instead of \"not your lock\".",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Seed],
        build: lost_unlock_reply,
        foreign: None,
    },
    Scenario {
        name: "lost-unlock-request",
        lesson: "The unlock never reaches Redis, and every retry is lost too, so the caller is told the outcome is unknown. \
                 Renewal was cancelled before the first attempt, so the key still expires one lease after the last renewal.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Seed],
        build: lost_unlock_request,
        foreign: None,
    },
    Scenario {
        name: "client-crash",
        lesson: "A crashed holder renews no more: its key lives out the lease from the last renewal and expires. \
                 A waiting client then takes the lock, with no one having to clean up.",
        honours: &[
            Knob::WatchdogTimeout,
            Knob::Work,
            Knob::CrashAt,
            Knob::Clients,
            Knob::Seed,
        ],
        build: client_crash,
        foreign: None,
    },
    Scenario {
        name: "gc-pause",
        lesson: "A GC pause longer than the remaining lease stops the renewals, the key expires, and a second client takes the lock. \
                 The first resumes and writes, not knowing, and an unfenced resource accepts both: the lock alone cannot prevent this.",
        honours: &[
            Knob::WatchdogTimeout,
            Knob::Work,
            Knob::PauseAt,
            Knob::PauseFor,
            Knob::Clients,
            Knob::Seed,
        ],
        build: gc_pause,
        foreign: None,
    },
    Scenario {
        name: "gc-pause-fenced",
        lesson: "The same pause, but every write carries the holder's fencing token. \
                 The resource has seen the second holder's higher token, so the paused holder's stale write is rejected.",
        honours: &[
            Knob::WatchdogTimeout,
            Knob::Work,
            Knob::PauseAt,
            Knob::PauseFor,
            Knob::Clients,
            Knob::Seed,
        ],
        build: gc_pause_fenced,
        foreign: None,
    },
    Scenario {
        name: "reentrant",
        lesson: "The same owner may lock again: the hash counts holds, and each reentry re-applies the lease. \
                 One unlock leaves it held (and renewed); the last unlock deletes it.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Clients, Knob::Seed],
        build: reentrant,
        foreign: None,
    },
    Scenario {
        name: "foreign-lock-gc-pause",
        lesson: "redis-py's Lock (SET NX PX, and a release script that compares the token, run on the fake's Lua) has only its timeout: a 12 s GC pause outlives its 10 s lease, b takes the lock, a resumes and writes, and its late release replies 0. \
                 Our lock under the same pause keeps its key: the watchdog's 30 s lease, renewed every third of it, outlives the pause, and d enters only after c's unlock.",
        honours: &[Knob::WatchdogTimeout, Knob::Seed],
        build: foreign_lock_gc_pause,
        foreign: Some(foreign_lock_clients),
    },
    Scenario {
        name: "fair",
        lesson: "Redisson's fair lock serves waiters in the order they asked: b, c and d join the queue behind a's hold at 1, 2 and 3 s, and each is granted in turn, woken on its own channel by the release before it. \
                 Each place keeps a deadline, the one before it plus its waiter's thread-wait time: a waiter that dies is purged when its deadline passes and cannot hold the others up.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Clients, Knob::Seed],
        build: fair,
        foreign: None,
    },
    Scenario {
        name: "read-write",
        lesson: "Readers share: a and b read at once and the key's mode is read. The writer w waits until the last reader's release wakes it; the mode is then write, and c, asking to read while w writes, waits until w's release wakes every waiter. \
                 Redisson's read lock does not queue a reader behind a waiting writer: one that asks while the mode is read joins the readers at once.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Seed],
        build: read_write,
        foreign: None,
    },
    Scenario {
        name: "failover-lag",
        lesson: "Without the replica check, the primary's reply tells a it holds the lock before the replica has the grant; the primary fails over within the replica's lag, and the promoted replica has no key. \
                 b asks after the failover and is granted while a still works: two owners, which server-side exclusivity reports. a learns at once that its hold is gone (the renewal it sends when its subscriber drops finds no key), but its unfenced work goes on.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Seed],
        build: failover_lag,
        foreign: None,
    },
    Scenario {
        name: "failover-synced",
        lesson: "The same failover with the replica check (WAIT after the acquire): a is told only once a replica has the grant, so the failover, which comes first, closes the connection its WAIT blocks on, and a is never told of the grant it lost. \
                 a's acquire, its outcome unknown, asks again and is granted by the new primary (which has no replica left to wait for); b, asking after the failover, waits for a's unlock.",
        honours: &[Knob::WatchdogTimeout, Knob::Work, Knob::Seed],
        build: failover_synced,
        foreign: None,
    },
];

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

fn base(p: &Params, horizon: u64) -> Case {
    let mut case = Case::new(p.seed, horizon);
    case.watchdog = p.watchdog_timeout;
    case.latency = (1, 1);
    case
}

fn client(name: &str, start: u64, work: u64) -> ClientSpec {
    let mut c = ClientSpec::new(name, 0);
    c.start = start;
    c.work = (work, work);
    c.fenced = false;
    c
}

/// Contenders `b`, `c`, … that start waiting at 1 s, each working `work` ms.
fn waiters(p: &Params, default: usize, work: u64) -> Vec<ClientSpec> {
    let n = p.clients.unwrap_or(default).max(1);
    (1..n)
        .map(|i| client(&((b'a' + i as u8) as char).to_string(), 1_000, work))
        .collect()
}

fn watchdog(p: &Params) -> Case {
    let work = p.work.unwrap_or(47_000);
    let mut case = base(p, work + p.watchdog_timeout / 3 * 2);
    case.clients.push(client("a", 0, work));
    case.clients.extend(waiters(p, 1, 1_000));
    case
}

fn lease_too_short(p: &Params) -> Case {
    let work = p.work.unwrap_or(8_000);
    let mut case = base(p, 2 * work + 14_000);
    let mut a = client("a", 0, work);
    a.acquire = AcquireKind::Lease(p.lease);
    case.clients.push(a);
    let mut b = client("b", 1_000, 2_000);
    b.acquire = AcquireKind::Lease(p.lease);
    case.clients.push(b);
    // The same, on another lock, with the watchdog.
    let later = work + 4_000;
    let mut c = client("c", later, work);
    c.lock = 1;
    let mut d = client("d", later + 1_000, 2_000);
    d.lock = 1;
    case.clients.push(c);
    case.clients.push(d);
    case
}

fn lost_unlock_reply(p: &Params) -> Case {
    let work = p.work.unwrap_or(15_000);
    let mut case = base(p, work + 2 * p.watchdog_timeout);
    case.clients.push(client("a", 0, work));
    // The unlock goes out at the end of the work (plus the acquire's round trip): lose the
    // reply the server sends to it, and only that one.
    case.faults.push(Fault::DropReplies {
        client: 0,
        from: work,
        to: work + 100,
    });
    case
}

fn lost_unlock_request(p: &Params) -> Case {
    let work = p.work.unwrap_or(15_000);
    let mut case = base(p, work + p.watchdog_timeout + 30_000);
    case.clients.push(client("a", 0, work));
    case.faults.push(Fault::DropRequests {
        client: 0,
        from: work,
        to: work + 60_000,
    });
    case
}

fn client_crash(p: &Params) -> Case {
    let mut case = base(p, p.crash_at + p.watchdog_timeout + 10_000);
    case.clients
        .push(client("a", 0, p.work.unwrap_or(p.crash_at * 4)));
    case.clients.extend(waiters(p, 2, 2_000));
    case.faults.push(Fault::Crash {
        client: 0,
        at: p.crash_at,
    });
    case
}

fn gc_pause_with(p: &Params, fenced: bool) -> Case {
    let end = p.pause_at + p.pause_for;
    let mut case = base(p, end + 20_000);
    let mut a = client("a", 0, p.work.unwrap_or(p.pause_at + 4_000));
    a.fenced = fenced;
    case.clients.push(a);
    for mut w in waiters(p, 2, end.saturating_sub(p.pause_at) + 5_000) {
        w.fenced = fenced;
        case.clients.push(w);
    }
    case.faults.push(Fault::Pause {
        client: 0,
        at: p.pause_at,
        for_ms: p.pause_for,
    });
    case
}

fn gc_pause(p: &Params) -> Case {
    gc_pause_with(p, false)
}

fn gc_pause_fenced(p: &Params) -> Case {
    gc_pause_with(p, true)
}

fn reentrant(p: &Params) -> Case {
    let work = p.work.unwrap_or(40_000);
    let mut case = base(p, work + p.watchdog_timeout / 3 * 2);
    let mut a = client("a", 0, work);
    a.reentry = 1;
    case.clients.push(a);
    case.clients.extend(waiters(p, 2, 1_000));
    case
}

/// a holds a fair lock; b, c, d, … join its queue a second apart from 1 s, each working 2 s.
fn fair(p: &Params) -> Case {
    let work = p.work.unwrap_or(6_000);
    let n = p.clients.unwrap_or(4).max(1);
    let mut case = base(p, work + 2_000 * n as u64 + 2_000);
    case.fair = vec![0];
    case.clients.push(client("a", 0, work));
    for i in 1..n {
        let name = ((b'a' + i as u8) as char).to_string();
        case.clients.push(client(&name, 1_000 * i as u64, 2_000));
    }
    case
}

/// Readers a and b share a read-write lock from 0; the writer w asks at 1 s; the reader c asks at
/// 2 s after the readers are done, while w writes.
fn read_write(p: &Params) -> Case {
    let work = p.work.unwrap_or(6_000);
    let mut case = base(p, work + 12_000);
    case.rw = vec![0];
    let with_role = |mut c: ClientSpec, role| {
        c.role = role;
        c
    };
    case.clients = vec![
        with_role(client("a", 0, work), RwRole::Read),
        with_role(
            client("b", 0, work.saturating_sub(1_000).max(1)),
            RwRole::Read,
        ),
        with_role(client("w", 1_000, 4_000), RwRole::Write),
        with_role(client("c", work + 2_000, 2_000), RwRole::Read),
    ];
    case
}

/// A primary with one replica lagging 300 ms; a locks at 0 and works `work`; the primary fails
/// over to the replica at 150 ms, inside the lag; b asks at 400 ms.
fn failover_with(p: &Params, sync: bool) -> Case {
    let work = p.work.unwrap_or(6_000);
    let mut case = base(p, work + 5_000);
    case.replicas = 1;
    case.replica_lag = (300, 300);
    case.sync = sync;
    case.clients.push(client("a", 0, work));
    case.clients.push(client("b", 400, 2_000));
    case.faults.push(Fault::Promote {
        at: 150,
        replica: 0,
        shard: 0,
    });
    case
}

fn failover_lag(p: &Params) -> Case {
    failover_with(p, false)
}

fn failover_synced(p: &Params) -> Case {
    failover_with(p, true)
}

/// When the foreign-lock scenario's pause starts, and how long it lasts: longer than the foreign
/// lease, shorter than what is left of the watchdog's at any moment.
const FOREIGN_PAUSE: (u64, u64) = (4_000, 12_000);

/// The foreign lock's lease (redis-py's `timeout`).
const FOREIGN_TIMEOUT: u64 = 10_000;

/// How long the paused holder works, on either lock.
const FOREIGN_WORK: u64 = 16_000;

/// Ours beside the foreign lock: c holds L0 with the watchdog and is paused as long as the
/// foreign holder; d waits for L0.
fn foreign_lock_gc_pause(p: &Params) -> Case {
    let mut case = base(p, 32_000);
    case.clients.push(client("c", 0, FOREIGN_WORK));
    case.clients.push(client("d", 8_000, 2_000));
    case.faults.push(Fault::Pause {
        client: 0,
        at: FOREIGN_PAUSE.0,
        for_ms: FOREIGN_PAUSE.1,
    });
    case
}

/// The foreign lock: a holds F0 with a 10 s timeout and is paused; b tries every second from 8 s.
fn foreign_lock_clients(_: &Params) -> Vec<ForeignSpec> {
    let foreign = |name: &str, start, work, pause| ForeignSpec {
        name: name.into(),
        key: "F0".into(),
        start,
        timeout: FOREIGN_TIMEOUT,
        sleep: 1_000,
        work,
        pause,
    };
    vec![
        foreign("a", 0, FOREIGN_WORK, Some(FOREIGN_PAUSE)),
        foreign("b", 8_000, 8_000, None),
    ]
}

impl Scenario {
    /// The case for these parameters.
    pub fn case(&self, p: &Params) -> Case {
        (self.build)(p)
    }

    /// The foreign lock clients run beside the case's (none for most scenarios).
    pub fn foreign(&self, p: &Params) -> Vec<ForeignSpec> {
        self.foreign.map(|f| f(p)).unwrap_or_default()
    }

    /// Runs the scenario and tells it as a timeline.
    pub fn run(&self, p: &Params) -> (Case, Run, Timeline) {
        let case = self.case(p);
        let run = World::new(&case, EngineServer::for_case(&case))
            .with_foreign(&self.foreign(p))
            .run();
        let mut timeline = to_timeline(self.name, &case, &run);
        timeline.lesson = self.lesson.to_owned();
        (case, run, timeline)
    }
}

fn kind(what: &str) -> Option<EventKind> {
    Some(match what {
        "acquire" => EventKind::Acquire,
        "renew" => EventKind::Renew,
        "expire" => EventKind::Expire,
        "unlock" => EventKind::Unlock,
        "released" => EventKind::Released,
        "crash" => EventKind::Crash,
        "pause" => EventKind::Pause,
        "resume" => EventKind::Resume,
        "lost" => EventKind::Lost,
        "may-be-lost" => EventKind::MayBeLost,
        "not-acquired" => EventKind::NotAcquired,
        "wait" => EventKind::Wait,
        "read" => EventKind::Read,
        "write" | "write-accepted" => EventKind::WriteAccepted,
        "write-rejected" => EventKind::WriteRejected,
        "dropped" => EventKind::Dropped,
        "unlock-failed" => EventKind::UnlockFailed,
        "timeout" => EventKind::Timeout,
        "restart" | "failover" | "no-failover" | "clock-jump" | "max-hold" => EventKind::Note,
        _ => return None,
    })
}

/// Bar colours, each with one meaning in every picture.
const KEY: &str = "#2e7d32";
const BELIEF: &str = "#1565c0";
const PAUSE: &str = "#6a1b9a";
const LATCH: &str = "#ef6c00";
const COUNTER: &str = "#00838f";
const HIGHEST: &str = "#5d4037";
const QUEUE: &str = "#ad1457";
const MODE: &str = "#827717";
const EXPIRY: &str = "#455a64";

/// Tells a run as a timeline: client lanes, then per lock the key on the server (its owner and
/// hold count as bars), its unlock latches, and for fenced clients the token counter and the
/// resource they write to. Every call and reply is an arrow between a client and the key (or the
/// latch that answered it), every unlock message one from the key to its subscriber.
pub fn to_timeline(title: &str, case: &Case, run: &Run) -> Timeline {
    let foreign = &run.foreign;
    let names: Vec<&str> = foreign
        .specs
        .iter()
        .map(|c| c.name.as_str())
        .chain(case.clients.iter().map(|c| c.name.as_str()))
        .collect();
    let mut t = Timeline::new(format!("scenario: {title}"), &names);
    // A foreign lock's key sits under its clients, before ours.
    for (i, key) in foreign.keys().iter().enumerate() {
        t.lanes
            .insert(foreign.specs.len() + i, format!("server {key}"));
    }
    let locks: BTreeSet<u32> = case.clients.iter().map(|c| c.lock).collect();
    for &lock in &locks {
        t.lane(&key_lane(lock));
        if !case.is_fair(lock) && !case.is_rw(lock) {
            t.lane(&expiry_lane(lock));
        }
        if case.is_fair(lock) {
            t.lane(&format!("queue L{lock}"));
        }
        if case.is_rw(lock) {
            t.lane(&format!("mode L{lock}"));
        }
        if run
            .messages
            .iter()
            .any(|m| latch_of(&m.call).is_some() && lock_of_client(case, m.client) == lock)
        {
            t.lane(&format!("latch L{lock}"));
        }
        if case.clients.iter().any(|c| c.lock == lock && c.fenced) {
            t.lane(&format!("counter L{lock}"));
            t.lane(&format!("resource L{lock}"));
        }
    }
    events(&mut t, case, run);
    t.bar_meaning(KEY, "the key on the server: its owner and hold count");
    t.bar_meaning(BELIEF, "what the client believes it holds (valid_until)");
    t.bar_meaning(PAUSE, "a GC pause");
    t.bar_meaning(LATCH, "an unlock latch: the answer kept for a retry");
    t.bar_meaning(COUNTER, "the fencing counter");
    t.bar_meaning(HIGHEST, "the highest token the resource has seen");
    t.bar_meaning(QUEUE, "a fair lock's queue, head first");
    t.bar_meaning(MODE, "a read-write lock's mode and who holds it");
    t.bar_meaning(
        EXPIRY,
        "the key's expiry on the server: each grant or renewal sets a later deadline, a bar from then to it",
    );
    key_bars(&mut t, case, run);
    expiry_bars(&mut t, case, run, &locks);
    queue_bars(&mut t, case, run);
    mode_bars(&mut t, case, run);
    for f in &case.faults {
        if let Fault::Pause { client, at, for_ms } = f {
            t.bar(
                &case.clients[*client].name,
                *at,
                at + for_ms,
                "GC pause",
                PAUSE,
            );
        }
    }
    for i in &run.history.client_intervals {
        t.bar(&i.who, i.from, i.to, "believes it holds the lock", BELIEF);
    }
    for h in &run.history.rw_client_holds {
        let (i, what) = (&h.span, verb(h.side));
        t.bar(&i.who, i.from, i.to, format!("believes it {what}"), BELIEF);
    }
    messages(&mut t, case, run);
    foreign_lock(&mut t, foreign, case.horizon);
    fencing(&mut t, case, run);
    // A latch lane no latch lived on (every release found nothing to release) says nothing.
    let used = |lane: &String| {
        t.bars.iter().any(|b| b.actor == *lane)
            || t.events.iter().any(|e| e.actor == *lane)
            || t.arrows
                .iter()
                .any(|a| a.to_lane == *lane || a.from_lane == *lane)
    };
    let lanes: Vec<String> = t.lanes.iter().filter(|l| used(l)).cloned().collect();
    t.lanes = lanes;
    t
}

/// The run's marks as the text timeline's events.
fn events(t: &mut Timeline, case: &Case, run: &Run) {
    let names = token_names(run);
    for m in &run.marks {
        let Some(kind) = kind(&m.what) else { continue };
        // A fenced write is shown once, as accepted or rejected; skip its unfenced twin.
        let fenced = case.clients.iter().any(|c| c.name == m.actor && c.fenced);
        if m.what == "write" && fenced {
            continue;
        }
        let detail = match m.what.as_str() {
            "may-be-lost" => format!("{} (valid_until passed)", m.detail),
            "write" => m.detail.replace("unfenced", "unfenced resource"),
            "read" => m.detail.replace("unfenced", "resource"),
            "write-accepted" | "write-rejected" => named_token(&m.detail, &names),
            _ => m.detail.clone(),
        };
        let actor = if m.actor == "server" {
            server_lane(&m.detail)
        } else {
            m.actor.clone()
        };
        let last = detail.rsplit(' ').next().unwrap_or("");
        let holder = run.client_of(last).or_else(|| {
            run.foreign
                .specs
                .iter()
                .any(|s| s.name == last)
                .then_some(last)
        });
        let detail = match holder {
            Some(name) if m.what == "expire" => format!("{} (held by {name})", lock_of(&detail)),
            _ => detail,
        };
        t.event(m.at, &actor, kind, detail);
    }
}

/// A fenced write's details (`fenced L0 token=1700000000001000`) with the token's short name, as
/// the picture draws it, after its full value.
fn named_token(detail: &str, names: &BTreeMap<(u32, u64), String>) -> String {
    let mut words = detail.split(' ').skip(1);
    let lock = words.next().and_then(|l| l.strip_prefix('L')?.parse().ok());
    let token = words
        .next()
        .and_then(|t| t.strip_prefix("token=")?.parse().ok());
    match (lock, token) {
        (Some(lock), Some(token)) => format!("{detail} ({})", short(names, lock, token)),
        _ => detail.to_owned(),
    }
}

fn key_lane(lock: u32) -> String {
    format!("server L{lock}")
}

fn lock_of_client(case: &Case, client: usize) -> u32 {
    case.clients[client].lock
}

/// The unlock latch a release names, if the call is one.
fn latch_of(call: &Call) -> Option<&[u8]> {
    match call {
        Call::Script(s) if s.script.name == "release" => s.keys.get(2).map(|k| k.as_ref()),
        _ => None,
    }
}

/// Simulation ms of a server deadline (server unix ms; the key lives through it).
fn sim_ms(deadline: i64) -> u64 {
    (deadline - EPOCH_MS + 1).max(0) as u64
}

/// The key's life per owner, split where the owner's hold count changes: the counts are read
/// from the server after every call that named the key. On a read-write lock, per owner and side.
fn key_bars(t: &mut Timeline, case: &Case, run: &Run) {
    for g in &run.history.server_grants {
        let who = run.client_of(&g.who).unwrap_or("?");
        let label = format!("key: {who}");
        hold_bars(t, case, run, (g.lock, &g.who), (g.from, g.to), &label);
    }
    for h in &run.history.rw_server_holds {
        let g = &h.span;
        let who = run.client_of(&g.who).unwrap_or("?");
        let field = match h.side {
            RwSide::Read => g.who.clone(),
            RwSide::Write => format!("{}:write", g.who),
        };
        let label = format!("key: {who} {}", verb(h.side));
        hold_bars(t, case, run, (g.lock, &field), (g.from, g.to), &label);
    }
}

/// What a hold of `side` lets its owner do, as the picture says it.
fn verb(side: RwSide) -> &'static str {
    match side {
        RwSide::Read => "reads",
        RwSide::Write => "writes",
    }
}

/// The bars of one owner's field of lock `lock` over `span`, labelled `label` and its count.
fn hold_bars(
    t: &mut Timeline,
    case: &Case,
    run: &Run,
    (lock, field): (u32, &str),
    (from, to): (u64, u64),
    label: &str,
) {
    let key = lock_name(lock);
    let mut counts: Vec<(u64, i64)> = Vec::new();
    for m in &run.messages {
        let Some(at) = m.applied.filter(|at| (from..to).contains(at)) else {
            continue;
        };
        let count = m
            .keys_after
            .iter()
            .filter(|(k, _)| k.as_ref() == key.as_bytes())
            .filter_map(|(_, state)| state.as_ref())
            .flat_map(|s| s.owners.iter())
            .find(|(owner, _)| owner.as_ref() == field.as_bytes())
            .map(|(_, n)| *n);
        if let Some(n) = count
            && counts.last().is_none_or(|(_, last)| *last != n)
        {
            counts.push((at, n));
        }
    }
    if counts.is_empty() {
        counts.push((from, 1));
    }
    counts[0].0 = from;
    for (i, (start, n)) in counts.iter().enumerate() {
        let end = counts.get(i + 1).map_or(to, |(next, _)| *next);
        let holds = if *n == 1 { "hold" } else { "holds" };
        t.bar(
            &key_lane(lock),
            *start,
            end.min(case.horizon),
            format!("{label}, {n} {holds}"),
            KEY,
        );
    }
}

fn expiry_lane(lock: u32) -> String {
    format!("expiry L{lock}")
}

/// The key's deadline on the server each time a call set it, as read after every call that named
/// the key: a bar from the call to the deadline, one per grant or renewal, so each renewal's bar
/// ends further right than the one before it (a staircase of deadlines moving forward). A bar
/// stops early where a call found the key gone (an unlock deleted it); where nothing did, it runs
/// to the deadline, when the key expired.
fn expiry_bars(t: &mut Timeline, case: &Case, run: &Run, locks: &BTreeSet<u32>) {
    for &lock in locks {
        if case.is_fair(lock) || case.is_rw(lock) {
            continue;
        }
        let key = lock_name(lock);
        let mut seen: Vec<(u64, Option<u64>)> = run
            .messages
            .iter()
            .filter_map(|m| {
                let at = m.applied?;
                let (_, state) = m
                    .keys_after
                    .iter()
                    .find(|(k, _)| k.as_ref() == key.as_bytes())?;
                Some((at, state.as_ref().and_then(|s| s.deadline).map(sim_ms)))
            })
            .collect();
        seen.sort_by_key(|(at, _)| *at);
        // Each deadline from the call that set it: (set at, deadline, gone at).
        let mut deadlines: Vec<(u64, u64, Option<u64>)> = Vec::new();
        for (at, deadline) in seen {
            // The deadline in force when the call was applied, if the key was still there.
            let current = deadlines
                .last_mut()
                .filter(|(_, d, gone)| gone.is_none() && *d > at);
            match (current, deadline) {
                (Some((_, d, _)), Some(new)) if *d == new => {}
                // The key is gone: every deadline still ahead ends with it.
                (Some(_), None) => {
                    for (_, d, gone) in deadlines.iter_mut() {
                        if gone.is_none() && *d > at {
                            *gone = Some(at);
                        }
                    }
                }
                (_, Some(new)) => deadlines.push((at, new, None)),
                (None, None) => {}
            }
        }
        for (from, deadline, gone) in deadlines {
            let to = gone.unwrap_or(deadline).min(deadline).min(case.horizon);
            let when = format!("{:.1} s", deadline as f64 / 1000.0);
            let label = if gone.is_some_and(|g| g < deadline) {
                format!("deadline {when}, deleted first")
            } else {
                format!("expires at {when}")
            };
            t.bar(&expiry_lane(lock), from, to, label, EXPIRY);
        }
    }
}

/// A fair lock's queue each time it changed: its waiters, head first, until the next change.
fn queue_bars(t: &mut Timeline, case: &Case, run: &Run) {
    for (i, q) in run.queues.iter().enumerate() {
        if q.owners.is_empty() {
            continue;
        }
        let to = run.queues[i + 1..]
            .iter()
            .find(|next| next.lock == q.lock)
            .map_or(case.horizon, |next| next.at);
        let names: Vec<&str> = q
            .owners
            .iter()
            .map(|o| run.client_of(o).unwrap_or("?"))
            .collect();
        t.bar(
            &format!("queue L{}", q.lock),
            q.at,
            to,
            format!("queue: {}", names.join(", ")),
            QUEUE,
        );
    }
}

/// A read-write lock's `mode` field and the clients whose fields stand beside it, as read from
/// the server after every call that named the key, until the key is gone.
fn mode_bars(t: &mut Timeline, case: &Case, run: &Run) {
    for &lock in &case.rw {
        let key = lock_name(lock);
        let mut seen: Vec<(u64, Option<String>)> = Vec::new();
        let mut applied: Vec<(u64, Option<&sim_tests::server::LockState>)> = run
            .messages
            .iter()
            .filter_map(|m| {
                let at = m.applied?;
                let (_, state) = m
                    .keys_after
                    .iter()
                    .find(|(k, _)| k.as_ref() == key.as_bytes())?;
                Some((at, state.as_ref()))
            })
            .collect();
        applied.sort_by_key(|(at, _)| *at);
        for (at, state) in applied {
            let label = state.and_then(|s| {
                let mode = String::from_utf8_lossy(s.mode.as_ref()?).into_owned();
                let mut names: Vec<&str> = s
                    .owners
                    .iter()
                    .map(|(field, _)| {
                        let field = String::from_utf8_lossy(field);
                        let owner = field.strip_suffix(":write").unwrap_or(&field);
                        run.client_of(owner).unwrap_or("?")
                    })
                    .collect();
                names.dedup();
                Some(format!("mode: {mode} ({})", names.join(", ")))
            });
            if seen.last().is_none_or(|(_, last)| *last != label) {
                seen.push((at, label));
            }
        }
        // The key may also end by expiring, with no call to see it go: a bar ends with the last
        // hold on the server that was alive when it began.
        let holds = &run.history.rw_server_holds;
        for (i, (from, label)) in seen.iter().enumerate() {
            let Some(label) = label else { continue };
            let next = seen.get(i + 1).map_or(case.horizon, |(at, _)| *at);
            let alive = holds
                .iter()
                .filter(|h| h.span.lock == lock && h.span.from <= *from && *from < h.span.to)
                .map(|h| h.span.to)
                .max()
                .unwrap_or(next);
            t.bar(
                &format!("mode L{lock}"),
                *from,
                next.min(alive).min(case.horizon),
                label.clone(),
                MODE,
            );
        }
    }
}

/// Every call's journey as arrows, with a note where the server's answer is the lesson.
fn messages(t: &mut Timeline, case: &Case, run: &Run) {
    // Each unlock latch: when it was set, until when it lives, what it answers.
    let mut latches: Vec<(&[u8], u64, u64, String)> = Vec::new();
    // The request ids of the unlocks sent so far: a second send is a retry.
    let mut unlocks: BTreeSet<&[u8]> = BTreeSet::new();
    let names = token_names(run);
    for m in &run.messages {
        let client = &case.clients[m.client].name;
        let lock = case.clients[m.client].lock;
        let key = key_lane(lock);
        let name = call_name(&m.call);
        let detail = sent_detail(m.sent, client, &describe(&m.call), m.reply.as_ref());
        let latch = latch_of(&m.call);
        let by_latch = match (latch, m.applied) {
            (Some(l), Some(at)) => latches
                .iter()
                .find(|(k, from, to, _)| *k == l && *from <= at && at <= *to)
                .map(|(_, _, _, answer)| answer.clone()),
            _ => None,
        };
        if let Some(l) = latch
            && !unlocks.insert(l)
        {
            t.note(Note {
                lane: client.clone(),
                at_ms: m.sent,
                text: "retry, same request id".into(),
                colour: "#424242",
                routine: false,
            });
        }
        let target = if by_latch.is_some() {
            format!("latch L{lock}")
        } else {
            key.clone()
        };
        let Some(applied) = m.applied else {
            if m.request_lost {
                t.arrow(Arrow {
                    from_lane: client.clone(),
                    from_ms: m.sent,
                    to_lane: target,
                    to_ms: m.sent,
                    kind: ArrowKind::Call,
                    lost: true,
                    detail: format!("{detail} (request lost)"),
                });
            }
            continue;
        };
        t.arrow(Arrow {
            from_lane: client.clone(),
            from_ms: m.sent,
            to_lane: target.clone(),
            to_ms: applied,
            kind: ArrowKind::Call,
            lost: false,
            detail: detail.clone(),
        });
        if m.reply_lost || m.answered.is_some() {
            t.arrow(Arrow {
                from_lane: target.clone(),
                from_ms: applied,
                to_lane: client.clone(),
                to_ms: m.answered.unwrap_or(applied),
                kind: ArrowKind::Reply,
                lost: m.reply_lost,
                detail: if m.reply_lost {
                    format!("{detail} (reply lost)")
                } else {
                    detail.clone()
                },
            });
        }
        let answer = match (&m.reply, name) {
            (Some(Ok(Reply::Int(1))), "release") => "key deleted".to_owned(),
            (Some(Ok(Reply::Int(0))), "release") => "one hold less".to_owned(),
            (Some(Ok(Reply::Nil)), "release") => "not held".to_owned(),
            (Some(Ok(Reply::Nil)), "acquire") => "granted".to_owned(),
            (Some(Ok(Reply::Array(items))), "acquire_fenced") => match items.as_slice() {
                [Reply::Int(-1), Reply::Int(token)] => {
                    let token = u64::try_from(*token).unwrap_or_default();
                    format!("granted, token {}", short(&names, lock, token))
                }
                _ => "held by another".to_owned(),
            },
            (Some(Ok(Reply::Int(_))), "acquire") => "held by another".to_owned(),
            (Some(Ok(Reply::Array(items))), "renew_batch")
                if items.iter().all(|r| *r == Reply::Int(1)) =>
            {
                // A renewal that worked says so on the client's lane.
                String::new()
            }
            (Some(Ok(Reply::Array(_))), "renew_batch") => "not held: not renewed".to_owned(),
            (Some(Ok(Reply::Nil)), "rw_read_acquire" | "rw_write_acquire") => "granted".to_owned(),
            (Some(Ok(Reply::Int(_))), "rw_read_acquire") => "held by a writer".to_owned(),
            (Some(Ok(Reply::Int(_))), "rw_write_acquire") => "held by another".to_owned(),
            (Some(Ok(Reply::Nil)), "fair_acquire") => "granted".to_owned(),
            (Some(Ok(Reply::Int(_))), "fair_acquire") => "held by another".to_owned(),
            (Some(Err(_)), _) => "error".to_owned(),
            _ => String::new(),
        };
        if let Some(answer) = &by_latch {
            t.note(Note {
                lane: target,
                at_ms: applied,
                text: format!("the latch answers: {answer}"),
                colour: LATCH,
                routine: false,
            });
        } else if !answer.is_empty() {
            let words = match name {
                "acquire_fenced" | "fair_acquire" => "acquire",
                "rw_read_acquire" => "read acquire",
                "rw_write_acquire" => "write acquire",
                "renew_batch" => "renewal",
                other => other,
            };
            t.note(Note {
                lane: target,
                at_ms: applied,
                text: format!("{client}'s {words}: {answer}"),
                colour: "#424242",
                // A waiter's attempt that finds the lock taken is routine.
                routine: answer == "held by another" || answer == "held by a writer",
            });
        }
        if let (Some(l), None) = (latch, &by_latch)
            && let Some((_, Some(state))) = m.keys_after.get(2)
            && let Some(deadline) = state.deadline
        {
            let to = sim_ms(deadline).min(case.horizon);
            let answer = match &m.reply {
                Some(Ok(Reply::Int(1))) => "released",
                Some(Ok(Reply::Int(0))) => "still held",
                _ => "not held",
            };
            t.bar(
                &format!("latch L{lock}"),
                applied,
                to,
                format!("latch of {client}'s unlock: {answer}"),
                LATCH,
            );
            latches.push((l, applied, to, answer.to_owned()));
        }
    }
    for d in &run.deliveries {
        let spec = &case.clients[d.client];
        t.arrow(Arrow {
            from_lane: key_lane(spec.lock),
            from_ms: d.sent,
            to_lane: spec.name.clone(),
            to_ms: d.arrived,
            kind: ArrowKind::Publish,
            lost: false,
            detail: format!("{} unlock message to {}", stamp(d.sent), spec.name),
        });
    }
}

/// What an arrow of a call says: when and who sent what, and the reply if there was one.
fn sent_detail(
    sent: u64,
    client: &str,
    what: &str,
    reply: Option<&Result<Reply, lock_core::BackendError>>,
) -> String {
    let reply = reply.map(|r| match r {
        Ok(r) => format!(" -> {r}"),
        Err(e) => format!(" -> error: {e}"),
    });
    format!(
        "{} {client} sends {what}{}",
        stamp(sent),
        reply.unwrap_or_default()
    )
}

/// What the fenced resource did with a write that the simulator's unfenced twin of it saw inside
/// another client's critical section, in words; `None` for any other line of the checkers, and
/// for a write no fenced resource saw (an unfenced client's).
///
/// The simulator sends every write to both resources of its lock: an unfenced one, which takes
/// anything and reports a write inside another's critical section ([`Checker::UnfencedOverlap`]),
/// and the fenced one, which refuses a token below the highest it has accepted. A fenced client
/// writes to both, so a fenced scenario's run reports the overlap that fencing is there to make
/// harmless. The resource of its lesson is the fenced one: each such line is told with that
/// resource's verdict on the same write. A fenced resource that accepted a stale token (fencing
/// broken) would show it here: it accepts only a token at least the highest it has seen.
pub fn fenced_verdict(run: &Run, v: &Violation) -> Option<String> {
    if v.checker != Checker::UnfencedOverlap {
        return None;
    }
    let (at, lock, writer, _) = run
        .history
        .unfenced_overlaps
        .iter()
        .find(|(at, lock, w, _)| *at == v.at && v.message.starts_with(&format!("L{lock}: {w} ")))?;
    let writes = &run.history.fenced_writes;
    let i = writes
        .iter()
        .position(|(a, l, w, _, _)| a == at && l == lock && w == writer)?;
    let (_, _, _, token, accepted) = &writes[i];
    let names = token_names(run);
    let name = short(&names, *lock, *token);
    let highest = writes[..i]
        .iter()
        .filter(|(_, l, _, _, ok)| l == lock && *ok)
        .map(|(_, _, _, t, _)| *t)
        .max();
    Some(match (accepted, highest) {
        (true, _) => format!(
            "the fenced resource accepted {writer}'s token {name}, the highest it had seen: a lower one is refused from now on"
        ),
        (false, Some(h)) => format!(
            "the fenced resource rejected {writer}'s token {name}, having seen {}",
            short(&names, *lock, h)
        ),
        (false, None) => format!("the fenced resource rejected {writer}'s token {name}"),
    })
}

/// The short names of a lock's fencing tokens: `#1`, `#2`, … in the order the counter issued
/// them. A token is the server's clock in microseconds at its grant, sixteen digits that differ
/// only in the middle; `#1` against `#2` shows at a glance which is older.
fn token_names(run: &Run) -> BTreeMap<(u32, u64), String> {
    let mut names = BTreeMap::new();
    for (lock, grants) in &run.history.tokens {
        let mut n = 0;
        for (_, _, token) in grants {
            names.entry((*lock, *token)).or_insert_with(|| {
                n += 1;
                format!("#{n}")
            });
        }
    }
    names
}

/// The short name of `token` on `lock` (its full value if the counter never issued it).
fn short(names: &BTreeMap<(u32, u64), String>, lock: u32, token: u64) -> String {
    names
        .get(&(lock, token))
        .cloned()
        .unwrap_or_else(|| token.to_string())
}

/// The fencing counter after each grant, and the resource: each write with its token, and the
/// highest token it has seen. Tokens are drawn by their short names; a footnote of the legend
/// gives each in full.
fn fencing(t: &mut Timeline, case: &Case, run: &Run) {
    let names = token_names(run);
    for (lock, grants) in &run.history.tokens {
        let mut full = Vec::new();
        for (i, (at, owner, token)) in grants.iter().enumerate() {
            let to = grants.get(i + 1).map_or(case.horizon, |g| g.0);
            let who = run.client_of(owner).unwrap_or("?");
            let name = short(&names, *lock, *token);
            t.bar(
                &format!("counter L{lock}"),
                *at,
                to,
                format!("counter = {name} ({who})"),
                COUNTER,
            );
            full.push(format!(
                "{name} = {token} ({who}, at {:.3} s)",
                *at as f64 / 1000.0
            ));
        }
        t.footnotes.push(format!(
            "L{lock}'s fencing tokens, by order of issue (a later one is higher): {}",
            full.join(", ")
        ));
    }
    let mut highest: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for (at, lock, who, token, accepted) in &run.history.fenced_writes {
        let lane = format!("resource L{lock}");
        let seen = highest.get(lock).map(|(_, h)| *h);
        let name = short(&names, *lock, *token);
        t.arrow(Arrow {
            from_lane: who.clone(),
            from_ms: *at,
            to_lane: lane.clone(),
            to_ms: *at,
            kind: if *accepted {
                ArrowKind::WriteAccepted
            } else {
                ArrowKind::WriteRejected
            },
            lost: false,
            detail: format!("{} {who} writes with token {name} ({token})", stamp(*at)),
        });
        let text = if *accepted {
            format!("{who}'s token {name}: accepted")
        } else {
            let seen = seen.map_or("none".to_owned(), |h| short(&names, *lock, h));
            format!("{who}'s token {name}: rejected, {seen} seen")
        };
        t.note(Note {
            lane: lane.clone(),
            at_ms: *at,
            text,
            colour: if *accepted { "#2e7d32" } else { "#c62828" },
            routine: false,
        });
        if *accepted
            && seen != Some(*token)
            && let Some((from, h)) = highest.insert(*lock, (*at, *token))
        {
            let h = short(&names, *lock, h);
            t.bar(&lane, from, *at, format!("highest seen: {h}"), HIGHEST);
        }
    }
    for (lock, (from, h)) in highest {
        let h = short(&names, lock, h);
        t.bar(
            &format!("resource L{lock}"),
            from,
            case.horizon,
            format!("highest seen: {h}"),
            HIGHEST,
        );
    }
}

/// A call's name as the picture says it: the script, or the command.
fn call_name(call: &Call) -> &'static str {
    match call {
        Call::Script(s) => s.script.name,
        Call::Command(_) => "command",
    }
}

fn lock_of(detail: &str) -> String {
    detail.split(' ').next().unwrap_or("").to_owned()
}

fn server_lane(detail: &str) -> String {
    let lock = lock_of(detail);
    if lock.starts_with('L') || lock.starts_with('F') {
        format!("server {lock}")
    } else {
        "server".into()
    }
}

/// The foreign lock's story: its key's life on the server, what each client believed, its
/// pauses, and every command with the server's answer where it is the lesson.
fn foreign_lock(t: &mut Timeline, foreign: &ForeignRun, horizon: u64) {
    let keys = foreign.keys();
    for g in &foreign.grants {
        let key = &keys[g.lock as usize];
        t.bar(
            &format!("server {key}"),
            g.from,
            g.to.min(horizon),
            format!("key: {}'s token", g.who),
            KEY,
        );
    }
    for b in &foreign.beliefs {
        t.bar(&b.who, b.from, b.to, "believes it holds the lock", BELIEF);
    }
    for s in &foreign.specs {
        if let Some((at, for_ms)) = s.pause {
            t.bar(&s.name, at, at + for_ms, "GC pause", PAUSE);
        }
    }
    for m in &foreign.messages {
        let spec = &foreign.specs[m.client];
        let (client, lane) = (&spec.name, format!("server {}", spec.key));
        let Some(applied) = m.applied else { continue };
        let detail = sent_detail(m.sent, client, &foreign_command(&m.argv), m.reply.as_ref());
        t.arrow(Arrow {
            from_lane: client.clone(),
            from_ms: m.sent,
            to_lane: lane.clone(),
            to_ms: applied,
            kind: ArrowKind::Call,
            lost: false,
            detail: detail.clone(),
        });
        if let Some(answered) = m.answered {
            t.arrow(Arrow {
                from_lane: lane.clone(),
                from_ms: applied,
                to_lane: client.clone(),
                to_ms: answered,
                kind: ArrowKind::Reply,
                lost: false,
                detail,
            });
        }
        let answer = match (m.purpose, &m.reply) {
            ("acquire", Some(Ok(Reply::Status(_)))) => "SET NX: granted",
            ("acquire", _) => "SET NX: held by another",
            ("release", Some(Err(_))) => "EVALSHA: NOSCRIPT, sent again as EVAL",
            ("release", Some(Ok(Reply::Int(1)))) => "release script: 1, key deleted",
            ("release", Some(Ok(Reply::Int(0)))) => "release script: 0, not its token",
            _ => continue,
        };
        t.note(Note {
            lane,
            at_ms: applied,
            text: format!("{client}'s {answer}"),
            colour: "#424242",
            routine: answer == "SET NX: held by another",
        });
    }
}

/// A foreign client's command as the picture says it: the script body named, long tokens cut.
fn foreign_command<B: AsRef<[u8]>>(argv: &[B]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.as_ref();
            if a == RELEASE_SCRIPT.as_bytes() {
                "<release script>".to_owned()
            } else if a.len() > 12 {
                format!("{}…", String::from_utf8_lossy(&a[..8]))
            } else {
                String::from_utf8_lossy(a).into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
