//! What a connection can ask of the server about its own stream: `MONITOR`, `CLIENT REPLY`,
//! `CLIENT TRACKING` and its invalidation messages, `CLIENT PAUSE`, and `SHUTDOWN`.
//!
//! The scenarios run on `fake-redis-server` and on a redis-server of the test's own, over
//! several connections at once, and every byte each connection receives must be Redis's
//! (`support/transcript.rs`; a monitor line's time and client address are masked). The
//! pause's timing is checked on the virtual clock, where `FAKE.ADVANCE` ends it.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::Duration;
use support::binary::{PATIENCE, start, wait_for_exit};
use support::transcript::{Step, assert_same, call, close, send};

/// `fake-redis-server`, killed on drop.
struct Fake {
    child: Child,
    port: u16,
}

impl Fake {
    fn start(args: &[&str]) -> Fake {
        let (child, port) = start(args);
        Fake { child, port }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- MONITOR ----

const MONITOR: &[Step] = &[
    call(0, &["MONITOR"]),
    call(1, &["SET", "k", "v\u{1}\"\\ \n\t\u{7}\r é"]),
    call(1, &["GET", "k"]),
    call(1, &["AUTH", "pw"]),
    call(1, &["AUTH", "a", "b", "c"]),
    call(
        1,
        &["HELLO", "2", "SETNAME", "x", "AUTH", "nobody", "wrong"],
    ),
    call(1, &["HELLO", "x", "AUTH", "u", "p"]),
    call(1, &["HELLO", "2", "BAD", "AUTH", "u", "p"]),
    call(
        1,
        &[
            "EVAL",
            "redis.call('select', '2') redis.call('set', 'a', 'b') return redis.call('get', 'a')",
            "0",
        ],
    ),
    call(
        1,
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
    ),
    send(1, &["MULTI"]),
    send(1, &["SET", "q", "1"]),
    send(1, &["SELECT", "3"]),
    send(1, &["GET", "q"]),
    call(1, &["EXEC"]),
    call(1, &["EXEC"]),
    // Administrative commands are never shown; refused ones neither.
    call(1, &["CONFIG", "GET", "maxmemory"]),
    call(1, &["SLOWLOG", "LEN"]),
    call(1, &["CLIENT", "NO-EVICT", "on"]),
    call(1, &["CLIENT", "GETNAME"]),
    call(1, &["NOSUCHCOMMAND", "x"]),
    call(1, &["GET"]),
    call(1, &["BLPOP", "list", "0.01"]),
    // A monitor may not touch the keyspace; a second MONITOR answers nothing.
    call(0, &["GET", "k"]),
    call(0, &["PUBLISH", "ch", "m"]),
    call(0, &["EVAL", "return 1", "0"]),
    call(0, &["MONITOR"]),
    call(0, &["ECHO", "still here"]),
    send(2, &["MULTI"]),
    send(2, &["MONITOR"]),
    call(2, &["EXEC"]),
    call(0, &["RESET"]),
    call(1, &["SET", "after", "reset"]),
    call(0, &["GET", "after"]),
];

#[test]
fn monitor_lines_are_redis_s_in_resp2() {
    let fake = Fake::start(&[]);
    assert_same(fake.port, &[2, 2, 2], MONITOR);
}

#[test]
fn monitor_lines_are_redis_s_in_resp3() {
    let fake = Fake::start(&[]);
    assert_same(fake.port, &[3, 3, 2], MONITOR);
}

// ---- CLIENT REPLY ----

const REPLY: &[Step] = &[
    send(0, &["CLIENT", "REPLY", "OFF"]),
    send(0, &["SET", "a", "1"]),
    send(0, &["GET", "a"]),
    send(0, &["CLIENT", "REPLY", "bogus"]),
    send(0, &["NOSUCHCOMMAND"]),
    call(1, &["SET", "a", "2"]),
    call(0, &["CLIENT", "REPLY", "ON"]),
    send(0, &["CLIENT", "REPLY", "SKIP"]),
    send(0, &["GET", "a"]),
    call(0, &["GET", "a"]),
    send(0, &["CLIENT", "REPLY", "SKIP"]),
    send(0, &["CLIENT", "REPLY", "ON"]),
    call(0, &["GET", "a"]),
    send(0, &["CLIENT", "REPLY", "SKIP"]),
    send(0, &["BLPOP", "list", "0.01"]),
    call(0, &["GET", "a"]),
    call(0, &["CLIENT", "REPLY"]),
];

#[test]
fn client_reply_drops_replies_as_redis_does() {
    assert_same(Fake::start(&[]).port, &[2, 2], REPLY);
    assert_same(Fake::start(&[]).port, &[3, 3], REPLY);
}

/// Pushes go out whatever the mode: subscription confirmations, messages, invalidations.
const REPLY_PUSHES: &[Step] = &[
    call(0, &["CLIENT", "TRACKING", "ON"]),
    call(0, &["GET", "t"]),
    send(0, &["CLIENT", "REPLY", "OFF"]),
    send(0, &["SUBSCRIBE", "ch"]),
    call(1, &["PUBLISH", "ch", "m"]),
    call(1, &["SET", "t", "1"]),
    call(0, &["CLIENT", "REPLY", "ON"]),
];

#[test]
fn pushes_are_sent_while_replies_are_off() {
    let fake = Fake::start(&[]);
    assert_same(fake.port, &[3, 2], REPLY_PUSHES);
}

// ---- CLIENT TRACKING ----

const TRACKING: &[Step] = &[
    call(0, &["CLIENT", "TRACKINGINFO"]),
    call(0, &["CLIENT", "GETREDIR"]),
    call(0, &["CLIENT", "TRACKING", "ON"]),
    call(0, &["CLIENT", "TRACKINGINFO"]),
    call(0, &["CLIENT", "GETREDIR"]),
    call(0, &["GET", "a"]),
    call(0, &["MGET", "b", "c"]),
    call(1, &["SET", "a", "1"]),
    call(1, &["MSET", "b", "1", "c", "2"]),
    call(1, &["SET", "a", "2"]),
    // Its own change: the message follows the reply.
    call(0, &["GET", "a"]),
    call(0, &["SET", "a", "3"]),
    call(0, &["GET", "a"]),
    call(1, &["FLUSHALL"]),
    call(0, &["GET", "x"]),
    call(0, &["FLUSHDB"]),
    // A transaction and a script remember what their commands read.
    send(0, &["MULTI"]),
    send(0, &["GET", "m"]),
    send(0, &["SET", "m", "1"]),
    call(0, &["EXEC"]),
    call(0, &["EVAL", "return redis.call('get', 's')", "0"]),
    call(1, &["SET", "s", "1"]),
    call(0, &["SET", "m", "2"]),
    // OPTIN: only after CLIENT CACHING yes, for the next command.
    call(0, &["CLIENT", "TRACKING", "ON", "OPTIN"]),
    call(0, &["GET", "o"]),
    call(1, &["SET", "o", "1"]),
    call(0, &["CLIENT", "CACHING", "YES"]),
    call(0, &["CLIENT", "TRACKINGINFO"]),
    call(0, &["GET", "o"]),
    call(0, &["GET", "p"]),
    call(1, &["MSET", "o", "2", "p", "2"]),
    call(0, &["CLIENT", "CACHING", "NO"]),
    call(0, &["CLIENT", "TRACKING", "ON", "OPTOUT"]),
    call(0, &["CLIENT", "TRACKING", "OFF"]),
    call(0, &["CLIENT", "CACHING", "YES"]),
    call(0, &["CLIENT", "TRACKING", "ON", "OPTOUT", "NOLOOP"]),
    call(0, &["CLIENT", "CACHING", "NO"]),
    call(0, &["CLIENT", "TRACKINGINFO"]),
    call(0, &["GET", "o"]),
    call(0, &["GET", "p"]),
    call(1, &["MSET", "o", "3", "p", "3"]),
    call(0, &["GET", "p"]),
    call(0, &["SET", "p", "4"]),
    call(0, &["CLIENT", "TRACKING", "OFF"]),
    // BCAST: every key under a prefix, batched per command.
    call(
        0,
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b", "NOLOOP",
        ],
    ),
    call(0, &["CLIENT", "TRACKINGINFO"]),
    call(1, &["SET", "a1", "1"]),
    call(1, &["MSET", "b2", "1", "a2", "2", "c1", "3", "a3", "4"]),
    call(0, &["SET", "a4", "1"]),
    call(0, &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "abc"]),
    call(0, &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c"]),
    call(0, &["CLIENT", "TRACKING", "ON"]),
    call(0, &["CLIENT", "TRACKINGINFO"]),
    call(1, &["SET", "c2", "1"]),
    call(0, &["CLIENT", "TRACKING", "OFF"]),
    // The errors, in Redis's order.
    call(0, &["CLIENT", "TRACKING", "ON", "PREFIX", "a"]),
    call(0, &["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"]),
    call(0, &["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"]),
    call(
        0,
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a",
        ],
    ),
    call(0, &["CLIENT", "TRACKING", "ON", "REDIRECT", "999999"]),
    call(0, &["CLIENT", "TRACKING", "ON", "REDIRECT", "x"]),
    call(
        0,
        &[
            "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID1", "REDIRECT", "$ID1",
        ],
    ),
    call(0, &["CLIENT", "TRACKING", "ON", "BOGUS"]),
    call(0, &["CLIENT", "TRACKING", "MAYBE"]),
    call(0, &["CLIENT", "TRACKING", "ON", "REDIRECT"]),
    call(0, &["CLIENT", "CACHING", "YES"]),
    call(0, &["CLIENT", "CACHING", "MAYBE"]),
    call(0, &["CLIENT", "TRACKING"]),
    call(0, &["CLIENT", "TRACKINGINFO", "x"]),
];

