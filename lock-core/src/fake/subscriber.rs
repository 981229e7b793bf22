//! [`FakeSubscriber`]: the lock's [`Subscriber`] on the fake's subscriber door.
//!
//! The fake's `SubscriberDoor` keeps the delivery rules (its own connection, messages through the
//! fault plan, the connection lost and restored with every channel); this side only names its
//! events and errors as the lock's.

use crate::backend::{BackendError, PubSubEvent, Subscriber};
use bytes::Bytes;
use fake_redis::inprocess::link::SharedEngine;
use fake_redis::inprocess::subscriber::{SubscriberDoor, SubscriberError, SubscriberEvent};
use fake_redis::{ClientId, NodeId};

/// A [`Subscriber`] on the fake engine. Create it inside a tokio runtime; dropping it stops its
/// task and closes its connection.
pub struct FakeSubscriber {
    door: SubscriberDoor,
}

impl FakeSubscriber {
    /// A subscriber of `node` on `engine`, connected now.
    pub fn new(engine: SharedEngine, node: NodeId) -> FakeSubscriber {
        FakeSubscriber {
            door: SubscriberDoor::new(engine, node),
        }
    }

    /// The node this subscriber belongs to.
    pub fn node(&self) -> NodeId {
        self.door.node()
    }

    /// The engine connection it currently uses, if it is up.
    pub fn client(&self) -> Option<ClientId> {
        self.door.client()
    }

    /// The fake's door underneath.
    pub fn door(&self) -> &SubscriberDoor {
        &self.door
    }
}

fn backend_error(error: SubscriberError) -> BackendError {
    match error {
        SubscriberError::Crashed(why) => BackendError::NotApplied(why),
        SubscriberError::Server(text) => BackendError::Server(text),
    }
}

impl Subscriber for FakeSubscriber {
    async fn subscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        self.door.subscribe(channel).await.map_err(backend_error)
    }

    async fn unsubscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        self.door.unsubscribe(channel).await.map_err(backend_error)
    }

    async fn next_event(&self) -> PubSubEvent {
        match self.door.next_event().await {
            SubscriberEvent::Message { channel, payload } => {
                PubSubEvent::Message { channel, payload }
            }
            SubscriberEvent::Lost => PubSubEvent::SubscriptionLost,
            SubscriberEvent::Restored => PubSubEvent::SubscriptionRestored,
        }
    }
}
