//! Byte-exact replies: the same raw requests sent to a redis-server of the test's own and to the
//! fake's TCP server, compared byte for byte, for the cases where the text itself is the point:
//! errors that echo a client's bytes, transactions refused before they run, `WATCH` around writes
//! that change nothing, and `KEYS` over Redis's glob rules.
//!
//! Invariant: for each case the fake's reply bytes equal Redis 7.0's. Every case runs on fresh
//! connections of both servers; the keys it writes live on servers of the test's own.

use crate::support;

use bytes::BytesMut;
use fake_redis::resp::ReplyParser;
use fake_redis::server::{ClockChoice, RunningServer, Server, ServerConfig};
use std::net::SocketAddr;
use support::OwnServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One connection that sends raw bytes and reads back whole replies, as bytes.
struct Raw {
    stream: TcpStream,
    received: BytesMut,
    parser: ReplyParser,
}

impl Raw {
    /// Connects to `addr`, waiting for a server that was just started to listen (up to 10 s).
    async fn connect(addr: SocketAddr) -> Raw {
        let mut tries = 0;
        let stream = loop {
            match TcpStream::connect(addr).await {
                Ok(stream) => break stream,
                Err(_) if tries < 400 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                Err(e) => panic!("cannot connect to {addr}: {e}"),
            }
        };
        Raw {
            stream,
            received: BytesMut::new(),
            parser: ReplyParser::new(),
        }
    }

    /// Sends `request` and returns the bytes of the next `replies` replies.
    async fn send(&mut self, request: &[u8], replies: usize) -> Vec<u8> {
        self.stream.write_all(request).await.expect("writes");
        let mut out = Vec::new();
        for _ in 0..replies {
            loop {
                let before = self.received.clone();
                if self
                    .parser
                    .parse(&mut self.received)
                    .expect("RESP")
                    .is_some()
                {
                    out.extend_from_slice(&before[..before.len() - self.received.len()]);
                    break;
                }
                let mut chunk = [0u8; 4096];
                let read = tokio::time::timeout(
                    std::time::Duration::from_secs(10),
                    self.stream.read(&mut chunk),
                )
                .await
                .expect("a reply within 10 s")
                .expect("reads");
                assert!(read > 0, "closed before the reply; got {:?}", show(&out));
                self.received.extend_from_slice(&chunk[..read]);
            }
        }
        out
    }
}

fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// A request in RESP's multibulk form, each argument as given (any bytes).
fn request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Both servers: Redis of the test's own and the fake, with the same password (if any).
struct Pair {
    _real: OwnServer,
    real: SocketAddr,
    fake: RunningServer,
}

