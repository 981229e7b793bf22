//! The same `redis`-crate client code against a real redis-server (7.0) and against the fake on
//! its `SystemClock`, comparing every reply exactly: strings, hashes, lists, TTLs (5 s and more, or 0
//! and negative), EXISTS/DEL counting, WRONGTYPE, integer and overflow errors, transactions.
//!
//! The test starts its own redis-server on a free loopback port (no persistence) and kills it when
//! done, so it never touches a shared server.

use crate::support;

use fake_redis::FakeConnection;
use redis::Value;
use redis::aio::MultiplexedConnection;
use support::{
    OwnServer, assert_no_mismatches, connect_real, describe, fake_connection, mismatches, run,
};

const SCRIPT: &[&str] = &[
    "FLUSHALL",
    // strings
    "SET s hello",
    "GET s",
    "GET nokey",
    "SET s world NX",
    "SET s world XX",
    "GET s",
    "SET s2 v NX",
    "SET s v XX GET",
    "SET s v NX GET",
    "SET s v EX 0",
    "SET s v EX -1",
    "SET s v PX abc",
    "SET s v EX 10 PX 10",
    "SET s v KEEPTTL EX 10",
    "SET s v EX 10 EX 20",
    "SET s v XX NX",
    "SET s v EX",
    "SET s v EX 9223372036854775807",
    "SET s v EX 100",
    "TTL s",
    "SET s v KEEPTTL",
    "TTL s",
    "SET s v",
    "TTL s",
    "SETNX s x",
    "SETNX new x",
    "SETEX se 100 v",
    "TTL se",
    "SETEX se 0 v",
    "SETEX se x v",
    "PSETEX pse 100000 v",
    "TTL pse",
    "PSETEX pse -5 v",
    "GETSET s g",
    "GETSET nokey2 g",
    "GETDEL s",
    "GETDEL s",
    "GETEX se",
    "GETEX se PERSIST",
    "TTL se",
    "GETEX se EX 50",
    "TTL se",
    "GETEX nokey EX 0",
    "GETEX se EX 0",
    "GETEX se PX abc",
    "GETEX se FOO",
    "MSET a 1 b 2",
    "MGET a b nokey",
    "MSETNX a 1 c 3",
    "MSETNX c 3 d 4",
    "MSET a",
    "MSET a 1 b",
    "INCR n",
    "INCRBY n 10",
    "DECR n",
    "DECRBY n 5",
    "INCRBY n abc",
    "INCRBY n 1.5",
    "INCRBY n 01",
    "SET big 9223372036854775807",
    "INCR big",
    "INCRBY big -1",
    "DECRBY n -9223372036854775808",
    "SET neg -9223372036854775808",
    "DECR neg",
    "INCRBY neg -1",
    "SET notnum abc",
    "INCR notnum",
    "INCRBYFLOAT f 1.5",
    "INCRBYFLOAT f 2.25",
    "INCRBYFLOAT f abc",
    "INCRBYFLOAT a 0.1",
    "INCRBYFLOAT f -3.75",
    "INCRBYFLOAT notnum 1",
    "APPEND ap hello",
    "APPEND ap world",
    "STRLEN ap",
    "STRLEN nokey",
    "GET",
    "SET k",
    // hashes
    "HSET h f1 v1 f2 v2",
    "HSET h f1 x",
    "HSET h f1",
    "HGET h f1",
    "HGET h nof",
    "HMGET h f1 nof f2",
    "HMGET nokey f1",
    "HGETALL h",
    "HKEYS h",
    "HVALS h",
    "HLEN h",
    "HLEN nokey",
    "HEXISTS h f1",
    "HEXISTS h nof",
    "HEXISTS nokey f",
    "HSETNX h f1 y",
    "HSETNX h f3 y",
    "HDEL h f3 nof",
    "HDEL nokey f",
    "HINCRBY h cnt 5",
    "HINCRBY h cnt -2",
    "HINCRBY h f1 1",
    "HINCRBY h cnt abc",
    "HSET h big 9223372036854775807",
    "HINCRBY h big 1",
    "HINCRBYFLOAT h fl 1.5",
    "HINCRBYFLOAT h f1 1",
    "HINCRBYFLOAT h fl abc",
    "HSTRLEN h f1",
    "HSTRLEN h nof",
    "HMSET h a 1",
    "HMSET h a",
    "HGETALL h",
    "HGETALL nokey",
    "HINCRBY hnew f 7",
    "TTL hnew",
    "EXPIRE hnew 100",
    "HINCRBY hnew f 1",
    "HSET hnew g 1",
    "TTL hnew",
    "HDEL h f1 f2 cnt big fl a",
    "EXISTS h",
    // lists
    "RPUSH l a b c",
    "LPUSH l z y",
    "RPUSH l",
    "LLEN l",
    "LLEN nokey",
    "LRANGE l 0 -1",
    "LRANGE l 1 2",
    "LRANGE l -2 -1",
    "LRANGE l -100 100",
    "LRANGE l 3 1",
    "LRANGE l 5 10",
    "LRANGE l 0 -6",
    "LRANGE l x 1",
    "LRANGE nokey 0 -1",
    "LRANGE nokey x 1",
    "EXPIRE l 100",
    "RPUSH l d",
    "TTL l",
    "TYPE l",
    // wrong types
    "SET str x",
    "HGET str f",
    "HSET str f v",
    "HINCRBY str f 1",
    "HGETALL str",
    "GET hnew",
    "INCR hnew",
    "APPEND hnew x",
    "STRLEN hnew",
    "GETDEL hnew",
    "SET hnew x GET",
    "MGET str hnew",
    "RPUSH str x",
    "LPUSH hnew x",
    "LLEN str",
    "LRANGE str 0 -1",
    "LRANGE str x 1",
    "HGET l f",
    "GET l",
    "TYPE str",
    "TYPE hnew",
    "TYPE nokey",
    // existence, deletion, TTLs
    "EXISTS a a nokey",
    "EXISTS nokey",
    "DEL a a nokey",
    "UNLINK b nokey",
    "SET b v",
    "EXPIRE b 100",
    "TTL b",
    "PTTL nokey",
    "PTTL c",
    "TTL c",
    "EXPIRE b 200 NX",
    "EXPIRE b 200 XX",
    "EXPIRE b 50 GT",
    "EXPIRE b 300 GT",
    "TTL b",
    "EXPIRE b 100 LT",
    "TTL b",
    "EXPIRE c 100 GT",
    "EXPIRE c 100 XX",
    "EXPIRE c 100 LT",
    "TTL c",
    "EXPIRE b 100 NX XX",
    "EXPIRE b 100 GT LT",
    "EXPIRE b 100 foo",
    "EXPIRE b abc",
    "EXPIRE b 9223372036854775807",
    "PEXPIRE b 9223372036854775807",
    "EXPIRE nokey 100",
    "PEXPIRE b 0",
    "EXISTS b",
    "EXPIRE c -1",
    "EXISTS c",
    "SET d v",
    "EXPIREAT d 1",
    "EXISTS d",
    "SET x v",
    "EXPIREAT x 4102444800",
    "EXPIRETIME x",
    "PEXPIRETIME x",
    "PEXPIREAT x 4102444800123",
    "PEXPIRETIME x",
    "EXPIRETIME x",
    "EXPIRETIME nokey",
    "EXPIRETIME str",
    "PERSIST x",
    "PERSIST x",
    "PERSIST nokey",
    "TTL x",
    "RENAME x y",
    "RENAME nokey z",
    "RENAME y y",
    "RENAMENX y str",
    "RENAMENX y z",
    "GET z",
    "KEYS *",
    "KEYS s*",
    "KEYS h?ew",
    "DBSIZE",
    // transactions
    "MULTI",
    "SET t 1",
    "INCR t",
    "HGET t f",
    "EXEC",
    "MULTI",
    "SET t 2",
    "GET",
    "EXEC",
    "GET t",
    "EXEC",
    "DISCARD",
    "MULTI",
    "MULTI",
    "WATCH t",
    "DISCARD",
    "WATCH w",
    "SET w 1",
    "MULTI",
    "SET t 3",
    "EXEC",
    "GET t",
    "WATCH w",
    "UNWATCH",
    "SET w 2",
    "MULTI",
    "SET t 4",
    "EXEC",
    // connection and server
    "PING",
    "PING hi",
    "PING a b",
    "ECHO x",
    "SELECT 1",
    "SET indb1 v",
    "DBSIZE",
    "SELECT 0",
    "EXISTS indb1",
    "SELECT 16",
    "SELECT x",
    "WAIT 0 0",
    "WAIT 0 -1",
    "HELLO 4",
    "HELLO x",
    "AUTH x",
    "AUTH a b",
    "CLIENT GETNAME",
    "CLIENT SETNAME fake",
    "CLIENT GETNAME",
    "CLIENT SETNAME",
    "CLIENT FOO",
    "SCRIPT FOO",
    "SCRIPT FLUSH",
    "SCRIPT FLUSH x",
    "EVALSHA abc 0",
    "EVALSHA 0123456789012345678901234567890123456789 -1",
    "EVALSHA 0123456789012345678901234567890123456789 2 a",
    "EVALSHA 0123456789012345678901234567890123456789 0",
    "PUBLISH nobody hi",
    "PUBSUB NUMSUB a",
    "PUBSUB NUMPAT",
    "PUBSUB CHANNELS",
    "FOO bar baz",
    "FOO",
    "FLUSHDB x",
    "FLUSHDB",
    "DBSIZE",
];

