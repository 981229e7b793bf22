//! `DEBUG` behind `enable-debug-command`, held to a redis-server 7.0.15 of the test's own:
//! refused by default with Redis's text and not settable at run time; turned on (the server
//! started with `--enable-debug-command yes`, the fake's handle with `debug_command(true)`),
//! each subcommand the fake serves answers as Redis does, signatures (`DIGEST`,
//! `DIGEST-VALUE`) included; `DEBUG SLEEP` moves a virtual clock, and on the wall clock keeps
//! every client waiting until it is over; `SET-ACTIVE-EXPIRE 0` stops background expiry.

use crate::support::OwnServer;
use fake_redis::FakeRedis;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use redis::Value;
use redis::aio::MultiplexedConnection;
use std::time::Duration;

/// Every test here is bounded: a stuck server fails it instead of hanging the suite.
const BOUND: Duration = Duration::from_secs(30);

/// A connection without the client's response timeout: `DEBUG SLEEP` and Redis's
/// `STRINGMATCH-TEST` take longer than it (the test's own bound stands instead).
async fn connect(url: &str) -> MultiplexedConnection {
    let client = redis::Client::open(url).unwrap();
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

/// Runs `args` and returns the reply, an error as its text (`Err` to tell the two apart).
async fn run(con: &mut MultiplexedConnection, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async::<Value>(con).await.map_err(|e| {
        let (code, detail) = (e.code().unwrap_or(""), e.detail().unwrap_or(""));
        format!("{code} {detail}")
    })
}

fn real_with_debug() -> OwnServer {
    OwnServer::start_with(&["--enable-debug-command".to_owned(), "yes".to_owned()])
}

/// `DEBUG OBJECT`'s line without what differs between any two servers (the address, the
/// access clock and its idle seconds).
fn masked(reply: Result<Value, String>) -> Result<Value, String> {
    let Ok(Value::SimpleString(line)) = reply else {
        return reply;
    };
    let kept: Vec<&str> = line
        .split(' ')
        .filter(|w| !w.starts_with("at:") && !w.starts_with("lru"))
        .collect();
    Ok(Value::SimpleString(kept.join(" ")))
}

/// What a session of `DEBUG` calls answers on the server at `url`.
async fn session(url: &str) -> Vec<(String, Result<Value, String>)> {
    let mut con = connect(url).await;
    let setup: &[&[&str]] = &[
        &["FLUSHALL"],
        &["FUNCTION", "FLUSH"],
        &["SET", "foo", "bar"],
        &["SET", "n", "12"],
        &["SET", "t", "v", "EX", "100"],
        &["RPUSH", "l", "a", "b", "c"],
        &["HSET", "h", "a", "1", "b", "2"],
        &["ZADD", "z", "1.5", "a", "2", "b", "1.1", "c"],
        &["ZADD", "big", "0.1", &"x".repeat(100)],
        &["SADD", "s", "1", "2", "x"],
        &["SADD", "ints", "1", "2", "3"],
        &["XADD", "st", "1-1", "f", "v", "g", "w"],
        &["SELECT", "3"],
        &["SET", "other", "db"],
        &["SELECT", "0"],
    ];
    for args in setup {
        run(&mut con, args).await.unwrap();
    }
    let calls: &[&[&str]] = &[
        &["CONFIG", "GET", "enable-debug-command"],
        &["CONFIG", "SET", "enable-debug-command", "no"],
        &["DEBUG"],
        &["DEBUG", "nosuch"],
        &["DEBUG", "jmap"],
        &["DEBUG", "stringmatch-len"],
        &[
            "DEBUG",
            "DIGEST-VALUE",
            "foo",
            "n",
            "t",
            "l",
            "h",
            "z",
            "big",
            "s",
            "ints",
            "st",
            "missing",
        ],
        &["DEBUG", "digest-value"],
        &["DEBUG", "DIGEST"],
        &["DEBUG", "digest", "x"],
        &["DEBUG", "OBJECT", "foo"],
        &["DEBUG", "OBJECT", "n"],
        &["DEBUG", "OBJECT", "l"],
        &["DEBUG", "OBJECT", "h"],
        &["DEBUG", "OBJECT", "z"],
        &["DEBUG", "OBJECT", "missing"],
        &["DEBUG", "LISTPACK", "h"],
        &["DEBUG", "LISTPACK", "l"],
        &["DEBUG", "LISTPACK", "missing"],
        &["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
        &["DEBUG", "SET-ACTIVE-EXPIRE", "1"],
        &["DEBUG", "SET-ACTIVE-EXPIRE"],
        &["DEBUG", "CHANGE-REPL-ID"],
        &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100"],
        &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0"],
        &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "-1"],
        &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "4gb"],
        &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "abc"],
        &[
            "EVAL",
            "return redis.call('debug', 'protocol', 'string')",
            "0",
        ],
        &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"],
        &[
            "EVAL",
            "return redis.call('debug', 'protocol', 'bignum')",
            "0",
        ],
        &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"],
        &["DEBUG", "PROTOCOL", "string"],
        &["DEBUG", "PROTOCOL", "integer"],
        &["DEBUG", "PROTOCOL", "double"],
        &["DEBUG", "PROTOCOL", "bignum"],
        &["DEBUG", "PROTOCOL", "null"],
        &["DEBUG", "PROTOCOL", "array"],
        &["DEBUG", "PROTOCOL", "set"],
        &["DEBUG", "PROTOCOL", "map"],
        &["DEBUG", "PROTOCOL", "attrib"],
        &["DEBUG", "PROTOCOL", "push"],
        &["DEBUG", "PROTOCOL", "true"],
        &["DEBUG", "PROTOCOL", "false"],
        &["DEBUG", "PROTOCOL", "verbatim"],
        &["DEBUG", "PROTOCOL", "nosuch"],
        &["DEBUG", "SLEEP", "0"],
        &["DEBUG", "SLEEP", "abc"],
        &["DEBUG", "SLEEP"],
        &["DEBUG", "RELOAD", "bogus"],
        &["DEBUG", "RELOAD"],
        &["DEBUG", "RELOAD", "NOFLUSH", "MERGE"],
        &["DEBUG", "RELOAD", "NOSAVE"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return 1 end)",
        ],
        &["DEBUG", "RELOAD", "NOFLUSH"],
        &["DEBUG", "RELOAD", "NOFLUSH", "MERGE"],
        &["FCALL", "f", "0"],
        &["FUNCTION", "FLUSH"],
        // The reload kept every key, its value and its TTL.
        &["DEBUG", "DIGEST"],
        &["TTL", "t"],
        &["OBJECT", "ENCODING", "ints"],
        &["OBJECT", "ENCODING", "big"],
        // Last: Redis runs a fuzz test of its glob matcher for seconds.
        &["DEBUG", "STRINGMATCH-TEST"],
    ];
    let mut replies = Vec::new();
    for args in calls {
        let mut reply = run(&mut con, args).await;
        if args.len() > 1 && args[1] == "OBJECT" {
            reply = masked(reply);
        }
        replies.push((args.join(" "), reply));
    }
    replies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_subcommand_answers_as_redis_does() {
    tokio::time::timeout(2 * BOUND, async {
        let real = real_with_debug();
        let on_redis = session(&format!("redis://127.0.0.1:{}/", real.port)).await;
        let fake = FakeRedis::builder().debug_command(true).start().await;
        let on_fake = session(&fake.url()).await;
        for (redis, fake) in on_redis.iter().zip(&on_fake) {
            assert_eq!(fake, redis, "the fake's reply, then Redis's");
        }
        assert_eq!(on_fake.len(), on_redis.len());
    })
    .await
    .expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_is_refused_by_default_before_authentication() {
    tokio::time::timeout(BOUND, async {
        let mut answers = Vec::new();
        let real = OwnServer::start_with(&["--requirepass".to_owned(), "pw".to_owned()]);
        let fake = FakeRedis::builder().password("pw").start().await;
        for url in [format!("redis://127.0.0.1:{}/", real.port), fake.url()] {
            let client = redis::Client::open(url).unwrap();
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            let mut got = Vec::new();
            for args in [
                &["DEBUG", "SLEEP", "0"][..],
                &["AUTH", "pw"],
                &["DEBUG", "DIGEST"],
                &["CONFIG", "GET", "enable-debug-command"],
                &["CONFIG", "SET", "enable-debug-command", "yes"],
            ] {
                got.push(run(&mut con, args).await);
            }
            answers.push(got);
        }
        assert_eq!(answers[1], answers[0], "the fake's replies, then Redis's");
        assert!(
            matches!(&answers[0][0], Err(e) if e.starts_with("ERR DEBUG command not allowed.")),
            "{:?}",
            answers[0][0]
        );
    })
    .await
    .expect("the session ends");
}

/// Sets `k` to expire in 100 ms with active expiry off, sleeps past it with `DEBUG SLEEP`, and
/// returns `DBSIZE` (the expired key still counted, as nobody touched it); then turns active
/// expiry back on and returns the `DBSIZE` it reaches within 5 s (polled every 50 ms).
async fn active_expire_switch(con: &mut MultiplexedConnection) -> (Value, Value) {
    for args in [
        &["FLUSHALL"][..],
        &["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
        &["SET", "k", "v", "PX", "100"],
        &["DEBUG", "SLEEP", "0.3"],
    ] {
        run(con, args).await.unwrap();
    }
    let held = run(con, &["DBSIZE"]).await.unwrap();
    run(con, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"])
        .await
        .unwrap();
    let mut last = Value::Nil;
    for _ in 0..100 {
        // On a virtual clock, time moves only so.
        run(con, &["DEBUG", "SLEEP", "0.05"]).await.unwrap();
        last = run(con, &["DBSIZE"]).await.unwrap();
        if last == Value::Int(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (held, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_active_expire_stops_background_expiry() {
    tokio::time::timeout(BOUND, async {
        let real = real_with_debug();
        let mut con = connect(&format!("redis://127.0.0.1:{}/", real.port)).await;
        let on_redis = active_expire_switch(&mut con).await;
        let fake = FakeRedis::builder().debug_command(true).start().await;
        let mut con = connect(&fake.url()).await;
        let on_fake = active_expire_switch(&mut con).await;
        assert_eq!(on_redis, (Value::Int(1), Value::Int(0)));
        assert_eq!(on_fake, on_redis);
    })
    .await
    .expect("the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_sleep_moves_the_virtual_clock() {
    tokio::time::timeout(BOUND, async {
        let fake = FakeRedis::builder().debug_command(true).start().await;
        let before = fake.now();
        let mut con = connect(&fake.url()).await;
        run(&mut con, &["DEBUG", "SLEEP", "2.5"]).await.unwrap();
        let slept = fake.now().duration_since(before).unwrap();
        assert_eq!(slept, Duration::from_millis(2500));
    })
    .await
    .expect("the session ends");
}

/// The server's time, in ms, from `TIME`.
async fn time_ms(con: &mut MultiplexedConnection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(con).await.unwrap();
    secs * 1000 + micros / 1000
}

/// One client sleeps 500 ms with `DEBUG SLEEP` while another reads `TIME` over and over.
/// Returns the sleeper's `TIME` readings before and after its sleep (separate round trips: Redis
/// reads its clock once per batch of requests) and the other's readings.
async fn sleep_beside_a_reader(url: &str) -> ((i64, i64), Vec<i64>) {
    let mut sleeper = connect(url).await;
    let mut reader = connect(url).await;
    let reading = tokio::spawn(async move {
        let mut seen = Vec::new();
        for _ in 0..40 {
            seen.push(time_ms(&mut reader).await);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        seen
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = time_ms(&mut sleeper).await;
    run(&mut sleeper, &["DEBUG", "SLEEP", "0.5"]).await.unwrap();
    let end = time_ms(&mut sleeper).await;
    ((start, end), reading.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_sleep_on_the_wall_clock_keeps_every_client_waiting() {
    tokio::time::timeout(BOUND, async {
        let real = real_with_debug();
        let fake = Server::start(ServerConfig {
            port: 0,
            clock: ClockChoice::System,
            enable_debug_command: fake_redis::DebugCommand::Yes,
            ..ServerConfig::default()
        })
        .await
        .unwrap();
        for url in [
            format!("redis://127.0.0.1:{}/", real.port),
            format!("redis://{}/", fake.local_addr()),
        ] {
            let ((start, end), readings) = sleep_beside_a_reader(&url).await;
            assert!(end - start >= 500, "{url}: slept from {start} to {end}");
            // The sleep began at some `s` from `start` to `end - 500`, and whichever it was, it
            // covered the time from `end - 500` to `start + 500` (less a millisecond each side,
            // for a reading in the same batch as the sleep's first or last moment).
            let inside: Vec<i64> = (readings.iter().copied())
                .filter(|&t| t > end - 499 && t < start + 499)
                .collect();
            assert!(inside.is_empty(), "{url}: {inside:?} ran during the sleep");
            assert!(readings.iter().any(|&t| t >= end), "{url}: {readings:?}");
        }
        fake.stop().await;
    })
    .await
    .expect("the session ends");
}
