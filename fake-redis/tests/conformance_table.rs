//! The curated table of edge cases: each line runs on a redis-server of the test's own and on the
//! fake (through `FakeConnection` on `SystemClock`, the same client code), and the replies must
//! be equal, error texts included. Unordered replies are compared as multisets (see
//! `support::comparator`); nothing else is relaxed.

mod support;

use fake_redis::{Engine, FakeConnection, NodeId, SystemClock, shared};
use support::{OwnServer, connect_real, describe, run};

const TABLE: &[&str] = &[
    "FLUSHALL",
    // ---- lists ----
    "RPUSH l a b c a b c a",
    "LPUSHX nol x",
    "RPUSHX nol x",
    "LPUSHX l x y",
    "RPUSHX l z",
    "LRANGE l 0 -1",
    "LPOP l",
    "RPOP l",
    "LPOP l 0",
    "LPOP l -1",
    "LPOP l x",
    "LPOP l 1 2",
    "LPOP l 2",
    "RPOP l 2",
    "LPOP nol",
    "LPOP nol 2",
    "RPOP nol 0",
    "LINDEX l 0",
    "LINDEX l -1",
    "LINDEX l 100",
    "LINDEX l x",
    "LINDEX nol x",
    "LSET l 0 first",
    "LSET l -1 last",
    "LSET l 99 x",
    "LSET l x x",
    "LSET nol 0 x",
    "LSET nol x x",
    "LRANGE l 0 -1",
    "RPUSH r a b a c a d a",
    "LREM r 2 a",
    "LRANGE r 0 -1",
    "LREM r -1 a",
    "LRANGE r 0 -1",
    "LREM r 0 a",
    "LREM r 0 zz",
    "LREM r x a",
    "LREM nol 1 a",
    "LRANGE r 0 -1",
    "RPUSH t 1 2 3 4 5 6 7",
    "LTRIM t 1 -2",
    "LRANGE t 0 -1",
    "LTRIM t -100 100",
    "LTRIM t x 1",
    "LTRIM nol 0 1",
    "LTRIM t 3 1",
    "EXISTS t",
    "RPUSH i a b c",
    "LINSERT i BEFORE b x",
    "LINSERT i after c y",
    "LINSERT i before zz y",
    "LINSERT i middle a b",
    "LINSERT nol before a b",
    "LRANGE i 0 -1",
    "RPUSH p a b c a b c",
    "LPOS p b",
    "LPOS p b RANK 2",
    "LPOS p b RANK -1",
    "LPOS p b RANK -2",
    "LPOS p b RANK 3",
    "LPOS p b RANK 0",
    "LPOS p b RANK -9223372036854775808",
    "LPOS p b COUNT 0",
    "LPOS p b COUNT 1",
    "LPOS p b COUNT 5 RANK -1",
    "LPOS p b COUNT -1",
    "LPOS p b COUNT x",
    "LPOS p b MAXLEN 1",
    "LPOS p b MAXLEN 2 COUNT 0",
    "LPOS p b MAXLEN -1",
    "LPOS p b RANK x",
    "LPOS p b RANK",
    "LPOS p b foo 1",
    "LPOS p zz",
    "LPOS p zz COUNT 0",
    "LPOS nol b",
    "LPOS nol b COUNT 2",
    "RPUSH m a b c",
    "LMOVE m m2 LEFT RIGHT",
    "LMOVE m m2 RIGHT LEFT",
    "LRANGE m2 0 -1",
    "LMOVE m m LEFT RIGHT",
    "LRANGE m 0 -1",
    "LMOVE m m2 UP DOWN",
    "LMOVE nol m2 LEFT LEFT",
    "LMOVE m m2 left left",
    "EXISTS m",
    "SET str v",
    "LMOVE m2 str LEFT LEFT",
    "LMOVE str m2 LEFT LEFT",
    "LRANGE m2 0 -1",
    "LPUSH str x",
    "LPUSHX str x",
    "LPOP str",
    "LINDEX str 0",
    "LSET str 0 x",
    "LREM str 0 x",
    "LTRIM str 0 1",
    "LINSERT str before a b",
    "LPOS str a",
    "LLEN str",
    "LRANGE str 0 1",
    "TYPE m2",
    "RPUSH ttl a b",
    "EXPIRE ttl 100",
    "RPOP ttl",
    "TTL ttl",
    "LPOP ttl",
    "TTL ttl",
    "EXISTS ttl",
    "LPUSH",
    "LPOP",
    "LINSERT i before",
    "LMOVE a b c",
    "LPOS p",
    "DBSIZE",
    "COMMAND COUNT x",
    "FOO bar baz",
];

#[tokio::test]
async fn curated_edge_cases_reply_exactly_as_redis_7_does() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = FakeConnection::new(shared(Engine::new(SystemClock)), NodeId(1));
    let mut mismatches = Vec::new();
    for line in TABLE {
        let want = describe(&run(&mut real, line).await);
        let got = describe(&run(&mut fake, line).await);
        if want != got {
            mismatches.push(format!("{line}\n  redis: {want}\n  fake:  {got}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
