//! The subscriber side of a fake client: pub/sub events from the engine's outbox, through faults.
//!
//! A [`FakeSubscriber`] holds its own engine connection (a RESP2 connection in subscribed mode can
//! run nothing else, which is why `lock-core` keeps subscribers apart). A background tokio task
//! waits on the engine's waker for that connection and on the plan's next scheduled change, and
//! turns what it sees into [`PubSubEvent`]s: messages (dropped, or held through a pause, as the
//! plan says), `SubscriptionLost` when the connection goes (a subscriber outage, a server restart
//! or failover) and `SubscriptionRestored` once it is back with every channel subscribed again.
//! Since the task only waits on wakers and tokio timers, it runs under paused time.

use crate::engine::ClientId;
use crate::fault::{DeliveryFate, FaultEventKind, NodeId};
use crate::frame::Frame;
use crate::link::{SharedEngine, lock, sleep_until_clock};
use bytes::Bytes;
use lock_core::backend::{BackendError, PubSubEvent, Subscriber};
use std::collections::BTreeSet;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use tokio::sync::{Notify, mpsc};

/// A [`Subscriber`] on the fake engine. Create it inside a tokio runtime; dropping it stops its
/// task and closes its connection.
pub struct FakeSubscriber {
    inner: Arc<Inner>,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<PubSubEvent>>,
    task: tokio::task::JoinHandle<()>,
}

struct Inner {
    engine: SharedEngine,
    node: NodeId,
    state: Mutex<SubState>,
    changed: Notify,
}

struct SubState {
    /// The engine connection; `None` while the subscriber connection is down.
    client: Option<ClientId>,
    /// What the user asked for: subscribed again after an outage.
    channels: BTreeSet<Bytes>,
    crashed: bool,
}

impl FakeSubscriber {
    /// A subscriber of `node` on `engine`, connected now.
    pub fn new(engine: SharedEngine, node: NodeId) -> FakeSubscriber {
        let client = lock(&engine).connect_as(node);
        let inner = Arc::new(Inner {
            engine,
            node,
            state: Mutex::new(SubState {
                client: Some(client),
                channels: BTreeSet::new(),
                crashed: false,
            }),
            changed: Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(Arc::clone(&inner), tx));
        FakeSubscriber {
            inner,
            events: tokio::sync::Mutex::new(rx),
            task,
        }
    }

    /// The node this subscriber belongs to.
    pub fn node(&self) -> NodeId {
        self.inner.node
    }

    /// The engine connection it currently uses, if it is up.
    pub fn client(&self) -> Option<ClientId> {
        self.inner.state().client
    }

    async fn change(&self, channel: &Bytes, subscribe: bool) -> Result<(), BackendError> {
        let node = self.inner.node;
        // A paused process sends nothing until its pause ends.
        for _ in 0..64 {
            let paused = {
                let e = lock(&self.inner.engine);
                e.fault_plan().paused_until(node, e.clock_now())
            };
            match paused {
                Some(until) => sleep_until_clock(&self.inner.engine, until).await,
                None => break,
            }
        }
        let mut engine = lock(&self.inner.engine);
        let mut state = self.inner.state();
        let now = engine.clock_now();
        if state.crashed
            || engine
                .fault_plan()
                .crash_time(node)
                .is_some_and(|t| t <= now)
        {
            return Err(BackendError::NotApplied(format!("{node} has crashed")));
        }
        if subscribe {
            state.channels.insert(channel.clone());
        } else {
            state.channels.remove(channel);
        }
        if let Some(client) = state.client
            && engine.is_connected(client)
        {
            let name: &'static [u8] = if subscribe {
                b"SUBSCRIBE"
            } else {
                b"UNSUBSCRIBE"
            };
            let reply = engine.execute(client, &[Bytes::from_static(name), channel.clone()]);
            if let Frame::Error(e) = reply {
                return Err(BackendError::Server(e.into_owned()));
            }
        }
        // Down: remembered, and subscribed when the connection is back.
        drop(state);
        drop(engine);
        self.inner.changed.notify_one();
        Ok(())
    }
}

impl Drop for FakeSubscriber {
    fn drop(&mut self) {
        self.task.abort();
        let client = self.inner.state().client.take();
        if let Some(c) = client {
            lock(&self.inner.engine).disconnect(c);
        }
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, SubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Subscriber for FakeSubscriber {
    async fn subscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        self.change(channel, true).await
    }

    async fn unsubscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        self.change(channel, false).await
    }

