//! The test handle, [`FakeRedis`], as a user meets it: the short test of the crate's front page
//! through each door (an in-process `MultiplexedConnection`, a `redis::Client` on its URL, and
//! `redis-cli`), a cluster from the same builder, and each fault on cue.

use fake_redis::{FakeRedis, FaultEventKind, NodeId, key_slot};
use redis::AsyncCommands;
use std::process::Stdio;
use std::time::Duration;

/// The acceptance test: at most 15 lines of the public API.
#[tokio::test]
async fn a_key_expires_and_a_lost_reply_still_wrote() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;
    let _: () = con.set_ex("session", "alice", 30).await.unwrap();
    redis.advance(Duration::from_secs(31)).await;
    assert!(!con.exists::<_, bool>("session").await.unwrap());
    redis.faults().drop_next_reply();
    assert!(con.incr::<_, _, i64>("visits", 1).await.is_err());
    assert_eq!(redis.get("visits").as_deref(), Some(&b"1"[..]));
}

#[tokio::test]
async fn the_same_through_a_client_on_its_url() {
    let redis = FakeRedis::start().await;
    let client = redis::Client::open(redis.url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = con.set_ex("session", "alice", 30).await.unwrap();
    redis.advance(Duration::from_secs(31)).await;
    assert!(!con.exists::<_, bool>("session").await.unwrap());
    redis.faults().drop_next_reply();
    let lost = con.incr::<_, _, i64>("visits", 1).await.unwrap_err();
    assert!(
        lost.is_io_error() || lost.is_connection_dropped(),
        "{lost:?}"
    );
    assert_eq!(redis.get("visits").as_deref(), Some(&b"1"[..]));
}

/// Runs `redis-cli -u <url> <args…>`: its standard output, and whether it succeeded.
async fn redis_cli(url: &str, args: &[&str]) -> (String, bool) {
    let output = tokio::process::Command::new("redis-cli")
        .args(["-u", url])
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("redis-cli finishes in time")
        .expect("redis-cli is installed (it comes with redis-server)");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    (out, output.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_by_redis_cli() {
    let redis = FakeRedis::start().await;
    let url = redis.url();
    assert_eq!(
        redis_cli(&url, &["SET", "session", "alice", "EX", "30"]).await,
        ("OK\n".to_owned(), true)
    );
    redis.advance(Duration::from_secs(31)).await;
    assert_eq!(
        redis_cli(&url, &["EXISTS", "session"]).await,
        ("0\n".to_owned(), true)
    );
    // Every connection's next reply, connections opened later included: redis-cli's own.
    redis.faults().drop_next_reply();
    let (_, answered) = redis_cli(&url, &["INCR", "visits"]).await;
    assert!(!answered, "redis-cli saw its connection close unanswered");
    assert_eq!(redis.get("visits").as_deref(), Some(&b"1"[..]));
    assert_eq!(redis_cli(&url, &["GET", "visits"]).await.0, "1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_from_the_builder_serves_a_cluster_client() {
    let redis = FakeRedis::builder().cluster(3, 1).start().await;
    let client = redis::cluster::ClusterClient::new(redis.urls()).unwrap();
    let mut con = client.get_async_connection().await.unwrap();
    // One key per shard: each shard owns a range of slots, as `redis-cli --cluster create`
    // splits them.
    let ranges = fake_redis::engine::cluster::create_slot_ranges(3);
    let keys: Vec<String> = ranges
        .iter()
        .map(|&(first, last)| {
            (0..)
                .map(|i| format!("key:{i}"))
                .find(|k| (first..=last).contains(&key_slot(k.as_bytes())))
                .unwrap()
        })
        .collect();
    for key in &keys {
        let _: () = con.set(key, "v").await.unwrap();
    }
    for (shard, key) in keys.iter().enumerate() {
        let primary = &redis.servers()[shard];
        let engine = primary.engine().lock().unwrap();
        assert!(
            engine.value(0, key.as_bytes()).is_some(),
            "{key} on shard {shard}"
        );
        for other in (0..3).filter(|&o| o != shard) {
            let engine = redis.servers()[other].engine().lock().unwrap();
            assert!(
                engine.value(0, key.as_bytes()).is_none(),
                "{key} only on its shard"
            );
        }
    }
}

#[tokio::test]
async fn faults_aim_at_one_node() {
    let redis = FakeRedis::start().await;
    let mut a = redis.connection_as(NodeId(1)).await;
    let mut b = redis.connection_as(NodeId(2)).await;
    redis.node(NodeId(1)).drop_next_request();
    assert!(a.set::<_, _, ()>("k", "a").await.is_err());
    let _: () = b.set("k", "b").await.unwrap();
    assert_eq!(redis.get("k").as_deref(), Some(&b"b"[..]));
    let log = redis.fault_log();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].node, &log[0].kind),
        (Some(NodeId(1)), &FaultEventKind::RequestDropped)
    );
}

#[tokio::test]
async fn a_delayed_reply_lands_when_the_clock_reaches_it() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;
    redis.faults().delay_replies(1, Duration::from_millis(300));
    let call = tokio::spawn(async move { con.incr::<_, _, i64>("n", 1).await });
    tokio::task::yield_now().await;
    // Applied at once, answered 300 ms later on the fake's clock.
    while redis.get("n").is_none() {
        tokio::task::yield_now().await;
    }
    redis.advance(Duration::from_millis(300)).await;
    assert_eq!(call.await.unwrap().unwrap(), 1);
}

