//! Random command sequences, run on a redis-server of the test's own and on the fake (through
//! `FakeConnection` on `SystemClock`, the same client code), reply for reply.
//!
//! Invariant: from an empty server (each side starts from `FLUSHALL` and `SCRIPT FLUSH` of its
//! own server), every sequence of supported commands gets the same replies from the fake as from
//! Redis 7.0, under the named comparators of `support::comparator` and nothing looser. Keys,
//! fields and values come from tiny alphabets so that types collide (WRONGTYPE), keys go missing,
//! TTLs (5 s and more, or 0 and less) and NX/XX/GT/LT meet each other, integers and floats
//! overflow, lock-core's scripts run by `EVAL` and `EVALSHA` on the same keys, transactions queue
//! errors, `SELECT` moves between databases, and ACL rules given to two users are tried with
//! `ACL DRYRUN`. A failure shrinks to the shortest diverging
//! sequence. `HSCAN` and `ZSCAN` are exact over a listpack and compared pair by pair, in any
//! order, over a hash table (`SORT` converts a sorted set to one), whose order follows Redis's
//! per-process random hash seed.
//!
//! `CONFORMANCE_CASES` sets the number of sequences (default 5,000).

use crate::support;

use fake_redis::FakeConnection;
use lock_core::keys::{KeyLayout, Owner, RequestId};
use lock_core::script::{ScriptCall, acquire, force_unlock, release, renew_batch};
use lock_core::time::{Lease, Millis};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use redis::Value;
use redis::aio::ConnectionLike;
use std::cell::RefCell;
use std::time::Instant;
use support::{
    Compare, OwnServer, comparator, connect_real, connect_real_resp3, describe, fake_connection,
    sorted, sorted_page, sorted_pair_page,
};

const KEYS: &[&str] = &["k1", "k2", "k3"];
const FIELDS: &[&str] = &["f1", "f2"];
const VALUES: &[&str] = &["a", "b", "1", "-1", "1.5", "9223372036854775807", "x y"];
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-2",
    "9223372036854775807",
    "-9223372036854775808",
    "z",
];
const SCORES: &[&str] = &["1", "-2", "0.5", "2.5", "inf", "-inf", "x", "3"];
const BOUNDS: &[&str] = &["-inf", "+inf", "1", "(1", "2.5", "(0.5", "x"];
const LEX: &[&str] = &["-", "+", "[a", "(a", "[b", "(x y", "a"];
const TTLS: &[&str] = &["5", "100", "0", "-1", "abc"];

fn pick(words: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop::sample::select(words).prop_map(str::to_owned)
}

