//! `DUMP` and `RESTORE` against a redis-server 7.0 of the test's own: after the same writes,
//! `DUMP` gives Redis's bytes for every type in each encoding whose bytes Redis fixes (its hash
//! tables and set hash tables are written in an order drawn at random per process, so those
//! are compared through `RESTORE`); Redis's payloads restore on the fake to the same values;
//! the errors read as Redis's, byte for byte; and no mutated payload makes `RESTORE` panic.

use crate::support;

use bytes::Bytes;
use fake_redis::resp::{Frame, ReplyParser};
use fake_redis::{Engine, ManualClock};
use proptest::prelude::*;
use support::{OwnServer, raw};

/// A fresh engine and a client of it.
fn engine() -> (Engine, fake_redis::ClientId) {
    // The engine's clock starts at the wall clock's time, as the test's redis-server's does.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64;
    let mut engine = Engine::new(ManualClock::new(now));
    let client = engine.connect();
    (engine, client)
}

fn to_argv(words: &[&[u8]]) -> Vec<Bytes> {
    words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
}

/// The bulk string of a raw reply (`$n\r\n…\r\n`).
fn bulk_of(reply: &[u8]) -> Vec<u8> {
    let mut buf = bytes::BytesMut::from(reply);
    match ReplyParser::new().parse(&mut buf) {
        Ok(Some(Frame::Bulk(b))) => b.to_vec(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// Writes that leave one key, `k`, in one type and encoding.
const SETUPS: &[&[&str]] = &[
    // Strings: the integer encodings, short text, and LZF (over 20 bytes, compressible or not).
    &["SET k 1"],
    &["SET k -128"],
    &["SET k 300"],
    &["SET k -40000"],
    &["SET k 2147483647"],
    &["SET k 2147483648"],
    &["SET k 12345678901234567890"],
    &["SET k 007"],
    &["SET k hello"],
    &["SET k aaaaaaaaaaaaaaaaaaaaa"],
    &[
        "SET k aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ],
    &["SET k abcdefghijklmnopqrstuvwxyz0123456789"],
    &[
        "SET k abcabcabcabcabcabcabcabcxyzxyzxyzxyzxyzxyz-abcabcabcxyz-0123456789-0123456789-abcxyzabcxyz",
    ],
    &["APPEND k hello", "APPEND k 12"],
    // A HyperLogLog is a raw string where PFADD made it, and a short one restores as `embstr`.
    &["PFADD k a b c"],
    // Lists: one listpack node, with every integer width; more than one node.
    &[
        "RPUSH k a b c 1 -1 127 128 4095 -4096 40000 -8388608 8388608 2147483648 -9223372036854775808",
    ],
    &[
        "RPUSH k x",
        "LPUSH k y",
        "RPUSH k aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ],
    // Sets: intsets of each width.
    &["SADD k 3 1 2"],
    &["SADD k 3 1 70000"],
    &["SADD k -5 1 5000000000"],
    // Hashes and sorted sets in their listpacks; sorted sets as skiplists.
    &["HSET k f v n 12 big 123456789012 neg -3"],
    &["ZADD k 1 a 2.5 b -3 c 1e20 d 0.1 e 100000 f"],
    &[
        "ZADD k 1 a 2 b",
        "ZINCRBY k 0.5 a",
        "ZADD k inf top -inf bottom",
    ],
    &[
        "CONFIG SET zset-max-listpack-entries 2",
        "ZADD k 1 a 2.5 b -3 c 1e20 d",
    ],
];

/// Writes whose DUMP bytes Redis draws at random (hash tables): compared after a round trip.
const RANDOM_ORDER: &[&[&str]] = &[
    // A stream's pending entries and consumers carry delivery times, so the two clocks differ.
    &[
        "XADD k 1-1 f v",
        "XADD k 2-1 f v",
        "XGROUP CREATE k g 0",
        "XREADGROUP GROUP g c COUNT 1 STREAMS k >",
    ],
    // A node whose entries are all deleted: XTRIM MINID stops at the node's last ID, which XDEL
    // already marked, so Redis keeps the node with no live entry, and loads it back.
    &[
        "XADD k 1-1 f v",
        "XADD k 2-1 f v",
        "XADD k 3-1 f v",
        "XDEL k 3-1",
        "XTRIM k MINID 3-0",
    ],
    &["SADD k a b c 1"],
    &[
        "CONFIG SET hash-max-listpack-entries 2",
        "HSET k a 1 b 2 c 3",
    ],
];

fn run_setup(
    real: &mut raw::Real,
    engine: &mut Engine,
    client: fake_redis::ClientId,
    setup: &[&str],
) {
    for line in setup {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        real.call(&words);
        engine.execute(client, &to_argv(&words));
    }
}

/// Long values the table above cannot spell on one line.
fn long_list_lines() -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for i in 0..300 {
        lines.push(format!("element-{i:05}-{}", "z".repeat(i % 50)).into_bytes());
    }
    lines
}

/// `DUMP k` on both sides: None if the bytes are the same, else a line naming `what` was
/// written and both replies.
fn dump_mismatch(
    real: &mut raw::Real,
    engine: &mut Engine,
    client: fake_redis::ClientId,
    what: &str,
) -> Option<String> {
    let want = real.call(&[b"DUMP", b"k"]);
    let mut got = bytes::BytesMut::new();
    fake_redis::resp::encode(
        &engine.execute(client, &to_argv(&[b"DUMP", b"k"])),
        2,
        &mut got,
    );
    (got[..] != want[..]).then(|| format!("{what}\n  redis: {want:?}\n  fake:  {:?}", &got[..]))
}

#[test]
fn dump_gives_redis_s_bytes_after_the_same_writes() {
    let server = OwnServer::start();
    let mut real = raw::Real::connect(server.port);
    let mut mismatches = Vec::new();
    for setup in SETUPS {
        real.call(&[b"FLUSHALL"]);
        real.call(&[b"CONFIG", b"SET", b"zset-max-listpack-entries", b"128"]);
        let (mut engine, client) = engine();
        run_setup(&mut real, &mut engine, client, setup);
        mismatches.extend(dump_mismatch(
            &mut real,
            &mut engine,
            client,
            &format!("{setup:?}"),
        ));
    }
    // A list of several quicklist nodes, pushed at its tail.
    real.call(&[b"FLUSHALL"]);
    let (mut engine, client) = engine();
    for e in long_list_lines() {
        real.call(&[b"RPUSH", b"k", &e]);
        engine.execute(client, &to_argv(&[b"RPUSH", b"k", &e]));
    }
    mismatches.extend(dump_mismatch(&mut real, &mut engine, client, "long list"));
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// What reads a key's whole value back, by its type.
fn read_back(kind: &[u8]) -> &'static [&'static [u8]] {
    match kind {
        b"string" => &[b"GET", b"k"],
        b"list" => &[b"LRANGE", b"k", b"0", b"-1"],
        b"set" => &[b"SORT", b"k", b"ALPHA"],
        b"hash" => &[b"HGETALL", b"k"],
        b"stream" => &[b"XINFO", b"STREAM", b"k"],
        _ => &[b"ZRANGE", b"k", b"0", b"-1", b"WITHSCORES"],
    }
}

#[test]
fn redis_s_payloads_restore_on_the_fake_and_the_fake_s_on_redis() {
    let server = OwnServer::start();
    let mut real = raw::Real::connect(server.port);
    let mut mismatches = Vec::new();
    for setup in SETUPS.iter().chain(RANDOM_ORDER) {
        real.call(&[b"FLUSHALL"]);
        let (mut engine, client) = engine();
        run_setup(&mut real, &mut engine, client, setup);
        let payload = bulk_of(&real.call(&[b"DUMP", b"k"]));
        let kind = bulk_of_simple(&real.call(&[b"TYPE", b"k"]));
        let read = read_back(&kind);
        let want = real.call(read);
        engine.execute(client, &to_argv(&[b"DEL", b"k"]));
        let restored = engine.execute(client, &to_argv(&[b"RESTORE", b"k", b"0", &payload]));
        assert_eq!(restored, Frame::OK, "{setup:?}");
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&engine.execute(client, &to_argv(read)), 2, &mut got);
        // A value loaded from a payload is encoded anew (`tryObjectEncoding` for a string), not
        // as it was where it was dumped.
        let encoding: [&[u8]; 3] = [b"OBJECT", b"ENCODING", b"k"];
        let mut fake_encoding = bytes::BytesMut::new();
        fake_redis::resp::encode(
            &engine.execute(client, &to_argv(&encoding)),
            2,
            &mut fake_encoding,
        );
        if got[..] != want[..] {
            mismatches.push(format!(
                "{setup:?} on the fake\n  redis: {want:?}\n  fake:  {:?}",
                &got[..]
            ));
        }
        // And the fake's payload restores on Redis to the same value.
        let Frame::Bulk(ours) = engine.execute(client, &to_argv(&[b"DUMP", b"k"])) else {
            panic!("the fake dumps {setup:?}");
        };
        real.call(&[b"DEL", b"k"]);
        let reply = real.call(&[b"RESTORE", b"k", b"0", &ours]);
        assert_eq!(reply, b"+OK\r\n", "{setup:?}");
        let again = real.call(read);
        let real_encoding = real.call(&encoding);
        if fake_encoding[..] != real_encoding[..] {
            mismatches.push(format!(
                "{setup:?}: OBJECT ENCODING after RESTORE\n  redis: {real_encoding:?}\n  fake:  {:?}",
                &fake_encoding[..]
            ));
        }
        if unordered(&kind, &again) != unordered(&kind, &want) {
            mismatches.push(format!(
                "{setup:?} on redis\n  before: {want:?}\n  after:  {again:?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// A reply as a comparable value: a hash's field-value pairs sorted, since a hash table's
/// order is Redis's random draw; anything else as it came.
fn unordered(kind: &[u8], reply: &[u8]) -> Vec<Vec<u8>> {
    if kind != b"hash" {
        return vec![reply.to_vec()];
    }
    let mut buf = bytes::BytesMut::from(reply);
    let Ok(Some(Frame::Array(items))) = ReplyParser::new().parse(&mut buf) else {
        return vec![reply.to_vec()];
    };
    let mut pairs: Vec<Vec<u8>> = items
        .chunks(2)
        .map(|pair| format!("{pair:?}").into_bytes())
        .collect();
    pairs.sort();
    pairs
}

fn bulk_of_simple(reply: &[u8]) -> Vec<u8> {
    reply[1..reply.len() - 2].to_vec()
}

/// Redis's `crc64` (Jones, reflected), to forge payloads with a valid footer.
fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in bytes {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// `body` with version 10 and its CRC.
fn payload(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&[10, 0]);
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[test]
fn restore_s_options_and_errors_are_redis_s() {
    let server = OwnServer::start();
    let mut real = raw::Real::connect(server.port);
    let (mut engine, client) = engine();
    let good = payload(b"\x00\x03abc");
    let mut newer = good.clone();
    newer[5] = 11;
    let crc = crc64(&newer[..newer.len() - 8]);
    let at = newer.len() - 8;
    newer[at..].copy_from_slice(&crc.to_le_bytes());
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"k", b"0", &good],
        vec![b"GET", b"k"],
        vec![b"RESTORE", b"k", b"0", &good],
        vec![b"RESTORE", b"k", b"0", &good, b"REPLACE"],
        vec![b"RESTORE", b"k", b"x", &good, b"REPLACE"],
        vec![b"RESTORE", b"k", b"-1", &good, b"REPLACE"],
        vec![b"RESTORE", b"k", b"0", b"garbage", b"REPLACE"],
        vec![b"RESTORE", b"k", b"0", b"", b"REPLACE"],
        vec![b"RESTORE", b"k", b"0", &newer, b"REPLACE"],
        vec![b"RESTORE", b"k", b"0", &good, b"BOGUS"],
        vec![b"RESTORE", b"k", b"0", &good, b"IDLETIME"],
        vec![b"RESTORE", b"k", b"0", &good, b"IDLETIME", b"x"],
        vec![b"RESTORE", b"k", b"0", &good, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"k", b"0", &good, b"FREQ", b"256"],
        vec![b"RESTORE", b"k", b"0", &good, b"FREQ", b"-1"],
        vec![
            b"RESTORE",
            b"k",
            b"0",
            &good,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"1",
        ],
        vec![
            b"RESTORE",
            b"k",
            b"0",
            &good,
            b"IDLETIME",
            b"1",
            b"FREQ",
            b"1",
        ],
        vec![b"RESTORE", b"n", b"x", b"garbage"],
        vec![b"RESTORE", b"n", b"0", b"garbage", b"BOGUS"],
        vec![
            b"RESTORE",
            b"n",
            b"0",
            &good,
            b"REPLACE",
            b"IDLETIME",
            b"1000",
        ],
        vec![b"OBJECT", b"IDLETIME", b"n"],
        // Already expired: nothing is created, the old key is deleted under REPLACE.
        vec![b"RESTORE", b"gone", b"1", &good, b"ABSTTL"],
        vec![b"EXISTS", b"gone"],
        vec![b"RESTORE", b"k", b"1000", &good, b"REPLACE", b"ABSTTL"],
        vec![b"EXISTS", b"k"],
        vec![b"RESTORE", b"k", b"100000", &good],
        vec![b"TTL", b"k"],
        vec![b"RESTORE", b"k", b"9223372036854775807", &good, b"REPLACE"],
        vec![
            b"RESTORE",
            b"k",
            b"9223372036854775807",
            &good,
            b"REPLACE",
            b"ABSTTL",
        ],
        vec![b"EXISTS", b"k"],
        vec![b"RESTORE-ASKING", b"ra", b"0", &good],
        vec![b"GET", b"ra"],
        vec![b"DUMP", b"missing"],
        vec![b"DUMP"],
        vec![b"RESTORE", b"k", b"0"],
    ];
    let mut mismatches = Vec::new();
    for argv in &cases {
        let want = real.call(argv);
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&engine.execute(client, &to_argv(argv)), 2, &mut got);
        if got[..] != want[..] {
            mismatches.push(format!(
                "{:?}\n  redis: {:?}\n  fake:  {:?}",
                argv.iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>(),
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(&got)
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Payloads with a valid footer and a bad body: every one is `Bad data format` on both.
#[test]
fn malformed_bodies_are_bad_data_format_as_on_redis() {
    let server = OwnServer::start();
    let mut real = raw::Real::connect(server.port);
    let (mut engine, client) = engine();
    let bodies: &[&[u8]] = &[
        b"",
        b"\x00",
        b"\x00\x05abc",
        b"\x00\xc3\x05\x40abc",
        b"\x00\x80\xff\xff\xff\xff",
        b"\x02\x00",
        b"\x02\x02\x01a\x01a",
        b"\x04\x01\x01a",
        b"\x06",
        b"\x08",
        b"\x0b\x08\x02\x00\x00\x00\x00\x00\x00\x00",
        b"\x0b\x0a\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00",
        b"\x10\x07\x07\x00\x00\x00\x00\x00\xfe",
        b"\x12\x01\x07\x00",
        b"\x14",
    ];
    let mut mismatches = Vec::new();
    for body in bodies {
        let p = payload(body);
        let argv: Vec<&[u8]> = vec![b"RESTORE", b"bad", b"0", &p, b"REPLACE"];
        let want = real.call(&argv);
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&engine.execute(client, &to_argv(&argv)), 2, &mut got);
        if got[..] != want[..] {
            mismatches.push(format!(
                "{body:?}\n  redis: {:?}\n  fake:  {:?}",
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(&got)
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// A restore is a write: `WATCH` sees it, `restore` is notified, a blocked pop is served.
#[test]
fn restore_is_a_write_others_see() {
    let (mut engine, client) = engine();
    let list = {
        engine.execute(client, &to_argv(&[b"RPUSH", b"src", b"a", b"b"]));
        let Frame::Bulk(p) = engine.execute(client, &to_argv(&[b"DUMP", b"src"])) else {
            panic!("DUMP of a list");
        };
        p
    };
    let watcher = engine.connect();
    engine.execute(watcher, &to_argv(&[b"WATCH", b"q"]));
    engine.execute(watcher, &to_argv(&[b"MULTI"]));
    engine.execute(watcher, &to_argv(&[b"GET", b"x"]));
    engine.execute(
        client,
        &to_argv(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"KEg"]),
    );
    let listener = engine.connect();
    engine.execute(
        listener,
        &to_argv(&[b"SUBSCRIBE", b"__keyevent@0__:restore"]),
    );
    let popper = engine.connect();
    assert_eq!(
        engine.execute_or_block(popper, &to_argv(&[b"BLPOP", b"q", b"0"])),
        None
    );
    assert_eq!(
        engine.execute(client, &to_argv(&[b"RESTORE", b"q", b"0", &list])),
        Frame::OK
    );
    assert_eq!(
        engine.execute(watcher, &to_argv(&[b"EXEC"])),
        Frame::NullArray
    );
    let pushed = engine.drain_outbox(listener);
    assert!(
        pushed.iter().any(|f| format!("{f:?}").contains("restore")),
        "no restore event: {pushed:?}"
    );
    assert_eq!(
        engine.execute(client, &to_argv(&[b"LRANGE", b"q", b"0", b"-1"])),
        Frame::Array(vec![Frame::Bulk(Bytes::from_static(b"b"))])
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Mutated payloads, with their footer fixed so the body is parsed: never a panic, and a
    /// reply that is `OK` or Redis's error.
    #[test]
    fn mutated_payloads_never_panic(
        seed in 0usize..7,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let (mut engine, client) = engine();
        let setups: [&[&[u8]]; 7] = [
            &[b"SET", b"k", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbb"],
            &[b"RPUSH", b"k", b"a", b"1", b"-4000", b"123456789012", b"xxxxxxxxxxxxxxxxxxxxxxxxxx"],
            &[b"SADD", b"k", b"1", b"2", b"70000"],
            &[b"HSET", b"k", b"f", b"v", b"g", b"12"],
            &[b"ZADD", b"k", b"1", b"a", b"2.5", b"b"],
            &[b"SADD", b"k", b"a", b"b"],
            &[b"XADD", b"k", b"1-1", b"f", b"v", b"g", b"12"],
        ];
        engine.execute(client, &to_argv(setups[seed]));
        let Frame::Bulk(p) = engine.execute(client, &to_argv(&[b"DUMP", b"k"])) else {
            panic!("DUMP");
        };
        let mut body = p[..p.len() - 10].to_vec();
        for (at, b) in flips {
            let i = at.index(body.len());
            body[i] ^= b;
        }
        if truncate {
            body.truncate(cut.index(body.len() + 1));
        }
        let reply = engine.execute(client, &to_argv(&[b"RESTORE", b"r", b"0", &payload(&body), b"REPLACE"]));
        prop_assert!(
            reply == Frame::OK || reply == Frame::error("ERR Bad data format"),
            "{reply:?}"
        );
    }
}
