//! What a server counts about its commands, compared with a redis-server of the test's own after
//! the same commands, in RESP2 and RESP3: `INFO commandstats` (calls, rejected and failed calls;
//! the times, which the fake's frozen clock reads as 0, are compared by shape), `INFO errorstats`,
//! `total_commands_processed` and `total_error_replies`, which sections `INFO` gives for which
//! arguments, and the slow log's entries with `slowlog-log-slower-than 0` (ids, arguments and
//! client names exactly; times, durations and addresses by shape).

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::{Frame, ReplyParser, encode};
use fake_redis::{ClientId, Engine, ManualClock};
use support::OwnServer;
use support::raw::{Real, eval};

/// A known sequence: plain calls, a failed one, refused ones, an unknown command and subcommand,
/// transactions (one with a failing command, one discarded), scripts whose calls fail, error
/// replies of the script's own, a blocking command that times out at once.
const SEQUENCE: &[&[&str]] = &[
    &["SET", "a", "1"],
    &["GET", "a"],
    &["INCR", "a"],
    &["LPUSH", "a", "x"],
    &["GET"],
    &["FOO"],
    &["CONFIG", "GET", "maxmemory"],
    &["CONFIG", "FOO"],
    &["MULTI"],
    &["SET", "b", "1"],
    &["LPUSH", "b", "x"],
    &["EXEC"],
    &["MULTI"],
    &["GET"],
    &["SET", "c", "1"],
    &["EXEC"],
    eval!("redis.call('set','c','x') return redis.call('lpush','c','y')"),
    eval!("return redis.pcall('lpush','c','y')"),
    eval!("return redis.error_reply('MYERR x')"),
    eval!("return {err='OTHER y'}"),
    eval!("redis.pcall('incr','c') return redis.error_reply('ERR mine')"),
    &["BLPOP", "nol", "0.01"],
    &["EXEC"],
    &["DISCARD"],
    &["SUBSCRIBE", "ch"],
    &["UNSUBSCRIBE", "ch"],
    &["HSET", "h", "f"],
    &["OBJECT", "ENCODING", "a"],
    &["XADD", "s", "bad-id", "f", "v"],
];

fn to_argv(words: &[&str]) -> Vec<Bytes> {
    words
        .iter()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn real_run(protocol: u8, setup: &[&[&str]], tail: &[&[&str]]) -> Vec<Vec<u8>> {
    let server = OwnServer::start();
    let mut real = Real::connect(server.port);
    if protocol == 3 {
        real.call(&[b"HELLO", b"3"]);
    }
    real.call(&[b"CONFIG", b"RESETSTAT"]);
    let mut out = Vec::new();
    for argv in setup.iter().chain(SEQUENCE).chain(tail) {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        out.push(real.call(&argv));
    }
    out
}

fn fake_run(protocol: u8, setup: &[&[&str]], tail: &[&[&str]]) -> Vec<Vec<u8>> {
    let mut engine = Engine::new(ManualClock::default());
    let client: ClientId = engine.connect();
    if protocol == 3 {
        engine.execute(client, &to_argv(&["HELLO", "3"]));
    }
    engine.execute(client, &to_argv(&["CONFIG", "RESETSTAT"]));
    let mut out = Vec::new();
    for argv in setup.iter().chain(SEQUENCE).chain(tail) {
        let mut bytes = BytesMut::new();
        // A door that does not wait: `BLPOP` answers as its timeout would, at once.
        let reply = engine.execute(client, &to_argv(argv));
        encode(&reply, protocol, &mut bytes);
        engine.drain_outbox(client);
        out.push(bytes.to_vec());
    }
    out
}

fn parse(bytes: &[u8]) -> Frame {
    ReplyParser::new()
        .parse(&mut BytesMut::from(bytes))
        .unwrap()
        .expect("one whole reply")
}

/// The text of an `INFO` reply (a bulk string, or RESP3's verbatim string).
fn info_text(bytes: &[u8]) -> String {
    match parse(bytes) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        Frame::Verbatim { text, .. } => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("INFO replied {other:?}"),
    }
}

