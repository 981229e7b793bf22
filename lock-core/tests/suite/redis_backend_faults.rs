//! `RedisBackend` under the faults a real deployment meets, each on a `redis-server` the test
//! starts itself (it restarts, flushes or pauses it, which the shared server must never see).

use crate::common;
use crate::delay_proxy::DelayProxy;

use bytes::Bytes;
use common::OwnRedis;
use lock_core::script::acquire::{self, AcquireReply};
use lock_core::{
    Backend, BackendError, KeyLayout, Lease, LockClient, LockConfig, Millis, Owner, RedisBackend,
    Reply, RequestId, UnlockOutcome,
};
use std::time::Duration;

fn cmd(args: &[&str]) -> Vec<Bytes> {
    args.iter()
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}

async fn acquire_once(backend: &RedisBackend, req: u128) -> Result<Reply, BackendError> {
    let keys = KeyLayout::default().lock("faults");
    let call = acquire::call(
        &keys,
        &RequestId(req),
        Lease::from_millis(30_000).unwrap(),
        &Owner::new("c", 1),
        Millis(10_000),
    );
    backend.eval(&call).await
}

#[tokio::test]
async fn a_restart_between_calls_is_never_a_wrong_answer_and_the_backend_reconnects() {
    let mut server = OwnRedis::start();
    let backend = RedisBackend::connect(&server.url(), Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(
        backend.command(&cmd(&["SET", "k", "v"])).await,
        Ok(Reply::Status("OK".into()))
    );
    server.restart();
    // The first call after the restart meets the dead connection: it must not claim an answer.
    match backend.command(&cmd(&["GET", "k"])).await {
        Err(BackendError::NotApplied(_) | BackendError::Unknown(_)) => {}
        Ok(Reply::Nil) => {} // already reconnected: the restarted server really has no `k`
        other => panic!("a call across a restart must not give a wrong answer: {other:?}"),
    }
    // A later call succeeds on a new connection, and the script cache (empty after the restart)
    // is refilled through NOSCRIPT.
    let mut reply = None;
    for _ in 0..50 {
        match acquire_once(&backend, 1).await {
            Ok(r) => {
                reply = Some(r);
                break;
            }
            Err(BackendError::Server(e)) => panic!("server error: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let reply = reply.expect("the backend reconnects after a restart");
    assert_eq!(acquire::decode(&reply), Ok(AcquireReply::Acquired));
    assert_eq!(
        backend.command(&cmd(&["GET", "k"])).await,
        Ok(Reply::Nil),
        "the restarted server kept no data"
    );
}

#[tokio::test]
async fn script_flush_is_survived_by_reloading_the_script() {
    let server = OwnRedis::start();
    let backend = RedisBackend::connect(&server.url(), Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(
        acquire::decode(&acquire_once(&backend, 1).await.unwrap()),
        Ok(AcquireReply::Acquired)
    );
    assert_eq!(
        backend.command(&cmd(&["SCRIPT", "FLUSH"])).await,
        Ok(Reply::Status("OK".into()))
    );
    let exists = backend
        .command(&cmd(&["SCRIPT", "EXISTS", acquire::SCRIPT.sha()]))
        .await;
    assert_eq!(exists, Ok(Reply::Array(vec![Reply::Int(0)])));
    assert_eq!(
        acquire::decode(&acquire_once(&backend, 2).await.unwrap()),
        Ok(AcquireReply::Acquired)
    );
    let exists = backend
        .command(&cmd(&["SCRIPT", "EXISTS", acquire::SCRIPT.sha()]))
        .await;
    assert_eq!(exists, Ok(Reply::Array(vec![Reply::Int(1)])));
}

#[tokio::test]
async fn a_reply_that_never_arrives_is_an_unknown_outcome() {
    let server = OwnRedis::start();
    let backend = RedisBackend::connect(&server.url(), Duration::from_millis(500))
        .await
        .unwrap();
    // Load the script first, so the paused call is a complete EVALSHA, not a NOSCRIPT round.
    let load = backend
        .command(&cmd(&["SCRIPT", "LOAD", acquire::SCRIPT.body]))
        .await;
    assert_eq!(
        load,
        Ok(Reply::Bulk(Bytes::from(acquire::SCRIPT.sha().to_owned())))
    );
    // Another connection pauses every client for longer than the response timeout.
    let admin = RedisBackend::connect(&server.url(), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        admin
            .command(&cmd(&["CLIENT", "PAUSE", "3000", "ALL"]))
            .await,
        Ok(Reply::Status("OK".into()))
    );
    let outcome = acquire_once(&backend, 1).await;
    assert!(
        matches!(outcome, Err(BackendError::Unknown(_))),
        "expected an unknown outcome, got {outcome:?}"
    );
    // The paused call is applied when the pause ends: that is why it was "unknown", not "failed".
    let mut held = false;
    for _ in 0..60 {
        if backend.command(&cmd(&["EXISTS", "faults"])).await == Ok(Reply::Int(1)) {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        held,
        "the call whose reply timed out was applied after the pause"
    );
}

/// `failed_calls` of `EVALSHA` in the server's command statistics: a `NOSCRIPT` is one.
async fn failed_evalshas(backend: &RedisBackend) -> u64 {
    let Ok(Reply::Bulk(info)) = backend.command(&cmd(&["INFO", "commandstats"])).await else {
        panic!("INFO commandstats")
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    info.lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .and_then(|l| l.split(',').find(|f| f.starts_with("failed_calls=")))
        .map_or(0, |f| f["failed_calls=".len()..].trim().parse().unwrap())
}

#[tokio::test]
async fn scripts_are_loaded_on_connect_and_after_a_reconnect_without_noscript() {
    let mut server = OwnRedis::start();
    let backend = RedisBackend::connect(&server.url(), Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(
        backend
            .command(&cmd(&["SCRIPT", "EXISTS", acquire::SCRIPT.sha()]))
            .await,
        Ok(Reply::Array(vec![Reply::Int(1)])),
        "loaded when the backend connected"
    );
    acquire_once(&backend, 1).await.unwrap();
    server.restart();
    let mut reply = None;
    for _ in 0..50 {
        match acquire_once(&backend, 2).await {
            Ok(r) => {
                reply = Some(r);
                break;
            }
            Err(BackendError::Server(e)) => panic!("server error: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(
        acquire::decode(&reply.expect("reconnected")),
        Ok(AcquireReply::Acquired)
    );
    assert_eq!(
        failed_evalshas(&backend).await,
        0,
        "no NOSCRIPT after the restart"
    );
}

/// The bound on a test that talks to a server through a slow network or a pause.
const BOUND: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_works_across_a_400_ms_round_trip_under_a_500_ms_response_timeout() {
    let server = OwnRedis::start();
    let proxy = DelayProxy::start(server.port(), Duration::from_millis(200)).await;
    // A 3 s watchdog: a response timeout of 500 ms, above the 400 ms round trip.
    let config = LockConfig {
        watchdog_timeout: Millis(3000),
        ..LockConfig::default()
    };
    assert_eq!(config.response_timeout(), Millis(500));
    let run = async {
        let client = LockClient::connect(&proxy.url(), config)
            .await
            .expect("connects");
        let guard = client
            .try_lock("slow-network", Duration::from_secs(5), None)
            .await
            .expect("the first acquire is answered within its response timeout")
            .expect("the lock is free");
        // Long enough for several renewals and for the replica count to be asked again (5 s).
        tokio::time::sleep(Duration::from_secs(7)).await;
        assert!(guard.is_valid(), "{:?}", guard.status());
        assert_eq!(guard.unlock().await, Ok(UnlockOutcome::Released));
    };
    tokio::time::timeout(BOUND, run).await.expect("bounded");
}

/// A redis-server of the test's own whose writes `CLIENT PAUSE 6000 WRITE` holds from the
/// returned instant, an admin connection to it (its calls may wait `admin_timeout`, past the
/// pause), and a lock client with a 600 ms response timeout.
async fn paused_for_six_seconds(
    admin_timeout: Duration,
) -> (OwnRedis, RedisBackend, LockClient, tokio::time::Instant) {
    let server = OwnRedis::start();
    let admin = RedisBackend::connect(&server.url(), admin_timeout)
        .await
        .unwrap();
    let config = LockConfig {
        response_timeout: Some(Millis(600)),
        ..LockConfig::default()
    };
    let client = LockClient::connect(&server.url(), config).await.unwrap();
    let paused_at = tokio::time::Instant::now();
    assert_eq!(
        admin
            .command(&cmd(&["CLIENT", "PAUSE", "6000", "WRITE"]))
            .await,
        Ok(Reply::Status("OK".into()))
    );
    (server, admin, client, paused_at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_keeps_trying_through_a_server_pause_and_leaves_no_hold_for_no_one() {
    let (_server, admin, client, _) = paused_for_six_seconds(Duration::from_secs(5)).await;
    let run = async {
        let outcome = client
            .try_lock("paused", Duration::from_secs(20), None)
            .await;
        match outcome {
            Ok(Some(guard)) => {
                assert!(guard.is_valid(), "{:?}", guard.status());
                assert_eq!(guard.unlock().await, Ok(UnlockOutcome::Released));
            }
            other => {
                // Whatever it answered, a hold it gave up must not stay on the server.
                tokio::time::sleep(Duration::from_secs(8)).await;
                let left = admin.command(&cmd(&["PTTL", "paused"])).await;
                panic!(
                    "a 20 s budget outlasts a 6 s pause, so the lock is granted; got {other:?}, \
                     and the lock's key has PTTL {left:?}"
                );
            }
        }
        assert_eq!(
            admin.command(&cmd(&["EXISTS", "paused"])).await,
            Ok(Reply::Int(0))
        );
    };
    tokio::time::timeout(BOUND, run).await.expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_during_a_pause_gives_back_after_its_queued_attempt() {
    let (_server, admin, client, paused_at) = paused_for_six_seconds(Duration::from_secs(10)).await;
    let run = async {
        // A budget shorter than the pause: the attempt stays queued, and the waiter gives up.
        let outcome = client
            .try_lock("given-back", Duration::from_secs(2), None)
            .await;
        let err = outcome.expect_err("no answer during the pause");
        assert!(err.outcome_unknown(), "{err}");
        // The queued attempt is applied when the pause ends, and the give-back right after it.
        // A write of the admin's own waits for the pause to end; a moment later the paused
        // client's queue has run. Without the give-back the hold would live its 30 s lease.
        let probe = admin.command(&cmd(&["SET", "pause-over", "1"])).await;
        assert_eq!(probe, Ok(Reply::Status("OK".into())));
        assert!(
            paused_at.elapsed() >= Duration::from_secs(5),
            "the pause held writes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let left = admin.command(&cmd(&["PTTL", "given-back"])).await;
        assert_eq!(
            left,
            Ok(Reply::Int(-2)),
            "a hold given up must not stay on the server for its lease"
        );
    };
    tokio::time::timeout(BOUND, run).await.expect("bounded");
}
