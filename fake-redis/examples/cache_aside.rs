//! A cache-aside read whose TTL is tested on the fake's virtual clock: a minute of cache life in
//! microseconds, with no sleep.
//!
//! `cargo run -p fake-redis --example cache_aside`

use fake_redis::FakeRedis;
use redis::{AsyncCommands, RedisResult, aio::ConnectionLike};
use std::time::Duration;

/// How long a loaded price stays cached.
const TTL_SECS: u64 = 60;

/// The price of `sku`: the cached one, or `load`'s, cached for [`TTL_SECS`].
async fn price<C>(con: &mut C, sku: &str, load: impl FnOnce() -> u32) -> RedisResult<u32>
where
    C: ConnectionLike + Send + Sync,
{
    let key = format!("price:{sku}");
    if let Some(cached) = con.get::<_, Option<u32>>(&key).await? {
        return Ok(cached);
    }
    let fresh = load();
    let _: () = con.set_ex(&key, fresh, TTL_SECS).await?;
    Ok(fresh)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;

    assert_eq!(price(&mut con, "tea", || 4).await.unwrap(), 4);
    redis.advance(Duration::from_secs(TTL_SECS - 1)).await;
    assert_eq!(
        price(&mut con, "tea", || 5).await.unwrap(),
        4,
        "still cached"
    );
    assert_eq!(redis.ttl("price:tea"), Some(Duration::from_secs(1)));

    // Redis keeps a key through its deadline's millisecond: gone one millisecond later.
    redis.advance(Duration::from_secs(1)).await;
    assert!(redis.exists("price:tea"));
    redis.advance(Duration::from_millis(1)).await;
    assert!(!redis.exists("price:tea"), "expired");
    assert_eq!(
        price(&mut con, "tea", || 5).await.unwrap(),
        5,
        "loaded again"
    );
    println!("cache-aside: cached for {TTL_SECS} s, reloaded after, on the fake's clock");
}
