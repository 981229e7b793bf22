//! What the fake costs in memory: the peak resident set of a process that holds nothing but an
//! [`Engine`] filled with one shape of data.
//!
//! The shapes (`--shape`):
//!
//! - `locks` (the default): `--keys` lock keys, each what a grant leaves on a server: a hash
//!   `orders:<i>` with one field, the owner (`<32 hex client id>:<owner id>`), holding `1`, with a
//!   10-minute TTL, written by the same two commands the acquire script runs (`HINCRBY`,
//!   `PEXPIRE`);
//! - `zset`: one key `big:zset` holding `--elements` members `member:<i>`, `ZADD`ed 1,000 a
//!   command, each with a score drawn from a fixed permutation of `0..2^32` (so the members
//!   arrive in no order of score, as they would from many writers, and no run draws other ones);
//! - `list`: one key `big:list` holding `--elements` values `item:<i>`, `RPUSH`ed 1,000 a
//!   command;
//! - `stream`: one key `big:stream` holding `--elements` entries of one field `f` with the value
//!   `v:<i>`, one `XADD` each, with the explicit IDs `<i + 1>-1` (a clock that ticks once per
//!   entry; Redis's `*` would draw them from the wall clock).
//!
//! The process reads its own `VmHWM` (peak) and `VmRSS` from `/proc/self/status` before and after
//! filling, and prints them as `key value` lines.
//!
//! With `--emit-resp` it writes those same commands as RESP to standard output instead, for
//! `redis-cli --pipe`, so that a real Redis can be loaded with exactly the same data and its
//! `used_memory_rss` compared (`scripts/bench` does this for the locks, `scripts/bench-memory`
//! for every shape).
//!
//! Run: `cargo bench -p examples --bench fake_memory -- --keys 1000000`, or
//! `cargo bench -p examples --bench fake_memory -- --shape zset --elements 1000000`.

use bytes::Bytes;
use clap::{Parser, ValueEnum};
use fake_redis::{Engine, ManualClock};
use std::io::{BufWriter, Write};

/// What the engine is filled with (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Shape {
    /// `--keys` lock keys.
    Locks,
    /// One sorted set of `--elements` members.
    Zset,
    /// One list of `--elements` values.
    List,
    /// One stream of `--elements` entries.
    Stream,
}

/// Fill an engine with one shape of data and report the process's peak RSS (or emit the commands
/// as RESP).
#[derive(Parser, Debug)]
struct Args {
    /// What to fill the engine with.
    #[arg(long, value_enum, default_value_t = Shape::Locks)]
    shape: Shape,
    /// How many lock keys (`--shape locks`).
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// How many elements the one collection holds (the other shapes).
    #[arg(long, default_value_t = 1_000_000)]
    elements: u64,
    /// Write the commands as RESP to standard output instead of running them.
    #[arg(long)]
    emit_resp: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The lease every lock key gets, in ms (long enough to outlive the measurement).
const LEASE_MS: &str = "600000";

/// Elements per `ZADD` or `RPUSH`: a client loading a big collection sends it in batches.
const BATCH: u64 = 1000;

/// An argument copied to an exact-size buffer, as `FakeConnection` copies a request's arguments.
fn arg(text: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(text.as_ref())
}

/// The two commands that create lock `i`, as the acquire script issues them.
fn lock_commands(i: u64) -> [Vec<Bytes>; 2] {
    // One client id per 1,000 locks, as if a thousand owners of each service instance held them.
    let client_id = format!(
        "{:032x}",
        0x5f1c_0a3e_9b7d_4c2a_u128.wrapping_mul(u128::from(i / 1000) + 1)
    );
    let key = arg(format!("orders:{i}"));
    let owner = arg(format!("{client_id}:{}", i % 1000 + 1));
    [
        vec![
            Bytes::from_static(b"HINCRBY"),
            key.clone(),
            owner,
            Bytes::from_static(b"1"),
        ],
        vec![
            Bytes::from_static(b"PEXPIRE"),
            key,
            Bytes::from_static(LEASE_MS.as_bytes()),
        ],
    ]
}

/// Member `i`'s score: `i` through a fixed permutation of `0..2^32` (an odd multiplier is a
/// bijection modulo 2^32), so scores are distinct, spread, and every run draws the same ones.
fn zset_score(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b1) & 0xffff_ffff
}

