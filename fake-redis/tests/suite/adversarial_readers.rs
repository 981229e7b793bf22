//! Readers that fall behind, on redis-server and on the fake's binary side by side: a client that
//! stops reading its pipeline's replies and a subscriber that stops reading its messages, under
//! the default output-buffer limits and under small ones, and readers that are slow but within
//! their limits.
//!
//! Invariant: each server keeps or closes the same connections, runs the same commands of a
//! stalled pipeline, and gives a slow reader the same bytes. The outcomes are compared, never the
//! timings: every wait has the generous deadline of a loaded 2-core machine. (The soft limit's
//! seconds are held on the fake's virtual clock, in `server.rs`.)

#![cfg(target_os = "linux")]

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};
use support::OwnServer;
use support::binary::{PATIENCE, start};
use support::raw::Real;

/// The two servers, each by its port: Redis of the test's own, then the fake's binary.
struct Servers {
    _real: OwnServer,
    _fake: Fake,
    ports: [u16; 2],
}

struct Fake(Child);

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Servers {
    fn start() -> Servers {
        let real = OwnServer::start();
        let (fake, fake_port) = start(&[]);
        Servers {
            ports: [real.port, fake_port],
            _real: real,
            _fake: Fake(fake),
        }
    }
}

const NAMES: [&str; 2] = ["redis", "fake"];

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

fn connected_clients(control: &mut Real) -> String {
    let info = control.call(&[b"INFO", b"clients"]);
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .expect("INFO clients names connected_clients")
        .trim()
        .to_owned()
}

fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// `count` inline `GET key`s, then `SET marker 1`, in one write.
fn gets_then_marker(key: &str, count: usize) -> Vec<u8> {
    let mut pipeline = format!("GET {key}\r\n").repeat(count).into_bytes();
    pipeline.extend_from_slice(b"SET marker 1\r\n");
    pipeline
}

/// A client stalled behind its pipeline's replies, on one server: whether the connection was
/// closed, and `GET marker` afterwards (the reply's bytes).
fn stalled_pipeline(port: u16, limit: &[u8], replies: usize) -> (bool, Vec<u8>) {
    let mut control = Real::connect(port);
    assert_eq!(
        control.call(&[b"CONFIG", b"SET", b"client-output-buffer-limit", limit]),
        b"+OK\r\n"
    );
    control.call(&[b"DEL", b"marker"]);
    let mib = vec![b'v'; 1 << 20];
    assert_eq!(control.call(&[b"SET", b"big", &mib]), b"+OK\r\n");
    let mut stalled = connect(port);
    stalled
        .write_all(&gets_then_marker("big", replies))
        .unwrap();
    // The SET behind the replies runs, or the connection goes first.
    let settled = wait_for(|| {
        control.call(&[b"EXISTS", b"marker"]) == b":1\r\n" || connected_clients(&mut control) == "1"
    });
    assert!(settled, "neither the marker nor the close came");
    // A close for the limit comes at once; give it time to show if it is coming.
    std::thread::sleep(Duration::from_millis(300));
    let closed = connected_clients(&mut control) == "1";
    let marker = control.call(&[b"GET", b"marker"]);
    drop(stalled);
    (closed, marker)
}

#[test]
fn a_stalled_pipeline_runs_or_is_closed_as_on_redis() {
    let servers = Servers::start();
    for (limit, replies) in [
        // Normal clients have no limit by default: 20 MiB of replies wait, the SET runs.
        (&b"normal 0 0 0"[..], 20),
        // Past a hard limit the client is closed, and Redis runs nothing more of its pipeline.
        (b"normal 1mb 0 0", 4),
        (b"normal 8mb 0 0", 20),
    ] {
        let outcomes: Vec<(bool, Vec<u8>)> = servers
            .ports
            .iter()
            .map(|&port| stalled_pipeline(port, limit, replies))
            .collect();
        assert_eq!(
            outcomes[0],
            outcomes[1],
            "{} with {replies} replies: (closed, GET marker) on {} then {}",
            String::from_utf8_lossy(limit),
            NAMES[0],
            NAMES[1]
        );
    }
}

