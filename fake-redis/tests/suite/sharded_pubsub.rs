//! Sharded pub/sub (`SSUBSCRIBE`, `SUNSUBSCRIBE`, `SPUBLISH`, `PUBSUB SHARDCHANNELS` and
//! `SHARDNUMSUB`) byte for byte against a redis-server of the test's own, in RESP2 and RESP3,
//! with several connections: what each command writes back to its own connection, confirmations
//! and messages included.
//!
//! Each step runs one command on one connection and then `PING <marker>` on it; everything that
//! connection receives before the marker's reply is the step's output. So a message that another
//! connection's `SPUBLISH` queued is read deterministically on both servers, with no timing.
//! Inside `MULTI` a step is the command's one reply, with no marker.
//!
//! One thing is left out on purpose: `SUNSUBSCRIBE` without names on a connection with several
//! shard channels confirms them in the order of Redis's dict, which is a hash order; the fake
//! confirms them in name order. The steps below give that form one channel at a time.

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::{Frame, encode};
use fake_redis::{ClientId, Engine, ManualClock};
use support::OwnServer;
use support::raw::Real;

/// Runs `argv` on a connection to the real server, then `PING marker`: every byte received
/// before the marker's reply (inside `MULTI`, the command's one reply).
fn real_step(conn: &mut Real, argv: &[&str], marker: &str, protocol: u8, after: After) -> Vec<u8> {
    let raw: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    conn.send(&raw);
    if after == InMulti {
        return conn.reply();
    }
    conn.send(&[b"PING", marker.as_bytes()]);
    conn.read_until(&ping_reply(marker, protocol, after))
}

/// The state a step leaves its connection in, which decides how `PING marker` answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum After {
    Plain,
    Subscribed,
    InMulti,
}
use After::{InMulti, Plain, Subscribed};

/// `PING marker`'s reply: a bulk string, or in RESP2's pub/sub context `["pong", marker]`.
fn ping_reply(marker: &str, protocol: u8, after: After) -> Vec<u8> {
    let frame = match after {
        Subscribed if protocol == 2 => Frame::Array(vec![
            Frame::bulk_from(b"pong"),
            Frame::bulk_from(marker.as_bytes()),
        ]),
        _ => Frame::bulk_from(marker.as_bytes()),
    };
    let mut out = BytesMut::new();
    encode(&frame, protocol, &mut out);
    out.to_vec()
}

/// The fake's side of one step, as its server would write it: messages queued for the client
/// before the command, the reply, then what the command queued (further confirmations), each
/// in the protocol the connection speaks at that moment.
fn fake_step(engine: &mut Engine, client: ClientId, argv: &[&str]) -> Vec<u8> {
    let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::from(a.to_string())).collect();
    let mut out = BytesMut::new();
    for frame in engine.drain_outbox(client) {
        encode(&frame, engine.protocol(client), &mut out);
    }
    let reply = engine.execute(client, &argv);
    encode(&reply, engine.protocol(client), &mut out);
    for frame in engine.drain_outbox(client) {
        encode(&frame, engine.protocol(client), &mut out);
    }
    out.to_vec()
}

/// (connection, command, the state that connection is in once the command ran).
type Step = (usize, &'static [&'static str], After);

const STEPS: &[Step] = &[
    (0, &["SSUBSCRIBE", "orders", "stock"], Subscribed),
    (0, &["SUBSCRIBE", "orders"], Subscribed),
    (0, &["PSUBSCRIBE", "ord*"], Subscribed),
    (0, &["SSUBSCRIBE", "orders"], Subscribed),
    (0, &["SUNSUBSCRIBE", "nosuch"], Subscribed),
    (0, &["CLIENT", "GETNAME"], Subscribed),
    (0, &["CONFIG", "GET", "maxclients"], Subscribed),
    (0, &["CLIENT", "BOGUS"], Subscribed),
    (1, &["SPUBLISH", "orders", "first"], Plain),
    (1, &["PUBLISH", "orders", "plain"], Plain),
    (1, &["SPUBLISH", "nobody", "x"], Plain),
    (1, &["PUBSUB", "SHARDCHANNELS", "ord*"], Plain),
    (1, &["PUBSUB", "SHARDCHANNELS", "a", "b"], Plain),
    (1, &["PUBSUB", "SHARDNUMSUB", "orders", "nope", ""], Plain),
    (1, &["PUBSUB", "SHARDNUMSUB"], Plain),
    (1, &["PUBSUB", "NUMSUB", "orders"], Plain),
    (1, &["PUBSUB", "CHANNELS"], Plain),
    (1, &["PUBSUB", "HELP"], Plain),
    (1, &["SPUBLISH", "orders"], Plain),
    (1, &["SSUBSCRIBE"], Plain),
    (1, &["SUNSUBSCRIBE"], Plain),
    (1, &["MULTI"], InMulti),
    (1, &["SSUBSCRIBE", "inmulti"], InMulti),
    (1, &["SPUBLISH", "orders", "from multi"], InMulti),
    (1, &["EXEC"], Plain),
    (
        1,
        &[
            "EVAL",
            "return redis.call('spublish', 'orders', 'from lua')",
            "0",
        ],
        Plain,
    ),
    (
        1,
        &["EVAL", "return redis.call('ssubscribe', 'orders')", "0"],
        Plain,
    ),
    (
        1,
        &[
            "EVAL_RO",
            "return redis.call('spublish', 'orders', 'ro')",
            "0",
        ],
        Plain,
    ),
    (0, &["PING"], Subscribed),
    (0, &["SUNSUBSCRIBE", "stock"], Subscribed),
    (1, &["PUBSUB", "SHARDCHANNELS"], Plain),
    (0, &["UNSUBSCRIBE"], Subscribed),
    (0, &["PUNSUBSCRIBE"], Subscribed),
    // Only the shard channel is left: still a subscriber.
    (0, &["GET", "k"], Subscribed),
    (0, &["SUNSUBSCRIBE"], Plain),
    (0, &["SUNSUBSCRIBE"], Plain),
    (0, &["GET", "k"], Plain),
    (2, &["SSUBSCRIBE", "gone"], Subscribed),
    (2, &["RESET"], Plain),
    (1, &["PUBSUB", "SHARDNUMSUB", "gone"], Plain),
    (1, &["SPUBLISH", "gone", "after reset"], Plain),
    (2, &["INFO", "nosuchsection"], Plain),
];

