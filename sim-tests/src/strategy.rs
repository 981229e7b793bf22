//! Proptest strategies for cases: clients, workloads and fault timelines that shrink well.
//!
//! A generated case is a list of clients and a list of faults; proptest shrinks both by dropping
//! elements and lowering numbers, so a failure ends as the shortest fault timeline that still fails.
//! Fault targets are indices taken modulo the number of clients, so every shrink stays valid.

use crate::case::{AcquireKind, Case, ClientSpec, Fault};
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
}

fn acquire_kind() -> impl Strategy<Value = AcquireKind> {
    prop_oneof![
        4 => Just(AcquireKind::Watchdog),
        2 => (2_000u64..=20_000).prop_map(AcquireKind::Lease),
        2 => (0u64..=15_000, prop::option::of(2_000u64..=20_000))
            .prop_map(|(wait, lease)| AcquireKind::Try { wait, lease }),
    ]
}

/// A client; [`cases`] names it by its place in the case.
fn client(locks: u32, max_drift: i64) -> impl Strategy<Value = ClientSpec> {
    (
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
                }
            },
        )
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

/// Cases within `env`. A case without fair locks draws exactly what it drew before fair locks
/// existed, so stored seeds and shrinks of the other suites are unchanged.
pub fn cases(env: Envelope) -> BoxedStrategy<Case> {
    let plain = plain_cases(env.clone());
    if !env.fair {
        return plain.boxed();
    }
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

fn plain_cases(env: Envelope) -> impl Strategy<Value = Case> {
    let clients = prop::collection::vec(client(env.locks, env.max_drift_ppm), env.clients.clone());
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
