//! Keyspace notifications, every event of every family, compared byte for byte with a
//! redis-server of the test's own: each case runs on both after `FLUSHALL` with its
//! `notify-keyspace-events` flags, a `PSUBSCRIBE __key*__:*` connection listens on each, and after
//! every command the messages it caused (everything the subscriber receives before its own
//! `PING`'s answer) must be the same bytes, in RESP2 and in RESP3; so must the reads it counted
//! (`INFO stats`'s `keyspace_hits` and `keyspace_misses`, read and reset after every command), of
//! which a `keymiss` event announces the misses.
//!
//! A line is a command run by connection A, which waits for its reply. `B <command>` runs it on
//! connection B; `&<command>` sends it on A without waiting (a blocking command), and the next `B`
//! line wakes it; `SLEEP <ms>` lets time pass (moves the fake's clock); `$DUMP` in an argument is
//! the last `DUMP` reply of that side. A double-quoted word is one argument.

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::{Frame, ReplyParser, encode};
use fake_redis::{ClientId, Engine, ManualClock};
use support::OwnServer;
use support::raw::Real;

/// One case: the flags, then its lines.
type Case = (&'static str, &'static [&'static str]);

const STRINGS: &[&str] = &[
    "SET s v",
    "SETNX s2 v",
    "SETNX s2 v",
    "SETEX s3 100 v",
    "PSETEX s4 100000 v",
    "MSET m1 a m2 b",
    "MSETNX m3 a m4 b",
    "MSETNX m3 a m5 b",
    "GETSET s v2",
    "GETDEL s2",
    "GETDEL s2",
    "GETEX s3 EX 200",
    "GETEX s3 PERSIST",
    "GETEX s3",
    "SET s5 v GET",
    "SET s6 v NX GET",
    "SET s6 v XX EX 10",
    "SET s6 v KEEPTTL",
    "APPEND s7 x",
    "SETRANGE s8 0 x",
    "SETRANGE s8 0 \"\"",
    "SETRANGE s9 0 \"\"",
    "INCR n",
    "INCRBY n 2",
    "DECR n",
    "DECRBY n 2",
    "INCRBYFLOAT n 1.5",
];

const BITMAPS_AND_HLL: &[&str] = &[
    "SETBIT b 7 1",
    "SETBIT b 7 1",
    "SETBIT b 7 0",
    "BITOP AND b2 b b",
    "BITOP OR b3 nosuch1 nosuch2",
    "BITOP NOT b2 nosuch",
    "BITFIELD bf SET u8 0 255",
    "BITFIELD bf GET u8 0",
    "BITFIELD bf INCRBY u8 0 1",
    "BITFIELD bf OVERFLOW FAIL INCRBY u8 0 300",
    "BITFIELD_RO bf GET u8 0",
    "PFADD h1 a b",
    "PFADD h1 a",
    "PFADD h2",
    "PFADD h2",
    "PFMERGE h3 h1 h2",
    "PFMERGE h3",
    "PFCOUNT h1 h2",
    "PFCOUNT h1",
];

const KEYS: &[&str] = &[
    "SET s v",
    "EXPIRE s 100",
    "EXPIRE s 100 NX",
    "PEXPIRE s 100000",
    "EXPIREAT s 4000000000",
    "PEXPIREAT s 4000000000000",
    "PERSIST s",
    "PERSIST s",
    "EXPIRE s -1",
    "MSET m1 a m2 b m3 c",
    "RENAME m1 r1",
    "RENAME r1 r1",
    "RENAMENX r1 m2",
    "RENAMENX r1 r2",
    "RENAME r2 m2",
    "COPY m2 c1",
    "COPY m2 c1",
    "COPY m2 c1 REPLACE",
    "COPY m2 c2 DB 3",
    "MOVE c1 1",
    "MOVE m3 1",
    "DEL c1 m2 nosuch",
    "SET u v",
    "UNLINK u m3 nosuch",
    "SET t v",
    "TOUCH t",
    "EXPIRE t 0",
    "SET p v",
    "PEXPIREAT p 1",
    "SET d v",
    "DUMP d",
    "RESTORE d2 0 $DUMP",
    "RESTORE d 0 $DUMP REPLACE",
    "RESTORE d3 100000 $DUMP",
    "SWAPDB 0 1",
    "SWAPDB 0 1",
];

const LISTS: &[&str] = &[
    "RPUSH l a b c d e f",
    "LPUSHX l z",
    "RPUSHX l y",
    "LPUSHX nol z",
    "LPOP l",
    "RPOP l",
    "LPOP l 2",
    "RPOP l 0",
    "LPOP nol",
    "LINSERT l BEFORE c q",
    "LINSERT l BEFORE nosuchpivot q",
    "LINSERT nol BEFORE a q",
    "LSET l 0 w",
    "LTRIM l 0 -1",
    "LTRIM l 1 -1",
    "LREM l 1 nothere",
    "LREM l 1 q",
    "RPOPLPUSH l l2",
    "LMOVE l l2 LEFT RIGHT",
    "LMOVE l l LEFT LEFT",
    "LMOVE nol l LEFT LEFT",
    "LMPOP 1 l LEFT COUNT 10",
    "LMPOP 2 nol l2 RIGHT",
    "BLPOP l2 1",
    "RPUSH l3 a",
    "BLMOVE l3 l4 LEFT LEFT 1",
    "BRPOPLPUSH l4 l5 1",
    "BLMPOP 1 1 l5 LEFT",
    "RPUSH l6 a b",
    "LTRIM l6 5 10",
    "RPUSH l7 a",
    "LREM l7 0 a",
    "RPUSH l8 a",
    "RPOP l8 5",
];

const SETS: &[&str] = &[
    "SADD st a b c",
    "SADD st a",
    "SREM st a nothere",
    "SREM st nothere",
    "SPOP st",
    "SPOP st 5",
    "SADD st a b c d",
    "SMOVE st st2 a",
    "SMOVE st st2 nothere",
    "SMOVE st st st",
    "SMOVE st st b",
    "SADD st3 b c x",
    "SINTERSTORE d1 st st3",
    "SUNIONSTORE d2 st st3",
    "SDIFFSTORE d3 st st3",
    "SINTERSTORE d1 st nosuch",
    "SUNIONSTORE d4 nosuch nosuch2",
    "SDIFFSTORE d2 nosuch st",
    "SADD st5 a",
    "SMOVE st5 st6 a",
    "SADD st7 a b",
    "SPOP st7 0",
    "SPOP st7 1",
    "SPOP st7 1",
    "SADD st8 a",
    "SREM st8 a",
];

const ZSETS: &[&str] = &[
    "ZADD z 1 a 2 b 3 c",
    "ZADD z 1 a",
    "ZADD z XX 5 nothere",
    "ZADD nz XX 5 nothere",
    "ZADD z NX 5 a",
    "ZADD z INCR 1 a",
    "ZADD z NX INCR 1 a",
    "ZADD z CH 9 a",
    "ZADD z GT 1 a",
    "ZINCRBY z 1 b",
    "ZINCRBY z2 1 b",
    "ZREM z nothere",
    "ZREM z a",
    "ZREMRANGEBYSCORE z 100 200",
    "ZREMRANGEBYSCORE z 0 2.5",
    "ZADD z 1 a 2 b 4 d",
    "ZREMRANGEBYRANK z 0 0",
    "ZREMRANGEBYRANK z 10 20",
    "ZADD z 0 l1 0 l2",
    "ZREMRANGEBYLEX z [l1 [l1",
    "ZREMRANGEBYLEX z [x [y",
    "ZPOPMIN z",
    "ZPOPMAX z",
    "ZPOPMIN z 0",
    "ZPOPMIN nz",
    "ZPOPMIN z 10",
    "ZADD z 1 a 2 b",
    "ZMPOP 1 z MIN",
    "BZPOPMIN z 1",
    "ZADD z 1 a",
    "BZMPOP 1 1 z MAX",
    "ZADD za 1 a 2 b",
    "ZADD zb 2 b 3 c",
    "ZUNIONSTORE zu 2 za zb",
    "ZINTERSTORE zi 2 za zb",
    "ZDIFFSTORE zd 2 za zb",
    "ZRANGESTORE zr za 0 -1",
    "ZINTERSTORE zi 2 za nosuch",
    "ZUNIONSTORE zu2 2 nosuch nosuch2",
    "ZRANGESTORE zr za 5 10",
    "ZDIFFSTORE zd 1 nosuch",
    "ZADD z9 1 a",
    "ZREM z9 a",
    "ZADD z10 1 a 2 b",
    "ZREMRANGEBYSCORE z10 -inf +inf",
    "ZADD z11 0 a",
    "ZREMRANGEBYLEX z11 - +",
];

const HASHES: &[&str] = &[
    "HSET h a 1",
    "HMSET h b 2",
    "HSETNX h b 3",
    "HSETNX h c 3",
    "HDEL h nothere",
    "HINCRBY h n 1",
    "HINCRBYFLOAT h f 1.5",
    "HDEL h a b c n f",
];

const SORT_GEO: &[&str] = &[
    "RPUSH sl 3 1 2",
    "SORT sl STORE so",
    "SORT sl STORE so",
    "SORT nosuch STORE so",
    "SORT sl LIMIT 0 0 STORE so2",
    "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD g 13.361389 38.115556 Palermo",
    "GEOADD g XX 13.361389 38.115556 Nope",
    "GEOADD g CH 13.361389 38.115557 Palermo",
    "GEOSEARCHSTORE gs g FROMLONLAT 15 37 BYRADIUS 200 km",
    "GEOSEARCHSTORE gs g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
    "GEOSEARCHSTORE gs g FROMLONLAT 0 0 BYRADIUS 1 km",
    "GEORADIUS g 15 37 200 km STORE gr",
    "GEORADIUS g 15 37 200 km STOREDIST grd",
    "GEORADIUSBYMEMBER g Palermo 1 km STORE gr",
    "GEOSEARCHSTORE gn nosuch FROMLONLAT 0 0 BYRADIUS 1 km",
    "ZREM g Palermo Catania",
];

const STREAMS: &[&str] = &[
    "XADD x 1-1 a 1",
    "XADD x NOMKSTREAM 2-1 a 1",
    "XADD nox NOMKSTREAM 2-1 a 1",
    "XADD x MAXLEN 1 3-1 a 1",
    "XADD x 4-1 a 1",
    "XDEL x 1-1",
    "XDEL x 4-1",
    "XTRIM x MAXLEN 10",
    "XTRIM x MAXLEN 0",
    "XADD x 5-1 a 1",
    "XGROUP CREATE x g 0",
    "XGROUP CREATE x2 g 0 MKSTREAM",
    "XGROUP SETID x g 0",
    "XGROUP CREATECONSUMER x g c1",
    "XGROUP CREATECONSUMER x g c1",
    "XREADGROUP GROUP g c2 COUNT 1 STREAMS x >",
    "XREADGROUP GROUP g c2 COUNT 1 STREAMS x >",
    "XACK x g 5-1",
    "XCLAIM x g c3 0 5-1",
    "XAUTOCLAIM x g c4 0 0",
    "XGROUP DELCONSUMER x g c1",
    "XGROUP DESTROY x g",
    "XGROUP DESTROY x g",
    "XSETID x 10-1",
    "XADD x 11-1 a 1",
    "XGROUP CREATE x g2 $",
    "XREADGROUP GROUP g2 c5 STREAMS x 0",
    "XADD x 12-1 b 2",
    "XREADGROUP GROUP g2 c5 STREAMS x >",
    "XCLAIM x g2 c6 0 12-1",
    "XAUTOCLAIM x g2 c7 0 0",
];

/// Blocked pops served by another connection's push.
const BLOCKED: &[&str] = &[
    "&BLPOP bl 0",
    "B RPUSH bl x",
    "&BRPOP bl 0",
    "B RPUSH bl x y",
    "B DEL bl",
    "&BLMOVE bl bl2 LEFT RIGHT 0",
    "B LPUSH bl z",
    "&BZPOPMIN bz 0",
    "B ZADD bz 1 a",
    "&BZMPOP 0 1 bz MAX COUNT 5",
    "B ZADD bz 1 a 2 b",
    "&BLMPOP 0 1 bl3 RIGHT COUNT 2",
    "B RPUSH bl3 a b c",
    "&XREAD BLOCK 0 STREAMS bx $",
    "B XADD bx 1-1 f v",
    "B XGROUP CREATE bx g $",
    "&XREADGROUP GROUP g c BLOCK 0 STREAMS bx >",
    "B XADD bx 2-1 f v",
];

/// Scripts and transactions publish each call's events as it runs.
const SCRIPTS_AND_MULTI: &[&str] = &[
    "EVAL \"redis.call('set', KEYS[1], 'v') redis.call('rpush', KEYS[2], 'a') redis.call('lpop', KEYS[2]) return 1\" 2 k l",
    "MULTI",
    "SET a 1",
    "INCR a",
    "SADD s m",
    "DEL a s",
    "EXEC",
    "FUNCTION LOAD REPLACE \"#!lua name=lib\nredis.register_function('f', function(keys) return redis.call('zadd', keys[1], 1, 'm') end)\"",
    "FCALL f 1 fz",
];

/// Expiry, lazy or by the active cycle (one key at a time: which of several keys Redis's cycle
/// samples first is its own random draw), before the command's own events and `new`.
const EXPIRY: &[&str] = &[
    "SET k v PX 50",
    "SLEEP 300",
    "SET k v",
    "SET k2 v PX 50",
    "SLEEP 300",
    "RPUSH k2 x",
    "RPUSH k3 a",
    "PEXPIRE k3 50",
    "SLEEP 300",
    "LPUSH k3 b",
    "HSET k4 f v",
    "PEXPIRE k4 50",
    "SLEEP 300",
    "GET k4",
];

/// `new` alone: a key a script creates and deletes was still new, though no other class is on.
const NEW_ONLY: &[&str] = &[
    "EVAL \"redis.call('set', KEYS[1], 'v') redis.call('del', KEYS[1])\" 1 tmp",
    "RPUSH l a",
    "LPOP l",
    "SET s v PX 50",
    "SLEEP 300",
    "SET s v",
];

/// Commands that publish nothing, whatever the flags.
const SILENT: &[&str] = &[
    "SET k v",
    "GET k",
    "EXISTS k",
    "TYPE k",
    "TTL k",
    "STRLEN k",
    "GETRANGE k 0 -1",
    "SUBSTR k 0 -1",
    "OBJECT ENCODING k",
    "DBSIZE",
    "SETNX k w",
    "LPUSHX nol a",
    "HSETNX k f v",
    "RENAMENX nosuch k2",
    "FLUSHDB",
    "SET k v",
    "FLUSHALL",
];

/// Reads: a hit or a miss counts in `INFO stats`, and a miss publishes `keymiss` (class `m`),
/// from read-only commands and the writes Redis makes read (`GETSET`, `SET … GET`, `GETDEL`,
/// `PFMERGE`, the sources of `…STORE`), never from a plain write.
const READS: &[&str] = &[
    "GET m1",
    "EXISTS m2 m2",
    "TYPE m3",
    "TTL m4",
    "PTTL m5",
    "STRLEN m6",
    "HGET m7 f",
    "HGETALL m8",
    "LRANGE m9 0 -1",
    "SMEMBERS m10",
    "ZRANGE m11 0 -1",
    "DUMP m12",
    "OBJECT ENCODING m13",
    "INCR m14",
    "SET m15 v XX",
    "DEL m16",
    "EXPIRE m17 10",
    "GETDEL m18",
    "GETEX m19",
    "APPEND m20 x",
    "SINTERSTORE m21 m22 m23",
    "LPOP m24",
    "HDEL m25 f",
    "COPY m26 m27",
    "SMOVE m28 s x",
    "GETRANGE m29 0 1",
    "MGET m30 m31",
    "HEXISTS m32 f",
    "SISMEMBER m33 x",
    "ZSCORE m34 x",
    "LLEN m35",
    "SCARD m36",
    "HLEN m37",
    "TOUCH m39",
    "RPOPLPUSH m41 m42",
    "SUNION m45",
    "ZUNIONSTORE m46 1 m47",
    "SORT m48",
    "SORT m49 STORE m50",
    "PFCOUNT m51",
    "XRANGE m52 - +",
    "XLEN m53",
    "SETRANGE m54 0 x",
    "GETSET m55 v",
    "SET m56 v GET",
    "BITCOUNT m57",
    "GETBIT m58 0",
    "SETBIT m59 0 0",
    "BITFIELD m60 GET u8 0",
    "BITFIELD m61 SET u8 0 1",
    "BITFIELD_RO m62 GET u8 0",
    "BITOP AND m63 m64",
    "LINDEX m65 0",
    "ZRANK m66 x",
    "GEOPOS m67 a",
    "MEMORY USAGE m68",
    "SETNX m69 v",
    "PEXPIRETIME m70",
    "SRANDMEMBER m71",
    "SPOP m72",
    "LPOS m73 a",
    "HRANDFIELD m74",
    "ZRANDMEMBER m75",
    "SINTERCARD 1 m76",
    "LCS m77 m78",
    "SUBSTR m79 0 1",
    "ZCOUNT m80 0 1",
    "HMGET m81 f",
    "PFADD m82 a",
    "PFMERGE m83 m84",
    "GEODIST m85 a b",
    "EVAL \"return redis.call('get', KEYS[1])\" 1 m86",
    "ZRANGESTORE m87 m88 0 1",
    "GEOSEARCHSTORE m89 m90 FROMLONLAT 0 0 BYRADIUS 1 m",
    "GEORADIUS m91 0 0 1 m STORE m92",
    "HSCAN m93 0",
    "XACK m94 g 1-1",
    "XPENDING m95 g",
    "SORT_RO m96",
    "LMOVE m97 m98 LEFT LEFT",
    "LMPOP 1 m99 LEFT",
    "MULTI",
    "GET m100",
    "SET m101 v",
    "EXEC",
    "SET hit v",
    "GET hit",
    "EXISTS hit m102",
    "TYPE hit",
    "OBJECT ENCODING hit",
    "SET hit w GET",
    "GETSET hit v",
    "APPEND hit x",
    "COPY hit hit2",
    "SUNIONSTORE hit3 hit",
    "RPUSH hl a",
    "LRANGE hl 0 -1",
    "LPOP hl",
    "SET k v PX 50",
    "SLEEP 300",
    "GET k",
];

const CASES: &[Case] = &[
    ("KEA", STRINGS),
    ("KEA", BITMAPS_AND_HLL),
    ("KEA", KEYS),
    ("KEA", LISTS),
    ("KEA", SETS),
    ("KEA", ZSETS),
    ("KEA", HASHES),
    ("KEA", SORT_GEO),
    ("KEA", STREAMS),
    ("KEA", BLOCKED),
    ("KEA", SCRIPTS_AND_MULTI),
    ("KEA", EXPIRY),
    ("KEA", SILENT),
    ("KEA", READS),
    // `keymiss` (`m`, not part of `A` either) with every family, and alone.
    ("KEAm", STRINGS),
    ("KEAm", BITMAPS_AND_HLL),
    ("KEAm", KEYS),
    ("KEAm", LISTS),
    ("KEAm", SETS),
    ("KEAm", ZSETS),
    ("KEAm", HASHES),
    ("KEAm", SORT_GEO),
    ("KEAm", STREAMS),
    ("KEAm", BLOCKED),
    ("KEAm", SCRIPTS_AND_MULTI),
    ("KEAm", EXPIRY),
    ("KEAm", READS),
    ("Km", READS),
    ("Em", SILENT),
    // `new` (not part of `A`) with each family, and alone.
    ("KEAn", STRINGS),
    ("KEAn", BITMAPS_AND_HLL),
    ("KEAn", KEYS),
    ("KEAn", LISTS),
    ("KEAn", SETS),
    ("KEAn", ZSETS),
    ("KEAn", HASHES),
    ("KEAn", SORT_GEO),
    ("KEAn", STREAMS),
    ("KEAn", BLOCKED),
    ("KEAn", SCRIPTS_AND_MULTI),
    ("KEAn", EXPIRY),
    ("En", KEYS),
    ("Kn", NEW_ONLY),
    ("KEn", SCRIPTS_AND_MULTI),
    // One class on one kind of channel: only its events.
    ("Kl", LISTS),
    ("Es", SETS),
    ("Kz", ZSETS),
    ("Et", STREAMS),
    ("K$", BITMAPS_AND_HLL),
    ("Eg", KEYS),
    ("Kx", EXPIRY),
    ("Eh", HASHES),
];

/// Splits a line into arguments: words, or double-quoted strings (with `\n` for a newline).
fn words(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut word = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' if chars.peek() == Some(&'n') => {
                        chars.next();
                        word.push('\n');
                    }
                    c => word.push(c),
                }
            }
            out.push(word.into_bytes());
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                word.push(c);
                chars.next();
            }
            out.push(word.into_bytes());
        }
    }
    out
}

