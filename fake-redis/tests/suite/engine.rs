//! The engine driven directly on a `ManualClock`: expiry, transactions, pub/sub, scripts, lists.

use crate::support;

use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, ManualClock, Value};
use lock_core::keys::{KeyLayout, Owner, RequestId};
use lock_core::script::{acquire, release};
use lock_core::time::{Lease, Millis};
use support::argv;

fn setup() -> (ManualClock, Engine, ClientId) {
    let clock = ManualClock::new(1_000_000);
    // The lock's scripts run as their native twins here.
    let mut engine = lock_core::fake::engine(clock.clone());
    let c = engine.connect();
    (clock, engine, c)
}

fn run(e: &mut Engine, c: ClientId, cmd: &str) -> Frame {
    e.execute(c, &argv(cmd))
}

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn a_key_exists_at_its_deadline_and_is_gone_one_millisecond_later() {
    let (clock, mut e, c) = setup();
    assert_eq!(run(&mut e, c, "SET k v PX 100"), Frame::OK);
    clock.advance(100);
    assert_eq!(run(&mut e, c, "PTTL k"), int(0));
    assert_eq!(run(&mut e, c, "GET k"), bulk("v"));
    clock.advance(1);
    assert_eq!(run(&mut e, c, "GET k"), Frame::Null);
    assert_eq!(run(&mut e, c, "PTTL k"), int(-2));
}

#[test]
fn pexpire_at_or_before_now_deletes_and_replies_one() {
    let (_clock, mut e, c) = setup();
    run(&mut e, c, "SET k v");
    assert_eq!(run(&mut e, c, "PEXPIRE k 0"), int(1));
    assert_eq!(run(&mut e, c, "EXISTS k"), int(0));
    run(&mut e, c, "SET k v");
    assert_eq!(run(&mut e, c, "PEXPIRE k -5"), int(1));
    assert_eq!(run(&mut e, c, "DBSIZE"), int(0));
    assert_eq!(run(&mut e, c, "PEXPIRE nokey 100"), int(0));
}

#[test]
fn hash_writes_keep_the_ttl_and_set_clears_it() {
    let (_clock, mut e, c) = setup();
    run(&mut e, c, "HSET h f 1");
    run(&mut e, c, "PEXPIRE h 5000");
    run(&mut e, c, "HINCRBY h f 2");
    run(&mut e, c, "HSET h g 1");
    assert_eq!(run(&mut e, c, "PTTL h"), int(5000));
    run(&mut e, c, "SET s v EX 10");
    run(&mut e, c, "SET s w");
    assert_eq!(run(&mut e, c, "TTL s"), int(-1));
    run(&mut e, c, "SET s v EX 10");
    run(&mut e, c, "SET s w KEEPTTL");
    assert_eq!(run(&mut e, c, "TTL s"), int(10));
    assert_eq!(run(&mut e, c, "INCR n"), int(1));
    run(&mut e, c, "EXPIRE n 100");
    run(&mut e, c, "INCR n");
    assert_eq!(run(&mut e, c, "TTL n"), int(100));
}

#[test]
fn an_expired_key_stays_counted_until_the_active_cycle_removes_it() {
    let (clock, mut e, c) = setup();
    for i in 0..100 {
        run(&mut e, c, &format!("SET k{i} v PX 50"));
    }
    run(&mut e, c, "SET keep v");
    assert_eq!(run(&mut e, c, "DBSIZE"), int(101));
    // Logically expired, physically present: DBSIZE still counts them, as in Redis.
    clock.advance(51);
    assert_eq!(run(&mut e, c, "EXISTS k1"), int(0));
    let physical = e.dbsize(0);
    assert!(physical > 50, "{physical}");
    // Time passes: the 10 Hz cycle catches up on the next command.
    clock.advance(1_000);
    run(&mut e, c, "PING");
    assert_eq!(run(&mut e, c, "DBSIZE"), int(1));
}

#[test]
fn exists_counts_duplicates_and_del_counts_each_key_once() {
    let (_clock, mut e, c) = setup();
    run(&mut e, c, "SET a 1");
    assert_eq!(run(&mut e, c, "EXISTS a a nokey"), int(2));
    assert_eq!(run(&mut e, c, "DEL a a nokey"), int(1));
}

