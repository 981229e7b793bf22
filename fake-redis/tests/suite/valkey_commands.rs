//! The commands Valkey 9.1 has beyond Redis 7.0 that the fake answers in its Valkey mode
//! (`fake-redis/src/cmd/hash_ex.rs` for `HGETEX`, `HSETEX`, `HGETDEL`; `strings.rs` for
//! `MSETEX`; `server.rs` for `COMMANDLOG`; `cluster.rs` for `CLUSTERSCAN`; `replication.rs` and
//! `dump.rs` for `FAILOVER`, `REPLCONF`, `PSYNC`, `SYNC` and `MIGRATE`), Valkey's `HELP` texts
//! (`valkey_help.rs`): their replies byte
//! for byte, errors included, in RESP2 and RESP3, and the keyspace events they announce; and
//! what Valkey's `INFO` and `MODULE` add to Redis's (its Lua module, `keys_with_volatile_items`).
//!
//! The table of cases runs on the fake and is held to replies recorded from valkey-server
//! 9.1.2. With `VALKEY_SERVER` naming a `valkey-server` binary, the test also starts that
//! server, runs the same cases on it, and requires its replies to be the recorded ones and the
//! fake's to be its own; `VALKEY_COMMANDS_RECORD` prints the server's replies in the table's
//! form. Each case starts on empty databases with active expiry off (`DEBUG
//! SET-ACTIVE-EXPIRE 0`), so a field past its deadline stays until a command looks at it;
//! `SLEEP n` moves the fake's clock by n ms and sleeps n ms beside the real server. A TTL a case
//! reads back is a whole number of seconds, or a deadline set absolutely, so that the real
//! server's clock, which moves while the case runs, gives the recorded reply.

use crate::support;

use bytes::BytesMut;
use fake_redis::resp::encode;
use fake_redis::{ClientId, DebugCommand, Engine, EngineConfig, Frame, ManualClock, Version};
use support::OwnServer;
use support::argv;
use support::raw::Real;