/// What a step is.
enum Step {
    /// A's command, waited for.
    A(Vec<Vec<u8>>),
    /// B's command, waited for (it may wake A).
    B(Vec<Vec<u8>>),
    /// A's blocking command, sent.
    Blocking(Vec<Vec<u8>>),
    Sleep(u64),
}

fn step(line: &str) -> Step {
    if let Some(ms) = line.strip_prefix("SLEEP ") {
        Step::Sleep(ms.parse().unwrap())
    } else if let Some(rest) = line.strip_prefix("B ") {
        Step::B(words(rest))
    } else if let Some(rest) = line.strip_prefix('&') {
        Step::Blocking(words(rest))
    } else {
        Step::A(words(line))
    }
}

fn with_dump(argv: &[Vec<u8>], dump: &[u8]) -> Vec<Vec<u8>> {
    argv.iter()
        .map(|a| {
            if a == b"$DUMP" {
                dump.to_vec()
            } else {
                a.clone()
            }
        })
        .collect()
}

fn bulk(reply: &[u8]) -> Vec<u8> {
    let mut buf = BytesMut::from(reply);
    match ReplyParser::new().parse(&mut buf).unwrap() {
        Some(Frame::Bulk(b)) => b.to_vec(),
        other => panic!("DUMP replied {other:?}"),
    }
}

