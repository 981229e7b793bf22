//! `SYNC` from a plain client: the dataset as an RDB payload (a bulk length, then the file with no
//! line break after it), then every write as the command redis-server 7.4.1 propagates for it.
//! The expected stream below is what 7.4.1 sent a `SYNC` client for the same commands (read off
//! a raw socket), with its times replaced by the fake's virtual clock's.
//! (A key expiring and found gone inside a transaction: 7.4.1 sent `DEL e`, then `MULTI`,
//! `SELECT 1`, `SET a 1`, `SELECT 0`, `SET b 1`, `EXEC`.)

use fake_redis::server::{ClockChoice, Server, ServerConfig};
use fake_redis::{DEFAULT_EPOCH_MS, Version};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The RESP2 request of `words`.
fn request(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

/// A command of the stream, as the stream encodes it.
fn streamed(words: &[&str]) -> String {
    String::from_utf8(request(words)).expect("text")
}

async fn read_line(s: &mut tokio::net::TcpStream) -> String {
    let mut line = Vec::new();
    while !line.ends_with(b"\r\n") {
        let mut byte = [0u8; 1];
        s.read_exact(&mut byte).await.expect("a byte");
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line).into_owned()
}

#[tokio::test]
async fn sync_sends_the_dataset_then_the_writes_as_redis_7_4_propagates_them() {
    let running = Server::start(ServerConfig {
        port: 0,
        clock: ClockChoice::Virtual {
            epoch_ms: DEFAULT_EPOCH_MS,
        },
        version: Version::V7_4,
        ..ServerConfig::default()
    })
    .await
    .expect("a free port");
    let addr = running.local_addr();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut replica = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut call = async |words: &[&str]| {
        client.write_all(&request(words)).await.unwrap();
        read_line(&mut client).await
    };
    assert_eq!(call(&["SET", "before", "x"]).await, "+OK\r\n");

    replica.write_all(b"SYNC\r\n").await.unwrap();
    let count = read_line(&mut replica).await;
    let len: usize = count[1..count.len() - 2].parse().expect("$<length>");
    let mut payload = vec![0u8; len];
    replica.read_exact(&mut payload).await.unwrap();
    assert!(payload.starts_with(b"REDIS0012"), "{payload:?}");
    assert_eq!(payload[len - 9], 0xFF, "the file's end, then its checksum");
    assert!(payload.windows(6).any(|w| w == b"before"));

    let now = DEFAULT_EPOCH_MS;
    for words in [
        &["SET", "foo", "bar", "EX", "100"][..],
        &["DEL", "nokey"],
        &["MULTI"],
        &["SET", "a", "1"],
        &["SET", "b", "2"],
        &["EXEC"],
        &["EXPIRE", "a", "100", "NX"],
        &["EXPIREAT", "b", "1"],
        &["INCRBYFLOAT", "f", "1.5"],
        &["GETDEL", "f"],
        &["EVAL", "redis.call('set','x','1')", "0"],
        &["SELECT", "2"],
        &["PUBLISH", "ch", "m"],
        // A key that expires is deleted on its own, ahead of the transaction that found it
        // gone; `MULTI` comes before the `SELECT` of its first command.
        &["SET", "e", "v", "PX", "1"],
        &["FAKE.ADVANCE", "10"],
        &["MULTI"],
        &["SELECT", "1"],
        &["SET", "a", "1"],
        &["SELECT", "2"],
        &["GET", "e"],
        &["SET", "b", "1"],
        &["EXEC"],
    ] {
        client.write_all(&request(words)).await.unwrap();
    }
    let want = [
        streamed(&["SELECT", "0"]),
        streamed(&["SET", "foo", "bar", "PXAT", &(now + 100_000).to_string()]),
        streamed(&["MULTI"]),
        streamed(&["SET", "a", "1"]),
        streamed(&["SET", "b", "2"]),
        streamed(&["EXEC"]),
        streamed(&["PEXPIREAT", "a", &(now + 100_000).to_string(), "NX"]),
        streamed(&["DEL", "b"]),
        streamed(&["SET", "f", "1.5", "KEEPTTL"]),
        streamed(&["DEL", "f"]),
        streamed(&["set", "x", "1"]),
        streamed(&["SELECT", "2"]),
        streamed(&["PUBLISH", "ch", "m"]),
        streamed(&["SET", "e", "v", "PXAT", &(now + 1).to_string()]),
        streamed(&["DEL", "e"]),
        streamed(&["MULTI"]),
        streamed(&["SELECT", "1"]),
        streamed(&["SET", "a", "1"]),
        streamed(&["SELECT", "2"]),
        streamed(&["SET", "b", "1"]),
        streamed(&["EXEC"]),
    ]
    .concat();
    let mut got = vec![0u8; want.len()];
    tokio::time::timeout(Duration::from_secs(20), replica.read_exact(&mut got))
        .await
        .expect("the stream arrives")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&got), want);
}

