//! Unlock messages on a cluster through sharded pub/sub (Redis 7.0's `SSUBSCRIBE`/`SPUBLISH`), as
//! Redisson sends them since 3.22.
//!
//! A plain `PUBLISH` on a cluster crosses every node's bus; `SPUBLISH` stays within the shard that
//! serves the channel's slot, and a lock's channel hashes to the lock's own slot (its hash tag). So
//! the subscriber must listen where each channel lives: [`ShardedSubscriber`] holds a cluster
//! connection of its own (RESP3, whose pushes it reads), which routes each `SSUBSCRIBE` to the
//! channel's primary.
//!
//! Subscriptions follow the cluster. A node that drops its connection, or that stops serving a
//! slot (a failover, a migration: Redis then sends `sunsubscribe` for the slot's channels, and the
//! subscriber also reads the cluster's shape every second, as Redisson's `scanInterval` does, to
//! see a channel's slot change hands even when no `sunsubscribe` comes), is a lost subscription: the lock hears [`PubSubEvent::SubscriptionLost`] (messages may have been
//! missed), and the subscriber subscribes every channel again where it lives now, reading a key of
//! the channel's slot first when a node answers with a redirection so that the connection learns
//! the slot's new owner, until all are back: [`PubSubEvent::SubscriptionRestored`], after which
//! every waiter retries once, so no wake-up is lost.

