//! Lock acquire+release pairs per second: through the engine directly, and through
//! `FakeConnection` (the `redis` crate's interface).
//!
//! The clock advances 1 ms per pair, so the 10 s latches written by every acquire and release
//! expire as they would in production (about 20 000 live at any time) and the active expiry cycle
//! does its work; a second engine run advances 20 ms per pair (about 1 000 live latches: a
//! keyspace that fits in cache), to show how much of a pair's cost is memory. Every pair has fresh request ids, as the lock's calls do; the calls are built in
//! batches of 512 just before they run (criterion's `iter_batched_ref`), so building and dropping them is
//! not measured but their memory is as warm as a client's freshly built call. Run:
//! `cargo bench -p fake-redis --bench engine`.

use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use fake_redis::{ClientId, DEFAULT_EPOCH_MS, Engine, FakeConnection, ManualClock, NodeId, shared};
use lock_core::keys::{KeyLayout, LockKeys, Owner, RequestId};
use lock_core::redis_backend::cmd_of;
use lock_core::script::{ScriptCall, acquire, release};
use lock_core::time::{Lease, Millis};

const LOCKS: usize = 1_000;
const BATCH: u64 = 512;

/// Acquire/release pairs over `LOCKS` locks, each pair with request ids never used before.
struct Pairs {
    locks: Vec<LockKeys>,
    owner: Owner,
    lease: Lease,
    next: u128,
}

impl Pairs {
    fn new() -> Pairs {
        let layout = KeyLayout::default();
        Pairs {
            locks: (0..LOCKS)
                .map(|i| layout.lock(&format!("lock:{i}")))
                .collect(),
            owner: Owner::new("5f1c0a3e9b7d4c2a8e6f0b1d3c5a7e9f", 1),
            lease: Lease::from_millis(30_000).unwrap(),
            next: 0,
        }
    }

    fn next(&mut self) -> (ScriptCall, ScriptCall) {
        let id = self.next;
        self.next += 2;
        let keys = &self.locks[(id / 2) as usize % LOCKS];
        let latch = Millis(10_000);
        (
            acquire::call(keys, &RequestId(id), self.lease, &self.owner, latch),
            release::call(keys, &RequestId(id + 1), self.lease, &self.owner, latch),
        )
    }
}

fn load_scripts(engine: &mut Engine, client: ClientId) {
    for s in [&acquire::SCRIPT, &release::SCRIPT] {
        engine.execute(client, &s.load_argv());
    }
}

fn engine_direct(c: &mut Criterion) {
    for step in [1, 20] {
        engine_direct_at(c, step, false);
    }
}

/// The same pairs with the lock's Lua bodies on the embedded Lua instead of their native twins.
fn engine_on_lua(c: &mut Criterion) {
    engine_direct_at(c, 1, true);
}

/// Pairs through `Engine::execute`, the clock moving `step` ms per pair, the scripts on the
/// embedded Lua if `on_lua`.
fn engine_direct_at(c: &mut Criterion, step: i64, on_lua: bool) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    let mut engine = lock_core::fake::engine(clock.clone());
    engine.run_lock_scripts_on_lua(on_lua);
    let how = if on_lua { "on Lua" } else { "native" };
    let client = engine.connect();
    load_scripts(&mut engine, client);
    let mut pairs = Pairs::new();
    let mut group = c.benchmark_group("acquire+release");
    group.throughput(Throughput::Elements(1));
    group.bench_function(format!("engine direct, {how}, {step} ms per pair"), |b| {
        b.iter_batched_ref(
            || {
                let (a, r) = pairs.next();
                (a.evalsha_argv(), r.evalsha_argv())
            },
            |(acquire, release)| {
                let acquired = engine.execute(client, acquire);
                let released = engine.execute(client, release);
                clock.advance(step);
                (acquired, released)
            },
            BatchSize::NumIterations(BATCH),
        );
    });
    group.finish();
    assert!(
        engine.dbsize(0) < 40_000,
        "latches must expire: {} keys",
        engine.dbsize(0)
    );
}

