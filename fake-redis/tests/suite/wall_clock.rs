//! The fake's TCP server on the wall clock, beside a redis-server of the test's own: time moves
//! without commands, and reads finer than a millisecond.
//!
//! - A key that expires while nobody sends a command is announced all the same, as Redis's
//!   `serverCron` announces it: a subscriber to `__keyevent@0__:expired` hears of it within
//!   about 100 ms, with no command on either server after the `SET`.
//! - A key a tracking client read (`CLIENT TRACKING on`) that expires on an idle server sends
//!   the invalidation all the same: the RESP3 push to the client, and the RESP2 message on
//!   `__redis__:invalidate` to the client its `REDIRECT` names.
//! - `TIME` reads the clock in microseconds.

use crate::support::OwnServer;
use crate::support::raw::Real;
use fake_redis::server::{ClockChoice, RunningServer, Server, ServerConfig};
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

/// A fake-redis-server on the system clock, on a free port.
async fn on_the_wall_clock() -> RunningServer {
    Server::start(ServerConfig {
        port: 0,
        clock: ClockChoice::System,
        ..ServerConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_expiring_on_an_idle_server_is_announced() {
    let real = OwnServer::start();
    let on_redis = expired_event(&format!("redis://127.0.0.1:{}/", real.port)).await;
    let fake = on_the_wall_clock().await;
    let on_fake = expired_event(&format!("redis://{}/", fake.local_addr())).await;
    assert_eq!((on_redis.as_str(), on_fake.as_str()), ("idle", "idle"));
    fake.stop().await;
}

/// On the server at `port`: a RESP3 client and a RESP2 one redirecting to a subscriber each read a
/// key set for 300 ms; then, with no command sent, the invalidations each gets (a reply that never
/// comes fails the read after 30 s).
fn invalidations_of_idle_expiry(port: u16) -> Vec<String> {
    let (mut own, mut redirected, mut subscriber, mut writer) = (
        Real::connect(port),
        Real::connect(port),
        Real::connect(port),
        Real::connect(port),
    );
    let _ = own.call(&[b"HELLO", b"3"]);
    let id = subscriber.call(&[b"CLIENT", b"ID"]);
    let id = String::from_utf8_lossy(&id[1..id.len() - 2]).into_owned();
    let mut seen = vec![
        own.call(&[b"CLIENT", b"TRACKING", b"on"]),
        subscriber.call(&[b"SUBSCRIBE", b"__redis__:invalidate"]),
        redirected.call(&[b"CLIENT", b"TRACKING", b"on", b"REDIRECT", id.as_bytes()]),
    ];
    for key in [&b"pushed"[..], b"redirected"] {
        seen.push(writer.call(&[b"SET", key, b"v", b"PX", b"300"]));
    }
    seen.push(own.call(&[b"GET", b"pushed"]));
    seen.push(redirected.call(&[b"GET", b"redirected"]));
    seen.push(own.reply());
    seen.push(subscriber.reply());
    seen.into_iter()
        .map(|reply| String::from_utf8_lossy(&reply).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tracked_key_expiring_on_an_idle_server_is_invalidated() {
    let real = OwnServer::start();
    let port = real.port;
    let on_redis = tokio::task::spawn_blocking(move || invalidations_of_idle_expiry(port))
        .await
        .unwrap();
    let fake = on_the_wall_clock().await;
    let port = fake.local_addr().port();
    let on_fake = tokio::task::spawn_blocking(move || invalidations_of_idle_expiry(port))
        .await
        .unwrap();
    assert_eq!(on_fake, on_redis);
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_has_microseconds_on_the_wall_clock() {
    let fake = on_the_wall_clock().await;
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
