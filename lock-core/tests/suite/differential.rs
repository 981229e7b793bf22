//! The Lua scripts and their native twins do the same thing, proven against a real Redis; and the
//! fake Redis that runs the twins behaves as that Redis does, through both of its front doors.
//!
//! Random sequences of the fifteen scripts, the lock queries (HGET, PTTL, EXISTS) and plain writes that
//! put a string or a list on a lock's key, token counter or latch (so scripts meet wrong-typed keys)
//! run twice: on a server through a [`Backend`], and on the native twins over the reference store.
//! Replies must be identical, errors included, and so must the final keys, their values and TTLs.
//! The reference runs at the sequence's start time while real time moves on, so on the real
//! server a TTL may be lower by at most the real time elapsed; nothing else may differ.
//!
//! The servers: the shared Redis through [`RedisBackend`] (`REDIS_URL`), and the `fake-redis`
//! engine through `RedisBackend<FakeConnection, FakeSubscriber>` (the same `redis`-crate code as
//! against the real one) and through `FakeBackend`. The fake's clock is a [`ManualClock`] set to
//! each sequence's start time and left there, as the reference's is: on the fake no time passes,
//! so there TTLs, scores and fencing tokens must be exactly the reference's, however loaded the
//! machine. The fake runs the native twins, so there the test holds the
//! engine (its commands, replies, error texts, expiry and script cache) to the reference.
//! A third leg runs the fifteen Lua bodies on the fake's embedded Lua instead
//! (`Engine::run_lock_scripts_on_lua`): held to the same reference, Lua on real Redis, the native
//! twins and Lua on the fake agree.
//!
//! The fair lock's four scripts run in the same sequences, on locks of their own, with the plain
//! renewal on their holds and plain writes on their queue and timeouts. Their deadlines are the
//! client's clock plus whole seconds, and a server's scores may be lower than the reference's by
//! the real time elapsed, as its TTLs may: every lease, wait and clock step is whole seconds, so
//! the stale-waiter purge decides alike on both sides while that slack stays under a second.
//!
//! The read-write lock's six scripts run in the same sequences too, on locks of their own, with
//! plain writes on their hash and latches. The keys compared at the end are the ones a sequence
//! can name, and every key the reference holds besides (the read holds' timeout keys, one per
//! count).
//!
//! The scripts that publish take the publish command as an argument, as Redisson's do: half the
//! sequences (those of even length) hand them `spublish`, the others `publish`.
//!
//! `DIFF_CASES` sets the number of sequences per server (default 2,000).

use crate::common;

use bytes::Bytes;
use fake_redis::{FakeConnection, ManualClock, NodeId, shared};
use lock_core::fake::{FakeBackend, FakeSubscriber};
use lock_core::script::reference::{ReferenceStore, Value};
use lock_core::script::{
    PublishCommand, ScriptCall, Store, acquire, acquire_fenced, fair, force_unlock, release,
    renew_batch, rw,
};
use lock_core::{
    Backend, BackendError, FairKeys, KeyLayout, Lease, LockKeys, Millis, Owner, ReadWriteKeys,
    RedisBackend, Reply, RequestId,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::{Duration, Instant};

const LOCKS: usize = 2;
const OWNERS: u64 = 3;
const REQUESTS: u128 = 3;

/// Where a plain write lands.
#[derive(Clone, Copy, Debug)]
enum Target {
    Lock,
    Token,
    AcquireLatch(u128),
    UnlockLatch(u128),
    FairLock,
    FairQueue,
    FairTimeouts,
    FairUnlockLatch(u128),
    RwLock,
    RwAcquireLatch(u128),
    RwUnlockLatch(u128),
}

#[derive(Clone, Debug)]
enum Op {
    Acquire {
        lock: usize,
        owner: u64,
        req: u128,
        lease: u64,
        /// The count the call carries (`ARGV[4]`, or `ARGV[5]` for a release), if any.
        held: Option<u32>,
    },
    AcquireFenced {
        lock: usize,
        owner: u64,
        req: u128,
        lease: u64,
        /// The count the call carries (`ARGV[4]`, or `ARGV[5]` for a release), if any.
        held: Option<u32>,
    },
    Release {
        lock: usize,
        owner: u64,
        req: u128,
        lease: u64,
        /// The count the call carries (`ARGV[4]`, or `ARGV[5]` for a release), if any.
        held: Option<u32>,
    },
    Renew {
        holds: Vec<(usize, u64)>,
        lease: u64,
    },
    ForceUnlock {
        lock: usize,
    },
    HGet {
        lock: usize,
        owner: u64,
    },
    Pttl {
        lock: usize,
    },
    Exists {
        lock: usize,
    },
    WriteString {
        lock: usize,
        target: Target,
        value: &'static str,
    },
    WriteList {
        lock: usize,
        target: Target,
    },
    /// The fair ops' times are whole seconds; `later` moves the client's clock past the
    /// sequence's start.
    FairAcquire {
        lock: usize,
        owner: u64,
        lease: u64,
        wait: u64,
        later: u64,
        held: Option<u32>,
    },
    FairRelease {
        lock: usize,
        owner: u64,
        req: u128,
        lease: u64,
        later: u64,
        held: Option<u32>,
    },
    FairForceUnlock {
        lock: usize,
        later: u64,
    },
    FairGiveUp {
        lock: usize,
        owner: u64,
        wait: u64,
    },
    FairRenew {
        holds: Vec<(usize, u64)>,
        lease: u64,
    },
    /// The read-write ops; `held` is the count the call carries, if any.
    RwAcquire {
        write: bool,
        lock: usize,
        owner: u64,
        req: u128,
        lease: u64,
        held: Option<u32>,
    },
    RwRelease {
        write: bool,
        lock: usize,
        owner: u64,
        req: u128,
        lease: u64,
        held: Option<u32>,
    },
    RwRenew {
        holds: Vec<(usize, u64)>,
        lease: u64,
    },
    RwForceUnlock {
        write: bool,
        lock: usize,
    },
    /// Renews a read-write lock's writers with the plain `renew_batch`, as the watchdog does.
    RwWriterRenew {
        holds: Vec<(usize, u64)>,
        lease: u64,
    },
}

/// The plain ops, the fair ones and the read-write ones, mixed in one sequence.
fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![1 => op(), 1 => fair_op(), 1 => rw_op()]
}

