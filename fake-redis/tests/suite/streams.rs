//! Streams against a real Redis 7.0: each line runs on a redis-server of the test's own and on
//! the fake, in RESP2 and in RESP3, and the replies must be equal, error texts included. IDs are
//! explicit and no line shows an idle or delivery time, so both servers' clocks are out of it;
//! `stream_ids_follow_the_virtual_clock` checks the `*` IDs and the times on the fake's clock.

use crate::support;

use fake_redis::{Engine, FakeConnection, ManualClock, NodeId, shared};
use support::{assert_table_matches_redis, run};

const TABLE: &[&str] = &[
    // ---- XADD, IDs and trims ----
    "XADD s 1-1 a 1 b 2",
    "XADD s 1-2 a 1 b 3",
    "XADD s 1-* c 1",
    "XADD s 5 c 1",
    "XADD s 5-* c 2",
    "XADD s 5-3 c 2",
    "XADD s 5-3 c 2",
    "XADD s 4-0 c 2",
    "XADD s 0-0 a 1",
    "XADD s 0 a 1",
    "XADD s 1-x a 1",
    "XADD s - a 1",
    "XADD s + a 1",
    "XADD s 18446744073709551616-0 a 1",
    "XADD s a 1 b",
    "XADD s 6-0 a",
    "XADD s 6-0 a 1 b",
    "XADD s NOMKSTREAM 6-0 a 1",
    "XADD nos NOMKSTREAM * a 1",
    "EXISTS nos",
    "XADD s MAXLEN x 7-0 a 1",
    "XADD s MAXLEN -1 7-0 a 1",
    "XADD s LIMIT 2 7-0 a 1",
    "XADD s LIMIT 0 7-0 a 1",
    "XADD s MAXLEN 2 LIMIT 2 7-0 a 1",
    "XADD s MAXLEN 1 MINID 0 7-0 a 1",
    "XADD s MINID x 7-0 a 1",
    "XADD s MAXLEN ~ 2 LIMIT -1 7-0 a 1",
    "XLEN s",
    "XADD s MAXLEN ~ 2 7-0 a 1",
    "XLEN s",
    "XADD s MAXLEN = 4 8-0 a 1",
    "XLEN s",
    "XRANGE s - +",
    "XADD s MINID 5-3 9-0 f v",
    "XRANGE s - +",
    "XADD s MINID ~ 9 LIMIT 10 10-0 f v",
    "XLEN s",
    "XADD s maxlen 0 11-0 f v",
    "XLEN s",
    "XINFO STREAM s",
    "XADD s 12-0 12 34 56 78",
    "XADD s 13-0 a 1",
    "XADD s 14-0 a 2 b 3",
    "XADD s 15-0 a 1",
    "XADD s 18446744073709551615-18446744073709551615 a 1",
    "XADD s * a 1",
    "XADD s 18446744073709551615-* a 1",
    "XINFO STREAM s",
    "DEL s",
    "XADD s 18446744073709551615-18446744073709551614 a 1",
    "XADD s 18446744073709551615-* a 1",
    "XADD s 18446744073709551615-* a 1",
    "DEL s",
    // ---- XRANGE, XREVRANGE ----
    "XADD r 1-0 a 1",
    "XADD r 2-0 a 2",
    "XADD r 2-5 a 3",
    "XADD r 3-0 a 4 b 5",
    "XRANGE r - +",
    "XRANGE r 2 2",
    "XRANGE r 2 +",
    "XRANGE r (2-0 +",
    "XRANGE r - (3-0",
    "XRANGE r (2 (3",
    "XRANGE r (- +",
    "XRANGE r - (+",
    "XRANGE r (18446744073709551615-18446744073709551615 +",
    "XRANGE r - (0-0",
    "XRANGE r 3 1",
    "XRANGE r - + COUNT 2",
    "XRANGE r - + COUNT 0",
    "XRANGE r - + COUNT -1",
    "XRANGE r - + COUNT x",
    "XRANGE r - + COUNT",
    "XRANGE r - + FOO 1",
    "XRANGE r x +",
    "XRANGE r - x",
    "XRANGE nor - +",
    "XRANGE nor - + COUNT 0",
    "XREVRANGE r + -",
    "XREVRANGE r + - COUNT 1",
    "XREVRANGE r (3 -",
    "XREVRANGE r 2-5 (1",
    "XREVRANGE r - +",
    "XLEN r",
    "XLEN nor",
    // ---- XDEL, XTRIM, XSETID ----
    "XDEL r 2-0 2-0 9-9",
    "XDEL r x",
    "XDEL r -",
    "XDEL nor x",
    "XRANGE r - +",
    "XINFO STREAM r",
    "XDEL r 1-0 2-5 3-0",
    "XINFO STREAM r",
    "EXISTS r",
    "XADD r 1-0 a 1",
    "XADD r 4-0 a 1",
    "XSETID r 3-0",
    "XSETID r 5-0",
    "XSETID r 5-0 ENTRIESADDED 0",
    "XSETID r 5-0 ENTRIESADDED -1",
    "XSETID r 5-0 ENTRIESADDED 10 MAXDELETEDID 4-0",
    "XSETID r 5-0 MAXDELETEDID 6-0",
    "XSETID r 5-0 FOO",
    "XSETID r 4-0",
    "XSETID r 2-0",
    "XSETID nor 5-0",
    "XSETID r x",
    "XINFO STREAM r",
    "XADD r 5-0 a 1",
    "XADD r 5-* a 1",
    "XTRIM r MAXLEN 1",
    "XTRIM r MAXLEN",
    "XTRIM r FOO 1",
    "XTRIM r MAXLEN x",
    "XTRIM r LIMIT 1 MAXLEN 1",
    "XTRIM r MAXLEN 1 LIMIT 1",
    "XTRIM r MAXLEN ~ 0",
    "XTRIM r MINID 5-1",
    "XTRIM r MINID 6",
    "XTRIM nor MAXLEN 0",
    "XINFO STREAM r",
    "XLEN r",
    // ---- XREAD ----
    "XADD a 1-0 f 1",
    "XADD a 2-0 f 2",
    "XADD b 3-0 g 3",
    "XREAD STREAMS a 0",
    "XREAD COUNT 1 STREAMS a b 0 0",
    "XREAD STREAMS a b 1 0",
    "XREAD STREAMS a b 2 3",
    "XREAD STREAMS a b $ $",
    "XREAD STREAMS a nob 0 0",
    "XREAD BLOCK 10 STREAMS a 0",
    "XREAD BLOCK -1 STREAMS a 0",
    "XREAD BLOCK x STREAMS a 0",
    "XREAD COUNT x STREAMS a 0",
    "XREAD COUNT -5 STREAMS a 0",
    "XREAD STREAMS a",
    "XREAD STREAMS a b 0",
    "XREAD FOO STREAMS a 0",
    "XREAD COUNT 1",
    "XREAD STREAMS a >",
    "XREAD STREAMS a x",
    "XREAD GROUP g c STREAMS a 0",
    "XREAD NOACK STREAMS a 0",
    "MULTI",
    "XREAD BLOCK 0 STREAMS a $",
    "EXEC",
    "EVAL \"return redis.pcall('XREAD','BLOCK','0','STREAMS',KEYS[1],'$')\" 1 a",
    // ---- groups ----
    "XGROUP CREATE a g 0",
    "XGROUP CREATE a g 0",
    "XGROUP CREATE a g2 $",
    "XGROUP CREATE a g3 0 ENTRIESREAD 1",
    "XGROUP CREATE a g4 0 ENTRIESREAD -2",
    "XGROUP CREATE a g4 0 FOO",
    "XGROUP CREATE a g4 x",
    "XGROUP CREATE a g4 -",
    "XGROUP CREATE noa g 0",
    "XGROUP CREATE noa g $ MKSTREAM",
    "XINFO STREAM noa",
    "XGROUP CREATE a",
    "XGROUP FOO a g",
    "XGROUP HELP",
    "XGROUP",
    "XGROUP SETID a nog 0",
    "XGROUP SETID a g3 0 ENTRIESREAD 0",
    "XGROUP SETID a g3 0 MKSTREAM",
    "XGROUP CREATECONSUMER a g c0",
    "XGROUP CREATECONSUMER a g c0",
    "XGROUP CREATECONSUMER a nog c0",
    "XGROUP DELCONSUMER a g nobody",
    "XGROUP DESTROY a g3",
    "XGROUP DESTROY a g3",
    "XGROUP DESTROY noa2 g3",
    "XINFO GROUPS a",
    "XREADGROUP GROUP g c1 COUNT 1 STREAMS a >",
    "XREADGROUP GROUP g c2 STREAMS a >",
    "XREADGROUP GROUP g c2 STREAMS a >",
    "XREADGROUP GROUP g c1 STREAMS a 0",
    "XREADGROUP GROUP g c2 STREAMS a 0",
    "XREADGROUP GROUP g c2 STREAMS a 1-0",
    "XREADGROUP GROUP g c3 STREAMS a 0",
    "XREADGROUP GROUP nog c STREAMS a >",
    "XREADGROUP GROUP g c STREAMS nokey >",
    "XREADGROUP GROUP g c STREAMS a $",
    "XREADGROUP STREAMS a b 0 0",
    "XREADGROUP GROUP g c STREAMS a",
    "XREADGROUP GROUP g c STREAMS a b >",
    "XREADGROUP GROUP g2 c NOACK STREAMS a >",
    "XADD a 4-0 f 4",
    "XREADGROUP GROUP g2 c NOACK STREAMS a >",
    "XREADGROUP GROUP g2 c STREAMS a 0",
    "XINFO GROUPS a",
    "XPENDING a g",
    "XPENDING a g2",
    "XPENDING a nog",
    "XPENDING nokey g",
    "XPENDING a g - +",
    "XPENDING a g - + x",
    "XPENDING a g x + 1",
    "XPENDING a g IDLE x - + 1",
    "XPENDING a g IDLE 0 - +",
    "XPENDING a g - + 10 nobody",
    "XACK a g 1-0",
    "XACK a g 1-0 9-0",
    "XACK a g x",
    "XACK a nog 1-0",
    "XACK nokey g 1-0",
    "XPENDING a g",
    "XDEL a 2-0",
    "XREADGROUP GROUP g c2 STREAMS a 0",
    "XINFO GROUPS a",
    "XREADGROUP GROUP g c2 STREAMS a >",
    "XINFO GROUPS a",
    "XGROUP SETID a g 0",
    "XINFO GROUPS a",
    "XGROUP SETID a g $",
    "XINFO GROUPS a",
    "XGROUP DELCONSUMER a g c2",
    "XPENDING a g",
    "XINFO CONSUMERS a nog",
    "XINFO CONSUMERS nokey g",
    "XINFO FOO a",
    "XINFO HELP",
    "XINFO GROUPS a x",
    "XINFO STREAM a FOO",
    "XINFO STREAM a FULL COUNT x",
    "XINFO STREAM a FULL COUNT",
    // ---- XCLAIM, XAUTOCLAIM ----
    "DEL c",
    "XADD c 1-0 a 1",
    "XADD c 2-0 a 2",
    "XADD c 3-0 a 3",
    "XGROUP CREATE c g 0",
    "XREADGROUP GROUP g alice STREAMS c >",
    "XCLAIM c g bob 0 1-0",
    "XCLAIM c g bob 0 2-0 JUSTID",
    "XCLAIM c g bob 0 9-0 FORCE",
    "XCLAIM c g bob 1000000 3-0",
    "XCLAIM c g bob 0 3-0 RETRYCOUNT 7 JUSTID",
    "XCLAIM c g bob 0 1-0 FOO",
    "XCLAIM c g bob x 1-0",
    "XCLAIM c g bob 0 1-0 IDLE x",
    "XCLAIM c g bob 0 1-0 TIME x",
    "XCLAIM c g bob 0 1-0 RETRYCOUNT x",
    "XCLAIM c g bob 0 1-0 2-x",
    "XCLAIM c g bob 0 1-0 LASTID x",
    "XCLAIM c nog bob 0 1-0",
    "XCLAIM noc g bob 0 1-0",
    "XPENDING c g",
    "XDEL c 2-0",
    "XCLAIM c g carol 0 2-0 3-0 LASTID 5-0",
    "XINFO GROUPS c",
    "XPENDING c g",
    "XADD c 4-0 a 4",
    "XACK c g 3-0",
    "XCLAIM c g dave 0 4-0 FORCE JUSTID",
    "XAUTOCLAIM c g erin 0 0",
    "XAUTOCLAIM c g erin 0 0 COUNT 1",
    "XAUTOCLAIM c g erin 0 0 COUNT 1 JUSTID",
    "XAUTOCLAIM c g erin 0 (1-0 JUSTID",
    "XAUTOCLAIM c g erin 0 0 COUNT 0",
    "XAUTOCLAIM c g erin 0 0 COUNT x",
    "XAUTOCLAIM c g erin 0 0 FOO",
    "XAUTOCLAIM c g erin x 0",
    "XAUTOCLAIM c g erin 0 x",
    "XAUTOCLAIM c nog erin 0 0",
    "XDEL c 1-0",
    "XAUTOCLAIM c g frank 1000000 0",
    "XAUTOCLAIM c g frank 0 0",
    "XPENDING c g",
    "XINFO GROUPS c",
    "XGROUP DESTROY c g",
    // ---- wrong types and arity ----
    "SET str v",
    "XADD str 1-0 a 1",
    "XLEN str",
    "XRANGE str - +",
    "XREAD STREAMS str 0",
    "XGROUP CREATE str g 0",
    "XINFO STREAM str",
    "XTRIM str MAXLEN 0",
    "XDEL str 1-0",
    "XSETID str 1-0",
    "XACK str g 1-0",
    "XPENDING str g",
    "XCLAIM str g c 0 1-0",
    "XAUTOCLAIM str g c 0 0",
    "TYPE a",
    "XADD",
    "XLEN",
    "XLEN a b",
    "XRANGE a -",
    "XACK a g",
    "XCLAIM a g c 0",
];

