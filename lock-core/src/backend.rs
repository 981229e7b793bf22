//! The async boundary between the lock and a Redis.
//!
//! The lock machine decides *what* to send; a [`Backend`] sends it and reports back. Two kinds exist:
//! [`RedisBackend`](crate::RedisBackend) for a real server, and the `fake-redis` crate's
//! `FakeBackend` for an in-process simulator on virtual time.
//!
//! # The contract every implementation keeps
//!
//! 1. **Outcomes are honest.** A call either returns the server's reply, or an error that says what
//!    is known: [`BackendError::Server`] (the server ran the command and replied with an error),
//!    [`BackendError::NotApplied`] (the call certainly never reached the server: the connection was
//!    refused before anything was written), or [`BackendError::Unknown`] (a timeout, a dropped
//!    connection: the call may or may not have been applied). Never report "not applied" when bytes
//!    may have reached the server: the lock retries a not-applied call with no further thought.
//! 2. **Scripts are found by SHA.** [`Backend::eval`] sends `EVALSHA`; on `NOSCRIPT` (a restarted
//!    or failed-over server has an empty script cache) it loads the body and sends `EVALSHA` again.
//!    `NOSCRIPT` means the script did not run, so the retry is safe.
//! 3. **Calls are independent.** Any number may be in flight at once; a slow one never stalls the
//!    others. Each is bounded by the implementation's response timeout, after which it is
//!    [`BackendError::Unknown`].
//! 4. **Pub/sub is a stream of events.** [`Backend::subscribe`] and [`Backend::unsubscribe`] change
//!    the set of channels; [`Backend::next_event`] yields messages on them and tells when the
//!    subscriber connection was lost ([`PubSubEvent::SubscriptionLost`]: messages may have been
//!    missed) and when it is back, every channel subscribed again
//!    ([`PubSubEvent::SubscriptionRestored`]). `next_event` is cancel-safe: dropping its future loses
//!    no event.
//! 5. **Replica counts are the server's.** [`Backend::eval_synced`] sends the call's `WAIT` in the
//!    same round trip and reports `WAIT`'s reply with the number of replicas it knows the primary
//!    has; a backend that cannot wait reports no count, and the lock then skips its replica check.

use crate::reply::Reply;
use crate::script::{PublishCommand, ReplicaAcks, ScriptCall};
use bytes::Bytes;
use std::future::Future;
use std::time::Duration;

// The machine's inputs, defined with the machine: a backend's results feed it unchanged.
pub use crate::machine::{BackendError, PubSubEvent};

/// A connection to a Redis, as the lock needs it. See the [module docs](self) for the contract.
pub trait Backend: Send + Sync + 'static {
    /// Runs a script call (`EVALSHA`, loading the script on `NOSCRIPT`).
    fn eval(&self, call: &ScriptCall) -> impl Future<Output = Result<Reply, BackendError>> + Send;

    /// Runs a script call whose [`sync`](ScriptCall::sync) asks for `WAIT`, with the `WAIT` in the
    /// same round trip, and reports how many replicas acknowledged. The default runs the call
    /// alone and reports no count: the lock skips its replica check for it.
    fn eval_synced(
        &self,
        call: &ScriptCall,
    ) -> impl Future<Output = Result<(Reply, Option<ReplicaAcks>), BackendError>> + Send {
        async move { self.eval(call).await.map(|reply| (reply, None)) }
    }

    /// The command the lock's scripts publish unlock messages with on this backend, and so the
    /// kind of subscription [`subscribe`](Backend::subscribe) makes: `PUBLISH` by default,
    /// `SPUBLISH` where the backend subscribes with `SSUBSCRIBE` (a cluster with sharded pub/sub).
    fn publish_command(&self) -> PublishCommand {
        PublishCommand::Publish
    }

    /// The bound this backend keeps on every [`eval`](Backend::eval),
    /// [`eval_synced`](Backend::eval_synced) and [`command`](Backend::command) call as a whole,
    /// if it keeps one (contract item 3): a call still unanswered that long after it was first
    /// polled ends as [`BackendError::Unknown`]. The lock client bounds each call by its own
    /// `response_timeout` unless this is at most that, so a call carries one timer, not two. The
    /// default, `None`, promises nothing, and the client bounds every call.
    fn call_timeout(&self) -> Option<Duration> {
        None
    }

    /// Runs one plain command, `argv[0]` being its name.
    fn command(&self, argv: &[Bytes]) -> impl Future<Output = Result<Reply, BackendError>> + Send;

    /// Subscribes to `channel`.
    fn subscribe(&self, channel: &Bytes) -> impl Future<Output = Result<(), BackendError>> + Send;

    /// Unsubscribes from `channel`.
    fn unsubscribe(&self, channel: &Bytes)
    -> impl Future<Output = Result<(), BackendError>> + Send;

    /// The next pub/sub event. Pending forever if there is none; cancel-safe.
    fn next_event(&self) -> impl Future<Output = PubSubEvent> + Send;
}

/// The subscriber side of a backend, kept apart from the command connection because a RESP2
/// connection in subscribed mode can run no other command.
pub trait Subscriber: Send + Sync + 'static {
    /// Subscribes to `channel`.
    fn subscribe(&self, channel: &Bytes) -> impl Future<Output = Result<(), BackendError>> + Send;
    /// Unsubscribes from `channel`.
    fn unsubscribe(&self, channel: &Bytes)
    -> impl Future<Output = Result<(), BackendError>> + Send;
    /// The next event; cancel-safe.
    fn next_event(&self) -> impl Future<Output = PubSubEvent> + Send;
}

/// The pub/sub methods of a [`Backend`] impl that hands all of its pub/sub to one field (a
/// [`Subscriber`], or a backend it wraps). The backends that do so wrote the same three
/// forwarding methods each; this writes them once, so they cannot drift apart.
macro_rules! forward_pubsub_to {
    ($field:ident) => {
        fn subscribe(
            &self,
            channel: &::bytes::Bytes,
        ) -> impl ::std::future::Future<Output = Result<(), $crate::backend::BackendError>> + Send {
            self.$field.subscribe(channel)
        }

        fn unsubscribe(
            &self,
            channel: &::bytes::Bytes,
        ) -> impl ::std::future::Future<Output = Result<(), $crate::backend::BackendError>> + Send {
            self.$field.unsubscribe(channel)
        }

        fn next_event(
            &self,
        ) -> impl ::std::future::Future<Output = $crate::backend::PubSubEvent> + Send {
            self.$field.next_event()
        }
    };
}
pub(crate) use forward_pubsub_to;
