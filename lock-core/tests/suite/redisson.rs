//! The lock against real Redisson: a Rust service and a Java service contending for one lock.
//!
//! The README promises a mixed fleet because our keys, owners, channels and messages are
//! Redisson's; these tests hold that promise to Redisson itself. Each test starts the Java peer of
//! `interop/redisson` (`java -jar interop/redisson/target/redisson-driver.jar`, built by
//! `scripts/test`; `REDISSON_DRIVER_JAR` names another) and scripts it line by line: Redisson's
//! locks belong to a thread, so every Java command runs on a named holder's thread, and two
//! holders are two owners.
//!
//! Every case runs twice, on two servers: in `on_redis`, the real redis-server of `REDIS_URL`
//! (`scripts/test` starts one), shared and never flushed, so each case uses lock names of its own;
//! in `on_fake`, a `fake-redis-server` of the test's own on a free port, on the wall clock as
//! Redisson is, where Redisson's own scripts run on the fake's embedded Lua. One case body, two
//! servers: any difference between them is a bug in the fake. Without the server or the jar these
//! tests fail, never skip.
//! Timings are generous for a loaded 2-core machine: a wake-up is bounded only well below the
//! lease it would otherwise wait out, and its latency is printed, not asserted.

use crate::common;

use lock_core::{
    KeyLayout, LockClient, LockConfig, LockError, Millis, RedisBackend, UnlockOutcome,
};
use std::collections::HashMap;
use std::future::IntoFuture;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The watchdog timeout on both sides wherever a test does not need a longer one.
const WATCHDOG_MS: u64 = 3000;
/// The most a reply of the Java peer may take: only a blocking lock comes near it.
const REPLY_BOUND: Duration = Duration::from_secs(60);
/// A lease no test waits out: a wake-up well within it came from the unlock message.
const LONG_LEASE: Duration = Duration::from_secs(60);
/// The bound on a wake-up across languages: far below [`LONG_LEASE`] and any wait round.
const WAKE_BOUND: Duration = Duration::from_secs(5);

/// Runs each case, an `async fn(server: &Site)`, as one test on the real Redis of `REDIS_URL`
/// (module `on_redis`) and one on a fake-redis-server of its own (module `on_fake`).
macro_rules! on_both_servers {
    ($($case:ident),* $(,)?) => {
        mod on_redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(&super::Site::redis()).await;
                }
            )*
        }
        mod on_fake {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(&super::Site::fake()).await;
                }
            )*
        }
    };
}

on_both_servers!(
    a_redisson_holder_blocks_our_try_lock_and_ours_blocks_theirs,
    an_unlock_on_one_side_wakes_a_waiter_on_the_other_by_pubsub,
    reentrancy_stays_per_owner_across_languages,
    watchdog_renewals_from_either_side_keep_a_lock_alive,
    force_unlock_from_either_side_releases_and_wakes_the_other,
    fencing_tokens_from_both_sides_draw_from_one_counter,
    the_driver_scripts_redissons_fair_read_write_and_multi_locks,
    our_multi_lock_and_redissons_exclude_each_other,
    our_multi_lock_breaks_a_cycle_with_a_redisson_holder_by_its_rounds,
    redissons_own_scripts_leave_the_same_state_on_either_server,
    a_redisson_fair_holder_blocks_our_fair_waiter_and_its_unlock_wakes_it,
    a_mixed_fair_queue_java_rust_java_is_served_in_arrival_order,
    readers_share_across_languages_and_a_writer_on_either_side_excludes_the_other,
    a_read_unlock_wakes_a_writer_and_a_write_unlock_a_reader_across_languages,
    a_downgrade_on_one_side_is_seen_by_the_other,
    read_renewals_from_either_side_keep_read_holds_alive,
);

/// The server a case runs on, for both sides: its URL, and a name for what the case prints.
struct Site {
    url: String,
    name: &'static str,
    /// The fake's server, stopped when the case is done; `None` for the real Redis.
    _fake: Option<FakeServer>,
}

impl Site {
    fn redis() -> Site {
        Site {
            url: common::redis_url(),
            name: "redis-server",
            _fake: None,
        }
    }

    fn fake() -> Site {
        let fake = FakeServer::start();
        Site {
            url: fake.url(),
            name: "fake-redis-server",
            _fake: Some(fake),
        }
    }
}