/// The lines of a section, times replaced by `_`, sorted (Redis lists commands in its hash
/// table's order).
fn normalized_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split(',')
                .map(|field| match field.split_once('=') {
                    Some((name, _)) if name.ends_with("usec") || name == "usec_per_call" => {
                        format!("{name}=_")
                    }
                    _ => field.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines
}

const INFO_TAIL: &[&[&str]] = &[
    &["INFO", "commandstats"],
    &["INFO", "errorstats"],
    &["INFO", "stats"],
];

fn assert_same_stats(protocol: u8) {
    let real = real_run(protocol, &[], INFO_TAIL);
    let fake = fake_run(protocol, &[], INFO_TAIL);
    let n = real.len();
    // Every reply of the sequence is the same (what the statistics count).
    for (i, (r, f)) in real[..n - 3].iter().zip(&fake[..n - 3]).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(r),
            String::from_utf8_lossy(f),
            "RESP{protocol} reply to {:?}",
            SEQUENCE[i]
        );
    }
    let commandstats = |replies: &[Vec<u8>]| normalized_lines(&info_text(&replies[n - 3]));
    assert_eq!(commandstats(&fake), commandstats(&real), "RESP{protocol}");
    let errorstats = |replies: &[Vec<u8>]| normalized_lines(&info_text(&replies[n - 2]));
    assert_eq!(errorstats(&fake), errorstats(&real), "RESP{protocol}");
    let stats_field = |replies: &[Vec<u8>], field: &str| {
        info_text(&replies[n - 1])
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_owned))
            .unwrap_or_else(|| panic!("{field} missing"))
    };
    for field in ["total_error_replies", "total_commands_processed"] {
        assert_eq!(
            stats_field(&fake, field),
            stats_field(&real, field),
            "RESP{protocol} {field}"
        );
    }
    assert!(commandstats(&real).len() > 10);
}

#[test]
fn commandstats_errorstats_and_totals_are_redis_s_resp2() {
    assert_same_stats(2);
}

#[test]
fn commandstats_errorstats_and_totals_are_redis_s_resp3() {
    assert_same_stats(3);
}

#[test]
fn the_fake_reports_every_call_as_taking_no_time() {
    let replies = fake_run(
        2,
        &[],
        &[&["INFO", "commandstats"], &["INFO", "latencystats"]],
    );
    let commandstats = info_text(&replies[replies.len() - 2]);
    assert!(commandstats.contains(
        "cmdstat_set:calls=3,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n"
    ));
    let latencystats = info_text(&replies[replies.len() - 1]);
    assert!(
        latencystats.contains("latency_percentiles_usec_set:p50=0.001,p99=0.001,p99.9=0.001\r\n")
    );
}