/// The element indexes of each batch of `n`: `0..1000`, `1000..2000`, ….
fn batches(n: u64) -> impl Iterator<Item = std::ops::Range<u64>> {
    (0..n.div_ceil(BATCH)).map(move |b| b * BATCH..((b + 1) * BATCH).min(n))
}

/// The commands that fill the engine with `args`'s shape, in order.
fn commands(args: &Args) -> Box<dyn Iterator<Item = Vec<Bytes>>> {
    let n = args.elements;
    match args.shape {
        Shape::Locks => Box::new((0..args.keys).flat_map(lock_commands)),
        Shape::Zset => Box::new(batches(n).map(|batch| {
            let mut argv = vec![Bytes::from_static(b"ZADD"), arg("big:zset")];
            for i in batch {
                argv.push(arg(zset_score(i).to_string()));
                argv.push(arg(format!("member:{i}")));
            }
            argv
        })),
        Shape::List => Box::new(batches(n).map(|batch| {
            let mut argv = vec![Bytes::from_static(b"RPUSH"), arg("big:list")];
            argv.extend(batch.map(|i| arg(format!("item:{i}"))));
            argv
        })),
        Shape::Stream => Box::new((0..n).map(|i| {
            vec![
                Bytes::from_static(b"XADD"),
                arg("big:stream"),
                arg(format!("{}-1", i + 1)),
                arg("f"),
                arg(format!("v:{i}")),
            ]
        })),
    }
}

/// A `/proc/self/status` field in bytes (`VmHWM`: the peak resident set; `VmRSS`: the current one).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(field)?.strip_prefix(':')?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

fn emit_resp(args: &Args) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    for argv in commands(args) {
        write!(out, "*{}\r\n", argv.len())?;
        for a in argv {
            write!(out, "${}\r\n", a.len())?;
            out.write_all(&a)?;
            out.write_all(b"\r\n")?;
        }
    }
    out.flush()
}

/// The command that counts what `shape` stored: keys, or the one collection's elements.
fn count_command(shape: Shape) -> Vec<Bytes> {
    match shape {
        Shape::Locks => vec![Bytes::from_static(b"DBSIZE")],
        Shape::Zset => vec![Bytes::from_static(b"ZCARD"), arg("big:zset")],
        Shape::List => vec![Bytes::from_static(b"LLEN"), arg("big:list")],
        Shape::Stream => vec![Bytes::from_static(b"XLEN"), arg("big:stream")],
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    if args.emit_resp {
        return emit_resp(&args);
    }
    let before = status_bytes("VmHWM");
    let mut engine = Engine::new(ManualClock::default());
    let client = engine.connect();
    for argv in commands(&args) {
        let reply = engine.execute(client, &argv);
        assert!(reply.error_text().is_none(), "{reply:?}");
    }
    let peak = status_bytes("VmHWM");
    let rss = status_bytes("VmRSS");
    let count = match engine.execute(client, &count_command(args.shape)) {
        fake_redis::Frame::Integer(n) => n,
        other => panic!("{other:?}"),
    };
    println!("fake_shape {:?}", args.shape);
    if args.shape == Shape::Locks {
        println!("fake_keys {count}");
    } else {
        println!("fake_elements {count}");
    }
    println!("fake_rss_before_bytes {before}");
    println!("fake_peak_rss_bytes {peak}");
    println!("fake_rss_after_bytes {rss}");
    // What each stored key costs at least, before its heap allocations.
    println!(
        "fake_size_of_entry {}",
        std::mem::size_of::<fake_redis::Entry>()
    );
    println!(
        "fake_size_of_value {}",
        std::mem::size_of::<fake_redis::Value>()
    );
    println!(
        "fake_size_of_hash {}",
        std::mem::size_of::<fake_redis::Hash>()
    );
    println!("fake_size_of_bytes {}", std::mem::size_of::<Bytes>());
    // Keep the engine alive until the figures are read.
    drop(engine);
    Ok(())
}
