//! Mutated requests: valid RESP (and inline) requests, damaged by a seeded generator, sent to a
//! redis-server of the test's own and to the fake's TCP server, and the bytes that come back
//! compared.
//!
//! Invariant: for every case the fake answers with exactly Redis 7.0's bytes and then closes the
//! connection as Redis does. A case is a fresh connection to each server: the damaged bytes are
//! written at once, the write side is closed, and everything up to the server's close is read.
//! Both servers see the same cases in the same order, so their keyspaces stay equal as long as
//! their replies do.
//!
//! The damage is what a broken client or a hostile one sends: a byte replaced, inserted or
//! removed, a run of bytes cut or repeated, the request cut short, a length or number replaced
//! by one at an edge (negative, zero, past Redis's limits, not a number). The requests come from
//! commands whose replies do not depend on time, randomness or a connection's id, so any
//! difference is the fake's. A case that the damage turned into another command Redis knows
//! (one that could block, configure or stop a server) is left out and counted.
//!
//! `ADVERSARIAL_CASES` sets the number of cases (default 10,000), `ADVERSARIAL_SEED` the seed.

use crate::support;

use bytes::BytesMut;
use fake_redis::resp::RequestParser;
use fake_redis::server::{ClockChoice, RunningServer, Server, ServerConfig};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;
use support::OwnServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The requests the cases are made from, one command each, as its words (see `raw::words`).
const BASE: &[&[&str]] = &[
    &["SET k value"],
    &["GET k"],
    &["APPEND k abc"],
    &["STRLEN k"],
    &["GETRANGE k 0 -1"],
    &["SETRANGE k 2 xyz"],
    &["GETSET k w"],
    &["SETNX k2 v"],
    &["INCR n"],
    &["INCRBY n 5"],
    &["DECRBY n 7"],
    &["INCRBYFLOAT f 1.5"],
    &["MSET a 1 b 2"],
    &["MGET a b c"],
    &["DEL a"],
    &["EXISTS a b"],
    &["TYPE k"],
    &["HSET h f v g w"],
    &["HGET h f"],
    &["HINCRBY h c 1"],
    &["HINCRBYFLOAT h d 0.25"],
    &["HMGET h f c x"],
    &["HDEL h g"],
    &["HLEN h"],
    &["HEXISTS h f"],
    &["RPUSH l a b c"],
    &["LPUSH l z"],
    &["LRANGE l 0 -1"],
    &["LINDEX l 1"],
    &["LLEN l"],
    &["LSET l 0 y"],
    &["LPOP l"],
    &["ZADD z 1 a 2.5 b"],
    &["ZRANGE z 0 -1 WITHSCORES"],
    &["ZSCORE z a"],
    &["ZINCRBY z 2 a"],
    &["ZCOUNT z -inf +inf"],
    &["ZRANGEBYSCORE z (1 5 LIMIT 0 2"],
    &["ZRANK z b"],
    &["SADD s 1 2 3"],
    &["SISMEMBER s 2"],
    &["SCARD s"],
    &["ECHO hello"],
    &["PING"],
    &["PING there"],
    &["SELECT 1"],
    &["SELECT 0"],
    &["MULTI"],
    &["EXEC"],
    &["EVAL", "return redis.call('GET', KEYS[1])", "1", "k"],
    &[
        "EVAL",
        "return {ARGV[1], tonumber(ARGV[2])}",
        "0",
        "x",
        "12",
    ],
];

/// Numbers at the edges of what Redis reads: lengths, counts, indexes and values.
const EDGE_NUMBERS: &[&str] = &[
    "-1",
    "0",
    "-0",
    "1",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "536870912",
    "536870913",
    "65536",
    "1048577",
    "99999999999999999999",
    "1e3",
    "0x10",
    " 1",
    "",
    "+1",
    "01",
];

/// Bytes that mean something to a RESP or inline parser.
const EDGE_BYTES: &[u8] = b"\r\n*$+-:0123456789 \t\"'\\\0\xff";

/// A seeded generator (splitmix64): the same seed gives the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn byte(&mut self) -> u8 {
        if self.below(2) == 0 {
            EDGE_BYTES[self.below(EDGE_BYTES.len())]
        } else {
            self.next() as u8
        }
    }
}

/// A request in RESP's multibulk form.
fn multibulk(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// A request in the inline form, an argument quoted when it holds a space or a quote.
fn inline(args: &[&str]) -> Vec<u8> {
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            if a.contains([' ', '\'', '"']) {
                format!("\"{}\"", a.replace('"', "\\\""))
            } else {
                (*a).to_owned()
            }
        })
        .collect();
    format!("{}\r\n", words.join(" ")).into_bytes()
}

/// One to four base requests, then one to three kinds of damage.
fn case(rng: &mut Rng) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let args = support::raw::words(BASE[rng.below(BASE.len())]);
        if rng.below(5) == 0 {
            bytes.extend(inline(&args));
        } else {
            bytes.extend(multibulk(&args));
        }
    }
    for _ in 0..1 + rng.below(3) {
        damage(rng, &mut bytes);
    }
    bytes
}

