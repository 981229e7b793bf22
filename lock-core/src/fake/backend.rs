//! [`FakeBackend`]: the lock's [`Backend`] trait, served in-process by the fake's engine.
//!
//! The lock machine's calls go to the engine through a link that applies the fault plan
//! (delays and pauses are tokio sleeps, so paused time drives them), and its pub/sub events come
//! from a [`FakeSubscriber`] of the same node. Outcomes follow the backend contract: a lost request
//! or reply, or a link that is down, is [`BackendError::Unknown`] once the response timeout has run
//! out (the caller cannot tell which happened); a crashed node's calls are
//! [`BackendError::NotApplied`], since nothing leaves a dead process.

use super::{FakeSubscriber, frame_to_reply};
use crate::backend::{Backend, BackendError, Subscriber};
use crate::reply::Reply;
use crate::script::{ReplicaAcks, ScriptCall};
use bytes::Bytes;
use fake_redis::inprocess::link::{
    DEFAULT_RESPONSE_TIMEOUT, Link, LinkError, RequestLog, SharedEngine,
};
use fake_redis::{Frame, NodeId};
use std::sync::Arc;
use std::time::Duration;

/// A [`Backend`] on the fake engine, as client process `node`. Create it inside a tokio runtime.
pub struct FakeBackend {
    link: Arc<Link>,
    subscriber: FakeSubscriber,
    /// The replicas the primary is known to have, for the replica check (0: no check).
    replicas: u32,
}

impl FakeBackend {
    /// A backend of `node` on `engine`, with the default response timeout (3 s).
    pub fn new(engine: SharedEngine, node: NodeId) -> FakeBackend {
        FakeBackend::with_response_timeout(engine, node, DEFAULT_RESPONSE_TIMEOUT)
    }

    /// A backend of `node` on `engine` whose calls give up after `response_timeout`.
    pub fn with_response_timeout(
        engine: SharedEngine,
        node: NodeId,
        response_timeout: Duration,
    ) -> FakeBackend {
        FakeBackend {
            subscriber: FakeSubscriber::new(Arc::clone(&engine), node),
            link: Arc::new(Link::new(engine, node, response_timeout)),
            replicas: 0,
        }
    }

    /// Runs the lock's replica check ([`SyncReplicas`](crate::SyncReplicas)) against an engine
    /// whose primary has `connected` replicas: a synced call goes out as the script and its
    /// `WAIT` in one pipeline, and reports `WAIT`'s count. Without it (or with 0) the backend
    /// reports no count, and the lock skips its check, as before.
    pub fn with_replicas(mut self, connected: u32) -> FakeBackend {
        self.replicas = connected;
        self
    }

    /// Every request and every reply of this backend takes `one_way` on the wire (a round trip
    /// costs twice it), on top of any delay the fault plan adds; the response timeout counts from
    /// when the request left. A request in flight lands even if its caller stops waiting.
    /// Pub/sub deliveries to the subscriber side are not delayed.
    pub fn with_latency(self, one_way: Duration) -> FakeBackend {
        self.link.set_latency(one_way);
        self
    }

    /// Records every request this backend sends in `log` (share one log between backends to see
    /// all their traffic in order).
    pub fn with_request_log(self, log: RequestLog) -> FakeBackend {
        self.link.set_request_log(log);
        self
    }

    /// The one-way latency of requests and replies.
    pub fn latency(&self) -> Duration {
        self.link.latency()
    }

    /// The node this backend speaks for.
    pub fn node(&self) -> NodeId {
        self.link.node
    }

    /// The bound on every call.
    pub fn response_timeout(&self) -> Duration {
        self.link.response_timeout
    }

    /// The subscriber side.
    pub fn subscriber(&self) -> &FakeSubscriber {
        &self.subscriber
    }

    async fn send(&self, argv: Vec<Bytes>) -> Result<Frame, BackendError> {
        Ok(self
            .send_all(vec![argv])
            .await?
            .pop()
            .unwrap_or(Frame::Null))
    }

    /// Sends `commands` as one pipeline: one request of the fault plan, the replies in order.
    async fn send_all(&self, commands: Vec<Vec<Bytes>>) -> Result<Vec<Frame>, BackendError> {
        match self.link.call(commands).await {
            Ok(frames) => Ok(frames),
            Err(LinkError::TimedOut(why)) => Err(BackendError::Unknown(why)),
            Err(LinkError::Crashed) => Err(BackendError::NotApplied(format!(
                "{} has crashed; nothing was sent",
                self.link.node
            ))),
            Err(LinkError::ServerDown) => Err(BackendError::NotApplied(
                "connection refused: the server has shut down; nothing was sent".to_owned(),
            )),
        }
    }
}

fn to_result(frame: Frame) -> Result<Reply, BackendError> {
    match frame {
        Frame::Error(e) => Err(BackendError::Server(e.into_owned())),
        Frame::ErrorBytes(e) => Err(BackendError::Server(
            String::from_utf8_lossy(&e).into_owned(),
        )),
        other => Ok(frame_to_reply(&other)),
    }
}

impl Backend for FakeBackend {
    async fn eval(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        let evalsha = call.evalsha_argv();
        let reply = self.send(evalsha.clone()).await?;
        if reply
            .error_text()
            .is_some_and(|e| e.starts_with("NOSCRIPT"))
        {
            // The server forgot its scripts (a restart or failover): load and try again. NOSCRIPT
            // means the script did not run, so the retry is safe.
            tracing::debug!(script = call.script.name, "NOSCRIPT: loading the script");
            to_result(self.send(call.script.load_argv()).await?)?;
            return to_result(self.send(evalsha).await?);
        }
        to_result(reply)
    }

    async fn eval_synced(
        &self,
        call: &ScriptCall,
    ) -> Result<(Reply, Option<ReplicaAcks>), BackendError> {
        let Some(wait) = call.sync.filter(|_| self.replicas > 0) else {
            return self.eval(call).await.map(|reply| (reply, None));
        };
        let pipeline = vec![call.evalsha_argv(), wait.argv()];
        let mut frames = self.send_all(pipeline.clone()).await?;
        if frames
            .first()
            .and_then(|f| f.error_text())
            .is_some_and(|e| e.starts_with("NOSCRIPT"))
        {
            // As in `eval`: the script did not run, so loading it and sending both again is safe.
            to_result(self.send(call.script.load_argv()).await?)?;
            frames = self.send_all(pipeline).await?;
        }
        let mut frames = frames.into_iter();
        let reply = to_result(frames.next().unwrap_or(Frame::Null))?;
        let acked = match frames.next() {
            Some(Frame::Integer(n)) => u32::try_from(n).unwrap_or(0),
            other => {
                return Err(BackendError::Server(format!(
                    "WAIT replied {other:?}, not a count of replicas"
                )));
            }
        };
        let acks = ReplicaAcks {
            acked,
            connected: self.replicas,
        };
        Ok((reply, Some(acks)))
    }

    async fn command(&self, argv: &[Bytes]) -> Result<Reply, BackendError> {
        if argv.is_empty() {
            return Err(BackendError::NotApplied("an empty command".into()));
        }
        to_result(self.send(argv.to_vec()).await?)
    }

    crate::backend::forward_pubsub_to!(subscriber);
}
