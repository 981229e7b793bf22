//! Pub/sub: how a lock's waiters hear that it was released.
//!
//! `PUBLISH` queues a push frame in every receiving client's outbox (channel subscribers, then
//! matching pattern subscriptions) and replies how many received it. Subscription confirmations
//! are pushes too: the first is the command's reply, further ones (one per extra channel) follow
//! in the client's own outbox, in the order Redis writes them. A RESP2 client with subscriptions
//! may only run the commands flagged for the pub/sub context (see the command table). The
//! registry of who listens to what is the engine's, which keeps it equal to the clients' own
//! subscriptions.

use super::{Args, Cx, PUBSUB_CONTEXT, Reply, Spec, is, unknown_subcommand};
use crate::engine::Subscription;
use crate::engine::glob::glob_match;
use crate::resp::Frame;
use bytes::Bytes;

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

/// `SUBSCRIBE channel…` and `PSUBSCRIBE pattern…`.
fn subscribe_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let (kind, confirm) = if is(args.name(), "psubscribe") {
        (Subscription::Pattern, "psubscribe")
    } else {
        (Subscription::Channel, "subscribe")
    };
    let mut frames = Vec::with_capacity(args.remaining());
    for name in args {
        let count = cx.subscribe(kind, name);
        frames.push(confirmation(confirm, Some(name.clone()), count));
    }
    Ok(reply_with(cx, frames))
}

/// `UNSUBSCRIBE [channel…]` and `PUNSUBSCRIBE [pattern…]`: without names, from every one.
fn unsubscribe_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let (kind, confirm) = if is(args.name(), "punsubscribe") {
        (Subscription::Pattern, "punsubscribe")
    } else {
        (Subscription::Channel, "unsubscribe")
    };
    let names: Vec<Bytes> = if args.remaining() > 0 {
        args.rest().to_vec()
    } else {
        cx.subscriptions(kind)
    };
    if names.is_empty() {
        let count = cx.client().subscriptions();
        return Ok(confirmation(confirm, None, count));
    }
    let mut frames = Vec::with_capacity(names.len());
    for name in names {
        let count = cx.unsubscribe(kind, &name);
        frames.push(confirmation(confirm, Some(name), count));
    }
    Ok(reply_with(cx, frames))
}

fn publish_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let (channel, message) = (args.next_bytes()?, args.next_bytes()?);
    Ok(Frame::Integer(cx.publish(channel, message)))
}

/// `PUBSUB CHANNELS [pattern]`, `PUBSUB NUMSUB [channel…]`, `PUBSUB NUMPAT`.
fn pubsub_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let sub = args.next_bytes()?;
    let engine = cx.engine();
    if is(sub, "channels") {
        if args.remaining() > 1 {
            return Err(super::error_echoing(&[
                b"ERR unknown subcommand or wrong number of arguments for '",
                super::c_text(sub, 128),
                b"'. Try PUBSUB HELP.",
            ]));
        }
        let pattern = args.next();
        return Ok(Frame::Array(
            engine
                .channel_names()
                .filter(|ch| pattern.is_none_or(|p| glob_match(p, ch)))
                .map(|ch| Frame::Bulk(ch.clone()))
                .collect(),
        ));
    }
    if is(sub, "numsub") {
        let mut out = Vec::new();
        for ch in args {
            out.push(Frame::Bulk(ch.clone()));
            out.push(Frame::Integer(engine.channel_subscribers(ch) as i64));
        }
        return Ok(Frame::Array(out));
    }
    if is(sub, "numpat") {
        if args.remaining() != 0 {
            return Err(super::wrong_arity("pubsub|numpat"));
        }
        return Ok(Frame::Integer(engine.pattern_count() as i64));
    }
    Err(unknown_subcommand("PUBSUB", sub))
}
