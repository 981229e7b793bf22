//! Blocking commands on the engine's clock: the engine's registry and serving order on a manual
//! clock (as the simulator drives it), and `FakeConnection`'s pending future on tokio's paused
//! time.

use crate::support;

use fake_redis::{Engine, FakeConnection, Frame, NodeId, TokioClock, shared};
use redis::{AsyncCommands, Value};
use std::time::Duration;
use support::bench::{Bench, UNBLOCKED, bulk, tokio_connections};

fn array(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|s| bulk(s)).collect())
}

#[test]
fn a_timeout_fires_when_the_clock_passes_it() {
    let mut b = Bench::new();
    let [a, other] = b.clients();
    b.assert_blocks(a, &["BLPOP", "q", "30"]);
    assert!(b.engine.is_blocked(a));
    assert_eq!(b.engine.block_deadline(a), Some(1_700_000_000_000 + 30_000));
    assert_eq!(b.engine.next_block_deadline(), b.engine.block_deadline(a));
    assert_eq!(b.blocked_clients(other), "blocked_clients:1");
    let list = b.text(other, &["CLIENT", "LIST"]);
    assert!(list.lines().next().unwrap().contains(" flags=b "), "{list}");
    b.advance(29_999);
    assert_eq!(b.engine.take_unblocked_reply(a), None);
    b.advance(1);
    assert_eq!(b.engine.take_unblocked_reply(a), Some(Frame::NullArray));
    assert!(!b.engine.is_blocked(a));
    assert_eq!(b.blocked_clients(other), "blocked_clients:0");
    // A timeout of 0 waits forever.
    b.assert_blocks(a, &["BRPOP", "q", "0"]);
    assert_eq!(b.engine.block_deadline(a), None);
    b.advance(86_400_000);
    assert!(b.engine.is_blocked(a));
}

#[test]
fn a_push_serves_the_first_blocked_client_first() {
    let mut b = Bench::new();
    let [a, c, pusher] = b.clients();
    b.assert_blocks(a, &["BLPOP", "q", "0"]);
    b.assert_blocks(c, &["BLPOP", "q", "0"]);
    assert_eq!(b.run(pusher, &["RPUSH", "q", "1"]), Frame::Integer(1));
    assert_eq!(b.engine.take_unblocked_reply(a), Some(array(&["q", "1"])));
    assert!(b.engine.is_blocked(c));
    // `a` blocks again, behind `c`; a push of two serves `c` first, and the key is gone.
    b.assert_blocks(a, &["BLPOP", "q", "0"]);
    assert_eq!(b.run(pusher, &["RPUSH", "q", "2", "3"]), Frame::Integer(2));
    assert_eq!(b.engine.take_unblocked_reply(c), Some(array(&["q", "2"])));
    assert_eq!(b.engine.take_unblocked_reply(a), Some(array(&["q", "3"])));
    assert_eq!(b.run(pusher, &["EXISTS", "q"]), Frame::Integer(0));
}

#[test]
fn clients_are_served_after_the_whole_transaction() {
    let mut b = Bench::new();
    let [a, pusher] = b.clients();
    b.assert_blocks(a, &["BLPOP", "q", "0"]);
    for words in [&["MULTI"][..], &["RPUSH", "q", "x"], &["LPOP", "q"]] {
        b.run(pusher, words);
    }
    b.run(pusher, &["EXEC"]);
    assert!(b.engine.is_blocked(a), "the key was empty again at the end");
    for words in [
        &["MULTI"][..],
        &["RPUSH", "q", "x"],
        &["DEL", "q"],
        &["RPUSH", "q", "y"],
    ] {
        b.run(pusher, words);
    }
    b.run(pusher, &["EXEC"]);
    assert_eq!(b.engine.take_unblocked_reply(a), Some(array(&["q", "y"])));
}

