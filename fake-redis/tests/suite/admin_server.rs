//! The server commands against a real redis-server 7.0, byte for byte, in RESP2 and RESP3:
//! `OBJECT`'s encodings and their thresholds (changed by `CONFIG SET`, and the one-way
//! conversions), and the replies of the other server commands that do not depend on time or on
//! the machine; then what only the fake can show, on its manual clock (`OBJECT IDLETIME`).

use crate::support;

use fake_redis::{Engine, Frame, ManualClock};
use support::{argv, raw};

/// What the test's redis-server forgets before each case.
const RESET: &[&[&[u8]]] = &[
    &[b"FLUSHALL"],
    &[b"CONFIG", b"SET", b"requirepass", b""],
    &[b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction"],
    &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"512"],
    &[b"CONFIG", b"SET", b"hash-max-listpack-value", b"64"],
    &[b"CONFIG", b"SET", b"zset-max-listpack-entries", b"128"],
    &[b"CONFIG", b"SET", b"zset-max-listpack-value", b"64"],
    &[b"CONFIG", b"SET", b"set-max-intset-entries", b"512"],
];

/// A script that fills a key: `n` fields, members or elements, by the command in ARGV[1].
const FILL: &str = "for i = 1, tonumber(ARGV[2]) do \
    if ARGV[1] == 'hset' then redis.call('hset', KEYS[1], 'f' .. i, 'v') \
    elseif ARGV[1] == 'zadd' then redis.call('zadd', KEYS[1], i, 'm' .. i) \
    else redis.call(ARGV[1], KEYS[1], i) end end return redis.call('object', 'encoding', KEYS[1])";

