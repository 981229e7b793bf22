//! The connection handler on arbitrary input: whatever a client sends, in whatever pieces, the
//! server neither panics nor hangs, answers with a bounded amount of output, and forgets the
//! client once it has gone. Connections are in-memory pipes on tokio's paused clock, so a case
//! costs microseconds; the server's clock is virtual, so no fault a case injects waits on real
//! time.

use crate::support;

use proptest::prelude::*;
use support::drive::check_connection;

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
