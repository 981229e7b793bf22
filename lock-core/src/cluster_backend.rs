//! The lock on a Redis Cluster: the `redis` crate's async cluster client, with renewals split by slot.
//!
//! Every key of one lock shares a hash tag (see [`KeyLayout`](crate::KeyLayout)), so each of the
//! lock's scripts touches one slot and the cluster client routes it by its first key, following
//! `MOVED` and `ASK` and retrying `TRYAGAIN` and `CLUSTERDOWN` itself. What is left after its
//! retries reaches the lock as [`BackendError::NotApplied`] (the server refused it unrun, see
//! [`classify`](crate::redis_backend::classify)) or [`BackendError::Unknown`].
//!
//! One call is not like that: the watchdog's `renew_batch` names the holds of many locks, which a
//! cluster refuses as `CROSSSLOT`. [`ClusterBackend`] sends such a batch as one call per slot, all
//! at once, and joins the answers in the batch's order, so the lock machine sees one batch, as on a
//! single server. A batch is as certain as its least certain part: if any part's outcome is
//! unknown, the whole is unknown (every part is idempotent, so the machine's retry is safe).
//!
//! A call under the replica check ([`Backend::eval_synced`]) goes to its slot's primary as a
//! pipeline of the script and its `WAIT`, one round trip, and a split renewal batch sends one such
//! pipeline per slot; the batch is as synced as its least synced part. Which primaries have
//! replicas comes from `CLUSTER NODES` (a linked replica not marked failing counts), read at the
//! first such call, after a redirection and every few seconds. The cluster client does not follow
//! a redirection inside a pipeline, so a `MOVED` or `ASK` there is followed by a plain read of the
//! key (which the client does follow, learning the slot's new owner) and the part counts as not
//! applied, for the lock to send again.
//!
//! Unlock messages go out with `SPUBLISH` on a cluster that has sharded pub/sub (Redis 7.0+, as
//! Redisson 3.22+ decides; [`ShardedPubSub`]), to subscribers on the channel's own shard
//! ([`ShardedSubscriber`], which follows slot moves and failovers). Otherwise they go out with
//! plain `PUBLISH`, which a cluster delivers to subscribers on every node; that subscriber listens
//! on any node that answers and moves to the next when its node goes.

use crate::backend::{Backend, BackendError, PubSubEvent, Subscriber};
#[cfg(test)]
use crate::keys::crc16_xmodem;
pub use crate::keys::key_slot;
use crate::redis_backend::{
    ClientSource, ConnectError, REPLICA_COUNT_TTL, RedisBackend, RedisSubscriber,
};
use crate::reply::Reply;
use crate::script::{PublishCommand, ReplicaAcks, ReplicaWait, ScriptCall, renew_batch};
use crate::sharded_subscriber::ShardedSubscriber;
use bytes::Bytes;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use std::collections::BTreeMap;
use std::time::Duration;

/// A [`Backend`] on a Redis Cluster. Made by [`ClusterBackend::connect`].
pub struct ClusterBackend {
    inner: RedisBackend<ClusterConnection, ClusterSubscriber>,
    /// Each slot's primary's connected replicas, from `CLUSTER NODES`, and when it was read:
    /// the replica check waits for none where a shard has none.
    replicas: std::sync::Mutex<Option<(tokio::time::Instant, ReplicaMap)>>,
}

impl std::fmt::Debug for ClusterBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBackend")
            .field("response_timeout", &self.inner.response_timeout())
            .finish_non_exhaustive()
    }
}

impl ClusterBackend {
    /// Connects to the cluster that `urls` belong to (some or all of its nodes, each a `redis://`
    /// URL), with the cluster client for commands, and unlock messages on sharded pub/sub when
    /// the cluster has it ([`ShardedPubSub::Auto`]).
    pub async fn connect<S: AsRef<str>>(
        urls: &[S],
        response_timeout: Duration,
    ) -> Result<ClusterBackend, ConnectError> {
        ClusterBackend::connect_with(urls, response_timeout, ShardedPubSub::Auto).await
    }

