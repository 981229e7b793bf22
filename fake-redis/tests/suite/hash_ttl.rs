//! Hash-field expiration (`fake-redis/src/cmd/hash_ttl.rs`, `engine/hash_ttl.rs`): the replies of
//! Redis 7.4.1's `HEXPIRE` family byte for byte, the hash commands on fields past their deadline,
//! and the active cycle on the engine's clock.
//!
//! The table of cases runs on the fake and is held to replies recorded from redis-server 7.4.1
//! (RESP2 and RESP3). With `REDIS_7_4_SERVER` naming a 7.4 `redis-server` binary, the test also
//! starts that server, runs the same cases on it, and requires its replies to be the recorded
//! ones and the fake's to be its own (so a recording that drifted from the server fails too).
//! Valkey 9.1's table works the same way with `VALKEY_SERVER` naming a `valkey-server`;
//! `HASH_TTL_RECORD` prints a server's replies in the tables' form.
//! `SLEEP n` moves the fake's clock by n ms and sleeps n ms beside the real server; both run with
//! active expiry off (`DEBUG SET-ACTIVE-EXPIRE 0`) so that what a sleep leaves is lazy expiry's.

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::encode;
use fake_redis::{ClientId, DebugCommand, Engine, EngineConfig, Frame, ManualClock, Version};
use support::OwnServer;
use support::argv;
use support::raw::Real;

