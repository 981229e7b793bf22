//! The differential harness of the blocking commands (`blocking_vs_redis.rs`,
//! `blocking_streams_vs_redis.rs`): one connection blocks while a second one writes, on a
//! redis-server of the test's own and on the fake, in RESP2 and RESP3, and every reply must be
//! the same. The writer goes only once the server reports the client blocked (`INFO`'s
//! `blocked_clients`); on the fake that is the engine's state once the blocked call's first poll
//! has run, so its side has no timing to race.

use super::{OwnServer, connect_real, connect_real_resp3, describe, run};
use fake_redis::{Engine, FakeConnection, NodeId, SystemClock, shared};
use redis::aio::ConnectionLike;
use std::time::Duration;

/// One case: keys set up first, the command that blocks, what the other connection sends while
/// it is blocked, and what is read afterwards.
pub struct Case {
    pub setup: &'static [&'static str],
    pub blocking: &'static str,
    pub writes: &'static [&'static str],
    pub after: &'static [&'static str],
}

/// Runs `cases` on a redis-server of its own and on the fake, in `protocol`, each after the
/// `reset` line, and asserts that every reply is the same.
pub async fn assert_same_as_redis(cases: &[Case], reset: &'static str, protocol: u8) {
    let server = OwnServer::start();
    let (real_blocked, real_writer) = if protocol == 3 {
        (
            connect_real_resp3(server.port).await,
            connect_real_resp3(server.port).await,
        )
    } else {
        (
            connect_real(server.port).await,
            connect_real(server.port).await,
        )
    };
    let real = play(cases, reset, real_blocked, real_writer).await;
    let engine = shared(Engine::new(SystemClock));
    let mut blocked = FakeConnection::new(engine.clone(), NodeId(1));
    let mut writer = FakeConnection::new(engine, NodeId(2));
    if protocol == 3 {
        run(&mut blocked, "HELLO 3").await.unwrap();
        run(&mut writer, "HELLO 3").await.unwrap();
    }
    let fake = play(cases, reset, blocked, writer).await;
    for (i, (r, f)) in real.iter().zip(&fake).enumerate() {
        assert_eq!(r, f, "reply {i} differs");
    }
    assert_eq!(real.len(), fake.len());
}

/// Runs every case on two connections of one server: the replies, in order, as text.
async fn play<C>(cases: &[Case], reset: &str, mut blocked: C, mut writer: C) -> Vec<String>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let mut out = Vec::new();
    for case in cases {
        run(&mut writer, reset).await.unwrap();
        for line in case.setup {
            out.push(describe(&run(&mut writer, line).await));
        }
        let mut conn = blocked.clone();
        let line = case.blocking;
        let reply = tokio::spawn(async move { run(&mut conn, line).await });
        if !case.writes.is_empty() {
            wait_until_blocked(&mut writer).await;
        }
        for line in case.writes {
            out.push(describe(&run(&mut writer, line).await));
        }
        // A client that is never answered fails the case instead of hanging the test.
        let reply = tokio::time::timeout(Duration::from_secs(30), reply)
            .await
            .unwrap_or_else(|_| panic!("{line} was never answered"));
        out.push(format!("{line} -> {}", describe(&reply.unwrap())));
        for line in case.after {
            out.push(describe(&run(&mut writer, line).await));
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

/// Two tests, in RESP2 and in RESP3, each running `cases` after `reset` as
/// [`assert_same_as_redis`] does: `same_as_redis!(CASES, RESET, name, name_in_resp3);`.
#[allow(unused_macros)] // not every test binary that includes this module uses it
macro_rules! same_as_redis {
    ($cases:expr, $reset:expr, $resp2:ident, $resp3:ident) => {
        #[tokio::test]
        async fn $resp2() {
            $crate::support::blocked::assert_same_as_redis($cases, $reset, 2).await;
        }

        #[tokio::test]
        async fn $resp3() {
            $crate::support::blocked::assert_same_as_redis($cases, $reset, 3).await;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use same_as_redis;