#[test]
fn errors_are_worded_as_redis_words_them() {
    let (_clock, mut e, c) = setup();
    assert_eq!(
        run(&mut e, c, "GET"),
        Frame::error("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(&mut e, c, "foo bar"),
        Frame::error("ERR unknown command 'foo', with args beginning with: 'bar' ")
    );
    run(&mut e, c, "SET s x");
    assert_eq!(
        run(&mut e, c, "HGET s f"),
        Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(
        run(&mut e, c, "INCR s"),
        Frame::error("ERR value is not an integer or out of range")
    );
    run(&mut e, c, "SET big 9223372036854775807");
    assert_eq!(
        run(&mut e, c, "INCR big"),
        Frame::error("ERR increment or decrement would overflow")
    );
    run(&mut e, c, "HSET h f x");
    assert_eq!(
        run(&mut e, c, "HINCRBY h f 1"),
        Frame::error("ERR hash value is not an integer")
    );
    assert_eq!(
        run(&mut e, c, "EXPIRE s 9223372036854775807"),
        Frame::error("ERR invalid expire time in 'expire' command")
    );
    assert_eq!(
        run(&mut e, c, "SET k v NX XX"),
        Frame::error("ERR syntax error")
    );
}

#[test]
fn transactions_abort_on_queued_errors_and_touched_watches() {
    let (_clock, mut e, c) = setup();
    let other = e.connect();
    assert_eq!(run(&mut e, c, "MULTI"), Frame::OK);
    assert_eq!(run(&mut e, c, "SET a 1"), Frame::simple("QUEUED"));
    run(&mut e, c, "GET");
    assert_eq!(
        run(&mut e, c, "EXEC"),
        Frame::error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(run(&mut e, c, "EXISTS a"), int(0));

    run(&mut e, c, "WATCH w");
    run(&mut e, other, "SET w 1");
    run(&mut e, c, "MULTI");
    run(&mut e, c, "SET a 1");
    assert_eq!(run(&mut e, c, "EXEC"), Frame::NullArray);
    assert_eq!(run(&mut e, c, "EXISTS a"), int(0));

    run(&mut e, c, "WATCH w");
    run(&mut e, c, "MULTI");
    run(&mut e, c, "SET a 1");
    run(&mut e, c, "INCR a");
    assert_eq!(
        run(&mut e, c, "EXEC"),
        Frame::Array(vec![Frame::OK, int(2)])
    );
}

#[test]
fn queued_commands_after_a_select_run_in_the_selected_database() {
    let (_clock, mut e, c) = setup();
    run(&mut e, c, "MULTI");
    run(&mut e, c, "SET k zero");
    run(&mut e, c, "SELECT 1");
    run(&mut e, c, "SET k one");
    assert_eq!(
        run(&mut e, c, "EXEC"),
        Frame::Array(vec![Frame::OK, Frame::OK, Frame::OK])
    );
    assert_eq!(run(&mut e, c, "GET k"), bulk("one"));
    run(&mut e, c, "SELECT 0");
    assert_eq!(run(&mut e, c, "GET k"), bulk("zero"));
}

#[test]
fn a_closed_connection_leaves_no_subscription_behind() {
    let (_clock, mut e, c) = setup();
    let sub = e.connect();
    run(&mut e, sub, "SUBSCRIBE news");
    run(&mut e, sub, "PSUBSCRIBE n*");
    run(&mut e, sub, "WATCH k");
    e.disconnect(sub);
    assert_eq!(run(&mut e, c, "PUBLISH news hello"), int(0));
    assert_eq!(run(&mut e, c, "PUBSUB CHANNELS"), Frame::Array(vec![]));
    assert_eq!(run(&mut e, c, "PUBSUB NUMPAT"), int(0));
    // QUIT closes the connection after its reply, with the same cleanup.
    let quitter = e.connect();
    run(&mut e, quitter, "SUBSCRIBE news");
    assert_eq!(run(&mut e, quitter, "QUIT"), Frame::OK);
    assert!(!e.is_connected(quitter));
    assert_eq!(run(&mut e, c, "PUBLISH news hello"), int(0));
}

#[test]
fn publish_reaches_subscribers_outboxes_and_resp2_subscribers_are_restricted() {
    let (_clock, mut e, c) = setup();
    let sub = e.connect();
    let reply = run(&mut e, sub, "SUBSCRIBE a b");
    assert_eq!(
        reply,
        Frame::Push(vec![bulk("subscribe"), bulk("a"), int(1)])
    );
    // The second confirmation follows in the outbox.
    assert_eq!(
        e.drain_outbox(sub),
        vec![Frame::Push(vec![bulk("subscribe"), bulk("b"), int(2)])]
    );
    assert_eq!(run(&mut e, c, "PUBLISH a hello"), int(1));
    assert_eq!(run(&mut e, c, "PUBLISH zzz hello"), int(0));
    assert_eq!(
        e.drain_outbox(sub),
        vec![Frame::Push(vec![bulk("message"), bulk("a"), bulk("hello")])]
    );
    assert_eq!(
        run(&mut e, sub, "GET x"),
        Frame::error(
            "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
             RESET are allowed in this context"
        )
    );
    assert_eq!(
        run(&mut e, sub, "PING"),
        Frame::Array(vec![bulk("pong"), bulk("")])
    );
    // A RESP3 connection may run anything while subscribed.
    let sub3 = e.connect();
    run(&mut e, sub3, "HELLO 3");
    run(&mut e, sub3, "SUBSCRIBE a");
    assert_eq!(run(&mut e, sub3, "GET x"), Frame::Null);
}

#[test]
fn scripts_run_natively_only_once_loaded() {
    let (clock, mut e, c) = setup();
    let keys = KeyLayout::default().lock("orders");
    let owner = Owner::new("c0ffee", 1);
    let lease = Lease::from_millis(30_000).unwrap();
    let call = acquire::call(&keys, &RequestId(1), lease, &owner, Millis(10_000));
    assert_eq!(
        e.execute(c, &call.evalsha_argv()),
        Frame::error("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(
        e.execute(c, &call.script.load_argv()),
        Frame::Bulk(Bytes::from(call.script.sha().to_owned()))
    );
    assert_eq!(e.execute(c, &call.evalsha_argv()), Frame::Null);
    assert_eq!(run(&mut e, c, "PTTL orders"), int(30_000));
    assert_eq!(run(&mut e, c, "HGET orders c0ffee:1"), bulk("1"));

    let sub = e.connect();
    run(&mut e, sub, "SUBSCRIBE redisson_lock__channel:{orders}");
    let release = release::call(&keys, &RequestId(2), lease, &owner, Millis(10_000));
    e.execute(c, &release.script.load_argv());
    clock.advance(5);
    assert_eq!(e.execute(c, &release.evalsha_argv()), int(1));
    // PUBLISH from inside the script reached the subscriber.
    assert_eq!(
        e.drain_outbox(sub),
        vec![Frame::Push(vec![
            bulk("message"),
            bulk("redisson_lock__channel:{orders}"),
            bulk("0")
        ])]
    );

    let reply = e.execute(
        c,
        &[
            Bytes::from_static(b"EVAL"),
            Bytes::from_static(b"return 1"),
            Bytes::from_static(b"0"),
        ],
    );
    // Without Lua, a body with no native twin is refused by name; with it, it runs.
    #[cfg(not(feature = "lua"))]
    {
        let text = reply.error_text().unwrap_or_default().to_owned();
        assert!(
            text.contains("e0e1f9fabfc9d4800c877a703b823ac0578ff8db"),
            "{text}"
        );
        assert!(text.contains("no native implementation"), "{text}");
    }
    #[cfg(feature = "lua")]
    assert_eq!(reply, Frame::Integer(1));

    assert_eq!(run(&mut e, c, "SCRIPT FLUSH"), Frame::OK);
    assert_eq!(
        e.execute(c, &call.evalsha_argv()),
        Frame::error("NOSCRIPT No matching script. Please use EVAL.")
    );
}

/// A native script that names one key twice (as the lock and as the latch) ends as the Lua body
/// does on Redis: the last `SET` replaces the hash its `HINCRBY` made, and there is one key.
#[test]
fn a_script_naming_one_key_twice_leaves_one_key() {
    let (_clock, mut e, c) = setup();
    let mut call = acquire::call(
        &KeyLayout::default().lock("orders"),
        &RequestId(1),
        Lease::from_millis(30_000).unwrap(),
        &Owner::new("c0ffee", 1),
        Millis(10_000),
    );
    // Two copies of the bytes, at two addresses, as a client's request would bring them.
    call.keys = vec![Bytes::copy_from_slice(b"k"), Bytes::copy_from_slice(b"k")];
    e.execute(c, &call.script.load_argv());
    assert_eq!(e.execute(c, &call.evalsha_argv()), Frame::Null);
    assert_eq!(run(&mut e, c, "DBSIZE"), int(1));
    assert_eq!(run(&mut e, c, "GET k"), bulk("1"));
    assert_eq!(run(&mut e, c, "PTTL k"), int(10_000));
}

#[test]
fn a_wrong_typed_key_fails_a_script_with_redis_s_suffix() {
    let (_clock, mut e, _c) = setup();
    let keys = KeyLayout::default().lock("orders");
    e.set_list(0, b"orders", &[b"x"]);
    let owner = Owner::new("c0ffee", 1);
    let lease = Lease::from_millis(30_000).unwrap();
    let call = acquire::call(&keys, &RequestId(1), lease, &owner, Millis(10_000));
    let reply = lock_core::fake::run_call(&mut e, 0, &call);
    assert_eq!(
        reply,
        Frame::error_owned(format!(
            "WRONGTYPE Operation against a key holding the wrong kind of value script: {}, on @user_script:4.",
            call.script.sha()
        ))
    );
    assert!(matches!(
        e.value(0, b"orders"),
        Some((Value::List(_), None))
    ));
}

#[test]
fn hgetall_is_a_map_in_insertion_order() {
    let (_clock, mut e, c) = setup();
    run(&mut e, c, "HSET h z 1 a 2 m 3");
    assert_eq!(
        run(&mut e, c, "HGETALL h"),
        Frame::Map(vec![
            (bulk("z"), bulk("1")),
            (bulk("a"), bulk("2")),
            (bulk("m"), bulk("3"))
        ])
    );
    assert_eq!(
        run(&mut e, c, "HGETALL h").to_resp2(),
        Frame::Array(vec![
            bulk("z"),
            bulk("1"),
            bulk("a"),
            bulk("2"),
            bulk("m"),
            bulk("3")
        ])
    );
}

#[test]
fn restart_loses_data_and_scripts_unless_persistent() {
    let (_clock, mut e, c) = setup();
    run(&mut e, c, "SET k v");
    e.restart();
    assert!(!e.is_connected(c));
    let c = e.connect();
    assert_eq!(run(&mut e, c, "EXISTS k"), int(0));
}

#[test]
fn scan_returns_every_key_once_across_calls() {
    let (_clock, mut e, c) = setup();
    for i in 0..57 {
        run(&mut e, c, &format!("SET key:{i} v"));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor = "0".to_owned();
    loop {
        let Frame::Array(parts) = run(&mut e, c, &format!("SCAN {cursor} COUNT 7")) else {
            panic!("SCAN replies an array")
        };
        let [Frame::Bulk(next), Frame::Array(keys)] = &parts[..] else {
            panic!("cursor and keys")
        };
        for k in keys {
            let Frame::Bulk(k) = k else { panic!() };
            assert!(seen.insert(k.clone()), "returned twice: {k:?}");
        }
        cursor = String::from_utf8(next.to_vec()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 57);
}

#[test]
fn lists_push_at_either_end_keep_their_ttl_and_clamp_ranges() {
    let (clock, mut e, c) = setup();
    assert_eq!(run(&mut e, c, "RPUSH l b c"), int(2));
    assert_eq!(run(&mut e, c, "LPUSH l a z"), int(4));
    let all = Frame::Array(["z", "a", "b", "c"].map(bulk).to_vec());
    assert_eq!(run(&mut e, c, "LRANGE l 0 -1"), all);
    assert_eq!(run(&mut e, c, "LRANGE l -100 100"), all);
    assert_eq!(
        run(&mut e, c, "LRANGE l -2 -1"),
        Frame::Array(vec![bulk("b"), bulk("c")])
    );
    assert_eq!(run(&mut e, c, "LRANGE l 3 1"), Frame::Array(vec![]));
    assert_eq!(run(&mut e, c, "LRANGE nokey 0 -1"), Frame::Array(vec![]));
    assert_eq!(run(&mut e, c, "LLEN l"), int(4));
    assert_eq!(run(&mut e, c, "TYPE l"), Frame::simple("list"));
    // A push keeps the TTL; the list expires as any key does.
    assert_eq!(run(&mut e, c, "PEXPIRE l 100"), int(1));
    assert_eq!(run(&mut e, c, "RPUSH l d"), int(5));
    assert_eq!(run(&mut e, c, "PTTL l"), int(100));
    clock.advance(101);
    assert_eq!(run(&mut e, c, "LLEN l"), int(0));
    // Wrong types, and indexes parsed before the key is looked at.
    run(&mut e, c, "SET s v");
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(run(&mut e, c, "RPUSH s x"), Frame::error(wrongtype));
    assert_eq!(run(&mut e, c, "LRANGE s 0 -1"), Frame::error(wrongtype));
    assert_eq!(
        run(&mut e, c, "LRANGE s x 1"),
        Frame::error("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&mut e, c, "GET s"), bulk("v"));
}