/// A `RESTORE … REPLACE ABSTTL` whose time is past stores nothing and deletes the key it
/// replaced: redis-server 7.4.1 streams `DEL`, or `UNLINK` under `lazyfree-lazy-server-del yes`
/// (its dump suite's case, in the engine without a socket).
#[test]
fn a_restore_already_expired_streams_the_deletion() {
    use bytes::Bytes;
    use fake_redis::{Engine, EngineConfig, Frame, ManualClock};
    let mut e = Engine::with_config(
        ManualClock::new(DEFAULT_EPOCH_MS),
        EngineConfig {
            version: Version::V7_4,
            ..EngineConfig::default()
        },
    );
    let (client, replica) = (e.connect(), e.connect());
    let run = |e: &mut Engine, words: &[&[u8]]| {
        let argv: Vec<Bytes> = words.iter().map(|w| Bytes::copy_from_slice(w)).collect();
        e.execute(client, &argv)
    };
    run(&mut e, &[b"SET", b"k", b"v"]);
    run(&mut e, &[b"SET", b"k1", b"v"]);
    run(&mut e, &[b"SET", b"k2", b"v"]);
    let Frame::Bulk(payload) = run(&mut e, &[b"DUMP", b"k"]) else {
        panic!("DUMP gives a payload");
    };
    assert!(e.attach_replica_stream(replica).is_some());
    let past = (DEFAULT_EPOCH_MS - 5000).to_string();
    let restore = |e: &mut Engine, key: &[u8]| {
        let words: [&[u8]; 6] = [
            b"RESTORE",
            key,
            past.as_bytes(),
            &payload,
            b"REPLACE",
            b"ABSTTL",
        ];
        run(e, &words)
    };
    assert_eq!(restore(&mut e, b"k1"), Frame::OK);
    run(
        &mut e,
        &[b"CONFIG", b"SET", b"lazyfree-lazy-server-del", b"yes"],
    );
    assert_eq!(restore(&mut e, b"k2"), Frame::OK);
    let command = |words: &[&str]| {
        Frame::Array(
            words
                .iter()
                .map(|w| Frame::Bulk(Bytes::from(w.to_string())))
                .collect(),
        )
    };
    assert_eq!(
        e.drain_outbox(replica),
        vec![
            command(&["SELECT", "0"]),
            command(&["DEL", "k1"]),
            command(&["UNLINK", "k2"]),
        ]
    );
}

/// An engine of 7.4 on a manual clock, a client, and a reader of its command stream.
fn streamed_engine() -> (
    fake_redis::Engine,
    fake_redis::ClientId,
    fake_redis::ClientId,
) {
    use fake_redis::{Engine, EngineConfig, ManualClock};
    let mut e = Engine::with_config(
        ManualClock::new(DEFAULT_EPOCH_MS),
        EngineConfig {
            version: Version::V7_4,
            ..EngineConfig::default()
        },
    );
    let (client, replica) = (e.connect(), e.connect());
    assert!(e.attach_replica_stream(replica).is_some());
    (e, client, replica)
}

