//! Proptest strategies for cases: clients, workloads and fault timelines that shrink well.
//!
//! A generated case is a list of clients and a list of faults; proptest shrinks both by dropping
//! elements and lowering numbers, so a failure ends as the shortest fault timeline that still fails.
//! Fault targets are indices taken modulo the number of clients, so every shrink stays valid.

use crate::case::{AcquireKind, Case, ClientSpec, Fault, RwRole};
use proptest::prelude::*;

/// What a generated case may contain.
#[derive(Clone, Debug)]
pub struct Envelope {
    /// Clients per case.
    pub clients: std::ops::RangeInclusive<usize>,
    /// Locks they share.
    pub locks: u32,
    /// Virtual length of a run, ms.
    pub horizon: u64,
    /// Longest GC pause, ms.
    pub max_pause: u64,
    /// Whether clients may crash.
    pub crashes: bool,
    /// Whether requests and replies may be dropped or delayed.
    pub message_faults: bool,
    /// Largest per-mille random loss of any message, drawn per direction per case.
    pub max_loss: u32,
    /// Largest client clock drift, ppm (either way).
    pub max_drift_ppm: i64,
    /// Faults per case.
    pub faults: std::ops::RangeInclusive<usize>,
    /// Whether locks may be fair: each lock is drawn fair with a chance of three in four, and
    /// every client of a fair lock acquires it fairly, without fencing.
    pub fair: bool,
    /// Whether locks may be read-write locks: each lock is drawn one with a chance of three in
    /// four, and each of its clients a reader, a writer or a downgrading writer (3 : 2 : 1),
    /// without fencing. A lock drawn both fair and read-write is read-write.
    pub read_write: bool,
}

impl Envelope {
    /// Inside the safe envelope: pauses, drops, delays and crashes, clocks that agree.
    pub fn safe() -> Envelope {
        Envelope {
            clients: 2..=4,
            locks: 2,
            horizon: 90_000,
            max_pause: 40_000,
            crashes: true,
            message_faults: true,
            max_loss: 20,
            max_drift_ppm: 0,
            faults: 0..=4,
            fair: false,
            read_write: false,
        }
    }

    /// The safe envelope with fair locks: more clients per lock, so that waiters queue.
    pub fn safe_fair() -> Envelope {
        Envelope {
            clients: 2..=5,
            fair: true,
            ..Envelope::safe()
        }
    }

    /// The safe envelope with read-write locks: more clients per lock, so that readers share and
    /// writers wait behind them.
    pub fn safe_read_write() -> Envelope {
        Envelope {
            clients: 2..=5,
            read_write: true,
            ..Envelope::safe()
        }
    }
}

fn role() -> impl Strategy<Value = RwRole> {
    prop_oneof![
        3 => Just(RwRole::Read),
        2 => Just(RwRole::Write),
        1 => Just(RwRole::Downgrade),
    ]
}

fn acquire_kind() -> impl Strategy<Value = AcquireKind> {
    prop_oneof![
        4 => Just(AcquireKind::Watchdog),
        2 => (2_000u64..=20_000).prop_map(AcquireKind::Lease),
        2 => (0u64..=15_000, prop::option::of(2_000u64..=20_000))
            .prop_map(|(wait, lease)| AcquireKind::Try { wait, lease }),
    ]
}

/// A client; [`cases`] names it by its place in the case. With `read_write`, it draws a role
/// too, with the client, so that shrinking a case keeps each client's role; without, it draws
/// what it drew before read-write locks existed.
fn client(locks: u32, max_drift: i64, read_write: bool) -> BoxedStrategy<ClientSpec> {
    let plain = (
        0..locks,
        acquire_kind(),
        any::<bool>(),
        0u64..=5_000,
        (200u64..=4_000, 0u64..=8_000),
        0u64..=2_000,
        0u32..=1,
        -max_drift..=max_drift,
    )
        .prop_map(
            move |(lock, acquire, fenced, start, (work_lo, extra), think, reentry, drift_ppm)| {
                ClientSpec {
                    name: String::new(),
                    lock,
                    acquire,
                    fenced,
                    start,
                    work: (work_lo, work_lo + extra),
                    think,
                    reentry,
                    cycles: 0,
                    drift_ppm,
                    role: RwRole::Write,
                }
            },
        );
    if !read_write {
        return plain.boxed();
    }
    (plain, role())
        .prop_map(|(mut c, role)| {
            c.role = role;
            c
        })
        .boxed()
}