fn rw_op() -> impl Strategy<Value = Op> {
    // Mostly one lock, so that readers and writers meet.
    let lock = prop_oneof![4 => Just(0), 1 => 0..LOCKS];
    let owner = 0..OWNERS;
    let req = 0..REQUESTS;
    let lease = 5_000u64..=60_000;
    let held = prop::option::of(0u32..3);
    let write = any::<bool>();
    let target = prop_oneof![
        Just(Target::RwLock),
        (0..REQUESTS).prop_map(Target::RwAcquireLatch),
        (0..REQUESTS).prop_map(Target::RwUnlockLatch),
    ];
    prop_oneof![
        6 => (write, lock.clone(), owner.clone(), req.clone(), lease.clone(), held.clone())
            .prop_map(|(write, lock, owner, req, lease, held)| Op::RwAcquire { write, lock, owner, req, lease, held }),
        4 => (write, lock.clone(), owner.clone(), req, lease.clone(), held)
            .prop_map(|(write, lock, owner, req, lease, held)| Op::RwRelease { write, lock, owner, req, lease, held }),
        1 => (prop::collection::vec((lock.clone(), owner.clone()), 0..4), lease.clone())
            .prop_map(|(holds, lease)| Op::RwRenew { holds, lease }),
        1 => (prop::collection::vec((lock.clone(), owner), 0..4), lease)
            .prop_map(|(holds, lease)| Op::RwWriterRenew { holds, lease }),
        1 => (write, lock.clone()).prop_map(|(write, lock)| Op::RwForceUnlock { write, lock }),
        1 => (lock.clone(), target.clone(), prop_oneof![Just("x"), Just("7")])
            .prop_map(|(lock, target, value)| Op::WriteString { lock, target, value }),
        1 => (lock, target).prop_map(|(lock, target)| Op::WriteList { lock, target }),
    ]
}

