//! Walking and drawing from large collections costs in proportion to what a call asks, not to
//! the collection: the bounded, deterministic twins of the figures in BENCHMARKS.md
//! (`scripts/bench-collections`), on the engine directly. Work is counted as pages and their
//! sizes, never as time.

use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, ManualClock};
use std::collections::BTreeSet;

fn setup() -> (Engine, ClientId) {
    let mut engine = Engine::new(ManualClock::new(1_000_000));
    let c = engine.connect();
    (engine, c)
}

fn run(e: &mut Engine, c: ClientId, args: &[String]) -> Frame {
    let argv: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.clone())).collect();
    e.execute(c, &argv)
}

fn words(cmd: &str) -> Vec<String> {
    cmd.split(' ').map(str::to_owned).collect()
}

/// Fills `key` with `n` members, 1,000 per command: `SADD key m0 m1 …` or `ZADD key 0 m0 1 m1 …`.
fn fill(e: &mut Engine, c: ClientId, zset: bool, key: &str, n: usize) {
    for start in (0..n).step_by(1_000) {
        let mut cmd = vec![
            if zset { "ZADD" } else { "SADD" }.to_owned(),
            key.to_owned(),
        ];
        for i in start..(start + 1_000).min(n) {
            if zset {
                cmd.push(i.to_string());
            }
            cmd.push(format!("m{i}"));
        }
        run(e, c, &cmd);
    }
}

