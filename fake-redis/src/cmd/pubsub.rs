//! Pub/sub: how a lock's waiters hear that it was released.
//!
//! `PUBLISH` queues a push frame in every receiving client's outbox (channel subscribers, then
//! matching pattern subscriptions) and replies how many received it. Subscription confirmations
//! are pushes too: the first is the command's reply, further ones (one per extra channel) follow
//! in the client's own outbox, in the order Redis writes them. A RESP2 client with subscriptions
//! may only run the commands flagged for the pub/sub context (see the command table).

use super::{PUBSUB_CONTEXT, Spec, glob_match, is, unknown_subcommand};
use crate::engine::{Client, Cx, remove_subscriber};
use crate::frame::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) static SUBSCRIBE: Spec = Spec::new("subscribe", -2, PUBSUB_CONTEXT, subscribe_command);
pub(crate) static UNSUBSCRIBE: Spec =
    Spec::new("unsubscribe", -1, PUBSUB_CONTEXT, unsubscribe_command);
pub(crate) static PSUBSCRIBE: Spec = Spec::new("psubscribe", -2, PUBSUB_CONTEXT, subscribe_command);
pub(crate) static PUNSUBSCRIBE: Spec =
    Spec::new("punsubscribe", -1, PUBSUB_CONTEXT, unsubscribe_command);
pub(crate) static PUBLISH: Spec = Spec::new("publish", 3, 0, publish_command);
pub(crate) static PUBSUB: Spec = Spec::new("pubsub", -2, 0, pubsub_command);

fn confirmation(kind: &'static str, name: Option<Bytes>, count: usize) -> Frame {
    Frame::Push(vec![
        Frame::Bulk(Bytes::from_static(kind.as_bytes())),
        name.map_or(Frame::Null, Frame::Bulk),
        Frame::Integer(count as i64),
    ])
}

/// Sends a batch of confirmations: the first is the reply, the rest go to the client's outbox.
fn reply_with(cx: &mut Cx<'_>, mut frames: Vec<Frame>) -> Frame {
    let now = cx.now;
    let rest = frames.split_off(1.min(frames.len()));
    let client = cx.client();
    for f in rest {
        client.push(now, f);
    }
    frames.pop().unwrap_or(Frame::Null)
}

fn subscribe_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let pattern = is(&argv[0], "psubscribe");
    let id = cx.client;
    let mut frames = Vec::with_capacity(argv.len() - 1);
    for name in &argv[1..] {
        let client = cx.client();
        let new = if pattern {
            client.patterns.insert(name.clone())
        } else {
            client.channels.insert(name.clone())
        };
        let count = client.subscriptions();
        if new {
            let map = if pattern {
                &mut cx.engine.patterns
            } else {
                &mut cx.engine.channels
            };
            map.entry(name.clone()).or_default().insert(id);
        }
        let kind = if pattern { "psubscribe" } else { "subscribe" };
        frames.push(confirmation(kind, Some(name.clone()), count));
    }
    reply_with(cx, frames)
}

fn unsubscribe_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let pattern = is(&argv[0], "punsubscribe");
    let kind = if pattern {
        "punsubscribe"
    } else {
        "unsubscribe"
    };
    let id = cx.client;
    let names: Vec<Bytes> = if argv.len() > 1 {
        argv[1..].to_vec()
    } else {
        let client = cx.client();
        let set = if pattern {
            &client.patterns
        } else {
            &client.channels
        };
        set.iter().cloned().collect()
    };
    if names.is_empty() {
        let count = cx.client().subscriptions();
        return confirmation(kind, None, count);
    }
    let mut frames = Vec::with_capacity(names.len());
    for name in names {
        let client = cx.client();
        let removed = if pattern {
            client.patterns.remove(&name)
        } else {
            client.channels.remove(&name)
        };
        let count = client.subscriptions();
        if removed {
            let map = if pattern {
                &mut cx.engine.patterns
            } else {
                &mut cx.engine.channels
            };
            remove_subscriber(map, &name, id);
        }
        frames.push(confirmation(kind, Some(name), count));
    }
    reply_with(cx, frames)
}

/// `PUBLISH channel message`: how many clients received it.
pub(crate) fn publish(cx: &mut Cx<'_>, channel: &[u8], message: &[u8]) -> i64 {
    let now = cx.now;
    let engine = &mut *cx.engine;
    let mut receivers = 0;
    if let Some(ids) = engine.channels.get(channel) {
        let frame = Frame::Push(vec![
            Frame::Bulk(Bytes::from_static(b"message")),
            Frame::bulk_from(channel),
            Frame::bulk_from(message),
        ]);
        receivers += deliver(&mut engine.clients, ids, now, &frame);
    }
    for (pattern, ids) in &engine.patterns {
        if !glob_match(pattern, channel) {
            continue;
        }
        let frame = Frame::Push(vec![
            Frame::Bulk(Bytes::from_static(b"pmessage")),
            Frame::Bulk(pattern.clone()),
            Frame::bulk_from(channel),
            Frame::bulk_from(message),
        ]);
        receivers += deliver(&mut engine.clients, ids, now, &frame);
    }
    receivers
}

/// Pushes `frame` to every connected client of `ids`: how many there were.
fn deliver(
    clients: &mut BTreeMap<u64, Client>,
    ids: &BTreeSet<u64>,
    now: i64,
    frame: &Frame,
) -> i64 {
    let mut delivered = 0;
    for id in ids {
        if let Some(c) = clients.get_mut(id) {
            c.push(now, frame.clone());
            delivered += 1;
        }
    }
    delivered
}

fn publish_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    Frame::Integer(publish(cx, &argv[1], &argv[2]))
}

fn pubsub_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let sub = &argv[1];
    let engine = &*cx.engine;
    if is(sub, "channels") {
        if argv.len() > 3 {
            return Frame::error_owned(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(sub)
            ));
        }
        let pattern = argv.get(2);
        return Frame::Array(
            engine
                .channels
                .keys()
                .filter(|ch| pattern.is_none_or(|p| glob_match(p, ch)))
                .map(|ch| Frame::Bulk(ch.clone()))
                .collect(),
        );
    }
    if is(sub, "numsub") {
        let mut out = Vec::new();
        for ch in &argv[2..] {
            let n = engine.channels.get(ch).map_or(0, |s| s.len());
            out.push(Frame::Bulk(ch.clone()));
            out.push(Frame::Integer(n as i64));
        }
        return Frame::Array(out);
    }
    if is(sub, "numpat") {
        if argv.len() != 2 {
            return super::wrong_arity("pubsub|numpat");
        }
        return Frame::Integer(engine.patterns.len() as i64);
    }
    unknown_subcommand("PUBSUB", sub)
}
