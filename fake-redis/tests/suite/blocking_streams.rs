//! `XREAD` and `XREADGROUP` with `BLOCK` on the engine's clock: timeouts on a manual clock (as
//! the simulator drives it), serving by another client's `XADD` after its command or
//! transaction, what a deleted key or group answers, and `FakeConnection`'s pending future on
//! tokio's paused time. The replies' bytes are compared with Redis's in
//! `blocking_streams_vs_redis.rs`.

use crate::support;

use fake_redis::Frame;
use redis::Value;
use std::time::Duration;
use support::bench::{Bench, UNBLOCKED, bulk, tokio_connections};

/// `[[key, [[id, [field, value]]…]]]`, RESP2's reply of one stream.
fn one_stream(key: &str, entries: &[(&str, &str, &str)]) -> Frame {
    let entries = entries
        .iter()
        .map(|(id, f, v)| Frame::Array(vec![bulk(id), Frame::Array(vec![bulk(f), bulk(v)])]))
        .collect();
    Frame::Array(vec![Frame::Array(vec![bulk(key), Frame::Array(entries)])])
}

#[test]
fn block_times_out_on_the_engine_s_clock_and_zero_waits_forever() {
    let mut b = Bench::new();
    let [a, other] = b.clients();
    b.assert_blocks(a, &["XREAD", "BLOCK", "1500", "STREAMS", "s", "$"]);
    assert_eq!(b.engine.block_deadline(a), Some(1_700_000_001_500));
    assert_eq!(b.blocked_clients(other), "blocked_clients:1");
    let list = b.text(other, &["CLIENT", "LIST"]);
    assert!(list.contains("flags=b "), "{list}");
    assert!(list.contains("cmd=xread "), "{list}");
    b.advance(1499);
    assert!(b.engine.is_blocked(a));
    b.advance(1);
    assert_eq!(b.engine.take_unblocked_reply(a), Some(Frame::NullArray));
    assert_eq!(b.blocked_clients(other), "blocked_clients:0");

    b.assert_blocks(a, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    assert_eq!(b.engine.block_deadline(a), None);
    b.advance(86_400_000);
    assert!(b.engine.is_blocked(a));
    b.run(other, &["XADD", "s", "1-1", "f", "v"]);
    assert_eq!(
        b.engine.take_unblocked_reply(a),
        Some(one_stream("s", &[("1-1", "f", "v")]))
    );
}

#[test]
fn an_xadd_serves_every_plain_reader_after_its_transaction() {
    let mut b = Bench::new();
    let [r1, r2, r3, w] = b.clients();
    b.run(w, &["XADD", "s", "5-0", "old", "1"]);
    // `$` is the last ID when the reader blocks; an explicit ID keeps its own place.
    b.assert_blocks(r1, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    assert_eq!(
        b.block(
            r2,
            &[
                "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "other", "s", "0", "5-0"
            ]
        ),
        None
    );
    b.assert_blocks(r3, &["XREAD", "BLOCK", "0", "STREAMS", "s", "9-0"]);
    b.run(w, &["MULTI"]);
    b.run(w, &["XADD", "s", "6-0", "a", "1"]);
    b.run(w, &["XADD", "s", "7-0", "b", "2"]);
    assert!(b.engine.is_blocked(r1), "served only after EXEC");
    b.run(w, &["EXEC"]);
    assert_eq!(
        b.engine.take_unblocked_reply(r1),
        Some(one_stream("s", &[("6-0", "a", "1"), ("7-0", "b", "2")]))
    );
    assert_eq!(
        b.engine.take_unblocked_reply(r2),
        Some(one_stream("s", &[("6-0", "a", "1")]))
    );
    // Nothing after 9-0 yet: it stays blocked.
    assert!(b.engine.is_blocked(r3));
    b.run(w, &["XADD", "s", "10-0", "c", "3"]);
    assert_eq!(
        b.engine.take_unblocked_reply(r3),
        Some(one_stream("s", &[("10-0", "c", "3")]))
    );
}

#[test]
fn xreadgroup_serves_consumers_in_turn_and_makes_the_entries_pending() {
    let mut b = Bench::new();
    let [c1, c2, c3, w] = b.clients();
    b.run(w, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let read = |consumer: &'static str, noack: bool| {
        let mut words = vec!["XREADGROUP", "GROUP", "g", consumer, "BLOCK", "0"];
        if noack {
            words.push("NOACK");
        }
        words.extend(["STREAMS", "s", ">"]);
        words
    };
    b.assert_blocks(c1, &read("alice", false));
    b.assert_blocks(c2, &read("bob", false));
    b.assert_blocks(c3, &read("carol", true));
    // The first blocked takes the entry; the others have nothing new and wait on.
    b.run(w, &["XADD", "s", "1-0", "a", "1"]);
    assert_eq!(
        b.engine.take_unblocked_reply(c1),
        Some(one_stream("s", &[("1-0", "a", "1")]))
    );
    assert!(b.engine.is_blocked(c2) && b.engine.is_blocked(c3));
    b.run(w, &["XADD", "s", "2-0", "b", "2"]);
    assert_eq!(
        b.engine.take_unblocked_reply(c2),
        Some(one_stream("s", &[("2-0", "b", "2")]))
    );
    b.run(w, &["XADD", "s", "3-0", "c", "3"]);
    assert_eq!(
        b.engine.take_unblocked_reply(c3),
        Some(one_stream("s", &[("3-0", "c", "3")]))
    );
    // NOACK left 3-0 out of the pending list; bob was created when served.
    assert_eq!(
        b.run(w, &["XPENDING", "s", "g"]),
        Frame::Array(vec![
            Frame::Integer(2),
            bulk("1-0"),
            bulk("2-0"),
            Frame::Array(vec![
                Frame::Array(vec![bulk("alice"), bulk("1")]),
                Frame::Array(vec![bulk("bob"), bulk("1")]),
            ]),
        ])
    );
}

#[test]
fn a_group_reader_is_told_when_its_key_or_group_goes_and_a_plain_reader_waits_on() {
    let mut b = Bench::new();
    let [g1, g2, plain, w] = b.clients();
    let group_read = [
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ];
    b.run(w, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    b.assert_blocks(g1, &group_read);
    b.assert_blocks(plain, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    b.run(w, &["XGROUP", "DESTROY", "s", "g"]);
    assert_eq!(
        b.engine.take_unblocked_reply(g1),
        Some(Frame::error(
            "NOGROUP the consumer group this client was blocked on no longer exists"
        ))
    );
    b.run(w, &["XGROUP", "CREATE", "s", "g", "$"]);
    b.assert_blocks(g2, &group_read);
    b.run(w, &["DEL", "s"]);
    assert_eq!(
        b.engine.take_unblocked_reply(g2),
        Some(Frame::error("UNBLOCKED the stream key no longer exists"))
    );
    // A plain reader waits through a key of another type and is served by the next stream.
    b.run(w, &["SET", "s", "text"]);
    b.run(w, &["DEL", "s"]);
    assert!(b.engine.is_blocked(plain));
    b.run(w, &["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        b.engine.take_unblocked_reply(plain),
        Some(one_stream("s", &[("1-0", "f", "v")]))
    );
    // Deleted and made again with the group in one transaction: the entry serves it.
    b.run(w, &["XGROUP", "CREATE", "s", "g", "$"]);
    b.assert_blocks(g1, &group_read);
    for words in [
        &["MULTI"][..],
        &["DEL", "s"],
        &["XADD", "s", "2-0", "a", "1"],
        &["XGROUP", "CREATE", "s", "g", "0"],
        &["EXEC"],
    ] {
        b.run(w, words);
    }
    assert_eq!(
        b.engine.take_unblocked_reply(g1),
        Some(one_stream("s", &[("2-0", "a", "1")]))
    );
}

#[test]
fn block_does_not_wait_inside_multi_and_client_unblock_ends_it() {
    let mut b = Bench::new();
    let [a, other] = b.clients();
    b.run(a, &["MULTI"]);
    b.run(a, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    assert_eq!(
        b.block(a, &["EXEC"]),
        Some(Frame::Array(vec![Frame::NullArray]))
    );
    b.assert_blocks(a, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    b.assert_unblocks(other, a, None, Frame::NullArray);
    b.run(other, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let group_read = [
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ];
    b.assert_blocks(a, &group_read);
    b.assert_unblocks(other, a, Some("ERROR"), Frame::error(UNBLOCKED));
    // A disconnect and a restart leave no reader behind.
    b.assert_blocks(a, &group_read);
    b.engine.disconnect(a);
    assert_eq!(b.blocked_clients(other), "blocked_clients:0");
    b.run(other, &["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        b.run(other, &["XPENDING", "s", "g", "-", "+", "10"]),
        Frame::Array(vec![])
    );
    let c = b.engine.connect();
    b.assert_blocks(c, &["XREAD", "BLOCK", "5", "STREAMS", "s", "$"]);
    b.engine.restart();
    assert_eq!(b.engine.next_block_deadline(), None);
    let d = b.engine.connect();
    assert_eq!(b.blocked_clients(d), "blocked_clients:0");
}

#[tokio::test(start_paused = true)]
async fn xread_block_through_fake_connection_on_tokio_s_paused_clock() {
    let (mut conn, mut writer) = tokio_connections();
    let start = tokio::time::Instant::now();
    let reply: Value = redis::cmd("XREAD")
        .arg(&["BLOCK", "30000", "STREAMS", "s", "$"])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(reply, Value::Nil);
    assert_eq!(start.elapsed(), Duration::from_secs(30));

    let start = tokio::time::Instant::now();
    let add = async move {
        tokio::time::sleep(Duration::from_secs(12)).await;
        let _: Value = redis::cmd("XADD")
            .arg(&["s", "1-1", "f", "v"])
            .query_async(&mut writer)
            .await
            .unwrap();
    };
    let read = async {
        let reply: Value = redis::cmd("XREAD")
            .arg(&["BLOCK", "30000", "STREAMS", "s", "$"])
            .query_async(&mut conn)
            .await
            .unwrap();
        (reply, start.elapsed())
    };
    let ((reply, elapsed), ()) = tokio::join!(read, add);
    let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    assert_eq!(
        reply,
        Value::Array(vec![Value::Array(vec![
            b("s"),
            Value::Array(vec![Value::Array(vec![
                b("1-1"),
                Value::Array(vec![b("f"), b("v")])
            ])])
        ])])
    );
    assert_eq!(elapsed, Duration::from_secs(12));
}

/// Redis 7.2 and later count in `INFO clients` the keys blocked clients wait on, and apart the
/// ones a blocked `XREADGROUP` waits on (it is answered when its key goes); Redis 7.0 has
/// neither line. Read off redis-server 7.4.1.
#[test]
fn info_counts_the_keys_blocked_clients_wait_on_after_redis_7_0() {
    use fake_redis::{Engine, EngineConfig, ManualClock, Version};
    let mut e = Engine::with_config(
        ManualClock::new(1_700_000_000_000),
        EngineConfig {
            version: Version::V7_4,
            ..EngineConfig::default()
        },
    );
    let [a, b, b2, c, other] = std::array::from_fn(|_| e.connect());
    let argv = |words: &[&str]| -> Vec<bytes::Bytes> {
        words
            .iter()
            .map(|w| bytes::Bytes::from(w.to_string()))
            .collect()
    };
    let counts = |e: &mut Engine| -> String {
        let Frame::Verbatim { text, .. } = e.execute(other, &argv(&["INFO", "clients"])) else {
            panic!("INFO answers with text");
        };
        String::from_utf8_lossy(&text)
            .lines()
            .filter(|l| l.starts_with("total_blocking_keys"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    e.execute(
        other,
        &argv(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]),
    );
    assert_eq!(
        counts(&mut e),
        "total_blocking_keys:0 total_blocking_keys_on_nokey:0"
    );
    let group_read = |consumer| {
        [
            "XREADGROUP",
            "GROUP",
            "g",
            consumer,
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ]
    };
    assert_eq!(e.execute_or_block(a, &argv(&["BLPOP", "l", "0"])), None);
    assert_eq!(e.execute_or_block(b, &argv(&group_read("c1"))), None);
    assert_eq!(e.execute_or_block(b2, &argv(&group_read("c2"))), None);
    assert_eq!(
        counts(&mut e),
        "total_blocking_keys:2 total_blocking_keys_on_nokey:1"
    );
    let xread = ["XREAD", "BLOCK", "0", "STREAMS", "t", "$"];
    assert_eq!(e.execute_or_block(c, &argv(&xread)), None);
    assert_eq!(
        counts(&mut e),
        "total_blocking_keys:3 total_blocking_keys_on_nokey:1"
    );
    // The first group reader takes the entry; the second finds nothing new and waits on.
    e.execute(other, &argv(&["XADD", "s", "1-1", "f", "v"]));
    assert!(!e.is_blocked(b) && e.is_blocked(b2));
    assert_eq!(
        counts(&mut e),
        "total_blocking_keys:3 total_blocking_keys_on_nokey:1"
    );
    e.execute(other, &argv(&["CLIENT", "UNBLOCK", &b2.0.to_string()]));
    assert_eq!(
        counts(&mut e),
        "total_blocking_keys:2 total_blocking_keys_on_nokey:0"
    );

    let mut old = Engine::new(ManualClock::new(1_700_000_000_000));
    let [x, y] = std::array::from_fn(|_| old.connect());
    assert_eq!(old.execute_or_block(x, &argv(&["BLPOP", "l", "0"])), None);
    let Frame::Verbatim { text, .. } = old.execute(y, &argv(&["INFO", "clients"])) else {
        panic!("INFO answers with text");
    };
    assert!(!String::from_utf8_lossy(&text).contains("total_blocking_keys"));
}