// In RESP2, and in RESP3 after `HELLO 3`, where `XREAD`'s reply is a map of streams and
// `XINFO`'s are maps.
support::table_matches_redis!(
    TABLE,
    stream_commands_reply_exactly_as_redis_7_does,
    stream_commands_in_resp3_reply_exactly_as_redis_7_does
);

/// A big stream goes through several listpack nodes: whole-node trims, node counts and radix
/// tree nodes as Redis reports them.
#[tokio::test]
async fn big_streams_split_and_trim_by_node_as_redis_does() {
    let mut lines = Vec::new();
    for i in 1..=350 {
        // Some entries share the node's fields, some do not; some values are long, so nodes
        // also split by bytes.
        let value = if i % 7 == 0 {
            "x".repeat(300)
        } else {
            i.to_string()
        };
        let field = if i % 5 == 0 { "other" } else { "f" };
        lines.push(format!("XADD big {i}-{} {field} {value}", i % 3));
    }
    lines.extend(
        [
            "XINFO STREAM big",
            "XTRIM big MAXLEN ~ 250",
            "XINFO STREAM big",
            "XDEL big 200-2 201-0 202-1",
            "XTRIM big MINID ~ 230",
            "XINFO STREAM big",
            "XTRIM big MAXLEN ~ 10 LIMIT 30",
            "XTRIM big MAXLEN 95",
            "XINFO STREAM big",
            "XTRIM big MINID 340",
            "XINFO STREAM big",
            "XRANGE big - + COUNT 3",
            "XREVRANGE big + - COUNT 3",
        ]
        .map(String::from),
    );
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert_table_matches_redis(&lines, false).await;
}