#[tokio::test]
async fn a_restart_loses_the_data_or_keeps_it() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;
    let _: () = con.set("k", "v").await.unwrap();
    redis.restart(true);
    assert_eq!(redis.get("k").as_deref(), Some(&b"v"[..]));
    assert!(
        con.get::<_, String>("k").await.is_err(),
        "its connection closed"
    );
    redis.restart(false);
    assert!(!redis.exists("k"));
    let mut again = redis.connection().await;
    assert_eq!(again.get::<_, Option<String>>("k").await.unwrap(), None);
}

#[tokio::test]
async fn a_clock_jump_expires_keys_early_and_ttl_reads_without_touching() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;
    let _: () = con.set_ex("lease", "held", 30).await.unwrap();
    assert_eq!(redis.ttl("lease"), Some(Duration::from_secs(30)));
    let before = redis.now();
    redis.jump_clock(31_000);
    assert_eq!(
        redis.now(),
        before,
        "now() is the fault clock, before jumps"
    );
    assert!(!con.exists::<_, bool>("lease").await.unwrap());
}

#[tokio::test]
async fn a_paused_connection_sends_nothing_until_its_pause_ends() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection_as(NodeId(7)).await;
    redis.node(NodeId(7)).pause(Duration::from_secs(5));
    let call = tokio::spawn(async move { con.set::<_, _, ()>("k", "v").await });
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(!redis.exists("k"), "held by the pause");
    redis.advance(Duration::from_secs(5)).await;
    call.await.unwrap().unwrap();
    assert!(redis.exists("k"));
}

#[tokio::test]
async fn a_severed_connection_closes_and_a_new_one_works() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection_as(NodeId(3)).await;
    let _: () = con.set("k", "v").await.unwrap();
    redis.node(NodeId(3)).sever();
    assert!(con.get::<_, String>("k").await.is_err());
    let mut again = redis.connection_as(NodeId(3)).await;
    assert_eq!(again.get::<_, String>("k").await.unwrap(), "v");
}