fn through_fake_connection(c: &mut Criterion) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    let engine = shared(lock_core::fake::engine(clock.clone()));
    {
        let mut e = engine.lock().unwrap();
        let client = e.connect();
        load_scripts(&mut e, client);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut conn = FakeConnection::new(engine.clone(), NodeId(1));
    let to_cmd = |call: &ScriptCall| cmd_of(&call.evalsha_argv());
    let mut pairs = Pairs::new();
    let mut group = c.benchmark_group("acquire+release");
    group.throughput(Throughput::Elements(1));
    group.bench_function("FakeConnection", |b| {
        b.iter_batched_ref(
            || {
                let (a, r) = pairs.next();
                (to_cmd(&a), to_cmd(&r))
            },
            |(acquire, release)| {
                runtime.block_on(async {
                    let acquired: redis::Value = acquire.query_async(&mut conn).await.unwrap();
                    let released: redis::Value = release.query_async(&mut conn).await.unwrap();
                    clock.advance(1);
                    (acquired, released)
                })
            },
            BatchSize::NumIterations(BATCH),
        );
    });
    group.finish();
}

/// `EVALSHA` of a redis-py-style release script (no native twin: it runs on the embedded Lua),
/// half of the calls releasing a held key, half finding another owner's token.
fn foreign_release(c: &mut Criterion) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    let mut engine = Engine::new(clock.clone());
    let client = engine.connect();
    let body = Bytes::from_static(
        b"if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end",
    );
    let sha = match engine.execute(
        client,
        &[
            Bytes::from_static(b"SCRIPT"),
            Bytes::from_static(b"LOAD"),
            body,
        ],
    ) {
        fake_redis::Frame::Bulk(sha) => sha,
        other => panic!("SCRIPT LOAD replied {other:?}"),
    };
    let key = Bytes::from_static(b"lock:release");
    let set = vec![
        Bytes::from_static(b"SET"),
        key.clone(),
        Bytes::from_static(b"token"),
    ];
    let release = |token: &'static [u8]| {
        vec![
            Bytes::from_static(b"EVALSHA"),
            sha.clone(),
            Bytes::from_static(b"1"),
            key.clone(),
            Bytes::from_static(token),
        ]
    };
    let (mine, theirs) = (release(b"token"), release(b"other"));
    let mut group = c.benchmark_group("EVALSHA redis-py release");
    // Two EVALSHA per iteration, and the SET that gives the key back its token.
    group.throughput(Throughput::Elements(2));
    group.bench_function("engine direct, on Lua", |b| {
        b.iter(|| {
            engine.execute(client, &set);
            let a = engine.execute(client, &theirs);
            let b = engine.execute(client, &mine);
            (a, b)
        })
    });
    // EVALSHA alone: the key holds another's token, so the script reads and replies 0.
    engine.execute(client, &set);
    group.throughput(Throughput::Elements(1));
    group.bench_function("engine direct, on Lua, not the owner", |b| {
        b.iter(|| engine.execute(client, &theirs))
    });
    group.finish();
}

/// The fixed cost of single commands, for finding where a pair's time goes.
fn single_commands(c: &mut Criterion) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    let mut engine = Engine::new(clock.clone());
    let client = engine.connect();
    let ping = vec![Bytes::from_static(b"PING")];
    c.bench_function("command/PING", |b| b.iter(|| engine.execute(client, &ping)));
    let key =
        Bytes::from_static(b"redisson_acquire_latch:{lock:17}:000000000000000000000000000000ab");
    let exists = vec![Bytes::from_static(b"EXISTS"), key.clone()];
    c.bench_function("command/EXISTS miss", |b| {
        b.iter(|| engine.execute(client, &exists))
    });
    let set = vec![
        Bytes::from_static(b"SET"),
        key.clone(),
        Bytes::from_static(b"1"),
        Bytes::from_static(b"PX"),
        Bytes::from_static(b"10000"),
    ];
    c.bench_function("command/SET PX", |b| {
        b.iter(|| engine.execute(client, &set))
    });
    c.bench_function("command/EXISTS hit", |b| {
        b.iter(|| engine.execute(client, &exists))
    });
}

// `criterion_group!` makes a public function with no doc comment.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(
        benches,
        engine_direct,
        engine_on_lua,
        foreign_release,
        through_fake_connection,
        single_commands
    );
}
criterion_main!(group::benches);