/// `XADD *` takes the engine's clock, and when the clock is behind the stream's last ID it
/// increments the sequence, as Redis does; idle and delivery times are virtual too.
#[tokio::test]
async fn stream_ids_follow_the_virtual_clock() {
    let clock = ManualClock::new(1_000);
    let engine = shared(Engine::new(clock.clone()));
    let mut fake = FakeConnection::new(engine.clone(), NodeId(1));
    let id = |v: redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("an ID, not {other:?}"),
    };
    assert_eq!(id(run(&mut fake, "XADD s * a 1").await.unwrap()), "1000-0");
    assert_eq!(id(run(&mut fake, "XADD s * a 1").await.unwrap()), "1000-1");
    assert_eq!(
        id(run(&mut fake, "XADD s 5000-* a 1").await.unwrap()),
        "5000-0"
    );
    assert_eq!(id(run(&mut fake, "XADD s * a 1").await.unwrap()), "5000-1");
    clock.advance(9_000);
    assert_eq!(id(run(&mut fake, "XADD s * a 1").await.unwrap()), "10000-0");
    run(&mut fake, "XGROUP CREATE s g 0").await.unwrap();
    run(&mut fake, "XREADGROUP GROUP g c COUNT 1 STREAMS s >")
        .await
        .unwrap();
    clock.advance(250);
    let pending = run(&mut fake, "XPENDING s g - + 10").await.unwrap();
    assert_eq!(
        format!("{pending:?}"),
        format!(
            "{:?}",
            redis::Value::Array(vec![redis::Value::Array(vec![
                redis::Value::BulkString(b"1000-0".to_vec()),
                redis::Value::BulkString(b"c".to_vec()),
                redis::Value::Int(250),
                redis::Value::Int(1),
            ])])
        )
    );
    // A read that blocks on `$` is served by another connection's `XADD *`, on the same clock.
    let mut writer = FakeConnection::new(engine, NodeId(2));
    let (blocked, added) = tokio::join!(
        run(&mut fake, "XREAD BLOCK 0 STREAMS s $"),
        run(&mut writer, "XADD s * a 2")
    );
    assert_eq!(id(added.unwrap()), "10250-0");
    let b = |s: &str| redis::Value::BulkString(s.as_bytes().to_vec());
    assert_eq!(
        format!("{:?}", blocked.unwrap()),
        format!(
            "{:?}",
            redis::Value::Array(vec![redis::Value::Array(vec![
                b("s"),
                redis::Value::Array(vec![redis::Value::Array(vec![
                    b("10250-0"),
                    redis::Value::Array(vec![b("a"), b("2")]),
                ])]),
            ])])
        )
    );
}