/// Each case starts on empty databases, with active expiry off.
const CASES: &[&[&str]] = &[
    // Arguments and their errors, in Redis 7.4's order.
    &[
        "HSET h a 1 b 2 c 3",
        "HEXPIRE h 100 FIELDS 2 a x",
        "HEXPIRE h 100 FIELDS 1",
        "HEXPIRE h 100 FIELDS 3 a b",
        "HEXPIRE h 100 FIELDS 0 a",
        "HEXPIRE h 100 FIELDS -1 a",
        "HEXPIRE h 100 FIELDS abc a",
        "HEXPIRE h abc FIELDS 1 a",
        "HEXPIRE h -1 FIELDS 1 a",
        "HEXPIRE h 70368744178 FIELDS 1 a",
        "HPEXPIRE h 70368744177663 FIELDS 1 a",
        "HEXPIREAT h 70368744178 FIELDS 1 a",
        "HPEXPIREAT h 70368744177664 FIELDS 1 a",
        "HPEXPIREAT h 70368744177663 FIELDS 1 a",
        "HPEXPIRETIME h FIELDS 1 a",
        "HEXPIREAT h 70368744177 FIELDS 1 a",
        "HPEXPIRETIME h FIELDS 1 a",
        "HEXPIRE h 100 FOO 1 a",
        "HEXPIRE h 100 NX XX FIELDS 1 a",
        "HEXPIRE h 100 nx fields 1 b",
        "hexpire h 100 fields 1 c",
        "HEXPIRE nokey 100 FIELDS 2 a b",
        "HTTL h FIELDS 0 a",
        "HTTL h FIELDS abc a",
        "HTTL h FIELDS 2 a",
        "HTTL h FOO 1 a",
        "HTTL h FIELDS 1",
        "HTTL nokey FIELDS 2 a b",
        "HPTTL nokey FIELDS 1 a",
        "HEXPIRETIME nokey FIELDS 1 a",
        "HPERSIST h FIELDS 0 a",
        "HPERSIST h FIELDS 2 a",
        "HPERSIST nokey FIELDS 1 a",
        "SET s x",
        "HEXPIRE s abc FIELDS 1 a",
        "HTTL s FOO 1 a",
        "HPERSIST s FIELDS 1 a",
    ],
    // The conditions; a field without a TTL counts as one that never expires.
    &[
        "HSET h a 1 b 2",
        "HEXPIRE h 100 XX FIELDS 2 a b",
        "HEXPIRE h 100 GT FIELDS 1 a",
        "HEXPIRE h 100 LT FIELDS 1 a",
        "HEXPIRE h 100 NX FIELDS 2 a b",
        "HEXPIRE h 200 GT FIELDS 1 a",
        "HEXPIRE h 50 GT FIELDS 1 a",
        "HEXPIRE h 300 LT FIELDS 1 a",
        "HEXPIRE h 50 LT FIELDS 1 a",
        "HEXPIRE h 50 XX FIELDS 1 a",
        "HTTL h FIELDS 3 a b c",
        "HEXPIREAT h 4102444800 FIELDS 1 a",
        "HEXPIRETIME h FIELDS 2 a c",
        "HPEXPIRETIME h FIELDS 1 a",
        "HPEXPIREAT h 4102444800123 FIELDS 1 a",
        "HEXPIRETIME h FIELDS 1 a",
        "HPEXPIRETIME h FIELDS 1 a",
        "HPERSIST h FIELDS 3 a b c",
        "HTTL h FIELDS 3 a b c",
        "HPERSIST h FIELDS 1 a",
        "HPEXPIREAT h 1000 FIELDS 2 a c",
        "HGETALL h",
        "HLEN h",
        "HEXPIRE h 0 FIELDS 1 b",
        "EXISTS h",
    ],
    // What the hash commands do to a field's TTL, and what moves a hash with them.
    &[
        "HSET h a 1 b 2",
        "OBJECT ENCODING h",
        "HEXPIRE h 100 FIELDS 2 a b",
        "OBJECT ENCODING h",
        "HINCRBY h a 5",
        "HTTL h FIELDS 1 a",
        "HINCRBYFLOAT h a 1.5",
        "HTTL h FIELDS 1 a",
        "HSET h a 9",
        "HTTL h FIELDS 2 a b",
        "HSETNX h b 3",
        "HTTL h FIELDS 1 b",
        "HPERSIST h FIELDS 1 b",
        "OBJECT ENCODING h",
        "HEXPIRE h 100 FIELDS 1 b",
        "COPY h h2",
        "HTTL h2 FIELDS 2 a b",
        "RENAME h2 h3",
        "HTTL h3 FIELDS 1 b",
        "EXPIRE h3 1000",
        "HTTL h3 FIELDS 1 b",
        "TTL h3",
        "PERSIST h3",
        "HTTL h3 FIELDS 1 b",
        "MOVE h3 1",
        "SELECT 1",
        "HTTL h3 FIELDS 1 b",
        "TYPE h3",
        "SELECT 0",
        "HDEL h b",
        "HTTL h FIELDS 1 b",
        "HSET big f 0123456789012345678901234567890123456789012345678901234567890123456789",
        "OBJECT ENCODING big",
        "HEXPIRE big 100 FIELDS 2 f g",
        "HTTL big FIELDS 2 f g",
        "OBJECT ENCODING big",
        "HPEXPIREAT big 1000 FIELDS 1 f",
        "EXISTS big",
        "HSET d a 1 b 2",
        "HPEXPIREAT d 4102444800000 FIELDS 1 a",
        "DUMP d",
        "HSET ht f 0123456789012345678901234567890123456789012345678901234567890123456789",
        "HPEXPIREAT ht 4102444800000 FIELDS 1 f",
        "DUMP ht",
    ],
    // Fields past their deadline before anything removed them: lazy expiry.
    &[
        "HSET h a 1 b 2 c 3 d 4 e 5",
        "HPEXPIRE h 20 FIELDS 4 a b c d",
        "SLEEP 40",
        "HLEN h",
        "HGETALL h",
        "HKEYS h",
        "HVALS h",
        "HSCAN h 0",
        "HLEN h",
        "HGET h a",
        "HLEN h",
        "HMGET h b e",
        "HLEN h",
        "HEXISTS h c",
        "HSTRLEN h d",
        "HLEN h",
        "HSET h2 a 1 b 2 c 3",
        "HPEXPIRE h2 20 FIELDS 3 a b c",
        "SLEEP 40",
        "HSET h2 a 9",
        "HTTL h2 FIELDS 3 a b c",
        "HLEN h2",
        "HSETNX h2 b 5",
        "HGET h2 b",
        "HINCRBY h2 c 7",
        "HTTL h2 FIELDS 3 a b c",
        "HLEN h2",
        "HSET h3 a 1 b 2",
        "HPEXPIRE h3 20 FIELDS 2 a b",
        "SLEEP 40",
        "HMGET h3 a b x",
        "EXISTS h3",
        "HSET h4 a 1",
        "HPEXPIRE h4 20 FIELDS 1 a",
        "SLEEP 40",
        "HRANDFIELD h4",
        "EXISTS h4",
        "HSET h5 a 1 b 2",
        "HPEXPIRE h5 20 FIELDS 1 a",
        "SLEEP 40",
        "HRANDFIELD h5 5 WITHVALUES",
        "HLEN h5",
        "HSET h6 a 1",
        "HPEXPIRE h6 20 FIELDS 1 a",
        "SLEEP 40",
        "HINCRBY h6 a 1",
        "HTTL h6 FIELDS 1 a",
    ],
];