    /// [`connect`](Self::connect), choosing how unlock messages travel: on shard channels
    /// (`SPUBLISH`, one subscriber connection per shard, following slot moves and failovers) or
    /// on plain channels (`PUBLISH`, which the cluster relays to every node, and one subscriber on
    /// the first node that answers).
    pub async fn connect_with<S: AsRef<str>>(
        urls: &[S],
        response_timeout: Duration,
        pubsub: ShardedPubSub,
    ) -> Result<ClusterBackend, ConnectError> {
        let joined = || urls.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(",");
        let invalid = |source| ConnectError::InvalidUrl {
            url: joined(),
            source,
        };
        let unreachable = |source| ConnectError::Unreachable {
            url: joined(),
            source,
        };
        let nodes = urls
            .iter()
            .map(|u| redis::Client::open(u.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let client = ClusterClientBuilder::new(urls.iter().map(|u| u.as_ref().to_owned()))
            // Our own timeout bounds each call (as for a single server); the client's retries of
            // redirections and TRYAGAIN happen inside it.
            .connection_timeout(response_timeout)
            .retries(3)
            .build()
            .map_err(invalid)?;
        let conn = client.get_async_connection().await.map_err(unreachable)?;
        let sharded = match pubsub {
            ShardedPubSub::On => true,
            ShardedPubSub::Off => false,
            ShardedPubSub::Auto => has_sharded_pubsub(&conn).await.map_err(unreachable)?,
        };
        let subscriber = if sharded {
            ClusterSubscriber::Sharded(
                ShardedSubscriber::connect(urls, response_timeout)
                    .await
                    .map_err(unreachable)?,
            )
        } else {
            ClusterSubscriber::Plain(
                RedisSubscriber::connect_to(ClientSource::Fixed(nodes))
                    .await
                    .map_err(unreachable)?,
            )
        };
        Ok(ClusterBackend {
            inner: RedisBackend::new(conn, subscriber, response_timeout),
            replicas: std::sync::Mutex::new(None),
        })
    }

    /// The replica map, read again when it is [`REPLICA_COUNT_TTL`] old or was forgotten.
    async fn replica_map(&self) -> Result<ReplicaMap, BackendError> {
        if let Some((at, map)) = &*self.lock_replicas()
            && at.elapsed() < REPLICA_COUNT_TTL
        {
            return Ok(map.clone());
        }
        let argv = [Bytes::from_static(b"CLUSTER"), Bytes::from_static(b"NODES")];
        let map = match self.inner.command(&argv).await? {
            Reply::Bulk(text) => ReplicaMap::parse(&text),
            other => {
                return Err(BackendError::Server(format!(
                    "CLUSTER NODES answered {other}, not the node table"
                )));
            }
        };
        *self.lock_replicas() = Some((tokio::time::Instant::now(), map.clone()));
        Ok(map)
    }

    fn lock_replicas(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<(tokio::time::Instant, ReplicaMap)>> {
        // Plain data, which no panic can leave half-written.
        self.replicas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One slot's part of a synced call: the script and its `WAIT` in one round trip to the
    /// slot's primary. A redirection met there (the pipeline's replies are not followed by the
    /// cluster client) is followed by a read of the key through the client, which learns the
    /// slot's new owner, and the part is reported not applied for the lock to send again.
    async fn eval_part_synced(
        &self,
        call: &ScriptCall,
        wait: ReplicaWait,
        map: &ReplicaMap,
    ) -> Result<(Reply, ReplicaAcks), BackendError> {
        let Some(key) = call.keys.first() else {
            return self.inner.eval(call).await.map(|r| (r, NO_REPLICAS));
        };
        let connected = map.replicas_of(key_slot(key));
        let result = self.inner.eval_with_wait(call, wait, connected).await;
        if let Err(BackendError::NotApplied(why)) = &result
            && (why.starts_with("MOVED") || why.starts_with("ASK"))
        {
            *self.lock_replicas() = None;
            let _ = self
                .inner
                .command(&[Bytes::from_static(b"PTTL"), key.clone()])
                .await;
        }
        result
    }

    /// A synced call, split by slot when it is a renewal batch; the parts' replica counts join
    /// as the least of those that have replicas.
    async fn eval_synced_by_slot(
        &self,
        call: &ScriptCall,
        wait: ReplicaWait,
    ) -> Result<(Reply, ReplicaAcks), BackendError> {
        let map = self.replica_map().await?;
        if !std::ptr::eq(call.script, &renew_batch::SCRIPT) || group_by_slot(call).len() <= 1 {
            return self.eval_part_synced(call, wait, &map).await;
        }
        let groups = group_by_slot(call);
        let parts = futures_util::future::join_all(groups.values().map(|positions| {
            let part = renew_batch::subset(call, positions);
            let map = &map;
            async move { self.eval_part_synced(&part, wait, map).await }
        }))
        .await;
        let mut acks = NO_REPLICAS;
        let parts = parts.into_iter().map(|part| {
            part.map(|(reply, part_acks)| {
                acks = worse(acks, part_acks);
                reply
            })
        });
        let reply = join_parts(call.keys.len(), groups.values(), parts)?;
        Ok((reply, acks))
    }

    /// Sends a `renew_batch` call as one call per slot, all at once, and joins the answers.
    async fn renew_by_slot(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        let groups = group_by_slot(call);
        if groups.len() <= 1 {
            return self.inner.eval(call).await;
        }
        let parts = futures_util::future::join_all(groups.values().map(|positions| {
            let part = renew_batch::subset(call, positions);
            async move { self.inner.eval(&part).await }
        }))
        .await;
        join_parts(call.keys.len(), groups.values(), parts)
    }
}

/// The replies of a batch's parts put back in the batch's order; a part's failure makes the
/// batch fail as its least certain part did.
fn join_parts<'a>(
    len: usize,
    groups: impl Iterator<Item = &'a Vec<usize>>,
    parts: impl IntoIterator<Item = Result<Reply, BackendError>>,
) -> Result<Reply, BackendError> {
    let mut joined = vec![Reply::Nil; len];
    let mut worst: Option<BackendError> = None;
    for (positions, part) in groups.zip(parts) {
        match part {
            Ok(Reply::Array(items)) if items.len() == positions.len() => {
                for (&at, item) in positions.iter().zip(items) {
                    joined[at] = item;
                }
            }
            // A part's reply the decoder will refuse: hand it on as the batch's reply.
            Ok(other) => return Ok(other),
            Err(e) => worst = Some(less_certain(worst, e)),
        }
    }
    match worst {
        Some(e) => Err(e),
        None => Ok(Reply::Array(joined)),
    }
}

/// A part with no replicas to wait for.
const NO_REPLICAS: ReplicaAcks = ReplicaAcks {
    acked: 0,
    connected: 0,
};

/// Of two parts' replica counts, the one the replica check is likelier to refuse: a part with
/// replicas over one without, then the fewer acknowledgements.
fn worse(a: ReplicaAcks, b: ReplicaAcks) -> ReplicaAcks {
    match (a.connected, b.connected) {
        (0, _) => b,
        (_, 0) => a,
        _ if b.acked < a.acked => b,
        _ => a,
    }
}

/// Each slot's primary's count of connected replicas, as `CLUSTER NODES` lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplicaMap {
    /// Slot ranges (first, last, inclusive) with their primary's connected replicas.
    ranges: Vec<(u16, u16, u32)>,
}

impl ReplicaMap {
    /// Reads `CLUSTER NODES`: a line per node, `<id> <addr> <flags> <primary-id> <ping> <pong>
    /// <epoch> <link-state> <slot>…`. A replica counts for its primary when it is linked and not
    /// marked failing; a primary's slots are its ranges (`[…]` migration notes are skipped).
    pub(crate) fn parse(text: &[u8]) -> ReplicaMap {
        let text = String::from_utf8_lossy(text);
        let nodes: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() >= 8)
            .collect();
        let healthy = |f: &[&str]| {
            let flags: Vec<&str> = f[2].split(',').collect();
            f[7] == "connected"
                && !flags
                    .iter()
                    .any(|x| matches!(*x, "fail" | "fail?" | "handshake" | "noaddr"))
        };
        let mut replicas: BTreeMap<&str, u32> = BTreeMap::new();
        for f in nodes.iter().filter(|f| healthy(f)) {
            if f[2].split(',').any(|x| x == "slave" || x == "replica") {
                *replicas.entry(f[3]).or_default() += 1;
            }
        }
        let mut ranges = Vec::new();
        for f in &nodes {
            if !f[2].split(',').any(|x| x == "master") {
                continue;
            }
            let count = replicas.get(f[0]).copied().unwrap_or(0);
            for slot in &f[8..] {
                let (first, last) = slot.split_once('-').unwrap_or((slot, slot));
                if let (Ok(first), Ok(last)) = (first.parse(), last.parse()) {
                    ranges.push((first, last, count));
                }
            }
        }
        ReplicaMap { ranges }
    }

    /// The connected replicas of the primary serving `slot` (0 if none is known).
    pub(crate) fn replicas_of(&self, slot: u16) -> u32 {
        self.ranges
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map_or(0, |(_, _, count)| *count)
    }
}

/// How a cluster carries unlock messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardedPubSub {
    /// Shard channels when the servers have them (Redis 7.0 and later: `COMMAND INFO SPUBLISH`
    /// knows the command), as Redisson 3.22+ decides; plain channels otherwise.
    #[default]
    Auto,
    /// Always shard channels (`SPUBLISH`, `SSUBSCRIBE`).
    On,
    /// Always plain channels (`PUBLISH`, `SUBSCRIBE`), as Redisson before 3.22: every node relays
    /// every message.
    Off,
}