#[test]
fn tracking_invalidates_as_redis_does_in_resp3() {
    let fake = Fake::start(&[]);
    assert_same(fake.port, &[3, 3], TRACKING);
}

/// RESP2: messages only through a redirect to a subscriber, on `__redis__:invalidate`; a
/// redirect that has gone is reported in RESP3 and marked broken.
const REDIRECT: &[Step] = &[
    call(0, &["SUBSCRIBE", "__redis__:invalidate"]),
    call(1, &["CLIENT", "TRACKING", "ON"]),
    call(1, &["GET", "k"]),
    call(2, &["SET", "k", "1"]),
    call(1, &["CLIENT", "TRACKING", "ON", "REDIRECT", "$ID0"]),
    call(1, &["GET", "k"]),
    call(1, &["CLIENT", "GETREDIR"]),
    call(1, &["CLIENT", "TRACKINGINFO"]),
    call(2, &["SET", "k", "2"]),
    call(1, &["GET", "k"]),
    call(2, &["FLUSHALL"]),
    call(2, &["CLIENT", "TRACKING", "ON", "REDIRECT", "$ID3"]),
    call(2, &["GET", "r"]),
    close(3, &["QUIT"]),
    call(1, &["SET", "r", "1"]),
    call(2, &["CLIENT", "TRACKINGINFO"]),
];