fn line(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// One plain command (no transaction, no script).
fn plain() -> impl Strategy<Value = Vec<String>> {
    let k = || pick(KEYS);
    let f = || pick(FIELDS);
    let v = || pick(VALUES);
    let n = || pick(INTS);
    let end = || pick(&["LEFT", "RIGHT", "UP"]);
    prop_oneof![
        // strings
        (
            k(),
            v(),
            pick(&["", "NX", "XX", "GET"]),
            pick(&["", "EX", "PX", "KEEPTTL"]),
            pick(TTLS)
        )
            .prop_map(|(k, v, c, e, t)| {
                let mut l = vec!["SET".into(), k, v];
                if !c.is_empty() {
                    l.push(c)
                }
                match e.as_str() {
                    "" => {}
                    "KEEPTTL" => l.push(e),
                    _ => {
                        l.push(e.clone());
                        l.push(if e == "PX" { format!("{t}000") } else { t })
                    }
                }
                l
            }),
        (
            pick(&[
                "GET", "INCR", "DECR", "STRLEN", "GETDEL", "TYPE", "EXISTS", "DEL", "TTL", "PTTL",
                "PERSIST", "LLEN", "SCARD", "SMEMBERS", "HGETALL", "HLEN"
            ]),
            k()
        )
            .prop_map(|(c, k)| vec![c, k]),
        (pick(&["INCRBY", "DECRBY", "APPEND"]), k(), n()).prop_map(|(c, k, n)| vec![c, k, n]),
        // Floats live on a key of their own, so their increments meet each other often; the
        // long double arithmetic itself has a random differential in `conformance_wire.rs`.
        pick(&["1.5", "-2", "0.25", "inf", "-inf", "x", "1e3"]).prop_map(|f| line(&[
            "INCRBYFLOAT",
            "fl",
            &f
        ])),
        pick(&["GET", "DEL", "TYPE", "LPOP", "SCARD", "HLEN"]).prop_map(|c| line(&[&c, "fl"])),
        (pick(&["LPUSH", "SADD"]), v()).prop_map(|(c, v)| line(&[&c, "fl", &v])),
        (
            pick(&["EXPIRE", "PEXPIRE"]),
            k(),
            pick(TTLS),
            // GT and LT against a relative deadline would race the clock between the two
            // servers (the same TTL set a millisecond apart); they go with EXPIREAT below.
            pick(&["", "NX", "XX"])
        )
            .prop_map(|(c, k, t, o)| {
                let t = if c == "PEXPIRE" && t.parse::<i64>().is_ok_and(|t| t > 0) {
                    format!("{t}000")
                } else {
                    t
                };
                let mut l = vec![c, k, t];
                if !o.is_empty() {
                    l.push(o)
                }
                l
            }),
        (
            pick(&["EXPIREAT", "PEXPIREAT"]),
            k(),
            pick(&["4102444800", "4102444900", "1", "-1", "x"]),
            pick(&["", "NX", "XX", "GT", "LT"])
        )
            .prop_map(|(c, k, t, o)| {
                let t = if c == "PEXPIREAT" && t.len() > 2 {
                    format!("{t}000")
                } else {
                    t
                };
                let mut l = vec![c, k, t];
                if !o.is_empty() {
                    l.push(o)
                }
                l
            }),
        (k(), k()).prop_map(|(a, b)| line(&["RENAME", &a, &b])),
        (k(), k()).prop_map(|(a, b)| line(&["EXISTS", &a, &b, &a])),
        // hashes
        (k(), f(), v()).prop_map(|(k, f, v)| line(&["HSET", &k, &f, &v])),
        (pick(&["HGET", "HDEL", "HEXISTS", "HSTRLEN"]), k(), f())
            .prop_map(|(c, k, f)| vec![c, k, f]),
        (k(), f(), n()).prop_map(|(k, f, n)| line(&["HINCRBY", &k, &f, &n])),
        // lists
        (
            pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]),
            k(),
            prop::collection::vec(v(), 1..3)
        )
            .prop_map(|(c, k, vs)| {
                let mut l = vec![c, k];
                l.extend(vs);
                l
            }),
        (
            pick(&["LPOP", "RPOP"]),
            k(),
            pick(&["", "0", "1", "2", "5", "-1"])
        )
            .prop_map(|(c, k, n)| {
                let mut l = vec![c, k];
                if !n.is_empty() {
                    l.push(n)
                }
                l
            }),
        (pick(&["LRANGE", "LTRIM"]), k(), n(), n()).prop_map(|(c, k, a, b)| vec![c, k, a, b]),
        (k(), n()).prop_map(|(k, i)| line(&["LINDEX", &k, &i])),
        (k(), n(), v()).prop_map(|(k, i, v)| line(&["LSET", &k, &i, &v])),
        (k(), n(), v()).prop_map(|(k, i, v)| line(&["LREM", &k, &i, &v])),
        (k(), pick(&["BEFORE", "AFTER"]), v(), v())
            .prop_map(|(k, w, p, v)| line(&["LINSERT", &k, &w, &p, &v])),
        (k(), v(), pick(&["", "RANK", "COUNT", "MAXLEN"]), n()).prop_map(|(k, v, o, n)| {
            let mut l = line(&["LPOS", &k, &v]);
            if !o.is_empty() {
                l.push(o);
                l.push(n)
            }
            l
        }),
        (k(), k(), end(), end()).prop_map(|(a, b, x, y)| line(&["LMOVE", &a, &b, &x, &y])),
        // sets
        (
            pick(&["SADD", "SREM", "SMISMEMBER"]),
            k(),
            prop::collection::vec(v(), 1..3)
        )
            .prop_map(|(c, k, vs)| {
                let mut l = vec![c, k];
                l.extend(vs);
                l
            }),
        (k(), v()).prop_map(|(k, v)| line(&["SISMEMBER", &k, &v])),
        (
            pick(&["SUNION", "SINTER", "SDIFF"]),
            prop::collection::vec(k(), 1..3)
        )
            .prop_map(|(c, ks)| {
                let mut l = vec![c];
                l.extend(ks);
                l
            }),
        (
            pick(&["SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE"]),
            k(),
            prop::collection::vec(k(), 1..3)
        )
            .prop_map(|(c, d, ks)| {
                let mut l = vec![c, d];
                l.extend(ks);
                l
            }),
        (k(), k(), v()).prop_map(|(a, b, v)| line(&["SMOVE", &a, &b, &v])),
        (
            pick(&["SPOP", "SRANDMEMBER"]),
            k(),
            pick(&["", "0", "1", "2", "5", "-3", "-1"])
        )
            .prop_map(|(c, k, n)| {
                let mut l = vec![c, k];
                if !n.is_empty() {
                    l.push(n)
                }
                l
            }),
        (k(), n(), n()).prop_map(|(k, a, b)| line(&["GETRANGE", &k, &a, &b])),
        (
            k(),
            pick(&["0", "3", "-1", "x", "9223372036854775807"]),
            pick(&["", "ab"])
        )
            .prop_map(|(k, o, v)| line(&["SETRANGE", &k, &o, &v])),
        // keyspace: copies, random keys, whole-keyspace and collection scans
        (k(), k(), pick(&["", "REPLACE", "DB 1", "DB 1 REPLACE"])).prop_map(|(a, b, o)| {
            let mut l = line(&["COPY", &a, &b]);
            l.extend(o.split_whitespace().map(str::to_owned));
            l
        }),
        Just(line(&["RANDOMKEY"])),
        pick(&["", "MATCH k*", "TYPE set", "TYPE string"]).prop_map(|o| {
            let mut l = line(&["SCAN", "0", "COUNT", "1000"]);
            l.extend(o.split_whitespace().map(str::to_owned));
            l
        }),
        (
            pick(&["HSCAN", "SSCAN", "ZSCAN"]),
            k(),
            pick(&["", "MATCH a*", "MATCH f?", "COUNT 0", "x"])
        )
            .prop_map(|(c, k, o)| {
                let mut l = vec![c, k, "0".to_owned()];
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        // sorted sets
        (
            k(),
            pick(&["", "NX", "XX", "GT", "LT", "CH", "INCR", "GT CH", "XX INCR"]),
            prop::collection::vec((pick(SCORES), v()), 1..3)
        )
            .prop_map(|(k, flags, pairs)| {
                let mut l = vec!["ZADD".to_owned(), k];
                l.extend(flags.split_whitespace().map(str::to_owned));
                for (s, m) in pairs {
                    l.push(s);
                    l.push(m);
                }
                l
            }),
        (k(), pick(SCORES), v()).prop_map(|(k, s, m)| line(&["ZINCRBY", &k, &s, &m])),
        (
            pick(&["ZREM", "ZMSCORE"]),
            k(),
            prop::collection::vec(v(), 1..3)
        )
            .prop_map(|(c, k, vs)| {
                let mut l = vec![c, k];
                l.extend(vs);
                l
            }),
        (pick(&["ZSCORE", "ZRANK", "ZREVRANK"]), k(), v()).prop_map(|(c, k, m)| vec![c, k, m]),
        (k()).prop_map(|k| line(&["ZCARD", &k])),
        (
            pick(&[
                "ZCOUNT",
                "ZRANGEBYSCORE",
                "ZREVRANGEBYSCORE",
                "ZREMRANGEBYSCORE"
            ]),
            k(),
            pick(BOUNDS),
            pick(BOUNDS),
            pick(&["", "WITHSCORES", "LIMIT 1 2", "LIMIT 0 -1"])
        )
            .prop_map(|(c, k, a, b, o)| {
                let mut l = vec![c.clone(), k, a, b];
                if c.contains("RANGEBY") {
                    l.extend(o.split_whitespace().map(str::to_owned));
                }
                l
            }),
        (
            pick(&["ZRANGE", "ZREVRANGE", "ZREMRANGEBYRANK"]),
            k(),
            n(),
            n(),
            pick(&["", "WITHSCORES", "REV"])
        )
            .prop_map(|(c, k, a, b, o)| {
                let mut l = vec![c.clone(), k, a, b];
                if c != "ZREMRANGEBYRANK" && !o.is_empty() {
                    l.push(o);
                }
                l
            }),
        (
            k(),
            pick(BOUNDS),
            pick(BOUNDS),
            pick(&["BYSCORE", "BYSCORE REV", "BYSCORE WITHSCORES LIMIT 1 1"])
        )
            .prop_map(|(k, a, b, o)| {
                let mut l = line(&["ZRANGE", &k, &a, &b]);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        (
            k(),
            pick(LEX),
            pick(LEX),
            pick(&["BYLEX", "BYLEX REV", "BYLEX LIMIT 1 2"])
        )
            .prop_map(|(k, a, b, o)| {
                let mut l = line(&["ZRANGE", &k, &a, &b]);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        (
            pick(&["ZPOPMIN", "ZPOPMAX"]),
            k(),
            pick(&["", "0", "1", "2", "-1"])
        )
            .prop_map(|(c, k, n)| {
                let mut l = vec![c, k];
                if !n.is_empty() {
                    l.push(n)
                }
                l
            }),
        // sorted-set algebra over sorted sets, sets (score 1) and other types
        (
            pick(&["ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD"]),
            prop::collection::vec(k(), 1..4),
            pick(&[
                "",
                "WITHSCORES",
                "WEIGHTS 2 0.5 -1",
                "AGGREGATE MIN WITHSCORES",
                "AGGREGATE MAX",
                "LIMIT 1",
                "x"
            ])
        )
            .prop_map(|(c, ks, o)| {
                let mut l = vec![c, ks.len().to_string()];
                l.extend(ks.iter().cloned());
                algebra_options(&mut l, ks.len(), &o);
                l
            }),
        (
            pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]),
            k(),
            prop::collection::vec(k(), 1..3),
            pick(&["", "WEIGHTS 3 2 1", "AGGREGATE MAX", "WITHSCORES"])
        )
            .prop_map(|(c, d, ks, o)| {
                let mut l = vec![c, d, ks.len().to_string()];
                l.extend(ks.iter().cloned());
                algebra_options(&mut l, ks.len(), &o);
                l
            }),
        (
            pick(&[
                "ZRANGEBYLEX",
                "ZREVRANGEBYLEX",
                "ZLEXCOUNT",
                "ZREMRANGEBYLEX"
            ]),
            k(),
            pick(LEX),
            pick(LEX),
            pick(&["", "LIMIT 1 2", "LIMIT 0 -1"])
        )
            .prop_map(|(c, k, a, b, o)| {
                let mut l = vec![c.clone(), k, a, b];
                if c.contains("RANGEBY") {
                    l.extend(o.split_whitespace().map(str::to_owned));
                }
                l
            }),
        (
            k(),
            k(),
            pick(&[
                "0 -1",
                "1 2",
                "(1 +inf BYSCORE",
                "- [b BYLEX",
                "0 -1 REV",
                "0 1 WITHSCORES"
            ])
        )
            .prop_map(|(d, k, o)| {
                let mut l = line(&["ZRANGESTORE", &d, &k]);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        (
            pick(&["ZMPOP", "LMPOP"]),
            prop::collection::vec(k(), 1..3),
            pick(&["MIN", "MAX", "LEFT", "RIGHT"]),
            pick(&["", "COUNT 2", "COUNT 0"])
        )
            .prop_map(|(c, ks, w, o)| {
                let mut l = vec![c, ks.len().to_string()];
                l.extend(ks);
                l.push(w);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        (k(), k()).prop_map(|(a, b)| line(&["RPOPLPUSH", &a, &b])),
        (k(), pick(&["", "1", "2", "5", "-3", "0"])).prop_map(|(k, n)| {
            let mut l = line(&["ZRANDMEMBER", &k]);
            if !n.is_empty() {
                l.push(n)
            }
            l
        }),
        // Values are not fields: WITHVALUES is in the curated table.
        (k(), pick(&["", "1", "2", "5", "-3", "0"])).prop_map(|(k, n)| {
            let mut l = line(&["HRANDFIELD", &k]);
            if !n.is_empty() {
                l.push(n)
            }
            l
        }),
        (
            prop::collection::vec(k(), 1..4),
            pick(&["", "LIMIT 1", "LIMIT 0", "LIMIT -1"])
        )
            .prop_map(|(ks, o)| {
                let mut l = vec!["SINTERCARD".to_owned(), ks.len().to_string()];
                l.extend(ks);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        prop::collection::vec(k(), 1..4).prop_map(|ks| {
            let mut l = line(&["TOUCH"]);
            l.extend(ks);
            l
        }),
        (k(), n(), n()).prop_map(|(k, a, b)| line(&["SUBSTR", &k, &a, &b])),
        (
            k(),
            k(),
            pick(&["", "LEN", "IDX", "IDX WITHMATCHLEN MINMATCHLEN 2"])
        )
            .prop_map(|(a, b, o)| {
                let mut l = line(&["LCS", &a, &b]);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        (
            pick(&["SORT", "SORT_RO"]),
            k(),
            pick(&[
                "",
                "DESC",
                "ALPHA",
                "ALPHA DESC LIMIT 1 2",
                "LIMIT 0 1",
                "BY w_* GET #",
                "ALPHA GET # GET k*",
                "ALPHA STORE k1",
                "STORE k2",
            ])
        )
            .prop_map(|(c, k, o)| {
                let mut l = vec![c, k];
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        // bitmaps
        (
            k(),
            pick(&["0", "7", "9", "100", "x", "-1"]),
            pick(&["0", "1", "2"])
        )
            .prop_map(|(k, o, v)| line(&["SETBIT", &k, &o, &v])),
        (k(), pick(&["0", "1", "9", "100", "x"])).prop_map(|(k, o)| line(&["GETBIT", &k, &o])),
        (
            pick(&["BITCOUNT", "BITPOS 1", "BITPOS 0"]),
            k(),
            pick(&[
                "",
                "0",
                "0 -1",
                "1 1",
                "-2 -1",
                "5 30 BIT",
                "0 0 BYTE",
                "-3 -1 BIT",
                "2 1",
                "x 1"
            ])
        )
            .prop_map(|(c, k, o)| {
                let mut l: Vec<String> = c.split_whitespace().map(str::to_owned).collect();
                l.insert(1, k);
                l.extend(o.split_whitespace().map(str::to_owned));
                l
            }),
        (
            pick(&["AND", "OR", "XOR", "NOT"]),
            k(),
            prop::collection::vec(k(), 1..3)
        )
            .prop_map(|(op, d, ks)| {
                let mut l = line(&["BITOP", &op, &d]);
                l.extend(ks);
                l
            }),
        (
            pick(&["BITFIELD", "BITFIELD_RO"]),
            k(),
            prop::collection::vec(
                pick(&[
                    "GET u8 0",
                    "GET i5 #1",
                    "SET u8 0 255",
                    "SET i8 #1 -100",
                    "INCRBY u4 2 9",
                    "INCRBY i8 0 100",
                    "OVERFLOW SAT",
                    "OVERFLOW FAIL",
                    "GET u64 0",
                ]),
                0..4
            )
        )
            .prop_map(|(c, k, ops)| {
                let mut l = vec![c, k];
                for op in ops {
                    l.extend(op.split_whitespace().map(str::to_owned));
                }
                l
            }),
        // HyperLogLog: values compared byte for byte by GET, estimates by PFCOUNT
        (k(), prop::collection::vec(v(), 0..4)).prop_map(|(k, vs)| {
            let mut l = line(&["PFADD", &k]);
            l.extend(vs);
            l
        }),
        (
            pick(&["PFCOUNT", "PFMERGE"]),
            prop::collection::vec(k(), 1..3)
        )
            .prop_map(|(c, ks)| {
                let mut l = vec![c];
                l.extend(ks);
                l
            }),
        // streams: explicit IDs only, and no reply that shows an idle or delivery time
        (
            k(),
            pick(&[
                "",
                "NOMKSTREAM",
                "MAXLEN 2",
                "MAXLEN ~ 1",
                "MINID 2",
                "MINID = 3-1"
            ]),
            pick(&["1-1", "2", "2-*", "3-1", "0-0", "x", "*"]),
            v()
        )
            .prop_map(|(k, o, id, v)| {
                let mut l = line(&["XADD", &k]);
                l.extend(o.split_whitespace().map(str::to_owned));
                // `*` takes the server's clock: only as a trimming ID after an explicit one.
                let id = if id == "*" { "5-5".to_owned() } else { id };
                l.extend([id, "f".to_owned(), v]);
                l
            }),
        (
            pick(&["XRANGE", "XREVRANGE"]),
            k(),
            pick(&[
                "- +",
                "+ -",
                "(1-1 +",
                "2 3",
                "- (3",
                "- + COUNT 1",
                "- + COUNT 0",
                "x +"
            ])
        )
            .prop_map(|(c, k, r)| {
                let mut l = vec![c, k];
                l.extend(r.split_whitespace().map(str::to_owned));
                l
            }),
        (
            pick(&[
                "XLEN",
                "XDEL 1-1",
                "XDEL 2-0 3-1",
                "XTRIM MAXLEN 1",
                "XTRIM MINID ~ 3",
                "XTRIM MAXLEN = 0",
                "XSETID 9-9",
                "XSETID 1-0",
                "XINFO STREAM",
                "XINFO GROUPS",
                "XGROUP CREATE g 0",
                "XGROUP CREATE g $ MKSTREAM",
                "XGROUP SETID g 1-1",
                "XGROUP DESTROY g",
                "XGROUP CREATECONSUMER g c",
                "XGROUP DELCONSUMER g c",
                "XPENDING g",
                "XACK g 1-1 2-0",
                "XCLAIM g d 0 1-1 2-0 JUSTID",
                "XAUTOCLAIM g d 0 0 COUNT 1 JUSTID"
            ]),
            k()
        )
            .prop_map(|(c, k)| {
                let mut words = c.split_whitespace().map(str::to_owned);
                let mut l: Vec<String> = words
                    .by_ref()
                    .take(
                        if c.starts_with("XLEN")
                            || c.starts_with("XDEL")
                            || c.starts_with("XTRIM")
                            || c.starts_with("XSETID")
                            || c.starts_with("XPENDING")
                            || c.starts_with("XACK")
                            || c.starts_with("XCLAIM")
                            || c.starts_with("XAUTOCLAIM")
                        {
                            1
                        } else {
                            2
                        },
                    )
                    .collect();
                l.push(k);
                l.extend(words);
                l
            }),
        (
            pick(&[
                "XREAD STREAMS",
                "XREAD COUNT 1 STREAMS",
                "XREADGROUP GROUP g c STREAMS",
                "XREADGROUP GROUP g c NOACK COUNT 1 STREAMS"
            ]),
            k(),
            pick(&["0", "1-1", "$", ">"])
        )
            .prop_map(|(c, k, id)| {
                let mut l: Vec<String> = c.split_whitespace().map(str::to_owned).collect();
                l.extend([k, id]);
                l
            }),
        // geo
        (
            k(),
            pick(&["", "NX", "XX CH"]),
            pick(&[
                "13.361389 38.115556",
                "15.087269 37.502669",
                "200 10",
                "x 1"
            ]),
            pick(&["p", "q"])
        )
            .prop_map(|(k, o, xy, m)| {
                let mut l = line(&["GEOADD", &k]);
                l.extend(o.split_whitespace().map(str::to_owned));
                l.extend(xy.split_whitespace().map(str::to_owned));
                l.push(m);
                l
            }),
        (
            pick(&[
                "GEODIST p q km",
                "GEOPOS p q",
                "GEOHASH p q",
                "GEORADIUS 15 37 200 km WITHDIST",
                "GEORADIUSBYMEMBER p 300 km WITHCOORD",
                "GEOSEARCH FROMMEMBER q BYBOX 400 400 km ASC WITHHASH",
                "GEOSEARCH FROMLONLAT 14 38 BYRADIUS 100 mi COUNT 1"
            ]),
            k()
        )
            .prop_map(|(c, k)| {
                let mut words = c.split_whitespace().map(str::to_owned);
                let mut l: Vec<String> = words.by_ref().take(1).collect();
                l.push(k);
                l.extend(words);
                l
            }),
        (k(), k()).prop_map(|(d, k)| {
            line(&[
                "GEOSEARCHSTORE",
                &d,
                &k,
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "300",
                "km",
                "STOREDIST",
            ])
        }),
        // sharded pub/sub, with nobody subscribed; server introspection that does not vary
        (
            pick(&[
                "SPUBLISH ch m",
                "PUBSUB SHARDNUMSUB ch k1",
                "PUBSUB SHARDCHANNELS",
                "PUBSUB SHARDCHANNELS c*",
                "CONFIG GET maxmemory",
                "CONFIG GET list-max-listpack-size",
                "COMMAND INFO GET ZADD",
                "COMMAND GETKEYS LMOVE k1 k2 LEFT LEFT",
                "OBJECT ENCODING"
            ]),
            k()
        )
            .prop_map(|(c, k)| {
                let mut l: Vec<String> = c.split_whitespace().map(str::to_owned).collect();
                if c == "OBJECT ENCODING" {
                    l.push(k);
                }
                l
            }),
        // errors: arity, unknown commands
        Just(line(&["LPUSH", "k1"])),
        Just(line(&["NOSUCHCMD", "k1"])),
    ]
}

/// Appends an option of the sorted-set algebra, its `WEIGHTS` cut to the number of inputs.
fn algebra_options(l: &mut Vec<String>, inputs: usize, option: &str) {
    let mut words = option.split_whitespace().map(str::to_owned);
    if option.starts_with("WEIGHTS") {
        l.extend(words.take(inputs + 1));
    } else {
        l.extend(words.by_ref());
    }
}

/// A plain command whose reply is compared exactly, as the commands queued in a transaction
/// must be (`EXEC` replies them in one array): no unordered or random replies, no TTL reads, no
/// scans of a hash or sorted set (exact only while it is a listpack).
fn deterministic() -> impl Strategy<Value = Vec<String>> {
    plain().prop_filter("only exactly compared replies in a transaction", |c| {
        // A remaining TTL is compared within the time elapsed, which EXEC's array cannot do.
        comparator(&c[0]) == Compare::Exact
            && !c[0].ends_with("TTL")
            && !matches!(c[0].as_str(), "HSCAN" | "ZSCAN")
    })
}

/// A call of one of lock-core's scripts on locks named like the plain keys.
fn script_call(which: u8, lock: &str, owner: u8) -> ScriptCall {
    let keys = KeyLayout::default().lock(lock);
    let owner = Owner::new("c0ffee", u64::from(owner));
    let lease = Lease::from_millis(30_000).expect("a positive lease");
    match which {
        0 => acquire::call(&keys, &RequestId(1), lease, &owner, Millis(10_000)),
        1 => release::call(&keys, &RequestId(2), lease, &owner, Millis(10_000)),
        2 => renew_batch::call(lease, [(&keys.lock, &owner)]),
        _ => force_unlock::call(&keys),
    }
}

fn script_line(call: &ScriptCall, by_sha: bool) -> Vec<String> {
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).expect("script arguments are text");
    let mut l = if by_sha {
        vec!["EVALSHA".to_owned(), call.script.sha().to_owned()]
    } else {
        vec!["EVAL".to_owned(), call.script.body.to_owned()]
    };
    l.push(call.keys.len().to_string());
    l.extend(call.keys.iter().map(|k| text(k)));
    l.extend(call.args.iter().map(|a| text(a)));
    l
}

/// The marker of a `DUMP` and `RESTORE` step (see [`dump_restore`]).
const DUMP_RESTORE: &str = "(dump and restore)";

/// Rules `ACL SETUSER` gives the two users of the sequences, valid and not.
const ACL_RULES: &[&str] = &[
    "on",
    "off",
    ">pw",
    "<pw",
    "nopass",
    "resetpass",
    "~k1",
    "%R~k2",
    "%W~k*",
    "allkeys",
    "resetkeys",
    "&ch1",
    "&c*",
    "allchannels",
    "resetchannels",
    "+get",
    "-get",
    "+@string",
    "-@string",
    "+@read",
    "-@write",
    "+@all",
    "-@all",
    "+config|get",
    "-config",
    "+select|0",
    "reset",
    "(~k3 +set)",
    "(%R~k* +@list",
    "-lmove)",
    "clearselectors",
    "bogus",
    "+nosuch",
    "#abc",
];

/// Calls `ACL DRYRUN` asks about.
const ACL_CALLS: &[&str] = &[
    "get k1",
    "get k2",
    "set k2 v",
    "set k1 v GET",
    "incr k1",
    "mset k1 a k3 b",
    "lmove k1 k3 LEFT RIGHT",
    "lpush k3 a",
    "config get hz",
    "config set hz 10",
    "select 0",
    "select 1",
    "publish ch1 m",
    "subscribe c2 ch1",
    "psubscribe c*",
    "nosuch",
    "get",
];

/// An ACL step: a user's rules changed, a call tried against them, or a user removed. Its
/// replies do not depend on the order in which Redis describes rules (`ACL GETUSER` is in the
/// curated table instead).
fn acl() -> impl Strategy<Value = Vec<String>> {
    let user = || pick(&["u1", "u2"]);
    prop_oneof![
        3 => (user(), prop::collection::vec(pick(ACL_RULES), 0..4)).prop_map(|(u, rules)| {
            let mut l = line(&["ACL", "SETUSER", &u]);
            l.extend(rules);
            l
        }),
        4 => (pick(&["u1", "u2", "nobody"]), pick(ACL_CALLS)).prop_map(|(u, call)| {
            let mut l = line(&["ACL", "DRYRUN", &u]);
            l.extend(call.split_whitespace().map(str::to_owned));
            l
        }),
        1 => user().prop_map(|u| line(&["ACL", "DELUSER", &u])),
        1 => Just(line(&["ACL", "USERS"])),
    ]
}

/// One step: a plain command, a script call, a transaction, `SELECT`, an ACL step, or a `DUMP` of
/// one key restored under another.
fn step() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop_oneof![
        1 => acl().prop_map(|c| vec![c]),
        12 => plain().prop_map(|c| vec![c]),
        1 => (
            pick(KEYS),
            pick(KEYS),
            pick(&["redis", "fake", "corrupt"]),
            pick(&["0", "5000", "-1"]),
            pick(&["", "REPLACE", "ABSTTL", "REPLACE IDLETIME 5", "FREQ 7", "FREQ 300"])
        )
            .prop_map(|(src, dst, whose, ttl, options)| {
                let ttl = if options.contains("ABSTTL") && ttl == "5000" {
                    "4102444800000".to_owned()
                } else {
                    ttl
                };
                let mut l = line(&[DUMP_RESTORE, &src, &dst, &whose, &ttl]);
                l.extend(options.split_whitespace().map(str::to_owned));
                vec![l]
            }),
        2 => (0u8..4, pick(&["k1", "k2"]), 0u8..2, any::<bool>())
            .prop_map(|(w, k, o, sha)| vec![script_line(&script_call(w, &k, o), sha)]),
        1 => (prop::collection::vec(deterministic(), 1..4), any::<bool>()).prop_map(|(cmds, discard)| {
            let mut l = vec![line(&["MULTI"])];
            l.extend(cmds);
            l.push(line(&[if discard { "DISCARD" } else { "EXEC" }]));
            l
        }),
        1 => pick(&["0", "1"]).prop_map(|db| vec![line(&["SELECT", &db])]),
    ]
}

fn sequence() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop::collection::vec(step(), 1..24).prop_map(|steps| steps.into_iter().flatten().collect())
}

async fn query(conn: &mut impl ConnectionLike, words: &[String]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd(&words[0]);
    for w in &words[1..] {
        cmd.arg(w);
    }
    cmd.query_async::<Value>(conn).await
}

fn members(v: &Value) -> Vec<Vec<u8>> {
    match v {
        Value::BulkString(b) => vec![b.clone()],
        Value::Array(items) | Value::Set(items) => items.iter().flat_map(members).collect(),
        _ => Vec::new(),
    }
}

/// The shape of a random pick: its kind and count, without the members.
fn shape(r: &redis::RedisResult<Value>) -> String {
    match r {
        Ok(Value::BulkString(_)) => "one member".to_owned(),
        Ok(Value::Array(items)) | Ok(Value::Set(items)) => format!("{} members", items.len()),
        other => describe(other),
    }
}

/// Runs one sequence on both sides; the first divergence, if any.
async fn diverges(
    real: &mut redis::aio::MultiplexedConnection,
    fake: &mut FakeConnection,
    seq: &[Vec<String>],
) -> Option<String> {
    reset(real).await;
    reset(fake).await;
    let started = Instant::now();
    let mut in_multi = false;
    for (i, words) in seq.iter().enumerate() {
        if words[0] == DUMP_RESTORE {
            if let Err(d) = dump_restore(real, fake, words).await {
                return Some(format!("step {i}: {words:?}\n  {d}"));
            }
            continue;
        }
        let name = words[0].to_ascii_uppercase();
        let key = words.get(1).cloned().unwrap_or_default();
        let compare = if in_multi {
            Compare::Exact
        } else if matches!(name.as_str(), "HSCAN" | "ZSCAN") {
            let encoding = query(real, &line(&["OBJECT", "ENCODING", &key])).await;
            match encoding {
                Ok(Value::BulkString(e)) if e == b"hashtable" || e == b"skiplist" => {
                    Compare::PairPage
                }
                _ => Compare::Exact,
            }
        } else {
            comparator(&name)
        };
        let before = if compare == Compare::Random {
            let smembers = if name == "RANDOMKEY" {
                line(&["KEYS", "*"])
            } else if name == "ZRANDMEMBER" {
                line(&["ZRANGE", &key, "0", "-1"])
            } else if name == "HRANDFIELD" {
                line(&["HKEYS", &key])
            } else {
                vec!["SMEMBERS".to_owned(), key.clone()]
            };
            let r = query(real, &smembers).await.ok().map(|v| members(&v));
            let f = query(fake, &smembers).await.ok().map(|v| members(&v));
            Some((r, f))
        } else {
            None
        };
        let want = query(real, words).await;
        let got = query(fake, words).await;
        match name.as_str() {
            "MULTI" => in_multi = want.is_ok(),
            "EXEC" | "DISCARD" => in_multi = false,
            _ => {}
        }
        let same = match compare {
            Compare::Exact => match (&want, &got, name.as_str()) {
                (Ok(Value::Int(w)), Ok(Value::Int(g)), "TTL" | "PTTL" | "EVAL" | "EVALSHA")
                    if *w >= 0 && *g >= 0 && (name.ends_with("TTL") || returns_pttl(words)) =>
                {
                    // A remaining TTL: equal within the real time that passed between the sides.
                    let slack = started.elapsed().as_millis() as i64 + 2;
                    let slack = if name == "TTL" {
                        slack / 1000 + 1
                    } else {
                        slack
                    };
                    (w - g).abs() <= slack
                }
                _ => describe(&want) == describe(&got),
            },
            Compare::Multiset => describe(&sorted(want.clone())) == describe(&sorted(got.clone())),
            Compare::ScanPage => {
                describe(&sorted_page(want.clone())) == describe(&sorted_page(got.clone()))
            }
            Compare::PairPage => {
                describe(&sorted_pair_page(want.clone()))
                    == describe(&sorted_pair_page(got.clone()))
            }

            Compare::Random => {
                let Some((before_real, before_fake)) = &before else {
                    unreachable!("members are read before every random pick")
                };
                let drawn_real = want.as_ref().map(members).unwrap_or_default();
                let drawn_fake = got.as_ref().map(members).unwrap_or_default();
                let within = |drawn: &[Vec<u8>], from: &Option<Vec<Vec<u8>>>| {
                    drawn
                        .iter()
                        .all(|m| from.as_ref().is_some_and(|s| s.contains(m)))
                };
                let distinct = |drawn: &[Vec<u8>]| {
                    let mut d = drawn.to_vec();
                    d.sort();
                    d.dedup();
                    d.len() == drawn.len()
                };
                let repeats_allowed =
                    matches!(name.as_str(), "SRANDMEMBER" | "ZRANDMEMBER" | "HRANDFIELD")
                        && words.get(2).is_some_and(|n| n.starts_with('-') || n == "1");
                let ok = shape(&want) == shape(&got)
                    && within(&drawn_fake, before_fake)
                    && within(&drawn_real, before_real)
                    && (repeats_allowed || distinct(&drawn_fake));
                if ok && name == "SPOP" {
                    // Each side popped different members: put the fake's back and take Redis's,
                    // so the two keyspaces agree again.
                    let mut a = sorted_members(&drawn_fake);
                    let b = sorted_members(&drawn_real);
                    if a != b {
                        let mut add = vec!["SADD".to_owned(), key.clone()];
                        add.extend(a.drain(..).map(|m| String::from_utf8(m).unwrap()));
                        let mut rem = vec!["SREM".to_owned(), key.clone()];
                        rem.extend(b.into_iter().map(|m| String::from_utf8(m).unwrap()));
                        let _ = query(fake, &add).await;
                        let _ = query(fake, &rem).await;
                    }
                }
                ok
            }
        };
        if !same {
            return Some(format!(
                "step {i}: {words:?}\n  redis: {}\n  fake:  {}",
                describe(&want),
                describe(&got)
            ));
        }
    }
    None
}

/// `DUMP src` on each side, then `RESTORE dst ttl <payload> [options]` on both with one side's
/// payload (Redis's, the fake's, or Redis's with its checksum broken): each server reads the
/// other's bytes, and the two keyspaces stay equal for the steps after. The payloads themselves
/// must be equal for the encodings whose bytes do not depend on a value's history or on a hash
/// table's order (README: strings, listpack hashes and sorted sets, small lists).
async fn dump_restore(
    real: &mut redis::aio::MultiplexedConnection,
    fake: &mut FakeConnection,
    words: &[String],
) -> Result<(), String> {
    let [_, src, dst, whose, ttl, options @ ..] = words else {
        unreachable!("a dump step has its five words")
    };
    let dump = line(&["DUMP", src]);
    let (dumped_real, dumped_fake) = (query(real, &dump).await, query(fake, &dump).await);
    let payload = |v: &redis::RedisResult<Value>| match v {
        Ok(Value::BulkString(b)) => Some(b.clone()),
        _ => None,
    };
    let (from_real, from_fake) = (payload(&dumped_real), payload(&dumped_fake));
    let same = match (&from_real, &from_fake) {
        (Some(r), Some(f)) => r == f || !matches!(r.first(), Some(0 | 16 | 17 | 18)),
        (None, None) => describe(&dumped_real) == describe(&dumped_fake),
        _ => false,
    };
    if !same {
        return Err(format!(
            "DUMP {src}\n  redis: {}\n  fake:  {}",
            describe(&dumped_real),
            describe(&dumped_fake)
        ));
    }
    let payload = match whose.as_str() {
        "redis" => from_real,
        "fake" => from_fake,
        _ => from_real.map(|mut p| {
            let last = p.len() - 1;
            p[last] ^= 1;
            p
        }),
    }
    .unwrap_or_default();
    let mut restore = redis::cmd("RESTORE");
    restore.arg(dst).arg(ttl).arg(&payload[..]);
    for o in options {
        restore.arg(o);
    }
    let want = restore.query_async::<Value>(real).await;
    let got = restore.query_async::<Value>(fake).await;
    if describe(&want) != describe(&got) {
        return Err(format!(
            "RESTORE {dst} {ttl} <{whose}'s payload> {options:?}\n  redis: {}\n  fake:  {}",
            describe(&want),
            describe(&got)
        ));
    }
    Ok(())
}

/// Whether this script call replies a lock's remaining TTL (the acquire script, when the lock is
/// held by someone else), which is compared like `PTTL`.
fn returns_pttl(words: &[String]) -> bool {
    words
        .get(1)
        .is_some_and(|w| *w == acquire::SCRIPT.body || w.as_str() == acquire::SCRIPT.sha())
}

fn sorted_members(m: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut m = m.to_vec();
    m.sort();
    m
}

/// What a case does to each side before it starts: out of any transaction, database 0, an empty
/// server, no cached scripts.
async fn reset(side: &mut impl ConnectionLike) {
    let _ = query(side, &line(&["DISCARD"])).await;
    for words in [
        line(&["SELECT", "0"]),
        line(&["FLUSHALL"]),
        line(&["SCRIPT", "FLUSH"]),
        line(&["ACL", "DELUSER", "u1", "u2"]),
    ] {
        query(side, &words).await.expect("resetting a side");
    }
}

/// Runs `CONFORMANCE_CASES` (default `default_cases`) random sequences over RESP2 or RESP3.
fn run_sequences(resp3: bool, default_cases: u32) {
    let cases: u32 = std::env::var("CONFORMANCE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default_cases);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = OwnServer::start();
    let real = rt.block_on(async {
        if resp3 {
            connect_real_resp3(server.port).await
        } else {
            connect_real(server.port).await
        }
    });
    let mut fake = fake_connection();
    if resp3 {
        rt.block_on(query(&mut fake, &line(&["HELLO", "3"])))
            .expect("the fake speaks RESP3");
    }
    let (real, fake) = (RefCell::new(real), RefCell::new(fake));
    let started = Instant::now();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&sequence(), |seq| {
        match rt.block_on(diverges(
            &mut real.borrow_mut(),
            &mut fake.borrow_mut(),
            &seq,
        )) {
            None => Ok(()),
            Some(d) => Err(TestCaseError::fail(d)),
        }
    });
    let protocol = if resp3 { "RESP3" } else { "RESP2" };
    eprintln!("{cases} {protocol} sequences in {:.1?}", started.elapsed());
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn random_sequences_reply_exactly_as_redis_7_does() {
    run_sequences(false, 5_000);
}

/// The same sequences after `HELLO 3`: maps, sets, doubles and nulls as Redis 7 sends them.
#[test]
fn random_sequences_in_resp3_reply_exactly_as_redis_7_does() {
    run_sequences(true, 2_000);
}