/// Whether the cluster knows `SPUBLISH`.
async fn has_sharded_pubsub(conn: &ClusterConnection) -> Result<bool, redis::RedisError> {
    let info: redis::Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("SPUBLISH")
        .query_async(&mut conn.clone())
        .await?;
    Ok(
        matches!(info, redis::Value::Array(items) if items.first().is_some_and(|i| *i != redis::Value::Nil)),
    )
}

/// The subscriber a cluster backend listens with.
pub enum ClusterSubscriber {
    /// Plain channels, on any node.
    Plain(RedisSubscriber),
    /// Shard channels, on each channel's shard.
    Sharded(ShardedSubscriber),
}

impl Subscriber for ClusterSubscriber {
    async fn subscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        match self {
            ClusterSubscriber::Plain(s) => s.subscribe(channel).await,
            ClusterSubscriber::Sharded(s) => s.subscribe(channel).await,
        }
    }

    async fn unsubscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        match self {
            ClusterSubscriber::Plain(s) => s.unsubscribe(channel).await,
            ClusterSubscriber::Sharded(s) => s.unsubscribe(channel).await,
        }
    }

    async fn next_event(&self) -> PubSubEvent {
        match self {
            ClusterSubscriber::Plain(s) => s.next_event().await,
            ClusterSubscriber::Sharded(s) => s.next_event().await,
        }
    }
}

