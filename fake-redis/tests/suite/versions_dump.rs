//! `DUMP` and `RESTORE` of a stream by release: Redis 7.4 writes `RDB_TYPE_STREAM_LISTPACKS_3`
//! (each consumer's active time too) under RDB version 12, Redis 7.0 `_2` under 10; 7.4 reads
//! 7.0's payloads (active time taken from seen time), and 7.0 refuses 7.4's. The payloads and
//! replies were read off redis-server 7.4.1 and 7.0.15; with `REDIS_7_4_SERVER` or
//! `REDIS_7_0_SERVER` naming a binary, a test asks that server too. Also the stream node size
//! settings, which decide where nodes are cut and so the payload's bytes.

use crate::versions::{Oracle, engine};
use bytes::Bytes;
use fake_redis::{Engine, Frame, Version};

/// Writes that leave a stream whose payload holds no time: a deleted entry, entries of two
/// field layouts, and a group with a read counter but no consumer.
const NO_TIMES: &[&[&str]] = &[
    &["XADD", "k", "1-1", "f", "v"],
    &["XADD", "k", "2-1", "f", "v", "g", "w"],
    &["XDEL", "k", "1-1"],
    &["XGROUP", "CREATE", "k", "g", "0", "ENTRIESREAD", "1"],
];

