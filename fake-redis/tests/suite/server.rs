//! The TCP server's connection handler, byte for byte: bad input gets Redis 7.0's answer (the
//! expected bytes were read from a real `redis-server` 7.0.15), authentication and its limits,
//! pub/sub pushes, the `FAKE.*` admin commands and the faults they inject.
//!
//! Connections here are in-memory pipes (`tokio::io::duplex`) on tokio's paused clock: "the
//! server wrote nothing more" is a read that times out, which paused time decides at once and
//! deterministically. The server's own clock is virtual (moved only by `FAKE.ADVANCE`) wherever
//! time matters. `maxclients` and the shutdown use real loopback sockets.

use bytes::{Bytes, BytesMut};
use fake_redis::resp::ReplyParser;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use fake_redis::{DEFAULT_EPOCH_MS, Frame, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// A server on the virtual clock.
fn virtual_server() -> Server {
    Server::new(&ServerConfig {
        clock: ClockChoice::Virtual {
            epoch_ms: DEFAULT_EPOCH_MS,
        },
        ..ServerConfig::default()
    })
}

fn server_with_password(password: &'static str) -> Server {
    Server::new(&ServerConfig {
        requirepass: Some(Bytes::from_static(password.as_bytes())),
        ..ServerConfig::default()
    })
}

/// One client connection to `server`, over an in-memory pipe.
struct Client {
    io: DuplexStream,
    parser: ReplyParser,
    buf: BytesMut,
    task: tokio::task::JoinHandle<()>,
}

impl Client {
    fn connect(server: &Server) -> Client {
        let (io, server_side) = tokio::io::duplex(1 << 16);
        let server = server.clone();
        let task = tokio::spawn(async move { server.serve_connection(server_side).await });
        Client {
            io,
            parser: ReplyParser::new(),
            buf: BytesMut::new(),
            task,
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.io.write_all(bytes).await.expect("the pipe is open");
    }

    /// Everything the server writes until it goes quiet (a second of paused time), and whether
    /// it closed the connection.
    async fn read_all(&mut self) -> (Vec<u8>, bool) {
        let mut out = std::mem::take(&mut self.buf).to_vec();
        let mut chunk = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(1), self.io.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
                Ok(Ok(n)) => out.extend_from_slice(&chunk[..n]),
                Err(_) => return (out, false),
            }
        }
    }

    /// Sends `input`, returns what came back and whether the connection closed.
    async fn exchange(&mut self, input: &[u8]) -> (Vec<u8>, bool) {
        self.send(input).await;
        self.read_all().await
    }

    /// The next reply, within a second of paused time.
    async fn reply(&mut self) -> Option<Frame> {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(frame) = self.parser.parse(&mut self.buf).expect("valid RESP") {
                return Some(frame);
            }
            match tokio::time::timeout(Duration::from_secs(1), self.io.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                _ => return None,
            }
        }
    }

    /// Sends one command as a multibulk request and returns its reply.
    async fn call(&mut self, args: &[&str]) -> Frame {
        self.send(&request(args)).await;
        self.reply().await.expect("a reply")
    }
}

fn request(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

fn ok() -> Frame {
    Frame::OK
}

fn err(text: &str) -> Frame {
    Frame::error_owned(text.to_owned())
}

fn bulk(text: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(text.as_bytes()))
}

/// Asserts that `input` on a fresh connection to `server` gets exactly `reply` and that the
/// connection is then `closed` (or still open).
async fn assert_exchange(server: &Server, input: &[u8], reply: &[u8], closed: bool) {
    let mut client = Client::connect(server);
    let (got, got_closed) = client.exchange(input).await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(reply),
        "reply to {:?}",
        String::from_utf8_lossy(input)
    );
    assert_eq!(got_closed, closed, "closed after {input:?}");
}

// ---- bad input gets Redis 7.0's answer ----

#[tokio::test(start_paused = true)]
async fn invalid_bulk_length_is_a_protocol_error_that_closes() {
    let server = virtual_server();
    let reply = b"-ERR Protocol error: invalid bulk length\r\n";
    assert_exchange(&server, b"*1\r\n$foo\r\n", reply, true).await;
    assert_exchange(&server, b"*1\r\n$-5\r\n", reply, true).await;
}

#[tokio::test(start_paused = true)]
async fn invalid_multibulk_length_is_a_protocol_error_that_closes() {
    let server = virtual_server();
    let reply = b"-ERR Protocol error: invalid multibulk length\r\n";
    assert_exchange(&server, b"*foo\r\n", reply, true).await;
}

#[tokio::test(start_paused = true)]
async fn multibulk_count_above_int_max_is_invalid_and_int_max_waits() {
    let server = virtual_server();
    let reply = b"-ERR Protocol error: invalid multibulk length\r\n";
    assert_exchange(&server, b"*2147483648\r\n", reply, true).await;
    // INT_MAX itself is accepted: the server waits for the arguments.
    assert_exchange(&server, b"*2147483647\r\n", b"", false).await;
}

#[tokio::test(start_paused = true)]
async fn bulk_over_512_mb_is_invalid() {
    let server = virtual_server();
    let reply = b"-ERR Protocol error: invalid bulk length\r\n";
    assert_exchange(&server, b"*1\r\n$536870913\r\n", reply, true).await;
    // 512 MiB exactly is allowed: the server waits for the payload.
    assert_exchange(&server, b"*1\r\n$536870912\r\n", b"", false).await;
}

#[tokio::test(start_paused = true)]
async fn unbalanced_quotes_in_an_inline_request_close_the_connection() {
    let server = virtual_server();
    let reply = b"-ERR Protocol error: unbalanced quotes in request\r\n";
    assert_exchange(&server, b"SET \"a b\r\n", reply, true).await;
    assert_exchange(&server, b"SET 'a'b c\r\n", reply, true).await;
}