const OBJECT_CASES: &[raw::Case] = &[
    &[
        &["SET s abc"],
        &["OBJECT ENCODING s"],
        &["SET s 123"],
        &["OBJECT ENCODING s"],
        &["OBJECT REFCOUNT s"],
        &["SET s 10000"],
        &["OBJECT REFCOUNT s"],
        &["SET s -1"],
        &["OBJECT ENCODING s"],
        &["SET s 01"],
        &["OBJECT ENCODING s"],
        &["SET s 12345678901234567890"],
        &["OBJECT ENCODING s"],
        &["SET s xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["OBJECT ENCODING s"],
        &["SET s xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        &["OBJECT ENCODING s"],
        &["OBJECT REFCOUNT s"],
    ],
    &[
        &["SET s ab"],
        &["APPEND s c"],
        &["OBJECT ENCODING s"],
        &["SETRANGE t 0 x"],
        &["OBJECT ENCODING t"],
        &["PFADD hll a b"],
        &["OBJECT ENCODING hll"],
        &["INCRBYFLOAT f 1.5"],
        &["OBJECT ENCODING f"],
        &["INCR n"],
        &["OBJECT ENCODING n"],
    ],
    &[
        &["RPUSH l a b"],
        &["OBJECT ENCODING l"],
        &["SADD s 1 2 3"],
        &["OBJECT ENCODING s"],
        &["SADD s a"],
        &["OBJECT ENCODING s"],
        &["SREM s a"],
        &["OBJECT ENCODING s"],
        &["HSET h f v"],
        &["OBJECT ENCODING h"],
        &[
            "HSET",
            "h",
            "g",
            "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv",
        ],
        &["OBJECT ENCODING h"],
        &["ZADD z 1 a"],
        &["OBJECT ENCODING z"],
        &[
            "ZADD",
            "z",
            "2",
            "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm",
        ],
        &["OBJECT ENCODING z"],
    ],
    // The default thresholds, and the one-way conversion of a collection that grew past them.
    &[
        &["EVAL", FILL, "1", "h", "hset", "512"],
        &["EVAL", FILL, "1", "h", "hset", "513"],
        &["HDEL h f1 f2 f3"],
        &["OBJECT ENCODING h"],
        &["EVAL", FILL, "1", "z", "zadd", "128"],
        &["EVAL", FILL, "1", "z", "zadd", "129"],
        &["ZREM z m1 m2"],
        &["OBJECT ENCODING z"],
        &["EVAL", FILL, "1", "s", "sadd", "512"],
        &["EVAL", FILL, "1", "s", "sadd", "513"],
        &["SREM s 1 2"],
        &["OBJECT ENCODING s"],
        &["EVAL", FILL, "1", "l", "rpush", "1000"],
    ],
    // Thresholds changed by CONFIG SET, under their old names too.
    &[
        &["CONFIG SET hash-max-ziplist-entries 2"],
        &["CONFIG SET zset-max-listpack-entries 2"],
        &["CONFIG SET set-max-intset-entries 2"],
        &["EVAL", FILL, "1", "h", "hset", "2"],
        &["EVAL", FILL, "1", "h2", "hset", "3"],
        &["EVAL", FILL, "1", "z", "zadd", "2"],
        &["EVAL", FILL, "1", "z2", "zadd", "3"],
        &["EVAL", FILL, "1", "s", "sadd", "2"],
        &["EVAL", FILL, "1", "s2", "sadd", "3"],
        &["CONFIG SET hash-max-listpack-value 1"],
        &["HSET h3 f vv"],
        &["OBJECT ENCODING h3"],
    ],
    // Strings: a new key's APPEND is encoded as SET's argument, INCR makes an integer object,
    // INCRBYFLOAT a string object; RENAME, COPY and MOVE keep the value's encoding.
    &[
        &["APPEND a1 abc"],
        &["OBJECT ENCODING a1"],
        &["APPEND a2 123"],
        &["OBJECT ENCODING a2"],
        &["APPEND a2 4"],
        &["OBJECT ENCODING a2"],
        &["INCR a2"],
        &["OBJECT ENCODING a2"],
        &["SETRANGE sr 0 12"],
        &["INCRBY sr 1"],
        &["OBJECT ENCODING sr"],
        &["INCRBYFLOAT a2 1"],
        &["OBJECT ENCODING a2"],
        &["INCRBYFLOAT f 2"],
        &["OBJECT ENCODING f"],
        &["INCR f"],
        &["OBJECT ENCODING f"],
        &["SET r ab"],
        &["APPEND r c"],
        &["RENAME r r2"],
        &["OBJECT ENCODING r2"],
        &["COPY r2 r3"],
        &["OBJECT ENCODING r3"],
        &["COPY r2 r4 DB 1"],
        &["MOVE r2 1"],
        &["SADD s 1 2 a"],
        &["SREM s a"],
        &["RENAMENX s s2"],
        &["OBJECT ENCODING s2"],
        &["COPY s2 s3"],
        &["OBJECT ENCODING s3"],
        &["MOVE s2 1"],
        &["SELECT 1"],
        &["OBJECT ENCODING r2"],
        &["OBJECT ENCODING r4"],
        &["OBJECT ENCODING s2"],
    ],
    // Errors and the missing key.
    &[
        &["OBJECT ENCODING missing"],
        &["OBJECT REFCOUNT missing"],
        &["OBJECT IDLETIME missing"],
        &["OBJECT FREQ missing"],
        &["SET k v"],
        &["OBJECT FREQ k"],
        &["OBJECT IDLETIME k"],
        &["OBJECT ENCODING"],
        &["OBJECT ENCODING k extra"],
        &["OBJECT HELP extra"],
        &["OBJECT BOGUS k"],
        &["OBJECT HELP"],
        &["CONFIG SET maxmemory-policy allkeys-lfu"],
        &["OBJECT IDLETIME k"],
    ],
];

/// The other server commands whose replies depend on neither time nor the machine.
const SERVER_CASES: &[raw::Case] = &[
    &[
        &["SET k v"],
        &["MEMORY USAGE k"],
        &["SET kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk v"],
        &[
            "MEMORY",
            "USAGE",
            "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
        ],
        &["SET i 5"],
        &["MEMORY USAGE i"],
        &[
            "SET",
            "r",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ],
        &["MEMORY USAGE r"],
        &["HSET h a b"],
        &["MEMORY USAGE h"],
        &[
            "HSET",
            "h2",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "1",
        ],
        &["MEMORY USAGE h2"],
        &["RPUSH l 1 2 3 hello"],
        &["MEMORY USAGE l"],
        &["SADD s 1 70000"],
        &["MEMORY USAGE s"],
        &["SADD s2 a"],
        &["MEMORY USAGE s2"],
        &["ZADD z 1.5 a 2 b"],
        &["MEMORY USAGE z"],
        &["MEMORY USAGE k SAMPLES 0"],
        &["MEMORY USAGE missing"],
        &["MEMORY USAGE k SAMPLES"],
        &["MEMORY USAGE k SAMPLES x"],
        &["MEMORY USAGE k SAMPLES -1"],
        &["MEMORY USAGE k bogus 1"],
        &["MEMORY HELP"],
        &["MEMORY PURGE"],
        &["MEMORY BOGUS"],
        &["MEMORY"],
    ],
    &[
        &["SLOWLOG GET"],
        &["SLOWLOG GET -1"],
        &["SLOWLOG GET -2"],
        &["SLOWLOG GET x"],
        &["SLOWLOG LEN"],
        &["SLOWLOG RESET"],
        &["SLOWLOG HELP"],
        &["SLOWLOG BOGUS"],
        &["LATENCY LATEST"],
        &["LATENCY HISTORY command"],
        &["LATENCY RESET"],
        &["LATENCY DOCTOR"],
        &["LATENCY HELP"],
        &["LATENCY GRAPH command"],
        &["LATENCY BOGUS"],
        &["ROLE"],
        &["ROLE x"],
        &["LASTSAVE x"],
        &["BGSAVE x"],
    ],
    &[
        &["SET k v"],
        &["SET t v EX 100"],
        &["MOVE k x"],
        &["MOVE k 99"],
        &["MOVE k 0"],
        &["MOVE missing 1"],
        &["MOVE k 1"],
        &["MOVE t 1"],
        &["EXISTS k t"],
        &["SELECT 1"],
        &["GET k"],
        &["TTL t"],
        &["SET k other"],
        &["SELECT 0"],
        &["SET k again"],
        &["MOVE k 1"],
        &["GET k"],
        &["DEBUG SLEEP 0"],
        &["DEBUG JMAP"],
        &["DEBUG"],
    ],
    &[
        &["ACL WHOAMI"],
        &["ACL USERS"],
        &["ACL LIST"],
        &["ACL GETUSER default"],
        &["ACL GETUSER nobody"],
        &["ACL CAT"],
        &["ACL CAT bogus"],
        &["ACL GENPASS 0"],
        &["ACL GENPASS 4097"],
        &["ACL GENPASS x"],
        &["ACL LOG"],
        &["ACL LOG x"],
        &["ACL LOG RESET"],
        &["ACL DRYRUN default GET k"],
        &["ACL DRYRUN default bogus"],
        &["ACL DRYRUN nobody GET k"],
        &["ACL DRYRUN default GET"],
        &["ACL SAVE"],
        &["ACL LOAD"],
        &["ACL HELP"],
        &["ACL WHOAMI x"],
        &["ACL BOGUS"],
        &["ACL"],
        &["CONFIG SET requirepass s3cret"],
        &["ACL LIST"],
        &["ACL GETUSER default"],
        &["AUTH default s3cret"],
        &["ACL WHOAMI"],
    ],
];

raw::same_as_redis!(
    SERVER_CASES,
    RESET,
    server_commands_reply_as_redis_in_resp2,
    server_commands_reply_as_redis_in_resp3
);

#[test]
fn with_requirepass_every_command_answers_an_unauthenticated_client_as_redis_does() {
    let (server, mut engine, admin) = raw::behind_requirepass();
    raw::sweep_unauthenticated(&mut engine, admin, server.port).assert_as_redis("requirepass");
}

#[test]
fn lastsave_is_the_start_until_a_save_moves_it() {
    let clock = ManualClock::new(1_700_000_000_000);
    let mut engine = Engine::new(clock.clone());
    let c = engine.connect();
    assert_eq!(
        engine.execute(c, &argv("LASTSAVE")),
        Frame::Integer(1_700_000_000)
    );
    clock.advance(5_000);
    assert_eq!(
        engine.execute(c, &argv("BGSAVE")),
        Frame::simple("Background saving started")
    );
    assert_eq!(
        engine.execute(c, &argv("LASTSAVE")),
        Frame::Integer(1_700_000_005)
    );
}

raw::same_as_redis!(
    OBJECT_CASES,
    RESET,
    object_replies_as_redis_in_resp2,
    object_replies_as_redis_in_resp3
);

#[test]
fn object_idletime_counts_seconds_since_the_last_access_on_the_engine_s_clock() {
    let clock = ManualClock::default();
    let mut engine = Engine::new(clock.clone());
    let c = engine.connect();
    engine.execute(c, &argv("SET k v"));
    clock.advance(7_500);
    assert_eq!(
        engine.execute(c, &argv("OBJECT IDLETIME k")),
        Frame::Integer(7)
    );
    // OBJECT does not touch the key; GET does.
    assert_eq!(
        engine.execute(c, &argv("OBJECT IDLETIME k")),
        Frame::Integer(7)
    );
    engine.execute(c, &argv("GET k"));
    assert_eq!(
        engine.execute(c, &argv("OBJECT IDLETIME k")),
        Frame::Integer(0)
    );
}

#[test]
fn object_idletime_is_kept_by_the_lookups_redis_makes_without_touching() {
    let clock = ManualClock::default();
    let mut engine = Engine::new(clock.clone());
    let c = engine.connect();
    let idle = |engine: &mut Engine, key: &str| {
        engine.execute(c, &argv(&format!("OBJECT IDLETIME {key}")))
    };
    engine.execute(c, &argv("SET k v"));
    engine.execute(c, &argv("SET k2 v"));
    engine.execute(c, &argv("SET k3 v"));
    clock.advance(3_000);
    for read in [
        "EXISTS k",
        "TYPE k",
        "TTL k",
        "PTTL k",
        "EXPIRETIME k",
        "PEXPIRETIME k",
    ] {
        engine.execute(c, &argv(read));
    }
    assert_eq!(idle(&mut engine, "k"), Frame::Integer(3));
    // EXPIRE and PERSIST look their key up for writing, which touches it, set or not.
    assert_eq!(
        engine.execute(c, &argv("EXPIRE k 100 XX")),
        Frame::Integer(0)
    );
    assert_eq!(idle(&mut engine, "k"), Frame::Integer(0));
    assert_eq!(engine.execute(c, &argv("PERSIST k2")), Frame::Integer(0));
    assert_eq!(idle(&mut engine, "k2"), Frame::Integer(0));
    assert_eq!(engine.execute(c, &argv("TOUCH k3")), Frame::Integer(1));
    assert_eq!(idle(&mut engine, "k3"), Frame::Integer(0));
}

/// `SWAPDB`'s errors and swap, and the watches it breaks, as Redis's.
const SWAPDB_CASES: &[raw::Case] = &[
    &[
        &["SWAPDB 0"],
        &["SWAPDB 0 1 2"],
        &["SWAPDB a 1"],
        &["SWAPDB 0 b"],
        &["SWAPDB a 99"],
        &["SWAPDB 0 99"],
        &["SWAPDB -1 0"],
        &["SWAPDB 0 0"],
        &["SET k v"],
        &["SET t v EX 100"],
        &["SELECT 1"],
        &["SET j w"],
        &["SWAPDB 1 0"],
        &["GET j"],
        &["GET k"],
        &["TTL t"],
        &["DBSIZE"],
        &["SELECT 0"],
        &["GET j"],
        &["DBSIZE"],
    ],
    &[
        &["SET k v"],
        &["WATCH k"],
        &["SWAPDB 0 1"],
        &["MULTI"],
        &["PING"],
        &["EXEC"],
        &["SELECT 2"],
        &["SET w v"],
        &["SELECT 0"],
        &["WATCH w"],
        &["SWAPDB 0 2"],
        &["MULTI"],
        &["PING"],
        &["EXEC"],
        &["WATCH nowhere"],
        &["SWAPDB 0 2"],
        &["MULTI"],
        &["PING"],
        &["EXEC"],
    ],
];

raw::same_as_redis!(
    SWAPDB_CASES,
    RESET,
    swapdb_replies_as_redis_in_resp2,
    swapdb_replies_as_redis_in_resp3
);

/// A client blocked on a key of database 1 is served when `SWAPDB` brings that key in.
#[test]
fn swapdb_serves_a_client_blocked_on_a_key_it_brings_in() {
    let mut engine = Engine::new(ManualClock::default());
    let (blocked, other) = (engine.connect(), engine.connect());
    assert_eq!(engine.execute(blocked, &argv("SELECT 1")), Frame::OK);
    assert_eq!(engine.execute_or_block(blocked, &argv("BLPOP l 0")), None);
    assert_eq!(
        engine.execute(other, &argv("RPUSH l a b")),
        Frame::Integer(2)
    );
    assert_eq!(engine.take_unblocked_reply(blocked), None);
    assert_eq!(engine.execute(other, &argv("SWAPDB 0 1")), Frame::OK);
    assert_eq!(
        engine.take_unblocked_reply(blocked),
        Some(Frame::Array(vec![
            Frame::bulk_from(b"l"),
            Frame::bulk_from(b"a")
        ]))
    );
    assert_eq!(
        engine.execute(other, &argv("LRANGE l 0 -1")),
        Frame::Array(vec![])
    );
    assert_eq!(engine.execute(other, &argv("SELECT 1")), Frame::OK);
    assert_eq!(
        engine.execute(other, &argv("LRANGE l 0 -1")),
        Frame::Array(vec![Frame::bulk_from(b"b")])
    );
}

/// `SWAPDB` touches a watched key only where something changes logically, as Redis's
/// `touchAllWatchedKeysInDb`: an expired key that goes away, a missing key replaced by an
/// expired one, and an expired key replaced by another expired one leave the `EXEC` to run
/// (Redis 7.4.1's transaction suite, with its times on a manual clock).
#[test]
fn swapdb_leaves_watches_of_stale_keys_alone() {
    let clock = ManualClock::new(1_000_000);
    let mut engine = Engine::with_config(
        clock.clone(),
        fake_redis::EngineConfig {
            enable_debug_command: fake_redis::DebugCommand::Yes,
            ..fake_redis::EngineConfig::default()
        },
    );
    let c = engine.connect();
    let mut run = |lines: &[&str]| -> Frame {
        let mut last = Frame::Null;
        for line in lines {
            if let Some(ms) = line.strip_prefix("advance ") {
                clock.advance(ms.parse().unwrap());
                continue;
            }
            last = engine.execute(c, &argv(line));
        }
        last
    };
    let pong = Frame::Array(vec![Frame::simple("PONG")]);
    run(&["DEBUG SET-ACTIVE-EXPIRE 0"]);
    // An expired key replaced with no key.
    let cases: [&[&str]; 3] = [
        &[
            "FLUSHALL",
            "SELECT 1",
            "SET x foo PX 1",
            "advance 2",
            "WATCH x",
            "SWAPDB 0 1",
        ],
        // No key replaced with an expired key.
        &[
            "FLUSHALL",
            "SELECT 0",
            "SET x foo PX 1",
            "advance 2",
            "SELECT 1",
            "WATCH x",
            "SWAPDB 0 1",
        ],
        // An expired key replaced with another expired key.
        &[
            "FLUSHALL",
            "SELECT 1",
            "SET x foo PX 1",
            "SELECT 0",
            "SET x bar PX 1",
            "advance 2",
            "SELECT 1",
            "WATCH x",
            "SWAPDB 0 1",
        ],
    ];
    for case in cases {
        run(case);
        assert_eq!(run(&["MULTI", "PING", "EXEC"]), pong, "{case:?}");
    }
    // A live key replaced by an expired one is a change.
    run(&[
        "FLUSHALL",
        "SELECT 0",
        "SET x foo PX 1",
        "SELECT 1",
        "SET x bar",
        "advance 2",
        "WATCH x",
        "SWAPDB 0 1",
    ]);
    assert_eq!(run(&["MULTI", "PING", "EXEC"]), Frame::NullArray);
}
