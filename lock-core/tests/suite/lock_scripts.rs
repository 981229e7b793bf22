//! The five lock scripts on the fake's engine (their native twins registered), through both front
//! doors, against lock-core's reference store: zero divergence in replies, published messages and
//! final keyspace.

use bytes::Bytes;
use fake_redis::{
    DEFAULT_EPOCH_MS, FakeConnection, ManualClock, NodeId, SharedEngine, Value, shared,
};
use lock_core::RedisBackend;
use lock_core::backend::{Backend, BackendError, PubSubEvent};
use lock_core::fake::{FakeBackend, FakeSubscriber};
use lock_core::keys::{KeyLayout, LockKeys, Owner, RequestId};
use lock_core::reply::Reply;
use lock_core::script::reference::{ReferenceStore, Value as RefValue};
use lock_core::script::{ScriptCall, acquire, acquire_fenced, force_unlock, release, renew_batch};
use lock_core::time::{Lease, Millis};
use proptest::prelude::*;
use std::time::Duration;

#[derive(Clone, Debug)]
enum Target {
    Lock,
    Token,
    AcquireLatch(u8),
    UnlockLatch(u8),
}

#[derive(Clone, Debug)]
enum Op {
    Acquire {
        lock: u8,
        owner: u8,
        request: u8,
        lease: u64,
        latch: u64,
        fenced: bool,
    },
    Release {
        lock: u8,
        owner: u8,
        request: u8,
        lease: u64,
        latch: u64,
    },
    Renew {
        holds: Vec<(u8, u8)>,
        lease: u64,
    },
    ForceUnlock {
        lock: u8,
    },
    Advance(i64),
    WrongType {
        lock: u8,
        target: Target,
        list: bool,
    },
    Persist {
        lock: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let lease = prop_oneof![1u64..50, 1_000u64..60_000];
    let latch = prop_oneof![1u64..20, 1_000u64..20_000];
    prop_oneof![
        6 => (0u8..2, 0u8..3, 0u8..4, lease.clone(), latch.clone(), any::<bool>()).prop_map(
            |(lock, owner, request, lease, latch, fenced)| Op::Acquire { lock, owner, request, lease, latch, fenced }
        ),
        4 => (0u8..2, 0u8..3, 4u8..8, lease.clone(), latch).prop_map(
            |(lock, owner, request, lease, latch)| Op::Release { lock, owner, request, lease, latch }
        ),
        2 => (prop::collection::vec((0u8..2, 0u8..3), 1..4), lease)
            .prop_map(|(holds, lease)| Op::Renew { holds, lease }),
        1 => (0u8..2).prop_map(|lock| Op::ForceUnlock { lock }),
        4 => prop_oneof![0i64..3, 1i64..100, 1_000i64..40_000].prop_map(Op::Advance),
        1 => (0u8..2, prop_oneof![
                Just(Target::Lock),
                Just(Target::Token),
                (0u8..4).prop_map(Target::AcquireLatch),
                (4u8..8).prop_map(Target::UnlockLatch),
            ], any::<bool>())
            .prop_map(|(lock, target, list)| Op::WrongType { lock, target, list }),
        1 => (0u8..2).prop_map(|lock| Op::Persist { lock }),
    ]
}

fn keys(lock: u8) -> LockKeys {
    KeyLayout::default().lock(&format!("lock{lock}"))
}

fn owner(o: u8) -> Owner {
    Owner::new("c0ffee", u64::from(o))
}

fn lease(ms: u64) -> Lease {
    Lease::from_millis(ms).expect("at least 1 ms")
}

fn call_for(op: &Op) -> Option<ScriptCall> {
    Some(match op {
        Op::Acquire {
            lock,
            owner: o,
            request,
            lease: l,
            latch,
            fenced,
        } => {
            let k = keys(*lock);
            let r = RequestId(u128::from(*request));
            if *fenced {
                acquire_fenced::call(&k, &r, lease(*l), &owner(*o), Millis(*latch))
            } else {
                acquire::call(&k, &r, lease(*l), &owner(*o), Millis(*latch))
            }
        }
        Op::Release {
            lock,
            owner: o,
            request,
            lease: l,
            latch,
        } => release::call(
            &keys(*lock),
            &RequestId(u128::from(*request)),
            lease(*l),
            &owner(*o),
            Millis(*latch),
        ),
        Op::Renew { holds, lease: l } => {
            let pairs: Vec<(Bytes, Owner)> = holds
                .iter()
                .map(|(k, o)| (keys(*k).lock, owner(*o)))
                .collect();
            renew_batch::call(lease(*l), pairs.iter().map(|(k, o)| (k, o)))
        }
        Op::ForceUnlock { lock } => force_unlock::call(&keys(*lock)),
        _ => return None,
    })
}

fn outcome(result: Result<Reply, BackendError>) -> Reply {
    match result {
        Ok(reply) => reply,
        Err(BackendError::Server(text)) => Reply::Error(text),
        Err(other) => panic!("the fake must not lose calls without faults: {other}"),
    }
}

fn as_reference(value: Value) -> RefValue {
    match value {
        Value::Str(s) => RefValue::Str(s),
        Value::Hash(h) => RefValue::Hash(
            h.iter()
                .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
                .collect(),
        ),
        Value::List(l) => RefValue::List(l.into_iter().collect()),
        Value::Set(_) | Value::ZSet(_) | Value::Stream(_) => {
            unreachable!("these cases never place a set")
        }
    }
}

fn engine_snapshot(engine: &SharedEngine) -> Vec<(Bytes, RefValue, Option<i64>)> {
    let e = engine.lock().unwrap();
    e.snapshot(0)
        .into_iter()
        .map(|(k, v, d)| (k, as_reference(v), d))
        .collect()
}

async fn drain_messages(backend: &impl Backend) -> Vec<(Bytes, Bytes)> {
    let mut out = Vec::new();
    while let Ok(event) =
        tokio::time::timeout(Duration::from_millis(10), backend.next_event()).await
    {
        match event {
            PubSubEvent::Message { channel, payload } => out.push((channel, payload)),
            other => panic!("no fault was injected, yet: {other:?}"),
        }
    }
    out
}

async fn check(ops: Vec<Op>) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    let mut reference = ReferenceStore::new(DEFAULT_EPOCH_MS);
    let direct = shared(lock_core::fake::engine(clock.clone()));
    let through_crate = shared(lock_core::fake::engine(clock.clone()));
    let fake = FakeBackend::new(direct.clone(), NodeId(1));
    let redis = RedisBackend::new(
        FakeConnection::new(through_crate.clone(), NodeId(1)),
        FakeSubscriber::new(through_crate.clone(), NodeId(1)),
        Duration::from_secs(3),
    );
    for lock in 0..2 {
        let channel = keys(lock).channel;
        fake.subscribe(&channel).await.unwrap();
        redis.subscribe(&channel).await.unwrap();
    }
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Advance(ms) => {
                clock.advance(*ms);
                reference.advance(*ms);
            }
            Op::WrongType { lock, target, list } => {
                let k = keys(*lock);
                let key = match target {
                    Target::Lock => k.lock.clone(),
                    Target::Token => k.token.clone(),
                    Target::AcquireLatch(r) => k.acquire_latch(&RequestId(u128::from(*r))),
                    Target::UnlockLatch(r) => k.unlock_latch(&RequestId(u128::from(*r))),
                };
                for engine in [&direct, &through_crate] {
                    let mut e = engine.lock().unwrap();
                    if *list {
                        e.set_list(0, &key, &[b"x"]);
                    } else {
                        e.set_string(0, &key, b"x");
                    }
                }
                if *list {
                    reference.set_list(&key, b"x");
                } else {
                    reference.set_string(&key, b"x");
                }
            }
            Op::Persist { lock } => {
                let key = keys(*lock).lock;
                let expected = Reply::Int(i64::from(reference.persist(&key)));
                let argv = [Bytes::from_static(b"PERSIST"), key];
                assert_eq!(
                    outcome(fake.command(&argv).await),
                    expected,
                    "step {step}: {op:?}"
                );
                assert_eq!(
                    outcome(redis.command(&argv).await),
                    expected,
                    "step {step}: {op:?}"
                );
            }
            _ => {
                let call = call_for(op).expect("a script op");
                let expected = call.run_native(&mut reference);
                let via_fake = outcome(fake.eval(&call).await);
                let via_crate = outcome(redis.eval(&call).await);
                assert_eq!(
                    via_fake, expected,
                    "step {step}: {op:?} through FakeBackend"
                );
                assert_eq!(
                    via_crate, expected,
                    "step {step}: {op:?} through FakeConnection"
                );
            }
        }
        let want = reference.snapshot();
        assert_eq!(
            engine_snapshot(&direct),
            want,
            "step {step}: keyspace after {op:?}"
        );
        assert_eq!(
            engine_snapshot(&through_crate),
            want,
            "step {step}: keyspace after {op:?}"
        );
    }
    let published = reference.published().to_vec();
    assert_eq!(drain_messages(&fake).await, published);
    assert_eq!(drain_messages(&redis).await, published);
}