fn compare(protocol: u8) -> Vec<String> {
    let server = OwnServer::start();
    let mut real: Vec<Real> = (0..3).map(|_| Real::connect(server.port)).collect();
    let mut engine = Engine::new(ManualClock::default());
    let fake: Vec<ClientId> = (0..3).map(|_| engine.connect()).collect();
    if protocol == 3 {
        for (r, f) in real.iter_mut().zip(&fake) {
            real_step(r, &["HELLO", "3"], "hello", 3, Plain);
            fake_step(&mut engine, *f, &["HELLO", "3"]);
        }
    }
    let mut mismatches = Vec::new();
    for (n, (conn, argv, after)) in STEPS.iter().enumerate() {
        let marker = format!("step-{n}");
        let want = real_step(&mut real[*conn], argv, &marker, protocol, *after);
        let got = fake_step(&mut engine, fake[*conn], argv);
        if *after != InMulti {
            let ping = fake_step(&mut engine, fake[*conn], &["PING", &marker]);
            assert_eq!(
                String::from_utf8_lossy(&ping),
                String::from_utf8_lossy(&ping_reply(&marker, protocol, *after)),
                "RESP{protocol} step {n}: the fake's state after {argv:?}"
            );
        }
        if got != want {
            mismatches.push(support::raw::mismatch(
                &format!("RESP{protocol} step {n} on connection {conn}: {argv:?}"),
                &want,
                &got,
            ));
        }
    }
    mismatches
}

#[test]
fn sharded_pub_sub_matches_redis_byte_for_byte_in_resp2() {
    let mismatches = compare(2);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn sharded_pub_sub_matches_redis_byte_for_byte_in_resp3() {
    let mismatches = compare(3);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn a_shard_message_reaches_only_shard_subscribers_and_a_disconnect_leaves_nothing() {
    let mut engine = Engine::new(ManualClock::default());
    let (shard, plain, publisher) = (engine.connect(), engine.connect(), engine.connect());
    fake_step(&mut engine, shard, &["SSUBSCRIBE", "ch"]);
    fake_step(&mut engine, plain, &["SUBSCRIBE", "ch"]);
    fake_step(&mut engine, plain, &["PSUBSCRIBE", "*"]);
    let receivers = fake_step(&mut engine, publisher, &["SPUBLISH", "ch", "m"]);
    assert_eq!(receivers, b":1\r\n", "one shard subscriber, no pattern");
    assert_eq!(
        engine.drain_outbox(shard),
        vec![Frame::Push(vec![
            Frame::bulk_from(b"smessage"),
            Frame::bulk_from(b"ch"),
            Frame::bulk_from(b"m"),
        ])]
    );
    assert!(engine.drain_outbox(plain).is_empty(), "PUBLISH's namespace");
    assert!(engine.is_subscriber(shard));

    engine.disconnect(shard);
    let receivers = fake_step(&mut engine, publisher, &["SPUBLISH", "ch", "m"]);
    assert_eq!(receivers, b":0\r\n", "a closed connection hears nothing");
    let numsub = fake_step(&mut engine, publisher, &["PUBSUB", "SHARDNUMSUB", "ch"]);
    assert_eq!(numsub, b"*2\r\n$2\r\nch\r\n:0\r\n");
}