/// A fake-redis-server of one test's own: the server the binary runs (`fake_redis::server`), on
/// the wall clock and a free loopback port, served by a thread and runtime of its own so that
/// neither the test's runtime nor a blocked reader of the Java peer can stall it. Dropping it
/// shuts the server down.
struct FakeServer {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl FakeServer {
    fn start() -> FakeServer {
        use fake_redis::server::{ClockChoice, Server, ServerConfig};
        let (bound, addr) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the fake");
            runtime.block_on(async move {
                let config = ServerConfig {
                    port: 0,
                    clock: ClockChoice::System,
                    native_scripts: lock_core::fake::twins(),
                    ..ServerConfig::default()
                };
                let listener = fake_redis::server::bind(&config)
                    .await
                    .expect("bind a free loopback port");
                bound.send(listener.local_addr().unwrap()).unwrap();
                Server::new(&config)
                    .run(listener, async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        FakeServer {
            addr: addr.recv().expect("the fake bound its port"),
            stop: Some(stop),
        }
    }

    fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        // Not joined: the server gives open connections a grace period to close, which the
        // test need not wait out.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A lock name no other test or run uses.
fn unique(test: &str) -> String {
    common::unique_prefix(&format!("interop-{test}"))
}

/// Redisson's settings on our side: its key layout, and the given watchdog timeout.
fn config(watchdog_ms: u64) -> LockConfig {
    LockConfig {
        watchdog_timeout: Millis(watchdog_ms),
        response_timeout: Some(Millis(500)),
        // A waiter's rounds are a minute long: only the unlock message wakes it sooner.
        wait_round_cap: Some(Millis(60_000)),
        key_layout: KeyLayout::default(),
        ..LockConfig::default()
    }
}

async fn client(server: &Site, watchdog_ms: u64) -> LockClient {
    let backend = RedisBackend::connect(&server.url, Duration::from_millis(500))
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {e}", server.url));
    LockClient::new(backend, config(watchdog_ms)).unwrap()
}

/// A plain connection, to look at the keys as both sides left them.
async fn raw(server: &Site) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {e}", server.url))
}

async fn hash_fields(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<String> {
    let fields: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(key)
        .query_async(conn)
        .await
        .unwrap();
    let mut fields: Vec<String> = fields.into_keys().collect();
    fields.sort();
    fields
}

/// Waits until `channel` has at least one subscriber: a waiter is parked on the unlock message.
async fn await_subscriber(conn: &mut redis::aio::MultiplexedConnection, channel: &str) {
    let deadline = Instant::now() + REPLY_BOUND;
    loop {
        let (_, count): (String, u64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(channel)
            .query_async(conn)
            .await
            .unwrap();
        if count > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no waiter subscribed to {channel}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// The Java peer: one `java -jar redisson-driver.jar` process with one Redisson client.
struct Redisson {
    child: Child,
    stdin: Mutex<ChildStdin>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>,
    next_tag: AtomicU64,
    /// Redisson's client id, the first half of its owners.
    id: String,
}

/// What the peer answered: `ok [value]` or `err <class> <message>`.
#[derive(Debug)]
struct Reply(String);

impl Reply {
    /// The value of an `ok`; panics with the error otherwise.
    fn ok(self) -> String {
        match self.0.strip_prefix("ok") {
            Some(value) => value.trim_start().to_owned(),
            None => panic!("Redisson answered {:?}", self.0),
        }
    }

    /// The exception class of an `err`; panics on an `ok`.
    fn err(self) -> String {
        match self.0.strip_prefix("err ") {
            Some(rest) => rest.split(' ').next().unwrap_or_default().to_owned(),
            None => panic!("Redisson answered {:?}, expected an error", self.0),
        }
    }
}

impl Redisson {
    fn jar() -> std::path::PathBuf {
        let jar = std::env::var_os("REDISSON_DRIVER_JAR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../interop/redisson/target/redisson-driver.jar")
            });
        assert!(
            jar.is_file(),
            "the Redisson driver {} is missing: run scripts/test, which installs a JDK and Maven \
             and builds it (or `mvn -f interop/redisson/pom.xml package`)",
            jar.display()
        );
        jar
    }

    /// Starts a peer whose Redisson has `lockWatchdogTimeout` = `watchdog_ms`, and waits for it.
    fn start(server: &Site, watchdog_ms: u64) -> Redisson {
        // The client compiler alone and the serial collector: a peer lives for one test, so
        // start-up matters more than peak speed.
        let mut child = Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar"])
            .arg(Self::jar())
            .args(["--redis", &server.url])
            .args(["--watchdog-ms", &watchdog_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start java (scripts/test installs a JDK when it is missing)");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut ready = String::new();
        stdout.read_line(&mut ready).unwrap();
        let id = ready
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("the Redisson driver said {ready:?}, not `ready <id>`"))
            .trim()
            .to_owned();
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>> = Arc::default();
        let replies = Arc::clone(&pending);
        // Replies come in the order commands finish, each under its tag; a reader thread hands
        // each to whoever waits for it. At the end of the output, waiting callers see a closed
        // channel.
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let (tag, outcome) = line.split_once(' ').unwrap_or((&line, ""));
                let waiter = tag
                    .parse::<u64>()
                    .ok()
                    .and_then(|tag| replies.lock().unwrap().remove(&tag));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(outcome.to_owned());
                    }
                    None if tag == "quit" => {}
                    None => eprintln!("the Redisson driver said, untagged: {line}"),
                }
            }
            replies.lock().unwrap().clear();
        });
        Redisson {
            child,
            stdin: Mutex::new(stdin),
            pending,
            next_tag: AtomicU64::new(0),
            id,
        }
    }

    /// Sends `command` to run on `holder`'s thread; the reply comes when it is done.
    fn send(&self, holder: &str, command: &str) -> impl Future<Output = Reply> + use<> {
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(tag, tx);
        writeln!(self.stdin.lock().unwrap(), "{tag} {holder} {command}")
            .expect("write to the Redisson driver");
        let command = format!("{holder} {command}");
        async move {
            match tokio::time::timeout(REPLY_BOUND, rx).await {
                Ok(Ok(outcome)) => Reply(outcome),
                Ok(Err(_)) => panic!("the Redisson driver exited before answering {command:?}"),
                Err(_) => panic!("no answer from Redisson to {command:?} in {REPLY_BOUND:?}"),
            }
        }
    }

    /// Runs `command` on `holder` and returns the value of its `ok`.
    async fn ok(&self, holder: &str, command: &str) -> String {
        self.send(holder, command).await.ok()
    }

    /// Runs `command` on `holder`, which must fail, and returns the exception's class.
    async fn err(&self, holder: &str, command: &str) -> String {
        self.send(holder, command).await.err()
    }

    /// The hash field that `holder` writes: `<client id>:<thread id>`.
    async fn owner(&self, holder: &str) -> String {
        self.ok(holder, "owner").await
    }
}

impl Drop for Redisson {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin.lock().unwrap(), "quit - quit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn a_redisson_holder_blocks_our_try_lock_and_ours_blocks_theirs(server: &Site) {
    let name = unique("blocks");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    java.ok("a", &format!("lock {name}")).await;
    // Redisson's hold is the hash field `<client id>:<thread id>` = 1, as ours would be.
    let java_owner = java.owner("a").await;
    assert!(java_owner.starts_with(&format!("{}:", java.id)));
    assert_eq!(hash_fields(&mut conn, &name).await, vec![java_owner]);
    let blocked = ours
        .try_lock(&name, Duration::from_millis(300), None)
        .await
        .unwrap();
    assert!(blocked.is_none(), "our try_lock took a lock Redisson holds");
    assert!(ours.is_locked(&name).await.unwrap());

