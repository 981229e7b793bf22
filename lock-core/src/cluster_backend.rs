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
//! Unlock messages go out with plain `PUBLISH`, which a cluster delivers to subscribers on every
//! node; the subscriber listens on any node that answers and moves to the next when its node goes.

use crate::backend::{Backend, BackendError, PubSubEvent};
use crate::redis_backend::{ClientSource, ConnectError, RedisBackend, RedisSubscriber};
use crate::reply::Reply;
use crate::script::{ScriptCall, renew_batch};
use bytes::Bytes;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use std::collections::BTreeMap;
use std::time::Duration;

/// A [`Backend`] on a Redis Cluster. Made by [`ClusterBackend::connect`].
pub struct ClusterBackend {
    inner: RedisBackend<ClusterConnection, RedisSubscriber>,
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
    /// URL), with the cluster client for commands and a subscriber on the first node that answers.
    pub async fn connect<S: AsRef<str>>(
        urls: &[S],
        response_timeout: Duration,
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
        let subscriber = RedisSubscriber::connect_to(ClientSource::Fixed(nodes))
            .await
            .map_err(unreachable)?;
        Ok(ClusterBackend {
            inner: RedisBackend::new(conn, subscriber, response_timeout),
        })
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
        let mut joined = vec![Reply::Nil; call.keys.len()];
        let mut worst: Option<BackendError> = None;
        for (positions, part) in groups.values().zip(parts) {
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

    fn subscribe(&self, channel: &Bytes) -> impl Future<Output = Result<(), BackendError>> + Send {
        self.inner.subscribe(channel)
    }

    fn unsubscribe(
        &self,
        channel: &Bytes,
    ) -> impl Future<Output = Result<(), BackendError>> + Send {
        self.inner.unsubscribe(channel)
    }

    fn next_event(&self) -> impl Future<Output = PubSubEvent> + Send {
        self.inner.next_event()
    }
}

/// The cluster slot of `key`, as Redis computes it: CRC16 (XMODEM) of the key's hash tag (the bytes
/// between its first `{` and the next `}`, if there are any) or of the whole key, modulo 16,384.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16_xmodem(hashed) % 16384
}

fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
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
