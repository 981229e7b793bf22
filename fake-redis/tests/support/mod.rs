//! What the integration tests share. The differential tests (`vs_redis` and `conformance_*`) get
//! one harness: a redis-server of their own on a free loopback port, a connection to it, the fake
//! side, and replies rendered as comparable text (errors by kind, code and detail). Tests that
//! call the fake directly get `argv`, a command from one line of words, and, in `backend`, what
//! the tests of `FakeBackend` on paused time share. `bench` is an engine on a manual clock for the
//! tests of the blocking commands. `drive` checks one connection to the server
//! on any bytes; `binary` runs the server binary; `blocked` plays a blocked command against a
//! second connection's writes; `raw` compares replies byte for byte (the
//! script and function tables); `transcript` compares what several connections receive.

#![allow(dead_code)]

pub mod backend;
pub mod bench;
pub mod binary;
pub mod blocked;
pub mod drive;
pub mod pipe;
pub mod raw;
#[path = "../../../scripts/servers.rs"]
pub mod servers;
pub mod transcript;

use bytes::Bytes;
use fake_redis::{FakeConnection, NodeId, SystemClock, shared};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{RedisError, Value};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A redis-server of our own, killed on drop.
pub struct OwnServer {
    child: Child,
    pub port: u16,
    dir: std::path::PathBuf,
}

impl OwnServer {
    pub fn start() -> OwnServer {
        OwnServer::start_with(&[])
    }

    /// A server started with these extra arguments (`--requirepass pw`), once it answers on its
    /// port as itself.
    ///
    /// The port is one the kernel found free a moment before, so a test running beside this one
    /// can be handed the same port; then one of the two servers cannot bind it and exits, and
    /// both tests would talk to the other. So the server must answer with its own process id, or
    /// it is started again on another port.
    pub fn start_with(extra: &[String]) -> OwnServer {
        OwnServer::start_binary(std::ffi::OsStr::new("redis-server"), extra)
    }

    /// A server of the release the environment variable `variable` names the binary of
    /// (`REDIS_7_4_SERVER`, `VALKEY_SERVER`), with `DEBUG` enabled; None when it is unset.
    pub fn from_env(variable: &str) -> Option<OwnServer> {
        let binary = std::env::var_os(variable)?;
        let debug = ["--enable-debug-command".to_owned(), "yes".to_owned()];
        Some(OwnServer::start_binary(&binary, &debug))
    }