/// The messages of every step of every case on a redis-server of the test's own, as bytes.
fn real_messages(protocol: u8) -> Vec<Vec<u8>> {
    let server = OwnServer::start();
    let (mut a, mut b, mut sub) = (
        Real::connect(server.port),
        Real::connect(server.port),
        Real::connect(server.port),
    );
    let pong: &[u8] = if protocol == 3 {
        sub.call(&[b"HELLO", b"3"]);
        b"+PONG\r\n"
    } else {
        b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    };
    sub.call(&[b"PSUBSCRIBE", b"__key*__:*"]);
    let mut out = Vec::new();
    for (flags, lines) in CASES {
        a.call(&[b"FLUSHALL"]);
        a.call(&[b"SELECT", b"0"]);
        a.call(&[
            b"CONFIG",
            b"SET",
            b"notify-keyspace-events",
            flags.as_bytes(),
        ]);
        a.call(&[b"CONFIG", b"RESETSTAT"]);
        let mut dump = Vec::new();
        let mut blocked = false;
        for line in *lines {
            let run = |conn: &mut Real, argv: &[Vec<u8>]| {
                let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                conn.call(&argv)
            };
            match step(line) {
                Step::Sleep(ms) => {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    continue;
                }
                Step::A(argv) => {
                    let argv = with_dump(&argv, &dump);
                    let reply = run(&mut a, &argv);
                    // A DUMP of a missing key (a read that misses) keeps the last payload.
                    if argv[0].eq_ignore_ascii_case(b"DUMP") && !reply.starts_with(b"$-1") {
                        dump = bulk(&reply);
                    }
                }
                Step::Blocking(argv) => {
                    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                    a.send(&argv);
                    wait_until_blocked(&mut b);
                    blocked = true;
                }
                Step::B(argv) => {
                    run(&mut b, &argv);
                    if std::mem::take(&mut blocked) {
                        a.reply();
                    }
                }
            }
            sub.send(&[b"PING"]);
            let mut step = sub.read_until(pong);
            // B, as A may be blocked; neither command reads a key.
            step.extend(keyspace_stats(&bulk(&b.call(&[b"INFO", b"stats"]))));
            b.call(&[b"CONFIG", b"RESETSTAT"]);
            out.push(step);
        }
    }
    out
}

