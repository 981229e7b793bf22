//! The in-process side of `scripts/bench-peers`: the small op mix it also runs on miniredis and
//! fakeredis in their own processes, here on the engine through `FakeConnection`, so the three
//! in-process fakes are measured on the same work.
//!
//! One caller on a current-thread runtime (as `#[tokio::test]` makes), each command awaited
//! before the next, for `--seconds` per op: `SET key:R xxx`, `GET key:R`, `INCR counter:R`,
//! `LPUSH mylist xxx`, `HSET myhash element:R xxx`, and `EVALSHA` of the script in `--script` on
//! `lock:R latch:R` with the arguments `30000 owner 10000` (the lock's acquire body: the engine
//! has no native twin registered here, so it runs on the embedded Lua, as on the peers). R is drawn
//! from `--keyspace` keys, as `redis-benchmark -r` does. Prints one line per op: its name and the
//! ops per second.
//!
//! ```text
//! cargo build --release -p fake-redis --example peer_mix
//! target/release/examples/peer_mix --script acquire.lua --seconds 1
//! ```

use fake_redis::{Engine, FakeConnection, ManualClock, NodeId, shared};
use redis::aio::ConnectionLike;
use std::time::{Duration, Instant};

/// The ops, in the order they run and print.
const OPS: [&str; 6] = ["SET", "GET", "INCR", "LPUSH", "HSET", "EVALSHA"];

/// SplitMix64: the random key numbers, the same sequence on every run.
struct Draws(u64);

impl Draws {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    }
}

fn command(op: &str, r: u64, sha: &str) -> redis::Cmd {
    let mut cmd = redis::cmd(op);
    match op {
        "SET" => cmd.arg(format!("key:{r}")).arg("xxx"),
        "GET" => cmd.arg(format!("key:{r}")),
        "INCR" => cmd.arg(format!("counter:{r}")),
        "LPUSH" => cmd.arg("mylist").arg("xxx"),
        "HSET" => cmd.arg("myhash").arg(format!("element:{r}")).arg("xxx"),
        "EVALSHA" => cmd
            .arg(sha)
            .arg(2)
            .arg(format!("lock:{r}"))
            .arg(format!("latch:{r}"))
            .arg(30000)
            .arg("owner")
            .arg(10000),
        _ => unreachable!("an op of OPS"),
    };
    cmd
}

fn main() {
    let mut seconds = 1.0f64;
    let mut keyspace = 100_000u64;
    let mut script = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--seconds" => seconds = value.parse().expect("--seconds wants a number"),
            "--keyspace" => keyspace = value.parse().expect("--keyspace wants a count"),
            "--script" => script = Some(value),
            _ => panic!("flags: --script FILE, --seconds S, --keyspace N"),
        }
    }
    let body = std::fs::read(script.expect("--script FILE: the Lua body EVALSHA runs"))
        .expect("the script file");
    let budget = Duration::from_secs_f64(seconds);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let mut conn = FakeConnection::new(shared(Engine::new(ManualClock::default())), NodeId(1));
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(body)
            .query_async(&mut conn)
            .await
            .expect("SCRIPT LOAD on the fake");
        let mut draws = Draws(1);
        for op in OPS {
            let started = Instant::now();
            let mut done = 0u64;
            while started.elapsed() < budget {
                // A batch between clock reads, so reading the clock is not what is measured.
                for _ in 0..100 {
                    let cmd = command(op, draws.next(keyspace), &sha);
                    match conn.req_packed_command(&cmd).await {
                        Ok(redis::Value::ServerError(e)) => panic!("{op} on the fake: {e:?}"),
                        Err(e) => panic!("{op} on the fake: {e}"),
                        Ok(_) => {}
                    }
                }
                done += 100;
            }
            println!("{op} {:.0}", done as f64 / started.elapsed().as_secs_f64());
        }
    });
}
