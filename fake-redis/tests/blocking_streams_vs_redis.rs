//! Blocked `XREAD` and `XREADGROUP` served by a second connection's `XADD`, on a redis-server of
//! the test's own and on the fake, in RESP2 and RESP3: the blocked client's reply, the writer's
//! replies and what the streams hold afterwards must be the same, timeouts and the errors of a
//! deleted key or group included. The writer goes only once the server reports the client
//! blocked (`INFO`'s `blocked_clients`); on the fake that is the engine's state once the blocked
//! call's first poll has run, so its side has no timing to race.

mod support;

use fake_redis::{Engine, FakeConnection, NodeId, SystemClock, shared};
use redis::aio::ConnectionLike;
use std::time::Duration;
use support::{OwnServer, connect_real, connect_real_resp3, describe, run};

/// One case: keys set up first, the command that blocks, what the other connection sends while
/// it is blocked, and what is read afterwards.
struct Case {
    setup: &'static [&'static str],
    blocking: &'static str,
    writes: &'static [&'static str],
    after: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        setup: &["XADD xs 1-1 old 1"],
        blocking: "XREAD BLOCK 0 STREAMS xs $",
        writes: &["XADD xs 2-1 a 1"],
        after: &["XRANGE xs - +"],
    },
    Case {
        // The stream written to answers alone; COUNT bounds a transaction's entries.
        setup: &[],
        blocking: "XREAD COUNT 2 BLOCK 0 STREAMS xs xs2 $ 0",
        writes: &[
            "MULTI",
            "XADD xs2 1-1 a 1",
            "XADD xs2 1-2 b 2",
            "XADD xs2 1-3 c 3",
            "EXEC",
        ],
        after: &["XLEN xs2"],
    },
    Case {
        // A key of another type meanwhile leaves it blocked; an added and deleted entry answers
        // the stream with no entries.
        setup: &["XADD xs 5-0 a 1"],
        blocking: "XREAD BLOCK 0 STREAMS xs $",
        writes: &[
            "DEL xs",
            "SET xs text",
            "DEL xs",
            "MULTI",
            "XADD xs 6-0 b 2",
            "XDEL xs 6-0",
            "EXEC",
        ],
        after: &["XLEN xs"],
    },
    Case {
        setup: &[],
        blocking: "XREAD BLOCK 50 STREAMS xnothing $",
        writes: &[],
        after: &["EXISTS xnothing"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 0 STREAMS xs >",
        writes: &["XADD xs 1-1 a 1"],
        after: &["XPENDING xs g", "XINFO GROUPS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g bob COUNT 1 NOACK BLOCK 0 STREAMS xs >",
        writes: &["MULTI", "XADD xs 1-1 a 1", "XADD xs 1-2 b 2", "EXEC"],
        after: &["XPENDING xs g", "XINFO GROUPS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 0 STREAMS xs >",
        writes: &["DEL xs"],
        after: &["EXISTS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 0 STREAMS xs >",
        writes: &["XGROUP DESTROY xs g"],
        after: &["XINFO GROUPS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 60 STREAMS xs >",
        writes: &[],
        after: &["XINFO CONSUMERS xs g"],
    },
];
/// Runs every case on two connections of one server: the replies, in order, as text.
async fn play<C>(mut blocked: C, mut pusher: C) -> Vec<String>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let mut out = Vec::new();
    for case in CASES {
        run(&mut pusher, "DEL xs xs2 xnothing").await.unwrap();
        for line in case.setup {
            out.push(describe(&run(&mut pusher, line).await));
        }
        let mut conn = blocked.clone();
        let line = case.blocking;
        let reply = tokio::spawn(async move { run(&mut conn, line).await });
        if !case.writes.is_empty() {
            wait_until_blocked(&mut pusher).await;
        }
        for line in case.writes {
            out.push(describe(&run(&mut pusher, line).await));
        }
        out.push(format!("{line} -> {}", describe(&reply.await.unwrap())));
        for line in case.after {
            out.push(describe(&run(&mut pusher, line).await));
        }
    }
    run(&mut blocked, "PING").await.unwrap();
    out
}

/// Waits until the server reports one blocked client.
async fn wait_until_blocked(conn: &mut impl ConnectionLike) {
    for _ in 0..2000 {
        let info = describe(&run(conn, "INFO clients").await);
        if info.contains("blocked_clients:1") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the client never blocked");
}

fn fake_pair() -> (FakeConnection, FakeConnection) {
    let engine = shared(Engine::new(SystemClock));
    (
        FakeConnection::new(engine.clone(), NodeId(1)),
        FakeConnection::new(engine, NodeId(2)),
    )
}

fn assert_same(real: &[String], fake: &[String]) {
    for (i, (r, f)) in real.iter().zip(fake).enumerate() {
        assert_eq!(r, f, "reply {i} differs");
    }
    assert_eq!(real.len(), fake.len());
}

#[tokio::test]
async fn a_blocked_stream_read_is_served_by_another_connection_s_xadd_as_on_redis() {
    let server = OwnServer::start();
    let real = play(
        connect_real(server.port).await,
        connect_real(server.port).await,
    )
    .await;
    let (blocked, pusher) = fake_pair();
    let fake = play(blocked, pusher).await;
    assert_same(&real, &fake);
}

#[tokio::test]
async fn a_blocked_stream_read_is_served_by_another_connection_s_xadd_as_on_redis_in_resp3() {
    let server = OwnServer::start();
    let (a, b) = (
        connect_real_resp3(server.port).await,
        connect_real_resp3(server.port).await,
    );
    let real = play(a, b).await;
    let (mut blocked, mut pusher) = fake_pair();
    run(&mut blocked, "HELLO 3").await.unwrap();
    run(&mut pusher, "HELLO 3").await.unwrap();
    let fake = play(blocked, pusher).await;
    assert_same(&real, &fake);
}
