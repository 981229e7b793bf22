//! Blocked pops served by a second connection's push, on a redis-server of the test's own and on
//! the fake, in RESP2 and RESP3: the blocked client's reply, the pusher's replies and the keys
//! left must be the same. The push goes only once the server reports the client blocked
//! (`INFO`'s `blocked_clients`); on the fake that is the engine's state once the blocked call's
//! first poll has run, so its side has no timing to race.

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
    pushes: &'static [&'static str],
    after: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        setup: &[],
        blocking: "BLPOP bq 0",
        pushes: &["RPUSH bq a b"],
        after: &["LRANGE bq 0 -1"],
    },
    Case {
        setup: &[],
        blocking: "BRPOP bq1 bq2 0",
        pushes: &["RPUSH bq2 x y"],
        after: &["LRANGE bq2 0 -1"],
    },
    Case {
        setup: &[],
        blocking: "BLMOVE bq bd RIGHT LEFT 0",
        pushes: &["RPUSH bq x y"],
        after: &["LRANGE bq 0 -1", "LRANGE bd 0 -1"],
    },
    Case {
        setup: &["SET bd s"],
        blocking: "BRPOPLPUSH bq bd 0",
        pushes: &["RPUSH bq x"],
        after: &["LRANGE bq 0 -1", "GET bd"],
    },
    Case {
        setup: &[],
        blocking: "BLMPOP 0 2 bq bq2 RIGHT COUNT 5",
        pushes: &["RPUSH bq2 a b c"],
        after: &["EXISTS bq2"],
    },
    Case {
        setup: &[],
        blocking: "BZPOPMAX bz 0",
        pushes: &["ZADD bz 1 a 2.5 b"],
        after: &["ZRANGE bz 0 -1 WITHSCORES"],
    },
    Case {
        setup: &[],
        blocking: "BZMPOP 0 1 bz MIN COUNT 2",
        pushes: &["ZADD bz 1.5 a 2 b 3 c"],
        after: &["ZRANGE bz 0 -1 WITHSCORES"],
    },
    Case {
        // A key of another type leaves the client blocked; the list that follows serves it.
        setup: &[],
        blocking: "BLPOP bq 0",
        pushes: &[
            "SET bq s",
            "DEL bq",
            "MULTI",
            "RPUSH bq x",
            "LPOP bq",
            "EXEC",
            "RPUSH bq y",
        ],
        after: &["EXISTS bq"],
    },
    Case {
        setup: &[],
        blocking: "BLPOP bnothing 0.05",
        pushes: &[],
        after: &[],
    },
];

/// Runs every case on two connections of one server: the replies, in order, as text.
async fn play<C>(mut blocked: C, mut pusher: C) -> Vec<String>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let mut out = Vec::new();
    for case in CASES {
        run(&mut pusher, "DEL bq bq1 bq2 bd bz bnothing")
            .await
            .unwrap();
        for line in case.setup {
            out.push(describe(&run(&mut pusher, line).await));
        }
        let mut conn = blocked.clone();
        let line = case.blocking;
        let reply = tokio::spawn(async move { run(&mut conn, line).await });
        if !case.pushes.is_empty() {
            wait_until_blocked(&mut pusher).await;
        }
        for line in case.pushes {
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
async fn a_blocked_pop_is_served_by_another_connection_s_push_as_on_redis() {
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
async fn a_blocked_pop_is_served_by_another_connection_s_push_as_on_redis_in_resp3() {
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