/// Counters a client sets near the ends of the 64-bit range wrap as Redis's C arithmetic wraps
/// them, so the replies are Redis's numbers instead of a panic halfway through a command.
#[tokio::test]
async fn client_given_counters_wrap_as_redis_does() {
    assert_table_matches_redis(
        &[
            "XADD q 2-1 a 1",
            "XGROUP CREATE q g 0",
            "XREADGROUP GROUP g c STREAMS q >",
            "XCLAIM q g c 0 2-1 IDLE -9223372036854775000 JUSTID",
            "XCLAIM q g c 0 2-1 IDLE 9223372036854775807 JUSTID",
            "XPENDING q g",
            "XADD ov 1-1 a 1",
            "XGROUP CREATE ov g 0 ENTRIESREAD 9223372036854775807",
            "XREADGROUP GROUP g c STREAMS ov >",
            "XINFO GROUPS ov",
            "XGROUP SETID ov g 0 ENTRIESREAD 9223372036854775807",
            "XINFO GROUPS ov",
            "XADD s 1-1 a 1",
            "XGROUP CREATE s g 0 ENTRIESREAD 5",
            "XSETID s 1-1 ENTRIESADDED 9223372036854775807",
            "XADD s 2-1 a 1",
            "XINFO GROUPS s",
            "XGROUP CREATE s g2 0",
            "XGROUP CREATE s g3 1-1",
            "XGROUP CREATE s g4 2-1",
            "XINFO GROUPS s",
            "XREADGROUP GROUP g2 c STREAMS s >",
            "XINFO GROUPS s",
            "XINFO STREAM s",
        ],
        false,
    )
    .await;
}