/// The positions of a batch's holds, grouped by their lock key's cluster slot (in slot order).
fn group_by_slot(call: &ScriptCall) -> BTreeMap<u16, Vec<usize>> {
    let mut groups: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (at, key) in call.keys.iter().enumerate() {
        groups.entry(key_slot(key)).or_default().push(at);
    }
    groups
}

/// Of two failures, the one that says less about whether the call ran: unknown over a server
/// error over not applied.
fn less_certain(a: Option<BackendError>, b: BackendError) -> BackendError {
    let rank = |e: &BackendError| match e {
        BackendError::Unknown(_) => 2,
        BackendError::Server(_) => 1,
        BackendError::NotApplied(_) => 0,
    };
    match a {
        Some(a) if rank(&a) >= rank(&b) => a,
        _ => b,
    }
}

impl Backend for ClusterBackend {
    fn publish_command(&self) -> PublishCommand {
        match self.inner.subscriber() {
            ClusterSubscriber::Sharded(_) => PublishCommand::SPublish,
            ClusterSubscriber::Plain(_) => PublishCommand::Publish,
        }
    }

    async fn eval_synced(
        &self,
        call: &ScriptCall,
    ) -> Result<(Reply, Option<ReplicaAcks>), BackendError> {
        match call.sync {
            Some(wait) => {
                let (reply, acks) = self.eval_synced_by_slot(call, wait).await?;
                Ok((reply, Some(acks)))
            }
            None => self.eval(call).await.map(|reply| (reply, None)),
        }
    }