#[test]
fn tracking_redirects_as_redis_does() {
    let fake = Fake::start(&[]);
    assert_same(fake.port, &[2, 2, 3, 2], REDIRECT);
}

// ---- CLIENT PAUSE ----

/// A raw connection that can tell "nothing yet" from a reply.
struct Wire(TcpStream);

impl Wire {
    fn connect(port: u16) -> Wire {
        Wire(TcpStream::connect(("127.0.0.1", port)).expect("the fake listens"))
    }

    fn send(&mut self, line: &str) {
        self.0.write_all(format!("{line}\r\n").as_bytes()).unwrap();
    }

    /// What arrives within `wait` (nothing: empty).
    fn within(&mut self, wait: Duration) -> Vec<u8> {
        self.0.set_read_timeout(Some(wait)).unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = self.0.read(&mut chunk) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        got
    }

    /// Exactly `expected`, however long it takes (up to the test's patience).
    #[track_caller]
    fn expect(&mut self, expected: &[u8]) {
        self.0.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut got = vec![0u8; expected.len()];
        self.0.read_exact(&mut got).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected)
        );
    }

    #[track_caller]
    fn call(&mut self, line: &str, expected: &[u8]) {
        self.send(line);
        self.expect(expected);
    }
}

/// Long enough for a reply that is due to arrive on a loaded machine, short enough to wait
/// for one that must not.
const QUIET: Duration = Duration::from_millis(300);