// The payloads of `NO_TIMES` on 7.4.1 (`DET74`) and 7.0.15 (`DET70`); the payloads of a stream
// with a group, a pending entry and two consumers, one never active (`CONS74`, `CONS70`); what
// 7.4.1's `XINFO STREAM k FULL` answers after restoring each of those (`FULL74`, `FULL70ON74`).
const DET74: &[u8] = b"\x15\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x0133\x00\x00\x00\x13\x00\x01\x01\x01\x01\x01\x01\x81f\x02\x00\x01\x03\x01\x00\x01\x00\x01\x81v\x02\x04\x01\x00\x01\x01\x01\x00\x01\x02\x01\x81f\x02\x81v\x02\x81g\x02\x81w\x02\x08\x01\xff\x01\x02\x01\x02\x01\x01\x01\x02\x01\x01g\x00\x00\x01\x00\x00\x0c\x00R\x8b<g&f\x16\x1f";
const CONS74: &[u8] = b"\x15\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01((\x00\x00\x00\x0f\x00\x02\x01\x00\x01\x01\x01\x81f\x02\x00\x01\x02\x01\x00\x01\x00\x01\x81v\x02\x04\x01\x02\x01\x01\x01\x00\x01\x81v\x02\x04\x01\xff\x02\x02\x01\x01\x01\x00\x00\x02\x01\x01g\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01~)\xd8R\xa2\x01\x00\x00\x01\x02\x05alice~)\xd8R\xa2\x01\x00\x00~)\xd8R\xa2\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x03bob\x7f)\xd8R\xa2\x01\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x00\x0c\x00W4\xadOL\xf1nu";
const FULL74: &[u8] = b"*18\x0d\x0a$6\x0d\x0alength\x0d\x0a:2\x0d\x0a$15\x0d\x0aradix-tree-keys\x0d\x0a:1\x0d\x0a$16\x0d\x0aradix-tree-nodes\x0d\x0a:2\x0d\x0a$17\x0d\x0alast-generated-id\x0d\x0a$3\x0d\x0a2-1\x0d\x0a$20\x0d\x0amax-deleted-entry-id\x0d\x0a$3\x0d\x0a0-0\x0d\x0a$13\x0d\x0aentries-added\x0d\x0a:2\x0d\x0a$23\x0d\x0arecorded-first-entry-id\x0d\x0a$3\x0d\x0a1-1\x0d\x0a$7\x0d\x0aentries\x0d\x0a*2\x0d\x0a*2\x0d\x0a$3\x0d\x0a1-1\x0d\x0a*2\x0d\x0a$1\x0d\x0af\x0d\x0a$1\x0d\x0av\x0d\x0a*2\x0d\x0a$3\x0d\x0a2-1\x0d\x0a*2\x0d\x0a$1\x0d\x0af\x0d\x0a$1\x0d\x0av\x0d\x0a$6\x0d\x0agroups\x0d\x0a*1\x0d\x0a*14\x0d\x0a$4\x0d\x0aname\x0d\x0a$1\x0d\x0ag\x0d\x0a$17\x0d\x0alast-delivered-id\x0d\x0a$3\x0d\x0a1-1\x0d\x0a$12\x0d\x0aentries-read\x0d\x0a:1\x0d\x0a$3\x0d\x0alag\x0d\x0a:1\x0d\x0a$9\x0d\x0apel-count\x0d\x0a:1\x0d\x0a$7\x0d\x0apending\x0d\x0a*1\x0d\x0a*4\x0d\x0a$3\x0d\x0a1-1\x0d\x0a$5\x0d\x0aalice\x0d\x0a:1796686227838\x0d\x0a:1\x0d\x0a$9\x0d\x0aconsumers\x0d\x0a*2\x0d\x0a*10\x0d\x0a$4\x0d\x0aname\x0d\x0a$5\x0d\x0aalice\x0d\x0a$9\x0d\x0aseen-time\x0d\x0a:1796686227838\x0d\x0a$11\x0d\x0aactive-time\x0d\x0a:1796686227838\x0d\x0a$9\x0d\x0apel-count\x0d\x0a:1\x0d\x0a$7\x0d\x0apending\x0d\x0a*1\x0d\x0a*3\x0d\x0a$3\x0d\x0a1-1\x0d\x0a:1796686227838\x0d\x0a:1\x0d\x0a*10\x0d\x0a$4\x0d\x0aname\x0d\x0a$3\x0d\x0abob\x0d\x0a$9\x0d\x0aseen-time\x0d\x0a:1796686227839\x0d\x0a$11\x0d\x0aactive-time\x0d\x0a:-1\x0d\x0a$9\x0d\x0apel-count\x0d\x0a:0\x0d\x0a$7\x0d\x0apending\x0d\x0a*0\x0d\x0a";
const DET70: &[u8] = b"\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x0133\x00\x00\x00\x13\x00\x01\x01\x01\x01\x01\x01\x81f\x02\x00\x01\x03\x01\x00\x01\x00\x01\x81v\x02\x04\x01\x00\x01\x01\x01\x00\x01\x02\x01\x81f\x02\x81v\x02\x81g\x02\x81w\x02\x08\x01\xff\x01\x02\x01\x02\x01\x01\x01\x02\x01\x01g\x00\x00\x01\x00\x00\x0a\x00\xef\xbc\x9f\xdd\xbb\xef\xd5\x0a";
const CONS70: &[u8] = b"\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01((\x00\x00\x00\x0f\x00\x02\x01\x00\x01\x01\x01\x81f\x02\x00\x01\x02\x01\x00\x01\x00\x01\x81v\x02\x04\x01\x02\x01\x01\x01\x00\x01\x81v\x02\x04\x01\xff\x02\x02\x01\x01\x01\x00\x00\x02\x01\x01g\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01I*\xd8R\xa2\x01\x00\x00\x01\x02\x05aliceI*\xd8R\xa2\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x03bobJ*\xd8R\xa2\x01\x00\x00\x00\x0a\x00\xc7\xe8\xdcS&\x85\xbe\xe1";
const FULL70ON74: &[u8] = b"*18\x0d\x0a$6\x0d\x0alength\x0d\x0a:2\x0d\x0a$15\x0d\x0aradix-tree-keys\x0d\x0a:1\x0d\x0a$16\x0d\x0aradix-tree-nodes\x0d\x0a:2\x0d\x0a$17\x0d\x0alast-generated-id\x0d\x0a$3\x0d\x0a2-1\x0d\x0a$20\x0d\x0amax-deleted-entry-id\x0d\x0a$3\x0d\x0a0-0\x0d\x0a$13\x0d\x0aentries-added\x0d\x0a:2\x0d\x0a$23\x0d\x0arecorded-first-entry-id\x0d\x0a$3\x0d\x0a1-1\x0d\x0a$7\x0d\x0aentries\x0d\x0a*2\x0d\x0a*2\x0d\x0a$3\x0d\x0a1-1\x0d\x0a*2\x0d\x0a$1\x0d\x0af\x0d\x0a$1\x0d\x0av\x0d\x0a*2\x0d\x0a$3\x0d\x0a2-1\x0d\x0a*2\x0d\x0a$1\x0d\x0af\x0d\x0a$1\x0d\x0av\x0d\x0a$6\x0d\x0agroups\x0d\x0a*1\x0d\x0a*14\x0d\x0a$4\x0d\x0aname\x0d\x0a$1\x0d\x0ag\x0d\x0a$17\x0d\x0alast-delivered-id\x0d\x0a$3\x0d\x0a1-1\x0d\x0a$12\x0d\x0aentries-read\x0d\x0a:1\x0d\x0a$3\x0d\x0alag\x0d\x0a:1\x0d\x0a$9\x0d\x0apel-count\x0d\x0a:1\x0d\x0a$7\x0d\x0apending\x0d\x0a*1\x0d\x0a*4\x0d\x0a$3\x0d\x0a1-1\x0d\x0a$5\x0d\x0aalice\x0d\x0a:1796686228041\x0d\x0a:1\x0d\x0a$9\x0d\x0aconsumers\x0d\x0a*2\x0d\x0a*10\x0d\x0a$4\x0d\x0aname\x0d\x0a$5\x0d\x0aalice\x0d\x0a$9\x0d\x0aseen-time\x0d\x0a:1796686228041\x0d\x0a$11\x0d\x0aactive-time\x0d\x0a:1796686228041\x0d\x0a$9\x0d\x0apel-count\x0d\x0a:1\x0d\x0a$7\x0d\x0apending\x0d\x0a*1\x0d\x0a*3\x0d\x0a$3\x0d\x0a1-1\x0d\x0a:1796686228041\x0d\x0a:1\x0d\x0a*10\x0d\x0a$4\x0d\x0aname\x0d\x0a$3\x0d\x0abob\x0d\x0a$9\x0d\x0aseen-time\x0d\x0a:1796686228042\x0d\x0a$11\x0d\x0aactive-time\x0d\x0a:1796686228042\x0d\x0a$9\x0d\x0apel-count\x0d\x0a:0\x0d\x0a$7\x0d\x0apending\x0d\x0a*0\x0d\x0a";