#[tokio::test(start_paused = true)]
async fn a_multibulk_argument_without_dollar_names_the_byte_found() {
    let server = virtual_server();
    assert_exchange(
        &server,
        b"*1\r\nfoo\r\n",
        b"-ERR Protocol error: expected '$', got 'f'\r\n",
        true,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn replies_to_earlier_requests_come_before_the_protocol_error() {
    let server = virtual_server();
    assert_exchange(
        &server,
        b"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*foo\r\n",
        b"+PONG\r\n+OK\r\n-ERR Protocol error: invalid multibulk length\r\n",
        true,
    )
    .await;
    // What was acknowledged stays applied.
    let engine = server.engine().lock().unwrap();
    assert!(matches!(engine.value(0, b"k"), Some((Value::Str(v), None)) if v == "v"));
}

#[tokio::test(start_paused = true)]
async fn before_auth_more_than_ten_arguments_are_refused() {
    let server = server_with_password("sekret");
    assert_exchange(
        &server,
        b"*11\r\n",
        b"-ERR Protocol error: unauthenticated multibulk length\r\n",
        true,
    )
    .await;
    assert_exchange(&server, b"*10\r\n", b"", false).await;
}

#[tokio::test(start_paused = true)]
async fn before_auth_a_bulk_over_16_kib_is_refused() {
    let server = server_with_password("sekret");
    assert_exchange(
        &server,
        b"*1\r\n$16385\r\n",
        b"-ERR Protocol error: unauthenticated bulk length\r\n",
        true,
    )
    .await;
    assert_exchange(&server, b"*1\r\n$16384\r\n", b"", false).await;
}

#[tokio::test(start_paused = true)]
async fn after_auth_the_unauthenticated_limits_are_lifted() {
    let server = server_with_password("sekret");
    let mut client = Client::connect(&server);
    let (got, closed) = client.exchange(b"AUTH sekret\r\n*11\r\n").await;
    assert_eq!(got, b"+OK\r\n");
    assert!(!closed);
    // ... and RESET puts them back.
    let mut client = Client::connect(&server);
    let (got, closed) = client
        .exchange(b"AUTH sekret\r\nRESET\r\n*1\r\n$16385\r\n")
        .await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        "+OK\r\n+RESET\r\n-ERR Protocol error: unauthenticated bulk length\r\n"
    );
    assert!(closed);
}

#[tokio::test(start_paused = true)]
async fn before_auth_only_auth_hello_quit_and_reset_run() {
    let server = server_with_password("sekret");
    let noauth = b"-NOAUTH Authentication required.\r\n";
    assert_exchange(&server, b"GET x\r\n", noauth, false).await;
    assert_exchange(&server, b"FAKE.TIME\r\n", noauth, false).await;
    // Redis checks the command's existence and arity first.
    assert_exchange(
        &server,
        b"FOO x\r\n",
        b"-ERR unknown command 'FOO', with args beginning with: 'x' \r\n",
        false,
    )
    .await;
    assert_exchange(
        &server,
        b"GET\r\n",
        b"-ERR wrong number of arguments for 'get' command\r\n",
        false,
    )
    .await;
    assert_exchange(&server, b"RESET\r\n", b"+RESET\r\n", false).await;
    assert_exchange(&server, b"QUIT\r\n", b"+OK\r\n", true).await;
    assert_exchange(
        &server,
        b"AUTH wrong\r\n",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
        false,
    )
    .await;
    assert_exchange(
        &server,
        b"AUTH sekret\r\nGET x\r\n",
        b"+OK\r\n$-1\r\n",
        false,
    )
    .await;
    let mut client = Client::connect(&server);
    let reply = client
        .call(&["HELLO", "3", "AUTH", "default", "sekret"])
        .await;
    assert!(matches!(reply, Frame::Map(_)), "{reply:?}");
    assert_eq!(client.call(&["GET", "x"]).await, Frame::Null);
}

#[tokio::test]
async fn over_maxclients_a_connection_is_refused_and_closed() {
    let running = Server::start(ServerConfig {
        port: 0,
        maxclients: 2,
        ..ServerConfig::default()
    })
    .await
    .expect("a free port");
    let addr = running.local_addr();
    let mut first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Both are served.
    for c in [&mut first, &mut second] {
        c.write_all(b"PING\r\n").await.unwrap();
        let mut buf = [0u8; 7];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"+PONG\r\n");
    }
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), third.read_to_end(&mut got))
        .await
        .expect("closed")
        .unwrap();
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    // A slot frees up when a client leaves.
    drop(first);
    let mut fourth = None;
    for _ in 0..200 {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(b"PING\r\n").await.unwrap();
        let mut buf = [0u8; 7];
        if c.read_exact(&mut buf).await.is_ok() && &buf == b"+PONG\r\n" {
            fourth = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(fourth.is_some(), "a slot was freed");
    running.stop().await;
}

// ---- connections ----

#[tokio::test(start_paused = true)]
async fn quit_replies_ok_then_closes() {
    let server = virtual_server();
    assert_exchange(&server, b"QUIT\r\nPING\r\n", b"+OK\r\n", true).await;
    assert_eq!(server.engine().lock().unwrap().client_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn inline_and_pipelined_requests_are_answered_in_order() {
    let server = virtual_server();
    assert_exchange(
        &server,
        b"SET a 1\r\nINCR a\nGET a\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n",
        b"+OK\r\n:2\r\n$1\r\n2\r\n$2\r\nhi\r\n",
        false,
    )
    .await;
}

/// A server-side pipe that counts the writes the server makes on it.
struct CountingWrites {
    io: DuplexStream,
    writes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl tokio::io::AsyncRead for CountingWrites {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for CountingWrites {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let poll = std::pin::Pin::new(&mut self.io).poll_write(cx, buf);
        if poll.is_ready() {
            self.writes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        poll
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A pipeline already waiting in the socket is run and answered in one round and one write,
/// as Redis's 16 KiB reads answer it, even when it is larger than the small first read an idle
/// connection makes (1 KiB): splitting it doubled the round trips of pipelined scripts.
#[tokio::test(start_paused = true)]
async fn a_waiting_pipeline_larger_than_the_first_read_is_answered_in_one_write() {
    let server = virtual_server();
    let (mut io, server_side) = tokio::io::duplex(1 << 16);
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut pipeline = Vec::new();
    for i in 0..16 {
        let key = format!("release:{i:012}");
        pipeline.extend(request(&[
            "EVAL",
            "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end",
            "1",
            &key,
            "token",
        ]));
    }
    assert!(pipeline.len() > 2 * 1024, "{} bytes", pipeline.len());
    io.write_all(&pipeline).await.expect("the pipe is open");
    let counted = CountingWrites {
        io: server_side,
        writes: std::sync::Arc::clone(&writes),
    };
    let task = tokio::spawn({
        let server = server.clone();
        async move { server.serve_connection(counted).await }
    });
    let expected = b":0\r\n".repeat(16);
    let mut got = vec![0; expected.len()];
    io.read_exact(&mut got).await.expect("sixteen replies");
    assert_eq!(got, expected);
    assert_eq!(writes.load(std::sync::atomic::Ordering::Relaxed), 1);
    drop(io);
    task.await.expect("the connection ends cleanly");
}

#[tokio::test(start_paused = true)]
async fn a_request_split_across_writes_is_reassembled() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    let whole = request(&["SET", "key", "value"]);
    for byte in &whole {
        client.send(std::slice::from_ref(byte)).await;
    }
    assert_eq!(client.reply().await, Some(ok()));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_disconnects_mid_request_loses_nothing_acknowledged() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    assert_eq!(client.call(&["SET", "kept", "1"]).await, ok());
    // Half a request, then the client goes away.
    client.send(b"*3\r\n$3\r\nSET\r\n$4\r\nlost").await;
    let Client { io, task, .. } = client;
    drop(io);
    task.await.expect("the connection task ends cleanly");
    let engine = server.engine().lock().unwrap();
    assert!(engine.value(0, b"kept").is_some());
    assert!(engine.value(0, b"lost").is_none());
    assert_eq!(engine.client_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn hello_3_switches_the_encoding_and_reset_switches_it_back() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    client.call(&["HSET", "h", "f", "v"]).await;
    let (flat, _) = client.exchange(b"HGETALL h\r\n").await;
    assert_eq!(flat, b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    let (hello, _) = client.exchange(b"HELLO 3\r\n").await;
    assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
    let (map, _) = client.exchange(b"HGETALL h\r\nGET nope\r\n").await;
    assert_eq!(map, b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n_\r\n");
    let (back, _) = client.exchange(b"RESET\r\nGET nope\r\n").await;
    assert_eq!(back, b"+RESET\r\n$-1\r\n");
}

#[tokio::test(start_paused = true)]
async fn pub_sub_messages_reach_subscribers_as_arrays_or_pushes() {
    let server = virtual_server();
    let mut resp2 = Client::connect(&server);
    let mut resp3 = Client::connect(&server);
    let mut publisher = Client::connect(&server);
    let (confirm, _) = resp2.exchange(b"SUBSCRIBE ch\r\n").await;
    assert_eq!(confirm, b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    resp3.exchange(b"HELLO 3\r\n").await;
    let (confirm, _) = resp3.exchange(b"SUBSCRIBE ch\r\n").await;
    assert_eq!(confirm, b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    assert_eq!(
        publisher.call(&["PUBLISH", "ch", "0"]).await,
        Frame::Integer(2)
    );
    let (message, _) = resp2.read_all().await;
    assert_eq!(message, b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n");
    let (message, _) = resp3.read_all().await;
    assert_eq!(message, b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n");
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_that_never_reads_does_not_block_the_others() {
    let server = virtual_server();
    let mut stuck = Client::connect(&server);
    stuck.exchange(b"SUBSCRIBE ch\r\n").await;
    let mut publisher = Client::connect(&server);
    let payload = "x".repeat(60_000);
    // Far more than the pipe holds: the stuck subscriber's writes block.
    for _ in 0..100 {
        assert_eq!(
            publisher.call(&["PUBLISH", "ch", &payload]).await,
            Frame::Integer(1)
        );
    }
    let mut other = Client::connect(&server);
    assert_eq!(other.call(&["PING"]).await, Frame::Simple("PONG".into()));
    // Past the pub/sub output limit the stuck subscriber is closed, as Redis closes it.
    for _ in 0..600 {
        publisher.call(&["PUBLISH", "ch", &payload]).await;
    }
    let Client { task, .. } = stuck;
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the stuck subscriber was closed")
        .unwrap();
    assert_eq!(
        publisher.call(&["PUBLISH", "ch", "late"]).await,
        Frame::Integer(0)
    );
}

/// `count` GETs of `key` and then `SET marker 1`, pipelined.
fn gets_then_marker(key: &str, count: usize, marker: &str) -> Vec<u8> {
    let mut pipeline = Vec::new();
    for _ in 0..count {
        pipeline.extend(request(&["GET", key]));
    }
    pipeline.extend(request(&["SET", marker, "1"]));
    pipeline
}

/// Whether the client's connection task ends within `within` of paused time.
async fn closed_within(client: Client, within: Duration) -> bool {
    let Client { io, task, .. } = client;
    let closed = tokio::time::timeout(within, task).await.is_ok();
    drop(io);
    closed
}

#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_read_still_has_its_pipeline_run() {
    let server = virtual_server();
    let mut other = Client::connect(&server);
    let mib = "v".repeat(1 << 20);
    assert_eq!(other.call(&["SET", "big", &mib]).await, ok());
    // Twenty replies of 1 MiB wait behind a pipe of 64 KiB that nobody reads, as Redis keeps
    // them in its output buffer (no limit for normal clients by default); the SET behind them
    // runs all the same.
    let mut stuck = Client::connect(&server);
    stuck.send(&gets_then_marker("big", 20, "marker")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(other.call(&["GET", "marker"]).await, bulk("1"));
    assert!(
        !closed_within(stuck, Duration::from_millis(100)).await,
        "normal clients have no output limit by default"
    );
    // The client left: its connection is gone, and what it ran stays.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.connection_count(), 1);
    assert_eq!(other.call(&["GET", "marker"]).await, bulk("1"));
}

#[tokio::test(start_paused = true)]
async fn past_the_normal_hard_limit_the_client_is_closed_and_runs_no_more() {
    let server = virtual_server();
    let mut other = Client::connect(&server);
    assert_eq!(
        other
            .call(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1mb 0 0"
            ])
            .await,
        ok()
    );
    let mib = "v".repeat(1 << 20);
    assert_eq!(other.call(&["SET", "big", &mib]).await, ok());
    let mut stuck = Client::connect(&server);
    stuck.send(&gets_then_marker("big", 4, "marker")).await;
    assert!(closed_within(stuck, Duration::from_secs(5)).await);
    // Redis processes nothing more for a client it closes for its limit.
    assert_eq!(other.call(&["GET", "marker"]).await, Frame::Null);
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_sync_reader_is_held_to_the_replica_class_not_the_normal_one() {
    let server = virtual_server();
    let mut writer = Client::connect(&server);
    let limits = "normal 1mb 0 0 replica 6mb 0 0";
    assert_eq!(
        writer
            .call(&["CONFIG", "SET", "client-output-buffer-limit", limits])
            .await,
        ok()
    );
    let mut reader = Client::connect(&server);
    reader.send(b"SYNC\r\n").await;
    let mib = "v".repeat(1 << 20);
    for i in 0..3 {
        assert_eq!(writer.call(&["SET", &format!("k{i}"), &mib]).await, ok());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Three megabytes of propagated writes unread: past the normal class's limit, within the
    // replica class's, which a client that sent SYNC belongs to.
    assert_eq!(server.connection_count(), 2);
    for i in 3..10 {
        writer.call(&["SET", &format!("k{i}"), &mib]).await;
    }
    assert!(closed_within(reader, Duration::from_secs(5)).await);
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_over_the_soft_limit_for_its_seconds_is_closed() {
    let server = virtual_server();
    let mut publisher = Client::connect(&server);
    assert_eq!(
        publisher
            .call(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 0 1mb 2"
            ])
            .await,
        ok()
    );
    let mut stuck = Client::connect(&server);
    stuck.exchange(b"SUBSCRIBE ch\r\n").await;
    let payload = "x".repeat(60_000);
    let publish_40 = async |publisher: &mut Client| {
        for _ in 0..40 {
            publisher.call(&["PUBLISH", "ch", &payload]).await;
        }
    };
    // 2.4 MB behind: over the soft limit, whose two seconds start now.
    publish_40(&mut publisher).await;
    publisher.call(&["FAKE.ADVANCE", "2000"]).await;
    publish_40(&mut publisher).await;
    assert_eq!(
        server.connection_count(),
        2,
        "two seconds are not more than two"
    );
    publisher.call(&["FAKE.ADVANCE", "1000"]).await;
    publish_40(&mut publisher).await;
    assert!(closed_within(stuck, Duration::from_secs(5)).await);
    assert_eq!(
        publisher.call(&["PUBLISH", "ch", "late"]).await,
        Frame::Integer(0)
    );
}

#[tokio::test(start_paused = true)]
async fn config_set_client_output_buffer_limit_changes_the_classes_named() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    assert_eq!(
        client
            .call(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "replica 1kb 1 1 NORMAL 2 2 2"
            ])
            .await,
        ok()
    );
    assert_eq!(
        client
            .call(&["CONFIG", "GET", "client-output-buffer-limit"])
            .await,
        Frame::Array(vec![
            bulk("client-output-buffer-limit"),
            bulk("normal 2 2 2 slave 1024 1 1 pubsub 33554432 8388608 60")
        ])
    );
    let failed = |why: &str| {
        err(&format!(
            "ERR CONFIG SET failed (possibly related to argument \
             'client-output-buffer-limit') - {why}"
        ))
    };
    assert_eq!(
        client
            .call(&["CONFIG", "SET", "client-output-buffer-limit", "foo 1 1 1"])
            .await,
        failed("Invalid client class specified in buffer limit configuration.")
    );
    assert_eq!(
        client
            .call(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1 1 -1"
            ])
            .await,
        failed("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
    );
    assert_eq!(
        client
            .call(&["CONFIG", "SET", "client-output-buffer-limit", "normal 1 1"])
            .await,
        failed("Wrong number of arguments in buffer limit configuration.")
    );
}

/// `timeout`: an idle client is closed once its last request is more than that many whole
/// seconds behind the server's clock, as Redis's clients cron closes it; a subscriber is spared.
#[tokio::test(start_paused = true)]
async fn config_timeout_closes_idle_clients_on_the_server_clock() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    assert_eq!(admin.call(&["CONFIG", "SET", "timeout", "1"]).await, ok());
    let mut idle = Client::connect(&server);
    assert_eq!(idle.call(&["PING"]).await, Frame::Simple("PONG".into()));
    let mut subscriber = Client::connect(&server);
    subscriber.exchange(b"SUBSCRIBE ch\r\n").await;
    admin.call(&["FAKE.ADVANCE", "999"]).await;
    assert_eq!(idle.call(&["PING"]).await, Frame::Simple("PONG".into()));
    // Idle from here: within 2 s of the server's clock it is closed.
    admin.call(&["FAKE.ADVANCE", "2000"]).await;
    assert!(closed_within(idle, Duration::from_secs(1)).await);
    // The admin client keeps talking, and the subscriber is never idle-closed.
    admin.call(&["FAKE.ADVANCE", "5000"]).await;
    assert_eq!(admin.call(&["PUBLISH", "ch", "m"]).await, Frame::Integer(1));
    assert!(!closed_within(subscriber, Duration::from_millis(100)).await);
}

#[tokio::test(start_paused = true)]
async fn messages_queued_behind_a_blocked_write_all_arrive_under_a_fault_plan() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    // Any fault makes pushes go through the plan (here one for a node nobody uses).
    admin
        .call(&["FAKE.FAULT", "DROP-DELIVERY", "999", "NEXT", "1"])
        .await;
    let mut slow = Client::connect(&server);
    slow.call(&["SUBSCRIBE", "ch"]).await;
    let payload = "y".repeat(30_000);
    for _ in 0..10 {
        admin.call(&["PUBLISH", "ch", &payload]).await;
    }
    // The subscriber reads only now; every message comes, with no request to prompt it.
    for _ in 0..10 {
        assert_eq!(
            slow.reply().await,
            Some(Frame::Array(vec![
                bulk("message"),
                bulk("ch"),
                bulk(&payload)
            ]))
        );
    }
}

// ---- admin commands ----

#[tokio::test(start_paused = true)]
async fn fake_time_and_advance_move_the_virtual_clock() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    assert_eq!(
        client.call(&["FAKE.TIME"]).await,
        Frame::Integer(DEFAULT_EPOCH_MS)
    );
    assert_eq!(
        client.call(&["fake.advance", "1500"]).await,
        Frame::Integer(DEFAULT_EPOCH_MS + 1500)
    );
    assert_eq!(
        client.call(&["TIME"]).await,
        Frame::Array(vec![bulk("1704067201"), bulk("500000")])
    );
}

#[tokio::test(start_paused = true)]
async fn a_lease_lives_through_its_deadline_and_is_gone_a_millisecond_later() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    client.call(&["HINCRBY", "lock", "owner", "1"]).await;
    client.call(&["PEXPIRE", "lock", "30000"]).await;
    client.call(&["FAKE.ADVANCE", "30000"]).await;
    assert_eq!(client.call(&["PTTL", "lock"]).await, Frame::Integer(0));
    assert_eq!(client.call(&["HGET", "lock", "owner"]).await, bulk("1"));
    client.call(&["FAKE.ADVANCE", "1"]).await;
    assert_eq!(client.call(&["PTTL", "lock"]).await, Frame::Integer(-2));
}

#[tokio::test]
async fn the_system_clock_is_read_once_per_batch_and_moves_between_batches() {
    let server = Server::new(&ServerConfig::default());
    let mut client = Client::connect(&server);
    let Frame::Integer(before) = client.call(&["FAKE.TIME"]).await else {
        panic!("FAKE.TIME replies the time");
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    // Outside a batch the engine reads the wall clock itself (nothing froze it).
    let outside = server.engine().lock().unwrap().clock_now();
    assert!(outside >= before + 30, "{outside} vs {before}");
    let Frame::Integer(after) = client.call(&["FAKE.TIME"]).await else {
        panic!("FAKE.TIME replies the time");
    };
    assert!(after >= outside, "{after} vs {outside}");
}

#[tokio::test(start_paused = true)]
async fn admin_commands_with_wrong_arguments_get_redis_style_errors() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    assert_eq!(
        client.call(&["FAKE.ADVANCE"]).await,
        err("ERR wrong number of arguments for 'fake.advance' command")
    );
    assert_eq!(
        client.call(&["FAKE.TIME", "now"]).await,
        err("ERR wrong number of arguments for 'fake.time' command")
    );
    assert_eq!(
        client.call(&["FAKE.ADVANCE", "soon"]).await,
        err("ERR value is not an integer or out of range")
    );
    assert!(matches!(
        client.call(&["FAKE.ADVANCE", "-1"]).await,
        Frame::Error(e) if e.starts_with("ERR FAKE.ADVANCE moves the clock forward only")
    ));
    assert_eq!(
        client.call(&["FAKE.FAULT", "flood"]).await,
        err(
            "ERR unknown fault kind 'flood'; the kinds are drop-request, drop-reply, \
             delay-request, delay-reply, drop-delivery, link-down, subscriber-down, pause, crash, \
             restart, failover, clock-jump, client-pause, replica-stall, slot-migration, \
             shard-failover, clear"
        )
    );
    assert_eq!(
        client.call(&["FAKE.FAULT", "pause", "1"]).await,
        err("ERR wrong number of arguments for 'fake.fault|pause' command")
    );
    assert_eq!(
        client
            .call(&["FAKE.FAULT", "pause", "1", "10", "LATER"])
            .await,
        err("ERR syntax error")
    );
    assert_eq!(
        client
            .call(&["FAKE.FAULT", "delay-reply", "1", "ten"])
            .await,
        err("ERR value is not an integer or out of range")
    );
    assert!(matches!(
        client.call(&["FAKE.FAULT", "drop-delivery", "*"]).await,
        Frame::Error(e) if e.starts_with("ERR NEXT counts one node's deliveries")
    ));
    assert!(matches!(
        client.call(&["FAKE.FAULT", "drop-reply", "*", "CHANCE", "2"]).await,
        Frame::Error(e) if e == "ERR a chance is a number from 0 to 1"
    ));
    // Unknown FAKE.* names are unknown commands, as in Redis.
    assert!(matches!(
        client.call(&["FAKE.NOPE"]).await,
        Frame::Error(e) if e.starts_with("ERR unknown command 'FAKE.NOPE'")
    ));
}

#[tokio::test(start_paused = true)]
async fn fake_advance_needs_the_virtual_clock() {
    let server = Server::new(&ServerConfig::default());
    let mut client = Client::connect(&server);
    assert_eq!(
        client.call(&["FAKE.ADVANCE", "10"]).await,
        err("ERR FAKE.ADVANCE needs the virtual clock: start the server with --clock virtual")
    );
}

#[tokio::test(start_paused = true)]
async fn admin_commands_queue_inside_multi_and_run_at_exec() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    assert_eq!(client.call(&["MULTI"]).await, ok());
    assert_eq!(
        client.call(&["FAKE.TIME"]).await,
        Frame::Simple("QUEUED".into())
    );
    assert_eq!(
        client.call(&["GET", "x"]).await,
        Frame::Simple("QUEUED".into())
    );
    assert_eq!(
        client.call(&["EXEC"]).await,
        Frame::Array(vec![Frame::Integer(DEFAULT_EPOCH_MS), Frame::Null])
    );
}

// ---- faults over the wire ----

/// The events of the fault log, as text.
async fn events(client: &mut Client) -> Vec<String> {
    let Frame::Array(events) = client.call(&["FAKE.EVENTS"]).await else {
        panic!("FAKE.EVENTS replies an array");
    };
    events
        .into_iter()
        .map(|e| match e {
            Frame::Array(fields) => match fields.last() {
                Some(Frame::Bulk(b)) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_dropped_reply_is_applied_and_its_connection_closes_unanswered() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut victim = Client::connect(&server);
    let Frame::Integer(node) = victim.call(&["FAKE.NODE"]).await else {
        panic!("FAKE.NODE replies the node");
    };
    let node = node.to_string();
    assert_eq!(
        admin
            .call(&["FAKE.FAULT", "DROP-REPLY", &node, "NEXT", "1"])
            .await,
        ok()
    );
    let (got, closed) = victim.exchange(&request(&["SET", "k", "v"])).await;
    assert_eq!((got.as_slice(), closed), (&b""[..], true));
    assert_eq!(admin.call(&["GET", "k"]).await, bulk("v"));
    assert_eq!(events(&mut admin).await, ["reply-dropped"]);
}

#[tokio::test(start_paused = true)]
async fn seqs_number_a_node_s_commands_from_its_first_even_before_any_fault() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut client = Client::connect(&server);
    client.call(&["FAKE.NODE", "8"]).await;
    // Commands 0 and 1 of node 8, sent while the plan is empty.
    client.call(&["SET", "a", "1"]).await;
    client.call(&["SET", "b", "1"]).await;
    admin
        .call(&["FAKE.FAULT", "DROP-REPLY", "8", "SEQS", "2", "3"])
        .await;
    let (got, closed) = client.exchange(&request(&["SET", "c", "1"])).await;
    assert_eq!((got.as_slice(), closed), (&b""[..], true));
    let Frame::Array(events) = admin.call(&["FAKE.EVENTS"]).await else {
        panic!("FAKE.EVENTS replies an array");
    };
    assert_eq!(
        events,
        [Frame::Array(vec![
            Frame::Integer(DEFAULT_EPOCH_MS),
            Frame::Integer(8),
            Frame::Integer(2),
            bulk("reply-dropped"),
        ])]
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_request_is_never_applied() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut victim = Client::connect(&server);
    victim.call(&["FAKE.NODE", "7"]).await;
    admin.call(&["FAKE.FAULT", "drop-request", "7"]).await;
    let (got, closed) = victim.exchange(&request(&["SET", "k", "v"])).await;
    assert_eq!((got.as_slice(), closed), (&b""[..], true));
    assert_eq!(admin.call(&["GET", "k"]).await, Frame::Null);
    // The fault was for one command only: the node's next connection is fine.
    let mut again = Client::connect(&server);
    again.call(&["FAKE.NODE", "7"]).await;
    assert_eq!(again.call(&["SET", "k", "w"]).await, ok());
}

#[tokio::test(start_paused = true)]
async fn a_delayed_request_lands_when_the_virtual_clock_gets_there() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut slow = Client::connect(&server);
    slow.call(&["FAKE.NODE", "3"]).await;
    admin
        .call(&["FAKE.FAULT", "DELAY-REQUEST", "3", "500"])
        .await;
    slow.send(&request(&["SET", "k", "late"])).await;
    assert_eq!(slow.reply().await, None, "held until the clock moves");
    assert_eq!(admin.call(&["GET", "k"]).await, Frame::Null);
    admin.call(&["FAKE.ADVANCE", "499"]).await;
    assert_eq!(slow.reply().await, None);
    admin.call(&["FAKE.ADVANCE", "1"]).await;
    assert_eq!(slow.reply().await, Some(ok()));
    assert_eq!(admin.call(&["GET", "k"]).await, bulk("late"));
}

#[tokio::test(start_paused = true)]
async fn fake_advance_lands_each_delayed_request_at_its_own_time_before_replying() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut first = Client::connect(&server);
    let mut second = Client::connect(&server);
    first.call(&["FAKE.NODE", "21"]).await;
    second.call(&["FAKE.NODE", "22"]).await;
    admin
        .call(&["FAKE.FAULT", "DELAY-REQUEST", "21", "300", "NEXT", "2"])
        .await;
    admin
        .call(&["FAKE.FAULT", "DELAY-REQUEST", "22", "100"])
        .await;
    // Node 21's SET lands at +300; its TIME behind it on the same stream arrives then, and is
    // delayed again: +600. Node 22's SET lands at +100.
    let mut pipeline = request(&["SET", "order", "21"]);
    pipeline.extend(request(&["TIME"]));
    first.send(&pipeline).await;
    second.send(&request(&["SET", "order", "22"])).await;
    assert_eq!(
        admin.call(&["FAKE.ADVANCE", "1000"]).await,
        Frame::Integer(DEFAULT_EPOCH_MS + 1000)
    );
    // Everything due landed before the reply, in time order: 22 at +100, then 21 at +300.
    assert_eq!(admin.call(&["GET", "order"]).await, bulk("21"));
    assert_eq!(second.reply().await, Some(ok()));
    assert_eq!(first.reply().await, Some(ok()));
    assert_eq!(
        first.reply().await,
        Some(Frame::Array(vec![bulk("1704067200"), bulk("600000")]))
    );
    assert_eq!(
        events(&mut admin).await,
        [
            "request-delayed 300",
            "request-delayed 100",
            "request-delayed 300"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn fake_advance_fires_scheduled_faults_at_their_own_time() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut client = Client::connect(&server);
    client.call(&["FAKE.NODE", "30"]).await;
    admin.call(&["FAKE.FAULT", "RESTART", "IN", "200"]).await;
    admin
        .call(&["FAKE.FAULT", "DELAY-REQUEST", "30", "500"])
        .await;
    client.send(&request(&["SET", "k", "after-restart"])).await;
    // The restart at +200 closes both connections; the request due at +500 was on one of them
    // and is lost with it. The admin gets its reply, then the connection closes.
    let (got, closed) = admin.exchange(&request(&["FAKE.ADVANCE", "1000"])).await;
    assert_eq!(String::from_utf8_lossy(&got), ":1704067201000\r\n");
    assert!(closed);
    let (_, closed) = client.read_all().await;
    assert!(closed);
    let mut fresh = Client::connect(&server);
    assert_eq!(fresh.call(&["GET", "k"]).await, Frame::Null);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_reply_is_applied_at_once_and_answered_later() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut slow = Client::connect(&server);
    slow.call(&["FAKE.NODE", "3"]).await;
    admin
        .call(&["FAKE.FAULT", "delay-reply", "3", "100", "NEXT", "1"])
        .await;
    slow.send(&request(&["SET", "k", "v"])).await;
    assert_eq!(slow.reply().await, None);
    assert_eq!(admin.call(&["GET", "k"]).await, bulk("v"));
    admin.call(&["FAKE.ADVANCE", "100"]).await;
    assert_eq!(slow.reply().await, Some(ok()));
}

#[tokio::test(start_paused = true)]
async fn a_paused_client_runs_again_when_its_pause_ends() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut frozen = Client::connect(&server);
    frozen.call(&["FAKE.NODE", "4"]).await;
    frozen.call(&["SUBSCRIBE", "ch"]).await;
    admin.call(&["FAKE.FAULT", "PAUSE", "4", "20000"]).await;
    // Messages to a paused client wait for the pause's end too.
    assert_eq!(admin.call(&["PUBLISH", "ch", "0"]).await, Frame::Integer(1));
    assert_eq!(frozen.reply().await, None);
    admin.call(&["FAKE.ADVANCE", "20000"]).await;
    assert_eq!(
        frozen.reply().await,
        Some(Frame::Array(vec![bulk("message"), bulk("ch"), bulk("0")]))
    );
    assert_eq!(
        events(&mut admin).await,
        ["delivery-held-until 1704067220000"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_delivery_never_arrives() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut listener = Client::connect(&server);
    listener.call(&["FAKE.NODE", "5"]).await;
    listener.call(&["SUBSCRIBE", "ch"]).await;
    admin.call(&["FAKE.FAULT", "DROP-DELIVERY", "5"]).await;
    admin.call(&["PUBLISH", "ch", "lost"]).await;
    admin.call(&["PUBLISH", "ch", "kept"]).await;
    assert_eq!(
        listener.reply().await,
        Some(Frame::Array(vec![
            bulk("message"),
            bulk("ch"),
            bulk("kept")
        ]))
    );
    assert_eq!(events(&mut admin).await, ["delivery-dropped"]);
}

#[tokio::test(start_paused = true)]
async fn a_restart_closes_every_connection_and_loses_the_data() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut other = Client::connect(&server);
    admin.call(&["SET", "k", "v"]).await;
    // The admin's own connection is closed too, once the reply is written.
    let (got, closed) = admin.exchange(&request(&["FAKE.FAULT", "RESTART"])).await;
    assert_eq!((got.as_slice(), closed), (&b"+OK\r\n"[..], true));
    let (_, closed) = other.read_all().await;
    assert!(closed);
    let mut fresh = Client::connect(&server);
    assert_eq!(fresh.call(&["GET", "k"]).await, Frame::Null);
    assert_eq!(events(&mut fresh).await, ["restarted data-lost"]);
}

#[tokio::test(start_paused = true)]
async fn a_scheduled_crash_closes_the_node_s_connections_when_the_clock_gets_there() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut doomed = Client::connect(&server);
    doomed.call(&["FAKE.NODE", "9"]).await;
    admin
        .call(&["FAKE.FAULT", "CRASH", "9", "IN", "1000"])
        .await;
    assert_eq!(doomed.call(&["PING"]).await, Frame::Simple("PONG".into()));
    admin.call(&["FAKE.ADVANCE", "1000"]).await;
    let (_, closed) = doomed.read_all().await;
    assert!(closed);
    assert_eq!(admin.call(&["PING"]).await, Frame::Simple("PONG".into()));
}

#[tokio::test(start_paused = true)]
async fn a_crashed_node_sends_nothing_more_from_a_connection_it_opens_later() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    admin.call(&["FAKE.FAULT", "CRASH", "9"]).await;
    let mut late = Client::connect(&server);
    assert_eq!(late.call(&["FAKE.NODE", "9"]).await, ok());
    let (got, closed) = late.exchange(&request(&["SET", "k", "v"])).await;
    assert_eq!((got.as_slice(), closed), (&b""[..], true));
    assert_eq!(admin.call(&["GET", "k"]).await, Frame::Null);
}

#[tokio::test(start_paused = true)]
async fn a_clock_jump_expires_keys_early_and_clear_forgets_pending_faults() {
    let server = virtual_server();
    let mut client = Client::connect(&server);
    client.call(&["SET", "k", "v", "PX", "5000"]).await;
    client.call(&["FAKE.FAULT", "CLOCK-JUMP", "10000"]).await;
    assert_eq!(client.call(&["GET", "k"]).await, Frame::Null);
    client.call(&["FAKE.FAULT", "RESTART", "IN", "100"]).await;
    assert_eq!(client.call(&["FAKE.FAULT", "CLEAR"]).await, ok());
    client.call(&["FAKE.ADVANCE", "200"]).await;
    assert_eq!(client.call(&["PING"]).await, Frame::Simple("PONG".into()));
    assert_eq!(events(&mut client).await, ["clock-jumped 10000"]);
}

#[tokio::test(start_paused = true)]
async fn a_link_down_loses_requests_and_messages_until_it_is_back() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut listener = Client::connect(&server);
    listener.call(&["FAKE.NODE", "11"]).await;
    listener.call(&["SUBSCRIBE", "ch"]).await;
    admin.call(&["FAKE.FAULT", "LINK-DOWN", "11", "1000"]).await;
    admin.call(&["PUBLISH", "ch", "lost"]).await;
    assert_eq!(listener.reply().await, None);
    let mut sender = Client::connect(&server);
    sender.call(&["FAKE.NODE", "11"]).await;
    let (got, closed) = sender.exchange(&request(&["SET", "k", "v"])).await;
    assert_eq!((got.as_slice(), closed), (&b""[..], true));
    assert_eq!(admin.call(&["GET", "k"]).await, Frame::Null);
    admin.call(&["FAKE.ADVANCE", "1000"]).await;
    let mut back = Client::connect(&server);
    back.call(&["FAKE.NODE", "11"]).await;
    assert_eq!(back.call(&["SET", "k", "v"]).await, ok());
    assert_eq!(events(&mut admin).await, ["delivery-dropped", "link-down"]);
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_down_closes_the_subscribed_connection_and_drops_its_messages() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    let mut listener = Client::connect(&server);
    listener.call(&["FAKE.NODE", "12"]).await;
    listener.call(&["SUBSCRIBE", "ch"]).await;
    admin
        .call(&["FAKE.FAULT", "SUBSCRIBER-DOWN", "12", "5000"])
        .await;
    admin.call(&["PUBLISH", "ch", "lost"]).await;
    let (got, closed) = listener.read_all().await;
    assert_eq!((got.as_slice(), closed), (&b""[..], true));
    // A connection of the node that subscribes in the window is closed once it has.
    let mut other = Client::connect(&server);
    other.call(&["FAKE.NODE", "12"]).await;
    let (got, closed) = other.exchange(b"SUBSCRIBE other\r\n").await;
    assert_eq!(got, b"*3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:1\r\n");
    assert!(closed);
    assert_eq!(
        events(&mut admin).await,
        ["subscriber-lost", "subscriber-lost"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failover_loses_the_writes_its_replica_had_not_received() {
    let server = virtual_server();
    let mut admin = Client::connect(&server);
    admin
        .call(&["FAKE.FAULT", "FAILOVER", "100", "IN", "1000"])
        .await;
    admin.call(&["SET", "old", "1"]).await;
    admin.call(&["FAKE.ADVANCE", "950"]).await;
    admin.call(&["SET", "recent", "1"]).await;
    let (got, closed) = admin.exchange(&request(&["FAKE.ADVANCE", "100"])).await;
    assert_eq!(String::from_utf8_lossy(&got), ":1704067201050\r\n");
    assert!(closed, "a failover closes every connection");
    let mut fresh = Client::connect(&server);
    assert_eq!(fresh.call(&["GET", "old"]).await, bulk("1"));
    assert_eq!(fresh.call(&["GET", "recent"]).await, Frame::Null);
    assert_eq!(events(&mut fresh).await, ["failed-over lag 100 undone 1"]);
}

#[tokio::test]
async fn stop_closes_open_connections_and_returns() {
    let running = Server::start(ServerConfig {
        port: 0,
        ..ServerConfig::default()
    })
    .await
    .expect("a free port");
    let mut client = tokio::net::TcpStream::connect(running.local_addr())
        .await
        .unwrap();
    client.write_all(b"PING\r\n").await.unwrap();
    let mut buf = [0u8; 7];
    client.read_exact(&mut buf).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), running.stop())
        .await
        .expect("a graceful stop");
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
}