/// Which sections each form of `INFO` gives.
#[test]
fn info_s_sections_are_redis_s_for_every_selector() {
    let selectors: &[&[&str]] = &[
        &["INFO"],
        &["INFO", "default"],
        &["INFO", "all"],
        &["INFO", "everything"],
        &["INFO", "commandstats"],
        &["INFO", "errorstats", "latencystats"],
        &["INFO", "server", "all"],
        &["INFO", "default", "commandstats"],
        &["INFO", "Latencystats"],
        &["INFO", "bogus"],
    ];
    let real = real_run(2, &[], selectors);
    let fake = fake_run(2, &[], selectors);
    let headers = |reply: &[u8]| -> Vec<String> {
        info_text(reply)
            .lines()
            .filter(|l| l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let skip = SEQUENCE.len();
    for (i, selector) in selectors.iter().enumerate() {
        assert_eq!(
            headers(&fake[skip + i]),
            headers(&real[skip + i]),
            "{selector:?}"
        );
    }
}

/// The slow log's entries after the sequence with `slowlog-log-slower-than 0`: each entry's
/// id, arguments and client name exactly, its time, duration and client address by shape.
fn assert_same_slowlog(protocol: u8) {
    let hello = if protocol == 3 { "3" } else { "2" };
    let setup: &[&[&str]] = &[
        &["SLOWLOG", "RESET"],
        &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
        &["CLIENT", "SETNAME", "me"],
        &["AUTH", "secret"],
        &["AUTH", "user", "secret"],
        &["HELLO", hello, "AUTH", "default", "secret"],
    ];
    let long = "x".repeat(200);
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut push: Vec<&str> = vec!["RPUSH", "l"];
    push.extend(many.iter().map(String::as_str));
    let tail_owned: Vec<Vec<&str>> = vec![
        vec!["SET", "big", &long],
        push,
        vec!["SLOWLOG", "LEN"],
        vec!["SLOWLOG", "GET", "2"],
        vec!["SLOWLOG", "GET", "-1"],
    ];
    let tail: Vec<&[&str]> = tail_owned.iter().map(Vec::as_slice).collect();
    let real = real_run(protocol, setup, &tail);
    let fake = fake_run(protocol, setup, &tail);
    let n = real.len();
    let entries = |replies: &[Vec<u8>], at: usize| -> Vec<String> {
        let list = |reply: &[u8]| {
            let Frame::Array(entries) = parse(reply) else {
                panic!("SLOWLOG GET replied no array");
            };
            entries
        };
        // Ids count from the oldest entry of the whole log (a server may have logged a slow
        // command of its own before the threshold went to 0).
        let oldest = match list(&replies[n - 1]).last() {
            Some(Frame::Array(fields)) => match fields[0] {
                Frame::Integer(id) => id,
                _ => panic!("an id is an integer"),
            },
            _ => panic!("the log is empty"),
        };
        list(&replies[at])
            .into_iter()
            .map(|entry| {
                let Frame::Array(fields) = entry else {
                    panic!("an entry is an array");
                };
                let [id, time, duration, args, addr, name] = &fields[..] else {
                    panic!("an entry has six fields: {fields:?}");
                };
                assert!(matches!(time, Frame::Integer(t) if *t > 0));
                assert!(matches!(duration, Frame::Integer(d) if *d >= 0));
                let addr = match addr {
                    Frame::Bulk(a) if &a[..] == b"?:0" => "?:0",
                    Frame::Bulk(_) => "client",
                    other => panic!("address {other:?}"),
                };
                let Frame::Integer(id) = id else {
                    panic!("an id is an integer");
                };
                format!("{} {args:?} {addr} {name:?}", id - oldest)
            })
            .collect()
    };
    for at in [n - 1, n - 2] {
        assert_eq!(entries(&fake, at), entries(&real, at), "RESP{protocol}");
    }
    assert_eq!(
        String::from_utf8_lossy(&fake[n - 3]),
        String::from_utf8_lossy(&real[n - 3]),
        "RESP{protocol} SLOWLOG LEN"
    );
    assert!(entries(&real, n - 1).len() > 20);
}

#[test]
fn slowlog_entries_are_redis_s_resp2() {
    assert_same_slowlog(2);
}

#[test]
fn slowlog_entries_are_redis_s_resp3() {
    assert_same_slowlog(3);
}

#[test]
fn slowlog_keeps_slowlog_max_len_entries_and_a_negative_threshold_logs_nothing() {
    let mut engine = Engine::new(ManualClock::default());
    let client = engine.connect();
    let mut run = |words: &[&str]| engine.execute(client, &to_argv(words));
    run(&["CONFIG", "SET", "slowlog-max-len", "3"]);
    run(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    for _ in 0..5 {
        run(&["PING"]);
    }
    assert_eq!(run(&["SLOWLOG", "LEN"]), Frame::Integer(3));
    run(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    run(&["SLOWLOG", "RESET"]);
    run(&["PING"]);
    assert_eq!(run(&["SLOWLOG", "LEN"]), Frame::Integer(0));
    // The default threshold, 10 ms, is never reached on the engine's clock.
    run(&["CONFIG", "SET", "slowlog-log-slower-than", "10000"]);
    run(&["PING"]);
    assert_eq!(run(&["SLOWLOG", "GET"]), Frame::Array(Vec::new()));
}
