//! The lock on a Sentinel-watched primary: the connection finds the primary through the sentinels,
//! and finds it again when a call says it has moved.
//!
//! [`SentinelConnection`] asks the sentinels for the primary's address (the `redis` crate checks
//! with `ROLE` that the server it reaches is a primary) and keeps one multiplexed connection to it.
//! A call that fails on the connection itself (dropped, refused) or is refused with `READONLY` (the
//! server was demoted by a failover) drops that connection, so the next call asks the sentinels
//! again. The failing call is not repeated here: its outcome goes to the lock machine as
//! [`BackendError::Unknown`](crate::BackendError::Unknown) or
//! [`NotApplied`](crate::BackendError::NotApplied), and the machine's own retry rules decide.
//!
//! The subscriber follows the same way: after a lost connection it subscribes on whichever server
//! the sentinels name as primary then.

use crate::redis_backend::{ClientSource, ConnectError, RedisBackend, RedisSubscriber};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::{SentinelClient, SentinelServerType};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisError, RedisFuture, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A [`RedisBackend`] whose commands go to the primary the sentinels name.
pub type SentinelBackend = RedisBackend<SentinelConnection, RedisSubscriber>;

/// A command connection to the current primary of a Sentinel-watched group. Clones share it.
#[derive(Clone)]
pub struct SentinelConnection {
    shared: Arc<Shared>,
}

struct Shared {
    sentinels: tokio::sync::Mutex<SentinelClient>,
    /// The connection to the primary, with a generation so that a failed call forgets only the
    /// connection it failed on, not a newer one another call has made since.
    current: Mutex<Option<(u64, MultiplexedConnection)>>,
    config: AsyncConnectionConfig,
}

impl std::fmt::Debug for SentinelConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConnection").finish_non_exhaustive()
    }
}

impl SentinelConnection {
    /// A connection to the primary of `master_name`, as the sentinels at `sentinel_urls` name it.
    pub async fn connect<S: AsRef<str>>(
        sentinel_urls: &[S],
        master_name: &str,
        response_timeout: Duration,
    ) -> Result<SentinelConnection, RedisError> {
        let sentinels = sentinel_client(sentinel_urls, master_name)?;
        let conn = SentinelConnection {
            shared: Arc::new(Shared {
                sentinels: tokio::sync::Mutex::new(sentinels),
                current: Mutex::new(None),
                config: AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(response_timeout))
                    .set_response_timeout(None),
            }),
        };
        conn.connection().await?;
        Ok(conn)
    }

    /// The connection to the primary, asking the sentinels for it if there is none.
    async fn connection(&self) -> Result<(u64, MultiplexedConnection), RedisError> {
        if let Some(current) = self.lock_current().clone() {
            return Ok(current);
        }
        let mut sentinels = self.shared.sentinels.lock().await;
        // Another call may have found the primary while this one waited for the sentinels.
        if let Some(current) = self.lock_current().clone() {
            return Ok(current);
        }
        let conn = sentinels
            .get_async_connection_with_config(&self.shared.config)
            .await?;
        let mut current = self.lock_current();
        let generation = current.as_ref().map_or(0, |(g, _)| g + 1);
        *current = Some((generation, conn.clone()));
        Ok((generation, conn))
    }

    fn forget(&self, generation: u64) {
        let mut current = self.lock_current();
        if matches!(&*current, Some((g, _)) if *g == generation) {
            *current = None;
        }
    }

    fn lock_current(&self) -> std::sync::MutexGuard<'_, Option<(u64, MultiplexedConnection)>> {
        // The guarded value is a plain handle: a panic elsewhere cannot leave it half-written.
        self.shared
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a failed call means the connection no longer leads to the primary.
    fn lost_the_primary(err: &RedisError) -> bool {
        err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_io_error()
            || err.is_timeout()
            || err.code() == Some("READONLY")
    }
}

fn sentinel_client<S: AsRef<str>>(
    sentinel_urls: &[S],
    master_name: &str,
) -> Result<SentinelClient, RedisError> {
    SentinelClient::build(
        sentinel_urls.iter().map(|u| u.as_ref()).collect(),
        master_name.to_owned(),
        None,
        SentinelServerType::Master,
    )
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let result = conn.req_packed_command(cmd).await;
            if let Err(e) = &result
                && SentinelConnection::lost_the_primary(e)
            {
                self.forget(generation);
            }
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let result = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &result
                && SentinelConnection::lost_the_primary(e)
            {
                self.forget(generation);
            }
            result
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

impl SentinelBackend {
    /// Connects to the primary of `master_name` through the sentinels at `sentinel_urls` (each a
    /// `redis://` URL of a sentinel, not of a data server), with a subscriber that follows the
    /// primary too.
    pub async fn connect_sentinel<S: AsRef<str>>(
        sentinel_urls: &[S],
        master_name: &str,
        response_timeout: Duration,
    ) -> Result<SentinelBackend, ConnectError> {
        let joined = sentinel_urls
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(",");
        let unreachable = |source| ConnectError::Unreachable {
            url: joined.clone(),
            source,
        };
        let discovery = sentinel_client(sentinel_urls, master_name).map_err(|source| {
            ConnectError::InvalidUrl {
                url: joined.clone(),
                source,
            }
        })?;
        let conn = SentinelConnection::connect(sentinel_urls, master_name, response_timeout)
            .await
            .map_err(unreachable)?;
        let discovery = Arc::new(tokio::sync::Mutex::new(discovery));
        let source = ClientSource::Discover(Box::new(move || {
            let discovery = Arc::clone(&discovery);
            Box::pin(async move { discovery.lock().await.async_get_client().await })
        }));
        let subscriber = RedisSubscriber::connect_to(source)
            .await
            .map_err(unreachable)?;
        Ok(RedisBackend::new(conn, subscriber, response_timeout))
    }
}