/// A raw fault: the client index is reduced modulo the number of clients.
fn fault(env: Envelope) -> impl Strategy<Value = Fault> {
    let h = env.horizon;
    let pause = (any::<usize>(), 0..h, 1..=env.max_pause.max(1))
        .prop_map(|(client, at, for_ms)| Fault::Pause { client, at, for_ms });
    let crash = (any::<usize>(), 0..h).prop_map(|(client, at)| Fault::Crash { client, at });
    // A message window: a client, a start, and a length of up to 30 s.
    let window = (any::<usize>(), 0..h, 1u64..=30_000)
        .prop_map(|(client, from, len)| (client, from, from + len));
    let drop_req = window
        .clone()
        .prop_map(|(client, from, to)| Fault::DropRequests { client, from, to });
    let drop_rep = window
        .clone()
        .prop_map(|(client, from, to)| Fault::DropReplies { client, from, to });
    let delay =
        (window.clone(), 1u64..=2_000).prop_map(|((client, from, to), by)| Fault::DelayReplies {
            client,
            from,
            to,
            by,
        });
    // Delays stay within the latch window (4 response timeouts, 12 s by default): inside the
    // envelope, where a repeated attempt is answered by its latch.
    let delay_req =
        (window.clone(), 1u64..=2_000).prop_map(|((client, from, to), by)| Fault::DelayRequests {
            client,
            from,
            to,
            by,
        });
    let drop_pubsub = window.prop_map(|(client, from, to)| Fault::DropPubSub { client, from, to });
    let crashes = env.crashes;
    let messages = env.message_faults;
    prop_oneof![
        3 => pause,
        if crashes { 1 } else { 0 } => crash,
        if messages { 2 } else { 0 } => drop_req,
        if messages { 2 } else { 0 } => drop_rep,
        if messages { 1 } else { 0 } => delay,
        if messages { 1 } else { 0 } => delay_req,
        if messages { 1 } else { 0 } => drop_pubsub,
    ]
}

fn fix_client(mut f: Fault, n: usize) -> Fault {
    if let Some(client) = f.client_mut() {
        *client %= n.max(1);
    }
    f
}

/// Cases within `env`. A case without fair or read-write locks draws exactly what it drew before
/// they existed, so stored seeds and shrinks of the other suites are unchanged.
pub fn cases(env: Envelope) -> BoxedStrategy<Case> {
    let plain = plain_cases(env.clone());
    if env.read_write {
        return read_write_cases(env, plain.boxed());
    }
    if !env.fair {
        return plain.boxed();
    }
    fair_cases(env, plain.boxed())
}

fn fair_cases(env: Envelope, plain: BoxedStrategy<Case>) -> BoxedStrategy<Case> {
    let fair = prop::collection::vec(prop::bool::weighted(0.75), env.locks as usize);
    (plain, fair)
        .prop_map(|(mut case, fair)| {
            case.fair = (0..)
                .zip(fair)
                .filter(|(_, f)| *f)
                .map(|(l, _)| l)
                .collect();
            let fair_locks = case.fair.clone();
            for c in &mut case.clients {
                c.fenced &= !fair_locks.contains(&c.lock);
            }
            case
        })
        .boxed()
}

/// Read-write locks drawn over `base` (plain, or with fair locks when `env.fair`), whose clients
/// drew a role each; a client of any other lock keeps the writer's role, so its text names none.
fn read_write_cases(env: Envelope, plain: BoxedStrategy<Case>) -> BoxedStrategy<Case> {
    let base = if env.fair {
        fair_cases(env.clone(), plain)
    } else {
        plain
    };
    let rw = prop::collection::vec(prop::bool::weighted(0.75), env.locks as usize);
    (base, rw)
        .prop_map(|(mut case, rw)| {
            case.rw = (0..).zip(rw).filter(|(_, r)| *r).map(|(l, _)| l).collect();
            let rw_locks = case.rw.clone();
            case.fair.retain(|l| !rw_locks.contains(l));
            for c in &mut case.clients {
                if rw_locks.contains(&c.lock) {
                    c.fenced = false;
                } else {
                    c.role = RwRole::Write;
                }
            }
            case
        })
        .boxed()
}

fn plain_cases(env: Envelope) -> impl Strategy<Value = Case> {
    let clients = prop::collection::vec(
        client(env.locks, env.max_drift_ppm, env.read_write),
        env.clients.clone(),
    );
    let faults = prop::collection::vec(fault(env.clone()), env.faults.clone());
    let loss = (0..=env.max_loss, 0..=env.max_loss);
    (any::<u64>(), clients, faults, loss).prop_map(move |(seed, mut clients, faults, loss)| {
        for (i, c) in clients.iter_mut().enumerate() {
            c.name = ((b'a' + i as u8) as char).to_string();
        }
        let n = clients.len();
        let mut case = Case::new(seed, env.horizon);
        case.latency = (1, 5);
        case.loss = loss;
        case.clients = clients;
        case.faults = faults.into_iter().map(|f| fix_client(f, n)).collect();
        case
    })
}
