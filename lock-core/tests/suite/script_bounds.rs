//! Every script, with every boundary value of its lease and latch TTL arguments, on a real Redis:
//! a call that fails leaves the keyspace as it found it, and one that succeeds leaves no lock key
//! without a TTL. The native twins over the reference store fail with the same errors.
//!
//! A lease too large for Redis used to fail the acquire at its `PEXPIRE`, after its `HINCRBY` had
//! taken the lock with no TTL: held forever by an owner that was told it did not get it. The
//! scripts now try every argument that can fail before their first write.
//!
//! The server comes from `REDIS_URL`; keys live under a prefix of this run and are deleted after.

use crate::common;

use bytes::Bytes;
use lock_core::script::reference::ReferenceStore;
use lock_core::script::{ScriptCall, acquire, acquire_fenced, force_unlock, release, renew_batch};
use lock_core::{
    Backend, BackendError, KeyLayout, Lease, LockKeys, Millis, Owner, RedisBackend, Reply,
    RequestId,
};
use std::time::Duration;

/// The values either side of every limit Redis applies to a TTL argument.
fn boundaries() -> Vec<Bytes> {
    let max = Lease::MAX.as_u64();
    [
        "0".to_owned(),
        "-1".to_owned(),
        "1".to_owned(),
        max.to_string(),
        (max + 1).to_string(),
        (i64::MAX - 1).to_string(),
        i64::MAX.to_string(),
        (i64::MAX as u64 + 1).to_string(),
        u64::MAX.to_string(),
        i64::MIN.to_string(),
        "01".to_owned(),
        " 1".to_owned(),
        "abc".to_owned(),
        String::new(),
    ]
    .into_iter()
    .map(Bytes::from)
    .collect()
}

/// A starting state of the lock, set up by the scripts themselves with valid arguments.
#[derive(Clone, Copy, Debug)]
enum Start {
    Free,
    HeldByUs,
    HeldByOther,
}

struct Case {
    keys: LockKeys,
    us: Owner,
    other: Owner,
}

impl Case {
    fn setup(&self, start: Start) -> Vec<ScriptCall> {
        let lease = Lease::from_millis(60_000).unwrap();
        let owner = match start {
            Start::Free => return Vec::new(),
            Start::HeldByUs => &self.us,
            Start::HeldByOther => &self.other,
        };
        vec![acquire::call_from(
            &self.keys,
            &RequestId(1),
            lease,
            owner,
            Millis(60_000),
            0,
        )]
    }

    /// Every script call, with `bad` in the argument at each TTL position in turn.
    fn calls(&self, bad: &Bytes) -> Vec<ScriptCall> {
        let lease = Lease::from_millis(30_000).unwrap();
        let ttl = Millis(10_000);
        let request = RequestId(7);
        let mut calls = Vec::new();
        for held in [0, 1] {
            for (script_call, positions) in [
                (
                    acquire::call_from(&self.keys, &request, lease, &self.us, ttl, held),
                    &[0, 2][..],
                ),
                (
                    acquire_fenced::call_from(&self.keys, &request, lease, &self.us, ttl, held),
                    &[0, 2][..],
                ),
                (
                    release::call_from(&self.keys, &request, lease, &self.us, ttl, held),
                    &[1, 3][..],
                ),
            ] {
                for &at in positions {
                    let mut call = script_call.clone();
                    call.args[at] = bad.clone();
                    calls.push(call);
                }
            }
        }
        let mut renew = renew_batch::call(lease, [(&self.keys.lock, &self.us)]);
        renew.args[0] = bad.clone();
        calls.push(renew);
        calls.push(force_unlock::call(&self.keys));
        calls
    }

    fn all_keys(&self) -> Vec<Bytes> {
        vec![
            self.keys.lock.clone(),
            self.keys.token.clone(),
            self.keys.acquire_latch(&RequestId(7)),
            self.keys.unlock_latch(&RequestId(7)),
            self.keys.acquire_latch(&RequestId(1)),
        ]
    }
}

/// What a key is, as far as a script could have changed it: its type, value, and whether it has
/// a TTL (not the TTL itself, which moves with the clock).
async fn snapshot(backend: &impl Backend, keys: &[Bytes]) -> Vec<(Bytes, Reply, Reply, bool)> {
    let mut out = Vec::new();
    for key in keys {
        let kind = run(backend, &[b"TYPE", key]).await;
        let value = match &kind {
            Reply::Status(t) if t == "hash" => run(backend, &[b"HGETALL", key]).await,
            Reply::Status(t) if t == "string" => run(backend, &[b"GET", key]).await,
            _ => Reply::Nil,
        };
        let ttl = run(backend, &[b"PTTL", key]).await;
        out.push((key.clone(), kind, value, ttl != Reply::Int(-1)));
    }
    out
}

async fn run(backend: &impl Backend, argv: &[&[u8]]) -> Reply {
    let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
    backend.command(&argv).await.expect("a plain command")
}

