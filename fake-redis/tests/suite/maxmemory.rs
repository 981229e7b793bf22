//! `maxmemory` and eviction: the limit is kept and shown, a server over it under `noeviction`
//! refuses what Redis 7.0 refuses with Redis's text (held to a redis-server of the test's own),
//! each policy keeps the memory estimate under the limit and evicts what it should, evictions are
//! announced and counted, and a seed replays the same evictions.

use crate::support::{OwnServer, argv, assert_no_mismatches, connect_real, describe, mismatches};
use fake_redis::{ClientId, Engine, EngineConfig, FakeConnection, Frame, ManualClock};
use std::collections::BTreeSet;

/// An engine on a manual clock with `seed`, and a connection to it.
fn engine(seed: u64) -> (Engine, ClientId) {
    let config = EngineConfig {
        seed,
        ..EngineConfig::default()
    };
    let mut engine = Engine::with_config(ManualClock::new(1_700_000_000_000), config);
    let c = engine.connect();
    (engine, c)
}

fn ok(engine: &mut Engine, c: ClientId, cmd: &str) {
    assert_eq!(engine.execute(c, &argv(cmd)), Frame::OK, "{cmd}");
}

/// A field of `INFO`, as a number.
fn info_field(engine: &mut Engine, c: ClientId, field: &str) -> u64 {
    let text = match engine.execute(c, &argv("INFO everything")) {
        Frame::Bulk(text) | Frame::Verbatim { text, .. } => text,
        other => panic!("INFO replied {other:?}"),
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO has no numeric {field}"))
}

fn exists(engine: &mut Engine, c: ClientId, key: &str) -> bool {
    engine.execute(c, &argv(&format!("EXISTS {key}"))) == Frame::Integer(1)
}

/// A limit `room` bytes above what the engine uses now.
fn limit_with_room(engine: &mut Engine, c: ClientId, room: u64) -> u64 {
    info_field(engine, c, "used_memory") + room
}

/// A value of about a hundred bytes.
const VALUE: &str = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv";

#[test]
fn maxmemory_is_set_with_other_parameters_and_shown() {
    let (mut engine, c) = engine(1);
    ok(&mut engine, c, "CONFIG SET timeout 70 maxmemory 100");
    assert_eq!(
        engine.execute(c, &argv("CONFIG GET maxmemory")),
        Frame::Map(vec![(
            Frame::Bulk("maxmemory".into()),
            Frame::Bulk("100".into())
        )])
    );
    assert_eq!(info_field(&mut engine, c, "maxmemory"), 100);
    ok(&mut engine, c, "CONFIG SET timeout 0 maxmemory 0");
    assert_eq!(info_field(&mut engine, c, "maxmemory"), 0);
}

#[tokio::test]
async fn noeviction_refuses_what_redis_refuses_with_its_text() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = crate::support::fake_connection();
    let lines = [
        "SET a b",
        "CONFIG SET maxmemory 1",
        "SET a c",
        "INCR n",
        "GET a",
        "PING",
        "EXPIRE a 100",
        "DEL a",
        "SET a d",
        "CONFIG SET maxmemory-policy volatile-lru",
        "SET a e",
        "MULTI",
        "GET a",
        "EXEC",
        "CONFIG SET maxmemory 0",
        "CONFIG SET maxmemory-policy noeviction",
        "SET a f",
        "GET a",
    ];
    assert_no_mismatches(&mismatches(&mut real, &mut fake, &lines).await);
    // Scripts: an unflagged script's first write that may grow memory is refused (its error
    // carries the script's suffix), one after a write is not, and a flagged script is refused
    // before it runs.
    async fn both(
        real: &mut redis::aio::MultiplexedConnection,
        fake: &mut FakeConnection,
        cmd: &redis::Cmd,
    ) -> (String, String) {
        let want = describe(&cmd.query_async::<redis::Value>(real).await);
        let got = describe(&cmd.query_async::<redis::Value>(fake).await);
        (want, got)
    }
    let limit = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(1)
        .clone();
    both(&mut real, &mut fake, &limit).await;
    for body in [
        "return redis.call('set','x','y')",
        "return redis.pcall('set','x','y')",
        "#!lua\nreturn redis.call('set','x','y')",
        "#!lua flags=allow-oom\nreturn redis.call('set','x','y')",
        "#!lua flags=no-writes\nreturn redis.call('get','x')",
        // A shebang Redis refuses: the script's own error, not OOM (the command's table flags
        // decide the memory check then).
        "#!lua flags=bogus\nreturn 1",
        "redis.call('del','x') return redis.call('set','x','y')",
        "return redis.call('get','x')",
    ] {
        let eval = redis::cmd("EVAL").arg(body).arg(0).clone();
        let (want, got) = both(&mut real, &mut fake, &eval).await;
        assert_eq!(got, want, "{body}");
    }
    let unlimit = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(0)
        .clone();
    both(&mut real, &mut fake, &unlimit).await;
}