#[test]
fn a_write_pause_holds_writes_until_the_virtual_clock_passes_its_end() {
    let fake = Fake::start(&["--clock", "virtual", "--epoch-ms", "1000000"]);
    let (mut pauser, mut writer, mut reader) = (
        Wire::connect(fake.port),
        Wire::connect(fake.port),
        Wire::connect(fake.port),
    );
    pauser.call("CLIENT PAUSE 1000 WRITE", b"+OK\r\n");
    writer.send("SET k v");
    writer.send("GET k");
    assert_eq!(
        writer.within(QUIET),
        b"",
        "a write waits, and the read behind it"
    );
    // Reads pass, and so does a write pause's own client's read.
    reader.call("GET k", b"$-1\r\n");
    pauser.call("PING", b"+PONG\r\n");
    reader.send("INFO clients");
    let info = String::from_utf8_lossy(&reader.within(QUIET)).into_owned();
    // The held writer counts as blocked, as redis-server 7.0.15 counts it.
    assert!(info.contains("blocked_clients:1\r\n"), "{info}");
    // The pause lasts through its last millisecond.
    reader.call("FAKE.ADVANCE 1000", b":1001000\r\n");
    assert_eq!(writer.within(QUIET), b"");
    reader.call("FAKE.ADVANCE 1", b":1001001\r\n");
    writer.expect(b"+OK\r\n$1\r\nv\r\n");
}

#[test]
fn an_all_pause_holds_even_unpause_and_ends_on_the_clock() {
    let fake = Fake::start(&["--clock", "virtual", "--epoch-ms", "1000000"]);
    let (mut pauser, mut other, mut admin) = (
        Wire::connect(fake.port),
        Wire::connect(fake.port),
        Wire::connect(fake.port),
    );
    pauser.call("CLIENT PAUSE 500", b"+OK\r\n");
    pauser.send("CLIENT UNPAUSE");
    other.send("GET k");
    assert_eq!(pauser.within(QUIET), b"");
    assert_eq!(other.within(QUIET), b"");
    // The admin commands are the server's, not the engine's: they pass.
    admin.call("FAKE.ADVANCE 501", b":1000501\r\n");
    pauser.expect(b"+OK\r\n");
    other.expect(b"$-1\r\n");
}

#[test]
fn a_client_pause_fault_holds_commands_as_client_pause_does() {
    let fake = Fake::start(&["--clock", "virtual", "--epoch-ms", "1000000"]);
    let (mut admin, mut writer, mut reader) = (
        Wire::connect(fake.port),
        Wire::connect(fake.port),
        Wire::connect(fake.port),
    );
    admin.call("FAKE.FAULT CLIENT-PAUSE 500 WRITE IN 100", b"+OK\r\n");
    writer.call("SET before pause", b"+OK\r\n");
    admin.call("FAKE.ADVANCE 100", b":1000100\r\n");
    writer.send("SET during pause");
    assert_eq!(writer.within(QUIET), b"", "held from the fault's time");
    reader.call("GET before", b"$5\r\npause\r\n");
    admin.call("FAKE.ADVANCE 499", b":1000599\r\n");
    assert_eq!(writer.within(QUIET), b"");
    admin.call("FAKE.ADVANCE 1", b":1000600\r\n");
    writer.expect(b"+OK\r\n");
    admin.send("FAKE.EVENTS");
    let events = String::from_utf8_lossy(&admin.within(QUIET)).into_owned();
    assert!(
        events.contains("clients-paused-until 1000600 write"),
        "{events}"
    );
}

#[test]
fn unpause_runs_the_held_commands_in_the_order_they_were_held() {
    let fake = Fake::start(&["--clock", "virtual"]);
    let (mut pauser, mut first, mut second) = (
        Wire::connect(fake.port),
        Wire::connect(fake.port),
        Wire::connect(fake.port),
    );
    pauser.call("CLIENT PAUSE 100000 WRITE", b"+OK\r\n");
    // A longer WRITE pause, then a shorter ALL one: the pause is ALL until the longer end.
    first.send("RPUSH l first");
    assert_eq!(first.within(QUIET), b"");
    second.send("RPUSH l second");
    assert_eq!(second.within(QUIET), b"");
    pauser.call("CLIENT UNPAUSE", b"+OK\r\n");
    first.expect(b":1\r\n");
    second.expect(b":2\r\n");
    pauser.call("CLIENT PAUSE 50 WRITE", b"+OK\r\n");
    pauser.call("CLIENT PAUSE 10 ALL", b"+OK\r\n");
    first.send("GET x");
    assert_eq!(first.within(QUIET), b"");
    second.send("FAKE.ADVANCE 11");
    let _ = second.within(QUIET);
    assert_eq!(first.within(QUIET), b"", "ALL lasts until the later end");
    second.send("FAKE.ADVANCE 40");
    let _ = second.within(QUIET);
    first.expect(b"$-1\r\n");
}

