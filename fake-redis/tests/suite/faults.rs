//! Each fault of the plan, shown by its effect, on tokio's paused clock (a `TokioClock`): minutes of
//! virtual time per test, milliseconds of wall time.

use crate::support;

use bytes::Bytes;
use fake_redis::{
    CommandFate, Engine, EngineConfig, FakeConnection, Fault, NodeId, TokioClock, Trigger, shared,
};
use lock_core::RedisBackend;
use lock_core::backend::{Backend, BackendError, PubSubEvent};
use lock_core::fake::{FakeBackend, FakeSubscriber};
use lock_core::keys::{KeyLayout, LockKeys, Owner, RequestId};
use lock_core::reply::Reply;
use lock_core::script::{ScriptCall, acquire, renew_batch};
use lock_core::time::{Lease, Millis};
use redis::AsyncCommands;
use std::time::Duration;
use support::argv;
use support::backend::{add, assert_unknown, engine, exists, now, run};
use tokio::time::sleep;

const A: NodeId = NodeId(1);
const B: NodeId = NodeId(2);

fn lease_30s() -> Lease {
    Lease::from_millis(30_000).unwrap()
}

/// The lock `orders` and its owner `c0ffee:1`.
fn orders() -> (LockKeys, Owner) {
    (KeyLayout::default().lock("orders"), Owner::new("c0ffee", 1))
}

/// The owner's call, as request `request`, to acquire the lock for 30 s.
fn acquire_30s(keys: &LockKeys, owner: &Owner, request: u128) -> ScriptCall {
    acquire::call(keys, &RequestId(request), lease_30s(), owner, Millis(5_000))
}

#[tokio::test(start_paused = true)]
async fn a_30_second_lease_exists_at_its_deadline_and_is_gone_1_ms_later() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let (keys, owner) = orders();
    let call = acquire_30s(&keys, &owner, 1);
    assert_eq!(backend.eval(&call).await, Ok(Reply::Nil));
    sleep(Duration::from_millis(30_000)).await;
    assert_eq!(run(&backend, "PTTL orders").await, Ok(Reply::Int(0)));
    assert_eq!(run(&backend, "EXISTS orders").await, Ok(Reply::Int(1)));
    sleep(Duration::from_millis(1)).await;
    assert_eq!(run(&backend, "EXISTS orders").await, Ok(Reply::Int(0)));
}

#[tokio::test(start_paused = true)]
async fn a_dropped_reply_is_applied_but_the_caller_times_out() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    add(&engine, Fault::next_commands(A, 1, CommandFate::DropReply));
    let started = tokio::time::Instant::now();
    let result = run(&backend, "HSET h f v").await;
    assert_unknown(&result);
    assert_eq!(started.elapsed(), backend.response_timeout());
    assert!(exists(&engine, "h"), "the write was applied");

    // Through the redis crate, the lost reply is an I/O timeout.
    let mut conn = FakeConnection::new(engine.clone(), B);
    add(&engine, Fault::next_commands(B, 1, CommandFate::DropReply));
    let err = conn.set::<_, _, ()>("s", "v").await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(exists(&engine, "s"));
    let log = engine.lock().unwrap().fault_plan().log().to_vec();
    assert_eq!(log.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_request_writes_nothing() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DropRequest),
    );
    let result = run(&backend, "SET k v").await;
    assert_unknown(&result);
    assert!(!exists(&engine, "k"));
    // Only the next command was affected.
    assert_eq!(
        run(&backend, "SET k v").await,
        Ok(Reply::Status("OK".into()))
    );
}

#[tokio::test(start_paused = true)]
async fn a_delayed_request_lands_after_the_caller_gave_up() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DelayRequest(5_000)),
    );
    let result = run(&backend, "SET k v").await;
    assert_unknown(&result);
    assert!(!exists(&engine, "k"), "still in flight at the timeout");
    sleep(Duration::from_secs(3)).await;
    assert!(exists(&engine, "k"), "landed 5 s after it was sent");
}

#[tokio::test(start_paused = true)]
async fn a_delayed_reply_arrives_late() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    add(
        &engine,
        Fault::next_commands(A, 1, CommandFate::DelayReply(1_500)),
    );
    let started = tokio::time::Instant::now();
    assert_eq!(run(&backend, "INCR n").await, Ok(Reply::Int(1)));
    assert_eq!(started.elapsed(), Duration::from_millis(1_500));
}

