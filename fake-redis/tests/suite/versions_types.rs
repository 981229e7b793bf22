//! What Redis changed in its data types between 7.0 and 7.4, answered per release: each table
//! holds the RESP2 bytes redis-server 7.4.1 (or, for the 7.0 tables, 7.0.15) answered when it was
//! recorded. With `REDIS_7_4_SERVER` naming a 7.4.1 binary the 7.4 tables run on it too; the 7.0
//! tables always run on the suite's own redis-server 7.0.

use super::versions::{Oracle, assert_cases, assert_cases_against, assert_cases_on, engine};
use crate::support::OwnServer;
use crate::support::argv;
use fake_redis::{DebugCommand, Engine, EngineConfig, ManualClock, Version};

/// Runs `cases` on a fresh engine of Redis 7.0 and on a fresh redis-server 7.0: both must give
/// the recorded bytes.
fn assert_cases_7_0(cases: &[(&str, &str)]) {
    assert_cases_against(
        engine(Version::V7_0),
        Some(Oracle::of(OwnServer::start())),
        cases,
    );
}

/// `ZRANK`/`ZREVRANK ... WITHSCORE` (Redis 7.2), and scores printed as their shortest text, as
/// Redis 7.2 and later print every double (`1.1`, `1.5e-7`, `1e+20`).
const ZSET_7_4: &[(&str, &str)] = &[
    ("ZADD z 1.1 a 2 b 1.5e-7 c", ":3\r\n"),
    ("ZRANK z a WITHSCORE", "*2\r\n:1\r\n$3\r\n1.1\r\n"),
    ("ZREVRANK z c withscore", "*2\r\n:2\r\n$6\r\n1.5e-7\r\n"),
    ("ZRANK z b", ":2\r\n"),
    ("ZRANK z x WITHSCORE", "*-1\r\n"),
    ("ZRANK nokey x WITHSCORE", "*-1\r\n"),
    ("ZRANK z a WITHSCORES", "-ERR syntax error\r\n"),
    (
        "ZRANK z a WITHSCORE x",
        "-ERR wrong number of arguments for 'zrank' command\r\n",
    ),
    ("ZSCORE z a", "$3\r\n1.1\r\n"),
    (
        "ZMSCORE z a c x",
        "*3\r\n$3\r\n1.1\r\n$6\r\n1.5e-7\r\n$-1\r\n",
    ),
    (
        "ZRANGE z 0 -1 WITHSCORES",
        "*6\r\n$1\r\nc\r\n$6\r\n1.5e-7\r\n$1\r\na\r\n$3\r\n1.1\r\n$1\r\nb\r\n$1\r\n2\r\n",
    ),
    ("ZINCRBY z 0.1 a", "$18\r\n1.2000000000000002\r\n"),
    ("ZADD z INCR 1e20 b", "$5\r\n1e+20\r\n"),
    (
        "ZSCAN z 0",
        "*2\r\n$1\r\n0\r\n*6\r\n$1\r\nc\r\n$6\r\n1.5e-7\r\n$1\r\na\r\n$18\r\n1.2000000000000002\r\n$1\r\nb\r\n$5\r\n1e+20\r\n",
    ),
    ("ZPOPMIN z", "*2\r\n$1\r\nc\r\n$6\r\n1.5e-7\r\n"),
    (
        "ZMPOP 1 z MAX",
        "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n$5\r\n1e+20\r\n",
    ),
    ("SET s v", "+OK\r\n"),
    (
        "ZRANK s a WITHSCORE",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
];

/// The same commands on Redis 7.0: no `WITHSCORE`, and scores as `%.17g`.
const ZSET_7_0: &[(&str, &str)] = &[
    ("ZADD z 1.1 a 2 b 1.5e-7 c", ":3\r\n"),
    (
        "ZRANK z a WITHSCORE",
        "-ERR wrong number of arguments for 'zrank' command\r\n",
    ),
    (
        "ZREVRANK z c withscore",
        "-ERR wrong number of arguments for 'zrevrank' command\r\n",
    ),
    ("ZRANK z b", ":2\r\n"),
    ("ZSCORE z a", "$18\r\n1.1000000000000001\r\n"),
    (
        "ZMSCORE z a c x",
        "*3\r\n$18\r\n1.1000000000000001\r\n$22\r\n1.4999999999999999e-07\r\n$-1\r\n",
    ),
    ("ZADD z INCR 1e20 b", "$5\r\n1e+20\r\n"),
    (
        "ZSCAN z 0",
        "*2\r\n$1\r\n0\r\n*6\r\n$1\r\nc\r\n$22\r\n1.4999999999999999e-07\r\n$1\r\na\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$5\r\n1e+20\r\n",
    ),
    (
        "ZPOPMIN z",
        "*2\r\n$1\r\nc\r\n$22\r\n1.4999999999999999e-07\r\n",
    ),
];

#[test]
fn zrank_withscore_and_shortest_scores_answer_as_each_release() {
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", ZSET_7_4);
    assert_cases_7_0(ZSET_7_0);
}

/// Sets of other members than integers are listpacks up to `set-max-listpack-entries` members of
/// at most `set-max-listpack-value` bytes (Redis 7.2), and stay listpacks when only integers are
/// left; Redis 7.0 has neither parameter and makes them hash tables.
const SET_7_4: &[(&str, &str)] = &[
    (
        "CONFIG GET set-max-listpack-entries",
        "*2\r\n$24\r\nset-max-listpack-entries\r\n$3\r\n128\r\n",
    ),
    (
        "CONFIG GET set-max-listpack-value",
        "*2\r\n$22\r\nset-max-listpack-value\r\n$2\r\n64\r\n",
    ),
    ("SADD s1 1 2 3", ":3\r\n"),
    ("OBJECT ENCODING s1", "$6\r\nintset\r\n"),
    ("SADD s2 1 2 3 a", ":4\r\n"),
    ("OBJECT ENCODING s2", "$8\r\nlistpack\r\n"),
    ("SREM s2 a", ":1\r\n"),
    ("OBJECT ENCODING s2", "$8\r\nlistpack\r\n"),
    ("CONFIG SET set-max-listpack-entries 2", "+OK\r\n"),
    ("SADD s3 a b", ":2\r\n"),
    ("OBJECT ENCODING s3", "$8\r\nlistpack\r\n"),
    ("SADD s3 c", ":1\r\n"),
    ("OBJECT ENCODING s3", "$9\r\nhashtable\r\n"),
    ("SREM s3 c", ":1\r\n"),
    ("OBJECT ENCODING s3", "$9\r\nhashtable\r\n"),
    ("CONFIG SET set-max-listpack-value 3", "+OK\r\n"),
    ("SADD s4 abcd", ":1\r\n"),
    ("OBJECT ENCODING s4", "$9\r\nhashtable\r\n"),
    (
        "CONFIG SET set-max-listpack-entries x",
        "-ERR CONFIG SET failed (possibly related to argument 'set-max-listpack-entries') - argument couldn't be parsed into an integer\r\n",
    ),
    ("CONFIG SET set-max-listpack-entries 128", "+OK\r\n"),
    ("CONFIG SET set-max-listpack-value 64", "+OK\r\n"),
];

const SET_7_0: &[(&str, &str)] = &[
    ("CONFIG GET set-max-listpack-entries", "*0\r\n"),
    ("CONFIG GET set-max-listpack-value", "*0\r\n"),
    ("SADD s1 1 2 3", ":3\r\n"),
    ("OBJECT ENCODING s1", "$6\r\nintset\r\n"),
    ("SADD s2 1 2 3 a", ":4\r\n"),
    ("OBJECT ENCODING s2", "$9\r\nhashtable\r\n"),
    ("SREM s2 a", ":1\r\n"),
    ("OBJECT ENCODING s2", "$9\r\nhashtable\r\n"),
    (
        "CONFIG SET set-max-listpack-entries 2",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-entries'\r\n",
    ),
    ("SADD s3 a b", ":2\r\n"),
    ("OBJECT ENCODING s3", "$9\r\nhashtable\r\n"),
    ("SADD s3 c", ":1\r\n"),
    ("OBJECT ENCODING s3", "$9\r\nhashtable\r\n"),
    ("SREM s3 c", ":1\r\n"),
    ("OBJECT ENCODING s3", "$9\r\nhashtable\r\n"),
    (
        "CONFIG SET set-max-listpack-value 3",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-value'\r\n",
    ),
    ("SADD s4 abcd", ":1\r\n"),
    ("OBJECT ENCODING s4", "$9\r\nhashtable\r\n"),
    (
        "CONFIG SET set-max-listpack-entries x",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-entries'\r\n",
    ),
    (
        "CONFIG SET set-max-listpack-entries 128",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-entries'\r\n",
    ),
    (
        "CONFIG SET set-max-listpack-value 64",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-value'\r\n",
    ),
];

#[test]
fn small_sets_are_listpacks_from_7_2_on() {
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", SET_7_4);
    assert_cases_7_0(SET_7_0);
}

/// `XREAD ... +` reads a stream's last entry (Redis 7.4); Redis 7.0 takes no such ID.
const XREAD_LAST_7_4: &[(&str, &str)] = &[
    ("XADD ls 1-0 a 1", "$3\r\n1-0\r\n"),
    ("XADD ls 2-0 b 2", "$3\r\n2-0\r\n"),
    (
        "XREAD STREAMS ls +",
        "*1\r\n*2\r\n$2\r\nls\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    ),
    (
        "XREAD COUNT 5 STREAMS ls +",
        "*1\r\n*2\r\n$2\r\nls\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    ),
    (
        "XREAD STREAMS ls nokey + +",
        "*1\r\n*2\r\n$2\r\nls\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    ),
    ("XREAD STREAMS nokey +", "*-1\r\n"),
    ("XDEL ls 2-0", ":1\r\n"),
    ("XREAD STREAMS ls +", "*-1\r\n"),
    ("XGROUP CREATE e g $ MKSTREAM", "+OK\r\n"),
    (
        "XREAD STREAMS e +",
        "-ERR the stream last element ID is 0-0\r\n",
    ),
    (
        "XREADGROUP GROUP g c STREAMS e +",
        "-ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.\r\n",
    ),
    (
        "XREAD STREAMS ls -",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
];

const XREAD_LAST_7_0: &[(&str, &str)] = &[
    ("XADD ls 1-0 a 1", "$3\r\n1-0\r\n"),
    ("XADD ls 2-0 b 2", "$3\r\n2-0\r\n"),
    (
        "XREAD STREAMS ls +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    (
        "XREAD COUNT 5 STREAMS ls +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    (
        "XREAD STREAMS ls nokey + +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    (
        "XREAD STREAMS nokey +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    ("XDEL ls 2-0", ":1\r\n"),
    (
        "XREAD STREAMS ls +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    ("XGROUP CREATE e g $ MKSTREAM", "+OK\r\n"),
    (
        "XREAD STREAMS e +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    (
        "XREADGROUP GROUP g c STREAMS e +",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
    (
        "XREAD STREAMS ls -",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    ),
];

/// An odd count of keys and IDs after `STREAMS`: Redis 7.2 names the command in its error.
const UNBALANCED_7_4: &[(&str, &str)] = &[
    (
        "XREAD STREAMS a b c",
        "-ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.\r\n",
    ),
    (
        "XREADGROUP GROUP g c STREAMS a b c",
        "-ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.\r\n",
    ),
];

const UNBALANCED_7_0: &[(&str, &str)] = &[
    (
        "XREAD STREAMS a b c",
        "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n",
    ),
    (
        "XREADGROUP GROUP g c STREAMS a b c",
        "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n",
    ),
];

#[test]
fn xread_plus_reads_the_last_entry_from_7_4_on() {
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", XREAD_LAST_7_4);
    assert_cases_7_0(XREAD_LAST_7_0);
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", UNBALANCED_7_4);
    assert_cases_7_0(UNBALANCED_7_0);
}

/// `DEBUG LOADAOF` on a server that never wrote an append-only file empties its databases and
/// fails; with `appendonly yes` it loads back what memory holds.
const LOADAOF_7_4: &[(&str, &str)] = &[
    ("SET k v", "+OK\r\n"),
    (
        "DEBUG LOADAOF",
        "-ERR Error trying to load the AOF files, check server logs.\r\n",
    ),
    ("DBSIZE", ":0\r\n"),
    ("CONFIG SET appendonly yes", "+OK\r\n"),
    ("XADD s 1-0 a 1", "$3\r\n1-0\r\n"),
    ("SET k v", "+OK\r\n"),
    ("DEBUG LOADAOF", "+OK\r\n"),
    ("DBSIZE", ":2\r\n"),
    (
        "XRANGE s - +",
        "*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
    ),
    ("GET k", "$1\r\nv\r\n"),
];

#[test]
fn debug_loadaof_reloads_the_data_set_when_appendonly_is_on() {
    let e = Engine::with_config(
        ManualClock::new(1_000_000),
        EngineConfig {
            version: Version::V7_4,
            enable_debug_command: DebugCommand::Yes,
            ..EngineConfig::default()
        },
    );
    assert_cases_on(e, "REDIS_7_4_SERVER", LOADAOF_7_4);
}

/// A list that fits in one node of `list-max-listpack-size` is a listpack from Redis 7.2 on, and
/// one that shrinks back into half a node is again; Redis 7.0 makes every list a quicklist.
const LIST_7_4: &[(&str, &str)] = &[
    ("RPUSH l a b c", ":3\r\n"),
    ("OBJECT ENCODING l", "$8\r\nlistpack\r\n"),
    ("CONFIG SET list-max-listpack-size 2", "+OK\r\n"),
    ("RPUSH m a b", ":2\r\n"),
    ("OBJECT ENCODING m", "$8\r\nlistpack\r\n"),
    ("RPUSH m c", ":3\r\n"),
    ("OBJECT ENCODING m", "$9\r\nquicklist\r\n"),
    ("LPOP m 2", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ("OBJECT ENCODING m", "$8\r\nlistpack\r\n"),
    ("CONFIG SET list-max-ziplist-size -1", "+OK\r\n"),
    (
        "CONFIG GET list-max-listpack-size",
        "*2\r\n$22\r\nlist-max-listpack-size\r\n$2\r\n-1\r\n",
    ),
    ("RPUSH n 1 2 3 4 5", ":5\r\n"),
    ("OBJECT ENCODING n", "$8\r\nlistpack\r\n"),
    ("CONFIG SET list-max-listpack-size -2", "+OK\r\n"),
];

const LIST_7_0: &[(&str, &str)] = &[
    ("RPUSH l a b c", ":3\r\n"),
    ("OBJECT ENCODING l", "$9\r\nquicklist\r\n"),
    ("CONFIG SET list-max-listpack-size 2", "+OK\r\n"),
    ("RPUSH m a b", ":2\r\n"),
    ("OBJECT ENCODING m", "$9\r\nquicklist\r\n"),
    ("RPUSH m c", ":3\r\n"),
    ("OBJECT ENCODING m", "$9\r\nquicklist\r\n"),
    ("LPOP m 2", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ("OBJECT ENCODING m", "$9\r\nquicklist\r\n"),
    ("CONFIG SET list-max-ziplist-size -1", "+OK\r\n"),
    (
        "CONFIG GET list-max-listpack-size",
        "*2\r\n$22\r\nlist-max-listpack-size\r\n$2\r\n-1\r\n",
    ),
    ("RPUSH n 1 2 3 4 5", ":5\r\n"),
    ("OBJECT ENCODING n", "$9\r\nquicklist\r\n"),
    ("CONFIG SET list-max-listpack-size -2", "+OK\r\n"),
];

#[test]
fn small_lists_are_listpacks_from_7_2_on() {
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", LIST_7_4);
    assert_cases_7_0(LIST_7_0);
}

/// What a client blocked in `XREADGROUP` gets when its stream is deleted, replaced, loses its
/// group or is flushed, as each release answers (recorded from two connections on each server).
const LOST_STREAM: &[(&str, &str, &str)] = &[
    (
        "DEL mystream",
        "-NOGROUP No such key 'mystream' or consumer group 'mygroup' in XREADGROUP with GROUP option\r\n",
        "-UNBLOCKED the stream key no longer exists\r\n",
    ),
    (
        "SET mystream x",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        "-UNBLOCKED the stream key no longer exists\r\n",
    ),
    (
        "XGROUP DESTROY mystream mygroup",
        "-NOGROUP No such key 'mystream' or consumer group 'mygroup' in XREADGROUP with GROUP option\r\n",
        "-NOGROUP the consumer group this client was blocked on no longer exists\r\n",
    ),
    (
        "FLUSHALL",
        "-NOGROUP No such key 'mystream' or consumer group 'mygroup' in XREADGROUP with GROUP option\r\n",
        "-UNBLOCKED the stream key no longer exists\r\n",
    ),
];

#[test]
fn a_blocked_xreadgroup_whose_stream_is_gone_fails_as_a_fresh_call_from_7_2_on() {
    for (action, on_7_4, on_7_0) in LOST_STREAM {
        for (version, want) in [(Version::V7_4, on_7_4), (Version::V7_0, on_7_0)] {
            let mut e = engine(version);
            let (reader, writer) = (e.connect(), e.connect());
            e.execute(writer, &argv("XGROUP CREATE mystream mygroup $ MKSTREAM"));
            let read = "XREADGROUP GROUP mygroup Alice BLOCK 0 STREAMS mystream >";
            assert_eq!(e.execute_or_block(reader, &argv(read)), None, "{version}");
            e.execute(writer, &argv(action));
            let reply = e
                .take_unblocked_reply(reader)
                .unwrap_or_else(|| panic!("{version}: {action} unblocks the reader"));
            let mut got = bytes::BytesMut::new();
            fake_redis::resp::encode(&reply, 2, &mut got);
            assert_eq!(String::from_utf8_lossy(&got), **want, "{version}: {action}");
        }
    }
}

/// Runs `cases` on a fresh engine of `version` whose clock stands still: replies that hold a
/// time a real server would give a moment later, with their shape recorded from that server.
fn assert_fake(version: Version, cases: &[(&str, &str)]) {
    let mut e = engine(version);
    let c = e.connect();
    for (command, want) in cases {
        let reply = e.execute(c, &argv(command));
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&reply, 2, &mut got);
        assert_eq!(String::from_utf8_lossy(&got), *want, "{version}: {command}");
    }
}

/// From Redis 7.2 `XREADGROUP` makes its consumer even when it reads nothing, and `XINFO
/// CONSUMERS` tells how long ago a consumer was last given an entry (`inactive`, -1 for never);
/// Redis 7.0 makes no consumer then and has no such field. The times are 0 here: the engine's
/// clock stands still (redis-server 7.4.1 answered `idle` and `inactive` with the milliseconds
/// its client had waited).
const CONSUMERS_7_4: &[(&str, &str)] = &[
    ("XGROUP CREATE mystream mygroup $ MKSTREAM", "+OK\r\n"),
    (
        "XREADGROUP GROUP mygroup Alice COUNT 1 STREAMS mystream >",
        "*-1\r\n",
    ),
    (
        "XINFO CONSUMERS mystream mygroup",
        "*1\r\n*8\r\n$4\r\nname\r\n$5\r\nAlice\r\n$7\r\npending\r\n:0\r\n$4\r\nidle\r\n:0\r\n$8\r\ninactive\r\n:-1\r\n",
    ),
    ("XADD mystream 5-0 f v", "$3\r\n5-0\r\n"),
    (
        "XREADGROUP GROUP mygroup Alice COUNT 1 STREAMS mystream >",
        "*1\r\n*2\r\n$8\r\nmystream\r\n*1\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
    ),
    (
        "XINFO CONSUMERS mystream mygroup",
        "*1\r\n*8\r\n$4\r\nname\r\n$5\r\nAlice\r\n$7\r\npending\r\n:1\r\n$4\r\nidle\r\n:0\r\n$8\r\ninactive\r\n:0\r\n",
    ),
];

const CONSUMERS_7_0: &[(&str, &str)] = &[
    ("XGROUP CREATE mystream mygroup $ MKSTREAM", "+OK\r\n"),
    (
        "XREADGROUP GROUP mygroup Alice COUNT 1 STREAMS mystream >",
        "*-1\r\n",
    ),
    ("XINFO CONSUMERS mystream mygroup", "*0\r\n"),
    ("XADD mystream 5-0 f v", "$3\r\n5-0\r\n"),
    (
        "XREADGROUP GROUP mygroup Alice COUNT 1 STREAMS mystream >",
        "*1\r\n*2\r\n$8\r\nmystream\r\n*1\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
    ),
    (
        "XINFO CONSUMERS mystream mygroup",
        "*1\r\n*6\r\n$4\r\nname\r\n$5\r\nAlice\r\n$7\r\npending\r\n:1\r\n$4\r\nidle\r\n:0\r\n",
    ),
];

#[test]
fn xinfo_consumers_tells_inactive_time_from_7_2_on() {
    assert_fake(Version::V7_4, CONSUMERS_7_4);
    assert_fake(Version::V7_0, CONSUMERS_7_0);
}