    /// [`OwnServer::start_with`] for the server `binary`.
    pub fn start_binary(binary: &std::ffi::OsStr, extra: &[String]) -> OwnServer {
        for _ in 0..20 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            // A folder of its own: an RDB it writes (`SAVE`, a replica's sync) stays out of the
            // source tree, and no earlier server's RDB is loaded at its start.
            let dir = std::env::temp_dir().join(format!(
                "fake-redis-own-server-{}-{port}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a folder for the server");
            let child = Command::new(binary)
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--dir")
                .arg(&dir)
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("{binary:?} must be installed (for redis-server: Debian's 7.0): {e}")
                });
            let mut server = OwnServer { child, port, dir };
            if server.answers_as_itself() {
                return server;
            }
        }
        panic!("no redis-server of this test's own came up on a free port in 20 tries");
    }

    /// Waits (up to 10 s) until the server answers `INFO server` with its own process id; false
    /// if it exited first (its port was taken) or another process answers there.
    fn answers_as_itself(&mut self) -> bool {
        use std::io::{Read, Write};
        let own = format!("process_id:{}\r\n", self.child.id());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return false;
            }
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                // An inline command; with a password it is refused with NOAUTH (handled below).
                if stream.write_all(b"INFO server\r\n").is_ok() {
                    let mut seen = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut chunk) {
                        if n == 0 {
                            break;
                        }
                        seen.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&seen);
                        if text.contains(&own) {
                            return true;
                        }
                        if (text.contains("process_id:") && text.ends_with("\r\n\r\n"))
                            || text.starts_with('-')
                        {
                            break;
                        }
                    }
                    let text = String::from_utf8_lossy(&seen);
                    if text.starts_with("-NOAUTH") {
                        // Started with a password: the bind succeeded if it is still running.
                        std::thread::sleep(Duration::from_millis(100));
                        return matches!(self.child.try_wait(), Ok(None));
                    }
                    if text.contains("process_id:") {
                        return false;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        false
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub async fn connect_real(port: u16) -> redis::aio::MultiplexedConnection {
    connect_real_with(port, "").await
}

/// A connection speaking RESP3 (`HELLO 3` at connect), as the crate opens it for
/// `?protocol=resp3`.
pub async fn connect_real_resp3(port: u16) -> redis::aio::MultiplexedConnection {
    connect_real_with(port, "?protocol=resp3").await
}

async fn connect_real_with(port: u16, query: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/{query}")).unwrap();
    for _ in 0..100 {
        if let Ok(conn) = client.get_multiplexed_async_connection().await {
            return conn;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server on port {port} did not come up");
}

/// A command's arguments: `cmd` split on white space.
pub fn argv(cmd: &str) -> Vec<Bytes> {
    cmd.split_whitespace()
        .map(|s| Bytes::copy_from_slice(s.as_bytes()))
        .collect()
}

/// The fake side: a `FakeConnection` to a fresh engine on the system clock, running the lock's
/// scripts as their native twins (so the conformance runs hold the twins to Redis too).
pub fn fake_connection() -> FakeConnection {
    FakeConnection::new(shared(lock_core::fake::engine(SystemClock)), NodeId(1))
}

pub fn describe(result: &Result<Value, RedisError>) -> String {
    match result {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!(
            "error kind={:?} code={:?} detail={:?}",
            e.kind(),
            e.code(),
            e.detail()
        ),
    }
}

/// How a command's replies are compared. Only these named comparators exist; everything else is
/// compared exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Byte for byte (the default).
    Exact,
    /// An unordered reply (`SMEMBERS`, `SUNION`/`SINTER`/`SDIFF`, `KEYS`): as a multiset.
    Multiset,
    /// A page of `SCAN` or `SSCAN`: the cursor exactly, the page's elements as a multiset.
    ScanPage,
    /// A page of `HSCAN` or `ZSCAN` over a hash table (a `hashtable` hash, a `skiplist` sorted
    /// set): the cursor exactly, the (field, value) pairs as a multiset. Redis walks that table in
    /// the order of its hash function, whose seed each process draws at random. [`comparator`]
    /// never names it: only the encoding tells, so the caller asks `OBJECT ENCODING` first.
    PairPage,
    /// A random pick (`SPOP`, `SRANDMEMBER`, `RANDOMKEY`, `ZRANDMEMBER`, `HRANDFIELD`): same shape and count, checked for
    /// membership by the caller.
    Random,
}

/// The comparator for a command by its name.
pub fn comparator(name: &str) -> Compare {
    match name.to_ascii_uppercase().as_str() {
        "KEYS" | "SMEMBERS" | "SUNION" | "SINTER" | "SDIFF" => Compare::Multiset,
        "SPOP" | "SRANDMEMBER" | "RANDOMKEY" | "ZRANDMEMBER" | "HRANDFIELD" => Compare::Random,
        "SCAN" | "SSCAN" => Compare::ScanPage,
        _ => Compare::Exact,
    }
}

/// A reply with its top-level array sorted, for multiset comparison.
pub fn sorted(result: Result<Value, RedisError>) -> Result<Value, RedisError> {
    result.map(|v| match v {
        Value::Array(mut items) => {
            items.sort_by_key(|i| format!("{i:?}"));
            Value::Array(items)
        }
        Value::Set(mut items) => {
            items.sort_by_key(|i| format!("{i:?}"));
            Value::Set(items)
        }
        other => other,
    })
}

/// A scan page with its elements sorted, for multiset comparison.
pub fn sorted_page(result: Result<Value, RedisError>) -> Result<Value, RedisError> {
    result.map(|v| match v {
        Value::Array(mut parts) if parts.len() == 2 => {
            let page = sorted(Ok(parts.pop().expect("two parts"))).expect("sorting is infallible");
            parts.push(page);
            Value::Array(parts)
        }
        other => other,
    })
}

/// A page of `HSCAN` or `ZSCAN` with its (field, value) pairs sorted, for multiset comparison.
pub fn sorted_pair_page(result: Result<Value, RedisError>) -> Result<Value, RedisError> {
    result.map(|v| match v {
        Value::Array(mut parts) => {
            if let [_, Value::Array(page)] = parts.as_mut_slice() {
                let mut pairs: Vec<Vec<Value>> = page.chunks(2).map(<[Value]>::to_vec).collect();
                pairs.sort_by_key(|pair| format!("{pair:?}"));
                *page = pairs.concat();
            }
            Value::Array(parts)
        }
        other => other,
    })
}

pub async fn run(conn: &mut impl ConnectionLike, line: &str) -> Result<Value, RedisError> {
    let mut words = line.split_whitespace();
    let mut cmd = redis::cmd(words.next().unwrap());
    for w in words {
        cmd.arg(w);
    }
    let result = cmd.query_async::<Value>(conn).await;
    match comparator(line.split_whitespace().next().unwrap_or("")) {
        Compare::Exact => result,
        Compare::ScanPage => sorted_page(result),
        Compare::PairPage => sorted_pair_page(result),
        Compare::Multiset | Compare::Random => sorted(result),
    }
}

/// Runs `lines` on both sides in order; each line whose replies differ, with both replies. With
/// `FAKE_REDIS_SHOW` set, it also prints every line with the fake's reply.
pub async fn mismatches(
    real: &mut MultiplexedConnection,
    fake: &mut FakeConnection,
    lines: &[&str],
) -> Vec<String> {
    let show = std::env::var("FAKE_REDIS_SHOW").is_ok();
    let mut mismatches = Vec::new();
    for line in lines {
        let want = describe(&run(real, line).await);
        let got = describe(&run(fake, line).await);
        if show {
            eprintln!("{line} => {got}");
        }
        if want != got {
            mismatches.push(format!("{line}\n  redis: {want}\n  fake:  {got}"));
        }
    }
    mismatches
}

/// Fails, listing them all, if there are any mismatches.
#[track_caller]
pub fn assert_no_mismatches(mismatches: &[String]) {
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// A connection to the redis-server on `port` and one to a fresh fake, both in RESP3 (after
/// `HELLO 3`) if `resp3`, else in RESP2.
pub async fn connect_both(port: u16, resp3: bool) -> (MultiplexedConnection, FakeConnection) {
    let real = if resp3 {
        connect_real_resp3(port).await
    } else {
        connect_real(port).await
    };
    let mut fake = fake_connection();
    if resp3 {
        run(&mut fake, "HELLO 3")
            .await
            .expect("the fake speaks RESP3");
    }
    (real, fake)
}

/// Runs `table` on a redis-server of the test's own and on a fresh fake, in RESP2 or (`resp3`,
/// after `HELLO 3` on both) RESP3, and fails listing every line whose replies differ.
pub async fn assert_table_matches_redis(table: &[&str], resp3: bool) {
    let server = OwnServer::start();
    let (mut real, mut fake) = connect_both(server.port, resp3).await;
    assert_no_mismatches(&mismatches(&mut real, &mut fake, table).await);
}

/// Two tests, in RESP2 and in RESP3, each running `table` as [`assert_table_matches_redis`]
/// does: `table_matches_redis!(TABLE, name, name_in_resp3);`.
#[allow(unused_macros)] // not every test binary that includes this module uses it
macro_rules! table_matches_redis {
    ($table:expr, $resp2:ident, $resp3:ident) => {
        #[tokio::test]
        async fn $resp2() {
            $crate::support::assert_table_matches_redis($table, false).await;
        }

        #[tokio::test]
        async fn $resp3() {
            $crate::support::assert_table_matches_redis($table, true).await;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use table_matches_redis;
