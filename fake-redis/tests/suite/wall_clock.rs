//! The fake's TCP server on the wall clock, beside a redis-server of the test's own: time moves
//! without commands, and reads finer than a millisecond.
//!
//! - A key that expires while nobody sends a command is announced all the same, as Redis's
//!   `serverCron` announces it: a subscriber to `__keyevent@0__:expired` hears of it within
//!   about 100 ms, with no command on either server after the `SET`.
//! - `TIME` reads the clock in microseconds.

use crate::support::OwnServer;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use futures_util::StreamExt;
use std::time::Duration;

/// On the server at `url`: turns expiry events on, subscribes, sets a key for 100 ms and waits
/// (at most 5 s of real time) for its `expired` event; returns the key it names.
async fn expired_event(url: &str) -> String {
    let client = redis::Client::open(url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "notify-keyspace-events", "Ex"])
        .query_async(&mut con)
        .await
        .unwrap();
    let mut events = client.get_async_pubsub().await.unwrap();
    events.subscribe("__keyevent@0__:expired").await.unwrap();
    let _: () = redis::cmd("SET")
        .arg(&["idle", "v", "PX", "100"])
        .query_async(&mut con)
        .await
        .unwrap();
    let mut messages = events.on_message();
    let message = tokio::time::timeout(Duration::from_secs(5), messages.next())
        .await
        .expect("the expired event comes without another command")
        .expect("a message");
    message.get_payload().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_expiring_on_an_idle_server_is_announced() {
    let real = OwnServer::start();
    let on_redis = expired_event(&format!("redis://127.0.0.1:{}/", real.port)).await;
    let fake = Server::start(ServerConfig {
        port: 0,
        clock: ClockChoice::System,
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let on_fake = expired_event(&format!("redis://{}/", fake.local_addr())).await;
    assert_eq!((on_redis.as_str(), on_fake.as_str()), ("idle", "idle"));
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_has_microseconds_on_the_wall_clock() {
    let fake = Server::start(ServerConfig {
        port: 0,
        clock: ClockChoice::System,
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let client = redis::Client::open(format!("redis://{}/", fake.local_addr())).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let mut readings = Vec::new();
    for _ in 0..20 {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut con).await.unwrap();
        assert!((0..1_000_000).contains(&micros), "{micros}");
        readings.push(secs * 1_000_000 + micros);
    }
    assert!(
        readings.windows(2).all(|w| w[0] <= w[1]),
        "never back: {readings:?}"
    );
    // Twenty readings all on a whole millisecond would be a millisecond clock (one in 10^60).
    assert!(readings.iter().any(|us| us % 1000 != 0), "{readings:?}");
    fake.stop().await;
}