#[tokio::test(start_paused = true)]
async fn on_tokio_paused_clock_a_sleep_is_the_fakes_time_too() {
    let redis = FakeRedis::builder().tokio_clock().start().await;
    let mut con = redis.connection().await;
    let _: () = con.set_ex("k", "v", 30).await.unwrap();
    tokio::time::sleep(Duration::from_secs(29)).await;
    assert!(con.exists::<_, bool>("k").await.unwrap());
    redis.advance(Duration::from_secs(2)).await;
    assert!(!con.exists::<_, bool>("k").await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_manager_and_a_blocking_connection_on_its_url() {
    let redis = FakeRedis::start().await;
    let mut manager = redis::aio::ConnectionManager::new(redis.client())
        .await
        .unwrap();
    let _: () = manager.set("k", "v").await.unwrap();
    let client = redis.client();
    let read = tokio::task::spawn_blocking(move || {
        let mut con = client.get_connection().unwrap();
        redis::Commands::get::<_, String>(&mut con, "k").unwrap()
    });
    assert_eq!(read.await.unwrap(), "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_layout_names_its_primary() {
    let redis = FakeRedis::builder().sentinel(1).start().await;
    let sentinel = redis::Client::open(redis.sentinel_url().unwrap()).unwrap();
    let mut con = sentinel.get_multiplexed_async_connection().await.unwrap();
    let addr: Vec<String> = redis::cmd("SENTINEL")
        .arg("GET-MASTER-ADDR-BY-NAME")
        .arg(fake_redis::DEFAULT_MASTER_NAME)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(format!("redis://{}:{}/", addr[0], addr[1]), redis.url());
}

#[tokio::test]
async fn reads_through_the_handle_count_nothing() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;
    let _: () = con.set("k", "v").await.unwrap();
    for _ in 0..3 {
        assert_eq!(redis.get("k").as_deref(), Some(&b"v"[..]));
        assert!(redis.get("missing").is_none());
    }
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(info.contains("keyspace_hits:0\r\n"), "{info}");
    assert!(info.contains("keyspace_misses:0\r\n"), "{info}");
}

#[tokio::test]
async fn the_command_log_shows_what_ran_and_who_sent_it() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection_as(NodeId(4)).await;
    redis.engine().lock().unwrap().log_commands(10); // forget the handshake
    let _: () = con.set("k", "v").await.unwrap();
    let _: i64 = redis::Script::new("return redis.call('INCR', KEYS[1])")
        .key("n")
        .invoke_async(&mut con)
        .await
        .unwrap();
    let commands: Vec<(Option<NodeId>, String)> = redis
        .commands()
        .iter()
        .map(|c| {
            let argv: Vec<_> = c.argv.iter().map(|a| String::from_utf8_lossy(a)).collect();
            (c.node, argv.join(" "))
        })
        .collect();
    let sha = commands[1].1.split(' ').nth(1).unwrap().to_owned();
    // As MONITOR shows it: the client's EVALSHA (NOSCRIPT the first time), SCRIPT LOAD, the
    // EVALSHA again, then the script's call with no client.
    assert_eq!(
        commands,
        [
            (Some(NodeId(4)), "SET k v".to_owned()),
            (Some(NodeId(4)), format!("EVALSHA {sha} 1 n")),
            (
                Some(NodeId(4)),
                "SCRIPT LOAD return redis.call('INCR', KEYS[1])".to_owned()
            ),
            (Some(NodeId(4)), format!("EVALSHA {sha} 1 n")),
            (None, "INCR n".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_failover_loses_the_writes_its_replica_had_not_received() {
    let redis = FakeRedis::start().await;
    let mut con = redis.connection().await;
    let _: () = con.set("old", "1").await.unwrap();
    redis.advance(Duration::from_secs(10)).await;
    let _: () = con.set("new", "1").await.unwrap();
    redis.advance(Duration::from_secs(1)).await;
    redis.failover(Duration::from_secs(5));
    assert!(redis.exists("old"));
    assert!(!redis.exists("new"), "written inside the lag: lost");
    let log = redis.fault_log();
    assert_eq!(
        log.last().map(|e| &e.kind),
        Some(&FaultEventKind::FailedOver {
            lag_ms: 5_000,
            undone: 1
        })
    );
}