#[test]
fn exec_of_a_queued_write_is_aborted_once_memory_is_over() {
    let (mut engine, c) = engine(1);
    let admin = engine.connect();
    ok(&mut engine, c, "MULTI");
    assert_eq!(engine.execute(c, &argv("SET a b")), Frame::simple("QUEUED"));
    ok(&mut engine, admin, "CONFIG SET maxmemory 1");
    assert_eq!(
        engine.execute(c, &argv("EXEC")),
        Frame::error(
            "EXECABORT Transaction discarded because of: OOM command not allowed when used \
             memory > 'maxmemory'."
        )
    );
}

/// Fills the keyspace past a limit under `policy`; every key gets a TTL when `ttl`. The keys
/// left, and what `INFO` says after.
fn fill(policy: &str, ttl: bool, seed: u64) -> (Engine, ClientId, u64) {
    let (mut engine, c) = engine(seed);
    ok(
        &mut engine,
        c,
        &format!("CONFIG SET maxmemory-policy {policy}"),
    );
    let limit = limit_with_room(&mut engine, c, 30_000);
    ok(&mut engine, c, &format!("CONFIG SET maxmemory {limit}"));
    for i in 0..1000 {
        let cmd = match ttl {
            true => format!("SET key:{i} {VALUE} EX {}", 10_000 + i),
            false => format!("SET key:{i} {VALUE}"),
        };
        ok(&mut engine, c, &cmd);
    }
    (engine, c, limit)
}

#[test]
fn every_policy_keeps_used_memory_under_the_limit() {
    for (policy, ttl) in [
        ("allkeys-lru", false),
        ("allkeys-lfu", false),
        ("allkeys-random", false),
        ("volatile-lru", true),
        ("volatile-lfu", true),
        ("volatile-random", true),
        ("volatile-ttl", true),
    ] {
        let (mut engine, c, limit) = fill(policy, ttl, 7);
        // `INFO` evicts before it runs, as every command does: what it shows is within the limit.
        let used = info_field(&mut engine, c, "used_memory");
        assert!(used <= limit, "{policy}: {used} > {limit}");
        let evicted = info_field(&mut engine, c, "evicted_keys");
        let Frame::Integer(left) = engine.execute(c, &argv("DBSIZE")) else {
            panic!("DBSIZE replies an integer");
        };
        assert!(evicted > 0, "{policy} evicted nothing");
        assert_eq!(left as u64 + evicted, 1000, "{policy}");
    }
}