fn run_line(e: &mut fake_redis::Engine, client: fake_redis::ClientId, line: &str) {
    let argv: Vec<bytes::Bytes> = line
        .split(' ')
        .map(|w| bytes::Bytes::from(w.to_owned()))
        .collect();
    e.execute(client, &argv);
}

fn command_frame(line: &str) -> fake_redis::Frame {
    fake_redis::Frame::Array(
        line.split(' ')
            .map(|w| fake_redis::Frame::Bulk(bytes::Bytes::from(w.to_owned())))
            .collect(),
    )
}

/// `XREADGROUP` propagates what it did to the group, as redis-server 7.4.1 streamed it: an
/// `XCLAIM` per entry delivered and the group's `XGROUP SETID` (in the transaction's
/// `MULTI` … `EXEC`, or its own when it is more than one command); with `NOACK` no claims, and
/// the consumer it made as `XGROUP CREATECONSUMER`; a read of the consumer's history nothing.
#[test]
fn xreadgroup_streams_its_claims_and_the_group_s_last_id() {
    let (mut e, client, replica) = streamed_engine();
    for line in [
        "XADD s 1-1 f v",
        "XADD s 1-2 f v",
        "XADD s 1-3 f v",
        "XGROUP CREATE s g 0",
        "XREADGROUP GROUP g c COUNT 2 STREAMS s >",
        "XREADGROUP GROUP g c2 NOACK STREAMS s >",
        "MULTI",
        "XREADGROUP GROUP g c STREAMS s 0",
        "EXEC",
        "XADD s 1-4 f v",
        "MULTI",
        "XREADGROUP GROUP g c STREAMS s >",
        "EXEC",
    ] {
        run_line(&mut e, client, line);
    }
    let claim = |id: &str| {
        command_frame(&format!(
            "XCLAIM s g c 0 {id} TIME {DEFAULT_EPOCH_MS} RETRYCOUNT 1 FORCE JUSTID LASTID {id}"
        ))
    };
    let want = vec![
        command_frame("SELECT 0"),
        command_frame("XADD s 1-1 f v"),
        command_frame("XADD s 1-2 f v"),
        command_frame("XADD s 1-3 f v"),
        command_frame("XGROUP CREATE s g 0"),
        command_frame("MULTI"),
        claim("1-1"),
        claim("1-2"),
        command_frame("XGROUP SETID s g 1-2 ENTRIESREAD 2"),
        command_frame("EXEC"),
        command_frame("MULTI"),
        command_frame("XGROUP CREATECONSUMER s g c2"),
        command_frame("XGROUP SETID s g 1-3 ENTRIESREAD 3"),
        command_frame("EXEC"),
        command_frame("XADD s 1-4 f v"),
        command_frame("MULTI"),
        claim("1-4"),
        command_frame("XGROUP SETID s g 1-4 ENTRIESREAD 4"),
        command_frame("EXEC"),
    ];
    assert_eq!(e.drain_outbox(replica), want);
}

/// A transaction that makes its server a replica propagates nothing, not even what it wrote
/// before the `REPLICAOF`, and the server streams nothing while it is one; `REPLICAOF NO ONE`
/// disconnects the stream's readers, as redis-server 7.4.1 does.
#[test]
fn a_server_that_becomes_a_replica_streams_nothing_more() {
    let (mut e, client, replica) = streamed_engine();
    for line in [
        "SET foo bar",
        "MULTI",
        "SET foo2 bar",
        "REPLICAOF localhost 1",
        "SET foo3 bar",
        "EXEC",
    ] {
        run_line(&mut e, client, line);
    }
    assert_eq!(
        e.drain_outbox(replica),
        vec![command_frame("SELECT 0"), command_frame("SET foo bar")]
    );
    assert!(e.is_connected(replica));
    run_line(&mut e, client, "REPLICAOF NO ONE");
    assert!(!e.is_connected(replica));
}
