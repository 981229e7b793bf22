//! Random blocking cases, byte for byte against a redis-server of the test's own, in RESP2 and
//! RESP3: keys set up, one or two clients blocked on a random blocking command (every one Redis
//! 7.0 has: the list and sorted-set pops, `BLMOVE`, `BRPOPLPUSH`, the `*MPOP`s, `XREAD` and
//! `XREADGROUP` with `BLOCK`), then a third connection's random writes (pushes of every kind, to
//! the awaited key or another, of its type or not, inside `MULTI` or a script, renames onto it,
//! deletions, `CLIENT UNBLOCK`), then what the keys hold.
//!
//! Invariant: every reply, the blocked clients' included, is Redis's, byte for byte, and so is
//! who is served, in which order, with what, and what the keys keep.
//!
//! The fake's side is the engine on a manual clock, driven by hand, as the simulator drives it:
//! nothing on it depends on timing. A client still blocked once the writes are done is ended by
//! `CLIENT UNBLOCK` (as `TIMEOUT` or `ERROR`), on both sides. A few cases instead let a short
//! timeout fire: on Redis the test waits for it, on the fake the clock is moved past it.
//!
//! `CONFORMANCE_CASES` sets the number of cases (default 400 in RESP2, 200 in RESP3).

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::encode;
use fake_redis::{ClientId, Engine, ManualClock};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::cell::RefCell;
use std::time::{Duration, Instant};
use support::OwnServer;
use support::raw::Real;

/// The keys the blocked clients wait on, and where the moves put what they pop.
const KEYS: &[&str] = &["b1", "b2"];
const DEST: &str = "d";
/// A timeout that fires within a case (seconds, and milliseconds for `XREAD`).
const SHORT_S: &str = "0.02";
const SHORT_MS: &str = "20";

fn pick(words: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop::sample::select(words).prop_map(str::to_owned)
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

/// A command that writes (or fails to) on the keys the blocked clients wait on.
fn write() -> impl Strategy<Value = Vec<String>> {
    let k = || pick(KEYS);
    let v = || pick(&["a", "b", "c", "1"]);
    // Pushes of each kind come most often, so that blocked clients are served as often as not.
    prop_oneof![
        4 => (pick(&["RPUSH", "LPUSH", "LPUSHX"]), k(), prop::collection::vec(v(), 1..4)).prop_map(
            |(c, k, vs)| {
                let mut l = vec![c, k];
                l.extend(vs);
                l
            }
        ),
        3 => (
            k(),
            prop::collection::vec((pick(&["1", "2.5", "-1", "inf"]), v()), 1..3)
        )
            .prop_map(|(k, pairs)| {
                let mut l = words(&format!("ZADD {k}"));
                for (s, m) in pairs {
                    l.extend([s, m]);
                }
                l
            }),
        3 => (k(), pick(&["1-1", "2-0", "2-1", "3-5", "0-1"]), v())
            .prop_map(|(k, id, v)| words(&format!("XADD {k} {id} f {v}"))),
        1 => (k(), pick(&["$", "0"]))
            .prop_map(|(k, id)| words(&format!("XGROUP CREATE {k} g {id} MKSTREAM"))),
        1 => (pick(&["DEL", "LPOP", "TYPE"]), k()).prop_map(|(c, k)| vec![c, k]),
        1 => (k(), v()).prop_map(|(k, v)| words(&format!("SET {k} {v}"))),
        1 => (k(), k()).prop_map(|(a, b)| words(&format!("RENAME {a} {b}"))),
        1 => (k(), k()).prop_map(|(a, b)| words(&format!("LMOVE {a} {b} LEFT RIGHT"))),
        1 => (k(), v()).prop_map(|(k, v)| {
            vec![
                "EVAL".to_owned(),
                "redis.call('RPUSH', KEYS[1], ARGV[1]); return redis.call('LPUSH', KEYS[1], ARGV[1])"
                    .to_owned(),
                "1".to_owned(),
                k,
                v,
            ]
        }),
        1 => (k(), pick(&["0", "-1"])).prop_map(|(k, t)| words(&format!("EXPIRE {k} {t}"))),
        // Blocking commands where they do not block: answered at once from a script.
        1 => k().prop_map(|k| {
            vec![
                "EVAL".to_owned(),
                "return redis.call('BLMPOP', 0, 1, KEYS[1], 'LEFT')".to_owned(),
                "1".to_owned(),
                k,
            ]
        }),
        1 => (pick(&["B1", "B2"]), pick(&["", "TIMEOUT", "ERROR"])).prop_map(|(who, how)| {
            let mut l = words(&format!("CLIENT UNBLOCK {who}"));
            if !how.is_empty() {
                l.push(how)
            }
            l
        }),
    ]
}

/// One step of the writer: a command, or a transaction of some (blocking ones among them, which
/// answer at once inside `MULTI`).
fn writer_step() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop_oneof![
        6 => write().prop_map(|w| vec![w]),
        1 => prop::collection::vec(
            prop_oneof![3 => write(), 1 => blocking(false)],
            1..4
        )
        .prop_map(|cmds| {
            let mut l = vec![words("MULTI")];
            l.extend(cmds);
            l.push(words("EXEC"));
            l
        }),
    ]
}