fn fair_op() -> impl Strategy<Value = Op> {
    // Mostly one lock, so that queues grow behind its holder.
    let lock = prop_oneof![4 => Just(0), 1 => 0..LOCKS];
    let owner = 0..OWNERS;
    let req = 0..REQUESTS;
    let lease = 5u64..=30;
    let wait = 1u64..=10;
    let later = 0u64..=40;
    let held = prop::option::of(0u32..3);
    let target = prop_oneof![
        Just(Target::FairLock),
        Just(Target::FairQueue),
        Just(Target::FairTimeouts),
        (0..REQUESTS).prop_map(Target::FairUnlockLatch),
    ];
    prop_oneof![
        6 => (lock.clone(), owner.clone(), lease.clone(), wait.clone(), later.clone(), held.clone())
            .prop_map(|(lock, owner, lease, wait, later, held)| Op::FairAcquire { lock, owner, lease, wait, later, held }),
        3 => (lock.clone(), owner.clone(), req, lease.clone(), later.clone(), held)
            .prop_map(|(lock, owner, req, lease, later, held)| Op::FairRelease { lock, owner, req, lease, later, held }),
        1 => (lock.clone(), later).prop_map(|(lock, later)| Op::FairForceUnlock { lock, later }),
        2 => (lock.clone(), owner.clone(), wait).prop_map(|(lock, owner, wait)| Op::FairGiveUp { lock, owner, wait }),
        1 => (prop::collection::vec((lock.clone(), owner), 0..4), lease)
            .prop_map(|(holds, lease)| Op::FairRenew { holds, lease }),
        1 => (lock.clone(), target.clone(), prop_oneof![Just("x"), Just("7")])
            .prop_map(|(lock, target, value)| Op::WriteString { lock, target, value }),
        1 => (lock, target).prop_map(|(lock, target)| Op::WriteList { lock, target }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let lock = 0..LOCKS;
    let owner = 0..OWNERS;
    let req = 0..REQUESTS;
    let lease = 5_000u64..=60_000;
    let held = prop::option::of(0u32..3);
    let target = prop_oneof![
        Just(Target::Lock),
        Just(Target::Token),
        (0..REQUESTS).prop_map(Target::AcquireLatch),
        (0..REQUESTS).prop_map(Target::UnlockLatch),
    ];
    prop_oneof![
        4 => (lock.clone(), owner.clone(), req.clone(), lease.clone(), held.clone())
            .prop_map(|(lock, owner, req, lease, held)| Op::Acquire { lock, owner, req, lease, held }),
        3 => (lock.clone(), owner.clone(), req.clone(), lease.clone(), held.clone())
            .prop_map(|(lock, owner, req, lease, held)| Op::AcquireFenced { lock, owner, req, lease, held }),
        4 => (lock.clone(), owner.clone(), req.clone(), lease.clone(), held.clone())
            .prop_map(|(lock, owner, req, lease, held)| Op::Release { lock, owner, req, lease, held }),
        2 => (prop::collection::vec((lock.clone(), owner.clone()), 0..4), lease)
            .prop_map(|(holds, lease)| Op::Renew { holds, lease }),
        1 => lock.clone().prop_map(|lock| Op::ForceUnlock { lock }),
        1 => (lock.clone(), owner).prop_map(|(lock, owner)| Op::HGet { lock, owner }),
        1 => lock.clone().prop_map(|lock| Op::Pttl { lock }),
        1 => lock.clone().prop_map(|lock| Op::Exists { lock }),
        1 => (lock.clone(), target.clone(), prop_oneof![Just("x"), Just("7")])
            .prop_map(|(lock, target, value)| Op::WriteString { lock, target, value }),
        1 => (lock, target).prop_map(|(lock, target)| Op::WriteList { lock, target }),
    ]
}

/// One sequence's names: its own prefix, so sequences never see each other's keys.
struct Names {
    locks: Vec<LockKeys>,
    fair: Vec<FairKeys>,
    rw: Vec<ReadWriteKeys>,
    /// The sequence's start, unix ms: the reference's frozen clock, and the fair clients' clock
    /// before their `later`.
    start_ms: i64,
    /// The command the sequence's scripts publish with.
    publish: PublishCommand,
}

impl Names {
    fn new(prefix: &str, start_ms: i64, publish: PublishCommand) -> Names {
        let layout = KeyLayout::new(prefix);
        Names {
            locks: (0..LOCKS)
                .map(|i| layout.lock(&format!("{prefix}:L{i}")))
                .collect(),
            fair: (0..LOCKS)
                .map(|i| layout.fair_lock(&format!("{prefix}:F{i}")))
                .collect(),
            rw: (0..LOCKS)
                .map(|i| layout.read_write(&format!("{prefix}:R{i}")))
                .collect(),
            start_ms,
            publish,
        }
    }

    fn clock(&self, later_s: u64) -> i64 {
        self.start_ms + later_s as i64 * 1000
    }

    fn owner(&self, i: u64) -> Owner {
        Owner::new("client", i)
    }

    fn key(&self, lock: usize, target: Target) -> Bytes {
        let keys = &self.locks[lock];
        match target {
            Target::Lock => keys.lock.clone(),
            Target::Token => keys.token.clone(),
            Target::AcquireLatch(r) => keys.acquire_latch(&RequestId(r)),
            Target::UnlockLatch(r) => keys.unlock_latch(&RequestId(r)),
            Target::FairLock => self.fair[lock].lock.lock.clone(),
            Target::FairQueue => self.fair[lock].queue.clone(),
            Target::FairTimeouts => self.fair[lock].timeouts.clone(),
            Target::FairUnlockLatch(r) => self.fair[lock].lock.unlock_latch(&RequestId(r)),
            Target::RwLock => self.rw[lock].lock.lock.clone(),
            Target::RwAcquireLatch(r) => self.rw[lock].lock.acquire_latch(&RequestId(r)),
            Target::RwUnlockLatch(r) => self.rw[lock].lock.unlock_latch(&RequestId(r)),
        }
    }

    /// Every key a sequence can create.
    fn all_keys(&self) -> Vec<Bytes> {
        let mut out = Vec::new();
        for lock in 0..LOCKS {
            out.push(self.key(lock, Target::Lock));
            out.push(self.key(lock, Target::Token));
            for r in 0..REQUESTS {
                out.push(self.key(lock, Target::AcquireLatch(r)));
                out.push(self.key(lock, Target::UnlockLatch(r)));
                out.push(self.key(lock, Target::FairUnlockLatch(r)));
                out.push(self.key(lock, Target::RwAcquireLatch(r)));
                out.push(self.key(lock, Target::RwUnlockLatch(r)));
            }
            out.push(self.key(lock, Target::RwLock));
            for owner in 0..OWNERS {
                for count in 1..=3 {
                    let owner = self.owner(owner);
                    out.push(rw::read_acquire::timeout_key(&self.rw[lock], &owner, count));
                }
            }
            out.push(self.key(lock, Target::FairLock));
            out.push(self.key(lock, Target::FairQueue));
            out.push(self.key(lock, Target::FairTimeouts));
        }
        out
    }

    fn script(&self, op: &Op) -> Option<ScriptCall> {
        self.script_call(op)
            .map(|call| call.with_publish(self.publish))
    }

    fn script_call(&self, op: &Op) -> Option<ScriptCall> {
        let lease = |ms: u64| Lease::from_millis(ms).unwrap();
        let latch = Millis(20_000);
        let secs = |s: u64| Lease::from_millis(s * 1000).unwrap();
        Some(match *op {
            Op::RwAcquire {
                write,
                lock,
                owner,
                req,
                lease: l,
                held,
            } => {
                let acquire = if write {
                    rw::write_acquire::call
                } else {
                    rw::read_acquire::call
                };
                let owner = self.owner(owner);
                acquire(
                    &self.rw[lock],
                    &RequestId(req),
                    lease(l),
                    &owner,
                    latch,
                    held,
                )
            }
            Op::RwRelease {
                write: true,
                lock,
                owner,
                req,
                lease: l,
                held,
            } => rw::write_release::call(
                &self.rw[lock],
                &RequestId(req),
                lease(l),
                &self.owner(owner),
                latch,
                held,
            ),
            Op::RwRelease {
                write: false,
                lock,
                owner,
                req,
                held,
                ..
            } => rw::read_release::call(
                &self.rw[lock],
                &RequestId(req),
                &self.owner(owner),
                latch,
                held,
            ),
            Op::RwRenew {
                ref holds,
                lease: l,
            } => {
                let owners: Vec<Owner> = holds.iter().map(|&(_, o)| self.owner(o)).collect();
                rw::renew::call(
                    lease(l),
                    holds.iter().zip(&owners).map(|(&(lock, _), o)| {
                        (&self.rw[lock].lock.lock, &self.rw[lock].key_prefix, o)
                    }),
                )
            }
            Op::RwWriterRenew {
                ref holds,
                lease: l,
            } => {
                let owners: Vec<Owner> =
                    holds.iter().map(|&(_, o)| self.owner(o).writer()).collect();
                renew_batch::call(
                    lease(l),
                    holds
                        .iter()
                        .zip(&owners)
                        .map(|(&(lock, _), o)| (&self.rw[lock].lock.lock, o)),
                )
            }
            Op::RwForceUnlock { write, lock } => rw::force_unlock::call(&self.rw[lock], write),
            Op::FairAcquire {
                lock,
                owner,
                lease: l,
                wait,
                later,
                held,
            } => fair::acquire::call(
                &self.fair[lock],
                secs(l),
                &self.owner(owner),
                Millis(wait * 1000),
                self.clock(later),
                held,
            ),
            Op::FairRelease {
                lock,
                owner,
                req,
                lease: l,
                later,
                held,
            } => fair::release::call(
                &self.fair[lock],
                &RequestId(req),
                secs(l),
                &self.owner(owner),
                self.clock(later),
                latch,
                held,
            ),
            Op::FairForceUnlock { lock, later } => {
                fair::force_unlock::call(&self.fair[lock], self.clock(later))
            }
            Op::FairGiveUp { lock, owner, wait } => {
                fair::give_up::call(&self.fair[lock], &self.owner(owner), Millis(wait * 1000))
            }
            Op::FairRenew {
                ref holds,
                lease: l,
            } => {
                let owners: Vec<Owner> = holds.iter().map(|&(_, o)| self.owner(o)).collect();
                renew_batch::call(
                    secs(l),
                    holds
                        .iter()
                        .zip(&owners)
                        .map(|(&(lock, _), o)| (&self.fair[lock].lock.lock, o)),
                )
            }
            Op::Acquire {
                lock,
                owner,
                req,
                lease: l,
                held,
            } => match held {
                None => acquire::call(
                    &self.locks[lock],
                    &RequestId(req),
                    lease(l),
                    &self.owner(owner),
                    latch,
                ),
                Some(held) => acquire::call_from(
                    &self.locks[lock],
                    &RequestId(req),
                    lease(l),
                    &self.owner(owner),
                    latch,
                    held,
                ),
            },
            Op::AcquireFenced {
                lock,
                owner,
                req,
                lease: l,
                held,
            } => match held {
                None => acquire_fenced::call(
                    &self.locks[lock],
                    &RequestId(req),
                    lease(l),
                    &self.owner(owner),
                    latch,
                ),
                Some(held) => acquire_fenced::call_from(
                    &self.locks[lock],
                    &RequestId(req),
                    lease(l),
                    &self.owner(owner),
                    latch,
                    held,
                ),
            },
            Op::Release {
                lock,
                owner,
                req,
                lease: l,
                held,
            } => match held {
                None => release::call(
                    &self.locks[lock],
                    &RequestId(req),
                    lease(l),
                    &self.owner(owner),
                    latch,
                ),
                Some(held) => release::call_from(
                    &self.locks[lock],
                    &RequestId(req),
                    lease(l),
                    &self.owner(owner),
                    latch,
                    held,
                ),
            },
            Op::Renew {
                ref holds,
                lease: l,
            } => {
                let owners: Vec<Owner> = holds.iter().map(|&(_, o)| self.owner(o)).collect();
                renew_batch::call(
                    lease(l),
                    holds
                        .iter()
                        .zip(&owners)
                        .map(|(&(lock, _), o)| (&self.locks[lock].lock, o)),
                )
            }
            Op::ForceUnlock { lock } => force_unlock::call(&self.locks[lock]),
            _ => return None,
        })
    }

    /// The plain commands of a non-script op.
    fn commands(&self, op: &Op) -> Vec<Vec<Bytes>> {
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        match *op {
            Op::HGet { lock, owner } => vec![vec![
                b("HGET"),
                self.locks[lock].lock.clone(),
                self.owner(owner).as_bytes().clone(),
            ]],
            Op::Pttl { lock } => vec![vec![b("PTTL"), self.locks[lock].lock.clone()]],
            Op::Exists { lock } => vec![vec![b("EXISTS"), self.locks[lock].lock.clone()]],
            Op::WriteString {
                lock,
                target,
                value,
            } => {
                vec![vec![b("SET"), self.key(lock, target), b(value)]]
            }
            Op::WriteList { lock, target } => vec![
                vec![b("DEL"), self.key(lock, target)],
                vec![b("RPUSH"), self.key(lock, target), b("x")],
            ],
            _ => vec![],
        }
    }
}

/// A reply, or a server error's text.
type Outcome = Result<Reply, String>;

/// Whether an op's integer reply is a TTL (compared within the real time elapsed).
fn replies_ttl(op: &Op) -> bool {
    matches!(
        op,
        Op::Pttl { .. }
            | Op::Acquire { .. }
            | Op::AcquireFenced { .. }
            | Op::FairAcquire { .. }
            | Op::RwAcquire { .. }
    )
}

fn run_reference(names: &Names, store: &mut ReferenceStore, op: &Op) -> Outcome {
    if let Some(call) = names.script(op) {
        return match call.run_native(store) {
            Reply::Error(e) => Err(e),
            reply => Ok(reply),
        };
    }
    let mut last = Ok(Reply::Nil);
    for argv in names.commands(op) {
        let err = |e: lock_core::script::CommandError| e.0;
        last = match &argv[0][..] {
            b"HGET" => store
                .hget(&argv[1], &argv[2])
                .map(|v| v.map_or(Reply::Nil, Reply::Bulk))
                .map_err(err),
            b"PTTL" => store.pttl(&argv[1]).map(Reply::Int).map_err(err),
            b"EXISTS" => store
                .exists(&argv[1])
                .map(|e| Reply::Int(e.into()))
                .map_err(err),
            b"SET" => {
                store.set_string(&argv[1], &argv[2]);
                Ok(Reply::Status("OK".into()))
            }
            b"DEL" => store
                .del(&argv[1])
                .map(|e| Reply::Int(e.into()))
                .map_err(err),
            b"RPUSH" => {
                store.set_list(&argv[1], &argv[2]);
                Ok(Reply::Int(1))
            }
            other => unreachable!("no reference for {other:?}"),
        };
    }
    last
}

async fn run_backend<B: Backend>(names: &Names, backend: &B, op: &Op) -> Outcome {
    let lift = |r: Result<Reply, BackendError>| match r {
        Ok(reply) => Ok(reply),
        Err(BackendError::Server(e)) => Err(e),
        Err(other) => panic!("the backend failed outside the script: {other}"),
    };
    if let Some(call) = names.script(op) {
        return lift(backend.eval(&call).await);
    }
    let mut last = Ok(Reply::Nil);
    for argv in names.commands(op) {
        last = lift(backend.command(&argv).await);
    }
    last
}

/// A key's final state: its type and contents (a sorted set's members and scores beside), and
/// its PTTL.
#[derive(Debug, PartialEq)]
struct KeyState {
    key: Bytes,
    value: Reply,
    /// A sorted set's members with their scores, by member: a server's scores may be lower than
    /// the reference's, and so order otherwise.
    scores: Vec<(Bytes, f64)>,
    pttl: i64,
}

fn by_member(mut scores: Vec<(Bytes, f64)>) -> Vec<(Bytes, f64)> {
    scores.sort_by(|a, b| a.0.cmp(&b.0));
    scores
}

/// The keys to compare: every key a sequence can name, and every other key the reference holds.
fn keys_to_compare(names: &Names, store: &ReferenceStore) -> Vec<Bytes> {
    let mut keys = names.all_keys();
    for (key, _, _) in store.snapshot() {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

fn reference_state(keys: &[Bytes], store: &mut ReferenceStore) -> Vec<KeyState> {
    let mut out = Vec::new();
    for key in keys.iter().cloned() {
        let pttl = store.pttl(&key).unwrap();
        let value = match store.value(&key) {
            None => continue,
            Some(Value::Str(s)) => {
                Reply::Array(vec![Reply::Status("string".into()), Reply::Bulk(s.clone())])
            }
            Some(Value::Hash(h)) => Reply::Array(vec![
                Reply::Status("hash".into()),
                Reply::Array(
                    h.iter()
                        .flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())])
                        .collect(),
                ),
            ]),
            Some(Value::List(l)) => Reply::Array(vec![
                Reply::Status("list".into()),
                Reply::Array(l.iter().cloned().map(Reply::Bulk).collect()),
            ]),
            Some(Value::ZSet(z)) => {
                let scores = z.iter().map(|(m, s)| (m.clone(), s.0)).collect();
                out.push(KeyState {
                    key,
                    value: Reply::Status("zset".into()),
                    scores: by_member(scores),
                    pttl,
                });
                continue;
            }
        };
        out.push(KeyState {
            key,
            value,
            scores: Vec::new(),
            pttl,
        });
    }
    out
}

async fn backend_state<B: Backend>(keys: &[Bytes], backend: &B) -> Vec<KeyState> {
    let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
    let mut out = Vec::new();
    for key in keys.iter().cloned() {
        let ty = backend.command(&[b("TYPE"), key.clone()]).await.unwrap();
        let read = match &ty {
            Reply::Status(t) if t == "none" => continue,
            Reply::Status(t) if t == "string" => vec![b("GET"), key.clone()],
            Reply::Status(t) if t == "hash" => vec![b("HGETALL"), key.clone()],
            Reply::Status(t) if t == "list" => vec![b("LRANGE"), key.clone(), b("0"), b("-1")],
            Reply::Status(t) if t == "zset" => {
                vec![b("ZRANGE"), key.clone(), b("0"), b("-1"), b("WITHSCORES")]
            }
            other => panic!("unexpected type {other}"),
        };
        let contents = backend.command(&read).await.unwrap();
        let pttl = backend.command(&[b("PTTL"), key.clone()]).await.unwrap();
        let pttl = pttl.as_int().unwrap();
        if ty == Reply::Status("zset".into()) {
            let Reply::Array(items) = contents else {
                panic!("ZRANGE replied {contents}");
            };
            let scores = items
                .chunks(2)
                .map(|pair| match pair {
                    [Reply::Bulk(m), Reply::Bulk(s)] => {
                        (m.clone(), std::str::from_utf8(s).unwrap().parse().unwrap())
                    }
                    other => panic!("ZRANGE WITHSCORES replied {other:?}"),
                })
                .collect();
            out.push(KeyState {
                key,
                value: ty,
                scores: by_member(scores),
                pttl,
            });
            continue;
        }
        out.push(KeyState {
            key,
            value: Reply::Array(vec![ty, contents]),
            scores: Vec::new(),
            pttl,
        });
    }
    out
}

/// Equal, but a score (a deadline the script drew from a TTL) may be lower on the server by the
/// time elapsed since the sequence began.
fn score_close(reference: f64, server: f64, elapsed_ms: i64) -> bool {
    server <= reference && server >= reference - elapsed_ms as f64
}

/// Equal, but a TTL may be lower on the server by the time elapsed since the sequence began.
fn ttl_close(reference: i64, server: i64, elapsed_ms: i64) -> bool {
    if reference < 0 || server < 0 {
        return reference == server;
    }
    server <= reference && server >= reference - elapsed_ms
}

/// Equal, but a fencing token drawn in the sequence (at least the clock's microseconds when it
/// began, `start_us`) may be higher on the server by the microseconds elapsed: both sides raise
/// the counter to their clock, and the reference's stands still (at the start's millisecond, so
/// the server's may be up to 1 ms further on). The server's clock is read by another process on
/// a machine that may be loaded, so [`TOKEN_SLACK_MS`] more is allowed: far less than any wrong
/// rule would be off by (a counter that skipped the clock is off by about 1.7 × 10¹⁵).
fn token_close(reference: i64, server: i64, start_us: i64, elapsed_ms: i64) -> bool {
    if reference < start_us {
        return reference == server;
    }
    // No time passes on a manual clock (`elapsed_ms` 0), and no slack is needed.
    let slack_ms = if elapsed_ms == 0 { 0 } else { TOKEN_SLACK_MS };
    server >= reference && server <= reference + (elapsed_ms + slack_ms) * 1000
}

/// See [`token_close`].
const TOKEN_SLACK_MS: i64 = 25;

/// [`token_close`] for a key's final state: a string holding a token (the counter, a latch).
fn token_state_close(reference: &Reply, server: &Reply, start_us: i64, elapsed_ms: i64) -> bool {
    let int = |r: &Reply| match r {
        Reply::Array(v) => match v.as_slice() {
            [Reply::Status(t), Reply::Bulk(b)] if t == "string" => {
                std::str::from_utf8(b).ok()?.parse::<i64>().ok()
            }
            _ => None,
        },
        _ => None,
    };
    matches!((int(reference), int(server)), (Some(r), Some(s)) if token_close(r, s, start_us, elapsed_ms))
}

fn outcome_matches(
    op: &Op,
    reference: &Outcome,
    server: &Outcome,
    start_us: i64,
    elapsed_ms: i64,
) -> bool {
    if !replies_ttl(op) {
        return reference == server;
    }
    match (reference, server) {
        // What a fair waiter waits for is a TTL or a deadline's distance, either of any sign.
        (Ok(Reply::Int(r)), Ok(Reply::Int(s))) if matches!(op, Op::FairAcquire { .. }) => {
            score_close(*r as f64, *s as f64, elapsed_ms)
        }
        (Ok(Reply::Int(r)), Ok(Reply::Int(s))) => ttl_close(*r, *s, elapsed_ms),
        (Ok(Reply::Array(r)), Ok(Reply::Array(s))) if r.len() == 2 && s.len() == 2 => {
            // acquire_fenced: [pttl, -1] when held, [-1, token] when granted.
            matches!((&r[0], &s[0]), (Reply::Int(a), Reply::Int(b)) if ttl_close(*a, *b, elapsed_ms))
                && match (&r[1], &s[1]) {
                    (Reply::Int(a), Reply::Int(b)) if *a >= 1 => {
                        token_close(*a, *b, start_us, elapsed_ms)
                    }
                    (a, b) => a == b,
                }
        }
        _ => reference == server,
    }
}

/// Runs one sequence on both sides and reports the first difference. With `clock` (the fake's),
/// the server's clock is set to the sequence's start and stays there, so nothing may differ by
/// elapsed time.
async fn check_sequence<B: Backend>(
    backend: &B,
    clock: Option<&ManualClock>,
    prefix: &str,
    ops: &[Op],
) -> Result<(), String> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    if let Some(clock) = clock {
        clock.set(now_ms);
    }
    let frozen = clock.is_some();
    // Half the sequences publish with SPUBLISH, as a cluster with sharded pub/sub has them do.
    let publish = if ops.len().is_multiple_of(2) {
        PublishCommand::SPublish
    } else {
        PublishCommand::Publish
    };
    let names = Names::new(prefix, now_ms, publish);
    let mut store = ReferenceStore::new(now_ms);
    let start_us = now_ms * 1000;
    let started = Instant::now();
    let mut keys = names.all_keys();
    let result = async {
        for (i, op) in ops.iter().enumerate() {
            let reference = run_reference(&names, &mut store, op);
            let server = run_backend(&names, backend, op).await;
            let elapsed = elapsed_ms(started, frozen);
            if !outcome_matches(op, &reference, &server, start_us, elapsed) {
                return Err(format!(
                    "step {i} {op:?}: reference replied {reference:?}, server replied {server:?}"
                ));
            }
        }
        keys = keys_to_compare(&names, &store);
        let reference = reference_state(&keys, &mut store);
        let server = backend_state(&keys, backend).await;
        let elapsed = elapsed_ms(started, frozen);
        let same = reference.len() == server.len()
            && reference.iter().zip(&server).all(|(r, s)| {
                r.key == s.key
                    && (r.value == s.value
                        || token_state_close(&r.value, &s.value, start_us, elapsed))
                    && ttl_close(r.pttl, s.pttl, elapsed)
                    && r.scores.len() == s.scores.len()
                    && r.scores
                        .iter()
                        .zip(&s.scores)
                        .all(|(r, s)| r.0 == s.0 && score_close(r.1, s.1, elapsed))
            });
        if !same {
            return Err(format!(
                "final state differs:\n reference {reference:#?}\n server {server:#?}"
            ));
        }
        Ok(())
    }
    .await;
    // Leave nothing behind on the shared server.
    let mut del = vec![Bytes::from_static(b"DEL")];
    del.extend(keys);
    backend.command(&del).await.unwrap();
    result
}

