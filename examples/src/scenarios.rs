//! The lessons: each scenario is a simulated case, run by the real lock machine on the fake
//! engine in virtual time, and told as a [`Timeline`].
//!
//! Nothing here decides what the lock does. A scenario only sets the stage (who locks what, how
//! long they work, which fault strikes when); the timeline is whatever the library then did, so the
//! lesson cannot drift from the code.

use crate::timeline::{EventKind, Timeline};
use sim_tests::{AcquireKind, Case, ClientSpec, Fault, Run};

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

/// A scenario's name, its one-line lesson, and how to build its case.
pub struct Scenario {
    /// The name given to `--scenario`.
    pub name: &'static str,
    /// What it teaches, in two sentences.
    pub lesson: &'static str,
    build: fn(&Params) -> Case,
}

/// Every scenario, the default first.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "watchdog",
        lesson: "Without a lease the lock gets watchdog_timeout (30 s) and the watchdog renews it every third of that while the holder lives. \
                 Unlock takes the hold off the watchdog before the release is sent, so renewal stops at once.",
        build: watchdog,
    },
    Scenario {
        name: "lease-too-short",
        lesson: "An explicit lease is never renewed: work longer than the lease outlives the lock, a second client enters, and the work is done twice. \
                 The same work under the watchdog keeps the lock to the end, and the waiter enters only after the unlock.",
        build: lease_too_short,
    },
    Scenario {
        name: "lost-unlock-reply",
        lesson: "The unlock was applied but its reply was lost; renewal had already been cancelled before it was sent. \
                 The retry carries the same request id, so the server's latch answers \"released\" instead of \"not your lock\".",
        build: lost_unlock_reply,
    },
    Scenario {
        name: "lost-unlock-request",
        lesson: "The unlock never reaches Redis, and every retry is lost too, so the caller is told the outcome is unknown. \
                 Renewal was cancelled before the first attempt, so the key still expires one lease after the last renewal.",
        build: lost_unlock_request,
    },
    Scenario {
        name: "client-crash",
        lesson: "A crashed holder renews no more: its key lives out the lease from the last renewal and expires. \
                 A waiting client then takes the lock, with no one having to clean up.",
        build: client_crash,
    },
    Scenario {
        name: "gc-pause",
        lesson: "A GC pause longer than the remaining lease stops the renewals, the key expires, and a second client takes the lock. \
                 The first resumes and writes, not knowing, and an unfenced resource accepts both: the lock alone cannot prevent this.",
        build: gc_pause,
    },
    Scenario {
        name: "gc-pause-fenced",
        lesson: "The same pause, but every write carries the holder's fencing token. \
                 The resource has seen the second holder's higher token, so the paused holder's stale write is rejected.",
        build: gc_pause_fenced,
    },
    Scenario {
        name: "reentrant",
        lesson: "The same owner may lock again: the hash counts holds, and each reentry re-applies the lease. \
                 One unlock leaves it held (and renewed); the last unlock deletes it.",
        build: reentrant,
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

impl Scenario {
    /// The case for these parameters.
    pub fn case(&self, p: &Params) -> Case {
        (self.build)(p)
    }

    /// Runs the scenario and tells it as a timeline.
    pub fn run(&self, p: &Params) -> (Case, Run, Timeline) {
        let case = self.case(p);
        let run = sim_tests::run(&case);
        let timeline = to_timeline(self.name, &case, &run);
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
        "write" | "write-accepted" => EventKind::WriteAccepted,
        "write-rejected" => EventKind::WriteRejected,
        "dropped" => EventKind::Dropped,
        "unlock-failed" => EventKind::UnlockFailed,
        "timeout" => EventKind::Timeout,
        "restart" | "failover" | "clock-jump" | "max-hold" => EventKind::Note,
        _ => return None,
    })
}

/// Tells a run as a timeline: client lanes, then a lane per lock on the server with the key's
/// life as bars.
pub fn to_timeline(title: &str, case: &Case, run: &Run) -> Timeline {
    let names: Vec<&str> = case.clients.iter().map(|c| c.name.as_str()).collect();
    let mut t = Timeline::new(format!("scenario: {title}"), &names);
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
            _ => m.detail.clone(),
        };
        let actor = if m.actor == "server" {
            server_lane(&m.detail)
        } else {
            m.actor.clone()
        };
        let detail = match run.client_of(detail.rsplit(' ').next().unwrap_or("")) {
            Some(name) if m.what == "expire" => format!("{} (held by {name})", lock_of(&detail)),
            _ => detail,
        };
        t.event(m.at, &actor, kind, detail);
    }
    for g in &run.history.server_grants {
        let who = run.client_of(&g.who).unwrap_or("?");
        t.bar(
            &format!("server L{}", g.lock),
            g.from,
            g.to,
            format!("key held by {who}"),
            "#2e7d32",
        );
    }
    for f in &case.faults {
        if let Fault::Pause { client, at, for_ms } = f {
            t.bar(
                &case.clients[*client].name,
                *at,
                at + for_ms,
                "GC pause",
                "#6a1b9a",
            );
        }
    }
    for i in &run.history.client_intervals {
        t.bar(
            &i.who,
            i.from,
            i.to,
            "believes it holds the lock",
            "#1565c0",
        );
    }
    t
}

fn lock_of(detail: &str) -> String {
    detail.split(' ').next().unwrap_or("").to_owned()
}

fn server_lane(detail: &str) -> String {
    let lock = lock_of(detail);
    if lock.starts_with('L') {
        format!("server {lock}")
    } else {
        "server".into()
    }
}