    java.ok("a", &format!("unlock {name}")).await;
    let guard = ours
        .try_lock(&name, Duration::from_millis(300), None)
        .await
        .unwrap()
        .expect("Redisson's unlock freed the lock for us");
    let our_owner = format!("{}:{}", ours.client_id(), guard.owner().id());
    assert_eq!(hash_fields(&mut conn, &name).await, vec![our_owner]);
    assert_eq!(java.ok("a", &format!("trylock {name} 300")).await, "false");
    assert_eq!(java.ok("b", &format!("trylock {name} 0")).await, "false");
    assert_eq!(java.ok("b", &format!("locked {name}")).await, "true");
    assert_eq!(java.ok("b", &format!("heldbyme {name}")).await, "false");

    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(java.ok("b", &format!("trylock {name} 0")).await, "true");
    java.ok("b", &format!("unlock {name}")).await;
    assert_eq!(java.ok("b", &format!("locked {name}")).await, "false");
}

/// Parks Redisson's holder `a` in `lock name` until it sleeps on the unlock channel, runs
/// `release` and returns how long from then until Redisson held the lock.
async fn java_woken_by(
    java: &Redisson,
    conn: &mut redis::aio::MultiplexedConnection,
    name: &str,
    release: impl AsyncFnOnce(),
) -> Duration {
    let waiter = java.send("a", &format!("lock {name}"));
    await_subscriber(conn, &channel(name)).await;
    let released_at = Instant::now();
    release().await;
    waiter.await.ok();
    let latency = released_at.elapsed();
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    assert_eq!(java.ok("a", &format!("holdcount {name}")).await, "1");
    latency
}

/// Parks our `lock(name)` until it sleeps on the unlock channel, runs `release` and returns the
/// grant and how long from then until it came.
async fn rust_woken_by(
    ours: &LockClient,
    conn: &mut redis::aio::MultiplexedConnection,
    name: &str,
    release: impl AsyncFnOnce(),
) -> (lock_core::LockGuard, Duration) {
    let (client, waiter_name) = (ours.clone(), name.to_owned());
    let waiter = tokio::spawn(async move {
        let guard = client.lock(&waiter_name).await;
        (guard, Instant::now())
    });
    await_subscriber(conn, &channel(name)).await;
    let released_at = Instant::now();
    release().await;
    let (guard, granted_at) = tokio::time::timeout(REPLY_BOUND, waiter)
        .await
        .expect("our waiter was woken")
        .unwrap();
    let latency = granted_at - released_at;
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    (guard.unwrap(), latency)
}

async fn an_unlock_on_one_side_wakes_a_waiter_on_the_other_by_pubsub(server: &Site) {
    let name = unique("wake");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Ours holds for a minute; Redisson's waiter would sleep out the lease without the message.
    let guard = ours.lock_with_lease(&name, LONG_LEASE).await.unwrap();
    let rust_to_java = java_woken_by(&java, &mut conn, &name, async || {
        assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    })
    .await;

    // And back: Redisson holds with a minute's lease, ours waits in rounds of a minute.
    java.ok("a", &format!("unlock {name}")).await;
    java.ok("a", &format!("lock {name} 60000")).await;
    let (guard, java_to_rust) = rust_woken_by(&ours, &mut conn, &name, async || {
        java.ok("a", &format!("unlock {name}")).await;
    })
    .await;
    println!(
        "wake-up latency by pub/sub on {}, from the unlock call to the waiter's grant: Rust \
         unlock -> Redisson waiter {rust_to_java:?}, Redisson unlock -> Rust waiter \
         {java_to_rust:?}",
        server.name
    );
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
}

async fn reentrancy_stays_per_owner_across_languages(server: &Site) {
    let name = unique("reentry");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Redisson's holder counts two holds; a second Java thread and our owner hold none and cannot
    // take or release them.
    java.ok("a", &format!("lock {name}")).await;
    java.ok("a", &format!("lock {name}")).await;
    assert_eq!(java.ok("a", &format!("holdcount {name}")).await, "2");
    assert_eq!(java.ok("b", &format!("holdcount {name}")).await, "0");
    let owner = ours.new_owner().await.unwrap();
    assert_eq!(owner.hold_count(&name).await.unwrap(), 0);
    assert!(refused(owner.try_lock(&name, Duration::ZERO, None)).await);
    assert_eq!(
        java.err("b", &format!("unlock {name}")).await,
        "IllegalMonitorStateException"
    );
    java.ok("a", &format!("unlock {name}")).await;
    assert_eq!(java.ok("a", &format!("holdcount {name}")).await, "1");
    assert!(refused(owner.try_lock(&name, Duration::ZERO, None)).await);
    java.ok("a", &format!("unlock {name}")).await;

    // Ours counts two holds; Redisson's threads hold none and cannot release them.
    let first = owner.lock(&name).await.unwrap();
    let second = owner.lock(&name).await.unwrap();
    assert_eq!(owner.hold_count(&name).await.unwrap(), 2);
    let field = format!("{}:{}", ours.client_id(), owner.id());
    let count: u64 = redis::cmd("HGET")
        .arg(&name)
        .arg(&field)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(count, 2, "our reentry is counted in our owner's field");
    assert_eq!(java.ok("a", &format!("holdcount {name}")).await, "0");
    assert_eq!(java.ok("a", &format!("trylock {name} 0")).await, "false");
    assert_eq!(
        java.err("a", &format!("unlock {name}")).await,
        "IllegalMonitorStateException"
    );
    assert_eq!(owner.hold_count(&name).await.unwrap(), 2);
    assert_eq!(second.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    assert_eq!(java.ok("a", &format!("trylock {name} 0")).await, "false");
    assert_eq!(first.unlock().await.unwrap(), UnlockOutcome::Released);

    // A hold of ours that ran out, now Redisson's: our unlock is refused and leaves it alone.
    let short = ours
        .lock_with_lease(&name, Duration::from_millis(300))
        .await
        .unwrap();
    java.ok("a", &format!("lock {name}")).await;
    let err = short.unlock().await.unwrap_err();
    assert!(matches!(err, LockError::NotLocked { .. }), "{err}");
    assert_eq!(java.ok("a", &format!("holdcount {name}")).await, "1");
    java.ok("a", &format!("unlock {name}")).await;
}

async fn watchdog_renewals_from_either_side_keep_a_lock_alive(server: &Site) {
    let java_held = unique("watchdog-java");
    let rust_held = unique("watchdog-rust");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    java.ok("a", &format!("lock {java_held}")).await;
    let guard = ours.lock(&rust_held).await.unwrap();
    // Ten seconds, more than three leases of 3 s: only renewals keep either key alive, and
    // neither side gets the other's lock meanwhile.
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        for name in [&java_held, &rust_held] {
            let ttl: i64 = redis::cmd("PTTL")
                .arg(name)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(ttl > 0 && ttl <= WATCHDOG_MS as i64, "{name}: PTTL {ttl}");
        }
        assert!(refused(ours.try_lock(&java_held, Duration::ZERO, None)).await);
        assert_eq!(
            java.ok("b", &format!("trylock {rust_held} 0")).await,
            "false"
        );
    }
    assert!(guard.is_valid());
    assert_eq!(java.ok("a", &format!("holdcount {java_held}")).await, "1");
    java.ok("a", &format!("unlock {java_held}")).await;
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert!(!ours.is_locked(&java_held).await.unwrap());
    assert!(!ours.is_locked(&rust_held).await.unwrap());
}

async fn force_unlock_from_either_side_releases_and_wakes_the_other(server: &Site) {
    let name = unique("force");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let admin = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Ours holds; Redisson's waiter sleeps on the message; our force unlock from another client
    // deletes the lock and wakes it.
    let guard = ours.lock_with_lease(&name, LONG_LEASE).await.unwrap();
    let rust_to_java = java_woken_by(&java, &mut conn, &name, async || {
        assert!(admin.force_unlock(&name).await.unwrap());
    })
    .await;
    // Our holder learns the lock is gone only at its unlock.
    let err = guard.unlock().await.unwrap_err();
    assert!(matches!(err, LockError::NotLocked { .. }), "{err}");

    // Redisson holds; our waiter sleeps on the message; Redisson's force unlock from another
    // thread deletes the lock and wakes it.
    java.ok("a", &format!("unlock {name}")).await;
    java.ok("a", &format!("lock {name} 60000")).await;
    let (guard, java_to_rust) = rust_woken_by(&ours, &mut conn, &name, async || {
        let forced = java.ok("b", &format!("forceunlock {name}")).await;
        assert_eq!(forced, "true");
    })
    .await;
    println!(
        "wake-up latency after a force unlock on {}: Rust force_unlock -> Redisson waiter \
         {rust_to_java:?}, Redisson forceUnlock -> Rust waiter {java_to_rust:?}",
        server.name
    );
    assert_eq!(
        java.err("a", &format!("unlock {name}")).await,
        "IllegalMonitorStateException"
    );
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(java.ok("b", &format!("forceunlock {name}")).await, "false");
    assert!(!admin.force_unlock(&name).await.unwrap());
}

async fn fencing_tokens_from_both_sides_draw_from_one_counter(server: &Site) {
    let name = unique("fenced");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Before any acquire Redisson reads the missing counter as 0.
    assert_eq!(java.ok("a", &format!("fenced token {name}")).await, "0");
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let token: u64 = java
            .ok("a", &format!("fenced lock {name}"))
            .await
            .parse()
            .unwrap();
        tokens.push(token);
        // Redisson's fenced hold blocks our fenced acquire like any hold.
        assert!(
            ours.try_lock_fenced(&name, Duration::ZERO, None)
                .await
                .unwrap()
                .is_none()
        );
        java.ok("a", &format!("fenced unlock {name}")).await;
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        let (guard, token) = ours.lock_fenced(&name).await.unwrap();
        // Ours raises the counter to the server's clock in microseconds when it is below it.
        assert!(token >= secs * 1_000_000 + micros, "{token}");
        tokens.push(token);
        assert_eq!(
            java.ok("b", &format!("fenced trylock {name} 0")).await,
            "none"
        );
        assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    }
    // One counter, in grant order: Redisson's INCR starts the missing counter at 1 and counts up
    // from whatever our grants left in it.
    assert_eq!(tokens[0], 1, "{tokens:?}");
    for java_grant in [2, 4] {
        assert_eq!(tokens[java_grant], tokens[java_grant - 1] + 1, "{tokens:?}");
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    assert_eq!(
        java.ok("b", &format!("fenced token {name}")).await,
        tokens[5].to_string()
    );
    // The counter never expires (Redisson's rule); this test's is removed by hand.
    let _: () = redis::cmd("DEL")
        .arg(format!("redisson_lock_token:{{{name}}}"))
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// Whether an acquire that does not wait came back empty-handed: the lock is held by another.
async fn refused(
    acquire: impl Future<Output = Result<Option<lock_core::LockGuard>, LockError>>,
) -> bool {
    acquire.await.unwrap().is_none()
}

/// Polls `probe` until it holds: the state a blocked Java command leaves on the server.
async fn await_state(
    conn: &mut redis::aio::MultiplexedConnection,
    what: &str,
    mut probe: impl AsyncFnMut(&mut redis::aio::MultiplexedConnection) -> bool,
) {
    let deadline = Instant::now() + REPLY_BOUND;
    while !probe(conn).await {
        assert!(Instant::now() < deadline, "never saw {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The driver's fair, read-write and multi-lock commands reach the Redisson objects they name,
/// with Redisson's keys: the ground the Rust side of those locks will be tested on.
async fn the_driver_scripts_redissons_fair_read_write_and_multi_locks(server: &Site) {
    let fair = unique("fair");
    let rw = unique("rw");
    let (m1, m2) = (unique("multi-1"), unique("multi-2"));
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Fair: a waiter queues under its owner in `redisson_lock_queue:{name}` and is served next.
    java.ok("a", &format!("fair lock {fair}")).await;
    // A holder's commands run in order: ask its owner before it blocks.
    let b_owner = java.owner("b").await;
    let queued = java.send("b", &format!("fair trylock {fair} 60000"));
    let queue = format!("redisson_lock_queue:{{{fair}}}");
    await_state(&mut conn, "a fair waiter queued", async |conn| {
        let waiters: Vec<String> = redis::cmd("LRANGE")
            .arg(&queue)
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .unwrap();
        waiters == [b_owner.clone()]
    })
    .await;
    java.ok("a", &format!("fair unlock {fair}")).await;
    assert_eq!(queued.await.ok(), "true");
    assert_eq!(hash_fields(&mut conn, &fair).await, vec![b_owner.clone()]);
    java.ok("b", &format!("fair unlock {fair}")).await;

    // Read-write: two readers share (`mode` = read), a writer waits for both, then re-enters as a
    // reader (a downgrade) under its `:write` field.
    java.ok("a", &format!("read lock {rw}")).await;
    java.ok("b", &format!("read lock {rw}")).await;
    let mode = async |conn: &mut redis::aio::MultiplexedConnection| -> Option<String> {
        redis::cmd("HGET")
            .arg(&rw)
            .arg("mode")
            .query_async(conn)
            .await
            .unwrap()
    };
    assert_eq!(mode(&mut conn).await.as_deref(), Some("read"));
    assert_eq!(
        java.ok("c", &format!("write trylock {rw} 0")).await,
        "false"
    );
    let writer = java.send("c", &format!("write lock {rw}"));
    java.ok("a", &format!("read unlock {rw}")).await;
    java.ok("b", &format!("read unlock {rw}")).await;
    writer.await.ok();
    let c_owner = java.owner("c").await;
    assert_eq!(mode(&mut conn).await.as_deref(), Some("write"));
    assert_eq!(
        hash_fields(&mut conn, &rw).await,
        vec![format!("{c_owner}:write"), "mode".to_owned()]
    );
    java.ok("c", &format!("read lock {rw}")).await;
    java.ok("c", &format!("write unlock {rw}")).await;
    assert_eq!(mode(&mut conn).await.as_deref(), Some("read"));
    java.ok("c", &format!("read unlock {rw}")).await;
    assert_eq!(mode(&mut conn).await, None);

    // Multi: all of the locks under one owner, which also keeps our plain lock out.
    let both = format!("{m1},{m2}");
    java.ok("a", &format!("multi lock {both}")).await;
    let a_owner = java.owner("a").await;
    assert_eq!(hash_fields(&mut conn, &m1).await, vec![a_owner.clone()]);
    assert_eq!(hash_fields(&mut conn, &m2).await, vec![a_owner]);
    assert!(refused(ours.try_lock(&m2, Duration::ZERO, None)).await);
    assert_eq!(
        java.ok("b", &format!("multi trylock {both} 0")).await,
        "false"
    );
    java.ok("a", &format!("multi unlock {both}")).await;
    assert!(!ours.is_locked(&m1).await.unwrap());
    assert!(!ours.is_locked(&m2).await.unwrap());
}

/// Our multi-lock and Redisson's exclude each other on overlapping names, give back what they took
/// when one lock stays held, and a release on one side wakes a multi-lock waiting on the other.
async fn our_multi_lock_and_redissons_exclude_each_other(server: &Site) {
    let (m1, m2, m3) = (unique("mix-1"), unique("mix-2"), unique("mix-3"));
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Redisson holds m1 and m2: ours over m3 and m2 asks for m2 first (name order), is refused
    // it, and leaves m3 free.
    java.ok("a", &format!("multi lock {m1},{m2}")).await;
    let overlapping = ours.multi_lock([m3.as_str(), m2.as_str()]);
    assert!(
        overlapping
            .try_lock(Duration::from_millis(300), None)
            .await
            .unwrap()
            .is_none()
    );
    assert!(!ours.is_locked(&m3).await.unwrap());

    // Ours waits for both; Redisson's multi unlock wakes it by the unlock messages.
    let both = ours.multi_lock([m1.as_str(), m2.as_str()]);
    let waiter = tokio::spawn({
        let both = both.clone();
        async move {
            let guard = both.try_lock(LONG_LEASE, None).await;
            (guard, Instant::now())
        }
    });
    await_subscriber(&mut conn, &channel(&m1)).await;
    let released_at = Instant::now();
    java.ok("a", &format!("multi unlock {m1},{m2}")).await;
    let (guard, granted_at) = tokio::time::timeout(REPLY_BOUND, waiter)
        .await
        .expect("our multi-lock was woken")
        .unwrap();
    let guard = guard.unwrap().expect("both locks, once Redisson let go");
    let latency = granted_at - released_at;
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    println!(
        "wake-up latency on {}: Redisson multi unlock -> our multi-lock granted {latency:?}",
        server.name
    );

    // Ours holds m1 and m2 under one owner; Redisson's multi-lock over m3 and m2 (its list
    // order: m3 first) takes m3, is refused m2, and gives m3 back.
    let field = format!("{}:{}", ours.client_id(), guard.owner().id());
    assert_eq!(hash_fields(&mut conn, &m1).await, vec![field.clone()]);
    assert_eq!(hash_fields(&mut conn, &m2).await, vec![field]);
    assert_eq!(
        java.ok("b", &format!("multi trylock {m3},{m2} 300")).await,
        "false"
    );
    assert_eq!(java.ok("b", &format!("locked {m3}")).await, "false");
    assert_eq!(java.ok("b", &format!("trylock {m1} 0")).await, "false");

    guard.unlock().await.unwrap();
    assert_eq!(
        java.ok("b", &format!("multi trylock {m3},{m2} 0")).await,
        "true"
    );
    java.ok("b", &format!("multi unlock {m3},{m2}")).await;
    for name in [&m1, &m2, &m3] {
        assert!(!ours.is_locked(name).await.unwrap(), "{name}");
    }
}

/// Redisson holds one lock and waits for another that our multi-lock holds while it waits for the
/// first: a cycle, which our `lock()` breaks by giving its grants back at the end of a round.
async fn our_multi_lock_breaks_a_cycle_with_a_redisson_holder_by_its_rounds(server: &Site) {
    let (m1, m2) = (unique("cycle-1"), unique("cycle-2"));
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    java.ok("a", &format!("lock {m2}")).await;
    let multi = ours.multi_lock([m1.as_str(), m2.as_str()]);
    let waiter = tokio::spawn(async move { multi.lock().await });
    await_subscriber(&mut conn, &channel(&m2)).await;
    assert!(
        ours.is_locked(&m1).await.unwrap(),
        "ours holds m1 and waits for m2"
    );
    // Redisson's holder now waits for m1: it gets it when our round of 3 s runs out.
    java.ok("a", &format!("lock {m1}")).await;
    assert_eq!(java.ok("a", &format!("holdcount {m1}")).await, "1");
    java.ok("a", &format!("unlock {m1}")).await;
    java.ok("a", &format!("unlock {m2}")).await;
    let guard = tokio::time::timeout(REPLY_BOUND, waiter)
        .await
        .expect("our multi-lock got both once Redisson let go")
        .unwrap()
        .unwrap();
    let field = format!("{}:{}", ours.client_id(), guard.owner().id());
    assert_eq!(hash_fields(&mut conn, &m1).await, vec![field.clone()]);
    assert_eq!(hash_fields(&mut conn, &m2).await, vec![field]);
    guard.unlock().await.unwrap();
}

/// More of Redisson's own scripts, for the fake's sake: the remaining TTL, a fair waiter that
/// gives up (its acquire-failed script takes it out of the queue and the timeout set), and read
/// holds counted per owner.
async fn redissons_own_scripts_leave_the_same_state_on_either_server(server: &Site) {
    let (plain, fair, rw) = (unique("ttl"), unique("fair-timeout"), unique("rw-count"));
    let java = Redisson::start(server, WATCHDOG_MS);
    let mut conn = raw(server).await;

    java.ok("a", &format!("lock {plain} 60000")).await;
    let ttl: i64 = java
        .ok("b", &format!("remainttl {plain}"))
        .await
        .parse()
        .unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "remainTimeToLive {ttl}");
    java.ok("a", &format!("unlock {plain}")).await;
    assert_eq!(java.ok("b", &format!("remainttl {plain}")).await, "-2");

    java.ok("a", &format!("fair lock {fair}")).await;
    assert_eq!(
        java.ok("b", &format!("fair trylock {fair} 200")).await,
        "false"
    );
    let queue: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("redisson_lock_queue:{{{fair}}}"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(queue.is_empty(), "a waiter that gave up left {queue:?}");
    let timeouts: u64 = redis::cmd("ZCARD")
        .arg(format!("redisson_lock_timeout:{{{fair}}}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(timeouts, 0);
    assert_eq!(java.ok("b", &format!("fair holdcount {fair}")).await, "0");
    java.ok("a", &format!("fair unlock {fair}")).await;
    assert_eq!(java.ok("b", &format!("fair locked {fair}")).await, "false");

    java.ok("a", &format!("read lock {rw}")).await;
    java.ok("a", &format!("read lock {rw}")).await;
    java.ok("b", &format!("read lock {rw}")).await;
    assert_eq!(java.ok("a", &format!("read holdcount {rw}")).await, "2");
    assert_eq!(java.ok("b", &format!("read holdcount {rw}")).await, "1");
    assert_eq!(
        java.ok("c", &format!("write trylock {rw} 0")).await,
        "false"
    );
    for holder in ["a", "a", "b"] {
        java.ok(holder, &format!("read unlock {rw}")).await;
    }
    assert_eq!(java.ok("c", &format!("write locked {rw}")).await, "false");
    let exists: u64 = redis::cmd("EXISTS")
        .arg(&rw)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 0, "the last read unlock deleted the lock");
}

/// The fair lock's queue, as both sides leave it.
async fn fair_queue(conn: &mut redis::aio::MultiplexedConnection, name: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(format!("redisson_lock_queue:{{{name}}}"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap()
}

/// Our fair waiter with `budget`, spawned as `owner`: its guard and when it was granted.
fn our_fair_waiter(
    owner: lock_core::LockOwner,
    name: &str,
    budget: Duration,
) -> tokio::task::JoinHandle<(Option<lock_core::LockGuard>, Instant)> {
    let name = name.to_owned();
    tokio::spawn(async move {
        let guard = owner.acquire(&name).fair().wait(budget).await.unwrap();
        (guard, Instant::now())
    })
}

/// A Redisson `RFairLock` holder blocks our fair acquire, which gives up its place when its
/// budget runs out; our next fair waiter joins Redisson's queue under our owner, and Redisson's
/// unlock wakes it on its own channel.
async fn a_redisson_fair_holder_blocks_our_fair_waiter_and_its_unlock_wakes_it(server: &Site) {
    let name = unique("fair-blocks");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    java.ok("a", &format!("fair lock {name}")).await;
    let blocked = ours
        .acquire(&name)
        .fair()
        .wait(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(
        blocked.is_none(),
        "our fair acquire took Redisson's fair lock"
    );
    // The give-up follows the answer: the place goes a round trip later.
    await_state(&mut conn, "our waiter giving up its place", async |conn| {
        fair_queue(conn, &name).await.is_empty()
    })
    .await;

    let owner = ours.new_owner().await.unwrap();
    let our_field = format!("{}:{}", ours.client_id(), owner.id());
    let waiter = our_fair_waiter(owner, &name, LONG_LEASE);
    await_state(&mut conn, "our fair waiter queued", async |conn| {
        fair_queue(conn, &name).await == [our_field.clone()]
    })
    .await;
    await_subscriber(&mut conn, &format!("{}:{our_field}", channel(&name))).await;
    let released_at = Instant::now();
    java.ok("a", &format!("fair unlock {name}")).await;
    let (guard, granted_at) = tokio::time::timeout(REPLY_BOUND, waiter)
        .await
        .expect("our fair waiter was woken")
        .unwrap();
    let latency = granted_at - released_at;
    println!(
        "{}: Redisson's fair unlock woke our fair waiter in {latency:?}",
        server.name
    );
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    let guard = guard.expect("granted in its turn");
    assert_eq!(hash_fields(&mut conn, &name).await, vec![our_field]);
    assert_eq!(
        java.ok("b", &format!("fair trylock {name} 0")).await,
        "false"
    );
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(
        java.ok("b", &format!("fair trylock {name} 0")).await,
        "true"
    );
    java.ok("b", &format!("fair unlock {name}")).await;
}

/// Java, Rust, Java join one fair lock's queue behind a holder, and are served in that order:
/// each unlock, on either side, wakes exactly the next in line.
async fn a_mixed_fair_queue_java_rust_java_is_served_in_arrival_order(server: &Site) {
    let name = unique("fair-mixed");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    let holder = ours.acquire(&name).fair().await.unwrap();
    let (first, last) = (java.owner("first").await, java.owner("last").await);
    let first_served = java.send("first", &format!("fair trylock {name} 60000"));
    await_state(&mut conn, "Redisson's first waiter queued", async |conn| {
        fair_queue(conn, &name).await.len() == 1
    })
    .await;
    let owner = ours.new_owner().await.unwrap();
    let our_field = format!("{}:{}", ours.client_id(), owner.id());
    let mut ours_served = our_fair_waiter(owner, &name, LONG_LEASE);
    await_state(&mut conn, "our waiter queued", async |conn| {
        fair_queue(conn, &name).await.len() == 2
    })
    .await;
    let last_served = java.send("last", &format!("fair trylock {name} 60000"));
    await_state(&mut conn, "Redisson's last waiter queued", async |conn| {
        fair_queue(conn, &name).await.len() == 3
    })
    .await;
    assert_eq!(
        fair_queue(&mut conn, &name).await,
        vec![first.clone(), our_field.clone(), last.clone()]
    );

    assert_eq!(holder.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(first_served.await.ok(), "true");
    assert_eq!(hash_fields(&mut conn, &name).await, vec![first]);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut ours_served)
            .await
            .is_err(),
        "our waiter passed Redisson's first"
    );
    java.ok("first", &format!("fair unlock {name}")).await;
    let (guard, _) = tokio::time::timeout(REPLY_BOUND, ours_served)
        .await
        .expect("our waiter was served second")
        .unwrap();
    let guard = guard.expect("granted in its turn");
    assert_eq!(hash_fields(&mut conn, &name).await, vec![our_field]);
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(last_served.await.ok(), "true");
    assert_eq!(hash_fields(&mut conn, &name).await, vec![last]);
    java.ok("last", &format!("fair unlock {name}")).await;
    assert!(fair_queue(&mut conn, &name).await.is_empty());
}

/// The read-write lock's channel, on which both sides' releases publish.
fn rw_channel(name: &str) -> String {
    format!("redisson_rwlock:{{{name}}}")
}

/// The read-write lock's `mode`, if it is held.
async fn rw_mode(conn: &mut redis::aio::MultiplexedConnection, name: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(name)
        .arg("mode")
        .query_async(conn)
        .await
        .unwrap()
}

async fn pttl(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query_async(conn).await.unwrap()
}

/// A Redisson reader and ours share the lock under their own fields; a writer on either side is
/// refused while they read, and a writer on either side keeps the other side's readers out.
async fn readers_share_across_languages_and_a_writer_on_either_side_excludes_the_other(
    server: &Site,
) {
    let name = unique("rw-share");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;
    let lock = ours.read_write(&name);

    java.ok("a", &format!("read lock {name}")).await;
    let reading = lock.read().wait(Duration::ZERO).await.unwrap();
    let reading = reading.expect("our reader shares Redisson's read hold");
    let java_owner = java.owner("a").await;
    let our_owner = format!("{}:{}", ours.client_id(), reading.owner().id());
    let mut fields = vec![java_owner, our_owner, "mode".to_owned()];
    fields.sort();
    assert_eq!(hash_fields(&mut conn, &name).await, fields);
    assert_eq!(rw_mode(&mut conn, &name).await.as_deref(), Some("read"));
    assert!(refused(lock.write().wait(Duration::from_millis(300)).into_future()).await);
    assert_eq!(
        java.ok("c", &format!("write trylock {name} 300")).await,
        "false"
    );
    java.ok("a", &format!("read unlock {name}")).await;
    assert_eq!(reading.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(rw_mode(&mut conn, &name).await, None);

    // Our writer keeps Redisson's readers and writers out, and the reverse.
    let writing = lock.write().wait(Duration::ZERO).await.unwrap();
    let writing = writing.expect("the lock is free");
    assert_eq!(rw_mode(&mut conn, &name).await.as_deref(), Some("write"));
    assert_eq!(
        java.ok("a", &format!("read trylock {name} 300")).await,
        "false"
    );
    assert_eq!(
        java.ok("c", &format!("write trylock {name} 0")).await,
        "false"
    );
    assert_eq!(writing.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(
        java.ok("c", &format!("write trylock {name} 0")).await,
        "true"
    );
    assert!(refused(lock.read().wait(Duration::from_millis(300)).into_future()).await);
    assert!(refused(lock.write().wait(Duration::ZERO).into_future()).await);
    java.ok("c", &format!("write unlock {name}")).await;
    assert_eq!(rw_mode(&mut conn, &name).await, None);
}

/// A read unlock on one side wakes a writer waiting on the other (Redisson's `0`, one waiter a
/// client), and a write unlock wakes a reader (its `1`, every waiter), by the shared channel.
async fn a_read_unlock_wakes_a_writer_and_a_write_unlock_a_reader_across_languages(server: &Site) {
    let name = unique("rw-wake");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    // Redisson reads for a minute; our writer would wait out the lease without the message.
    java.ok("a", &format!("read lock {name} {}", LONG_LEASE.as_millis()))
        .await;
    let (client, waiter_name) = (ours.clone(), name.clone());
    let writer = tokio::spawn(async move {
        let guard = client.read_write(&waiter_name).write().await;
        (guard, Instant::now())
    });
    await_subscriber(&mut conn, &rw_channel(&name)).await;
    let released_at = Instant::now();
    java.ok("a", &format!("read unlock {name}")).await;
    let (writing, granted_at) = tokio::time::timeout(REPLY_BOUND, writer)
        .await
        .expect("our writer was woken")
        .unwrap();
    let latency = granted_at - released_at;
    println!(
        "{}: Redisson's read unlock woke our writer in {latency:?}",
        server.name
    );
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    let writing = writing.unwrap();

    // Redisson's reader waits for our write; our write unlock wakes it.
    let reader = java.send("b", &format!("read lock {name}"));
    await_subscriber(&mut conn, &rw_channel(&name)).await;
    let released_at = Instant::now();
    assert_eq!(writing.unlock().await.unwrap(), UnlockOutcome::Released);
    reader.await.ok();
    let latency = released_at.elapsed();
    println!(
        "{}: our write unlock woke Redisson's reader in {latency:?}",
        server.name
    );
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    assert_eq!(rw_mode(&mut conn, &name).await.as_deref(), Some("read"));

    // And the other way round: our reader's unlock wakes Redisson's writer.
    let reading = ours
        .read_write(&name)
        .read()
        .lease(LONG_LEASE)
        .await
        .unwrap();
    java.ok("b", &format!("read unlock {name}")).await;
    let writer = java.send("c", &format!("write lock {name}"));
    await_subscriber(&mut conn, &rw_channel(&name)).await;
    let released_at = Instant::now();
    assert_eq!(reading.unlock().await.unwrap(), UnlockOutcome::Released);
    writer.await.ok();
    let latency = released_at.elapsed();
    println!(
        "{}: our read unlock woke Redisson's writer in {latency:?}",
        server.name
    );
    assert!(
        latency < WAKE_BOUND,
        "{latency:?}: not woken by the message"
    );
    assert_eq!(rw_mode(&mut conn, &name).await.as_deref(), Some("write"));
    java.ok("c", &format!("write unlock {name}")).await;
    assert_eq!(rw_mode(&mut conn, &name).await, None);
}

/// A writer that also reads and then gives up its write leaves the lock in read mode, on either
/// side: the other side's reader comes in, its writer stays out.
async fn a_downgrade_on_one_side_is_seen_by_the_other(server: &Site) {
    let name = unique("rw-downgrade");
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;
    let lock = ours.read_write(&name);

    java.ok("c", &format!("write lock {name}")).await;
    java.ok("c", &format!("read lock {name}")).await;
    assert!(refused(lock.read().wait(Duration::ZERO).into_future()).await);
    java.ok("c", &format!("write unlock {name}")).await;
    assert_eq!(rw_mode(&mut conn, &name).await.as_deref(), Some("read"));
    let reading = lock.read().wait(Duration::ZERO).await.unwrap();
    let reading = reading.expect("Redisson's downgrade lets our reader in");
    assert!(refused(lock.write().wait(Duration::ZERO).into_future()).await);
    java.ok("c", &format!("read unlock {name}")).await;
    assert_eq!(reading.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(rw_mode(&mut conn, &name).await, None);

    let writing = lock.write().await.unwrap();
    let owner = writing.owner();
    let our_reading = lock.read().owner(&owner).await.unwrap();
    assert_eq!(
        java.ok("a", &format!("read trylock {name} 0")).await,
        "false"
    );
    assert_eq!(writing.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(rw_mode(&mut conn, &name).await.as_deref(), Some("read"));
    assert_eq!(
        java.ok("a", &format!("read trylock {name} 0")).await,
        "true"
    );
    assert_eq!(
        java.ok("b", &format!("write trylock {name} 0")).await,
        "false"
    );
    java.ok("a", &format!("read unlock {name}")).await;
    assert_eq!(our_reading.unlock().await.unwrap(), UnlockOutcome::Released);
    assert_eq!(rw_mode(&mut conn, &name).await, None);
}

/// With a 3 s watchdog on both sides, read holds live on for ten seconds: each side's renewals
/// keep its readers' timeout keys and the lock alive, alone or on one lock together.
async fn read_renewals_from_either_side_keep_read_holds_alive(server: &Site) {
    let (java_held, rust_held, both) = (
        unique("rw-renew-java"),
        unique("rw-renew-rust"),
        unique("rw-renew-both"),
    );
    let java = Redisson::start(server, WATCHDOG_MS);
    let ours = client(server, WATCHDOG_MS).await;
    let mut conn = raw(server).await;

    java.ok("a", &format!("read lock {java_held}")).await;
    java.ok("a", &format!("read lock {both}")).await;
    let java_owner = java.owner("a").await;
    let rust_reading = ours.read_write(&rust_held).read().await.unwrap();
    let both_reading = ours.read_write(&both).read().await.unwrap();
    let our_owner = format!("{}:{}", ours.client_id(), both_reading.owner().id());
    let rust_owner = format!("{}:{}", ours.client_id(), rust_reading.owner().id());
    let timeout = |name: &str, owner: &str| format!("{{{name}}}:{owner}:rwlock_timeout:1");
    let watched = [
        java_held.clone(),
        timeout(&java_held, &java_owner),
        rust_held.clone(),
        timeout(&rust_held, &rust_owner),
        both.clone(),
        timeout(&both, &java_owner),
        timeout(&both, &our_owner),
    ];
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        for key in &watched {
            let ttl = pttl(&mut conn, key).await;
            assert!(ttl > 0 && ttl <= WATCHDOG_MS as i64, "{key}: PTTL {ttl}");
        }
        let ours_on_java = ours.read_write(&java_held).write().wait(Duration::ZERO);
        assert!(refused(ours_on_java.into_future()).await);
        assert_eq!(
            java.ok("b", &format!("write trylock {rust_held} 0")).await,
            "false"
        );
    }
    assert!(rust_reading.is_valid() && both_reading.is_valid());
    java.ok("a", &format!("read unlock {java_held}")).await;
    java.ok("a", &format!("read unlock {both}")).await;
    assert_eq!(rw_mode(&mut conn, &both).await.as_deref(), Some("read"));
    assert_eq!(
        both_reading.unlock().await.unwrap(),
        UnlockOutcome::Released
    );
    assert_eq!(
        rust_reading.unlock().await.unwrap(),
        UnlockOutcome::Released
    );
    for name in [&java_held, &rust_held, &both] {
        assert_eq!(rw_mode(&mut conn, name).await, None);
    }
}