async fn eval(backend: &impl Backend, call: &ScriptCall) -> Reply {
    match backend.eval(call).await {
        Ok(reply) => reply,
        Err(BackendError::Server(text)) => Reply::Error(text),
        Err(other) => panic!("{}: {other}", call.script.name),
    }
}

#[tokio::test]
async fn a_failed_call_leaves_no_key_behind_and_no_lock_is_left_without_a_ttl() {
    let url = common::redis_url();
    let backend = RedisBackend::connect(&url, Duration::from_secs(5))
        .await
        .expect("connect to REDIS_URL");
    let prefix = common::unique_prefix("script-bounds");
    let case = Case {
        keys: KeyLayout::new(prefix.clone()).lock(&format!("{prefix}:lock")),
        us: Owner::new("us", 1),
        other: Owner::new("other", 1),
    };
    let keys = case.all_keys();
    let mut failures = 0;
    for bad in boundaries() {
        for start in [Start::Free, Start::HeldByUs, Start::HeldByOther] {
            for call in case.calls(&bad) {
                for key in &keys {
                    run(&backend, &[b"DEL", key]).await;
                }
                let mut reference = ReferenceStore::new(1_800_000_000_000);
                for setup in case.setup(start) {
                    assert_eq!(eval(&backend, &setup).await, Reply::Nil);
                    assert_eq!(setup.run_native(&mut reference), Reply::Nil);
                }
                let before = snapshot(&backend, &keys).await;
                let reply = eval(&backend, &call).await;
                let after = snapshot(&backend, &keys).await;
                let what = format!(
                    "{} from {start:?} with args {:?}",
                    call.script.name, call.args
                );
                // Errors must match to the byte; other replies hold a PTTL, which moves with time.
                let native = call.run_native(&mut reference);
                if matches!(native, Reply::Error(_)) || matches!(reply, Reply::Error(_)) {
                    assert_eq!(native, reply, "{what}");
                }
                if let Reply::Error(text) = &reply {
                    failures += 1;
                    assert_eq!(before, after, "{what} failed ({text}) and changed keys");
                }
                let lock_ttl = run(&backend, &[b"PTTL", &case.keys.lock]).await;
                assert_ne!(
                    lock_ttl,
                    Reply::Int(-1),
                    "{what} left the lock without a TTL"
                );
            }
        }
    }
    for key in &keys {
        run(&backend, &[b"DEL", key]).await;
    }
    assert!(failures > 100, "the boundaries must make calls fail");
}

/// A fenced acquire over a counter at its edges replies, and leaves the counter and the latch, as
/// Redis does: the token and the floor are Lua numbers there, so a counter far below the floor
/// gives a difference `INCRBY` refuses (`%.17g` writes it with an exponent), and a counter past
/// 2^53 comes back rounded. The native twin once panicked on the first of these.
#[tokio::test]
async fn a_fenced_acquire_over_a_counter_at_its_edges_replies_as_redis_does() {
    let url = common::redis_url();
    let backend = RedisBackend::connect(&url, Duration::from_secs(5))
        .await
        .expect("connect to REDIS_URL");
    let prefix = common::unique_prefix("fenced-edges");
    let keys = KeyLayout::new(prefix.clone()).lock(&format!("{prefix}:lock"));
    let owner = Owner::new("us", 1);
    let lease = Lease::from_millis(30_000).unwrap();
    let call = acquire_fenced::call_from(&keys, &RequestId(7), lease, &owner, Millis(10_000), 0);
    let latch = keys.acquire_latch(&RequestId(7));
    let counters = [
        "-9223372036854775807",
        "-100000000000000000",
        "9007199254740992",
        "9223372036854775807",
        "abc",
    ];
    for counter in counters {
        for key in [&keys.lock, &keys.token, &latch] {
            run(&backend, &[b"DEL", key]).await;
        }
        run(&backend, &[b"SET", &keys.token, counter.as_bytes()]).await;
        let mut reference = ReferenceStore::new(1_800_000_000_000);
        reference.set_string(&keys.token, counter.as_bytes());
        let reply = eval(&backend, &call).await;
        let native = call.run_native(&mut reference);
        assert_eq!(native, reply, "counter {counter}: the reply");
        for key in [&keys.token, &latch] {
            let on_redis = run(&backend, &[b"GET", key]).await;
            let on_twin = match reference.value(key) {
                Some(lock_core::script::reference::Value::Str(v)) => Reply::Bulk(v.clone()),
                None => Reply::Nil,
                Some(other) => panic!("counter {counter}: {key:?} holds {other:?}"),
            };
            assert_eq!(on_twin, on_redis, "counter {counter}: {key:?} after");
        }
    }
    for key in [&keys.lock, &keys.token, &latch] {
        run(&backend, &[b"DEL", key]).await;
    }
}
