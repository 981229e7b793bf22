//! Keyspace notifications, compared with a redis-server of the test's own: the same commands on
//! both, a subscriber to `__key*__:*` on each, and the same messages in the same order, `expired`
//! included (the fake's clock is moved by hand; the real server is given the time).

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::ReplyParser;
use fake_redis::{Engine, Frame, ManualClock};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use support::OwnServer;

const SETUP: &str = "CONFIG SET notify-keyspace-events KEA";

/// The commands, with `SLEEP <ms>` for time passing.
const SCRIPT: &[&str] = &[
    "SET s v",
    "SET s v EX 100",
    "SET s v KEEPTTL",
    "SETEX s 100 v",
    "PERSIST s",
    "APPEND s x",
    "SETRANGE s 1 y",
    "INCR n",
    "DECRBY n 3",
    "INCRBYFLOAT n 1.5",
    "HSET h a 1 b 2",
    "HSETNX h c 3",
    "HINCRBY h a 1",
    "HINCRBYFLOAT h a 1.5",
    "HDEL h a b",
    "HDEL h c",
    "EXPIRE n 100",
    "PEXPIRE n -1",
    "DEL s nosuch",
    "SET t v PX 50",
    "SLEEP 300",
    "GET t",
    "SET u v PX 50",
    "SLEEP 300",
    "SET u w",
];

