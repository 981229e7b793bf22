//! A service that holds its `redis::aio::MultiplexedConnection`, tested as it is: the fake hands
//! out the same type over an in-memory stream, so nothing in the service changes for its test.
//!
//! `cargo run -p fake-redis --example held_connection`

use fake_redis::{FakeRedis, NodeId};
use redis::{AsyncCommands, RedisResult, aio::MultiplexedConnection};
use std::time::Duration;

/// Login sessions that live 30 minutes after their last use.
struct Sessions {
    redis: MultiplexedConnection,
}

impl Sessions {
    const IDLE: u64 = 30 * 60;

    async fn open(&mut self, token: &str, user: &str) -> RedisResult<()> {
        self.redis
            .set_ex(format!("session:{token}"), user, Self::IDLE)
            .await
    }

    /// The session's user, its life extended; `None` once it has lapsed.
    async fn touch(&mut self, token: &str) -> RedisResult<Option<String>> {
        let key = format!("session:{token}");
        let user: Option<String> = self.redis.get(&key).await?;
        if user.is_some() {
            let _: () = self.redis.expire(&key, Self::IDLE as i64).await?;
        }
        Ok(user)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let redis = FakeRedis::start().await;
    let mut sessions = Sessions {
        redis: redis.connection_as(NodeId(1)).await,
    };
    sessions.open("t1", "alice").await.unwrap();

    // Used every 20 minutes, it lives on.
    for _ in 0..3 {
        redis.advance(Duration::from_secs(20 * 60)).await;
        assert_eq!(
            sessions.touch("t1").await.unwrap().as_deref(),
            Some("alice")
        );
    }
    // Idle for 31 minutes, it lapses.
    redis.advance(Duration::from_secs(31 * 60)).await;
    assert_eq!(sessions.touch("t1").await.unwrap(), None);

    // A GC pause of the service's process: its next call waits until the pause is over.
    sessions.open("t2", "bob").await.unwrap();
    redis.node(NodeId(1)).pause(Duration::from_secs(5));
    let call = tokio::spawn(async move { sessions.touch("t2").await });
    while redis.fault_log().is_empty() {
        tokio::task::yield_now().await; // until the call meets the pause (the log says so)
    }
    redis.advance(Duration::from_secs(5)).await;
    assert_eq!(call.await.unwrap().unwrap().as_deref(), Some("bob"));
    println!("sessions: extended by use, lapsed when idle, served after a pause");
}