/// A fake of Redis 7.4 with `DEBUG` allowed, at `now` (unix ms).
fn fake(now: i64) -> (Engine, ManualClock, ClientId) {
    fake_of(Version::V7_4, now)
}

/// A fake of `version` with `DEBUG` allowed, at `now` (unix ms).
fn fake_of(version: Version, now: i64) -> (Engine, ManualClock, ClientId) {
    let clock = ManualClock::new(now);
    let config = EngineConfig {
        version,
        enable_debug_command: DebugCommand::Yes,
        ..EngineConfig::default()
    };
    let mut engine = Engine::with_config(clock.clone(), config);
    let client = engine.connect();
    (engine, clock, client)
}

fn resp(frame: &Frame, protocol: u8) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode(frame, protocol, &mut out);
    out.to_vec()
}

/// The replies of every case's commands on the fake, in `protocol`, as RESP bytes (a `SLEEP`
/// step has none), with `real` (when given) taking every step beside it.
fn run(table: &Table, protocol: u8, mut real: Option<&mut Real>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1_765_000_000_000, |d| d.as_millis() as i64);
    let now = if real.is_some() {
        now
    } else {
        1_765_000_000_000
    };
    let (mut engine, clock, client) = fake_of(table.version, now);
    let (mut fakes, mut reals) = (Vec::new(), Vec::new());
    let mut both = |engine: &mut Engine, real: &mut Option<&mut Real>, line: &str| {
        let reply = engine.execute(client, &argv(line));
        if let Some(real) = real {
            let words: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
            reals.push(real.call(&words));
        }
        resp(&reply, protocol)
    };
    for case in table.cases {
        for setup in ["FLUSHALL", "SELECT 0", "DEBUG SET-ACTIVE-EXPIRE 0"] {
            both(&mut engine, &mut real, setup);
        }
        if protocol == 3 {
            both(&mut engine, &mut real, "HELLO 3");
        }
        for line in case.iter() {
            if let Some(ms) = line.strip_prefix("SLEEP ") {
                let ms: i64 = ms.parse().expect("a sleep in ms");
                clock.advance(ms);
                if real.is_some() {
                    std::thread::sleep(std::time::Duration::from_millis(ms as u64));
                }
                continue;
            }
            fakes.push(both(&mut engine, &mut real, line));
        }
        if protocol == 3 {
            both(&mut engine, &mut real, "HELLO 2");
        }
    }
    (fakes, reals)
}

/// The replies of the cases' commands (set-up and `SLEEP` steps left out), in order.
fn commands(table: &Table) -> Vec<&'static str> {
    table
        .cases
        .iter()
        .flat_map(|c| c.iter().copied())
        .filter(|l| !l.starts_with("SLEEP "))
        .collect()
}

/// A table of cases for one release: the variable naming that release's server binary, and
/// the replies recorded from it.
struct Table {
    version: Version,
    server: &'static str,
    cases: &'static [&'static [&'static str]],
    resp2: &'static [&'static [u8]],
    resp3: &'static [&'static [u8]],
}

const REDIS_7_4: Table = Table {
    version: Version::V7_4,
    server: "REDIS_7_4_SERVER",
    cases: CASES,
    resp2: RECORDED_RESP2,
    resp3: RECORDED_RESP3,
};

