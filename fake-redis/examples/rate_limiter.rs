//! A fixed-window rate limiter tested across a lost reply: the call counted on the server though
//! the caller saw an error, so a blind retry is one call too many.
//!
//! `cargo run -p fake-redis --example rate_limiter`

use fake_redis::FakeRedis;
use redis::{AsyncCommands, RedisResult, aio::MultiplexedConnection};
use std::time::Duration;

/// Counts a call of `user` in the current minute; whether it is within `limit`.
async fn allow(con: &mut MultiplexedConnection, user: &str, limit: i64) -> RedisResult<bool> {
    let key = format!("calls:{user}");
    let calls: i64 = con.incr(&key, 1).await?;
    if calls == 1 {
        let _: () = con.expire(&key, 60).await?; // the window starts with its first call
    }
    Ok(calls <= limit)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;

    assert!(allow(&mut con, "ann", 3).await.unwrap());
    assert!(allow(&mut con, "ann", 3).await.unwrap());

    // The third call's reply is lost: the caller sees its connection close.
    redis.faults().drop_next_reply();
    let lost = allow(&mut con, "ann", 3).await.unwrap_err();
    println!("the caller saw: {lost}");
    assert_eq!(
        redis.get("calls:ann").as_deref(),
        Some(&b"3"[..]),
        "yet it counted"
    );

    // A retry on a fresh connection is the fourth call: refused.
    let mut con = redis.connection().await;
    assert!(!allow(&mut con, "ann", 3).await.unwrap());

    // Past the minute, a new window.
    redis.advance(Duration::from_secs(61)).await;
    assert!(allow(&mut con, "ann", 3).await.unwrap());
    println!("rate limiter: a lost reply still counted; the retry was refused");
}
