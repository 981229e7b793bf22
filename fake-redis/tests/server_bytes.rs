//! The connection handler on arbitrary input: whatever a client sends, in whatever pieces, the
//! server neither panics nor hangs, answers with a bounded amount of output, and forgets the
//! client once it has gone. Connections are in-memory pipes on tokio's paused clock, so a case
//! costs microseconds; the server's clock is virtual, so no fault a case injects waits on real
//! time.

use bytes::Bytes;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use proptest::prelude::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Pieces of requests, well-formed and not, that reach deep into the server: admin commands,
/// faults on the case's own node, pub/sub, transactions, the handshake, protocol errors.
fn request_soup() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        Just(b"*".to_vec()),
        Just(b"$".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".to_vec()),
        Just(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n".to_vec()),
        Just(b"*1\r\n$4\r\nPING\r\n".to_vec()),
        Just(b"SET k v PX 100\r\n".to_vec()),
        Just(b"HSET h f 1\r\nHGETALL h\r\n".to_vec()),
        Just(b"INCR n\r\n".to_vec()),
        Just(b"SUBSCRIBE ch\r\n".to_vec()),
        Just(b"PUBLISH ch m\r\n".to_vec()),
        Just(b"UNSUBSCRIBE\r\n".to_vec()),
        Just(b"MULTI\r\n".to_vec()),
        Just(b"EXEC\r\n".to_vec()),
        Just(b"HELLO 3\r\n".to_vec()),
        Just(b"HELLO 2\r\n".to_vec()),
        Just(b"AUTH pw\r\n".to_vec()),
        Just(b"RESET\r\n".to_vec()),
        Just(b"QUIT\r\n".to_vec()),
        Just(b"FAKE.TIME\r\n".to_vec()),
        Just(b"FAKE.ADVANCE 50\r\n".to_vec()),
        Just(b"FAKE.EVENTS\r\n".to_vec()),
        Just(b"FAKE.NODE\r\n".to_vec()),
        Just(b"FAKE.FAULT DELAY-REPLY 1 10\r\n".to_vec()),
        Just(b"FAKE.FAULT DELAY-REQUEST 1 10\r\n".to_vec()),
        Just(b"FAKE.FAULT PAUSE 1 100\r\n".to_vec()),
        Just(b"FAKE.FAULT DROP-DELIVERY * CHANCE 0.5\r\n".to_vec()),
        Just(b"FAKE.FAULT CLOCK-JUMP -100\r\n".to_vec()),
        Just(b"FAKE.FAULT RESTART IN 30\r\n".to_vec()),
        Just(b"FAKE.FAULT CLEAR\r\n".to_vec()),
        Just(b"EVAL \"return 1\" 0\r\n".to_vec()),
        Just(b"\"unbalanced\r\n".to_vec()),
        (0u32..30).prop_map(|n| format!("*{n}\r\n").into_bytes()),
        (0u32..40).prop_map(|n| format!("${n}\r\n").into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(fragment, 0..40).prop_map(|parts| parts.concat())
}

/// Output a case may produce at most: generous, but far below what a leak or a loop would write.
const OUTPUT_BOUND: usize = 4 * 1024 * 1024;

/// Sends `input` in `chunks` to a fresh server, closes the client's side, and checks the rule.
fn check_connection(input: &[u8], chunks: &[usize], password: bool) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let server = Server::new(&ServerConfig {
            clock: ClockChoice::Virtual {
                epoch_ms: fake_redis::DEFAULT_EPOCH_MS,
            },
            requirepass: password.then(|| Bytes::from_static(b"pw")),
            ..ServerConfig::default()
        });
        let (client, server_side) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn({
            let server = server.clone();
            async move { server.serve_connection(server_side).await }
        });
        let (mut reader, mut writer) = tokio::io::split(client);
        let reading = tokio::spawn(async move {
            let mut total = 0usize;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf).await {
                if n == 0 || total > OUTPUT_BOUND {
                    break;
                }
                total += n;
            }
            total
        });
        let mut rest = input;
        for &size in chunks.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            // The server may have closed the connection already (QUIT, a protocol error).
            if writer.write_all(piece).await.is_err() {
                break;
            }
            rest = tail;
        }
        let _ = writer.shutdown().await;
        drop(writer);
        tokio::time::timeout(Duration::from_secs(3600), serving)
            .await
            .expect("the connection ends once the client has gone")
            .expect("the connection task does not panic");
        let written = tokio::time::timeout(Duration::from_secs(3600), reading)
            .await
            .expect("the reader sees the end")
            .expect("the reader does not panic");
        assert!(written <= OUTPUT_BOUND, "{written} bytes of output");
        assert_eq!(server.connection_count(), 0);
        assert_eq!(server.engine().lock().unwrap().client_count(), 0);
        written
    })
}

#[test]
fn the_harness_sees_replies_and_faults_on_the_case_s_own_node() {
    assert_eq!(check_connection(b"PING\r\n", &[1], false), 7);
    // A delayed request waits for the virtual clock; the client leaving ends it all the same.
    let input = b"FAKE.NODE\r\nFAKE.FAULT DELAY-REQUEST 1 10\r\nPING\r\n";
    assert_eq!(
        check_connection(input, &[64], false),
        b":1\r\n+OK\r\n".len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary bytes in arbitrary pieces: no panic, no hang, bounded output, nothing left.
    #[test]
    fn arbitrary_bytes_never_panic_or_linger(
        input in proptest::collection::vec(any::<u8>(), 0..1024),
        chunks in proptest::collection::vec(1usize..128, 1..8),
        password in any::<bool>(),
    ) {
        check_connection(&input, &chunks, password);
    }

    /// Requests, admin commands and faults mixed with garbage: the same rule, deep in the server.
    #[test]
    fn request_soup_never_panics_or_lingers(
        input in request_soup(),
        chunks in proptest::collection::vec(1usize..64, 1..8),
        password in any::<bool>(),
    ) {
        check_connection(&input, &chunks, password);
    }
}