impl Pair {
    async fn start(password: Option<&str>) -> Pair {
        let mut extra = Vec::new();
        if let Some(pw) = password {
            extra = vec!["--requirepass".to_owned(), pw.to_owned()];
        }
        let real = OwnServer::start_with(&extra);
        let real_addr: SocketAddr = format!("127.0.0.1:{}", real.port).parse().unwrap();
        // Wait for it to listen.
        for _ in 0..100 {
            if TcpStream::connect(real_addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let fake = Server::start(ServerConfig {
            port: 0,
            clock: ClockChoice::System,
            requirepass: password.map(|p| bytes::Bytes::copy_from_slice(p.as_bytes())),
            ..ServerConfig::default()
        })
        .await
        .expect("the fake listens");
        Pair {
            _real: real,
            real: real_addr,
            fake,
        }
    }

    /// Runs `steps` (connection index, request, replies expected) on `connections` fresh
    /// connections of each server; the mismatching steps, described.
    async fn differ(
        &self,
        name: &str,
        connections: usize,
        steps: &[(usize, Vec<u8>, usize)],
    ) -> Vec<String> {
        let mut real = Vec::new();
        let mut fake = Vec::new();
        for _ in 0..connections {
            real.push(Raw::connect(self.real).await);
            fake.push(Raw::connect(self.fake.local_addr()).await);
        }
        let mut out = Vec::new();
        for (conn, req, replies) in steps {
            let want = real[*conn].send(req, *replies).await;
            let got = fake[*conn].send(req, *replies).await;
            if want != got {
                out.push(format!(
                    "{name}: {}\n  redis: {}\n  fake:  {}",
                    show(req),
                    show(&want),
                    show(&got)
                ));
            }
        }
        out
    }
}

/// Steps on one connection, each one request with one reply.
fn one_by_one(requests: &[Vec<u8>]) -> Vec<(usize, Vec<u8>, usize)> {
    requests.iter().map(|r| (0, r.clone(), 1)).collect()
}

#[tokio::test]
async fn refused_transactions_abort_as_redis_aborts_them() {
    let pair = Pair::start(Some("pw")).await;
    let mut failures = Vec::new();
    failures.extend(
        pair.differ(
            "unauthenticated",
            1,
            &one_by_one(&[
                request(&[b"EXEC"]),
                request(&[b"EXEC", b"x"]),
                request(&[b"MULTI"]),
                request(&[b"AUTH", b"pw"]),
                request(&[b"MULTI"]),
                request(&[b"EXEC", b"x"]),
                request(&[b"EXEC"]),
            ]),
        )
        .await,
    );
    failures.extend(
        pair.differ(
            "subscribed",
            1,
            &[
                (0, request(&[b"AUTH", b"pw"]), 1),
                (0, request(&[b"SUBSCRIBE", b"ch"]), 1),
                (0, request(&[b"EXEC"]), 1),
                (0, request(&[b"MULTI"]), 1),
                (0, request(&[b"UNSUBSCRIBE"]), 1),
                (0, request(&[b"EXEC"]), 1),
            ],
        )
        .await,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn writes_that_change_nothing_leave_watchers_alone() {
    let pair = Pair::start(None).await;
    let setup: &[&[&[u8]]] = &[
        &[b"FLUSHALL"],
        &[b"SADD", b"s", b"a"],
        &[b"SADD", b"src", b"a"],
        &[b"ZADD", b"z", b"1", b"a"],
        &[b"SADD", b"other", b"b"],
    ];
    let writes: &[&[&[u8]]] = &[
        &[b"SADD", b"s", b"a"],
        &[b"ZADD", b"z", b"1", b"a"],
        &[b"ZADD", b"z", b"NX", b"2", b"a"],
        &[b"ZADD", b"z", b"XX", b"2", b"b"],
        &[b"ZADD", b"z", b"GT", b"0", b"a"],
        &[b"SMOVE", b"src", b"s", b"a"],
        &[b"SINTERSTORE", b"absent", b"other", b"nosuch"],
        &[b"SUNIONSTORE", b"absent", b"nosuch"],
        &[b"SDIFFSTORE", b"absent", b"other", b"other"],
        &[b"SREM", b"s", b"nosuch"],
        &[b"ZREM", b"z", b"nosuch"],
        // Writes that do change the key: the transaction must abort on both.
        &[b"SADD", b"s", b"new"],
        &[b"ZADD", b"z", b"5", b"a"],
        &[b"SINTERSTORE", b"s", b"other", b"nosuch"],
    ];
    let mut failures = Vec::new();
    for write in writes {
        let watched = match write[0] {
            b"SMOVE" => write[2],
            _ => write[1],
        };
        let mut steps: Vec<(usize, Vec<u8>, usize)> =
            setup.iter().map(|r| (1, request(r), 1)).collect();
        steps.extend([
            (0, request(&[b"WATCH", watched]), 1),
            (1, request(write), 1),
            (0, request(&[b"MULTI"]), 1),
            (0, request(&[b"PING"]), 1),
            (0, request(&[b"EXEC"]), 1),
        ]);
        let name = String::from_utf8_lossy(&write.join(&b' ')).into_owned();
        failures.extend(pair.differ(&name, 2, &steps).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A reply's frame with the elements of a top-level array sorted (`KEYS` is unordered).
fn sorted_frame(bytes: &[u8]) -> fake_redis::resp::Frame {
    use fake_redis::resp::Frame;
    let mut buf = BytesMut::from(bytes);
    match ReplyParser::new()
        .parse(&mut buf)
        .expect("RESP")
        .expect("one reply")
    {
        Frame::Array(mut items) => {
            items.sort_by_key(|i| format!("{i:?}"));
            Frame::Array(items)
        }
        other => other,
    }
}

#[tokio::test]
async fn random_globs_select_the_keys_redis_selects() {
    const ALPHABET: &[u8] = b"ab-]^[\\*?\xff\x80";
    let pair = Pair::start(None).await;
    let mut real = Raw::connect(pair.real).await;
    let mut fake = Raw::connect(pair.fake.local_addr()).await;
    let mut keys: Vec<Vec<u8>> = ALPHABET.iter().map(|&c| vec![c]).collect();
    for &a in ALPHABET {
        for &b in ALPHABET {
            keys.push(vec![a, b]);
        }
    }
    keys.push(vec![b'a'; 40]);
    let mut setup = request(&[b"FLUSHALL"]);
    for k in &keys {
        setup.extend(request(&[b"SET", k, b"1"]));
    }
    real.send(&setup, keys.len() + 1).await;
    fake.send(&setup, keys.len() + 1).await;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut patterns: Vec<Vec<u8>> = [
        &b"[a-]"[..],
        b"[^a-]",
        b"[]-a]",
        b"[\\-]",
        b"[a-\xff]",
        b"[\xff-a]",
        b"[",
        b"[^",
        b"a\\",
        b"*\\",
        b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
    ]
    .iter()
    .map(|p| p.to_vec())
    .collect();
    for _ in 0..400 {
        let len = 1 + (next() % 6) as usize;
        patterns.push(
            (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect(),
        );
    }
    let mut failures = Vec::new();
    for pattern in &patterns {
        let req = request(&[b"KEYS", pattern]);
        let want = sorted_frame(&real.send(&req, 1).await);
        let got = sorted_frame(&fake.send(&req, 1).await);
        if want != got {
            failures.push(format!(
                "KEYS {}\n  redis: {want}\n  fake:  {got}",
                show(pattern)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} patterns differ:\n{}",
        failures.len(),
        patterns.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn no_command_grows_a_string_past_512_mib() {
    let pair = Pair::start(None).await;
    let failures = pair
        .differ(
            "512 MiB",
            1,
            &one_by_one(&[
                request(&[b"SETRANGE", b"big", b"536870911", b"x"]),
                request(&[b"APPEND", b"big", b"yy"]),
                request(&[b"APPEND", b"big", b""]),
                request(&[b"SETRANGE", b"big", b"536870911", b"yy"]),
                request(&[b"STRLEN", b"big"]),
                request(&[b"DEL", b"big"]),
            ]),
        )
        .await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn the_smaller_divergences_found_by_mutation_are_gone() {
    let pair = Pair::start(None).await;
    let failures = pair
        .differ(
            "mutation",
            1,
            &one_by_one(&[
                request(&[b"FLUSHALL"]),
                request(&[b"ZADD", b"z", b"0", b"a", b"1", b"b", b"2", b"c"]),
                request(&[b"ZCOUNT", b"z", b"", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b" 1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"(", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"-inf", b"("]),
                request(&[b"ZCOUNT", b"z", b"0x1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"0x.8p1", b"0X1.8P0"]),
                request(&[b"ZCOUNT", b"z", b"-0x10", b"(0x2"]),
                request(&[b"ZCOUNT", b"z", b"0x", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"0xg", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"0x1p", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b" +0x1p-1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"--1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"+-1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"1e400", b".5"]),
                request(&[b"ZCOUNT", b"z", b" ", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"1 ", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"\t(1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"(\t1", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"nan", b"+inf"]),
                request(&[b"ZCOUNT", b"z", b"-Infinity", b"INF"]),
                request(&[b"ZRANGEBYSCORE", b"z", b"", b"( 2"]),
                request(&[b"ZREVRANGEBYSCORE", b"z", b"(", b""]),
                request(&[b"ZREMRANGEBYSCORE", b"nosuch", b"", b"("]),
                request(&[b"SSCAN", b"nosuch", b""]),
                request(&[b"SSCAN", b"nosuch", b" 0"]),
                request(&[b"SCAN", b""]),
                request(&[b"HSCAN", b"nosuch", b""]),
                request(&[b"ZSCAN", b"z", b""]),
                request(&[b"SET", b"s", b"v"]),
                request(&[b"HSCAN", b"s", b"0", b"COUNT", b"0"]),
                request(&[b"HSCAN", b"s", b"0", b"BOGUS"]),
                request(&[b"SSCAN", b"s", b"0", b"MATCH"]),
                request(&[b"ZSCAN", b"s", b"0", b"COUNT", b"x"]),
                request(&[b"HSCAN", b"s", b"x"]),
                request(&[b"HSCAN", b"nosuch", b"0", b"BOGUS"]),
                request(&[b"WAIT", b"0", b"0"]),
                request(&[b"WAIT", b"1", b"100"]),
                // A score, a coordinate and a float increment are read as C's strtod reads them.
                request(&[
                    b"ZADD", b"zh", b"0x10", b"a", b"0x10.5", b"b", b"-0x1P2", b"c",
                ]),
                request(&[b"ZADD", b"zh", b"0xep1", b"d", b"0x0p5", b"e"]),
                request(&[b"ZADD", b"zh", b"0x1p-99999", b"f"]),
                request(&[b"ZADD", b"zh", b"0x1p99999", b"f"]),
                request(&[b"ZADD", b"zh", b"0x", b"f"]),
                request(&[b"ZADD", b"zh", b" 0x1", b"f"]),
                request(&[b"ZADD", b"zh", b"", b"f"]),
                request(&[b"ZINCRBY", b"zh", b"0x.8", b"a"]),
                request(&[b"ZADD", b"zh", b"INCR", b"0x2", b"b"]),
                request(&[b"ZRANGE", b"zh", b"0", b"-1", b"WITHSCORES"]),
                request(&[b"INCRBYFLOAT", b"xf", b"0x10"]),
                request(&[b"HINCRBYFLOAT", b"hf", b"a", b"0x1p1"]),
                request(&[b"GEOADD", b"geo", b"0x1", b"0x1", b"m"]),
                request(&[b"GEOPOS", b"geo", b"m"]),
                request(&[b"BLPOP", b"nosuch", b"0x0.1"]),
                // A Lua number past 64 bits becomes the integer C's cast makes of it.
                request(&[
                    b"EVAL",
                    b"return tonumber(ARGV[1])",
                    b"0",
                    b"9223372036854775808",
                ]),
                request(&[b"EVAL", b"return tonumber(ARGV[1])", b"0", b"-1e300"]),
                request(&[b"EVAL", b"return 0/0", b"0"]),
                request(&[b"EVAL", b"return -9223372036854775808", b"0"]),
                request(&[b"EVAL", b"return {1e19, -2.9}", b"0"]),
                // A database index is read as a 32-bit integer.
                request(&[b"SELECT", b"-2147483649"]),
                request(&[b"SELECT", b"2147483648"]),
                request(&[b"SELECT", b"99"]),
                request(&[b"MOVE", b"s", b"2147483648"]),
                request(&[b"COPY", b"s", b"t", b"DB", b"-2147483649"]),
                request(&[b"SWAPDB", b"0", b"2147483648"]),
                request(&[b"SWAPDB", b"-2147483649", b"0"]),
                // A syntax error names the offending token in the script's own bytes.
                request(&[b"EVAL", b"return \xc1", b"0"]),
                request(&[b"EVAL", b"return {ARGV[1\x87}", b"0"]),
                request(&[b"SCRIPT", b"LOAD", b"x = \xff\xfe"]),
            ]),
        )
        .await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn errors_echo_the_client_s_bytes_as_they_came() {
    let pair = Pair::start(None).await;
    let long = [b'\xe9'; 200];
    let failures = pair
        .differ(
            "echo",
            1,
            &one_by_one(&[
                request(&[b"FOO\xff"]),
                request(&[b"FOO", b"a\xff", b"\xc3"]),
                request(&[b"FO\x00O\xff", b"x"]),
                request(&[b"FOO", b"a\x00b", b"c"]),
                request(&[b"FOO\r\nBAR", b"\r\n"]),
                request(&[&long, &long]),
                request(&[b"FOO", b"\xe9\xe9", &long]),
                request(&[b"CLIENT", b"x\x00\xff", b"z"]),
                request(&[b"CLIENT", b"\xff\xfe"]),
                request(&[b"SCRIPT", &long]),
                request(&[b"PUBSUB", b"\xffx"]),
                request(&[b"HELLO", b"3", b"\xffopt"]),
                request(&[b"SET", b"k", b"v"]),
                request(&[b"EXPIRE", b"k", b"10", b"\xffNX"]),
                request(&[b"EXPIRE", b"k", b"10", b"N\x00X"]),
            ]),
        )
        .await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn float_increments_compute_and_print_as_redis_s_long_double() {
    let pair = Pair::start(None).await;
    let mut requests = vec![
        request(&[b"FLUSHALL"]),
        request(&[b"INCRBYFLOAT", b"foo", b"0.024390243902439025"]),
        request(&[b"INCRBYFLOAT", b"foo", b"-0.024390243902439025"]),
        request(&[b"INCRBYFLOAT", b"x", b"123456789.123456789"]),
        request(&[b"SET", b"big", b"9223372036854775807"]),
        request(&[b"INCRBYFLOAT", b"big", b"0"]),
        request(&[b"INCRBYFLOAT", b"max", b"1.7976931348623157e308"]),
        request(&[b"INCRBYFLOAT", b"max", b"1.7976931348623157e308"]),
        request(&[b"HINCRBYFLOAT", b"h", b"f", b"1e309"]),
        request(&[b"HINCRBYFLOAT", b"h", b"f", b"-1e309"]),
        request(&[b"HINCRBYFLOAT", b"h", b"f", b"inf"]),
        request(&[b"INCRBYFLOAT", b"x", b"-inf"]),
        request(&[b"INCRBYFLOAT", b"x", b"nan"]),
        request(&[b"INCRBYFLOAT", b"x", b"0x1p-3"]),
        request(&[b"INCRBYFLOAT", b"x", b" 1"]),
        request(&[b"INCRBYFLOAT", b"x", b"1e-5000"]),
        request(&[b"INCRBYFLOAT", b"x", b"1e4932"]),
        request(&[b"INCRBYFLOAT", b"x", b"1e4931"]),
        request(&[b"INCRBYFLOAT", b"tiny", b"1e-4940"]),
        request(&[b"INCRBYFLOAT", b"tiny", b"3.6e-4951"]),
        request(&[b"SET", b"s", b"inf"]),
        request(&[b"INCRBYFLOAT", b"s", b"1"]),
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..600 {
        let digits: String = (0..1 + next() % 25)
            .map(|_| char::from(b'0' + (next() % 10) as u8))
            .collect();
        let point = (next() % (digits.len() as u64 + 1)) as usize;
        let sign = if next() % 2 == 0 { "-" } else { "" };
        let exp = match next() % 4 {
            0 => String::new(),
            _ => format!("e{}", (next() % 80) as i64 - 40),
        };
        let number = format!("{sign}{}.{}{exp}", &digits[..point], &digits[point..]);
        let key = format!("k{}", i % 7);
        if i % 3 == 0 {
            requests.push(request(&[
                b"HINCRBYFLOAT",
                b"hf",
                key.as_bytes(),
                number.as_bytes(),
            ]));
        } else {
            requests.push(request(&[
                b"INCRBYFLOAT",
                key.as_bytes(),
                number.as_bytes(),
            ]));
        }
    }
    let failures = pair.differ("float", 1, &one_by_one(&requests)).await;
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
