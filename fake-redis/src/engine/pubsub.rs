//! The pub/sub registry: who listens to which channel or pattern, and delivery to their outboxes.
//!
//! A subscription lives in two places that must agree: the client's own sets (what
//! `UNSUBSCRIBE` without arguments and the RESP2 pub/sub context look at) and the registry from
//! name to subscribers (what `PUBLISH` walks). Every change goes through here, and a disconnect
//! or restart clears both, so a message never goes to a closed connection's outbox.
//!
//! Shard channels (Redis 7.0's `SSUBSCRIBE`/`SPUBLISH`) are a third registry: a name there is
//! not the same channel as that name under `SUBSCRIBE`, no pattern reaches it, and its message
//! is an `smessage`. On one node every shard channel is served here; a cluster client routes it to
//! the node of its slot.

use super::{Client, Engine, Subscription};
use crate::engine::glob::glob_match;
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

impl Engine {
    /// Subscribes client `id` to `name` (once): the count its confirmation carries then.
    pub(crate) fn subscribe(&mut self, id: u64, kind: Subscription, name: &Bytes) -> usize {
        let Some(client) = self.clients.get_mut(&id) else {
            return 0;
        };
        let added = client.subscribed(kind).insert(name.clone());
        let count = client.confirmed_count(kind);
        if added {
            self.registry_mut(kind)
                .entry(name.clone())
                .or_default()
                .insert(id);
        }
        count
    }

    /// Unsubscribes client `id` from `name`: the count its confirmation carries then.
    pub(crate) fn unsubscribe(&mut self, id: u64, kind: Subscription, name: &[u8]) -> usize {
        let Some(client) = self.clients.get_mut(&id) else {
            return 0;
        };
        let removed = client.subscribed(kind).remove(name);
        let count = client.confirmed_count(kind);
        if removed {
            remove_subscriber(self.registry_mut(kind), name, id);
        }
        count
    }

    /// The registry of one kind of subscription: name to subscribers.
    fn registry_mut(&mut self, kind: Subscription) -> &mut BTreeMap<Bytes, BTreeSet<u64>> {
        match kind {
            Subscription::Channel => &mut self.channels,
            Subscription::Pattern => &mut self.patterns,
            Subscription::Shard => &mut self.shard_channels,
        }
    }

    /// The names client `id` is subscribed to, of one kind, in order.
    pub(crate) fn subscriptions_of(&self, id: u64, kind: Subscription) -> Vec<Bytes> {
        let Some(client) = self.clients.get(&id) else {
            return Vec::new();
        };
        let names = match kind {
            Subscription::Channel => &client.channels,
            Subscription::Pattern => &client.patterns,
            Subscription::Shard => &client.shard_channels,
        };
        names.iter().cloned().collect()
    }

    /// Drops every subscription of client `id` without confirmations (`RESET`, a disconnect).
    pub(crate) fn unsubscribe_all(&mut self, id: u64) {
        let Some(client) = self.clients.get_mut(&id) else {
            return;
        };
        for ch in std::mem::take(&mut client.channels) {
            remove_subscriber(&mut self.channels, &ch, id);
        }
        for p in std::mem::take(&mut client.patterns) {
            remove_subscriber(&mut self.patterns, &p, id);
        }
        for ch in std::mem::take(&mut client.shard_channels) {
            remove_subscriber(&mut self.shard_channels, &ch, id);
        }
    }

    /// `PUBLISH channel message` at `now`: queues the message in the outbox of every subscriber
    /// of the channel, then of every matching pattern subscription; how many received it.
    pub(crate) fn publish(&mut self, channel: &[u8], message: &[u8], now: i64) -> i64 {
        let mut receivers = 0;
        if let Some(ids) = self.channels.get(channel) {
            let frame = Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"message")),
                Frame::bulk_from(channel),
                Frame::bulk_from(message),
            ]);
            receivers += deliver(&mut self.clients, ids, now, &frame);
        }
        for (pattern, ids) in &self.patterns {
            if !glob_match(pattern, channel) {
                continue;
            }
            let frame = Frame::Push(vec![
                Frame::Bulk(Bytes::from_static(b"pmessage")),
                Frame::Bulk(pattern.clone()),
                Frame::bulk_from(channel),
                Frame::bulk_from(message),
            ]);
            receivers += deliver(&mut self.clients, ids, now, &frame);
        }
        receivers
    }

    /// `SPUBLISH shardchannel message` at `now`: queues an `smessage` in the outbox of every
    /// subscriber of the shard channel; how many received it.
    pub(crate) fn spublish(&mut self, channel: &[u8], message: &[u8], now: i64) -> i64 {
        let Some(ids) = self.shard_channels.get(channel) else {
            return 0;
        };
        let frame = Frame::Push(vec![
            Frame::Bulk(Bytes::from_static(b"smessage")),
            Frame::bulk_from(channel),
            Frame::bulk_from(message),
        ]);
        deliver(&mut self.clients, ids, now, &frame)
    }

    /// Every shard channel with a subscriber, in order.
    pub(crate) fn shard_channel_names(&self) -> impl Iterator<Item = &Bytes> {
        self.shard_channels.keys()
    }

    /// How many shard channels have a subscriber (`INFO`'s `pubsubshard_channels`).
    pub(crate) fn shard_channel_count(&self) -> usize {
        self.shard_channels.len()
    }

    /// How many subscribers `channel` has as a shard channel.
    pub(crate) fn shard_channel_subscribers(&self, channel: &[u8]) -> usize {
        self.shard_channels.get(channel).map_or(0, BTreeSet::len)
    }

    /// Every channel with a subscriber, in order.
    pub(crate) fn channel_names(&self) -> impl Iterator<Item = &Bytes> {
        self.channels.keys()
    }

    /// How many channels have a subscriber.
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// How many subscribers `channel` has.
    pub(crate) fn channel_subscribers(&self, channel: &[u8]) -> usize {
        self.channels.get(channel).map_or(0, BTreeSet::len)
    }

    /// How many distinct patterns have a subscriber.
    pub(crate) fn pattern_count(&self) -> usize {
        self.patterns.len()
    }
}

fn remove_subscriber(map: &mut BTreeMap<Bytes, BTreeSet<u64>>, name: &[u8], id: u64) {
    if let Some(set) = map.get_mut(name) {
        set.remove(&id);
        if set.is_empty() {
            map.remove(name);
        }
    }
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