#[tokio::test(start_paused = true)]
async fn a_renewal_issued_during_a_pause_lands_after_it() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let (keys, owner) = orders();
    let t0 = now(&engine);
    backend.eval(&acquire_30s(&keys, &owner, 1)).await.unwrap();
    add(&engine, Fault::pause(A, t0 + 8_000, 5_000));
    sleep(Duration::from_secs(10)).await;
    let renew = renew_batch::call(lease_30s(), [(&keys.lock, &owner)]);
    assert_eq!(
        backend.eval(&renew).await,
        Ok(Reply::Array(vec![Reply::Int(1)]))
    );
    // It left when the pause ended, at 13 s: the lease now runs to 13 s + 30 s.
    assert_eq!(now(&engine), t0 + 13_000);
    let (_, deadline) = engine.lock().unwrap().value(0, b"orders").unwrap();
    assert_eq!(deadline, Some(t0 + 43_000));
}

#[tokio::test(start_paused = true)]
async fn a_35_second_pause_lets_a_30_second_lease_expire() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let (keys, owner) = orders();
    let t0 = now(&engine);
    backend.eval(&acquire_30s(&keys, &owner, 1)).await.unwrap();
    add(&engine, Fault::pause(A, t0 + 5_000, 35_000));
    sleep(Duration::from_secs(10)).await;
    let renew = renew_batch::call(lease_30s(), [(&keys.lock, &owner)]);
    assert_eq!(
        backend.eval(&renew).await,
        Ok(Reply::Array(vec![Reply::Int(0)]))
    );
    assert_eq!(now(&engine), t0 + 40_000);
    assert!(!exists(&engine, "orders"));
}

#[tokio::test(start_paused = true)]
async fn a_restart_without_persistence_loses_keys_and_scripts() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let (keys, owner) = orders();
    let call = acquire_30s(&keys, &owner, 1);
    backend.eval(&call).await.unwrap();
    let sha = call.script.sha().to_owned();
    add(
        &engine,
        Fault::Restart {
            at: now(&engine) + 1_000,
        },
    );
    sleep(Duration::from_secs(2)).await;
    assert_eq!(run(&backend, "EXISTS orders").await, Ok(Reply::Int(0)));
    assert_eq!(
        run(&backend, &format!("SCRIPT EXISTS {sha}")).await,
        Ok(Reply::Array(vec![Reply::Int(0)]))
    );
    // With persistence on, the data survives but the script cache does not.
    let engine = shared(Engine::with_config(
        TokioClock::new(),
        EngineConfig {
            persistence: true,
            ..lock_core::fake::config()
        },
    ));
    let backend = FakeBackend::new(engine.clone(), A);
    backend.eval(&call).await.unwrap();
    engine.lock().unwrap().restart();
    assert_eq!(run(&backend, "EXISTS orders").await, Ok(Reply::Int(1)));
    assert_eq!(
        run(&backend, &format!("SCRIPT EXISTS {sha}")).await,
        Ok(Reply::Array(vec![Reply::Int(0)]))
    );
}

#[tokio::test(start_paused = true)]
async fn redis_backend_over_fake_connection_reloads_scripts_after_a_restart() {
    let engine = engine();
    let backend = RedisBackend::new(
        FakeConnection::new(engine.clone(), A),
        FakeSubscriber::new(engine.clone(), A),
        Duration::from_secs(3),
    );
    let (keys, owner) = orders();
    let call = acquire_30s(&keys, &owner, 1);
    assert_eq!(backend.eval(&call).await, Ok(Reply::Nil));
    engine.lock().unwrap().restart();
    // The script cache is empty: a bare EVALSHA gets NOSCRIPT…
    let mut conn = FakeConnection::new(engine.clone(), B);
    let err = redis::cmd("EVALSHA")
        .arg(call.script.sha())
        .arg(0)
        .query_async::<redis::Value>(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
    );
    // …and the backend loads the script and succeeds.
    let call = acquire_30s(&keys, &owner, 2);
    assert_eq!(backend.eval(&call).await, Ok(Reply::Nil));
    assert_eq!(
        backend.command(&argv("HGET orders c0ffee:1")).await,
        Ok(Reply::bulk("1"))
    );
    // redis::Script does the same dance.
    let script = redis::Script::new(call.script.body);
    engine.lock().unwrap().restart();
    let reply: Option<i64> = script
        .key(&keys.lock[..])
        .key(&keys.acquire_latch(&RequestId(3))[..])
        .arg(30_000)
        .arg("c0ffee:1")
        .arg(5_000)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(reply, None);
}