/// The time a server's clock may have moved since the sequence began: none when it is frozen,
/// else the real time elapsed, rounded up.
fn elapsed_ms(started: Instant, frozen: bool) -> i64 {
    if frozen {
        0
    } else {
        started.elapsed().as_millis() as i64 + 1
    }
}

fn cases() -> u32 {
    std::env::var("DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// Runs `cases()` random sequences against `backend`, failing with the shrunk sequence. `clock` is
/// the server's clock when the test holds it (the fake's).
pub fn differential<B: Backend>(
    rt: &tokio::runtime::Runtime,
    backend: &B,
    clock: Option<&ManualClock>,
    label: &str,
) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let base = common::unique_prefix(label);
    let counter = std::cell::Cell::new(0u64);
    let result = runner.run(&prop::collection::vec(any_op(), 1..24), |ops| {
        counter.set(counter.get() + 1);
        let prefix = format!("{base}-{}", counter.get());
        rt.block_on(check_sequence(backend, clock, &prefix, &ops))
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{label}: the server and the reference (the native twins) diverge: {e}");
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn lua_scripts_and_native_twins_agree_on_real_redis() {
    let rt = runtime();
    let backend = rt
        .block_on(RedisBackend::connect(
            &common::redis_url(),
            Duration::from_secs(5),
        ))
        .expect("connect to REDIS_URL");
    differential(&rt, &backend, None, "diff-real");
}

#[test]
fn the_fake_agrees_with_the_reference_through_redis_backend_on_fake_connection() {
    let rt = runtime();
    // The subscriber's task needs the runtime.
    let clock = ManualClock::default();
    let backend = rt.block_on(async {
        let engine = shared(lock_core::fake::engine(clock.clone()));
        RedisBackend::new(
            FakeConnection::new(engine.clone(), NodeId(1)),
            FakeSubscriber::new(engine, NodeId(1)),
            Duration::from_secs(5),
        )
    });
    differential(&rt, &backend, Some(&clock), "diff-fake-connection");
}

#[test]
fn the_fake_agrees_with_the_reference_through_fake_backend() {
    let rt = runtime();
    let clock = ManualClock::default();
    let backend = rt.block_on(async {
        let engine = shared(lock_core::fake::engine(clock.clone()));
        FakeBackend::with_response_timeout(engine, NodeId(1), Duration::from_secs(5))
    });
    differential(&rt, &backend, Some(&clock), "diff-fake-backend");
}

/// The third leg: the same fifteen Lua bodies on the fake's embedded Lua instead of its native twins.
/// Each leg is held to the same reference (the native twins), so the Lua on real Redis, the native
/// twins and the Lua on the fake's VM all agree, replies and final keys alike.
#[test]
fn the_fake_s_lua_runs_the_lock_s_bodies_as_the_reference_does() {
    let rt = runtime();
    let clock = ManualClock::default();
    let backend = rt.block_on(async {
        let mut engine = lock_core::fake::engine(clock.clone());
        engine.run_lock_scripts_on_lua(true);
        assert!(engine.lock_scripts_run_on_lua());
        let engine = shared(engine);
        RedisBackend::new(
            FakeConnection::new(engine.clone(), NodeId(1)),
            FakeSubscriber::new(engine, NodeId(1)),
            Duration::from_secs(5),
        )
    });
    differential(&rt, &backend, Some(&clock), "diff-fake-lua");
}