#[test]
fn pause_errors_are_redis_s() {
    let fake = Fake::start(&[]);
    let steps = [
        call(0, &["CLIENT", "PAUSE", "-1"]),
        call(0, &["CLIENT", "PAUSE", "x"]),
        call(0, &["CLIENT", "PAUSE", "1.5"]),
        call(0, &["CLIENT", "PAUSE", "10", "bogus"]),
        call(0, &["CLIENT", "PAUSE", "0", "ALL"]),
        call(0, &["CLIENT", "PAUSE"]),
        call(0, &["CLIENT", "UNPAUSE", "x"]),
        call(0, &["CLIENT", "UNPAUSE"]),
        call(0, &["CLIENT", "UNBLOCK", "$ID0"]),
    ];
    assert_same(fake.port, &[2], &steps);
}

/// On Redis's wall clock: a WRITE pause holds a write and `PUBLISH`, not reads; `UNPAUSE`
/// lets them through in order, their pipelines after them.
const PAUSE: &[Step] = &[
    call(0, &["CLIENT", "PAUSE", "100000", "WRITE"]),
    send(1, &["SET", "x", "1"]),
    send(1, &["GET", "x"]),
    send(2, &["PUBLISH", "ch", "m"]),
    call(3, &["GET", "x"]),
    call(
        3,
        &[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get', 'x')",
            "0",
        ],
    ),
    call(3, &["EVAL_RO", "return 1", "0"]),
    send(3, &["MULTI"]),
    send(3, &["GET", "x"]),
    call(3, &["EXEC"]),
    call(0, &["CLIENT", "UNPAUSE"]),
    call(1, &["GET", "x"]),
    call(2, &["PING"]),
];

#[test]
fn a_write_pause_holds_what_redis_holds() {
    let fake = Fake::start(&[]);
    assert_same(fake.port, &[2, 2, 3, 2], PAUSE);
}

// ---- SHUTDOWN ----

#[test]
fn shutdown_refusals_are_redis_s() {
    let fake = Fake::start(&[]);
    let steps = [
        call(0, &["SHUTDOWN", "ABORT"]),
        call(0, &["SHUTDOWN", "BOGUS"]),
        call(0, &["SHUTDOWN", "SAVE", "NOSAVE"]),
        call(0, &["SHUTDOWN", "ABORT", "NOW"]),
        call(0, &["EVAL", "return redis.pcall('shutdown')", "0"]),
        send(0, &["MULTI"]),
        send(0, &["SHUTDOWN", "NOW"]),
        call(0, &["EXEC"]),
        send(0, &["MULTI"]),
        send(0, &["SAVE"]),
        call(0, &["EXEC"]),
    ];
    assert_same(fake.port, &[2], &steps);
}

#[test]
fn shutdown_closes_every_connection_without_a_reply_and_stops_the_server() {
    let mut fake = Fake::start(&[]);
    let (mut caller, mut monitor, mut idle) = (
        Wire::connect(fake.port),
        Wire::connect(fake.port),
        Wire::connect(fake.port),
    );
    idle.call("PING", b"+PONG\r\n");
    monitor.call("MONITOR", b"+OK\r\n");
    caller.send("SHUTDOWN NOSAVE");
    caller.0.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut rest = Vec::new();
    caller.0.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"", "no reply, then the connection closes");
    for wire in [&mut monitor, &mut idle] {
        wire.0.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut rest = Vec::new();
        wire.0.read_to_end(&mut rest).unwrap();
        assert_eq!(
            rest, b"",
            "SHUTDOWN is shown to no monitor, and every connection closes"
        );
    }
    assert!(wait_for_exit(&mut fake.child).success());
}

// ---- the in-process doors ----

mod in_process {
    use fake_redis::{Engine, FakeConnection, Fault, NodeId, TokioClock, shared};
    use redis::Value;
    use std::time::Duration;