/// A blocking command; `short` gives it a timeout that fires within the case, otherwise one that
/// never does (0, forever, or one far away).
fn blocking(short: bool) -> impl Strategy<Value = Vec<String>> {
    let seconds = if short {
        pick(&[SHORT_S]).boxed()
    } else {
        pick(&["0", "0", "0", "0", "300", "-1", "x"]).boxed()
    };
    let millis = if short {
        pick(&[SHORT_MS]).boxed()
    } else {
        pick(&["0", "0", "0", "300000", "-1"]).boxed()
    };
    let k = || pick(KEYS);
    prop_oneof![
        (
            pick(&["BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX"]),
            k(),
            any::<bool>(),
            seconds.clone()
        )
            .prop_map(|(c, k, both, t)| {
                let mut l = vec![c, k.clone()];
                if both {
                    l.push(if k == "b1" { "b2" } else { "b1" }.to_owned());
                }
                l.push(t);
                l
            }),
        (k(), seconds.clone()).prop_map(|(k, t)| words(&format!("BRPOPLPUSH {k} {DEST} {t}"))),
        (
            k(),
            pick(&["LEFT", "RIGHT"]),
            pick(&["LEFT", "RIGHT"]),
            seconds.clone()
        )
            .prop_map(|(k, a, b, t)| words(&format!("BLMOVE {k} {DEST} {a} {b} {t}"))),
        (
            pick(&["BLMPOP", "BZMPOP"]),
            any::<bool>(),
            pick(&["", "COUNT 2", "COUNT 0"]),
            seconds
        )
            .prop_map(|(c, both, count, t)| {
                let side = if c == "BLMPOP" { "LEFT" } else { "MAX" };
                let keys = if both { "2 b2 b1" } else { "1 b1" };
                words(&format!("{c} {t} {keys} {side} {count}"))
            }),
        (
            k(),
            pick(&["", "COUNT 1"]),
            pick(&["$", "0", "1-1"]),
            millis.clone()
        )
            .prop_map(|(k, count, id, t)| words(&format!(
                "XREAD {count} BLOCK {t} STREAMS {k} {id}"
            ))),
        (k(), pick(&["", "NOACK", "COUNT 2"]), millis).prop_map(|(k, o, t)| words(&format!(
            "XREADGROUP GROUP g c {o} BLOCK {t} STREAMS {k} >"
        ))),
    ]
}

/// What each key holds at the end, read by type so every read compares.
const AFTER: &[&str] = &[
    "TYPE b1",
    "TYPE b2",
    "TYPE d",
    "LRANGE b1 0 -1",
    "LRANGE b2 0 -1",
    "LRANGE d 0 -1",
    "ZRANGE b1 0 -1 WITHSCORES",
    "ZRANGE b2 0 -1 WITHSCORES",
    "XRANGE b1 - +",
    "XRANGE b2 - +",
    "XPENDING b1 g",
    "XPENDING b2 g",
];

