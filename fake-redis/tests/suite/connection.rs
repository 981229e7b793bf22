//! `FakeConnection` as `redis`-crate code sees it: typed commands, RESP3, databases, reconnection,
//! and a paused subscriber.

use bytes::Bytes;
use fake_redis::{Engine, FakeConnection, Fault, NodeId, TokioClock, shared};
use lock_core::backend::{Backend, PubSubEvent};
use lock_core::fake::FakeBackend;
use lock_core::reply::Reply;
use redis::aio::ConnectionLike;
use redis::{AsyncCommands, Value};
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test(start_paused = true)]
async fn typed_commands_run_unchanged() {
    let engine = shared(Engine::new(TokioClock::new()));
    let mut conn = FakeConnection::new(engine, NodeId(1));
    let _: () = conn
        .hset_multiple("h", &[("a", 1), ("b", 2)])
        .await
        .unwrap();
    let all: BTreeMap<String, i64> = conn.hgetall("h").await.unwrap();
    assert_eq!(all, BTreeMap::from([("a".into(), 1), ("b".into(), 2)]));
    let n: i64 = conn.hincr("h", "a", 41).await.unwrap();
    assert_eq!(n, 42);
    let _: () = conn.set_ex("s", "v", 10).await.unwrap();
    let ttl: i64 = conn.ttl("s").await.unwrap();
    assert_eq!(ttl, 10);
    let err = conn.incr::<_, _, i64>("s", 1).await.unwrap_err();
    assert_eq!(err.code(), Some("ERR"));
    let err = conn
        .hget::<_, _, Option<String>>("s", "f")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"));
}

#[tokio::test(start_paused = true)]
async fn hello_3_switches_to_resp3_shapes() {
    let engine = shared(Engine::new(TokioClock::new()));
    let mut conn = FakeConnection::new(engine, NodeId(1));
    let _: () = conn.hset("h", "f", "v").await.unwrap();
    let flat: Value = redis::cmd("HGETALL")
        .arg("h")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        matches!(flat, Value::Array(ref items) if items.len() == 2),
        "{flat:?}"
    );
    let hello: Value = redis::cmd("HELLO")
        .arg(3)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(matches!(hello, Value::Map(_)), "{hello:?}");
    let map: Value = redis::cmd("HGETALL")
        .arg("h")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        map,
        Value::Map(vec![(
            Value::BulkString(b"f".to_vec()),
            Value::BulkString(b"v".to_vec())
        )])
    );
}

#[tokio::test(start_paused = true)]
async fn a_connection_keeps_its_database_across_a_restart() {
    let engine = shared(Engine::with_config(
        TokioClock::new(),
        fake_redis::EngineConfig {
            persistence: true,
            ..Default::default()
        },
    ));
    let mut conn = FakeConnection::new(engine.clone(), NodeId(1));
    let _: () = redis::cmd("SELECT")
        .arg(3)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(conn.get_db(), 3);
    let _: () = conn.set("k", "v").await.unwrap();
    engine.lock().unwrap().restart();
    // Reconnected transparently, as a connection manager would, to the same database.
    let v: Option<String> = conn.get("k").await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    assert!(engine.lock().unwrap().value(0, b"k").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_paused_subscriber_hears_messages_when_the_pause_ends() {
    let engine = shared(Engine::new(TokioClock::new()));
    let publisher = FakeBackend::new(engine.clone(), NodeId(1));
    let waiter = FakeBackend::new(engine.clone(), NodeId(2));
    let channel = Bytes::from_static(b"ch");
    waiter.subscribe(&channel).await.unwrap();
    let t0 = engine.lock().unwrap().clock_now();
    engine
        .lock()
        .unwrap()
        .add_fault(Fault::pause(NodeId(2), t0, 20_000));
    let publish = [
        Bytes::from_static(b"PUBLISH"),
        channel.clone(),
        Bytes::from_static(b"0"),
    ];
    assert_eq!(publisher.command(&publish).await, Ok(Reply::Int(1)));
    let event = tokio::time::timeout(Duration::from_secs(60), waiter.next_event())
        .await
        .unwrap();
    assert_eq!(
        event,
        PubSubEvent::Message {
            channel,
            payload: Bytes::from_static(b"0")
        }
    );
    assert_eq!(engine.lock().unwrap().clock_now(), t0 + 20_000);
}
