//! Round trips through the fake's `redis`-crate front door: one `GET` through
//! `redis::AsyncCommands` on a [`FakeConnection`], against the same `GET` handed to the engine
//! directly.
//!
//! The difference between the two is what the front door costs per command (argument copying, the
//! link's fault-plan check, converting the reply to a `redis::Value`). Criterion reports commands
//! per second. Run: `cargo bench -p examples --bench fake_connection`.

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fake_redis::{Engine, FakeConnection, ManualClock, NodeId, shared};
use redis::AsyncCommands;
use std::hint::black_box;
use std::time::Instant;

/// Keys the `GET`s rotate through, each holding a short string.
const KEYS: usize = 1_000;

fn filled_engine() -> Engine {
    let mut engine = Engine::new(ManualClock::default());
    for i in 0..KEYS {
        engine.set_string(
            0,
            format!("bench:key:{i}").as_bytes(),
            b"a value of some length",
        );
    }
    engine
}

fn round_trips(c: &mut Criterion) {
    let keys: Vec<String> = (0..KEYS).map(|i| format!("bench:key:{i}")).collect();
    let mut group = c.benchmark_group("fake_get");
    group.throughput(Throughput::Elements(1));

    let mut engine = filled_engine();
    let client = engine.connect();
    let argv: Vec<[Bytes; 2]> = keys
        .iter()
        .map(|k| [Bytes::from_static(b"GET"), Bytes::from(k.clone())])
        .collect();
    let mut i = 0;
    group.bench_function("engine_execute", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(engine.execute(client, &argv[i]))
        })
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut conn =
        runtime.block_on(async { FakeConnection::new(shared(filled_engine()), NodeId(1)) });
    group.bench_function("fake_connection_async_commands", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let started = Instant::now();
                for n in 0..iters {
                    let value: Option<Vec<u8>> = conn
                        .get(&keys[n as usize % KEYS])
                        .await
                        .expect("GET on the fake");
                    black_box(value);
                }
                started.elapsed()
            })
        })
    });
    group.finish();
}

// `criterion_group!` makes a public function with no doc comment.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, round_trips);
}
criterion_main!(group::benches);