#[derive(Clone, Debug)]
struct Case {
    setup: Vec<Vec<String>>,
    /// The blocking commands, sent in turn (each waits until the one before it is blocked or
    /// answered).
    blocked: Vec<Vec<String>>,
    /// The writer's steps.
    writes: Vec<Vec<String>>,
    /// Whether the blocked client's short timeout fires (then there are no writes).
    fires: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let setup = || prop::collection::vec(write(), 0..3);
    prop_oneof![
        9 => (
            setup(),
            prop::collection::vec(blocking(false), 1..3),
            prop::collection::vec(writer_step(), 0..5),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(setup, blocked, steps, at)| {
                let mut writes: Vec<Vec<String>> = steps.into_iter().flatten().collect();
                // One write among them fits the first blocked command (its key, its type), so
                // that as many clients are served as are left waiting.
                let at = at.index(writes.len() + 1);
                if !writes[..at].iter().any(|w| w[0] == "MULTI")
                    || writes[..at].iter().any(|w| w[0] == "EXEC")
                {
                    writes.insert(at, fitting(&blocked[0]));
                }
                Case {
                    setup,
                    blocked,
                    writes,
                    fires: false,
                }
            }),
        1 => (setup(), blocking(true)).prop_map(|(setup, b)| Case {
            setup,
            blocked: vec![b],
            writes: Vec::new(),
            fires: true,
        }),
    ]
}

/// A write that can serve `blocking`: a push of its kind to the first key it waits on.
fn fitting(blocking: &[String]) -> Vec<String> {
    let key = blocking
        .iter()
        .find(|w| KEYS.contains(&w.as_str()))
        .map_or("b1", String::as_str);
    match blocking[0].as_str() {
        "BZPOPMIN" | "BZPOPMAX" | "BZMPOP" => words(&format!("ZADD {key} 3 z")),
        "XREAD" | "XREADGROUP" => words(&format!("XADD {key} 9-9 f z")),
        _ => words(&format!("RPUSH {key} z")),
    }
}

/// The real side: the writer and two connections that block.
struct RealSide {
    writer: Real,
    blocked: [Real; 2],
    ids: [String; 2],
}

/// The fake's side: a fresh engine on a manual clock per case.
struct FakeSide {
    engine: Engine,
    clock: ManualClock,
    writer: ClientId,
    blocked: [ClientId; 2],
}

