//! The wire between a client and the engine, apart from faults: a link's latency, and the request
//! log that shows what each client sent. On tokio's paused clock (a `TokioClock`).

use crate::support;

use bytes::Bytes;
use fake_redis::{CommandFate, FakeConnection, Fault, NodeId, RequestLog};
use lock_core::fake::FakeBackend;
use lock_core::reply::Reply;
use std::time::Duration;
use support::argv;
use support::backend::{add, assert_unknown, engine, exists, now, run};
use tokio::time::{Instant, sleep};

const A: NodeId = NodeId(1);
const B: NodeId = NodeId(2);
const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn a_request_lands_one_latency_after_it_is_sent_and_its_reply_one_more_later() {
    let engine = engine();
    let log = RequestLog::new();
    let backend = FakeBackend::new(engine.clone(), A)
        .with_latency(5 * MS)
        .with_request_log(log.clone());
    assert_eq!(backend.latency(), 5 * MS);
    let t0 = now(&engine);
    let started = Instant::now();
    let call = tokio::spawn(async move { run(&backend, "SET k v").await });
    sleep(4 * MS).await;
    assert!(!exists(&engine, "k"), "still on the wire");
    assert!(!log.entries()[0].applied);
    sleep(2 * MS).await;
    assert!(exists(&engine, "k"), "landed at 5 ms");
    assert!(log.entries()[0].applied);
    assert_eq!(call.await.unwrap(), Ok(Reply::Status("OK".into())));
    assert_eq!(started.elapsed(), 10 * MS, "a round trip is two latencies");
    let sent = &log.entries()[0];
    assert_eq!((sent.at, sent.node, sent.seq), (t0, A, 0));
    assert_eq!(sent.commands, vec![argv("SET k v")]);
    assert_eq!(sent.fate, CommandFate::Deliver);
}

#[tokio::test(start_paused = true)]
async fn a_request_on_the_wire_lands_after_its_caller_stopped_waiting() {
    let engine = engine();
    let log = RequestLog::new();
    let backend = FakeBackend::new(engine.clone(), A)
        .with_latency(5 * MS)
        .with_request_log(log.clone());
    let gave_up = tokio::time::timeout(MS, run(&backend, "SET k v")).await;
    assert!(gave_up.is_err());
    assert!(!exists(&engine, "k"));
    sleep(10 * MS).await;
    assert!(
        exists(&engine, "k"),
        "the network does not know the caller left"
    );
    assert!(log.entries()[0].applied);
}

#[tokio::test(start_paused = true)]
async fn latency_adds_to_the_plans_delays_and_the_response_timeout_bounds_the_whole_call() {
    let engine = engine();
    let log = RequestLog::new();
    let backend =
        FakeBackend::with_response_timeout(engine.clone(), A, Duration::from_millis(3_000))
            .with_latency(Duration::from_millis(1_000))
            .with_request_log(log.clone());

    // 1 s there, 1 s + 500 ms back.
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DelayReply(500)),
    );
    let started = Instant::now();
    assert_eq!(run(&backend, "INCR n").await, Ok(Reply::Int(1)));
    assert_eq!(started.elapsed(), Duration::from_millis(2_500));

    // 1 s there, 2.5 s back: past the 3 s timeout, though the server applied it.
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DelayReply(1_500)),
    );
    let started = Instant::now();
    let result = run(&backend, "INCR n").await;
    assert_unknown(&result);
    assert_eq!(started.elapsed(), Duration::from_millis(3_000));

    // 1 s + 2.5 s there: the caller gives up at 3 s, the request lands at 3.5 s.
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DelayRequest(2_500)),
    );
    let started = Instant::now();
    let result = run(&backend, "INCR n").await;
    assert_unknown(&result);
    assert_eq!(started.elapsed(), Duration::from_millis(3_000));
    sleep(Duration::from_millis(499)).await;
    assert!(!log.entries()[2].applied);
    sleep(2 * MS).await;
    assert!(log.entries()[2].applied, "landed at 3.5 s");

    // A dropped reply: applied after one latency, the caller times out.
    add(&engine, Fault::next_commands(A, 1, CommandFate::DropReply));
    let result = run(&backend, "INCR n").await;
    assert_unknown(&result);
    assert!(log.entries()[3].applied);
    let value = engine.lock().unwrap().value(0, b"n").unwrap().0;
    assert_eq!(value, fake_redis::Value::Str(Bytes::from_static(b"4")));
}

#[tokio::test(start_paused = true)]
async fn the_request_log_shows_what_each_node_sent_in_order_with_its_fate() {
    let engine = engine();
    let log = RequestLog::new();
    let a = FakeBackend::new(engine.clone(), A).with_request_log(log.clone());
    let b = FakeBackend::new(engine.clone(), B).with_request_log(log.clone());
    let t0 = now(&engine);
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DropRequest),
    );
    assert!(run(&a, "SET a 1").await.is_err());
    run(&b, "SET b 1").await.unwrap();
    run(&a, "SET a 2").await.unwrap();
    let entries = log.entries();
    let summary: Vec<_> = entries
        .iter()
        .map(|e| (e.at - t0, e.node, e.seq, e.fate, e.applied))
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, A, 0, CommandFate::DropRequest, false),
            (3_000, B, 0, CommandFate::Deliver, true),
            (3_000, A, 1, CommandFate::Deliver, true),
        ]
    );
    assert_eq!(entries[2].commands, vec![argv("SET a 2")]);

    // A transaction through the redis crate is one request of several commands.
    let mut conn = FakeConnection::new(engine.clone(), B).with_request_log(log.clone());
    let _: (i64, i64) = redis::pipe()
        .atomic()
        .incr("t", 1)
        .incr("t", 1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let last = log.entries().pop().unwrap();
    let names: Vec<_> = last
        .commands
        .iter()
        .map(|c| String::from_utf8_lossy(&c[0]).to_ascii_uppercase())
        .collect();
    assert_eq!(names, ["MULTI", "INCRBY", "INCRBY", "EXEC"]);
    assert_eq!(log.len(), 4);
}
