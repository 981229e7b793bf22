//! What the fake costs in memory: the peak resident set of a process that holds nothing but an
//! [`Engine`] filled with lock keys.
//!
//! Each lock is what a grant leaves on a server: a hash `orders:<i>` with one field, the owner
//! (`<32 hex client id>:<owner id>`), holding `1`, with a 10-minute TTL, written by the same two
//! commands the acquire script runs (`HINCRBY`, `PEXPIRE`). The process reads its own `VmHWM` from
//! `/proc/self/status` before and after, and prints both as `key value` lines.
//!
//! With `--emit-resp` it writes those same commands as RESP to standard output instead, for
//! `redis-cli --pipe`, so that a real Redis can be loaded with exactly the same keys and its
//! `used_memory_rss` compared (`scripts/bench` does this).
//!
//! Run: `cargo bench -p examples --bench fake_memory -- --keys 1000000`.

use bytes::Bytes;
use clap::Parser;
use fake_redis::{Engine, ManualClock};
use std::io::{BufWriter, Write};

/// Fill an engine with lock keys and report the process's peak RSS (or emit the commands as RESP).
#[derive(Parser, Debug)]
struct Args {
    /// How many lock keys.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Write the commands as RESP to standard output instead of running them.
    #[arg(long)]
    emit_resp: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The lease every lock key gets, in ms (long enough to outlive the measurement).
const LEASE_MS: &str = "600000";

/// The two commands that create lock `i`, as the acquire script issues them.
fn commands(i: u64) -> [[Bytes; 4]; 2] {
    // One client id per 1,000 locks, as if a thousand owners of each service instance held them.
    let client_id = format!(
        "{:032x}",
        0x5f1c_0a3e_9b7d_4c2a_u128.wrapping_mul(u128::from(i / 1000) + 1)
    );
    // Copied to exact-size buffers, as `FakeConnection` copies a request's arguments.
    let key = Bytes::copy_from_slice(format!("orders:{i}").as_bytes());
    let owner = Bytes::copy_from_slice(format!("{client_id}:{}", i % 1000 + 1).as_bytes());
    [
        [
            Bytes::from_static(b"HINCRBY"),
            key.clone(),
            owner,
            Bytes::from_static(b"1"),
        ],
        [
            Bytes::from_static(b"PEXPIRE"),
            key,
            Bytes::from_static(LEASE_MS.as_bytes()),
            Bytes::new(),
        ],
    ]
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

fn emit_resp(keys: u64) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    for i in 0..keys {
        for argv in commands(i) {
            let argv: Vec<&Bytes> = argv.iter().filter(|a| !a.is_empty()).collect();
            write!(out, "*{}\r\n", argv.len())?;
            for a in argv {
                write!(out, "${}\r\n", a.len())?;
                out.write_all(a)?;
                out.write_all(b"\r\n")?;
            }
        }
    }
    out.flush()
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    if args.emit_resp {
        return emit_resp(args.keys);
    }
    let before = status_bytes("VmHWM");
    let mut engine = Engine::new(ManualClock::default());
    let client = engine.connect();
    for i in 0..args.keys {
        for argv in commands(i) {
            let n = if argv[3].is_empty() { 3 } else { 4 };
            let reply = engine.execute(client, &argv[..n]);
            assert!(reply.error_text().is_none(), "{reply:?}");
        }
    }
    let keys = engine.dbsize(0);
    let peak = status_bytes("VmHWM");
    let rss = status_bytes("VmRSS");
    println!("fake_keys {keys}");
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