/// A subscriber that stops reading while 64 KiB messages are published to it, on one server:
/// whether it was closed before `PUBLISH` had sent 32 MiB, and `PUBLISH`'s count afterwards.
fn stalled_subscriber(port: u16, limit: &[u8]) -> (bool, Vec<u8>) {
    let mut control = Real::connect(port);
    assert_eq!(
        control.call(&[b"CONFIG", b"SET", b"client-output-buffer-limit", limit]),
        b"+OK\r\n"
    );
    let mut subscriber = Real::connect(port);
    subscriber.call(&[b"SUBSCRIBE", b"stalled"]);
    let payload = vec![b'm'; 64 << 10];
    let mut closed = false;
    for _ in 0..512 {
        if control.call(&[b"PUBLISH", b"stalled", &payload]) == b":0\r\n" {
            closed = true;
            break;
        }
    }
    let after = control.call(&[b"PUBLISH", b"stalled", b"late"]);
    drop(subscriber);
    (closed, after)
}

#[test]
fn a_stalled_subscriber_is_closed_at_its_limit_as_on_redis() {
    let servers = Servers::start();
    for limit in [&b"pubsub 256kb 0 0"[..], b"pubsub 4mb 0 0"] {
        let outcomes: Vec<(bool, Vec<u8>)> = servers
            .ports
            .iter()
            .map(|&port| stalled_subscriber(port, limit))
            .collect();
        assert_eq!(outcomes[0], (true, b":0\r\n".to_vec()), "redis closes it");
        assert_eq!(
            outcomes[0],
            outcomes[1],
            "{}: (closed, PUBLISH) on {} then {}",
            String::from_utf8_lossy(limit),
            NAMES[0],
            NAMES[1]
        );
    }
}

/// Reads `stream` in small pieces with pauses until `total` bytes came.
fn read_slowly(stream: &mut TcpStream, total: usize) -> Vec<u8> {
    let mut got = Vec::with_capacity(total);
    let mut piece = [0u8; 16 << 10];
    while got.len() < total {
        let want = piece.len().min(total - got.len());
        let n = stream.read(&mut piece[..want]).expect("reads");
        assert!(n > 0, "closed after {} of {total} bytes", got.len());
        got.extend_from_slice(&piece[..n]);
        std::thread::sleep(Duration::from_millis(2));
    }
    got
}

/// A slow reader within its limits, on one server: the bytes of its replies and messages.
fn slow_reader(port: u16) -> Vec<u8> {
    let mut control = Real::connect(port);
    assert_eq!(
        control.call(&[
            b"CONFIG",
            b"SET",
            b"client-output-buffer-limit",
            b"normal 2mb 0 0 pubsub 2mb 0 0"
        ]),
        b"+OK\r\n"
    );
    let value = vec![b'w'; 64 << 10];
    assert_eq!(control.call(&[b"SET", b"mid", &value]), b"+OK\r\n");
    // Sixteen replies of 64 KiB: 1 MiB, under the 2 MiB limit.
    let mut reader = connect(port);
    reader.write_all(&gets_then_marker("mid", 16)).unwrap();
    let reply = b"$65536\r\n".len() + (64 << 10) + 2;
    let mut out = read_slowly(&mut reader, 16 * reply + b"+OK\r\n".len());
    // A subscriber reading slowly while 1 MiB is published in 8 KiB messages.
    let mut subscriber = connect(port);
    subscriber.write_all(b"SUBSCRIBE slow\r\n").unwrap();
    let subscribed = b"*3\r\n$9\r\nsubscribe\r\n$4\r\nslow\r\n:1\r\n";
    out.extend(read_slowly(&mut subscriber, subscribed.len()));
    let message = vec![b's'; 8 << 10];
    for _ in 0..128 {
        assert_eq!(
            control.call(&[b"PUBLISH", b"slow", &message]),
            b":1\r\n",
            "the slow subscriber is still there"
        );
    }
    let each = b"*3\r\n$7\r\nmessage\r\n$4\r\nslow\r\n$8192\r\n".len() + (8 << 10) + 2;
    out.extend(read_slowly(&mut subscriber, 128 * each));
    out
}

#[test]
fn slow_readers_within_their_limits_get_every_byte_redis_sends() {
    let servers = Servers::start();
    let [redis, fake] = servers.ports.map(slow_reader);
    assert!(redis.len() > 2 << 20);
    assert!(redis == fake, "the slow readers' bytes differ");
}