    async fn next_event(&self) -> PubSubEvent {
        let mut events = self.events.lock().await;
        match events.recv().await {
            Some(event) => event,
            None => std::future::pending().await,
        }
    }
}

/// What the task does at one moment: bring the connection in line with the plan, then hand over
/// the messages waiting in the outbox.
enum Step {
    Deliver(PubSubEvent),
    Stop,
}

async fn run(inner: Arc<Inner>, events: mpsc::UnboundedSender<PubSubEvent>) {
    let node = inner.node;
    let mut lost = false;
    loop {
        let mut steps = Vec::new();
        let mut hold_until = None;
        let next_change;
        {
            let mut engine = lock(&inner.engine);
            engine.apply_due_server_faults();
            let now = engine.clock_now();
            let plan_down = engine.fault_plan().subscriber_down(node, now).is_some();
            let crash = engine
                .fault_plan()
                .crash_time(node)
                .is_some_and(|t| t <= now);
            let mut state = inner.state();
            if crash {
                if let Some(c) = state.client.take() {
                    engine.disconnect(c);
                }
                state.crashed = true;
                steps.push(Step::Stop);
            } else {
                let connected = state.client.is_some_and(|c| engine.is_connected(c));
                if (plan_down || !connected) && !lost {
                    if let Some(c) = state.client.take() {
                        engine.disconnect(c);
                    }
                    lost = true;
                    engine.log_fault(Some(node), None, FaultEventKind::SubscriberLost);
                    steps.push(Step::Deliver(PubSubEvent::SubscriptionLost));
                }
                if !plan_down && lost {
                    let c = engine.connect_as(node);
                    for ch in &state.channels {
                        engine.execute(c, &[Bytes::from_static(b"SUBSCRIBE"), ch.clone()]);
                    }
                    state.client = Some(c);
                    lost = false;
                    engine.log_fault(Some(node), None, FaultEventKind::SubscriberRestored);
                    steps.push(Step::Deliver(PubSubEvent::SubscriptionRestored));
                }
                if let Some(c) = state.client {
                    while let Some(out) = engine.pop_outbox(c) {
                        let Some(event) = message_event(out.frame) else {
                            continue;
                        };
                        let seq = engine.next_delivery_seq(node);
                        match engine.fault_plan().delivery_fate(node, seq, now) {
                            DeliveryFate::Deliver => steps.push(Step::Deliver(event)),
                            DeliveryFate::Drop => {
                                engine.log_fault(
                                    Some(node),
                                    Some(seq),
                                    FaultEventKind::DeliveryDropped,
                                );
                            }
                            DeliveryFate::HoldUntil(t) => {
                                engine.log_fault(
                                    Some(node),
                                    Some(seq),
                                    FaultEventKind::DeliveryHeld(t),
                                );
                                hold_until = Some(hold_until.map_or(t, |h: i64| h.max(t)));
                                steps.push(Step::Deliver(event));
                            }
                        }
                    }
                }
            }
            next_change = [
                engine.fault_plan().next_subscriber_change(node, now),
                engine.next_server_fault_time(),
            ]
            .into_iter()
            .flatten()
            .min();
        }
        if let Some(t) = hold_until {
            // Paused: what arrived reaches the process when it runs again.
            sleep_until_clock(&inner.engine, t).await;
        }
        for step in steps {
            match step {
                Step::Deliver(event) => {
                    if events.send(event).is_err() {
                        return;
                    }
                }
                Step::Stop => return,
            }
        }
        let waiting_on = inner.state().client;
        let wake = poll_fn(|cx| match waiting_on {
            Some(c) => {
                let mut engine = lock(&inner.engine);
                if !engine.is_connected(c) || engine.outbox_len(c) > 0 {
                    Poll::Ready(())
                } else {
                    engine.register_waker(c, cx.waker());
                    Poll::Pending
                }
            }
            None => Poll::Pending,
        });
        let timer = async {
            match next_change {
                Some(t) => sleep_until_clock(&inner.engine, t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wake => {}
            () = timer => {}
            () = inner.changed.notified() => {}
        }
    }
}

/// A `message` push as an event (subscription confirmations and others are not events).
fn message_event(frame: Frame) -> Option<PubSubEvent> {
    let (Frame::Push(items) | Frame::Array(items)) = frame else {
        return None;
    };
    match <[Frame; 3]>::try_from(items) {
        Ok(
            [
                Frame::Bulk(kind),
                Frame::Bulk(channel),
                Frame::Bulk(payload),
            ],
        ) if &kind[..] == b"message" => Some(PubSubEvent::Message { channel, payload }),
        _ => None,
    }
}