#[tokio::test(start_paused = true)]
async fn a_failover_with_lag_loses_the_last_writes() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let t0 = now(&engine);
    add(
        &engine,
        Fault::Failover {
            at: t0 + 10_000,
            lag_ms: 2_000,
        },
    );
    run(&backend, "SET early v").await.unwrap();
    sleep(Duration::from_secs(9)).await;
    run(&backend, "SET late v").await.unwrap();
    sleep(Duration::from_secs(2)).await;
    assert_eq!(run(&backend, "EXISTS early late").await, Ok(Reply::Int(1)));
    assert!(!exists(&engine, "late"));
    let log = engine.lock().unwrap().fault_plan().log().to_vec();
    assert!(
        log.iter().any(|e| matches!(
            e.kind,
            fake_redis::FaultEventKind::FailedOver {
                lag_ms: 2_000,
                undone: 1
            }
        )),
        "{log:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_link_down_times_calls_out_without_applying_them() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let t0 = now(&engine);
    add(
        &engine,
        Fault::LinkDown {
            node: A,
            from: t0,
            until: t0 + 5_000,
        },
    );
    let result = run(&backend, "SET k v").await;
    assert_unknown(&result);
    assert!(!exists(&engine, "k"));
    sleep(Duration::from_secs(2)).await;
    assert_eq!(
        run(&backend, "SET k v").await,
        Ok(Reply::Status("OK".into()))
    );
}

async fn next(backend: &FakeBackend) -> Option<PubSubEvent> {
    tokio::time::timeout(Duration::from_secs(60), backend.next_event())
        .await
        .ok()
}