const CASES: &[&[&str]] = &[
    // HGETEX's arguments and their errors, in Valkey's order.
    &[
        "HSET h a 1 b 2 c 3",
        "HGETEX h FIELDS 1 a",
        "HGETEX h FIELDS 2 a",
        "HGETEX h FIELDS 0 a",
        "HGETEX h FIELDS -1 a",
        "HGETEX h FIELDS x a",
        "HGETEX h FIELDS 2 a b c",
        "HGETEX h FIELDS 1 a FIELDS",
        "HGETEX h FIELDS 2 a FIELDS",
        "HGETEX h FIELDS FIELDS 1 a",
        "HGETEX fields FIELDS 1 a",
        "HGETEX h EX 10 PX 10 FIELDS 1 a",
        "HGETEX h EX 10 PERSIST FIELDS 1 a",
        "HGETEX h PERSIST EX 10 FIELDS 1 a",
        "HGETEX h PERSIST persist FIELDS 1 a",
        "HGETEX h NX FIELDS 1 a",
        "HGETEX h FXX FIELDS 1 a",
        "HGETEX h KEEPTTL FIELDS 1 a",
        "HGETEX h FOO FIELDS 1 a",
        "HGETEX h FOO FIELDS x a",
        "HGETEX h FOO a b",
        "HGETEX h EX FIELDS 1 a",
        "HGETEX h EX 10 10 FIELDS 1 a",
        "HGETEX h EX",
        "HGETEX h EX abc FIELDS 1 a",
        "HGETEX h PX -5 FIELDS 1 a",
        "HGETEX h EXAT -5 FIELDS 1 a",
        "HGETEX h EX 9223372036854775 FIELDS 1 a",
        "HGETEX h PX 9223372036854775807 FIELDS 1 a",
        "HGETEX h EXAT 9223372036854775807 FIELDS 1 a",
        "HGETEX h EX 10 FIELDS 0 a",
        "HGETEX nokey FIELDS 2 a b",
        "HGETEX nokey EX abc FIELDS 1 a",
        "HGETEX nokey EX -1 FIELDS 1 a",
        "HGETEX nokey EX 0 FIELDS 1 a",
        "EXISTS nokey",
        "SET s x",
        "HGETEX s FIELDS 1 a",
        "HGETEX s EX abc FIELDS 1 a",
        "HGETEX s FIELDS 0",
        "HGETEX s EX 10 FIELDS 0 a",
        "HGETEX s FIELDS x a",
    ],
    // What HGETEX does to the TTLs of the fields it reads.
    &[
        "HSET h a 1 b 2 c 3",
        "HGETEX h EX 100 FIELDS 2 a zz",
        "HTTL h FIELDS 3 a b zz",
        "HGETEX h ex 10 EX 200 fields 1 b",
        "HTTL h FIELDS 1 b",
        "HGETEX h PERSIST FIELDS 3 a b c",
        "HTTL h FIELDS 3 a b c",
        "HGETEX h PXAT 4102444800123 FIELDS 1 a",
        "HPEXPIRETIME h FIELDS 1 a",
        "HGETEX h EXAT 4102444800 FIELDS 1 a",
        "HPEXPIRETIME h FIELDS 1 a",
        "HGETEX h PX 0 FIELDS 2 a a",
        "HGETALL h",
        "HGETEX h EXAT 1 FIELDS 3 b c zz",
        "EXISTS h",
        "HSET h2 a 1 b 2",
        "HPEXPIRE h2 20 FIELDS 1 a",
        "SLEEP 40",
        "HGETEX h2 FIELDS 2 a b",
        "HGETEX h2 EX 100 FIELDS 1 a",
        "HGETEX h2 PERSIST FIELDS 1 a",
        "HGETEX h2 PX 0 FIELDS 1 a",
        "HLEN h2",
        "HGETDEL h2 FIELDS 2 a b",
        "HLEN h2",
        "EXISTS h2",
    ],
    // HSETEX: arguments, conditions, TTLs.
    &[
        "HSETEX h FIELDS 1 a 1",
        "HSETEX h FIELDS 2 a 1",
        "HSETEX h FIELDS 1 a 1 b",
        "HSETEX h FIELDS 0 a 1",
        "HSETEX h FIELDS x a 1",
        "HSETEX h FIELDS 4611686018427387904 a 1",
        "HSETEX h a 1 b 2",
        "HSETEX h NX XX FIELDS 1 a 1",
        "HSETEX h FNX FXX FIELDS 1 a 1",
        "HSETEX h EX 10 PX 10 FIELDS 1 a 1",
        "HSETEX h EX 10 KEEPTTL FIELDS 1 a 1",
        "HSETEX h KEEPTTL EX 10 FIELDS 1 a 1",
        "HSETEX h PERSIST FIELDS 1 a 1",
        "HSETEX h NX nx FIELDS 1 a 1",
        "HSETEX h EX -1 FIELDS 1 a 1",
        "HSETEX h EX abc FIELDS 1 a 1",
        "HSETEX h EX 100 FIELDS 2 a 1 b 2",
        "HTTL h FIELDS 2 a b",
        "HSETEX h FIELDS 1 a 10",
        "HSETEX h KEEPTTL FIELDS 1 b 20",
        "HTTL h FIELDS 2 a b",
        "HGETALL h",
        "HSETEX h NX FIELDS 1 c 3",
        "HSETEX h XX FIELDS 1 c 3",
        "HSETEX h2 XX FIELDS 1 c 3",
        "EXISTS h2",
        "HSETEX h FNX FIELDS 2 a 5 d 6",
        "HSETEX h FNX FIELDS 2 d 5 e 6",
        "HSETEX h FXX FIELDS 2 a 5 z 6",
        "HSETEX h FXX FIELDS 2 a 5 d 7",
        "HGETALL h",
        "HSETEX h PX 0 FIELDS 2 a 1 zz 2",
        "HGETALL h",
        "HSETEX h EXAT 1 FIELDS 3 c 1 d 1 e 1",
        "HGETALL h",
        "HSETEX h PX 0 FIELDS 1 b 1",
        "EXISTS h",
        "HSETEX h3 PX 0 FIELDS 1 a 1",
        "EXISTS h3",
        "HSETEX h4 NX FXX FIELDS 1 a 1",
        "HSETEX h4 NX FNX PXAT 4102444800123 FIELDS 1 a 1",
        "HPEXPIRETIME h4 FIELDS 1 a",
        "HSET h5 a 1 b 2",
        "HPEXPIRE h5 20 FIELDS 1 a",
        "SLEEP 40",
        "HSETEX h5 FNX FIELDS 1 a 9",
        "HTTL h5 FIELDS 1 a",
        "HGETALL h5",
        "SET s v",
        "HSETEX s FIELDS 1 a 1",
        "HSETEX s EX abc FIELDS 1 a 1",
        "HSETEX s NX FIELDS 1 a 1",
        "HSETEX nokey EX abc FIELDS 1 a 1",
        "HSETEX nokey XX EX abc FIELDS 1 a 1",
        "HSETEX s FIELDS 1 a",
    ],
    // HGETDEL.
    &[
        "HSET h a 1 b 2",
        "HGETDEL h FIELDS 1",
        "HGETDEL h FIELDS x a",
        "HGETDEL h FIELDS 0 a",
        "HGETDEL h FIELDS 2 a",
        "HGETDEL h FOO 1 a",
        "HGETDEL nokey FIELDS 2 a b",
        "HGETDEL nokey FOO x a",
        "SET s v",
        "HGETDEL s FIELDS 1 a",
        "HGETDEL s FIELDS x a",
        "HGETDEL s FOO 1 a",
        "HGETDEL h FIELDS 2 a a",
        "HGETDEL h fields 3 b zz b",
        "EXISTS h",
    ],
    // MSETEX.
    &[
        "MSETEX",
        "MSETEX 1 k",
        "MSETEX 1 k v",
        "MSETEX 2 k v",
        "MSETEX 0 k v",
        "MSETEX -1 k v",
        "MSETEX x k v",
        "MSETEX 01 k v",
        "MSETEX +1 k v",
        "MSETEX 2147483648 k v",
        "MSETEX 2147483647 k v",
        "MSETEX x k v EX abc",
        "MSETEX 1 k v EX 100",
        "TTL k",
        "MSETEX 2 a 1 b 2 EX 100",
        "TTL b",
        "MSETEX 1 k v NX",
        "MSETEX 1 k v XX",
        "MSETEX 1 nk v XX",
        "EXISTS nk",
        "MSETEX 2 k v2 nk v NX",
        "MSETEX 2 k v2 nk v XX",
        "GET k",
        "MSETEX 1 k v KEEPTTL",
        "TTL k",
        "MSETEX 1 k v3",
        "TTL k",
        "MSETEX 1 k v EX 10 PX 10",
        "MSETEX 1 k v EX 10 KEEPTTL",
        "MSETEX 1 k v NX XX",
        "MSETEX 1 k v EX -1",
        "MSETEX 1 k v EX 0",
        "MSETEX 1 k v PX 0",
        "MSETEX 1 k v EXAT 0",
        "MSETEX 1 k v PXAT -1",
        "MSETEX 1 k v EX abc",
        "MSETEX 1 k v EX",
        "MSETEX 1 k v GET",
        "MSETEX 1 k v PERSIST",
        "MSETEX 1 k v FOO",
        "MSETEX 1 k v EX abc FOO",
        "MSETEX 1 k v EX 10 ex 200",
        "TTL k",
        "MSETEX 1 k v KEEPTTL keepttl",
        "MSETEX 1 k v XX xx",
        "MSETEX 1 k v EX 9223372036854775",
        "MSETEX 1 k v EX 9223372036854775 NX",
        "MSETEX 1 k v PXAT 4102444800123",
        "PEXPIRETIME k",
        "MSETEX 1 k v EXAT 1",
        "EXISTS k",
        "LPUSH l x",
        "MSETEX 1 l v",
        "TYPE l",
        "MSETEX 2 k v k v2",
        "GET k",
        "MSETEX 1 k v k2",
        "COMMAND GETKEYS MSETEX 2 a 1 b 2 EX 10",
        "COMMAND GETKEYSANDFLAGS MSETEX 3 a 1 b 2 c 3",
        "COMMAND GETKEYS MSETEX 3 a 1 b 2",
        "COMMAND GETKEYS HGETEX h EX 10 FIELDS 1 a",
        "COMMAND GETKEYSANDFLAGS HSETEX h FIELDS 1 a 1",
        "COMMAND GETKEYSANDFLAGS HGETDEL h FIELDS 1 a",
    ],
    // COMMANDLOG (its slow log is SLOWLOG's) and CLUSTERSCAN.
    &[
        "COMMANDLOG",
        "COMMANDLOG HELP",
        "COMMANDLOG FOO",
        "COMMANDLOG GET 10",
        "COMMANDLOG GET x slow",
        "COMMANDLOG GET -2 slow",
        "COMMANDLOG GET 99999999999999999999 slow",
        "COMMANDLOG GET x foo",
        "COMMANDLOG GET 10 foo",
        "COMMANDLOG LEN foo",
        "COMMANDLOG LEN",
        "COMMANDLOG LEN slow extra",
        "COMMANDLOG RESET foo",
        "COMMANDLOG HELP extra",
        "COMMANDLOG RESET slow",
        "COMMANDLOG RESET large-request",
        "COMMANDLOG RESET Large-Reply",
        "COMMANDLOG LEN large-request",
        "COMMANDLOG GET -1 large-reply",
        "CONFIG SET slowlog-log-slower-than 0",
        "COMMANDLOG RESET slow",
        "PING",
        "COMMANDLOG LEN SLOW",
        "SLOWLOG LEN",
        "COMMANDLOG RESET slow",
        "SLOWLOG LEN",
        "CONFIG SET slowlog-log-slower-than 10000",
        "SLOWLOG RESET",
        "COMMANDLOG GET 0 slow",
        "COMMANDLOG GET -1 slow",
        "CLUSTERSCAN",
        "CLUSTERSCAN 0",
        "CLUSTERSCAN x COUNT 10",
    ],
    // What Valkey's INFO and MODULE say beyond Redis's: its Lua module, its keys with fields
    // that have a TTL.
    &[
        "HSET h a 1",
        "HEXPIRE h 100 FIELDS 1 a",
        "HSET h2 a 1",
        "SET k v",
        "INFO keyspace",
        "INFO modules",
        "MODULE LIST",
        "MODULE HELP",
    ],
    // The replication and migration commands a lone server answers (REPLCONF ACK and GETACK
    // answer nothing: `replconf_ack_and_getack_answer_nothing`).
    &[
        "FAILOVER",
        "FAILOVER ABORT",
        "FAILOVER TO 127.0.0.1 1",
        "FAILOVER TIMEOUT -1",
        "FAILOVER bogus",
        "FAILOVER TO 127.0.0.1 x",
        "FAILOVER TIMEOUT x",
        "FAILOVER TO",
        "FAILOVER FORCE",
        "FAILOVER ABORT FORCE",
        "FAILOVER TO h 1 TO h 2",
        "FAILOVER TIMEOUT 1 TIMEOUT 2",
        "MIGRATE",
        "MIGRATE 127.0.0.1 1 k 0 100",
        "MIGRATE 127.0.0.1 x k 0 100",
        "MIGRATE 127.0.0.1 1 k 0 x",
        "MIGRATE 127.0.0.1 1 k x 100",
        "MIGRATE 127.0.0.1 1 k 0 100 bogus",
        "MIGRATE 127.0.0.1 1 k 0 100 AUTH",
        "MIGRATE 127.0.0.1 1 k 0 100 AUTH2 u",
        "MIGRATE 127.0.0.1 1 k 0 100 COPY REPLACE AUTH2 u p KEYS",
        "SET a 1",
        "MIGRATE 127.0.0.1 1 a 0 100 COPY",
        "MIGRATE 127.0.0.1 1 a x 100",
        "GET a",
        "REPLCONF",
        "REPLCONF listening-port 1",
        "REPLCONF listening-port x",
        "REPLCONF listening-port",
        "REPLCONF bogus 1",
        "REPLCONF capa eof capa psync2 capa what",
        "REPLCONF version x",
        "REPLCONF version 1.2.3",
        "REPLCONF version 1..2",
        "REPLCONF version 256.0.0",
        "REPLCONF rdb-only 1",
        "REPLCONF rdb-only 2",
        "REPLCONF rdb-channel 1",
        "REPLCONF rdb-channel x",
        "REPLCONF set-rdb-client-id 5",
        "REPLCONF set-rdb-client-id x",
        "REPLCONF set-cluster-node-id abc",
        "REPLCONF rdb-filter-only functions",
        "REPLCONF listening-port 1 bogus 2",
        "PSYNC",
        "PSYNC ? x",
        "PSYNC ? -1 FAILOVER",
        "SYNC x",
        "MULTI",
        "SYNC",
        "PSYNC ? -1",
        "FAILOVER",
        "EXEC",
    ],
    // Valkey's HELP texts, where they differ from Redis 7.0's.
    &[
        "ACL HELP",
        "CLIENT HELP",
        "COMMAND HELP",
        "CONFIG HELP",
        "FUNCTION HELP",
        "LATENCY HELP",
        "MEMORY HELP",
        "OBJECT HELP",
        "PUBSUB HELP",
        "SCRIPT HELP",
        "SLOWLOG HELP",
        "XGROUP HELP",
        "XINFO HELP",
        "COMMANDLOG HELP",
    ],
];