#[test]
fn a_served_move_makes_its_destination_ready() {
    let mut b = Bench::new();
    let [a, c, pusher] = b.clients();
    b.assert_blocks(a, &["BLMOVE", "q", "d", "LEFT", "LEFT", "0"]);
    b.assert_blocks(c, &["BLPOP", "d", "0"]);
    b.run(pusher, &["RPUSH", "q", "x"]);
    assert_eq!(b.engine.take_unblocked_reply(a), Some(bulk("x")));
    assert_eq!(b.engine.take_unblocked_reply(c), Some(array(&["d", "x"])));
}

#[test]
fn a_destination_of_another_type_answers_wrongtype_and_moves_nothing() {
    let mut b = Bench::new();
    let [a, pusher] = b.clients();
    b.assert_blocks(a, &["BRPOPLPUSH", "q", "d", "0"]);
    b.run(pusher, &["SET", "d", "s"]);
    b.run(pusher, &["RPUSH", "q", "x"]);
    assert_eq!(
        b.engine.take_unblocked_reply(a),
        Some(Frame::error(
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        ))
    );
    assert_eq!(b.run(pusher, &["LRANGE", "q", "0", "-1"]), array(&["x"]));
}

#[test]
fn a_key_of_another_type_leaves_the_client_blocked() {
    let mut b = Bench::new();
    let [a, pusher] = b.clients();
    b.assert_blocks(a, &["BLPOP", "q", "0"]);
    b.run(pusher, &["SET", "q", "s"]);
    b.run(pusher, &["DEL", "q"]);
    b.run(pusher, &["ZADD", "q", "1", "m"]);
    assert!(b.engine.is_blocked(a));
    b.run(pusher, &["DEL", "q"]);
    b.run(pusher, &["RPUSH", "q", "v"]);
    assert_eq!(b.engine.take_unblocked_reply(a), Some(array(&["q", "v"])));
}

