//! A fixed number of the engine bench's lock pairs, for counting instructions.
//!
//! Runs the pairs of `benches/engine.rs` (acquire and release through `Engine::execute`, the
//! lock's native twins registered on the engine, fresh request ids, the clock `--step` ms on per pair so latches expire)
//! `--warm` times to fill the keyspace, then `--pairs` times. Wall time is noise on a shared
//! machine; instructions are not. The engine's cost of one pair is the difference of two counts
//! taken inside `Engine::execute` only (building the calls is the bench's setup, not measured):
//!
//! ```text
//! cargo build --profile bench -p fake-redis --example engine_pairs
//! valgrind --tool=callgrind --toggle-collect='*Engine>::execute' --callgrind-out-file=c30 \
//!     target/release/examples/engine_pairs --pairs 30000
//! valgrind --tool=callgrind --toggle-collect='*Engine>::execute' --callgrind-out-file=c40 \
//!     target/release/examples/engine_pairs --pairs 40000
//! ```
//!
//! The two `Collected` counts apart, divided by 10 000, are the instructions per pair;
//! `callgrind_annotate` on each file, function by function apart, shows where they go.
//!
//! `--mode get` and `--mode set` count a plain command the same way: `--warm` `SET`s fill the
//! keys, then `--pairs` counts `GET key` (a hit) or `SET key value` (an overwrite) on them, so
//! the two runs' difference is the engine's cost of one such command.

use bytes::Bytes;
use fake_redis::{DEFAULT_EPOCH_MS, Frame, ManualClock};
use lock_core::keys::{KeyLayout, Owner, RequestId};
use lock_core::script::{acquire, release};
use lock_core::time::{Lease, Millis};

const LOCKS: usize = 1_000;

fn main() {
    let mut pairs = 30_000u64;
    let mut warm = 20_000u64;
    let mut step = 1i64;
    let mut mode = String::from("pairs");
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        if flag == "--mode" {
            mode = value;
            continue;
        }
        let value: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{flag} wants a count, got {value:?}"));
        match flag.as_str() {
            "--pairs" => pairs = value,
            "--warm" => warm = value,
            "--step" => step = value as i64,
            _ => panic!("flags: --pairs N, --warm N, --step MS, --mode pairs|get|set"),
        }
    }
    match mode.as_str() {
        "pairs" => lock_pairs(pairs, warm, step),
        "get" | "set" => plain(mode == "get", pairs, warm, step),
        _ => panic!("--mode is pairs, get or set"),
    }
}

/// `warm` `SET`s over the keys, then `count` `GET`s (hits) or `SET`s (overwrites) of them.
fn plain(get: bool, count: u64, warm: u64, step: i64) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    let mut engine = fake_redis::Engine::new(clock.clone());
    let client = engine.connect();
    let argv = |parts: &[&[u8]]| -> Vec<Bytes> {
        parts.iter().map(|p| Bytes::copy_from_slice(p)).collect()
    };
    let keys: Vec<Bytes> = (0..LOCKS)
        .map(|i| Bytes::from(format!("key:{i}")))
        .collect();
    let sets: Vec<Vec<Bytes>> = keys
        .iter()
        .map(|k| argv(&[b"SET", k, b"some value"]))
        .collect();
    let gets: Vec<Vec<Bytes>> = keys.iter().map(|k| argv(&[b"GET", k])).collect();
    for n in 0..warm {
        engine.execute(client, &sets[n as usize % LOCKS]);
    }
    let mut hits = 0u64;
    for n in 0..count {
        let at = n as usize % LOCKS;
        let reply = match get {
            true => engine.execute(client, &gets[at]),
            false => engine.execute(client, &sets[at]),
        };
        if matches!(reply, Frame::Bulk(_)) || reply == Frame::OK {
            hits += 1;
        }
        clock.advance(step);
    }
    assert_eq!(hits, count, "every GET finds its key, every SET is OK");
    let what = if get { "GET" } else { "SET" };
    println!("{count} {what}s after {warm} SETs to warm up, {step} ms apart");
}

/// The lock's acquire and release pairs (see the module docs).
fn lock_pairs(pairs: u64, warm: u64, step: i64) {
    let clock = ManualClock::new(DEFAULT_EPOCH_MS);
    // The lock's scripts run as their native twins (registered by lock-core's `fake` feature).
    let mut engine = lock_core::fake::engine(clock.clone());
    let client = engine.connect();
    for s in [&acquire::SCRIPT, &release::SCRIPT] {
        engine.execute(client, &s.load_argv());
    }
    let layout = KeyLayout::default();
    let locks: Vec<_> = (0..LOCKS)
        .map(|i| layout.lock(&format!("lock:{i}")))
        .collect();
    let owner = Owner::new("5f1c0a3e9b7d4c2a8e6f0b1d3c5a7e9f", 1);
    let lease = Lease::from_millis(30_000).unwrap();
    let latch = Millis(10_000);
    let mut released = 0u64;
    for n in 0..warm + pairs {
        let keys = &locks[n as usize % LOCKS];
        let id = u128::from(n) * 2;
        let a = acquire::call(keys, &RequestId(id), lease, &owner, latch).evalsha_argv();
        let r = release::call(keys, &RequestId(id + 1), lease, &owner, latch).evalsha_argv();
        engine.execute(client, &a);
        if engine.execute(client, &r) == Frame::Integer(1) {
            released += 1;
        }
        clock.advance(step);
    }
    assert_eq!(
        released,
        warm + pairs,
        "every pair takes and frees its lock"
    );
    println!(
        "{} pairs after {warm} to warm up, {step} ms per pair: {} keys live",
        pairs,
        engine.dbsize(0)
    );
}