    async fn eval(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        if std::ptr::eq(call.script, &renew_batch::SCRIPT) {
            self.renew_by_slot(call).await
        } else {
            self.inner.eval(call).await
        }
    }

    fn command(&self, argv: &[Bytes]) -> impl Future<Output = Result<Reply, BackendError>> + Send {
        self.inner.command(argv)
    }

    crate::backend::forward_pubsub_to!(inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_s() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.0.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"123456789"), 12739);
        // An empty tag hashes the whole key.
        assert_eq!(key_slot(b"a{}b"), crc16_xmodem(b"a{}b") % 16384);
        assert_eq!(key_slot(b"{}"), crc16_xmodem(b"{}") % 16384);
    }

    #[test]
    fn replicas_count_for_their_primary_s_slots() {
        // The shape of Redis 7.0's CLUSTER NODES: a failing replica and a migration note.
        let nodes = b"\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 [5461->-b1]
b1 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922
c1 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
a2 127.0.0.1:7003@17003 slave a1 0 0 1 connected
b2 127.0.0.1:7004@17004 slave,fail b1 0 0 2 disconnected
c2 127.0.0.1:7005@17005 slave c1 0 0 3 connected
c3 127.0.0.1:7006@17006 slave c1 0 0 3 connected
";
        let map = ReplicaMap::parse(nodes);
        assert_eq!(map.replicas_of(0), 1);
        assert_eq!(map.replicas_of(5460), 1);
        assert_eq!(map.replicas_of(5461), 0);
        assert_eq!(map.replicas_of(16383), 2);
        assert_eq!(ReplicaMap::parse(b"").replicas_of(7), 0);
    }

    #[test]
    fn a_batch_is_as_synced_as_its_least_synced_shard() {
        let acks = |acked, connected| ReplicaAcks { acked, connected };
        assert_eq!(worse(NO_REPLICAS, acks(1, 1)), acks(1, 1));
        assert_eq!(worse(acks(1, 1), NO_REPLICAS), acks(1, 1));
        assert_eq!(worse(acks(1, 1), acks(0, 1)), acks(0, 1));
        assert_eq!(worse(acks(0, 2), acks(1, 1)), acks(0, 2));
    }

    #[test]
    fn the_least_certain_failure_wins() {
        let unknown = BackendError::Unknown("u".into());
        let server = BackendError::Server("s".into());
        let refused = BackendError::NotApplied("n".into());
        assert_eq!(less_certain(None, refused.clone()), refused);
        assert_eq!(less_certain(Some(refused.clone()), server.clone()), server);
        assert_eq!(less_certain(Some(unknown.clone()), server.clone()), unknown);
        assert_eq!(less_certain(Some(server), unknown.clone()), unknown);
    }
}