#[test]
fn sorted_sets_serve_their_pops() {
    let mut b = Bench::new();
    let [a, c, pusher] = b.clients();
    b.assert_blocks(a, &["BZPOPMIN", "z", "0"]);
    b.assert_blocks(c, &["BZMPOP", "0", "1", "z", "MAX", "COUNT", "2"]);
    b.run(pusher, &["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(
        b.engine.take_unblocked_reply(a),
        Some(Frame::Array(vec![bulk("z"), bulk("a"), Frame::Double(1.0)]))
    );
    assert_eq!(
        b.engine.take_unblocked_reply(c),
        Some(Frame::Array(vec![
            bulk("z"),
            Frame::Array(vec![
                Frame::Array(vec![bulk("c"), Frame::Double(3.0)]),
                Frame::Array(vec![bulk("b"), Frame::Double(2.0)]),
            ]),
        ]))
    );
}

#[test]
fn nothing_blocks_inside_multi_or_for_a_door_that_does_not_wait() {
    let mut b = Bench::new();
    let a = b.engine.connect();
    b.run(a, &["MULTI"]);
    for words in [
        &["BLPOP", "q", "0"][..],
        &["BLMOVE", "q", "d", "LEFT", "LEFT", "0"],
        &["BRPOPLPUSH", "q", "d", "0"],
        &["BZPOPMIN", "z", "0"],
        &["BLMPOP", "0", "1", "q", "LEFT"],
        &["BZMPOP", "0", "1", "z", "MIN"],
    ] {
        assert_eq!(b.block(a, words), Some(Frame::simple("QUEUED")));
    }
    assert_eq!(
        b.block(a, &["EXEC"]),
        Some(Frame::Array(vec![
            Frame::NullArray,
            Frame::Null,
            Frame::Null,
            Frame::NullArray,
            Frame::NullArray,
            Frame::NullArray,
        ]))
    );
    assert_eq!(b.run(a, &["BLPOP", "q", "0"]), Frame::NullArray);
    assert!(!b.engine.is_blocked(a));
}

#[cfg(feature = "lua")]
#[test]
fn nothing_blocks_inside_a_script() {
    let mut b = Bench::new();
    let a = b.engine.connect();
    // BLMPOP and BZMPOP may run in a script, and answer at once.
    for body in [
        "return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')",
        "return redis.call('bzmpop', 0, 1, KEYS[1], 'MIN')",
    ] {
        assert_eq!(b.block(a, &["EVAL", body, "1", "q"]), Some(Frame::Null));
        assert!(!b.engine.is_blocked(a));
    }
    // The older blocking commands are refused there, as Redis 7.0 flags them `noscript`.
    let Some(Frame::Error(text)) = b.block(
        a,
        &["EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "q"],
    ) else {
        panic!("BLPOP from a script is an error");
    };
    assert!(
        text.starts_with("ERR This Redis command is not allowed from script script: "),
        "{text}"
    );
    assert!(!b.engine.is_blocked(a));
}

#[test]
fn client_unblock_ends_a_block_as_a_timeout_or_an_error() {
    let mut b = Bench::new();
    let [a, other] = b.clients();
    let id = a.0.to_string();
    b.assert_blocks(a, &["BLPOP", "q", "0"]);
    b.assert_unblocks(other, a, None, Frame::NullArray);
    assert_eq!(b.run(other, &["CLIENT", "UNBLOCK", &id]), Frame::Integer(0));
    b.assert_blocks(a, &["BLPOP", "q", "0"]);
    assert_eq!(
        b.run(other, &["CLIENT", "UNBLOCK", &id, "foo"]),
        Frame::error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    );
    b.assert_unblocks(other, a, Some("ERROR"), Frame::error(UNBLOCKED));
    assert_eq!(
        b.run(other, &["CLIENT", "UNBLOCK", "abc"]),
        Frame::error("ERR value is not an integer or out of range")
    );
}

#[test]
fn a_disconnect_or_a_restart_while_blocked_leaves_nothing_behind() {
    let mut b = Bench::new();
    let [a, pusher] = b.clients();
    b.assert_blocks(a, &["BLPOP", "q", "5"]);
    b.engine.disconnect(a);
    assert_eq!(b.blocked_clients(pusher), "blocked_clients:0");
    assert_eq!(b.engine.next_block_deadline(), None);
    b.run(pusher, &["RPUSH", "q", "x"]);
    assert_eq!(b.run(pusher, &["LLEN", "q"]), Frame::Integer(1));
    let c = b.engine.connect();
    b.assert_blocks(c, &["BLPOP", "other", "5"]);
    b.engine.restart();
    assert!(!b.engine.is_connected(c));
    assert_eq!(b.engine.next_block_deadline(), None);
    let d = b.engine.connect();
    assert_eq!(b.blocked_clients(d), "blocked_clients:0");
}

#[test]
fn timeouts_are_read_as_redis_reads_them() {
    let mut b = Bench::new();
    let a = b.engine.connect();
    for (timeout, error) in [
        ("abc", "ERR timeout is not a float or out of range"),
        ("", "ERR timeout is not a float or out of range"),
        (" 1", "ERR timeout is not a float or out of range"),
        ("nan", "ERR timeout is not a float or out of range"),
        ("-1", "ERR timeout is negative"),
        ("inf", "ERR timeout is negative"),
        ("-inf", "ERR timeout is negative"),
        ("1e400", "ERR timeout is negative"),
        ("100000000000000000", "ERR timeout is negative"),
    ] {
        assert_eq!(
            b.block(a, &["BLPOP", "q", timeout]),
            Some(Frame::error(error)),
            "{timeout:?}"
        );
    }
    // Fractions of a millisecond round up: 0.0001 is one millisecond, and -0.001 (a little
    // above -1 ms as a long double) rounds up to 0, which waits forever.
    let now = b.engine.now();
    for (timeout, deadline) in [
        ("1.5", Some(now + 1500)),
        ("0.001", Some(now + 1)),
        ("0.0001", Some(now + 1)),
        ("0.0015", Some(now + 2)),
        ("-0.001", None),
        ("0x10", Some(now + 16_000)),
        ("-0.0001", None),
        ("9223372036854775", Some(i64::MAX)),
    ] {
        assert_eq!(b.block(a, &["BLPOP", "q", timeout]), None, "{timeout:?}");
        assert_eq!(b.engine.block_deadline(a), deadline, "{timeout:?}");
        b.engine.cancel_block(a);
    }
    // The timeout is read before the keys: WRONGTYPE comes after it.
    b.run(a, &["SET", "s", "v"]);
    assert_eq!(
        b.block(a, &["BLPOP", "s", "x"]),
        Some(Frame::error("ERR timeout is not a float or out of range"))
    );
    assert_eq!(
        b.block(a, &["BLPOP", "s", "0"]),
        Some(Frame::error(
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        ))
    );
}

#[tokio::test(start_paused = true)]
async fn blpop_through_fake_connection_times_out_on_tokio_s_paused_clock() {
    let engine = shared(Engine::new(TokioClock::new()));
    let mut conn = FakeConnection::new(engine, NodeId(1));
    let start = tokio::time::Instant::now();
    let reply: Value = redis::cmd("BLPOP")
        .arg("q")
        .arg(30)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(reply, Value::Nil);
    assert_eq!(start.elapsed(), Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn blpop_through_fake_connection_returns_what_another_connection_pushes() {
    let (mut conn, mut pusher) = tokio_connections();
    let start = tokio::time::Instant::now();
    let push = async move {
        tokio::time::sleep(Duration::from_secs(12)).await;
        let n: i64 = pusher.rpush("q", "job").await.unwrap();
        assert_eq!(n, 1);
    };
    let pop = async {
        let got: Option<(String, String)> = conn.blpop("q", 30.0).await.unwrap();
        (got, start.elapsed())
    };
    let ((got, elapsed), ()) = tokio::join!(pop, push);
    assert_eq!(got, Some(("q".to_owned(), "job".to_owned())));
    assert_eq!(elapsed, Duration::from_secs(12));
}

#[tokio::test(start_paused = true)]
async fn a_clone_s_command_waits_behind_a_blocked_one_as_on_one_connection() {
    let engine = shared(Engine::new(TokioClock::new()));
    let mut conn = FakeConnection::new(engine.clone(), NodeId(1));
    let mut clone = conn.clone();
    let mut pusher = FakeConnection::new(engine.clone(), NodeId(2));
    let start = tokio::time::Instant::now();
    let pop = async {
        let got: Option<(String, String)> = conn.blpop("q", 0.0).await.unwrap();
        (got, start.elapsed())
    };
    let after = async {
        // Sent once the BLPOP is blocked: it runs only when the BLPOP has its reply.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let got: Option<String> = clone.get("x").await.unwrap();
        (got, start.elapsed())
    };
    // Within the GET's response timeout (3 s), which counts from when it was sent, as on a
    // multiplexed connection to Redis.
    let push = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let _: i64 = pusher.rpush("q", "job").await.unwrap();
    };
    let ((popped, popped_at), (got, got_at), ()) = tokio::join!(pop, after, push);
    assert_eq!(popped, Some(("q".to_owned(), "job".to_owned())));
    assert_eq!(got, None, "GET x has its own reply, not the BLPOP's");
    assert_eq!(popped_at, Duration::from_secs(2));
    assert_eq!(got_at, Duration::from_secs(2));
    assert_eq!(
        redis::cmd("INFO")
            .arg("clients")
            .query_async::<String>(&mut pusher)
            .await
            .unwrap()
            .lines()
            .find(|l| l.starts_with("blocked_clients:")),
        Some("blocked_clients:0")
    );
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_stops_waiting_takes_its_block_back() {
    let engine = shared(Engine::new(TokioClock::new()));
    let mut conn = FakeConnection::new(engine.clone(), NodeId(1));
    let waited = tokio::time::timeout(
        Duration::from_secs(1),
        redis::cmd("BLPOP")
            .arg("q")
            .arg(0)
            .query_async::<Value>(&mut conn),
    )
    .await;
    assert!(waited.is_err());
    let mut pusher = FakeConnection::new(engine, NodeId(2));
    let _: i64 = pusher.rpush("q", "kept").await.unwrap();
    let len: i64 = pusher.llen("q").await.unwrap();
    assert_eq!(len, 1, "no blocked client took the element");
    let next: Option<String> = conn.lpop("q", None).await.unwrap();
    assert_eq!(next.as_deref(), Some("kept"));
}