#[test]
fn noeviction_leaves_the_keys_and_refuses_the_write() {
    let (mut engine, c) = engine(3);
    let limit = limit_with_room(&mut engine, c, 2_000);
    ok(&mut engine, c, &format!("CONFIG SET maxmemory {limit}"));
    let mut refused = None;
    for i in 0..100 {
        let reply = engine.execute(c, &argv(&format!("SET key:{i} {VALUE}")));
        if reply != Frame::OK {
            refused = Some((i, reply));
            break;
        }
    }
    let (i, reply) = refused.expect("a write past the limit is refused");
    assert_eq!(
        reply,
        Frame::error("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert_eq!(engine.execute(c, &argv("DBSIZE")), Frame::Integer(i));
    assert_eq!(info_field(&mut engine, c, "evicted_keys"), 0);
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let (mut engine, c) = engine(5);
        for i in 0..50 {
            ok(&mut engine, c, &format!("SET keep:{i} {VALUE}"));
        }
        ok(
            &mut engine,
            c,
            &format!("CONFIG SET maxmemory-policy {policy}"),
        );
        let limit = limit_with_room(&mut engine, c, 10_000);
        ok(&mut engine, c, &format!("CONFIG SET maxmemory {limit}"));
        for i in 0..300 {
            ok(&mut engine, c, &format!("SET ttl:{i} {VALUE} EX 1000"));
        }
        for i in 0..50 {
            assert!(exists(&mut engine, c, &format!("keep:{i}")), "{policy}");
        }
        assert!(info_field(&mut engine, c, "evicted_keys") > 0, "{policy}");
        // With no key left that has a TTL, nothing can go: out of memory.
        engine.execute(c, &argv("CONFIG SET maxmemory 1"));
        assert_eq!(
            engine.execute(c, &argv("SET more x")),
            Frame::error("OOM command not allowed when used memory > 'maxmemory'."),
            "{policy}"
        );
        assert_eq!(engine.execute(c, &argv("DBSIZE")), Frame::Integer(50));
    }
}

#[test]
fn volatile_ttl_evicts_the_nearest_deadlines_first() {
    let (mut engine, c) = engine(11);
    ok(&mut engine, c, "CONFIG SET maxmemory-policy volatile-ttl");
    ok(&mut engine, c, "CONFIG SET maxmemory-samples 10");
    let mut written = Vec::new();
    for i in 0..400 {
        // Deadlines in an order unrelated to the keys' names or their writing.
        let ttl = 1000 + (i * 7919) % 400;
        ok(&mut engine, c, &format!("SET k:{i} {VALUE} EX {ttl}"));
        written.push((i, ttl));
    }
    let limit = info_field(&mut engine, c, "used_memory") - 20_000;
    ok(&mut engine, c, &format!("CONFIG SET maxmemory {limit}"));
    let (mut gone, mut kept) = (Vec::new(), Vec::new());
    for (i, ttl) in written {
        match exists(&mut engine, c, &format!("k:{i}")) {
            true => kept.push(ttl),
            false => gone.push(ttl),
        }
    }
    assert!(!gone.is_empty());
    let mean = |v: &[i32]| v.iter().map(|&t| f64::from(t)).sum::<f64>() / v.len() as f64;
    assert!(mean(&gone) + 100.0 < mean(&kept), "{gone:?}");
    // The farthest deadlines are never the ones to go.
    assert!(gone.iter().all(|&t| t < 1350), "{gone:?}");
}

#[test]
fn lfu_keeps_hot_keys_over_cold_ones_and_object_freq_counts() {
    let (mut engine, c) = engine(13);
    ok(&mut engine, c, "CONFIG SET maxmemory-policy allkeys-lfu");
    ok(&mut engine, c, &format!("SET hot:0 {VALUE}"));
    assert_eq!(
        engine.execute(c, &argv("OBJECT FREQ hot:0")),
        Frame::Integer(5)
    );
    engine.execute(c, &argv("GET hot:0"));
    assert_eq!(
        engine.execute(c, &argv("OBJECT FREQ hot:0")),
        Frame::Integer(6)
    );
    // `RESTORE … FREQ` sets the counter.
    let Frame::Bulk(payload) = engine.execute(c, &argv("DUMP hot:0")) else {
        panic!("DUMP replies a bulk string");
    };
    let restore: Vec<bytes::Bytes> = ["RESTORE", "copy", "0"]
        .iter()
        .map(|w| bytes::Bytes::from(*w))
        .chain([payload, "FREQ".into(), "100".into()])
        .collect();
    assert_eq!(engine.execute(c, &restore), Frame::OK);
    assert_eq!(
        engine.execute(c, &argv("OBJECT FREQ copy")),
        Frame::Integer(100)
    );
    assert_eq!(engine.execute(c, &argv("DEL copy")), Frame::Integer(1));
    for i in 1..20 {
        ok(&mut engine, c, &format!("SET hot:{i} {VALUE}"));
    }
    for _ in 0..50 {
        for i in 0..20 {
            engine.execute(c, &argv(&format!("GET hot:{i}")));
        }
    }
    let limit = limit_with_room(&mut engine, c, 10_000);
    ok(&mut engine, c, &format!("CONFIG SET maxmemory {limit}"));
    for i in 0..500 {
        ok(&mut engine, c, &format!("SET cold:{i} {VALUE}"));
    }
    for i in 0..20 {
        assert!(exists(&mut engine, c, &format!("hot:{i}")), "hot:{i}");
    }
    assert!(info_field(&mut engine, c, "evicted_keys") > 400);
}

#[test]
fn an_evicted_key_is_announced_and_counted() {
    let (mut engine, c) = engine(17);
    let sub = engine.connect();
    ok(&mut engine, c, "CONFIG SET notify-keyspace-events Ee");
    engine.execute(sub, &argv("SUBSCRIBE __keyevent@0__:evicted"));
    engine.drain_outbox(sub);
    for i in 0..20 {
        ok(&mut engine, c, &format!("SET k:{i} {VALUE}"));
    }
    ok(&mut engine, c, "CONFIG SET maxmemory-policy allkeys-random");
    let limit = info_field(&mut engine, c, "used_memory") - 1_000;
    ok(&mut engine, c, &format!("CONFIG SET maxmemory {limit}"));
    let evicted = info_field(&mut engine, c, "evicted_keys");
    assert!(evicted > 0);
    let announced: Vec<Frame> = engine.drain_outbox(sub);
    assert_eq!(announced.len() as u64, evicted);
    for message in announced {
        let (Frame::Array(parts) | Frame::Push(parts)) = message else {
            panic!("a message is an array, got {message:?}");
        };
        assert_eq!(parts[1], Frame::Bulk("__keyevent@0__:evicted".into()));
        let Frame::Bulk(key) = &parts[2] else {
            panic!("the key is a bulk string");
        };
        let key = String::from_utf8_lossy(key).into_owned();
        assert!(!exists(&mut engine, c, &key), "{key} announced but present");
    }
}

/// The keys a run of `policy` under `seed` evicted.
fn evicted_keys(policy: &str, seed: u64) -> BTreeSet<String> {
    let (mut engine, c, _) = fill(policy, true, seed);
    (0..1000)
        .map(|i| format!("key:{i}"))
        .filter(|k| !exists(&mut engine, c, k))
        .collect()
}

#[test]
fn one_seed_evicts_the_same_keys_every_run() {
    for policy in [
        "allkeys-random",
        "allkeys-lru",
        "allkeys-lfu",
        "volatile-ttl",
    ] {
        let first = evicted_keys(policy, 42);
        assert!(!first.is_empty());
        assert_eq!(evicted_keys(policy, 42), first, "{policy}");
    }
    assert_ne!(
        evicted_keys("allkeys-random", 42),
        evicted_keys("allkeys-random", 43)
    );
}

#[test]
fn used_memory_follows_memory_usage_of_the_keys() {
    let (mut engine, c) = engine(19);
    let empty = info_field(&mut engine, c, "used_memory");
    ok(&mut engine, c, &format!("SET s {VALUE}"));
    engine.execute(c, &argv("HSET h f1 v1 f2 v2"));
    engine.execute(c, &argv("RPUSH l a b c"));
    let usage = |engine: &mut Engine, key: &str| match engine
        .execute(c, &argv(&format!("MEMORY USAGE {key}")))
    {
        Frame::Integer(n) => n as u64,
        other => panic!("MEMORY USAGE replied {other:?}"),
    };
    let keys: u64 = ["s", "h", "l"].iter().map(|k| usage(&mut engine, k)).sum();
    // The keys, and the main table's buckets (four, for three keys).
    let used = info_field(&mut engine, c, "used_memory");
    assert_eq!(used, empty + keys + 8 * 4);
    // Changed in place: measured again.
    engine.execute(c, &argv(&format!("APPEND s {VALUE}")));
    engine.execute(c, &argv("HSET h f3 v3"));
    let keys: u64 = ["s", "h", "l"].iter().map(|k| usage(&mut engine, k)).sum();
    assert_eq!(
        info_field(&mut engine, c, "used_memory"),
        empty + keys + 8 * 4
    );
    ok(&mut engine, c, "FLUSHALL");
    assert_eq!(info_field(&mut engine, c, "used_memory"), empty);
}