fn argv(line: &str) -> Vec<Bytes> {
    line.split_whitespace()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

/// A message's channel and payload.
fn message(frame: &Frame) -> Option<(Bytes, Bytes)> {
    match frame {
        Frame::Push(items) | Frame::Array(items) => match &items[..] {
            [
                Frame::Bulk(kind),
                _,
                Frame::Bulk(channel),
                Frame::Bulk(payload),
            ] if &kind[..] == b"pmessage" => Some((channel.clone(), payload.clone())),
            _ => None,
        },
        _ => None,
    }
}

fn fake_messages() -> Vec<(Bytes, Bytes)> {
    let clock = ManualClock::default();
    let mut engine = Engine::new(clock.clone());
    let (sub, writer) = (engine.connect(), engine.connect());
    engine.execute(writer, &argv(SETUP));
    engine.execute(sub, &argv("PSUBSCRIBE __key*__:*"));
    for line in SCRIPT {
        match line.strip_prefix("SLEEP ") {
            Some(ms) => clock.advance(ms.parse().unwrap()),
            None => {
                engine.execute(writer, &argv(line));
            }
        }
    }
    engine
        .drain_outbox(sub)
        .iter()
        .filter_map(message)
        .collect()
}

fn send(conn: &mut TcpStream, line: &str) {
    let words = argv(line);
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in &words {
        out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
        out.extend_from_slice(w);
        out.extend_from_slice(b"\r\n");
    }
    conn.write_all(&out).unwrap();
}

/// The frames `conn` sends: `until` of them (waiting as long as a loaded machine needs), or all
/// until it is quiet for half a second.
fn frames(conn: &mut TcpStream, until: Option<usize>) -> Vec<Frame> {
    let quiet = if until.is_some() { 60_000 } else { 500 };
    conn.set_read_timeout(Some(Duration::from_millis(quiet)))
        .unwrap();
    let (mut parser, mut buf, mut out) = (ReplyParser::new(), BytesMut::new(), Vec::new());
    let mut chunk = [0u8; 4096];
    while until.is_none_or(|n| out.len() < n) {
        match conn.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
        while let Some(frame) = parser.parse(&mut buf).unwrap() {
            out.push(frame);
        }
    }
    out
}

fn real_messages() -> Vec<(Bytes, Bytes)> {
    let server = OwnServer::start();
    let connect = || {
        for _ in 0..200 {
            if let Ok(c) = TcpStream::connect(("127.0.0.1", server.port)) {
                return c;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not start");
    };
    let (mut sub, mut writer) = (connect(), connect());
    send(&mut writer, SETUP);
    frames(&mut writer, Some(1));
    send(&mut sub, "PSUBSCRIBE __key*__:*");
    frames(&mut sub, Some(1));
    for line in SCRIPT {
        match line.strip_prefix("SLEEP ") {
            Some(ms) => std::thread::sleep(Duration::from_millis(ms.parse().unwrap())),
            None => {
                send(&mut writer, line);
                frames(&mut writer, Some(1));
            }
        }
    }
    frames(&mut sub, None).iter().filter_map(message).collect()
}

#[test]
fn keyspace_and_keyevent_messages_are_redis_s() {
    let fake = fake_messages();
    let real = real_messages();
    let show = |m: &[(Bytes, Bytes)]| {
        m.iter()
            .map(|(c, p)| {
                format!(
                    "{} {}",
                    String::from_utf8_lossy(c),
                    String::from_utf8_lossy(p)
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&fake), show(&real));
    assert!(
        fake.iter()
            .any(|(c, _)| &c[..] == b"__keyevent@0__:expired")
    );
}

#[test]
fn without_notify_keyspace_events_nothing_is_published() {
    let mut engine = Engine::new(ManualClock::default());
    let (sub, writer) = (engine.connect(), engine.connect());
    engine.execute(sub, &argv("PSUBSCRIBE *"));
    engine.drain_outbox(sub);
    engine.execute(writer, &argv("SET k v"));
    engine.execute(writer, &argv("DEL k"));
    assert!(engine.drain_outbox(sub).is_empty());
}

#[test]
fn expired_events_go_on_after_a_restart() {
    let clock = ManualClock::default();
    let mut engine = Engine::new(clock.clone());
    let writer = engine.connect();
    engine.execute(writer, &argv(SETUP));
    // A restart closes every connection; the setting, as in a running redis-server, stays.
    engine.restart();
    let (sub, writer) = (engine.connect(), engine.connect());
    engine.execute(sub, &argv("PSUBSCRIBE __keyevent@0__:expired"));
    engine.drain_outbox(sub);
    engine.execute(writer, &argv("SET t v PX 50"));
    clock.advance(300);
    engine.execute(writer, &argv("GET t"));
    let events: Vec<_> = engine
        .drain_outbox(sub)
        .iter()
        .filter_map(message)
        .collect();
    assert_eq!(
        events,
        vec![(
            Bytes::from_static(b"__keyevent@0__:expired"),
            Bytes::from_static(b"t")
        )]
    );
}

/// The `INFO` field `name` of `engine`, through a client of its own.
fn info_field(engine: &mut Engine, name: &str) -> String {
    let client = engine.connect();
    let info = match engine.execute(client, &argv("INFO everything")) {
        Frame::Bulk(info) | Frame::Verbatim { text: info, .. } => info,
        other => panic!("INFO answers text, not {other:?}"),
    };
    engine.disconnect(client);
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO has no {name}"))
        .to_owned()
}

#[test]
fn a_restart_starts_the_counters_and_the_uptime_over_as_a_new_process_does() {
    let clock = ManualClock::default();
    let mut engine = Engine::new(clock.clone());
    let client = engine.connect();
    engine.execute(client, &argv("CONFIG SET slowlog-log-slower-than 0"));
    engine.execute(client, &argv("SET k v"));
    engine.execute(client, &argv("GET k"));
    engine.execute(client, &argv("GET nosuch"));
    clock.advance(5_000);
    assert_eq!(info_field(&mut engine, "keyspace_hits"), "1");
    assert_eq!(info_field(&mut engine, "keyspace_misses"), "1");
    assert_eq!(info_field(&mut engine, "uptime_in_seconds"), "5");
    let run_id = info_field(&mut engine, "run_id");
    engine.restart();
    let client = engine.connect();
    assert_eq!(
        engine.execute(client, &argv("SLOWLOG LEN")),
        Frame::Integer(0)
    );
    for (field, fresh) in [
        ("keyspace_hits", "0"),
        ("keyspace_misses", "0"),
        ("uptime_in_seconds", "0"),
        ("total_error_replies", "0"),
        // The SLOWLOG client and the INFO clients since the restart.
        ("total_connections_received", "6"),
    ] {
        assert_eq!(info_field(&mut engine, field), fresh, "{field}");
    }
    assert_ne!(info_field(&mut engine, "run_id"), run_id);
}