#[tokio::test(start_paused = true)]
async fn a_dropped_delivery_never_arrives() {
    let engine = engine();
    let publisher = FakeBackend::new(engine.clone(), A);
    let waiter = FakeBackend::new(engine.clone(), B);
    let channel = Bytes::from_static(b"ch");
    waiter.subscribe(&channel).await.unwrap();
    add(
        &engine,
        Fault::DropDelivery {
            node: Some(B),
            trigger: Trigger::Next { count: 1 },
        },
    );
    assert_eq!(run(&publisher, "PUBLISH ch first").await, Ok(Reply::Int(1)));
    assert_eq!(
        run(&publisher, "PUBLISH ch second").await,
        Ok(Reply::Int(1))
    );
    assert_eq!(
        next(&waiter).await,
        Some(PubSubEvent::Message {
            channel,
            payload: Bytes::from_static(b"second")
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_subscriber_sees_lost_then_restored() {
    let engine = engine();
    let publisher = FakeBackend::new(engine.clone(), A);
    let waiter = FakeBackend::new(engine.clone(), B);
    let channel = Bytes::from_static(b"ch");
    waiter.subscribe(&channel).await.unwrap();
    let t0 = now(&engine);
    add(
        &engine,
        Fault::SubscriberDown {
            node: B,
            from: t0 + 1_000,
            until: t0 + 3_000,
        },
    );
    assert_eq!(next(&waiter).await, Some(PubSubEvent::SubscriptionLost));
    assert_eq!(now(&engine), t0 + 1_000);
    assert_eq!(
        run(&publisher, "PUBLISH ch missed").await,
        Ok(Reply::Int(0))
    );
    assert_eq!(next(&waiter).await, Some(PubSubEvent::SubscriptionRestored));
    assert_eq!(now(&engine), t0 + 3_000);
    assert_eq!(run(&publisher, "PUBLISH ch heard").await, Ok(Reply::Int(1)));
    assert_eq!(
        next(&waiter).await,
        Some(PubSubEvent::Message {
            channel,
            payload: Bytes::from_static(b"heard")
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_restart_drops_and_restores_subscriptions() {
    let engine = engine();
    let waiter = FakeBackend::new(engine.clone(), B);
    waiter.subscribe(&Bytes::from_static(b"ch")).await.unwrap();
    engine.lock().unwrap().restart();
    assert_eq!(next(&waiter).await, Some(PubSubEvent::SubscriptionLost));
    assert_eq!(next(&waiter).await, Some(PubSubEvent::SubscriptionRestored));
    let publisher = FakeBackend::new(engine.clone(), A);
    assert_eq!(run(&publisher, "PUBLISH ch x").await, Ok(Reply::Int(1)));
}

#[tokio::test(start_paused = true)]
async fn a_crashed_client_loses_its_subscriptions_and_sends_nothing() {
    let engine = engine();
    let publisher = FakeBackend::new(engine.clone(), A);
    let victim = FakeBackend::new(engine.clone(), B);
    victim.subscribe(&Bytes::from_static(b"ch")).await.unwrap();
    assert_eq!(run(&publisher, "PUBLISH ch x").await, Ok(Reply::Int(1)));
    add(
        &engine,
        Fault::Crash {
            node: B,
            at: now(&engine) + 1_000,
        },
    );
    sleep(Duration::from_secs(2)).await;
    assert_eq!(run(&publisher, "PUBLISH ch y").await, Ok(Reply::Int(0)));
    let result = run(&victim, "SET k v").await;
    assert!(
        matches!(result, Err(BackendError::NotApplied(_))),
        "{result:?}"
    );
    assert!(!exists(&engine, "k"));
}

#[tokio::test(start_paused = true)]
async fn a_forward_clock_jump_expires_a_key_early() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    run(&backend, "SET k v PX 30000").await.unwrap();
    add(
        &engine,
        Fault::ClockJump {
            at: now(&engine) + 1_000,
            delta_ms: 40_000,
        },
    );
    sleep(Duration::from_secs(2)).await;
    assert_eq!(run(&backend, "EXISTS k").await, Ok(Reply::Int(0)));
}

#[tokio::test(start_paused = true)]
async fn chance_faults_are_a_pure_function_of_the_seed() {
    let outcomes = |seed: u64| async move {
        let engine = shared(Engine::with_config(
            TokioClock::new(),
            EngineConfig {
                seed,
                ..lock_core::fake::config()
            },
        ));
        let backend =
            FakeBackend::with_response_timeout(engine.clone(), A, Duration::from_millis(100));
        add(
            &engine,
            Fault::Command {
                node: None,
                fault: CommandFate::DropRequest,
                trigger: Trigger::Chance { p: 0.3 },
            },
        );
        let mut out = Vec::new();
        for i in 0..40 {
            out.push(run(&backend, &format!("SET k{i} v")).await.is_ok());
        }
        out
    };
    let first = outcomes(7).await;
    assert_eq!(first, outcomes(7).await);
    assert_ne!(first, outcomes(8).await);
    assert!(first.iter().any(|ok| !ok) && first.iter().any(|ok| *ok));
}

#[tokio::test(start_paused = true)]
async fn a_call_waits_out_a_pause_added_while_it_waited_and_its_pause_is_logged_once() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A);
    let t0 = now(&engine);
    add(&engine, Fault::pause(A, t0, 5_000));
    let call = tokio::spawn(async move { run(&backend, "SET k v").await });
    sleep(Duration::from_secs(1)).await;
    add(&engine, Fault::pause(A, t0 + 4_000, 4_000));
    assert_eq!(call.await.unwrap(), Ok(Reply::Status("OK".into())));
    assert_eq!(
        now(&engine),
        t0 + 8_000,
        "it left when the second pause ended"
    );
    let log = engine.lock().unwrap().fault_plan().log().to_vec();
    assert_eq!(
        log.iter()
            .map(|e| (e.at - t0, e.kind.clone()))
            .collect::<Vec<_>>(),
        [(0, fake_redis::FaultEventKind::PausedUntil(t0 + 5_000))]
    );
}

#[tokio::test(start_paused = true)]
async fn the_plan_numbers_each_call_and_logs_its_fault_as_the_call_leaves() {
    let engine = engine();
    let backend = FakeBackend::new(engine.clone(), A).with_latency(Duration::from_millis(5));
    run(&backend, "SET k v").await.unwrap();
    let t0 = now(&engine);
    add(&engine, Fault::next_commands(A, 1, CommandFate::DropReply));
    assert_unknown(&run(&backend, "SET k w").await);
    assert!(exists(&engine, "k"));
    let log = engine.lock().unwrap().fault_plan().log().to_vec();
    assert_eq!(
        log,
        [fake_redis::FaultEvent {
            at: t0,
            node: Some(A),
            seq: Some(1),
            kind: fake_redis::FaultEventKind::ReplyDropped,
        }]
    );
}