fn bulk_text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Double(d) => d.to_string(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// One page of a `*SCAN`: the next cursor and the page's items.
fn page(reply: Frame) -> (String, Vec<Frame>) {
    let Frame::Array(mut parts) = reply else {
        panic!("not a scan reply: {reply:?}");
    };
    let Some(Frame::Array(items)) = parts.pop() else {
        panic!("no page");
    };
    (bulk_text(&parts[0]), items)
}

/// Runs a whole scan (`head` then the cursor, then `tail`): every item returned, and the page
/// sizes (in items; a sorted set's page has a score after each member).
fn walk(e: &mut Engine, c: ClientId, head: &str, tail: &str) -> (BTreeSet<String>, Vec<usize>) {
    let (mut cursor, mut seen, mut pages) = ("0".to_owned(), BTreeSet::new(), Vec::new());
    loop {
        let cmd = words(&format!("{head} {cursor} {tail}"));
        let (next, items) = page(run(e, c, &cmd));
        pages.push(items.len());
        seen.extend(items.iter().map(bulk_text));
        if next == "0" {
            return (seen, pages);
        }
        cursor = next;
        assert!(pages.len() < 1_000_000, "the scan must end");
    }
}

#[test]
fn a_full_scan_of_100k_keys_returns_each_key_in_pages_of_count() {
    let (mut e, c) = setup();
    for start in (0..100_000).step_by(1_000) {
        let mut cmd = vec!["MSET".to_owned()];
        for i in start..start + 1_000 {
            cmd.extend([format!("key:{i}"), i.to_string()]);
        }
        run(&mut e, c, &cmd);
    }
    let (seen, pages) = walk(&mut e, c, "SCAN", "COUNT 1000");
    assert_eq!(seen.len(), 100_000);
    assert!(pages.iter().all(|&n| n <= 1_000), "a page past COUNT");
    // About one call per COUNT keys (the table is at most 7/8 full and at least 3/8 after its
    // last doubling): never one reply of everything, never a call per key.
    assert!((100..=400).contains(&pages.len()), "{} calls", pages.len());
}

#[test]
fn sscan_pages_a_large_set_by_count_and_sends_a_small_intset_whole() {
    let (mut e, c) = setup();
    fill(&mut e, c, false, "big", 20_000);
    let (seen, pages) = walk(&mut e, c, "SSCAN big", "COUNT 10");
    assert_eq!(seen.len(), 20_000);
    assert!(pages.iter().all(|&n| n <= 10));
    assert_eq!(pages.len(), 2_000);

    // An intset (integers, at most 512) comes whole with cursor 0 whatever COUNT says, as from
    // Redis; so does a hash-table set no larger than COUNT.
    run(
        &mut e,
        c,
        &words("SADD ints 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"),
    );
    let (next, items) = page(run(&mut e, c, &words("SSCAN ints 0 COUNT 2")));
    assert_eq!((next.as_str(), items.len()), ("0", 20));
    let (next, items) = page(run(&mut e, c, &words("SSCAN big 0 COUNT 50000")));
    assert_eq!((next.as_str(), items.len()), ("0", 20_000));
}

#[test]
fn zscan_pages_a_large_sorted_set_by_count_and_sends_a_listpack_whole() {
    let (mut e, c) = setup();
    fill(&mut e, c, true, "big", 20_000);
    let (seen, pages) = walk(&mut e, c, "ZSCAN big", "COUNT 10");
    // Members and their scores.
    assert_eq!(seen.iter().filter(|m| m.starts_with('m')).count(), 20_000);
    assert!(pages.iter().all(|&n| n <= 2 * 10));
    assert!(pages.len() >= 2_000, "{} calls", pages.len());

    run(&mut e, c, &words("ZADD small 1 a 2 b 3 c 4 d 5 e"));
    let (next, items) = page(run(&mut e, c, &words("ZSCAN small 0 COUNT 1")));
    assert_eq!(next, "0");
    let listed: Vec<String> = items.iter().map(bulk_text).collect();
    assert_eq!(listed, ["a", "1", "b", "2", "c", "3", "d", "4", "e", "5"]);
}

#[test]
fn draws_pops_and_ranks_on_large_collections_answer_as_a_model_does() {
    let (mut e, c) = setup();
    fill(&mut e, c, false, "s", 50_000);
    fill(&mut e, c, true, "z", 50_000);
    let members = |f: Frame| -> Vec<String> {
        match f {
            Frame::Array(items) | Frame::Set(items) => items.iter().map(bulk_text).collect(),
            other => panic!("{other:?}"),
        }
    };

    let drawn = members(run(&mut e, c, &words("SRANDMEMBER s 100")));
    let distinct: BTreeSet<&String> = drawn.iter().collect();
    assert_eq!((drawn.len(), distinct.len()), (100, 100));
    assert!(
        drawn
            .iter()
            .all(|m| m[1..].parse::<u32>().unwrap() < 50_000)
    );
    assert_eq!(
        members(run(&mut e, c, &words("SRANDMEMBER s -300"))).len(),
        300
    );

    let popped = members(run(&mut e, c, &words("SPOP s 1000")));
    let distinct: BTreeSet<&String> = popped.iter().collect();
    assert_eq!(distinct.len(), 1_000);
    assert_eq!(run(&mut e, c, &words("SCARD s")), Frame::Integer(49_000));
    for m in popped.iter().take(20) {
        assert_eq!(
            run(&mut e, c, &words(&format!("SISMEMBER s {m}"))),
            Frame::Integer(0)
        );
    }

    assert_eq!(
        run(&mut e, c, &words("ZRANK z m31337")),
        Frame::Integer(31_337)
    );
    assert_eq!(
        run(&mut e, c, &words("ZREVRANK z m31337")),
        Frame::Integer(50_000 - 1 - 31_337)
    );
    assert_eq!(
        members(run(&mut e, c, &words("ZRANGE z 25000 25002"))),
        ["m25000", "m25001", "m25002"]
    );
    assert_eq!(
        members(run(
            &mut e,
            c,
            &words("ZRANGE z (103 100 BYSCORE REV LIMIT 1 5")
        )),
        ["m101", "m100"]
    );
    assert_eq!(
        run(&mut e, c, &words("ZCOUNT z (10000 20000")),
        Frame::Integer(10_000)
    );
    assert_eq!(
        members(run(&mut e, c, &words("ZPOPMIN z 2"))),
        ["m0", "0", "m1", "1"]
    );
    assert_eq!(
        members(run(&mut e, c, &words("ZPOPMAX z"))),
        ["m49999", "49999"]
    );
    assert_eq!(
        run(&mut e, c, &words("ZREMRANGEBYRANK z 0 9")),
        Frame::Integer(10)
    );
    assert_eq!(run(&mut e, c, &words("ZRANK z m12")), Frame::Integer(0));
    assert_eq!(run(&mut e, c, &words("ZCARD z")), Frame::Integer(49_987));
}
