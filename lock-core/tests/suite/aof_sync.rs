//! The replica check's AOF form ([`SyncMode::Auto`]): a lock write is followed by `WAITAOF 1
//! <min_replicas> <timeout>` where the primary's AOF is on and the server has the command, and by
//! `WAIT` everywhere else, as Redisson 4 decides. Held on a primary and a replica of the test's
//! own, Redis 7.4.1 both (`REDIS_7_4_SERVER`, which `scripts/test` installs and exports; those
//! tests build only with the `test-oracles` feature, which `scripts/test` turns on), started with
//! `--appendonly yes`; and on the fake,
//! whose primary has no AOF. Which wait went out is read from the primary's own
//! `INFO commandstats`.

use crate::common::unique_prefix;

use bytes::Bytes;
use fake_redis::FakeRedis;
use lock_core::{
    Backend, LockClient, LockConfig, Millis, RedisBackend, Reply, SyncMode, SyncReplicas,
};
use std::time::Duration;

/// A config whose replica check is in `mode`, waiting at most 1.5 s for one replica: a replica
/// reports its AOF's progress with its acknowledgements, which may come only with its once a
/// second `REPLCONF ACK`.
fn checked(prefix: &str, mode: SyncMode) -> LockConfig {
    LockConfig {
        response_timeout: Some(Millis(4000)),
        key_layout: lock_core::KeyLayout::new(prefix),
        sync_replicas: Some(SyncReplicas {
            min_replicas: 1,
            timeout: Some(Millis(1500)),
            mode,
        }),
        ..LockConfig::default()
    }
}

/// `INFO <section>` of the server at `url`, as text.
async fn info(url: &str, section: &str) -> String {
    let admin = RedisBackend::connect(url, Duration::from_secs(2))
        .await
        .expect("connect for INFO");
    let argv = [Bytes::from_static(b"INFO"), Bytes::from(section.to_owned())];
    match admin.command(&argv).await {
        Ok(Reply::Bulk(text)) => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("INFO {section} answered {other:?}"),
    }
}

/// How many times the server ran `command` (`INFO commandstats`'s `calls=`), 0 when never.
async fn calls(url: &str, command: &str) -> u64 {
    let stats = info(url, "commandstats").await;
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("a count of calls"))
}

/// The tests on Redis 7.4.1 processes of their own.
#[cfg(feature = "test-oracles")]
mod on_redis_7_4 {
    use super::{calls, checked, info};
    use crate::common::unique_prefix;
    use lock_core::{LockClient, LockError, Operation, SyncMode};
    use std::net::TcpListener;
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// A Redis 7.4.1 process of the test's own, AOF on, in a folder of its own; killed and its
    /// folder removed on drop.
    struct Own74 {
        child: Child,
        port: u16,
        dir: PathBuf,
    }

    impl Own74 {
        /// Starts one on a free loopback port: `--appendonly yes` (fsync on every write, so a
        /// `WAITAOF` is answered at once), and `--replicaof` the given primary's port when given.
        fn start(appendonly: bool, replica_of: Option<u16>) -> Own74 {
            let bin = std::env::var("REDIS_7_4_SERVER")
                .expect("REDIS_7_4_SERVER names the Redis 7.4.1 server (scripts/test installs it)");
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let dir = std::env::temp_dir().join(unique_prefix(&format!("aof-{port}")));
            std::fs::create_dir_all(&dir).unwrap();
            let mut command = Command::new(&bin);
            command
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--daemonize", "no", "--appendfsync", "always"])
                .args(["--appendonly", if appendonly { "yes" } else { "no" }])
                .arg("--dir")
                .arg(&dir);
            if let Some(primary) = replica_of {
                command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
            }
            let child = command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("start {bin}: {e}"));
            let own = Own74 { child, port, dir };
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(Instant::now() < deadline, "{bin} never listened on {port}");
                std::thread::sleep(Duration::from_millis(20));
            }
            own
        }

        fn url(&self) -> String {
            format!("redis://127.0.0.1:{}/", self.port)
        }
    }

    impl Drop for Own74 {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// A primary with its AOF on and one replica (its AOF as `replica_aof` says), the replica's link
    /// up.
    async fn primary_and_replica(replica_aof: bool) -> (Own74, Own74) {
        let primary = Own74::start(true, None);
        let replica = Own74::start(replica_aof, Some(primary.port));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let linked = info(&replica.url(), "replication")
                .await
                .contains("master_link_status:up");
            if linked
                && info(&primary.url(), "replication")
                    .await
                    .contains("connected_slaves:1")
            {
                return (primary, replica);
            }
            assert!(Instant::now() < deadline, "the replica never linked up");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_the_aof_on_each_lock_write_waits_for_the_replicas_aof() {
        let (primary, _replica) = primary_and_replica(true).await;
        let prefix = unique_prefix("aof-on");
        let client = LockClient::connect(&primary.url(), checked(&prefix, SyncMode::Auto))
            .await
            .unwrap();
        let guard = client.lock(&format!("{prefix}:orders")).await.unwrap();
        assert!(guard.is_valid());
        guard.unlock().await.unwrap();
        // The probe (`WAITAOF 0 0 0`), then one after the acquire and one after the release.
        assert_eq!(calls(&primary.url(), "waitaof").await, 3);
        assert_eq!(calls(&primary.url(), "wait").await, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replica_that_writes_no_aof_acknowledges_wait_and_never_waitaof() {
        let (primary, _replica) = primary_and_replica(false).await;
        let prefix = unique_prefix("aof-replica-off");
        let name = format!("{prefix}:orders");
        // `Ack`: `WAIT`, which the replica acknowledges from memory.
        let ack = LockClient::connect(&primary.url(), checked(&prefix, SyncMode::Ack))
            .await
            .unwrap();
        ack.lock(&name).await.unwrap().unlock().await.unwrap();
        assert_eq!(calls(&primary.url(), "wait").await, 2);
        assert_eq!(calls(&primary.url(), "waitaof").await, 0);
        // `Auto`: `WAITAOF 1 1 1500`, which answers [1, 0] once its 1.5 s are out: the grant is
        // refused and given back.
        let auto = LockClient::connect(&primary.url(), checked(&prefix, SyncMode::Auto))
            .await
            .unwrap();
        match auto.lock(&name).await {
            Err(LockError::ReplicasNotSynced {
                operation: Operation::Acquire,
                acked: 0,
                required: 1,
                ..
            }) => {}
            other => panic!("expected the grant refused for want of the replica's AOF: {other:?}"),
        }
        assert!(calls(&primary.url(), "waitaof").await >= 2);
        let free = ack.try_lock(&name, Duration::ZERO, None).await.unwrap();
        free.expect("the refused grant was given back")
            .unlock()
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_fake_whose_primary_has_no_aof_the_auto_mode_waits_with_wait() {
    let fake = FakeRedis::builder().sentinel(1).start().await;
    let prefix = unique_prefix("aof-fake");
    let client = LockClient::connect(&fake.url(), checked(&prefix, SyncMode::Auto))
        .await
        .unwrap();
    let guard = client.lock(&format!("{prefix}:orders")).await.unwrap();
    assert!(guard.is_valid());
    guard.unlock().await.unwrap();
    assert!(
        info(&fake.url(), "persistence")
            .await
            .contains("aof_enabled:0")
    );
    assert_eq!(calls(&fake.url(), "wait").await, 2);
    assert_eq!(calls(&fake.url(), "waitaof").await, 0);
}