fn call(e: &mut Engine, words: &[&[u8]]) -> Frame {
    let c = e.connect();
    let argv: Vec<Bytes> = words.iter().map(|w| Bytes::copy_from_slice(w)).collect();
    e.execute(c, &argv)
}

fn resp2(frame: &Frame) -> Vec<u8> {
    let mut out = bytes::BytesMut::new();
    fake_redis::resp::encode(frame, 2, &mut out);
    out.to_vec()
}

fn bulk(frame: Frame) -> Vec<u8> {
    match frame {
        Frame::Bulk(b) => b.to_vec(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// The real server `variable` names, if any, flushed.
fn oracle(variable: &str) -> Option<Oracle> {
    let mut o = Oracle::start(variable)?;
    o.conn.call(&[b"FLUSHALL"]);
    Some(o)
}

#[test]
fn a_stream_s_dump_is_its_release_s_bytes() {
    for (version, variable, want) in [
        (Version::V7_4, "REDIS_7_4_SERVER", DET74),
        (Version::V7_0, "REDIS_7_0_SERVER", DET70),
    ] {
        let mut e = engine(version);
        for words in NO_TIMES {
            let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            call(&mut e, &words);
        }
        assert_eq!(bulk(call(&mut e, &[b"DUMP", b"k"])), want, "{version}");
        if let Some(mut o) = oracle(variable) {
            for words in NO_TIMES {
                let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
                o.conn.call(&words);
            }
            let mut want_reply = format!("${}\r\n", want.len()).into_bytes();
            want_reply.extend_from_slice(want);
            want_reply.extend_from_slice(b"\r\n");
            assert_eq!(o.conn.call(&[b"DUMP", b"k"]), want_reply, "{variable}");
        }
    }
}

#[test]
fn redis_7_4_restores_both_releases_stream_payloads_with_their_consumer_times() {
    let mut oracle = oracle("REDIS_7_4_SERVER");
    for (payload, full) in [(CONS74, FULL74), (CONS70, FULL70ON74)] {
        let mut e = engine(Version::V7_4);
        assert_eq!(call(&mut e, &[b"RESTORE", b"k", b"0", payload]), Frame::OK);
        let info: [&[u8]; 4] = [b"XINFO", b"STREAM", b"k", b"FULL"];
        assert_eq!(
            String::from_utf8_lossy(&resp2(&call(&mut e, &info))),
            String::from_utf8_lossy(full)
        );
        // What 7.4 dumps of it is 7.4's payload: the active times kept, or the seen times
        // where the payload had none.
        let again = bulk(call(&mut e, &[b"DUMP", b"k"]));
        if payload == CONS74 {
            assert_eq!(again, payload);
        }
        let mut back = engine(Version::V7_4);
        assert_eq!(
            call(&mut back, &[b"RESTORE", b"k", b"0", &again]),
            Frame::OK
        );
        assert_eq!(resp2(&call(&mut back, &info)), full);
        if let Some(o) = &mut oracle {
            o.conn.call(&[b"DEL", b"k"]);
            assert_eq!(o.conn.call(&[b"RESTORE", b"k", b"0", payload]), b"+OK\r\n");
            assert_eq!(o.conn.call(&info), full);
        }
    }
}

#[test]
fn redis_7_0_refuses_redis_7_4_s_payloads() {
    let mut e = engine(Version::V7_0);
    let version = b"-ERR DUMP payload version or checksum are wrong\r\n".to_vec();
    assert_eq!(
        resp2(&call(&mut e, &[b"RESTORE", b"k", b"0", CONS74])),
        version
    );
    // 7.4's stream type under 7.0's footer: the footer passes, the type is unknown.
    let mut body = CONS74[..CONS74.len() - 10].to_vec();
    body.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    let bad = b"-ERR Bad data format\r\n".to_vec();
    assert_eq!(resp2(&call(&mut e, &[b"RESTORE", b"k", b"0", &body])), bad);
    if let Some(mut o) = oracle("REDIS_7_0_SERVER") {
        assert_eq!(o.conn.call(&[b"RESTORE", b"k", b"0", CONS74]), version);
        assert_eq!(o.conn.call(&[b"RESTORE", b"k", b"0", &body]), bad);
    }
}

/// Redis's CRC64 (Jones polynomial, reflected).
fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in bytes {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = (crc >> 1)
                ^ if crc & 1 == 1 {
                    0x95ac_9329_ac4b_c9b5
                } else {
                    0
                };
        }
    }
    crc
}

#[test]
fn stream_node_settings_cut_nodes_and_bound_approximate_trims() {
    let mut e = engine(Version::V7_4);
    let mut oracle = oracle("REDIS_7_4_SERVER");
    let mut both = |words: &[&str]| -> Vec<u8> {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        let got = resp2(&call(&mut e, &words));
        if let Some(o) = &mut oracle {
            assert_eq!(o.conn.call(&words), got, "{words:?}");
        }
        got
    };
    both(&["CONFIG", "SET", "stream-node-max-entries", "10"]);
    for i in 1..=100 {
        both(&["XADD", "s", &format!("{i}-1"), "xitem", "v"]);
    }
    // Nodes of ten: a trim to about 55 that may take 30 entries takes three whole nodes.
    both(&[
        "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "101-1", "xitem", "v",
    ]);
    assert_eq!(both(&["XLEN", "s"]), b":71\r\n");
    assert_eq!(
        both(&["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "15"]),
        b":10\r\n"
    );
    // Without LIMIT, an approximate trim may take a hundred nodes' entries: all of them here.
    assert_eq!(both(&["XTRIM", "s", "MAXLEN", "~", "0"]), b":61\r\n");
    both(&["CONFIG", "SET", "stream-node-max-entries", "100"]);
    both(&["CONFIG", "SET", "stream-node-max-bytes", "50"]);
    for i in 1..=5 {
        both(&["XADD", "b", &format!("{i}-1"), "field", "value"]);
    }
    let info = both(&["XINFO", "STREAM", "b"]);
    assert!(
        String::from_utf8_lossy(&info).contains("radix-tree-keys\r\n:3\r\n"),
        "{}",
        String::from_utf8_lossy(&info)
    );
    both(&["CONFIG", "SET", "stream-node-max-bytes", "4096"]);
}
