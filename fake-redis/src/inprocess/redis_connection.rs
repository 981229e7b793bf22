//! [`FakeConnection`]: the engine behind `redis::aio::ConnectionLike`, so `redis`-crate code runs
//! unchanged in-process.
//!
//! Typed commands (`AsyncCommands`), `redis::Script` (which meets `NOSCRIPT` on an empty cache and
//! loads the script, exactly as against a real server), pipelines and atomic `MULTI`/`EXEC`
//! pipelines all go through it. The pipeline contract is the crate's: the whole stream of replies
//! (with `MULTI`'s `OK` and each `QUEUED` in a transaction) is computed and the
//! `offset..offset + count` slice returned. Server errors arrive as the crate's own error kinds
//! (built by its parser from the error text); a reply lost to a fault arrives as an I/O error of
//! kind `TimedOut`, as a real connection's response timeout does, and a crashed node's calls fail
//! with `ConnectionRefused` (nothing was sent), as do calls after a `SHUTDOWN` stopped the server.
//! A reply the server does not send (`CLIENT REPLY OFF`, `SHUTDOWN`'s) leaves its call waiting
//! until the response timeout, as on a socket. Pub/sub has no path through this trait: use a
//! subscriber door; the other frames the server pushes (`MONITOR`,
//! client-side caching's invalidations) come through [`FakeConnection::next_push`].

use crate::fault::NodeId;
use crate::inprocess::link::{DEFAULT_RESPONSE_TIMEOUT, Link, LinkError, RequestLog, SharedEngine};
use bytes::Bytes;
use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisError, RedisFuture, Value};
use std::sync::Arc;
use std::time::Duration;

/// A `redis::aio::ConnectionLike` on the fake engine, as client process `node`. Clones share one
/// connection, as clones of a multiplexed connection do.
#[derive(Clone)]
pub struct FakeConnection {
    link: Arc<Link>,
}

impl FakeConnection {
    /// A connection of `node` to `engine`, with the default response timeout (3 s).
    pub fn new(engine: SharedEngine, node: NodeId) -> FakeConnection {
        FakeConnection::with_response_timeout(engine, node, DEFAULT_RESPONSE_TIMEOUT)
    }

    /// A connection whose requests give up after `response_timeout`.
    pub fn with_response_timeout(
        engine: SharedEngine,
        node: NodeId,
        response_timeout: Duration,
    ) -> FakeConnection {
        FakeConnection {
            link: Arc::new(Link::new(engine, node, response_timeout)),
        }
    }

    /// Every request and every reply of this connection (and of its clones) takes `one_way` on
    /// the wire (a round trip costs twice it), on top of any delay the fault plan adds; the
    /// response timeout counts from when the request left. A request in flight lands even if its
    /// caller stops waiting.
    pub fn with_latency(self, one_way: Duration) -> FakeConnection {
        self.link.set_latency(one_way);
        self
    }

    /// Records every request this connection (and its clones) sends in `log`.
    pub fn with_request_log(self, log: RequestLog) -> FakeConnection {
        self.link.set_request_log(log);
        self
    }

    /// The node this connection speaks for.
    pub fn node(&self) -> NodeId {
        self.link.node
    }

    /// Waits for the next frame the server sends this connection outside its replies: a line
    /// of `MONITOR`, a RESP3 invalidation of `CLIENT TRACKING` (or its `__redis__:invalidate`
    /// message for a redirect), through the fault plan as pub/sub messages go (a node's pause
    /// holds it, a dropped delivery loses it). None once the connection is closed and nothing is
    /// left. The `redis` crate's `ConnectionLike` has no path for them, hence this method.
    pub async fn next_push(&self) -> Option<Value> {
        let frame = self.link.next_push().await?;
        Some(frame.to_redis_value(self.link.protocol()))
    }

    /// The pushes that have arrived (see [`FakeConnection::next_push`]), without waiting.
    pub fn take_pushes(&self) -> Vec<Value> {
        let protocol = self.link.protocol();
        let (frames, _) = self.link.take_pushes();
        frames
            .into_iter()
            .map(|f| f.to_redis_value(protocol))
            .collect()
    }

    async fn run(&self, commands: Vec<Vec<Bytes>>) -> Result<Vec<Value>, RedisError> {
        let frames = self.link.call(commands).await.map_err(io_error)?;
        let protocol = self.link.protocol();
        Ok(frames
            .into_iter()
            .map(|f| f.to_redis_value(protocol))
            .collect())
    }
}

fn io_error(e: LinkError) -> RedisError {
    let err = match e {
        LinkError::TimedOut(why) => std::io::Error::new(std::io::ErrorKind::TimedOut, why),
        LinkError::Crashed => std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "the client process has crashed",
        ),
        LinkError::ServerDown => std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "the server has shut down",
        ),
    };
    RedisError::from(err)
}

/// A command's arguments, name first, as the engine takes them.
fn argv(cmd: &Cmd) -> Vec<Bytes> {
    cmd.args_iter()
        .map(|a| match a {
            Arg::Simple(b) => Bytes::copy_from_slice(b),
            // A cursor placeholder (SCAN iterators start at 0); the enum may grow.
            _ => Bytes::from_static(b"0"),
        })
        .collect()
}

impl ConnectionLike for FakeConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut values = self.run(vec![argv(cmd)]).await?;
            Ok(values.pop().unwrap_or(Value::Nil))
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut commands: Vec<Vec<Bytes>> = pipeline.cmd_iter().map(argv).collect();
            let atomic = pipeline.is_transaction();
            if atomic {
                commands.insert(0, vec![Bytes::from_static(b"MULTI")]);
                commands.push(vec![Bytes::from_static(b"EXEC")]);
            }
            let values = self.run(commands).await?;
            if atomic {
                // EXECABORT: the crate reports an aborted transaction as an error of that kind.
                if let Some(Value::ServerError(e)) = values.last() {
                    return Err(RedisError::from(e.clone()));
                }
            }
            Ok(values.into_iter().skip(offset).take(count).collect())
        })
    }

    fn get_db(&self) -> i64 {
        self.link.db() as i64
    }
}
