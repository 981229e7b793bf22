//! The real `redis-cli` against the server, started in-process on a free loopback port: a plain
//! command, commands typed on standard input (as in an interactive session, one line each), and
//! `--pipe` mass insertion. `redis-cli` comes with `redis-server` (`scripts/test` installs it).
//! Each run has a generous timeout for a loaded 2-core machine.

use fake_redis::server::{ClockChoice, RunningServer, Server, ServerConfig};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const CLI_TIMEOUT: Duration = Duration::from_secs(60);

async fn start() -> RunningServer {
    Server::start(ServerConfig {
        port: 0,
        clock: ClockChoice::Virtual {
            epoch_ms: fake_redis::DEFAULT_EPOCH_MS,
        },
        ..ServerConfig::default()
    })
    .await
    .expect("a free loopback port")
}

/// Runs `redis-cli -p <port> <args…>` with `stdin`, returns its standard output.
async fn redis_cli(server: &RunningServer, args: &[&str], stdin: &[u8]) -> String {
    let port = server.local_addr().port().to_string();
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-cli is installed (scripts/test installs redis-server, which has it)");
    let mut input = child.stdin.take().expect("piped stdin");
    input.write_all(stdin).await.expect("redis-cli reads stdin");
    drop(input);
    let output = tokio::time::timeout(CLI_TIMEOUT, child.wait_with_output())
        .await
        .expect("redis-cli finishes in time")
        .expect("redis-cli runs");
    assert!(
        output.status.success(),
        "redis-cli {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_runs_a_plain_command() {
    let server = start().await;
    assert_eq!(
        redis_cli(&server, &["SET", "greeting", "hi"], b"").await,
        "OK\n"
    );
    assert_eq!(redis_cli(&server, &["GET", "greeting"], b"").await, "hi\n");
    assert_eq!(
        redis_cli(&server, &["--no-raw", "FAKE.ADVANCE", "1000"], b"").await,
        "(integer) 1704067201000\n"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_runs_commands_typed_one_per_line() {
    let server = start().await;
    let session = b"HSET lock owner 1\nPEXPIRE lock 30000\nFAKE.ADVANCE 30000\nPTTL lock\n\
                    FAKE.ADVANCE 1\nEXISTS lock\nFAKE.FAULT nope\n";
    let out = redis_cli(&server, &[], session).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "1",
            "1",
            "1704067230000",
            "0",
            "1704067230001",
            "0",
            "ERR unknown fault kind 'nope'; the kinds are drop-request, drop-reply, \
             delay-request, delay-reply, drop-delivery, link-down, subscriber-down, pause, \
             crash, restart, failover, clock-jump, client-pause, replica-stall, slot-migration, \
             shard-failover, clear",
            // redis-cli follows an error with an empty line, against a real Redis too.
            "",
        ]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_pipe_mass_inserts_raw_protocol() {
    let server = start().await;
    let mut input = Vec::new();
    for i in 0..1000 {
        let (key, value) = (format!("key:{i}"), format!("value:{i}"));
        input.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            )
            .as_bytes(),
        );
    }
    // Inline requests are protocol too.
    input.extend_from_slice(b"INCR counter\r\n");
    let out = redis_cli(&server, &["--pipe"], &input).await;
    assert!(
        out.contains("errors: 0, replies: 1001"),
        "redis-cli --pipe said: {out}"
    );
    assert_eq!(redis_cli(&server, &["DBSIZE"], b"").await, "1001\n");
    assert_eq!(
        redis_cli(&server, &["GET", "key:999"], b"").await,
        "value:999\n"
    );
    server.stop().await;
}