    async fn run(conn: &mut FakeConnection, words: &str) -> redis::RedisResult<Value> {
        let mut cmd = redis::cmd(words.split_whitespace().next().unwrap());
        for w in words.split_whitespace().skip(1) {
            cmd.arg(w);
        }
        cmd.query_async(conn).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_monitor_line_reaches_a_fake_connection_as_a_push() {
        let engine = shared(Engine::new(TokioClock::new()));
        let mut monitor = FakeConnection::new(engine.clone(), NodeId(1));
        let mut worker = FakeConnection::new(engine.clone(), NodeId(2));
        assert_eq!(run(&mut monitor, "MONITOR").await, Ok(Value::Okay));
        run(&mut worker, "SET k v").await.unwrap();
        let Some(Value::SimpleString(line)) = monitor.next_push().await else {
            panic!("a monitor line");
        };
        let now = engine.lock().unwrap().now();
        let id = line
            .split("in-process:")
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap();
        assert_eq!(
            line,
            format!(
                "{}.{:06} [0 in-process:{id}] \"SET\" \"k\" \"v\"",
                now / 1000,
                now % 1000 * 1000
            )
        );
        assert!(monitor.take_pushes().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_the_server_does_not_send_times_the_call_out() {
        let engine = shared(Engine::new(TokioClock::new()));
        let mut conn = FakeConnection::with_response_timeout(
            engine.clone(),
            NodeId(1),
            Duration::from_secs(1),
        );
        let off = run(&mut conn, "CLIENT REPLY OFF").await.unwrap_err();
        assert!(off.is_timeout(), "{off:?}");
        let set = run(&mut conn, "SET k v").await.unwrap_err();
        assert!(set.is_timeout(), "{set:?}");
        assert_eq!(run(&mut conn, "CLIENT REPLY ON").await, Ok(Value::Okay));
        assert_eq!(
            run(&mut conn, "GET k").await,
            Ok(Value::BulkString(b"v".to_vec())),
            "the command ran; only its reply was not sent"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn after_shutdown_the_connection_is_refused_until_a_restart() {
        let engine = shared(Engine::new(TokioClock::new()));
        let mut conn = FakeConnection::with_response_timeout(
            engine.clone(),
            NodeId(1),
            Duration::from_secs(1),
        );
        run(&mut conn, "SET k v").await.unwrap();
        let shutdown = run(&mut conn, "SHUTDOWN").await.unwrap_err();
        assert!(shutdown.is_timeout(), "no reply: {shutdown:?}");
        let refused = run(&mut conn, "GET k").await.unwrap_err();
        assert_eq!(refused.kind(), redis::ErrorKind::Io, "{refused:?}");
        assert!(refused.to_string().contains("shut down"), "{refused}");
        let at = engine.lock().unwrap().clock_now() + 10;
        engine.lock().unwrap().add_fault(Fault::Restart { at });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            run(&mut conn, "GET k").await,
            Ok(Value::Nil),
            "restarted, empty"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_write_waits_on_tokio_s_clock() {
        let engine = shared(Engine::new(TokioClock::new()));
        let mut pauser = FakeConnection::new(engine.clone(), NodeId(1));
        let mut writer = FakeConnection::new(engine.clone(), NodeId(2));
        assert_eq!(
            run(&mut pauser, "CLIENT PAUSE 2000 WRITE").await,
            Ok(Value::Okay)
        );
        let started = tokio::time::Instant::now();
        assert_eq!(run(&mut writer, "SET k v").await, Ok(Value::Okay));
        assert_eq!(started.elapsed(), Duration::from_millis(2001));
        assert_eq!(
            run(&mut pauser, "GET k").await,
            Ok(Value::BulkString(b"v".to_vec()))
        );
    }
}

// ---- invalidation on the engine's clock ----

#[test]
fn expiry_invalidates_a_tracked_key_at_its_time() {
    use bytes::Bytes;
    use fake_redis::{Engine, Frame, ManualClock};
    let clock = ManualClock::new(1_000_000);
    let mut engine = Engine::new(clock.clone());
    let (tracker, writer) = (engine.connect(), engine.connect());
    let run = |engine: &mut Engine, client, line: &str| {
        let argv: Vec<Bytes> = line
            .split_whitespace()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        engine.execute(client, &argv)
    };
    run(&mut engine, tracker, "HELLO 3");
    run(&mut engine, tracker, "CLIENT TRACKING ON");
    run(&mut engine, writer, "SET k v PX 100");
    run(&mut engine, tracker, "GET k");
    assert!(engine.drain_outbox(tracker).is_empty());
    // The cycles run at each 100 ms tick; the key is expired once the clock is past its time.
    clock.advance(250);
    engine.catch_up();
    assert_eq!(
        engine.drain_outbox(tracker),
        [Frame::Push(vec![
            Frame::Bulk(Bytes::from_static(b"invalidate")),
            Frame::Array(vec![Frame::Bulk(Bytes::from_static(b"k"))]),
        ])],
        "the active expiry cycle removed it and said so"
    );
}