/// `check` on a runtime of its own, on tokio's paused clock.
fn check_on_paused_time(ops: Vec<Op>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(check(ops));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// For every sequence of lock script calls, clock moves and wrong-typed writes, the engine
    /// (through `FakeBackend` and through `RedisBackend<FakeConnection, FakeSubscriber>`) replies
    /// exactly what the reference store replies, publishes the same messages, and ends with the
    /// same keyspace (values and deadlines).
    #[test]
    fn lock_scripts_agree_with_the_reference(ops in prop::collection::vec(op(), 1..60)) {
        check_on_paused_time(ops);
    }
}

#[test]
fn a_typical_lock_life_agrees_with_the_reference() {
    check_on_paused_time(vec![
        Op::Acquire {
            lock: 0,
            owner: 0,
            request: 0,
            lease: 30_000,
            latch: 10_000,
            fenced: true,
        },
        Op::Acquire {
            lock: 0,
            owner: 1,
            request: 1,
            lease: 30_000,
            latch: 10_000,
            fenced: false,
        },
        Op::Advance(10_000),
        Op::Renew {
            holds: vec![(0, 0), (1, 1)],
            lease: 30_000,
        },
        Op::Acquire {
            lock: 0,
            owner: 0,
            request: 2,
            lease: 30_000,
            latch: 10_000,
            fenced: true,
        },
        Op::Release {
            lock: 0,
            owner: 0,
            request: 4,
            lease: 30_000,
            latch: 10_000,
        },
        Op::Release {
            lock: 0,
            owner: 0,
            request: 5,
            lease: 30_000,
            latch: 10_000,
        },
        // The same request again, as a retry sends it.
        Op::Release {
            lock: 0,
            owner: 0,
            request: 5,
            lease: 30_000,
            latch: 10_000,
        },
        Op::WrongType {
            lock: 1,
            target: Target::Lock,
            list: true,
        },
        Op::Acquire {
            lock: 1,
            owner: 0,
            request: 3,
            lease: 30_000,
            latch: 10_000,
            fenced: false,
        },
        Op::ForceUnlock { lock: 1 },
        Op::Advance(40_000),
    ]);
}