fn damage(rng: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        bytes.push(rng.byte());
        return;
    }
    let at = rng.below(bytes.len());
    match rng.below(7) {
        0 => bytes[at] = rng.byte(),
        1 => bytes.insert(at, rng.byte()),
        2 => {
            bytes.remove(at);
        }
        3 => {
            let end = (at + 1 + rng.below(8)).min(bytes.len());
            bytes.drain(at..end);
        }
        4 => {
            let end = (at + 1 + rng.below(16)).min(bytes.len());
            let run = bytes[at..end].to_vec();
            bytes.splice(end..end, run);
        }
        5 => bytes.truncate(at),
        _ => {
            // The run of digits (with its sign) around or after `at`, replaced by an edge number.
            let Some(start) = (at..bytes.len()).find(|&i| bytes[i].is_ascii_digit()) else {
                bytes[at] = rng.byte();
                return;
            };
            let mut from = start;
            if from > 0 && bytes[from - 1] == b'-' {
                from -= 1;
            }
            let end = (start..bytes.len())
                .find(|&i| !bytes[i].is_ascii_digit())
                .unwrap_or(bytes.len());
            let number = EDGE_NUMBERS[rng.below(EDGE_NUMBERS.len())];
            bytes.splice(from..end, number.bytes());
        }
    }
}

/// The commands a case may run: those of the base requests. A case whose damage made another
/// command Redis knows is left out; an unknown name is kept (its error is compared).
fn runs_only_known_safe(bytes: &[u8], known: &BTreeSet<Vec<u8>>) -> bool {
    let allowed: BTreeSet<Vec<u8>> = BASE
        .iter()
        .map(|args| support::raw::words(args)[0].as_bytes().to_ascii_lowercase())
        .collect();
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::from(bytes);
    while let Ok(Some(argv)) = parser.parse(&mut buf) {
        let Some(name) = argv.first() else { continue };
        let name = name.to_ascii_lowercase();
        if known.contains(&name) && !allowed.contains(&name) {
            return false;
        }
    }
    true
}

/// What a server sent back before it closed the connection.
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .write_all(bytes)
        .await
        .map_err(|e| format!("write: {e}"))?;
    stream
        .shutdown()
        .await
        .map_err(|e| format!("shutdown: {e}"))?;
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    match read {
        Err(_) => Err(format!(
            "no close within 10 s, after {}",
            out.escape_ascii()
        )),
        // A reset after the replies: what came before it is the answer.
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(out),
        Ok(Err(e)) => Err(format!("read: {e}")),
        Ok(Ok(_)) => Ok(out),
    }
}

/// The command names a server knows, lowercased.
async fn known_commands(addr: SocketAddr) -> BTreeSet<Vec<u8>> {
    let reply = exchange(addr, b"COMMAND LIST\r\n")
        .await
        .expect("COMMAND LIST");
    let mut names = BTreeSet::new();
    let mut lines = reply.split(|&b| b == b'\n').skip(1);
    while let Some(header) = lines.next() {
        if header.starts_with(b"$")
            && let Some(name) = lines.next()
        {
            names.insert(
                name.strip_suffix(b"\r")
                    .unwrap_or(name)
                    .to_ascii_lowercase(),
            );
        }
    }
    names
}

async fn start_fake() -> RunningServer {
    Server::start(ServerConfig {
        port: 0,
        clock: ClockChoice::System,
        ..ServerConfig::default()
    })
    .await
    .expect("the fake listens")
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn mutated_requests_get_redis_s_bytes_and_close() {
    let cases = env_or("ADVERSARIAL_CASES", 10_000);
    let seed = env_or("ADVERSARIAL_SEED", 0x005e_ed17);
    let real = OwnServer::start();
    let real: SocketAddr = format!("127.0.0.1:{}", real.port).parse().unwrap();
    let fake = start_fake().await;
    let fake_addr = fake.local_addr();

    let mut known = known_commands(real).await;
    known.extend(known_commands(fake_addr).await);
    assert!(known.len() > 200, "COMMAND LIST gave {} names", known.len());

    let mut rng = Rng(seed);
    let (mut ran, mut left_out, mut closed_early) = (0, 0, 0);
    let mut differences = Vec::new();
    for i in 0..cases {
        let bytes = case(&mut rng);
        if !runs_only_known_safe(&bytes, &known) {
            left_out += 1;
            continue;
        }
        ran += 1;
        let want = exchange(real, &bytes).await;
        let got = exchange(fake_addr, &bytes).await;
        if want
            .as_ref()
            .is_ok_and(|w| w.starts_with(b"-ERR Protocol error"))
        {
            closed_early += 1;
        }
        if want != got {
            differences.push(format!(
                "case {i} (seed {seed:#x}): {}\n  redis: {}\n  fake:  {}",
                bytes.escape_ascii(),
                describe(&want),
                describe(&got)
            ));
        }
    }
    println!(
        "{ran} cases compared ({closed_early} refused as protocol errors), {left_out} left out \
         as other commands, {} differences",
        differences.len()
    );
    assert!(ran * 10 >= cases * 9, "most cases run ({ran} of {cases})");
    assert!(
        closed_early > 0,
        "some damage reaches the protocol's errors"
    );
    differences.truncate(20);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

fn describe(reply: &Result<Vec<u8>, String>) -> String {
    match reply {
        Ok(bytes) => bytes.escape_ascii().to_string(),
        Err(e) => format!("<{e}>"),
    }
}

#[test]
fn the_same_seed_makes_the_same_cases() {
    let mut a = Rng(7);
    let mut b = Rng(7);
    let first: Vec<Vec<u8>> = (0..50).map(|_| case(&mut a)).collect();
    let second: Vec<Vec<u8>> = (0..50).map(|_| case(&mut b)).collect();
    assert_eq!(first, second);
    assert!(first.iter().any(|c| c.starts_with(b"*")));
    assert!(first.iter().any(|c| !c.starts_with(b"*")));
}