fn argv(words: &[String]) -> Vec<Bytes> {
    words
        .iter()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn raw(words: &[String]) -> Vec<&[u8]> {
    words.iter().map(|w| w.as_bytes()).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl RealSide {
    /// Three fresh connections; dropping the old ones ends whatever they were blocked on.
    fn connect(port: u16, protocol: u8) -> RealSide {
        let connect = || {
            let mut c = Real::connect(port);
            if protocol == 3 {
                c.call(&[b"HELLO", b"3"]);
            }
            c
        };
        let writer = connect();
        let mut blocked = [connect(), connect()];
        let ids = [0, 1].map(|i| {
            let id = text(&blocked[i].call(&[b"CLIENT", b"ID"]));
            id.trim_start_matches(':').trim_end().to_owned()
        });
        RealSide {
            writer,
            blocked,
            ids,
        }
    }
}

impl FakeSide {
    fn new(protocol: u8) -> FakeSide {
        let clock = ManualClock::new(1_700_000_000_000);
        let mut engine = Engine::new(clock.clone());
        let writer = engine.connect();
        let blocked = [engine.connect(), engine.connect()];
        if protocol == 3 {
            for c in [writer, blocked[0], blocked[1]] {
                engine.execute(c, &argv(&words("HELLO 3")));
            }
        }
        FakeSide {
            engine,
            clock,
            writer,
            blocked,
        }
    }

    fn encoded(frame: &fake_redis::Frame, protocol: u8) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(frame, protocol, &mut out);
        out.to_vec()
    }
}

/// Replaces the blocked clients' placeholders with their ids on one side.
fn with_ids(words: &[String], ids: &[String; 2]) -> Vec<String> {
    words
        .iter()
        .map(|w| match w.as_str() {
            "B1" => ids[0].clone(),
            "B2" => ids[1].clone(),
            _ => w.clone(),
        })
        .collect()
}

/// A connection's `CLIENT LIST ID` line: its flags and last command.
fn client_line(writer: &mut Real, id: &str) -> String {
    text(&writer.call(&[b"CLIENT", b"LIST", b"ID", id.as_bytes()]))
}

/// Whether the real connection `i` is blocked now.
fn real_is_blocked(real: &mut RealSide, i: usize) -> bool {
    let line = client_line(&mut real.writer, &real.ids[i]);
    flags(&line).contains('b')
}

fn flags(client_line: &str) -> &str {
    client_line
        .split(' ')
        .find_map(|f| f.strip_prefix("flags="))
        .unwrap_or("")
}

/// Waits until the real connection `i` is blocked (true) or has answered `name` (false).
fn real_blocks(real: &mut RealSide, i: usize, name: &str) -> bool {
    let last = format!(" cmd={} ", name.to_ascii_lowercase());
    let started = Instant::now();
    loop {
        let line = client_line(&mut real.writer, &real.ids[i]);
        if flags(&line).contains('b') {
            return true;
        }
        if line.contains(&last) {
            return false;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "redis-server never took {name}: {line}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Runs one case on both sides; the first divergence, if any.
/// How the blocking commands of the cases that agreed ended, so that a run shows it met each way.
#[derive(Default, Debug)]
struct Endings {
    /// Answered at once (data was there, or an error).
    at_once: u32,
    /// Served by one of the writer's commands.
    served: u32,
    /// Ended by `CLIENT UNBLOCK` (the writer's, or the one that ends a case).
    unblocked: u32,
    /// Timed out.
    timed_out: u32,
}

fn diverges(
    real: &mut RealSide,
    protocol: u8,
    case: &Case,
    endings: &mut Endings,
) -> Option<String> {
    let mut ended = Endings::default();
    let mut fake = FakeSide::new(protocol);
    let fake_ids = fake.blocked.map(|c| c.0.to_string());
    real.writer.call(&[b"FLUSHALL"]);
    for b in &mut real.blocked {
        b.call(&[b"PING"]);
    }
    let mut log = Vec::new();
    let mut compare = |what: String, want: Vec<u8>, got: Vec<u8>| -> Option<String> {
        log.push(format!("{what} -> {}", text(&want)));
        (want != got).then(|| {
            format!(
                "{}\n  at {what}\n  redis: {:?}\n  fake:  {:?}",
                log.join("\n"),
                text(&want),
                text(&got)
            )
        })
    };
    let writer = |real: &mut RealSide, fake: &mut FakeSide, words: &[String]| {
        let want = real.writer.call(&raw(&with_ids(words, &real.ids)));
        let frame = fake
            .engine
            .execute(fake.writer, &argv(&with_ids(words, &fake_ids)));
        (want, FakeSide::encoded(&frame, protocol))
    };
    for w in &case.setup {
        let (want, got) = writer(real, &mut fake, w);
        if let Some(d) = compare(format!("setup {w:?}"), want, got) {
            return Some(d);
        }
    }
    // Which clients are left blocked, in the order they blocked.
    let mut waiting = Vec::new();
    for (i, b) in case.blocked.iter().enumerate() {
        real.blocked[i].send(&raw(b));
        let fake_reply = fake.engine.execute_or_block(fake.blocked[i], &argv(b));
        let real_blocked = real_blocks(real, i, &b[0]);
        match (real_blocked, fake_reply) {
            (true, None) => waiting.push(i),
            (false, Some(frame)) => {
                ended.at_once += 1;
                let want = real.blocked[i].reply();
                if let Some(d) = compare(
                    format!("client {} {b:?}", i + 1),
                    want,
                    FakeSide::encoded(&frame, protocol),
                ) {
                    return Some(d);
                }
            }
            (r, f) => {
                return Some(format!(
                    "{}\n  client {} {b:?}: blocked on redis: {r}, on the fake: {}",
                    log.join("\n"),
                    i + 1,
                    f.is_none()
                ));
            }
        }
    }
    if case.fires {
        // The short timeout fires: Redis's on its own clock, the fake's when its clock passes it.
        fake.clock.advance(SHORT_MS.parse::<i64>().unwrap() + 1);
        fake.engine.catch_up();
    }
    for w in &case.writes {
        let (want, got) = writer(real, &mut fake, w);
        if let Some(d) = compare(format!("write {w:?}"), want, got) {
            return Some(d);
        }
    }
    for i in waiting {
        let unblocked_before = case
            .writes
            .iter()
            .any(|w| w[0] == "CLIENT" && w[2] == format!("B{}", i + 1));
        if case.fires {
            ended.timed_out += 1;
        } else if real_is_blocked(real, i) {
            ended.unblocked += 1;
            // Still waiting on Redis: end it there and on the fake the same way.
            let unblock = words(&format!("CLIENT UNBLOCK B{}", i + 1));
            let (want, got) = writer(real, &mut fake, &unblock);
            if let Some(d) = compare(format!("{unblock:?}"), want, got) {
                return Some(d);
            }
        } else if unblocked_before {
            ended.unblocked += 1;
        } else {
            ended.served += 1;
        }
        let want = real.blocked[i].reply();
        let got = fake
            .engine
            .take_unblocked_reply(fake.blocked[i])
            .map(|f| FakeSide::encoded(&f, protocol))
            .unwrap_or_else(|| b"(still blocked on the fake)".to_vec());
        if let Some(d) = compare(format!("client {} answered", i + 1), want, got) {
            return Some(d);
        }
    }
    for line in AFTER {
        let (want, got) = writer(real, &mut fake, &words(line));
        if let Some(d) = compare(line.to_string(), want, got) {
            return Some(d);
        }
    }
    endings.at_once += ended.at_once;
    endings.served += ended.served;
    endings.unblocked += ended.unblocked;
    endings.timed_out += ended.timed_out;
    None
}

fn run_cases(protocol: u8, default_cases: u32) {
    let cases: u32 = std::env::var("CONFORMANCE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default_cases);
    let server = OwnServer::start();
    let real = RefCell::new((RealSide::connect(server.port, protocol), true));
    let endings = RefCell::new(Endings::default());
    let started = Instant::now();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |case| {
        // A case that diverged (or panicked) may have left a client blocked or a reply unread:
        // the next one (a shrink) starts on fresh connections.
        let mut real = real.borrow_mut();
        let (side, clean) = &mut *real;
        if !*clean {
            *side = RealSide::connect(server.port, protocol);
        }
        *clean = false;
        match diverges(side, protocol, &case, &mut endings.borrow_mut()) {
            None => {
                *clean = true;
                Ok(())
            }
            Some(d) => Err(TestCaseError::fail(d)),
        }
    });
    let endings = endings.into_inner();
    eprintln!(
        "{cases} RESP{protocol} blocking cases in {:.1?}: {endings:?}",
        started.elapsed()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    if cases >= 100 {
        // The run met every way a blocking command ends, not only the easy ones.
        for (way, n) in [
            ("at once", endings.at_once),
            ("served by a write", endings.served),
            ("unblocked", endings.unblocked),
            ("timed out", endings.timed_out),
        ] {
            assert!(n > 0, "no blocking command ended {way}: {endings:?}");
        }
    }
}

#[test]
fn random_blocking_cases_reply_exactly_as_redis_7_does() {
    run_cases(2, 400);
}

#[test]
fn random_blocking_cases_in_resp3_reply_exactly_as_redis_7_does() {
    run_cases(3, 200);
}