#[tokio::test]
async fn the_fake_replies_exactly_as_redis_7_does() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    assert_no_mismatches(&mismatches(&mut real, &mut fake, SCRIPT).await);
}

/// Asserts that `pipe` gets the same replies from both sides.
async fn assert_same_pipeline(
    real: &mut MultiplexedConnection,
    fake: &mut FakeConnection,
    pipe: &redis::Pipeline,
) {
    let want = describe(&pipe.query_async::<Value>(real).await);
    let got = describe(&pipe.query_async::<Value>(fake).await);
    assert_eq!(got, want);
}

/// Asserts that `line` gets the same reply from both sides.
async fn assert_same_reply(
    real: &mut MultiplexedConnection,
    fake: &mut FakeConnection,
    line: &str,
) {
    let want = describe(&run(real, line).await);
    assert_eq!(describe(&run(fake, line).await), want);
}

#[tokio::test]
async fn pipelines_and_atomic_pipelines_match_redis() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    let _: () = redis::cmd("FLUSHALL").query_async(&mut real).await.unwrap();

    let mut plain = redis::pipe();
    plain
        .set("p", 1)
        .incr("p", 5)
        .get("p")
        .hset("hp", "f", "v")
        .hgetall("hp");
    assert_same_pipeline(&mut real, &mut fake, &plain).await;

    let mut atomic = redis::pipe();
    atomic
        .atomic()
        .set("t", 1)
        .incr("t", 1)
        .del("nokey")
        .exists("t");
    assert_same_pipeline(&mut real, &mut fake, &atomic).await;

    // An error while EXEC runs fails only that command; the crate reports it.
    let mut failing = redis::pipe();
    failing.atomic().set("u", 1).hget("u", "f").incr("u", 1);
    assert_same_pipeline(&mut real, &mut fake, &failing).await;
    assert_same_reply(&mut real, &mut fake, "GET u").await;

    // A command that cannot be queued aborts the transaction: EXECABORT, nothing applied. (The
    // crate builds a richer error from the multiplexed connection's own bookkeeping; the kind is
    // the same.)
    let mut aborted = redis::pipe();
    aborted.atomic().set("v", 1).cmd("NOSUCHCOMMAND").arg(1);
    let want = aborted.query_async::<Value>(&mut real).await.unwrap_err();
    let got = aborted.query_async::<Value>(&mut fake).await.unwrap_err();
    assert_eq!(got.kind(), want.kind());
    assert_eq!(
        got.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::ExecAbort)
    );
    assert_same_reply(&mut real, &mut fake, "EXISTS v").await;
}