fn check(table: &Table, protocol: u8) {
    let recorded = if protocol == 3 {
        table.resp3
    } else {
        table.resp2
    };
    let server = OwnServer::from_env(table.server);
    let mut real = server.as_ref().map(|s| Real::connect(s.port));
    let (fakes, reals) = run(table, protocol, real.as_mut());
    let lines = commands(table);
    let mut mismatches = Vec::new();
    if let Some(_server) = &server {
        // The set-up commands' replies came first in each case: keep the commands' only.
        let reals = without_setup(table, reals, protocol);
        if std::env::var_os("HASH_TTL_RECORD").is_some() {
            for r in &reals {
                println!("    b\"{}\",", r.escape_ascii());
            }
        }
        for ((line, want), got) in lines.iter().zip(&reals).zip(&fakes) {
            if want != got {
                mismatches.push(support::raw::mismatch(line, want, got));
            }
        }
        for (line, (want, recorded)) in lines.iter().zip(reals.iter().zip(recorded)) {
            if want[..] != **recorded {
                mismatches.push(format!("recording of {line} drifted from the server"));
            }
        }
    }
    if recorded.len() != lines.len() {
        mismatches.push(format!(
            "{} recorded replies for {} commands",
            recorded.len(),
            lines.len()
        ));
    }
    for ((line, recorded), got) in lines.iter().zip(recorded).zip(&fakes) {
        if got[..] != **recorded {
            mismatches.push(support::raw::mismatch(line, recorded, got));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The real replies without those of each case's set-up.
fn without_setup(table: &Table, reals: Vec<Vec<u8>>, protocol: u8) -> Vec<Vec<u8>> {
    let (before, after) = if protocol == 3 { (4, 1) } else { (3, 0) };
    let mut out = Vec::new();
    let mut it = reals.into_iter();
    for case in table.cases {
        let steps = case.iter().filter(|l| !l.starts_with("SLEEP ")).count();
        it.by_ref().take(before).for_each(drop);
        out.extend(it.by_ref().take(steps));
        it.by_ref().take(after).for_each(drop);
    }
    out
}

#[test]
fn the_hexpire_family_answers_as_redis_7_4_resp2() {
    check(&REDIS_7_4, 2);
}

#[test]
fn the_hexpire_family_answers_as_redis_7_4_resp3() {
    check(&REDIS_7_4, 3);
}

/// Valkey 9.1: the argument and condition cases, and its own forms.
const VALKEY_9_1: Table = Table {
    version: Version::Valkey9_1,
    server: "VALKEY_SERVER",
    cases: &[CASES[0], CASES[1], VALKEY_CASES],
    resp2: VALKEY_RESP2,
    resp3: VALKEY_RESP3,
};

const VALKEY_CASES: &[&str] = &[
    "HSET h a 1 b 2",
    "HEXPIRE h 100 FIELDS 2 a nx",
    "HEXPIRE h 100 FIELDS 1 a foo",
    "HEXPIRE h 100 nx nx FIELDS 1 a",
    "HEXPIRE h 100 gt lt FIELDS 1 a",
    "HEXPIRE h 100 xx lt FIELDS 1 b",
    "HEXPIRE h 100 xx lt FIELDS 1 a",
    "HEXPIRE h 200 xx gt FIELDS 1 a",
    "HEXPIRE h 0 FIELDS 1 zz",
    "HPEXPIREAT h 9223372036854775807 FIELDS 1 b",
    "HPEXPIRETIME h FIELDS 1 b",
    "HEXPIRETIME h FIELDS 1 b",
    "HPEXPIRE h 9223372036854775807 FIELDS 1 b",
    "HEXPIRE h 9223372036854775 FIELDS 1 b",
    "HEXPIREAT h 9223372036854775 FIELDS 1 b",
    "HEXPIRETIME h FIELDS 1 b",
    "HTTL h FIELDS 1 a b",
    "HTTL h FIELDS -1 a",
    "HPERSIST h FIELDS 2 a",
    "HPERSIST h FOO 1 a",
    "SET s x",
    "HEXPIRE s abc FIELDS 1 a",
    "HTTL s foo 1 a",
    "HPERSIST s FIELDS 1 a",
];

#[test]
fn the_hexpire_family_answers_as_valkey_9_1_resp2() {
    check(&VALKEY_9_1, 2);
}

#[test]
fn the_hexpire_family_answers_as_valkey_9_1_resp3() {
    check(&VALKEY_9_1, 3);
}

const VALKEY_RESP2: &[&[u8]] = &[
    b":3\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"-ERR wrong number of arguments for \'hexpire\' command\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time in \'hexpire\' command\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177663\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177000\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR wrong number of arguments for \'httl\' command\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*1\r\n:-2\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b":2\r\n",
    b"*2\r\n:0\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:0\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*3\r\n:50\r\n:100\r\n:-2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:4102444800\r\n:-2\r\n",
    b"*1\r\n:4102444800000\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:4102444800\r\n",
    b"*1\r\n:4102444800123\r\n",
    b"*3\r\n:1\r\n:1\r\n:-2\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-2\r\n",
    b"*1\r\n:-1\r\n",
    b"*2\r\n:2\r\n:-2\r\n",
    b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b":1\r\n",
    b"*1\r\n:2\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*1\r\n:0\r\n",
    b"-ERR GT and LT options at the same time are not compatible\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:-2\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:9223372036854775807\r\n",
    b"*1\r\n:9223372036854776\r\n",
    b"-ERR invalid expire time in \'hpexpire\' command\r\n",
    b"-ERR invalid expire time in \'hexpire\' command\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:9223372036854775\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
];
const VALKEY_RESP3: &[&[u8]] = &[
    b":3\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"-ERR wrong number of arguments for \'hexpire\' command\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time in \'hexpire\' command\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177663\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177000\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR wrong number of arguments for \'httl\' command\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*1\r\n:-2\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b":2\r\n",
    b"*2\r\n:0\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:0\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*3\r\n:50\r\n:100\r\n:-2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:4102444800\r\n:-2\r\n",
    b"*1\r\n:4102444800000\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:4102444800\r\n",
    b"*1\r\n:4102444800123\r\n",
    b"*3\r\n:1\r\n:1\r\n:-2\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-2\r\n",
    b"*1\r\n:-1\r\n",
    b"*2\r\n:2\r\n:-2\r\n",
    b"%1\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b":1\r\n",
    b"*1\r\n:2\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*1\r\n:0\r\n",
    b"-ERR GT and LT options at the same time are not compatible\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:-2\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:9223372036854775807\r\n",
    b"*1\r\n:9223372036854776\r\n",
    b"-ERR invalid expire time in \'hpexpire\' command\r\n",
    b"-ERR invalid expire time in \'hexpire\' command\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:9223372036854775\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
];

const RECORDED_RESP2: &[&[u8]] = &[
    b":3\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"-ERR wrong number of arguments for \'hexpire\' command\r\n",
    b"-ERR The `numfields` parameter must match the number of arguments\r\n",
    b"-ERR Parameter `numFields` should be greater than 0\r\n",
    b"-ERR Parameter `numFields` should be greater than 0\r\n",
    b"-ERR Parameter `numFields` should be greater than 0\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time, must be >= 0\r\n",
    b"-ERR invalid expire time in \'hexpire\' command\r\n",
    b"-ERR invalid expire time in \'hpexpire\' command\r\n",
    b"-ERR invalid expire time in \'hexpireat\' command\r\n",
    b"-ERR invalid expire time in \'hpexpireat\' command\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177663\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177000\r\n",
    b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"-ERR Number of fields must be a positive integer\r\n",
    b"-ERR Number of fields must be a positive integer\r\n",
    b"-ERR The `numfields` parameter must match the number of arguments\r\n",
    b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    b"-ERR wrong number of arguments for \'httl\' command\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"-ERR Number of fields must be a positive integer\r\n",
    b"-ERR The `numfields` parameter must match the number of arguments\r\n",
    b"*1\r\n:-2\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b":2\r\n",
    b"*2\r\n:0\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:0\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*3\r\n:50\r\n:100\r\n:-2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:4102444800\r\n:-2\r\n",
    b"*1\r\n:4102444800000\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:4102444801\r\n",
    b"*1\r\n:4102444800123\r\n",
    b"*3\r\n:1\r\n:1\r\n:-2\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-2\r\n",
    b"*1\r\n:-1\r\n",
    b"*2\r\n:2\r\n:-2\r\n",
    b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b":1\r\n",
    b"*1\r\n:2\r\n",
    b":0\r\n",
    b":2\r\n",
    b"$8\r\nlistpack\r\n",
    b"*2\r\n:1\r\n:1\r\n",
    b"$10\r\nlistpackex\r\n",
    b":6\r\n",
    b"*1\r\n:100\r\n",
    b"$3\r\n7.5\r\n",
    b"*1\r\n:100\r\n",
    b":0\r\n",
    b"*2\r\n:-1\r\n:100\r\n",
    b":0\r\n",
    b"*1\r\n:100\r\n",
    b"*1\r\n:1\r\n",
    b"$10\r\nlistpackex\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"*2\r\n:-1\r\n:100\r\n",
    b"+OK\r\n",
    b"*1\r\n:100\r\n",
    b":1\r\n",
    b"*1\r\n:100\r\n",
    b":1000\r\n",
    b":1\r\n",
    b"*1\r\n:100\r\n",
    b":1\r\n",
    b"+OK\r\n",
    b"*1\r\n:100\r\n",
    b"+hash\r\n",
    b"+OK\r\n",
    b":1\r\n",
    b"*1\r\n:-2\r\n",
    b":1\r\n",
    b"$9\r\nhashtable\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"*2\r\n:100\r\n:-2\r\n",
    b"$9\r\nhashtable\r\n",
    b"*1\r\n:2\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b"$49\r\n\x19\x00\xd8\xc3,\xbb\x03\x00\x00\x1d\x1d\x00\x00\x00\x06\x00\x81a\x02\x01\x01\xf4\x00\xd8\xc3,\xbb\x03\x00\x00\t\x81b\x02\x02\x01\x00\x01\xff\x0c\x00E\xa4y\\\x93\x9a\x9c\x04\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b"$45\r\n\x18\x00\xd8\xc3,\xbb\x03\x00\x00\x01\x01\x01f\xc3\x12@F\n01234567890\xe00\t\x0189\x0c\x00\x97\x1f\x8f9\xe3\x02\xbd\x98\r\n",
    b":5\r\n",
    b"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
    b":5\r\n",
    b"*2\r\n$1\r\ne\r\n$1\r\n5\r\n",
    b"*1\r\n$1\r\ne\r\n",
    b"*1\r\n$1\r\n5\r\n",
    b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\ne\r\n$1\r\n5\r\n",
    b":5\r\n",
    b"$-1\r\n",
    b":4\r\n",
    b"*2\r\n$-1\r\n$1\r\n5\r\n",
    b":3\r\n",
    b":0\r\n",
    b":0\r\n",
    b":1\r\n",
    b":3\r\n",
    b"*3\r\n:1\r\n:1\r\n:1\r\n",
    b":0\r\n",
    b"*3\r\n:-1\r\n:-2\r\n:-2\r\n",
    b":3\r\n",
    b":1\r\n",
    b"$1\r\n5\r\n",
    b":7\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-1\r\n",
    b":3\r\n",
    b":2\r\n",
    b"*2\r\n:1\r\n:1\r\n",
    b"*3\r\n$-1\r\n$-1\r\n$-1\r\n",
    b":0\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b"$-1\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b":1\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"*1\r\n:-1\r\n",
];
const RECORDED_RESP3: &[&[u8]] = &[
    b":3\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"-ERR wrong number of arguments for \'hexpire\' command\r\n",
    b"-ERR The `numfields` parameter must match the number of arguments\r\n",
    b"-ERR Parameter `numFields` should be greater than 0\r\n",
    b"-ERR Parameter `numFields` should be greater than 0\r\n",
    b"-ERR Parameter `numFields` should be greater than 0\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time, must be >= 0\r\n",
    b"-ERR invalid expire time in \'hexpire\' command\r\n",
    b"-ERR invalid expire time in \'hpexpire\' command\r\n",
    b"-ERR invalid expire time in \'hexpireat\' command\r\n",
    b"-ERR invalid expire time in \'hpexpireat\' command\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177663\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:70368744177000\r\n",
    b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"-ERR Number of fields must be a positive integer\r\n",
    b"-ERR Number of fields must be a positive integer\r\n",
    b"-ERR The `numfields` parameter must match the number of arguments\r\n",
    b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    b"-ERR wrong number of arguments for \'httl\' command\r\n",
    b"*2\r\n:-2\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"*1\r\n:-2\r\n",
    b"-ERR Number of fields must be a positive integer\r\n",
    b"-ERR The `numfields` parameter must match the number of arguments\r\n",
    b"*1\r\n:-2\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b":2\r\n",
    b"*2\r\n:0\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:0\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:0\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:1\r\n",
    b"*3\r\n:50\r\n:100\r\n:-2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n:4102444800\r\n:-2\r\n",
    b"*1\r\n:4102444800000\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n:4102444801\r\n",
    b"*1\r\n:4102444800123\r\n",
    b"*3\r\n:1\r\n:1\r\n:-2\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-2\r\n",
    b"*1\r\n:-1\r\n",
    b"*2\r\n:2\r\n:-2\r\n",
    b"%1\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b":1\r\n",
    b"*1\r\n:2\r\n",
    b":0\r\n",
    b":2\r\n",
    b"$8\r\nlistpack\r\n",
    b"*2\r\n:1\r\n:1\r\n",
    b"$10\r\nlistpackex\r\n",
    b":6\r\n",
    b"*1\r\n:100\r\n",
    b"$3\r\n7.5\r\n",
    b"*1\r\n:100\r\n",
    b":0\r\n",
    b"*2\r\n:-1\r\n:100\r\n",
    b":0\r\n",
    b"*1\r\n:100\r\n",
    b"*1\r\n:1\r\n",
    b"$10\r\nlistpackex\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"*2\r\n:-1\r\n:100\r\n",
    b"+OK\r\n",
    b"*1\r\n:100\r\n",
    b":1\r\n",
    b"*1\r\n:100\r\n",
    b":1000\r\n",
    b":1\r\n",
    b"*1\r\n:100\r\n",
    b":1\r\n",
    b"+OK\r\n",
    b"*1\r\n:100\r\n",
    b"+hash\r\n",
    b"+OK\r\n",
    b":1\r\n",
    b"*1\r\n:-2\r\n",
    b":1\r\n",
    b"$9\r\nhashtable\r\n",
    b"*2\r\n:1\r\n:-2\r\n",
    b"*2\r\n:100\r\n:-2\r\n",
    b"$9\r\nhashtable\r\n",
    b"*1\r\n:2\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b"$49\r\n\x19\x00\xd8\xc3,\xbb\x03\x00\x00\x1d\x1d\x00\x00\x00\x06\x00\x81a\x02\x01\x01\xf4\x00\xd8\xc3,\xbb\x03\x00\x00\t\x81b\x02\x02\x01\x00\x01\xff\x0c\x00E\xa4y\\\x93\x9a\x9c\x04\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b"$45\r\n\x18\x00\xd8\xc3,\xbb\x03\x00\x00\x01\x01\x01f\xc3\x12@F\n01234567890\xe00\t\x0189\x0c\x00\x97\x1f\x8f9\xe3\x02\xbd\x98\r\n",
    b":5\r\n",
    b"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
    b":5\r\n",
    b"%1\r\n$1\r\ne\r\n$1\r\n5\r\n",
    b"*1\r\n$1\r\ne\r\n",
    b"*1\r\n$1\r\n5\r\n",
    b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\ne\r\n$1\r\n5\r\n",
    b":5\r\n",
    b"_\r\n",
    b":4\r\n",
    b"*2\r\n_\r\n$1\r\n5\r\n",
    b":3\r\n",
    b":0\r\n",
    b":0\r\n",
    b":1\r\n",
    b":3\r\n",
    b"*3\r\n:1\r\n:1\r\n:1\r\n",
    b":0\r\n",
    b"*3\r\n:-1\r\n:-2\r\n:-2\r\n",
    b":3\r\n",
    b":1\r\n",
    b"$1\r\n5\r\n",
    b":7\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-1\r\n",
    b":3\r\n",
    b":2\r\n",
    b"*2\r\n:1\r\n:1\r\n",
    b"*3\r\n_\r\n_\r\n_\r\n",
    b":0\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b"_\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b":1\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"*1\r\n:-1\r\n",
];

/// Drains the messages `sub` received, as (channel, message) of each `pmessage`.
fn events(engine: &mut Engine, sub: ClientId) -> Vec<(String, String)> {
    engine
        .drain_outbox(sub)
        .into_iter()
        .filter_map(|f| match f {
            Frame::Array(parts) | Frame::Push(parts) => match &parts[..] {
                [_, _, Frame::Bulk(ch), Frame::Bulk(msg)] => Some((
                    String::from_utf8_lossy(ch).into_owned(),
                    String::from_utf8_lossy(msg).into_owned(),
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn ev(channel: &str, message: &str) -> (String, String) {
    (channel.to_owned(), message.to_owned())
}

/// With no command sent, moving the clock and letting the engine catch up (what a server's idle
/// ticks do) removes the fields past their deadline, announces `hexpired`, and deletes a hash
/// left without fields with `del`.
#[test]
fn the_active_cycle_drops_fields_of_an_idle_server_and_announces_them() {
    let (mut engine, clock, client) = fake(1_000_000);
    let sub = engine.connect();
    engine.execute(client, &argv("CONFIG SET notify-keyspace-events KEA"));
    engine.execute(sub, &argv("PSUBSCRIBE __keyevent@0__:*"));
    engine.drain_outbox(sub);
    engine.execute(client, &argv("HSET h a 1 b 2"));
    engine.execute(client, &argv("HSET g a 1"));
    engine.execute(client, &argv("HPEXPIRE h 250 FIELDS 1 a"));
    engine.execute(client, &argv("HPEXPIRE h 5000 FIELDS 1 b"));
    engine.execute(client, &argv("HPEXPIRE g 260 FIELDS 1 a"));
    assert_eq!(
        events(&mut engine, sub),
        [
            ev("__keyevent@0__:hset", "h"),
            ev("__keyevent@0__:hset", "g"),
            ev("__keyevent@0__:hexpire", "h"),
            ev("__keyevent@0__:hexpire", "h"),
            ev("__keyevent@0__:hexpire", "g"),
        ]
    );
    // Through the deadlines, nothing goes.
    clock.advance(260);
    engine.catch_up();
    assert!(events(&mut engine, sub).is_empty());
    // The first tick after it removes both fields, with no command in between.
    clock.advance(100);
    engine.catch_up();
    assert_eq!(
        events(&mut engine, sub),
        [
            ev("__keyevent@0__:hexpired", "h"),
            ev("__keyevent@0__:hexpired", "g"),
            ev("__keyevent@0__:del", "g"),
        ]
    );
    let inspect = |engine: &mut Engine, line: &str| engine.execute(client, &argv(line));
    assert_eq!(inspect(&mut engine, "HLEN h"), Frame::Integer(1));
    assert_eq!(inspect(&mut engine, "EXISTS g"), Frame::Integer(0));
    // The last field goes at its own deadline, and the hash with it.
    clock.advance(5_000);
    engine.catch_up();
    assert_eq!(
        events(&mut engine, sub),
        [
            ev("__keyevent@0__:hexpired", "h"),
            ev("__keyevent@0__:del", "h")
        ]
    );
    assert_eq!(inspect(&mut engine, "DBSIZE"), Frame::Integer(0));
}

/// A hash renamed, copied or moved keeps its fields' TTLs, and the active cycle follows it there;
/// `SWAPDB` too.
#[test]
fn the_active_cycle_follows_a_hash_that_moved() {
    let (mut engine, clock, client) = fake(1_000_000);
    let mut run = |line: &str| engine.execute(client, &argv(line));
    run("HSET h a 1 b 2");
    run("HPEXPIRE h 300 FIELDS 1 a");
    run("RENAME h r");
    run("COPY r c");
    run("COPY r m");
    run("MOVE m 2");
    run("COPY r s");
    run("MOVE s 3");
    run("SWAPDB 3 4");
    run("DEBUG SET-ACTIVE-EXPIRE 1");
    clock.advance(1_000);
    let mut run = |line: &str| engine.execute(client, &argv(line));
    // The first command after the move catches the ticks up; HLEN counts what is left.
    for (db, key) in [(0, "r"), (0, "c"), (2, "m"), (4, "s")] {
        run(&format!("SELECT {db}"));
        assert_eq!(run(&format!("HLEN {key}")), Frame::Integer(1), "{key}");
    }
}

/// A field's TTL survives the fake's own `DUMP` and `RESTORE`.
#[test]
fn restore_of_the_fake_s_dump_keeps_field_ttls() {
    let (mut engine, _clock, client) = fake(1_000_000);
    let mut run = |line: &str| engine.execute(client, &argv(line));
    run("HSET h a 1 b 2");
    run("HPEXPIRE h 5000 FIELDS 1 a");
    let Frame::Bulk(payload) = run("DUMP h") else {
        panic!("DUMP gave no payload");
    };
    let restore = [
        Bytes::from_static(b"RESTORE"),
        Bytes::from_static(b"r"),
        Bytes::from_static(b"0"),
        payload,
    ];
    assert_eq!(engine.execute(client, &restore), Frame::OK);
    let mut run = |line: &str| engine.execute(client, &argv(line));
    assert_eq!(
        run("HPTTL r FIELDS 2 a b"),
        Frame::Array(vec![Frame::Integer(5000), Frame::Integer(-1)])
    );
    assert_eq!(
        run("OBJECT ENCODING r"),
        Frame::Bulk(Bytes::from("listpackex"))
    );
}

/// Redis 7.0 has none of the commands: they are unknown there, as on redis-server 7.0.15.
#[test]
fn redis_7_0_knows_none_of_them() {
    let (mut engine, _clock, client) = fake_of(Version::V7_0, 1_000_000);
    for name in [
        "HEXPIRE",
        "HPEXPIRE",
        "HEXPIREAT",
        "HPEXPIREAT",
        "HTTL",
        "HPTTL",
        "HEXPIRETIME",
        "HPEXPIRETIME",
        "HPERSIST",
    ] {
        let reply = engine.execute(client, &argv(&format!("{name} h 100 FIELDS 1 a")));
        let Frame::Error(text) = reply else {
            panic!("{name} answered {reply:?} on Redis 7.0");
        };
        assert!(text.starts_with("ERR unknown command"), "{name}: {text}");
    }
}
