//! Blocking commands through the TCP server's connections, byte for byte: a blocked connection
//! waits without the engine's lock until another connection's push serves it, `FAKE.ADVANCE`
//! passes its deadline, or it goes away. In-memory pipes on tokio's paused clock, the server's
//! clock virtual: "nothing more came" is a read that times out, decided at once.

use fake_redis::DEFAULT_EPOCH_MS;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

fn server() -> Server {
    Server::new(&ServerConfig {
        clock: ClockChoice::Virtual {
            epoch_ms: DEFAULT_EPOCH_MS,
        },
        ..ServerConfig::default()
    })
}

/// A connection to `server` over a pipe.
fn open(server: &Server) -> DuplexStream {
    let (io, server_side) = tokio::io::duplex(1 << 16);
    let server = server.clone();
    tokio::spawn(async move { server.serve_connection(server_side).await });
    io
}

/// Sends the inline command `line`.
async fn send(io: &mut DuplexStream, line: &str) {
    io.write_all(format!("{line}\r\n").as_bytes())
        .await
        .expect("the pipe is open");
}

/// What the server wrote until it went quiet for a second of paused time.
async fn received(io: &mut DuplexStream) -> String {
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(1), io.read(&mut chunk)).await {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn call(io: &mut DuplexStream, line: &str) -> String {
    send(io, line).await;
    received(io).await
}

#[tokio::test(start_paused = true)]
async fn a_push_serves_a_blocked_connection_and_its_pipeline_runs_after() {
    let server = server();
    let (mut blocked, mut pusher) = (open(&server), open(&server));
    send(&mut blocked, "BLPOP q 0").await;
    send(&mut blocked, "PING").await;
    assert_eq!(received(&mut blocked).await, "", "blocked: nothing comes");
    let info = call(&mut pusher, "INFO clients").await;
    assert!(info.contains("blocked_clients:1\r\n"), "{info}");
    assert_eq!(call(&mut pusher, "RPUSH q job").await, ":1\r\n");
    assert_eq!(
        received(&mut blocked).await,
        "*2\r\n$1\r\nq\r\n$3\r\njob\r\n+PONG\r\n"
    );
    assert_eq!(call(&mut pusher, "LLEN q").await, ":0\r\n");
}

#[tokio::test(start_paused = true)]
async fn fake_advance_passes_a_deadline_and_answers_nil_at_its_time() {
    let server = server();
    let (mut blocked, mut clock) = (open(&server), open(&server));
    call(&mut blocked, "HELLO 3").await;
    send(&mut blocked, "BZPOPMIN z 2.5").await;
    assert_eq!(received(&mut blocked).await, "");
    assert_eq!(
        call(&mut clock, "FAKE.ADVANCE 2499").await,
        format!(":{}\r\n", DEFAULT_EPOCH_MS + 2499)
    );
    assert_eq!(received(&mut blocked).await, "");
    call(&mut clock, "FAKE.ADVANCE 10000").await;
    assert_eq!(received(&mut blocked).await, "_\r\n");
    let info = call(&mut clock, "INFO clients").await;
    assert!(info.contains("blocked_clients:0\r\n"), "{info}");
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_leaves_while_blocked_leaves_nothing_behind() {
    let server = server();
    let (mut blocked, mut other) = (open(&server), open(&server));
    send(&mut blocked, "BRPOPLPUSH q d 0").await;
    assert_eq!(received(&mut blocked).await, "");
    drop(blocked);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let info = call(&mut other, "INFO clients").await;
    assert!(info.contains("blocked_clients:0\r\n"), "{info}");
    assert!(info.contains("connected_clients:1\r\n"), "{info}");
    call(&mut other, "RPUSH q x").await;
    assert_eq!(call(&mut other, "LRANGE q 0 -1").await, "*1\r\n$1\r\nx\r\n");
}

#[tokio::test(start_paused = true)]
async fn client_unblock_answers_the_blocked_connection() {
    let server = server();
    let (mut blocked, mut other) = (open(&server), open(&server));
    let id = call(&mut blocked, "CLIENT ID").await;
    let id = id.trim_start_matches(':').trim_end();
    send(&mut blocked, "BLMPOP 0 1 q LEFT").await;
    assert_eq!(received(&mut blocked).await, "");
    let list = call(&mut other, "CLIENT LIST").await;
    assert!(list.contains("flags=b "), "{list}");
    assert_eq!(
        call(&mut other, &format!("CLIENT UNBLOCK {id} ERROR")).await,
        ":1\r\n"
    );
    assert_eq!(
        received(&mut blocked).await,
        "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );
    assert_eq!(call(&mut blocked, "PING").await, "+PONG\r\n");
}