use crate::backend::{BackendError, PubSubEvent};
use crate::redis_backend::{SubCommand, SubscriberTask, classify};
use bytes::Bytes;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{PushInfo, PushKind, RedisError, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::sync::mpsc;

/// A [`Subscriber`](crate::backend::Subscriber) on a cluster's shard channels. See the
/// [module docs](self).
pub struct ShardedSubscriber {
    task: SubscriberTask,
}

impl ShardedSubscriber {
    /// Connects to the cluster `urls` belong to, for shard channels only.
    pub async fn connect<S: AsRef<str>>(
        urls: &[S],
        timeout: Duration,
    ) -> Result<ShardedSubscriber, RedisError> {
        let (push_tx, pushes) = mpsc::unbounded_channel::<PushInfo>();
        let client = ClusterClientBuilder::new(urls.iter().map(|u| u.as_ref().to_owned()))
            .use_protocol(redis::ProtocolVersion::RESP3)
            .push_sender(push_tx)
            .connection_timeout(timeout)
            .retries(3)
            .build()?;
        let conn = client.get_async_connection().await?;
        let task = SubscriberTask::spawn(|commands, events| run(conn, pushes, commands, events));
        Ok(ShardedSubscriber { task })
    }
}

crate::redis_backend::subscriber_by_task!(ShardedSubscriber);

/// The subscriber's task: carries out subscriptions, turns pushes into events, and restores
/// what a node lost.
async fn run(
    mut conn: ClusterConnection,
    mut pushes: mpsc::UnboundedReceiver<PushInfo>,
    mut commands: mpsc::UnboundedReceiver<SubCommand>,
    events: mpsc::UnboundedSender<PubSubEvent>,
) {
    let mut channels: BTreeSet<Bytes> = BTreeSet::new();
    // While lost: when to try restoring next, and the delay after that.
    let mut lost: Option<tokio::time::Instant> = None;
    let mut backoff = Duration::from_millis(50);
    // Each channel's primary at the last look at the cluster's shape.
    let mut owners: BTreeMap<Bytes, String> = BTreeMap::new();
    let mut scan = tokio::time::interval(SCAN_INTERVAL);
    scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let wake = lost;
        let retry = async move {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            command = commands.recv() => {
                let Some(command) = command else { return };
                let (ack, result) = match command {
                    SubCommand::Subscribe(channel, ack) => {
                        channels.insert(channel.clone());
                        // While lost, the restore subscribes it with the others.
                        let result = if lost.is_some() {
                            Ok(())
                        } else {
                            subscribe_where_it_lives(&mut conn, &channel).await
                        };
                        (ack, result)
                    }
                    SubCommand::Unsubscribe(channel, ack) => {
                        channels.remove(&channel);
                        let result = conn.sunsubscribe(&channel[..]).await.map_err(|e| classify(&e));
                        (ack, result)
                    }
                };
                let _ = ack.send(result);
            }
            push = pushes.recv() => {
                let Some(push) = push else { return };
                match push.kind {
                    PushKind::SMessage => {
                        if let [channel, payload, ..] = &push.data[..] {
                            let _ = events.send(PubSubEvent::Message {
                                channel: bytes_of(channel),
                                payload: bytes_of(payload),
                            });
                        }
                    }
                    // A node that stops serving a slot unsubscribes its channels; one that is
                    // unsubscribed at the lock's request is no longer in `channels`.
                    PushKind::SUnsubscribe
                        if push.data.first().is_some_and(|c| channels.contains(&bytes_of(c))) =>
                    {
                        lose(&mut lost, &mut backoff, &events, "a node stopped serving a channel's slot");
                    }
                    PushKind::Disconnection => {
                        lose(&mut lost, &mut backoff, &events, "a node's connection dropped");
                    }
                    _ => {}
                }
            }
            _ = scan.tick(), if !channels.is_empty() && lost.is_none() => {
                let Ok(shape) = primaries(&mut conn).await else { continue };
                let mut moved = false;
                for channel in &channels {
                    let owner = shape.owner_of(crate::keys::key_slot(channel));
                    if let Some(owner) = owner {
                        let before = owners.insert(channel.clone(), owner.to_owned());
                        moved |= before.is_some_and(|b| b != owner);
                    }
                }
                owners.retain(|c, _| channels.contains(c));
                if moved {
                    lose(&mut lost, &mut backoff, &events, "a channel's slot changed hands");
                }
            }
            () = retry => {
                let mut restored = true;
                for channel in &channels {
                    // A read of the channel's slot, which the connection routes by its slot map
                    // and follows if redirected: it learns the slot's owner before subscribing.
                    let _: Result<Value, _> =
                        redis::cmd("EXISTS").arg(&channel[..]).query_async(&mut conn).await;
                    if let Err(e) = subscribe_where_it_lives(&mut conn, channel).await {
                        tracing::debug!(error = %e, "shard channel not subscribed yet; retrying");
                        restored = false;
                        break;
                    }
                }
                if restored {
                    tracing::info!("shard channel subscriptions restored");
                    lost = None;
                    let _ = events.send(PubSubEvent::SubscriptionRestored);
                } else {
                    lost = Some(tokio::time::Instant::now() + backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// How often the subscriber reads the cluster's shape (Redisson's `scanInterval`, 1 s).
const SCAN_INTERVAL: Duration = Duration::from_secs(1);

/// Which primary serves which slots, from `CLUSTER NODES`.
struct Shape {
    /// Slot ranges (first, last, inclusive) and their primary's address.
    ranges: Vec<(u16, u16, String)>,
}

impl Shape {
    fn owner_of(&self, slot: u16) -> Option<&str> {
        self.ranges
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map(|(_, _, addr)| addr.as_str())
    }
}

/// The cluster's shape as the node the connection asks sees it.
async fn primaries(conn: &mut ClusterConnection) -> Result<Shape, RedisError> {
    let text: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await?;
    let mut ranges = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !f[2].split(',').any(|flag| flag == "master") {
            continue;
        }
        let addr = f[1].split('@').next().unwrap_or(f[1]);
        for slot in &f[8..] {
            let (first, last) = slot.split_once('-').unwrap_or((slot, slot));
            if let (Ok(first), Ok(last)) = (first.parse(), last.parse()) {
                ranges.push((first, last, addr.to_owned()));
            }
        }
    }
    Ok(Shape { ranges })
}

/// Reports the loss once, and schedules the restore.
fn lose(
    lost: &mut Option<tokio::time::Instant>,
    backoff: &mut Duration,
    events: &mpsc::UnboundedSender<PubSubEvent>,
    why: &str,
) {
    if lost.is_none() {
        tracing::warn!("shard channel subscription lost ({why}); subscribing again");
        *backoff = Duration::from_millis(50);
        *lost = Some(tokio::time::Instant::now() + *backoff);
        let _ = events.send(PubSubEvent::SubscriptionLost);
    }
}

/// `SSUBSCRIBE channel` on the primary of its slot. A redirection (the connection's slot map is
/// behind: a failover or a migration) is followed by a read of the channel's name as a key, which
/// the cluster connection routes and follows, learning the slot's owner; the subscription is then
/// reported as refused, to be tried again.
async fn subscribe_where_it_lives(
    conn: &mut ClusterConnection,
    channel: &Bytes,
) -> Result<(), BackendError> {
    match conn.ssubscribe(&channel[..]).await {
        Ok(()) => Ok(()),
        Err(e) => {
            if matches!(e.code(), Some("MOVED" | "ASK")) {
                let _: Result<Value, _> = redis::cmd("EXISTS")
                    .arg(&channel[..])
                    .query_async(conn)
                    .await;
            }
            Err(classify(&e))
        }
    }
}

fn bytes_of(value: &Value) -> Bytes {
    match value {
        Value::BulkString(b) => Bytes::copy_from_slice(b),
        Value::SimpleString(s) => Bytes::copy_from_slice(s.as_bytes()),
        other => Bytes::from(format!("{other:?}")),
    }
}