/// A fake of Valkey 9.1 with `DEBUG` allowed, at `now` (unix ms).
fn fake(now: i64) -> (Engine, ManualClock, ClientId) {
    let clock = ManualClock::new(now);
    let config = EngineConfig {
        version: Version::Valkey9_1,
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

/// The commands of each case before its own: empty databases, active expiry off, the protocol.
fn setup(protocol: u8) -> Vec<&'static str> {
    let mut steps = vec!["FLUSHALL", "SELECT 0", "DEBUG SET-ACTIVE-EXPIRE 0"];
    if protocol == 3 {
        steps.push("HELLO 3");
    }
    steps
}

/// The replies of the cases' commands (not the set-up's) on the fake, in `protocol`, as RESP
/// bytes, and those of `real` when given, which takes every step beside it.
fn run(protocol: u8, mut real: Option<&mut Real>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let now = match real {
        Some(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1_765_000_000_000, |d| d.as_millis() as i64),
        None => 1_765_000_000_000,
    };
    let (mut engine, clock, client) = fake(now);
    let (mut fakes, mut reals) = (Vec::new(), Vec::new());
    let step = |engine: &mut Engine, real: &mut Option<&mut Real>, line: &str| {
        let fake = resp(&engine.execute(client, &argv(line)), protocol);
        let words: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        (fake, real.as_mut().map(|r| r.call(&words)))
    };
    for case in CASES {
        for line in setup(protocol) {
            step(&mut engine, &mut real, line);
        }
        for line in case.iter() {
            if let Some(ms) = line.strip_prefix("SLEEP ") {
                let ms: u64 = ms.parse().expect("a sleep in ms");
                clock.advance(ms as i64);
                if real.is_some() {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
                continue;
            }
            let (fake, real_reply) = step(&mut engine, &mut real, line);
            fakes.push(fake);
            reals.extend(real_reply);
        }
        if protocol == 3 {
            step(&mut engine, &mut real, "HELLO 2");
        }
    }
    (fakes, reals)
}

/// Every command of the cases but the sleeps, in order.
fn commands() -> Vec<&'static str> {
    CASES
        .iter()
        .flat_map(|c| c.iter().copied())
        .filter(|l| !l.starts_with("SLEEP "))
        .collect()
}

fn check(protocol: u8, recorded: &[&[u8]]) {
    let server = OwnServer::from_env("VALKEY_SERVER");
    let mut real = server.as_ref().map(|s| Real::connect(s.port));
    let (fakes, reals) = run(protocol, real.as_mut());
    let lines = commands();
    let mut mismatches = Vec::new();
    if server.is_some() {
        if std::env::var_os("VALKEY_COMMANDS_RECORD").is_some() {
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

#[test]
fn valkey_9_1_s_own_commands_answer_as_it_does_resp2() {
    check(2, RECORDED_RESP2);
}

#[test]
fn valkey_9_1_s_own_commands_answer_as_it_does_resp3() {
    check(3, RECORDED_RESP3);
}

/// Drains the keyspace events `sub` received, as `event(key)`.
fn events(engine: &mut Engine, sub: ClientId) -> String {
    let names: Vec<String> = engine
        .drain_outbox(sub)
        .into_iter()
        .filter_map(|f| match f {
            Frame::Array(parts) | Frame::Push(parts) => match &parts[..] {
                [_, _, Frame::Bulk(ch), Frame::Bulk(key)] => {
                    let ch = String::from_utf8_lossy(ch);
                    let event = ch.rsplit(':').next().unwrap_or_default().to_owned();
                    Some(format!("{event}({})", String::from_utf8_lossy(key)))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    names.join(" ")
}

/// The events each command announces, as valkey-server 9.1.2 announced them for the same
/// commands (`notify-keyspace-events KEA`, a `PSUBSCRIBE __keyevent@*` beside them).
#[test]
fn their_keyspace_events_are_valkey_s() {
    let (mut engine, clock, client) = fake(1_765_000_000_000);
    let sub = engine.connect();
    engine.execute(client, &argv("CONFIG SET notify-keyspace-events KEA"));
    engine.execute(client, &argv("DEBUG SET-ACTIVE-EXPIRE 0"));
    engine.execute(sub, &argv("PSUBSCRIBE __keyevent@*"));
    events(&mut engine, sub);
    let steps: &[(&str, &str)] = &[
        ("HSET h a 1 b 2 c 3", "hset(h)"),
        ("HGETEX h EX 100 FIELDS 2 a zz", "hexpire(h)"),
        ("HGETEX h EX 100 FIELDS 1 zz", ""),
        ("HGETEX h PERSIST FIELDS 2 a b", "hpersist(h)"),
        ("HGETEX h PERSIST FIELDS 1 b", ""),
        ("HGETEX h PX 0 FIELDS 1 a", "hexpired(h)"),
        ("HGETEX h PX 0 FIELDS 2 b c", "hexpired(h) del(h)"),
        ("HSET h a 1 b 2", "hset(h)"),
        ("HSETEX h FIELDS 1 a 2", "hset(h)"),
        ("HSETEX h EX 100 FIELDS 1 a 2", "hset(h) hexpire(h)"),
        ("HSETEX h KEEPTTL FIELDS 1 a 3", "hset(h)"),
        (
            "HSETEX h PX 0 FIELDS 1 zz 1",
            "hset(h) hexpire(h) hexpired(h)",
        ),
        (
            "HSETEX h PX 0 FIELDS 2 a zz 1 2",
            "hset(h) hexpire(h) hexpired(h)",
        ),
        (
            "HSETEX nokey PX 0 FIELDS 1 zz 1",
            "hset(nokey) hexpire(nokey) hexpired(nokey) del(nokey)",
        ),
        (
            "HSETEX h PX 0 FIELDS 1 b 1",
            "hset(h) hexpire(h) hexpired(h) del(h)",
        ),
        ("HSETEX h NX FIELDS 1 b 1", "hset(h)"),
        ("HSETEX h NX FIELDS 1 b 1", ""),
        ("HSET h a 1 b 2", "hset(h)"),
        ("HEXPIRE h 0 FIELDS 1 a", "hexpired(h)"),
        ("HGETDEL h FIELDS 2 b zz", "hdel(h) del(h)"),
        ("HSET h a 1 b 2", "hset(h)"),
        ("HGETDEL h FIELDS 1 zz", ""),
        ("HGETDEL h FIELDS 1 a", "hdel(h)"),
        ("HPEXPIRE h 20 FIELDS 1 b", "hexpire(h)"),
        ("SLEEP 40", ""),
        ("HGETEX h EX 100 FIELDS 1 b", ""),
        ("HGETDEL h FIELDS 1 b", ""),
        ("HSETEX h FNX FIELDS 1 b 9", "hexpired(h) hset(h)"),
        ("MSETEX 1 k v EX 100", "set(k) expire(k)"),
        ("MSETEX 1 k v2 KEEPTTL", "set(k)"),
        ("MSETEX 2 k v nk w", "set(k) set(nk)"),
        (
            "MSETEX 2 a 1 b 2 PXAT 1",
            "set(a) expire(a) set(b) expire(b)",
        ),
        ("MSETEX 2 a 1 b 2 NX", "expired(a) expired(b) set(a) set(b)"),
        ("MSETEX 2 a 1 b 2 NX", ""),
    ];
    let mut wrong = Vec::new();
    for (line, want) in steps {
        if let Some(ms) = line.strip_prefix("SLEEP ") {
            clock.advance(ms.parse().expect("a sleep in ms"));
            continue;
        }
        engine.execute(client, &argv(line));
        let got = events(&mut engine, sub);
        if got != *want {
            wrong.push(format!("{line}: want [{want}], got [{got}]"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Redis 7.4 knows none of them: they are Valkey's.
#[test]
fn redis_7_4_knows_none_of_them() {
    let clock = ManualClock::new(1_765_000_000_000);
    let config = EngineConfig {
        version: Version::V7_4,
        ..EngineConfig::default()
    };
    let mut engine = Engine::with_config(clock, config);
    let client = engine.connect();
    for line in [
        "HGETEX h FIELDS 1 a",
        "HSETEX h FIELDS 1 a 1",
        "HGETDEL h FIELDS 1 a",
        "MSETEX 1 k v",
        "COMMANDLOG LEN slow",
        "CLUSTERSCAN 0",
    ] {
        let reply = engine.execute(client, &argv(line));
        let text = match &reply {
            Frame::Error(e) => e.to_string(),
            other => format!("{other:?}"),
        };
        assert!(text.starts_with("ERR unknown command"), "{line}: {text}");
    }
}

const RECORDED_RESP2: &[&[u8]] = &[
    b":3\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*2\r\n$1\r\n1\r\n$-1\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR wrong number of arguments for \'hgetex\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*2\r\n$-1\r\n$-1\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"*1\r\n$-1\r\n",
    b":0\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-ERR wrong number of arguments for \'hgetex\' command\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b":3\r\n",
    b"*2\r\n$1\r\n1\r\n$-1\r\n",
    b"*3\r\n:100\r\n:-1\r\n:-2\r\n",
    b"*1\r\n$1\r\n2\r\n",
    b"*1\r\n:200\r\n",
    b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-1\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"*1\r\n:4102444800123\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"*1\r\n:4102444800000\r\n",
    b"*2\r\n$1\r\n1\r\n$-1\r\n",
    b"*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    b"*3\r\n$1\r\n2\r\n$1\r\n3\r\n$-1\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n$-1\r\n$1\r\n2\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n$-1\r\n",
    b":2\r\n",
    b"*2\r\n$-1\r\n$1\r\n2\r\n",
    b":1\r\n",
    b":1\r\n",
    b":1\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b":0\r\n",
    b"-ERR invalid expire time in \'hsetex\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b":1\r\n",
    b"*2\r\n:100\r\n:100\r\n",
    b":1\r\n",
    b":1\r\n",
    b"*2\r\n:-1\r\n:100\r\n",
    b"*4\r\n$1\r\na\r\n$2\r\n10\r\n$1\r\nb\r\n$2\r\n20\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":0\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":1\r\n",
    b"*10\r\n$1\r\na\r\n$1\r\n5\r\n$1\r\nb\r\n$2\r\n20\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n7\r\n$1\r\ne\r\n$1\r\n6\r\n",
    b":1\r\n",
    b"*8\r\n$1\r\nb\r\n$2\r\n20\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n7\r\n$1\r\ne\r\n$1\r\n6\r\n",
    b":1\r\n",
    b"*2\r\n$1\r\nb\r\n$2\r\n20\r\n",
    b":1\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":0\r\n",
    b":1\r\n",
    b"*1\r\n:4102444800123\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"*1\r\n:-1\r\n",
    b"*4\r\n$1\r\na\r\n$1\r\n9\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b":0\r\n",
    b"-ERR wrong number of arguments for \'hsetex\' command\r\n",
    b":2\r\n",
    b"-ERR wrong number of arguments for \'hgetdel\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"*2\r\n$-1\r\n$-1\r\n",
    b"-ERR syntax error\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"*2\r\n$1\r\n1\r\n$-1\r\n",
    b"*3\r\n$1\r\n2\r\n$-1\r\n$-1\r\n",
    b":0\r\n",
    b"-ERR wrong number of arguments for \'msetex\' command\r\n",
    b"-ERR wrong number of arguments for \'msetex\' command\r\n",
    b":1\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b":1\r\n",
    b":100\r\n",
    b":1\r\n",
    b":100\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":0\r\n",
    b":0\r\n",
    b":0\r\n",
    b"$1\r\nv\r\n",
    b":1\r\n",
    b":-1\r\n",
    b":1\r\n",
    b":-1\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b":1\r\n",
    b":200\r\n",
    b":1\r\n",
    b":1\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b":1\r\n",
    b":4102444800123\r\n",
    b":1\r\n",
    b":0\r\n",
    b":1\r\n",
    b":1\r\n",
    b"+string\r\n",
    b":1\r\n",
    b"$2\r\nv2\r\n",
    b"-ERR syntax error\r\n",
    b"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
    b"*3\r\n*2\r\n$1\r\na\r\n*2\r\n+OW\r\n+update\r\n*2\r\n$1\r\nb\r\n*2\r\n+OW\r\n+update\r\n*2\r\n$1\r\nc\r\n*2\r\n+OW\r\n+update\r\n",
    b"-ERR Invalid arguments specified for command\r\n",
    b"*1\r\n$1\r\nh\r\n",
    b"*1\r\n*2\r\n$1\r\nh\r\n*2\r\n+RW\r\n+insert\r\n",
    b"*1\r\n*2\r\n$1\r\nh\r\n*3\r\n+RW\r\n+access\r\n+delete\r\n",
    b"-ERR wrong number of arguments for \'commandlog\' command\r\n",
    b"*16\r\n+COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <count> <type>\r\n+    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).\r\n+    Entries are made of:\r\n+    id, timestamp,\r\n+        time in microseconds for type of slow,\r\n+        or size in bytes for type of large-request,\r\n+        or size in bytes for type of large-reply\r\n+    arguments array, client IP and port,\r\n+    client name\r\n+LEN <type>\r\n+    Return the length of the specified type of commandlog.\r\n+RESET <type>\r\n+    Reset the specified type of commandlog.\r\n+HELP\r\n+    Print this help.\r\n",
    b"-ERR unknown subcommand \'FOO\'. Try COMMANDLOG HELP.\r\n",
    b"-ERR wrong number of arguments for \'commandlog|get\' command\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR type should be one of the following: slow, large-request, large-reply\r\n",
    b"-ERR type should be one of the following: slow, large-request, large-reply\r\n",
    b"-ERR wrong number of arguments for \'commandlog|len\' command\r\n",
    b"-ERR wrong number of arguments for \'commandlog|len\' command\r\n",
    b"-ERR type should be one of the following: slow, large-request, large-reply\r\n",
    b"-ERR wrong number of arguments for \'commandlog|help\' command\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b":0\r\n",
    b"*0\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"+PONG\r\n",
    b":2\r\n",
    b":3\r\n",
    b"+OK\r\n",
    b":1\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"*0\r\n",
    b"*0\r\n",
    b"-ERR wrong number of arguments for \'clusterscan\' command\r\n",
    b"-ERR This instance has cluster support disabled\r\n",
    b"-ERR This instance has cluster support disabled\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"+OK\r\n",
    b"$71\r\n# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0,keys_with_volatile_items=1\r\n\r\n",
    b"$131\r\n# Modules\r\nmodule:name=lua,ver=1,api=1,filters=0,usedby=[],using=[],options=[handle-repl-async-load|handle-atomic-slot-migration]\r\n\r\n",
    b"*1\r\n*8\r\n$4\r\nname\r\n$3\r\nlua\r\n$3\r\nver\r\n:1\r\n$4\r\npath\r\n$3\r\nlua\r\n$4\r\nargs\r\n*0\r\n",
    b"*11\r\n+MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+LIST\r\n+    Return a list of loaded modules.\r\n+LOAD <path> [<arg> ...]\r\n+    Load a module library from <path>, passing to it any optional arguments.\r\n+LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]\r\n+    Load a module library from <path>, while passing it module configurations and optional arguments.\r\n+UNLOAD <name>\r\n+    Unload a module.\r\n+HELP\r\n+    Print this help.\r\n",
    b"-ERR FAILOVER requires connected replicas.\r\n",
    b"-ERR No failover in progress.\r\n",
    b"-ERR FAILOVER requires connected replicas.\r\n",
    b"-ERR FAILOVER timeout must be greater than 0\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR FAILOVER requires connected replicas.\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR wrong number of arguments for \'migrate\' command\r\n",
    b"+NOKEY\r\n",
    b"+NOKEY\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n",
    b"+OK\r\n",
    b"-IOERR error or timeout writing to target instance\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"$1\r\n1\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR Unrecognized REPLCONF option: bogus\r\n",
    b"+OK\r\n",
    b"-ERR Unrecognized version format: x\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"-ERR Unrecognized version format: 256.0.0\r\n",
    b"+OK\r\n",
    b"-ERR value is out of range, value must between 0 and 1\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR Unrecognized RDB client id 5\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR This instance has cluster support disabled\r\n",
    b"+OK\r\n",
    b"-ERR Unrecognized REPLCONF option: bogus\r\n",
    b"-ERR wrong number of arguments for \'psync\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR PSYNC FAILOVER can\'t be sent to a master.\r\n",
    b"-ERR wrong number of arguments for \'sync\' command\r\n",
    b"+OK\r\n",
    b"-ERR Command \'sync\' not allowed inside a transaction\r\n",
    b"-ERR Command \'psync\' not allowed inside a transaction\r\n",
    b"+QUEUED\r\n",
    b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    b"*29\r\n+ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CAT [<category>]\r\n+    List all commands that belong to <category>, or all command categories\r\n+    when no category is specified.\r\n+DELUSER <username> [<username> ...]\r\n+    Delete a list of users.\r\n+DRYRUN <username> <command> [<arg> ...]\r\n+    Returns whether the user can execute the given command without executing the command.\r\n+GETUSER <username>\r\n+    Get the user\'s details.\r\n+GENPASS [<bits>]\r\n+    Generate a secure 256-bit user password. The optional `bits` argument can\r\n+    be used to specify a different size.\r\n+LIST\r\n+    Show users details in config file format.\r\n+LOAD\r\n+    Reload users from the ACL file.\r\n+LOG [<count> | RESET]\r\n+    Show the ACL log entries.\r\n+SAVE\r\n+    Save the current config to the ACL file.\r\n+SETUSER <username> <rule> [<rule> ...]\r\n+    Create or modify a user with the specified rules.\r\n+USERS\r\n+    List all the registered usernames.\r\n+WHOAMI\r\n+    Return the current connection username.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*110\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CACHING (YES|NO)\r\n+    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.\r\n+CAPA <option> [options...]\r\n+    The client claims its some capability options. Options are:\r\n+    * REDIRECT\r\n+      The client can handle redirection during primary and replica failover in standalone mode.\r\n+GETREDIR\r\n+    Return the client ID we are redirecting to when tracking is enabled.\r\n+GETNAME\r\n+    Return the name of the current connection.\r\n+ID\r\n+    Return the ID of the current connection.\r\n+INFO\r\n+    Return information about the current client connection.\r\n+KILL <ip:port>\r\n+    Kill connection made from <ip:port>.\r\n+KILL <option> <value> [<option> <value> [...]]\r\n+    Kill connections. Options are:\r\n+    * ADDR (<ip:port>|<unixsocket>:0)\r\n+      Kill connections made from the specified address.\r\n+    * LADDR (<ip:port>|<unixsocket>:0)\r\n+      Kill connections made to the specified local address.\r\n+    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)\r\n+      Kill connections by type.\r\n+    * USER <username>\r\n+      Kill connections authenticated by <username>.\r\n+    * SKIPME (YES|NO)\r\n+      Skip killing current connection (default: yes).\r\n+    * ID <client-id> [<client-id>...]\r\n+      Kill connections by client IDs.\r\n+    * MAXAGE <maxage>\r\n+      Kill connections older than the specified age.\r\n+    * FLAGS <flags>\r\n+      Kill connections that include the specified flags.\r\n+    * NAME <client-name>\r\n+      Kill connections with the specified name.\r\n+    * IDLE <idle>\r\n+      Kill connections with idle time greater than or equal to <idle> seconds.\r\n+    * LIB-NAME <library-name>\r\n+      Kill connections with the specified library name.\r\n+    * LIB-VER <library-version>\r\n+      Kill connections with the specified library version.\r\n+    * DB <db-id>\r\n+      Kill connections currently operating on the specified database ID.\r\n+    * CAPA <capa>\r\n+      Kill connections currently with the specified capa.\r\n+    * IP <ip>\r\n+      Kill connections made from the specified ip.\r\n+LIST [options ...]\r\n+    Return information about client connections. Options:\r\n+    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)\r\n+      Return clients of specified type.\r\n+    * USER <username>\r\n+      Return clients authenticated by <username>.\r\n+    * ADDR <ip:port>\r\n+      Return clients connected from the specified address.\r\n+    * LADDR <ip:port>\r\n+      Return clients connected to the specified local address.\r\n+    * ID <client-id> [<client-id>...]\r\n+      Return clients with the specified IDs.\r\n+    * SKIPME (YES|NO)\r\n+      Exclude the current client from the list (default: no).\r\n+    * MAXAGE <maxage>\r\n+      List connections older than the specified age.\r\n+    * FLAGS <flags>\r\n+      Return clients with the specified flags.\r\n+    * NAME <client-name>\r\n+      Return clients with the specified name.\r\n+    * IDLE <idle>\r\n+      Return clients with idle time greater than or equal to <idle> seconds.\r\n+    * LIB-NAME <lib-name>\r\n+      Return clients with the specified lib name.\r\n+    * LIB-VER <lib-version>\r\n+      Return clients with the specified lib version.\r\n+    * DB <db-id>\r\n+      Return clients currently operating on the specified database ID.\r\n+    * CAPA <capa>\r\n+      Return connections currently with the specified capa.\r\n+    * IP <ip>\r\n+      Return connections made from the specified ip.\r\n+UNPAUSE\r\n+    Stop the current client pause, resuming traffic.\r\n+PAUSE <timeout> [WRITE|ALL]\r\n+    Suspend all, or just write, clients for <timeout> milliseconds.\r\n+REPLY (ON|OFF|SKIP)\r\n+    Control the replies sent to the current connection.\r\n+SETNAME <name>\r\n+    Assign the name <name> to the current connection.\r\n+SETINFO <option> <value>\r\n+    Set client meta attr. Options are:\r\n+    * LIB-NAME: the client lib name.\r\n+    * LIB-VER: the client lib version.\r\n+UNBLOCK <clientid> [TIMEOUT|ERROR]\r\n+    Unblock the specified blocked client.\r\n+TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]\r\n+         [OPTIN] [OPTOUT] [NOLOOP]\r\n+    Control server assisted client side caching.\r\n+TRACKINGINFO\r\n+    Report tracking status for the current connection.\r\n+NO-EVICT (ON|OFF)\r\n+    Protect current client connection from eviction.\r\n+NO-TOUCH (ON|OFF)\r\n+    Will not touch LRU/LFU stats when this mode is on.\r\n+IMPORT-SOURCE (ON|OFF)\r\n+    Mark this connection as an import source if import-mode is enabled.\r\n+    Sync tools can set their connections into \'import-source\' state to visit\r\n+    expired keys.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*21\r\n+COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+(no subcommand)\r\n+    Return details about all commands.\r\n+COUNT\r\n+    Return the total number of commands in this server.\r\n+LIST\r\n+    Return a list of all commands in this server.\r\n+INFO [<command-name> ...]\r\n+    Return details about multiple commands.\r\n+    If no command names are given, documentation details for all\r\n+    commands are returned.\r\n+DOCS [<command-name> ...]\r\n+    Return documentation details about multiple commands.\r\n+    If no command names are given, documentation details for all\r\n+    commands are returned.\r\n+GETKEYS <full-command>\r\n+    Return the keys from a full command.\r\n+GETKEYSANDFLAGS <full-command>\r\n+    Return the keys and the access flags from a full command.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*11\r\n+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <pattern>\r\n+    Return parameters matching the glob-like <pattern> and their values.\r\n+SET <directive> <value>\r\n+    Set the configuration <directive> to <value>.\r\n+RESETSTAT\r\n+    Reset statistics reported by the INFO command.\r\n+REWRITE\r\n+    Rewrite the configuration file.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*39\r\n+FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+LOAD [REPLACE] <FUNCTION CODE>\r\n+    Create a new library with the given library name and code.\r\n+DELETE <LIBRARY NAME>\r\n+    Delete the given library.\r\n+LIST [LIBRARYNAME PATTERN] [WITHCODE]\r\n+    Return general information on all the libraries:\r\n+    * Library name\r\n+    * The engine used to run the Library\r\n+    * Functions list\r\n+    * Library code (if WITHCODE is given)\r\n+    It also possible to get only function that matches a pattern using LIBRARYNAME argument.\r\n+STATS\r\n+    Return information about the current function running:\r\n+    * Function name\r\n+    * Command used to run the function\r\n+    * Duration in MS that the function is running\r\n+    If no function is running, return nil\r\n+    In addition, returns a list of available engines.\r\n+KILL\r\n+    Kill the current running function.\r\n+FLUSH [ASYNC|SYNC]\r\n+    Delete all the libraries.\r\n+    When called without the optional mode argument, the behavior is determined by the\r\n+    lazyfree-lazy-user-flush configuration directive. Valid modes are:\r\n+    * ASYNC: Asynchronously flush the libraries.\r\n+    * SYNC: Synchronously flush the libraries.\r\n+DUMP\r\n+    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command\r\n+RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]\r\n+    Restore the libraries represented by the given payload, it is possible to give a restore policy to\r\n+    control how to handle existing libraries (default APPEND):\r\n+    * FLUSH: delete all existing libraries.\r\n+    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.\r\n+    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old\r\n+      libraries with the new libraries (notice that even on this option there is a chance of failure\r\n+      in case of functions name collision with another library).\r\n+HELP\r\n+    Print this help.\r\n",
    b"*17\r\n+LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+DOCTOR\r\n+    Return a human readable latency analysis report.\r\n+GRAPH <event>\r\n+    Return an ASCII latency graph for the <event> class.\r\n+HISTORY <event>\r\n+    Return time-latency samples for the <event> class.\r\n+LATEST\r\n+    Return the latest latency samples for all events.\r\n+RESET [<event> ...]\r\n+    Reset latency data of one or more <event> classes.\r\n+    (default: reset all data for all event classes)\r\n+HISTOGRAM [COMMAND ...]\r\n+    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.\r\n+    If no commands are specified then all histograms are replied.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*14\r\n+MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+DOCTOR\r\n+    Return memory problems reports.\r\n+MALLOC-STATS\r\n+    Return internal statistics report from the memory allocator.\r\n+PURGE\r\n+    Attempt to purge dirty pages for reclamation by the allocator.\r\n+STATS\r\n+    Return information about the memory usage of the server.\r\n+USAGE <key> [SAMPLES <count>]\r\n+    Return memory in bytes used by <key> and its value. Nested values are\r\n+    sampled up to <count> times (default: 5, 0 means sample all).\r\n+HELP\r\n+    Print this help.\r\n",
    b"*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+ENCODING <key>\r\n+    Return the kind of internal representation used in order to store the value\r\n+    associated with a <key>.\r\n+FREQ <key>\r\n+    Return the access frequency index of the <key>. The returned integer is\r\n+    proportional to the logarithm of the recent access frequency of the key.\r\n+IDLETIME <key>\r\n+    Return the idle time of the <key>, that is the approximated number of\r\n+    seconds elapsed since the last access to the key.\r\n+REFCOUNT <key>\r\n+    Return the number of references of the value associated with the specified\r\n+    <key>.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*14\r\n+PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CHANNELS [<pattern>]\r\n+    Return the currently active channels matching a <pattern> (default: \'*\').\r\n+NUMPAT\r\n+    Return number of subscriptions to patterns.\r\n+NUMSUB [<channel> ...]\r\n+    Return the number of subscribers for the specified channels, excluding\r\n+    pattern subscriptions(default: no channels).\r\n+SHARDCHANNELS [<pattern>]\r\n+    Return the currently active shard level channels matching a <pattern> (default: \'*\').\r\n+SHARDNUMSUB [<shardchannel> ...]\r\n+    Return the number of subscribers for the specified shard level channel(s)\r\n+HELP\r\n+    Print this help.\r\n",
    b"*20\r\n+SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+DEBUG (YES|SYNC|NO) [<engine_name>]\r\n+    Set the debug mode for subsequent scripts executed of the specified engine.\r\n+    Default engine name: \'lua\'\r\n+EXISTS <sha1> [<sha1> ...]\r\n+    Return information about the existence of the scripts in the script cache.\r\n+FLUSH [ASYNC|SYNC]\r\n+    Flush the Lua scripts cache. Very dangerous on replicas.\r\n+    When called without the optional mode argument, the behavior is determined\r\n+     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:\r\n+    * ASYNC: Asynchronously flush the scripts cache.\r\n+    * SYNC: Synchronously flush the scripts cache.\r\n+KILL\r\n+    Kill the currently executing Lua script.\r\n+LOAD <script>\r\n+    Load a script into the scripts cache without executing it.\r\n+SHOW <sha1>\r\n+    Show a script from the scripts cache.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*12\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET [<count>]\r\n+    Return top <count> entries from the slowlog (default: 10, -1 mean all).\r\n+    Entries are made of:\r\n+    id, timestamp, time in microseconds, arguments array, client IP and port,\r\n+    client name\r\n+LEN\r\n+    Return the length of the slowlog.\r\n+RESET\r\n+    Reset the slowlog.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*17\r\n+XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CREATE <key> <groupname> <id|$> [option]\r\n+    Create a new consumer group. Options are:\r\n+    * MKSTREAM\r\n+      Create the empty stream if it does not exist.\r\n+    * ENTRIESREAD entries_read\r\n+      Set the group\'s entries_read counter (internal use).\r\n+CREATECONSUMER <key> <groupname> <consumer>\r\n+    Create a new consumer in the specified group.\r\n+DELCONSUMER <key> <groupname> <consumer>\r\n+    Remove the specified consumer.\r\n+DESTROY <key> <groupname>\r\n+    Remove the specified group.\r\n+SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]\r\n+    Set the current group ID and entries_read counter.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*9\r\n+XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CONSUMERS <key> <groupname>\r\n+    Show consumers of <groupname>.\r\n+GROUPS <key>\r\n+    Show the stream consumer groups.\r\n+STREAM <key> [FULL [COUNT <count>]\r\n+    Show information about the stream.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*16\r\n+COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <count> <type>\r\n+    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).\r\n+    Entries are made of:\r\n+    id, timestamp,\r\n+        time in microseconds for type of slow,\r\n+        or size in bytes for type of large-request,\r\n+        or size in bytes for type of large-reply\r\n+    arguments array, client IP and port,\r\n+    client name\r\n+LEN <type>\r\n+    Return the length of the specified type of commandlog.\r\n+RESET <type>\r\n+    Reset the specified type of commandlog.\r\n+HELP\r\n+    Print this help.\r\n",
];
const RECORDED_RESP3: &[&[u8]] = &[
    b":3\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*2\r\n$1\r\n1\r\n_\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR wrong number of arguments for \'hgetex\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"*2\r\n_\r\n_\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR invalid expire time in \'hgetex\' command\r\n",
    b"*1\r\n_\r\n",
    b":0\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-ERR wrong number of arguments for \'hgetex\' command\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b":3\r\n",
    b"*2\r\n$1\r\n1\r\n_\r\n",
    b"*3\r\n:100\r\n:-1\r\n:-2\r\n",
    b"*1\r\n$1\r\n2\r\n",
    b"*1\r\n:200\r\n",
    b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n",
    b"*3\r\n:-1\r\n:-1\r\n:-1\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"*1\r\n:4102444800123\r\n",
    b"*1\r\n$1\r\n1\r\n",
    b"*1\r\n:4102444800000\r\n",
    b"*2\r\n$1\r\n1\r\n_\r\n",
    b"%2\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
    b"*3\r\n$1\r\n2\r\n$1\r\n3\r\n_\r\n",
    b":0\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b"*2\r\n_\r\n$1\r\n2\r\n",
    b"*1\r\n_\r\n",
    b"*1\r\n_\r\n",
    b"*1\r\n_\r\n",
    b":2\r\n",
    b"*2\r\n_\r\n$1\r\n2\r\n",
    b":1\r\n",
    b":1\r\n",
    b":1\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b":0\r\n",
    b"-ERR invalid expire time in \'hsetex\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b":1\r\n",
    b"*2\r\n:100\r\n:100\r\n",
    b":1\r\n",
    b":1\r\n",
    b"*2\r\n:-1\r\n:100\r\n",
    b"%2\r\n$1\r\na\r\n$2\r\n10\r\n$1\r\nb\r\n$2\r\n20\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":0\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":1\r\n",
    b"%5\r\n$1\r\na\r\n$1\r\n5\r\n$1\r\nb\r\n$2\r\n20\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n7\r\n$1\r\ne\r\n$1\r\n6\r\n",
    b":1\r\n",
    b"%4\r\n$1\r\nb\r\n$2\r\n20\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n7\r\n$1\r\ne\r\n$1\r\n6\r\n",
    b":1\r\n",
    b"%1\r\n$1\r\nb\r\n$2\r\n20\r\n",
    b":1\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":0\r\n",
    b":1\r\n",
    b"*1\r\n:4102444800123\r\n",
    b":2\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"*1\r\n:-1\r\n",
    b"%2\r\n$1\r\na\r\n$1\r\n9\r\n$1\r\nb\r\n$1\r\n2\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b":0\r\n",
    b"-ERR wrong number of arguments for \'hsetex\' command\r\n",
    b":2\r\n",
    b"-ERR wrong number of arguments for \'hgetdel\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR numfields should be greater than 0 and match the provided number of fields\r\n",
    b"-ERR syntax error\r\n",
    b"*2\r\n_\r\n_\r\n",
    b"-ERR syntax error\r\n",
    b"+OK\r\n",
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"*2\r\n$1\r\n1\r\n_\r\n",
    b"*3\r\n$1\r\n2\r\n_\r\n_\r\n",
    b":0\r\n",
    b"-ERR wrong number of arguments for \'msetex\' command\r\n",
    b"-ERR wrong number of arguments for \'msetex\' command\r\n",
    b":1\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR invalid numkeys value or out of range\r\n",
    b":1\r\n",
    b":100\r\n",
    b":1\r\n",
    b":100\r\n",
    b":0\r\n",
    b":1\r\n",
    b":0\r\n",
    b":0\r\n",
    b":0\r\n",
    b":0\r\n",
    b"$1\r\nv\r\n",
    b":1\r\n",
    b":-1\r\n",
    b":1\r\n",
    b":-1\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b":1\r\n",
    b":200\r\n",
    b":1\r\n",
    b":1\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b"-ERR invalid expire time in \'msetex\' command\r\n",
    b":1\r\n",
    b":4102444800123\r\n",
    b":1\r\n",
    b":0\r\n",
    b":1\r\n",
    b":1\r\n",
    b"+string\r\n",
    b":1\r\n",
    b"$2\r\nv2\r\n",
    b"-ERR syntax error\r\n",
    b"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
    b"*3\r\n*2\r\n$1\r\na\r\n~2\r\n+OW\r\n+update\r\n*2\r\n$1\r\nb\r\n~2\r\n+OW\r\n+update\r\n*2\r\n$1\r\nc\r\n~2\r\n+OW\r\n+update\r\n",
    b"-ERR Invalid arguments specified for command\r\n",
    b"*1\r\n$1\r\nh\r\n",
    b"*1\r\n*2\r\n$1\r\nh\r\n~2\r\n+RW\r\n+insert\r\n",
    b"*1\r\n*2\r\n$1\r\nh\r\n~3\r\n+RW\r\n+access\r\n+delete\r\n",
    b"-ERR wrong number of arguments for \'commandlog\' command\r\n",
    b"*16\r\n+COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <count> <type>\r\n+    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).\r\n+    Entries are made of:\r\n+    id, timestamp,\r\n+        time in microseconds for type of slow,\r\n+        or size in bytes for type of large-request,\r\n+        or size in bytes for type of large-reply\r\n+    arguments array, client IP and port,\r\n+    client name\r\n+LEN <type>\r\n+    Return the length of the specified type of commandlog.\r\n+RESET <type>\r\n+    Reset the specified type of commandlog.\r\n+HELP\r\n+    Print this help.\r\n",
    b"-ERR unknown subcommand \'FOO\'. Try COMMANDLOG HELP.\r\n",
    b"-ERR wrong number of arguments for \'commandlog|get\' command\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR count should be greater than or equal to -1\r\n",
    b"-ERR type should be one of the following: slow, large-request, large-reply\r\n",
    b"-ERR type should be one of the following: slow, large-request, large-reply\r\n",
    b"-ERR wrong number of arguments for \'commandlog|len\' command\r\n",
    b"-ERR wrong number of arguments for \'commandlog|len\' command\r\n",
    b"-ERR type should be one of the following: slow, large-request, large-reply\r\n",
    b"-ERR wrong number of arguments for \'commandlog|help\' command\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b":0\r\n",
    b"*0\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"+PONG\r\n",
    b":2\r\n",
    b":3\r\n",
    b"+OK\r\n",
    b":1\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"*0\r\n",
    b"*0\r\n",
    b"-ERR wrong number of arguments for \'clusterscan\' command\r\n",
    b"-ERR This instance has cluster support disabled\r\n",
    b"-ERR This instance has cluster support disabled\r\n",
    b":1\r\n",
    b"*1\r\n:1\r\n",
    b":1\r\n",
    b"+OK\r\n",
    b"=75\r\ntxt:# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0,keys_with_volatile_items=1\r\n\r\n",
    b"=135\r\ntxt:# Modules\r\nmodule:name=lua,ver=1,api=1,filters=0,usedby=[],using=[],options=[handle-repl-async-load|handle-atomic-slot-migration]\r\n\r\n",
    b"*1\r\n%4\r\n$4\r\nname\r\n$3\r\nlua\r\n$3\r\nver\r\n:1\r\n$4\r\npath\r\n$3\r\nlua\r\n$4\r\nargs\r\n*0\r\n",
    b"*11\r\n+MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+LIST\r\n+    Return a list of loaded modules.\r\n+LOAD <path> [<arg> ...]\r\n+    Load a module library from <path>, passing to it any optional arguments.\r\n+LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]\r\n+    Load a module library from <path>, while passing it module configurations and optional arguments.\r\n+UNLOAD <name>\r\n+    Unload a module.\r\n+HELP\r\n+    Print this help.\r\n",
    b"-ERR FAILOVER requires connected replicas.\r\n",
    b"-ERR No failover in progress.\r\n",
    b"-ERR FAILOVER requires connected replicas.\r\n",
    b"-ERR FAILOVER timeout must be greater than 0\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR FAILOVER requires connected replicas.\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR wrong number of arguments for \'migrate\' command\r\n",
    b"+NOKEY\r\n",
    b"+NOKEY\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n",
    b"+OK\r\n",
    b"-IOERR error or timeout writing to target instance\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"$1\r\n1\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR syntax error\r\n",
    b"-ERR Unrecognized REPLCONF option: bogus\r\n",
    b"+OK\r\n",
    b"-ERR Unrecognized version format: x\r\n",
    b"+OK\r\n",
    b"+OK\r\n",
    b"-ERR Unrecognized version format: 256.0.0\r\n",
    b"+OK\r\n",
    b"-ERR value is out of range, value must between 0 and 1\r\n",
    b"+OK\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR Unrecognized RDB client id 5\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR This instance has cluster support disabled\r\n",
    b"+OK\r\n",
    b"-ERR Unrecognized REPLCONF option: bogus\r\n",
    b"-ERR wrong number of arguments for \'psync\' command\r\n",
    b"-ERR value is not an integer or out of range\r\n",
    b"-ERR PSYNC FAILOVER can\'t be sent to a master.\r\n",
    b"-ERR wrong number of arguments for \'sync\' command\r\n",
    b"+OK\r\n",
    b"-ERR Command \'sync\' not allowed inside a transaction\r\n",
    b"-ERR Command \'psync\' not allowed inside a transaction\r\n",
    b"+QUEUED\r\n",
    b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    b"*29\r\n+ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CAT [<category>]\r\n+    List all commands that belong to <category>, or all command categories\r\n+    when no category is specified.\r\n+DELUSER <username> [<username> ...]\r\n+    Delete a list of users.\r\n+DRYRUN <username> <command> [<arg> ...]\r\n+    Returns whether the user can execute the given command without executing the command.\r\n+GETUSER <username>\r\n+    Get the user\'s details.\r\n+GENPASS [<bits>]\r\n+    Generate a secure 256-bit user password. The optional `bits` argument can\r\n+    be used to specify a different size.\r\n+LIST\r\n+    Show users details in config file format.\r\n+LOAD\r\n+    Reload users from the ACL file.\r\n+LOG [<count> | RESET]\r\n+    Show the ACL log entries.\r\n+SAVE\r\n+    Save the current config to the ACL file.\r\n+SETUSER <username> <rule> [<rule> ...]\r\n+    Create or modify a user with the specified rules.\r\n+USERS\r\n+    List all the registered usernames.\r\n+WHOAMI\r\n+    Return the current connection username.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*110\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CACHING (YES|NO)\r\n+    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.\r\n+CAPA <option> [options...]\r\n+    The client claims its some capability options. Options are:\r\n+    * REDIRECT\r\n+      The client can handle redirection during primary and replica failover in standalone mode.\r\n+GETREDIR\r\n+    Return the client ID we are redirecting to when tracking is enabled.\r\n+GETNAME\r\n+    Return the name of the current connection.\r\n+ID\r\n+    Return the ID of the current connection.\r\n+INFO\r\n+    Return information about the current client connection.\r\n+KILL <ip:port>\r\n+    Kill connection made from <ip:port>.\r\n+KILL <option> <value> [<option> <value> [...]]\r\n+    Kill connections. Options are:\r\n+    * ADDR (<ip:port>|<unixsocket>:0)\r\n+      Kill connections made from the specified address.\r\n+    * LADDR (<ip:port>|<unixsocket>:0)\r\n+      Kill connections made to the specified local address.\r\n+    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)\r\n+      Kill connections by type.\r\n+    * USER <username>\r\n+      Kill connections authenticated by <username>.\r\n+    * SKIPME (YES|NO)\r\n+      Skip killing current connection (default: yes).\r\n+    * ID <client-id> [<client-id>...]\r\n+      Kill connections by client IDs.\r\n+    * MAXAGE <maxage>\r\n+      Kill connections older than the specified age.\r\n+    * FLAGS <flags>\r\n+      Kill connections that include the specified flags.\r\n+    * NAME <client-name>\r\n+      Kill connections with the specified name.\r\n+    * IDLE <idle>\r\n+      Kill connections with idle time greater than or equal to <idle> seconds.\r\n+    * LIB-NAME <library-name>\r\n+      Kill connections with the specified library name.\r\n+    * LIB-VER <library-version>\r\n+      Kill connections with the specified library version.\r\n+    * DB <db-id>\r\n+      Kill connections currently operating on the specified database ID.\r\n+    * CAPA <capa>\r\n+      Kill connections currently with the specified capa.\r\n+    * IP <ip>\r\n+      Kill connections made from the specified ip.\r\n+LIST [options ...]\r\n+    Return information about client connections. Options:\r\n+    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)\r\n+      Return clients of specified type.\r\n+    * USER <username>\r\n+      Return clients authenticated by <username>.\r\n+    * ADDR <ip:port>\r\n+      Return clients connected from the specified address.\r\n+    * LADDR <ip:port>\r\n+      Return clients connected to the specified local address.\r\n+    * ID <client-id> [<client-id>...]\r\n+      Return clients with the specified IDs.\r\n+    * SKIPME (YES|NO)\r\n+      Exclude the current client from the list (default: no).\r\n+    * MAXAGE <maxage>\r\n+      List connections older than the specified age.\r\n+    * FLAGS <flags>\r\n+      Return clients with the specified flags.\r\n+    * NAME <client-name>\r\n+      Return clients with the specified name.\r\n+    * IDLE <idle>\r\n+      Return clients with idle time greater than or equal to <idle> seconds.\r\n+    * LIB-NAME <lib-name>\r\n+      Return clients with the specified lib name.\r\n+    * LIB-VER <lib-version>\r\n+      Return clients with the specified lib version.\r\n+    * DB <db-id>\r\n+      Return clients currently operating on the specified database ID.\r\n+    * CAPA <capa>\r\n+      Return connections currently with the specified capa.\r\n+    * IP <ip>\r\n+      Return connections made from the specified ip.\r\n+UNPAUSE\r\n+    Stop the current client pause, resuming traffic.\r\n+PAUSE <timeout> [WRITE|ALL]\r\n+    Suspend all, or just write, clients for <timeout> milliseconds.\r\n+REPLY (ON|OFF|SKIP)\r\n+    Control the replies sent to the current connection.\r\n+SETNAME <name>\r\n+    Assign the name <name> to the current connection.\r\n+SETINFO <option> <value>\r\n+    Set client meta attr. Options are:\r\n+    * LIB-NAME: the client lib name.\r\n+    * LIB-VER: the client lib version.\r\n+UNBLOCK <clientid> [TIMEOUT|ERROR]\r\n+    Unblock the specified blocked client.\r\n+TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]\r\n+         [OPTIN] [OPTOUT] [NOLOOP]\r\n+    Control server assisted client side caching.\r\n+TRACKINGINFO\r\n+    Report tracking status for the current connection.\r\n+NO-EVICT (ON|OFF)\r\n+    Protect current client connection from eviction.\r\n+NO-TOUCH (ON|OFF)\r\n+    Will not touch LRU/LFU stats when this mode is on.\r\n+IMPORT-SOURCE (ON|OFF)\r\n+    Mark this connection as an import source if import-mode is enabled.\r\n+    Sync tools can set their connections into \'import-source\' state to visit\r\n+    expired keys.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*21\r\n+COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+(no subcommand)\r\n+    Return details about all commands.\r\n+COUNT\r\n+    Return the total number of commands in this server.\r\n+LIST\r\n+    Return a list of all commands in this server.\r\n+INFO [<command-name> ...]\r\n+    Return details about multiple commands.\r\n+    If no command names are given, documentation details for all\r\n+    commands are returned.\r\n+DOCS [<command-name> ...]\r\n+    Return documentation details about multiple commands.\r\n+    If no command names are given, documentation details for all\r\n+    commands are returned.\r\n+GETKEYS <full-command>\r\n+    Return the keys from a full command.\r\n+GETKEYSANDFLAGS <full-command>\r\n+    Return the keys and the access flags from a full command.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*11\r\n+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <pattern>\r\n+    Return parameters matching the glob-like <pattern> and their values.\r\n+SET <directive> <value>\r\n+    Set the configuration <directive> to <value>.\r\n+RESETSTAT\r\n+    Reset statistics reported by the INFO command.\r\n+REWRITE\r\n+    Rewrite the configuration file.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*39\r\n+FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+LOAD [REPLACE] <FUNCTION CODE>\r\n+    Create a new library with the given library name and code.\r\n+DELETE <LIBRARY NAME>\r\n+    Delete the given library.\r\n+LIST [LIBRARYNAME PATTERN] [WITHCODE]\r\n+    Return general information on all the libraries:\r\n+    * Library name\r\n+    * The engine used to run the Library\r\n+    * Functions list\r\n+    * Library code (if WITHCODE is given)\r\n+    It also possible to get only function that matches a pattern using LIBRARYNAME argument.\r\n+STATS\r\n+    Return information about the current function running:\r\n+    * Function name\r\n+    * Command used to run the function\r\n+    * Duration in MS that the function is running\r\n+    If no function is running, return nil\r\n+    In addition, returns a list of available engines.\r\n+KILL\r\n+    Kill the current running function.\r\n+FLUSH [ASYNC|SYNC]\r\n+    Delete all the libraries.\r\n+    When called without the optional mode argument, the behavior is determined by the\r\n+    lazyfree-lazy-user-flush configuration directive. Valid modes are:\r\n+    * ASYNC: Asynchronously flush the libraries.\r\n+    * SYNC: Synchronously flush the libraries.\r\n+DUMP\r\n+    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command\r\n+RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]\r\n+    Restore the libraries represented by the given payload, it is possible to give a restore policy to\r\n+    control how to handle existing libraries (default APPEND):\r\n+    * FLUSH: delete all existing libraries.\r\n+    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.\r\n+    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old\r\n+      libraries with the new libraries (notice that even on this option there is a chance of failure\r\n+      in case of functions name collision with another library).\r\n+HELP\r\n+    Print this help.\r\n",
    b"*17\r\n+LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+DOCTOR\r\n+    Return a human readable latency analysis report.\r\n+GRAPH <event>\r\n+    Return an ASCII latency graph for the <event> class.\r\n+HISTORY <event>\r\n+    Return time-latency samples for the <event> class.\r\n+LATEST\r\n+    Return the latest latency samples for all events.\r\n+RESET [<event> ...]\r\n+    Reset latency data of one or more <event> classes.\r\n+    (default: reset all data for all event classes)\r\n+HISTOGRAM [COMMAND ...]\r\n+    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.\r\n+    If no commands are specified then all histograms are replied.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*14\r\n+MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+DOCTOR\r\n+    Return memory problems reports.\r\n+MALLOC-STATS\r\n+    Return internal statistics report from the memory allocator.\r\n+PURGE\r\n+    Attempt to purge dirty pages for reclamation by the allocator.\r\n+STATS\r\n+    Return information about the memory usage of the server.\r\n+USAGE <key> [SAMPLES <count>]\r\n+    Return memory in bytes used by <key> and its value. Nested values are\r\n+    sampled up to <count> times (default: 5, 0 means sample all).\r\n+HELP\r\n+    Print this help.\r\n",
    b"*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+ENCODING <key>\r\n+    Return the kind of internal representation used in order to store the value\r\n+    associated with a <key>.\r\n+FREQ <key>\r\n+    Return the access frequency index of the <key>. The returned integer is\r\n+    proportional to the logarithm of the recent access frequency of the key.\r\n+IDLETIME <key>\r\n+    Return the idle time of the <key>, that is the approximated number of\r\n+    seconds elapsed since the last access to the key.\r\n+REFCOUNT <key>\r\n+    Return the number of references of the value associated with the specified\r\n+    <key>.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*14\r\n+PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CHANNELS [<pattern>]\r\n+    Return the currently active channels matching a <pattern> (default: \'*\').\r\n+NUMPAT\r\n+    Return number of subscriptions to patterns.\r\n+NUMSUB [<channel> ...]\r\n+    Return the number of subscribers for the specified channels, excluding\r\n+    pattern subscriptions(default: no channels).\r\n+SHARDCHANNELS [<pattern>]\r\n+    Return the currently active shard level channels matching a <pattern> (default: \'*\').\r\n+SHARDNUMSUB [<shardchannel> ...]\r\n+    Return the number of subscribers for the specified shard level channel(s)\r\n+HELP\r\n+    Print this help.\r\n",
    b"*20\r\n+SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+DEBUG (YES|SYNC|NO) [<engine_name>]\r\n+    Set the debug mode for subsequent scripts executed of the specified engine.\r\n+    Default engine name: \'lua\'\r\n+EXISTS <sha1> [<sha1> ...]\r\n+    Return information about the existence of the scripts in the script cache.\r\n+FLUSH [ASYNC|SYNC]\r\n+    Flush the Lua scripts cache. Very dangerous on replicas.\r\n+    When called without the optional mode argument, the behavior is determined\r\n+     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:\r\n+    * ASYNC: Asynchronously flush the scripts cache.\r\n+    * SYNC: Synchronously flush the scripts cache.\r\n+KILL\r\n+    Kill the currently executing Lua script.\r\n+LOAD <script>\r\n+    Load a script into the scripts cache without executing it.\r\n+SHOW <sha1>\r\n+    Show a script from the scripts cache.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*12\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET [<count>]\r\n+    Return top <count> entries from the slowlog (default: 10, -1 mean all).\r\n+    Entries are made of:\r\n+    id, timestamp, time in microseconds, arguments array, client IP and port,\r\n+    client name\r\n+LEN\r\n+    Return the length of the slowlog.\r\n+RESET\r\n+    Reset the slowlog.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*17\r\n+XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CREATE <key> <groupname> <id|$> [option]\r\n+    Create a new consumer group. Options are:\r\n+    * MKSTREAM\r\n+      Create the empty stream if it does not exist.\r\n+    * ENTRIESREAD entries_read\r\n+      Set the group\'s entries_read counter (internal use).\r\n+CREATECONSUMER <key> <groupname> <consumer>\r\n+    Create a new consumer in the specified group.\r\n+DELCONSUMER <key> <groupname> <consumer>\r\n+    Remove the specified consumer.\r\n+DESTROY <key> <groupname>\r\n+    Remove the specified group.\r\n+SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]\r\n+    Set the current group ID and entries_read counter.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*9\r\n+XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CONSUMERS <key> <groupname>\r\n+    Show consumers of <groupname>.\r\n+GROUPS <key>\r\n+    Show the stream consumer groups.\r\n+STREAM <key> [FULL [COUNT <count>]\r\n+    Show information about the stream.\r\n+HELP\r\n+    Print this help.\r\n",
    b"*16\r\n+COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <count> <type>\r\n+    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).\r\n+    Entries are made of:\r\n+    id, timestamp,\r\n+        time in microseconds for type of slow,\r\n+        or size in bytes for type of large-request,\r\n+        or size in bytes for type of large-reply\r\n+    arguments array, client IP and port,\r\n+    client name\r\n+LEN <type>\r\n+    Return the length of the specified type of commandlog.\r\n+RESET <type>\r\n+    Reset the specified type of commandlog.\r\n+HELP\r\n+    Print this help.\r\n",
];

#[test]
fn replconf_ack_and_getack_answer_nothing() {
    // As valkey-server 9.1.2 (and Redis) treat them from a client that is no replica: no
    // reply at all, and the connection goes on.
    let (mut engine, _clock, client) = fake(1_765_000_000_000);
    for line in [
        "REPLCONF ACK 1",
        "REPLCONF GETACK *",
        "REPLCONF listening-port 1 ACK 5",
    ] {
        engine.execute(client, &argv(line));
        assert!(engine.reply_is_silenced(client), "{line}");
    }
    assert_eq!(engine.execute(client, &argv("PING")), Frame::simple("PONG"));
    assert!(!engine.reply_is_silenced(client));
}

#[test]
fn commandlog_logs_requests_and_replies_past_a_megabyte() {
    // Valkey's default thresholds (`commandlog-request-larger-than` and
    // `commandlog-reply-larger-than`, 1 MB); sizes as valkey-server 9.1.2 logged them: the
    // request as its RESP2 array, the reply as written.
    let (mut engine, _clock, client) = fake(1_765_000_000_000);
    let value = "a".repeat(1_048_600);
    engine.execute(client, &argv(&format!("SET big {value}")));
    engine.execute(client, &argv("GET big"));
    engine.execute(client, &argv("PING"));
    let sizes = |engine: &mut Engine, kind: &str| -> Vec<i64> {
        let line = format!("COMMANDLOG GET -1 {kind}");
        let Frame::Array(entries) = engine.execute(client, &argv(&line)) else {
            panic!("COMMANDLOG GET answers an array");
        };
        entries
            .iter()
            .map(|e| match e {
                Frame::Array(fields) => match fields[2] {
                    Frame::Integer(n) => n,
                    _ => panic!("a size"),
                },
                _ => panic!("an entry"),
            })
            .collect()
    };
    assert_eq!(sizes(&mut engine, "large-request"), [1_048_634]);
    assert_eq!(sizes(&mut engine, "large-reply"), [1_048_612]);
}