/// `keyspace_hits` and `keyspace_misses` of an `INFO stats` reply: the step's reads.
fn keyspace_stats(info: &[u8]) -> Vec<u8> {
    let info = String::from_utf8_lossy(info);
    let lines: Vec<&str> = info
        .lines()
        .filter(|l| l.starts_with("keyspace_hits:") || l.starts_with("keyspace_misses:"))
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "INFO stats without its keyspace counters:\n{info}"
    );
    format!(" [{}]", lines.join(" ")).into_bytes()
}

fn wait_until_blocked(probe: &mut Real) {
    for _ in 0..2400 {
        let info = probe.call(&[b"INFO", b"clients"]);
        if String::from_utf8_lossy(&info).contains("blocked_clients:1\r\n") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the blocking command never blocked");
}

/// The messages of every step of every case on the fake, on a manual clock, as bytes.
fn fake_messages(protocol: u8) -> Vec<Vec<u8>> {
    let clock = ManualClock::default();
    let mut engine = Engine::new(clock.clone());
    let (a, b, sub) = (engine.connect(), engine.connect(), engine.connect());
    let run = |engine: &mut Engine, client: ClientId, argv: &[Vec<u8>]| {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        engine.execute(client, &argv)
    };
    if protocol == 3 {
        run(&mut engine, sub, &[b"HELLO".to_vec(), b"3".to_vec()]);
    }
    run(&mut engine, sub, &words("PSUBSCRIBE __key*__:*"));
    engine.drain_outbox(sub);
    let mut out = Vec::new();
    for (flags, lines) in CASES {
        run(&mut engine, a, &words("FLUSHALL"));
        run(&mut engine, a, &words("SELECT 0"));
        let config = format!("CONFIG SET notify-keyspace-events {flags}");
        run(&mut engine, a, &words(&config));
        run(&mut engine, a, &words("CONFIG RESETSTAT"));
        let mut dump = Vec::new();
        for line in *lines {
            match step(line) {
                Step::Sleep(ms) => {
                    clock.advance(ms as i64);
                    continue;
                }
                Step::A(argv) => {
                    let argv = with_dump(&argv, &dump);
                    let reply = run(&mut engine, a, &argv);
                    if argv[0].eq_ignore_ascii_case(b"DUMP") {
                        match reply {
                            Frame::Bulk(payload) => dump = payload.to_vec(),
                            Frame::Null => {}
                            reply => panic!("DUMP replied {reply:?}"),
                        }
                    }
                }
                Step::Blocking(argv) => {
                    let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
                    assert!(
                        engine.execute_or_block(a, &argv).is_none(),
                        "{line} did not block"
                    );
                }
                Step::B(argv) => {
                    run(&mut engine, b, &argv);
                    engine.take_unblocked_reply(a);
                }
            }
            let mut bytes = BytesMut::new();
            for frame in engine.drain_outbox(sub) {
                encode(&frame, protocol, &mut bytes);
            }
            // A verbatim string: the engine keeps a reply's RESP3 shape, RESP2 sends it as bulk.
            let info = match run(&mut engine, b, &words("INFO stats")) {
                Frame::Verbatim { text, .. } | Frame::Bulk(text) => text,
                other => panic!("INFO stats replied {other:?}"),
            };
            bytes.extend_from_slice(&keyspace_stats(&info));
            run(&mut engine, b, &words("CONFIG RESETSTAT"));
            out.push(bytes.to_vec());
        }
    }
    out
}

fn assert_same_messages(protocol: u8) {
    let real = real_messages(protocol);
    let fake = fake_messages(protocol);
    let lines = CASES
        .iter()
        .flat_map(|(flags, lines)| lines.iter().map(move |l| (flags, l)))
        .filter(|(_, l)| !l.starts_with("SLEEP "));
    let mismatches: Vec<String> = lines
        .zip(real.iter().zip(&fake))
        .filter(|(_, (r, f))| r != f)
        .map(|((flags, line), (r, f))| {
            format!(
                "[{flags}] {line}\n   redis: {:?}\n    fake: {:?}",
                String::from_utf8_lossy(r),
                String::from_utf8_lossy(f)
            )
        })
        .collect();
    assert_eq!(real.len(), fake.len());
    assert!(
        mismatches.is_empty(),
        "{} of {} commands published other messages:\n{}",
        mismatches.len(),
        real.len(),
        mismatches.join("\n")
    );
    // The table is not vacuous: most commands publish something (more than their reads), and
    // many read.
    let published = real.iter().filter(|m| !m.starts_with(b" [")).count();
    assert!(published > real.len() / 2);
    let read = real
        .iter()
        .filter(|m| !m.ends_with(b"hits:0 keyspace_misses:0]"))
        .count();
    assert!(
        read > real.len() / 4,
        "only {read} of {} steps read a key",
        real.len()
    );
}

#[test]
fn every_family_publishes_redis_s_events_resp2() {
    assert_same_messages(2);
}

#[test]
fn every_family_publishes_redis_s_events_resp3() {
    assert_same_messages(3);
}

/// The native twins of the lock's scripts read what their Lua bodies read: the same `keymiss`
/// events and keyspace counts, step by step, as the same bodies run by the embedded Lua (a body
/// with a trailing space is not a twin), whose every `redis.call` the table above checks against
/// Redis.
#[test]
fn the_lock_s_native_scripts_read_as_their_lua_bodies_do() {
    use lock_core::keys::{KeyLayout, Owner, RequestId};
    use lock_core::script::{ScriptCall, acquire, force_unlock, release, renew_batch};
    use lock_core::time::{Lease, Millis};

    let keys = KeyLayout::default().lock("orders");
    let (a, b) = (Owner::new("c0ffee", 1), Owner::new("c0ffee", 2));
    let lease = Lease::from_millis(30_000).expect("a positive lease");
    let calls: Vec<ScriptCall> = vec![
        release::call(&keys, &RequestId(1), lease, &a, Millis(10_000)),
        acquire::call(&keys, &RequestId(2), lease, &a, Millis(10_000)),
        acquire::call(&keys, &RequestId(3), lease, &a, Millis(10_000)),
        acquire::call(&keys, &RequestId(4), lease, &b, Millis(10_000)),
        renew_batch::call(lease, [(&keys.lock, &a)]),
        release::call(&keys, &RequestId(5), lease, &a, Millis(10_000)),
        release::call(&keys, &RequestId(6), lease, &b, Millis(10_000)),
        release::call(&keys, &RequestId(7), lease, &a, Millis(10_000)),
        force_unlock::call(&keys),
        renew_batch::call(lease, [(&keys.lock, &a)]),
    ];
    let steps = |lua: bool| {
        let mut engine = lock_core::fake::engine(ManualClock::default());
        let (c, sub) = (engine.connect(), engine.connect());
        engine.execute(c, &argv_of("CONFIG SET notify-keyspace-events KEAm"));
        engine.execute(sub, &argv_of("PSUBSCRIBE __key*__:*"));
        engine.drain_outbox(sub);
        let mut out = Vec::new();
        for call in &calls {
            let body = if lua {
                format!("{} ", call.script.body)
            } else {
                call.script.body.to_owned()
            };
            let mut argv = vec![Bytes::from_static(b"EVAL"), Bytes::from(body)];
            argv.push(Bytes::from(call.keys.len().to_string()));
            argv.extend(call.keys.iter().cloned());
            argv.extend(call.args.iter().cloned());
            let reply = engine.execute(c, &argv);
            let info = match engine.execute(c, &argv_of("INFO stats")) {
                Frame::Verbatim { text, .. } | Frame::Bulk(text) => text,
                other => panic!("INFO stats replied {other:?}"),
            };
            engine.execute(c, &argv_of("CONFIG RESETSTAT"));
            out.push((
                call.script.name,
                reply,
                engine.drain_outbox(sub),
                String::from_utf8(keyspace_stats(&info)).unwrap(),
            ));
        }
        out
    };
    let (native, lua) = (steps(false), steps(true));
    assert_eq!(native, lua);
    // Not vacuous: the first release and the second owner's acquire read a missing latch.
    let misses = native
        .iter()
        .filter(|s| !s.3.ends_with("misses:0]"))
        .count();
    assert!(misses >= 2, "{native:?}");
}

fn argv_of(line: &str) -> Vec<Bytes> {
    words(line).into_iter().map(Bytes::from).collect()
}