/// The largest ID, given to `XREADGROUP` explicitly, is `>`: it is `>`'s value inside Redis, so
/// it delivers new entries and makes them pending.
#[tokio::test]
async fn xreadgroup_of_the_largest_id_reads_new_entries() {
    assert_table_matches_redis(
        &[
            "XADD m 1-1 a 1",
            "XADD m 2-1 b 2",
            "XGROUP CREATE m g 0",
            "XREADGROUP GROUP g c COUNT 1 STREAMS m 18446744073709551615-18446744073709551615",
            "XPENDING m g",
            "XREADGROUP GROUP g c STREAMS m 18446744073709551615-18446744073709551615",
            "XREADGROUP GROUP g c STREAMS m 18446744073709551615-18446744073709551615",
            "XPENDING m g",
            "XREADGROUP GROUP g c STREAMS m 18446744073709551614-18446744073709551615",
            "XREAD STREAMS m 18446744073709551615-18446744073709551615",
            "XINFO GROUPS m",
        ],
        false,
    )
    .await;
}

/// `XPENDING`'s extended form walks only its range of the pending list and stops at `COUNT`;
/// the idle times are on the virtual clock, so the rows are exact.
#[tokio::test]
async fn xpending_ranges_stop_at_their_bounds_and_count() {
    let clock = ManualClock::new(1_000);
    let engine = shared(Engine::new(clock.clone()));
    let mut fake = FakeConnection::new(engine, NodeId(1));
    for i in 1..=6 {
        run(&mut fake, &format!("XADD p {i}-0 a {i}"))
            .await
            .unwrap();
    }
    run(&mut fake, "XGROUP CREATE p g 0").await.unwrap();
    run(&mut fake, "XREADGROUP GROUP g alice COUNT 3 STREAMS p >")
        .await
        .unwrap();
    clock.advance(100);
    run(&mut fake, "XREADGROUP GROUP g bob STREAMS p >")
        .await
        .unwrap();
    clock.advance(50);
    let rows = |v: redis::Value| -> Vec<String> {
        let redis::Value::Array(rows) = v else {
            panic!("an array, not {v:?}")
        };
        rows.into_iter()
            .map(|row| match row {
                redis::Value::Array(f) => match &f[..] {
                    [
                        redis::Value::BulkString(id),
                        redis::Value::BulkString(c),
                        redis::Value::Int(idle),
                        redis::Value::Int(n),
                    ] => format!(
                        "{} {} {idle} {n}",
                        String::from_utf8_lossy(id),
                        String::from_utf8_lossy(c)
                    ),
                    other => panic!("a pending row, not {other:?}"),
                },
                other => panic!("a pending row, not {other:?}"),
            })
            .collect()
    };
    let mut xpending = async |line: &str| rows(run(&mut fake, line).await.unwrap());
    assert_eq!(
        xpending("XPENDING p g - + 2").await,
        ["1-0 alice 150 1", "2-0 alice 150 1"]
    );
    assert_eq!(
        xpending("XPENDING p g (2 5 10").await,
        ["3-0 alice 150 1", "4-0 bob 50 1", "5-0 bob 50 1"]
    );
    assert_eq!(
        xpending("XPENDING p g 2 + 2 bob").await,
        ["4-0 bob 50 1", "5-0 bob 50 1"]
    );
    assert_eq!(
        xpending("XPENDING p g IDLE 100 3 + 5").await,
        ["3-0 alice 150 1"]
    );
    assert_eq!(
        xpending("XPENDING p g IDLE 10 - + 5 carol").await,
        Vec::<String>::new()
    );
    assert_eq!(xpending("XPENDING p g 5 2 10").await, Vec::<String>::new());
    assert_eq!(xpending("XPENDING p g - + 0").await, Vec::<String>::new());
}

/// `XAUTOCLAIM` looks at `COUNT` times ten pending entries at most and answers the next one as
/// its cursor.
#[tokio::test]
async fn xautoclaim_cursors_step_through_the_pending_list() {
    let mut lines = Vec::new();
    for i in 1..=30 {
        lines.push(format!("XADD ac {i}-0 a {i}"));
    }
    lines.push("XGROUP CREATE ac g 0".into());
    lines.push("XREADGROUP GROUP g c1 STREAMS ac >".into());
    lines.push("XDEL ac 3-0 4-0 5-0".into());
    for start in ["0", "6", "(28", "30", "31"] {
        lines.push(format!("XAUTOCLAIM ac g c2 0 {start} COUNT 2 JUSTID"));
        lines.push(format!(
            "XAUTOCLAIM ac g c3 99999999 {start} COUNT 1 JUSTID"
        ));
    }
    lines.push("XAUTOCLAIM ac g c2 0 0 COUNT 1".into());
    lines.push("XPENDING ac g".into());
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert_table_matches_redis(&lines, false).await;
}
