//! Pub/sub: how a lock's waiters hear that it was released.
//!
//! `PUBLISH` queues a push frame in every receiving client's outbox (channel subscribers, then
//! matching pattern subscriptions) and replies how many received it. Subscription confirmations
//! are pushes too: the first is the command's reply, further ones (one per extra channel) follow
//! in the client's own outbox, in the order Redis writes them. A RESP2 client with subscriptions
//! may only run the commands flagged for the pub/sub context (see the command table). The
//! registry of who listens to what is the engine's, which keeps it equal to the clients' own
//! subscriptions.
//!
//! Sharded pub/sub (`SSUBSCRIBE`, `SUNSUBSCRIBE`, `SPUBLISH`, `PUBSUB SHARDCHANNELS` and
//! `SHARDNUMSUB`) is the same machinery over the engine's third registry: its confirmations count
//! the shard channels alone, while the pub/sub context counts every kind, as in Redis 7.0.

use super::{Args, CONTAINER, Caller, CmdResult, Cx, PUBSUB_CONTEXT, Spec, is, unknown_subcommand};
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
pub(crate) static SSUBSCRIBE: Spec = Spec::new("ssubscribe", -2, PUBSUB_CONTEXT, subscribe_command);
pub(crate) static SUNSUBSCRIBE: Spec =
    Spec::new("sunsubscribe", -1, PUBSUB_CONTEXT, unsubscribe_command);
pub(crate) static PUBLISH: Spec = Spec::new("publish", 3, 0, publish_command);
pub(crate) static SPUBLISH: Spec = Spec::new("spublish", 3, 0, spublish_command);
pub(crate) static PUBSUB: Spec = Spec::new("pubsub", -2, CONTAINER, pubsub_command);

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

/// `SUBSCRIBE channel…`, `PSUBSCRIBE pattern…` and `SSUBSCRIBE shardchannel…`.
fn subscribe_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (kind, confirm) = if is(args.name(), "psubscribe") {
        (Subscription::Pattern, "psubscribe")
    } else if is(args.name(), "ssubscribe") {
        // A transaction expects one reply per command, and confirmations would send more: Redis
        // refuses a shard subscription where blocking is denied (`CLIENT_DENY_BLOCKING`), while
        // SUBSCRIBE and PSUBSCRIBE still run there.
        if cx.caller == Caller::Transaction {
            return Err(Frame::error(
                "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
            ));
        }
        (Subscription::Shard, "ssubscribe")
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

/// `UNSUBSCRIBE [channel…]`, `PUNSUBSCRIBE [pattern…]` and `SUNSUBSCRIBE [shardchannel…]`:
/// without names, from every one of that kind.
fn unsubscribe_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (kind, confirm) = if is(args.name(), "punsubscribe") {
        (Subscription::Pattern, "punsubscribe")
    } else if is(args.name(), "sunsubscribe") {
        (Subscription::Shard, "sunsubscribe")
    } else {
        (Subscription::Channel, "unsubscribe")
    };
    let names: Vec<Bytes> = if args.remaining() > 0 {
        args.rest().to_vec()
    } else {
        cx.subscriptions(kind)
    };
    if names.is_empty() {
        let count = cx.client().confirmed_count(kind);
        return Ok(confirmation(confirm, None, count));
    }
    let mut frames = Vec::with_capacity(names.len());
    for name in names {
        let count = cx.unsubscribe(kind, &name);
        frames.push(confirmation(confirm, Some(name), count));
    }
    Ok(reply_with(cx, frames))
}

fn publish_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (channel, message) = (args.next_bytes()?, args.next_bytes()?);
    Ok(Frame::Integer(cx.publish(channel, message)))
}

fn spublish_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (channel, message) = (args.next_bytes()?, args.next_bytes()?);
    Ok(Frame::Integer(cx.spublish(channel, message)))
}

/// `PUBSUB CHANNELS [pattern]`, `NUMSUB [channel…]`, `NUMPAT`, `SHARDCHANNELS [pattern]`,
/// `SHARDNUMSUB [shardchannel…]`.
fn pubsub_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let engine = cx.engine();
    let shard = is(sub, "shardchannels") || is(sub, "shardnumsub");
    if is(sub, "channels") || is(sub, "shardchannels") {
        if args.remaining() > 1 {
            return Err(super::error_echoing(&[
                b"ERR unknown subcommand or wrong number of arguments for '",
                super::c_text(sub, 128),
                b"'. Try PUBSUB HELP.",
            ]));
        }
        let pattern = args.next();
        let names: Box<dyn Iterator<Item = &Bytes>> = if shard {
            Box::new(engine.shard_channel_names())
        } else {
            Box::new(engine.channel_names())
        };
        return Ok(Frame::Array(
            names
                .filter(|ch| pattern.is_none_or(|p| glob_match(p, ch)))
                .map(|ch| Frame::Bulk(ch.clone()))
                .collect(),
        ));
    }
    if is(sub, "numsub") || is(sub, "shardnumsub") {
        let mut out = Vec::new();
        for ch in args {
            let count = if shard {
                engine.shard_channel_subscribers(ch)
            } else {
                engine.channel_subscribers(ch)
            };
            out.push(Frame::Bulk(ch.clone()));
            out.push(Frame::Integer(count as i64));
        }
        return Ok(Frame::Array(out));
    }
    if is(sub, "numpat") {
        if args.remaining() != 0 {
            return Err(super::wrong_arity("pubsub|numpat"));
        }
        return Ok(Frame::Integer(engine.pattern_count() as i64));
    }
    if is(sub, "help") && args.remaining() == 0 {
        return Ok(Frame::Array(
            PUBSUB_HELP.iter().map(|line| Frame::simple(line)).collect(),
        ));
    }
    Err(unknown_subcommand("PUBSUB", sub))
}

/// `PUBSUB HELP`, as Redis 7.0 words it.
const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];
